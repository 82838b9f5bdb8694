// The rank-window reader (operations.cpp's WindowReader, behind get_top, get_around_rank,
// get_around_user, get_page, get_by_score and list_all's pages) and the replies of a few other
// operations, run as the connection core runs them: an Exchange, its replies decoded by a
// ReplyReader into the sink the operation offers (streamed) or into a tree (replayed).
//
// Input: byte 0 picks the operation, byte 1 the board's tie rule and whether replies stream,
// byte 2 the chunk size; the rest is what the server answers, step after step.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codec/resp.hpp"
#include "common.hpp"
#include "connection/exchange.hpp"
#include "leaderboard/operations.hpp"

namespace {

using rlb::codec::Reply;
using rlb::leaderboard::Board;
using rlb::leaderboard::Operation;

std::unique_ptr<Operation> operation(const Board& board, std::uint8_t pick) {
  switch (pick % 10) {
    case 0:
      return board.get_top(10);
    case 1:
      return board.get_around_rank(5, 4);
    case 2:
      return board.get_around_user("u", 3);
    case 3:
      return board.get_page(2, 3);
    case 4:
      return board.get_by_score(-1e9, 1e9, 1, 5);
    case 5:
      return board.list_all();
    case 6:
      return board.get_entries({"a", "b", "c"});
    case 7:
      return board.submit("u", 1.5, {{"name", "Ada"}}, rlb::leaderboard::WriteMode::Best, "sid");
    case 8:
      return board.get_user_entry("u");
    default:
      return board.clear();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  const std::uint8_t pick = input.ConsumeIntegral<std::uint8_t>();
  const std::uint8_t mode = input.ConsumeIntegral<std::uint8_t>();
  const std::size_t chunk = 1 + input.ConsumeIntegral<std::uint8_t>() % 64;
  const std::string wire = input.ConsumeRemainingBytesAsString();

  static const rlb::leaderboard::Ties kTies[] = {
      rlb::leaderboard::Ties::Lexicographic, rlb::leaderboard::Ties::First,
      rlb::leaderboard::Ties::Competition, rlb::leaderboard::Ties::Dense};
  const bool streamed = (mode & 0x10) == 0;
  rlb::fuzz::expect_only_project_errors([&] {
    const Board board("lb", 1000,
                      (mode & 4) ? rlb::leaderboard::Order::Asc : rlb::leaderboard::Order::Desc,
                      kTies[mode & 3]);
    rlb::connection::Exchange exchange(operation(board, pick));
    rlb::codec::ReplyReader reader((mode & 0x20) ? 64 * 1024 : rlb::codec::kDefaultMaxReplyBytes);
    std::vector<Reply> replies;
    std::size_t at = 0;
    int steps = 0;
    while (!exchange.finished() && steps++ < 64) {
      while (replies.size() < exchange.expected()) {
        auto* sink = streamed ? exchange.reply_sink(replies.size()) : nullptr;
        if (auto reply = reader.next(sink)) {
          replies.push_back(std::move(*reply));
          continue;
        }
        if (at >= wire.size()) return;  // the server said no more
        const std::size_t n = std::min(chunk, wire.size() - at);
        reader.feed(wire.data() + at, n);
        at += n;
      }
      exchange.on_replies(std::move(replies));
      replies.clear();
    }
    if (exchange.finished()) (void)exchange.take_result();
  });
  return 0;
}
