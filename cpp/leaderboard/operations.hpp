// Leaderboard operations without I/O. Each operation turns its arguments into the commands of
// one round trip (usually one script call: atomic) and turns the replies into a result. Any
// transport runs them: send next(), feed() the replies, repeat until feed() returns true.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "codec/reply.hpp"
#include "leaderboard/script_args.hpp"
#include "leaderboard/script_constants.hpp"
#include "leaderboard/scripts.hpp"

namespace rlb::leaderboard {

using codec::Reply;
using Metadata = std::vector<std::pair<std::string, std::string>>;  // HGETALL order

// A new call token: 16 random hex digits, made once per call of a write that carries a
// submission id and sent with each of its sendings. The submission record keeps the token of the
// call that applied it, so a resend of that same call (after a lost reply) is told apart from
// another call with the same id: only the latter is a duplicate.
std::string new_call_token();

struct Entry {
  std::optional<long long> rank;  // 1-based; absent when a write was trimmed away
  std::string user_id;
  double score = 0;
  Metadata metadata;
  // A board with tie-break columns: each column's name and value, in the board's order.
  std::vector<std::pair<std::string, double>> tiebreak;
};

// What upsert_user and increment_score return: the entry plus who the write trimmed.
struct WriteResult {
  Entry entry;
  std::vector<std::string> trimmed_user_ids;
};

// What submit returns: the entry now (no rank if the write was trimmed away; then its metadata
// is empty, the hash having gone with it), what it replaced, and who the write trimmed.
struct SubmitResult {
  Entry entry;
  std::optional<double> previous_score;    // none if the user was new
  std::optional<long long> previous_rank;  // 1-based, under the board's tie rule
  bool changed = false;                    // the stored score changed
  std::vector<std::string> trimmed_user_ids;
  // With a submission id (guards): true if this is the stored result of an earlier write with
  // that id (nothing was written now); none without an id.
  std::optional<bool> duplicate;
  // On a period's board (seasons): the id of the period the write landed on (for a duplicate,
  // the first write's, whatever period the clock says now); none on other boards.
  std::optional<std::string> period;
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
  std::optional<std::string> submission_id;  // guards: skipped if applied before
};

// ---- Guards: change events read from the board's stream f"{key}:events".
// `kind` says what made the event: "score" (a write: the user's new score, or whom its trim
// removed), "delete" (delete_user removed the user: `score` and `previous_score` the score it
// had, `previous_rank` its rank, no `rank`), "trim" (set_max_entries or upsert_many's trim:
// `trimmed_user_ids`, no user), "clear" (one page of clear: `removed` and `size`, the entries
// left, no ids, no user). An event without a kind was written before kinds existed: "score".
struct Event {
  std::string id;  // the stream entry's id: resume after it
  std::string kind = "score";
  std::optional<std::string> user_id;  // none for "trim" and "clear"
  std::optional<double> score;         // none for "trim" and "clear"
  std::optional<long long> rank;       // 1-based; none if the user is not on the board now
  std::optional<double> previous_score;
  std::optional<long long> previous_rank;
  std::vector<std::string> trimmed_user_ids;
  std::vector<std::string> overtaken;  // at most 10, nearest first
  std::optional<long long> removed;    // "clear": how many entries the page removed
  std::optional<long long> size;       // "clear": how many entries were left after it
  // "team" (a team board's stream: a team's score changed; `user_id` the team, `score` and
  // `rank` on the teams' board, none if it left it): the member whose change moved it.
  std::optional<std::string> member;
  // "settled" (a league's stream, one event per cohort settled): none of the above but `id`.
  std::optional<std::string> period;
  std::optional<long long> cohort;
  std::optional<long long> tier;  // the cohort's tier, 0 the lowest
  std::optional<std::string> bracket;
  std::vector<std::string> promoted, demoted;
};
// What read_events returns: the events after `last_id`, and the id to read after next (the
// last event's, or the stream's last id when asked for '$' and nothing came).
struct EventBatch {
  std::string last_id;
  std::vector<Event> events;
};

struct None {};

// The queries. get_page: one page of the board and how many there are.
struct Page {
  long long page = 1;  // 1-based, as asked
  long long page_size = 10;
  long long total_pages = 0;  // ceil(size / page_size); 0 on an empty board
  long long size = 0;         // the board's size when the page was read
  std::vector<Entry> entries;
};

// One bin of get_histogram: scores in [min, max) (the last bin: [min, max]).
struct HistogramBin {
  double min = 0;
  double max = 0;
  long long count = 0;
};

// A declared reply's record (script_call.hpp: a league's, a tournament's, a team board's): named
// fields, in order (the bindings make a dict of them); tie-break columns' values as
// Entry::tiebreak.
struct ReplyRecord;
using ReplyField =
    std::variant<std::monostate, bool, long long, double, std::string, std::vector<std::string>,
                 Metadata, SubmitResult, std::vector<ReplyRecord>,
                 std::vector<std::pair<std::string, double>>>;
struct ReplyRecord {
  std::vector<std::pair<std::string, ReplyField>> fields;
  void add(std::string name, ReplyField value) {
    fields.emplace_back(std::move(name), std::move(value));
  }
};

// What a call built by name answers (script_call.hpp), its reply read as declared: a record
// (an array of fields), one value, nothing (nil, where the family allows it: a league's user
// with no cohort, no result), or (a league's) the period that must be settled first (its start,
// unix ms, and id): no one is placed in a period, and no read of the current period answers,
// while an earlier period with players is not settled.
struct DeclaredReply {
  std::optional<ReplyRecord> record;
  std::optional<ReplyField> value;  // a declared reply of one value (script_call.hpp)
  std::optional<std::pair<long long, std::string>> unsettled;
};

// An operation's result: one type per kind of answer, each made a Python value by the bindings
// (bindings/conversions.cpp, to_python). A group write's is each member's SubmitResult.
using Result =
    std::variant<None, bool, long long, std::optional<long long>, Metadata, std::optional<Entry>,
                 std::vector<Entry>, WriteResult, std::vector<std::string>, TrimSummary,
                 SubmitResult, std::vector<std::optional<Entry>>, Page, std::optional<double>,
                 std::vector<HistogramBin>, EventBatch, DeclaredReply, std::vector<SubmitResult>>;

// A board's ranking rules (see README, "Ranking rules"). Order: which scores are better. Ties:
// how equal scores rank: Redis's member order (lexicographic), the earlier achiever first
// (first), a shared rank with gaps (competition: 1, 1, 3) or without (dense: 1, 1, 2).
enum class Order { Desc, Asc };
enum class Ties { Lexicographic, First, Competition, Dense };
// Where a board keeps its players' metadata: the guide's hash per player ("<key>:user:<id>"),
// or the compact layout's one hash for the board ("<key>:meta", field: the user id; see
// board_spec in lib/options.lua), recorded in the board's options.
enum class Layout { Guide, Compact };
// How a write combines the score with the stored one: replace it, keep the better, add.
enum class WriteMode { Set, Best, Incr };

// Parsing (InvalidArgument naming the allowed values) and the names used in Redis and errors.
Order parse_order(std::string_view name);
Ties parse_ties(std::string_view name);
Layout parse_layout(std::string_view name);
WriteMode parse_write_mode(std::string_view name);
const char* name_of(Order order);
const char* name_of(Ties ties);
const char* name_of(Layout layout);
const char* name_of(WriteMode mode);

class Operation {
 public:
  virtual ~Operation() = default;
  virtual const char* name() const = 0;
  // More than one round trip (pages): a caller that gives up should stop the next ones.
  virtual bool paged() const { return false; }
  // The commands to send in the next round trip.
  virtual std::vector<Command> next() = 0;
  // Where the reply to command `index` of the current step may go as it is decoded, instead of
  // a Reply tree (codec::ReplySink; that reply then reaches feed() as an empty array marked
  // `streamed`); nullptr: as a tree. A sink must also take a tree's replay (codec::replay): a
  // transport may always hand over the tree.
  virtual codec::ReplySink* reply_sink(std::size_t index) {
    (void)index;
    return nullptr;
  }
  // Their replies (never error replies: the transport raises those, unless
  // reads_error_replies()). True when finished.
  virtual bool feed(std::vector<Reply>& replies) = 0;
  // True: feed() gets a step's error replies too (but a cluster redirect, which the transport
  // follows, and NOSCRIPT, which it answers), and raises those it does not answer itself.
  virtual bool reads_error_replies() const { return false; }
  // The result, once feed() has returned true.
  virtual Result take_result() = 0;
  // How many times the connection core may send the current step again on a new connection
  // when the connection dropped with it in flight (its reply lost): 0 for every write that
  // might apply twice; a write carrying submission ids cannot (guards).
  virtual int resend_limit() const { return 0; }
  // Seconds the server may hold the reply on purpose (XREAD BLOCK): added to socket_timeout.
  virtual double server_wait() const { return 0; }

