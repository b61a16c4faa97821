#include "ui/export_chart_command.h"

#include <QChart>
#include <QCommandLineParser>
#include <filesystem>
#include <iostream>
#include <memory>

#include "model/gpu_database.h"
#include "storage/database.h"
#include "storage/kernel_store.h"
#include "model/learned_predictor.h"
#include "ui/bottleneck_view.h"
#include "ui/chart_export.h"
#include "ui/kernel_spec.h"
#include "ui/plan_view.h"
#include "ui/simulator_view.h"
#include "ui/tuner_view.h"
#include "ui/whatif_view.h"

namespace perfloom::ui {

namespace {
const char* kUsage =
    "perfloom export-chart VIEW [options] --out FILE.(png|svg|pdf)\n"
    "  bottleneck --gpu ID[,ID...] --kernel OP:DTYPE:DIM=V,...   e.g. gemm:bf16:M=4096,N=4096,K=4096\n"
    "  whatif     --gpu ID[,ID...] (--kernels IN.csv | --trace FILE [--db PATH])\n"
    "  simulator  --gpu ID[,ID...] --model M [--tp N] --workload SPEC [--rates 1,2,4,8]\n"
    "             [--metric ttft-p50|ttft-p90|tpot-p50|tpot-p90|e2e-p50|e2e-p90|output-tokens-per-s|requests-per-s]\n"
    "  tuner      --gpu ID --kernel gemm:DTYPE:M=..,N=..,K=.. [--chart bars|sweep] [--sweep M|N]\n"
    "  plan       --gpu ID[,ID...] --model M --workload SPEC --sla BOUNDS [--tp 1,2,4,8] [--max-gpus N]\n"
    "             [--prices FILE]   the Pareto front per GPU type (a poisson: spec runs as a closed loop)\n"
    "  --width PX --height PX (900x560), --scale 1|2 (PNG device pixel ratio, 1), --gpus-dir DIR\n";

std::vector<GpuSpec> pickGpus(const GpuDatabase& db, const QString& list) {
  std::vector<GpuSpec> gpus;
  for (const QString& id : list.split(',', Qt::SkipEmptyParts)) gpus.push_back(db.get(id.trimmed().toStdString()));
  if (gpus.empty()) throw std::invalid_argument("needs --gpu ID[,ID...]");
  return gpus;
}
// An integer option within [lo, hi], or std::invalid_argument naming the option and the value.
int int_option(const QCommandLineParser& p, const char* name, int lo, int hi) {
  bool ok = false;
  const int v = p.value(name).trimmed().toInt(&ok);
  if (!ok || v < lo || v > hi)
    throw std::invalid_argument("--" + std::string(name) + " must be an integer from " + std::to_string(lo) + " to " +
                                std::to_string(hi) + " (got \"" + p.value(name).toStdString() + "\")");
  return v;
}

// The source of `file` in the database at `db_path`: imported now, or the one holding its content.
int64_t import_or_find(const std::filesystem::path& db_path, const std::string& file, const GpuDatabase& gpus) {
  storage::Database database(db_path);
  storage::KernelStore store(database);
  storage::ImportControl control;
  control.gpus = &gpus;
  return store.import_or_find(file, control).source_id;
}
}  // namespace

int runExportChart(const QStringList& args) {
  QCommandLineParser p;
  p.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
  p.addOptions({{"gpu", "GPUs", "IDS"},
                {"kernel", "kernel", "SPEC"},
                {"kernels", "kernel list", "CSV"},
                {"trace", "whatif: a profiled trace (imported into --db unless it is there)", "FILE"},
                {"db", "whatif --trace: the database", "PATH"},
                {"model", "LLM", "M"},
                {"tp", "tensor parallel", "N", "1"},
                {"workload", "workload", "SPEC"},
                {"rates", "rate sweep", "LIST"},
                {"metric", "simulator: what is drawn against the rate", "NAME", "ttft-p50"},
                {"out", "output file", "FILE"},
                {"width", "width", "PX", "900"},
                {"height", "height", "PX", "560"},
                {"scale", "device pixel ratio", "F", "1"},
                {"gpus-dir", "extra GPU files", "DIR"},
                {"chart", "tuner chart", "bars|sweep", "bars"},
                {"sweep", "tuner sweep dimension", "M|N", "M"},
                {"sla", "plan SLA", "BOUNDS"},
                {"max-gpus", "plan: GPUs of one deployment at most", "N", "8"},
                {"prices", "plan: price file", "CSV"},
                {{"h", "help"}, "help"}});
  QStringList argv = args;
  argv.front() = "perfloom export-chart";
  if (!p.parse(argv)) {
    std::cerr << "perfloom export-chart: " << p.errorText().toStdString() << "\n" << kUsage;
    return 2;
  }
  if (p.isSet("help")) {
    std::cout << kUsage;
    return 0;
  }
  const QStringList pos = p.positionalArguments();
  if (pos.size() != 1 || !p.isSet("out")) {
    std::cerr << "perfloom export-chart: needs one VIEW and --out FILE\n" << kUsage;
    return 2;
  }
  try {
    GpuDatabase db = GpuDatabase::builtin();
    const QString extra = p.isSet("gpus-dir") ? p.value("gpus-dir") : qEnvironmentVariable("PERFLOOM_GPUS_DIR");
    if (!extra.isEmpty()) db.add_directory(extra.toStdString());
    const std::vector<GpuSpec> gpus = pickGpus(db, p.value("gpu"));
    const QString view = pos.front().toLower();
    std::unique_ptr<QChart> chart;
    if (view == "bottleneck") {
      if (!p.isSet("kernel")) throw std::invalid_argument("bottleneck needs --kernel OP:DTYPE:DIM=V,...");
      auto predictor = make_default_predictor(nullptr);
      const BottleneckResult r = compute_bottleneck(parse_kernel_spec(p.value("kernel")), gpus, *predictor);
      for (const auto& g : r.gpus) std::cerr << g.headroom.toStdString() << "\n";
      chart.reset(build_bottleneck_chart(r));
    } else if (view == "whatif" || view == "what-if") {
      if (p.isSet("kernels") == p.isSet("trace"))
        throw std::invalid_argument("whatif needs --kernels IN.csv or --trace FILE (one of them)");
      auto predictor = make_default_predictor(nullptr);
      if (p.isSet("trace")) {
        const std::filesystem::path db_path =
            p.isSet("db") ? std::filesystem::path(p.value("db").toStdString()) : storage::Database::default_path();
        const int64_t source_id = import_or_find(db_path, p.value("trace").toStdString(), db);
        const WhatIfResult r = compute_trace_whatif(db_path, source_id, db, gpus, *predictor);
        if (!r.error.isEmpty()) throw std::runtime_error(r.error.toStdString());
        std::cerr << "perfloom export-chart: " << r.kernels << " kernels measured on " << r.source_gpu_id.toStdString()
                  << ", " << r.source_measured_us << " us\n";
        chart.reset(build_whatif_chart(r));
      } else {
        chart.reset(build_whatif_chart(compute_whatif_file(p.value("kernels"), gpus, *predictor)));
      }
    } else if (view == "simulator") {
      if (!p.isSet("model") || !p.isSet("workload"))
        throw std::invalid_argument("simulator needs --model and --workload");
      const auto metric = parse_sim_metric(p.value("metric"));
      if (!metric)
        throw std::invalid_argument("--metric must be one of ttft-p50, ttft-p90, tpot-p50, tpot-p90, e2e-p50, e2e-p90, "
                                    "output-tokens-per-s, requests-per-s (got \"" +
                                    p.value("metric").toStdString() + "\")");
      SimulatorRequest req;
      req.model = p.value("model");
      req.gpus = gpus;
      req.tp = int_option(p, "tp", 1, 64);
      req.workload = p.value("workload");
      req.rates = parse_rates(p.value("rates"));
      const SimulatorResult r = run_simulations(req, {});
      for (const auto& run : r.runs)
        if (!run.error.isEmpty()) throw std::runtime_error(run.error.toStdString());
      chart.reset(build_simulator_chart(r, *metric));
    } else if (view == "plan") {
      if (!p.isSet("model") || !p.isSet("workload") || !p.isSet("sla"))
        throw std::invalid_argument("plan needs --model, --workload and --sla");
      PlanRequest req;
      req.model = p.value("model");
      req.workload = p.value("workload");
      req.sla = p.value("sla");
      req.gpus = gpus;
      bool ok = false;
      req.max_gpus = p.value("max-gpus").toInt(&ok);
      if (!ok || req.max_gpus < 1) throw std::invalid_argument("--max-gpus must be a positive integer");
      if (p.isSet("tp")) {
        req.tp.clear();
        for (const QString& t : p.value("tp").split(',', Qt::SkipEmptyParts)) {
          const int v = t.trimmed().toInt(&ok);
          if (!ok || v < 1 || v > 64)
            throw std::invalid_argument("--tp lists TP degrees from 1 to 64 (got \"" + t.toStdString() + "\")");
          req.tp.push_back(v);
        }
        if (req.tp.empty()) throw std::invalid_argument("--tp names no TP degree");
      }
      req.prices = load_prices(db, p.value("prices"));
      const PlanViewResult r = run_plan(req, {});
      if (!r.error.isEmpty()) throw std::runtime_error(r.error.toStdString());
      if (r.plan.pareto.empty()) throw std::runtime_error("no deployment fits: nothing to draw");
      chart.reset(build_plan_chart(r));
    } else if (view == "tuner") {
      if (!p.isSet("kernel")) throw std::invalid_argument("tuner needs --kernel gemm:DTYPE:M=..,N=..,K=..");
      const KernelDesc k = parse_kernel_spec(p.value("kernel"));
      if (k.op != Op::gemm)
        throw std::invalid_argument("tuner needs a gemm kernel, e.g. gemm:bf16:M=4096,N=4096,K=4096");
      const QString which = p.value("chart").toLower(), sweep = p.value("sweep").toUpper();
      if (which != "bars" && which != "sweep") throw std::invalid_argument("--chart must be bars or sweep");
      if (sweep != "M" && sweep != "N") throw std::invalid_argument("--sweep must be M or N");
      TunerRequest req;
      req.shape = {k.shape.M, k.shape.N, k.shape.K, k.dtype};
      req.gpu = gpus.front();
      req.sweep_dim = sweep == "N" ? 'N' : 'M';
      req.predictor = make_default_predictor(nullptr);
      const TunerViewResult r = compute_tuner(req);
      if (!r.error.isEmpty()) throw std::runtime_error(r.error.toStdString());
      if (!r.ranked.empty())
        std::cerr << "best: " << config_label(r.ranked.front().config).toStdString() << ", " << r.ranked.front().pred_us
                  << " us: " << r.ranked.front().reason << " (" << r.method.toStdString() << ")\n";
      chart.reset(which == "sweep" ? build_tuner_sweep_chart(r) : build_tuner_bar_chart(r));
    } else {
      std::cerr << "perfloom export-chart: unknown view '" << view.toStdString() << "'\n" << kUsage;
      return 2;
    }
    QString error;
    const QSize size(int_option(p, "width", 16, 16384), int_option(p, "height", 16, 16384));
    bool scale_ok = false;
    const double scale = p.value("scale").trimmed().toDouble(&scale_ok);
    if (!scale_ok || !(scale >= 0.25 && scale <= 8))
      throw std::invalid_argument("--scale must be a number from 0.25 to 8 (got \"" + p.value("scale").toStdString() +
                                  "\")");
    if (!ChartExporter::save(chart.get(), p.value("out"), size, scale, &error))
      throw std::runtime_error(error.toStdString());
    std::cerr << "perfloom export-chart: wrote " << p.value("out").toStdString() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "perfloom export-chart: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace perfloom::ui
