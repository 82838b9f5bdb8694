// Client-side caching of metadata hashes, without I/O (README, "Client-side caching").
//
// A caching client keeps one more connection, the invalidation connection: it asks Redis to
// track every key under its boards' metadata prefixes in broadcast mode and to send the
// invalidations to itself (CLIENT TRACKING on REDIRECT <its own id> BCAST PREFIX <key>:user:
// ...), then subscribes to __redis__:invalidate (RESP2: the messages arrive as Pub/Sub
// messages). Broadcast mode tracks prefixes, not the keys a connection read, so the data
// connections need nothing and the one connection whose life matters is this one.
//
// A read through the cache (CachedRead) sends its query without metadata (ids, scores, ranks)
// and takes the metadata it has from the cache, asking for the rest in a second round trip.
// Ordering: an invalidation travels on another connection than the read, so a read that
// follows a write could see it late. Hence the barrier: before its query, a read writes a PING
// on the invalidation connection; Redis answers it after every invalidation it queued on that
// connection before, i.e. after those of every write that had returned when the read started.
// Cached entries are trusted only once that PONG has been read (and every message before it
// applied), on the same connection (generation) that tracked them. Anything else is doubt and
// flushes the cache: the connection lost or replaced, a flush message (FLUSHALL, FLUSHDB), an
// unknown message, a new prefix to track (the connection is set up again).
//
// An entry read from Redis is cached only by a read whose barrier passed (the driver passes a
// barrier to fetch() only if its query ran on the invalidation connection's server), on that
// same connection (generation), and only if nothing invalidated its key (or flushed the cache)
// between the moment its read was sent (the Ticket) and its insertion. A read without a passed
// barrier may have read another server (the old primary after a failover, whose names the new
// primary's invalidations never cover): what it read is returned, never cached.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "codec/reply.hpp"
#include "leaderboard/operations.hpp"

namespace rlb::connection {

using codec::Reply;
using leaderboard::Metadata;

struct CacheOptions {
  std::size_t max_entries = 10000;  // metadata hashes kept (least recently used go)
  std::size_t max_bytes = std::size_t{64}
                          << 20;  // their keys, fields and values, plus kEntryCost each

  void validate() const;
};

struct CacheStats {
  std::uint64_t hits = 0, misses = 0, invalidations = 0, flushes = 0;
  std::size_t entries = 0, bytes = 0;
  bool tracking = false;  // an invalidation connection is subscribed
};

class MetadataCache {
 public:
  static constexpr const char* kChannel = "__redis__:invalidate";
  static constexpr std::size_t kEntryCost = 96;  // bookkeeping charged per cached hash

  explicit MetadataCache(CacheOptions options);
  const CacheOptions& options() const { return options_; }

  // ---- The invalidation connection, as its driver reports it.
  // Asks for `prefix` to be tracked; true if the current connection does not track it (the
  // driver then sets a new one up: connection_lost(), a new connection, tracking_wire()).
  bool want_prefix(const std::string& prefix);
  // The connection's commands after its handshake, given its CLIENT ID: CLIENT TRACKING on
  // REDIRECT <own id> BCAST PREFIX <every prefix wanted>, then SUBSCRIBE; `replies` is set to
  // how many replies they get.
  std::string tracking_wire(long long own_id, std::size_t& replies);
  // Their replies: throws RedisError if tracking was refused (an error reply).
  void tracking_started(const std::vector<Reply>& replies);
  // A message on the subscribed connection (an invalidation, a PONG). Throws ProtocolError for
  // anything else: the driver then drops the connection.
  void on_push(const Reply& push);
  // The connection is gone (or was refused, or is replaced): everything cached is dropped and
  // nothing is trusted until a new connection is subscribed.
  void connection_lost();
  bool tracking() const;

  // ---- Barriers.
  struct Barrier {
    std::uint64_t generation = 0;  // of the connection it was written on
    std::uint64_t token = 0;
    std::string wire;  // PING <token>
  };
  // The PING a read writes on the invalidation connection before its query (the driver writes
  // barriers in the order this gives them); none when no connection is subscribed.
  std::optional<Barrier> barrier();
  // Its PONG was read on the same connection, so every invalidation before it was applied.
  bool passed(const Barrier& barrier) const;
  // Its connection is gone or replaced: it can never pass (waiting for it is pointless).
  bool hopeless(const Barrier& barrier) const;

  // ---- Entries.
  struct Ticket {
    std::uint64_t generation = 0;  // 0: nothing read under it may be cached
    std::uint64_t seq = 0;
  };
  // Taken just before reading keys under `prefix` from Redis, by a read whose `barrier` has
  // passed; hand it back with release(). None (nothing read under it is cached) if the barrier
  // has not passed or its connection is gone or replaced, or the connection does not track
  // `prefix`.
  Ticket ticket(const Barrier& barrier, const std::string& prefix);
  void release(const Ticket& ticket);
  // The cached hash of `key`, if `barrier` has passed on the connection that tracked it.
  bool lookup(const Barrier& barrier, const std::string& key, Metadata& out);
  // Caches `value`, read under `ticket`, unless the key was invalidated since (or the cache
  // flushed, or the connection changed). Evicts the least recently used past the bounds.
  void insert(const Ticket& ticket, const std::string& key, const Metadata& value);
  void count_misses(std::size_t misses);
  void flush();
  CacheStats stats() const;

