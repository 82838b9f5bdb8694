#include "connection/cache.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <utility>

#include "codec/resp.hpp"
#include "connection/exchange.hpp"
#include "errors.hpp"

namespace rlb::connection {

using leaderboard::Entry;
using leaderboard::Operation;
using leaderboard::Result;

void CacheOptions::validate() const {
  if (max_entries < 1) throw InvalidArgument("client_cache_size must be at least 1");
  if (max_bytes < 1) throw InvalidArgument("client_cache_max_bytes must be at least 1");
}

MetadataCache::MetadataCache(CacheOptions options) : options_((options.validate(), options)) {}

bool MetadataCache::covered(const std::vector<std::string>& prefixes,
                            const std::string& key) const {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& prefix) {
    return key.compare(0, prefix.size(), prefix) == 0;
  });
}

// ---- The invalidation connection ------------------------------------------------------------

bool MetadataCache::want_prefix(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!covered(wanted_, prefix)) {
    // Redis refuses overlapping prefixes on one connection: this one replaces those it covers.
    wanted_.erase(std::remove_if(wanted_.begin(), wanted_.end(),
                                 [&](const std::string& w) {
                                   return w.compare(0, prefix.size(), prefix) == 0;
                                 }),
                  wanted_.end());
    wanted_.push_back(prefix);
  }
  return !(tracking_ || starting_) || !covered(subscribed_, prefix);
}

std::string MetadataCache::tracking_wire(long long own_id, std::size_t& replies) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (wanted_.empty()) throw std::logic_error("no prefix to track");
  flush_locked();
  ++generation_;
  tracking_ = false;
  starting_ = true;
  pong_ = 0;
  subscribed_ = wanted_;
  const std::string id = std::to_string(own_id);
  std::vector<std::string_view> argv = {"CLIENT", "TRACKING", "on", "REDIRECT", id, "BCAST"};
  for (const auto& prefix : subscribed_) {
    argv.push_back("PREFIX");
    argv.push_back(prefix);
  }
  std::string wire;
  codec::encode_command(argv, wire);
  codec::encode_command({"SUBSCRIBE", kChannel}, wire);
  replies = 2;
  return wire;
}

void MetadataCache::tracking_started(const std::vector<Reply>& replies) {
  for (const auto& reply : replies) {
    if (reply.is_error()) raise_error_reply(reply);
  }
  if (replies.size() != 2 || replies[0].type != codec::ReplyType::Status ||
      !replies[1].is_array() || replies[1].elements.size() != 3 ||
      replies[1].elements[0].str != "subscribe") {
    throw codec::ProtocolError("Protocol error: unexpected reply to CLIENT TRACKING/SUBSCRIBE");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!starting_) return;  // lost in the meantime
  starting_ = false;
  tracking_ = true;
}

void MetadataCache::on_push(const Reply& push) {
  auto unexpected = [] {
    throw codec::ProtocolError("Protocol error: unexpected message on the invalidation connection");
  };
  if (!push.is_array() || push.elements.size() < 2 ||
      push.elements[0].type != codec::ReplyType::String) {
    unexpected();
  }
  const std::string& kind = push.elements[0].str;
  std::lock_guard<std::mutex> lock(mutex_);
  if (kind == "message") {
    if (push.elements.size() != 3 || push.elements[1].str != kChannel) unexpected();
    const Reply& keys = push.elements[2];
    if (keys.is_nil()) {  // FLUSHALL / FLUSHDB (or the server's own flush of its tables)
      flush_locked();
      return;
    }
    if (!keys.is_array()) unexpected();
    for (const auto& key : keys.elements) {
      if (key.type != codec::ReplyType::String) unexpected();
      invalidate_locked(key.str);
    }
  } else if (kind == "pong") {
    const std::string& text = push.elements[1].str;
    std::uint64_t token = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), token);
    if (error != std::errc() || end != text.data() + text.size()) unexpected();
    pong_ = std::max(pong_, token);
  } else if (kind != "subscribe") {
    unexpected();
  }
}

void MetadataCache::connection_lost() {
  std::lock_guard<std::mutex> lock(mutex_);
  flush_locked();
  tracking_ = false;
  starting_ = false;
  subscribed_.clear();
}

bool MetadataCache::tracking() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return tracking_;
}

// ---- Barriers --------------------------------------------------------------------------------

std::optional<MetadataCache::Barrier> MetadataCache::barrier() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!tracking_) return std::nullopt;
  Barrier barrier;
  barrier.generation = generation_;
  barrier.token = ++next_token_;
  const std::string token = std::to_string(barrier.token);
  codec::encode_command({"PING", token}, barrier.wire);
  return barrier;
}

bool MetadataCache::passed(const Barrier& barrier) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return tracking_ && barrier.generation == generation_ && pong_ >= barrier.token;
}