  // ---- Client-side caching of metadata (connection/cache.hpp). A read whose result holds
  // entries with their metadata names the prefix of those hashes (f"{key}:user:"), and builds
  // the same read without them: its scripts' lean mode (an empty prefix argument), every entry's
  // metadata then empty. Other operations: nullptr.
  virtual const std::string* cached_metadata_prefix() const { return nullptr; }
  virtual std::unique_ptr<Operation> without_metadata() const { return nullptr; }
  // Where a read of many entries finds its entries' metadata when it runs in two steps
  // (split_read): the guide's hashes "<prefix><user_id>" (a read whose cached_metadata_prefix()
  // names them), or a compact board's one hash "<board>:meta". None: it cannot split.
  struct MetadataSource {
    std::string prefix;  // the guide's hashes' prefix, "<board>:user:"
    std::string board;   // a compact board's key; empty: the guide's layout
  };
  virtual std::optional<MetadataSource> split_metadata() const {
    if (const std::string* prefix = cached_metadata_prefix()) return MetadataSource{*prefix, {}};
    return std::nullopt;
  }
  // A read that runs in two round trips (split_read: in_two_steps()) gives the same read in one
  // (its script's, one snapshot) before it runs, for a connection on which a call written after
  // it would run between them (one shared by concurrent calls, in a run_pipelined stream).
  // Others: nullptr.
  virtual bool in_two_steps() const { return false; }
  virtual std::unique_ptr<Operation> in_one_trip() { return nullptr; }
  // A cluster node redirected the current step (MOVED, ASK, TRYAGAIN, CLUSTERDOWN): nullptr, the
  // same step goes again where the reply says; else the operation to run instead, from its first
  // step, routed anew. A read in two steps whose second was redirected starts over as its one
  // script: the slot moved, or is moving, between the steps, and a pipelined step of HGETALLs
  // cannot follow ASK key by key (the node asked would answer an entry not yet moved as empty).
  virtual std::unique_ptr<Operation> instead_after_redirect() { return nullptr; }
};

// The events of `stream` after `last_id` ('$': only those to come), at most `count`, waiting up
// to `block` seconds for one (none: no BLOCK): a board's change events, a league's settlements.
// Checks its arguments; sends nothing itself.
std::unique_ptr<Operation> read_stream_events(std::string stream, std::string last_id,
                                              long long count, std::optional<double> block);

// The guards of a board: the options of writes that are not ranking rules.
struct Guards {
  double submission_ttl = 86400;      // seconds an idempotent write's result is kept
  std::optional<long long> rate_max;  // rate_limit=(max, per): writes per user...
  double rate_per = 0;                // ...per this many seconds (sliding window)
  bool events = false;                // append change events to f"{key}:events"
  long long events_maxlen = 10000;    // the stream is capped at about this many (MAXLEN ~)
  // Score limits (fair play): a write leaving a score outside [score_min, score_max], or
  // improving one by more than max_increment in the board's order, is refused (SCOREREJECTED).
  std::optional<double> score_min, score_max, max_increment;
  bool limits() const { return score_min || score_max || max_increment; }
  bool any() const { return rate_max.has_value() || events || limits(); }
};

// A tie-break column (a board option): its name, and whether greater values rank first.
struct TiebreakColumn {
  std::string name;
  bool desc = true;
};
// At most this many tie-break columns; each is 16 hex digits of a ranked member's key.
constexpr std::size_t kMaxTiebreakColumns = 4;
constexpr std::size_t kTiebreakWidth = 16;

// The ranked member's key of `values` on a board of `order` with `columns` (see board_spec in
// lib/options.lua): per column, 16 hex digits of the order-preserving image of the double, inverted
// where the column's direction is not the board's, so that Redis's member order among equal
// scores is the columns' rank order. InvalidArgument for NaN or a count that differs.
std::string tiebreak_key(const std::vector<TiebreakColumn>& columns, Order order,
                         const std::vector<double>& values);
// The values of a ranked member's key (its first 16 digits per column), as tiebreak_key wrote.
std::vector<std::pair<std::string, double>> tiebreak_values(
    const std::vector<TiebreakColumn>& columns, Order order, std::string_view key);

// The score limits' words of a write's spec, keyless (" range:<min>:<max> maxinc:<n>", or ""),
// as the scripts read them (guard_fields in lib/guards.lua); and their checks (InvalidArgument).
std::string limit_words(const Guards& guards);
void validate_score_limits(const Guards& guards);

// The rate limit's and change events' words without their keys (" rate:<max>:<per ms>" with a
// rate limit, " events:<maxlen>" with events), as the scripts read them: part of the write rule
// a league or tournament sends and records (its config), beside add_guard_words' keyed ones.
std::string guard_rule_words(const Guards& guards);

// A board's options as messages show them (Python's spelling): "order='desc', ties='...',
// rate_limit=None, events=False, score_range=(0, 100), max_increment=None"; of this client's
// board, or of a script's 'OPTIONS order=.. ties=.. rate_limit=.. ...' status (those recorded
// in Redis; a field the status lacks shows as none).
std::string options_text(Order order, Ties ties, const Guards& guards);
// The same, with the tie rule as scripts get it (Board::ties_word: tie-break columns too).
std::string options_text(Order order, const std::string& ties_word, const Guards& guards);
std::string recorded_options_text(const std::string& status);
// The guards as a script's 'OPTIONS ...' status names them: "rate_limit=<max>/<per ms>
// events=<1|-> score_range=<min>/<max> max_increment=<n>" ('-': none).
std::string guards_status_text(const Guards& guards);

// The entries a read's result holds (get_top's list, get_page's entries, get_entries' present
// ones...), for a cache to fill in their metadata; none for other results.
std::vector<Entry*> entries_of(Result& result);

// HGETALL of each key, in one round trip (the commands pipelined, not atomic together); the
// hashes go to `sink`, in order, and the result is None. For a client-side cache's misses.
std::unique_ptr<Operation> read_hashes(std::vector<std::string> keys,
                                       std::function<void(std::vector<Metadata>&&)> sink);

// A board's identity and limit. Methods validate their arguments (throwing InvalidArgument
// before anything is sent) and return the operation to run.
class Board {
 public:
  // Entries per round trip of list_all, clear and set_max_entries: boards up to this size
  // take one round trip; larger ones are paged so the server is never blocked for long.
  static constexpr long long kPageSize = 5000;
  // Reads of this many entries or more with their metadata run in the guide's two steps
  // (split_read): the server's CPU per call falls to the guide's, below the one script's, and
  // the latency gains a round trip that is a small part of the call's (benchmarks.md, "Reads
  // in two steps", benchmarks/split_reads.py). The first for get_top and get_around_rank on a
  // default board (their lean forms start with the guide's ZRANGE), the second for every other
  // read (a script first: below it the second round trip costs more than the server saves).
  static constexpr long long kSplitTopFrom = 50;
  static constexpr long long kSplitReadFrom = 200;
  // An unlimited board's max_entries (None in Python): more than a sorted set can hold
  // (2^32 - 1 members), so no write ever trims; larger limits are clamped to it.
  static constexpr long long kUnlimited = constants::UNLIMITED;  // lib/base.lua's

