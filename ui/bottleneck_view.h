#pragma once
// The bottleneck view: for one kernel on one or more GPUs, the time each pipe (tensor, FMA, SFU,
// DRAM, L2, shared memory, launch, link) needs on the busiest SM, against the roofline ceiling and
// the predicted time, and a headroom sentence, all from model/bottleneck.h (what `perfloom predict
// --json` reports too). Computed in a background job; a result that arrives for an older selection
// is dropped.
#include <QString>
#include <QStringList>
#include <QWidget>
#include <array>
#include <memory>
#include <vector>

#include "model/bottleneck.h"
#include "model/gpu_database.h"
#include "model/predictor.h"

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QLineEdit;

namespace perfloom::ui {

class GpuPicker;

struct BottleneckBar {
  QString gpu_id, gpu_name;
  std::array<double, kPipeCount> pipe_us{};  // PipeBusy::busy_us, indexed by Pipe
  double pred_us = 0, lo_us = 0, hi_us = 0, ceiling_us = 0;
  Pipe bound = Pipe::launch;
  QString headroom;  // one sentence (Bottleneck::headroom), or the GPU's name and the error
  QString error;     // the kernel cannot run on this GPU
};

struct BottleneckResult {
  QString kernel;  // the kernel spec line
  QString predictor;
  std::vector<BottleneckBar> gpus;
};

// Plain functions, callable from any thread (the job) and from `export-chart`: the predictor's
// prediction on each GPU through bottleneck_of() (model/bottleneck.h).
BottleneckResult compute_bottleneck(const KernelDesc& k, const std::vector<GpuSpec>& gpus,
                                    const KernelPredictor& predictor);
// A new chart (the caller owns it): grouped horizontal bars, one set per GPU.
QChart* build_bottleneck_chart(const BottleneckResult& r);

class BottleneckView : public QWidget {
  Q_OBJECT
 public:
  BottleneckView(const GpuDatabase& gpus, std::shared_ptr<const KernelPredictor> predictor, QWidget* parent = nullptr);
  ~BottleneckView() override;

  // Sets the kernel line (OP:DTYPE:DIMS) and GPUs; starts a job. Returns false for a bad kernel.
  bool setSelection(const QString& kernel_spec, const QStringList& gpu_ids);
  QString kernelSpec() const;
  const BottleneckResult& result() const { return result_; }
  QChartView* chartView() const { return chart_view_; }
  QLabel* headroomLabel() const { return headroom_; }
  GpuPicker* gpuPicker() const { return picker_; }
  quint64 generation() const { return generation_; }
  bool busy() const { return running_ > 0; }
  // Shows `r` if it belongs to the current selection; returns whether it was shown.
  bool applyResult(quint64 generation, const BottleneckResult& r);

 public slots:
  void recompute();

 signals:
  void resultShown();

 private:
  void showError(const QString& message);
  const GpuDatabase& gpus_;
  std::shared_ptr<const KernelPredictor> predictor_;
  QComboBox* op_;
  QComboBox* dtype_;
  QLineEdit* shape_;
  GpuPicker* picker_;
  QChartView* chart_view_;
  QLabel* headroom_;
  BottleneckResult result_;
  quint64 generation_ = 0;
  int running_ = 0;
  bool updating_ = false;
};

}  // namespace perfloom::ui
