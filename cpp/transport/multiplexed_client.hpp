// The transport of the asyncio API: one I/O thread running a Boost.Asio io_context, one socket
// shared by every in-flight request. Requests submitted while a write is in flight go out
// together in the next write (automatic pipelining); replies are matched in order. Finished
// requests are queued for the event loop's thread, which an eventfd wakes once per batch (on
// the empty to non-empty transition). The I/O thread never touches Python.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "codec/resp.hpp"
#include "transport/blocking_client.hpp"
#include "transport/fork.hpp"
#include "transport/options.hpp"
#include "transport/requests.hpp"

namespace rlb::transport {

// A finished request, handed to the event loop's thread.
struct Completion {
  std::uint64_t id = 0;
  std::vector<codec::Reply> replies;
  std::exception_ptr error;  // ConnectionError, TimeoutError or AuthenticationError
};

class MultiplexedClient {
 public:
  // At most max_in_flight requests are written and unanswered at once; more wait their turn.
  explicit MultiplexedClient(ClientOptions options, std::size_t max_in_flight = 1024);
  ~MultiplexedClient();
  MultiplexedClient(const MultiplexedClient&) = delete;
  MultiplexedClient& operator=(const MultiplexedClient&) = delete;

  // A request to send: its RESP bytes, how many replies they get, and when its call was made
  // (socket_timeout counts from then, queueing included).
  struct Outgoing {
    std::uint64_t id = 0;
    std::string wire;
    std::size_t expected = 0;
    Clock::time_point started = Clock::now();
  };
  // Queues requests (any thread; never blocks on I/O) with one wake-up of the I/O thread for
  // the whole batch. Each completion arrives via take_completions() with its id.
  void submit(std::vector<Outgoing> batch);
  // Readable when completions wait; take_completions() clears it.
  int notify_fd() const { return event_fd_; }
  std::vector<Completion> take_completions();

  Stats stats() const;
  // Fails every pending request with ConnectionError and stops the I/O thread. Idempotent.
  void close();
  bool closed() const { return closed_.load(); }
  const ClientOptions& options() const { return options_; }

 private:
  struct Request {
    std::uint64_t id = 0;
    std::string wire;
    std::size_t expected = 0;
    std::vector<codec::Reply> replies;
    std::optional<Clock::time_point> deadline;  // none without a socket_timeout
    bool handshake = false;
  };
  enum class State { Disconnected, Connecting, Connected };

  // Everything below runs on the I/O thread.
  void on_submitted();
  void connect();
  void try_endpoint(std::size_t index);
  void on_connected();
  void write();
  void read();
  void on_reply(codec::Reply&& reply);
  std::optional<Clock::time_point> deadline_from(Clock::time_point started) const;
  // Keeps the request timer armed for the earliest deadline of a written or waiting request.
  void arm_request_timer(std::optional<Clock::time_point> deadline);
  void rearm_request_timer();
  void on_request_timer();
  // Fails (TimeoutError, never sent) the waiting requests whose deadline has passed.
  void expire_waiting(Clock::time_point now);
  // Something failed that should not (out of memory): every request fails, the connection goes.
  void abort_all(std::exception_ptr error);
  void connection_lost(std::exception_ptr error);
  void connect_failed(std::exception_ptr error);
  void take_submitted();
  void fail(std::deque<Request>& requests, const std::exception_ptr& error);
  void complete(Request&& request, std::exception_ptr error);
  void shutdown();

  const ClientOptions options_;
  const std::size_t max_in_flight_;
  const ForkGuard fork_guard_;
  int event_fd_ = -1;

  boost::asio::io_context io_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  boost::asio::generic::stream_protocol::socket socket_;
  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::steady_timer connect_timer_;  // connect timeout and reconnect backoff
  boost::asio::steady_timer request_timer_;  // the earliest request deadline
  codec::ReplyReader reader_;

  std::mutex submit_mutex_;
  std::vector<Request> submitted_;  // guarded by submit_mutex_
  bool wake_posted_ = false;        // guarded by submit_mutex_

  // I/O thread only.
  State state_ = State::Disconnected;
  std::deque<Request> waiting_;    // taken from submitted_, not yet written
  std::deque<Request> in_flight_;  // written, awaiting replies, in order
  std::string write_buffer_;
  bool writing_ = false;
  bool request_timer_armed_ = false;
  Clock::time_point request_timer_at_{};
  bool stopping_ = false;
  bool connect_timed_out_ = false;
  std::uint64_t generation_ = 0;  // bumped per connection: stale handlers see it and return
  std::string last_connect_error_;
  std::vector<boost::asio::generic::stream_protocol::endpoint> endpoints_;
  std::chrono::milliseconds backoff_{0};
  Clock::time_point next_attempt_{};
  bool ever_connected_ = false;
  char read_buffer_[64 * 1024];

  std::mutex completions_mutex_;
  std::vector<Completion> completions_;  // guarded by completions_mutex_

  std::atomic<bool> closed_{false};
  Counters counters_;
  std::unique_ptr<std::thread> thread_;  // last: started once everything above exists
};

}  // namespace rlb::transport
