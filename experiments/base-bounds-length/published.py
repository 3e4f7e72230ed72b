#!/usr/bin/env python3
"""The published lower bounds of the RoPE base, checked against the study's
results.csv (experiments/base-bounds-length):

  usage: published.py RESULTS.csv            table: each published base, its
                                             first negative distance, meets L?
         published.py RESULTS.csv --verification   one sentence: the runs'
                                             verification (worst error/bound)
         published.py RESULTS.csv --counts   how many published bases fail
                                             (L = 1024 k and L = 1000 k)
         published.py RESULTS.csv --drops    how often the first negative
                                             distance drops between
                                             consecutive grid bases
         published.py --fit-published        the published values fitted as
                                             results_table.py --fit fits the
                                             grid's bounds (no results.csv)

The published values are the sources' (Xu et al. 2024 Table 1 and Su 2024,
kexue.fm/archives/10122, as quoted in Su's post; d = 128); every distance
comes from results.csv (first_negative_distance, the device's). A base meets
L when its first negative distance is >= L (B(m) >= 0 for all m < L).
"""
import csv
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))
from results_table import power_fit, t_quantile  # noqa: E402

K = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]  # L = 1024 k ("1k" .. "1M")
XU = [4.3e3, 1.6e4, 2.7e4, 8.4e4, 3.1e5, 6.4e5, 2.1e6, 7.8e6, 3.6e7, 6.4e7, 5.1e8]
SU = [4.3e3, 1.2e4, 2.7e4, 8.4e4, 2.3e5, 6.3e5, 2.1e6, 4.9e6, 2.4e7, 5.8e7, 6.5e7]


def load(path):
    pts, worst = {}, {"vector_worst_error_over_bound": 0.0, "score_worst_error_over_bound": 0.0,
                      "sign_undecided_rows": 0.0}
    runs = set()
    with open(path, newline="") as fp:
        for r in csv.DictReader(fp):
            if r["x"] != "":
                continue
            if r["status"] != "passed":
                sys.exit(f"{path}: run {r['run_id']} {r['status']}")
            runs.add(r["run_id"])
            if r["metric"] in worst:
                m = r["metric"]
                v = float(r["value"])
                worst[m] = worst[m] + v if m == "sign_undecided_rows" else max(worst[m], v)
            if r["metric"] == "first_negative_distance":
                pts[float(r["encoding.rope_theta"])] = float(r["value"])
    for b in XU + SU:
        if b not in pts:
            sys.exit(f"{path}: no run with encoding.rope_theta = {b:g}")
    return pts, worst, len(runs)


def fit_published():
    print("| b(L) = c·L^k fitted to | c [95 %] | k [95 %] | n |")
    print("|---|---|---|---|")
    for name, ys in (("Xu et al. Table 1", XU), ("Su 2024", SU)):
        xs = [1024 * k for k in K]
        a0, k, se_a, se_k, n = power_fit(xs, ys)
        t = t_quantile(0.975, n - 2)
        print(f"| {name} (least squares on logs, t({n - 2}) × standard error) | "
              f"{math.exp(a0):.4g} [{math.exp(a0 - t * se_a):.4g}, {math.exp(a0 + t * se_a):.4g}]"
              f" | {k:.4f} [{k - t * se_k:.4f}, {k + t * se_k:.4f}] | {n} |")
    print("| Xu et al. Fig. 1, as published | 0.0424 | 1.628 | — |")


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 2
    if argv[1] == "--fit-published":
        fit_published()
        return 0
    pts, worst, n_runs = load(argv[1])
    if "--verification" in argv:
        print(f"All {n_runs} runs passed their verification: rotated vectors' worst "
              f"error/bound {worst['vector_worst_error_over_bound']:.3g}, device score vs double "
              f"score {worst['score_worst_error_over_bound']:.2g}, rows where the sign was "
              f"undecided {worst['sign_undecided_rows']:.0f}.")
        return 0
    if "--counts" in argv:
        for unit, name in ((1024, "As Su's definition is written (m < L, L = 1024·k, d = 128)"),
                           (1000, 'Taking "1k" as 1000 (L = 1000·k)')):
            fx = sum(pts[b] < unit * k for b, k in zip(XU, K))
            fs = sum(pts[b] < unit * k for b, k in zip(SU, K))
            print(f"{name}, {fx} of Xu et al.'s {len(XU)} bases and {fs} of Su's "
                  f"{len(SU)} leave a negative B(m) inside their context.")
        return 0
    if "--drops" in argv:
        grid = sorted(pts)
        drops = sum(pts[b] < pts[a] for a, b in zip(grid, grid[1:]))
        print(f"Between consecutive bases of the {len(grid)}-base grid, the first negative "
              f"distance drops {drops} times as the base grows.")
        return 0
    print("| L | Xu et al. b* | first negative at | meets L | Su b* | first negative at | "
          "meets L |")
    print("|---|---|---|---|---|---|---|")
    for k, x, s in zip(K, XU, SU):
        L = 1024 * k
        cells = []
        for b in (x, s):
            ok = pts[b] >= L
            cells += [f"{b:.4g}", f"{pts[b]:.0f}", "yes" if ok else "**no**"]
        print(f"| {L} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