bool MetadataCache::hopeless(const Barrier& barrier) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !tracking_ || barrier.generation != generation_;
}

// ---- Entries ---------------------------------------------------------------------------------

MetadataCache::Ticket MetadataCache::ticket(const Barrier& barrier, const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mutex_);
  // The barrier's connection is the one whose server the driver checked the read went to: a
  // connection set up since (by another thread, after this read's own was dropped) may be on
  // another server.
  if (!tracking_ || barrier.generation != generation_ || pong_ < barrier.token ||
      !covered(subscribed_, prefix)) {
    return {};
  }
  ++tickets_out_;
  return {generation_, seq_};
}

void MetadataCache::release(const Ticket& ticket) {
  if (ticket.generation == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (tickets_out_ > 0 && --tickets_out_ == 0) invalidated_.clear();
}

bool MetadataCache::lookup(const Barrier& barrier, const std::string& key, Metadata& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!tracking_ || barrier.generation != generation_ || pong_ < barrier.token) return false;
  auto found = index_.find(key);
  if (found == index_.end()) return false;
  lru_.splice(lru_.begin(), lru_, found->second);
  out = found->second->value;
  ++stats_.hits;
  return true;
}

void MetadataCache::insert(const Ticket& ticket, const std::string& key, const Metadata& value) {
  std::size_t bytes = kEntryCost + key.size();
  for (const auto& [field, text] : value) bytes += field.size() + text.size();
  if (bytes > options_.max_bytes) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (ticket.generation == 0 || ticket.generation != generation_ || !tracking_ ||
      flushed_at_ > ticket.seq) {
    return;
  }
  auto invalidated = invalidated_.find(key);
  if (invalidated != invalidated_.end() && invalidated->second > ticket.seq) return;
  auto found = index_.find(key);
  if (found != index_.end()) erase_locked(found);
  lru_.push_front(Node{key, value, bytes});
  index_.emplace(key, lru_.begin());
  bytes_ += bytes;
  while (!lru_.empty() && (lru_.size() > options_.max_entries || bytes_ > options_.max_bytes)) {
    erase_locked(index_.find(lru_.back().key));
  }
}

void MetadataCache::count_misses(std::size_t misses) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.misses += misses;
}

void MetadataCache::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  flush_locked();
}

CacheStats MetadataCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CacheStats out = stats_;
  out.entries = lru_.size();
  out.bytes = bytes_;
  out.tracking = tracking_;
  return out;
}

void MetadataCache::flush_locked() {
  lru_.clear();
  index_.clear();
  bytes_ = 0;
  flushed_at_ = ++seq_;  // every ticket out is now too old to insert
  invalidated_.clear();
  ++stats_.flushes;
}

void MetadataCache::invalidate_locked(const std::string& key) {
  ++stats_.invalidations;
  ++seq_;
  if (tickets_out_ > 0) {
    // A bounded record: past it, every ticket out is refused at once (as after a flush).
    constexpr std::size_t kMaxRecorded = 100000;
    if (invalidated_.size() >= kMaxRecorded) {
      invalidated_.clear();
      flushed_at_ = seq_;
    } else {
      invalidated_[key] = seq_;
    }
  }
  auto found = index_.find(key);
  if (found != index_.end()) erase_locked(found);
}

void MetadataCache::erase_locked(std::unordered_map<std::string, Lru::iterator>::iterator it) {
  bytes_ -= it->second->bytes;
  lru_.erase(it->second);
  index_.erase(it);
}

// ---- CachedRead ------------------------------------------------------------------------------

namespace {

// The lean read, handing its result to the CachedRead; its own result is None.
class Capture final : public Operation {
 public:
  Capture(std::unique_ptr<Operation> operation, std::function<void(Result&&)> sink)
      : operation_(std::move(operation)), sink_(std::move(sink)) {}
  const char* name() const override { return operation_->name(); }
  bool paged() const override { return operation_->paged(); }
  std::vector<leaderboard::Command> next() override { return operation_->next(); }
  codec::ReplySink* reply_sink(std::size_t index) override { return operation_->reply_sink(index); }
  bool feed(std::vector<Reply>& replies) override {
    if (!operation_->feed(replies)) return false;
    sink_(operation_->take_result());
    return true;
  }
  Result take_result() override { return leaderboard::None{}; }

 private:
  std::unique_ptr<Operation> operation_;
  std::function<void(Result&&)> sink_;
};

}  // namespace

std::shared_ptr<CachedRead> CachedRead::make(std::shared_ptr<MetadataCache> cache,
                                             std::unique_ptr<Operation> operation,
                                             MetadataCache::Barrier barrier) {
  const std::string* prefix = operation->cached_metadata_prefix();
  if (prefix == nullptr) throw std::logic_error("not a cacheable read");
  auto lean = operation->without_metadata();
  return std::shared_ptr<CachedRead>(
      new CachedRead(std::move(cache), std::move(lean), *prefix, barrier));
}

