// Redis Cluster routing without I/O: the hash slot of a key (CRC16 of its hash tag), the keys and
// slot of a request, whether it only reads, the slot map (from CLUSTER SHARDS, or CLUSTER SLOTS
// before Redis 7.0) and what a redirect reply means. The cluster drivers
// (transport/cluster_client.hpp) run requests through connection cores and ask this file where
// each goes and what to do when a node answers MOVED, ASK, TRYAGAIN or CLUSTERDOWN.
//
// The write rule: a reply MOVED, ASK, TRYAGAIN or CLUSTERDOWN means the node did not run the
// command (it refused it before executing anything), so the request is sent again: MOVED to the
// node named (the map is refreshed), ASK to the node named preceded by ASKING, TRYAGAIN and
// CLUSTERDOWN to the same slot's owner after a pause, until the request's deadline. A request
// whose reply was lost (the connection dropped after it was written) is never sent again.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codec/reply.hpp"
#include "leaderboard/operations.hpp"

namespace rlb::connection::cluster {

inline constexpr int kSlots = 16384;

// CRC16/XMODEM, as Redis Cluster's keyHashSlot uses it.
std::uint16_t crc16(std::string_view data);
// The part of `key` that is hashed: the hash tag (between the first '{' and the first '}' after
// it, if not empty), else the whole key.
std::string_view hash_tag(std::string_view key);
// True when `key` has a hash tag: then every key that starts with it hashes to the same slot.
bool has_hash_tag(std::string_view key);
int key_slot(std::string_view key);

// The keys a command names: a script's declared keys, or the key of a one-key command (argv[1]);
// none for commands without keys (MULTI, EXEC, PING...).
std::vector<std::string_view> command_keys(const leaderboard::Command& command);
// The one slot of every key of `commands`; none if they name no key. Keys in different slots
// raise InvalidArgument (a cluster node would refuse them with CROSSSLOT).
std::optional<int> commands_slot(const std::vector<leaderboard::Command>& commands);
// True when every command only reads (scripts flagged no-writes, read commands): such a request
// may go to a replica when the client reads from replicas.
bool read_only(const std::vector<leaderboard::Command>& commands);

struct NodeAddress {
  std::string host;
  int port = 0;

  std::string address() const { return host + ":" + std::to_string(port); }
  bool operator==(const NodeAddress& other) const {
    return host == other.host && port == other.port;
  }
  bool operator<(const NodeAddress& other) const {
    return host < other.host || (host == other.host && port < other.port);
  }
};

struct Shard {
  NodeAddress primary;
  std::vector<NodeAddress> replicas;  // those reported healthy
};

// Which shard serves each slot.
class SlotMap {
 public:
  // The reply of CLUSTER SHARDS (Redis 7.0+). `tls`: the nodes' TLS ports ("tls-port") are used.
  // `origin`: the host of the node that answered, for nodes announced without an address.
  static SlotMap from_shards(const codec::Reply& reply, bool tls, const std::string& origin);
  // The reply of CLUSTER SLOTS (before 7.0; its ports are those of the connection's kind).
  static SlotMap from_slots(const codec::Reply& reply, const std::string& origin);

  // The shard serving `slot`; nullptr if none does.
  const Shard* shard_for(int slot) const;
  // A MOVED reply: `slot` is served by `primary` now (a new shard if no known shard has it).
  void moved(int slot, const NodeAddress& primary);
  // Every node, primaries first.
  std::vector<NodeAddress> nodes() const;
  const std::vector<Shard>& shards() const { return shards_; }
  // How many slots a shard serves.
  int served() const;
  // True when every slot is served.
  bool complete() const { return served() == kSlots; }

 private:
  void assign(int first, int last, std::size_t shard);
  std::vector<Shard> shards_;
  std::array<std::int32_t, kSlots> slot_shard_{};  // index into shards_ + 1; 0: none
};

// What a node's error reply asks of the client. A script refused at one of its commands by its
// slot's state (a key of a migrating slot not on this node, undeclared keys during a migration,
// a cluster down: each server's words are in errors.cpp's table) failed before its first write:
// it is retried as after TRYAGAIN.
struct Redirect {
  enum class Kind { Moved, Ask, TryAgain, ClusterDown };
  Kind kind = Kind::Moved;
  int slot = -1;       // MOVED and ASK
  NodeAddress target;  // MOVED and ASK
};
// The redirect in an error reply's text; none if it is another error. `origin`: the host of
// the node that answered, for a redirect that names only a port (":7001").
std::optional<Redirect> parse_redirect(std::string_view error, const std::string& origin);

// The pause before the `attempt`-th new try (from 1) after TRYAGAIN, CLUSTERDOWN or a node that
// cannot be reached: 10 ms doubling to 160 ms.
double retry_delay(int attempt);

}  // namespace rlb::connection::cluster
