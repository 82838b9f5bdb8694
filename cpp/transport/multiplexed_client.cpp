#include "transport/multiplexed_client.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>

#include "errors.hpp"

namespace rlb::transport {

namespace asio = boost::asio;

namespace {

template <class Error>
std::exception_ptr error_of(const std::string& message) {
  return std::make_exception_ptr(Error(message));
}

Clock::duration seconds(double value) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(value));
}

}  // namespace

MultiplexedClient::MultiplexedClient(ClientOptions options, std::size_t max_in_flight)
    : options_((options.validate(), std::move(options))),
      tls_context_(connection::make_tls_context(options_.tls)),
      target_resolver_(options_, tls_context_),
      work_(asio::make_work_guard(io_)),
      socket_(io_),
      resolver_(io_),
      connect_timer_(io_),
      request_timer_(io_),
      core_(options_, max_in_flight, counters_) {
  event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) throw RedisError(std::string("eventfd: ") + std::strerror(errno));
  thread_ = std::make_unique<std::thread>([this] {
    // Nothing may escape the I/O thread (it would terminate the process): a handler that throws
    // fails every request, and the loop goes on.
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        abort_all(
            error_of<ConnectionError>(std::string("redis_leaderboard I/O thread: ") + e.what()));
      } catch (...) {
        abort_all(error_of<ConnectionError>("redis_leaderboard I/O thread: unknown error"));
      }
    }
  });
  if (options_.sentinel.enabled()) {
    watcher_ = std::make_unique<SentinelWatcher>(options_, tls_context_, target_resolver_, [this] {
      asio::post(io_, [this] { on_primary_changed(); });
    });
  }
}

std::shared_ptr<MultiplexedClient> MultiplexedClient::create(ClientOptions options,
                                                             std::size_t max_in_flight) {
  return std::shared_ptr<MultiplexedClient>(
      new MultiplexedClient(std::move(options), max_in_flight), [](MultiplexedClient* client) {
        if (!client->fork_guard_.forked()) delete client;  // in a forked child: left behind
      });
}

MultiplexedClient::~MultiplexedClient() {
  close();
  ::close(event_fd_);
}

// ---- Any thread ------------------------------------------------------------------------------

void MultiplexedClient::submit(std::vector<Outgoing> batch) {
  if (fork_guard_.forked()) {
    throw RedisError(
        "this asyncio client was created before fork(); create a new client in the child");
  }
  if (closed_.load()) throw ConnectionError("the client is closed");
  bool post = false;
  {
    std::lock_guard<std::mutex> lock(submit_mutex_);
    for (auto& outgoing : batch) submitted_.push_back(std::move(outgoing));
    post = !wake_posted_;
    wake_posted_ = true;
  }
  if (post) asio::post(io_, [this] { on_submitted(); });
}

void MultiplexedClient::cancel(std::uint64_t id) {
  if (fork_guard_.forked() || closed_.load()) return;
  asio::post(io_, [this, id] {
    if (stopping_) return;
    core_.cancel(id);
    drive();
  });
}

std::vector<Completion> MultiplexedClient::take_completions() {
  std::uint64_t count = 0;
  // Clear the eventfd before taking: a completion queued after this wakes the loop again.
  [[maybe_unused]] auto n = ::read(event_fd_, &count, sizeof count);
  std::vector<Completion> out;
  std::lock_guard<std::mutex> lock(completions_mutex_);
  out.swap(completions_);
  return out;
}

Stats MultiplexedClient::stats() const { return counters_.snapshot(); }

void MultiplexedClient::close() {
  if (fork_guard_.forked()) return;  // the I/O thread does not exist in a forked child
  bool was_closed = closed_.exchange(true);
  if (!was_closed) {
    watcher_.reset();  // stops posting
    asio::post(io_, [this] { shutdown(); });
  }
  if (thread_ && thread_->joinable() && thread_->get_id() != std::this_thread::get_id()) {
    thread_->join();
    if (discovery_.joinable()) discovery_.join();  // bounded: each sentinel has a timeout
  }
}

// ---- I/O thread ------------------------------------------------------------------------------

