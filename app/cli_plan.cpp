// `perfloom plan --model M --workload SPEC --sla BOUNDS [--load RATE] [--gpus ID,...|all] [--prices FILE]
// [--max-gpus N]` (docs/cli.md): the cheapest deployments that meet a latency SLA at a target load, or
// without one the Pareto front of throughput per GPU against tokens/s per user.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "app/cli_commands.h"
#include "model/file_reader.h"
#include "model/learned_predictor.h"
#include "model/plan/plan_json.h"
#include "model/plan/planner.h"
#include "model/text_fields.h"

namespace perfloom::app {

namespace {

std::string sla_text(const plan::PlanSla& sla) {
  std::string s;
  for (const auto& b : sla.bounds) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%s <= %g ms", s.empty() ? "" : ", ", b.name().c_str(), b.ms);
    s += buf;
  }
  return s;
}

// The plan as `plan` prints it (text), whether it ran here or was merged from shards.
void print_plan(const plan::PlanResult& r, double secs, int top) {
  std::printf("%s, %s, SLA %s: %zu GPU types, %zu simulations in %.1f s\n", r.model.c_str(), r.workload.c_str(),
              sla_text(r.sla).c_str(), r.gpu_types.size(), r.simulations, secs);
  if (r.load) {
    std::printf("target load: %g %s (%.3f requests/s)\n", r.load->value,
                r.load->kind == plan::Load::Kind::requests ? "req/s" : "output tok/s", r.rate);
    if (r.ranked.empty()) {
      std::printf("no deployment meets the SLA within --max-gpus %d; the closest misses:\n", r.max_gpus);
    } else {
      int width = 38;  // the deployment column: as wide as the longest shown
      for (std::size_t i = 0; i < r.ranked.size() && static_cast<int>(i) < top; ++i)
        width = std::max(width, static_cast<int>(r.ranked[i].d.describe().size()));
      std::printf("%-4s %-*s %9s %12s", "rank", width, "deployment", "$/hour", "$/M out tok");
      for (const auto& b : r.sla.bounds) std::printf(" %12s", b.name().c_str());
      std::printf(" %8s  %s\n", "headroom", "note");
      int k = 0;
      for (const auto& c : r.ranked) {
        if (++k > top) break;
        std::string note = c.simulated_whole ? "" : "estimate (one instance at load/R)";
        if (c.at_risk) note += std::string(note.empty() ? "" : "; ") + "interval crosses the SLA";
        if (c.priced)
          std::printf("%-4d %-*s %9.2f %12.3f", k, width, c.d.describe().c_str(), c.usd_per_hour,
                      c.usd_per_million_output_tokens);
        else
          std::printf("%-4d %-*s %9s %12s", k, width, c.d.describe().c_str(), "-", "-");
        for (double v : c.bound_values) std::printf(" %12.1f", v);
        std::printf(" %7.0f%%  %s\n", 100 * c.headroom, note.c_str());
      }
      if (static_cast<int>(r.ranked.size()) > top)
        std::printf("(%zu more feasible; --top N shows more)\n", r.ranked.size() - static_cast<std::size_t>(top));
    }
  } else {
    std::printf("Pareto front per GPU type%s: output tokens/s per GPU against tokens/s per user (1/TPOT)\n",
                r.disaggregated ? " (and per GPU type disaggregated: xPyD, x prefill + y decode instances)" : "");
    std::printf("%-22s %4s %6s %14s %14s %10s %10s %12s %s\n", "gpu", "tp", "conc", "tok/s/gpu", "tok/s/user",
                "ttft_p90", "tpot_p90", "$/M out tok", "sla");
    for (const auto& p : r.pareto) {
      if (!p.on_front) continue;
      std::printf("%-22s %4s %6d %14.1f %14.1f %10.1f %10.2f ", p.gpu->id.c_str(),
                  (std::to_string(p.tp) + (p.pp > 1 ? "x" + std::to_string(p.pp) : "")).c_str(), p.concurrency,
                  p.tokens_per_s_per_gpu, p.tokens_per_s_per_user, p.ttft_p90_ms, p.tpot_p90_ms);
      if (p.priced)
        std::printf("%12.3f", p.usd_per_million_output_tokens);
      else
        std::printf("%12s", "-");
      const std::string e = p.settings.describe();
      // A disaggregated point names its pools (and its settings with them).
      const std::string what = p.disaggregated() ? p.describe() : e;
      std::printf(" %s%s\n", p.meets_sla ? "meets" : "misses", what.empty() ? "" : ("  " + what).c_str());
    }
  }
  if (!r.rejected.empty()) {
    std::printf("left out (%zu):\n", r.rejected.size());
    for (const auto& c : r.rejected) {
      const std::string e = c.d.settings.describe();
      if (c.d.disaggregated() || c.d.wide_ep)
        std::printf("  %s: %s\n", c.d.describe().c_str(), c.why_not.substr(0, 300).c_str());
      else
        std::printf("  %s TP %d%s%s: %s\n", c.d.gpu->id.c_str(), c.d.tp,
                    c.d.pp > 1 ? (" PP " + std::to_string(c.d.pp)).c_str() : "",
                    e.empty() ? "" : (" (" + e + ")").c_str(), c.why_not.substr(0, 300).c_str());
    }
  }
  for (const auto& n : r.notes) std::printf("note: %s\n", n.c_str());
  std::printf("interval: +-%.0f%% (--uncertainty) around each predicted latency\n", 100 * r.uncertainty);
}

// `plan --merge A.json,B.json,...`: the shards of one `--shard K/N` run joined.
int mergePlans(CliContext& ctx, const QCommandLineParser& args) {
  for (const char* alone : {"model", "workload", "sla", "load", "shard", "gpus", "prices", "tp", "pp", "max-gpus",
                            "quantization", "kv-cache-dtype", "chunked-prefill", "max-num-seqs", "disaggregated",
                            "kv-transfer-gbps", "wide-ep"})
    if (args.isSet(alone)) {
      std::cerr << "perfloom plan: --merge joins finished shards and takes no --" << alone << "\n";
      return 2;
    }
  std::vector<plan::PlanShard> shards;
  std::vector<std::string> labels;
  for (const QString& list : args.values("merge"))
    for (const QString& f : list.split(',', Qt::SkipEmptyParts)) {
      const std::string path = f.trimmed().toStdString();
      const std::string text = read_file_guarded(path, file_limits::plan_json);
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(text);
      } catch (const nlohmann::json::parse_error& e) {
        throw std::invalid_argument(path + ": not JSON (byte " + std::to_string(e.byte) + ")");
      }
      shards.push_back(plan::plan_from_json(j, ctx.gpus, path));
      labels.push_back(path);
    }
  const plan::PlanResult r = plan::merge_plans(shards, labels);
  if (ctx.json) {
    std::cout << plan::plan_to_json(r).dump(2) << "\n";
    return 0;
  }
  print_plan(r, 0.0, static_cast<int>(cliInteger(args, "top", 10, 1)));
  return 0;
}

}  // namespace

