#!/usr/bin/env bash
# CLI behaviour: exit codes and messages of the front door.
# usage: test_cli.sh path/to/ropelab
set -u
bin=$1
pass=0 fail=0
. "$(dirname "$0")/expect_lib.sh"
have_device=1
"$bin" devices >/dev/null 2>&1 || have_device=0

expect help 0 'usage: ropelab <command>' -- --help
expect unknown_command 2 "unknown command 'frobnicate'" -- frobnicate
expect unknown_flag 2 "unknown option '--bogus'" -- check --bogus
expect check_help 0 'positions up to 2\^20' -- check --help
expect bench_help 0 'median of --reps' -- bench --help
expect bench_no_kernel 2 'name the kernel' -- bench
expect bench_attn_help 0 'FMA peak' -- bench attention --help
expect bench_bad_layout 2 "--layout 'diagonal'" -- bench rope --layout diagonal
expect bench_zero_tokens 2 'must be at least 1' -- bench rope --tokens 0
expect bad_number 2 "--tokens: 'abc' is not a decimal integer" -- bench rope --tokens abc
# Numbers: decimal digits only, the whole string, within the type; never
# octal, hex, a wrapped negative or a silent default (issue 13).
expect octal_refused 2 "--heads: '010' is not a decimal integer" -- bench rope --heads 010
expect hex_refused 2 "--tokens: '0x10' is not a decimal integer" -- bench rope --tokens 0x10
expect negative_refused 2 "--tokens: ' -5' is not a decimal integer" -- bench rope --tokens " -5"
expect minus_refused 2 "--tokens: '-5' is not a decimal integer" -- bench rope --tokens=-5
expect u32_overflow 2 "--heads: 4294967296 is outside the allowed range" -- bench rope --heads 4294967296
expect u64_overflow 2 "--tokens: 99999999999999999999 is outside" -- bench rope --tokens 99999999999999999999
expect reps_zero 2 "--reps 0: must be between 1 and 63" -- bench rope --reps 0
expect empty_device 2 "--device: empty" -- bench rope --device ""
expect float_hex 2 "--from: '0x10' is not a decimal number" -- inspect alibi --from 0x10
expect float_space 2 "--to: ' 3' is not a decimal number" -- inspect alibi --to " 3"
expect check_bad_pos 2 'max-pos-log2 30' -- check --max-pos-log2 30
# Version, help CMD, bench --help (issue 16).
expect version 0 '^ropelab [0-9]+\.[0-9]+\.[0-9]+( [0-9A-Za-z._-]+)?$' -- --version
# Built from a git checkout (meson test rebuilds first): the commit is HEAD's.
src=$(dirname "$0")/..
if [ -e "$src/.git" ] && command -v git >/dev/null 2>&1 &&
   head=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null); then
  expect version_commit 0 "^ropelab [0-9.]+ $head" -- --version
fi
expect help_cmd 0 'positions up to 2\^20' -- help check
expect help_sub 0 'FMA peak' -- help bench attention
expect help_unknown 2 "help: unknown command 'nope'" -- help nope
expect bench_help_lists 0 'rope +RoPE kernel bandwidth' -- bench --help
expect bench_help_attn 0 'attention +streaming attention' -- bench --help
expect check_json_tap 2 '--json and --tap both print on stdout' -- check --json --tap
expect check_list_tap 2 '--list names the rows without running' -- check --list --tap
expect check_help_ci 0 '--junit FILE' -- check --help
# one validation pair on every command that opens a device (cli.h CLI_OPTS_VALIDATE)
for c in check run apply 'bench rope' 'bench attention'; do
  # shellcheck disable=SC2086  # "bench rope" is two words
  expect "validate_pair_${c// /_}" 0 '^  --no-validate  ' -- $c --help
done
expect validate_pair_default_on 0 '^  --validate .*default: on' -- run --help
expect validate_pair_default_off 0 '^  --validate .*default: off' -- bench attention --help
expect validate_takes_no_value 2 '--no-validate takes no value' -- check --no-validate=1
# `help CMD` is exactly `CMD --help`.
if [ "$("$bin" help check)" = "$("$bin" check --help)" ]; then pass=$((pass + 1)); else
  fail=$((fail + 1)); echo 'FAIL help_cmd_same: help check differs from check --help' >&2; fi
