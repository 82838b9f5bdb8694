#include "transport/cluster_client.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <string_view>
#include <thread>

#include "connection/exchange.hpp"
#include "errors.hpp"

namespace rlb::transport {

namespace cluster = connection::cluster;
using codec::Reply;
using connection::Exchange;
using leaderboard::Operation;
using leaderboard::Result;

namespace {

// A full re-read of the map at most this often (a MOVED updates the slot at once anyway).
constexpr auto kRefreshInterval = std::chrono::milliseconds(100);
// How long a node that answered CLUSTERDOWN, or did not answer a read of the map, is asked for
// the map after the others.
constexpr auto kSuspectFor = std::chrono::seconds(10);
// Redirects (MOVED, ASK) a request follows at once; past them each waits retry_delay() first.
constexpr int kFreeRedirects = 3;

Clock::duration seconds(double value) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(value));
}

// A new connection for `jobs` is opened by the earliest of their deadlines (and within the
// connect timeout): a node that does not answer (partitioned away, SYNs dropped) must not hold
// a request past its deadline, as a whole connect timeout begun late in it would (measured: 2x
// socket_timeout, tests/test_partitions.py). Those it fails wait for a fresh map, or time out.
template <typename Jobs>
std::optional<Clock::time_point> earliest_deadline(const Jobs& jobs) {
  std::optional<Clock::time_point> out;
  for (const auto& job : jobs) {
    if (!out || job.deadline < *out) out = job.deadline;
  }
  return out;
}

// A node's certificate failed verification, or the node is a server too old for the scripts:
// every node would fail the same way (one CA, one set of options, one server version), so the
// request fails at once instead of waiting for a node that works.
bool refused_everywhere(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const UnsupportedServerError&) {
    return true;
  } catch (...) {
  }
  return message_of(error).find("certificate verify failed") != std::string::npos;
}

// The connection's handshake was refused in a way every node would refuse it.
bool refused_at_handshake(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const AuthenticationError&) {
    return true;
  } catch (const NoPermissionError&) {
    return true;
  } catch (...) {
  }
  return refused_everywhere(error);
}

// One raw command as an operation, its reply kept in `sink`.
class RawCommand final : public Operation {
 public:
  RawCommand(std::vector<std::string> argv, std::shared_ptr<Reply> sink)
      : argv_(std::move(argv)), sink_(std::move(sink)) {}
  const char* name() const override { return "execute_command"; }
  std::vector<leaderboard::Command> next() override { return {{nullptr, argv_}}; }
  bool feed(std::vector<Reply>& replies) override {
    *sink_ = std::move(replies.at(0));
    return true;
  }
  Result take_result() override { return leaderboard::None{}; }

 private:
  std::vector<std::string> argv_;
  std::shared_ptr<Reply> sink_;
};

}  // namespace

void ClusterOptions::validate() const {
  node.validate();
  if (startup_nodes.empty()) throw InvalidArgument("startup_nodes must name at least one node");
  for (const auto& [host, port] : startup_nodes) {
    if (host.empty()) throw InvalidArgument("a startup node's host must not be empty");
    if (host.find('\0') != std::string::npos) {
      throw InvalidArgument("a startup node's host must not contain a NUL character");
    }
    if (port < 1 || port > 65535) {
      throw InvalidArgument("a startup node's port must be between 1 and 65535");
    }
  }
  if (node.db != 0) throw InvalidArgument("Redis Cluster has database 0 only: db must be 0");
  if (!node.unix_socket_path.empty()) {
    throw InvalidArgument("a cluster's nodes are TCP servers: unix_socket_path cannot be used");
  }
  if (node.sentinel.enabled()) throw InvalidArgument("Sentinel and Cluster cannot be combined");
}

// ---------------------------------------------------------------------------------------------
// ClusterClient

ClusterClient::ClusterClient(ClusterOptions options)
    : options_((options.validate(), std::move(options))),
      tls_(connection::make_tls_context(options_.node.tls)) {}

std::shared_ptr<BlockingClient> ClusterClient::pool(const NodeAddress& node, bool replica) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& found = pools_[{node, replica}];
  if (!found) {
    ClientOptions node_options = options_.node;
    node_options.host = node.host;
    node_options.port = node.port;
    node_options.readonly = replica;
    node_options.hand_back_resends = true;  // resent where the slot is served then (settle)
    found = std::make_shared<BlockingClient>(std::move(node_options), tls_);
  }
  return found;
}

