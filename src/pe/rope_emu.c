/* Framework emulation modes, CPU side: the fp32 arithmetic each framework
 * performs for RoPE (sources and formulas: docs/rope.md "Framework
 * emulation"), written in C from those sources. The device side is
 * shaders/rope_emu.glsl; both must agree bit for bit wherever the
 * arithmetic is defined (angle construction, dtype roundings, + - *), and
 * within rope_emu_bounds where they rest on the device's sin/cos (trig
 * device, the ggml modes; hf and vllm take SLEEF's on both sides:
 * rope_sleef.c) and ggml-vulkan's pow. The build is ISO C11 (meson
 * c_std=c11), so GCC does not contract a*b+c into an FMA, and x86-64
 * evaluates float in float (FLT_EVAL_METHOD 0). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "core/rl_util.h"
#include "pe/rope.h"
#include "pe/rope_sleef.h"
#include "pe/rope_scaling.h"

#define RL_LN2 0.69314718055994530942
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* Round to nearest even at the dtype's precision p (significand bits incl.
 * the implicit one) and minimum exponent emin, in double: the value is
 * exact in double, the quantum a power of two, rint rounds ties to even. */
float rope_emu_round(int dtype, float v)
{
    if (dtype == RL_DTYPE_FP32 || v == 0 || isinf(v))
        return v;
    if (isnan(v))
        return NAN; /* canonical quiet NaN 0x7fc00000 (fp16: 0x7e00 widened) */
    int p = dtype == RL_DTYPE_BF16 ? 8 : 11;
    int emin = dtype == RL_DTYPE_FP16 ? -14 : -126;
    int e;
    frexp((double)v, &e); /* v = m 2^e, m in [0.5, 1): exponent e - 1 */
    int ex = e - 1 < emin ? emin : e - 1;
    double q = ldexp(1.0, ex - (p - 1));
    double r = rint((double)v / q) * q;
    double maxv = dtype == RL_DTYPE_FP16 ? 65504.0 : (double)FLT_MAX;
    if (fabs(r) > maxv)
        return v < 0 ? -INFINITY : INFINITY;
    return (float)r;
}

int rope_emu_program(const rope_freqs *f, int fw, float *out)
{
    const rope_scaling *sc = rope_scaling_at(f->rope_type);
    /* Resonance rounds wavelengths after the type's scaling (its authors'
     * code, not a framework's): not a framework program */
    if (sc && sc->emu_freqs && !f->desc.resonance && !f->mrope &&
        sc->emu_freqs(&f->desc, f->seq_len, fw, f->n_pairs, out))
        return 1;
    for (uint32_t j = 0; j < f->n_pairs; j++)
        out[j] = (float)f->inv_freq[j]; /* the double inv_freq, rounded once */
    return 0;
}

void rope_emu_factors(const rope_freqs *f, float *out)
{
    const float dim = (float)f->rotary_dim;
    const float base = (float)f->theta;
    float fw[ROPE_MAX_PAIRS];
    if (f->precision == RL_ROPE_PREC_HF || f->precision == RL_ROPE_PREC_VLLM)
        rope_emu_program(f, f->precision, fw);
    /* ggml: theta_scale = powf(freq_base, -2.0f/n_dims) */
    const float ts = powf(base, -2.0f / dim);
    for (uint32_t j = 0; j < f->n_pairs; j++) {
        float v;
        switch (f->precision) {
        case RL_ROPE_PREC_HF:
        case RL_ROPE_PREC_VLLM:
            /* the framework's own frequency program (rope_emu_program) */
            v = fw[j];
            if (f->precision == RL_ROPE_PREC_HF && f->inv_freq_dtype == RL_DTYPE_BF16)
                v = rope_emu_round(RL_DTYPE_BF16, v);
            break;
        case RL_ROPE_PREC_CUDA_FAST:
            /* __powf(theta_scale, i0/2.0f), i0 = 2j, as fast math computes
             * it: ex2.approx(y * lg2.approx(x)) (CUDA Programming Guide,
             * intrinsic functions: "derived from its implementation as
             * exp2f(y * __log2f(x))"). The approximations are the
             * hardware's: the host's correctly rounded log2f and exp2f stand
             * in for them, and rope_emu_angle_rel bounds a real device's */
            v = exp2f((float)j * log2f(ts));
            break;
        default:
            v = ts;
            break;
        }
        out[j] = v;
    }
}

