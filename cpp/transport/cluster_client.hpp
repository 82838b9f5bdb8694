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
// kDefaultWait). A request whose reply was lost is never sent again.
//
// AsyncClusterTransport runs batches on an I/O thread for the asyncio client: requests submitted
// while a batch runs go together in the next one; finished requests wake the event loop through
// an eventfd, as transport/multiplexed_client.hpp does.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "codec/reply.hpp"
#include "connection/cluster.hpp"
#include "connection/core.hpp"
#include "connection/options.hpp"
#include "connection/stats.hpp"
#include "leaderboard/operations.hpp"
#include "transport/blocking_client.hpp"
#include "transport/fork.hpp"

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
  // The same, for a driver: each completion goes to `emit` as soon as it is known (none are
  // returned), and before each round of sends `more` may add requests (submitted meanwhile).
  void run_batch(std::vector<Outgoing> batch, const std::function<void(Completion)>& emit,
                 const std::function<std::vector<Outgoing>()>& more);

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

 private:
  struct Job;
  std::shared_ptr<BlockingClient> pool(const NodeAddress& node, bool replica);
  std::shared_ptr<const connection::cluster::SlotMap> map();
  // Reads the slot map from the first node that answers (the known ones, then the startup
  // nodes). `force`: even if it was read in the last kRefreshInterval.
  void refresh_map(bool force);
  void note_moved(int slot, const NodeAddress& node);
  std::vector<NodeAddress> candidates();

  const ClusterOptions options_;
  const std::shared_ptr<const TlsContext> tls_;
  std::mutex mutex_;  // guards map_, pools_, stale_
  std::shared_ptr<const connection::cluster::SlotMap> map_;
  std::map<std::pair<NodeAddress, bool>, std::shared_ptr<BlockingClient>> pools_;
  bool stale_ = true;
  std::mutex refresh_mutex_;  // one reader of the map at a time
  Clock::time_point refreshed_at_{};
  std::atomic<std::uint64_t> replica_turn_{0}, redirects_{0}, retries_{0};
};

// The asyncio client's transport: run_batch on an I/O thread.
class AsyncClusterTransport {
 public:
  explicit AsyncClusterTransport(ClusterOptions options);
  ~AsyncClusterTransport();
  AsyncClusterTransport(const AsyncClusterTransport&) = delete;
  AsyncClusterTransport& operator=(const AsyncClusterTransport&) = delete;

  // Queues requests (any thread, never blocks on I/O); each completes through take_completions.
  void submit(std::vector<ClusterClient::Outgoing> batch);
  int notify_fd() const { return event_fd_; }
  std::vector<Completion> take_completions();
  // Requests not yet sent fail with ConnectionError; the batch under way finishes; the I/O
  // thread stops. Idempotent.
  void close();
  bool closed() const { return closed_.load(); }
  ClusterClient& client() { return client_; }

 private:
  void loop();
  void publish(std::vector<Completion> completions);

  ClusterClient client_;
  const ForkGuard fork_guard_;
  int event_fd_ = -1;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<ClusterClient::Outgoing> submitted_;  // guarded by mutex_
  std::vector<Completion> completions_;             // guarded by mutex_
  bool stopping_ = false;                           // guarded by mutex_
  std::atomic<bool> closed_{false};
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace rlb::transport
