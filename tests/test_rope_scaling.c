/* pe/rope scaling types: inv_freq and attention factor against values derived
 * by hand from HF transformers' formulas (modeling_rope_utils.py) in each test,
 * never against rope_freqs_compute's own output; config import and every
 * error case with its message. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"
#include "pe/rope.h"
#include "pe/rope_scaling.h"
#include "rl_test.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define REL(a, b, tol) ck_assert_msg(fabs((a) - (b)) <= (tol) * fabs(b), "%.17g vs %.17g", (a), (b))

static rope_freqs compute(const rope_desc *d)
{
    rope_freqs f;
    rl_error err = {0};
    ck_assert_msg(rope_freqs_compute(d, &f, &err) == RL_OK, "%s", err.msg);
    return f;
}

/* Unscaled theta_j = base^(-2j/dim). */
static double th(double base, int j, int dim)
{
    return pow(base, -2.0 * j / dim);
}

START_TEST(linear_divides_every_frequency_by_factor)
{
    rope_freqs f = compute(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_LINEAR, .factor = 2});
    for (int j = 0; j < 32; j++)
        REL(f.inv_freq[j], th(10000, j, 64) / 2, 1e-15);
    ck_assert_double_eq(f.attention_factor, 1.0);
    ck_assert_double_eq_tol(f.scale[5], 2.0, 1e-15);
}
END_TEST

/* The batch check's keys each rope_type reads (its registry entry's `keys`)
 * cover every type: a type whose entry lists no keys would have every
 * scaling key refused ("has no effect"). */
START_TEST(every_scaling_type_reads_its_factor)
{
    for (int t = 0; t < ROPE_TYPE_COUNT; t++)
        ck_assert_msg(rope_type_uses_key(t, "factor") == (t != ROPE_TYPE_DEFAULT),
                      "rope_type %s: factor", rope_type_name(t));
    ck_assert(rope_type_uses_key(ROPE_TYPE_DYNAMIC_YARN, "beta_fast"));
    ck_assert(!rope_type_uses_key(ROPE_TYPE_LINEAR, "beta_fast"));
    /* vLLM's keys: alpha is dynamic's, mixed_b ntk's */
    ck_assert(rope_type_uses_key(ROPE_TYPE_DYNAMIC, "alpha"));
    ck_assert(!rope_type_uses_key(ROPE_TYPE_YARN, "alpha"));
    ck_assert(rope_type_uses_key(ROPE_TYPE_NTK, "mixed_b"));
    ck_assert(!rope_type_uses_key(ROPE_TYPE_DYNAMIC, "mixed_b"));
}
END_TEST

START_TEST(ntk_changes_the_base_by_factor_to_d_over_d_minus_2)
{
    rope_freqs f = compute(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_NTK, .factor = 4});
    /* base' = 10000 * 4^(64/62) = 10000 * 4.1817... */
    double b = 10000.0 * pow(4.0, 64.0 / 62.0);
    REL(f.theta, b, 1e-15);
    ck_assert_double_eq(f.inv_freq[0], 1.0);
    REL(f.inv_freq[31], pow(b, -62.0 / 64.0), 1e-14);
    /* the lowest frequency is scaled by exactly 4^(64/62 * 62/64) = 4 */
    REL(f.scale[31], 4.0, 1e-13);
}
END_TEST

START_TEST(dynamic_is_unscaled_up_to_max_position_and_ntk_beyond)
{
    rope_desc d = {.head_dim = 128, .rope_type = ROPE_TYPE_DYNAMIC, .factor = 4,
                   .max_position_embeddings = 4096};
    const uint32_t unscaled_lens[] = {0, 2048, 4096}; /* not given, under, at 1x */
    for (size_t i = 0; i < 3; i++) {
        d.seq_len = unscaled_lens[i];
        rope_freqs f = compute(&d);
        ck_assert_double_eq_tol(f.theta, 10000.0, 1e-9);
        REL(f.inv_freq[40], th(10000, 40, 128), 1e-14);
    }
    /* 4x: base * (4 * 16384/4096 - 3)^(128/126) = base * 13^(64/63) */
    d.seq_len = 16384;
    rope_freqs f = compute(&d);
    double b = 10000.0 * pow(13.0, 128.0 / 126.0);
    REL(f.theta, b, 1e-14);
    REL(f.inv_freq[63], pow(b, -126.0 / 128.0), 1e-13);
    ck_assert_double_eq(f.attention_factor, 1.0);
}
END_TEST

/* YaRN, factor 4, head_dim 128, base 10000, original 4096 (by hand):
 *   corr(32) = 128 ln(4096 / (64 pi)) / (2 ln 10000) = 20.944 -> floor 20
 *   corr(1)  = 128 ln(4096 / (2 pi))  / (2 ln 10000) = 45.027 -> ceil 46
 * ramp_j = clamp((j - 20) / 26, 0, 1); inv = theta/4 * ramp + theta * (1 - ramp). */
START_TEST(yarn_blends_between_the_correction_dims)
{
    rope_desc d = {.head_dim = 128, .rope_type = ROPE_TYPE_YARN, .factor = 4,
                   .original_max_position_embeddings = 4096};
    rope_freqs f = compute(&d);
    for (int j = 0; j <= 20; j++) /* extrapolation end: unscaled */
        REL(f.inv_freq[j], th(1e4, j, 128), 1e-14);
    for (int j = 46; j < 64; j++) /* interpolation end: divided by factor */
        REL(f.inv_freq[j], th(1e4, j, 128) / 4, 1e-14);
    REL(f.inv_freq[33], th(1e4, 33, 128) * (0.5 / 4 + 0.5), 1e-14); /* ramp 13/26 */
    REL(f.inv_freq[21], th(1e4, 21, 128) * ((1.0 / 26) / 4 + 25.0 / 26), 1e-14);
    REL(f.inv_freq[45], th(1e4, 45, 128) * ((25.0 / 26) / 4 + 1.0 / 26), 1e-14);
    REL(f.attention_factor, 1.0 + 0.1 * log(4.0), 1e-15); /* 1.13863 */
}
END_TEST

START_TEST(yarn_without_truncation_uses_the_raw_correction_dims)
{
    rope_desc d = {.head_dim = 128, .rope_type = ROPE_TYPE_YARN, .factor = 4,
                   .original_max_position_embeddings = 4096, .truncate = -1};
    rope_freqs f = compute(&d);
    double lo = 128 * log(4096 / (64 * M_PI)) / (2 * log(1e4)); /* 20.944 */
    double hi = 128 * log(4096 / (2 * M_PI)) / (2 * log(1e4));  /* 45.027 */
    ck_assert(lo > 20.9 && lo < 21.0 && hi > 45.0 && hi < 45.1);
    REL(f.inv_freq[20], th(1e4, 20, 128), 1e-14);             /* still below lo */
    double r = (33 - lo) / (hi - lo);
    REL(f.inv_freq[33], th(1e4, 33, 128) * (r / 4 + 1 - r), 1e-13);
    REL(f.inv_freq[46], th(1e4, 46, 128) / 4, 1e-14);
}
END_TEST

START_TEST(yarn_attention_factor_from_mscale_pair_only)
{
    /* DeepSeek-style: factor 40, mscale 1, mscale_all_dim 0.707:
     * (0.1 * 1 * ln 40 + 1) / (0.1 * 0.707 * ln 40 + 1) = 1.0857264 */
    rope_desc d = {.head_dim = 64, .rope_type = ROPE_TYPE_YARN, .factor = 40, .mscale = 1,
                   .mscale_all_dim = 0.707, .original_max_position_embeddings = 4096};
    REL(compute(&d).attention_factor, 1.0857263992561355, 1e-12);
    d.mscale_all_dim = 0; /* HF ignores mscale alone: 0.1 ln 40 + 1 */
    REL(compute(&d).attention_factor, 1.3688879454113936, 1e-12);
    d.attention_factor = 0.75; /* given: used as is */
    ck_assert_double_eq(compute(&d).attention_factor, 0.75);
}
END_TEST

START_TEST(yarn_factor_defaults_to_max_over_original)
{
    rope_desc d = {.head_dim = 64, .rope_type = ROPE_TYPE_YARN, .max_position_embeddings = 163840,
                   .original_max_position_embeddings = 4096};
    rope_freqs f = compute(&d);
    ck_assert_double_eq(f.factor, 40.0);
    /* and original defaults to max_position_embeddings (HF standardize) */
    rope_desc e = {.head_dim = 64, .rope_type = ROPE_TYPE_YARN, .factor = 2, .max_position_embeddings = 4096};
    rope_freqs g = compute(&e);
    ck_assert_double_eq(g.factor, 2.0);
}
END_TEST

