#include "transport/blocking_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <utility>

#include "errors.hpp"
#include "transport/cache_channel.hpp"

namespace rlb::transport {

namespace asio = boost::asio;
using codec::Reply;
using leaderboard::Operation;
using leaderboard::Result;

namespace {
std::atomic<InterruptCheck> interrupt_check{nullptr};
// Off on the client's own threads (the Sentinel watcher): the check takes the GIL, which the
// thread closing the client may hold while it waits for them.
thread_local bool interrupt_checks_off = false;

Clock::duration seconds(double value) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(value));
}
}  // namespace

void set_interrupt_check(InterruptCheck check) { interrupt_check.store(check); }

void disable_interrupt_checks() { interrupt_checks_off = true; }

// ---------------------------------------------------------------------------------------------
// BlockingConnection: a non-blocking Asio socket driven with poll(), so that every wait has a
// deadline without running an io_context per call; the core decides everything else.

BlockingConnection::BlockingConnection(const ClientOptions& options, Counters& counters,
                                       Endpoint endpoint, std::shared_ptr<const TlsContext> tls,
                                       bool subscriber, Resolver* resolver,
                                       std::optional<Clock::time_point> connect_cap)
    : options_(options),
      counters_(counters),
      endpoint_(std::move(endpoint)),
      resolver_(resolver),
      subscriber_(subscriber),
      tls_context_(std::move(tls)),
      core_(options, SIZE_MAX, counters, 0, connection::Core::SplitReads::kWhenIdle),
      socket_(io_) {
  if (subscriber) core_.accept_pushes();
  connect(connect_cap);
}

void BlockingConnection::on_interrupt() {
  if (interrupt_checks_off) return;
  InterruptCheck check = interrupt_check.load();
  if (check != nullptr) check();  // may throw (KeyboardInterrupt): the caller closes
}

// A wait that runs the interrupt check wakes at least this often to run it: a signal handled
// before poll() began (after the GIL was released), or on another thread, interrupts no poll(),
// and without a socket timeout the call would then wait for Redis forever, Ctrl+C lost.
constexpr int kInterruptSliceMs = 200;

bool BlockingConnection::wait(short events, const std::optional<Clock::time_point>& until,
                              const char* doing) {
  const bool checks = !interrupt_checks_off && interrupt_check.load() != nullptr;
  for (;;) {
    int timeout_ms = -1;
    if (until) {
      auto left = std::chrono::duration_cast<std::chrono::microseconds>(*until - Clock::now());
      timeout_ms = left.count() <= 0 ? 0 : static_cast<int>((left.count() + 999) / 1000);
    }
    int slice_ms = timeout_ms;
    if (checks && (slice_ms < 0 || slice_ms > kInterruptSliceMs)) slice_ms = kInterruptSliceMs;
    pollfd fd{socket_.native_handle(), events, 0};
    int ready = ::poll(&fd, 1, slice_ms);
    if (ready > 0) return true;  // readiness, hang-up or error: the next read/write tells which
    if (ready == 0) {
      if (slice_ms == timeout_ms) return false;  // the deadline
      on_interrupt();                            // a signal poll() did not see
      continue;
    }
    if (errno == EINTR) {
      on_interrupt();
      continue;
    }
    throw ConnectionError(std::string("Error ") + doing + " " + endpoint_.address() + ": " +
                          std::strerror(errno));
  }
}

void BlockingConnection::connect(std::optional<Clock::time_point> cap) {
  const auto timeout = options_.connect_timeout();
  std::optional<Clock::time_point> until;
  if (timeout) until = Clock::now() + seconds(*timeout);
  if (cap && (!until || *cap < *until)) until = cap;
  broken_ = true;  // until the end
  open_socket(until);
  if (tls_context_) {
    // A TLS handshake with a server that never answers it (a plaintext port waits for a
    // newline that never comes) must not hang: without a timeout it gets kTlsHandshakeTimeout.
    if (!until) until = Clock::now() + seconds(connection::kTlsHandshakeTimeout);
    tls_handshake(until);
  }
  broken_ = false;
  core_.connected(Clock::now());
}

