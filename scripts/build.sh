#!/usr/bin/env bash
# Configures and builds ropelab into BUILD (default: build/).
# usage: scripts/build.sh [BUILD] [extra meson options...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" "$@"
elif [ $# -gt 0 ]; then
  meson configure "$dir" "$@"
fi
ninja -C "$dir"
