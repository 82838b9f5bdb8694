#include "leaderboard/team.hpp"

#include <cmath>
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
using script_call::score_of;
using script_call::strings_of;
using script_call::text_of;
using script_call::unexpected;
using script_call::with_common;

void require_team(const std::string& team) {
  if (team.empty()) throw InvalidArgument("team must not be empty");
  if (team.find('\0') != std::string::npos) throw InvalidArgument("team must not contain NUL");
}

// A team's score and rank, or none (false: the team has no member with a score).
void add_standing(LeagueRecord& record, const Reply& score, const Reply& rank, const char* what) {
  if (score.is_nil()) {  // Lua's false
    record.add("team_score", std::monostate{});
    record.add("team_rank", std::monostate{});
    return;
  }
  record.add("team_score", score_of(score, what));
  record.add("team_rank", integer_of(rank, what));
}

LeagueField optional_text(const Reply& reply, const char* what) {
  if (reply.is_nil()) return std::monostate{};  // Lua's false
  return text_of(reply, what);
}

}  // namespace

TeamAggregate parse_team_aggregate(std::string_view name) {
  if (name == "sum") return TeamAggregate::Sum;
  if (name == "best") return TeamAggregate::Best;
  throw InvalidArgument("aggregate must be 'sum' or 'best', not '" + std::string(name) + "'");
}

const char* name_of(TeamAggregate aggregate) {
  return aggregate == TeamAggregate::Sum ? "sum" : "best";
}

TeamBoard::TeamBoard(std::string key, TeamAggregate aggregate, Order order, Guards guards)
    : key_(std::move(key)), aggregate_(aggregate), order_(order), guards_(guards) {
  if (key_.empty()) throw InvalidArgument("key must not be empty");
  validate_guards(guards_);
}

// As messages show this client's options: the team's (recorded in <key>:options) and the
// guards, as the members' board's 'OPTIONS ...' status names them.
std::string TeamBoard::config() const {
  return std::string("aggregate=") + name_of(aggregate_) + " order=" + name_of(order_) + " " +
         guards_status_text(guards_);
}

TeamBoard::Keys TeamBoard::keys() const {
  return {arg::team_options{key_ + ":options"}, arg::memberships{key_ + ":team_of"},
          arg::team_board{key_}, arg::member_board{key_ + ":members"}};
}

TeamBoard::Options TeamBoard::options() const {
  return {arg::aggregate{name_of(aggregate_)}, arg::order{name_of(order_)}};
}

arg::member_key TeamBoard::member_key(const std::string& member) const {
  return arg::member_key{key_ + ":members:user:" + member};
}

arg::team_key TeamBoard::team_key(const std::string& team) const {
  return arg::team_key{key_ + ":team:" + team};
}

// The members' board's option keys: its ties are lexicographic (see board_spec).
std::vector<std::string> TeamBoard::option_keys() const { return {key_ + ":members:options"}; }

arg::option_keys TeamBoard::option_and_event_keys() const {
  arg::option_keys keys{option_keys()};
  if (guards_.events) keys.value.push_back(key_ + ":events");
  return keys;
}

// '' or 'events:<maxlen>' (the stream: option_and_event_keys' last; see removal_events).
arg::guard_words TeamBoard::event_words() const {
  if (!guards_.events) return arg::guard_words{""};
  return arg::guard_words{word::text(word::events{std::to_string(guards_.events_maxlen), ""})};
}

#define RLB_TEAM_CALL(name, command, parse, resends) \
  std::make_unique<Call>(Caller::Team, name, command, parse, key_, config(), resends)

std::unique_ptr<Operation> TeamBoard::submit(std::string member, double score, Metadata metadata,
                                             std::optional<std::string> team, WriteMode mode,
                                             std::optional<std::string> submission_id,
                                             int retries) const {
  require_user_id(member);
  if (team) require_team(*team);
  if (!std::isfinite(score)) throw InvalidArgument("score must be a finite number");
  require_submission_id(submission_id);
  if (retries < 0) throw InvalidArgument("retries must be at least 0");
  auto write_keys = option_keys();
  std::string words;
  // The guards, as a plain board's write's (the submission id's word carries this call's token,
  // see add_submission_guard; the member's rate window is <key>:rate:<member>), then the score
  // limits'.
  add_guard_words(words, write_keys, guards_, key_, key_ + ":events", member, submission_id);
  words += limit_words(guards_);
  arg::guard_words guards{words.empty() ? words : words.substr(1)};
  Command command =
      team ? with_common(calls::team_submit, keys(),
                         std::tuple(member_key(member), team_key(*team),
                                    arg::write_keys{std::move(write_keys)}),
                         options(),
                         std::tuple(arg::member{member}, arg::team{*team}, arg::mode{name_of(mode)},
                                    arg::score{format_score(score)}, std::move(guards),
                                    arg::metadata{flat(std::move(metadata))}))
           : with_common(calls::team_submit_own, keys(),
                         std::tuple(member_key(member), arg::write_keys{std::move(write_keys)}),
                         options(),
                         std::tuple(arg::member{member}, arg::mode{name_of(mode)},
                                    arg::score{format_score(score)}, std::move(guards),
                                    arg::metadata{flat(std::move(metadata))}));
  const bool idempotent = submission_id.has_value();
  auto parse = [member, idempotent](Reply& reply) {
    const char* what = "TeamLeaderboard.submit";
    part(reply, 5, 0, what);
    LeagueRecord record;
    record.add("submit", parse_submit_reply(reply.elements[0], member, idempotent));
    record.add("team", text_of(reply.elements[1], what));
    add_standing(record, reply.elements[2], reply.elements[3], what);
    record.add("previous_team", optional_text(reply.elements[4], what));
    return record;
  };
  // Only a write carrying a submission id may be resent after a lost reply: it cannot apply
  // twice.
  return RLB_TEAM_CALL("TeamLeaderboard.submit", std::move(command), parse,
                       idempotent ? retries : 0);
}

