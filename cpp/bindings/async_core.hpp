// The asyncio client's core: Python futures for operations run on a MultiplexedClient.
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <chrono>
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

// Futures for operations run on a MultiplexedClient. Everything here runs on the event loop's
// thread with the GIL held; the I/O thread only sees operations and ids, and runs every page of
// an operation itself, so a future is settled once, from its operation's final result.
class AsyncCore {
 public:
  AsyncCore(connection::ClientOptions options, std::size_t max_in_flight, std::size_t max_pending)
      : client_(transport::MultiplexedClient::create(std::move(options), max_in_flight)),
        max_pending_(max_pending == 0 ? 1 : max_pending),
        outbox_(std::make_shared<Outbox>(Outbox{client_, {}})),
        flush_(py::cpp_function([outbox = std::weak_ptr<Outbox>(outbox_)] {
          if (auto alive = outbox.lock()) alive->flush();
        })),
        paged_(std::make_shared<PagedCalls>(PagedCalls{client_, {}})),
        on_paged_done_(
            py::cpp_function([paged = std::weak_ptr<PagedCalls>(paged_)](py::handle future) {
              if (auto alive = paged.lock()) alive->done(future);
            })) {}

  // Runs `operation` (a Python Operation); the returned future gets its result.
  py::object submit(py::object operation, py::handle loop) {
    check_owner();
    if (client_->closed()) throw ConnectionError("the client is closed");
    if (!loop.is(loop_)) {
      loop_ = py::reinterpret_borrow<py::object>(loop);
      call_soon_ = loop_.attr("call_soon");
    }
    auto taken = operation_arg(operation).take();
    py::object future = loop.attr(names->create_future)();
    const std::uint64_t id = next_id_++;
    if (taken->paged()) {
      // Pages run on the I/O thread: a cancelled call must stop them there.
      paged_->ids.emplace(future.ptr(), id);
      future.attr("add_done_callback")(on_paged_done_);
    }
    const auto now = transport::Clock::now();
    pending_.emplace(id, Pending{future, nullptr});
    if (in_transport_ < max_pending_) {
      send(id, std::move(taken), now);
    } else {
      // Back-pressure: waits here, not in the transport's queues.
      deferred_.push_back(Deferred{id, std::move(taken), now});
    }
    ++calls_;
    return future;
  }

  // upsert_many's window, the same policy as the sync client's run_pipelined: up to `window`
  // operations of `operations` (an iterator, read on this thread as room frees up) in flight on
  // the connection, in order; `on_result` gets each result in order. The returned future gets
  // None once all are done, or the first error (raised by the iterator, an operation or
  // `on_result`) once the ones already in flight are done; no operation is taken after it.
  py::object run_pipelined(py::object operations, py::object on_result, std::size_t window,
                           py::handle loop) {
    check_owner();
    if (client_->closed()) throw ConnectionError("the client is closed");
    if (!loop.is(loop_)) {
      loop_ = py::reinterpret_borrow<py::object>(loop);
      call_soon_ = loop_.attr("call_soon");
    }
    auto stream = std::make_shared<Stream>();
    stream->iterator = py::iter(operations);
    stream->on_result = std::move(on_result);
    stream->window = std::max<std::size_t>(window, 1);
    stream->future = loop.attr(names->create_future)();
    refill(stream);
    return stream->future;
  }

