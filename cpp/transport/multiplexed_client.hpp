// The transport of the asyncio API: a small Boost.Asio driver of the connection core
// (connection/core.hpp) on one I/O thread, one socket shared by every request. The core decides
// what to write (requests submitted while a write is in flight go out together in the next:
// automatic pipelining), matches replies, runs every page of an operation and times requests
// out; this driver connects, writes, reads, arms one timer for the core's next deadline, and
// hands finished requests to the event loop's thread, which an eventfd wakes once per batch (on
// the empty to non-empty transition). The I/O thread never touches Python. TLS runs through the
// memory-BIO engine of connection/tls.hpp; with Sentinel, the primary is asked for on a helper
// thread (as Asio resolves host names) through transport/resolver.hpp, shared with the
// blocking driver.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "connection/core.hpp"
#include "connection/options.hpp"
#include "connection/stats.hpp"
#include "connection/tls.hpp"
#include "leaderboard/operations.hpp"
#include "transport/fork.hpp"
#include "transport/resolver.hpp"

namespace rlb::transport {

using connection::ClientOptions;
using connection::Clock;
using connection::Completion;
using connection::Stats;

class MultiplexedClient {
 public:
  // At most max_in_flight requests are written and unanswered at once; more wait their turn.
  // Owned through create(): a forked child that drops its last reference leaks the client
  // instead of destroying it, since the I/O thread does not exist in the child (joining it would
  // abort) and the Asio objects share the parent's epoll instance (tearing them down would
  // unregister the parent's sockets).
  static std::shared_ptr<MultiplexedClient> create(ClientOptions options,
                                                   std::size_t max_in_flight = 1024);
  ~MultiplexedClient();
  MultiplexedClient(const MultiplexedClient&) = delete;
  MultiplexedClient& operator=(const MultiplexedClient&) = delete;

  // A request: the operation to run, and when its call was made (socket_timeout counts from
  // then, time spent queued included).
  struct Outgoing {
    std::uint64_t id = 0;
    std::unique_ptr<leaderboard::Operation> operation;
    Clock::time_point started = Clock::now();
  };
  // Queues requests (any thread; never blocks on I/O) with one wake-up of the I/O thread for
  // the whole batch. Each completion arrives via take_completions() with its id.
  void submit(std::vector<Outgoing> batch);
  // The caller gave request `id` up (any thread): its next pages are not sent.
  void cancel(std::uint64_t id);
  // Readable when completions wait; take_completions() clears it.
  int notify_fd() const { return event_fd_; }
  std::vector<Completion> take_completions();

  Stats stats() const;
  // Fails every pending request with ConnectionError and stops the I/O thread. Idempotent.
  void close();
  bool closed() const { return closed_.load(); }
  const ClientOptions& options() const { return options_; }

 private:
  MultiplexedClient(ClientOptions options, std::size_t max_in_flight);
  enum class State { Disconnected, Connecting, Connected };

  // Everything below runs on the I/O thread.
  void on_submitted();
  // After every event: close, publish, connect, write and arm the timer as the core wants.
  void drive();
  void connect();
  void arm_connect_timer(Clock::duration timeout);
  void resolve_host();
  void try_endpoint(std::size_t index);
  void on_socket_connected();
  void tls_step();
  void on_connected();
  void on_primary_changed();
  void connect_failed(const std::exception_ptr& error);
  void read();
  void close_socket();
  void arm_timer();
  void publish();
  void abort_all(const std::exception_ptr& error);
  void shutdown();

  const ClientOptions options_;
  const std::shared_ptr<const connection::TlsContext> tls_context_;
  Resolver target_resolver_;
  const ForkGuard fork_guard_;
  int event_fd_ = -1;
  connection::Counters counters_;

  boost::asio::io_context io_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  boost::asio::generic::stream_protocol::socket socket_;
  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::steady_timer connect_timer_;  // connect timeout and reconnect backoff
  boost::asio::steady_timer request_timer_;  // the core's next deadline

  std::mutex submit_mutex_;
  std::vector<Outgoing> submitted_;  // guarded by submit_mutex_
  bool wake_posted_ = false;         // guarded by submit_mutex_

  // I/O thread only.
  connection::Core core_;
  State state_ = State::Disconnected;
  Endpoint target_;                              // where this connection goes
  std::unique_ptr<connection::TlsSession> tls_;  // none: plaintext
  std::string plain_;                            // TLS: what the last read decrypted
  bool backing_off_ = false;
  std::string write_buffer_;
  bool writing_ = false;
  bool stopping_ = false;
  bool connect_timed_out_ = false;
  std::optional<Clock::time_point> timer_at_;
  std::uint64_t generation_ = 0;  // bumped per connection: stale handlers see it and return
  std::string last_connect_error_;
  std::vector<boost::asio::generic::stream_protocol::endpoint> endpoints_;
  std::chrono::milliseconds backoff_{0};
  Clock::time_point next_attempt_{};
  bool ever_connected_ = false;
  char read_buffer_[64 * 1024];

  std::mutex completions_mutex_;
  std::vector<Completion> completions_;  // guarded by completions_mutex_

  std::atomic<bool> closed_{false};
  std::thread discovery_;                     // Sentinel: asks for the primary
  std::unique_ptr<SentinelWatcher> watcher_;  // Sentinel: +switch-master
  std::unique_ptr<std::thread> thread_;       // last: started once everything above exists
};

}  // namespace rlb::transport