  // `expire_at` (unix ms): a periodic board's deadline (seasons): every write PEXPIREATs
  // every key of the board it touches, metadata hashes included (see expire_board in
  // lib/expiry.lua). `submission_scope`: where the board's submission ids are recorded
  // (f"{submission_scope}:submission:{id}"); none: the board's key. A period's board (seasons) is
  // f"{scope}:{period id}" and records its ids under its periodic board's key, so a resend finds
  // the first write's record whatever period the clock says then. `open_span` [from, until) (unix
  // ms): a period's board (seasons): when, on the server's clock, its writes belong to its period
  // (see check_clock in lib/clock.lua); a write outside it is refused (ClockSkew) before anything
  // is written.
  Board(std::string key, long long max_entries, Order order = Order::Desc,
        Ties ties = Ties::Lexicographic, Guards guards = {},
        std::optional<long long> expire_at = std::nullopt,
        std::optional<std::string> submission_scope = std::nullopt,
        std::vector<TiebreakColumn> tiebreak = {},
        std::optional<std::pair<long long, long long>> open_span = std::nullopt,
        Layout layout = Layout::Guide);

  const std::string& key() const { return id_->key; }
  Layout layout() const { return id_->layout; }
  long long max_entries() const { return id_->max_entries.load(std::memory_order_relaxed); }
  Order order() const { return id_->order; }
  Ties ties() const { return id_->ties; }
  bool has_default_options() const { return id_->is_default(); }
  const std::vector<TiebreakColumn>& tiebreak() const { return id_->tiebreak; }
  // Elements of entry.lua's and entries.lua's entry: 4 with tie-break columns (the member).
  std::size_t entry_size() const { return id_->tiebreak.empty() ? 3 : 4; }
  std::string ties_word() const { return id_->ties_word(); }
  std::optional<long long> expire_at() const { return id_->expire_at; }
  const std::optional<std::pair<long long, long long>>& open_span() const { return id_->open_span; }
  // Where submission ids are recorded (the key, or a periodic board's key), and the record of
  // `submission_id`: f"{submission_scope}:submission:{submission_id}".
  const std::string& submission_scope() const { return id_->scope; }
  std::string submission_key(const std::string& submission_id) const {
    return id_->scope + ":submission:" + submission_id;
  }
  // The period id of a period's board (its key after f"{submission_scope}:"); none otherwise.
  std::optional<std::string> period() const;
  // Appends a write's guard words to `spec` (" sid:.. rate:.. events:.. expire:..", see
  // guard_fields in lib/guards.lua: the guards, then a period's deadline, which has no key) and
  // their keys to `keys`; nothing on a board without them (write.lua and group.lua use them).
  void add_guards(std::string& spec, std::vector<std::string>& keys, const std::string& user_id,
                  const std::optional<std::string>& submission_id) const;
  // " open:<from>:<until>" for a board with an open span (see the constructor), else "".
  std::string open_word() const;
  // True once a reply showed that the board's recorded options are this object's: until then a
  // default board's get_rank is a script that checks them (then ZREVRANK), and its other reads
  // declare its options hash, which their scripts check (then they skip the check).
  bool options_checked() const { return id_->checked.load(std::memory_order_relaxed); }
  // upsert_many's check_options() ran (see Identity::bulk_checked).
  bool bulk_checked() const { return id_->bulk_checked.load(std::memory_order_relaxed); }

