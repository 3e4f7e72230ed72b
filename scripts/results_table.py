#!/usr/bin/env python3
"""Markdown table of chosen metrics from a ropelab results.csv.

usage: results_table.py RESULTS.csv [--kind KIND] COLUMN...
  COLUMN is METRIC (a summary metric, empty x) or METRIC@X (a table value at
  x = X, e.g. retrieval_length.accuracy@2048).
Rows: one per encoding and value of the swept keys (runs of different kinds
with the same encoding and sweep point share a row), in the order they first
appear in results.csv; values rounded to 4 decimals. Study READMEs quote these tables; rerun the batch, then this.
"""
import csv
import sys


def main(argv):
    args = argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 2
    path, kind = args.pop(0), None
    if len(args) >= 2 and args[0] == "--kind":
        kind = args[1]
        args = args[2:]
    cols = [(c.split("@", 1) + [""])[:2] for c in args]
    with open(path, newline="") as fp:
        rows = list(csv.DictReader(fp))
    if not rows:
        print(f"{path}: no rows", file=sys.stderr)
        return 1
    fixed = {"run_id", "device", "kind", "encoding", "status", "metric", "x", "value",
             "x_label", "y_label"}
    swept = [k for k in rows[0] if k not in fixed]
    runs, order = {}, []
    for r in rows:
        if kind and r["kind"] != kind:
            continue
        # params.* differ between kinds; encoding, model and data define the row
        key = (r["encoding"],) + tuple(r[k] for k in swept if not k.startswith("params."))
        for m, x in cols:
            if r["metric"] == m and r["x"] == x:
                if key not in runs:
                    runs[key] = {"_r": r}
                    order.append(key)
                runs[key][(m, x)] = r["value"]
    used = [k for k in swept if len({runs[i]["_r"][k] for i in order}) > 1]
    head = ["encoding"] + used + [m + (f" @ {x}" if x else "") for m, x in cols]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for i in order:
        r = runs[i]
        vals = [f"{float(r[c]):.4f}" if c in r and r[c] != "" else "—" for c in map(tuple, cols)]
        print("| " + " | ".join([r["_r"]["encoding"]] + [r["_r"][k] for k in used] + vals) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
