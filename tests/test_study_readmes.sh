#!/usr/bin/env bash
# Every number a study README quotes is generated (issue 26): each
# experiments/<name>/README.md holds <!-- generated: ... --> blocks or
# <!-- g: ... --> values (scripts/study_readme.py). For the studies whose whole
# batch takes seconds (CHEAP, measured below), the batch runs into a temp
# directory and `study_readme.py check` compares every marker's text with its
# command's output over that results.csv: a README whose numbers no longer
# come out of its batch fails. The larger studies (LARGE) are not run here
# (CI is long already); their markers are parsed and their commands checked
# against the rule, and the message names the command that regenerates them.
# A README without any marker fails unless NOT_CONVERTED lists it with the
# reason; one listed there that has markers fails too (move it to CHEAP or
# LARGE). Also study_readme.py itself on a hand-made README and results.csv.
# The numbers are lavapipe's (llvmpipe, LLVM 15): the batches run with
# --device llvmpipe, and without lavapipe the test is a SKIP (exit 77) after
# its own checks of study_readme.py; another LLVM may round fp32 otherwise,
# and then the message names the command that regenerates the README.
# usage: test_study_readmes.sh path/to/ropelab path/to/source-root
set -u
bin=$1 root=$2
sr=$root/scripts/study_readme.py
tmp=$(mktemp -d /tmp/rl_study_readmes_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
bad=0
fail() { echo "FAIL: $*" >&2; bad=$((bad + 1)); }

# Batch wall times measured with `time ropelab run ... --no-plot` on lavapipe
# (debugoptimized build, shared 2-core machine, 2026-12-02); the whole test
# took 32 s there.
CHEAP="roformer-decay pi-vs-extrapolation angle-precision framework-precision
bf16-breaks-rope critical-dimension"
# roformer-decay 0.1 s, pi-vs-extrapolation 2.4 s, angle-precision 0.8 s,
# framework-precision 0.9 s, bf16-breaks-rope 1.6 s, critical-dimension 0.1 s.
LARGE="base-bounds-length beyond-yarn dynamic-cache scaling-distortion-retrieval
llama31-scalings scaling-atlas yarn-temperature vllm-readings million-tokens"
# base-bounds-length: 852 runs, 7-11 min on lavapipe; beyond-yarn: 75 runs
# (3 seeds), minutes; dynamic-cache: 80 runs (5 seeds), ~40 s;
# scaling-distortion-retrieval: 150 runs, 2.5 min; llama31-scalings: 57 runs,
# 15 min; yarn-temperature: 2550
# runs, 70 s; vllm-readings: 110 runs (5 seeds), ~25 s (their READMEs); kept
# out of this test because CI runs it twice (release and sanitizer builds).
# Regenerate one with the command this test prints for it.
# name|reason: READMEs without markers yet
NOT_CONVERTED=""

in_list() { case " $(echo $2) " in *" $1 "*) return 0 ;; esac; return 1; }
reason_of() { echo "$NOT_CONVERTED" | sed -n "s/^$1|//p"; }

# --- study_readme.py on a hand-made README and results.csv ---------------
csv=$tmp/r.csv
{
  echo 'run_id,device,kind,status,encoding,seed,metric,length,x,value,plot'
  echo 'a,cpu,k,passed,rope,1,loss,,,0.25,'
  echo 'b,cpu,k,passed,yarn,1,loss,,,0.5,'
} >"$csv"
cat >"$tmp/README.md" <<'EOF'
# study
<!-- generated: python3 scripts/results_table.py RESULTS
     loss -->
| stale |
<!-- end generated -->
The ratio is <!-- g: python3 scripts/results_value.py RESULTS ratio loss,encoding=yarn loss,encoding=rope -->3<!-- /g -->× over <!-- g: python3 scripts/results_value.py RESULTS runs * -->2<!-- /g --> runs.
EOF
cp "$tmp/README.md" "$tmp/orig.md"
python3 "$sr" check "$tmp/README.md" "$csv" >"$tmp/log" 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "check of a stale README exited $rc, not 1"
grep -q "README.md:2: generated block differs" "$tmp/log" || fail "check names no README:LINE for the block"
grep -q '^-| stale |$' "$tmp/log" && grep -q '^+| rope | 0.2500 |$' "$tmp/log" ||
  fail "check shows no unified diff of the block"
grep -q "README.md:6: generated value differs" "$tmp/log" && grep -q '^+2$' "$tmp/log" ||
  fail "check names no differing inline value"
grep -q "1 of\|2 of" "$tmp/log" || fail "check does not count the differing parts"
cmp -s "$tmp/README.md" "$tmp/orig.md" || fail "check changed the README"
python3 "$sr" update "$tmp/README.md" "$csv" >/dev/null 2>&1 || fail "update exited non-zero"
want='# study
<!-- generated: python3 scripts/results_table.py RESULTS
     loss -->
