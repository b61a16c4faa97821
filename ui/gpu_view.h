#pragma once
// The GPU database view: a searchable, sortable table of every GPU perfloom knows.
#include <QWidget>

#include "model/gpu_database.h"

class QLineEdit;
class QSortFilterProxyModel;
class QTableView;

namespace perfloom::ui {

class GpuTableModel;

class GpuView : public QWidget {
  Q_OBJECT
 public:
  explicit GpuView(const GpuDatabase& gpus, QWidget* parent = nullptr);
  GpuTableModel* model() const { return model_; }
  QSortFilterProxyModel* proxy() const { return proxy_; }
  QLineEdit* filterEdit() const { return filter_; }

 private:
  GpuTableModel* model_;
  QSortFilterProxyModel* proxy_;
  QLineEdit* filter_;
  QTableView* table_;
};

}  // namespace perfloom::ui
