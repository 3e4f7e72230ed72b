#!/usr/bin/env bash
# Kill at random (issue 31, item 2): `ropelab run`, `ropelab merge` and
# `ropelab plot`, each killed with SIGKILL after a random delay spread over
# its measured run time, then run again. After the kill, nothing that
# manifest.json or results.csv claims is incomplete; after the recovering
# command (exit 0), the manifest is final, results.csv parses, every run it
# lists is complete, every figure is whole, and no temporary (*.tmp.*,
# runs/.tmp-*) is left (tests/kill_check.py recomputes sizes and checksums).
# Also: a link named like a plot temporary is refused, never followed.
# usage: test_kill_random.sh path/to/ropelab
# env: KILL_TRIALS (trials per command, default 20; 8 with a sanitizer build's
# binary, where every start costs ASan's set-up; CI runs it in the release
# build only, tests/meson.build says why), KILL_SEED
# (bash RANDOM seed; printed, so a failure can be replayed)
set -u
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
pass=0 fail=0
suite_name=kill_random
. "$here/expect_lib.sh"
if grep -qa __asan_init "$bin"; then n=${KILL_TRIALS:-8}; else n=${KILL_TRIALS:-20}; fi
seed=${KILL_SEED:-$(( $(date +%s) % 32768 ))}
RANDOM=$seed
echo "kill_random: $n trials per command, KILL_SEED=$seed"
t=$(mktemp -d /tmp/rlkillXXXX)
trap 'rm -rf "$t"' EXIT
cd "$t"
# CPU-only kinds (decay, precision): the fastest batch with several runs
cat > b.yaml <<'YAML'
model: {head_dim: 16, heads: 1, train_len: 64}
experiments:
  - kind: decay
    params: {max_distance: [8, 16, 24, 32], step: 4}
  - kind: precision
    params: {tokens: 8, max_pos_log2: [10, 12]}
YAML
check() { # check DIR WHAT [kill_check flags]: counts a pass or a failure
  local d=$1 what=$2 out; shift 2
  if out=$(python3 "$here/kill_check.py" "$d" "$@"); then ok; last_state=$out
  else bad "$what: $out"; last_state=bad; fi
}
now_us() { echo $(( $(date +%s%N) / 1000 )); }
timed() { # timed VAR CMD...: runs CMD, its wall time in microseconds into VAR
  local t0 rc; t0=$(now_us); "${@:2}" >/dev/null 2>&1; rc=$?
  printf -v "$1" '%d' $(( $(now_us) - t0 )); return $rc
}
# a delay in [0, 1.25 * typical) microseconds, as sleep's seconds
delay() { local us=$(( $1 * (RANDOM % 1250) / 1000 )); printf '%d.%06d' $((us / 1000000)) $((us % 1000000)); }
# kill_after US CMD...: starts CMD, SIGKILLs it after a random delay; sets
# killed=1 when it was still running
kill_after() {
  local d; d=$(delay "$1"); shift
  "$@" >/dev/null 2>&1 &
  local pid=$!
  sleep "$d"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  [ $? -eq 137 ] && killed=1 || killed=0
}
report() { # report CMD KILLED FINISHED STATES
  echo "$1: $n trials: killed mid-way $2, finished before the kill $3; manifest after the kill: $4"
}
t_start=$(now_us)
# the typical run times, measured once here
if ! timed t_run "$bin" run b.yaml --out r --quiet --no-plot; then
  echo "kill_random: SKIP: \`ropelab run\` of a CPU-only batch fails here" >&2; exit 77
fi
check r "the first run" --recovered
timed t_merge "$bin" merge r --out m || bad "the first merge failed"
check m "the first merge" --recovered
have_plot=1
command -v gnuplot >/dev/null 2>&1 || have_plot=0
t_plot=0
if [ $have_plot = 1 ]; then
  timed t_plot "$bin" plot r || bad "the first plot failed"
  check r "the first plot" --recovered --plots
else
  skipped="gnuplot is not installed: the plot trials did not run"
  echo "kill_random: gnuplot not found: the plot trials are skipped (run and merge trials run)"
fi
echo "measured: run ${t_run} us, merge ${t_merge} us, plot ${t_plot} us"

# run: odd trials into a new output directory, even ones over the complete
# one (every run done again, each earlier run directory replaced), killed,
# then resumed
k=0 f=0 states=""
for i in $(seq "$n"); do
  [ $((i % 2)) = 1 ] && rm -rf rk
  kill_after "$t_run" "$bin" run b.yaml --out rk --quiet --no-plot
  k=$((k + killed)); f=$((f + 1 - killed))
  check rk "run trial $i, after the kill"
  states="$states $last_state"
  "$bin" run b.yaml --out rk --quiet --no-plot --resume >/dev/null 2>&1 ||
    bad "run trial $i: the resumed run failed (exit $?)"
  check rk "run trial $i, after the resume" --recovered
done
report run $k $f "$(tr ' ' '\n' <<<"$states" | sed '/^$/d' | sort | uniq -c | xargs)"

# merge: odd trials into a new directory, even ones over the earlier merge
k=0 f=0 states=""
for i in $(seq "$n"); do
  [ $((i % 2)) = 1 ] && rm -rf mk
  kill_after "$t_merge" "$bin" merge r --out mk
  k=$((k + killed)); f=$((f + 1 - killed))
  check mk "merge trial $i, after the kill"
  states="$states $last_state"
  "$bin" merge r --out mk >/dev/null 2>&1 || bad "merge trial $i: the rerun failed (exit $?)"
  check mk "merge trial $i, after the rerun" --recovered
done
report merge $k $f "$(tr ' ' '\n' <<<"$states" | sed '/^$/d' | sort | uniq -c | xargs)"

if [ $have_plot = 1 ]; then
  # plot: over the same folder, killed, then rerun
  k=0 f=0 left=0
  for i in $(seq "$n"); do
    kill_after "$t_plot" "$bin" plot r
    k=$((k + killed)); f=$((f + 1 - killed))
    [ -n "$(find r -name '*.tmp.*' -print -quit)" ] && left=$((left + 1))
    check r "plot trial $i, after the kill" --plots
    "$bin" plot r >/dev/null 2>&1 || bad "plot trial $i: the rerun failed (exit $?)"
    check r "plot trial $i, after the rerun" --recovered --plots
  done
  echo "plot: $n trials: killed mid-way $k, finished before the kill $f; temporaries left by the kill $left (all removed by the rerun)"
  # a link named like a plot temporary: refused by name, never followed
  echo keep > outside
  ln -s "$t/outside" r/plots/decay.bound.png.tmp.99999
  expect plot_tmp_link 2 'decay.bound.png.tmp.99999 is a symbolic link' -- plot r
  [ "$(cat outside)" = keep ] && [ -L r/plots/decay.bound.png.tmp.99999 ] && ok ||
    bad "a link named like a temporary: what it points at changed"
  rm r/plots/decay.bound.png.tmp.99999
  # a plot temporary naming a live pid (this shell's): under the lock no
  # writer of it is live, so it is removed too
  : > "r/plots/decay.bound.svg.tmp.$$"
  "$bin" plot r >/dev/null 2>&1 || bad "plot over a live pid's temporary failed"
  [ ! -e "r/plots/decay.bound.svg.tmp.$$" ] && ok || bad "a temporary naming a live pid survived plot"
fi
echo "kill_random: $(( ($(now_us) - t_start) / 1000 )) ms"
finish
