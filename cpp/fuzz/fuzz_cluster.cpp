// Redis Cluster parsing (connection/cluster.hpp): a node's error reply read as a redirect
// (MOVED, ASK, TRYAGAIN, CLUSTERDOWN), and a CLUSTER SHARDS or CLUSTER SLOTS reply read into a
// slot map, then MOVED applied to it and every slot looked up; plus the hash slot of any key.
//
// Input: byte 0 picks what is read; the rest is the error's text, or the RESP of the reply.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "codec/resp.hpp"
#include "common.hpp"
#include "connection/cluster.hpp"

namespace cluster = rlb::connection::cluster;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  const std::uint8_t mode = input.ConsumeIntegral<std::uint8_t>();
  const std::string rest = input.ConsumeRemainingBytesAsString();

  const int slot = cluster::key_slot(rest);
  if (slot < 0 || slot >= cluster::kSlots) __builtin_trap();
  if (cluster::hash_tag(rest).size() > rest.size()) __builtin_trap();

  if ((mode & 3) == 0) {
    const auto redirect = cluster::parse_redirect(rest, "origin");
    if (redirect && (redirect->kind == cluster::Redirect::Kind::Moved ||
                     redirect->kind == cluster::Redirect::Kind::Ask)) {
      if (redirect->slot < 0 || redirect->slot >= cluster::kSlots) __builtin_trap();
      if (redirect->target.port <= 0 || redirect->target.host.empty()) __builtin_trap();
    }
    return 0;
  }
  rlb::fuzz::expect_only_project_errors([&] {
    for (const auto& reply : rlb::codec::decode_all(rest, 1 << 20)) {
      const auto map = (mode & 3) == 1 ? cluster::SlotMap::from_shards(reply, mode & 4, "origin")
                                       : cluster::SlotMap::from_slots(reply, "origin");
      auto copy = map;
      copy.moved(slot, {"moved", 7000 + (mode >> 3)});
      for (int s = 0; s < cluster::kSlots; s += 97) {
        if (const auto* shard = copy.shard_for(s)) (void)shard->primary.address();
      }
      if (copy.shard_for(slot) == nullptr) __builtin_trap();  // MOVED was applied
      if (map.served() > cluster::kSlots) __builtin_trap();
      (void)copy.nodes();
      (void)copy.complete();
    }
  });
  return 0;
}
