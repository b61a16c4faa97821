#!/usr/bin/env bash
# Install what is missing, build, and run the whole test suite, then the engine's and importers'
# tests again under AddressSanitizer and UndefinedBehaviorSanitizer (this is what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# A fresh build/ is configured with warnings as errors, as CI builds it, and without debug info
# (PERFLOOM_DEBUG_INFO=ON keeps it; scripts/build.sh first gives a debuggable build/).
PERFLOOM_WERROR=${PERFLOOM_WERROR:-ON} PERFLOOM_DEBUG_INFO=${PERFLOOM_DEBUG_INFO:-OFF} scripts/build.sh
# XGBoost's OpenMP threads spin while idle; on 2 cores that makes training 3x slower.
export OMP_WAIT_POLICY=passive
# One test more than there are cores: many wait on a child process, a file or a socket part of the time.
ctest --test-dir build --output-on-failure --parallel "${JOBS:-$(($(nproc) + 1))}" --timeout 600
# PERFLOOM_SANITIZERS=OFF skips this part.
if [[ "${PERFLOOM_SANITIZERS:-ON}" != OFF ]]; then
  scripts/test-sanitizers.sh
fi
