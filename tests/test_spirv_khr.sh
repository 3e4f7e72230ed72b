#!/usr/bin/env bash
# spirv-val on the cooperative-matrix kernel's KHR module (tools/spv_khr
# rewrote it from the NV one). Bookworm's spirv-val (2023.1) predates
# SPV_KHR_cooperative_matrix, so this runs only where RL_SPIRV_VAL_KHR names
# one that knows it (a command, e.g. "/work/trixie/run.sh
# /work/trixie/root/usr/bin/spirv-val", see scripts/khr-lavapipe.sh); else
# SKIP. The module must validate, and the rewriter's broken variant (A and
# B sharing a type, --mutate-same-ab) must not.
# usage: test_spirv_khr.sh KHR.spv NV.spv path/to/spv_khr
set -u
khr=$1 nv=$2 tool=$3
if [ -z "${RL_SPIRV_VAL_KHR:-}" ]; then
  echo "SKIP: set RL_SPIRV_VAL_KHR to a spirv-val that knows SPV_KHR_cooperative_matrix" >&2
  exit 77
fi
read -r -a val <<<"$RL_SPIRV_VAL_KHR"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
"${val[@]}" --version | head -1
if "${val[@]}" --target-env vulkan1.1 "$khr"; then
  echo "ok: $khr validates"
else
  echo "FAIL: $khr does not validate"; fail=1
fi
"$tool" --mutate-same-ab "$nv" "$work/bad.spv" "$work/bad.h" bad || { echo "FAIL: mutated rewrite"; fail=1; }
if "${val[@]}" --target-env vulkan1.1 "$work/bad.spv" >"$work/bad.txt" 2>&1; then
  echo "FAIL: the A/B-shared-type module validates"; fail=1
else
  echo "ok: the A/B-shared-type module is rejected: $(head -c 300 "$work/bad.txt")"
fi
exit "$fail"
