/* rope — the RoPE family behind the registry interface, through rope.h's
 * public API only (frequencies, CPU reference, GPU kernel). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pe/pe.h"
#include "pe/rope.h"

/* RoPE's keys are rope_params (rope_hf.c), the one list; their defaults
 * depend on rope_type, so rope_desc_from_json validates them (naming the
 * key). head_dim comes from the model shape. */

/* The resolved params (nulls skipped) straight into the typed rope_desc
 * through rope's own setter (no intermediate JSON); head_dim from the shape;
 * the length in use from the shape when seq_len is not given (the runner's
 * run length: dynamic and longrope depend on it). */
static rl_status desc_from_params(const pe_encoding *e, rope_desc *d, rl_error *err)
{
    memset(d, 0, sizeof *d);
    const pe_shape *sh = pe_encoding_shape(e);
    const char *key;
    json_t *v;
    rl_status st = RL_OK;
    json_object_foreach((json_t *)pe_encoding_params(e), key, v)
        if (!json_is_null(v) && (st = rope_desc_set_json(d, key, v, err)))
            return st;
    d->head_dim = sh->head_dim;
    if (!d->seq_len && sh->max_positions)
        d->seq_len = sh->max_positions > UINT32_MAX ? UINT32_MAX : (uint32_t)sh->max_positions;
    return RL_OK;
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
    if (rope_prec_is_emu(f->precision)) {
        pe_param_set_json(e, "dtype", json_string(rope_dtype_name(f->dtype)));
        pe_param_set_json(e, "inv_freq_dtype", json_string(rope_dtype_name(f->inv_freq_dtype)));
        pe_param_set_json(e, "tf32", json_boolean(f->tf32));
    }
    /* dynamic_yarn's factor follows the length (and, cache_consistent, the
     * position): recorded only when given, which fixes it. */
    if (f->rope_type != ROPE_TYPE_DYNAMIC_YARN)
        pe_param_set_json(e, "attention_factor", json_real(f->attention_factor));
    if (f->seq_len)
        pe_param_set_int(e, "seq_len", f->seq_len);
    if (rope_freqs_per_position(f)) {
        pe_param_set_json(e, "dynamic_mode", json_string(rope_dynamic_mode_name(f->dynamic_mode)));
        if (f->prompt_len)
            pe_param_set_int(e, "prompt_len", f->prompt_len);
    }
    if (f->desc.semantics != ROPE_SEM_HF) /* whose reading: flagged in every result */
        pe_param_set_json(e, "semantics", json_string(rope_semantics_name(f->desc.semantics)));
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
 * yet). A per-position rotation (cache_consistent) has per-token inv_freq
 * and angle data: both per prepared launch. */
#define ROPE_PE_MAX_TABLES 16
typedef struct rope_gpu_state {
    rope_kernel k;
    rlvk_buffer freq[ROPE_PE_MAX_TABLES];
    uint32_t n_freq;
    rlvk_buffer angles[ROPE_PE_MAX_TABLES];
    uint32_t n_angles;
    uint64_t prepared_tokens; /* table mode / per position: tokens of the last prepared; 0: none */
} rope_gpu_state;

/* Data that depends on the launch's positions (prepared per launch). */
static int per_launch(const rope_freqs *f)
{
    return f->precision == RL_ROPE_PREC_TABLE || rope_freqs_per_position(f);
}