/* Values printed by Hugging Face transformers 5.17.0's own
 * _compute_yarn_parameters (float32, "%.9e") for head_dim 256,
 * partial_rotary_factor 0.25, rope_theta 1e7, original 262144, factor 4 and
 * 2.5, as published in a public golden table (a Qwen3-Next port's tests).
 * Correction range 14.24..21.12 -> pairs 14..22. These are HF's numbers, not
 * ropelab's: agreement within 1e-6 relative is the criterion. */
START_TEST(yarn_matches_values_printed_by_transformers)
{
    static const struct { double factor, att; int j; double v; } hf[] = {
        {4.0, 1.138629436111989, 1, 6.042963862e-01},  {4.0, 1.138629436111989, 14, 8.659643354e-04},
        {4.0, 1.138629436111989, 15, 4.742398160e-04}, {4.0, 1.138629436111989, 18, 7.217386883e-05},
        {4.0, 1.138629436111989, 21, 8.759770026e-06}, {4.0, 1.138629436111989, 22, 3.849816039e-06},
        {4.0, 1.138629436111989, 31, 4.137042708e-08}, {2.5, 1.0916290731874154, 16, 2.687936067e-04},
        {2.5, 1.0916290731874154, 20, 2.319330997e-05}, {2.5, 1.0916290731874154, 31, 6.619268333e-08},
    };
    for (size_t i = 0; i < RL_ARRAY_LEN(hf); i++) {
        rope_desc d = {.head_dim = 256, .partial_rotary_factor = 0.25, .theta = 1e7,
                       .rope_type = ROPE_TYPE_YARN, .factor = hf[i].factor,
                       .original_max_position_embeddings = 262144, .max_position_embeddings = 262144};
        rope_freqs f = compute(&d);
        ck_assert_uint_eq(f.rotary_dim, 64);
        REL(f.inv_freq[hf[i].j], hf[i].v, 1e-6);
        REL(f.attention_factor, hf[i].att, 1e-12);
    }
}
END_TEST

/* Llama 3.1: factor 8, low 1, high 4, original 8192, base 500000, d 128.
 * wavelength_j = 2 pi 500000^(j/64): j=28 -> 1956 (< 8192/4 = 2048: kept),
 * j=29 -> 2402 and j=34 -> 6695 (between: smoothed), j=35 -> 8219 (> 8192: /8). */
START_TEST(llama3_keeps_high_divides_low_and_smooths_between)
{
    rope_desc d = {.head_dim = 128, .theta = 500000, .rope_type = ROPE_TYPE_LLAMA3, .factor = 8,
                   .low_freq_factor = 1, .high_freq_factor = 4,
                   .original_max_position_embeddings = 8192};
    rope_freqs f = compute(&d);
    for (int j = 0; j <= 28; j++)
        REL(f.inv_freq[j], th(5e5, j, 128), 1e-14);
    for (int j = 35; j < 64; j++)
        REL(f.inv_freq[j], th(5e5, j, 128) / 8, 1e-14);
    const int mid[] = {29, 30, 34};
    for (int i = 0; i < 3; i++) {
        int j = mid[i];
        double t = th(5e5, j, 128), wl = 2 * M_PI / t;
        double s = (8192 / wl - 1) / 3; /* smooth factor in (0, 1) */
        ck_assert(s > 0 && s < 1);
        REL(f.inv_freq[j], (1 - s) * t / 8 + s * t, 1e-13);
    }
    ck_assert_double_eq(f.attention_factor, 1.0);
}
END_TEST

/* LongRoPE: 4 pairs, original 4096, max 131072 -> factor 32;
 * attention sqrt(1 + ln 32 / ln 4096) = sqrt(1 + 5/12) = sqrt(17/12). */
START_TEST(longrope_switches_to_long_factors_past_original_length)
{
    rope_desc d = {.head_dim = 8, .rope_type = ROPE_TYPE_LONGROPE,
                   .original_max_position_embeddings = 4096, .max_position_embeddings = 131072,
                   .n_short_factor = 4, .short_factor = {1, 2, 3, 4},
                   .n_long_factor = 4, .long_factor = {10, 20, 30, 40}};
    d.seq_len = 4096; /* at the original length: short */
    rope_freqs f = compute(&d);
    for (int j = 0; j < 4; j++)
        REL(f.inv_freq[j], th(1e4, j, 8) / (j + 1), 1e-15);
    REL(f.attention_factor, sqrt(17.0 / 12.0), 1e-15);
    d.seq_len = 4097; /* one past: long */
    f = compute(&d);
    for (int j = 0; j < 4; j++)
        REL(f.inv_freq[j], th(1e4, j, 8) / (10 * (j + 1)), 1e-15);
    d.seq_len = 0; /* not given: short, as HF at init */
    REL(compute(&d).inv_freq[3], th(1e4, 3, 8) / 4, 1e-15);
}
END_TEST

START_TEST(proportional_rotates_a_proportion_with_head_dim_exponent)
{
    /* Gemma-4 style: head_dim 256, proportion 0.25, theta 1e6: 32 rotated
     * pairs with theta_j = 1e6^(-2j/256), the other 96 pairs frequency 0. */
    rope_desc d = {.head_dim = 256, .theta = 1e6, .rope_type = ROPE_TYPE_PROPORTIONAL,
                   .partial_rotary_factor = 0.25};
    rope_freqs f = compute(&d);
    ck_assert_uint_eq(f.n_pairs, 128);
    ck_assert_uint_eq(f.rotary_dim, 256);
    REL(f.inv_freq[31], pow(1e6, -62.0 / 256), 1e-14);
    for (int j = 32; j < 128; j++)
        ck_assert_double_eq(f.inv_freq[j], 0.0);
    d.factor = 2;
    REL(compute(&d).inv_freq[10], pow(1e6, -20.0 / 256) / 2, 1e-14);
}
END_TEST

static void expect_error(const rope_desc *d, const char *msg)
{
    rope_freqs f;
    rl_error err = {0};
    ck_assert_int_eq(rope_freqs_compute(d, &f, &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, msg), "message '%s' lacks '%s'", err.msg, msg);
}

START_TEST(bad_settings_are_errors_naming_the_key)
{
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_LINEAR}, "linear needs factor");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_LINEAR, .factor = 0.5},
                 "factor 0.5 must be >= 1");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_YARN, .factor = 4},
                 "yarn needs original_max_position_embeddings");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_DYNAMIC, .factor = 2},
                 "dynamic needs max_position_embeddings");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_LLAMA3, .factor = 8,
                              .original_max_position_embeddings = 8192, .high_freq_factor = 4},
                 "llama3 needs low_freq_factor");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_YARN, .factor = 4,
                              .original_max_position_embeddings = 4096, .beta_fast = NAN},
                 "beta_fast nan must be a finite number >= 0");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_YARN, .factor = 4,
                              .original_max_position_embeddings = 4096, .mscale = -1},
                 "mscale -1 must be a finite number >= 0");
    expect_error(&(rope_desc){.head_dim = 8, .rope_type = ROPE_TYPE_LONGROPE, .factor = 2,
                              .original_max_position_embeddings = 4096, .n_short_factor = 3,
                              .n_long_factor = 4},
                 "short_factor has 3 entries; expected rotary_dim/2 = 4");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = 42}, "supported: default, linear");
    expect_error(&(rope_desc){.head_dim = 64, .partial_rotary_factor = 1.5},
                 "partial_rotary_factor 1.5 must be in (0, 1]");
}
END_TEST

static rl_status set_json(rope_desc *d, const char *text, rl_error *err)
{
    json_error_t je;
    json_t *o = json_loads(text, 0, &je);
    ck_assert_msg(o, "%s", je.text);
    rl_status st = rope_desc_from_json(d, o, err);
    json_decref(o);
    return st;
}

/* Dynamic YaRN (YaRN paper §3.3 "Dynamic Scaling"; jquesnelle/yarn
 * LlamaDynamicYaRNScaledRotaryEmbedding): s = max(factor, N / L_orig)
 * (factor default 1), then YaRN's blend at s. head_dim 128, base 10000,
 * L_orig 4096: the ramp runs from pair 20 to 46 (derived above, it does not
 * depend on s). */
