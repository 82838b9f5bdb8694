// pybind11 bindings: type conversion only. Python arguments become C++ values while the GIL is
// held, the GIL is released for all I/O, results become the guide's dicts, and the C++
// exception tree becomes the Python one.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "codec/resp.hpp"
#include "errors.hpp"
#include "leaderboard/operations.hpp"
#include "transport/blocking_client.hpp"
#include "transport/multiplexed_client.hpp"
#include "transport/options.hpp"
#include "transport/requests.hpp"

namespace py = pybind11;
using namespace py::literals;

namespace rlb {
namespace {

using codec::Reply;
using codec::ReplyType;
using leaderboard::Board;
using leaderboard::Entry;
using leaderboard::Metadata;
using leaderboard::Operation;
using leaderboard::Result;
using leaderboard::WriteResult;
using transport::BlockingClient;
using transport::ClientOptions;

// ---- Python -> C++ ---------------------------------------------------------------------------

std::string type_name(py::handle value) { return Py_TYPE(value.ptr())->tp_name; }

std::string utf8(py::handle text) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
  if (data == nullptr) throw py::error_already_set();
  return std::string(data, static_cast<std::size_t>(size));
}

// A user id is a str; an int is converted with str(), as the guide's f-strings would.
std::string user_id_arg(py::handle value) {
  if (PyUnicode_Check(value.ptr())) return utf8(value);
  if (PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr())) return utf8(py::str(value));
  throw py::type_error("user_id must be str, not " + type_name(value));
}

// A score or amount: whatever float() accepts, as the guide calls float(score).
double number_arg(py::handle value, const char* field) {
  if (value.is_none() || PyBytes_Check(value.ptr())) {
    throw py::type_error(std::string(field) + " must be a number, not " + type_name(value));
  }
  PyObject* number = PyNumber_Float(value.ptr());
  if (number == nullptr) {
    if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
      PyErr_Clear();
      throw InvalidArgument(std::string(field) + " must be a finite number");
    }
    if (PyErr_ExceptionMatches(PyExc_ValueError)) {
      PyErr_Clear();
      throw InvalidArgument(std::string(field) + " must be a number, not " + utf8(py::repr(value)));
    }
    PyErr_Clear();
    throw py::type_error(std::string(field) + " must be a number, not " + type_name(value));
  }
  double result = PyFloat_AS_DOUBLE(number);
  Py_DECREF(number);
  return result;
}

// A count, rank or limit: an int (anything with __index__); huge values saturate.
long long integer_arg(py::handle value, const char* field) {
  if (PyBool_Check(value.ptr()) || !PyIndex_Check(value.ptr())) {
    throw py::type_error(std::string(field) + " must be an int, not " + type_name(value));
  }
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  long long result = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow > 0) return LLONG_MAX;
  if (overflow < 0) return LLONG_MIN;
  return result;
}

// Metadata: a mapping with str field names; values stored as str(value), as the guide does.
Metadata metadata_arg(py::handle value) {
  Metadata metadata;
  if (value.is_none()) return metadata;
  const bool mapping =
      PyDict_Check(value.ptr()) || (PyMapping_Check(value.ptr()) && !PyUnicode_Check(value.ptr()) &&
                                    !PyBytes_Check(value.ptr()) && py::hasattr(value, "items"));
  if (!mapping) {
    throw py::type_error("metadata must be a mapping of str to values, not " + type_name(value));
  }
  py::object items = py::reinterpret_steal<py::object>(PyMapping_Items(value.ptr()));
  if (!items) throw py::error_already_set();
  for (py::handle item : items) {
    py::handle field = PyTuple_GET_ITEM(item.ptr(), 0);
    py::handle field_value = PyTuple_GET_ITEM(item.ptr(), 1);
    if (!PyUnicode_Check(field.ptr())) {
      throw py::type_error("metadata field names must be str, not " + type_name(field));
    }
    metadata.emplace_back(utf8(field), PyUnicode_Check(field_value.ptr())
                                           ? utf8(field_value)
                                           : utf8(py::str(field_value)));
  }
  return metadata;
}

