#include "storage/csv_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <system_error>

#include "model/file_reader.h"
#include "model/input_error.h"

namespace perfloom::storage {

namespace {
constexpr std::size_t kBufferBytes = 1 << 16;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}
}  // namespace

CsvReader CsvReader::open_file(const std::filesystem::path& path) {
  const std::string name = printable_name(path.string());  // for messages; gzopen gets the path
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw std::runtime_error("cannot open " + name + ": no such file");
  // A named pipe would block gzopen, a device would be read for ever: say which it is.
  if (const std::string why = not_a_regular_file(path); !why.empty())
    throw std::runtime_error("cannot open " + name + ": " + why);
  // gzopen reads gzip members and, transparently, plain files: the magic bytes decide.
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) throw std::runtime_error("cannot open " + name + ": " + std::strerror(errno));
  std::shared_ptr<void> owner(static_cast<void*>(gz), [](void* p) { gzclose(static_cast<gzFile>(p)); });
  ByteSource source = [gz, name](char* buf, std::size_t cap) -> std::size_t {
    const unsigned ask = static_cast<unsigned>(std::min<std::size_t>(cap, 1u << 30));
    const int got = gzread(gz, buf, ask);
    if (got < 0) {
      int err = 0;
      const char* msg = gzerror(gz, &err);
      throw std::runtime_error("cannot read " + name + ": " +
                               (err == Z_ERRNO ? std::strerror(errno) : (msg ? msg : "zlib error")));
    }
    return static_cast<std::size_t>(got);
  };
  CsvReader r(std::move(source), name);
  r.owner_ = std::move(owner);
  return r;
}

CsvReader CsvReader::from_string(std::string text, std::string label) {
  auto held = std::make_shared<std::string>(std::move(text));
  auto offset = std::make_shared<std::size_t>(0);
  ByteSource source = [held, offset](char* buf, std::size_t cap) -> std::size_t {
    const std::size_t n = std::min(cap, held->size() - *offset);
    // NOLINTNEXTLINE(bugprone-not-null-terminated-result): a byte buffer, not a string
    std::memcpy(buf, held->data() + *offset, n);
    *offset += n;
    return n;
  };
  CsvReader r(std::move(source), std::move(label));
  r.owner_ = held;
  return r;
}

CsvReader::CsvReader(ByteSource source, std::string label)
    : source_(std::move(source)), label_(std::move(label)), buf_(kBufferBytes) {}

CsvReader::CsvReader(CsvReader&&) noexcept = default;
CsvReader& CsvReader::operator=(CsvReader&&) noexcept = default;
CsvReader::~CsvReader() = default;

bool CsvReader::fill() {
  if (eof_) return false;
  end_ = source_(buf_.data(), buf_.size());
  pos_ = 0;
  if (end_ == 0) {
    eof_ = true;
    return false;
  }
  // A UTF-8 byte-order mark (spreadsheet exports write one) is no content, in every CSV format.
  if (at_start_ && end_ >= 3 && std::memcmp(buf_.data(), "\xEF\xBB\xBF", 3) == 0) pos_ = 3;
  at_start_ = false;
  return pos_ < end_ || fill();
}

int CsvReader::peek() {
  if (pos_ == end_ && !fill()) return EOF;
  return static_cast<unsigned char>(buf_[pos_]);
}

int CsvReader::get() {
  const int c = peek();
  if (c != EOF) ++pos_;
  return c;
}

bool CsvReader::read_header() {
  std::vector<std::string> fields;
  if (!next(fields)) return false;
  records_ = 0;  // the header is not a data record
  if (!fields.empty() && fields[0].rfind("\xEF\xBB\xBF", 0) == 0) fields[0].erase(0, 3);
  header_ = std::move(fields);
  index_.clear();
  for (std::size_t i = 0; i < header_.size(); ++i) index_.emplace(header_[i], i);  // first wins
  return true;
}

std::optional<std::size_t> CsvReader::column(std::string_view name) const {
  auto it = index_.find(std::string(name));
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

std::size_t CsvReader::require_column(std::string_view name) const {
  if (auto c = column(name)) return *c;
  throw std::runtime_error(label_ + ": no column '" + std::string(name) + "' in the header");
}

void CsvReader::refuse(std::size_t line, const std::string& reason) const {
  throw std::runtime_error(label_ + ": line " + std::to_string(line) + ": " + reason);
}

bool CsvReader::next(std::vector<std::string>& fields) {
  // Blank lines between records carry nothing; skip them rather than report one empty field.
  for (int c = peek(); c == '\n' || c == '\r'; c = peek()) {
    get();
    if (c == '\n' || peek() != '\n') ++line_;  // LF, or a lone CR: a line ends (CR LF counts at its LF)
  }
  if (peek() == EOF) return false;

  record_line_ = line_;
  std::size_t n = 0;
  std::size_t record_bytes = 0;  // of the fields finished so far, with their separators
  const std::size_t max_field = limits_.max_field_bytes;
  auto too_long = [&](bool quoted) {
    refuse(record_line_, "field longer than " + std::to_string(max_field) + " bytes (column " + std::to_string(n) +
                             ")" + (quoted ? "; a quote opened there may never be closed" : ""));
  };
  for (;;) {
    if (n == limits_.max_fields) refuse(record_line_, "more than " + std::to_string(limits_.max_fields) + " fields");
    if (n == fields.size()) fields.emplace_back();
    std::string& f = fields[n++];
    f.clear();
    bool quoted = false;
    if (peek() == '"') {
      get();
      quoted = true;
      for (;;) {
        const int c = get();
        if (c == EOF) refuse(record_line_, "a quoted field is not closed before the end of the file");
        if (c == '"') {
          if (peek() == '"') {
            get();
            f.push_back('"');
          } else {
            break;
          }
        } else {
          if (c == '\n') ++line_;
          f.push_back(static_cast<char>(c));
        }
        if (f.size() > max_field) too_long(true);
      }
    }
    // Unquoted text, or what follows a closing quote (kept as is, like Python's csv module).
    for (int c = peek(); c != EOF && c != ',' && c != '\n' && c != '\r'; c = peek()) {
      f.push_back(static_cast<char>(get()));
      if (f.size() > max_field) too_long(quoted);
    }
    record_bytes += f.size() + 1;
    if (record_bytes > limits_.max_record_bytes)
      refuse(record_line_, "line longer than " + std::to_string(limits_.max_record_bytes) + " bytes");
    const int c = get();
    if (c == ',') continue;
    if (c == '\r') {
      if (peek() == '\n') get();
      ++line_;
    } else if (c == '\n') {
      ++line_;
    }
    break;  // end of line or of input
  }
  fields.resize(n);
  ++records_;
  return true;
}

std::optional<double> parse_double(std::string_view text) {
  std::string_view s = trim(text);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<long long> parse_int(std::string_view text) {
  std::string_view s = trim(text);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && p == s.data() + s.size()) return v;
  // pandas writes integer columns that once held a NaN as "4096.0": accept integral values.
  auto d = parse_double(s);
  if (d && std::floor(*d) == *d && std::fabs(*d) < 9.0e15) return static_cast<long long>(*d);
  return std::nullopt;
}

std::optional<bool> parse_bool(std::string_view text) {
  std::string s(trim(text));
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "true" || s == "1" || s == "yes") return true;
  if (s == "false" || s == "0" || s == "no") return false;
  return std::nullopt;
}

}  // namespace perfloom::storage