| encoding | loss |
|---|---|
| rope | 0.2500 |
| yarn | 0.5000 |
<!-- end generated -->
The ratio is <!-- g: python3 scripts/results_value.py RESULTS ratio loss,encoding=yarn loss,encoding=rope -->2<!-- /g -->× over <!-- g: python3 scripts/results_value.py RESULTS runs * -->2<!-- /g --> runs.'
[ "$(cat "$tmp/README.md")" = "$want" ] || { fail "update wrote:"; cat "$tmp/README.md" >&2; }
python3 "$sr" check "$tmp/README.md" "$csv" >"$tmp/log" 2>&1 || { fail "check after update:"; cat "$tmp/log" >&2; }
# refused: anything but python3 SCRIPT under scripts/ or experiments/; a shell
# never sees the text, so ';' and '$(...)' are plain arguments
for cmd in 'python3 -c print(1)' 'sh -c true' 'python3 ../x.py' 'python3 /usr/bin/x.py' \
  'python3 scripts/../tools/x.py' 'python3 tools/x.py' 'python3 scripts/build.sh' \
  'python3 scripts/missing.py' "python3 scripts/results_value.py RESULTS runs * ; touch $tmp/pwned" \
  "python3 scripts/results_value.py RESULTS \$(touch $tmp/pwned)"; do
  printf 'x <!-- g: %s -->1<!-- /g -->\n' "$cmd" >"$tmp/bad.md"
  python3 "$sr" check "$tmp/bad.md" "$csv" >"$tmp/log" 2>&1
  rc=$?
  [ "$rc" -eq 2 ] || { fail "command '$cmd' gave exit $rc, not 2 (refused or failed)"; cat "$tmp/log" >&2; }
done
[ ! -e "$tmp/pwned" ] || fail "a README command reached a shell"
printf '# none\n' >"$tmp/none.md"
python3 "$sr" check "$tmp/none.md" "$csv" >/dev/null 2>&1
[ $? -eq 2 ] || fail "a README without markers is not an error"
printf 'a\n<!-- generated: python3 scripts/results_table.py RESULTS loss -->\n| x |\n' >"$tmp/open.md"
python3 "$sr" list "$tmp/open.md" >/dev/null 2>&1
[ $? -eq 2 ] || fail "a block without its end is not an error"
printf 'a\n<!-- g: python3 scripts/results_value.py RESULTS runs * -->2<!-- /g -->\n' >"$tmp/start.md"
python3 "$sr" list "$tmp/start.md" >/dev/null 2>&1
[ $? -eq 2 ] || fail "a line starting with an inline marker is not refused"

# --- the studies -----------------------------------------------------------
# the README numbers are lavapipe's: run on it (--device llvmpipe) even where
# a GPU would be the default; without lavapipe nothing is rerun (SKIP)
have_device=1
"$bin" devices 2>/dev/null | grep -q '^\[[0-9]*\] llvmpipe' || have_device=0
for study in "$root"/experiments/*/; do
  name=$(basename "$study")
  readme=$study/README.md
  [ -f "$readme" ] || { fail "$name has no README.md"; continue; }
  reason=$(reason_of "$name")
  if ! python3 "$sr" list "$readme" >"$tmp/list" 2>&1; then
    if grep -q "no '<!-- generated" "$tmp/list" && [ -n "$reason" ]; then
      echo "not converted yet: $name ($reason)"
    else
      fail "$(cat "$tmp/list")"
    fi
    continue
  fi
  [ -z "$reason" ] || fail "$name has generated markers but NOT_CONVERTED lists it; remove it there"
  batch=$(grep -o "ropelab run experiments/$name/[A-Za-z0-9_.-]*\.yaml" "$readme" | head -n 1 | cut -d' ' -f3)
  regen="./build/ropelab run $batch --out /tmp/$name --no-plot && python3 scripts/study_readme.py update experiments/$name/README.md /tmp/$name/results.csv"
  if in_list "$name" "$LARGE"; then
    echo "not run here (larger batch): $name; regenerate: $regen"
    continue
  fi
  in_list "$name" "$CHEAP" || { fail "$name is neither CHEAP nor LARGE in this test: measure its batch and list it"; continue; }
  if [ "$have_device" -eq 0 ]; then
    echo "no lavapipe device: $name not checked"; continue
  fi
  start=$(date +%s%N)
  if ! "$bin" run "$root/$batch" --device llvmpipe --out "$tmp/$name" --no-plot --quiet >"$tmp/log" 2>&1; then
    fail "$name: ropelab run $batch exited non-zero:"; cat "$tmp/log" >&2; continue
  fi
  if python3 "$sr" check "$readme" "$tmp/$name/results.csv" >"$tmp/log" 2>&1; then
    echo "$name: $(tail -n 1 "$tmp/log") ($(( ($(date +%s%N) - start) / 1000000 )) ms)"
  else
    fail "$name: its README's generated parts differ from a fresh run (regenerate: $regen):"
    cat "$tmp/log" >&2
  fi
done
echo "$bad problems"
[ "$bad" -eq 0 ] || exit 1
[ "$have_device" -eq 1 ] || exit 77
