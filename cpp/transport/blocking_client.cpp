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
#include "transport/requests.hpp"

namespace rlb::transport {

namespace asio = boost::asio;
using codec::Reply;
using leaderboard::Command;

namespace {
std::atomic<InterruptCheck> interrupt_check{nullptr};
}  // namespace

void set_interrupt_check(InterruptCheck check) { interrupt_check.store(check); }

// ---------------------------------------------------------------------------------------------
// BlockingConnection: a non-blocking Asio socket driven with poll(), so that every wait has a
// deadline without running an io_context per call.

BlockingConnection::BlockingConnection(const ClientOptions& options)
    : options_(options), socket_(io_), reader_(options.max_reply_bytes) {
  connect();
  handshake();
}

std::optional<Clock::time_point> BlockingConnection::deadline(
    const std::optional<double>& seconds) const {
  if (!seconds) return std::nullopt;
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*seconds));
}

void BlockingConnection::close_broken() {
  broken_ = true;
  boost::system::error_code ignored;
  socket_.close(ignored);
  reader_.reset();
}

void BlockingConnection::fail_io(const std::string& message) {
  close_broken();
  throw ConnectionError(message);
}

void BlockingConnection::on_interrupt() {
  InterruptCheck check = interrupt_check.load();
  if (check == nullptr) return;
  try {
    check();
  } catch (...) {
    close_broken();
    throw;
  }
}

void BlockingConnection::wait(short events, const std::optional<Clock::time_point>& until,
                              const char* doing) {
  for (;;) {
    int timeout_ms = -1;
    if (until) {
      auto left = std::chrono::duration_cast<std::chrono::microseconds>(*until - Clock::now());
      timeout_ms = left.count() <= 0 ? 0 : static_cast<int>((left.count() + 999) / 1000);
    }
    pollfd fd{socket_.native_handle(), events, 0};
    int ready = ::poll(&fd, 1, timeout_ms);
    if (ready > 0) return;  // readiness, hang-up or error: the next read/write tells which
    if (ready < 0 && errno == EINTR) {
      on_interrupt();
      continue;
    }
    if (ready < 0)
      fail_io(std::string("Error ") + doing + " " + options_.address() + ": " +
              std::strerror(errno));
    close_broken();
    throw TimeoutError(std::string("Timeout ") + doing + " " + options_.address());
  }
}

void BlockingConnection::connect() {
  const auto& timeout =
      options_.socket_connect_timeout ? options_.socket_connect_timeout : options_.socket_timeout;
  const auto until = deadline(timeout);

  std::vector<asio::generic::stream_protocol::endpoint> endpoints;
  boost::system::error_code ec;
  if (!options_.unix_socket_path.empty()) {
    endpoints.emplace_back(asio::local::stream_protocol::endpoint(options_.unix_socket_path));
  } else {
    asio::ip::tcp::resolver resolver(io_);
    auto results = resolver.resolve(options_.host, std::to_string(options_.port), ec);
    if (ec) {
      throw ConnectionError("Error connecting to " + options_.address() + ": " + ec.message());
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
      wait(POLLOUT, until, "connecting to");  // a refusal shows up as SO_ERROR below
      int error = 0;
      socklen_t size = sizeof error;
      if (::getsockopt(socket_.native_handle(), SOL_SOCKET, SO_ERROR, &error, &size) != 0) {
        error = errno;
      }
      ec.assign(error, boost::system::system_category());
    }
    if (!ec) {
      if (options_.unix_socket_path.empty()) {
        socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
        socket_.set_option(asio::socket_base::keep_alive(true), ignored);
      }
      broken_ = false;
      return;
    }
    last_error = ec.message();
  }
  broken_ = true;
  throw ConnectionError("Error connecting to " + options_.address() + ": " + last_error);
}

void BlockingConnection::handshake() {
  const Handshake handshake = handshake_for(options_);
  if (handshake.expected == 0) return;
  auto replies = round_trip(handshake.wire, handshake.expected);
  try {
    check_handshake(handshake, replies);
  } catch (const RedisError&) {
    broken_ = true;
    throw;
  }
}

std::vector<Reply> BlockingConnection::round_trip(const std::string& wire, std::size_t count) {
  send(wire, count);
  return receive(count);
}

void BlockingConnection::send(const std::string& wire, std::size_t replies) {
  if (broken_) throw ConnectionError("Connection to " + options_.address() + " is closed");
  outstanding_ += replies;
  const auto until = deadline(options_.socket_timeout);
  boost::system::error_code ec;

  std::size_t written = 0;
  while (written < wire.size()) {
    std::size_t n =
        socket_.write_some(asio::buffer(wire.data() + written, wire.size() - written), ec);
    written += n;
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      wait(POLLOUT, until, "writing to");
    } else if (ec == asio::error::interrupted) {
      on_interrupt();
    } else if (ec) {
      fail_io("Error writing to " + options_.address() + ": " + ec.message());
    }
  }
}

std::vector<Reply> BlockingConnection::receive(std::size_t count) {
  if (broken_) throw ConnectionError("Connection to " + options_.address() + " is closed");
  try {
    auto replies = read_replies(count);
    outstanding_ -= std::min(outstanding_, count);
    // Bytes beyond every reply asked for were sent unasked: the stream is out of step.
    if (outstanding_ == 0 && reader_.has_partial()) close_broken();
    return replies;
  } catch (...) {
    // A timeout, a protocol error or an interrupted wait: replies may still be on their way, so
    // the connection can never answer another call.
    close_broken();
    throw;
  }
}

