#pragma once
// One reader for the fields of perfloom's validated JSON files: GPU specs, calibrations, LLM configs
// and tuner tables. It offers required and optional typed getters with numeric bounds, nested objects
// and arrays that carry their path ("memory.levels[2].gemm_factor"), and a check that no unknown
// field is left, and every refusal names the file, the field and the reason. Refusals go through the
// input kind's own exception (GpuSpecError, CalibrationError, ...), so that callers catch exactly the
// inputs they read.
//
// The files may be someone else's, and hostile: a message never dump()s a value (a deeply nested one
// would recurse without bound), it names the value's type and, for a scalar, a bounded excerpt; keys
// in paths are cut as well; parse_json_object bounds the nesting depth of the document.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace perfloom {

// Raises the refusal of one field as an input kind's own error: throw_field_error<GpuSpecError>, or
// a function that formats another error type. It must throw.
using FieldErrorFn = void (*)(const std::string& file, const std::string& field, const std::string& reason);

template <class Error>
[[noreturn]] void throw_field_error(const std::string& file, const std::string& field, const std::string& reason) {
  throw Error(file, field, reason);
}

// The nesting a validated file may have: a tuner table, perfloom's deepest file, nests 10 levels (its
// XGBoost models); the limit leaves room for that and refuses what no honest file needs.
inline constexpr int kMaxJsonDepth = 64;
// The bytes of a string value or a key that a refusal quotes (a foreign message: four times that).
inline constexpr std::size_t kExcerptChars = 80;

// `text` in double quotes for a message, cut at `max_chars` bytes (on a UTF-8 boundary) and followed by
// its length when longer.
std::string quote_excerpt(std::string_view text, std::size_t max_chars = kExcerptChars);
// The same without the quotes, for a message that quotes otherwise ('MambaForCausalLM'); control
// characters are kept as they are.
std::string text_excerpt(std::string_view text, std::size_t max_chars = kExcerptChars);
// What "(got ...)" says of a value: a number, true/false/null as written, a string quoted and cut,
// a container only by its type ("an array of 3 entries", "an object").
std::string json_excerpt(const nlohmann::json& v);
// What "expected ..., got ..." says of a value: its type, and for a scalar its excerpt
// ("string \"1830\"", "number -3", "array").
std::string describe_json(const nlohmann::json& v);

// Parses `text` as one JSON object nested at most `max_depth` levels. Refuses, through `raise` with
// an empty field, text that is not JSON, nests deeper or is not an object at the top level; `expected`
// (optional) says what the file should be ("a Hugging Face config.json").
nlohmann::json parse_json_object(std::string_view text, const std::string& file, FieldErrorFn raise,
                                 std::string_view expected = {}, int max_depth = kMaxJsonDepth);

// True when the JSON text `text` opens more than `max_depth` arrays and objects inside one another
// (brackets in strings do not count). A linear scan that builds nothing, for text handed to a parser
// that recurses per level (XGBoost's), before it is handed over.
bool json_nests_deeper_than(std::string_view text, int max_depth);

// The numbers a field accepts: [lo, hi], either end open or unbounded. `what` names the kind of value
// in the message ("a probability": "must be a probability in (0, 1]").
struct NumberRange {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false, hi_open = false;
  std::string_view what;

  static NumberRange any() { return {}; }
  static NumberRange between(double lo, double hi) { return {lo, hi, false, false, {}}; }
  static NumberRange at_least(double lo) { return {lo, std::numeric_limits<double>::infinity(), false, false, {}}; }
  static NumberRange positive() { return {0, std::numeric_limits<double>::infinity(), true, false, {}}; }
  // An interval with either end open: in(0, 1, true, false) is (0, 1].
  static NumberRange in(double lo, double hi, bool lo_open, bool hi_open) { return {lo, hi, lo_open, hi_open, {}}; }
  NumberRange named(std::string_view kind) const {
    NumberRange r = *this;
    r.what = kind;
    return r;
  }

  bool contains(double x) const;
  // "between 1 and 1024", "at least 0", "positive", "in (0, 1]", "" for any number.
  std::string describe() const;
};

