#include "transport/cluster_client.hpp"

#include <sys/eventfd.h>
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
// Redirects (MOVED, ASK) a request follows at once; past them each waits retry_delay() first.
constexpr int kFreeRedirects = 3;

Clock::duration seconds(double value) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(value));
}

std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
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
    found = std::make_shared<BlockingClient>(std::move(node_options), tls_);
  }
  return found;
}

std::shared_ptr<const cluster::SlotMap> ClusterClient::map() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (map_ && !stale_) return map_;
  }
  refresh_map(false);
  std::lock_guard<std::mutex> lock(mutex_);
  return map_;
}

std::vector<NodeAddress> ClusterClient::candidates() {
  std::vector<NodeAddress> out;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (map_) out = map_->nodes();
  }
  for (const auto& [host, port] : options_.startup_nodes) {
    NodeAddress node{host, port};
    if (std::find(out.begin(), out.end(), node) == out.end()) out.push_back(node);
  }
  return out;
}

void ClusterClient::refresh_map(bool force) {
  std::lock_guard<std::mutex> refreshing(refresh_mutex_);
  const auto now = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Another thread may have read it while this one waited for the lock.
    if (map_ && (!stale_ || (!force && now - refreshed_at_ < kRefreshInterval))) return;
  }
  std::string errors;
  for (const auto& node : candidates()) {
    try {
      auto client = pool(node, false);
      Reply reply = client->execute_raw({"CLUSTER", "SHARDS"});
      std::optional<cluster::SlotMap> map;
      if (reply.is_error() && reply.str.find("unknown subcommand") != std::string::npos) {
        reply = client->execute_raw({"CLUSTER", "SLOTS"});  // Redis 6.2
        if (!reply.is_error()) map = cluster::SlotMap::from_slots(reply, node.host);
      } else if (!reply.is_error()) {
        map = cluster::SlotMap::from_shards(reply, options_.node.tls.enabled, node.host);
      }
      if (reply.is_error()) {
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
      std::lock_guard<std::mutex> lock(mutex_);
      map_ = std::make_shared<const cluster::SlotMap>(std::move(*map));
      stale_ = false;
      refreshed_at_ = Clock::now();
      return;
    } catch (const AuthenticationError&) {
      throw;
    } catch (const NoPermissionError&) {
      throw;
    } catch (const ConnectionError& e) {
      errors += std::string("; ") + e.what();
    } catch (const TimeoutError& e) {
      errors += std::string("; ") + e.what();
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    refreshed_at_ = Clock::now();
    if (map_) return;  // keep the old map: the nodes may come back (the callers retry)
  }
  throw ConnectionError("no node of the cluster answered CLUSTER SHARDS" + errors);
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

// One request of a batch on its way.
struct ClusterClient::Job {
  std::uint64_t id = 0;  // the caller's
  std::unique_ptr<Exchange> exchange;
  Clock::time_point started, deadline;
  std::optional<int> slot;
  bool reads = false;
  std::optional<NodeAddress> ask;  // the next try goes there, after ASKING
  int redirects = 0;
  int waits = 0;
  Clock::time_point not_before{};
  std::exception_ptr last_error;  // why it waits
  std::uint64_t connection_id = 0;
};

std::vector<Completion> ClusterClient::run_batch(std::vector<Outgoing> batch) {
  std::vector<std::uint64_t> ids;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    ids.push_back(batch[i].id);
    batch[i].id = i;  // the index, to put each completion in its place
  }
  std::vector<Completion> out(batch.size());
  run_batch(
      std::move(batch),
      [&](Completion completion) {
        const auto index = static_cast<std::size_t>(completion.id);
        completion.id = ids[index];
        out[index] = std::move(completion);
      },
      nullptr);
  return out;
}

void ClusterClient::run_batch(std::vector<Outgoing> batch,
                              const std::function<void(Completion)>& emit,
                              const std::function<std::vector<Outgoing>()>& more) {
  const auto wait = options_.node.socket_timeout.value_or(kDefaultWait);
  auto fail = [&](std::uint64_t id, std::exception_ptr error) {
    emit(Completion(id, {}, {}, std::move(error)));
  };
  std::vector<Job> jobs;
  auto add = [&](std::vector<Outgoing>& outgoing) {
    for (auto& request : outgoing) {
      try {
        Job job;
        job.id = request.id;
        job.started = request.started;
        job.deadline = job.started + seconds(wait);
        job.exchange = std::make_unique<Exchange>(std::move(request.operation));
        if (job.exchange->finished()) {  // nothing to send
          emit(Completion(job.id, job.exchange->take_result(), {}, nullptr));
          continue;
        }
        job.slot = cluster::commands_slot(job.exchange->commands());
        job.reads = cluster::read_only(job.exchange->commands());
        jobs.push_back(std::move(job));
      } catch (...) {
        fail(request.id, std::current_exception());
      }
    }
  };
  add(batch);

  // Waits before the job's next try; fails it if its deadline comes first.
  auto retry_later = [&](Job& job, std::exception_ptr why, std::vector<Job>& next) {
    ++retries_;
    job.last_error = std::move(why);
    job.not_before = Clock::now() + seconds(cluster::retry_delay(++job.waits));
    if (job.not_before >= job.deadline) {
      return fail(job.id,
                  std::make_exception_ptr(TimeoutError(
                      "Timeout waiting for the cluster to serve slot " +
                      std::to_string(job.slot.value_or(-1)) + ": " + message_of(job.last_error))));
    }
    next.push_back(std::move(job));
  };
  auto mark_stale = [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    stale_ = true;
  };

  struct Group {
    NodeAddress node;
    bool replica = false;
    std::shared_ptr<BlockingClient> pool;
    std::unique_ptr<BlockingConnection> connection;
    std::vector<Job> jobs;
    ~Group() {
      if (connection) pool->release(std::move(connection));
    }
  };

  for (;;) {
    if (more) {
      auto added = more();
      add(added);
    }
    if (jobs.empty()) return;
    // Those that must wait: until the earliest may go.
    const auto now = Clock::now();
    auto earliest = std::min_element(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) {
                      return a.not_before < b.not_before;
                    })->not_before;
    if (earliest > now) std::this_thread::sleep_for(earliest - now);

    std::shared_ptr<const cluster::SlotMap> current;
    std::vector<Job> next;
    try {
      current = map();
    } catch (const AuthenticationError&) {  // every node would refuse the same credentials
      for (auto& job : jobs) fail(job.id, std::current_exception());
      return;
    } catch (const NoPermissionError&) {
      for (auto& job : jobs) fail(job.id, std::current_exception());
      return;
    } catch (const RedisError&) {
      for (auto& job : jobs) retry_later(job, std::current_exception(), next);
      jobs.swap(next);
      continue;
    }

    std::map<std::pair<NodeAddress, bool>, Group> groups;
    const auto ready_at = Clock::now();
    for (auto& job : jobs) {
      if (job.not_before > ready_at) {
        next.push_back(std::move(job));
        continue;
      }
      NodeAddress target;
      bool replica = false;
      if (job.ask) {
        target = *job.ask;
      } else {
        const cluster::Shard* shard = current->shard_for(job.slot.value_or(0));
        if (!job.slot && !current->shards().empty()) shard = &current->shards().front();
        if (!shard) {
          mark_stale();
          retry_later(job,
                      std::make_exception_ptr(ConnectionError(
                          "no node serves slot " + std::to_string(job.slot.value_or(-1)))),
                      next);
          continue;
        }
        target = shard->primary;
        if (job.reads && options_.read_from_replicas && !shard->replicas.empty()) {
          target = shard->replicas[replica_turn_++ % shard->replicas.size()];
          replica = true;
        }
      }
      auto& group = groups[{target, replica}];
      group.node = target;
      group.replica = replica;
      group.jobs.push_back(std::move(job));
    }

    // Send every group before reading any reply.
    for (auto& [where, group] : groups) {
      try {
        group.pool = pool(group.node, group.replica);
        group.connection = group.pool->acquire();
      } catch (const AuthenticationError&) {
        for (auto& job : group.jobs) fail(job.id, std::current_exception());
        group.jobs.clear();
        continue;
      } catch (const RedisError&) {
        // Nothing was sent: the node is down (a failover under way?) or gone from the cluster.
        mark_stale();
        for (auto& job : group.jobs) {
          job.ask.reset();
          retry_later(job, std::current_exception(), next);
        }
        group.jobs.clear();
        continue;
      }
      for (auto& job : group.jobs) {
        job.connection_id = group.connection->submit(std::move(job.exchange), job.started);
      }
      group.connection->flush();  // one write per node
    }

    // Read the replies, group by group.
    for (auto& [where, group] : groups) {
      for (auto& job : group.jobs) {
        Completion completion = group.connection->wait(job.connection_id);
        if (!completion.error) {
          emit(Completion(job.id, std::move(completion.result), {}, nullptr));
          continue;
        }
        if (!completion.redirected) {  // an error reply, or a reply lost: never sent again
          fail(job.id, completion.error);
          continue;
        }
        ++redirects_;
        job.exchange = std::move(completion.redirected);
        const auto redirect =
            cluster::parse_redirect(message_of(completion.error), group.node.host);
        if (!redirect) {
          fail(job.id, completion.error);
          continue;
        }
        const bool asking = redirect->kind == cluster::Redirect::Kind::Ask;
        job.exchange->restart_step(asking);
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
              retry_later(job, completion.error, next);
            }
            break;
          case cluster::Redirect::Kind::ClusterDown:
            mark_stale();
            retry_later(job, completion.error, next);
            break;
          case cluster::Redirect::Kind::TryAgain:
            retry_later(job, completion.error, next);
            break;
        }
      }
    }
    groups.clear();  // connections back to their pools
    jobs.swap(next);
  }
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
  for (const auto& [where, pool] : pools_) {
    const auto stats = pool->stats();
    total.round_trips += stats.round_trips;
    total.commands += stats.commands;
    total.reconnects += stats.reconnects;
    total.connections += stats.connections;
  }
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

