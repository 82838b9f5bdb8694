#include "leaderboard/operations.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>

#include <unistd.h>

#include "errors.hpp"
#include "leaderboard/script_calls.hpp"
#include "leaderboard/script_words.hpp"

namespace rlb::leaderboard {

std::string new_call_token() {
  // One generator per thread, seeded from the system's entropy (again in a forked child, which
  // would otherwise repeat its parent's tokens): tokens need to be unique, not secret.
  thread_local std::mt19937_64 generator;
  thread_local pid_t seeded_in = 0;
  if (seeded_in != ::getpid()) {
    seeded_in = ::getpid();
    generator.seed(std::random_device{}());
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(generator()));
  return std::string(text, 16);
}

namespace {

using codec::ReplyType;

// Ranks and counts beyond any sorted set's size (2^32 - 1 members) are clamped to it, so every
// number reaches Lua and Redis as a plain integer.
constexpr long long kMaxWindow = 1LL << 32;

[[noreturn]] void unexpected(const char* what) {
  throw RedisError(std::string("unexpected reply from Redis for ") + what);
}

void require_user_id(const std::string& user_id) {
  if (user_id.empty()) throw InvalidArgument("user_id must not be empty");
}

void require_finite(double value, const char* field) {
  if (!std::isfinite(value)) throw InvalidArgument(std::string(field) + " must be a finite number");
}

long long require_at_least_one(long long value, const char* field) {
  if (value < 1) throw InvalidArgument(std::string(field) + " must be at least 1");
  return std::min(value, kMaxWindow);
}
static_assert(Board::kUnlimited == kMaxWindow, "a limit clamped to kMaxWindow is no limit");

// A score from its text (false: not a number). from_chars: several times faster than strtod (no
// locale); strtod for what it refuses (a leading '+', out of range), and for everything where the
// standard library has no from_chars of doubles (GCC 10's libstdc++: the glibc 2.31 wheel is
// built with it, .ci/wheels-compat; __cpp_lib_to_chars says both directions are there).
bool read_score(std::string_view text, double& value) {
#if defined(__cpp_lib_to_chars)
  const char* begin = text.data();
  auto [end, error] = std::from_chars(begin, begin + text.size(), value);
  if (error == std::errc() && end != begin) return true;
#endif
  const std::string terminated(text);
  char* strtod_end = nullptr;
  value = std::strtod(terminated.c_str(), &strtod_end);
  return strtod_end != terminated.c_str();
}

double parse_score(const Reply& reply) {
  if (reply.type != ReplyType::String && reply.type != ReplyType::Status) unexpected("a score");
  double value = 0;
  if (!read_score(reply.str, value)) unexpected("a score");
  return value;
}

long long parse_integer(const Reply& reply) {
  if (reply.type != ReplyType::Integer) unexpected("an integer");
  return reply.integer;
}

// A zero-based rank or start from the wire: within any sorted set's size, so adding one (or a
// window's length) cannot overflow.
long long check_rank(long long value) {
  if (value < 0 || value >= kMaxWindow) unexpected("a rank");
  return value;
}

long long parse_rank(const Reply& reply) { return check_rank(parse_integer(reply)); }

// A number of entries from the wire (a board's size, entries left or trimmed): 0 to `limit`.
long long check_count(long long value, long long limit = kMaxWindow) {
  if (value < 0 || value > limit) unexpected("a count");
  return value;
}

long long parse_count(const Reply& reply, long long limit = kMaxWindow) {
  return check_count(parse_integer(reply), limit);
}

const std::vector<Reply>& parse_array(const Reply& reply, std::size_t min_size = 0) {
  if (!reply.is_array() || reply.elements.size() < min_size) unexpected("an array");
  return reply.elements;
}

std::string take_string(Reply& reply) {
  if (reply.type != ReplyType::String) unexpected("a string");
  return std::move(reply.str);
}

// A number of the compact layout's value format at `at` (digits, then CRLF), past it.
std::size_t compact_number(std::string_view text, std::size_t& at) {
  std::size_t value = 0, digits = 0;
  while (at < text.size() && text[at] >= '0' && text[at] <= '9' && digits < 10) {
    value = value * 10 + static_cast<std::size_t>(text[at++] - '0');
    ++digits;
  }
  if (digits == 0 || text.substr(at, 2) != "\r\n") unexpected("a compact board's metadata");
  at += 2;
  return value;
}

// A compact board's stored metadata (encode_fields in lib/base.lua: the RESP array of bulk
// strings HGETALL would answer, "*<n>\r\n" then "$<length>\r\n<bytes>\r\n" each; '' for none).
Metadata parse_compact_metadata(std::string_view text) {
  Metadata metadata;
  if (text.empty()) return metadata;
  std::size_t at = 1;
  if (text[0] != '*') unexpected("a compact board's metadata");
  const std::size_t count = compact_number(text, at);
  if (count % 2 != 0 || count > text.size()) unexpected("a compact board's metadata");
  metadata.reserve(count / 2);
  std::string field;
  for (std::size_t i = 0; i < count; ++i) {
    if (at >= text.size() || text[at++] != '$') unexpected("a compact board's metadata");
    const std::size_t length = compact_number(text, at);
    if (length > text.size() - at || text.substr(at + length, 2) != "\r\n") {
      unexpected("a compact board's metadata");
    }
    std::string value(text.substr(at, length));
    at += length + 2;
    if (i % 2 == 0) {
      field = std::move(value);
    } else {
      metadata.emplace_back(std::move(field), std::move(value));
    }
  }
  if (at != text.size()) unexpected("a compact board's metadata");
  return metadata;
}

Metadata parse_metadata(Reply& reply) {
  if (reply.type == ReplyType::String) return parse_compact_metadata(reply.str);  // compact
  if (!reply.is_array() || reply.elements.size() % 2 != 0) unexpected("a metadata hash");
  Metadata metadata;
  metadata.reserve(reply.elements.size() / 2);
  for (std::size_t i = 0; i < reply.elements.size(); i += 2) {
    metadata.emplace_back(take_string(reply.elements[i]), take_string(reply.elements[i + 1]));
  }
  return metadata;
}

std::vector<std::string> parse_strings(Reply& reply) {
  if (!reply.is_array()) unexpected("a list of user ids");
  std::vector<std::string> out;
  out.reserve(reply.elements.size());
  for (auto& element : reply.elements) out.push_back(take_string(element));
  return out;
}

// Bounds the round trips of a paged operation (list_all, clear, a trim) by the work its first
// reply says is left: twice the pages that needs, plus one. A board may grow while it is paged
// (other clients write), but not without end: past the budget the operation raises instead of
// looping, and holding every page, forever.
class RoundTripBudget {
 public:
  // After a round trip whose reply says `left` entries still need paging through; throws once
  // the budget is spent.
  void another(const char* name, long long left) {
    if (done_++ == 0) {
      first_left_ = left;
      budget_ = 2 * (left / Board::kPageSize + 1) + 1;
    }
    if (done_ < budget_) return;
    throw RedisError(std::string(name) + " gave up after " + std::to_string(done_) +
                     " round trips: " + std::to_string(first_left_) +
                     " entries were left after the first, and the board kept growing (or the "
                     "server's replies do not add up)");
  }

 private:
  long long done_ = 0, budget_ = 0, first_left_ = 0;
};

// A window.lua (or around.lua, by_score.lua) reply, {start, size, {user_id, score, {field,
// value, ...}, ...}[, ranks]} (ranks, zero-based, one per entry, when the board's tie rule shares
// them), read into entries as it is decoded: no Reply tree, each string copied once, to where it
// stays. A tree is replayed into it (codec::replay). A reply of another shape is remembered and
// raises when the window is used.
class WindowReader final : public codec::ReplySink {
 public:
  void begin(std::size_t count) override {
    entries_.clear();
    ranks_.clear();
    start_ = size_ = 0;
    seen_ = 0;
    bad_ = count < 3 || count > 4;
    ranked_ = count == 4;
  }
  void integer(int depth, std::size_t index, std::size_t parent, long long value) override {
    if (bad_) return;
    if (depth == 1 && index < 2) {
      (index == 0 ? start_ : size_) = value;
      seen_ |= index == 0 ? kStart : kSize;
    } else if (depth == 2 && parent == 3) {
      ranks_.push_back(value);
    } else {
      bad_ = true;
    }
  }
  void array(int depth, std::size_t index, std::size_t parent, std::size_t count) override {
    if (bad_) return;
    // A count is what a header announces, not what arrived: up front, at most kReserved
    // elements (memory follows the bytes, as in the codec); a longer array grows as it comes.
    if (depth == 1 && index == 2 && count % 3 == 0) {
      entries_.reserve(std::min(count / 3, kReserved));
      seen_ |= kEntries;
    } else if (depth == 1 && index == 3) {
      ranks_.reserve(std::min(count, kReserved));
    } else if (depth == 2 && parent == 2 && index % 3 == 2 && count % 2 == 0) {
      // Its user id and score came first.
      entries_.back().metadata.reserve(std::min(count / 2, kReserved));
    } else {
      bad_ = true;
    }
  }
  void text(int depth, std::size_t index, std::size_t parent, ReplyType type,
            std::string_view value) override {
    if (bad_) return;
    if (depth == 2 && parent == 2 && index % 3 == 0 && type == ReplyType::String) {
      entries_.emplace_back().user_id.assign(value);
    } else if (depth == 2 && parent == 2 && index % 3 == 1 && type != ReplyType::Error) {
      if (!read_score(value, entries_.back().score)) bad_ = true;
    } else if (depth == 2 && parent == 2 && index % 3 == 2 && type == ReplyType::String) {
      // A compact board's. Nothing is thrown while the codec decodes (a sink's exception would
      // end the connection): a malformed value makes the window malformed.
      try {
        entries_.back().metadata = parse_compact_metadata(value);
      } catch (const RedisError&) {
        bad_ = true;
      }
    } else if (depth == 3 && type == ReplyType::String) {  // in a metadata array (checked)
      auto& metadata = entries_.back().metadata;
      if (index % 2 == 0) {
        metadata.emplace_back(std::string(value), std::string());
      } else {
        metadata.back().second.assign(value);
      }
    } else {
      bad_ = true;
    }
  }
  void nil(int, std::size_t, std::size_t) override { bad_ = true; }

  // Raises unless the reply had a window's shape.
  void check() const {
    if (bad_ || seen_ != (kStart | kSize | kEntries)) unexpected("a rank window");
    if (ranked_ && ranks_.size() != entries_.size()) unexpected("the ranks of a window");
  }
  // Zero-based position of the window's first entry.
  long long start() const {
    check();
    return check_rank(start_);
  }
  // The board's size (where the script was asked for it: 'top' gives -1, refused here).
  long long size() const {
    check();
    return check_count(size_);
  }
  std::size_t count() const { return entries_.size(); }
  // Moves the entries to the end of `out`, ranked from `first_rank` (1-based) on, or by the
  // reply's own ranks.
  void append_to(std::vector<Entry>& out, long long first_rank) {
    check();
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      entries_[i].rank =
          ranked_ ? check_rank(ranks_[i]) + 1 : first_rank + static_cast<long long>(i);
    }
    if (out.empty()) {
      out = std::move(entries_);
    } else {
      const std::size_t needed = out.size() + entries_.size();
      if (needed > out.capacity()) out.reserve(std::max(needed, 2 * out.capacity()));  // pages
      std::move(entries_.begin(), entries_.end(), std::back_inserter(out));
    }
    entries_.clear();
  }

 private:
  static constexpr int kStart = 1, kSize = 2, kEntries = 4;
  static constexpr std::size_t kReserved = 4096;
  std::vector<Entry> entries_;
  std::vector<long long> ranks_;
  long long start_ = 0, size_ = 0;
  int seen_ = 0;
  bool bad_ = true;  // nothing read yet
  bool ranked_ = false;
};

// A rank window's entries, ranked from its start (get_around_rank, get_by_score...).
Result window_entries(WindowReader* window) {
  if (window == nullptr) unexpected("a rank window");
  std::vector<Entry> entries;
  window->append_to(entries, window->start() + 1);
  return entries;
}

using Identity = Board::Identity;

// A list of strings, each moved (or copied once) into place: a braced list would copy every
// string once more, from the list into the vector.
template <class... Args>
std::vector<std::string> strings(Args&&... args) {
  std::vector<std::string> out;
  out.reserve(sizeof...(Args));
  (out.emplace_back(std::forward<Args>(args)), ...);
  return out;
}

// An entry read's reply, {score, zero-based rank, metadata[, the ranked member]} (`size`
// elements: 4 on a board with tie-break columns), or nil: entry.lua's, and the guide's three
// replies (GuideEntry) as one.
Result entry_reply(Reply& reply, std::string user_id, std::size_t size) {
  if (reply.is_nil()) return std::optional<Entry>();
  parse_array(reply, size);
  if (reply.elements.size() != size) unexpected("an entry");
  Entry entry;
  entry.score = parse_score(reply.elements[0]);
  entry.rank = parse_rank(reply.elements[1]) + 1;
  // Tie-break columns: the ranked member (split_members reads the columns from its key).
  entry.user_id = size == 4 ? take_string(reply.elements[3]) : std::move(user_id);
  entry.metadata = parse_metadata(reply.elements[2]);
  return std::optional<Entry>(std::move(entry));
}

// One command, one reply, one result: every operation but the paged ones.
class SingleCall final : public Operation {
 public:
  using Parser = std::function<Result(Reply&)>;
  // A rank window's reply, streamed into a WindowReader (nullptr: the reply was nil).
  using WindowParser = std::function<Result(WindowReader*)>;
  // With `id`, the reply is a script's that checked the board's options (Identity::accept).
  SingleCall(const char* name, Command command, Parser parse,
             std::shared_ptr<Identity> id = nullptr)
      : name_(name), command_(std::move(command)), parse_(std::move(parse)), id_(std::move(id)) {}
  SingleCall(const char* name, Command command, WindowParser parse,
             std::shared_ptr<Identity> id = nullptr)
      : name_(name),
        command_(std::move(command)),
        parse_window_(std::move(parse)),
        id_(std::move(id)) {}

