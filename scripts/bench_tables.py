#!/usr/bin/env python3
"""Markdown tables of `ropelab bench ... --json` documents.

usage: bench_tables.py FILE.json... | DIR
  DIR: a scripts/device-check.sh output folder (its bench/*.json).
Prints one RoPE table (shape, layout, precision, rope/copy ratio: median of
the interleaved rounds with their min-max, and the copy's GB/s) and one
attention table (shape, dtype, O, GPU time, GFLOP/s, FMA peak, ratio median
with the per-pass min-max, verification's worst error/bound), one row per
device result (RoPE by shape, layout, then fp32/table/precise; attention by
shape, causal first, without O first). The tables of docs/performance.md "Measured" are this
script's output on a device-check folder: rerun both to refresh them.
A `bench attention --scale FROM:TO --json` document gives the scale table
instead: one row per length (query rows, GPU time, ns per key and per
(row, key) pair, GFLOP/s, ratio to the FMA peak, verification), then the
fitted cost exponent and the affine fit with their 95 % intervals
(docs/performance.md "Cost against length" is this output).
"""
import glob
import json
import os
import sys


PREC = {"fp32": 0, "table": 1, "precise": 2}


def load(paths):
    docs = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            docs.append((p, json.load(f)))
    return docs


def rope_rows(docs):
    rows = []
    for _, d in docs:
        if d.get("bench") != "rope":
            continue
        for r in d["results"]:
            if not r.get("pass"):
                continue
            s, q = r["shape"], r["ratio"]
            rr = q.get("rounds", {})
            key = (-s["tokens"], s["layout"], PREC.get(s["precision"], 9), s["precision"])
            rows.append((key, "| %d × %d × %d | %s | %s | %.3f (%.3f–%.3f) | %.2f | %.2f |" % (
                s["tokens"], s["heads"], s["head_dim"], s["layout"], s["precision"], q["value"],
                rr.get("min", float("nan")), rr.get("max", float("nan")),
                r["kernel"]["gb_per_s"], r["yardstick"]["gb_per_s"])))
    return [t for _, t in sorted(rows, key=lambda kv: kv[0])]


def attn_rows(docs):
    rows = []
    for _, d in docs:
        if d.get("bench") != "attention":
            continue
        for r in d["results"]:
            if not r.get("pass") or "points" in r:
                continue
            s, k, y, q = r["shape"], r["kernel"], r["yardstick"], r["ratio"]
            key = (-s["tokens"], -s["head_dim"], not s["causal"], s["output"], s["dtype"] != "fp32")
            rows.append((key, "| %d × %d × %d, %s | %s | %s | %.1f ms | %.2f | %.2f | %.3f (%.3f–%.3f) | %.3f |" % (
                s["tokens"], s["heads"], s["head_dim"], "causal" if s["causal"] else "bidirectional",
                s["dtype"], "yes" if s["output"] else "no", k["ms"]["median"], k["gflop_per_s"],
                y["gflop_per_s"], q["value"], q["min"], q["max"],
                r["verify"]["worst_error_over_bound"])))
    return [t for _, t in sorted(rows, key=lambda kv: kv[0])]


def scale_tables(docs):
    out = []
    for _, d in docs:
        if d.get("bench") != "attention":
            continue
        for r in d["results"]:
            if "points" not in r or not r.get("pass"):
                continue
            p0 = r["points"][0]["shape"]
            out.append("%s, %d head%s × %d dims, %s, %s, %d query rows (%s):\n" % (
                r["device"]["name"], p0["heads"], "" if p0["heads"] == 1 else "s", p0["head_dim"],
                "causal" if p0["causal"] else "bidirectional", p0["dtype"], p0["query_rows"],
                p0["query_sampling"]))
            out.append("| tokens | query rows | GPU time (median) | ns per key | ns per (row, key) |"
                       " GFLOP/s | ratio to FMA peak | verified: worst err/bnd |")
            out.append("|---|---|---|---|---|---|---|---|")
            for p in r["points"]:
                s, k = p["shape"], p["kernel"]
                out.append("| %d | %d | %.1f ms | %.0f | %.2f | %.2f | %.3f | %.3f |" % (
                    s["tokens"], s["query_rows"], k["ms"]["median"], k["ns_per_key"],
                    k["ns_per_pair"], k["gflop_per_s"], p["ratio"]["value"],
                    p["verify"]["worst_error_over_bound"]))
            f, a = r["fit"], r["affine"]
            out.append("")
            out.append("Cost exponent (least squares of ln t on ln N over %d lengths): **b = %.3f** "
                       "(95 %% interval %.3f–%.3f; 1 is linear growth). Affine fit: t = %.1f ms + "
                       "%.0f ns × N (95 %% interval of the per-key cost %.0f–%.0f ns, r² %.5f)." % (
                           f["points"], f["exponent"], f["exponent_lo95"], f["exponent_hi95"],
                           a["fixed_ms"], a["ns_per_key"], a["ns_per_key_lo95"],
                           a["ns_per_key_hi95"], a["r2"]))
    return out


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    paths = argv
    if len(argv) == 1 and os.path.isdir(argv[0]):
        paths = sorted(glob.glob(os.path.join(argv[0], "bench", "*.json")))
        if not paths:
            print("bench_tables: no bench/*.json in %s" % argv[0], file=sys.stderr)
            return 2
    docs = load(paths)
    dev = next((r["device"] for _, d in docs for r in d.get("results", []) if r.get("device")), None)
    if dev:
        print("device: %s, %s (%s)\n" % (dev["name"], dev["driver_info"], dev["driver_id"]))
    rows = rope_rows(docs)
    if rows:
        print("| shape | layout | precision | rope / copy: median (min–max of rounds) | rope GB/s | copy GB/s |")
        print("|---|---|---|---|---|---|")
        print("\n".join(rows) + "\n")
    scale = scale_tables(docs)
    if scale:
        print("\n".join(scale))
        return 0
    rows = attn_rows(docs)
    if rows:
        print("| tokens × heads × head_dim | dtype | O | GPU time (median) | GFLOP/s | FMA peak GFLOP/s |"
              " ratio to FMA peak: median (min–max of passes) | verified: worst err/bnd |")
        print("|---|---|---|---|---|---|---|---|")
        print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
