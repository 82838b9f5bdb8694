#include "transport/resolver.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <string_view>

#include "codec/resp.hpp"
#include "errors.hpp"
#include "transport/blocking_client.hpp"

namespace rlb::transport {

namespace {

std::string wire_of(std::vector<std::string_view> argv) {
  std::string wire;
  codec::encode_command(argv, wire);
  return wire;
}

}  // namespace

std::string Endpoint::address() const {
  if (!unix_socket_path.empty()) return unix_socket_path;
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

ClientOptions sentinel_connection_options(const ClientOptions& options, const std::string& host,
                                          int port) {
  ClientOptions out;
  out.host = host;
  out.port = port;
  out.username = options.sentinel.username;
  out.password = options.sentinel.password;
  out.socket_timeout = options.socket_timeout ? options.socket_timeout : kSentinelTimeout;
  out.socket_connect_timeout =
      options.connect_timeout() ? options.connect_timeout() : kSentinelTimeout;
  out.max_reply_bytes = 1 << 20;
  if (options.sentinel.tls) out.tls = options.tls;
  return out;
}

// ---- Resolver --------------------------------------------------------------------------------

Resolver::Resolver(const ClientOptions& options, std::shared_ptr<const TlsContext> tls)
    : options_(options), tls_(std::move(tls)), order_(options.sentinel.sentinels) {}

Endpoint Resolver::resolve(std::optional<Clock::time_point> deadline) {
  if (!options_.sentinel.enabled()) {
    return {options_.host, options_.port, options_.unix_socket_path};
  }
  std::vector<std::pair<std::string, int>> order;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (announced_.port != 0 &&
        std::chrono::steady_clock::now() - announced_at_ < kAnnouncementTrust) {
      return announced_;
    }
    order = order_;
  }
  const std::string wire =
      wire_of({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", options_.sentinel.service_name});
  std::string reasons;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& [host, port] = order[i];
    const ClientOptions sentinel = sentinel_connection_options(options_, host, port);
    const Endpoint endpoint{host, port, {}};
    // Within `deadline`, a share of it for each sentinel (turn_until).
    if (deadline && Clock::now() >= *deadline) break;
    const auto until = turn_until(deadline, i + 1 == order.size());
    std::string reason;
    try {
      connection::Counters counters;  // sentinel traffic is not the client's
      BlockingConnection connection(sentinel, counters, endpoint,
                                    options_.sentinel.tls ? tls_ : nullptr, false, nullptr, until);
      auto replies = connection.run_raw(wire, 1, until);
      const auto& reply = replies.at(0);
      if (reply.is_error()) {
        reason = reply.str;
      } else if (reply.is_nil()) {
        reason = "it knows no primary named '" + options_.sentinel.service_name + "'";
      } else if (reply.is_array() && reply.elements.size() == 2) {
        Endpoint primary{reply.elements[0].str, 0, {}};
        try {
          primary.port = std::stoi(reply.elements[1].str);
        } catch (const std::exception&) {
        }
        if (!primary.host.empty() && primary.port > 0 && primary.port <= 65535) {
          std::lock_guard<std::mutex> lock(mutex_);
          // The sentinel that answered is asked first next time (as redis-py does).
          for (auto it = order_.begin(); it != order_.end(); ++it) {
            if (it->first == host && it->second == port) {
              std::rotate(order_.begin(), it, it + 1);
              break;
            }
          }
          return primary;
        }
        reason = "it sent an unusable address";
      } else {
        reason = "it sent an unexpected reply";
      }
    } catch (const RedisError& error) {
      reason = error.what();
    }
    reasons += (reasons.empty() ? "" : "; ") + endpoint.address() + ": " + reason;
  }
  // Out of time (the last one asked took what was left): a connect timeout, as the client's own.
  if (deadline && Clock::now() >= *deadline) {
    throw TimeoutError("Timeout connecting to '" + options_.sentinel.service_name +
                       "' via Sentinel: no sentinel answered in time (" + reasons + ")");
  }
  throw ConnectionError("No primary found for '" + options_.sentinel.service_name +
                        "' by any sentinel (" + reasons + ")");
}

void Resolver::announce(Endpoint primary) {
  std::lock_guard<std::mutex> lock(mutex_);
  announced_ = std::move(primary);
  announced_at_ = std::chrono::steady_clock::now();
}

// ---- SentinelWatcher -------------------------------------------------------------------------

SentinelWatcher::SentinelWatcher(const ClientOptions& options,
                                 std::shared_ptr<const TlsContext> tls, Resolver& resolver,
                                 std::function<void()> on_switch)
    : options_(options),
      tls_(std::move(tls)),
      resolver_(resolver),
      on_switch_(std::move(on_switch)) {
  thread_ = std::thread([this] { run(); });
}

SentinelWatcher::~SentinelWatcher() {
  if (fork_guard_.forked()) {  // the thread does not exist in a forked child
    thread_.detach();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    if (socket_ >= 0) ::shutdown(socket_, SHUT_RDWR);  // wakes its poll() at once
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SentinelWatcher::pause(std::chrono::milliseconds how_long) {
  std::unique_lock<std::mutex> lock(mutex_);
  wake_.wait_for(lock, how_long, [this] { return stopping_; });
}

void SentinelWatcher::run() {
  disable_interrupt_checks();  // never the GIL: the closing thread may hold it, joining this one
  std::size_t next = 0;
  const auto& sentinels = options_.sentinel.sentinels;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
    }
    const auto& [host, port] = sentinels[next++ % sentinels.size()];
    try {
      watch(host, port);
    } catch (...) {
      // That sentinel is down, refused or stopped answering: try the next after a short pause.
    }
    pause(std::chrono::milliseconds(100));
  }
}

void SentinelWatcher::watch(const std::string& host, int port) {
  const ClientOptions sentinel = sentinel_connection_options(options_, host, port);
  connection::Counters counters;
  BlockingConnection connection(sentinel, counters, Endpoint{host, port, {}},
                                options_.sentinel.tls ? tls_ : nullptr, true);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    socket_ = connection.native_handle();
  }
  struct Forget {  // the socket closes with `connection`: stop must not shut it down after
    SentinelWatcher& watcher;
    ~Forget() {
      std::lock_guard<std::mutex> lock(watcher.mutex_);
      watcher.socket_ = -1;
    }
  } forget{*this};
  // Within the sentinel's socket_timeout; stop shuts the socket down (a subscriber's connection
  // is never replaced, so it stays the one registered).
  auto subscribed = connection.run_raw(wire_of({"SUBSCRIBE", "+switch-master"}), 1);
  if (subscribed.at(0).is_error()) return;
  const std::string prefix = options_.sentinel.service_name + " ";
  const std::string ping = wire_of({"PING"});
  // Never a wait without a deadline: the watcher looks at stop every kWatcherSlice, pings a
  // quiet sentinel every kWatcherPing and leaves one that does not answer within its timeout.
  const auto answer_within = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(sentinel.socket_timeout.value_or(kSentinelTimeout)));
  auto heard = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> pinged;
  std::vector<codec::Reply> pushes;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (pinged && now - *pinged >= answer_within) return;  // it stopped answering: the next
    if (!pinged && now - heard >= kWatcherPing) {
      if (!connection.write_unanswered(ping)) return;
      pinged = now;
    }
    pushes.clear();
    if (!connection.take_pushes(pushes, now + kWatcherSlice)) return;  // closed, or shut down
    if (pushes.empty()) continue;
    heard = std::chrono::steady_clock::now();
    pinged.reset();  // any push shows the sentinel alive ("pong" answers PING when subscribed)
    for (const auto& push : pushes) {
      // ["message", "+switch-master", "<name> <old ip> <old port> <new ip> <new port>"]
      if (!push.is_array() || push.elements.size() != 3 ||
          push.elements[2].str.compare(0, prefix.size(), prefix) != 0) {
        continue;
      }
      std::istringstream fields(push.elements[2].str.substr(prefix.size()));
      std::string old_host, old_port, new_host;
      int new_port = 0;
      // Under the lock, and not once stopping: the client that owns the callbacks is closing.
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      if (fields >> old_host >> old_port >> new_host >> new_port && new_port > 0 &&
          new_port <= 65535) {
        resolver_.announce(Endpoint{new_host, new_port, {}});
        connection::observe(connection::Signal::failover, "Sentinel: " + old_host + ":" + old_port +
                                                              " -> " + new_host + ":" +
                                                              std::to_string(new_port));
      } else {
        connection::observe(connection::Signal::failover, "Sentinel: +switch-master");
      }
      on_switch_();
    }
  }
}

}  // namespace rlb::transport
