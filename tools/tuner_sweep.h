#pragma once
// Reads a collector tile-configuration sweep (data/<gpu>/tiles.csv, FORMAT.md) or its
// default-heuristic GEMM file (gemm.csv) into the tuner's samples. Shared by perfloom-tuner-fit,
// perfloom-tuner-eval and perfloom-bench-tune. Orientation: the CSV's `tile` and `cluster` are cuBLASLt's (first
// number along N); TunerSample holds perfloom's (tile_m along M).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "model/compressed_text.h"
#include "model/tuner/acceptance_model.h"
#include "model/tuner/tuner_fit.h"
#include "model/tuner/variant_model.h"
#include "storage/csv_reader.h"

namespace perfloom::bench {

struct SweepRow {
  tuner::TunerSample sample;
  bool modelled = false;  // an nvjet kernel with a known tile: what the wave model describes
  int algo_id = -1;
  int reps = 0;
  std::string kernel;  // the longest kernel's name as the collector wrote it (first 80 chars)
  std::string source;
  int file = 0;  // read_exhaustive: index into Sweep::files of the file the row came from (0: tiles.csv)
};

struct Sweep {
  std::map<std::string, std::string> environment;  // the `# key=value` lines (read_exhaustive: tiles.csv's)
  std::vector<SweepRow> rows;
  // read_exhaustive only: the files read, in order (paths relative to the GPU's folder), per file the
  // shapes whose rows were kept, and the shapes (with their rows) dropped because an earlier file had them.
  std::vector<std::string> files;
  std::vector<std::size_t> file_shapes;
  std::size_t duplicate_shapes = 0, duplicate_rows = 0;
};

namespace detail {
inline std::vector<int> dims(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, 'x')) {
    auto v = storage::parse_int(part);
    if (!v) return {};
    out.push_back(static_cast<int>(*v));
  }
  return out;
}
}  // namespace detail

// The text of a file, inflated where it is gzip-compressed (by content, model/compressed_text.h).
// Throws std::runtime_error naming the file when it cannot be opened or is damaged gzip.
inline std::string read_text(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error(path + ": cannot be opened");
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return gunzip_if_compressed(bytes.str(), path);
}