START_TEST(dynamic_yarn_scale_follows_length_over_original)
{
    rope_desc d = {.head_dim = 128, .rope_type = ROPE_TYPE_DYNAMIC_YARN,
                   .original_max_position_embeddings = 4096};
    /* no length, or N <= L_orig: s = 1, the plain rotation, factor 1 */
    static const uint32_t short_n[] = {0, 1, 4096};
    for (size_t i = 0; i < RL_ARRAY_LEN(short_n); i++) {
        d.seq_len = short_n[i];
        rope_freqs f = compute(&d);
        for (int j = 0; j < 64; j++)
            REL(f.inv_freq[j], th(1e4, j, 128), 1e-14);
        ck_assert_double_eq(f.attention_factor, 1.0);
        ck_assert_double_eq(f.factor, 1.0);
    }
    /* N = 16384: s = 4, the values of yarn factor 4 */
    d.seq_len = 16384;
    rope_freqs f = compute(&d);
    ck_assert_double_eq(f.factor, 4.0);
    REL(f.inv_freq[10], th(1e4, 10, 128), 1e-14);
    REL(f.inv_freq[33], th(1e4, 33, 128) * (0.5 / 4 + 0.5), 1e-14);
    REL(f.inv_freq[50], th(1e4, 50, 128) / 4, 1e-14);
    REL(f.attention_factor, 1.0 + 0.1 * log(4.0), 1e-15);
    /* N = 10000: s = 10000/4096 = 2.44140625 */
    d.seq_len = 10000;
    f = compute(&d);
    double s = 10000.0 / 4096.0;
    REL(f.inv_freq[50], th(1e4, 50, 128) / s, 1e-14);
    REL(f.inv_freq[21], th(1e4, 21, 128) * ((1.0 / 26) / s + 25.0 / 26), 1e-14);
    REL(f.attention_factor, 1.0 + 0.1 * log(s), 1e-15);
    /* factor is the floor (jquesnelle's finetuned: M / L_orig): 8 until N = 8 L_orig */
    d.factor = 8;
    f = compute(&d);
    ck_assert_double_eq(f.factor, 8.0);
    REL(f.inv_freq[63], th(1e4, 63, 128) / 8, 1e-14);
    d.seq_len = 65536;
    ck_assert_double_eq(compute(&d).factor, 16.0);
    /* L_orig defaults to max_position_embeddings (as yarn) */
    rope_desc e = {.head_dim = 128, .rope_type = ROPE_TYPE_DYNAMIC_YARN,
                   .max_position_embeddings = 2048, .seq_len = 8192};
    ck_assert_double_eq(compute(&e).factor, 4.0);
    ck_assert_int_eq(rope_type_parse("dynamic-yarn"), ROPE_TYPE_DYNAMIC_YARN);
    ck_assert_str_eq(rope_type_name(ROPE_TYPE_DYNAMIC_YARN), "dynamic_yarn");
}
END_TEST

/* cache_consistent: the token at position p keeps the rotation of the step
 * that computed it, length L(p) = max(p + 1, P). Values by hand from
 * HF's dynamic NTK formula, base' = b (s L/M - (s - 1))^(d/(d-2)). */
START_TEST(cache_consistent_rotates_each_position_with_its_own_length)
{
    rope_desc d = {.head_dim = 64, .rope_type = ROPE_TYPE_DYNAMIC, .factor = 2,
                   .max_position_embeddings = 4096, .seq_len = 16384,
                   .dynamic_mode = ROPE_DYN_CACHE_CONSISTENT, .prompt_len = 8192};
    rope_freqs f = compute(&d);
    ck_assert(rope_freqs_per_position(&f));
    ck_assert_uint_eq(f.prompt_len, 8192);
    ck_assert_uint_eq(rope_position_len(&f, 0), 8192);
    ck_assert_uint_eq(rope_position_len(&f, 8191), 8192);
    ck_assert_uint_eq(rope_position_len(&f, 12000), 12001);
    /* f itself describes length seq_len: 2*16384/4096 - 1 = 7 */
    REL(f.theta, 1e4 * pow(7.0, 64.0 / 62), 1e-14);
    double inv[ROPE_MAX_PAIRS], af = 0;
    rope_freqs_at(&f, 100, inv, &af); /* prompt: L = 8192, 2*2 - 1 = 3 */
    REL(inv[5], pow(1e4 * pow(3.0, 64.0 / 62), -10.0 / 64), 1e-14);
    ck_assert_double_eq(af, 1.0);
    double b12 = 1e4 * pow(2.0 * 12001 / 4096 - 1, 64.0 / 62); /* decoded at L = 12001 */
    rope_freqs_at(&f, 12000, inv, &af);
    REL(inv[5], pow(b12, -10.0 / 64), 1e-14);
    /* the reference rotates e_a of pair 5 (half layout: dims 5, 37) by 12000 theta_5(12001) */
    float x[64] = {0};
    x[5] = 1;
    uint32_t pos[2] = {12000, 100};
    double y[64];
    rope_ref_apply(&f, x, pos, 1, 1, y);
    double a = 12000 * pow(b12, -10.0 / 64);
    REL(y[5], cos(a), 1e-12);
    REL(y[37], sin(a), 1e-12);
    /* default prompt_len = seq_len: pure prefill, every p < N has L = N, the recompute rotation */
    d.prompt_len = 0;
    f = compute(&d);
    ck_assert_uint_eq(f.prompt_len, 16384);
    rope_desc r = d;
    r.dynamic_mode = ROPE_DYN_RECOMPUTE;
    rope_freqs g = compute(&r);
    static const uint32_t ps[] = {0, 5000, 16383};
    for (size_t i = 0; i < RL_ARRAY_LEN(ps); i++) {
        rope_freqs_at(&f, ps[i], inv, &af);
        for (int j = 0; j < 32; j++)
            ck_assert_double_eq(inv[j], g.inv_freq[j]);
    }
    /* a prompt longer than the sequence is the sequence */
    d.prompt_len = 99999;
    ck_assert_uint_eq(compute(&d).prompt_len, 16384);

    /* dynamic_yarn, P = 4096 = L_orig: a prompt token has s = 1; the token
     * at 20000 s = 20001/4096, attention factor 0.1 ln s + 1 on its own */
    rope_desc y2 = {.head_dim = 128, .rope_type = ROPE_TYPE_DYNAMIC_YARN,
                    .original_max_position_embeddings = 4096, .seq_len = 32768,
                    .dynamic_mode = ROPE_DYN_CACHE_CONSISTENT, .prompt_len = 4096};
    f = compute(&y2);
    rope_freqs_at(&f, 3000, inv, &af);
    REL(inv[63], th(1e4, 63, 128), 1e-14);
    ck_assert_double_eq(af, 1.0);
    rope_freqs_at(&f, 20000, inv, &af);
    double s = 20001.0 / 4096;
    REL(inv[63], th(1e4, 63, 128) / s, 1e-14);
    REL(inv[0], 1.0, 1e-15);
    REL(af, 1.0 + 0.1 * log(s), 1e-15);
    float xy[128] = {0};
    xy[63] = 2;
    uint32_t p20 = 20000;
    double yy[128];
    rope_ref_apply(&f, xy, &p20, 1, 1, yy);
    REL(yy[63], 2 * af * cos(20000 * th(1e4, 63, 128) / s), 1e-12);
    REL(yy[127], 2 * af * sin(20000 * th(1e4, 63, 128) / s), 1e-12);
}
END_TEST

START_TEST(dynamic_mode_errors_name_the_key)
{
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_YARN, .factor = 4,
                              .original_max_position_embeddings = 4096,
                              .dynamic_mode = ROPE_DYN_CACHE_CONSISTENT},
                 "dynamic_mode cache_consistent applies to rope_type dynamic and dynamic_yarn only "
                 "(not yarn)");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_DYNAMIC, .factor = 2,
                              .max_position_embeddings = 4096, .prompt_len = 10},
                 "prompt_len 10 applies to dynamic_mode cache_consistent only");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_DYNAMIC, .factor = 2,
                              .max_position_embeddings = 4096, .precision = RL_ROPE_PREC_HF,
                              .dynamic_mode = ROPE_DYN_CACHE_CONSISTENT},
                 "dynamic_mode cache_consistent: precision hf emulates one inv_freq");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_DYNAMIC_YARN},
                 "dynamic_yarn needs original_max_position_embeddings");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_DYNAMIC, .factor = 2,
                              .max_position_embeddings = 4096, .dynamic_mode = 7},
                 "dynamic_mode 7 must be recompute");
    rope_desc d = {0};
    rl_error err = {0};
    ck_assert_int_eq(set_json(&d, "{\"rope_type\": \"dynamic-yarn\", \"dynamic_mode\": "
                                  "\"cache_consistent\", \"prompt_len\": 512}", &err), RL_OK);
    ck_assert_int_eq(d.rope_type, ROPE_TYPE_DYNAMIC_YARN);
    ck_assert_int_eq(d.dynamic_mode, ROPE_DYN_CACHE_CONSISTENT);
    ck_assert_uint_eq(d.prompt_len, 512);
    ck_assert_int_eq(set_json(&d, "{\"dynamic_mode\": \"lazy\"}", &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "dynamic_mode must be \"recompute\" or \"cache_consistent\""),
                  "%s", err.msg);
    ck_assert_int_eq(set_json(&d, "{\"prompt_len\": 0}", &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "prompt_len 0 must be at least 1"), "%s", err.msg);
}
END_TEST

