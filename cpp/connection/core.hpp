// One connection's protocol, without I/O: the queue of requests (each owning its Exchange), the
// handshake, write coalescing (automatic pipelining), reply matching, the NOSCRIPT fallback and
// the next pages of multi-step operations (through the Exchange), the window of requests in
// flight, and every timeout decision, taken against the time its caller passes in.
//
// Inputs are events and bytes (submit, connected, received, wrote, lost, tick); outputs are
// "write these bytes" (take_write), "close the socket" (take_close), "these requests are done"
// (take_completions) and "call tick() by then" (next_deadline). A driver owns the socket and
// runs this core: transport/blocking_client.cpp with poll(), transport/loop_client.cpp on the
// asyncio event loop, transport/cluster_client.cpp one per node. Any protocol error, overdue reply
// or unasked byte closes the connection: written requests then fail with
// ConnectionError/TimeoutError and are never re-sent, but for those whose operation says it cannot
// apply twice (Operation::resend_limit(): writes carrying submission ids, guards), which go first
// on the next connection, at most that many times, with a new deadline, then fail with
// ConnectionError, and reads (Exchange::is_read(): the step writes nothing), which go first on the
// next connection once, within the deadline they had (a protocol error is not retried); requests
// not yet written wait for the next connection, until their own deadline. A deadline is checked
// with every chunk received too, so a reply that never ends cannot outlive it. One overdue reply
// does not close the connection: that of a request written behind one the server holds on
// purpose (Exchange::server_wait(): a write's WAIT, XREAD BLOCK), which fails alone with
// TimeoutError, its replies dropped when they come.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codec/resp.hpp"
#include "connection/exchange.hpp"
#include "connection/options.hpp"
#include "connection/stats.hpp"
#include "leaderboard/operations.hpp"

namespace rlb::connection {

using Clock = std::chrono::steady_clock;

// A finished request: the operation's result, or the raw replies of a raw request, or an error.
struct Completion {
  Completion() = default;
  Completion(std::uint64_t id_, leaderboard::Result result_, std::vector<Reply> replies_,
             std::exception_ptr error_)
      : id(id_),
        result(std::move(result_)),
        replies(std::move(replies_)),
        error(std::move(error_)) {}

  std::uint64_t id = 0;
  leaderboard::Result result;
  std::vector<Reply> replies;  // raw requests only
  std::exception_ptr error;    // set: the request failed
  // A cluster redirect (error is a ClusterRedirectError): the operation, not run, its step
  // ready to be sent again (Exchange::restart_step) to another node. With
  // ClientOptions::hand_back_resends, also a request whose reply was lost and that may be
  // resent (error is why the connection was lost), rewound.
  std::unique_ptr<Exchange> redirected;
  // With `redirected`: the request was never written (the connection failed, or was lost
  // before its handshake was answered), so it may go anywhere, any number of times.
  bool unsent = false;
};

class Core {
 public:
  // `counters` (shared by a client's connections) counts written requests and commands.
  // `max_reply_bytes_in_flight` (0: no limit): requests are also written only while the bytes
  // their replies are expected to take stay within it (a request alone may exceed it), each
  // expected to take what the last replies of its operation took (learnt per operation name,
  // on this connection), so big reads stop at that many bytes queued while cheap ones keep
  // the deep pipeline.
  // `split_reads`: how a read of many entries that may run in the guide's two steps (SplitRead
  // in leaderboard/operations.cpp) runs on this connection (SplitReads).
  enum class SplitReads {
    // As one script (Operation::in_one_trip).
    kNever,
    // In two steps when nothing else is queued or in flight, holding what comes after it
    // (run_pipelined) until it is done, else one script: a connection that runs one call at a
    // time (the sync client's, leased per call).
    kWhenIdle,
    // In two steps, its second queued as a paged read's next page is, behind the calls made
    // while its first was in flight (none held: holding them on a pipelined connection shared
    // by concurrent calls would cost every one a round trip): the asyncio client's.
    kInterleaved,
  };
  Core(const ClientOptions& options, std::size_t max_in_flight, Counters& counters,
       std::size_t max_reply_bytes_in_flight = 0, SplitReads split_reads = SplitReads::kNever);
  ~Core();
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  // ---- Requests. `started`: when the call was made; socket_timeout counts from it.
  // An operation, run to its end (every page, NOSCRIPT fallbacks) before it completes.
  void submit(std::uint64_t id, std::unique_ptr<leaderboard::Operation> operation,
              Clock::time_point started);
  // An operation already under way (sent elsewhere before a cluster redirect): its current step.
  void submit(std::uint64_t id, std::unique_ptr<Exchange> exchange, Clock::time_point started);
  // Tests of other behaviour: treat every script as one the server has run for this
  // connection (no request holds the ones behind it for its scripts).
  void assume_scripts_loaded() { assume_scripts_loaded_ = true; }
  // Completes request `id` with `error` at once (it never reached the core's queues).
  void fail(std::uint64_t id, const std::exception_ptr& error) {
    completions_.push_back({id, {}, {}, error});
  }
  // The caller gave request `id` up: it is not written if it waits, and gets no next page if it
  // is in flight (its replies are still read and dropped). It completes with ConnectionError.
  void cancel(std::uint64_t id);
  // Raw commands (`count` replies, returned as they are, error replies included).
  void submit_raw(std::uint64_t id, std::string wire, std::size_t count, Clock::time_point started);