// The median of `v` (the mean of the middle two for an even count); NaN for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Throws std::runtime_error naming the file when it is missing, lacks a column, or is damaged gzip.
// A gzip-compressed file (FILE.csv.gz) is read as well, by content (model/compressed_text.h).
inline Sweep read_sweep(const std::string& path) {
  std::istringstream in(read_text(path));
  Sweep sweep;
  std::string line, body;
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) == 0) {
      std::string kv = line.substr(1);
      if (!kv.empty() && kv.front() == ' ') kv.erase(0, 1);
      if (auto eq = kv.find('='); eq != std::string::npos) sweep.environment[kv.substr(0, eq)] = kv.substr(eq + 1);
      continue;
    }
    body += line;
    body += '\n';
  }
  auto reader = storage::CsvReader::from_string(std::move(body), path);
  if (!reader.read_header()) throw std::runtime_error(path + ": no header row");
  const auto c_op = reader.require_column("op"), c_dt = reader.require_column("dtype"),
             c_m = reader.require_column("M"), c_n = reader.require_column("N"), c_k = reader.require_column("K"),
             c_lat = reader.require_column("latency_us"), c_tile = reader.require_column("tile"),
             c_stages = reader.require_column("stages"), c_split = reader.require_column("splitk"),
             c_cluster = reader.require_column("cluster"), c_name = reader.require_column("kernel_name"),
             c_algo = reader.require_column("algo_id"), c_rank = reader.require_column("heuristic_rank"),
             c_grid = reader.require_column("grid"), c_reps = reader.require_column("reps"),
             c_source = reader.require_column("source");
  std::vector<std::string> f;
  while (reader.next(f)) {
    if (f.size() < reader.header().size() || f[c_op] != "gemm") continue;
    auto dt = parse_dtype(f[c_dt]);
    auto M = storage::parse_int(f[c_m]), N = storage::parse_int(f[c_n]), K = storage::parse_int(f[c_k]);
    auto lat = storage::parse_double(f[c_lat]);
    if (!dt || !M || !N || !K || !lat || *lat <= 0) continue;
    SweepRow r;
    r.sample.shape = tuner::GemmShape{*M, *N, *K, *dt};
    r.sample.latency_us = *lat;
    r.sample.heuristic_rank = static_cast<int>(storage::parse_int(f[c_rank]).value_or(0));
    r.algo_id = static_cast<int>(storage::parse_int(f[c_algo]).value_or(-1));
    r.reps = static_cast<int>(storage::parse_int(f[c_reps]).value_or(0));
    r.source = f[c_source];
    // The main kernel: the first name that is not a memset or a split-K reduction.
    std::string names = f[c_name];
    std::string main_kernel;
    std::stringstream ks(names);
    std::string part;
    while (std::getline(ks, part, ';')) {
      while (!part.empty() && part.front() == ' ') part.erase(0, 1);
      while (!part.empty() && part.back() == ' ') part.pop_back();
      if (part.empty() || part == "memset" || part.find("splitKreduce") != std::string::npos) continue;
      main_kernel = part;
      break;
    }
    r.kernel = main_kernel.substr(0, 80);
    r.sample.custom_option = tuner::nvjet_custom_option(main_kernel);
    const auto t = detail::dims(f[c_tile]);
    if (t.size() >= 2) {
      TileConfig& tc = r.sample.config;
      tc.tile_n = t[0];
      tc.tile_m = t[1];
      const auto st = detail::dims(f[c_stages].substr(0, f[c_stages].find("xAUTO")));
      tc.tile_k = t.size() >= 3 ? t[2] : (!st.empty() ? st[0] : 64);
      if (st.size() >= 2) tc.stages = st[1];
      tc.split_k = static_cast<int>(std::max<long long>(1, storage::parse_int(f[c_split]).value_or(1)));
      const auto cl = detail::dims(f[c_cluster]);
      if (cl.size() >= 2) {
        tc.cluster_n = cl[0];
        tc.cluster_m = cl[1];
      }
      r.modelled = main_kernel.rfind("nvjet", 0) == 0;
    }
    const auto g = detail::dims(f[c_grid]);
    if (g.size() == 3) r.sample.launched_ctas = g[0] * g[1] * g[2];
    sweep.rows.push_back(std::move(r));
  }
  return sweep;
}

// A data file of a GPU's folder: DIR/NAME, or DIR/NAME.gz where only the compressed file exists
// (data keeps its large sweeps gzip-compressed, which read_sweep reads as they are). DIR/NAME
// where neither exists, so that the error names the file asked for.
inline std::filesystem::path data_file(const std::filesystem::path& dir, const std::string& name) {
  const std::filesystem::path plain = dir / name;
  if (std::filesystem::exists(plain)) return plain;
  std::filesystem::path gz = dir / (name + ".gz");
  return std::filesystem::exists(gz) ? gz : plain;
}

// Name order with runs of digits compared as numbers: "tiles_s2" before "tiles_s10", "lists_s9x"
// before "lists_s10".
inline bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      std::size_t iz = i, jz = j;  // leading zeros do not count
      while (iz + 1 < ie && a[iz] == '0') ++iz;
      while (jz + 1 < je && b[jz] == '0') ++jz;
      if (ie - iz != je - jz) return ie - iz < je - jz;
      if (const int c = a.compare(iz, ie - iz, b, jz, je - jz); c != 0) return c < 0;
      if (ie - i != je - j) return ie - i < je - j;
      i = ie, j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

