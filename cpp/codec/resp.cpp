#include "codec/resp.hpp"

#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <system_error>

#include "errors.hpp"

namespace rlb::codec {
namespace {

using Budget = ReplyReader::Budget;

// An array reserves at most this many elements up front; the rest grow as elements arrive.
constexpr std::size_t kInitialElements = 256;

// Charges `bytes` to the reply being read; false (and the reply is refused) past the limit.
bool charge(const redisReadTask* task, std::size_t bytes) {
  auto* budget = static_cast<Budget*>(task->privdata);
  if (bytes > budget->limit - std::min(budget->used, budget->limit)) {
    budget->exceeded = true;
    return false;
  }
  budget->used += bytes;
  return true;
}

// hiredis builds a reply tree through these callbacks. The root is the reader's own
// (Budget::root, one reply at a time, reused: no allocation per reply); children are appended to
// their parent's `elements` in order (hiredis fills an array's elements one after the other,
// finishing a nested array before its next sibling), so the only pointer hiredis keeps into a
// vector that may grow is to an array whose own elements are complete. A new Reply (Nil) is made
// in place, then filled: no temporary to move.
Reply* place(const redisReadTask* task) {
  if (task->parent != nullptr) {
    auto* parent = static_cast<Reply*>(task->parent->obj);
    if (static_cast<std::size_t>(task->idx) != parent->elements.size()) return nullptr;
    return &parent->elements.emplace_back();
  }
  Reply& root = static_cast<Budget*>(task->privdata)->root;
  root = Reply();  // what a reply abandoned half-read (an error) left goes now
  return &root;
}

// place(), then `fill` the new Reply.
template <class Fill>
Reply* place_filled(const redisReadTask* task, Fill&& fill) {
  Reply* r = place(task);
  if (r == nullptr) return nullptr;
  fill(*r);
  return r;
}

ReplyType type_of(int hiredis_type) {
  switch (hiredis_type) {
    case REDIS_REPLY_ERROR:
      return ReplyType::Error;
    case REDIS_REPLY_STATUS:
      return ReplyType::Status;
    default:
      return ReplyType::String;
  }
}

// Each callback returns nullptr to refuse (hiredis then reports an error): for over-budget
// replies, and for anything C++ throws (no exception may cross hiredis's C frames).
template <class Build>
void* guarded(Build&& build) noexcept {
  try {
    return build();
  } catch (...) {
    return nullptr;
  }
}

// ---- Streaming to a ReplySink: the root array is a Reply marked `streamed`, its elements are
// events. hiredis needs an object for each element (a parent's, to attach children to; any
// other, non-null to go on): they all get this one, never freed (hiredis frees only the root).
char streamed_element;

ReplySink* sink_of(const redisReadTask* task) {
  return task->parent == nullptr ? nullptr : static_cast<Budget*>(task->privdata)->active;
}

// Where `task` sits: {depth (1: in the root array), index, its array's own index}.
struct Place {
  int depth = 0;
  std::size_t index = 0, parent_index = 0;
};
Place place_of(const redisReadTask* task) {
  Place at{1, static_cast<std::size_t>(task->idx), 0};
  const redisReadTask* parent = task->parent;
  if (parent->parent != nullptr) at.parent_index = static_cast<std::size_t>(parent->idx);
  for (; parent->parent != nullptr; parent = parent->parent) ++at.depth;
  return at;
}

template <class Emit>
void* stream(const redisReadTask* task, ReplySink* sink, Emit&& emit) {
  const Place at = place_of(task);
  emit(*sink, at);
  return &streamed_element;
}

void* create_string(const redisReadTask* task, char* data, size_t size) {
  return guarded([&]() -> void* {
    if (!charge(task, sizeof(Reply) + size)) return nullptr;
    if (ReplySink* sink = sink_of(task)) {
      return stream(task, sink, [&](ReplySink& s, const Place& at) {
        s.text(at.depth, at.index, at.parent_index, type_of(task->type), {data, size});
      });
    }
    return place_filled(task, [&](Reply& r) {
      r.type = type_of(task->type);
      r.str.assign(data, size);
    });
  });
}

void* create_array(const redisReadTask* task, int elements) {
  return guarded([&]() -> void* {
    if (elements < 0) return nullptr;
    const auto count = static_cast<std::size_t>(elements);
    // Refuse at once an array whose elements could never fit; charge them as they come.
    auto* budget = static_cast<Budget*>(task->privdata);
    if (count > budget->limit / sizeof(Reply)) {
      budget->exceeded = true;
      return nullptr;
    }
    if (!charge(task, sizeof(Reply))) return nullptr;
    if (ReplySink* sink = sink_of(task)) {
      return stream(task, sink, [&](ReplySink& s, const Place& at) {
        s.array(at.depth, at.index, at.parent_index, count);
      });
    }
    if (task->parent == nullptr && budget->sink != nullptr) {  // the root of a streamed reply
      budget->active = budget->sink;
      budget->active->begin(count);
      return place_filled(task, [&](Reply& r) {
        r.type = ReplyType::Array;
        r.streamed = true;
      });
    }
    // Every element takes at least 3 bytes on the wire: an array whose bytes are buffered
    // already gets its full size at once (no growth, no moves); memory still follows the bytes.
    const std::size_t buffered =
        budget->reader == nullptr ? 0 : (budget->reader->len - budget->reader->pos) / 3;
    return place_filled(task, [&](Reply& r) {
      r.type = ReplyType::Array;
      r.elements.reserve(std::min(count, std::max(kInitialElements, buffered)));
    });
  });
}

void* create_integer(const redisReadTask* task, long long value) {
  return guarded([&]() -> void* {
    if (!charge(task, sizeof(Reply))) return nullptr;
    if (ReplySink* sink = sink_of(task)) {
      return stream(task, sink, [&](ReplySink& s, const Place& at) {
        s.integer(at.depth, at.index, at.parent_index, value);
      });
    }
    return place_filled(task, [&](Reply& r) {
      r.type = ReplyType::Integer;
      r.integer = value;
    });
  });
}

void* create_nil(const redisReadTask* task) {
  return guarded([&]() -> void* {
    if (!charge(task, sizeof(Reply))) return nullptr;
    if (ReplySink* sink = sink_of(task)) {
      return stream(task, sink, [](ReplySink& s, const Place& at) {
        s.nil(at.depth, at.index, at.parent_index);
      });
    }
    return place(task);
  });
}

// The root is the reader's (Budget::root): the next reply's place() clears it, and it goes with
// the reader. Nothing to free here.
void free_object(void*) {}

const redisReplyObjectFunctions kReplyFunctions = {create_string, create_array, create_integer,
                                                   create_nil, free_object};

}  // namespace

void encode_command(const std::vector<std::string_view>& argv, std::string& out) {
  // The RESP that hiredis's redisFormatCommandArgv writes, byte for byte, without its
  // sprintf per argument and its malloc'd copy (about 10x fewer instructions per command).
  std::size_t size = 1 + 20 + 2;
  for (auto arg : argv) size += 1 + 20 + 2 + arg.size() + 2;
  const std::size_t start = out.size();
  out.resize(start + size);
  char* at = out.data() + start;
  auto header = [&at](char kind, std::size_t value) {
    *at++ = kind;
    at = std::to_chars(at, at + 20, value).ptr;
    *at++ = '\r';
    *at++ = '\n';
  };
  header('*', argv.size());
  for (auto arg : argv) {
    header('$', arg.size());
    if (!arg.empty()) std::memcpy(at, arg.data(), arg.size());
    at += arg.size();
    *at++ = '\r';
    *at++ = '\n';
  }
  out.resize(static_cast<std::size_t>(at - out.data()));
}

void ReplyReader::Free::operator()(redisReader* reader) const { redisReaderFree(reader); }

ReplyReader::ReplyReader(std::size_t max_reply_bytes) : budget_(std::make_unique<Budget>()) {
  budget_->limit = std::max<std::size_t>(max_reply_bytes, 1);
  reset();
}

ReplyReader::~ReplyReader() = default;

void ReplyReader::fail() {
  std::string message = budget_->exceeded
                            ? "Protocol error: a reply larger than max_reply_bytes (" +
                                  std::to_string(budget_->limit) + " bytes)"
                            : std::string("Protocol error: ") + reader_->errstr;
  reset();  // a reader in error state accepts nothing more
  throw ProtocolError(message);
}

void ReplyReader::feed(const char* data, std::size_t size) {
  if (redisReaderFeed(reader_.get(), data, size) != REDIS_OK) fail();
  fed_ += size;
}

std::optional<Reply> ReplyReader::next(ReplySink* sink) {
  void* raw = nullptr;
  budget_->sink = sink;
  if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) fail();
  if (raw == nullptr) {
    // Every complete reply is taken: what stays buffered belongs to the unfinished one (a bulk
    // string is only handed over whole), so a reply announced larger than the limit stops here,
    // at most one read past it; a bulk string announced larger than what the reply has left
    // stops at its header, before its bytes are buffered.
    if (reader_->len - reader_->pos > budget_->limit || bulk_announced_too_large()) {
      budget_->exceeded = true;
      fail();
    }
    return std::nullopt;
  }
  Reply* root = static_cast<Reply*>(raw);  // &budget_->root
  budget_->used = 0;                       // the next reply starts afresh
  budget_->active = nullptr;
  return std::move(*root);
}

