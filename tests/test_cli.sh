#!/usr/bin/env bash
# CLI behaviour: exit codes and messages of the front door.
# usage: test_cli.sh path/to/ropelab
set -u
bin=$1
pass=0 fail=0
expect() { # expect NAME CODE PATTERN -- ARGS...
  local name=$1 code=$2 pat=$3; shift 4
  local out rc
  out=$("$bin" "$@" 2>&1); rc=$?
  if [ "$rc" -eq "$code" ] && grep -qE -- "$pat" <<<"$out"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    printf 'FAIL %s: exit %d (want %d), output:\n%s\n' "$name" "$rc" "$code" "$out" >&2
  fi
}
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
expect bad_number 2 "--tokens: 'abc' is not a valid" -- bench rope --tokens abc
expect check_bad_pos 2 'max-pos-log2 30' -- check --max-pos-log2 30
if [ $have_device = 1 ]; then
  expect devices 0 'llvmpipe|\[0\]' -- devices
  expect devices_json 0 '"subgroup_size"' -- devices --json
  expect bad_index 2 '--device 42: no device with that index' -- check --device 42
  expect bad_name 2 "--device 'no-such-gpu': no device name contains it" -- check --device no-such-gpu
  expect bench_rotary_odd 2 'rotary_dim 5 must be even' -- bench rope --tokens 16 --rotary-dim 5
  expect bench_rotary_big 2 'rotary_dim 256 exceeds head_dim 128' -- bench rope --tokens 16 --rotary-dim 256
  expect bench_too_big 2 'maxStorageBufferRange' -- bench rope --tokens 2000000
  expect check_quick_json 0 '"pass": true' -- check --quick --json --device all
  expect bench_small 0 'ratio rope/copy bandwidth' -- bench rope --tokens 4096 --reps 3
  expect bench_attn_too_big 2 'largest length that fits' -- bench attention --tokens 100000000
  expect bench_attn_bad_dim 2 'multiple of 4' -- bench attention --tokens 16 --head-dim 6
  expect bench_attn_small 0 'ratio to FMA peak' -- bench attention --tokens 256 --head-dim 32 --causal --reps 1
else
  echo "test_cli: no Vulkan device: device cases skipped" >&2
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
