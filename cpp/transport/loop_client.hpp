// The transport of the asyncio API: the connection core (connection/core.hpp) driven from the
// event loop's own thread. There is no I/O thread: the loop watches the socket (its bindings
// call add_reader/add_writer with what socket_fd() and wants_writable() say, and arm one timer
// for wakeup_at()), and calls in when the socket is readable or writable, when the timer fires,
// and once per turn of the loop to flush what the turn's calls queued: one non-blocking send
// for all of them (automatic pipelining), written at once when nothing else is in flight. Replies
// are read, decoded and matched on the same thread, so a call costs no thread hand-off and no
// wake-up beyond the loop's own.
//
// What blocks never runs here: a host name is resolved (and, with Sentinel, the primary asked
// for, through transport/resolver.hpp) on a helper thread, which wakes the loop through
// notify_fd(); Sentinel's +switch-master arrives the same way. TLS runs through the memory-BIO
// engine of connection/tls.hpp. A dropped connection is reopened when requests wait (after a
// failed attempt, with a backoff from 50 ms doubling to 2 s); the connect timeout covers the
// lookup, the connection and the TLS handshake.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "connection/core.hpp"
#include "connection/observer.hpp"
#include "connection/options.hpp"
#include "connection/stats.hpp"
#include "connection/tls.hpp"
#include "leaderboard/operations.hpp"
#include "transport/fork.hpp"
#include "transport/resolver.hpp"
#include "transport/wakeup.hpp"

namespace rlb::transport {

using connection::ClientOptions;
using connection::Clock;
using connection::Completion;
using connection::Stats;

class LoopClient {
 public:
  // At most max_in_flight requests are written and unanswered at once, and while their replies
  // are expected to take more than max_bytes_in_flight bytes (0: no limit) no more are written
  // (connection/core.hpp); more wait their turn.
  // Owned through create(): a forked child that drops its last reference leaks the client
  // instead of destroying it (a helper thread of the parent does not exist in the child).
  // `tls`: a context to share (a cluster's nodes share one); none: made from the options.
  static std::shared_ptr<LoopClient> create(
      ClientOptions options, std::size_t max_in_flight = 1024, std::size_t max_bytes_in_flight = 0,
      std::shared_ptr<const connection::TlsContext> tls = nullptr);
  ~LoopClient();
  LoopClient(const LoopClient&) = delete;
  LoopClient& operator=(const LoopClient&) = delete;

  // Everything below runs on the event loop's thread, and never blocks.

  // Queues a request (socket_timeout counts from `started`). True: it is written already (the
  // connection was idle); false: the caller flushes at the end of the loop's turn.
  bool submit(std::uint64_t id, std::unique_ptr<leaderboard::Operation> operation,
              Clock::time_point started);
  // An operation already under way (a cluster node's: see transport/loop_cluster.hpp).
  bool submit(std::uint64_t id, std::unique_ptr<connection::Exchange> exchange,
              Clock::time_point started);
  // The caller gave request `id` up: its next pages are not sent.
  void cancel(std::uint64_t id);
  // Writes what the core has to write (connecting first if needed).
  void flush();
  // The loop saw the socket readable / writable, notify_fd() readable, or wakeup_at() pass.
  void on_readable();
  void on_writable();
  void on_notify();
  void on_timer();

  // What the loop must watch after each call above (-1: nothing): the socket for reading once
  // it is connected, and for writing while a connection is under way or a write is unfinished.
  int readable_fd() const {
    return state_ == State::Connected || state_ == State::TlsHandshake ? fd_ : -1;
  }
  int writable_fd() const { return state_ == State::Connecting || out_pending() ? fd_ : -1; }
  // Readable when a helper thread has news (a resolved address, a new primary).
  int notify_fd() const { return notify_.fd(); }
  // When on_timer() must be called at the latest (none: no deadline). May be early.
  std::optional<Clock::time_point> wakeup_at() const;
  // Sockets given up: kept open until the loop stopped watching them (so that their number is
  // not reused meanwhile), then closed by this call.
  void close_retired();

