// `perfloom predict --kernels IN.csv --gpu ID[,ID...] [--out OUT.csv]` (CONTRACT.md).
#include <fstream>
#include <map>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli_commands.h"
#include "model/families/family_models.h"
#include "model/learned_predictor.h"
#include "model/predictor.h"
#include "storage/kernel_list_csv.h"

namespace perfloom::app {

std::vector<const GpuSpec*> gpusFromList(const CliContext& ctx, const QString& list) {
  std::vector<const GpuSpec*> out;
  for (const QString& id : list.split(',', Qt::SkipEmptyParts)) out.push_back(&ctx.gpus.get(id.trimmed().toStdString()));
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
}  // namespace

int cmdPredict(CliContext& ctx, const QCommandLineParser& args) {
  if (!args.isSet("kernels")) {
    std::cerr << "perfloom predict: needs --kernels IN.csv (predict --trace is not in this build yet)\n";
    return 2;
  }
  if (!args.isSet("gpu")) {
    std::cerr << "perfloom predict: needs --gpu ID[,ID...]; perfloom gpus lists the ids\n";
    return 2;
  }
  const auto gpus = gpusFromList(ctx, args.value("gpu"));
  const storage::KernelList list = storage::read_kernel_list(args.value("kernels").toStdString());

  std::vector<std::string> header = list.header;
  for (const char* c : {"gpu", "pred_us", "lo_us", "hi_us", "ceiling_us", "bound", "method", "error"}) header.push_back(c);
  std::string warning;
  const auto predictor = make_default_predictor(&warning);
  if (!warning.empty()) std::cerr << "perfloom predict: warning: " << warning << "\n";
  // Every valid row on every GPU, in one batch per GPU.
  std::vector<KernelDesc> kernels;
  for (const auto& row : list.rows)
    if (row.kernel) kernels.push_back(*row.kernel);
  std::map<std::string, std::vector<Prediction>> batch;
  std::map<std::string, std::vector<std::string>> batch_errors;
  for (const GpuSpec* gpu : gpus) {
    auto& preds = batch[gpu->id];
    auto& errs = batch_errors[gpu->id];
    if (const auto* learned = dynamic_cast<const LearnedPredictor*>(predictor.get())) {
      preds = learned->predict_batch(kernels, *gpu, &errs);
    } else {
      for (const auto& k : kernels) {
        try {
          preds.push_back(predictor->predict(k, *gpu));
          errs.emplace_back();
        } catch (const UnsupportedKernel& e) {
          preds.emplace_back();
          errs.emplace_back(e.what());
        }
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
        if (!batch_errors[gpu->id][ki].empty()) error = "line " + std::to_string(row.line) + ": " + batch_errors[gpu->id][ki];
      }
      out.push_back(gpu->id);
      if (error.empty()) {
        for (double v : {p.pred_us, p.lo_us, p.hi_us, p.ceiling_us}) out.push_back(num(v));
        out.push_back(std::string(pipe_name(p.bound)));
        out.push_back(p.method);
        out.push_back("");
      } else {
        any_error = true;
        out.insert(out.end(), 6, "");
        out.push_back(error);
      }
      if (ctx.json) {
        nlohmann::json j;
        for (std::size_t i = 0; i < header.size(); ++i) j[header[i]] = out[i];
        for (const char* c : {"pred_us", "lo_us", "hi_us", "ceiling_us"})
          j[c] = error.empty() ? nlohmann::json(std::stod(j[c].get<std::string>())) : nlohmann::json(nullptr);
        json_rows.push_back(j);
      }
      rows.push_back(std::move(out));
    }
  }
  std::ofstream file;
  std::ostream* os = &std::cout;
  if (args.isSet("out")) {
    file.open(args.value("out").toStdString());
    if (!file) throw std::runtime_error(args.value("out").toStdString() + ": cannot be written");
    os = &file;
  }
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
      if (!r.back().empty()) std::cerr << "perfloom predict: " << r.back() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace perfloom::app
