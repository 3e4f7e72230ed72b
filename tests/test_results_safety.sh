#!/usr/bin/env bash
# Results are never lost or half taken (issue 13): one process per output
# directory, resume and merge verify every run directory against the sizes
# and checksums its summary recorded, SIGINT/SIGTERM stop at a safe point
# with results.csv and manifest.json for the finished runs, a killed
# process's leftovers are cleaned, and output problems exit 2. The batches
# use CPU-only kinds (decay): no device needed.
# usage: test_results_safety.sh path/to/ropelab
set -u
bin=$1
pass=0 fail=0
. "$(dirname "$0")/expect_lib.sh"
t=$(mktemp -d /tmp/rlsafeXXXX)
trap 'rm -rf "$t"' EXIT
cat > "$t/b.yaml" <<'YAML'
model: {head_dim: 16, heads: 1, train_len: 64}
experiments:
  - kind: decay
    params: {max_distance: [8, 16, 24, 32], step: 4}
YAML

# 1. a second process on a locked output directory is refused, naming the pid
mkdir -p "$t/o1"
echo 4242 > "$t/o1/.ropelab.lock"
flock "$t/o1/.ropelab.lock" sleep 2 &
locker=$!
sleep 0.5
out=$("$bin" run "$t/b.yaml" --out "$t/o1" --quiet --no-plot 2>&1); rc=$?
if [ $rc -eq 2 ] && grep -q "in use by another ropelab process (pid 4242" <<<"$out"; then ok
else bad "lock: exit $rc: $out"; fi
wait $locker 2>/dev/null # the holder ends: the lock is free again
out=$("$bin" run "$t/b.yaml" --out "$t/o1" --quiet --no-plot 2>&1); rc=$?
[ $rc -eq 0 ] && ok || bad "after the lock is released: exit $rc: $out"
rows=$(wc -l < "$t/o1/results.csv")

# 2. --resume re-runs a run whose table was deleted or changed
id=$(ls "$t/o1/runs" | head -n 1)
rm "$t/o1/runs/$id/decay.csv"
id2=$(ls "$t/o1/runs" | sed -n 2p)
echo "0,0,0,0" >> "$t/o1/runs/$id2/decay.csv"
out=$("$bin" run "$t/b.yaml" --out "$t/o1" --resume --no-plot 2>&1); rc=$?
if [ $rc -eq 0 ] && grep -q "2 passed, 0 failed, 2 already complete" <<<"$out" &&
   grep -q "running again: .*decay.csv is missing" <<<"$out" &&
   grep -q "running again: .*does not match summary.json" <<<"$out" &&
   [ "$(wc -l < "$t/o1/results.csv")" -eq "$rows" ]; then ok
else bad "resume: exit $rc: $out"; fi