# The validation layer is required where the suites run the GPU: with it
# hidden from the loader, check refuses instead of passing unvalidated, and
# with it present check --json says it was on.
if [ "$have_device" = 1 ]; then
  RL_REQUIRE_VALIDATION=1 VK_LOADER_LAYERS_DISABLE=VK_LAYER_KHRONOS_validation \
    expect validation_required 2 'VK_LAYER_KHRONOS_validation is not installed or not loadable' \
    -- check --quick
  # (that check --json says the layer was on: asserted on the full check's
  # JSON below, which runs once for all its assertions)
fi
# No driver at all: a clear message and exit 2, never a crash.
nodrv() { VK_DRIVER_FILES=/nonexistent.json VK_ICD_FILENAMES=/nonexistent.json "$@"; }
out=$(nodrv "$bin" check 2>&1); rc=$?
if [ $rc -eq 2 ] && grep -q 'found no driver\|no Vulkan loader\|found no device' <<<"$out"; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); printf 'FAIL no_driver: exit %d, output:\n%s\n' "$rc" "$out" >&2
fi
# A driver manifest that is not JSON: the loader's VK_ERROR_OUT_OF_HOST_MEMORY
# is explained as the manifest it could not load, exit 2.
garbage=$(mktemp --suffix=.json); echo '{garbage' >"$garbage"
VK_DRIVER_FILES=$garbage VK_ICD_FILENAMES=$garbage \
  expect garbage_icd 2 "driver or layer manifest cannot be loaded.*$garbage" -- devices
