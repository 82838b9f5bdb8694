// The asyncio clients' core: Python futures for operations run on a transport driven by the
// event loop (a LoopClient: one node; a LoopCluster: Redis Cluster), and the few calls that let
// the loop drive it: watch the descriptors it names, arm its one timer, flush once per turn.
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "bindings/conversions.hpp"
#include "errors.hpp"
#include "transport/fork.hpp"
#include "transport/loop_client.hpp"
#include "transport/loop_cluster.hpp"

namespace rlb::bindings {

// obj.name() and obj.name(arg) without a bound method or an argument tuple.
inline py::object call_method(py::handle self, py::handle name) {
  PyObject* out = PyObject_CallMethodNoArgs(self.ptr(), name.ptr());
  if (!out) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(out);
}
inline py::object call_method(py::handle self, py::handle name, py::handle arg) {
  PyObject* out = PyObject_CallMethodOneArg(self.ptr(), name.ptr(), arg.ptr());
  if (!out) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(out);
}
inline bool is_done(py::handle future) { return call_method(future, names->done).ptr() == Py_True; }

// Futures for operations run on a transport (LoopClient or LoopCluster). Everything here runs on
// the event loop's thread with the GIL held, and so does the transport: the loop calls in when a
// descriptor it watches is readable or writable, when the timer fires and at the end of a turn
// in which calls were made. The transport runs every page of an operation itself, so a future
// is settled once, from its operation's final result.
//
// A LoopClient has one socket and one notify descriptor, watched with callbacks that take no
// argument (the one-node client's hot path); a LoopCluster names a set (watches()), each watched
// with a callback that takes its descriptor.
template <class Transport>
class AsyncCoreOf {
  static constexpr bool kOneSocket = std::is_same_v<Transport, transport::LoopClient>;

 public:
  AsyncCoreOf(std::shared_ptr<Transport> client, std::size_t max_pending,
              std::optional<connection::CacheOptions> cache = std::nullopt)
      : client_(std::move(client)),
        max_pending_(max_pending == 0 ? 1 : max_pending),
        cache_options_(cache),
        self_(std::make_shared<AsyncCoreOf*>(this)) {
    // The loop holds these callbacks; they hold no reference to this object.
    std::weak_ptr<AsyncCoreOf*> self = self_;
    auto hook = [self](void (AsyncCoreOf::*method)()) {
      return py::cpp_function([self, method] {
        if (auto alive = self.lock(); alive && *alive) ((*alive)->*method)();
      });
    };
    auto fd_hook = [self](void (AsyncCoreOf::*method)(int)) {
      return py::cpp_function([self, method](int fd) {
        if (auto alive = self.lock(); alive && *alive) ((*alive)->*method)(fd);
      });
    };
    on_flush_ = hook(&AsyncCoreOf::on_flush);
    on_timer_ = hook(&AsyncCoreOf::on_timer);
    if constexpr (kOneSocket) {
      on_readable_ = hook(&AsyncCoreOf::on_readable);
      on_writable_ = hook(&AsyncCoreOf::on_writable);
      on_notify_ = hook(&AsyncCoreOf::on_notify);
    } else {
      on_readable_ = fd_hook(&AsyncCoreOf::on_fd_readable);
      on_writable_ = fd_hook(&AsyncCoreOf::on_fd_writable);
    }
    on_paged_done_ = py::cpp_function([self](py::handle future) {
      if (auto alive = self.lock(); alive && *alive) (*alive)->paged_done(future);
    });
  }
  ~AsyncCoreOf() {
    *self_ = nullptr;
    if (forked()) return;
    try {
      unwatch();  // the loop must not watch a closed socket
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable(__func__);
    } catch (...) {
    }
  }
  AsyncCoreOf(const AsyncCoreOf&) = delete;
  AsyncCoreOf& operator=(const AsyncCoreOf&) = delete;

