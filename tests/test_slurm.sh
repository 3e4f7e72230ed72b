#!/usr/bin/env bash
# The Slurm examples as a cluster would run them, with fake SLURM_*
# variables and CPU-only kinds (no device, no Slurm): a 3-task array with
# SLURM_ARRAY_TASK_MIN=1 (--array=1-3) runs every run of the plan exactly
# once across its tasks, and the merge job's logic merges it complete.
# usage: test_slurm.sh path/to/ropelab source-root
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
pass=0 fail=0
. "$(dirname "$0")/expect_lib.sh"
t=$(mktemp -d /tmp/rlslurmXXXX)
trap 'rm -rf "$t"' EXIT
cat > "$t/b.yaml" <<'YAML'
model: {head_dim: 16, heads: 1, train_len: 64}
experiments:
  - kind: decay
    params: {max_distance: [8, 16, 24, 32, 40, 48, 56], step: [1, 2]}
YAML
unset SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_MAX SLURM_ARRAY_TASK_COUNT \
  SLURM_ARRAY_TASK_STEP CUDA_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES ZE_AFFINITY_MASK ROPELAB_DEVICE
plan=$("$bin" run "$t/b.yaml" --dry-run | grep -cE '^[0-9a-f]{16} ')
[ "$plan" -eq 14 ] && ok || bad "plan has $plan runs, want 14"

# 1. the array: tasks 1, 2, 3 (as sbatch --array=1-3 sets them)
for id in 1 2 3; do
  out=$(env SLURM_SUBMIT_DIR="$src" SLURM_ARRAY_JOB_ID=4242 SLURM_ARRAY_TASK_ID=$id \
    SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=3 SLURM_ARRAY_TASK_COUNT=3 \
    SLURM_ARRAY_TASK_STEP=1 BATCH="$t/b.yaml" RESULTS="$t/r" ROPELAB="$bin" \
    bash "$src/scripts/slurm/array.sbatch" 2>&1) || bad "array task $id: $out"
  [ -s "$t/r/shard-$id/manifest.json" ] &&
    grep -q "\"index\": $((id - 1))" "$t/r/shard-$id/manifest.json" &&
    grep -q '"count": 3' "$t/r/shard-$id/manifest.json" && ok ||
    bad "task $id is not shard $((id - 1))/3: $(grep -A3 '"shard"' "$t/r/shard-$id/manifest.json")"
done
# every run exactly once over the three shards, and no shard empty
all=$(ls "$t"/r/shard-*/runs | grep -E '^[0-9a-f]{16}$' | sort)
if [ "$(wc -l <<<"$all")" -eq "$plan" ] && [ "$(sort -u <<<"$all" | wc -l)" -eq "$plan" ] &&
   [ -n "$(ls "$t/r/shard-1/runs")" ] && [ -n "$(ls "$t/r/shard-2/runs")" ] &&
   [ -n "$(ls "$t/r/shard-3/runs")" ]; then ok
else bad "runs over the shards: $(for s in 1 2 3; do ls "$t/r/shard-$s/runs" | wc -l; done)"; fi

# 2. the merge job (afterok of the array)
out=$(env SLURM_SUBMIT_DIR="$src" RESULTS="$t/r" ROPELAB="$bin" PATH=/usr/bin:/bin \
  bash "$src/scripts/slurm/merge.sbatch" 2>&1); rc=$?
if [ $rc -eq 0 ] && grep -q "merged 3 of 3 shard(s): $plan of $plan run(s) present, 0 missing" <<<"$out" &&
   [ "$(ls "$t/r/merged/runs" | wc -l)" -eq "$plan" ] &&
   [ "$(cut -d, -f1 "$t/r/merged/results.csv" | sed 1d | sort -u | wc -l)" -eq "$plan" ]; then ok
else bad "merge job: exit $rc: $out"; fi

