/* RoPE configuration from JSON: generic key/value setter (used by encoding
 * registries, ropelab configs and the config.json import, src/pe/hf_model.c)
 * and HF rope_scaling/rope_parameters dicts. Parsing is jansson's; this file
 * only maps keys to rope_desc fields and names the key in every error. An
 * explicit value is a value: 0 is validated like any other, never read as
 * "not given" (only absence or null is). */
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/rl_util.h"
#include "pe/rope_scaling.h"

/* RoPE's common settable keys, HF's names (rope_param_table appends each
 * registered scaling's own keys): the ONE list (common_keys below), used by
 * the encoding registry (family rope), listings (`ropelab encodings`, the
 * runner's batch checks), the config.json import, and rope_desc_set_json /
 * rope_desc_to_json, which read each key's field and rule from it. Each has
 * its real type, range or choices, so the one validator (rl_param_check)
 * types every given value; rope_desc_resolve then applies the rules that
 * involve other keys (naming the key). No default is filled in (def "null": absent
 * means "not given"), because most defaults depend on rope_type or on the
 * model: each help ends with "(default ...)", which is what `ropelab
 * encodings` shows as the default. head_dim is the model's, not a key. */
#define RT_CHOICES NULL /* the registry's names, rope_type_choices(), set by build_table */
#define PREC_CHOICES "fp32|table|precise|hf|vllm|ggml-cpu|ggml-vulkan|cuda-fast"
#define DT_CHOICES "fp32|fp16|bf16"
/* How a key's value is kept in rope_desc (rope_key.kind). */
enum {
    RK_CODE, /* read and written by code below (rope_type, lists, the mRoPE grid, a path) */
    RK_ENUM, /* int: a name (parse / name, or the index of the name in choices) */
    RK_BOOL, /* int: 1 true, 0 false */
    RK_TRI,  /* int: 1 true, -1 false, 0 not given */
    RK_UINT, /* uint32_t, at least `rule` */
    RK_NUM,  /* double, by `rule` (NUM_*), at most the schema's max */
};
/* RK_NUM's lower rule, checked after "a finite number >= 0". */
enum { NUM_GT0, NUM_GE0, NUM_GE1, NUM_GT1, NUM_UNIT };

/* One common key: its schema (the one the validator and the listings
 * use), where rope_desc keeps it and how JSON reads and writes it. The
 * table drives rope_desc_set_json and rope_desc_to_json: a key is added
 * here, once, with its field. */
typedef struct rope_key {
    rl_param p;
    int kind;
    size_t off;                      /* offsetof(rope_desc, field) */
    int (*parse)(const char *name);  /* RK_ENUM: name -> value, < 0 unknown (NULL: choices) */
    const char *(*name)(int value);  /* RK_ENUM: value -> name (NULL: choices) */
    int omit;                        /* RK_ENUM: the default, left out of rope_desc_to_json */
    int rule;                        /* RK_NUM: NUM_*; RK_UINT: the least value */
} rope_key;

#define F(field) offsetof(rope_desc, field)
#define E(k, field, parse, name, omit, choices, help) \
    {{k, RL_P_ENUM, "null", 0, 0, choices, help}, RK_ENUM, F(field), parse, name, omit, 0}
#define N(k, field, lo, hi, rule, help) \
    {{k, RL_P_NUM, "null", lo, hi, NULL, help}, RK_NUM, F(field), NULL, NULL, 0, rule}
#define I(k, field, least, help) \
    {{k, RL_P_INT, "null", 0, 4294967295.0, NULL, help}, RK_UINT, F(field), NULL, NULL, 0, least}
#define B(k, field, kind, help) \
    {{k, RL_P_BOOL, "null", 0, 0, NULL, help}, kind, F(field), NULL, NULL, 0, 0}
#define C(k, type, choices, help) \
    {{k, type, "null", 0, 0, choices, help}, RK_CODE, 0, NULL, NULL, 0, 0}
/* Plausibility bounds (docs/rope.md "Limits"): no published model comes
 * within orders of magnitude of them, and past them the frequencies and
 * the attention factor lose every digit in fp32. A factor of 2^20 extends
 * 4k tokens to 4G. */
