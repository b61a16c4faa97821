#include "ui/recent_files.h"

#include <QFileInfo>
#include <QSettings>

namespace perfloom::ui {

namespace {
constexpr const char* kKey = "traces/recentFiles";
}

QStringList RecentFiles::list() { return QSettings().value(kKey).toStringList(); }

void RecentFiles::add(const QString& path) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  QStringList files = list();
  files.removeAll(absolute);
  files.prepend(absolute);
  while (files.size() > kMax) files.removeLast();
  QSettings().setValue(kKey, files);
}

void RecentFiles::clear() { QSettings().remove(kKey); }

}  // namespace perfloom::ui
