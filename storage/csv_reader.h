#pragma once
// A streaming RFC 4180 CSV reader: quoted fields with embedded commas, doubled quotes and line
// breaks, CRLF or LF line ends, plain or gzip-compressed files (zlib reads both transparently).
// It hands out one record at a time, so multi-hundred-megabyte files never sit in memory, and it
// knows the line number each record started on so importers can name the row they refuse.
// Hostile input cannot make it hold much: a field, a record (line) and the number of fields in a
// record are capped (CsvLimits), so a multi-GB field or a quote that is never closed is refused
// with the file, the line and the reason instead of exhausting memory.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace perfloom::storage {

// Where the bytes come from. Returns the number of bytes written to `buf` (at most `cap`);
// 0 means the end of the input. Throws std::runtime_error on a read error.
using ByteSource = std::function<std::size_t(char* buf, std::size_t cap)>;

// What one record may hold. The defaults are far above any real trace, dataset or kernel list
// (the longest demangled kernel names are a few KiB; ncu's widest pages a few thousand columns).
struct CsvLimits {
  std::size_t max_field_bytes = std::size_t(1) << 20;    // one field, after unquoting
  std::size_t max_record_bytes = std::size_t(16) << 20;  // one record: its fields and separators
  std::size_t max_fields = std::size_t(1) << 16;         // fields in one record
};

class CsvReader {
 public:
  // Reads a file, plain or gzip (decided by the gzip magic bytes, not the extension).
  // Throws std::runtime_error naming the file when it cannot be opened.
  static CsvReader open_file(const std::filesystem::path& path);
  // Reads CSV text held in memory (tests, small embedded tables).
  static CsvReader from_string(std::string text, std::string label = "<string>");
  // Reads from any source; `label` names it in messages.
  CsvReader(ByteSource source, std::string label);

  CsvReader(CsvReader&&) noexcept;
  CsvReader& operator=(CsvReader&&) noexcept;
  ~CsvReader();

  // Replaces the default limits (tests, callers that know their input is small).
  void set_limits(const CsvLimits& limits) { limits_ = limits; }
  const CsvLimits& limits() const { return limits_; }
  // The input starts at this 1-based line of the file (the caller read lines before it), so that
  // line numbers in messages and line() are those of the file.
  void set_first_line(std::size_t line) { line_ = line; }

  // Reads the first record as the header. Returns false if the input is empty.
  bool read_header();
  const std::vector<std::string>& header() const { return header_; }
  // Index of a header column, exact match; nullopt when the file has no such column.
  std::optional<std::size_t> column(std::string_view name) const;
  // Like column(), but throws std::runtime_error naming the file and the missing column.
  std::size_t require_column(std::string_view name) const;

  // Reads the next record into `fields`. Returns false at the end of the input. A record that
  // ends inside an open quote, or breaks a limit, throws std::runtime_error that reads
  // "FILE: line N: REASON" (e.g. "field longer than 1048576 bytes").
  bool next(std::vector<std::string>& fields);

  // The 1-based line on which the last record returned by next()/read_header() started.
  std::size_t line() const { return record_line_; }
  // Records returned by next() so far (the header not counted).
  std::size_t records() const { return records_; }
  const std::string& label() const { return label_; }

 private:
  bool fill();
  [[noreturn]] void refuse(std::size_t line, const std::string& reason) const;
  int peek();
  int get();

  ByteSource source_;
  std::string label_;
  CsvLimits limits_;
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
  bool at_start_ = true;  // nothing read yet: a UTF-8 byte-order mark there is skipped
  std::size_t line_ = 1, record_line_ = 0, records_ = 0;
  std::vector<std::string> header_;
  std::unordered_map<std::string, std::size_t> index_;
  std::shared_ptr<void> owner_;  // keeps a gzFile or the in-memory text alive
};

// Strict number parsing for importers: the whole field must be a number (surrounding blanks are
// allowed). Returns nullopt for empty, partial ("12abc"), non-finite or out-of-range text.
std::optional<double> parse_double(std::string_view text);
std::optional<long long> parse_int(std::string_view text);
// True/False as pandas writes them, plus 1/0, yes/no; case-insensitive.
std::optional<bool> parse_bool(std::string_view text);

}  // namespace perfloom::storage