  // Called by the event loop when notify_fd() is readable: settles every finished request.
  void drain() {
    // A forked child shares the parent's eventfd: reading it would swallow the parent's wake-ups.
    if (forked()) return;
    for (auto& completion : client_->take_completions()) {
      --in_transport_;
      auto it = pending_.find(completion.id);
      if (it == pending_.end()) continue;
      if (it->second.stream) {
        auto stream = std::move(it->second.stream);
        pending_.erase(it);
        on_stream_result(stream, completion);
        continue;
      }
      py::object future = std::move(it->second.future);
      pending_.erase(it);
      if (is_done(future)) continue;  // cancelled: the result is dropped
      // Whatever fails here (a reply that is not UTF-8) fails this future only: the loop's
      // reader callback must settle every other one.
      try {
        if (completion.error) {
          future.attr(names->set_exception)(exception_object(completion.error));
        } else {
          future.attr(names->set_result)(to_python(completion.result));
        }
      } catch (py::error_already_set& e) {
        if (!is_done(future)) future.attr(names->set_exception)(e.value());
      }
    }
    while (!deferred_.empty() && in_transport_ < max_pending_) {
      Deferred deferred = std::move(deferred_.front());
      deferred_.pop_front();
      auto it = pending_.find(deferred.id);
      if (it == pending_.end()) continue;
      if (it->second.future && is_done(it->second.future)) {
        pending_.erase(it);
        continue;
      }
      // socket_timeout counts from the call: a call that waited here past it fails unsent.
      const auto& timeout = client_->options().socket_timeout;
      if (timeout &&
          transport::Clock::now() - deferred.started >= std::chrono::duration<double>(*timeout)) {
        settle_error(it, std::make_exception_ptr(TimeoutError("Timeout waiting to send to " +
                                                              client_->options().address())));
        continue;
      }
      send(deferred.id, std::move(deferred.operation), deferred.started);
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
  connection::Stats stats() const { return client_->stats(); }
  std::uint64_t calls() const { return calls_; }
  const connection::ClientOptions& options() const { return client_->options(); }

 private:
  // One upsert_many: its iterator of operations and the ids in flight, oldest first.
  struct Stream {
    py::object iterator, on_result, future;
    std::size_t window = 1;
    std::deque<std::uint64_t> in_flight;
    bool exhausted = false;
    py::object error;  // the first failure, raised once the ones in flight are done
  };
  struct Pending {
    py::object future;               // a call's future, or
    std::shared_ptr<Stream> stream;  // the upsert_many this request belongs to
  };
  using Iterator = std::unordered_map<std::uint64_t, Pending>::iterator;
  struct Deferred {
    std::uint64_t id;
    std::unique_ptr<leaderboard::Operation> operation;
    transport::Clock::time_point started;  // when the call was made
  };

  // The futures of paged calls (list_all, clear, set_max_entries) and their ids: one callback,
  // made once, tells the transport when such a call is cancelled.
  struct PagedCalls {
    std::weak_ptr<transport::MultiplexedClient> client;
    std::unordered_map<PyObject*, std::uint64_t> ids;  // a future is alive until its callback

    void done(py::handle future) {
      auto it = ids.find(future.ptr());
      if (it == ids.end()) return;
      const std::uint64_t id = it->second;
      ids.erase(it);
      auto alive = client.lock();
      if (alive && future.attr("cancelled")().cast<bool>()) alive->cancel(id);
    }
  };

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

  void send(std::uint64_t id, std::unique_ptr<leaderboard::Operation> operation,
            transport::Clock::time_point started) {
    if (outbox_->items.empty()) call_soon_(flush_);
    outbox_->items.push_back({id, std::move(operation), started});
    ++in_transport_;
  }

  void settle_error(Iterator it, const std::exception_ptr& error) {
    auto pending = std::move(it->second);
    pending_.erase(it);
    if (pending.stream) {
      connection::Completion failed;
      failed.error = error;
      return on_stream_result(pending.stream, failed);
    }
    if (!is_done(pending.future))
      pending.future.attr(names->set_exception)(exception_object(error));
  }

  // Takes operations from the stream's iterator while there is room, none failed and the
  // caller still waits; settles the stream's future when nothing is left in flight.
  void refill(const std::shared_ptr<Stream>& stream) {
    while (!stream->error && !stream->exhausted && !is_done(stream->future) &&
           stream->in_flight.size() < stream->window) {
      try {
        auto item = py::reinterpret_steal<py::object>(PyIter_Next(stream->iterator.ptr()));
        if (!item) {
          if (PyErr_Occurred()) throw py::error_already_set();
          stream->exhausted = true;
          break;
        }
        auto taken = operation_arg(item).take();
        const std::uint64_t id = next_id_++;
        pending_.emplace(id, Pending{py::object(), stream});
        stream->in_flight.push_back(id);
        ++calls_;
        send(id, std::move(taken), transport::Clock::now());
      } catch (py::error_already_set& e) {
        stream->error = e.value();
      } catch (...) {
        stream->error = exception_object(std::current_exception());
      }
    }
    if (!stream->in_flight.empty() || is_done(stream->future)) return;
    if (stream->error) {
      stream->future.attr(names->set_exception)(stream->error);
    } else {
      stream->future.attr(names->set_result)(py::none());
    }
  }

  void on_stream_result(const std::shared_ptr<Stream>& stream, connection::Completion& completion) {
    auto& in_flight = stream->in_flight;
    in_flight.erase(std::remove(in_flight.begin(), in_flight.end(), completion.id),
                    in_flight.end());
    if (!stream->error && !is_done(stream->future)) {
      try {
        if (completion.error) std::rethrow_exception(completion.error);
        stream->on_result(to_python(completion.result));
      } catch (py::error_already_set& e) {
        stream->error = e.value();
      } catch (...) {
        stream->error = exception_object(std::current_exception());
      }
    }
    refill(stream);
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
  py::object flush_;  // calls outbox_->flush(); holds no reference to this object
  std::shared_ptr<PagedCalls> paged_;
  py::object on_paged_done_;  // calls paged_->done(future)
  py::object loop_;           // the event loop of the last submit
  py::object call_soon_;      // loop_.call_soon
  std::deque<Deferred> deferred_;
  std::size_t in_transport_ = 0;
  std::uint64_t next_id_ = 1;
  std::uint64_t calls_ = 0;
};

}  // namespace rlb::bindings
