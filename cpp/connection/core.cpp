#include "connection/core.hpp"

#include <algorithm>
#include <utility>

#include "connection/observer.hpp"
#include "errors.hpp"

namespace rlb::connection {

Core::Core(const ClientOptions& options, std::size_t max_in_flight, Counters& counters,
           std::size_t max_reply_bytes_in_flight, SplitReads split_reads)
    : options_(options),
      max_in_flight_(std::max<std::size_t>(max_in_flight, 1)),
      max_reply_bytes_in_flight_(max_reply_bytes_in_flight),
      split_reads_(split_reads),
      counters_(counters),
      handshake_(handshake_for(options)),
      reader_(options.max_reply_bytes) {}

Core::~Core() { set_open(false); }

void Core::set_open(bool open) {
  if (open == open_) return;
  open_ = open;
  if (open) {
    connection_opened();
  } else {
    connection_closed();
  }
}

std::optional<Clock::time_point> Core::deadline_from(Clock::time_point started,
                                                     double server_wait) const {
  if (!options_.socket_timeout) return std::nullopt;
  return started + std::chrono::duration_cast<Clock::duration>(
                       std::chrono::duration<double>(*options_.socket_timeout + server_wait));
}

void Core::note_deadline(const std::optional<Clock::time_point>& deadline) {
  if (deadline && (!deadline_hint_ || *deadline < *deadline_hint_)) deadline_hint_ = deadline;
}

void Core::enqueue(Request&& request) {
  note_deadline(request.deadline);
  waiting_.push_back(std::move(request));
}

// ---- Requests --------------------------------------------------------------------------------

void Core::submit(std::uint64_t id, std::unique_ptr<leaderboard::Operation> operation,
                  Clock::time_point started) {
  Request request;
  request.id = id;
  try {
    if (operation->in_two_steps() && split_reads_ != SplitReads::kInterleaved) {
      const auto other = [](const Request& queued) { return !queued.handshake; };
      request.ordered = split_reads_ == SplitReads::kWhenIdle &&
                        std::none_of(waiting_.begin(), waiting_.end(), other) &&
                        std::none_of(in_flight_.begin(), in_flight_.end(), other);
      if (!request.ordered) operation = operation->in_one_trip();
    }
    request.exchange = std::make_unique<Exchange>(std::move(operation), options_.durability);
    if (request.exchange->finished()) {  // nothing to send (an empty chunk)
      completions_.push_back({id, request.exchange->take_result(), {}, nullptr});
      return;
    }
  } catch (...) {
    return complete(std::move(request), std::current_exception());
  }
  request.resends_left = request.exchange->resend_limit();  // guards
  request.server_wait = request.exchange->server_wait();
  request.deadline = deadline_from(started, request.server_wait);
  request.expected = request.exchange->expected();
  enqueue(std::move(request));
}

void Core::submit(std::uint64_t id, std::unique_ptr<Exchange> exchange, Clock::time_point started) {
  Request request;
  request.id = id;
  request.server_wait = exchange->server_wait();
  request.deadline = deadline_from(started, request.server_wait);
  request.expected = exchange->expected();
  request.exchange = std::move(exchange);
  enqueue(std::move(request));
}

void Core::submit_raw(std::uint64_t id, std::string wire, std::size_t count,
                      Clock::time_point started) {
  Request request;
  request.id = id;
  request.wire = std::move(wire);
  request.expected = count;
  request.deadline = deadline_from(started);
  enqueue(std::move(request));
}

void Core::cancel(std::uint64_t id) {
  auto cancelled = [] {
    return std::make_exception_ptr(ConnectionError("the request was cancelled"));
  };
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if (it->id == id && !it->handshake) {
      complete(std::move(*it), cancelled());
      waiting_.erase(it);
      return;
    }
  }
  for (auto& request : in_flight_) {
    if (request.id == id && !request.handshake) request.cancelled = true;
  }
}

