/* rope — the RoPE family behind the registry interface, through rope.h's
 * public API only (frequencies, CPU reference, GPU kernel). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pe/pe.h"
#include "pe/rope.h"

/* RoPE's keys are HF's (rope_parameters / rope_scaling names plus
 * rope_theta, rotary_dim, partial_rotary_factor, layout, precision); their
 * defaults depend on rope_type, so every key is PE_JSON with default null
 * and rope_desc_from_json validates them (its errors name the key). The list
 * must match rope_param_table() — test_pe_ref checks it. head_dim comes from
 * the model shape. */
#define ROPE_KEY(k, help) {k, PE_JSON, "null", 0, 0, NULL, help}
static const pe_param params[] = {
    ROPE_KEY("rope_type", "default|linear|ntk|dynamic|yarn|llama3|longrope|proportional (alias: type)"),
    ROPE_KEY("type", "alias of rope_type"),
    ROPE_KEY("rope_theta", "frequency base (default 10000)"),
    ROPE_KEY("rotary_dim", "rotated dimensions, even (default head_dim)"),
    ROPE_KEY("partial_rotary_factor", "rotary_dim = int(head_dim * factor) (default 1)"),
    ROPE_KEY("layout", "half (NeoX/Llama rotate_half, default) or interleaved (GPT-J)"),
    ROPE_KEY("precision", "angle precision: fp32 (default), table or precise"),
    ROPE_KEY("factor", "scaling factor >= 1"),
    ROPE_KEY("original_max_position_embeddings", "pre-training context length"),
    ROPE_KEY("max_position_embeddings", "model's maximum length (dynamic)"),
    ROPE_KEY("seq_len", "sequence length in use (dynamic, longrope)"),
    ROPE_KEY("beta_fast", "yarn: ramp end (default 32)"),
    ROPE_KEY("beta_slow", "yarn: ramp start (default 1)"),
    ROPE_KEY("mscale", "yarn: attention factor coefficient"),
    ROPE_KEY("mscale_all_dim", "yarn: attention factor denominator coefficient"),
    ROPE_KEY("truncate", "yarn: floor/ceil the correction range (default true)"),
    ROPE_KEY("attention_factor", "multiplies cos and sin (yarn, longrope)"),
    ROPE_KEY("low_freq_factor", "llama3: low-frequency band edge"),
    ROPE_KEY("high_freq_factor", "llama3: high-frequency band edge"),
    ROPE_KEY("short_factor", "longrope: rotary_dim/2 divisors up to the original length"),
    ROPE_KEY("long_factor", "longrope: rotary_dim/2 divisors beyond it"),
};

/* The resolved params minus nulls, with head_dim from the shape, through
 * rope's own JSON configuration. */
static rl_status desc_from_params(const pe_encoding *e, rope_desc *d, rl_error *err)
{
    memset(d, 0, sizeof *d);
    json_t *obj = json_object();
    if (!obj)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)pe_encoding_params(e), key, v)
        if (!json_is_null(v))
            json_object_set(obj, key, v);
    json_object_set_new(obj, "head_dim", json_integer(pe_encoding_shape(e)->head_dim));
    rl_status st = rope_desc_from_json(d, obj, err);
    json_decref(obj);
    return st;
}

static rl_status create(pe_encoding *e, rl_error *err)
{
    rope_desc d;
    rl_status st = desc_from_params(e, &d, err);
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
    /* Record what was really used. */
    pe_param_set_json(e, "rope_type", json_string(rope_type_name(f->rope_type)));
    pe_param_set_int(e, "rotary_dim", f->rotary_dim);
    pe_param_set_json(e, "rope_theta", json_real(f->base));
    pe_param_set_json(e, "layout", json_string(f->layout == RL_ROPE_LAYOUT_HALF ? "half" : "interleaved"));
    pe_param_set_json(e, "precision", json_string(rope_precision_name(f->precision)));
    pe_param_set_json(e, "attention_factor", json_real(f->attention_factor));
    json_object_del((json_t *)pe_encoding_params(e), "type");
    return RL_OK;
}

static void destroy(pe_encoding *e) { free(pe_encoding_state(e)); }

static void vec_ref(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                    uint32_t heads, double *y)
{
    rope_ref_apply(pe_encoding_state(e), x, pos, tokens, heads, y);
}

