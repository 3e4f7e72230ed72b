#!/usr/bin/env python3
"""Prints the ninja targets a build needs to run a selection of its suites,
one per line, as paths inside the build directory: every target except the
test executables (tests/meson.build) of tests the selection leaves out.
The selection is meson test's own (`meson test --list SELECTION...`), so a
caller states it once for building and for running. scripts/test.sh's
release build uses it; the sanitizer build compiles every target, so each
test source still compiles under -Werror in CI.
usage: suite_targets.py BUILD_DIR [meson test selection: --suite S, --no-suite S ...]"""
import json
import os
import subprocess
import sys

build, selection = sys.argv[1], sys.argv[2:]
tests_build = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))),
                           "tests", "meson.build")


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def introspect(what):
    return json.loads(run("meson", "introspect", build, what))


# "ropelab:gpu / cli" -> cli
chosen = {line.split(" / ", 1)[1] for line in
          run("meson", "test", "-C", build, "--list", *selection).splitlines()
          if " / " in line}
needed = set()
for t in introspect("--tests"):
    if t["name"] in chosen:
        needed.update(t["depends"])
root = os.path.realpath(build)
for t in introspect("--targets"):
    test_exe = t["type"] == "executable" and os.path.realpath(t["defined_in"]) == tests_build
    if test_exe and t["id"] not in needed:
        continue
    for f in t["filename"]:
        print(os.path.relpath(os.path.realpath(f), root))