void Core::complete(Request&& request, std::exception_ptr error) {
  completions_.push_back({request.id, {}, {}, std::move(error)});
}

std::vector<Completion> Core::take_completions() {
  std::vector<Completion> out;
  out.swap(completions_);
  // The next batch is likely as large: room for it at once, not grown one doubling at a time
  // (each doubling a malloc and a move of every completion so far).
  completions_.reserve(out.size());
  return out;
}

// ---- The connection --------------------------------------------------------------------------

void Core::connected(Clock::time_point now) {
  connected_ = true;
  set_open(true);
  writing_ = false;
  close_ = false;
  retiring_ = false;
  reader_.reset();
  script_loads_ = {};
  known_scripts_.clear();  // a new connection: maybe another server, or a restarted one
  holding_in_flight_ = 0;
  reply_start_ = 0;
  bytes_in_flight_ = 0;
  ready_ = handshake_.expected == 0;
  if (ready_) return;
  Request handshake;
  handshake.handshake = true;
  handshake.wire = handshake_.wire;
  handshake.expected = handshake_.expected;
  handshake.deadline = deadline_from(now);
  note_deadline(handshake.deadline);
  waiting_.push_front(std::move(handshake));
}

void Core::connect_failed(const std::exception_ptr& error) {
  connected_ = false;
  set_open(false);
  // Nothing was sent: the waiting requests fail now; the next submission tries again. A
  // cluster node's are handed back instead: the cluster client sends them to whichever node
  // serves their slot (the node may be failing over).
  for (auto& request : waiting_) {
    if (request.handshake) continue;
    if (options_.hand_back_resends && request.exchange && !request.cancelled) {
      Completion back{request.id, {}, {}, error};
      back.redirected = std::move(request.exchange);
      back.unsent = true;
      completions_.push_back(std::move(back));
    } else {
      complete(std::move(request), error);
    }
  }
  waiting_.clear();
}

std::string Core::take_write() {
  if (!connected_ || writing_ || retiring_) return {};
  std::string out;
  if (!ready_) {
    // The handshake goes alone: a request must never run before SELECT took effect.
    if (waiting_.empty() || !waiting_.front().handshake) return {};
    out = std::move(waiting_.front().wire);
    in_flight_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
    writing_ = true;
    return out;
  }
  // Room for every request that may go (an upper bound: the bytes' limit may stop it sooner),
  // so the requests' bytes are copied once, not again with each growth of `out`.
  if (waiting_.size() > 1 && requests_in_flight_ < max_in_flight_) {
    const std::size_t room = std::min(waiting_.size(), max_in_flight_ - requests_in_flight_);
    std::size_t size = 0;
    for (std::size_t i = 0; i < room; ++i) {
      const Request& request = waiting_[i];
      size += request.exchange ? request.exchange->wire().size() : request.wire.size();
    }
    out.reserve(size);
  }
  // What the server holds on purpose ahead of each request (WAIT, XREAD BLOCK): it runs a
  // request only once those before it on the connection returned, so a write's deadline allows
  // their waits too. A write pipelined behind another's WAIT (the asyncio client's durable
  // writes) then gets its own answer, NotReplicatedError included, as on the sync client's
  // pool, instead of a timeout while it was still to run (and would run after). A read behind
  // them keeps its deadline and fails alone (tick).
  double held_ahead = 0;
  for (const auto& request : in_flight_) {
    if (!request.expired) held_ahead += request.server_wait;
  }
  std::size_t commands = 0;
  while (!waiting_.empty() && requests_in_flight_ < max_in_flight_ && holding_in_flight_ == 0) {
    Request& request = waiting_.front();
    if (held_ahead > 0 && request.deadline && request.exchange && !request.exchange->is_read()) {
      *request.deadline +=
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(held_ahead));
    }
    held_ahead += request.server_wait;
    if (max_reply_bytes_in_flight_ != 0) {
      const std::size_t bytes = request.exchange ? learnt_bytes(request.exchange->name()) : 0;
      if (bytes_in_flight_ != 0 && bytes_in_flight_ + bytes > max_reply_bytes_in_flight_) break;
      request.assumed_bytes = bytes;
      request.reply_bytes = 0;
      bytes_in_flight_ += bytes;
    }
    const std::string& wire = request.exchange ? request.exchange->wire() : request.wire;
    if (out.empty() && out.capacity() < wire.size()) {  // one request: its bytes, not a copy
      out = request.exchange ? request.exchange->take_wire() : std::move(request.wire);
    } else {
      out += wire;
      if (request.exchange) {
        request.exchange->take_wire();  // the exchange keeps no copy once written, as before
      } else {
        request.wire = std::string();
      }
    }
    commands += request.expected;
    request.written_at = script_loads_.writes + 1;  // this write's number
    request.requeued = false;
    note_holding(request);  // holding: nothing more in this write, nor until its reply
    in_flight_.push_back(std::move(request));
    waiting_.pop_front();
    ++requests_in_flight_;
  }
  if (!out.empty()) {
    writing_ = true;
    ++script_loads_.writes;
    counters_.round_trip(commands);
  }
  return out;
}

