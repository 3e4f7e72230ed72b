/* xpos — Sun et al. 2022, "A Length-Extrapolatable Transformer",
 * arXiv:2212.10554, section 3.2: RoPE times a per-pair exponential decay,
 *   q'_m = zeta^{+(m-c)/scale_base} R(m) q,   k'_n = zeta^{-(n-c)/scale_base} R(n) k,
 *   <q'_m, k'_n> = sum_j zeta_j^{(m-n)/scale_base} <R(m-n) pair_j(q), pair_j(k)>,
 *   zeta_j = (2j/d + gamma) / (1 + gamma),  theta_j = base^{-2j/d},
 * with interleaved pairs (x_2j, x_2j+1) over the whole head (d = head_dim).
 *
 * Semantics followed: microsoft/torchscale, torchscale/component/
 * xpos_relative_position.py (class XPOS; Hugging Face transformers has no
 * xPos). There: scale = (arange(0, d, 2) + 0.4 d) / (1.4 d) = zeta_j with
 * gamma 0.4; the decay exponent runs over min_pos .. max_pos with min_pos =
 * -(length + offset) // 2, i.e. token at absolute position p gets
 * zeta^{(p - c)/scale_base}, c = ceil((length + offset) / 2); the angle uses
 * the absolute position p (fixed_pos_embedding over arange(length+offset),
 * the last `length` rows); queries use scale, keys (downscale=True) 1/scale;
 * rotate_every_two: y_2j = x_2j cos - x_2j+1 sin, y_2j+1 = x_2j+1 cos +
 * x_2j sin. Differences here: (1) one centre c per encoding (parameter
 * `center`, default ceil(max_positions/2), torchscale's value for a sequence
 * of max_positions tokens) where torchscale re-centres at every decoding
 * step (it caches raw keys and re-encodes all of them each step, so its q
 * and k always share c): c cancels in q'.k' exactly, so the logits are the
 * same; (2) gamma and base are parameters (torchscale fixes 0.4 and 10000);
 * (3) no partial rotary (torchscale rotates the whole head).
 *
 * Finite at 2^20: zeta_0 = gamma/(1+gamma) = 0.2857 for gamma 0.4, so
 * zeta_0^{p/512} = 2^{-1.807 p/512} leaves fp32 (2^-126 .. 2^128) by p ~
 * 36000, and uncentred keys at 2^20 would need 2^{+3700}. Centring halves
 * the exponent's reach, and each factor is kept within 2^{+-XPOS_E_MAX}
 * (60): |p - c| * |log2 zeta_0| / scale_base <= 60, so q' and k' stay
 * normal and finite for |x| in [2^-60, 2^60] and every product q'_i k'_i
 * stays below 2^120 * |q_i||k_i| (a sum of d such terms stays finite). With
 * the paper's scale_base 512 and gamma 0.4 that is |p - c| <= 16998, i.e.
 * sequences up to ~34000 tokens; positions to 2^20 need scale_base >= 2^15
 * (|p - c| <= 2^19 at c = 2^19) — vec_check refuses anything beyond, naming
 * the limit, instead of producing inf/0. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pe/pe.h"
#include "pe/rope.h"
#include "rl_push.h"
#include "xpos.spv.h"

#define XPOS_E_MAX 60.0 /* |log2| of the largest decay factor kept (see above) */

static const pe_param params[] = {
    {"scale_base", RL_P_NUM, "512.0", 1e-3, 1e12, NULL,
     "decay length: zeta_j^((m-n)/scale_base) (512 in the paper and torchscale)"},
    {"gamma", RL_P_NUM, "0.4", 1e-6, 1e6, NULL,
     "zeta_j = (2j/d + gamma)/(1 + gamma) (0.4 in the paper and torchscale)"},
    {"base", RL_P_NUM, "10000.0", 1.0000001, 1e12, NULL,
     "rotation base: theta_j = base^(-2j/d) (torchscale: 10000)"},
    {"center", RL_P_JSON, "null", 0, 0, NULL,
     "integer c: decay exponent (p - c)/scale_base, q.k unchanged by it (default "
     "ceil(max_positions/2), torchscale's -min_pos; 0 if the length is unknown)"},
};

typedef struct xpos_state {
    uint32_t n_pairs;
    int64_t center;
    double scale_base;
    double *theta;    /* [n_pairs] base^(-2j/d) */
    double *log2z;    /* [n_pairs] log2(zeta_j) (< 0) */
} xpos_state;

static void destroy(pe_encoding *e)
{
    xpos_state *s = pe_encoding_state(e);
    if (!s)
        return;
    free(s->theta);
    free(s->log2z);
    free(s);
}