std::shared_ptr<const cluster::SlotMap> ClusterClient::cached_map(bool* stale) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stale) *stale = stale_;
  return map_;
}

std::shared_ptr<const cluster::SlotMap> ClusterClient::map(
    std::optional<Clock::time_point> deadline) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (map_ && !stale_) return map_;
  }
  {
    // Another thread is reading the map (perhaps from a node that does not answer): use the
    // one there is rather than wait for it.
    std::unique_lock<std::mutex> refreshing(refresh_mutex_, std::try_to_lock);
    if (!refreshing.owns_lock()) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (map_) return map_;
    }
  }
  refresh_map(false, deadline);
  std::lock_guard<std::mutex> lock(mutex_);
  return map_;
}

std::vector<NodeAddress> ClusterClient::candidates() {
  std::vector<NodeAddress> out;
  std::vector<NodeAddress> last;  // suspects: asked after every other node
  std::lock_guard<std::mutex> lock(mutex_);
  if (map_) out = map_->nodes();
  for (const auto& [host, port] : options_.startup_nodes) {
    NodeAddress node{host, port};
    if (std::find(out.begin(), out.end(), node) == out.end()) out.push_back(node);
  }
  const auto now = Clock::now();
  for (auto it = suspects_.begin(); it != suspects_.end();) {
    if (it->second <= now) {
      it = suspects_.erase(it);
      continue;
    }
    auto found = std::find(out.begin(), out.end(), it->first);
    if (found != out.end()) {
      last.push_back(*found);
      out.erase(found);
    }
    ++it;
  }
  out.insert(out.end(), last.begin(), last.end());
  return out;
}

void ClusterClient::suspect(const NodeAddress& node) {
  std::lock_guard<std::mutex> lock(mutex_);
  suspects_[node] = Clock::now() + kSuspectFor;
}

void ClusterClient::refresh_map(bool force, std::optional<Clock::time_point> deadline) {
  std::lock_guard<std::mutex> refreshing(refresh_mutex_);
  const auto now = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Another thread may have read it while this one waited for the lock.
    // (refresh() forces a read even of a map that is not stale.)
    if (map_ && !force && (!stale_ || now - refreshed_at_ < kRefreshInterval)) return;
  }
  // A map must cover all 16,384 slots to be taken at once: CLUSTER SHARDS may list a shard
  // with no slots while its primary is down (Redis 7.4), so a node whose CLUSTER SHARDS leaves
  // slots out is asked CLUSTER SLOTS too, then the next node. If no node gives a complete map
  // (a cluster with slots no node serves), the one covering most slots is taken, unless the map
  // held already covers more: it is kept (its nodes may come back; MOVED updates it meanwhile).
  std::string errors;
  std::optional<cluster::SlotMap> best;
  bool out_of_time = false;
  const auto nodes = candidates();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto& node = nodes[i];
    // A call's deadline: no node is waited for past it, each given a share of it
    // (turn_until). A node that did not answer in its share is asked last for a while.
    if (deadline && Clock::now() >= *deadline) {
      out_of_time = true;
      break;
    }
    const auto until = turn_until(deadline, i + 1 == nodes.size());
    try {
      auto client = pool(node, false);
      Reply reply = client->execute_raw({"CLUSTER", "SHARDS"}, until);
      std::optional<cluster::SlotMap> map;
      const bool no_shards =
          reply.is_error() && reply.str.find("unknown subcommand") != std::string::npos;
      if (!reply.is_error()) {
        map = cluster::SlotMap::from_shards(reply, options_.node.tls.enabled, node.host);
      }
      if (no_shards || (map && !map->complete())) {
        // Redis 6.2, or slots left out: CLUSTER SLOTS names every slot's primary.
        Reply slots = client->execute_raw({"CLUSTER", "SLOTS"}, until);
        if (!slots.is_error()) {
          auto from_slots = cluster::SlotMap::from_slots(slots, node.host);
          if (!map || from_slots.served() > map->served()) map = std::move(from_slots);
        } else if (!map) {
          reply = std::move(slots);
        }
      }
      if (!map) {
        if (reply.str.rfind("NOAUTH", 0) == 0 || reply.str.rfind("WRONGPASS", 0) == 0 ||
            reply.str.rfind("NOPERM", 0) == 0) {
          raise_server_error(reply.str);  // every node would say the same
        }
        errors += "; " + node.address() + ": " + reply.str;
        continue;
      }
      if (map->shards().empty()) {
        errors += "; " + node.address() + ": no slot is served";
        continue;
      }
      if (!map->complete()) {
        errors += "; " + node.address() + ": " + std::to_string(cluster::kSlots - map->served()) +
                  " slots not served";
        if (!best || map->served() > best->served()) best = std::move(map);
        continue;
      }
      auto taken = std::make_shared<const cluster::SlotMap>(std::move(*map));
      note_read(taken);
      std::lock_guard<std::mutex> lock(mutex_);
      map_ = std::move(taken);
      stale_ = false;
      refreshed_at_ = Clock::now();
      return;
    } catch (const AuthenticationError&) {
      throw;
    } catch (const NoPermissionError&) {
      throw;
    } catch (const ConnectionError& e) {
      if (refused_everywhere(std::current_exception())) throw;
      errors += std::string("; ") + e.what();
      suspect(node);
    } catch (const TimeoutError& e) {
      errors += std::string("; ") + e.what();
      suspect(node);
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    refreshed_at_ = Clock::now();
    if (best && (!map_ || best->served() > map_->served())) {
      // The slots it leaves out wait ("no node serves slot"), each asking for a new read.
      map_ = std::make_shared<const cluster::SlotMap>(std::move(*best));
      note_read(map_);
      stale_ = false;
      return;
    }
    if (best) stale_ = false;  // the nodes answered: the map held covers at least as much
    if (map_) return;          // keep the old map: the nodes may come back (the callers retry)
  }
  if (out_of_time) {
    throw TimeoutError("Timeout reading the cluster's slot map: no node answered in time" + errors);
  }
  throw ConnectionError("no node of the cluster answered CLUSTER SHARDS" + errors);
}

