// The kernel store: one transaction per import, duplicates refused by content hash, kernels read
// back as imported, predictions cached per (source, GPU, model version), schema 1 -> 2.
#include <sqlite3.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>
#include <nlohmann/json.hpp>

#include "storage/importers/content_hash.h"
#include "storage/kernel_store.h"
#include "storage/schema.h"
#include "test_importers_util.h"

using namespace perfloom;
using namespace perfloom::storage;
using namespace perfloom::storage::testing;

namespace {

// An importer that hands over `n` kernels and then fails (or not).
class FailingImporter : public Importer {
 public:
  FailingImporter(int n, bool fail) : n_(n), fail_(fail) {}
  std::string_view format() const override { return "test"; }
  std::string_view description() const override { return "test"; }
  int sniff(const SniffInput&) const override { return 0; }
  void import(const fs::path& path, ImportSink& sink, const ImportControl&) const override {
    for (int i = 0; i < n_; ++i) {
      ImportedKernel k;
      k.seq = i;
      k.desc.name = "k" + std::to_string(i);
      k.measurement = ImportedMeasurement{1.0 + i, "test"};
      sink.kernel(std::move(k));
    }
    sink.gpu("h100-sxm", "NVIDIA H100 80GB HBM3");
    if (fail_) throw ImportError(path.string(), "row " + std::to_string(n_), "broken on purpose");
  }

 private:
  int n_;
  bool fail_;
};

}  // namespace

TEST(KernelStore, ImportWritesSourceKernelsAndMeasurementsAndReadsThemBack) {
  TempDir dir;
  Database db(dir / "p.db");
  KernelStore store(db);
  ImportSummary sum = store.import_file(sample_trace("h100-sxm"), control());
  EXPECT_EQ(sum.format, "torch-trace");
  EXPECT_EQ(sum.kernels, 155u);
  EXPECT_EQ(sum.gpu_id, "h100-sxm");
  EXPECT_EQ(sum.content_hash.size(), 64u);
  EXPECT_EQ(sum.content_hash, sha256_bytes(gunzip(sample_trace("h100-sxm"))));  // of the trace, inflated
  EXPECT_EQ(sum.bytes, fs::file_size(sample_trace("h100-sxm")));

  auto src = store.source(sum.source_id);
  ASSERT_TRUE(src.has_value());
  EXPECT_EQ(src->format, "torch-trace");
  EXPECT_EQ(src->gpu_id, "h100-sxm");
  EXPECT_EQ(src->gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(src->kernel_count, 155);
  EXPECT_TRUE(fs::path(src->path).is_absolute());
  EXPECT_FALSE(src->imported_at.empty());
  EXPECT_EQ(store.sources().size(), 1u);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM measurements"), 155);

  auto kernels = store.kernels(sum.source_id);
  ASSERT_EQ(kernels.size(), 155u);
  for (std::size_t i = 0; i < kernels.size(); ++i) EXPECT_EQ(kernels[i].seq, static_cast<int64_t>(i));
  const StoredKernel* g = nullptr;
  for (const auto& k : kernels)
    if (k.desc.name.rfind("nvjet_sm90_tst_96x128", 0) == 0) {
      g = &k;
      break;
    }
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->family, Family::gemm);
  EXPECT_EQ(g->desc.op, Op::gemm);
  EXPECT_TRUE(g->dtype_known);
  EXPECT_EQ(g->desc.dtype, Dtype::bf16);
  EXPECT_TRUE(g->shape_known);
  EXPECT_EQ(g->desc.shape.M, 512);
  EXPECT_EQ(g->desc.shape.N, 3072);
  EXPECT_EQ(g->desc.shape.K, 2048);
  ASSERT_TRUE(g->desc.launch.has_value());
  EXPECT_EQ(g->desc.launch->grid, (std::array<int64_t, 3>{2, 64, 1}));
  EXPECT_EQ(g->desc.launch->shared_memory_bytes, 217356);
  ASSERT_TRUE(g->desc.tile.has_value());
  EXPECT_GT(g->desc.tile->tile_m, 0);
  EXPECT_EQ(g->launched_by, "aten::mm");
  EXPECT_EQ(g->library, "cublas");
  ASSERT_EQ(g->measurements.size(), 1u);
  EXPECT_DOUBLE_EQ(g->measurements[0].latency_us, 11.52);
  EXPECT_EQ(g->measurements[0].method, "torch.profiler");
}

