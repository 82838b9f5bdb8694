// Python values to C++ arguments, C++ results to the guide's dicts, exceptions both ways.
#include "bindings/conversions.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <vector>

#include "connection/exchange.hpp"
#include "errors.hpp"

namespace rlb::bindings {

using codec::Reply;
using codec::ReplyType;
using leaderboard::Board;
using leaderboard::Entry;
using leaderboard::Metadata;
using leaderboard::Operation;
using leaderboard::Result;
using leaderboard::WriteResult;
using transport::BlockingClient;

Names* names = nullptr;

// ---- Python -> C++ ---------------------------------------------------------------------------

std::string type_name(py::handle value) { return Py_TYPE(value.ptr())->tp_name; }

std::string utf8(py::handle text) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
  if (data == nullptr) throw py::error_already_set();
  return std::string(data, static_cast<std::size_t>(size));
}

// A user id is a str; an int is converted with str(), as the guide's f-strings would.
std::string user_id_arg(py::handle value) {
  if (PyUnicode_Check(value.ptr())) return utf8(value);
  if (PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr())) return utf8(py::str(value));
  throw py::type_error("user_id must be str, not " + type_name(value));
}

void score_limits_arg(py::handle score_range, py::handle max_increment,
                      leaderboard::Guards& guards) {
  if (!score_range.is_none()) {
    if (!PyTuple_Check(score_range.ptr()) || PyTuple_Size(score_range.ptr()) != 2) {
      throw py::type_error("score_range must be None or a (min, max) tuple, not " +
                           type_name(score_range));
    }
    auto pair = py::reinterpret_borrow<py::tuple>(score_range);
    if (!pair[0].is_none()) guards.score_min = number_arg(pair[0], "score_range's min");
    if (!pair[1].is_none()) guards.score_max = number_arg(pair[1], "score_range's max");
  }
  if (!max_increment.is_none()) guards.max_increment = number_arg(max_increment, "max_increment");
}

void rate_limit_arg(py::handle rate_limit, leaderboard::Guards& guards) {
  if (rate_limit.is_none()) return;
  if (!PyTuple_Check(rate_limit.ptr()) || PyTuple_Size(rate_limit.ptr()) != 2) {
    throw py::type_error("rate_limit must be None or a (max_writes, per_seconds) tuple, not " +
                         type_name(rate_limit));
  }
  auto pair = py::reinterpret_borrow<py::tuple>(rate_limit);
  guards.rate_max = integer_arg(pair[0], "rate_limit's max_writes");
  guards.rate_per = number_arg(pair[1], "rate_limit's per_seconds");
}

void events_arg(py::handle events, py::handle events_maxlen, leaderboard::Guards& guards) {
  if (!PyBool_Check(events.ptr())) {
    throw py::type_error("events must be a bool, not " + type_name(events));
  }
  guards.events = events.cast<bool>();
  guards.events_maxlen = integer_arg(events_maxlen, "events_maxlen");
}

leaderboard::Guards guards_arg(py::handle submission_ttl, py::handle rate_limit, py::handle events,
                               py::handle events_maxlen, py::handle score_range,
                               py::handle max_increment) {
  leaderboard::Guards guards;
  guards.submission_ttl = number_arg(submission_ttl, "submission_ttl");
  rate_limit_arg(rate_limit, guards);
  events_arg(events, events_maxlen, guards);
  score_limits_arg(score_range, max_increment, guards);  // fair play
  return guards;
}

py::object rate_limit_value(const leaderboard::Guards& guards) {
  if (!guards.rate_max) return py::none();
  return py::make_tuple(*guards.rate_max, guards.rate_per);
}

py::object score_range_value(const leaderboard::Guards& guards) {
  if (!guards.score_min && !guards.score_max) return py::none();
  return py::make_tuple(py::cast(guards.score_min), py::cast(guards.score_max));
}

// A score or amount: whatever float() accepts, as the guide calls float(score).
double number_arg(py::handle value, const char* field) {
  if (value.is_none() || PyBytes_Check(value.ptr())) {
    throw py::type_error(std::string(field) + " must be a number, not " + type_name(value));
  }
  PyObject* number = PyNumber_Float(value.ptr());
  if (number == nullptr) {
    if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
      PyErr_Clear();
      throw InvalidArgument(std::string(field) + " must be a finite number");
    }
    if (PyErr_ExceptionMatches(PyExc_ValueError)) {
      PyErr_Clear();
      throw InvalidArgument(std::string(field) + " must be a number, not " + utf8(py::repr(value)));
    }
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      throw py::type_error(std::string(field) + " must be a number, not " + type_name(value));
    }
    throw py::error_already_set();  // the object's own exception (from __float__), as it is
  }
  double result = PyFloat_AS_DOUBLE(number);
  Py_DECREF(number);
  // An int a double cannot hold (beyond 2^53 doubles skip integers) would be sent rounded, a
  // number the caller never wrote: refused before anything is sent.
  if (PyLong_Check(value.ptr()) && std::fabs(result) >= 9007199254740992.0) {
    py::object back = py::reinterpret_steal<py::object>(PyLong_FromDouble(result));
    if (!back) throw py::error_already_set();
    const int exact = PyObject_RichCompareBool(back.ptr(), value.ptr(), Py_EQ);
    if (exact < 0) throw py::error_already_set();
    if (exact == 0) {
      throw InvalidArgument(std::string(field) + " " + utf8(py::repr(value)) +
                            " is an int a double cannot hold exactly (beyond 2**53); pass a "
                            "float to accept the rounding");
    }
  }
  return result;
}

// A count, rank or limit: an int (anything with __index__); huge values saturate.
long long integer_arg(py::handle value, const char* field) {
  if (PyBool_Check(value.ptr()) || !PyIndex_Check(value.ptr())) {
    throw py::type_error(std::string(field) + " must be an int, not " + type_name(value));
  }
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  long long result = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow > 0) return LLONG_MAX;
  if (overflow < 0) return LLONG_MIN;
  return result;
}

// Metadata: a mapping with str field names; values stored as str(value), as the guide does.
Metadata metadata_arg(py::handle value) {
  Metadata metadata;
  if (value.is_none()) return metadata;
  const bool mapping =
      PyDict_Check(value.ptr()) || (PyMapping_Check(value.ptr()) && !PyUnicode_Check(value.ptr()) &&
                                    !PyBytes_Check(value.ptr()) && py::hasattr(value, "items"));
  if (!mapping) {
    throw py::type_error("metadata must be a mapping of str to values, not " + type_name(value));
  }
  // items() of a mapping that is not a dict runs Python code: check everything it gives.
  py::object items = py::reinterpret_steal<py::object>(PyMapping_Items(value.ptr()));
  if (!items) throw py::error_already_set();
  for (py::handle item : items) {
    if (!PyTuple_Check(item.ptr()) || PyTuple_GET_SIZE(item.ptr()) != 2) {
      throw py::type_error("metadata items() must give (field, value) tuples, not " +
                           type_name(item));
    }
    py::handle field = PyTuple_GET_ITEM(item.ptr(), 0);
    py::handle field_value = PyTuple_GET_ITEM(item.ptr(), 1);
    if (!PyUnicode_Check(field.ptr())) {
      throw py::type_error("metadata field names must be str, not " + type_name(field));
    }
    metadata.emplace_back(utf8(field), PyUnicode_Check(field_value.ptr())
                                           ? utf8(field_value)
                                           : utf8(py::str(field_value)));
  }
  return metadata;
}