void BlockingConnection::open_socket(const std::optional<Clock::time_point>& until) {
  std::vector<asio::generic::stream_protocol::endpoint> endpoints;
  boost::system::error_code ec;
  if (!endpoint_.unix_socket_path.empty()) {
    endpoints.emplace_back(asio::local::stream_protocol::endpoint(endpoint_.unix_socket_path));
  } else {
    asio::ip::tcp::resolver resolver(io_);
    auto results = resolver.resolve(endpoint_.host, std::to_string(endpoint_.port), ec);
    if (ec) {
      throw ConnectionError("Error connecting to " + endpoint_.address() + ": " + ec.message());
    }
    for (const auto& result : results) endpoints.emplace_back(result.endpoint());
  }

  std::string last_error = "no address";
  for (const auto& endpoint : endpoints) {
    boost::system::error_code ignored;
    socket_.close(ignored);
    socket_.open(endpoint.protocol(), ec);
    if (ec) {
      last_error = ec.message();
      continue;
    }
    socket_.non_blocking(true, ignored);
    // ::connect, not socket_.connect: Asio's blocking connect waits without a deadline even on
    // a non-blocking socket.
    if (::connect(socket_.native_handle(), endpoint.data(),
                  static_cast<socklen_t>(endpoint.size())) != 0) {
      ec.assign(errno, boost::system::system_category());
    } else {
      ec.clear();
    }
    if (ec == asio::error::in_progress || ec == asio::error::would_block) {
      if (!wait(POLLOUT, until, "connecting to")) {  // a refusal shows up as SO_ERROR below
        throw TimeoutError("Timeout connecting to " + endpoint_.address());
      }
      int error = 0;
      socklen_t size = sizeof error;
      if (::getsockopt(socket_.native_handle(), SOL_SOCKET, SO_ERROR, &error, &size) != 0) {
        error = errno;
      }
      ec.assign(error, boost::system::system_category());
    }
    if (!ec) {
      if (endpoint_.unix_socket_path.empty()) {
        socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
        socket_.set_option(asio::socket_base::keep_alive(true), ignored);
      }
      return;
    }
    last_error = ec.message();
  }
  throw ConnectionError("Error connecting to " + endpoint_.address() + ": " + last_error);
}

void BlockingConnection::tls_handshake(const std::optional<Clock::time_point>& until) {
  tls_ =
      std::make_unique<connection::TlsSession>(tls_context_, endpoint_.host, endpoint_.address());
  char buffer[16 * 1024];
  for (;;) {
    const bool done = tls_->handshake();
    std::string out = tls_->take_output();
    std::size_t written = 0;
    while (written < out.size()) {
      boost::system::error_code ec;
      written += socket_.write_some(asio::buffer(out.data() + written, out.size() - written), ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) {
        if (!wait(POLLOUT, until, "connecting to")) {
          throw TimeoutError("Timeout connecting to " + endpoint_.address() + " (TLS handshake)");
        }
      } else if (ec && ec != asio::error::interrupted) {
        throw ConnectionError("Error connecting to " + endpoint_.address() +
                              ": TLS handshake: " + ec.message());
      }
    }
    if (done) return;
    if (!wait(POLLIN, until, "connecting to")) {
      throw TimeoutError("Timeout connecting to " + endpoint_.address() + " (TLS handshake)");
    }
    boost::system::error_code ec;
    std::size_t n = socket_.read_some(asio::buffer(buffer), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again ||
        ec == asio::error::interrupted) {
      continue;
    }
    if (ec) {
      throw ConnectionError(
          "Error connecting to " + endpoint_.address() + ": TLS handshake: " +
          (ec == asio::error::eof ? "the server closed the connection" : ec.message()));
    }
    tls_->feed(buffer, n);
  }
}

void BlockingConnection::close_broken(const std::exception_ptr& why) {
  broken_ = true;
  boost::system::error_code ignored;
  socket_.close(ignored);
  core_.abort(why);
}

