#!/usr/bin/env bash
# The test job: install what is missing, then build and test twice — a
# -Werror release build that runs the GPU suites not tagged 'san' (and the
# two tagged 'release'; it compiles only their executables beside the
# library, ropelab and its pages), and an AddressSanitizer +
# UndefinedBehaviorSanitizer build of every target that runs every CPU
# suite (the fuzz replays included) and the GPU suites tagged 'san' in
# tests/meson.build (the SPIR-V is the same in both
# builds; there the sanitizers watch the host code that drives the device,
# so running them again without would add time and no check). Every suite
# runs in exactly one of the two (tests/README.md). GPU suites run on the Vulkan device
# (lavapipe on CI) under the Khronos validation layer; they fail rather than
# skip when a device exists. Both builds share Mesa's shader cache
# (~/.cache/mesa_shader_cache: the same SPIR-V compiles once per machine).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
status=0
rel_opts=(-Dwerror=true -Dbuildtype=debugoptimized)
san_opts=(-Dwerror=true -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false)
# each build's suites, stated once for building, running and the union check
rel_sel=(--suite gpu --suite release --no-suite san)
san_sel=(--suite cpu --suite san)
echo "== release build (build-test): ${rel_sel[*]} (test.sh at ${SECONDS} s)"
# only what its suites run: every other test executable compiles (under
# -Werror too) in the sanitizer build, which builds every target
RL_BUILD_SUITES="${rel_sel[*]}" scripts/build.sh build-test "${rel_opts[@]}"
# The sanitizer build compiles meanwhile at the lowest CPU priority (nice
# 19): it takes the cycles the release suites leave idle (a suite waiting on
# a timer or a child, the last suite alone on one core) and next to nothing
# else; whatever is left of it runs at full speed after them. Its output
# is shown when it fails.
san_log=$(mktemp)
nice -n 19 scripts/build.sh build-san "${san_opts[@]}" >"$san_log" 2>&1 &
san_pid=$!
if ! meson test -C build-test --no-rebuild --print-errorlogs --num-processes 2 "${rel_sel[@]}"; then
  status=1
fi
echo "== release suites done (test.sh at ${SECONDS} s)"
echo "== sanitize build (build-san): ${san_sel[*]} (test.sh at ${SECONDS} s)"
if ! wait "$san_pid"; then
  cat "$san_log" >&2
  rm -f "$san_log"
  echo "test.sh: the sanitizer build failed" >&2
  exit 1
fi
tail -n 1 "$san_log"
rm -f "$san_log"
if ! meson test -C build-san --print-errorlogs --num-processes 2 "${san_sel[@]}"; then
  status=1
fi
echo "== sanitizer suites done (test.sh at ${SECONDS} s)"
# Every suite runs in at least one build: the union of the two selections
# is the whole list (a suite whose tags neither picks would pass silently).
names() { sed -n 's#^.* / ##p' | sort -u; }
missing=$(comm -23 <(meson test -C build-test --list 2>/dev/null | names) \
  <({ meson test -C build-test --list "${rel_sel[@]}"
      meson test -C build-san --list "${san_sel[@]}"; } 2>/dev/null | names))
if [ -n "$missing" ]; then
  echo "test.sh: no build runs these suites (tag them in tests/meson.build): $missing" >&2
  status=1
fi
# One closing line over both builds, from meson's machine-readable logs.
python3 - build-test/meson-logs/testlog.json build-san/meson-logs/testlog.json <<'PY' || true
import json, sys
p = f = s = 0
skipped = []
for path in sys.argv[1:]:
    try:
        for line in open(path):
            t = json.loads(line)
            r = t.get("result")
            if r == "OK": p += 1
            elif r == "SKIP":
                s += 1
                skipped.append("%s (%s)" % (t.get("name", "?"), path.split("/")[0]))
            else: f += 1
    except OSError:
        f += 1
if s:
    # a suite skips (exit 77) for its own stated reason, in its log
    print("ropelab: note: skipped: " + ", ".join(skipped), file=sys.stderr)
print("tests: %d passed, %d failed, %d skipped" % (p, f, s))
PY
exit $status