START_TEST(json_settings_use_hf_names_and_name_bad_keys)
{
    rope_desc d = {0};
    rl_error err = {0};
    ck_assert_int_eq(set_json(&d, "{\"type\": \"yarn\", \"factor\": 4.0, \"head_dim\": 128,"
                                  " \"original_max_position_embeddings\": 4096, \"truncate\": false,"
                                  " \"beta_fast\": null, \"layout\": \"interleaved\","
                                  " \"precision\": \"precise\"}", &err), RL_OK);
    ck_assert_int_eq(d.rope_type, ROPE_TYPE_YARN);
    ck_assert_double_eq(d.factor, 4.0);
    ck_assert_int_eq(d.truncate, -1);
    ck_assert_double_eq(d.beta_fast, 0.0); /* null = default */
    ck_assert_int_eq(d.layout, RL_ROPE_LAYOUT_INTERLEAVED);
    ck_assert_int_eq(d.precision, RL_ROPE_PREC_PRECISE);

    const struct { const char *json, *msg; } bad[] = {
        {"{\"rope_type\": \"ntk-by-parts\"}", "rope_type 'ntk-by-parts' is not supported (supported: default"},
        {"{\"factor\": 0.5}", "factor 0.5 must be >= 1"},
        {"{\"factor\": \"4\"}", "factor must be a number"},
        {"{\"beta_slow\": -1}", "beta_slow -1 must be a finite number >= 0"},
        {"{\"original_max_position_embeddings\": 4096.5}", "original_max_position_embeddings must be a non-negative integer"},
        {"{\"short_factor\": [1, \"x\"]}", "short_factor[1] must be a finite number > 0"},
        {"{\"truncate\": 1}", "truncate must be true or false"},
        {"{\"precision\": \"fp64\"}", "precision must be \"fp32\", \"table\", \"precise\""},
        {"{\"rope_scale\": 2}", "unknown RoPE key 'rope_scale'"},
        /* an explicit 0 is a value, validated, never "not given" */
        {"{\"rope_theta\": 0}", "rope_theta 0 must be > 1"},
        {"{\"partial_rotary_factor\": 0}", "partial_rotary_factor 0 must be in (0, 1]"},
        {"{\"attention_factor\": 0}", "attention_factor 0 must be > 0"},
        {"{\"beta_fast\": 0}", "beta_fast 0 must be > 0"},
        {"{\"beta_slow\": 0}", "beta_slow 0 must be > 0"},
        {"{\"low_freq_factor\": 0}", "low_freq_factor 0 must be > 0"},
        {"{\"rotary_dim\": 0}", "rotary_dim 0 must be at least 2"},
        {"{\"original_max_position_embeddings\": 0}", "original_max_position_embeddings 0 must be at least 1"},
    };
    for (size_t i = 0; i < RL_ARRAY_LEN(bad); i++) {
        rope_desc e = {0};
        ck_assert_int_eq(set_json(&e, bad[i].json, &err), RL_ERR_ARG);
        ck_assert_msg(strstr(err.msg, bad[i].msg), "'%s' lacks '%s'", err.msg, bad[i].msg);
    }
    /* every key of the one list is accepted: test_pe_ref's
     * rope_registry_keys_are_ropes_own_list sets each with a sample value */
    size_t n_rope;
    rope_param_table(&n_rope);
    ck_assert_uint_ge(n_rope, 20);
}
END_TEST

/* vLLM's readings (semantics vllm; vllm/model_executor/layers/rotary_embedding/
 * and get_rope()). Every expected value below is written from the formula
 * in a form other than rope_freq.c's. */

/* DynamicNTKAlphaRotaryEmbedding (HunYuan): base' = base * alpha^(d/(d-2)),
 * once, for every length: theta_j = base^(-2j/d) * alpha^(-2j/(d-2)).
 * HunYuan's config: head_dim 128, rope_theta 10000, alpha 1000. */
START_TEST(vllm_alpha_is_hunyuans_fixed_base_change)
{
    rope_desc d = {.head_dim = 128, .rope_type = ROPE_TYPE_DYNAMIC, .alpha = 1000,
                   .semantics = ROPE_SEM_VLLM};
    const uint32_t lens[] = {0, 2048, 262144};
    for (size_t i = 0; i < 3; i++) {
        d.seq_len = lens[i]; /* no length enters */
        rope_freqs f = compute(&d);
        REL(f.theta, 1e4 * pow(10.0, 3.0 * 128.0 / 126.0), 1e-14);
        for (int j = 0; j < 64; j += 21)
            REL(f.inv_freq[j], pow(1e4, -2.0 * j / 128) * pow(1000.0, -2.0 * j / 126), 1e-13);
        /* the lowest pair, j = 63: scaled by alpha^(126/126) = 1000 exactly */
        REL(f.scale[63], 1000.0, 1e-12);
        ck_assert_double_eq(f.inv_freq[0], 1.0);
        ck_assert_double_eq(f.attention_factor, 1.0);
    }
    /* factor 1 (HunYuan's configs carry it) is accepted and changes nothing */
    d.factor = 1;
    REL(compute(&d).scale[63], 1000.0, 1e-12);
}
END_TEST

/* DynamicNTKScalingRotaryEmbedding: one cache of max_len = M * factor with
 * base * (factor * max_len / M - (factor - 1))^(d/(d-2)); factor 4:
 * 4*4 - 3 = 13 for every length (vLLM #3488), where HF is unscaled up to M. */
START_TEST(vllm_dynamic_is_static_at_max_position_times_factor)
{
    rope_desc d = {.head_dim = 128, .rope_type = ROPE_TYPE_DYNAMIC, .factor = 4,
                   .max_position_embeddings = 4096, .semantics = ROPE_SEM_VLLM};
    const uint32_t lens[] = {0, 1, 2048, 4096, 16384, 1u << 20};
    for (size_t i = 0; i < RL_ARRAY_LEN(lens); i++) {
        d.seq_len = lens[i];
        rope_freqs f = compute(&d);
        REL(f.theta, 1e4 * pow(13.0, 64.0 / 63.0), 1e-14);
        REL(f.inv_freq[40], pow(1e4, -80.0 / 128) * pow(13.0, -80.0 / 126), 1e-13);
        REL(f.scale[63], 13.0, 1e-12);
    }
    /* HF at 2048 (inside M): unscaled; at 16384 (= M * factor) the two agree */
    d.semantics = ROPE_SEM_HF;
    d.seq_len = 2048;
    REL(compute(&d).scale[63], 1.0, 1e-12);
    d.seq_len = 16384;
    REL(compute(&d).scale[63], 13.0, 1e-12);
}
END_TEST

/* NTKScalingRotaryEmbedding without mixed_b: (base * factor)^(-2j/d) /
 * factor^(2/d) = theta_j * factor^(-2(j+1)/d); HF-style ntk (base *
 * factor^(d/(d-2))) keeps pair 0 at 1. d = 64, factor 4: scale_j =
 * 2^((j+1)/16). */
START_TEST(vllm_ntk_divides_by_factor_to_2_j_plus_1_over_d)
{
    rope_freqs f = compute(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_NTK, .factor = 4,
                                        .semantics = ROPE_SEM_VLLM});
    REL(f.theta, 40000.0, 1e-15);
    for (int j = 0; j < 32; j++)
        REL(f.scale[j], pow(2.0, (j + 1) / 16.0), 1e-13);
    REL(f.inv_freq[0], pow(2.0, -1.0 / 16), 1e-15);
    REL(f.inv_freq[31], th(1e4, 31, 64) / 4, 1e-13);
    /* the same config under hf: pair 0 unscaled */
    ck_assert_double_eq(compute(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_NTK,
                                             .factor = 4}).inv_freq[0], 1.0);
}
END_TEST