bool BlockingConnection::send(const char* data, std::size_t size) {
  std::size_t written = 0;
  boost::system::error_code ec;
  while (written < size) {
    written += socket_.write_some(asio::buffer(data + written, size - written), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      if (!wait(POLLOUT, core_.next_deadline(), "writing to")) {
        core_.tick(Clock::now());  // the written requests are overdue: the core gives up
        return false;
      }
    } else if (ec == asio::error::interrupted) {
      on_interrupt();
    } else if (ec) {
      core_.lost(std::make_exception_ptr(ConnectionError("Error writing to " + endpoint_.address() +
                                                         ": " + ec.message())),
                 Clock::now());
      return false;
    }
  }
  return true;
}

void BlockingConnection::write_all(const std::string& bytes) {
  if (tls_) {
    try {
      tls_->write(bytes);
    } catch (const ConnectionError&) {
      core_.lost(std::current_exception(), Clock::now());
      return;
    }
    std::string out = tls_->take_output();
    if (!send(out.data(), out.size())) return;
  } else if (!send(bytes.data(), bytes.size())) {
    return;
  }
  core_.wrote();
  just_wrote_ = true;
}

void BlockingConnection::read_once(bool wait_first, bool wait_if_empty) {
  if (wait_first && !wait(POLLIN, core_.next_deadline(), "reading from")) {
    core_.tick(Clock::now());
    return;
  }
  char buffer[64 * 1024];
  boost::system::error_code ec;
  std::size_t n = socket_.read_some(asio::buffer(buffer), ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) {
    if (wait_if_empty && !wait(POLLIN, core_.next_deadline(), "reading from")) {
      core_.tick(Clock::now());
    }
  } else if (ec == asio::error::interrupted) {
    on_interrupt();
  } else if (ec) {
    core_.lost(std::make_exception_ptr(ConnectionError(
                   ec == asio::error::eof
                       ? "Connection closed by server " + endpoint_.address()
                       : "Error reading from " + endpoint_.address() + ": " + ec.message())),
               Clock::now());
  } else if (!tls_) {
    core_.received(buffer, n, Clock::now());
  } else {
    plain_.clear();
    bool open = true;
    try {
      tls_->feed(buffer, n);
      open = tls_->read(plain_);
    } catch (const ConnectionError&) {
      core_.lost(std::current_exception(), Clock::now());
      return;
    }
    if (!plain_.empty()) core_.received(plain_.data(), plain_.size(), Clock::now());
    if (!open) {
      core_.lost(std::make_exception_ptr(
                     ConnectionError("Connection closed by server " + endpoint_.address())),
                 Clock::now());
    } else if (tls_->has_output() && core_.connected()) {  // e.g. a TLS 1.3 key update
      std::string out = tls_->take_output();
      send(out.data(), out.size());
    }
  }
}

void BlockingConnection::reconnect() {
  boost::system::error_code ignored;
  socket_.close(ignored);
  tls_.reset();
  just_wrote_ = false;
  try {
    // Within the requests' deadline: a read sent again does not get more time for it (the
    // core's hint may be early: tick() makes it exact, failing what is overdue).
    core_.tick(Clock::now());
    if (resolver_) endpoint_ = resolver_->resolve(core_.next_deadline());  // Sentinel: the primary
    connect(core_.next_deadline());
    counters_.connected(true);
    connection::observe(connection::Signal::reconnected, endpoint_.address());
  } catch (const RedisError&) {
    core_.connect_failed(std::current_exception());  // the requests fail with the reason
    close_broken(std::current_exception());
  }
}

void BlockingConnection::pump() {
  if (core_.take_close() || (!core_.connected() && !broken_)) {
    // Re-sends wait (reads, submission ids); a subscriber's socket is never
    // replaced under its owner (the Sentinel watcher shuts it down to stop).
    if (core_.wants_connection() && !subscriber_) return reconnect();
    // The core gave the connection up (or lost it): this driver does not reconnect within a
    // call; whatever is unfinished fails with the reason.
    auto why = core_.last_error();
    close_broken(why ? why
                     : std::make_exception_ptr(
                           ConnectionError("Connection to " + endpoint_.address() + " is closed")));
    return;
  }
  if (broken_) {
    core_.abort(std::make_exception_ptr(
        ConnectionError("Connection to " + endpoint_.address() + " is closed")));
    return;
  }
  std::string out = core_.take_write();
  if (!out.empty()) return write_all(out);
  // A reply is never there right after the write: wait before the first read.
  read_once(std::exchange(just_wrote_, false));
}