// upsert_many entries: (user_id, score) or (user_id, score, metadata); errors name the entry.
std::vector<leaderboard::BatchEntry> batch_arg(py::handle entries, long long first_index) {
  std::vector<leaderboard::BatchEntry> out;
  py::sequence items = py::reinterpret_borrow<py::sequence>(entries);
  out.reserve(items.size());
  long long index = first_index;
  for (py::handle item : items) {
    try {
      if (!PyTuple_Check(item.ptr()) && !PyList_Check(item.ptr())) {
        throw py::type_error(
            "must be a (user_id, score) or (user_id, score, metadata) tuple, not " +
            type_name(item));
      }
      py::sequence fields = py::reinterpret_borrow<py::sequence>(item);
      const auto size = fields.size();
      if (size < 2 || size > 4) {
        throw py::type_error(
            "must have 2 to 4 items (user_id, score[, metadata[, submission_id]]), not " +
            std::to_string(size));
      }
      out.push_back({user_id_arg(fields[0]), number_arg(fields[1], "score"),
                     size >= 3 ? metadata_arg(fields[2]) : Metadata{}, std::nullopt});
      // Guards: an entry's submission id (None: none).
      if (size == 4 && !fields[3].is_none()) {
        if (!PyUnicode_Check(fields[3].ptr())) {
          throw py::type_error("submission_id must be a str or None, not " + type_name(fields[3]));
        }
        out.back().submission_id = fields[3].cast<std::string>();
      }
    } catch (const py::type_error& e) {
      throw py::type_error("entry " + std::to_string(index) + ": " + e.what());
    } catch (const InvalidArgument& e) {
      throw InvalidArgument("entry " + std::to_string(index) + ": " + e.what());
    }
    ++index;
  }
  return out;
}

std::vector<std::string> user_ids_arg(py::handle value, long long limit) {
  if (PyUnicode_Check(value.ptr()) || PyBytes_Check(value.ptr()) ||
      !PyObject_HasAttrString(value.ptr(), "__iter__")) {
    throw py::type_error("user_ids must be a list of str, not " + type_name(value));
  }
  std::vector<std::string> out;
  for (py::handle item : py::iter(value)) {
    if (static_cast<long long>(out.size()) >= limit) {
      throw InvalidArgument("user_ids must hold at most " + std::to_string(limit) + " ids");
    }
    try {
      out.push_back(user_id_arg(item));
    } catch (const py::type_error& e) {
      throw py::type_error("user_ids[" + std::to_string(out.size()) + "]: " + e.what());
    }
  }
  return out;
}

// ---- C++ -> Python ---------------------------------------------------------------------------
// Results of 100 entries are built on every get_top(100): these helpers call the C API directly
// (no accessor objects, no temporary handles) and reuse the str of each metadata field name.

namespace {

// A new reference, or the Python error raised.
PyObject* checked(PyObject* object) {
  if (object == nullptr) throw py::error_already_set();
  return object;
}

// A str from UTF-8 bytes (UnicodeDecodeError if they are not). ASCII, the common case (ids,
// names, numbers), is copied straight into a new compact str, without the UTF-8 decoder.
PyObject* new_text_or_null(const char* data, std::size_t size) {
  unsigned char high = 0;
  for (std::size_t i = 0; i < size; ++i) high |= static_cast<unsigned char>(data[i]);
  if (high >= 0x80) return PyUnicode_DecodeUTF8(data, static_cast<Py_ssize_t>(size), nullptr);
  PyObject* text = PyUnicode_New(static_cast<Py_ssize_t>(size), 127);
  if (text != nullptr && size > 0) std::memcpy(PyUnicode_DATA(text), data, size);
  return text;
}

PyObject* new_text(const std::string& s) { return checked(new_text_or_null(s.data(), s.size())); }

// dict[key] = value, taking the reference to `value` (also when it fails).
void set_new(PyObject* dict, PyObject* key, PyObject* value) {
  const int failed = PyDict_SetItem(dict, key, value);
  Py_DECREF(value);
  if (failed != 0) throw py::error_already_set();
}

// The str of each metadata field name seen (a board has a few: "name", "country"...), so a
// result's dicts share them and Python hashes each once. Bounded: past kMaxFieldNames names, or
// for long ones, a new str each time. Used with the GIL held only.
class FieldNames {
 public:
  static constexpr std::size_t kMaxFieldNames = 512;
  static constexpr std::size_t kMaxLength = 64;

  // A new reference.
  PyObject* get(const std::string& name) {
    if (name.size() > kMaxLength) return new_text(name);
    auto found = names_.find(name);
    if (found != names_.end()) {
      Py_INCREF(found->second);
      return found->second;
    }
    PyObject* text = new_text(name);
    if (names_.size() < kMaxFieldNames) {
      PyObject_Hash(text);  // cached in the str from now on
      Py_INCREF(text);      // the table's reference, kept for the life of the process
      names_.emplace(name, text);
    }
    return text;
  }

 private:
  std::unordered_map<std::string, PyObject*> names_;
};
FieldNames* field_names = new FieldNames();  // never freed: its strs outlive every result

// The metadata dicts made lately, by content: a leaderboard reads the same entries again and
// again (get_top), and copying a dict (PyDict_Copy clones its table at once) costs a fraction of
// building it. A result always gets a copy of its own; the dicts kept are never handed out.
// Bounded: small hashes only, and the table starts afresh past kMaxDicts. GIL held.
class MetadataDicts {
 public:
  static constexpr std::size_t kMaxDicts = 8192;
  static constexpr std::size_t kMaxFields = 16;
  static constexpr std::size_t kMaxBytes = 512;

  // A new reference to a new dict, or nullptr if `metadata` is not kept (build it).
  PyObject* copy(const Metadata& metadata) {
    if (!keepable(metadata)) return nullptr;
    auto found = dicts_.find(metadata);
    if (found == dicts_.end()) return nullptr;
    return checked(PyDict_Copy(found->second));
  }
  // Keeps a copy of `dict`, just built from `metadata`.
  void keep(const Metadata& metadata, PyObject* dict) {
    if (!keepable(metadata)) return;
    if (dicts_.size() >= kMaxDicts) {
      for (auto& [key, kept] : dicts_) Py_DECREF(kept);
      dicts_.clear();
    }
    PyObject* kept = checked(PyDict_Copy(dict));
    auto [it, inserted] = dicts_.emplace(metadata, kept);
    if (!inserted) Py_DECREF(kept);
  }