TEST(KernelStore, SameContentTwiceIsRefusedEvenUnderAnotherName) {
  TempDir dir;
  Database db(dir / "p.db");
  KernelStore store(db);
  auto first = store.import_file(sample_trace("h200"), control());
  fs::copy_file(sample_trace("h200"), dir / "renamed.json.gz");
  const std::string before = snapshot(db);
  try {
    store.import_file(dir / "renamed.json.gz", control());
    FAIL() << "imported twice";
  } catch (const AlreadyImported& e) {
    EXPECT_EQ(e.source_id(), first.source_id);
    std::string m = e.what();
    EXPECT_TRUE(contains(m, "renamed.json.gz: already imported as source " + std::to_string(first.source_id) + " on "))
        << m;
    EXPECT_TRUE(contains(m, "data/h200/trace.json.gz")) << m;
  }
  EXPECT_TRUE(snapshot(db) == before);
}

namespace {

void write_gz_level(const fs::path& p, const std::string& data, int level) {
  gzFile gz = gzopen(p.c_str(), ("wb" + std::to_string(level)).c_str());
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, data.data(), static_cast<unsigned>(data.size())), static_cast<int>(data.size()));
  gzclose(gz);
}

// Imports `second` after `first` and expects it refused as a duplicate of `first`'s source, the
// database unchanged.
void expect_duplicate(const fs::path& first, const fs::path& second) {
  TempDir dir;
  Database db(dir / "p.db");
  KernelStore store(db);
  const auto a = store.import_file(first, control());
  const std::string before = snapshot(db);
  try {
    store.import_file(second, control());
    ADD_FAILURE() << second << " imported again after " << first;
  } catch (const AlreadyImported& e) {
    EXPECT_EQ(e.source_id(), a.source_id);
    const std::string m = e.what();
    EXPECT_TRUE(contains(m, second.string() + ": already imported as source " + std::to_string(a.source_id) + " on "))
        << m;
  }
  EXPECT_TRUE(snapshot(db) == before);
}

}  // namespace

// Issue #55: the duplicate check hashes the content as the importer reads it, not the gzip bytes.
TEST(KernelStore, ATraceAndItsGzipAreOneSource) {
  TempDir dir;
  const std::string json = gunzip(sample_trace("h200"));
  write_file(dir / "t.json", json);
  write_gz_level(dir / "t1.json.gz", json, 1);
  write_gz_level(dir / "t9.json.gz", json, 9);
  ASSERT_NE(sha256_file(dir / "t1.json.gz"), sha256_file(dir / "t9.json.gz"));
  expect_duplicate(dir / "t.json", dir / "t9.json.gz");    // plain, then gzip
  expect_duplicate(sample_trace("h200"), dir / "t.json");  // gzip, then plain
  expect_duplicate(dir / "t1.json.gz", dir / "t9.json.gz");  // two compression levels
  expect_duplicate(dir / "t9.json.gz", dir / "t9.json.gz");  // the same gzip twice

  // One byte changed (the newline before the JSON's closing brace becomes a space): new content.
  std::string changed = json;
  ASSERT_EQ(changed.substr(changed.size() - 2), "\n}");
  changed[changed.size() - 2] = ' ';
  write_gz_level(dir / "changed.json.gz", changed, 9);
  Database db(dir / "p.db");
  KernelStore store(db);
  const auto a = store.import_file(dir / "t.json", control());
  const auto b = store.import_file(dir / "changed.json.gz", control());
  EXPECT_NE(a.source_id, b.source_id);
  EXPECT_NE(a.content_hash, b.content_hash);
  EXPECT_EQ(b.kernels, a.kernels);
  EXPECT_EQ(store.sources().size(), 2u);
}