std::uint64_t BlockingConnection::submit(std::unique_ptr<connection::Exchange> exchange,
                                         Clock::time_point started) {
  const std::uint64_t id = next_id_++;
  core_.submit(id, std::move(exchange), started);
  return id;
}

void BlockingConnection::flush() {
  while (!broken_) {
    std::string out = core_.take_write();
    if (out.empty()) break;
    write_all(out);
  }
}

bool BlockingConnection::take_pushes(std::vector<Reply>& out,
                                     std::optional<Clock::time_point> until) {
  const std::size_t before = out.size();
  auto collect = [&] {
    for (auto& completion : core_.take_completions()) {
      if (completion.id == connection::Core::kPushId) {
        out.push_back(std::move(completion.replies.at(0)));
      }
    }
  };
  collect();
  for (;;) {
    if (core_.take_close() || broken_ || !core_.connected()) {
      if (!broken_) {
        auto why = core_.last_error();
        close_broken(why ? why
                         : std::make_exception_ptr(ConnectionError(
                               "Connection to " + endpoint_.address() + " is closed")));
      }
      return false;
    }
    if (out.size() > before) return true;
    if (until) {
      if (!wait(POLLIN, until, "reading from")) return true;  // nothing yet: still open
    } else {
      pollfd fd{socket_.native_handle(), POLLIN, 0};
      if (::poll(&fd, 1, 0) <= 0) return true;
    }
    read_once(false, false);
    collect();
  }
}

bool BlockingConnection::write_unanswered(const std::string& wire) {
  if (broken_ || !core_.connected()) return false;
  write_all(wire);
  just_wrote_ = false;
  return !broken_ && core_.connected();
}

Completion BlockingConnection::wait_for(std::uint64_t id) {
  try {
    for (;;) {
      for (auto& completion : core_.take_completions()) done_.push_back(std::move(completion));
      for (auto it = done_.begin(); it != done_.end(); ++it) {
        if (it->id != id) continue;
        Completion found = std::move(*it);
        done_.erase(it);
        // E.g. unasked bytes after this reply: answered, then closed. The completions of the
        // other requests (failed with the connection) stay in done_ for their wait().
        if (core_.take_close()) close_broken(core_.last_error());
        return found;
      }
      if (broken_ && core_.outstanding() == 0 && !core_.has_completions()) {
        // Nothing can complete `id` any more (its completion was taken by an earlier wait).
        return Completion(id, {}, {},
                          std::make_exception_ptr(ConnectionError(
                              "Connection to " + endpoint_.address() + " is closed")));
      }
      pump();
    }
  } catch (...) {
    // Interrupted (KeyboardInterrupt) or a wait that failed: replies may still be on their
    // way, so the connection can never answer another call.
    close_broken(std::make_exception_ptr(
        ConnectionError("Connection to " + options_.address() + " was interrupted")));
    done_.clear();
    throw;
  }
}

Result BlockingConnection::run(std::unique_ptr<Operation> operation) {
  const std::uint64_t id = next_id_++;
  core_.submit(id, std::move(operation), Clock::now());
  Completion completion = wait_for(id);
  if (completion.error) std::rethrow_exception(completion.error);
  return std::move(completion.result);
}

std::vector<Reply> BlockingConnection::run_raw(std::string wire, std::size_t count,
                                               std::optional<Clock::time_point> deadline) {
  const std::uint64_t id = next_id_++;
  // The core's deadline is `started` + socket_timeout: started earlier, it comes by `deadline`.
  auto started = Clock::now();
  if (deadline && options_.socket_timeout) {
    started =
        std::min(started, *deadline - std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(*options_.socket_timeout)));
  }
  core_.submit_raw(id, std::move(wire), count, started);
  Completion completion = wait_for(id);
  if (completion.error) std::rethrow_exception(completion.error);
  return std::move(completion.replies);
}

