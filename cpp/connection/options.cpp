#include "connection/options.hpp"

#include <cmath>

#include "errors.hpp"

namespace rlb::connection {

std::string ClientOptions::address() const {
  if (sentinel.enabled()) return "'" + sentinel.service_name + "' via Sentinel";
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
  if (tls.enabled && !unix_socket_path.empty()) {
    throw InvalidArgument("ssl is for TCP connections, not unix_socket_path");
  }
  if (tls.min_version && *tls.min_version != "TLSv1.2" && *tls.min_version != "TLSv1.3") {
    throw InvalidArgument("ssl_min_version must be TLSv1.2 or TLSv1.3, not " + *tls.min_version);
  }
  if (tls.keyfile && !tls.certfile) throw InvalidArgument("ssl_keyfile needs ssl_certfile");
  if (sentinel.enabled()) {
    if (sentinel.service_name.empty()) throw InvalidArgument("service_name must not be empty");
    if (!unix_socket_path.empty()) {
      throw InvalidArgument("Sentinel names TCP servers: unix_socket_path cannot be used");
    }
    for (const auto& [host, port] : sentinel.sentinels) {
      if (host.empty()) throw InvalidArgument("a sentinel's host must not be empty");
      if (port < 1 || port > 65535) {
        throw InvalidArgument("a sentinel's port must be between 1 and 65535");
      }
    }
  }
}

}  // namespace rlb::connection
