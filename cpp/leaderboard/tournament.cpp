#include "leaderboard/tournament.hpp"

#include <cmath>
#include <functional>
#include <utility>

#include "errors.hpp"

namespace rlb::leaderboard {
namespace {

using codec::ReplyType;

[[noreturn]] void unexpected(const char* what) {
  throw RedisError(std::string("unexpected reply from Redis for a tournament's ") + what);
}

long long integer_of(const Reply& reply, const char* what) {
  if (reply.type != ReplyType::Integer) unexpected(what);
  return reply.integer;
}

std::string text_of(const Reply& reply, const char* what) {
  if (reply.type != ReplyType::String && reply.type != ReplyType::Status) unexpected(what);
  return reply.str;
}

const Reply& parts(const Reply& reply, std::size_t size, const char* what) {
  if (!reply.is_array() || reply.elements.size() != size) unexpected(what);
  return reply;
}

// One script call whose reply goes, parsed, to a LeagueReply: 'OPTIONS <recorded>' raises
// OptionsMismatch; the error replies raise through the one error table.
class TournamentCall final : public Operation {
 public:
  using Parser = std::function<LeagueRecord(Reply&)>;
  TournamentCall(const char* name, Command command, Parser parse, std::shared_ptr<LeagueReply> out,
                 std::string key, std::string config, int resends)
      : name_(name),
        command_(std::move(command)),
        parse_(std::move(parse)),
        out_(std::move(out)),
        key_(std::move(key)),
        config_(std::move(config)),
        resends_(resends) {}
  const char* name() const override { return name_; }
  std::vector<Command> next() override { return {command_}; }
  int resend_limit() const override { return resends_; }
  bool feed(std::vector<Reply>& replies) override {
    if (replies.size() != 1) unexpected(name_);
    Reply& reply = replies[0];
    if (reply.type == ReplyType::Status) {
      if (reply.str.compare(0, 8, "OPTIONS ") == 0) {
        throw OptionsMismatch("tournament '" + key_ + "' has options " + reply.str.substr(8) +
                              " (recorded in Redis); this client has " + config_ +
                              "; nothing was changed");
      }
      unexpected(name_);
    }
    LeagueReply result;
    result.record = parse_(reply);
    if (out_) *out_ = std::move(result);
    return true;
  }
  Result take_result() override { return None{}; }

