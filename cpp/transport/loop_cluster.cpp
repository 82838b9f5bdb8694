#include "transport/loop_cluster.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include "errors.hpp"
#include "transport/blocking_client.hpp"

namespace rlb::transport {

namespace {

Clock::duration seconds(double value) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(value));
}

std::exception_ptr closed_error() {
  return std::make_exception_ptr(ConnectionError("the client is closed"));
}

}  // namespace

LoopCluster::LoopCluster(ClusterOptions options)
    : client_(std::move(options)),
      emit_([this](Completion completion) { emit(std::move(completion)); }) {
  refresh_watches();  // the helper's wakeup, watched from the start
}

std::shared_ptr<LoopCluster> LoopCluster::create(ClusterOptions options) {
  return std::shared_ptr<LoopCluster>(new LoopCluster(std::move(options)),
                                      [](LoopCluster* cluster) {
                                        // In a forked child: left behind (as a LoopClient).
                                        if (!cluster->fork_guard_.forked()) delete cluster;
                                      });
}

LoopCluster::~LoopCluster() {
  close();
  close_retired();
}

// ---- Requests --------------------------------------------------------------------------------

bool LoopCluster::submit(std::uint64_t id, std::unique_ptr<leaderboard::Operation> operation,
                         Clock::time_point started) {
  if (fork_guard_.forked()) {
    throw RedisError(
        "this asyncio client was created before fork(); create a new client in the child");
  }
  if (closed_) throw ConnectionError("the client is closed");
  ClusterClient::Outgoing request{id, std::move(operation), started};
  auto job = client_.make_job(request, emit_);
  if (!job) return false;  // completed at once
  bool stale = false;
  auto map = client_.cached_map(&stale);
  if (!map || stale) start_refresh(map ? std::nullopt : std::optional(job->deadline));
  if (!map) {
    waiting_.push_back(std::move(*job));  // for the first map
    return false;
  }
  std::vector<Job> next;
  auto target = client_.route(*job, *map, emit_, next);
  for (auto& waits : next) waiting_.push_back(std::move(waits));
  return target && send(std::move(*job), *target);
}

bool LoopCluster::send(Job job, const Target& target) {
  auto& where = node(target);
  const auto wait = seconds(options().socket_timeout.value_or(kDefaultWait));
  const std::uint64_t id = job.id;
  // The node's socket_timeout counts to the job's deadline (a resend has a new one).
  const auto started = job.deadline - wait;
  auto exchange = std::move(job.exchange);
  sent_.insert_or_assign(id, std::make_pair(std::move(job), target));
  try {
    if (where.client->submit(id, std::move(exchange), started)) return true;
  } catch (...) {
    sent_.erase(id);
    emit(Completion(id, {}, {}, std::current_exception()));
    return false;
  }
  if (std::find(dirty_.begin(), dirty_.end(), where.client.get()) == dirty_.end()) {
    dirty_.push_back(where.client.get());
  }
  return false;
}

LoopCluster::Node& LoopCluster::node(const Target& target) {
  auto found = nodes_.find(target);
  if (found != nodes_.end()) return found->second;
  ClientOptions node_options = client_.options().node;
  node_options.host = target.first.host;
  node_options.port = target.first.port;
  node_options.readonly = target.second;
  node_options.hand_back_resends = true;  // resent where the slot is served then (settle)
  auto client = LoopClient::create(std::move(node_options), kMaxInFlight, 0, client_.tls_);
  return nodes_.emplace(target, Node{target, std::move(client)}).first->second;
}

void LoopCluster::cancel(std::uint64_t id) {
  if (closed_) return;
  if (auto it = sent_.find(id); it != sent_.end()) {
    nodes_.at(it->second.second).client->cancel(id);  // it completes with ConnectionError
    after();
    return;
  }
  auto it =
      std::find_if(waiting_.begin(), waiting_.end(), [&](const Job& job) { return job.id == id; });
  if (it == waiting_.end()) return;
  waiting_.erase(it);
  emit(Completion(id, {}, {}, std::make_exception_ptr(ConnectionError("cancelled"))));
}

void LoopCluster::flush() {
  if (!closed_) after();
}

// ---- Driving the nodes -----------------------------------------------------------------------

void LoopCluster::after() {
  // Each pass settles what the nodes finished and sends what may go again (a MOVED goes at
  // once); a write that fails at once hands its requests back within the pass.
  for (int pass = 0; pass < 8; ++pass) {
    collect();
    route_ready();
    std::vector<LoopClient*> dirty;
    dirty.swap(dirty_);
    for (auto* client : dirty) client->flush();
    if (std::none_of(nodes_.begin(), nodes_.end(),
                     [](const auto& node) { return node.second.client->has_completions(); })) {
      break;
    }
  }
  refresh_watches();
}

void LoopCluster::collect() {
  for (auto& [target, where] : nodes_) {
    if (!where.client->has_completions()) continue;
    for (auto& completion : where.client->take_completions()) {
      auto it = sent_.find(completion.id);
      if (it == sent_.end()) continue;
      Job job = std::move(it->second.first);
      sent_.erase(it);
      std::vector<Job> next;
      client_.settle(std::move(job), std::move(completion), target.first, emit_, next);
      for (auto& waits : next) waiting_.push_back(std::move(waits));
    }
  }
}

