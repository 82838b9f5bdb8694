// The _core module: its pybind11 declarations, a few small argument helpers, and the hot calls
// that skip pybind11's dispatch (METH_FASTCALL: AsyncCore.run, Board.get_rank, get_top, ...).
// Conversions live in conversions.cpp, the asyncio futures in async_core.hpp, the cluster
// clients in cluster_bindings.cpp, calls built by name in script_bindings.cpp; the GIL is
// released for all blocking I/O.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings/async_core.hpp"
#include "bindings/conversions.hpp"
#include "bindings/guarded.hpp"
#include "codec/resp.hpp"
#include "connection/core.hpp"
#include "connection/exchange.hpp"
#include "connection/observer.hpp"
#include "connection/options.hpp"
#include "errors.hpp"
#include "leaderboard/group.hpp"
#include "leaderboard/operations.hpp"
#include "leaderboard/script_words.hpp"
#include "transport/blocking_client.hpp"
#include "transport/cache_channel.hpp"

namespace py = pybind11;
using namespace py::literals;

namespace rlb::bindings {
void declare_cluster(py::module_& m);  // cluster_bindings.cpp
void declare_scripts(py::module_& m);  // script_bindings.cpp
}  // namespace rlb::bindings

namespace {

// A connection core with the options and counters it refers to.
struct CoreHarness {
  CoreHarness(rlb::connection::ClientOptions options_, std::size_t max_in_flight,
              std::size_t max_bytes_in_flight)
      : options(std::move(options_)), core(options, max_in_flight, counters, max_bytes_in_flight) {}
  rlb::connection::ClientOptions options;
  rlb::connection::Counters counters;
  rlb::connection::Core core;
};

// The asyncio client's client-side cache: the invalidation connection, driven from the event
// loop (and set up on an executor thread), with the options and resolver it refers to.
struct AsyncClientCache {
  AsyncClientCache(rlb::connection::ClientOptions options_, rlb::connection::CacheOptions cache)
      : options(std::move(options_)),
        tls(rlb::connection::make_tls_context(options.tls)),
        resolver(options, tls),
        channel(options, tls, resolver, cache, &primary_epoch) {
    if (options.sentinel.enabled()) {  // follows the primary, as the client's connections
      watcher = std::make_unique<rlb::transport::SentinelWatcher>(options, tls, resolver,
                                                                  [this] { ++primary_epoch; });
    }
  }
  ~AsyncClientCache() { watcher.reset(); }
  rlb::connection::ClientOptions options;
  std::shared_ptr<const rlb::connection::TlsContext> tls;
  rlb::transport::Resolver resolver;
  std::atomic<std::uint64_t> primary_epoch{0};
  rlb::transport::CacheChannel channel;
  std::unique_ptr<rlb::transport::SentinelWatcher> watcher;
};

rlb::connection::Clock::time_point at(double seconds) {
  return rlb::connection::Clock::time_point(
      std::chrono::duration_cast<rlb::connection::Clock::duration>(
          std::chrono::duration<double>(seconds)));
}

// A str option (order, ties, mode, aggregate): TypeError if not a str.
std::string option_text(py::handle value, const char* field) {
  if (!PyUnicode_Check(value.ptr())) {
    throw py::type_error(std::string(field) + " must be a str, not " +
                         Py_TYPE(value.ptr())->tp_name);
  }
  return value.cast<std::string>();
}

// max_entries: None is an unlimited board (Board::kUnlimited: no write ever trims), read back as
// None.
long long max_entries_arg(py::handle value) {
  if (value.is_none()) return rlb::leaderboard::Board::kUnlimited;
  return rlb::bindings::integer_arg(value, "max_entries");
}

py::object max_entries_of(long long value) {
  if (value >= rlb::leaderboard::Board::kUnlimited) return py::none();
  return py::int_(value);
}

// A group write (leaderboard/group.hpp) from Python arguments.
std::unique_ptr<rlb::leaderboard::Operation> group_write(py::handle members, py::handle user_id,
                                                         py::handle score, py::handle metadata,
                                                         py::handle submission_id,
                                                         py::handle retries) {
  using namespace rlb::bindings;
  using rlb::leaderboard::Window;
  std::vector<rlb::leaderboard::GroupMember> list;
  for (py::handle item : py::iter(members)) {
    auto member = item.cast<py::tuple>();
    if (member.size() != 3) throw py::type_error("a group member is (board, mode, bucket)");
    auto mode = rlb::leaderboard::parse_write_mode(option_text(member[1], "mode"));
    if (py::isinstance<Window>(member[0])) {
      list.push_back({member[0].cast<Window>(), mode, integer_arg(member[2], "bucket")});
    } else {
      list.push_back({member[0].cast<rlb::leaderboard::Board>(), mode, 0});
    }
  }
  std::optional<std::string> id;  // guards
  if (!submission_id.is_none()) id = option_text(submission_id, "submission_id");
  return rlb::leaderboard::group_submit(
      std::move(list), user_id_arg(user_id), number_arg(score, "score"), metadata_arg(metadata),
      std::move(id), static_cast<int>(integer_arg(retries, "retries")));
}

// Time (seasons): rolling windows and group writes (leaderboard/group.hpp).
void declare_time(py::module_& m) {
  using namespace rlb::bindings;
  using rlb::leaderboard::Board;
  using rlb::leaderboard::Window;
  py::class_<Window>(
      m, "Window", "A rolling window's buckets and union; builds validated operations.", guarded())
      .def(py::init([](std::string key, py::handle bucket_ms, py::handle window_ms,
                       py::handle aggregate, py::handle max_entries, py::handle order,
                       py::handle submission_ttl, py::handle rate_limit, py::handle events,
                       py::handle events_maxlen, py::handle score_range, py::handle max_increment) {
             return Window(std::move(key), integer_arg(bucket_ms, "bucket_ms"),
                           integer_arg(window_ms, "window_ms"),
                           rlb::leaderboard::parse_aggregate(option_text(aggregate, "aggregate")),
                           max_entries_arg(max_entries),
                           rlb::leaderboard::parse_order(option_text(order, "order")),
                           guards_arg(submission_ttl, rate_limit, events, events_maxlen,
                                      score_range, max_increment));
           }),
           "key"_a, "bucket_ms"_a, "window_ms"_a, py::kw_only(), "aggregate"_a = "sum",
           "max_entries"_a = 100, "order"_a = "desc", "submission_ttl"_a = 86400,
           "rate_limit"_a = py::none(), "events"_a = false, "events_maxlen"_a = 10000,
           "score_range"_a = py::none(), "max_increment"_a = py::none())
      .def_property_readonly("key", &Window::key)
      .def_property_readonly("bucket_ms", &Window::bucket_ms)
      .def_property_readonly("window_ms", &Window::window_ms)
      .def_property_readonly("buckets", &Window::buckets)
      .def_property_readonly("max_entries",
                             [](const Window& self) { return max_entries_of(self.max_entries()); })
      .def_property_readonly("submission_ttl", &Window::submission_ttl)
      .def_property_readonly("rate_limit",
                             [](const Window& self) -> py::object {
                               const auto& guards = self.guards();
                               if (!guards.rate_max) return py::none();
                               return py::make_tuple(*guards.rate_max, guards.rate_per);
                             })
      .def_property_readonly("events", [](const Window& self) { return self.guards().events; })
      .def_property_readonly("events_maxlen",
                             [](const Window& self) { return self.guards().events_maxlen; })
      .def_property_readonly("score_range",
                             [](const Window& self) -> py::object {
                               const auto& guards = self.guards();
                               if (!guards.score_min && !guards.score_max) return py::none();
                               return py::make_tuple(py::cast(guards.score_min),
                                                     py::cast(guards.score_max));
                             })
      .def_property_readonly("max_increment",
                             [](const Window& self) { return self.guards().max_increment; })
      .def_property_readonly(
          "aggregate",
          [](const Window& self) { return rlb::leaderboard::name_of(self.aggregate()); })
      .def_property_readonly(
          "order", [](const Window& self) { return rlb::leaderboard::name_of(self.order()); })
      .def("bucket_key", &Window::bucket_key, "bucket"_a)
      .def(
          "refreshed",
          [](const Window& self, py::handle read) {
            return wrap(self.refreshed(operation_arg(read).take()));
          },
          "read"_a)
      .def(
          "delete_user",
          [](const Window& self, py::handle user_id) {
            return wrap(self.delete_user(user_id_arg(user_id)));
          },
          "user_id"_a)
      .def("clear", [](const Window& self) { return wrap(self.clear()); });

  m.def(
      "group_write",
      [](py::handle members, py::handle user_id, py::handle score, py::handle metadata,
         py::handle submission_id, py::handle retries) {
        return wrap(group_write(members, user_id, score, metadata, submission_id, retries));
      },
      "members"_a, "user_id"_a, "score"_a, "metadata"_a = py::none(),
      "submission_id"_a = py::none(), "retries"_a = 2,
      "One write to several boards, in one script; its result is each board's submit() result, "
      "in order.");
}

// ---- The hottest calls without pybind11's dispatcher: a CPython vectorcall method
// (METH_FASTCALL | METH_KEYWORDS) put on the class in place of pybind11's. Its dispatcher makes
// two vectors per call (the arguments and their conversion flags) and tries each overload; an
// asyncio call makes two such calls (Board.get_rank, then AsyncCore.run). The same arguments,
// by position or keyword, the same defaults, and the same C++ exceptions translated by
// pybind11's translators; the signature (__text_signature__ in the docstring) is what
// inspect and the stub see.

// try_translate_exceptions (pybind11::detail) exists from 2.13; a major release not tested here
// (4 and later) keeps pybind11's own methods rather than fail to build on a moved detail.
#if PYBIND11_VERSION_HEX >= 0x020D0000 && PYBIND11_VERSION_HEX < 0x04000000
#define RLB_FAST_METHODS 1
// The parameters of a fast method: their names, and a default for each (nullptr: required).
template <std::size_t N>
struct FastParams {
  const char* method;
  std::array<const char*, N> names;
  std::array<PyObject*, N> defaults;  // borrowed, immortal for the process (None, small ints)
};

// The arguments of one call by parameter (borrowed references); false with TypeError set.
template <std::size_t N>
bool fast_arguments(const FastParams<N>& params, PyObject* const* args, Py_ssize_t nargs,
                    PyObject* kwnames, std::array<PyObject*, N>& out) {
  out.fill(nullptr);
  const Py_ssize_t keywords = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  if constexpr (N == 0) {
    if (nargs == 0 && keywords == 0) return true;
    PyErr_Format(PyExc_TypeError, "%s() takes no arguments", params.method);
    return false;
  }
  if (nargs < 0 || static_cast<std::size_t>(nargs) > N) {
    PyErr_Format(PyExc_TypeError, "%s() takes at most %d positional arguments (%zd given)",
                 params.method, static_cast<int>(N), nargs);
    return false;
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) out[static_cast<std::size_t>(i)] = args[i];
  for (Py_ssize_t k = 0; k < keywords; ++k) {
    PyObject* keyword = PyTuple_GET_ITEM(kwnames, k);
    std::size_t i = 0;
    while (i < N && PyUnicode_CompareWithASCIIString(keyword, params.names[i]) != 0) ++i;
    if (i == N) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", params.method,
                   keyword);
      return false;
    }
    if (out[i] != nullptr) {
      PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", params.method,
                   params.names[i]);
      return false;
    }
    out[i] = args[nargs + k];
  }
  for (std::size_t i = 0; i < N; ++i) {
    if (out[i] != nullptr) continue;
    if (params.defaults[i] == nullptr) {
      PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", params.method,
                   params.names[i]);
      return false;
    }
    out[i] = params.defaults[i];
  }
  return true;
}

