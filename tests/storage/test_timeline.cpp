// The timeline (storage/timeline.h): schema 2 -> 3, the torch importer writing each kernel's
// stream and every cpu_op, the window query, and the predicted timeline on another GPU.
#include <map>
#include <nlohmann/json.hpp>

#include "model/predictor.h"
#include "storage/schema.h"
#include "storage/timeline.h"
#include "test_importers_util.h"

using namespace perfloom;
using namespace perfloom::storage;
using namespace perfloom::storage::testing;

namespace {

// What a torch.profiler trace holds, counted from its JSON: kernels per stream, cpu_op events.
struct TraceCounts {
  std::map<int64_t, int> kernels_per_stream;
  int cpu_ops = 0;
};
TraceCounts count_events(const fs::path& gz) {
  TraceCounts c;
  const nlohmann::json doc = nlohmann::json::parse(gunzip(gz));
  for (const auto& e : doc.at("traceEvents")) {
    if (e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", "");
    if (cat == "kernel") ++c.kernels_per_stream[e.at("args").at("stream").get<int64_t>()];
    if (cat == "cpu_op") ++c.cpu_ops;
  }
  return c;
}

std::map<int64_t, int> streams_of(const Timeline& t) {
  std::map<int64_t, int> out;
  for (const auto& k : t.kernels) ++out[k.stream.value_or(-1)];
  return out;
}

void check_real_trace(const fs::path& path) {
  SCOPED_TRACE(path.string());
  const TraceCounts want = count_events(path);
  TempDir dir;
  Database db(dir / "p.db");
  KernelStore store(db);
  const ImportSummary sum = store.import_file(path, control());
  EXPECT_EQ(sum.ops, static_cast<uint64_t>(want.cpu_ops));
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM cpu_ops WHERE source_id = " + std::to_string(sum.source_id)),
            want.cpu_ops);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM kernels WHERE stream IS NULL"), 0);
  // Most kernels' launch call is known (cuda_runtime / cuda_driver events), and precedes the kernel.
  EXPECT_GT(scalar(db, "SELECT count(*) FROM kernels WHERE launch_us IS NOT NULL"), int64_t(sum.kernels * 9 / 10));
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM kernels WHERE launch_us > start_us"), 0);

  const Timeline t = load_timeline(db, sum.source_id);
  EXPECT_EQ(streams_of(t), want.kernels_per_stream);
  ASSERT_EQ(t.ops.size(), static_cast<std::size_t>(want.cpu_ops));
  // Depth is nesting: an op at depth d > 0 lies inside the nearest earlier op of depth d - 1 on its
  // thread, and the outermost ops of a thread do not overlap.
  std::map<int, const TimelineOp*> open;
  int nested = 0;
  for (const TimelineOp& o : t.ops) {
    if (o.depth > 0) {
      ++nested;
      const TimelineOp* parent = open[o.depth - 1];
      ASSERT_NE(parent, nullptr) << t.text(o.name);
      EXPECT_GE(o.start_us, parent->start_us) << t.text(o.name);
      EXPECT_LE(o.start_us + o.dur_us, parent->start_us + parent->dur_us + 0.01) << t.text(o.name);
    } else if (const TimelineOp* prev = open[0]) {
      EXPECT_GE(o.start_us, prev->start_us + prev->dur_us - 0.01) << t.text(o.name);
    }
    open[o.depth] = &o;
  }
  EXPECT_GT(nested, want.cpu_ops / 4);
  // Kernels name their launching op; families come along.
  std::size_t with_op = 0;
  for (const auto& k : t.kernels) with_op += !t.text(k.launched_by).empty();
  EXPECT_GT(with_op, t.kernels.size() * 9 / 10);

  // A window holds what overlaps it, fewer than the whole.
  const double mid = (t.begin_us + t.end_us) / 2, quarter = (t.end_us - t.begin_us) / 4;
  const Timeline w = load_timeline(db, sum.source_id, mid - quarter / 2, mid + quarter / 2);
  EXPECT_LT(w.kernels.size() + w.ops.size(), t.kernels.size() + t.ops.size());
  EXPECT_GT(w.kernels.size() + w.ops.size(), 0u);
  for (const auto& k : w.kernels) EXPECT_TRUE(k.start_us <= mid + quarter / 2 && k.start_us + k.dur_us >= mid - quarter / 2);
  EXPECT_DOUBLE_EQ(w.begin_us, t.begin_us);  // the extent is the source's, whatever the window
  EXPECT_DOUBLE_EQ(w.end_us, t.end_us);
}

std::string cpu_op(const std::string& name, int64_t ext, double ts, double dur, const std::string& dims) {
  return R"({"ph": "X", "cat": "cpu_op", "name": ")" + name + R"(", "pid": 776, "tid": 776, "ts": )" +
         std::to_string(ts) + ", \"dur\": " + std::to_string(dur) + R"(, "args": {"External id": )" +
         std::to_string(ext) + R"(, "Input Dims": )" + dims + R"(, "Input type": ["c10::BFloat16", "c10::BFloat16"]}})";
}
std::string gemm_kernel(int64_t ext, int64_t corr, double ts, double dur) {
  return R"({"ph": "X", "cat": "kernel", "name": "nvjet_sm90_tst_128x256_64x4_2x1_v_bz_TNN", "pid": 0, "tid": 7, "ts": )" +
         std::to_string(ts) + ", \"dur\": " + std::to_string(dur) +
         R"(, "args": {"device": 0, "stream": 7, "grid": [32, 16, 1], "block": [384, 1, 1], "correlation": )" +
         std::to_string(corr) + R"(, "External id": )" + std::to_string(ext) + "}}";
}

}  // namespace

