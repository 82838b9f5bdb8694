#include "connection/tls.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "errors.hpp"

namespace rlb::connection {

namespace {

// The reason OpenSSL queued last ("wrong version number"), or `fallback`; clears the queue.
std::string openssl_reason(const char* fallback) {
  std::string reason;
  while (unsigned long code = ERR_get_error()) {
    const char* text = ERR_reason_error_string(code);
    reason = text != nullptr ? text : "error " + std::to_string(code);
  }
  return reason.empty() ? fallback : reason;
}

bool is_ip_address(const std::string& host) {
  unsigned char buffer[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

int password_callback(char* buffer, int size, int, void* user_data) {
  const auto* password = static_cast<const std::string*>(user_data);
  if (password == nullptr || password->size() > static_cast<std::size_t>(size)) return 0;
  std::memcpy(buffer, password->data(), password->size());
  return static_cast<int>(password->size());
}

// The system trust store for an OpenSSL linked into the module (REDIS_LEADERBOARD_STATIC_RUNTIME,
// the glibc 2.31 wheel): its default paths are its build's OPENSSLDIR (/etc/ssl: Debian's
// certs/ folder, nothing on RHEL), so unless SSL_CERT_FILE / SSL_CERT_DIR name one, the first CA
// bundle found where distributions keep it is loaded too (the list Go's crypto/x509 reads).
void load_system_ca_bundle([[maybe_unused]] SSL_CTX* context) {
#if defined(RLB_PROBE_CA_BUNDLES)
  if (std::getenv(X509_get_default_cert_file_env()) != nullptr ||
      std::getenv(X509_get_default_cert_dir_env()) != nullptr) {
    return;
  }
  for (const char* bundle :
       {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
        "/etc/ssl/ca-bundle.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
        "/etc/ssl/cert.pem"}) {
    if (::access(bundle, R_OK) == 0) {
      if (SSL_CTX_load_verify_locations(context, bundle, nullptr) != 1) ERR_clear_error();
      return;
    }
  }
#endif
}

[[noreturn]] void load_failed(const std::string& what, const std::string& value) {
  throw ConnectionError("TLS: cannot load " + what + " '" + value +
                        "': " + openssl_reason("unknown error"));
}

}  // namespace

// ---- TlsContext ------------------------------------------------------------------------------

TlsContext::TlsContext(const TlsOptions& options) : options_(options) {
  ERR_clear_error();
  context_ = SSL_CTX_new(TLS_client_method());
  if (context_ == nullptr) throw ConnectionError("TLS: " + openssl_reason("cannot create context"));
  try {
    if (options_.min_version) {
      int version = *options_.min_version == "TLSv1.3" ? TLS1_3_VERSION : TLS1_2_VERSION;
      SSL_CTX_set_min_proto_version(context_, version);
    }
    if (options_.ciphers && SSL_CTX_set_cipher_list(context_, options_.ciphers->c_str()) != 1) {
      ERR_clear_error();
      throw InvalidArgument("ssl_ciphers: no cipher matches '" + *options_.ciphers + "'");
    }
    if (options_.verifies()) {
      SSL_CTX_set_verify(context_, SSL_VERIFY_PEER, nullptr);
      if (options_.ca_certs || options_.ca_path) {
        const char* file = options_.ca_certs ? options_.ca_certs->c_str() : nullptr;
        const char* path = options_.ca_path ? options_.ca_path->c_str() : nullptr;
        if (SSL_CTX_load_verify_locations(context_, file, path) != 1) {
          load_failed(options_.ca_certs ? "ssl_ca_certs" : "ssl_ca_path",
                      options_.ca_certs ? *options_.ca_certs : *options_.ca_path);
        }
      }
      if (options_.ca_data) {
        std::unique_ptr<BIO, decltype(&BIO_free)> pem(
            BIO_new_mem_buf(options_.ca_data->data(), static_cast<int>(options_.ca_data->size())),
            &BIO_free);
        X509_STORE* store = SSL_CTX_get_cert_store(context_);
        int added = 0;
        while (X509* cert = PEM_read_bio_X509(pem.get(), nullptr, nullptr, nullptr)) {
          X509_STORE_add_cert(store, cert);
          X509_free(cert);
          ++added;
        }
        ERR_clear_error();  // the end of the PEM text
        if (added == 0) throw ConnectionError("TLS: ssl_ca_data holds no PEM certificate");
      }
      // No CA given: the system's trust store, as Python's ssl.create_default_context().
      if (!options_.ca_certs && !options_.ca_path && !options_.ca_data &&
          SSL_CTX_set_default_verify_paths(context_) != 1) {
        throw ConnectionError("TLS: cannot load the system trust store: " +
                              openssl_reason("unknown error"));
      }
      if (!options_.ca_certs && !options_.ca_path && !options_.ca_data) {
        load_system_ca_bundle(context_);
      }
    } else {
      SSL_CTX_set_verify(context_, SSL_VERIFY_NONE, nullptr);
    }
    if (options_.certfile) {
      SSL_CTX_set_default_passwd_cb(context_, password_callback);
      SSL_CTX_set_default_passwd_cb_userdata(
          context_, options_.password ? const_cast<std::string*>(&*options_.password) : nullptr);
      if (SSL_CTX_use_certificate_chain_file(context_, options_.certfile->c_str()) != 1) {
        load_failed("ssl_certfile", *options_.certfile);
      }
      const std::string& key = options_.keyfile ? *options_.keyfile : *options_.certfile;
      if (SSL_CTX_use_PrivateKey_file(context_, key.c_str(), SSL_FILETYPE_PEM) != 1) {
        load_failed("ssl_keyfile", key);
      }
      if (SSL_CTX_check_private_key(context_) != 1) {
        load_failed("ssl_keyfile (it does not match ssl_certfile)", key);
      }
    }
  } catch (...) {
    SSL_CTX_free(context_);
    throw;
  }
}

TlsContext::~TlsContext() { SSL_CTX_free(context_); }

std::shared_ptr<const TlsContext> make_tls_context(const TlsOptions& options) {
  if (!options.enabled) return nullptr;
  return std::make_shared<const TlsContext>(options);
}

// ---- TlsSession ------------------------------------------------------------------------------

TlsSession::TlsSession(std::shared_ptr<const TlsContext> context, const std::string& host,
                       std::string address)
    : context_(std::move(context)), address_(std::move(address)) {
  ERR_clear_error();
  ssl_ = SSL_new(context_->native());
  if (ssl_ == nullptr) throw ConnectionError("TLS: " + openssl_reason("cannot create session"));
  in_ = BIO_new(BIO_s_mem());
  out_ = BIO_new(BIO_s_mem());
  if (in_ == nullptr || out_ == nullptr) {
    BIO_free(in_);
    BIO_free(out_);
    SSL_free(ssl_);
    throw ConnectionError("TLS: out of memory");
  }
  BIO_set_mem_eof_return(in_, -1);  // nothing fed yet is "wait for more", not end of stream
  SSL_set_bio(ssl_, in_, out_);     // owned by ssl_ from here
  SSL_set_connect_state(ssl_);
  const bool ip = is_ip_address(host);
  if (!ip) SSL_set_tlsext_host_name(ssl_, host.c_str());  // SNI names hosts, never addresses
  const auto& options = context_->options();
  if (options.verifies() && options.check_hostname) {
    if (ip) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), host.c_str());
    } else {
      SSL_set_hostflags(ssl_, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      SSL_set1_host(ssl_, host.c_str());
    }
  }
}

TlsSession::~TlsSession() { SSL_free(ssl_); }

void TlsSession::fail(const char* doing, int result) {
  int error = SSL_get_error(ssl_, result);
  std::string reason;
  long verify = SSL_get_verify_result(ssl_);
  if (!established_ && verify != X509_V_OK) {
    reason = std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
    switch (verify) {
      case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
      case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
      case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
      case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
        reason += " (unknown CA: give the server's CA as ssl_ca_certs)";
        break;
      case X509_V_ERR_HOSTNAME_MISMATCH:
      case X509_V_ERR_IP_ADDRESS_MISMATCH:
        reason += " (the certificate is not valid for the host connected to)";
        break;
      default:
        break;
    }
    ERR_clear_error();
  } else if (error == SSL_ERROR_SSL) {
    reason = openssl_reason("protocol error");
  } else {
    ERR_clear_error();
    reason = "unexpected end of stream";
  }
  throw ConnectionError(std::string("Error ") + doing + " " + address_ + ": TLS: " + reason);
}

bool TlsSession::handshake() {
  if (established_) return true;
  ERR_clear_error();
  int result = SSL_do_handshake(ssl_);
  if (result == 1) return established_ = true;
  int error = SSL_get_error(ssl_, result);
  if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) return false;
  fail("connecting to", result);
}