void BlockingConnection::run_pipelined(std::size_t window,
                                       const std::function<std::unique_ptr<Operation>()>& next,
                                       const std::function<void(Result)>& done) {
  window = std::max<std::size_t>(window, 1);
  std::deque<std::uint64_t> in_flight;  // submitted, results not handed to `done` yet
  try {
    for (auto operation = next(); operation; operation = next()) {
      const std::uint64_t id = next_id_++;
      core_.submit(id, std::move(operation), Clock::now());
      in_flight.push_back(id);
      // Written at once, so the server works on it while `next` builds the one after.
      while (!broken_) {
        std::string out = core_.take_write();
        if (out.empty()) break;
        write_all(out);
      }
      while (in_flight.size() >= window) {
        Completion completion = wait_for(in_flight.front());
        in_flight.pop_front();
        if (completion.error) std::rethrow_exception(completion.error);
        done(std::move(completion.result));
      }
    }
    while (!in_flight.empty()) {
      Completion completion = wait_for(in_flight.front());
      in_flight.pop_front();
      if (completion.error) std::rethrow_exception(completion.error);
      done(std::move(completion.result));
    }
  } catch (...) {
    // Keep the connection in step: read what was asked for, unless it is broken already.
    while (!in_flight.empty() && !broken_) {
      try {
        wait_for(in_flight.front());
      } catch (...) {
        break;  // the connection is broken now; the lease drops it
      }
      in_flight.pop_front();
    }
    done_.clear();
    throw;
  }
}

bool BlockingConnection::reusable() {
  if (broken_ || fork_guard_.forked() || core_.outstanding() > 0) return false;
  // Idle, nothing may be readable: readiness means the server closed (EOF) or misbehaved.
  pollfd fd{socket_.native_handle(), POLLIN, 0};
  if (::poll(&fd, 1, 0) == 0) return true;
  if (!tls_) return false;
  // With TLS, records that hold no reply may come unasked (TLS 1.3 session tickets): read
  // them; any plaintext, the end of the session or an error still means not reusable.
  for (;;) {
    char buffer[16 * 1024];
    boost::system::error_code ec;
    std::size_t n = socket_.read_some(asio::buffer(buffer), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) return true;
    if (ec) return false;
    plain_.clear();
    try {
      tls_->feed(buffer, n);
      if (!tls_->read(plain_) || !plain_.empty()) return false;
    } catch (const ConnectionError&) {
      return false;
    }
  }
}

std::optional<Clock::time_point> turn_until(std::optional<Clock::time_point> deadline, bool last) {
  if (!deadline || last) return deadline;
  constexpr Clock::duration kMinTurn = std::chrono::milliseconds(50);
  const auto now = Clock::now();
  const auto left = *deadline - now;
  return now + std::max<Clock::duration>(left / 2, std::min(left, kMinTurn));
}

// ---------------------------------------------------------------------------------------------
// BlockingClient: a pool of connections; a call borrows one for its whole operation.

class BlockingClient::Lease {
 public:
  explicit Lease(BlockingClient& client,
                 std::optional<Clock::time_point> connect_cap = std::nullopt)
      : client_(client), connection_(client.acquire(connect_cap)) {}
  ~Lease() { client_.release(std::move(connection_)); }
  BlockingConnection& operator*() { return *connection_; }

 private:
  BlockingClient& client_;
  std::unique_ptr<BlockingConnection> connection_;
};

BlockingClient::BlockingClient(ClientOptions options, std::optional<connection::CacheOptions> cache)
    : BlockingClient((options.validate(), std::move(options)), nullptr, std::move(cache)) {}

BlockingClient::BlockingClient(ClientOptions options, std::shared_ptr<const TlsContext> tls,
                               std::optional<connection::CacheOptions> cache)
    : options_(std::move(options)),
      tls_(tls ? std::move(tls) : connection::make_tls_context(options_.tls)),
      resolver_(options_, tls_) {
  if (cache) {
    cache_channel_ = std::make_unique<CacheChannel>(options_, tls_, resolver_, *cache, &epoch_);
  }
  if (options_.sentinel.enabled()) {
    // A new primary: connections to the old one are not reused (those in use finish their
    // call); the next connection asks the sentinels again.
    watcher_ = std::make_unique<SentinelWatcher>(options_, tls_, resolver_, [this] { ++epoch_; });
  }
}