rm -f "$garbage"
d=$(dirname "$0")/data
# numbers as numbers: HF get_mscale(4) = 0.1 ln 4 + 1 and 10000^(-2/128), both in
# double here and in ropelab (1e-15 relative: a few ulps of pow/log, not a digit of text)
expect_num freqs_yarn 0 's/^attention factor ([0-9.eE+-]+).*/\1/p' 1.1386294361119891 1e-15 -- freqs --rope-type yarn --factor 4 --original-max-position-embeddings 4096 --head-dim 128
expect_num freqs_json_17 0 '/"inv_freq"/{n;n;s/^ *([0-9.eE+-]+),?$/\1/p}' 0.8659643233600653 1e-15 -- freqs --head-dim 128 --json
expect freqs_hf 0 'rope_type llama3, head_dim 128' -- freqs --hf-config "$d/llama31.json"
expect freqs_json_seq 0 '"seq_len": 5000' -- freqs --hf-config "$d/phi3_longrope.json" --seq-len 5000 --json
expect freqs_csv 0 '^pair,dim_a,dim_b,inv_freq' -- freqs --head-dim 8 --csv
expect freqs_bad_type 2 "rope_type 'foo' is not supported \(supported: default" -- freqs --rope-type foo --head-dim 8
expect freqs_missing 2 'yarn needs original_max_position_embeddings' -- freqs --rope-type yarn --factor 4 --head-dim 64
# A key the resolved rope_type does not read is refused, naming the key and
# the type (it used to be recorded and ignored: the output was plain RoPE's);
# rope_type and its alias type must agree.
expect freqs_key_not_read 2 '^ropelab: --factor: factor does not apply to rope_type default \(it is read by linear' -- freqs --head-dim 64 --factor 4
expect freqs_set_not_read 2 '--set beta_fast: beta_fast does not apply to rope_type linear \(it is read by yarn, dynamic_yarn\)' -- freqs --head-dim 64 --rope-type linear --factor 2 --set beta_fast=16
expect inspect_set_not_read 2 '--set factor: factor does not apply to rope_type default' -- inspect rope --set factor=4 --head-dim 8
expect inspect_set_read 0 'rope: rotary position embedding' -- inspect rope --set rope_type=linear --set factor=4 --head-dim 8
expect inspect_type_disagree 2 "rope_type 'yarn' and type 'linear' disagree" -- inspect rope --set type=linear --set rope_type=yarn --set factor=4 --set original_max_position_embeddings=64 --head-dim 8
expect freqs_bad_factor 2 'factor 0.5 must be >= 1' -- freqs --rope-type linear --factor 0.5 --head-dim 64
expect freqs_bad_list 2 'long_factor has 3 entries; expected rotary_dim/2 = 4' -- freqs --rope-type longrope --head-dim 8 --factor 2 --original-max-position-embeddings 4096 --short-factor 1,1,1,1 --long-factor 2,2,2
expect freqs_no_file 2 'nope.json' -- freqs --hf-config nope.json
expect freqs_hf_layer 0 'rope_theta 10000, effective base 10000' -- freqs --hf-config "$d/gemma3_4b.json" --layer-type sliding_attention
expect freqs_hf_default_says 0 'default: the full-attention layers' -- freqs --hf-config "$d/gemma3_4b.json"
expect freqs_layer_needs_hf 2 '--layer-type needs --hf-config' -- freqs --head-dim 8 --layer-type full_attention
expect model_deepseek 0 'rotary dim 64 \(32 pairs, interleaved layout, the last dimensions of a head\)' -- model "$d/deepseek_v3.json"
expect model_deepseek_part 0 '"rotary_part":"last"' -- model "$d/deepseek_v3.json"
expect model_preset_train_len 0 '^train length 131072 \(the length runs use\)$' -- model --preset qwen2-7b
expect model_pythia 0 'rotary dim 16 \(8 pairs, half layout, the first dimensions of a head\)' -- model "$d/pythia_160m.json"
expect model_json 0 '"logit_scale": 0.0625' -- model "$d/gemma3_4b.json" --json
expect model_mrope 0 '"mrope_section":\[16,24,24\]' -- model "$d/qwen2_vl_7b.json" --layer-type full_attention
expect model_llama4_nope_temperature 0 'attn_temperature llama4 \(attn_temperature_tuning\), attn_temp_scale 0.1 \(attn_scale\), attn_temp_floor 8192 \(floor_scale\)' -- model "$d/llama4_scout.json" --layer-type full_attention
expect model_llama4_chunk 0 'applied by the runner.s attention kinds \(unless the batch gives the key\): attn_chunk 8192 \(attention_chunk_size\)' -- model "$d/llama4_scout.json" --layer-type chunked_attention
expect model_mistral_window 0 'attn_window 4096 \(sliding_window\)' -- model "$d/mistral_7b_v01.json"
expect model_gpt_oss_sinks 0 'reported only, not applied by the engine.*not applied \(a batch gives attn_learned_sink: true and attn_sink_logit' -- model "$d/gpt_oss_20b.json"
expect model_json_applied 0 '"attn_window": {' -- model "$d/gemma3_4b.json" --json
expect model_unknown_layer 2 "no layer type 'x' \(the model has: chunked_attention, full_attention\)" -- model "$d/llama4_scout.json" --layer-type x
expect model_no_file 2 'name the config.json' -- model
expect bench_bad_precision 2 "--precision 'fp16'" -- bench rope --precision fp16
expect encodings 0 'beyond +enum error\|clamp\|wrap; default "error"' -- encodings
expect encodings_json 0 '"key": "num_buckets"' -- encodings --json
expect encodings_attention 0 'attn_remap +enum none[|]self_extend[|]rerope[|]leaky_rerope[|]dca[|]lm_infinite[|]self_extend_floor[|]string[|]string_paper; default "none"' -- encodings
expect inspect_t5_json 0 '"bucket": \[' -- inspect t5 --from -10 --to 10 --json
expect inspect_t5_text 0 'r=j-i bucket' -- inspect t5 --from -3 --to 3 --heads 2
expect inspect_alibi_slopes 0 'slopes: 0.25 0.0625 0.015625 0.00390625$' -- inspect alibi --heads 4
expect inspect_set_json 0 '"num_buckets": 64' -- inspect t5 --set num_buckets=64 --set bidirectional=false --json
expect inspect_sin_freqs 0 'frequencies' -- inspect sinusoidal --head-dim 8
expect inspect_unknown 2 "unknown encoding 'foo' \(known: nope, rope" -- inspect foo
expect inspect_no_name 2 'name the encoding' -- inspect
expect inspect_bad_param 2 "t5: unknown parameter 'buckets'" -- inspect t5 --set buckets=3
expect inspect_bad_value 2 't5: max_distance 4 must exceed' -- inspect t5 --set max_distance=4
expect inspect_bad_range 2 'need integers with R0 <= R1' -- inspect t5 --from 5 --to 1
expect inspect_set_noeq 2 "--set 'alpha': expected key=value" -- inspect sinusoidal --set alpha
# No input becomes gnuplot code: encoding names, a batch's output directory
# and a received results.csv full of backquotes, $(...), quotes, @macros and
# newlines are drawn as text, and none of their commands runs (each would
# create a file in $gpt/m). decay runs on the CPU: no device needed.
gpt=$(mktemp -d /tmp/rlXXXX)
mkdir -p "$gpt/m"
cat > "$gpt/batch.yaml" <<'YAML'
output: "MK/o`touch MK/m/out` $(touch MK/m/out2) 'q' \"d\" @GPVAL_PWD"
model: {head_dim: 16, heads: 1, train_len: 64}
encodings:
  - {name: "a`touch MK/m/a` 'q' \"d\" @GPVAL_PWD", type: rope}
  - {name: "b$(touch MK/m/b)x';system 'touch MK/m/b2';'", type: rope}
  - {name: "c\nsystem 'touch MK/m/c'\n", type: rope, rope_theta: 500000}
