#!/usr/bin/env python3
"""The floors of src/, enforced at build time (meson.build runs this as a
build_by_default target): a file of folder F may include "G/..." only when G
is F itself or one of the folders F may use. The table comes from meson.build
(the same one that links each folder's library only against those below it),
passed as arguments FOLDER=USE1,USE2,... Any upward or sideways include is
printed as file:line and fails the build. Usage:

  check_layers.py SRC_DIR STAMP core= vk=core pe=core,vk ...
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/')


def main(argv):
    src, stamp = argv[1], argv[2]
    may = {}
    for spec in argv[3:]:
        folder, _, uses = spec.partition("=")
        may[folder] = set(u for u in uses.split(",") if u)
    bad = []
    checked = 0
    for folder in sorted(may):
        root = os.path.join(src, folder)
        for dirpath, _, names in os.walk(root):
            for name in sorted(names):
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        checked += 1
                        target = m.group(1)
                        if target == folder or target not in may:
                            continue  # its own folder, or not a src/ folder (shaders' rl_push.h ...)
                        if target not in may[folder]:
                            bad.append("%s:%d: src/%s/ may not include %s/ (it may use: %s)"
                                       % (os.path.relpath(path, os.path.dirname(src)), lineno,
                                          folder, target, ", ".join(sorted(may[folder])) or "nothing"))
    unknown = sorted(set(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))) - set(may))
    for d in unknown:
        bad.append("src/%s/: a folder meson.build's layer table does not name" % d)
    if bad:
        sys.stderr.write("layers: %d violation(s) of the floors (meson.build 'layers'):\n" % len(bad))
        sys.stderr.write("\n".join(bad) + "\n")
        return 1
    with open(stamp, "w") as f:
        f.write("%d includes checked over %d folders\n" % (checked, len(may)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
