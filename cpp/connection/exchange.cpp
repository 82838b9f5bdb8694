#include "connection/exchange.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
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
  const std::string db = std::to_string(options.db);
  if (options.db != 0) add({"SELECT", db});
  if (options.client_name) add({"CLIENT", "SETNAME", *options.client_name});
  if (options.readonly) add({"READONLY"});
  return handshake;
}

void check_handshake(const Handshake& handshake, const std::vector<Reply>& replies) {
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (!replies[i].is_error()) continue;
    if (i == 0 && handshake.authenticates) throw AuthenticationError(replies[i].str);
    raise_error_reply(replies[i]);
  }
}

Exchange::Exchange(std::unique_ptr<leaderboard::Operation> operation)
    : operation_(std::move(operation)) {
  next_step();
}

void Exchange::next_step() {
  for (;;) {
    commands_ = operation_->next();
    wire_.clear();
    for (const auto& command : commands_) encode(command, false, wire_);
    expected_ = commands_.size();
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
      return;
    }
  }

  for (const auto& reply : replies_) {
    if (reply.is_error()) {
      finished_ = !is_cluster_redirect(reply);  // a redirected step may be sent again
      raise_error_reply(reply);
    }
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

void Exchange::restart_step(bool asking) {
  wire_.clear();
  resent_.clear();
  asking_ = asking;
  if (asking) codec::encode_command(std::vector<std::string_view>{"ASKING"}, wire_);
  for (const auto& command : commands_) encode(command, asking, wire_);
  expected_ = commands_.size() + (asking ? 1 : 0);
}

}  // namespace rlb::connection
