// The transport of the synchronous API: a small poll() driver of the connection core
// (connection/core.hpp) on non-blocking Boost.Asio sockets (TCP or Unix), pooled so that many
// threads can share one client. Every wait has a deadline: the core's.
#pragma once

#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "connection/core.hpp"
#include "connection/options.hpp"
#include "connection/stats.hpp"
#include "leaderboard/operations.hpp"
#include "transport/fork.hpp"

namespace rlb::transport {

using connection::ClientOptions;
using connection::Clock;
using connection::Completion;
using connection::Counters;
using connection::Stats;

// Called when a wait is interrupted by a signal. It may throw to abandon the call (the bindings
// raise KeyboardInterrupt from it); the connection is then dropped, its replies out of step.
using InterruptCheck = void (*)();
void set_interrupt_check(InterruptCheck check);

// One socket to Redis and the core that speaks on it, used by one thread at a time. A
// connection the core gives up (protocol error, timeout, unasked bytes) is broken for good: the
// pool drops it and opens another.
class BlockingConnection {
 public:
  BlockingConnection(const ClientOptions& options, Counters& counters);  // connects
  BlockingConnection(const BlockingConnection&) = delete;
  BlockingConnection& operator=(const BlockingConnection&) = delete;

  // Runs an operation to its end (one round trip per step) and returns its result.
  leaderboard::Result run(std::unique_ptr<leaderboard::Operation> operation);
  // One round trip of raw commands; error replies are returned, not raised.
  std::vector<codec::Reply> run_raw(std::string wire, std::size_t count);
  // Runs one-step operations in order, writing up to `window` requests ahead of the replies
  // being read, so the server never waits for the client between them. `next` gives the next
  // operation (nullptr: no more); `done` takes each result, in order. If `next`, `done` or an
  // operation throws, the replies already asked for are read (the requests written stay
  // applied, the connection in step) and the exception goes on.
  void run_pipelined(std::size_t window,
                     const std::function<std::unique_ptr<leaderboard::Operation>()>& next,
                     const std::function<void(leaderboard::Result)>& done);

  bool broken() const { return broken_; }
  // Before reuse: false if the server closed the socket or sent something unasked, or the
  // process forked since the connection was opened.
  bool reusable();

 private:
  void connect();
  // Writes what the core wants written, waits (until the core's deadline) and reads once.
  void pump();
  Completion wait_for(std::uint64_t id);
  // Waits until the socket is ready for `events` (POLLIN/POLLOUT); false at the deadline.
  bool wait(short events, const std::optional<Clock::time_point>& until, const char* doing);
  void write_all(const std::string& bytes);
  // The socket is gone: closed, never reused; every unfinished request fails.
  void close_broken(const std::exception_ptr& why);
  void on_interrupt();

  const ClientOptions& options_;
  connection::Core core_;
  boost::asio::io_context io_;
  boost::asio::generic::stream_protocol::socket socket_;
  std::vector<Completion> done_;  // completions not asked for yet (pipelined requests)
  std::uint64_t next_id_ = 1;
  bool broken_ = false;
  bool just_wrote_ = false;  // a reply is never there right after the write: skip a futile read
  ForkGuard fork_guard_;
};

class BlockingClient {
 public:
  explicit BlockingClient(ClientOptions options);

  leaderboard::Result run(std::unique_ptr<leaderboard::Operation> operation);
  void run_pipelined(std::size_t window,
                     const std::function<std::unique_ptr<leaderboard::Operation>()>& next,
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
