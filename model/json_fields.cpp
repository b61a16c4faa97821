#include "model/json_fields.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "model/input_error.h"

namespace perfloom {

using nlohmann::json;

namespace {

// The length of `text`'s first `max_bytes` bytes without a UTF-8 sequence cut in two.
std::size_t utf8_prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text.size();
  std::size_t n = max_bytes;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;  // n is not a continuation byte
  return n;
}

std::string cut(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  return std::string(text.substr(0, utf8_prefix(text, max_bytes))) + "...";
}

// Ten significant digits: bounds read as written ("1000000", "0.05"), not as "1e+06".
std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", x);
  return buf;
}

// Thrown from the parser's callback when the document nests too deep; never leaves this file.
struct TooDeep {};

[[noreturn]] void refuse(FieldErrorFn raise, const std::string& file, const std::string& reason) {
  raise(file, "", reason);
  throw InputError(file, "", reason);  // a raise function that returned
}

}  // namespace

std::string quote_excerpt(std::string_view text, std::size_t max_chars) {
  const std::size_t n = utf8_prefix(text, max_chars);
  // dump() of a string escapes quotes and control characters; `replace` keeps it from throwing on
  // bytes that are not UTF-8 (a value built in code, not parsed).
  std::string q = json(std::string(text.substr(0, n))).dump(-1, ' ', false, json::error_handler_t::replace);
  if (n < text.size()) q += "... (" + std::to_string(text.size()) + " bytes)";
  return q;
}

std::string text_excerpt(std::string_view text, std::size_t max_chars) {
  const std::size_t n = utf8_prefix(text, max_chars);
  if (n == text.size()) return std::string(text);
  return std::string(text.substr(0, n)) + "... (" + std::to_string(text.size()) + " bytes)";
}

std::string json_excerpt(const json& v) {
  switch (v.type()) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array of " + std::to_string(v.size()) + (v.size() == 1 ? " entry" : " entries");
    case json::value_t::string:
      return quote_excerpt(v.get_ref<const std::string&>());
    case json::value_t::binary:
      return "binary data";
    case json::value_t::discarded:
      return "nothing";
    default:
      return v.dump();  // a number, true, false or null: a few characters, no recursion
  }
}

std::string describe_json(const json& v) {
  switch (v.type()) {
    case json::value_t::object:
    case json::value_t::array:
    case json::value_t::null:
    case json::value_t::binary:
    case json::value_t::discarded:
      return v.type_name();
    default:
      return std::string(v.type_name()) + " " + json_excerpt(v);
  }
}

json parse_json_object(std::string_view text, const std::string& file, FieldErrorFn raise, std::string_view expected,
                       int max_depth) {
  json doc;
  const std::string hint = expected.empty() ? "" : " (expected " + std::string(expected) + ")";
  try {
    // The callback sees each container open at the depth of its parent (0 for the document itself).
    doc = json::parse(text, [max_depth](int depth, json::parse_event_t event, json&) {
      if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
          depth >= max_depth)
        throw TooDeep{};
      return true;
    });
  } catch (const json::parse_error& e) {
    // The parser quotes what it read last, which can be a whole unterminated string.
    refuse(raise, file, "not valid JSON: " + cut(e.what(), 4 * kExcerptChars));
  } catch (const json::out_of_range& e) {
    // A number beyond a double ("1e400"): the parser's message quotes it.
    refuse(raise, file, "not valid JSON: a number out of range: " + cut(e.what(), 4 * kExcerptChars));
  } catch (const TooDeep&) {
    refuse(raise, file, "nests deeper than " + std::to_string(max_depth) + " levels");
  }
  if (!doc.is_object())
    refuse(raise, file, "not a JSON object at the top level (got " + describe_json(doc) + ")" + hint);
  return doc;
}