void Core::wrote() { writing_ = false; }

bool Core::take_close() { return std::exchange(close_, false); }

void Core::received(const char* data, std::size_t size, Clock::time_point now) {
  if (!connected_) return;
  try {
    reader_.feed(data, size);
    while (auto reply = reader_.next(next_sink())) {
      on_reply(std::move(*reply), now);
      if (!connected_) return;
    }
    // Every reply asked for is in, and bytes of another are: the server sent them unasked.
    if (in_flight_.empty() && reader_.has_partial() && !accept_pushes_) {
      throw codec::ProtocolError("Protocol error: bytes sent unasked");
    }
  } catch (const RedisError& e) {
    observe(Signal::connection_lost, options_.address() + ": " + e.what());
    return give_up(std::current_exception(), true, now);
  } catch (const std::exception& e) {  // out of memory: the same, never further
    observe(Signal::connection_lost, options_.address() + ": " + e.what());
    return give_up(std::make_exception_ptr(ConnectionError("Error reading from " +
                                                           options_.address() + ": " + e.what())),
                   true, now);
  }
  // A reply that keeps arriving does not keep its request alive past its deadline: a driver
  // whose socket always has bytes may never wait, so the deadline is checked with every chunk.
  if (deadline_hint_ && *deadline_hint_ <= now) tick(now);
}

codec::ReplySink* Core::next_sink() {
  if (in_flight_.empty()) return nullptr;
  Request& request = in_flight_.front();
  return request.exchange ? request.exchange->reply_sink(request.replies.size()) : nullptr;
}

std::size_t& Core::learnt_bytes(const char* name) {
  for (auto& learnt : learnt_) {
    if (learnt.name == name) return learnt.bytes;
  }
  learnt_.push_back({name, 0});
  return learnt_.back().bytes;
}

void Core::count_reply_bytes(Request* request) {
  const std::size_t consumed = reader_.consumed();
  if (request) request->reply_bytes += consumed - reply_start_;
  reply_start_ = consumed;
}

