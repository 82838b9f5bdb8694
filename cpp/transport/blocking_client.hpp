// The transport of the synchronous API: a small poll() driver of the connection core
// (connection/core.hpp) on non-blocking Boost.Asio sockets (TCP or Unix; TLS through the
// memory-BIO engine of connection/tls.hpp), pooled so that many threads can share one client.
// Every wait has a deadline: the core's. Where to connect comes from transport/resolver.hpp (the
// options' address, or the primary Sentinel names).
#pragma once

#include <atomic>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "connection/cache.hpp"
#include "connection/core.hpp"
#include "connection/observer.hpp"
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
using connection::Counters;
using connection::Stats;

// Called when a wait is interrupted by a signal. It may throw to abandon the call (the bindings
// raise KeyboardInterrupt from it); the connection is then dropped, its replies out of step.
using InterruptCheck = void (*)();
void set_interrupt_check(InterruptCheck check);
// Servers asked in turn within one `deadline` (sentinels, cluster nodes for the slot map): until
// when one is waited for. Half the time left (at least 50 ms, if left), so that servers that do
// not answer leave time for the next; the `last` all of it; no deadline: none (each within its
// own timeouts).
std::optional<Clock::time_point> turn_until(std::optional<Clock::time_point> deadline, bool last);

// No interrupt check on this thread (a thread of the client's own, which must never take the
// GIL: the thread closing the client may hold it while joining this one).
void disable_interrupt_checks();

// One socket to Redis and the core that speaks on it, used by one thread at a time. A
// connection the core gives up (protocol error, timeout, unasked bytes) is broken for good: the
// pool drops it and opens another.
class BlockingConnection {
 public:
  // Connects to `endpoint` (with TLS if `tls` is set) and writes the handshake. `subscriber`:
  // replies to no request are pushes (take_pushes()), not a protocol error.
  // `resolver` (optional, outliving the connection): where a reconnection within a call goes.
  // `connect_cap`: the socket is opened within the connect timeout and by then (a cluster
  // request's deadline).
  BlockingConnection(const ClientOptions& options, Counters& counters, Endpoint endpoint,
                     std::shared_ptr<const TlsContext> tls, bool subscriber = false,
                     Resolver* resolver = nullptr,
                     std::optional<Clock::time_point> connect_cap = std::nullopt);
  BlockingConnection(const BlockingConnection&) = delete;
  BlockingConnection& operator=(const BlockingConnection&) = delete;

  // Runs an operation to its end (one round trip per step) and returns its result.
  leaderboard::Result run(std::unique_ptr<leaderboard::Operation> operation);
  // One round trip of raw commands; error replies are returned, not raised.
  // `deadline`: the reply is waited for until then at the latest (else socket_timeout).
  std::vector<codec::Reply> run_raw(std::string wire, std::size_t count,
                                    std::optional<Clock::time_point> deadline = std::nullopt);
  // Runs one-step operations in order, writing up to `window` requests ahead of the replies
  // being read, so the server never waits for the client between them. `next` gives the next
  // operation (nullptr: no more); `done` takes each result, in order. If `next`, `done` or an
  // operation throws, the replies already asked for are read (the requests written stay
  // applied, the connection in step) and the exception goes on.
  void run_pipelined(std::size_t window,
                     const std::function<std::unique_ptr<leaderboard::Operation>()>& next,
                     const std::function<void(leaderboard::Result)>& done);

  // For the cluster client: an operation under way (its current step) is queued; flush()
  // writes everything queued in one write, without waiting for replies; wait() returns a
  // request's completion (a redirect included).
  std::uint64_t submit(std::unique_ptr<connection::Exchange> exchange, Clock::time_point started);
  void flush();
  Completion wait(std::uint64_t id) { return wait_for(id); }

  // A subscriber's pushes that have arrived, appended to `out`; with `until`, waits up to then
  // for the first. False once the connection is gone.
  bool take_pushes(std::vector<codec::Reply>& out, std::optional<Clock::time_point> until);
  // Writes commands whose replies come as pushes (a subscriber's PING); false if it failed.
  bool write_unanswered(const std::string& wire);
  int native_handle() { return socket_.native_handle(); }
  const Endpoint& endpoint() const { return endpoint_; }

  bool broken() const { return broken_; }
  // The client's primary epoch when this connection was opened (Sentinel: a newer one means
  // the primary changed, and this connection is not reused).
  std::uint64_t epoch = 0;
  // Before reuse: false if the server closed the socket or sent something unasked, or the
  // process forked since the connection was opened.
  bool reusable();

