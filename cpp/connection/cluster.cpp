#include "connection/cluster.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "errors.hpp"

namespace rlb::connection::cluster {

using codec::Reply;
using codec::ReplyType;

std::uint16_t crc16(std::string_view data) {
  std::uint16_t crc = 0;
  for (unsigned char byte : data) {
    crc ^= static_cast<std::uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<std::uint16_t>(crc << 1);
    }
  }
  return crc;
}

std::string_view hash_tag(std::string_view key) {
  const auto open = key.find('{');
  if (open == std::string_view::npos) return key;
  const auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

bool has_hash_tag(std::string_view key) { return hash_tag(key).size() != key.size(); }

int key_slot(std::string_view key) { return crc16(hash_tag(key)) & (kSlots - 1); }

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) ==
                  std::toupper(static_cast<unsigned char>(y));
         });
}

// Commands without keys that the library sends.
constexpr std::string_view kKeyless[] = {"MULTI",  "EXEC",     "DISCARD", "PING",
                                         "ASKING", "READONLY", "CLUSTER", "INFO",
                                         "TIME",   "SCRIPT",   "COMMAND", "ECHO"};
// Read commands: a request made only of these (and no-writes scripts) may go to a replica.
constexpr std::string_view kReads[] = {
    "ZREVRANK", "ZRANK",  "ZSCORE",    "ZMSCORE",       "ZCARD",
    "ZCOUNT",   "ZRANGE", "ZREVRANGE", "ZRANGEBYSCORE", "ZREVRANGEBYSCORE",
    "HGETALL",  "HGET",   "HMGET",     "EXISTS",        "TYPE",
    "GET",      "PING",   "ECHO",      "MULTI",         "EXEC"};  // around reads only: read

}  // namespace

std::vector<std::string_view> command_keys(const leaderboard::Command& command) {
  std::vector<std::string_view> keys;
  if (command.script != nullptr) {
    if (command.argv.empty()) return keys;
    const long long count = std::strtoll(command.argv[0].c_str(), nullptr, 10);
    for (long long i = 1; i <= count && i < static_cast<long long>(command.argv.size()); ++i) {
      keys.push_back(command.argv[static_cast<std::size_t>(i)]);
    }
    return keys;
  }
  if (command.argv.size() < 2) return keys;
  // A raw script call: EVAL/EVALSHA/EVAL_RO/EVALSHA_RO/FCALL/FCALL_RO script numkeys key...
  const auto& name0 = command.argv[0];
  if (iequals(name0, "EVAL") || iequals(name0, "EVALSHA") || iequals(name0, "EVAL_RO") ||
      iequals(name0, "EVALSHA_RO") || iequals(name0, "FCALL") || iequals(name0, "FCALL_RO")) {
    if (command.argv.size() < 3) return keys;
    const long long count = std::strtoll(command.argv[2].c_str(), nullptr, 10);
    for (long long i = 3; i < 3 + count && i < static_cast<long long>(command.argv.size()); ++i) {
      keys.push_back(command.argv[static_cast<std::size_t>(i)]);
    }
    return keys;
  }
  for (auto name : kKeyless) {
    if (iequals(command.argv[0], name)) return keys;
  }
  // XREAD [COUNT n] [BLOCK ms] STREAMS key... id...: the keys are the first half of what
  // follows STREAMS (the events reader's XREAD; its first argument is COUNT, not a key).
  if (iequals(name0, "XREAD") || iequals(name0, "XREADGROUP")) {
    for (std::size_t i = 1; i < command.argv.size(); ++i) {
      if (!iequals(command.argv[i], "STREAMS")) continue;
      const std::size_t rest = command.argv.size() - i - 1;
      for (std::size_t k = 0; k < rest / 2; ++k) keys.push_back(command.argv[i + 1 + k]);
      break;
    }
    return keys;
  }
  keys.push_back(command.argv[1]);
  return keys;
}

std::optional<int> commands_slot(const std::vector<leaderboard::Command>& commands) {
  std::optional<int> slot;
  std::string_view first;
  for (const auto& command : commands) {
    for (auto key : command_keys(command)) {
      const int this_slot = key_slot(key);
      if (!slot) {
        slot = this_slot;
        first = key;
      } else if (*slot != this_slot) {
        throw InvalidArgument("keys in different cluster slots in one request: '" +
                              std::string(first) + "' and '" + std::string(key) +
                              "'; give the keys one hash tag ({...})");
      }
    }
  }
  return slot;
}

