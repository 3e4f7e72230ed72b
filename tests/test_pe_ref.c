/* The encoding registry on the CPU: parameters and their messages, T5
 * buckets, ALiBi slopes, sinusoidal values, learned tables (.npy, seeds,
 * beyond-table policies), Transformer-XL terms — every expected value
 * computed by hand from the papers' formulas, not by the code under test. */
#include <math.h>
#include <string.h>

#include "core/rl_npy.h"
#include "core/rl_util.h"
#include "pe/pe.h"
#include "pe/rope.h"
#include "pe/rope_scaling.h"
#include "rl_test.h"
#include "test_pe_util.h"

static const pe_shape shape8 = {.head_dim = 4, .heads = 8};

/* ---- registry and parameters ------------------------------------------------ */

START_TEST(registry_lists_every_encoding_once)
{
    const char *want[] = {"nope",  "rope", "sinusoidal", "learned", "t5",
                          "alibi", "xl",   "kerple",     "xpos"};
    ck_assert_uint_eq(pe_family_count(), RL_ARRAY_LEN(want));
    for (size_t i = 0; i < RL_ARRAY_LEN(want); i++) {
        const pe_family *f = pe_family_find(want[i]);
        ck_assert_ptr_eq(pe_family_at(i), f); /* registry order */
        /* every family brings its own check rows, of the kind it acts on */
        if (f->acts & PE_ACTS_LOGITS)
            ck_assert_uint_gt(f->n_bias_checks, 0);
        else
            ck_assert_uint_gt(f->n_vec_checks, 0);
        ck_assert_ptr_nonnull(f);
        ck_assert_str_eq(f->name, want[i]);
        ck_assert_ptr_nonnull(f->paper);
        size_t n_params;
        const pe_param *params = pe_family_params(f, &n_params);
        for (size_t k = 0; k < n_params; k++) { /* every default is valid JSON */
            json_error_t je;
            json_t *v = json_loads(params[k].def, JSON_DECODE_ANY, &je);
            ck_assert_msg(v != NULL, "%s.%s default", f->name, params[k].key);
            json_decref(v);
        }
    }
    ck_assert_ptr_null(pe_family_find("rope2"));
    ck_assert_int_eq(pe_family_find("t5")->acts, PE_ACTS_LOGITS);
    ck_assert_int_eq(pe_family_find("sinusoidal")->acts, PE_ACTS_VECTORS);
    ck_assert_str_eq(pe_bias_variant(pe_family_find("xl")), "xl");
    ck_assert_str_eq(pe_bias_variant(pe_family_find("rope")), "none");
}
END_TEST

START_TEST(resolved_params_fill_every_default)
{
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_int_eq(make_enc("t5", "{\"num_buckets\": 64}", &shape8, &e, &err), RL_OK);
    const json_t *p = pe_encoding_params(e);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "num_buckets")), 64);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "max_distance")), 128);
    ck_assert(json_is_true(json_object_get(p, "bidirectional")));
    ck_assert_double_eq(json_real_value(json_object_get(p, "sigma")), 0.02);
    pe_encoding_destroy(e);
    /* null means default as well */
    ck_assert_int_eq(make_enc("alibi", "{\"max_bias\": null}", &shape8, &e, &err), RL_OK);
    ck_assert_double_eq(pe_param_num(e, "max_bias"), 8.0);
    pe_encoding_destroy(e);
    /* derived values are recorded: learned rows, xl d_r, rope rotary_dim */
    pe_shape s64 = {.head_dim = 64, .heads = 2};
    ck_assert_int_eq(make_enc("learned", "{}", &s64, &e, &err), RL_OK);
    ck_assert_int_eq(pe_param_int(e, "max_positions"), 2048);
    pe_encoding_destroy(e);
    ck_assert_int_eq(make_enc("xl", "{}", &s64, &e, &err), RL_OK);
    ck_assert_int_eq(pe_param_int(e, "d_r"), 64);
    pe_encoding_destroy(e);
    ck_assert_int_eq(make_enc("rope", "{}", &s64, &e, &err), RL_OK);
    ck_assert_int_eq(pe_param_int(e, "rotary_dim"), 64);
    pe_encoding_destroy(e);
}
END_TEST

typedef struct bad_param {
    const char *enc, *json;
    uint32_t head_dim, heads, kv_heads;
    const char *msg;
} bad_param;

static const bad_param bad_params[] = {
    {"t5", "{\"num_bucket\": 3}", 4, 8, 0,
     "t5: unknown parameter 'num_bucket' (known: bidirectional, num_buckets, max_distance, path, sigma)"},
    {"nope", "{\"alpha\": 1}", 4, 8, 0, "nope: unknown parameter 'alpha' (known: none)"},
    {"t5", "{\"num_buckets\": 2.5}", 4, 8, 0, "t5: num_buckets must be an integer"},
    {"t5", "{\"num_buckets\": \"32\"}", 4, 8, 0, "t5: num_buckets must be an integer"},
    {"t5", "{\"num_buckets\": 1}", 4, 8, 0, "t5: num_buckets 1 is below the minimum 2"},
    {"t5", "{\"num_buckets\": 5000}", 4, 8, 0, "t5: num_buckets 5000 exceeds the maximum 4096"},
    {"t5", "{\"num_buckets\": 2}", 4, 8, 0,
     "t5: num_buckets 2 leaves no exact bucket (need at least 4 when bidirectional)"},
    {"t5", "{\"max_distance\": 8}", 4, 8, 0,
     "t5: max_distance 8 must exceed the exact range max_exact = 8 (num_buckets/4)"},
    {"t5", "{\"bidirectional\": false, \"max_distance\": 16}", 4, 8, 0,
     "t5: max_distance 16 must exceed the exact range max_exact = 16 (num_buckets/2)"},
    {"t5", "{\"bidirectional\": 1}", 4, 8, 0, "t5: bidirectional must be true or false"},
    {"t5", "{\"sigma\": -1}", 4, 8, 0, "t5: sigma -1 is below the minimum 0"},
    {"t5", "{\"path\": 3}", 4, 8, 0, "t5: path must be a string"},
    {"alibi", "{\"max_bias\": \"8\"}", 4, 8, 0, "alibi: max_bias must be a number"},
    {"alibi", "{\"max_bias\": 0}", 4, 8, 0, "alibi: max_bias 0 is below the minimum 9.9999999999999995e-07"},
    {"learned", "{\"beyond\": \"maybe\"}", 4, 8, 0,
     "learned: beyond 'maybe' is not one of error|clamp|wrap"},
    {"learned", "{\"beyond\": 2}", 4, 8, 0, "learned: beyond must be one of error|clamp|wrap"},
    {"learned", "{\"max_positions\": -1}", 4, 8, 0, "learned: max_positions -1 is below the minimum 0"},
    {"sinusoidal", "{}", 5, 1, 0, "sinusoidal: head_dim 5 must be even (sin/cos pairs)"},
    {"sinusoidal", "{\"base\": 1}", 4, 1, 0, "sinusoidal: base 1 is below the minimum 1.0000001000000001"},
    {"xl", "{\"d_r\": 3}", 4, 8, 0, "xl: d_r 3 must be even (sin and cos halves)"},
    {"xl", "{}", 5, 8, 0, "xl: d_r 5 must be even (sin and cos halves) (it defaults to head_dim)"},
    {"rope", "{\"rotary_dim\": 5}", 8, 1, 0, "rope: rotary_dim 5 must be even"},
    /* rope's keys are typed in rope_param_table: the one validator names them */
    {"rope", "{\"layout\": \"diagonal\"}", 8, 1, 0, "rope: layout 'diagonal' is not one of half|interleaved"},
    {"rope", "{\"precision\": \"fp64\"}", 8, 1, 0,
     "rope: precision 'fp64' is not one of fp32|table|precise|hf|vllm|ggml-cpu|ggml-vulkan|cuda-fast"},
    {"rope", "{\"rotary_dim\": 6.5}", 8, 1, 0, "rope: rotary_dim must be an integer"},
    {"rope", "{\"rope_theta\": \"1e4\"}", 8, 1, 0, "rope: rope_theta must be a number"},
    {"alibi", "{}", 4, 8, 3, "alibi: kv_heads 3 must divide heads 8"},
    {"alibi", "{}", 0, 8, 0, "alibi: head_dim must be at least 1"},
    {"rope9", "{}", 4, 8, 0,
     "unknown encoding 'rope9' (known: nope, rope, sinusoidal, learned, t5, alibi, xl, kerple, "
     "xpos)"},
    {"kerple", "{\"r2\": 0}", 4, 2, 0,
     "kerple: r2 must be a finite number > 0 (the kernel needs r1, r2 > 0)"},
    {"kerple", "{\"r1\": [1, -2]}", 4, 2, 0,
     "kerple: r1[...] must be a finite number > 0 (the kernel needs r1, r2 > 0)"},
    {"kerple", "{\"r2\": 1e-50}", 4, 2, 0,
     "kerple: r2 must be a finite number > 0"}, /* 0 in fp32 */
    {"kerple", "{\"r1\": [1, 2, 3]}", 4, 2, 0, "kerple: r1 has 3 values but the model has 2 heads"},
    {"kerple", "{\"r1\": \"1\"}", 4, 2, 0, "kerple: r1 must be a number or a list of 2 numbers"},
    {"kerple", "{\"r3\": 1}", 4, 2, 0, "kerple: unknown parameter 'r3' (known: r1, r2)"},
    {"t5", "[1, 2]", 4, 8, 0, "t5: parameters must be a JSON object"},
};