 private:
  static bool keepable(const Metadata& metadata) {
    if (metadata.empty() || metadata.size() > kMaxFields) return false;
    std::size_t bytes = 0;
    for (const auto& [field, value] : metadata) bytes += field.size() + value.size();
    return bytes <= kMaxBytes;
  }
  struct Hash {  // FNV-1a over every byte, fields and values separated: short, inlined
    std::size_t operator()(const Metadata& metadata) const {
      std::uint64_t h = 14695981039346656037ull;
      auto mix = [&h](const std::string& text) {
        for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
        h = (h ^ 0xff) * 1099511628211ull;
      };
      for (const auto& [field, value] : metadata) {
        mix(field);
        mix(value);
      }
      return static_cast<std::size_t>(h);
    }
  };
  std::unordered_map<Metadata, PyObject*, Hash> dicts_;
};
MetadataDicts* metadata_dicts = new MetadataDicts();  // never freed, as field_names

}  // namespace

py::str text(const std::string& s) { return py::reinterpret_steal<py::str>(new_text(s)); }

py::dict metadata_dict(const Metadata& metadata) {
  if (PyObject* copy = metadata_dicts->copy(metadata)) return py::reinterpret_steal<py::dict>(copy);
  auto out = py::reinterpret_steal<py::dict>(checked(PyDict_New()));
  for (const auto& [field, value] : metadata) {
    PyObject* key = field_names->get(field);
    PyObject* item = new_text_or_null(value.data(), value.size());
    if (item == nullptr) {
      Py_DECREF(key);
      throw py::error_already_set();
    }
    const int failed = PyDict_SetItem(out.ptr(), key, item);
    Py_DECREF(key);
    Py_DECREF(item);
    if (failed != 0) throw py::error_already_set();
  }
  metadata_dicts->keep(metadata, out.ptr());
  return out;
}

// A board's tie-break columns' values: {name: value}, in order.
static py::dict tiebreak_dict(const std::vector<std::pair<std::string, double>>& values) {
  py::dict columns;
  for (const auto& [name, value] : values) {
    // NaN: none written yet (a write without values keeps the worst key, which is no number)
    columns[py::str(name)] = std::isnan(value) ? py::none() : py::object(py::float_(value));
  }
  return columns;
}

py::dict entry_dict(const Entry& entry) {
  auto out = py::reinterpret_steal<py::dict>(checked(PyDict_New()));
  PyObject* dict = out.ptr();
  if (entry.rank) set_new(dict, names->rank.ptr(), checked(PyLong_FromLongLong(*entry.rank)));
  set_new(dict, names->user_id.ptr(), new_text(entry.user_id));
  set_new(dict, names->score.ptr(), checked(PyFloat_FromDouble(entry.score)));
  set_new(dict, names->metadata.ptr(), metadata_dict(entry.metadata).release().ptr());
  if (!entry.tiebreak.empty()) out["tiebreak"] = tiebreak_dict(entry.tiebreak);
  return out;
}

std::vector<leaderboard::TiebreakColumn> tiebreak_columns_arg(py::handle columns) {
  std::vector<leaderboard::TiebreakColumn> out;
  if (columns.is_none()) return out;
  if (!PyTuple_Check(columns.ptr()) && !PyList_Check(columns.ptr())) {
    throw py::type_error(
        "tiebreak must be None or a sequence of (name, 'desc' | 'asc') pairs, "
        "not " +
        type_name(columns));
  }
  for (auto item : columns) {
    if (!PyTuple_Check(item.ptr()) && !PyList_Check(item.ptr())) {
      throw py::type_error("a tiebreak column is a (name, 'desc' | 'asc') pair, not " +
                           type_name(item));
    }
    auto pair = py::reinterpret_borrow<py::sequence>(item);
    if (pair.size() != 2 || !PyUnicode_Check(pair[0].ptr()) || !PyUnicode_Check(pair[1].ptr())) {
      throw py::type_error("a tiebreak column is a (name, 'desc' | 'asc') pair of str");
    }
    std::string direction = utf8(pair[1]);
    if (direction != "desc" && direction != "asc") {
      throw py::value_error("a tiebreak column's direction is 'desc' or 'asc', not '" + direction +
                            "'");
    }
    out.push_back({utf8(pair[0]), direction == "desc"});
  }
  return out;
}

std::optional<std::vector<double>> tiebreak_values_arg(
    py::handle values, const std::vector<leaderboard::TiebreakColumn>& columns) {
  if (values.is_none()) return std::nullopt;
  if (!PyDict_Check(values.ptr())) {
    throw py::type_error("tiebreak must be None or a dict of the board's columns' values, not " +
                         type_name(values));
  }
  auto dict = py::reinterpret_borrow<py::dict>(values);
  std::string names;
  for (const auto& column : columns) names += (names.empty() ? "" : ", ") + column.name;
  if (static_cast<std::size_t>(PyDict_Size(dict.ptr())) != columns.size()) {
    throw py::value_error("tiebreak needs a value for each of the board's columns (" + names +
                          "), no other");
  }
  std::vector<double> out;
  for (const auto& column : columns) {
    PyObject* value = PyDict_GetItemString(dict.ptr(), column.name.c_str());
    if (value == nullptr) {
      throw py::value_error("tiebreak needs a value for each of the board's columns (" + names +
                            "): '" + column.name + "' is missing");
    }
    out.push_back(number_arg(value, ("tiebreak column '" + column.name + "'").c_str()));
  }
  return out;
}

// A list of `n` items, item i made by make(i) (a py::object).
template <class Make>
py::list new_list(std::size_t n, Make&& make) {
  auto out = py::reinterpret_steal<py::list>(checked(PyList_New(static_cast<Py_ssize_t>(n))));
  for (std::size_t i = 0; i < n; ++i) {
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), make(i).release().ptr());
  }
  return out;
}

py::list string_list(const std::vector<std::string>& strings) {
  return new_list(strings.size(), [&](std::size_t i) { return text(strings[i]); });
}

py::list entry_list(const std::vector<Entry>& entries) {
  return new_list(entries.size(), [&](std::size_t i) { return entry_dict(entries[i]); });
}

py::dict record_dict(const leaderboard::ReplyRecord& record);

// A field of a declared reply (a league's, a tournament's or a team board's).
struct FieldToPython {
  py::object operator()(std::monostate) const { return py::none(); }
  py::object operator()(bool value) const { return py::bool_(value); }
  py::object operator()(long long value) const { return py::int_(value); }
  py::object operator()(double value) const { return py::float_(value); }
  py::object operator()(const std::string& value) const { return text(value); }
  py::object operator()(const std::vector<std::string>& value) const { return string_list(value); }
  py::object operator()(const Metadata& value) const { return metadata_dict(value); }
  py::object operator()(const leaderboard::SubmitResult& value) const;  // as ToPython's
  py::object operator()(const std::vector<leaderboard::ReplyRecord>& value) const {
    return new_list(value.size(), [&](std::size_t i) { return record_dict(value[i]); });
  }
  py::object operator()(const std::vector<std::pair<std::string, double>>& value) const {
    return tiebreak_dict(value);  // a league's entry's tie-break columns
  }
};