#define BIG 1048576.0           /* 2^20: factors, ramps, coefficients */
#define THETA_MAX 1099511627776.0 /* 2^40: the frequency base */
static const rope_key common_keys[] = {
    C("rope_type", RL_P_ENUM, RT_CHOICES, "frequency scaling (alias: type) (default default)"),
    C("type", RL_P_ENUM, RT_CHOICES, "alias of rope_type (HF rope_scaling) (default rope_type)"),
    N("rope_theta", theta, 1, THETA_MAX, NUM_GT1, "frequency base, > 1 (default 10000)"),
    I("rotary_dim", rotary_dim, 2,
      "rotated dimensions, even; the rest pass through (default head_dim)"),
    N("partial_rotary_factor", partial_rotary_factor, 0, 1, NUM_UNIT,
      "rotary_dim = int(head_dim * factor), in (0, 1] (default 1)"),
    E("layout", layout, rope_layout_parse, rope_layout_name, RL_ROPE_LAYOUT_HALF,
      "half|interleaved",
      "pair layout: half (rotate_half, NeoX/Llama) or interleaved (GPT-J) (default half)"),
    E("rotary_part", rotary_part, NULL, NULL, ROPE_PART_FIRST, "first|last",
      "where a partial rotation's rotary_dim dimensions sit in Q/K read from files: first (HF's "
      "partial rotary) or last (DeepSeek MLA, cat(q_nope, q_pe)) (default first)"),
    E("precision", precision, rope_precision_parse, rope_precision_name, 0, PREC_CHOICES,
      "angle precision fp32, table or precise; framework emulation hf, vllm, ggml-cpu, "
      "ggml-vulkan or cuda-fast, docs/rope.md (default fp32)"),
    E("dtype", dtype, rope_dtype_parse, rope_dtype_name, 0,
      DT_CHOICES, "emulation modes' model dtype; ggml: fp32 or fp16 (default fp32)"),
    /* inv_freq_dtype: the two rope_emu_validate accepts */
    E("inv_freq_dtype", inv_freq_dtype, rope_dtype_parse, rope_dtype_name, 0, "fp32|bf16",
      "hf's inv_freq as stored: fp32, or bf16 for a model cast with .to(bfloat16) (default fp32)"),
    B("tf32", tf32, RK_BOOL,
      "hf's inv_freq and positions rounded to TF32, the matmul's inputs (default false)"),
    E("trig", trig, rope_trig_parse, rope_trig_name, 0, "sleef|device",
      "hf/vllm cos/sin: sleef (PyTorch's CPU cos/sin, SLEEF xcosf_u1/xsinf_u1) or device (the "
      "device's builtins) (default sleef)"),
    N("factor", factor, 1, BIG, NUM_GE1,
      "scaling factor; dynamic_yarn: the floor of its scale (default per rope_type; "
      "dynamic_yarn: 1)"),
    I("original_max_position_embeddings", original_max_position_embeddings, 1,
      "pre-training context length: yarn, llama3, longrope (default max_position_embeddings)"),
    I("max_position_embeddings", max_position_embeddings, 1,
      "model's maximum length: dynamic; yarn/longrope factor default (default none)"),
    I("seq_len", seq_len, 1,
      "sequence length in use: dynamic, dynamic_yarn, longrope (default the run's length)"),
    N("beta_fast", beta_fast, 0, BIG, NUM_GT0, "yarn ramp end, rotations (default 32)"),
    N("beta_slow", beta_slow, 0, BIG, NUM_GT0, "yarn ramp start, rotations (default 1)"),
    /* HF reads mscale/mscale_all_dim 0 as falsy (the plain yarn factor): 0 is
     * a legal value there; every other number must be > 0 */
    N("mscale", mscale, 0, BIG, NUM_GE0,
      "yarn attention factor numerator coefficient, with mscale_all_dim (default none)"),
    N("mscale_all_dim", mscale_all_dim, 0, BIG, NUM_GE0,
      "yarn attention factor denominator coefficient (default none)"),
    B("truncate", truncate, RK_TRI, "yarn floors/ceils the correction range (default true)"),
    N("attention_factor", attention_factor, 0, BIG, NUM_GT0,
      "multiplies cos and sin: yarn, longrope (default per rope_type)"),
    N("low_freq_factor", low_freq_factor, 0, BIG, NUM_GT0,
      "llama3 low-frequency band edge L/low_freq_factor (default none: required by llama3)"),
    N("high_freq_factor", high_freq_factor, 0, BIG, NUM_GT0,
      "llama3 high-frequency band edge L/high_freq_factor (default none: required by llama3)"),
    C("short_factor", RL_P_JSON, NULL,
      "list of rotary_dim/2 numbers > 0: longrope divisors up to the original length (default "
      "none: required by longrope)"),
    C("long_factor", RL_P_JSON, NULL,
      "list of rotary_dim/2 numbers > 0: longrope divisors beyond it (default none: required "
      "by longrope)"),
    E("dynamic_mode", dynamic_mode, rope_dynamic_mode_parse, rope_dynamic_mode_name, 0,
      "recompute|cache_consistent",
      "dynamic and dynamic_yarn over one sequence: recompute (every token with the length in "
      "use) or cache_consistent (token p with length max(p+1, prompt_len), as a KV cache keeps "
      "it) (default recompute)"),
    I("prompt_len", prompt_len, 1,
      "cache_consistent's prefill length P; seq_len: pure prefill, where both modes agree "
      "(default seq_len)"),
    E("semantics", semantics, rope_semantics_parse, rope_semantics_name, 0, "hf|vllm",
      "whose reading of dynamic and ntk: vllm is vLLM's rotary_embedding, static dynamic at "
      "max_position_embeddings*factor, HunYuan alpha, ntk with mixed_b; docs/rope.md (default hf)"),
    N("alpha", alpha, 0, BIG, NUM_GT0,
      "semantics vllm, dynamic: HunYuan's base * alpha^(d/(d-2)), > 0 (vLLM "
      "DynamicNTKAlphaRotaryEmbedding) (default none)"),
    N("mixed_b", mixed_b, 0, BIG, NUM_GT0,
      "semantics vllm, ntk: mixed-NTK exponent b, > 0, inv_freq_j / exp(ln(factor) "
      "((j+1)/(d/2))^b) (vLLM NTKScalingRotaryEmbedding) (default none)"),
    B("resonance", resonance, RK_BOOL,
      "Resonance RoPE: after the rope_type's scaling the wavelengths 2pi/theta_j of "
      "resonance_scope's pairs rounded to integers (default false)"),
    E("resonance_scope", resonance_scope, NULL, NULL, ROPE_RESONANCE_ALL, "all|below_train",
      "Resonance RoPE's pairs: all (the authors' code, sheryc/resonance_rope) or below_train "
      "(only wavelengths below original_max_position_embeddings, else max_position_embeddings: "
      "the paper's section 4 reading) (default all)"),
    C("mrope_section", RL_P_JSON, NULL,
      "list of 3 integers >= 0: multimodal RoPE (Qwen2-VL), the rotary pairs rotated by the t, "
      "h and w positions, summing to rotary_dim/2 (default none: one position per token)"),
    B("mrope_interleaved", mrope_interleaved, RK_BOOL,
      "Qwen3-VL's mRoPE: pair j takes h when j%3==1 and j<3*section_h, w when j%3==2 and "
      "j<3*section_w, else t (default false: contiguous sections t|h|w)"),
    E("mrope_positions", mrope_positions, NULL, NULL, ROPE_MROPE_POS_TEXT, "text|vl|npy",
      "mRoPE: token index p -> (t, h, w): text (p, p, p); vl HF get_rope_index for "
      "mrope_text_before text tokens, one image of mrope_image_grid, then text; npy row p of "
      "mrope_positions_path (default text)"),
    C("mrope_image_grid", RL_P_JSON, NULL,
      "list of 3 integers >= 1: mrope_positions vl's HF image_grid_thw [t, h, w], patches "
      "before the spatial merge; h and w multiples of spatial_merge_size (default none: "
      "required by vl)"),
    I("mrope_text_before", mrope_text_before, 0,
      "mrope_positions vl: text tokens before the image (default 0)"),
    I("spatial_merge_size", spatial_merge_size, 1,
      "mrope_positions vl: patches merged per side into one token, HF "
      "vision_config.spatial_merge_size (default 2)"),
    C("mrope_positions_path", RL_P_STR, NULL,
      "mrope_positions npy: .npy file of [tokens][3] integers (t, h, w), 0..2^32-1 (default "
      "none: required by npy)"),
};
#undef F
#undef E
#undef N
#undef I
#undef B
#undef C
#undef BIG
#define N_COMMON (sizeof common_keys / sizeof common_keys[0])

