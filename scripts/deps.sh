#!/usr/bin/env bash
# The Debian 12 packages ropelab needs, in groups; the one list (.ci/run,
# scripts/run.sh, scripts/test.sh and scripts/fuzz.sh all take theirs from
# here). Installs only what is missing; needs root (or sudo) when something is.
#
# usage: scripts/deps.sh [GROUP...]          install the groups (default: run)
#        scripts/deps.sh --list [GROUP...]   print their packages, one line
# groups:
#   build    compile ropelab (C11, meson, Vulkan headers, volk, glslang, Check, jansson, libyaml)
#   run      build + what the main job uses: lavapipe, the validation layer, gnuplot
#   test     run + what the suites use: vulkaninfo, python3-markdown, numpy, torch
#   fuzz     build + clang and its sanitizer runtime (scripts/fuzz.sh, libFuzzer)
#   capture  torch and numpy for scripts/capture_qk.py
set -euo pipefail
group_pkgs() {
  case $1 in
    build) echo build-essential pkg-config meson ninja-build \
             libvulkan-dev libvulkan-volk-dev glslang-tools spirv-tools \
             check libjansson-dev libyaml-dev ;;
    run) group_pkgs build; echo mesa-vulkan-drivers vulkan-validationlayers gnuplot-nox ;;
    test) group_pkgs run; echo vulkan-tools python3-markdown; group_pkgs capture ;;
    fuzz) group_pkgs build; echo clang libclang-rt-14-dev ;;
    capture) echo python3-torch python3-numpy ;;
    *) echo "deps.sh: unknown group '$1' (groups: build, run, test, fuzz, capture)" >&2
       return 2 ;;
  esac
}
list=0
if [ "${1:-}" = --list ]; then
  list=1
  shift
fi
[ $# -gt 0 ] || set -- run
pkgs=()
for g in "$@"; do
  words=$(group_pkgs "$g") || exit 2
  for p in $words; do
    case " ${pkgs[*]:-} " in *" $p "*) ;; *) pkgs+=("$p") ;; esac
  done
done
if [ $list = 1 ]; then
  echo "${pkgs[*]}"
  exit 0
fi
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