/* ggml's rope_yarn inputs. Source: ggml/src/ggml-cpu/ops.cpp (commit
 * 1f08e2d662715ead7987c365eced4f273d90e431) rope_yarn_ramp, rope_yarn and
 * ggml_rope_yarn_corr_dim(s), and the same functions in
 * ggml-vulkan/vulkan-shaders/rope_funcs.glsl; llama.cpp passes freq_scale =
 * 1/factor, ext_factor 1 for yarn (0 otherwise), n_ctx_orig = L_orig. All
 * float arithmetic (ISO C11: no contraction). */
static float ggml_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base)
{
    return (float)n_dims * logf((float)n_ctx_orig / (n_rot * 2.0f * (float)M_PI)) /
           (2.0f * logf(base));
}

static int ggml_yarn_type(const rope_freqs *f)
{
    int ggml = f->precision == RL_ROPE_PREC_GGML_CPU || f->precision == RL_ROPE_PREC_GGML_VULKAN;
    return ggml && (f->rope_type == ROPE_TYPE_LINEAR || f->rope_type == ROPE_TYPE_YARN);
}

int rope_emu_yarn(const rope_freqs *f, float *freq_scale, float *ramp_mix, float *mscale)
{
    float af = (float)f->attention_factor;
    if (!ggml_yarn_type(f)) {
        if (mscale)
            *mscale = af;
        return 0;
    }
    const int yarn = f->rope_type == ROPE_TYPE_YARN;
    const float fs = 1.0f / (float)f->factor, ext = yarn ? 1.0f : 0.0f;
    float dims[2] = {0, 0};
    if (yarn) {
        const rope_desc *r = &f->desc;
        float bf = (float)(r->beta_fast ? r->beta_fast : 32), bs = (float)(r->beta_slow ? r->beta_slow : 1);
        int nd = (int)f->rotary_dim, L = (int)r->original_max_position_embeddings;
        float start = floorf(ggml_corr_dim(nd, L, bf, (float)f->theta));
        float end = ceilf(ggml_corr_dim(nd, L, bs, (float)f->theta));
        dims[0] = start > 0 ? start : 0;
        dims[1] = end < (float)(nd - 1) ? end : (float)(nd - 1);
    }
    if (ramp_mix)
        for (uint32_t j = 0; j < f->n_pairs; j++) {
            /* rope_yarn_ramp(low, high, i0): i0/2 is j (integer division) */
            float den = dims[1] - dims[0] > 0.001f ? dims[1] - dims[0] : 0.001f;
            float y = ((float)j - dims[0]) / den;
            y = y < 0 ? 0 : y > 1 ? 1 : y;
            ramp_mix[j] = (1.0f - y) * ext;
        }
    if (freq_scale)
        *freq_scale = fs;
    if (mscale) {
        /* attn_factor: what makes ggml's mscale the type's factor (1 for
         * yarn's default 0.1 ln s + 1, computed by the same expression) */
        float m = yarn ? (float)(f->attention_factor / (0.1 * 1.0 * log(f->factor) + 1.0)) : af;
        if (yarn)
            m *= 1.0f + 0.1f * logf(1.0f / fs);
        *mscale = m;
    }
    return 1;
}

/* The mode's per-pair data, once per call. */
typedef struct emu_ctx {
    float fac[ROPE_MAX_PAIRS];
    int yarn;                     /* ggml rope_yarn */
    float fs, mscale;
    float rm[ROPE_MAX_PAIRS];     /* ramp_mix */
} emu_ctx;

static void ctx_init(const rope_freqs *f, emu_ctx *c)
{
    rope_emu_factors(f, c->fac);
    c->yarn = rope_emu_yarn(f, &c->fs, c->rm, &c->mscale);
}