// A database written before issue #55 holds a gzip source under the hash of its compressed bytes:
// the same file is still recognised.
TEST(KernelStore, ASourceHashedAsStoredBeforeIsStillADuplicate) {
  TempDir dir;
  Database db(dir / "p.db");
  KernelStore store(db);
  const auto a = store.import_file(sample_trace("h200"), control());
  db.exec("UPDATE sources SET content_hash = '" + sha256_file(sample_trace("h200")) + "'");
  const std::string before = snapshot(db);
  try {
    store.import_file(sample_trace("h200"), control());
    ADD_FAILURE() << "imported twice";
  } catch (const AlreadyImported& e) {
    EXPECT_EQ(e.source_id(), a.source_id);
  }
  EXPECT_TRUE(snapshot(db) == before);
}

TEST(KernelStore, AFailingImportWritesNothing) {
  TempDir dir;
  Database db(dir / "p.db");
  KernelStore store(db);
  store.import_file(sample_trace("h100-sxm"), control());
  const std::string before = snapshot(db);
  write_file(dir / "x.bin", "anything");
  FailingImporter failing(5000, true);  // past several writer batches
  EXPECT_THROW(store.import_with(failing, dir / "x.bin", control()), ImportError);
  EXPECT_TRUE(snapshot(db) == before);
  // And the same importer succeeding writes everything.
  FailingImporter ok(5000, false);
  auto sum = store.import_with(ok, dir / "x.bin", control());
  EXPECT_EQ(sum.kernels, 5000u);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM kernels WHERE source_id = " + std::to_string(sum.source_id)), 5000);
}

TEST(KernelStore, PredictionsAreCachedPerSourceGpuAndModelVersion) {
  TempDir dir;
  Database db(dir / "p.db");
  KernelStore store(db);
  auto a = store.import_file(sample_trace("h100-sxm"), control());
  auto b = store.import_file(sample_trace("h200"), control());
  auto ka = store.kernels(a.source_id);
  EXPECT_FALSE(store.has_predictions(a.source_id, "h200", "v1"));
  EXPECT_TRUE(store.predictions(a.source_id, "h200", "v1").empty());

  std::vector<CachedPrediction> preds;
  for (const auto& k : ka) preds.push_back({k.id, 2.0 * static_cast<double>(k.seq + 1), 1.0, 3.0, 0.5, "dram"});
  store.put_predictions(a.source_id, "h200", "v1", preds);
  EXPECT_TRUE(store.has_predictions(a.source_id, "h200", "v1"));
  EXPECT_FALSE(store.has_predictions(a.source_id, "h200", "v2"));
  EXPECT_FALSE(store.has_predictions(b.source_id, "h200", "v1"));
  auto back = store.predictions(a.source_id, "h200", "v1");
  ASSERT_EQ(back.size(), ka.size());
  EXPECT_EQ(back[3].kernel_id, ka[3].id);
  EXPECT_DOUBLE_EQ(back[3].pred_us, 8.0);
  EXPECT_EQ(back[3].bound, "dram");
  ASSERT_TRUE(back[3].ceiling_us.has_value());

  // Re-predicting replaces; another model version sits beside.
  preds[3].pred_us = 99;
  store.put_predictions(a.source_id, "h200", "v1", {preds[3]});
  store.put_predictions(a.source_id, "h200", "v2", {preds[0]});
  EXPECT_DOUBLE_EQ(store.predictions(a.source_id, "h200", "v1")[3].pred_us, 99);
  EXPECT_EQ(store.predictions(a.source_id, "h200", "v2").size(), 1u);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM predictions"), static_cast<int64_t>(ka.size()) + 1);

  // A kernel of another source is refused, and nothing of that call is written.
  auto kb = store.kernels(b.source_id);
  EXPECT_THROW(store.put_predictions(a.source_id, "h100-sxm", "v1", {{ka[0].id, 1}, {kb[0].id, 1}}), DatabaseError);
  EXPECT_FALSE(store.has_predictions(a.source_id, "h100-sxm", "v1"));

  // The views' index is used for (source, GPU, model version).
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db.handle(),
                     "EXPLAIN QUERY PLAN SELECT * FROM predictions WHERE source_id = 1 AND gpu_id = 'h200' AND "
                     "model_version = 'v1'",
                     -1, &st, nullptr);
  std::string plan;
  while (sqlite3_step(st) == SQLITE_ROW) plan += reinterpret_cast<const char*>(sqlite3_column_text(st, 3));
  sqlite3_finalize(st);
  EXPECT_TRUE(contains(plan, "predictions_source")) << plan;

  // Removing a source removes its kernels, measurements and predictions.
  store.remove_source(a.source_id);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM predictions"), 0);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM kernels WHERE source_id = " + std::to_string(a.source_id)), 0);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM measurements"), 155);
}

