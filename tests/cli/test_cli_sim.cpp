// End-to-end: `perfloom step` and `perfloom simulate` as scripts run them.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "run_process.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {
const std::string kDb = "--db /tmp/perfloom-cli-sim-test.db";

fs::path temp(const std::string& name) {
  return fs::temp_directory_path() / ("perfloom-cli-sim-" + std::to_string(::getpid()) + "-" + name);
}
}  // namespace

TEST(CliSim, StepPrintsLatencyAndJsonBreakdown) {
  auto text = runPerfloom("step --model llama-3-8b --gpu h100 --phase decode --batch 8 --context 1024 --graphs " + kDb);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.rfind("latency_us: ", 0), 0u) << text.out;

  auto r = runPerfloom("step --model llama-3-8b --gpu h100-sxm --phase prefill --batch 2 --tokens 1024 --json " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  const double latency = j.at("latency_us").get<double>();
  EXPECT_GT(latency, 1000.0);
  double sum = 0;
  for (const char* f : {"gemm", "attention", "norm", "elementwise", "moe", "communication", "launch", "host"}) {
    ASSERT_TRUE(j["breakdown_us"].contains(f)) << f;
    sum += j["breakdown_us"][f].get<double>();
  }
  EXPECT_NEAR(sum, latency, 1e-6 * latency);
  EXPECT_GT(j["breakdown_us"]["gemm"].get<double>(), j["breakdown_us"]["norm"].get<double>());
  ASSERT_TRUE(j["kernels"].is_array());
  bool saw_prefill = false;
  for (const auto& k : j["kernels"])
    if (k["op"] == "attn_prefill") {
      saw_prefill = true;
      EXPECT_EQ(k["count"], 32);
      EXPECT_EQ(k["shape"]["seqlens"], json::array({1024, 1024}));
    }
  EXPECT_TRUE(saw_prefill);
}

TEST(CliSim, StepGraphsAndEagerLaunchOverheads) {
  auto eager = runPerfloom("step --model llama-3.2-1b --gpu h100 --phase decode --batch 1 --context 128 --json " + kDb);
  auto graphs =
      runPerfloom("step --model llama-3.2-1b --gpu h100 --phase decode --batch 1 --context 128 --graphs --json " + kDb);
  ASSERT_EQ(eager.exit_code, 0) << eager.err;
  ASSERT_EQ(graphs.exit_code, 0) << graphs.err;
  const json e = json::parse(eager.out), g = json::parse(graphs.out);
  EXPECT_FALSE(e["cuda_graphs"].get<bool>());
  EXPECT_TRUE(g["cuda_graphs"].get<bool>());
  // Graphs: one graph launch of 10 us and 0.38 us between two kernels (data/step/graph_gap_*.json).
  const double launches = e["kernel_launches"].get<double>(), kernels = e["kernels_us"].get<double>();
  EXPECT_NEAR(g["launch_overhead_us"].get<double>(), 10.0 + 0.38 * launches, 1e-6);
  // Eager: the host issues a launch every 4 us; the GPU waits when its kernels and gaps are quicker.
  EXPECT_NEAR(e["launch_overhead_us"].get<double>(), std::max(0.38 * launches, 4.0 * launches - kernels), 1e-6);
}

