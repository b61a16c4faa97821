// `perfloom gpus [ID...] [--json]`: the GPU database.
#include <QString>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli_commands.h"
#include "model/learned_predictor.h"

namespace perfloom::app {

namespace {
std::string fmt(std::optional<double> v, int precision = 0) {
  if (!v) return "-";
  std::ostringstream os;
  os << std::fixed << std::setprecision(precision) << *v;
  return os.str();
}
}  // namespace

// Per family, what the learned models know of the GPU (`perfloom gpus ID`): how many of its
// measured kernels trained them, and which booster answers it.
nlohmann::json learned_coverage(const KernelPredictor& models, const GpuSpec& g) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& c : models.coverage(g.id))
    out[std::string(family_name(c.family))] = {
        {"training_rows", c.training_rows},
        {"booster", c.one_booster ? "the family's one booster, for every GPU"
                    : c.scope == GpuScope::unseen
                        ? "the booster for GPUs not in training (without the GPU's rate features)"
                        : "the booster for the GPUs in training"}};
  return out;
}

int cmdGpus(CliContext& ctx, const QStringList& positional) {
  std::vector<const GpuSpec*> chosen;
  if (positional.isEmpty()) {
    for (const auto& g : ctx.gpus.all()) chosen.push_back(&g);
  } else {
    for (const auto& key : positional) chosen.push_back(&ctx.gpus.get(key.toStdString()));
  }
  // Named GPUs also say what the learned models know of them (loading the models takes ~0.6 s).
  std::shared_ptr<const KernelPredictor> predictor;
  const KernelPredictor* learned = nullptr;  // set when the predictor was trained on measurements
  if (!positional.isEmpty()) {
    std::string warning;
    predictor = make_default_predictor(&warning);
    if (predictor->is_learned()) learned = predictor.get();
    if (!warning.empty()) std::cerr << "perfloom gpus: warning: " << warning << "\n";
  }
  if (ctx.json) {
    nlohmann::json out;
    out["gpus"] = nlohmann::json::array();
    for (const auto* g : chosen) {
      out["gpus"].push_back(gpu_spec_to_json(*g));
      if (learned) out["gpus"].back()["learned_models"] = learned_coverage(*learned, *g);
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (!positional.isEmpty()) {
    // Details of the named GPUs, with the source of each figure.
    for (const auto* g : chosen) {
      nlohmann::json j = gpu_spec_to_json(*g);
      std::cout << g->id << ": " << g->name << " (" << g->source_file << ")\n";
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (it.key() == "sources" || it.key() == "source_file" || it.key() == "id" || it.key() == "name") continue;
        std::cout << "  " << std::left << std::setw(32) << it.key() << it.value().dump();
        auto s = g->sources.find(it.key());
        if (s != g->sources.end())
          std::cout << "\n  " << std::setw(32) << ""
                    << "source: " << s->second;
        std::cout << "\n";
      }
      if (learned) {
        const nlohmann::json coverage = learned_coverage(*learned, *g);
        for (const auto& [fam, c] : coverage.items()) {
          const auto rows = c["training_rows"].get<std::size_t>();
          std::cout << "  " << std::left << std::setw(32) << ("learned model, " + fam)
                    << (rows ? "trained on " + std::to_string(rows) + " of its kernels"
                             : std::string("not in training"))
                    << "; answered by " << c["booster"].get<std::string>() << "\n";
        }
      }
    }
    return 0;
  }
  std::cout << std::left << std::setw(22) << "id" << std::setw(11) << "arch" << std::setw(5) << "cc" << std::right
            << std::setw(5) << "SMs" << std::setw(7) << "MHz" << std::setw(9) << "bf16TF" << std::setw(9) << "fp8TF"
            << std::setw(8) << "tf32TF" << std::setw(8) << "fp32TF" << std::setw(7) << "GiB" << std::setw(8) << "GB/s"
            << std::setw(6) << "L2MiB"
            << "  name\n";
  for (const auto* g : chosen) {
    auto half = g->peak_flops_per_s(g->supports(Dtype::bf16) ? Dtype::bf16 : Dtype::fp16);
    auto tf = [](std::optional<double> v) { return v ? std::optional<double>(*v / 1e12) : std::nullopt; };
    std::cout << std::left << std::setw(22) << g->id << std::setw(11) << g->architecture << std::setw(5)
              << g->compute_capability << std::right << std::setw(5) << g->sm_count << std::setw(7)
              << fmt(g->boost_clock_mhz) << std::setw(9) << fmt(tf(half), 1) << std::setw(9)
              << fmt(tf(g->peak_flops_per_s(Dtype::fp8e4m3)), 1) << std::setw(8)
              << fmt(tf(g->peak_flops_per_s(Dtype::tf32)), 1) << std::setw(8) << fmt(g->fp32_flops_per_s() / 1e12, 1)
              << std::setw(7) << fmt(g->memory_gib) << std::setw(8) << fmt(g->memory_bandwidth_gb_s) << std::setw(6)
              << fmt(g->l2_cache_mib) << "  " << g->name << "\n";
  }
  return 0;
}

}  // namespace perfloom::app