  // A script read of board `board` that takes its metadata prefix ("<board>:user:") as its
  // ARGV's `argv_n`-th argument (calls::argv_n::<script>::user_prefix: window, around,
  // entries): it can run without metadata (an empty prefix), for a client-side cache (the
  // guide's layout only: a compact board's one hash would be invalidated by every write) and
  // for the second step of a big read (split_read: the guide's hashes, or a compact board's).
  std::unique_ptr<SingleCall> caches_metadata(const std::string& board, std::size_t argv_n,
                                              Layout layout) && {
    prefix_arg_ = calls::argv_index(command_, argv_n);
    prefix_ = board + ":user:";
    if (command_.argv.at(prefix_arg_) != prefix_) unexpected("a metadata prefix argument");
    if (layout == Layout::Compact) compact_board_ = board;
    return std::make_unique<SingleCall>(std::move(*this));
  }
  const std::string* cached_metadata_prefix() const override {
    return prefix_arg_ != 0 && compact_board_.empty() ? &prefix_ : nullptr;
  }
  std::optional<MetadataSource> split_metadata() const override {
    if (prefix_arg_ == 0) return std::nullopt;
    return MetadataSource{prefix_, compact_board_};
  }
  // A lean form of its own (get_top on a default board: one ZRANGE, no script).
  void set_lean_form(std::function<std::unique_ptr<Operation>()> lean) { lean_ = std::move(lean); }
  std::unique_ptr<Operation> without_metadata() const override {
    if (prefix_arg_ == 0) return nullptr;
    if (lean_) {
      if (auto lean = lean_()) return lean;
    }
    return lean_script()();
  }
  // A maker of its script's lean form (the script with an empty prefix), for a lean form of its
  // own to fall back on.
  std::function<std::unique_ptr<Operation>()> lean_script() const {
    Command command = command_;
    command.argv[prefix_arg_].clear();
    return [name = name_, command = std::move(command), parse = parse_, window = parse_window_,
            id = id_]() -> std::unique_ptr<Operation> {
      auto lean = std::make_unique<SingleCall>(name, command, parse, id);
      lean->parse_window_ = window;
      return lean;
    };
  }

  const char* name() const override { return name_; }
  std::vector<Command> next() override {
    // One copy of the command (`return {command_}` made two: the list's, then the vector's).
    std::vector<Command> commands;
    commands.reserve(1);
    commands.push_back(command_);
    return commands;
  }
  codec::ReplySink* reply_sink(std::size_t) override { return parse_window_ ? &window_ : nullptr; }
  bool feed(std::vector<Reply>& replies) override {
    if (replies.size() != 1) unexpected(name_);
    Reply& reply = replies[0];
    if (id_) id_->accept(reply);
    if (!parse_window_) {
      result_ = parse_(reply);
    } else if (reply.is_array()) {
      if (!reply.streamed) codec::replay(reply, window_);
      result_ = parse_window_(&window_);
    } else {
      if (!reply.is_nil()) unexpected("a rank window");
      result_ = parse_window_(nullptr);
    }
    if (id_) id_->split_members(result_);  // tie-break columns: the members' keys
    return true;
  }
  Result take_result() override { return std::move(result_); }
  // Guards: a write carrying submission ids may be re-sent after a lost reply.
  int resend_limit() const override { return resends_; }
  void allow_resends(int resends) { resends_ = resends; }

 private:
  const char* name_;
  Command command_;
  Parser parse_;
  WindowParser parse_window_;  // set instead of parse_ for a rank window
  WindowReader window_;
  std::shared_ptr<Identity> id_;
  Result result_;
  int resends_ = 0;
  std::size_t prefix_arg_ = 0;  // of the metadata prefix in argv; 0: none
  std::string prefix_;
  std::string compact_board_;  // a compact board's key (caches_metadata); empty: the guide's
  std::function<std::unique_ptr<Operation>()> lean_;  // nullptr: none of its own
};

// The second step of a read in two steps (SplitRead, a split ListAll): each entry's metadata,
// into its entry. The entries must stay where they are until it is done.
// - The guide's layout: the HGETALL of each entry's hash ("<prefix><user_id>"),
//   Board::kPageSize a round trip.
// - A compact board: one HMGET of the board's hash "<board>:meta" (per Board::kPageSize ids),
//   pipelined behind an HGET of the layout its options record. A player without a field has no
//   metadata; but while a conversion runs (layout 'migrating', layout.lua), one whose fields
//   have not moved yet keeps them in the guide's hash: for each of those, a round trip more of
//   the guide's HGETALL then the HGET of the field (as CompactMetadata: right at every moment
//   of a conversion, which moves fields one way only).
class MetadataFetch {
 public:
  MetadataFetch() = default;
  MetadataFetch(Operation::MetadataSource source, std::vector<Entry*> entries)
      : source_(std::move(source)), entries_(std::move(entries)) {}
  bool done() const {
    if (!compact()) return done_ == entries_.size();
    return entries_.empty() || (done_ == entries_.size() && unmoved_done_ == unmoved_.size());
  }
  std::vector<Command> next() const {
    std::vector<Command> commands;
    if (compact() && done_ < entries_.size()) {  // the layout, then every entry's field
      commands.reserve(1 + (entries_.size() + kChunk - 1) / kChunk);
      commands.push_back(Command{nullptr, strings("HGET", source_.board + ":options", "layout")});
      for (std::size_t i = 0; i < entries_.size(); i += kChunk) {
        std::vector<std::string> argv{"HMGET", source_.board + ":meta"};
        const std::size_t end = std::min(entries_.size(), i + kChunk);
        argv.reserve(2 + end - i);
        for (std::size_t j = i; j < end; ++j) argv.push_back(entries_[j]->user_id);
        commands.push_back(Command{nullptr, std::move(argv)});
      }
      return commands;
    }
    if (compact()) {  // a conversion runs: those without a field, the guide's hash then it
      const std::size_t end = std::min(unmoved_.size(), unmoved_done_ + kChunk / 2);
      commands.reserve(2 * (end - unmoved_done_));
      for (std::size_t i = unmoved_done_; i < end; ++i) {
        commands.push_back(Command{nullptr, {"HGETALL", source_.prefix + unmoved_[i]->user_id}});
        commands.push_back(
            Command{nullptr, strings("HGET", source_.board + ":meta", unmoved_[i]->user_id)});
      }
      return commands;
    }
    const std::size_t end = std::min(entries_.size(), done_ + kChunk);
    commands.reserve(end - done_);
    for (std::size_t i = done_; i < end; ++i) {
      commands.push_back(Command{nullptr, {"HGETALL", source_.prefix + entries_[i]->user_id}});
    }
    return commands;
  }
  // The replies to next()'s commands; true once every entry has its metadata.
  bool feed(std::vector<Reply>& replies) {
    if (compact() && done_ < entries_.size()) return feed_fields(replies);
    if (compact()) {
      const std::size_t end = std::min(unmoved_.size(), unmoved_done_ + kChunk / 2);
      if (replies.size() != 2 * (end - unmoved_done_)) unexpected("HGETALL, HGET");
      for (std::size_t i = 0; i < replies.size(); i += 2) {
        Reply& field = replies[i + 1];
        unmoved_[unmoved_done_++]->metadata = parse_metadata(field.is_nil() ? replies[i] : field);
      }
      return done();
    }
    if (replies.size() != std::min(entries_.size() - done_, kChunk)) unexpected("HGETALL");
    for (auto& reply : replies) entries_[done_++]->metadata = parse_metadata(reply);
    return done();
  }

 private:
  static constexpr std::size_t kChunk = static_cast<std::size_t>(Board::kPageSize);
  bool compact() const { return !source_.board.empty(); }
  // The HGET of the layout and the HMGETs' replies.
  bool feed_fields(std::vector<Reply>& replies) {
    if (replies.size() != 1 + (entries_.size() + kChunk - 1) / kChunk) unexpected("HMGET");
    const Reply& layout = replies[0];
    const bool migrating = layout.type == ReplyType::String && layout.str == "migrating";
    for (std::size_t r = 1; r < replies.size(); ++r) {
      Reply& values = replies[r];
      const std::size_t expected = std::min(kChunk, entries_.size() - done_);
      if (!values.is_array() || values.elements.size() != expected) unexpected("HMGET");
      for (Reply& value : values.elements) {
        Entry* entry = entries_[done_++];
        if (!value.is_nil()) {
          if (value.type != ReplyType::String) unexpected("HMGET");
          entry->metadata = parse_compact_metadata(value.str);
        } else if (migrating) {
          unmoved_.push_back(entry);
        } else {
          entry->metadata.clear();
        }
      }
    }
    return done();
  }

  Operation::MetadataSource source_;
  std::vector<Entry*> entries_;
  std::size_t done_ = 0;         // entries whose metadata (compact: field) arrived
  std::vector<Entry*> unmoved_;  // compact, a conversion running: those without a field
  std::size_t unmoved_done_ = 0;
};

std::vector<Entry> ranged_entries(Reply& reply, long long first_rank);

// list_all: pages of the rank window from the top until the board is exhausted. A board
// larger than one page is read in several round trips and is not one snapshot. Split (`split`;
// see SplitRead), on a checked board of the guide's ranking rules (either layout) last known to
// hold Board::kSplitTopFrom entries or more (Identity::known_size, as get_top splits from that
// many): the guide's own commands, its ZRANGEs of Board::kPageSize entries (each with a ZCARD,
// which bounds the paging), then the entries' metadata (MetadataFetch: HGETALLs pipelined,
// Board::kPageSize a round trip; a compact board's HMGET): two round trips up to kPageSize
// entries, at the guide's cost. Else the first page is Board::kSplitReadFrom entries with their
// metadata, so a board that small is one round trip, one snapshot; past it the pages come
// without metadata (window.lua's lean mode), then their metadata as above.
class ListAll final : public Operation {
 public:
  ListAll(std::shared_ptr<Identity> id, std::string board, arg::option_keys option_keys,
          std::string prefix, bool split = false)
      : id_(std::move(id)),
        board_(std::move(board)),
        option_keys_(std::move(option_keys)),
        prefix_(std::move(prefix)),
        split_(split && !prefix_.empty()),
        ranges_(split_ && id_->ranks_as_guide() && id_->checked.load(std::memory_order_relaxed) &&
                id_->known_size.load(std::memory_order_relaxed) >= Board::kSplitTopFrom) {}
  const char* name() const override { return "list_all"; }
  bool paged() const override { return true; }
  std::vector<Command> next() override {
    if (fetching_) return fetch_.next();
    if (ranges_) {
      const std::size_t start = entries_.size();
      std::vector<Command> commands;
      commands.reserve(2);
      commands.push_back(Command{
          nullptr, strings("ZRANGE", board_, std::to_string(start),
                           std::to_string(start + Board::kPageSize - 1), "REV", "WITHSCORES")});
      commands.push_back(Command{nullptr, strings("ZCARD", board_)});
      return commands;
    }
    const bool lean = split_ && !entries_.empty();
    return {calls::window(
        arg::board{board_}, option_keys_, arg::user_prefix{lean ? std::string() : prefix_},
        arg::mode{"range"}, arg::start{std::to_string(entries_.size())},
        arg::count{std::to_string(page_count())}, id_->order_arg(), id_->ties_arg())};
  }
  codec::ReplySink* reply_sink(std::size_t) override {
    return fetching_ || ranges_ ? nullptr : &window_;
  }
  bool feed(std::vector<Reply>& replies) override {
    if (fetching_) return fetch_.feed(replies);
    if (ranges_) {
      if (replies.size() != 2) unexpected("ZRANGE, ZCARD");
      const auto before = static_cast<long long>(entries_.size());
      std::vector<Entry> page = ranged_entries(replies[0], before + 1);
      const long long size = parse_count(replies[1]);
      id_->known_size.store(size, std::memory_order_relaxed);
      const bool short_page = static_cast<long long>(page.size()) < Board::kPageSize;
      if (page.size() > static_cast<std::size_t>(Board::kPageSize)) unexpected("a ZRANGE page");
      for (auto& entry : page) entries_.push_back(std::move(entry));
      const auto read = static_cast<long long>(entries_.size());
      if (short_page || read >= size) return start_fetch();
      budget_.another(name(), size - read);
      return false;
    }
    auto& reply = replies.at(0);
    id_->accept(reply);
    if (!reply.is_array()) unexpected("a page of list_all");
    if (!reply.streamed) codec::replay(reply, window_);
    window_.check();
    long long size = window_.size();
    id_->known_size.store(size, std::memory_order_relaxed);
    const long long asked = page_count();
    if (window_.count() > static_cast<std::size_t>(asked)) {
      unexpected("a page of list_all");  // more than asked for
    }
    std::size_t before = entries_.size();
    window_.append_to(entries_, static_cast<long long>(before) + 1);
    bool short_page = entries_.size() - before < static_cast<std::size_t>(asked);
    const auto read = static_cast<long long>(entries_.size());
    if (short_page || read >= size) return start_fetch();
    budget_.another(name(), size - read);
    return false;
  }
  Result take_result() override {
    Result result = std::move(entries_);
    // Tie-break columns: members' keys (else done; ZRANGE pages: a board without them).
    if (!fetching_ && !ranges_) id_->split_members(result);
    return result;
  }
  const std::string* cached_metadata_prefix() const override {
    return prefix_.empty() || compact() ? nullptr : &prefix_;
  }
  std::unique_ptr<Operation> without_metadata() const override {
    if (prefix_.empty() || compact()) return nullptr;
    return std::make_unique<ListAll>(id_, board_, option_keys_, std::string());
  }
  bool in_two_steps() const override { return split_; }
  std::unique_ptr<Operation> in_one_trip() override {
    if (!split_) return nullptr;
    return std::make_unique<ListAll>(id_, board_, option_keys_, prefix_);
  }
  // A redirected HGETALL step (a cluster's slot moved or is moving): read again from the top,
  // every page with its metadata from the script (SplitRead's reason).
  std::unique_ptr<Operation> instead_after_redirect() override {
    return fetching_ ? std::make_unique<ListAll>(id_, board_, option_keys_, prefix_) : nullptr;
  }

