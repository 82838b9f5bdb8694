#include "connection/options.hpp"

#include <cctype>
#include <cmath>

#include "errors.hpp"

namespace rlb::connection {
namespace {

std::string percent_decode(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() &&
        std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

long long parse_number(const std::string& text, const char* what, const std::string& url) {
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    throw InvalidArgument(std::string("invalid ") + what + " in Redis URL: " + url);
  }
  return std::stoll(text);
}

}  // namespace

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

ClientOptions parse_url(const std::string& url) {
  ClientOptions options;
  auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) {
    throw InvalidArgument("Redis URL must start with redis://, or unix://: " + url);
  }
  std::string scheme = url.substr(0, scheme_end);
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme == "rediss") {
    throw InvalidArgument("rediss:// (TLS) is not supported yet by redis_leaderboard: " + url);
  }
  if (scheme != "redis" && scheme != "unix") {
    throw InvalidArgument("Redis URL must start with redis:// or unix://, not " + scheme + "://");
  }
  std::string rest = url.substr(scheme_end + 3);

  std::string query;
  if (auto q = rest.find('?'); q != std::string::npos) {
    query = rest.substr(q + 1);
    rest.erase(q);
  }
  if (auto at = rest.rfind('@'); at != std::string::npos) {
    std::string userinfo = rest.substr(0, at);
    rest.erase(0, at + 1);
    auto colon = userinfo.find(':');
    std::string user = percent_decode(userinfo.substr(0, colon));
    if (!user.empty()) options.username = user;
    if (colon != std::string::npos) options.password = percent_decode(userinfo.substr(colon + 1));
  }

  if (scheme == "unix") {
    if (rest.empty() || rest[0] != '/') throw InvalidArgument("unix:// URL needs a socket path");
    options.unix_socket_path = percent_decode(rest);
  } else {
    std::string hostport = rest;
    if (auto slash = rest.find('/'); slash != std::string::npos) {
      hostport = rest.substr(0, slash);
      std::string db = rest.substr(slash + 1);
      if (!db.empty()) options.db = parse_number(db, "db", url);
    }
    std::string port;
    if (!hostport.empty() && hostport[0] == '[') {  // [IPv6]:port
      auto close = hostport.find(']');
      if (close == std::string::npos) throw InvalidArgument("invalid host in Redis URL: " + url);
      options.host = hostport.substr(1, close - 1);
      if (close + 1 < hostport.size() && hostport[close + 1] == ':')
        port = hostport.substr(close + 2);
    } else if (auto colon = hostport.rfind(':'); colon != std::string::npos) {
      options.host = hostport.substr(0, colon);
      port = hostport.substr(colon + 1);
    } else {
      options.host = hostport;
    }
    if (options.host.empty()) options.host = "localhost";
    if (!port.empty()) options.port = static_cast<int>(parse_number(port, "port", url));
  }

  // Query parameters: db, and the timeouts redis-py also reads from URLs.
  std::size_t pos = 0;
  while (pos < query.size()) {
    auto amp = query.find('&', pos);
    std::string pair = query.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
    pos = amp == std::string::npos ? query.size() : amp + 1;
    auto eq = pair.find('=');
    std::string name = pair.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : percent_decode(pair.substr(eq + 1));
    if (name == "db") {
      options.db = parse_number(value, "db", url);
    } else if (name == "socket_timeout" || name == "socket_connect_timeout") {
      char* end = nullptr;
      double seconds = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0') throw InvalidArgument("invalid " + name + " in " + url);
      (name == "socket_timeout" ? options.socket_timeout : options.socket_connect_timeout) =
          seconds;
    } else if (name == "client_name") {
      options.client_name = value;
    } else if (name == "password") {
      options.password = value;
    }
  }
  options.validate();
  return options;
}

}  // namespace rlb::connection