bool read_only(const std::vector<leaderboard::Command>& commands) {
  for (const auto& command : commands) {
    if (command.script != nullptr) {
      const auto body = command.script->body;
      const auto first_line = body.substr(0, body.find('\n'));
      if (first_line.find("no-writes") == std::string_view::npos) return false;
      continue;
    }
    if (command.argv.empty()) return false;
    if (std::none_of(std::begin(kReads), std::end(kReads),
                     [&](std::string_view name) { return iequals(command.argv[0], name); })) {
      return false;
    }
  }
  return true;
}

// ---- The slot map ----------------------------------------------------------------------------

namespace {

[[noreturn]] void unexpected(const char* what) {
  throw RedisError(std::string("unexpected reply from Redis for ") + what);
}

long long integer_of(const Reply& reply, const char* what) {
  if (reply.type == ReplyType::Integer) return reply.integer;
  if (reply.type == ReplyType::String || reply.type == ReplyType::Status) {
    char* end = nullptr;
    const long long value = std::strtoll(reply.str.c_str(), &end, 10);
    if (end != reply.str.c_str()) return value;
  }
  unexpected(what);
}

const std::string& string_of(const Reply& reply, const char* what) {
  if (reply.type != ReplyType::String && reply.type != ReplyType::Status) unexpected(what);
  return reply.str;
}

// A node's announced address: its endpoint, else its ip, else the answering node's host.
std::string host_of(const std::string& endpoint, const std::string& ip, const std::string& origin) {
  if (!endpoint.empty() && endpoint != "?") return endpoint;
  if (!ip.empty() && ip != "?") return ip;
  return origin;
}

}  // namespace

void SlotMap::assign(int first, int last, std::size_t shard) {
  if (first < 0 || last >= kSlots || first > last) unexpected("a slot range");
  for (int slot = first; slot <= last; ++slot) {
    slot_shard_[static_cast<std::size_t>(slot)] = static_cast<std::int32_t>(shard + 1);
  }
}

SlotMap SlotMap::from_shards(const Reply& reply, bool tls, const std::string& origin) {
  if (!reply.is_array()) unexpected("CLUSTER SHARDS");
  SlotMap map;
  for (const auto& shard_reply : reply.elements) {
    if (!shard_reply.is_array() || shard_reply.elements.size() % 2 != 0) {
      unexpected("CLUSTER SHARDS");
    }
    const Reply* slots = nullptr;
    const Reply* nodes = nullptr;
    for (std::size_t i = 0; i < shard_reply.elements.size(); i += 2) {
      const auto& name = string_of(shard_reply.elements[i], "CLUSTER SHARDS");
      if (name == "slots") slots = &shard_reply.elements[i + 1];
      if (name == "nodes") nodes = &shard_reply.elements[i + 1];
    }
    if (!slots || !nodes || !slots->is_array() || !nodes->is_array()) {
      unexpected("CLUSTER SHARDS");
    }
    if (slots->elements.empty()) continue;  // a shard serving no slot
    Shard shard;
    bool has_primary = false;
    for (const auto& node : nodes->elements) {
      if (!node.is_array() || node.elements.size() % 2 != 0) unexpected("CLUSTER SHARDS");
      std::string ip, endpoint, role, health;
      long long port = 0, tls_port = 0;
      for (std::size_t i = 0; i < node.elements.size(); i += 2) {
        const auto& field = string_of(node.elements[i], "CLUSTER SHARDS");
        const auto& value = node.elements[i + 1];
        if (field == "ip") ip = string_of(value, "a node's ip");
        if (field == "endpoint") endpoint = string_of(value, "a node's endpoint");
        if (field == "role") role = string_of(value, "a node's role");
        if (field == "health") health = string_of(value, "a node's health");
        if (field == "port") port = integer_of(value, "a node's port");
        if (field == "tls-port") tls_port = integer_of(value, "a node's TLS port");
      }
      NodeAddress address{host_of(endpoint, ip, origin),
                          static_cast<int>(tls && tls_port ? tls_port : port)};
      if (role == "master") {
        // A failed primary stays listed until a replica takes over: it is still the one to ask
        // (and a failed connection to it waits for the failover).
        if (!has_primary || health == "online") shard.primary = address;
        has_primary = true;
      } else if (health == "online") {
        shard.replicas.push_back(address);
      }
    }
    if (!has_primary) continue;
    const std::size_t index = map.shards_.size();
    map.shards_.push_back(std::move(shard));
    for (std::size_t i = 0; i + 1 < slots->elements.size(); i += 2) {
      map.assign(static_cast<int>(integer_of(slots->elements[i], "a slot")),
                 static_cast<int>(integer_of(slots->elements[i + 1], "a slot")), index);
    }
  }
  return map;
}