 private:
  // A compact board: no client-side cache (every write would invalidate its one hash).
  bool compact() const { return id_->layout == Layout::Compact; }
  long long page_count() const {
    return split_ && entries_.empty() ? Board::kSplitReadFrom : Board::kPageSize;
  }
  // Every page read: done, or (split) the metadata of the entries read without it, by their
  // user ids (tie-break columns: the members' keys split off first): past the first page, or
  // every entry of ZRANGE pages.
  bool start_fetch() {
    const auto first = ranges_ ? 0 : static_cast<std::size_t>(Board::kSplitReadFrom);
    if (!split_ || entries_.size() <= first) return true;
    Result result = std::move(entries_);
    id_->split_members(result);
    entries_ = std::move(std::get<std::vector<Entry>>(result));
    std::vector<Entry*> lean;  // those read without metadata
    for (std::size_t i = first; i < entries_.size(); ++i) lean.push_back(&entries_[i]);
    fetch_ =
        MetadataFetch(MetadataSource{prefix_, compact() ? board_ : std::string()}, std::move(lean));
    fetching_ = true;
    return false;
  }

  std::shared_ptr<Identity> id_;
  std::string board_;
  arg::option_keys option_keys_;
  std::string prefix_;  // empty: without metadata (window.lua's lean mode)
  bool split_;
  bool ranges_;  // split, on a checked board of the guide's ranking rules: ZRANGE pages
  WindowReader window_;
  std::vector<Entry> entries_;
  RoundTripBudget budget_;
  bool fetching_ = false;  // every page read: the metadata of those past the first
  MetadataFetch fetch_;
};

// clear: remove a page of entries and their metadata per round trip until none remain.
class Clear final : public Operation {
 public:
  Clear(std::shared_ptr<Identity> id, std::string board, arg::removal_keys keys, std::string prefix)
      : id_(std::move(id)),
        board_(std::move(board)),
        keys_(std::move(keys)),
        prefix_(std::move(prefix)) {}
  const char* name() const override { return "clear"; }
  bool paged() const override { return true; }
  std::vector<Command> next() override {
    auto last = id_->removal_args();
    return {calls::clear(arg::board{board_}, keys_, arg::user_prefix{prefix_},
                         arg::page{std::to_string(Board::kPageSize)}, std::move(last.order),
                         std::move(last.ties), std::move(last.removal))};
  }
  bool feed(std::vector<Reply>& replies) override {
    id_->accept(replies.at(0));
    long long left = parse_count(replies.at(0));
    if (left == 0) return true;
    budget_.another(name(), left);
    return false;
  }
  Result take_result() override { return None{}; }

 private:
  std::shared_ptr<Identity> id_;
  std::string board_;
  arg::removal_keys keys_;
  std::string prefix_;
  RoundTripBudget budget_;
};

// convert_layout: layout.lua, a page per round trip until the board is in the compact layout;
// the result is how many players' metadata moved. ZSCAN's pages are about `page` members each:
// past four times the pages the board's size needs (plus some), it raises instead of looping.
class ConvertLayout final : public Operation {
 public:
  ConvertLayout(std::shared_ptr<Identity> id, std::string board, arg::option_keys keys,
                long long page)
      : id_(std::move(id)), board_(std::move(board)), keys_(std::move(keys)), page_(page) {}
  const char* name() const override { return "convert_layout"; }
  bool paged() const override { return true; }
  std::vector<Command> next() override {
    return {calls::layout(arg::board{board_}, keys_, arg::cursor{cursor_},
                          arg::page{std::to_string(page_)}, *id_->order_arg(), *id_->ties_arg())};
  }
  bool feed(std::vector<Reply>& replies) override {
    auto& reply = replies.at(0);
    id_->accept(reply);
    const auto& parts = parse_array(reply, 3);
    if (parts.size() != 3) unexpected("a page of convert_layout");
    cursor_ = take_string(reply.elements[0]);
    moved_ += parse_count(reply.elements[1], kMaxCount);
    const long long size = parse_count(reply.elements[2], kMaxCount);
    if (cursor_ == "0") return true;
    if (++pages_ > 4 * (size / page_ + 1) + 16) {
      throw RedisError("convert_layout gave up after " + std::to_string(pages_) +
                       " round trips over a board of " + std::to_string(size) +
                       " entries (the server's replies do not add up); call it again: it goes "
                       "on where it stopped");
    }
    return false;
  }
  Result take_result() override { return moved_; }

 private:
  static constexpr long long kMaxCount = 1LL << 40;
  std::shared_ptr<Identity> id_;
  std::string board_;
  arg::option_keys keys_;
  long long page_;
  std::string cursor_ = "0";
  long long moved_ = 0, pages_ = 0;
};

// set_max_entries and the trim after upsert_many: a page per round trip until the board fits,
// keeping the first `report` trimmed ids.
class Trim final : public Operation {
 public:
  // set_max_entries (no `report`) makes `max_entries` the board's limit once it has finished.
  Trim(std::shared_ptr<Identity> id, std::string board, arg::removal_keys keys, std::string prefix,
       long long max_entries, std::optional<long long> report)
      : id_(std::move(id)),
        board_(std::move(board)),
        keys_(std::move(keys)),
        prefix_(std::move(prefix)),
        max_entries_(max_entries),
        report_(report) {}
  const char* name() const override { return report_ ? "trim_to_max_entries" : "set_max_entries"; }
  bool paged() const override { return true; }
  std::vector<Command> next() override {
    long long wanted =
        report_ ? *report_ - static_cast<long long>(summary_.user_ids.size()) : Board::kPageSize;
    auto last = id_->removal_args();
    return {calls::trim(arg::board{board_}, keys_, arg::user_prefix{prefix_},
                        arg::max_entries{std::to_string(max_entries_)},
                        arg::limit{std::to_string(Board::kPageSize)},
                        arg::report{std::to_string(std::max(0LL, wanted))}, std::move(last.order),
                        std::move(last.ties), std::move(last.removal))};
  }
  bool feed(std::vector<Reply>& replies) override {
    auto& reply = replies.at(0);
    id_->accept(reply);
    parse_array(reply, 3);
    long long left = parse_count(reply.elements[0]);
    long long trimmed = parse_count(reply.elements[1], Board::kPageSize);
    auto& ids = reply.elements[2];
    if (!ids.is_array() || static_cast<long long>(ids.elements.size()) > trimmed) {
      unexpected("the trimmed user ids");  // more than it trimmed
    }
    summary_.trimmed += trimmed;
    for (auto& id : parse_strings(ids)) summary_.user_ids.push_back(std::move(id));
    if (left == 0) {
      if (!report_) id_->max_entries.store(max_entries_, std::memory_order_relaxed);
      return true;
    }
    budget_.another(name(), left);
    return false;
  }
  Result take_result() override {
    if (report_) return std::move(summary_);
    return std::move(summary_.user_ids);
  }

 private:
  std::shared_ptr<Identity> id_;
  std::string board_;
  arg::removal_keys keys_;
  std::string prefix_;
  long long max_entries_;
  std::optional<long long> report_;  // none: every id, as set_max_entries returns them
  TrimSummary summary_;
  RoundTripBudget budget_;
};

// MULTI, `commands`, EXEC: one transaction, sent in one round trip.
std::vector<Command> transaction(std::vector<Command> commands) {
  std::vector<Command> all;
  all.reserve(commands.size() + 2);
  all.push_back(Command{nullptr, strings("MULTI")});
  for (auto& command : commands) all.push_back(std::move(command));
  all.push_back(Command{nullptr, strings("EXEC")});
  return all;
}

// The replies to transaction() of `count` commands (MULTI's, each command's QUEUED, EXEC's):
// EXEC's, whose `count` replies are the commands' own. An error reply there, or EXEC's own
// (EXECABORT), raises it (raise_server_error); a reply of another shape is unexpected.
Reply& exec_reply(std::vector<Reply>& replies, std::size_t count, const char* name) {
  if (replies.size() != count + 2) unexpected(name);
  Reply& exec = replies.back();
  if (exec.is_error()) raise_server_error(exec.str);
  if (!exec.is_array() || exec.elements.size() != count) unexpected(name);
  for (const auto& reply : exec.elements) {
    if (reply.is_error()) raise_server_error(reply.str);
  }
  return exec;
}

// A fixed list of commands in one round trip; the result is `count`.
class Batch final : public Operation {
 public:
  Batch(std::vector<Command> commands, long long count)
      : commands_(std::move(commands)), count_(count) {}
  const char* name() const override { return "upsert_many"; }
  // MULTI, the commands, EXEC: Redis 7 refuses to queue commands when out of memory, and then
  // discards the whole chunk (EXECABORT), so a chunk refused for memory writes nothing.
  std::vector<Command> next() override {
    if (commands_.empty()) return {};
    sent_ = commands_.size();
    return transaction(std::exchange(commands_, {}));
  }
  bool feed(std::vector<Reply>& replies) override {
    if (sent_ == 0) return true;  // an empty chunk
    // A command that failed as it ran (WRONGTYPE, NOPERM) raises: the others of the chunk
    // applied.
    exec_reply(replies, sent_, name());
    return true;
  }
  Result take_result() override { return count_; }

 private:
  std::vector<Command> commands_;
  std::size_t sent_ = 0;
  long long count_;
};

// get_user_metadata on a compact board: HGETALL of the guide's hash, then HGET of the user's
// field of the board's hash, pipelined (one round trip, no script): the field if it is there,
// else the guide's hash. Right at every moment of a conversion (layout.lua), which moves a
// player's fields one way only, from the guide's hash to the board's: a field found was the
// player's then; none found means none had moved when it was read, so the guide's hash, read
// just before, held them (or nothing). After the conversion the HGETALL finds no key.
class CompactMetadata final : public Operation {
 public:
  CompactMetadata(std::string guide_key, std::string meta_key, std::string user_id)
      : guide_key_(std::move(guide_key)),
        meta_key_(std::move(meta_key)),
        user_id_(std::move(user_id)) {}
  const char* name() const override { return "get_user_metadata"; }
  std::vector<Command> next() override {
    std::vector<Command> commands;
    commands.reserve(2);
    commands.push_back(Command{nullptr, strings("HGETALL", guide_key_)});
    commands.push_back(Command{nullptr, strings("HGET", meta_key_, user_id_)});
    return commands;
  }
  bool feed(std::vector<Reply>& replies) override {
    if (replies.size() != 2) unexpected(name());
    Reply& field = replies[1];
    result_ = field.is_nil() ? parse_metadata(replies[0]) : parse_metadata(field);
    return true;
  }
  Result take_result() override { return std::move(result_); }

