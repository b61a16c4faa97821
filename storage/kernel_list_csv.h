#pragma once
// The kernel-list CSV of CONTRACT.md (input of `perfloom predict --kernels`): a header row, `op`
// and `dtype` in every row, the shape columns the op needs; other columns pass through unchanged.
// Optional extension columns: tile_m, tile_n, tile_k, split_k (a known tile), name (kernel name).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "model/kernel.h"

namespace perfloom::storage {

struct KernelListRow {
  std::size_t line = 0;              // line in the file, for messages
  std::vector<std::string> fields;   // as read, in header order
  std::optional<KernelDesc> kernel;  // empty when the row is invalid
  std::string error;                 // why the row cannot be predicted
};

struct KernelList {
  std::vector<std::string> header;
  std::vector<KernelListRow> rows;
};

// Throws std::runtime_error naming the file (and line) when the file itself is unusable: missing,
// empty, not CSV, or without an `op` or `dtype` column. A bad row is kept with its error.
KernelList read_kernel_list(const std::filesystem::path& path);
KernelList parse_kernel_list(std::string text, const std::string& label);

// RFC 4180 quoting of one field.
std::string csv_field(const std::string& s);
std::string csv_line(const std::vector<std::string>& fields);

}  // namespace perfloom::storage
