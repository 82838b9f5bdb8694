// A script call built by name (DeclaredCall), whose reply its script declares (`--: REPLY`,
// script_table.hpp): how the board types written in Python alone (leagues, tournaments, team
// boards: bindings/script_bindings.cpp builds their calls) call their scripts, and how a reply
// is read as declared. `what` names the operation as the user calls it ("League.submit"): it is
// the operation's name (in timeout messages) and appears in unexpected-reply errors.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "leaderboard/operations.hpp"
#include "leaderboard/script_table.hpp"

namespace rlb::leaderboard::script_call {

[[noreturn]] void unexpected(const char* what);

long long integer_of(const Reply& reply, const char* what);
std::string text_of(const Reply& reply, const char* what);
double score_of(const Reply& reply, const char* what);  // a score sent as text
std::vector<std::string> strings_of(const Reply& reply, const char* what);
Metadata metadata_of(const Reply& reply, const char* what);  // a flat field/value array
// The values of tie-break `columns` from a ranked member's key `reply` (tiebreak_values), each
// NaN (None in Python) for nil: a player who never gave them.
std::vector<std::pair<std::string, double>> tiebreak_record(
    const std::vector<TiebreakColumn>& columns, Order order, const Reply& reply, const char* what);
// What every call of one board's script family shares: how a refusal names the board
// ('OPTIONS <recorded>': OptionsMismatch naming `noun` `board` and this client's `config`),
// the board's tie-break columns and order (for a declared `tiebreak`), and whether a reply may
// be a league's 'UNSETTLED <start> <period>' status or nil (nothing).
struct Family {
  std::string noun;  // "team board"
  std::string board;
  std::string config;
  std::vector<TiebreakColumn> tiebreak;
  Order order = Order::Desc;
  bool unsettled = false;
};

// One call of a script that declares its reply (`--: REPLY`, script_table.hpp), built by name
// from its keys and arguments: its result is its reply read as declared, a DeclaredReply (a
// record for an array of fields, else a value). `user`: the player a declared `submit` is
// about (the argument it names).
class DeclaredCall final : public Operation {
 public:
  DeclaredCall(const table::Call& call, Command command, std::string what,
               std::shared_ptr<const Family> family, int resends, std::string user);
  const char* name() const override { return what_.c_str(); }
  std::vector<Command> next() override { return {command_}; }
  int resend_limit() const override { return resends_; }
  bool feed(std::vector<Reply>& replies) override;
  Result take_result() override { return std::move(result_); }

 private:
  ReplyField value(const table::Node& node, Reply& reply) const;
  ReplyRecord fields(const table::Node& node, Reply* elements, std::size_t size) const;
  // How many of `node`'s fields a reply holds: a trailing tiebreak only with columns.
  std::size_t width(const table::Node& node) const;

  const table::Call& call_;
  Command command_;
  std::string what_;
  std::shared_ptr<const Family> family_;
  int resends_;
  std::string user_;
  DeclaredReply result_;
};

}  // namespace rlb::leaderboard::script_call
