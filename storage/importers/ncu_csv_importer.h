#pragma once
// Nsight Compute CSV (`ncu --csv --page raw`, one row per profiled kernel, one column per metric,
// and a second header row with the units), and also the long form (`--page details` / the default
// `--csv` output: one row per kernel and metric). Per kernel: the name, grid and block, registers,
// shared memory, gpu__time_duration.sum as the measured latency, and the counters that tell pipe
// usage (dram__bytes_read.sum / write, sm__pipe_tensor_op_hmma_cycles_active..., every other
// metric column too), normalised to base units (bytes, nanoseconds) in the measurement's
// counters_json. "==PROF==" lines that ncu mixes into its output are skipped.
#include "storage/importers/importer.h"

namespace perfloom::storage {

class NcuCsvImporter final : public Importer {
 public:
  std::string_view format() const override { return "ncu-csv"; }
  std::string_view description() const override { return "Nsight Compute CSV (ncu --csv --page raw)"; }
  int sniff(const SniffInput& in) const override;
  void import(const std::filesystem::path& path, ImportSink& sink, const ImportControl& control) const override;
  // The same from text in memory (tests, fuzzing).
  static void import_text(std::string text, const std::string& label, ImportSink& sink, const ImportControl& control);
};

// A value in `unit` as the base unit of its kind: nanoseconds for times, bytes for sizes, per
// second rates likewise; other units unchanged. Returns false when `text` is not a number
// ("1,205.00" is: ncu writes thousands separators).
bool ncu_value(std::string_view text, std::string_view unit, double& out);

}  // namespace perfloom::storage
