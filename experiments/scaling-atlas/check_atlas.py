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
       check_atlas.py --phi35 [CONFIG.json]
The resampling check: Phi-3.5-mini-instruct's own setting (head_dim 96, its
48-entry long_factor, tests/data/phi3_longrope.json), in this file's Python
only, as a Markdown table beside the atlas's head_dim-128 LongRoPE row.
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


def phi35(cfg):
    import json
    c = json.load(open(cfg))
    f = c["rope_scaling"]["long_factor"]
    d, n = 96, len(f)
    assert c["hidden_size"] // c["num_attention_heads"] == d and n == d // 2
    th0 = [B ** (-2 * j / d) for j in range(n)]
    th = [t / f[j] for j, t in enumerate(th0)]
    crit = sum(1 for t in th0 if 2 * math.pi / t > L)
    print(f"| head_dim {d} (Phi-3.5-mini-instruct's own lists) | s = 2 | s = 4 | s = 8 | s = 16 | s = 32 |")
    print("|---|---|---|---|---|---|")
    ood_s = []
    for s in (2, 4, 8, 16, 32):
        o = sum(1 for j in range(n)
                if 2 * math.pi / th0[j] > L and th[j] * s * L > th0[j] * L * (1 + 1e-12))
        ood_s.append(f"{o} of {n}")
    print(f"| RoPE, pairs out of distribution at s·L | " + " | ".join(f"{crit} of {n}" for _ in range(5)) + " |")
    print(f"| LongRoPE, pairs out of distribution at s·L | " + " | ".join(ood_s) + " |")
    r0, r1 = first_negative(th0), first_negative(th)
    print("| RoPE, first m with B(m) < 0 | " + " | ".join(f"{r0}" for _ in range(5)) + " |")
    print("| LongRoPE, first m with B(m) < 0 | "
          + " | ".join(f"**{r1}** ✓" if r1 >= s * L else f"{r1}" for s in (2, 4, 8, 16, 32)) + " |")
    return 0


def main(argv):
    if argv and argv[0] == "--phi35":
        return phi35(argv[1] if len(argv) > 1 else os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data",
            "phi3_longrope.json"))
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