  // The event loop to run on: the first one, or a new one once the previous one is closed.
  void bind(py::handle loop) {
    check_owner();
    if (client_->closed()) throw ConnectionError("the client is closed");
    if (loop_ && !loop_.is(loop) && !loop_closed()) {
      PyErr_SetString(PyExc_RuntimeError,
                      kOneSocket ? "this redis_leaderboard.asyncio.Client is bound to the event "
                                   "loop it was first used on; create one client per event loop"
                                 : "this redis_leaderboard.asyncio.ClusterClient is bound to the "
                                   "event loop it was first used on; create one client per event "
                                   "loop");
      throw py::error_already_set();
    }
    reset_watch();
    loop_ = py::reinterpret_borrow<py::object>(loop);
    call_soon_ = loop_.attr("call_soon");
    call_later_ = loop_.attr("call_later");
    add_reader_ = loop_.attr("add_reader");
    remove_reader_ = loop_.attr("remove_reader");
    add_writer_ = loop_.attr("add_writer");
    remove_writer_ = loop_.attr("remove_writer");
    // asyncio's own loops and uvloop's make a plain asyncio.Future(loop=loop): made here
    // without the call into loop.create_future(). Other loops make their own.
    auto asyncio = py::module_::import("asyncio");
    future_type_ = makes_plain_futures(loop) ? py::object(asyncio.attr("Future")) : py::object();
    create_future_ = loop_.attr(names->create_future);
    future_kwargs_ = py::dict(py::arg("loop") = loop_);
    if constexpr (kOneSocket) {
      add_reader_(client_->notify_fd(), on_notify_);
      notify_watched_ = true;
    }
    if (client_->has_completions() || !pending_.empty()) schedule_flush();
    sync_watch();
  }

  // Runs `operation` on the running event loop; the returned future gets its result.
  py::object run(py::object operation) {
    static PyObject* get_running_loop =
        py::object(py::module_::import("asyncio").attr("get_running_loop")).release().ptr();
    PyObject* loop = PyObject_CallNoArgs(get_running_loop);
    if (!loop) throw py::error_already_set();
    return submit(std::move(operation), py::reinterpret_steal<py::object>(loop));
  }

  // Runs `operation` (a Python Operation); the returned future gets its result.
  py::object submit(py::object operation, py::handle loop) {
    check_owner();
    if (client_->closed()) throw ConnectionError("the client is closed");
    if (!loop.is(loop_)) bind(loop);
    auto taken = operation_arg(operation).take();
    py::object future = new_future();
    const std::uint64_t id = next_id_++;
    if (taken->paged()) {
      // Pages run in the transport: a cancelled call must stop them there.
      paged_ids_.emplace(future.ptr(), id);
      call_method(future, async_names().add_done_callback, on_paged_done_);
    }
    const auto now = transport::Clock::now();
    add_pending(id, Pending{future, nullptr});
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
    if (!loop.is(loop_)) bind(loop);
    auto stream = std::make_shared<Stream>();
    stream->iterator = py::iter(operations);
    stream->on_result = std::move(on_result);
    stream->window = std::max<std::size_t>(window, 1);
    stream->future = new_future();
    refill(stream);
    return stream->future;
  }

  // Fails every unsettled call with ConnectionError and closes the connection.
  void close() {
    if (forked()) return;
    unwatch();
    client_->close();  // completes every request it holds
    client_->close_retired();
    settle();
    auto error = std::make_exception_ptr(ConnectionError("the client is closed"));
    while (!pending_.empty()) settle_error(pending_.begin(), error);
    deferred_.clear();
  }

  std::size_t pending() const { return pending_.size(); }
  bool closed() const { return client_->closed(); }
  connection::Stats stats() const { return client_->stats(); }
  std::uint64_t calls() const { return calls_; }
  const connection::ClientOptions& options() const { return client_->options(); }
  Transport& transport() { return *client_; }
  // The client-side cache asked for (client_cache=True), built by the asyncio client.
  const std::optional<connection::CacheOptions>& cache_options() const { return cache_options_; }
  std::optional<std::pair<transport::Endpoint, std::uint64_t>> server() const {
    return client_->server();
  }

