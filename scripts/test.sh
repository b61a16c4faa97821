#!/usr/bin/env bash
# Install what is missing, build, and run the whole test suite (this is what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# A fresh build/ is configured with warnings as errors, as CI builds it.
PERFLOOM_WERROR=${PERFLOOM_WERROR:-ON} scripts/build.sh
# XGBoost's OpenMP threads spin while idle; on 2 cores that makes training 3x slower.
export OMP_WAIT_POLICY=passive
ctest --test-dir build --output-on-failure --parallel "${JOBS:-$(nproc)}" --timeout 600
