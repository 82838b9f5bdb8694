// A decoded RESP2 reply.
#pragma once

#include <string>
#include <vector>

namespace rlb::codec {

enum class ReplyType { String, Status, Error, Integer, Nil, Array };

struct Reply {
  ReplyType type = ReplyType::Nil;
  std::string str;  // String, Status and Error
  long long integer = 0;
  std::vector<Reply> elements;  // Array

  bool is_nil() const { return type == ReplyType::Nil; }
  bool is_error() const { return type == ReplyType::Error; }
  bool is_array() const { return type == ReplyType::Array; }
};

}  // namespace rlb::codec