void ClusterClient::note_read(const std::shared_ptr<const cluster::SlotMap>& map) {
  const auto previous = std::exchange(read_map_, map);
  if (!previous) return;  // the first read
  int moved = 0;
  for (int slot = 0; slot < cluster::kSlots; ++slot) {
    const cluster::Shard* before = previous->shard_for(slot);
    const cluster::Shard* now = map->shard_for(slot);
    if ((before == nullptr) != (now == nullptr) ||
        (before && (!(before->primary == now->primary) || before->replicas != now->replicas))) {
      ++moved;
    }
  }
  if (moved > 0) {
    connection::observe(connection::Signal::topology_change,
                        std::to_string(moved) + " slots changed node or replicas; " +
                            std::to_string(map->served()) + " served by " +
                            std::to_string(map->shards().size()) + " shards");
  }
}

void ClusterClient::note_moved(int slot, const NodeAddress& node) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!map_) return;
  const auto* shard = map_->shard_for(slot);
  if (!shard || !(shard->primary == node)) {
    auto updated = std::make_shared<cluster::SlotMap>(*map_);
    updated->moved(slot, node);
    map_ = std::move(updated);
  }
  stale_ = true;  // the next request reads the whole map again (at most every 100 ms)
}

void ClusterClient::refresh() { refresh_map(true); }

std::vector<ClusterClient::ShardView> ClusterClient::shards() {
  auto current = map();
  std::vector<ShardView> out;
  for (const auto& shard : current->shards()) out.push_back({shard.primary, shard.replicas, {}});
  int first = 0;
  const cluster::Shard* previous = current->shard_for(0);
  for (int slot = 1; slot <= cluster::kSlots; ++slot) {
    const cluster::Shard* shard = slot < cluster::kSlots ? current->shard_for(slot) : nullptr;
    if (slot < cluster::kSlots && shard == previous) continue;
    if (previous) {
      out[static_cast<std::size_t>(previous - current->shards().data())].ranges.emplace_back(
          first, slot - 1);
    }
    first = slot;
    previous = shard;
  }
  return out;
}

NodeAddress ClusterClient::primary_for(int slot) {
  const auto* shard = map()->shard_for(slot);
  if (!shard) throw ConnectionError("no node serves slot " + std::to_string(slot));
  return shard->primary;
}

void ClusterClient::mark_stale() {
  std::lock_guard<std::mutex> lock(mutex_);
  stale_ = true;
}

