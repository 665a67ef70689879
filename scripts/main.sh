#!/usr/bin/env bash
# @brief The README's main job: install, build, run on the bundled defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh release
./build/release/apps/hisparse info --scenario dsv32-8xh200-1tb