void Core::on_reply(Reply&& reply, Clock::time_point now) {
  if (max_reply_bytes_in_flight_ != 0) {
    count_reply_bytes(in_flight_.empty() ? nullptr : &in_flight_.front());
  }
  if (in_flight_.empty() && accept_pushes_) {
    Completion push{kPushId, {}, {}, nullptr};
    push.replies.push_back(std::move(reply));
    completions_.push_back(std::move(push));
    return;
  }
  if (in_flight_.empty()) throw codec::ProtocolError("Protocol error: a reply to no request");
  Request& request = in_flight_.front();
  request.replies.push_back(std::move(reply));
  if (request.replies.size() < request.expected) return;

  Request done = std::move(request);
  in_flight_.pop_front();
  if (max_reply_bytes_in_flight_ != 0 && !done.handshake) {
    bytes_in_flight_ -= done.assumed_bytes;
    if (done.exchange) {
      std::size_t& learnt = learnt_bytes(done.exchange->name());
      learnt = learnt == 0 ? done.reply_bytes : (learnt * 3 + done.reply_bytes) / 4;
    }
  }
  if (done.handshake) {
    try {
      check_handshake(handshake_, done.replies);
      ready_ = true;
    } catch (const RedisError&) {
      // Wrong credentials or db: every waiting request would fail the same way.
      auto error = std::current_exception();
      connect_failed(error);
      give_up(error, true, now);
    }
    return;
  }
  --requests_in_flight_;
  if (done.holding) {
    --holding_in_flight_;
    done.holding = false;
    // What it held waited for its WAIT too, as if written behind it (take_write's held_ahead):
    // a write's deadline allows it, a read keeps its own.
    if (done.server_wait > 0 && !done.expired) {
      const auto wait = std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(done.server_wait));
      for (auto& held : waiting_) {
        if (held.deadline && held.exchange && !held.exchange->is_read()) *held.deadline += wait;
      }
    }
    // Any reply shows the server has them; after NOSCRIPT the step goes again with their
    // bodies, which loads them.
    known_scripts_.insert(known_scripts_.end(), done.unconfirmed.begin(), done.unconfirmed.end());
    done.unconfirmed.clear();
  }
  finish(std::move(done), now);
  if (retiring_ && in_flight_.empty() && connected_) retire(now);
}

void Core::finish(Request&& request, Clock::time_point now) {
  if (request.expired) return;  // failed by tick(): its replies are dropped
  if (!request.exchange) {
    completions_.push_back({request.id, {}, std::move(request.replies), nullptr});
    return;
  }
  if (request.cancelled) {
    return complete(std::move(request),
                    std::make_exception_ptr(ConnectionError("the request was cancelled")));
  }
  try {
    request.exchange->on_replies(std::move(request.replies), &script_loads_, request.written_at);
    request.replies.clear();
    if (request.exchange->finished()) {
      completions_.push_back({request.id, request.exchange->take_result(), {}, nullptr});
      return;
    }
  } catch (const ClusterRedirectError&) {
    // Not run: the cluster client sends it again where the reply says.
    Completion redirected{request.id, {}, {}, std::current_exception()};
    redirected.redirected = std::move(request.exchange);
    completions_.push_back(std::move(redirected));
    return;
  } catch (const ReadOnlyError&) {
    // A replica answered (after a failover, or a DNS name moved to a new primary): this write
    // did not run; the next ones go to a new connection, to whatever the address is now.
    complete(std::move(request), std::current_exception());
    if (!retiring_) observe(Signal::failover, options_.address() + " answered READONLY");
    retiring_ = true;
    return;
  } catch (...) {  // an error reply, or a reply the operation cannot read: this request only
    return complete(std::move(request), std::current_exception());
  }
  // Its scripts re-sent with their body (NOSCRIPT): the same step of the same call, within
  // the call's deadline (a new one let a call end at twice its timeout after the server lost
  // its script cache: a failover, SCRIPT FLUSH). The operation's next page or step: written
  // like a new request, with a socket_timeout of its own.
  request.expected = request.exchange->expected();
  if (!request.exchange->resending_scripts()) {
    request.server_wait = request.exchange->server_wait();
    request.deadline = deadline_from(now, request.server_wait);
  }
  if (!request.ordered && !request.exchange->resending_scripts()) {
    return enqueue(std::move(request));
  }
  // First: it held what came after it (a read in two steps, or scripts the server had not run
  // for this connection, which a NOSCRIPT now sends again with their bodies), so nothing was
  // written behind it, and what waits was submitted after it; after those put back before it
  // (their replies came first, so they were written first).
  note_deadline(request.deadline);
  request.requeued = true;
  auto at = waiting_.begin();
  while (at != waiting_.end() && at->requeued) ++at;
  waiting_.insert(at, std::move(request));
}