/* err.key of the bad_params whose key is not the one key of their json
 * (that json's only key, or "" for a shape error or a malformed object). */
static const struct {
    const char *enc, *json, *key;
} bad_param_keys[] = {
    {"t5", "{\"bidirectional\": false, \"max_distance\": 16}", "max_distance"},
    {"xl", "{}", "d_r"}, /* its default, head_dim 5 */
};

START_TEST(every_parameter_error_names_the_key)
{
    const bad_param *b = &bad_params[_i];
    pe_shape s = {.head_dim = b->head_dim, .heads = b->heads, .kv_heads = b->kv_heads};
    pe_encoding *e = (pe_encoding *)1;
    rl_error err = {0};
    json_error_t je;
    json_t *p = json_loads(b->json, 0, &je);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(pe_encoding_create(b->enc, p, &s, &e, &err), RL_ERR_ARG);
    /* the key as data: a shape error or a malformed object names none */
    const char *key = "";
    json_t *v;
    if (json_is_object(p) && json_object_size(p) == 1)
        json_object_foreach(p, key, v)
            break;
    for (size_t k = 0; k < sizeof bad_param_keys / sizeof bad_param_keys[0]; k++)
        if (!strcmp(bad_param_keys[k].enc, b->enc) && !strcmp(bad_param_keys[k].json, b->json))
            key = bad_param_keys[k].key;
    ck_assert_msg(strcmp(err.key, key) == 0, "'%s': key '%s', want '%s'", err.msg, err.key, key);
    json_decref(p);
    ck_assert_ptr_null(e);
    ck_assert_msg(strncmp(err.msg, b->msg, strlen(b->msg)) == 0, "got '%s'\nwant '%s'", err.msg,
                  b->msg);
}
END_TEST

/* 1 when name is one of the "a|b|c" choices. */
static int in_choices(const char *choices, const char *name)
{
    rl_param p = {.key = "x", .type = RL_P_ENUM, .choices = choices};
    return rl_param_choice_ok(&p, name);
}

START_TEST(rope_param_types_are_what_rope_accepts)
{
    /* rope_param_table's declared types (what `ropelab encodings` lists and the
     * batch loader checks) agree with rope's own setter: every choice of an
     * enum key is accepted, and every rope type and precision mode rope
     * knows is a choice; no key keeps the untyped "json" except the lists
     * (whose help says so first: "list of ..."). */
    size_t n_rope;
    const rl_param *rope_params = rope_param_table(&n_rope);
    for (size_t i = 0; i < n_rope; i++) {
        const rl_param *p = &rope_params[i];
        ck_assert_msg(p->type != RL_P_JSON || strncmp(p->help, "list of ", 8) == 0,
                      "%s is untyped", p->key);
        ck_assert_msg(strstr(p->help, "(default ") != NULL, "%s: help names no default", p->key);
        if (p->type != RL_P_ENUM)
            continue;
        char buf[256];
        snprintf(buf, sizeof buf, "%s", p->choices);
        for (char *c = strtok(buf, "|"); c; c = strtok(NULL, "|")) {
            json_t *v = json_string(c);
            rope_desc d = {0};
            rl_error err = {0};
            ck_assert_msg(rope_desc_set_json(&d, p->key, v, &err) == RL_OK, "%s=%s: %s", p->key,
                          c, err.msg);
            json_decref(v);
        }
    }
    const rl_param *rt = &rope_params[rl_param_find(rope_params, n_rope, "rope_type")];
    for (int t = 0; t < ROPE_TYPE_COUNT; t++)
        ck_assert_msg(in_choices(rt->choices, rope_type_name(t)), "%s", rope_type_name(t));
    const rl_param *pr = &rope_params[rl_param_find(rope_params, n_rope, "precision")];
    for (int m = 0; m < RL_ROPE_PREC_COUNT; m++)
        ck_assert_msg(in_choices(pr->choices, rope_precision_name(m)), "%s",
                      rope_precision_name(m));
}
END_TEST