std::optional<ClusterClient::Job> ClusterClient::make_job(Outgoing& request, const Emit& emit) {
  const auto wait = options_.node.socket_timeout.value_or(kDefaultWait);
  try {
    Job job;
    job.id = request.id;
    job.started = request.started;
    job.deadline = job.started + seconds(wait);
    job.exchange =
        std::make_unique<Exchange>(std::move(request.operation), options_.node.durability);
    if (job.exchange->finished()) {  // nothing to send
      emit(Completion(job.id, job.exchange->take_result(), {}, nullptr));
      return std::nullopt;
    }
    job.slot = cluster::commands_slot(job.exchange->commands());
    job.reads = cluster::read_only(job.exchange->commands());
    return job;
  } catch (...) {
    emit(Completion(request.id, {}, {}, std::current_exception()));
    return std::nullopt;
  }
}

void ClusterClient::retry_later(Job job, std::exception_ptr why, const Emit& emit,
                                std::vector<Job>& next) {
  ++retries_;
  job.last_error = std::move(why);
  job.not_before = Clock::now() + seconds(cluster::retry_delay(++job.waits));
  if (job.not_before >= job.deadline) {
    connection::observe(connection::Signal::timeout, "waiting for the cluster to serve slot " +
                                                         std::to_string(job.slot.value_or(-1)));
    emit(Completion(
        job.id, {}, {},
        std::make_exception_ptr(TimeoutError("Timeout waiting for the cluster to serve slot " +
                                             std::to_string(job.slot.value_or(-1)) + ": " +
                                             message_of(job.last_error)))));
    return;
  }
  next.push_back(std::move(job));
}

std::optional<ClusterClient::Target> ClusterClient::route(Job& job, const cluster::SlotMap& map,
                                                          const Emit& emit,
                                                          std::vector<Job>& next) {
  if (job.ask) return Target{*job.ask, false};
  const cluster::Shard* shard = map.shard_for(job.slot.value_or(0));
  if (!job.slot && !map.shards().empty()) shard = &map.shards().front();
  if (!shard) {
    mark_stale();
    retry_later(std::move(job),
                std::make_exception_ptr(ConnectionError("no node serves slot " +
                                                        std::to_string(job.slot.value_or(-1)))),
                emit, next);
    return std::nullopt;
  }
  if (job.reads && options_.read_from_replicas && !shard->replicas.empty()) {
    return Target{shard->replicas[replica_turn_++ % shard->replicas.size()], true};
  }
  return Target{shard->primary, false};
}

void ClusterClient::map_failed(std::vector<Job>& jobs, const std::exception_ptr& why,
                               const Emit& emit, std::vector<Job>& next) {
  const bool everywhere = refused_at_handshake(why);
  for (auto& job : jobs) {
    if (everywhere) {
      emit(Completion(job.id, {}, {}, why));
    } else {
      retry_later(std::move(job), why, emit, next);
    }
  }
  jobs.clear();
}

void ClusterClient::unreachable(std::vector<Job>& jobs, const Emit& emit, std::vector<Job>& next) {
  // Nothing was sent: the node is down (a failover under way?) or gone from the cluster.
  const auto why = std::current_exception();
  mark_stale();
  for (auto& job : jobs) {
    job.ask.reset();
    retry_later(std::move(job), why, emit, next);
  }
  jobs.clear();
}

namespace {
bool is_redirect(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const ClusterRedirectError&) {
    return true;
  } catch (...) {
    return false;
  }
}
}  // namespace

