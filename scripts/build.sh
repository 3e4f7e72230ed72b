#!/usr/bin/env bash
# Configures and builds ropelab into BUILD (default: build/).
# usage: scripts/build.sh [BUILD] [extra meson options...]
# env: RL_BUILD_SUITES: a meson test selection ("--suite gpu --no-suite san");
# when set, only the targets those suites need are built
# (scripts/suite_targets.py; default: every target)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" "$@"
elif [ $# -gt 0 ]; then
  meson configure "$dir" "$@"
fi
if [ -n "${RL_BUILD_SUITES:-}" ]; then
  # shellcheck disable=SC2086  # the selection's words are its arguments
  targets=$(python3 scripts/suite_targets.py "$dir" $RL_BUILD_SUITES)
  # shellcheck disable=SC2086  # one target per word
  ninja -C "$dir" $targets
else
  ninja -C "$dir"
fi