/* mixed_b (kexue.fm/archives/9706): base unchanged, theta_j / lambda_{j+1},
 * lambda_m = exp(a m^b), a = ln(factor) / (d/2)^b. d = 64, factor 4, b = 2:
 * lambda_m = 4^(m^2 / 1024): pair 15 (m = 16) sqrt(2), pair 31 (m = 32) 4.
 * b = 1 is vLLM's plain ntk. */
START_TEST(vllm_ntk_mixed_b_blends_the_divisor_by_m_to_the_b)
{
    rope_desc d = {.head_dim = 64, .rope_type = ROPE_TYPE_NTK, .factor = 4, .mixed_b = 2,
                   .semantics = ROPE_SEM_VLLM};
    rope_freqs f = compute(&d);
    REL(f.theta, 10000.0, 1e-15);
    REL(f.scale[15], sqrt(2.0), 1e-13);
    REL(f.scale[31], 4.0, 1e-13);
    REL(f.scale[0], pow(4.0, 1.0 / 1024), 1e-14);
    REL(f.inv_freq[7], th(1e4, 7, 64) * pow(4.0, -64.0 / 1024), 1e-13);
    d.mixed_b = 1;
    f = compute(&d);
    for (int j = 0; j < 32; j += 5)
        REL(f.scale[j], pow(2.0, (j + 1) / 16.0), 1e-13);
}
END_TEST

START_TEST(vllm_semantics_keys_are_refused_where_they_do_not_apply)
{
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_DYNAMIC, .alpha = 1000},
                 "alpha applies to rope_type dynamic with semantics vllm only");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_NTK, .factor = 2,
                              .alpha = 1000, .semantics = ROPE_SEM_VLLM},
                 "alpha applies to rope_type dynamic with semantics vllm only");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_NTK, .factor = 2,
                              .mixed_b = 2},
                 "mixed_b applies to rope_type ntk with semantics vllm only");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_DYNAMIC, .factor = 2,
                              .max_position_embeddings = 4096, .mixed_b = 2,
                              .semantics = ROPE_SEM_VLLM},
                 "mixed_b applies to rope_type ntk");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_YARN, .factor = 4,
                              .original_max_position_embeddings = 4096,
                              .semantics = ROPE_SEM_VLLM},
                 "semantics vllm applies to rope_type dynamic and ntk only");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_DYNAMIC, .alpha = 1000,
                              .factor = 2, .semantics = ROPE_SEM_VLLM},
                 "factor 2 with alpha: vLLM ignores factor");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_DYNAMIC, .alpha = 1000,
                              .beta_fast = 32, .semantics = ROPE_SEM_VLLM},
                 "beta_fast does not apply to rope_type dynamic with alpha");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_DYNAMIC, .factor = 2,
                              .max_position_embeddings = 4096, .semantics = ROPE_SEM_VLLM,
                              .dynamic_mode = ROPE_DYN_CACHE_CONSISTENT},
                 "semantics vllm computes one static base");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_DYNAMIC,
                              .max_position_embeddings = 4096, .semantics = ROPE_SEM_VLLM},
                 "dynamic needs factor (a number >= 1) or, semantics vllm, alpha");
    expect_error(&(rope_desc){.head_dim = 64, .semantics = 3}, "semantics 3 must be hf");
    expect_error(&(rope_desc){.head_dim = 64, .rope_type = ROPE_TYPE_DYNAMIC, .alpha = -1,
                              .semantics = ROPE_SEM_VLLM},
                 "alpha -1 must be a finite number > 0");
    rope_desc d = {.head_dim = 64};
    rl_error err = {0};
    ck_assert_int_eq(set_json(&d, "{\"rope_type\": \"dynamic\", \"semantics\": \"vllm\", "
                                  "\"alpha\": 1000, \"factor\": 1.0}", &err), RL_OK);
    ck_assert_int_eq(d.semantics, ROPE_SEM_VLLM);
    ck_assert_double_eq(d.alpha, 1000.0);
    json_t *o = rope_desc_to_json(&d);
    ck_assert_str_eq(json_string_value(json_object_get(o, "semantics")), "vllm");
    ck_assert_double_eq(json_real_value(json_object_get(o, "alpha")), 1000.0);
    json_decref(o);
    ck_assert_int_eq(set_json(&d, "{\"semantics\": \"sglang\"}", &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "semantics must be \"hf\" or \"vllm\""), "%s", err.msg);
    ck_assert_int_eq(set_json(&d, "{\"mixed_b\": 0}", &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "mixed_b 0 must be > 0"), "%s", err.msg);
}
END_TEST

/* Resonance RoPE's default, every pair, as the authors' code computes it
 * (sheryc/resonance_rope rotary_resonance.py: r_wavelengths =
 * torch.round(2 pi / inv_freq) over all dim/2 pairs): head_dim 8, base
 * 10000, wavelengths 6.283, 62.83, 628.3, 6283.2 -> 6, 63, 628, 6283 tokens
 * (values derived by hand), and no training length needed; after YaRN x4
 * every pair of YaRN's own inv_freq rounded. */
START_TEST(resonance_rounds_every_pair_as_the_authors_code)
{
    rope_freqs f = compute(&(rope_desc){.head_dim = 8, .resonance = 1});
    REL(f.inv_freq[0], 2.0 * M_PI / 6.0, 1e-15);
    REL(f.inv_freq[1], 2.0 * M_PI / 63.0, 1e-15);
    REL(f.inv_freq[2], 2.0 * M_PI / 628.0, 1e-15);
    REL(f.inv_freq[3], 2.0 * M_PI / 6283.0, 1e-15);
    rope_desc y = {.head_dim = 64, .rope_type = ROPE_TYPE_YARN, .factor = 4,
                   .original_max_position_embeddings = 4096};
    rope_freqs plain = compute(&y);
    y.resonance = 1;
    rope_freqs res = compute(&y);
    for (uint32_t j = 0; j < plain.n_pairs; j++)
        REL(res.inv_freq[j], 2.0 * M_PI / floor(2.0 * M_PI / plain.inv_freq[j] + 0.5), 1e-15);
    REL(res.attention_factor, plain.attention_factor, 0);
}
END_TEST

/* Resonance RoPE (Wang et al. 2024), resonance_scope below_train (the paper's
 * section 4 reading): head_dim 8, base 10000, L = 64.
 * Unscaled theta = 1, 0.1, 0.01, 0.001; wavelengths 2pi/theta = 6.283,
 * 62.83, 628.3, 6283: the first two are below 64 and become 6 and 63 tokens
 * (theta' = 2pi/6 = pi/3 and 2pi/63), the others are kept. */
START_TEST(resonance_below_train_rounds_wavelengths_below_the_training_length)
{
    rope_freqs f = compute(&(rope_desc){.head_dim = 8, .resonance = 1, .resonance_scope = ROPE_RESONANCE_BELOW_TRAIN,
                                        .original_max_position_embeddings = 64});
    REL(f.inv_freq[0], M_PI / 3.0, 1e-15);
    REL(f.inv_freq[1], 2.0 * M_PI / 63.0, 1e-15);
    REL(f.inv_freq[2], 0.01, 1e-15);
    REL(f.inv_freq[3], 0.001, 1e-15);
    /* max_position_embeddings stands in for the training length. */
    f = compute(&(rope_desc){.head_dim = 8, .resonance = 1, .resonance_scope = ROPE_RESONANCE_BELOW_TRAIN, .max_position_embeddings = 62});
    REL(f.inv_freq[1], 0.1, 1e-15); /* 62.83 >= 62: kept */
    REL(f.inv_freq[0], M_PI / 3.0, 1e-15);
    /* A rounded pair repeats exactly after its integer wavelength. */
    f = compute(&(rope_desc){.head_dim = 8, .resonance = 1, .resonance_scope = ROPE_RESONANCE_BELOW_TRAIN,
                             .original_max_position_embeddings = 64});
    ck_assert_double_eq_tol(fmod(63.0 * f.inv_freq[1], 2.0 * M_PI), 0.0, 1e-12);
}
END_TEST

/* After the scaling: linear factor 2 halves theta first (1/2, 1/20, ...):
 * wavelengths 4pi = 12.57 -> 13 tokens, 125.7 >= 64 kept. YaRN's own inv_freq
 * (computed without resonance) rounded the same way. */
