// One exception tree for the whole core, mirroring redis-py's names; the bindings map it onto
// the Python classes of the same names. Bad arguments use std::invalid_argument (ValueError).
#pragma once

#include <stdexcept>
#include <string>

namespace rlb {

struct RedisError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The connection failed or dropped; a request whose reply was lost ends here and is not retried.
struct ConnectionError : RedisError {
  using RedisError::RedisError;
};

struct AuthenticationError : ConnectionError {
  using ConnectionError::ConnectionError;
};

struct TimeoutError : RedisError {
  using RedisError::RedisError;
};

// The server answered with an error reply; the connection is still in step.
struct ResponseError : RedisError {
  using RedisError::RedisError;
};

// Raised by argument checks before anything is sent (ValueError in Python).
struct InvalidArgument : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

}  // namespace rlb
