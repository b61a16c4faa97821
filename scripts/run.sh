#!/usr/bin/env bash
# The newcomer's command: install what is missing, build, open the explorer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec build/bin/perfloom "$@"