void Core::note_holding(Request& request) {
  request.unconfirmed.clear();
  if (request.exchange && !assume_scripts_loaded_ && !request.exchange->resending_scripts()) {
    for (const auto& command : request.exchange->commands()) {
      const auto* script = command.script;
      const auto known = [script](const std::vector<const leaderboard::Script*>& scripts) {
        return std::find(scripts.begin(), scripts.end(), script) != scripts.end();
      };
      if (script != nullptr && !known(known_scripts_) && !known(request.unconfirmed)) {
        request.unconfirmed.push_back(script);
      }
    }
  }
  request.holding = request.ordered || !request.unconfirmed.empty();
  if (request.holding) ++holding_in_flight_;
}

void Core::give_up(const std::exception_ptr& error, bool close, Clock::time_point now) {
  connected_ = false;
  set_open(false);
  writing_ = false;
  ready_ = false;
  close_ = close_ || close;
  last_error_ = error;
  reader_.reset();
  // Written requests may have run: they fail, never re-sent, but for those that cannot apply
  // twice (guards), which go first on the next connection, in order, with a new deadline, and
  // reads, which go first on the next connection once, within their deadline (not extended).
  // Waiting ones go on a new connection, unless their time is up.
  const bool dropped = !is_protocol_error(error);
  std::deque<Request> resend;
  for (auto& request : in_flight_) {
    if (request.handshake || request.expired) continue;
    const bool read_again = request.exchange && !request.cancelled && !request.read_resent &&
                            dropped && (!request.deadline || now < *request.deadline) &&
                            request.exchange->is_read();
    if (!request.exchange || request.cancelled ||
        (!read_again && request.exchange->resend_limit() == 0)) {
      complete(std::move(request), error);
    } else if (options_.hand_back_resends) {  // the cluster client decides where it goes
      request.exchange->rewind();
      Completion back{request.id, {}, {}, error};
      back.redirected = std::move(request.exchange);
      completions_.push_back(std::move(back));
    } else if (read_again) {
      observe(Signal::read_retry,
              std::string(request.exchange->name()) + " on " + options_.address());
      request.read_resent = true;
      request.exchange->rewind();
      request.replies.clear();
      request.expected = request.exchange->expected();
      resend.push_back(std::move(request));
    } else if (request.resends_left == 0) {
      const std::string why = message_of(error);
      complete(std::move(request),
               std::make_exception_ptr(ConnectionError(
                   std::string(request.exchange->name()) + ": no reply after " +
                   std::to_string(request.exchange->resend_limit() + 1) +
                   " attempts (its submission id kept it from applying more than once): " + why)));
    } else {
      observe(Signal::resend, std::string(request.exchange->name()) + " on " + options_.address());
      --request.resends_left;
      request.exchange->rewind();
      request.replies.clear();
      request.expected = request.exchange->expected();
      request.deadline = deadline_from(now, request.server_wait);
      note_deadline(request.deadline);
      resend.push_back(std::move(request));
    }
  }
  in_flight_.clear();
  holding_in_flight_ = 0;
  for (auto& request : resend) request.holding = false;  // judged again when written
  bytes_in_flight_ = 0;
  reply_start_ = 0;  // the reader is reset
  if (!waiting_.empty() && waiting_.front().handshake) waiting_.pop_front();
  while (!resend.empty()) {
    waiting_.push_front(std::move(resend.back()));
    resend.pop_back();
  }
  requests_in_flight_ = 0;
  expire_waiting(now);
}

bool Core::is_protocol_error(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const codec::ProtocolError&) {
    return true;
  } catch (...) {
    return false;
  }
}

