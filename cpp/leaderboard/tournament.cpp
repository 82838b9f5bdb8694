#include "leaderboard/tournament.hpp"

#include <cmath>
#include <functional>
#include <utility>

#include "errors.hpp"
#include "leaderboard/script_call.hpp"

namespace rlb::leaderboard {
namespace {

using script_call::Call;
using script_call::Caller;
using script_call::command;
using script_call::integer_of;
using script_call::part;
using script_call::require_user_id;
using script_call::strings_of;
using script_call::text_of;
using script_call::unexpected;

std::string optional_text(const std::optional<long long>& value) {
  return value ? std::to_string(*value) : std::string();
}

}  // namespace

Tournament::Tournament(std::string key, std::optional<long long> max_size, bool join_required,
                       std::optional<long long> max_attempts, WriteMode mode, Order order,
                       Ties ties, double submission_ttl, Guards limits)
    : key_(std::move(key)),
      max_size_(max_size),
      max_attempts_(max_attempts),
      join_required_(join_required),
      mode_(mode),
      order_(order),
      ties_(ties),
      submission_ttl_(require_submission_ttl(submission_ttl)) {
  if (key_.empty()) throw InvalidArgument("key must not be empty");
  validate_score_limits(limits);
  limits_.score_min = limits.score_min;
  limits_.score_max = limits.score_max;
  limits_.max_increment = limits.max_increment;
  if (max_size_ && *max_size_ < 1) throw InvalidArgument("max_size must be at least 1 (or None)");
  if (max_attempts_ && *max_attempts_ < 1) {
    throw InvalidArgument("max_attempts must be at least 1 (or None)");
  }
}

std::string Tournament::config() const {
  return "max_size=" + optional_text(max_size_) + " join_required=" + (join_required_ ? "1" : "0") +
         " max_attempts=" + optional_text(max_attempts_) + " mode=" + name_of(mode_) +
         limit_words(limits_) + " order=" + name_of(order_) + " ties=" + name_of(ties_);
}

std::vector<std::string> Tournament::keys(const TournamentPeriod& period) const {
  if (period.id.empty()) throw InvalidArgument("a period id must not be empty");
  const std::string board = board_key(period.id);
  return {key_ + ":options", key_ + ":current", board + ":entrants", board + ":bonus", board};
}

std::vector<std::string> Tournament::board_keys(const TournamentPeriod& period,
                                                const std::string& user_id) const {
  auto keys = this->keys(period);
  const std::string board = keys.back();
  keys.push_back(board + ":user:" + user_id);
  keys.push_back(board + ":options");
  if (ties_ == Ties::First) {
    keys.push_back(board + ":first");
    keys.push_back(board + ":first:keys");
  } else if (ties_ == Ties::Dense) {
    keys.push_back(board + ":dense");
  }
  return keys;
}

std::vector<std::string> Tournament::args(const char* op, const TournamentPeriod& period,
                                          const std::string& user_id) const {
  require_user_id(user_id);
  return {op,
          optional_text(max_size_),
          join_required_ ? "1" : "0",
          optional_text(max_attempts_),
          name_of(mode_) + limit_words(limits_),  // the write rule
          name_of(order_),
          name_of(ties_),
          period.id,
          std::to_string(period.start_ms),
          std::to_string(period.window_end_ms),
          std::to_string(period.next_start_ms),
          std::to_string(period.expire_ms),
          optional_text(period.now_ms),
          std::to_string(period.named),
          user_id};
}

#define RLB_TOURNAMENT_CALL(name, script, keys, args, parse, out, resends)             \
  std::make_unique<Call>(Caller::Tournament, name, command(script, keys, args), parse, \
                         std::move(out), key_, config(), resends)

std::unique_ptr<Operation> Tournament::submit(const TournamentPeriod& period, std::string user_id,
                                              double score, Metadata metadata,
                                              std::optional<std::string> submission_id, int retries,
                                              std::shared_ptr<LeagueReply> out) const {
  if (!std::isfinite(score)) throw InvalidArgument("score must be a finite number");
  require_submission_id(submission_id);
  if (retries < 0) throw InvalidArgument("retries must be at least 0");
  auto args = this->args("submit", period, user_id);
  auto keys = board_keys(period, user_id);
  std::string words;
  // The submission id's word carries this call's token (see add_submission_guard).
  if (submission_id) add_submission_guard(words, keys, key_, submission_ttl_, *submission_id);
  args.insert(args.end(), {format_score(score), words.empty() ? words : words.substr(1)});
  for (auto& [field, value] : metadata) {
    args.push_back(std::move(field));
    args.push_back(std::move(value));
  }
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
  return RLB_TOURNAMENT_CALL("Tournament.submit", scripts::tournament, std::move(keys),
                             std::move(args), parse, out, idempotent ? retries : 0);
}

std::unique_ptr<Operation> Tournament::join(const TournamentPeriod& period, std::string user_id,
                                            std::shared_ptr<LeagueReply> out) const {
  auto args = this->args("join", period, user_id);
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
  return RLB_TOURNAMENT_CALL("Tournament.join", scripts::tournament, keys(period), std::move(args),
                             parse, out, 2);
}

std::unique_ptr<Operation> Tournament::hiding(const char* op, const TournamentPeriod& period,
                                              std::string user_id,
                                              std::shared_ptr<LeagueReply> out) const {
  const bool list = std::string_view(op) == "hidden";
  if (list) user_id = "-";  // unused
  auto args = this->args(op, period, user_id);
  auto keys = board_keys(period, user_id);
  auto parse = [list](Reply& reply) {
    LeagueRecord record;
    if (list) {
      record.add("user_ids", strings_of(reply, "Tournament.hidden"));
    } else {
      record.add("changed", integer_of(reply, "Tournament.hide") == 1);
    }
    return record;
  };
  // Hiding or showing twice changes nothing more: it may be resent after a lost reply.
  return RLB_TOURNAMENT_CALL(
      list ? "Tournament.hidden"
           : (std::string_view(op) == "hide" ? "Tournament.hide" : "Tournament.unhide"),
      scripts::tournament, std::move(keys), std::move(args), parse, out, 2);
}

std::unique_ptr<Operation> Tournament::add_attempts(const TournamentPeriod& period,
                                                    std::string user_id, long long n,
                                                    std::shared_ptr<LeagueReply> out) const {
  if (!max_attempts_) {
    throw InvalidArgument("tournament '" + key_ +
                          "' has no max_attempts: its attempts are unlimited");
  }
  if (n < 1) throw InvalidArgument("n must be at least 1");
  auto args = this->args("add_attempts", period, user_id);
  args.push_back(std::to_string(n));
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
  return RLB_TOURNAMENT_CALL("Tournament.add_attempts", scripts::tournament, keys(period),
                             std::move(args), parse, out, 0);
}

std::unique_ptr<Operation> Tournament::status(const TournamentPeriod& period, std::string user_id,
                                              std::shared_ptr<LeagueReply> out) const {
  auto args = this->args("status", period, user_id);
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
  return RLB_TOURNAMENT_CALL("Tournament.status", scripts::tournament_read, keys(period),
                             std::move(args), parse, out, 1);
}

#undef RLB_TOURNAMENT_CALL

}  // namespace rlb::leaderboard