TEST(CliSim, StepAttentionImplementationChangesOnlyAttention) {
  // On our H200 one long-context decode runs 1.6x faster through cuDNN's fused attention than
  // through FlashAttention-2 (data/step/decode_attn_probe_h200.csv); the predictor tells them
  // apart through the kernel name's implementation class.
  auto step = [](const std::string& impl) {
    auto r = runPerfloom(
        "step --model llama-3-8b --gpu h200 --phase decode --batch 32 --context 8192 --graphs --json "
        "--attention-impl " +
        impl + " " + kDb);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out.empty() ? "{}" : r.out);
  };
  const json serving = step("serving"), fa2 = step("fa2"), cudnn = step("cudnn");
  ASSERT_TRUE(fa2.contains("breakdown_us") && cudnn.contains("breakdown_us") && serving.contains("breakdown_us"));
  EXPECT_EQ(cudnn["attention_impl"], "cudnn");
  EXPECT_GT(fa2["breakdown_us"]["attention"].get<double>(), 1.2 * cudnn["breakdown_us"]["attention"].get<double>());
  EXPECT_DOUBLE_EQ(fa2["breakdown_us"]["gemm"].get<double>(), cudnn["breakdown_us"]["gemm"].get<double>());
  EXPECT_DOUBLE_EQ(serving["breakdown_us"]["gemm"].get<double>(), cudnn["breakdown_us"]["gemm"].get<double>());
  auto bad = runPerfloom(
      "step --model llama-3-8b --gpu h200 --phase decode --batch 1 --context 128 --attention-impl fa3 " + kDb);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--attention-impl must be serving, flash, fa2, cudnn, triton or trtllm"), std::string::npos)
      << bad.err;
  auto sim = runPerfloom(
      "simulate --model llama-3.2-1b --gpu h200 --attention-impl cudnn --workload "
      "batch:n=4,input=128,output=8 --json " +
      kDb);
  EXPECT_EQ(sim.exit_code, 0) << sim.err;
  auto sim_bad = runPerfloom(
      "simulate --model llama-3.2-1b --gpu h200 --attention-impl x --workload "
      "batch:n=4,input=128,output=8 " +
      kDb);
  EXPECT_NE(sim_bad.exit_code, 0);
  EXPECT_NE(sim_bad.err.find("--attention-impl must be serving, flash"), std::string::npos) << sim_bad.err;
}

TEST(CliSim, EngineChoosesTheAttentionKernelsAndSaysWhich) {
  // SGLang on the RTX PRO 6000 Blackwell Server runs Triton attention, vLLM FlashAttention.
  auto sim = [](const std::string& engine, const std::string& gpu) {
    auto r = runPerfloom("simulate --model llama-3.2-1b --gpu " + gpu + " --engine " + engine +
                         " --workload batch:n=4,input=128,output=8 --json " + kDb);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out.empty() ? "{}" : r.out);
  };
  const json s = sim("sglang", "rtx-pro-6000-server"), v = sim("vllm", "rtx-pro-6000-server"), b = sim("vllm", "b200");
  EXPECT_EQ(s["engine"], "sglang");
  EXPECT_EQ(s["attention"]["implementation"], "triton");
  EXPECT_NE(s["attention"]["reason"].get<std::string>().find("sm120"), std::string::npos) << s["attention"];
  EXPECT_EQ(v["attention"]["implementation"], "flash");
  EXPECT_EQ(b["attention"]["implementation"], "trtllm");
  auto bad = runPerfloom("simulate --model llama-3.2-1b --gpu b200 --engine tgi --workload batch:n=1,input=8,output=2 " +
                         kDb);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--engine must be vllm or sglang (got \"tgi\")"), std::string::npos) << bad.err;
  // A kernel list: an unnamed attention row runs what the engine runs on each GPU, and says which.
  const std::string dir = ::testing::TempDir() + "/engine_kernels";
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir + "/k.csv");
    f << "op,dtype,B,S,Hq,Hkv,D,causal,M,N,K\nattn_prefill,bf16,1,2048,32,8,128,1,,,\ngemm,bf16,,,,,,,64,4096,4096\n";
  }
  auto pr = runPerfloom("predict --kernels " + dir + "/k.csv --gpu h100-sxm,b200 --engine sglang " + kDb);
  ASSERT_EQ(pr.exit_code, 0) << pr.err;
  EXPECT_NE(pr.out.find(",implementation\n"), std::string::npos) << pr.out;
  EXPECT_NE(pr.out.find("h100-sxm,"), std::string::npos);
  std::istringstream lines(pr.out);
  std::string line;
  std::vector<std::string> impl;
  std::getline(lines, line);
  while (std::getline(lines, line)) impl.push_back(line.substr(line.rfind(',') + 1));
  EXPECT_EQ(impl, (std::vector<std::string>{"flash", "trtllm", "", ""})) << pr.out;
  auto trace = runPerfloom("predict --trace x.json --gpu b200 --engine sglang " + kDb);
  EXPECT_EQ(trace.exit_code, 2);
  EXPECT_NE(trace.err.find("--engine applies to a kernel list"), std::string::npos) << trace.err;
}

