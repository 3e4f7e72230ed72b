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
    ROPE_KEY("precision", "angle precision: fp32 (default), table, precise; framework emulation: hf, vllm, ggml-cpu, ggml-vulkan, cuda-fast"),
    ROPE_KEY("dtype", "emulation modes: model dtype fp32 (default), fp16, bf16"),
    ROPE_KEY("inv_freq_dtype", "hf: inv_freq stored as fp32 (default) or bf16"),
    ROPE_KEY("tf32", "hf: TF32-rounded matmul inputs (default false)"),
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
    if (rope_prec_is_emu(f->precision)) {
        pe_param_set_json(e, "dtype", json_string(rope_dtype_name(f->dtype)));
        pe_param_set_json(e, "inv_freq_dtype", json_string(rope_dtype_name(f->inv_freq_dtype)));
        pe_param_set_json(e, "tf32", json_boolean(f->tf32));
    }
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
 * mode (precise: per pair, made once; table: per recorded launch, since it
 * depends on the positions — kept until destroy because a recorded command
 * may not have run yet). */
#define ROPE_PE_MAX_TABLES 16
typedef struct rope_gpu_state {
    rope_kernel k;
    rlvk_buffer freq;
    rlvk_buffer angles[ROPE_PE_MAX_TABLES];
    uint32_t n_angles;
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

static rl_status vec_gpu_record(rlvk_cmd *cmd, pe_vec_gpu *g, const rlvk_buffer *x,
                                const rlvk_buffer *y, const rlvk_buffer *pos, uint64_t tokens,
                                rl_error *err)
{
    rope_gpu_state *s = g->impl;
    const rope_freqs *f = pe_encoding_state(g->e);
    const rlvk_buffer *angles = &s->angles[0];
    if (f->precision == RL_ROPE_PREC_TABLE) {
        /* The table is (cos, sin) of this launch's positions, in double. */
        if (s->n_angles == ROPE_PE_MAX_TABLES)
            return rl_fail(err, RL_ERR_LIMIT, "rope: more than %d table-mode launches on one "
                           "device state", ROPE_PE_MAX_TABLES);
        uint32_t *hp = malloc((tokens ? tokens : 1) * sizeof *hp);
        if (!hp)
            return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
        rl_status st = rlvk_buffer_download(g->dev, pos, 0, hp, tokens * sizeof *hp, err);
        if (!st)
            st = rope_gpu_upload_angles(g->dev, f, hp, tokens, &s->angles[s->n_angles], err);
        free(hp);
        if (st)
            return st;
        angles = &s->angles[s->n_angles++];
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
    /* Framework emulation through the registry (bound against double:
     * rope_error_bounds' emulation branch). */
    {"rope/hf/bf16", "{\"precision\": \"hf\", \"dtype\": \"bf16\"}", 33, 8, 0, 64, 0, 1},
    {"rope/ggml-cpu/fp16",
     "{\"precision\": \"ggml-cpu\", \"dtype\": \"fp16\", \"layout\": \"interleaved\"}", 65, 4, 0,
     128, 0, 0},
};

const pe_family pe_family_rope = {
    .name = "rope",
    .title = "rotary position embedding",
    .paper = "Su et al. 2021, RoFormer: Enhanced Transformer with Rotary Position Embedding, "
             "arXiv:2104.09864",
    .acts = PE_ACTS_VECTORS,
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
    .vec_checks = vec_checks,
    .n_vec_checks = RL_ARRAY_LEN(vec_checks),
};

const rope_freqs *pe_rope_freqs(const pe_encoding *e)
{
    return pe_encoding_family(e) == &pe_family_rope ? pe_encoding_state(e) : NULL;
}
