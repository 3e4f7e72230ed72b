/* RoPE's `ropelab check` cases: shapes chosen to hit edges (1 token, odd
 * and prime counts, 1 and 8 heads, head_dim 64/128, partial rotary) and
 * positions up to 2^20, compared with the double CPU reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/chk.h"
#include "core/rl_util.h"
#include "pe/rope.h"

typedef struct rope_case {
    uint32_t tokens, heads, head_dim, rotary_dim;
    int random_positions;   /* 0: consecutive, ending at the largest position */
} rope_case;

static const rope_case rope_cases[] = {
    {1, 1, 64, 64, 0},
    {7, 8, 64, 64, 1},
    {63, 1, 128, 128, 0},
    {65, 8, 128, 128, 1},
    {257, 1, 128, 128, 1},
    {33, 8, 128, 64, 1},    /* partial rotary: half of head_dim */
    {129, 1, 64, 32, 0},    /* partial rotary: a quarter */
    {1021, 8, 128, 128, 1}, /* prime token count, many rows */
};
static const size_t rope_quick_cases = 4;

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
void chk_rope_fp32_bounds(const rope_freqs *f, const float *x, const uint32_t *pos,
                             size_t tokens, uint32_t heads, double *bound, double *scale)
{
    uint32_t d = f->head_dim;
    double s = fabs(f->attention_factor);
    for (size_t t = 0; t < tokens; t++)
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
                double phi = fabs((double)pos[t] * f->inv_freq[pair]);
                bound[row + i] = m * (phi * 0x1p-23 + 0x1p-11) + 4 * rl_ulp32(m);
                scale[row + i] = m;
            }
        }
}

static rl_status run_rope_case(rlvk_device *dev, rope_kernel *k, const rope_case *c,
                               int layout, const chk_options *opt, chk_report *report,
                               rl_error *err)
{
    rope_desc desc = {.head_dim = c->head_dim, .rotary_dim = c->rotary_dim, .layout = layout};
    rope_freqs f;
    rl_status st = rope_freqs_compute(&desc, &f, err);
    if (st)
        return st;
    size_t n = (size_t)c->tokens * c->heads * c->head_dim;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *ref = malloc(n * sizeof *ref), *bound = malloc(n * sizeof *bound),
           *scale = malloc(n * sizeof *scale);
    uint32_t *pos = malloc(c->tokens * sizeof *pos);
    if (!x || !y || !ref || !bound || !scale || !pos) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for a check case");
        goto done;
    }
    char stream[64];
    snprintf(stream, sizeof stream, "check/rope/%u/%u/%u", c->tokens, c->heads, c->head_dim);
    rl_rng rng;
    rl_rng_seed(&rng, opt->seed ? opt->seed : 1, stream);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rl_rng_normal(&rng);
    uint32_t pmax = 1u << (opt->max_pos_log2 ? opt->max_pos_log2 : 20);
    for (uint32_t t = 0; t < c->tokens; t++) {
        if (c->random_positions)
            pos[t] = (uint32_t)(rl_rng_uniform(&rng) * (double)(pmax + 1u));
        else
            pos[t] = pmax - (c->tokens - 1 - t);
    }
    if (c->random_positions) { /* always include both ends */
        pos[0] = 0;
        pos[c->tokens - 1] = pmax;
    }
    rope_ref_apply(&f, x, pos, c->tokens, c->heads, ref);
    chk_rope_fp32_bounds(&f, x, pos, c->tokens, c->heads, bound, scale);

    chk_row row = {0};
    snprintf(row.kernel, sizeof row.kernel, "rope/%s/fp32",
             layout == RL_ROPE_LAYOUT_HALF ? "half" : "interleaved");
    snprintf(row.shape, sizeof row.shape, "T=%u H=%u D=%u rot=%u pos<=2^%u%s", c->tokens, c->heads,
             c->head_dim, c->rotary_dim, opt->max_pos_log2 ? opt->max_pos_log2 : 20,
             c->random_positions ? " random" : "");
    snprintf(row.tolerance, sizeof row.tolerance, "M*(|phi|*2^-23 + 2^-11) + 4ulp");
    double ns = -1;
    st = rope_gpu_apply(dev, k, &f, x, pos, c->tokens, c->heads, y, &ns, &row.guard_ok, err);
    if (st)
        goto done;
    row.gpu_ms = ns >= 0 ? ns * 1e-6 : -1;
    chk_compare(y, ref, bound, scale, n, &row.stats);
    st = chk_report_add(report, &row, err);
done:
    free(x);
    free(y);
    free(ref);
    free(bound);
    free(scale);
    free(pos);
    return st;
}

rl_status chk_rope_cases(rlvk_device *dev, const chk_options *opt, chk_report *report,
                         rl_error *err)
{
    rope_kernel k;
    rl_status st = rope_kernel_create(dev, &k, err);
    if (st)
        return st;
    size_t n_cases = opt->quick ? rope_quick_cases : RL_ARRAY_LEN(rope_cases);
    for (size_t i = 0; i < n_cases && !st; i++)
        for (int layout = 0; layout < 2 && !st; layout++)
            st = run_rope_case(dev, &k, &rope_cases[i], layout, opt, report, err);
    rope_kernel_destroy(dev, &k);
    return st;
}

