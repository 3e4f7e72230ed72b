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
# 4. rotary_part last (DeepSeek MLA: q = cat(q_nope, q_pe)) through the
# runner's file data: the entropy kind on model-order Q/K with rotary_dim 12
# of 16 last gives exactly the statistics of rotary_part first on the same
# rows reordered by hand (rotated part moved to the front; the identical
# reordering of q and k keeps every q.k). Control: first on the
# model-order rows rotates the wrong dimensions and differs.
python3 - "$tmp" <<'PY' || fail "could not write the npy inputs"
import random, struct, sys
def npy(path, rows):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, 2, 16), }" % (len(rows) // 2)
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode())
        for r in rows:
            f.write(struct.pack("<16f", *r))
for name, seed in (("q", 1), ("k", 2)):
    rnd = random.Random(seed)
    rows = [[rnd.gauss(0, 1) for _ in range(16)] for _ in range(2 * 256)]
    npy(f"{sys.argv[1]}/{name}_model.npy", rows)
    npy(f"{sys.argv[1]}/{name}_front.npy", [r[4:] + r[:4] for r in rows])
PY
part_batch() { # part_batch NAME Q K PART
  cat >"$tmp/$1.yaml" <<YAML
name: part-$1
seed: 1
model: {head_dim: 16, heads: 2, train_len: 64}
encodings:
  - {name: r, type: rope, rotary_dim: 12, rotary_part: $4}
data: {source: npy, q: $2, k: $3, layout: thd}
experiments:
  - kind: entropy
    params: {min_len: 64, max_len: 256}
YAML
  "$bin" run "$tmp/$1.yaml" --out "$tmp/$1" --no-plot --quiet >"$tmp/log" 2>&1 ||
    { cat "$tmp/log" >&2; fail "rotary_part batch $1: a run failed"; }
}
part_batch last "$tmp/q_model.npy" "$tmp/k_model.npy" last
part_batch front "$tmp/q_front.npy" "$tmp/k_front.npy" first
part_batch wrong "$tmp/q_model.npy" "$tmp/k_model.npy" first
vals() { # every value of results.csv by (metric, length, x), the run id left out
  python3 - "$1" <<'PY'
import csv, sys
rows = csv.DictReader(open(sys.argv[1]))
print("\n".join(sorted(" ".join((r["metric"], r["length"], r["x"], r["value"])) for r in rows)))
PY
}
vals "$tmp/last/results.csv" >"$tmp/last.v"; vals "$tmp/front/results.csv" >"$tmp/front.v"; vals "$tmp/wrong/results.csv" >"$tmp/wrong.v"
grep -q "^entropy_at_max_len " "$tmp/last.v" || fail "rotary_part: no entropy values"
cmp -s "$tmp/last.v" "$tmp/front.v" || { diff "$tmp/last.v" "$tmp/front.v" >&2; fail "rotary_part last differs from the reordered first"; }
if cmp -s "$tmp/last.v" "$tmp/wrong.v"; then fail "rotary_part last equals first on model-order rows (the control)"; fi
echo "attn kinds: ok"