CachedRead::CachedRead(std::shared_ptr<MetadataCache> cache, std::unique_ptr<Operation> lean,
                       std::string prefix, MetadataCache::Barrier barrier)
    : cache_(std::move(cache)),
      lean_(std::move(lean)),
      prefix_(std::move(prefix)),
      barrier_(barrier) {}

CachedRead::Step CachedRead::next(const std::function<bool()>& on_barrier_server) {
  switch (state_) {
    case State::Start:  // the query, first
      on_server_ = on_barrier_server();
      next_ = query();
      state_ = State::Queried;
      return Step::Run;
    case State::Queried:
      // Both connections on one server before and after the query, or the barrier proves
      // nothing (after a failover, say). The PONG was written before the query: normally it is
      // there already; the driver waits for it (a late one is doubt).
      on_server_ = on_server_ && on_barrier_server();
      if (on_server_) {
        state_ = State::Awaiting;
        return Step::AwaitBarrier;
      }
      return fetch_step(false);
    case State::Awaiting:
      throw std::logic_error("CachedRead: barrier_passed() follows Step::AwaitBarrier");
    case State::Awaited:
      return fetch_step(passed_);
    case State::Fetched:
      if (passed_ && !on_barrier_server()) moved();
      state_ = State::Done;
      return Step::Done;
    case State::Done:
      return Step::Done;
  }
  return Step::Done;
}

void CachedRead::barrier_passed(bool passed) {
  if (state_ != State::Awaiting) throw std::logic_error("CachedRead: no barrier awaited");
  passed_ = passed;
  state_ = State::Awaited;
}

CachedRead::Step CachedRead::fetch_step(bool passed) {
  passed_ = passed;
  next_ = fetch(passed ? std::optional<MetadataCache::Barrier>(barrier_) : std::nullopt);
  state_ = next_ ? State::Fetched : State::Done;
  return next_ ? Step::Run : Step::Done;
}

std::unique_ptr<Operation> CachedRead::operation() {
  if (!next_) throw std::logic_error("CachedRead::operation() follows Step::Run, once");
  return std::move(next_);
}

CachedRead::~CachedRead() { cache_->release(ticket_); }

std::unique_ptr<Operation> CachedRead::query() {
  if (!lean_) throw std::logic_error("CachedRead::query() runs once");
  std::weak_ptr<CachedRead> self = weak_from_this();
  return std::make_unique<Capture>(std::move(lean_), [self](Result&& result) {
    if (auto read = self.lock()) read->result_ = std::move(result);
  });
}

std::unique_ptr<Operation> CachedRead::fetch(const std::optional<MetadataCache::Barrier>& barrier) {
  if (!result_) throw std::logic_error("CachedRead::fetch() follows the query");
  missing_.clear();
  std::string key;
  for (Entry* entry : leaderboard::entries_of(*result_)) {
    key.assign(prefix_).append(entry->user_id);
    if (!barrier || !cache_->lookup(*barrier, key, entry->metadata)) missing_.push_back(entry);
  }
  if (missing_.empty()) return nullptr;
  cache_->count_misses(missing_.size());
  std::vector<std::string> keys;
  keys.reserve(missing_.size());
  for (Entry* entry : missing_) keys.push_back(prefix_ + entry->user_id);
  cache_->release(ticket_);
  // Before the HGETALLs are sent. Without a passed barrier they may go to another server than
  // the invalidation connection's: nothing they read is cached.
  ticket_ = barrier ? cache_->ticket(*barrier, prefix_) : MetadataCache::Ticket{};
  std::weak_ptr<CachedRead> self = weak_from_this();
  return leaderboard::read_hashes(std::move(keys), [self](std::vector<Metadata>&& hashes) {
    if (auto read = self.lock()) read->fetched_ = std::move(hashes);
  });
}

void CachedRead::moved() {
  cache_->release(ticket_);
  ticket_ = {};
}

Result CachedRead::result() {
  if (!result_) throw std::logic_error("CachedRead::result() follows the query");
  if (!missing_.empty()) {
    if (!fetched_ || fetched_->size() != missing_.size()) {
      throw std::logic_error("CachedRead::result() follows the fetch");
    }
    std::string key;
    for (std::size_t i = 0; i < missing_.size(); ++i) {
      key.assign(prefix_).append(missing_[i]->user_id);
      cache_->insert(ticket_, key, (*fetched_)[i]);
      missing_[i]->metadata = std::move((*fetched_)[i]);
    }
    missing_.clear();
  }
  cache_->release(ticket_);
  ticket_ = {};
  return std::move(*result_);
}

}  // namespace rlb::connection
