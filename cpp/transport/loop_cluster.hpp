// The asyncio cluster client's transport: Redis Cluster on the event loop's own thread, as the
// one-node asyncio client (transport/loop_client.hpp), with one LoopClient per node. There is no
// router or worker thread: a request is routed when it is submitted (the slot map is read under
// a lock, never waited for), written on its node's connection with the others of the loop's
// turn (one pipelined write per node), and its reply read when the loop sees that socket
// readable, so a node that stops answering delays only its own requests. What a node answers is
// judged as the sync cluster client judges it (ClusterClient::settle: a result, an error, a
// MOVED or ASK followed at once, a TRYAGAIN, CLUSTERDOWN or unreachable node retried after a
// pause with a fresh map, a lost reply resent when the operation cannot apply twice); a retry's
// pause is the loop's timer.
//
// What blocks runs on a helper thread, which wakes the loop through notify_fd(): reading the
// slot map (the first one, and a fresh one when a redirect or a failure made it stale: the map
// there is serves meanwhile), and each node's host lookup (its LoopClient's own helper).
//
// The bindings (bindings/async_core.hpp) drive it as they drive a LoopClient, but watch a set
// of descriptors (watches()) rather than one socket.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "connection/core.hpp"
#include "connection/stats.hpp"
#include "leaderboard/operations.hpp"
#include "transport/cluster_client.hpp"
#include "transport/fork.hpp"
#include "transport/loop_client.hpp"
#include "transport/wakeup.hpp"

namespace rlb::transport {

class LoopCluster {
 public:
  // Owned through create(), as a LoopClient (a forked child leaks it instead of destroying it).
  static std::shared_ptr<LoopCluster> create(ClusterOptions options);
  ~LoopCluster();
  LoopCluster(const LoopCluster&) = delete;
  LoopCluster& operator=(const LoopCluster&) = delete;

  // Everything below runs on the event loop's thread, and never blocks.

  // Routes a request to its node and queues it there. True: it is written already (its node's
  // connection was idle); false: the caller flushes at the end of the loop's turn.
  bool submit(std::uint64_t id, std::unique_ptr<leaderboard::Operation> operation,
              Clock::time_point started);
  // The caller gave request `id` up: its next pages are not sent.
  void cancel(std::uint64_t id);
  // Routes what waits and may go now, and writes what each node has to write.
  void flush();

  // What the loop must watch: each descriptor once, for reading, writing or both. Refreshed
  // after every call above and below; take_watches_changed() says whether it changed since it
  // was last asked (most calls change nothing: the loop's registrations stay as they are).
  struct Watch {
    int fd = -1;
    bool read = false, write = false;
    bool operator==(const Watch& other) const {
      return fd == other.fd && read == other.read && write == other.write;
    }
  };
  const std::vector<Watch>& watches() const { return watches_; }
  bool take_watches_changed() { return std::exchange(watches_changed_, false); }
  // The loop saw `fd` (one of watches()) readable / writable, or the timer pass.
  void on_readable(int fd);
  void on_writable(int fd);
  void on_timer();
  std::optional<Clock::time_point> wakeup_at() const;
  // Sockets given up, closed once the loop stopped watching them (LoopClient::close_retired).
  void close_retired();

  bool has_completions() const;
  std::vector<Completion> take_completions();
  // Every node's connections' counts, and the map's reads.
  Stats stats() const;
  // Fails every request with ConnectionError, closes every connection, joins the helper.
  // Idempotent.
  void close();
  bool closed() const { return closed_; }
  const ClientOptions& options() const { return client_.options().node; }
  ClusterClient& client() { return client_; }

 private:
  explicit LoopCluster(ClusterOptions options);
  using Job = ClusterClient::Job;
  using Target = ClusterClient::Target;
  struct Node {
    Target target;
    std::shared_ptr<LoopClient> client;
  };

  // Routes the jobs whose pause is over, starting a read of the map if it is stale or missing;
  // with no map yet, they wait for the first.
  void route_ready();
  // Queues the job on its node; true if written at once.
  bool send(Job job, const Target& target);
  Node& node(const Target& target);
  // Takes every node's completions and judges them (ClusterClient::settle); redirected jobs
  // are routed again at once.
  void collect();
  void emit(Completion completion) { completions_.push_back(std::move(completion)); }
  // Reads the slot map on the helper thread (unless it is under way already).
  void start_refresh(std::optional<Clock::time_point> deadline);
  // The helper thread finished: the first map's failure is the waiting jobs' to judge.
  void on_refreshed();
  void after();  // collect, route, refresh the watches
  void refresh_watches();

  ClusterClient client_;
  const ForkGuard fork_guard_;
  const ClusterClient::Emit emit_;
  std::map<Target, Node> nodes_;
  // Jobs sent to a node, by id (the exchange is the node's meanwhile), and where each went.
  std::unordered_map<std::uint64_t, std::pair<Job, Target>> sent_;
  std::vector<Job> waiting_;  // for their pause to end, or for the first map
  std::vector<Completion> completions_;
  std::vector<LoopClient*> dirty_;  // nodes given requests to write at the end of the turn
  std::vector<Watch> watches_, next_watches_;
  bool watches_changed_ = true;
  bool closed_ = false;
  // Each node's connection, as the one-node asyncio client's default.
  static constexpr std::size_t kMaxInFlight = 1024;

  // The helper thread reading the map, and what it found.
  Wakeup wakeup_;
  std::mutex mutex_;
  bool refreshing_ = false;           // on the loop's thread only
  bool refresh_done_ = false;         // guarded by mutex_
  std::exception_ptr refresh_error_;  // guarded by mutex_
  std::thread refresher_;
};

}  // namespace rlb::transport
