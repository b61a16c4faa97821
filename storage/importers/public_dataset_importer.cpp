#include "storage/importers/public_dataset_importer.h"

#include <set>
#include <sstream>

#include "model/file_reader.h"
#include "storage/database.h"
#include "storage/folder_files.h"
#include "storage/importers/input_file.h"
#include "storage/public_datasets.h"

namespace perfloom::storage {

namespace {

enum class Table { aic_gemm, aic_attention, neusight, vidur, unknown };

// The same header rules as storage/public_datasets.cpp uses for a folder.
Table table_of(std::string_view head) {
  if (head.substr(0, 3) == "\xEF\xBB\xBF") head.remove_prefix(3);
  std::string_view line = head.substr(0, head.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::set<std::string, std::less<>> cols;
  std::size_t at = 0;
  while (at <= line.size()) {
    std::size_t end = line.find(',', at);
    if (end == std::string_view::npos) end = line.size();
    std::string_view c = line.substr(at, end - at);
    if (c.size() >= 2 && c.front() == '"' && c.back() == '"') c = c.substr(1, c.size() - 2);
    cols.emplace(c);
    at = end + 1;
  }
  auto has = [&](std::string_view c) { return cols.count(c) > 0; };
  if (has("gemm_dtype") && has("m") && has("n") && has("k") && has("latency")) return Table::aic_gemm;
  if (has("batch_size") && has("isl") && has("num_heads") && has("step") && has("latency")) return Table::aic_attention;
  if (has("OPName") && has("Latency") && has("Device")) return Table::neusight;
  if (has("num_tokens") && has("num_tensor_parallel_workers") && has("time_stats.mlp_up_proj.median"))
    return Table::vidur;
  return Table::unknown;
}

// The MANIFEST.tsv rows that describe `path` (a file under a public-data root, or the root): the
// nearest MANIFEST.tsv in the file's folder or up to 11 folders above it, as the path was named
// (symbolic links in it are not resolved). The file must be a regular file, not a link (it was
// not named, so it is not followed), of at most file_limits::dataset_manifest's size; one that is
// not is not read, and `warning` says why.
std::string provenance_of(const std::filesystem::path& path, std::string& warning) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec).lexically_normal();
  if (ec) abs = path;
  if (!abs.has_filename()) abs = abs.parent_path();  // "dir/" names the folder
  std::filesystem::path dir = std::filesystem::is_directory(abs, ec) ? abs : abs.parent_path();
  for (int up = 0; up < 12 && !dir.empty(); ++up) {
    std::filesystem::path manifest = dir / "MANIFEST.tsv";
    if (std::filesystem::exists(std::filesystem::symlink_status(manifest, ec))) {
      std::string text;
      try {
        text = read_file_guarded(manifest, file_limits::dataset_manifest);
      } catch (const FileReadError& e) {
        warning = std::string(e.what()) + "; the source's provenance does not quote it";
        return "public dataset file " + path.filename().string() + " (" + manifest.string() +
               " not read: " + e.reason() + ")";
      }
      if (std::filesystem::is_directory(abs, ec)) return "MANIFEST.tsv:\n" + text;
      std::string rel = abs.lexically_relative(dir).generic_string();
      std::istringstream lines(text);
      std::string line, out, header;
      std::getline(lines, header);
      while (std::getline(lines, line)) {
        // dir <TAB> path_under_dir ...: the file's path relative to the root is dir/path_under_dir.
        auto t1 = line.find('\t');
        auto t2 = t1 == std::string::npos ? std::string::npos : line.find('\t', t1 + 1);
        if (t2 == std::string::npos) continue;
        if (line.substr(0, t1) + "/" + line.substr(t1 + 1, t2 - t1 - 1) == rel) out += line + "\n";
      }
      return out.empty() ? "public dataset file " + rel
                         : std::string("MANIFEST.tsv:\n").append(header).append("\n").append(out);
    }
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  return "public dataset file " + path.filename().string() + " (no MANIFEST.tsv found above it)";
}

ImportError wrap(const std::string& label, const std::exception& e) {
  std::string msg = e.what();
  for (const std::string& prefix : {label + ": ", "cannot read " + label + ": ", "cannot open " + label + ": "})
    if (msg.rfind(prefix, 0) == 0) {
      msg.erase(0, prefix.size());
      break;
    }
  return ImportError(label, "", msg);
}

}  // namespace

int PublicDatasetImporter::sniff(const SniffInput& in) const {
  std::error_code ec;
  if (in.is_directory) {
    if (std::filesystem::exists(in.path / "MANIFEST.tsv", ec)) return 90;
    for (const char* d : {"aiconfigurator", "NeuSight", "vidur"})
      if (std::filesystem::is_directory(in.path / d, ec)) return 80;
    return 0;
  }
  return table_of(in.head) != Table::unknown ? 85 : 0;
}

void PublicDatasetImporter::import(const std::filesystem::path& path, ImportSink& sink,
                                   const ImportControl& control) const {
  const std::string label = path.string();
  if (!control.gpus) throw ImportError(label, "", "no GPU database");
  int64_t seq = 0;
  std::set<std::string> gpus;
  MeasuredKernelSink each = [&](MeasuredKernel&& m) {
    ImportedKernel k = dataset_kernel(m.kernel);
    k.seq = seq++;
    ImportedMeasurement meas;
    meas.latency_us = m.latency_us;
    meas.method = m.dataset;
    meas.gpu_id = m.gpu_id;
    meas.note = m.note;
    k.measurement = std::move(meas);
    if (gpus.size() < 2) gpus.insert(m.gpu_id);
    sink.kernel(std::move(k));
    if ((seq & 4095) == 0) {
      control.check_cancel(label);
      if (control.progress) control.progress(ImportProgress{0, 0, static_cast<uint64_t>(seq), "reading datasets"});
    }
  };
  std::vector<DatasetLoadReport> reports;
  std::error_code ec;
  try {
    if (std::filesystem::is_directory(path, ec)) {
      visit_public_datasets(path, *control.gpus, each, &reports);
    } else {
      DatasetLoadReport rep;
      switch (table_of(InputFile::head(path, 64 * 1024))) {
        case Table::aic_gemm:
          visit_aiconfigurator_gemm(path, *control.gpus, each, &rep);
          break;
        case Table::aic_attention:
          visit_aiconfigurator_attention(path, *control.gpus, each, &rep);
          break;
        case Table::neusight:
          visit_neusight(path, *control.gpus, each, &rep);
          break;
        case Table::vidur:
          visit_vidur(path, *control.gpus, each, &rep);
          break;
        case Table::unknown:
          throw ImportError(label, "line 1", "the header is not one of a known public dataset");
      }
      reports.push_back(std::move(rep));
    }
  } catch (const ImportError&) {
    throw;
  } catch (const DatabaseError&) {
    throw;  // the database, not the file, failed
  } catch (const std::exception& e) {
    throw wrap(label, e);
  }
  std::string manifest_warning;
  sink.provenance(provenance_of(path, manifest_warning));
  if (!manifest_warning.empty()) sink.warning(manifest_warning);
  if (std::filesystem::is_directory(path, ec))
    if (const std::string w = links_out_warning(folder_files(path, true).links_out); !w.empty()) sink.warning(w);
  if (gpus.size() == 1 && !gpus.begin()->empty()) sink.gpu(*gpus.begin(), *gpus.begin());
  std::size_t rows = 0, skipped = 0;
  std::map<std::string, std::size_t> why;
  for (const auto& r : reports) {
    rows += r.rows;
    skipped += r.skipped;
    for (const auto& [reason, n] : r.skip_counts) why[reason] += n;
  }
  if (skipped) {
    std::vector<std::pair<std::size_t, std::string>> top;
    top.reserve(why.size());
    for (const auto& [reason, n] : why) top.emplace_back(n, reason);
    std::sort(top.rbegin(), top.rend());
    std::string text;
    for (std::size_t i = 0; i < top.size() && i < 3; ++i)
      text += (i ? "; " : "") + std::to_string(top[i].first) + " " + top[i].second;
    sink.warning(std::to_string(skipped) + " of " + std::to_string(rows) + " rows skipped (" + text + ")");
  }
  if (seq == 0) throw ImportError(label, "", "no usable rows in the dataset (" + std::to_string(rows) + " rows read)");
}

}  // namespace perfloom::storage