void Core::lost(const std::exception_ptr& error, Clock::time_point now) {
  if (!connected_) return;
  observe(Signal::connection_lost, message_of(error));
  if (!ready_) {
    // Lost before the handshake was answered (a TLS server refusing the client's certificate
    // once its own handshake is done, a server closing at once): no request was sent, so those
    // waiting fail now with the cause, as after a failed connect.
    connect_failed(error);
  }
  give_up(error, false, now);
}

void Core::retire(Clock::time_point now) {
  if (!connected_) return;
  retiring_ = true;
  if (in_flight_.empty()) {
    give_up(std::make_exception_ptr(ConnectionError("Connection to " + options_.address() +
                                                    " was closed: the primary changed")),
            true, now);
  }
}

void Core::abort(const std::exception_ptr& error) {
  for (auto* queue : {&in_flight_, &waiting_}) {
    for (auto& request : *queue) {
      if (!request.handshake && !request.expired) complete(std::move(request), error);
    }
    queue->clear();
  }
  requests_in_flight_ = 0;
  holding_in_flight_ = 0;
  bytes_in_flight_ = 0;
  connected_ = writing_ = ready_ = false;
  set_open(false);
  reader_.reset();
  reply_start_ = 0;
  deadline_hint_.reset();
}

// ---- Time ------------------------------------------------------------------------------------

void Core::expire_waiting(Clock::time_point now) {
  if (std::none_of(waiting_.begin(), waiting_.end(), [&](const Request& request) {
        return request.deadline && *request.deadline <= now && !request.handshake;
      })) {
    return;
  }
  std::deque<Request> keep;
  for (auto& request : waiting_) {
    if (request.deadline && *request.deadline <= now && !request.handshake) {
      // Never written, so never run: failing it is safe.
      observe(Signal::timeout, "waiting to send to " + options_.address());
      complete(std::move(request), std::make_exception_ptr(TimeoutError(
                                       "Timeout waiting to send to " + options_.address())));
    } else {
      keep.push_back(std::move(request));
    }
  }
  waiting_.swap(keep);
}

std::size_t Core::expired() const {
  return static_cast<std::size_t>(std::count_if(in_flight_.begin(), in_flight_.end(),
                                                [](const Request& r) { return r.expired; }));
}

void Core::tick(Clock::time_point now) {
  if (connected_) {
    // A request the server holds on purpose (server_wait: WAIT, XREAD BLOCK) delays the replies
    // of those written after it on this connection: one of them overdue before it is failed
    // alone (its replies dropped when they come); any other overdue reply means the connection
    // is stuck (replies come in order).
    bool held = false;
    for (auto& request : in_flight_) {
      if (request.expired) continue;
      const bool overdue = request.deadline && *request.deadline <= now;
      if (overdue && held && !request.handshake) {
        observe(Signal::timeout, "reading from " + options_.address());
        request.expired = true;
        const bool write = request.exchange && !request.exchange->is_read();
        completions_.push_back(
            {request.id,
             {},
             {},
             std::make_exception_ptr(TimeoutError(
                 "Timeout reading from " + options_.address() +
                 " (behind a request the server holds: WAIT or a block" +
                 (write ? "; this write was sent, and may be applied once the server runs it)"
                        : ")")))});
        continue;
      }
      if (overdue) {
        observe(Signal::timeout, "reading from " + options_.address());
        give_up(std::make_exception_ptr(TimeoutError("Timeout reading from " + options_.address())),
                true, now);
        break;
      }
      held = held || request.server_wait > 0;
    }
  }
  expire_waiting(now);
  deadline_hint_.reset();
  for (const auto* queue : {&in_flight_, &waiting_}) {
    for (const auto& request : *queue) {
      if (!request.expired) note_deadline(request.deadline);
    }
  }
}

}  // namespace rlb::connection
