// A decoded RESP2 reply.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace rlb::codec {

enum class ReplyType { String, Status, Error, Integer, Nil, Array };

struct Reply {
  ReplyType type = ReplyType::Nil;
  std::string str;  // String, Status and Error
  long long integer = 0;
  std::vector<Reply> elements;  // Array
  // An array whose elements went to a ReplySink as they were decoded: `elements` stays empty.
  bool streamed = false;

  bool is_nil() const { return type == ReplyType::Nil; }
  bool is_error() const { return type == ReplyType::Error; }
  bool is_array() const { return type == ReplyType::Array; }
};

// Receives the elements of one array reply as they are decoded, instead of a Reply tree: a reader
// for one shape of reply (leaderboard/operations.cpp's rank windows) fills its result straight
// from the wire, without a node or a string per element that would then be copied again. Calls
// come in wire order. An element is at `depth` (1: an element of the root array) and at position
// `index` of its array; `parent_index` is that array's own position in its parent (0 at depth 1).
// A sink never throws for a reply it does not expect: it remembers, and its owner raises then.
class ReplySink {
 public:
  virtual ~ReplySink() = default;
  // A new reply: the root array's header (forget what an earlier reply left).
  virtual void begin(std::size_t count) = 0;
  virtual void array(int depth, std::size_t index, std::size_t parent_index, std::size_t count) = 0;
  // String, Status or Error (inside an array; a root error reply never reaches a sink).
  virtual void text(int depth, std::size_t index, std::size_t parent_index, ReplyType type,
                    std::string_view value) = 0;
  virtual void integer(int depth, std::size_t index, std::size_t parent_index, long long value) = 0;
  virtual void nil(int depth, std::size_t index, std::size_t parent_index) = 0;
};

// The events of an array reply's elements, from its tree (a reply that was not streamed).
void replay(const Reply& array, ReplySink& sink);

}  // namespace rlb::codec
