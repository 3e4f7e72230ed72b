#!/usr/bin/env bash
# `ropelab check` and `ropelab devices` on a device without cooperative
# matrices (lavapipe): the cooperative-matrix path is a skipped row and the
# note "cooperative-matrix path: skipped (why)", never a pass; a device that
# exposes VK_KHR_ or VK_NV_cooperative_matrix with a usable shape (Mesa 26's
# lavapipe: scripts/khr-lavapipe.sh) runs its rows instead (then this test
# checks they are there, not skipped, and the note names the shape).
# usage: test_check_coopmat.sh path/to/ropelab
set -u
bin=$1
if ! "$bin" devices >/dev/null 2>&1; then
  echo "SKIP: no Vulkan device" >&2
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
"$bin" devices >"$work/devices.txt" 2>&1 || { echo "FAIL: ropelab devices"; fail=1; }
"$bin" check --device 0 --kernel 'attn_cm*' >"$work/check.txt" 2>&1
rc=$?
"$bin" check --device 0 --kernel 'attn_cm*' --json >"$work/check.json" 2>/dev/null
cat "$work/check.txt"
if grep -q "attention cooperative-matrix path: yes" "$work/devices.txt"; then
  # The path runs here: its rows exist and none is skipped.
  [ "$rc" = 0 ] || { echo "FAIL: check exited $rc on a cooperative-matrix device"; fail=1; }
  grep -q "SKIP" "$work/check.txt" && { echo "FAIL: a cooperative-matrix row was skipped"; fail=1; }
  grep -c "^  attn_cm_f16 " "$work/check.txt" | grep -qv '^0$' || { echo "FAIL: no attn_cm_f16 rows"; fail=1; }
  grep -Eq "^  cooperative-matrix path: VK_(KHR|NV)_cooperative_matrix [0-9]+x[0-9]+x[0-9]+ \(attn_cm.comp\)$" \
    "$work/check.txt" || { echo "FAIL: no note naming the extension and tile shape"; fail=1; }
else
  grep -q "^    cooperative matrix: VK_NV_cooperative_matrix [a-z, ]*, VK_KHR_cooperative_matrix " \
    "$work/devices.txt" || { echo "FAIL: devices does not show the cooperative-matrix extensions"; fail=1; }
  grep -q "^    attention cooperative-matrix path: no (" "$work/devices.txt" ||
    { echo "FAIL: devices does not say why the path is absent"; fail=1; }
  [ "$rc" = 0 ] || { echo "FAIL: check exited $rc (a skip is not a failure)"; fail=1; }
  grep -q "^  cooperative-matrix path: skipped (" "$work/check.txt" ||
    { echo "FAIL: no 'cooperative-matrix path: skipped (...)' line"; fail=1; }
  grep -Eq "^  attn_cm_f16 .*SKIP \(unsupported\)( \(.*\))?$" "$work/check.txt" ||
    { echo "FAIL: no skipped attn_cm_f16 row"; fail=1; }
  grep -q "pass$" "$work/check.txt" && { echo "FAIL: a cooperative-matrix row passed without running"; fail=1; }
  python3 - "$work/check.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
dev = d["devices"][0]
rows = dev["results"]
assert rows and all(r["kernel"] == "attn_cm_f16" and r["skipped"] and not r["pass"] for r in rows), rows
assert "cooperative-matrix path: skipped (" in dev["notes"], dev["notes"]
PY
fi
[ "$fail" = 0 ] && echo "ok: cooperative-matrix path reported" 
exit "$fail"
