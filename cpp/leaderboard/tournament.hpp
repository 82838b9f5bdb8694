// Tournaments, without I/O: a board per period with a capacity, join-required, a cap on
// attempts per period and an active window (see python/redis_leaderboard/boards/tournament.py
// for the design, scripts/tournament.lua for the data layout). The periods (a calendar period or
// a cron schedule) are computed in Python, which hands these operations the period of the moment.
// Results are the league's records (LeagueReply, operations.hpp: named fields, a dict in Python).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "leaderboard/operations.hpp"
#include "leaderboard/script_args.hpp"

namespace rlb::leaderboard {

// The period an operation is about (unix ms): its start, the end of its active window, the
// next period's start, the deadline of its keys; `now`: unused (the server's clock decides, see
// check_clock in lib/clock.lua; the bindings still take it); `named`: whether the caller named the
// period (the stale-client guard): 0 no, 1 this one, 2 another one (refused unless the call
// resends an applied submission id).
struct TournamentPeriod {
  std::string id;
  long long start_ms = 0;
  long long window_end_ms = 0;
  long long next_start_ms = 0;
  long long expire_ms = 0;
  std::optional<long long> now_ms;
  int named = 0;
};

class Tournament {
 public:
  // `limits`: the score limits (fair play), as League's; its rate limit (rate_max writes per
  // rate_per s per player, the server's clock, over every period: "<key>:rate:<user>") and change
  // events (events, events_maxlen: the tournament's stream "<key>:events", each event with its
  // period), as a Board's. All part of the write rule, so of the recorded config. `tiebreak`: the
  // tie-break columns of every period's board, validated as a Board's (their tie rule "tb:..." is
  // recorded with the tournament's options; none: the config text is as it was before columns
  // existed).
  Tournament(std::string key, std::optional<long long> max_size, bool join_required,
             std::optional<long long> max_attempts, WriteMode mode, Order order, Ties ties,
             double submission_ttl = 86400, Guards limits = {},
             std::vector<TiebreakColumn> tiebreak = {});

  const std::string& key() const { return key_; }
  const std::vector<TiebreakColumn>& tiebreak() const { return tiebreak_; }
  // The board of a period: "<key>:<period>" (the guide's layout).
  std::string board_key(const std::string& period) const { return key_ + ":" + period; }

  // A submission: every check (window, period, join, capacity, attempts), then one attempt used
  // and the score written with the tournament's mode, atomically. Record: "submit" (submit()'s
  // result on the period's board), "period", "used", "bonus", "size". With a submission id, a
  // resend answers the first record whole (its "duplicate" false when the resend is this
  // operation's own: it sends a call token, new_call_token(), with each sending). `tiebreak`:
  // the values of the tie-break columns, as Board::submit's.
  std::unique_ptr<Operation> submit(
      const TournamentPeriod& period, std::string user_id, double score, Metadata metadata,
      std::optional<std::string> submission_id, int retries,
      std::optional<std::vector<double>> tiebreak = std::nullopt) const;
  // A join (refused past max_size). Record: "joined_now", "used", "bonus", "size".
  std::unique_ptr<Operation> join(const TournamentPeriod& period, std::string user_id) const;
  // Attempts granted to a player in the period. Record: "used", "bonus", "size".
  std::unique_ptr<Operation> add_attempts(const TournamentPeriod& period, std::string user_id,
                                          long long n) const;
  // Hidden players (fair play): `op` "hide" or "unhide" (record "changed": the player was not
  // hidden before, or was), "hidden" (record "user_ids", in byte order; `user_id` unused),
  // "is_hidden" (record "hidden"). Hidden from every period: hide takes their entry in `period`
  // off its board (kept aside), unhide puts it back.
  std::unique_ptr<Operation> hiding(const char* op, const TournamentPeriod& period,
                                    std::string user_id) const;
  // The events after `last_id` on the tournament's stream (with events; as Board::read_events).
  std::unique_ptr<Operation> read_events(std::string last_id, long long count,
                                         std::optional<double> block) const;
  // A player's state in the period. Record: "joined", "used", "bonus", "size".
  std::unique_ptr<Operation> status(const TournamentPeriod& period, std::string user_id) const;

 private:
  // What every call of scripts/tournament.lua sends (see its declaration): its keys, the
  // tournament's options (tournament_read.lua's too), the period.
  using Keys = std::tuple<arg::tournament_options, arg::tournament_current, arg::entrants,
                          arg::bonus_key, arg::board>;
  using Options = std::tuple<arg::max_size, arg::join_required, arg::max_attempts, arg::write_rule,
                             arg::order, arg::ties>;
  using PeriodArgs = std::tuple<arg::period, arg::period_start, arg::window_end, arg::next_start,
                                arg::expire, arg::period_named>;
  Keys keys(const TournamentPeriod& period) const;
  Options options() const;
  static PeriodArgs period_args(const TournamentPeriod& period);
  // The user's metadata hash on the period's board, and the board's option keys (board_spec).
  std::string user_key(const TournamentPeriod& period, const std::string& user_id) const;
  std::vector<std::string> option_keys(const TournamentPeriod& period) const;
  std::string config() const;
  // The write rule: the mode, the score limits' words, the rate limit's and events' (keyless).
  std::string write_rule() const;

  std::string key_;
  std::optional<long long> max_size_, max_attempts_;
  bool join_required_;
  WriteMode mode_;
  Guards limits_;  // score_min, score_max, max_increment, rate_max, rate_per, events(_maxlen)
  Order order_;
  Ties ties_;
  double submission_ttl_;
  std::vector<TiebreakColumn> tiebreak_;
  std::string ties_word_;  // the tie rule as scripts get it (Board::ties_word)
};

}  // namespace rlb::leaderboard