static float angle_of(const rope_freqs *f, const emu_ctx *c, uint32_t p, uint32_t j)
{
    float pf = (float)p, te;
    switch (f->precision) {
    case RL_ROPE_PREC_HF:
    case RL_ROPE_PREC_VLLM: {
        float fr = c->fac[j];
        if (f->tf32) {
            fr = rope_emu_round(RL_DTYPE_TF32, fr);
            pf = rope_emu_round(RL_DTYPE_TF32, pf);
        }
        return fr * pf;
    }
    case RL_ROPE_PREC_GGML_CPU: {
        float th = pf; /* theta = p; per pair: theta *= theta_scale */
        for (uint32_t k = 0; k < j; k++)
            th = th * c->fac[j];
        te = th;
        break;
    }
    case RL_ROPE_PREC_GGML_VULKAN: {
        float pw = powf(c->fac[j], (float)j);
        te = pf * pw;
        break;
    }
    default:
        return pf * c->fac[j];
    }
    if (!c->yarn)
        return te;
    /* rope_yarn: theta_interp = freq_scale * theta_extrap; mixed by ramp_mix */
    float ti = c->fs * te;
    return ti * (1.0f - c->rm[j]) + te * c->rm[j];
}

int rope_emu_sleef(const rope_freqs *f)
{
    return (f->precision == RL_ROPE_PREC_HF || f->precision == RL_ROPE_PREC_VLLM) &&
           f->trig != ROPE_TRIG_DEVICE;
}

float rope_emu_angle(const rope_freqs *f, uint32_t p, uint32_t j)
{
    emu_ctx c;
    ctx_init(f, &c);
    return angle_of(f, &c, p, j);
}

void rope_emu_apply(const rope_freqs *f, const float *x, const uint32_t *pos, size_t tokens,
                    uint32_t heads, const float *use_angles, float *y, float *angles)
{
    emu_ctx c;
    ctx_init(f, &c);
    const int dt = f->dtype;
    const int torch_ops = f->precision == RL_ROPE_PREC_HF || f->precision == RL_ROPE_PREC_VLLM;
    const int sleef = rope_emu_sleef(f);
    const float af = c.mscale; /* ggml yarn: its own mscale */
    const uint32_t d = f->head_dim, np = f->n_pairs;
    for (size_t t = 0; t < tokens; t++)
        for (uint32_t h = 0; h < heads; h++) {
            const float *xr = x + (t * heads + h) * d;
            float *yr = y + (t * heads + h) * d;
            for (uint32_t j = 0; j < np; j++) {
                uint32_t ia = f->layout == RL_ROPE_LAYOUT_HALF ? j : 2 * j;
                uint32_t ib = f->layout == RL_ROPE_LAYOUT_HALF ? j + np : 2 * j + 1;
                float ang = use_angles ? use_angles[t * np + j] : angle_of(f, &c, pos[t], j);
                if (angles && h == 0)
                    angles[t * np + j] = ang;
                float c32 = sleef ? rope_sleef_cosf(ang) * af : (float)cos((double)ang) * af;
                float s32 = sleef ? rope_sleef_sinf(ang) * af : (float)sin((double)ang) * af;
                float a = rope_emu_round(dt, xr[ia]), b = rope_emu_round(dt, xr[ib]);
                float ya, yb;
                if (torch_ops) {
                    /* q*cos + rotate_half(q)*sin, each op rounded to the dtype */
                    float c = rope_emu_round(dt, c32), s = rope_emu_round(dt, s32);
                    float ac = rope_emu_round(dt, a * c), bs = rope_emu_round(dt, b * s);
                    float bc = rope_emu_round(dt, b * c), as = rope_emu_round(dt, a * s);
                    ya = ac - bs;
                    yb = bc + as;
                } else {
                    /* ggml: x0*cos - x1*sin, x0*sin + x1*cos in fp32 */
                    float ac = a * c32, bs = b * s32, as = a * s32, bc = b * c32;
                    ya = ac - bs;
                    yb = as + bc;
                }
                yr[ia] = rope_emu_round(dt, ya);
                yr[ib] = rope_emu_round(dt, yb);
            }
            for (uint32_t i = f->rotary_dim; i < d; i++)
                yr[i] = rope_emu_round(dt, xr[i]);
        }
}