START_TEST(resonance_applies_after_the_scaling_type)
{
    rope_freqs f = compute(&(rope_desc){.head_dim = 8, .rope_type = ROPE_TYPE_LINEAR, .factor = 2,
                                        .resonance = 1, .resonance_scope = ROPE_RESONANCE_BELOW_TRAIN, .original_max_position_embeddings = 64});
    REL(f.inv_freq[0], 2.0 * M_PI / 13.0, 1e-15);
    REL(f.inv_freq[1], 0.05, 1e-15);
    rope_desc y = {.head_dim = 64, .rope_type = ROPE_TYPE_YARN, .factor = 4,
                   .original_max_position_embeddings = 4096};
    rope_freqs plain = compute(&y);
    y.resonance = 1;
    y.resonance_scope = ROPE_RESONANCE_BELOW_TRAIN;
    rope_freqs res = compute(&y);
    int rounded = 0;
    for (uint32_t j = 0; j < plain.n_pairs; j++) {
        double wl = 2.0 * M_PI / plain.inv_freq[j];
        double want = wl < 4096 ? 2.0 * M_PI / floor(wl + 0.5) : plain.inv_freq[j];
        rounded += wl < 4096;
        REL(res.inv_freq[j], want, 1e-15);
    }
    ck_assert_int_gt(rounded, 10);
    ck_assert_int_lt(rounded, 32);
    REL(res.attention_factor, plain.attention_factor, 0);
}
END_TEST

START_TEST(resonance_errors_name_the_key)
{
    rope_freqs f;
    rl_error err = {0};
    ck_assert_int_eq(rope_freqs_compute(&(rope_desc){.head_dim = 8, .resonance = 1,
                                                     .resonance_scope = ROPE_RESONANCE_BELOW_TRAIN},
                                        &f, &err),
                     RL_ERR_ARG);
    ck_assert_ptr_nonnull(
        strstr(err.msg, "resonance_scope below_train needs original_max_position_embeddings"));
    ck_assert_int_eq(rope_freqs_compute(&(rope_desc){.head_dim = 8,
                                                     .resonance_scope = ROPE_RESONANCE_BELOW_TRAIN},
                                        &f, &err),
                     RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "resonance_scope applies with resonance: true only"));
    rope_desc d = {0};
    json_t *v = json_integer(1);
    ck_assert_int_eq(rope_desc_set_json(&d, "resonance", v, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "resonance must be true or false"));
    json_decref(v);
}
END_TEST


/* The scaling registry (pe/rope_scaling.h): the built-in ROPE_TYPE_*
 * constants are their entries' indices; every name and alias parses back
 * to its index; the listings (rope_type_list, the rope_type choices) hold
 * every name in registry order; each own key is one of the type's keys, in
 * the settable-key table, and its slot is unique across the registry. */
START_TEST(registry_indices_names_and_lists_agree)
{
    static const struct { int type; const char *name; } builtin[] = {
        {ROPE_TYPE_DEFAULT, "default"}, {ROPE_TYPE_LINEAR, "linear"}, {ROPE_TYPE_NTK, "ntk"},
        {ROPE_TYPE_DYNAMIC, "dynamic"}, {ROPE_TYPE_YARN, "yarn"}, {ROPE_TYPE_LLAMA3, "llama3"},
        {ROPE_TYPE_LONGROPE, "longrope"}, {ROPE_TYPE_PROPORTIONAL, "proportional"},
        {ROPE_TYPE_DYNAMIC_YARN, "dynamic_yarn"},
    };
    ck_assert_int_ge(ROPE_TYPE_COUNT, ROPE_TYPE_N_BUILTIN);
    for (size_t i = 0; i < RL_ARRAY_LEN(builtin); i++) {
        ck_assert_str_eq(rope_type_name(builtin[i].type), builtin[i].name);
        ck_assert_int_eq(rope_type_parse(builtin[i].name), builtin[i].type);
    }
    ck_assert_int_eq(rope_type_parse("dynamic-yarn"), ROPE_TYPE_DYNAMIC_YARN); /* jquesnelle/yarn */
    ck_assert_int_eq(rope_type_parse("bogus"), ROPE_TYPE_COUNT);
    ck_assert_ptr_null(rope_type_name(ROPE_TYPE_COUNT));
    ck_assert_ptr_null(rope_type_name(-1));
    char list[1024] = "", choices[1024] = "";
    size_t n_params;
    const rl_param *ps = rope_param_table(&n_params);
    int slot_owner[ROPE_MAX_SCALING_PARAMS];
    const char *slot_key[ROPE_MAX_SCALING_PARAMS] = {0};
    for (int k = 0; k < ROPE_MAX_SCALING_PARAMS; k++)
        slot_owner[k] = -1;
    for (int t = 0; t < ROPE_TYPE_COUNT; t++) {
        const rope_scaling *sc = rope_scaling_at(t);
        ck_assert_ptr_nonnull(sc);
        ck_assert_ptr_nonnull(sc->freqs);
        ck_assert_msg(sc->summary && sc->source && sc->keys && sc->required, "%s", sc->name);
        ck_assert_int_eq(rope_type_parse(sc->name), t);
        for (const char *const *a = sc->aliases; a && *a; a++)
            ck_assert_int_eq(rope_type_parse(*a), t);
        for (const char *const *k = sc->keys; *k; k++) {
            ck_assert_msg(rope_type_uses_key(t, *k), "%s: %s", sc->name, *k);
            ck_assert_msg(rl_param_find(ps, n_params, *k) >= 0, "%s: %s is settable", sc->name, *k);
        }
        for (size_t k = 0; k < sc->n_own_keys; k++) {
            const rope_scaling_key *ok = &sc->own_keys[k];
            ck_assert_msg(ok->slot >= 0 && ok->slot < ROPE_MAX_SCALING_PARAMS, "%s", ok->param.key);
            ck_assert_msg(rope_type_uses_key(t, ok->param.key), "%s: %s", sc->name, ok->param.key);
            ck_assert_msg(slot_key[ok->slot] == NULL || !strcmp(slot_key[ok->slot], ok->param.key),
                          "slot %d: %s (%s) and %s (%s)", ok->slot, ok->param.key, sc->name,
                          slot_key[ok->slot], rope_type_name(slot_owner[ok->slot]));
            slot_key[ok->slot] = ok->param.key;
            slot_owner[ok->slot] = t;
        }
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", t ? ", " : "", sc->name);
        snprintf(choices + strlen(choices), sizeof choices - strlen(choices), "%s%s", t ? "|" : "",
                 sc->name);
    }
    ck_assert_str_eq(rope_type_list(), list);
    ck_assert_str_eq(rope_type_choices(), choices);
    ck_assert_str_eq(ps[rl_param_find(ps, n_params, "rope_type")].choices, choices);
    ck_assert_str_eq(ps[rl_param_find(ps, n_params, "type")].choices, choices);
    /* a key no type reads applies to all; a scaling key only to its readers */
    ck_assert(rope_type_uses_key(ROPE_TYPE_LINEAR, "rope_theta"));
    ck_assert(!rope_type_uses_key(ROPE_TYPE_DEFAULT, "factor"));
}
END_TEST

/* Every registered type's example (what `ropelab check` runs on the GPU)
 * resolves at the check's shape (head_dim 128, rotary 64 unless the type
 * rotates the whole head) and gives finite, non-negative inv_freq. */
START_TEST(every_registered_example_resolves)
{
    for (int t = 0; t < ROPE_TYPE_COUNT; t++) {
        rope_desc d;
        rope_scaling_example(t, &d);
        d.head_dim = 128;
        d.rotary_dim = rope_scaling_at(t)->whole_head ? 0 : 64;
        rope_freqs f;
        rl_error err = {0};
        ck_assert_msg(rope_freqs_compute(&d, &f, &err) == RL_OK, "%s: %s", rope_type_name(t),
                      err.msg);
        for (uint32_t j = 0; j < f.n_pairs; j++)
            ck_assert_msg(isfinite(f.inv_freq[j]) && f.inv_freq[j] >= 0, "%s pair %u",
                          rope_type_name(t), j);
        ck_assert(isfinite(f.attention_factor) && f.attention_factor > 0);
        /* each required own key (a slot) left out of the example is refused
         * naming it */
        const rope_scaling *sc = rope_scaling_at(t);
        for (size_t k = 0; k < sc->n_own_keys; k++) {
            const rope_scaling_key *ok = &sc->own_keys[k];
            int req = 0;
            for (const char *const *r = sc->required; *r; r++)
                req |= !strcmp(*r, ok->param.key);
            if (!req)
                continue;
            rope_desc e = d;
            e.scaling_param[ok->slot] = 0;
            ck_assert_int_eq(rope_freqs_compute(&e, &f, &err), RL_ERR_ARG);
            ck_assert_msg(strstr(err.msg, ok->param.key), "%s: '%s' names no %s",
                          rope_type_name(t), err.msg, ok->param.key);
            ck_assert_str_eq(err.key, ok->param.key); /* as data, too */
        }
    }
}
END_TEST


