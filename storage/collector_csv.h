#pragma once
// Reader of the perfloom collector CSV (tools/collector/FORMAT.md): `# key=value` environment
// lines, one header row, RFC 4180 rows. Each row becomes a MeasuredKernel with the tile the
// library really ran (from the `tile`, `stages`, `splitk` and `cluster` columns).
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "storage/public_datasets.h"

namespace perfloom::storage {

struct CollectorFile {
  std::map<std::string, std::string> environment;  // the `# key=value` lines
};

// True when the first bytes are a collector CSV's first line.
bool sniff_collector_csv(std::string_view first_bytes);

// Streams the rows to `sink`. Throws std::runtime_error naming the file (and line) when the file
// is missing, is not a collector CSV, names an unknown GPU, or lacks a required column; a bad row
// is skipped and counted in `report`.
CollectorFile visit_collector_csv(const std::filesystem::path& path, const GpuDatabase& gpus,
                                  const MeasuredKernelSink& sink, DatasetLoadReport* report = nullptr);

// True when the first bytes are a fused-MoE sweep's first line (`# format=perfloom-moe-sweep/1`,
// tools/moe/README.md).
bool sniff_moe_sweep_csv(std::string_view first_bytes);

// Streams one MeasuredKernel (op moe, shape T,E,topk,H,I) per layer of the fused-MoE sweeps
// `files`: the fastest gate-up plus the fastest down configuration timed for a GPU, model, token
// count and dtype, over all the files (a re-run's rows join the first run's). bf16, or fp8 with
// per-tensor scales; block-scaled fp8 and the reference grouped GEMMs, routing, align and combine
// kernels are skipped and counted in the file's report (one per file, appended to `reports`).
// Throws std::runtime_error naming the file (and line) when one is not a sweep, names an unknown
// GPU, or lacks a required column.
void visit_moe_sweeps(const std::vector<std::filesystem::path>& files, const GpuDatabase& gpus,
                      const MeasuredKernelSink& sink, std::vector<DatasetLoadReport>* reports = nullptr);

// Every collector CSV and fused-MoE sweep under `root` (data/<gpu-id>/*.csv, data/moe-<gpu>/*.csv).
void visit_collector_folder(const std::filesystem::path& root, const GpuDatabase& gpus, const MeasuredKernelSink& sink,
                            std::vector<DatasetLoadReport>* reports = nullptr);

}  // namespace perfloom::storage
