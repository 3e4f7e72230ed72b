#!/usr/bin/env python3
"""capture_qk.py - pre-rotation Q/K/V of a Hugging Face causal LM on a text file.

    scripts/capture_qk.py MODEL TEXTFILE --layers 0,5,-1 --out FILE.safetensors
        [--dtype fp32|bf16|fp16] [--max-tokens N] [--device cpu|cuda]
        [--torch-dtype auto|fp32|bf16|fp16]

Loads MODEL (a hub id or a local directory) with transformers'
AutoTokenizer / AutoModelForCausalLM, tokenizes TEXTFILE (one sequence,
positions 0..N-1), runs one forward pass with forward hooks on each chosen
layer's attention projections (stopped by the hook that completes the last
chosen layer: no later layer, no logits over the vocabulary) and writes, to
one .safetensors file:

    layer.<L>.q   [tokens][heads][head_dim]      query before RoPE
    layer.<L>.k   [tokens][kv_heads][head_dim]   key before RoPE
    layer.<L>.v   [tokens][kv_heads][head_dim]   value
    positions     I64 [tokens]                   0..tokens-1

and __metadata__ (strings): ropelab_capture (format version), model_id,
layers, dtype, compute_dtype, tokens, heads, kv_heads, head_dim, qk_source,
config_json (the model's config.json text, so ropelab imports the model's
encoding through its one config.json reader), text_sha256, text_name,
torch_version, transformers_version.

"Pre-rotation" is what the model rotates: the projection outputs, or, for
families that normalise q and k per head before RoPE (q_norm / k_norm:
Qwen3, Gemma 3, OLMo 2), the normalised ones. Supported layouts:
model.model.layers[i].self_attn with q_proj/k_proj/v_proj (Llama, Mistral,
Qwen, Gemma, ...) or a fused qkv_proj split as [q | k | v] (Phi-3); fused
per-head layouts (query_key_value of GPT-NeoX / Falcon / BLOOM, c_attn of
GPT-2) are refused by name.

`ropelab run` reads the file as `data: {source: capture, path: FILE, layer: L}`
and can take the model from it (`model: {capture: FILE}`); docs/runner.md.

The capture core (capture(), write_safetensors()) needs torch only, not
transformers; tests/test_capture.py runs it on a small torch module with
HF's attribute layout. The .safetensors file is written by hand (8-byte
little-endian header length, JSON header, raw little-endian data), so the
`safetensors` package is not needed.
"""
import argparse
import hashlib
import json
import os
import struct
import sys

FORMAT_VERSION = "1"
DTYPES = ("fp32", "bf16", "fp16")


class CaptureError(Exception):
    """A problem with the model, the text or the arguments (exit 2)."""


# ---- the .safetensors writer (no torch needed) ---------------------------------