// Runs body(self as Self&, the arguments) as pybind11 would run the method: a C++ exception
// becomes its Python exception, nothing crosses into CPython.
template <class Self, std::size_t N, class Body>
PyObject* fast_call(const FastParams<N>& params, PyObject* self, PyObject* const* args,
                    Py_ssize_t nargs, PyObject* kwnames, Body&& body) noexcept {
  try {
    std::array<PyObject*, N> values;
    if (!fast_arguments(params, args, nargs, kwnames, values)) return nullptr;
    Self& target = py::cast<Self&>(py::handle(self));
    py::object result = body(target, values);
    return result.release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (...) {
    try {
      py::detail::try_translate_exceptions();
    } catch (...) {
      PyErr_SetString(PyExc_SystemError, "an exception no translator handled");
    }
  }
  return nullptr;
}

// Puts `def` (static storage: the method keeps its address) on `cls`, replacing pybind11's.
void put_fast_method(py::handle cls, PyMethodDef* def) {
  auto method = py::reinterpret_steal<py::object>(
      PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), def));
  if (!method) throw py::error_already_set();
  py::setattr(cls, def->ml_name, method);
}

template <class F>
PyCFunction as_method(F* function) {  // METH_FASTCALL's signature, as PyMethodDef stores it
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(function));
}

