// The Redis Cluster transport: a router over one blocking connection pool per node
// (transport/blocking_client.hpp: each connection a connection core driven with poll()). Where a
// request goes, and what a redirect means, comes from connection/cluster.hpp; this file opens
// the connections, sends, waits and retries.
//
// A batch of requests (ClusterClient::run_batch) is grouped by node, each group written on one
// connection of its node in one pipelined write, every group written before any reply is read:
// the nodes work at once, and the batch takes the time of the slowest node, not the sum. MOVED
// and ASK are followed at once; TRYAGAIN, CLUSTERDOWN, a slot no node serves and a node that
// cannot be connected to (nothing was sent: a failover under way) are retried after a short
// pause with a fresh slot map, until the request's deadline (socket_timeout from the call, else
// kDefaultWait).
//
// A request whose reply was lost is sent again only when its operation cannot apply twice
// (Operation::resend_limit(): a write carrying a submission id, guards), at most that many
// times: the node's connection hands it back (ClientOptions::hand_back_resends) and it is routed
// again, so after a failover the resend goes to the slot's new primary once the map says so,
// within a new deadline (socket_timeout from the resend, as on one node); or when it only reads
// (Exchange::is_read()), once, within the deadline it had.
//
// The asyncio cluster client runs on the event loop instead (transport/loop_cluster.hpp), and
// judges what a node answers with this class's decisions (make_job, route, settle).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codec/reply.hpp"
#include "connection/cluster.hpp"
#include "connection/core.hpp"
#include "connection/observer.hpp"
#include "connection/options.hpp"
#include "connection/stats.hpp"
#include "leaderboard/operations.hpp"
#include "transport/blocking_client.hpp"

namespace rlb::transport {

using connection::cluster::NodeAddress;

struct ClusterOptions {
  ClientOptions node;  // every node's: credentials, TLS, timeouts, client name (host/port unused)
  std::vector<std::pair<std::string, int>> startup_nodes;
  bool read_from_replicas = false;  // requests that only read go to a replica of their shard

  void validate() const;  // throws InvalidArgument
};

// How long a request may wait for its slot's owner (a failover, a migration, a node that cannot
// be reached) when the client has no socket_timeout.
inline constexpr double kDefaultWait = 10.0;  // seconds

class ClusterClient {
 public:
  explicit ClusterClient(ClusterOptions options);
  ClusterClient(const ClusterClient&) = delete;
  ClusterClient& operator=(const ClusterClient&) = delete;

  struct Outgoing {
    std::uint64_t id = 0;
    std::unique_ptr<leaderboard::Operation> operation;
    Clock::time_point started = Clock::now();
  };
  // Runs every request to its end, concurrently (see above); one completion per request, in
  // the order given, each with its id. Throws only if interrupted (KeyboardInterrupt).
  std::vector<Completion> run_batch(std::vector<Outgoing> batch);

  leaderboard::Result run(std::unique_ptr<leaderboard::Operation> operation);
  // upsert_many: `window` operations at a time in one batch (they share a slot: one connection,
  // pipelined), results to `done` in order; the first error is raised once its batch is done.
  void run_pipelined(std::size_t window,
                     const std::function<std::unique_ptr<leaderboard::Operation>()>& next,
                     const std::function<void(leaderboard::Result)>& done);
  // One command, routed by its key (argv[1]; a keyless command goes to any primary);
  // redirects followed; an error reply is raised.
  codec::Reply execute(std::vector<std::string> argv);

  // Reads the slot map again now.
  void refresh();
  // The map as it is: one (primary, replicas) per shard, with its slot ranges.
  struct ShardView {
    NodeAddress primary;
    std::vector<NodeAddress> replicas;
    std::vector<std::pair<int, int>> ranges;
  };
  std::vector<ShardView> shards();
  // The primary serving `slot` now (reading the map first if none was read yet).
  NodeAddress primary_for(int slot);

  connection::Stats stats() const;
  void close();  // closes idle connections
  const ClusterOptions& options() const { return options_; }
  std::uint64_t redirects() const { return redirects_.load(); }
  std::uint64_t retries() const { return retries_.load(); }
  // Requests sent again after their reply was lost (they carried a submission id).
  std::uint64_t resends() const { return resends_.load(); }