/* common_keys' schemas, then each registered scaling's own keys (a key two types
 * share listed once), built once. Distinct own keys <= slots. */
static rl_param param_table[N_COMMON + ROPE_MAX_SCALING_PARAMS];
static size_t n_param_table;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void)
{
    size_t n = 0;
    for (size_t i = 0; i < N_COMMON; i++) {
        param_table[n] = common_keys[i].p;
        if (param_table[n].type == RL_P_ENUM && !param_table[n].choices)
            param_table[n].choices = rope_type_choices(); /* rope_type, type */
        n++;
    }
    for (size_t t = 0; t < rope_scaling_count(); t++) {
        const rope_scaling *sc = rope_scaling_at((int)t);
        for (size_t k = 0; k < sc->n_own_keys; k++)
            if (rl_param_find(param_table, n, sc->own_keys[k].param.key) < 0 &&
                n < RL_ARRAY_LEN(param_table))
                param_table[n++] = sc->own_keys[k].param;
    }
    n_param_table = n;
}

const rl_param *rope_param_table(size_t *n)
{
    pthread_once(&table_once, build_table);
    *n = n_param_table;
    return param_table;
}

/* The registered scaling key called `key`, or NULL. */
static const rope_scaling_key *scaling_key(const char *key)
{
    for (size_t t = 0; t < rope_scaling_count(); t++) {
        const rope_scaling *sc = rope_scaling_at((int)t);
        for (size_t k = 0; k < sc->n_own_keys; k++)
            if (strcmp(sc->own_keys[k].param.key, key) == 0)
                return &sc->own_keys[k];
    }
    return NULL;
}

