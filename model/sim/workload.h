#pragma once
// Simulation workloads (docs/cli.md, `--workload`):
//   batch:n=N,input=I,output=O                        N requests at t=0, prefilled and decoded together
//   poisson:rate=R,n=N,LENGTHS[,burstiness=B][,seed=S][,turns=T,think=S,turn_input=L][,warmup=K,cooldown=K]
//                                                     open loop: arrivals at R requests (or sessions) per second,
//                                                     Gamma-distributed gaps of shape B (1: Poisson, as vLLM's
//                                                     --burstiness)
//   closed:concurrency=C,n=N,LENGTHS[,seed=S][,turns=...][,warmup=K,cooldown=K]
//                                                     closed loop: C clients, each sending its next request
//                                                     when its last one finishes (vLLM bench --max-concurrency,
//                                                     GuideLLM "concurrent", genai-perf concurrency mode)
//   trace:FILE.csv                                    arrival_s,input_tokens,output_tokens[,prefix_id,prefix_tokens]
// LENGTHS is `input=L,output=L` with L a fixed length `512`, `LO:HI` or `uniform:LO:HI` (uniform),
// `normal:MEAN:SD` (rounded, at least 1), or `lengths=SOURCE`: (input, output) pairs drawn from a trace CSV
// (its arrival times ignored) or a bundled set: `chat` and `code` are the Azure LLM inference trace 2023
// conversation and coding services, `summarization` Vidur's arXiv summarisation lengths
// (resources/workloads/).
// Multi-turn sessions (`turns=T`): a session's next turn arrives `think` seconds after its previous turn
// finished and carries the whole conversation so far (previous prompt and answer) plus `turn_input` new
// tokens (default: drawn as `input`), as a shared prefix the prefix cache can serve.
// All draws come from one seeded generator (SplitMix64 with our own uniform, exponential, normal and gamma
// draws), so a seed gives the same requests on every platform and standard library.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace perfloom::sim {

struct RequestSpec {
  double arrival_s = 0;  // for a request released by the run (`released_by_run`), set when it is released
  int64_t input_tokens = 0, output_tokens = 0;
  int64_t prefix_id = -1;  // requests with the same id share their first prefix_tokens tokens
  int64_t prefix_tokens = 0;
  // Sessions and closed loops: requests whose arrival the run decides.
  bool released_by_run = false;  // arrives when its session's previous turn finishes, or a closed-loop client frees
  int64_t next_turn = -1;        // the session's next request, released think_s after this one finishes
  double think_s = 0;
  int64_t session = -1;  // the session (multi-turn) or client chain it belongs to; -1: none
};

enum class WorkloadKind { batch, poisson, trace, closed };

struct Workload {
  WorkloadKind kind = WorkloadKind::batch;
  std::string spec;                   // as given
  std::vector<RequestSpec> requests;  // open loop: sorted by arrival; sessions: each session's turns in order
  // Closed loop: how many sessions (a single request each when turns=1) run at once. The first `concurrency`
  // session heads arrive at t=0; each later one when a running session's last turn finishes.
  int64_t concurrency = 0;
  // Requests left out of the latency statistics and the throughput window: the first `warmup` and the last
  // `cooldown` to arrive.
  int64_t warmup = 0, cooldown = 0;
};

// Throws std::invalid_argument naming the part of the spec that is wrong.
Workload parse_workload(const std::string& spec);
// The trace CSV (gzip-compressed or not); throws std::invalid_argument naming the file and line.
std::vector<RequestSpec> read_trace_csv(const std::string& path);
std::vector<RequestSpec> parse_trace_csv(const std::string& text, const std::string& label);
// Where a `lengths=` name or path is read from: a bundled set's file, else the path as given.
std::string length_source_path(const std::string& name);

}  // namespace perfloom::sim