 private:
  std::string guide_key_, meta_key_, user_id_;
  Result result_;
};

// get_user_entry on the guide's board (one known to record no options): the guide's own
// MULTI, ZSCORE, ZREVRANK, HGETALL, EXEC in one round trip, one snapshot as the script's, at
// 0.7x of its server CPU (docs/pages/benchmarks.md). On a compact board of the same rules
// (`guide_key` set) the user's field of the board's hash (`user_key`) instead, and HGETALL of
// the guide's hash for a player a conversion has not moved yet (as CompactMetadata: the field if
// it is there, else the hash), both in the same transaction. Redis before 7.4 refuses to queue
// even a read when out of memory (redis#12961; the queued commands answer OOM, EXEC
// EXECABORT): then the script (`script`, entry.lua's call: a no-writes script that runs out of
// memory) answers instead, in a second round trip. Any other refusal (NOPERM, WRONGTYPE) is
// raised as the script's would be.
class GuideEntry final : public Operation {
 public:
  GuideEntry(std::string board, std::string user_key, std::string user_id, std::string guide_key,
             Command script, std::shared_ptr<Identity> id)
      : board_(std::move(board)),
        user_key_(std::move(user_key)),
        user_id_(std::move(user_id)),
        guide_key_(std::move(guide_key)),
        script_command_(std::move(script)),
        id_(std::move(id)) {}
  const char* name() const override { return "get_user_entry"; }
  bool reads_error_replies() const override { return true; }
  std::vector<Command> next() override {
    if (script_) return script_->next();
    std::vector<Command> commands;
    commands.reserve(4);
    commands.push_back(Command{nullptr, strings("ZSCORE", board_, user_id_)});
    commands.push_back(Command{nullptr, strings("ZREVRANK", board_, user_id_)});
    if (guide_key_.empty()) {
      commands.push_back(Command{nullptr, strings("HGETALL", user_key_)});
    } else {
      commands.push_back(Command{nullptr, strings("HGET", user_key_, user_id_)});
      commands.push_back(Command{nullptr, strings("HGETALL", guide_key_)});
    }
    return transaction(std::move(commands));
  }
  bool feed(std::vector<Reply>& replies) override {
    if (script_) {
      for (const auto& reply : replies) {
        if (reply.is_error()) raise_server_error(reply.str);
      }
      return script_->feed(replies);
    }
    const std::size_t queued = guide_key_.empty() ? 3 : 4;
    if (replies.size() != queued + 2) unexpected(name());
    for (std::size_t i = 0; i + 1 < replies.size(); ++i) {
      if (!replies[i].is_error()) continue;
      if (replies[i].str.compare(0, 4, "OOM ") == 0) {  // nothing ran: the script instead
        script_ = std::make_unique<SingleCall>(
            "get_user_entry", std::move(script_command_),
            [user_id = user_id_](Reply& reply) { return entry_reply(reply, user_id, 3); }, id_);
        return false;
      }
      raise_server_error(replies[i].str);
    }
    Reply& exec = exec_reply(replies, queued, name());
    if (exec.elements[0].is_nil()) {  // not on the board
      result_ = std::optional<Entry>();
      return true;
    }
    if (queued == 4) {  // the field if it is there, else the guide's hash
      if (exec.elements[2].is_nil()) exec.elements[2] = std::move(exec.elements[3]);
      exec.elements.pop_back();
    }
    result_ = entry_reply(exec, std::move(user_id_), 3);
    return true;
  }
  Result take_result() override { return script_ ? script_->take_result() : std::move(result_); }

 private:
  std::string board_, user_key_, user_id_, guide_key_;
  Command script_command_;
  std::shared_ptr<Identity> id_;
  std::unique_ptr<Operation> script_;  // after an OOM refusal
  Result result_;
};

}  // namespace

std::unique_ptr<Operation> ping() {
  return std::make_unique<SingleCall>("ping", Command{nullptr, {"PING"}},
                                      [](Reply& reply) -> Result {
                                        if (reply.type != ReplyType::Status) unexpected("PING");
                                        return true;
                                      });
}

SubmitResult parse_submit_reply(Reply& reply, std::string user_id, bool idempotent,
                                const Board* board) {
  parse_array(reply, 7);
  auto& parts = reply.elements;
  if (parts.size() != (idempotent ? 9u : 7u)) unexpected("a submit");
  SubmitResult result;
  result.trimmed_user_ids = parse_strings(parts[0]);
  result.entry.user_id = std::move(user_id);
  result.entry.score = parse_score(parts[1]);
  if (!parts[2].is_nil()) result.entry.rank = parse_rank(parts[2]) + 1;
  result.entry.metadata = parse_metadata(parts[3]);
  if (!parts[4].is_nil()) result.previous_score = parse_score(parts[4]);
  if (!parts[5].is_nil()) result.previous_rank = parse_rank(parts[5]) + 1;
  result.changed = parse_count(parts[6], 1) == 1;
  if (idempotent) result.duplicate = parse_count(parts[7], 1) == 1;  // guards
  if (board && board->period()) {  // seasons: the period written (a duplicate's: the first's)
    result.period = board->period();
    if (idempotent) {
      if (parts[8].type != ReplyType::String) unexpected("a submit");
      const std::string& applied = parts[8].str;
      const std::string& scope = board->submission_scope();
      if (applied.size() > scope.size() + 1 && applied.compare(0, scope.size(), scope) == 0 &&
          applied[scope.size()] == ':') {
        result.period = applied.substr(scope.size() + 1);
      }
    }
  }
  return result;
}

std::vector<Entry*> entries_of(Result& result) {
  std::vector<Entry*> out;
  if (auto* list = std::get_if<std::vector<Entry>>(&result)) {
    for (auto& entry : *list) out.push_back(&entry);
  } else if (auto* page = std::get_if<Page>(&result)) {
    for (auto& entry : page->entries) out.push_back(&entry);
  } else if (auto* some = std::get_if<std::vector<std::optional<Entry>>>(&result)) {
    for (auto& entry : *some) {
      if (entry) out.push_back(&*entry);
    }
  } else if (auto* one = std::get_if<std::optional<Entry>>(&result)) {
    if (*one) out.push_back(&**one);
  }
  return out;
}

namespace {

class ReadHashes final : public Operation {
 public:
  ReadHashes(std::vector<std::string> keys, std::function<void(std::vector<Metadata>&&)> sink)
      : keys_(std::move(keys)), sink_(std::move(sink)) {}
  const char* name() const override { return "read_hashes"; }
  std::vector<Command> next() override {
    std::vector<Command> commands;
    commands.reserve(keys_.size());
    for (const auto& key : keys_) commands.push_back(Command{nullptr, {"HGETALL", key}});
    return commands;
  }
  bool feed(std::vector<Reply>& replies) override {
    if (replies.size() != keys_.size()) unexpected("HGETALL");
    std::vector<Metadata> hashes;
    hashes.reserve(replies.size());
    for (auto& reply : replies) hashes.push_back(parse_metadata(reply));
    sink_(std::move(hashes));
    return true;
  }
  Result take_result() override { return None{}; }

 private:
  std::vector<std::string> keys_;
  std::function<void(std::vector<Metadata>&&)> sink_;
};

}  // namespace

std::unique_ptr<Operation> read_hashes(std::vector<std::string> keys,
                                       std::function<void(std::vector<Metadata>&&)> sink) {
  return std::make_unique<ReadHashes>(std::move(keys), std::move(sink));
}

namespace {

// A read of many entries in the guide's two steps: the ranked read without metadata (the read's
// lean form, as a client-side cache runs it: the guide's ZRANGE on a checked default board, else
// its script with an empty prefix), then one HGETALL per entry, pipelined in steps of at most
// Board::kPageSize. Redis runs the guide's commands: each HGETALL a command of its own, none
// through a script's redis.call with its reply made a Lua table and back (1.5-2x the server CPU
// of a page of 100, benchmarks.md). Not one snapshot: an entry removed or rewritten between the
// two steps shows its metadata as of the second (none once removed), as the guide's reads. On a
// cluster, a redirect of the second step (the slot moved or is moving between the steps) starts
// the read over as its one script (instead_after_redirect), routed as a new call.
class SplitRead final : public Operation {
 public:
  explicit SplitRead(std::unique_ptr<Operation> whole) : whole_(std::move(whole)) {}
  const char* name() const override { return whole_->name(); }
  std::vector<Command> next() override {
    if (!lean_) {
      lean_ = whole_->without_metadata();
      if (!lean_) throw std::logic_error("SplitRead needs a read with a lean form");
    }
    return fetching_ ? fetch_.next() : lean_->next();
  }
  codec::ReplySink* reply_sink(std::size_t index) override {
    return fetching_ ? nullptr : lean_->reply_sink(index);
  }
  bool feed(std::vector<Reply>& replies) override {
    if (!fetching_) {
      if (!lean_->feed(replies)) return false;
      result_ = lean_->take_result();
      fetch_ = MetadataFetch(*whole_->split_metadata(), entries_of(result_));
      fetching_ = true;
      return fetch_.done();
    }
    return fetch_.feed(replies);
  }
  Result take_result() override { return std::move(result_); }
  int resend_limit() const override { return lean_ ? lean_->resend_limit() : 0; }
  const std::string* cached_metadata_prefix() const override {
    return whole_->cached_metadata_prefix();
  }
  std::optional<MetadataSource> split_metadata() const override { return whole_->split_metadata(); }
  std::unique_ptr<Operation> without_metadata() const override {
    return whole_->without_metadata();
  }
  bool in_two_steps() const override { return true; }
  std::unique_ptr<Operation> in_one_trip() override {
    if (lean_) throw std::logic_error("SplitRead::in_one_trip() before it runs");
    return std::move(whole_);
  }
  // The first step (one command: the ZRANGE or the script's lean form) goes again where the
  // reply says; the second starts over as the one script.
  std::unique_ptr<Operation> instead_after_redirect() override {
    return fetching_ ? std::move(whole_) : nullptr;
  }

 private:
  std::unique_ptr<Operation> whole_;  // the read in one step, which gives its lean form
  std::unique_ptr<Operation> lean_;
  Result result_;
  bool fetching_ = false;
  MetadataFetch fetch_;  // into result_'s entries
};

}  // namespace

std::unique_ptr<Operation> split_read(std::unique_ptr<Operation> read, long long count,
                                      long long from) {
  if (count < from || !read->split_metadata()) return read;
  return std::make_unique<SplitRead>(std::move(read));
}

namespace {

// The entries of a ZRANGE ... WITHSCORES reply, the first ranked `first_rank` (a default board:
// ranks are positions).
std::vector<Entry> ranged_entries(Reply& reply, long long first_rank) {
  const auto& flat = parse_array(reply);
  if (flat.size() % 2 != 0) unexpected("ZRANGE WITHSCORES");
  std::vector<Entry> entries(flat.size() / 2);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    entries[i].rank = first_rank + static_cast<long long>(i);
    entries[i].user_id = take_string(reply.elements[2 * i]);
    entries[i].score = parse_score(reply.elements[2 * i + 1]);
  }
  return entries;
}

// get_around_rank's lean form on a checked default board (the first step of its SplitRead, and
// a client-side cache's read): the guide's ZRANGE of the window from `start` (its rank less half
// the count). A full window is the answer, whatever the board's size: the clamp to the board's
// end moves only a window that runs past it. A short one did run past the end (or the board is
// smaller than the window): then the window script's lean form (`clamped`), which clamps it.
// Either way the ranks and scores are one snapshot, as the script's.
class AroundLean final : public Operation {
 public:
  AroundLean(std::string key, long long start, long long count, std::unique_ptr<Operation> clamped)
      : key_(std::move(key)), start_(start), count_(count), clamped_(std::move(clamped)) {}
  const char* name() const override { return "get_around_rank"; }
  std::vector<Command> next() override {
    if (clamping_) return clamped_->next();
    return {Command{nullptr,
                    {"ZRANGE", key_, std::to_string(start_), std::to_string(start_ + count_ - 1),
                     "REV", "WITHSCORES"}}};
  }
  codec::ReplySink* reply_sink(std::size_t index) override {
    return clamping_ ? clamped_->reply_sink(index) : nullptr;
  }
  bool feed(std::vector<Reply>& replies) override {
    if (clamping_) return clamped_->feed(replies);
    if (replies.size() != 1) unexpected("ZRANGE WITHSCORES");
    auto entries = ranged_entries(replies[0], start_ + 1);
    if (entries.size() < static_cast<std::size_t>(count_)) {
      clamping_ = true;
      return false;
    }
    result_ = std::move(entries);
    return true;
  }
  Result take_result() override { return clamping_ ? clamped_->take_result() : std::move(result_); }

 private:
  std::string key_;
  long long start_, count_;
  std::unique_ptr<Operation> clamped_;
  bool clamping_ = false;
  Result result_;
};

}  // namespace

std::string format_score(double value) {
  char buffer[32];
  int n = std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return std::string(buffer, static_cast<std::size_t>(n));
}

Order parse_order(std::string_view name) {
  if (name == "desc") return Order::Desc;
  if (name == "asc") return Order::Asc;
  throw InvalidArgument("order must be 'desc' or 'asc', not '" + std::string(name) + "'");
}

Ties parse_ties(std::string_view name) {
  if (name == "lexicographic") return Ties::Lexicographic;
  if (name == "first") return Ties::First;
  if (name == "competition") return Ties::Competition;
  if (name == "dense") return Ties::Dense;
  throw InvalidArgument("ties must be 'lexicographic', 'first', 'competition' or 'dense', not '" +
                        std::string(name) + "'");
}

Layout parse_layout(std::string_view name) {
  if (name == "guide") return Layout::Guide;
  if (name == "compact") return Layout::Compact;
  throw InvalidArgument("layout must be 'guide' or 'compact', not '" + std::string(name) + "'");
}

const char* name_of(Layout layout) { return layout == Layout::Compact ? "compact" : "guide"; }

WriteMode parse_write_mode(std::string_view name) {
  if (name == "set") return WriteMode::Set;
  if (name == "best") return WriteMode::Best;
  if (name == "incr") return WriteMode::Incr;
  throw InvalidArgument("mode must be 'set', 'best' or 'incr', not '" + std::string(name) + "'");
}

const char* name_of(Order order) { return order == Order::Desc ? "desc" : "asc"; }

const char* name_of(Ties ties) {
  switch (ties) {
    case Ties::Lexicographic:
      return "lexicographic";
    case Ties::First:
      return "first";
    case Ties::Competition:
      return "competition";
    case Ties::Dense:
      return "dense";
  }
  return "lexicographic";
}

const char* name_of(WriteMode mode) {
  switch (mode) {
    case WriteMode::Set:
      return "set";
    case WriteMode::Best:
      return "best";
    case WriteMode::Incr:
      return "incr";
  }
  return "set";
}

// ---- Guards -----------------------------------------------------------------------------------