void MultiplexedClient::on_submitted() {
  std::vector<Outgoing> batch;
  {
    std::lock_guard<std::mutex> lock(submit_mutex_);
    wake_posted_ = false;
    batch.swap(submitted_);
  }
  if (stopping_) return;  // shutdown() failed them already
  // Encoding happens here, off the event loop's thread.
  for (auto& outgoing : batch) {
    core_.submit(outgoing.id, std::move(outgoing.operation), outgoing.started);
  }
  drive();
}

void MultiplexedClient::drive() {
  if (core_.take_close()) close_socket();
  publish();
  if (stopping_) return;
  if (state_ == State::Disconnected && core_.wants_connection()) connect();
  if (state_ == State::Connected && !writing_) {
    if (!tls_) {
      write_buffer_ = core_.take_write();
    } else {
      write_buffer_.clear();
      try {
        std::string plain = core_.take_write();
        if (!plain.empty()) tls_->write(plain);
      } catch (const ConnectionError&) {
        core_.lost(std::current_exception(), Clock::now());
        close_socket();
        return drive();
      }
      tls_->append_output(write_buffer_);  // requests, and any TLS record of its own
    }
    if (!write_buffer_.empty()) {
      writing_ = true;
      const auto generation = generation_;
      asio::async_write(socket_, asio::buffer(write_buffer_),
                        [this, generation](const boost::system::error_code& ec, std::size_t) {
                          if (generation != generation_) return;
                          writing_ = false;
                          if (ec) {
                            core_.lost(
                                error_of<ConnectionError>("Error writing to " + target_.address() +
                                                          ": " + ec.message()),
                                Clock::now());
                            close_socket();
                          } else {
                            core_.wrote();
                          }
                          drive();
                        });
    }
  }
  arm_timer();
}

void MultiplexedClient::publish() {
  if (!core_.has_completions()) return;
  auto done = core_.take_completions();
  bool notify = false;
  {
    std::lock_guard<std::mutex> lock(completions_mutex_);
    notify = completions_.empty();
    if (completions_.empty()) {
      completions_ = std::move(done);
    } else {
      for (auto& completion : done) completions_.push_back(std::move(completion));
    }
  }
  if (notify) {
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(event_fd_, &one, sizeof one);
  }
}

void MultiplexedClient::arm_timer() {
  const auto deadline = core_.next_deadline();
  if (!deadline || (timer_at_ && *timer_at_ <= *deadline)) return;
  timer_at_ = deadline;
  request_timer_.expires_at(*deadline);  // cancels a later wait
  request_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    timer_at_.reset();
    core_.tick(Clock::now());
    drive();
  });
}

void MultiplexedClient::close_socket() {
  ++generation_;
  state_ = State::Disconnected;
  writing_ = false;
  backing_off_ = false;
  tls_.reset();
  boost::system::error_code ignored;
  socket_.close(ignored);
}

void MultiplexedClient::connect() {
  if (state_ != State::Disconnected || stopping_) return;
  state_ = State::Connecting;
  const auto generation = ++generation_;

  if (Clock::now() < next_attempt_) {  // back off after a failed attempt
    backing_off_ = true;
    connect_timer_.expires_at(next_attempt_);
    connect_timer_.async_wait([this, generation](const boost::system::error_code& ec) {
      if (ec || generation != generation_) return;
      backing_off_ = false;
      state_ = State::Disconnected;
      next_attempt_ = {};
      drive();
    });
    return;
  }

  connect_timed_out_ = false;
  if (const auto timeout = options_.connect_timeout()) arm_connect_timer(seconds(*timeout));

  if (!options_.sentinel.enabled()) {
    target_ = Endpoint{options_.host, options_.port, options_.unix_socket_path};
    return resolve_host();
  }
  // Asking the sentinels blocks (each within its timeout): on a helper thread, so that the
  // I/O thread keeps serving timers and cancellations meanwhile.
  if (discovery_.joinable()) discovery_.join();  // done: it posted its answer
  discovery_ = std::thread([this, generation] {
    std::exception_ptr error;
    Endpoint found;
    try {
      found = target_resolver_.resolve();
    } catch (...) {
      error = std::current_exception();
    }
    asio::post(io_, [this, generation, found, error] {
      if (generation != generation_ || stopping_) return;
      if (connect_timed_out_) {
        return connect_failed(
            error_of<TimeoutError>("Timeout connecting to " + options_.address()));
      }
      if (error) return connect_failed(error);
      target_ = found;
      resolve_host();
    });
  });
}

