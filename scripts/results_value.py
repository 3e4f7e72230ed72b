#!/usr/bin/env python3
"""One number (or range, or count) from a ropelab results.csv, for the prose
of a study README (scripts/study_readme.py's inline markers).

usage: results_value.py RESULTS.csv [--sig N] [--log10] OP SEL [SEL2]
       results_value.py RESULTS.csv [--sig N] verify FIELD OP [FILTER...]

SEL is METRIC[@X[/N]] followed by filters, comma-separated:
  max_abs_error,encoding=torch,encoding.precision=hf,encoding.dtype=bf16
  invariance.device_abs_change@16,params.n=0
METRIC@X/N as in results_table.py; a filter KEY=VALUE (KEY!=VALUE: not
equal) compares a results.csv
column (encoding, kind, status, metric, any swept key such as params.n) as
text. A SEL without a metric ("status=passed") selects rows of every metric;
"*" selects every row.
OP:
  value SEL        the value of the one row SEL matches (an error if not one)
  min, max SEL     the smallest, largest value among the rows SEL matches
  range SEL        "LO–HI" among them (one value when LO and HI print alike)
  count SEL        how many rows SEL matches
  runs SEL         how many distinct runs (run_id) SEL matches
  ratio SEL SEL2   value(SEL) / value(SEL2); when SEL and SEL2 match several
                   rows, rows are paired by run, and ratio-min, ratio-max,
                   ratio-range reduce the per-run ratios (plain ratio then
                   needs exactly one pair)
verify FIELD OP [FILTER...]: the runs' verification records in
  OUT/runs/*/summary.json (OUT: the folder of RESULTS.csv), FIELD one of
  the tolerance record's error_at_worst, bound_at_worst, or ratio
  (error_at_worst / bound_at_worst), OP one of min, max, range,
  count; FILTER KEY=VALUE on the run's kind, status, encoding (its name),
  a swept key (params.n, model.head_dim, ...) or `what` (a substring of the
  check's description).
Numbers print with N significant digits (default 3; integers, and numbers
below 10^6 with N digits or more before the point, without an exponent: 7311
at 2 digits prints 7300);
--log10 prints log10 of the value(s) instead.
"""
import csv
import glob
import json
import math
import os
import sys


def parse_column(c):
    m, _, x = c.partition("@")
    x, _, n = x.partition("/")
    return m, x, n


def parse_sel(s):
    """(column or None, [(key, value)]) of a SEL."""
    col, filters = None, []
    for part in s.split(","):
        if "!=" in part:
            k, _, v = part.partition("!=")
            filters.append((k, "!" + v))
        elif "=" in part:
            k, _, v = part.partition("=")
            filters.append((k, "=" + v))
        elif part and part != "*":
            if col is not None:
                raise ValueError(f"'{s}': two metrics")
            col = parse_column(part)
    return col, filters


def row_key(r):
    n = r.get("length", "")
    if n == r["x"]:
        n = ""
    return r["metric"], r["x"], n


def select(rows, sel):
    col, filters = parse_sel(sel)
    for k, _ in filters:
        if rows and k not in rows[0]:
            raise ValueError(f"'{sel}': results.csv has no column {k}")
    return [r for r in rows if (col is None or row_key(r) == col)
            and all((r[k] == v[1:]) == (v[0] == "=") for k, v in filters)]


def load(path, sels):
    """The rows of results.csv that SELs can match: when every SEL names a
    metric, only lines holding one of those names are parsed (a study's
    results.csv has tens of thousands of table rows)."""
    names = [parse_sel(a)[0] for a in sels]
    with open(path, newline="") as fp:
        head = fp.readline()
        if None in names:
            lines = fp
        else:
            lines = [ln for ln in fp if any(n[0] in ln for n in names)]
        return list(csv.DictReader([head] + list(lines)))


def fmt(v, sig):
    """N significant digits; integers below 10^15, and numbers from 10^N up
    to 10^6 rounded to N digits, without an exponent (7311 at 2 digits: 7300)."""
    if math.isfinite(v) and abs(v) < 1e15:
        if v == int(v):
            return str(int(v))
        if 10 ** sig <= abs(v) < 1e6:
            return str(int(round(v, sig - 1 - int(math.floor(math.log10(abs(v)))))))
    return f"{v:.{sig}g}"


