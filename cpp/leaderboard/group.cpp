#include "leaderboard/group.hpp"

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "errors.hpp"
#include "leaderboard/script_calls.hpp"
#include "leaderboard/script_words.hpp"

namespace rlb::leaderboard {
namespace {

using codec::ReplyType;

[[noreturn]] void unexpected(const char* what) {
  throw RedisError(std::string("unexpected reply from Redis for ") + what);
}

long long integer_reply(const Reply& reply, const char* what) {
  if (reply.type != ReplyType::Integer) unexpected(what);
  return reply.integer;
}

// One script call, one reply, one result.
class OneCall final : public Operation {
 public:
  using Parser = std::function<Result(Reply&)>;
  OneCall(const char* name, Command command, Parser parse)
      : name_(name), command_(std::move(command)), parse_(std::move(parse)) {}
  const char* name() const override { return name_; }
  std::vector<Command> next() override { return {command_}; }
  bool feed(std::vector<Reply>& replies) override {
    if (replies.size() != 1) unexpected(name_);
    result_ = parse_(replies[0]);
    return true;
  }
  Result take_result() override { return std::move(result_); }

 private:
  const char* name_;
  Command command_;
  Parser parse_;
  Result result_;
};

// How many round trips a window's transition may take before an operation gives up: each does
// a step (rolling.lua), so a transition of a window of many millions of entries takes thousands.
constexpr int kMaxWindowSteps = 1000000;

[[noreturn]] void window_stuck(const char* what) {
  throw RedisError(std::string("a rolling window's transition did not finish in ") +
                   std::to_string(kMaxWindowSteps) + " steps (" + what + ")");
}

// A read of the union, its first round trip led by the refresh and followed by the check
// (rolling.lua): the read counts only if the refresh says the window is complete for the
// reader's bucket and the check finds the marker unchanged (no transition started between
// them); else it is sent again with the refresh, which did one step of the transition. So a
// read never sees a window half brought to its bucket; a window already there costs one round
// trip, as before.
class Refreshed final : public Operation {
 public:
  Refreshed(Command refresh, Command check, std::unique_ptr<Operation> read)
      : refresh_(std::move(refresh)), check_(std::move(check)), read_(std::move(read)) {}
  const char* name() const override { return read_->name(); }
  bool paged() const override { return read_->paged(); }
  std::vector<Command> next() override {
    std::vector<Command> commands = read_->next();
    if (!refreshed_) {
      reads_ = commands.size();
      commands.insert(commands.begin(), refresh_);
      commands.push_back(check_);
    }
    return commands;
  }
  codec::ReplySink* reply_sink(std::size_t index) override {
    if (refreshed_) return read_->reply_sink(index);
    if (index == 0 || index > reads_) return nullptr;
    return read_->reply_sink(index - 1);
  }
  bool feed(std::vector<Reply>& replies) override {
    if (!refreshed_) {
      if (replies.size() < 2) unexpected("a window's refresh");
      const Reply& refresh = replies.front();
      const Reply& check = replies.back();
      if (refresh.type == ReplyType::Integer) {
        if (refresh.integer != 0) unexpected("a window's refresh");
        if (++steps_ > kMaxWindowSteps) window_stuck(read_->name());
        return false;  // a step done: the read's replies are dropped, all sent again
      }
      if (refresh.type != ReplyType::String) unexpected("a window's refresh");
      if (check.type != ReplyType::String || check.str != refresh.str) {
        if (check.type != ReplyType::String && check.type != ReplyType::Nil) {
          unexpected("a window's check");
        }
        if (++steps_ > kMaxWindowSteps) window_stuck(read_->name());
        return false;  // a transition started between them: read again
      }
      replies.erase(replies.begin());
      replies.pop_back();
      refreshed_ = true;
    }
    return read_->feed(replies);
  }
  Result take_result() override { return read_->take_result(); }

