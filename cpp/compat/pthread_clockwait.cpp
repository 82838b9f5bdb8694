// Linked only into the wheel for older systems (REDIS_LEADERBOARD_STATIC_RUNTIME, CMakeLists.txt),
// which is built in Debian 11: GCC 10's libstdc++, configured for glibc 2.31, waits on a
// std::condition_variable with a deadline through pthread_cond_clockwait, new in glibc 2.30, the
// one symbol that kept the wheel from manylinux_2_28. `-Wl,--wrap=pthread_cond_clockwait` sends
// those calls here: glibc's own when the running glibc has it (2.30+, looked up at run time, so
// the module needs no newer symbol version), else pthread_cond_timedwait with the deadline
// moved onto the system clock (a clock step during the wait shifts that one deadline).
// REDIS_LEADERBOARD_NO_CLOCKWAIT=1 forces the second path: .ci/wheels-compat runs the smoke test
// with it too, as glibc 2.28 would.
#include <dlfcn.h>
#include <pthread.h>

#include <cstdlib>
#include <ctime>

namespace {

using ClockWait = int (*)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const timespec*);

ClockWait find_clockwait() {
  const char* off = std::getenv("REDIS_LEADERBOARD_NO_CLOCKWAIT");
  if (off != nullptr && off[0] != '\0' && off[0] != '0') return nullptr;
  return reinterpret_cast<ClockWait>(::dlsym(RTLD_DEFAULT, "pthread_cond_clockwait"));
}

}  // namespace

extern "C" __attribute__((visibility("hidden"))) int __wrap_pthread_cond_clockwait(
    pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock, const timespec* deadline) {
  static const ClockWait glibc = find_clockwait();
  if (glibc != nullptr) return glibc(cond, mutex, clock, deadline);
  if (clock == CLOCK_REALTIME) return ::pthread_cond_timedwait(cond, mutex, deadline);
  timespec now{};
  timespec wall{};
  ::clock_gettime(clock, &now);
  ::clock_gettime(CLOCK_REALTIME, &wall);
  long long left = (static_cast<long long>(deadline->tv_sec) - now.tv_sec) * 1000000000LL +
                   (deadline->tv_nsec - now.tv_nsec);
  if (left < 0) left = 0;
  long long nanos = wall.tv_nsec + left % 1000000000LL;
  timespec until{};
  until.tv_sec = wall.tv_sec + static_cast<time_t>(left / 1000000000LL + nanos / 1000000000LL);
  until.tv_nsec = static_cast<long>(nanos % 1000000000LL);
  return ::pthread_cond_timedwait(cond, mutex, &until);
}