 private:
  struct Node {
    std::string key;
    Metadata value;
    std::size_t bytes = 0;
  };
  using Lru = std::list<Node>;

  bool covered(const std::vector<std::string>& prefixes, const std::string& key) const;
  void flush_locked();
  void invalidate_locked(const std::string& key);
  void erase_locked(std::unordered_map<std::string, Lru::iterator>::iterator it);

  const CacheOptions options_;
  mutable std::mutex mutex_;
  Lru lru_;  // most recently used first
  std::unordered_map<std::string, Lru::iterator> index_;
  std::size_t bytes_ = 0;
  std::vector<std::string> wanted_;      // prefixes to track, none a prefix of another
  std::vector<std::string> subscribed_;  // those the current connection tracks
  std::uint64_t generation_ = 0;         // bumped for every new connection
  bool tracking_ = false;                // generation_'s connection is subscribed
  bool starting_ = false;                // tracking_wire() given, tracking_started() not yet
  std::uint64_t next_token_ = 0;
  std::uint64_t pong_ = 0;  // the last PONG token read on generation_'s connection
  // Invalidations since the oldest ticket out: the seq of each key's last one.
  std::uint64_t seq_ = 0;
  std::uint64_t flushed_at_ = 0;  // seq when the cache was last flushed
  std::size_t tickets_out_ = 0;
  std::unordered_map<std::string, std::uint64_t> invalidated_;
  CacheStats stats_;
};

// One read through the cache, without I/O: the read without metadata, then the metadata the
// cache lacks (HGETALLs), each run on the same data connection; their results are kept here
// (the operations themselves give None). The steps and every decision between them are taken
// here, once; a driver (the blocking client's, the asyncio client's) only does the I/O:
//
//   for (;;) switch (read->next(on_barrier_server)) {
//     case CachedRead::Step::Run: run read->operation() on the data connection; break;
//     case CachedRead::Step::AwaitBarrier: read->barrier_passed(wait for the PONG); break;
//     case CachedRead::Step::Done: return read->result();
//   }
//
// `on_barrier_server()`: whether the data connection is, now, on the invalidation connection's
// server (the barrier proves something only there; a connection may reconnect within a run, to
// where the resolver points then); asked only when the answer matters.
class CachedRead : public std::enable_shared_from_this<CachedRead> {
 public:
  enum class Step { Run, AwaitBarrier, Done };

  // `operation` must be cacheable (cached_metadata_prefix()); `barrier` was written on the
  // invalidation connection before the read (CacheChannel::begin).
  static std::shared_ptr<CachedRead> make(std::shared_ptr<MetadataCache> cache,
                                          std::unique_ptr<leaderboard::Operation> operation,
                                          MetadataCache::Barrier barrier);
  // What the driver does next.
  Step next(const std::function<bool()>& on_barrier_server);
  // The operation of the Step::Run next() gave.
  std::unique_ptr<leaderboard::Operation> operation();
  // After Step::AwaitBarrier: whether the barrier's PONG came (false: late, or the invalidation
  // connection is gone: the read is then uncached).
  void barrier_passed(bool passed);
  ~CachedRead();
  CachedRead(const CachedRead&) = delete;
  CachedRead& operator=(const CachedRead&) = delete;

  const std::string& prefix() const { return prefix_; }
  // After Step::Done: the read's result, as the uncached read's.
  leaderboard::Result result();

 private:
  // Where the read is: each state names what ran (or was awaited) last.
  enum class State { Start, Queried, Awaiting, Awaited, Fetched, Done };

  CachedRead(std::shared_ptr<MetadataCache> cache, std::unique_ptr<leaderboard::Operation> lean,
             std::string prefix, MetadataCache::Barrier barrier);
  // The read without metadata; once.
  std::unique_ptr<leaderboard::Operation> query();
  // After query() finished: the HGETALLs of the entries the cache cannot give, or nullptr.
  // `barrier`: given only if it passed, with the query on the invalidation connection's server.
  // Cached entries are used, and what the HGETALLs read is cached, only then; without it the
  // read is uncached.
  std::unique_ptr<leaderboard::Operation> fetch(
      const std::optional<MetadataCache::Barrier>& barrier);
  // fetch()'s operation did not run (only) on the server the barrier passed on (a connection
  // lost and the read sent again elsewhere): nothing it read is cached.
  void moved();
  // After the query: the fetch if there is one (Step::Run), else Step::Done.
  Step fetch_step(bool passed);

  std::shared_ptr<MetadataCache> cache_;
  std::unique_ptr<leaderboard::Operation> lean_;
  std::string prefix_;
  MetadataCache::Barrier barrier_;
  State state_ = State::Start;
  bool on_server_ = false;  // the query ran on the invalidation connection's server
  bool passed_ = false;     // ... and the barrier passed: the cache is trusted
  std::unique_ptr<leaderboard::Operation> next_;  // the operation of the last Step::Run
  std::optional<leaderboard::Result> result_;     // the query's
  std::vector<leaderboard::Entry*> missing_;
  std::optional<std::vector<Metadata>> fetched_;
  MetadataCache::Ticket ticket_;
};

}  // namespace rlb::connection
