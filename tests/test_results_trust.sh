#!/usr/bin/env bash
# Results a receiver can trust (issue 32): a run directory proves which run
# it holds, an edited summary is caught, merge never replaces another
# study and names failed runs, SIGINT in the plot phase is honoured, limits
# are checked at load, numbers follow one rule, control characters are
# shown, never obeyed. Each case failed on the main before this suite.
# CPU kinds, except the head_dim limit (an attention kind, refused at load).
# usage: test_results_trust.sh path/to/ropelab
set -u
bin=$(realpath "$1")
pass=0 fail=0
. "$(dirname "$0")/expect_lib.sh"
t=$(mktemp -d /tmp/rltrustXXXX)
trap 'rm -rf "$t"' EXIT
cd "$t"
cat > a.yaml <<'YAML'
model: {head_dim: 16, heads: 1, train_len: 64}
experiments:
  - kind: decay
    params: {max_distance: [8, 16], step: 4}
YAML
cat > b.yaml <<'YAML'
model: {head_dim: 32, heads: 1, train_len: 64}
experiments:
  - kind: decay
    params: {max_distance: [8, 16], step: 4}
YAML
"$bin" run a.yaml --out oa --quiet --no-plot >/dev/null 2>&1
"$bin" run b.yaml --out ob --quiet --no-plot >/dev/null 2>&1
ida=$(ls oa/runs | head -n 1); idb=$(ls ob/runs | head -n 1)

# 1. another batch's run under a run's name: --resume refuses it, naming it
cp -r oa sa; rm -rf "sa/runs/$ida"; cp -r "ob/runs/$idb" "sa/runs/$ida"
expect "resume: a directory holding another run" 2 \
  "sa/runs/$ida does not hold run $ida: it holds run $idb" -- \
  run a.yaml --out sa --resume --quiet --no-plot
# ... its run_id edited to match: its resolved parameters still tell
sed -i "s/\"run_id\": \"$idb\"/\"run_id\": \"$ida\"/" "sa/runs/$ida/summary.json"
expect "resume: another run with its run_id edited" 2 \
  "resolved parameters hash to $idb, not to its id $ida" -- \
  run a.yaml --out sa --resume --quiet --no-plot

# 2. an edited summary.json (metrics changed) is refused by resume and merge
cp -r oa se
python3 - "se/runs/$ida/summary.json" <<'PY'
import json, sys
p = sys.argv[1]
s = json.load(open(p))
for k, v in s["metrics"].items():
    if isinstance(v, (int, float)):
        s["metrics"][k] = v * 2
json.dump(s, open(p, "w"), indent=2, sort_keys=True)
PY
expect "resume: an edited summary.json" 2 "se/runs/$ida/summary.json changed after its run" -- \
  run a.yaml --out se --resume --quiet --no-plot
"$bin" run a.yaml --out s0 --shard 0/2 --quiet --no-plot >/dev/null 2>&1
"$bin" run a.yaml --out s1 --shard 1/2 --quiet --no-plot >/dev/null 2>&1
sid=$(ls s0/runs | head -n 1)
cp "s0/runs/$sid/summary.json" keep.json
sed -i 's/"wall_s": \([0-9]\)/"wall_s": 9\1/' "s0/runs/$sid/summary.json"
expect "merge: an edited summary.json" 2 "summary.json changed after its run" -- \
  merge s0 s1 --out m1
cp keep.json "s0/runs/$sid/summary.json"
sidb=$(ls ob/runs | head -n 1)
rm -rf "s0/runs/$sid"; cp -r "ob/runs/$sidb" "s0/runs/$sid"
expect "merge: a shard's directory holding another batch's run" 2 "does not hold run $sid" -- \
  merge s0 s1 --out m1
rm -rf s0; "$bin" run a.yaml --out s0 --shard 0/2 --quiet --no-plot >/dev/null 2>&1

# 3. merge never replaces another study
expect "merge --out a run's output" 2 "is not empty and holds no earlier merge" -- \
  merge s0 s1 --out ob
