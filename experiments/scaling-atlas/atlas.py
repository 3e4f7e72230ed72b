#!/usr/bin/env python3
"""Tables, sentences and figures of the scaling atlas from its results.csv.

usage: atlas.py RESULTS.csv WHAT
  WHAT is one of
    --first-negative   Markdown table: first distance m with B(m) < 0, method x s
    --ood              Markdown table: pairs out of distribution at s*L, method x s
    --scales S J...    Markdown table: scale theta'_j/theta_j and wavelength of pairs J at s = S
    --check            the s = 4 line: RoPE / PI / NTK / YaRN against 1707 / 6825 / 4067 / 4328
    --summary          the README's conclusion sentences, computed from the tables
    --plots DIR        the three figures (PNG + SVG and their .gp files) into DIR
Every run must have passed and base_bound's device and double-reference
distances must agree (else exit 1). The numbers are deterministic (double
frequencies, no sampling): no intervals.
results.csv is the tidy format (docs/runner.md): runs are keyed by encoding
name and encoding.seq_len (= s * train_len; plain RoPE carries seq_len too).
"""
import csv
import os
import subprocess
import sys

METHODS = [  # (encoding name in the batch, label)
    ("rope", "RoPE (no scaling)"),
    ("pi", "PI (linear)"),
    ("ntk", "NTK"),
    ("dynamic", "dynamic NTK"),
    ("yarn", "YaRN"),
    ("llama3", "Llama 3"),
    ("longrope", "LongRoPE"),
]
LABEL = dict(METHODS)
# colour x dash x point per method (distinct for all 7; RoPE black)
STYLE = {
    "rope": ('"black"', 1, 7),
    "pi": ('"#0072b2"', 2, 5),
    "ntk": ('"#d55e00"', 1, 9),
    "dynamic": ('"#009e73"', 4, 11),
    "yarn": ('"#cc79a7"', 1, 13),
    "llama3": ('"#e69f00"', 5, 4),
    "longrope": ('"#56b4e9"', 3, 6),
}
S_COLOURS = ['"#0072b2"', '"#d55e00"', '"#009e73"', '"#cc79a7"', '"#e69f00"']


def load(path):
    """runs[(enc, s)] = {'metrics': {...}, 'tables': {col: {j: v}}}, L, ok."""
    runs, L, bad = {}, None, []
    with open(path, newline="") as fp:
        for r in csv.DictReader(fp):
            if r["status"] != "passed":
                bad.append(f"run {r['run_id']} ({r['encoding']}) {r['status']}")
                continue
            L = int(r["train_len"])
            seq = int(r["encoding.seq_len"])
            s = seq // L
            run = runs.setdefault((r["encoding"], s), {"metrics": {}, "tables": {}})
            m = r["metric"]
            if r["x"] == "":
                run["metrics"][m] = float(r["value"])
            else:
                run["tables"].setdefault(m, {})[int(float(r["x"]))] = float(r["value"])
    for (e, s), run in runs.items():
        m = run["metrics"]
        if "first_negative_distance" in m and \
                m["first_negative_distance"] != m.get("reference_first_negative_distance"):
            bad.append(f"{e} s={s}: device first negative distance "
                       f"{m['first_negative_distance']:g} != reference "
                       f"{m.get('reference_first_negative_distance')}")
    if bad:
        sys.exit("atlas.py: " + "; ".join(bad))
    ss = sorted({s for (_, s) in runs})
    return runs, L, ss


def fnd(runs, e, s):
    return runs[(e, s)]["metrics"]["first_negative_distance"]


def holds(runs, e, s, L):
    return fnd(runs, e, s) >= s * L


def first_negative(runs, L, ss):
    print("| method | " + " | ".join(f"s = {s} (s·L = {s * L})" for s in ss) + " |")
    print("|---|" + "---|" * len(ss))
    for e, lab in METHODS:
        cells = []
        for s in ss:
            v = fnd(runs, e, s)
            scanned = runs[(e, s)]["metrics"]["nonnegative_to_max_distance"] == 1
            c = f"≥ {v:.0f} (none scanned)" if scanned else f"{v:.0f}"
            cells.append(f"**{c}** ✓" if v >= s * L else c)
        print(f"| {lab} | " + " | ".join(cells) + " |")


def ood(runs, L, ss):
    n = len(runs[(METHODS[0][0], ss[0])]["tables"]["coverage.frequency_ratio"])
    print("| method | " + " | ".join(f"s = {s}" for s in ss) + f" | first OOD pair at s = {ss[-1]} |")
    print("|---|" + "---|" * (len(ss) + 1))
    for e, lab in METHODS:
        cells = [f"{runs[(e, s)]['metrics']['ood_pairs']:.0f} of {n}" for s in ss]
        f = runs[(e, ss[-1])]["metrics"]["first_ood_pair"]
        cells.append("none" if f < 0 else f"{f:.0f}")
        print(f"| {lab} | " + " | ".join(cells) + " |")