TEST(CliSim, PredictSustainedSlowsAComputeBoundKernelByThePowerLimit) {
  // A large GEMM repeated back to back holds an H100 at its power limit: the measured curve
  // (data/power) slows such a GEMM 1.16-1.21x. A decode GEMV streams weights (the memory factor,
  // about 1), and an H20's little tensor throughput per watt never reaches its limit.
  const std::string dir = ::testing::TempDir() + "/sustained_kernels";
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir + "/k.csv");
    f << "op,dtype,M,N,K\ngemm,bf16,8192,8192,8192\ngemm,bf16,1,8192,8192\n";
  }
  auto run = [&](const std::string& clocks) {
    auto r = runPerfloom("predict --kernels " + dir + "/k.csv --gpu h100-sxm,h20 --json " + clocks + " " + kDb);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out.empty() ? "{}" : r.out)["predictions"];
  };
  const json burst = run(""), sustained = run("--clocks sustained");
  ASSERT_EQ(sustained.size(), 4u);
  ASSERT_EQ(burst.size(), 4u);
  const double big = sustained[0]["sustained_slowdown"].get<double>();
  EXPECT_GT(big, 1.1);
  EXPECT_LT(big, 1.3);
  EXPECT_NEAR(sustained[0]["pred_us"].get<double>() / (burst[0]["pred_us"].get<double>() * big), 1.0, 1e-5);
  EXPECT_FALSE(burst[0].contains("sustained_slowdown"));
  EXPECT_NEAR(sustained[1]["sustained_slowdown"].get<double>(), 1.0, 1e-9) << sustained[1];  // h20
  EXPECT_LT(sustained[2]["sustained_slowdown"].get<double>(), 1.02) << sustained[2];  // the GEMV on the H100
  // A GPU without a TDP to scale a curve by is refused with what to do; a trace with --clocks is misuse.
  auto p100 = runPerfloom("predict --kernels " + dir + "/k.csv --gpu p100-pcie --clocks sustained " + kDb);
  EXPECT_EQ(p100.exit_code, 1);
  EXPECT_NE(p100.err.find("--clocks sustained needs a sustained-power curve of 'p100-pcie'"), std::string::npos)
      << p100.err;
  auto trace = runPerfloom("predict --trace x.json --gpu h100-sxm --clocks sustained " + kDb);
  EXPECT_EQ(trace.exit_code, 2);
}

