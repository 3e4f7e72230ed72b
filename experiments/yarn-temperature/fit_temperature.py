#!/usr/bin/env python3
"""YaRN's temperature tested: the entropy-matched attention factor per scale s,
and a least-squares fit a ln s + b to it (YaRN: sqrt(1/t) = 0.1 ln s + 1).

usage: fit_temperature.py RESULTS.csv [--part table|fit|summary|check|verify] [--s S] [--plot DIR]

--plot DIR also writes DIR/matched_factor.{dat,gp,png} (png with gnuplot).

Reads the results.csv of experiments/yarn-temperature/yarn-temperature.yaml
(an `entropy` kind at min_len = max_len = train_len; encodings `rope` and
`yarn` with `attention_factor` swept) and prints Markdown.

Criterion (ropelab's stand-in for YaRN's perplexity, which ropelab cannot
measure): for each data setting (every swept data.* key but data.seed), data
seed and scale s, the matched factor f*(s) is the attention factor at which
YaRN's mean bidirectional attention entropy at N = train_len
(entropy_length.entropy_nats at x = train_len, over all queries and heads)
equals plain RoPE's on the same seed. The entropy falls with the factor (the
logits scale by its square); f* is interpolated linearly in the factor between
the two grid points that bracket RoPE's entropy. The check of that
interpolation: the largest |f*_linear - f*_quadratic| (quadratic through the
three nearest grid points) over every setting, s and seed.

Intervals (docs: contract of issue 26):
- per s: mean of f* over the seeds, 95 % percentile bootstrap over seeds
  (10000 resamples, fixed RNG seed 0);
- fit: ordinary least squares of the per-s means on ln s; 95 % interval
  t(0.975, n_s - 2) x standard error from the residuals (carries the scatter
  about the line, lack of fit included), and beside it a 95 % percentile
  bootstrap over seeds (the seeds resampled jointly for every s and for RoPE,
  which share them; the per-s seed spread propagated through the fit).
Pure Python (no numpy): the t quantiles are tabulated.
"""
import csv
import math
import random
import sys
from collections import defaultdict

# two-sided 95 % quantiles t(0.975, df), df = 1..30
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
B = 10000
SHAPE = {}  # head_dim, train_len of the runs (load)
YARN_A, YARN_B = 0.1, 1.0


def t975(df):
    return T975[df - 1] if df <= len(T975) else 1.96


def load(path):
    """{setting: {'rope': {seed: H}, 'yarn': {(s, seed): [(f, H)]}}}, settings in file order."""
    data, order, train = {}, [], None
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            if r["kind"] != "entropy" or r["metric"] != "entropy_length.entropy_nats":
                continue
            if r["status"] != "passed":
                sys.exit(f"fit_temperature: run {r['run_id']} did not pass ({r['status']})")
            if float(r["x"]) != float(r["train_len"]):
                continue  # only the training length is the criterion
            train = int(r["train_len"])
            SHAPE["head_dim"], SHAPE["train_len"] = r["head_dim"], r["train_len"]
            setting = tuple(sorted((k[5:], v) for k, v in r.items()
                                   if k.startswith("data.") and k != "data.seed" and v != ""))
            if setting not in data:
                data[setting] = {"rope": {}, "yarn": defaultdict(list)}
                order.append(setting)
            seed, h = int(r["data.seed"]), float(r["value"])
            if r["encoding"] == "rope":
                data[setting]["rope"][seed] = h
            elif r["encoding"] == "yarn":
                s = float(r["factor"])
                f = float(r["encoding.attention_factor"])
                data[setting]["yarn"][(s, seed)].append((f, h))
    if not data:
        sys.exit("fit_temperature: no entropy_length.entropy_nats rows at train_len")
    return data, order, train


