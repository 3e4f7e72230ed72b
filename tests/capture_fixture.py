#!/usr/bin/env python3
"""Writes a capture file as scripts/capture_qk.py does, without torch (the
values are deterministic, the writer is the script's own), for
tests/test_capture.sh; --corrupt breaks one thing the runner must refuse.

usage: capture_fixture.py SOURCE_ROOT OUT [--heads H] [--kv K] [--hd D]
       [--tokens T] [--layers 0,3] [--dtype fp32|bf16|fp16] [--corrupt MODE]
MODE: heads_text (metadata heads 'four'), no_version (no ropelab_capture),
      shape (metadata heads disagrees with the tensors), positions (starts at 7),
      config (embedded config.json's heads disagree), meta_number (a JSON
      number in __metadata__), layers_text (layers '0,x')
"""
import argparse
import json
import math
import os
import struct
import sys

ap = argparse.ArgumentParser()
ap.add_argument("root")
ap.add_argument("out")
ap.add_argument("--heads", type=int, default=4)
ap.add_argument("--kv", type=int, default=2)
ap.add_argument("--hd", type=int, default=16)
ap.add_argument("--tokens", type=int, default=64)
ap.add_argument("--layers", default="0,3")
ap.add_argument("--dtype", default="fp32")
ap.add_argument("--corrupt", default="")
a = ap.parse_args()
sys.path.insert(0, os.path.join(a.root, "scripts"))
import capture_qk as cq  # noqa: E402

layers = [int(x) for x in a.layers.split(",")]
fmt = {"fp32": ("F32", "<f"), "fp16": ("F16", "<e"), "bf16": ("BF16", None)}[a.dtype]


def pack(vals):
    if fmt[1]:
        return b"".join(struct.pack(fmt[1], v) for v in vals)
    # bf16: the high half of the float32 (truncated; exact for these values)
    return b"".join(struct.pack("<f", v)[2:] for v in vals)


def values(layer, which, heads):
    # a token-shared mean in the slow pairs plus a varying part: RoPE-like structure
    out = []
    for t in range(a.tokens):
        for h in range(heads):
            for d in range(a.hd):
                base = 2.0 if (d % (a.hd // 2)) >= a.hd // 4 else 0.0
                out.append(round(base + math.sin(0.7 * t + 1.3 * h + 0.37 * d + layer + ord(which)), 2) / 2)
    return out


entries = []
for L in layers:
    for which, heads in (("q", a.heads), ("k", a.kv), ("v", a.kv)):
        entries.append(("layer.%d.%s" % (L, which), fmt[0], (a.tokens, heads, a.hd), pack(values(L, which, heads))))
start = 7 if a.corrupt == "positions" else 0
entries.append(("positions", "I64", (a.tokens,), b"".join(struct.pack("<q", start + i) for i in range(a.tokens))))
cfg = {"model_type": "llama", "num_attention_heads": a.heads, "num_key_value_heads": a.kv,
       "head_dim": a.hd, "hidden_size": a.heads * a.hd, "num_hidden_layers": 4,
       "max_position_embeddings": 2048, "rope_theta": 10000.0}
if a.corrupt == "config":
    cfg["num_attention_heads"] = 2 * a.heads
meta = {"ropelab_capture": "1", "model_id": "fixture/llama", "layers": a.layers, "dtype": a.dtype,
        "compute_dtype": "float32", "tokens": str(a.tokens), "heads": str(a.heads),
        "kv_heads": str(a.kv), "head_dim": str(a.hd), "qk_source": "q_proj/k_proj/v_proj",
        "config_json": json.dumps(cfg), "text_sha256": "0" * 64, "text_name": "fixture"}
if a.corrupt == "heads_text":
    meta["heads"] = "four"
elif a.corrupt == "no_version":
    del meta["ropelab_capture"]
elif a.corrupt == "shape":
    meta["heads"] = str(2 * a.heads)
elif a.corrupt == "layers_text":
    meta["layers"] = "0,x"
cq.write_safetensors(a.out, entries, meta)
if a.corrupt == "meta_number":  # rewrite the header with a number in __metadata__
    with open(a.out, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    h = json.loads(blob[8:8 + n])
    h["__metadata__"]["tokens"] = a.tokens
    text = json.dumps(h).encode()
    with open(a.out, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + blob[8 + n:])
