#!/usr/bin/env python3
"""Liu et al.'s extrapolation bound beside ropelab's breaks, from the study's
results.csv (experiments/critical-dimension):

  usage: liu_table.py RESULTS.csv           the Markdown table
         liu_table.py RESULTS.csv --summary one generated sentence

Per base beta (the swept encoding.rope_theta; d = head_dim 128, pre-trained
with 10000 at train_len): d_extra (the coverage kind's formula), T_extra as
the coverage kind reports it (2 pi / theta_jc from the frequencies) and as
Liu et al.'s eq. 16b, 2 pi beta^(d_extra/d) with d_extra = 2 ceil((d/2)
log_10000(T_train / 2 pi)), evaluated here in Python from beta alone (no
ropelab number used), then the two ropelab breaks: the coverage kind's
longest length with every pair inside its trained angle range
(ood_from_tokens) and the base_bound kind's first distance with a negative
score (first_negative_distance, device, verified), each with T_extra / break.
Eq. 16b is Liu et al.'s bound for beta > beta_0 (beta_0 = 10000 when
T_tune = T_train); for smaller bases the row says so.
"""
import csv
import math
import sys

PRETRAIN_BASE = 10000.0


def liu_t_extra(beta, d, t_train):
    d_extra = 2 * math.ceil(d / 2 * math.log(t_train / (2 * math.pi)) / math.log(PRETRAIN_BASE))
    return d_extra, 2 * math.pi * beta ** (d_extra / d)


def load(path):
    runs = {}
    with open(path, newline="") as fp:
        for r in csv.DictReader(fp):
            if r["x"] != "":
                continue
            if r["status"] != "passed":
                sys.exit(f"{path}: run {r['run_id']} {r['status']}")
            b = float(r["encoding.rope_theta"])
            e = runs.setdefault(b, {"d": int(r["head_dim"]), "L": int(r["train_len"])})
            e[r["metric"]] = float(r["value"])
    return runs


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 2
    runs = load(argv[1])
    rows, rel, ratios_cov, ratios_bb = [], 0.0, [], []
    for b in sorted(runs):
        e = runs[b]
        d_extra, liu = liu_t_extra(b, e["d"], e["L"])
        t, cov, bb = e["t_extra_tokens"], e["ood_from_tokens"], e["first_negative_distance"]
        applies = b >= PRETRAIN_BASE
        if applies:
            rel = max(rel, abs(t - liu) / liu)
            ratios_cov.append(t / cov)
            ratios_bb.append(t / bb)
        rows.append((b, e["critical_dim_formula"], d_extra, t, liu, cov, bb, applies))
    if "--summary" in argv:
        n = len(ratios_cov)
        lo, hi = f"{min(ratios_cov):.4f}", f"{max(ratios_cov):.4f}"
        cov_s = f"{lo}×" if lo == hi else f"{lo}–{hi}×"
        print(f"For the {n} bases >= 10000, ropelab's T_extra equals eq. 16b to a relative "
              f"{rel:.1e}; it lies {cov_s} above the coverage kind's last in-range length "
              f"(the same factor for every base) and {min(ratios_bb):.2f}–{max(ratios_bb):.2f}× "
              "above the base_bound kind's first negative distance.")
        return 0
    print("| base β | d_extra (ropelab; Python) | T_extra, ropelab (tokens) | T_extra, Liu et al. "
          "eq. 16b (Python) | every pair in range up to (coverage) | T_extra / that | B(m) "
          "first negative (base_bound) | T_extra / that |")
    print("|---|---|---|---|---|---|---|---|")
    for b, dx, dpy, t, liu, cov, bb, applies in rows:
        cov_s = "never leaves (every pair turned fully)" if cov < 0 else f"{cov:.0f}"
        r1 = f"{t / cov:.4f}" if applies and cov > 0 else "—"
        r2 = f"{t / bb:.2f}" if applies else "—"
        liu_s = f"{liu:.0f}" if applies else f"({liu:.0f}; β < 10000: Liu's smaller-base law, no such bound)"
        print(f"| {b:g} | {dx:.0f}; {dpy} | {t:.0f} | {liu_s} | {cov_s} | {r1} | {bb:.0f} | {r2} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
