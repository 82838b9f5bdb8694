// Calls built by name, for the board types written in Python alone (leagues, tournaments, team
// boards): a script's declared call (leaderboard/script_table.hpp) from a dict of its keys and
// arguments, and the guards every board type shares (leaderboard/operations.hpp's Guards),
// whose words a call sends. pybind11 declarations.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings/conversions.hpp"
#include "bindings/guarded.hpp"
#include "errors.hpp"
#include "leaderboard/script_call.hpp"
#include "leaderboard/script_table.hpp"
#include "leaderboard/script_words.hpp"

namespace py = pybind11;
using namespace py::literals;

namespace rlb::bindings {
namespace {

using leaderboard::Command;
using leaderboard::Guards;
using leaderboard::script_call::Family;
namespace table = leaderboard::table;

[[noreturn]] void wrong(const table::Call& call, const std::string& what) {
  throw py::type_error(std::string(call.name) + ": " + what);
}

// One argument's text: a str as it is, anything else a finite number (as the guide's
// float(score): number_arg's checks), sent as a score is.
std::string scalar(py::handle value, const char* name) {
  if (PyUnicode_Check(value.ptr())) return utf8(value);
  const double number = number_arg(value, name);
  if (!std::isfinite(number)) throw InvalidArgument(std::string(name) + " must be a finite number");
  return leaderboard::format_score(number);
}

// A list's elements: a list or tuple of arguments, or a mapping (metadata: field, value, ...).
void add_rest(std::vector<std::string>& argv, py::handle value, const table::Param& param,
              const table::Call& call) {
  if (PyList_Check(value.ptr()) || PyTuple_Check(value.ptr())) {
    for (py::handle item : value) argv.push_back(scalar(item, param.name));
    return;
  }
  if (value.is_none() || PyDict_Check(value.ptr()) ||
      (PyMapping_Check(value.ptr()) && !PyUnicode_Check(value.ptr()) &&
       !PyBytes_Check(value.ptr()))) {
    for (auto& [field, text] : metadata_arg(value)) {
      argv.push_back(std::move(field));
      argv.push_back(std::move(text));
    }
    return;
  }
  wrong(call, std::string(param.name) + " must be a list or a mapping, not " +
                  Py_TYPE(value.ptr())->tp_name);
}

// One declared call of a board, prepared once: its entry in the table, its name in errors, its
// board's family, how often it may be resent, and the values of the keys and arguments fixed for
// the board (its keys, its options), already as text. Each call of it gives the others.
class Prepared {
 public:
  Prepared(const table::Call& call, std::string what, std::shared_ptr<const Family> family,
           int resends, const py::dict& fixed)
      : call_(call), what_(std::move(what)), family_(std::move(family)), resends_(resends) {
    const std::size_t count = call.key_count + call.arg_count;
    names_.reserve(count);
    fixed_.resize(count);
    Py_ssize_t used = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const table::Param& param = this->param(i);
      py::str name(param.name);
      PyUnicode_InternInPlace(&name.ptr());  // each call's lookup: a pointer, its hash kept
      PyObject* value = PyDict_GetItem(fixed.ptr(), name.ptr());  // borrowed
      if (value != nullptr) {
        ++used;
        fixed_[i].emplace();
        convert(i, value, *fixed_[i]);
      }
      names_.push_back(std::move(name));
    }
    check_unknown(fixed, used, true);
  }

  // The call with the values `values` names (every declared one but the fixed, exactly once;
  // an optional one may be left out).
  std::unique_ptr<leaderboard::Operation> operator()(const py::dict& values,
                                                     int resends = -1) const {
    Command command{call_.script, {}};
    auto& argv = command.argv;
    argv.reserve(2 + names_.size());
    argv.emplace_back();  // numkeys, below
    std::string user;
    Py_ssize_t used = 0;
    bool open = true;  // no optional one left out yet
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (i == call_.key_count) {
        argv[0] = std::to_string(argv.size() - 1);
        if (call_.word[0] != '\0') argv.emplace_back(call_.word);
      }
      const std::size_t at = argv.size();
      if (fixed_[i]) {
        argv.insert(argv.end(), fixed_[i]->begin(), fixed_[i]->end());
      } else if (PyObject* value = PyDict_GetItem(values.ptr(), names_[i].ptr())) {
        ++used;
        convert(i, value, argv);
      } else if (param(i).kind == table::Kind::Optional) {
        open = false;
        continue;
      } else {
        wrong(call_, std::string("missing ") + (i < call_.key_count ? "key " : "argument ") +
                         param(i).name);
      }
      if (!open) wrong(call_, std::string(param(i).name) + " given after one left out");
      if (i >= call_.key_count &&
          call_.user_arg == static_cast<std::int16_t>(i - call_.key_count)) {
        user = argv[at];
      }
    }
    if (call_.key_count == names_.size()) {
      argv[0] = std::to_string(argv.size() - 1);
      if (call_.word[0] != '\0') argv.emplace_back(call_.word);
    }
    check_unknown(values, used, false);
    return std::make_unique<leaderboard::script_call::DeclaredCall>(
        call_, std::move(command), what_, family_, resends < 0 ? resends_ : resends,
        std::move(user));
  }