TEST(KernelStore, MigratesAVersion1DatabaseAndKeepsItsData) {
  TempDir dir;
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "old.db").c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, schema_migrations().at(0).c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(
                  raw,
                  "INSERT INTO sources (id, path, format, content_hash, bytes) VALUES (7, 'a.json', 'torch-trace', "
                  "'abc', 10);"
                  "INSERT INTO kernels (id, source_id, seq, name) VALUES (70, 7, 0, 'k');"
                  "INSERT INTO predictions (kernel_id, gpu_id, model_version, pred_us) VALUES (70, 'h200', 'v0', 3.5);"
                  "PRAGMA user_version = 1;",
                  nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  Database db(dir / "old.db");
  EXPECT_EQ(db.schema_version(), Database::kSchemaVersion);
  KernelStore store(db);
  auto p = store.predictions(7, "h200", "v0");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_DOUBLE_EQ(p[0].pred_us, 3.5);
  EXPECT_EQ(store.kernels(7).size(), 1u);
  EXPECT_EQ(store.source(7)->kernel_count, 0);
}

TEST(KernelStore, CollectorCsvKeepsItsEnvironmentAsProvenance) {
  TempDir dir;
  Database db(dir / "p.db");
  KernelStore store(db);
  auto sum = store.import_file(source_dir() / "data/h200/attention.csv.gz", control());
  EXPECT_EQ(sum.format, "collector-csv");
  EXPECT_GT(sum.kernels, 100u);
  EXPECT_EQ(sum.gpu_id, "h200");
  auto src = store.source(sum.source_id);
  auto env = nlohmann::json::parse(src->provenance);
  EXPECT_EQ(env.at("format"), "perfloom-collector/1");
  EXPECT_EQ(env.at("sweep"), "attention");
  auto ks = store.kernels(sum.source_id);
  EXPECT_EQ(ks[0].family, Family::attention);
  EXPECT_TRUE(ks[0].shape_known);
  EXPECT_EQ(ks[0].measurements.at(0).gpu_id, "h200");
  EXPECT_EQ(ks[0].measurements.at(0).method.rfind("collector", 0), 0u);
}

// Version 2 of perfloom-latency-probe (tools/collector/latency_probe.cu) writes each rotary row's
// head layout in the Hq, Hkv and D columns; its output on our H200 (tests/data/latency_probe_v2_h200.csv)
// is not training data but must read back as the kernels it timed.
TEST(KernelStore, LatencyProbeVersion2ReadsBackWithItsRotaryHeadLayouts) {
  TempDir dir;
  Database db(dir / "p.db");
  KernelStore store(db);
  auto sum = store.import_file(source_dir() / "tests/data/latency_probe_v2_h200.csv", control());
  EXPECT_EQ(sum.format, "collector-csv");
  EXPECT_EQ(sum.kernels, 390u);
  EXPECT_EQ(sum.gpu_id, "h200");
  std::map<Op, int> per_op;
  bool saw_gqa = false;
  for (const auto& k : store.kernels(sum.source_id)) {
    ++per_op[k.desc.op];
    EXPECT_TRUE(k.shape_known) << k.desc.name;
    if (k.desc.op != Op::rotary) continue;
    EXPECT_EQ(k.family, Family::elementwise);
    EXPECT_EQ(k.desc.shape.D, 128);
    EXPECT_EQ(k.desc.shape.Hq % k.desc.shape.Hkv, 0);
    EXPECT_NE(k.desc.name.find("vllm2023_rotary_embedding_kernel"), std::string::npos) << k.desc.name;
    saw_gqa = saw_gqa || (k.desc.shape.Hq == 64 && k.desc.shape.Hkv == 8);
  }
  EXPECT_EQ(per_op[Op::rmsnorm], 68);
  EXPECT_EQ(per_op[Op::silu_mul], 135);
  EXPECT_EQ(per_op[Op::rotary], 119);
  EXPECT_EQ(per_op[Op::embedding], 68);
  EXPECT_TRUE(saw_gqa) << "Llama-2-70B's 64 query heads over 8 KV heads";
}

