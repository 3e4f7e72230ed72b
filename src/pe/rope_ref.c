/* RoPE CPU reference in double precision, written from RoFormer's
 * definition (Su et al. 2021, eq. 13-15): each pair (x_a, x_b) of the
 * rotary dimensions is multiplied by the 2x2 rotation of angle pos*theta_j.
 * Never calls Vulkan; shares only rope_freqs with the GPU path. */
#include <math.h>

#include "pe/rope.h"

uint32_t rope_partner(const rope_freqs *f, uint32_t i, int *is_first, uint32_t *pair)
{
    uint32_t h = f->rotary_dim / 2;
    if (f->layout == RL_ROPE_LAYOUT_HALF) {
        *is_first = i < h;
        *pair = i < h ? i : i - h;
        return i < h ? i + h : i - h;
    }
    *is_first = (i % 2) == 0;
    *pair = i / 2;
    return i ^ 1u;
}

/* A per-position rotation (dynamic_mode cache_consistent) takes each
 * token's inv_freq and attention factor from rope_freqs_at (the frequency
 * formula at that token's length); otherwise f's, for every token. */
#define ROPE_REF_BODY(X_T)                                                          \
    uint32_t d = f->head_dim, r = f->rotary_dim, h = r / 2;                         \
    int per_pos = rope_freqs_per_position(f);                                       \
    double tf[ROPE_MAX_PAIRS], taf = f->attention_factor;                           \
    const double *inv = per_pos ? tf : f->inv_freq;                                 \
    for (size_t t = 0; t < tokens; t++) {                                           \
        if (per_pos)                                                                \
            rope_freqs_at(f, pos[t], tf, &taf);                                     \
        for (uint32_t hd = 0; hd < heads; hd++) {                                   \
            const X_T *xr = x + (t * heads + hd) * d;                               \
            double *yr = y + (t * heads + hd) * d;                                  \
            for (uint32_t j = 0; j < h; j++) {                                      \
                double ang = (double)pos[t] * inv[j];                               \
                double c = cos(ang) * taf;                                          \
                double s = sin(ang) * taf;                                          \
                uint32_t ia = f->layout == RL_ROPE_LAYOUT_HALF ? j : 2 * j;         \
                uint32_t ib = f->layout == RL_ROPE_LAYOUT_HALF ? j + h : 2 * j + 1; \
                double a = xr[ia], b = xr[ib];                                      \
                yr[ia] = a * c - b * s;                                             \
                yr[ib] = b * c + a * s;                                             \
            }                                                                       \
            for (uint32_t i = r; i < d; i++)                                        \
                yr[i] = xr[i];                                                      \
        }                                                                           \
    }

void rope_ref_apply(const rope_freqs *f, const float *x, const uint32_t *pos, size_t tokens,
                    uint32_t heads, double *y)
{
    ROPE_REF_BODY(float)
}

void rope_ref_apply_d(const rope_freqs *f, const double *x, const uint32_t *pos, size_t tokens,
                      uint32_t heads, double *y)
{
    ROPE_REF_BODY(double)
}

/* mRoPE (Qwen2-VL, Wang et al. 2024 §2.1): the rotation of pair j is the
 * RoFormer rotation by the angle of ONE of the token's three positions,
 * (t, h, w)[stream(j)] * theta_j; every other part as above. Written from
 * the formula with its own loop (not the shader's). */
void rope_ref_apply3(const rope_freqs *f, const float *x, const uint32_t *pos3, size_t tokens,
                     uint32_t heads, double *y)
{
    uint32_t d = f->head_dim, r = f->rotary_dim, h = r / 2;
    uint32_t stream[ROPE_MAX_PAIRS];
    for (uint32_t j = 0; j < h; j++)
        stream[j] = rope_mrope_stream(f, j);
    for (size_t t = 0; t < tokens; t++)
        for (uint32_t hd = 0; hd < heads; hd++) {
            const float *xr = x + (t * heads + hd) * d;
            double *yr = y + (t * heads + hd) * d;
            for (uint32_t j = 0; j < h; j++) {
                double ang = (double)pos3[3 * t + stream[j]] * f->inv_freq[j];
                double c = cos(ang) * f->attention_factor, s = sin(ang) * f->attention_factor;
                int half = f->layout == RL_ROPE_LAYOUT_HALF;
                uint32_t ia = half ? j : 2 * j, ib = half ? j + h : 2 * j + 1;
                double a = xr[ia], b = xr[ib];
                yr[ia] = a * c - b * s;
                yr[ib] = b * c + a * s;
            }
            for (uint32_t i = r; i < d; i++)
                yr[i] = xr[i];
        }
}