# 3. what a task refuses: a lone TASK_ID, a stepped array; --shard wins
out=$(env SLURM_ARRAY_TASK_ID=3 "$bin" run "$t/b.yaml" --dry-run 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_MIN" <<<"$out" && ok ||
  bad "lone TASK_ID: $rc $out"
out=$(env SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_MAX=14 \
  SLURM_ARRAY_TASK_COUNT=8 SLURM_ARRAY_TASK_STEP=2 "$bin" run "$t/b.yaml" --dry-run 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "SLURM_ARRAY_TASK_STEP=2" <<<"$out" && ok || bad "stepped: $rc $out"
out=$(env SLURM_ARRAY_TASK_ID=08 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=8 \
  "$bin" run "$t/b.yaml" --dry-run 2>&1); rc=$?
# one number rule everywhere (rl_parse_u64): a leading zero is refused, as
# in --shard and every option, never read as octal
[ $rc -eq 2 ] && grep -q "SLURM_ARRAY_TASK_ID='08': expected a decimal number (digits only, no sign or leading zero)" <<<"$out" &&
  ok || bad "task 08 of 1-8 (a leading zero): $rc $out"
out=$(env SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_STEP=2 "$bin" run "$t/b.yaml" --dry-run \
  --shard 1/2 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "shard 1/2" <<<"$out" && ok || bad "--shard over the env: $rc $out"

# 4. the device the script passes
dev() { env -u CUDA_VISIBLE_DEVICES -u ROCR_VISIBLE_DEVICES -u ZE_AFFINITY_MASK "$@" \
  bash "$src/scripts/slurm/device.sh" 2>/dev/null; }
[ "$(dev)" = auto ] && [ "$(dev CUDA_VISIBLE_DEVICES=2,3)" = 2 ] &&
  [ "$(dev ROCR_VISIBLE_DEVICES=1)" = 1 ] && [ "$(dev ZE_AFFINITY_MASK=3.1)" = 3 ] &&
  [ "$(dev CUDA_VISIBLE_DEVICES=GPU-8a2f0c1e-1111-2222-3333-444455556666,GPU-1)" = \
    uuid:GPU-8a2f0c1e-1111-2222-3333-444455556666 ] &&
  [ "$(dev ROCR_VISIBLE_DEVICES=GPU-4a1b2c3d4e5f6a7b)" = auto ] &&
  [ "$(dev ROPELAB_DEVICE=all CUDA_VISIBLE_DEVICES=1)" = all ] && ok ||
  bad "device.sh: $(dev) $(dev CUDA_VISIBLE_DEVICES=2,3) $(dev ZE_AFFINITY_MASK=3.1)"

# 5. submit.sh: options to both jobs, --array to the array only, the GPU
# request from ROPELAB_GRES (none on a CPU partition), never on the merge;
# a stand-in sbatch records each call.
fake=$(mktemp -d)
cat > "$fake/sbatch" <<'SB'
#!/bin/bash
n=$(($(cat "$SB_LOG.n" 2>/dev/null || echo 0) + 1)); echo $n > "$SB_LOG.n"
printf '%s\n' "$*" >> "$SB_LOG"
echo "$((100 + n));cluster"
SB
chmod +x "$fake/sbatch"
sub() { (cd "$src" && SB_LOG=$fake/log SBATCH=$fake/sbatch bash scripts/slurm/submit.sh "$@"); }
out=$(sub experiments/quickstart.yaml "$fake/res" --array=0-3 --partition=gpu --account=lab 2>&1)
a1=$(sed -n 1p "$fake/log"); m1=$(sed -n 2p "$fake/log")
if grep -q 'array job 101, merge job 102' <<<"$out" &&
   grep -q -- '--gres=gpu:1 --partition=gpu --account=lab --array=0-3 scripts/slurm/array.sbatch' <<<"$a1" &&
   grep -q -- '--gres=none --partition=gpu --account=lab --dependency=afterok:101 scripts/slurm/merge.sbatch' <<<"$m1" &&
   ! grep -q -- '--array' <<<"$m1"; then ok; else bad "submit.sh: $out | $a1 | $m1"; fi
rm -f "$fake/log" "$fake/log.n"
out=$(ROPELAB_GRES=none sub experiments/quickstart.yaml --partition=cpu 2>&1)
a1=$(sed -n 1p "$fake/log")
grep -q -- '--gres=none --partition=cpu scripts/slurm/array.sbatch' <<<"$a1" &&
  grep -q 'results in results/quickstart-' <<<"$out" && ok || bad "submit.sh on a CPU partition: $out | $a1"
out=$(sub experiments/quickstart.yaml r --gres=gpu:2 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q 'ROPELAB_GRES' <<<"$out" && ok || bad "submit.sh --gres: $rc $out"
rm -rf "$fake"

# 6. a real Slurm, when one answers here (slurm-wlm with munge, slurmctld and
# slurmd running: `scontrol ping` says UP): the documented CPU-partition
# recipe, ROPELAB_GRES=none scripts/slurm/submit.sh ... --array=0-2
# --partition=P, submitted for real; both jobs must complete (the merge
# after the array, afterok) and the merged results.csv hold the rows of one
# unsharded run of the batch. Skipped without one (the steps above are its
# simulation).
if command -v sbatch >/dev/null && command -v squeue >/dev/null &&
   scontrol ping 2>/dev/null | grep -q ' is UP'; then
  part=$(sinfo -h -o '%P' 2>/dev/null | sed -n 1p | tr -d '*')
  "$bin" run "$t/b.yaml" --out "$t/single" --no-plot --quiet >/dev/null 2>&1
  out=$(cd "$t" && ROPELAB="$bin" ROPELAB_GRES=none SBATCH=sbatch \
    bash -c "cd '$src' && bash scripts/slurm/submit.sh '$t/b.yaml' '$t/real' --array=0-2 --partition=$part --time=00:10:00 --chdir='$t'" 2>&1)
  jobs=$(sed -nE 's/^array job ([0-9]+), merge job ([0-9]+).*/\1 \2/p' <<<"$out")
  if [ -z "$jobs" ]; then bad "real sbatch on partition $part: $out"; else
    for _ in $(seq 240); do
      [ -z "$(squeue -h -j "${jobs// /,}" 2>/dev/null)" ] && break
      sleep 0.5
    done
    st=$(for j in $jobs; do scontrol show job "$j" 2>/dev/null | sed -nE 's/.*JobState=([A-Z_]+).*/\1/p' | sort -u; done | tr '\n' ' ')
    rows() { cut -d, -f1,3- "$1" | sort; }  # without the device column
    if [ -s "$t/real/merged/results.csv" ] && [ "$(rows "$t/real/merged/results.csv")" = "$(rows "$t/single/results.csv")" ] &&
       ! grep -qv COMPLETED <<<"$(tr ' ' '\n' <<<"$st" | sed '/^$/d')"; then
      ok; echo "real Slurm (partition $part): array and merge jobs $jobs $st; merged results.csv = the unsharded run's"
    else bad "real Slurm: jobs $jobs states '$st'; $(ls "$t/real" 2>&1)"; fi
  fi
else
  echo "real Slurm: none answers here (scontrol ping): its part skipped"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