py::dict record_dict(const leaderboard::ReplyRecord& record) {
  py::dict out;
  for (const auto& [name, value] : record.fields)
    out[text(name)] = std::visit(FieldToPython{}, value);
  return out;
}

struct ToPython {
  py::object operator()(const leaderboard::None&) const { return py::none(); }
  py::object operator()(bool value) const { return py::bool_(value); }
  py::object operator()(long long value) const { return py::int_(value); }
  py::object operator()(const std::optional<long long>& value) const {
    return value ? py::object(py::int_(*value)) : py::none();
  }
  py::object operator()(const Metadata& metadata) const { return metadata_dict(metadata); }
  py::object operator()(const std::optional<Entry>& entry) const {
    return entry ? py::object(entry_dict(*entry)) : py::none();
  }
  py::object operator()(const std::vector<Entry>& entries) const { return entry_list(entries); }
  py::object operator()(const WriteResult& write) const {
    py::dict out = entry_dict(write.entry);
    out[names->trimmed_user_ids] = string_list(write.trimmed_user_ids);
    return out;
  }
  py::object operator()(const leaderboard::SubmitResult& submit) const {
    const auto& entry = submit.entry;
    py::dict out;
    out[names->user_id] = text(entry.user_id);
    out[names->score] = py::float_(entry.score);
    out[names->rank] = entry.rank ? py::object(py::int_(*entry.rank)) : py::none();
    out["previous_score"] =
        submit.previous_score ? py::object(py::float_(*submit.previous_score)) : py::none();
    out["previous_rank"] =
        submit.previous_rank ? py::object(py::int_(*submit.previous_rank)) : py::none();
    out["changed"] = py::bool_(submit.changed);
    out[names->metadata] = metadata_dict(entry.metadata);
    out[names->trimmed_user_ids] = string_list(submit.trimmed_user_ids);
    if (submit.duplicate) out["duplicate"] = py::bool_(*submit.duplicate);  // guards
    if (submit.period) out["period"] = text(*submit.period);                // seasons
    return out;
  }
  // Guards: change events.
  py::object operator()(const leaderboard::EventBatch& batch) const {
    py::list events(batch.events.size());
    for (std::size_t i = 0; i < batch.events.size(); ++i) {
      const auto& event = batch.events[i];
      py::dict item;
      item["id"] = text(event.id);
      item["kind"] = text(event.kind);
      if (event.kind == "settled") {  // a league's settlement of one cohort
        item["period"] = event.period ? py::object(text(*event.period)) : py::none();
        item["cohort"] = event.cohort ? py::object(py::int_(*event.cohort)) : py::none();
        item["tier"] = event.tier ? py::object(py::int_(*event.tier)) : py::none();
        item["bracket"] = event.bracket ? py::object(text(*event.bracket)) : py::none();
        item["promoted"] = string_list(event.promoted);
        item["demoted"] = string_list(event.demoted);
        events[i] = std::move(item);
        continue;
      }
      item[names->user_id] = event.user_id ? py::object(text(*event.user_id)) : py::none();
      item[names->score] = event.score ? py::object(py::float_(*event.score)) : py::none();
      item[names->rank] = event.rank ? py::object(py::int_(*event.rank)) : py::none();
      item["previous_score"] =
          event.previous_score ? py::object(py::float_(*event.previous_score)) : py::none();
      item["previous_rank"] =
          event.previous_rank ? py::object(py::int_(*event.previous_rank)) : py::none();
      item[names->trimmed_user_ids] = string_list(event.trimmed_user_ids);
      item["overtaken"] = string_list(event.overtaken);
      if (event.removed) item["removed"] = py::int_(*event.removed);  // "clear" events
      if (event.size) item["size"] = py::int_(*event.size);
      if (event.member) item["member"] = text(*event.member);  // a team board's "team" events
      if (event.period) item["period"] = text(*event.period);  // a tournament's events
      events[i] = std::move(item);
    }
    py::dict out;
    out["last_id"] = text(batch.last_id);
    out["events"] = std::move(events);
    return out;
  }
  py::object operator()(const std::vector<std::string>& ids) const { return string_list(ids); }
  py::object operator()(const std::vector<std::optional<Entry>>& entries) const {
    return new_list(entries.size(), [&](std::size_t i) {
      return entries[i] ? py::object(entry_dict(*entries[i])) : py::object(py::none());
    });
  }
  py::object operator()(const leaderboard::Page& page) const {
    py::dict out;
    out[names->page] = py::int_(page.page);
    out[names->page_size] = py::int_(page.page_size);
    out[names->total_pages] = py::int_(page.total_pages);
    out[names->size] = py::int_(page.size);
    out[names->entries] = entry_list(page.entries);
    return out;
  }
  py::object operator()(const std::optional<double>& value) const {
    return value ? py::object(py::float_(*value)) : py::none();
  }
  py::object operator()(const std::vector<leaderboard::HistogramBin>& bins) const {
    return new_list(bins.size(), [&](std::size_t i) {
      py::dict bin;
      bin[names->min] = py::float_(bins[i].min);
      bin[names->max] = py::float_(bins[i].max);
      bin[names->count] = py::int_(bins[i].count);
      return bin;
    });
  }
  py::object operator()(const leaderboard::TrimSummary& summary) const {
    py::dict out;
    out[names->trimmed] = py::int_(summary.trimmed);
    out[names->trimmed_user_ids] = string_list(summary.user_ids);
    return out;
  }
  // A declared reply: None (nothing), the record as a dict, the value, or {"unsettled": period,
  // "unsettled_start": ms} (a league's period to settle first).
  py::object operator()(const leaderboard::DeclaredReply& reply) const {
    if (reply.unsettled) {
      py::dict out;
      out["unsettled"] = text(reply.unsettled->second);
      out["unsettled_start"] = py::int_(reply.unsettled->first);
      return out;
    }
    if (reply.value) return std::visit(FieldToPython{}, *reply.value);
    if (!reply.record) return py::none();
    return record_dict(*reply.record);
  }
  // A group write's: each member's submit() result, in order.
  py::object operator()(const std::vector<leaderboard::SubmitResult>& results) const {
    return new_list(results.size(), [&](std::size_t i) { return (*this)(results[i]); });
  }
};

py::object FieldToPython::operator()(const leaderboard::SubmitResult& value) const {
  return ToPython{}(value);
}

py::object to_python(const Result& result) { return std::visit(ToPython{}, result); }

