#include "connection/observer.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <unordered_set>
#include <utility>

namespace rlb::connection {

namespace {

std::array<std::atomic<std::uint64_t>, kSignals> counts{};
std::atomic<std::int64_t> open{0};
std::atomic<bool> wanted{false};  // records wait and no pump reads them

// The records and their pipe. The mutexes are held across fork() (pthread_atfork below), so a
// child never inherits one locked by a thread that is not there.
struct Records {
  std::mutex mutex;
  std::deque<Record> queue;
  std::uint64_t dropped = 0;
  int read_fd = -1, write_fd = -1;  // made with the first record or the pump's first call
  bool pumped = false;              // records_fd() was called: a pump reads them
};
Records& records() {
  static Records* instance = new Records;  // never destroyed: clients may log during exit
  return *instance;
}

struct Totals {
  std::mutex mutex;
  std::unordered_set<const Counters*> live;
  Stats closed;
};
Totals& totals() {
  static Totals* instance = new Totals;
  return *instance;
}

void before_fork() {
  records().mutex.lock();
  totals().mutex.lock();
}
void after_fork_in_parent() {
  totals().mutex.unlock();
  records().mutex.unlock();
}
// The child's records are its own: a new pipe (made with its first record; the parent's pump
// must not lose its wake-up byte to the child, nor the child log the parent's records), an
// empty queue, no pump (the bindings start one as in any process).
void after_fork_in_child() {
  totals().mutex.unlock();
  auto& r = records();
  for (int* fd : {&r.read_fd, &r.write_fd}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  r.queue.clear();
  r.dropped = 0;
  r.pumped = false;
  wanted.store(false, std::memory_order_relaxed);
  r.mutex.unlock();
}
const int fork_handlers = pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);

void open_pipe(Records& r) {
  int fds[2];
  if (::pipe(fds) != 0) return;  // no pipe: records are not kept (counts still are)
  for (int fd : fds) {
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  r.read_fd = fds[0];
  r.write_fd = fds[1];
}

}  // namespace

const char* signal_name(Signal signal) {
  static constexpr const char* names[kSignals] = {
      "connection_lost", "reconnected", "failover",   "topology_change", "moved", "ask",
      "script_reload",   "resend",      "read_retry", "timeout",
  };
  return names[static_cast<std::size_t>(signal)];
}

void observe(Signal signal, std::string detail) {
  (void)fork_handlers;
  counts[static_cast<std::size_t>(signal)].fetch_add(1, std::memory_order_relaxed);
  auto& r = records();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.write_fd < 0) open_pipe(r);
  if (!r.pumped) wanted.store(true, std::memory_order_relaxed);
  if (r.queue.size() >= kMaxRecords) {
    r.queue.pop_front();
    ++r.dropped;
  }
  const bool was_empty = r.queue.empty();
  r.queue.push_back({signal, std::move(detail)});
  if (was_empty && r.write_fd >= 0) {
    const char byte = 1;
    [[maybe_unused]] auto n = ::write(r.write_fd, &byte, 1);  // full: a byte is there already
  }
}

std::array<std::uint64_t, kSignals> signal_counts() {
  std::array<std::uint64_t, kSignals> out{};
  for (std::size_t i = 0; i < kSignals; ++i) out[i] = counts[i].load(std::memory_order_relaxed);
  return out;
}

int records_fd() {
  auto& r = records();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.read_fd < 0) open_pipe(r);
  r.pumped = true;
  wanted.store(false, std::memory_order_relaxed);
  return r.read_fd;
}

bool pump_wanted() { return wanted.load(std::memory_order_relaxed); }

std::vector<Record> take_records(std::uint64_t& dropped) {
  auto& r = records();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.read_fd >= 0) {
    char buffer[64];
    while (::read(r.read_fd, buffer, sizeof buffer) > 0) {
    }
  }
  std::vector<Record> out(std::make_move_iterator(r.queue.begin()),
                          std::make_move_iterator(r.queue.end()));
  r.queue.clear();
  dropped = std::exchange(r.dropped, 0);
  return out;
}

std::int64_t open_connections() { return open.load(std::memory_order_relaxed); }
void connection_opened() { open.fetch_add(1, std::memory_order_relaxed); }
void connection_closed() { open.fetch_sub(1, std::memory_order_relaxed); }

Stats process_stats() {
  auto& t = totals();
  std::lock_guard<std::mutex> lock(t.mutex);
  Stats out = t.closed;
  for (const Counters* counters : t.live) out += counters->snapshot();
  return out;
}

ClientCounters::ClientCounters() {
  auto& t = totals();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.live.insert(this);
}

ClientCounters::~ClientCounters() {
  auto& t = totals();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.live.erase(this);
  t.closed += snapshot();
}

}  // namespace rlb::connection