 private:
  struct AsyncNames {
    py::str add_done_callback{"add_done_callback"}, cancelled{"cancelled"}, cancel{"cancel"},
        is_closed{"is_closed"};
  };
  static const AsyncNames& async_names() {
    static const AsyncNames* made = new AsyncNames();  // never freed: outlives every client
    return *made;
  }

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
  using PendingMap = std::unordered_map<std::uint64_t, Pending>;
  using Iterator = typename PendingMap::iterator;
  struct Deferred {
    std::uint64_t id;
    std::unique_ptr<leaderboard::Operation> operation;
    transport::Clock::time_point started;  // when the call was made
  };

  // A call's entry in pending_, in a node of the map's that an earlier call left (spare_): no
  // allocation per call.
  void add_pending(std::uint64_t id, Pending pending) {
    if (spare_.empty()) {
      pending_.emplace(id, std::move(pending));
      return;
    }
    auto node = std::move(spare_.back());
    spare_.pop_back();
    node.key() = id;
    node.mapped() = std::move(pending);
    pending_.insert(std::move(node));
  }
  // Removes a call's entry; its node is kept for the next call (up to kMaxSpare of them).
  void drop_pending(Iterator it) {
    auto node = pending_.extract(it);
    node.mapped() = Pending{};  // the future or stream goes now, as erase() would
    if (spare_.size() < kMaxSpare) spare_.push_back(std::move(node));
  }
  static constexpr std::size_t kMaxSpare = 4096;

  // Whether loop.create_future() is asyncio's or uvloop's own (not overridden by a subclass):
  // both return asyncio.Future(loop=loop).
  static bool makes_plain_futures(py::handle loop) {
    auto own = py::type::handle_of(loop).attr("create_future");
    auto asyncio = py::module_::import("asyncio");
    if (own.is(asyncio.attr("BaseEventLoop").attr("create_future"))) return true;
    // uvloop is imported if the loop is one of its: looked up, never imported here.
    auto modules = py::module_::import("sys").attr("modules");
    if (!modules.contains("uvloop")) return false;
    auto uvloop = modules["uvloop"];
    return py::hasattr(uvloop, "Loop") && own.is(uvloop.attr("Loop").attr("create_future"));
  }

  py::object new_future() {
    if (future_type_) {
      PyObject* out = PyObject_Call(future_type_.ptr(), empty_args().ptr(), future_kwargs_.ptr());
      if (!out) throw py::error_already_set();
      return py::reinterpret_steal<py::object>(out);
    }
    return create_future_();
  }
  static const py::tuple& empty_args() {
    static const py::tuple* made = new py::tuple();
    return *made;
  }

  void send(std::uint64_t id, std::unique_ptr<leaderboard::Operation> operation,
            transport::Clock::time_point started) {
    // Written at once if the connection was idle; else at the end of this turn of the loop,
    // with every other call made in it.
    const bool written = client_->submit(id, std::move(operation), started);
    ++in_transport_;
    if (!written || client_->has_completions()) {
      schedule_flush();
    } else {
      sync_watch();
    }
  }

  void schedule_flush() {
    if (flush_scheduled_ || !loop_) return;
    flush_scheduled_ = true;
    call_soon_(on_flush_);
  }

  // ---- What the loop calls
  void on_flush() {
    flush_scheduled_ = false;
    if (forked()) return;
    client_->flush();
    after();
  }
  void on_readable() {
    if (forked()) return;
    client_->on_readable();
    after();
  }
  void on_writable() {
    if (forked()) return;
    client_->on_writable();
    after();
  }
  void on_notify() {
    if (forked()) return;
    client_->on_notify();
    after();
  }
  void on_timer() {
    timer_ = py::object();
    timer_at_.reset();
    if (forked()) return;
    client_->on_timer();
    after();
  }
  void on_fd_readable(int fd) {
    if (forked()) return;
    client_->on_readable(fd);
    after();
  }
  void on_fd_writable(int fd) {
    if (forked()) return;
    client_->on_writable(fd);
    after();
  }
  void after() {
    settle();
    sync_watch();
  }

