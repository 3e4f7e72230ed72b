/* rope — the RoPE family behind the registry interface, through rope.h's
 * public API only (frequencies, CPU reference, GPU kernel). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_npy.h"
#include "pe/pe.h"
#include "pe/rope.h"
#include "pe/rope_scaling.h"

/* The family's state: the rotation, and for mRoPE with mrope_positions npy
 * the [rows][3] table the token indices look up. */
typedef struct rope_state {
    rope_freqs f;        /* first: pe_encoding_state is also the rope_freqs */
    uint32_t *table;     /* [rows][3] (t, h, w); NULL unless npy */
    uint64_t rows;
} rope_state;

static const rope_freqs *freqs_of(const pe_encoding *e)
{
    return &((const rope_state *)pe_encoding_state(e))->f;
}

/* The 3-D positions of 1-D token indices pos: *out a new array
 * [tokens][3] (caller frees), NULL on failure. */
static rl_status positions3(const pe_encoding *e, const uint32_t *pos, size_t tokens,
                            uint32_t **out, rl_error *err)
{
    const rope_state *s = pe_encoding_state(e);
    uint32_t *p3 = malloc((tokens ? tokens : 1) * 3 * sizeof *p3);
    *out = NULL;
    if (!p3)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory for %zu 3-D positions", tokens);
    rl_status st = rope_mrope_positions(&s->f, s->table, s->rows, pos, tokens, p3, err);
    if (st)
        free(p3);
    else
        *out = p3;
    return st;
}

/* mrope_positions npy: the table, [rows][3] integers in 0..2^32-1 (the one
 * .npy reader, core/rl_npy.c). */
static rl_status load_table(rope_state *s, rl_error *err)
{
    const char *path = s->f.desc.mrope_positions_path;
    rl_npy h;
    uint64_t count = 0;
    rl_status st = rl_npy_header_int(path, &h, err);
    if (!st && (h.ndim != 2 || h.shape[1] != 3 || h.shape[0] == 0)) {
        char sh[96] = "(";
        for (uint32_t i = 0; i < h.ndim && strlen(sh) < 64; i++)
            snprintf(sh + strlen(sh), sizeof sh - strlen(sh), "%s%llu", i ? ", " : "",
                     (unsigned long long)h.shape[i]);
        st = rl_fail(err, RL_ERR_ARG, "%s: shape %s); expected (tokens, 3): one (t, h, w) row "
                     "per token, tokens >= 1", path, sh);
    }
    if (!st)
        st = rl_npy_load_u32(path, &s->table, &count, err);
    if (st) {
        rl_error_prefix(err, "rope: mrope_positions_path");
        rl_error_set_key(err, "mrope_positions_path");
        return st;
    }
    s->rows = count / 3;
    return RL_OK;
}

/* RoPE's keys are rope_param_table (rope_hf.c), the one list; their defaults
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
    const json_t *params = pe_encoding_params(e);
    json_object_foreach((json_t *)params, key, v)
        if (!json_is_null(v) && (st = rope_desc_set_json(d, key, v, err)))
            return st;
    /* rope_type and its legacy alias type: both given and different is
     * refused (transformers reads rope_type first; neither is silently lost) */
    const json_t *rt = json_object_get(params, "rope_type"), *ty = json_object_get(params, "type");
    if (json_is_string(rt) && json_is_string(ty) &&
        rope_scaling_find(json_string_value(rt)) != rope_scaling_find(json_string_value(ty)))
        return rl_fail_key(err, RL_ERR_ARG, "rope_type",
                           "rope_type '%s' and type '%s' disagree (type is its "
                           "legacy alias: give one)", json_string_value(rt), json_string_value(ty));
    d->head_dim = sh->head_dim;
    if (!d->seq_len && sh->max_positions)
        d->seq_len = sh->max_positions > UINT32_MAX ? UINT32_MAX : (uint32_t)sh->max_positions;
    return RL_OK;
}

