#include "transport/requests.hpp"

#include <string_view>

#include "codec/resp.hpp"
#include "errors.hpp"

namespace rlb::transport {

void encode(const Command& command, bool with_body, std::string& out) {
  std::vector<std::string_view> argv;
  argv.reserve(command.argv.size() + 2);
  if (command.script != nullptr) {
    argv.push_back(with_body ? "EVAL" : "EVALSHA");
    argv.push_back(with_body ? command.script->body : command.script->sha1);
  }
  for (const auto& arg : command.argv) argv.push_back(arg);
  codec::encode_command(argv, out);
}

bool is_noscript(const Reply& reply) {
  return reply.is_error() && reply.str.compare(0, 8, "NOSCRIPT") == 0;
}

void raise_error_reply(const Reply& reply) {
  const std::string& message = reply.str;
  if (message.compare(0, 6, "NOAUTH") == 0 || message.compare(0, 9, "WRONGPASS") == 0) {
    throw AuthenticationError(message);
  }
  throw ResponseError(message);
}

}  // namespace rlb::transport
