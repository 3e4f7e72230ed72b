#!/usr/bin/env bash
# ropelab apply: round trip through .npy and .safetensors inputs the test
# writes itself (bytes by printf, no Python), bad inputs -> exit 2 with a
# message naming the problem, and the framework emulation modes.
# usage: test_apply.sh path/to/ropelab
set -u
bin=$1
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect_lib.sh"
ok() { # ok NAME COMMAND...: the command must succeed
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $name" >&2; fi
}
le16() { printf "\\x$(printf %02x $(($1 & 255)))\\x$(printf %02x $(($1 >> 8 & 255)))"; }
le64() { local v=$1 i; for i in 0 1 2 3 4 5 6 7; do printf "\\x$(printf %02x $((v >> (8 * i) & 255)))"; done; }
# npy FILE DESCR SHAPE DATAFILE: a version 1.0 header padded to 64 bytes.
npy() {
  local h="{'descr': '$2', 'fortran_order': False, 'shape': ($3), }"
  while [ $(( (10 + ${#h} + 1) % 64 )) -ne 0 ]; do h="$h "; done
  { printf '\x93NUMPY\x01\x00'; le16 $(( ${#h} + 1 )); printf '%s\n' "$h"; cat "$4"; } >"$1"
}
# 5 tokens x 2 heads x 8 dims of float32, cycling 1, -0.5, 0.25, 2, -1.5
: >"$tmp/q.bin"
for i in $(seq 0 79); do
  case $((i % 5)) in
    0) printf '\x00\x00\x80\x3f' ;; 1) printf '\x00\x00\x00\xbf' ;; 2) printf '\x00\x00\x80\x3e' ;;
    3) printf '\x00\x00\x00\x40' ;; 4) printf '\x00\x00\xc0\xbf' ;;
  esac >>"$tmp/q.bin"
done
npy "$tmp/q.npy" '<f4' '5, 2, 8' "$tmp/q.bin"
npy "$tmp/q2d.npy" '<f4' '10, 8' "$tmp/q.bin"
npy "$tmp/bad.npy" '<f8' '5, 2, 4' "$tmp/q.bin"
# positions 7, 0, 3, 1000000, 9 as int64 .npy and as text
{ for p in 7 0 3 1000000 9; do le64 $p; done; } >"$tmp/pos.bin"
npy "$tmp/pos.npy" '<i8' '5,' "$tmp/pos.bin"
printf '7 0\n3, 1000000\n9\n' >"$tmp/pos.txt"
printf '1 2 x\n' >"$tmp/badpos.txt"
# .safetensors with the same tensor under "q", plus a rank-1 tensor
hdr='{"q":{"dtype":"F32","shape":[5,2,8],"data_offsets":[0,320]},"v":{"dtype":"F32","shape":[80],"data_offsets":[0,320]}}'
{ le64 ${#hdr}; printf '%s' "$hdr"; cat "$tmp/q.bin"; } >"$tmp/q.safetensors"
data_of() { tail -c 320 "$1"; }

if "$bin" devices >/dev/null 2>&1; then
  # nope is the identity: the output's data are the input's bytes
  expect nope_npy 0 'wrote' -- apply --encoding nope --input "$tmp/q.npy" --positions 0:5 --out "$tmp/y0.npy"
  ok nope_identity cmp -s <(data_of "$tmp/y0.npy") "$tmp/q.bin"
  ok no_temp_left test -z "$(ls "$tmp" | grep '\.tmp\.')"
  # the same rotation from .npy and .safetensors, positions from .npy and text
  expect rope_npy 0 'reference .*pass' -- apply --encoding rope --input "$tmp/q.npy" --positions "$tmp/pos.npy" --out "$tmp/y1.npy"
  expect rope_st 0 'reference .*pass' -- apply --encoding rope --input "$tmp/q.safetensors" --tensor q --positions "$tmp/pos.txt" --out "$tmp/y2.npy"
  ok npy_equals_safetensors cmp -s "$tmp/y1.npy" "$tmp/y2.npy"
  ok rope_changes_data bash -c "! cmp -s <(tail -c 320 '$tmp/y1.npy') '$tmp/q.bin'"
  # token 1 sits at position 0: its rows are unchanged (identity rotation)
  ok position_zero_identity cmp -s <(data_of "$tmp/y1.npy" | head -c 128 | tail -c 64) <(head -c 128 "$tmp/q.bin" | tail -c 64)
  # the text line's error and bound belong to one element: error/bound is its ratio
  line=$("$bin" apply --encoding rope --input "$tmp/q.npy" --positions 0:5 --out "$tmp/yw.npy" 2>&1 | grep -m1 'worst element:')
  if awk '{for (i = 1; i <= NF; i++) { if ($i == "error") e = $(i + 1); if ($i == "bound") b = $(i + 1); if ($i == "err/bnd") r = $(i + 1) } }
          END { exit !(b > 0 && (e / b - r < 5e-4 && r - e / b < 5e-4)) }' <<<"$line"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL worst_element_line: $line" >&2; fi
  expect rope_2d 0 "10 tokens x 1 heads x 8 dims" -- apply --encoding rope --input "$tmp/q2d.npy" --positions 0:10 --out "$tmp/y3.npy"
  expect emu_hf_bf16 0 'emulation .*pass' -- apply --encoding rope --precision hf --set dtype=bf16 --input "$tmp/q.npy" --positions "$tmp/pos.npy" --out "$tmp/y4.npy"
  expect emu_ggml_cpu 0 'emulation .*pass' -- apply --encoding rope --precision ggml-cpu --set dtype=fp16 --input "$tmp/q.npy" --positions 100:105 --out "$tmp/y5.npy"
  expect emu_json 0 '"emulation"' -- apply --encoding rope --precision cuda-fast --json --input "$tmp/q.npy" --positions 0:5 --out "$tmp/y6.npy"
  printf '{"rope_theta": 500000, "head_dim": 8, "hidden_size": 16, "num_attention_heads": 2, "rope_scaling": {"rope_type": "linear", "factor": 4}}' >"$tmp/config.json"
  expect hf_config 0 '"rope_theta":500000' -- apply --encoding rope --hf-config "$tmp/config.json" --input "$tmp/q.npy" --positions 0:5 --out "$tmp/y7.npy"
  # the one config.json reader refuses what it cannot represent, naming the key
  printf '{"rope_theta": 500000, "head_dim": 8, "hidden_size": 16, "num_attention_heads": 2, "rope_scaling": {"rope_type": "linear", "factor": 4, "unused_key": 1}}' >"$tmp/config_unk.json"
  expect hf_config_unknown_key 2 'rope_scaling.unused_key is not a RoPE key' -- apply --encoding rope --hf-config "$tmp/config_unk.json" --input "$tmp/q.npy" --positions 0:5 --out "$tmp/y8.npy"
  printf '{"rope_theta": 10000, "head_dim": 64, "num_attention_heads": 2, "hidden_size": 128}' >"$tmp/config64.json"
  expect hf_config_dim 2 'head_dim 64, but the input' -- apply --encoding rope --hf-config "$tmp/config64.json" --input "$tmp/q.npy" --positions 0:5 --out "$tmp/y.npy"
  expect bad_precision 2 "precision 'ggml' is not one of fp32\|" -- apply --encoding rope --precision ggml --input "$tmp/q.npy" --positions 0:5 --out "$tmp/y.npy"
  expect bad_dtype_mode 2 'dtype bf16 needs an emulation precision' -- apply --encoding rope --set dtype=bf16 --input "$tmp/q.npy" --positions 0:5 --out "$tmp/y.npy"
  # xpos: keys are scaled by zeta^-(n-c), queries by zeta^+(m-c); at the
  # centre (token 2, position 2) both factors are 2^0 = 1 and the rows agree
  # bit for bit, elsewhere (token 0) they differ
  expect xpos_q 0 'reference .*pass' -- apply --encoding xpos --set center=2 --role q --input "$tmp/q.npy" --positions 0:5 --out "$tmp/xq.npy"
  expect xpos_k 0 'reference .*pass' -- apply --encoding xpos --set center=2 --role k --input "$tmp/q.npy" --positions 0:5 --out "$tmp/xk.npy"
  ok xpos_roles_agree_at_the_centre cmp -s <(data_of "$tmp/xq.npy" | head -c 192 | tail -c 64) <(data_of "$tmp/xk.npy" | head -c 192 | tail -c 64)
  ok xpos_roles_differ_elsewhere bash -c "! cmp -s <(tail -c 320 '$tmp/xq.npy' | head -c 64) <(tail -c 320 '$tmp/xk.npy' | head -c 64)"
  # centred as torchscale: c = ceil(L/2) of the L = max position + 1 tokens the
  # positions span (positions 0:20000 were refused with the old centre 0);
  # positions 40000:40005 give c = 20003, 19997 from it at 40000: beyond the fp32 range
  expect xpos_centre_torchscale 0 '"center": 10000' -- apply --encoding xpos --input "$tmp/q.npy" --positions 19995:20000 --out "$tmp/y.npy" --json
  expect xpos_limit 2 'is 19997 from the centre 20003: .*\|position - center\| <= 16997' -- apply --encoding xpos --input "$tmp/q.npy" --positions 40000:40005 --out "$tmp/y.npy"
  expect bad_role 2 '--role v: expected q or k' -- apply --encoding xpos --role v --input "$tmp/q.npy" --positions 0:5 --out "$tmp/y.npy"
  expect logits_encoding 2 'acts on logits' -- apply --encoding alibi --input "$tmp/q.npy" --positions 0:5 --out "$tmp/y.npy"
  # rotary_part last (DeepSeek MLA, q = cat(q_nope, q_pe)): rotary_dim 6 of
  # 8 rotates dims 2..7 of each row and passes dims 0..1 through. Checked
  # against the first-part rotation of the same rows reordered by hand
  # (rowperm: each 32-byte row rotated left by N bytes).
  rowperm() { python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); s = int(sys.argv[3])
open(sys.argv[2], "wb").write(b"".join(d[i + s:i + 32] + d[i:i + s] for i in range(0, len(d), 32)))' "$@"; }
  rowperm "$tmp/q.bin" "$tmp/qk.bin" 8          # [nope 2 | rope 6] -> [rope 6 | nope 2]
  npy "$tmp/qk.npy" '<f4' '5, 2, 8' "$tmp/qk.bin"
  expect part_last 0 'reference .*pass' -- apply --encoding rope --set rotary_dim=6 --set rotary_part=last --input "$tmp/q.npy" --positions "$tmp/pos.npy" --out "$tmp/yl.npy"
  expect part_first_by_hand 0 'reference .*pass' -- apply --encoding rope --set rotary_dim=6 --input "$tmp/qk.npy" --positions "$tmp/pos.npy" --out "$tmp/yf.npy"
  data_of "$tmp/yf.npy" >"$tmp/yf.bin"
  rowperm "$tmp/yf.bin" "$tmp/yfl.bin" 24       # back: [rope 6 | nope 2] -> [nope 2 | rope 6]
  ok part_last_is_the_reordered_rotation cmp -s <(data_of "$tmp/yl.npy") "$tmp/yfl.bin"
  nope_kept() { python3 -c 'import sys; a = open(sys.argv[1], "rb").read()[-320:]; b = open(sys.argv[2], "rb").read()
sys.exit(any(a[i:i + 8] != b[i:i + 8] for i in range(0, 320, 32)))' "$tmp/yl.npy" "$tmp/q.bin"; }
  ok part_last_passes_the_first_dims_through nope_kept
  expect part_first_default 0 'reference .*pass' -- apply --encoding rope --set rotary_dim=6 --input "$tmp/q.npy" --positions "$tmp/pos.npy" --out "$tmp/y6.npy"
  ok part_last_differs_from_first bash -c "! cmp -s '$tmp/yl.npy' '$tmp/y6.npy'"
  expect part_json 0 '"rotary_part": "last"' -- apply --encoding rope --set rotary_dim=6 --set rotary_part=last --input "$tmp/q.npy" --positions 0:5 --out "$tmp/y.npy" --json
  expect part_bad 2 "rotary_part 'middle' is not one of first\\|last" -- apply --encoding rope --set rotary_part=middle --input "$tmp/q.npy" --positions 0:5 --out "$tmp/y.npy"
else
  skipped="no Vulkan device: the apply runs on a device did not run"
fi
expect missing_flags 2 'are required' -- apply --encoding rope
expect set_not_read 2 '--set factor: factor does not apply to rope_type default' -- apply --encoding rope --set factor=4 --input "$tmp/q.npy" --positions 0:5 --out "$tmp/y.npy"
expect unknown_encoding 2 'unknown \(one of' -- apply --encoding frob --input "$tmp/q.npy" --positions 0:5 --out "$tmp/y.npy"
expect precision_not_rope 2 'applies to --encoding rope only' -- apply --encoding sinusoidal --precision hf --input "$tmp/q.npy" --positions 0:5 --out "$tmp/y.npy"
expect count_mismatch 2 'gives 4 positions for 5 tokens' -- apply --encoding rope --input "$tmp/q.npy" --positions 0:4 --out "$tmp/y.npy"
expect bad_range 2 'need 0 <= START < STOP' -- apply --encoding rope --input "$tmp/q.npy" --positions 5:5 --out "$tmp/y.npy"
expect bad_text 2 "entry 2 is not a non-negative integer \(found 'x'\)" -- apply --encoding rope --input "$tmp/q.npy" --positions "$tmp/badpos.txt" --out "$tmp/y.npy"
expect float_positions 2 'not supported for integers' -- apply --encoding rope --input "$tmp/q.npy" --positions "$tmp/q.npy" --out "$tmp/y.npy"
expect bad_dtype_npy 2 "dtype '<f8' is not supported" -- apply --encoding rope --input "$tmp/bad.npy" --positions 0:5 --out "$tmp/y.npy"
expect st_no_tensor 2 'name the tensor with --tensor' -- apply --encoding rope --input "$tmp/q.safetensors" --positions 0:5 --out "$tmp/y.npy"
expect st_missing 2 'no such tensor' -- apply --encoding rope --input "$tmp/q.safetensors" --tensor k --positions 0:5 --out "$tmp/y.npy"
expect st_rank1 2 'rank 1; need' -- apply --encoding rope --input "$tmp/q.safetensors" --tensor v --positions 0:5 --out "$tmp/y.npy"
expect missing_input 2 'cannot open' -- apply --encoding rope --input "$tmp/none.npy" --positions 0:5 --out "$tmp/y.npy"
expect help 0 'writes float32 .npy' -- apply --help
# the text line names only the keys that hold a value; --json keeps every
# key of the family (unset ones null)
params_line() {
  local out
  out=$("$bin" apply --encoding rope --input "$tmp/q.npy" --positions 0:5 --out "$tmp/y.npy" 2>&1) || return 1
  echo "$out" | grep -q '^  params: {"rope_type":"default","rope_theta":10000.0,' || return 1
  ! echo "$out" | grep -q 'null'
}
params_json() {
  "$bin" apply --encoding rope --input "$tmp/q.npy" --positions 0:5 --out "$tmp/y.npy" --json 2>&1 |
    grep -q '"partial_rotary_factor": null'
}
ok apply_text_params_without_nulls params_line
ok apply_json_keeps_every_key params_json
finish
