#!/usr/bin/env bash
# Memory stays bounded over a batch of many attention shapes (issue 32):
# each new head_dim compiles new pipelines (~20 MiB of host memory each on
# lavapipe); the device's pipeline table (RLVK_PTABLE_SIZE 24) and the
# attention engine's handles (ATTN_MAX_PIPES 12) release the least recently
# used ones, so 50 shapes (150 pipelines) stay under the bound stated in
# docs/runner.md: 650 MiB peak resident memory (measured 555 MiB; the main
# before grew to 1.14 GiB: a 64-entry table, 848 MiB at 30 shapes). The peak is
# the process's own getrusage figure, recorded in manifest.json. Skipped in
# the sanitizer build, whose shadow memory is no measure of ropelab's.
# usage: test_memory_bound.sh path/to/ropelab
set -u
bin=$1
if ldd "$bin" 2>/dev/null | grep -q libasan; then
  echo "AddressSanitizer build: memory is the sanitizer's, not measured here"
  exit 77
fi
t=$(mktemp -d /tmp/rlmemXXXX)
trap 'rm -rf "$t"' EXIT
python3 - "$t/shapes.yaml" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("model: {head_dim: [%s], heads: 1, train_len: 64}\n"
            % ", ".join(str(8 * i) for i in range(1, 51)))
    f.write("experiments:\n  - kind: entropy\n    params: {min_len: 64, max_len: 64}\n")
PY
out=$("$bin" run "$t/shapes.yaml" --out "$t/o" --quiet --no-plot 2>&1); rc=$?
if [ $rc -ne 0 ]; then echo "FAIL: the batch: exit $rc: $out"; exit 1; fi
peak=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["host_peak_rss_bytes"])' "$t/o/manifest.json")
mib=$((peak / 1048576))
echo "50 attention shapes: peak resident memory $mib MiB (bound 650 MiB)"
[ "$mib" -le 650 ] || { echo "FAIL: $mib MiB over the bound"; exit 1; }
