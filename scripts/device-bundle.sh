#!/usr/bin/env bash
# device-bundle.sh — a prebuilt ropelab that runs on a machine with only a
# GPU driver: the binary, the shared libraries it links that are not part of
# glibc (ldd), the Vulkan loader libvulkan.so.1 (volk opens it at run time),
# glvnd's libGLdispatch.so.0 (NVIDIA's Vulkan driver, libGLX_nvidia.so.0,
# links it), the Khronos validation layer with a manifest that points at it,
# device-check.sh, and MANIFEST.txt (versions, sources, checksums, what must
# already be on the target). device-check.sh uses the folder through
# LD_LIBRARY_PATH (and VK_ADD_LAYER_PATH for the layer).
#
# usage: scripts/device-bundle.sh [--bin PATH] [--out DIR] [--no-layer] [--lib FILE]...
#   --bin PATH   the ropelab binary (default: build/ropelab of this checkout)
#   --out DIR    the bundle folder (default: out/device-bundle); replaced whole,
#                built under a temporary name first
#   --no-layer   leave the validation layer out (it is about 21 MiB)
#   --lib FILE   one more shared library to carry (repeatable)
#
# glibc itself (libc, libm, libdl, libpthread, librt, ld-linux) is never
# carried: the binary runs on the target's, which must be as new as the one
# it was built against (MANIFEST.txt says which version that is).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
bin=$repo/build/ropelab
out=$repo/out/device-bundle
layer=1
extra=()
die() { printf 'device-bundle: %s\n' "$*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --bin) [ $# -ge 2 ] || die "--bin needs a path"; bin=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out needs a folder"; out=$2; shift 2 ;;
    --no-layer) layer=0; shift ;;
    --lib) [ $# -ge 2 ] || die "--lib needs a file"; extra+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -n "$out" ] || die "--out: empty folder name"
[ -x "$bin" ] || die "no ropelab binary at $bin (build it: scripts/build.sh, or pass --bin)"
command -v ldd >/dev/null || die "ldd not found (it comes with glibc's libc-bin)"
"$bin" --version >/dev/null 2>&1 || die "$bin --version failed: not a working ropelab binary here"

# The shared object a soname resolves to on this machine (ldconfig's cache,
# then the usual folders).
find_lib() {
  local name=$1 p d
  p=$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n && /x86-64|x86_64|AArch64/ {print $NF; exit}')
  if [ -z "$p" ]; then
    for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /usr/lib /usr/local/lib; do
      [ -e "$d/$name" ] && { p=$d/$name; break; }
    done
  fi
  printf '%s' "$p"
}
is_glibc() {
  case $1 in
    linux-vdso.so*|ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|libutil.so*|libmvec.so*) return 0 ;;
  esac
  return 1
}

mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d "$out.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
mkdir -p "$tmp/lib"
cp -L "$bin" "$tmp/ropelab"
chmod 755 "$tmp/ropelab"
cp "$here/device-check.sh" "$tmp/device-check.sh"
chmod 755 "$tmp/device-check.sh"

sources=()
# 1. ropelab's own non-glibc libraries, as ldd resolves them here.
while read -r name arrow path _; do
  [ "$arrow" = "=>" ] || continue
  is_glibc "$name" && continue
  [ "$path" = "not" ] && die "ldd: $name is not found for $bin"
  cp -L "$path" "$tmp/lib/$name"
  sources+=("lib/$name <- $path (linked by ropelab)")
done < <(ldd "$bin")
# 2. The Vulkan loader (opened with dlopen, so ldd does not list it).
vk=$(find_lib libvulkan.so.1)
[ -n "$vk" ] || die "libvulkan.so.1 not found here (apt-get install libvulkan1)"
cp -L "$vk" "$tmp/lib/libvulkan.so.1"
sources+=("lib/libvulkan.so.1 <- $(readlink -f "$vk") (the Vulkan loader)")
# 3. glvnd's dispatch library, which NVIDIA's Vulkan driver links.
gd=$(find_lib libGLdispatch.so.0)
if [ -n "$gd" ]; then
  cp -L "$gd" "$tmp/lib/libGLdispatch.so.0"
  sources+=("lib/libGLdispatch.so.0 <- $(readlink -f "$gd") (glvnd; NVIDIA's libGLX_nvidia.so.0 links it)")
else
  printf 'device-bundle: note: libGLdispatch.so.0 (libglvnd0) not found here; NVIDIA'"'"'s driver needs it on the target\n' >&2