TEST(KernelStore, PublicDatasetFileIsTrainingDataWithProvenance) {
  TempDir dir;
  Database db(dir / "p.db");
  KernelStore store(db);
  const fs::path file = source_dir() / "data/public/vidur/data/profiling/compute/h100/microsoft/phi-2/mlp.csv.gz";
  auto sum = store.import_file(file, control());
  EXPECT_EQ(sum.format, "public-dataset");
  EXPECT_GT(sum.kernels, 100u);
  EXPECT_EQ(sum.gpu_id, "h100-sxm") << "Vidur's h100 folder";
  auto src = store.source(sum.source_id);
  EXPECT_TRUE(contains(src->provenance, "microsoft/vidur")) << src->provenance;
  EXPECT_TRUE(contains(src->provenance, "phi-2/mlp.csv")) << src->provenance;
  int64_t with_method =
      scalar(db, "SELECT count(*) FROM measurements WHERE method LIKE 'vidur/%' AND gpu_id IS NOT NULL");
  EXPECT_EQ(with_method, static_cast<int64_t>(sum.kernels));
}

TEST(KernelStore, ActivationQuantisedGemmsComeBackMarked) {
  // aiconfigurator's fp8 GEMM rows time the framework's fp8 linear (activation quantisation
  // included): the mark survives the store, which keeps it in the measurement's note.
  TempDir dir;
  Database db(dir / "q.db");
  KernelStore store(db);
  const fs::path file = source_dir() /
                        "data/public/aiconfigurator/aic-core/src/aiconfigurator_core/systems/data/h100_sxm/gemm/sglang/"
                        "0.5.10/gemm_perf.csv.gz";
  auto sum = store.import_file(file, control());
  std::size_t fp8 = 0, bf16 = 0;
  for (const auto& k : store.kernels(sum.source_id)) {
    EXPECT_EQ(k.desc.act_quant, k.desc.dtype == Dtype::fp8e4m3) << kernel_key(k.desc);
    ++(k.desc.dtype == Dtype::fp8e4m3 ? fp8 : bf16);
  }
  EXPECT_GT(fp8, 0u);
  EXPECT_GT(bf16, 0u);
}

TEST(KernelStore, ShapeAndTileTextRoundTrip) {
  Shape s;
  s.B = 2;
  s.S = 256;
  s.Hq = 32;
  s.Hkv = 8;
  s.D = 128;
  s.causal = false;
  s.seqlens = {100, 156};
  std::string j = shape_to_json(s);
  EXPECT_EQ(j, "{\"B\":2,\"S\":256,\"Hq\":32,\"Hkv\":8,\"D\":128,\"seqlens\":[100,156],\"causal\":false}");
  Shape back = shape_from_json(j);
  EXPECT_EQ(back.Hkv, 8);
  EXPECT_EQ(back.seqlens, s.seqlens);
  EXPECT_FALSE(back.causal);
  EXPECT_EQ(shape_to_json(Shape{}), "{}");
  TileConfig t{128, 256, 64, 2, 1, 4, 2, true};
  EXPECT_EQ(tile_from_json(tile_to_json(t)), t);
  EXPECT_FALSE(tile_from_json("not json").has_value());
}