// The *.csv and *.csv.gz files of DIR/SUB as "SUB/name", in natural name order (natural_less); none
// without the folder.
inline std::vector<std::string> csv_files_under(const std::filesystem::path& dir, const std::string& sub) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  if (!fs::is_directory(dir / sub)) return out;
  for (const auto& e : fs::directory_iterator(dir / sub))
    if (const std::string n = e.path().filename().string();
        e.is_regular_file() && (n.ends_with(".csv") || n.ends_with(".csv.gz")))
      out.push_back(sub + "/" + n);
  std::sort(out.begin(), out.end(), natural_less);
  return out;
}

// Every exhaustive tile sweep of one GPU's data folder DIR: DIR/tiles.csv (or .csv.gz), then, with `more`, every
// *.csv (or *.csv.gz) of DIR/tiles_more/ in name order (further runs of `perfloom-collect --sweep tiles --seed S`,
// which draw other shapes). One (dtype, M, N, K) shape is one shape: where a later file measured a
// shape an earlier file already has, the later file's rows of it are dropped (the oldest measurement
// is kept, so tiles.csv's shapes keep exactly their rows). `more` false, or no tiles_more/ folder:
// tiles.csv alone. Throws like read_sweep.
inline Sweep read_exhaustive(const std::filesystem::path& dir, bool more = true) {
  std::vector<std::string> names{"tiles.csv"};
  if (more) {
    const auto extra = csv_files_under(dir, "tiles_more");
    names.insert(names.end(), extra.begin(), extra.end());
  }
  Sweep out;
  std::set<std::tuple<int, long long, long long, long long>> have;
  for (std::size_t f = 0; f < names.size(); ++f) {
    Sweep s = read_sweep((f == 0 ? data_file(dir, names[f]) : dir / names[f]).string());
    if (f == 0) out.environment = s.environment;
    std::set<std::tuple<int, long long, long long, long long>> mine, dropped;
    for (auto& r : s.rows) {
      const auto key =
          std::make_tuple(static_cast<int>(r.sample.shape.dtype), static_cast<long long>(r.sample.shape.M),
                          static_cast<long long>(r.sample.shape.N), static_cast<long long>(r.sample.shape.K));
      if (have.count(key)) {
        dropped.insert(key);
        ++out.duplicate_rows;
        continue;
      }
      mine.insert(key);
      r.file = static_cast<int>(f);
      out.rows.push_back(std::move(r));
    }
    have.insert(mine.begin(), mine.end());
    out.files.push_back(names[f]);
    out.file_shapes.push_back(mine.size());
    out.duplicate_shapes += dropped.size();
  }
  return out;
}

// The re-measurements whose table-path rows read_picks learns: DIR/tuner_picks.csv(.gz), then every
// *.csv(.gz) of DIR/picks/ in name order.
inline std::vector<std::filesystem::path> picks_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  if (const auto f = data_file(dir, "tuner_picks.csv"); std::filesystem::exists(f)) out.push_back(f);
  for (const auto& n : csv_files_under(dir, "picks")) out.push_back(dir / n);
  return out;
}
// Their names relative to DIR, comma-separated: "tuner_picks.csv.gz, picks/round2.csv.gz" (empty: none).
inline std::string picks_files_present(const std::filesystem::path& dir) {
  std::string out;
  for (const auto& f : picks_files(dir))
    out += (out.empty() ? "" : ", ") + std::filesystem::relative(f, dir).generic_string();
  return out;
}

// Per key, its first row with the median of the latencies gathered for it (reps: how many): one row per
// configuration out of repeated measurements (read_picks, read_lists).
template <typename Key>
std::vector<SweepRow> median_rows(std::map<Key, std::pair<SweepRow, std::vector<double>>>& rows) {
  std::vector<SweepRow> out;
  for (auto& [k, v] : rows) {
    auto& [row, lat] = v;
    row.sample.latency_us = median(lat);
    row.reps = static_cast<int>(lat.size());
    out.push_back(std::move(row));
  }
  return out;
}

