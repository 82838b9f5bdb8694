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
  std::string_view contains = {};  // if not empty: also found in the rest of the message
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
    // A script refused at one of its commands by the state of its slot, in each server's words:
    // a key of a migrating slot not on this node (ASK/MOVED inside a script), keys of a slot being
    // migrated not all here (TRYAGAIN inside a script), a slot not served or a cluster down. It
    // failed at that command, before its first write (every script of the library reaches every
    // key it touches before writing), so the cluster client sends it again as after TRYAGAIN.
    // Redis 7.0-8.x and Valkey 7-8:
    {"ERR Script attempted to access a non local key", raise<ClusterRedirectError>},
    // Valkey 9 (scripts call through the module API):
    {"ERR Attempted to access a non local key", raise<ClusterRedirectError>},
    // Redis 7.2+ and Valkey 7.2+ ("... 'unlink' in script because ..."):
    {"ERR Unable to execute command '", raise<ClusterRedirectError>,
     "' in script because undeclared keys were accessed during rehashing of the slot"},
    {"ERR Script attempted to access a slot not served", raise<ClusterRedirectError>},
    // "... execute a [write] command while the cluster is down[ and readonly]" (Redis, Valkey 8)
    // and "Can not execute a [write] command '<name>' while the cluster is down..." (Valkey 9).
    {"ERR Script attempted to execute a ", raise<ClusterRedirectError>,
     "while the cluster is down"},
    {"ERR Can not execute a ", raise<ClusterRedirectError>, "while the cluster is down"},
    // Redis 6.2, anywhere in the message ("ERR Error running script (call to f_<sha>):
    // @user_script:<line>: ..." or, returned by redis.pcall, "@user_script: <line>: ..."):
    {"", raise<ClusterRedirectError>, ": Lua script attempted to access a non local key in a "},
    {"", raise<ClusterRedirectError>, ": Lua script attempted to execute a "},
    {"ERR max number of clients reached", raise<ConnectionError>},
    // Before AUTH, Redis refuses commands of more than 10 arguments this way (then closes):
    // what the caller is missing is a password, as NOAUTH would say for a shorter command.
    {"ERR Protocol error: unauthenticated", raise<AuthenticationError>},
};

// The entry of kServerErrors that `message` matches; nullptr if none.
const Prefix* match(std::string_view message) {
  for (const auto& entry : kServerErrors) {
    if (!starts_with(message, entry.prefix)) continue;
    if (entry.contains.empty() ||
        message.find(entry.contains, entry.prefix.size()) != std::string_view::npos) {
      return &entry;
    }
  }
  return nullptr;
}

}  // namespace

void raise_server_error(const std::string& message) {
  // "RATELIMITED retry_after=<seconds> ..." (rate limits: lib/submissions.lua's plan_guards)
  static constexpr std::string_view kRateLimited = "RATELIMITED retry_after=";
  if (starts_with(message, kRateLimited)) {
    throw RateLimited(message, std::strtod(message.c_str() + kRateLimited.size(), nullptr));
  }
  // "CLOCK <server ms> <from> <until> ..." (lib/clock.lua's check_clock): the server's time.
  static constexpr std::string_view kClock = "CLOCK ";
  if (starts_with(message, kClock)) {
    throw ClockSkew(message.substr(kClock.size()),
                    std::strtoll(message.c_str() + kClock.size(), nullptr, 10));
  }
  // "SUBMISSIONREUSED <record key> was applied for another user ..." (lib/submissions.lua's
  // check_reuse): the caller's mistake, so a ValueError, not a ResponseError.
  static constexpr std::string_view kReused = "SUBMISSIONREUSED ";
  if (starts_with(message, kReused)) {
    throw SubmissionIdReused("submission id: " + message.substr(kReused.size()));
  }
  // "SCOREREJECTED user <id> on <board>: ..." (fair play, lib/guards.lua's check_score_limits).
  static constexpr std::string_view kRejected = "SCOREREJECTED ";
  if (starts_with(message, kRejected)) throw ScoreRejected(message.substr(kRejected.size()));
  // "INEXACT <old> + <amount> is beyond ..." (lib/hiding.lua's check_exact_sum): an increment whose
  // result a double cannot hold, the caller's to avoid as a score it cannot hold (number_arg).
  static constexpr std::string_view kInexact = "INEXACT ";
  if (starts_with(message, kInexact)) {
    throw InvalidArgument("increment: " + message.substr(kInexact.size()));
  }
  // "NOTEAM member <id> of team board <key> has no team ..." (team.lua): a ValueError.
  static constexpr std::string_view kNoTeam = "NOTEAM ";
  if (starts_with(message, kNoTeam)) throw InvalidArgument(message.substr(kNoTeam.size()));
  // "PERIODCLOSED period <id> of league <key> ..." (leagues: league.lua): a write to a period
  // that takes no more writes, a ValueError as a periodic board's.
  static constexpr std::string_view kClosed = "PERIODCLOSED ";
  if (starts_with(message, kClosed)) throw PeriodClosed(message.substr(kClosed.size()));
  // Tournaments (tournament.lua): "<CODE> period <id> of tournament <key>: ...", the caller's
  // (or the player's) mistake, so ValueErrors.
  static constexpr struct {
    std::string_view code;
    void (*raise)(const std::string&);
  } kTournament[] = {{"TOURNAMENTFULL ", raise<TournamentFull>},
                     {"NOTJOINED ", raise<NotJoined>},
                     {"NOATTEMPTS ", raise<AttemptsExhausted>},
                     {"STALEPERIOD ", raise<StalePeriod>}};
  for (const auto& entry : kTournament) {
    if (starts_with(message, entry.code)) entry.raise(message.substr(entry.code.size()));
  }
  if (const Prefix* entry = match(message)) entry->raise(message);
  throw ResponseError(message);
}

bool is_cluster_redirect_error(std::string_view message) {
  const Prefix* entry = match(message);
  return entry != nullptr && entry->raise == raise<ClusterRedirectError>;
}

std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace rlb
