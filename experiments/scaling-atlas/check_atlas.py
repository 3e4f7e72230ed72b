#!/usr/bin/env python3
"""Independent check of the scaling atlas, in Python's double (math.cos),
sharing no code with ropelab: the frequencies of every method written from
the papers' / Hugging Face's formulas (d = 128, base 10000, L = 4096), then
  - the number of pairs out of distribution at s*L (unscaled wavelength > L
    and theta'_j s L > theta_j L (1 + 1e-12)),
  - the first m >= 0 with B(m) = sum_j cos(m theta'_j) < 0 (to 32 L),
compared with results.csv (coverage's ood_pairs, base_bound's
first_negative_distance). LongRoPE's lists are read from the batch file.

usage: check_atlas.py RESULTS.csv [BATCH.yaml] [--quiet]   (pure Python, ~10 s)
Prints one line per method and s (--quiet: only the count of differences)
and exits 1 on any difference.
"""
import csv
import math
import os
import re
import sys

D, B, L = 128, 10000.0, 4096
N = D // 2
TH = [B ** (-2 * j / D) for j in range(N)]


def pi(s):
    return [t / s for t in TH]


def ntk(s):  # bloc97: base * s^(d/(d-2))
    b = B * s ** (D / (D - 2))
    return [b ** (-2 * j / D) for j in range(N)]


def dynamic(s):  # HF dynamic at seq_len s*L over M = L: base * (s*sL/L - (s-1))^(d/(d-2))
    b = B * (s * s - (s - 1)) ** (D / (D - 2))
    return [b ** (-2 * j / D) for j in range(N)]


def yarn(s, bf=32, bs=1):  # Peng et al. 2023 / HF _compute_yarn_parameters (truncate)
    cd = lambda n: D * math.log(L / (n * 2 * math.pi)) / (2 * math.log(B))
    lo, hi = max(math.floor(cd(bf)), 0), min(math.ceil(cd(bs)), D - 1)
    out = []
    for j, t in enumerate(TH):
        r = min(max((j - lo) / (hi - lo), 0), 1)
        out.append(t / s * r + t * (1 - r))
    return out


def llama3(s, lo_f=1, hi_f=4):  # HF _compute_llama3_parameters
    out = []
    for t in TH:
        wl = 2 * math.pi / t
        if wl > L / lo_f:
            out.append(t / s)
        elif wl < L / hi_f:
            out.append(t)
        else:
            a = (L / wl - lo_f) / (hi_f - lo_f)
            out.append((1 - a) * t / s + a * t)
    return out


def longrope_from(batch):
    txt = open(batch).read()
    m = re.search(r"long_factor: !list \[([^\]]*)\]", txt)
    f = [float(x) for x in m.group(1).split(",")]
    assert len(f) == N
    return lambda s: [t / f[j] for j, t in enumerate(TH)]


def ood(th, s):
    return sum(1 for j in range(N)
               if 2 * math.pi / TH[j] > L and th[j] * s * L > TH[j] * L * (1 + 1e-12))


def first_negative(th, limit=32 * L):
    for m in range(limit):
        if sum(math.cos(m * t) for t in th) < 0:
            return m
    return limit


def main(argv):
    quiet = "--quiet" in argv
    argv = [a for a in argv if a != "--quiet"]
    if not argv:
        sys.exit(__doc__)
    batch = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                       "scaling-atlas.yaml")
    methods = {"rope": lambda s: list(TH), "pi": pi, "ntk": ntk, "dynamic": dynamic,
               "yarn": yarn, "llama3": llama3, "longrope": longrope_from(batch)}
    got = {}
    with open(argv[0], newline="") as fp:
        for r in csv.DictReader(fp):
            if r["x"] == "" and r["metric"] in ("ood_pairs", "first_negative_distance"):
                s = int(r["encoding.seq_len"]) // int(r["train_len"])
                got[(r["encoding"], s, r["metric"])] = float(r["value"])
    bad = 0
    for e, fn in methods.items():
        for s in (2, 4, 8, 16, 32):
            th = fn(s)
            o, m = ood(th, s), first_negative(th)
            go, gm = got.get((e, s, "ood_pairs")), got.get((e, s, "first_negative_distance"))
            ok = go == o and gm == m
            bad += not ok
            if not quiet:
                print(f"{e:9s} s={s:2d}: ood {o:2d} (ropelab {go:.0f}), first negative {m:6d} "
                      f"(ropelab {gm:.0f}) {'ok' if ok else 'DIFFERENT'}")
    print(f"{bad} differences in {len(methods) * 5} (method, s) pairs between ropelab and the "
          "independent Python frequencies (OOD pair count and first negative distance)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
