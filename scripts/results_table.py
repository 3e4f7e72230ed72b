#!/usr/bin/env python3
"""Markdown table of chosen metrics from a ropelab results.csv.

usage: results_table.py RESULTS.csv [--kind KIND] COLUMN...
  COLUMN is METRIC (a summary metric, empty x), METRIC@X (a table value at
  x = X, e.g. retrieval_length.accuracy@2048) or METRIC@X/N (at x = X of the
  table measured at context length N, e.g. retrieval_distance.accuracy@1024/4096;
  the older spelling retrieval_n4096.accuracy@1024 means the same).
Rows: one per encoding and value of the swept keys (runs of different kinds
with the same encoding and sweep point share a row), in the order they first
appear in results.csv; values rounded to 4 decimals. Study READMEs quote these
tables; rerun the batch, then this. Reads the tidy format (docs/runner.md
"results.csv") and the older one (x_label/y_label, lengths in metric names).
"""
import csv
import re
import sys

# Columns of the result format itself; every other column is a swept key.
FIXED = {"run_id", "device", "kind", "status", "encoding", "type", "factor", "head_dim",
         "heads", "kv_heads", "train_len", "seed", "metric", "length", "x", "value", "unit",
         "title", "x_name", "x_unit", "x_title", "plot",
         "x_label", "y_label"}  # the format before the tidy one


def parse_column(c):
    """(metric, x, length) of a COLUMN argument."""
    m, _, x = c.partition("@")
    x, _, n = x.partition("/")
    old = re.fullmatch(r"(\w+)_n([0-9]+)\.(\w+)", m)
    if old and not n:
        base = "retrieval_distance" if old.group(1) == "retrieval" else old.group(1)
        m, n = f"{base}.{old.group(3)}", old.group(2)
    return m, x, n


def row_key(r):
    """(metric, x, length) of a results.csv row, in either format."""
    m, n = r["metric"], r.get("length", "")
    if "length" not in r:
        old = re.fullmatch(r"(\w+)_n([0-9]+)\.(\w+)", m)
        if old:
            base = "retrieval_distance" if old.group(1) == "retrieval" else old.group(1)
            m, n = f"{base}.{old.group(3)}", old.group(2)
    if n == r["x"]:
        n = ""  # the length is the x axis itself
    return m, r["x"], n


def main(argv):
    args = argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 2
    path, kind = args.pop(0), None
    if len(args) >= 2 and args[0] == "--kind":
        kind = args[1]
        args = args[2:]
    cols = [parse_column(c) for c in args]
    with open(path, newline="") as fp:
        rows = list(csv.DictReader(fp))
    if not rows:
        print(f"{path}: no rows", file=sys.stderr)
        return 1
    swept = [k for k in rows[0] if k not in FIXED]
    runs, order = {}, []
    for r in rows:
        if kind and r["kind"] != kind:
            continue
        # params.* differ between kinds; encoding, model and data define the row
        key = (r["encoding"],) + tuple(r[k] for k in swept if not k.startswith("params."))
        rk = row_key(r)
        for c in cols:
            if rk == c:
                if key not in runs:
                    runs[key] = {"_r": r}
                    order.append(key)
                runs[key][c] = r["value"]
    used = [k for k in swept if len({runs[i]["_r"][k] for i in order}) > 1]
    # headers as given: "METRIC @ X", "METRIC @ X/N"
    head = ["encoding"] + used + [a.replace("@", " @ ", 1) for a in args]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for i in order:
        r = runs[i]
        vals = [f"{float(r[c]):.4f}" if c in r and r[c] != "" else "—" for c in cols]
        print("| " + " | ".join([r["_r"]["encoding"]] + [r["_r"][k] for k in used] + vals) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