TEST(CliSim, StepWithTensorParallelAndAConfigFile) {
  auto r = runPerfloom(
      "step --model llama-3.1-70b --gpu h100 --phase decode --batch 32 --context 2048 --tp 4 --graphs --json " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(json::parse(r.out)["breakdown_us"]["communication"].get<double>(), 0.0);

  const fs::path cfg = temp("config.json");
  std::ifstream in(std::string(PERFLOOM_SOURCE_DIR) + "/resources/llm/qwen3-8b.json");
  json q = json::parse(in);
  q["num_hidden_layers"] = 4;
  std::ofstream(cfg) << q.dump();
  auto f =
      runPerfloom("step --model " + cfg.string() + " --gpu l40s --phase decode --batch 4 --context 100 --json " + kDb);
  ASSERT_EQ(f.exit_code, 0) << f.err;
  const json step = json::parse(f.out);  // a range-for over a temporary's member would read freed memory
  bool seen = false;
  for (const auto& k : step["kernels"])
    if (k["label"] == "qkv_proj") {
      EXPECT_EQ(k["count"], 4);
      seen = true;
    }
  EXPECT_TRUE(seen) << f.out;
  fs::remove(cfg);
}

TEST(CliSim, SimulateBatchPrintsTheContractFields) {
  auto r = runPerfloom("simulate --model llama-3-8b --gpu h100 --workload batch:n=4,input=256,output=16 " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* f :
       {"prefill_ms: ", "median_decode_ms: ", "total_ms: ", "ttft_ms", "tpot_ms", "e2e_ms", "throughput:"})
    EXPECT_NE(r.out.find(f), std::string::npos) << f << "\n" << r.out;

  auto j = runPerfloom("simulate --model llama-3-8b --gpu h100 --workload batch:n=4,input=256,output=16 --json " + kDb);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  json d = json::parse(j.out);
  EXPECT_GT(d["prefill_ms"].get<double>(), 0);
  EXPECT_GT(d["median_decode_ms"].get<double>(), 0);
  EXPECT_GT(d["total_ms"].get<double>(), d["prefill_ms"].get<double>());
  for (const char* m : {"ttft_ms", "tpot_ms", "e2e_ms"})
    for (const char* s : {"mean", "p50", "p90", "p99"}) EXPECT_TRUE(d[m].contains(s)) << m << "." << s;
  EXPECT_GT(d["throughput"]["output_tokens_per_s"].get<double>(), 0);
  EXPECT_GT(d["throughput"]["requests_per_s"].get<double>(), 0);
}

TEST(CliSim, SimulatePoissonWritesRecordsAndTimeline) {
  const fs::path out = temp("out.json");
  auto r = runPerfloom(
      "simulate --model qwen2.5-7b --gpu h100 --workload poisson:rate=5,n=50,input=512,output=64,seed=3 --out " +
      out.string() + " " + kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out);
  json d = json::parse(in);
  ASSERT_EQ(d["records"].size(), 50u);
  EXPECT_GT(d["timeline"].size(), 60u);
  EXPECT_GT(d["records"][0]["ttft_ms"].get<double>(), 0);
  EXPECT_EQ(d["records"][49]["output_tokens"], 64);
  EXPECT_TRUE(d["breakdown_us"].contains("attention"));
  fs::remove(out);
}

TEST(CliSim, SimulateTraceWithPrefixes) {
  const fs::path csv = temp("trace.csv");
  std::ofstream(csv)
      << "arrival_s,input_tokens,output_tokens,prefix_id,prefix_tokens\n0,2048,8,1,1024\n1,2048,8,1,1024\n2,512,8,,\n";
  auto r = runPerfloom("simulate --model mixtral-8x7b --gpu h100 --tp 2 --workload trace:" + csv.string() + " --json " +
                       kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json d = json::parse(r.out);
  EXPECT_EQ(d["requests"], 3);
  EXPECT_EQ(d["prefix_cache_hit_tokens"], 1024);
  EXPECT_GT(d["breakdown_us"]["moe"].get<double>(), 0);
  fs::remove(csv);
}

TEST(CliSim, SimulateClosedLoopReportsTheMeasuredWindowAndGoodput) {
  auto r = runPerfloom(
      "simulate --model llama-3-8b --gpu h100 --workload closed:concurrency=4,n=40,lengths=chat,seed=2 "
      "--sla ttft=400,tpot=30 --json " +
      kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json d = json::parse(r.out);
  EXPECT_EQ(d["requests"], 40);
  EXPECT_EQ(d["measured"]["requests"], 32);  // the first and last 4 to arrive left out
  EXPECT_EQ(d["measured"]["warmup"], 4);
  EXPECT_EQ(d["ttft_ms"]["count"], 32);
  EXPECT_LT(d["measured"]["window_start_s"].get<double>(), d["measured"]["window_end_s"].get<double>());
  EXPECT_EQ(d["sla"]["bounds"]["ttft_ms"], 400);
  const double att = d["sla"]["attainment"].get<double>();
  EXPECT_NEAR(att, d["sla"]["met"].get<double>() / 32, 1e-12);
  EXPECT_NEAR(d["sla"]["goodput_requests_per_s"].get<double>(), att * d["throughput"]["requests_per_s"].get<double>(),
              1e-9);

  auto text = runPerfloom(
      "simulate --model llama-3-8b --gpu h100 --workload closed:concurrency=2,n=10,input=64,output=4 "
      "--sla e2e=1000 " +
      kDb);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("measured: 6 requests (first 2 and last 2 to arrive left out)"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("meet e2e <= 1000 ms; goodput"), std::string::npos) << text.out;

  auto bad = runPerfloom(
      "simulate --model llama-3-8b --gpu h100 --workload closed:concurrency=2,n=10,input=64,output=4 --sla ttft=-5 " +
      kDb);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--sla \"ttft=-5\": ttft must be a positive number of milliseconds"), std::string::npos)
      << bad.err;
}

TEST(CliSim, SimulateReplicasAndDisaggregatedPools) {
  const std::string base = "simulate --model llama-3-8b --gpu h100 --workload poisson:rate=4,n=30,input=512,output=32 ";
  auto dp = runPerfloom(base + "--dp 2 --router least-loaded --json " + kDb);
  ASSERT_EQ(dp.exit_code, 0) << dp.err;
  json d = json::parse(dp.out);
  EXPECT_EQ(d["deployment"]["replicas"], 2);
  EXPECT_EQ(d["deployment"]["router"], "least-loaded");

  auto pd =
      runPerfloom(base + "--prefill-instances 1 --decode-instances 2 --decode-gpu h200 --kv-transfer-gbps 50 " + kDb);
  ASSERT_EQ(pd.exit_code, 0) << pd.err;
  EXPECT_NE(pd.out.find("prefill pool: 1 instance on h100-sxm, TP 1"), std::string::npos) << pd.out;
  EXPECT_NE(pd.out.find("decode pool: 2 instances on h200, TP 1"), std::string::npos) << pd.out;
  EXPECT_NE(pd.out.find("kv_transfer "), std::string::npos) << pd.out;
  // Pipeline-parallel pools: --pp for both, or each its own.
  auto pp = runPerfloom(base + "--pp 2 --decode-pp 1 --prefill-instances 1 --decode-instances 1 --json " + kDb);
  ASSERT_EQ(pp.exit_code, 0) << pp.err;
  d = json::parse(pp.out);
  EXPECT_EQ(d["deployment"]["prefill"]["pp"], 2) << d["deployment"].dump();
  EXPECT_EQ(d["deployment"]["decode"]["pp"], 1) << d["deployment"].dump();

  auto cross = runPerfloom(base + "--prefill-instances 1 --decode-gpu h200 " + kDb);
  EXPECT_NE(cross.exit_code, 0);
  EXPECT_NE(cross.err.find("needs the network bandwidth per GPU: --kv-transfer-gbps"), std::string::npos) << cross.err;
  auto both = runPerfloom(base + "--dp 2 --decode-instances 2 " + kDb);
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.err.find("--dp replicates a unified engine"), std::string::npos) << both.err;
  auto router = runPerfloom(base + "--dp 2 --router random " + kDb);
  EXPECT_NE(router.exit_code, 0);
  EXPECT_NE(router.err.find("--router must be round-robin or least-loaded"), std::string::npos) << router.err;
}

