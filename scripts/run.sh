#!/usr/bin/env bash
# The main job: install what is missing, build, list the devices and verify
# every kernel on the default device against the CPU references.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh build >/dev/null
./build/ropelab devices
./build/ropelab check "$@"
