#!/usr/bin/env bash
# Bounded fuzzing of ropelab's input readers with libFuzzer under
# AddressSanitizer + UndefinedBehaviorSanitizer, the whole library
# instrumented for coverage (meson -Dfuzz=true). One harness per reader
# (tests/fuzz/fuzz_*.c): batch (YAML loader, validation, sweeps, plan), npy,
# safetensors, hf_config (config.json RoPE import), cli (flag parsing and
# --set through the encoding registry), results (the results.csv reader and
# figure grouping of `ropelab plot`).
# usage: scripts/fuzz.sh [SECONDS_PER_HARNESS] [HARNESS...]   (default 20, all)
#        scripts/fuzz.sh --build-only [HARNESS...]   build the harnesses, run none
#        (.ci/run builds them at the lowest CPU priority while the tests run)
# Seeds: tests/fuzz/corpus/<harness>/ (crafted inputs included), plus for
# batch experiments/*.yaml and configs/**/*.yaml, for hf_config tests/data.
# Prints the coverage (edges) and features each harness reached. Any
# crash, leak, timeout or sanitizer report fails the script. The harnesses'
# own output (help and error text) is closed (-close_fd_mask=3); libFuzzer
# and the sanitizers still report findings.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh fuzz
build_only=0
if [ "${1:-}" = --build-only ]; then
  build_only=1
  shift
  set -- 0 "$@"
fi
secs=${1:-20}
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(batch npy safetensors hf_config cli results manifest cli_tables)
dir=build-fuzz
if [ ! -f "$dir/build.ninja" ]; then
  CC=clang meson setup "$dir" -Dfuzz=true -Dbuildtype=debug \
    -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
# a harness that does not build is a failure, shown in full
if ! ninja -C "$dir" $(printf 'fuzz_%s ' "${harnesses[@]}") >"$dir/build.log" 2>&1; then
  cat "$dir/build.log" >&2
  echo "fuzz: the harnesses did not build" >&2
  exit 1
fi
[ $build_only = 0 ] || exit 0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1
# One harness per core at a time (each is single-threaded): the same
# seconds per harness, half the wall on 2 cores. Results print in order.
jobs=$(nproc 2>/dev/null || echo 1)
fuzz_one() { # fuzz_one HARNESS: runs it, writes $dir/fuzz_H.result
  local h=$1 corpus log line cov ft runs
  corpus=$(mktemp -d)
  cp tests/fuzz/corpus/"$h"/* "$corpus"/ 2>/dev/null || true
  case $h in
    batch) find experiments configs -name '*.yaml' -exec cp {} "$corpus"/ \; ;;
    hf_config) cp tests/data/*.json "$corpus"/ ;;
  esac
  log=$dir/fuzz_$h.log
  if "$dir/fuzz_$h" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=4096 \
       -close_fd_mask=3 \
       -print_final_stats=1 "$corpus" >"$log" 2>&1; then
    # libFuzzer's last status line: "#N DONE cov: C ft: F corp: ..."
    line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1)
    cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$line")
    ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$line")
    runs=$(sed -nE 's/^#([0-9]+).*/\1/p' <<<"$line")
    printf 'fuzz %-12s %3ss  %8s runs  coverage %5s edges  %5s features  no finding\n' \
      "$h" "$secs" "${runs:-?}" "${cov:-?}" "${ft:-?}" >"$dir/fuzz_$h.result"
  else
    echo "FINDING" >"$dir/fuzz_$h.result"
  fi
  rm -rf "$corpus"
}
pids=()
for h in "${harnesses[@]}"; do
  rm -f "$dir/fuzz_$h.result"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  fuzz_one "$h" &
  pids+=($!)
done
wait "${pids[@]}" || true
status=0
for h in "${harnesses[@]}"; do
  if [ -f "$dir/fuzz_$h.result" ] && ! grep -q '^FINDING' "$dir/fuzz_$h.result"; then
    cat "$dir/fuzz_$h.result"
  else
    echo "fuzz $h: FINDING (log: $dir/fuzz_$h.log)" >&2
    tail -n 40 "$dir/fuzz_$h.log" >&2
    status=1
  fi
done
exit $status
