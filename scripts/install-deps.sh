#!/usr/bin/env bash
# Installs the Debian 12 packages perfloom builds and tests with, only those that are missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  qt6-base-dev qt6-base-dev-tools libqt6charts6-dev libqt6svg6-dev libqt6opengl6-dev libgl-dev
  libqt6sql6-sqlite            # Qt's SQLite driver is a separate package
  libsqlite3-dev sqlite3
  libxgboost-dev               # XGBoost C API (no CMake config: cmake/FindXGBoost.cmake)
  nlohmann-json3-dev
  zlib1g-dev                   # gzip-compressed datasets and traces
  libssl-dev                   # SHA-256 of imported files (OpenSSL libcrypto)
  clang libclang-rt-dev        # libFuzzer for the importer fuzz targets (tests/fuzz)
  libgtest-dev googletest
  fonts-dejavu-core            # without a font, offscreen text renders as boxes
  xvfb xauth                   # a virtual display for screenshots and GUI runs without a screen
  slurm-wlm munge              # a one-node Slurm cluster for scripts/plan-sweep.sh's test (tests/slurm)
  python3                      # the report generators in tools/ (docs/gpus.md is checked by a test)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