  std::unique_ptr<Operation> upsert_user(std::string user_id, double score,
                                         Metadata metadata) const;
  std::unique_ptr<Operation> increment_score(std::string user_id, double amount,
                                             Metadata metadata) const;
  // submit(): the full write, with mode Set, Best or Incr; a SubmitResult.
  // `tiebreak`: the values of the board's tie-break columns, in its order (none: the stored
  // ones, or for a new entry the worst of each).
  std::unique_ptr<Operation> submit(
      std::string user_id, double score, Metadata metadata, WriteMode mode,
      std::optional<std::string> submission_id = std::nullopt, int retries = 2,
      std::optional<std::vector<double>> tiebreak = std::nullopt) const;
  const Guards& guards() const { return id_->guards; }
  // The events after `last_id` ('$': those to come), at most `count`, waiting up to `block`
  // seconds for one (none: no wait) on the stream f"{key}:events" (XREAD).
  std::unique_ptr<Operation> read_events(std::string last_id, long long count,
                                         std::optional<double> block) const;
  // Trims the board to max_entries; the new limit takes effect on this object once the trim
  // has finished (if it raises, the object keeps the old limit; pages already trimmed stay so).
  std::unique_ptr<Operation> set_max_entries(long long max_entries) const;
  std::unique_ptr<Operation> get_top(long long count) const;
  std::unique_ptr<Operation> get_around_rank(long long rank, long long count) const;
  std::unique_ptr<Operation> get_rank(std::string user_id) const;
  std::unique_ptr<Operation> get_user_metadata(std::string user_id) const;
  std::unique_ptr<Operation> get_user_entry(std::string user_id) const;
  std::unique_ptr<Operation> list_all() const;
  std::unique_ptr<Operation> get_size() const;
  std::unique_ptr<Operation> delete_user(std::string user_id) const;
  std::unique_ptr<Operation> clear() const;

