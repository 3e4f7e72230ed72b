#!/usr/bin/env python3
"""Markdown table of chosen metrics from a ropelab results.csv.

usage: results_table.py RESULTS.csv [--kind KIND] [--sig N] COLUMN...
       results_table.py RESULTS.csv [--kind KIND] --smallest KEY METRIC L...
       results_table.py RESULTS.csv [--kind KIND] --fit KEY METRIC L...
  COLUMN is METRIC (a summary metric, empty x), METRIC@X (a table value at
  x = X, e.g. retrieval_length.accuracy@2048) or METRIC@X/N (at x = X of the
  table measured at context length N, e.g. retrieval_distance.accuracy@1024/4096;
  the older spelling retrieval_n4096.accuracy@1024 means the same).
Rows: one per encoding and value of the swept keys (runs of different kinds
with the same encoding and sweep point share a row), in the order they first
appear in results.csv; values rounded to 4 decimals, or to N significant
digits with --sig N. Study READMEs quote these tables; rerun the batch, then
this. Reads the tidy format (docs/runner.md "results.csv") and the older one
(x_label/y_label, lengths in metric names).
--smallest: for each threshold L, the smallest value of the swept column KEY
(e.g. encoding.rope_theta) among passed runs whose METRIC is >= L, and the
largest KEY below it whose METRIC is < L (the grid's bracket of the bound;
experiments/base-bounds-length).
--fit: the same bounds b(L), then the least-squares power law
log b = log c + k log L (natural logs, ordinary least squares over the L
given that have a bound on the grid), with 95 % intervals: t quantile
(n - 2 degrees of freedom) x standard error, for k directly and for log c,
whose interval is then exponentiated (so c's interval is not symmetric).

Seeds. Runs that differ only in their seed (the `seed` column, a swept
`data.seed` column, or a column named with --seed-key KEY, repeatable) share
one row: each cell is the mean over the seeds and its 95 % interval,
"MEAN [LO, HI]", and the column `n seeds` says how many seeds the row has
(a cell with fewer values says "(n=K)"). The interval is a t-interval,
mean +- t(0.975, n-1) * s / sqrt(n), for n < 5 seeds, and a percentile
bootstrap over the seeds for n >= 5 (10000 resamples of the n per-seed
values, RNG seeded with 0 for every cell, so a table is reproducible).
--per-seed: one row per seed instead (the seed columns shown).
Intervals of the kind. Where the kind also wrote X_lo95 and X_hi95 (plot
word `ci`: a 95 % interval of X, e.g. Wilson's for an accuracy) at the same
x and length, the cell of X reads "X [LO, HI]" (for one seed; over several
seeds the interval is the one over seeds); --no-ci: X alone. Asking for
X_lo95 as a COLUMN still prints it as a column.
"""
import csv
import math
import random
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


def fmt(v, sig):
    return f"{v:.4f}" if sig is None else f"{v:.{sig}g}"


# t(0.975, dof) for dof = 1, 2, 3 (n = 2, 3, 4 seeds)
T975 = {1: 12.706204736, 2: 4.302652730, 3: 3.182446305}
BOOT_RESAMPLES = 10000
BOOT_SEED = 0


def seed_interval(vals):
    """(mean, lo, hi) of a list of per-seed values, len >= 2: t-interval for
    n < 5, percentile bootstrap over the seeds for n >= 5 (module doc)."""
    n = len(vals)
    mean = math.fsum(vals) / n
    if n < 5:
        s = math.sqrt(math.fsum((v - mean) ** 2 for v in vals) / (n - 1))
        h = T975[n - 1] * s / math.sqrt(n)
        return mean, mean - h, mean + h
    rng = random.Random(BOOT_SEED)
    means = sorted(math.fsum(vals[int(rng.random() * n)] for _ in range(n)) / n
                   for _ in range(BOOT_RESAMPLES))
    lo = means[int(0.025 * BOOT_RESAMPLES)]
    hi = means[math.ceil(0.975 * BOOT_RESAMPLES) - 1]
    return mean, lo, hi


def cell(vals, ci, nseeds, sig):
    """One table cell: vals {seed: value string}, ci {seed: (lo, hi) strings}."""
    nums = [float(v) for v in vals.values() if v != ""]
    if not nums:
        return "—"
    if len(nums) == 1:
        (seed, v), = [(k, v) for k, v in vals.items() if v != ""]
        text = fmt(float(v), sig)
        if seed in ci:
            text += f" [{fmt(float(ci[seed][0]), sig)}, {fmt(float(ci[seed][1]), sig)}]"
    else:
        m, lo, hi = seed_interval(nums)
        text = f"{fmt(m, sig)} [{fmt(lo, sig)}, {fmt(hi, sig)}]"
    if len(nums) < nseeds:
        text += f" (n={len(nums)})"
    return text


def betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b) (continued fraction, modified Lentz)."""
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    if x > (a + 1) / (a + b + 2):
        return 1.0 - betainc(b, a, 1.0 - x)
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(lbeta + a * math.log(x) + b * math.log1p(-x)) / a
    tiny, f, c, d = 1e-300, 1.0, 1.0, 0.0
    for i in range(400):
        m = i // 2
        if i == 0:
            num = 1.0
        elif i % 2 == 0:
            num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        else:
            num = -((a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + num / c
        c = c if abs(c) > tiny else tiny
        f *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return front * (f - 1.0)


def t_quantile(p, df):
    """Student t quantile for p in (0.5, 1), by bisection on the CDF."""
    def cdf(t):
        return 1.0 - 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    lo, hi = 0.0, 1e3
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return 0.5 * (lo + hi)


def power_fit(xs, ys):
    """OLS of log y on log x: (log c, k, se(log c), se(k), n)."""
    u = [math.log(x) for x in xs]
    v = [math.log(y) for y in ys]
    n = len(u)
    mu, mv = sum(u) / n, sum(v) / n
    suu = sum((a - mu) ** 2 for a in u)
    k = sum((a - mu) * (b - mv) for a, b in zip(u, v)) / suu
    a0 = mv - k * mu
    s2 = sum((b - a0 - k * a) ** 2 for a, b in zip(u, v)) / (n - 2)
    return a0, k, math.sqrt(s2 * (1.0 / n + mu * mu / suu)), math.sqrt(s2 / suu), n


def grid_points(path, rows, kind, key, metric):
    """{KEY: METRIC} over the passed runs, or an exit status."""
    if key not in rows[0]:
        print(f"{path}: no column {key}", file=sys.stderr)
        return 1
    pts = {}
    for r in rows:
        if (kind and r["kind"] != kind) or r["metric"] != metric or r["x"] != "":
            continue
        if r["status"] != "passed":
            print(f"{path}: run {r['run_id']} {r['status']}", file=sys.stderr)
            return 1
        try:
            pts[float(r[key])] = float(r["value"])
        except ValueError:
            print(f"{path}: run {r['run_id']}: {key} = '{r[key]}' or {metric} = '{r['value']}' "
                  "is not a number", file=sys.stderr)
            return 1
    if not pts:
        print(f"{path}: no metric {metric}", file=sys.stderr)
        return 1
    return pts


def fit_table(path, rows, kind, key, metric, lengths):
    """| fit | c [95 %] | k [95 %] | n | of the grid's bounds b(L) = c L^k."""
    try:
        ls = [float(s) for s in lengths]
    except ValueError:
        print("--fit: every L must be a number", file=sys.stderr)
        return 2
    pts = grid_points(path, rows, kind, key, metric)
    if isinstance(pts, int):
        return pts
    xs, ys = [], []
    for L in ls:
        ok = [b for b in sorted(pts) if pts[b] >= L]
        if ok and L > 0 and ok[0] > 0:
            xs.append(L)
            ys.append(ok[0])
    if len(xs) < 3:
        print(f"--fit: {len(xs)} lengths with a bound on the grid; need 3", file=sys.stderr)
        return 1
    a0, k, se_a, se_k, n = power_fit(xs, ys)
    t = t_quantile(0.975, n - 2)
    print(f"| b(L) = c·L^k, b = smallest {key} with {metric} >= L | c [95 %] | k [95 %] | n |")
    print("|---|---|---|---|")
    print(f"| least squares on log b = log c + k log L; 95 %: t({n - 2}) = {t:.4f} × standard "
          f"error | {math.exp(a0):.4g} [{math.exp(a0 - t * se_a):.4g}, "
          f"{math.exp(a0 + t * se_a):.4g}] | {k:.4f} [{k - t * se_k:.4f}, {k + t * se_k:.4f}] "
          f"| {n} |")
    return 0


def bound_table(path, rows, kind, key, metric, lengths):
    """| L | smallest KEY with METRIC >= L | largest KEY below it with METRIC < L |"""
    for s in lengths:
        try:
            float(s)
        except ValueError:
            print(f"--smallest: threshold '{s}' is not a number", file=sys.stderr)
            return 2
    pts = grid_points(path, rows, kind, key, metric)
    if isinstance(pts, int):
        return pts
    grid = sorted(pts)
    print(f"| L | smallest {key} with {metric} >= L | largest {key} below it with {metric} < L |")
    print("|---|---|---|")
    for s in lengths:
        L = float(s)
        ok = [b for b in grid if pts[b] >= L]
        if not ok:
            print(f"| {s} | none up to {grid[-1]:g} | — |")
            continue
        below = [b for b in grid if b < ok[0]]
        print(f"| {s} | {ok[0]:.4g} | {below[-1]:.4g} |" if below else
              f"| {s} | {ok[0]:.4g} | none (grid starts there) |")
    return 0


