#include "connection/options.hpp"

#include <algorithm>
#include <cmath>

#include "errors.hpp"

namespace rlb::connection {

namespace {

// A NUL would end the text where the C APIs read it (getaddrinfo, connect's path, OpenSSL's
// files), so "h\0x" would reach host "h": a different server than the one named. Every text
// option is refused with one, whichever way it came (a URL's %00 included).
void refuse_nul(const std::string& value, const char* name) {
  if (value.find('\0') != std::string::npos) {
    throw InvalidArgument(std::string(name) + " must not contain a NUL character");
  }
}

void refuse_nul(const std::optional<std::string>& value, const char* name) {
  if (value) refuse_nul(*value, name);
}

}  // namespace

long long Durability::timeout_ms() const {
  return std::max(1LL, static_cast<long long>(std::ceil(timeout * 1000)));
}

std::string ClientOptions::address() const {
  if (sentinel.enabled()) return "'" + sentinel.service_name + "' via Sentinel";
  if (!unix_socket_path.empty()) return unix_socket_path;
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

void ClientOptions::validate() const {
  refuse_nul(host, "host");
  refuse_nul(unix_socket_path, "unix_socket_path");
  refuse_nul(username, "username");
  refuse_nul(password, "password");
  refuse_nul(client_name, "client_name");
  refuse_nul(tls.ca_certs, "ssl_ca_certs");
  refuse_nul(tls.ca_path, "ssl_ca_path");
  refuse_nul(tls.ca_data, "ssl_ca_data");
  refuse_nul(tls.certfile, "ssl_certfile");
  refuse_nul(tls.keyfile, "ssl_keyfile");
  refuse_nul(tls.password, "ssl_password");
  refuse_nul(tls.min_version, "ssl_min_version");
  refuse_nul(tls.ciphers, "ssl_ciphers");
  refuse_nul(sentinel.service_name, "service_name");
  refuse_nul(sentinel.username, "sentinel_username");
  refuse_nul(sentinel.password, "sentinel_password");
  for (const auto& address : sentinel.sentinels) refuse_nul(address.first, "a sentinel's host");
  if (unix_socket_path.empty() && host.empty()) throw InvalidArgument("host must not be empty");
  if (port < 1 || port > 65535) throw InvalidArgument("port must be between 1 and 65535");
  if (db < 0) throw InvalidArgument("db must not be negative");
  for (auto timeout : {socket_timeout, socket_connect_timeout}) {
    if (timeout && (!std::isfinite(*timeout) || *timeout <= 0)) {
      throw InvalidArgument("timeouts must be positive numbers of seconds or None");
    }
  }
  if (durability.min_replicas < 0) throw InvalidArgument("min_replicas must not be negative");
  if (!std::isfinite(durability.timeout) || durability.timeout <= 0 || durability.timeout > 86400) {
    throw InvalidArgument("replica_timeout must be a positive number of seconds (at most 86400)");
  }
  if (durability.aof && !durability.enabled()) {
    throw InvalidArgument("wait_aof needs min_replicas >= 1 (WAITAOF counts replicas)");
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