  // The loop watches what the transport wants watched, and no closed socket.
  void sync_watch() {
    if (!loop_ || client_->closed()) return;
    if constexpr (kOneSocket) {
      watch_socket();
    } else {
      watch_set();
    }
    client_->close_retired();  // none of them is watched now
    const auto wakeup = client_->wakeup_at();
    if (wakeup && (!timer_at_ || *wakeup < *timer_at_)) {
      if (timer_) call_method(timer_, async_names().cancel);
      const std::chrono::duration<double> delay = *wakeup - transport::Clock::now();
      timer_ = call_later_(std::max(0.0, delay.count()), on_timer_);
      timer_at_ = wakeup;
    }
  }
  void watch_socket() {
    const int readable = client_->readable_fd();
    if (readable != reader_fd_) {
      if (reader_fd_ >= 0) remove_reader_(reader_fd_);
      reader_fd_ = -1;
      if (readable >= 0) add_reader_(readable, on_readable_);
      reader_fd_ = readable;
    }
    const int writable = client_->writable_fd();
    if (writable != writer_fd_) {
      if (writer_fd_ >= 0) remove_writer_(writer_fd_);
      writer_fd_ = -1;
      if (writable >= 0) add_writer_(writable, on_writable_);
      writer_fd_ = writable;
    }
  }
  // A set of descriptors: what is watched follows what the transport names (a descriptor it
  // gave up stays open until close_retired(), so its number is not reused meanwhile).
  void watch_set() {
    const bool changed = client_->take_watches_changed();
    if (!changed && !watched_stale_) return;  // most calls: the registrations stay
    watched_stale_ = false;
    const auto& wanted = client_->watches();
    for (auto it = watched_.begin(); it != watched_.end();) {
      auto want = std::find_if(wanted.begin(), wanted.end(),
                               [&](const auto& watch) { return watch.fd == it->first; });
      const bool read = want != wanted.end() && want->read;
      const bool write = want != wanted.end() && want->write;
      if (it->second.read && !read) remove_reader_(it->first);
      if (it->second.write && !write) remove_writer_(it->first);
      it->second.read = it->second.read && read;
      it->second.write = it->second.write && write;
      it = it->second.read || it->second.write ? std::next(it) : watched_.erase(it);
    }
    for (const auto& want : wanted) {
      auto& state = watched_[want.fd];
      if (want.read && !state.read) add_reader_(want.fd, on_readable_, want.fd);
      if (want.write && !state.write) add_writer_(want.fd, on_writable_, want.fd);
      state.read = state.read || want.read;
      state.write = state.write || want.write;
    }
  }

  bool loop_closed() const { return call_method(loop_, async_names().is_closed).ptr() == Py_True; }

  // Stops watching (if the loop is still open) and closes what the transport gave up.
  void unwatch() {
    if (loop_ && !loop_closed()) {
      if (reader_fd_ >= 0) remove_reader_(reader_fd_);
      if (writer_fd_ >= 0) remove_writer_(writer_fd_);
      if constexpr (kOneSocket) {
        if (notify_watched_) remove_reader_(client_->notify_fd());
      }
      for (const auto& [fd, state] : watched_) {
        if (state.read) remove_reader_(fd);
        if (state.write) remove_writer_(fd);
      }
      if (timer_) call_method(timer_, async_names().cancel);
    }
    reset_watch();
    client_->close_retired();
  }
  void reset_watch() {
    reader_fd_ = writer_fd_ = -1;
    watched_.clear();
    watched_stale_ = true;  // watch_set() registers the whole set again
    notify_watched_ = false;
    timer_ = py::object();
    timer_at_.reset();
    flush_scheduled_ = false;
  }