bool ReplyReader::bulk_announced_too_large() const {
  // hiredis waits for a bulk string's bytes with its task typed REDIS_REPLY_STRING and `pos` at
  // the length that follows the '$' (it parses the header again once the bytes are in).
  if (reader_->ridx < 0 || reader_->rstack[reader_->ridx].type != REDIS_REPLY_STRING) return false;
  const char* begin = reader_->buf + reader_->pos;
  const char* end = reader_->buf + reader_->len;
  const char* newline = std::find(begin, end, '\r');
  if (newline == end) return false;  // the header is not complete yet (a line is bounded above)
  unsigned long long announced = 0;
  const auto parsed = std::from_chars(begin, newline, announced);
  if (parsed.ptr != newline) {
    // Not a plain count: "-1" (nil), or a malformed header hiredis refuses; or a count too large
    // for 64 bits, which no budget holds.
    return parsed.ec == std::errc::result_out_of_range;
  }
  const std::size_t left = budget_->limit - std::min(budget_->used, budget_->limit);
  return announced > left || sizeof(Reply) + announced > left;
}

bool ReplyReader::has_partial() const {
  // Unconsumed bytes, or a reply hiredis has started to parse (its type byte read, an array
  // still waiting for elements).
  // (hiredis sets up rstack[0] with type -1 before it reads a type byte.)
  const bool started = reader_->ridx > 0 || (reader_->ridx == 0 && reader_->rstack[0].type >= 0);
  return reader_->pos < reader_->len || started || reader_->reply != nullptr;
}

