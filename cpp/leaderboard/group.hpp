// Time (seasons), without I/O: rolling windows and group writes. A periodic board is a plain
// Board with a deadline (Board's expire_at); the periods themselves are computed in Python
// (zoneinfo), which hands these the bucket or the board of the moment.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "leaderboard/operations.hpp"

namespace rlb::leaderboard {

// How a rolling window combines a user's bucket scores.
enum class Aggregate { Sum, Max, Min };
Aggregate parse_aggregate(std::string_view name);
const char* name_of(Aggregate aggregate);

// A rolling window (see refresh_window in scripts/lib/window_ahead.lua): the scores of bucket i
// (unix ms / bucket_ms, rounded down) in "<key>:bucket:<i>", the window's aggregates in
// "<key>:window:all" and the best max_entries of them at "<key>" (the guide's layout: any Board on
// `key` reads it, metadata included), kept up to date incrementally: the next window is kept ready
// beside it ("<key>:window:ahead") and renamed into place when the bucket changes; when it is not
// ready, the buckets that leave are subtracted in steps of bounded size, "<key>:window" naming the
// bucket the window is complete for (and a transition's position, or the window ahead's state).
// Buckets are passed in by the caller, whose clock decides them.
class Window {
 public:
  // At most this many buckets in a window.
  static constexpr long long kMaxBuckets = 100000;

  // `guards` (a plain board's, see Guards; InvalidArgument unless valid): the submission id's
  // time to live, and the window's rate limit, change events (f"{key}:events") and score limits,
  // which group.lua checks as a board's write's (see plan_window there).
  Window(std::string key, long long bucket_ms, long long window_ms, Aggregate aggregate,
         long long max_entries, Order order, Guards guards = {});

  const std::string& key() const { return key_; }
  long long bucket_ms() const { return bucket_ms_; }
  long long window_ms() const { return window_ms_; }
  long long buckets() const { return window_ms_ / bucket_ms_; }
  Aggregate aggregate() const { return aggregate_; }
  long long max_entries() const { return max_entries_; }
  Order order() const { return order_; }
  double submission_ttl() const { return guards_.submission_ttl; }
  const Guards& guards() const { return guards_; }
  std::string bucket_key(long long bucket) const;

  // The bucket is always the server's clock's (rolling.lua): the caller names none.
  // `read` (an operation of a Board on key()), its first round trip led by the refresh of the
  // window for the bucket now and followed by a check of the marker (rolling.lua 'refresh',
  // 'check'): sent again, the read's replies dropped, while a transition takes more steps.
  std::unique_ptr<Operation> refreshed(std::unique_ptr<Operation> read) const;
  // Removes the user from the union, from every bucket that may still exist, and its metadata;
  // true if it was in any of them. Finishes a transition first (as many round trips as steps).
  std::unique_ptr<Operation> delete_user(std::string user_id) const;
  // Removes every key of the window and the metadata of everyone in it.
  std::unique_ptr<Operation> clear() const;

  // The window's keys: its board, its marker, its options hash (group.lua takes them too).
  std::vector<std::string> keys() const;
  // InvalidArgument unless `bucket` is one a write may name.
  void check_bucket(long long bucket) const;

 private:
  // rolling.lua's call `call` (calls::rolling_<word>) with the window's keys and arguments,
  // then `own`, the call's own.
  template <typename Call, typename... Own>
  Command rolling(Call call, Own... own) const;
  // delete_user's and clear's word 'events:<maxlen>' with events (see removal_events in
  // lib/removal_events.lua), else none.
  std::optional<arg::removal> removal_word() const;
  // OptionsMismatch if `reply` is rolling.lua's OPTIONS status (events recorded, this client
  // has none).
  void refuse_options(const Reply& reply) const;

 public:
 private:
  std::string key_;
  long long bucket_ms_, window_ms_;
  Aggregate aggregate_;
  long long max_entries_;
  Order order_;
  Guards guards_;
};

// One board of a group write: a board (a periodic board's current one carries its deadline)
// or a window with the bucket the write lands in; and how the score combines with the stored
// one there.
struct GroupMember {
  std::variant<Board, Window> target;
  WriteMode mode = WriteMode::Set;
  long long bucket = 0;  // windows only
};

// At most this many boards in one group write.
constexpr std::size_t kMaxGroupMembers = 64;

// One score and metadata written to every member atomically, in one round trip (group.lua):
// every write planned before any is applied, so a refused one writes nothing anywhere. Its
// result is submit()'s result for each member, in order (a window's about its union). A member
// whose recorded options differ raises InvalidArgument naming it. With `submission_id` (guards)
// each member applies the write once, as Board::submit with that id (the id's key is the member's,
// its time to live the member's submission_ttl): a repeat returns each member's stored result with
// duplicate set; the request may then be resent on a new connection, at most `retries` times, when
// its reply was lost.
std::unique_ptr<Operation> group_submit(std::vector<GroupMember> members, std::string user_id,
                                        double score, Metadata metadata,
                                        std::optional<std::string> submission_id = std::nullopt,
                                        int retries = 2);

}  // namespace rlb::leaderboard
