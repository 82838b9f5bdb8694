#include "transport/loop_client.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "errors.hpp"
#include "transport/blocking_client.hpp"

namespace rlb::transport {

namespace {

// Reads of read_buffer_ (64 KiB) one on_readable() call makes at most: 256 KiB.
constexpr int kReadsPerCallback = 4;

template <class Error>
std::exception_ptr error_of(const std::string& message) {
  return std::make_exception_ptr(Error(message));
}

Clock::duration seconds(double value) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(value));
}

// The addresses of `target` (a unix socket path, or host and port: getaddrinfo with `flags`).
// Returns the resolver's error text, empty on success.
std::string addresses_of(const Endpoint& target, int flags, std::vector<sockaddr_storage>& out,
                         std::vector<socklen_t>& lengths) {
  out.clear();
  lengths.clear();
  if (!target.unix_socket_path.empty()) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (target.unix_socket_path.size() >= sizeof address.sun_path) return "socket path too long";
    std::memcpy(address.sun_path, target.unix_socket_path.data(), target.unix_socket_path.size());
    sockaddr_storage storage{};
    std::memcpy(&storage, &address, sizeof address);
    out.push_back(storage);
    lengths.push_back(sizeof address);
    return {};
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(target.port);
  const int rc = ::getaddrinfo(target.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) return rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc);
  for (const addrinfo* it = found; it; it = it->ai_next) {
    sockaddr_storage storage{};
    std::memcpy(&storage, it->ai_addr, it->ai_addrlen);
    out.push_back(storage);
    lengths.push_back(it->ai_addrlen);
  }
  ::freeaddrinfo(found);
  return out.empty() ? "no address" : "";
}

}  // namespace

LoopClient::LoopClient(ClientOptions options, std::size_t max_in_flight,
                       std::size_t max_bytes_in_flight,
                       std::shared_ptr<const connection::TlsContext> tls)
    : options_((options.validate(), std::move(options))),
      tls_context_(tls ? std::move(tls) : connection::make_tls_context(options_.tls)),
      target_resolver_(options_, tls_context_),
      core_(options_, max_in_flight, counters_, max_bytes_in_flight,
            connection::Core::SplitReads::kInterleaved) {
  if (options_.sentinel.enabled()) {
    watcher_ = std::make_unique<SentinelWatcher>(options_, tls_context_, target_resolver_, [this] {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        primary_changed_ = true;
      }
      notify_.signal();
    });
  }
}

std::shared_ptr<LoopClient> LoopClient::create(ClientOptions options, std::size_t max_in_flight,
                                               std::size_t max_bytes_in_flight,
                                               std::shared_ptr<const connection::TlsContext> tls) {
  return std::shared_ptr<LoopClient>(
      new LoopClient(std::move(options), max_in_flight, max_bytes_in_flight, std::move(tls)),
      [](LoopClient* client) {
        // In a forked child: left behind (the parent's helper
        // threads do not exist there, and the sockets are the
        // parent's).
        if (!client->fork_guard_.forked()) delete client;
      });
}

LoopClient::~LoopClient() {
  close();
  close_retired();
}

// ---- Requests --------------------------------------------------------------------------------

bool LoopClient::submit(std::uint64_t id, std::unique_ptr<leaderboard::Operation> operation,
                        Clock::time_point started) {
  if (fork_guard_.forked()) {
    throw RedisError(
        "this asyncio client was created before fork(); create a new client in the child");
  }
  if (closed_) throw ConnectionError("the client is closed");
  const bool idle = core_.outstanding() == 0;
  core_.submit(id, std::move(operation), started);
  return written_at_once(idle);
}

bool LoopClient::submit(std::uint64_t id, std::unique_ptr<connection::Exchange> exchange,
                        Clock::time_point started) {
  if (closed_) throw ConnectionError("the client is closed");
  const bool idle = core_.outstanding() == 0;
  core_.submit(id, std::move(exchange), started);
  return written_at_once(idle);
}

bool LoopClient::written_at_once(bool idle) {
  // Nothing else in flight: no other call of this turn can share the write, so it goes now.
  if (!idle || state_ != State::Connected || out_pending()) return false;
  write_some();
  return true;
}

void LoopClient::cancel(std::uint64_t id) {
  if (closed_) return;
  core_.cancel(id);
  drive();
}