START_TEST(rope_registry_keys_are_ropes_own_list)
{
    /* The registry declares exactly rope's one key list (rope_param_table),
     * and every key in it is accepted by rope's own setter (a sample value
     * per common key; a common key without a sample here fails the test; a
     * registered scaling's own key, a number in (0, max], takes 1). */
    const pe_family *fam = pe_family_find("rope");
    ck_assert_ptr_nonnull(fam);
    size_t n_rope, n_fam;
    const rl_param *rope_params = rope_param_table(&n_rope);
    ck_assert_ptr_eq(pe_family_params(fam, &n_fam), rope_params);
    ck_assert_uint_eq(n_fam, n_rope);
    static const struct { const char *key, *json; } sample[] = {
        {"rope_type", "\"linear\""}, {"type", "\"linear\""}, {"rope_theta", "500000"},
        {"rotary_dim", "2"}, {"partial_rotary_factor", "0.5"}, {"layout", "\"half\""},
        {"rotary_part", "\"last\""},
        {"precision", "\"table\""}, {"dtype", "\"bf16\""}, {"inv_freq_dtype", "\"bf16\""},
        {"tf32", "true"}, {"trig", "\"device\""}, {"factor", "2"}, {"original_max_position_embeddings", "2"},
        {"max_position_embeddings", "2"}, {"seq_len", "2"}, {"beta_fast", "2"},
        {"beta_slow", "2"}, {"mscale", "2"}, {"mscale_all_dim", "2"}, {"truncate", "true"},
        {"attention_factor", "2"}, {"low_freq_factor", "2"}, {"high_freq_factor", "2"},
        {"short_factor", "[1, 2]"}, {"long_factor", "[1, 2]"},
        {"dynamic_mode", "\"cache_consistent\""}, {"prompt_len", "2"},
        {"semantics", "\"vllm\""}, {"alpha", "1000"}, {"mixed_b", "0.5"},
        {"resonance", "true"}, {"resonance_scope", "\"below_train\""},
        {"mrope_section", "[16, 24, 24]"}, {"mrope_interleaved", "true"},
        {"mrope_positions", "\"vl\""}, {"mrope_image_grid", "[1, 4, 4]"},
        {"mrope_text_before", "0"}, {"spatial_merge_size", "2"},
        {"mrope_positions_path", "\"pos3.npy\""},
    };
    for (size_t i = 0; i < n_rope; i++) {
        const char *js = NULL;
        for (size_t k = 0; k < RL_ARRAY_LEN(sample); k++)
            if (!strcmp(sample[k].key, rope_params[i].key))
                js = sample[k].json;
        for (size_t t = 0; !js && t < rope_scaling_count(); t++)
            for (size_t k = 0; k < rope_scaling_at((int)t)->n_own_keys; k++)
                if (!strcmp(rope_scaling_at((int)t)->own_keys[k].param.key, rope_params[i].key))
                    js = "1";
        ck_assert_msg(js != NULL, "no sample for rope key %s", rope_params[i].key);
        json_error_t je;
        json_t *v = json_loads(js, JSON_DECODE_ANY, &je);
        rope_desc d = {0};
        rl_error err = {0};
        ck_assert_msg(rope_desc_set_json(&d, rope_params[i].key, v, &err) == RL_OK, "%s: %s",
                      rope_params[i].key, err.msg);
        json_decref(v);
    }
}
END_TEST

START_TEST(rope_resolved_params_record_what_was_used)
{
    pe_shape s = {.head_dim = 128, .heads = 1};
    pe_encoding *e;
    rl_error err = {0};
    ck_assert_int_eq(make_enc("rope", "{\"type\": \"yarn\", \"factor\": 4, "
                              "\"original_max_position_embeddings\": 4096}", &s, &e, &err), RL_OK);
    ck_assert_str_eq(pe_param_str(e, "rope_type"), "yarn");
    /* YaRN's default attention factor 0.1 ln(4) + 1. */
    ck_assert_double_eq_tol(pe_param_num(e, "attention_factor"), 0.1 * log(4.0) + 1.0, 1e-15);
    ck_assert_int_eq(pe_param_int(e, "rotary_dim"), 128);
    pe_encoding_destroy(e);
}
END_TEST

START_TEST(set_parses_json_else_string)
{
    json_t *o = json_object();
    rl_error err = {0};
    ck_assert_int_eq(pe_set_parse(o, "num_buckets=64", &err), RL_OK);
    ck_assert(json_is_integer(json_object_get(o, "num_buckets")));
    ck_assert_int_eq(json_integer_value(json_object_get(o, "num_buckets")), 64);
    ck_assert_int_eq(pe_set_parse(o, "bidirectional=false", &err), RL_OK);
    ck_assert(json_is_false(json_object_get(o, "bidirectional")));
    ck_assert_int_eq(pe_set_parse(o, "alpha=0.5", &err), RL_OK);
    ck_assert_double_eq(json_real_value(json_object_get(o, "alpha")), 0.5);
    ck_assert_int_eq(pe_set_parse(o, "layout=half", &err), RL_OK);
    ck_assert_str_eq(json_string_value(json_object_get(o, "layout")), "half");
    ck_assert_int_eq(pe_set_parse(o, "path=\"/tmp/a b.npy\"", &err), RL_OK);
    ck_assert_str_eq(json_string_value(json_object_get(o, "path")), "/tmp/a b.npy");
    ck_assert_int_eq(pe_set_parse(o, "path=x=y", &err), RL_OK); /* first '=' splits */
    ck_assert_str_eq(json_string_value(json_object_get(o, "path")), "x=y");
    ck_assert_int_eq(pe_set_parse(o, "alpha", &err), RL_ERR_ARG);
    ck_assert_str_eq(err.msg, "--set 'alpha': expected key=value");
    ck_assert_int_eq(pe_set_parse(o, "=3", &err), RL_ERR_ARG);
    ck_assert_str_eq(err.msg, "--set '=3': empty key");
    json_decref(o);
}
END_TEST

/* ---- T5 buckets ----------------------------------------------------------------- */

/* Bidirectional, 32 buckets, max_distance 128: 16 per sign, max_exact 8;
 * n >= 8 goes to 8 + floor(log(n/8)/log(16) * 8), i.e. bucket 8 + k starts
 * at n = 8 * 2^(k/2): 11.3 -> 12, 16, 22.6 -> 23, 32, 45.3 -> 46, 64,
 * 90.5 -> 91; 15 from 91 on (clamped). r > 0 adds 16. */
static const int64_t t5_bidir[][2] = {
    {0, 0},     {-1, 1},    {-7, 7},    {-8, 8},    {-11, 8},   {-12, 9},   {-15, 9},
    {-16, 10},  {-22, 10},  {-23, 11},  {-31, 11},  {-32, 12},  {-45, 12},  {-46, 13},
    {-63, 13},  {-64, 14},  {-90, 14},  {-91, 15},  {-127, 15}, {-128, 15}, {-1000000, 15},
    {1, 17},    {7, 23},    {8, 24},    {12, 25},   {16, 26},   {23, 27},   {32, 28},
    {46, 29},   {64, 30},   {91, 31},   {128, 31},  {1048576, 31},
};
/* Causal, 32 buckets, 128: max_exact 16, r >= 0 is bucket 0; bucket 16 + k
 * starts at n = 16 * 8^(k/16): k=1 18.2 -> 19, k=2 20.75 -> 21, k=3 23.6 ->
 * 24, k=4 26.9 -> 27, k=15 16*2^(45/16) = 112.4 -> 113 (log(112/16)/log 8 *
 * 16 = 14.97), k=16 at 128 -> clamped to 31. */
static const int64_t t5_causal[][2] = {
    {5, 0},    {0, 0},    {-1, 1},   {-15, 15}, {-16, 16},  {-18, 16},  {-19, 17},
    {-20, 17}, {-21, 18}, {-23, 18}, {-24, 19}, {-26, 19},  {-27, 20},  {-112, 30},
    {-113, 31}, {-127, 31}, {-128, 31}, {-5000, 31},
};

START_TEST(t5_buckets_match_hand_computed_tables)
{
    for (size_t i = 0; i < RL_ARRAY_LEN(t5_bidir); i++)
        ck_assert_msg(pe_t5_bucket(t5_bidir[i][0], 1, 32, 128) == t5_bidir[i][1],
                      "bidirectional r=%lld: %lld, want %lld", (long long)t5_bidir[i][0],
                      (long long)pe_t5_bucket(t5_bidir[i][0], 1, 32, 128), (long long)t5_bidir[i][1]);
    for (size_t i = 0; i < RL_ARRAY_LEN(t5_causal); i++)
        ck_assert_msg(pe_t5_bucket(t5_causal[i][0], 0, 32, 128) == t5_causal[i][1],
                      "causal r=%lld: %lld, want %lld", (long long)t5_causal[i][0],
                      (long long)pe_t5_bucket(t5_causal[i][0], 0, 32, 128), (long long)t5_causal[i][1]);
}
END_TEST