static rl_status get_number(const char *key, const json_t *v, double *out, rl_error *err)
{
    if (!json_is_number(v))
        return rl_fail(err, RL_ERR_ARG, "%s must be a number", key);
    double x = json_number_value(v);
    if (!isfinite(x) || x < 0)
        return rl_fail(err, RL_ERR_ARG, "%s %g must be a finite number >= 0", key, x);
    *out = x;
    return RL_OK;
}

static rl_status get_uint(const char *key, const json_t *v, uint32_t *out, rl_error *err)
{
    double x;
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0 || i > (json_int_t)UINT32_MAX)
            return rl_fail(err, RL_ERR_ARG, "%s %lld must be an integer in 0..%u", key, (long long)i,
                           UINT32_MAX);
        *out = (uint32_t)i;
        return RL_OK;
    }
    /* HF configs sometimes write integers as 4096.0. */
    if (json_is_real(v) && (x = json_real_value(v)) >= 0 && x <= UINT32_MAX && x == floor(x)) {
        *out = (uint32_t)x;
        return RL_OK;
    }
    return rl_fail(err, RL_ERR_ARG, "%s must be a non-negative integer", key);
}

static rl_status get_list(const char *key, const json_t *v, double *out, uint32_t *n, rl_error *err)
{
    if (!json_is_array(v))
        return rl_fail(err, RL_ERR_ARG, "%s must be a list of numbers", key);
    size_t len = json_array_size(v);
    if (len == 0 || len > ROPE_MAX_PAIRS)
        return rl_fail(err, RL_ERR_ARG, "%s has %zu entries; expected 1..%d (rotary_dim/2)", key, len,
                       ROPE_MAX_PAIRS);
    for (size_t i = 0; i < len; i++) {
        const json_t *e = json_array_get(v, i);
        double x = json_is_number(e) ? json_number_value(e) : NAN;
        if (!json_is_number(e) || !isfinite(x) || !(x > 0))
            return rl_fail(err, RL_ERR_ARG, "%s[%zu] must be a finite number > 0", key, i);
        out[i] = x;
    }
    *n = (uint32_t)len;
    return RL_OK;
}

