#include "storage/importers/registry.h"

#include <algorithm>

#include "storage/importers/collector_csv_importer.h"
#include "storage/importers/input_file.h"
#include "storage/importers/ncu_csv_importer.h"
#include "storage/importers/nsys_sqlite_importer.h"
#include "storage/importers/public_dataset_importer.h"
#include "storage/importers/torch_trace_importer.h"

namespace perfloom::storage {

const ImporterRegistry& ImporterRegistry::builtin() {
  static const ImporterRegistry registry = [] {
    ImporterRegistry r;
    r.add(std::make_unique<TorchTraceImporter>());
    r.add(std::make_unique<NsysSqliteImporter>());
    r.add(std::make_unique<NcuCsvImporter>());
    r.add(std::make_unique<CollectorCsvImporter>());
    r.add(std::make_unique<PublicDatasetImporter>());
    return r;
  }();
  return registry;
}

void ImporterRegistry::add(std::unique_ptr<Importer> importer) { importers_.push_back(std::move(importer)); }

const Importer* ImporterRegistry::find(std::string_view format) const {
  for (const auto& i : importers_)
    if (i->format() == format) return i.get();
  return nullptr;
}

SniffInput ImporterRegistry::sniff_input(const std::filesystem::path& path) {
  SniffInput in;
  in.path = path;
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) throw ImportError(path.string(), "", "no such file or folder");
  if (std::filesystem::is_directory(st)) {
    in.is_directory = true;
    return in;
  }
  if (!std::filesystem::is_regular_file(st)) throw ImportError(path.string(), "", "not a regular file");
  in.file_bytes = std::filesystem::file_size(path, ec);
  in.head = InputFile::head(path, SniffInput::kSniffBytes, &in.gzip);
  return in;
}

std::string ImporterRegistry::describe_content(const SniffInput& in) {
  if (in.is_directory)
    return "a folder with no collector CSV (\"# format=perfloom-collector/1\") directly in it, no MANIFEST.tsv and no "
           "public dataset subfolders";
  if (in.file_bytes == 0) return "an empty file";
  std::string_view h = in.head;
  if (h.empty()) return in.gzip ? "gzip data that does not inflate" : "unreadable content";
  std::size_t binary = 0;
  std::size_t n = std::min<std::size_t>(h.size(), 4096);
  for (std::size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(h[i]);
    if (c == 0 || (c < 0x20 && c != '\n' && c != '\r' && c != '\t')) ++binary;
  }
  if (h.substr(0, 16) == std::string_view("SQLite format 3\0", 16)) return "an SQLite database of unknown tables";
  if (binary * 20 > n) return std::string(in.gzip ? "gzip-compressed " : "") + "binary data";
  std::string_view s = h;
  while (!s.empty() && (s[0] == ' ' || s[0] == '\n' || s[0] == '\r' || s[0] == '\t')) s.remove_prefix(1);
  if (!s.empty() && s[0] == '{') return "JSON without traceEvents (not a Chrome trace)";
  if (!s.empty() && s[0] == '[') return "a JSON array that is not a list of trace events";
  std::string first(s.substr(0, std::min<std::size_t>(s.find('\n'), 60)));
  for (char& c : first)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return "text starting with \"" + first + "\"";
}

const Importer* ImporterRegistry::detect(const SniffInput& in) const {
  const Importer* best = nullptr;
  int best_score = 0;
  for (const auto& i : importers_) {
    int s = i->sniff(in);
    if (s > best_score) best_score = s, best = i.get();
  }
  return best;
}

const Importer& ImporterRegistry::detect(const std::filesystem::path& path) const {
  SniffInput in = sniff_input(path);
  if (const Importer* i = detect(in)) return *i;
  std::string known;
  for (const auto& i : importers_) known += (known.empty() ? "" : ", ") + std::string(i->format());
  throw ImportError(path.string(), "",
                    "not a format perfloom can import: " + describe_content(in) + " (known: " + known + ")");
}

}  // namespace perfloom::storage