def scales(runs, L, s, js):
    print("| pair j | unscaled wavelength (tokens) | " +
          " | ".join(LABEL[e] for e, _ in METHODS[1:]) + " |")
    print("|---|---|" + "---|" * (len(METHODS) - 1))
    for j in js:
        lam0 = runs[("rope", s)]["tables"]["coverage.unscaled_wavelength_tokens"][j]
        cells = []
        for e, _ in METHODS[1:]:
            t = runs[(e, s)]["tables"]
            cells.append(f"{t['coverage.frequency_ratio'][j]:.4g} ({t['coverage.wavelength_tokens'][j]:.4g})")
        print(f"| {j} | {lam0:.4g} | " + " | ".join(cells) + " |")


def check(runs, L):
    got = " / ".join(f"{fnd(runs, e, 4):.0f}" for e in ("rope", "pi", "ntk", "yarn"))
    print(f"base 10000, L {L}, d 128, s = 4, first negative distance for RoPE / PI / NTK / "
          f"YaRN: {got} (expected 1707 / 6825 / 4067 / 4328)")


def names(es):
    es = [LABEL[e] for e in es]
    if not es:
        return "none"
    return es[0] if len(es) == 1 else ", ".join(es[:-1]) + " and " + es[-1]


def summary(runs, L, ss):
    scaled = [e for e, _ in METHODS[1:]]
    n = len(runs[("rope", ss[0])]["tables"]["coverage.frequency_ratio"])
    keep = [e for e in scaled if all(runs[(e, s)]["metrics"]["ood_pairs"] == 0 for s in ss)]
    leave = [e for e in scaled if e not in keep]
    print(f"- Out of distribution at s·L: {names(keep)} keep all {n} pairs inside their "
          f"trained angle range at every s = {ss[0]} … {ss[-1]}; "
          + "; ".join(f"{LABEL[e]} leaves "
                      + ", ".join(sorted({f'{runs[(e, s)]["metrics"]["ood_pairs"]:.0f}' for s in ss}))
                      + f" pairs out at every s" for e in ["rope"] + leave) + ".")
    ok = {e: [s for s in ss if holds(runs, e, s, L)] for e, _ in METHODS}
    never = [e for e, _ in METHODS if not ok[e]]
    part = [e for e, _ in METHODS if ok[e]]
    rope_ratio = fnd(runs, "rope", ss[0]) / L
    print(f"- Base bound up to s·L: {names(never)} turn B(m) negative before s·L at every s "
          f"(plain RoPE already at m = {fnd(runs, 'rope', ss[0]):.0f}, {rope_ratio:.2f} L, inside "
          f"the training length)"
          + "".join(f"; {LABEL[e]} satisfies it up to s·L for s = "
                    + ", ".join(str(s) for s in ok[e]) + f" (first negative at "
                    + ", ".join(f"{fnd(runs, e, s):.0f}" for s in ok[e]) + ")" for e in part)
          + ".")
    for s in ss:
        order = sorted(scaled, key=lambda e: fnd(runs, e, s))
        print(f"- s = {s}: first to violate the bound "
              + " < ".join(f"{LABEL[e]} {fnd(runs, e, s):.0f}" for e in order) + ".")
    below = [e for e in scaled[1:] if all(fnd(runs, e, s) < fnd(runs, "pi", s) for s in ss)]
    above = [e for e in scaled[1:] if all(fnd(runs, e, s) > fnd(runs, "pi", s) for s in ss)]
    mixed = [e for e in scaled[1:] if e not in below and e not in above]
    print(f"- Against PI at the same s: {names(below)} turn negative earlier than PI at every s; "
          f"{names(above)} later at every s"
          + "".join(f"; {LABEL[e]} later for s = "
                    + ", ".join(str(s) for s in ss if fnd(runs, e, s) > fnd(runs, 'pi', s))
                    + " and earlier for s = "
                    + ", ".join(str(s) for s in ss if fnd(runs, e, s) < fnd(runs, 'pi', s))
                    for e in mixed) + ".")
    pi = [fnd(runs, "pi", s) / (s * fnd(runs, "rope", s)) for s in ss]
    print(f"- PI's first negative distance is s times RoPE's to within "
          f"{max(abs(x - 1) for x in pi) * 100:.2f} % (B(m) of θ/s is RoPE's B(m/s), sampled at "
          f"integer m): {min(pi):.4f} … {max(pi):.4f} of s·{fnd(runs, 'rope', ss[0]):.0f}.")


def gp_header(fp, out, w, h):
    fp.write(f'set terminal pngcairo size {w},{h} font "sans,11"\nset output "{out}.png"\n'
             'set encoding utf8\nset grid back lc rgb "gray85"\n')


