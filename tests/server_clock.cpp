// A test-only clock for redis-server, loaded with LD_PRELOAD (see tests/server_clock.py): the
// server's wall clock (clock_gettime(CLOCK_REALTIME*), gettimeofday, time: what TIME, key expiry
// and every script see) follows a small file the tests write, RLB_TEST_CLOCK_FILE, mapped
// shared: three int64 values, a mode and two instants in nanoseconds since the epoch.
//   mode 0: the real clock (no file, or an unreadable one, is the same);
//   mode 1: running from `fake` when the real clock showed `real` (fake + real now - real);
//   mode 2: frozen at `fake`.
// The monotonic clocks stay real: Redis measures timeouts and durations with them.
// libfaketime does this in general, but crashes Debian's redis-server (jemalloc calls the clock
// while it is initialising); this file does only what the tests need.
//
// Cost: Redis reads the clock (mostly CLOCK_MONOTONIC) several times per command, so every
// reading the shim does not change goes to libc's own clock_gettime, which reads the vDSO (a
// system call per reading cost a quarter of redis-benchmark's GET rate). libc's function is
// found with dlsym(RTLD_NEXT), once; dlsym may allocate, and an allocator initialising itself
// (jemalloc) may read the clock: a reading made while the function is being found, or before,
// takes the system call instead.
//
// Valkey 9 on x86 reads the wall clock (gettimeofday) at most once a millisecond and adds the
// processor's time stamp counter (rdtsc, no libc call) in between: a clock moved by the tests
// would reach it up to a millisecond late, and a frozen one would run for up to a millisecond,
// then jump back. It takes the counter only if /proc/cpuinfo shows the constant_tsc flag, else it
// uses clock_gettime(CLOCK_MONOTONIC) and reads the wall clock each time; so the shim shows the
// server an empty /proc/cpuinfo (it is read nowhere else in Redis or Valkey).
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

// The mode in force: 0 (the real clock) without a file.
int64_t mode() {
  Shared* s = shared();
  return s == nullptr ? 0 : s->mode.load(std::memory_order_acquire);
}

using ClockGettime = int (*)(clockid_t, timespec*);

int raw_clock_gettime(clockid_t clock, timespec* ts) {
  return static_cast<int>(syscall(SYS_clock_gettime, clock, ts));
}

// libc's clock_gettime, or the system call while it is being looked up (on this thread: the
// lookup's own allocations may read the clock). initial-exec: the flag is in the static TLS block
// (a preloaded library has its place there), so reading it never allocates.
std::atomic<ClockGettime> next_clock_gettime{nullptr};
thread_local bool resolving __attribute__((tls_model("initial-exec"))) = false;

ClockGettime real_clock_gettime() {
  ClockGettime next = next_clock_gettime.load(std::memory_order_acquire);
  if (next != nullptr) return next;
  if (resolving) return raw_clock_gettime;
  resolving = true;
  next = reinterpret_cast<ClockGettime>(dlsym(RTLD_NEXT, "clock_gettime"));
  resolving = false;
  if (next == nullptr) next = raw_clock_gettime;
  next_clock_gettime.store(next, std::memory_order_release);
  return next;
}

int64_t real_ns() {
  timespec ts{};
  real_clock_gettime()(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The wall clock in nanoseconds: the real one in mode 0 (or if the mode changes under us).
int64_t now_ns(int64_t in_mode) {
  Shared* s = shared();
  switch (in_mode) {
    case 1:
      return s->fake.load() + (real_ns() - s->real.load());
    case 2:
      return s->fake.load();
    default:
      return real_ns();
  }
}

using Fopen = FILE* (*)(const char*, const char*);

// libc's fopen64 (fopen is the same function on 64-bit systems), the empty file for
// /proc/cpuinfo.
FILE* next_fopen(const char* path, const char* how) {
  static const Fopen next = reinterpret_cast<Fopen>(dlsym(RTLD_NEXT, "fopen64"));
  if (path != nullptr && std::strcmp(path, "/proc/cpuinfo") == 0) path = "/dev/null";
  return next(path, how);
}

}  // namespace

extern "C" {

FILE* fopen(const char* path, const char* how) { return next_fopen(path, how); }

FILE* fopen64(const char* path, const char* how) { return next_fopen(path, how); }

int clock_gettime(clockid_t clock, timespec* ts) {
  if (clock != CLOCK_REALTIME && clock != CLOCK_REALTIME_COARSE) {
    return real_clock_gettime()(clock, ts);
  }
  const int64_t in_mode = mode();
  if (in_mode == 0) return real_clock_gettime()(clock, ts);
  const int64_t ns = now_ns(in_mode);
  ts->tv_sec = static_cast<time_t>(ns / 1000000000);
  ts->tv_nsec = static_cast<long>(ns % 1000000000);
  return 0;
}

int gettimeofday(timeval* tv, void*) {
  if (tv != nullptr) {
    const int64_t ns = now_ns(mode());
    tv->tv_sec = static_cast<time_t>(ns / 1000000000);
    tv->tv_usec = static_cast<suseconds_t>(ns % 1000000000 / 1000);
  }
  return 0;
}

time_t time(time_t* out) {
  const time_t seconds = static_cast<time_t>(now_ns(mode()) / 1000000000);
  if (out != nullptr) *out = seconds;
  return seconds;
}

}  // extern "C"