def write_safetensors(path, entries, metadata):
    """Writes entries [(name, dtype, shape, data bytes)] (dtype a safetensors
    name: F32, F16, BF16, I64, I32; data little-endian) and the string map
    metadata to path: built under path.tmp.<pid>, renamed when complete."""
    sizes = {"F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4}
    header = {}
    offset = 0
    for name, dtype, shape, data in entries:
        if dtype not in sizes:
            raise CaptureError("tensor %s: dtype %s is not written" % (name, dtype))
        n = 1
        for d in shape:
            n *= int(d)
        if n * sizes[dtype] != len(data):
            raise CaptureError("tensor %s: %d bytes for shape %s x %s" % (name, len(data), list(shape), dtype))
        if name in header or name == "__metadata__":
            raise CaptureError("tensor name %s given twice or reserved" % name)
        header[name] = {"dtype": dtype, "shape": [int(d) for d in shape],
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    for k, v in metadata.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise CaptureError("metadata %r: keys and values must be strings" % (k,))
    header["__metadata__"] = dict(metadata)
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)  # the data start 8-byte aligned, as safetensors does
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for _, _, _, data in entries:
                f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# ---- the capture core (torch, no transformers) ----------------------------------

def parse_layers(spec, n_layers):
    """'0,5,-1' -> sorted distinct indices in [0, n_layers); negatives count
    from the end, as Python does."""
    out = set()
    for part in spec.split(","):
        part = part.strip()
        try:
            i = int(part, 10)
        except ValueError:
            raise CaptureError("--layers %r: %r is not an integer" % (spec, part))
        j = i + n_layers if i < 0 else i
        if not 0 <= j < n_layers:
            raise CaptureError("--layers %r: layer %d is outside the model's %d layers (0..%d, or -%d..-1)"
                               % (spec, i, n_layers, n_layers - 1, n_layers))
        out.add(j)
    if not out:
        raise CaptureError("--layers %r: no layer given" % spec)
    return sorted(out)


def _cfg(config, key, default=None):
    v = getattr(config, key, None)
    return default if v is None else v


def model_shape(config):
    """(heads, kv_heads, head_dim, n_layers) from an HF config (a text_config
    inside a multimodal config is used when present)."""
    config = getattr(config, "text_config", None) or config
    heads = _cfg(config, "num_attention_heads")
    layers = _cfg(config, "num_hidden_layers")
    if not heads or not layers:
        raise CaptureError("config has no num_attention_heads / num_hidden_layers (not a decoder LM config?)")
    kv = _cfg(config, "num_key_value_heads", heads)
    hd = _cfg(config, "head_dim") or _cfg(config, "hidden_size", 0) // heads
    if not hd or heads % kv:
        raise CaptureError("config: heads %d, kv_heads %d, head_dim %d do not form a shape" % (heads, kv, hd))
    return int(heads), int(kv), int(hd), int(layers)


def decoder_layers(model):
    """model.model.layers (HF's decoder layout), or a refusal naming what is there."""
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if layers is None:
        for name in ("transformer", "gpt_neox"):
            if getattr(model, name, None) is not None:
                raise CaptureError("model keeps its layers under %s (not model.model.layers); this family "
                                   "is not supported" % name)
        raise CaptureError("model has no model.model.layers (HF decoder layout expected)")
    return layers


def attention_plan(attn, heads, kv, hd):
    """{'q': module, 'k': module, 'v': module} to hook, plus how to cut
    their outputs: ('sep', None) or ('fused', module). Returns (plan, source)."""
    names = dict(attn.named_children())
    for bad, fam in (("query_key_value", "GPT-NeoX / Falcon / BLOOM"), ("c_attn", "GPT-2"),
                     ("Wqkv", "MPT")):
        if bad in names:
            raise CaptureError("self_attn has a fused %s (%s: a per-family head layout); not supported"
                               % (bad, fam))
    if "v_proj" in names and "q_proj" in names and "k_proj" in names:
        for which, n, what in (("q_proj", heads, "heads"), ("k_proj", kv, "kv_heads"), ("v_proj", kv, "kv_heads")):
            out = getattr(names[which], "out_features", None)
            if out is not None and out != n * hd:
                raise CaptureError("%s has %d outputs, not %s x head_dim = %d x %d (config and weights disagree, "
                                   "or v has its own head size)" % (which, out, what, n, hd))
        plan = {"q": names["q_proj"], "k": names["k_proj"], "v": names["v_proj"]}
        source = "q_proj/k_proj/v_proj"
        if "q_norm" in names and "k_norm" in names:
            # normalised before RoPE: the rotated vectors are the norms' outputs
            plan["q"], plan["k"] = names["q_norm"], names["k_norm"]
            source = "q_norm/k_norm (after q_proj/k_proj), v_proj"
        return plan, source, None
    if "qkv_proj" in names:
        m = names["qkv_proj"]
        out = getattr(m, "out_features", None)
        if out is not None and out != (heads + 2 * kv) * hd:
            raise CaptureError("qkv_proj has %d outputs, not (heads + 2 kv_heads) x head_dim = %d"
                               % (out, (heads + 2 * kv) * hd))
        return {"qkv": m}, "qkv_proj split [q | k | v]", m
    raise CaptureError("self_attn has none of q_proj/k_proj/v_proj or qkv_proj (children: %s)"
                       % ", ".join(sorted(names)))


_TORCH_DTYPES = {}


def _st_dtype(t):
    import torch
    if not _TORCH_DTYPES:
        _TORCH_DTYPES.update({torch.float32: ("F32", torch.int32), torch.float16: ("F16", torch.int16),
                              torch.bfloat16: ("BF16", torch.int16), torch.int64: ("I64", torch.int64),
                              torch.int32: ("I32", torch.int32)})
    return _TORCH_DTYPES[t.dtype]


def tensor_entry(name, t):
    """(name, dtype, shape, little-endian bytes) of a CPU tensor."""
    dtype, as_int = _st_dtype(t)
    a = t.detach().cpu().contiguous().view(as_int).numpy()
    return (name, dtype, tuple(t.shape), a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes())


class _Captured(Exception):
    """Raised by the last hook once every chosen layer's Q/K/V is held: the
    forward pass stops there (no later layer, no final norm, no logits over
    the vocabulary, which for Llama 3 at 32k tokens alone are ~8 GB)."""


def capture(model, input_ids, layers, dtype="fp32", config=None):
    """Runs model on input_ids ([1][tokens] long) with hooks on the chosen
    layers; returns ({"layer.L.q": tensor [T][H][D], ...}, info). The model
    is called as model(input_ids=..., position_ids=...) with positions
    0..T-1. dtype: what the tensors are stored as."""
    import torch
    if dtype not in DTYPES:
        raise CaptureError("--dtype %r: one of %s" % (dtype, ", ".join(DTYPES)))
    if input_ids.dim() != 2 or input_ids.shape[0] != 1 or input_ids.shape[1] == 0:
        raise CaptureError("input_ids must be [1][tokens] with at least one token (got %s)"
                           % list(input_ids.shape))
    config = config if config is not None else model.config
    heads, kv, hd, n_layers = model_shape(config)
    blocks = decoder_layers(model)
    if len(blocks) != n_layers:
        raise CaptureError("model has %d layers but its config says %d" % (len(blocks), n_layers))
    T = int(input_ids.shape[1])
    got, handles, sources, stats = {}, [], set(), {}
    store = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    compute = set()

    wanted = set()

    def hook(layer, which):
        def fn(_module, _inputs, output):
            if isinstance(output, (tuple, list)):
                output = output[0]
            got[(layer, which)] = output.detach()
            compute.add(str(output.dtype).replace("torch.", ""))
            if wanted <= set(got):
                raise _Captured()
        return fn

    try:
        for L in layers:
            attn = getattr(blocks[L], "self_attn", None)
            if attn is None:
                raise CaptureError("layer %d has no self_attn" % L)
            plan, source, _ = attention_plan(attn, heads, kv, hd)
            sources.add(source)
            for which, m in plan.items():
                wanted.add((L, which))
                handles.append(m.register_forward_hook(hook(L, which)))
        positions = torch.arange(T, dtype=torch.long, device=input_ids.device).unsqueeze(0)
        stats["stopped_early"] = False
        with torch.no_grad():
            try:
                model(input_ids=input_ids, position_ids=positions)
            except _Captured:
                stats["stopped_early"] = True
    finally:
        for h in handles:
            h.remove()
    out = {}
    for L in layers:
        if (L, "qkv") in got:
            x = got[(L, "qkv")].reshape(T, (heads + 2 * kv) * hd)
            parts = {"q": x[:, :heads * hd], "k": x[:, heads * hd:(heads + kv) * hd],
                     "v": x[:, (heads + kv) * hd:]}
        else:
            parts = {}
            for which in "qkv":
                if (L, which) not in got:
                    raise CaptureError("layer %d: the %s hook never ran (the forward pass did not call it)"
                                       % (L, which))
                parts[which] = got[(L, which)]
        for which, n in (("q", heads), ("k", kv), ("v", kv)):
            x = parts[which]
            if x.numel() != T * n * hd:
                raise CaptureError("layer %d: %s output has %d elements, not tokens x %s x head_dim = %d"
                                   % (L, which, x.numel(), "heads" if which == "q" else "kv_heads", T * n * hd))
            out["layer.%d.%s" % (L, which)] = x.reshape(T, n, hd).to(store).cpu()
    out["positions"] = positions.reshape(T).cpu()
    info = {"heads": heads, "kv_heads": kv, "head_dim": hd, "tokens": T, "layers": layers,
            "qk_source": "; ".join(sorted(sources)), "compute_dtype": ",".join(sorted(compute)),
            "stopped_early": stats["stopped_early"]}
    return out, info


def capture_metadata(info, dtype, model_id, config_json, text_sha256, text_name, transformers_version=""):
    import torch
    return {
        "ropelab_capture": FORMAT_VERSION,
        "model_id": model_id,
        "layers": ",".join(str(L) for L in info["layers"]),
        "dtype": dtype,
        "compute_dtype": info["compute_dtype"],
        "tokens": str(info["tokens"]),
        "heads": str(info["heads"]),
        "kv_heads": str(info["kv_heads"]),
        "head_dim": str(info["head_dim"]),
        "qk_source": info["qk_source"],
        "config_json": config_json,
        "text_sha256": text_sha256,
        "text_name": text_name,
        "torch_version": torch.__version__,
        "transformers_version": transformers_version,
    }


def write_capture(path, tensors, metadata):
    names = sorted(n for n in tensors if n != "positions") + ["positions"]
    write_safetensors(path, [tensor_entry(n, tensors[n]) for n in names], metadata)


# ---- the command (transformers imported here only) ---------------------------------

def _config_json(model_id, config):
    """The config.json text: the file itself where it can be found (a local
    directory or the hub cache), else the config as transformers holds it."""
    local = os.path.join(model_id, "config.json")
    if os.path.isfile(local):
        with open(local, encoding="utf-8") as f:
            return f.read()
    try:
        from transformers.utils import cached_file
        p = cached_file(model_id, "config.json")
        if p:
            with open(p, encoding="utf-8") as f:
                return f.read()
    except Exception:  # noqa: BLE001 - fall back to the loaded config
        pass
    return config.to_json_string(use_diff=False)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="hub id or local directory")
    ap.add_argument("textfile")
    ap.add_argument("--layers", required=True, help="comma-separated layer indices, negative from the end")
    ap.add_argument("--out", required=True, help="output .safetensors")
    ap.add_argument("--dtype", default="fp32", choices=DTYPES, help="stored dtype (default fp32)")
    ap.add_argument("--torch-dtype", default="auto", choices=("auto",) + DTYPES,
                    help="dtype the model is loaded and run in (default: the config's)")
    ap.add_argument("--max-tokens", type=int, default=0, help="keep the first N tokens (0: all)")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    a = ap.parse_args(argv)
    try:
        if a.max_tokens < 0:
            raise CaptureError("--max-tokens %d: must be >= 0" % a.max_tokens)
        with open(a.textfile, "rb") as f:
            raw = f.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CaptureError("%s: not UTF-8 text (%s)" % (a.textfile, e))
        try:
            import torch
            import transformers
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:
            raise CaptureError("needs torch and transformers (%s); pip install torch transformers" % e)
        td = {"auto": "auto", "fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[a.torch_dtype]
        tok = AutoTokenizer.from_pretrained(a.model)
        model = AutoModelForCausalLM.from_pretrained(a.model, torch_dtype=td).to(a.device).eval()
        ids = tok(text, return_tensors="pt")["input_ids"]
        if a.max_tokens:
            ids = ids[:, :a.max_tokens]
        if ids.shape[1] == 0:
            raise CaptureError("%s: no tokens" % a.textfile)
        layers = parse_layers(a.layers, model_shape(model.config)[3])
        tensors, info = capture(model, ids.to(a.device), layers, a.dtype)
        meta = capture_metadata(info, a.dtype, a.model, _config_json(a.model, model.config),
                                hashlib.sha256(raw).hexdigest(), os.path.basename(a.textfile),
                                transformers.__version__)
        write_capture(a.out, tensors, meta)
    except (CaptureError, OSError) as e:
        print("capture_qk.py: error: %s" % e, file=sys.stderr)
        return 2
    print("capture_qk.py: wrote %s: %d tokens, layers %s, heads %d, kv_heads %d, head_dim %d, %s"
          % (a.out, info["tokens"], meta["layers"], info["heads"], info["kv_heads"], info["head_dim"], a.dtype))
    return 0


if __name__ == "__main__":
    sys.exit(main())