  // Settles every finished request, then lets deferred calls in.
  void settle() {
    PumpAtExit pump;
    if (client_->has_completions()) {
      for (auto& completion : client_->take_completions()) {
        --in_transport_;
        auto it = pending_.find(completion.id);
        if (it == pending_.end()) continue;
        if (it->second.stream) {
          auto stream = std::move(it->second.stream);
          drop_pending(it);
          on_stream_result(stream, completion);
          continue;
        }
        py::object future = std::move(it->second.future);
        drop_pending(it);
        if (is_done(future)) continue;  // cancelled: the result is dropped
        // Whatever fails here (a reply that is not UTF-8) fails this future only: every other
        // one must be settled.
        try {
          if (completion.error) {
            call_method(future, names->set_exception, exception_object(completion.error));
          } else {
            call_method(future, names->set_result, to_python(completion.result));
          }
        } catch (py::error_already_set& e) {
          if (!is_done(future)) call_method(future, names->set_exception, e.value());
        }
      }
    }
    while (!deferred_.empty() && in_transport_ < max_pending_ && !client_->closed()) {
      Deferred deferred = std::move(deferred_.front());
      deferred_.pop_front();
      auto it = pending_.find(deferred.id);
      if (it == pending_.end()) continue;
      if (it->second.future && is_done(it->second.future)) {
        drop_pending(it);
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

  // A paged call (list_all, clear, set_max_entries) is done; if it was cancelled, its next
  // pages are not sent.
  void paged_done(py::handle future) {
    auto it = paged_ids_.find(future.ptr());
    if (it == paged_ids_.end()) return;
    const std::uint64_t id = it->second;
    paged_ids_.erase(it);
    if (forked() || client_->closed()) return;
    if (call_method(future, async_names().cancelled).ptr() == Py_True) {
      client_->cancel(id);
      after();
    }
  }

  void settle_error(Iterator it, const std::exception_ptr& error) {
    auto pending = std::move(it->second);
    drop_pending(it);
    if (pending.stream) {
      connection::Completion failed;
      failed.error = error;
      return on_stream_result(pending.stream, failed);
    }
    if (!is_done(pending.future)) {
      call_method(pending.future, names->set_exception, exception_object(error));
    }
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
        // In order, as written: a read of many entries is its one script here, not two steps
        // whose second would run after the operations written behind it (the connection
        // interleaves them for calls made concurrently: Core::SplitReads::kInterleaved).
        if (taken->in_two_steps()) taken = taken->in_one_trip();
        if (client_->closed()) throw ConnectionError("the client is closed");
        const std::uint64_t id = next_id_++;
        add_pending(id, Pending{py::object(), stream});
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
      call_method(stream->future, names->set_exception, stream->error);
    } else {
      call_method(stream->future, names->set_result, py::none());
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
  std::shared_ptr<Transport> client_;
  const std::size_t max_pending_;
  const std::optional<connection::CacheOptions> cache_options_;
  std::shared_ptr<AsyncCoreOf*> self_;  // the callbacks' way back here; null once destroyed
  PendingMap pending_;
  std::vector<typename PendingMap::node_type> spare_;       // see add_pending
  std::unordered_map<PyObject*, std::uint64_t> paged_ids_;  // a future lives until its callback
  std::deque<Deferred> deferred_;
  std::size_t in_transport_ = 0;
  std::uint64_t next_id_ = 1;
  std::uint64_t calls_ = 0;

  // The event loop and what is registered with it.
  py::object loop_, call_soon_, call_later_, add_reader_, remove_reader_, add_writer_,
      remove_writer_, create_future_, future_type_, future_kwargs_;
  py::object on_flush_, on_readable_, on_writable_, on_notify_, on_timer_, on_paged_done_;
  int reader_fd_ = -1, writer_fd_ = -1;  // a LoopClient's
  struct Watched {
    bool read = false, write = false;
  };
  std::map<int, Watched> watched_;  // a LoopCluster's
  bool watched_stale_ = true;       // watched_ may differ from client_->watches()
  bool notify_watched_ = false;
  bool flush_scheduled_ = false;
  py::object timer_;  // the loop's TimerHandle for timer_at_
  std::optional<transport::Clock::time_point> timer_at_;
};

using AsyncCore = AsyncCoreOf<transport::LoopClient>;
using AsyncClusterCore = AsyncCoreOf<transport::LoopCluster>;

}  // namespace rlb::bindings
