#include "leaderboard/tournament.hpp"

#include <cmath>
#include <functional>
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
using script_call::flat;
using script_call::integer_of;
using script_call::part;
using script_call::require_user_id;
using script_call::strings_of;
using script_call::text_of;
using script_call::unexpected;
using script_call::with_common;

std::string optional_text(const std::optional<long long>& value) {
  return value ? std::to_string(*value) : std::string();
}

}  // namespace

Tournament::Tournament(std::string key, std::optional<long long> max_size, bool join_required,
                       std::optional<long long> max_attempts, WriteMode mode, Order order,
                       Ties ties, double submission_ttl, Guards limits,
                       std::vector<TiebreakColumn> tiebreak)
    : key_(std::move(key)),
      max_size_(max_size),
      max_attempts_(max_attempts),
      join_required_(join_required),
      mode_(mode),
      order_(order),
      ties_(ties),
      submission_ttl_(require_submission_ttl(submission_ttl)) {
  if (key_.empty()) throw InvalidArgument("key must not be empty");
  // The columns are a period board's: a Board validates them and names the tie rule.
  const Board board(key_, Board::kUnlimited, order, ties, {}, std::nullopt, std::nullopt,
                    std::move(tiebreak));
  tiebreak_ = board.tiebreak();
  ties_word_ = board.ties_word();
  limits.submission_ttl = submission_ttl_;  // checked above
  validate_guards(limits);
  limits_.score_min = limits.score_min;
  limits_.score_max = limits.score_max;
  limits_.max_increment = limits.max_increment;
  limits_.rate_max = limits.rate_max;  // a player's writes, over the tournament's periods
  limits_.rate_per = limits.rate_per;
  limits_.events = limits.events;  // the tournament's stream "<key>:events"
  limits_.events_maxlen = limits.events_maxlen;
  if (max_size_ && *max_size_ < 1) throw InvalidArgument("max_size must be at least 1 (or None)");
  if (max_attempts_ && *max_attempts_ < 1) {
    throw InvalidArgument("max_attempts must be at least 1 (or None)");
  }
}

std::string Tournament::write_rule() const {
  return name_of(mode_) + limit_words(limits_) + guard_rule_words(limits_);
}

std::string Tournament::config() const {
  return "max_size=" + optional_text(max_size_) + " join_required=" + (join_required_ ? "1" : "0") +
         " max_attempts=" + optional_text(max_attempts_) + " mode=" + write_rule() +
         " order=" + name_of(order_) + " ties=" + ties_word_;
}

Tournament::Keys Tournament::keys(const TournamentPeriod& period) const {
  if (period.id.empty()) throw InvalidArgument("a period id must not be empty");
  std::string board = board_key(period.id);
  return {arg::tournament_options{key_ + ":options"}, arg::tournament_current{key_ + ":current"},
          arg::entrants{board + ":entrants"}, arg::bonus_key{board + ":bonus"},
          arg::board{std::move(board)}};
}

Tournament::Options Tournament::options() const {
  return {arg::max_size{optional_text(max_size_)},
          arg::join_required{join_required_ ? "1" : "0"},
          arg::max_attempts{optional_text(max_attempts_)},
          arg::write_rule{write_rule()},
          arg::order{name_of(order_)},
          arg::ties{ties_word_}};
}

Tournament::PeriodArgs Tournament::period_args(const TournamentPeriod& period) {
  return {arg::period{period.id},
          arg::period_start{std::to_string(period.start_ms)},
          arg::window_end{std::to_string(period.window_end_ms)},
          arg::next_start{std::to_string(period.next_start_ms)},
          arg::expire{std::to_string(period.expire_ms)},
          arg::period_named{std::to_string(period.named)}};
}

std::string Tournament::user_key(const TournamentPeriod& period, const std::string& user_id) const {
  require_user_id(user_id);
  return board_key(period.id) + ":user:" + user_id;
}

