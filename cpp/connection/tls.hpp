// TLS without I/O, for both drivers: OpenSSL on memory BIOs. A driver feeds what the socket
// read (ciphertext) and writes what take_output() gives; the connection core on top sees only
// plaintext. Plaintext connections never construct any of this, so they pay nothing for it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "connection/options.hpp"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;
typedef struct bio_st BIO;

namespace rlb::connection {

// Seconds a TLS handshake may take when the options give no timeout: a TLS client on a
// plaintext port would otherwise wait for ever (Redis waits for a newline that never comes).
inline constexpr double kTlsHandshakeTimeout = 5.0;

// The TLS settings of a client, loaded once (CA store, client certificate, versions, ciphers)
// and shared by its connections. Throws ConnectionError naming a file that cannot be loaded.
class TlsContext {
 public:
  explicit TlsContext(const TlsOptions& options);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  const TlsOptions& options() const { return options_; }
  SSL_CTX* native() const { return context_; }

 private:
  TlsOptions options_;
  SSL_CTX* context_ = nullptr;
};

// A context for `options`, or nullptr when TLS is off.
std::shared_ptr<const TlsContext> make_tls_context(const TlsOptions& options);

// One connection's TLS session (client side). `host` is sent as SNI (unless an IP address) and
// checked against the certificate (if the options say so). Errors throw ConnectionError naming
// the reason ("certificate has expired", "hostname mismatch", ...), with `address` for context.
class TlsSession {
 public:
  TlsSession(std::shared_ptr<const TlsContext> context, const std::string& host,
             std::string address);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Advances the handshake with what was fed; true once it is complete. Its messages are in
  // take_output().
  bool handshake();
  bool established() const { return established_; }
  // Ciphertext the socket read.
  void feed(const char* data, std::size_t size);
  // Plaintext to send: encrypted into the output.
  void write(std::string_view plain);
  // Decrypts what was fed, appending the plaintext to `out`. False once the server closed the
  // session (close_notify); throws ConnectionError for a broken record.
  bool read(std::string& out);
  // Ciphertext to write to the socket (records, handshake messages, alerts).
  bool has_output() const;
  std::string take_output();
  // Appends it instead (the driver's write buffer).
  void append_output(std::string& out);

 private:
  [[noreturn]] void fail(const char* doing, int result);

  std::shared_ptr<const TlsContext> context_;
  std::string address_;
  SSL* ssl_ = nullptr;
  BIO* in_ = nullptr;   // ciphertext fed, read by OpenSSL (owned by ssl_)
  BIO* out_ = nullptr;  // ciphertext OpenSSL wrote, for the socket (owned by ssl_)
  bool established_ = false;
};

}  // namespace rlb::connection
