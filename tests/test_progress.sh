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
# the calibration says when and at what load it was measured, and learned
# from the two entropy runs (kind entropy, family rope: yarn is a scaling)
for key in measured_at load_per_cpu cpus; do
  grep -qE "\"$key\": [0-9]" "$RL_CACHE_DIR"/throughput-*.json && ok || bad "calibration lacks $key"
done
grep -q '"entropy/rope": \[' "$RL_CACHE_DIR"/throughput-*.json && ok ||
  bad "no run learned: $(cat "$RL_CACHE_DIR"/throughput-*.json)"
[ "$(grep -c '"ratio": ' "$RL_CACHE_DIR"/throughput-*.json)" -eq 2 ] && ok ||
  bad "two ratios learned: $(cat "$RL_CACHE_DIR"/throughput-*.json)"
# summary.json: the estimate used, its band, correction and ratios
for key in uncorrected_device_s correction band_factor learned_runs measured_over_uncorrected; do
  grep -qE "\"$key\": [0-9]" "$sum" && ok || bad "summary.json lacks estimate.$key: $sum"
done
grep -qE '"band_s": \[' "$sum" && ok || bad "summary.json lacks estimate.band_s"
grep -qE '"learned_key": "entropy/rope"' "$sum" && ok || bad "summary.json lacks learned_key"
grep -qE '"within_band": (true|false)' "$sum" && ok || bad "summary.json lacks within_band"
"$bin" run "$tmp/b.yaml" --no-plot --quiet --out "$tmp/out2" >/dev/null 2>"$tmp/e2"; rc=$?
[ "$rc" -eq 0 ] && ok || bad "second run exit $rc"
grep -q '"status": "loaded"' "$tmp/out2/manifest.json" && ok || bad "cache not loaded"
# --quiet: no progress at all
[ -s "$tmp/e2" ] && bad "--quiet printed: $(cat "$tmp/e2")" || ok
"$bin" run "$tmp/b.yaml" --no-plot --quiet --no-pipeline-cache --out "$tmp/out3" >/dev/null 2>&1
grep -q '"status": "disabled"' "$tmp/out3/manifest.json" && ok || bad "--no-pipeline-cache"

# --dry-run: each run with an estimated time, said to be an estimate. The
# first may measure again (the runs above may have disagreed with their
# estimates, or moved the load); the one right after uses the cache,
# unless the machine's load moved meanwhile (then it says so).
"$bin" run "$tmp/b.yaml" --dry-run >"$tmp/d0" 2>&1 || bad "dry-run (first) exit"
"$bin" run "$tmp/b.yaml" --dry-run >"$tmp/d" 2>&1; rc=$?
[ "$rc" -eq 0 ] && ok || bad "dry-run exit $rc"
grep -q 'time estimates (estimates, not measurements) on ' "$tmp/d" && ok || bad "$(cat "$tmp/d")"
[ "$(grep -cE '^[0-9a-f]{16}  entropy +(rope|yarn) +[0-9]+\.[0-9]+ s +[0-9.]+ [KMG]?i?B  [0-9.]+-[0-9.]+ s, ' "$tmp/d")" -eq 2 ] &&
  ok || bad "estimate lines: $(cat "$tmp/d")"
grep -qE 'estimated device time of this shard: [0-9.]+ s \([0-9.]+-[0-9.]+ s; 2 of 2 device runs learned\)' "$tmp/d" &&
  ok || bad "total: $(cat "$tmp/d")"
grep -qE 'x[0-9.]+ from [0-9]+ runs of entropy/rope' "$tmp/d" && ok || bad "learned band: $(cat "$tmp/d")"
if grep -q 'measured now' "$tmp/d"; then
  grep -q 'the load per CPU is' "$tmp/d" && echo "test_progress: note: the load moved between two dry-runs" ||
    bad "second dry-run did not use the cache: $(cat "$tmp/d0" "$tmp/d")"
else
  grep -q 'cached in .*, measured 20[0-9-]* [0-9:]* UTC' "$tmp/d" && ok || bad "cached line: $(cat "$tmp/d")"
fi
cal() { cat "$RL_CACHE_DIR"/throughput-*.json; }
# stale by age: a time stamp 30 days old is measured again, and says why;
# what was learned is kept
for f in "$RL_CACHE_DIR"/throughput-*.json; do
  sed -E "s/\"measured_at\": [0-9]+/\"measured_at\": $(( $(date +%s) - 30 * 86400 ))/" "$f" >"$f.new" &&
    mv "$f.new" "$f"
