// One exception tree for the whole core, mirroring redis-py's names and parents; the bindings map
// it onto the Python classes of the same names (one table, bindings/conversions.cpp). Bad
// arguments use std::invalid_argument (ValueError).
#pragma once

#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

namespace rlb {

struct RedisError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The connection failed or dropped; a write whose reply was lost ends here and is not retried.
struct ConnectionError : RedisError {
  using RedisError::RedisError;
};

struct AuthenticationError : ConnectionError {
  using ConnectionError::ConnectionError;
};

// The server is older than the scripts need (connection/exchange.hpp's kMinimumVersions): a
// ConnectionError in Python; the cluster client does not wait for another node (all are alike).
struct UnsupportedServerError : ConnectionError {
  using ConnectionError::ConnectionError;
};

// LOADING: the server is loading its dataset; wait and retry (a ConnectionError, as in redis-py).
struct BusyLoadingError : ConnectionError {
  using ConnectionError::ConnectionError;
};

struct TimeoutError : RedisError {
  using RedisError::RedisError;
};

// Durable acknowledgements (ClientOptions::durability): a write the primary applied, but fewer
// replicas than required confirmed having it (WAIT / WAITAOF) within the replica timeout. Not a
// ConnectionError nor a TimeoutError: code that retries those must not send it again (it was
// applied); a write carrying a submission id may be, and returns its first result.
struct NotReplicatedError : RedisError {
  NotReplicatedError(const std::string& message, int confirmed, int required)
      : RedisError(message), replicas(confirmed), min_replicas(required) {}
  int replicas;      // how many confirmed it
  int min_replicas;  // how many were required
};

// The server answered with an error reply; the connection is still in step.
struct ResponseError : RedisError {
  using RedisError::RedisError;
};

struct NoScriptError : ResponseError {  // NOSCRIPT
  using ResponseError::ResponseError;
};

struct ReadOnlyError : ResponseError {  // READONLY: a write sent to a replica
  using ResponseError::ResponseError;
};

struct NoPermissionError : ResponseError {  // NOPERM: the ACL user may not run this
  using ResponseError::ResponseError;
};

struct OutOfMemoryError : ResponseError {  // OOM: maxmemory reached, the write was refused
  using ResponseError::ResponseError;
};

struct ExecAbortError : ResponseError {  // EXECABORT
  using ResponseError::ResponseError;
};

// RATELIMITED (guards): a board's rate_limit refused the write, which changed nothing. A
// ResponseError (the server refused the command; the connection is in step), not a
// ConnectionError: code that retries connection errors must not hammer a limit.
struct RateLimited : ResponseError {
  RateLimited(const std::string& message, double retry_after_seconds)
      : ResponseError(message), retry_after(retry_after_seconds) {}
  double retry_after;  // seconds until the user's window has room (server time)
};

// CLOCK (seasons, leagues, tournaments, rolling windows: lib/clock.lua's check_clock): the server's
// clock says the write does not belong to the period (bucket, window) the client named from its
// own clock; nothing was changed. The client corrects its clock and sends the write again, or,
// when its clock is off by more than it accepts, raises it (ClockSkewError in Python).
struct ClockSkew : ResponseError {
  ClockSkew(const std::string& message, long long server_ms)
      : ResponseError(message), server_time_ms(server_ms) {}
  long long server_time_ms;  // the server's clock when it refused the write (unix ms)
};

// MOVED, ASK, TRYAGAIN, CLUSTERDOWN, or a script stopped at a key of a migrating slot: a cluster
// node did not run the command (or the script failed before its first write). The cluster client
// follows these (connection/cluster.hpp); another client raises them.
struct ClusterRedirectError : ResponseError {
  using ResponseError::ResponseError;
};

// Raised by argument checks before anything is sent (ValueError in Python).
struct InvalidArgument : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// ValueError subclasses a caller tells apart without matching text (an app answers them 4xx).
// A board's options (order, ties, rate_limit, events) differ from those recorded in Redis for it.
struct OptionsMismatch : InvalidArgument {
  using InvalidArgument::InvalidArgument;
};

// A write to a period that no longer (or not yet) takes writes on the server's clock (seasons,
// leagues, tournaments).
struct PeriodClosed : InvalidArgument {
  using InvalidArgument::InvalidArgument;
};

// SUBMISSIONREUSED: a submission id was applied for another user or another payload (score,
// mode, metadata); nothing was changed. A true resend returns the first result instead.
struct SubmissionIdReused : InvalidArgument {
  using InvalidArgument::InvalidArgument;
};

// SCOREREJECTED (fair play): the board's score_range or max_increment refused the write, which
// changed nothing (no rate-limit count, no event, no submission record).
struct ScoreRejected : InvalidArgument {
  using InvalidArgument::InvalidArgument;
};

// Tournaments (tournament.lua): a player refused by the tournament's rules; nothing was changed.
// TOURNAMENTFULL: the period has max_size players; a join or first submission is refused.
struct TournamentFull : InvalidArgument {
  using InvalidArgument::InvalidArgument;
};
// NOTJOINED: a submission from a player who has not joined a join_required tournament.
struct NotJoined : InvalidArgument {
  using InvalidArgument::InvalidArgument;
};
// NOATTEMPTS: the player has used every attempt of the period (max_attempts plus those granted).
struct AttemptsExhausted : InvalidArgument {
  using InvalidArgument::InvalidArgument;
};
// STALEPERIOD: a submission meant for a period (named by the caller) that is not the current one.
struct StalePeriod : InvalidArgument {
  using InvalidArgument::InvalidArgument;
};

// Throws the exception for a server error reply, chosen by its prefix as redis-py's
// _parsers/base.py does: the one table of server errors.
[[noreturn]] void raise_server_error(const std::string& message);
// True when raise_server_error(message) throws ClusterRedirectError (the same table).
bool is_cluster_redirect_error(std::string_view message);
// What an exception says (what()), or "unknown error".
std::string message_of(const std::exception_ptr& error);

}  // namespace rlb