TEST(CliSim, SimulateSpeculativeDecoding) {
  auto r = runPerfloom(
      "simulate --model llama-3-8b --gpu h100 --workload closed:concurrency=2,n=8,input=256,output=64 --spec-tokens 3 "
      "--spec-acceptance 0.7 --json " +
      kDb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json d = json::parse(r.out);
  EXPECT_EQ(d["speculative"]["tokens"], 3);
  EXPECT_NEAR(d["speculative"]["expected_tokens_per_step"].get<double>(), 1 + 0.7 + 0.49 + 0.343, 1e-9);
  EXPECT_GT(d["speculative"]["draft_us"].get<double>(), 0);
  auto bad = runPerfloom(
      "simulate --model llama-3-8b --gpu h100 --workload batch:n=1,input=8,output=8 --spec-tokens 3 --spec-acceptance "
      "1.2 " +
      kDb);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--spec-acceptance must be a rate from 0 to 1"), std::string::npos) << bad.err;
}

TEST(CliSim, PlanRanksDeploymentsAndSaysWhyOthersAreLeftOut) {
  const fs::path prices = temp("prices.csv");
  std::ofstream(prices) << "gpu,usd_per_gpu_hour,source\nH100,2.00,test\nh200,9.00,test\n";
  const std::string base =
      "plan --model llama-3.1-8b --workload poisson:rate=1,n=40,input=512,output=32,seed=1 --gpus h100,h200,t4 "
      "--tp 1,2 --max-gpus 2 --load 2req/s --sla ttft_p90=2000,tpot_p90=100 ";
  auto j = runPerfloom(base + "--prices " + prices.string() + " --json " + kDb);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  json d = json::parse(j.out);
  ASSERT_FALSE(d["ranked"].empty());
  EXPECT_EQ(d["ranked"][0]["gpu"], "h100-sxm");  // the cheaper of the two that meet it
  EXPECT_EQ(d["ranked"][0]["usd_per_hour"], 2.0 * d["ranked"][0]["gpus"].get<int>());
  bool t4_left_out = false;
  for (const auto& r : d["rejected"])
    if (r["gpu"] == "t4" && r["why_not"].get<std::string>().find("does not fit") != std::string::npos)
      t4_left_out = true;
  EXPECT_TRUE(t4_left_out) << d["rejected"].dump();
  EXPECT_EQ(d["sla"]["tpot_p90"], 100);

  auto text = runPerfloom(base + kDb);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("target load: 2 req/s"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("1    "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("left out ("), std::string::npos) << text.out;

  std::ofstream(prices) << "gpu,usd_per_gpu_hour\nh9000,1\n";
  auto bad = runPerfloom(base + "--prices " + prices.string() + " " + kDb);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("\"h9000\" names no known GPU"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find(prices.string()), std::string::npos) << bad.err;
  fs::remove(prices);
  // Engine settings searched: each row's settings in the JSON and in the deployment's name.
  auto searched = runPerfloom(base + "--gpus h100 --tp 1 --max-gpus 1 --quantization bf16,fp8 --chunked-prefill on,off "
                                     "--json " + kDb);
  ASSERT_EQ(searched.exit_code, 0) << searched.err;
  const json s = json::parse(searched.out);
  EXPECT_EQ(s["engine_settings"].size(), 4u);
  std::set<std::string> seen;
  for (const auto& row : s["ranked"]) {
    seen.insert(row["deployment"].get<std::string>());
    EXPECT_TRUE(row["settings"].contains("kv_cache_dtype") && row["settings"]["kv_cache_dtype"].is_null()) << row.dump();
  }
  EXPECT_TRUE(seen.count("1 x h100-sxm (TP 1; fp8 weights, no chunked prefill)")) << s["ranked"].dump();
  auto disagg = runPerfloom(base + "--disaggregated --json " + kDb);
  ASSERT_EQ(disagg.exit_code, 0) << disagg.err;
  const json dj = json::parse(disagg.out);
  EXPECT_EQ(dj["disaggregated"], true);
  EXPECT_EQ(dj["kv_transfer_gb_s"], 50);
  bool pools = false;
  for (const auto& row : dj["ranked"])
    if (row.contains("decode")) pools = row["deployment"].get<std::string>().find(") decode") != std::string::npos;
  EXPECT_TRUE(pools) << dj["ranked"].dump();
  auto sharded = runPerfloom(base + "--disaggregated --shard 1/2 --json " + kDb);
  EXPECT_EQ(sharded.exit_code, 1);
  EXPECT_NE(sharded.err.find("--shard with --disaggregated"), std::string::npos) << sharded.err;
  for (const char* wrong : {"--kv-transfer-gbps 0", "--chunked-prefill maybe", "--max-num-seqs 0", "--quantization fp7", "--kv-cache-dtype int3"}) {
    auto e = runPerfloom(base + wrong + " " + kDb);
    EXPECT_EQ(e.exit_code, 1) << wrong;
    EXPECT_NE(e.err.find(std::string(wrong).substr(0, std::string(wrong).find(' '))), std::string::npos) << e.err;
  }
  auto sla =
      runPerfloom("plan --model llama-3.1-8b --workload poisson:rate=1,n=4,input=8,output=8 --sla ttft=5 " + kDb);
  EXPECT_NE(sla.exit_code, 0);
  EXPECT_NE(sla.err.find("--sla \"ttft=5\""), std::string::npos) << sla.err;
}

TEST(CliSim, SimulateServesAnyModelQuantised) {
  const std::string base =
      "simulate --model llama-3.1-8b --workload closed:concurrency=4,n=16,input=256,output=16 --json ";
  auto bf16 = runPerfloom(base + "--gpu h100 " + kDb);
  auto fp8 = runPerfloom(base + "--gpu h100 --quantization fp8 --kv-cache-dtype fp8 " + kDb);
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
  ASSERT_EQ(fp8.exit_code, 0) << fp8.err;
  const json a = json::parse(bf16.out), b = json::parse(fp8.out);
  EXPECT_LT(b["memory"]["weights_gib_per_gpu"].get<double>(), 0.6 * a["memory"]["weights_gib_per_gpu"].get<double>());
  EXPECT_NEAR(b["memory"]["kv_bytes_per_token_per_gpu"].get<double>(),
              a["memory"]["kv_bytes_per_token_per_gpu"].get<double>() / 2, 1e-9);
  EXPECT_LT(b["tpot_ms"]["p50"].get<double>(), a["tpot_ms"]["p50"].get<double>());
  auto bad = runPerfloom(base + "--gpu a100-sxm-80gb --kv-cache-dtype fp8 " + kDb);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("has no fp8 tensor cores"), std::string::npos) << bad.err;
}

TEST(CliSim, BadInputsFailWithAReason) {
  auto unknown = runPerfloom("step --model llama-9-1t --gpu h100 --phase decode --batch 1 --context 10 " + kDb);
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("unknown model \"llama-9-1t\""), std::string::npos) << unknown.err;

  auto big = runPerfloom("simulate --model llama-3.1-70b --gpu h100 --workload batch:n=1,input=10,output=10 " + kDb);
  EXPECT_NE(big.exit_code, 0);
  EXPECT_NE(big.err.find("does not fit in memory"), std::string::npos) << big.err;

  auto tp = runPerfloom("step --model llama-3-8b --gpu h100 --phase decode --batch 1 --context 10 --tp 3 " + kDb);
  EXPECT_NE(tp.exit_code, 0);
  EXPECT_NE(tp.err.find("num_attention_heads"), std::string::npos) << tp.err;

  auto spec =
      runPerfloom("simulate --model llama-3-8b --gpu h100 --workload poisson:rate=fast,n=1,input=1,output=1 " + kDb);
  EXPECT_NE(spec.exit_code, 0);
  EXPECT_NE(spec.err.find("rate must be"), std::string::npos) << spec.err;

  auto phase = runPerfloom("step --model llama-3-8b --gpu h100 --batch 1 --context 10 " + kDb);
  EXPECT_NE(phase.exit_code, 0);
  EXPECT_NE(phase.err.find("--phase"), std::string::npos) << phase.err;

  auto tokens = runPerfloom("step --model llama-3-8b --gpu h100 --phase prefill --batch 1 --context 10 " + kDb);
  EXPECT_NE(tokens.exit_code, 0);
  EXPECT_NE(tokens.err.find("--tokens"), std::string::npos) << tokens.err;

  const fs::path cfg = temp("mamba.json");
  std::ofstream(cfg) << R"({"architectures": ["MambaForCausalLM"], "hidden_size": 768})";
  auto arch = runPerfloom("step --model " + cfg.string() + " --gpu h100 --phase decode --batch 1 --context 10 " + kDb);
  EXPECT_NE(arch.exit_code, 0);
  EXPECT_NE(arch.err.find("unknown architecture 'MambaForCausalLM'"), std::string::npos) << arch.err;
  EXPECT_NE(arch.err.find(cfg.string()), std::string::npos) << arch.err;
  fs::remove(cfg);

  auto missing = runPerfloom("simulate --model llama-3-8b --gpu h100 " + kDb);
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("--workload"), std::string::npos) << missing.err;
}