void LoopClient::flush() {
  if (!closed_) drive();
}

// ---- Driving the core ------------------------------------------------------------------------

void LoopClient::drive() {
  // Each pass either returns or closed a socket that failed; a few are enough.
  for (int pass = 0; pass < 4; ++pass) {
    if (core_.take_close()) close_socket();
    if (closed_) return;
    if (state_ == State::Disconnected && core_.wants_connection()) start_connect();
    if (state_ != State::Connected) return;
    if (write_some()) return;
  }
}

bool LoopClient::write_some() {
  if (out_pending()) return true;  // the socket is full: on_writable() goes on
  std::string plain = core_.take_write();
  if (!tls_) {
    if (plain.empty()) return true;
    out_ = std::move(plain);
    out_offset_ = 0;
    core_writing_ = true;
  } else {
    out_.clear();
    out_offset_ = 0;
    try {
      if (!plain.empty()) {
        core_writing_ = true;
        tls_->write(plain);
      }
    } catch (const ConnectionError&) {
      lost(std::current_exception());
      return false;
    }
    tls_->append_output(out_);  // requests, and any TLS record of its own
    if (out_.empty()) return true;
  }
  if (const int error = send_out()) {
    lost(error_of<ConnectionError>("Error writing to " + address() + ": " + std::strerror(error)));
    return false;
  }
  return true;
}

int LoopClient::send_out() {
  while (out_pending()) {
    const auto n = ::send(fd_, out_.data() + out_offset_, out_.size() - out_offset_,
                          no_sigpipe_send_flags() | MSG_DONTWAIT);
    if (n > 0) {
      out_offset_ += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return 0;  // wants_writable() until the rest is out
    } else {
      return n < 0 ? errno : EPIPE;
    }
  }
  out_.clear();
  out_offset_ = 0;
  if (core_writing_) {
    core_writing_ = false;
    core_.wrote();
  }
  return 0;
}

void LoopClient::on_readable() {
  if (fd_ < 0 || closed_) return;
  if (state_ == State::TlsHandshake) {
    const auto n = ::recv(fd_, read_buffer_, sizeof read_buffer_, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) {
      connect_failed(error_of<ConnectionError>(
          "Error connecting to " + address() + ": TLS handshake: " +
          (n == 0 ? std::string("the server closed the connection") : std::strerror(errno))));
    } else {
      tls_->feed(read_buffer_, static_cast<std::size_t>(n));
      tls_step();
    }
    return drive();
  }
  if (state_ != State::Connected) return;
  // At most kReadsPerCallback reads, then back to the loop (its reader calls again while bytes
  // wait): a reply that keeps coming fast must not keep the other tasks from running.
  for (int reads = 0; reads < kReadsPerCallback; ++reads) {
    const auto n = ::recv(fd_, read_buffer_, sizeof read_buffer_, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      lost(error_of<ConnectionError>("Error reading from " + address() + ": " +
                                     std::strerror(errno)));
      break;
    }
    if (n == 0) {
      lost(error_of<ConnectionError>("Connection closed by server " + address()));
      break;
    }
    const auto size = static_cast<std::size_t>(n);
    if (!tls_) {
      core_.received(read_buffer_, size, Clock::now());
    } else {
      plain_.clear();
      try {
        tls_->feed(read_buffer_, size);
        if (!tls_->read(plain_)) {
          throw ConnectionError("Connection closed by server " + address());
        }
        if (!plain_.empty()) core_.received(plain_.data(), plain_.size(), Clock::now());
      } catch (const ConnectionError&) {
        if (!plain_.empty()) core_.received(plain_.data(), plain_.size(), Clock::now());
        lost(std::current_exception());
        break;
      }
    }
    if (!core_.connected()) break;          // the core gave the connection up
    if (size < sizeof read_buffer_) break;  // drained (the loop says so again if not)
  }
  drive();
}

void LoopClient::on_writable() {
  if (fd_ < 0 || closed_) return;
  if (state_ == State::Connecting) {
    int error = 0;
    socklen_t length = sizeof error;
    if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &length) < 0) error = errno;
    if (error == 0) {
      on_socket_connected();
    } else {
      last_connect_error_ = std::strerror(error);
      try_endpoint(address_index_ + 1);
    }
    return drive();
  }
  if (const int error = send_out()) {
    if (state_ == State::TlsHandshake) {
      connect_failed(error_of<ConnectionError>("Error connecting to " + address() +
                                               ": TLS handshake: " + std::strerror(error)));
    } else {
      lost(
          error_of<ConnectionError>("Error writing to " + address() + ": " + std::strerror(error)));
    }
  }
  drive();
}

