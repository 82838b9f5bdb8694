// The asyncio client's core: Python futures for operations run on a MultiplexedClient.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>

#include "bindings/conversions.hpp"
#include "errors.hpp"
#include "transport/fork.hpp"
#include "transport/multiplexed_client.hpp"

namespace rlb::bindings {

inline bool is_done(const py::object& future) { return future.attr(names->done)().cast<bool>(); }

// The asyncio client's core: futures for operations run on a MultiplexedClient. Everything here
// runs on the event loop's thread with the GIL held; the I/O thread only sees ids and bytes.
class AsyncCore {
 public:
  AsyncCore(transport::ClientOptions options, std::size_t max_in_flight, std::size_t max_pending)
      : client_(make_client(std::move(options), max_in_flight)),
        max_pending_(max_pending == 0 ? 1 : max_pending),
        outbox_(std::make_shared<Outbox>(Outbox{client_, {}})),
        flush_(py::cpp_function([outbox = std::weak_ptr<Outbox>(outbox_)] {
          if (auto alive = outbox.lock()) alive->flush();
        })) {}

  // Runs `operation` (a Python Operation); the returned future gets its result.
  py::object submit(py::object operation, py::handle loop) {
    check_owner();
    if (client_->closed()) throw ConnectionError("the client is closed");
    if (!loop.is(loop_)) {
      loop_ = py::reinterpret_borrow<py::object>(loop);
      call_soon_ = loop_.attr("call_soon");
    }
    auto& op = operation_arg(operation);
    op.claim();
    transport::Exchange& exchange = op.start();
    py::object future = loop.attr(names->create_future)();
    const std::uint64_t id = next_id_++;
    const auto now = transport::Clock::now();
    if (in_transport_ < max_pending_) {
      send(id, exchange, now);
    } else {
      deferred_.push_back(id);  // back-pressure: waits here, not in the transport's queues
    }
    pending_.emplace(id, Pending{future, std::move(operation), &exchange, now});
    ++calls_;
    return future;
  }

  // Called by the event loop when notify_fd() is readable: settles every finished request.
  void drain() {
    // A forked child shares the parent's eventfd: reading it would swallow the parent's wake-ups.
    if (forked()) return;
    for (auto& completion : client_->take_completions()) {
      --in_transport_;
      auto it = pending_.find(completion.id);
      if (it == pending_.end()) continue;
      Pending& pending = it->second;
      if (is_done(pending.future)) {  // cancelled: the reply is dropped
        pending_.erase(it);
        continue;
      }
      if (completion.error) {
        settle_error(it, completion.error);
        continue;
      }
      // Whatever fails here (an error reply, a reply that is not UTF-8, a closed client) fails
      // this future only: the loop's reader callback must settle every other one.
      try {
        pending.exchange->on_replies(std::move(completion.replies));
        if (pending.exchange->finished()) {
          py::object result = to_python(pending.exchange->take_result());
          pending.future.attr(names->set_result)(result);
          pending_.erase(it);
        } else {
          // The operation's next page: its own socket_timeout, from now.
          send(completion.id, *pending.exchange, transport::Clock::now());
        }
      } catch (py::error_already_set& e) {
        settle_python_error(it, e);
      } catch (...) {
        settle_error(it, std::current_exception());
      }
    }
    while (!deferred_.empty() && in_transport_ < max_pending_) {
      auto it = pending_.find(deferred_.front());
      deferred_.pop_front();
      if (it == pending_.end()) continue;
      if (is_done(it->second.future)) {
        pending_.erase(it);
        continue;
      }
      try {
        // socket_timeout counts from the call: a call that waited here past it fails unsent.
        const auto& timeout = client_->options().socket_timeout;
        if (timeout && transport::Clock::now() - it->second.started >=
                           std::chrono::duration<double>(*timeout)) {
          throw TimeoutError("Timeout waiting to send to " + client_->options().address());
        }
        send(it->first, *it->second.exchange, it->second.started);
      } catch (...) {
        settle_error(it, std::current_exception());
      }
    }
  }