std::vector<std::string> Tournament::option_keys(const TournamentPeriod& period) const {
  const std::string board = board_key(period.id);
  if (!tiebreak_.empty()) return {board + ":options", board + ":tb", board + ":tb:keys"};
  if (ties_ == Ties::First) return {board + ":options", board + ":first", board + ":first:keys"};
  if (ties_ == Ties::Dense) return {board + ":options", board + ":dense"};
  return {board + ":options"};
}

#define RLB_TOURNAMENT_CALL(name, command, parse, resends) \
  std::make_unique<Call>(Caller::Tournament, name, command, parse, key_, config(), resends)

std::unique_ptr<Operation> Tournament::submit(const TournamentPeriod& period, std::string user_id,
                                              double score, Metadata metadata,
                                              std::optional<std::string> submission_id, int retries,
                                              std::optional<std::vector<double>> tiebreak) const {
  if (!std::isfinite(score)) throw InvalidArgument("score must be a finite number");
  if (tiebreak && tiebreak_.empty()) {
    throw InvalidArgument("tiebreak values for a tournament without tie-break columns");
  }
  require_submission_id(submission_id);
  if (retries < 0) throw InvalidArgument("retries must be at least 0");
  require_user_id(user_id);
  auto common = keys(period);
  auto user = user_key(period, user_id);
  auto write_keys = option_keys(period);
  std::string words;
  // The guards, as a board's (add_guard_words): the submission id's word with this call's
  // token; a rate limit's with the player's window, the tournament's whatever the period; the
  // events' with the tournament's one stream (the rule carries both too, without their keys).
  Guards guards = limits_;
  guards.submission_ttl = submission_ttl_;
  add_guard_words(words, write_keys, guards, key_, key_ + ":events", user_id, submission_id);
  // Tie-break columns: the ranked member's key, a keyless word (see plan_write), as a Board's.
  if (tiebreak) word::add(words, word::tb{tiebreak_key(tiebreak_, order_, *tiebreak)});
  Command command = with_common(
      calls::tournament_submit, std::move(common),
      std::tuple(arg::user_key{std::move(user)}, arg::write_keys{std::move(write_keys)}), options(),
      period_args(period),
      std::tuple(arg::user_id{user_id}, arg::score{format_score(score)},
                 arg::guard_words{words.empty() ? words : words.substr(1)},
                 arg::metadata{flat(std::move(metadata))}));
  const bool idempotent = submission_id.has_value();
  auto parse = [user_id, idempotent](Reply& reply) {
    const char* what = "Tournament.submit";
    part(reply, 5, 0, what);
    LeagueRecord record;
    record.add("submit", parse_submit_reply(reply.elements[0], user_id, idempotent));
    record.add("period", text_of(reply.elements[1], what));
    record.add("used", integer_of(reply.elements[2], what));
    record.add("bonus", integer_of(reply.elements[3], what));
    record.add("size", integer_of(reply.elements[4], what));
    return record;
  };
  // Only a write carrying a submission id may be resent after a lost reply: it cannot apply
  // (nor use an attempt) twice.
  return RLB_TOURNAMENT_CALL("Tournament.submit", std::move(command), parse,
                             idempotent ? retries : 0);
}

std::unique_ptr<Operation> Tournament::join(const TournamentPeriod& period,
                                            std::string user_id) const {
  require_user_id(user_id);
  Command command = with_common(calls::tournament_join, keys(period), options(),
                                period_args(period), std::tuple(arg::user_id{std::move(user_id)}));
  auto parse = [](Reply& reply) {
    const char* what = "Tournament.join";
    part(reply, 4, 0, what);
    LeagueRecord record;
    record.add("joined_now", integer_of(reply.elements[0], what) == 1);
    record.add("used", integer_of(reply.elements[1], what));
    record.add("bonus", integer_of(reply.elements[2], what));
    record.add("size", integer_of(reply.elements[3], what));
    return record;
  };
  // Joining twice changes nothing more: it may be resent after a lost reply.
  return RLB_TOURNAMENT_CALL("Tournament.join", std::move(command), parse, 2);
}

