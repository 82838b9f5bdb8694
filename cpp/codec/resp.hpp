// RESP2 encoding (written here, byte for byte what hiredis's formatter writes, without its sprintf
// per argument) and decoding on hiredis's reader. No I/O here.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codec/reply.hpp"
#include "errors.hpp"

struct redisReader;

namespace rlb::codec {

// The most memory one reply may take, decoded (each element counts its Reply and its string)
// and buffered: a hostile or broken server cannot make the client allocate more. 512 MiB holds
// get_top of a million entries with metadata; list_all pages are 5,000 entries.
inline constexpr std::size_t kDefaultMaxReplyBytes = std::size_t{512} << 20;

// Malformed bytes from the server: the connection cannot be trusted any more.
struct ProtocolError : ConnectionError {
  using ConnectionError::ConnectionError;
};

// Appends the RESP encoding of one command (binary-safe arguments) to `out`.
void encode_command(const std::vector<std::string_view>& argv, std::string& out);

// Incremental decoder: feed bytes as they arrive, take complete replies out. Memory follows the
// bytes that arrived, never what a header announces (an array's elements are allocated as they
// are read; Debian's hiredis 0.14.1 would allocate an announced array at once, CVE-2021-32765),
// and one reply may not take more than max_reply_bytes. Nesting is limited by hiredis (7 levels).
class ReplyReader {
 public:
  explicit ReplyReader(std::size_t max_reply_bytes = kDefaultMaxReplyBytes);
  ~ReplyReader();
  ReplyReader(const ReplyReader&) = delete;
  ReplyReader& operator=(const ReplyReader&) = delete;

  // Throws ProtocolError if the unfinished reply would exceed max_reply_bytes.
  void feed(const char* data, std::size_t size);
  // The next complete reply, or nothing if more bytes are needed. Throws ProtocolError (the
  // reader is then reset: the connection must be dropped). With a `sink`, an array reply's
  // elements go to it as they are decoded and the reply returned is an empty array marked
  // `streamed`; other replies (errors, statuses...) come whole. A reply that spans several calls
  // keeps the sink it started with.
  std::optional<Reply> next(ReplySink* sink = nullptr);
  // True while bytes of an unfinished reply are buffered.
  bool has_partial() const;
  // Drops buffered bytes and any half-read reply (after a connection is replaced).
  void reset();
  // Bytes of the replies taken so far (since the last reset): the difference between two
  // calls made right after next() returned replies is what those replies took on the wire.
  std::size_t consumed() const;

  // What the reply being read has taken so far (hiredis's callbacks charge it).
  struct Budget {
    std::size_t limit = 0;
    std::size_t used = 0;
    bool exceeded = false;
    const redisReader* reader = nullptr;  // what is buffered bounds what an array reserves
    ReplySink* sink = nullptr;            // offered for the next reply
    ReplySink* active = nullptr;          // the reply being read streams to it
    // The root of the reply being read: hiredis keeps its address until the reply is whole,
    // then next() moves it out. Here, not on the heap: no allocation per reply.
    Reply root;
  };

 private:
  struct Free {
    void operator()(redisReader* reader) const;
  };
  [[noreturn]] void fail();
  // The bulk string being waited for announces more bytes than the reply has left to take.
  bool bulk_announced_too_large() const;

  std::unique_ptr<Budget> budget_;  // hiredis keeps its address: heap, stable across moves
  std::size_t fed_ = 0;             // bytes fed since the last reset
  std::unique_ptr<redisReader, Free> reader_;
};

// Decodes every complete reply in `data`; throws ProtocolError on malformed or partial input.
// With `sink_of`, reply i streams to sink_of(i) where that is not nullptr (ReplyReader::next).
std::vector<Reply> decode_all(std::string_view data,
                              std::size_t max_reply_bytes = kDefaultMaxReplyBytes,
                              const std::function<ReplySink*(std::size_t)>& sink_of = nullptr);

}  // namespace rlb::codec
