#!/usr/bin/env bash
# Configures and builds perfloom into build/ (the executable lands at build/bin/perfloom).
set -euo pipefail
cd "$(dirname "$0")/.."
# These apply when build/ is first configured: BUILD_TYPE (default RelWithDebInfo), PERFLOOM_WERROR
# (ON: warnings are errors, as CI builds) and PERFLOOM_DEBUG_INFO (OFF: the same -O2 code without -g,
# which compiles in about a third less time; scripts/test.sh's default for a fresh build/).
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
if [[ ! -f build/CMakeCache.txt ]]; then
  extra=()
  if [[ "${PERFLOOM_DEBUG_INFO:-ON}" == OFF ]]; then
    extra+=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG")
  fi
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DPERFLOOM_WERROR="${PERFLOOM_WERROR:-OFF}" "${extra[@]}"
fi
cmake --build build --parallel "${JOBS:-$(nproc)}"