namespace {

template <class Error>
bool is_a(const std::exception& e) {
  return dynamic_cast<const Error*>(&e) != nullptr;
}

// The C++ exception tree as Python classes: most derived first (the first match wins), each
// parent before its children are created.
struct PythonError {
  const char* name;
  bool (*matches)(const std::exception&);
  int parent;  // index into kPythonErrors, or kException, or kValueError
  const char* doc;
};
constexpr int kRedisError = 13, kConnectionError = 10, kResponseError = 12;
constexpr int kException = -1, kValueError = -2;  // built-in parents
constexpr PythonError kPythonErrors[] = {
    // Guards: a ResponseError (the server refused the write; the connection is fine), not a
    // ConnectionError, so code retrying connection errors does not hammer the limit.
    {"RateLimited", is_a<RateLimited>, kResponseError,
     "RATELIMITED: the board's rate_limit refused the write, which changed nothing; "
     "retry_after is the seconds until the user's window has room."},
    // Durable acknowledgements: a RedisError, neither a ConnectionError nor a TimeoutError, so
    // code retrying those does not send again a write the primary applied.
    {"NotReplicatedError", is_a<NotReplicatedError>, kRedisError,
     "A write the primary applied, but fewer replicas than min_replicas confirmed having it "
     "(WAIT, or WAITAOF with wait_aof) within replica_timeout; it was not resent. replicas is "
     "how many confirmed, min_replicas how many were required. Sending it again applies it "
     "again, unless it carries a submission_id (then it returns the first result)."},
    // The server's clock refused the period a client named from its own (far off) clock.
    {"ClockSkewError", is_a<ClockSkew>, kResponseError,
     "The server's clock says the write does not belong to the period (bucket, window) the "
     "client's clock named, and the client's clock is further off than the board accepts "
     "(redis_leaderboard.MAX_CLOCK_SKEW); nothing was changed. server_time is the server's "
     "clock then (an aware datetime, UTC)."},
    {"AuthenticationError", is_a<AuthenticationError>, kConnectionError,
     "The server refused the username or password."},
    {"BusyLoadingError", is_a<BusyLoadingError>, kConnectionError,
     "LOADING: the server is loading its dataset; retry in a moment."},
    {"NoScriptError", is_a<NoScriptError>, kResponseError,
     "NOSCRIPT: the server does not keep scripts."},
    {"ReadOnlyError", is_a<ReadOnlyError>, kResponseError,
     "READONLY: a write was sent to a replica."},
    {"NoPermissionError", is_a<NoPermissionError>, kResponseError,
     "NOPERM: the ACL user may not run this command."},
    {"OutOfMemoryError", is_a<OutOfMemoryError>, kResponseError,
     "OOM: the server is at maxmemory and refused the write."},
    {"ExecAbortError", is_a<ExecAbortError>, kResponseError,
     "EXECABORT: a transaction was discarded."},
    {"ConnectionError", is_a<ConnectionError>, kRedisError,
     "The connection failed, dropped, or a reply was lost (a write is not retried)."},
    {"TimeoutError", is_a<TimeoutError>, kRedisError,
     "The server did not answer within the configured timeout."},
    {"ResponseError", is_a<ResponseError>, kRedisError, "The server answered with an error reply."},
    {"RedisError", is_a<RedisError>, kException,
     "Base of every error this package raises for Redis (mirrors redis-py)."},
    // ValueErrors a caller tells apart without matching text (the caller's mistake: 4xx).
    {"OptionsMismatch", is_a<OptionsMismatch>, kValueError,
     "The board's options (order, ties, rate_limit, events) differ from those recorded in Redis "
     "for it; nothing was changed. A ValueError."},
    {"PeriodClosed", is_a<PeriodClosed>, kValueError,
     "A write to a period that no longer (or not yet) takes writes on the server's clock; nothing "
     "was changed. A ValueError."},
    {"SubmissionIdReused", is_a<SubmissionIdReused>, kValueError,
     "The submission id was applied before for another user or another payload (score, mode, "
     "metadata); nothing was changed. A resend repeating the write exactly returns the first "
     "result instead. A ValueError."},
    {"ScoreRejected", is_a<ScoreRejected>, kValueError,
     "The board's score_range or max_increment refused the write; nothing was changed (no "
     "rate-limit count, no event, no submission record). A ValueError."},
    // Tournaments: the player is refused by the tournament's rules; nothing was changed.
    {"TournamentFull", is_a<TournamentFull>, kValueError,
     "The tournament's period has its max_size players: a join (or a first submission) is "
     "refused, first come first served; nothing was changed. A ValueError."},
    {"NotJoined", is_a<NotJoined>, kValueError,
     "A submission from a player who has not joined a join_required tournament; nothing was "
     "changed. A ValueError."},
    {"AttemptsExhausted", is_a<AttemptsExhausted>, kValueError,
     "The player has used every attempt of the period (max_attempts plus those granted with "
     "add_attempts); nothing was changed. A ValueError."},
    {"StalePeriod", is_a<StalePeriod>, kValueError,
     "A submission meant for a period that is not the current one (the stale-client guard); "
     "nothing was changed. A ValueError."},
};
constexpr std::size_t kErrorCount = sizeof kPythonErrors / sizeof kPythonErrors[0];
static_assert(std::string_view(kPythonErrors[kRedisError].name) == "RedisError");
static_assert(std::string_view(kPythonErrors[kConnectionError].name) == "ConnectionError");
static_assert(std::string_view(kPythonErrors[kResponseError].name) == "ResponseError");
static_assert(std::string_view(kPythonErrors[0].name) == "RateLimited");
static_assert(std::string_view(kPythonErrors[1].name) == "NotReplicatedError");
static_assert(std::string_view(kPythonErrors[2].name) == "ClockSkewError");
py::handle python_errors[kErrorCount];  // created by declare_exceptions, never freed

py::object make_python_error(py::handle type, const char* what) { return type(what); }

}  // namespace

// An exception raised by the core, as a Python exception object: the one mapping, used to raise
// (the translator below) and to fail asyncio futures.
py::object exception_object(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const py::error_already_set& e) {
    return e.value();
  } catch (const std::invalid_argument& e) {
    for (std::size_t i = 0; i < kErrorCount; ++i) {
      if (kPythonErrors[i].parent == kValueError && kPythonErrors[i].matches(e)) {
        return make_python_error(python_errors[i], e.what());
      }
    }
    return make_python_error(PyExc_ValueError, e.what());
  } catch (const std::bad_alloc&) {
    return py::reinterpret_borrow<py::object>(PyExc_MemoryError)();
  } catch (const RateLimited& e) {  // guards: with its retry_after
    py::object value = make_python_error(python_errors[0], e.what());
    value.attr("retry_after") = py::float_(e.retry_after);
    return value;
  } catch (const NotReplicatedError& e) {  // durable acknowledgements: with the counts
    py::object value = make_python_error(python_errors[1], e.what());
    value.attr("replicas") = py::int_(e.replicas);
    value.attr("min_replicas") = py::int_(e.min_replicas);
    return value;
  } catch (const ClockSkew& e) {  // with the server's time, an aware datetime (UTC)
    py::object value = make_python_error(python_errors[2], e.what());
    py::module_ datetime = py::module_::import("datetime");
    py::object utc = datetime.attr("timezone").attr("utc");
    value.attr("server_time") =
        datetime.attr("datetime").attr("fromtimestamp")(py::int_(e.server_time_ms / 1000), utc) +
        datetime.attr("timedelta")(py::arg("milliseconds") = e.server_time_ms % 1000);
    return value;
  } catch (const std::exception& e) {
    for (std::size_t i = 0; i < kErrorCount; ++i) {
      if (kPythonErrors[i].matches(e)) return make_python_error(python_errors[i], e.what());
    }
    return make_python_error(PyExc_RuntimeError, e.what());
  } catch (...) {
    return make_python_error(PyExc_RuntimeError, "unknown C++ exception");
  }
}