/* Giraffe's truncated basis (Pal et al. 2023, arXiv:2308.10882, section
 * 3.3; abacusai/Long-Context interpolate.py truncate_frequency): at d = 128,
 * base 10000, theta_j = 10000^(-j/64), so theta_32 = 0.01 and theta_48 =
 * 0.001. With b = theta_32, a = theta_48 (the very values the default type
 * gives, so the boundaries are exact) and rho = 0.0005, by hand: pairs
 * 0..32 keep theta_j (32 sits on b: kept, f < b is false), 33..48 take rho
 * (48 sits on a: rho, f < a is false), 49..63 are 0. */
static int truncated_type(void)
{
    int t = rope_type_parse("truncated");
    ck_assert_int_lt(t, ROPE_TYPE_COUNT);
    return t;
}

static rl_status set_kv(rope_desc *d, const char *key, json_t *v, rl_error *err)
{
    rl_status st = rope_desc_set_json(d, key, v, err);
    json_decref(v);
    return st;
}

START_TEST(truncated_keeps_sets_rho_and_zeroes_by_the_authors_rule)
{
    rl_error err = {0};
    rope_desc p = {.head_dim = 128};
    rope_freqs plain;
    ck_assert_int_eq(rope_freqs_compute(&p, &plain, &err), RL_OK);
    const double b = plain.inv_freq[32], a = plain.inv_freq[48], rho = 0.0005;
    REL(b, 0.01, 1e-15);
    REL(a, 0.001, 1e-15);
    rope_desc d = {.head_dim = 128};
    ck_assert_int_eq(set_kv(&d, "rope_type", json_string("truncated"), &err), RL_OK);
    ck_assert_int_eq(set_kv(&d, "truncate_b", json_real(b), &err), RL_OK);
    ck_assert_int_eq(set_kv(&d, "truncate_a", json_real(a), &err), RL_OK);
    ck_assert_int_eq(set_kv(&d, "truncate_rho", json_real(rho), &err), RL_OK);
    rope_freqs f;
    ck_assert_msg(rope_freqs_compute(&d, &f, &err) == RL_OK, "%s", err.msg);
    ck_assert_int_eq(f.rope_type, truncated_type());
    ck_assert_uint_eq(f.n_pairs, 64);
    ck_assert_double_eq(f.attention_factor, 1.0);
    ck_assert_double_eq(f.theta, 10000.0);
    for (uint32_t j = 0; j < 64; j++) {
        double theta = exp(-(double)j / 64.0 * log(10000.0)); /* by hand, not pow */
        if (j <= 32)
            REL(f.inv_freq[j], theta, 1e-13);
        else if (j <= 48)
            ck_assert_msg(f.inv_freq[j] == rho, "pair %u: %.17g", j, f.inv_freq[j]);
        else
            ck_assert_msg(f.inv_freq[j] == 0.0, "pair %u: %.17g", j, f.inv_freq[j]);
    }
    /* the boundaries and their neighbours, named */
    ck_assert_double_eq(f.inv_freq[32], b); /* theta == b: kept */
    REL(f.inv_freq[31], 0.01 * pow(10.0, 1.0 / 16.0), 1e-13); /* 10000^(1/64) = 10^(1/16) */
    ck_assert_double_eq(f.inv_freq[33], rho);
    ck_assert_double_eq(f.inv_freq[48], rho); /* theta == a: rho (the code's f < a) */
    ck_assert_double_eq(f.inv_freq[49], 0.0);
    ck_assert_double_eq(f.scale[49], 0.0);    /* identity rotation: no scale */
    REL(f.scale[33], plain.inv_freq[33] / rho, 1e-15);
}
END_TEST

/* The authors' code divides by the scale (factor > 1) first and truncates
 * the scaled frequency: factor 4, b = 0.01, a = 0.001 -> theta_j/4 >= 0.01
 * iff 10000^(-j/64) >= 0.04 iff j <= 64 log10(25) / 4 = 22.37; theta_j/4 >=
 * 0.001 iff j <= 64 log10(250) / 4 = 38.37. Defaults a = b/8 and rho = b/16
 * (2pi/(16 T) with b = 2pi/T) when only truncate_b is given. */
