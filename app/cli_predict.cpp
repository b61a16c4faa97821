// `perfloom predict --kernels IN.csv --gpu ID[,ID...] [--out OUT.csv]` and
// `perfloom predict --trace FILE --gpu ID[,ID...] [--source-gpu ID] [--out OUT.csv]` (CONTRACT.md).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli_commands.h"
#include "model/bottleneck.h"
#include "model/families/family_models.h"
#include "model/learned_predictor.h"
#include "model/predictor.h"
#include "storage/database.h"
#include "storage/kernel_list_csv.h"
#include "storage/kernel_store.h"
#include "storage/trace_whatif.h"

namespace perfloom::app {

std::vector<const GpuSpec*> gpusFromList(const CliContext& ctx, const QString& list) {
  std::vector<const GpuSpec*> out;
  for (const QString& id : list.split(',', Qt::SkipEmptyParts))
    out.push_back(&ctx.gpus.get(id.trimmed().toStdString()));
  if (out.empty()) throw std::invalid_argument("--gpu names no GPU");
  return out;
}

namespace {
std::string num(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

// A --json row's bottleneck fields: "pipes" (every pipe in order: name, busy_us on the busiest SM,
// share of pred_us), "ceiling_pipe", "ceiling_share" (ceiling_us / pred_us) and "headroom" (the
// bottleneck view's sentence); null on a row without a prediction.
void add_bottleneck_json(nlohmann::json& j, const std::optional<Bottleneck>& b) {
  if (!b) {
    for (const char* c : {"pipes", "ceiling_pipe", "ceiling_share", "headroom"}) j[c] = nullptr;
    return;
  }
  nlohmann::json pipes = nlohmann::json::array();
  for (const PipeBusy& p : b->pipes) pipes.push_back({{"name", p.name}, {"busy_us", p.busy_us}, {"share", p.share}});
  j["pipes"] = std::move(pipes);
  j["ceiling_pipe"] = std::string(pipe_name(b->ceiling_pipe));
  j["ceiling_share"] = b->ceiling_share;
  j["headroom"] = b->headroom;
}
}  // namespace

int cmdPredictTrace(CliContext& ctx, const QCommandLineParser& args);

int cmdPredict(CliContext& ctx, const QCommandLineParser& args) {
  if (args.isSet("trace") && args.isSet("kernels")) {
    std::cerr << "perfloom predict: give either --kernels IN.csv or --trace FILE, not both\n";
    return 2;
  }
  if (args.isSet("trace") && args.isSet("engine")) {
    std::cerr << "perfloom predict: --engine applies to a kernel list (--kernels); a trace names its own kernels\n";
    return 2;
  }
  if (args.isSet("trace") && args.isSet("clocks")) {
    std::cerr << "perfloom predict: --clocks applies to a kernel list (--kernels); a trace's kernels ran as measured\n";
    return 2;
  }
  if (args.isSet("trace")) return cmdPredictTrace(ctx, args);
  if (!args.isSet("kernels")) {
    std::cerr << "perfloom predict: needs --kernels IN.csv (a kernel list) or --trace FILE (a profiled trace)\n";
    return 2;
  }
  if (!args.isSet("gpu")) {
    std::cerr << "perfloom predict: needs --gpu ID[,ID...]; perfloom gpus lists the ids\n";
    return 2;
  }
  const auto gpus = gpusFromList(ctx, args.value("gpu"));
  const storage::KernelList list = storage::read_kernel_list(args.value("kernels").toStdString());

  // --engine: an unnamed attention row stands for the kernels that engine runs on each GPU.
  std::optional<sim::ServingEngine> engine;
  if (args.isSet("engine")) engine = cliServingEngine(args);
  // --clocks sustained: each kernel repeated back to back at the power state it holds the GPU in.
  const bool sustained = cliClockState(args) == sim::ClockState::sustained;
  if (sustained)
    for (const GpuSpec* gpu : gpus)
      if (!gpu->sustained)
        throw std::invalid_argument("--clocks sustained needs a sustained-power curve of '" + gpu->id +
                                    "': its GPU file gives no TDP or no 16-bit tensor peak to scale a measured one by, "
                                    "and no calibration gives one; use burst clocks");
  std::vector<std::string> header = list.header;
  for (const char* c : {"gpu", "pred_us", "lo_us", "hi_us", "ceiling_us", "bound", "method", "error"})
    header.emplace_back(c);
  if (engine) header.emplace_back("implementation");
  if (sustained) header.emplace_back("sustained_slowdown");
  std::string warning;
  const auto predictor = make_default_predictor(&warning);
  if (!warning.empty()) std::cerr << "perfloom predict: warning: " << warning << "\n";
  // Every valid row on every GPU, in one batch per GPU.
  std::vector<KernelDesc> kernels;
  for (const auto& row : list.rows)
    if (row.kernel) kernels.push_back(*row.kernel);
  std::map<std::string, std::vector<Prediction>> batch;
  std::map<std::string, std::vector<std::string>> batch_errors;
  std::map<std::string, std::vector<sim::AttentionChoice>> chosen;  // --engine: per GPU, per kernel
  std::map<std::string, std::vector<double>> slowdowns;             // --clocks sustained: per GPU, per kernel
  for (const GpuSpec* gpu : gpus) {
    std::vector<KernelDesc> on_gpu = kernels;
    if (engine) {
      auto& c = chosen[gpu->id];
      c.resize(on_gpu.size());
      for (std::size_t i = 0; i < on_gpu.size(); ++i) {
        KernelDesc& k = on_gpu[i];
        if ((k.op != Op::attn_prefill && k.op != Op::attn_decode) || !k.name.empty()) continue;
        c[i] = sim::engine_attention(*engine, *gpu, k.shape.D, false);
        k.name = sim::attention_kernel_name(c[i].impl);
      }
    }
    batch[gpu->id] = predictor->predict_batch(on_gpu, *gpu, &batch_errors[gpu->id]);
    if (sustained) {
      auto& slow = slowdowns[gpu->id];
      slow.assign(on_gpu.size(), 1.0);
      for (std::size_t i = 0; i < on_gpu.size(); ++i) {
        Prediction& p = batch[gpu->id][i];
        if (!batch_errors[gpu->id][i].empty() || p.analysis.family == Family::communication) continue;
        slow[i] = gpu->sustained->repeated_kernel_slowdown(
            p.pred_us, sim::tensor_us_at_peak(p.analysis, *gpu, on_gpu[i].dtype), clock_bound_share(p.analysis));
        p.pred_us *= slow[i];
        p.lo_us *= slow[i];
        p.hi_us *= slow[i];
      }
    }
  }
  std::vector<std::vector<std::string>> rows;
  nlohmann::json json_rows = nlohmann::json::array();
  bool any_error = false;
  std::size_t kernel_index = 0;
  for (const auto& row : list.rows) {
    const std::size_t ki = row.kernel ? kernel_index++ : 0;
    for (const GpuSpec* gpu : gpus) {
      std::vector<std::string> out = row.fields;
      std::string error = row.error.empty() ? "" : "line " + std::to_string(row.line) + ": " + row.error;
      Prediction p;
      if (error.empty()) {
        p = batch[gpu->id][ki];
        if (!batch_errors[gpu->id][ki].empty())
          error = "line " + std::to_string(row.line) + ": " + batch_errors[gpu->id][ki];
      }
      out.push_back(gpu->id);
      if (error.empty()) {
        for (double v : {p.pred_us, p.lo_us, p.hi_us, p.ceiling_us}) out.push_back(num(v));
        out.emplace_back(pipe_name(p.bound));
        out.push_back(p.method);
        out.emplace_back();
      } else {
        any_error = true;
        out.insert(out.end(), 6, "");
        out.push_back(error);
      }
      const sim::AttentionChoice* choice =
          engine && row.kernel && !chosen[gpu->id][ki].reason.empty() ? &chosen[gpu->id][ki] : nullptr;
      if (engine) out.emplace_back(choice ? sim::attention_impl_name(choice->impl) : "");
      if (sustained) out.emplace_back(error.empty() ? num(slowdowns[gpu->id][ki]) : "");
      if (ctx.json) {
        nlohmann::json j;
        for (std::size_t i = 0; i < header.size(); ++i) j[header[i]] = out[i];
        for (const char* c : {"pred_us", "lo_us", "hi_us", "ceiling_us"})
          j[c] = error.empty() ? nlohmann::json(std::stod(j[c].get<std::string>())) : nlohmann::json(nullptr);
        if (sustained)
          j["sustained_slowdown"] = error.empty() ? nlohmann::json(slowdowns[gpu->id][ki]) : nlohmann::json(nullptr);
        // Where the time goes (model/bottleneck.h, what the bottleneck view shows), at full precision.
        add_bottleneck_json(
            j, error.empty() ? std::optional<Bottleneck>(bottleneck_of(*row.kernel, *gpu, p)) : std::nullopt);
        if (choice) j["implementation_reason"] = choice->reason;
        json_rows.push_back(j);
      }
      rows.push_back(std::move(out));
    }
  }
  std::ofstream file = cliOutFile(args);
  std::ostream* os = file.is_open() ? &file : &std::cout;
  if (ctx.json && !args.isSet("out")) {
    *os << nlohmann::json{{"predictions", json_rows}}.dump(2) << "\n";
  } else {
    *os << storage::csv_line(header) << "\n";
    for (const auto& r : rows) *os << storage::csv_line(r) << "\n";
  }
  if (args.isSet("out"))
    std::cerr << "perfloom predict: " << rows.size() << " predictions written to " << args.value("out").toStdString()
              << (any_error ? " (some rows have errors)" : "") << "\n";
  if (any_error) {
    for (const auto& r : rows)
      if (!r.back().empty())
        std::cerr << "perfloom predict: " << printable_name(args.value("kernels").toStdString()) << ": " << r.back()
                  << "\n";
    return 2;
  }
  return 0;
}

// ---- predict --trace: the what-if of a profiled trace (storage/trace_whatif.h) ----

namespace {

std::string fnum(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
std::string fopt(const std::optional<double>& v) { return v ? fnum(*v) : std::string(); }

std::string methods_text(const std::map<std::string, std::size_t>& m) {
  std::string out;
  for (const auto& [name, n] : m) out += (out.empty() ? "" : ";") + name + "=" + std::to_string(n);
  return out;
}

const std::vector<std::string>& trace_header() {
  static const std::vector<std::string> h = {"row_type", "seq",        "name",        "family", "op",      "dtype",
                                             "shape",    "source_gpu", "measured_us", "gpu",    "pred_us", "lo_us",
                                             "hi_us",    "ceiling_us", "bound",       "method", "error"};
  return h;
}

std::vector<std::string> total_row(const storage::TraceWhatIf& r, const storage::WhatIfTarget& t,
                                   const storage::WhatIfTotal& tot, bool whole) {
  std::string error;
  if (tot.errors) error = std::to_string(tot.errors) + " kernels without a prediction are not in the total";
  return {whole ? "total" : "family_total",
          "",
          whole ? "TOTAL" : "TOTAL " + std::string(family_name(tot.family)),
          whole ? "" : std::string(family_name(tot.family)),
          "",
          "",
          "",
          r.source_gpu->id,
          fnum(tot.measured_us),
          t.gpu->id,
          fnum(tot.pred_us),
          fnum(tot.lo_us),
          fnum(tot.hi_us),
          "",
          "",
          methods_text(tot.methods),
          error};
}

nlohmann::json total_json(const storage::WhatIfTotal& tot) {
  return {{"kernels", tot.kernels},
          {"errors", tot.errors},
          {"measured_us", tot.measured_us},
          {"pred_us", tot.pred_us},
          {"lo_us", tot.lo_us},
          {"hi_us", tot.hi_us},
          {"speedup", tot.pred_us > 0 ? nlohmann::json(tot.measured_us / tot.pred_us) : nlohmann::json(nullptr)},
          {"methods", tot.methods}};
}

}  // namespace

int cmdPredictTrace(CliContext& ctx, const QCommandLineParser& args) {
  if (!args.isSet("gpu")) {
    std::cerr << "perfloom predict: --trace needs --gpu ID[,ID...], the GPUs to predict the trace on; perfloom gpus "
                 "lists the ids\n";
    return 2;
  }
  const auto gpus = gpusFromList(ctx, args.value("gpu"));
  const GpuSpec* forced_source = nullptr;
  if (args.isSet("source-gpu")) forced_source = &ctx.gpus.get(args.value("source-gpu").trimmed().toStdString());
  const std::string file = args.value("trace").toStdString();

  // Open the output first: a path that cannot be written fails before any work.
  std::ofstream out_file = cliOutFile(args);

  storage::Database db(ctx.db_path);
  storage::KernelStore store(db);
  storage::ImportControl control;
  control.gpus = &ctx.gpus;
  const auto [source_id, imported] = store.import_or_find(file, control);
  const auto src = store.source(source_id);
  if (!src) throw std::runtime_error(file + ": source " + std::to_string(source_id) + " vanished from the database");
  const GpuSpec* source_gpu = forced_source;
  if (!source_gpu && !src->gpu_id.empty()) source_gpu = ctx.gpus.find(src->gpu_id);
  if (!source_gpu) {
    std::cerr << "perfloom predict: " << file << ": the trace does not say which known GPU it was measured on"
              << (src->gpu_name.empty() ? "" : " (it names \"" + src->gpu_name + "\")")
              << "; give it with --source-gpu ID (perfloom gpus lists the ids)\n";
    return 2;
  }
  if (forced_source && !src->gpu_id.empty() && src->gpu_id != forced_source->id)
    std::cerr << "perfloom predict: warning: " << file << " was recorded on " << src->gpu_id << "; --source-gpu "
              << forced_source->id << " used instead\n";

  std::string warning;
  const auto predictor = make_default_predictor(&warning);
  if (!warning.empty()) std::cerr << "perfloom predict: warning: " << warning << "\n";
  storage::WhatIfOptions options;
  if (db.read_only()) {
    options.write_cache = false;
    std::cerr << "perfloom predict: note: " << ctx.db_path.string()
              << " is read-only: predictions are not cached in it\n";
  }
  const storage::TraceWhatIf r = storage::run_trace_whatif(store, source_id, *source_gpu, gpus, *predictor, options);
  if (!r.cache_skipped.empty()) {
    std::string ids;
    for (const auto& id : r.cache_skipped) ids += (ids.empty() ? "" : ", ") + id;
    std::cerr << "perfloom predict: note: " << ctx.db_path.string()
              << " is being written by another import: the predictions on " << ids
              << " are not cached this time\n";
  }

  std::size_t errors = 0;
  std::map<std::string, std::size_t> error_reasons;
  for (const auto& t : r.targets)
    for (const auto& c : t.cells)
      if (c.method == storage::WhatIfMethod::error) {
        ++errors;
        if (error_reasons.size() < 5 || error_reasons.count(t.gpu->id + ": " + c.error))
          ++error_reasons[t.gpu->id + ": " + c.error];
      }

  nlohmann::json cache = nlohmann::json::object();
  for (const auto& t : r.targets)
    cache[t.gpu->id] = {{"from_cache", t.from_cache}, {"predicted_kernels", t.predicted_kernels}};
  nlohmann::json source_json{{"id", r.source.id},           {"path", r.source.path},
                             {"format", r.source.format},   {"gpu_id", source_gpu->id},
                             {"kernels", r.kernels.size()}, {"distinct_kernels", r.distinct_kernels},
                             {"imported_now", imported}};

  const bool csv_out = args.isSet("out");  // every row to the file; stdout gets the JSON or the table
  const bool table = !ctx.json;            // human: a totals table, not 100k kernel rows

  if (args.isSet("out") || ctx.json) {
    std::ostream& os = args.isSet("out") ? static_cast<std::ostream&>(out_file) : std::cout;
    nlohmann::json rows = nlohmann::json::array(), totals = nlohmann::json::array();
    if (csv_out) os << storage::csv_line(trace_header()) << "\n";
    std::vector<std::string> row;
    for (std::size_t i = 0; i < r.kernels.size(); ++i) {
      const auto& k = r.kernels[i];
      const std::string shape = storage::readable_shape(k.desc, k.shape_known);
      for (const auto& t : r.targets) {
        const auto& c = t.cells[i];
        const bool err = c.method == storage::WhatIfMethod::error;
        row = {"kernel",
               std::to_string(k.seq),
               k.desc.name,
               std::string(family_name(k.family)),
               k.desc.op == Op::unknown ? "" : std::string(op_name(k.desc.op)),
               k.dtype_known ? std::string(dtype_name(k.desc.dtype)) : "",
               shape,
               r.source_gpu->id,
               fopt(k.measured_us),
               t.gpu->id,
               err ? "" : fnum(c.pred_us),
               err ? "" : fopt(c.lo_us),
               err ? "" : fopt(c.hi_us),
               fopt(c.ceiling_us),
               c.bound,
               std::string(storage::whatif_method_name(c.method)),
               c.error};
        if (csv_out) {
          os << storage::csv_line(row) << "\n";
        } else {
          nlohmann::json j;
          const auto& h = trace_header();
          for (std::size_t c2 = 0; c2 < h.size(); ++c2) j[h[c2]] = row[c2];
          j["seq"] = k.seq;
          for (const char* col : {"measured_us", "pred_us", "lo_us", "hi_us", "ceiling_us"})
            j[col] = j[col].get<std::string>().empty() ? nlohmann::json(nullptr)
                                                       : nlohmann::json(std::stod(j[col].get<std::string>()));
          rows.push_back(std::move(j));
        }
      }
    }
    // The totals last: per target, each family, then the whole trace.
    for (const auto& t : r.targets) {
      for (const auto& [fam, tot] : t.by_family) {
        if (csv_out) os << storage::csv_line(total_row(r, t, tot, false)) << "\n";
        nlohmann::json j = total_json(tot);
        j["row_type"] = "family_total";
        j["gpu"] = t.gpu->id;
        j["family"] = std::string(family_name(fam));
        totals.push_back(std::move(j));
      }
      if (csv_out) os << storage::csv_line(total_row(r, t, t.total, true)) << "\n";
      nlohmann::json j = total_json(t.total);
      j["row_type"] = "total";
      j["gpu"] = t.gpu->id;
      totals.push_back(std::move(j));
    }
    if (ctx.json) {
      nlohmann::json doc{{"source", source_json},
                         {"source_gpu", source_gpu->id},
                         {"model_version", r.model_version},
                         {"cache", cache},
                         {"totals", totals},
                         {"errors", errors}};
      if (args.isSet("out"))
        doc["out"] = args.value("out").toStdString();
      else
        doc["rows"] = std::move(rows);
      std::cout << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
    if (args.isSet("out")) {
      out_file.flush();
      if (!out_file) throw std::runtime_error(args.value("out").toStdString() + ": write failed");
      std::cerr << "perfloom predict: " << r.kernels.size() * r.targets.size()
                << " kernel rows and the totals written to " << args.value("out").toStdString() << "\n";
    }
  }
  if (table) {
    std::printf("%s: %zu kernels measured on %s (source %lld%s), model %s\n", file.c_str(), r.kernels.size(),
                source_gpu->id.c_str(), static_cast<long long>(r.source.id), imported ? ", imported now" : "",
                r.model_version.c_str());
    std::printf("%-14s %-12s %8s %14s %14s %25s %8s  %s\n", "gpu", "family", "kernels", "measured_us", "pred_us",
                "lo_us..hi_us", "speedup", "methods");
    for (const auto& t : r.targets) {
      auto line = [&](const std::string& fam, const storage::WhatIfTotal& tot) {
        const std::string interval = fnum(tot.lo_us) + ".." + fnum(tot.hi_us);
        const std::string speed = tot.pred_us > 0 ? fnum(tot.measured_us / tot.pred_us) : "-";
        std::printf("%-14s %-12s %8zu %14s %14s %25s %8s  %s%s\n", t.gpu->id.c_str(), fam.c_str(), tot.kernels,
                    fnum(tot.measured_us).c_str(), fnum(tot.pred_us).c_str(), interval.c_str(), speed.c_str(),
                    methods_text(tot.methods).c_str(), t.from_cache && &tot == &t.total ? " (cached)" : "");
      };
      for (const auto& [fam, tot] : t.by_family) line(std::string(family_name(fam)), tot);
      line("TOTAL", t.total);
    }
    std::printf("speedup: measured on %s / predicted on the GPU; --out FILE.csv writes every kernel\n",
                source_gpu->id.c_str());
  }
  if (errors) {
    std::cerr << "perfloom predict: " << errors << " kernel predictions not possible, for example:\n";
    for (const auto& [why, n] : error_reasons) std::cerr << "perfloom predict:   " << why << " (" << n << ")\n";
    return 2;
  }
  return 0;
}

}  // namespace perfloom::app