using rlb::bindings::wrap;
using rlb::leaderboard::Board;

// AsyncCore.run and AsyncClusterCore.run.
template <class Core>
PyObject* async_core_run(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                         PyObject* kwnames) {
  static const FastParams<1> params{"run", {"operation"}, {nullptr}};
  return fast_call<Core>(params, self, args, nargs, kwnames,
                         [](Core& core, const std::array<PyObject*, 1>& a) {
                           return core.run(py::reinterpret_borrow<py::object>(a[0]));
                         });
}

PyObject* board_get_rank(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                         PyObject* kwnames) {
  static const FastParams<1> params{"get_rank", {"user_id"}, {nullptr}};
  return fast_call<const Board>(
      params, self, args, nargs, kwnames,
      [](const Board& board, const std::array<PyObject*, 1>& a) {
        return py::cast(wrap(board.get_rank(rlb::bindings::user_id_arg(a[0]))));
      });
}

PyObject* board_get_user_metadata(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                  PyObject* kwnames) {
  static const FastParams<1> params{"get_user_metadata", {"user_id"}, {nullptr}};
  return fast_call<const Board>(
      params, self, args, nargs, kwnames,
      [](const Board& board, const std::array<PyObject*, 1>& a) {
        return py::cast(wrap(board.get_user_metadata(rlb::bindings::user_id_arg(a[0]))));
      });
}

PyObject* board_get_size(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                         PyObject* kwnames) {
  static const FastParams<0> params{"get_size", {}, {}};
  return fast_call<const Board>(params, self, args, nargs, kwnames,
                                [](const Board& board, const std::array<PyObject*, 0>&) {
                                  return py::cast(wrap(board.get_size()));
                                });
}

PyObject* board_get_top(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                        PyObject* kwnames) {
  // The default, 10: a new reference kept for the process (nullptr if it could not be made:
  // then the count is required).
  static const FastParams<1> params{"get_top", {"count"}, {PyLong_FromLong(10)}};
  return fast_call<const Board>(
      params, self, args, nargs, kwnames,
      [](const Board& board, const std::array<PyObject*, 1>& a) {
        return py::cast(wrap(board.get_top(rlb::bindings::integer_arg(a[0], "count"))));
      });
}

PyObject* board_upsert_user(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                            PyObject* kwnames) {
  static const FastParams<3> params{
      "upsert_user", {"user_id", "score", "metadata"}, {nullptr, nullptr, Py_None}};
  return fast_call<const Board>(
      params, self, args, nargs, kwnames,
      [](const Board& board, const std::array<PyObject*, 3>& a) {
        return py::cast(wrap(board.upsert_user(rlb::bindings::user_id_arg(a[0]),
                                               rlb::bindings::number_arg(a[1], "score"),
                                               rlb::bindings::metadata_arg(a[2]))));
      });
}

PyMethodDef fast_async_core_methods[] = {
    {"run", as_method(&async_core_run<rlb::bindings::AsyncCore>), METH_FASTCALL | METH_KEYWORDS,
     "run($self, operation)\n--\n\nRuns `operation` on the running event loop; the returned "
     "future gets its result."},
};
PyMethodDef fast_async_cluster_core_methods[] = {
    {"run", as_method(&async_core_run<rlb::bindings::AsyncClusterCore>),
     METH_FASTCALL | METH_KEYWORDS,
     "run($self, operation)\n--\n\nRuns `operation` on the running event loop; the returned "
     "future gets its result."},
};
PyMethodDef fast_board_methods[] = {
    {"get_rank", as_method(&board_get_rank), METH_FASTCALL | METH_KEYWORDS,
     "get_rank($self, user_id)\n--\n\n"},
    {"get_user_metadata", as_method(&board_get_user_metadata), METH_FASTCALL | METH_KEYWORDS,
     "get_user_metadata($self, user_id)\n--\n\n"},
    {"get_size", as_method(&board_get_size), METH_FASTCALL | METH_KEYWORDS,
     "get_size($self)\n--\n\n"},
    {"get_top", as_method(&board_get_top), METH_FASTCALL | METH_KEYWORDS,
     "get_top($self, count=10)\n--\n\n"},
    {"upsert_user", as_method(&board_upsert_user), METH_FASTCALL | METH_KEYWORDS,
     "upsert_user($self, user_id, score, metadata=None)\n--\n\n"},
};
#endif  // PYBIND11_VERSION_HEX

}  // namespace