static rl_status create(pe_encoding *e, rl_error *err)
{
    rope_desc d;
    rl_status st = desc_from_params(e, &d, err);
    rope_state *rs = calloc(1, sizeof *rs);
    if (!rs)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    rope_freqs *f = &rs->f;
    if (!st)
        st = rope_freqs_compute(&d, f, err);
    if (st) {
        free(rs);
        rl_error_prefix(err, "rope");
        return st;
    }
    if (f->mrope && f->desc.mrope_positions == ROPE_MROPE_POS_NPY && (st = load_table(rs, err))) {
        free(rs->table);
        free(rs);
        return st;
    }
    pe_encoding_set_state(e, rs);
    /* Record what was really used. */
    pe_param_set_json(e, "rope_type", json_string(rope_type_name(f->rope_type)));
    pe_param_set_int(e, "rotary_dim", f->rotary_dim);
    pe_param_set_json(e, "rope_theta", json_real(f->base));
    pe_param_set_json(e, "layout", json_string(rope_layout_name(f->layout)));
    if (f->rotary_part == ROPE_PART_LAST)
        pe_param_set_json(e, "rotary_part", json_string("last"));
    pe_param_set_json(e, "precision", json_string(rope_precision_name(f->precision)));
    if (rope_prec_is_emu(f->precision)) {
        pe_param_set_json(e, "dtype", json_string(rope_dtype_name(f->dtype)));
        pe_param_set_json(e, "inv_freq_dtype", json_string(rope_dtype_name(f->inv_freq_dtype)));
        pe_param_set_json(e, "tf32", json_boolean(f->tf32));
        if (f->precision == RL_ROPE_PREC_HF || f->precision == RL_ROPE_PREC_VLLM)
            pe_param_set_json(e, "trig", json_string(rope_trig_name(f->trig)));
    }
    /* dynamic_yarn's factor follows the length (and, cache_consistent, the
     * position): recorded only when given, which fixes it. */
    if (f->rope_type != ROPE_TYPE_DYNAMIC_YARN)
        pe_param_set_json(e, "attention_factor", json_real(f->attention_factor));
    /* the values the type derived when they were not given (longrope's
     * factor from max_position_embeddings / original; yarn's and
     * longrope's original length from max_position_embeddings): recorded,
     * so summary.json and results.csv hold what the rotation used */
    if (f->rope_type != ROPE_TYPE_DYNAMIC_YARN && rope_type_uses_key(f->rope_type, "factor"))
        pe_param_set_json(e, "factor", json_real(f->factor));
    if (f->desc.original_max_position_embeddings &&
        rope_reads_key(f->rope_type, f->desc.resonance, "original_max_position_embeddings"))
        pe_param_set_int(e, "original_max_position_embeddings",
                         f->desc.original_max_position_embeddings);
    if (f->seq_len)
        pe_param_set_int(e, "seq_len", f->seq_len);
    if (rope_freqs_per_position(f)) {
        pe_param_set_json(e, "dynamic_mode", json_string(rope_dynamic_mode_name(f->dynamic_mode)));
        if (f->prompt_len)
            pe_param_set_int(e, "prompt_len", f->prompt_len);
    }
    if (f->desc.semantics != ROPE_SEM_HF) /* whose reading: flagged in every result */
        pe_param_set_json(e, "semantics", json_string(rope_semantics_name(f->desc.semantics)));
    if (f->mrope) { /* what mRoPE really used */
        static const char *const mpos[] = {"text", "vl", "npy"};
        pe_param_set_json(e, "mrope_interleaved", json_boolean(f->mrope == ROPE_MROPE_INTERLEAVED));
        pe_param_set_json(e, "mrope_positions", json_string(mpos[f->desc.mrope_positions]));
        if (f->desc.mrope_positions == ROPE_MROPE_POS_VL) {
            pe_param_set_int(e, "mrope_text_before", f->desc.mrope_text_before);
            pe_param_set_int(e, "spatial_merge_size",
                             f->desc.spatial_merge_size ? f->desc.spatial_merge_size : 2);
        }
    }
    json_object_del((json_t *)pe_encoding_params(e), "type");
    return RL_OK;
}