/* The kernel's bound in the encoding's precision mode (rope_bound.c). */
static void vec_bound(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                      uint32_t heads, double *bound, double *scale)
{
    rope_error_bounds(pe_encoding_state(e), x, pos, tokens, heads, bound, scale);
}

/* Device state: the kernel, inv_freq, and the angle data of the precision
 * mode (precise: per pair, made once; table: per prepared launch, since it
 * depends on the positions — made by vec_gpu_prepare from the host
 * positions, kept until destroy because a recorded command may not have run
 * yet). */
#define ROPE_PE_MAX_TABLES 16
typedef struct rope_gpu_state {
    rope_kernel k;
    rlvk_buffer freq;
    rlvk_buffer angles[ROPE_PE_MAX_TABLES];
    uint32_t n_angles;
    uint64_t prepared_tokens; /* table mode: tokens of angles[n_angles - 1]; 0: none */
} rope_gpu_state;

static rl_status vec_gpu_create(pe_vec_gpu *g, rl_error *err)
{
    rope_gpu_state *s = calloc(1, sizeof *s);
    if (!s)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    g->impl = s;
    const rope_freqs *f = pe_encoding_state(g->e);
    rl_status st = rope_kernel_create(g->dev, &s->k, err);
    if (!st)
        st = rope_gpu_upload_freqs(g->dev, f, &s->freq, err);
    if (!st && f->precision != RL_ROPE_PREC_TABLE) {
        st = rope_gpu_upload_angles(g->dev, f, NULL, 0, &s->angles[0], err);
        if (!st)
            s->n_angles = 1;
    }
    return st;
}

/* Table mode: the (cos, sin) table of these positions, in double, uploaded
 * now so that recording only records. */
static rl_status vec_gpu_prepare(pe_vec_gpu *g, const uint32_t *pos, uint64_t tokens,
                                 rl_error *err)
{
    rope_gpu_state *s = g->impl;
    const rope_freqs *f = pe_encoding_state(g->e);
    if (f->precision != RL_ROPE_PREC_TABLE)
        return RL_OK;
    if (s->n_angles == ROPE_PE_MAX_TABLES)
        return rl_fail(err, RL_ERR_LIMIT, "rope: more than %d table-mode launches on one "
                       "device state", ROPE_PE_MAX_TABLES);
    rl_status st = rope_gpu_upload_angles(g->dev, f, pos, tokens, &s->angles[s->n_angles], err);
    if (st)
        return st;
    s->n_angles++;
    s->prepared_tokens = tokens;
    return RL_OK;
}

static rl_status vec_gpu_record(rlvk_cmd *cmd, pe_vec_gpu *g, const rlvk_buffer *x,
                                const rlvk_buffer *y, const rlvk_buffer *pos, uint64_t tokens,
                                rl_error *err)
{
    rope_gpu_state *s = g->impl;
    const rope_freqs *f = pe_encoding_state(g->e);
    const rlvk_buffer *angles = &s->angles[0];
    if (f->precision == RL_ROPE_PREC_TABLE) {
        /* The table vec_gpu_prepare made for this launch's positions. */
        if (s->prepared_tokens != tokens)
            return rl_fail(err, RL_ERR_ARG,
                           "rope: table mode needs pe_vec_gpu_prepare of the %llu positions "
                           "before recording (prepared: %llu)",
                           (unsigned long long)tokens, (unsigned long long)s->prepared_tokens);
        angles = &s->angles[s->n_angles - 1];
    }
    rope_gpu_io io = {.x = x, .y = y, .pos = pos, .freq = &s->freq, .angles = angles,
                      .tokens = tokens, .heads = g->heads};
    return rope_gpu_record(cmd, &s->k, f, &io, err);
}

static void vec_gpu_destroy(pe_vec_gpu *g)
{
    rope_gpu_state *s = g->impl;
    if (!s)
        return;
    rope_kernel_destroy(g->dev, &s->k);
    rlvk_buffer_destroy(g->dev, &s->freq);
    for (uint32_t i = 0; i < s->n_angles; i++)
        rlvk_buffer_destroy(g->dev, &s->angles[i]);
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
        .vec_gpu_prepare = vec_gpu_prepare,
        .vec_gpu_record = vec_gpu_record,
        .vec_gpu_destroy = vec_gpu_destroy,
        .inspect = inspect,
    },
};

const rope_freqs *pe_rope_freqs(const pe_encoding *e)
{
    return pe_encoding_family(e) == &pe_family_rope ? pe_encoding_state(e) : NULL;
}