  // ---- Hidden players (fair play): one script each, atomic (hide.lua writes, hidden.lua reads
  // with no-writes). hide takes the user off
  // every rank and keeps their score aside (true if they were not hidden); unhide puts it back
  // as a write would, trim included (true if they were hidden); hidden lists who is, in byte
  // order. `scope`, on a period's board: also for every later period of its periodic board
  // (PeriodicLeaderboard's, on its current period's board).
  std::unique_ptr<Operation> hide(std::string user_id, bool scope = false) const;
  std::unique_ptr<Operation> unhide(std::string user_id, bool scope = false) const;
  std::unique_ptr<Operation> hidden(bool scope = false) const;
  // Whether the user is hidden (as hidden() lists them): one HEXISTS (two on a period's board
  // with `scope`).
  std::unique_ptr<Operation> is_hidden(std::string user_id, bool scope = false) const;

  // ---- Queries: one round trip each, atomic, ranks under the board's tie rule.
  // Most queries accept at most this many ids, entries a page or bins.
  static constexpr long long kMaxQueryItems = 1000;
  // `count` entries centred on the user's position, clamped as get_around_rank (window);
  // empty if the user is not on the board (around.lua).
  std::unique_ptr<Operation> get_around_user(std::string user_id, long long count) const;
  // One optional entry per id, in the order given (entries.lua); 0 to 1,000 ids.
  std::unique_ptr<Operation> get_entries(std::vector<std::string> user_ids) const;
  // The 1-based page of `page_size` entries (window.lua, 'range'), with the page count.
  std::unique_ptr<Operation> get_page(long long page, long long page_size) const;
  // Entries with min_score <= score <= max_score, best first, `offset`/`limit` applied after
  // ordering (by_score.lua); infinite bounds allowed, NaN refused.
  std::unique_ptr<Operation> get_by_score(double min_score, double max_score, long long offset,
                                          long long limit) const;
  // How many entries have min_score <= score <= max_score (ZCOUNT).
  std::unique_ptr<Operation> count_by_score(double min_score, double max_score) const;
  // 1 + the entries strictly better than `score` (ZCOUNT once the options are checked, else
  // stats.lua, which checks them).
  std::unique_ptr<Operation> rank_for_score(double score) const;
  // The share of the other entries strictly worse than the user, 0-100; none if absent.
  std::unique_ptr<Operation> get_percentile(std::string user_id) const;
  // The nearest-rank score at percentile `p` (0-100), worst to best; none on an empty board.
  std::unique_ptr<Operation> score_at_percentile(double p) const;
  // `bins` equal-width bins over [min, max] (the board's extremes where not given), ascending;
  // one ZCOUNT per bin (stats.lua).
  std::unique_ptr<Operation> get_histogram(long long bins, std::optional<double> min_score,
                                           std::optional<double> max_score) const;

