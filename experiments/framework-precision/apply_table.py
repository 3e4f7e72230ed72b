#!/usr/bin/env python3
"""Max |y - y_double| of every framework emulation mode at positions 2^12,
2^17 and 2^20, one `ropelab apply --json` per cell (docs/rope.md, "Measured:
max |y - y_double| per mode").

usage: apply_table.py ROPELAB [WORKDIR]
Input: 64 tokens x 8 heads x 128 dims of N(0, 1) (Python's random.gauss,
seed 0, rounded to float32), written as .npy here; the tokens sit at
P-63 .. P. Prints a markdown table: per mode and dtype the max abs error
against the double reference at each P, and the device's largest difference
from the CPU emulation of the same arithmetic at 2^20.
"""
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

MODES = [  # (label, --set values)
    ("ropelab `fp32`", "fp32", []),
    ("hf", "fp32", ["precision=hf"]),
    ("hf", "bf16", ["precision=hf", "dtype=bf16"]),
    ("hf", "fp16", ["precision=hf", "dtype=fp16"]),
    ("hf, inv_freq bf16", "bf16", ["precision=hf", "dtype=bf16", "inv_freq_dtype=bf16"]),
    ("hf, tf32", "fp32", ["precision=hf", "tf32=true"]),
    ("vllm", "fp32", ["precision=vllm"]),
    ("vllm", "bf16", ["precision=vllm", "dtype=bf16"]),
    ("ggml-cpu", "fp32", ["precision=ggml-cpu"]),
    ("ggml-cpu", "fp16", ["precision=ggml-cpu", "dtype=fp16"]),
    ("ggml-vulkan", "fp32", ["precision=ggml-vulkan"]),
    ("ggml-vulkan", "fp16", ["precision=ggml-vulkan", "dtype=fp16"]),
    ("cuda-fast", "fp32", ["precision=cuda-fast"]),
    ("cuda-fast", "fp16", ["precision=cuda-fast", "dtype=fp16"]),
]
POS = [1 << 12, 1 << 17, 1 << 20]


def write_npy(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else ""))
    pad = 64 - (10 + len(header) + 1) % 64
    header += " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(values), *values))


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    exe = argv[1]
    work = argv[2] if len(argv) > 2 else tempfile.mkdtemp(prefix="apply-table.")
    rng = random.Random(0)
    q = os.path.join(work, "q.npy")
    write_npy(q, (64, 8, 128), [rng.gauss(0.0, 1.0) for _ in range(64 * 8 * 128)])
    print("| mode | dtype | P = 2^12 | 2^17 | 2^20 | emu diff at 2^20 |")
    print("|---|---|---|---|---|---|")
    for label, dt, sets in MODES:
        cells, emu = [], "—"
        for p in POS:
            cmd = [exe, "apply", "--encoding", "rope", "--input", q, "--positions",
                   f"{p - 63}:{p + 1}", "--out", os.path.join(work, "y.npy"), "--json"]
            for s in sets:
                cmd += ["--set", s]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}", file=sys.stderr)
                return 1
            d = json.loads(r.stdout)[0]
            cells.append(f"{d['reference']['max_abs_error']:.3g}")
            if p == POS[-1] and "emulation" in d:
                emu = f"{d['emulation']['max_abs_error']:.2g}"
        print(f"| {label} | {dt} | " + " | ".join(cells) + f" | {emu} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
