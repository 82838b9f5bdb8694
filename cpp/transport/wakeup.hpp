#pragma once

// A file descriptor an event loop watches and other threads make readable. Linux: an eventfd
// (one descriptor, one 8-byte counter). Elsewhere (macOS has no eventfd), and on Linux when
// built with REDIS_LEADERBOARD_PORTABLE (CI runs the sanitized suite so, to test the path macOS
// takes): a non-blocking pipe, the loop watching its read end.
namespace rlb::transport {

class Wakeup {
 public:
  Wakeup();  // throws RedisError
  ~Wakeup() { close(); }
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;

  // What the loop watches for readability; -1 once closed.
  int fd() const { return read_fd_; }
  // From any thread: the loop wakes (once, however many signals came before it drains).
  void signal() noexcept;
  // On the loop: not readable again until the next signal().
  void drain() noexcept;
  // Once no thread signals any more.
  void close() noexcept;

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;  // read_fd_ for an eventfd
};

// A socket for a non-blocking connect, close-on-exec, that never raises SIGPIPE where the
// system lets a socket say so (SO_NOSIGPIPE: macOS; Linux passes MSG_NOSIGNAL to each send).
// -1 with errno set on failure.
int open_stream_socket(int family) noexcept;

// The flags of a send() that must not raise SIGPIPE (MSG_NOSIGNAL where the system has it).
int no_sigpipe_send_flags() noexcept;

}  // namespace rlb::transport