SlotMap SlotMap::from_slots(const Reply& reply, const std::string& origin) {
  if (!reply.is_array()) unexpected("CLUSTER SLOTS");
  SlotMap map;
  for (const auto& range : reply.elements) {
    if (!range.is_array() || range.elements.size() < 3) unexpected("CLUSTER SLOTS");
    auto node_of = [&](const Reply& node) {
      if (!node.is_array() || node.elements.size() < 2) unexpected("CLUSTER SLOTS");
      return NodeAddress{host_of(string_of(node.elements[0], "a node's address"), "", origin),
                         static_cast<int>(integer_of(node.elements[1], "a node's port"))};
    };
    Shard shard;
    shard.primary = node_of(range.elements[2]);
    for (std::size_t i = 3; i < range.elements.size(); ++i) {
      shard.replicas.push_back(node_of(range.elements[i]));
    }
    // CLUSTER SLOTS lists a shard once per range: one entry per primary.
    std::size_t index = map.shards_.size();
    for (std::size_t i = 0; i < map.shards_.size(); ++i) {
      if (map.shards_[i].primary == shard.primary) index = i;
    }
    if (index == map.shards_.size()) map.shards_.push_back(std::move(shard));
    map.assign(static_cast<int>(integer_of(range.elements[0], "a slot")),
               static_cast<int>(integer_of(range.elements[1], "a slot")), index);
  }
  return map;
}

const Shard* SlotMap::shard_for(int slot) const {
  if (slot < 0 || slot >= kSlots) return nullptr;
  const auto index = slot_shard_[static_cast<std::size_t>(slot)];
  return index == 0 ? nullptr : &shards_[static_cast<std::size_t>(index - 1)];
}

void SlotMap::moved(int slot, const NodeAddress& primary) {
  if (slot < 0 || slot >= kSlots) return;
  std::size_t index = shards_.size();
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    if (shards_[i].primary == primary) index = i;
  }
  if (index == shards_.size()) shards_.push_back(Shard{primary, {}});
  slot_shard_[static_cast<std::size_t>(slot)] = static_cast<std::int32_t>(index + 1);
}

std::vector<NodeAddress> SlotMap::nodes() const {
  std::vector<NodeAddress> out;
  for (const auto& shard : shards_) out.push_back(shard.primary);
  for (const auto& shard : shards_) {
    for (const auto& replica : shard.replicas) out.push_back(replica);
  }
  return out;
}

int SlotMap::served() const {
  return static_cast<int>(
      std::count_if(slot_shard_.begin(), slot_shard_.end(), [](auto index) { return index != 0; }));
}

// ---- Redirects -------------------------------------------------------------------------------

std::optional<Redirect> parse_redirect(std::string_view error, const std::string& origin) {
  auto starts = [&](std::string_view prefix) { return error.substr(0, prefix.size()) == prefix; };
  Redirect redirect;
  if (starts("CLUSTERDOWN")) {
    redirect.kind = Redirect::Kind::ClusterDown;
    return redirect;
  }
  std::string_view rest;
  if (starts("MOVED ")) {
    redirect.kind = Redirect::Kind::Moved;
    rest = error.substr(6);
  } else if (starts("ASK ")) {
    redirect.kind = Redirect::Kind::Ask;
    rest = error.substr(4);
  } else if (is_cluster_redirect_error(error)) {
    // TRYAGAIN, or a script refused at a command by its slot's state (errors.cpp's table has
    // each server's words): sent again after a pause.
    redirect.kind = Redirect::Kind::TryAgain;
    return redirect;
  } else {
    return std::nullopt;
  }
  // "<slot> <host>:<port>"; the host may be empty (the answering node's) or an IPv6 address.
  const auto space = rest.find(' ');
  const auto colon = rest.rfind(':');
  if (space == std::string_view::npos || colon == std::string_view::npos || colon < space) {
    return std::nullopt;
  }
  const std::string slot(rest.substr(0, space));
  const std::string port(rest.substr(colon + 1));
  char* end = nullptr;
  redirect.slot = static_cast<int>(std::strtol(slot.c_str(), &end, 10));
  if (end == slot.c_str() || redirect.slot < 0 || redirect.slot >= kSlots) return std::nullopt;
  redirect.target.port = static_cast<int>(std::strtol(port.c_str(), &end, 10));
  if (end == port.c_str() || redirect.target.port <= 0) return std::nullopt;
  redirect.target.host = std::string(rest.substr(space + 1, colon - space - 1));
  if (redirect.target.host.empty() || redirect.target.host == "?") redirect.target.host = origin;
  return redirect;
}

double retry_delay(int attempt) {
  const int doublings = std::min(std::max(attempt - 1, 0), 4);
  return 0.010 * static_cast<double>(1 << doublings);
}

}  // namespace rlb::connection::cluster
