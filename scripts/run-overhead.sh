#!/usr/bin/env bash
# Issue 16's single-run overhead: a fresh `ropelab run` of a one-run batch
# (entropy, TOKENS x 1 head x 128, min_len = max_len: one bidirectional and
# one causal pass, plain RoPE) against the GPU time the run measured with
# its own timestamps (summary.json timing.gpu_s) and against `ropelab bench
# attention` at the same shape in the same session. Modes run interleaved,
# REPS rounds, medians printed:
#   serial    RL_COMPILE_THREADS=1: pipelines compiled one after the other
#   default   rlvk_compile_threads' choice (the caller + one per idle core)
#   parallel  RL_COMPILE_THREADS=2: always two compile threads
# Each line of the table is one mode; columns are the run's own timing
# (docs/runner.md "Timing"): process wall (time of the whole command),
# run wall (summary.json wall_s), timestamped GPU time, submit-to-fence
# device time, pipeline creation, CPU verification, the rest, and
# wall / GPU (run and process). The load average is printed beside them.
# usage: scripts/run-overhead.sh [BUILD_DIR] [TOKENS] [REPS]
set -eu
build=${1:-build}
tokens=${2:-16384}
reps=${3:-3}
bin=$build/ropelab
[ -x "$bin" ] || { echo "run-overhead: no $bin (build first)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/b.yaml" <<YAML
name: overhead
output: $tmp/out
seed: 1
model: {head_dim: 128, heads: 1, kv_heads: 1, train_len: 4096}
encodings:
  - {name: rope, type: rope, rope_theta: 10000}
data: {source: structured}
experiments:
  - kind: entropy
    params: {min_len: $tokens, max_len: $tokens}
YAML

# Mesa's shader cache and ropelab's cache directory warm (as every run
# after the first): one run not counted.
"$bin" run "$tmp/b.yaml" --out "$tmp/warm" --no-plot --quiet >/dev/null
echo "uptime before: $(uptime)"
modes="serial default parallel"
for r in $(seq 1 "$reps"); do
  for m in $modes; do
    case $m in
      serial) env_t=1 ;;
      parallel) env_t=2 ;;
      *) env_t= ;;
    esac
    out=$tmp/$m-$r
    t0=$(date +%s.%N)
    RL_COMPILE_THREADS=$env_t "$bin" run "$tmp/b.yaml" --out "$out" --no-plot --quiet >/dev/null
    t1=$(date +%s.%N)
    echo "$m $(echo "$t1 - $t0" | bc -l)" >>"$tmp/proc.txt"
  done
  # bench attention at the same shape: one bidirectional and one causal pass
  "$bin" bench attention --tokens "$tokens" --heads 1 --head-dim 128 --reps 1 --json \
    >"$tmp/bench_bidir-$r.json" 2>/dev/null
  "$bin" bench attention --tokens "$tokens" --heads 1 --head-dim 128 --reps 1 --json --causal \
    >"$tmp/bench_causal-$r.json" 2>/dev/null
done
echo "uptime after:  $(uptime)"
python3 - "$tmp" "$modes" "$reps" <<'PY'
import glob, json, statistics, sys
tmp, modes, reps = sys.argv[1], sys.argv[2].split(), int(sys.argv[3])
proc = {}
for line in open(f"{tmp}/proc.txt"):
    m, t = line.split()
    proc.setdefault(m, []).append(float(t))
med = statistics.median
print(f"{'mode':9} {'process':>8} {'run':>7} {'gpu':>7} {'device':>7} {'pipel.':>7} "
      f"{'verify':>7} {'other':>7} {'run/gpu':>8} {'proc/gpu':>8}")
for m in modes:
    rows = []
    for r in range(1, reps + 1):
        s = json.load(open(glob.glob(f"{tmp}/{m}-{r}/runs/*/summary.json")[0]))
        assert s["status"] == "passed", s.get("reason")
        rows.append(s["timing"])
    g = lambda k: med(t[k] for t in rows)
    p = med(proc[m])
    print(f"{m:9} {p:7.2f}s {g('wall_s'):6.2f}s {g('gpu_s'):6.2f}s {g('device_wait_s'):6.2f}s "
          f"{g('pipeline_create_s'):6.2f}s {g('verify_cpu_s'):6.2f}s {g('other_s'):6.2f}s "
          f"{med(t['wall_s'] / t['gpu_s'] for t in rows):8.3f} "
          f"{med(pp / t['gpu_s'] for pp, t in zip(proc[m], rows)):8.3f}")
b = [json.load(open(f))["results"][0]["kernel"]["ms"]["median"] / 1e3
     for f in sorted(glob.glob(f"{tmp}/bench_bidir-*.json"))]
bc = [json.load(open(f))["results"][0]["kernel"]["ms"]["median"] / 1e3
      for f in sorted(glob.glob(f"{tmp}/bench_causal-*.json"))]
print(f"bench attention: bidirectional {med(b):.2f} s, causal {med(bc):.2f} s, "
      f"sum {med(x + y for x, y in zip(b, bc)):.2f} s (GPU time, median of {reps})")
PY
