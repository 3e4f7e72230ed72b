#!/usr/bin/env python3
"""Positional retrieval results pooled over seeds, with 95 % intervals.

usage: retrieval_table.py RESULTS.csv [--label KEY[,KEY...]] [--rank SCOPE]
                          [--only ENC[,ENC...]]

One row per method: the encoding plus every swept key but the seed (or the
keys given with --label, e.g. --label factor). A retrieval run records its
accuracy and trial count within and beyond train_len and at max_len
(docs/runner.md "Positional retrieval"); runs of one method that differ only
in seed are pooled: hits = sum(accuracy * trials), trials summed, and the 95 %
Wilson interval taken on the pooled count (the seeds' trials are
independent). The seed column gives how many seeds each row pools and the
spread of the per-seed accuracies beyond train_len (min-max), so a seed
effect larger than the binomial interval shows.

--rank within|beyond|max_len: print instead one line of tiers, best first:
methods in order of that accuracy, a method opening a new tier when its 95 %
interval lies wholly below the interval of the current tier's best member.
'>' between tiers means separable (disjoint intervals); within a tier
every member overlaps the tier's best: not separable from it.
--only: keep these methods (labels as printed) in that order.
"""
import csv
import math
import sys

Z = 1.959963984540054
SCOPES = {"within": "within_train", "beyond": "beyond_train", "max_len": "at_max_len"}
FIXED = {"run_id", "device", "kind", "status", "encoding", "type", "factor", "head_dim",
         "heads", "kv_heads", "train_len", "seed", "metric", "length", "x", "value", "unit",
         "title", "x_name", "x_unit", "x_title", "plot"}


def wilson(h, n):
    if n <= 0:
        return float("nan"), float("nan")
    p = h / n
    den = 1 + Z * Z / n
    mid = (p + Z * Z / (2 * n)) / den
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def fmt(p, lo, hi):
    if math.isnan(p):
        return "—"
    return f"{p:.3f} [{lo:.3f}, {hi:.3f}]"


def main(argv):
    args = argv[1:]
    if not args or args[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    path, label_keys, rank, only = args[0], None, None, None
    i = 1
    while i < len(args):
        a = args[i]
        if a in ("--label", "--rank", "--only") and i + 1 < len(args):
            v = args[i + 1]
            if a == "--label":
                label_keys = v.split(",")
            elif a == "--rank":
                if v not in SCOPES:
                    print(f"--rank: {v} is not one of {', '.join(SCOPES)}", file=sys.stderr)
                    return 2
                rank = v
            else:
                only = v.split(",")
            i += 2
        else:
            print(f"unknown argument {a}", file=sys.stderr)
            return 2
    try:
        rows = list(csv.DictReader(open(path, newline="")))
    except OSError as e:
        print(f"{path}: {e.strerror}", file=sys.stderr)
        return 1
    rows = [r for r in rows if r["kind"] == "retrieval" and r["x"] == ""]
    if not rows:
        print(f"{path}: no retrieval runs", file=sys.stderr)
        return 1
    swept = [k for k in rows[0] if k not in FIXED]
    keys = label_keys if label_keys is not None else ["factor"] + swept
    runs = {}
    order = []
    for r in rows:
        if r["status"] != "passed":
            print(f"{path}: run {r['run_id']} {r['status']}", file=sys.stderr)
            return 1
        parts = [r["encoding"]]
        for k in keys:
            v = r.get(k, "")
            if k.endswith(".factor") and "factor" in keys:
                continue  # the factor column says it (×s)
            if v != "":
                parts.append(f"{k.split('.')[-1]}={v}" if k != "factor" else f"×{v}")
        lab = " ".join(parts)
        if lab not in runs:
            runs[lab] = {}
            order.append(lab)
        runs[lab].setdefault(r["run_id"], {})[r["metric"]] = float(r["value"])
    table = {}
    for lab in order:
        agg = {}
        for sc, m in SCOPES.items():
            h = n = 0.0
            per_seed = []
            for met in runs[lab].values():
                a, t = met.get(f"accuracy_{m}"), met.get(f"trials_{m}")
                if a is None or t is None or t == 0 or math.isnan(a):
                    continue
                h += a * t
                n += t
                per_seed.append(a)
            lo, hi = wilson(h, n)
            agg[sc] = (h / n if n else float("nan"), lo, hi, n, per_seed)
        agg["seeds"] = len(runs[lab])
        agg["chance"] = next(iter(runs[lab].values())).get("chance", float("nan"))
        table[lab] = agg
    labs = order
    if only:
        missing = [o for o in only if o not in table]
        if missing:
            print(f"{path}: no method {', '.join(missing)} (have: {', '.join(order)})",
                  file=sys.stderr)
            return 1
        labs = only
    if rank:
        # Tiers: methods in order of accuracy; a method opens a new tier when
        # its interval lies wholly below the interval of the current tier's
        # best member (so every member of a tier overlaps its best; members
        # of one tier are not separable from it, tiers are).
        ranked = sorted((lab for lab in labs if not math.isnan(table[lab][rank][0])),
                        key=lambda lab: -table[lab][rank][0])
        tiers = []
        for lab in ranked:
            p, lo, hi = table[lab][rank][:3]
            if tiers and hi >= table[tiers[-1][0]][rank][1]:
                tiers[-1].append(lab)
            else:
                tiers.append([lab])
        print(" > ".join("{" + ", ".join(f"{lab} {table[lab][rank][0]:.3f}" for lab in t) + "}"
                         for t in tiers))
        return 0
    print("| method | within train_len | beyond train_len | at max_len | trials within / beyond | seeds (beyond: min–max) |")
    print("|---|---|---|---|---|---|")
    for lab in labs:
        t = table[lab]
        w, b, m = t["within"], t["beyond"], t["max_len"]
        spread = (f"{min(b[4]):.3f}–{max(b[4]):.3f}" if len(b[4]) > 1 else "—")
        print(f"| {lab} | {fmt(*w[:3])} | {fmt(*b[:3])} | {fmt(*m[:3])} | "
              f"{int(w[3])} / {int(b[3])} | {t['seeds']} ({spread}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
