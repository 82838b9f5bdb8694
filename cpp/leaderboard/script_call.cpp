#include "leaderboard/script_call.hpp"

#include <cmath>
#include <cstdlib>
#include <exception>
#include <utility>

#include "errors.hpp"

namespace rlb::leaderboard::script_call {

using codec::ReplyType;

void unexpected(const char* what) {
  throw RedisError(std::string("unexpected reply from Redis for ") + what);
}

long long integer_of(const Reply& reply, const char* what) {
  if (reply.type != ReplyType::Integer) unexpected(what);
  return reply.integer;
}

std::string text_of(const Reply& reply, const char* what) {
  if (reply.type != ReplyType::String && reply.type != ReplyType::Status) unexpected(what);
  return reply.str;
}

double score_of(const Reply& reply, const char* what) {
  std::string text = text_of(reply, what);
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') unexpected(what);
  return value;
}

std::vector<std::string> strings_of(const Reply& reply, const char* what) {
  if (!reply.is_array()) unexpected(what);
  std::vector<std::string> out;
  out.reserve(reply.elements.size());
  for (const auto& element : reply.elements) out.push_back(text_of(element, what));
  return out;
}

Metadata metadata_of(const Reply& reply, const char* what) {
  if (!reply.is_array() || reply.elements.size() % 2 != 0) unexpected(what);
  Metadata out;
  for (std::size_t i = 0; i < reply.elements.size(); i += 2) {
    out.emplace_back(text_of(reply.elements[i], what), text_of(reply.elements[i + 1], what));
  }
  return out;
}

std::vector<std::pair<std::string, double>> tiebreak_record(
    const std::vector<TiebreakColumn>& columns, Order order, const Reply& reply, const char* what) {
  if (!reply.is_nil()) return tiebreak_values(columns, order, text_of(reply, what));
  std::vector<std::pair<std::string, double>> values;
  for (const auto& column : columns) values.emplace_back(column.name, std::nan(""));
  return values;
}

DeclaredCall::DeclaredCall(const table::Call& call, Command command, std::string what,
                           std::shared_ptr<const Family> family, int resends, std::string user)
    : call_(call),
      command_(std::move(command)),
      what_(std::move(what)),
      family_(std::move(family)),
      resends_(resends),
      user_(std::move(user)) {}

std::size_t DeclaredCall::width(const table::Node& node) const {
  const bool last_tiebreak =
      node.count > 0 && table::kNodes[node.first + node.count - 1].type == table::Type::Tiebreak;
  return node.count - (last_tiebreak && family_->tiebreak.empty() ? 1 : 0);
}

ReplyRecord DeclaredCall::fields(const table::Node& node, Reply* elements, std::size_t size) const {
  ReplyRecord record;
  record.fields.reserve(size);
  for (std::size_t i = 0; i < size; ++i) {
    const table::Node& field = table::kNodes[node.first + i];
    record.add(field.name, value(field, elements[i]));
  }
  return record;
}

ReplyField DeclaredCall::value(const table::Node& node, Reply& reply) const {
  const char* what = what_.c_str();
  if (node.optional && reply.is_nil()) return std::monostate{};  // Lua's false, or nil
  switch (node.type) {
    case table::Type::Int:
      return integer_of(reply, what);
    case table::Type::Bool:
      return integer_of(reply, what) == 1;
    case table::Type::Text:
      return text_of(reply, what);
    case table::Type::Score:
      return score_of(reply, what);
    case table::Type::Count:
      return static_cast<long long>(score_of(reply, what));
    case table::Type::Texts:
      return strings_of(reply, what);
    case table::Type::Metadata:
      return metadata_of(reply, what);
    case table::Type::Submit:  // with a submission id, its two more elements (duplicate, scope)
      return parse_submit_reply(reply, user_, reply.is_array() && reply.elements.size() == 9);
    case table::Type::Tiebreak:
      return tiebreak_record(family_->tiebreak, family_->order, reply, what);
    case table::Type::Records: {
      const std::size_t stride = width(node);
      if (!reply.is_array() || stride == 0 || reply.elements.size() % stride != 0) {
        unexpected(what);
      }
      std::vector<ReplyRecord> records;
      records.reserve(reply.elements.size() / stride);
      for (std::size_t i = 0; i < reply.elements.size(); i += stride) {
        records.push_back(fields(node, &reply.elements[i], stride));
      }
      return records;
    }
    case table::Type::Fields:
      break;  // only a whole reply is an array of fields
  }
  unexpected(what);
}

namespace {

// A family's options as a mismatch names them: its words, a compact board's tie rule
// ("ties=<rule>+compact", as the scripts read it) shown as its rule and " layout=compact".
std::string options_words(std::string words) {
  static constexpr std::string_view kCompact = "+compact";
  for (auto at = words.find(kCompact); at != std::string::npos; at = words.find(kCompact, at)) {
    const auto end = at + kCompact.size();
    if (end != words.size() && words[end] != ' ') {
      at = end;
      continue;
    }
    words.replace(at, kCompact.size(), " layout=compact");
  }
  return words;
}

}  // namespace

bool DeclaredCall::feed(std::vector<Reply>& replies) {
  if (replies.size() != 1) unexpected(what_.c_str());
  Reply& reply = replies[0];
  DeclaredReply result;
  const Family& family = *family_;
  if (reply.type == ReplyType::Status) {
    const std::string& status = reply.str;
    if (status.compare(0, 8, "OPTIONS ") == 0) {
      throw OptionsMismatch(family.noun + " '" + family.board + "' has options " +
                            options_words(status.substr(8)) +
                            " (recorded in Redis); this client has " +
                            options_words(family.config) + "; nothing was changed");
    }
    if (!family.unsettled || status.compare(0, 10, "UNSETTLED ") != 0) unexpected(what_.c_str());
    auto space = status.find(' ', 10);
    if (space == std::string::npos) unexpected(what_.c_str());
    try {
      result.unsettled.emplace(std::stoll(status.substr(10, space - 10)), status.substr(space + 1));
    } catch (const std::exception&) {
      unexpected(what_.c_str());
    }
  } else if (!family.unsettled || !reply.is_nil()) {
    const table::Node& root = *call_.reply;
    if (root.type == table::Type::Fields) {
      const std::size_t size = width(root);
      if (!reply.is_array() || reply.elements.size() != size) unexpected(what_.c_str());
      result.record = fields(root, reply.elements.data(), size);
    } else {
      result.value = value(root, reply);
    }
  }
  result_ = std::move(result);
  return true;
}

}  // namespace rlb::leaderboard::script_call