def render(gp, d):
    subprocess.run(["gnuplot", os.path.basename(gp)], cwd=d, check=True)
    # the same script as SVG (plots/ convention: PNG + SVG)
    txt = open(gp).read()
    import re
    txt = re.sub(r'set terminal pngcairo size (\d+),(\d+) font "sans,11"',
                 r'set terminal svg size \1,\2 dynamic font "sans,11"', txt)
    txt = txt.replace('.png"', '.svg"')
    subprocess.run(["gnuplot", "-"], input=txt, text=True, cwd=d, check=True)


def plots(runs, L, ss, d):
    os.makedirs(d, exist_ok=True)
    scaled = [e for e, _ in METHODS[1:]]
    n = len(runs[("rope", ss[0])]["tables"]["coverage.frequency_ratio"])
    # data: one file per (method, s): j ratio wavelength unscaled_wavelength angle_ratio
    for (e, s), run in runs.items():
        t = run["tables"]
        with open(os.path.join(d, f"atlas_{e}_s{s}.dat"), "w") as fp:
            for j in range(n):
                ae = t["coverage.angle_range_at_eval_len_rad"][j]
                at = t["coverage.angle_range_in_training_rad"][j]
                fp.write(f"{j} {t['coverage.frequency_ratio'][j]!r} "
                         f"{t['coverage.wavelength_tokens'][j]!r} "
                         f"{t['coverage.unscaled_wavelength_tokens'][j]!r} {ae / at!r}\n")
    with open(os.path.join(d, "atlas_base_bound.dat"), "w") as fp:
        for e, _ in METHODS:
            fp.write(f"# {e}\n")
            for s in ss:
                fp.write(f"{s} {fnd(runs, e, s):.0f}\n")
            fp.write("\n\n")
    j_ood = min(j for j in range(n)
                if runs[("rope", ss[0])]["tables"]["coverage.unscaled_wavelength_tokens"][j] > L)

    # Figure 1: scale and wavelength per pair, one column per method, s as series.
    gp = os.path.join(d, "atlas_pairs.gp")
    with open(gp, "w") as fp:
        gp_header(fp, "atlas_pairs", 1800, 820)
        fp.write(f'set multiplot layout 2,{len(scaled)} columnsfirst title '
                 f'"Per rotary pair j: scale θ\'_j/θ_j (top) and wavelength 2π/θ\'_j (bottom); '
                 f'd = 128, base 10000, L = {L}; right of the dotted line the unscaled '
                 f'wavelength exceeds L" font "sans,13"\n'
                 'set logscale y\nset xrange [0:63]\nset xtics 0,16,64\n'
                 f'set arrow 1 from {j_ood - 0.5},graph 0 to {j_ood - 0.5},graph 1 nohead '
                 'dt 3 lw 1.5 lc rgb "gray30" back\n')
        for i, e in enumerate(scaled):
            title = LABEL[e] + (" (one list, all s)" if e == "longrope" else "")
            fp.write(f'set title "{title}"\nset yrange [4e-4:1.6]\n'
                     'set format y "%g"\nset ytics ("1/1024" 1.0/1024, "1/256" 1.0/256, '
                     '"1/64" 1.0/64, "1/16" 1.0/16, "1/4" 0.25, "1" 1)\n'
                     'set ytics add ("" 0.5 1, "" 0.125 1, "" 1.0/32 1, "" 1.0/128 1, '
                     '"" 1.0/512 1)\n'
                     + ('set ylabel "scale θ\'_j/θ_j"\n' if i == 0 else 'unset ylabel\n')
                     + 'unset xlabel\n'
                     + ('set key bottom left opaque box samplen 2 font "sans,10"\n' if i == 0
                        else 'unset key\n'))
            fp.write("plot " + ", \\\n     ".join(
                f'"atlas_{e}_s{s}.dat" using 1:2 with lines lw 2 lc rgb {S_COLOURS[k]} '
                f'dt {k + 1} title "s = {s}"' for k, s in enumerate(ss)) + "\n")
            fp.write('set yrange [1:1e8]\nset ytics auto\nset format y "10^{%L}"\n'
                     + ('set ylabel "wavelength (tokens)"\n' if i == 0 else 'unset ylabel\n')
                     + 'set xlabel "rotary pair j"\n'
                     + ('set key top left opaque box samplen 2 font "sans,10"\n' if i == 0
                        else 'unset key\n'))
            fp.write("plot " + ", \\\n     ".join(
                [f'"atlas_{e}_s{s}.dat" using 1:3 with lines lw 2 lc rgb {S_COLOURS[k]} '
                 f'dt {k + 1} notitle' for k, s in enumerate(ss)]
                + [f'"atlas_rope_s{ss[0]}.dat" using 1:4 with lines lw 1.5 lc rgb "black" dt 3 '
                   'title "unscaled"',
                   f'{L} with lines lw 1.5 lc rgb "gray30" dt 2 title "L = {L}"']) + "\n")
        fp.write("unset multiplot\n")
    render(gp, d)

    # Figure 2: angle range at s*L over the trained range, pairs that never turned in training.
    gp = os.path.join(d, "atlas_ood.gp")
    with open(gp, "w") as fp:
        gp_header(fp, "atlas_ood", 1800, 560)
        fp.write(f'set multiplot layout 1,{len(ss) + 1} title "Pairs whose unscaled wavelength '
                 f'exceeds L = {L} (j ≥ {j_ood}): largest angle at s·L over the largest angle in '
                 f'training (above 1: out of distribution)" font "sans,13"\n'
                 f'set logscale y\nset xrange [{j_ood - 0.5}:{n - 0.5}]\nset yrange [0.02:50]\n'
                 f'set xtics {j_ood},4,{n - 1}\nset xlabel "rotary pair j"\nunset key\n'
                 'set ytics ("1/32" 1.0/32, "1/8" 0.125, "1/2" 0.5, "1" 1, "2" 2, "8" 8, "32" 32)\n')
        for i, s in enumerate(ss):
            fp.write(f'set title "s = {s}"\n'
                     + ('set ylabel "angle at s·L / angle in training"\n' if i == 0
                        else 'unset ylabel\n')
                     + (f'set label 1 "PI, YaRN, Llama 3 on 1" at {j_ood + 1},0.75 left '
                        'font "sans,10" front\n' if i == len(ss) - 1 else 'unset label 1\n'))
            fp.write("plot 1 with lines lw 1.5 lc rgb \"gray30\" dt 2 notitle, \\\n     "
                     + ", \\\n     ".join(
                         f'"atlas_{e}_s{s}.dat" every ::{j_ood} using 1:5 with linespoints '
                         f'lw 2 lc rgb {STYLE[e][0]} dt {STYLE[e][1]} pt {STYLE[e][2]} ps 0.8 '
                         f'notitle' for e, _ in METHODS) + "\n")
        # the legend in a panel of its own (outside the data)
        fp.write('unset title\nunset xlabel\nunset ylabel\nunset border\nunset tics\nunset grid\n'
                 'unset logscale y\nset xrange [0:1]\nset yrange [0:1]\n'
                 'set key center center box samplen 3 spacing 1.4 font "sans,11"\n')
        fp.write("plot " + ", \\\n     ".join(
            f'NaN with linespoints lw 2 lc rgb {STYLE[e][0]} dt {STYLE[e][1]} pt {STYLE[e][2]} '
            f'title "{LABEL[e]}"' for e, _ in METHODS) + "\n")
        fp.write("unset multiplot\n")
    render(gp, d)

    # Figure 3: first negative distance of B(m) against s, with s*L.
    gp = os.path.join(d, "atlas_base_bound.gp")
    with open(gp, "w") as fp:
        gp_header(fp, "atlas_base_bound", 1000, 680)
        fp.write('set title "First distance m with B(m) = Σ_j cos(m θ\'_j) < 0 (Xu et al. 2024), '
                 f'd = 128, base 10000, L = {L}"\n'
                 'set logscale x 2\nset logscale y\nset xrange [1.7:38]\nset yrange [1000:200000]\n'
                 f'set xtics ({", ".join(str(s) for s in ss)})\nset format y "%g"\n'
                 'set xlabel "scale factor s"\nset ylabel "first negative distance (tokens)"\n'
                 'set key outside right top box samplen 3 spacing 1.3\n'
                 'set rmargin 26\n')
        fp.write(f"plot x*{L} with lines lw 2.5 lc rgb \"gray40\" dt 2 title \"s·L (target)\", \\\n     "
                 + ", \\\n     ".join(
                     f'"atlas_base_bound.dat" index {i} using 1:2 with linespoints lw 2 '
                     f'lc rgb {STYLE[e][0]} dt {STYLE[e][1]} pt {STYLE[e][2]} ps 1.2 '
                     f'title "{LABEL[e]}"' for i, (e, _) in enumerate(METHODS)) + "\n")
    render(gp, d)


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    runs, L, ss = load(argv[0])
    what = argv[1]
    if what == "--first-negative":
        first_negative(runs, L, ss)
    elif what == "--ood":
        ood(runs, L, ss)
    elif what == "--scales":
        scales(runs, L, int(argv[2]), [int(j) for j in argv[3:]])
    elif what == "--check":
        check(runs, L)
    elif what == "--summary":
        summary(runs, L, ss)
    elif what == "--plots":
        plots(runs, L, ss, argv[2])
    else:
        sys.exit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