def reduce(op, vals, sig, what):
    if not vals:
        raise ValueError(f"{what}: no value selected")
    if op in ("value", "ratio"):
        if len(vals) != 1:
            raise ValueError(f"{what}: {len(vals)} values selected, not one "
                             f"(add filters, or use min/max/range)")
        return fmt(vals[0], sig)
    lo, hi = min(vals), max(vals)
    if op.endswith("min"):
        return fmt(lo, sig)
    if op.endswith("max"):
        return fmt(hi, sig)
    a, b = fmt(lo, sig), fmt(hi, sig)
    return a if a == b else f"{a}–{b}"


def verify(out, field, op, filters, sig, log10):
    vals = []
    for f in sorted(glob.glob(os.path.join(out, "runs", "*", "summary.json"))):
        with open(f) as fp:
            s = json.load(fp)
        info = {"kind": s.get("kind", ""), "status": s.get("status", ""),
                "encoding": s.get("resolved", {}).get("encoding", {}).get("name", "")}
        info.update({k: str(v) for k, v in s.get("swept", {}).items()})
        for v in s.get("verification", []):
            ok = True
            for k, want in filters:
                if k == "what":
                    ok = ok and want in v.get("what", "")
                else:
                    got = info.get(k)
                    ok = ok and got is not None and (got == want or _num_eq(got, want))
            if not ok:
                continue
            e, b = _rec(v, "error_at_worst"), _rec(v, "bound_at_worst")
            if field == "ratio":
                # an exact check (bound 0, e.g. NoPE's identity transform)
                # that found no error is 0 of its bound
                vals.append(0.0 if e == 0 and b == 0 else e / b if b else math.inf)
            else:
                vals.append(e if field == "error_at_worst" else b)
    if op == "count":
        return str(len(vals))
    if log10:
        vals = [math.log10(v) for v in vals]
    return reduce(op, vals, sig, f"verify {field}")


# the tolerance record's keys; runs written before 2026-12-07 spelt them
# max_error and bound (a null error: not finite)
_OLD = {"error_at_worst": "max_error", "bound_at_worst": "bound"}


def _rec(v, key):
    x = v.get(key, v.get(_OLD[key]))
    return math.inf if x is None else float(x)


def _num_eq(a, b):
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def main(argv):
    args = argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 2
    path, sig, log10 = args.pop(0), 3, False
    while args and args[0] in ("--sig", "--log10"):
        if args[0] == "--log10":
            log10, args = True, args[1:]
        else:
            if len(args) < 2:
                print("--sig needs a value", file=sys.stderr)
                return 2
            sig, args = int(args[1]), args[2:]
    if not args:
        print("no OP", file=sys.stderr)
        return 2
    op = args.pop(0)
    try:
        if op == "verify":
            if len(args) < 2 or args[0] not in ("error_at_worst", "bound_at_worst", "ratio") or \
                    args[1] not in ("min", "max", "range", "count"):
                print("verify needs FIELD (error_at_worst, bound_at_worst, ratio) and OP (min, max, range, count)",
                      file=sys.stderr)
                return 2
            filters = [tuple(a.split("=", 1)) for a in args[2:]]
            if any(len(f) != 2 for f in filters):
                print("verify: a FILTER is KEY=VALUE", file=sys.stderr)
                return 2
            print(verify(os.path.dirname(os.path.abspath(path)), args[0], args[1], filters,
                         sig, log10))
            return 0
        rows = load(path, args)
        if op in ("value", "min", "max", "range", "count", "runs"):
            if len(args) != 1:
                print(f"{op} takes one SEL", file=sys.stderr)
                return 2
            sel = select(rows, args[0])
            if op == "count":
                print(len(sel))
                return 0
            if op == "runs":
                print(len({r["run_id"] for r in sel}))
                return 0
            vals = [float(r["value"]) for r in sel]
        elif op in ("ratio", "ratio-min", "ratio-max", "ratio-range"):
            if len(args) != 2:
                print(f"{op} takes two SELs", file=sys.stderr)
                return 2
            a, b = select(rows, args[0]), select(rows, args[1])
            if len(a) == 1 and len(b) == 1:
                vals = [float(a[0]["value"]) / float(b[0]["value"])]
            else:
                bb = {}
                for r in b:
                    if r["run_id"] in bb:
                        raise ValueError(f"'{args[1]}' selects two rows of run {r['run_id']}")
                    bb[r["run_id"]] = float(r["value"])
                vals = [float(r["value"]) / bb[r["run_id"]] for r in a if r["run_id"] in bb]
        else:
            print(f"unknown OP '{op}'", file=sys.stderr)
            return 2
        if log10:
            vals = [math.log10(v) for v in vals]
        print(reduce(op, vals, sig, " ".join(args)))
    except (ValueError, KeyError, ZeroDivisionError) as e:
        print(f"{path}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
