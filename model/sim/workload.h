#pragma once
// Simulation workloads (CONTRACT.md, `--workload`):
//   batch:n=N,input=I,output=O                       N requests at t=0, prefilled and decoded together
//   poisson:rate=R,n=N,input=I,output=O[,seed=S]     Poisson arrivals at R requests/s
//   trace:FILE.csv                                   arrival_s,input_tokens,output_tokens[,prefix_id,prefix_tokens]
// Lengths of a Poisson workload are fixed (`input=512`) or drawn uniformly (`input=128:1024`),
// with the same seeded generator as the arrivals (seed 0 when not given). The generator is
// SplitMix64 with our own exponential and uniform draws, so a seed gives the same requests on
// every platform and standard library.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace perfloom::sim {

struct RequestSpec {
  double arrival_s = 0;
  int64_t input_tokens = 0, output_tokens = 0;
  int64_t prefix_id = -1;  // requests with the same id share their first prefix_tokens tokens
  int64_t prefix_tokens = 0;
};

enum class WorkloadKind { batch, poisson, trace };

struct Workload {
  WorkloadKind kind = WorkloadKind::batch;
  std::string spec;                   // as given
  std::vector<RequestSpec> requests;  // sorted by arrival
};

// Throws std::invalid_argument naming the part of the spec that is wrong.
Workload parse_workload(const std::string& spec);
// The trace CSV; throws std::invalid_argument naming the file and line.
std::vector<RequestSpec> read_trace_csv(const std::string& path);
std::vector<RequestSpec> parse_trace_csv(const std::string& text, const std::string& label);

}  // namespace perfloom::sim
