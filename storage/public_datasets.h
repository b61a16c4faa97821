#pragma once
// Readers for the public measured-kernel datasets vendored under data/public (see its
// README.md): aiconfigurator GEMM and attention tables, NeuSight FP32 operator tables and Vidur
// per-layer operator profiles. They are training and validation data for the analytical model and
// XGBoost: every row becomes a perfloom KernelDesc on a perfloom GPU id with a latency in
// microseconds. How each source's columns map to the kernel-list contract is written next to each
// reader in public_datasets.cpp.
//
// Rows that cannot be used are skipped and counted: malformed rows (a bad number, a missing
// column) and rows that measure something perfloom has no op or dtype for (weight-only int4,
// unary elementwise ops, sliding-window attention, ...). A missing or unreadable file, or one whose
// header lacks a required column, throws std::runtime_error naming the file.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "model/gpu_database.h"
#include "model/kernel.h"

namespace perfloom::storage {

struct MeasuredKernel {
  KernelDesc kernel;
  std::string gpu_id;     // a perfloom GPU id (gpus/*.json)
  double latency_us = 0;  // measured latency of the kernel (or op, see `note`)
  // Source, GPU folder, table and framework or split, e.g. "aiconfigurator/h100_sxm/gemm/vllm-0.14.0",
  // "neusight/train/linear", "vidur/a100/meta-llama/Llama-2-7b-hf/mlp".
  std::string dataset;
  // What the shape alone does not say, as `key=value` pairs joined by ';' (e.g.
  // "kv_cache_dtype=fp8;kernel_source=vllm_flash_attn", "op=mul", "bias=1;tp=2").
  std::string note;
};

struct DatasetLoadReport {
  std::string file;
  std::size_t rows = 0, kept = 0, skipped = 0;     // a Vidur row gives several kernels: kept counts kernels
  std::vector<std::string> skip_reasons;           // the first few distinct reasons, with their line
  std::map<std::string, std::size_t> skip_counts;  // skipped rows (or row ops) per reason
};

using MeasuredKernelSink = std::function<void(MeasuredKernel&&)>;

// Reads every *.csv / *.csv.gz under `root` (data/public), in path order, choosing the reader
// from the header; a CSV of no known format gets a report with no rows. GPU names in the files are
// mapped with public_dataset_gpu_id(), Vidur's device folders with a small table of their own (its
// "a100" is the 80 GB PCIe card, see public_datasets.cpp). Rows on a GPU that `gpus` does not know
// are skipped. Loading everything holds ~0.8 M kernels (~0.5 GB); visit_public_datasets() streams.
std::vector<MeasuredKernel> load_public_datasets(const std::filesystem::path& root, const GpuDatabase& gpus,
                                                 std::vector<DatasetLoadReport>* reports = nullptr);
// The same, streaming: each kernel goes to `sink` as it is read, so nothing is held in memory.
void visit_public_datasets(const std::filesystem::path& root, const GpuDatabase& gpus, const MeasuredKernelSink& sink,
                           std::vector<DatasetLoadReport>* reports = nullptr);

// The perfloom GPU id for a GPU name as a dataset writes it ("NVIDIA H100 80GB HBM3", NeuSight's
// "NVIDIA_A100-SXM4-40GB"): `gpus.find()`, then again with '_' read as ' '. Empty when unknown.
std::string public_dataset_gpu_id(std::string_view name, const GpuDatabase& gpus);

// One reader per family, for a single file (plain or .gz). `report` may be null.
// aiconfigurator .../systems/data/<system>/gemm/<framework>/<version>/gemm_perf.csv(.gz)
std::vector<MeasuredKernel> read_aiconfigurator_gemm(const std::filesystem::path& csv, const GpuDatabase& gpus,
                                                     DatasetLoadReport* report = nullptr);
// aiconfigurator .../attention/<framework>/<version>/{context,generation}_attention_perf.csv(.gz)
std::vector<MeasuredKernel> read_aiconfigurator_attention(const std::filesystem::path& csv, const GpuDatabase& gpus,
                                                          DatasetLoadReport* report = nullptr);
// NeuSight scripts/asplos/data/dataset/{train,test}/... (bmm, linear, elem, ln, softmax tables)
std::vector<MeasuredKernel> read_neusight(const std::filesystem::path& csv, const GpuDatabase& gpus,
                                          DatasetLoadReport* report = nullptr);
// Vidur data/profiling/compute/<gpu>/<org>/<model>/mlp.csv(.gz)
std::vector<MeasuredKernel> read_vidur(const std::filesystem::path& csv, const GpuDatabase& gpus,
                                       DatasetLoadReport* report = nullptr);

// Streaming forms of the readers above.
void visit_aiconfigurator_gemm(const std::filesystem::path& csv, const GpuDatabase& gpus,
                               const MeasuredKernelSink& sink, DatasetLoadReport* report = nullptr);
void visit_aiconfigurator_attention(const std::filesystem::path& csv, const GpuDatabase& gpus,
                                    const MeasuredKernelSink& sink, DatasetLoadReport* report = nullptr);
void visit_neusight(const std::filesystem::path& csv, const GpuDatabase& gpus, const MeasuredKernelSink& sink,
                    DatasetLoadReport* report = nullptr);
void visit_vidur(const std::filesystem::path& csv, const GpuDatabase& gpus, const MeasuredKernelSink& sink,
                 DatasetLoadReport* report = nullptr);

}  // namespace perfloom::storage
