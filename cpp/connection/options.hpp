// Where and how to connect; shared by every transport. URLs are read in Python
// (python/redis_leaderboard/options.py), which fills these in.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codec/resp.hpp"

namespace rlb::connection {

// TLS, with redis-py's option names (ssl_*). Off unless `enabled`.
struct TlsOptions {
  enum class CertReqs { None, Optional, Required };
  bool enabled = false;
  std::optional<std::string> ca_certs;  // a PEM file of trusted CAs; none: the system store
  std::optional<std::string> ca_path;   // a directory of hashed CA files (c_rehash)
  std::optional<std::string> ca_data;   // PEM text of trusted CAs
  std::optional<std::string> certfile;  // the client's certificate chain (PEM)
  std::optional<std::string> keyfile;   // its private key (PEM); none: in certfile
  std::optional<std::string> password;  // of an encrypted keyfile
  CertReqs cert_reqs = CertReqs::Required;
  bool check_hostname = true;              // the certificate must name the host connected to
  std::optional<std::string> min_version;  // "TLSv1.2" or "TLSv1.3"; none: OpenSSL's default
  std::optional<std::string> ciphers;      // an OpenSSL cipher list (TLS 1.2 and below)

  bool verifies() const { return cert_reqs != CertReqs::None; }
};

// Sentinel: the server to use is the primary that these sentinels name `service_name`.
struct SentinelOptions {
  std::vector<std::pair<std::string, int>> sentinels;  // empty: no Sentinel
  std::string service_name;
  std::optional<std::string> username;  // of the sentinels (not of the data nodes)
  std::optional<std::string> password;
  bool tls = false;  // talk TLS to the sentinels too (with the client's TLS options)

  bool enabled() const { return !sentinels.empty(); }
};

// Durable acknowledgements: a write is acknowledged once `min_replicas` replicas have it (WAIT, or
// WAITAOF with `aof`: in their append-only file), within `timeout` seconds; else it raises
// NotReplicatedError (applied on the primary, not confirmed; never resent). Reads never wait.
struct Durability {
  int min_replicas = 0;  // 0: off (a write is acknowledged by the primary alone)
  // Seconds the server waits for the replicas (WAIT's timeout): above the ~1 s a replica may
  // take to acknowledge its AOF fsync (WAITAOF, measured on Valkey 8.1), and a fork's stall.
  double timeout = 2.0;
  bool aof = false;  // WAITAOF 0 <min_replicas> <ms> instead of WAIT (Redis/Valkey 7.2+)

  bool enabled() const { return min_replicas > 0; }
  // WAIT's (WAITAOF's) timeout argument: whole milliseconds, at least 1 (0 would wait forever).
  long long timeout_ms() const;
};

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
  std::size_t max_reply_bytes = codec::kDefaultMaxReplyBytes;
  TlsOptions tls;
  SentinelOptions sentinel;  // when enabled, host and port are those it finds
  bool readonly = false;     // READONLY in the handshake: a cluster replica serving reads
  Durability durability;     // writes wait for replicas (off by default)
  // A cluster node's connection: a request whose reply was lost and that may be resent
  // (Operation::resend_limit()) is handed back (Completion::redirected) instead of resent on
  // this connection: the cluster client resends it to whichever node serves its slot then.
  bool hand_back_resends = false;

  // "host:port", the socket path, or "'name' via Sentinel", for messages.
  std::string address() const;
  void validate() const;  // throws InvalidArgument
  // socket_connect_timeout, else socket_timeout, else none.
  std::optional<double> connect_timeout() const {
    return socket_connect_timeout ? socket_connect_timeout : socket_timeout;
  }
};

}  // namespace rlb::connection
