#!/usr/bin/env python3
"""kill_check.py — what a results folder claims, checked against its files
(test_kill_random.sh). Independent of ropelab's code: the size and FNV-1a 64
of every file are recomputed here.

usage: kill_check.py DIR [--recovered] [--plots]

Always (any moment, a kill -9 included): every run manifest.json lists
(status not "not run" / "failed") has runs/<dir>/summary.json readable, with
the size and checksum the manifest recorded, and every table that summary
records at its recorded size and checksum; results.csv, when present,
parses, and every run id in it has a complete run directory.
--recovered (after a command that exited 0): manifest.json is final (no
"state"), results.csv is there, and no temporary (*.tmp.*, runs/.tmp-*)
is left anywhere in DIR.
--plots: every plots/*.png is a whole PNG (signature ... IEND) and every
plots/*.svg ends with </svg>; with --recovered, report.md and at least one
figure are there.
Prints one line per problem and exits 1 when there is any; otherwise prints
the manifest's state ("none", "running", "merging" or "final")."""
import csv
import json
import os
import sys


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def digest(path):
    with open(path, "rb") as f:
        data = f.read()
    return "%d:%016x" % (len(data), fnv1a64(data))


def main():
    d = sys.argv[1]
    recovered = "--recovered" in sys.argv
    plots = "--plots" in sys.argv
    bad = []
    state = "none"
    complete_ids = set()
    runs = os.path.join(d, "runs")

    def run_complete(dn, want_summary=None):
        sp = os.path.join(runs, dn, "summary.json")
        if os.path.islink(os.path.join(runs, dn)):
            return "runs/%s is a link" % dn
        try:
            s = json.load(open(sp))
        except (OSError, ValueError) as e:
            return "runs/%s: summary.json unreadable (%s)" % (dn, e)
        if want_summary and digest(sp) != want_summary:
            return "runs/%s: summary.json is not the one the manifest recorded" % dn
        for name, rec in (s.get("files") or {}).items():
            p = os.path.join(runs, dn, name)
            try:
                got = digest(p)
            except OSError as e:
                return "runs/%s/%s: %s" % (dn, name, e)
            if got != "%d:%s" % (rec["bytes"], rec["fnv1a64"]):
                return "runs/%s/%s: size or checksum differs from summary.json" % (dn, name)
        complete_ids.add(s.get("run_id"))
        return None

    mp = os.path.join(d, "manifest.json")
    if os.path.exists(mp):
        try:
            m = json.load(open(mp))
        except (OSError, ValueError) as e:
            bad.append("manifest.json unreadable: %s" % e)
            m = {}
        state = m.get("state", "final")
        for j in m.get("jobs", []):
            if j.get("status") in ("not run", "failed"):
                continue
            why = run_complete(j["dir"], j.get("summary"))
            if why:
                bad.append("manifest claims %s; %s" % (j["dir"], why))
        if recovered and state != "final":
            bad.append("manifest.json is not final (state %s)" % state)
    elif recovered:
        bad.append("no manifest.json")

    rp = os.path.join(d, "results.csv")
    if os.path.exists(rp):
        if os.path.isdir(runs):
            for dn in os.listdir(runs):
                if not dn.startswith(".tmp-"):
                    run_complete(dn)
        try:
            rows = list(csv.DictReader(open(rp, newline="")))
            if not rows or "run_id" not in rows[0]:
                bad.append("results.csv: no rows or no run_id column")
            for r in rows:
                if None in r or None in r.values():
                    bad.append("results.csv: a row with the wrong number of fields")
                    break
            missing = {r.get("run_id") for r in rows} - complete_ids
            if missing:
                bad.append("results.csv names run(s) without a complete run directory: %s"
                           % ", ".join(sorted(str(x) for x in missing)))
        except (OSError, ValueError, csv.Error) as e:
            bad.append("results.csv does not parse: %s" % e)
    elif recovered:
        bad.append("no results.csv")

    if recovered:
        for top, dirs, files in os.walk(d):  # links are not followed
            for n in dirs + files:
                if ".tmp." in n or n.startswith(".tmp-"):
                    bad.append("temporary left: %s" % os.path.relpath(os.path.join(top, n), d))

    if plots:
        pd = os.path.join(d, "plots")
        names = sorted(os.listdir(pd)) if os.path.isdir(pd) else []
        if recovered and not os.path.isfile(os.path.join(d, "report.md")):
            bad.append("no report.md")
        if recovered and not any(n.endswith(".png") for n in names):
            bad.append("no figure in plots/")
        for n in names:
            p = os.path.join(pd, n)
            if n.endswith(".png"):
                b = open(p, "rb").read()
                if not b.startswith(b"\x89PNG\r\n\x1a\n") or b[-12:-4] != b"\0\0\0\0IEND":
                    bad.append("plots/%s is not a whole PNG" % n)
            elif n.endswith(".svg"):
                if not open(p, "rb").read().rstrip().endswith(b"</svg>"):
                    bad.append("plots/%s is not a whole SVG" % n)

    for b in bad:
        print(b)
    if not bad:
        print(state)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
