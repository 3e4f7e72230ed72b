/* The config.json import (pe/hf_model.h): every family as its own
 * modeling code computes it. Configs in tests/data are transcribed from the
 * models' public repositories (tests/data/README.md names each); expected
 * values are derived by hand from each family's transformers
 * configuration_*.py / modeling_*.py, never from ropelab. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/rl_util.h"
#include "pe/hf_model.h"
#include "pe/rope.h"
#include "rl_test.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#define REL(a, b, tol) ck_assert_msg(fabs((a) - (b)) <= (tol) * fabs(b), "%.17g vs %.17g", (double)(a), (double)(b))

static const char *data_path(const char *name, char *buf, size_t cap)
{
    const char *dir = getenv("RL_TEST_DATA_DIR"); /* set by tests/meson.build */
    snprintf(buf, cap, "%s/%s", dir ? dir : "tests/data", name);
    return buf;
}

static void load(const char *file, hfm_model *m)
{
    char p[512];
    rl_error err = {0};
    ck_assert_msg(hfm_load(data_path(file, p, sizeof p), m, &err) == RL_OK, "%s: %s", file, err.msg);
}

/* The encoding of layer type lt (NULL: default) must be RoPE; its rotation. */
static rope_freqs *freqs(const hfm_model *m, const char *lt)
{
    const hfm_layer_type *t;
    rl_error err = {0};
    ck_assert_msg(hfm_select(m, lt, &t, NULL, &err) == RL_OK, "%s", err.msg);
    ck_assert_str_eq(json_string_value(json_object_get(t->encoding, "type")), "rope");
    rope_desc d;
    ck_assert_msg(hfm_rope_desc(m, t, &d, &err) == RL_OK, "%s", err.msg);
    rope_freqs *f = malloc(sizeof *f);
    ck_assert_msg(rope_freqs_compute(&d, f, &err) == RL_OK, "%s", err.msg);
    return f;
}

static const char *enc_type(const hfm_model *m, const char *lt)
{
    const hfm_layer_type *t;
    rl_error err = {0};
    ck_assert_msg(hfm_select(m, lt, &t, NULL, &err) == RL_OK, "%s", err.msg);
    return json_string_value(json_object_get(t->encoding, "type"));
}

static void refused(const hfm_model *m, const char *lt, const char *needle)
{
    const hfm_layer_type *t;
    rl_error err = {0};
    ck_assert_int_eq(hfm_select(m, lt, &t, NULL, &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, needle), "'%s' lacks '%s'", err.msg, needle);
}

/* base^(-2j/dim): the unscaled RoPE frequency of pair j (RoFormer). */
static double th(double base, int j, int dim) { return pow(base, -2.0 * j / dim); }

START_TEST(llama_family_shapes_and_bases)
{
    hfm_model m;
    /* Llama 2: no rope_theta -> LlamaConfig default 10000; 4096/32 = 128. */
    load("llama2_7b.json", &m);
    ck_assert_uint_eq(m.head_dim, 128);
    ck_assert_uint_eq(m.kv_heads, 32);
    ck_assert_uint_eq(m.train_len, 4096);
    rope_freqs *f = freqs(&m, NULL);
    REL(f->inv_freq[63], th(1e4, 63, 128), 1e-15);
    ck_assert_int_eq(f->layout, RL_ROPE_LAYOUT_HALF);
    REL(m.logit_scale, 1 / sqrt(128.0), 1e-15);
    free(f);
    hfm_free(&m);
    /* Llama 3.2 1B: head_dim 64 given, llama3 factor 32 on 8192; train 8192. */
    load("llama32_1b.json", &m);
    ck_assert_uint_eq(m.head_dim, 64);
    ck_assert_uint_eq(m.kv_heads, 8);
    ck_assert_uint_eq(m.train_len, 8192);
    f = freqs(&m, NULL);
    /* wavelength 2pi/theta_31 = 2pi*500000^(62/64) > 8192 -> divided by 32 */
    REL(f->inv_freq[31], th(5e5, 31, 64) / 32, 1e-14);
    REL(f->inv_freq[0], 1.0, 1e-15);
    free(f);
    hfm_free(&m);
    /* CodeLlama: rope_theta 1e6, 16384 positions. */
    load("codellama_7b.json", &m);
    f = freqs(&m, NULL);
    REL(f->inv_freq[63], th(1e6, 63, 128), 1e-15);
    ck_assert_uint_eq(m.train_len, 16384);
    free(f);
    hfm_free(&m);
    /* Mistral 7B v0.1: window 4096 on every layer, GQA 32/8. */
    load("mistral_7b_v01.json", &m);
    ck_assert_uint_eq(m.n_types, 1);
    ck_assert_str_eq(m.types[0].name, "sliding_attention");
    ck_assert_uint_eq(m.types[0].window, 4096);
    ck_assert_uint_eq(m.kv_heads, 8);
    hfm_free(&m);
    /* Mixtral: sliding_window null -> full attention, theta 1e6. */
    load("mixtral_8x7b.json", &m);
    ck_assert_str_eq(m.types[0].name, "full_attention");
    ck_assert_uint_eq(m.types[0].window, 0);
    hfm_free(&m);
    /* Qwen3: use_sliding_window false -> no window; head_dim 128 given. */
    load("qwen3_8b.json", &m);
    ck_assert_uint_eq(m.n_types, 1);
    ck_assert_uint_eq(m.types[0].window, 0);
    f = freqs(&m, NULL);
    REL(f->inv_freq[63], th(1e6, 63, 128), 1e-15);
    free(f);
    hfm_free(&m);
}
END_TEST