namespace {
std::string milliseconds(double seconds) { return std::to_string(std::llround(seconds * 1000)); }

// The rate_limit as recorded in the options hash: "<max>/<per ms>".
std::string rate_text(const Guards& guards) {
  if (!guards.rate_max) return "-";
  return std::to_string(*guards.rate_max) + "/" + milliseconds(guards.rate_per);
}

// A number as the scripts write it in the options hash (score_text): exact, "0" for -0.
std::string limit_text(double value) { return value == 0 ? "0" : format_score(value); }

// The score limits as recorded: score_range "<min>/<max>" (either empty), max_increment "<n>".
std::string range_text(const Guards& guards) {
  if (!guards.score_min && !guards.score_max) return "-";
  return (guards.score_min ? limit_text(*guards.score_min) : "") + "/" +
         (guards.score_max ? limit_text(*guards.score_max) : "");
}
std::string max_increment_text(const Guards& guards) {
  return guards.max_increment ? limit_text(*guards.max_increment) : "-";
}

}  // namespace

void require_submission_id(const std::optional<std::string>& id) {
  if (id && id->empty()) throw InvalidArgument("submission_id must not be empty");
}

double require_submission_ttl(double seconds) {
  if (!(seconds >= 0.001 && seconds <= 1e10)) {
    throw InvalidArgument("submission_ttl must be a number of seconds from 0.001 to 1e10");
  }
  return seconds;
}

void add_submission_guard(std::string& spec, std::vector<std::string>& keys,
                          const std::string& scope, double submission_ttl,
                          const std::string& submission_id) {
  // With this call's token (see new_call_token): the record keeps the one that applied it.
  word::add(spec, keys,
            word::sid{milliseconds(submission_ttl), new_call_token(),
                      scope + ":submission:" + submission_id});
}

std::string limit_words(const Guards& guards) {
  std::string words;
  if (guards.score_min || guards.score_max) {
    word::add(words, word::range{guards.score_min ? limit_text(*guards.score_min) : "",
                                 guards.score_max ? limit_text(*guards.score_max) : ""});
  }
  if (guards.max_increment) word::add(words, word::maxinc{limit_text(*guards.max_increment)});
  return words;
}

std::string guard_rule_words(const Guards& guards) {
  std::string words;
  if (guards.rate_max) {
    words += ' ' + word::text(word::rate{std::to_string(*guards.rate_max),
                                         milliseconds(guards.rate_per), ""});
  }
  if (guards.events) {
    words += ' ' + word::text(word::events{std::to_string(guards.events_maxlen), ""});
  }
  return words;
}

void validate_score_limits(const Guards& guards) {
  for (auto limit : {guards.score_min, guards.score_max, guards.max_increment}) {
    if (limit && !std::isfinite(*limit)) {
      throw InvalidArgument("score_range and max_increment must be finite numbers");
    }
  }
  if (guards.score_min && guards.score_max && *guards.score_min > *guards.score_max) {
    throw InvalidArgument("score_range must be (min, max) with min <= max");
  }
  if (guards.max_increment && *guards.max_increment < 0) {
    throw InvalidArgument("max_increment must not be negative");
  }
}

namespace {

// An 'OPTIONS ...' status's field `name` ("?" if absent): "OPTIONS order=<o> ties=<t> ...".
std::string status_field(const std::string& status, std::string_view name) {
  auto at = status.find(" " + std::string(name) + "=");
  if (at == std::string::npos) return "?";
  at += name.size() + 2;
  return status.substr(at, status.find(' ', at) - at);
}

// The options as the scripts record them ('-' or '?': none), as Python writes them.
std::string options_text(const std::string& order, std::string ties, const std::string& rate,
                         const std::string& events, const std::string& range,
                         const std::string& increment) {
  // A compact board: its ties word ends "+compact" (Identity::ties_word).
  static constexpr std::string_view kCompact = "+compact";
  const bool compact = ties.size() > kCompact.size() &&
                       ties.compare(ties.size() - kCompact.size(), kCompact.size(), kCompact) == 0;
  if (compact) ties.erase(ties.size() - kCompact.size());
  auto none = [](const std::string& text) { return text == "-" || text == "?"; };
  auto pair = [&](const std::string& text, auto&& side) -> std::string {
    auto slash = text.find('/');
    if (none(text) || slash == std::string::npos) return "None";
    return "(" + side(text.substr(0, slash)) + ", " + side(text.substr(slash + 1)) + ")";
  };
  // rate_limit "<max>/<per ms>"; score_range "<min>/<max>", either side empty.
  auto as_is = [](const std::string& text) { return text; };
  auto seconds = [](const std::string& ms) {
    return format_score(std::strtod(ms.c_str(), nullptr) / 1000);
  };
  auto optional = [](const std::string& text) { return text.empty() ? "None" : text; };
  // Tie-break columns: ties "tb:<name>.<desc|asc>,..." (see Identity::ties_word).
  std::string rule = "ties='" + ties + "'";
  if (ties.compare(0, 3, "tb:") == 0) {
    rule = "ties='lexicographic', tiebreak=(";
    std::size_t at = 3;
    while (at < ties.size()) {
      std::size_t comma = ties.find(',', at);
      if (comma == std::string::npos) comma = ties.size();
      std::string column = ties.substr(at, comma - at);
      std::size_t dot = column.rfind('.');
      rule += (at > 3 ? ", " : "") + std::string("('") + column.substr(0, dot) + "', '" +
              (dot == std::string::npos ? "?" : column.substr(dot + 1)) + "')";
      at = comma + 1;
    }
    rule += ties.find(',') == std::string::npos ? ",)" : ")";  // a one-item tuple: ('a', 'desc'),
  }
  return "order='" + order + "', " + rule + ", rate_limit=" +
         (none(rate) ? "None"
                     : "(" + rate.substr(0, rate.find('/')) + ", " +
                           seconds(rate.substr(rate.find('/') + 1)) + ")") +
         ", events=" + (events == "1" ? "True" : "False") +
         ", score_range=" + pair(range, optional) +
         ", max_increment=" + (none(increment) ? std::string("None") : as_is(increment)) +
         (compact ? ", layout='compact'" : "");
}

}  // namespace

std::string recorded_options_text(const std::string& status) {
  auto field = [&](std::string_view name) { return status_field(status, name); };
  std::string ties = field("ties");
  const std::string layout = field("layout");
  if (layout == "compact" || layout == "migrating") ties += "+compact";
  return options_text(field("order"), ties, field("rate_limit"), field("events"),
                      field("score_range"), field("max_increment")) +
         (layout == "migrating" ? " (its conversion from the guide's layout is under way)" : "");
}

std::string guards_status_text(const Guards& guards) {
  return "rate_limit=" + rate_text(guards) + " events=" + (guards.events ? "1" : "-") +
         " score_range=" + range_text(guards) + " max_increment=" + max_increment_text(guards);
}

std::string options_text(Order order, Ties ties, const Guards& guards) {
  return options_text(order, std::string(name_of(ties)), guards);
}

std::string options_text(Order order, const std::string& ties_word, const Guards& guards) {
  return options_text(name_of(order), ties_word, rate_text(guards), guards.events ? "1" : "-",
                      range_text(guards), max_increment_text(guards));
}

// ---- Tie-break columns ------------------------------------------------------------------------

namespace {
// The order-preserving image of a double: unsigned order is numeric order (-0 as 0).
std::uint64_t ordered_bits(double value) {
  if (value == 0) value = 0;  // -0.0
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return (bits >> 63) != 0 ? ~bits : bits | (std::uint64_t{1} << 63);
}

double unordered_bits(std::uint64_t image) {
  std::uint64_t bits = (image >> 63) != 0 ? image & ~(std::uint64_t{1} << 63) : ~image;
  double value = 0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// A column's image is inverted where a better value must sort lower: the board reads its
// ranked set best first in reverse member order for 'desc', in member order for 'asc'.
bool inverted(const TiebreakColumn& column, Order order) {
  return column.desc != (order == Order::Desc);
}
}  // namespace

std::string tiebreak_key(const std::vector<TiebreakColumn>& columns, Order order,
                         const std::vector<double>& values) {
  if (values.size() != columns.size()) {
    throw InvalidArgument("tiebreak needs a value for each column, no other");
  }
  std::string key;
  key.reserve(kTiebreakWidth * columns.size());
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (!std::isfinite(values[i])) {
      throw InvalidArgument("tiebreak column '" + columns[i].name + "' must be a finite number");
    }
    std::uint64_t image = ordered_bits(values[i]);
    if (inverted(columns[i], order)) image = ~image;
    char digits[17];
    std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(image));
    key.append(digits, kTiebreakWidth);
  }
  return key;
}

std::vector<std::pair<std::string, double>> tiebreak_values(
    const std::vector<TiebreakColumn>& columns, Order order, std::string_view key) {
  std::vector<std::pair<std::string, double>> out;
  out.reserve(columns.size());
  for (std::size_t i = 0; i < columns.size(); ++i) {
    std::string digits(key.substr(i * kTiebreakWidth, kTiebreakWidth));
    char* end = nullptr;
    std::uint64_t image = std::strtoull(digits.c_str(), &end, 16);
    if (digits.size() != kTiebreakWidth || *end != '\0') unexpected("a tie-break key");
    if (inverted(columns[i], order)) image = ~image;
    out.emplace_back(columns[i].name, unordered_bits(image));
  }
  return out;
}

void Board::Identity::accept(const Reply& reply) {
  static constexpr std::string_view kPrefix = "OPTIONS ";
  if (reply.type != ReplyType::Status || reply.str.compare(0, kPrefix.size(), kPrefix) != 0) {
    checked.store(true, std::memory_order_relaxed);
    return;
  }
  std::string recorded = recorded_options_text(reply.str);
  // A compact client on a board of the guide's layout (which records no layout): say so.
  if (layout == Layout::Compact && status_field(reply.str, "layout") == "?") {
    recorded += ", layout='guide'";
  }
  throw OptionsMismatch("leaderboard '" + key + "' has " + recorded +
                        " (recorded in Redis); this client opened it with " +
                        options_text(order, ties_word(), guards));
}

std::string Board::Identity::ties_word() const {
  std::string word = name_of(ties);
  if (!tiebreak.empty()) {
    word = "tb:";
    for (const auto& column : tiebreak) {
      if (word.size() > 3) word += ",";
      word += column.name + (column.desc ? ".desc" : ".asc");
    }
  }
  if (layout == Layout::Compact) word += "+compact";
  return word;
}

void Board::Identity::split_members(Result& result) const {
  if (tiebreak.empty()) return;
  const std::size_t width = kTiebreakWidth * tiebreak.size();
  for (Entry* entry : entries_of(result)) {
    if (entry->user_id.size() < width) unexpected("a ranked member");
    entry->tiebreak =
        tiebreak_values(tiebreak, order, std::string_view(entry->user_id).substr(0, width));
    entry->user_id.erase(0, width);
  }
}

std::vector<std::string> Board::Identity::with_options(std::vector<std::string> args) const {
  if (!is_default()) {
    args.emplace_back(name_of(order));
    args.emplace_back(ties_word());
  }
  return args;
}

std::optional<arg::order> Board::Identity::order_arg() const {
  if (is_default()) return std::nullopt;
  return arg::order{std::string(name_of(order))};
}

std::optional<arg::ties> Board::Identity::ties_arg() const {
  if (is_default()) return std::nullopt;
  return arg::ties{ties_word()};
}

Board::Identity::RemovalArgs Board::Identity::removal_args() const {
  RemovalArgs out;
  if (!guards.events && is_default()) return out;
  out.order = arg::order{std::string(name_of(order))};
  out.ties = arg::ties{ties_word()};
  if (!guards.events) return out;
  // The stream's key is removal_keys_arg's last.
  std::string words = word::text(word::events{std::to_string(guards.events_maxlen), ""});
  if (expire_at) word::add(words, word::expire{std::to_string(*expire_at)});  // a periodic board's
  out.removal = arg::removal{std::move(words)};
  return out;
}

Board::Board(std::string key, long long max_entries, Order order, Ties ties, Guards guards,
             std::optional<long long> expire_at, std::optional<std::string> submission_scope,
             std::vector<TiebreakColumn> tiebreak,
             std::optional<std::pair<long long, long long>> open_span, Layout layout)
    : id_(std::make_shared<Identity>()) {
  id_->layout = layout;
  if (open_span && !(open_span->first < open_span->second)) {
    throw InvalidArgument("open_span must be (from, until) with from < until (unix ms)");
  }
  id_->open_span = open_span;
  if (tiebreak.size() > kMaxTiebreakColumns) {
    throw InvalidArgument("tiebreak takes at most 4 columns");
  }
  for (std::size_t i = 0; i < tiebreak.size(); ++i) {
    const std::string& name = tiebreak[i].name;
    bool ok =
        !name.empty() && name.size() <= 32 && !std::isdigit(static_cast<unsigned char>(name[0]));
    for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!ok) {
      throw InvalidArgument(
          "a tiebreak column's name is 1 to 32 letters, digits or '_', not "
          "starting with a digit, not '" +
          name + "'");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (tiebreak[j].name == name) throw InvalidArgument("tiebreak column '" + name + "' twice");
    }
  }
  if (!tiebreak.empty() && ties != Ties::Lexicographic) {
    throw InvalidArgument(
        "tiebreak columns rank equal scores themselves: ties must be "
        "'lexicographic' (the user id after the columns)");
  }
  id_->tiebreak = std::move(tiebreak);
  if (key.empty()) throw InvalidArgument("key must not be empty");
  if (submission_scope &&
      (submission_scope->empty() || key.size() <= submission_scope->size() + 1 ||
       key.compare(0, submission_scope->size(), *submission_scope) != 0 ||
       key[submission_scope->size()] != ':')) {
    throw InvalidArgument("submission_scope must be a prefix of key followed by ':'");
  }
  if (expire_at && *expire_at < 1) throw InvalidArgument("expire_at must be at least 1 (unix ms)");
  id_->expire_at = expire_at;
  id_->max_entries = require_at_least_one(max_entries, "max_entries");
  validate_guards(guards);
  id_->scope = submission_scope ? std::move(*submission_scope) : key;
  id_->key = std::move(key);
  id_->order = order;
  id_->ties = ties;
  id_->guards = guards;
}