void LoopClient::on_notify() {
  notify_.drain();
  if (closed_) return;
  std::optional<Found> found;
  bool switched = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    found.swap(found_);
    switched = std::exchange(primary_changed_, false);
  }
  if (switched) {
    // Sentinel announced a new primary: connect to it at once, without the failed attempts'
    // backoff; the requests in flight on the old one get their replies (or fail) first.
    backoff_ = std::chrono::milliseconds(0);
    next_attempt_ = {};
    if (state_ == State::BackingOff) {
      state_ = State::Disconnected;
    } else if (state_ == State::Connected) {
      core_.retire(Clock::now());
    }
  }
  if (found && found->generation == generation_ && state_ == State::Resolving) {
    if (found->error) {
      connect_failed(found->error);
    } else {
      target_ = std::move(found->target);
      addresses_ = std::move(found->addresses);
      address_lengths_ = std::move(found->lengths);
      try_endpoint(0);
    }
  }
  drive();
}

void LoopClient::on_timer() {
  if (closed_) return;
  const auto now = Clock::now();
  if (state_ == State::BackingOff && now >= next_attempt_) {
    state_ = State::Disconnected;
    next_attempt_ = {};
  }
  const bool connecting =
      state_ == State::Resolving || state_ == State::Connecting || state_ == State::TlsHandshake;
  if (connecting && connect_deadline_ && now >= *connect_deadline_) {
    const bool handshake = state_ == State::TlsHandshake;
    const std::string where = state_ == State::Resolving ? options_.address() : address();
    connect_failed(error_of<TimeoutError>("Timeout connecting to " + where +
                                          (handshake ? " (TLS handshake)" : "")));
  }
  core_.tick(now);
  drive();
}

std::optional<Clock::time_point> LoopClient::wakeup_at() const {
  auto at = core_.next_deadline();
  auto earliest = [&at](Clock::time_point t) {
    if (!at || t < *at) at = t;
  };
  if (state_ == State::BackingOff) earliest(next_attempt_);
  if ((state_ == State::Resolving || state_ == State::Connecting ||
       state_ == State::TlsHandshake) &&
      connect_deadline_) {
    earliest(*connect_deadline_);
  }
  return at;
}

// ---- Connecting ------------------------------------------------------------------------------

void LoopClient::start_connect() {
  const auto now = Clock::now();
  if (now < next_attempt_) {  // back off after a failed attempt
    state_ = State::BackingOff;
    return;
  }
  ++generation_;
  connect_deadline_.reset();
  if (const auto timeout = options_.connect_timeout()) connect_deadline_ = now + seconds(*timeout);
  last_connect_error_ = "no address";
  if (!options_.sentinel.enabled()) {
    target_ = Endpoint{options_.host, options_.port, options_.unix_socket_path};
    // A unix socket or an IP address needs no lookup: connect now, on this thread.
    if (addresses_of(target_, AI_NUMERICHOST, addresses_, address_lengths_).empty()) {
      return try_endpoint(0);
    }
  }
  // A host name (getaddrinfo blocks) or Sentinel (asking blocks, each sentinel within its
  // timeout): on a helper thread, which wakes the loop through notify_.
  state_ = State::Resolving;
  helpers_.erase(std::remove_if(helpers_.begin(), helpers_.end(),
                                [](Helper& helper) {
                                  if (!helper.done->load()) return false;
                                  helper.thread.join();  // finished: returns at once
                                  return true;
                                }),
                 helpers_.end());
  auto done = std::make_shared<std::atomic<bool>>(false);
  helpers_.push_back(
      {std::thread([this, done, generation = generation_, deadline = connect_deadline_] {
         disable_interrupt_checks();  // never the GIL: close() may hold it, joining this thread
         Found found;
         found.generation = generation;
         try {
           found.target = target_resolver_.resolve(deadline);
           std::string error = addresses_of(found.target, 0, found.addresses, found.lengths);
           if (!error.empty()) {
             throw ConnectionError("Error connecting to " + found.target.address() + ": " + error);
           }
         } catch (...) {
           found.error = std::current_exception();
         }
         {
           std::lock_guard<std::mutex> lock(mutex_);
           // A lookup outlived by a newer one never hides the newer one's answer.
           if (!found_ || found_->generation < found.generation) found_ = std::move(found);
         }
         notify_.signal();
         done->store(true);
       }),
       done});
}