static rl_status vec_gpu_create(pe_vec_gpu *g, rl_error *err)
{
    rope_gpu_state *s = calloc(1, sizeof *s);
    if (!s)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    g->impl = s;
    const rope_freqs *f = pe_encoding_state(g->e);
    rl_status st = rope_kernel_create(g->dev, &s->k, err);
    if (!st && !per_launch(f)) {
        st = rope_gpu_upload_freqs(g->dev, f, NULL, 0, &s->freq[0], err);
        if (!st)
            s->n_freq = 1;
        if (!st)
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
    if (!per_launch(f))
        return RL_OK;
    if (s->n_angles == ROPE_PE_MAX_TABLES || s->n_freq == ROPE_PE_MAX_TABLES)
        return rl_fail(err, RL_ERR_LIMIT, "rope: more than %d %s launches on one device state",
                       ROPE_PE_MAX_TABLES, rope_freqs_per_position(f) ? "per-position" : "table-mode");
    rl_status st = rope_gpu_upload_freqs(g->dev, f, pos, tokens, &s->freq[s->n_freq], err);
    if (st)
        return st;
    s->n_freq++;
    st = rope_gpu_upload_angles(g->dev, f, pos, tokens, &s->angles[s->n_angles], err);
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
    if (per_launch(f) && s->prepared_tokens != tokens)
        /* The data vec_gpu_prepare made for this launch's positions. */
        return rl_fail(err, RL_ERR_ARG,
                       "rope: %s needs pe_vec_gpu_prepare of the %llu positions before recording "
                       "(prepared: %llu)",
                       rope_freqs_per_position(f) ? "a per-position rotation" : "table mode",
                       (unsigned long long)tokens, (unsigned long long)s->prepared_tokens);
    if (!s->n_freq || !s->n_angles)
        return rl_fail(err, RL_ERR_ARG, "rope: nothing prepared to record");
    const rlvk_buffer *angles = &s->angles[s->n_angles - 1];
    rope_gpu_io io = {.x = x, .y = y, .pos = pos, .freq = &s->freq[s->n_freq - 1], .angles = angles,
                      .tokens = tokens, .heads = g->heads};
    return rope_gpu_record(cmd, &s->k, f, &io, err);
}

static void vec_gpu_destroy(pe_vec_gpu *g)
{
    rope_gpu_state *s = g->impl;
    if (!s)
        return;
    rope_kernel_destroy(g->dev, &s->k);
    for (uint32_t i = 0; i < s->n_freq; i++)
        rlvk_buffer_destroy(g->dev, &s->freq[i]);
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

/* `ropelab check` rows: {label, params, tokens, heads, kv_heads, head_dim,
 * pos_cap_log2, quick}. */
static const pe_check_case vec_checks[] = {
    {"rope/half", "{}", 33, 8, 0, 64, 0, 1},
    {"rope/interleaved", "{\"layout\": \"interleaved\", \"rotary_dim\": 64}", 65, 8, 0, 128, 0, 0},
    /* Through the registry with HF keys: the precision modes' device data
     * (table per launch's positions, precise per pair) must be wired up. */
    {"rope/yarn/table",
     "{\"rope_type\": \"yarn\", \"factor\": 4, \"original_max_position_embeddings\": 4096, "
     "\"precision\": \"table\"}",
     65, 4, 0, 128, 0, 0},
    {"rope/llama3/precise",
     "{\"rope_type\": \"llama3\", \"factor\": 8, \"original_max_position_embeddings\": 8192, "
     "\"low_freq_factor\": 1, \"high_freq_factor\": 4, \"rope_theta\": 500000, "
     "\"precision\": \"precise\"}",
     33, 8, 0, 128, 0, 0},
    /* Per-position rotations through the registry (dynamic_mode
     * cache_consistent: per-launch per-token inv_freq, table and angles). */
    {"rope/dynamic/cache",
     "{\"rope_type\": \"dynamic\", \"factor\": 4, \"max_position_embeddings\": 4096, "
     "\"seq_len\": 1048577, \"dynamic_mode\": \"cache_consistent\", \"prompt_len\": 4096}",
     33, 4, 0, 128, 0, 1},
    {"rope/dynamic_yarn/cache/table",
     "{\"rope_type\": \"dynamic_yarn\", \"original_max_position_embeddings\": 4096, "
     "\"seq_len\": 1048577, \"dynamic_mode\": \"cache_consistent\", \"prompt_len\": 4096, "
     "\"precision\": \"table\"}",
     65, 4, 0, 128, 0, 0},
    {"rope/dynamic_yarn/cache/precise",
     "{\"rope_type\": \"dynamic_yarn\", \"original_max_position_embeddings\": 4096, "
     "\"seq_len\": 1048577, \"dynamic_mode\": \"cache_consistent\", \"prompt_len\": 4096, "
     "\"precision\": \"precise\"}",
     33, 8, 0, 64, 0, 0},
    /* Resonance RoPE on YaRN's frequencies (rounded wavelengths: the same
     * kernel, other inv_freq), positions to 2^max_pos_log2. */
    {"rope/yarn/resonance",
     "{\"rope_type\": \"yarn\", \"factor\": 4, \"original_max_position_embeddings\": 4096, "
     "\"resonance\": true}",
     33, 4, 0, 128, 0, 1},
    /* Framework emulation through the registry (bound against double:
     * rope_error_bounds' emulation branch). */
    {"rope/hf/bf16", "{\"precision\": \"hf\", \"dtype\": \"bf16\"}", 33, 8, 0, 64, 0, 1},
    {"rope/ggml-cpu/fp16",
     "{\"precision\": \"ggml-cpu\", \"dtype\": \"fp16\", \"layout\": \"interleaved\"}", 65, 4, 0,
     128, 0, 0},
    /* vLLM's readings through the registry (HunYuan's alpha; ntk mixed_b). */
    {"rope/dynamic/vllm-alpha",
     "{\"rope_type\": \"dynamic\", \"semantics\": \"vllm\", \"alpha\": 1000, \"factor\": 1}",
     33, 4, 0, 128, 0, 1},
    {"rope/ntk/vllm-mixed_b/table",
     "{\"rope_type\": \"ntk\", \"semantics\": \"vllm\", \"factor\": 4, \"mixed_b\": 0.5, "
     "\"precision\": \"table\"}",
     65, 4, 0, 128, 0, 0},
};

const pe_family pe_family_rope = {
    .name = "rope",
    .title = "rotary position embedding",
    .paper = "Su et al. 2021, RoFormer: Enhanced Transformer with Rotary Position Embedding, "
             "arXiv:2104.09864",
    .acts = PE_ACTS_VECTORS,
    .params = rope_params,
    .n_params = ROPE_N_PARAMS,
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
    .vec_checks = vec_checks,
    .n_vec_checks = RL_ARRAY_LEN(vec_checks),
};

const rope_freqs *pe_rope_freqs(const pe_encoding *e)
{
    return pe_encoding_family(e) == &pe_family_rope ? pe_encoding_state(e) : NULL;
}