  // upsert_many, one chunk: a variadic ZADD and one HSET per entry with metadata in MULTI/EXEC,
  // in one round trip, not trimmed (trim_to_max_entries follows the last chunk). On a board with
  // options, guards or hidden players, one script (bulk.lua) instead, all or nothing. A chunk
  // the server refuses out of memory writes nothing; one whose command fails as it runs
  // (WRONGTYPE, NOPERM) keeps its other commands' writes. The result is the number of entries
  // written.
  // Entries are validated here; `first_index` numbers them in errors.
  std::unique_ptr<Operation> upsert_chunk(std::vector<BatchEntry> entries, long long first_index,
                                          int retries = 2) const;
  // Converts the board at key() from the guide's layout to this object's, the compact one, a
  // page of about `page` players per round trip (layout.lua); the result is how many players'
  // metadata moved. InvalidArgument on a board object of the guide's layout.
  std::unique_ptr<Operation> convert_layout(long long page) const;
  static constexpr long long kMaxConvertPage = 10000;
  // Trims to max_entries in pages; the result is a TrimSummary with at most `report` ids.
  std::unique_ptr<Operation> trim_to_max_entries(long long report) const;
  // Checks the board's recorded options against this object's (ValueError if they differ);
  // the result is None. upsert_many runs it first on a default board not yet checked.
  std::unique_ptr<Operation> check_options() const;