// The tuner's own choices measured at the exhaustive shapes: the files of picks_files(DIR), plan runs
// (`run_plan_on_gpu.sh --plan NAME --repeat R`) whose rows tagged "table K" are the table path's first
// configurations of an exhaustive shape, most of them outside the configurations the sweep measured there. One row per
// (shape, configuration), its latency the median of the repetitions of all the files; configurations `sweep` measured
// at the shape are left out (the sweep's own measurement stays the one learned). Modelled (nvjet) rows only. No file:
// none. Throws like read_sweep.
//
// `align_to_sweep`: a re-measurement taken on another machine or day sits a little above or below the
// sweep at a shape, which a fit could read as the pick's merit. With it, each file's latencies of a shape
// are scaled by the median, over the configurations both measured there, of swept / re-measured; a shape
// with fewer than kMinAlignPairs such configurations keeps its latencies. Off by default (the fit's).
inline constexpr std::size_t kMinAlignPairs = 2;
inline std::vector<SweepRow> read_picks(const std::filesystem::path& dir, const Sweep& sweep,
                                        bool align_to_sweep = false) {
  using Key = std::tuple<int, long long, long long, long long, int, int, int, int, int, int>;
  using ShapeKey = std::tuple<int, long long, long long, long long>;
  auto key = [](const tuner::TunerSample& s) {
    const TileConfig& c = s.config;
    return Key{static_cast<int>(s.shape.dtype),
               s.shape.M,
               s.shape.N,
               s.shape.K,
               c.tile_m,
               c.tile_n,
               c.tile_k,
               std::max(1, c.split_k),
               std::max(1, c.cluster_m),
               std::max(1, c.cluster_n)};
  };
  auto shape_of = [](const Key& k) { return ShapeKey{std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k)}; };
  std::map<Key, std::vector<double>> swept;
  for (const auto& r : sweep.rows)
    if (r.modelled) swept[key(r.sample)].push_back(r.sample.latency_us);
  std::map<Key, std::pair<SweepRow, std::vector<double>>> picks;
  for (const auto& file : picks_files(dir)) {
    std::map<Key, std::vector<double>> timed;  // aligning: this file's repetitions of every modelled configuration
    std::vector<SweepRow> table_rows;
    for (auto& r : read_sweep(file.string()).rows) {
      if (!r.modelled) continue;
      if (align_to_sweep) timed[key(r.sample)].push_back(r.sample.latency_us);
      if (r.sample.heuristic_rank <= 0 && r.source.find("table ") != std::string::npos && !swept.count(key(r.sample)))
        table_rows.push_back(std::move(r));
    }
    std::map<ShapeKey, double> scale;
    std::map<ShapeKey, std::vector<double>> ratios;
    for (const auto& [k, lat] : timed)
      if (auto it = swept.find(k); it != swept.end()) ratios[shape_of(k)].push_back(median(it->second) / median(lat));
    for (auto& [shape, r] : ratios)
      if (r.size() >= kMinAlignPairs) scale[shape] = median(r);
    for (auto& r : table_rows) {
      const Key k = key(r.sample);
      const auto s = scale.find(shape_of(k));
      auto& [row, lat] = picks[k];
      if (lat.empty()) row = r;
      lat.push_back(r.sample.latency_us * (s == scale.end() ? 1.0 : s->second));
    }
  }
  return median_rows(picks);
}

