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

std::vector<std::string> flat(Metadata metadata) {
  std::vector<std::string> fields;
  fields.reserve(2 * metadata.size());
  for (auto& [field, value] : metadata) {
    fields.push_back(std::move(field));
    fields.push_back(std::move(value));
  }
  return fields;
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

const Reply& part(const Reply& reply, std::size_t size, std::size_t index, const char* what) {
  if (!reply.is_array() || reply.elements.size() != size) unexpected(what);
  return reply.elements[index];
}

void require_user_id(const std::string& user_id) {
  if (user_id.empty()) throw InvalidArgument("user_id must not be empty");
}

Call::Call(Caller caller, const char* what, Command command, Parser parse, std::string key,
           std::string config, int resends)
    : caller_(caller),
      what_(what),
      command_(std::move(command)),
      parse_(std::move(parse)),
      key_(std::move(key)),
      config_(std::move(config)),
      resends_(resends) {}

bool Call::feed(std::vector<Reply>& replies) {
  if (replies.size() != 1) unexpected(what_);
  Reply& reply = replies[0];
  LeagueReply result;
  if (reply.type == ReplyType::Status) {
    const std::string& status = reply.str;
    if (status.compare(0, 8, "OPTIONS ") == 0) {
      static constexpr const char* kNouns[] = {"league '", "tournament '", "team board '"};
      throw OptionsMismatch(std::string(kNouns[static_cast<int>(caller_)]) + key_ +
                            "' has options " + status.substr(8) +
                            " (recorded in Redis); this client has " + config_ +
                            "; nothing was changed");
    }
    if (caller_ != Caller::League || status.compare(0, 10, "UNSETTLED ") != 0) unexpected(what_);
    auto space = status.find(' ', 10);
    if (space == std::string::npos) unexpected(what_);
    try {
      result.unsettled.emplace(std::stoll(status.substr(10, space - 10)), status.substr(space + 1));
    } catch (const std::exception&) {
      unexpected(what_);
    }
  } else if (caller_ != Caller::League || !reply.is_nil()) {
    result.record = parse_(reply);
  }
  result_ = std::move(result);
  return true;
}

}  // namespace rlb::leaderboard::script_call
