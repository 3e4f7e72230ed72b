#!/usr/bin/env bash
# Progress lines, run timing and estimates of `ropelab run` (issue 16):
# one line per run on a non-terminal stderr, live \r lines with an ETA on a
# terminal (through script(1) when installed), nothing with --quiet,
# summary.json's timing and estimate, manifest.json's pipeline-cache record,
# and --dry-run's time estimates.
# usage: test_progress.sh path/to/ropelab
set -u
bin=$1
pass=0 fail=0
. "$(dirname "$0")/expect_lib.sh"
"$bin" devices >/dev/null 2>&1 || { echo "test_progress: SKIP: no Vulkan device"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export RL_CACHE_DIR=$tmp/cache
cat >"$tmp/b.yaml" <<YAML
name: progress
output: $tmp/out
seed: 1
model: {head_dim: 32, heads: 1, kv_heads: 1, train_len: 64}
encodings:
  - {name: rope, type: rope, rope_theta: 10000}
  - {name: yarn, type: yarn, rope_theta: 10000, factor: 4, original_max_position_embeddings: 64}
data: {source: structured}
experiments:
  - kind: entropy
    params: {min_len: 64, max_len: 256}
  - kind: decay
    encodings: [rope]
    params: {max_distance: 64, step: 8}
YAML

# not a terminal: one line per run when it ends, on stderr only
"$bin" run "$tmp/b.yaml" --no-plot >"$tmp/o1" 2>"$tmp/e1"; rc=$?
[ "$rc" -eq 0 ] && ok || bad "run exit $rc: $(cat "$tmp/e1")"
line='^run [1-3]/3 [0-9a-f]{16} entropy (rope|yarn) on .+: passed, verified \([0-9.]+ s wall, [0-9.]+ s device\)$'
[ "$(grep -cE "$line" "$tmp/e1")" -eq 2 ] && ok || bad "two entropy lines: $(cat "$tmp/e1")"
grep -qE '^run [1-3]/3 [0-9a-f]{16} decay rope on cpu: passed, verified' "$tmp/e1" && ok ||
  bad "decay line: $(cat "$tmp/e1")"
[ "$(grep -c '' "$tmp/e1")" -eq 3 ] && ok || bad "exactly three lines: $(cat "$tmp/e1")"
grep -q $'\r' "$tmp/e1" && bad "carriage return on a non-terminal" || ok
grep -q '^run ' "$tmp/o1" && bad "progress on stdout: $(cat "$tmp/o1")" || ok

# summary.json: where the wall time went, and the estimate beside it
sum=$(grep -l '"kind": "entropy"' "$tmp"/out/runs/*/summary.json | head -1)
for key in wall_s pipeline_create_s pipelines_created device_wait_s submissions verify_cpu_s \
           other_s gpu_s wall_over_gpu measured_device_s measured_over_estimate fma_gflops; do
  grep -qE "\"$key\": [0-9]" "$sum" && ok || bad "summary.json lacks $key: $sum"
done
grep -qE '"device_wait_s": 0\.0+,' "$sum" && bad "no device time recorded" || ok
grep -qE '"submissions": 0,' "$sum" && bad "no submissions counted" || ok
grep -qE '"gpu_s": 0\.0+,' "$sum" && bad "no timestamped GPU time recorded" || ok
# the persisted pipeline cache: absent at first, loaded by the next process
grep -q '"status": "none yet"' "$tmp/out/manifest.json" && ok || bad "first cache status"
ls "$RL_CACHE_DIR"/pipelines-*.bin >/dev/null 2>&1 && ok || bad "no cache file written"
ls "$RL_CACHE_DIR"/throughput-*.json >/dev/null 2>&1 && ok || bad "no yardsticks cached"
grep -q '"fma_yardstick": "fma_peak rings 3/4/6/8"' "$RL_CACHE_DIR"/throughput-*.json && ok ||
  bad "cached yardstick not named: $(cat "$RL_CACHE_DIR"/throughput-*.json)"
"$bin" run "$tmp/b.yaml" --no-plot --quiet --out "$tmp/out2" >/dev/null 2>"$tmp/e2"; rc=$?
[ "$rc" -eq 0 ] && ok || bad "second run exit $rc"
grep -q '"status": "loaded"' "$tmp/out2/manifest.json" && ok || bad "cache not loaded"
# --quiet: no progress at all
[ -s "$tmp/e2" ] && bad "--quiet printed: $(cat "$tmp/e2")" || ok
"$bin" run "$tmp/b.yaml" --no-plot --quiet --no-pipeline-cache --out "$tmp/out3" >/dev/null 2>&1
grep -q '"status": "disabled"' "$tmp/out3/manifest.json" && ok || bad "--no-pipeline-cache"

# --dry-run: each run with an estimated time, said to be an estimate
"$bin" run "$tmp/b.yaml" --dry-run >"$tmp/d" 2>&1; rc=$?
[ "$rc" -eq 0 ] && ok || bad "dry-run exit $rc"
grep -q 'time estimates (estimates, not measurements) on ' "$tmp/d" && ok || bad "$(cat "$tmp/d")"
[ "$(grep -cE '^[0-9a-f]{16}  entropy +(rope|yarn) +[0-9]+\.[0-9]+ s +[0-9.]+ [KMG]?i?B' "$tmp/d")" -eq 2 ] &&
  ok || bad "estimate lines: $(cat "$tmp/d")"
grep -qE 'estimated device time of this shard: [0-9.]+ s' "$tmp/d" && ok || bad "total"
# a peak cached by another yardstick (no "fma_yardstick": before the FMA
# widths) is measured again, not used
for f in "$RL_CACHE_DIR"/throughput-*.json; do
  printf '{"fma_gflops": 1234.5, "copy_gbs": 2.5, "device": "x"}\n' > "$f"
done
"$bin" run "$tmp/b.yaml" --dry-run >"$tmp/d2" 2>&1 && ok || bad "dry-run (old cache) exit"
grep -q 'measured now' "$tmp/d2" && ok || bad "old-yardstick cache used: $(cat "$tmp/d2")"
grep -q 'cached in' "$tmp/d" && ok || bad "first dry-run did not use the cache: $(cat "$tmp/d")"
grep -q '1234.5' "$RL_CACHE_DIR"/throughput-*.json && bad "old cache not replaced" || ok
grep -q '"copy_yardstick": "copy 64-byte lines, texel reads, on CPU devices"' "$RL_CACHE_DIR"/throughput-*.json &&
  ok || bad "cached copy yardstick not named: $(cat "$RL_CACHE_DIR"/throughput-*.json)"
# a bandwidth cached by the one-vec4-per-invocation copy (FMA named, no
# "copy_yardstick") is measured again
for f in "$RL_CACHE_DIR"/throughput-*.json; do
  printf '{"fma_gflops": 60.5, "fma_yardstick": "fma_peak rings 3/4/6/8", "copy_gbs": 2.5, "device": "x"}\n' > "$f"
done
"$bin" run "$tmp/b.yaml" --dry-run >"$tmp/d3" 2>&1 && ok || bad "dry-run (old copy cache) exit"
grep -q 'measured now' "$tmp/d3" && ok || bad "old copy-yardstick cache used: $(cat "$tmp/d3")"
# one cached by the storage-read line copy (before texel reads) too
for f in "$RL_CACHE_DIR"/throughput-*.json; do
  printf '{"fma_gflops": 60.5, "fma_yardstick": "fma_peak rings 3/4/6/8", "copy_gbs": 2.5, "copy_yardstick": "copy 64-byte lines on CPU devices", "device": "x"}\n' > "$f"
done
"$bin" run "$tmp/b.yaml" --dry-run >"$tmp/d4" 2>&1 && ok || bad "dry-run (storage-read copy cache) exit"
grep -q 'measured now' "$tmp/d4" && ok || bad "storage-read copy cache used: $(cat "$tmp/d4")"

# a terminal: live lines (\r, phase, ETA) through script(1)
if command -v script >/dev/null 2>&1; then
  script -qec "\"$bin\" run \"$tmp/b.yaml\" --no-plot --out \"$tmp/out4\"" /dev/null \
    >"$tmp/t" 2>&1
  grep -q $'\r' "$tmp/t" && ok || bad "no live line on a terminal: $(cat "$tmp/t")"
  grep -qE 'entropy (rope|yarn): N=64 +[0-9]+% [0-9.]+ s, ETA' "$tmp/t" && ok ||
    bad "live line: $(tr '\r' '\n' <"$tmp/t")"
  grep -qE 'passed, verified' "$tmp/t" && ok || bad "final lines on a terminal"
else
  echo "test_progress: script(1) not installed; terminal path covered by the run suite's formatter test"
fi
echo "test_progress: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
