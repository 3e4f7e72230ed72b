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
 * registered scaling's own keys): the ONE list, used by the encoding
 * registry (family rope), listings (`ropelab encodings`, the runner's batch
 * checks) and the config.json import. Each has its real type, range or
 * choices, so the one validator (rl_param_check) types every given value;
 * rope_desc_set_json / rope_desc_resolve then apply the rules that involve
 * other keys (naming the key). No default is filled in (def "null": absent
 * means "not given"), because most defaults depend on rope_type or on the
 * model: each help ends with "(default ...)", which is what `ropelab
 * encodings` shows as the default. head_dim is the model's, not a key. */
#define RT_CHOICES NULL /* the registry's names, rope_type_choices(), set by build_table */
#define PREC_CHOICES "fp32|table|precise|hf|vllm|ggml-cpu|ggml-vulkan|cuda-fast"
#define DT_CHOICES "fp32|fp16|bf16"
#define E(k, choices, help) {k, RL_P_ENUM, "null", 0, 0, choices, help}
#define N(k, lo, hi, help) {k, RL_P_NUM, "null", lo, hi, NULL, help}
#define I(k, help) {k, RL_P_INT, "null", 0, 4294967295.0, NULL, help}
#define B(k, help) {k, RL_P_BOOL, "null", 0, 0, NULL, help}
#define L(k, help) {k, RL_P_JSON, "null", 0, 0, NULL, help}
/* Plausibility bounds (docs/rope.md "Limits"): no published model comes
 * within orders of magnitude of them, and past them the frequencies and
 * the attention factor lose every digit in fp32. A factor of 2^20 extends
 * 4k tokens to 4G. */
