// Leagues, tournaments and team boards (leaderboard/league.hpp, tournament.hpp, team.hpp):
// pybind11 declarations. Each operation method returns the operation, whose result (a
// LeagueReply, made a dict by to_python) is what running it gives.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "bindings/conversions.hpp"
#include "bindings/guarded.hpp"
#include "errors.hpp"
#include "leaderboard/league.hpp"
#include "leaderboard/team.hpp"
#include "leaderboard/tournament.hpp"

namespace py = pybind11;
using namespace py::literals;

namespace rlb::bindings {
namespace {

using leaderboard::Cutoff;
using leaderboard::League;
using leaderboard::LeaguePeriod;

// A cutoff: an int is a count, a float a fraction of the cohort.
Cutoff cutoff_arg(py::handle value, const char* what) {
  if (PyBool_Check(value.ptr())) {
    throw py::type_error(std::string(what) + " must be an int (a count) or a float (a fraction)");
  }
  if (PyLong_Check(value.ptr()))
    return Cutoff{false, static_cast<double>(integer_arg(value, what))};
  if (PyFloat_Check(value.ptr())) return Cutoff{true, number_arg(value, what)};
  throw py::type_error(std::string(what) +
                       " must be an int (a count) or a float (a fraction), not " +
                       std::string(Py_TYPE(value.ptr())->tp_name));
}

std::string text_arg(py::handle value, const char* what) {
  if (!PyUnicode_Check(value.ptr())) {
    throw py::type_error(std::string(what) + " must be a str, not " +
                         Py_TYPE(value.ptr())->tp_name);
  }
  return value.cast<std::string>();
}

LeaguePeriod period_arg(py::handle value) {
  auto tuple = value.cast<py::tuple>();
  if (tuple.size() != 4) throw py::type_error("a period is (id, start ms, expire ms, end ms)");
  return LeaguePeriod{text_arg(tuple[0], "period"), integer_arg(tuple[1], "start"),
                      integer_arg(tuple[2], "expire"), integer_arg(tuple[3], "end")};
}

}  // namespace

void declare_league(py::module_& m) {
  py::class_<League>(m, "League", "One partition of a league; builds validated operations.",
                     guarded())
      .def(py::init([](std::string base, py::handle tiers, py::handle cohort_size,
                       py::handle promote, py::handle demote, bool demote_idle, py::handle mode,
                       py::handle order, py::handle ties, py::handle events_maxlen,
                       py::handle submission_ttl, py::handle score_range, py::handle max_increment,
                       py::handle tiebreak, py::handle rate_limit) {
             leaderboard::Guards limits;
             score_limits_arg(score_range, max_increment, limits);
             rate_limit_arg(rate_limit, limits);
             return League(std::move(base), integer_arg(tiers, "tiers"),
                           integer_arg(cohort_size, "cohort_size"), cutoff_arg(promote, "promote"),
                           cutoff_arg(demote, "demote"), demote_idle,
                           leaderboard::parse_write_mode(text_arg(mode, "mode")),
                           leaderboard::parse_order(text_arg(order, "order")),
                           leaderboard::parse_ties(text_arg(ties, "ties")),
                           integer_arg(events_maxlen, "events_maxlen"),
                           number_arg(submission_ttl, "submission_ttl"), limits,
                           tiebreak_columns_arg(tiebreak));
           }),
           "base"_a, py::kw_only(), "tiers"_a, "cohort_size"_a, "promote"_a, "demote"_a,
           "demote_idle"_a, "mode"_a, "order"_a, "ties"_a, "events_maxlen"_a = 100000,
           "submission_ttl"_a = 86400, "score_range"_a = py::none(), "max_increment"_a = py::none(),
           "tiebreak"_a = py::none(), "rate_limit"_a = py::none())
      .def_property_readonly("base", &League::base)
      .def("cohort_key", &League::cohort_key, "period"_a, "cohort"_a)
      .def(
          "read_events",
          [](const League& self, std::string last_id, py::handle count, py::handle block) {
            std::optional<double> seconds;
            if (!block.is_none()) seconds = number_arg(block, "block");
            return wrap(leaderboard::read_stream_events(self.base() + ":events", std::move(last_id),
                                                        integer_arg(count, "count"), seconds));
          },
          "last_id"_a = "$", "count"_a = 100, "block"_a = py::none(),
          "The settlements after `last_id` on this partition's stream (as Board.read_events).")
      .def(
          "submit",
          [](const League& self, py::handle period, py::handle user_id, py::handle score,
             py::handle metadata, py::handle bracket, py::handle submission_id, py::handle retries,
             py::handle tiebreak) {
            std::optional<std::string> id;
            if (!submission_id.is_none()) id = text_arg(submission_id, "submission_id");
            if (!tiebreak.is_none() && self.tiebreak().empty()) {
              throw py::value_error("tiebreak values for a league without tie-break columns");
            }
            return wrap(self.submit(period_arg(period), user_id_arg(user_id),
                                    number_arg(score, "score"), metadata_arg(metadata),
                                    text_arg(bracket, "bracket"), std::move(id),
                                    static_cast<int>(integer_arg(retries, "retries")),
                                    tiebreak_values_arg(tiebreak, self.tiebreak())));
          },
          "period"_a, "user_id"_a, "score"_a, "metadata"_a, "bracket"_a, "submission_id"_a,
          "retries"_a, "tiebreak"_a = py::none())
      .def(
          "join",
          [](const League& self, py::handle period, py::handle user_id, py::handle bracket) {
            return wrap(
                self.join(period_arg(period), user_id_arg(user_id), text_arg(bracket, "bracket")));
          },
          "period"_a, "user_id"_a, "bracket"_a)
      .def(
          "hiding",
          [](const League& self, const std::string& op, py::handle period, py::handle user_id,
             py::handle bracket) {
            if (op != "hide" && op != "unhide" && op != "hidden" && op != "is_hidden") {
              throw py::value_error("op must be 'hide', 'unhide', 'hidden' or 'is_hidden'");
            }
            return wrap(self.hiding(op.c_str(), period_arg(period), user_id_arg(user_id),
                                    text_arg(bracket, "bracket")));
          },
          "op"_a, "period"_a, "user_id"_a = "", "bracket"_a = "")
      .def(
          "close",
          [](const League& self, py::handle period) {
            return wrap(self.close(period_arg(period)));
          },
          "period"_a)
      .def(
          "settle",
          [](const League& self, py::handle period, py::handle cohort) {
            return wrap(self.settle(period_arg(period), integer_arg(cohort, "cohort")));
          },
          "period"_a, "cohort"_a)
      .def(
          "standings",
          [](const League& self, py::handle period, py::handle user_id, bool check) {
            return wrap(self.standings(period_arg(period), user_id_arg(user_id), check));
          },
          "period"_a, "user_id"_a, "check"_a)
      .def(
          "tier_of",
          [](const League& self, py::handle period, py::handle user_id, bool check) {
            return wrap(self.tier_of(period_arg(period), user_id_arg(user_id), check));
          },
          "period"_a, "user_id"_a, "check"_a)
      .def(
          "tiers",
          [](const League& self, py::handle period, bool check) {
            return wrap(self.tiers(period_arg(period), check));
          },
          "period"_a, "check"_a)
      .def(
          "results",
          [](const League& self, py::handle period, py::handle user_id) {
            return wrap(self.results(period_arg(period), user_id_arg(user_id)));
          },
          "period"_a, "user_id"_a);
}

// Tournaments (leaderboard/tournament.hpp).
namespace {

using leaderboard::Tournament;
using leaderboard::TournamentPeriod;

std::optional<long long> optional_integer(py::handle value, const char* what) {
  if (value.is_none()) return std::nullopt;
  return integer_arg(value, what);
}

// (id, start ms, window end ms, next start ms, expire ms, now ms or None, named: 0, 1 or 2)
TournamentPeriod tournament_period_arg(py::handle value) {
  auto tuple = value.cast<py::tuple>();
  if (tuple.size() != 7) {
    throw py::type_error("a period is (id, start, window end, next start, expire, now, named)");
  }
  return TournamentPeriod{text_arg(tuple[0], "period"),
                          integer_arg(tuple[1], "start"),
                          integer_arg(tuple[2], "window end"),
                          integer_arg(tuple[3], "next start"),
                          integer_arg(tuple[4], "expire"),
                          optional_integer(tuple[5], "now"),
                          static_cast<int>(integer_arg(tuple[6], "named"))};
}

}  // namespace

void declare_tournament(py::module_& m) {
  py::class_<Tournament>(m, "Tournament", "A tournament; builds validated operations.", guarded())
      .def(py::init([](std::string key, py::handle max_size, bool join_required,
                       py::handle max_attempts, py::handle mode, py::handle order, py::handle ties,
                       py::handle submission_ttl, py::handle score_range, py::handle max_increment,
                       py::handle tiebreak, py::handle rate_limit, py::handle events,
                       py::handle events_maxlen) {
             leaderboard::Guards limits;
             score_limits_arg(score_range, max_increment, limits);
             rate_limit_arg(rate_limit, limits);
             events_arg(events, events_maxlen, limits);
             return Tournament(std::move(key), optional_integer(max_size, "max_size"),
                               join_required, optional_integer(max_attempts, "max_attempts"),
                               leaderboard::parse_write_mode(text_arg(mode, "mode")),
                               leaderboard::parse_order(text_arg(order, "order")),
                               leaderboard::parse_ties(text_arg(ties, "ties")),
                               number_arg(submission_ttl, "submission_ttl"), limits,
                               tiebreak_columns_arg(tiebreak));
           }),
           "key"_a, py::kw_only(), "max_size"_a, "join_required"_a, "max_attempts"_a, "mode"_a,
           "order"_a, "ties"_a, "submission_ttl"_a = 86400, "score_range"_a = py::none(),
           "max_increment"_a = py::none(), "tiebreak"_a = py::none(), "rate_limit"_a = py::none(),
           "events"_a = false, "events_maxlen"_a = 10000)
      .def_property_readonly("key", &Tournament::key)
      .def(
          "read_events",
          [](const Tournament& self, std::string last_id, py::handle count, py::handle block) {
            std::optional<double> seconds;
            if (!block.is_none()) seconds = number_arg(block, "block");
            return wrap(self.read_events(std::move(last_id), integer_arg(count, "count"), seconds));
          },
          "last_id"_a = "$", "count"_a = 100, "block"_a = py::none(),
          "The events after `last_id` on the tournament's stream (as Board.read_events).")
      .def("board_key", &Tournament::board_key, "period"_a)
      .def(
          "submit",
          [](const Tournament& self, py::handle period, py::handle user_id, py::handle score,
             py::handle metadata, py::handle submission_id, py::handle retries,
             py::handle tiebreak) {
            std::optional<std::string> id;
            if (!submission_id.is_none()) id = text_arg(submission_id, "submission_id");
            if (!tiebreak.is_none() && self.tiebreak().empty()) {
              throw py::value_error("tiebreak values for a tournament without tie-break columns");
            }
            return wrap(self.submit(tournament_period_arg(period), user_id_arg(user_id),
                                    number_arg(score, "score"), metadata_arg(metadata),
                                    std::move(id),
                                    static_cast<int>(integer_arg(retries, "retries")),
                                    tiebreak_values_arg(tiebreak, self.tiebreak())));
          },
          "period"_a, "user_id"_a, "score"_a, "metadata"_a, "submission_id"_a, "retries"_a,
          "tiebreak"_a = py::none())
      .def(
          "hiding",
          [](const Tournament& self, const std::string& op, py::handle period, py::handle user_id) {
            if (op != "hide" && op != "unhide" && op != "hidden" && op != "is_hidden") {
              throw py::value_error("op must be 'hide', 'unhide', 'hidden' or 'is_hidden'");
            }
            return wrap(
                self.hiding(op.c_str(), tournament_period_arg(period), user_id_arg(user_id)));
          },
          "op"_a, "period"_a, "user_id"_a = "")
      .def(
          "join",
          [](const Tournament& self, py::handle period, py::handle user_id) {
            return wrap(self.join(tournament_period_arg(period), user_id_arg(user_id)));
          },
          "period"_a, "user_id"_a)
      .def(
          "add_attempts",
          [](const Tournament& self, py::handle period, py::handle user_id, py::handle n) {
            return wrap(self.add_attempts(tournament_period_arg(period), user_id_arg(user_id),
                                          integer_arg(n, "n")));
          },
          "period"_a, "user_id"_a, "n"_a)
      .def(
          "status",
          [](const Tournament& self, py::handle period, py::handle user_id) {
            return wrap(self.status(tournament_period_arg(period), user_id_arg(user_id)));
          },
          "period"_a, "user_id"_a);
}

void declare_team(py::module_& m) {
  using leaderboard::TeamBoard;
  py::class_<TeamBoard>(m, "TeamBoard", "A team board; builds validated operations.", guarded())
      .def(py::init([](std::string key, py::handle aggregate, py::handle order,
                       py::handle submission_ttl, py::handle rate_limit, py::handle events,
                       py::handle events_maxlen, py::handle score_range, py::handle max_increment) {
             return TeamBoard(std::move(key),
                              leaderboard::parse_team_aggregate(text_arg(aggregate, "aggregate")),
                              leaderboard::parse_order(text_arg(order, "order")),
                              guards_arg(submission_ttl, rate_limit, events, events_maxlen,
                                         score_range, max_increment));
           }),
           "key"_a, py::kw_only(), "aggregate"_a, "order"_a, "submission_ttl"_a = 86400,
           "rate_limit"_a = py::none(), "events"_a = false, "events_maxlen"_a = 10000,
           "score_range"_a = py::none(), "max_increment"_a = py::none())
      .def_property_readonly("key", &TeamBoard::key)
      // The guards (as a plain board's).
      .def_property_readonly("submission_ttl",
                             [](const TeamBoard& self) { return self.guards().submission_ttl; })
      .def_property_readonly("rate_limit",
                             [](const TeamBoard& self) { return rate_limit_value(self.guards()); })
      .def_property_readonly("events", [](const TeamBoard& self) { return self.guards().events; })
      .def_property_readonly("events_maxlen",
                             [](const TeamBoard& self) { return self.guards().events_maxlen; })
      .def_property_readonly("score_range",
                             [](const TeamBoard& self) { return score_range_value(self.guards()); })
      .def_property_readonly("max_increment",
                             [](const TeamBoard& self) { return self.guards().max_increment; })
      .def(
          "read_events",
          [](const TeamBoard& self, std::string last_id, py::handle count, py::handle block) {
            std::optional<double> seconds;
            if (!block.is_none()) seconds = number_arg(block, "block");
            return wrap(self.read_events(std::move(last_id), integer_arg(count, "count"), seconds));
          },
          "last_id"_a = "$", "count"_a = 100, "block"_a = py::none())
      .def(
          "submit",
          [](const TeamBoard& self, py::handle member, py::handle score, py::handle metadata,
             py::handle team, py::handle mode, py::handle submission_id, py::handle retries) {
            std::optional<std::string> named;
            if (!team.is_none()) named = user_id_arg(team);
            std::optional<std::string> id;
            if (!submission_id.is_none()) id = text_arg(submission_id, "submission_id");
            return wrap(
                self.submit(user_id_arg(member), number_arg(score, "score"), metadata_arg(metadata),
                            std::move(named), leaderboard::parse_write_mode(text_arg(mode, "mode")),
                            std::move(id), static_cast<int>(integer_arg(retries, "retries"))));
          },
          "member"_a, "score"_a, "metadata"_a, "team"_a, "mode"_a, "submission_id"_a = py::none(),
          "retries"_a = 2)
      .def(
          "move",
          [](const TeamBoard& self, py::handle member, py::handle team) {
            return wrap(self.move(user_id_arg(member), user_id_arg(team)));
          },
          "member"_a, "team"_a)
      .def(
          "remove",
          [](const TeamBoard& self, py::handle member) {
            return wrap(self.remove(user_id_arg(member)));
          },
          "member"_a)
      .def(
          "members",
          [](const TeamBoard& self, py::handle team) {
            return wrap(self.members(user_id_arg(team)));
          },
          "team"_a)
      .def(
          "team_of",
          [](const TeamBoard& self, py::handle member) {
            return wrap(self.team_of(user_id_arg(member)));
          },
          "member"_a)
      .def(
          "hiding",
          [](const TeamBoard& self, const std::string& op, py::handle member) {
            if (op != "hide" && op != "unhide" && op != "hidden" && op != "is_hidden") {
              throw py::value_error("op must be 'hide', 'unhide', 'hidden' or 'is_hidden'");
            }
            return wrap(
                self.hiding(op.c_str(), op == "hidden" ? std::string() : user_id_arg(member)));
          },
          "op"_a, "member"_a = "");
}

}  // namespace rlb::bindings