/* "a|b|c" as a refusal writes it: "a", "b" or "c". Returns buf. */
static const char *choices_text(const rl_param *p, char *buf, size_t cap)
{
    size_t n = 0, len, next;
    buf[0] = 0;
    const char *c;
    for (int i = 0; n < cap && (c = rl_param_choice_at(p, i, &len)); i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s\"%.*s\"",
                              !i ? "" : rl_param_choice_at(p, i + 1, &next) ? ", " : " or ",
                              (int)len, c);
    return buf;
}

/* RK_ENUM: name -> value by parse, else the name's index in the choices. */
static int enum_parse(const rope_key *k, const char *s)
{
    return !s ? -1 : k->parse ? k->parse(s) : rl_param_choice_index(&k->p, s);
}

/* The name of value v of an RK_ENUM key into buf; returns buf. */
static const char *enum_name(const rope_key *k, int v, char *buf, size_t cap)
{
    size_t len = 0;
    const char *c = k->name ? k->name(v) : rl_param_choice_at(&k->p, v, &len);
    snprintf(buf, cap, "%.*s", (int)(k->name ? strlen(c) : len), c ? c : "");
    return buf;
}

/* A table key's value into its field (k->kind != RK_CODE). */
static rl_status set_field(rope_desc *d, const rope_key *k, const json_t *v, rl_error *err)
{
    const char *key = k->p.key;
    void *at = (char *)d + k->off;
    switch (k->kind) {
    case RK_ENUM: {
        int x = enum_parse(k, json_is_string(v) ? json_string_value(v) : NULL);
        if (x < 0) {
            char says[200];
            return rl_fail(err, RL_ERR_ARG, "%s must be %s", key,
                           choices_text(&k->p, says, sizeof says));
        }
        *(int *)at = x;
        return RL_OK;
    }
    case RK_BOOL:
    case RK_TRI:
        if (!json_is_boolean(v))
            return rl_fail(err, RL_ERR_ARG, "%s must be true or false", key);
        *(int *)at = json_is_true(v) ? 1 : k->kind == RK_TRI ? -1 : 0;
        return RL_OK;
    case RK_UINT: {
        uint32_t *u = at;
        rl_status st = get_uint(key, v, u, err);
        if (!st && *u < (uint32_t)k->rule)
            return rl_fail(err, RL_ERR_ARG, "%s %u must be at least %d", key, *u, k->rule);
        return st;
    }
    case RK_NUM: {
        double x;
        rl_status st = get_number(key, v, &x, err);
        if (st)
            return st;
        if (k->rule == NUM_GE1 && x < 1)
            return rl_fail(err, RL_ERR_ARG, "%s %g must be >= 1", key, x);
        /* the schema's plausibility bound, for every way a value arrives
         * (a batch, --set, a config.json's rope_scaling) */
        if (x > k->p.max)
            return rl_fail(err, RL_ERR_ARG, "%s %g is beyond the plausible limit %.17g "
                           "(docs/rope.md, Limits)", key, x, k->p.max);
        if (k->rule == NUM_GT1 && !(x > 1))
            return rl_fail(err, RL_ERR_ARG, "%s %g must be > 1", key, x);
        if (k->rule == NUM_UNIT && !(x > 0 && x <= 1))
            return rl_fail(err, RL_ERR_ARG, "%s %g must be in (0, 1]", key, x);
        if (k->rule != NUM_GE0 && !(x > 0))
            return rl_fail(err, RL_ERR_ARG, "%s %g must be > 0", key, x);
        *(double *)at = x;
        return RL_OK;
    }
    default:
        return rl_fail(err, RL_ERR_ARG, "%s: no field", key);
    }
}