bool json_nests_deeper_than(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character, a quote or a backslash, is no delimiter
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

bool NumberRange::contains(double x) const { return (lo_open ? x > lo : x >= lo) && (hi_open ? x < hi : x <= hi); }

std::string NumberRange::describe() const {
  const bool has_lo = std::isfinite(lo), has_hi = std::isfinite(hi);
  std::string r;
  if (has_lo && has_hi && !lo_open && !hi_open)
    r = "between " + number_text(lo) + " and " + number_text(hi);
  else if (has_lo && has_hi)
    r = std::string("in ") + (lo_open ? "(" : "[") + number_text(lo) + ", " + number_text(hi) + (hi_open ? ")" : "]");
  else if (has_lo && lo_open && lo == 0)
    r = "positive";
  else if (has_lo)
    r = (lo_open ? "above " : "at least ") + number_text(lo);
  else if (has_hi)
    r = (hi_open ? "below " : "at most ") + number_text(hi);
  if (what.empty()) return r;
  return std::string(what) + (r.empty() ? "" : " " + r);
}

// ---- JsonValue ----

JsonValue::JsonValue(const json& v, std::string file, FieldErrorFn raise, std::string path, JsonReadOptions options)
    : v_(&v),
      source_(std::make_shared<const Source>(Source{std::move(file), raise, std::move(options)})),
      path_(std::move(path)) {}

const std::string& JsonValue::file() const { return source_->file; }
const JsonReadOptions& JsonValue::options() const { return source_->options; }

void JsonValue::fail(const std::string& reason) const {
  source_->raise(source_->file, path_, reason);
  throw InputError(source_->file, path_, reason);  // a raise function that returned
}

double JsonValue::number(const NumberRange& r) const {
  if (!v_->is_number()) fail("expected a number, got " + describe_json(*v_));
  const double x = v_->get<double>();
  if (!std::isfinite(x)) fail("must be a finite number (got " + json_excerpt(*v_) + ")");
  if (!r.contains(x)) fail("must be " + r.describe() + " (got " + json_excerpt(*v_) + ")");
  return x;
}

int64_t JsonValue::integer(const NumberRange& r) const {
  if (!v_->is_number()) fail("expected a whole number, got " + describe_json(*v_));
  const double x = number(r);
  if (v_->is_number_unsigned()) {
    const auto u = v_->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail("is too large (got " + json_excerpt(*v_) + ")");
    return static_cast<int64_t>(u);
  }
  if (v_->is_number_integer()) return v_->get<int64_t>();
  if (x != std::floor(x)) fail("must be a whole number (got " + json_excerpt(*v_) + ")");
  if (!(std::abs(x) < 9.2e18)) fail("is too large (got " + json_excerpt(*v_) + ")");  // beyond int64_t
  return static_cast<int64_t>(x);
}

std::string JsonValue::string(bool allow_empty) const {
  if (!v_->is_string()) fail("expected a string, got " + describe_json(*v_));
  const auto& s = v_->get_ref<const std::string&>();
  if (!allow_empty && s.empty()) fail("must not be empty");
  return s;
}

bool JsonValue::boolean() const {
  if (!v_->is_boolean()) fail("expected true or false, got " + describe_json(*v_));
  return v_->get<bool>();
}

JsonFields JsonValue::object() const {
  if (!v_->is_object()) fail("expected an object, got " + describe_json(*v_));
  return JsonFields(*this);
}

std::vector<JsonValue> JsonValue::array() const {
  if (!v_->is_array()) fail("expected an array, got " + describe_json(*v_));
  std::vector<JsonValue> out;
  out.reserve(v_->size());
  for (std::size_t i = 0; i < v_->size(); ++i)
    out.push_back(JsonValue((*v_)[i], source_, path_ + "[" + std::to_string(i) + "]"));
  return out;
}

JsonValue JsonValue::with_path(std::string path) const { return JsonValue(*v_, source_, std::move(path)); }

// ---- JsonFields ----

JsonFields::JsonFields(const json& obj, std::string file, FieldErrorFn raise, std::string path, JsonReadOptions options)
    : self_(obj, std::move(file), raise, std::move(path), std::move(options)) {}

std::string JsonFields::path_of(std::string_view key) const {
  const std::string k = cut(key, kExcerptChars);
  return path().empty() ? k : path() + "." + k;
}

bool JsonFields::has(std::string_view key) const {
  const auto it = value().find(key);
  return it != value().end() && !(self_.options().null_is_absent && it->is_null());
}

std::vector<std::string> JsonFields::keys() const {
  std::vector<std::string> out;
  out.reserve(value().size());
  for (auto it = value().begin(); it != value().end(); ++it) out.push_back(it.key());
  return out;
}

JsonValue JsonFields::child(std::string_view key) const {
  return JsonValue(*value().find(key), self_.source_, path_of(key));
}

JsonValue JsonFields::required(std::string_view key) const {
  ignore(key);
  if (!has(key)) fail(key, self_.options().missing);
  return child(key);
}

std::optional<JsonValue> JsonFields::optional(std::string_view key) const {
  ignore(key);
  if (!has(key)) return std::nullopt;
  return child(key);
}

double JsonFields::number(std::string_view key, const NumberRange& r) const { return required(key).number(r); }

double JsonFields::number_or(std::string_view key, double fallback, const NumberRange& r) const {
  const auto v = optional(key);
  return v ? v->number(r) : fallback;
}

int64_t JsonFields::integer(std::string_view key, const NumberRange& r) const { return required(key).integer(r); }

int64_t JsonFields::integer_or(std::string_view key, int64_t fallback, const NumberRange& r) const {
  const auto v = optional(key);
  return v ? v->integer(r) : fallback;
}

std::string JsonFields::string(std::string_view key) const { return required(key).string(false); }

std::string JsonFields::string_or(std::string_view key, const std::string& fallback) const {
  const auto v = optional(key);
  return v ? v->string() : fallback;
}

bool JsonFields::boolean(std::string_view key) const { return required(key).boolean(); }

bool JsonFields::boolean_or(std::string_view key, bool fallback) const {
  const auto v = optional(key);
  return v ? v->boolean() : fallback;
}

JsonFields JsonFields::object(std::string_view key) const { return required(key).object(); }

std::optional<JsonFields> JsonFields::optional_object(std::string_view key) const {
  const auto v = optional(key);
  if (!v) return std::nullopt;
  return v->object();
}

std::vector<JsonValue> JsonFields::array(std::string_view key) const { return required(key).array(); }

void JsonFields::ignore(std::string_view key) const {
  if (seen_.find(key) == seen_.end()) seen_.emplace(key);
}

void JsonFields::refuse_unknown() const {
  for (auto it = value().begin(); it != value().end(); ++it)
    if (seen_.find(it.key()) == seen_.end()) fail(it.key(), "is not a known field (misspelt?)");
}

void JsonFields::fail(std::string_view key, const std::string& reason) const {
  self_.with_path(path_of(key)).fail(reason);
}

}  // namespace perfloom
