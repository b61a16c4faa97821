#!/usr/bin/env bash
# Configures and builds perfloom into build/ (the executable lands at build/bin/perfloom).
set -euo pipefail
cd "$(dirname "$0")/.."
# BUILD_TYPE and PERFLOOM_WERROR (ON: warnings are errors, as CI builds) apply when build/ is first configured.
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DPERFLOOM_WERROR="${PERFLOOM_WERROR:-OFF}"
fi
cmake --build build --parallel "${JOBS:-$(nproc)}"