#define BIG 1048576.0           /* 2^20: factors, ramps, coefficients */
#define THETA_MAX 1099511627776.0 /* 2^40: the frequency base */
static const rl_param common_params[] = {
    E("rope_type", RT_CHOICES, "frequency scaling (alias: type) (default default)"),
    E("type", RT_CHOICES, "alias of rope_type (HF rope_scaling) (default rope_type)"),
    N("rope_theta", 1, THETA_MAX, "frequency base, > 1 (default 10000)"),
    I("rotary_dim", "rotated dimensions, even; the rest pass through (default head_dim)"),
    N("partial_rotary_factor", 0, 1, "rotary_dim = int(head_dim * factor), in (0, 1] (default 1)"),
    E("layout", "half|interleaved",
      "pair layout: half (rotate_half, NeoX/Llama) or interleaved (GPT-J) (default half)"),
    E("rotary_part", "first|last",
      "where a partial rotation's rotary_dim dimensions sit in Q/K read from files: first (HF's "
      "partial rotary) or last (DeepSeek MLA, cat(q_nope, q_pe)) (default first)"),
    E("precision", PREC_CHOICES,
      "angle precision fp32, table or precise; framework emulation hf, vllm, ggml-cpu, "
      "ggml-vulkan or cuda-fast, docs/rope.md (default fp32)"),
    E("dtype", DT_CHOICES, "emulation modes' model dtype; ggml: fp32 or fp16 (default fp32)"),
    E("inv_freq_dtype", "fp32|bf16", /* the two rope_emu_validate accepts */
      "hf's inv_freq as stored: fp32, or bf16 for a model cast with .to(bfloat16) (default fp32)"),
    B("tf32", "hf's inv_freq and positions rounded to TF32, the matmul's inputs (default false)"),
    E("trig", "sleef|device",
      "hf/vllm cos/sin: sleef (PyTorch's CPU cos/sin, SLEEF xcosf_u1/xsinf_u1) or device (the "
      "device's builtins) (default sleef)"),
    N("factor", 1, BIG, "scaling factor; dynamic_yarn: the floor of its scale (default per "
                        "rope_type; dynamic_yarn: 1)"),
    I("original_max_position_embeddings",
      "pre-training context length: yarn, llama3, longrope (default max_position_embeddings)"),
    I("max_position_embeddings",
      "model's maximum length: dynamic; yarn/longrope factor default (default none)"),
    I("seq_len", "sequence length in use: dynamic, dynamic_yarn, longrope (default the run's "
                 "length)"),
    N("beta_fast", 0, BIG, "yarn ramp end, rotations (default 32)"),
    N("beta_slow", 0, BIG, "yarn ramp start, rotations (default 1)"),
    N("mscale", 0, BIG, "yarn attention factor numerator coefficient, with mscale_all_dim "
                        "(default none)"),
    N("mscale_all_dim", 0, BIG, "yarn attention factor denominator coefficient (default none)"),
    B("truncate", "yarn floors/ceils the correction range (default true)"),
    N("attention_factor", 0, BIG, "multiplies cos and sin: yarn, longrope (default per rope_type)"),
    N("low_freq_factor", 0, BIG,
      "llama3 low-frequency band edge L/low_freq_factor (default none: required by llama3)"),
    N("high_freq_factor", 0, BIG,
      "llama3 high-frequency band edge L/high_freq_factor (default none: required by llama3)"),
    L("short_factor", "list of rotary_dim/2 numbers > 0: longrope divisors up to the original "
                      "length (default none: required by longrope)"),
    L("long_factor", "list of rotary_dim/2 numbers > 0: longrope divisors beyond it (default "
                     "none: required by longrope)"),
    E("dynamic_mode", "recompute|cache_consistent",
      "dynamic and dynamic_yarn over one sequence: recompute (every token with the length in "
      "use) or cache_consistent (token p with length max(p+1, prompt_len), as a KV cache keeps "
      "it) (default recompute)"),
    I("prompt_len", "cache_consistent's prefill length P; seq_len: pure prefill, where both modes "
                    "agree (default seq_len)"),
    E("semantics", "hf|vllm",
      "whose reading of dynamic and ntk: vllm is vLLM's rotary_embedding, static dynamic at "
      "max_position_embeddings*factor, HunYuan alpha, ntk with mixed_b; docs/rope.md (default hf)"),
    N("alpha", 0, BIG, "semantics vllm, dynamic: HunYuan's base * alpha^(d/(d-2)), > 0 (vLLM "
                       "DynamicNTKAlphaRotaryEmbedding) (default none)"),
    N("mixed_b", 0, BIG, "semantics vllm, ntk: mixed-NTK exponent b, > 0, inv_freq_j / "
                         "exp(ln(factor) ((j+1)/(d/2))^b) (vLLM NTKScalingRotaryEmbedding) "
                         "(default none)"),
    B("resonance", "Resonance RoPE: after the rope_type's scaling the wavelengths 2pi/theta_j "
                   "of resonance_scope's pairs rounded to integers (default false)"),
    E("resonance_scope", "all|below_train",
      "Resonance RoPE's pairs: all (the authors' code, sheryc/resonance_rope) or below_train "
      "(only wavelengths below original_max_position_embeddings, else "
      "max_position_embeddings: the paper's section 4 reading) (default all)"),
    L("mrope_section", "list of 3 integers >= 0: multimodal RoPE (Qwen2-VL), the rotary pairs "
                       "rotated by the t, h and w positions, summing to rotary_dim/2 (default "
                       "none: one position per token)"),
    B("mrope_interleaved", "Qwen3-VL's mRoPE: pair j takes h when j%3==1 and j<3*section_h, w "
                           "when j%3==2 and j<3*section_w, else t (default false: contiguous "
                           "sections t|h|w)"),
    E("mrope_positions", "text|vl|npy",
      "mRoPE: token index p -> (t, h, w): text (p, p, p); vl HF get_rope_index for "
      "mrope_text_before text tokens, one image of mrope_image_grid, then text; npy row p of "
      "mrope_positions_path (default text)"),
    L("mrope_image_grid", "list of 3 integers >= 1: mrope_positions vl's HF image_grid_thw [t, "
                          "h, w], patches before the spatial merge; h and w multiples of "
                          "spatial_merge_size (default none: required by vl)"),
    {"mrope_text_before", RL_P_INT, "null", 0, 4294967295.0, NULL,
     "mrope_positions vl: text tokens before the image (default 0)"},
    I("spatial_merge_size", "mrope_positions vl: patches merged per side into one token, HF "
                            "vision_config.spatial_merge_size (default 2)"),
    {"mrope_positions_path", RL_P_STR, "null", 0, 0, NULL,
     "mrope_positions npy: .npy file of [tokens][3] integers (t, h, w), 0..2^32-1 (default "
     "none: required by npy)"},
};
#undef E
#undef N
#undef I
#undef B
#undef L
#undef BIG
#define N_COMMON (sizeof common_params / sizeof common_params[0])

/* common_params, then each registered scaling's own keys (a key two types
 * share listed once), built once. Distinct own keys <= slots. */
