// The RESP codec: ReplyReader fed arbitrary bytes in arbitrary chunks, with and without a sink,
// under a small or the default reply budget; and encode_command's output decoded back.
//
// Input: byte 0 picks the budget and the sink, byte 1 the chunk size; the rest is the wire.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "codec/resp.hpp"
#include "common.hpp"

namespace {

using rlb::codec::Reply;
using rlb::codec::ReplyReader;
using rlb::codec::ReplySink;
using rlb::codec::ReplyType;

// Checks the events a sink gets are well formed: depths never jump, indexes count up.
class CheckingSink final : public ReplySink {
 public:
  void begin(std::size_t count) override {
    (void)count;
    last_depth_ = 0;
  }
  void array(int depth, std::size_t index, std::size_t parent, std::size_t count) override {
    check(depth, index, parent);
    (void)count;
  }
  void text(int depth, std::size_t index, std::size_t parent, ReplyType,
            std::string_view value) override {
    check(depth, index, parent);
    volatile char sum = 0;
    for (char c : value) sum = static_cast<char>(sum + c);  // the view must be readable
  }
  void integer(int depth, std::size_t index, std::size_t parent, long long) override {
    check(depth, index, parent);
  }
  void nil(int depth, std::size_t index, std::size_t parent) override {
    check(depth, index, parent);
  }

 private:
  void check(int depth, std::size_t, std::size_t) {
    if (depth < 1 || depth > last_depth_ + 1) __builtin_trap();
    last_depth_ = depth;
  }
  int last_depth_ = 0;
};

std::size_t tree_size(const Reply& reply, int depth = 0) {
  if (depth > 16) __builtin_trap();  // hiredis nests at most 7 deep
  std::size_t n = 1 + reply.str.size();
  for (const auto& element : reply.elements) n += tree_size(element, depth + 1);
  return n;
}

void read_wire(const std::string& wire, std::size_t limit, bool streamed, std::size_t chunk) {
  ReplyReader reader(limit);
  CheckingSink sink;
  rlb::fuzz::expect_only_project_errors([&] {
    for (std::size_t at = 0; at < wire.size(); at += chunk) {
      const std::size_t n = std::min(chunk, wire.size() - at);
      reader.feed(wire.data() + at, n);
      while (auto reply = reader.next(streamed ? &sink : nullptr)) {
        if (tree_size(*reply) > wire.size() + 1) __builtin_trap();  // memory follows the bytes
        if (streamed && reply->is_array() && !reply->streamed) __builtin_trap();
      }
    }
    (void)reader.has_partial();
  });
  reader.reset();
  (void)reader.has_partial();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  const std::uint8_t mode = input.ConsumeIntegral<std::uint8_t>();
  const std::size_t chunk = 1 + input.ConsumeIntegral<std::uint8_t>() % 64;
  const std::string wire = input.ConsumeRemainingBytesAsString();
  const std::size_t limit = (mode & 1) ? rlb::codec::kDefaultMaxReplyBytes : 64 + (mode >> 2) * 8;
  read_wire(wire, limit, (mode & 2) != 0, (mode & 0x80) ? wire.size() + 1 : chunk);

  rlb::fuzz::expect_only_project_errors([&] { (void)rlb::codec::decode_all(wire, limit); });

  // encode_command: any arguments (the wire cut at NUL bytes) decode back to themselves.
  std::vector<std::string_view> argv;
  std::string_view rest(wire);
  while (!rest.empty() && argv.size() < 64) {
    const auto cut = rest.find('\0');
    argv.push_back(rest.substr(0, cut));
    rest = cut == std::string_view::npos ? std::string_view() : rest.substr(cut + 1);
  }
  std::string encoded;
  rlb::codec::encode_command(argv, encoded);
  const auto decoded = rlb::codec::decode_all(encoded);
  if (decoded.size() != 1 || decoded[0].elements.size() != argv.size()) __builtin_trap();
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (decoded[0].elements[i].str != argv[i]) __builtin_trap();
  }
  return 0;
}
