#include "storage/importers/collector_csv_importer.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "storage/collector_csv.h"
#include "storage/database.h"
#include "storage/folder_files.h"
#include "storage/importers/input_file.h"
#include "storage/importers/registry.h"
#include "storage/public_datasets.h"

namespace perfloom::storage {

namespace {

std::string note_value(const std::string& note, std::string_view key) {
  std::size_t at = 0;
  while (at < note.size()) {
    std::size_t end = note.find(';', at);
    if (end == std::string::npos) end = note.size();
    std::string_view kv(note.data() + at, end - at);
    if (kv.substr(0, key.size()) == key && kv.size() > key.size() && kv[key.size()] == '=')
      return std::string(kv.substr(key.size() + 1));
    at = end + 1;
  }
  return {};
}

// The reader's messages start with the file name; ImportError adds it again.
ImportError wrap(const std::string& label, const std::exception& e) {
  std::string msg = e.what();
  if (msg.rfind(label + ": ", 0) == 0) msg.erase(0, label.size() + 2);
  return ImportError(label, "", msg);
}

}  // namespace

std::vector<std::filesystem::path> CollectorCsvImporter::folder_files(const std::filesystem::path& dir,
                                                                      std::vector<std::string>* others,
                                                                      std::vector<std::string>* links_out) {
  FolderFiles listed;
  try {
    listed = storage::folder_files(dir, false);
  } catch (const std::filesystem::filesystem_error& e) {
    throw ImportError(dir.string(), "", "cannot list the folder: " + e.code().message());
  }
  std::vector<std::filesystem::path> files;
  for (const auto& f : listed.files) {
    // By content (plain or gzip), never by the extension.
    if (sniff_collector_csv(InputFile::head(f, 4096)))  // 4 KiB: enough to inflate a gzip's first line
      files.push_back(f);
    else if (others)
      others->push_back(f.filename().string());
  }
  if (links_out) *links_out = std::move(listed.links_out);
  return files;
}

int CollectorCsvImporter::sniff(const SniffInput& in) const {
  if (in.is_directory) {
    try {
      return folder_files(in.path).empty() ? 0 : 70;  // below the public datasets' folder (80, 90)
    } catch (const ImportError&) {
      return 0;
    }
  }
  return sniff_collector_csv(in.head) ? 100 : 0;
}

std::vector<std::filesystem::path> CollectorCsvImporter::content_files(const std::filesystem::path& path) const {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return {};
  return folder_files(path);
}

namespace {

// One collector CSV into `sink`, its kernels numbered from `seq` on. Returns the file's
// environment; `gpu_id` gets the GPU of its first kept row.
CollectorFile import_one(const std::filesystem::path& path, ImportSink& sink, const ImportControl& control,
                         int64_t& seq, std::string& gpu_id, DatasetLoadReport& report) {
  const std::string label = path.string();
  try {
    return visit_collector_csv(
        path, *control.gpus,
        [&](MeasuredKernel&& m) {
          ImportedKernel k = dataset_kernel(m.kernel);
          k.seq = seq++;
          ImportedMeasurement meas;
          meas.latency_us = m.latency_us;
          std::string method = note_value(m.note, "method");
          meas.method = method.empty() ? "collector" : "collector/" + method;
          meas.gpu_id = m.gpu_id;
          meas.note = m.note;
          k.measurement = std::move(meas);
          if (gpu_id.empty()) gpu_id = m.gpu_id;
          sink.kernel(std::move(k));
          if ((seq & 1023) == 0) control.check_cancel(label);
        },
        &report);
  } catch (const ImportError&) {
    throw;
  } catch (const DatabaseError&) {
    throw;  // the database, not the file, failed
  } catch (const std::exception& e) {
    throw wrap(label, e);
  }
}

std::string skipped_rows_text(const DatasetLoadReport& report) {
  std::string why;
  for (const auto& r : report.skip_reasons) why += (why.empty() ? "" : "; ") + r;
  return std::to_string(report.skipped) + " of " + std::to_string(report.rows) + " rows skipped (" + why + ")";
}

nlohmann::json environment_json(const CollectorFile& file) {
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [k, v] : file.environment) env[k] = v;
  return env;
}

}  // namespace

