// What the connection core does with an operation: encode its commands (scripts by SHA, by body
// after a NOSCRIPT reply), raise error replies, and feed the replies back, step after step.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "codec/reply.hpp"
#include "connection/options.hpp"
#include "leaderboard/operations.hpp"

namespace rlb::connection {

using codec::Reply;
using leaderboard::Command;

// Appends the RESP of `command`: EVALSHA for scripts, EVAL with the body if with_body.
void encode(const Command& command, bool with_body, std::string& out);

// The server does not have the script cached (after a restart or SCRIPT FLUSH); it did not run.
bool is_noscript(const Reply& reply);

// Throws the exception for an error reply (errors.hpp's table: AuthenticationError for
// NOAUTH/WRONGPASS, BusyLoadingError for LOADING, ..., else ResponseError).
[[noreturn]] void raise_error_reply(const Reply& reply);

// AUTH, SELECT and CLIENT SETNAME for a new connection, pipelined in one round trip.
struct Handshake {
  std::string wire;  // empty when the defaults need nothing
  std::size_t expected = 0;
  bool authenticates = false;
};
Handshake handshake_for(const ClientOptions& options);
// Throws AuthenticationError if AUTH failed, else the first error reply's exception.
void check_handshake(const Handshake& handshake, const std::vector<Reply>& replies);

// Runs one operation, which it owns, to its end. Its owner sends wire() and hands back exactly
// expected() replies to on_replies(), until finished().
class Exchange {
 public:
  explicit Exchange(std::unique_ptr<leaderboard::Operation> operation);

  const std::string& wire() const { return wire_; }
  std::string take_wire() { return std::move(wire_); }
  std::size_t expected() const { return expected_; }
  bool finished() const { return finished_; }
  const char* name() const { return operation_->name(); }

  // Takes the replies to wire(). Throws for an error reply; the operation is then abandoned.
  void on_replies(std::vector<Reply>&& replies);
  // Issue 17: how many times the current step may be sent again after its reply was lost (the
  // operation's resend_limit()), and the seconds the server may hold its reply on purpose.
  int resend_limit() const { return operation_->resend_limit(); }
  double server_wait() const { return operation_->server_wait(); }
  // Encodes the current step again, whole (for a new connection), forgetting partial replies.
  void rewind();
  leaderboard::Result take_result() { return operation_->take_result(); }

 private:
  void next_step();

  std::unique_ptr<leaderboard::Operation> operation_;
  std::vector<Command> commands_;    // of the current step
  std::vector<Reply> replies_;       // of the current step
  std::vector<std::size_t> resent_;  // commands re-sent with their script body
  std::string wire_;
  std::size_t expected_ = 0;
  bool finished_ = false;
};

}  // namespace rlb::connection
