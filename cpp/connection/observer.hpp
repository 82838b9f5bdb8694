#pragma once
// What the clients of this process saw happen that an operator watches: connections lost and
// re-established, failovers followed, cluster topology changes and redirects, scripts reloaded
// after NOSCRIPT, requests sent again and timeouts. Each is counted (lock-free, process-wide)
// and kept as a record in a bounded queue whose arrival is signalled on a pipe; the Python
// layer's log pump (redis_leaderboard/_logs.py, a thread) logs them, so that no thread of a
// client ever takes the GIL to log. The pump is started by the bindings at the end of the first
// call after the first record (pump_wanted()): a process whose clients meet no fault has no
// thread of it (a second thread makes glibc take its slower multi-threaded path in every
// send(), recv() and poll(): measured +190 instructions a sync call). Only rare paths call
// observe(): a call that meets no fault runs none of this.
//
// Also here: the process totals of every client's counters (round trips, commands,
// connections, reconnects; live clients and closed ones), and the number of connections open
// now. A client's own counters (stats.hpp) are bumped on the call path as before; the totals
// are summed from them only when asked (a metrics collection).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "connection/stats.hpp"

namespace rlb::connection {

enum class Signal : std::uint8_t {
  connection_lost,  // a connection in use failed or was closed by the server
  reconnected,      // a connection opened to replace a lost one
  failover,         // a new primary followed (Sentinel's announcement, or a READONLY reply)
  topology_change,  // a cluster slot map read that differs from the previous one
  moved,            // a MOVED redirect followed
  ask,              // an ASK redirect followed
  script_reload,    // a script sent again with its body after NOSCRIPT
  resend,           // a write carrying a submission id sent again after its reply was lost
  read_retry,       // a read sent again after its reply was lost
  timeout,          // a request failed with TimeoutError
};
constexpr std::size_t kSignals = 10;

// "connection_lost", ...: the names the Python layer's metrics and log records use.
const char* signal_name(Signal signal);

struct Record {
  Signal signal;
  std::string detail;  // an address, a script's name, an error's text: never a key or user data
};

// Counts `signal` and queues a record (at most kMaxRecords wait; beyond, the oldest are dropped
// and counted).
void observe(Signal signal, std::string detail);
constexpr std::size_t kMaxRecords = 1024;

// Every signal's count since the process started.
std::array<std::uint64_t, kSignals> signal_counts();

// The read end of the pipe a byte is written to when records arrive after the queue was empty.
// The pump's first call: from then on pump_wanted() is false (in this process).
int records_fd();
// True when records wait and no pump reads them: the bindings then start it (GIL held). One
// relaxed load: the bindings ask at the end of every call.
bool pump_wanted();
// The records queued (oldest first) and how many were dropped since the last call; empties the
// queue and the pipe. Never blocks.
std::vector<Record> take_records(std::uint64_t& dropped);
// A forked child starts with its own records: no pipe, an empty queue, no pump (pthread_atfork).

// Connections open now (sockets a core is using), every client of the process.
std::int64_t open_connections();
void connection_opened();
void connection_closed();

// The sum of the counters of every client of the process, open or closed.
Stats process_stats();

// A client's counters (stats.hpp) that also count in process_stats().
class ClientCounters : public Counters {
 public:
  ClientCounters();
  ~ClientCounters();
  ClientCounters(const ClientCounters&) = delete;
  ClientCounters& operator=(const ClientCounters&) = delete;
};

}  // namespace rlb::connection
