#!/usr/bin/env python3
"""Which rotary pairs each scaling leaves alone, interpolates fully, or
blends, from the coverage runs of a llama31-scalings results.csv.

usage: bands.py RESULTS.csv

Prints a Markdown table, one row per coverage encoding: the pairs whose
frequency the method keeps (theta'_j / theta_j = 1), divides by the factor s
(= 1/s), scales by something in between, and the pairs out of distribution
at eval_len (the run's `ood_pairs`: the angle range at eval_len exceeds the
one seen in training), with the run's first such pair.

The ratios are the coverage kind's `coverage.frequency_ratio` column, one
row per pair j; they are deterministic (double frequencies from the same
encoding code the shaders are checked against, no sampling): one seed is
read, and the other seeds must give the same rows (else exit 1). Every
coverage run must have passed (else exit 1).
"""
import csv
import sys

REL = 1e-9  # "equal": double frequencies, computed once per pair


def load(path):
    """{encoding: {'factor': s, 'orig': L0, 'ratio': {seed: {j: r}}, 'm': {seed: {name: v}}}}"""
    encs, bad = {}, []
    with open(path, newline="") as fp:
        for r in csv.DictReader(fp):
            if r["kind"] != "coverage":
                continue
            if r["status"] != "passed":
                bad.append(f"run {r['run_id']} ({r['encoding']}) {r['status']}")
                continue
            e = encs.setdefault(r["encoding"], {"factor": r["factor"], "ratio": {}, "m": {}})
            seed = r["seed"]
            if r["metric"] == "coverage.frequency_ratio":
                e["ratio"].setdefault(seed, {})[int(float(r["x"]))] = float(r["value"])
            elif r["x"] == "":
                e["m"].setdefault(seed, {})[r["metric"]] = float(r["value"])
    if bad:
        sys.exit("bands.py: " + "; ".join(bad))
    if not encs:
        sys.exit(f"bands.py: {path} has no coverage rows")
    for name, e in encs.items():
        seeds = sorted(e["ratio"])
        if not seeds:
            sys.exit(f"bands.py: {name} has no coverage.frequency_ratio rows")
        first = e["ratio"][seeds[0]]
        for s in seeds[1:]:
            if e["ratio"][s] != first:
                sys.exit(f"bands.py: {name}: seed {s}'s frequency ratios differ from "
                         f"seed {seeds[0]}'s (coverage is deterministic)")
        e["r"] = [first[j] for j in sorted(first)]
        e["mm"] = e["m"][seeds[0]]
    return encs


def counts(e):
    s = float(e["factor"]) if e["factor"] else 1.0
    keep = sum(abs(r - 1) <= REL for r in e["r"])
    full = sum(abs(r - 1 / s) <= REL / s for r in e["r"]) if s != 1 else 0
    return keep, full, len(e["r"]) - keep - full, len(e["r"])


def table(encs):
    print("| encoding | factor s | pairs kept (ratio 1) | pairs ÷ s (ratio 1/s) "
          "| pairs between | pairs out of distribution at eval_len | first such pair |")
    print("|---|---|---|---|---|---|---|")
    for name, e in encs.items():
        keep, full, mid, n = counts(e)
        ood = int(e["mm"]["ood_pairs"])
        first = int(e["mm"]["first_ood_pair"])
        print(f"| {name} | {e['factor'] or '–'} | {keep} | {full} | {mid} | {ood} of {n} | "
              f"{first if first >= 0 else '–'} |")


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    table(load(argv[1]))


if __name__ == "__main__":
    main(sys.argv)
