#include "leaderboard/league.hpp"

#include <cmath>
#include <functional>
#include <string_view>
#include <tuple>
#include <utility>

#include "errors.hpp"
#include "leaderboard/script_call.hpp"
#include "leaderboard/script_calls.hpp"
#include "leaderboard/script_words.hpp"

namespace rlb::leaderboard {
namespace {

using script_call::Call;
using script_call::Caller;
using script_call::integer_of;
using script_call::metadata_of;
using script_call::part;
using script_call::require_user_id;
using script_call::score_of;
using script_call::strings_of;
using script_call::text_of;
using script_call::tiebreak_record;
using script_call::unexpected;

Cutoff checked(Cutoff cutoff, const char* what, long long cohort_size) {
  if (cutoff.fraction) {
    if (!(cutoff.value >= 0 && cutoff.value <= 1)) {
      throw InvalidArgument(std::string(what) + " as a fraction must be from 0.0 to 1.0");
    }
  } else if (!(cutoff.value >= 0 && cutoff.value <= static_cast<double>(cohort_size) &&
               cutoff.value == std::floor(cutoff.value))) {
    throw InvalidArgument(std::string(what) + " as a count must be from 0 to cohort_size (" +
                          std::to_string(cohort_size) + ")");
  }
  return cutoff;
}

}  // namespace

std::string Cutoff::word() const {
  if (fraction) return "f" + format_score(value);
  return std::to_string(static_cast<long long>(value));
}

League::League(std::string base, long long tiers, long long cohort_size, Cutoff promote,
               Cutoff demote, bool demote_idle, WriteMode mode, Order order, Ties ties,
               long long events_maxlen, double submission_ttl, Guards limits,
               std::vector<TiebreakColumn> tiebreak)
    : base_(std::move(base)),
      tiers_(tiers),
      cohort_size_(cohort_size),
      demote_idle_(demote_idle),
      mode_(mode),
      order_(order),
      ties_(ties),
      events_maxlen_(events_maxlen),
      submission_ttl_(require_submission_ttl(submission_ttl)) {
  if (base_.empty()) throw InvalidArgument("key must not be empty");
  // The columns are a cohort board's: a Board validates them and names the tie rule.
  const Board board(base_, Board::kUnlimited, order, ties, {}, std::nullopt, std::nullopt,
                    std::move(tiebreak));
  tiebreak_ = board.tiebreak();
  ties_word_ = board.ties_word();
  limits.submission_ttl = submission_ttl_;  // checked above
  validate_guards(limits);
  limits_.score_min = limits.score_min;
  limits_.score_max = limits.score_max;
  limits_.max_increment = limits.max_increment;
  limits_.rate_max = limits.rate_max;  // a player's writes, over the league's periods
  limits_.rate_per = limits.rate_per;
  if (tiers < 1 || tiers > kMaxTiers) {
    throw InvalidArgument("a league has 1 to " + std::to_string(kMaxTiers) + " tiers, not " +
                          std::to_string(tiers));
  }
  if (cohort_size < 2 || cohort_size > kMaxCohortSize) {
    throw InvalidArgument("cohort_size must be from 2 to " + std::to_string(kMaxCohortSize) +
                          ", not " + std::to_string(cohort_size));
  }
  promote_ = checked(promote, "promote", cohort_size);
  demote_ = checked(demote, "demote", cohort_size);
  if (events_maxlen < 1) throw InvalidArgument("events_maxlen must be at least 1");
}

std::string League::write_rule() const {
  return name_of(mode_) + limit_words(limits_) + guard_rule_words(limits_);
}

std::string League::cohort_key(const std::string& period, long long cohort) const {
  return base_ + ":" + period + ":c:" + std::to_string(cohort);
}

template <class Function, class... OwnKeys, class... Own>
Command League::call_keyed(Function function, const LeaguePeriod& period,
                           std::tuple<OwnKeys...> own_keys, Own... own) const {
  if (period.id.empty()) throw InvalidArgument("a period id must not be empty");
  const std::string prefix = base_ + ":" + period.id;
  auto keys =
      std::make_tuple(arg::league_options{base_ + ":options"}, arg::league_tier{base_ + ":tier"},
                      arg::league_tiers{base_ + ":tiers"}, arg::league_open{base_ + ":open"},
                      arg::league_events{base_ + ":events"}, arg::period_state{prefix + ":state"},
                      arg::period_where{prefix + ":where"}, arg::period_result{prefix + ":result"});
  auto args = std::make_tuple(
      arg::tier_count{std::to_string(tiers_)}, arg::cohort_size{std::to_string(cohort_size_)},
      arg::promote{promote_.word()}, arg::demote{demote_.word()},
      arg::demote_idle{demote_idle_ ? "1" : "0"}, arg::order{name_of(order_)},
      arg::ties{ties_word_}, arg::write_rule{write_rule()},
      arg::events_maxlen{std::to_string(events_maxlen_)}, arg::period{period.id},
      arg::period_start{std::to_string(period.start_ms)},
      arg::period_times{std::to_string(period.expire_ms) + " " + std::to_string(period.end_ms)});
  return std::apply(function, std::tuple_cat(std::move(keys), std::move(own_keys), std::move(args),
                                             std::make_tuple(std::move(own)...)));
}

template <class Function, class... Own>
Command League::call(Function function, const LeaguePeriod& period, Own... own) const {
  return call_keyed(function, period, std::tuple<>{}, std::move(own)...);
}

template <class Function, class... Own>
Command League::read_call(Function function, const LeaguePeriod& period, Own... own) const {
  if (period.id.empty()) throw InvalidArgument("a period id must not be empty");
  const std::string prefix = base_ + ":" + period.id;
  // league_read.lua's declaration: league.lua's keys and arguments but the stream, its MAXLEN
  // and the period's times, which no read uses.
  auto keys =
      std::make_tuple(arg::league_options{base_ + ":options"}, arg::league_tier{base_ + ":tier"},
                      arg::league_tiers{base_ + ":tiers"}, arg::league_open{base_ + ":open"},
                      arg::period_state{prefix + ":state"}, arg::period_where{prefix + ":where"},
                      arg::period_result{prefix + ":result"});
  auto args = std::make_tuple(
      arg::tier_count{std::to_string(tiers_)}, arg::cohort_size{std::to_string(cohort_size_)},
      arg::promote{promote_.word()}, arg::demote{demote_.word()},
      arg::demote_idle{demote_idle_ ? "1" : "0"}, arg::order{name_of(order_)},
      arg::ties{ties_word_}, arg::write_rule{write_rule()}, arg::period{period.id},
      arg::period_start{std::to_string(period.start_ms)});
  return std::apply(function, std::tuple_cat(std::move(keys), std::move(args),
                                             std::make_tuple(std::move(own)...)));
}

namespace {
std::string config_text(long long tiers, long long size, const Cutoff& promote,
                        const Cutoff& demote, bool idle, Order order, const std::string& ties,
                        const std::string& write_rule) {
  return "tiers=" + std::to_string(tiers) + " size=" + std::to_string(size) +
         " promote=" + promote.word() + " demote=" + demote.word() + " idle=" + (idle ? "1" : "0") +
         " order=" + name_of(order) + " ties=" + ties + " mode=" + write_rule;
}
}  // namespace

#define RLB_LEAGUE_CALL(name, cmd, parse, resends)                                          \
  std::make_unique<Call>(Caller::League, name, cmd, parse, base_,                           \
                         config_text(tiers_, cohort_size_, promote_, demote_, demote_idle_, \
                                     order_, ties_word_, write_rule()),                     \
                         resends)

std::unique_ptr<Operation> League::submit(const LeaguePeriod& period, std::string user_id,
                                          double score, Metadata metadata, std::string bracket,
                                          std::optional<std::string> submission_id, int retries,
                                          std::optional<std::vector<double>> tiebreak) const {
  require_user_id(user_id);
  if (!std::isfinite(score)) throw InvalidArgument("score must be a finite number");
  if (tiebreak && tiebreak_.empty()) {
    throw InvalidArgument("tiebreak values for a league without tie-break columns");
  }
  require_submission_id(submission_id);
  if (retries < 0) throw InvalidArgument("retries must be at least 0");
  std::vector<std::string> record_keys;  // the submission id's record, if any
  std::string words;
  // The guards, as a board's (add_guard_words): the submission id's word with this call's
  // token, and a rate limit's with the player's window, the league's whatever the period (the
  // rule carries the limit too, without its key). No events word: a league's events are its
  // settlements.
  Guards guards = limits_;
  guards.submission_ttl = submission_ttl_;
  add_guard_words(words, record_keys, guards, base_, "", user_id, submission_id);
  // Tie-break columns: the ranked member's key, a keyless word (see plan_write), as a Board's.
  if (tiebreak) word::add(words, word::tb{tiebreak_key(tiebreak_, order_, *tiebreak)});
  std::vector<std::string> fields;
  fields.reserve(2 * metadata.size());
  for (auto& [field, value] : metadata) {
    fields.push_back(std::move(field));
    fields.push_back(std::move(value));
  }
  Command command = call_keyed(
      calls::league_submit, period, std::make_tuple(arg::submission_keys{std::move(record_keys)}),
      arg::user_id{user_id}, arg::score{format_score(score)}, arg::bracket{std::move(bracket)},
      arg::submission_words{words.empty() ? words : words.substr(1)},
      arg::metadata{std::move(fields)});
  const bool idempotent = submission_id.has_value();
  auto parse = [user_id, idempotent](Reply& reply) {
    const char* what = "League.submit";
    LeagueRecord record;
    part(reply, 8, 0, what);
    record.add("submit", parse_submit_reply(reply.elements[0], user_id, idempotent));
    record.add("tier", integer_of(reply.elements[1], what));
    record.add("cohort", integer_of(reply.elements[2], what));
    record.add("bracket", text_of(reply.elements[3], what));
    if (reply.elements[4].is_nil()) {
      record.add("cutoff_rank", std::monostate{});
    } else {
      record.add("cutoff_rank", integer_of(reply.elements[4], what));
    }
    record.add("zone", text_of(reply.elements[5], what));
    record.add("size", integer_of(reply.elements[6], what));
    record.add("period", text_of(reply.elements[7], what));
    return record;
  };
  return RLB_LEAGUE_CALL("League.submit", std::move(command), parse, idempotent ? retries : 0);
}

std::unique_ptr<Operation> League::join(const LeaguePeriod& period, std::string user_id,
                                        std::string bracket) const {
  require_user_id(user_id);
  Command command = call(calls::league_join, period, arg::user_id{std::move(user_id)},
                         arg::bracket{std::move(bracket)});
  auto parse = [](Reply& reply) {
    const char* what = "League.join";
    LeagueRecord record;
    part(reply, 5, 0, what);
    record.add("tier", integer_of(reply.elements[0], what));
    record.add("cohort", integer_of(reply.elements[1], what));
    record.add("bracket", text_of(reply.elements[2], what));
    record.add("size", integer_of(reply.elements[3], what));
    record.add("placed", integer_of(reply.elements[4], what) == 1);
    return record;
  };
  return RLB_LEAGUE_CALL("League.join", std::move(command), parse, 0);
}

std::unique_ptr<Operation> League::hiding(const char* op, const LeaguePeriod& period,
                                          std::string user_id, std::string bracket) const {
  const std::string_view which(op);
  const bool list = which == "hidden", is = which == "is_hidden";
  if (!list && !is && which != "hide" && which != "unhide") {
    throw InvalidArgument("a league hides, unhides, lists or tells hidden players, not " +
                          std::string(which));
  }
  if (!list) require_user_id(user_id);
  Command command;
  if (list) {
    command = read_call(calls::league_read_hidden, period, arg::read_check{""});
  } else if (is) {
    command = read_call(calls::league_read_is_hidden, period, arg::read_check{""},
                        arg::user_id{std::move(user_id)});
  } else if (which == "hide") {
    command = call(calls::league_hide, period, arg::user_id{std::move(user_id)});
  } else {  // unhide: a score kept while hidden places the player in `bracket`
    command = call(calls::league_unhide, period, arg::user_id{std::move(user_id)},
                   arg::bracket{std::move(bracket)});
  }
  const char* name = list              ? "League.hidden"
                     : is              ? "League.is_hidden"
                     : which == "hide" ? "League.hide"
                                       : "League.unhide";
  auto parse = [list, is, name](Reply& reply) {
    LeagueRecord record;
    if (list) {
      record.add("user_ids", strings_of(reply, name));
    } else if (is) {
      record.add("hidden", integer_of(reply, name) == 1);
    } else {
      record.add("changed", integer_of(reply, name) == 1);
    }
    return record;
  };
  // Hiding or showing twice changes nothing more, reads change nothing: each may be resent.
  return RLB_LEAGUE_CALL(name, std::move(command), parse, 2);
}

std::unique_ptr<Operation> League::close(const LeaguePeriod& period) const {
  auto parse = [](Reply& reply) {
    LeagueRecord record;
    record.add("cohorts", integer_of(part(reply, 2, 0, "League.close"), "League.close"));
    record.add("settled", integer_of(part(reply, 2, 1, "League.close"), "League.close"));
    return record;
  };
  // Closing twice changes nothing more: it may be resent after a lost reply.
  return RLB_LEAGUE_CALL("close", call(calls::league_close, period), parse, 2);
}

std::unique_ptr<Operation> League::settle(const LeaguePeriod& period, long long cohort) const {
  if (cohort < 1) throw InvalidArgument("a cohort number is at least 1");
  // The call token (one per call, the same in each sending): the script stores it with the
  // cohort's settlement, so this call's own resend after a lost reply answers what this call
  // settled, and only another call's answers "already".
  Command command = call(calls::league_settle, period, arg::cohort{std::to_string(cohort)},
                         arg::call_token{new_call_token()});
  auto parse = [](Reply& reply) {
    const char* what = "League.settle";
    LeagueRecord record;
    part(reply, 7, 0, what);
    record.add("cohort", integer_of(reply.elements[0], what));
    record.add("tier", integer_of(reply.elements[1], what));
    record.add("bracket", text_of(reply.elements[2], what));
    record.add("already", integer_of(reply.elements[3], what) == 1);
    record.add("promoted", strings_of(reply.elements[4], what));
    record.add("demoted", strings_of(reply.elements[5], what));
    record.add("stayed", strings_of(reply.elements[6], what));
    return record;
  };
  // A cohort is settled once (its script checks): a resend after a lost reply answers this
  // call's settlement again (its call token), another call "already".
  return RLB_LEAGUE_CALL("League.settle", std::move(command), parse, 2);
}

std::unique_ptr<Operation> League::standings(const LeaguePeriod& period, std::string user_id,
                                             bool check) const {
  require_user_id(user_id);
  Command command =
      read_call(calls::league_read_standings, period, arg::read_check{check ? "check" : ""},
                arg::user_id{std::move(user_id)});
  // Tie-break columns: each entry ends with its ranked member's key (false: never scored).
  const std::size_t stride = tiebreak_.empty() ? 5 : 6;
  auto parse = [stride, columns = tiebreak_, order = order_](Reply& reply) {
    const char* what = "League.standings";
    LeagueRecord record;
    part(reply, 6, 0, what);
    record.add("tier", integer_of(reply.elements[0], what));
    record.add("cohort", integer_of(reply.elements[1], what));
    record.add("bracket", text_of(reply.elements[2], what));
    record.add("size", integer_of(reply.elements[3], what));
    record.add("settled", integer_of(reply.elements[4], what) == 1);
    const Reply& flat = reply.elements[5];
    if (!flat.is_array() || flat.elements.size() % stride != 0) unexpected(what);
    std::vector<LeagueRecord> entries;
    for (std::size_t i = 0; i < flat.elements.size(); i += stride) {
      LeagueRecord entry;
      const Reply* e = &flat.elements[i];
      entry.add("user_id", text_of(e[0], what));
      if (e[1].is_nil()) {
        entry.add("score", std::monostate{});
      } else {
        entry.add("score", score_of(e[1], what));
      }
      if (e[2].is_nil()) {
        entry.add("rank", std::monostate{});
      } else {
        entry.add("rank", integer_of(e[2], what));
      }
      entry.add("zone", text_of(e[3], what));
      entry.add("metadata", metadata_of(e[4], what));
      if (stride == 6) entry.add("tiebreak", tiebreak_record(columns, order, e[5], what));
      entries.push_back(std::move(entry));
    }
    record.add("entries", std::move(entries));
    return record;
  };
  return RLB_LEAGUE_CALL("League.standings", std::move(command), parse, 1);
}

std::unique_ptr<Operation> League::tier_of(const LeaguePeriod& period, std::string user_id,
                                           bool check) const {
  require_user_id(user_id);
  Command command =
      read_call(calls::league_read_tier_of, period, arg::read_check{check ? "check" : ""},
                arg::user_id{std::move(user_id)});
  auto parse = [](Reply& reply) {
    LeagueRecord record;
    record.add("tier", integer_of(reply, "League.tier_of"));
    return record;
  };
  return RLB_LEAGUE_CALL("League.tier_of", std::move(command), parse, 1);
}

std::unique_ptr<Operation> League::tiers(const LeaguePeriod& period, bool check) const {
  Command command =
      read_call(calls::league_read_tiers, period, arg::read_check{check ? "check" : ""});
  auto parse = [](Reply& reply) {
    const char* what = "League.tiers";
    if (!reply.is_array() || reply.elements.size() % 2 != 0) unexpected(what);
    std::vector<LeagueRecord> counts;
    for (std::size_t i = 0; i < reply.elements.size(); i += 2) {
      LeagueRecord count;
      count.add("tier", static_cast<long long>(score_of(reply.elements[i], what)));
      count.add("players", static_cast<long long>(score_of(reply.elements[i + 1], what)));
      counts.push_back(std::move(count));
    }
    LeagueRecord record;
    record.add("tiers", std::move(counts));
    return record;
  };
  return RLB_LEAGUE_CALL("tiers", std::move(command), parse, 1);
}

std::unique_ptr<Operation> League::results(const LeaguePeriod& period, std::string user_id) const {
  require_user_id(user_id);
  Command command = read_call(calls::league_read_results, period, arg::read_check{""},
                              arg::user_id{std::move(user_id)});
  // Tie-break columns: the reply ends with the player's ranked member's key (false: no score).
  const std::size_t size = tiebreak_.empty() ? 6 : 7;
  auto parse = [size, columns = tiebreak_, order = order_](Reply& reply) {
    const char* what = "League.results";
    LeagueRecord record;
    part(reply, size, 0, what);
    record.add("cohort", integer_of(reply.elements[0], what));
    record.add("tier", integer_of(reply.elements[1], what));
    record.add("new_tier", integer_of(reply.elements[2], what));
    record.add("zone", text_of(reply.elements[3], what));
    if (reply.elements[4].is_nil()) {
      record.add("rank", std::monostate{});
    } else {
      record.add("rank", integer_of(reply.elements[4], what));
    }
    if (reply.elements[5].is_nil()) {
      record.add("score", std::monostate{});
    } else {
      record.add("score", score_of(reply.elements[5], what));
    }
    if (size == 7) record.add("tiebreak", tiebreak_record(columns, order, reply.elements[6], what));
    return record;
  };
  return RLB_LEAGUE_CALL("League.results", std::move(command), parse, 1);
}

#undef RLB_LEAGUE_CALL

}  // namespace rlb::leaderboard
