#pragma once
// A streaming RFC 4180 CSV reader: quoted fields with embedded commas, doubled quotes and line
// breaks, CRLF or LF line ends, plain or gzip-compressed files (zlib reads both transparently).
// It hands out one record at a time, so multi-hundred-megabyte files never sit in memory, and it
// knows the line number each record started on so importers can name the row they refuse.
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

  // Reads the first record as the header. Returns false if the input is empty.
  bool read_header();
  const std::vector<std::string>& header() const { return header_; }
  // Index of a header column, exact match; nullopt when the file has no such column.
  std::optional<std::size_t> column(std::string_view name) const;
  // Like column(), but throws std::runtime_error naming the file and the missing column.
  std::size_t require_column(std::string_view name) const;

  // Reads the next record into `fields`. Returns false at the end of the input. A record that
  // ends inside an open quote throws std::runtime_error naming the file and line.
  bool next(std::vector<std::string>& fields);

  // The 1-based line on which the last record returned by next()/read_header() started.
  std::size_t line() const { return record_line_; }
  // Records returned by next() so far (the header not counted).
  std::size_t records() const { return records_; }
  const std::string& label() const { return label_; }

 private:
  bool fill();
  int peek();
  int get();

  ByteSource source_;
  std::string label_;
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
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