  // The user's metadata hash as scripts take it (`user_key`): the guide's f"{key}:user:{id}",
  // or a compact board's hash f"{key}:meta" (the user's field there).
  std::string metadata_key(const std::string& user_id) const {
    return id_->layout == Layout::Compact ? key() + ":meta" : metadata_prefix() + user_id;
  }
  // The guide's metadata hashes' prefix (`user_prefix`; a compact board's scripts ignore it).
  std::string metadata_prefix() const { return key() + ":user:"; }
  // The keys of the board's options: the options hash, then those the tie rule needs, then a
  // compact board's metadata hash. None of them can be a guide's metadata hash
  // (f"{key}:user:{user_id}").
  std::vector<std::string> option_keys() const;

  // What the operations share with the board that built them.
  struct Identity {
    std::string key;
    Order order;
    Ties ties;
    std::atomic<long long> max_entries;
    std::atomic<bool> checked{false};
    // check_options() ran (upsert_many's, once per object; this object's hide and unhide clear
    // it, so that its next bulk load takes bulk.lua).
    std::atomic<bool> bulk_checked{false};
    // check_options() found hidden players (fair play): upsert_many's chunks are bulk.lua,
    // which keeps their entries aside.
    std::atomic<bool> hiding{false};
    // The board's size as a reply last said it (get_size, list_all); -1: not known yet. Where
    // list_all reads: ZRANGE pages from Board::kSplitTopFrom entries, else the script.
    std::atomic<long long> known_size{-1};
    Guards guards;
    std::optional<long long> expire_at;  // unix ms; none: the board never expires
    std::optional<std::pair<long long, long long>> open_span;  // unix ms; none: any time
    std::string scope;  // where submission ids are recorded (see Board)

    std::vector<TiebreakColumn> tiebreak;  // none: the score alone ranks
    Layout layout = Layout::Guide;
    // The guide's ranking rules, whatever the layout: a rank is a position in the sorted set,
    // so a checked board's ranked reads may be the guide's commands (ZRANGE, ZREVRANK).
    bool ranks_as_guide() const {
      return order == Order::Desc && ties == Ties::Lexicographic && tiebreak.empty();
    }
    bool is_default() const { return ranks_as_guide() && layout == Layout::Guide; }
    // The tie rule as scripts get it: its name, or on a board with tie-break columns
    // "tb:<name>.<desc|asc>,..." (recorded as the board's ties: see board_spec in lib/options.lua);
    // on a compact board followed by "+compact" (recorded as the options' 'layout').
    std::string ties_word() const;
    // A result's entries, their ranked members split into the user id and the columns' values
    // (a board with tie-break columns: its reads return the whole member).
    void split_members(Result& result) const;
    // A script's last fixed arguments: order and ties, on a board with options only (a default
    // board's commands stay within the 10 arguments Redis accepts before authentication).
    std::vector<std::string> with_options(std::vector<std::string> args) const;
    // The same two, as a declared script takes them (`order?`, `ties?`).
    std::optional<arg::order> order_arg() const;
    std::optional<arg::ties> ties_arg() const;
    // A removal's last arguments (`order?`, `ties?`, `removal?`): with_options', and on a
    // board with events (guards) order, ties and 'events:<maxlen>[ expire:<unix ms>]' (see
    // removal_events in lib/removal_events.lua).
    struct RemovalArgs {
      std::optional<arg::order> order;
      std::optional<arg::ties> ties;
      std::optional<arg::removal> removal;
    };
    RemovalArgs removal_args() const;
    // Every script reply goes through here first: the status 'OPTIONS order=.. ties=..' (the
    // board's recorded options differ) raises InvalidArgument naming both; anything else shows
    // the options agree.
    void accept(const Reply& reply);
  };

