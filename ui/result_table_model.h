#pragma once
// The table models of the computing views (simulator runs, tuner ranking, what-if speedups) list
// one vector of a result that a background job hands over whole. This base holds what they share:
// a new result resets the model, a row is an element of that vector, and the horizontal header is
// a fixed list of column names. Each model keeps its Column enum, its roles and its data().
#include <QAbstractTableModel>
#include <QString>
#include <iterator>
#include <utility>

namespace perfloom::ui {

// `Model` (the derived class, CRTP) declares `enum Column { ..., ColumnCount }` and the header
// names `static constexpr const char* kHeaders[ColumnCount]`; `Rows` is the member of `Result`
// with one element per row, e.g. &TunerViewResult::ranked. No Q_OBJECT here (moc cannot read a
// template); the models themselves have it.
template <typename Model, typename Result, auto Rows>
class ResultTableModel : public QAbstractTableModel {
 public:
  explicit ResultTableModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}

  void setResult(Result r) {
    beginResetModel();
    r_ = std::move(r);
    endResetModel();
  }
  int rowCount(const QModelIndex& parent = {}) const override {
    return parent.isValid() ? 0 : static_cast<int>((r_.*Rows).size());
  }
  int columnCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : Model::ColumnCount; }
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override {
    static_assert(std::size(Model::kHeaders) == Model::ColumnCount, "one header name per column");
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    return section >= 0 && section < Model::ColumnCount ? QVariant(QString::fromUtf8(Model::kHeaders[section]))
                                                        : QVariant();
  }

 protected:
  Result r_;
};

}  // namespace perfloom::ui
