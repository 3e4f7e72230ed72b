#!/usr/bin/env bash
# Configures and builds ropelab into BUILD (default: build/).
# usage: scripts/build.sh [BUILD] [extra meson options...]
# env: RL_BUILD_TARGETS: a command run in the repository after configuring,
# given BUILD, that prints the ninja targets to build, one per line (default:
# all of them; scripts/test.sh's release build uses scripts/release_targets.py)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" "$@"
elif [ $# -gt 0 ]; then
  meson configure "$dir" "$@"
fi
if [ -n "${RL_BUILD_TARGETS:-}" ]; then
  targets=$($RL_BUILD_TARGETS "$dir")
  # shellcheck disable=SC2086  # one target per word
  ninja -C "$dir" $targets
else
  ninja -C "$dir"
fi
