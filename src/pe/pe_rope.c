/* rope — the RoPE family behind the registry interface, through rope.h's
 * public API only (frequencies, CPU reference, GPU kernel). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pe/pe.h"
#include "pe/rope.h"

static const pe_param params[] = {
    {"rotary_dim", PE_INT, "0", 0, ROPE_MAX_HEAD_DIM, NULL,
     "dimensions rotated (even); 0: head_dim (HF partial_rotary_factor * head_dim)"},
    {"theta", PE_NUM, "10000.0", 1.0000001, 1e12, NULL, "frequency base (HF rope_theta)"},
    {"layout", PE_ENUM, "\"half\"", 0, 0, "half|interleaved",
     "pairs (j, j + rot/2) as GPT-NeoX/Llama, or (2j, 2j+1) as GPT-J/RoFormer"},
};

/* ==== MERGE: replace by rope_desc_from_json(d, params, err) (issue 3) ==== */
static rl_status pe_rope_desc_from_params(const pe_encoding *e, rope_desc *d, rl_error *err)
{
    (void)err;
    memset(d, 0, sizeof *d);
    d->head_dim = pe_encoding_shape(e)->head_dim;
    d->rotary_dim = (uint32_t)pe_param_int(e, "rotary_dim");
    d->theta = pe_param_num(e, "theta");
    d->layout = strcmp(pe_param_str(e, "layout"), "interleaved") == 0 ? RL_ROPE_LAYOUT_INTERLEAVED
                                                                        : RL_ROPE_LAYOUT_HALF;
    return RL_OK;
}
/* ==== end MERGE ==== */

static rl_status create(pe_encoding *e, rl_error *err)
{
    rope_desc d;
    rl_status st = pe_rope_desc_from_params(e, &d, err);
    rope_freqs *f = malloc(sizeof *f);
    if (!f)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    if (!st)
        st = rope_freqs_compute(&d, f, err);
    if (st) {
        free(f);
        rl_error_prefix(err, "rope");
        return st;
    }
    pe_encoding_set_state(e, f);
    pe_param_set_int(e, "rotary_dim", f->rotary_dim);
    return RL_OK;
}

static void destroy(pe_encoding *e) { free(pe_encoding_state(e)); }

static void vec_ref(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                    uint32_t heads, double *y)
{
    rope_ref_apply(pe_encoding_state(e), x, pos, tokens, heads, y);
}

/* Same derivation as chk_rope.c: for a pair of magnitude M = |a| + |b| and
 * attention factor s, |y - y_ref| <= s M trig_err(phi) + 4 ulp(s M) (three
 * fp32 roundings of a*c - b*s); pass-through dims bit-exact. */
static void vec_bound(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                      uint32_t heads, double *bound, double *scale)
{
    const rope_freqs *f = pe_encoding_state(e);
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
                bound[row + i] = m * pe_fp32_trig_err((double)pos[t] * f->inv_freq[pair]) +
                                 4 * rl_ulp32(m);
                scale[row + i] = m;
            }
        }
}

typedef struct rope_gpu_state {
    rope_kernel k;
    rlvk_buffer freq;
} rope_gpu_state;

static rl_status vec_gpu_create(pe_vec_gpu *g, rl_error *err)
{
    rope_gpu_state *s = calloc(1, sizeof *s);
    if (!s)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    g->impl = s;
    rl_status st = rope_kernel_create(g->dev, &s->k, err);
    if (!st)
        st = rope_gpu_upload_freqs(g->dev, pe_encoding_state(g->e), &s->freq, err);
    return st;
}

static rl_status vec_gpu_record(rlvk_cmd *cmd, pe_vec_gpu *g, const rlvk_buffer *x,
                                const rlvk_buffer *y, const rlvk_buffer *pos, uint64_t tokens,
                                rl_error *err)
{
    rope_gpu_state *s = g->impl;
    rope_gpu_io io = {.x = x, .y = y, .pos = pos, .freq = &s->freq, .tokens = tokens,
                      .heads = g->heads};
    return rope_gpu_record(cmd, &s->k, pe_encoding_state(g->e), &io, err);
}

static void vec_gpu_destroy(pe_vec_gpu *g)
{
    rope_gpu_state *s = g->impl;
    if (!s)
        return;
    rope_kernel_destroy(g->dev, &s->k);
    rlvk_buffer_destroy(g->dev, &s->freq);
    free(s);
}

static rl_status inspect(const pe_encoding *e, int64_t r0, int64_t r1, json_t *obj, rl_error *err)
{
    (void)r0;
    (void)r1;
    (void)err;
    const rope_freqs *f = pe_encoding_state(e);
    json_t *a = json_array();
    for (uint32_t j = 0; j < f->n_pairs; j++)
        json_array_append_new(a, json_real(f->inv_freq[j]));
    json_object_set_new(obj, "frequencies", a);
    return RL_OK;
}

const pe_family pe_family_rope = {
    .name = "rope",
    .title = "rotary position embedding",
    .paper = "Su et al. 2021, RoFormer: Enhanced Transformer with Rotary Position Embedding, "
             "arXiv:2104.09864",
    .acts = PE_ACTS_VECTORS,
    .bias_variant = "none",
    .params = params,
    .n_params = RL_ARRAY_LEN(params),
    .formula = "(y_a, y_b) = (x_a cos p*t_j - x_b sin p*t_j, x_b cos p*t_j + x_a sin p*t_j), "
               "t_j = theta^(-2j/rotary_dim)",
    .ops = {
        .create = create,
        .destroy = destroy,
        .vec_ref = vec_ref,
        .vec_bound = vec_bound,
        .vec_gpu_create = vec_gpu_create,
        .vec_gpu_record = vec_gpu_record,
        .vec_gpu_destroy = vec_gpu_destroy,
        .inspect = inspect,
    },
};