struct JsonReadOptions {
  // Hugging Face configs write null for "not set": such a field reads as absent.
  bool null_is_absent = false;
  // The reason given for an absent required field.
  std::string missing = "is required";
};

class JsonFields;

// One value of a file at its path. It refers to the value: the document must outlive it.
class JsonValue {
 public:
  // `v` of `file`, at `path` ("" for the document itself).
  JsonValue(const nlohmann::json& v, std::string file, FieldErrorFn raise, std::string path = "",
            JsonReadOptions options = {});

  const nlohmann::json& value() const { return *v_; }
  const std::string& path() const { return path_; }
  const std::string& file() const;
  const JsonReadOptions& options() const;

  // A finite number within `r`.
  double number(const NumberRange& r = {}) const;
  // A whole number within `r` (4.0 counts: some writers emit every number with a fraction).
  int64_t integer(const NumberRange& r = {}) const;
  // A string; `allow_empty` false refuses "".
  std::string string(bool allow_empty = true) const;
  bool boolean() const;
  JsonFields object() const;
  // The entries of an array, each with its path ("levels[3]").
  std::vector<JsonValue> array() const;
  // This value under another name in messages (a run of a row's entries read as one list).
  JsonValue with_path(std::string path) const;

  [[noreturn]] void fail(const std::string& reason) const;

 private:
  struct Source {
    std::string file;
    FieldErrorFn raise;
    JsonReadOptions options;
  };
  friend class JsonFields;
  JsonValue(const nlohmann::json& v, std::shared_ptr<const Source> source, std::string path)
      : v_(&v), source_(std::move(source)), path_(std::move(path)) {}

  const nlohmann::json* v_;
  std::shared_ptr<const Source> source_;
  std::string path_;
};

// The fields of one object of a file. Each getter remembers the key it read, so that
// refuse_unknown() can refuse the others (a misspelt optional field would otherwise pass unnoticed).
class JsonFields {
 public:
  // `obj` must be a JSON object (JsonValue::object() checks it) and outlive the reader.
  JsonFields(const nlohmann::json& obj, std::string file, FieldErrorFn raise, std::string path = "",
             JsonReadOptions options = {});

  const nlohmann::json& value() const { return self_.value(); }
  const std::string& path() const { return self_.path(); }
  const std::string& file() const { return self_.file(); }
  // The path of a field of this object, its key cut when absurdly long.
  std::string path_of(std::string_view key) const;
  // Present (and, with JsonReadOptions::null_is_absent, not null).
  bool has(std::string_view key) const;
  // The object's keys, in the document's (sorted) order; reads none of them.
  std::vector<std::string> keys() const;

  JsonValue required(std::string_view key) const;
  std::optional<JsonValue> optional(std::string_view key) const;

  double number(std::string_view key, const NumberRange& r = {}) const;
  double number_or(std::string_view key, double fallback, const NumberRange& r = {}) const;
  int64_t integer(std::string_view key, const NumberRange& r = {}) const;
  int64_t integer_or(std::string_view key, int64_t fallback, const NumberRange& r = {}) const;
  // A required string must not be empty.
  std::string string(std::string_view key) const;
  std::string string_or(std::string_view key, const std::string& fallback) const;
  bool boolean(std::string_view key) const;
  bool boolean_or(std::string_view key, bool fallback) const;
  JsonFields object(std::string_view key) const;
  std::optional<JsonFields> optional_object(std::string_view key) const;
  std::vector<JsonValue> array(std::string_view key) const;

  // Counts `key` as read without reading it (a field checked elsewhere, or kept as is).
  void ignore(std::string_view key) const;
  // Refuses the first field no getter read: "is not a known field (misspelt?)".
  void refuse_unknown() const;

  [[noreturn]] void fail(std::string_view key, const std::string& reason) const;
  // A refusal of the object as a whole.
  [[noreturn]] void fail(const std::string& reason) const { self_.fail(reason); }

 private:
  explicit JsonFields(JsonValue self) : self_(std::move(self)) {}
  friend class JsonValue;
  JsonValue child(std::string_view key) const;

  JsonValue self_;
  mutable std::set<std::string, std::less<>> seen_;
};

}  // namespace perfloom