def main(argv):
    args = argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 2
    path, kind, sig, smallest = args.pop(0), None, None, None
    use_ci, per_seed, seed_keys = True, False, ["seed", "data.seed"]
    while args and args[0] in ("--kind", "--sig", "--smallest", "--fit", "--no-ci",
                               "--per-seed", "--seed-key"):
        if args[0] in ("--smallest", "--fit"):
            if len(args) < 4:
                print(f"{args[0]} needs KEY METRIC and at least one L", file=sys.stderr)
                return 2
            smallest = (args[0], args[1], args[2])
            args = args[3:]
            break
        if args[0] in ("--no-ci", "--per-seed"):
            use_ci = use_ci and args[0] != "--no-ci"
            per_seed = per_seed or args[0] == "--per-seed"
            args = args[1:]
            continue
        if len(args) < 2:
            print(f"{args[0]} needs a value", file=sys.stderr)
            return 2
        if args[0] == "--kind":
            kind = args[1]
        elif args[0] == "--seed-key":
            seed_keys.append(args[1])
        else:
            sig = int(args[1])
        args = args[2:]
    with open(path, newline="") as fp:
        rows = list(csv.DictReader(fp))
    if not rows:
        print(f"{path}: no rows", file=sys.stderr)
        return 1
    if smallest:
        fn = fit_table if smallest[0] == "--fit" else bound_table
        return fn(path, rows, kind, smallest[1], smallest[2], args)
    for k in seed_keys[2:]:
        if k not in rows[0]:
            print(f"{path}: --seed-key {k}: no such column", file=sys.stderr)
            return 1
    seed_keys = [k for k in seed_keys if k in rows[0]]
    cols = [parse_column(c) for c in args]
    # the intervals the kind wrote for a column: (metric_lo95, x, n), (metric_hi95, x, n)
    bounds = {}
    if use_ci:
        for c in cols:
            bounds[(c[0] + "_lo95",) + c[1:]] = (c, 0)
            bounds[(c[0] + "_hi95",) + c[1:]] = (c, 1)
    if per_seed:
        swept = [k for k in rows[0] if k not in FIXED or k == "seed"]
        seed_keys = []
    else:
        swept = [k for k in rows[0] if k not in FIXED and k not in seed_keys]
    runs, order = {}, []
    for r in rows:
        if kind and r["kind"] != kind:
            continue
        # params.* differ between kinds; encoding, model and data define the
        # row, and, with --kind (one kind's runs only), its params too
        key = (r["encoding"],) + tuple(r[k] for k in swept
                                       if kind or not k.startswith("params."))
        seed = tuple(r[k] for k in seed_keys)
        rk = row_key(r)
        hit = [c for c in cols if rk == c]
        if hit or (rk in bounds and "ci" in r.get("plot", "ci").split()):
            if key not in runs:
                runs[key] = {"_r": r, "_seeds": set(), "_ci": {}}
                order.append(key)
            if hit:
                runs[key]["_seeds"].add(seed)
            for c in hit:
                runs[key].setdefault(c, {})[seed] = r["value"]
            if rk in bounds:
                c, side = bounds[rk]
                runs[key]["_ci"].setdefault(c, {}).setdefault(seed, ["", ""])[side] = r["value"]
    order = [i for i in order if runs[i]["_seeds"]]
    used = [k for k in swept if len({runs[i]["_r"][k] for i in order}) > 1]
    seeded = any(len(runs[i]["_seeds"]) > 1 for i in order)
    # headers as given: "METRIC @ X", "METRIC @ X/N"
    head = (["encoding"] + used + (["n seeds"] if seeded else [])
            + [a.replace("@", " @ ", 1) for a in args])
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for i in order:
        r = runs[i]
        n = len(r["_seeds"])
        ci = {c: {s: lh for s, lh in r["_ci"].get(c, {}).items() if "" not in lh} for c in cols}
        vals = [cell(r.get(c, {}), ci[c], n, sig) for c in cols]
        print("| " + " | ".join([r["_r"]["encoding"]] + [r["_r"][k] for k in used]
                                + ([str(n)] if seeded else []) + vals) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
