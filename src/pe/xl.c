/* xl — Transformer-XL relative position terms (Dai et al. 2019,
 * "Transformer-XL: Attentive Language Models Beyond a Fixed-Length Context",
 * ACL, arXiv:1901.02860, §3.3). The paper's score is
 *   A_ij = q_i.k_j            (a) content
 *        + q_i.(W_R R_{i-j})  (b) content-dependent position
 *        + u.k_j              (c) global content bias
 *        + v.(W_R R_{i-j})    (d) global position bias
 * ropelab keeps all four: (a) is the attention engine's <q, k> (no vector
 * transform — the queries and keys are already the projected W_q E, W_k,E
 * of the paper), (b) + (c) + (d) are this encoding's logit bias:
 *   bias(h, i, j) = scale [ (q_{i,h} + v_h) . (W_R,h R_{pos_i - pos_j})
 *                           + u_h . k_{j,kvh} ],   scale = 1/sqrt(head_dim)
 * (XL scales the whole score by 1/sqrt(d_head); the engine scales only
 * <q, k>, so the bias carries the same factor). R_s is XL's sinusoid, sin
 * and cos concatenated: R_s = [sin(s w_m)]_m ++ [cos(s w_m)]_m, w_m =
 * base^(-2m/d_r), m < d_r/2. Memory (the segment cache) is not modelled.
 * The GPU side precomputes per token a_{i,h} = scale W_R,h^T (q_{i,h} + v_h)
 * [d_r] and c_{j,h} = scale u_h . k_{j,kvh} on the host (in double) and
 * bias_xl.glsl evaluates a . R_{i-j} + c with fp32 sin/cos.
 * u, v: [heads][head_dim] (HF r_w_bias, r_r_bias); W_R: [heads][head_dim][d_r]
 * (HF r_net.weight [heads*head_dim, d_model] also accepted), from .npy or
 * sigma * N(0, 1) from streams "xl/u", "xl/v", "xl/w_r" (row-major). */
#include <math.h>
#include <stdlib.h>

#include "core/rl_npy.h"
#include "pe/pe.h"

static const pe_param params[] = {
    {"d_r", RL_P_INT, "0", 0, 4096, NULL, "dimension of the sinusoid R (even); 0: head_dim"},
    {"base", RL_P_NUM, "10000.0", 1.0000001, 1e12, NULL, "wavelength base of R"},
    {"sigma", RL_P_NUM, "0.02", 0, 1e6, NULL, "standard deviation of seeded u, v, W_R"},
    {"u_path", RL_P_STR, "\"\"", 0, 0, NULL, ".npy u [heads, head_dim]; empty: seeded"},
    {"v_path", RL_P_STR, "\"\"", 0, 0, NULL, ".npy v [heads, head_dim]; empty: seeded"},
    {"w_r_path", RL_P_STR, "\"\"", 0, 0, NULL,
     ".npy W_R [heads, head_dim, d_r] or [heads*head_dim, d_r]; empty: seeded"},
};

typedef struct xl_state {
    uint32_t heads, kv_heads, d, dr;
    double scale;
    float *u, *v, *w;   /* [heads][d], [heads][d], [heads][d][dr] */
    double *inv_freq;   /* [dr/2] */
} xl_state;

static void destroy(pe_encoding *e)
{
    xl_state *s = pe_encoding_state(e);
    if (!s)
        return;
    free(s->u);
    free(s->v);
    free(s->w);
    free(s->inv_freq);
    free(s);
}

static rl_status tensor(pe_encoding *e, const char *key, const char *name, const uint64_t *shape,
                        uint32_t ndim, float **out, rl_error *err)
{
    size_t n = 1;
    for (uint32_t i = 0; i < ndim; i++)
        n *= shape[i];
    const char *path = pe_param_str(e, key);
    if (path[0]) {
        rl_npy a;
        rl_status st = pe_load_npy(e, key, path, shape, ndim, ndim == 3, &a, err);
        if (st)
            return st;
        *out = a.data; /* ownership moves */
        return RL_OK;
    }
    *out = malloc(n * sizeof **out);
    if (!*out)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    rl_rng rng;
    pe_rng_seed(e, name, &rng);
    double sigma = pe_param_num(e, "sigma");
    for (size_t i = 0; i < n; i++)
        (*out)[i] = (float)(sigma * rl_rng_normal(&rng));
    return RL_OK;
}

