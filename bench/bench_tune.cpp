// Speed of a `perfloom tune` query with a bundled table (issue #8: "picks a near-optimal configuration in
// microseconds"): per GPU, COUNT random GEMMs per dtype the table fits (tools/tuner_sweep.h random_gemms, SEED),
// each answered REPEAT times as `perfloom tune --top 3` answers it (tune_gemm with the table), and the stages of
// that answer timed on their own: the candidates (query_candidates: the nearest shapes' winners and the latency
// model's best of the table's catalogue), their ranking (rank_with_table: the latency model, then the chooser's
// trees) and naming each of the first 3's cuBLASLt option (name_variants); beside it the same answer computed as before
// session 38 (query_candidates, then rank_with_table with the chooser on every candidate), and the chooser's trees
// alone on the whole list and on the kChooserRows it scores now. Prints the median, the 90th percentile and the largest
// per-query time of each, in microseconds, on one thread. Exits 1 where tune_gemm's whole ranking differs from
// rank_with_table(query_candidates) (it computes the same in one pass).
//   perfloom-bench-tune [--count N] [--seed S] [--repeat R] [GPU...]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/gpu_database.h"
#include "model/tuner/acceptance_model.h"
#include "model/tuner/tuner.h"
#include "tools/tuner_sweep.h"

using namespace perfloom;

namespace {

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

// Microseconds per call of f, the least over `repeat` calls (the query's own cost, not the machine's hiccups).
template <typename F>
double time_us(int repeat, F&& f) {
  double best = 1e300;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int count = 200, repeat = 3;
  unsigned seed = 4242;
  std::vector<std::string> ids;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--count" && i + 1 < argc)
      count = std::atoi(argv[++i]);
    else if (a == "--seed" && i + 1 < argc)
      seed = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    else if (a == "--repeat" && i + 1 < argc)
      repeat = std::atoi(argv[++i]);
    else if (a == "--help" || a == "-h" || (!a.empty() && a[0] == '-')) {
      std::fprintf(stderr, "usage: perfloom-bench-tune [--count N] [--seed S] [--repeat R] [GPU...]\n");
      return a[0] == '-' && a != "--help" && a != "-h" ? 2 : 0;
    } else
      ids.push_back(a);
  }
  if (count <= 0 || repeat <= 0) {
    std::fprintf(stderr, "perfloom-bench-tune: --count and --repeat must be positive\n");
    return 2;
  }
  if (ids.empty()) ids = tuner::bundled_tuner_gpus();
  const GpuDatabase gpus = GpuDatabase::builtin();
  int status = 0;
  for (const std::string& id : ids) {
    const GpuSpec* gpu = gpus.find(id);
    if (!gpu) {
      std::fprintf(stderr, "perfloom-bench-tune: unknown GPU '%s'\n", id.c_str());
      return 2;
    }
    const auto t_load = std::chrono::steady_clock::now();
    const tuner::TunerTable* table = tuner::bundled_tuner_table(*gpu);
    const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count();
    if (!table) {
      std::fprintf(stderr, "perfloom-bench-tune: %s has no bundled tuner table\n", id.c_str());
      return 2;
    }
    std::vector<double> total, before, candidates, ranking, variants, chooser_all, chooser_rows, acceptance;
    std::size_t ranked = 0, differ = 0;
    for (const tuner::GemmShape& shape : bench::random_gemms(bench::table_dtypes(*table), count, seed)) {
      total.push_back(time_us(repeat, [&] { ranked += tuner::tune_gemm(shape, *gpu, 3, table).ranked.size(); }));
      // The same answer as before session 38: the candidates, then their ranking with the chooser on every one.
      before.push_back(time_us(repeat, [&] {
        auto r =
            tuner::rank_with_table(*table, *gpu, shape, tuner::query_candidates(*table, *gpu, shape), false, SIZE_MAX);
        r.resize(std::min<std::size_t>(3, r.size()));
        for (auto& c : r) c.reason = tuner::describe_grid(c.grid);
        tuner::name_variants(*table, *gpu, shape, r);
        ranked += r.size();
      }));
      std::vector<TileConfig> c;
      candidates.push_back(time_us(repeat, [&] { c = tuner::query_candidates(*table, *gpu, shape); }));
      std::vector<tuner::RankedConfig> r;
      ranking.push_back(time_us(repeat, [&] { r = tuner::rank_with_table(*table, *gpu, shape, c, false); }));
      // The chooser's trees alone, on the whole list and on the rows it scores now.
      if (table->ranker.booster) {
        const HardwareRates hw = hardware_rates(*gpu, shape.dtype);
        std::vector<TileConfig> listed;
        std::vector<tuner::WaveFeatures> feats;
        std::vector<double> pred, score;
        for (const auto& rc : r) {
          listed.push_back(rc.config);
          feats.push_back(tuner::wave_features(shape, rc.config, hw, table->slots_by_cluster));
          pred.push_back(rc.pred_us);
          score.push_back(rc.score);
        }
        const auto rows = tuner::ranker_rows(shape, listed, feats, pred, score);
        const auto& booster = *table->ranker.booster;
        chooser_all.push_back(time_us(repeat, [&] { booster.predict(rows.data(), r.size(), tuner::kRankerCount); }));
        chooser_rows.push_back(time_us(repeat, [&] {
          booster.predict(rows.data(), std::min(r.size(), tuner::kChooserRows), tuner::kRankerCount);
        }));
        // The acceptance model's trees on the whole list (session 44: every configuration a query ranks).
        if (table->acceptance.booster)
          acceptance.push_back(
              time_us(repeat, [&] { tuner::refusal_probabilities(table->acceptance, shape, listed, feats); }));
      }
      // tune_gemm ranks in one pass what these two stages rank: the same list, the same order and latencies.
      const auto whole = tuner::tune_gemm(shape, *gpu, 1000, table).ranked;
      bool same = whole.size() == r.size();
      for (std::size_t i = 0; same && i < r.size(); ++i)
        same = whole[i].config == r[i].config && whole[i].pred_us == r[i].pred_us &&
               (whole[i].rank_score == r[i].rank_score ||
                (std::isnan(whole[i].rank_score) && std::isnan(r[i].rank_score)));
      differ += !same;
      r.resize(std::min<std::size_t>(3, r.size()));
      variants.push_back(time_us(repeat, [&] {
        auto named = r;
        tuner::name_variants(*table, *gpu, shape, named);
      }));
    }
    std::printf("%s: %zu GEMMs (seed %u, best of %d), table loaded in %.0f ms; per query, us: median / p90 / max\n",
                id.c_str(), total.size(), seed, repeat, load_ms);
    auto row = [](const char* what, const std::vector<double>& v) {
      std::printf("  %-44s %7.0f %7.0f %7.0f\n", what, quantile(v, 0.5), quantile(v, 0.9), quantile(v, 1.0));
    };
    row("before session 38 (two passes, chooser on all)", before);
    row("perfloom tune --top 3 (tune_gemm)", total);
    row("  candidates (query_candidates)", candidates);
    row("  ranking (rank_with_table)", ranking);
    row("  options of the first 3 (name_variants)", variants);
    row("chooser's trees on the whole list", chooser_all);
    row("chooser's trees on kChooserRows of it", chooser_rows);
    if (!acceptance.empty()) row("acceptance model's trees on the whole list", acceptance);
    if (ranked == 0) std::printf("  (no configuration ranked)\n");
    if (differ)
      std::printf("  tune_gemm's ranking differs from rank_with_table(query_candidates) at %zu GEMMs\n", differ);
    status |= differ ? 1 : 0;
  }
  return status;
}