  // ---- What the driver saw.
  // A socket is open: the handshake (AUTH, SELECT, CLIENT SETNAME) is written first, alone.
  void connected(Clock::time_point now);
  // Opening a socket failed: nothing was sent, the waiting requests fail with `error`.
  void connect_failed(const std::exception_ptr& error);
  void received(const char* data, std::size_t size, Clock::time_point now);
  // What take_write() gave is on the wire.
  void wrote();
  // The socket failed or the server closed it.
  void lost(const std::exception_ptr& error, Clock::time_point now);
  void tick(Clock::time_point now);
  // Every request fails with `error` (the client is closing).
  void abort(const std::exception_ptr& error);
  // This server is no longer the one to use (a READONLY reply: it is a replica now; Sentinel
  // announced a new primary): nothing more is written on this connection, the requests in
  // flight get their replies, then the core closes it and the waiting requests go on the next.
  // Undone by connected().
  void retire(Clock::time_point now);
  // A subscriber's connection: replies that answer no request are completions with id
  // kPushId (their one reply in `replies`) instead of a protocol error.
  void accept_pushes() { accept_pushes_ = true; }
  static constexpr std::uint64_t kPushId = 0;

  // ---- What the driver does next.
  bool connected() const { return connected_; }
  // Requests wait and there is no socket: the driver should open one.
  bool wants_connection() const { return !connected_ && !waiting_.empty(); }
  // The bytes to write now; empty when there is nothing to write or a write is still going.
  std::string take_write();
  // True once after the core gave up the connection: the driver closes its socket.
  bool take_close();
  bool has_completions() const { return !completions_.empty(); }
  std::vector<Completion> take_completions();
  // When tick() must be called at the latest (none: no deadline pending). May be early.
  std::optional<Clock::time_point> next_deadline() const { return deadline_hint_; }
  // Requests whose replies are still to come: those submitted and not completed, and those
  // failed by tick() behind a request the server holds (expired: completed, their replies to be
  // dropped when they come). A connection with any is not idle.
  std::size_t outstanding() const { return waiting_.size() + requests_in_flight_; }
  // Of those, the expired ones (completed already).
  std::size_t expired() const;
  // Why the connection was last given up (none yet: nullptr).
  const std::exception_ptr& last_error() const { return last_error_; }