PYBIND11_MODULE(_core, m) {
  using namespace rlb;
  using namespace rlb::bindings;
  using codec::Reply;
  using connection::ClientOptions;
  using leaderboard::Board;
  using leaderboard::Operation;
  using leaderboard::Result;
  using transport::BlockingClient;
  m.doc() = "The compiled core of redis_leaderboard: RESP codec, operations and transports.";
  names = new Names();  // never freed: outlives every result
  transport::set_interrupt_check(&check_python_signals);

  declare_exceptions(m);

  py::class_<PyOperation>(m, "Operation",
                          "One leaderboard operation: its requests and how it reads the replies.",
                          guarded())
      .def_property_readonly("name", [](const PyOperation& self) { return self.name; })
      .def_property_readonly(
          "cached_metadata_prefix",
          [](const PyOperation& self) -> std::optional<std::string> {
            if (!self.operation) return std::nullopt;
            const std::string* prefix = self.operation->cached_metadata_prefix();
            if (prefix == nullptr) return std::nullopt;
            return *prefix;
          },
          "The metadata prefix a client-side cache serves this read from; None if it cannot.")
      .def(
          "in_one_trip",
          [](PyOperation& self) {
            if (!self.operation) throw py::value_error("this operation has already been run");
            if (self.operation->in_two_steps()) self.operation = self.operation->in_one_trip();
          },
          "Make a read of many entries, which takes the guide's two steps on one Redis, one "
          "round trip: its script, one snapshot (as a read of a run_pipelined stream runs). "
          "Nothing for other operations. Before request().")
      .def(
          "request",
          [](PyOperation& self) {
            // Once: later calls give the pending request. A read of many entries in one round
            // trip, as on every connection a caller may send other requests on.
            if (!self.exchange) {
              auto operation = self.take();
              if (operation->in_two_steps()) operation = operation->in_one_trip();
              self.exchange = std::make_unique<connection::Exchange>(std::move(operation));
            }
            return py::bytes(self.exchange->wire());
          },
          "RESP bytes of the next round trip's commands (scripts as EVALSHA; a read of many "
          "entries in one round trip, its script).")
      .def(
          "feed",
          [](PyOperation& self, py::bytes data, bool stream) {
            if (!self.exchange || self.exchange->finished()) {
              throw py::value_error("feed() follows request()");
            }
            auto& exchange = *self.exchange;
            self.exchange->on_replies(
                codec::decode_all(std::string(data), codec::kDefaultMaxReplyBytes,
                                  [&exchange, stream](std::size_t i) {
                                    return stream ? exchange.reply_sink(i) : nullptr;
                                  }));
            if (self.exchange->finished()) self.result = self.exchange->take_result();
            return self.exchange->finished();
          },
          "data"_a, "stream"_a = true,
          "Feed the RESP replies of the last request; True when finished. stream=False decodes "
          "them into trees first, where a connection streams what an operation reads as it "
          "arrives.")
      .def(
          "result",
          [](PyOperation& self) {
            if (!self.result) throw py::value_error("the operation has not finished");
            return to_python(*self.result);
          },
          "The operation's return value, once feed() has returned True.")
      .def("__repr__",
           [](const PyOperation& self) { return std::string("<Operation ") + self.name + ">"; });

  // A str option (order, ties, mode): TypeError if not a str, ValueError if not a known name.
  auto option_arg = [](py::handle value, const char* field) {
    if (!PyUnicode_Check(value.ptr())) {
      throw py::type_error(std::string(field) + " must be a str, not " +
                           Py_TYPE(value.ptr())->tp_name);
    }
    return value.cast<std::string>();
  };
  py::class_<Board>(m, "Board",
                    "A board's key, size limit and ranking rules; builds validated operations.",
                    guarded())
      .def(py::init([option_arg](std::string key, py::handle max_entries, py::handle order,
                                 py::handle ties, py::handle submission_ttl, py::handle rate_limit,
                                 py::handle events, py::handle events_maxlen, py::handle expire_at,
                                 std::optional<std::string> submission_scope,
                                 py::handle score_range, py::handle max_increment,
                                 py::handle tiebreak, py::handle open_span, py::handle layout) {
             // The guards (fair play's score limits among them).
             leaderboard::Guards guards = guards_arg(submission_ttl, rate_limit, events,
                                                     events_maxlen, score_range, max_increment);
             std::optional<long long> deadline;  // seasons: a periodic board's
             if (!expire_at.is_none()) deadline = integer_arg(expire_at, "expire_at");
             std::optional<std::pair<long long, long long>> span;  // seasons: the server's clock
             if (!open_span.is_none()) {
               if (!PyTuple_Check(open_span.ptr()) || PyTuple_Size(open_span.ptr()) != 2) {
                 throw py::type_error("open_span must be None or a (from, until) tuple, not " +
                                      std::string(Py_TYPE(open_span.ptr())->tp_name));
               }
               auto pair = py::reinterpret_borrow<py::tuple>(open_span);
               span.emplace(integer_arg(pair[0], "open_span's from"),
                            integer_arg(pair[1], "open_span's until"));
             }
             return Board(std::move(key), max_entries_arg(max_entries),
                          leaderboard::parse_order(option_arg(order, "order")),
                          leaderboard::parse_ties(option_arg(ties, "ties")), guards, deadline,
                          std::move(submission_scope), tiebreak_columns_arg(tiebreak), span,
                          leaderboard::parse_layout(option_arg(layout, "layout")));
           }),
           "key"_a, "max_entries"_a, py::kw_only(), "order"_a = "desc", "ties"_a = "lexicographic",
           "submission_ttl"_a = 86400, "rate_limit"_a = py::none(), "events"_a = false,
           "events_maxlen"_a = 10000, "expire_at"_a = py::none(), "submission_scope"_a = py::none(),
           "score_range"_a = py::none(), "max_increment"_a = py::none(), "tiebreak"_a = py::none(),
           "open_span"_a = py::none(), "layout"_a = "guide")
      // What a script family written in Python (a tournament's) sends for a board of this
      // shape: its tie rule as the scripts read it, its option keys (board_spec), and a
      // write's tie-break word ('' or 'tb:<ranked member's key>').
      .def_property_readonly("ties_word", &Board::ties_word)
      .def_property_readonly("option_keys", &Board::option_keys)
      .def(
          "tiebreak_word",
          [](const Board& self, py::handle values) {
            auto parsed = tiebreak_values_arg(values, self.tiebreak());
            if (!parsed) return std::string();
            return leaderboard::word::text(leaderboard::word::tb{
                leaderboard::tiebreak_key(self.tiebreak(), self.order(), *parsed)});
          },
          "values"_a)
      .def_property_readonly("tiebreak",
                             [](const Board& self) -> py::object {
                               if (self.tiebreak().empty()) return py::none();
                               py::list columns;
                               for (const auto& c : self.tiebreak()) {
                                 columns.append(py::make_tuple(c.name, c.desc ? "desc" : "asc"));
                               }
                               return py::tuple(columns);
                             })
      .def_property_readonly("expire_at", &Board::expire_at)
      .def_property_readonly("open_span", &Board::open_span)
      .def_property_readonly("submission_scope", &Board::submission_scope)
      .def_property_readonly("period", &Board::period)
      .def_property_readonly("key", &Board::key)
      .def_property_readonly("max_entries",
                             [](const Board& self) { return max_entries_of(self.max_entries()); })
      .def_property_readonly("order",
                             [](const Board& self) { return leaderboard::name_of(self.order()); })
      .def_property_readonly("ties",
                             [](const Board& self) { return leaderboard::name_of(self.ties()); })
      .def_property_readonly("layout",
                             [](const Board& self) { return leaderboard::name_of(self.layout()); })
      .def_property_readonly("options_checked", &Board::options_checked)
      .def_property_readonly("bulk_checked", &Board::bulk_checked)
      // The guards.
      .def_property_readonly("submission_ttl",
                             [](const Board& self) { return self.guards().submission_ttl; })
      .def_property_readonly("rate_limit",
                             [](const Board& self) { return rate_limit_value(self.guards()); })
      .def_property_readonly("events", [](const Board& self) { return self.guards().events; })
      .def_property_readonly(
          "guarded", [](const Board& self) { return self.guards().any(); },
          "Whether the board has guards a write must carry (rate_limit, "
          "events, score limits).")
      .def_property_readonly("score_range",
                             [](const Board& self) { return score_range_value(self.guards()); })
      .def_property_readonly("max_increment",
                             [](const Board& self) { return self.guards().max_increment; })
      .def_property_readonly("events_maxlen",
                             [](const Board& self) { return self.guards().events_maxlen; })
      .def(
          "read_events",
          [](const Board& self, std::string last_id, py::handle count, py::handle block) {
            std::optional<double> seconds;
            if (!block.is_none()) seconds = number_arg(block, "block");
            return wrap(self.read_events(std::move(last_id), integer_arg(count, "count"), seconds));
          },
          "last_id"_a = "$", "count"_a = 100, "block"_a = py::none())
      .def(
          "submit",
          [option_arg](const Board& self, py::handle user_id, py::handle score, py::handle metadata,
                       py::handle mode, py::handle submission_id, py::handle retries,
                       py::handle tiebreak) {
            auto parsed = leaderboard::parse_write_mode(option_arg(mode, "mode"));
            std::optional<std::string> id;
            if (!submission_id.is_none()) id = option_arg(submission_id, "submission_id");
            if (!tiebreak.is_none() && self.tiebreak().empty()) {
              throw py::value_error("tiebreak values for a board without tie-break columns");
            }
            auto values = tiebreak_values_arg(tiebreak, self.tiebreak());
            return wrap(self.submit(user_id_arg(user_id), number_arg(score, "score"),
                                    metadata_arg(metadata), parsed, std::move(id),
                                    static_cast<int>(integer_arg(retries, "retries")),
                                    std::move(values)));
          },
          "user_id"_a, "score"_a, "metadata"_a = py::none(), py::kw_only(), "mode"_a = "set",
          "submission_id"_a = py::none(), "retries"_a = 2, "tiebreak"_a = py::none())
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
            return wrap(self.set_max_entries(max_entries_arg(max_entries)));
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
          "convert_layout",
          [](const Board& self, py::handle page) {
            return wrap(self.convert_layout(integer_arg(page, "page")));
          },
          "page"_a = 1000)
      .def(
          "hide",
          [](const Board& self, py::handle user_id, bool scope) {
            return wrap(self.hide(user_id_arg(user_id), scope));
          },
          "user_id"_a, py::kw_only(), "scope"_a = false)
      .def(
          "unhide",
          [](const Board& self, py::handle user_id, bool scope) {
            return wrap(self.unhide(user_id_arg(user_id), scope));
          },
          "user_id"_a, py::kw_only(), "scope"_a = false)
      .def(
          "hidden", [](const Board& self, bool scope) { return wrap(self.hidden(scope)); },
          py::kw_only(), "scope"_a = false)
      .def(
          "is_hidden",
          [](const Board& self, py::handle user_id, bool scope) {
            return wrap(self.is_hidden(user_id_arg(user_id), scope));
          },
          "user_id"_a, py::kw_only(), "scope"_a = false)
      .def(
          "get_around_user",
          [](const Board& self, py::handle user_id, py::handle count) {
            return wrap(self.get_around_user(user_id_arg(user_id), integer_arg(count, "count")));
          },
          "user_id"_a, "count"_a = 5)
      .def(
          "get_entries",
          [](const Board& self, py::handle user_ids) {
            return wrap(self.get_entries(user_ids_arg(user_ids, Board::kMaxQueryItems)));
          },
          "user_ids"_a)
      .def(
          "get_page",
          [](const Board& self, py::handle page, py::handle page_size) {
            return wrap(
                self.get_page(integer_arg(page, "page"), integer_arg(page_size, "page_size")));
          },
          "page"_a, "page_size"_a = 10)
      .def(
          "get_by_score",
          [](const Board& self, py::handle min_score, py::handle max_score, py::handle offset,
             py::handle limit) {
            return wrap(self.get_by_score(
                number_arg(min_score, "min_score"), number_arg(max_score, "max_score"),
                integer_arg(offset, "offset"), integer_arg(limit, "limit")));
          },
          "min_score"_a, "max_score"_a, py::kw_only(), "offset"_a = 0, "limit"_a = 100)
      .def(
          "count_by_score",
          [](const Board& self, py::handle min_score, py::handle max_score) {
            return wrap(self.count_by_score(number_arg(min_score, "min_score"),
                                            number_arg(max_score, "max_score")));
          },
          "min_score"_a, "max_score"_a)
      .def(
          "rank_for_score",
          [](const Board& self, py::handle score) {
            return wrap(self.rank_for_score(number_arg(score, "score")));
          },
          "score"_a)
      .def(
          "get_percentile",
          [](const Board& self, py::handle user_id) {
            return wrap(self.get_percentile(user_id_arg(user_id)));
          },
          "user_id"_a)
      .def(
          "score_at_percentile",
          [](const Board& self, py::handle p) {
            return wrap(self.score_at_percentile(number_arg(p, "p")));
          },
          "p"_a)
      .def(
          "get_histogram",
          [](const Board& self, py::handle bins, py::handle min_score, py::handle max_score) {
            auto bound = [](py::handle value, const char* field) -> std::optional<double> {
              if (value.is_none()) return std::nullopt;
              return number_arg(value, field);
            };
            return wrap(self.get_histogram(integer_arg(bins, "bins"), bound(min_score, "min_score"),
                                           bound(max_score, "max_score")));
          },
          "bins"_a = 10, py::kw_only(), "min_score"_a = py::none(), "max_score"_a = py::none())
      .def(
          "upsert_chunk",
          [](const Board& self, py::handle entries, long long first_index, py::handle retries) {
            return wrap(self.upsert_chunk(batch_arg(entries, first_index), first_index,
                                          static_cast<int>(integer_arg(retries, "retries"))));
          },
          "entries"_a, "first_index"_a = 0, "retries"_a = 2)
      .def(
          "trim_to_max_entries",
          [](const Board& self, long long report) {
            return wrap(self.trim_to_max_entries(report));
          },
          "report"_a = 1000);

  declare_time(m);

  py::class_<BlockingClient, std::shared_ptr<BlockingClient>> client(
      m, "Client", "A blocking, pipelined Redis client, safe to share between threads.", guarded());
  {
    py::options signatures;  // the docstring's signature comes from the option table
    signatures.disable_function_signatures();
    client.def(
        py::init([](const py::args& args, const py::kwargs& kwargs) {
          auto arguments = client_arguments(kBlockingClient, args, kwargs);
          auto cache = arguments.enabled_cache();
          py::gil_scoped_release release;  // loading CA files, starting Sentinel's watcher
          return std::make_shared<BlockingClient>(std::move(arguments.client), cache);
        }),
        constructor_doc(kBlockingClient, "", "Options: redis_leaderboard.options.ClientOptions.")
            .c_str());
  }
  client
      .def("ping",
           [](BlockingClient& self) {
             PumpAtExit pump;
             py::gil_scoped_release release;
             return std::get<bool>(self.run(leaderboard::ping()));
           })
      .def(
          "run",
          [](BlockingClient& self, PyOperation& operation) {
            auto taken = operation.take();
            Result result;
            {
              PumpAtExit pump;
              py::gil_scoped_release release;
              result = self.run(std::move(taken));
            }
            return to_python(result);
          },
          "operation"_a)
      .def(
          "run_pipelined",
          [](BlockingClient& self, py::iterable operations, py::function on_result,
             std::size_t window) {
            run_pipelined_from_python(self, std::move(operations), std::move(on_result), window);
          },
          "operations"_a, "on_result"_a, "window"_a = 4)
      .def("execute_command",
           [](BlockingClient& self, py::args args) {
             return execute_command_from_python(
                 args, [&self](std::vector<std::string> argv) { return self.execute_raw(argv); });
           })
      .def("stats", [](const BlockingClient& self) { return stats_dict(self.stats()); })
      .def(
          "address", [](const BlockingClient& self) { return self.options().address(); },
          "Where the client connects: host:port, a Unix socket's path, or 'name' via Sentinel.")
      .def(
          "dedicated",
          [](const BlockingClient& self) {
            py::gil_scoped_release release;
            return std::make_shared<BlockingClient>(self.options());
          },
          "A new client with this one's options (TLS, ACL, Sentinel): for calls that hold a "
          "connection, as reading events does (guards).")

      .def(
          "cache_info",
          [](const BlockingClient& self) -> py::object {
            if (!self.cache_channel()) return py::none();
            return cache_stats_dict(self.cache_channel()->cache()->stats(),
                                    self.cache_channel()->cache()->options());
          },
          "The client-side cache's counters and size, or None if the cache is off.")
      .def("close", &BlockingClient::close, py::call_guard<py::gil_scoped_release>())
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](BlockingClient& self, py::args) { self.close(); })
      .def("__repr__", [](const BlockingClient& self) {
        return "Client(" + self.options().address() + ", db=" + std::to_string(self.options().db) +
               ")";
      });

  py::class_<AsyncCore> async_core(
      m, "AsyncCore", "The asyncio client's core; use redis_leaderboard.asyncio.Client.",
      guarded());
  {
    py::options signatures;  // the docstring's signature comes from the option table
    signatures.disable_function_signatures();
    async_core.def(
        py::init([](const py::args& args, const py::kwargs& kwargs) {
          auto arguments = client_arguments(kAsyncClient, args, kwargs);
          return std::make_unique<AsyncCore>(
              rlb::transport::LoopClient::create(std::move(arguments.client),
                                                 arguments.max_in_flight,
                                                 arguments.max_bytes_in_flight),
              arguments.max_pending, arguments.enabled_cache());
        }),
        constructor_doc(kAsyncClient, "", "Options: redis_leaderboard.options.AsyncClientOptions.")
            .c_str());
  }
  async_core.def("run", &AsyncCore::run, "operation"_a)
      .def("submit", &AsyncCore::submit, "operation"_a, "loop"_a)
      .def("run_pipelined", &AsyncCore::run_pipelined, "operations"_a, "on_result"_a, "window"_a,
           "loop"_a)
      .def("bind", &AsyncCore::bind, "loop"_a)
      .def("close", &AsyncCore::close)
      .def_property_readonly("pending", &AsyncCore::pending)
      .def_property_readonly("closed", &AsyncCore::closed)
      .def("stats",
           [](const AsyncCore& self) {
             py::dict out = stats_dict(self.stats());
             out["calls"] = self.calls();
             return out;
           })
      .def("address", [](const AsyncCore& self) { return self.options().address(); })
      .def(
          "server",
          [](const AsyncCore& self) -> std::optional<py::tuple> {
            auto server = self.server();
            if (!server) return std::nullopt;
            const auto& [endpoint, number] = *server;
            return py::make_tuple(endpoint.host, endpoint.port, endpoint.unix_socket_path, number);
          },
          "(host, port, unix socket path, number) of the connection in place (the number changes "
          "with every connection), or None while not connected.")
      .def(
          "dedicated",
          [](const AsyncCore& self) {
            return std::make_unique<AsyncCore>(
                rlb::transport::LoopClient::create(self.options(), 16), 16);
          },
          "A new core with this one's options (its own connection): for calls "
          "that hold a connection, as reading events does (guards).")
      .def(
          "client_cache",
          [](const AsyncCore& self) -> std::unique_ptr<AsyncClientCache> {
            if (!self.cache_options()) return nullptr;
            ClientOptions options = self.options();
            auto cache = *self.cache_options();
            py::gil_scoped_release release;  // loading CA files, starting Sentinel's watcher
            return std::make_unique<AsyncClientCache>(std::move(options), cache);
          },
          "The client-side cache the core was made with (client_cache=True), its invalidation "
          "connection with this core's options (TLS, ACL, Sentinel, db...): every one of them, "
          "from the one options object; None if the cache is off.");

  // A barrier crosses to Python as (generation, token): its PING is written already.
  using Barrier = connection::MetadataCache::Barrier;
  using BarrierId = std::pair<std::uint64_t, std::uint64_t>;
  auto barrier_id = [](const std::optional<Barrier>& barrier) -> std::optional<BarrierId> {
    if (!barrier) return std::nullopt;
    return BarrierId{barrier->generation, barrier->token};
  };
  auto barrier_of = [](const BarrierId& id) {
    Barrier barrier;
    barrier.generation = id.first;
    barrier.token = id.second;
    return barrier;
  };

  py::class_<AsyncClientCache>(
      m, "ClientCache",
      "The asyncio client's client-side cache of metadata and its invalidation connection "
      "(AsyncCore.client_cache makes one with the core's own options).",
      guarded())
      .def(
          "begin",
          [barrier_id](AsyncClientCache& self, const std::string& prefix) {
            return barrier_id(self.channel.begin_nowait(prefix));
          },
          "prefix"_a, "A barrier written for a read now (never blocks); None: read uncached.")
      .def(
          "needs_setup",
          [](AsyncClientCache& self, const std::string& prefix) {
            return self.channel.needs_setup(prefix);
          },
          "prefix"_a)
      .def(
          "setup",
          [](AsyncClientCache& self, const std::string& prefix) { self.channel.begin(prefix); },
          "prefix"_a, py::call_guard<py::gil_scoped_release>(),
          "Sets the invalidation connection up (blocking: run it on an executor).")
      .def("passed",
           [barrier_of](AsyncClientCache& self, const BarrierId& barrier) {
             return self.channel.cache()->passed(barrier_of(barrier));
           })
      .def("poll",
           [barrier_of](AsyncClientCache& self, const BarrierId& barrier) {
             return self.channel.poll(barrier_of(barrier));
           })
      .def("drain", [](AsyncClientCache& self) { return self.channel.drain(); })
      .def(
          "on_server",
          [](AsyncClientCache& self, const std::string& host, int port,
             const std::string& unix_socket_path) {
            return self.channel.on_server_nowait(
                rlb::transport::Endpoint{host, port, unix_socket_path});
          },
          "host"_a, "port"_a, "unix_socket_path"_a,
          "Whether the invalidation connection is on this server (else it is dropped, the cache "
          "flushed, and set up again where the resolver points); never blocks (False while it "
          "is being set up).")
      .def("fileno", [](AsyncClientCache& self) { return self.channel.fileno(); })
      .def(
          "close", [](AsyncClientCache& self) { self.channel.close(); },
          py::call_guard<py::gil_scoped_release>())
      .def("info", [](const AsyncClientCache& self) {
        return cache_stats_dict(self.channel.cache()->stats(), self.channel.cache()->options());
      });

  // The read's steps cross to Python as ints (CachedRead.RUN, AWAIT_BARRIER, DONE).
  using Step = connection::CachedRead::Step;
  py::class_<connection::CachedRead, std::shared_ptr<connection::CachedRead>> cached_read(
      m, "CachedRead",
      "One read through the client-side cache, its steps and decisions (see "
      "connection/cache.hpp); the asyncio client does its I/O.",
      guarded());
  cached_read
      .def(py::init([barrier_of](AsyncClientCache& cache, PyOperation& operation,
                                 const BarrierId& barrier) {
             if (!operation.operation || !operation.operation->cached_metadata_prefix()) {
               throw py::value_error("not a read the cache serves");
             }
             return connection::CachedRead::make(cache.channel.cache(), operation.take(),
                                                 barrier_of(barrier));
           }),
           "cache"_a, "operation"_a, "barrier"_a)
      .def(
          "next",
          [](connection::CachedRead& self, const py::function& on_barrier_server) {
            return static_cast<int>(
                self.next([&on_barrier_server] { return on_barrier_server().cast<bool>(); }));
          },
          "on_barrier_server"_a,
          "What the driver does next: RUN (operation()), AWAIT_BARRIER (then barrier_passed()) "
          "or DONE (result()). on_barrier_server(): whether the data connection is on the "
          "invalidation connection's server now.")
      .def("operation", [](connection::CachedRead& self) { return wrap(self.operation()); })
      .def("barrier_passed", &connection::CachedRead::barrier_passed, "passed"_a)
      .def("result", [](connection::CachedRead& self) { return to_python(self.result()); });
  cached_read.attr("RUN") = static_cast<int>(Step::Run);
  cached_read.attr("AWAIT_BARRIER") = static_cast<int>(Step::AwaitBarrier);
  cached_read.attr("DONE") = static_cast<int>(Step::Done);

  // The connection core without I/O, for tests: events, bytes and time in; bytes to write,
  // closes and completions out. Times are seconds on an arbitrary clock.
  py::class_<CoreHarness>(m, "ConnectionCore",
                          "The connection core without I/O (for tests): feed it events, bytes "
                          "and time; read what it wants written, closed and completed.",
                          guarded())
      .def(py::init([](const py::kwargs& options) {
             auto arguments = client_arguments(kAsyncClient, py::args(), options);
             return std::make_unique<CoreHarness>(std::move(arguments.client),
                                                  arguments.max_in_flight,
                                                  arguments.max_bytes_in_flight);
           }),
           "The asyncio client's keyword options (only those of the handshake and the window "
           "matter: username, password, db, client_name, socket_timeout, max_reply_bytes, "
           "max_in_flight, max_bytes_in_flight).")
      .def(
          "submit",
          [](CoreHarness& self, std::uint64_t id, PyOperation& operation, double started) {
            self.core.submit(id, operation.take(), at(started));
          },
          "id"_a, "operation"_a, "started"_a = 0.0)
      .def(
          "submit_raw",
          [](CoreHarness& self, std::uint64_t id, py::bytes wire, std::size_t count,
             double started) { self.core.submit_raw(id, std::string(wire), count, at(started)); },
          "id"_a, "wire"_a, "count"_a, "started"_a = 0.0)
      .def("cancel", [](CoreHarness& self, std::uint64_t id) { self.core.cancel(id); })
      .def(
          "assume_scripts_loaded", [](CoreHarness& self) { self.core.assume_scripts_loaded(); },
          "For tests of other behaviour: treat every script as one the server has run for this "
          "connection, so no request holds the ones behind it until its reply.")
      .def("connected", [](CoreHarness& self, double now) { self.core.connected(at(now)); })
      .def("connect_failed",
           [](CoreHarness& self, const std::string& message) {
             self.core.connect_failed(std::make_exception_ptr(ConnectionError(message)));
           })
      .def("received",
           [](CoreHarness& self, py::bytes data, double now) {
             std::string bytes(data);
             self.core.received(bytes.data(), bytes.size(), at(now));
           })
      .def("wrote", [](CoreHarness& self) { self.core.wrote(); })
      .def("lost",
           [](CoreHarness& self, const std::string& message, double now) {
             self.core.lost(std::make_exception_ptr(ConnectionError(message)), at(now));
           })
      .def("tick", [](CoreHarness& self, double now) { self.core.tick(at(now)); })
      .def("abort",
           [](CoreHarness& self, const std::string& message) {
             self.core.abort(std::make_exception_ptr(ConnectionError(message)));
           })
      .def("take_write", [](CoreHarness& self) { return py::bytes(self.core.take_write()); })
      .def("take_close", [](CoreHarness& self) { return self.core.take_close(); })
      .def(
          "take_completions",
          [](CoreHarness& self) {
            py::list out;
            for (auto& completion : self.core.take_completions()) {
              py::object value;
              if (completion.error) {
                value = exception_object(completion.error);
              } else if (!completion.replies.empty()) {
                py::list replies;
                for (const auto& reply : completion.replies) {
                  replies.append(reply_to_python(reply, true));
                }
                value = replies;
              } else {
                value = to_python(completion.result);
              }
              out.append(py::make_tuple(completion.id, value));
            }
            return out;
          },
          "[(id, result, raw replies or exception instance), ...] finished since the last call.")
      .def_property_readonly(
          "next_deadline",
          [](const CoreHarness& self) -> std::optional<double> {
            auto deadline = self.core.next_deadline();
            if (!deadline) return std::nullopt;
            return std::chrono::duration<double>(deadline->time_since_epoch()).count();
          })
      .def_property_readonly("is_connected",
                             [](const CoreHarness& self) { return self.core.connected(); })
      .def_property_readonly("wants_connection",
                             [](const CoreHarness& self) { return self.core.wants_connection(); })
      .def_property_readonly("outstanding",
                             [](const CoreHarness& self) { return self.core.outstanding(); })
      .def("stats", [](const CoreHarness& self) { return stats_dict(self.counters.snapshot()); });

  declare_cluster(m);