def quad_root(pts, h0):
    """Factor where the parabola through three (f, H) points equals h0, nearest the middle."""
    (x0, y0), (x1, y1), (x2, y2) = pts
    # Newton form y = y0 + c1 (x - x0) + c2 (x - x0)(x - x1)
    c1 = (y1 - y0) / (x1 - x0)
    c2 = ((y2 - y1) / (x2 - x1) - c1) / (x2 - x0)
    # c2 x^2 + (c1 - c2 (x0 + x1)) x + (y0 - c1 x0 + c2 x0 x1 - h0) = 0
    qa, qb, qc = c2, c1 - c2 * (x0 + x1), y0 - c1 * x0 + c2 * x0 * x1 - h0
    if abs(qa) < 1e-15:
        return -qc / qb
    disc = qb * qb - 4 * qa * qc
    if disc < 0:
        return float("nan")
    r = [(-qb + sg * math.sqrt(disc)) / (2 * qa) for sg in (1, -1)]
    return min(r, key=lambda x: abs(x - x1))


def matched(curve, h0):
    """(f* linear, f* quadratic) or None when the grid does not bracket h0."""
    c = sorted(curve)
    for i in range(len(c) - 1):
        (fa, ha), (fb, hb) = c[i], c[i + 1]
        if ha >= h0 >= hb and ha != hb:
            lin = fa + (ha - h0) * (fb - fa) / (ha - hb)
            j = i - 1 if i + 2 >= len(c) or (i > 0 and ha - h0 < h0 - hb) else i
            j = max(0, min(j, len(c) - 3))
            return lin, quad_root(c[j:j + 3], h0) if len(c) >= 3 else lin
    return None


def mean(v):
    return sum(v) / len(v)


def ols(xs, ys):
    """a, b, se_a, se_b, df of y = a x + b."""
    n = len(xs)
    mx, my = mean(xs), mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    a = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    b = my - a * mx
    df = n - 2
    rss = sum((y - a * x - b) ** 2 for x, y in zip(xs, ys))
    s2 = rss / df if df > 0 else float("nan")
    return a, b, math.sqrt(s2 / sxx), math.sqrt(s2 * (1 / n + mx * mx / sxx)), df


def ols0(xs, ys):
    """a, se_a, df of y = a x (through the origin)."""
    sxx = sum(x * x for x in xs)
    a = sum(x * y for x, y in zip(xs, ys)) / sxx
    df = len(xs) - 1
    rss = sum((y - a * x) ** 2 for x, y in zip(xs, ys))
    return a, math.sqrt(rss / df / sxx), df


# The fitted forms: name, coefficient names, fit(s values, f*) -> (coefs, ses, df),
# value(coefs, s).
def _fit_log(ss, ys):
    a, b, sa, sb, df = ols([math.log(s) for s in ss], ys)
    return (a, b), (sa, sb), df


def _fit_log1(ss, ys):
    a, sa, df = ols0([math.log(s) for s in ss], [y - 1 for y in ys])
    return (a,), (sa,), df


def _fit_sat(ss, ys):
    m, f, sm, sf, df = ols([1 / s for s in ss], ys)
    return (f, -m), (sf, sm), df


FORMS = [
    ("a ln s + b", ("a", "b"), _fit_log, lambda c, s: c[0] * math.log(s) + c[1]),
    ("a ln s + 1 (b fixed at YaRN's 1)", ("a",), _fit_log1, lambda c, s: c[0] * math.log(s) + 1),
    ("f∞ − c/s (post hoc)", ("f∞", "c"), _fit_sat, lambda c, s: c[0] - c[1] / s),
]


