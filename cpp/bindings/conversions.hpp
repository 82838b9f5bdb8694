// Type conversion between Python and the C++ core, shared by the module's bindings and the
// asyncio core. Everything here runs with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codec/reply.hpp"
#include "connection/cache.hpp"
#include "connection/exchange.hpp"
#include "connection/observer.hpp"
#include "connection/options.hpp"
#include "leaderboard/operations.hpp"
#include "transport/blocking_client.hpp"

namespace rlb::bindings {

namespace py = pybind11;

// Strings used on every call (dict keys, future methods), made once at import and kept for the
// life of the process: attr("name") and d["key"] would build a new str each time.
struct Names {
  py::str rank{"rank"}, user_id{"user_id"}, score{"score"}, metadata{"metadata"},
      trimmed_user_ids{"trimmed_user_ids"}, trimmed{"trimmed"};
  py::str page{"page"}, page_size{"page_size"}, total_pages{"total_pages"}, size{"size"},
      entries{"entries"}, min{"min"}, max{"max"}, count{"count"};
  py::str create_future{"create_future"}, done{"done"}, set_result{"set_result"},
      set_exception{"set_exception"};
};
extern Names* names;

// The Python exception classes, created once at import (declare_exceptions) with redis-py's
// names and parents, from one table (conversions.cpp).
void declare_exceptions(py::module_& module);
// The class for an error reply, as raised for one.
py::handle response_error_type();

// ---- Python -> C++ (TypeError/ValueError before anything is sent)
std::string utf8(py::handle text);  // a str's UTF-8 (no bytes object made)
std::string user_id_arg(py::handle value);
double number_arg(py::handle value, const char* field);

// Score limits (fair play) into `guards`: score_range None or a (min, max) tuple (either side
// None), max_increment None or a number. Their checks are validate_score_limits'.
// A board's tie-break columns: None, or (name, 'desc' | 'asc') pairs (TypeError, ValueError).
std::vector<leaderboard::TiebreakColumn> tiebreak_columns_arg(py::handle columns);
// A write's tie-break values: None, or a dict of every column's number.
std::optional<std::vector<double>> tiebreak_values_arg(
    py::handle values, const std::vector<leaderboard::TiebreakColumn>& columns);
void score_limits_arg(py::handle score_range, py::handle max_increment,
                      leaderboard::Guards& guards);
// A rate limit into `guards`: None or a (max_writes, per_seconds) tuple (TypeError); and change
// events: a bool (TypeError) and events_maxlen. Their checks are validate_guards'.
void rate_limit_arg(py::handle rate_limit, leaderboard::Guards& guards);
void events_arg(py::handle events, py::handle events_maxlen, leaderboard::Guards& guards);
// A board type's guards from its constructor's arguments (as the plain board's: submission_ttl,
// rate_limit None or (max_writes, per_seconds), events a bool, events_maxlen, the score
// limits); TypeError here, their values' checks are validate_guards'.
leaderboard::Guards guards_arg(py::handle submission_ttl, py::handle rate_limit, py::handle events,
                               py::handle events_maxlen, py::handle score_range,
                               py::handle max_increment);
// A board's rate_limit (max_writes, per_seconds) and score_range (min, max) as Python has them,
// or None.
py::object rate_limit_value(const leaderboard::Guards& guards);
py::object score_range_value(const leaderboard::Guards& guards);
long long integer_arg(py::handle value, const char* field);
leaderboard::Metadata metadata_arg(py::handle value);
std::vector<leaderboard::BatchEntry> batch_arg(py::handle entries, long long first_index);
// A list of user ids (any iterable but a str or bytes); TypeError/ValueError name the item, and
// more than `limit` raises ValueError before any id is converted past it.
std::vector<std::string> user_ids_arg(py::handle value, long long limit);
std::string argument_bytes(py::handle arg);
// ---- Client options: every option a client's constructor takes is one row of one table
// (conversions.cpp, kClientOptions): its name (redis-py's), the clients that take it, whether it
// may be given by position, how a Python value is read into the C++ options (TypeError or
// ValueError naming it) and its default, read back from the C++ defaults. The constructors take
// (*args, **kwargs) and read them there, once; Python reads the table (option_table) to check its
// ClientOptions dataclass and the stub against it.
enum ClientKind : unsigned {
  kBlockingClient = 1,  // _core.Client (redis_leaderboard.Client)
  kAsyncClient = 2,     // _core.AsyncCore (redis_leaderboard.asyncio.Client)
  kClusterClient = 4,   // _core.ClusterClient and AsyncClusterCore
};

// The C++ value of every option of the table.
struct ClientArguments {
  connection::ClientOptions client;
  std::optional<std::string> service_name;  // into client.sentinel once every option is read
  bool client_cache = false;
  connection::CacheOptions cache;
  std::size_t max_in_flight = 1024;  // the asyncio client's back-pressure
  std::size_t max_pending = 10000;
  std::size_t max_bytes_in_flight = 0;  // the bytes of the replies expected; 0: no limit
  bool read_from_replicas = false;      // cluster clients