void TlsSession::feed(const char* data, std::size_t size) {
  BIO_write(in_, data, static_cast<int>(size));  // a memory BIO takes everything
}

void TlsSession::write(std::string_view plain) {
  ERR_clear_error();
  while (!plain.empty()) {
    std::size_t written = 0;
    int result = SSL_write_ex(ssl_, plain.data(), plain.size(), &written);
    if (result != 1) fail("writing to", result);
    plain.remove_prefix(written);
  }
}

bool TlsSession::read(std::string& out) {
  ERR_clear_error();
  for (;;) {
    char buffer[16 * 1024];  // one TLS record at most
    std::size_t size = 0;
    int result = SSL_read_ex(ssl_, buffer, sizeof buffer, &size);
    if (result == 1) {
      out.append(buffer, size);
      continue;
    }
    int error = SSL_get_error(ssl_, result);
    if (error == SSL_ERROR_WANT_READ) return true;
    if (error == SSL_ERROR_ZERO_RETURN) return false;
    fail("reading from", result);
  }
}

bool TlsSession::has_output() const { return BIO_ctrl_pending(out_) > 0; }

void TlsSession::append_output(std::string& out) {
  std::size_t pending = BIO_ctrl_pending(out_);
  if (pending == 0) return;
  std::size_t at = out.size();
  out.resize(at + pending);
  int got = BIO_read(out_, out.data() + at, static_cast<int>(pending));
  out.resize(at + static_cast<std::size_t>(got > 0 ? got : 0));
}

std::string TlsSession::take_output() {
  std::string out;
  append_output(out);
  return out;
}

}  // namespace rlb::connection