// upsert_many entries: (user_id, score) or (user_id, score, metadata); errors name the entry.
std::vector<leaderboard::BatchEntry> batch_arg(py::handle entries, long long first_index) {
  std::vector<leaderboard::BatchEntry> out;
  py::sequence items = py::reinterpret_borrow<py::sequence>(entries);
  out.reserve(items.size());
  long long index = first_index;
  for (py::handle item : items) {
    try {
      if (!PyTuple_Check(item.ptr()) && !PyList_Check(item.ptr())) {
        throw py::type_error(
            "must be a (user_id, score) or (user_id, score, metadata) tuple, not " +
            type_name(item));
      }
      py::sequence fields = py::reinterpret_borrow<py::sequence>(item);
      const auto size = fields.size();
      if (size != 2 && size != 3) {
        throw py::type_error("must have 2 or 3 items (user_id, score[, metadata]), not " +
                             std::to_string(size));
      }
      out.push_back({user_id_arg(fields[0]), number_arg(fields[1], "score"),
                     size == 3 ? metadata_arg(fields[2]) : Metadata{}});
    } catch (const py::type_error& e) {
      throw py::type_error("entry " + std::to_string(index) + ": " + e.what());
    } catch (const InvalidArgument& e) {
      throw InvalidArgument("entry " + std::to_string(index) + ": " + e.what());
    }
    ++index;
  }
  return out;
}

// ---- C++ -> Python ---------------------------------------------------------------------------

// Dict keys, made once and kept for the life of the process.
struct Keys {
  py::str rank{"rank"}, user_id{"user_id"}, score{"score"}, metadata{"metadata"},
      trimmed_user_ids{"trimmed_user_ids"};
};
Keys* keys = nullptr;

py::str text(const std::string& s) { return py::str(s.data(), s.size()); }

py::dict metadata_dict(const Metadata& metadata) {
  py::dict out;
  for (const auto& [field, value] : metadata) out[text(field)] = text(value);
  return out;
}

py::dict entry_dict(const Entry& entry) {
  py::dict out;
  if (entry.rank) out[keys->rank] = py::int_(*entry.rank);
  out[keys->user_id] = text(entry.user_id);
  out[keys->score] = py::float_(entry.score);
  out[keys->metadata] = metadata_dict(entry.metadata);
  return out;
}

py::list string_list(const std::vector<std::string>& strings) {
  py::list out(strings.size());
  for (std::size_t i = 0; i < strings.size(); ++i) out[i] = text(strings[i]);
  return out;
}

struct ToPython {
  py::object operator()(const leaderboard::None&) const { return py::none(); }
  py::object operator()(bool value) const { return py::bool_(value); }
  py::object operator()(long long value) const { return py::int_(value); }
  py::object operator()(const std::optional<long long>& value) const {
    return value ? py::object(py::int_(*value)) : py::none();
  }
  py::object operator()(const Metadata& metadata) const { return metadata_dict(metadata); }
  py::object operator()(const std::optional<Entry>& entry) const {
    return entry ? py::object(entry_dict(*entry)) : py::none();
  }
  py::object operator()(const std::vector<Entry>& entries) const {
    py::list out(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) out[i] = entry_dict(entries[i]);
    return out;
  }
  py::object operator()(const WriteResult& write) const {
    py::dict out = entry_dict(write.entry);
    out[keys->trimmed_user_ids] = string_list(write.trimmed_user_ids);
    return out;
  }
  py::object operator()(const std::vector<std::string>& ids) const { return string_list(ids); }
  py::object operator()(const leaderboard::TrimSummary& summary) const {
    py::dict out;
    out["trimmed"] = py::int_(summary.trimmed);
    out[keys->trimmed_user_ids] = string_list(summary.user_ids);
    return out;
  }
};

py::object to_python(const Result& result) { return std::visit(ToPython{}, result); }

// The Python exception types, set once at import.
struct ExceptionTypes {
  py::handle redis, connection, authentication, timeout, response;
};
ExceptionTypes exception_types;
py::handle& response_error_type = exception_types.response;

