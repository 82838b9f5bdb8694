#include "codec/resp.hpp"

#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include "errors.hpp"

namespace rlb::codec {
namespace {

// hiredis builds a reply tree through these callbacks. The root is heap-allocated; children
// live inside their parent's `elements`, which is sized once when the array header is read,
// so their addresses stay stable. hiredis only ever frees the root.
Reply* place(const redisReadTask* task, Reply&& value) {
  if (task->parent != nullptr) {
    auto* parent = static_cast<Reply*>(task->parent->obj);
    Reply& slot = parent->elements[static_cast<std::size_t>(task->idx)];
    slot = std::move(value);
    return &slot;
  }
  return new (std::nothrow) Reply(std::move(value));
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

void* create_string(const redisReadTask* task, char* data, size_t size) {
  Reply r;
  r.type = type_of(task->type);
  r.str.assign(data, size);
  return place(task, std::move(r));
}

void* create_array(const redisReadTask* task, int elements) {
  if (elements < 0 || elements > kMaxArrayElements) return nullptr;  // reader reports OOM
  Reply r;
  r.type = ReplyType::Array;
  r.elements.resize(static_cast<std::size_t>(elements));
  return place(task, std::move(r));
}

void* create_integer(const redisReadTask* task, long long value) {
  Reply r;
  r.type = ReplyType::Integer;
  r.integer = value;
  return place(task, std::move(r));
}

void* create_nil(const redisReadTask* task) { return place(task, Reply{}); }

void free_object(void* root) { delete static_cast<Reply*>(root); }

const redisReplyObjectFunctions kReplyFunctions = {create_string, create_array, create_integer,
                                                   create_nil, free_object};

}  // namespace

void encode_command(const std::vector<std::string_view>& argv, std::string& out) {
  std::vector<const char*> pointers;
  std::vector<size_t> lengths;
  pointers.reserve(argv.size());
  lengths.reserve(argv.size());
  for (auto arg : argv) {
    pointers.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  char* command = nullptr;
  int size = redisFormatCommandArgv(&command, static_cast<int>(argv.size()), pointers.data(),
                                    lengths.data());
  if (size < 0 || command == nullptr) throw std::bad_alloc();
  std::unique_ptr<char, decltype(&redisFreeCommand)> owned(command, &redisFreeCommand);
  out.append(command, static_cast<std::size_t>(size));
}

void ReplyReader::Free::operator()(redisReader* reader) const { redisReaderFree(reader); }

ReplyReader::ReplyReader()
    : reader_(redisReaderCreateWithFunctions(
          const_cast<redisReplyObjectFunctions*>(&kReplyFunctions))) {
  if (!reader_) throw std::bad_alloc();
}

ReplyReader::~ReplyReader() = default;

void ReplyReader::feed(const char* data, std::size_t size) {
  if (redisReaderFeed(reader_.get(), data, size) != REDIS_OK) {
    throw ProtocolError(std::string("Protocol error: ") + reader_->errstr);
  }
}

std::optional<Reply> ReplyReader::next() {
  void* raw = nullptr;
  if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) {
    std::string message = std::string("Protocol error: ") + reader_->errstr;
    reset();  // a reader in error state accepts nothing more
    throw ProtocolError(message);
  }
  if (raw == nullptr) return std::nullopt;
  std::unique_ptr<Reply> root(static_cast<Reply*>(raw));
  return std::move(*root);
}

bool ReplyReader::has_partial() const {
  // Unconsumed bytes, or the root of an array still waiting for elements.
  return reader_->pos < reader_->len || reader_->reply != nullptr;
}

void ReplyReader::reset() {
  reader_.reset(
      redisReaderCreateWithFunctions(const_cast<redisReplyObjectFunctions*>(&kReplyFunctions)));
  if (!reader_) throw std::bad_alloc();
}

std::vector<Reply> decode_all(std::string_view data) {
  ReplyReader reader;
  reader.feed(data.data(), data.size());
  std::vector<Reply> replies;
  while (auto reply = reader.next()) replies.push_back(std::move(*reply));
  if (reader.has_partial()) throw ProtocolError("Protocol error: incomplete reply");
  return replies;
}

}  // namespace rlb::codec