/* The keys read by code (RK_CODE), and the model's head_dim: their status,
 * or -1 when key is none of them. */
static int set_code(rope_desc *d, const char *key, const json_t *v, rl_error *err)
{
    if (strcmp(key, "rope_type") == 0 || strcmp(key, "type") == 0) {
        if (!json_is_string(v))
            return rl_fail(err, RL_ERR_ARG, "%s must be a string (one of: %s)", key, rope_type_list());
        const char *s = json_string_value(v);
        int t = rope_type_parse(s);
        if (t == ROPE_TYPE_COUNT)
            return rl_fail(err, RL_ERR_ARG, "%s '%s' is not supported (supported: %s)", key, s,
                           rope_type_list());
        d->rope_type = t;
        return RL_OK;
    }
    if (strcmp(key, "mrope_section") == 0 || strcmp(key, "mrope_image_grid") == 0) {
        int sec = key[6] == 's';
        uint32_t *out = sec ? d->mrope_section : d->mrope_image_grid;
        if (!json_is_array(v) || json_array_size(v) != 3)
            return rl_fail(err, RL_ERR_ARG, "%s must be a list of 3 integers (%s)", key,
                           sec ? "pairs per t, h, w stream" : "t, h, w patches");
        for (size_t i = 0; i < 3; i++) {
            char k2[40];
            snprintf(k2, sizeof k2, "%s[%zu]", key, i);
            rl_status st = get_uint(k2, json_array_get(v, i), &out[i], err);
            if (st)
                return st;
            if (!sec && out[i] == 0)
                return rl_fail(err, RL_ERR_ARG, "%s %u must be at least 1", k2, out[i]);
        }
        *(sec ? &d->n_mrope_section : &d->n_mrope_image_grid) = 3;
        return RL_OK;
    }
    if (strcmp(key, "mrope_positions_path") == 0) {
        const char *s = json_is_string(v) ? json_string_value(v) : NULL;
        if (!s || !*s || strlen(s) >= sizeof d->mrope_positions_path)
            return rl_fail(err, RL_ERR_ARG, "mrope_positions_path must be a file name of 1..%zu "
                           "characters", sizeof d->mrope_positions_path - 1);
        memcpy(d->mrope_positions_path, s, strlen(s) + 1);
        return RL_OK;
    }
    if (strcmp(key, "short_factor") == 0)
        return get_list(key, v, d->short_factor, &d->n_short_factor, err);
    if (strcmp(key, "long_factor") == 0)
        return get_list(key, v, d->long_factor, &d->n_long_factor, err);
    if (strcmp(key, "head_dim") == 0) {
        rl_status st = get_uint(key, v, &d->head_dim, err);
        if (!st && d->head_dim < 1)
            return rl_fail(err, RL_ERR_ARG, "head_dim %u must be at least 1", d->head_dim);
        return st;
    }
    return -1;
}

static rl_status set_json(rope_desc *d, const char *key, const json_t *v, rl_error *err)
{
    if (json_is_null(v))
        return RL_OK; /* HF: None means "not given" */
    for (size_t i = 0; i < N_COMMON; i++)
        if (strcmp(common_keys[i].p.key, key) == 0 && common_keys[i].kind != RK_CODE)
            return set_field(d, &common_keys[i], v, err);
    int code = set_code(d, key, v, err);
    if (code >= 0)
        return (rl_status)code;
    rl_status st;

    /* a registered scaling's own key: a number in (0, max] into its slot */
    const rope_scaling_key *sk = scaling_key(key);
    if (sk) {
        double x;
        st = get_number(key, v, &x, err);
        if (st)
            return st;
        if (x > sk->param.max)
            return rl_fail(err, RL_ERR_ARG, "%s %g is beyond the plausible limit %.17g "
                           "(docs/rope.md, Limits)", key, x, sk->param.max);
        if (!(x > 0))
            return rl_fail(err, RL_ERR_ARG, "%s %g must be > 0", key, x);
        d->scaling_param[sk->slot] = x;
        return RL_OK;
    }
    return rl_fail(err, RL_ERR_ARG, "unknown RoPE key '%s' (see 'ropelab encodings' / docs/rope.md)", key);
}

