#pragma once
// The rows of a CSV file the CLI wrote, for the end-to-end tests.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

// A minimal RFC 4180 reader: enough for the quoted kernel names of the output.
inline std::vector<std::vector<std::string>> read_csv(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string t = ss.str();
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (quoted) {
      if (c == '"' && i + 1 < t.size() && t[i + 1] == '"')
        field += '"', ++i;
      else if (c == '"')
        quoted = false;
      else
        field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field), field.clear();
    } else if (c == '\n') {
      rows.back().push_back(field), field.clear();
      rows.emplace_back();
    } else if (c != '\r') {
      field += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}
