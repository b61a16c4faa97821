#include "app/cli.h"

#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <functional>
#include <iostream>
#include <map>

#include "app/cli_commands.h"
#include "storage/database.h"

namespace perfloom::app {

namespace {

struct Command {
  QString synopsis;
  QString summary;
  std::function<int(CliContext&, const QCommandLineParser&)> run;
  QList<QCommandLineOption> options;  // besides the options of every command
};

const std::map<QString, Command>& commands() {
  static const std::map<QString, Command> table = {
      {"gpus",
       {"perfloom gpus [ID...] [--json]",
        "the GPU database: id, name, aliases, architecture, SMs, clock, dense peak per dtype, memory "
        "bandwidth, L2, memory size; with IDs, every figure of those GPUs and its source, and per kernel "
        "family what the learned models know of the GPU (its kernels in training, which booster answers it)",
        [](CliContext& c, const QCommandLineParser& p) { return cmdGpus(c, p.positionalArguments()); },
        {}}},
      {"import",
       {"perfloom import FILE|DIR... [--db PATH] [--json]",
        "import torch.profiler traces (.json, .json.gz), Nsight Systems SQLite exports, Nsight Compute CSVs, "
        "collector CSVs and the public datasets into the database; one summary line per file; a folder of "
        "collector CSVs (data/GPU) is one source",
        cmdImport,
        {}}},
      {"train",
       {"perfloom train [--data DIR] [--out DIR] [--rounds N] [--seed N]",
        "retrain the learned models from every measurement under DIR (default: $PERFLOOM_DATA, else ./data when it "
        "holds a MANIFEST.tsv)",
        cmdTrain,
        {QCommandLineOption("data", "measurements", "DIR"), QCommandLineOption("out", "model folder", "DIR"),
         QCommandLineOption("rounds", "boosting rounds", "N"),
         QCommandLineOption("seed", "random seed of the row and column subsampling (7)", "N")}}},
      {"compare",
       {"perfloom compare --trace A --trace B [--gpu ID] [--by family|name|kernel] [--out FILE.csv]",
        "two profiled traces side by side (imported if new): kernels matched by position within each launching op, "
        "family and op, else by name; per family, kernel name or kernel the time on each side, B/A, the difference "
        "and its share, and the kernels only one side has; --gpu: trace A's what-if on that GPU against B measured",
        cmdCompare,
        {QCommandLineOption("trace", "profiled trace (twice: A, then B)", "FILE"),
         QCommandLineOption("gpu", "compare trace A predicted on this GPU with trace B measured", "ID"),
         QCommandLineOption("by", "the table: family (default), name or kernel", "WHAT"),
         QCommandLineOption("out", "write the table as CSV", "FILE.csv")}}},
      {"eval",
       {"perfloom eval (--holdout-gpu ID | --holdout-arch ARCH) [--data DIR] [--rounds N] [--seed N] "
        "[--no-target-calibration] [--rows OUT.csv] [--save-models DIR]",
        "leave-one-GPU-out accuracy: retrain without that GPU, report MAPE, median and p90 error per family "
        "next to the roofline and Habitat-style baselines; the held-out GPU uses its calibration if it has one "
        "(target-measured tier), or with --no-target-calibration its datasheet (cross-generation tier)",
        cmdEval,
        {QCommandLineOption("holdout-gpu", "GPU to hold out", "ID"),
         QCommandLineOption("holdout-arch",
                            "architecture to hold out: its name (ampere, hopper, blackwell, ...) or a compute "
                            "capability (sm89, sm100, sm120)",
                            "ARCH"),
         QCommandLineOption("data", "measurements", "DIR"), QCommandLineOption("rounds", "boosting rounds", "N"),
         QCommandLineOption("seed",
                            "random seed of the row and column subsampling (7): how much a result depends on it", "N"),
         QCommandLineOption("no-target-calibration", "evaluate the held-out GPU without its calibration"),
         QCommandLineOption("rows", "write every held-out kernel's measured and predicted time to this CSV", "OUT.csv"),
         QCommandLineOption("save-models",
                            "also write the models trained without the held-out GPUs to this folder "
                            "(for checks that need models that never saw those GPUs)",
                            "DIR")}}},
      {"predict",
       {"perfloom predict --kernels IN.csv --gpu ID[,ID...] [--engine vllm|sglang] [--clocks burst|sustained] [--out "
        "OUT.csv] | predict --trace FILE --gpu ID[,ID...] "
        "[--source-gpu ID] [--out OUT.csv]",
        "predict each kernel of a kernel list on each GPU: pred_us, lo_us..hi_us, ceiling_us and the bound pipe; "
        "--trace: what-if, every kernel of a profiled trace (imported if new) measured on its own GPU, predicted on "
        "the others, totals per family and for the trace last (predictions cached in the database)",
        cmdPredict,
        {QCommandLineOption("kernels", "kernel list CSV", "IN.csv"), QCommandLineOption("gpu", "GPU ids", "ID[,ID...]"),
         QCommandLineOption("out", "output CSV", "OUT.csv"), QCommandLineOption("trace", "profiled trace", "FILE"),
         QCommandLineOption("source-gpu", "GPU the trace was recorded on, when the trace does not say", "ID"),
         QCommandLineOption("engine",
                            "kernel list: unnamed attention rows run the attention kernels this serving engine (vllm "
                            "or sglang) runs on each GPU; adds the column implementation",
                            "ENGINE"),
         QCommandLineOption("clocks",
                            "kernel list: burst (default: the boost clock, as short measurements run) or sustained "
                            "(each kernel repeated back to back, slowed by the GPU's power limit at the load it holds); "
                            "sustained adds the column sustained_slowdown",
                            "STATE")}}},
      {"step",
       {"perfloom step --model M --gpu ID --phase prefill|decode --batch B (--tokens T | --context C) [--tp N] "
        "[--graphs]",
        "latency of one forward step of an LLM (bundled id or config.json): latency_us and its breakdown per kernel "
        "family",
        cmdStep,
        {QCommandLineOption("model", "bundled model id or config.json", "M"), QCommandLineOption("gpu", "GPU id", "ID"),
         QCommandLineOption("phase", "prefill or decode", "PHASE"), QCommandLineOption("batch", "sequences", "B"),
         QCommandLineOption("tokens", "prefill tokens per sequence", "T"),
         QCommandLineOption("context", "cached tokens per sequence", "C"),
         QCommandLineOption("tp", "tensor parallel degree", "N"),
         QCommandLineOption("pp", "pipeline parallel degree", "N"),
         QCommandLineOption("graphs", "decode under CUDA graphs"),
         QCommandLineOption("attention-impl",
                            "attention kernels: serving (default: what --engine runs on the GPU), flash "
                            "(FlashAttention as the engines ship it), triton, trtllm (TensorRT-LLM FMHA), fa2 "
                            "(FlashAttention-2) or cudnn (PyTorch SDPA's cuDNN backend)",
                            "IMPL"),
         QCommandLineOption("engine", "serving engine: vllm (default) or sglang; picks the attention kernels per GPU",
                            "ENGINE"),
         QCommandLineOption("clocks",
                            "burst (default: kernels at the boost clock, as short measurements run them) or sustained "
                            "(the step repeated back to back, slowed by the GPU's measured power limit; needs a "
                            "sustained-power block in the GPU's calibration)",
                            "STATE"),
         QCommandLineOption("host-us", "host time per step in us, instead of the vLLM-like estimate", "US"),
         QCommandLineOption("quantization",
                            "serve the weights as bf16, fp8, fp8-block, int4, nvfp4 or mxfp4, whatever the config "
                            "says (vLLM's --quantization)",
                            "METHOD"),
         QCommandLineOption("kv-cache-dtype", "KV-cache element type: auto (the model's), bf16, fp16, fp8, fp8_e5m2",
                            "DT")}}},
      {"simulate",
       {"perfloom simulate --model M --gpu ID [--tp N] [--pp N] --workload SPEC [--out FILE.json]",
        "serving simulation (batch:n=N,input=I,output=O | poisson:rate=R,n=N,input=I,output=O[,seed=S] | "
        "closed:concurrency=C,n=N,input=I,output=O | trace:FILE.csv; docs/cli.md has the whole grammar): TTFT, "
        "TPOT, E2E, throughput, goodput",
        cmdSimulate,
        {QCommandLineOption("model", "bundled model id or config.json", "M"),
         QCommandLineOption("gpu", "GPU id", "ID"),
         QCommandLineOption("tp", "tensor parallel degree", "N"),
         QCommandLineOption("pp", "pipeline parallel degree", "N"),
         QCommandLineOption("ep", "expert parallel degree: 1, the TP degree, or TP x DP (wide EP with --dp)", "N"),
         QCommandLineOption("expert-imbalance", "MoE: the busiest GPU's routed tokens against the mean (1)", "F"),
         QCommandLineOption("workload", "workload spec", "SPEC"),
         QCommandLineOption("out", "records and timeline", "FILE.json"),
         QCommandLineOption("max-num-seqs", "running sequences at most (256)", "N"),
         QCommandLineOption("max-num-batched-tokens", "tokens per step at most (8192)", "N"),
         QCommandLineOption("no-chunked-prefill", "schedule whole prompts only"),
         QCommandLineOption("no-prefix-caching", "no prefix caching"),
         QCommandLineOption("eager", "no CUDA graphs"),
         QCommandLineOption("gpu-memory-utilization", "fraction of GPU memory vLLM may use (0.9)", "F"),
         QCommandLineOption("block-size", "KV-cache block size in tokens (16)", "N"),
         QCommandLineOption("kv-blocks", "KV-cache blocks (instead of the memory estimate)", "N"),
         QCommandLineOption("kv-cache-dtype", "KV-cache element type: auto (the model's), bf16, fp16, fp8, fp8_e5m2",
                            "DT"),
         QCommandLineOption("quantization",
                            "serve the weights as bf16, fp8, fp8-block, int4, nvfp4 or mxfp4, whatever the config "
                            "says (vLLM's --quantization)",
                            "METHOD"),
         QCommandLineOption("attention-impl",
                            "attention kernels: serving (default: what --engine runs on each GPU), flash, triton, "
                            "trtllm, fa2 or cudnn",
                            "IMPL"),
         QCommandLineOption("engine", "serving engine: vllm (default) or sglang; picks the attention kernels per GPU",
                            "ENGINE"),
         QCommandLineOption("clocks",
                            "burst (default) or sustained: each step slowed as far as its load drives the "
                            "GPU into its power limit (needs a sustained-power calibration)",
                            "STATE"),
         QCommandLineOption("sla", "latency objective for goodput: ttft=MS,tpot=MS,e2e=MS (any of them)", "BOUNDS"),
         QCommandLineOption("dp", "data-parallel replicas of the engine behind the router (1)", "N"),
         QCommandLineOption("router", "how requests are spread: round-robin (default) or least-loaded", "POLICY"),
         QCommandLineOption("prefill-instances", "disaggregated: prefill engine instances", "N"),
         QCommandLineOption("decode-instances", "disaggregated: decode engine instances", "N"),
         QCommandLineOption("prefill-gpu", "disaggregated: the prefill pool's GPU (--gpu)", "ID"),
         QCommandLineOption("decode-gpu", "disaggregated: the decode pool's GPU (--gpu)", "ID"),
         QCommandLineOption("prefill-tp", "disaggregated: each prefill instance's TP degree (--tp)", "N"),
         QCommandLineOption("decode-tp", "disaggregated: each decode instance's TP degree (--tp)", "N"),
         QCommandLineOption("prefill-pp", "disaggregated: each prefill instance's PP degree (--pp)", "N"),
         QCommandLineOption("decode-pp", "disaggregated: each decode instance's PP degree (--pp)", "N"),
         QCommandLineOption("spec-tokens", "speculative decoding: draft tokens verified per step (0: off)", "K"),
         QCommandLineOption("spec-acceptance", "speculative decoding: each draft token's acceptance rate, 0-1", "A"),
         QCommandLineOption("spec-draft",
                            "speculative decoding: the draft model (bundled id or config.json; default: one "
                            "decoder layer of the target, as MTP and EAGLE heads)",
                            "M"),
         QCommandLineOption("kv-transfer-gbps",
                            "disaggregated: KV-cache link per GPU, one way, GB/s (NVLink when both pools are one "
                            "GPU type that has it)",
                            "GB/S")}}},
      {"plan",
       {"perfloom plan --model M --workload SPEC --sla ttft_p90=MS,tpot_p90=MS [--load 20req/s|5000tok/s] [--gpus "
        "ID,...|all] [--prices FILE] [--max-gpus N] [--tp LIST] [--pp LIST] [--quantization LIST] "
        "[--kv-cache-dtype LIST] [--chunked-prefill on,off] [--max-num-seqs LIST] [--max-num-batched-tokens LIST] "
        "[--disaggregated [--kv-transfer-gbps GB/S]] [--wide-ep] [--shard K/N --json] | plan --merge A.json,B.json,...",
        "deployment planner: the cheapest GPUs and deployments that meet a latency SLA at a target load, or the "
        "Pareto front of throughput per GPU against tokens/s per user; --shard runs a share of the GPU types, "
        "--merge joins the shards",
        cmdPlan,
        {QCommandLineOption("model", "bundled model id or config.json", "M"),
         QCommandLineOption("workload", "poisson:... with --load, closed:... without (docs/cli.md)", "SPEC"),
         QCommandLineOption("sla", "percentile bounds: ttft_p90=MS,tpot_p90=MS,e2e_p99=MS (p50, p90, p99, mean)",
                            "BOUNDS"),
         QCommandLineOption("load", "target load: 20req/s or 5000tok/s (output tokens)", "RATE"),
         QCommandLineOption("gpus", "GPU types to consider (all)", "ID,..."),
         QCommandLineOption("prices", "CSV gpu,usd_per_gpu_hour[,source] over the bundled prices", "FILE"),
         QCommandLineOption("max-gpus", "GPUs in one deployment at most (8)", "N"),
         QCommandLineOption("tp", "TP degrees to try (1,2,4,8)", "LIST"),
         QCommandLineOption("pp", "pipeline-parallel degrees to try, each with every TP degree (1)", "LIST"),
         QCommandLineOption("uncertainty", "relative error of a prediction for the interval (0.2)", "F"),
         QCommandLineOption("top", "ranked rows shown (10)", "K"),
         QCommandLineOption("max-num-seqs", "running sequences at most, one or a list to search (256)", "LIST"),
         QCommandLineOption("max-num-batched-tokens", "tokens per step at most, one or a list to search (8192)",
                            "LIST"),
         QCommandLineOption("quantization",
                            "weight formats to search: bf16 fp8 fp8-block int4 nvfp4 mxfp4 (the model's)", "LIST"),
         QCommandLineOption("kv-cache-dtype", "KV-cache dtypes to search: auto bf16 fp16 fp8 fp8_e5m2 (auto)", "LIST"),
         QCommandLineOption("chunked-prefill", "chunked prefill settings to search: on, off or on,off (on)", "LIST"),
         QCommandLineOption("engine", "serving engine simulated: vllm (default) or sglang (its attention kernels per GPU)",
                            "ENGINE"),
         QCommandLineOption("disaggregated",
                            "also search disaggregated prefill/decode deployments (pools of any GPU types; with --load)"),
         QCommandLineOption("kv-transfer-gbps",
                            "disaggregated: KV link per GPU between pools not in one NVLink domain, GB/s (50)", "GB/S"),
         QCommandLineOption("wide-ep",
                            "also search wide expert parallelism for MoE models: data-parallel attention ranks with the "
                            "experts over every GPU of the group (with --load)"),
         QCommandLineOption("shard", "plan the K-th of N shares of the GPU types (with --json, for --merge)", "K/N"),
         QCommandLineOption("merge", "join the --shard plans of one run (JSON files, comma-separated or repeated)",
                            "FILES")}}},
      {"tune",
       {"perfloom tune --gemm M,N,K --dtype DT --gpu ID [--top K] [--json] | tune --gemm M,N,K [--gemm ...] --dtype DT "
        "--gpu ID [--top K] --plan [--out PLAN.csv] | tune --timed TIMED.csv | tune --plan --dtype DT --gpu ID [--out "
        "PLAN.csv] | tune --moe E,N,H,topk --dtype bf16|fp8|fp8-block --gpu ID [--tokens T,...] [--top K] [--out DIR]",
        "ranked GEMM tile configurations with predicted latency, waves, last-wave fill and the reason (wave tuner); "
        "--moe: fused-MoE kernel configurations per token count, --out DIR writing vLLM's configuration file; "
        "--plan with --gemm: each GEMM's first K (3) configurations with their custom options as a collector plan, to "
        "time on the GPU and keep the fastest; --timed: that measurement, each GEMM's fastest; --plan alone: the "
        "sparse sampling plan along wave boundaries for the collector",
        cmdTune,
        {QCommandLineOption("gemm", "GEMM shape (repeatable with --plan)", "M,N,K"),
         QCommandLineOption("dtype", "element type", "DT"), QCommandLineOption("gpu", "GPU id", "ID"),
         QCommandLineOption("top", "configurations to print (5; with --plan 3)", "K"),
         QCommandLineOption(
             "plan", "write the sampling plan instead; with --gemm: its top K as a collector plan, to time them"),
         QCommandLineOption("out", "plan CSV; with --moe: the folder for vLLM's configuration file", "PLAN.csv|DIR"),
         QCommandLineOption("moe", "fused MoE: experts, intermediate size per expert (vLLM's N), hidden size, topk",
                            "E,N,H,topk"),
         QCommandLineOption("tokens", "--moe: token counts (vLLM's tuning list, 1-4096)", "T,..."),
         QCommandLineOption("moe-efficiency",
                            "--moe: the fractions of the datasheet tensor (16-bit, 8-bit) and DRAM rates, instead of "
                            "the fitted ones (a held-out check)",
                            "T16,T8,DRAM"),
         QCommandLineOption("timed", "perfloom-collect's measurement of a --gemm ... --plan plan: each GEMM's fastest",
                            "TIMED.csv"),
         QCommandLineOption("max-waves", "wave boundaries in the plan (4)", "N"),
         QCommandLineOption("max-configs", "configurations in the plan (64)", "N")}}},
  };
  return table;
}

}  // namespace

QString usageText() {
  QString text = "perfloom " PERFLOOM_VERSION
                 " - how fast would this LLM workload be on that GPU?\n\n"
                 "Usage:\n"
                 "  perfloom [FILE...]            open the explorer (GUI)\n";
  // export-chart needs a QApplication, so main() runs it before the CLI (app/main.cpp); it is
  // listed here, in its alphabetical place, all the same.
  const QString exportChart =
      "  perfloom export-chart bottleneck|whatif|simulator|tuner [options] --out FILE.(png|svg|pdf)\n"
      "      the explorer's charts rendered headless (no display needed); perfloom export-chart --help lists the "
      "options of each view\n";
  bool exportChartListed = false;
  for (const auto& [name, cmd] : commands()) {
    if (!exportChartListed && name > "export-chart") {
      text += exportChart;
      exportChartListed = true;
    }
    text += "  " + cmd.synopsis + "\n      " + cmd.summary + "\n";
  }
  if (!exportChartListed) text += exportChart;
  text +=
      "\nOptions of every command:\n"
      "  --db PATH        the database (default: " +
      QString::fromStdString(storage::Database::default_path().string()) +
      ")\n"
      "  --json           one JSON document on stdout\n"
      "  --gpus-dir DIR   add or override GPUs with the perfloom-gpu/1 files of DIR (also $PERFLOOM_GPUS_DIR)\n"
      "  --calibration FILE  a calibration sweep measured on a GPU (perfloom-calibration/1, tools/collector):\n"
      "                   its measured rates replace the datasheet's in the learned model (target-measured\n"
      "                   tier); may be repeated (also $PERFLOOM_CALIBRATION, FILE[:FILE...])\n"
      "  -h, --help       this text\n"
      "  --version        the version\n";
  return text;
}

bool isCliInvocation(const QStringList& args) {
  if (args.isEmpty()) return false;
  const QString& first = args.front();
  if (commands().count(first) || first == "-h" || first == "--help" || first == "help" || first == "--version" ||
      first == "-v")
    return true;
  // `perfloom FILE...` opens the explorer on those files; a word that is neither a command nor an
  // existing path is a mistyped command, answered on the terminal rather than in a window.
  return !first.startsWith('-') && !QFileInfo::exists(first);
}

GpuDatabase loadGpuDatabase(const QString& extra_dir) {
  GpuDatabase db = GpuDatabase::builtin();
  QString dir = extra_dir.isEmpty() ? qEnvironmentVariable("PERFLOOM_GPUS_DIR") : extra_dir;
  if (!dir.isEmpty()) db.add_directory(dir.toStdString());
  return db;
}

void addCalibrations(GpuDatabase& db, const QStringList& files) {
  QStringList all = files;
  if (all.isEmpty()) {
    const QString env = qEnvironmentVariable("PERFLOOM_CALIBRATION");
    if (!env.isEmpty()) all = env.split(':', Qt::SkipEmptyParts);
  }
  for (const QString& f : all) {
    try {
      const std::string id = db.add_calibration(read_calibration_file(f.toStdString()));
      std::cerr << "perfloom: " << id << ": target-measured tier (calibration " << f.toStdString() << ")\n";
    } catch (const CalibrationError& e) {
      // A bad calibration costs accuracy, not the answer: the GPU keeps the cross-generation tier.
      std::cerr << "perfloom: warning: calibration not used: " << e.what()
                << "; that GPU stays on the cross-generation tier (datasheet rates)\n";
    }
  }
}

int runCli(const QStringList& args) {
  const QString first = args.value(0);
  if (first == "--version" || first == "-v") {
    std::cout << "perfloom " PERFLOOM_VERSION "\n";
    return 0;
  }
  if (first == "-h" || first == "--help" || first == "help") {
    std::cout << usageText().toStdString();
    return 0;
  }
  auto it = commands().find(first);
  if (it == commands().end()) {
    std::cerr << "perfloom: unknown command '" << first.toStdString()
              << "' (and no file of that name); perfloom --help lists the commands\n";
    return 2;
  }
  QCommandLineParser parser;
  parser.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
  QCommandLineOption dbOpt("db", "database", "PATH");
  QCommandLineOption jsonOpt("json", "JSON output");
  QCommandLineOption gpusDirOpt("gpus-dir", "extra GPU files", "DIR");
  QCommandLineOption calibrationOpt("calibration", "calibration measured on a GPU", "FILE");
  QCommandLineOption helpOpt(QStringList{"h", "help"}, "help");
  parser.addOptions({dbOpt, jsonOpt, gpusDirOpt, calibrationOpt, helpOpt});
  parser.addOptions(it->second.options);
  QStringList argv = args;
  argv.front() = "perfloom " + first;  // QCommandLineParser skips argv[0]
  if (!parser.parse(argv)) {
    std::cerr << "perfloom " << first.toStdString() << ": " << parser.errorText().toStdString() << "\n";
    return 2;
  }
  if (parser.isSet(helpOpt)) {
    std::cout << it->second.synopsis.toStdString() << "\n  " << it->second.summary.toStdString() << "\n";
    return 0;
  }
  try {
    CliContext ctx{parser.isSet(jsonOpt),
                   parser.isSet(dbOpt) ? std::filesystem::path(parser.value(dbOpt).toStdString())
                                       : storage::Database::default_path(),
                   loadGpuDatabase(parser.value(gpusDirOpt))};
    addCalibrations(ctx.gpus, parser.values(calibrationOpt));
    return it->second.run(ctx, parser);
  } catch (const std::exception& e) {
    std::cerr << "perfloom " << first.toStdString() << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace perfloom::app
