#!/usr/bin/env python3
"""LongRoPE factor lists for the scaling atlas (head_dim 128), built from
Phi-3.5-mini-instruct's real ones (head_dim 96).

usage: longrope_factors.py [CONFIG.json] [--head-dim D]
  CONFIG.json defaults to tests/data/phi3_longrope.json (Phi-3.5-mini-instruct's
  config.json: rope_theta 10000, original_max_position_embeddings 4096, 48-entry
  short_factor / long_factor; sources in tests/data/README.md).
Prints the two YAML lines `short_factor: !list [...]` and `long_factor: !list [...]`
that experiments/scaling-atlas/scaling-atlas.yaml carries.

Construction. A LongRoPE factor rescales one rotary pair's wavelength, so a
factor belongs to a wavelength, not to an index. Phi-3.5 and the atlas share
the base (10000) and the original length (4096); pair k of a head_dim-D model
has the unscaled frequency 10000^(-2k/D), which is that of Phi-3.5's pair
u = k * 96 / D. The atlas's factor for pair k is Phi-3.5's list linearly
interpolated at u (in u, between the neighbouring entries), and held at the
last entry beyond Phi-3.5's slowest pair (u > 47: pairs k > 62 at D = 128).
"""
import json
import math
import os
import sys


def resample(fs, n_src, n_dst):
    out = []
    for k in range(n_dst):
        u = k * n_src / n_dst  # same unscaled wavelength: 2k/(2 n_dst) = 2u/(2 n_src)
        i = min(int(math.floor(u)), n_src - 1)
        t = u - i
        if i + 1 >= n_src:
            out.append(fs[n_src - 1])
        else:
            out.append(fs[i] * (1 - t) + fs[i + 1] * t)
    return out


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    cfg = os.path.join(here, "..", "..", "tests", "data", "phi3_longrope.json")
    d = 128
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--head-dim":
            d = int(args.pop(0))
        else:
            cfg = a
    c = json.load(open(cfg))
    rs = c["rope_scaling"]
    src_pairs = len(rs["long_factor"])
    assert len(rs["short_factor"]) == src_pairs
    assert c.get("rope_theta", 10000.0) == 10000.0 and c["original_max_position_embeddings"] == 4096
    for key in ("short_factor", "long_factor"):
        vals = resample(rs[key], src_pairs, d // 2)
        print(f"    {key}: !list [" + ", ".join(f"{v:.6g}" for v in vals) + "]")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
