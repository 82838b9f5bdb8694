#include "connection/options.hpp"

#include <cmath>

#include "errors.hpp"

namespace rlb::connection {

std::string ClientOptions::address() const {
  if (!unix_socket_path.empty()) return unix_socket_path;
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

void ClientOptions::validate() const {
  if (unix_socket_path.empty() && host.empty()) throw InvalidArgument("host must not be empty");
  if (port < 1 || port > 65535) throw InvalidArgument("port must be between 1 and 65535");
  if (db < 0) throw InvalidArgument("db must not be negative");
  for (auto timeout : {socket_timeout, socket_connect_timeout}) {
    if (timeout && (!std::isfinite(*timeout) || *timeout <= 0)) {
      throw InvalidArgument("timeouts must be positive numbers of seconds or None");
    }
  }
  if (max_reply_bytes < 1024) throw InvalidArgument("max_reply_bytes must be at least 1024");
}

}  // namespace rlb::connection
