#!/usr/bin/env python3
"""The frameworks' own frequency programs, transcribed, against ropelab's
emulation of them (issue 27 item 1).

Each function below is a transcription of the framework's code, operation
for operation, in torch on float32 tensors (transformers
src/transformers/modeling_rope_utils.py: _compute_default_rope_parameters,
_compute_linear_scaling_rope_parameters, _compute_dynamic_ntk_parameters
(at init and in dynamic_rope_update's forward call, where seq_len is an
int64 tensor), _compute_yarn_parameters (with mscale, truncate),
_compute_longrope_parameters, _compute_llama3_parameters; vLLM
vllm/model_executor/layers/rotary_embedding/: RotaryEmbedding.
_compute_inv_freq, YaRNScalingRotaryEmbedding, Llama3RotaryEmbedding,
Phi3LongRoPEScaledRotaryEmbedding, DynamicNTKScalingRotaryEmbedding and
DynamicNTKAlphaRotaryEmbedding), with one substitution: `a ** b` is POW(a,
b), the C library's correctly rounded powf, because torch's CPU kernel uses
SLEEF's powf (1 ulp) on AVX2 machines and CUDA its own: the power is the
platform's, not the framework's program. `ropelab freqs --framework hf|vllm
--json` must give the transcription's float32 inv_freq bit for bit on every
configuration. The test also counts how often torch's own pow would change
a pair (the platform part), and how many pairs ropelab's former emulation
(the double inv_freq rounded to float32) had wrong.

usage: test_rope_frameworks.py path/to/ropelab   (exit 77: torch missing)
"""
import ctypes
import json
import math
import struct
import subprocess
import sys

try:
    import torch
except ImportError:
    print("SKIP: torch is not importable (python3-torch)")
    sys.exit(77)

BIN = sys.argv[1]
libm = ctypes.CDLL("libm.so.6")
libm.powf.restype = ctypes.c_float
libm.powf.argtypes = [ctypes.c_float, ctypes.c_float]
NATIVE = False  # True: torch's own pow (the platform's), for the count


def POW(a, b):
    """a ** b in float32, elementwise, the C library's powf; except what
    torch's kernel computes in double: a 0-dim tensor to a Python number's
    power goes through its scalar loop, std::pow(float, double), in double
    (measured: all of 2000 such results equal fl32(pow(double, double)),
    none powf(x, fl32(e)))."""
    if NATIVE:
        return a ** b
    if isinstance(a, torch.Tensor) and a.dim() == 0 and not isinstance(b, torch.Tensor):
        return torch.tensor(math.pow(a.item(), b), dtype=torch.float32)
    ta = a if isinstance(a, torch.Tensor) else torch.tensor(a, dtype=torch.float32)
    tb = b if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=torch.float32)
    ta, tb = torch.broadcast_tensors(ta.float(), tb.float())
    out = [libm.powf(x, y) for x, y in zip(ta.reshape(-1).tolist(), tb.reshape(-1).tolist())]
    return torch.tensor(out, dtype=torch.float32).reshape(ta.shape)


# ---- transformers ------------------------------------------------------------

def hf_default(c, seq_len=None):
    base, dim = c["rope_theta"], c["dim"]
    return 1.0 / POW(base, torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float) / dim)


def hf_linear(c, seq_len=None):
    inv_freq = hf_default(c)
    inv_freq /= c["factor"]
    return inv_freq


def hf_dynamic(c, seq_len=None):
    base, dim, M, factor = c["rope_theta"], c["dim"], c["max_position_embeddings"], c["factor"]
    if seq_len is None:
        seq_len = M
    elif isinstance(seq_len, torch.Tensor):
        seq_len = torch.maximum(seq_len, torch.tensor(M, dtype=seq_len.dtype))
    else:
        seq_len = max(seq_len, M)
    x = (factor * seq_len / M) - (factor - 1)
    base = base * (POW(x, dim / (dim - 2)) if isinstance(x, torch.Tensor) else x ** (dim / (dim - 2)))
    return 1.0 / POW(base, torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float) / dim)


