// The communication model against NCCL measured on 2 and 4 H200s of one host:
//   perfloom-comm-check [data/nccl-h200/nccl.csv] > comm_check.md   (a Markdown report on stdout)
//
// For every measured all-reduce / all-gather (GPU-side time: CUDA-graph replay up to 64 MiB, eager
// above) it compares
//   - before: the roofline over a fixed NCCL efficiency (what perfloom predicted before this data),
//   - model: the analytical NCCL model alone (families/communication/nccl_model.h),
//   - held-out ranks: the estimate built from the *other* rank count's curve only (how well the
//     model carries a measurement to rank counts nobody measured),
//   - held-out sizes: the estimate from curves with every other size removed, on those sizes,
//   - shipped: the estimate with every curve (in-sample: the interpolation itself).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "model/families/communication/nccl_model.h"
#include "model/families/family_models.h"
#include "model/gpu_database.h"
#include "model/predictor.h"

using namespace perfloom;

namespace {

struct Row {
  Op op;
  int ranks;
  double bytes, us;
};

std::vector<Row> read_rows(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::string line;
  std::getline(in, line);
  if (line.rfind("op,dtype,bytes,ranks,mode,median_us", 0) != 0)
    throw std::runtime_error(path + ": line 1: not nccl_torch.py output");
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    if (f.size() < 6) continue;
    const double b = std::stod(f[2]);
    const bool gpu_side = f[4] == "graph" || b > double(64 << 20);
    if (!gpu_side) continue;
    rows.push_back({*parse_op(f[0]), std::stoi(f[3]), b, std::stod(f[5])});
  }
  return rows;
}

// Curves from rows, keeping those `keep` accepts.
template <class Keep>
std::vector<CollectiveCurve> curves_from(const std::vector<Row>& rows, double link_gb_s, Keep keep) {
  std::ostringstream csv;
  csv << "# gpu=h200\n# link_gb_s=" << link_gb_s << "\nop,ranks,bytes,median_us\n";
  std::vector<Row> sorted = rows;
  std::sort(sorted.begin(), sorted.end(), [](const Row& a, const Row& b) {
    return std::tie(a.op, a.ranks, a.bytes) < std::tie(b.op, b.ranks, b.bytes);
  });
  for (const Row& r : sorted)
    if (keep(r)) csv << op_name(r.op) << ',' << r.ranks << ',' << r.bytes << ',' << r.us << '\n';
  return parse_collective_curves(csv.str(), "comm-check");
}

struct Stats {
  std::vector<double> err;
  void add(double pred, double meas) { err.push_back(pred / meas - 1); }
  std::string cell() const {
    if (err.empty()) return "-";
    std::vector<double> a;
    for (double e : err) a.push_back(std::abs(e));
    std::sort(a.begin(), a.end());
    double mape = 0;
    for (double e : a) mape += e;
    mape /= a.size();
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.1f / %.1f / %.1f", 100 * mape, 100 * a[a.size() / 2],
                  100 * a[std::min(a.size() - 1, std::size_t(std::ceil(0.9 * a.size())) - 1)]);
    return buf;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : std::string("data/nccl-h200/nccl.csv");
  const auto rows = read_rows(path);
  const GpuDatabase db = GpuDatabase::builtin();
  const GpuSpec& h200 = db.get("h200");
  const double link_gb_s = h200.interconnect.nvlink_bandwidth_gb_s;

  const auto all = curves_from(rows, link_gb_s, [](const Row&) { return true; });
  // Every other size (by index within its curve) is held out.
  std::map<std::pair<Op, int>, int> index;
  std::map<const Row*, bool> held_size;
  {
    std::vector<const Row*> order;
    for (const Row& r : rows) order.push_back(&r);
    std::sort(order.begin(), order.end(), [](const Row* a, const Row* b) {
      return std::tie(a->op, a->ranks, a->bytes) < std::tie(b->op, b->ranks, b->bytes);
    });
    for (const Row* r : order) held_size[r] = (index[{r->op, r->ranks}]++ % 2) == 1;
  }
  const auto even_sizes = curves_from(rows, link_gb_s, [&](const Row& r) {
    for (const auto& [p, h] : held_size)
      if (p->op == r.op && p->ranks == r.ranks && p->bytes == r.bytes) return !h;
    return true;
  });

