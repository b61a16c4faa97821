#include "ui/gpu_view.h"

#include <QHeaderView>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/gpu_table_model.h"

namespace perfloom::ui {

GpuView::GpuView(const GpuDatabase& gpus, QWidget* parent)
    : QWidget(parent),
      model_(new GpuTableModel(this)),
      proxy_(new QSortFilterProxyModel(this)),
      filter_(new QLineEdit(this)),
      table_(new QTableView(this)) {
  model_->setGpus(gpus.all());
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(GpuTableModel::SortRole);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setFilterKeyColumn(-1);
  filter_->setPlaceholderText(tr("Filter GPUs (id, name, architecture)"));
  filter_->setClearButtonEnabled(true);
  connect(filter_, &QLineEdit::textChanged, proxy_, &QSortFilterProxyModel::setFilterFixedString);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(GpuTableModel::Id, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->verticalHeader()->hide();
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(filter_);
  layout->addWidget(table_);
}

}  // namespace perfloom::ui
