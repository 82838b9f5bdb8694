#include "connection/exchange.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string_view>

#include "codec/resp.hpp"
#include "connection/cluster.hpp"
#include "connection/observer.hpp"
#include "errors.hpp"

namespace rlb::connection {

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

bool is_cluster_redirect(const Reply& reply) {
  return reply.is_error() && is_cluster_redirect_error(reply.str);
}

void raise_error_reply(const Reply& reply) { raise_server_error(reply.str); }

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// A read beyond cluster::read_only's: the event stream's reads, and a rolling window's refresh
// and check: a refresh changes the window only if it is behind its bucket, by one step of its
// transition, recorded with the step (a repeat does the next step, or finds it done).
bool also_read(const Command& command) {
  if (command.argv.empty()) return false;
  if (command.script == nullptr) {
    return iequals(command.argv[0], "XREAD") || iequals(command.argv[0], "XREVRANGE");
  }
  if (command.script != &leaderboard::scripts::rolling) return false;
  const auto keys = std::strtoull(command.argv[0].c_str(), nullptr, 10);
  return keys + 1 < command.argv.size() &&
         (command.argv[keys + 1] == "refresh" || command.argv[keys + 1] == "check");
}

}  // namespace

bool Exchange::is_read() const {
  if (commands_.empty()) return false;
  std::vector<Command> others;
  for (const auto& command : commands_) {
    if (!also_read(command)) others.push_back(command);
  }
  return others.empty() || cluster::read_only(others);
}

Handshake handshake_for(const ClientOptions& options) {
  Handshake handshake;
  auto add = [&](std::vector<std::string_view> argv) {
    codec::encode_command(argv, handshake.wire);
    ++handshake.expected;
  };
  if (options.password) {
    handshake.authenticates = true;
    if (options.username) {
      add({"AUTH", *options.username, *options.password});
    } else {
      add({"AUTH", *options.password});
    }
  }
  handshake.hello = handshake.expected;
  add({"HELLO", "2"});
  const std::string db = std::to_string(options.db);
  if (options.db != 0) add({"SELECT", db});
  if (options.client_name) add({"CLIENT", "SETNAME", *options.client_name});
  if (options.readonly) add({"READONLY"});
  if (options.durability.aof && options.durability.enabled() && !options.readonly) {
    handshake.waitaof = handshake.expected;
    add({"WAITAOF", "0", "0", "0"});
  }
  handshake.address = options.address();
  return handshake;
}

void check_server_version(const Reply& hello, const std::string& address) {
  if (!hello.is_array()) return;
  std::string server = "redis";
  const std::string* version = nullptr;
  for (std::size_t i = 0; i + 1 < hello.elements.size(); i += 2) {
    const Reply& field = hello.elements[i];
    const Reply& value = hello.elements[i + 1];
    if (field.type != codec::ReplyType::String || value.type != codec::ReplyType::String) continue;
    if (field.str == "server") server = value.str;
    if (field.str == "version") version = &value.str;
    if (field.str == "mode" && value.str == "sentinel") return;  // runs no scripts
  }
  if (version == nullptr) return;
  const MinimumVersion* minimum = &kMinimumVersions[0];
  for (const auto& kind : kMinimumVersions) {
    if (server == kind.server) minimum = &kind;
  }
  char* end = nullptr;
  const long major = std::strtol(version->c_str(), &end, 10);
  const long minor = *end == '.' ? std::strtol(end + 1, nullptr, 10) : 0;
  if (major > minimum->major || (major == minimum->major && minor >= minimum->minor)) return;
  throw UnsupportedServerError(
      std::string(minimum->display) + " " + *version + " at " + address +
      " is too old: redis_leaderboard needs " + std::string(minimum->display) + " " +
      std::to_string(minimum->major) + "." + std::to_string(minimum->minor) +
      "+ (its scripts declare flags, which older servers cannot read); "
      "nothing was sent");
}

