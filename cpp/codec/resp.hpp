// RESP2 encoding and decoding on hiredis's formatter and reader. No I/O here.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codec/reply.hpp"
#include "errors.hpp"

struct redisReader;

namespace rlb::codec {

// Arrays longer than this are refused: Debian's hiredis 0.14.1 allocates them unchecked
// (CVE-2021-32765), and no leaderboard reply comes near it.
inline constexpr long long kMaxArrayElements = 1LL << 28;

// Malformed bytes from the server: the connection cannot be trusted any more.
struct ProtocolError : ConnectionError {
  using ConnectionError::ConnectionError;
};

// Appends the RESP encoding of one command (binary-safe arguments) to `out`.
void encode_command(const std::vector<std::string_view>& argv, std::string& out);

// Incremental decoder: feed bytes as they arrive, take complete replies out.
class ReplyReader {
 public:
  ReplyReader();
  ~ReplyReader();
  ReplyReader(const ReplyReader&) = delete;
  ReplyReader& operator=(const ReplyReader&) = delete;

  void feed(const char* data, std::size_t size);
  // The next complete reply, or nothing if more bytes are needed. Throws ProtocolError.
  std::optional<Reply> next();
  // True while bytes of an unfinished reply are buffered.
  bool has_partial() const;
  // Drops buffered bytes and any half-read reply (after a connection is replaced).
  void reset();

 private:
  struct Free {
    void operator()(redisReader* reader) const;
  };
  std::unique_ptr<redisReader, Free> reader_;
};

// Decodes every complete reply in `data`; throws ProtocolError on malformed or partial input.
std::vector<Reply> decode_all(std::string_view data);

}  // namespace rlb::codec
