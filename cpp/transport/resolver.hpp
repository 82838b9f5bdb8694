// Where a client connects, for both drivers: the address in its options, or, with Sentinel, the
// primary the sentinels name now (asked again before every new connection, so a reconnection
// after a failover finds the new primary); and the watcher of Sentinel's +switch-master event,
// which tells a client at once that its primary changed.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "connection/options.hpp"
#include "connection/tls.hpp"
#include "transport/fork.hpp"

namespace rlb::transport {

using connection::ClientOptions;
using connection::TlsContext;

// One server to connect to: host and port, or a unix socket.
struct Endpoint {
  std::string host;
  int port = 0;
  std::string unix_socket_path;

  std::string address() const;  // "host:port" or the path, for messages
};

// The options of a connection to one sentinel: its address, the sentinel credentials, the
// client's timeouts (else kSentinelTimeout, so that a dead sentinel never stalls discovery) and
// the client's TLS settings if sentinel TLS is on.
ClientOptions sentinel_connection_options(const ClientOptions& options, const std::string& host,
                                          int port);
inline constexpr double kSentinelTimeout = 2.0;  // seconds

class Resolver {
 public:
  // `options` outlives the resolver (the client owns both).
  Resolver(const ClientOptions& options, std::shared_ptr<const TlsContext> tls);

  // The endpoint to connect to now. Without Sentinel, the options' (no I/O). With Sentinel,
  // blocking: each sentinel in turn (the last to answer first) is asked SENTINEL
  // GET-MASTER-ADDR-BY-NAME, each within its timeout; none answering raises ConnectionError
  // naming every sentinel's reason. `deadline` (a connection's, from the connect timeout):
  // none is waited for past it, each given half the time left (the last all of it), so that
  // sentinels that do not answer leave time for one that does; past it, TimeoutError naming
  // the sentinels asked. Thread-safe.
  Endpoint resolve(std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);
  // Sentinel announced `primary` (+switch-master): resolve() gives it, without asking, for
  // kAnnouncementTrust, since sentinels that did not run the failover learn of it only from
  // the next hello message (up to 2 s later) and answer the old primary until then.
  void announce(Endpoint primary);

 private:
  const ClientOptions& options_;
  std::shared_ptr<const TlsContext> tls_;
  std::mutex mutex_;
  std::vector<std::pair<std::string, int>> order_;  // guarded by mutex_
  Endpoint announced_;                              // guarded by mutex_
  std::chrono::steady_clock::time_point announced_at_{};
};
inline constexpr std::chrono::seconds kAnnouncementTrust{10};
// The Sentinel watcher looks whether it must stop at least this often, and pings a sentinel it
// has not heard from for kWatcherPing (a sentinel that does not answer within its timeout is
// left for the next).
inline constexpr std::chrono::milliseconds kWatcherSlice{100};
inline constexpr std::chrono::seconds kWatcherPing{1};

// Subscribes to +switch-master on one sentinel (another if it fails) from a thread of its own;
// when the client's service gets a new primary, tells `resolver` and calls `on_switch` (from
// that thread).
class SentinelWatcher {
 public:
  SentinelWatcher(const ClientOptions& options, std::shared_ptr<const TlsContext> tls,
                  Resolver& resolver, std::function<void()> on_switch);
  ~SentinelWatcher();  // stops and joins the thread
  SentinelWatcher(const SentinelWatcher&) = delete;
  SentinelWatcher& operator=(const SentinelWatcher&) = delete;

 private:
  void run();
  void watch(const std::string& host, int port);
  void pause(std::chrono::milliseconds how_long);

  const ClientOptions& options_;
  std::shared_ptr<const TlsContext> tls_;
  Resolver& resolver_;
  std::function<void()> on_switch_;
  const ForkGuard fork_guard_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mutex_
  int socket_ = -1;        // the subscription's socket, for stop to shut down (guarded)
  std::thread thread_;
};

}  // namespace rlb::transport