  std::optional<connection::CacheOptions> enabled_cache() const {
    if (!client_cache) return std::nullopt;
    return cache;
  }
};

// A constructor's arguments read through the table: TypeError for an option `kind` does not take
// (naming it), too many positional arguments or one given twice; TypeError/ValueError for a bad
// value. A single-server client's options are validated (ClientOptions::validate); a cluster's
// are validated with its startup nodes (ClusterOptions::validate).
ClientArguments client_arguments(ClientKind kind, const py::args& args, const py::kwargs& kwargs);
// sentinels, startup_nodes: any iterable but a str or bytes, of (host, port) pairs; TypeError
// naming `name` otherwise.
std::vector<std::pair<std::string, int>> address_pairs(py::handle value, const char* name);
// [(name, default, positional, (the _core classes that take it, ...)), ...] in table order.
py::list option_table();
// A constructor's docstring: "__init__(self, <before>host='localhost', ...)" from the table (help()
// shows it), then `doc`.
std::string constructor_doc(ClientKind kind, const std::string& before, const std::string& doc);

// ---- C++ -> Python
py::object to_python(const leaderboard::Result& result);
py::object reply_to_python(const codec::Reply& reply, bool errors_as_values);
// The Python exception for a C++ one: the one mapping, used for raising and for futures.
py::object exception_object(const std::exception_ptr& error);
// Starts redis_leaderboard._logs's pump thread (connection/observer.hpp) when records wait and
// none reads them: with the GIL, at the end of a call (a PumpAtExit in its scope, declared
// before the GIL is released). Never throws.
void start_log_pump();
inline void start_log_pump_if_wanted() {
  if (connection::pump_wanted()) start_log_pump();
}
struct PumpAtExit {
  PumpAtExit() = default;
  PumpAtExit(const PumpAtExit&) = delete;
  PumpAtExit& operator=(const PumpAtExit&) = delete;
  ~PumpAtExit() { start_log_pump_if_wanted(); }
};

py::dict stats_dict(const connection::Stats& stats);
py::dict cache_stats_dict(const connection::CacheStats& stats,
                          const connection::CacheOptions& options);

// Runs Python's signal handlers from a blocking wait interrupted by a signal.
void check_python_signals();

// An operation built by Board and run once: by a client, which takes it (take()), or by hand
// through request()/feed(), which run it in an Exchange of its own.
struct PyOperation {
  std::unique_ptr<leaderboard::Operation> operation;  // until taken
  const char* name = "";
  std::unique_ptr<connection::Exchange> exchange;  // run by hand
  std::optional<leaderboard::Result> result;

  // Hands the operation over, once (under the GIL: two threads cannot both take it).
  std::unique_ptr<leaderboard::Operation> take() {
    if (!operation) throw py::value_error("this operation has already been run");
    return std::move(operation);
  }
};

PyOperation wrap(std::unique_ptr<leaderboard::Operation> operation);
// The Operation `value` holds; TypeError if it is something else.
PyOperation& operation_arg(py::handle value);

// The run_pipelined and execute_command of a sync client (BlockingClient, ClusterClient), for
// their bindings: `operations` is a Python iterable of operations, taken one at a time as the
// window frees a place (building the next one overlaps the server's work on the previous), each
// result handed to `on_result`; the GIL is released while the client waits.
template <class Client>
void run_pipelined_from_python(Client& client, py::iterable operations, py::function on_result,
                               std::size_t window) {
  PumpAtExit pump;
  py::iterator it = py::iter(operations);
  auto next = [&]() -> std::unique_ptr<leaderboard::Operation> {
    py::gil_scoped_acquire gil;
    auto item = py::reinterpret_steal<py::object>(PyIter_Next(it.ptr()));
    if (!item) {
      if (PyErr_Occurred()) throw py::error_already_set();
      return nullptr;
    }
    return operation_arg(item).take();
  };
  auto done = [&](leaderboard::Result result) {
    py::gil_scoped_acquire gil;
    on_result(to_python(result));
  };
  py::gil_scoped_release release;
  client.run_pipelined(window, next, done);
}

// One raw command from execute_command's Python arguments, run by `execute(argv)` without the
// GIL; the reply as redis-py gives it.
template <class Execute>
py::object execute_command_from_python(const py::args& args, Execute&& execute) {
  if (args.empty()) throw py::type_error("execute_command needs a command name");
  std::vector<std::string> argv;
  for (py::handle arg : args) argv.push_back(argument_bytes(arg));
  codec::Reply reply;
  {
    PumpAtExit pump;
    py::gil_scoped_release release;
    reply = execute(std::move(argv));
  }
  return reply_to_python(reply, false);
}

}  // namespace rlb::bindings
