#include "ui/gpu_table_model.h"

namespace perfloom::ui {

GpuTableModel::GpuTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void GpuTableModel::setGpus(std::vector<GpuSpec> gpus) {
  beginResetModel();
  gpus_ = std::move(gpus);
  endResetModel();
}

const GpuSpec* GpuTableModel::gpuAt(int row) const {
  return row >= 0 && row < static_cast<int>(gpus_.size()) ? &gpus_[static_cast<std::size_t>(row)] : nullptr;
}

int GpuTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(gpus_.size());
}

int GpuTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

namespace {
QVariant tflops(const GpuSpec& g, Dtype d) {
  auto p = g.peak_flops_per_s(d);
  return p ? QVariant(*p / 1e12) : QVariant();
}
}  // namespace

QVariant GpuTableModel::data(const QModelIndex& index, int role) const {
  const GpuSpec* g = index.isValid() ? gpuAt(index.row()) : nullptr;
  if (!g) return {};
  if (role == Qt::TextAlignmentRole)
    return index.column() >= Sms ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter)) : QVariant();
  if (role == Qt::ToolTipRole) {
    auto it =
        g->sources.find(index.column() == Bf16Tflops || index.column() == Fp8Tflops || index.column() == Tf32Tflops
                            ? "tensor_flops_per_sm_per_clock"
                        : index.column() == BandwidthGbS ? "memory_bandwidth_gb_s"
                        : index.column() == Sms          ? "sm_count"
                        : index.column() == L2Mib        ? "l2_cache_mib"
                        : index.column() == MemoryGib    ? "memory_gib"
                        : index.column() == ClockMhz     ? "boost_clock_mhz"
                                                         : "");
    return it != g->sources.end() ? QVariant(QString::fromStdString(it->second)) : QVariant();
  }
  if (role != Qt::DisplayRole && role != SortRole) return {};
  QVariant v;
  switch (index.column()) {
    case Id:
      v = QString::fromStdString(g->id);
      break;
    case Name:
      v = QString::fromStdString(g->name);
      break;
    case Architecture:
      v = QString::fromStdString(g->architecture);
      break;
    case ComputeCapability:
      v = QString::fromStdString(g->compute_capability);
      break;
    case Sms:
      v = g->sm_count;
      break;
    case ClockMhz:
      v = g->boost_clock_mhz;
      break;
    case Bf16Tflops:
      v = tflops(*g, g->supports(Dtype::bf16) ? Dtype::bf16 : Dtype::fp16);
      break;
    case Fp8Tflops:
      v = tflops(*g, Dtype::fp8e4m3);
      break;
    case Tf32Tflops:
      v = tflops(*g, Dtype::tf32);
      break;
    case Fp32Tflops:
      v = g->fp32_flops_per_s() / 1e12;
      break;
    case MemoryGib:
      v = g->memory_gib;
      break;
    case BandwidthGbS:
      v = g->memory_bandwidth_gb_s;
      break;
    case L2Mib:
      v = g->l2_cache_mib;
      break;
    default:
      break;
  }
  if (role == SortRole || !v.isValid()) return role == Qt::DisplayRole && !v.isValid() ? QVariant("–") : v;
  if (v.typeId() == QMetaType::Double) return QString::number(v.toDouble(), 'f', v.toDouble() < 100 ? 1 : 0);
  return v;
}

QVariant GpuTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Id:
      return tr("id");
    case Name:
      return tr("name");
    case Architecture:
      return tr("architecture");
    case ComputeCapability:
      return tr("cc");
    case Sms:
      return tr("SMs");
    case ClockMhz:
      return tr("clock (MHz)");
    case Bf16Tflops:
      return tr("bf16/fp16 (TFLOP/s)");
    case Fp8Tflops:
      return tr("fp8 (TFLOP/s)");
    case Tf32Tflops:
      return tr("tf32 (TFLOP/s)");
    case Fp32Tflops:
      return tr("fp32 (TFLOP/s)");
    case MemoryGib:
      return tr("memory (GiB)");
    case BandwidthGbS:
      return tr("bandwidth (GB/s)");
    case L2Mib:
      return tr("L2 (MiB)");
    default:
      return {};
  }
}

}  // namespace perfloom::ui