  bool has_completions() const { return core_.has_completions(); }
  std::vector<Completion> take_completions() { return core_.take_completions(); }
  Stats stats() const { return counters_.snapshot(); }
  // Fails every pending request with ConnectionError, closes the socket (once the loop stopped
  // watching it: close_retired()) and notify_fd(). Idempotent.
  void close();
  bool closed() const { return closed_; }
  const ClientOptions& options() const { return options_; }
  // The server of the connection in place, and its number (each connection gets a new one):
  // a request sent while it was in place ran there if the number is the same once it is done.
  // None while not connected.
  std::optional<std::pair<Endpoint, std::uint64_t>> server() const {
    if (state_ != State::Connected) return std::nullopt;
    return std::make_pair(target_, connections_);
  }

 private:
  LoopClient(ClientOptions options, std::size_t max_in_flight, std::size_t max_bytes_in_flight,
             std::shared_ptr<const connection::TlsContext> tls);
  // After a request was queued: writes it at once if nothing else is in flight (see submit).
  bool written_at_once(bool idle);
  enum class State { Disconnected, BackingOff, Resolving, Connecting, TlsHandshake, Connected };

  void drive();
  // Writes what the core has; false: the socket failed (the core was told).
  bool write_some();
  bool out_pending() const { return out_offset_ < out_.size(); }
  // Sends out_ from out_offset_ until the socket is full; an errno value if it failed.
  int send_out();
  void start_connect();
  void try_endpoint(std::size_t index);
  void on_socket_connected();
  void tls_step();
  void on_connected();
  void connect_failed(const std::exception_ptr& error);
  void lost(const std::exception_ptr& error);
  void close_socket();
  std::string address() const { return target_.address(); }

  const ClientOptions options_;
  const std::shared_ptr<const connection::TlsContext> tls_context_;
  Resolver target_resolver_;
  const ForkGuard fork_guard_;
  connection::ClientCounters counters_;
  connection::Core core_;
  Wakeup notify_;

  State state_ = State::Disconnected;
  int fd_ = -1;
  std::vector<int> retired_;  // closed sockets the loop may still watch
  Endpoint target_;
  std::vector<sockaddr_storage> addresses_;
  std::vector<socklen_t> address_lengths_;
  std::size_t address_index_ = 0;
  std::string last_connect_error_;
  std::optional<Clock::time_point> connect_deadline_;
  bool connect_timed_out_ = false;
  std::chrono::milliseconds backoff_{0};
  Clock::time_point next_attempt_{};
  bool ever_connected_ = false;
  std::uint64_t connections_ = 0;  // connections made: server()'s number
  bool closed_ = false;
  std::unique_ptr<connection::TlsSession> tls_;  // none: plaintext
  std::string plain_;                            // TLS: what the last read decrypted
  std::string out_;                              // being written, from out_offset_
  std::size_t out_offset_ = 0;
  bool core_writing_ = false;  // out_ holds a write the core gave (core_.wrote() once sent)

  // Shared with the helper threads (guarded by mutex_): what they found, then notify_fd_.
  std::mutex mutex_;
  std::uint64_t generation_ = 0;  // bumped per connection attempt: a stale answer is dropped
  struct Found {
    std::uint64_t generation = 0;
    Endpoint target;
    std::vector<sockaddr_storage> addresses;
    std::vector<socklen_t> lengths;
    std::exception_ptr error;
  };
  std::optional<Found> found_;
  bool primary_changed_ = false;
  // Lookups under way or done: one outlives its connection attempt if that timed out, and is
  // joined once done (never waited for on the loop's thread, but by close()).
  struct Helper {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<Helper> helpers_;
  std::unique_ptr<SentinelWatcher> watcher_;

  char read_buffer_[64 * 1024];
};

}  // namespace rlb::transport
