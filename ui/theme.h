#pragma once
// Light, dark or the platform's look. Qt 6.4 has no colour-scheme API (QStyleHints::colorScheme
// is 6.5), so Light and Dark are the Fusion style with a palette of our own, and System puts back
// the style and palette the application started with.
#include <QString>

namespace perfloom::ui {

enum class Theme { System, Light, Dark };

QString theme_name(Theme t);  // "system", "light", "dark": the value stored in QSettings
Theme saved_theme();          // System when nothing (or nonsense) is stored
void save_theme(Theme t);
// Needs a QApplication. Safe to call repeatedly.
void apply_theme(Theme t);
Theme current_theme();

}  // namespace perfloom::ui