static rl_param param_table[N_COMMON + ROPE_MAX_SCALING_PARAMS];
static size_t n_param_table;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void)
{
    size_t n = 0;
    for (size_t i = 0; i < N_COMMON; i++) {
        param_table[n] = common_params[i];
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

static rl_status set_json(rope_desc *d, const char *key, const json_t *v, rl_error *err)
{
    if (json_is_null(v))
        return RL_OK; /* HF: None means "not given" */
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
    if (strcmp(key, "layout") == 0 || strcmp(key, "precision") == 0) {
        int is_layout = key[0] == 'l';
        const char *s = json_is_string(v) ? json_string_value(v) : NULL;
        if (is_layout) {
            int lay = rope_layout_parse(s);
            if (lay >= 0)
                d->layout = lay;
            else
                return rl_fail(err, RL_ERR_ARG, "layout must be \"half\" or \"interleaved\"");
        } else {
            int p = s ? rope_precision_parse(s) : -1;
            if (p < 0)
                return rl_fail(err, RL_ERR_ARG, "precision must be \"fp32\", \"table\", \"precise\", "
                               "\"hf\", \"vllm\", \"ggml-cpu\", \"ggml-vulkan\" or \"cuda-fast\"");
            d->precision = p;
        }
        return RL_OK;
    }
    if (strcmp(key, "rotary_part") == 0) {
        const char *s = json_is_string(v) ? json_string_value(v) : "";
        if (!strcmp(s, "first"))
            d->rotary_part = ROPE_PART_FIRST;
        else if (!strcmp(s, "last"))
            d->rotary_part = ROPE_PART_LAST;
        else
            return rl_fail(err, RL_ERR_ARG, "rotary_part must be \"first\" or \"last\"");
        return RL_OK;
    }
    if (strcmp(key, "dtype") == 0 || strcmp(key, "inv_freq_dtype") == 0) {
        const char *s = json_is_string(v) ? json_string_value(v) : NULL;
        int dt = s ? rope_dtype_parse(s) : -1;
        if (dt < 0)
            return rl_fail(err, RL_ERR_ARG, "%s must be \"fp32\", \"fp16\" or \"bf16\"", key);
        if (key[0] == 'd')
            d->dtype = dt;
        else
            d->inv_freq_dtype = dt;
        return RL_OK;
    }
    if (strcmp(key, "trig") == 0) {
        int t = json_is_string(v) ? rope_trig_parse(json_string_value(v)) : -1;
        if (t < 0)
            return rl_fail(err, RL_ERR_ARG, "trig must be \"sleef\" or \"device\"");
        d->trig = t;
        return RL_OK;
    }
    if (strcmp(key, "tf32") == 0) {
        if (!json_is_boolean(v))
            return rl_fail(err, RL_ERR_ARG, "tf32 must be true or false");
        d->tf32 = json_is_true(v);
        return RL_OK;
    }
    if (strcmp(key, "dynamic_mode") == 0) {
        int m = json_is_string(v) ? rope_dynamic_mode_parse(json_string_value(v)) : -1;
        if (m < 0)
            return rl_fail(err, RL_ERR_ARG,
                           "dynamic_mode must be \"recompute\" or \"cache_consistent\"");
        d->dynamic_mode = m;
        return RL_OK;
    }
    if (strcmp(key, "semantics") == 0) {
        int m = json_is_string(v) ? rope_semantics_parse(json_string_value(v)) : -1;
        if (m < 0)
            return rl_fail(err, RL_ERR_ARG, "semantics must be \"hf\" or \"vllm\"");
        d->semantics = m;
        return RL_OK;
    }
    if (strcmp(key, "truncate") == 0) {
        if (!json_is_boolean(v))
            return rl_fail(err, RL_ERR_ARG, "truncate must be true or false");
        d->truncate = json_is_true(v) ? 1 : -1;
        return RL_OK;
    }
    if (strcmp(key, "resonance_scope") == 0) {
        const char *s = json_is_string(v) ? json_string_value(v) : "";
        if (!strcmp(s, "all"))
            d->resonance_scope = ROPE_RESONANCE_ALL;
        else if (!strcmp(s, "below_train"))
            d->resonance_scope = ROPE_RESONANCE_BELOW_TRAIN;
        else
            return rl_fail(err, RL_ERR_ARG, "resonance_scope must be \"all\" or \"below_train\"");
        return RL_OK;
    }
    if (strcmp(key, "resonance") == 0) {
        if (!json_is_boolean(v))
            return rl_fail(err, RL_ERR_ARG, "resonance must be true or false");
        d->resonance = json_is_true(v);
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
    if (strcmp(key, "mrope_interleaved") == 0) {
        if (!json_is_boolean(v))
            return rl_fail(err, RL_ERR_ARG, "mrope_interleaved must be true or false");
        d->mrope_interleaved = json_is_true(v);
        return RL_OK;
    }
    if (strcmp(key, "mrope_positions") == 0) {
        const char *s = json_is_string(v) ? json_string_value(v) : "";
        if (!strcmp(s, "text"))
            d->mrope_positions = ROPE_MROPE_POS_TEXT;
        else if (!strcmp(s, "vl"))
            d->mrope_positions = ROPE_MROPE_POS_VL;
        else if (!strcmp(s, "npy"))
            d->mrope_positions = ROPE_MROPE_POS_NPY;
        else
            return rl_fail(err, RL_ERR_ARG, "mrope_positions must be \"text\", \"vl\" or \"npy\"");
        return RL_OK;
    }
    if (strcmp(key, "mrope_text_before") == 0)
        return get_uint(key, v, &d->mrope_text_before, err);
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

    const struct { const char *k; uint32_t *u; } ints[] = {
        {"head_dim", &d->head_dim},
        {"rotary_dim", &d->rotary_dim},
        {"original_max_position_embeddings", &d->original_max_position_embeddings},
        {"max_position_embeddings", &d->max_position_embeddings},
        {"seq_len", &d->seq_len},
        {"prompt_len", &d->prompt_len},
        {"spatial_merge_size", &d->spatial_merge_size},
    };
    for (size_t i = 0; i < RL_ARRAY_LEN(ints); i++)
        if (strcmp(key, ints[i].k) == 0) {
            rl_status st = get_uint(key, v, ints[i].u, err);
            uint32_t min = strcmp(key, "rotary_dim") == 0 ? 2 : 1;
            if (!st && *ints[i].u < min)
                return rl_fail(err, RL_ERR_ARG, "%s %u must be at least %u", key, *ints[i].u, min);
            return st;
        }

    const struct { const char *k; double *x; } nums[] = {
        {"rope_theta", &d->theta},
        {"partial_rotary_factor", &d->partial_rotary_factor},
        {"factor", &d->factor},
        {"beta_fast", &d->beta_fast},
        {"beta_slow", &d->beta_slow},
        {"mscale", &d->mscale},
        {"mscale_all_dim", &d->mscale_all_dim},
        {"attention_factor", &d->attention_factor},
        {"low_freq_factor", &d->low_freq_factor},
        {"high_freq_factor", &d->high_freq_factor},
        {"alpha", &d->alpha},
        {"mixed_b", &d->mixed_b},
    };
    for (size_t i = 0; i < RL_ARRAY_LEN(nums); i++)
        if (strcmp(key, nums[i].k) == 0) {
            rl_status st = get_number(key, v, nums[i].x, err);
            double x = *nums[i].x;
            if (st)
                return st;
            if (strcmp(key, "factor") == 0 && x < 1)
                return rl_fail(err, RL_ERR_ARG, "factor %g must be >= 1", x);
            /* the table's plausibility bound, for every way a value arrives
             * (a batch, --set, a config.json's rope_scaling) */
            long pi = rl_param_find(common_params, N_COMMON, key);
            if (pi >= 0 && x > common_params[pi].max)
                return rl_fail(err, RL_ERR_ARG, "%s %g is beyond the plausible limit %.17g "
                               "(docs/rope.md, Limits)", key, x, common_params[pi].max);
            if (strcmp(key, "rope_theta") == 0 && !(x > 1))
                return rl_fail(err, RL_ERR_ARG, "rope_theta %g must be > 1", x);
            if (strcmp(key, "partial_rotary_factor") == 0 && !(x > 0 && x <= 1))
                return rl_fail(err, RL_ERR_ARG, "partial_rotary_factor %g must be in (0, 1]", x);
            /* HF reads mscale/mscale_all_dim 0 as falsy (the plain yarn factor):
             * 0 is a legal value there; every other number must be > 0. */
            if (strncmp(key, "mscale", 6) != 0 && !(x > 0))
                return rl_fail(err, RL_ERR_ARG, "%s %g must be > 0", key, x);
            return RL_OK;
        }

    /* a registered scaling's own key: a number in (0, max] into its slot */
    const rope_scaling_key *sk = scaling_key(key);
    if (sk) {
        double x;
        rl_status st = get_number(key, v, &x, err);
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
json_t *rope_desc_to_json(const rope_desc *d)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
#define SET_NUM(k, v) if ((v) != 0) json_object_set_new(o, k, json_real(v))
#define SET_INT(k, v) if ((v) != 0) json_object_set_new(o, k, json_integer(v))
    json_object_set_new(o, "rope_type", json_string(rope_type_name(d->rope_type)));
    SET_NUM("rope_theta", d->theta);
    SET_INT("rotary_dim", d->rotary_dim);
    SET_NUM("partial_rotary_factor", d->partial_rotary_factor);
    if (d->layout == RL_ROPE_LAYOUT_INTERLEAVED)
        json_object_set_new(o, "layout", json_string(rope_layout_name(d->layout)));
    if (d->rotary_part == ROPE_PART_LAST)
        json_object_set_new(o, "rotary_part", json_string("last"));
    if (d->precision)
        json_object_set_new(o, "precision", json_string(rope_precision_name(d->precision)));
    if (d->dtype)
        json_object_set_new(o, "dtype", json_string(rope_dtype_name(d->dtype)));
    if (d->inv_freq_dtype)
        json_object_set_new(o, "inv_freq_dtype", json_string(rope_dtype_name(d->inv_freq_dtype)));
    if (d->tf32)
        json_object_set_new(o, "tf32", json_true());
    if (d->trig)
        json_object_set_new(o, "trig", json_string(rope_trig_name(d->trig)));
    SET_NUM("factor", d->factor);
    SET_INT("original_max_position_embeddings", d->original_max_position_embeddings);
    SET_INT("max_position_embeddings", d->max_position_embeddings);
    SET_INT("seq_len", d->seq_len);
    SET_NUM("beta_fast", d->beta_fast);
    SET_NUM("beta_slow", d->beta_slow);
    SET_NUM("mscale", d->mscale);
    SET_NUM("mscale_all_dim", d->mscale_all_dim);
    if (d->truncate)
        json_object_set_new(o, "truncate", json_boolean(d->truncate > 0));
    SET_NUM("attention_factor", d->attention_factor);
    SET_NUM("low_freq_factor", d->low_freq_factor);
    SET_NUM("high_freq_factor", d->high_freq_factor);
    if (d->dynamic_mode)
        json_object_set_new(o, "dynamic_mode", json_string(rope_dynamic_mode_name(d->dynamic_mode)));
    SET_INT("prompt_len", d->prompt_len);
    if (d->semantics)
        json_object_set_new(o, "semantics", json_string(rope_semantics_name(d->semantics)));
    SET_NUM("alpha", d->alpha);
    SET_NUM("mixed_b", d->mixed_b);
    if (d->resonance)
        json_object_set_new(o, "resonance", json_true());
    if (d->resonance_scope == ROPE_RESONANCE_BELOW_TRAIN)
        json_object_set_new(o, "resonance_scope", json_string("below_train"));
    if (d->n_mrope_section) {
        json_object_set_new(o, "mrope_section", json_pack("[i,i,i]", (json_int_t)d->mrope_section[0],
                                                          (json_int_t)d->mrope_section[1],
                                                          (json_int_t)d->mrope_section[2]));
        if (d->mrope_interleaved)
            json_object_set_new(o, "mrope_interleaved", json_true());
    }
    static const char *const mpos[] = {"text", "vl", "npy"};
    if (d->mrope_positions > 0 && d->mrope_positions < 3)
        json_object_set_new(o, "mrope_positions", json_string(mpos[d->mrope_positions]));
    if (d->n_mrope_image_grid)
        json_object_set_new(o, "mrope_image_grid",
                            json_pack("[i,i,i]", (json_int_t)d->mrope_image_grid[0],
                                      (json_int_t)d->mrope_image_grid[1],
                                      (json_int_t)d->mrope_image_grid[2]));
    SET_INT("mrope_text_before", d->mrope_text_before);
    SET_INT("spatial_merge_size", d->spatial_merge_size);
    if (d->mrope_positions_path[0])
        json_object_set_new(o, "mrope_positions_path", json_string(d->mrope_positions_path));
#undef SET_NUM
#undef SET_INT
    const struct { const char *k; uint32_t n; const double *v; } lists[] = {
        {"short_factor", d->n_short_factor, d->short_factor},
        {"long_factor", d->n_long_factor, d->long_factor},
    };
    for (size_t l = 0; l < 2; l++) {
        if (!lists[l].n)
            continue;
        json_t *a = json_array();
        for (uint32_t j = 0; j < lists[l].n; j++)
            json_array_append_new(a, json_real(lists[l].v[j]));
        json_object_set_new(o, lists[l].k, a);
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
