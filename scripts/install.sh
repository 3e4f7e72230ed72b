#!/usr/bin/env bash
# Builds and installs ropelab under PREFIX (default ~/.local): the binary in
# PREFIX/bin, presets and studies in PREFIX/share/ropelab, the man page, the
# bash completion and the docs. Works on a fresh tree and on one where
# scripts/run.sh already configured build/ (meson setup would keep that
# tree's old prefix and install elsewhere: here the prefix is set on it).
# usage: scripts/install.sh [PREFIX] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-$HOME/.local}
dir=${2:-build}
scripts/deps.sh build
case $prefix in /*) ;; *) prefix=$PWD/$prefix ;; esac
if [ -f "$dir/build.ninja" ]; then
  meson configure "$dir" --prefix "$prefix"
else
  meson setup "$dir" --prefix "$prefix"
fi
ninja -C "$dir"
meson install -C "$dir"
echo "ropelab: installed into $prefix (binary: $prefix/bin/ropelab)"
