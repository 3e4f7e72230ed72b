/* kerple — KERPLE, logarithmic variant (Chi, Fan, Ramadge and Rudnicky
 * 2022, "KERPLE: Kernelized Relative Positional Embedding for Length
 * Extrapolation", NeurIPS, arXiv:2205.09921, eq. for the "log" kernel):
 * no vector transform; a logit bias from a conditionally positive definite
 * kernel of the distance,
 *   bias(h, i, j) = -r1_h * log(1 + r2_h * |pos_i - pos_j|),   r1_h, r2_h > 0,
 * one (r1, r2) pair per head (learned in the paper; here given or drawn).
 * The kernel is symmetric in i - j, so causal and bidirectional attention
 * see the same function of distance (the causal mask removes the future).
 *
 * r1 / r2: a number (every head), a list of `heads` numbers, or null: drawn
 * from the seeded streams "kerple/r1" ~ U(0.01, 2) and "kerple/r2" ~
 * U(0.01, 1) (ropelab's convention for untrained values; the paper trains
 * them from positive initial values). Stored as fp32, as a model's
 * parameters are; the reference computes in double from those values. */
#include <math.h>
#include <stdlib.h>

#include "pe/pe.h"

static const pe_param params[] = {
    {"r1", RL_P_JSON, "null", 0, 0, NULL,
     "bias scale r1 > 0: a number, a list per head, or null (seeded U(0.01, 2))"},
    {"r2", RL_P_JSON, "null", 0, 0, NULL,
     "distance scale r2 > 0: a number, a list per head, or null (seeded U(0.01, 1))"},
};

typedef struct kerple_state {
    uint32_t heads;
    float *r1, *r2;  /* [heads] each */
} kerple_state;

static void destroy(pe_encoding *e)
{
    kerple_state *s = pe_encoding_state(e);
    if (s) {
        free(s->r1);
        free(s->r2);
    }
    free(s);
}

/* One per-head parameter: number, list of heads numbers, or null (drawn
 * from U(lo, hi) on the stream "kerple/<key>"). Every value must be a
 * finite number > 0 that stays > 0 in fp32. */
static rl_status per_head(pe_encoding *e, const char *key, double lo, double hi, float *out,
                          rl_error *err)
{
    uint32_t n = pe_encoding_shape(e)->heads;
    const json_t *v = json_object_get(pe_encoding_params(e), key);
    if (json_is_null(v)) {
        rl_rng rng;
        pe_rng_seed(e, key, &rng);
        for (uint32_t h = 0; h < n; h++)
            out[h] = (float)(lo + (hi - lo) * rl_rng_uniform(&rng));
        return RL_OK;
    }
    if (json_is_array(v) && json_array_size(v) != n)
        return rl_fail_key(err, RL_ERR_ARG, key,
                           "kerple: %s has %zu values but the model has %u heads",
                           key, json_array_size(v), n);
    if (!json_is_array(v) && !json_is_number(v))
        return rl_fail_key(err, RL_ERR_ARG, key,
                           "kerple: %s must be a number or a list of %u numbers", key,
                           n);
    for (uint32_t h = 0; h < n; h++) {
        const json_t *x = json_is_array(v) ? json_array_get(v, h) : v;
        double d = json_is_number(x) ? json_number_value(x) : NAN;
        if (!json_is_number(x) || !isfinite(d) || !(d > 0) || !((float)d > 0) ||
            !isfinite((float)d))
            return rl_fail_key(err, RL_ERR_ARG, key,
                               "kerple: %s%s must be a finite number > 0 "
                               "(the kernel needs r1, r2 > 0)",
                               key, json_is_array(v) ? "[...]" : "");
        out[h] = (float)d;
    }
    return RL_OK;
}

static rl_status create(pe_encoding *e, rl_error *err)
{
    uint32_t n = pe_encoding_shape(e)->heads;
    kerple_state *s = calloc(1, sizeof *s);
    if (!s)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    pe_encoding_set_state(e, s);
    s->heads = n;
    s->r1 = malloc(n * sizeof *s->r1);
    s->r2 = malloc(n * sizeof *s->r2);
    if (!s->r1 || !s->r2)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    rl_status st;
    if ((st = per_head(e, "r1", 0.01, 2.0, s->r1, err)) ||
        (st = per_head(e, "r2", 0.01, 1.0, s->r2, err)))
        return st;
    /* Record the values in use, so results and --dry-run show them. */
    json_t *a1 = json_array(), *a2 = json_array();
    for (uint32_t h = 0; h < n; h++) {
        json_array_append_new(a1, json_real(s->r1[h]));
        json_array_append_new(a2, json_real(s->r2[h]));
    }
    pe_param_set_json(e, "r1", a1);
    pe_param_set_json(e, "r2", a2);
    return RL_OK;
}

