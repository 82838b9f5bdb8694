#include "transport/cache_channel.hpp"

#include <chrono>
#include <utility>

#include "codec/resp.hpp"
#include "errors.hpp"

namespace rlb::transport {

namespace {
// After a failed set-up (the server down, tracking refused), reads run uncached this long
// before another attempt.
constexpr auto kRetryDelay = std::chrono::seconds(1);
}  // namespace

CacheChannel::CacheChannel(const ClientOptions& options, std::shared_ptr<const TlsContext> tls,
                           Resolver& resolver, connection::CacheOptions cache_options,
                           const std::atomic<std::uint64_t>* primary_epoch)
    : options_(options),
      tls_(std::move(tls)),
      resolver_(resolver),
      cache_(std::make_shared<MetadataCache>(cache_options)),
      primary_epoch_(primary_epoch) {}

CacheChannel::~CacheChannel() = default;

void CacheChannel::drop_locked() {
  connection_.reset();
  cache_->connection_lost();
}

void CacheChannel::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  drop_locked();
  retry_after_.reset();
}

void CacheChannel::connect_locked() {
  drop_locked();
  try {
    connected_epoch_ = primary_epoch_ ? primary_epoch_->load() : 0;
    Endpoint endpoint = resolver_.resolve();
    auto connection = std::make_unique<BlockingConnection>(options_, counters_, endpoint, tls_,
                                                           /*subscriber=*/true);
    std::string id_wire;
    codec::encode_command({"CLIENT", "ID"}, id_wire);
    auto id = connection->run_raw(std::move(id_wire), 1).at(0);
    if (id.is_error()) connection::raise_error_reply(id);
    if (id.type != codec::ReplyType::Integer) {
      throw codec::ProtocolError("Protocol error: unexpected reply to CLIENT ID");
    }
    std::size_t replies = 0;
    std::string wire = cache_->tracking_wire(id.integer, replies);
    cache_->tracking_started(connection->run_raw(std::move(wire), replies));
    connection_ = std::move(connection);
    endpoint_ = std::move(endpoint);
    retry_after_.reset();
  } catch (const RedisError&) {
    // Refused (NOPERM, a server without tracking) or unreachable: reads run uncached.
    cache_->connection_lost();
    retry_after_ = Clock::now() + kRetryDelay;
  }
}

bool CacheChannel::stale_locked() const {
  // A forked child shares the parent's socket: it must never read the parent's messages.
  return connection_->broken() || fork_guard_.forked() ||
         (primary_epoch_ && primary_epoch_->load() != connected_epoch_);
}

bool CacheChannel::drain_locked(std::optional<Clock::time_point> until) {
  if (!connection_) return false;
  std::vector<codec::Reply> pushes;
  bool open = false;
  try {
    open = connection_->take_pushes(pushes, until);
    for (const auto& push : pushes) cache_->on_push(push);
  } catch (const RedisError&) {
    open = false;  // a protocol error, a message the cache does not know
  }
  if (!open) {
    drop_locked();
    return false;
  }
  return true;
}

std::optional<MetadataCache::Barrier> CacheChannel::begin(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mutex_);
  return begin_locked(prefix, true);
}

std::optional<MetadataCache::Barrier> CacheChannel::begin_nowait(const std::string& prefix) {
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return std::nullopt;
  return begin_locked(prefix, false);
}

bool CacheChannel::needs_setup(const std::string& prefix) {
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false;  // being set up
  const bool resubscribe = cache_->want_prefix(prefix);
  if (!resubscribe && connection_ && !stale_locked()) return false;
  return !retry_after_ || Clock::now() >= *retry_after_;
}

std::optional<MetadataCache::Barrier> CacheChannel::begin_locked(const std::string& prefix,
                                                                 bool may_connect) {
  const bool resubscribe = cache_->want_prefix(prefix);
  if (connection_ && stale_locked()) drop_locked();
  if (fork_guard_.forked()) fork_guard_ = ForkGuard();
  if (resubscribe || !connection_) {
    if (!may_connect) return std::nullopt;
    if (retry_after_ && Clock::now() < *retry_after_) return std::nullopt;
    connect_locked();
    if (!connection_) return std::nullopt;
  }
  auto barrier = cache_->barrier();
  if (!barrier) return std::nullopt;
  if (!connection_->write_unanswered(barrier->wire)) {
    drop_locked();
    return std::nullopt;
  }
  return barrier;
}

bool CacheChannel::await(const MetadataCache::Barrier& barrier, Clock::time_point until) {
  std::lock_guard<std::mutex> lock(mutex_);
  while (!cache_->passed(barrier)) {
    // Written on a connection dropped since (another thread's read found it on another server,
    // or broken): it will never pass, and the connection now in place is not in doubt.
    if (cache_->hopeless(barrier)) return false;
    if (Clock::now() >= until) {  // late: doubt
      drop_locked();
      return false;
    }
    if (!drain_locked(until)) return false;
  }
  return true;
}

bool CacheChannel::poll(const MetadataCache::Barrier& barrier) {
  if (cache_->passed(barrier)) return true;
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  drain_locked(std::nullopt);
  return cache_->passed(barrier);
}

bool CacheChannel::drain() {
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return true;
  return drain_locked(std::nullopt);
}

bool CacheChannel::on_server(const Endpoint& endpoint) {
  std::lock_guard<std::mutex> lock(mutex_);
  return on_server_locked(endpoint);
}

bool CacheChannel::on_server_nowait(const Endpoint& endpoint) {
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  return lock.owns_lock() && on_server_locked(endpoint);
}

bool CacheChannel::on_server_locked(const Endpoint& endpoint) {
  if (!connection_) return false;
  if (endpoint.host == endpoint_.host && endpoint.port == endpoint_.port &&
      endpoint.unix_socket_path == endpoint_.unix_socket_path) {
    return true;
  }
  drop_locked();
  return false;
}

int CacheChannel::fileno() {
  std::lock_guard<std::mutex> lock(mutex_);
  return connection_ ? connection_->native_handle() : -1;
}

}  // namespace rlb::transport