py::handle response_error_type() { return python_errors[kResponseError]; }

void declare_exceptions(py::module_& m) {
  const std::string prefix = py::str(m.attr("__name__")).cast<std::string>() + ".";
  for (int i = static_cast<int>(kErrorCount) - 1; i >= 0; --i) {  // parents first
    const auto& error = kPythonErrors[i];
    py::handle base = error.parent == kException    ? py::handle(PyExc_Exception)
                      : error.parent == kValueError ? py::handle(PyExc_ValueError)
                                                    : python_errors[error.parent];
    PyObject* type =
        PyErr_NewExceptionWithDoc((prefix + error.name).c_str(), error.doc, base.ptr(), nullptr);
    if (type == nullptr) throw py::error_already_set();
    python_errors[i] = type;  // owned by the module for the life of the process
    m.attr(error.name) = py::handle(type);
  }
  py::register_exception_translator([](std::exception_ptr error) {
    if (!error) return;
    try {
      std::rethrow_exception(error);
    } catch (const RedisError&) {
      py::object value = exception_object(error);
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(value.ptr())), value.ptr());
    } catch (const InvalidArgument&) {  // ValueError, or the subclass the table names
      py::object value = exception_object(error);
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(value.ptr())), value.ptr());
    }
  });
}

// A raw reply as redis-py returns it without decode_responses; error replies raise unless
// `errors_as_values`, where they become ResponseError instances (for the codec tests).
py::object reply_to_python(const Reply& reply, bool errors_as_values) {
  switch (reply.type) {
    case ReplyType::String:
      return py::bytes(reply.str.data(), reply.str.size());
    case ReplyType::Status:
      return text(reply.str);
    case ReplyType::Integer:
      return py::int_(reply.integer);
    case ReplyType::Nil:
      return py::none();
    case ReplyType::Error:
      if (errors_as_values) return response_error_type()(text(reply.str));
      connection::raise_error_reply(reply);
    case ReplyType::Array: {
      py::list out(reply.elements.size());
      for (std::size_t i = 0; i < reply.elements.size(); ++i) {
        out[i] = reply_to_python(reply.elements[i], errors_as_values);
      }
      return out;
    }
  }
  return py::none();
}

std::string argument_bytes(py::handle arg) {
  if (PyBytes_Check(arg.ptr()))
    return std::string(py::bytes(py::reinterpret_borrow<py::bytes>(arg)));
  if (PyUnicode_Check(arg.ptr())) return utf8(arg);
  if (PyLong_Check(arg.ptr()) || PyFloat_Check(arg.ptr())) return utf8(py::str(arg));
  throw py::type_error("command arguments must be str, bytes, int or float, not " + type_name(arg));
}

// A blocking call interrupted by a signal runs Python's handlers; Ctrl+C then abandons the call
// with KeyboardInterrupt instead of waiting for Redis.
void check_python_signals() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

PyOperation wrap(std::unique_ptr<Operation> operation) {
  const char* name = operation->name();
  return PyOperation{std::move(operation), name, nullptr, std::nullopt};
}

PyOperation& operation_arg(py::handle value) {
  if (!py::isinstance<PyOperation>(value)) {
    throw py::type_error("expected a redis_leaderboard._core.Operation, not " + type_name(value));
  }
  return value.cast<PyOperation&>();
}

// ---- Client options: the table ---------------------------------------------------------------

namespace {

template <class T>
struct is_integer : std::is_integral<T> {};
template <class T>
struct is_integer<std::optional<T>> : std::is_integral<T> {};

// A str pybind11 could not convert holds a lone surrogate (UTF-8 cannot encode it): raises
// UnicodeEncodeError (a ValueError), as a user id or metadata does, rather than a TypeError
// saying that a str must be a str.
void raise_unless_utf8(py::handle value) {
  if (PyUnicode_Check(value.ptr())) (void)value.attr("encode")("utf-8");
}

// `value` as T with pybind11's own conversions (those the constructors' typed parameters used);
// TypeError naming the option otherwise (with the value for an int out of T's range).
template <class T>
T option_value(py::handle value, const char* name, const char* expected) {
  try {
    return py::cast<T>(value);
  } catch (const py::cast_error&) {
    raise_unless_utf8(value);
    const bool integer = PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr());
    throw py::type_error(
        std::string(name) + " must be " + expected + ", not " +
        (integer && is_integer<T>::value ? utf8(py::repr(value)) : type_name(value)));
  }
}

using CertReqs = connection::TlsOptions::CertReqs;

// ssl_cert_reqs: "required", "optional", "none" (redis-py's URLs), an ssl.VerifyMode (an IntEnum:
// checked first) or None (required, as redis-py).
CertReqs cert_reqs_arg(py::handle value) {
  if (value.is_none()) return CertReqs::Required;
  if (PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr())) {
    long mode = value.cast<long>();  // ssl.CERT_NONE, CERT_OPTIONAL, CERT_REQUIRED
    if (mode < 0 || mode > 2) throw py::value_error("ssl_cert_reqs: unknown ssl.VerifyMode");
    return mode == 0 ? CertReqs::None : mode == 1 ? CertReqs::Optional : CertReqs::Required;
  }
  if (!PyUnicode_Check(value.ptr())) {
    throw py::type_error("ssl_cert_reqs must be a str or an ssl.VerifyMode");
  }
  auto text = utf8(value);
  if (text == "required") return CertReqs::Required;
  if (text == "optional") return CertReqs::Optional;
  if (text == "none") return CertReqs::None;
  throw py::value_error("ssl_cert_reqs must be 'required', 'optional' or 'none', not '" + text +
                        "'");
}

const char* cert_reqs_name(CertReqs reqs) {
  return reqs == CertReqs::None ? "none" : reqs == CertReqs::Optional ? "optional" : "required";
}

// ssl_min_version: "TLSv1.2", "TLSv1.3" (also as the enum's names, "TLSv1_2"), an ssl.TLSVersion
// or None (OpenSSL's default). The value itself is checked by ClientOptions::validate.
std::optional<std::string> min_version_arg(py::handle value) {
  if (value.is_none()) return std::nullopt;
  if (PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr())) {
    long version = value.cast<long>();  // ssl.TLSVersion: TLSv1_2 = 0x303, TLSv1_3 = 0x304
    if (version != 0x303 && version != 0x304) {
      throw py::value_error("ssl_min_version must be TLSv1.2 or TLSv1.3");
    }
    return version == 0x303 ? "TLSv1.2" : "TLSv1.3";
  }
  if (!PyUnicode_Check(value.ptr())) {
    throw py::type_error("ssl_min_version must be a str or an ssl.TLSVersion");
  }
  auto text = utf8(value);
  for (auto& c : text) c = c == '_' ? '.' : c;
  return text;
}