// Timed query lists at new shapes: the files of DIR/lists/ (`perfloom-tuner-eval --lists-plan GPU OUT.csv
// COUNT SEED`, then `run_plan_on_gpu.sh --plan NAME --repeat R --heuristic-n 8`): at random GEMMs every configuration
// `perfloom tune` ranked there, with cuBLASLt's first 8, each R times. One row per (shape, configuration), its
// latency the median of its repetitions (a configuration timed both as a candidate and as a heuristic result: of
// both); modelled (nvjet) rows only; shapes `sweep` measured are left out (the sweep's rows stay the ones learned).
// With ~35 configurations a shape, perfloom-tuner-fit's chooser ranks each as a query would (FitOptions::
// ranker_min_configs). No folder: none. Throws like read_sweep.
inline std::vector<std::string> lists_files(const std::filesystem::path& dir) { return csv_files_under(dir, "lists"); }
inline std::vector<SweepRow> read_lists(const std::filesystem::path& dir, const Sweep& sweep) {
  using ShapeKey = std::tuple<int, long long, long long, long long>;
  using Key = std::tuple<ShapeKey, int, int, int, int, int, int>;
  auto shape_key = [](const tuner::GemmShape& s) { return ShapeKey{static_cast<int>(s.dtype), s.M, s.N, s.K}; };
  std::set<ShapeKey> swept;
  for (const auto& r : sweep.rows) swept.insert(shape_key(r.sample.shape));
  std::map<Key, std::pair<SweepRow, std::vector<double>>> rows;
  for (const auto& name : lists_files(dir))
    for (auto& r : read_sweep((dir / name).string()).rows) {
      if (!r.modelled || swept.count(shape_key(r.sample.shape))) continue;
      const TileConfig& c = r.sample.config;
      auto& [row, lat] = rows[Key{shape_key(r.sample.shape), c.tile_m, c.tile_n, c.tile_k, std::max(1, c.split_k),
                                  std::max(1, c.cluster_m), std::max(1, c.cluster_n)}];
      if (lat.empty()) row = r;
      lat.push_back(r.sample.latency_us);
    }
  return median_rows(rows);
}

// A row of a collector plan (tuner/sampling_plan.h write_plan_csv: `perfloom tune --plan`, perfloom-tuner-eval's
// plans): its shape (dtype, M, N, K), configuration string, why, and heuristic rank (> 0: cuBLASLt's result of that
// rank, measured as it is). Rows with a bad shape are left out.
struct PlanRow {
  std::tuple<int, int64_t, int64_t, int64_t> shape;
  std::string config, why;
  long long heuristic_rank = 0;
};
// Throws std::runtime_error naming the file when it cannot be read or lacks a column.
inline std::vector<PlanRow> read_plan_rows(const std::filesystem::path& plan_file) {
  std::vector<PlanRow> out;
  auto reader = storage::CsvReader::from_string(read_text(plan_file.string()), plan_file.string());
  if (!reader.read_header()) throw std::runtime_error(plan_file.string() + ": no header row");
  const auto c_dt = reader.require_column("dtype"), c_m = reader.require_column("M"), c_n = reader.require_column("N"),
             c_k = reader.require_column("K"), c_cfg = reader.require_column("config"),
             c_rank = reader.require_column("heuristic_rank"), c_why = reader.require_column("why");
  std::vector<std::string> f;
  while (reader.next(f)) {
    if (f.size() < reader.header().size()) continue;
    const auto dt = parse_dtype(f[c_dt]);
    const auto M = storage::parse_int(f[c_m]), N = storage::parse_int(f[c_n]), K = storage::parse_int(f[c_k]);
    if (!dt || !M || !N || !K) continue;
    out.push_back({{static_cast<int>(*dt), *M, *N, *K}, f[c_cfg], f[c_why], storage::parse_int(f[c_rank]).value_or(0)});
  }
  return out;
}

// The plan files a plan run names (`# plan_files=`, space-separated paths on the GPU machine), each looked up by its
// file name in DIR (data_file: DIR/NAME or DIR/NAME.gz); a path that does not exist is returned as it is, to be named.
inline std::vector<std::filesystem::path> run_plan_files(const std::filesystem::path& dir, const Sweep& run) {
  std::vector<std::filesystem::path> out;
  const auto it = run.environment.find("plan_files");
  if (it == run.environment.end()) return out;
  std::istringstream names(it->second);
  std::string name;
  while (names >> name) out.push_back(data_file(dir, std::filesystem::path(name).filename().string()));
  return out;
}