fi
for f in "${extra[@]+"${extra[@]}"}"; do
  [ -f "$f" ] || die "--lib $f: no such file"
  cp -L "$f" "$tmp/lib/$(basename "$f")"
  sources+=("lib/$(basename "$f") <- $(readlink -f "$f") (--lib)")
done
# 4. The validation layer, its manifest rewritten to the copy beside it (a
# relative library_path is relative to the manifest's folder).
layer_deps=""
if [ "$layer" = 1 ]; then
  man=""
  for d in /usr/share/vulkan/explicit_layer.d /etc/vulkan/explicit_layer.d /usr/local/share/vulkan/explicit_layer.d; do
    [ -f "$d/VkLayer_khronos_validation.json" ] && { man=$d/VkLayer_khronos_validation.json; break; }
  done
  [ -n "$man" ] || die "VkLayer_khronos_validation.json not found (apt-get install vulkan-validationlayers, or pass --no-layer)"
  lp=$(sed -n 's/.*"library_path"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$man" | head -1)
  case $lp in /*) ;; */*) lp=$(dirname "$man")/$lp ;; *) lp=$(find_lib "$lp") ;; esac
  { [ -n "$lp" ] && [ -f "$lp" ]; } || die "the validation layer's library ($lp, from $man) is missing"
  mkdir -p "$tmp/layers"
  cp -L "$lp" "$tmp/layers/$(basename "$lp")"
  sed 's|\("library_path"[[:space:]]*:[[:space:]]*"\)[^"]*"|\1./'"$(basename "$lp")"'"|' "$man" \
    > "$tmp/layers/VkLayer_khronos_validation.json"
  sources+=("layers/$(basename "$lp") <- $(readlink -f "$lp") (validation layer)")
  sources+=("layers/VkLayer_khronos_validation.json <- $man (library_path rewritten)")
  layer_deps=$(ldd "$lp" | awk '$2 == "=>" {print $1}' | while read -r n; do is_glibc "$n" || printf '%s\n' "$n"; done | paste -sd' ')
fi

# The bundle must work here before it travels: every library ropelab links
# resolves inside it, and the binary starts from it.
unresolved=$(LD_LIBRARY_PATH="$tmp/lib" ldd "$tmp/ropelab" | awk '$2 == "=>" {print $1, $3}' |
  while read -r n p; do is_glibc "$n" || case $p in "$tmp"/lib/*) ;; *) printf '%s ' "$n" ;; esac; done)
[ -z "$unresolved" ] || die "libraries not taken from the bundle: $unresolved"
version=$(LD_LIBRARY_PATH="$tmp/lib" "$tmp/ropelab" --version) || die "the bundled binary does not start"
glibc_need=""
if command -v objdump >/dev/null; then
  glibc_need=$(objdump -T "$tmp/ropelab" "$tmp"/lib/*.so* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' |
    sed 's/GLIBC_//' | sort -t. -k1,1n -k2,2n -k3,3n -u | tail -1)
fi
{
  echo "ropelab device bundle"
  echo "binary: $version (from $(readlink -f "$bin"))"
  echo "made: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm), $(ldd --version 2>&1 | head -1)"
  echo "needs on the target: Linux $(uname -m), glibc >= ${glibc_need:-unknown}, a Vulkan driver (ICD)${layer_deps:+, for the layer: $layer_deps}"
  echo "use: bash device-check.sh --out DIR   (from this folder; see docs/cli.md, Running on a GPU)"
  echo
  echo "files (sha256, name, source):"
  for s in "${sources[@]}"; do
    f=${s%% <- *}
    printf '%s  %s\n' "$(sha256sum "$tmp/$f" | cut -d' ' -f1)" "$s"
  done
  printf '%s  ropelab <- %s\n' "$(sha256sum "$tmp/ropelab" | cut -d' ' -f1)" "$(readlink -f "$bin")"
  printf '%s  device-check.sh <- %s\n' "$(sha256sum "$tmp/device-check.sh" | cut -d' ' -f1)" "$here/device-check.sh"
} > "$tmp/MANIFEST.txt"

# Replace the old bundle only now that the new one is complete.
if [ -e "$out" ]; then
  old=$(mktemp -d "$out.old.XXXXXX")
  mv "$out" "$old/b"
  mv "$tmp" "$out"
  rm -rf "$old"
else
  mv "$tmp" "$out"
fi
trap - EXIT
printf 'device-bundle: %s (%s): %s\n' "$out" "$(du -sh "$out" | cut -f1)" "$version"