static rl_status create(pe_encoding *e, rl_error *err)
{
    const pe_shape *sh = pe_encoding_shape(e);
    uint32_t d = sh->head_dim;
    if (d % 2)
        return rl_fail(err, RL_ERR_ARG, "xpos: head_dim %u must be even (rotary pairs)", d);
    const json_t *cj = json_object_get(pe_encoding_params(e), "center");
    int64_t c;
    if (json_is_null(cj)) {
        c = (int64_t)((sh->max_positions + 1) / 2);
    } else if (json_is_integer(cj) && json_integer_value(cj) >= -(1LL << 31) &&
               json_integer_value(cj) < (1LL << 31)) {
        c = (int64_t)json_integer_value(cj);
    } else {
        return rl_fail_key(err, RL_ERR_ARG, "center",
                           "xpos: center must be an integer in [-2^31, 2^31)");
    }
    if (c > INT32_MAX)
        return rl_fail_key(err, RL_ERR_LIMIT, "center",
                           "xpos: center %lld exceeds the kernel's int32 centre",
                           (long long)c);
    xpos_state *s = calloc(1, sizeof *s);
    if (!s)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    pe_encoding_set_state(e, s);
    s->n_pairs = d / 2;
    s->center = c;
    s->scale_base = pe_param_num(e, "scale_base");
    s->theta = malloc(s->n_pairs * sizeof *s->theta);
    s->log2z = malloc(s->n_pairs * sizeof *s->log2z);
    if (!s->theta || !s->log2z)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    double base = pe_param_num(e, "base"), gamma = pe_param_num(e, "gamma");
    for (uint32_t j = 0; j < s->n_pairs; j++) {
        s->theta[j] = pe_sinusoid_inv_freq(j, d, base);
        s->log2z[j] = log2((2.0 * j / d + gamma) / (1.0 + gamma));
    }
    pe_param_set_int(e, "center", c);
    return RL_OK;
}

/* The largest |p - c| whose decay factors all stay within 2^+-XPOS_E_MAX. */
static double max_offset(const xpos_state *s)
{
    return floor(XPOS_E_MAX * s->scale_base / fabs(s->log2z[0]));
}

static rl_status vec_check(const pe_encoding *e, const uint32_t *pos, size_t tokens,
                           rl_error *err)
{
    const xpos_state *s = pe_encoding_state(e);
    double lim = max_offset(s);
    for (size_t t = 0; t < tokens; t++) {
        double off = (double)pos[t] - (double)s->center;
        if (fabs(off) > lim)
            return rl_fail(err, RL_ERR_LIMIT,
                           "xpos: position %u is %.0f from the centre %lld: zeta_0^(%.0f/%g) = "
                           "2^%.1f leaves the fp32 range kept (2^+-%.0f: |position - center| <= "
                           "%.0f here); raise scale_base or move center",
                           pos[t], off, (long long)s->center, off, s->scale_base,
                           off * s->log2z[0] / s->scale_base, XPOS_E_MAX, lim);
    }
    return RL_OK;
}

/* Reference from the paper's formula in double: sign +1 for queries, -1 for
 * keys. */
static void ref_signed(const pe_encoding *e, double sign, const float *x, const uint32_t *pos,
                       size_t tokens, uint32_t heads, double *y)
{
    const xpos_state *s = pe_encoding_state(e);
    uint32_t d = 2 * s->n_pairs;
    for (size_t t = 0; t < tokens; t++)
        for (uint32_t j = 0; j < s->n_pairs; j++) {
            double a = (double)pos[t] * s->theta[j];
            double zeta = exp2(s->log2z[j]);
            double sc = pow(zeta, sign * ((double)pos[t] - (double)s->center) / s->scale_base);
            double c = cos(a), sn = sin(a);
            for (uint32_t h = 0; h < heads; h++) {
                size_t o = (t * heads + h) * d + 2 * j;
                double xa = x[o], xb = x[o + 1];
                y[o] = sc * (xa * c - xb * sn);
                y[o + 1] = sc * (xb * c + xa * sn);
            }
        }
}

static void vec_ref(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                    uint32_t heads, double *y)
{
    ref_signed(e, 1.0, x, pos, tokens, heads, y);
}

static void vec_ref_k(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                      uint32_t heads, double *y)
{
    ref_signed(e, -1.0, x, pos, tokens, heads, y);
}

