#!/usr/bin/env python3
"""Re-records, in a results folder's manifest.json, each job's summary
digest ("<bytes>:<fnv1a64 hex>" of runs/<dir>/summary.json, as ropelab's
run_file_digest writes it): what a test that simulates another node's or
vendor's folder (edited summaries or tables) does, so merge sees the folder
that node would have written. usage: record_summaries.py DIR..."""
import json
import os
import sys


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for c in data:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def table_record(path):
    """{"bytes": N, "fnv1a64": hex} of a table, as summary.json's "files"."""
    b = open(path, "rb").read()
    return {"bytes": len(b), "fnv1a64": "%016x" % fnv1a64(b)}


def record(folder):
    mp = os.path.join(folder, "manifest.json")
    m = json.load(open(mp))
    for j in m.get("jobs", []):
        sp = os.path.join(folder, "runs", j["dir"], "summary.json")
        if os.path.exists(sp):
            b = open(sp, "rb").read()
            j["summary"] = "%d:%016x" % (len(b), fnv1a64(b))
    json.dump(m, open(mp, "w"), indent=2, sort_keys=True)


if __name__ == "__main__":
    for d in sys.argv[1:]:
        record(d)