// client_cache_size, client_cache_max_bytes: an int of at least 1.
std::size_t cache_size_arg(py::handle value, const char* name) {
  long long size = integer_arg(value, name);
  if (size < 1) throw InvalidArgument(std::string(name) + " must be at least 1");
  return static_cast<std::size_t>(size);
}

using Read = void (*)(ClientArguments&, py::handle value, const char* name);
using Show = py::object (*)(const ClientArguments&);

struct ClientOption {
  const char* name;
  unsigned kinds;   // ClientKind bits: the clients that take it
  bool positional;  // may be given by position (in table order) to Client and AsyncCore; the
                    // cluster clients take startup_nodes by position, every option by keyword
  Read read;        // the Python value into the C++ options
  Show show;        // the C++ value as Python sees it: of ClientArguments{}, the default
};

constexpr unsigned kOneServer = kBlockingClient | kAsyncClient;
constexpr unsigned kEvery = kOneServer | kClusterClient;
constexpr bool kPositional = true, kKeyword = false;

// An option pybind11 converts and stored as it is, in `field` of ClientArguments.
#define RLB_OPTION(name, kinds, positional, field, expected)                     \
  ClientOption {                                                                 \
    name, kinds, positional,                                                     \
        [](ClientArguments& a, py::handle value, const char* option) {           \
          a.field = option_value<decltype(a.field)>(value, option, expected);    \
        },                                                                       \
        [](const ClientArguments& a) -> py::object { return py::cast(a.field); } \
  }

// Every option, in ClientOptions' order (python/redis_leaderboard/options.py): the sync client's,
// then the asyncio client's back-pressure, then the cluster clients' own.
const ClientOption kClientOptions[] = {
    RLB_OPTION("host", kOneServer, kPositional, client.host, "a str"),
    RLB_OPTION("port", kOneServer, kPositional, client.port, "an int"),
    RLB_OPTION("db", kOneServer, kPositional, client.db, "an int"),
    RLB_OPTION("username", kEvery, kPositional, client.username, "a str or None"),
    RLB_OPTION("password", kEvery, kPositional, client.password, "a str or None"),
    RLB_OPTION("socket_timeout", kEvery, kPositional, client.socket_timeout, "a number or None"),
    RLB_OPTION("socket_connect_timeout", kEvery, kPositional, client.socket_connect_timeout,
               "a number or None"),
    RLB_OPTION("client_name", kEvery, kPositional, client.client_name, "a str or None"),
    {"unix_socket_path", kOneServer, kPositional,  // "": none
     [](ClientArguments& a, py::handle value, const char* name) {
       a.client.unix_socket_path =
           option_value<std::optional<std::string>>(value, name, "a str or None").value_or("");
     },
     [](const ClientArguments& a) -> py::object {
       if (a.client.unix_socket_path.empty()) return py::none();
       return py::str(a.client.unix_socket_path);
     }},
    {"max_reply_bytes", kEvery, kKeyword,  // None: codec::kDefaultMaxReplyBytes
     [](ClientArguments& a, py::handle value, const char* name) {
       auto bytes = option_value<std::optional<std::size_t>>(value, name, "an int >= 0 or None");
       a.client.max_reply_bytes = bytes.value_or(codec::kDefaultMaxReplyBytes);
     },
     [](const ClientArguments& a) -> py::object {
       if (a.client.max_reply_bytes == codec::kDefaultMaxReplyBytes) return py::none();
       return py::int_(a.client.max_reply_bytes);
     }},
    RLB_OPTION("min_replicas", kEvery, kKeyword, client.durability.min_replicas, "an int >= 0"),
    RLB_OPTION("replica_timeout", kEvery, kKeyword, client.durability.timeout, "a number"),
    RLB_OPTION("wait_aof", kEvery, kKeyword, client.durability.aof, "a bool"),
    RLB_OPTION("ssl", kEvery, kKeyword, client.tls.enabled, "a bool"),
    RLB_OPTION("ssl_ca_certs", kEvery, kKeyword, client.tls.ca_certs, "a str or None"),
    RLB_OPTION("ssl_ca_path", kEvery, kKeyword, client.tls.ca_path, "a str or None"),
    RLB_OPTION("ssl_ca_data", kEvery, kKeyword, client.tls.ca_data, "a str or None"),
    RLB_OPTION("ssl_certfile", kEvery, kKeyword, client.tls.certfile, "a str or None"),
    RLB_OPTION("ssl_keyfile", kEvery, kKeyword, client.tls.keyfile, "a str or None"),
    RLB_OPTION("ssl_password", kEvery, kKeyword, client.tls.password, "a str or None"),
    {"ssl_cert_reqs", kEvery, kKeyword,
     [](ClientArguments& a, py::handle value, const char*) {
       a.client.tls.cert_reqs = cert_reqs_arg(value);
     },
     [](const ClientArguments& a) -> py::object {
       return py::str(cert_reqs_name(a.client.tls.cert_reqs));
     }},
    RLB_OPTION("ssl_check_hostname", kEvery, kKeyword, client.tls.check_hostname, "a bool"),
    {"ssl_min_version", kEvery, kKeyword,
     [](ClientArguments& a, py::handle value, const char*) {
       a.client.tls.min_version = min_version_arg(value);
     },
     [](const ClientArguments& a) -> py::object { return py::cast(a.client.tls.min_version); }},
    RLB_OPTION("ssl_ciphers", kEvery, kKeyword, client.tls.ciphers, "a str or None"),
    {"sentinels", kOneServer, kKeyword,  // empty: no Sentinel
     [](ClientArguments& a, py::handle value, const char* name) {
       a.client.sentinel.sentinels.clear();
       if (value.is_none()) return;
       a.client.sentinel.sentinels = address_pairs(value, name);
       if (a.client.sentinel.sentinels.empty()) {
         throw py::value_error("sentinels must name at least one sentinel");
       }
     },
     [](const ClientArguments& a) -> py::object {
       if (!a.client.sentinel.enabled()) return py::none();
       return py::cast(a.client.sentinel.sentinels);
     }},
    RLB_OPTION("service_name", kOneServer, kKeyword, service_name, "a str or None"),
    RLB_OPTION("sentinel_username", kOneServer, kKeyword, client.sentinel.username,
               "a str or None"),
    RLB_OPTION("sentinel_password", kOneServer, kKeyword, client.sentinel.password,
               "a str or None"),
    RLB_OPTION("sentinel_ssl", kOneServer, kKeyword, client.sentinel.tls, "a bool"),
    {"client_cache", kOneServer, kKeyword,  // True or False only: not a size
     [](ClientArguments& a, py::handle value, const char* name) {
       if (!PyBool_Check(value.ptr())) {
         throw py::type_error(std::string(name) + " must be a bool, not " + type_name(value));
       }
       a.client_cache = value.ptr() == Py_True;
     },
     [](const ClientArguments& a) -> py::object { return py::bool_(a.client_cache); }},
    {"client_cache_size", kOneServer, kKeyword,
     [](ClientArguments& a, py::handle value, const char* name) {
       a.cache.max_entries = cache_size_arg(value, name);
     },
     [](const ClientArguments& a) -> py::object { return py::int_(a.cache.max_entries); }},
    {"client_cache_max_bytes", kOneServer, kKeyword,
     [](ClientArguments& a, py::handle value, const char* name) {
       a.cache.max_bytes = cache_size_arg(value, name);
     },
     [](const ClientArguments& a) -> py::object { return py::int_(a.cache.max_bytes); }},
    RLB_OPTION("max_in_flight", kAsyncClient, kKeyword, max_in_flight, "an int >= 0"),
    RLB_OPTION("max_pending", kAsyncClient, kKeyword, max_pending, "an int >= 0"),
    RLB_OPTION("max_bytes_in_flight", kAsyncClient, kKeyword, max_bytes_in_flight, "an int >= 0"),
    RLB_OPTION("read_from_replicas", kClusterClient, kKeyword, read_from_replicas, "a bool"),
};

