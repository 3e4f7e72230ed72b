#!/usr/bin/env python3
"""Independent check of base_bound's numbers, in Python's double (math.cos),
sharing no code with ropelab: for each base b given, the first m >= 0 with
f_b(m) = sum_{i<d/2} cos(m b^(-2i/d)) < 0 (d = 128), and f_b there.

usage: check_double.py BASE...   (slow: pure Python, ~1 s per 10^4 m)
"""
import math
import sys


def first_negative(b, d=128, limit=1 << 21):
    th = [b ** (-2 * i / d) for i in range(d // 2)]
    for m in range(limit):
        s = sum(math.cos(m * t) for t in th)
        if s < 0:
            return m, s
    return None, None


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__.strip())
        sys.exit(2)
    for a in sys.argv[1:]:
        m, s = first_negative(float(a))
        print(f"base {a}: first negative m = {m}, f = {s:.4f}" if m is not None
              else f"base {a}: no negative m below 2^21")