#ifdef RLB_FAST_METHODS
  for (auto& def : fast_board_methods) put_fast_method(m.attr("Board"), &def);
  for (auto& def : fast_async_core_methods) put_fast_method(async_core, &def);
  for (auto& def : fast_async_cluster_core_methods) {
    put_fast_method(m.attr("AsyncClusterCore"), &def);
  }
#endif
  declare_scripts(m);

  m.def("option_table", &option_table,
        "Every client option: [(name, default, positional, (the _core classes that take it, "
        "...)), ...], in ClientOptions' order. The clients' constructors read their arguments "
        "through this one table; redis_leaderboard.options checks its dataclasses against it.");
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

  // What redis_leaderboard.observability and its log pump read (connection/observer.hpp).
  m.def(
      "observed",
      [] {
        py::dict out = stats_dict(connection::process_stats());
        const auto counts = connection::signal_counts();
        for (std::size_t i = 0; i < connection::kSignals; ++i) {
          out[connection::signal_name(static_cast<connection::Signal>(i))] = counts[i];
        }
        out["open_connections"] = connection::open_connections();
        return out;
      },
      "The process's totals: every client's counters (round_trips, commands, connections, "
      "reconnects; live clients and closed ones), each observed event's count "
      "(connection_lost, reconnected, failover, ...) and open_connections (now).");
  m.def("records_fd", &connection::records_fd,
        "The pipe a byte arrives on when observed events wait in take_records() (the first "
        "call starts keeping them).");
  m.def(
      "take_records",
      [] {
        // With the GIL held: it never waits (a short mutex no holder of the GIL takes, a
        // non-blocking pipe), and the pump thread that calls it must not be left without the
        // GIL at interpreter exit: re-taking it there ends the thread (pthread_exit), and that
        // unwinding through gil_scoped_release's destructor terminated the process.
        std::uint64_t dropped = 0;
        const std::vector<connection::Record> records = connection::take_records(dropped);
        py::list out;
        for (const auto& record : records) {
          out.append(
              py::make_tuple(connection::signal_name(record.signal),
                             py::reinterpret_steal<py::str>(PyUnicode_DecodeUTF8(
                                 record.detail.data(),
                                 static_cast<Py_ssize_t>(record.detail.size()), "replace"))));
        }
        return py::make_tuple(out, dropped);
      },
      "([(event, detail), ...], dropped): the events observed since the last call, oldest "
      "first, and how many were dropped (more than 1,024 waiting).");
}