// ---- Guards -----------------------------------------------------------------------------------

std::string Board::open_word() const {
  const auto& span = id_->open_span;
  if (!span) return {};
  std::string words;
  word::add(words, word::open{std::to_string(span->first), std::to_string(span->second)});
  return words;
}

std::optional<std::string> Board::period() const {
  if (id_->scope.size() == id_->key.size()) return std::nullopt;
  return id_->key.substr(id_->scope.size() + 1);
}

void validate_guards(const Guards& guards) {
  // The guards' limits, in whole milliseconds on the wire.
  require_submission_ttl(guards.submission_ttl);
  if (guards.rate_max) {
    if (*guards.rate_max < 1) throw InvalidArgument("rate_limit's max_writes must be at least 1");
    if (!(guards.rate_per >= 0.001 && guards.rate_per <= 1e10)) {
      throw InvalidArgument("rate_limit's per_seconds must be a number from 0.001 to 1e10");
    }
  }
  if (guards.events_maxlen < 1) throw InvalidArgument("events_maxlen must be at least 1");
  validate_score_limits(guards);
}

void add_guard_words(std::string& spec, std::vector<std::string>& keys, const Guards& guards,
                     const std::string& scope, const std::string& events_stream,
                     const std::string& user_id, const std::optional<std::string>& submission_id) {
  if (submission_id) {
    add_submission_guard(spec, keys, scope, guards.submission_ttl, *submission_id);
  }
  if (guards.rate_max) {
    word::add(spec, keys,
              word::rate{std::to_string(*guards.rate_max), milliseconds(guards.rate_per),
                         scope + ":rate:" + user_id});
  }
  if (guards.events) {
    word::add(spec, keys, word::events{std::to_string(guards.events_maxlen), events_stream});
  }
}

void Board::add_guards(std::string& spec, std::vector<std::string>& keys,
                       const std::string& user_id,
                       const std::optional<std::string>& submission_id) const {
  // The user's rate window is the scope's (a periodic board's for each of its periods): a limit
  // is over real time, not restarted by a period boundary.
  add_guard_words(spec, keys, id_->guards, submission_scope(), key() + ":events", user_id,
                  submission_id);
  if (expire_at()) word::add(spec, word::expire{std::to_string(*expire_at())});  // seasons
  spec += open_word();                                                           // seasons
  spec += limit_words(id_->guards);                                              // fair play
  if (period()) {  // a period's board: the guards recorded for every period (merge_scope_guards)
    word::add(spec, keys, word::gscope{submission_scope() + ":options"});
  }
}

namespace {

std::optional<double> optional_score(const Reply& reply) {
  if (reply.type == ReplyType::String && reply.str.empty()) return std::nullopt;
  return parse_score(reply);
}

std::optional<long long> optional_rank(const Reply& reply) {
  if (reply.type != ReplyType::String) unexpected("a rank");
  if (reply.str.empty()) return std::nullopt;
  char* end = nullptr;
  long long value = std::strtoll(reply.str.c_str(), &end, 10);
  if (*end != '\0' || value < 1 || value > kMaxWindow) unexpected("a rank");
  return value;
}

// A count written as text (a stream field): 0 to kMaxWindow.
long long count_text(const Reply& reply) {
  if (reply.type != ReplyType::String) unexpected("a count");
  long long value = 0;
  const char* begin = reply.str.data();
  const char* end = begin + reply.str.size();
  auto [stop, error] = std::from_chars(begin, end, value);
  if (error != std::errc() || stop != end || begin == end || value < 0 || value > kMaxWindow) {
    unexpected("a count");
  }
  return value;
}

// One stream entry ({id, {field, value, ...}}) as an Event.
Event parse_event(Reply& entry) {
  parse_array(entry, 2);
  Event event;
  event.id = take_string(entry.elements[0]);
  auto& fields = entry.elements[1];
  if (!fields.is_array() || fields.elements.size() % 2 != 0) unexpected("an event");
  for (std::size_t i = 0; i < fields.elements.size(); i += 2) {
    const std::string& name = fields.elements[i].str;
    Reply& value = fields.elements[i + 1];
    if (name == "kind") {
      event.kind = take_string(value);
    } else if (name == "user_id") {
      event.user_id = take_string(value);
    } else if (name == "score") {
      event.score = parse_score(value);
    } else if (name == "rank") {
      event.rank = optional_rank(value);
    } else if (name == "previous_score") {
      event.previous_score = optional_score(value);
    } else if (name == "previous_rank") {
      event.previous_rank = optional_rank(value);
    } else if (name == "trimmed") {
      event.trimmed_user_ids.push_back(take_string(value));
    } else if (name == "overtaken") {
      event.overtaken.push_back(take_string(value));
    } else if (name == "removed") {
      event.removed = count_text(value);
    } else if (name == "size") {
      event.size = count_text(value);
    } else if (name == "member") {  // a team board's "team"
      event.member = take_string(value);
    } else if (name == "period") {  // a league's "settled"
      event.period = take_string(value);
    } else if (name == "cohort") {
      event.cohort = count_text(value);
    } else if (name == "tier") {
      event.tier = count_text(value);
    } else if (name == "bracket") {
      event.bracket = take_string(value);
    } else if (name == "promoted") {
      event.promoted.push_back(take_string(value));
    } else if (name == "demoted") {
      event.demoted.push_back(take_string(value));
    }  // other fields: from a newer writer, ignored
  }
  return event;
}

// read_events: XREVRANGE for the stream's last id first when asked for '$' (so that the next
// read resumes after it, missing nothing), then XREAD [BLOCK].
class ReadEvents final : public Operation {
 public:
  ReadEvents(std::string stream, std::string last_id, long long count, std::optional<double> block)
      : stream_(std::move(stream)), count_(count), block_(block) {
    batch_.last_id = std::move(last_id);
  }
  const char* name() const override { return "events"; }
  double server_wait() const override { return block_ && batch_.last_id != "$" ? *block_ : 0; }
  std::vector<Command> next() override {
    if (batch_.last_id == "$")
      return {Command{nullptr, {"XREVRANGE", stream_, "+", "-", "COUNT", "1"}}};
    Command xread{nullptr, {"XREAD", "COUNT", std::to_string(count_)}};
    if (block_) {
      xread.argv.push_back("BLOCK");
      xread.argv.push_back(std::to_string(std::max(1LL, std::llround(*block_ * 1000))));
    }
    xread.argv.push_back("STREAMS");
    xread.argv.push_back(stream_);
    xread.argv.push_back(batch_.last_id);
    return {std::move(xread)};
  }
  bool feed(std::vector<Reply>& replies) override {
    if (replies.size() != 1) unexpected(name());
    Reply& reply = replies[0];
    if (batch_.last_id == "$") {  // XREVRANGE: the last entry, or none (an empty stream)
      if (!reply.is_array() || reply.elements.size() > 1) unexpected("XREVRANGE");
      batch_.last_id = "0-0";
      if (!reply.elements.empty()) {
        parse_array(reply.elements[0], 2);
        batch_.last_id = take_string(reply.elements[0].elements[0]);
      }
      return false;
    }
    if (reply.is_nil()) return true;  // BLOCK ran out
    // {{stream, {{id, fields}, ...}}}
    parse_array(reply, 1);
    auto& stream = reply.elements[0];
    parse_array(stream, 2);
    auto& entries = stream.elements[1];
    if (!entries.is_array()) unexpected("XREAD");
    for (auto& entry : entries.elements) batch_.events.push_back(parse_event(entry));
    if (!batch_.events.empty()) batch_.last_id = batch_.events.back().id;
    return true;
  }
  Result take_result() override { return std::move(batch_); }

 private:
  std::string stream_;
  long long count_;
  std::optional<double> block_;
  EventBatch batch_;
};

}  // namespace

std::unique_ptr<Operation> Board::read_events(std::string last_id, long long count,
                                              std::optional<double> block) const {
  return read_stream_events(key() + ":events", std::move(last_id), count, block);
}

std::unique_ptr<Operation> read_stream_events(std::string stream, std::string last_id,
                                              long long count, std::optional<double> block) {
  if (last_id.empty()) throw InvalidArgument("last_id must not be empty");
  if (count < 1 || count > Board::kMaxQueryItems) {
    throw InvalidArgument("count must be between 1 and " + std::to_string(Board::kMaxQueryItems));
  }
  if (block && !(*block >= 0 && *block <= 1e6)) {
    throw InvalidArgument("block must be None or a number of seconds from 0 to 1e6");
  }
  return std::make_unique<ReadEvents>(std::move(stream), std::move(last_id), count, block);
}

std::vector<std::string> Board::option_keys() const {
  std::vector<std::string> keys{key() + ":options"};
  if (!tiebreak().empty()) {  // the ranked set and its index, as ties='first' has them
    keys.push_back(key() + ":tb");
    keys.push_back(key() + ":tb:keys");
  } else if (ties() == Ties::First) {
    keys.push_back(key() + ":first");
    keys.push_back(key() + ":first:keys");
  } else if (ties() == Ties::Dense) {
    keys.push_back(key() + ":dense");
  }
  if (layout() == Layout::Compact) keys.push_back(key() + ":meta");
  return keys;
}

arg::option_keys Board::option_keys_arg(Check check) const {
  if (!has_default_options()) return arg::option_keys{option_keys()};
  if (check == Check::EveryCall || !options_checked()) {
    return arg::option_keys{{key() + ":options"}};
  }
  return arg::option_keys{{}};
}

arg::removal_keys Board::removal_keys_arg() const {
  arg::removal_keys keys{option_keys_arg(Check::EveryCall).value};
  if (id_->guards.events) keys.value.push_back(key() + ":events");
  return keys;
}

std::unique_ptr<Operation> Board::write(WriteMode mode, std::string user_id, double number,
                                        Metadata metadata, bool submit,
                                        std::optional<std::string> submission_id, int retries,
                                        std::optional<std::vector<double>> tiebreak) const {
  if (tiebreak && id_->tiebreak.empty()) {
    throw InvalidArgument("tiebreak values for a board without tie-break columns");
  }
  // Tie-break columns: the ranked member's key, a keyless word of the spec (see plan_write).
  std::string tiebreak_word;
  if (tiebreak) word::add(tiebreak_word, word::tb{tiebreak_key(id_->tiebreak, order(), *tiebreak)});
  require_user_id(user_id);
  require_submission_id(submission_id);
  if (retries < 0) throw InvalidArgument("retries must be at least 0");
  const bool increment = mode == WriteMode::Incr;
  require_finite(number, increment && !submit ? "amount" : "score");

  // "<mode>", or "<mode> <order> <ties> <reply>[ <guard>...][ expire:<unix ms>]" (see write.lua).
  std::string spec = name_of(mode);
  const bool guarded = submission_id || id_->guards.any();  // guards
  if (submit || !has_default_options() || guarded || expire_at()) {
    spec = spec + " " + name_of(order()) + " " + ties_word() + (submit ? " submit" : " entry");
  }
  arg::write_keys keys{option_keys_arg(Check::EveryCall).value};
  add_guards(spec, keys.value, user_id,
             submission_id);  // seasons and guards: none on a plain board
  spec += tiebreak_word;
  std::vector<std::string> fields;
  fields.reserve(2 * metadata.size());
  for (const auto& [field, value] : metadata) {
    fields.push_back(field);
    fields.push_back(value);
  }
  Command command = calls::write(
      arg::board{key()}, arg::user_key{metadata_key(user_id)}, std::move(keys),
      arg::spec{std::move(spec)}, arg::number{format_score(number)}, arg::user_id{user_id},
      arg::max_entries{std::to_string(max_entries())}, arg::metadata{std::move(fields)});

  if (submit) {
    const bool idempotent = submission_id.has_value();
    auto parse = [user_id = std::move(user_id), idempotent,
                  board = *this](Reply& reply) mutable -> Result {
      return parse_submit_reply(reply, std::move(user_id), idempotent, &board);
    };
    auto call = std::make_unique<SingleCall>("submit", std::move(command), std::move(parse), id_);
    if (idempotent) call->allow_resends(retries);  // it cannot apply twice (guards)
    return call;
  }
  auto parse = [user_id = std::move(user_id),
                sent = std::move(metadata)](Reply& reply) mutable -> Result {
    parse_array(reply, 2);
    auto& parts = reply.elements;
    WriteResult result;
    result.trimmed_user_ids = parse_strings(parts[0]);
    result.entry.user_id = std::move(user_id);
    result.entry.score = parse_score(parts[1]);
    if (parts.size() == 2) {  // the write itself was trimmed away: the guide's fallback shape
      result.entry.metadata = std::move(sent);
      return result;
    }
    if (parts.size() != 4) unexpected("a write");
    result.entry.rank = parse_rank(parts[2]) + 1;
    result.entry.metadata = parse_metadata(parts[3]);
    return result;
  };
  return std::make_unique<SingleCall>(increment ? "increment_score" : "upsert_user",
                                      std::move(command), std::move(parse), id_);
}

