#!/usr/bin/env python3
"""Prints the ninja targets the release build of scripts/test.sh needs, one
per line, as paths inside the build directory: every target except the
executables tests/meson.build defines for suites this build does not run.
The suites it runs (gpu and release, not san) bring their executables back
through their declared dependencies. The sanitizer build compiles every
target, so each test source still compiles under -Werror in CI.
usage: release_targets.py BUILD_DIR"""
import json
import os
import subprocess
import sys

build = sys.argv[1]


def introspect(what):
    return json.loads(subprocess.run(["meson", "introspect", build, what], check=True,
                                     capture_output=True, text=True).stdout)


def runs_here(suites):
    names = {s.split(":", 1)[-1] for s in suites}
    return bool(names & {"gpu", "release"}) and "san" not in names


needed = set()
for t in introspect("--tests"):
    if runs_here(t["suite"]):
        needed.update(t["depends"])
root = os.path.realpath(build)
for t in introspect("--targets"):
    test_exe = (t["type"] == "executable" and
                os.path.basename(os.path.dirname(t["defined_in"])) == "tests")
    if test_exe and t["id"] not in needed:
        continue
    for f in t["filename"]:
        print(os.path.relpath(os.path.realpath(f), root))