# 3. merge verifies every run it is told about, and never writes into an input
"$bin" run "$t/b.yaml" --out "$t/s0" --shard 0/2 --quiet --no-plot >/dev/null 2>&1
"$bin" run "$t/b.yaml" --out "$t/s1" --shard 1/2 --quiet --no-plot >/dev/null 2>&1
out=$("$bin" merge "$t/s0" "$t/s1" --out "$t/m" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "4 of 4 run(s) present, 0 missing" <<<"$out" && ok || bad "merge: $rc $out"
victim=$( (ls "$t/s1/runs"; ls "$t/s0/runs") | head -n 1)
vshard=$([ -e "$t/s1/runs/$victim" ] && echo 1 || echo 0)
rm -rf "$t/s1/runs/$victim" "$t/s0/runs/$victim"
out=$("$bin" merge "$t/s0" "$t/s1" --out "$t/m2" 2>&1); rc=$?
if [ $rc -eq 1 ] && grep -q "incomplete run $victim" <<<"$out" &&
   grep -q "missing run $victim (shard $vshard/2)" <<<"$out" &&
   grep -q "3 of 4 run(s) present, 1 missing (1 of them listed but incomplete, 0 failed)" <<<"$out"; then ok
else bad "merge with a lost run: exit $rc: $out"; fi
out=$("$bin" merge "$t/s0" "$t/s1" --out "$t/s1/" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "is also input 2" <<<"$out" && ok || bad "merge into an input: $rc $out"

# 3b. the merge copies each verified run into OUT/runs (its report keeps the
# runs' verification), and a second device's run of the same shards is
# complementary, not "given twice": one results.csv with both devices. A
# second vendor is simulated by renaming the device in a copy of the
# outputs (what a run on another GPU writes differs only there).
"$bin" run "$t/b.yaml" --out "$t/p0" --shard 0/2 --quiet --no-plot >/dev/null 2>&1
"$bin" run "$t/b.yaml" --out "$t/p1" --shard 1/2 --quiet --no-plot >/dev/null 2>&1
"$bin" merge "$t/p0" "$t/p1" --out "$t/pm" >/dev/null 2>&1
copied() {
  [ -d "$t/pm/runs" ] && [ "$(ls "$t/pm/runs" | wc -l)" -eq 4 ] || return 1
  for r in "$t"/m/runs/*; do
    cmp -s "$r/decay.csv" "$t/p0/runs/${r##*/}/decay.csv" ||
      cmp -s "$r/decay.csv" "$t/p1/runs/${r##*/}/decay.csv" || return 1
  done
}
copied && ok || bad "merge did not copy runs/: $(ls -R "$t/pm")"
if command -v gnuplot >/dev/null; then
  "$bin" plot "$t/pm" --no-svg >/dev/null 2>&1
  [ -s "$t/pm/report.md" ] && ! grep -q "no summary" "$t/pm/report.md" && ok ||
    bad "merged report lacks the runs' summaries: $(grep -c 'no summary' "$t/pm/report.md")"
fi
for s in p0 p1; do
  rm -rf "$t/v$s"; cp -r "$t/$s" "$t/v$s"
  sed -i 's/"cpu"/"cpu-other-vendor"/' "$t/v$s/manifest.json" "$t/v$s"/runs/*/summary.json
  # as that vendor's own run would record them: each summary's size and
  # FNV-1a 64 in the manifest (merge refuses a summary that does not match)
  python3 "$(dirname "$0")/record_summaries.py" "$t/v$s"
done
out=$("$bin" merge "$t/p0" "$t/p1" "$t/vp0" "$t/vp1" --out "$t/m3" 2>&1); rc=$?
if [ $rc -eq 0 ] && ! grep -q "given twice\|duplicated run" <<<"$out" &&
   grep -q "4 of 4 run(s) present, 0 missing" <<<"$out" &&
   [ "$(ls "$t/m3/runs" | wc -l)" -eq 8 ] &&
   [ "$(cut -d, -f1,2 "$t/m3/results.csv" | sed 1d | sort -u | wc -l)" -eq 8 ] &&
   [ "$(cut -d, -f2 "$t/m3/results.csv" | sed 1d | sort -u | tr '\n' ' ')" = "cpu cpu-other-vendor " ]
then ok; else bad "two devices' merge: exit $rc: $out $(ls "$t/m3/runs")"; fi
# the same shard on the same device twice is a duplicate
out=$("$bin" merge "$t/p0" "$t/p1" "$t/p0" --out "$t/m4" 2>&1); rc=$?
if [ $rc -eq 1 ] && grep -q "shard 0/2 on the same device(s) given twice" <<<"$out" &&
   grep -q "duplicated run .* on cpu" <<<"$out"; then ok
else bad "same shard twice: exit $rc: $out"; fi

# 4. leftovers of a killed process are removed; runs/ as a file is exit 2
mkdir -p "$t/o2/runs/.tmp-deadbeef"
touch "$t/o2/results.csv.tmp.99999" "$t/o2/manifest.json.tmp.99999" "$t/o2/runs/.tmp-deadbeef/x.csv"
"$bin" run "$t/b.yaml" --out "$t/o2" --quiet --no-plot >/dev/null 2>&1
if [ ! -e "$t/o2/results.csv.tmp.99999" ] && [ ! -e "$t/o2/manifest.json.tmp.99999" ] &&
   [ ! -e "$t/o2/runs/.tmp-deadbeef" ] && [ -s "$t/o2/results.csv" ]; then ok
else bad "stale temporaries left: $(ls -a "$t/o2" "$t/o2/runs")"; fi
mkdir -p "$t/o3"; touch "$t/o3/runs"
out=$("$bin" run "$t/b.yaml" --out "$t/o3" --quiet --no-plot 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "o3/runs is not a directory where ropelab keeps its own directory" <<<"$out" && ok || bad "runs file: $rc $out"

# 5. SIGTERM / SIGINT mid-batch: stop at the next run boundary, write
# results.csv and manifest.json for the complete runs, say how to resume,
# exit 143 / 130; --resume then finishes the plan. Each decay run here takes
# ~0.4-1.5 s in the sanitizer build that runs this suite (2^16 distances;
# the six 4.5 s in all); trials send the signal at different times, inside
# the first run and later.
cat > "$t/slow.yaml" <<'YAML'
model: {head_dim: 64, heads: 1, train_len: 64}
experiments:
  - kind: decay
    params: {max_distance: 65535, step: [1, 2, 3, 4, 5, 6]}
YAML
trials=0 trial_fail=0
for sig in TERM INT; do
  for delay in 0.2 1.2; do
    trials=$((trials + 1))
    o="$t/sig$trials"
    "$bin" run "$t/slow.yaml" --out "$o" --no-plot >"$o.log" 2>&1 &
    p=$!
    sleep $delay
    kill -$sig $p
    wait $p; rc=$?
    want=$([ $sig = INT ] && echo 130 || echo 143)
    done_runs=$(grep -c '"status": "passed"' "$o/manifest.json" 2>/dev/null || echo 0)
    if [ $rc -eq $want ] && [ -s "$o/manifest.json" ] && [ -e "$o/results.csv" ] &&
       grep -q "stopped by SIG$sig: .*Resume with: ropelab run .* --resume" "$o.log" &&
       ! ls "$o/runs" | grep -q '^\.tmp-' &&
       "$bin" run "$t/slow.yaml" --out "$o" --resume --quiet --no-plot 2>&1 |
         grep -q "6 run(s): $((6 - done_runs)) passed, 0 failed, $done_runs already complete"; then :
    else
      trial_fail=$((trial_fail + 1))
      printf 'FAIL signal trial %d (SIG%s after %ss): exit %d (want %d)\n%s\n' "$trials" "$sig" \
        "$delay" $rc "$want" "$(cat "$o.log")" >&2
    fi
    rm -rf "$o" "$o.log"
  done
done
echo "signal trials: $trials, failures: $trial_fail"
[ $trial_fail -eq 0 ] && ok || bad "signal trials"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
