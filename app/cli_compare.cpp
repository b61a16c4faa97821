// `perfloom compare --trace A --trace B [--gpu ID] [--by family|name|kernel] [--out FILE.csv] [--json]`
// (docs/cli.md): two profiled traces side by side, or trace A's what-if on a GPU against trace B
// measured, through storage::compare_traces (storage/trace_compare.h), as the Compare view shows it.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli_commands.h"
#include "model/learned_predictor.h"
#include "storage/database.h"
#include "storage/kernel_list_csv.h"
#include "storage/kernel_store.h"
#include "storage/trace_compare.h"

namespace perfloom::app {

namespace {

std::string fnum(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
std::string fopt(const std::optional<double>& v) { return v ? fnum(*v) : std::string(); }
nlohmann::json jopt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

enum class By { family, name, kernel };

const std::vector<std::string>& header(By by) {
  static const std::vector<std::string> family = {"row_type",  "family", "kernels",  "untimed", "a_us",
                                                  "b_us",      "ratio",  "delta_us", "share",   "only_a",
                                                  "only_a_us", "only_b", "only_b_us"};
  static const std::vector<std::string> name = {"row_type", "name",   "name_b",    "family", "kernels",
                                                "untimed",  "a_us",   "b_us",      "ratio",  "delta_us",
                                                "share",    "only_a", "only_a_us", "only_b", "only_b_us"};
  static const std::vector<std::string> kernel = {"row_type", "match", "seq_a", "seq_b", "name",  "name_b",   "family",
                                                  "op",       "shape", "a_us",  "b_us",  "ratio", "delta_us", "share"};
  return by == By::family ? family : by == By::name ? name : kernel;
}

std::vector<std::string> group_row(By by, const storage::CompareGroup& g, bool total) {
  std::vector<std::string> row = {total ? "total" : (by == By::family ? "family" : "name"), g.key};
  if (by == By::name) {
    row.push_back(g.name_b);
    row.push_back(total ? std::string() : std::string(family_name(g.family)));
  }
  for (std::string v : {std::to_string(g.kernels), std::to_string(g.untimed), fnum(g.a_us), fnum(g.b_us),
                        fopt(g.ratio()), fnum(g.delta_us()), fnum(g.share), std::to_string(g.only_a), fnum(g.only_a_us),
                        std::to_string(g.only_b), fnum(g.only_b_us)})
    row.push_back(std::move(v));
  return row;
}

nlohmann::json group_json(By by, const storage::CompareGroup& g) {
  nlohmann::json j;
  if (by == By::name) {
    j["name"] = g.key;
    j["name_b"] = g.name_b;
    j["family"] = std::string(family_name(g.family));
  } else {
    j["family"] = g.key;
  }
  j["kernels"] = g.kernels;
  j["untimed"] = g.untimed;
  j["a_us"] = g.a_us;
  j["b_us"] = g.b_us;
  j["ratio"] = jopt(g.ratio());
  j["delta_us"] = g.delta_us();
  j["share"] = g.share;
  j["only_a"] = g.only_a;
  j["only_a_us"] = g.only_a_us;
  j["only_b"] = g.only_b;
  j["only_b_us"] = g.only_b_us;
  return j;
}

std::string op_text(Op op) { return op == Op::unknown ? std::string() : std::string(op_name(op)); }

std::vector<std::string> kernel_row(const storage::ComparedKernel& k) {
  return {"kernel",
          std::string(storage::matched_by_name(k.by)),
          std::to_string(k.seq_a),
          std::to_string(k.seq_b),
          k.name,
          k.name_b == k.name ? std::string() : k.name_b,
          std::string(family_name(k.family)),
          op_text(k.op),
          k.shape,
          fopt(k.a_us),
          fopt(k.b_us),
          fopt(k.ratio()),
          k.timed() ? fnum(k.delta_us()) : std::string(),
          k.timed() ? fnum(k.share) : std::string()};
}

std::vector<std::string> unmatched_row(const storage::UnmatchedKernel& k, bool side_a) {
  return {side_a ? "only_a" : "only_b",
          "",
          side_a ? std::to_string(k.seq) : "",
          side_a ? "" : std::to_string(k.seq),
          k.name,
          "",
          std::string(family_name(k.family)),
          op_text(k.op),
          k.shape,
          side_a ? fopt(k.us) : "",
          side_a ? "" : fopt(k.us),
          "",
          "",
          ""};
}

nlohmann::json unmatched_json(const storage::UnmatchedKernel& k) {
  return {{"seq", k.seq},        {"name", k.name},   {"family", std::string(family_name(k.family))},
          {"op", op_text(k.op)}, {"shape", k.shape}, {"us", jopt(k.us)}};
}

nlohmann::json side_json(const storage::CompareSideInfo& s, const storage::KernelStore::FoundSource& imp) {
  nlohmann::json j{{"source", s.source.id},
                   {"path", s.source.path},
                   {"format", s.source.format},
                   {"gpu_id", s.gpu_id},
                   {"times", s.predicted ? "predicted" : "measured"},
                   {"kernels", s.kernels},
                   {"untimed", s.untimed},
                   {"total_us", s.total_us},
                   {"imported_now", imp.imported}};
  if (s.predicted) {
    j["measured_on"] = s.source.gpu_id;
    j["model_version"] = s.model_version;
    j["from_cache"] = s.from_cache;
  }
  return j;
}

// A kernel name for the terminal: the first 60 characters (the CSV and JSON keep it whole).
std::string short_name(const std::string& n) { return n.size() <= 60 ? n : n.substr(0, 57) + "..."; }

}  // namespace

int cmdCompare(CliContext& ctx, const QCommandLineParser& args) {
  const QStringList traces = args.values("trace");
  if (traces.size() != 2) {
    std::cerr << "perfloom compare: needs two traces, --trace A --trace B (got " << traces.size() << ")\n";
    return 2;
  }
  By by = By::family;
  if (args.isSet("by")) {
    const QString v = args.value("by");
    if (v == "family")
      by = By::family;
    else if (v == "name")
      by = By::name;
    else if (v == "kernel")
      by = By::kernel;
    else {
      std::cerr << "perfloom compare: --by " << v.toStdString() << ": expected family, name or kernel\n";
      return 2;
    }
  }
  const GpuSpec* predicted_on = nullptr;
  if (args.isSet("gpu")) {
    const auto list = gpusFromList(ctx, args.value("gpu"));
    if (list.size() != 1) {
      std::cerr << "perfloom compare: --gpu takes one GPU, the one trace A is predicted on\n";
      return 2;
    }
    predicted_on = list.front();
  }
  const std::string file_a = traces[0].toStdString(), file_b = traces[1].toStdString();

  // Open the output first: a path that cannot be written fails before any work.
  std::ofstream out_file = cliOutFile(args);

  storage::Database db(ctx.db_path);
  storage::KernelStore store(db);
  storage::ImportControl control;
  control.gpus = &ctx.gpus;
  const auto ia = store.import_or_find(file_a, control);
  const auto ib = store.import_or_find(file_b, control);

  storage::CompareSide a{ia.source_id}, b{ib.source_id};
  storage::CompareOptions options;
  std::shared_ptr<const KernelPredictor> predictor;
  if (predicted_on) {
    const auto src = store.source(ia.source_id);
    if (src && !src->gpu_id.empty()) a.source_gpu = ctx.gpus.find(src->gpu_id);
    if (!a.source_gpu) {
      std::cerr << "perfloom compare: " << printable_name(file_a)
                << ": the trace does not say which known GPU it was measured on"
                << (src && !src->gpu_name.empty() ? " (it names \"" + src->gpu_name + "\")" : "")
                << ", so it cannot be predicted on " << predicted_on->id << "\n";
      return 1;
    }
    a.predicted_on = predicted_on;
    std::string warning;
    predictor = make_default_predictor(&warning);
    if (!warning.empty()) std::cerr << "perfloom compare: warning: " << warning << "\n";
    options.predictor = predictor.get();
    options.whatif.write_cache = !db.read_only();
  }
  const storage::TraceComparison c = storage::compare_traces(store, a, b, options);
  if (c.kernels.empty()) {
    std::cerr << "perfloom compare: " << printable_name(file_a) << " (" << c.a.kernels << " kernels) and "
              << printable_name(file_b) << " (" << c.b.kernels
              << " kernels) have no kernel in common: none matches by launching op, family and op, nor by name\n";
    return 1;
  }

  const std::vector<storage::CompareGroup>& groups = by == By::family ? c.by_family : c.by_kernel_name;
  if (args.isSet("out")) {
    out_file << storage::csv_line(header(by)) << "\n";
    if (by == By::kernel) {
      for (const auto& k : c.kernels) out_file << storage::csv_line(kernel_row(k)) << "\n";
      for (const auto& k : c.only_a) out_file << storage::csv_line(unmatched_row(k, true)) << "\n";
      for (const auto& k : c.only_b) out_file << storage::csv_line(unmatched_row(k, false)) << "\n";
      std::vector<std::string> total(header(by).size());
      total[0] = "total";
      total[4] = "TOTAL";
      total[9] = fnum(c.total.a_us);
      total[10] = fnum(c.total.b_us);
      total[11] = fopt(c.total.ratio());
      total[12] = fnum(c.total.delta_us());
      total[13] = fnum(c.total.share);
      out_file << storage::csv_line(total) << "\n";
    } else {
      for (const auto& g : groups) out_file << storage::csv_line(group_row(by, g, false)) << "\n";
      out_file << storage::csv_line(group_row(by, c.total, true)) << "\n";
    }
    out_file.flush();
    if (!out_file) throw std::runtime_error(args.value("out").toStdString() + ": write failed");
  }

  const char* by_text = by == By::family ? "family" : by == By::name ? "name" : "kernel";
  if (ctx.json) {
    nlohmann::json doc{
        {"a", side_json(c.a, ia)},
        {"b", side_json(c.b, ib)},
        {"by", by_text},
        {"matched", {{"kernels", c.kernels.size()}, {"by_position", c.by_position}, {"by_name", c.by_name}}},
        {"totals", group_json(By::family, c.total)}};
    doc["totals"].erase("family");
    nlohmann::json ua = nlohmann::json::array(), ub = nlohmann::json::array();
    for (const auto& k : c.only_a) ua.push_back(unmatched_json(k));
    for (const auto& k : c.only_b) ub.push_back(unmatched_json(k));
    doc["unmatched"] = {{"a", ua}, {"b", ub}};
    if (args.isSet("out")) {
      doc["out"] = args.value("out").toStdString();
    } else {
      nlohmann::json rows = nlohmann::json::array();
      if (by == By::kernel) {
        for (const auto& k : c.kernels)
          rows.push_back({{"match", std::string(storage::matched_by_name(k.by))},
                          {"seq_a", k.seq_a},
                          {"seq_b", k.seq_b},
                          {"name", k.name},
                          {"name_b", k.name_b == k.name ? std::string() : k.name_b},
                          {"family", std::string(family_name(k.family))},
                          {"op", op_text(k.op)},
                          {"shape", k.shape},
                          {"a_us", jopt(k.a_us)},
                          {"b_us", jopt(k.b_us)},
                          {"ratio", jopt(k.ratio())},
                          {"delta_us", k.timed() ? nlohmann::json(k.delta_us()) : nlohmann::json(nullptr)},
                          {"share", k.timed() ? nlohmann::json(k.share) : nlohmann::json(nullptr)}});
      } else {
        for (const auto& g : groups) rows.push_back(group_json(by, g));
      }
      doc["rows"] = std::move(rows);
    }
    std::cout << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }

  auto side_line = [](const char* label, const storage::CompareSideInfo& s, const storage::KernelStore::FoundSource& imp) {
    std::printf("%s: %s (source %lld%s), %zu kernels %s on %s%s: %s us\n", label, printable_name(s.source.path).c_str(),
                static_cast<long long>(s.source.id), imp.imported ? ", imported now" : "", s.kernels,
                s.predicted ? "predicted" : "measured", s.gpu_id.c_str(),
                s.predicted ? (" from " + s.source.gpu_id + ", model " + s.model_version).c_str() : "",
                fnum(s.total_us).c_str());
  };
  side_line("A", c.a, ia);
  side_line("B", c.b, ib);
  std::printf("matched %zu kernels (%zu by position, %zu by name); only in A: %zu (%s us), only in B: %zu (%s us)\n",
              c.kernels.size(), c.by_position, c.by_name, c.only_a.size(), fnum(c.total.only_a_us).c_str(),
              c.only_b.size(), fnum(c.total.only_b_us).c_str());
  if (by == By::kernel) {
    std::printf("%6s %6s %-8s %-60s %-12s %-24s %12s %12s %8s %12s\n", "seq_a", "seq_b", "match", "name", "family",
                "shape", "a_us", "b_us", "b/a", "delta_us");
    for (const auto& k : c.kernels)
      std::printf("%6lld %6lld %-8s %-60s %-12s %-24s %12s %12s %8s %12s\n", static_cast<long long>(k.seq_a),
                  static_cast<long long>(k.seq_b), std::string(storage::matched_by_name(k.by)).c_str(),
                  short_name(k.name).c_str(), std::string(family_name(k.family)).c_str(), k.shape.c_str(),
                  fopt(k.a_us).c_str(), fopt(k.b_us).c_str(), fopt(k.ratio()).c_str(),
                  k.timed() ? fnum(k.delta_us()).c_str() : "");
  } else {
    const int width = by == By::family ? 12 : 60;
    std::printf("%-*s %8s %12s %12s %8s %12s %7s %7s %7s\n", width, by == By::family ? "family" : "name", "kernels",
                "a_us", "b_us", "b/a", "delta_us", "share", "only_a", "only_b");
    auto line = [&](const storage::CompareGroup& g) {
      const std::string ratio = g.ratio() ? fnum(*g.ratio()) : "-";
      std::printf("%-*s %8zu %12s %12s %8s %12s %6.1f%% %7zu %7zu\n", width, short_name(g.key).c_str(), g.kernels,
                  fnum(g.a_us).c_str(), fnum(g.b_us).c_str(), ratio.c_str(), fnum(g.delta_us()).c_str(),
                  100.0 * g.share, g.only_a, g.only_b);
    };
    for (const auto& g : groups) line(g);
    line(c.total);
  }
  std::printf("b/a: B's time over A's; share: the row's delta over the total delta%s\n",
              args.isSet("out") ? "" : "; --out FILE.csv writes the table");
  if (args.isSet("out"))
    std::cerr << "perfloom compare: the " << by_text << " table written to " << args.value("out").toStdString() << "\n";
  return 0;
}

}  // namespace perfloom::app