TEST(Timeline, MigratesAVersion2DatabaseKeepingItsKernels) {
  TempDir dir;
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "old.db").c_str(), &raw), SQLITE_OK);
    for (int step : {0, 1})
      ASSERT_EQ(sqlite3_exec(raw, schema_migrations().at(step).c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw,
                           "INSERT INTO sources (id, path, format, content_hash, bytes, kernel_count) VALUES "
                           "(7, 'a.json', 'torch-trace', 'abc', 10, 1);"
                           "INSERT INTO kernels (id, source_id, seq, name, start_us) VALUES (70, 7, 0, 'k', 100.5);"
                           "INSERT INTO measurements (kernel_id, latency_us, method) VALUES (70, 2.5, 'torch.profiler');"
                           "PRAGMA user_version = 2;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  Database db(dir / "old.db");
  EXPECT_EQ(db.schema_version(), 3);
  KernelStore store(db);
  auto ks = store.kernels(7);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_FALSE(ks[0].stream.has_value());  // the old file did not record it
  EXPECT_FALSE(ks[0].launch_us.has_value());
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM cpu_ops"), 0);
  const Timeline t = load_timeline(db, 7);
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_FALSE(t.kernels[0].stream.has_value());
  EXPECT_DOUBLE_EQ(t.kernels[0].start_us, 100.5);
  EXPECT_DOUBLE_EQ(t.kernels[0].dur_us, 2.5);
  EXPECT_TRUE(t.ops.empty());
  // A new import into the migrated file records streams and ops; removing a source removes its ops.
  const ImportSummary sum = store.import_file(source_dir() / "resources/samples/h100-sxm-llama-trace.json.gz", control());
  EXPECT_GT(scalar(db, "SELECT count(*) FROM cpu_ops"), 0);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM kernels WHERE stream = 7"), static_cast<int64_t>(sum.kernels));
  store.remove_source(sum.source_id);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM cpu_ops"), 0);
  EXPECT_THROW(load_timeline(db, 999), std::invalid_argument);
}

TEST(Timeline, EagerQwenTraceHasItsStreamsAndEveryCpuOp) {
  check_real_trace(source_dir() / "tests/data/traces/qwen2.5-1.5b_eager-prefill_b4s1024.json.gz");
}

TEST(Timeline, BundledSampleTraceHasItsStreamsAndEveryCpuOp) {
  check_real_trace(source_dir() / "resources/samples/h100-sxm-llama-trace.json.gz");
}

TEST(Timeline, FailedImportLeavesNoOps) {
  TempDir dir;
  // Ops, then a kernel event the importer refuses: the transaction takes the ops with it.
  write_file(dir / "bad.json",
             R"({"traceEvents": [)" + cpu_op("aten::mm", 1, 100, 50, "[[512, 2048], [2048, 3072]]") + "," +
                 R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 120, "dur": -1, "args": {}}]})");
  Database db(dir / "p.db");
  KernelStore store(db);
  EXPECT_THROW(store.import_file(dir / "bad.json", control()), ImportError);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM cpu_ops"), 0);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM sources"), 0);
}