static void destroy(pe_encoding *e)
{
    rope_state *s = pe_encoding_state(e);
    if (s)
        free(s->table);
    free(s);
}

/* mRoPE: every 1-D position must map to a 3-D one (npy: a row of the
 * table; vl: below 2^32). */
static rl_status vec_check(const pe_encoding *e, const uint32_t *pos, size_t tokens,
                           rl_error *err)
{
    if (!freqs_of(e)->mrope)
        return RL_OK;
    uint32_t *p3;
    rl_status st = positions3(e, pos, tokens, &p3, err);
    free(p3);
    return st;
}

static void vec_ref(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                    uint32_t heads, double *y)
{
    const rope_freqs *f = freqs_of(e);
    rl_error err;
    uint32_t *p3 = NULL;
    if (f->mrope)
        (void)positions3(e, pos, tokens, &p3, &err);
    if (p3)
        rope_ref_apply3(f, x, p3, tokens, heads, y);
    else if (!f->mrope)
        rope_ref_apply(f, x, pos, tokens, heads, y);
    else /* out of memory (vec_check took the positions): no reference, loudly */
        for (size_t i = 0; i < tokens * heads * f->head_dim; i++)
            y[i] = NAN;
    free(p3);
}

/* The kernel's bound in the encoding's precision mode (rope_bound.c). The
 * bound grows with |angle| only (fp32) or not at all: for mRoPE the
 * token's largest stream position bounds every pair's. */
static void vec_bound(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                      uint32_t heads, double *bound, double *scale)
{
    const rope_freqs *f = freqs_of(e);
    rl_error err;
    uint32_t *p3 = NULL;
    if (f->mrope)
        (void)positions3(e, pos, tokens, &p3, &err);
    if (p3)
        for (size_t t = 0; t < tokens; t++) {
            uint32_t m = p3[3 * t] > p3[3 * t + 1] ? p3[3 * t] : p3[3 * t + 1];
            p3[t] = m > p3[3 * t + 2] ? m : p3[3 * t + 2]; /* t <= 3t: in place */
        }
    rope_error_bounds(f, x, p3 ? p3 : pos, tokens, heads, bound, scale);
    if (f->mrope && !p3) /* out of memory: a zero bound fails the comparison */
        memset(bound, 0, tokens * heads * f->head_dim * sizeof *bound);
    free(p3);
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
    rlvk_buffer pos3[ROPE_PE_MAX_TABLES]; /* mRoPE: each launch's [tokens][3] positions */
    uint32_t n_pos3;
    uint64_t prepared_tokens; /* table mode / per position: tokens of the last prepared; 0: none */
} rope_gpu_state;

/* Data that depends on the launch's positions (prepared per launch). */
static int per_launch(const rope_freqs *f)
{
    return f->precision == RL_ROPE_PREC_TABLE || rope_freqs_per_position(f) || f->mrope;
}

static rl_status vec_gpu_create(pe_vec_gpu *g, rl_error *err)
{
    rope_gpu_state *s = calloc(1, sizeof *s);
    if (!s)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    g->impl = s;
    const rope_freqs *f = freqs_of(g->e);
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
    const rope_freqs *f = freqs_of(g->e);
    if (!per_launch(f))
        return RL_OK;
    if (s->n_angles == ROPE_PE_MAX_TABLES || s->n_freq == ROPE_PE_MAX_TABLES ||
        s->n_pos3 == ROPE_PE_MAX_TABLES)
        return rl_fail(err, RL_ERR_LIMIT, "rope: more than %d %s launches on one device state",
                       ROPE_PE_MAX_TABLES, rope_freqs_per_position(f) ? "per-position" : "table-mode");
    uint32_t *p3 = NULL;
    rl_status st;
    if (f->mrope) { /* this launch's (t, h, w), uploaded now */
        if ((st = positions3(g->e, pos, tokens, &p3, err)))
            return st;
        st = pe_buffer_from(g->dev, "mrope positions", p3, tokens * 3 * sizeof *p3,
                            &s->pos3[s->n_pos3], err);
        if (st) {
            free(p3);
            return st;
        }
        s->n_pos3++;
    }
    st = rope_gpu_upload_freqs(g->dev, f, pos, tokens, &s->freq[s->n_freq], err);
    if (st) {
        free(p3);
        return st;
    }
    s->n_freq++;
    st = p3 ? rope_gpu_upload_angles3(g->dev, f, p3, tokens, &s->angles[s->n_angles], err)
            : rope_gpu_upload_angles(g->dev, f, pos, tokens, &s->angles[s->n_angles], err);
    free(p3);
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
    const rope_freqs *f = freqs_of(g->e);
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
                      .pos3 = f->mrope ? &s->pos3[s->n_pos3 - 1] : NULL,
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
    for (uint32_t i = 0; i < s->n_pos3; i++)
        rlvk_buffer_destroy(g->dev, &s->pos3[i]);
    free(s);
}