 private:
  // Within the connect timeout, and `cap` if given.
  void connect(std::optional<Clock::time_point> cap = std::nullopt);
  // Guards: the core gave the connection up with requests to re-send (their reply was lost
  // and they cannot apply twice): a new socket for them, within the call.
  void reconnect();
  void open_socket(const std::optional<Clock::time_point>& until);
  void tls_handshake(const std::optional<Clock::time_point>& until);
  // Writes what the core wants written, waits (until the core's deadline) and reads once.
  void pump();
  // Reads once what the socket has (would_block: nothing) into the core, through TLS if on.
  // wait_if_empty: a read that finds nothing waits (until the core's deadline) for bytes.
  void read_once(bool wait_first, bool wait_if_empty = true);
  // Bytes as they go on the wire (ciphertext with TLS); false if the write timed out or failed
  // (the core was told).
  bool send(const char* data, std::size_t size);
  Completion wait_for(std::uint64_t id);
  // Waits until the socket is ready for `events` (POLLIN/POLLOUT); false at the deadline.
  bool wait(short events, const std::optional<Clock::time_point>& until, const char* doing);
  void write_all(const std::string& bytes);
  // The socket is gone: closed, never reused; every unfinished request fails.
  void close_broken(const std::exception_ptr& why);
  void on_interrupt();

  const ClientOptions& options_;
  Counters& counters_;
  Endpoint endpoint_;
  Resolver* resolver_ = nullptr;
  const bool subscriber_;
  std::shared_ptr<const TlsContext> tls_context_;
  std::unique_ptr<connection::TlsSession> tls_;  // none: plaintext
  connection::Core core_;
  boost::asio::io_context io_;
  boost::asio::generic::stream_protocol::socket socket_;
  std::vector<Completion> done_;  // completions not asked for yet (pipelined requests)
  std::string plain_;             // TLS: what the last read decrypted
  std::uint64_t next_id_ = 1;
  bool broken_ = false;
  bool just_wrote_ = false;  // a reply is never there right after the write: skip a futile read
  ForkGuard fork_guard_;
};

class CacheChannel;

class BlockingClient {
 public:
  // With `cache`: reads of entries take metadata from a client-side cache that Redis
  // invalidates (connection/cache.hpp, transport/cache_channel.hpp).
  explicit BlockingClient(ClientOptions options,
                          std::optional<connection::CacheOptions> cache = std::nullopt);
  // With a TLS context shared with other clients (the cluster client's nodes).
  BlockingClient(ClientOptions options, std::shared_ptr<const TlsContext> tls,
                 std::optional<connection::CacheOptions> cache = std::nullopt);
  ~BlockingClient();
  BlockingClient(const BlockingClient&) = delete;
  BlockingClient& operator=(const BlockingClient&) = delete;

  leaderboard::Result run(std::unique_ptr<leaderboard::Operation> operation);
  void run_pipelined(std::size_t window,
                     const std::function<std::unique_ptr<leaderboard::Operation>()>& next,
                     const std::function<void(leaderboard::Result)>& done);
  // One raw command; an error reply is returned, not raised. With `deadline`, a new
  // connection is opened and the reply waited for by then at the latest (a cluster call's
  // deadline while it reads the slot map).
  codec::Reply execute_raw(const std::vector<std::string>& argv,
                           std::optional<Clock::time_point> deadline = std::nullopt);

  Stats stats() const;
  // The client-side cache (nullptr: off).
  const CacheChannel* cache_channel() const { return cache_channel_.get(); }
  // Closes idle connections; a later call opens a new one.
  void close();
  const ClientOptions& options() const { return options_; }

  // A connection of the pool (a new one if none is idle; ConnectionError if it cannot be
  // opened), for one thread until release() takes it back (a broken one is dropped). A new
  // one is opened within the connect timeout and by `connect_cap` if given.
  std::unique_ptr<BlockingConnection> acquire(
      std::optional<Clock::time_point> connect_cap = std::nullopt);
  leaderboard::Result run_cached(std::unique_ptr<leaderboard::Operation> operation);
  void release(std::unique_ptr<BlockingConnection> connection);

 private:
  class Lease;

  const ClientOptions options_;
  const std::shared_ptr<const TlsContext> tls_;
  Resolver resolver_;
  std::atomic<std::uint64_t> epoch_{0};       // bumped when Sentinel announces a new primary
  std::unique_ptr<SentinelWatcher> watcher_;  // Sentinel only
  std::mutex mutex_;
  std::vector<std::unique_ptr<BlockingConnection>> idle_;
  std::uint64_t dropped_ = 0;  // broken connections not yet replaced (guarded by mutex_)
  connection::ClientCounters counters_;
  std::unique_ptr<CacheChannel> cache_channel_;
};

}  // namespace rlb::transport
