#!/usr/bin/env bash
# Short bounded fuzz of the batch loader (tests/fuzz/fuzz_batch.c) with
# libFuzzer under AddressSanitizer + UndefinedBehaviorSanitizer.
# usage: scripts/fuzz.sh [SECONDS]   (default 30)
# The corpus starts from experiments/*.yaml and configs/**/*.yaml. A crash,
# leak or sanitizer report makes libFuzzer exit non-zero and this script fail.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
dir=build-fuzz
if [ ! -f "$dir/build.ninja" ]; then
  CC=clang meson setup "$dir" -Dfuzz=true -Dbuildtype=debug \
    -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
ninja -C "$dir" fuzz_batch >/dev/null
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
find experiments configs -name '*.yaml' -exec cp {} "$corpus"/ \;
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1
"$dir"/fuzz_batch -max_total_time="$secs" -max_len=4096 -timeout=10 -print_final_stats=1 \
  "$corpus" > "$dir/fuzz.log" 2>&1 || { tail -n 40 "$dir/fuzz.log"; exit 1; }
tail -n 6 "$dir/fuzz.log"
echo "fuzz: ${secs}s without a crash, leak or sanitizer report"
