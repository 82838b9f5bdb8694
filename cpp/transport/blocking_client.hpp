// The transport of the synchronous API: blocking, pipelined connections on Boost.Asio sockets
// (TCP or Unix), with connect and read timeouts, pooled so that many threads can share one
// client. Runs the operations of leaderboard/operations.hpp.
#pragma once

#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codec/resp.hpp"
#include "leaderboard/operations.hpp"
#include "transport/fork.hpp"
#include "transport/options.hpp"
#include "transport/requests.hpp"
#include "transport/stats.hpp"

namespace rlb::transport {

using Clock = std::chrono::steady_clock;

// Called when a wait is interrupted by a signal. It may throw to abandon the call (the bindings
// raise KeyboardInterrupt from it); the connection is then dropped, its replies out of step.
using InterruptCheck = void (*)();
void set_interrupt_check(InterruptCheck check);

// One socket to Redis, used by one thread at a time.
class BlockingConnection {
 public:
  explicit BlockingConnection(const ClientOptions& options);  // connects and authenticates
  BlockingConnection(const BlockingConnection&) = delete;
  BlockingConnection& operator=(const BlockingConnection&) = delete;

  // Writes `wire` and reads `count` replies within the socket timeout. Any failure (and any
  // byte beyond the replies asked for) leaves the connection broken: it is closed, never reused.
  std::vector<codec::Reply> round_trip(const std::string& wire, std::size_t count);
  // The two halves of a round trip, for requests pipelined ahead of their replies.
  // `replies`: how many replies `wire` asks for (bytes beyond all those asked for break it).
  void send(const std::string& wire, std::size_t replies);
  std::vector<codec::Reply> receive(std::size_t count);

  bool broken() const { return broken_; }
  // Before reuse: false if the server closed the socket or sent something unasked, or the
  // process forked since the connection was opened.
  bool reusable();

 private:
  void connect();
  void handshake();
  std::optional<Clock::time_point> deadline(const std::optional<double>& seconds) const;
  // Waits until the socket is ready for `events` (POLLIN/POLLOUT) or the deadline passes.
  void wait(short events, const std::optional<Clock::time_point>& until, const char* doing);
  std::vector<codec::Reply> read_replies(std::size_t count);
  // Marks the connection broken and closes it: it never goes back to the pool.
  void close_broken();
  [[noreturn]] void fail_io(const std::string& message);
  void on_interrupt();

  const ClientOptions& options_;
  boost::asio::io_context io_;
  boost::asio::generic::stream_protocol::socket socket_;
  codec::ReplyReader reader_;
  bool broken_ = false;
  std::size_t outstanding_ = 0;  // replies asked for and not yet received
  ForkGuard fork_guard_;
};

class BlockingClient {
 public:
  explicit BlockingClient(ClientOptions options);

  // Runs an operation to completion on one pooled connection; one round trip per step.
  leaderboard::Result run(Exchange& exchange);
  // Runs one-step operations in order on one pooled connection, writing up to `window` requests
  // ahead of the replies being read, so the server never waits for the client between them.
  // `next` gives the next operation (nullptr: no more); `done` takes each result, in order.
  // If `next`, `done` or an operation throws, the replies already asked for are read (the
  // requests written stay applied, the connection in step) and the exception goes on.
  void run_pipelined(std::size_t window, const std::function<Exchange*()>& next,
                     const std::function<void(leaderboard::Result)>& done);
  // One raw command; an error reply is returned, not raised.
  codec::Reply execute_raw(const std::vector<std::string>& argv);

  Stats stats() const;
  // Closes idle connections; a later call opens a new one.
  void close();
  const ClientOptions& options() const { return options_; }

 private:
  class Lease;
  std::unique_ptr<BlockingConnection> acquire();
  void release(std::unique_ptr<BlockingConnection> connection);

  const ClientOptions options_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<BlockingConnection>> idle_;
  std::uint64_t dropped_ = 0;  // broken connections not yet replaced (guarded by mutex_)
  Counters counters_;
};

}  // namespace rlb::transport
