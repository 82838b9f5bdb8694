// Leagues, without I/O: cohorts of players in tiers, promoted and demoted when a period is
// settled (see python/redis_leaderboard/boards/league.py for the design, scripts/league.lua and
// scripts/league_read.lua for the data layout). The periods themselves are computed in Python
// (zoneinfo), which hands these operations the period of the moment.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "leaderboard/operations.hpp"

namespace rlb::leaderboard {

// A cutoff: the top (promote) or bottom (demote) players of a cohort, a count or a fraction of
// the cohort's placed players (rounded down).
struct Cutoff {
  bool fraction = false;
  double value = 0;
  std::string word() const;  // "<count>" or "f<fraction>", as the scripts read it
};

// The period an operation is about: its id (in keys), start (unix ms: periods are ordered by
// it) and the deadline of its keys (unix ms).
struct LeaguePeriod {
  std::string id;
  long long start_ms = 0;
  long long expire_ms = 0;
  long long end_ms = 0;  // when the period ends (the next begins), on the server's clock
};

// One partition of a league: every key under `base` (one hash tag on a cluster).
class League {
 public:
  static constexpr long long kMaxTiers = 100;
  static constexpr long long kMaxCohortSize = 1000;

  // `limits`: the score limits (fair play) and the rate limit (rate_max writes per rate_per s
  // per player, the server's clock; its other guards are unused), carried by the write rule
  // every operation sends (so recorded in the config) and checked in every cohort board's
  // writes. `tiebreak`: the
  // tie-break columns of every cohort's board, validated as a Board's (their tie rule "tb:..."
  // is recorded with the league's options; none: the config text is as before columns existed).
  League(std::string base, long long tiers, long long cohort_size, Cutoff promote, Cutoff demote,
         bool demote_idle, WriteMode mode, Order order, Ties ties, long long events_maxlen = 100000,
         double submission_ttl = 86400, Guards limits = {},
         std::vector<TiebreakColumn> tiebreak = {});

  const std::string& base() const { return base_; }
  const std::vector<TiebreakColumn>& tiebreak() const { return tiebreak_; }
  // The board of cohort `cohort` in `period`: "<base>:<period>:c:<cohort>".
  std::string cohort_key(const std::string& period, long long cohort) const;

  // The player's write: placed in a cohort on their first write of the period (in `bracket`),
  // then the score written with the league's mode, atomically. Record: "submit" (submit()'s
  // result on the cohort's board), "tier", "cohort", "bracket", "cutoff_rank", "zone", "size",
  // "period" (the id of the period written). With a submission id applied before: the record
  // that write answered, whatever the period now ("submit"'s duplicate true unless this is the
  // same operation's own resend, told by the call token it sends). `tiebreak`: the values of
  // the tie-break columns, as Board::submit's.
  std::unique_ptr<Operation> submit(
      const LeaguePeriod& period, std::string user_id, double score, Metadata metadata,
      std::string bracket, std::optional<std::string> submission_id, int retries,
      std::optional<std::vector<double>> tiebreak = std::nullopt) const;
  // A placement without a score. Record: "tier", "cohort", "bracket", "size", "placed".
  std::unique_ptr<Operation> join(const LeaguePeriod& period, std::string user_id,
                                  std::string bracket) const;
  // Closes the period to writes. Record: "cohorts", "settled".
  std::unique_ptr<Operation> close(const LeaguePeriod& period) const;
  // Settles one cohort (once: a cohort another call settled answers "already"; this operation's
  // own resend answers its settlement). Record: "cohort", "tier", "bracket", "already",
  // "promoted", "demoted", "stayed".
  std::unique_ptr<Operation> settle(const LeaguePeriod& period, long long cohort) const;
  // Hidden players (fair play): `op` "hide" or "unhide" (record "changed": the player was
  // not hidden before, or was), "hidden" (record "user_ids", in byte order; `user_id` unused),
  // "is_hidden" (record "hidden").
  // A hidden player has no seat in any cohort; unhide seats them again in `bracket` if they
  // wrote a score of `period` while hidden.
  std::unique_ptr<Operation> hiding(const char* op, const LeaguePeriod& period, std::string user_id,
                                    std::string bracket) const;
  // Reads; `check`: the read is of the current period (reply `unsettled` if one must be
  // settled first).
  std::unique_ptr<Operation> standings(const LeaguePeriod& period, std::string user_id,
                                       bool check) const;
  std::unique_ptr<Operation> tier_of(const LeaguePeriod& period, std::string user_id,
                                     bool check) const;
  std::unique_ptr<Operation> tiers(const LeaguePeriod& period, bool check) const;
  std::unique_ptr<Operation> results(const LeaguePeriod& period, std::string user_id) const;

 private:
  // The script call `function` (a calls::league_* or calls::league_read_* function, see
  // scripts/league.lua) about `period`: the league's keys and arguments, then the call's own
  // keys `own_keys` and arguments `own`. Defined, and used, in league.cpp.
  template <class Function, class... OwnKeys, class... Own>
  Command call_keyed(Function function, const LeaguePeriod& period, std::tuple<OwnKeys...> own_keys,
                     Own... own) const;
  // As call_keyed, for a call without keys of its own.
  template <class Function, class... Own>
  Command call(Function function, const LeaguePeriod& period, Own... own) const;
  // As call, for a read (calls::league_read_*: league_read.lua's declaration).
  template <class Function, class... Own>
  Command read_call(Function function, const LeaguePeriod& period, Own... own) const;
  // The write rule: the mode, the score limits' and the rate limit's words (guard_rule_words).
  std::string write_rule() const;

  std::string base_;
  long long tiers_, cohort_size_;
  Cutoff promote_, demote_;
  bool demote_idle_;
  WriteMode mode_;
  Guards limits_;  // score_min, score_max, max_increment
  Order order_;
  Ties ties_;
  long long events_maxlen_;
  double submission_ttl_;
  std::vector<TiebreakColumn> tiebreak_;
  std::string ties_word_;  // the tie rule as scripts get it (Board::ties_word)
};

}  // namespace rlb::leaderboard