void LoopClient::try_endpoint(std::size_t index) {
  for (; index < addresses_.size(); ++index) {
    address_index_ = index;
    if (fd_ >= 0) {
      retired_.push_back(fd_);
      fd_ = -1;
    }
    const auto& address = addresses_[index];
    const int fd = open_stream_socket(address.ss_family);
    if (fd < 0) {
      last_connect_error_ = std::strerror(errno);
      continue;
    }
    fd_ = fd;
    state_ = State::Connecting;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), address_lengths_[index]) == 0) {
      return on_socket_connected();
    }
    if (errno == EINPROGRESS) return;  // on_writable() tells
    last_connect_error_ = std::strerror(errno);
  }
  connect_failed(
      error_of<ConnectionError>("Error connecting to " + address() + ": " + last_connect_error_));
}

void LoopClient::on_socket_connected() {
  if (target_.unix_socket_path.empty()) {
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::setsockopt(fd_, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  }
  if (!tls_context_) return on_connected();
  try {
    tls_ = std::make_unique<connection::TlsSession>(tls_context_, target_.host, target_.address());
  } catch (const RedisError&) {
    return connect_failed(std::current_exception());
  }
  // A server that never answers the handshake (a plaintext port) must not hang the client.
  if (!connect_deadline_)
    connect_deadline_ = Clock::now() + seconds(connection::kTlsHandshakeTimeout);
  state_ = State::TlsHandshake;
  tls_step();
}

void LoopClient::tls_step() {
  bool done = false;
  try {
    done = tls_->handshake();
  } catch (const RedisError&) {
    return connect_failed(std::current_exception());
  }
  tls_->append_output(out_);
  if (const int error = send_out()) {
    return connect_failed(error_of<ConnectionError>("Error connecting to " + address() +
                                                    ": TLS handshake: " + std::strerror(error)));
  }
  // Requests written next queue behind what is left of the handshake's last flight.
  if (done) on_connected();
}

void LoopClient::on_connected() {
  connect_deadline_.reset();
  state_ = State::Connected;
  backoff_ = std::chrono::milliseconds(0);
  counters_.connected(ever_connected_);
  if (ever_connected_) connection::observe(connection::Signal::reconnected, address());
  ever_connected_ = true;
  ++connections_;
  core_.connected(Clock::now());
}

void LoopClient::connect_failed(const std::exception_ptr& error) {
  close_socket();
  backoff_ = backoff_.count() == 0 ? std::chrono::milliseconds(50)
                                   : std::min(backoff_ * 2, std::chrono::milliseconds(2000));
  // A cluster node's requests are handed back (core_.connect_failed) and retried where the slot
  // map says then, after the cluster client's own pause: the node itself does not back off.
  next_attempt_ = options_.hand_back_resends ? Clock::time_point{} : Clock::now() + backoff_;
  // Nothing was sent: the waiting requests fail now; the next submission tries again.
  core_.connect_failed(error);
}

void LoopClient::lost(const std::exception_ptr& error) {
  core_.lost(error, Clock::now());
  close_socket();
}

void LoopClient::close_socket() {
  ++generation_;
  if (fd_ >= 0) {
    retired_.push_back(fd_);
    fd_ = -1;
  }
  state_ = State::Disconnected;
  tls_.reset();
  out_.clear();
  out_offset_ = 0;
  core_writing_ = false;
  connect_deadline_.reset();
}

void LoopClient::close_retired() {
  for (int fd : retired_) ::close(fd);
  retired_.clear();
}

void LoopClient::close() {
  if (fork_guard_.forked() || closed_) return;
  closed_ = true;
  watcher_.reset();  // stops and joins its thread
  close_socket();
  core_.abort(error_of<ConnectionError>("the client is closed"));
  // Bounded: each sentinel has a timeout (a host name's lookup, the resolver's).
  for (auto& helper : helpers_) helper.thread.join();
  helpers_.clear();
  notify_.close();  // no thread signals it any more
}

}  // namespace rlb::transport