void MultiplexedClient::arm_connect_timer(Clock::duration timeout) {
  const auto generation = generation_;
  connect_timer_.expires_after(timeout);
  connect_timer_.async_wait([this, generation](const boost::system::error_code& ec) {
    if (ec || generation != generation_ || state_ != State::Connecting) return;
    connect_timed_out_ = true;
    boost::system::error_code ignored;
    resolver_.cancel();
    socket_.close(ignored);
  });
}

void MultiplexedClient::resolve_host() {
  endpoints_.clear();
  last_connect_error_ = "no address";
  if (!target_.unix_socket_path.empty()) {
    endpoints_.emplace_back(asio::local::stream_protocol::endpoint(target_.unix_socket_path));
    return try_endpoint(0);
  }
  const auto generation = generation_;
  resolver_.async_resolve(
      target_.host, std::to_string(target_.port),
      [this, generation](const boost::system::error_code& ec,
                         asio::ip::tcp::resolver::results_type results) {
        if (generation != generation_) return;
        if (ec) {
          return connect_failed(
              connect_timed_out_
                  ? error_of<TimeoutError>("Timeout connecting to " + target_.address())
                  : error_of<ConnectionError>("Error connecting to " + target_.address() + ": " +
                                              ec.message()));
        }
        for (const auto& result : results) endpoints_.emplace_back(result.endpoint());
        try_endpoint(0);
      });
}

void MultiplexedClient::try_endpoint(std::size_t index) {
  if (connect_timed_out_) {
    return connect_failed(error_of<TimeoutError>("Timeout connecting to " + target_.address()));
  }
  if (index >= endpoints_.size()) {
    return connect_failed(error_of<ConnectionError>("Error connecting to " + target_.address() +
                                                    ": " + last_connect_error_));
  }
  boost::system::error_code ec;
  socket_.close(ec);
  socket_.open(endpoints_[index].protocol(), ec);
  if (ec) {
    last_connect_error_ = ec.message();
    return try_endpoint(index + 1);
  }
  const auto generation = generation_;
  socket_.async_connect(endpoints_[index],
                        [this, index, generation](const boost::system::error_code& ec) {
                          if (generation != generation_) return;
                          if (!ec) return on_socket_connected();
                          last_connect_error_ = ec.message();
                          try_endpoint(index + 1);
                        });
}

void MultiplexedClient::on_socket_connected() {
  if (target_.unix_socket_path.empty()) {
    boost::system::error_code ignored;
    socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
    socket_.set_option(asio::socket_base::keep_alive(true), ignored);
  }
  if (!tls_context_) return on_connected();
  try {
    tls_ = std::make_unique<connection::TlsSession>(tls_context_, target_.host, target_.address());
  } catch (const RedisError&) {
    return connect_failed(std::current_exception());
  }
  // A server that never answers the handshake (a plaintext port) must not hang the client.
  if (!options_.connect_timeout()) arm_connect_timer(seconds(connection::kTlsHandshakeTimeout));
  tls_step();
}

