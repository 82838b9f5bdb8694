#include "transport/fork.hpp"

#include <pthread.h>

#include <atomic>

namespace rlb::transport {
namespace {

std::atomic<unsigned> generation{0};

// Registered before the first object records its generation (it calls fork_generation()).
const bool registered = [] {
  ::pthread_atfork(nullptr, nullptr, [] { generation.fetch_add(1, std::memory_order_relaxed); });
  return true;
}();

}  // namespace

unsigned fork_generation() {
  (void)registered;
  return generation.load(std::memory_order_relaxed);
}

}  // namespace rlb::transport