// An exception raised on the I/O thread or while reading replies, as a Python exception object
// (for Future.set_exception).
py::object exception_object(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const AuthenticationError& e) {
    return exception_types.authentication(e.what());
  } catch (const ConnectionError& e) {
    return exception_types.connection(e.what());
  } catch (const TimeoutError& e) {
    return exception_types.timeout(e.what());
  } catch (const ResponseError& e) {
    return exception_types.response(e.what());
  } catch (const RedisError& e) {
    return exception_types.redis(e.what());
  } catch (const std::invalid_argument& e) {
    return py::reinterpret_borrow<py::object>(PyExc_ValueError)(e.what());
  } catch (const py::error_already_set& e) {
    return e.value();
  } catch (const std::exception& e) {
    return py::reinterpret_borrow<py::object>(PyExc_RuntimeError)(e.what());
  }
}

// A raw reply as redis-py returns it without decode_responses; error replies raise unless
// `errors_as_values`, where they become ResponseError instances (for the codec tests).
py::object reply_to_python(const Reply& reply, bool errors_as_values) {
  switch (reply.type) {
    case ReplyType::String:
      return py::bytes(reply.str.data(), reply.str.size());
    case ReplyType::Status:
      return text(reply.str);
    case ReplyType::Integer:
      return py::int_(reply.integer);
    case ReplyType::Nil:
      return py::none();
    case ReplyType::Error:
      if (errors_as_values) return response_error_type(text(reply.str));
      transport::raise_error_reply(reply);
    case ReplyType::Array: {
      py::list out(reply.elements.size());
      for (std::size_t i = 0; i < reply.elements.size(); ++i) {
        out[i] = reply_to_python(reply.elements[i], errors_as_values);
      }
      return out;
    }
  }
  return py::none();
}

std::string argument_bytes(py::handle arg) {
  if (PyBytes_Check(arg.ptr()))
    return std::string(py::bytes(py::reinterpret_borrow<py::bytes>(arg)));
  if (PyUnicode_Check(arg.ptr())) return utf8(arg);
  if (PyLong_Check(arg.ptr()) || PyFloat_Check(arg.ptr())) return utf8(py::str(arg));
  throw py::type_error("command arguments must be str, bytes, int or float, not " + type_name(arg));
}

// A blocking call interrupted by a signal runs Python's handlers; Ctrl+C then abandons the call
// with KeyboardInterrupt instead of waiting for Redis.
void check_python_signals() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

// ---- Wrapped types ---------------------------------------------------------------------------

// An operation built by Board and run once, by a client or by hand (request/feed).
struct PyOperation {
  std::unique_ptr<Operation> operation;
  std::unique_ptr<transport::Exchange> exchange;  // once started
  std::optional<Result> result;

  transport::Exchange& start() {
    if (exchange) throw py::value_error("this operation has already been run");
    exchange = std::make_unique<transport::Exchange>(*operation);
    return *exchange;
  }
};

PyOperation wrap(std::unique_ptr<Operation> operation) {
  return PyOperation{std::move(operation), nullptr, std::nullopt};
}

ClientOptions client_options(const std::string& host, int port, long long db,
                             std::optional<std::string> username,
                             std::optional<std::string> password,
                             std::optional<double> socket_timeout,
                             std::optional<double> socket_connect_timeout,
                             std::optional<std::string> client_name,
                             std::optional<std::string> unix_socket_path) {
  ClientOptions options;
  options.host = host;
  options.port = port;
  options.db = db;
  options.username = std::move(username);
  options.password = std::move(password);
  options.socket_timeout = socket_timeout;
  options.socket_connect_timeout = socket_connect_timeout;
  options.client_name = std::move(client_name);
  options.unix_socket_path = unix_socket_path.value_or("");
  options.validate();
  return options;
}

// The asyncio client's core: futures for operations run on a MultiplexedClient. Everything here
// runs on the event loop's thread with the GIL held; the I/O thread only sees ids and bytes.
class AsyncCore {
 public:
  AsyncCore(ClientOptions options, std::size_t max_in_flight, std::size_t max_pending)
      : client_(make_client(std::move(options), max_in_flight)),
        max_pending_(max_pending == 0 ? 1 : max_pending) {}

