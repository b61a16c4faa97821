#include "storage/kernel_list_csv.h"

#include <stdexcept>

#include "model/json_fields.h"
#include "storage/csv_reader.h"

namespace perfloom::storage {

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

KernelList read(CsvReader reader) {
  if (!reader.read_header()) throw std::runtime_error(reader.label() + ": empty file, expected a header row");
  KernelList list;
  list.header = reader.header();
  for (auto& h : list.header) h = trim(h);
  auto col = [&](std::string_view n) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < list.header.size(); ++i)
      if (list.header[i] == n) return i;
    return std::nullopt;
  };
  const auto op_col = col("op"), dtype_col = col("dtype");
  if (!op_col || !dtype_col)
    throw std::runtime_error(reader.label() + ": line 1: the header needs the columns `op` and `dtype` (has: " +
                             csv_line(list.header) + ")");
  std::vector<std::string> fields;
  while (reader.next(fields)) {
    KernelListRow row;
    row.line = reader.line();
    row.fields = fields;
    row.fields.resize(list.header.size());
    auto fail = [&](std::string why) { row.error = std::move(why); };
    const std::string op_text = trim(row.fields[*op_col]), dtype_text = trim(row.fields[*dtype_col]);
    auto op = parse_op(op_text);
    auto dtype = parse_dtype(dtype_text);
    if (fields.size() != list.header.size()) {
      fail("has " + std::to_string(fields.size()) + " fields, the header " + std::to_string(list.header.size()));
    } else if (!op || *op == Op::unknown) {
      fail("unknown op " + quote_excerpt(op_text));
    } else if (!dtype) {
      fail("unknown dtype " + quote_excerpt(dtype_text) + " (fp32 tf32 fp16 bf16 fp8e4m3 fp8e5m2 int8)");
    } else {
      KernelDesc k;
      k.op = *op;
      k.dtype = *dtype;
      for (auto c : shape_columns(k.op)) {
        auto i = col(c);
        if (!i) {
          fail(std::string(op_name(k.op)) + " needs a column " + std::string(c));
          break;
        }
        auto v = parse_int(row.fields[*i]);
        if (!v) {
          fail(std::string(c) + " is not a whole number: " + quote_excerpt(row.fields[*i]));
          break;
        }
        *shape_field(k.shape, c) = *v;
      }
      if (row.error.empty()) {
        auto get = [&](std::string_view n) -> std::optional<long long> {
          auto i = col(n);
          if (!i || trim(row.fields[*i]).empty()) return std::nullopt;
          return parse_int(row.fields[*i]);
        };
        if (auto tm = get("tile_m"), tn = get("tile_n"); tm && tn) {
          TileConfig t;
          t.tile_m = static_cast<int>(*tm);
          t.tile_n = static_cast<int>(*tn);
          t.tile_k = static_cast<int>(get("tile_k").value_or(64));
          t.split_k = static_cast<int>(get("split_k").value_or(1));
          if (t.tile_m > 0 && t.tile_n > 0 && t.tile_k > 0 && t.split_k > 0)
            k.tile = t;
          else
            fail("tile_m, tile_n, tile_k and split_k must be positive");
        }
        if (auto n = col("name")) k.name = row.fields[*n];
        if (auto why = validate_shape(k.op, k.shape)) fail(*why);
        if (row.error.empty()) row.kernel = k;
      }
    }
    list.rows.push_back(std::move(row));
  }
  return list;
}

}  // namespace

KernelList read_kernel_list(const std::filesystem::path& path) {
  return read(CsvReader::open_file(path));  // which refuses a missing file, a pipe or a device by name
}

KernelList parse_kernel_list(std::string text, const std::string& label) {
  return read(CsvReader::from_string(std::move(text), label));
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += csv_field(fields[i]);
  }
  return out;
}

}  // namespace perfloom::storage
