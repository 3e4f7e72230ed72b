#!/usr/bin/env bash
# This session's methods in the attention kinds, and the entropy kind's sink
# mass (docs/runner.md, "sink_tokens"):
#  1. tests/data/attn_kinds.yaml: xPos, Resonance, dynamic YaRN (recompute
#     and cache_consistent), vLLM semantics in entropy, retrieval and
#     distortion with windows, sinks, chunks, a learned sink and the
#     temperatures, and the sink mass under Self-Extend / ReRoPE remapping:
#     every run passes its verification (without the remap in the sink
#     pass, the two remapped runs fail).
#  2. tests/data/attn_kinds_uniform.yaml: NoPE on all-ones Q/K gives every
#     key the logit sqrt(16) = 4, so attention is uniform over the visible
#     keys and the sink mass is known by hand: bidirectional, no mask,
#     learned sink sigma = 5: 4 e^4 / (N e^4 + e^5), share e^5 / (N e^4 + e^5);
#     causal last group (rows 31..62 of 64): mean of 4 e^4 / ((i + 1) e^4 + e^5);
#     window 8 + 4 sinks, bidirectional: row i sees its 4 sinks and the keys
#     |i - j| < 8 beyond them.
#  3. Refusals: sink_tokens with a window but fewer attn_sinks, and
#     sink_tokens >= min_len, name the keys.
# usage: test_attn_kinds.sh path/to/ropelab path/to/tests/data
set -u
bin=$1 data=$2
tmp=$(mktemp -d /tmp/rl_attn_kinds_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin" run "$data/attn_kinds.yaml" --out "$tmp/k" --no-plot --quiet >"$tmp/log" 2>&1 ||
  { cat "$tmp/log" >&2; fail "attn_kinds.yaml: a run failed"; }
grep -q "17 run(s): 17 passed" "$tmp/log" || { cat "$tmp/log" >&2; fail "attn_kinds.yaml: expected 17 passed runs"; }
n=$(grep -c ',sink_mass_at_max_len,' "$tmp/k/results.csv")
[ "$n" -eq 7 ] || fail "attn_kinds.yaml: $n entropy runs report sink_mass_at_max_len, expected 7"

"$bin" run "$data/attn_kinds_uniform.yaml" --out "$tmp/u" --no-plot --quiet >"$tmp/log" 2>&1 ||
  { cat "$tmp/log" >&2; fail "attn_kinds_uniform.yaml: a run failed"; }
python3 - "$tmp/u/results.csv" <<'PY' || exit 1
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def val(window, metric, x=""):
    got = [float(r["value"]) for r in rows if r["params.attn_window"] == window
           and r["metric"] == metric and r["x"] == x]
    assert len(got) == 1, (window, metric, x, len(got))
    return got[0]
e4, e5 = math.exp(4), math.exp(5)
want = {("0", "sink_length.sink_mass", "32"): 4 * e4 / (32 * e4 + e5),
        ("0", "sink_length.sink_mass", "64"): 4 * e4 / (64 * e4 + e5),
        ("0", "sink_length.learned_sink_mass", "64"): e5 / (64 * e4 + e5),
        ("0", "sink_position.sink_mass", "47.5"):
            sum(min(4, i + 1) * e4 / ((i + 1) * e4 + e5) for i in range(31, 63)) / 32,
        # window 8, sinks 4, bidirectional N = 64: keys [0, 4) and |i - j| < 8
        ("8", "sink_length.sink_mass", "64"):
            sum(4 / len(set(range(4)) | {j for j in range(64) if abs(i - j) < 8})
                for i in range(64)) / 64,
        ("8", "sink_length.learned_sink_mass", "64"): 0.0}
bad = 0
for (w, m, x), v in want.items():
    g = val(w, m, x)
    # fp32 statistics: a few ulp of the lse (|lse| < 10) in the exponent
    if abs(g - v) > 1e-5 * max(v, 1e-3):
        print(f"FAIL: window {w} {m} at {x}: {g!r}, want {v!r}", file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
PY

sed 's/attn_sinks: \[0, 4\]/attn_sinks: [0, 2]/' "$data/attn_kinds_uniform.yaml" >"$tmp/bad1.yaml"
if "$bin" run "$tmp/bad1.yaml" --dry-run --out "$tmp/b1" >"$tmp/log" 2>&1; then fail "window with attn_sinks < sink_tokens accepted"; fi
grep -q "sink_tokens 4 with attn_window 8 .*needs attn_sinks >= 4 (got 2)" "$tmp/log" || { cat "$tmp/log" >&2; fail "refusal message"; }
sed 's/sink_tokens: 4/sink_tokens: 32/' "$data/attn_kinds_uniform.yaml" >"$tmp/bad2.yaml"
if "$bin" run "$tmp/bad2.yaml" --dry-run --out "$tmp/b2" >"$tmp/log" 2>&1; then fail "sink_tokens >= min_len accepted"; fi
grep -q "sink_tokens 32 must be below min_len 32" "$tmp/log" || { cat "$tmp/log" >&2; fail "refusal message"; }
echo "attn kinds: ok"
