# expect_lib.sh — sourced by the shell test scripts (test_cli.sh,
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