void check_handshake(const Handshake& handshake, const std::vector<Reply>& replies) {
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (i == handshake.hello) {  // after AUTH's reply: a failed AUTH was raised first
      check_server_version(replies[i], handshake.address);
      continue;
    }
    if (!replies[i].is_error()) continue;
    if (i == 0 && handshake.authenticates) throw AuthenticationError(replies[i].str);
    if (i == handshake.waitaof) {
      throw ResponseError("wait_aof=True needs WAITAOF (Redis 7.2+, Valkey 7.2+), which " +
                          handshake.address + " refused: " + replies[i].str +
                          " (nothing was written)");
    }
    raise_error_reply(replies[i]);
  }
}

Exchange::Exchange(std::unique_ptr<leaderboard::Operation> operation, const Durability& durability)
    : operation_(std::move(operation)), durability_(durability) {
  next_step();
}

void Exchange::append_wait_command() {
  const std::string replicas = std::to_string(durability_.min_replicas);
  const std::string ms = std::to_string(durability_.timeout_ms());
  if (durability_.aof) {
    codec::encode_command(std::vector<std::string_view>{"WAITAOF", "0", replicas, ms}, wire_);
  } else {
    codec::encode_command(std::vector<std::string_view>{"WAIT", replicas, ms}, wire_);
  }
  ++expected_;
}

void Exchange::check_wait(const Reply& reply) const {
  const int required = durability_.min_replicas;
  const char* command = durability_.aof ? "WAITAOF" : "WAIT";
  std::ostringstream timeout;
  timeout << durability_.timeout;
  std::string why;
  long long confirmed = 0;
  if (reply.is_error()) {
    why = std::string(command) + " failed: " + reply.str;
  } else if (!durability_.aof && reply.type == codec::ReplyType::Integer) {
    confirmed = reply.integer;
  } else if (durability_.aof && reply.is_array() && reply.elements.size() == 2 &&
             reply.elements[1].type == codec::ReplyType::Integer) {
    confirmed = reply.elements[1].integer;  // [local fsyncs, replicas' fsyncs]
  } else {
    why = std::string("unexpected reply to ") + command;
  }
  if (why.empty() && confirmed >= required) return;
  const int replicas = static_cast<int>(std::clamp<long long>(confirmed, 0, required));
  std::string message = std::string(operation_->name()) + ": applied on the primary but ";
  if (why.empty()) {
    message += "confirmed by " + std::to_string(replicas) + " of " + std::to_string(required) +
               (required == 1 ? " replica" : " replicas") + " within " + timeout.str() + " s (" +
               command + (durability_.aof ? ": in their append-only files" : "") + ")";
  } else {
    message += "not confirmed: " + why;
  }
  message +=
      "; not resent (a write with a submission_id may be: it returns its first result, never "
      "applying twice)";
  throw NotReplicatedError(message, replicas, required);
}

void Exchange::next_step() {
  for (;;) {
    commands_ = operation_->next();
    wire_.clear();
    for (const auto& command : commands_) encode(command, false, wire_);
    expected_ = commands_.size();
    waits_ = expected_ > 0 && durability_.enabled() && !is_read();
    append_wait();
    if (expected_ > 0) return;
    // Nothing to send (an empty chunk): the step is done without a round trip.
    std::vector<Reply> none;
    if (operation_->feed(none)) {
      finished_ = true;
      return;
    }
  }
}

void Exchange::rewind() {
  wire_.clear();
  for (const auto& command : commands_) encode(command, false, wire_);
  expected_ = commands_.size();
  append_wait();
  replies_.clear();
  resent_.clear();
}