std::unique_ptr<Operation> TeamBoard::move(std::string member, std::string team) const {
  require_user_id(member);
  require_team(team);
  Command command = with_common(
      calls::team_move, keys(), std::tuple(team_key(team), option_and_event_keys()), options(),
      std::tuple(arg::member{std::move(member)}, arg::team{team}, event_words()));
  auto parse = [](Reply& reply) {
    const char* what = "TeamLeaderboard.move";
    part(reply, 4, 0, what);
    LeagueRecord record;
    record.add("previous_team", optional_text(reply.elements[0], what));
    record.add("team", text_of(reply.elements[1], what));
    add_standing(record, reply.elements[2], reply.elements[3], what);
    return record;
  };
  // Moving twice to the same team changes nothing more: it may be resent.
  return RLB_TEAM_CALL("TeamLeaderboard.move", std::move(command), parse, 2);
}

std::unique_ptr<Operation> TeamBoard::remove(std::string member) const {
  require_user_id(member);
  Command command = with_common(calls::team_remove, keys(),
                                std::tuple(member_key(member), option_and_event_keys()), options(),
                                std::tuple(arg::member{member}, event_words()));
  auto parse = [](Reply& reply) {
    LeagueRecord record;
    record.add("removed", integer_of(reply, "TeamLeaderboard.remove") == 1);
    return record;
  };
  return RLB_TEAM_CALL("TeamLeaderboard.remove", std::move(command), parse, 2);
}

std::unique_ptr<Operation> TeamBoard::members(std::string team) const {
  require_team(team);
  Command command = with_common(calls::team_read_members, keys(), std::tuple(team_key(team)),
                                options(), std::tuple(arg::team{team}));
  auto parse = [](Reply& reply) {
    const char* what = "TeamLeaderboard.team_members";
    if (!reply.is_array() || reply.elements.size() % 2 != 0) unexpected(what);
    std::vector<LeagueRecord> contributions;
    for (std::size_t i = 0; i < reply.elements.size(); i += 2) {
      LeagueRecord item;
      item.add("user_id", text_of(reply.elements[i], what));
      item.add("contribution", score_of(reply.elements[i + 1], what));
      contributions.push_back(std::move(item));
    }
    LeagueRecord record;
    record.add("members", std::move(contributions));
    return record;
  };
  return RLB_TEAM_CALL("TeamLeaderboard.team_members", std::move(command), parse, 2);
}

std::unique_ptr<Operation> TeamBoard::team_of(std::string member) const {
  require_user_id(member);
  Command command = with_common(calls::team_read_team_of, keys(), options(),
                                std::tuple(arg::member{std::move(member)}));
  auto parse = [](Reply& reply) {
    LeagueRecord record;
    if (reply.is_nil()) {
      record.add("team", std::monostate{});
    } else {
      record.add("team", text_of(reply, "TeamLeaderboard.team_of"));
    }
    return record;
  };
  return RLB_TEAM_CALL("TeamLeaderboard.team_of", std::move(command), parse, 2);
}

std::unique_ptr<Operation> TeamBoard::hiding(const char* op, std::string member) const {
  const std::string_view which = op;
  Command command;
  const char* name;
  if (which == "hidden") {  // `member` unused
    name = "TeamLeaderboard.hidden";
    command = with_common(calls::team_read_hidden, keys(),
                          std::tuple(arg::option_keys{option_keys()}), options());
  } else if (which == "is_hidden") {
    require_user_id(member);
    name = "TeamLeaderboard.is_hidden";
    command =
        with_common(calls::team_read_is_hidden, keys(), std::tuple(arg::option_keys{option_keys()}),
                    options(), std::tuple(arg::member{std::move(member)}));
  } else if (which == "hide" || which == "unhide") {
    require_user_id(member);
    name = which == "hide" ? "TeamLeaderboard.hide" : "TeamLeaderboard.unhide";
    command = with_common(which == "hide" ? calls::team_hide : calls::team_unhide, keys(),
                          std::tuple(member_key(member), option_and_event_keys()), options(),
                          std::tuple(arg::member{std::move(member)}, event_words()));
  } else {
    throw InvalidArgument("unknown hiding operation");
  }
  auto parse = [which = std::string(which), name](Reply& reply) {
    LeagueRecord record;
    if (which == "hidden") {
      record.add("user_ids", strings_of(reply, name));
    } else if (which == "is_hidden") {
      record.add("hidden", integer_of(reply, name) == 1);
    } else {
      record.add("changed", integer_of(reply, name) == 1);
    }
    return record;
  };
  // Hiding or showing twice changes nothing more, reads change nothing: each may be resent.
  return RLB_TEAM_CALL(name, std::move(command), parse, 2);
}

#undef RLB_TEAM_CALL

std::unique_ptr<Operation> TeamBoard::read_events(std::string last_id, long long count,
                                                  std::optional<double> block) const {
  return read_stream_events(key_ + ":events", std::move(last_id), count, block);
}

}  // namespace rlb::leaderboard
