#!/usr/bin/env bash
# Installs the Debian 12 packages ropelab needs to build, test and plot.
# Installs only what is missing; needs root (or sudo) when something is.
set -euo pipefail
pkgs=(
  build-essential pkg-config meson ninja-build
  libvulkan-dev libvulkan-volk-dev glslang-tools spirv-tools
  mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  check libjansson-dev libyaml-dev gnuplot-nox
  clang libclang-rt-14-dev
  python3-torch python3-numpy python3-markdown
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "ropelab: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