def hf_yarn(c, seq_len=None):
    base, dim, factor = c["rope_theta"], c["dim"], c["factor"]
    original_max_position_embeddings = c.get("original_max_position_embeddings") or c["max_position_embeddings"]
    beta_fast = c.get("beta_fast") or 32
    beta_slow = c.get("beta_slow") or 1

    def find_correction_dim(num_rotations, dim, base, max_position_embeddings):
        return (dim * math.log(max_position_embeddings / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    def find_correction_range(low_rot, high_rot, dim, base, max_position_embeddings, truncate):
        low = find_correction_dim(low_rot, dim, base, max_position_embeddings)
        high = find_correction_dim(high_rot, dim, base, max_position_embeddings)
        if truncate:
            low = math.floor(low)
            high = math.ceil(high)
        return max(low, 0), min(high, dim - 1)

    def linear_ramp_factor(min, max, dim):
        if min == max:
            max += 0.001
        linear_func = (torch.arange(dim, dtype=torch.float32) - min) / (max - min)
        return torch.clamp(linear_func, 0, 1)

    pos_freqs = POW(base, torch.arange(0, dim, 2).to(dtype=torch.float) / dim)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (factor * pos_freqs)
    truncate = c.get("truncate", True)
    low, high = find_correction_range(beta_fast, beta_slow, dim, base, original_max_position_embeddings, truncate)
    inv_freq_extrapolation_factor = 1 - linear_ramp_factor(low, high, dim // 2).to(dtype=torch.float)
    return (inv_freq_interpolation * (1 - inv_freq_extrapolation_factor)
            + inv_freq_extrapolation * inv_freq_extrapolation_factor)


def hf_longrope(c, seq_len=None):
    base, dim = c["rope_theta"], c["dim"]
    original_max_position_embeddings = c["original_max_position_embeddings"]
    if seq_len and seq_len > original_max_position_embeddings:
        ext_factors = torch.tensor(c["long_factor"], dtype=torch.float32)
    else:
        ext_factors = torch.tensor(c["short_factor"], dtype=torch.float32)
    inv_freq_shape = torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
    return 1.0 / (ext_factors * POW(base, inv_freq_shape))


def hf_llama3(c, seq_len=None):
    inv_freq = hf_default(c)
    factor, low_freq_factor, high_freq_factor = c["factor"], c["low_freq_factor"], c["high_freq_factor"]
    old_context_len = c["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)


# ---- vLLM ----------------------------------------------------------------------

def vllm_base_inv(base, rotary_dim):
    return 1.0 / POW(base, torch.arange(0, rotary_dim, 2, dtype=torch.float) / rotary_dim)


def vllm_default(c, seq_len=None):
    return vllm_base_inv(c["rope_theta"], c["dim"])


def vllm_yarn(c, seq_len=None):
    base, rotary_dim, scaling_factor = c["rope_theta"], c["dim"], c["factor"]
    max_position_embeddings = c["original_max_position_embeddings"]  # get_rope passes the original
    beta_fast, beta_slow = c.get("beta_fast") or 32, c.get("beta_slow") or 1
    truncate = c.get("truncate", True)

    def find_dim(num_rotations, dim, base, mpe):
        return (dim * math.log(mpe / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    low = find_dim(beta_fast, rotary_dim, base, max_position_embeddings)
    high = find_dim(beta_slow, rotary_dim, base, max_position_embeddings)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, rotary_dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(rotary_dim // 2, dtype=torch.float) - low) / (high - low), 0, 1)
    pos_freqs = POW(base, torch.arange(0, rotary_dim, 2, dtype=torch.float) / rotary_dim)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (scaling_factor * pos_freqs)
    inv_freq_mask = 1 - ramp
    return inv_freq_interpolation * (1 - inv_freq_mask) + inv_freq_extrapolation * inv_freq_mask


def vllm_llama3(c, seq_len=None):
    inv_freqs = vllm_base_inv(c["rope_theta"], c["dim"])
    orig, lf, hf, s = c["original_max_position_embeddings"], c["low_freq_factor"], c["high_freq_factor"], c["factor"]
    low_freq_wavelen, high_freq_wavelen = orig / lf, orig / hf
    wave_len = 2 * math.pi / inv_freqs
    smooth = (orig / wave_len - lf) / (hf - lf) if lf != hf else 0
    return torch.where(wave_len < high_freq_wavelen, inv_freqs,
                       torch.where(wave_len > low_freq_wavelen, inv_freqs / s,
                                   (1 - smooth) * inv_freqs / s + smooth * inv_freqs))


def vllm_longrope(c, seq_len=None):
    use_long = seq_len is not None and seq_len > c["original_max_position_embeddings"]
    rescale_factors = torch.tensor(c["long_factor"] if use_long else c["short_factor"], dtype=torch.float32)
    return 1.0 / (rescale_factors * POW(c["rope_theta"], torch.arange(0, c["dim"], 2, dtype=torch.float) / c["dim"]))


def vllm_dynamic(c, seq_len=None):
    base, d = c["rope_theta"], c["dim"]
    if c.get("alpha"):
        base = base * (c["alpha"] ** (d / (d - 2)))
    else:
        M, s = c["max_position_embeddings"], c["factor"]
        max_len = M * s
        base = base * ((s * max_len / M) - (s - 1)) ** (d / (d - 2))
    return vllm_base_inv(base, d)


# ---- the configurations ---------------------------------------------------------

def flags(c):
    out = ["--rope-type", c["type"], "--head-dim", str(c["head_dim"]), "--rope-theta", repr(float(c["rope_theta"]))]
    if c["dim"] != c["head_dim"]:
        out += ["--rotary-dim", str(c["dim"])]
    for k, f in (("factor", "--factor"), ("original_max_position_embeddings", "--original-max-position-embeddings"),
                 ("max_position_embeddings", "--max-position-embeddings"), ("beta_fast", "--beta-fast"),
                 ("beta_slow", "--beta-slow"), ("mscale", "--mscale"), ("mscale_all_dim", "--mscale-all-dim"),
                 ("low_freq_factor", "--low-freq-factor"), ("high_freq_factor", "--high-freq-factor"),
                 ("alpha", "--alpha")):
        if c.get(k) is not None:
            out += [f, repr(c[k]) if isinstance(c[k], float) else str(c[k])]
    if c.get("truncate") is False:
        out.append("--no-truncate")
    for k, f in (("short_factor", "--short-factor"), ("long_factor", "--long-factor")):
        if c.get(k):
            out += [f, ",".join(repr(v) for v in c[k])]
    if c.get("semantics"):
        out += ["--semantics", c["semantics"]]
    return out


def configs():
    dims = [(64, 64), (96, 96), (128, 128), (128, 64), (256, 256)]
    bases = [10000.0, 1000000.0]
    out = []
    for hd, rd in dims:
        for b in bases:
            base = {"head_dim": hd, "dim": rd, "rope_theta": b}
            out.append(dict(base, type="default"))
            for s in (2.0, 3.7, 8.0, 32.0):
                out.append(dict(base, type="linear", factor=s))
            for s, L in ((4.0, 4096), (16.0, 2048), (3.7, 32768), (40.0, 4096)):
                out.append(dict(base, type="yarn", factor=s, original_max_position_embeddings=L))
            out.append(dict(base, type="yarn", factor=4.0, original_max_position_embeddings=4096,
                            beta_fast=16.0, beta_slow=2.0, truncate=False))
            out.append(dict(base, type="yarn", factor=40.0, original_max_position_embeddings=4096,
                            mscale=1.0, mscale_all_dim=0.707))
            for s, lo, hi, L in ((8.0, 1.0, 4.0, 8192), (32.0, 1.0, 4.0, 8192), (16.0, 2.0, 3.0, 4000)):
                out.append(dict(base, type="llama3", factor=s, low_freq_factor=lo, high_freq_factor=hi,
                                original_max_position_embeddings=L))
            np_ = rd // 2
            short = [1.0 + 0.0137 * j for j in range(np_)]
            long = [1.0 + 0.731 * j + 0.01 * (j % 3) for j in range(np_)]
            for n in (None, 2048, 131072):
                out.append(dict(base, type="longrope", original_max_position_embeddings=4096,
                                max_position_embeddings=131072, short_factor=short, long_factor=long,
                                seq_len=n))
            for s, M in ((2.0, 4096), (3.7, 2048), (8.0, 8192)):
                for n in (None, 1000, 10000, 131072, 1048576):
                    out.append(dict(base, type="dynamic", factor=s, max_position_embeddings=M, seq_len=n))
                out.append(dict(base, type="dynamic", factor=s, max_position_embeddings=M, semantics="vllm"))
            out.append(dict(base, type="dynamic", alpha=1000.0, semantics="vllm"))
    return out


HF = {"default": hf_default, "linear": hf_linear, "dynamic": hf_dynamic, "yarn": hf_yarn,
      "longrope": hf_longrope, "llama3": hf_llama3}
VLLM = {"default": vllm_default, "yarn": vllm_yarn, "llama3": vllm_llama3, "longrope": vllm_longrope,
        "dynamic": vllm_dynamic}


def transcription(fw, c):
    n = c.get("seq_len")
    if fw == "hf" and c["type"] == "dynamic":
        if c.get("semantics") == "vllm":
            return None
        # above M the forward pass passes max(position_ids) + 1, an int64 tensor
        arg = torch.tensor(n, dtype=torch.int64) if n and n > c["max_position_embeddings"] else None
        return hf_dynamic(c, arg)
    if fw == "vllm" and c["type"] == "dynamic" and c.get("semantics") != "vllm":
        return None
    prog = (HF if fw == "hf" else VLLM).get(c["type"])
    return prog(c, n) if prog else None


# ---- whole outputs: the frameworks' rotation in bf16 / fp16 -----------------------

def hf_rotate(q, pos, inv, af, dtype):
    """LlamaRotaryEmbedding.forward + apply_rotary_pos_emb (one batch):
    freqs = inv_freq @ positions in float32, cos/sin * attention_scaling,
    .to(dtype), q * cos + rotate_half(q) * sin in dtype."""
    freqs = (inv[None, :, None].float() @ torch.tensor(pos)[None, None, :].float()).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = (emb.cos() * af).to(dtype)[:, None], (emb.sin() * af).to(dtype)[:, None]
    x = torch.tensor(q).to(dtype).transpose(0, 1)[None]
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    y = (x * cos) + (torch.cat((-x2, x1), dim=-1) * sin)
    return y[0].transpose(0, 1).float().numpy()


def vllm_rotate(q, pos, inv, af, dtype):
    """RotaryEmbedding._compute_cos_sin_cache (einsum of arange and inv_freq,
    cos/sin (* mscale), cache.to(dtype)) read at the positions, then
    apply_rotary_emb_torch (neox): o1 = x1 cos - x2 sin, o2 = x2 cos + x1 sin."""
    t = torch.tensor(pos).float()
    freqs = torch.einsum("i,j -> ij", t, inv)
    cos, sin = (freqs.cos() * af).to(dtype)[:, None], (freqs.sin() * af).to(dtype)[:, None]
    x = torch.tensor(q).to(dtype)
    x1, x2 = torch.chunk(x, 2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).float().numpy()


def outputs(tmp):
    """ropelab apply --precision hf|vllm against the transcriptions over 4096
    positions up to 131071 (both ends and random ones between), 4 heads."""
    import numpy as np
    rng = np.random.RandomState(7)
    T, H = 4096, 4
    pos = np.concatenate([np.arange(16), rng.randint(16, 131072 - 16, T - 32),
                          np.arange(131072 - 16, 131072)]).astype(np.int64)
    np.save(tmp + "/pos.npy", pos)
    cases = [("hf", dict(type="default"), 128, {}),
             ("hf", dict(type="linear", factor=4.0), 64, {"factor": 4}),
             ("hf", dict(type="yarn", factor=4.0, original_max_position_embeddings=4096), 96,
              {"factor": 4, "original_max_position_embeddings": 4096}),
             ("hf", dict(type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                         original_max_position_embeddings=8192, rope_theta=500000.0), 128,
              {"factor": 8, "low_freq_factor": 1, "high_freq_factor": 4,
               "original_max_position_embeddings": 8192, "rope_theta": 500000}),
             ("vllm", dict(type="default"), 96, {}),
             ("vllm", dict(type="yarn", factor=4.0, original_max_position_embeddings=4096), 128,
              {"factor": 4, "original_max_position_embeddings": 4096}),
             ("vllm", dict(type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                           original_max_position_embeddings=8192, rope_theta=500000.0), 64,
              {"factor": 8, "low_freq_factor": 1, "high_freq_factor": 4,
               "original_max_position_embeddings": 8192, "rope_theta": 500000})]
    rows, ok, control = [], True, []
    for fw, c, d, sets in cases:
        c = dict({"rope_theta": 10000.0}, **c, head_dim=d, dim=d)
        inv = transcription(fw, c)
        af = 1.0
        if c["type"] == "yarn":
            af = 0.1 * math.log(c["factor"]) + 1.0
        q = torch.tensor(rng.randn(T, H, d).astype(np.float32)).to(torch.bfloat16).float().numpy()
        np.save(tmp + "/q.npy", q)
        for dtype, dn in ((torch.bfloat16, "bf16"), (torch.float16, "fp16")):
            cmd = [BIN, "apply", "--encoding", "rope", "--precision", fw, "--set", "dtype=" + dn,
                   "--set", "rope_type=" + c["type"], "--input", tmp + "/q.npy",
                   "--positions", tmp + "/pos.npy", "--out", tmp + "/y.npy"]
            for k, v in sets.items():
                cmd += ["--set", "%s=%s" % (k, v)]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print("FAIL apply %s %s %s: %s" % (fw, c["type"], dn, p.stderr.strip()[-300:]))
                ok = False
                continue
            y = np.load(tmp + "/y.npy")
            want = (hf_rotate if fw == "hf" else vllm_rotate)(q, pos, inv, af, dtype)
            frac = float((y.view(np.uint32) == want.view(np.uint32)).mean())
            if not control and dn == "fp16":
                # the control: the device's builtins (trig device) differ from
                # SLEEF somewhere in these fp16 outputs, so must not be bit-exact
                p = subprocess.run(cmd + ["--set", "trig=device"], capture_output=True, text=True)
                cf = float((np.load(tmp + "/y.npy").view(np.uint32) == want.view(np.uint32)).mean()) \
                    if p.returncode == 0 else 1.0
                control.append("control, %s %s d%d fp16: trig sleef %.7f, trig device (the device's "
                               "builtins) %.7f bit-exact%s" % (fw, c["type"], d, frac, cf,
                                                                "" if cf < 1.0 else "  FAIL"))
                ok &= cf < 1.0
            n_bad = int((y.view(np.uint32) != want.view(np.uint32)).sum())
            # the difference in units in the last place of the dtype at the larger value
            mant, tiny = (7, 2.0 ** -133) if dn == "bf16" else (10, 2.0 ** -24)
            big = np.maximum(np.abs(y), np.abs(want)).astype(np.float64)
            spacing = np.maximum(2.0 ** (np.floor(np.log2(np.maximum(big, 1e-300))) - mant), tiny)
            ulps = float(np.max(np.abs(y.astype(np.float64) - want) / spacing)) if n_bad else 0.0
            need = 0.99999
            rows.append("%-4s %-8s d%-3d %s: %.7f bit-exact (%d of %d differ, by at most %.0f ulp of %s)%s"
                        % (fw, c["type"], d, dn, frac, n_bad, y.size, ulps, dn,
                           "" if frac >= need else "  FAIL < %g" % need))
            ok &= frac >= need
    return rows + control, ok


def bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def trig(tmp):
    """The device's cos/sin (trig sleef) against libsleef's scalar FMA build
    (Sleef_cosf1_u10purecfma, the per-element semantics of the
    Sleef_cosf8_u10 torch calls) and torch.cos itself, bit for bit, at
    angles p * 1 (head_dim 2, x = (1, 0): y = (cos p, sin p) in fp32) for
    p dense below 4096 and log-uniform up to 2^31."""
    import ctypes
    import ctypes.util
    import numpy as np
    rows, ok = [], True
    rng = np.random.RandomState(11)
    pos = np.concatenate([np.arange(4096), np.sort((2.0 ** rng.uniform(12, 31, 61440)).astype(np.int64))])
    q = np.zeros((len(pos), 2), np.float32)
    q[:, 0] = 1
    np.save(tmp + "/tq.npy", q)
    np.save(tmp + "/tp.npy", pos)
    p = subprocess.run([BIN, "apply", "--encoding", "rope", "--precision", "hf", "--input",
                        tmp + "/tq.npy", "--positions", tmp + "/tp.npy", "--out", tmp + "/ty.npy"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return ["FAIL apply trig: " + p.stderr.strip()[-300:]], False
    y = np.load(tmp + "/ty.npy")
    ang = pos.astype(np.float32)

    def vs_torch(t_cos, t_sin):
        return int((y[:, 0].view(np.uint32) != t_cos.view(np.uint32)).sum() +
                   (y[:, 1].view(np.uint32) != t_sin.view(np.uint32)).sum())
    # torch takes SLEEF's large-argument path for a whole vector of 8 (16)
    # when one lane needs it: the two paths as separate tensors, so that
    # every vector is on one path (the per-element semantics ropelab emulates)
    big = np.abs(ang) >= 125
    tc, ts = np.empty_like(ang), np.empty_like(ang)
    for m in (big, ~big):
        t = torch.tensor(ang[m])
        tc[m], ts[m] = t.cos().numpy(), t.sin().numpy()
    n_t = vs_torch(tc, ts)
    t = torch.tensor(ang)
    n_mixed = vs_torch(t.cos().numpy(), t.sin().numpy())
    rows.append("trig sleef: cos/sin of %d angles <= 2^31 against torch.cos/sin: %d of %d differ%s "
                "(one tensor, whose vectors can mix the paths at |x| = 125: %d)"
                % (len(pos), n_t, 2 * len(pos), "" if n_t == 0 else "  FAIL", n_mixed))
    ok &= n_t == 0
    lib = ctypes.util.find_library("sleef")
    if lib:
        L = ctypes.CDLL(lib)
        fns = [getattr(L, n) for n in ("Sleef_cosf1_u10purecfma", "Sleef_sinf1_u10purecfma")]
        for f in fns:
            f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float]
        n_l = 0
        for i, a in enumerate(ang.tolist()):
            n_l += bits(fns[0](a)) != int(y[i, 0].view(np.uint32))
            n_l += bits(fns[1](a)) != int(y[i, 1].view(np.uint32))
        rows.append("trig sleef: the same against libsleef's Sleef_cosf1/sinf1_u10purecfma: %d differ%s"
                    % (n_l, "" if n_l == 0 else "  FAIL"))
        ok &= n_l == 0
    return rows, ok


def main():
    global NATIVE
    cases = configs()
    n_cfg = n_pairs = bad = native_diff = native_max = former = former_max = 0
    for fw in ("hf", "vllm"):
        for c in cases:
            want = transcription(fw, c)
            if want is None:
                continue
            cmd = [BIN, "freqs", "--json", "--framework", fw] + flags(c)
            if c.get("seq_len"):
                cmd += ["--seq-len", str(c["seq_len"])]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print("FAIL %s %s: exit %d: %s" % (fw, c["type"], p.returncode, p.stderr.strip()))
                bad += 1
                continue
            j = json.loads(p.stdout)
            got = j["framework_inv_freq"]
            if not j["framework_program"] or len(got) != len(want):
                print("FAIL %s %s: no program or %d pairs, want %d" % (fw, c["type"], len(got), len(want)))
                bad += 1
                continue
            n_cfg += 1
            w = want.tolist()
            for k, (g, t) in enumerate(zip(got, w)):
                n_pairs += 1
                if bits(g) != bits(t):
                    bad += 1
                    if bad <= 12:
                        print("FAIL %s %s %s pair %d: ropelab %.9g, transcription %.9g (%+d ulp)"
                              % (fw, c["type"], " ".join(cmd[5:]), k, g, t, bits(g) - bits(t)))
                d = abs(bits(float(j["inv_freq"][k])) - bits(t))
                former += d != 0
                former_max = max(former_max, d)
            NATIVE = True
            nat = transcription(fw, c).tolist()
            NATIVE = False
            for g, t in zip(nat, w):
                d = abs(bits(g) - bits(t))
                native_diff += d != 0
                native_max = max(native_max, d)
    print("%d configurations (hf and vllm programs), %d pairs: %d differ from the transcription"
          % (n_cfg, n_pairs, bad))
    print("the double inv_freq rounded to float32 (the emulation before) differs in %d pairs "
          "(%.1f %%, up to %d ulp)" % (former, 100.0 * former / max(n_pairs, 1), former_max))
    print("torch's own pow on this machine (%s) would change %d pairs (%.2f %%, up to %d ulp): "
          "the platform's part" % (torch.__config__.show().split("CPU capability usage: ")[-1].split("\n")[0]
                                   if "CPU capability usage" in torch.__config__.show() else "?",
                                   native_diff, 100.0 * native_diff / max(n_pairs, 1), native_max))
    import tempfile
    tmp = tempfile.mkdtemp(prefix="rope_frameworks.")
    rows, ok = outputs(tmp)
    print("whole outputs, 4096 positions <= 131071 x 4 heads, against the transcription with torch's "
          "cos/sin (ropelab: trig sleef, SLEEF's xcosf_u1/xsinf_u1 on the device):")
    for r in rows:
        print("  " + r)
    t_rows, t_ok = trig(tmp)
    for r in t_rows:
        print("  " + r)
    ok &= t_ok
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if bad or n_cfg < 400 or not ok else 0)


main()
