#include "storage/importers/json_reader.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>

#include "storage/importers/importer.h"

namespace perfloom::storage {

namespace {

constexpr std::size_t kBufferBytes = 1 << 20;

// Bytes that may appear in a string without special handling: printable ASCII except '"' and '\'.
constexpr std::array<bool, 256> make_plain() {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x80; ++c) t[static_cast<std::size_t>(c)] = true;
  t['"'] = false;
  t['\\'] = false;
  return t;
}
constexpr std::array<bool, 256> kPlain = make_plain();

void append_utf8(std::string* out, uint32_t cp) {
  if (!out) return;
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string size_text(std::size_t bytes) {
  return bytes >= (1u << 20) && bytes % (1u << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                                        : std::to_string(bytes) + " bytes";
}

std::string describe_char(int c) {
  if (c < 0) return "the end of the input";
  if (c >= 0x21 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02X", c);
  return buf;
}

}  // namespace

JsonReader::JsonReader(Refill refill, std::string label, Limits limits)
    : refill_(std::move(refill)), label_(std::move(label)), limits_(limits) {
  if (limits_.max_number_chars > sizeof(num_) - 1) limits_.max_number_chars = sizeof(num_) - 1;
  cap_ = kBufferBytes;
  buf_ = std::make_unique<char[]>(cap_);
  pos_ = end_ = buf_.get();
  stack_.reserve(64);
}

JsonReader JsonReader::from_memory(std::string_view text, std::string label, Limits limits) {
  auto state = std::make_shared<std::size_t>(0);
  std::string copy(text);
  auto data = std::make_shared<std::string>(std::move(copy));
  return JsonReader(
      [data, state](char* buf, std::size_t cap) {
        std::size_t n = std::min(cap, data->size() - *state);
        // NOLINTNEXTLINE(bugprone-not-null-terminated-result): a byte buffer, not a string
        std::memcpy(buf, data->data() + *state, n);
        *state += n;
        return n;
      },
      std::move(label), limits);
}

bool JsonReader::refill() {
  if (eof_) return false;
  base_ += static_cast<uint64_t>(end_ - buf_.get());
  std::size_t n = refill_(buf_.get(), cap_);
  pos_ = buf_.get();
  end_ = pos_ + n;
  if (n == 0) eof_ = true;
  return n > 0;
}

std::string JsonReader::where() const { return "line " + std::to_string(line_) + ", byte " + std::to_string(offset()); }

void JsonReader::fail(const std::string& reason) const { throw ImportError(label_, where(), reason); }

const char* JsonReader::kind_name(Kind k) {
  switch (k) {
    case Kind::object:
      return "an object";
    case Kind::array:
      return "an array";
    case Kind::string:
      return "a string";
    case Kind::number:
      return "a number";
    case Kind::boolean:
      return "a boolean";
    case Kind::null:
      return "null";
  }
  return "a value";
}

JsonReader::Kind JsonReader::peek() {
  skip_ws();
  int c = peek_char();
  switch (c) {
    case '{':
      return Kind::object;
    case '[':
      return Kind::array;
    case '"':
      return Kind::string;
    case 't':
    case 'f':
      return Kind::boolean;
    case 'n':
      return Kind::null;
    default:
      if (c == '-' || (c >= '0' && c <= '9')) return Kind::number;
      if (c < 0) fail("unexpected end of input (the file is truncated)");
      fail("expected a JSON value, found " + describe_char(c));
  }
}

void JsonReader::push(uint8_t state) {
  if (stack_.size() >= limits_.max_depth) fail("nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
  stack_.push_back(state);
}

void JsonReader::begin_object() {
  Kind k = peek();
  if (k != Kind::object) fail(std::string("expected an object, found ") + kind_name(k));
  ++pos_;
  push(kObjFirst);
}

void JsonReader::begin_array() {
  Kind k = peek();
  if (k != Kind::array) fail(std::string("expected an array, found ") + kind_name(k));
  ++pos_;
  push(kArrFirst);
}

bool JsonReader::next_member() { return advance_member(true); }
bool JsonReader::next_element() { return advance_element(); }

bool JsonReader::advance_member(bool keep_key) {
  skip_ws();
  int c = peek_char();
  uint8_t& top = stack_.back();
  if (top == kObjFirst) {
    top = kObj;
    if (c == '}') {
      ++pos_;
      stack_.pop_back();
      return false;
    }
  } else {
    if (c == '}') {
      ++pos_;
      stack_.pop_back();
      return false;
    }
    if (c != ',') {
      if (c < 0) fail("unexpected end of input inside an object (the file is truncated)");
      fail("expected ',' or '}' after an object member, found " + describe_char(c));
    }
    ++pos_;
    skip_ws();
    c = peek_char();
  }
  if (c != '"') {
    if (c < 0) fail("unexpected end of input inside an object (the file is truncated)");
    fail("expected a member name in double quotes, found " + describe_char(c));
  }
  ++pos_;
  if (keep_key) {
    key_.clear();
    parse_string(&key_, limits_.max_string_bytes);
  } else {
    parse_string(nullptr, 0);
  }
  skip_ws();
  c = peek_char();
  if (c != ':') fail("expected ':' after a member name, found " + describe_char(c));
  ++pos_;
  return true;
}

bool JsonReader::advance_element() {
  skip_ws();
  int c = peek_char();
  uint8_t& top = stack_.back();
  if (top == kArrFirst) {
    top = kArr;
    if (c == ']') {
      ++pos_;
      stack_.pop_back();
      return false;
    }
    if (c < 0) fail("unexpected end of input inside an array (the file is truncated)");
    return true;
  }
  if (c == ']') {
    ++pos_;
    stack_.pop_back();
    return false;
  }
  if (c != ',') {
    if (c < 0) fail("unexpected end of input inside an array (the file is truncated)");
    fail("expected ',' or ']' after an array element, found " + describe_char(c));
  }
  ++pos_;
  return true;
}

void JsonReader::parse_string(std::string* out, std::size_t limit) {
  // Called after the opening quote.
  std::size_t length = 0;
  for (;;) {
    const char* p = pos_;
    while (p < end_ && kPlain[static_cast<unsigned char>(*p)]) ++p;
    std::size_t n = static_cast<std::size_t>(p - pos_);
    if (out) {
      length += n;
      if (length > limit) fail("string longer than " + size_text(limit) + " (not a profiler trace value)");
      out->append(pos_, n);
    }
    pos_ = p;
    if (p == end_) {
      if (!refill()) fail("unexpected end of input inside a string (the file is truncated)");
      continue;
    }
    unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"') {
      ++pos_;
      return;
    }
    if (c == '\\') {
      ++pos_;
      parse_escape(out);
    } else if (c < 0x20) {
      fail(c == '\n' ? "line break inside a string (unterminated string?)" : "control character inside a string");
    } else {
      ++pos_;
      parse_utf8(out, c);
    }
    if (out) {
      length = out->size();
      if (length > limit) fail("string longer than " + size_text(limit) + " (not a profiler trace value)");
    }
  }
}

void JsonReader::parse_escape(std::string* out) {
  int c = peek_char();
  if (c < 0) fail("unexpected end of input inside a string (the file is truncated)");
  ++pos_;
  switch (c) {
    case '"':
      if (out) out->push_back('"');
      return;
    case '\\':
      if (out) out->push_back('\\');
      return;
    case '/':
      if (out) out->push_back('/');
      return;
    case 'b':
      if (out) out->push_back('\b');
      return;
    case 'f':
      if (out) out->push_back('\f');
      return;
    case 'n':
      if (out) out->push_back('\n');
      return;
    case 'r':
      if (out) out->push_back('\r');
      return;
    case 't':
      if (out) out->push_back('\t');
      return;
    case 'u':
      break;
    default:
      fail("invalid escape sequence \\" + std::string(1, static_cast<char>(c)) + " in a string");
  }
  auto hex4 = [&]() -> uint32_t {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      int h = peek_char();
      if (h < 0) fail("unexpected end of input inside a \\u escape");
      ++pos_;
      v <<= 4;
      if (h >= '0' && h <= '9')
        v |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f')
        v |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        v |= static_cast<uint32_t>(h - 'A' + 10);
      else
        fail("\\u must be followed by four hexadecimal digits");
    }
    return v;
  };
  uint32_t cp = hex4();
  if (cp >= 0xDC00 && cp <= 0xDFFF) fail("invalid \\u escape: a low surrogate without a high surrogate");
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    if (peek_char() != '\\') fail("invalid \\u escape: a high surrogate must be followed by a low surrogate");
    ++pos_;
    if (peek_char() != 'u') fail("invalid \\u escape: a high surrogate must be followed by a low surrogate");
    ++pos_;
    uint32_t lo = hex4();
    if (lo < 0xDC00 || lo > 0xDFFF) fail("invalid \\u escape: a high surrogate must be followed by a low surrogate");
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
  }
  append_utf8(out, cp);
}

void JsonReader::parse_utf8(std::string* out, unsigned char lead) {
  int extra;
  uint32_t cp;
  uint32_t min;
  if (lead >= 0xC2 && lead <= 0xDF) {
    extra = 1, cp = lead & 0x1F, min = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    extra = 2, cp = lead & 0x0F, min = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    extra = 3, cp = lead & 0x07, min = 0x10000;
  } else {
    fail("invalid UTF-8 in a string");
  }
  char bytes[4] = {static_cast<char>(lead)};
  for (int i = 1; i <= extra; ++i) {
    int c = peek_char();
    if (c < 0 || (c & 0xC0) != 0x80) fail("invalid UTF-8 in a string");
    ++pos_;
    bytes[i] = static_cast<char>(c);
    cp = (cp << 6) | (static_cast<uint32_t>(c) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail("invalid UTF-8 in a string");
  if (out) out->append(bytes, static_cast<std::size_t>(extra) + 1);
}

void JsonReader::read_string(std::string& out) {
  Kind k = peek();
  if (k != Kind::string) fail(std::string("expected a string, found ") + kind_name(k));
  ++pos_;
  out.clear();
  parse_string(&out, limits_.max_string_bytes);
}

// Checks [s, e) against -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?; nullptr when it matches,
// else the reason.
static const char* number_error(const char* s, const char* e, bool& is_float) {
  const char* p = s;
  is_float = false;
  if (p < e && *p == '-') ++p;
  if (p == e || *p < '0' || *p > '9') return "invalid number: expected a digit";
  if (*p == '0') {
    ++p;
  } else {
    while (p < e && *p >= '0' && *p <= '9') ++p;
  }
  if (p < e && *p == '.') {
    is_float = true;
    ++p;
    if (p == e || *p < '0' || *p > '9') return "invalid number: expected a digit after '.'";
    while (p < e && *p >= '0' && *p <= '9') ++p;
  }
  if (p < e && (*p == 'e' || *p == 'E')) {
    is_float = true;
    ++p;
    if (p < e && (*p == '+' || *p == '-')) ++p;
    if (p == e || *p < '0' || *p > '9') return "invalid number: expected a digit in the exponent";
    while (p < e && *p >= '0' && *p <= '9') ++p;
  }
  return p == e ? nullptr : "invalid number";
}

std::string_view JsonReader::scan_number(bool& is_float) {
  // Fast path: the whole token lies in the buffer.
  const char* p = pos_;
  while (p < end_) {
    const char c = *p;
    if ((c >= '0' && c <= '9') || c == '-' || c == '.' || c == 'e' || c == 'E' || c == '+') {
      ++p;
    } else {
      break;
    }
  }
  if (p == end_ || static_cast<std::size_t>(p - pos_) > limits_.max_number_chars) return scan_number_slow(is_float);
  if (const char* err = number_error(pos_, p, is_float)) fail(err);
  std::string_view text(pos_, static_cast<std::size_t>(p - pos_));
  pos_ = p;
  return text;
}

std::string_view JsonReader::scan_number_slow(bool& is_float) {
  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, across buffer refills.
  std::size_t n = 0;
  is_float = false;
  const std::size_t max = limits_.max_number_chars;
  auto take = [&]() {
    if (n >= max) fail("number longer than " + std::to_string(max) + " characters");
    num_[n++] = static_cast<char>(*pos_++);
  };
  auto digits = [&]() {
    int count = 0;
    for (int c = peek_char(); c >= '0' && c <= '9'; c = peek_char()) {
      take();
      ++count;
    }
    return count;
  };
  if (peek_char() == '-') take();
  int c = peek_char();
  if (c == '0') {
    take();
  } else if (c >= '1' && c <= '9') {
    digits();
  } else {
    fail("invalid number: expected a digit, found " + describe_char(c));
  }
  if (peek_char() == '.') {
    is_float = true;
    take();
    if (digits() == 0) fail("invalid number: expected a digit after '.'");
  }
  c = peek_char();
  if (c == 'e' || c == 'E') {
    is_float = true;
    take();
    c = peek_char();
    if (c == '+' || c == '-') take();
    if (digits() == 0) fail("invalid number: expected a digit in the exponent");
  }
  return std::string_view(num_, n);
}

JsonReader::Number JsonReader::read_number() {
  Kind k = peek();
  if (k != Kind::number) fail(std::string("expected a number, found ") + kind_name(k));
  bool is_float = false;
  std::string_view text = scan_number(is_float);
  Number r;
  const char* s = text.data();
  const char* e = s + text.size();
  const bool neg = *s == '-';
  if (neg) ++s;
  if (!is_float) {
    if (e - s <= 18) {
      int64_t v = 0;
      for (const char* p = s; p < e; ++p) v = v * 10 + (*p - '0');
      r.integral = true;
      r.integer = neg ? -v : v;
      r.value = static_cast<double>(r.integer);
      return r;
    }
    int64_t v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc() && p == text.data() + text.size()) {
      r.integral = true;
      r.integer = v;
      r.value = static_cast<double>(v);
      return r;
    }
  } else {
    // digits.digits whose digits as an integer are below 2^53: mantissa / 10^k is then correctly
    // rounded (both operands are exact doubles and IEEE division rounds once), as from_chars is.
    static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    if (e - s <= 20) {
      uint64_t mant = 0;
      int frac = -1, digits = 0;
      const char* p = s;
      for (; p < e; ++p) {
        if (*p == '.') {
          frac = 0;
          continue;
        }
        if (*p < '0' || *p > '9') break;
        mant = mant * 10 + static_cast<uint64_t>(*p - '0');
        ++digits;
        if (frac >= 0) ++frac;
      }
      if (p == e && frac >= 0 && digits <= 19 && mant <= (uint64_t(1) << 53)) {
        double v = static_cast<double>(mant) / kPow10[frac];
        r.value = neg ? -v : v;
        return r;
      }
    }
  }
  double d = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (ec == std::errc::result_out_of_range) {
    // Underflow (1e-400) reads as zero, like other JSON readers; overflow is refused.
    auto x = text.find_first_of("eE");
    if (x != std::string_view::npos && x + 1 < text.size() && text[x + 1] == '-') {
      r.value = 0;
      return r;
    }
    fail("number out of range: " + std::string(text.substr(0, 40)));
  }
  if (ec != std::errc() || !std::isfinite(d)) fail("number out of range: " + std::string(text.substr(0, 40)));
  r.value = d;
  return r;
}

void JsonReader::check_range(std::string_view text) {
  double d = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (ec == std::errc::result_out_of_range) {
    auto x = text.find_first_of("eE");
    if (x != std::string_view::npos && x + 1 < text.size() && text[x + 1] == '-') return;  // underflow: zero
  }
  if (ec != std::errc() || !std::isfinite(d)) fail("number out of range: " + std::string(text.substr(0, 40)));
}

void JsonReader::expect_literal(const char* word) {
  for (const char* w = word; *w; ++w) {
    int c = peek_char();
    if (c != static_cast<unsigned char>(*w)) fail(std::string("invalid literal (expected '") + word + "')");
    ++pos_;
  }
}

bool JsonReader::read_bool() {
  Kind k = peek();
  if (k != Kind::boolean) fail(std::string("expected true or false, found ") + kind_name(k));
  if (*pos_ == 't') {
    expect_literal("true");
    return true;
  }
  expect_literal("false");
  return false;
}

void JsonReader::read_null() {
  Kind k = peek();
  if (k != Kind::null) fail(std::string("expected null, found ") + kind_name(k));
  expect_literal("null");
}

void JsonReader::skip_value() {
  const std::size_t base = stack_.size();
  for (;;) {
    // One value starts here.
    bool closed = false;
    switch (peek()) {
      case Kind::object:
        ++pos_;
        push(kObjFirst);
        closed = !advance_member(false);
        break;
      case Kind::array:
        ++pos_;
        push(kArrFirst);
        closed = !advance_element();
        break;
      case Kind::string:
        ++pos_;
        parse_string(nullptr, 0);
        closed = true;
        break;
      case Kind::number: {
        bool is_float;
        std::string_view text = scan_number(is_float);
        // Only an exponent or very many digits can leave the range of a double (1e400).
        if (text.size() > 300 || (is_float && text.find_first_of("eE") != std::string_view::npos)) check_range(text);
        closed = true;
        break;
      }
      case Kind::boolean:
        expect_literal(*pos_ == 't' ? "true" : "false");
        closed = true;
        break;
      case Kind::null:
        expect_literal("null");
        closed = true;
        break;
    }
    if (!closed) continue;  // an open container whose first value comes next
    // A value ended: move on in the enclosing containers we opened.
    bool more = false;
    while (stack_.size() > base) {
      uint8_t top = stack_.back();
      more = (top == kObjFirst || top == kObj) ? advance_member(false) : advance_element();
      if (more) break;
    }
    if (stack_.size() == base) return;
  }
}

void JsonReader::finish() {
  skip_ws();
  int c = peek_char();
  if (c >= 0) fail("unexpected " + describe_char(c) + " after the end of the JSON document");
}

}  // namespace perfloom::storage
