// The server-side scripts of scripts/*.lua, embedded at build time (see CMakeLists.txt).
#pragma once

#include <string_view>

namespace rlb::leaderboard {

struct Script {
  std::string_view name;
  std::string_view body;  // its #!lua line (flags, Redis 7.0+), the _lib.lua helpers it uses, then
                          // the script (see CMakeLists.txt)
  std::string_view sha1;  // hex, as EVALSHA wants it
};

namespace scripts {
extern const Script write;   // upsert_user, increment_score, submit
extern const Script trim;    // set_max_entries, the trim after upsert_many (allow-oom)
extern const Script window;  // get_top, get_around_rank, list_all (no-writes)
extern const Script clear;   // clear (allow-oom)
extern const Script entry;   // get_user_entry (no-writes)
extern const Script remove;  // delete_user (allow-oom)
extern const Script rank;    // get_rank on boards with options or not yet checked (no-writes)
extern const Script bulk;    // upsert_many's chunks on boards with options
extern const Script hide;    // hide, unhide, hidden (fair play)

// The queries (no-writes).
extern const Script around;    // get_around_user
extern const Script entries;   // get_entries
extern const Script by_score;  // get_by_score
extern const Script stats;     // rank_for_score, get_percentile, score_at_percentile, get_histogram

// Time (seasons).
extern const Script group;  // LeaderboardGroup.submit, rolling windows' writes
extern const Script
    rolling;  // rolling windows: refresh before reads, delete_user, clear (allow-oom)
}  // namespace scripts

}  // namespace rlb::leaderboard