namespace {
// A NOSCRIPT for `script`, in reply to a request sent by write `written_at`.
void note_noscript(const leaderboard::Script* script, ScriptLoads* loads,
                   std::uint64_t written_at) {
  if (loads == nullptr) return observe(Signal::script_reload, std::string(script->name));
  for (auto& [loaded, when] : loads->loaded) {
    if (loaded != script) continue;
    if (written_at > when) {  // sent after its body was: the cache was emptied since
      observe(Signal::script_reload, std::string(script->name));
      when = ScriptLoads::kPending;
    }
    return;
  }
  loads->loaded.emplace_back(script, ScriptLoads::kPending);  // its first load here
}

// The body of `script` was run by the server: sent by write `written_at`.
void note_loaded(const leaderboard::Script* script, ScriptLoads* loads, std::uint64_t written_at) {
  if (loads == nullptr) return;
  for (auto& [loaded, when] : loads->loaded) {
    if (loaded == script && when == ScriptLoads::kPending) when = written_at;
  }
}
}  // namespace

void Exchange::on_replies(std::vector<Reply>&& replies, ScriptLoads* loads,
                          std::uint64_t written_at) {
  if (replies.size() != expected_) throw ConnectionError("reply count mismatch");
  if (asking_) {  // ASKING's +OK; an error there shows in the command's own reply
    replies.erase(replies.begin());
    asking_ = false;
  }
  std::optional<Reply> wait_reply;  // the WAIT's, last (durable acknowledgements)
  if (waits_) {
    if (replies.empty()) throw ConnectionError("reply count mismatch");
    wait_reply.emplace(std::move(replies.back()));
    replies.pop_back();
  }
  const bool retry = !resent_.empty();
  if (!retry) {
    replies_ = std::move(replies);
  } else {
    for (std::size_t j = 0; j < resent_.size(); ++j) {
      note_loaded(commands_[resent_[j]].script, loads, written_at);
      replies_[resent_[j]] = std::move(replies[j]);
    }
    resent_.clear();
  }

  // Scripts the server has not cached did not run: send them again with their body, once. A
  // NOSCRIPT in reply to the body itself is an error (a server that never keeps scripts).
  if (!retry) {
    wire_.clear();
    for (std::size_t i = 0; i < replies_.size(); ++i) {
      if (commands_[i].script != nullptr && is_noscript(replies_[i])) {
        note_noscript(commands_[i].script, loads, written_at);
        resent_.push_back(i);
        encode(commands_[i], true, wire_);
      }
    }
    if (!resent_.empty()) {
      expected_ = resent_.size();
      append_wait();  // the step's WAIT again, after the scripts that now run
      return;
    }
  }

  const bool reads_errors = operation_->reads_error_replies();
  for (const auto& reply : replies_) {
    if (reply.is_error() && (!reads_errors || is_cluster_redirect(reply))) {
      finished_ = !is_cluster_redirect(reply);  // a redirected step may be sent again
      raise_error_reply(reply);
    }
  }
  if (wait_reply) {
    finished_ = true;  // if it throws: applied, not confirmed, nothing more is sent
    check_wait(*wait_reply);
    finished_ = false;
  }
  if (operation_->feed(replies_)) {
    finished_ = true;
    wire_.clear();
    expected_ = 0;
  } else {
    next_step();
  }
}

codec::ReplySink* Exchange::reply_sink(std::size_t index) {
  if (asking_) {  // ASKING's +OK first
    if (index == 0) return nullptr;
    --index;
  }
  if (!resent_.empty()) {  // the scripts re-sent with their body
    if (index >= resent_.size()) return nullptr;
    index = resent_[index];
  }
  return index < commands_.size() ? operation_->reply_sink(index) : nullptr;
}

bool Exchange::restart_step(bool asking) {
  resent_.clear();
  replies_.clear();
  if (auto instead = operation_->instead_after_redirect()) {
    operation_ = std::move(instead);
    asking_ = false;
    finished_ = false;
    next_step();
    return false;
  }
  wire_.clear();
  asking_ = asking;
  if (asking) codec::encode_command(std::vector<std::string_view>{"ASKING"}, wire_);
  for (const auto& command : commands_) encode(command, asking, wire_);
  expected_ = commands_.size() + (asking ? 1 : 0);
  append_wait();
  return true;
}

}  // namespace rlb::connection