static rl_status inspect(const pe_encoding *e, int64_t r0, int64_t r1, json_t *obj, rl_error *err)
{
    (void)r0;
    (void)r1;
    (void)err;
    const rope_freqs *f = freqs_of(e);
    json_t *a = json_array();
    for (uint32_t j = 0; j < f->n_pairs; j++)
        json_array_append_new(a, json_real(f->inv_freq[j]));
    json_object_set_new(obj, "frequencies", a);
    if (f->mrope) { /* which position (0 t, 1 h, 2 w) rotates each pair */
        json_t *m = json_array();
        for (uint32_t j = 0; j < f->n_pairs; j++)
            json_array_append_new(m, json_integer(rope_mrope_stream(f, j)));
        json_object_set_new(obj, "mrope_streams", m);
    }
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
    /* mRoPE through the registry: token indices 0..63 mapped by the vl
     * layout (5 text tokens, a 1x8x12 image = 24 merged tokens, then text)
     * to 3-D positions uploaded per launch; and 1-D text positions to 2^20. */
    {"rope/mrope/vl",
     "{\"mrope_section\": [8, 12, 12], \"mrope_positions\": \"vl\", "
     "\"mrope_image_grid\": [1, 8, 12], \"mrope_text_before\": 5}",
     65, 4, 0, 64, 6, 1},
    {"rope/imrope/vl/table",
     "{\"mrope_section\": [8, 12, 12], \"mrope_interleaved\": true, \"mrope_positions\": "
     "\"vl\", \"mrope_image_grid\": [1, 8, 12], \"mrope_text_before\": 5, "
     "\"precision\": \"table\"}",
     65, 4, 0, 64, 6, 0},
    {"rope/imrope/text", "{\"mrope_section\": [24, 20, 20], \"mrope_interleaved\": true}", 33,
     4, 0, 128, 0, 1},
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
    .file_keys = "mrope_positions_path",
    .params_table = rope_param_table,
    .formula = "(y_a, y_b) = (x_a cos p*t_j - x_b sin p*t_j, x_b cos p*t_j + x_a sin p*t_j), "
               "t_j = theta^(-2j/rotary_dim)",
    .ops = {
        .create = create,
        .destroy = destroy,
        .vec_check = vec_check,
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
    return pe_encoding_family(e) == &pe_family_rope ? freqs_of(e) : NULL;
}

rl_status pe_rope_linear_twin(const pe_encoding *e, double factor, pe_encoding **out,
                              rl_error *err)
{
    *out = NULL;
    if (pe_encoding_family(e) != &pe_family_rope)
        return rl_fail(err, RL_ERR_ARG, "the linear twin needs a rotary encoding, not '%s'",
                       pe_encoding_family(e)->name);
    json_t *p = json_deep_copy(pe_encoding_params(e));
    if (!p)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    json_object_set_new(p, "rope_type", json_string(rope_type_name(ROPE_TYPE_LINEAR)));
    json_object_set_new(p, "factor", json_real(factor));
    rl_status st = pe_encoding_create(pe_family_rope.name, p, pe_encoding_shape(e), out, err);
    json_decref(p);
    return st;
}
