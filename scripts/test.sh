#!/usr/bin/env bash
# The test job: install what is missing, then build and test twice — a
# -Werror release build that runs the GPU suites not tagged 'san' (and the
# two tagged 'release'), and an AddressSanitizer + UndefinedBehaviorSanitizer
# build that runs every CPU suite (the fuzz replays included) and the GPU
# suites tagged 'san' in tests/meson.build (the SPIR-V is the same in both
# builds; there the sanitizers watch the host code that drives the device,
# so running them again without would add time and no check). Every suite
# runs in exactly one of the two, kill_random in both (tests/README.md). GPU suites run on the Vulkan device
# (lavapipe on CI) under the Khronos validation layer; they fail rather than
# skip when a device exists. Both builds share Mesa's shader cache
# (~/.cache/mesa_shader_cache: the same SPIR-V compiles once per machine).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
status=0
for cfg in release sanitize; do
  case $cfg in
    release) dir=build-test; opts=(-Dwerror=true -Dbuildtype=debugoptimized)
             which=(--suite gpu --suite release --no-suite san) ;;
    sanitize) dir=build-san; opts=(-Dwerror=true -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false)
              which=(--suite cpu --suite san) ;;
  esac
  echo "== $cfg build ($dir)${which[*]:+: ${which[*]}}"
  scripts/build.sh "$dir" "${opts[@]}"
  if ! meson test -C "$dir" --print-errorlogs --num-processes 2 "${which[@]}"; then
    status=1
  fi
done
# Every suite runs in at least one build: the union of the two selections
# is the whole list (a suite whose tags neither picks would pass silently).
names() { sed -n 's#^.* / ##p' | sort -u; }
missing=$(comm -23 <(meson test -C build-test --list 2>/dev/null | names) \
  <({ meson test -C build-test --list --suite gpu --suite release --no-suite san
      meson test -C build-san --list --suite cpu --suite san; } 2>/dev/null | names))
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
