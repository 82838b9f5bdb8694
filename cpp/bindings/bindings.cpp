// The _core module: pybind11 declarations only. Conversions live in conversions.cpp, the asyncio
// futures in async_core.hpp; the GIL is released for all I/O.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings/async_core.hpp"
#include "bindings/conversions.hpp"
#include "codec/resp.hpp"
#include "errors.hpp"
#include "leaderboard/operations.hpp"
#include "transport/blocking_client.hpp"
#include "transport/options.hpp"
#include "transport/requests.hpp"

namespace py = pybind11;
using namespace py::literals;

PYBIND11_MODULE(_core, m) {
  using namespace rlb;
  using namespace rlb::bindings;
  using codec::Reply;
  using leaderboard::Board;
  using leaderboard::Operation;
  using leaderboard::Result;
  using transport::BlockingClient;
  using transport::ClientOptions;
  m.doc() = "The compiled core of redis_leaderboard: RESP codec, operations and transports.";
  names = new Names();  // never freed: outlives every result
  transport::set_interrupt_check(&check_python_signals);

  declare_exceptions(m);

  py::class_<PyOperation>(m, "Operation",
                          "One leaderboard operation: its requests and how it reads the replies.")
      .def_property_readonly("name", [](const PyOperation& self) { return self.operation->name(); })
      .def(
          "request",
          [](PyOperation& self) {
            if (!self.exchange) self.start();  // once: later calls give the pending request
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

  // A str option (order, ties, mode): TypeError if not a str, ValueError if not a known name.
  auto option_arg = [](py::handle value, const char* field) {
    if (!PyUnicode_Check(value.ptr())) {
      throw py::type_error(std::string(field) + " must be a str, not " +
                           Py_TYPE(value.ptr())->tp_name);
    }
    return value.cast<std::string>();
  };
  py::class_<Board>(m, "Board",
                    "A board's key, size limit and ranking rules; builds validated operations.")
      .def(py::init([option_arg](std::string key, py::handle max_entries, py::handle order,
                                 py::handle ties) {
             return Board(std::move(key), integer_arg(max_entries, "max_entries"),
                          leaderboard::parse_order(option_arg(order, "order")),
                          leaderboard::parse_ties(option_arg(ties, "ties")));
           }),
           "key"_a, "max_entries"_a, py::kw_only(), "order"_a = "desc", "ties"_a = "lexicographic")
      .def_property_readonly("key", &Board::key)
      .def_property_readonly("max_entries", &Board::max_entries)
      .def_property_readonly("order",
                             [](const Board& self) { return leaderboard::name_of(self.order()); })
      .def_property_readonly("ties",
                             [](const Board& self) { return leaderboard::name_of(self.ties()); })
      .def_property_readonly("options_checked", &Board::options_checked)
      .def(
          "submit",
          [option_arg](const Board& self, py::handle user_id, py::handle score, py::handle metadata,
                       py::handle mode) {
            auto parsed = leaderboard::parse_write_mode(option_arg(mode, "mode"));
            return wrap(self.submit(user_id_arg(user_id), number_arg(score, "score"),
                                    metadata_arg(metadata), parsed));
          },
          "user_id"_a, "score"_a, "metadata"_a = py::none(), py::kw_only(), "mode"_a = "set")
      .def("check_options", [](const Board& self) { return wrap(self.check_options()); })
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
          [](const Board& self, py::handle max_entries) {
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
                       std::optional<std::string> unix_socket_path,
                       std::optional<std::size_t> max_reply_bytes) {
             return std::make_shared<BlockingClient>(
                 client_options(host, port, db, std::move(username), std::move(password),
                                socket_timeout, socket_connect_timeout, std::move(client_name),
                                std::move(unix_socket_path), max_reply_bytes));
           }),
           "host"_a = "localhost", "port"_a = 6379, "db"_a = 0, "username"_a = py::none(),
           "password"_a = py::none(), "socket_timeout"_a = py::none(),
           "socket_connect_timeout"_a = py::none(), "client_name"_a = py::none(),
           "unix_socket_path"_a = py::none(), py::kw_only(), "max_reply_bytes"_a = py::none())
      .def_static(
          "from_url",
          [](const std::string& url, std::optional<double> socket_timeout,
             std::optional<double> socket_connect_timeout, std::optional<std::string> client_name,
             std::optional<std::size_t> max_reply_bytes) {
            return std::make_shared<BlockingClient>(url_options(
                url, socket_timeout, socket_connect_timeout, client_name, max_reply_bytes));
          },
          "url"_a, py::kw_only(), "socket_timeout"_a = py::none(),
          "socket_connect_timeout"_a = py::none(), "client_name"_a = py::none(),
          "max_reply_bytes"_a = py::none())
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
            operation.claim();
            Result result;
            {
              py::gil_scoped_release release;
              result = self.run(operation.start());
            }
            return to_python(result);
          },
          "operation"_a)
      .def(
          "run_pipelined",
          [](BlockingClient& self, py::iterable operations, py::function on_result,
             std::size_t window) {
            py::iterator it = py::iter(operations);
            std::deque<py::object> alive;  // the operations in flight, and a few done
            auto next = [&]() -> transport::Exchange* {
              py::gil_scoped_acquire gil;
              if (alive.size() > window) alive.pop_front();
              // Asked for only now, after the previous request went out: building the next
              // operation (converting a chunk) overlaps the server's work on the previous.
              auto item = py::reinterpret_steal<py::object>(PyIter_Next(it.ptr()));
              if (!item) {
                if (PyErr_Occurred()) throw py::error_already_set();
                return nullptr;
              }
              auto& operation = operation_arg(item);
              operation.claim();
              alive.push_back(item);
              return &operation.start();
            };
            auto done = [&](Result result) {
              py::gil_scoped_acquire gil;
              on_result(to_python(result));
            };
            py::gil_scoped_release release;
            self.run_pipelined(window, next, done);
          },
          "operations"_a, "on_result"_a, "window"_a = 4)
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
                       std::size_t max_pending, std::optional<std::size_t> max_reply_bytes) {
             return std::make_unique<AsyncCore>(
                 client_options(host, port, db, std::move(username), std::move(password),
                                socket_timeout, socket_connect_timeout, std::move(client_name),
                                std::move(unix_socket_path), max_reply_bytes),
                 max_in_flight, max_pending);
           }),
           "host"_a = "localhost", "port"_a = 6379, "db"_a = 0, "username"_a = py::none(),
           "password"_a = py::none(), "socket_timeout"_a = py::none(),
           "socket_connect_timeout"_a = py::none(), "client_name"_a = py::none(),
           "unix_socket_path"_a = py::none(), "max_in_flight"_a = 1024, "max_pending"_a = 10000,
           "max_reply_bytes"_a = py::none())
      .def_static(
          "from_url",
          [](const std::string& url, std::optional<double> socket_timeout,
             std::optional<double> socket_connect_timeout, std::optional<std::string> client_name,
             std::size_t max_in_flight, std::size_t max_pending,
             std::optional<std::size_t> max_reply_bytes) {
            return std::make_unique<AsyncCore>(
                url_options(url, socket_timeout, socket_connect_timeout, client_name,
                            max_reply_bytes),
                max_in_flight, max_pending);
          },
          "url"_a, py::kw_only(), "socket_timeout"_a = py::none(),
          "socket_connect_timeout"_a = py::none(), "client_name"_a = py::none(),
          "max_in_flight"_a = 1024, "max_pending"_a = 10000, "max_reply_bytes"_a = py::none())
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
