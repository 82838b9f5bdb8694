// A test-only clock for redis-server, loaded with LD_PRELOAD (see tests/server_clock.py): the
// server's wall clock (clock_gettime(CLOCK_REALTIME*), gettimeofday, time: what TIME, key expiry
// and every script see) follows a small file the tests write, RLB_TEST_CLOCK_FILE, mapped
// shared: three int64 values, a mode and two instants in nanoseconds since the epoch.
//   mode 0: the real clock (no file, or an unreadable one, is the same);
//   mode 1: running from `fake` when the real clock showed `real` (fake + real now - real);
//   mode 2: frozen at `fake`.
// The monotonic clocks stay real: Redis measures timeouts and durations with them.
// libfaketime does this in general, but crashes Debian's redis-server (jemalloc calls the clock
// while it is initialising); this file does only what the tests need, reading the real clock by
// the system call itself.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

namespace {

struct Shared {
  std::atomic<int64_t> mode;
  std::atomic<int64_t> real;
  std::atomic<int64_t> fake;
};

Shared* shared() {
  static Shared* mapped = [] {
    const char* path = std::getenv("RLB_TEST_CLOCK_FILE");
    if (path == nullptr) return static_cast<Shared*>(nullptr);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return static_cast<Shared*>(nullptr);
    void* at = mmap(nullptr, sizeof(Shared), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    return at == MAP_FAILED ? static_cast<Shared*>(nullptr) : static_cast<Shared*>(at);
  }();
  return mapped;
}

int64_t real_ns() {
  timespec ts{};
  syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t now_ns() {
  const int64_t real = real_ns();
  Shared* s = shared();
  if (s == nullptr) return real;
  switch (s->mode.load()) {
    case 1:
      return s->fake.load() + (real - s->real.load());
    case 2:
      return s->fake.load();
    default:
      return real;
  }
}

}  // namespace

extern "C" {

int clock_gettime(clockid_t clock, timespec* ts) {
  if (clock != CLOCK_REALTIME && clock != CLOCK_REALTIME_COARSE) {
    return static_cast<int>(syscall(SYS_clock_gettime, clock, ts));
  }
  const int64_t ns = now_ns();
  ts->tv_sec = static_cast<time_t>(ns / 1000000000);
  ts->tv_nsec = static_cast<long>(ns % 1000000000);
  return 0;
}

int gettimeofday(timeval* tv, void*) {
  if (tv != nullptr) {
    const int64_t ns = now_ns();
    tv->tv_sec = static_cast<time_t>(ns / 1000000000);
    tv->tv_usec = static_cast<suseconds_t>(ns % 1000000000 / 1000);
  }
  return 0;
}

time_t time(time_t* out) {
  const time_t seconds = static_cast<time_t>(now_ns() / 1000000000);
  if (out != nullptr) *out = seconds;
  return seconds;
}

}  // extern "C"
