# expect_lib.sh — sourced by the shell test scripts (test_cli.sh, test_kill_random.sh,
# test_apply.sh, test_results_safety.sh, test_slurm.sh). `ok` / `bad MSG`
# count a hand-made check into $pass / $fail.
# `expect NAME CODE PATTERN -- ARGS...` runs "$bin" ARGS,
# passes when the exit code is CODE and the output matches the extended
# regex PATTERN, and counts into $pass / $fail (printing the output of a
# failure). The caller sets bin, pass=0 and fail=0.
expect() {
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
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); printf 'FAIL %s\n' "$*" >&2; }
# `expect_num NAME CODE SED_EXPR WANT RELTOL -- ARGS...` runs "$bin" ARGS,
# takes the first number `sed -nE SED_EXPR` prints from its output, and
# passes when the exit code is CODE and |got - WANT| <= RELTOL * |WANT|:
# numbers are compared as numbers, never as text (a last-digit change of a
# printf format must not fail a test, a wrong value must).
expect_num() {
  local name=$1 code=$2 sx=$3 want=$4 tol=$5; shift 6
  local out rc got
  out=$("$bin" "$@" 2>&1); rc=$?
  got=$(sed -nE "$sx" <<<"$out" | head -n 1)
  if [ "$rc" -eq "$code" ] && [ -n "$got" ] &&
     awk -v g="$got" -v w="$want" -v t="$tol" \
       'BEGIN { d = g - w; if (d < 0) d = -d; a = w < 0 ? -w : w; exit !(d <= t * a) }'; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    printf 'FAIL %s: exit %d (want %d), value "%s" (want %s within %s relative), output:\n%s\n' \
      "$name" "$rc" "$code" "$got" "$want" "$tol" "$out" >&2
  fi
}
# `finish` ends a script: prints the counts, exits 1 on any failure, and 77
# (meson's SKIP) with the reason when the script set `skipped` to say which
# of its cases a missing device kept from running; a suite that ran only
# part of its cases never reports PASS.
finish() {
  echo "${suite_name:+$suite_name: }$pass passed, $fail failed"
  [ "$fail" -eq 0 ] || exit 1
  if [ -n "${skipped:-}" ]; then
    echo "${suite_name:-test}: SKIP: $skipped" >&2
    exit 77
  fi
  exit 0
}