done
"$bin" run "$tmp/b.yaml" --dry-run >"$tmp/d5" 2>&1 && ok || bad "dry-run (old time stamp) exit"
grep -q 'measured now (.*: the cached calibration was measured 30.0 days ago (limit 7 days)' "$tmp/d5" &&
  ok || bad "old time stamp used: $(cat "$tmp/d5")"
grep -q '"entropy/rope": \[' "$RL_CACHE_DIR"/throughput-*.json && ok || bad "learned lost: $(cal)"
grep -qE '"measured_because": "the cached calibration was measured 30.0 days' "$RL_CACHE_DIR"/throughput-*.json &&
  ok || bad "reason not recorded: $(cal)"
# stale by a run that disagreed: measured again, the dry-run says why, and
# the mark is gone from the new file
for f in "$RL_CACHE_DIR"/throughput-*.json; do
  sed '1s/^{/{"stale_reason": "run 0123456789abcdef (entropy\/rope) measured 9 s against 1 s",/' "$f" \
    >"$f.new" && mv "$f.new" "$f"
done
grep -q stale_reason "$RL_CACHE_DIR"/throughput-*.json || bad "stale_reason not planted: $(cal)"
"$bin" run "$tmp/b.yaml" --dry-run >"$tmp/d6" 2>&1 && ok || bad "dry-run (disagreed) exit"
grep -q 'measured now (.*: a real run disagreed with its estimate: run 0123456789abcdef (entropy/rope) measured 9 s against 1 s' "$tmp/d6" &&
  ok || bad "disagreement not said: $(cat "$tmp/d6")"
grep -q stale_reason "$RL_CACHE_DIR"/throughput-*.json && bad "stale_reason kept: $(cal)" || ok
# learned ratios (a crafted file, measured now at the load now): the
# correction is their mean and the band their spread
lpc=$(awk -v n="$(getconf _NPROCESSORS_ONLN)" '{ printf "%.3f", $1 / n }' /proc/loadavg)
for f in "$RL_CACHE_DIR"/throughput-*.json; do
  printf '{"fma_gflops": 80, "fma_yardstick": "fma_peak rings 3/4/6/8", "copy_gbs": 7, "copy_yardstick": "copy 64-byte lines, texel reads, on CPU devices", "measured_at": %s, "load_per_cpu": %s, "cpus": %s, "learned": {"entropy/rope": [{"ratio": 4}, {"ratio": 4}, {"ratio": 4}]}}\n' \
    "$(date +%s)" "$lpc" "$(getconf _NPROCESSORS_ONLN)" >"$f"
done
"$bin" run "$tmp/b.yaml" --dry-run >"$tmp/d7" 2>&1 && ok || bad "dry-run (learned) exit"
[ "$(grep -cE '^[0-9a-f]{16}  entropy .*-[0-9.]+ s, x4\.00 from 3 runs of entropy/rope$' "$tmp/d7")" -eq 2 ] &&
  ok || bad "learned correction not applied: $(cat "$tmp/d7")"
# a torn file is replaced, not trusted
for f in "$RL_CACHE_DIR"/throughput-*.json; do printf '{"fma_gflops": 12' >"$f"; done
"$bin" run "$tmp/b.yaml" --dry-run >"$tmp/d8" 2>&1 && ok || bad "dry-run (torn) exit"
grep -q 'measured now (.*: the cached file is not a valid calibration' "$tmp/d8" && ok ||
  bad "torn file trusted: $(cat "$tmp/d8")"
grep -q '"measured_at": ' "$RL_CACHE_DIR"/throughput-*.json && ok || bad "torn file not replaced: $(cal)"
# a peak cached by another yardstick (no "fma_yardstick": before the FMA
# widths) is measured again, not used
for f in "$RL_CACHE_DIR"/throughput-*.json; do
  printf '{"fma_gflops": 1234.5, "copy_gbs": 2.5, "device": "x"}\n' > "$f"
done
"$bin" run "$tmp/b.yaml" --dry-run >"$tmp/d2" 2>&1 && ok || bad "dry-run (old cache) exit"
grep -q 'measured now' "$tmp/d2" && ok || bad "old-yardstick cache used: $(cat "$tmp/d2")"
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
