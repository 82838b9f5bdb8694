// The invalidation connection of a caching client (connection/cache.hpp), on a blocking
// subscriber connection: set up on demand, drained by the calls that need its messages (under a
// mutex), never by a thread of its own. The sync client waits on it; the asyncio client drains it
// without blocking from its event loop (fileno() for loop.add_reader).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "connection/cache.hpp"
#include "connection/options.hpp"
#include "connection/stats.hpp"
#include "transport/blocking_client.hpp"
#include "transport/fork.hpp"
#include "transport/resolver.hpp"

namespace rlb::transport {

using connection::MetadataCache;

class CacheChannel {
 public:
  // `primary_epoch` (Sentinel: bumped when the primary changes) moves the invalidation
  // connection to the new primary: a replica's messages come after the primary acknowledged
  // the writes, too late for a barrier.
  CacheChannel(const ClientOptions& options, std::shared_ptr<const TlsContext> tls,
               Resolver& resolver, connection::CacheOptions cache_options,
               const std::atomic<std::uint64_t>* primary_epoch = nullptr);
  ~CacheChannel();
  CacheChannel(const CacheChannel&) = delete;
  CacheChannel& operator=(const CacheChannel&) = delete;

  const std::shared_ptr<MetadataCache>& cache() const { return cache_; }

  // Before a cached read of metadata under `prefix`: sets the invalidation connection up if it
  // must be (blocking, within the connect timeout; at most once a second after a failure) and
  // writes a barrier on it. None: the read cannot trust the cache (it runs uncached).
  std::optional<MetadataCache::Barrier> begin(const std::string& prefix);
  // As begin(), for an event loop: never connects nor waits for the mutex (none then).
  std::optional<MetadataCache::Barrier> begin_nowait(const std::string& prefix);
  // Whether begin() would set a connection up now for `prefix` (an event loop then calls
  // begin() on another thread).
  bool needs_setup(const std::string& prefix);
  // Reads the connection's messages until the barrier's PONG, at most until `until`: true if it
  // passed. A connection that fails or is late is dropped (the cache flushed); a barrier whose
  // connection was replaced meanwhile fails at once.
  bool await(const MetadataCache::Barrier& barrier, Clock::time_point until);
  // Reads what has arrived, without waiting (nor waiting for the mutex); true if the barrier
  // has passed.
  bool poll(const MetadataCache::Barrier& barrier);
  // Reads what has arrived, without waiting; false if there is no connection (any more).
  bool drain();
  // Whether the invalidation connection is on `endpoint` (the server a read's query went to).
  // A read whose query went elsewhere (a failover, a READONLY reconnection) cannot trust the
  // cache: then the connection is dropped (the cache flushed) and set up again on the server
  // the resolver names now.
  bool on_server(const Endpoint& endpoint);
  // As on_server(), for an event loop: never waits for the mutex (false, nothing dropped, if
  // it is held: a set-up under way).
  bool on_server_nowait(const Endpoint& endpoint);
  // The connection's socket (-1: none), for an event loop to watch.
  int fileno();
  // Drops the connection (the cache is flushed); the next begin() sets a new one up.
  void close();

 private:
  void connect_locked();
  std::optional<MetadataCache::Barrier> begin_locked(const std::string& prefix, bool may_connect);
  void drop_locked();
  bool on_server_locked(const Endpoint& endpoint);
  // The connection is broken, inherited from a parent process, or on a former primary.
  bool stale_locked() const;
  // Applies the messages that have arrived (waiting until `until` for some if given); false if
  // the connection is gone (dropped).
  bool drain_locked(std::optional<Clock::time_point> until);

  const ClientOptions& options_;
  std::shared_ptr<const TlsContext> tls_;
  Resolver& resolver_;
  std::shared_ptr<MetadataCache> cache_;
  Counters counters_;  // the invalidation connection's own (not the client's round trips)
  std::mutex mutex_;
  std::unique_ptr<BlockingConnection> connection_;
  std::optional<Clock::time_point> retry_after_;  // after a failed set-up
  ForkGuard fork_guard_;
  const std::atomic<std::uint64_t>* primary_epoch_;
  std::uint64_t connected_epoch_ = 0;  // the primary's epoch when connection_ was opened
  Endpoint endpoint_;                  // where connection_ is
};

}  // namespace rlb::transport
