#pragma once
// Fork detection for every transport: an object records the generation it was made in, and a
// forked child sees a newer one. The check is an atomic load, not a getpid() system call, so it
// can run on every call.

namespace rlb::transport {

// How many fork()s lie between the first call in the process tree and this process.
unsigned fork_generation();

// Remembers the generation at construction; forked() is true in a child forked since.
class ForkGuard {
 public:
  ForkGuard() : generation_(fork_generation()) {}
  bool forked() const { return fork_generation() != generation_; }

 private:
  unsigned generation_;
};

}  // namespace rlb::transport