rl_status rope_desc_set_json(rope_desc *d, const char *key, const json_t *v, rl_error *err)
{
    /* every refusal here is about this key, whatever its message says
     * (mrope_section[1], a scaling's own key): the caller locates it */
    rl_status st = set_json(d, key, v, err);
    if (st)
        rl_error_set_key(err, key);
    return st;
}

rl_status rope_desc_from_json(rope_desc *d, const json_t *obj, rl_error *err)
{
    if (!json_is_object(obj))
        return rl_fail(err, RL_ERR_ARG, "RoPE settings must be a JSON object");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        rl_status st = rope_desc_set_json(d, key, v, err);
        if (st)
            return st;
    }
    return RL_OK;
}
/* The JSON of a key code reads (RK_CODE), NULL when not given. */
static json_t *code_to_json(const rope_desc *d, const char *key)
{
    if (strcmp(key, "rope_type") == 0)
        return json_string(rope_type_name(d->rope_type));
    if (strcmp(key, "short_factor") == 0 || strcmp(key, "long_factor") == 0) {
        int sh = key[0] == 's';
        uint32_t n = sh ? d->n_short_factor : d->n_long_factor;
        json_t *a = n ? json_array() : NULL;
        for (uint32_t j = 0; a && j < n; j++)
            json_array_append_new(a, json_real(sh ? d->short_factor[j] : d->long_factor[j]));
        return a;
    }
    if (strcmp(key, "mrope_section") == 0 || strcmp(key, "mrope_image_grid") == 0) {
        int sec = key[6] == 's';
        const uint32_t *x = sec ? d->mrope_section : d->mrope_image_grid;
        if (!(sec ? d->n_mrope_section : d->n_mrope_image_grid))
            return NULL;
        return json_pack("[i,i,i]", (json_int_t)x[0], (json_int_t)x[1], (json_int_t)x[2]);
    }
    if (strcmp(key, "mrope_positions_path") == 0 && d->mrope_positions_path[0])
        return json_string(d->mrope_positions_path);
    return NULL; /* type: rope_type's alias, never written */
}

json_t *rope_desc_to_json(const rope_desc *d)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    /* the table's keys in its order, each when given (a value that is not
     * its default); the ones code reads, written by code */
    for (size_t i = 0; i < N_COMMON; i++) {
        const rope_key *k = &common_keys[i];
        const char *key = k->p.key;
        const void *at = (const char *)d + k->off;
        json_t *v = NULL;
        char name[64];
        switch (k->kind) {
        case RK_ENUM:
            if (*(const int *)at != k->omit)
                v = json_string(enum_name(k, *(const int *)at, name, sizeof name));
            break;
        case RK_BOOL: /* mRoPE's interleaving means something with its sections only */
            if (*(const int *)at && (strcmp(key, "mrope_interleaved") || d->n_mrope_section))
                v = json_true();
            break;
        case RK_TRI:
            if (*(const int *)at)
                v = json_boolean(*(const int *)at > 0);
            break;
        case RK_UINT:
            if (*(const uint32_t *)at)
                v = json_integer(*(const uint32_t *)at);
            break;
        case RK_NUM:
            if (*(const double *)at != 0)
                v = json_real(*(const double *)at);
            break;
        default:
            v = code_to_json(d, key);
        }
        if (v)
            json_object_set_new(o, key, v);
    }
    /* the registered scalings' own keys, each once */
    size_t np;
    const rl_param *ps = rope_param_table(&np);
    for (size_t i = N_COMMON; i < np; i++) {
        const rope_scaling_key *sk = scaling_key(ps[i].key);
        if (sk && d->scaling_param[sk->slot] != 0)
            json_object_set_new(o, ps[i].key, json_real(d->scaling_param[sk->slot]));
    }
    return o;
}