START_TEST(llama4_rope_layers_are_interleaved_and_nope_layers_carry_temperature)
{
    hfm_model m;
    load("llama4_scout.json", &m);
    /* no_rope_layers absent: layer i uses RoPE iff (i + 1) % 4 != 0 -> 36 + 12 */
    ck_assert_uint_eq(m.n_layers, 48);
    ck_assert_uint_eq(m.head_dim, 128);
    ck_assert_uint_eq(m.kv_heads, 8);
    const hfm_layer_type *t;
    rl_error err = {0};
    ck_assert_int_eq(hfm_select(&m, "chunked_attention", &t, NULL, &err), RL_OK);
    ck_assert_uint_eq(t->count, 36);
    ck_assert_uint_eq(t->chunk, 8192); /* attention_chunk_size: a chunk, not a window */
    ck_assert_uint_eq(t->window, 0);
    ck_assert_int_eq(t->temp, 0);
    rope_freqs *f = freqs(&m, "chunked_attention");
    ck_assert_int_eq(f->layout, RL_ROPE_LAYOUT_INTERLEAVED); /* view_as_complex pairs */
    /* llama3 with low = high = 1: wavelength > 8192 divided by 16, else kept */
    REL(f->inv_freq[63], th(5e5, 63, 128) / 16, 1e-14);
    REL(f->inv_freq[1], th(5e5, 1, 128), 1e-15);
    free(f);
    /* the NoPE layers (the default) import with HF's query temperature
     * (attn_temperature_tuning 4 is true; attn_scale 0.1, floor_scale 8192) */
    int dflt = 0;
    ck_assert_msg(hfm_select(&m, NULL, &t, &dflt, &err) == RL_OK, "%s", err.msg);
    ck_assert_int_eq(dflt, 1);
    ck_assert_str_eq(t->name, "full_attention");
    ck_assert_str_eq(json_string_value(json_object_get(t->encoding, "type")), "nope");
    ck_assert_uint_eq(t->count, 12);
    ck_assert_int_eq(t->temp, 1);
    REL(t->temp_scale, 0.1, 1e-15);
    REL(t->temp_floor, 8192.0, 1e-15);
    ck_assert_uint_eq(t->chunk, 0); /* full causal: chunked only for RoPE layers */
    hfm_free(&m);
}
END_TEST

START_TEST(qwen_yarn_and_mrope)
{
    hfm_model m;
    /* Qwen2.5 yarn factor 4: attention factor 0.1 ln 4 + 1 */
    load("qwen25_yarn.json", &m);
    rope_freqs *f = freqs(&m, NULL);
    REL(f->attention_factor, 0.1 * log(4.0) + 1, 1e-15);
    free(f);
    hfm_free(&m);
    /* Qwen2-VL-7B-Instruct: rope_scaling {type: mrope, mrope_section [16,
     * 24, 24]} is default RoPE with contiguous sections (HF Qwen2VLConfig
     * turns type mrope into default), base 1e6, 64 pairs. */
    load("qwen2_vl_7b.json", &m);
    f = freqs(&m, NULL);
    ck_assert_int_eq(f->rope_type, ROPE_TYPE_DEFAULT);
    ck_assert_int_eq(f->mrope, ROPE_MROPE_SECTIONS);
    ck_assert_uint_eq(f->mrope_section[0], 16);
    ck_assert_uint_eq(f->mrope_section[1], 24);
    ck_assert_uint_eq(f->mrope_section[2], 24);
    ck_assert_uint_eq(f->n_pairs, 64);
    REL(f->base, 1e6, 0);
    /* pair 15 is t's last, 16 h's first, 40 w's first */
    ck_assert_uint_eq(rope_mrope_stream(f, 15), 0);
    ck_assert_uint_eq(rope_mrope_stream(f, 16), 1);
    ck_assert_uint_eq(rope_mrope_stream(f, 39), 1);
    ck_assert_uint_eq(rope_mrope_stream(f, 40), 2);
    free(f);
    hfm_free(&m);
    /* Qwen3-VL-8B-Instruct: text_config.rope_scaling {mrope_interleaved:
     * true, mrope_section [24, 20, 20], rope_type default}, base 5e6. */
    load("qwen3_vl_8b.json", &m);
    ck_assert_uint_eq(m.head_dim, 128);
    ck_assert_uint_eq(m.kv_heads, 8);
    f = freqs(&m, NULL);
    ck_assert_int_eq(f->mrope, ROPE_MROPE_INTERLEAVED);
    ck_assert_uint_eq(f->mrope_section[0], 24);
    ck_assert_uint_eq(f->mrope_section[1], 20);
    ck_assert_uint_eq(f->mrope_section[2], 20);
    REL(f->base, 5e6, 0);
    ck_assert_ptr_null(json_object_get(m.attrs, "mrope_interleaved"));
    free(f);
    hfm_free(&m);
    /* type mrope without the sections: refused by name, not planned as plain RoPE */
    load("bad_mrope_no_section.json", &m);
    refused(&m, NULL, "rope_scaling.type mrope: multimodal RoPE without mrope_section");
    hfm_free(&m);
}
END_TEST