// The configuration string of a plan run's row whose `source` is "plan:CONFIG ..." (a plan point the collector forced);
// empty for cuBLASLt's own results ("plan:heuristic ...") and rows of other runs.
inline std::string plan_point_config(const std::string& source) {
  if (source.rfind("plan:", 0) != 0 || source.rfind("plan:heuristic", 0) == 0) return {};
  return source.substr(5, source.find(' ') - 5);
}

// What cuBLASLt accepted and refused in plan runs (the acceptance model's data, model/tuner/acceptance_model.h).
// A plan run's CSV names its plan files (`# plan_files=`, paths on the GPU machine); each is looked up by its file
// name in DIR (DIR/NAME or DIR/NAME.gz, data_file). The collector takes a shape's plan points together and writes a
// row for each it ran ("plan:CONFIG ..." in `source`) and cuBLASLt's heuristic results ("plan:heuristic"); a plan
// point of a shape with rows that has none was refused (perfloom-collect's "plan: skip ... cuBLASLt refuses it"; its
// log prints only the first 20). Shapes the run did not reach (over its budget) have no rows and are left out, as
// are cuBLASLt's own results (heuristic_rank > 0). One sample per (file, shape, configuration).
struct AcceptanceData {
  std::vector<tuner::AcceptanceSample> samples;
  std::vector<std::string> files;          // the runs read, as given
  std::vector<std::string> missing_plans;  // "RUN: PLAN" for a run whose plan file is not in DIR (the run is left out)
};
// The plan runs the acceptance model learns from: the timed query lists of DIR/lists/ and DIR/lists_held/ (the latter
// held out of the latency fit, to score its ranking, but what cuBLASLt refused there is as good a lesson), as paths.
inline std::vector<std::filesystem::path> acceptance_runs(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  for (const char* sub : {"lists", "lists_held"})
    for (const auto& n : csv_files_under(dir, sub)) out.push_back(dir / n);
  return out;
}
inline AcceptanceData read_acceptance(const std::filesystem::path& dir,
                                      const std::vector<std::filesystem::path>& runs) {
  using ShapeKey = std::tuple<int, int64_t, int64_t, int64_t>;
  AcceptanceData out;
  for (const auto& run : runs) {
    const Sweep sweep = read_sweep(run.string());
    const std::vector<std::filesystem::path> plans = run_plan_files(dir, sweep);
    bool missing = false;
    for (const auto& p : plans)
      if (!std::filesystem::exists(p)) {
        out.missing_plans.push_back(run.string() + ": " + p.string());
        missing = true;
      }
    if (missing || plans.empty()) continue;
    std::set<ShapeKey> reached;
    std::set<std::pair<ShapeKey, std::string>> ran;
    for (const auto& r : sweep.rows) {
      const ShapeKey k{static_cast<int>(r.sample.shape.dtype), r.sample.shape.M, r.sample.shape.N, r.sample.shape.K};
      reached.insert(k);
      if (std::string config = plan_point_config(r.source); !config.empty()) ran.emplace(k, std::move(config));
    }
    std::set<std::pair<ShapeKey, std::string>> seen;
    for (const auto& plan : plans)
      for (const PlanRow& row : read_plan_rows(plan)) {
        if (row.heuristic_rank > 0 || !reached.count(row.shape) || !seen.emplace(row.shape, row.config).second)
          continue;
        tuner::AcceptanceSample s;
        const auto& [dt, M, N, K] = row.shape;
        s.shape = tuner::GemmShape{M, N, K, static_cast<Dtype>(dt)};
        try {
          s.config = tuner::config_from_string(row.config);
        } catch (const tuner::TunerTableError& e) {
          throw std::runtime_error(plan.string() + ": " + e.what());
        }
        s.accepted = ran.count({row.shape, row.config}) > 0;
        out.samples.push_back(s);
      }
    out.files.push_back(run.string());
  }
  return out;
}