[ -s ob/manifest.json ] && grep -q "$idb" ob/results.csv && ok || bad "ob changed"
mkdir other; "$bin" run b.yaml --out bs0 --shard 0/2 --quiet --no-plot >/dev/null 2>&1
"$bin" run b.yaml --out bs1 --shard 1/2 --quiet --no-plot >/dev/null 2>&1
(cd other && "$bin" merge ../bs0 ../bs1 >/dev/null 2>&1) # the default ./merged
out=$(cd other && "$bin" merge ../s0 ../s1 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "holds the merge of another batch" <<<"$out" && ok ||
  bad "merge into the default ./merged of another batch: $rc $out"
out=$(cd other && "$bin" merge ../bs0 ../bs1 2>&1); rc=$?
[ $rc -eq 0 ] && ok || bad "merging the same batch again into ./merged: $rc $out"
# a failed run is named, not counted present, and the exit is 1
python3 - s1/manifest.json <<'PY'
import json, sys
p = sys.argv[1]
m = json.load(open(p))
m["jobs"][0]["status"] = "failed"
m["jobs"][0]["reason"] = "out of device memory (a test's record)"
json.dump(m, open(p, "w"), indent=2, sort_keys=True)
PY
out=$("$bin" merge s0 s1 --out m3 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "failed run .* out of device memory (a test's record)" <<<"$out" &&
  grep -q "1 failed" <<<"$out" && ok || bad "merge with a failed run: $rc $out"

# a full disk: merge names the reason (a tmpfs of 8 KiB, where mounting is
# allowed: root, as in CI)
mkdir -p tiny
if mount -t tmpfs -o size=8k tmpfs tiny 2>/dev/null; then
  rm -rf s0; "$bin" run a.yaml --out s0 --shard 0/2 --quiet --no-plot >/dev/null 2>&1
  out=$("$bin" merge s0 s1 --out tiny/m 2>&1); rc=$?
  umount tiny
  [ $rc -eq 2 ] && grep -q "No space left on device" <<<"$out" && ok ||
    bad "merge onto a full disk: $rc $out"
else
  echo "cannot mount a tmpfs here: the full-disk case was not run"
fi

# 4. SIGINT in the plot phase: stop between figures, exit 130, every figure
# complete, no temporary left (gnuplot slowed down so the signal lands)
if command -v gnuplot >/dev/null; then
  mkdir slowbin
  printf '#!/bin/sh\nsleep 0.4\nexec %s "$@"\n' "$(command -v gnuplot)" > slowbin/gnuplot
  chmod +x slowbin/gnuplot
  rm -rf op
  PATH="$t/slowbin:$PATH" "$bin" run a.yaml --out op --quiet > op.log 2>&1 &
  pid=$!
  for i in $(seq 1 2000); do [ -d op/plots ] && break; sleep 0.005; done
  sleep 0.2
  kill -INT $pid; wait $pid; rc=$?
  tmp=$(ls op/plots 2>/dev/null | grep -c '\.tmp\.')
  good=1
  for f in op/plots/*.png; do
    [ -e "$f" ] || continue
    head -c 8 "$f" | od -An -tx1 | grep -q "89 50 4e 47 0d 0a 1a 0a" || good=0
  done
  if [ $rc -eq 130 ] && [ "$tmp" -eq 0 ] && [ $good -eq 1 ] &&
     grep -q "stopped by SIGINT while plotting" op.log; then ok
  else bad "SIGINT while plotting: exit $rc, $tmp temporaries, PNGs whole: $good: $(cat op.log)"; fi
  PATH="$t/slowbin:$PATH" "$bin" plot op > op2.log 2>&1 &
  pid=$!
  sleep 0.6; kill -TERM $pid; wait $pid; rc=$?
  [ $rc -eq 143 ] && grep -q "stopped by SIGTERM" op2.log && ok ||
    bad "SIGTERM during plot: exit $rc: $(cat op2.log)"
fi

# 5. limits at load, one number rule, control characters shown
printf 'model: {head_dim: 640, heads: 1, train_len: 64}\nexperiments:\n  - kind: entropy\n    params: {min_len: 64, max_len: 128}\n' > hd.yaml
expect "head_dim over the attention engine's limit, at load" 2 \
  "head_dim 640 exceeds the attention engine's limit ATTN_MAX_HEAD_DIM = 512" -- \
  run hd.yaml --out ohd --dry-run
long="$t/$(printf 'a%.0s' $(seq 1 300))/$(printf 'b%.0s' $(seq 1 300))/$(printf 'c%.0s' $(seq 1 300))"
expect "--out past the path limit" 2 "the path is [0-9]+ bytes; ropelab takes at most 900" -- \
  run a.yaml --out "$long" --no-plot
[ ! -e "$t/$(printf 'a%.0s' $(seq 1 300))" ] && ok || bad "a truncated --out was created"
expect "--shard 01/2" 2 "expected I/N in decimal" -- run a.yaml --out x --shard 01/2 --dry-run
expect "--seed 07" 2 "not a decimal integer" -- check --seed 07 --list
expect "a float option with a sign" 2 "is not a decimal number" -- freqs --head-dim 64 --factor +4 --rope-type linear
expect "a float option with a leading zero" 2 "is not a decimal number" -- freqs --head-dim 64 --factor 04 --rope-type linear
expect "a negative value where the range takes one" 0 "alibi" -- inspect alibi --from -4 --to 4
printf 'model: {head_dim: 16, heads: 1, train_len: 64}\nencodings: [{name: "x\\e[31mRED", type: "r\\e[2Jx"}]\nexperiments: [{kind: decay}]\n' > esc.yaml
out=$("$bin" run esc.yaml --out oesc --dry-run 2>&1); rc=$?
if [ $rc -eq 2 ] && ! grep -q $'\e' <<<"$out" && grep -qF 'r\x1b[2Jx' <<<"$out"; then ok
else bad "an escape sequence in a batch was printed raw: $(cat -v <<<"$out")"; fi
printf 'model: {head_dim: 16, heads: 1, train_len: 64}\nencodings: [{name: "x\\e[31mRED", type: rope}]\nexperiments: [{kind: decay, params: {max_distance: 8, step: 4}}]\n' > esc2.yaml
out=$("$bin" run esc2.yaml --out oesc2 --dry-run 2>&1); rc=$?
[ $rc -eq 0 ] && ! grep -q $'\e' <<<"$out" && grep -qF 'x\x1b[31mRED' <<<"$out" && ok ||
  bad "an escape sequence in a name was printed raw by --dry-run: $(cat -v <<<"$out")"

# Values the encoding derived reach summary.json and results.csv (issue 27):
# Phi-3's longrope config gives no factor; HF derives it as
# max_position_embeddings / original = 131072 / 4096 = 32 and the attention
# factor sqrt(1 + ln 32 / ln 4096) = 1.19023807142...
cat > "$t/derived.yaml" <<EOF
model: {hf_config: $(cd "$(dirname "$0")" && pwd)/data/phi3_longrope.json}
encodings: [{name: phi3, type: model}]
experiments:
  - {kind: decay, params: {max_distance: 64, step: 8}}
EOF
out=$("$bin" run "$t/derived.yaml" --out "$t/derived" --quiet --no-plot 2>&1); rc=$?
if [ $rc -eq 0 ] && python3 - "$t/derived" <<'PY'
import csv, glob, json, math, sys
d = sys.argv[1]
s = json.load(open(glob.glob(d + "/runs/*/summary.json")[0]))
r = s["encoding_resolved"]
assert "factor" not in s["encoding_params"], s["encoding_params"]
assert r["rope_type"] == "longrope" and r["factor"] == 32.0, r
want = math.sqrt(1 + math.log(32) / math.log(4096))
assert abs(r["attention_factor"] - want) <= 1e-15 * want, (r["attention_factor"], want)
assert r["original_max_position_embeddings"] == 4096
rows = list(csv.DictReader(open(d + "/results.csv")))
assert rows and all(float(x["factor"]) == 32.0 for x in rows), rows[0]
PY
then ok; else bad "derived encoding values not recorded: exit $rc $out"; fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