START_TEST(phi3_su_is_longrope_with_top_level_original)
{
    hfm_model m;
    load("phi3_su.json", &m);
    ck_assert_uint_eq(m.head_dim, 96);
    ck_assert_uint_eq(m.train_len, 4096);
    rope_freqs *f = freqs(&m, NULL);
    ck_assert_int_eq(f->rope_type, ROPE_TYPE_LONGROPE);
    /* factor = 131072 / 4096 = 32; sqrt(1 + ln 32 / ln 4096) = sqrt(17/12) */
    REL(f->attention_factor, sqrt(17.0 / 12.0), 1e-15);
    REL(f->inv_freq[47], th(1e4, 47, 96) / 1.47, 1e-14); /* short factors at seq 0 */
    free(f);
    hfm_free(&m);
}
END_TEST

START_TEST(phi35_longrope_real_factor_lists)
{
    /* microsoft/Phi-3.5-mini-instruct's lists (tests/data/README.md). HF's
     * longrope: inv_freq_j = 1 / (factor_j * base^(2j/d)), the short list while
     * the sequence is <= original_max_position_embeddings (4096), the long one
     * beyond; expected factors copied from the config's lists by hand. */
    hfm_model m;
    load("phi3_longrope.json", &m);
    ck_assert_uint_eq(m.head_dim, 96);
    const hfm_layer_type *t;
    rl_error err = {0};
    ck_assert_msg(hfm_select(&m, NULL, &t, NULL, &err) == RL_OK, "%s", err.msg);
    static const struct { uint32_t seq; uint32_t j; double factor; } c[] = {
        {4096, 0, 1.0}, {4096, 7, 1.0499999523162842}, {4096, 17, 1.679999828338623},
        {4096, 47, 2.8399994373321533}, {4097, 0, 1.0800000429153442},
        {4097, 7, 2.620000123977661}, {4097, 17, 28.57000160217285},
        {4097, 47, 64.83999633789062},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        rope_desc d;
        ck_assert_msg(hfm_rope_desc(&m, t, &d, &err) == RL_OK, "%s", err.msg);
        d.seq_len = c[i].seq;
        rope_freqs f;
        ck_assert_msg(rope_freqs_compute(&d, &f, &err) == RL_OK, "%s", err.msg);
        ck_assert_int_eq(f.rope_type, ROPE_TYPE_LONGROPE);
        REL(f.inv_freq[c[i].j], pow(1e4, -2.0 * c[i].j / 96) / c[i].factor, 1e-14);
        REL(f.attention_factor, sqrt(17.0 / 12.0), 1e-15); /* 131072 / 4096 = 32 */
    }
    hfm_free(&m);
}
END_TEST