int cmdPlan(CliContext& ctx, const QCommandLineParser& args) {
  if (args.isSet("merge")) return mergePlans(ctx, args);
  for (const char* required : {"model", "workload", "sla"})
    if (!args.isSet(required)) {
      std::cerr << "perfloom plan: needs --" << required
                << " (perfloom plan --model M --workload SPEC --sla ttft_p90=MS,tpot_p90=MS [--load RATE] [--gpus "
                   "ID,...|all] [--prices FILE] [--max-gpus N])\n";
      return 2;
    }
  const auto t0 = std::chrono::steady_clock::now();
  plan::PlanOptions o;
  o.workload = args.value("workload").toStdString();
  o.sla = plan::parse_plan_sla(args.value("sla").toStdString());
  if (args.isSet("load")) o.load = plan::parse_load(args.value("load").toStdString());
  o.max_gpus = static_cast<int>(cliInteger(args, "max-gpus", 8, 1));
  if (o.max_gpus > 4096) throw std::invalid_argument("--max-gpus must be at most 4096");
  // --tp and --pp: degrees from 1 to 64, comma-separated.
  auto degrees = [&](const char* name, const std::string& what, const std::string& none, std::vector<int>& out) {
    if (!args.isSet(name)) return;
    out.clear();
    for (const QString& t : args.value(name).split(',', Qt::SkipEmptyParts)) {
      bool ok = false;
      const int v = t.trimmed().toInt(&ok);
      if (!ok || v < 1 || v > 64)
        throw std::invalid_argument(std::string("--") + name + " lists " + what + " from 1 to 64 (got \"" +
                                    t.toStdString() + "\")");
      out.push_back(v);
    }
    if (out.empty()) throw std::invalid_argument(std::string("--") + name + " names " + none);
  };
  degrees("tp", "TP degrees", "no TP degree", o.tp);
  degrees("pp", "pipeline-parallel degrees", "no degree", o.pp);
  if (args.isSet("uncertainty")) {
    bool ok = false;
    o.uncertainty = args.value("uncertainty").toDouble(&ok);
    if (!ok) throw std::invalid_argument("--uncertainty must be a fraction (0.2 for 20%)");
  }
  o.base.engine = cliServingEngine(args);
  // The engine settings searched: every combination of the values listed.
  auto list = [&](const char* name) {
    std::vector<std::string> out;
    if (args.isSet(name))
      for (const QString& v : args.value(name).split(',', Qt::SkipEmptyParts)) out.push_back(v.trimmed().toStdString());
    if (args.isSet(name) && out.empty()) throw std::invalid_argument(std::string("--") + name + " lists nothing");
    return out;
  };
  std::vector<bool> chunked;
  for (const std::string& v : list("chunked-prefill")) {
    if (v != "on" && v != "off")
      throw std::invalid_argument("--chunked-prefill lists on and off (got \"" + v.substr(0, 40) + "\")");
    chunked.push_back(v == "on");
  }
  // A list of counts from 1 to 2^24 ("counts", "token counts").
  auto counts = [&](const char* name, const char* what) {
    std::vector<int64_t> out;
    for (const std::string& v : list(name)) {
      int64_t n = 0;
      if (!parse_int(v, n) || n < 1 || n > (1 << 24))
        throw std::invalid_argument(std::string("--") + name + " lists " + what + " from 1 to 16777216 (got \"" +
                                    v.substr(0, 40) + "\")");
      out.push_back(n);
    }
    return out;
  };
  const std::vector<int64_t> seqs = counts("max-num-seqs", "counts");
  const std::vector<int64_t> batched = counts("max-num-batched-tokens", "token counts");
  o.disaggregated = args.isSet("disaggregated");
  o.wide_ep = args.isSet("wide-ep");
  if (args.isSet("kv-transfer-gbps")) {
    bool ok = false;
    o.kv_transfer_gb_s = args.value("kv-transfer-gbps").toDouble(&ok);
    if (!ok || !(o.kv_transfer_gb_s > 0) || o.kv_transfer_gb_s > 1e6)
      throw std::invalid_argument("--kv-transfer-gbps must be a bandwidth in GB/s above 0 (50: a 400 Gb/s NIC per GPU)");
  }
  o.settings = plan::engine_settings_grid(list("quantization"), list("kv-cache-dtype"), chunked, seqs, batched);
  if (o.settings.size() > 256)
    throw std::invalid_argument("the engine settings listed make " + std::to_string(o.settings.size()) +
                                " combinations; at most 256 are searched in one plan");

  std::vector<const GpuSpec*> gpus;
  if (!args.isSet("gpus") || args.value("gpus") == "all") {
    for (const GpuSpec& g : ctx.gpus.all()) gpus.push_back(&g);
  } else {
    gpus = gpusFromList(ctx, args.value("gpus"));
  }
  // --shard K/N: every N-th GPU type from the K-th on; the shards' JSON files merge (--merge) into
  // the plan a single run over all of them gives.
  plan::Shard shard;
  std::vector<std::string> all_gpu_types;
  if (args.isSet("shard")) {
    shard = plan::parse_shard(args.value("shard").toStdString());
    if (o.disaggregated)
      throw std::invalid_argument("--shard with --disaggregated: a disaggregated deployment may pair GPU types of two "
                                  "shards, which no shard sees; plan it in one run");
    if (!ctx.json) {
      std::cerr << "perfloom plan: --shard writes the shard's plan as JSON for --merge: add --json\n";
      return 2;
    }
    for (const GpuSpec* g : gpus) all_gpu_types.push_back(g->id);
    if (static_cast<std::size_t>(shard.count) > gpus.size())
      throw std::invalid_argument("--shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count) +
                                  ": there are only " + std::to_string(gpus.size()) +
                                  " GPU types to share out; use at most that many shards");
    gpus = plan::shard_of(gpus, shard);
  }

  plan::Prices prices = plan::bundled_prices();
  if (args.isSet("prices")) {
    const std::string path = args.value("prices").toStdString();
    const plan::Prices mine = plan::parse_prices_csv(read_file_guarded(path, file_limits::price_table), path);
    for (const auto& [id, entry] : mine.by_gpu) {
      const GpuSpec* g = ctx.gpus.find(id);
      if (!g) throw std::invalid_argument(path + ": \"" + id.substr(0, 80) + "\" names no known GPU (perfloom gpus)");
      prices.by_gpu[g->id] = entry;
    }
  }

  const sim::LlmConfig model = sim::load_llm_config(args.value("model").toStdString());
  std::string warning;
  const auto predictor = make_default_predictor(&warning);
  if (!warning.empty()) std::cerr << "perfloom plan: warning: " << warning << "\n";
  const plan::PlanResult r = plan::plan_deployments(model, gpus, *predictor, prices, o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (ctx.json) {
    std::cout << plan::plan_to_json(r, shard, all_gpu_types).dump(2) << "\n";
    return 0;
  }
  print_plan(r, secs, static_cast<int>(cliInteger(args, "top", 10, 1)));
  return 0;
}

}  // namespace perfloom::app