/* Table B[b][h] = 100 h + b written as HF's [num_buckets, heads] .npy: the
 * bias then spells out the bucket, through the registry's reference. */
START_TEST(t5_bias_reads_hf_table_layout)
{
    tdir d;
    tdir_open(&d);
    float tb[32 * 3];
    for (int b = 0; b < 32; b++)
        for (int h = 0; h < 3; h++)
            tb[b * 3 + h] = (float)(100 * h + b);
    uint64_t shp[2] = {32, 3};
    const char *path = tdir_npy(&d, "t5.npy", "<f4", 0, shp, 2, tb, sizeof tb);
    char js[256];
    snprintf(js, sizeof js, "{\"path\": \"%s\"}", path);
    pe_shape s = {.head_dim = 8, .heads = 3};
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_msg(make_enc("t5", js, &s, &e, &err) == RL_OK, "%s", err.msg);
    /* r = j - i = kpos - qpos */
    ck_assert_double_eq(pe_bias_ref(e, 0, 0, 0, 100, 100, NULL, NULL), 0);
    ck_assert_double_eq(pe_bias_ref(e, 1, 0, 0, 100, 84, NULL, NULL), 110);  /* r=-16 -> 10 */
    ck_assert_double_eq(pe_bias_ref(e, 2, 0, 0, 100, 116, NULL, NULL), 226); /* r=16 -> 26 */
    ck_assert_double_eq(pe_bias_ref(e, 2, 0, 0, 0, 1048576, NULL, NULL), 231);
    pe_encoding_destroy(e);
    /* wrong shape: [heads, num_buckets] (transposed) is refused */
    uint64_t bad[2] = {3, 32};
    path = tdir_npy(&d, "t5t.npy", "<f4", 0, bad, 2, tb, sizeof tb);
    snprintf(js, sizeof js, "{\"path\": \"%s\"}", path);
    ck_assert_int_eq(make_enc("t5", js, &s, &e, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "has shape (3, 32), expected (32, 3)"));
    ck_assert_ptr_nonnull(strstr(err.msg, "t5: path:"));
    tdir_close(&d);
}
END_TEST

/* ---- ALiBi slopes ------------------------------------------------------------------ */

START_TEST(alibi_slopes_follow_the_paper_for_8_and_12_heads)
{
    /* 8 heads: 2^(-8/8 k) = 1/2, 1/4, ..., 1/256. 12 heads (not a power of
     * two): the 8-head slopes, then the 16-head slopes 2^(-k/2) at k = 1, 3,
     * 5, 7: 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5. Hand values: */
    const double s8[8] = {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625};
    const double s12[12] = {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625,
                            0.70710678118654752, 0.35355339059327376, 0.17677669529663688,
                            0.088388347648318440};
    rl_error err = {0};
    pe_encoding *e = NULL;
    pe_shape s = {.head_dim = 4, .heads = 8};
    ck_assert_int_eq(make_enc("alibi", "{}", &s, &e, &err), RL_OK);
    for (uint32_t h = 0; h < 8; h++) {
        /* i - j = 1: bias = -slope; i - j = -3 (future key): +3 slope */
        ck_assert_double_eq_tol(pe_bias_ref(e, h, 0, 0, 11, 10, NULL, NULL), -s8[h], 1e-15);
        ck_assert_double_eq_tol(pe_bias_ref(e, h, 0, 0, 10, 13, NULL, NULL), 3 * s8[h], 1e-15);
    }
    pe_encoding_destroy(e);
    s.heads = 12;
    ck_assert_int_eq(make_enc("alibi", "{\"bidirectional\": true}", &s, &e, &err), RL_OK);
    for (uint32_t h = 0; h < 12; h++) {
        ck_assert_double_eq_tol(pe_bias_ref(e, h, 0, 0, 1000, 0, NULL, NULL), -1000 * s12[h], 1e-12);
        ck_assert_double_eq_tol(pe_bias_ref(e, h, 0, 0, 0, 1000, NULL, NULL), -1000 * s12[h], 1e-12);
    }
    pe_encoding_destroy(e);
}
END_TEST

/* ---- sinusoidal ------------------------------------------------------------------------ */

START_TEST(sinusoidal_table_interleaves_sin_and_cos)
{
    /* d = 4, base 10000: w_0 = 1, w_1 = 10000^(-2/4) = 0.01.
     * p = 0: (sin 0, cos 0, sin 0, cos 0) = (0, 1, 0, 1).
     * p = 1: (sin 1, cos 1, sin 0.01, cos 0.01). Values from tables. */
    pe_shape s = {.head_dim = 4, .heads = 2};
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_int_eq(make_enc("sinusoidal", "{\"alpha\": 2}", &s, &e, &err), RL_OK);
    float x[2 * 2 * 4] = {0};
    x[1] = 0.25f; /* token 0 head 0 dim 1 */
    uint32_t pos[2] = {0, 1};
    double y[16];
    ck_assert_int_eq(pe_vec_ref(e, x, pos, 2, 2, y, &err), RL_OK);
    const double p0[4] = {0, 1, 0, 1};
    const double p1[4] = {0.8414709848078965, 0.5403023058681398, 0.009999833334166665,
                          0.9999500004166653};
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++) {
            ck_assert_double_eq_tol(y[h * 4 + k], 2 * p0[k] + (h == 0 && k == 1 ? 0.25 : 0), 1e-15);
            ck_assert_double_eq_tol(y[8 + h * 4 + k], 2 * p1[k], 1e-15);
        }
    pe_encoding_destroy(e);
}
END_TEST

/* ---- learned ---------------------------------------------------------------------------- */