static rl_status create(pe_encoding *e, rl_error *err)
{
    const pe_shape *sh = pe_encoding_shape(e);
    xl_state *s = calloc(1, sizeof *s);
    if (!s)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    pe_encoding_set_state(e, s);
    s->heads = sh->heads;
    s->kv_heads = sh->kv_heads;
    s->d = sh->head_dim;
    int64_t dr = pe_param_int(e, "d_r");
    s->dr = dr ? (uint32_t)dr : sh->head_dim;
    if (s->dr % 2)
        return rl_fail_key(err, RL_ERR_ARG, "d_r",
                           "xl: d_r %u must be even (sin and cos halves)%s", s->dr,
                           dr ? "" : " (it defaults to head_dim)");
    pe_param_set_int(e, "d_r", s->dr);
    s->scale = 1.0 / sqrt((double)s->d);
    uint64_t hd[2] = {s->heads, s->d}, w[3] = {s->heads, s->d, s->dr};
    rl_status st;
    if ((st = tensor(e, "u_path", "u", hd, 2, &s->u, err)) ||
        (st = tensor(e, "v_path", "v", hd, 2, &s->v, err)) ||
        (st = tensor(e, "w_r_path", "w_r", w, 3, &s->w, err)))
        return st;
    s->inv_freq = malloc((s->dr / 2) * sizeof *s->inv_freq + 1);
    if (!s->inv_freq)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    double base = pe_param_num(e, "base");
    for (uint32_t m = 0; m < s->dr / 2; m++)
        s->inv_freq[m] = pe_sinusoid_inv_freq(m, s->dr, base);
    return RL_OK;
}

/* Reference: the four-term score of §3.3 minus (a), straight from the raw
 * tensors: W_R R_s first, then its dot with q and v, plus u.k. */
static double bias_ref(const pe_encoding *e, uint32_t h, uint64_t qtok, uint64_t ktok,
                       int64_t qpos, int64_t kpos, const float *q_i, const float *k_j)
{
    (void)qtok, (void)ktok;
    const xl_state *s = pe_encoding_state(e);
    double sd = (double)(qpos - kpos), total = 0;
    uint32_t hf = s->dr / 2;
    for (uint32_t c = 0; c < s->d; c++) {
        const float *wrow = s->w + ((size_t)h * s->d + c) * s->dr;
        double wr = 0; /* (W_R R_s)_c */
        for (uint32_t m = 0; m < hf; m++)
            wr += wrow[m] * sin(sd * s->inv_freq[m]) + wrow[hf + m] * cos(sd * s->inv_freq[m]);
        double qv = (q_i ? (double)q_i[c] : 0.0) + (double)s->v[(size_t)h * s->d + c];
        total += qv * wr;                                                   /* (b) + (d) */
        if (k_j)
            total += (double)s->u[(size_t)h * s->d + c] * (double)k_j[c];  /* (c) */
    }
    return s->scale * total;
}

/* a_{i,h}[m] = scale sum_c W[h][c][m] (q[c] + v[h][c]) in double. */
static void a_vec(const xl_state *s, uint32_t h, const float *q_i, double *a)
{
    for (uint32_t m = 0; m < s->dr; m++)
        a[m] = 0;
    for (uint32_t c = 0; c < s->d; c++) {
        double qv = (q_i ? (double)q_i[c] : 0.0) + (double)s->v[(size_t)h * s->d + c];
        const float *wrow = s->w + ((size_t)h * s->d + c) * s->dr;
        for (uint32_t m = 0; m < s->dr; m++)
            a[m] += wrow[m] * qv;
    }
    for (uint32_t m = 0; m < s->dr; m++)
        a[m] *= s->scale;
}

static double c_val(const xl_state *s, uint32_t h, const float *k_j)
{
    double c = 0;
    for (uint32_t i = 0; k_j && i < s->d; i++)
        c += (double)s->u[(size_t)h * s->d + i] * (double)k_j[i];
    return s->scale * c;
}

/* GPU error, from bias_xl.glsl's acc += a_m sin + a_{m'} cos; acc + c:
 *  - each fp32 sin/cos of fl(float(s) fl(w_m)) is off by trig_err(|s| w_m)
 *    (pe_fp32_trig_err): sum_m (|a_m| + |a_{hf+m}|) trig_err;
 *  - a and c are rounded to fp32 (2^-24 relative) and the d_r products and
 *    d_r + 1 sums round once each (|R| <= 1): (d_r + 3) 2^-24 sum |a|;
 *  - c's rounding and the last add: 2 * 2^-24 |c|.
 * The reference and this bound use the exact a, c from the raw tensors. */
static double bias_bound(const pe_encoding *e, uint32_t h, uint64_t qtok, uint64_t ktok,
                         int64_t qpos, int64_t kpos, const float *q_i, const float *k_j)
{
    (void)qtok, (void)ktok;
    const xl_state *s = pe_encoding_state(e);
    double abuf[256], *a = s->dr <= 256 ? abuf : malloc(s->dr * sizeof *a);
    if (!a)
        return INFINITY;
    a_vec(s, h, q_i, a);
    double sd = fabs((double)(qpos - kpos)), b = 0, sum = 0;
    uint32_t hf = s->dr / 2;
    for (uint32_t m = 0; m < hf; m++) {
        b += (fabs(a[m]) + fabs(a[hf + m])) * pe_fp32_trig_err(sd * s->inv_freq[m]);
        sum += fabs(a[m]) + fabs(a[hf + m]);
    }
    b += sum * (double)(s->dr + 3) * 0x1p-24 + 2 * fabs(c_val(s, h, k_j)) * 0x1p-24;
    if (a != abuf)
        free(a);
    return b;
}

