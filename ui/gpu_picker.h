#pragma once
// A checkable list of GPUs with a search box and an architecture filter; the views that compare
// GPUs share it. The order of checked ids is the database order.
#include <QStringList>
#include <QWidget>

#include "model/gpu_database.h"

class QComboBox;
class QLineEdit;
class QListWidget;

namespace perfloom::ui {

class GpuPicker : public QWidget {
  Q_OBJECT
 public:
  explicit GpuPicker(const GpuDatabase& gpus, QWidget* parent = nullptr);
  QStringList checkedIds() const;
  void setCheckedIds(const QStringList& ids);
  QLineEdit* searchEdit() const { return search_; }
  QComboBox* architectureFilter() const { return arch_; }
  QListWidget* list() const { return list_; }

 signals:
  void selectionChanged();

 private:
  void applyFilter();
  QLineEdit* search_;
  QComboBox* arch_;
  QListWidget* list_;
};

}  // namespace perfloom::ui