START_TEST(gemma_layer_patterns_local_base_and_query_scalar)
{
    hfm_model m;
    load("gemma3_4b.json", &m);
    /* text_config; 34 layers, sliding unless (i + 1) % 6 == 0: 5 full, 29 sliding */
    ck_assert_uint_eq(m.n_layers, 34);
    ck_assert_uint_eq(m.head_dim, 256);
    REL(m.logit_scale, 1 / 16.0, 1e-15); /* query_pre_attn_scalar 256 */
    int defaulted = 0;
    const hfm_layer_type *t;
    rl_error err = {0};
    ck_assert_int_eq(hfm_select(&m, NULL, &t, &defaulted, &err), RL_OK);
    ck_assert_str_eq(t->name, "full_attention");
    ck_assert_int_eq(defaulted, 1);
    ck_assert_uint_eq(t->count, 5);
    rope_freqs *f = freqs(&m, NULL);
    REL(f->inv_freq[127], th(1e6, 127, 256) / 8, 1e-14); /* linear factor 8 */
    free(f);
    ck_assert_int_eq(hfm_select(&m, "sliding_attention", &t, NULL, &err), RL_OK);
    ck_assert_uint_eq(t->count, 29);
    ck_assert_uint_eq(t->window, 1024);
    f = freqs(&m, "sliding_attention");
    REL(f->inv_freq[127], th(1e4, 127, 256), 1e-14); /* rope_local_base_freq, unscaled */
    free(f);
    ck_assert_str_eq(json_string_value(json_array_get(m.layers, 5)), "full_attention");
    ck_assert_str_eq(json_string_value(json_array_get(m.layers, 4)), "sliding_attention");
    refused(&m, "chunked_attention", "no layer type 'chunked_attention'");
    hfm_free(&m);
    /* Gemma 2: even layers slide; soft cap 50. */
    load("gemma2_9b.json", &m);
    ck_assert_str_eq(json_string_value(json_array_get(m.layers, 0)), "sliding_attention");
    ck_assert_str_eq(json_string_value(json_array_get(m.layers, 1)), "full_attention");
    REL(m.softcap, 50.0, 0);
    REL(m.logit_scale, 1 / 16.0, 1e-15);
    hfm_free(&m);
    /* transformers 5: one rope_parameters dict per layer type. */
    load("per_layer_rope_parameters.json", &m);
    f = freqs(&m, "full_attention");
    REL(f->inv_freq[1], th(1e6, 1, 256) / 8, 1e-14);
    free(f);
    f = freqs(&m, "sliding_attention");
    REL(f->inv_freq[1], th(1e4, 1, 256), 1e-14);
    free(f);
    hfm_free(&m);
}
END_TEST

START_TEST(deepseek_mla_rotates_the_rope_part_interleaved_with_softmax_correction)
{
    hfm_model m;
    load("deepseek_v3.json", &m);
    /* qk_head_dim = qk_nope 128 + qk_rope 64; RoPE on 64, interleaved */
    ck_assert_uint_eq(m.head_dim, 192);
    ck_assert_uint_eq(m.v_head_dim, 128);
    ck_assert_uint_eq(m.train_len, 4096);
    rope_freqs *f = freqs(&m, NULL);
    ck_assert_uint_eq(f->rotary_dim, 64);
    ck_assert_uint_eq(f->n_pairs, 32);
    ck_assert_int_eq(f->layout, RL_ROPE_LAYOUT_INTERLEAVED);
    /* query_states = cat((q_pass, q_rot), dim=-1) (modeling_deepseek_v3.py
     * DeepseekV3Attention.forward): the rotated 64 are the head's last */
    ck_assert_int_eq(f->rotary_part, ROPE_PART_LAST);
    /* yarn: mscale = mscale_all_dim = 1 -> attention factor 1 */
    REL(f->attention_factor, 1.0, 1e-15);
    /* correction range: floor(64 ln(4096/(32*2pi)) / (2 ln 1e4)) = 10,
     * ceil(64 ln(4096/(2pi)) / (2 ln 1e4)) = 23: pair 31 fully interpolated */
    REL(f->inv_freq[31], th(1e4, 31, 64) / 40, 1e-14);
    REL(f->inv_freq[5], th(1e4, 5, 64), 1e-14);
    free(f);
    /* softmax_scale = 192^-0.5 * (0.1 * 1 * ln 40 + 1)^2 */
    double ms = 0.1 * log(40.0) + 1;
    REL(m.logit_scale, ms * ms / sqrt(192.0), 1e-14);
    hfm_free(&m);
    load("deepseek_v2.json", &m);
    ms = 0.1 * 0.707 * log(40.0) + 1;
    REL(m.logit_scale, ms * ms / sqrt(192.0), 1e-14);
    f = freqs(&m, NULL);
    REL(f->attention_factor, 1.0, 1e-15); /* mscale / mscale_all_dim equal */
    free(f);
    hfm_free(&m);
}
END_TEST