#undef RLB_OPTION

const char* kind_name(ClientKind kind) {
  return kind == kClusterClient ? "ClusterClient" : "Client";
}

// The option of `kind` closest to a misspelt name (at most two edits away), for the message.
const ClientOption* closest(ClientKind kind, std::string_view name) {
  const ClientOption* best = nullptr;
  std::size_t best_distance = 3;
  for (const auto& option : kClientOptions) {
    if (!(option.kinds & kind)) continue;
    std::string_view other = option.name;
    std::vector<std::size_t> row(other.size() + 1);
    for (std::size_t j = 0; j <= other.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= name.size(); ++i) {
      std::size_t diagonal = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= other.size(); ++j) {
        std::size_t above = row[j];
        row[j] = std::min(
            {row[j] + 1, row[j - 1] + 1, diagonal + (name[i - 1] == other[j - 1] ? 0 : 1)});
        diagonal = above;
      }
    }
    if (row[other.size()] < best_distance) {
      best_distance = row[other.size()];
      best = &option;
    }
  }
  return best;
}

}  // namespace

std::vector<std::pair<std::string, int>> address_pairs(py::handle value, const char* name) {
  if (PyUnicode_Check(value.ptr()) || PyBytes_Check(value.ptr()) ||
      !py::isinstance<py::iterable>(value)) {
    throw py::type_error(std::string(name) + " must be (host, port) pairs, not " +
                         type_name(value));
  }
  std::vector<std::pair<std::string, int>> pairs;
  for (py::handle item : value) {
    try {
      pairs.push_back(py::cast<std::pair<std::string, int>>(item));
    } catch (const py::cast_error&) {
      if (py::isinstance<py::tuple>(item) && py::len(item) == 2) {
        raise_unless_utf8(py::reinterpret_borrow<py::tuple>(item)[0]);
      }
      throw py::type_error(std::string(name) + " must be (host, port) pairs, not " +
                           utf8(py::repr(item)) + " in them");
    }
  }
  return pairs;
}

void start_log_pump() {
  try {
    py::module_::import("redis_leaderboard._logs").attr("start")();
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable("redis_leaderboard: starting the log pump");
  }
}

ClientArguments client_arguments(ClientKind kind, const py::args& args, const py::kwargs& kwargs) {
  ClientArguments arguments;
  constexpr std::size_t count = std::size(kClientOptions);
  bool given[count] = {};
  std::size_t taken = 0, positional = 0;
  for (std::size_t i = 0; i < count && kind != kClusterClient; ++i) {
    const auto& option = kClientOptions[i];
    if (!(option.kinds & kind) || !option.positional) continue;
    ++positional;
    if (taken < args.size()) {
      option.read(arguments, args[taken++], option.name);
      given[i] = true;
    }
  }
  if (taken < args.size()) {
    throw py::type_error(std::string(kind_name(kind)) + "() takes at most " +
                         std::to_string(positional) + " positional arguments (" +
                         std::to_string(args.size()) + " given)");
  }
  for (auto [key, value] : kwargs) {
    auto name = utf8(key);  // keywords are always str
    std::size_t i = 0;
    while (i < count && (kClientOptions[i].name != name || !(kClientOptions[i].kinds & kind))) ++i;
    if (i == count) {
      std::string message =
          std::string(kind_name(kind)) + "() got an unexpected keyword argument '" + name + "'";
      if (const auto* near = closest(kind, name)) {
        message += std::string(" (did you mean '") + near->name + "'?)";
      }
      throw py::type_error(message);
    }
    if (given[i]) {
      throw py::type_error(std::string(kind_name(kind)) + "() got multiple values for argument '" +
                           name + "'");
    }
    kClientOptions[i].read(arguments, value, kClientOptions[i].name);
    given[i] = true;
  }
  auto& sentinel = arguments.client.sentinel;
  if (sentinel.enabled() && !arguments.service_name) {
    throw py::value_error("sentinels need a service_name");
  }
  if (!sentinel.enabled() && arguments.service_name) {
    throw py::value_error("service_name needs sentinels");
  }
  if (arguments.service_name) sentinel.service_name = *arguments.service_name;
  if (kind != kClusterClient) arguments.client.validate();
  return arguments;
}

py::list option_table() {
  const ClientArguments defaults;
  py::list table;
  for (const auto& option : kClientOptions) {
    py::list clients;
    if (option.kinds & kBlockingClient) clients.append("Client");
    if (option.kinds & kAsyncClient) clients.append("AsyncCore");
    if (option.kinds & kClusterClient) clients.append("ClusterClient");
    table.append(
        py::make_tuple(option.name, option.show(defaults), option.positional, py::tuple(clients)));
  }
  return table;
}

std::string constructor_doc(ClientKind kind, const std::string& before, const std::string& doc) {
  const ClientArguments defaults;
  std::string signature = "__init__(self, " + before;
  bool keyword_only = false;
  for (const auto& option : kClientOptions) {
    if (!(option.kinds & kind)) continue;
    if (!(option.positional && kind != kClusterClient) && !keyword_only) {
      signature += "*, ";
      keyword_only = true;
    }
    signature += std::string(option.name) + "=" + utf8(py::repr(option.show(defaults))) + ", ";
  }
  signature.resize(signature.size() - 2);
  return signature + ")\n\n" + doc;
}

py::dict stats_dict(const connection::Stats& s) {
  py::dict out;
  out["round_trips"] = s.round_trips;
  out["commands"] = s.commands;
  out["reconnects"] = s.reconnects;
  out["connections"] = s.connections;
  return out;
}

py::dict cache_stats_dict(const connection::CacheStats& s, const connection::CacheOptions& o) {
  py::dict out;
  out["hits"] = s.hits;
  out["misses"] = s.misses;
  out["invalidations"] = s.invalidations;
  out["flushes"] = s.flushes;
  out["entries"] = s.entries;
  out["bytes"] = s.bytes;
  out["max_entries"] = o.max_entries;
  out["max_bytes"] = o.max_bytes;
  out["tracking"] = s.tracking;
  return out;
}

}  // namespace rlb::bindings