experiments:
  - {kind: decay, params: {max_distance: 16, step: 4}}
YAML
sed -i "s#MK#$gpt#g" "$gpt/batch.yaml"
expect gnuplot_quoting_run 0 'plot: [1-9][0-9]* figure' -- run "$gpt/batch.yaml" --quiet
gpout="$gpt/o\`touch $gpt/m/out\` \$(touch $gpt/m/out2) 'q' \"d\" @GPVAL_PWD"
mkdir -p "$gpt/r\`touch $gpt/m/r\`"
cat > "$gpt/r\`touch $gpt/m/r\`/results.csv" <<'CSV'
run_id,device,encoding,metric,x,value,x_title,title,unit
r1,cpu,"e`touch MK/m/e` $(touch MK/m/e2) x' ; system 'touch MK/m/e3' ; ' ""d"" @GPVAL_PWD",t.m,1,2,"x`touch MK/m/x`","y
system 'touch MK/m/y'",
r1,cpu,"e`touch MK/m/e` $(touch MK/m/e2) x' ; system 'touch MK/m/e3' ; ' ""d"" @GPVAL_PWD",t.m,2,3,x,y,
r2,cpu,rope,t.m,1,1,x,y,
CSV
sed -i "s#MK#$gpt#g" "$gpt/r\`touch $gpt/m/r\`/results.csv"
expect gnuplot_quoting_plot 0 'plot: 1 figure for 2 runs' -- plot "$gpt/r\`touch $gpt/m/r\`"
if [ -z "$(ls -A "$gpt/m")" ] && [ -s "$gpout/plots/decay.bound.png" ] &&
   grep -qF "a\`touch $gpt/m/a\`" "$gpout/plots/decay.bound.svg" &&
   grep -qF "b\$(touch $gpt/m/b)x" "$gpout/plots/decay.bound.svg" &&
   grep -qF "e\`touch $gpt/m/e\` \$(touch $gpt/m/e2) x" "$gpt/r\`touch $gpt/m/r\`/plots/t.m.svg" &&
   grep -qF "system 'touch $gpt/m/y'" "$gpt/r\`touch $gpt/m/r\`/plots/t.m.svg"; then
  pass=$((pass + 1))
else
  fail=$((fail + 1))
  printf 'FAIL gnuplot_quoting: commands ran (%s) or labels not drawn\n' "$(ls -A "$gpt/m")" >&2
fi
rm -rf "$gpt"
example="$(dirname "$0")/../experiments/example.yaml"
runtmp=$(mktemp -d)
printf 'model: {head_dim: 64, heads: 4, train_len: 8}\nexperiments:\n  - kind: decay\n    params: {max_distanse: 3}\n' > "$runtmp/bad.yaml"
expect run_dry 0 '8 run\(s\) in this shard' -- run "$example" --dry-run
expect run_dry_shard 0 'shard 1/2' -- run "$example" --dry-run --shard 1/2
# the dry run says which runs bind K a window at a time (lavapipe's binding is
# 128 MiB: 1048576 tokens x 128 dims of float32 K are 512 MiB, 4 windows)
printf 'model: {head_dim: 128, heads: 1, train_len: 4096}\nencodings: [{name: rope, type: rope}]\nexperiments:\n  - {kind: entropy, params: {min_len: 1048576, max_len: 1048576, query_rows: 64}}\n' >"$runtmp/long.yaml"
if "$bin" devices 2>/dev/null | grep -q llvmpipe; then
  expect run_dry_windows 0 'entropy    1048576 tokens: K 512 MiB, at least 4 windows' -- run "$runtmp/long.yaml" --dry-run --device llvmpipe