std::unique_ptr<Operation> Board::upsert_user(std::string user_id, double score,
                                              Metadata metadata) const {
  return write(WriteMode::Set, std::move(user_id), score, std::move(metadata), false);
}

std::unique_ptr<Operation> Board::increment_score(std::string user_id, double amount,
                                                  Metadata metadata) const {
  return write(WriteMode::Incr, std::move(user_id), amount, std::move(metadata), false);
}

std::unique_ptr<Operation> Board::submit(std::string user_id, double score, Metadata metadata,
                                         WriteMode mode, std::optional<std::string> submission_id,
                                         int retries,
                                         std::optional<std::vector<double>> tiebreak) const {
  return write(mode, std::move(user_id), score, std::move(metadata), true, std::move(submission_id),
               retries, std::move(tiebreak));
}

std::unique_ptr<Operation> Board::set_max_entries(long long max_entries) const {
  max_entries = require_at_least_one(max_entries, "max_entries");
  return std::make_unique<Trim>(id_, key(), removal_keys_arg(), metadata_prefix(), max_entries,
                                std::nullopt);
}

std::unique_ptr<Operation> Board::get_top(long long count) const {
  count = require_at_least_one(count, "count");
  Command command =
      calls::window(arg::board{key()}, option_keys_arg(Check::UntilConfirmed),
                    arg::user_prefix{metadata_prefix()}, arg::mode{"top"}, arg::start{"0"},
                    arg::count{std::to_string(count)}, id_->order_arg(), id_->ties_arg());
  auto call = SingleCall("get_top", std::move(command),
                         SingleCall::WindowParser([](WindowReader* window) -> Result {
                           if (window == nullptr) unexpected("a rank window");
                           std::vector<Entry> entries;
                           window->append_to(entries, 1);
                           return entries;
                         }),
                         id_)
                  .caches_metadata(key(), calls::argv_n::window::user_prefix, layout());
  call->set_lean_form([id = id_, key = key(), count]() -> std::unique_ptr<Operation> {
    // A board of the guide's ranking rules (either layout) whose options were checked: the
    // guide's ZRANGE, ranks by position.
    if (!id->ranks_as_guide() || !id->checked.load(std::memory_order_relaxed)) return nullptr;
    return std::make_unique<SingleCall>(
        "get_top",
        Command{nullptr, {"ZRANGE", key, "0", std::to_string(count - 1), "REV", "WITHSCORES"}},
        [](Reply& reply) -> Result { return ranged_entries(reply, 1); });
  });
  return split_read(std::move(call), count, id_->ranks_as_guide() ? kSplitTopFrom : kSplitReadFrom);
}

std::unique_ptr<Operation> Board::get_around_rank(long long rank, long long count) const {
  rank = require_at_least_one(rank, "rank");
  count = require_at_least_one(count, "count");
  Command command = calls::window(
      arg::board{key()}, option_keys_arg(Check::UntilConfirmed),
      arg::user_prefix{metadata_prefix()}, arg::mode{"around"}, arg::start{std::to_string(rank)},
      arg::count{std::to_string(count)}, id_->order_arg(), id_->ties_arg());
  auto call = SingleCall("get_around_rank", std::move(command),
                         SingleCall::WindowParser(window_entries), id_)
                  .caches_metadata(key(), calls::argv_n::window::user_prefix, layout());
  if (!id_->ranks_as_guide()) return split_read(std::move(call), count);
  // The guide's ranking rules (either layout): once its options are checked, the lean form
  // starts with the guide's ZRANGE (AroundLean), so it splits from get_top's size
  // (benchmarks.md, "Reads in two steps").
  call->set_lean_form([id = id_, key = key(), rank, count,
                       script = call->lean_script()]() -> std::unique_ptr<Operation> {
    if (!id->checked.load(std::memory_order_relaxed)) return nullptr;
    const long long start = std::max(0LL, rank - 1 - count / 2);
    return std::make_unique<AroundLean>(key, start, count, script());
  });
  return split_read(std::move(call), count, kSplitTopFrom);
}

std::unique_ptr<Operation> Board::get_rank(std::string user_id) const {
  require_user_id(user_id);
  auto parse = [](Reply& reply) -> Result {
    if (reply.is_nil()) return std::optional<long long>();
    return std::optional<long long>(parse_rank(reply) + 1);
  };
  // The guide's one command, on a checked board of the guide's ranking rules (either layout:
  // the sorted set is the same).
  if (id_->ranks_as_guide() && options_checked()) {
    return std::make_unique<SingleCall>(
        "get_rank", Command{nullptr, strings("ZREVRANK", key(), std::move(user_id))}, parse);
  }
  Command command =
      calls::rank(arg::board{key()}, option_keys_arg(Check::UntilConfirmed),
                  arg::user_id{std::move(user_id)}, id_->order_arg(), id_->ties_arg());
  return std::make_unique<SingleCall>("get_rank", std::move(command), parse, id_);
}

std::unique_ptr<Operation> Board::check_options() const {
  Command command = calls::rank(arg::board{key()}, option_keys_arg(Check::EveryCall),
                                arg::user_id{""}, id_->order_arg(), id_->ties_arg());
  return std::make_unique<SingleCall>(
      "check_options", std::move(command),
      [id = id_](Reply& reply) -> Result {
        // 1: the board has hidden players (fair play), whose entries only scripts keep aside.
        id->hiding.store(parse_count(reply, 1) == 1, std::memory_order_relaxed);
        id->bulk_checked.store(true, std::memory_order_relaxed);
        return None{};
      },
      id_);
}

std::unique_ptr<Operation> Board::get_user_metadata(std::string user_id) const {
  require_user_id(user_id);
  if (layout() == Layout::Compact) {  // the user's field of the board's hash
    return std::make_unique<CompactMetadata>(metadata_prefix() + user_id, metadata_key(user_id),
                                             std::move(user_id));
  }
  return std::make_unique<SingleCall>("get_user_metadata",
                                      Command{nullptr, strings("HGETALL", metadata_key(user_id))},
                                      [](Reply& reply) -> Result { return parse_metadata(reply); });
}

std::unique_ptr<Operation> Board::get_user_entry(std::string user_id) const {
  require_user_id(user_id);
  if (has_default_options() && options_checked()) {  // the guide's commands
    // Its script for an OOM refusal: the board's, known to record no options.
    Command script =
        calls::entry(arg::board{key()}, arg::user_key{metadata_key(user_id)}, arg::option_keys{{}},
                     arg::user_id{user_id}, std::nullopt, std::nullopt);
    auto user_key = metadata_key(user_id);
    return std::make_unique<GuideEntry>(key(), std::move(user_key), std::move(user_id),
                                        std::string(), std::move(script), id_);
  }
  Command command = calls::entry(arg::board{key()}, arg::user_key{metadata_key(user_id)},
                                 option_keys_arg(Check::UntilConfirmed), arg::user_id{user_id},
                                 id_->order_arg(), id_->ties_arg());
  if (layout() == Layout::Compact && options_checked() && id_->ranks_as_guide()) {
    // A compact board of the guide's rules: the same transaction, the field of its hash.
    auto user_key = metadata_key(user_id);
    auto guide_key = metadata_prefix() + user_id;
    return std::make_unique<GuideEntry>(key(), std::move(user_key), std::move(user_id),
                                        std::move(guide_key), std::move(command), id_);
  }
  return std::make_unique<SingleCall>(
      "get_user_entry", std::move(command),
      [user_id = std::move(user_id), size = entry_size()](Reply& reply) mutable -> Result {
        return entry_reply(reply, std::move(user_id), size);
      },
      id_);
}

std::unique_ptr<Operation> Board::list_all() const {
  return std::make_unique<ListAll>(id_, key(), option_keys_arg(Check::UntilConfirmed),
                                   metadata_prefix(), /*split=*/true);
}

std::unique_ptr<Operation> Board::get_size() const {
  return std::make_unique<SingleCall>("get_size", Command{nullptr, strings("ZCARD", key())},
                                      [id = id_](Reply& reply) -> Result {
                                        const long long size = parse_count(reply);
                                        id->known_size.store(size, std::memory_order_relaxed);
                                        return size;
                                      });
}

std::unique_ptr<Operation> Board::delete_user(std::string user_id) const {
  require_user_id(user_id);
  // The metadata goes whether or not the user was on the board, as the guide's delete_user.
  auto last = id_->removal_args();
  Command command = calls::remove(arg::board{key()}, arg::user_key{metadata_key(user_id)},
                                  removal_keys_arg(), arg::user_id{user_id}, std::move(last.order),
                                  std::move(last.ties), std::move(last.removal));
  return std::make_unique<SingleCall>(
      "delete_user", std::move(command),
      [](Reply& reply) -> Result { return parse_count(reply, 1) == 1; }, id_);
}

std::unique_ptr<Operation> Board::hide(std::string user_id, bool scope) const {
  require_user_id(user_id);
  return hiding_call("hide", std::move(user_id), scope);
}

std::unique_ptr<Operation> Board::unhide(std::string user_id, bool scope) const {
  require_user_id(user_id);
  return hiding_call("unhide", std::move(user_id), scope);
}

std::unique_ptr<Operation> Board::hidden(bool scope) const { return hidden_read("", scope); }

std::unique_ptr<Operation> Board::is_hidden(std::string user_id, bool scope) const {
  require_user_id(user_id);
  return hidden_read(std::move(user_id), scope);
}

std::unique_ptr<Operation> Board::hidden_read(std::string user_id, bool scope) const {
  scope = scope && period();
  arg::hidden_keys keys{option_keys()};
  if (scope) keys.value.push_back(submission_scope() + ":hidden");
  const bool list = user_id.empty();
  Command command =
      calls::hidden(arg::board{key()}, std::move(keys), arg::user_id{std::move(user_id)},
                    arg::order{std::string(name_of(order()))}, arg::ties{ties_word()},
                    arg::scope{scope ? "scope" : ""});
  return std::make_unique<SingleCall>(
      list ? "hidden" : "is_hidden", std::move(command),
      [list](Reply& reply) -> Result {
        if (list) return parse_strings(reply);
        return parse_count(reply, 1) == 1;
      },
      id_);
}

std::unique_ptr<Operation> Board::hiding_call(const char* action, std::string user_id,
                                              bool scope) const {
  scope = scope && period();
  arg::hide_keys keys{option_keys()};  // always: the script records 'hidden' there
  if (scope) {
    keys.value.push_back(submission_scope() + ":hidden");
    keys.value.push_back(submission_scope() + ":options");
  }
  std::string words;
  if (id_->guards.events) {
    word::add(words, keys.value,
              word::events{std::to_string(id_->guards.events_maxlen), key() + ":events"});
  }
  if (expire_at()) word::add(words, word::expire{std::to_string(*expire_at())});
  if (!words.empty()) words.erase(0, 1);
  Command command = calls::hide(
      arg::board{key()}, std::move(keys), arg::action{action}, arg::user_id{std::move(user_id)},
      arg::max_entries{std::to_string(max_entries())}, arg::order{std::string(name_of(order()))},
      arg::ties{ties_word()}, arg::scope{scope ? "scope" : ""}, arg::removal{std::move(words)});
  return std::make_unique<SingleCall>(
      action, std::move(command),
      [id = id_](Reply& reply) -> Result {
        // This object's next upsert_many checks the board again (its chunks then keep hidden
        // players' entries aside), rather than having its first chunk refused.
        id->bulk_checked.store(false, std::memory_order_relaxed);
        return parse_count(reply, 1) == 1;
      },
      id_);
}

std::unique_ptr<Operation> Board::trim_to_max_entries(long long report) const {
  return std::make_unique<Trim>(id_, key(), removal_keys_arg(), metadata_prefix(), max_entries(),
                                std::max(0LL, report));
}