START_TEST(truncated_scales_first_and_defaults_a_and_rho_from_b)
{
    rl_error err = {0};
    rope_desc d = {.head_dim = 128, .rope_type = truncated_type(), .factor = 4};
    ck_assert_int_eq(set_kv(&d, "truncate_b", json_real(0.01), &err), RL_OK);
    ck_assert_int_eq(set_kv(&d, "truncate_a", json_real(0.001), &err), RL_OK);
    ck_assert_int_eq(set_kv(&d, "truncate_rho", json_real(0.0002), &err), RL_OK);
    rope_freqs f;
    ck_assert_msg(rope_freqs_compute(&d, &f, &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq(f.factor, 4.0);
    for (uint32_t j = 0; j < 64; j++) {
        double t = exp(-(double)j / 64.0 * log(10000.0)) / 4.0;
        if (j <= 22)
            REL(f.inv_freq[j], t, 1e-13);
        else if (j <= 38)
            ck_assert_msg(f.inv_freq[j] == 0.0002, "pair %u: %.17g", j, f.inv_freq[j]);
        else
            ck_assert_msg(f.inv_freq[j] == 0.0, "pair %u: %.17g", j, f.inv_freq[j]);
    }
    /* only b = 2pi/512: a = 2pi/4096, rho = 2pi/8192; theta_j >= 2pi/512 iff
     * j <= 64 log10(512/2pi)/4 = 30.6; >= 2pi/4096 iff j <= 64 log10(4096/2pi)/4 = 45.1 */
    rope_desc e = {.head_dim = 128, .rope_type = truncated_type()};
    ck_assert_int_eq(set_kv(&e, "truncate_b", json_real(2 * M_PI / 512), &err), RL_OK);
    rope_desc r;
    ck_assert_int_eq(rope_desc_resolve(&e, &r, &err), RL_OK);
    ck_assert_int_eq(rope_freqs_compute(&e, &f, &err), RL_OK);
    for (uint32_t j = 0; j < 64; j++) {
        double t = exp(-(double)j / 64.0 * log(10000.0));
        if (j <= 30)
            REL(f.inv_freq[j], t, 1e-13);
        else if (j <= 45)
            REL(f.inv_freq[j], 2 * M_PI / 8192, 1e-15);
        else
            ck_assert_msg(f.inv_freq[j] == 0.0, "pair %u: %.17g", j, f.inv_freq[j]);
    }
    /* the settings round-trip through JSON (given keys only) */
    json_t *o = rope_desc_to_json(&e);
    ck_assert_ptr_nonnull(o);
    ck_assert_str_eq(json_string_value(json_object_get(o, "rope_type")), "truncated");
    REL(json_real_value(json_object_get(o, "truncate_b")), 2 * M_PI / 512, 1e-15);
    ck_assert_ptr_null(json_object_get(o, "truncate_a"));
    rope_desc back = {.head_dim = 128};
    ck_assert_int_eq(rope_desc_from_json(&back, o, &err), RL_OK);
    ck_assert_double_eq(back.scaling_param[1], e.scaling_param[1]);
    json_decref(o);
}
END_TEST

/* Every common key given a value other than its default survives
 * rope_desc_to_json -> rope_desc_from_json (numbers written as reals, as
 * the serialiser writes them): the one key table drives both
 * directions (an enum by its parse/name functions or by its choices'
 * index, a tri-state, a list, the mRoPE grid, a path). */
START_TEST(every_common_key_round_trips_through_json)
{
    static const char *given =
        "{\"rope_type\": \"yarn\", \"rope_theta\": 500000.0, \"rotary_dim\": 48, "
        "\"layout\": \"interleaved\", \"rotary_part\": \"last\", \"precision\": \"hf\", "
        "\"dtype\": \"bf16\", \"inv_freq_dtype\": \"bf16\", \"tf32\": true, \"trig\": \"device\", "
        "\"factor\": 4.0, \"original_max_position_embeddings\": 4096, "
        "\"max_position_embeddings\": 16384, \"seq_len\": 8192, \"beta_fast\": 16.0, "
        "\"beta_slow\": 2.0, \"mscale\": 0.5, \"mscale_all_dim\": 0.25, \"truncate\": false, "
        "\"attention_factor\": 1.25, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
        "\"short_factor\": [1.0, 2.0], \"long_factor\": [3.0, 4.0], "
        "\"dynamic_mode\": \"cache_consistent\", \"prompt_len\": 100, \"semantics\": \"vllm\", "
        "\"alpha\": 2.0, \"mixed_b\": 3.0, \"resonance\": true, \"resonance_scope\": \"below_train\", "
        "\"mrope_section\": [8, 8, 8], \"mrope_interleaved\": true, \"mrope_positions\": \"vl\", "
        "\"mrope_image_grid\": [1, 4, 6], \"mrope_text_before\": 3, \"spatial_merge_size\": 2, "
        "\"mrope_positions_path\": \"pos.npy\"}";
    json_error_t je;
    json_t *in = json_loads(given, 0, &je);
    ck_assert_ptr_nonnull(in);
    rope_desc a = {.head_dim = 64}, b = {.head_dim = 64};
    rl_error err = {0};
    ck_assert_msg(rope_desc_from_json(&a, in, &err) == RL_OK, "%s", err.msg);
    json_t *out = rope_desc_to_json(&a);
    ck_assert_msg(json_equal(in, out), "%s", json_dumps(out, JSON_SORT_KEYS));
    ck_assert_msg(rope_desc_from_json(&b, out, &err) == RL_OK, "%s", err.msg);
    json_t *again = rope_desc_to_json(&b);
    ck_assert(json_equal(out, again));
    json_decref(again);
    ck_assert_int_eq(a.rotary_part, ROPE_PART_LAST);
    ck_assert_int_eq(a.resonance_scope, ROPE_RESONANCE_BELOW_TRAIN);
    ck_assert_int_eq(a.mrope_positions, ROPE_MROPE_POS_VL);
    ck_assert_int_eq(a.truncate, -1);
    json_decref(in);
    json_decref(out);
}
END_TEST

START_TEST(truncated_errors_name_the_key)
{
    rl_error err = {0};
    rope_desc d = {.head_dim = 128, .rope_type = truncated_type()};
    rope_freqs f;
    ck_assert_int_eq(rope_freqs_compute(&d, &f, &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "truncated needs truncate_b"), "%s", err.msg);
    static const struct { const char *key, *json, *msg; } bad[] = {
        {"truncate_b", "-1", "truncate_b -1 must be a finite number >= 0"},
        {"truncate_b", "0", "truncate_b 0 must be > 0"},
        {"truncate_b", "\"x\"", "truncate_b must be a number"},
        {"truncate_a", "7", "truncate_a 7 is beyond the plausible limit"},
        {"truncate_rho", "true", "truncate_rho must be a number"},
    };
    for (size_t i = 0; i < RL_ARRAY_LEN(bad); i++) {
        json_error_t je;
        rope_desc e = {0};
        ck_assert_int_eq(set_kv(&e, bad[i].key, json_loads(bad[i].json, JSON_DECODE_ANY, &je),
                                &err), RL_ERR_ARG);
        ck_assert_msg(strstr(err.msg, bad[i].msg), "'%s' lacks '%s'", err.msg, bad[i].msg);
    }
    ck_assert_int_eq(set_kv(&d, "truncate_b", json_real(0.01), &err), RL_OK);
    ck_assert_int_eq(set_kv(&d, "truncate_a", json_real(0.02), &err), RL_OK);
    ck_assert_int_eq(rope_freqs_compute(&d, &f, &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "truncate_a 0.02 must be < truncate_b 0.01"), "%s", err.msg);
    d.scaling_param[0] = NAN; /* set directly, past the setter */
    ck_assert_int_eq(rope_freqs_compute(&d, &f, &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "truncate_a nan must be a finite number >= 0"), "%s", err.msg);
    /* the batch / --set rule: truncated's keys belong to truncated only, and
     * truncated reads factor but none of yarn's keys */
    int t = truncated_type();
    ck_assert(rope_type_uses_key(t, "truncate_b"));
    ck_assert(rope_type_uses_key(t, "truncate_a"));
    ck_assert(rope_type_uses_key(t, "truncate_rho"));
    ck_assert(rope_type_uses_key(t, "factor"));
    ck_assert(rope_type_uses_key(t, "rope_theta"));
    ck_assert(!rope_type_uses_key(t, "truncate")); /* yarn's */
    ck_assert(!rope_type_uses_key(t, "beta_fast"));
    for (int u = 0; u < ROPE_TYPE_COUNT; u++)
        if (u != t)
            ck_assert_msg(!rope_type_uses_key(u, "truncate_b"), "%s", rope_type_name(u));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rope_scaling");
    /* HF's scaling types other than YaRN: linear, NTK, dynamic, llama3, longrope, proportional */
    TCase *tc_types = tcase_create("types");
    tcase_add_test(tc_types, linear_divides_every_frequency_by_factor);
    tcase_add_test(tc_types, ntk_changes_the_base_by_factor_to_d_over_d_minus_2);
    tcase_add_test(tc_types, every_scaling_type_reads_its_factor);
    tcase_add_test(tc_types, dynamic_is_unscaled_up_to_max_position_and_ntk_beyond);
    tcase_add_test(tc_types, llama3_keeps_high_divides_low_and_smooths_between);
    tcase_add_test(tc_types, longrope_switches_to_long_factors_past_original_length);
    tcase_add_test(tc_types, proportional_rotates_a_proportion_with_head_dim_exponent);
    suite_add_tcase(s, tc_types);
    TCase *tc_yarn = tcase_create("yarn");
    tcase_add_test(tc_yarn, yarn_blends_between_the_correction_dims);
    tcase_add_test(tc_yarn, yarn_without_truncation_uses_the_raw_correction_dims);
    tcase_add_test(tc_yarn, yarn_attention_factor_from_mscale_pair_only);
    tcase_add_test(tc_yarn, yarn_factor_defaults_to_max_over_original);
    tcase_add_test(tc_yarn, yarn_matches_values_printed_by_transformers);
    suite_add_tcase(s, tc_yarn);
    /* settings (struct and JSON) and the errors that name their key */
    TCase *tc_settings = tcase_create("settings");
    tcase_add_test(tc_settings, bad_settings_are_errors_naming_the_key);
    tcase_add_test(tc_settings, json_settings_use_hf_names_and_name_bad_keys);
    suite_add_tcase(s, tc_settings);
    /* scaling by the run's length: dynamic YaRN, dynamic_mode cache_consistent */
    TCase *tc_length = tcase_create("length");
    tcase_add_test(tc_length, dynamic_yarn_scale_follows_length_over_original);
    tcase_add_test(tc_length, cache_consistent_rotates_each_position_with_its_own_length);
    tcase_add_test(tc_length, dynamic_mode_errors_name_the_key);
    suite_add_tcase(s, tc_length);
    /* semantics vllm: vLLM's readings of the scaling keys */
    TCase *tc_vllm = tcase_create("vllm");
    tcase_add_test(tc_vllm, vllm_alpha_is_hunyuans_fixed_base_change);
    tcase_add_test(tc_vllm, vllm_dynamic_is_static_at_max_position_times_factor);
    tcase_add_test(tc_vllm, vllm_ntk_divides_by_factor_to_2_j_plus_1_over_d);
    tcase_add_test(tc_vllm, vllm_ntk_mixed_b_blends_the_divisor_by_m_to_the_b);
    tcase_add_test(tc_vllm, vllm_semantics_keys_are_refused_where_they_do_not_apply);
    suite_add_tcase(s, tc_vllm);
    /* Resonance RoPE */
    TCase *tc_resonance = tcase_create("resonance");
    tcase_add_test(tc_resonance, resonance_rounds_every_pair_as_the_authors_code);
    tcase_add_test(tc_resonance, resonance_below_train_rounds_wavelengths_below_the_training_length);
    tcase_add_test(tc_resonance, resonance_applies_after_the_scaling_type);
    tcase_add_test(tc_resonance, resonance_errors_name_the_key);
    suite_add_tcase(s, tc_resonance);
    /* the scaling registry and its examples */
    TCase *tc_registry = tcase_create("registry");
    tcase_add_test(tc_registry, registry_indices_names_and_lists_agree);
    tcase_add_test(tc_registry, every_registered_example_resolves);
    suite_add_tcase(s, tc_registry);
    /* the truncated scaling type (a registered entry) */
    TCase *tc_truncated = tcase_create("truncated");
    tcase_add_test(tc_truncated, truncated_keeps_sets_rho_and_zeroes_by_the_authors_rule);
    tcase_add_test(tc_truncated, truncated_scales_first_and_defaults_a_and_rho_from_b);
    tcase_add_test(tc_truncated, truncated_errors_name_the_key);
    tcase_add_test(tc_truncated, every_common_key_round_trips_through_json);
    suite_add_tcase(s, tc_truncated);
    return rl_test_run(s);
}
