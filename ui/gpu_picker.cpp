#include "ui/gpu_picker.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QListWidget>
#include <QSet>
#include <QVBoxLayout>

namespace perfloom::ui {

GpuPicker::GpuPicker(const GpuDatabase& gpus, QWidget* parent)
    : QWidget(parent), search_(new QLineEdit(this)), arch_(new QComboBox(this)), list_(new QListWidget(this)) {
  search_->setPlaceholderText(tr("Search GPUs"));
  search_->setClearButtonEnabled(true);
  arch_->addItem(tr("All architectures"), QString());
  QStringList archs;
  for (const GpuSpec& g : gpus.all()) {
    const QString a = QString::fromStdString(g.architecture);
    if (!archs.contains(a)) archs << a;
    auto* item = new QListWidgetItem(QString::fromStdString(g.name), list_);
    item->setData(Qt::UserRole, QString::fromStdString(g.id));
    item->setData(Qt::UserRole + 1, a);
    QString aliases;
    for (const auto& al : g.aliases) aliases += QString::fromStdString(al) + ' ';
    item->setData(Qt::UserRole + 2, QString::fromStdString(g.id) + ' ' + aliases + a);
    item->setToolTip(QString::fromStdString(g.id));
    item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
    item->setCheckState(Qt::Unchecked);
  }
  archs.sort();
  for (const QString& a : archs) arch_->addItem(a, a);
  auto* filters = new QHBoxLayout;
  filters->setContentsMargins(0, 0, 0, 0);
  filters->addWidget(search_, 1);
  filters->addWidget(arch_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(filters);
  layout->addWidget(list_);
  connect(search_, &QLineEdit::textChanged, this, &GpuPicker::applyFilter);
  connect(arch_, &QComboBox::currentIndexChanged, this, &GpuPicker::applyFilter);
  connect(list_, &QListWidget::itemChanged, this, &GpuPicker::selectionChanged);
}

void GpuPicker::applyFilter() {
  const QString text = search_->text().trimmed();
  const QString arch = arch_->currentData().toString();
  for (int i = 0; i < list_->count(); ++i) {
    QListWidgetItem* item = list_->item(i);
    const bool archOk = arch.isEmpty() || item->data(Qt::UserRole + 1).toString() == arch;
    const bool textOk = text.isEmpty() || item->text().contains(text, Qt::CaseInsensitive) ||
                        item->data(Qt::UserRole + 2).toString().contains(text, Qt::CaseInsensitive);
    item->setHidden(!(archOk && textOk));
  }
}

QStringList GpuPicker::checkedIds() const {
  QStringList ids;
  for (int i = 0; i < list_->count(); ++i)
    if (list_->item(i)->checkState() == Qt::Checked) ids << list_->item(i)->data(Qt::UserRole).toString();
  return ids;
}

void GpuPicker::setCheckedIds(const QStringList& ids) {
  const QSignalBlocker block(list_);
  for (int i = 0; i < list_->count(); ++i) {
    QListWidgetItem* item = list_->item(i);
    item->setCheckState(ids.contains(item->data(Qt::UserRole).toString()) ? Qt::Checked : Qt::Unchecked);
  }
  emit selectionChanged();
}

}  // namespace perfloom::ui
