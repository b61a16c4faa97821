#include "ui/theme.h"

#include <QApplication>
#include <QPalette>
#include <QSettings>
#include <QStyle>
#include <QStyleFactory>

namespace perfloom::ui {

namespace {
constexpr const char* kKey = "view/theme";

struct StartupLook {
  QString style;
  QPalette palette;
};
// What the application looked like before the first theme was applied; System restores it.
StartupLook& startup_look() {
  static StartupLook look{QApplication::style()->name(), QApplication::palette()};
  return look;
}

Theme& current() {
  static Theme t = Theme::System;
  return t;
}

QPalette dark_palette() {
  const QColor window(45, 45, 48), base(30, 30, 32), text(220, 220, 220), disabled(128, 128, 128);
  const QColor highlight(42, 130, 218);
  QPalette p;
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, base);
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, disabled);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::red);
  p.setColor(QPalette::Link, highlight.lighter(130));
  p.setColor(QPalette::Highlight, highlight);
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Light, window.lighter(150));
  p.setColor(QPalette::Mid, window.lighter(120));
  p.setColor(QPalette::Dark, base.darker(150));
  p.setColor(QPalette::Shadow, Qt::black);
  for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText, QPalette::HighlightedText})
    p.setColor(QPalette::Disabled, role, disabled);
  return p;
}
}  // namespace

QString theme_name(Theme t) {
  switch (t) {
    case Theme::Light:
      return "light";
    case Theme::Dark:
      return "dark";
    default:
      return "system";
  }
}

Theme saved_theme() {
  const QString v = QSettings().value(kKey).toString();
  if (v == "light") return Theme::Light;
  if (v == "dark") return Theme::Dark;
  return Theme::System;
}

void save_theme(Theme t) { QSettings().setValue(kKey, theme_name(t)); }

Theme current_theme() { return current(); }

void apply_theme(Theme t) {
  const StartupLook& look = startup_look();
  current() = t;
  if (t == Theme::System) {
    QApplication::setStyle(look.style);
    QApplication::setPalette(look.palette);
    return;
  }
  QStyle* fusion = QApplication::setStyle("Fusion");
  if (!fusion) return;  // a Qt built without Fusion: keep whatever look there is
  QApplication::setPalette(t == Theme::Dark ? dark_palette() : fusion->standardPalette());
}

}  // namespace perfloom::ui
