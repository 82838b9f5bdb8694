// What the connection core does with an operation: encode its commands (scripts by SHA, by body
// after a NOSCRIPT reply), raise error replies, and feed the replies back, step after step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
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

// MOVED, ASK, TRYAGAIN or CLUSTERDOWN, or a script that touched a key its node no longer holds
// (a slot migration under way; scripts check what they touch before their first write): a
// cluster node did not run the command, which may be sent again where the reply says.
bool is_cluster_redirect(const Reply& reply);

// Throws the exception for an error reply (errors.hpp's table: AuthenticationError for
// NOAUTH/WRONGPASS, BusyLoadingError for LOADING, ..., else ResponseError).
[[noreturn]] void raise_error_reply(const Reply& reply);

// AUTH, HELLO 2, SELECT, CLIENT SETNAME and READONLY (a cluster replica for reads) for a new
// connection, pipelined in one round trip; with durability.aof, a WAITAOF 0 0 0 (it returns at
// once) that proves the server has WAITAOF before any write is sent. HELLO 2 keeps RESP2 and
// names the server and its version: one older than the scripts need is refused before any
// request is sent (kMinimumVersions).
struct Handshake {
  std::string wire;
  std::size_t expected = 0;
  bool authenticates = false;
  std::size_t hello = SIZE_MAX;    // the index of HELLO's reply
  std::size_t waitaof = SIZE_MAX;  // the index of the WAITAOF probe's reply, if sent
  std::string address;             // the server's, for messages
};
Handshake handshake_for(const ClientOptions& options);
// Throws AuthenticationError if AUTH failed, UnsupportedServerError if the server is older than
// the minimum (check_server_version), else the first error reply's exception.
void check_handshake(const Handshake& handshake, const std::vector<Reply>& replies);

// The oldest server of each kind the scripts run on (script flags, `#!lua`: Redis 7.0; Valkey
// began at 7.2), by HELLO's "server" field; any other name is held to Redis's.
struct MinimumVersion {
  std::string_view server;
  std::string_view display;
  int major, minor;
};
inline constexpr MinimumVersion kMinimumVersions[] = {{"redis", "Redis", 7, 0},
                                                      {"valkey", "Valkey", 7, 2}};
// Throws UnsupportedServerError (a ConnectionError) naming the server's version and the minimum
// if HELLO's reply (a flat array of field, value in RESP2) names a server older than its kind's
// minimum. An error reply (an ACL without HELLO, a proxy that does not know it), a reply without
// a version or a sentinel's (it runs no scripts) checks nothing: the server's own errors still
// say what it lacks.
void check_server_version(const Reply& hello, const std::string& address);

// The scripts a connection loaded (sent with their body after NOSCRIPT), to tell a first load
// from a reload (Exchange::on_replies).
struct ScriptLoads {
  // Each script, and the write that sent its body (kPending until that body's reply came): a
  // NOSCRIPT for a request written after it means the server's cache was emptied since; one
  // written before (pipelined with the first EVALSHAs, or behind them) is the same first load.
  std::vector<std::pair<const leaderboard::Script*, std::uint64_t>> loaded;
  static constexpr std::uint64_t kPending = UINT64_MAX;
  std::uint64_t writes = 0;  // the connection's writes so far
};

// Runs one operation, which it owns, to its end. Its owner sends wire() and hands back exactly
// expected() replies to on_replies(), until finished().
//
// Durable acknowledgements (`durability` enabled): a step that writes (not is_read()) carries
// WAIT <min_replicas> <ms> (or WAITAOF 0 <min_replicas> <ms>) on its wire after its commands
// (not among commands(): the cluster client routes by those, and the WAIT goes to the same node
// on the same connection, so it counts that connection's writes). Its reply is taken off before
// the operation sees the step's replies; fewer replicas than required raise NotReplicatedError
// (the step was applied on the primary; the operation is abandoned, nothing more is sent).
class Exchange {
 public:
  explicit Exchange(std::unique_ptr<leaderboard::Operation> operation,
                    const Durability& durability = Durability{});

  const std::string& wire() const { return wire_; }
  std::string take_wire() { return std::move(wire_); }
  std::size_t expected() const { return expected_; }
  bool finished() const { return finished_; }
  const char* name() const { return operation_->name(); }
  // The current step's commands (the cluster client routes by their keys).
  const std::vector<Command>& commands() const { return commands_; }

  // Takes the replies to wire(). Throws for an error reply; the operation is then abandoned,
  // unless the reply was a cluster redirect (ClusterRedirectError): then restart_step() makes
  // the step ready to be sent again, to another node. `loads`: the connection's record of the
  // scripts it loaded, and `written_at` the connection's write that sent this step: a NOSCRIPT
  // for a script loaded before that write means the server's script cache was emptied (SCRIPT
  // FLUSH), which is observed (connection/observer.hpp: script_reload), where a script's first
  // load on a connection (every request sent before it was loaded) is not. nullptr: every
  // NOSCRIPT is observed.
  void on_replies(std::vector<Reply>&& replies, ScriptLoads* loads = nullptr,
                  std::uint64_t written_at = 0);
  // Where reply `index` (of those on_replies() takes next) may stream as it is decoded
  // (Operation::reply_sink); nullptr: as a tree.
  codec::ReplySink* reply_sink(std::size_t index);
  // Guards: how many times the current step may be sent again after its reply was lost (the
  // operation's resend_limit()), and the seconds the server may hold its reply on purpose.
  int resend_limit() const { return operation_->resend_limit(); }
  double server_wait() const {
    return operation_->server_wait() + (waits_ ? durability_.timeout : 0.0);
  }
  // The current step carries a WAIT (durable acknowledgements, above).
  bool waits() const { return waits_; }
  // The current step's scripts are to be sent again with their body (the server answered
  // NOSCRIPT): the same step of the same call, not a new one.
  bool resending_scripts() const { return !resent_.empty(); }
  // The current step writes nothing (scripts flagged no-writes, read commands, XREAD) or only
  // what sending it again leaves as it is (a rolling window's refresh before its read): after a
  // lost reply it may be sent once more, within its deadline.
  bool is_read() const;
  // Encodes the current step again, whole (for a new connection), forgetting partial replies.
  void rewind();
  // After a cluster redirect: the current step's commands, to be sent again (true; `asking`:
  // after an ASK, preceded by ASKING, scripts by their body, as the node asked may not have them
  // cached), or the first step of what the operation runs instead (false: routed anew, without
  // ASKING; Operation::instead_after_redirect).
  bool restart_step(bool asking);
  leaderboard::Result take_result() { return operation_->take_result(); }

 private:
  void next_step();
  // Appends the step's WAIT to wire_ if it carries one (one more reply expected).
  void append_wait() {
    if (waits_) append_wait_command();
  }
  void append_wait_command();
  // The WAIT's reply: throws NotReplicatedError if fewer replicas than required confirmed.
  void check_wait(const Reply& reply) const;

  std::unique_ptr<leaderboard::Operation> operation_;
  const Durability durability_;
  bool waits_ = false;               // the current step writes and durability_ is enabled
  std::vector<Command> commands_;    // of the current step
  std::vector<Reply> replies_;       // of the current step
  std::vector<std::size_t> resent_;  // commands re-sent with their script body
  std::string wire_;
  std::size_t expected_ = 0;
  bool finished_ = false;
  bool asking_ = false;  // the first reply answers ASKING
};

}  // namespace rlb::connection