 private:
  Command refresh_, check_;
  std::unique_ptr<Operation> read_;
  bool refreshed_ = false;
  std::size_t reads_ = 0;
  int steps_ = 0;
};

// One script call sent again while its reply says a window's transition step was done instead
// (`parse` returns nothing), then one result.
class Stepped final : public Operation {
 public:
  using Parser = std::function<std::optional<Result>(Reply&)>;
  Stepped(const char* name, Command command, Parser parse)
      : name_(name), command_(std::move(command)), parse_(std::move(parse)) {}
  const char* name() const override { return name_; }
  std::vector<Command> next() override { return {command_}; }
  bool feed(std::vector<Reply>& replies) override {
    if (replies.size() != 1) unexpected(name_);
    auto result = parse_(replies[0]);
    if (!result) {
      if (++steps_ > kMaxWindowSteps) window_stuck(name_);
      return false;
    }
    result_ = std::move(*result);
    return true;
  }
  Result take_result() override { return std::move(result_); }

 private:
  const char* name_;
  Command command_;
  Parser parse_;
  Result result_;
  int steps_ = 0;
};

// The group write: its reply is one submit() reply per member.
class GroupSubmit final : public Operation {
 public:
  GroupSubmit(Command command, std::vector<std::string> names, std::vector<std::string> options,
              std::vector<std::optional<Board>> boards, std::string user_id, bool idempotent,
              int resends)
      : command_(std::move(command)),
        names_(std::move(names)),
        options_(std::move(options)),
        boards_(std::move(boards)),
        user_id_(std::move(user_id)),
        idempotent_(idempotent),
        resends_(resends) {}
  const char* name() const override { return "group_submit"; }
  std::vector<Command> next() override { return {command_}; }
  // A write with a submission id cannot apply twice (guards): it may be resent.
  int resend_limit() const override { return idempotent_ ? resends_ : 0; }
  bool feed(std::vector<Reply>& replies) override {
    if (replies.size() != 1) unexpected(name());
    auto& reply = replies[0];
    if (reply.type == ReplyType::Status && reply.str == "WINDOWBUSY") {
      // A window's transition step was done, nothing of the write: send it again.
      if (++steps_ > kMaxWindowSteps) window_stuck(name());
      return false;
    }
    if (reply.type == ReplyType::Status) refuse_options(reply.str);
    if (!reply.is_array() || reply.elements.size() != names_.size()) unexpected(name());
    results_.clear();
    results_.reserve(names_.size());
    for (std::size_t i = 0; i < names_.size(); ++i) {
      const Board* board = boards_[i] ? &*boards_[i] : nullptr;  // a period's: says its period
      results_.push_back(parse_submit_reply(reply.elements[i], user_id_, idempotent_, board));
    }
    return true;
  }
  Result take_result() override { return std::move(results_); }

 private:
  // "OPTIONS member=<m> order=<o> ties=<t>": member m (1-based) records other options.
  [[noreturn]] void refuse_options(const std::string& status) const {
    auto field = [&](const std::string& name) {
      auto at = status.find(" " + name + "=");
      if (at == std::string::npos) return std::string("?");
      at += name.size() + 2;
      return status.substr(at, status.find(' ', at) - at);
    };
    if (status.compare(0, 8, "OPTIONS ") != 0) unexpected("a group write");
    std::size_t member = 0;
    try {
      member = static_cast<std::size_t>(std::stoul(field("member")));
    } catch (const std::exception&) {
      unexpected("a group write");
    }
    if (member < 1 || member > names_.size()) unexpected("a group write");
    throw OptionsMismatch("leaderboard '" + names_[member - 1] + "' has " +
                          recorded_options_text(status) +
                          " (recorded in Redis); this group writes it with " +
                          options_[member - 1] + "; nothing was written");
  }

