#pragma once
// The files imported lately (newest first, at most kMax), kept in QSettings for the File menu.
#include <QString>
#include <QStringList>

namespace perfloom::ui {

class RecentFiles {
 public:
  static constexpr int kMax = 10;
  static QStringList list();
  // Moves `path` (made absolute) to the front; the oldest falls off past kMax.
  static void add(const QString& path);
  static void clear();
};

}  // namespace perfloom::ui
