#include "storage/importers/collector_csv_importer.h"

#include <nlohmann/json.hpp>

#include "storage/collector_csv.h"
#include "storage/database.h"
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

int CollectorCsvImporter::sniff(const SniffInput& in) const {
  if (in.is_directory) return 0;
  return sniff_collector_csv(in.head) ? 100 : 0;
}

void CollectorCsvImporter::import(const std::filesystem::path& path, ImportSink& sink, const ImportControl& control) const {
  const std::string label = path.string();
  if (!control.gpus) throw ImportError(label, "", "no GPU database");
  int64_t seq = 0;
  std::string gpu_id;
  DatasetLoadReport report;
  CollectorFile file;
  try {
    file = visit_collector_csv(
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
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [k, v] : file.environment) env[k] = v;
  sink.provenance(env.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  std::string gpu_name = file.environment.count("gpu_name") ? file.environment.at("gpu_name") : gpu_id;
  if (gpu_id.empty() && !gpu_name.empty()) gpu_id = public_dataset_gpu_id(gpu_name, *control.gpus);
  sink.gpu(gpu_id, gpu_name);
  if (report.skipped) {
    std::string why;
    for (const auto& r : report.skip_reasons) why += (why.empty() ? "" : "; ") + r;
    sink.warning(std::to_string(report.skipped) + " of " + std::to_string(report.rows) + " rows skipped (" + why + ")");
  }
  if (seq == 0) throw ImportError(label, "", "no usable rows (" + std::to_string(report.rows) + " rows read)");
}

}  // namespace perfloom::storage
