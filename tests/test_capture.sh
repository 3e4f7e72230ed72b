#!/usr/bin/env bash
# The runner's capture source (data: {source: capture}, model: {capture})
# on capture files the test writes (tests/capture_fixture.py, the capture
# script's own writer, no torch): the model shape from the metadata, a
# batch whose shape disagrees refused naming the key, a missing layer
# refused listing the captured ones, corrupted metadata refused, lengths
# beyond the capture refused before running, and real runs on the
# captured Q/K (fp32, bf16) that pass their verification.
# usage: test_capture.sh path/to/ropelab SOURCE_ROOT
set -u
bin=$1 root=$2
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect_lib.sh"
py=python3
fx() { "$py" "$root/tests/capture_fixture.py" "$root" "$@"; }
fx "$tmp/cap.safetensors" || exit 1
fx "$tmp/cap_bf16.safetensors" --dtype bf16 --layers 2
for m in heads_text no_version shape positions config meta_number layers_text; do
  fx "$tmp/bad_$m.safetensors" --corrupt "$m"
done
# batch NAME MODEL DATA [PARAMS]: an entropy batch in $tmp/NAME.yaml
batch() {
  printf 'name: %s\nmodel: %s\nencodings:\n  - {name: rope, type: rope}\ndata: %s\nexperiments:\n  - kind: entropy\n    params: %s\n' \
    "$1" "$2" "$3" "${4:-{min_len: 16, max_len: 64\}}" >"$tmp/$1.yaml"
}
cap='{source: capture, path: cap.safetensors, layer: 3}'
# ropelab model reads a capture's embedded config.json (was a JSON parse error)
expect model_capture 0 'heads 4, kv heads 2, head_dim 16' -- model "$tmp/cap.safetensors"
expect model_capture_corrupt 2 'corrupted capture metadata' -- model "$tmp/bad_config.safetensors"
batch shape '{capture: cap.safetensors}' "$cap"
expect shape_from_metadata 0 'head_dim=16 heads=4' -- run "$tmp/shape.yaml" --dry-run
batch explicit '{head_dim: 16, heads: 4, kv_heads: 2, train_len: 64}' "$cap"
expect explicit_shape_agrees 0 '1 run' -- run "$tmp/explicit.yaml" --dry-run
batch mismatch '{head_dim: 16, heads: 8, kv_heads: 2, train_len: 64}' "$cap"
expect heads_mismatch 2 'model heads is 8 in the batch but 4 in the capture \(its metadata key .heads.\)' -- run "$tmp/mismatch.yaml" --dry-run
batch mismatch_hd '{head_dim: 32, heads: 4, kv_heads: 2, train_len: 64}' "$cap"
expect head_dim_mismatch 2 'model head_dim is 32 in the batch but 16' -- run "$tmp/mismatch_hd.yaml" --dry-run
batch layer '{capture: cap.safetensors}' '{source: capture, path: cap.safetensors, layer: 1}'
expect missing_layer 2 'layer 1 was not captured; captured layers: 0, 3' -- run "$tmp/layer.yaml" --dry-run
batch nolayer '{capture: cap.safetensors}' '{source: capture, path: cap.safetensors}'
expect layer_required 2 "source capture needs 'layer: N'" -- run "$tmp/nolayer.yaml" --dry-run
batch qname '{capture: cap.safetensors}' '{source: capture, path: cap.safetensors, layer: 0, q: x}'
expect q_not_with_capture 2 'give layer, not q' -- run "$tmp/qname.yaml" --dry-run
batch layer_gauss '{head_dim: 16, heads: 4, train_len: 64}' '{source: gaussian, layer: 0}'
expect layer_only_capture 2 'layer applies to source capture only' -- run "$tmp/layer_gauss.yaml" --dry-run
batch both '{capture: cap.safetensors, hf_config: x.json}' "$cap"
expect capture_or_hf_config 2 'give capture or hf_config, not both' -- run "$tmp/both.yaml" --dry-run
batch long '{capture: cap.safetensors}' "$cap" '{min_len: 16, max_len: 128}'
expect too_long 2 'this run reads 128 tokens but the capture holds 64' -- run "$tmp/long.yaml" --dry-run
batch long_dist '{capture: cap.safetensors}' "$cap" '{}'
sed -i 's/kind: entropy/kind: distortion/' "$tmp/long_dist.yaml"
expect too_long_train_len 2 'reads 2048 tokens but the capture holds 64' -- run "$tmp/long_dist.yaml" --dry-run
while read -r m pat; do
  batch "b_$m" "{capture: bad_$m.safetensors}" "{source: capture, path: bad_$m.safetensors, layer: 0}"
  expect "corrupt_$m" 2 "$pat" -- run "$tmp/b_$m.yaml" --dry-run
  # the data source alone (explicit model) refuses it as well
  batch "d_$m" '{head_dim: 16, heads: 4, kv_heads: 2, train_len: 64}' "{source: capture, path: bad_$m.safetensors, layer: 0}"
  expect "corrupt_data_$m" 2 "$pat" -- run "$tmp/d_$m.yaml" --dry-run
done <<'LIST'
heads_text key 'heads' is 'four' \(a decimal integer
no_version not a ropelab capture \(no __metadata__ key 'ropelab_capture'
shape tensor 'layer.0.q' is F32 \[64, 4, 16\] but the metadata .* says F32 \[64, 8, 16\]
positions token 0 was captured at position 7
meta_number __metadata__ key 'tokens' is not a string
layers_text key 'layers' is '0,x'
LIST
batch b_config '{capture: bad_config.safetensors}' '{source: capture, path: bad_config.safetensors, layer: 0}'
expect corrupt_config 2 'heads is 4 but its embedded config.json gives 8' -- run "$tmp/b_config.yaml" --dry-run
if "$bin" devices >/dev/null 2>&1; then
  expect run_capture 0 '1 passed, 0 failed' -- run "$tmp/shape.yaml" --out "$tmp/o1" --no-plot
  if grep -q '"status": "passed"' "$tmp"/o1/runs/*/summary.json &&
     grep -q 'entropy_at_max_len' "$tmp/o1/results.csv"; then ok; else bad run_capture_outputs; fi
  # kv_heads and train_len come from the capture (metadata, embedded config.json)
  if grep -q '"kv_heads": 2' "$tmp"/o1/runs/*/summary.json &&
     grep -q '"train_len": 2048' "$tmp"/o1/runs/*/summary.json; then ok; else bad kv_heads_train_len_from_capture; fi
  batch bf16 '{capture: cap_bf16.safetensors}' '{source: capture, path: cap_bf16.safetensors, layer: 2}'
  expect run_capture_bf16 0 '1 passed, 0 failed' -- run "$tmp/bf16.yaml" --out "$tmp/o2" --no-plot
else
  skipped="no Vulkan device: the runs on captured Q/K did not run"
fi
suite_name=capture
finish