  // Runs `operation` (a Python Operation); the returned future gets its result.
  py::object submit(py::object operation, py::handle loop) {
    check_owner();
    auto& op = operation.cast<PyOperation&>();
    transport::Exchange& exchange = op.start();
    py::object future = loop.attr("create_future")();
    const std::uint64_t id = next_id_++;
    if (in_transport_ < max_pending_) {
      send(id, exchange);  // throws if the client is closed: nothing to clean up yet
    } else {
      deferred_.push_back(id);  // back-pressure: waits here, not in the transport's queues
    }
    pending_.emplace(id, Pending{future, std::move(operation), &exchange});
    ++calls_;
    return future;
  }

  // Called by the event loop when notify_fd() is readable: settles every finished request.
  void drain() {
    // A forked child shares the parent's eventfd: reading it would swallow the parent's wake-ups.
    if (forked()) return;
    for (auto& completion : client_->take_completions()) {
      --in_transport_;
      auto it = pending_.find(completion.id);
      if (it == pending_.end()) continue;
      Pending& pending = it->second;
      if (pending.future.attr("done")().cast<bool>()) {  // cancelled: the reply is dropped
        pending_.erase(it);
        continue;
      }
      if (completion.error) {
        settle_error(it, completion.error);
        continue;
      }
      // Whatever fails here (an error reply, a reply that is not UTF-8, a closed client) fails
      // this future only: the loop's reader callback must settle every other one.
      try {
        pending.exchange->on_replies(std::move(completion.replies));
        if (pending.exchange->finished()) {
          py::object result = to_python(pending.exchange->take_result());
          pending.future.attr("set_result")(result);
          pending_.erase(it);
        } else {
          send(completion.id, *pending.exchange);  // the operation's next page
        }
      } catch (py::error_already_set& e) {
        settle_python_error(it, e);
      } catch (...) {
        settle_error(it, std::current_exception());
      }
    }
    while (!deferred_.empty() && in_transport_ < max_pending_) {
      auto it = pending_.find(deferred_.front());
      deferred_.pop_front();
      if (it == pending_.end()) continue;
      if (it->second.future.attr("done")().cast<bool>()) {
        pending_.erase(it);
        continue;
      }
      try {
        send(it->first, *it->second.exchange);
      } catch (...) {
        settle_error(it, std::current_exception());
      }
    }
  }

  // Stops the I/O thread; every unsettled future gets ConnectionError.
  void close() {
    if (forked()) return;
    {
      py::gil_scoped_release release;
      client_->close();
    }
    drain();
    auto error = std::make_exception_ptr(ConnectionError("the client is closed"));
    while (!pending_.empty()) settle_error(pending_.begin(), error);
    deferred_.clear();
  }

  int fileno() const {
    check_owner();  // before the event loop watches the (shared) eventfd in a forked child
    return client_->notify_fd();
  }
  std::size_t pending() const { return pending_.size(); }
  bool closed() const { return client_->closed(); }
  transport::Stats stats() const { return client_->stats(); }
  std::uint64_t calls() const { return calls_; }
  const ClientOptions& options() const { return client_->options(); }

 private:
  struct Pending {
    py::object future;
    py::object operation;  // keeps the exchange alive
    transport::Exchange* exchange;
  };
  using Iterator = std::unordered_map<std::uint64_t, Pending>::iterator;

  // A forked child must not run the parent's I/O thread's destructor: it leaks the client.
  static std::shared_ptr<transport::MultiplexedClient> make_client(ClientOptions options,
                                                                   std::size_t max_in_flight) {
    const pid_t owner = ::getpid();
    return std::shared_ptr<transport::MultiplexedClient>(
        new transport::MultiplexedClient(std::move(options), max_in_flight),
        [owner](transport::MultiplexedClient* client) {
          if (::getpid() == owner) delete client;
        });
  }

  void send(std::uint64_t id, transport::Exchange& exchange) {
    client_->submit(id, exchange.wire(), exchange.expected());
    ++in_transport_;
  }

  void settle_python_error(Iterator it, py::error_already_set& error) {
    py::object future = std::move(it->second.future);
    pending_.erase(it);
    if (!future.attr("done")().cast<bool>()) future.attr("set_exception")(error.value());
  }

  void settle_error(Iterator it, const std::exception_ptr& error) {
    py::object future = std::move(it->second.future);
    pending_.erase(it);
    if (!future.attr("done")().cast<bool>()) {
      future.attr("set_exception")(exception_object(error));
    }
  }