 private:
  const char* name_;
  Command command_;
  Parser parse_;
  std::shared_ptr<LeagueReply> out_;
  std::string key_, config_;
  int resends_;
};

void require_user_id(const std::string& user_id) {
  if (user_id.empty()) throw InvalidArgument("user_id must not be empty");
}

Command script_command(const Script& script, std::vector<std::string> keys,
                       std::vector<std::string> args) {
  Command command{&script, {}};
  command.argv.reserve(1 + keys.size() + args.size());
  command.argv.push_back(std::to_string(keys.size()));
  for (auto& key : keys) command.argv.push_back(std::move(key));
  for (auto& arg : args) command.argv.push_back(std::move(arg));
  return command;
}

std::string optional_text(const std::optional<long long>& value) {
  return value ? std::to_string(*value) : std::string();
}

}  // namespace

Tournament::Tournament(std::string key, std::optional<long long> max_size, bool join_required,
                       std::optional<long long> max_attempts, WriteMode mode, Order order,
                       Ties ties, double submission_ttl)
    : key_(std::move(key)),
      max_size_(max_size),
      max_attempts_(max_attempts),
      join_required_(join_required),
      mode_(mode),
      order_(order),
      ties_(ties),
      submission_ttl_(require_submission_ttl(submission_ttl)) {
  if (key_.empty()) throw InvalidArgument("key must not be empty");
  if (max_size_ && *max_size_ < 1) throw InvalidArgument("max_size must be at least 1 (or None)");
  if (max_attempts_ && *max_attempts_ < 1) {
    throw InvalidArgument("max_attempts must be at least 1 (or None)");
  }
}

std::string Tournament::config() const {
  return "max_size=" + optional_text(max_size_) + " join_required=" + (join_required_ ? "1" : "0") +
         " max_attempts=" + optional_text(max_attempts_) + " mode=" + name_of(mode_) +
         " order=" + name_of(order_) + " ties=" + name_of(ties_);
}

std::vector<std::string> Tournament::keys(const TournamentPeriod& period) const {
  if (period.id.empty()) throw InvalidArgument("a period id must not be empty");
  const std::string board = board_key(period.id);
  return {key_ + ":options", key_ + ":current", board + ":entrants", board + ":bonus", board};
}

std::vector<std::string> Tournament::args(const char* op, const TournamentPeriod& period,
                                          const std::string& user_id) const {
  require_user_id(user_id);
  return {op,
          optional_text(max_size_),
          join_required_ ? "1" : "0",
          optional_text(max_attempts_),
          name_of(mode_),
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

#define RLB_TOURNAMENT_CALL(name, script, keys, args, parse, out, resends)          \
  std::make_unique<TournamentCall>(name, script_command(script, keys, args), parse, \
                                   std::move(out), key_, config(), resends)

std::unique_ptr<Operation> Tournament::submit(const TournamentPeriod& period, std::string user_id,
                                              double score, Metadata metadata,
                                              std::optional<std::string> submission_id, int retries,
                                              std::shared_ptr<LeagueReply> out) const {
  if (!std::isfinite(score)) throw InvalidArgument("score must be a finite number");
  require_submission_id(submission_id);
  if (retries < 0) throw InvalidArgument("retries must be at least 0");
  auto args = this->args("submit", period, user_id);
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
  std::string words;
  if (submission_id) add_submission_guard(words, keys, key_, submission_ttl_, *submission_id);
  args.insert(args.end(), {format_score(score), words.empty() ? words : words.substr(1)});
  for (auto& [field, value] : metadata) {
    args.push_back(std::move(field));
    args.push_back(std::move(value));
  }
  const bool idempotent = submission_id.has_value();
  auto parse = [user_id, idempotent](Reply& reply) {
    const char* what = "submit";
    parts(reply, 5, what);
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
  return RLB_TOURNAMENT_CALL("submit", scripts::tournament, std::move(keys), std::move(args), parse,
                             out, idempotent ? retries : 0);
}

std::unique_ptr<Operation> Tournament::join(const TournamentPeriod& period, std::string user_id,
                                            std::shared_ptr<LeagueReply> out) const {
  auto args = this->args("join", period, user_id);
  auto parse = [](Reply& reply) {
    const char* what = "join";
    parts(reply, 4, what);
    LeagueRecord record;
    record.add("joined_now", integer_of(reply.elements[0], what) == 1);
    record.add("used", integer_of(reply.elements[1], what));
    record.add("bonus", integer_of(reply.elements[2], what));
    record.add("size", integer_of(reply.elements[3], what));
    return record;
  };
  // Joining twice changes nothing more: it may be resent after a lost reply.
  return RLB_TOURNAMENT_CALL("join", scripts::tournament, keys(period), std::move(args), parse, out,
                             2);
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
    const char* what = "add_attempts";
    parts(reply, 3, what);
    LeagueRecord record;
    record.add("used", integer_of(reply.elements[0], what));
    record.add("bonus", integer_of(reply.elements[1], what));
    record.add("size", integer_of(reply.elements[2], what));
    return record;
  };
  // An increment: never resent.
  return RLB_TOURNAMENT_CALL("add_attempts", scripts::tournament, keys(period), std::move(args),
                             parse, out, 0);
}

std::unique_ptr<Operation> Tournament::status(const TournamentPeriod& period, std::string user_id,
                                              std::shared_ptr<LeagueReply> out) const {
  auto args = this->args("status", period, user_id);
  auto parse = [](Reply& reply) {
    const char* what = "status";
    parts(reply, 4, what);
    LeagueRecord record;
    record.add("joined", integer_of(reply.elements[0], what) == 1);
    record.add("used", integer_of(reply.elements[1], what));
    record.add("bonus", integer_of(reply.elements[2], what));
    record.add("size", integer_of(reply.elements[3], what));
    return record;
  };
  return RLB_TOURNAMENT_CALL("status", scripts::tournament_read, keys(period), std::move(args),
                             parse, out, 1);
}

#undef RLB_TOURNAMENT_CALL

}  // namespace rlb::leaderboard