def pct(v, q):
    v = sorted(v)
    k = (len(v) - 1) * q
    lo = int(math.floor(k))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def analyse(d):
    """Per-setting results: per s the seeds' f*, the fit and its intervals."""
    rope = d["rope"]
    seeds = sorted(rope)
    svals = sorted({s for s, _ in d["yarn"]})
    fstar, quad_dev, unbracketed, excess = {}, 0.0, [], {}
    for s in svals:
        fstar[s] = {}
        excess[s] = []
        for seed in seeds:
            curve = d["yarn"].get((s, seed))
            if not curve:
                continue
            h1 = [h for f, h in curve if f == 1.0]
            if h1:
                excess[s].append(h1[0] - rope[seed])
            m = matched(curve, rope[seed])
            if m is None:
                unbracketed.append((s, seed))
                continue
            fstar[s][seed] = m[0]
            quad_dev = max(quad_dev, abs(m[0] - m[1]))
    svals = [s for s in svals if len(fstar[s]) == len(seeds)]
    rng = random.Random(0)
    per_s = {}
    for s in svals:
        v = [fstar[s][k] for k in seeds]
        boot = [mean([v[rng.randrange(len(v))] for _ in v]) for _ in range(B)]
        per_s[s] = (mean(v), pct(boot, 0.025), pct(boot, 0.975),
                    math.sqrt(sum((x - mean(v)) ** 2 for x in v) / (len(v) - 1)))
    fits = []
    if len(svals) >= 3:
        for name, cn, fitf, val in FORMS:
            coefs, ses, df = fitf(svals, [per_s[s][0] for s in svals])
            boots = [[] for _ in coefs]
            for _ in range(B):
                pick = [seeds[rng.randrange(len(seeds))] for _ in seeds]
                c, _, _ = fitf(svals, [mean([fstar[s][k] for k in pick]) for s in svals])
                for i, x in enumerate(c):
                    boots[i].append(x)
            t = t975(df)
            outside = sum(1 for s in svals
                          if not (per_s[s][1] <= val(coefs, s) <= per_s[s][2]))
            fits.append({"name": name, "coef_names": cn, "coefs": coefs, "df": df,
                         "t_ci": [(c - t * e, c + t * e) for c, e in zip(coefs, ses)],
                         "boot_ci": [(pct(v, 0.025), pct(v, 0.975)) for v in boots],
                         "outside": outside, "val": val})
    return {"seeds": seeds, "svals": svals, "per_s": per_s, "fits": fits,
            "fit": fits[0] if fits else None,
            "quad_dev": quad_dev, "unbracketed": unbracketed, "excess": excess,
            "rope_mean": mean([rope[k] for k in seeds]),
            "rope_sd": math.sqrt(sum((rope[k] - mean([rope[j] for j in seeds])) ** 2
                                     for k in seeds) / (len(seeds) - 1))}


def label(setting):
    return ", ".join(f"{k} {v}" for k, v in setting) or "data defaults"


def fit_ci(r):
    """((a, lo, hi), (b, lo, hi), df) of the a ln s + b fit, t-intervals."""
    f = r["fit"]
    (a, b), ((alo, ahi), (blo, bhi)) = f["coefs"], f["t_ci"]
    return (a, alo, ahi), (b, blo, bhi), f["df"]


def fmt_s(s):
    return f"{s:g}"


