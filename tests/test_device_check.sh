#!/usr/bin/env bash
# bench --json (what a comparison between devices needs) and
# scripts/device-check.sh end to end in --quick mode, plus its exit codes
# with a stand-in binary (a failing check, no device, a step out of time).
# usage: test_device_check.sh path/to/ropelab SOURCE_ROOT
set -u
bin=$1
src=$2
pass=0 fail=0
. "$(dirname "$0")/expect_lib.sh"
dc=$src/scripts/device-check.sh
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: python3 is needed to read the JSON" >&2
  exit 77
fi
if ! "$bin" devices >/dev/null 2>&1; then
  echo "SKIP: no Vulkan device" >&2
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ---- bench --json ----------------------------------------------------------
# Checked against numbers recomputed here from the document's own fields
# (every run listed, bytes, flop counts), not against fixed values.
check_bench() { # FILE KIND(rope|attention) REPS
  python3 - "$@" <<'PY'
import json, statistics, sys
path, kind, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = json.load(open(path))
def close(a, b, rel=2e-5):
    return abs(a - b) <= rel * max(abs(a), abs(b))
assert list(d) == ["version", "git_commit", "bench", "flags", "pass", "results"], list(d)
assert d["bench"] == kind and d["pass"] is True and d["version"]
assert len(d["results"]) >= 1
for r in d["results"]:
    extra = ["ratio_read_bytes"] if kind == "rope" else []
    assert list(r) == ["device", "pass", "error", "shape", "timing", "kernel", "yardstick",
                       "ratio"] + extra + ["verify"], list(r)
    if extra:  # the bytes a mode moves are at least Q's: its ratio is at least the plain one
        assert r["ratio_read_bytes"]["value"] >= r["ratio"]["value"] * (1 - 1e-12), r
    assert r["pass"] is True and r["error"] == ""
    dev = r["device"]
    assert list(dev) == ["index", "name", "type", "api_version", "driver_name", "driver_info",
                         "vendor_id_hex", "device_id_hex", "driver_version_raw",
                         "driver_version_decoded", "driver_id", "driver_id_value",
                         "conformance_version", "device_uuid", "timestamp_period_ns",
                         "timestamp_valid_bits"], list(dev)
    u = dev["device_uuid"]
    assert len(u) in (0, 32) and all(c in "0123456789abcdef" for c in u), u
    assert dev["name"] and dev["driver_id"] and dev["driver_version_decoded"]
    assert dev["vendor_id_hex"].startswith("0x") and dev["timestamp_period_ns"] > 0
    def times(t, n):
        assert list(t) == ["runs", "median", "min", "max", "all"], list(t)
        assert t["runs"] == n == len(t["all"]), (t["runs"], n)
        assert all(x > 0 for x in t["all"])
        assert t["min"] <= t["median"] <= t["max"]
        assert close(t["min"], min(t["all"])) and close(t["max"], max(t["all"]))
        assert close(t["median"], statistics.median(t["all"])), (t["median"], t["all"])
    k, y, s = r["kernel"], r["yardstick"], r["shape"]
    times(k["ms"], reps)
    assert r["ratio"]["definition"] and r["ratio"]["value"] > 0
    v = r["verify"]
    assert v["pass"] is True and v["guard_ok"] is True and v["over_bound"] == 0
    assert 0 <= v["worst_error_over_bound"] <= 1 and v["elements"] > 0
    assert 0 <= v["nmse"] <= v["nmse_gate"]
    if kind == "rope":
        times(y["ms"], reps)
        assert y["name"] == "copy" and r["timing"]["reps"] == reps
        # the yardstick's mapping: one 64-byte line per invocation on a CPU device
        assert y["vec4_per_invocation"] == (4 if r["device"]["type"] == "cpu" else 1), y
        n = s["tokens"] * s["heads"] * s["head_dim"]
        assert s["bytes_per_run"] == 2 * 4 * n
        gb = lambda ms: s["bytes_per_run"] / (ms * 1e-3) * 1e-9
        assert close(k["gb_per_s"], gb(k["ms"]["median"]), 1e-4)
        assert close(y["gb_per_s"], gb(y["ms"]["median"]), 1e-4)
        assert close(r["ratio"]["value"], k["gb_per_s"] / y["gb_per_s"], 1e-4)
        # interleaved rounds: round i's ratio is copy ms / rope ms of that round
        rr = r["ratio"]["rounds"]
        times(rr, reps)
        assert all(close(q, c / p, 1e-4) for q, c, p in zip(rr["all"], y["ms"]["all"], k["ms"]["all"]))
        assert "interleaved" in r["timing"]["clock"], r["timing"]
        assert s == {"tokens": d["flags"]["tokens"], "heads": 1, "head_dim": 128,
                     "rotary_dim": 128, "layout": "half", "precision": "fp32", "dtype": "fp32",
                     "bytes_per_run": s["bytes_per_run"]}, s
    else:
        times(y["ms"], reps)  # one fma_peak dispatch right after each timed pass
        assert y["name"] == "fma_peak"
        # the peak is the fastest width, each width timed and verified first
        ws = y["widths"]
        assert [w["vec4_chains"] for w in ws] == [3, 4, 6, 8], ws
        assert all(w["gflop_per_s"] > 0 for w in ws), ws
        best = max(ws, key=lambda w: w["gflop_per_s"])
        assert y["vec4_chains"] == best["vec4_chains"], (y["vec4_chains"], ws)
        # each width sized to ~50 ms within [max / 4, max] (max 4096 groups on
        # a CPU device, 262144 on a GPU); the peak timed next to the passes at
        # the size it was chosen with
        gmax = 4096 if r["device"]["type"] == "cpu" else 262144
        assert all(gmax // 4 <= w["groups"] <= gmax for w in ws), ws
        assert y["groups"] == best["groups"], (y["groups"], ws)
        assert r["ratio"]["above_peak"] == (r["ratio"]["value"] > 1), r["ratio"]
        flop = 2.0 * s["tokens"] ** 2 * s["head_dim"] * s["heads"] * (2 if s["output"] else 1)
        flop *= 0.5 if s["causal"] else 1
        assert close(k["gflop"], flop * 1e-9, 1e-5), (k["gflop"], flop)
        assert close(k["gflop_per_s"], k["gflop"] / (k["ms"]["median"] * 1e-3), 1e-4)
        assert close(y["gflop"], y["groups"] * y["local_size"] * y["rounds"] * 64 * 1e-9, 1e-5)
        assert close(y["gflop_per_s"], y["gflop"] / (y["ms"]["median"] * 1e-3), 1e-4)
        per = [y["ms"]["all"][i] * k["gflop"] / (y["gflop"] * t) for i, t in enumerate(k["ms"]["all"])]
        assert close(r["ratio"]["value"], statistics.median(per), 1e-4), (r["ratio"], per)
        assert close(r["ratio"]["min"], min(per), 1e-4) and close(r["ratio"]["max"], max(per), 1e-4)
        assert v["worst_statistic"]
PY
}
"$bin" bench rope --tokens 4096 --reps 5 --json > "$work/rope.json"; rc=$?
if [ $rc -eq 0 ] && check_bench "$work/rope.json" rope 5; then ok; else bad "bench_rope_json (exit $rc)"; fi
"$bin" bench attention --tokens 256 --head-dim 32 --causal --reps 3 --json > "$work/attn.json"; rc=$?
if [ $rc -eq 0 ] && check_bench "$work/attn.json" attention 3; then ok; else bad "bench_attention_json (exit $rc)"; fi
"$bin" bench attention --tokens 256 --head-dim 32 --output --single --json > "$work/attn1.json"; rc=$?
if [ $rc -eq 0 ] && check_bench "$work/attn1.json" attention 1; then ok; else bad "bench_attention_single_json (exit $rc)"; fi
# Sampled query rows: the work is the rows' visible keys (bidirectional: S x N
# pairs), the flops and ns per key follow from it; --scale times each length
# with the same rows and fits the exponent with its interval.
"$bin" bench attention --tokens 4096 --head-dim 32 --query-rows 64 --reps 3 --json > "$work/attns.json"; rc=$?
if [ $rc -eq 0 ] && python3 - "$work/attns.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
s, k = r["shape"], r["kernel"]
assert r["pass"] and s["query_rows"] == 64 and s["query_sampling"] == "uniform", s
assert k["pairs"] == 64 * 4096, k["pairs"]
# JSON reals carry 6 significant digits
assert abs(k["gflop"] - 2 * k["pairs"] * 32 * 1e-9) <= 2e-5 * k["gflop"], k
assert abs(k["ns_per_key"] - k["ms"]["median"] * 1e6 / 4096) <= 2e-5 * k["ns_per_key"], k
assert r["verify"]["pass"] is True and r["verify"]["elements"] > 0
PY
then ok; else bad "bench_attention_query_rows_json (exit $rc)"; fi
"$bin" bench attention --scale 1024:16384 --head-dim 32 --query-rows 32 --reps 1 --json > "$work/scale.json"; rc=$?
if [ $rc -eq 0 ] && python3 - "$work/scale.json" <<'PY'
import json, math, sys
r = json.load(open(sys.argv[1]))["results"][0]
pts, f, a = r["points"], r["fit"], r["affine"]
assert r["pass"] and [p["shape"]["tokens"] for p in pts] == [1024, 4096, 16384], pts
assert all(p["shape"]["query_rows"] == 32 and p["verify"]["pass"] for p in pts)
# the exponent is the least-squares slope of ln t on ln N, recomputed here
x = [math.log(p["shape"]["tokens"]) for p in pts]
y = [math.log(p["kernel"]["ms"]["median"]) for p in pts]
mx, my = sum(x) / 3, sum(y) / 3
b = sum((u - mx) * (v - my) for u, v in zip(x, y)) / sum((u - mx) ** 2 for u in x)
assert abs(f["exponent"] - b) <= 1e-4 * max(1, abs(b)), (f, b)  # 6 significant digits
assert f["points"] == 3 and f["exponent_lo95"] <= f["exponent"] <= f["exponent_hi95"], f
assert a["ns_per_key_lo95"] <= a["ns_per_key"] <= a["ns_per_key_hi95"], a
PY
then ok; else bad "bench_attention_scale_json (exit $rc)"; fi
expect bench_attn_scale_bad 2 '--scale 4096:8192: must be FROM:TO' -- bench attention --scale 4096:8192
expect bench_attn_sampling_bad 2 '--query-sampling every: must be one of uniform' -- bench attention --query-rows 8 --query-sampling every
expect bench_attn_path_bad 2 '--attn-path vector: must be auto, scalar, subgroup or coopmat' -- bench attention --attn-path vector
expect bench_attn_reps_max 2 '--reps 64: must be between 1 and 63' -- bench attention --tokens 64 --reps 64
# A device that refuses the shape keeps its place in the document, with the
# error and null measurements, and the exit code says so.
"$bin" bench rope --tokens 2000000 --json > "$work/big.json" 2>/dev/null; rc=$?
if [ $rc -eq 2 ] && python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
r = d["results"][0]
assert d["pass"] is False and r["pass"] is False and "maxStorageBufferRange" in r["error"]
assert r["kernel"] is None and r["ratio"] is None and r["shape"]["tokens"] == 2000000
assert r["device"]["name"]' "$work/big.json"; then ok; else bad "bench_json_refused (exit $rc)"; fi

# ---- device-check.sh ---------------------------------------------------------
expect_dc() { # NAME CODE PATTERN -- ARGS...
  local name=$1 code=$2 pat=$3 out rc; shift 4
  out=$(bash "$dc" "$@" 2>&1); rc=$?
  if [ "$rc" -eq "$code" ] && grep -qE -- "$pat" <<<"$out"; then ok; else
    bad "$name: exit $rc (want $code), output:"; printf '%s\n' "$out" >&2; fi
}
if command -v shellcheck >/dev/null 2>&1; then
  if shellcheck "$dc" "$src/scripts/device-bundle.sh"; then ok; else bad shellcheck; fi
fi
mkdir -p "$work/full" && touch "$work/full/x"
expect_dc dc_out_exists 2 'exists and is not an empty folder' -- --bin "$bin" --out "$work/full"
expect_dc dc_no_bin 2 'not an executable file' -- --bin "$work/nothing" --out "$work/o1"
expect_dc dc_bad_arg 2 "unknown argument '--frob'" -- --frob
expect_dc dc_bad_limit 2 "--time-limit 'abc'" -- --time-limit abc

# The whole quick run on this device: every file, a PASS, nothing temporary
# left, the archive, and well under the suite's timeout.
s0=$(date +%s)
# (check's rows cut to one family: the whole quick check runs in test_cli.sh)
bash "$dc" --bin "$bin" --quick --check-kernel 'rope/half/*' --out "$work/dc" --tar "$work/dc.tar.gz" > "$work/dc.out" 2>&1; rc=$?
secs=$(($(date +%s) - s0))
missing=""
for f in summary.txt steps.tsv system.txt version.txt devices.json devices.txt check.json \
         check-junit.xml bench/rope-half-fp32.json bench/attention-4096_d128_causal.json; do
  [ -s "$work/dc/$f" ] || missing="$missing $f"
done
if [ $rc -eq 0 ] && [ -z "$missing" ] && grep -q '^result: PASS' "$work/dc/summary.txt" &&
   grep -qE '^check +: pass, [0-9]+ rows' "$work/dc/summary.txt" &&
   grep -qE '^  half fp32 +[0-9.]+ \([0-9.]+\) +[0-9.]+ \([0-9.]+\) +[0-9.]+ ' "$work/dc/summary.txt" &&
   grep -qE '^  4096_d128_causal +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$' "$work/dc/summary.txt" &&
   ! ls -d "$work"/dc.tmp-* >/dev/null 2>&1 && tar -tzf "$work/dc.tar.gz" | grep -q '^dc/summary.txt$'; then
  ok
else
  bad "device_check_quick: exit $rc, missing:$missing"; cat "$work/dc.out" >&2
fi
echo "device-check.sh --quick: $secs s" >&2
if check_bench "$work/dc/bench/rope-half-fp32.json" rope 5 &&
   python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["pass"] is True and d["flags"]["quick"] is True' "$work/dc/check.json"; then
  ok; else bad "device_check_quick_json"; fi

# A stand-in binary: the real one, except where a test makes it fail.
fake=$work/fake-ropelab
cat > "$fake" <<EOF
#!/usr/bin/env bash
case "\$1:\${FAKE_MODE:-}" in
  check:fail) "$bin" "\$@" --kernel 'rope/half/fp32*'; exit 1 ;;
  check:slow) exec sleep 60 ;;
  devices:nodev) echo "ropelab: the Vulkan loader found no device" >&2; exit 2 ;;