// ---------------------------------------------------------------------------------------------
// AsyncClusterTransport

AsyncClusterTransport::AsyncClusterTransport(ClusterOptions options) : client_(std::move(options)) {
  event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) throw RedisError(std::string("eventfd: ") + std::strerror(errno));
  thread_ = std::thread([this] { loop(); });
}

AsyncClusterTransport::~AsyncClusterTransport() {
  if (fork_guard_.forked()) {
    // The I/O thread does not exist in a forked child: joining it would abort.
    thread_.detach();
    return;
  }
  close();
  ::close(event_fd_);
}

void AsyncClusterTransport::submit(std::vector<ClusterClient::Outgoing> batch) {
  if (fork_guard_.forked()) throw RedisError("this client was created before fork()");
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_) throw ConnectionError("the client is closed");
  for (auto& outgoing : batch) submitted_.push_back(std::move(outgoing));
  wake_.notify_one();
}

std::vector<Completion> AsyncClusterTransport::take_completions() {
  std::uint64_t count = 0;
  // Clear the eventfd before taking: a completion queued after this wakes the loop again.
  [[maybe_unused]] auto n = ::read(event_fd_, &count, sizeof count);
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Completion> out;
  out.swap(completions_);
  return out;
}

void AsyncClusterTransport::publish(std::vector<Completion> completions) {
  if (completions.empty()) return;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wake = completions_.empty();
    for (auto& completion : completions) completions_.push_back(std::move(completion));
  }
  if (wake) {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(event_fd_, &one, sizeof one);
  }
}