void LoopCluster::route_ready() {
  if (waiting_.empty()) return;
  bool stale = false;
  auto current = client_.cached_map(&stale);
  const auto now = Clock::now();
  std::vector<Job> ready, later;
  for (auto& job : waiting_) (job.not_before > now ? later : ready).push_back(std::move(job));
  waiting_.swap(later);
  if (ready.empty()) return;
  if (!current || stale) {
    std::optional<Clock::time_point> deadline;
    for (const auto& job : ready) {
      if (!deadline || job.deadline < *deadline) deadline = job.deadline;
    }
    start_refresh(current ? std::nullopt : deadline);
  }
  if (!current) {  // the first map: they wait for it (on_refreshed)
    for (auto& job : ready) waiting_.push_back(std::move(job));
    return;
  }
  std::vector<Job> next;
  for (auto& job : ready) {
    if (auto target = client_.route(job, *current, emit_, next)) send(std::move(job), *target);
  }
  for (auto& waits : next) waiting_.push_back(std::move(waits));
}

// ---- The slot map ----------------------------------------------------------------------------

void LoopCluster::start_refresh(std::optional<Clock::time_point> deadline) {
  if (refreshing_ || closed_) return;
  if (refresher_.joinable()) refresher_.join();  // finished (on_refreshed)
  refreshing_ = true;
  refresher_ = std::thread([this, deadline] {
    disable_interrupt_checks();  // never the GIL: close() may hold it, joining this thread
    std::exception_ptr error;
    try {
      client_.map(deadline);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      refresh_done_ = true;
      refresh_error_ = error;
    }
    wakeup_.signal();
  });
}

void LoopCluster::on_refreshed() {
  wakeup_.drain();
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!refresh_done_) return;
    refresh_done_ = false;
    error = std::move(refresh_error_);
    refresh_error_ = nullptr;
  }
  if (refresher_.joinable()) refresher_.join();
  refreshing_ = false;
  if (!error || client_.cached_map(nullptr)) return;  // routed with the map by after()
  // No map at all: the jobs waiting for one are judged by why (ClusterClient::map_failed).
  std::vector<Job> jobs, next;
  jobs.swap(waiting_);
  client_.map_failed(jobs, error, emit_, next);
  for (auto& waits : next) waiting_.push_back(std::move(waits));
}

// ---- What the loop watches -------------------------------------------------------------------

void LoopCluster::refresh_watches() {
  auto& next = next_watches_;  // kept, so that a refresh allocates nothing
  next.clear();
  auto add = [&](int fd, bool read, bool write) {
    if (fd < 0) return;
    for (auto& watch : next) {
      if (watch.fd == fd) {
        watch.read = watch.read || read;
        watch.write = watch.write || write;
        return;
      }
    }
    next.push_back(Watch{fd, read, write});
  };
  if (!closed_) {
    add(wakeup_.fd(), true, false);
    for (const auto& [target, where] : nodes_) {
      add(where.client->notify_fd(), true, false);
      add(where.client->readable_fd(), true, false);
      add(where.client->writable_fd(), false, true);
    }
  }
  if (next != watches_) {
    watches_.swap(next);
    watches_changed_ = true;
  }
}

void LoopCluster::on_readable(int fd) {
  if (closed_) return;
  if (fd == wakeup_.fd()) {
    on_refreshed();
  } else {
    for (auto& [target, where] : nodes_) {
      if (fd == where.client->notify_fd()) {
        where.client->on_notify();
        break;
      }
      if (fd == where.client->readable_fd()) {
        where.client->on_readable();
        break;
      }
    }
  }
  after();
}

void LoopCluster::on_writable(int fd) {
  if (closed_) return;
  for (auto& [target, where] : nodes_) {
    if (fd == where.client->writable_fd()) {
      where.client->on_writable();
      break;
    }
  }
  after();
}

void LoopCluster::on_timer() {
  if (closed_) return;
  for (auto& [target, where] : nodes_) where.client->on_timer();
  after();
}

std::optional<Clock::time_point> LoopCluster::wakeup_at() const {
  std::optional<Clock::time_point> out;
  auto earliest = [&](Clock::time_point at) {
    if (!out || at < *out) out = at;
  };
  for (const auto& [target, where] : nodes_) {
    if (auto at = where.client->wakeup_at()) earliest(*at);
  }
  // Jobs pausing before a retry. While the first map is being read, the jobs waiting for it
  // wait for the helper's wakeup instead (their pause is over: the timer would spin); once a
  // read has failed, for their pause, after which the map is read again.
  if (!waiting_.empty() && (!refreshing_ || client_.cached_map(nullptr))) {
    for (const auto& job : waiting_) earliest(job.not_before);
  }
  return out;
}

void LoopCluster::close_retired() {
  for (auto& [target, where] : nodes_) where.client->close_retired();
}

std::vector<Completion> LoopCluster::take_completions() {
  std::vector<Completion> out;
  out.swap(completions_);
  return out;
}

bool LoopCluster::has_completions() const {
  return !completions_.empty() || std::any_of(nodes_.begin(), nodes_.end(), [](const auto& node) {
    return node.second.client->has_completions();
  });
}

connection::Stats LoopCluster::stats() const {
  connection::Stats total = client_.stats();  // the map's reads
  for (const auto& [target, where] : nodes_) total += where.client->stats();
  return total;
}

void LoopCluster::close() {
  if (fork_guard_.forked() || closed_) return;
  closed_ = true;
  for (auto& [target, where] : nodes_) {
    where.client->close();  // completes every request it holds
    where.client->take_completions();
  }
  for (auto& [id, sent] : sent_) emit(Completion(id, {}, {}, closed_error()));
  sent_.clear();
  for (auto& job : waiting_) emit(Completion(job.id, {}, {}, closed_error()));
  waiting_.clear();
  // Bounded: a read of the map has a deadline, or each node's connect timeout.
  if (refresher_.joinable()) refresher_.join();
  refreshing_ = false;
  client_.close();
  refresh_watches();  // none
}

}  // namespace rlb::transport
