#pragma once
// What every command needs: parsed global options, the GPU database, the database path.
#include <QString>
#include <QStringList>
#include <filesystem>
#include <optional>

#include "model/gpu_database.h"

namespace perfloom::app {

struct CliContext {
  bool json = false;
  std::filesystem::path db_path;
  GpuDatabase gpus;
};

// Loads the built-in GPU database plus the files of --gpus-dir / $PERFLOOM_GPUS_DIR, if given.
GpuDatabase loadGpuDatabase(const QString& extra_dir);
// Attaches the calibration files of --calibration (else $PERFLOOM_CALIBRATION, FILE[:FILE...]).
// A bad file or one that matches no GPU is reported on stderr and skipped: that GPU keeps the
// cross-generation tier.
void addCalibrations(GpuDatabase& db, const QStringList& files);

}  // namespace perfloom::app