std::size_t ReplyReader::consumed() const { return fed_ - (reader_->len - reader_->pos); }

void ReplyReader::reset() {
  reader_.reset(
      redisReaderCreateWithFunctions(const_cast<redisReplyObjectFunctions*>(&kReplyFunctions)));
  if (!reader_) throw std::bad_alloc();
  reader_->privdata = budget_.get();
  budget_->reader = reader_.get();
  budget_->used = 0;
  budget_->exceeded = false;
  budget_->active = nullptr;
  fed_ = 0;
}

namespace {
void replay_elements(const Reply& array, ReplySink& sink, int depth, std::size_t parent_index) {
  for (std::size_t i = 0; i < array.elements.size(); ++i) {
    const Reply& element = array.elements[i];
    switch (element.type) {
      case ReplyType::Array:
        sink.array(depth, i, parent_index, element.elements.size());
        replay_elements(element, sink, depth + 1, i);
        break;
      case ReplyType::Integer:
        sink.integer(depth, i, parent_index, element.integer);
        break;
      case ReplyType::Nil:
        sink.nil(depth, i, parent_index);
        break;
      default:
        sink.text(depth, i, parent_index, element.type, element.str);
    }
  }
}
}  // namespace

void replay(const Reply& array, ReplySink& sink) {
  sink.begin(array.elements.size());
  replay_elements(array, sink, 1, 0);
}

std::vector<Reply> decode_all(std::string_view data, std::size_t max_reply_bytes,
                              const std::function<ReplySink*(std::size_t)>& sink_of) {
  ReplyReader reader(max_reply_bytes);
  reader.feed(data.data(), data.size());
  std::vector<Reply> replies;
  auto sink = [&] { return sink_of ? sink_of(replies.size()) : nullptr; };
  while (auto reply = reader.next(sink())) replies.push_back(std::move(*reply));
  if (reader.has_partial()) throw ProtocolError("Protocol error: incomplete reply");
  return replies;
}

}  // namespace rlb::codec
