#pragma once
// What a client counts, shared by both transports: tests and users read it through stats().

#include <atomic>
#include <cstdint>

namespace rlb::connection {

struct Stats {
  std::uint64_t round_trips = 0;  // writes answered by a read, handshakes excluded
  std::uint64_t commands = 0;
  std::uint64_t reconnects = 0;   // connections opened to replace a dropped one
  std::uint64_t connections = 0;  // connections opened in all

  // Another client's (a pool's, a node's) counts added: a client of several.
  Stats& operator+=(const Stats& other) {
    round_trips += other.round_trips;
    commands += other.commands;
    reconnects += other.reconnects;
    connections += other.connections;
    return *this;
  }
};

// Lock-free counters behind Stats, bumped from any thread.
class Counters {
 public:
  void round_trip(std::uint64_t commands) {
    round_trips_.fetch_add(1, std::memory_order_relaxed);
    commands_.fetch_add(commands, std::memory_order_relaxed);
  }
  void connected(bool replaces_dropped) {
    connections_.fetch_add(1, std::memory_order_relaxed);
    if (replaces_dropped) reconnects_.fetch_add(1, std::memory_order_relaxed);
  }
  Stats snapshot() const {
    Stats stats;
    stats.round_trips = round_trips_.load(std::memory_order_relaxed);
    stats.commands = commands_.load(std::memory_order_relaxed);
    stats.reconnects = reconnects_.load(std::memory_order_relaxed);
    stats.connections = connections_.load(std::memory_order_relaxed);
    return stats;
  }

 private:
  std::atomic<std::uint64_t> round_trips_{0}, commands_{0}, reconnects_{0}, connections_{0};
};

}  // namespace rlb::connection
