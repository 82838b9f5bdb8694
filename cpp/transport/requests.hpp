// What every transport does with an operation's commands: encode them (scripts by SHA, by body
// after a NOSCRIPT reply) and turn error replies into exceptions.
#pragma once

#include <string>
#include <vector>

#include "codec/reply.hpp"
#include "leaderboard/operations.hpp"

namespace rlb::transport {

using codec::Reply;
using leaderboard::Command;

// Appends the RESP of `command`: EVALSHA for scripts, EVAL with the body if with_body.
void encode(const Command& command, bool with_body, std::string& out);

// The server does not have the script cached (after a restart or SCRIPT FLUSH); it did not run.
bool is_noscript(const Reply& reply);

// Throws the exception for an error reply: AuthenticationError for NOAUTH/WRONGPASS, else
// ResponseError with the server's message.
[[noreturn]] void raise_error_reply(const Reply& reply);

}  // namespace rlb::transport