TEST(CliSim, SustainedClocksAndTheHostTimeOfAStep) {
  const std::string step = "step --model llama-3-8b --phase prefill --batch 1 --tokens 4096 --json " + kDb;
  auto burst = runPerfloom(step + " --gpu h100");
  auto sus = runPerfloom(step + " --gpu h100 --clocks sustained");
  ASSERT_EQ(burst.exit_code, 0) << burst.err;
  ASSERT_EQ(sus.exit_code, 0) << sus.err;
  const json b = json::parse(burst.out), s = json::parse(sus.out);
  EXPECT_EQ(b.at("clocks"), "burst");
  EXPECT_FALSE(b.contains("tensor_utilization"));
  EXPECT_EQ(s.at("clocks"), "sustained");
  EXPECT_GT(s.at("tensor_utilization").get<double>(), 0.3);
  EXPECT_LT(s.at("tensor_utilization").get<double>(), 1.0);
  EXPECT_GE(s["sustained_slowdown"]["compute"].get<double>(), 1.0);
  EXPECT_NE(s.at("sustained_origin").get<std::string>().find("h100-sxm.json"), std::string::npos);
  EXPECT_GT(s["breakdown_us"]["gemm"].get<double>(), b["breakdown_us"]["gemm"].get<double>());

  // --host-us replaces the vLLM-like host estimate.
  auto host = runPerfloom(step + " --gpu h100 --host-us 0");
  ASSERT_EQ(host.exit_code, 0) << host.err;
  EXPECT_EQ(json::parse(host.out).at("host_overhead_us").get<double>(), 0.0);
  EXPECT_GT(b.at("host_overhead_us").get<double>(), 0.0);

  // simulate: a heavy batch of long prompts is slowed; at one request a second the GPU rests
  // between requests (the limit lets go within tens of ms) and the first token comes as at burst clocks.
  auto sim = [&](const std::string& workload, const std::string& clocks) {
    auto r = runPerfloom("simulate --model llama-3-8b --gpu h200 --workload " + workload + " --json --clocks " +
                         clocks + " " + kDb);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  };
  const std::string heavy = "batch:n=8,input=4096,output=4", light = "poisson:rate=1,n=20,input=512,output=16,seed=3";
  const json hb = sim(heavy, "burst"), hs = sim(heavy, "sustained");
  EXPECT_EQ(hb.at("clocks"), "burst");
  EXPECT_EQ(hs.at("clocks"), "sustained");
  EXPECT_GT(hs["ttft_ms"]["p50"].get<double>(), 1.05 * hb["ttft_ms"]["p50"].get<double>());
  const json lb = sim(light, "burst"), ls = sim(light, "sustained");
  EXPECT_NEAR(ls["ttft_ms"]["p50"].get<double>(), lb["ttft_ms"]["p50"].get<double>(),
              0.01 * lb["ttft_ms"]["p50"].get<double>());

  auto bad = runPerfloom(step + " --gpu h100 --clocks boost");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--clocks must be burst or sustained"), std::string::npos) << bad.err;
  auto neg = runPerfloom(step + " --gpu h100 --host-us -5");
  EXPECT_NE(neg.exit_code, 0);
  EXPECT_NE(neg.err.find("--host-us"), std::string::npos) << neg.err;
  // A GPU nobody here measured runs on a measured curve scaled to it, and says so.
  auto scaled = runPerfloom(step + " --gpu b200 --clocks sustained");
  ASSERT_EQ(scaled.exit_code, 0) << scaled.err;
  const json bs = json::parse(scaled.out);
  EXPECT_NE(bs.at("sustained_origin").get<std::string>().find("datasheet: h100-sxm's measured curve"), std::string::npos);
  EXPECT_GE(bs["sustained_slowdown"]["compute"].get<double>(), s["sustained_slowdown"]["compute"].get<double>());
  // One with no 16-bit tensor peak (P100) has no curve: refused with what to run.
  auto none = runPerfloom(
      "step --model llama-3.2-1b --phase prefill --batch 1 --tokens 512 --gpu p100-pcie --clocks sustained " + kDb);
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("power_probe.py"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("no TDP or no 16-bit tensor peak"), std::string::npos) << none.err;
}