std::unique_ptr<Operation> Tournament::hiding(const char* op, const TournamentPeriod& period,
                                              std::string user_id) const {
  const std::string_view which = op;
  const bool list = which == "hidden", is = which == "is_hidden";
  Command command;
  if (list || is) {  // tournament_read.lua (no-writes); `user_id` unused by the list
    auto [options_key, current, entrants, bonus, board] = keys(period);
    auto read_keys = std::tuple(std::move(options_key), std::move(entrants), std::move(bonus));
    if (list) {
      command = with_common(calls::tournament_read_hidden, std::move(read_keys), options());
    } else {
      require_user_id(user_id);
      command = with_common(calls::tournament_read_is_hidden, std::move(read_keys), options(),
                            std::tuple(arg::user_id{std::move(user_id)}));
    }
  } else {
    if (which != "hide" && which != "unhide") throw InvalidArgument("unknown hiding operation");
    std::string user = user_key(period, user_id);
    auto hide_keys = option_keys(period);
    if (limits_.events) hide_keys.push_back(key_ + ":events");  // the stream: the last key
    command = with_common(
        which == "hide" ? calls::tournament_hide : calls::tournament_unhide, keys(period),
        std::tuple(arg::user_key{std::move(user)}, arg::option_keys{std::move(hide_keys)}),
        options(), period_args(period), std::tuple(arg::user_id{std::move(user_id)}));
  }
  const char* name = list              ? "Tournament.hidden"
                     : is              ? "Tournament.is_hidden"
                     : which == "hide" ? "Tournament.hide"
                                       : "Tournament.unhide";
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
  return RLB_TOURNAMENT_CALL(name, std::move(command), parse, 2);
}

std::unique_ptr<Operation> Tournament::add_attempts(const TournamentPeriod& period,
                                                    std::string user_id, long long n) const {
  if (!max_attempts_) {
    throw InvalidArgument("tournament '" + key_ +
                          "' has no max_attempts: its attempts are unlimited");
  }
  if (n < 1) throw InvalidArgument("n must be at least 1");
  require_user_id(user_id);
  Command command =
      with_common(calls::tournament_add_attempts, keys(period), options(), period_args(period),
                  std::tuple(arg::user_id{std::move(user_id)}, arg::attempts{std::to_string(n)}));
  auto parse = [](Reply& reply) {
    const char* what = "Tournament.add_attempts";
    part(reply, 3, 0, what);
    LeagueRecord record;
    record.add("used", integer_of(reply.elements[0], what));
    record.add("bonus", integer_of(reply.elements[1], what));
    record.add("size", integer_of(reply.elements[2], what));
    return record;
  };
  // An increment: never resent.
  return RLB_TOURNAMENT_CALL("Tournament.add_attempts", std::move(command), parse, 0);
}

std::unique_ptr<Operation> Tournament::status(const TournamentPeriod& period,
                                              std::string user_id) const {
  require_user_id(user_id);
  auto [options_key, current, entrants, bonus, board] = keys(period);
  Command command =
      with_common(calls::tournament_read_status,
                  std::tuple(std::move(options_key), std::move(entrants), std::move(bonus)),
                  options(), std::tuple(arg::user_id{std::move(user_id)}));
  auto parse = [](Reply& reply) {
    const char* what = "Tournament.status";
    part(reply, 4, 0, what);
    LeagueRecord record;
    record.add("joined", integer_of(reply.elements[0], what) == 1);
    record.add("used", integer_of(reply.elements[1], what));
    record.add("bonus", integer_of(reply.elements[2], what));
    record.add("size", integer_of(reply.elements[3], what));
    return record;
  };
  return RLB_TOURNAMENT_CALL("Tournament.status", std::move(command), parse, 1);
}

std::unique_ptr<Operation> Tournament::read_events(std::string last_id, long long count,
                                                   std::optional<double> block) const {
  if (!limits_.events) {
    throw InvalidArgument("tournament '" + key_ + "' has no events (events=True)");
  }
  return read_stream_events(key_ + ":events", std::move(last_id), count, block);
}

#undef RLB_TOURNAMENT_CALL

}  // namespace rlb::leaderboard