// perfloom-tuner-fit --dump-ranker: one query group's configurations as CSV lines,
// "dtype,M,N,K,fold,config,ratio,log_pred,log_score,f_0..": the chooser's inputs before they are made
// relative to the group (tuner_table.h ranker_rows), and the measured latency over the group's fastest
// (NaN: not measured). `header` writes the column line first.
inline void write_ranker_group(std::ostream& os, const tuner::GemmShape& shape, int fold,
                               const std::vector<TileConfig>& configs, const std::vector<tuner::WaveFeatures>& features,
                               const std::vector<double>& pred_us, const std::vector<double>& score,
                               const std::vector<double>& ratio, bool header = false) {
  if (header) {
    os << "dtype,M,N,K,fold,config,ratio,log_pred,log_score";
    for (const auto& n : tuner::learned_names()) os << "," << n;
    os << "\n";
  }
  for (std::size_t i = 0; i < configs.size(); ++i) {
    os << dtype_name(shape.dtype) << "," << shape.M << "," << shape.N << "," << shape.K << "," << fold << ","
       << tuner::config_to_string(configs[i]) << "," << ratio[i] << "," << std::log(pred_us[i]) << ","
       << std::log(score[i]);
    for (float v : tuner::learned_features(shape, configs[i], features[i])) os << "," << v;
    os << "\n";
  }
}

// A kernel-variant measurement (`run_plan_on_gpu.sh --variants`: data/<gpu>/variants.csv.gz):
// each plan configuration timed with every custom option cuBLASLt accepts for it, R times each, its
// source "plan:CONFIG WHY variant=cC/sS[ base] rep=K" (" base": the option the configuration was
// forced with, as a plain plan run takes it), and cuBLASLt's default per shape ("plan:heuristic").
struct VariantPoint {
  std::string config;                // the plan's configuration string (perfloom's orientation)
  std::string why;                   // the plan's tags ("table 1; measured 3; ...")
  int base_custom = -1;              // the option a plain plan run forces it with
  std::map<int, double> latency_us;  // per custom option: the median of its repetitions
};
struct VariantShape {
  tuner::GemmShape shape;
  double default_us = 0;  // cuBLASLt's default, the median of its repetitions (0: none)
  std::map<tuner::ConfigKey, VariantPoint> points;
  double best_us() const {  // the fastest of everything timed at the shape
    double b = default_us > 0 ? default_us : std::numeric_limits<double>::infinity();
    for (const auto& [k, p] : points)
      for (const auto& [c, t] : p.latency_us) b = std::min(b, t);
    return b;
  }
};
struct VariantData {
  std::vector<VariantShape> shapes;
  std::vector<tuner::VariantSample> samples;  // one per (shape, configuration, option): what the model learns
};
// Throws like read_sweep, and std::runtime_error naming the file where a plan row lacks its variant.
inline VariantData read_variants(const std::string& path) {
  using ShapeKey = std::tuple<int, long long, long long, long long>;
  std::map<ShapeKey, VariantShape> shapes;
  std::map<ShapeKey, std::vector<double>> defaults;
  std::map<std::tuple<ShapeKey, tuner::ConfigKey, int>, std::pair<std::vector<double>, std::string>> timed;
  const Sweep sweep = read_sweep(path);
  for (const auto& r : sweep.rows) {
    const auto& sh = r.sample.shape;
    const ShapeKey sk{static_cast<int>(sh.dtype), sh.M, sh.N, sh.K};
    shapes[sk].shape = sh;
    if (r.source.rfind("plan:heuristic", 0) == 0) {
      defaults[sk].push_back(r.sample.latency_us);
      continue;
    }
    const std::size_t v = r.source.find(" variant=c");
    if (r.source.rfind("plan:", 0) != 0 || v == std::string::npos)
      throw std::runtime_error(path + ": row of " + std::to_string(sh.M) + "x" + std::to_string(sh.N) + "x" +
                               std::to_string(sh.K) + " has no 'variant=cC/sS' in its source '" + r.source +
                               "' (not a --variants run)");
    if (!r.modelled) continue;
    const int custom = std::atoi(r.source.c_str() + v + 10);
    const std::string head = r.source.substr(5, v - 5);
    const std::size_t sp = head.find(' ');
    VariantPoint& p = shapes[sk].points[tuner::config_key(r.sample.config)];
    p.config = head.substr(0, sp);
    if (p.why.empty() && sp != std::string::npos)
      p.why = head.substr(sp + 1, head.find(" via=") - sp - 1);  // without the collector's " via=rN"
    if (r.source.find(" base", v) != std::string::npos) p.base_custom = custom;
    auto& [lat, kernel] = timed[{sk, tuner::config_key(r.sample.config), custom}];
    lat.push_back(r.sample.latency_us);
    if (kernel.empty()) kernel = r.kernel;
  }
  VariantData out;
  std::map<ShapeKey, std::size_t> index;
  for (auto& [sk, s] : shapes) {
    if (auto d = defaults.find(sk); d != defaults.end()) s.default_us = median(d->second);
    index[sk] = out.shapes.size();
    out.shapes.push_back(std::move(s));
  }
  for (const auto& [key, v] : timed) {
    const auto& [sk, ck, custom] = key;
    VariantShape& s = out.shapes[index.at(sk)];
    VariantPoint& p = s.points.at(ck);
    p.latency_us[custom] = median(v.first);
    tuner::VariantSample vs;
    vs.shape = s.shape;
    vs.config = tuner::config_from_string(p.config);
    vs.custom = custom;
    vs.latency_us = p.latency_us[custom];
    vs.kernel = v.second;
    out.samples.push_back(std::move(vs));
  }
  return out;
}

