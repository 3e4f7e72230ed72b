/* Error bounds of the RoPE kernel against the double reference, per
 * precision mode: shared by `ropelab check`, `ropelab bench` and the
 * encoding registry, so every caller states the same tolerance. */
#include <math.h>

#include "core/rl_util.h"
#include "pe/rope.h"

/* Per-element bound of the fp32-angle kernel. For a pair (a, b) rotated by
 * phi = pos*theta_j, with M = |a| + |b| and attention factor s:
 *  - the fp32 angle fl(fl(pos) * fl(theta_j)) has |d phi| <= |phi| * 2^-23
 *    (one rounding of theta_j, one of the product; pos <= 2^24 is exact),
 *    and cos/sin move by at most |d phi|;
 *  - GLSL/Vulkan bound builtin sin/cos by 2^-11 absolute error on [-pi, pi]
 *    (Vulkan spec, "Precision and Operation of SPIR-V Instructions"); ropelab
 *    applies the same bound to the reduced argument;
 *  - a*c - b*s in fp32 adds at most ~3 roundings: 4 ulp of s*M covers it.
 * So |y - y_ref| <= s*M*(|phi| 2^-23 + 2^-11) + 4 ulp(s*M). Pass-through
 * dimensions must be bit-exact copies (bound 0). */
static void fp32_bounds(const rope_freqs *f, const float *x, const uint32_t *pos,
                             size_t tokens, uint32_t heads, double *bound, double *scale)
{
    uint32_t d = f->head_dim;
    int per_pos = rope_freqs_per_position(f);
    double tf[ROPE_MAX_PAIRS], taf = f->attention_factor;
    const double *inv = per_pos ? tf : f->inv_freq;
    for (size_t t = 0; t < tokens; t++) {
        if (per_pos) /* each token's own rotation (cache_consistent) */
            rope_freqs_at(f, pos[t], tf, &taf);
        double s = fabs(taf);
        for (uint32_t h = 0; h < heads; h++) {
            size_t row = (t * heads + h) * d;
            for (uint32_t i = 0; i < d; i++) {
                if (i >= f->rotary_dim) {
                    bound[row + i] = 0;
                    scale[row + i] = fabs(x[row + i]);
                    continue;
                }
                int first;
                uint32_t pair;
                uint32_t o = rope_partner(f, i, &first, &pair);
                double m = s * (fabs(x[row + i]) + fabs(x[row + o]));
                double phi = fabs((double)pos[t] * inv[pair]);
                bound[row + i] = m * (phi * 0x1p-23 + 0x1p-11) + 4 * rl_ulp32(m);
                scale[row + i] = m;
            }
        }
    }
}

/* Emulation modes against the double reference (what the framework's own
 * arithmetic can be off by): the angle off by |phi| k_j (rope_emu_angle_rel),
 * cos/sin by 2^-11 (device) on top, the dtype's roundings of the inputs, of
 * cos and sin, of the products and of the sum, 8 u in all (u its unit
 * roundoff), fp32 roundings 4 ulp(s M), fp16's subnormal quantum. Pass-
 * through dimensions: the input's rounding to the dtype, u |x|. */
static void emu_bounds(const rope_freqs *f, const float *x, const uint32_t *pos, size_t tokens,
                       uint32_t heads, double *bound, double *scale)
{
    const uint32_t d = f->head_dim;
    const double u = f->dtype == RL_DTYPE_BF16 ? 0x1p-8 : f->dtype == RL_DTYPE_FP16 ? 0x1p-11 : 0x1p-24;
    const double u_pass = f->dtype == RL_DTYPE_FP32 ? 0 : u;
    const double sub = f->dtype == RL_DTYPE_FP16 ? 4 * 0x1p-24 : 0;
    for (size_t t = 0; t < tokens; t++)
        for (uint32_t h = 0; h < heads; h++) {
            size_t row = (t * heads + h) * d;
            for (uint32_t i = 0; i < d; i++) {
                if (i >= f->rotary_dim) {
                    bound[row + i] = u_pass * fabs(x[row + i]) + (u_pass ? sub : 0);
                    continue;
                }
                int first;
                uint32_t pair;
                (void)rope_partner(f, i, &first, &pair);
                double m = scale[row + i];
                double phi = fabs((double)pos[t] * f->inv_freq[pair]);
                bound[row + i] = m * (phi * rope_emu_angle_rel(f, pair) + 0x1p-11 + 0x1p-22 + 8 * u) +
                                 4 * rl_ulp32(m) + sub;
            }
        }
}

/* table / precise: the rotation's (cos, sin) are within ~1.5 * 2^-24 of the
 * exact values (table: one fp32 rounding of a double; precise: exact
 * reduction, the argument's final rounding 2^-25 and the polynomials' Horner
 * roundings, see rope_angle.glsl), so each output is off by <= M * 1.5 * 2^-24
 * <= 1.5 ulp(M) from them, plus the three fp32 roundings of a*c - b*s (each
 * <= ulp(M)/2 since every partial result is <= M): about 3 ulp(M) in the
 * worst case. The requirement, 4 ulp(M), is the bound. */
void rope_error_bounds(const rope_freqs *f, const float *x, const uint32_t *pos, size_t tokens,
                     uint32_t heads, double *bound, double *scale)
{
    fp32_bounds(f, x, pos, tokens, heads, bound, scale);
    if (f->precision == RL_ROPE_PREC_FP32)
        return;
    if (rope_prec_is_emu(f->precision)) {
        emu_bounds(f, x, pos, tokens, heads, bound, scale);
        return;
    }
    size_t n = tokens * heads * f->head_dim;
    for (size_t i = 0; i < n; i++)
        if ((i % f->head_dim) < f->rotary_dim)
            bound[i] = 4 * rl_ulp32(scale[i]);
}