  bool forked() const { return ::getpid() != owner_; }
  void check_owner() const {
    if (forked()) {
      throw RedisError(
          "this asyncio client was created before fork(); create a new client in the child");
    }
  }

  const pid_t owner_ = ::getpid();
  std::shared_ptr<transport::MultiplexedClient> client_;
  const std::size_t max_pending_;
  std::unordered_map<std::uint64_t, Pending> pending_;
  std::deque<std::uint64_t> deferred_;
  std::size_t in_transport_ = 0;
  std::uint64_t next_id_ = 1;
  std::uint64_t calls_ = 0;
};

py::dict stats_dict(const transport::Stats& s) {
  py::dict out;
  out["round_trips"] = s.round_trips;
  out["commands"] = s.commands;
  out["reconnects"] = s.reconnects;
  out["connections"] = s.connections;
  return out;
}

}  // namespace
}  // namespace rlb

PYBIND11_MODULE(_core, m) {
  using namespace rlb;
  m.doc() = "The compiled core of redis_leaderboard: RESP codec, operations and transports.";
  keys = new Keys();  // never freed: outlives every result
  transport::set_interrupt_check(&check_python_signals);

  auto& redis_error = py::register_exception<RedisError>(m, "RedisError", PyExc_Exception);
  auto& connection_error =
      py::register_exception<ConnectionError>(m, "ConnectionError", redis_error.ptr());
  exception_types = {
      redis_error,
      connection_error,
      py::register_exception<AuthenticationError>(m, "AuthenticationError", connection_error.ptr()),
      py::register_exception<TimeoutError>(m, "TimeoutError", redis_error.ptr()),
      py::register_exception<ResponseError>(m, "ResponseError", redis_error.ptr()),
  };
  redis_error.doc() = "Base of every error this package raises for Redis (mirrors redis-py).";

  py::class_<PyOperation>(m, "Operation",
                          "One leaderboard operation: its requests and how it reads the replies.")
      .def_property_readonly("name", [](const PyOperation& self) { return self.operation->name(); })
      .def(
          "request",
          [](PyOperation& self) {
            if (!self.exchange) self.start();
            return py::bytes(self.exchange->wire());
          },
          "RESP bytes of the next round trip's commands (scripts as EVALSHA).")
      .def(
          "feed",
          [](PyOperation& self, py::bytes data) {
            if (!self.exchange || self.exchange->finished()) {
              throw py::value_error("feed() follows request()");
            }
            self.exchange->on_replies(codec::decode_all(std::string(data)));
            if (self.exchange->finished()) self.result = self.exchange->take_result();
            return self.exchange->finished();
          },
          "data"_a, "Feed the RESP replies of the last request; True when finished.")
      .def(
          "result",
          [](PyOperation& self) {
            if (!self.result) throw py::value_error("the operation has not finished");
            return to_python(*self.result);
          },
          "The operation's return value, once feed() has returned True.")
      .def("__repr__", [](const PyOperation& self) {
        return std::string("<Operation ") + self.operation->name() + ">";
      });

  py::class_<Board>(m, "Board", "A board's key and size limit; builds validated operations.")
      .def(py::init([](std::string key, py::handle max_entries) {
             return Board(std::move(key), integer_arg(max_entries, "max_entries"));
           }),
           "key"_a, "max_entries"_a)
      .def_property_readonly("key", &Board::key)
      .def_property_readonly("max_entries", &Board::max_entries)
      .def(
          "upsert_user",
          [](const Board& self, py::handle user_id, py::handle score, py::handle metadata) {
            return wrap(self.upsert_user(user_id_arg(user_id), number_arg(score, "score"),
                                         metadata_arg(metadata)));
          },
          "user_id"_a, "score"_a, "metadata"_a = py::none())
      .def(
          "increment_score",
          [](const Board& self, py::handle user_id, py::handle amount, py::handle metadata) {
            return wrap(self.increment_score(user_id_arg(user_id), number_arg(amount, "amount"),
                                             metadata_arg(metadata)));
          },
          "user_id"_a, "amount"_a, "metadata"_a = py::none())
      .def(
          "set_max_entries",
          [](Board& self, py::handle max_entries) {
            return wrap(self.set_max_entries(integer_arg(max_entries, "max_entries")));
          },
          "max_entries"_a)
      .def(
          "get_top",
          [](const Board& self, py::handle count) {
            return wrap(self.get_top(integer_arg(count, "count")));
          },
          "count"_a = 10)
      .def(
          "get_around_rank",
          [](const Board& self, py::handle rank, py::handle count) {
            return wrap(
                self.get_around_rank(integer_arg(rank, "rank"), integer_arg(count, "count")));
          },
          "rank"_a, "count"_a = 5)
      .def(
          "get_rank",
          [](const Board& self, py::handle user_id) {
            return wrap(self.get_rank(user_id_arg(user_id)));
          },
          "user_id"_a)
      .def(
          "get_user_metadata",
          [](const Board& self, py::handle user_id) {
            return wrap(self.get_user_metadata(user_id_arg(user_id)));
          },
          "user_id"_a)
      .def(
          "get_user_entry",
          [](const Board& self, py::handle user_id) {
            return wrap(self.get_user_entry(user_id_arg(user_id)));
          },
          "user_id"_a)
      .def("list_all", [](const Board& self) { return wrap(self.list_all()); })
      .def("get_size", [](const Board& self) { return wrap(self.get_size()); })
      .def(
          "delete_user",
          [](const Board& self, py::handle user_id) {
            return wrap(self.delete_user(user_id_arg(user_id)));
          },
          "user_id"_a)
      .def("clear", [](const Board& self) { return wrap(self.clear()); })
      .def(
          "upsert_chunk",
          [](const Board& self, py::handle entries, long long first_index) {
            return wrap(self.upsert_chunk(batch_arg(entries, first_index), first_index));
          },
          "entries"_a, "first_index"_a = 0)
      .def(
          "trim_to_max_entries",
          [](const Board& self, long long report) {
            return wrap(self.trim_to_max_entries(report));
          },
          "report"_a = 1000);

  py::class_<BlockingClient, std::shared_ptr<BlockingClient>>(
      m, "Client", "A blocking, pipelined Redis client, safe to share between threads.")
      .def(py::init([](const std::string& host, int port, long long db,
                       std::optional<std::string> username, std::optional<std::string> password,
                       std::optional<double> socket_timeout,
                       std::optional<double> socket_connect_timeout,
                       std::optional<std::string> client_name,
                       std::optional<std::string> unix_socket_path) {
             return std::make_shared<BlockingClient>(client_options(
                 host, port, db, std::move(username), std::move(password), socket_timeout,
                 socket_connect_timeout, std::move(client_name), std::move(unix_socket_path)));
           }),
           "host"_a = "localhost", "port"_a = 6379, "db"_a = 0, "username"_a = py::none(),
           "password"_a = py::none(), "socket_timeout"_a = py::none(),
           "socket_connect_timeout"_a = py::none(), "client_name"_a = py::none(),
           "unix_socket_path"_a = py::none())
      .def_static(
          "from_url",
          [](const std::string& url, std::optional<double> socket_timeout,
             std::optional<double> socket_connect_timeout, std::optional<std::string> client_name) {
            ClientOptions options = transport::parse_url(url);
            if (socket_timeout) options.socket_timeout = socket_timeout;
            if (socket_connect_timeout) options.socket_connect_timeout = socket_connect_timeout;
            if (client_name) options.client_name = client_name;
            return std::make_shared<BlockingClient>(std::move(options));
          },
          "url"_a, py::kw_only(), "socket_timeout"_a = py::none(),
          "socket_connect_timeout"_a = py::none(), "client_name"_a = py::none())
      .def("ping",
           [](BlockingClient& self) {
             auto operation = leaderboard::ping();
             transport::Exchange exchange(*operation);
             py::gil_scoped_release release;
             return std::get<bool>(self.run(exchange));
           })
      .def(
          "run",
          [](BlockingClient& self, PyOperation& operation) {
            transport::Exchange& exchange = operation.start();
            Result result;
            {
              py::gil_scoped_release release;
              result = self.run(exchange);
            }
            return to_python(result);
          },
          "operation"_a)
      .def("execute_command",
           [](BlockingClient& self, py::args args) {
             if (args.empty()) throw py::type_error("execute_command needs a command name");
             std::vector<std::string> argv;
             for (py::handle arg : args) argv.push_back(argument_bytes(arg));
             Reply reply;
             {
               py::gil_scoped_release release;
               reply = self.execute_raw(argv);
             }
             return reply_to_python(reply, false);
           })
      .def("stats", [](const BlockingClient& self) { return stats_dict(self.stats()); })
      .def("close", &BlockingClient::close, py::call_guard<py::gil_scoped_release>())
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](BlockingClient& self, py::args) { self.close(); })
      .def("__repr__", [](const BlockingClient& self) {
        return "Client(" + self.options().address() + ", db=" + std::to_string(self.options().db) +
               ")";
      });

  py::class_<AsyncCore>(m, "AsyncCore",
                        "The asyncio client's core; use redis_leaderboard.asyncio.Client.")
      .def(py::init([](const std::string& host, int port, long long db,
                       std::optional<std::string> username, std::optional<std::string> password,
                       std::optional<double> socket_timeout,
                       std::optional<double> socket_connect_timeout,
                       std::optional<std::string> client_name,
                       std::optional<std::string> unix_socket_path, std::size_t max_in_flight,
                       std::size_t max_pending) {
             return std::make_unique<AsyncCore>(
                 client_options(host, port, db, std::move(username), std::move(password),
                                socket_timeout, socket_connect_timeout, std::move(client_name),
                                std::move(unix_socket_path)),
                 max_in_flight, max_pending);
           }),
           "host"_a = "localhost", "port"_a = 6379, "db"_a = 0, "username"_a = py::none(),
           "password"_a = py::none(), "socket_timeout"_a = py::none(),
           "socket_connect_timeout"_a = py::none(), "client_name"_a = py::none(),
           "unix_socket_path"_a = py::none(), "max_in_flight"_a = 1024, "max_pending"_a = 10000)
      .def_static(
          "from_url",
          [](const std::string& url, std::optional<double> socket_timeout,
             std::optional<double> socket_connect_timeout, std::optional<std::string> client_name,
             std::size_t max_in_flight, std::size_t max_pending) {
            ClientOptions options = transport::parse_url(url);
            if (socket_timeout) options.socket_timeout = socket_timeout;
            if (socket_connect_timeout) options.socket_connect_timeout = socket_connect_timeout;
            if (client_name) options.client_name = client_name;
            return std::make_unique<AsyncCore>(std::move(options), max_in_flight, max_pending);
          },
          "url"_a, py::kw_only(), "socket_timeout"_a = py::none(),
          "socket_connect_timeout"_a = py::none(), "client_name"_a = py::none(),
          "max_in_flight"_a = 1024, "max_pending"_a = 10000)
      .def("submit", &AsyncCore::submit, "operation"_a, "loop"_a)
      .def("drain", &AsyncCore::drain)
      .def("close", &AsyncCore::close)
      .def("fileno", &AsyncCore::fileno)
      .def_property_readonly("pending", &AsyncCore::pending)
      .def_property_readonly("closed", &AsyncCore::closed)
      .def("stats",
           [](const AsyncCore& self) {
             py::dict out = stats_dict(self.stats());
             out["calls"] = self.calls();
             return out;
           })
      .def("address", [](const AsyncCore& self) { return self.options().address(); });

  m.def(
      "ping", [] { return wrap(leaderboard::ping()); }, "The PING operation.");
  m.def(
      "encode_command",
      [](py::args args) {
        std::vector<std::string> storage;
        for (py::handle arg : args) storage.push_back(argument_bytes(arg));
        std::vector<std::string_view> argv(storage.begin(), storage.end());
        std::string out;
        codec::encode_command(argv, out);
        return py::bytes(out);
      },
      "RESP bytes of one command.");
  m.def(
      "decode_replies",
      [](py::bytes data) {
        py::list out;
        for (const auto& reply : codec::decode_all(std::string(data))) {
          out.append(reply_to_python(reply, true));
        }
        return out;
      },
      "data"_a, "Every reply in RESP bytes; error replies become ResponseError instances.");
}