/* Bound of the kernel (xpos.comp) per element. With M = |x_a| + |x_b|, s the
 * exact factor and e = sign (p - c) log2(zeta_j)/scale_base its exponent:
 *  - rotation: the fp32 angle and sin/cos are off by pe_fp32_trig_err(phi)
 *    each (angle rounding + Vulkan's 2^-11), so x_a c - x_b sn is off by
 *    M trig_err + 2 ulp(M) (a product and a difference rounded);
 *  - factor: t = fl(fl(p - c) k32) with k32 = fl(e/(p - c)) (p - c exact in
 *    fp32 for |p - c| < 2^24) is within |e| 2^-23 of e, which moves 2^t by a
 *    relative 2^(|e| 2^-23) - 1; Vulkan's exp2 is within 3 + 2|t| ulp
 *    ("Precision and Operation of SPIR-V Instructions"), a relative
 *    (3 + 2(|e| + 1)) 2^-23; together delta_s;
 *  - the final product rounds once: ulp(s M).
 * |y - y_ref| <= s M (trig_err + delta_s) (1 + delta_s) + 2 s ulp(M) (1 +
 * delta_s) + ulp(s M) <= s M (trig_err + delta_s)(1 + delta_s) + 6 ulp(s M)
 * (s ulp(M) <= 2 ulp(s M)). Relative scale: s M. */
static void bound_signed(const pe_encoding *e, double sign, const float *x, const uint32_t *pos,
                         size_t tokens, uint32_t heads, double *bound, double *scale)
{
    const xpos_state *s = pe_encoding_state(e);
    uint32_t d = 2 * s->n_pairs;
    for (size_t t = 0; t < tokens; t++)
        for (uint32_t j = 0; j < s->n_pairs; j++) {
            double phi = (double)pos[t] * s->theta[j];
            double ex = sign * ((double)pos[t] - (double)s->center) * s->log2z[j] / s->scale_base;
            double sc = exp2(ex), ae = fabs(ex);
            double ds = expm1(ae * 0x1p-23 * log(2.0)) + (3.0 + 2.0 * (ae + 1.0)) * 0x1p-23;
            double te = pe_fp32_trig_err(phi);
            for (uint32_t h = 0; h < heads; h++) {
                size_t o = (t * heads + h) * d + 2 * j;
                double m = fabs((double)x[o]) + fabs((double)x[o + 1]);
                double b = sc * m * (te + ds) * (1.0 + ds) + 6.0 * rl_ulp32(sc * m);
                bound[o] = bound[o + 1] = b;
                scale[o] = scale[o + 1] = sc * m;
            }
        }
}

static void vec_bound(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                      uint32_t heads, double *bound, double *scale)
{
    bound_signed(e, 1.0, x, pos, tokens, heads, bound, scale);
}

static void vec_bound_k(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                        uint32_t heads, double *bound, double *scale)
{
    bound_signed(e, -1.0, x, pos, tokens, heads, bound, scale);
}

/* ---- device ---------------------------------------------------------------- */

_Static_assert(sizeof(struct rl_xpos_push) == 16, "rl_xpos_push layout");
_Static_assert(offsetof(struct rl_xpos_push, group_base) == 0, "group_base first");
_Static_assert(offsetof(struct rl_xpos_push, center) == 8, "rl_xpos_push layout");

typedef struct xpos_gpu {
    rlvk_pipeline pipe;
    rlvk_buffer aux; /* [n_pairs] vec2 (theta_j, +-log2(zeta_j)/scale_base) f32 */
} xpos_gpu;

static rl_status vec_gpu_create(pe_vec_gpu *g, rl_error *err)
{
    const xpos_state *s = pe_encoding_state(g->e);
    xpos_gpu *k = calloc(1, sizeof *k);
    if (!k)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    g->impl = k;
    uint32_t d = 2 * s->n_pairs;
    uint32_t spec[2] = {d, g->heads};
    char name[48];
    snprintf(name, sizeof name, "xpos_d%u_h%u", d, g->heads);
    rlvk_pipeline_desc pd = {
        .name = name,
        .spirv = rl_spv_xpos,
        .spirv_bytes = sizeof rl_spv_xpos,
        .n_bindings = 4,
        .push_bytes = sizeof(struct rl_xpos_push),
        .local_size_x = 64,
        .n_spec = 2,
        .spec = spec,
    };
    rl_status st = rlvk_pipeline_create(g->dev, &pd, &k->pipe, err);
    if (st)
        return st;
    float *aux = malloc(2 * s->n_pairs * sizeof *aux);
    if (!aux)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    /* The key's exponent is the query's negated (exact in fp32). */
    float sign = g->role == PE_ROLE_K ? -1.0f : 1.0f;
    for (uint32_t j = 0; j < s->n_pairs; j++) {
        aux[2 * j] = (float)s->theta[j];
        aux[2 * j + 1] = sign * (float)(s->log2z[j] / s->scale_base);
    }
    st = pe_buffer_from(g->dev, "xpos theta/decay", aux, 2 * s->n_pairs * sizeof *aux, &k->aux,
                        err);
    free(aux);
    return st;
}

