// Team boards, without I/O: members' scores on one board, their teams ranked by the members'
// contributions on another, both written by one script (see python/redis_leaderboard/boards/
// team.py for the design, scripts/team.lua for the data layout). Results are the league's
// records (LeagueReply, operations.hpp: named fields, a dict in Python). Guards (a rate limit,
// change events, score limits: operations.hpp's Guards) are a plain board's, through the same
// words (add_guard_words, limit_words) and script helpers (lib/guards.lua), on the members'
// board; the events of both boards go to one stream, f"{key}:events".
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "leaderboard/operations.hpp"
#include "leaderboard/script_args.hpp"

namespace rlb::leaderboard {

// How a team's score follows from its members' contributions: their sum, or the best one.
enum class TeamAggregate { Sum, Best };
TeamAggregate parse_team_aggregate(std::string_view name);
const char* name_of(TeamAggregate aggregate);

class TeamBoard {
 public:
  // `guards`: as a plain board's (validate_guards): submission_ttl, how long a submission id's
  // record is kept, in seconds; rate_limit (writes per member), events, score limits.
  TeamBoard(std::string key, TeamAggregate aggregate, Order order, Guards guards = {});

  const std::string& key() const { return key_; }
  const Guards& guards() const { return guards_; }

  // A member's write on the members' board with `mode`, their contribution to their team (the
  // one named, which moves them there, or theirs) and the team's score, atomically. Record:
  // "submit" (submit()'s result on the members' board), "team", "team_score", "team_rank",
  // "previous_team" (none if the member had none). With a submission id the write applies once
  // (its record <key>:submission:<id>, lib/submissions.lua): a resend answers the first record
  // field for field ("duplicate" in "submit": true unless it is this call's own resend), and a
  // lost reply is resent at most `retries` times. The guards judge it as a plain board's write
  // on the members' board (RateLimited, ScoreRejected, OptionsMismatch: nothing written); with
  // events it appends the member's event, then a "team" event per team whose score changed.
  std::unique_ptr<Operation> submit(std::string member, double score, Metadata metadata,
                                    std::optional<std::string> team, WriteMode mode,
                                    std::optional<std::string> submission_id = std::nullopt,
                                    int retries = 2) const;
  // Moves a member (and their contribution) to `team`. Record: "previous_team", "team",
  // "team_score", "team_rank" (none if the team has no score yet).
  std::unique_ptr<Operation> move(std::string member, std::string team) const;
  // Removes a member, their metadata and their contribution. Record: "removed".
  std::unique_ptr<Operation> remove(std::string member) const;
  // A team's members, best first. Record: "members", each {"user_id", "contribution"}.
  std::unique_ptr<Operation> members(std::string team) const;
  // A member's team. Record: "team" (none if they have none).
  std::unique_ptr<Operation> team_of(std::string member) const;
  // Hiding (fair play): `op` "hide" or "unhide" a member (record: "changed"), "hidden" (record:
  // "user_ids", in byte order; `member` unused) or "is_hidden" (record: "hidden").
  std::unique_ptr<Operation> hiding(const char* op, std::string member) const;
  // The change events after `last_id` ('$': those to come), at most `count`, waiting up to
  // `block` seconds (none: no wait) on the stream f"{key}:events" (read_stream_events).
  std::unique_ptr<Operation> read_events(std::string last_id, long long count,
                                         std::optional<double> block) const;

 private:
  // What every call of scripts/team.lua sends (see its declaration): its keys, the options.
  using Keys = std::tuple<arg::team_options, arg::memberships, arg::team_board, arg::member_board>;
  using Options = std::tuple<arg::aggregate, arg::order>;
  Keys keys() const;
  Options options() const;
  arg::member_key member_key(const std::string& member) const;
  arg::team_key team_key(const std::string& team) const;
  std::vector<std::string> option_keys() const;  // the members' board's
  // The calls that are not a member's score write (move, remove, hide, unhide): the members'
  // board's option keys, then with events the stream; and their guard words.
  arg::option_keys option_and_event_keys() const;
  arg::guard_words event_words() const;
  std::string config() const;

  std::string key_;
  TeamAggregate aggregate_;
  Order order_;
  Guards guards_;
};

}  // namespace rlb::leaderboard
