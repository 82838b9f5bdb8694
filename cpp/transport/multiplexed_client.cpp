#include "transport/multiplexed_client.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>

#include "errors.hpp"

namespace rlb::transport {

namespace asio = boost::asio;
using codec::Reply;

namespace {

template <class Error>
std::exception_ptr error_of(const std::string& message) {
  return std::make_exception_ptr(Error(message));
}

std::chrono::steady_clock::duration seconds(double value) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(value));
}

}  // namespace

MultiplexedClient::MultiplexedClient(ClientOptions options, std::size_t max_in_flight)
    : options_(std::move(options)),
      max_in_flight_(max_in_flight == 0 ? 1 : max_in_flight),
      work_(asio::make_work_guard(io_)),
      socket_(io_),
      resolver_(io_),
      connect_timer_(io_),
      request_timer_(io_),
      reader_(options_.max_reply_bytes) {
  options_.validate();
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
    for (auto& outgoing : batch) {
      Request request;
      request.id = outgoing.id;
      request.wire = std::move(outgoing.wire);
      request.expected = outgoing.expected;
      request.deadline = deadline_from(outgoing.started);
      submitted_.push_back(std::move(request));
    }
    post = !wake_posted_;
    wake_posted_ = true;
  }
  if (post) asio::post(io_, [this] { on_submitted(); });
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
  if (!was_closed) asio::post(io_, [this] { shutdown(); });
  if (thread_ && thread_->joinable() && thread_->get_id() != std::this_thread::get_id()) {
    thread_->join();
  }
}

// ---- I/O thread ------------------------------------------------------------------------------

void MultiplexedClient::take_submitted() {
  std::optional<Clock::time_point> earliest;
  {
    std::lock_guard<std::mutex> lock(submit_mutex_);
    for (auto& request : submitted_) {
      if (request.deadline && (!earliest || *request.deadline < *earliest)) {
        earliest = request.deadline;
      }
      waiting_.push_back(std::move(request));
    }
    submitted_.clear();
  }
  arm_request_timer(earliest);
}

std::optional<Clock::time_point> MultiplexedClient::deadline_from(Clock::time_point started) const {
  if (!options_.socket_timeout) return std::nullopt;
  return started + seconds(*options_.socket_timeout);
}

void MultiplexedClient::on_submitted() {
  {
    std::lock_guard<std::mutex> lock(submit_mutex_);
    wake_posted_ = false;
  }
  take_submitted();
  if (stopping_) return fail(waiting_, error_of<ConnectionError>("the client is closed"));
  switch (state_) {
    case State::Connected:
      return write();
    case State::Disconnected:
      return connect();
    case State::Connecting:
      return;
  }
}

void MultiplexedClient::complete(Request&& request, std::exception_ptr error) {
  Completion completion{request.id, std::move(request.replies), std::move(error)};
  bool notify = false;
  {
    std::lock_guard<std::mutex> lock(completions_mutex_);
    notify = completions_.empty();
    completions_.push_back(std::move(completion));
  }
  if (notify) {
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(event_fd_, &one, sizeof one);
  }
}

void MultiplexedClient::fail(std::deque<Request>& requests, const std::exception_ptr& error) {
  for (auto& request : requests) {
    if (!request.handshake) complete(std::move(request), error);
  }
  requests.clear();
}

void MultiplexedClient::connect() {
  if (state_ != State::Disconnected || stopping_) return;
  state_ = State::Connecting;
  const auto generation = ++generation_;

  if (Clock::now() < next_attempt_) {  // back off after a failed attempt
    connect_timer_.expires_at(next_attempt_);
    connect_timer_.async_wait([this, generation](const boost::system::error_code& ec) {
      if (ec || generation != generation_) return;
      state_ = State::Disconnected;
      next_attempt_ = {};
      connect();
    });
    return;
  }

  connect_timed_out_ = false;
  const auto& timeout =
      options_.socket_connect_timeout ? options_.socket_connect_timeout : options_.socket_timeout;
  if (timeout) {
    connect_timer_.expires_after(seconds(*timeout));
    connect_timer_.async_wait([this, generation](const boost::system::error_code& ec) {
      if (ec || generation != generation_ || state_ != State::Connecting) return;
      connect_timed_out_ = true;
      boost::system::error_code ignored;
      resolver_.cancel();
      socket_.close(ignored);
    });
  }

  endpoints_.clear();
  last_connect_error_ = "no address";
  if (!options_.unix_socket_path.empty()) {
    endpoints_.emplace_back(asio::local::stream_protocol::endpoint(options_.unix_socket_path));
    return try_endpoint(0);
  }
  resolver_.async_resolve(
      options_.host, std::to_string(options_.port),
      [this, generation](const boost::system::error_code& ec,
                         asio::ip::tcp::resolver::results_type results) {
        if (generation != generation_) return;
        if (ec) {
          return connect_failed(
              connect_timed_out_
                  ? error_of<TimeoutError>("Timeout connecting to " + options_.address())
                  : error_of<ConnectionError>("Error connecting to " + options_.address() + ": " +
                                              ec.message()));
        }
        for (const auto& result : results) endpoints_.emplace_back(result.endpoint());
        try_endpoint(0);
      });
}