// New GEMMs for a timed check, drawn the same way for every plan mode of perfloom-tuner-eval: per dtype, `count` GEMMs
// with M log-uniform in m_min..m_max (1..10,000 unless `--lists-plan --m-min/--m-max` aims a round at a band of M) and
// N, K multiples of 64 log-uniform in 512..32,768 (the LLM range and beyond), from std::mt19937(seed), so that a seed
// names its shapes. Shapes a sweep or earlier check measured recur only by chance. perfloom-tuner-eval's plan modes and
// perfloom-bench-tune draw from it.
inline std::vector<tuner::GemmShape> random_gemms(const std::vector<Dtype>& dtypes, int count, unsigned seed,
                                                  double m_min = 1, double m_max = 10000) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto log_uniform = [&](double lo, double hi) {
    return std::exp(std::log(lo) + u(rng) * (std::log(hi) - std::log(lo)));
  };
  std::vector<tuner::GemmShape> out;
  for (int i = 0; i < count; ++i)  // the dtypes interleaved: a run cut short by its budget keeps both
    for (Dtype dt : dtypes) {
      tuner::GemmShape s;
      s.dtype = dt;
      s.M = std::max<int64_t>(1, std::llround(log_uniform(m_min, m_max)));
      s.N = 64 * std::max<int64_t>(8, std::llround(log_uniform(8, 512)));
      s.K = 64 * std::max<int64_t>(8, std::llround(log_uniform(8, 512)));
      out.push_back(s);
    }
  return out;
}

// The dtypes a table fits, one per group (bf16 for the 16-bit group, fp8e4m3 for fp8).
inline std::vector<Dtype> table_dtypes(const tuner::TunerTable& table) {
  std::vector<Dtype> out;
  for (Dtype dt : {Dtype::bf16, Dtype::fp8e4m3})
    if (table.groups.count(tuner::dtype_group(dt))) out.push_back(dt);
  return out;
}

}  // namespace perfloom::bench