 private:
  const table::Param& param(std::size_t i) const {
    return i < call_.key_count ? call_.keys[i] : call_.args[i - call_.key_count];
  }

  void convert(std::size_t i, PyObject* value, std::vector<std::string>& argv) const {
    const table::Param& param = this->param(i);
    if (param.kind == table::Kind::Rest) {
      add_rest(argv, value, param, call_);
    } else {
      argv.push_back(scalar(value, param.name));
    }
  }

  // TypeError naming a value of `values` that is no declared key or argument (or, unless
  // `fixing`, a fixed one given again), unless all `used` of them were.
  void check_unknown(const py::dict& values, Py_ssize_t used, bool fixing) const {
    if (used == PyDict_Size(values.ptr())) return;
    for (auto item : values) {
      const std::string name = py::str(item.first);
      bool known = false;
      for (std::size_t i = 0; i < names_.size(); ++i) {
        known |= name == param(i).name && (fixing || !fixed_[i]);
      }
      if (!known) wrong(call_, "declares no key or argument " + name + " (or it is fixed)");
    }
  }

  const table::Call& call_;
  std::string what_;
  std::shared_ptr<const Family> family_;
  int resends_;
  std::vector<py::str> names_;  // each param's, interned
  std::vector<std::optional<std::vector<std::string>>> fixed_;
};

const table::Call& declared(const std::string& name) {
  const table::Call* call = table::find(name);
  if (call == nullptr) throw py::value_error("no script call declares its reply: " + name);
  return *call;
}

}  // namespace