START_TEST(partial_rotary_families)
{
    hfm_model m;
    /* Pythia-160m: 768/12 = 64, rotary_pct 0.25 -> 16 dims, base rotary_emb_base */
    load("pythia_160m.json", &m);
    rope_freqs *f = freqs(&m, NULL);
    ck_assert_uint_eq(f->rotary_dim, 16);
    ck_assert_int_eq(f->layout, RL_ROPE_LAYOUT_HALF);
    ck_assert_int_eq(f->rotary_part, ROPE_PART_FIRST); /* HF: cat(rotated, pass) */
    REL(f->inv_freq[7], th(1e4, 7, 16), 1e-15);
    free(f);
    hfm_free(&m);
    /* GPT-J: n_embd 4096 / n_head 16 = 256, rotary_dim 64, rotate_every_two */
    load("gptj_6b.json", &m);
    ck_assert_uint_eq(m.head_dim, 256);
    ck_assert_uint_eq(m.train_len, 2048);
    f = freqs(&m, NULL);
    ck_assert_uint_eq(f->rotary_dim, 64);
    ck_assert_int_eq(f->layout, RL_ROPE_LAYOUT_INTERLEAVED);
    REL(f->inv_freq[31], th(1e4, 31, 64), 1e-15);
    free(f);
    hfm_free(&m);
    /* Phi-2: 2560/32 = 80, partial 0.4 -> 32; StableLM 0.25 -> 20 */
    load("phi2.json", &m);
    f = freqs(&m, NULL);
    ck_assert_uint_eq(f->rotary_dim, 32);
    free(f);
    hfm_free(&m);
    load("stablelm_3b.json", &m);
    f = freqs(&m, NULL);
    ck_assert_uint_eq(f->rotary_dim, 20);
    REL(f->inv_freq[9], th(1e4, 9, 20), 1e-15);
    free(f);
    hfm_free(&m);
}
END_TEST

START_TEST(falcon_bloom_mpt_gpt2_t5_gpt_oss)
{
    hfm_model m;
    /* Falcon-7B: 4544/71 = 64, multi_query -> 1 kv head, RoPE 10000, 2048 default */
    load("falcon_7b.json", &m);
    ck_assert_uint_eq(m.head_dim, 64);
    ck_assert_uint_eq(m.kv_heads, 1);
    ck_assert_uint_eq(m.train_len, 2048);
    rope_freqs *f = freqs(&m, NULL);
    REL(f->inv_freq[31], th(1e4, 31, 64), 1e-15);
    free(f);
    hfm_free(&m);
    load("bloom_560m.json", &m);
    ck_assert_str_eq(enc_type(&m, NULL), "alibi");
    ck_assert_uint_eq(m.head_dim, 64);
    hfm_free(&m);
    load("mpt_7b.json", &m);
    ck_assert_str_eq(enc_type(&m, NULL), "alibi");
    ck_assert_uint_eq(m.train_len, 2048);
    hfm_free(&m);
    load("gpt2.json", &m);
    ck_assert_uint_eq(m.train_len, 1024);
    refused(&m, NULL, "wpe");
    hfm_free(&m);
    /* T5: no 1/sqrt(d) scaling; table is weights */
    load("t5_small.json", &m);
    REL(m.logit_scale, 1.0, 0);
    ck_assert_uint_eq(m.head_dim, 64);
    ck_assert_int_eq(json_integer_value(json_object_get(m.types[0].encoding, "num_buckets")), 32);
    ck_assert_int_eq(json_integer_value(json_object_get(m.types[0].encoding, "max_distance")), 128);
    refused(&m, NULL, "relative bias table");
    hfm_free(&m);
    /* gpt-oss: yarn factor 32 without truncation; sinks captured */
    load("gpt_oss_20b.json", &m);
    f = freqs(&m, NULL);
    REL(f->attention_factor, 0.1 * log(32.0) + 1, 1e-15);
    /* truncate false: lo = 64 ln(4096/(64 pi)) / (2 ln 150000) unrounded */
    double lo = 64 * log(4096 / (32 * 2 * M_PI)) / (2 * log(150000.0));
    double hi = 64 * log(4096 / (2 * M_PI)) / (2 * log(150000.0));
    double ramp = (12 - lo) / (hi - lo), t = th(150000, 12, 64);
    REL(f->inv_freq[12], t / 32 * ramp + t * (1 - ramp), 1e-13);
    free(f);
    ck_assert_ptr_nonnull(json_object_get(m.attrs, "attention_sinks"));
    ck_assert_uint_eq(m.types[0].window, 128);
    hfm_free(&m);
}
END_TEST