std::vector<Reply> BlockingConnection::read_replies(std::size_t count) {
  const auto until = deadline(options_.socket_timeout);
  boost::system::error_code ec;
  std::vector<Reply> replies;
  replies.reserve(count);
  char buffer[64 * 1024];
  bool wait_first = true;  // a reply is never there right after the write: skip a futile read
  while (replies.size() < count) {
    if (auto reply = reader_.next()) {
      replies.push_back(std::move(*reply));
      continue;
    }
    if (wait_first) {
      wait(POLLIN, until, "reading from");
      wait_first = false;
    }
    std::size_t n = socket_.read_some(asio::buffer(buffer), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      wait(POLLIN, until, "reading from");
    } else if (ec == asio::error::interrupted) {
      on_interrupt();
    } else if (ec == asio::error::eof) {
      fail_io("Connection closed by server " + options_.address());
    } else if (ec) {
      fail_io("Error reading from " + options_.address() + ": " + ec.message());
    } else {
      reader_.feed(buffer, n);
    }
  }
  return replies;
}

bool BlockingConnection::reusable() {
  if (broken_ || fork_guard_.forked()) return false;
  // Idle, nothing may be readable: readiness means the server closed (EOF) or misbehaved.
  pollfd fd{socket_.native_handle(), POLLIN, 0};
  return ::poll(&fd, 1, 0) == 0;
}

// ---------------------------------------------------------------------------------------------
// BlockingClient: a pool of connections; a call borrows one for its whole operation.

class BlockingClient::Lease {
 public:
  explicit Lease(BlockingClient& client) : client_(client), connection_(client.acquire()) {}
  ~Lease() { client_.release(std::move(connection_)); }
  BlockingConnection& operator*() { return *connection_; }

 private:
  BlockingClient& client_;
  std::unique_ptr<BlockingConnection> connection_;
};

BlockingClient::BlockingClient(ClientOptions options) : options_(std::move(options)) {
  options_.validate();
}

std::unique_ptr<BlockingConnection> BlockingClient::acquire() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!idle_.empty()) {
      auto connection = std::move(idle_.back());
      idle_.pop_back();
      if (connection->reusable()) return connection;
      ++dropped_;
    }
  }
  auto connection = std::make_unique<BlockingConnection>(options_);
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.connected(dropped_ > 0);
  if (dropped_ > 0) --dropped_;
  return connection;
}

void BlockingClient::release(std::unique_ptr<BlockingConnection> connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (connection->broken()) {
    ++dropped_;
  } else {
    idle_.push_back(std::move(connection));
  }
}

leaderboard::Result BlockingClient::run(Exchange& exchange) {
  Lease connection(*this);
  while (!exchange.finished()) {
    counters_.round_trip(exchange.expected());
    exchange.on_replies((*connection).round_trip(exchange.wire(), exchange.expected()));
  }
  return exchange.take_result();
}

void BlockingClient::run_pipelined(std::size_t window, const std::function<Exchange*()>& next,
                                   const std::function<void(leaderboard::Result)>& done) {
  Lease lease(*this);
  BlockingConnection& connection = *lease;
  std::deque<Exchange*> in_flight;  // written, replies not read yet
  auto read_oldest = [&] {
    Exchange& exchange = *in_flight.front();
    auto replies = connection.receive(exchange.expected());
    in_flight.pop_front();
    exchange.on_replies(std::move(replies));
    if (!exchange.finished()) {
      throw std::logic_error("run_pipelined takes operations of one round trip");
    }
    return exchange.take_result();
  };
  try {
    for (Exchange* exchange = next(); exchange != nullptr; exchange = next()) {
      if (exchange->finished()) {  // nothing to send (an empty operation)
        done(exchange->take_result());
        continue;
      }
      counters_.round_trip(exchange->expected());
      connection.send(exchange->wire(), exchange->expected());
      in_flight.push_back(exchange);
      if (in_flight.size() >= std::max<std::size_t>(window, 1)) done(read_oldest());
    }
    while (!in_flight.empty()) done(read_oldest());
  } catch (...) {
    // Keep the connection in step: read what was asked for, unless it is broken already.
    while (!in_flight.empty() && !connection.broken()) {
      try {
        connection.receive(in_flight.front()->expected());
      } catch (...) {
        break;  // the connection is broken now; the lease drops it
      }
      in_flight.pop_front();
    }
    throw;
  }
}

Reply BlockingClient::execute_raw(const std::vector<std::string>& argv) {
  std::string wire;
  encode(Command{nullptr, argv}, false, wire);
  Lease connection(*this);
  counters_.round_trip(1);
  return std::move((*connection).round_trip(wire, 1).at(0));
}

Stats BlockingClient::stats() const { return counters_.snapshot(); }

void BlockingClient::close() {
  std::vector<std::unique_ptr<BlockingConnection>> closing;
  std::lock_guard<std::mutex> lock(mutex_);
  closing.swap(idle_);
}

}  // namespace rlb::transport
