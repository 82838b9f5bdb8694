// Where and how to connect; shared by every transport. URLs are read in Python
// (python/redis_leaderboard/options.py), which fills these in.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace rlb::connection {

struct ClientOptions {
  std::string host = "localhost";
  int port = 6379;
  std::string unix_socket_path;  // when set, host and port are unused
  long long db = 0;
  std::optional<std::string> username;
  std::optional<std::string> password;
  std::optional<std::string> client_name;
  std::optional<double> socket_timeout;          // seconds; none waits without limit
  std::optional<double> socket_connect_timeout;  // seconds; none: socket_timeout, else no limit
  std::size_t max_reply_bytes = std::size_t{512} << 20;  // codec::kDefaultMaxReplyBytes

  // "host:port" or the socket path, for messages.
  std::string address() const;
  void validate() const;  // throws InvalidArgument
};

}  // namespace rlb::connection
