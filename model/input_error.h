#pragma once
// An input perfloom refuses: a GPU spec, a calibration, an LLM config, an imported trace. The error
// names the file, the place in it and the reason, so that a person can fix the file, and keeps the
// three apart for callers that show them separately. Each input kind derives its own class, so that
// a caller catches exactly the inputs it reads.
#include <stdexcept>
#include <string>
#include <utility>

namespace perfloom {

// A file name as a message shows it: control characters written as escapes (\n, \r, \t, \xNN),
// so that a newline in a name cannot split a one-line-per-file report or forge a line of it.
inline std::string printable_name(const std::string& name) {
  std::string out;
  out.reserve(name.size());
  for (unsigned char c : name) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

class InputError : public std::runtime_error {
 public:
  // what(): "FILE: field 'FIELD': REASON", or "FILE: REASON" when `field` is empty; FILE as
  // printable_name shows it (file() keeps it as given).
  InputError(std::string file, std::string field, std::string reason)
      : InputError(std::move(file), std::move(field), std::move(reason), Place::quoted_field) {}

  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  const std::string& reason() const { return reason_; }

 protected:
  // How what() names the place. quoted_field: a key of one of perfloom's own JSON files. as_given:
  // a place that reads plainly on its own (an LLM config's dotted key, an importer's line or row):
  // "FILE: PLACE: REASON".
  enum class Place { quoted_field, as_given };

  InputError(std::string file, std::string field, std::string reason, Place place)
      : std::runtime_error(message(file, field, reason, place)),
        file_(std::move(file)),
        field_(std::move(field)),
        reason_(std::move(reason)) {}

 private:
  static std::string message(const std::string& file, const std::string& field, const std::string& reason,
                             Place place) {
    std::string m = printable_name(file);
    if (!field.empty()) m += place == Place::quoted_field ? ": field '" + field + "'" : ": " + field;
    return m + ": " + reason;
  }

  std::string file_, field_, reason_;
};

}  // namespace perfloom