  // Stops the I/O thread; every unsettled future gets ConnectionError.
  void close() {
    if (forked()) return;
    outbox_->items.clear();  // never sent: their futures fail below
    {
      py::gil_scoped_release release;
      client_->close();
    }
    drain();
    auto error = std::make_exception_ptr(ConnectionError("the client is closed"));
    while (!pending_.empty()) settle_error(pending_.begin(), error);
    deferred_.clear();
  }

  int fileno() const {
    check_owner();  // before the event loop watches the (shared) eventfd in a forked child
    return client_->notify_fd();
  }
  std::size_t pending() const { return pending_.size(); }
  bool closed() const { return client_->closed(); }
  transport::Stats stats() const { return client_->stats(); }
  std::uint64_t calls() const { return calls_; }
  const transport::ClientOptions& options() const { return client_->options(); }

 private:
  struct Pending {
    py::object future;
    py::object operation;  // keeps the exchange alive
    transport::Exchange* exchange;
    transport::Clock::time_point started;  // when the call was made
  };
  using Iterator = std::unordered_map<std::uint64_t, Pending>::iterator;

  // A forked child must not run the parent's I/O thread's destructor: it leaks the client.
  static std::shared_ptr<transport::MultiplexedClient> make_client(transport::ClientOptions options,
                                                                   std::size_t max_in_flight) {
    const transport::ForkGuard owner;
    return std::shared_ptr<transport::MultiplexedClient>(
        new transport::MultiplexedClient(std::move(options), max_in_flight),
        [owner](transport::MultiplexedClient* client) {
          if (!owner.forked()) delete client;
        });
  }

  // Requests made during one turn of the event loop go to the I/O thread together, at the end
  // of the turn: one wake-up of the I/O thread per turn, not one per request.
  struct Outbox {
    std::shared_ptr<transport::MultiplexedClient> client;
    std::vector<transport::MultiplexedClient::Outgoing> items;

    void flush() {
      if (items.empty()) return;
      auto batch = std::move(items);
      items.clear();
      try {
        client->submit(std::move(batch));
      } catch (const RedisError&) {
        // Closed or forked meanwhile: close() settles these futures, fileno() reports the fork.
      }
    }
  };

  void send(std::uint64_t id, transport::Exchange& exchange, transport::Clock::time_point started) {
    if (outbox_->items.empty()) call_soon_(flush_);
    outbox_->items.push_back({id, exchange.wire(), exchange.expected(), started});
    ++in_transport_;
  }

  void settle_python_error(Iterator it, py::error_already_set& error) {
    py::object future = std::move(it->second.future);
    pending_.erase(it);
    if (!is_done(future)) future.attr(names->set_exception)(error.value());
  }

  void settle_error(Iterator it, const std::exception_ptr& error) {
    py::object future = std::move(it->second.future);
    pending_.erase(it);
    if (!is_done(future)) {
      future.attr(names->set_exception)(exception_object(error));
    }
  }

  bool forked() const { return fork_guard_.forked(); }
  void check_owner() const {
    if (forked()) {
      throw RedisError(
          "this asyncio client was created before fork(); create a new client in the child");
    }
  }

  const transport::ForkGuard fork_guard_;
  std::shared_ptr<transport::MultiplexedClient> client_;
  const std::size_t max_pending_;
  std::unordered_map<std::uint64_t, Pending> pending_;
  std::shared_ptr<Outbox> outbox_;
  py::object flush_;      // calls outbox_->flush(); holds no reference to this object
  py::object loop_;       // the event loop of the last submit
  py::object call_soon_;  // loop_.call_soon
  std::deque<std::uint64_t> deferred_;
  std::size_t in_transport_ = 0;
  std::uint64_t next_id_ = 1;
  std::uint64_t calls_ = 0;
};

}  // namespace rlb::bindings
