// Leaderboard operations without I/O. Each operation turns its arguments into the commands of
// one round trip (usually one script call: atomic) and turns the replies into a result. Any
// transport runs them: send next(), feed() the replies, repeat until feed() returns true.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "codec/reply.hpp"
#include "leaderboard/scripts.hpp"

namespace rlb::leaderboard {

using codec::Reply;
using Metadata = std::vector<std::pair<std::string, std::string>>;  // HGETALL order

// One command. With a script, argv is {numkeys, keys..., args...} and it is sent as EVALSHA
// (EVAL after a NOSCRIPT reply); otherwise argv is the whole command.
struct Command {
  const Script* script = nullptr;
  std::vector<std::string> argv;
};

struct Entry {
  std::optional<long long> rank;  // 1-based; absent when a write was trimmed away
  std::string user_id;
  double score = 0;
  Metadata metadata;
};

// What upsert_user and increment_score return: the entry plus who the write trimmed.
struct WriteResult {
  Entry entry;
  std::vector<std::string> trimmed_user_ids;
};

// What a bulk trim returns: how many entries went, and the first of them (lowest first).
struct TrimSummary {
  long long trimmed = 0;
  std::vector<std::string> user_ids;
};

// One entry of upsert_many.
struct BatchEntry {
  std::string user_id;
  double score = 0;
  Metadata metadata;
};

struct None {};

using Result =
    std::variant<None, bool, long long, std::optional<long long>, Metadata, std::optional<Entry>,
                 std::vector<Entry>, WriteResult, std::vector<std::string>, TrimSummary>;

class Operation {
 public:
  virtual ~Operation() = default;
  virtual const char* name() const = 0;
  // More than one round trip (pages): a caller that gives up should stop the next ones.
  virtual bool paged() const { return false; }
  // The commands to send in the next round trip.
  virtual std::vector<Command> next() = 0;
  // Their replies (never error replies: the transport raises those). True when finished.
  virtual bool feed(std::vector<Reply>& replies) = 0;
  // The result, once feed() has returned true.
  virtual Result take_result() = 0;
};

// A board's identity and limit. Methods validate their arguments (throwing InvalidArgument
// before anything is sent) and return the operation to run.
class Board {
 public:
  // Entries per round trip of list_all, clear and set_max_entries: boards up to this size
  // take one round trip; larger ones are paged so the server is never blocked for long.
  static constexpr long long kPageSize = 5000;

  Board(std::string key, long long max_entries);

  const std::string& key() const { return key_; }
  long long max_entries() const { return max_entries_; }

  std::unique_ptr<Operation> upsert_user(std::string user_id, double score,
                                         Metadata metadata) const;
  std::unique_ptr<Operation> increment_score(std::string user_id, double amount,
                                             Metadata metadata) const;
  // Sets max_entries now; the returned operation trims the board to it.
  std::unique_ptr<Operation> set_max_entries(long long max_entries);
  std::unique_ptr<Operation> get_top(long long count) const;
  std::unique_ptr<Operation> get_around_rank(long long rank, long long count) const;
  std::unique_ptr<Operation> get_rank(std::string user_id) const;
  std::unique_ptr<Operation> get_user_metadata(std::string user_id) const;
  std::unique_ptr<Operation> get_user_entry(std::string user_id) const;
  std::unique_ptr<Operation> list_all() const;
  std::unique_ptr<Operation> get_size() const;
  std::unique_ptr<Operation> delete_user(std::string user_id) const;
  std::unique_ptr<Operation> clear() const;

  // upsert_many, one chunk: a variadic ZADD and one HSET per entry with metadata in MULTI/EXEC,
  // in one round trip, not trimmed (trim_to_max_entries follows the last chunk). A chunk the
  // server refuses out of memory writes nothing; one whose command fails as it runs (WRONGTYPE,
  // NOPERM) keeps its other commands' writes. The result is the number of entries written.
  // Entries are validated here; `first_index` numbers them in errors.
  std::unique_ptr<Operation> upsert_chunk(std::vector<BatchEntry> entries,
                                          long long first_index) const;
  // Trims to max_entries in pages; the result is a TrimSummary with at most `report` ids.
  std::unique_ptr<Operation> trim_to_max_entries(long long report) const;

  std::string metadata_key(const std::string& user_id) const { return metadata_prefix() + user_id; }
  std::string metadata_prefix() const { return key_ + ":user:"; }

 private:
  std::unique_ptr<Operation> write(const char* mode, std::string user_id, double number,
                                   Metadata metadata) const;

  std::string key_;
  long long max_entries_;
};

// PING: true when the server answers.
std::unique_ptr<Operation> ping();

// Exact text of a double for Redis (round-trips through strtod).
std::string format_score(double value);

}  // namespace rlb::leaderboard