esac
exec "$bin" "\$@"
EOF
chmod +x "$fake"
FAKE_MODE=fail bash "$dc" --bin "$fake" --quick --out "$work/f1" > "$work/f1.out" 2>&1; rc=$?
# steps.tsv: step, status, exit, seconds, output (tab-separated)
has_step() { awk -F'\t' -v s="$2" -v st="$3" '$1 == s && index($2, st) == 1 { f = 1 } END { exit !f }' "$1"; }
if [ $rc -eq 1 ] && grep -q '^result: FAIL' "$work/f1/summary.txt" &&
   grep -q 'a check row or a verification failed' "$work/f1/summary.txt" &&
   has_step "$work/f1/steps.tsv" check 'failed (verification)' &&
   has_step "$work/f1/steps.tsv" rope_half_fp32 ok; then
  ok; else bad "device_check_check_fails: exit $rc"; cat "$work/f1.out" >&2; fi
FAKE_MODE=nodev bash "$dc" --bin "$fake" --quick --out "$work/f2" > "$work/f2.out" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q 'no usable Vulkan device' "$work/f2.out" && [ -f "$work/f2/logs/loader-debug.log" ] &&
   grep -q 'found no device' "$work/f2/logs/devices.log"; then
  ok; else bad "device_check_no_device: exit $rc"; cat "$work/f2.out" >&2; fi
# check runs past what the whole run may take: cut, and the steps after it
# are skipped, not started.
FAKE_MODE=slow bash "$dc" --bin "$fake" --quick --time-limit 15 --out "$work/f3" > "$work/f3.out" 2>&1; rc=$?
if [ $rc -eq 1 ] && has_step "$work/f3/steps.tsv" check timeout &&
   has_step "$work/f3/steps.tsv" rope_half_fp32 'skipped (time limit)' &&
   grep -q '^result: FAIL' "$work/f3/summary.txt"; then
  ok; else bad "device_check_time_limit: exit $rc"; cat "$work/f3.out" "$work/f3/steps.tsv" >&2; fi

echo "device_check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