 private:
  struct Request {
    std::uint64_t id = 0;
    std::unique_ptr<Exchange> exchange;  // none: a raw request or the handshake
    std::string wire;                    // raw requests and the handshake
    std::size_t expected = 0;
    std::vector<Reply> replies;
    std::optional<Clock::time_point> deadline;
    bool handshake = false;
    bool cancelled = false;
    // Completed already (TimeoutError) while its reply waited behind one the server holds on
    // purpose (server_wait: WAIT, XREAD BLOCK): its replies are still read, and dropped.
    bool expired = false;
    int resends_left = 0;           // guards: the exchange's resend_limit(), counted down
    bool read_resent = false;       // a read is sent again once after a lost reply
    double server_wait = 0;         // the exchange's server_wait(), added to its deadlines
    std::size_t assumed_bytes = 0;  // what its replies were expected to take when written
    std::size_t reply_bytes = 0;    // what they took, so far
    std::uint64_t written_at = 0;   // script_loads_.writes of the write that sent it
    // A read in two steps (SplitReads::kWhenIdle): each runs before anything submitted after it.
    bool ordered = false;
    // The scripts its step names by SHA that the server has not run for this connection yet.
    std::vector<const leaderboard::Script*> unconfirmed;
    // Ordered, or written with unconfirmed scripts: nothing is written behind it until its
    // reply (take_write), and its step sent again (NOSCRIPT) or its next one goes first.
    bool holding = false;
    bool requeued = false;  // put back at the front of waiting_ (finish), not written since
  };
  // The bytes a request's replies are expected to take (max_reply_bytes_in_flight only).
  std::size_t& learnt_bytes(const char* name);
  // A reply was taken: its bytes go to `request` (max_reply_bytes_in_flight only).
  void count_reply_bytes(Request* request);

  std::optional<Clock::time_point> deadline_from(Clock::time_point started,
                                                 double server_wait = 0) const;
  void enqueue(Request&& request);  // moved in once (by value: one more move and destructor)
  // `request` is written now: the scripts its step names by SHA that the server has not run
  // for this connection, and whether it holds what comes after it.
  void note_holding(Request& request);
  void on_reply(Reply&& reply, Clock::time_point now);
  // Where the next reply may stream (the front request's Exchange::reply_sink), or nullptr.
  codec::ReplySink* next_sink();
  void finish(Request&& request, Clock::time_point now);
  void complete(Request&& request, std::exception_ptr error);
  // Drops the connection: written requests fail with `error`; `close`: the driver must close.
  void give_up(const std::exception_ptr& error, bool close, Clock::time_point now);
  // The server sent what the protocol forbids (sending the request again would not help), as
  // opposed to a connection that dropped or a reply that was late.
  static bool is_protocol_error(const std::exception_ptr& error);
  void expire_waiting(Clock::time_point now);
  void note_deadline(const std::optional<Clock::time_point>& deadline);
  // Counts the socket among the process's open connections (observer.hpp), or no longer.
  void set_open(bool open);

  const ClientOptions& options_;
  const std::size_t max_in_flight_;
  const std::size_t max_reply_bytes_in_flight_;
  const SplitReads split_reads_;
  std::size_t bytes_in_flight_ = 0;  // the assumed_bytes of the requests in flight
  std::size_t reply_start_ = 0;      // reader_.consumed() when the last reply was taken
  struct Learnt {
    const char* name;   // an operation's name (a static string: compared by address)
    std::size_t bytes;  // what its replies took lately (a moving average)
  };
  std::vector<Learnt> learnt_;
  ScriptLoads script_loads_;  // the scripts loaded on this connection (Exchange::on_replies)
  // The scripts the server ran for this connection: an EVALSHA of one cannot come back
  // NOSCRIPT (but after a SCRIPT FLUSH). A request naming another by SHA holds the requests
  // behind it until its reply: a NOSCRIPT sends it again with the script's body, and one
  // written behind it would have run first (a player's two writes applied out of their order
  // after a restart or a failover emptied the server's script cache).
  std::vector<const leaderboard::Script*> known_scripts_;
  bool assume_scripts_loaded_ = false;  // assume_scripts_loaded()
  std::size_t holding_in_flight_ = 0;   // requests in flight with `holding`
  Counters& counters_;
  const Handshake handshake_;
  codec::ReplyReader reader_;

  std::deque<Request> waiting_;         // not written yet
  std::deque<Request> in_flight_;       // written, replies awaited, in order
  std::size_t requests_in_flight_ = 0;  // in_flight_ minus the handshake
  std::vector<Completion> completions_;
  bool connected_ = false;
  bool writing_ = false;
  bool ready_ = false;  // the handshake has been answered
  bool close_ = false;
  bool retiring_ = false;
  bool accept_pushes_ = false;
  bool open_ = false;  // counted in open_connections()
  std::optional<Clock::time_point> deadline_hint_;
  std::exception_ptr last_error_;
};

}  // namespace rlb::connection
