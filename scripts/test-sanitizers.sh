#!/usr/bin/env bash
# Builds with AddressSanitizer and UndefinedBehaviorSanitizer (the debug-asan preset, build-asan/)
# and runs tests under them; any sanitizer report fails the run.
#   scripts/test-sanitizers.sh         the engine's and the importers' tests (perfloom_tests_model,
#                                       _storage, _import): what scripts/test.sh, and so CI, runs
#   scripts/test-sanitizers.sh --all   every test (about half an hour on 2 cores)
# The fuzz targets are sanitized in every build already (tests/fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
BINARIES=(perfloom_tests_model perfloom_tests_storage perfloom_tests_import)
export OMP_WAIT_POLICY=passive
# Stop at the first report, with a stack; leaks are reported too.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:halt_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

if [[ ! -f build-asan/CMakeCache.txt ]]; then
  cmake --preset debug-asan >/dev/null
fi
if [[ "${1:-}" == "--all" ]]; then
  cmake --build --preset debug-asan --parallel "${JOBS:-$(nproc)}"
  exec ctest --preset debug-asan --parallel "${JOBS:-$(nproc)}"
fi
cmake --build build-asan --parallel "${JOBS:-$(nproc)}" --target "${BINARIES[@]}"

# Each binary in as many GoogleTest shards as there are cores, all at once (two tests that parse
# whole data folders take most of the time); a shard's output is shown only when it fails.
shards=${JOBS:-$(nproc)}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
runs=()
pids=()
for bin in "${BINARIES[@]}"; do
  for ((i = 0; i < shards; ++i)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "build-asan/bin/$bin" --gtest_brief=1 >"$logs/$bin.$i" 2>&1 &
    pids+=($!)
    runs+=("$bin.$i")
  done
done
failed=0
for ((k = 0; k < ${#pids[@]}; ++k)); do
  if ! wait "${pids[$k]}"; then
    echo "test-sanitizers: ${runs[$k]%.*} shard $((${runs[$k]##*.} + 1))/$shards failed:"
    cat "$logs/${runs[$k]}"
    failed=1
  fi
done
if ((failed == 0)); then
  echo "test-sanitizers: ${BINARIES[*]} passed under ASan+UBSan"
fi
exit $failed