START_TEST(unrepresentable_keys_are_refused_naming_key_and_file)
{
    char dir[] = "/tmp/rl_hfm_XXXXXX", path[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/config.json", dir);
    const struct { const char *json, *msg; } bad[] = {
        {"{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 1, "
         "\"rotary_pct\": 0.5}", "rotary_pct is not read for model_type 'llama'"},
        {"{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 1, "
         "\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2, \"extra\": 1}}",
         "rope_scaling.extra is not a RoPE key ropelab represents"},
        {"{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 1, "
         "\"rope_theta\": 0}", "rope_theta: rope_theta 0 must be > 1"},
        {"{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 1, "
         "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 2, \"beta_fast\": 0, "
         "\"original_max_position_embeddings\": 8}}", "beta_fast 0 must be > 0"},
        {"{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 1, "
         "\"partial_rotary_factor\": 0}", "partial_rotary_factor must be in (0, 1]"},
        {"{\"model_type\": \"mamba\", \"hidden_size\": 64}", "model_type 'mamba' is not a family"},
        {"{\"model_type\": \"llama4_text\", \"hidden_size\": 64, \"num_attention_heads\": 1, "
         "\"num_hidden_layers\": 2, \"no_rope_layers\": [1, 0], \"layer_types\": [\"full_attention\", "
         "\"full_attention\"]}", "layer_types disagrees with no_rope_layers"},
        /* the temperature the NoPE layers hand the engine stays in its limits */
        {"{\"model_type\": \"llama4_text\", \"hidden_size\": 64, \"num_attention_heads\": 1, "
         "\"num_hidden_layers\": 4, \"floor_scale\": 0}",
         "floor_scale must be in [1, 1e9] (the engine's attn_temp_floor)"},
        {"{\"model_type\": \"llama4_text\", \"hidden_size\": 64, \"num_attention_heads\": 1, "
         "\"num_hidden_layers\": 4, \"attn_scale\": -1}",
         "attn_scale must be in [0, 1000] (the engine's attn_temp_scale)"},
        {"{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 1, "
         "\"rope_parameters\": {\"rope_type\": \"default\"}, \"rope_scaling\": {\"rope_type\": "
         "\"linear\", \"factor\": 2}}", "are both given and differ"},
        /* ropelab's own semantics keys are not config.json keys */
        {"{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 1, "
         "\"rope_scaling\": {\"rope_type\": \"dynamic\", \"factor\": 2, \"dynamic_mode\": "
         "\"cache_consistent\"}}", "rope_scaling.dynamic_mode is not a RoPE key ropelab represents"},
    };
    for (size_t i = 0; i < RL_ARRAY_LEN(bad); i++) {
        FILE *fp = fopen(path, "w");
        ck_assert_ptr_nonnull(fp);
        fputs(bad[i].json, fp);
        fclose(fp);
        hfm_model m;
        rl_error err = {0};
        ck_assert_int_eq(hfm_load(path, &m, &err), RL_ERR_ARG);
        ck_assert_msg(strstr(err.msg, bad[i].msg) && strstr(err.msg, "config.json"),
                      "'%s' lacks '%s'", err.msg, bad[i].msg);
        hfm_free(&m);
    }
    /* Falcon with alibi: true is ALiBi; new_decoder_architecture reads num_kv_heads;
     * Llama 4 with an explicit no_rope_layers list. */
    const struct { const char *json, *type; uint32_t kv, nope; } good[] = {
        {"{\"model_type\": \"falcon\", \"hidden_size\": 512, \"num_attention_heads\": 8, "
         "\"alibi\": true, \"multi_query\": false}", "alibi", 8, 0},
        {"{\"model_type\": \"falcon\", \"hidden_size\": 512, \"num_attention_heads\": 8, "
         "\"new_decoder_architecture\": true, \"num_kv_heads\": 2}", "rope", 2, 0},
        {"{\"model_type\": \"llama4_text\", \"hidden_size\": 512, \"num_attention_heads\": 8, "
         "\"num_hidden_layers\": 3, \"no_rope_layers\": [1, 0, 0], \"attn_temperature_tuning\": false}",
         "rope", 8, 2},
    };
    for (size_t i = 0; i < RL_ARRAY_LEN(good); i++) {
        FILE *fp = fopen(path, "w");
        fputs(good[i].json, fp);
        fclose(fp);
        hfm_model m;
        rl_error err = {0};
        ck_assert_msg(hfm_load(path, &m, &err) == RL_OK, "%s", err.msg);
        ck_assert_str_eq(json_string_value(json_object_get(m.types[0].encoding, "type")), good[i].type);
        ck_assert_uint_eq(m.kv_heads, good[i].kv);
        if (good[i].nope) {
            const hfm_layer_type *t;
            /* temperature off: the NoPE layers are plannable as nope */
            ck_assert_msg(hfm_select(&m, NULL, &t, NULL, &err) == RL_OK, "%s", err.msg);
            ck_assert_str_eq(json_string_value(json_object_get(t->encoding, "type")), "nope");
            ck_assert_uint_eq(t->count, good[i].nope);
        }
        hfm_free(&m);
    }
    /* jquesnelle/yarn's "dynamic-yarn" type is dynamic_yarn */
    FILE *fp = fopen(path, "w");
    fputs("{\"hidden_size\": 4096, \"num_attention_heads\": 32, \"max_position_embeddings\": 4096, "
          "\"rope_scaling\": {\"type\": \"dynamic-yarn\", \"original_max_position_embeddings\": 4096}}",
          fp);
    fclose(fp);
    {
        hfm_model dm;
        rl_error derr = {0};
        ck_assert_msg(hfm_load(path, &dm, &derr) == RL_OK, "%s", derr.msg);
        ck_assert_str_eq(json_string_value(json_object_get(dm.types[0].encoding, "rope_type")),
                         "dynamic_yarn");
        hfm_free(&dm);
    }
    /* head_dim 128.0 is 128 (HF reads the number) */
    fp = fopen(path, "w");
    fputs("{\"hidden_size\": 4096, \"num_attention_heads\": 64, \"head_dim\": 128.0}", fp);
    fclose(fp);
    hfm_model m;
    rl_error err = {0};
    ck_assert_msg(hfm_load(path, &m, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(m.head_dim, 128);
    hfm_free(&m);
    remove(path);
    rmdir(dir);
}
END_TEST

START_TEST(older_test_configs_still_import)
{
    char p[512];
    rl_error err = {0};
    const struct { const char *file, *msg; } bad[] = {
        {"bad_per_layer.json", "has a dict for a layer type no layer has: sliding_attention"},
        {"bad_unknown_type.json", "rope_scaling: rope_type 'xpos' is not supported (supported: default"},
        {"bad_yarn_no_original.json", "yarn needs original_max_position_embeddings"},
        {"bad_longrope_length.json", "long_factor has 3 entries; expected rotary_dim/2 = 4"},
        {"bad_factor.json", "factor 0.5 must be >= 1"},
        {"no_such_file.json", "no_such_file.json"},
    };
    for (size_t i = 0; i < RL_ARRAY_LEN(bad); i++) {
        hfm_model m;
        ck_assert_int_ne(hfm_load(data_path(bad[i].file, p, sizeof p), &m, &err), RL_OK);
        ck_assert_msg(strstr(err.msg, bad[i].msg), "'%s' lacks '%s'", err.msg, bad[i].msg);
        hfm_free(&m);
    }
    hfm_model m;
    load("llama31.json", &m);
    rope_freqs *f = freqs(&m, NULL);
    REL(f->inv_freq[63], th(5e5, 63, 128) / 8, 1e-14);
    ck_assert_uint_eq(m.train_len, 8192);
    free(f);
    hfm_free(&m);
    load("yarn_rope_parameters.json", &m);
    f = freqs(&m, NULL);
    ck_assert_uint_eq(f->rotary_dim, 64);
    REL(f->base, 1e7, 0);
    free(f);
    hfm_free(&m);
    load("text_config_ntk.json", &m);
    ck_assert_uint_eq(m.head_dim, 128);
    f = freqs(&m, NULL);
    ck_assert_int_eq(f->rope_type, ROPE_TYPE_DYNAMIC);
    free(f);
    hfm_free(&m);
}
END_TEST

/* HunYuan's rope_scaling {"type": "dynamic", "alpha": 1000, "factor": 1}:
 * alpha is read by vLLM's get_rope only (DynamicNTKAlphaRotaryEmbedding),
 * so the import takes vLLM's reading, flagged: base' = 10000 *
 * 1000^(128/126), theta_j = 10000^(-2j/128) * 1000^(-2j/126). Keys vLLM's
 * alpha class does not read, mixed_b off ntk, and ropelab's own semantics
 * key are refused, by name. */
START_TEST(vllm_keys_import_with_vllm_semantics_or_are_refused)
{
    hfm_model m;
    load("hunyuan_dynamic_alpha.json", &m);
    rope_freqs *f = freqs(&m, NULL);
    ck_assert_int_eq(f->desc.semantics, ROPE_SEM_VLLM);
    ck_assert_double_eq(f->desc.alpha, 1000.0);
    REL(f->theta, 1e4 * pow(1000.0, 128.0 / 126.0), 1e-14);
    REL(f->inv_freq[63], pow(1e4, -126.0 / 128) * pow(1000.0, -1.0), 1e-13);
    REL(f->scale[63], 1000.0, 1e-12);
    free(f);
    hfm_free(&m);

    char dir[] = "/tmp/rl_hfm_XXXXXX", path[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/config.json", dir);
    const struct { const char *json, *msg; } bad[] = {
        {"{\"hidden_size\": 256, \"num_attention_heads\": 2, \"max_position_embeddings\": 64, "
         "\"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2.0, \"mixed_b\": 0.5}}",
         "mixed_b applies to rope_type ntk"},
        {"{\"hidden_size\": 256, \"num_attention_heads\": 2, \"rope_scaling\": {\"type\": "
         "\"dynamic\", \"alpha\": 1000.0, \"factor\": 4.0}}",
         "factor 4 with alpha: vLLM ignores factor"},
        {"{\"hidden_size\": 256, \"num_attention_heads\": 2, \"max_position_embeddings\": 64, "
         "\"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2.0, \"semantics\": \"vllm\"}}",
         "rope_scaling.semantics is not a RoPE key ropelab represents"},
    };
    for (size_t i = 0; i < RL_ARRAY_LEN(bad); i++) {
        FILE *fp = fopen(path, "w");
        ck_assert_ptr_nonnull(fp);
        fputs(bad[i].json, fp);
        fclose(fp);
        rl_error err = {0};
        if (hfm_load(path, &m, &err) == RL_OK) {
            refused(&m, NULL, bad[i].msg);
        } else {
            ck_assert_msg(strstr(err.msg, bad[i].msg) && strstr(err.msg, "config.json"),
                          "'%s' lacks '%s'", err.msg, bad[i].msg);
        }
        hfm_free(&m);
    }
    remove(path);
    rmdir(dir);
    /* HunYuan dense (Hy-MT2-7B-style): YaRN keys beside alpha, which vLLM
     * does not read: captured (shown by `ropelab model`), not applied. */
    ck_assert_ptr_nonnull(mkdtemp(strcpy(dir, "/tmp/rl_hfm_XXXXXX")));
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *fa = fopen(path, "w");
    ck_assert_ptr_nonnull(fa);
    fputs("{\"hidden_size\": 256, \"num_attention_heads\": 2, \"rope_scaling\": {\"alpha\": "
          "1000.0, \"beta_fast\": 32, \"beta_slow\": 1, \"factor\": 1.0, \"mscale\": 1.0, "
          "\"mscale_all_dim\": 1.0, \"type\": \"dynamic\"}}", fa);
    fclose(fa);
    {
        rl_error e2 = {0};
        ck_assert_msg(hfm_load(path, &m, &e2) == RL_OK, "%s", e2.msg);
        ck_assert_ptr_nonnull(json_object_get(
            m.attrs, "rope_scaling.beta_fast (unread beside alpha, as vLLM)"));
        ck_assert_ptr_nonnull(json_object_get(
            m.attrs, "rope_scaling.mscale_all_dim (unread beside alpha, as vLLM)"));
        rope_freqs *fh = freqs(&m, NULL);
        ck_assert_int_eq(fh->desc.semantics, ROPE_SEM_VLLM);
        ck_assert_double_eq(fh->attention_factor, 1.0);
        REL(fh->scale[63], 1000.0, 1e-12);
        free(fh);
        hfm_free(&m);
    }
    remove(path);
    rmdir(dir);
    /* ntk with mixed_b: vLLM's mixed divisors exp(ln(4) (m/64)^0.5), pair 15 (m = 16): 4^0.5 */
    ck_assert_ptr_nonnull(mkdtemp(strcpy(dir, "/tmp/rl_hfm_XXXXXX")));
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs("{\"hidden_size\": 256, \"num_attention_heads\": 2, \"rope_scaling\": {\"type\": \"ntk\", "
          "\"factor\": 4.0, \"mixed_b\": 0.5}}", fp);
    fclose(fp);
    rl_error err = {0};
    ck_assert_msg(hfm_load(path, &m, &err) == RL_OK, "%s", err.msg);
    f = freqs(&m, NULL);
    ck_assert_int_eq(f->desc.semantics, ROPE_SEM_VLLM);
    REL(f->scale[15], 2.0, 1e-13);
    REL(f->scale[63], 4.0, 1e-13);
    REL(f->theta, 1e4, 1e-15);
    free(f);
    hfm_free(&m);
    remove(path);
    rmdir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hf_model");
    /* each model family's config.json: shapes, bases, scaling, layer patterns */
    TCase *tc_families = tcase_create("families");
    tcase_add_test(tc_families, llama_family_shapes_and_bases);
    tcase_add_test(tc_families, llama4_rope_layers_are_interleaved_and_nope_layers_carry_temperature);
    tcase_add_test(tc_families, qwen_yarn_and_mrope);
    tcase_add_test(tc_families, phi3_su_is_longrope_with_top_level_original);
    tcase_add_test(tc_families, phi35_longrope_real_factor_lists);
    tcase_add_test(tc_families, gemma_layer_patterns_local_base_and_query_scalar);
    tcase_add_test(tc_families, deepseek_mla_rotates_the_rope_part_interleaved_with_softmax_correction);
    tcase_add_test(tc_families, partial_rotary_families);
    tcase_add_test(tc_families, falcon_bloom_mpt_gpt2_t5_gpt_oss);
    suite_add_tcase(s, tc_families);
    /* keys ropelab cannot represent are refused, naming the key and the file */
    TCase *tc_refusals = tcase_create("refusals");
    tcase_add_test(tc_refusals, unrepresentable_keys_are_refused_naming_key_and_file);
    suite_add_tcase(s, tc_refusals);
    /* the older test configs (tests/data): still imported, or refused as before */
    TCase *tc_legacy = tcase_create("legacy");
    tcase_add_test(tc_legacy, older_test_configs_still_import);
    suite_add_tcase(s, tc_legacy);
    /* keys only vLLM reads: imported with vLLM's semantics, or refused */
    TCase *tc_vllm = tcase_create("vllm");
    tcase_add_test(tc_vllm, vllm_keys_import_with_vllm_semantics_or_are_refused);
    suite_add_tcase(s, tc_vllm);
    return rl_test_run(s);
}
