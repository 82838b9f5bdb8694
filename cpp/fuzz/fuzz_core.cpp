// The connection core (connection/core.hpp) as a driver runs it, in any order a driver may:
// requests submitted and cancelled, the socket opened, failing, written, fed bytes in any
// chunks, lost, retired, and time jumping forward; then the client closes (abort). Checked:
// no crash or sanitizer report, every request completes exactly once, and outstanding() counts
// what has not completed (and a handshake not yet written).
//
// Input: a few bytes of options, then events, each an opcode byte and its operands; the bytes
// a `received` event feeds are taken from the input too (a length byte, then that many bytes).
#include <fuzzer/FuzzedDataProvider.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "codec/resp.hpp"
#include "common.hpp"
#include "connection/core.hpp"
#include "connection/options.hpp"
#include "leaderboard/operations.hpp"

namespace {

using rlb::connection::ClientOptions;
using rlb::connection::Clock;
using rlb::connection::Core;
using rlb::connection::Counters;
using rlb::leaderboard::Board;
using rlb::leaderboard::Operation;

std::exception_ptr dropped() {
  return std::make_exception_ptr(rlb::ConnectionError("Connection reset by peer"));
}

std::unique_ptr<Operation> operation(const Board& board, const Board& guarded, std::uint8_t pick) {
  switch (pick % 9) {
    case 0:
      return board.get_size();
    case 1:
      return board.get_top(3);
    case 2:
      return board.upsert_user("u", 2.5, {{"name", "Ada"}});
    case 3:
      return guarded.submit("u", 1, {}, rlb::leaderboard::WriteMode::Set, "sid");  // resent
    case 4:
      return guarded.read_events("0-0", 10, 0.5);  // the server holds it (XREAD BLOCK)
    case 5:
      return board.list_all();  // pages
    case 6:
      return board.get_rank("u");
    case 7:
      return board.clear();
    default:
      return rlb::leaderboard::ping();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  ClientOptions options;
  const std::uint8_t flags = input.ConsumeIntegral<std::uint8_t>();
  if (flags & 1) options.password = "secret";
  if (flags & 2) options.username = "user";
  if (flags & 4) options.db = 3;
  if (flags & 8) options.client_name = "fuzz";
  if (flags & 16) options.socket_timeout = 0.001 * (1 + input.ConsumeIntegral<std::uint16_t>());
  if (flags & 32) options.max_reply_bytes = 64 + input.ConsumeIntegral<std::uint16_t>();
  options.hand_back_resends = (flags & 64) != 0;
  const std::size_t max_in_flight = 1 + input.ConsumeIntegral<std::uint8_t>() % 8;

  Counters counters;
  Core core(options, max_in_flight, counters);
  if (flags & 128) core.accept_pushes();
  rlb::leaderboard::Guards guards;
  guards.events = true;
  const Board board("lb", 100);
  const Board guarded("gb", 100, rlb::leaderboard::Order::Desc,
                      rlb::leaderboard::Ties::Lexicographic, guards);

  Clock::time_point now{};
  std::uint64_t next_id = 1;
  std::map<std::uint64_t, int> completed;  // id -> times completed
  std::size_t open = 0;                    // submitted, not completed
  bool write_pending = false;

  auto collect = [&] {
    for (auto& completion : core.take_completions()) {
      if (completion.id == Core::kPushId) continue;
      if (completion.id >= next_id) __builtin_trap();         // never submitted
      if (++completed[completion.id] != 1) __builtin_trap();  // completed twice
      --open;
    }
    // (A handshake waiting to be written counts too, as an unfinished exchange; so do the
    // requests failed behind one the server holds, whose replies are still to come.)
    const std::size_t unfinished = core.outstanding() - core.expired();
    if (unfinished < open || unfinished > open + 1) __builtin_trap();
  };

  int events = 0;
  while (input.remaining_bytes() > 0 && events++ < 512) {
    const std::uint8_t op = input.ConsumeIntegral<std::uint8_t>();
    switch (op % 13) {
      case 0:
      case 1: {
        const auto started = now - std::chrono::milliseconds(input.ConsumeIntegral<std::uint8_t>());
        rlb::fuzz::expect_only_project_errors([&] {
          if (op & 0x80) {
            std::string wire;
            rlb::codec::encode_command({"PING"}, wire);
            core.submit_raw(next_id, wire + wire, 2, started);
          } else {
            core.submit(next_id, operation(board, guarded, op >> 4), started);
          }
        });
        ++next_id;
        ++open;
        break;
      }
      case 2:
        core.cancel(1 + input.ConsumeIntegral<std::uint8_t>() % next_id);
        break;
      case 3:
        if (!core.connected()) core.connected(now);
        break;
      case 4:
        if (!core.connected()) core.connect_failed(dropped());
        break;
      case 5: {
        if (write_pending) break;
        const std::string out = core.take_write();
        if (!out.empty()) write_pending = true;
        break;
      }
      case 6:
        if (write_pending && core.connected()) {
          core.wrote();
          write_pending = false;
        }
        break;
      case 7:
      case 8: {
        const std::string bytes = input.ConsumeBytesAsString(input.ConsumeIntegral<std::uint8_t>());
        core.received(bytes.data(), bytes.size(), now);
        break;
      }
      case 9:
        core.lost(dropped(), now);
        break;
      case 10:
        now += std::chrono::milliseconds(input.ConsumeIntegral<std::uint16_t>());
        core.tick(now);
        break;
      case 11:
        core.retire(now);
        break;
      default:
        if (core.next_deadline()) core.tick(*core.next_deadline());
        break;
    }
    if (!core.connected()) write_pending = false;  // the driver closed that socket
    (void)core.take_close();
    (void)core.wants_connection();
    collect();
  }
  core.abort(dropped());
  collect();
  if (open != 0 || core.outstanding() != 0) __builtin_trap();  // the close failed them all
  return 0;
}