 private:
  std::unique_ptr<Operation> write(
      WriteMode mode, std::string user_id, double number, Metadata metadata, bool submit,
      std::optional<std::string> submission_id = std::nullopt, int retries = 0,
      std::optional<std::vector<double>> tiebreak = std::nullopt) const;
  // When a script checks a default board's recorded options: on every call (writes: a board
  // another client has since created with options is refused, never changed), or until a reply
  // has shown the board records none (reads, and get_rank, upsert_many's check).
  enum class Check { EveryCall, UntilConfirmed };
  // The option keys, as a declared script takes them (`option_keys...`, after the board and its
  // own keys). A default board's options hash is left out once it need not be checked: its
  // scripts then skip the check.
  arg::option_keys option_keys_arg(Check check) const;
  // A removal's keys after the board and its own (delete_user, clear, trims:
  // `removal_keys...`): the option keys, then on a board with events the stream.
  arg::removal_keys removal_keys_arg() const;
  // hide.lua's call: `action` 'hide' or 'unhide'.
  std::unique_ptr<Operation> hiding_call(const char* action, std::string user_id, bool scope) const;
  // hidden.lua's read (no-writes): the list (user_id ''), or whether the user is hidden.
  std::unique_ptr<Operation> hidden_read(std::string user_id, bool scope) const;

  std::shared_ptr<Identity> id_;
};

// `read` (a read of up to `count` entries with their metadata, which has a lean form) as a
// SplitRead from `from` entries on (Board::kSplitReadFrom), else itself. See SplitRead in
// operations.cpp.
std::unique_ptr<Operation> split_read(std::unique_ptr<Operation> read, long long count,
                                      long long from = Board::kSplitReadFrom);

// An idempotent write's guard word " sid:<ttl ms>:<call token>" (appended to `spec`; a new
// token, see new_call_token: one per call, since a call builds its command once) and its record's
// key f"{scope}:submission:{submission_id}" (appended to `keys`), see guard_fields and
// read_submission in lib/submissions.lua; what Board::add_guards and a window's group write add
// for a submission id.
void add_submission_guard(std::string& spec, std::vector<std::string>& keys,
                          const std::string& scope, double submission_ttl,
                          const std::string& submission_id);
// A write's guard words for a submission id (see add_submission_guard), `guards`' rate limit (the
// user's window f"{scope}:rate:{user_id}") and events (the stream `events_stream`), in that order,
// their keys appended to `keys` (see guard_fields in lib/guards.lua): what a board's write and a
// window's group write add, each then its own keyless words (score limits: limit_words).
void add_guard_words(std::string& spec, std::vector<std::string>& keys, const Guards& guards,
                     const std::string& scope, const std::string& events_stream,
                     const std::string& user_id, const std::optional<std::string>& submission_id);
// InvalidArgument unless `guards` are ones a board (or a rolling window) accepts.
void validate_guards(const Guards& guards);
// InvalidArgument unless `seconds` is a submission_ttl a board accepts (0.001 to 1e10).
double require_submission_ttl(double seconds);
// InvalidArgument if a submission id is given but empty.
void require_submission_id(const std::optional<std::string>& id);

// PING: true when the server answers.
std::unique_ptr<Operation> ping();

// write.lua's (and group.lua's) submit() reply for `user_id`: {trimmed_ids, score, rank or nil,
// metadata, previous score or nil, previous rank or nil, changed[, duplicate, the key of the
// board written]} (the last two with a submission id). `board`, if given, is the board written
// to: on a period's board the result says its period (a duplicate's: the first write's).
SubmitResult parse_submit_reply(Reply& reply, std::string user_id, bool idempotent = false,
                                const Board* board = nullptr);

// Exact text of a double for Redis (round-trips through strtod).
std::string format_score(double value);

}  // namespace rlb::leaderboard