static rl_status vec_gpu_record(rlvk_cmd *cmd, pe_vec_gpu *g, const rlvk_buffer *x,
                                const rlvk_buffer *y, const rlvk_buffer *pos, uint64_t tokens,
                                rl_error *err)
{
    const xpos_state *s = pe_encoding_state(g->e);
    xpos_gpu *k = g->impl;
    struct rl_xpos_push p = {
        .group_base = 0,
        .n_pairs = (uint32_t)(tokens * g->heads * s->n_pairs),
        .center = (int32_t)s->center,
    };
    const rlvk_buffer *bufs[4] = {x, y, pos, &k->aux};
    return rlvk_cmd_dispatch(cmd, &k->pipe, bufs, &p, rlvk_groups(p.n_pairs, k->pipe.local_size_x),
                             err);
}

static void vec_gpu_destroy(pe_vec_gpu *g)
{
    xpos_gpu *k = g->impl;
    if (!k)
        return;
    rlvk_pipeline_destroy(g->dev, &k->pipe);
    rlvk_buffer_destroy(g->dev, &k->aux);
    free(k);
    g->impl = NULL;
}

/* The same rotation without the decay: plain RoPE, interleaved (rotate_every_two),
 * the same base, fp32 angles. */
static json_t *rope_twin(const pe_encoding *e)
{
    return json_pack("{s:f, s:s, s:s}", "rope_theta", pe_param_num(e, "base"), "layout",
                     rope_layout_name(RL_ROPE_LAYOUT_INTERLEAVED), "precision", "fp32");
}

static rl_status inspect(const pe_encoding *e, int64_t r0, int64_t r1, json_t *obj, rl_error *err)
{
    (void)r0;
    (void)r1;
    (void)err;
    const xpos_state *s = pe_encoding_state(e);
    json_t *f = json_array(), *z = json_array();
    for (uint32_t j = 0; j < s->n_pairs; j++) {
        json_array_append_new(f, json_real(s->theta[j]));
        json_array_append_new(z, json_real(exp2(s->log2z[j])));
    }
    json_object_set_new(obj, "frequencies", f);
    json_object_set_new(obj, "zeta", z);
    json_object_set_new(obj, "center", json_integer((json_int_t)s->center));
    json_object_set_new(obj, "max_offset", json_real(max_offset(s)));
    return RL_OK;
}

/* `ropelab check` rows: {label, params, tokens, heads, kv_heads, head_dim,
 * pos_cap_log2, quick}, each run for q and for k (src/check/chk_pe.c). The
 * paper's setting within its finite range (positions < 2^15, centre 2^14:
 * |p - c| <= 16384 <= 16997);
 * positions to 2^max_pos_log2 (<= 2^24) with scale_base 2^20 (|p - c| * 1.807
 * / 2^20 <= 29 at c = 2^19); edge shapes: one pair (head_dim 2), an odd pair
 * count (head_dim 6), an odd token count. */
static const pe_check_case vec_checks[] = {
    {"xpos/paper", "{\"center\": 16384}", 65, 8, 0, 64, 15, 1},
    {"xpos/2^20", "{\"scale_base\": 1048576, \"center\": 524288}", 33, 4, 0, 128, 0, 1},
    {"xpos/d2", "{\"center\": 8192, \"gamma\": 0.1}", 17, 3, 0, 2, 14, 0},
    {"xpos/d6", "{\"center\": 8192, \"base\": 500000}", 31, 1, 0, 6, 14, 0},
};

const pe_family pe_family_xpos = {
    .name = "xpos",
    .title = "xPos: RoPE with a per-pair exponential decay (q by zeta^m, k by zeta^-n)",
    .paper = "Sun et al. 2022, A Length-Extrapolatable Transformer, arXiv:2212.10554; "
             "semantics of microsoft/torchscale xpos_relative_position.py",
    .acts = PE_ACTS_VECTORS,
    .params = params,
    .n_params = RL_ARRAY_LEN(params),
    .formula = "q' = zeta^((m-c)/scale_base) R(m) q, k' = zeta^(-(n-c)/scale_base) R(n) k, "
               "zeta_j = (2j/d + gamma)/(1 + gamma), interleaved pairs, theta_j = base^(-2j/d)",
    .inspect_note = "q.k decays as zeta_j^((m-n)/scale_base); positions with |p - center| > "
                    "max_offset are refused (factors kept within 2^+-60 in fp32)",
    .ops = {
        .create = create,
        .destroy = destroy,
        .vec_check = vec_check,
        .vec_ref = vec_ref,
        .vec_bound = vec_bound,
        .vec_gpu_create = vec_gpu_create,
        .vec_gpu_record = vec_gpu_record,
        .vec_gpu_destroy = vec_gpu_destroy,
        .inspect = inspect,
        .vec_ref_k = vec_ref_k,
        .vec_bound_k = vec_bound_k,
        .rope_twin = rope_twin,
    },
    .vec_checks = vec_checks,
    .n_vec_checks = RL_ARRAY_LEN(vec_checks),
};
