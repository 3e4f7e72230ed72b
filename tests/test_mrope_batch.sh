#!/usr/bin/env bash
# mRoPE in the entropy, retrieval, distortion and invariance kinds: text
# positions (the 1-D token index as (p, p, p)) must give plain RoPE's numbers
# exactly, the vl layout (HF get_rope_index: text, an image, text) other
# numbers, every run verified against the double reference (invariance: the
# vl layout is not shift-invariant in the token index, so it is not held to
# the relative encodings' bound); a bad mrope_section is refused before
# anything runs, naming the key.
# usage: test_mrope_batch.sh path/to/ropelab
set -u
bin=$1
pass=0 fail=0
tmp=$(mktemp -d)
trap "rm -rf $tmp" EXIT
. "$(dirname "$0")/expect_lib.sh"
batch() { # batch ENCODINGS_YAML
  cat <<YAML
name: mrope-kinds
output: $tmp/out
seed: 1
model: {head_dim: 32, heads: 2, kv_heads: 1, train_len: 64}
encodings:
$1
data: {source: structured}
experiments:
  - {kind: entropy, params: {min_len: 32, max_len: 128}}
  - {kind: content_retrieval, params: {min_len: 32, max_len: 128, distractors: data}}
  - {kind: distortion, params: {length: 128}}
  - {kind: invariance, params: {pairs: 4, max_shift_log2: 10}}
YAML
}
batch "  - {name: rope, type: rope, rope_theta: 1000000}
  - {name: mrope-text, type: rope, rope_theta: 1000000, mrope_section: !list [4, 6, 6]}
  - {name: mrope-vl, type: rope, rope_theta: 1000000, mrope_section: !list [4, 6, 6],
     mrope_positions: vl, mrope_image_grid: !list [1, 8, 8], mrope_text_before: 16}
  - {name: imrope-vl, type: rope, rope_theta: 1000000, mrope_section: !list [6, 5, 5],
     mrope_interleaved: true, mrope_positions: vl, mrope_image_grid: !list [1, 8, 8],
     mrope_text_before: 16}" >"$tmp/b.yaml"
expect "batch runs" 0 "16 run\(s\): 16 passed, 0 failed" -- run --no-plot "$tmp/b.yaml"
csv=$tmp/out/results.csv
# metric value of ENCODING KIND METRIC (columns: kind 3, encoding 5, metric 13,
# length 14, value 16; the quoted device name emptied first: it holds commas)
val() { sed 's/"[^"]*"//g' "$csv" | awk -F, -v k="$2" -v e="$1" -v m="$3" \
          '$3 == k && $5 == e && $13 == m && $14 == "" { print $16 }' | head -1; }
for km in "entropy entropy_at_max_len" "content_retrieval needle_p_beyond_train" "distortion kl_mean" \
          "invariance reference_max_rel_change"; do
  set -- $km
  r=$(val rope "$1" "$2") t=$(val mrope-text "$1" "$2") v=$(val mrope-vl "$1" "$2") i=$(val imrope-vl "$1" "$2")
  echo "$1 $2: rope $r, mrope-text $t, mrope-vl $v, imrope-vl $i"
  if [ -n "$r" ] && [ "$r" = "$t" ]; then ok; else bad "$1 $2: text mRoPE '$t' is not plain RoPE's '$r'"; fi
  # invariance: both layouts' largest change can come from the same shift
  # (a key on the image's first token, (N, N, N), where the rules agree)
  if [ -n "$v" ] && [ "$v" != "$r" ] && [ -n "$i" ] && { [ "$i" != "$v" ] || [ "$1" = invariance ]; }; then ok
  else bad "$1 $2: vl layouts '$v' / '$i' should differ from plain '$r' and each other"; fi
done
n_ver=$(grep -l '"status": "passed"' "$tmp"/out/runs/*/summary.json | wc -l)
[ "$n_ver" -eq 16 ] && ok || bad "expected 16 passed summaries, got $n_ver"
batch "  - {name: bad, type: rope, mrope_section: !list [4, 6, 5]}" >"$tmp/bad.yaml"
expect "section sum refused" 2 "mrope_section \[4, 6, 5\] sums to 15 pairs; the rotation has 16" -- \
  run --dry-run "$tmp/bad.yaml"
expect "encodings lists the keys" 0 "mrope_section.*mrope_interleaved|mrope_interleaved" -- encodings
echo "mrope_batch: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