static rl_status bias_gpu_create(rlvk_device *dev, const pe_encoding *e, const float *q,
                                 const float *k, uint64_t tokens, pe_bias_gpu *out, rl_error *err)
{
    const xl_state *s = pe_encoding_state(e);
    if (!q || !k || tokens == 0)
        return rl_fail(err, RL_ERR_ARG, "xl: the bias needs q and k of at least one token "
                                        "(it precomputes per-token terms)");
    uint32_t H = s->heads, group = s->heads / s->kv_heads, hf = s->dr / 2;
    uint64_t na = tokens * H * s->dr, nc = tokens * H;
    if (na > UINT32_MAX)
        return rl_fail(err, RL_ERR_LIMIT,
                       "xl: %llu tokens x %u heads x d_r %u exceeds the shader's 32-bit index",
                       (unsigned long long)tokens, H, s->dr);
    float *A = malloc(na * sizeof *A), *C = malloc(nc * sizeof *C),
          *F = malloc((hf + 1) * sizeof *F);
    double *a = malloc(s->dr * sizeof *a);
    rl_status st = RL_OK;
    if (!A || !C || !F || !a) {
        st = rl_fail(err, RL_ERR_NOMEM, "xl: out of host memory for %llu tokens",
                     (unsigned long long)tokens);
        goto done;
    }
    for (uint64_t t = 0; t < tokens; t++)
        for (uint32_t h = 0; h < H; h++) {
            a_vec(s, h, q + (t * H + h) * s->d, a);
            for (uint32_t m = 0; m < s->dr; m++)
                A[(t * H + h) * s->dr + m] = (float)a[m];
            C[t * H + h] = (float)c_val(s, h, k + (t * s->kv_heads + h / group) * s->d);
        }
    for (uint32_t m = 0; m < hf; m++)
        F[m] = (float)s->inv_freq[m];
    F[hf] = 0;
    uint32_t prm[4] = {s->dr, H, 0, 0};
    out->n_buffers = 4;
    if ((st = pe_buffer_from(dev, "xl params", prm, sizeof prm, &out->buffers[0], err)) ||
        (st = pe_buffer_from(dev, "xl a", A, na * sizeof *A, &out->buffers[1], err)) ||
        (st = pe_buffer_from(dev, "xl c", C, nc * sizeof *C, &out->buffers[2], err)) ||
        (st = pe_buffer_from(dev, "xl inv_freq", F, (hf + 1) * sizeof *F, &out->buffers[3], err)))
        goto done;
done:
    free(A);
    free(C);
    free(F);
    free(a);
    return st;
}

static rl_status inspect(const pe_encoding *e, int64_t r0, int64_t r1, json_t *obj, rl_error *err)
{
    (void)r0, (void)r1, (void)err;
    const xl_state *s = pe_encoding_state(e);
    json_t *f = json_array();
    for (uint32_t m = 0; m < s->dr / 2; m++)
        json_array_append_new(f, json_real(s->inv_freq[m]));
    /* The bias `inspect` prints is pe_bias_ref with q = k = 0: the global
     * position term (d), scale * v.(W_R R_{i-j}), only (docs/encodings.md). */
    json_object_set_new(obj, "frequencies", f);
    return RL_OK;
}

/* `ropelab check` rows: {label, params, tokens, heads, kv_heads, head_dim,
 * pos_cap_log2, quick}. */
static const pe_check_case bias_checks[] = {
    {"xl", "{}", 24, 4, 2, 32, 0, 1},
    {"xl/d_r16", "{\"d_r\": 16, \"sigma\": 0.1}", 32, 8, 8, 64, 0, 0},
};

const pe_family pe_family_xl = {
    .name = "xl",
    .title = "Transformer-XL relative position terms",
    .paper = "Dai et al. 2019, Transformer-XL: Attentive Language Models Beyond a Fixed-Length "
             "Context, ACL, arXiv:1901.02860, section 3.3",
    .acts = PE_ACTS_LOGITS,
    .params = params,
    .file_keys = "u_path v_path w_r_path",
    .n_params = RL_ARRAY_LEN(params),
    .formula = "bias = (q_i + v).(W_R R_{i-j}) / sqrt(d) + u.k_j / sqrt(d); R sinusoid "
               "[sin, cos] of i - j",
    .inspect_note = "bias shown for q = k = 0, i.e. the global position term "
                    "v.(W_R R_{i-j})/sqrt(head_dim) only",
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
