#!/usr/bin/env bash
# khr-lavapipe.sh — a development aid, not run by CI: a device that exposes
# VK_KHR_cooperative_matrix on a machine without a GPU. Debian trixie's
# glibc, Vulkan loader and validation layer (1.4.309), glslang 15 and
# spirv-tools 2025.1, and trixie-backports' Mesa 26.1 lavapipe (LLVM 19),
# which lists KHR 8x8x8 float16 x float16 + float32 at subgroup scope, are
# fetched from deb.debian.org as .deb files into CACHE/debs, unpacked into
# CACHE/root (dpkg-deb -x; nothing is installed), the ICD and layer
# manifests' library_path made absolute, and COMMAND is run under them: a
# bookworm-built program through trixie's dynamic loader, so that it finds
# trixie's glibc first and bookworm's libraries (jansson, yaml) after.
#
# usage: scripts/khr-lavapipe.sh CACHE [COMMAND [ARGS...]]
#   scripts/khr-lavapipe.sh ~/.cache/rl-trixie build/ropelab devices
#   RL_REQUIRE_VALIDATION=1 scripts/khr-lavapipe.sh ~/.cache/rl-trixie \
#       build/ropelab check --kernel 'attn_cm*'
#   scripts/khr-lavapipe.sh ~/.cache/rl-trixie build/tests/cm_compare 4096 128
#   RL_SPIRV_VAL_KHR="$PWD/scripts/khr-lavapipe.sh $HOME/.cache/rl-trixie \
#       $HOME/.cache/rl-trixie/root/usr/bin/spirv-val" meson test -C build attn_cm_khr_spirv
#   meson test -C build --wrapper "$PWD/scripts/khr-lavapipe.sh $HOME/.cache/rl-trixie" attn_gpu
# COMMAND must be an ELF program (the dynamic loader runs it); a shell
# script is run by wrapping its binary: write a two-line script that execs
# `scripts/khr-lavapipe.sh CACHE path/to/ropelab "$@"` and pass that.
# Without COMMAND it fetches and unpacks only and prints the environment.
# The versions are pinned (docs/attention.md quotes results of these); a
# file deb.debian.org no longer has is named with the fix: look its
# current name up in the suite's Packages index, or fetch it from
# snapshot.debian.org.
set -euo pipefail
if [ $# -lt 1 ]; then
  sed -n '2,32p' "$0" >&2
  exit 2
fi
cache=$1
shift
mirror=${RL_DEBIAN_MIRROR:-https://deb.debian.org/debian}
debs=(
  pool/main/m/mesa/mesa-vulkan-drivers_26.1.6-1~bpo13+1_amd64.deb
  pool/main/v/vulkan-loader/libvulkan1_1.4.309.0-1_amd64.deb
  pool/main/v/vulkan-validationlayers/vulkan-validationlayers_1.4.309.0-1_amd64.deb
  pool/main/s/spirv-tools/spirv-tools_2025.1~rc1-1_amd64.deb
  pool/main/g/glslang/glslang-tools_15.1.0+1.4.309.0-1_amd64.deb
  pool/main/g/glibc/libc6_2.41-12+deb13u5_amd64.deb
  pool/main/g/gcc-14/libstdc++6_14.2.0-19_amd64.deb
  pool/main/g/gcc-14/libgcc-s1_14.2.0-19_amd64.deb
  pool/main/g/gcc-14/gcc-14-base_14.2.0-19_amd64.deb
  pool/main/l/llvm-toolchain-19/libllvm19_19.1.7-3+b1_amd64.deb
  pool/main/z/z3/libz3-4_4.13.3-1_amd64.deb
  pool/main/libx/libxml2/libxml2_2.12.7+dfsg+really2.9.14-2.1+deb13u3_amd64.deb
  pool/main/x/xz-utils/liblzma5_5.8.1-1+deb13u2_amd64.deb
  pool/main/libe/libedit/libedit2_3.1-20250104-1_amd64.deb
  pool/main/n/ncurses/libtinfo6_6.5+20250216-2_amd64.deb
  pool/main/libb/libbsd/libbsd0_0.12.2-2_amd64.deb
  pool/main/libm/libmd/libmd0_1.1.0-2+b1_amd64.deb
  pool/main/libf/libffi/libffi8_3.4.8-2_amd64.deb
  pool/main/e/expat/libexpat1_2.9.0-1~deb13u1_amd64.deb
  pool/main/e/elfutils/libelf1t64_0.192-4_amd64.deb
  pool/main/z/zlib/zlib1g_1.3.dfsg+really1.3.1-1+deb13u1_amd64.deb
  pool/main/libz/libzstd/libzstd1_1.5.7+dfsg-1_amd64.deb
  pool/main/libd/libdrm/libdrm2_2.4.124-2_amd64.deb
  pool/main/libd/libdrm/libdrm-common_2.4.124-2_all.deb
  pool/main/libd/libdrm/libdrm-amdgpu1_2.4.124-2_amd64.deb
  pool/main/libd/libdisplay-info/libdisplay-info2_0.2.0-2_amd64.deb
  pool/main/libp/libpng1.6/libpng16-16t64_1.6.48-1+deb13u6_amd64.deb
  pool/main/w/wayland/libwayland-client0_1.23.1-3_amd64.deb
  pool/main/libx/libxshmfence/libxshmfence1_1.3.3-1_amd64.deb
  pool/main/libx/libxcb/libxcb1_1.17.0-2+b1_amd64.deb
  pool/main/libx/libxcb/libxcb-xfixes0_1.17.0-2+b1_amd64.deb
  pool/main/libx/libxcb/libxcb-sync1_1.17.0-2+b1_amd64.deb
  pool/main/libx/libxcb/libxcb-shm0_1.17.0-2+b1_amd64.deb
  pool/main/libx/libxcb/libxcb-randr0_1.17.0-2+b1_amd64.deb
  pool/main/libx/libxcb/libxcb-present0_1.17.0-2+b1_amd64.deb
  pool/main/libx/libxcb/libxcb-dri3-0_1.17.0-2+b1_amd64.deb
  pool/main/libx/libxdmcp/libxdmcp6_1.1.5-1_amd64.deb
  pool/main/libx/libxau/libxau6_1.0.11-1_amd64.deb
  pool/main/libx/libx11/libx11-xcb1_1.8.12-1_amd64.deb
  pool/main/libx/libx11/libx11-6_1.8.12-1_amd64.deb
  pool/main/libx/libx11/libx11-data_1.8.12-1_all.deb
)
root=$cache/root
lib=$root/usr/lib/x86_64-linux-gnu
if [ ! -e "$root/.unpacked" ]; then
  mkdir -p "$cache/debs"
  for p in "${debs[@]}"; do
    f=$cache/debs/${p##*/}
    [ -s "$f" ] && continue
    echo "fetching $mirror/$p" >&2
    if ! curl -fsSL --retry 2 -o "$f.part" "$mirror/$p"; then
      rm -f "$f.part"
      echo "khr-lavapipe: cannot fetch $mirror/$p (a newer point release replaced it?" \
           "find its current name in the suite's Packages index, or use" \
           "RL_DEBIAN_MIRROR=https://snapshot.debian.org/archive/debian/<date>)" >&2
      exit 1
    fi
    mv "$f.part" "$f"
  done
  rm -rf "$root.part"
  mkdir -p "$root.part"
  for p in "${debs[@]}"; do
    dpkg-deb -x "$cache/debs/${p##*/}" "$root.part"
  done
  rm -rf "$root"
  mv "$root.part" "$root"
  touch "$root/.unpacked"
fi
root=$(cd "$root" && pwd)
lib=$root/usr/lib/x86_64-linux-gnu
icd=$root/usr/share/vulkan/icd.d/lvp_icd.json
layer=$root/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json
# The loader opens what the manifests name: absolute paths into this tree
# (the packages name the bare file, for a system-wide install).
sed -i "s|\"library_path\": \"[^\"]*\"|\"library_path\": \"$lib/libvulkan_lvp.so\"|" "$icd"
sed -i "s|\"library_path\": \"[^\"]*\"|\"library_path\": \"$lib/libVkLayer_khronos_validation.so\"|" \
  "$layer"
libpath=$lib:$root/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu
if [ $# -eq 0 ]; then
  echo "VK_DRIVER_FILES=$icd"
  echo "VK_LAYER_PATH=${layer%/*}"
  echo "loader: $lib/ld-linux-x86-64.so.2 --library-path $libpath"
  exit 0
fi
exec env VK_DRIVER_FILES="$icd" VK_LAYER_PATH="${layer%/*}" \
  "$lib/ld-linux-x86-64.so.2" --library-path "$libpath" "$@"