void ClusterClient::settle(Job job, Completion completion, const NodeAddress& node,
                           const Emit& emit, std::vector<Job>& next) {
  if (!completion.error) {
    emit(Completion(job.id, std::move(completion.result), {}, nullptr));
    return;
  }
  if (!completion.redirected) {  // an error reply, or a reply lost: never sent again
    emit(Completion(job.id, {}, {}, completion.error));
    return;
  }
  job.exchange = std::move(completion.redirected);
  if (completion.unsent) {
    // Never written: as if the node had been unreachable (but where every node would refuse
    // the same way: credentials, a certificate, a server too old).
    if (refused_at_handshake(completion.error)) {
      emit(Completion(job.id, {}, {}, completion.error));
      return;
    }
    mark_stale();
    job.ask.reset();
    retry_later(std::move(job), completion.error, emit, next);
    return;
  }
  if (!is_redirect(completion.error)) {
    // The reply was lost, and the request cannot apply twice (a submission id): sent again, to
    // whichever node serves the slot when it goes (a failover may be under way), with a new
    // deadline, at most resend_limit() times.
    // A read (it writes nothing) is sent again once, within the deadline it has.
    const bool read = job.exchange->resend_limit() == 0 && job.exchange->is_read();
    const int limit = read ? 1 : job.exchange->resend_limit();
    if (read && job.resends >= limit) {
      emit(Completion(job.id, {}, {}, completion.error));
      return;
    }
    if (job.resends >= limit) {
      emit(Completion(
          job.id, {}, {},
          std::make_exception_ptr(ConnectionError(
              std::string(job.exchange->name()) + ": no reply after " + std::to_string(limit + 1) +
              " attempts (its submission id kept it from applying more than once): " +
              message_of(completion.error)))));
      return;
    }
    ++job.resends;
    ++resends_;
    connection::observe(read ? connection::Signal::read_retry : connection::Signal::resend,
                        std::string(job.exchange->name()) + " on " + node.address());
    mark_stale();
    job.ask.reset();
    job.waits = 0;
    job.not_before = {};
    if (!read) {
      job.deadline = Clock::now() + seconds(options_.node.socket_timeout.value_or(kDefaultWait));
    }
    job.last_error = completion.error;
    next.push_back(std::move(job));
    return;
  }
  ++redirects_;
  const auto redirect = cluster::parse_redirect(message_of(completion.error), node.host);
  if (!redirect) {
    emit(Completion(job.id, {}, {}, completion.error));
    return;
  }
  bool asking = redirect->kind == cluster::Redirect::Kind::Ask;
  if (asking || redirect->kind == cluster::Redirect::Kind::Moved) {
    connection::observe(asking ? connection::Signal::ask : connection::Signal::moved,
                        "slot " + std::to_string(redirect->slot) + ": " + node.address() + " -> " +
                            redirect->target.address());
  }
  // The step again, or (a read in two steps redirected at its second) its one script instead,
  // routed by its own keys' slot without ASKING: the node an ASK names holds only the keys
  // moved so far, the board's perhaps not among them.
  if (!job.exchange->restart_step(asking)) {
    asking = false;
    job.slot = cluster::commands_slot(job.exchange->commands());
  }
  job.ask.reset();
  switch (redirect->kind) {
    case cluster::Redirect::Kind::Moved:
      note_moved(redirect->slot, redirect->target);
      [[fallthrough]];
    case cluster::Redirect::Kind::Ask:
      if (asking) job.ask = redirect->target;
      if (++job.redirects <= kFreeRedirects) {
        job.not_before = {};
        next.push_back(std::move(job));
      } else {
        retry_later(std::move(job), completion.error, emit, next);
      }
      break;
    case cluster::Redirect::Kind::ClusterDown:
      suspect(node);  // its map may be a minority's: the others' first
      mark_stale();
      retry_later(std::move(job), completion.error, emit, next);
      break;
    case cluster::Redirect::Kind::TryAgain:
      retry_later(std::move(job), completion.error, emit, next);
      break;
  }
}