 private:
  friend class LoopCluster;  // the asyncio cluster client (transport/loop_cluster.hpp)
  using Emit = std::function<void(Completion)>;
  // One request of a batch on its way.
  struct Job {
    std::uint64_t id = 0;  // the caller's
    std::unique_ptr<connection::Exchange> exchange;
    Clock::time_point started, deadline;
    std::optional<int> slot;
    bool reads = false;
    std::optional<NodeAddress> ask;  // the next try goes there, after ASKING
    int redirects = 0;
    int waits = 0;
    int resends = 0;  // after a lost reply (submission ids only)
    Clock::time_point not_before{};
    std::exception_ptr last_error;  // why it waits
    std::uint64_t connection_id = 0;
  };
  // Where a job goes: a node, and whether as a replica.
  using Target = std::pair<NodeAddress, bool>;
  // The job for a request; none if it completed at once (emitted).
  std::optional<Job> make_job(Outgoing& request, const Emit& emit);
  // The job's node under `map`; none if no node serves its slot (the job then waits in `next`).
  std::optional<Target> route(Job& job, const connection::cluster::SlotMap& map, const Emit& emit,
                              std::vector<Job>& next);
  // Waits before the job's next try (into `next`); fails it if its deadline comes first.
  void retry_later(Job job, std::exception_ptr why, const Emit& emit, std::vector<Job>& next);
  // No slot map could be read (`why`) and there is none: the jobs fail if every node would
  // refuse them alike (credentials, permissions, a certificate, a server too old), else wait
  // to try again (into `next`).
  void map_failed(std::vector<Job>& jobs, const std::exception_ptr& why, const Emit& emit,
                  std::vector<Job>& next);
  // A node could not be reached (nothing was sent): the jobs wait for a fresh map.
  void unreachable(std::vector<Job>& jobs, const Emit& emit, std::vector<Job>& next);
  // What the node answered for `job`: a result or an error (emitted), or a redirect or a lost
  // reply that may be resent (the job goes to `next`).
  void settle(Job job, Completion completion, const NodeAddress& node, const Emit& emit,
              std::vector<Job>& next);
  void mark_stale();
  std::shared_ptr<BlockingClient> pool(const NodeAddress& node, bool replica);
  // The map (read first if stale or none); `deadline`: a call's, which the read keeps
  // (TimeoutError if no node answered by then and there is no map to use).
  std::shared_ptr<const connection::cluster::SlotMap> map(
      std::optional<Clock::time_point> deadline = std::nullopt);
  // The map as it is (none before the first read), without reading it; `stale`: whether it
  // should be read again.
  std::shared_ptr<const connection::cluster::SlotMap> cached_map(bool* stale) const;
  // Reads the slot map from the first node that answers (the known ones, then the startup
  // nodes; those suspected last). `force`: even if it was read in the last kRefreshInterval.
  // `deadline`: no node is waited for past it (a node that does not answer is suspected).
  void refresh_map(bool force, std::optional<Clock::time_point> deadline = std::nullopt);
  void note_moved(int slot, const NodeAddress& node);
  std::vector<NodeAddress> candidates();
  // A node that refused a request with CLUSTERDOWN (a primary cut off from the majority, which
  // still names itself the slots' owner), or that did not answer when asked for the map, is
  // asked for the map after the others for a while.
  void suspect(const NodeAddress& node);

  const ClusterOptions options_;
  const std::shared_ptr<const TlsContext> tls_;
  mutable std::mutex mutex_;  // guards map_, pools_, stale_
  std::shared_ptr<const connection::cluster::SlotMap> map_;
  // The last map read from the cluster (MOVED replies edit map_, not this): a new read that
  // differs is a topology change (observer.hpp). Guarded by refresh_mutex_.
  std::shared_ptr<const connection::cluster::SlotMap> read_map_;
  void note_read(const std::shared_ptr<const connection::cluster::SlotMap>& map);
  std::map<std::pair<NodeAddress, bool>, std::shared_ptr<BlockingClient>> pools_;
  bool stale_ = true;
  std::map<NodeAddress, Clock::time_point> suspects_;  // guarded by mutex_: until when
  std::mutex refresh_mutex_;                           // one reader of the map at a time
  Clock::time_point refreshed_at_{};
  std::atomic<std::uint64_t> replica_turn_{0}, redirects_{0}, retries_{0}, resends_{0};
};

}  // namespace rlb::transport