BlockingClient::~BlockingClient() {
  watcher_.reset();
  cache_channel_.reset();
}

std::unique_ptr<BlockingConnection> BlockingClient::acquire(
    std::optional<Clock::time_point> connect_cap) {
  const std::uint64_t epoch = epoch_.load();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!idle_.empty()) {
      auto connection = std::move(idle_.back());
      idle_.pop_back();
      if (connection->epoch == epoch && connection->reusable()) return connection;
      ++dropped_;
    }
  }
  // Asking the sentinels (if any) and opening the socket, together within the connect timeout
  // (and by connect_cap).
  if (const auto timeout = options_.connect_timeout()) {
    const auto by = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(*timeout));
    if (!connect_cap || by < *connect_cap) connect_cap = by;
  }
  auto connection = std::make_unique<BlockingConnection>(
      options_, counters_, resolver_.resolve(connect_cap), tls_, false, &resolver_, connect_cap);
  connection->epoch = epoch;
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.connected(dropped_ > 0);
  if (dropped_ > 0) {
    --dropped_;
    connection::observe(connection::Signal::reconnected, connection->endpoint().address());
  }
  return connection;
}

void BlockingClient::release(std::unique_ptr<BlockingConnection> connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (connection->broken() || connection->epoch != epoch_.load()) {
    ++dropped_;
  } else {
    idle_.push_back(std::move(connection));
  }
}

Result BlockingClient::run(std::unique_ptr<Operation> operation) {
  if (cache_channel_ && operation->cached_metadata_prefix()) {
    return run_cached(std::move(operation));
  }
  Lease connection(*this);
  return (*connection).run(std::move(operation));
}

// A read through the client-side cache: a barrier on the invalidation connection, then the
// read's steps (connection::CachedRead) on one data connection.
Result BlockingClient::run_cached(std::unique_ptr<Operation> operation) {
  auto barrier = cache_channel_->begin(*operation->cached_metadata_prefix());
  if (!barrier) {  // no invalidation connection: the read as it is, uncached
    Lease connection(*this);
    return (*connection).run(std::move(operation));
  }
  auto read = connection::CachedRead::make(cache_channel_->cache(), std::move(operation), *barrier);
  Lease connection(*this);
  using Step = connection::CachedRead::Step;
  const std::function<bool()> on_barrier_server = [&] {
    return cache_channel_->on_server((*connection).endpoint());
  };
  for (;;) {
    switch (read->next(on_barrier_server)) {
      case Step::Run:
        (*connection).run(read->operation());
        break;
      case Step::AwaitBarrier: {
        auto wait =
            std::chrono::duration<double>(std::min(options_.socket_timeout.value_or(1.0), 1.0));
        read->barrier_passed(cache_channel_->await(
            *barrier, Clock::now() + std::chrono::duration_cast<Clock::duration>(wait)));
        break;
      }
      case Step::Done:
        return read->result();
    }
  }
}

void BlockingClient::run_pipelined(std::size_t window,
                                   const std::function<std::unique_ptr<Operation>()>& next,
                                   const std::function<void(Result)>& done) {
  Lease connection(*this);
  (*connection).run_pipelined(window, next, done);
}

Reply BlockingClient::execute_raw(const std::vector<std::string>& argv,
                                  std::optional<Clock::time_point> deadline) {
  std::vector<std::string_view> views(argv.begin(), argv.end());
  std::string wire;
  codec::encode_command(views, wire);
  Lease connection(*this, deadline);
  return std::move((*connection).run_raw(std::move(wire), 1, deadline).at(0));
}

Stats BlockingClient::stats() const { return counters_.snapshot(); }

void BlockingClient::close() {
  std::vector<std::unique_ptr<BlockingConnection>> closing;
  std::lock_guard<std::mutex> lock(mutex_);
  closing.swap(idle_);
}

}  // namespace rlb::transport