fi
expect run_bad_key 2 "bad.yaml:4:14: experiments\[0\].params.max_distanse: unknown key; did you mean 'max_distance'\?" -- run "$runtmp/bad.yaml" --dry-run
expect run_no_file 2 'cannot open' -- run "$runtmp/none.yaml" --dry-run
expect run_bad_shard 2 "--shard '3/3'" -- run "$example" --dry-run --shard 3/3
expect merge_nothing 2 'name the shard output' -- merge
if [ $have_device = 1 ]; then
  expect devices 0 'llvmpipe|\[0\]' -- devices
  expect devices_json 0 '"subgroup_size"' -- devices --json
  expect devices_driver_id 0 'driverID [A-Z_]+, version [0-9]+\.[0-9]+' -- devices
  expect devices_uuid 0 'device UUID ([0-9a-f]{32}|unknown)' -- devices
  expect devices_wg 0 'max workgroup size [0-9]+ x [0-9]+ x [0-9]+, max invocations [0-9]+' -- devices
  expect devices_conformance 0 'conformance version' -- devices
  expect devices_json_ident 0 '"driver_version_decoded": "[0-9.]+"' -- devices --json
  expect devices_json_wg 0 '"max_workgroup_invocations": [0-9]+' -- devices --json
  expect devices_json_hex 0 '"vendor_id_hex": "0x[0-9a-f]{4,}"' -- devices --json
  expect devices_attn_path 0 'attention path \(head_dim 128 with O\): (scalar|subgroup|coopmat) ' -- devices
  expect devices_attn_paths 0 '      coopmat  (yes|no ): ' -- devices
  expect devices_json_attn 0 '"default": "(scalar|subgroup|coopmat)"' -- devices --json
  expect bench_attn_path_sg 0 'kernel path  : subgroup \([248] lanes per query row\)' -- bench attention --tokens 70 --head-dim 32 --causal --reps 1 --attn-path subgroup
  expect bad_index 2 '--device 42: no device with that index' -- check --device 42
  expect bad_name 2 "--device 'no-such-gpu': no device name contains it" -- check --device no-such-gpu
  expect bench_rotary_odd 2 'rotary_dim 5 must be even' -- bench rope --tokens 16 --rotary-dim 5
  expect bench_rotary_big 2 'rotary_dim 256 exceeds head_dim 128' -- bench rope --tokens 16 --rotary-dim 256
  expect bench_too_big 2 'maxStorageBufferRange' -- bench rope --tokens 2000000
  # The text table of check, on two families (the whole quick check runs
  # twice below, as JSON: each full run costs 25-65 s warm, minutes cold).
  expect check_quick_bias 0 'bias/t5/bidir .*pass' -- check --quick --kernel 'bias/t5*'
  expect bench_small 0 'ratio rope/copy bandwidth' -- bench rope --tokens 4096 --reps 3
  # the last of --validate / --no-validate wins (bench --json records it)
  expect bench_validate_on 0 '"validate": true' -- bench rope --tokens 256 --reps 1 --json --validate
  expect bench_validate_last 0 '"validate": false' -- bench rope --tokens 256 --reps 1 --json --validate --no-validate
  expect bench_precise 0 'rope half precise' -- bench rope --tokens 4096 --reps 3 --precision precise
  expect check_quick_modes 0 'rope/half/precise .*pass' -- check --quick --kernel 'rope/half/*'
  # RL_PIPELINE_LOG: one "SECONDS NAME" line per pipeline creation, appended
  # (two runs: twice the lines), names as the rows' kernels compile them
  plog=$(mktemp); rm -f "$plog"
  RL_PIPELINE_LOG=$plog "$bin" check --quick --kernel 'bias/alibi*' >/dev/null 2>&1
  n1=$(grep -cE '^[0-9]+\.[0-9]{4} [A-Za-z0-9_]+$' "$plog" 2>/dev/null)
  RL_PIPELINE_LOG=$plog "$bin" check --quick --kernel 'bias/alibi*' >/dev/null 2>&1
  n2=$(grep -cE '^[0-9]+\.[0-9]{4} [A-Za-z0-9_]+$' "$plog" 2>/dev/null)
  if [ "${n1:-0}" -ge 1 ] && [ "${n2:-0}" -eq $((2 * n1)) ] &&
     [ "$(wc -l <"$plog")" -eq "$n2" ] && grep -q ' bias_' "$plog"; then ok; else
    bad "pipeline_log: $n1 then $n2 lines: $(head -3 "$plog" 2>/dev/null)"; fi
  rm -f "$plog"
  # check in CI (issue 16): --list, --kernel, --tap, --junit, deterministic --json.
  ck=$(mktemp -d)
  ok() { pass=$((pass + 1)); }
  bad() { fail=$((fail + 1)); printf 'FAIL %s\n' "$*" >&2; }
  expect check_list 0 '^[0-9]+ rows would run$' -- check --quick --list
  expect check_list_attn 0 'attn_none +1x4/2x64 bidir' -- check --quick --list --kernel 'attn_*'
  expect check_kernel_none 2 "--kernel 'no-such-kernel\*' matches no kernel" -- check --quick --kernel 'no-such-kernel*'
  nlist=$("$bin" check --quick --list | sed -n 's/^\([0-9]*\) rows would run$/\1/p')
  nlist_rope=$("$bin" check --quick --list --kernel 'rope/*' | sed -n 's/^\([0-9]*\) rows would run$/\1/p')
  # every listed row is a rope row, and there are fewer than in the whole list
  if [ -n "$nlist_rope" ] && [ "$nlist_rope" -gt 0 ] && [ "$nlist_rope" -lt "$nlist" ] &&
     ! "$bin" check --quick --list --kernel 'rope/*' | grep -E '^  ' | grep -vqE '^  rope/'; then ok; else
    bad "check_list_kernel: $nlist_rope rope rows of $nlist"; fi
  # --kernel runs exactly the listed rows; TAP plan and test points agree
  tap=$("$bin" check --quick --tap --kernel 'rope/*' --junit "$ck/rope.xml"); rc=$?
  plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' <<<"$tap")
  nok=$(grep -cE '^ok [0-9]+ - rope/' <<<"$tap")
  if [ $rc -eq 0 ] && [ "$(head -1 <<<"$tap")" = "TAP version 13" ] && [ "$plan" = "$nlist_rope" ] &&
     [ "$nok" = "$nlist_rope" ] && ! grep -q '^not ok' <<<"$tap"; then ok; else
    bad "check_tap: rc $rc plan '$plan' ok $nok want $nlist_rope"; fi
  # JUnit: well-formed XML, one testcase per row, classname = family
  nxml=$(grep -c '<testcase ' "$ck/rope.xml")
  if command -v python3 >/dev/null 2>&1; then
    nxml=$(python3 -c 'import sys, xml.etree.ElementTree as E
r = E.parse(sys.argv[1]).getroot()
tc = list(r.iter("testcase"))
assert r.tag == "testsuites" and r.get("failures") == "0" and int(r.get("tests")) == len(tc)
assert all(t.get("classname") == "rope" for t in tc)
print(len(tc))' "$ck/rope.xml")
  fi
  if [ "$nxml" = "$nlist_rope" ] && ! ls "$ck"/rope.xml.tmp* >/dev/null 2>&1; then ok; else
    bad "check_junit: $nxml testcases, want $nlist_rope"; fi
  expect check_junit_bad_dir 2 '--junit .*nonexistent.*is not a folder ropelab can write into' -- check --quick --kernel 'bias/alibi*' --junit "$ck/nonexistent/x.xml"
  # --shape GLOB selects rows by shape as --list prints it; with --kernel,
  # both must match; a pair that selects nothing is exit 2.
  expect check_shape_list 0 '^[1-9][0-9]* rows would run$' -- check --quick --list --kernel '*_sg*' --shape '6[35]x*'
  expect check_shape_none 2 "--kernel 'rope\*' --shape 'zz' match no row" -- check --quick --kernel 'rope*' --shape zz
  if "$bin" check --quick --list --kernel '*_sg*' --shape '6[35]x*' | grep -E '^  ' |
     grep -vqE '^  attn_[a-z0-9_]*_sg +6[35]x'; then bad "check_shape_rows: a row outside the globs"; else ok; fi
  # --json, the whole quick check on every device once: it passes, with
  # the validation layer on, and holds every family; version, commit,
  # seed, device identity. Determinism: the subgroup attention rows (the
  # kernels whose reductions cross invocations) at 63 and 65 tokens (every
  # bias, O, sinks, masks, remaps, DCA: 20 rows on lavapipe; the 1000-token ones add
  # 30 s on lavapipe, where the subgroup path is 30x slower than the scalar
  # one) once more in a second process, identical to the same rows of the
  # full run (every recorded error, bound and statistic), and the device
  # records identical.
  "$bin" check --quick --json --device all --seed 7 >"$ck/a.json" &&
    "$bin" check --quick --json --device all --seed 7 --kernel '*_sg*' --shape '6[35]x*' >"$ck/b.json"
  if command -v python3 >/dev/null 2>&1; then
    if python3 -c 'import sys, json
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert "gpu_ms" in json.dumps(a["timings"]) and "gpu_ms" not in json.dumps(a["devices"])
for x in (a, b): del x["timings"]
sg = lambda x: [r for d in x["devices"] for r in d["results"] if "_sg" in r["kernel"]
                and r["shape"].split("x")[0] in ("63", "65")]
assert len(sg(b)) >= 10 and sg(b) == sg(a), "the subgroup rows differ from the full run"
assert b["flags"]["shape"] == "6[35]x*" and a["flags"]["shape"] == ""
ident = lambda x: [{k: v for k, v in d.items() if k not in ("results", "pass", "notes")} for d in x["devices"]]
assert ident(a) == ident(b), "the device records differ between the two runs"
assert a["version"] and a["seed"] == "7" and a["flags"]["quick"] is True
assert a["pass"] is True and a["devices"] and all(x["pass"] and x["validation"] for x in a["devices"])
rows = {(r["kernel"], r["pass"]) for r in a["devices"][0]["results"]}
for k in ("rope/half/precise", "bias/t5/bidir", "attn_none", "attn_none_sg"):
    assert (k, True) in rows, k
d = a["devices"][0]
for k in ("vendor_id_hex", "device_id_hex", "driver_id", "driver_version_decoded", "conformance_version", "device_uuid"):
    assert k in d, k
assert d["vendor_id_hex"].startswith("0x") and len(d["device_uuid"]) in (0, 32)
assert all(isinstance(r["nmse_gate"], (float, int, type(None))) for r in d["results"])' "$ck/a.json" "$ck/b.json"; then ok; else
      bad check_json_full_twice; fi
  else
    if grep -q '"validation": true' "$ck/a.json" && ! grep -q '"pass": false' "$ck/a.json"; then ok; else
      bad check_json_full_twice; fi
  fi
  rm -rf "$ck"
  expect run_example 0 '8 run\(s\): 8 passed' -- run "$example" --out "$runtmp/out" --quiet
  expect run_resume 0 '8 already complete' -- run "$example" --out "$runtmp/out" --quiet --resume
  expect merge_one 0 'merged 1 of 1 shard' -- merge "$runtmp/out" --out "$runtmp/merged"
  expect bench_attn_too_big 2 'largest length that fits' -- bench attention --tokens 100000000
  expect bench_attn_bad_dim 2 'multiple of 4' -- bench attention --tokens 16 --head-dim 6
  expect bench_attn_small 0 'ratio to FMA peak' -- bench attention --tokens 256 --head-dim 32 --causal --reps 1
  expect bench_attn_mask 0 'excludes f = 0.7515 of the pairs' -- bench attention --tokens 300 --head-dim 8 --causal --window 40 --reps 1
  expect bench_attn_sinks_alone 2 '--sinks 4 needs --window or --chunk' -- bench attention --tokens 16 --head-dim 8 --sinks 4
  # a length beyond the device's limits fails the run at its start, naming the
  # limit, before any host work (was: minutes of data generation first)
  printf 'model: {head_dim: 128, heads: 32, kv_heads: 8, train_len: 4096}\nexperiments:\n  - kind: entropy\n    params: {min_len: 1024, max_len: 1048576}\n' > "$runtmp/huge.yaml"
  # (K of 32 x 8 heads: 4 GiB, over one allocation; Q is sampled beyond 16384 tokens)
  expect run_limit_first 1 "1048576 tokens on .*maxMemoryAllocationSize.*the largest length that fits" -- run "$runtmp/huge.yaml" --out "$runtmp/huge" --no-plot
fi
rm -rf "$runtmp"
# Without a device the suite tested its CPU half only: SKIP (77), never PASS.
[ "$have_device" = 1 ] || skipped="no Vulkan device opens: the device cases did not run"
suite_name=test_cli
finish
