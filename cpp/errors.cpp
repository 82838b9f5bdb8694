#include "errors.hpp"

#include <cstdlib>
#include <string_view>

namespace rlb {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

template <class Error>
[[noreturn]] void raise(const std::string& message) {
  throw Error(message);
}

struct Prefix {
  std::string_view prefix;  // the error code and the space after it, or the whole message start
  void (*raise)(const std::string&);
};

// Server error prefix -> exception, as redis-py maps them.
constexpr Prefix kServerErrors[] = {
    {"NOSCRIPT ", raise<NoScriptError>},
    {"NOAUTH ", raise<AuthenticationError>},
    {"WRONGPASS ", raise<AuthenticationError>},
    {"NOPERM ", raise<NoPermissionError>},
    {"OOM ", raise<OutOfMemoryError>},
    {"READONLY ", raise<ReadOnlyError>},
    {"LOADING ", raise<BusyLoadingError>},
    {"EXECABORT ", raise<ExecAbortError>},
    {"MOVED ", raise<ClusterRedirectError>},
    {"ASK ", raise<ClusterRedirectError>},
    {"TRYAGAIN ", raise<ClusterRedirectError>},
    {"CLUSTERDOWN ", raise<ClusterRedirectError>},
    // A script touched a key of its slot that is migrating and not on this node: it failed at
    // that command, before its first write (every script checks what it touches first).
    {"ERR Script attempted to access a non local key", raise<ClusterRedirectError>},
    {"ERR max number of clients reached", raise<ConnectionError>},
    // Before AUTH, Redis refuses commands of more than 10 arguments this way (then closes):
    // what the caller is missing is a password, as NOAUTH would say for a shorter command.
    {"ERR Protocol error: unauthenticated", raise<AuthenticationError>},
};

}  // namespace

void raise_server_error(const std::string& message) {
  // "RATELIMITED retry_after=<seconds> ..." (issue 17, _lib.lua's plan_guards)
  static constexpr std::string_view kRateLimited = "RATELIMITED retry_after=";
  if (starts_with(message, kRateLimited)) {
    throw RateLimited(message, std::strtod(message.c_str() + kRateLimited.size(), nullptr));
  }
  // "SUBMISSIONREUSED <record key> was applied for another user ..." (_lib.lua's check_reuse):
  // the caller's mistake, so a ValueError, not a ResponseError.
  static constexpr std::string_view kReused = "SUBMISSIONREUSED ";
  if (starts_with(message, kReused)) {
    throw SubmissionIdReused("submission id: " + message.substr(kReused.size()));
  }
  for (const auto& entry : kServerErrors) {
    if (starts_with(message, entry.prefix)) entry.raise(message);
  }
  throw ResponseError(message);
}

}  // namespace rlb