  Command command_;
  std::vector<std::string> names_, options_;
  std::vector<std::optional<Board>> boards_;  // each member's board (none: a window)
  std::string user_id_;
  std::vector<SubmitResult> results_;  // each member's, in order
  bool idempotent_;
  int resends_;
  int steps_ = 0;
};

}  // namespace

Aggregate parse_aggregate(std::string_view name) {
  if (name == "sum") return Aggregate::Sum;
  if (name == "max") return Aggregate::Max;
  if (name == "min") return Aggregate::Min;
  throw InvalidArgument("aggregate must be 'sum', 'max' or 'min', not '" + std::string(name) + "'");
}

const char* name_of(Aggregate aggregate) {
  switch (aggregate) {
    case Aggregate::Sum:
      return "sum";
    case Aggregate::Max:
      return "max";
    case Aggregate::Min:
      return "min";
  }
  return "sum";
}

Window::Window(std::string key, long long bucket_ms, long long window_ms, Aggregate aggregate,
               long long max_entries, Order order, Guards guards)
    : key_(std::move(key)),
      bucket_ms_(bucket_ms),
      window_ms_(window_ms),
      aggregate_(aggregate),
      max_entries_(max_entries),
      order_(order),
      guards_(std::move(guards)) {
  validate_guards(guards_);
  if (key_.empty()) throw InvalidArgument("key must not be empty");
  if (bucket_ms < 1) throw InvalidArgument("bucket must be at least 1 ms");
  if (window_ms < bucket_ms || window_ms % bucket_ms != 0) {
    throw InvalidArgument("window must be a whole number of buckets (at least one)");
  }
  if (window_ms / bucket_ms > kMaxBuckets) {
    throw InvalidArgument("window must hold at most " + std::to_string(kMaxBuckets) +
                          " buckets, not " + std::to_string(window_ms / bucket_ms));
  }
  // Deadlines ((bucket + 1) * bucket_ms + window_ms) stay exact in Lua's doubles.
  if (window_ms > (1LL << 50)) throw InvalidArgument("window is too long");
  if (max_entries < 1) throw InvalidArgument("max_entries must be at least 1");
}

std::string Window::bucket_key(long long bucket) const {
  return key_ + ":bucket:" + std::to_string(bucket);
}

std::vector<std::string> Window::keys() const {
  return {key_, key_ + ":window", key_ + ":options"};
}

void Window::check_bucket(long long bucket) const {
  if (bucket < 0 || bucket > (1LL << 52) / bucket_ms_) {
    throw InvalidArgument("bucket " + std::to_string(bucket) + " is out of range");
  }
}

template <typename Call, typename... Own>
Command Window::rolling(Call call, Own... own) const {
  return call(arg::window_board{key_}, arg::marker{key_ + ":window"},
              arg::window_options{key_ + ":options"}, arg::bucket_ms{std::to_string(bucket_ms_)},
              arg::window_ms{std::to_string(window_ms_)}, arg::window_order{name_of(order_)},
              arg::aggregate{name_of(aggregate_)}, arg::max_entries{std::to_string(max_entries_)},
              std::move(own)...);
}

std::unique_ptr<Operation> Window::refreshed(std::unique_ptr<Operation> read) const {
  if (!read) throw InvalidArgument("no read to refresh the window for");
  return std::make_unique<Refreshed>(rolling(calls::rolling_refresh), rolling(calls::rolling_check),
                                     std::move(read));
}

std::optional<arg::removal> Window::removal_word() const {
  if (!guards_.events) return std::nullopt;
  // (the stream's key is derived in rolling.lua, as the window's other keys)
  return arg::removal{word::text(word::events{std::to_string(guards_.events_maxlen), ""})};
}

void Window::refuse_options(const Reply& reply) const {
  if (reply.type != ReplyType::Status || reply.str.compare(0, 8, "OPTIONS ") != 0) return;
  throw OptionsMismatch("leaderboard '" + key_ + "' has " + recorded_options_text(reply.str) +
                        " (recorded in Redis); this client opened it with " +
                        options_text(order_, "lexicographic", guards_) + "; nothing was changed");
}

std::unique_ptr<Operation> Window::delete_user(std::string user_id) const {
  if (user_id.empty()) throw InvalidArgument("user_id must not be empty");
  return std::make_unique<Stepped>(
      "delete_user",
      rolling(calls::rolling_delete, arg::user_id{std::move(user_id)}, removal_word()),
      [window = *this](Reply& reply) -> std::optional<Result> {
        window.refuse_options(reply);
        long long found = integer_reply(reply, "delete_user");
        if (found == -1) return std::nullopt;  // a transition step: again
        if (found != 0 && found != 1) unexpected("delete_user");
        return Result(found == 1);
      });
}

std::unique_ptr<Operation> Window::clear() const {
  return std::make_unique<OneCall>("clear", rolling(calls::rolling_clear, removal_word()),
                                   [window = *this](Reply& reply) -> Result {
                                     window.refuse_options(reply);
                                     if (integer_reply(reply, "clear") < 0) unexpected("clear");
                                     return None{};
                                   });
}

std::unique_ptr<Operation> group_submit(std::vector<GroupMember> members, std::string user_id,
                                        double score, Metadata metadata,
                                        std::optional<std::string> submission_id, int retries) {
  if (user_id.empty()) throw InvalidArgument("user_id must not be empty");
  if (!std::isfinite(score)) throw InvalidArgument("score must be a finite number");
  require_submission_id(submission_id);
  if (retries < 0) throw InvalidArgument("retries must be at least 0");
  if (members.empty()) throw InvalidArgument("a group needs at least one board");
  if (members.size() > kMaxGroupMembers) {
    throw InvalidArgument("a group holds at most " + std::to_string(kMaxGroupMembers) +
                          " boards, not " + std::to_string(members.size()));
  }
  std::vector<std::string> keys, args;
  std::vector<std::string> names, options;
  std::vector<std::optional<Board>> boards;
  for (auto& member : members) {
    const char* mode = name_of(member.mode);
    if (auto* board = std::get_if<Board>(&member.target)) {
      std::vector<std::string> option_keys = board->option_keys();
      for (const auto& name : names) {
        if (name == board->key()) throw InvalidArgument("board '" + name + "' is twice in a group");
      }
      names.push_back(board->key());
      boards.emplace_back(*board);
      options.push_back(options_text(board->order(), board->ties_word(), board->guards()));
      std::vector<std::string> board_keys{board->key(), board->metadata_key(user_id)};
      for (auto& key : option_keys) board_keys.push_back(std::move(key));
      // The board's spec words, as write.lua's (guard_fields): its rate limit and events
      // (guards, their keys last) and a periodic board's deadline (seasons).
      std::string words;
      board->add_guards(words, board_keys, user_id, submission_id);
      args.insert(args.end(),
                  {"board", mode, name_of(board->order()), board->ties_word(),
                   std::to_string(board->max_entries()), std::to_string(board_keys.size()), "", "",
                   words.empty() ? words : words.substr(1)});
      for (auto& key : board_keys) keys.push_back(std::move(key));
    } else {
      const auto& window = std::get<Window>(member.target);
      for (const auto& name : names) {
        if (name == window.key()) {
          throw InvalidArgument("board '" + name + "' is twice in a group");
        }
      }
      window.check_bucket(member.bucket);
      names.push_back(window.key());
      boards.emplace_back(std::nullopt);
      options.push_back(options_text(window.order(), "lexicographic", window.guards()));
      keys.push_back(window.bucket_key(member.bucket));
      keys.push_back(window.key() + ":user:" + user_id);
      for (auto& key : window.keys()) keys.push_back(std::move(key));
      // The window's guard words, as a board's (its submission id, rate limit and events, their
      // keys last, then its score limits): plan_window in group.lua checks them.
      std::string words;
      add_guard_words(words, keys, window.guards(), window.key(), window.key() + ":events", user_id,
                      submission_id);
      words += limit_words(window.guards());
      args.insert(args.end(),
                  {"window", mode, name_of(window.order()), name_of(window.aggregate()),
                   std::to_string(window.max_entries()), std::to_string(member.bucket),
                   std::to_string(window.bucket_ms()), std::to_string(window.window_ms()),
                   words.empty() ? words : words.substr(1)});
    }
  }
  for (auto& [field, value] : metadata) {
    args.push_back(std::move(field));
    args.push_back(std::move(value));
  }
  const bool idempotent = submission_id.has_value();
  Command command = calls::group(
      arg::member_keys{std::move(keys)}, arg::user_id{user_id}, arg::number{format_score(score)},
      arg::members{std::to_string(members.size())}, arg::member_words{std::move(args)});
  return std::make_unique<GroupSubmit>(std::move(command), std::move(names), std::move(options),
                                       std::move(boards), std::move(user_id), idempotent, retries);
}

}  // namespace rlb::leaderboard