void MultiplexedClient::try_endpoint(std::size_t index) {
  if (connect_timed_out_) {
    return connect_failed(error_of<TimeoutError>("Timeout connecting to " + options_.address()));
  }
  if (index >= endpoints_.size()) {
    return connect_failed(error_of<ConnectionError>("Error connecting to " + options_.address() +
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
                          if (!ec) return on_connected();
                          last_connect_error_ = ec.message();
                          try_endpoint(index + 1);
                        });
}

void MultiplexedClient::connect_failed(std::exception_ptr error) {
  ++generation_;
  state_ = State::Disconnected;
  boost::system::error_code ignored;
  socket_.close(ignored);
  connect_timer_.cancel();
  backoff_ = backoff_.count() == 0 ? std::chrono::milliseconds(50)
                                   : std::min(backoff_ * 2, std::chrono::milliseconds(2000));
  next_attempt_ = Clock::now() + backoff_;
  // Nothing was sent: the waiting requests fail now; the next submission tries again.
  take_submitted();
  fail(waiting_, error);
}

void MultiplexedClient::on_connected() {
  connect_timer_.cancel();
  state_ = State::Connected;
  backoff_ = std::chrono::milliseconds(0);
  counters_.connected(ever_connected_);
  ever_connected_ = true;
  if (options_.unix_socket_path.empty()) {
    boost::system::error_code ignored;
    socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
    socket_.set_option(asio::socket_base::keep_alive(true), ignored);
  }
  Handshake handshake = handshake_for(options_);
  if (handshake.expected > 0) {
    Request request;
    request.wire = std::move(handshake.wire);
    request.expected = handshake.expected;
    request.deadline = deadline_from(Clock::now());
    request.handshake = true;
    arm_request_timer(request.deadline);
    waiting_.push_front(std::move(request));
  }
  read();
  write();
}

void MultiplexedClient::write() {
  take_submitted();
  if (writing_ || state_ != State::Connected || waiting_.empty()) return;
  write_buffer_.clear();
  std::size_t commands = 0;
  const auto now = Clock::now();
  while (!waiting_.empty() && in_flight_.size() < max_in_flight_) {
    Request& request = waiting_.front();
    if (request.deadline && *request.deadline <= now && !request.handshake) {
      complete(std::move(request),  // overdue before it was sent: safe to fail, it never ran
               error_of<TimeoutError>("Timeout waiting to send to " + options_.address()));
      waiting_.pop_front();
      continue;
    }
    write_buffer_ += request.wire;
    std::string().swap(request.wire);
    if (!request.handshake) commands += request.expected;
    in_flight_.push_back(std::move(request));
    waiting_.pop_front();
  }
  if (write_buffer_.empty()) return;  // the in-flight limit: replies will make room
  writing_ = true;
  counters_.round_trip(commands);
  const auto generation = generation_;
  asio::async_write(socket_, asio::buffer(write_buffer_),
                    [this, generation](const boost::system::error_code& ec, std::size_t) {
                      if (generation != generation_) return;
                      writing_ = false;
                      if (ec) {
                        return connection_lost(error_of<ConnectionError>(
                            "Error writing to " + options_.address() + ": " + ec.message()));
                      }
                      write();
                    });
}

void MultiplexedClient::read() {
  const auto generation = generation_;
  socket_.async_read_some(
      asio::buffer(read_buffer_),
      [this, generation](const boost::system::error_code& ec, std::size_t size) {
        if (generation != generation_) return;
        if (ec) {
          return connection_lost(error_of<ConnectionError>(
              ec == asio::error::eof
                  ? "Connection closed by server " + options_.address()
                  : "Error reading from " + options_.address() + ": " + ec.message()));
        }
        try {
          reader_.feed(read_buffer_, size);
          while (auto reply = reader_.next()) {
            on_reply(std::move(*reply));
            if (generation != generation_) return;
          }
        } catch (const RedisError&) {
          return connection_lost(std::current_exception());
        } catch (const std::exception& e) {  // out of memory: the same, never terminate
          return connection_lost(error_of<ConnectionError>("Error reading from " +
                                                           options_.address() + ": " + e.what()));
        }
        read();
      });
}

void MultiplexedClient::on_reply(Reply&& reply) {
  if (in_flight_.empty()) throw codec::ProtocolError("Protocol error: reply to no request");
  Request& request = in_flight_.front();
  request.replies.push_back(std::move(reply));
  if (request.replies.size() < request.expected) return;

  Request done = std::move(request);
  in_flight_.pop_front();
  if (done.handshake) {
    try {
      check_handshake(handshake_for(options_), done.replies);
    } catch (const RedisError&) {
      // Wrong credentials or db: everything queued would fail the same way.
      auto error = std::current_exception();
      take_submitted();
      fail(waiting_, error);
      return connection_lost(error);
    }
  } else {
    complete(std::move(done), nullptr);
  }
  if (!waiting_.empty() && !writing_) write();
}

void MultiplexedClient::arm_request_timer(std::optional<Clock::time_point> deadline) {
  if (!deadline || stopping_) return;
  if (request_timer_armed_ && request_timer_at_ <= *deadline) return;
  request_timer_armed_ = true;
  request_timer_at_ = *deadline;
  request_timer_.expires_at(*deadline);  // cancels a later wait
  request_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    request_timer_armed_ = false;
    on_request_timer();
  });
}