void AsyncClusterTransport::loop() {
  for (;;) {
    std::vector<ClusterClient::Outgoing> batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !submitted_.empty(); });
      if (stopping_) break;
      batch.swap(submitted_);
    }
    // Requests submitted while this batch runs join it at its next round of sends; each
    // completion is published as soon as it is known.
    std::vector<std::uint64_t> unfinished;
    auto more = [&] {
      std::vector<ClusterClient::Outgoing> added;
      std::lock_guard<std::mutex> lock(mutex_);
      if (!stopping_) added.swap(submitted_);
      for (const auto& outgoing : added) unfinished.push_back(outgoing.id);
      return added;
    };
    for (const auto& outgoing : batch) unfinished.push_back(outgoing.id);
    auto emit = [&](Completion completion) {
      unfinished.erase(std::find(unfinished.begin(), unfinished.end(), completion.id));
      std::vector<Completion> one;
      one.push_back(std::move(completion));
      publish(std::move(one));
    };
    try {
      client_.run_batch(std::move(batch), emit, more);
    } catch (...) {  // a wait that failed (poll): the requests under way fail with it
      auto error = std::current_exception();
      std::vector<Completion> failed;
      for (auto id : unfinished)
        failed.emplace_back(id, leaderboard::Result{}, std::vector<Reply>{}, error);
      publish(std::move(failed));
    }
  }
  // Closing: what was never sent fails.
  std::vector<Completion> failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& outgoing : submitted_) {
      failed.emplace_back(outgoing.id, leaderboard::Result{}, std::vector<Reply>{},
                          std::make_exception_ptr(ConnectionError("the client is closed")));
    }
    submitted_.clear();
  }
  publish(std::move(failed));
}

void AsyncClusterTransport::close() {
  if (closed_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  client_.close();
}

}  // namespace rlb::transport
