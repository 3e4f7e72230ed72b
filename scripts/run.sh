#!/usr/bin/env bash
# The main job: install what is missing, build, list the devices, verify
# every kernel on the default device against the CPU references (quick
# set), then run the quickstart tour of experiments and point to its report.
# Extra arguments go to `ropelab run` (e.g. --device all).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh run
scripts/build.sh build >/dev/null
./build/ropelab devices
./build/ropelab check --quick
./build/ropelab run experiments/quickstart.yaml --out out/quickstart "$@"
echo "report: out/quickstart/report.md (plots in out/quickstart/plots/, every figure verified)"
