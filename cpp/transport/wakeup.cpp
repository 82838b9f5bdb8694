#include "transport/wakeup.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "errors.hpp"

#if defined(__linux__) && !defined(RLB_PORTABLE)
#include <sys/eventfd.h>
#define RLB_EVENTFD 1
#endif

namespace rlb::transport {

namespace {

bool set_flags(int fd) noexcept {
  const int status = ::fcntl(fd, F_GETFL);
  const int descriptor = ::fcntl(fd, F_GETFD);
  return status >= 0 && descriptor >= 0 && ::fcntl(fd, F_SETFL, status | O_NONBLOCK) == 0 &&
         ::fcntl(fd, F_SETFD, descriptor | FD_CLOEXEC) == 0;
}

}  // namespace

Wakeup::Wakeup() {
#if defined(RLB_EVENTFD)
  read_fd_ = write_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (read_fd_ < 0) throw RedisError(std::string("eventfd: ") + std::strerror(errno));
#else
  int ends[2];
  if (::pipe(ends) != 0) throw RedisError(std::string("pipe: ") + std::strerror(errno));
  read_fd_ = ends[0];
  write_fd_ = ends[1];
  if (!set_flags(read_fd_) || !set_flags(write_fd_)) {
    const std::string reason = std::strerror(errno);
    close();
    throw RedisError("pipe: " + reason);
  }
#endif
}

void Wakeup::signal() noexcept {
#if defined(RLB_EVENTFD)
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(write_fd_, &one, sizeof one);
#else
  // A full pipe (EAGAIN) is already readable: the loop wakes all the same.
  const char one = 1;
  [[maybe_unused]] auto n = ::write(write_fd_, &one, 1);
#endif
}

void Wakeup::drain() noexcept {
#if defined(RLB_EVENTFD)
  std::uint64_t count = 0;
  [[maybe_unused]] auto n = ::read(read_fd_, &count, sizeof count);
#else
  char buffer[256];
  while (::read(read_fd_, buffer, sizeof buffer) == static_cast<ssize_t>(sizeof buffer)) {
  }
#endif
}

void Wakeup::close() noexcept {
  if (write_fd_ >= 0 && write_fd_ != read_fd_) ::close(write_fd_);
  if (read_fd_ >= 0) ::close(read_fd_);
  read_fd_ = write_fd_ = -1;
}

int open_stream_socket(int family) noexcept {
#if defined(SOCK_NONBLOCK) && defined(SOCK_CLOEXEC) && !defined(RLB_PORTABLE)
  return ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
#else
  const int fd = ::socket(family, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  if (!set_flags(fd)) {
    const int error = errno;
    ::close(fd);
    errno = error;
    return -1;
  }
#if defined(SO_NOSIGPIPE)
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, sizeof on);
#endif
  return fd;
#endif
}

int no_sigpipe_send_flags() noexcept {
#if defined(MSG_NOSIGNAL)
  return MSG_NOSIGNAL;
#else
  return 0;  // SO_NOSIGPIPE on the socket (open_stream_socket)
#endif
}

}  // namespace rlb::transport