void MultiplexedClient::rearm_request_timer() {
  std::optional<Clock::time_point> earliest;
  for (const auto* queue : {&in_flight_, &waiting_}) {
    for (const auto& request : *queue) {
      if (request.deadline && (!earliest || *request.deadline < *earliest)) {
        earliest = request.deadline;
      }
    }
  }
  arm_request_timer(earliest);
}

void MultiplexedClient::on_request_timer() {
  const auto now = Clock::now();
  for (const auto& request : in_flight_) {
    if (request.deadline && *request.deadline <= now) {
      // Replies come in order: one overdue reply means the connection is stuck. Everything
      // written fails (it may have run); connection_lost expires the waiting ones and re-arms.
      return connection_lost(error_of<TimeoutError>("Timeout reading from " + options_.address()));
    }
  }
  expire_waiting(now);
  rearm_request_timer();
}

void MultiplexedClient::expire_waiting(Clock::time_point now) {
  std::deque<Request> keep;
  for (auto& request : waiting_) {
    if (request.deadline && *request.deadline <= now && !request.handshake) {
      complete(std::move(request),
               error_of<TimeoutError>("Timeout waiting to send to " + options_.address()));
    } else {
      keep.push_back(std::move(request));
    }
  }
  waiting_.swap(keep);
}

void MultiplexedClient::connection_lost(std::exception_ptr error) {
  if (state_ != State::Connected) return;
  ++generation_;
  state_ = State::Disconnected;
  writing_ = false;
  boost::system::error_code ignored;
  socket_.close(ignored);
  reader_.reset();
  // Written requests may have run: they fail, never resent. Waiting ones go on a new connection,
  // unless their time is up.
  fail(in_flight_, error);
  while (!waiting_.empty() && waiting_.front().handshake) waiting_.pop_front();
  take_submitted();
  expire_waiting(Clock::now());
  rearm_request_timer();
  if (!waiting_.empty()) connect();
}

void MultiplexedClient::abort_all(std::exception_ptr error) {
  try {
    ++generation_;
    state_ = State::Disconnected;
    writing_ = false;
    boost::system::error_code ignored;
    socket_.close(ignored);
    reader_.reset();
    fail(in_flight_, error);
    take_submitted();
    fail(waiting_, error);
  } catch (...) {
    // Still failing (no memory at all): drop what is left; the next submission starts afresh.
    in_flight_.clear();
    waiting_.clear();
  }
}

void MultiplexedClient::shutdown() {
  stopping_ = true;
  ++generation_;
  boost::system::error_code ignored;
  socket_.close(ignored);
  resolver_.cancel();
  connect_timer_.cancel();
  request_timer_.cancel();
  auto error = error_of<ConnectionError>("the client is closed");
  fail(in_flight_, error);
  take_submitted();
  fail(waiting_, error);
  state_ = State::Disconnected;
  work_.reset();
}

}  // namespace rlb::transport
