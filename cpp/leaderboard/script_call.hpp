// One script call of a league, a tournament or a team board, and the reading of its reply: what
// league.cpp, tournament.cpp and team.cpp share. `what` names the operation as the user calls it
// ("League.submit"): it is the operation's name (in timeout messages) and appears in
// unexpected-reply errors.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "leaderboard/operations.hpp"

namespace rlb::leaderboard::script_call {

[[noreturn]] void unexpected(const char* what);

// `call` (a generated calls:: function) given the elements of `parts`, tuples of named
// arguments, in turn: what every call of a script sends is built once, and a missing or
// misplaced argument is still a compile error.
template <class Call, class... Parts>
Command with_common(Call call, Parts... parts) {
  return std::apply([&call](auto&&... all) { return call(std::move(all)...); },
                    std::tuple_cat(std::move(parts)...));
}

// Metadata as a script's rest of arguments: field, value, ...
std::vector<std::string> flat(Metadata metadata);

long long integer_of(const Reply& reply, const char* what);
std::string text_of(const Reply& reply, const char* what);
double score_of(const Reply& reply, const char* what);  // a score sent as text
std::vector<std::string> strings_of(const Reply& reply, const char* what);
Metadata metadata_of(const Reply& reply, const char* what);  // a flat field/value array
// The values of tie-break `columns` from a ranked member's key `reply` (tiebreak_values), each
// NaN (None in Python) for nil: a player who never gave them.
std::vector<std::pair<std::string, double>> tiebreak_record(
    const std::vector<TiebreakColumn>& columns, Order order, const Reply& reply, const char* what);
// Element `index` of `reply`, an array of exactly `size` elements.
const Reply& part(const Reply& reply, std::size_t size, std::size_t index, const char* what);

void require_user_id(const std::string& user_id);

// Whose script it is: the noun of OptionsMismatch, and which statuses it may answer.
enum class Caller {
  League,      // also 'UNSETTLED <start> <period>' (handed over) and nil (nothing)
  Tournament,  // every reply but 'OPTIONS ...' goes to the parser
  Team         // as Tournament
};

// One script call whose result is its reply, parsed: a LeagueReply. 'OPTIONS <recorded>' raises
// OptionsMismatch naming the board `key` and this client's `config`; the error replies raise
// through the one error table.
class Call final : public Operation {
 public:
  using Parser = std::function<LeagueRecord(Reply&)>;
  Call(Caller caller, const char* what, Command command, Parser parse, std::string key,
       std::string config, int resends);
  const char* name() const override { return what_; }
  std::vector<Command> next() override { return {command_}; }
  int resend_limit() const override { return resends_; }
  bool feed(std::vector<Reply>& replies) override;
  Result take_result() override { return std::move(result_); }

 private:
  Caller caller_;
  const char* what_;
  Command command_;
  Parser parse_;
  LeagueReply result_;
  std::string key_, config_;
  int resends_;
};

}  // namespace rlb::leaderboard::script_call
