/* sinusoidal — Vaswani et al. 2017, "Attention Is All You Need", §3.5:
 *   PE(p, 2i) = sin(p / base^(2i/d)),  PE(p, 2i+1) = cos(p / base^(2i/d))
 * added to the already-projected q and k of every head:
 *   q' = q + alpha PE(pos_i),  k' = k + alpha PE(pos_j)
 * (the paper adds PE to the embeddings before the projections; ropelab works
 * on projected vectors — a simplification, see docs/encodings.md — so
 * <q', k'> = <q,k> + alpha<q,PE_j> + alpha<PE_i,k> + alpha^2<PE_i,PE_j>: the
 * cross terms depend on absolute positions, only the last on i - j). */
#include <math.h>
#include <stdlib.h>

#include "pe/pe.h"

static const pe_param params[] = {
    {"alpha", RL_P_NUM, "1.0", -1e6, 1e6, NULL, "scale of the added table (q' = q + alpha*PE)"},
    {"base", RL_P_NUM, "10000.0", 1.0000001, 1e12, NULL, "wavelength base (10000 in the paper)"},
};

typedef struct sin_state {
    double alpha;
    double inv_freq[];  /* [head_dim/2] */
} sin_state;

static rl_status create(pe_encoding *e, rl_error *err)
{
    uint32_t d = pe_encoding_shape(e)->head_dim;
    if (d % 2)
        return rl_fail(err, RL_ERR_ARG, "sinusoidal: head_dim %u must be even (sin/cos pairs)", d);
    sin_state *s = malloc(sizeof *s + (d / 2) * sizeof(double));
    if (!s)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    s->alpha = pe_param_num(e, "alpha");
    double base = pe_param_num(e, "base");
    for (uint32_t i = 0; i < d / 2; i++)
        s->inv_freq[i] = pe_sinusoid_inv_freq(i, d, base);
    pe_encoding_set_state(e, s);
    return RL_OK;
}

static void destroy(pe_encoding *e) { free(pe_encoding_state(e)); }

/* Reference: PE written directly from the paper's formula, in double. */
static void vec_ref(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                    uint32_t heads, double *y)
{
    const sin_state *s = pe_encoding_state(e);
    uint32_t d = pe_encoding_shape(e)->head_dim;
    for (size_t t = 0; t < tokens; t++)
        for (uint32_t h = 0; h < heads; h++)
            for (uint32_t k = 0; k < d; k++) {
                size_t o = (t * heads + h) * d + k;
                double a = (double)pos[t] * s->inv_freq[k / 2];
                y[o] = (double)x[o] + s->alpha * (k % 2 == 0 ? sin(a) : cos(a));
            }
}

/* GPU: fl(x + fl(alpha * sincos32(fl(fl(p) w)))). The fp32 sin/cos is off by
 * pe_fp32_trig_err(phi) (angle rounding + Vulkan's 2^-11), times |alpha|;
 * fl(alpha*pe) and the add round once each: <= ulp(|x| + |alpha|) together
 * (|pe| <= 1). Bound: |alpha| trig_err(phi) + ulp32(|x| + |alpha|). */
static void vec_bound(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                      uint32_t heads, double *bound, double *scale)
{
    const sin_state *s = pe_encoding_state(e);
    uint32_t d = pe_encoding_shape(e)->head_dim;
    double al = fabs(s->alpha);
    for (size_t t = 0; t < tokens; t++)
        for (uint32_t h = 0; h < heads; h++)
            for (uint32_t k = 0; k < d; k++) {
                size_t o = (t * heads + h) * d + k;
                double phi = (double)pos[t] * s->inv_freq[k / 2];
                bound[o] = al * pe_fp32_trig_err(phi) + rl_ulp32(fabs(x[o]) + al);
                scale[o] = fabs(x[o]) + al;
            }
}

static rl_status vec_gpu_create(pe_vec_gpu *g, rl_error *err)
{
    const sin_state *s = pe_encoding_state(g->e);
    uint32_t d = pe_encoding_shape(g->e)->head_dim;
    float f[512];
    float *fr = d / 2 <= 512 ? f : malloc((d / 2) * sizeof *fr);
    if (!fr)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    for (uint32_t i = 0; i < d / 2; i++)
        fr[i] = (float)s->inv_freq[i];
    rl_status st = pe_add_create(g, PE_ADD_SINUSOID, 0, 0, (float)s->alpha, fr, d / 2, err);
    if (fr != f)
        free(fr);
    return st;
}

static rl_status inspect(const pe_encoding *e, int64_t r0, int64_t r1, json_t *obj, rl_error *err)
{
    (void)r0;
    (void)r1;
    (void)err;
    const sin_state *s = pe_encoding_state(e);
    uint32_t d = pe_encoding_shape(e)->head_dim;
    json_t *f = json_array();
    for (uint32_t i = 0; i < d / 2; i++)
        json_array_append_new(f, json_real(s->inv_freq[i]));
    json_object_set_new(obj, "frequencies", f);
    return RL_OK;
}

/* `ropelab check` rows: {label, params, tokens, heads, kv_heads, head_dim,
 * pos_cap_log2, quick}. */
static const pe_check_case vec_checks[] = {
    {"sinusoidal", "{}", 65, 8, 0, 64, 0, 1},
    {"sinusoidal", "{\"alpha\": 0.5, \"base\": 500000}", 129, 1, 0, 128, 0, 0},
};

const pe_family pe_family_sinusoidal = {
    .name = "sinusoidal",
    .title = "sinusoidal absolute positions, added to q and k",
    .paper = "Vaswani et al. 2017, Attention Is All You Need, arXiv:1706.03762, section 3.5",
    .acts = PE_ACTS_VECTORS,
    .params = params,
    .n_params = RL_ARRAY_LEN(params),
    .formula = "q' = q + alpha*PE(i), k' = k + alpha*PE(j); PE(p,2m) = sin(p/base^(2m/d)), "
               "PE(p,2m+1) = cos(p/base^(2m/d))",
    .ops = {
        .create = create,
        .destroy = destroy,
        .vec_ref = vec_ref,
        .vec_bound = vec_bound,
        .vec_gpu_create = vec_gpu_create,
        .vec_gpu_record = pe_add_record,
        .vec_gpu_destroy = pe_add_destroy,
        .inspect = inspect,
    },
    .vec_checks = vec_checks,
    .n_vec_checks = RL_ARRAY_LEN(vec_checks),
};
