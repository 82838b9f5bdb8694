// Team boards, without I/O: members' scores on one board, their teams ranked by the members'
// contributions on another, both written by one script (see python/redis_leaderboard/boards/
// team.py for the design, scripts/team.lua for the data layout). Results are the league's
// records (LeagueReply, operations.hpp: named fields, a dict in Python).
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
  // `submission_ttl`: how long a submission id's record is kept, in seconds (as a board's).
  TeamBoard(std::string key, TeamAggregate aggregate, Order order, double submission_ttl = 86400);

  const std::string& key() const { return key_; }

  // A member's write on the members' board with `mode`, their contribution to their team (the
  // one named, which moves them there, or theirs) and the team's score, atomically. Record:
  // "submit" (submit()'s result on the members' board), "team", "team_score", "team_rank",
  // "previous_team" (none if the member had none). With a submission id the write applies once
  // (its record <key>:submission:<id>, lib/submissions.lua): a resend answers the first record
  // field for field ("duplicate" in "submit": true unless it is this call's own resend), and a
  // lost reply is resent at most `retries` times.
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

 private:
  // What every call of scripts/team.lua sends (see its declaration): its keys, the options.
  using Keys = std::tuple<arg::team_options, arg::memberships, arg::team_board, arg::member_board>;
  using Options = std::tuple<arg::aggregate, arg::order>;
  Keys keys() const;
  Options options() const;
  arg::member_key member_key(const std::string& member) const;
  arg::team_key team_key(const std::string& team) const;
  std::vector<std::string> option_keys() const;  // the members' board's
  std::string config() const;

  std::string key_;
  TeamAggregate aggregate_;
  Order order_;
  double submission_ttl_;
};

}  // namespace rlb::leaderboard