def part_table(res, order, train):
    print(f"Matched attention factor f* = sqrt(1/t) at N = train_len = {train} (YaRN's mean "
          f"bidirectional attention entropy equal to RoPE's on the same seed; mean over "
          f"seeds, 95 % bootstrap interval over seeds):")
    print()
    for st in order:
        r = res[st]
        print(f"**{label(st)}** ({len(r['seeds'])} seeds; RoPE's entropy at "
              f"N = {train}: {r['rope_mean']:.4f} nats seed mean, {r['rope_sd']:.4f} seed sd)")
        print()
        print("| s | ln s | YaRN 0.1 ln s + 1 | f* (mean) | 95 % interval | seed sd | "
              "fit a ln s + b | f* − fit | entropy above RoPE's at factor 1 (nats) | "
              "YaRN's factor in the interval |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for s in r["svals"]:
            m, lo, hi, sd = r["per_s"][s]
            y = YARN_A * math.log(s) + YARN_B
            fv = r["fit"]["val"](r["fit"]["coefs"], s) if r["fit"] else float("nan")
            ex = mean(r["excess"][s]) if r["excess"][s] else float("nan")
            inside = "yes" if lo <= y <= hi else ("no (above)" if y > hi else "no (below)")
            print(f"| {fmt_s(s)} | {math.log(s):.3f} | {y:.4f} | {m:.4f} | [{lo:.4f}, {hi:.4f}] | "
                  f"{sd:.4f} | {fv:.4f} | {m - fv:+.4f} | {ex:.4f} | {inside} |")
        print()
        if r["unbracketed"]:
            print(f"Not bracketed by the factor grid (left out): {r['unbracketed']}")
            print()
    dev = max(r["quad_dev"] for r in res.values())
    print(f"Interpolation: linear in the factor between the two bracketing grid points; "
          f"quadratic interpolation through the three nearest points differs by at most "
          f"{dev:.1e} (every setting, s and seed).")


def part_fit(res, order):
    print("| data | form | coefficient | value | 95 % t-interval | 95 % seed bootstrap | "
          "fit outside the per-s interval |")
    print("|---|---|---|---|---|---|---|")
    dfs = set()
    for st in order:
        r = res[st]
        for f in r["fits"]:
            dfs.add((f["name"], f["df"]))
            for i, cn in enumerate(f["coef_names"]):
                lo, hi = f["t_ci"][i]
                bl, bh = f["boot_ci"][i]
                out = f"{f['outside']} of {len(r['svals'])} s" if i == 0 else ""
                print(f"| {label(st)} | {f['name']} | {cn} | {f['coefs'][i]:.4f} | "
                      f"[{lo:.4f}, {hi:.4f}] | [{bl:.4f}, {bh:.4f}] | {out} |")
    print()
    n = len(res[order[0]]["svals"])
    print(f"Least squares on the per-s seed means (s = "
          f"{', '.join(fmt_s(s) for s in res[order[0]]['svals'])}; YaRN: a = 0.1, b = 1). "
          f"t-interval: t(0.975, df) × standard error from the residuals (df = {n} − number "
          f"of coefficients; it carries the scatter about the form, lack of fit included). "
          f"Seed bootstrap: {B} resamples of the seeds, the same resampled seeds for every s "
          f"and for RoPE, refit each time (the per-s seed spread propagated; it does not "
          f"carry lack of fit). Last column: at how many s the fitted form lies outside "
          f"the per-s 95 % seed interval.")


def verdict(r):
    """Sentences on one setting's fit against YaRN's 0.1 and 1."""
    (a, alo, ahi), (b, blo, bhi), _ = fit_ci(r)
    out = []
    if ahi < YARN_A:
        out.append(f"a = {a:.4f} [{alo:.4f}, {ahi:.4f}], below YaRN's 0.1 (interval excludes it)")
    elif alo > YARN_A:
        out.append(f"a = {a:.4f} [{alo:.4f}, {ahi:.4f}], above YaRN's 0.1 (interval excludes it)")
    else:
        out.append(f"a = {a:.4f} [{alo:.4f}, {ahi:.4f}] includes YaRN's 0.1")
    rel = "includes" if blo <= YARN_B <= bhi else "excludes"
    out.append(f"b = {b:.4f} [{blo:.4f}, {bhi:.4f}] {rel} YaRN's 1")
    out.append(f"a ln s + b outside the per-s interval at {r['fit']['outside']} of "
               f"{len(r['svals'])} s, f∞ − c/s at {r['fits'][2]['outside']}")
    return out


def part_summary(res, order):
    st = order[0]
    r = res[st]
    (a, alo, ahi), (b, blo, bhi), _ = fit_ci(r)
    print(f"yarn-temperature | fitted a = {a:.3f} [{alo:.3f}, {ahi:.3f}], "
          f"b = {b:.3f} [{blo:.3f}, {bhi:.3f}] | YaRN: 0.1, 1")
    print()
    print(f"(head_dim {SHAPE.get('head_dim')}, train_len {SHAPE.get('train_len')}, "
          f"{label(st)}, {len(r['seeds'])} seeds; 95 % t-intervals)")
    print()
    for s2 in order:
        print(f"- {label(s2)}: " + "; ".join(verdict(res[s2])) + ".")
    if len(order) < 2:
        ys = [YARN_A * math.log(s) + YARN_B for s in r["svals"]]
        above = sum(1 for s, y in zip(r["svals"], ys) if y > r["per_s"][s][2])
        print(f"- YaRN's 0.1 ln s + 1 above the matched factor's interval: at {above} of "
              f"{len(r['svals'])} s.")
        return
    ivs = [(label(s2),) + fit_ci(res[s2])[0] for s2 in order if res[s2]["fit"]]
    sep = [(x[0], y[0]) for i, x in enumerate(ivs) for y in ivs[i + 1:]
           if x[3] < y[2] or y[3] < x[2]]
    print(f"- Slopes a of the data settings whose t-intervals are disjoint: "
          + (", ".join(f"{x} vs {y}" for x, y in sep) if sep else "none (not separable)") + ".")
    svals = [s for s in r["svals"] if all(s in res[o]["per_s"] for o in order)]
    nsep = 0
    for s in svals:
        iv = [res[o]["per_s"][s][1:3] for o in order]
        if all(iv[i][1] < iv[j][0] or iv[j][1] < iv[i][0]
               for i in range(len(iv)) for j in range(i + 1, len(iv))):
            nsep += 1
    print(f"- Matched factors f*(s) of the {len(order)} data settings, every pair's seed "
          f"intervals disjoint: at {nsep} of {len(svals)} s.")
    ys = [YARN_A * math.log(s) + YARN_B for s in svals]
    above = sum(1 for o in order for s, y in zip(svals, ys) if y > res[o]["per_s"][s][2])
    print(f"- YaRN's 0.1 ln s + 1 above the matched factor's interval: {above} of "
          f"{len(order) * len(svals)} (data setting, s) points.")


def part_check(res, order, s):
    r = res[order[0]]
    if s not in r["per_s"]:
        sys.exit(f"fit_temperature: no s = {s:g} in the first data setting")
    m, lo, hi, _ = r["per_s"][s]
    y = YARN_A * math.log(s) + YARN_B
    print(f"At s = {s:g} ({label(order[0])}, {len(r['seeds'])} seeds) the entropy-matched "
          f"factor is {m:.4f} [{lo:.4f}, {hi:.4f}] (95 % seed bootstrap) against YaRN's "
          f"{y:.4f}; the earlier 3-run check's 1.11–1.17 "
          + ("contains" if 1.11 <= lo and hi <= 1.17 else
             "overlaps" if hi >= 1.11 and lo <= 1.17 else "excludes")
          + " this interval, and YaRN's factor is "
          + ("inside it." if lo <= y <= hi else "outside it."))


def part_verify(path):
    """Runs and the worst verification error/bound per check, from the runs'
    summary.json beside results.csv (runs/<id>/summary.json)."""
    import glob
    import json
    import os
    import re
    worst, n, failed = {}, 0, 0
    for f in sorted(glob.glob(os.path.join(os.path.dirname(path) or ".", "runs", "*",
                                           "summary.json"))):
        d = json.load(open(f))
        n += 1
        failed += d.get("status") != "passed" or not all(
            v.get("pass", False) for v in d.get("verification", []))
        for v in d.get("verification", []):
            what = re.sub(r"^(causal )?N=[0-9]+(, no attention factor)?: ", "", v["what"])
            what = re.sub(r"of [0-9]+ sampled rows", "of the sampled rows", what)
            # the tolerance record (error_at_worst, bound_at_worst); runs
            # written before 2026-12-07 spelt them max_error and bound
            e = v.get("error_at_worst", v.get("max_error"))
            b = v.get("bound_at_worst", v.get("bound"))
            e = float("inf") if e is None else e
            r = e / b if b else float("inf")
            if what not in worst or r > worst[what][0]:
                worst[what] = (r, e, b)
    print(f"{n} runs, {n - failed} of them passed with every verification within its bound. Worst error / bound per check "
          f"over all runs and passes:")
    print()
    print("| check | worst error / bound | its error | its bound |")
    print("|---|---|---|---|")
    for what, (r, e, b) in sorted(worst.items()):
        print(f"| {what} | {r:.3g} | {e:.3g} | {b:.3g} |")


def write_plot(res, order, out_dir):
    """out_dir/matched_factor.{dat,gp,png}: f*(s) with its seed interval per data
    setting, each setting's a ln s + b fit (dashed) and YaRN's 0.1 ln s + 1."""
    import os
    import shutil
    import subprocess
    os.makedirs(out_dir, exist_ok=True)
    dat = os.path.join(out_dir, "matched_factor.dat")
    svals = res[order[0]]["svals"]
    smin, smax = min(svals), max(svals)
    grid = [smin * (smax / smin) ** (i / 60) for i in range(61)]
    with open(dat, "w") as fh:
        for st in order:
            r = res[st]
            fh.write(f"# {label(st)}: s f* lo hi\n")
            for s in r["svals"]:
                m, lo, hi, _ = r["per_s"][s]
                fh.write(f"{s:g} {m:.6f} {lo:.6f} {hi:.6f}\n")
            fh.write("\n\n")
        for st in order:
            r = res[st]
            fh.write(f"# {label(st)}: a ln s + b\n")
            for s in grid:
                fh.write(f"{s:.6g} {r['fit']['val'](r['fit']['coefs'], s):.6f}\n")
            fh.write("\n\n")
        fh.write("# YaRN 0.1 ln s + 1\n")
        for s in grid:
            fh.write(f"{s:.6g} {YARN_A * math.log(s) + YARN_B:.6f}\n")
    n = len(order)
    lines = [f"'matched_factor.dat' index {i} using 1:2:3:4 with yerrorlines lc {i + 1} lw 2 "
             f"pt {7 + 2 * i} ps 1.4 title 'entropy-matched factor, {label(st)}'"
             for i, st in enumerate(order)]
    lines += [f"'' index {n + i} using 1:2 with lines lc {i + 1} dt 2 lw 1.5 "
              + ("title 'a ln s + b fits (dashed, colour of the data)'" if i == 0 else "notitle")
              for i in range(n)]
    lines.append(f"'' index {2 * n} using 1:2 with lines lc rgb 'black' lw 3 "
                 f"title \"YaRN's 0.1 ln s + 1\"")
    gp = os.path.join(out_dir, "matched_factor.gp")
    with open(gp, "w") as fh:
        fh.write("# fit_temperature.py: re-render here with: gnuplot matched_factor.gp\n"
                 "set terminal pngcairo size 1000,620 font 'sans,11'\n"
                 "set termoption noenhanced\n"
                 "set output 'matched_factor.png'\n"
                 "set title 'attention factor sqrt(1/t) matching RoPE entropy at the training length'\n"
                 "set xlabel 'YaRN scale s'\n"
                 "set ylabel 'attention factor sqrt(1/t)'\n"
                 "set grid\nset logscale x 2\nset format x '%.0f'\n"
                 f"set xrange [{smin / 1.15:g}:{smax * 1.15:g}]\n"
                 "set key outside below vertical\n"
                 "plot " + ", \\\n     ".join(lines) + "\n")
    if shutil.which("gnuplot"):
        subprocess.run(["gnuplot", "matched_factor.gp"], cwd=out_dir, check=True)
        return os.path.join(out_dir, "matched_factor.png")
    return gp


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    path, part, s, plot_dir = argv[1], "table", 16.0, None
    i = 2
    while i < len(argv):
        if argv[i] == "--part" and i + 1 < len(argv):
            part, i = argv[i + 1], i + 2
        elif argv[i] == "--plot" and i + 1 < len(argv):
            plot_dir, i = argv[i + 1], i + 2
        elif argv[i] == "--s" and i + 1 < len(argv):
            s, i = float(argv[i + 1]), i + 2
        else:
            sys.exit(f"fit_temperature: unknown argument {argv[i]}")
    if part == "verify":
        part_verify(path)
        return 0
    data, order, train = load(path)
    res = {st: analyse(data[st]) for st in order}
    if plot_dir:
        print(f"figure: {write_plot(res, order, plot_dir)}", file=sys.stderr)
    if part == "table":
        part_table(res, order, train)
    elif part == "fit":
        part_fit(res, order)
    elif part == "summary":
        part_summary(res, order)
    elif part == "check":
        part_check(res, order, s)
    else:
        sys.exit(f"fit_temperature: unknown part {part}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