/* Unit roundoff of a dtype. */
static double unit_roundoff(int dt)
{
    return dt == RL_DTYPE_BF16 ? 0x1p-8 : dt == RL_DTYPE_FP16 ? 0x1p-11 : 0x1p-24;
}

/* Device vs CPU emulation at equal angles, pair (a, b) with M = |a| + |b|
 * (dtype-rounded inputs, identical on both sides) and attention factor s:
 *  - cos/sin: the device's within 2^-11 of exact (Vulkan, "Precision and
 *    Operation of SPIR-V Instructions"; the same reading as the fp32 mode's
 *    bound), the CPU's within 2^-24: |dc| <= 2^-11 + 2^-24 before the fp32
 *    product with s, whose two roundings differ by <= ulp32(s) more;
 *  - a rounding R to the dtype of two values v1, v2 differs by at most
 *    |v1 - v2| + ulp(max |v|) <= |v1 - v2| + 2u max|v| (u the unit
 *    roundoff): one such step for C and S (2u s), one for each product
 *    (2u |a| s, 2u |b| s), one for the sum (2u M s): in total
 *    M s (2^-11 + 2^-22 + 6u) (hf/vllm; ggml's fp32 products and one final
 *    rounding are fewer steps, so covered); the fp32 roundings of the
 *    products and sum add at most 4 ulp32(M s), fp16's subnormal quantum
 *    2^-24 up to 4 times absolutely. Pass-through dimensions: both sides
 *    round the same input: 0. */
void rope_emu_bounds(const rope_freqs *f, const float *x, size_t tokens, uint32_t heads,
                     double *bound)
{
    const int dt = f->dtype;
    float ms;
    rope_emu_yarn(f, NULL, NULL, &ms);
    const double u = unit_roundoff(dt), s = fmax(fabs(f->attention_factor), fabs(ms));
    const double sub = dt == RL_DTYPE_FP16 ? 4 * 0x1p-24 : 0;
    const uint32_t d = f->head_dim;
    /* SLEEF's cos/sin on both sides (rl_sleef.glsl, rope_sleef.c): the same
     * fp32 operations in the same order, so the outputs agree bit for bit */
    const int exact = rope_emu_sleef(f);
    for (size_t r = 0; r < tokens * heads; r++)
        for (uint32_t i = 0; i < d; i++) {
            size_t k = r * d + i;
            if (i >= f->rotary_dim || exact) {
                bound[k] = 0;
                continue;
            }
            int first;
            uint32_t pair;
            uint32_t o = rope_partner(f, i, &first, &pair);
            double m = s * (fabs(rope_emu_round(dt, x[k])) + fabs(rope_emu_round(dt, x[r * d + o])));
            bound[k] = m * (0x1p-11 + 0x1p-22 + 6 * u) + 4 * rl_ulp32(m) + sub;
        }
}

/* Vulkan: pow(x, y) is inherited from exp2(y * log2(x)); log2 has absolute
 * error < 2^-21 on [0.5, 2] (3 ulp outside), exp2 (3 + 2|z|) ulp. With
 * x = theta_scale, y = j, z = j log2(theta_scale): |dz| <= j E_log +
 * |z| 2^-24 (the product), so the device pow is within
 * |dz| ln 2 (1.01) + (3 + 2|z|) 2^-23 relative of the exact power, and the
 * host's powf (glibc, < 1 ulp) within 2^-23; the final fp32 product with
 * the position may round the two differently by one more ulp. */
double rope_emu_angle_bound(const rope_freqs *f, uint32_t p, uint32_t j)
{
    if (f->precision != RL_ROPE_PREC_GGML_VULKAN)
        return 0;
    const double ts = (double)powf((float)f->theta, -2.0f / (float)f->rotary_dim);
    const double l = fabs(log2(ts)), z = j * l;
    const double e_log = ts >= 0.5 && ts <= 2 ? 0x1p-21 : 6 * 0x1p-24 * l;
    const double dz = j * e_log + z * 0x1p-24;
    const double rel = dz * RL_LN2 * 1.01 + (3 + 2 * z) * 0x1p-23 + 0x1p-23;
    const double phi = (double)p * pow(ts, j);
    /* rope_yarn's mix (fs*te, its (1 - rm) and rm shares, the sum) is linear
     * in te (|result| <= |te|): the same relative error plus its own four
     * roundings, which can fall differently from a different te */
    const double mix = ggml_yarn_type(f) ? 4 * 0x1p-24 : 0;
    return phi * (rel + 0x1p-23 + mix) * 1.01;
}