void declare_scripts(py::module_& m) {
  py::class_<Family, std::shared_ptr<Family>>(
      m, "Scripts",
      "One board's calls of its scripts, built by name (script_table.hpp): what they share.",
      guarded())
      .def(py::init([](std::string noun, std::string board, std::string config, py::handle tiebreak,
                       py::handle order, bool unsettled) {
             auto family = std::make_shared<Family>();
             family->noun = std::move(noun);
             family->board = std::move(board);
             family->config = std::move(config);
             family->tiebreak = tiebreak_columns_arg(tiebreak);
             family->order = leaderboard::parse_order(py::cast<std::string>(order));
             family->unsettled = unsettled;
             return family;
           }),
           "noun"_a, "board"_a, "config"_a, py::kw_only(), "tiebreak"_a = py::none(),
           "order"_a = "desc", "unsettled"_a = false)
      .def(
          "call",
          [](std::shared_ptr<Family> self, const std::string& name, std::string what,
             const py::dict& values, int resends) {
            if (resends < 0) throw py::value_error("resends must be at least 0");
            const Prepared call(declared(name), std::move(what), std::move(self), resends,
                                py::dict());
            return wrap(call(values));
          },
          "name"_a, "what"_a, "values"_a, py::kw_only(), "resends"_a = 0,
          "The declared call `name` (\"team.submit\") with the keys and arguments `values` "
          "names; the operation's result is its declared reply. `what` names it in errors.")
      .def(
          "prepare",
          [](std::shared_ptr<Family> self, const std::string& name, std::string what,
             const py::dict& fixed, int resends) {
            if (resends < 0) throw py::value_error("resends must be at least 0");
            return Prepared(declared(name), std::move(what), std::move(self), resends, fixed);
          },
          "name"_a, "what"_a, "fixed"_a, py::kw_only(), "resends"_a = 0,
          "The declared call `name`, its values `fixed` (the board's keys and options) made text "
          "once: calling it with the others gives the operation.");

  py::class_<Prepared>(m, "ScriptCall", "A board's declared call, prepared (Scripts.prepare).",
                       guarded())
      .def(
          "__call__",
          [](const Prepared& self, const py::dict& values, int resends) {
            return wrap(self(values, resends));
          },
          "values"_a, "resends"_a = -1,
          "The operation with the values not fixed; `resends`: how often it may be resent after "
          "a lost reply (-1: as prepared).");

  py::class_<Guards>(m, "Guards", "The guards of a board's writes (as a plain board's), validated.",
                     guarded())
      .def(py::init([](py::handle submission_ttl, py::handle rate_limit, py::handle events,
                       py::handle events_maxlen, py::handle score_range, py::handle max_increment) {
             Guards guards = guards_arg(submission_ttl, rate_limit, events, events_maxlen,
                                        score_range, max_increment);
             leaderboard::validate_guards(guards);
             return guards;
           }),
           py::kw_only(), "submission_ttl"_a = 86400, "rate_limit"_a = py::none(),
           "events"_a = false, "events_maxlen"_a = 10000, "score_range"_a = py::none(),
           "max_increment"_a = py::none())
      .def_property_readonly("submission_ttl",
                             [](const Guards& self) { return self.submission_ttl; })
      .def_property_readonly("rate_limit",
                             [](const Guards& self) { return rate_limit_value(self); })
      .def_property_readonly("events", [](const Guards& self) { return self.events; })
      .def_property_readonly("events_maxlen", [](const Guards& self) { return self.events_maxlen; })
      .def_property_readonly("score_range",
                             [](const Guards& self) { return score_range_value(self); })
      .def_property_readonly("max_increment", [](const Guards& self) { return self.max_increment; })
      .def("status_text", &leaderboard::guards_status_text,
           "The guards as an 'OPTIONS ...' refusal names them.")
      .def(
          "write_words",
          [](const Guards& self, const std::string& scope, const std::string& events_stream,
             const std::string& user_id, std::optional<std::string> submission_id) {
            leaderboard::require_submission_id(submission_id);
            std::string words;
            std::vector<std::string> keys;
            leaderboard::add_guard_words(words, keys, self, scope, events_stream, user_id,
                                         submission_id);
            return py::make_tuple(words.empty() ? words : words.substr(1), keys);
          },
          "scope"_a, "events_stream"_a, "user_id"_a, "submission_id"_a = py::none(),
          "A score write's guard words (lib/guards.lua) and the keys they name, in order: the "
          "submission id's record <scope>:submission:<id> (with this call's token), the user's "
          "rate window <scope>:rate:<user>, the events stream.")
      .def(
          "limit_words",
          [](const Guards& self) {
            const std::string words = leaderboard::limit_words(self);
            return words.empty() ? words : words.substr(1);
          },
          "The score limits' words, keyless ('range:<min>:<max> maxinc:<n>', or '').")
      .def(
          "rule_words",
          [](const Guards& self) {
            return leaderboard::limit_words(self) + leaderboard::guard_rule_words(self);
          },
          "The score limits', rate limit's and events' words without their keys (' range:...', "
          "...; '' for none): a league's or a tournament's write rule, after its mode.")
      .def(
          "event_words",
          [](const Guards& self) {
            if (!self.events) return std::string();
            return leaderboard::word::text(
                leaderboard::word::events{std::to_string(self.events_maxlen), ""});
          },
          "'' or 'events:<maxlen>': the words of a change that is not a score write.");

  m.def("call_token", &leaderboard::new_call_token,
        "A new call token: one per call, the same in each of its sendings, so that a script "
        "tells the call's own resend from another call (a league's settlement).");
  m.def(
      "read_events",
      [](std::string stream, std::string last_id, py::handle count, py::handle block) {
        std::optional<double> seconds;
        if (!block.is_none()) seconds = number_arg(block, "block");
        return wrap(leaderboard::read_stream_events(std::move(stream), std::move(last_id),
                                                    integer_arg(count, "count"), seconds));
      },
      "stream"_a, "last_id"_a = "$", "count"_a = 100, "block"_a = py::none(),
      "XREAD of the change events of `stream` after `last_id` (as Board.read_events).");
}

}  // namespace rlb::bindings