std::unique_ptr<Operation> Board::upsert_chunk(std::vector<BatchEntry> entries,
                                               long long first_index, int retries) const {
  if (retries < 0) throw InvalidArgument("retries must be at least 0");
  bool any_id = false, all_ids = true;  // guards
  for (std::size_t i = 0; i < entries.size(); ++i) {
    try {
      require_user_id(entries[i].user_id);
      require_finite(entries[i].score, "score");
      require_submission_id(entries[i].submission_id);
      any_id = any_id || entries[i].submission_id.has_value();
      all_ids = all_ids && entries[i].submission_id.has_value();
    } catch (const InvalidArgument& e) {
      throw InvalidArgument("entry " + std::to_string(first_index + static_cast<long long>(i)) +
                            ": " + e.what());
    }
  }
  const auto count = static_cast<long long>(entries.size());
  if (count == 0) return std::make_unique<Batch>(std::vector<Command>{}, 0);
  if (!has_default_options() || id_->guards.any() || any_id || expire_at() || open_span() ||
      id_->hiding.load(std::memory_order_relaxed)) {
    // Each entry's score goes to the option keys too: one script (bulk.lua), all or nothing.
    // Guards and submission ids too ('rate' is only checked against the record); on
    // an expiring board (seasons), with the deadline of every key it writes.
    const Guards& guards = id_->guards;
    // Its words name no keys (bulk.lua): each entry sends its own record, the stream and a period's
    // periodic board's options go last.
    std::string words;
    if (any_id) words += ' ' + word::text(word::sid{milliseconds(guards.submission_ttl), "", ""});
    if (guards.rate_max) {
      words += ' ' + word::text(word::rate{std::to_string(*guards.rate_max),
                                           milliseconds(guards.rate_per), ""});
    }
    if (guards.events) {
      words += ' ' + word::text(word::events{std::to_string(guards.events_maxlen), ""});
    }
    if (expire_at()) word::add(words, word::expire{std::to_string(*expire_at())});
    words += open_word();
    words += limit_words(guards);
    if (period()) words += ' ' + word::text(word::gscope{""});  // its key before the stream's
    arg::bulk_keys keys{option_keys_arg(Check::EveryCall).value};
    std::vector<std::string> args;
    for (auto& entry : entries) {
      keys.value.push_back(metadata_key(entry.user_id));
      if (entry.submission_id) keys.value.push_back(submission_key(*entry.submission_id));
      args.push_back(std::move(entry.user_id));
      args.push_back(format_score(entry.score));
      if (any_id) args.push_back(entry.submission_id ? "1" : "0");
      args.push_back(std::to_string(entry.metadata.size()));
      for (auto& [field, value] : entry.metadata) {
        args.push_back(std::move(field));
        args.push_back(std::move(value));
      }
    }
    if (period()) keys.value.push_back(submission_scope() + ":options");
    if (guards.events) keys.value.push_back(key() + ":events");
    if (!words.empty()) words.erase(0, 1);
    auto call = std::make_unique<SingleCall>(
        "upsert_many",
        calls::bulk(arg::board{key()}, std::move(keys), arg::order{std::string(name_of(order()))},
                    arg::ties{ties_word()}, arg::guard_words{std::move(words)},
                    arg::entries{std::move(args)}),
        [count](Reply& reply) -> Result {
          // Entries whose submission id was applied before are skipped (guards).
          return parse_count(reply, count);
        },
        id_);
    if (all_ids) call->allow_resends(retries);  // every entry carries an id: it cannot apply twice
    return call;
  }
  Command zadd{nullptr, {"ZADD", key()}};
  zadd.argv.reserve(2 + 2 * entries.size());
  std::vector<Command> commands(1);
  for (auto& entry : entries) {
    zadd.argv.push_back(format_score(entry.score));
    zadd.argv.push_back(entry.user_id);
    if (entry.metadata.empty()) continue;
    Command hset{nullptr, {"HSET", metadata_key(entry.user_id)}};
    hset.argv.reserve(2 + 2 * entry.metadata.size());
    for (auto& [field, value] : entry.metadata) {
      hset.argv.push_back(std::move(field));
      hset.argv.push_back(std::move(value));
    }
    commands.push_back(std::move(hset));
  }
  commands[0] = std::move(zadd);
  return std::make_unique<Batch>(std::move(commands), count);
}

std::unique_ptr<Operation> Board::clear() const {
  return std::make_unique<Clear>(id_, key(), removal_keys_arg(), metadata_prefix());
}

std::unique_ptr<Operation> Board::convert_layout(long long page) const {
  if (layout() != Layout::Compact) {
    throw InvalidArgument(
        "convert_layout converts a board to the compact layout: open it with "
        "layout='compact'");
  }
  if (page < 1 || page > kMaxConvertPage) {
    throw InvalidArgument("page must be between 1 and " + std::to_string(kMaxConvertPage));
  }
  return std::make_unique<ConvertLayout>(id_, key(), arg::option_keys{option_keys()}, page);
}

// ---- Queries ----------------------------------------------------------------------------------

namespace {

long long require_between(long long value, long long low, long long high, const char* field) {
  if (value < low || value > high) {
    throw InvalidArgument(std::string(field) + " must be between " + std::to_string(low) + " and " +
                          std::to_string(high));
  }
  return value;
}

void require_not_nan(double value, const char* field) {
  if (std::isnan(value)) throw InvalidArgument(std::string(field) + " must be a number, not NaN");
}

}  // namespace

std::unique_ptr<Operation> Board::get_around_user(std::string user_id, long long count) const {
  require_user_id(user_id);
  count = require_at_least_one(count, "count");
  Command command =
      calls::around(arg::board{key()}, option_keys_arg(Check::EveryCall),
                    arg::user_prefix{metadata_prefix()}, arg::user_id{std::move(user_id)},
                    arg::count{std::to_string(count)}, id_->order_arg(), id_->ties_arg());
  return split_read(SingleCall("get_around_user", std::move(command),
                               SingleCall::WindowParser([](WindowReader* window) -> Result {
                                 // nil: the user is not on the board
                                 if (window == nullptr) return std::vector<Entry>();
                                 return window_entries(window);
                               }),
                               id_)
                        .caches_metadata(key(), calls::argv_n::around::user_prefix, layout()),
                    count);
}

std::unique_ptr<Operation> Board::get_entries(std::vector<std::string> user_ids) const {
  if (static_cast<long long>(user_ids.size()) > kMaxQueryItems) {
    throw InvalidArgument("user_ids must hold at most " + std::to_string(kMaxQueryItems) +
                          " ids, not " + std::to_string(user_ids.size()));
  }
  for (const auto& user_id : user_ids) require_user_id(user_id);
  Command command = calls::entries(
      arg::board{key()}, option_keys_arg(Check::EveryCall), arg::user_prefix{metadata_prefix()},
      arg::board_order{id_->is_default() ? "" : name_of(id_->order)},
      arg::board_ties{id_->is_default() ? std::string() : id_->ties_word()},
      arg::user_ids{user_ids});
  const auto count = static_cast<long long>(user_ids.size());
  return split_read(
      SingleCall(
          "get_entries", std::move(command),
          [user_ids = std::move(user_ids), size = entry_size()](Reply& reply) mutable -> Result {
            if (!reply.is_array() || reply.elements.size() != user_ids.size()) {
              unexpected("the entries of get_entries");
            }
            std::vector<std::optional<Entry>> out;
            out.reserve(user_ids.size());
            for (std::size_t i = 0; i < user_ids.size(); ++i) {
              auto& item = reply.elements[i];
              if (item.is_nil()) {
                out.emplace_back();
                continue;
              }
              parse_array(item, size);
              if (item.elements.size() != size) unexpected("an entry");
              Entry entry;
              entry.score = parse_score(item.elements[0]);
              entry.rank = parse_rank(item.elements[1]) + 1;
              // Tie-break columns: the ranked member, as get_user_entry's.
              entry.user_id = size == 4 ? take_string(item.elements[3]) : std::move(user_ids[i]);
              entry.metadata = parse_metadata(item.elements[2]);
              out.emplace_back(std::move(entry));
            }
            return out;
          },
          id_)
          .caches_metadata(key(), calls::argv_n::entries::user_prefix, layout()),
      count);
}

std::unique_ptr<Operation> Board::get_page(long long page, long long page_size) const {
  require_at_least_one(page, "page");
  page_size = require_between(page_size, 1, kMaxQueryItems, "page_size");
  // Past any board's end from 2^32 on (the product then fits); `page` is reported as asked.
  const long long start = std::min((std::min(page, kMaxWindow) - 1) * page_size, kMaxWindow);
  Command command = calls::window(
      arg::board{key()}, option_keys_arg(Check::UntilConfirmed),
      arg::user_prefix{metadata_prefix()}, arg::mode{"range"}, arg::start{std::to_string(start)},
      arg::count{std::to_string(page_size)}, id_->order_arg(), id_->ties_arg());
  return split_read(
      SingleCall("get_page", std::move(command),
                 SingleCall::WindowParser([page, page_size, start](WindowReader* window) -> Result {
                   if (window == nullptr) unexpected("a rank window");
                   window->check();
                   Page out;
                   out.page = page;
                   out.page_size = page_size;
                   out.size = window->size();
                   out.total_pages = (out.size + page_size - 1) / page_size;
                   window->append_to(out.entries, start + 1);
                   if (static_cast<long long>(out.entries.size()) > page_size) unexpected("a page");
                   return out;
                 }),
                 id_)
          .caches_metadata(key(), calls::argv_n::window::user_prefix, layout()),
      page_size);
}

std::unique_ptr<Operation> Board::get_by_score(double min_score, double max_score, long long offset,
                                               long long limit) const {
  require_not_nan(min_score, "min_score");
  require_not_nan(max_score, "max_score");
  if (offset < 0) throw InvalidArgument("offset must be at least 0");
  offset = std::min(offset, kMaxWindow);
  limit = require_at_least_one(limit, "limit");
  Command command =
      calls::by_score(arg::board{key()}, option_keys_arg(Check::EveryCall),
                      arg::user_prefix{metadata_prefix()}, arg::low{format_score(min_score)},
                      arg::high{format_score(max_score)}, arg::offset{std::to_string(offset)},
                      arg::limit{std::to_string(limit)}, id_->order_arg(), id_->ties_arg());
  return std::make_unique<SingleCall>("get_by_score", std::move(command),
                                      SingleCall::WindowParser(window_entries), id_);
}

std::unique_ptr<Operation> Board::count_by_score(double min_score, double max_score) const {
  require_not_nan(min_score, "min_score");
  require_not_nan(max_score, "max_score");
  // The count does not depend on order or ties: the plain command, on any board.
  return std::make_unique<SingleCall>(
      "count_by_score",
      Command{nullptr, {"ZCOUNT", key(), format_score(min_score), format_score(max_score)}},
      [](Reply& reply) -> Result { return parse_count(reply); });
}

std::unique_ptr<Operation> Board::rank_for_score(double score) const {
  require_finite(score, "score");
  auto parse = [](Reply& reply) -> Result { return parse_count(reply) + 1; };
  if (options_checked()) {  // the board's order is known to be this object's: one ZCOUNT
    // Entries strictly better, or on a dense board the distinct scores strictly better.
    const std::string counted = ties() == Ties::Dense ? key() + ":dense" : key();
    const std::string bound = "(" + format_score(score);
    Command command = order() == Order::Desc ? Command{nullptr, {"ZCOUNT", counted, bound, "+inf"}}
                                             : Command{nullptr, {"ZCOUNT", counted, "-inf", bound}};
    return std::make_unique<SingleCall>("rank_for_score", std::move(command), parse);
  }
  Command command =
      calls::stats_rank_for(arg::board{key()}, option_keys_arg(Check::EveryCall),
                            arg::score{format_score(score)}, id_->order_arg(), id_->ties_arg());
  return std::make_unique<SingleCall>("rank_for_score", std::move(command), parse, id_);
}

std::unique_ptr<Operation> Board::get_percentile(std::string user_id) const {
  require_user_id(user_id);
  Command command =
      calls::stats_percentile(arg::board{key()}, option_keys_arg(Check::EveryCall),
                              arg::user_id{std::move(user_id)}, id_->order_arg(), id_->ties_arg());
  return std::make_unique<SingleCall>(
      "get_percentile", std::move(command),
      [](Reply& reply) -> Result {
        if (reply.is_nil()) return std::optional<double>();
        parse_array(reply, 2);
        if (reply.elements.size() != 2) unexpected("a percentile");
        const long long size = parse_count(reply.elements[1]);
        const long long worse = parse_count(reply.elements[0], size);
        if (size < 1 || worse >= size) unexpected("a percentile");
        if (size == 1) return std::optional<double>(100.0);
        return std::optional<double>(100.0 * static_cast<double>(worse) /
                                     static_cast<double>(size - 1));
      },
      id_);
}

std::unique_ptr<Operation> Board::score_at_percentile(double p) const {
  if (!(p >= 0 && p <= 100)) throw InvalidArgument("p must be between 0 and 100");
  Command command =
      calls::stats_at(arg::board{key()}, option_keys_arg(Check::EveryCall),
                      arg::percent{format_score(p)}, id_->order_arg(), id_->ties_arg());
  return std::make_unique<SingleCall>(
      "score_at_percentile", std::move(command),
      [](Reply& reply) -> Result {
        if (reply.is_nil()) return std::optional<double>();
        return std::optional<double>(parse_score(reply));
      },
      id_);
}

std::unique_ptr<Operation> Board::get_histogram(long long bins, std::optional<double> min_score,
                                                std::optional<double> max_score) const {
  bins = require_between(bins, 1, kMaxQueryItems, "bins");
  if (min_score) require_finite(*min_score, "min_score");
  if (max_score) require_finite(*max_score, "max_score");
  if (min_score && max_score && *min_score > *max_score) {
    throw InvalidArgument("min_score must not be greater than max_score");
  }
  Command command = calls::stats_histogram(
      arg::board{key()}, option_keys_arg(Check::EveryCall), arg::bins{std::to_string(bins)},
      arg::low{min_score ? format_score(*min_score) : std::string()},
      arg::high{max_score ? format_score(*max_score) : std::string()}, id_->order_arg(),
      id_->ties_arg());
  return std::make_unique<SingleCall>(
      "get_histogram", std::move(command),
      [bins](Reply& reply) -> Result {
        std::vector<HistogramBin> out;
        if (!reply.is_array()) unexpected("a histogram");
        if (reply.elements.empty()) return out;  // an empty board
        if (reply.elements.size() != 2) unexpected("a histogram");
        const auto& edges = parse_array(reply.elements[0]);
        const auto& counts = parse_array(reply.elements[1]);
        const auto n = static_cast<std::size_t>(bins);
        if (edges.size() != n + 1 || counts.size() != n) unexpected("a histogram");
        out.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
          out.push_back({parse_score(edges[i]), parse_score(edges[i + 1]), parse_count(counts[i])});
        }
        return out;
      },
      id_);
}

}  // namespace rlb::leaderboard