  std::map<std::string, std::map<std::string, Stats>> table;  // group -> column -> stats
  std::ostringstream detail;
  detail << "| op | ranks | bytes | measured us | before | model | held-out ranks | shipped "
            "|\n|---|---|---|---|---|---|---|---|\n";
  for (const Row& r : rows) {
    KernelDesc k;
    k.op = r.op;
    k.dtype = Dtype::bf16;
    k.shape.bytes = static_cast<int64_t>(r.bytes);
    k.shape.ranks = r.ranks;
    const Analysis a = analyze_kernel(k, h200);
    const double before = a.roofline_us / roofline_efficiency(Family::communication).median;
    const double model = nccl_model_us(r.op, r.ranks, r.bytes, link_gb_s * 1e9 / 2, true);
    const auto other_ranks = curves_from(rows, link_gb_s, [&](const Row& x) { return x.ranks != r.ranks; });
    const double held_ranks = estimate_collective(r.op, r.ranks, r.bytes, h200, &other_ranks).time_us;
    const double shipped = estimate_collective(r.op, r.ranks, r.bytes, h200, &all).time_us;
    const std::string group = std::string(op_name(r.op)) + " x" + std::to_string(r.ranks);
    for (const std::string& g : {group, std::string("all")}) {
      table[g]["before"].add(before, r.us);
      table[g]["model"].add(model, r.us);
      table[g]["held-out ranks"].add(held_ranks, r.us);
      table[g]["shipped"].add(shipped, r.us);
      if (held_size.at(&r))
        table[g]["held-out sizes"].add(estimate_collective(r.op, r.ranks, r.bytes, h200, &even_sizes).time_us, r.us);
    }
    char buf[256];
    std::snprintf(buf, sizeof buf, "| %s | %d | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", op_name(r.op).data(),
                  r.ranks, r.bytes, r.us, before, model, held_ranks, shipped);
    detail << buf;
  }

  std::cout
      << "# Collectives: perfloom's communication model vs NCCL on H200s\n\n"
      << "Measured: `tools/collector/nccl_torch.py` on 4 H200s of one host (NVLink, every pair NV18; NCCL 2.28.9 "
         "through PyTorch 2.11; NVLink multicast off), bf16, 1 KiB to 1 GiB, 2 and 4 ranks; GPU-side time = "
         "CUDA-graph replay (up to 64 MiB) or eager (above, where the host cost is hidden). Data: "
         "`data/nccl-h200/`. Produced by `build/bin/perfloom-comm-check data/nccl-h200/nccl.csv`.\n\n"
      << "Columns: *before* = the roofline over a fixed 0.7 NCCL efficiency (perfloom before this data); *model* = the "
         "analytical NCCL model alone (`model/families/communication/nccl_model.h`, constants from "
         "`tools/comm_check/fit_nccl.py`); *held-out ranks* = the estimate from the other rank count's curve only; "
         "*held-out sizes* = the estimate from curves with every other size removed, on the removed sizes; "
         "*shipped* = what `perfloom predict` gives on H200 (in-sample).\n\n"
      << "Absolute percentage error: MAPE / median / p90.\n\n"
      << "| group | n | before | model | held-out ranks | held-out sizes | shipped |\n|---|---|---|---|---|---|---|\n";
  for (const auto& [g, cols] : table) {
    std::cout << "| " << g << " | " << cols.at("before").err.size();
    for (const char* c : {"before", "model", "held-out ranks", "held-out sizes", "shipped"})
      std::cout << " | " << (cols.count(c) ? cols.at(c).cell() : "-");
    std::cout << " |\n";
  }
  std::cout << "\nEstimates where nothing was measured (8 ranks: no 8-GPU machine was lent):\n\n"
            << "| op | bytes | 8 x H200 us | 8 x H100 SXM us | 8 x A100 SXM us |\n|---|---|---|---|---|\n";
  for (Op op : {Op::allreduce, Op::allgather})
    for (double b : {1024.0, 1048576.0, 67108864.0, 1073741824.0}) {
      std::cout << "| " << op_name(op) << " | " << static_cast<long long>(b);
      for (const char* g : {"h200", "h100-sxm", "a100-sxm-80gb"})
        std::cout << " | " << estimate_collective(op, 8, b, db.get(g), &all).time_us;
      std::cout << " |\n";
    }
  std::cout << "\n## Every measurement\n\n" << detail.str();
  return 0;
}