void MultiplexedClient::tls_step() {
  bool done = false;
  try {
    done = tls_->handshake();
  } catch (const RedisError&) {
    return connect_failed(std::current_exception());
  }
  const auto generation = generation_;
  auto failed = [this](const boost::system::error_code& ec) {
    connect_failed(
        connect_timed_out_
            ? error_of<TimeoutError>("Timeout connecting to " + target_.address() +
                                     " (TLS handshake)")
            : error_of<ConnectionError>(
                  "Error connecting to " + target_.address() + ": TLS handshake: " +
                  (ec == asio::error::eof ? std::string("the server closed the connection")
                                          : ec.message())));
  };
  auto next = [this, generation, done, failed] {
    if (done) return on_connected();
    socket_.async_read_some(
        asio::buffer(read_buffer_),
        [this, generation, failed](const boost::system::error_code& ec, std::size_t size) {
          if (generation != generation_) return;
          if (ec) return failed(ec);
          tls_->feed(read_buffer_, size);
          tls_step();
        });
  };
  write_buffer_ = tls_->take_output();
  if (write_buffer_.empty()) return next();
  asio::async_write(
      socket_, asio::buffer(write_buffer_),
      [this, generation, next, failed](const boost::system::error_code& ec, std::size_t) {
        if (generation != generation_) return;
        if (ec) return failed(ec);
        next();
      });
}

void MultiplexedClient::on_primary_changed() {
  if (stopping_) return;
  // Sentinel announced a new primary: connect to it at once, without the failed attempts'
  // backoff; the requests in flight on the old one get their replies (or fail) first.
  backoff_ = std::chrono::milliseconds(0);
  next_attempt_ = {};
  if (state_ == State::Connecting && backing_off_) {
    close_socket();  // also cancels the backoff's wait (a stale generation)
    connect_timer_.cancel();
  } else if (state_ == State::Connected) {
    core_.retire(Clock::now());
  }
  drive();
}

void MultiplexedClient::connect_failed(const std::exception_ptr& error) {
  close_socket();
  connect_timer_.cancel();
  backoff_ = backoff_.count() == 0 ? std::chrono::milliseconds(50)
                                   : std::min(backoff_ * 2, std::chrono::milliseconds(2000));
  next_attempt_ = Clock::now() + backoff_;
  // Nothing was sent: the waiting requests fail now; the next submission tries again.
  core_.connect_failed(error);
  publish();
}

void MultiplexedClient::on_connected() {
  connect_timer_.cancel();
  state_ = State::Connected;
  backoff_ = std::chrono::milliseconds(0);
  counters_.connected(ever_connected_);
  ever_connected_ = true;
  core_.connected(Clock::now());
  read();
  drive();
}

void MultiplexedClient::read() {
  const auto generation = generation_;
  socket_.async_read_some(
      asio::buffer(read_buffer_),
      [this, generation](const boost::system::error_code& ec, std::size_t size) {
        if (generation != generation_) return;
        if (ec) {
          core_.lost(error_of<ConnectionError>(
                         ec == asio::error::eof
                             ? "Connection closed by server " + target_.address()
                             : "Error reading from " + target_.address() + ": " + ec.message()),
                     Clock::now());
          close_socket();
        } else if (!tls_) {
          core_.received(read_buffer_, size, Clock::now());
          if (core_.connected()) read();
        } else {
          plain_.clear();
          try {
            tls_->feed(read_buffer_, size);
            if (!tls_->read(plain_)) {
              throw ConnectionError("Connection closed by server " + target_.address());
            }
            if (!plain_.empty()) core_.received(plain_.data(), plain_.size(), Clock::now());
            if (core_.connected()) read();
          } catch (const ConnectionError&) {
            if (!plain_.empty()) core_.received(plain_.data(), plain_.size(), Clock::now());
            core_.lost(std::current_exception(), Clock::now());
            close_socket();
          }
        }
        drive();
      });
}

void MultiplexedClient::abort_all(const std::exception_ptr& error) {
  try {
    close_socket();
    core_.abort(error);
    publish();
  } catch (...) {
    // Still failing (no memory at all): the next submission starts afresh.
  }
}

void MultiplexedClient::shutdown() {
  stopping_ = true;
  close_socket();
  resolver_.cancel();
  connect_timer_.cancel();
  request_timer_.cancel();
  auto error = error_of<ConnectionError>("the client is closed");
  std::vector<Outgoing> batch;
  {
    std::lock_guard<std::mutex> lock(submit_mutex_);
    batch.swap(submitted_);
  }
  for (auto& outgoing : batch) core_.fail(outgoing.id, error);
  core_.abort(error);
  publish();
  work_.reset();
}

}  // namespace rlb::transport
