/* t5 — relative position buckets (Raffel et al. 2020, "Exploring the Limits
 * of Transfer Learning with a Unified Text-to-Text Transformer", JMLR 21,
 * §2.1; HF T5Attention). No vector transform; a logit bias
 *   bias(h, i, j) = B[h][bucket(pos_j - pos_i)]
 * with pe_t5_bucket. B comes from a .npy [num_buckets, heads] (HF
 * relative_attention_bias.weight layout) or is drawn as sigma * N(0, 1)
 * from the stream "t5/bias" in row-major [heads][num_buckets] order. */
#include <math.h>
#include <stdlib.h>

#include "core/rl_npy.h"
#include "pe/pe.h"

static const pe_param params[] = {
    {"bidirectional", RL_P_BOOL, "true", 0, 0, NULL,
     "true: encoder (both signs, half the buckets each); false: decoder (causal)"},
    {"num_buckets", RL_P_INT, "32", 2, 4096, NULL, "buckets (HF relative_attention_num_buckets)"},
    {"max_distance", RL_P_INT, "128", 1, 1073741824, NULL,
     "distance where the last logarithmic bucket starts (HF relative_attention_max_distance)"},
    {"path", RL_P_STR, "\"\"", 0, 0, NULL,
     ".npy bias table [num_buckets, heads] (float32/float16); empty: seeded N(0, sigma^2)"},
    {"sigma", RL_P_NUM, "0.02", 0, 1e6, NULL, "standard deviation of the seeded table"},
};

int64_t pe_t5_bucket(int64_t r, int bidirectional, uint32_t num_buckets, uint32_t max_distance)
{
    int64_t nb = num_buckets, bucket = 0, n;
    if (bidirectional) {
        nb /= 2;
        if (r > 0)
            bucket += nb;
        n = r < 0 ? -r : r;
    } else {
        n = r < 0 ? -r : 0;
    }
    int64_t max_exact = nb / 2;
    if (n < max_exact)
        return bucket + n;
    int64_t large = max_exact + (int64_t)(log((double)n / (double)max_exact) /
                                          log((double)max_distance / (double)max_exact) *
                                          (double)(nb - max_exact));
    if (large > nb - 1)
        large = nb - 1;
    return bucket + large;
}

typedef struct t5_state {
    int bidirectional;
    uint32_t num_buckets, max_distance, heads;
    float *bias;  /* [heads][num_buckets] */
} t5_state;

static void destroy(pe_encoding *e)
{
    t5_state *s = pe_encoding_state(e);
    if (s)
        free(s->bias);
    free(s);
}

static rl_status create(pe_encoding *e, rl_error *err)
{
    const pe_shape *sh = pe_encoding_shape(e);
    t5_state *s = calloc(1, sizeof *s);
    if (!s)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    pe_encoding_set_state(e, s);
    s->bidirectional = pe_param_bool(e, "bidirectional");
    s->num_buckets = (uint32_t)pe_param_int(e, "num_buckets");
    s->max_distance = (uint32_t)pe_param_int(e, "max_distance");
    s->heads = sh->heads;
    uint32_t nb = s->bidirectional ? s->num_buckets / 2 : s->num_buckets, me = nb / 2;
    if (me < 1)
        return rl_fail_key(err, RL_ERR_ARG, "num_buckets",
                           "t5: num_buckets %u leaves no exact bucket (need at least %u %s)",
                           s->num_buckets, s->bidirectional ? 4 : 2,
                           s->bidirectional ? "when bidirectional" : "when causal");
    if (s->max_distance <= me)
        return rl_fail_key(err, RL_ERR_ARG, "max_distance",
                           "t5: max_distance %u must exceed the exact range max_exact = %u "
                           "(num_buckets/%d)",
                           s->max_distance, me, s->bidirectional ? 4 : 2);
    size_t n = (size_t)s->heads * s->num_buckets;
    const char *path = pe_param_str(e, "path");
    if (path[0]) {
        rl_npy a;
        uint64_t want[2] = {s->num_buckets, s->heads};
        rl_status st = pe_load_npy(e, "path", path, want, 2, 0, &a, err);
        if (st)
            return st;
        s->bias = malloc(n * sizeof *s->bias);
        if (!s->bias) {
            rl_npy_free(&a);
            return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
        }
        for (uint32_t b = 0; b < s->num_buckets; b++)  /* [nb][heads] -> [heads][nb] */
            for (uint32_t h = 0; h < s->heads; h++)
                s->bias[(size_t)h * s->num_buckets + b] = a.data[(size_t)b * s->heads + h];
        rl_npy_free(&a);
    } else {
        s->bias = malloc(n * sizeof *s->bias);
        if (!s->bias)
            return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
        rl_rng rng;
        pe_rng_seed(e, "bias", &rng);
        double sigma = pe_param_num(e, "sigma");
        for (size_t i = 0; i < n; i++)
            s->bias[i] = (float)(sigma * rl_rng_normal(&rng));
    }
    return RL_OK;
}