void CollectorCsvImporter::import(const std::filesystem::path& path, ImportSink& sink,
                                  const ImportControl& control) const {
  const std::string label = path.string();
  if (!control.gpus) throw ImportError(label, "", "no GPU database");
  int64_t seq = 0;
  std::string gpu_id;
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    DatasetLoadReport report;
    CollectorFile file = import_one(path, sink, control, seq, gpu_id, report);
    sink.provenance(environment_json(file).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    std::string gpu_name = file.environment.count("gpu_name") ? file.environment.at("gpu_name") : gpu_id;
    if (gpu_id.empty() && !gpu_name.empty()) gpu_id = public_dataset_gpu_id(gpu_name, *control.gpus);
    sink.gpu(gpu_id, gpu_name);
    if (report.skipped) sink.warning(skipped_rows_text(report));
    if (seq == 0) throw ImportError(label, "", "no usable rows (" + std::to_string(report.rows) + " rows read)");
    return;
  }

  // A folder: every collector CSV in it, one source. A file that fails fails the whole folder
  // (the store then writes nothing), with the file's own name and line in the message.
  std::vector<std::string> others, links_out;
  const auto files = folder_files(path, &others, &links_out);
  if (!links_out.empty()) sink.warning(links_out_warning(links_out));
  if (files.empty())
    throw ImportError(label, "",
                      "no collector CSV in the folder (files starting with \"# format=perfloom-collector/1\"" +
                          std::string(others.empty() && links_out.empty() ? "; the folder is empty" : "") + ")" +
                          (links_out.empty() ? "" : "; " + links_out_warning(links_out)));
  nlohmann::json prov{{"folder", label}, {"files", nlohmann::json::object()}};
  std::set<std::string> gpu_names, gpu_ids;
  std::size_t rows = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    control.check_cancel(label);
    if (control.progress)
      control.progress(ImportProgress{0, 0, static_cast<uint64_t>(seq),
                                      "reading " + files[i].filename().string() + " (" + std::to_string(i + 1) +
                                          " of " + std::to_string(files.size()) + ")"});
    DatasetLoadReport report;
    std::string file_gpu;
    CollectorFile file = import_one(files[i], sink, control, seq, file_gpu, report);
    const std::string name = files[i].filename().string();
    prov["files"][name] = environment_json(file);
    rows += report.rows;
    if (file.environment.count("gpu_name")) gpu_names.insert(file.environment.at("gpu_name"));
    if (!file_gpu.empty()) gpu_ids.insert(file_gpu);
    if (report.skipped) sink.warning(name + ": " + skipped_rows_text(report));
  }
  sink.provenance(prov.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (gpu_ids.size() == 1 && gpu_names.size() <= 1) {
    sink.gpu(*gpu_ids.begin(), gpu_names.empty() ? *gpu_ids.begin() : *gpu_names.begin());
  } else if (gpu_names.size() == 1) {
    sink.gpu(public_dataset_gpu_id(*gpu_names.begin(), *control.gpus), *gpu_names.begin());
  } else if (gpu_names.size() > 1) {
    std::string names;
    for (const auto& n : gpu_names) names += (names.empty() ? "" : ", ") + n;
    sink.warning("the files were measured on " + std::to_string(gpu_names.size()) + " GPUs (" + names +
                 "); the source has no single GPU");
  }
  if (!others.empty()) {
    // Files another importer takes (a trace beside the sweeps) come first and are all named, with
    // their format: they are what "import them on their own" is about. Then the rest, up to 8 names.
    std::vector<std::string> importable, rest;
    for (const auto& name : others) {
      const Importer* other = nullptr;
      try {
        other = ImporterRegistry::builtin().detect(ImporterRegistry::sniff_input(path / name));
      } catch (const ImportError&) {}
      if (other && other->format() != format())
        importable.push_back(name + " [" + std::string(other->format()) + "]");
      else
        rest.push_back(name);
    }
    std::string list;
    std::size_t named = 0;
    for (const auto& n : importable) list += (named++ ? ", " : "") + n;
    for (std::size_t i = 0; i < rest.size() && named < std::max<std::size_t>(8, importable.size()); ++i)
      list += (named++ ? ", " : "") + rest[i];
    if (named < others.size()) list += ", ...";
    sink.warning(others.size() == 1
                     ? "1 file is not a collector CSV and was not read (" + list + "); import it on its own"
                     : std::to_string(others.size()) + " files are not collector CSVs and were not read (" + list +
                           "); import them on their own");
  }
  if (seq == 0)
    throw ImportError(label, "",
                      "no usable rows in " + std::to_string(files.size()) + " collector CSVs (" + std::to_string(rows) +
                          " rows read)");
}

}  // namespace perfloom::storage