std::vector<Completion> ClusterClient::run_batch(std::vector<Outgoing> batch) {
  std::vector<Completion> out(batch.size());
  std::vector<std::uint64_t> ids;
  std::vector<Job> jobs;
  // Each completion in its place: jobs carry their index, given back the caller's id at the end.
  const Emit emit = [&](Completion completion) {
    const auto index = static_cast<std::size_t>(completion.id);
    completion.id = ids[index];
    out[index] = std::move(completion);
  };
  for (std::size_t i = 0; i < batch.size(); ++i) {
    ids.push_back(batch[i].id);
    batch[i].id = i;
    if (auto job = make_job(batch[i], emit)) jobs.push_back(std::move(*job));
  }

  struct Group {
    NodeAddress node;
    std::shared_ptr<BlockingClient> pool;
    std::unique_ptr<BlockingConnection> connection;
    std::vector<Job> jobs;
    ~Group() {
      if (connection) pool->release(std::move(connection));
    }
  };

  while (!jobs.empty()) {
    // Those that must wait: until the earliest may go.
    const auto now = Clock::now();
    auto earliest = std::min_element(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) {
                      return a.not_before < b.not_before;
                    })->not_before;
    if (earliest > now) std::this_thread::sleep_for(earliest - now);

    std::shared_ptr<const cluster::SlotMap> current;
    std::vector<Job> next;
    try {
      current = map(earliest_deadline(jobs));
    } catch (const AuthenticationError&) {  // every node would refuse the same credentials
      for (auto& job : jobs) emit(Completion(job.id, {}, {}, std::current_exception()));
      break;
    } catch (const NoPermissionError&) {
      for (auto& job : jobs) emit(Completion(job.id, {}, {}, std::current_exception()));
      break;
    } catch (const RedisError&) {
      if (refused_everywhere(std::current_exception())) {
        for (auto& job : jobs) emit(Completion(job.id, {}, {}, std::current_exception()));
        break;
      }
      for (auto& job : jobs) retry_later(std::move(job), std::current_exception(), emit, next);
      jobs.swap(next);
      continue;
    }

    std::map<Target, Group> groups;
    const auto ready_at = Clock::now();
    for (auto& job : jobs) {
      if (job.not_before > ready_at) {
        next.push_back(std::move(job));
        continue;
      }
      auto target = route(job, *current, emit, next);
      if (!target) continue;
      auto& group = groups[*target];
      group.node = target->first;
      group.jobs.push_back(std::move(job));
    }

    // Send every group before reading any reply.
    for (auto& [where, group] : groups) {
      try {
        group.pool = pool(group.node, where.second);
        group.connection = group.pool->acquire(earliest_deadline(group.jobs));
      } catch (const AuthenticationError&) {
        for (auto& job : group.jobs) emit(Completion(job.id, {}, {}, std::current_exception()));
        group.jobs.clear();
        continue;
      } catch (const RedisError&) {
        if (refused_everywhere(std::current_exception())) {
          for (auto& job : group.jobs) emit(Completion(job.id, {}, {}, std::current_exception()));
          group.jobs.clear();
          continue;
        }
        unreachable(group.jobs, emit, next);
        continue;
      }
      for (auto& job : group.jobs) {
        // The core's deadline: the job's (a resend has a new one).
        job.connection_id = group.connection->submit(
            std::move(job.exchange),
            job.deadline - seconds(options_.node.socket_timeout.value_or(kDefaultWait)));
      }
      group.connection->flush();  // one write per node
    }

    // Read the replies, group by group.
    for (auto& [where, group] : groups) {
      for (auto& job : group.jobs) {
        Completion completion = group.connection->wait(job.connection_id);
        settle(std::move(job), std::move(completion), group.node, emit, next);
      }
    }
    groups.clear();  // connections back to their pools
    jobs.swap(next);
  }
  return out;
}

Result ClusterClient::run(std::unique_ptr<Operation> operation) {
  std::vector<Outgoing> batch;
  batch.push_back({0, std::move(operation), Clock::now()});
  auto done = run_batch(std::move(batch));
  if (done[0].error) std::rethrow_exception(done[0].error);
  return std::move(done[0].result);
}

void ClusterClient::run_pipelined(std::size_t window,
                                  const std::function<std::unique_ptr<Operation>()>& next,
                                  const std::function<void(Result)>& done) {
  window = std::max<std::size_t>(window, 1);
  for (;;) {
    std::vector<Outgoing> batch;
    std::exception_ptr pending;
    try {
      while (batch.size() < window) {
        auto operation = next();
        if (!operation) break;
        // In order, as written: a read of many entries is its one script here, not two steps
        // whose second would run after the operations written behind it in the batch.
        if (operation->in_two_steps()) operation = operation->in_one_trip();
        batch.push_back({batch.size(), std::move(operation), Clock::now()});
      }
    } catch (...) {
      pending = std::current_exception();  // after the ones taken have run
    }
    if (batch.empty() && !pending) return;
    for (auto& completion : run_batch(std::move(batch))) {
      if (completion.error) std::rethrow_exception(completion.error);
      done(std::move(completion.result));
    }
    if (pending) std::rethrow_exception(pending);
  }
}

Reply ClusterClient::execute(std::vector<std::string> argv) {
  if (argv.empty()) throw InvalidArgument("execute_command needs a command name");
  auto sink = std::make_shared<Reply>();
  run(std::make_unique<RawCommand>(std::move(argv), sink));
  return std::move(*sink);
}

connection::Stats ClusterClient::stats() const {
  connection::Stats total;
  auto& self = const_cast<ClusterClient&>(*this);
  std::lock_guard<std::mutex> lock(self.mutex_);
  for (const auto& [where, pool] : pools_) total += pool->stats();
  return total;
}

void ClusterClient::close() {
  std::vector<std::shared_ptr<BlockingClient>> pools;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [where, pool] : pools_) pools.push_back(pool);
  }
  for (const auto& pool : pools) pool->close();
}

}  // namespace rlb::transport