static double bias_ref(const pe_encoding *e, uint32_t h, uint64_t qtok, uint64_t ktok,
                       int64_t qpos, int64_t kpos, const float *q_i, const float *k_j)
{
    (void)qtok, (void)ktok, (void)q_i, (void)k_j;
    const t5_state *s = pe_encoding_state(e);
    int64_t b = pe_t5_bucket(kpos - qpos, s->bidirectional, s->num_buckets, s->max_distance);
    return s->bias[(size_t)h * s->num_buckets + (size_t)b];
}

/* GPU: bias_t5.glsl picks the bucket with integer compares and copies an
 * fp32 table entry: it must be bit-exact (bound 0). */

static rl_status bias_gpu_create(rlvk_device *dev, const pe_encoding *e, const float *q,
                                 const float *k, uint64_t tokens, pe_bias_gpu *out, rl_error *err)
{
    (void)q, (void)k, (void)tokens;
    const t5_state *s = pe_encoding_state(e);
    uint32_t nb = s->bidirectional ? s->num_buckets / 2 : s->num_buckets, me = nb / 2;
    uint32_t n_thr = nb - 1 - me;
    uint32_t *prm = malloc((4 + n_thr) * sizeof *prm);
    if (!prm)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    prm[0] = (uint32_t)s->bidirectional;
    prm[1] = s->num_buckets;
    prm[2] = me;
    prm[3] = n_thr;
    /* thr[t] = smallest n with log bucket >= me + 1 + t (the bucket is
     * non-decreasing in n); UINT32_MAX when no n < 2^31 reaches it. */
    for (uint32_t t = 0; t < n_thr; t++) {
        int64_t target = me + 1 + t, lo = me, hi = INT32_MAX;
        if (pe_t5_bucket(-hi, 0, nb, s->max_distance) < target) {
            prm[4 + t] = UINT32_MAX;
            continue;
        }
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (pe_t5_bucket(-mid, 0, nb, s->max_distance) >= target)
                hi = mid;
            else
                lo = mid + 1;
        }
        prm[4 + t] = (uint32_t)lo;
    }
    rl_status st = pe_buffer_from(dev, "t5 params", prm, (4 + n_thr) * sizeof *prm,
                                  &out->buffers[0], err);
    if (!st)
        st = pe_buffer_from(dev, "t5 bias", s->bias,
                            (uint64_t)s->heads * s->num_buckets * sizeof(float), &out->buffers[1],
                            err);
    free(prm);
    out->n_buffers = 2;
    return st;
}

static rl_status inspect(const pe_encoding *e, int64_t r0, int64_t r1, json_t *obj, rl_error *err)
{
    (void)err;
    const t5_state *s = pe_encoding_state(e);
    json_t *a = json_array();
    for (int64_t r = r0; r <= r1; r++)
        json_array_append_new(a, json_integer(pe_t5_bucket(r, s->bidirectional, s->num_buckets,
                                                           s->max_distance)));
    json_object_set_new(obj, "bucket", a);
    return RL_OK;
}

/* `ropelab check` rows: {label, params, tokens, heads, kv_heads, head_dim,
 * pos_cap_log2, quick}. */
static const pe_check_case bias_checks[] = {
    {"t5/bidir", "{}", 48, 8, 8, 64, 0, 1},
    {"t5/causal", "{\"bidirectional\": false, \"num_buckets\": 64, \"max_distance\": 1000}", 48, 12, 4, 64, 0, 0},
};

const pe_family pe_family_t5 = {
    .name = "t5",
    .title = "T5 relative position buckets",
    .paper = "Raffel et al. 2020, Exploring the Limits of Transfer Learning with a Unified "
             "Text-to-Text Transformer, JMLR 21(140), arXiv:1910.10683",
    .acts = PE_ACTS_LOGITS,
    .direction_key = "bidirectional",
    .unscaled_logits = 1, /* HF T5Attention: no 1/sqrt(d) before the softmax */
    .params = params,
    .file_keys = "path",
    .n_params = RL_ARRAY_LEN(params),
    .formula = "bias = B[h][bucket(j - i)]; half the buckets exact, the rest logarithmic up to "
               "max_distance",
    .ops = {
        .create = create,
        .destroy = destroy,
        .bias_ref = bias_ref,
        .bias_gpu_create = bias_gpu_create,
        .inspect = inspect,
    },
    .bias_checks = bias_checks,
    .n_bias_checks = RL_ARRAY_LEN(bias_checks),
};