/* rope_yarn's share of the ggml angle's relative error against the double
 * p * theta'_j (theta'_j from rope_freq.c's formula): with te the extrapolated
 * angle and theta >= te / s (s = factor), the fp32 freq_scale (2^-24), its
 * product, 1 - rm, the two products and the sum (5 roundings, each <= 2^-24
 * |te|) and the float ramp against the double one (<= 2 ulp of a value in
 * [0, 1], times |te - fs te| <= |te|): (8 * 2^-24) |te| <= s (8 * 2^-24)
 * |theta|. Linear: fs and one product. 0 without rope_yarn. */
static double yarn_rel(const rope_freqs *f)
{
    if (!ggml_yarn_type(f))
        return 0;
    return f->rope_type == ROPE_TYPE_YARN ? f->factor * 8 * 0x1p-24 : 3 * 0x1p-24;
}

/* Relative error bound of the mode's fp32 angle against the exact
 * p * inv_freq_j (derivations in docs/rope.md "Framework emulation"). */
double rope_emu_angle_rel(const rope_freqs *f, uint32_t j)
{
    const double lb = log(f->theta), d = f->rotary_dim;
    switch (f->precision) {
    case RL_ROPE_PREC_HF:
    case RL_ROPE_PREC_VLLM: {
        /* exponent 2j/d (2^-24 abs -> ln(base) 2^-24 rel), powf (1 ulp),
         * division, product, position > 2^24 (2^-24 each), x2 margin */
        double k = (lb + 4) * 0x1p-23;
        if (f->precision == RL_ROPE_PREC_HF && f->inv_freq_dtype == RL_DTYPE_BF16)
            k += 0x1p-8;
        if (f->tf32)
            k += 2 * 0x1p-11;
        return k;
    }
    case RL_ROPE_PREC_GGML_CPU:
        /* theta_scale: exponent -2/d rounded, powf: (ln(b)/d + 1) 2^-23;
         * j rounded products: j 2^-24; rope_yarn (below) */
        return (j * (lb / d + 1.5) + 1) * 0x1p-23 * 1.1 + yarn_rel(f);
    case RL_ROPE_PREC_CUDA_FAST: {
        /* __powf(ts, j) = __exp2f(j * __log2f(ts)) on a real device: __log2f
         * within 2^-22 absolute on [0.5, 2] (2 ulp outside), the product
         * 2^-24 of z = j log2 ts, __exp2f 2 ulp (CUDA Programming Guide,
         * "Intrinsic Functions"): |dz| ln 2 + 2 2^-23 relative; theta_scale
         * itself as ggml's (exponent -2/d rounded, powf 1 ulp: j (ln b / d
         * + 1) 2^-23); the product with the position 2^-24; x1.1 margin */
        double ts = pow(f->theta, -2.0 / d), l = fabs(log2(ts)), z = j * l;
        double e_log = ts >= 0.5 && ts <= 2 ? 0x1p-22 : 2 * 0x1p-23 * l;
        return ((j * e_log + z * 0x1p-24) * RL_LN2 + 2 * 0x1p-23 +
                (j * (lb / d + 1) + 1) * 0x1p-23) * 1.1;
    }
    default: {
        double k = (j * (lb / d + 1) + 2) * 0x1p-23 * 1.1 + yarn_rel(f);
        if (f->precision == RL_ROPE_PREC_GGML_VULKAN) {
            double ts = pow(f->theta, -2.0 / d), l = fabs(log2(ts)), z = j * l;
            double e_log = ts >= 0.5 && ts <= 2 ? 0x1p-21 : 6 * 0x1p-24 * l;
            k += (j * e_log + z * 0x1p-24) * RL_LN2 * 1.01 + (4 + 2 * z) * 0x1p-23;
        }
        return k;
    }
    }
}