static double bias_ref(const pe_encoding *e, uint32_t h, uint64_t qtok, uint64_t ktok,
                       int64_t qpos, int64_t kpos, const float *q_i, const float *k_j)
{
    (void)qtok, (void)ktok, (void)q_i, (void)k_j;
    const kerple_state *s = pe_encoding_state(e);
    double d = fabs((double)(qpos - kpos));
    return -(double)s->r1[h] * log1p((double)s->r2[h] * d);
}

/* GPU: -r1 * log(1 + r2 * float(d)) in fp32 (bias_kerple.glsl), u = 2^-24.
 * d = |i - j| < 2^24 is exact; x = fl(r2 d) has relative error u and
 * y = fl(1 + x) absolute error u (1 + x): together they move log(y) by at
 * most x u / (1 + x) + u <= 2u (first order). Vulkan bounds log by 2^-21
 * absolute for y in [0.5, 2] and 3 ulp outside ("Precision and Operation of
 * SPIR-V Instructions"). The final product with r1 rounds by ulp(|b|)/2.
 *   |err| <= r1 (2.01 u + E_log(y)) + ulp32(|b|),
 *   E_log = 2^-21 (y <= 2) or 3 ulp32(log y) (y > 2). */
static double bias_bound(const pe_encoding *e, uint32_t h, uint64_t qtok, uint64_t ktok,
                         int64_t qpos, int64_t kpos, const float *q_i, const float *k_j)
{
    const kerple_state *s = pe_encoding_state(e);
    double d = fabs((double)(qpos - kpos));
    if (d == 0)
        return 0; /* log(1) = 0 exactly; bias -0 */
    double y = 1.0 + (double)s->r2[h] * d, L = log(y);
    double elog = y <= 2.0 ? 0x1p-21 : 3 * rl_ulp32(L);
    double b = fabs(bias_ref(e, h, qtok, ktok, qpos, kpos, q_i, k_j));
    return (double)s->r1[h] * (2.01 * 0x1p-24 + elog) + rl_ulp32(b);
}

static rl_status bias_gpu_create(rlvk_device *dev, const pe_encoding *e, const float *q,
                                 const float *k, uint64_t tokens, pe_bias_gpu *out, rl_error *err)
{
    (void)q, (void)k, (void)tokens;
    const kerple_state *s = pe_encoding_state(e);
    float *r = malloc(2 * s->heads * sizeof *r); /* [heads][2] {r1, r2} */
    if (!r)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    for (uint32_t h = 0; h < s->heads; h++) {
        r[2 * h] = s->r1[h];
        r[2 * h + 1] = s->r2[h];
    }
    rl_status st = pe_buffer_from(dev, "kerple r1/r2", r, 2 * s->heads * sizeof *r,
                                  &out->buffers[0], err);
    free(r);
    out->n_buffers = 1;
    return st;
}

static rl_status inspect(const pe_encoding *e, int64_t r0, int64_t r1, json_t *obj, rl_error *err)
{
    (void)r0, (void)r1, (void)err;
    const kerple_state *s = pe_encoding_state(e);
    json_t *a = json_array(), *b = json_array();
    for (uint32_t h = 0; h < s->heads; h++) {
        json_array_append_new(a, json_real(s->r1[h]));
        json_array_append_new(b, json_real(s->r2[h]));
    }
    json_object_set_new(obj, "r1", a);
    json_object_set_new(obj, "r2", b);
    return RL_OK;
}

/* `ropelab check` rows: {label, params, tokens, heads, kv_heads, head_dim,
 * pos_cap_log2, quick}. Drawn per-head values; then given ones whose
 * log(1 + r2 d) spans y < 2 (near 0) to r2 d ~ 10^8 at 2^20. */
static const pe_check_case bias_checks[] = {
    {"kerple", "{}", 48, 8, 8, 64, 0, 1},
    {"kerple/given", "{\"r1\": [0.5, 1, 2, 8], \"r2\": [0.001, 0.1, 1, 100]}", 32, 4, 2, 32, 0, 0},
};

const pe_family pe_family_kerple = {
    .name = "kerple",
    .title = "KERPLE logarithmic kernel bias",
    .paper = "Chi et al. 2022, KERPLE: Kernelized Relative Positional Embedding for Length "
             "Extrapolation, NeurIPS, arXiv:2205.09921",
    .acts = PE_ACTS_LOGITS,
    .params = params,
    .n_params = RL_ARRAY_LEN(params),
    .formula = "bias = -r1_h*log(1 + r2_h*|i - j|), r1_h, r2_h > 0 per head",
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