START_TEST(learned_npy_errors_name_file_and_problem)
{
    tdir d;
    tdir_open(&d);
    pe_shape s = {.head_dim = 4, .heads = 1};
    pe_encoding *e = NULL;
    rl_error err = {0};
    char js[300];
    float t[12] = {0};
    double t8[12] = {0};
    uint64_t shp[2] = {3, 4}, shp_bad[2] = {3, 5}, shp1[1] = {12};

    snprintf(js, sizeof js, "{\"path\": \"%s/missing.npy\"}", d.path);
    ck_assert_int_eq(make_enc("learned", js, &s, &e, &err), RL_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.msg, "learned: path: "));
    ck_assert_ptr_nonnull(strstr(err.msg, "missing.npy: cannot open"));

    const char *p = tdir_npy(&d, "f8.npy", "<f8", 0, shp, 2, t8, sizeof t8);
    snprintf(js, sizeof js, "{\"path\": \"%s\"}", p);
    ck_assert_int_eq(make_enc("learned", js, &s, &e, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "f8.npy: dtype '<f8' is not supported"));

    p = tdir_npy(&d, "be.npy", ">f4", 0, shp, 2, t, sizeof t);
    snprintf(js, sizeof js, "{\"path\": \"%s\"}", p);
    ck_assert_int_eq(make_enc("learned", js, &s, &e, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "be.npy: dtype '>f4' is not supported"));

    p = tdir_npy(&d, "fo.npy", "<f4", 1, shp, 2, t, sizeof t);
    snprintf(js, sizeof js, "{\"path\": \"%s\"}", p);
    ck_assert_int_eq(make_enc("learned", js, &s, &e, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "fo.npy: array is in Fortran order"));

    p = tdir_npy(&d, "short.npy", "<f4", 0, shp, 2, t, sizeof t - 4);
    snprintf(js, sizeof js, "{\"path\": \"%s\"}", p);
    ck_assert_int_eq(make_enc("learned", js, &s, &e, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "short.npy: shape needs 48 data bytes but the file has 44"));

    p = tdir_npy(&d, "shape.npy", "<f4", 0, shp_bad, 2, t, 0);
    snprintf(js, sizeof js, "{\"path\": \"%s\"}", p);
    ck_assert_int_eq(make_enc("learned", js, &s, &e, &err), RL_ERR_PARSE); /* 60 bytes missing */
    float t15[15] = {0};
    p = tdir_npy(&d, "shape2.npy", "<f4", 0, shp_bad, 2, t15, sizeof t15);
    snprintf(js, sizeof js, "{\"path\": \"%s\"}", p);
    ck_assert_int_eq(make_enc("learned", js, &s, &e, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "has shape (3, 5), expected (max_positions, 4)"));

    p = tdir_npy(&d, "flat.npy", "<f4", 0, shp1, 1, t, sizeof t);
    snprintf(js, sizeof js, "{\"path\": \"%s\"}", p);
    ck_assert_int_eq(make_enc("learned", js, &s, &e, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "has shape (12), expected (max_positions, 4)"));

    p = tdir_npy(&d, "ok.npy", "<f4", 0, shp, 2, t, sizeof t);
    snprintf(js, sizeof js, "{\"path\": \"%s\", \"max_positions\": 5}", p);
    ck_assert_int_eq(make_enc("learned", js, &s, &e, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "learned: max_positions 5 does not match the 3 rows of"));

    FILE *fp = fopen(d.files[0], "wb"); /* overwrite f8.npy with garbage */
    fputs("hello, not numpy", fp);
    fclose(fp);
    snprintf(js, sizeof js, "{\"path\": \"%s\"}", d.files[0]);
    ck_assert_int_eq(make_enc("learned", js, &s, &e, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a .npy file"));
    ck_assert_ptr_null(e);
    tdir_close(&d);
}
END_TEST

START_TEST(npy_float16_is_widened_exactly)
{
    tdir d;
    tdir_open(&d);
    /* binary16 bits: 1.0 = 0x3c00, -2.0 = 0xc000, 0.5 = 0x3800, 65504 =
     * 0x7bff (largest), 2^-24 = 0x0001 (smallest subnormal), 0x0400 = 2^-14 */
    const uint16_t h[6] = {0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001, 0x0400};
    const float want[6] = {1.0f, -2.0f, 0.5f, 65504.0f, 0x1p-24f, 0x1p-14f};
    uint64_t shp[2] = {2, 3};
    const char *p = tdir_npy(&d, "h.npy", "<f2", 0, shp, 2, h, sizeof h);
    rl_npy a;
    rl_error err = {0};
    ck_assert_msg(rl_npy_load(p, &a, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(a.ndim, 2);
    ck_assert_uint_eq(a.shape[0], 2);
    ck_assert_uint_eq(a.shape[1], 3);
    for (int i = 0; i < 6; i++)
        ck_assert_float_eq(a.data[i], want[i]);
    rl_npy_free(&a);
    tdir_close(&d);
}
END_TEST

/* Table T[p][d] = 10 p + d in a file; alpha 1; x = 0.5 everywhere. */
/* A seeded table is the stream "learned/table" of the run's seed, N(0,
 * sigma^2) in row order, whenever it is first read (it is drawn then, not
 * at create: the runner creates an encoding several times to validate and
 * estimate it): row 5 read before row 0, and a second encoding read in the
 * other order, give the independent draw's values. */
START_TEST(learned_seeded_table_is_its_stream_whenever_first_read)
{
    pe_shape s = {.head_dim = 4, .heads = 1, .seed = 42};
    rl_rng rng;
    rl_rng_seed(&rng, 42, "learned/table");
    double want[8 * 4];
    for (int i = 0; i < 8 * 4; i++)
        want[i] = (double)(float)(0.5 * rl_rng_normal(&rng));
    float x[4] = {0, 0, 0, 0};
    for (int order = 0; order < 2; order++) {
        pe_encoding *e = NULL;
        rl_error err = {0};
        ck_assert_msg(make_enc("learned", "{\"max_positions\": 8, \"sigma\": 0.5}", &s, &e,
                               &err) == RL_OK, "%s", err.msg);
        uint32_t first = order ? 0 : 5, second = order ? 5 : 0;
        double y[4];
        ck_assert_int_eq(pe_vec_ref(e, x, &first, 1, 1, y, &err), RL_OK);
        for (int k = 0; k < 4; k++)
            ck_assert_double_eq(y[k], want[first * 4 + k]);
        ck_assert_int_eq(pe_vec_ref(e, x, &second, 1, 1, y, &err), RL_OK);
        for (int k = 0; k < 4; k++)
            ck_assert_double_eq(y[k], want[second * 4 + k]);
        pe_encoding_destroy(e);
    }
}
END_TEST

START_TEST(learned_positions_beyond_the_table_follow_the_policy)
{
    tdir d;
    tdir_open(&d);
    float t[3 * 4];
    for (int p = 0; p < 3; p++)
        for (int k = 0; k < 4; k++)
            t[p * 4 + k] = (float)(10 * p + k);
    uint64_t shp[2] = {3, 4};
    const char *path = tdir_npy(&d, "tab.npy", "<f4", 0, shp, 2, t, sizeof t);
    pe_shape s = {.head_dim = 4, .heads = 1};
    float x[2 * 4];
    for (int i = 0; i < 8; i++)
        x[i] = 0.5f;
    uint32_t pos[2] = {1, 7}; /* 7 is beyond the 3 rows */
    double y[8];
    const char *pol[3] = {"error", "clamp", "wrap"};
    const int row7[3] = {-1, 2, 1}; /* clamp: last row 2; wrap: 7 mod 3 = 1 */
    for (int k = 0; k < 3; k++) {
        char js[300];
        snprintf(js, sizeof js, "{\"path\": \"%s\", \"beyond\": \"%s\"}", path, pol[k]);
        pe_encoding *e = NULL;
        rl_error err = {0};
        ck_assert_msg(make_enc("learned", js, &s, &e, &err) == RL_OK, "%s", err.msg);
        ck_assert_int_eq(pe_param_int(e, "max_positions"), 3);
        rl_status st = pe_vec_ref(e, x, pos, 2, 1, y, &err);
        if (k == 0) {
            ck_assert_int_eq(st, RL_ERR_ARG);
            ck_assert_str_eq(err.msg, "learned: position 7 (token 1) is beyond the table's 3 rows "
                                      "(max_positions); set beyond=clamp or beyond=wrap to study that");
        } else {
            ck_assert_int_eq(st, RL_OK);
            for (int c = 0; c < 4; c++) {
                ck_assert_double_eq(y[c], 0.5 + 10 + c);
                ck_assert_double_eq(y[4 + c], 0.5 + 10 * row7[k] + c);
            }
        }
        pe_encoding_destroy(e);
    }
    /* beyond=error also refuses declared positions up front: max_positions
     * is a count, so the 3-row table serves 3 positions (0, 1, 2: an N-token
     * run with an N-row table) and refuses 4. */
    pe_shape s2 = {.head_dim = 4, .heads = 1, .max_positions = 3};
    char js[300];
    snprintf(js, sizeof js, "{\"path\": \"%s\"}", path);
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_msg(make_enc("learned", js, &s2, &e, &err) == RL_OK, "%s", err.msg);
    pe_encoding_destroy(e);
    s2.max_positions = 4;
    ck_assert_int_eq(make_enc("learned", js, &s2, &e, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "positions 0..3 need more than the table's 3 rows"));
    tdir_close(&d);
}
END_TEST

START_TEST(seeded_tables_come_from_the_documented_stream)
{
    /* learned table [rows][d] = float(sigma * N) drawn from rl_rng seeded
     * with (seed, "learned/table"), row-major. */
    pe_shape s = {.head_dim = 2, .heads = 1, .seed = 7};
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_int_eq(make_enc("learned", "{\"max_positions\": 3, \"sigma\": 0.5}", &s, &e, &err),
                     RL_OK);
    rl_rng rng;
    rl_rng_seed(&rng, 7, "learned/table");
    float x[2] = {0, 0};
    double y[2];
    for (uint32_t p = 0; p < 3; p++) {
        double a = (float)(0.5 * rl_rng_normal(&rng)), b = (float)(0.5 * rl_rng_normal(&rng));
        ck_assert_int_eq(pe_vec_ref(e, x, &p, 1, 1, y, &err), RL_OK);
        ck_assert_double_eq(y[0], a);
        ck_assert_double_eq(y[1], b);
    }
    pe_encoding_destroy(e);
    /* T5: [heads][num_buckets] from "t5/bias"; bucket 0 of head 1 is draw 32 */
    s.heads = 2;
    ck_assert_int_eq(make_enc("t5", "{\"sigma\": 1}", &s, &e, &err), RL_OK);
    rl_rng_seed(&rng, 7, "t5/bias");
    double v = 0;
    for (int i = 0; i <= 32; i++)
        v = (float)rl_rng_normal(&rng);
    ck_assert_double_eq(pe_bias_ref(e, 1, 0, 0, 5, 5, NULL, NULL), v);
    pe_encoding_destroy(e);
}
END_TEST

/* ---- KERPLE -------------------------------------------------------------------------- */

START_TEST(kerple_log_bias_matches_hand_values)
{
    /* -r1 log(1 + r2 |i - j|): r1 = 2, r2 = 0.5 at distance 6 is -2 ln 4;
     * head 1 (r1 = 3, r2 = 0.25) at distance 4 is -3 ln 2; symmetric in
     * i - j; 0 at distance 0. */
    pe_shape s = {.head_dim = 4, .heads = 2};
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_int_eq(make_enc("kerple", "{\"r1\": [2, 3], \"r2\": [0.5, 0.25]}", &s, &e, &err),
                     RL_OK);
    ck_assert_double_eq_tol(pe_bias_ref(e, 0, 0, 0, 10, 4, NULL, NULL), -2.7725887222397812, 1e-15);
    ck_assert_double_eq_tol(pe_bias_ref(e, 0, 0, 0, 4, 10, NULL, NULL), -2.7725887222397812, 1e-15);
    ck_assert_double_eq_tol(pe_bias_ref(e, 1, 0, 0, 104, 100, NULL, NULL), -2.0794415416798359,
                            1e-15);
    ck_assert_double_eq(pe_bias_ref(e, 1, 0, 0, 7, 7, NULL, NULL), 0.0);
    ck_assert_double_eq(pe_bias_bound(e, 1, 0, 0, 7, 7, NULL, NULL), 0.0);
    /* the bound covers at least the fp32 rounding of the result */
    double b = pe_bias_ref(e, 0, 0, 0, 1 << 20, 0, NULL, NULL);
    ck_assert(pe_bias_bound(e, 0, 0, 0, 1 << 20, 0, NULL, NULL) >= rl_ulp32(fabs(b)));
    pe_encoding_destroy(e);
    /* one number applies to every head */
    ck_assert_int_eq(make_enc("kerple", "{\"r1\": 1, \"r2\": 1}", &s, &e, &err), RL_OK);
    ck_assert_double_eq_tol(pe_bias_ref(e, 1, 0, 0, 0, 1, NULL, NULL), -0.69314718055994531, 1e-15);
    pe_encoding_destroy(e);
}
END_TEST

START_TEST(kerple_draws_from_the_documented_streams)
{
    /* r1 ~ U(0.01, 2) from "kerple/r1", r2 ~ U(0.01, 1) from "kerple/r2",
     * stored as fp32; resolved params record the values in use. */
    pe_shape s = {.head_dim = 4, .heads = 3, .seed = 5};
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_int_eq(make_enc("kerple", "{}", &s, &e, &err), RL_OK);
    rl_rng g1, g2;
    rl_rng_seed(&g1, 5, "kerple/r1");
    rl_rng_seed(&g2, 5, "kerple/r2");
    const json_t *p1 = json_object_get(pe_encoding_params(e), "r1");
    ck_assert_uint_eq(json_array_size(p1), 3);
    for (uint32_t h = 0; h < 3; h++) {
        double r1 = (float)(0.01 + 1.99 * rl_rng_uniform(&g1));
        double r2 = (float)(0.01 + 0.99 * rl_rng_uniform(&g2));
        ck_assert_double_eq(json_real_value(json_array_get(p1, h)), r1);
        ck_assert_double_eq_tol(pe_bias_ref(e, h, 0, 0, 0, 9, NULL, NULL), -r1 * log1p(9 * r2),
                                1e-15);
    }
    pe_encoding_destroy(e);
}
END_TEST

/* ---- Transformer-XL ------------------------------------------------------------------- */

START_TEST(xl_bias_keeps_terms_b_c_d)
{
    /* head_dim 2, d_r 2 (w_0 = 1: R_s = (sin s, cos s)), one head,
     * W_R = identity, v = (0.5, 0), u = (1, 1), q = (1, 2), k = (3, 4):
     * bias = [(q + v).(W_R R_s) + u.k] / sqrt(2) = [1.5 sin s + 2 cos s + 7]/sqrt 2
     * with s = pos_i - pos_j. */
    tdir d;
    tdir_open(&d);
    const float w[4] = {1, 0, 0, 1}, u[2] = {1, 1}, v[2] = {0.5f, 0};
    uint64_t sw[3] = {1, 2, 2}, su[2] = {1, 2};
    const char *pw = tdir_npy(&d, "w.npy", "<f4", 0, sw, 3, w, sizeof w);
    const char *pu = tdir_npy(&d, "u.npy", "<f4", 0, su, 2, u, sizeof u);
    const char *pv = tdir_npy(&d, "v.npy", "<f4", 0, su, 2, v, sizeof v);
    char js[600];
    snprintf(js, sizeof js, "{\"w_r_path\": \"%s\", \"u_path\": \"%s\", \"v_path\": \"%s\"}", pw,
             pu, pv);
    pe_shape s = {.head_dim = 2, .heads = 1};
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_msg(make_enc("xl", js, &s, &e, &err) == RL_OK, "%s", err.msg);
    const float q[2] = {1, 2}, k[2] = {3, 4};
    ck_assert_double_eq_tol(pe_bias_ref(e, 0, 0, 0, 5, 5, q, k), 9 / sqrt(2.0), 1e-14);
    double s1 = (1.5 * 0.8414709848078965 + 2 * 0.5403023058681398 + 7) / sqrt(2.0);
    ck_assert_double_eq_tol(pe_bias_ref(e, 0, 0, 0, 6, 5, q, k), s1, 1e-14);
    /* q = k = 0 leaves the global position term (d) only: 0.5 sin s / sqrt 2 */
    ck_assert_double_eq_tol(pe_bias_ref(e, 0, 0, 0, 6, 5, NULL, NULL),
                            0.5 * 0.8414709848078965 / sqrt(2.0), 1e-15);
    pe_encoding_destroy(e);
    tdir_close(&d);
}
END_TEST

START_TEST(xl_tables_accept_hf_layouts_and_refuse_others)
{
    /* W_R as HF r_net.weight [heads*head_dim, d_r] = [2*2, 2] is the same
     * memory as [heads][head_dim][d_r]; u of the wrong shape is refused. */
    tdir d;
    tdir_open(&d);
    float w[8] = {1, 0, 0, 1, 2, 0, 0, 2}, u[4] = {0}, bad[6] = {0};
    uint64_t sw[2] = {4, 2}, su[2] = {2, 2}, sb[2] = {2, 3};
    const char *pw = tdir_npy(&d, "w.npy", "<f4", 0, sw, 2, w, sizeof w);
    const char *pu = tdir_npy(&d, "u.npy", "<f4", 0, su, 2, u, sizeof u);
    const char *pb = tdir_npy(&d, "b.npy", "<f4", 0, sb, 2, bad, sizeof bad);
    char js[600];
    pe_shape s = {.head_dim = 2, .heads = 2};
    pe_encoding *e = NULL;
    rl_error err = {0};
    snprintf(js, sizeof js, "{\"w_r_path\": \"%s\", \"u_path\": \"%s\", \"v_path\": \"%s\"}",
             pw, pu, pu);
    ck_assert_msg(make_enc("xl", js, &s, &e, &err) == RL_OK, "%s", err.msg);
    /* u = v = 0, q = (1, 0): head 1 has W_R = 2 I, so bias at s = 0 is
     * (q . 2 R_0) / sqrt 2 = 2 * q_1 * cos 0 / sqrt 2 (R_0 = (sin 0, cos 0)) */
    const float q[2] = {0, 1}, k[2] = {5, 5};
    ck_assert_double_eq_tol(pe_bias_ref(e, 1, 0, 0, 3, 3, q, k), 2 / sqrt(2.0), 1e-15);
    ck_assert_double_eq_tol(pe_bias_ref(e, 0, 0, 0, 3, 3, q, k), 1 / sqrt(2.0), 1e-15);
    pe_encoding_destroy(e);
    snprintf(js, sizeof js, "{\"u_path\": \"%s\"}", pb);
    ck_assert_int_eq(make_enc("xl", js, &s, &e, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "xl: u_path: "));
    ck_assert_ptr_nonnull(strstr(err.msg, "has shape (2, 3), expected (2, 2)"));
    tdir_close(&d);
}
END_TEST

/* ---- xpos ---------------------------------------------------------------------------------- */

/* head_dim 4, gamma 1, scale_base 1, base 10000: zeta = ((0 + 1)/2, (2/4 + 1)/2) = (0.5, 0.75),
 * theta = (1, 10000^(-1/2) = 0.01). Position 2, centre 0, x = (1, 0, 0, 1):
 *   q' = (0.5^2 (cos 2, sin 2), 0.75^2 (-sin 0.02, cos 0.02)),
 *   k' = (0.5^-2 (cos 2, sin 2), 0.75^-2 (-sin 0.02, cos 0.02)).
 * Centre 1: the exponents are (2 - 1) = 1 for q and -1 for k. */
START_TEST(xpos_scales_q_by_zeta_m_and_k_by_zeta_minus_n)
{
    pe_shape s = {.head_dim = 4, .heads = 1};
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_int_eq(make_enc("xpos", "{\"gamma\": 1, \"scale_base\": 1, \"center\": 0}", &s, &e,
                              &err), RL_OK);
    const float x[4] = {1, 0, 0, 1};
    uint32_t pos[1] = {2};
    double q[4], k[4];
    ck_assert_int_eq(pe_vec_ref_role(e, PE_ROLE_Q, x, pos, 1, 1, q, &err), RL_OK);
    ck_assert_int_eq(pe_vec_ref_role(e, PE_ROLE_K, x, pos, 1, 1, k, &err), RL_OK);
    const double c2 = -0.4161468365471424, s2 = 0.9092974268256817; /* cos 2, sin 2 */
    const double c02 = 0.9998000066665778, s02 = 0.019998666693333080; /* cos/sin 0.02 */
    const double wq[4] = {0.25 * c2, 0.25 * s2, -0.5625 * s02, 0.5625 * c02};
    const double wk[4] = {4 * c2, 4 * s2, -s02 / 0.5625, c02 / 0.5625};
    for (int i = 0; i < 4; i++) {
        ck_assert_double_eq_tol(q[i], wq[i], 1e-15);
        ck_assert_double_eq_tol(k[i], wk[i], 1e-14);
    }
    pe_encoding_destroy(e);
    ck_assert_int_eq(make_enc("xpos", "{\"gamma\": 1, \"scale_base\": 1, \"center\": 1}", &s, &e,
                              &err), RL_OK);
    ck_assert_int_eq(pe_vec_ref_role(e, PE_ROLE_Q, x, pos, 1, 1, q, &err), RL_OK);
    ck_assert_int_eq(pe_vec_ref_role(e, PE_ROLE_K, x, pos, 1, 1, k, &err), RL_OK);
    ck_assert_double_eq_tol(q[0], 0.5 * c2, 1e-15);
    ck_assert_double_eq_tol(k[0], 2 * c2, 1e-15);
    ck_assert_double_eq_tol(q[3], 0.75 * c02, 1e-15);
    ck_assert_double_eq_tol(k[3], c02 / 0.75, 1e-15);
    /* pe_vec_ref is the query transform; rope's keys are its queries */
    double y[4];
    ck_assert_int_eq(pe_vec_ref(e, x, pos, 1, 1, y, &err), RL_OK);
    ck_assert_double_eq(y[0], q[0]);
    ck_assert(pe_vec_qk_differ(e));
    pe_encoding_destroy(e);
}
END_TEST

/* <q'_m, k'_n> = sum_j zeta_j^((m-n)/scale_base) <R((m-n) theta_j) q_j, k_j>: it depends on
 * m - n only, whatever the centre. One pair (head_dim 2, gamma 0.4: zeta = 0.4/1.4 = 2/7,
 * theta 1), q = k = (1, 0), m = 5, n = 3, scale_base 2: (2/7)^(2/2) cos(2) for centres 0, 4
 * and 40. */
START_TEST(xpos_logit_depends_on_distance_not_on_the_centre)
{
    pe_shape s = {.head_dim = 2, .heads = 1};
    const char *cfg[] = {"{\"scale_base\": 2, \"center\": 0}", "{\"scale_base\": 2, \"center\": 4}",
                         "{\"scale_base\": 2, \"center\": 40}"};
    for (int c = 0; c < 3; c++) {
        pe_encoding *e = NULL;
        rl_error err = {0};
        ck_assert_int_eq(make_enc("xpos", cfg[c], &s, &e, &err), RL_OK);
        const float x[2] = {1, 0};
        uint32_t m = 5, n = 3;
        double q[2], k[2];
        ck_assert_int_eq(pe_vec_ref_role(e, PE_ROLE_Q, x, &m, 1, 1, q, &err), RL_OK);
        ck_assert_int_eq(pe_vec_ref_role(e, PE_ROLE_K, x, &n, 1, 1, k, &err), RL_OK);
        ck_assert_double_eq_tol(q[0] * k[0] + q[1] * k[1], 2.0 / 7.0 * -0.4161468365471424,
                                1e-15);
        pe_encoding_destroy(e);
    }
}
END_TEST

/* The centre defaults to torchscale's -min_pos = ceil(length/2) (Python: length 7:
 * min_pos = -(7)//2 = -4, c = 4; length 8: c = 4); positions farther than 60 * scale_base /
 * |log2 zeta_0| from it are refused: gamma 0.4, scale_base 512: 60 * 512 / 1.8073549 =
 * 16997.2, so |p - c| = 16997 passes and 16998 does not. */
START_TEST(xpos_centre_defaults_to_torchscale_and_far_positions_are_refused)
{
    pe_encoding *e = NULL;
    rl_error err = {0};
    pe_shape s7 = {.head_dim = 8, .max_positions = 7}, s8 = {.head_dim = 8, .max_positions = 8};
    ck_assert_int_eq(make_enc("xpos", "{}", &s7, &e, &err), RL_OK);
    ck_assert_int_eq(json_integer_value(json_object_get(pe_encoding_params(e), "center")), 4);
    pe_encoding_destroy(e);
    ck_assert_int_eq(make_enc("xpos", "{}", &s8, &e, &err), RL_OK);
    ck_assert_int_eq(json_integer_value(json_object_get(pe_encoding_params(e), "center")), 4);
    pe_encoding_destroy(e);
    pe_shape s = {.head_dim = 8};
    ck_assert_int_eq(make_enc("xpos", "{\"center\": 100}", &s, &e, &err), RL_OK);
    uint32_t ok[2] = {100 + 16997, 0}, bad = 100 + 16998;
    ck_assert_int_eq(pe_vec_check(e, ok, 2, &err), RL_OK);
    ck_assert_int_eq(pe_vec_check(e, &bad, 1, &err), RL_ERR_LIMIT);
    ck_assert_msg(strstr(err.msg, "xpos: position 17098 is 16998 from the centre 100") &&
                      strstr(err.msg, "|position - center| <= 16997"),
                  "%s", err.msg);
    pe_encoding_destroy(e);
    ck_assert_int_eq(make_enc("xpos", "{}", &(pe_shape){.head_dim = 5}, &e, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "xpos: head_dim 5 must be even"));
    ck_assert_int_eq(make_enc("xpos", "{\"center\": 1.5}", &s, &e, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "xpos: center must be an integer"));
}
END_TEST

START_TEST(bias_ref_callback_finds_rows_with_gqa)
{
    /* heads 4, kv_heads 2: head 3 of token 1 reads q row (1*4+3), k row of
     * kv head 3/2 = 1 of token 2, i.e. (2*2+1). Compared with pe_bias_ref
     * called on those rows directly. */
    pe_shape s = {.head_dim = 4, .heads = 4, .kv_heads = 2};
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_int_eq(make_enc("xl", "{\"sigma\": 0.5}", &s, &e, &err), RL_OK);
    float q[3 * 4 * 4], k[3 * 2 * 4];
    for (int i = 0; i < 48; i++)
        q[i] = (float)(i % 7) - 3;
    for (int i = 0; i < 24; i++)
        k[i] = (float)(i % 5) - 2;
    pe_bias_ref_ctx c = {.e = e, .q = q, .k = k};
    double want = pe_bias_ref(e, 3, 1, 2, 10, 4, q + (1 * 4 + 3) * 4, k + (2 * 2 + 1) * 4);
    ck_assert_double_eq(pe_bias_ref_cb(&c, 3, 1, 2, 10, 4), want);
    ck_assert_double_ne(pe_bias_ref_cb(&c, 3, 1, 1, 10, 4), want); /* other key row */
    pe_encoding_destroy(e);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pe_ref");
    /* the registry and parameter resolution */
    TCase *tc_params = tcase_create("params");
    tcase_set_timeout(tc_params, 60);
    tcase_add_test(tc_params, registry_lists_every_encoding_once);
    tcase_add_test(tc_params, resolved_params_fill_every_default);
    tcase_add_loop_test(tc_params, every_parameter_error_names_the_key, 0,
                        (int)RL_ARRAY_LEN(bad_params));
    tcase_add_test(tc_params, rope_registry_keys_are_ropes_own_list);
    tcase_add_test(tc_params, rope_param_types_are_what_rope_accepts);
    tcase_add_test(tc_params, rope_resolved_params_record_what_was_used);
    tcase_add_test(tc_params, set_parses_json_else_string);
    suite_add_tcase(s, tc_params);
    TCase *tc_xpos = tcase_create("xpos");
    tcase_set_timeout(tc_xpos, 60);
    tcase_add_test(tc_xpos, xpos_scales_q_by_zeta_m_and_k_by_zeta_minus_n);
    tcase_add_test(tc_xpos, xpos_logit_depends_on_distance_not_on_the_centre);
    tcase_add_test(tc_xpos, xpos_centre_defaults_to_torchscale_and_far_positions_are_refused);
    suite_add_tcase(s, tc_xpos);
    TCase *tc_t5 = tcase_create("t5");
    tcase_set_timeout(tc_t5, 60);
    tcase_add_test(tc_t5, t5_buckets_match_hand_computed_tables);
    tcase_add_test(tc_t5, t5_bias_reads_hf_table_layout);
    suite_add_tcase(s, tc_t5);
    TCase *tc_alibi = tcase_create("alibi");
    tcase_set_timeout(tc_alibi, 60);
    tcase_add_test(tc_alibi, alibi_slopes_follow_the_paper_for_8_and_12_heads);
    suite_add_tcase(s, tc_alibi);
    TCase *tc_sinusoidal = tcase_create("sinusoidal");
    tcase_set_timeout(tc_sinusoidal, 60);
    tcase_add_test(tc_sinusoidal, sinusoidal_table_interleaves_sin_and_cos);
    suite_add_tcase(s, tc_sinusoidal);
    /* learned tables: .npy files, positions past the table, seeded draws */
    TCase *tc_learned = tcase_create("learned");
    tcase_set_timeout(tc_learned, 60);
    tcase_add_test(tc_learned, learned_npy_errors_name_file_and_problem);
    tcase_add_test(tc_learned, npy_float16_is_widened_exactly);
    tcase_add_test(tc_learned, learned_positions_beyond_the_table_follow_the_policy);
    tcase_add_test(tc_learned, learned_seeded_table_is_its_stream_whenever_first_read);
    tcase_add_test(tc_learned, seeded_tables_come_from_the_documented_stream);
    suite_add_tcase(s, tc_learned);
    /* Transformer-XL: its bias terms, its tables, the bias reference callback */
    TCase *tc_xl = tcase_create("xl");
    tcase_set_timeout(tc_xl, 60);
    tcase_add_test(tc_xl, xl_bias_keeps_terms_b_c_d);
    tcase_add_test(tc_xl, xl_tables_accept_hf_layouts_and_refuse_others);
    tcase_add_test(tc_xl, bias_ref_callback_finds_rows_with_gqa);
    suite_add_tcase(s, tc_xl);
    TCase *tc_kerple = tcase_create("kerple");
    tcase_set_timeout(tc_kerple, 60);
    tcase_add_test(tc_kerple, kerple_log_bias_matches_hand_values);
    tcase_add_test(tc_kerple, kerple_draws_from_the_documented_streams);
    suite_add_tcase(s, tc_kerple);
    return rl_test_run(s);
}
