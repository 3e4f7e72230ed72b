/* alibi — Attention with Linear Biases (Press et al. 2022, "Train Short,
 * Test Long", ICLR, arXiv:2108.12409). No vector transform; a logit bias
 *   bias(h, i, j) = -m_h (pos_i - pos_j)      causal (default)
 *                 = -m_h |pos_i - pos_j|      bidirectional
 * Slopes (the paper's code, also HF build_alibi_tensor): for n a power of
 * two, m_k = 2^(-max_bias (k+1) / n), k = 0..n-1 (max_bias = 8: the
 * geometric sequence starting at 2^(-8/n) with that ratio). Otherwise, with
 * p = 2^floor(log2 n): the p slopes of p heads, then the slopes of 2p heads
 * at even indices 0, 2, 4, ... for the remaining n - p heads. */
#include <math.h>
#include <stdlib.h>

#include "pe/pe.h"

static const pe_param params[] = {
    {"bidirectional", RL_P_BOOL, "false", 0, 0, NULL,
     "false: -m (i - j) for causal attention; true: -m |i - j|"},
    {"max_bias", RL_P_NUM, "8.0", 1e-6, 1024, NULL,
     "slopes are 2^(-max_bias k / n) (8 in the paper)"},
};

typedef struct alibi_state {
    int bidirectional;
    double slope[];  /* [heads], exact in double */
} alibi_state;

static void slopes_pow2(uint32_t n, double max_bias, double *out, uint32_t count, uint32_t step)
{
    /* out[t] = slope of head t*step of an n-head (power of two) model. */
    for (uint32_t t = 0; t < count; t++)
        out[t] = exp2(-max_bias * (double)(t * step + 1) / (double)n);
}

static rl_status create(pe_encoding *e, rl_error *err)
{
    uint32_t n = pe_encoding_shape(e)->heads;
    alibi_state *s = malloc(sizeof *s + n * sizeof(double));
    if (!s)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    s->bidirectional = pe_param_bool(e, "bidirectional");
    double mb = pe_param_num(e, "max_bias");
    uint32_t p = 1;
    while (p * 2 <= n)
        p *= 2;
    slopes_pow2(p, mb, s->slope, p, 1);
    if (p < n) /* get_slopes(2p)[0::2][:n-p] */
        slopes_pow2(2 * p, mb, s->slope + p, n - p, 2);
    pe_encoding_set_state(e, s);
    return RL_OK;
}

static void destroy(pe_encoding *e) { free(pe_encoding_state(e)); }

static double bias_ref(const pe_encoding *e, uint32_t h, uint64_t qtok, uint64_t ktok,
                       int64_t qpos, int64_t kpos, const float *q_i, const float *k_j)
{
    (void)qtok, (void)ktok, (void)q_i, (void)k_j;
    const alibi_state *s = pe_encoding_state(e);
    double d = (double)(qpos - kpos);
    if (s->bidirectional)
        d = fabs(d);
    return -s->slope[h] * d;
}

/* GPU: -fl(m) * float(d): d is exact (|d| < 2^24), fl(m) = m (1 + d1) and
 * the (correctly rounded) product fl(m) d (1 + d2), |d1|, |d2| <= u = 2^-24:
 * |err| <= ((1 + u)^2 - 1) |b| = (2u + u^2) |b|, two roundings of the value
 * (the attention tolerance's 3 u B holds them; see attn_tol.c). */
static double bias_bound(const pe_encoding *e, uint32_t h, uint64_t qtok, uint64_t ktok,
                         int64_t qpos, int64_t kpos, const float *q_i, const float *k_j)
{
    const double u = 0x1p-24;
    double b = fabs(bias_ref(e, h, qtok, ktok, qpos, kpos, q_i, k_j));
    return (2 * u + u * u) * b;
}

static rl_status bias_gpu_create(rlvk_device *dev, const pe_encoding *e, const float *q,
                                 const float *k, uint64_t tokens, pe_bias_gpu *out, rl_error *err)
{
    (void)q, (void)k, (void)tokens;
    const alibi_state *s = pe_encoding_state(e);
    uint32_t n = pe_encoding_shape(e)->heads;
    uint32_t prm[4] = {(uint32_t)s->bidirectional, n, 0, 0};
    float *sl = malloc(n * sizeof *sl);
    if (!sl)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    for (uint32_t h = 0; h < n; h++)
        sl[h] = (float)s->slope[h];
    rl_status st = pe_buffer_from(dev, "alibi params", prm, sizeof prm, &out->buffers[0], err);
    if (!st)
        st = pe_buffer_from(dev, "alibi slopes", sl, n * sizeof *sl, &out->buffers[1], err);
    free(sl);
    out->n_buffers = 2;
    return st;
}

static rl_status inspect(const pe_encoding *e, int64_t r0, int64_t r1, json_t *obj, rl_error *err)
{
    (void)r0, (void)r1, (void)err;
    const alibi_state *s = pe_encoding_state(e);
    json_t *a = json_array();
    for (uint32_t h = 0; h < pe_encoding_shape(e)->heads; h++)
        json_array_append_new(a, json_real(s->slope[h]));
    json_object_set_new(obj, "slopes", a);
    return RL_OK;
}

/* `ropelab check` rows: {label, params, tokens, heads, kv_heads, head_dim,
 * pos_cap_log2, quick}. */
static const pe_check_case bias_checks[] = {
    {"alibi/causal", "{}", 48, 8, 8, 64, 0, 1},
    {"alibi/bidir", "{\"bidirectional\": true}", 48, 12, 12, 64, 0, 0},
};

const pe_family pe_family_alibi = {
    .name = "alibi",
    .title = "attention with linear biases",
    .paper = "Press et al. 2022, Train Short, Test Long: Attention with Linear Biases Enables "
             "Input Length Extrapolation, ICLR, arXiv:2108.12409",
    .acts = PE_ACTS_LOGITS,
    .direction_key = "bidirectional",
    .params = params,
    .n_params = RL_ARRAY_LEN(params),
    .formula = "bias = -m_h*(i - j) (causal) or -m_h*|i - j|; m_h = 2^(-8(h+1)/n), "
               "interleaved rule for n not a power of two",
    .ops = {
        .create = create,
        .destroy = destroy,
        .bias_ref = bias_ref,
        .bias_bound = bias_bound,
        .bias_gpu_create = bias_gpu_create,
        .inspect = inspect,
    },
    .bias_checks = bias_checks,
    .n_bias_checks = RL_ARRAY_LEN(bias_checks),
};