// Issue #55: an import parses into a staging database and holds the database's write lock only to
// copy the parsed rows in, so another connection writes while it parses (here: from inside the
// collector importer's progress report, between two of its files) with a 50 ms busy timeout.
TEST(KernelStore, AnotherConnectionWritesWhileAnImportParses) {
  TempDir dir;
  Database db(dir / "p.db");
  KernelStore store(db);
  Database other(dir / "p.db");
  other.set_busy_timeout_ms(50);
  const fs::path folder = dir / "sweep";
  fs::create_directories(folder);
  for (const char* f : {"gemm.csv", "attention.csv"})
    fs::copy_file(source_dir() / "tests/fuzz/seeds/collector_csv" / f, folder / f);
  ImportControl c = control();
  int writes = 0;
  std::string error;
  c.progress = [&](const ImportProgress& p) {
    if (p.stage.rfind("reading ", 0) != 0) return;
    try {
      other.exec("INSERT INTO sources (path, format, content_hash, bytes) VALUES ('x', 'test', 'w" +
                 std::to_string(writes) + "', 0)");
      ++writes;
    } catch (const DatabaseError& e) {
      error = e.what();
    }
  };
  const auto sum = store.import_file(folder, c);
  EXPECT_EQ(error, "");
  EXPECT_EQ(writes, 2);  // one per file, both while the import was parsing
  EXPECT_GT(sum.kernels, 0u);
  // The staged rows landed under the import's source, after the other connection's.
  const auto sources = store.sources();
  ASSERT_EQ(sources.size(), 3u);
  EXPECT_EQ(sources.back().id, sum.source_id);
  EXPECT_EQ(sources.back().kernel_count, static_cast<int64_t>(sum.kernels));
  std::size_t visited = 0;
  store.visit_kernels(sum.source_id, [&](StoredKernel&& k) {
    ++visited;
    EXPECT_EQ(k.source_id, sum.source_id);
    EXPECT_EQ(k.measurements.size(), 1u);
  });
  EXPECT_EQ(visited, sum.kernels);
}

// Issue #55: an import waits for another connection's write lock (another import copying) instead of
// failing after the busy timeout, says so in its progress, and can be cancelled while it waits,
// leaving the database as it was.
TEST(KernelStore, AnImportWaitsForAnotherWritersLockAndCanBeCancelledMeanwhile) {
  TempDir dir;
  Database db(dir / "p.db");
  KernelStore store(db);
  Database other(dir / "p.db");
  std::atomic<bool> held{false};
  auto hold = [&](int ms) {
    return std::thread([&, ms] {
      other.exec("BEGIN IMMEDIATE");
      other.exec("INSERT INTO sources (path, format, content_hash, bytes) VALUES ('x', 'test', 'held', 0)");
      held = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      other.exec("ROLLBACK");
      held = false;
    });
  };
  std::thread holder = hold(500);
  while (!held) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // A plain write with a short timeout fails as imports did after 5 s...
  db.set_busy_timeout_ms(50);
  try {
    db.exec("BEGIN IMMEDIATE");
    ADD_FAILURE() << "took the write lock another connection holds";
  } catch (const DatabaseError& e) {
    EXPECT_EQ(e.sqlite_code(), SQLITE_BUSY) << e.what();
  }
  // ...an import waits for the lock and then imports.
  ImportControl c = control();
  std::vector<std::string> stages;
  c.progress = [&](const ImportProgress& p) { stages.push_back(p.stage); };
  const auto t0 = std::chrono::steady_clock::now();
  const auto sum = store.import_file(sample_trace("h200"), c);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  holder.join();
  EXPECT_EQ(sum.kernels, 155u);
  EXPECT_GT(secs, 0.2);
  EXPECT_NE(std::find(stages.begin(), stages.end(), "waiting for another import to finish"), stages.end());

  // Cancelled while waiting: nothing written.
  const std::string before = snapshot(db);
  std::thread long_holder = hold(1200);
  while (!held) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::atomic<bool> cancel{false};
  ImportControl cc = control();
  cc.cancel = &cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_THROW(store.import_file(sample_trace("h100-sxm"), cc), ImportCancelled);
  // Back before the holder lets go (at 1.2 s): the cancel ended the wait, not the lock's release.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count(), 1.0);
  canceller.join();
  long_holder.join();
  EXPECT_TRUE(snapshot(db) == before);
}