TEST(Timeline, ReplayKeepsOrderAndGapsPerStreamAndNeverStartsBeforeTheLaunch) {
  auto kern = [](int64_t seq, int64_t stream, double start, double dur, std::optional<double> launch = {}) {
    TimelineKernel k;
    k.seq = seq;
    k.stream = stream;
    k.start_us = start;
    k.dur_us = dur;
    k.launch_us = launch;
    return k;
  };
  // Stream 1: back to back, then a 5 us gap; launched long before (the GPU was the bottleneck).
  // Stream 2: overlaps stream 1 and is replayed on its own.
  const std::vector<TimelineKernel> ks = {kern(0, 1, 0, 10, -50.0), kern(1, 1, 10, 10, -40.0), kern(2, 1, 25, 10, 1.0),
                                          kern(3, 2, 5, 4), kern(4, 2, 12, 4)};
  // Twice as slow: each start moves by the predicted durations before it, gaps kept.
  auto slow = replay_streams(ks, {20, 20, 20, 8, 8});
  EXPECT_DOUBLE_EQ(slow[0], 0);
  EXPECT_DOUBLE_EQ(slow[1], 20);
  EXPECT_DOUBLE_EQ(slow[2], 45);  // 20 + 20 + the 5 us gap
  EXPECT_DOUBLE_EQ(slow[3], 5);
  EXPECT_DOUBLE_EQ(slow[4], 5 + 8 + 3);
  // Twice as fast: kernels launched early move up; one without a known launch stays at its start.
  auto fast = replay_streams(ks, {5, 5, 5, 2, 2});
  EXPECT_DOUBLE_EQ(fast[1], 5);
  EXPECT_DOUBLE_EQ(fast[2], 15);  // 5 + 5 + 5, after its launch at 1
  EXPECT_DOUBLE_EQ(fast[4], 12);  // no launch recorded: not before its measured start
  EXPECT_THROW(replay_streams(ks, {1, 2}), std::invalid_argument);
}

TEST(Timeline, PredictedSecondKernelStartsAfterTheFirstsPredictedEndPlusTheGap) {
  TempDir dir;
  const std::string dims = "[[4096, 4096], [4096, 4096]]";
  // Two GEMMs on stream 7, the second 30 us after the first ends.
  write_file(dir / "two.json",
             R"({"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], "traceEvents": [)" +
                 cpu_op("aten::mm", 1, 1000, 20, dims) + "," + cpu_op("aten::mm", 2, 1400, 20, dims) + "," +
                 gemm_kernel(1, 11, 1010, 200) + "," + gemm_kernel(2, 12, 1240, 200) + "]}");
  Database db(dir / "p.db");
  KernelStore store(db);
  const int64_t src = store.import_file(dir / "two.json", control()).source_id;
  RooflinePredictor roofline;
  const GpuSpec& h100 = gpus().get("h100-sxm");
  const GpuSpec& a100 = gpus().get("a100-sxm-80gb");
  const PredictedTimeline p = predict_timeline(store, src, h100, a100, roofline);
  EXPECT_EQ(p.gpu_id, "a100-sxm-80gb");
  const TraceWhatIf w = run_trace_whatif(store, src, h100, {&a100}, roofline);
  ASSERT_EQ(w.targets.at(0).cells.size(), 2u);
  EXPECT_NE(w.targets[0].cells[0].method, WhatIfMethod::error) << w.targets[0].cells[0].error;
  EXPECT_EQ(p.without_prediction, 0u);
  ASSERT_EQ(p.timeline.kernels.size(), 2u);
  const TimelineKernel& a = p.timeline.kernels[0];
  const TimelineKernel& b = p.timeline.kernels[1];
  EXPECT_DOUBLE_EQ(a.start_us, 1010);
  EXPECT_GT(a.dur_us, 300);  // an A100 has a third of an H100's bf16 tensor rate
  EXPECT_DOUBLE_EQ(b.start_us, a.start_us + a.dur_us + 30);
  EXPECT_DOUBLE_EQ(a.dur_us, w.targets[0].cells[0].pred_us);
  EXPECT_DOUBLE_EQ(p.measured_span_us, 430);
  EXPECT_DOUBLE_EQ(p.predicted_span_us, 2 * a.dur_us + 30);
  ASSERT_EQ(p.timeline.ops.size(), 2u);  // the CPU side stays as measured
  EXPECT_DOUBLE_EQ(p.timeline.ops[1].start_us, 1400);
}
