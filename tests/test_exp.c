/* Experiment kinds `invariance`, `coverage` and `interpolation` on small sizes, against
 * values derived by hand in each test (never the kinds' own output). The
 * invariance kind runs on the Vulkan device (lavapipe in CI). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"
#include "exp/exp.h"
#include "pe/pe.h"
/* one device for the suite (rl_test.h) */
#define RL_TEST_SHARED_GPU
#include "rl_test.h"

/* Data sources: 0 = smooth pseudo-random rows, 1 = q = e_0 and k = 0. */
static rl_status data_fn(void *user, char which, uint64_t tokens, float *out, rl_error *err)
{
    (void)err;
    const uint32_t *shape = user; /* {mode, heads, kv_heads, head_dim} */
    uint32_t heads = which == 'q' ? shape[1] : shape[2], hd = shape[3];
    uint64_t n = tokens * heads * hd;
    for (uint64_t i = 0; i < n; i++) {
        if (shape[0] == 1)
            out[i] = which == 'q' && i % hd == 0 ? 1.0f : 0.0f;
        else
            out[i] = (float)sin(1.37 * (double)i + (which == 'q' ? 0.3 : 1.1));
    }
    return RL_OK;
}

typedef struct fixture {
    exp_run run;
    json_t *enc, *params;
    uint32_t shape[4];
    char dir[64];
    exp_sink sink;
} fixture;

static void fx_init(fixture *f, const char *type, const char *enc_json, const char *params_json,
                    uint32_t head_dim, uint32_t train_len, uint32_t mode)
{
    memset(f, 0, sizeof *f);
    json_error_t je;
    f->enc = json_loads(enc_json, 0, &je);
    f->params = json_loads(params_json, 0, &je);
    ck_assert_ptr_nonnull(f->enc);
    ck_assert_ptr_nonnull(f->params);
    f->shape[0] = mode, f->shape[1] = 1, f->shape[2] = 1, f->shape[3] = head_dim;
    f->run = (exp_run){.id = "0000000000000000",
                       .model = {.head_dim = head_dim, .heads = 1, .kv_heads = 1,
                                 .train_len = train_len},
                       .encoding_name = type, .encoding_type = type, .encoding = f->enc,
                       .params = f->params, .seed = 1, .data = data_fn, .data_user = f->shape};
    snprintf(f->dir, sizeof f->dir, "/tmp/rl_exp_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(f->dir));
    rl_error err = {0};
    ck_assert_int_eq(exp_sink_init(&f->sink, f->dir, &err), RL_OK);
}

static void fx_free(fixture *f)
{
    exp_sink_free(&f->sink);
    json_decref(f->enc);
    json_decref(f->params);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    ck_assert_int_eq(system(cmd), 0);
}

static rl_status fx_run(fixture *f, const char *kind, rlvk_device *dev, rl_error *err)
{
    const exp_kind *k = exp_find(kind);
    ck_assert_ptr_nonnull(k);
    rl_status st = k->check(&f->run, err);
    if (st)
        return st;
    exp_ctx ctx = {.dev = dev};
    st = k->run(&f->run, &ctx, &f->sink, err);
    exp_sink_end_table(&f->sink, err);
    return st;
}

static double metric(const fixture *f, const char *name)
{
    const json_t *v = json_object_get(f->sink.metrics, name);
    ck_assert_msg(json_is_number(v), "metric %s missing", name);
    return json_number_value(v);
}

/* ---- coverage ------------------------------------------------------------ */

START_TEST(coverage_marks_no_pair_out_of_distribution_within_train_len)
{
    const char *lens[] = {"{\"eval_len\": 2048}", "{\"eval_len\": 1000}", "{\"eval_len\": 1}"};
    for (int i = 0; i < 3; i++) {
        fixture f;
        fx_init(&f, "rope", "{}", lens[i], 64, 2048, 0);
        rl_error err = {0};
        ck_assert_msg(fx_run(&f, "coverage", NULL, &err) == RL_OK, "%s", err.msg);
        ck_assert_double_eq(metric(&f, "ood_pairs"), 0);
        ck_assert_double_eq(metric(&f, "ood_fraction"), 0);
        fx_free(&f);
    }
}
END_TEST

/* Llama 2: base 10000, d = 128, train 4096. (d/2) log_10000(4096 / 2 pi) =
 * 64 * ln(651.90) / ln(10000) = 64 * 6.47990 / 9.21034 = 45.03, ceil 46,
 * d_extra = 92 (Liu et al. 2023 report 92 for LLaMA2). Pairs 46..63 have
 * wavelength 2 pi 10000^(2j/128) >= 2 pi 10000^(92/128) = 4711.7 > 4096 and
 * never turned fully in training: at 4x the length, 64 - 46 = 18 pairs are
 * out of distribution; Position Interpolation by 4 keeps them all inside. */
START_TEST(coverage_llama2_critical_dimension_and_ood_pairs_at_4x)
{
    fixture f;
    fx_init(&f, "rope", "{\"rope_theta\": 10000}", "{\"eval_len\": 16384}", 128, 4096, 0);
    rl_error err = {0};
    ck_assert_msg(fx_run(&f, "coverage", NULL, &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq(metric(&f, "critical_dim_formula"), 92);
    ck_assert_double_eq(metric(&f, "critical_dim_counted"), 92);
    ck_assert_double_eq(metric(&f, "ood_pairs"), 18);
    ck_assert_double_eq(metric(&f, "first_ood_pair"), 46);
    ck_assert_double_eq_tol(metric(&f, "ood_fraction"), 18.0 / 64.0, 1e-15);
    fx_free(&f);

    fx_init(&f, "linear", "{\"factor\": 4}", "{\"eval_len\": 16384}", 128, 4096, 0);
    ck_assert_msg(fx_run(&f, "coverage", NULL, &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq(metric(&f, "ood_pairs"), 0);
    fx_free(&f);
}
END_TEST

/* Liu et al. 2023, Theorem 3 eq. 16b: pre-trained with base 10000 at 4096
 * (d_extra = 92, above), fine-tuned with base beta at 4096: T_extra =
 * 2 pi beta^(92/128), written here as the closed form, not the kind's
 * frequencies. The break: pair j >= 46 (never turned fully in pre-training,
 * range 4096 10000^(-2j/128) < 2 pi) leaves that range at
 * E_j = 4096 (beta/10000)^(2j/128), smallest at j = 46. beta = 1e6:
 * T_extra = 2 pi 10^4.3125 = 129026.8, break 4096 10^1.4375 = 112165.7,
 * ratio 2 pi 10000^(92/128) / 4096 = 1.1503 for every beta >= 10000. Without
 * pretrain_base (base 10000 trained and used) the break is train_len itself;
 * Position Interpolation by 4 moves both by 4. beta = 500 < 10000: the
 * fine-tuning range 4096 theta_j >= 2 pi for every pair (largest wavelength
 * 2 pi 500^(126/128) = 2851 < 4096), so no pair leaves its range (-1). */
START_TEST(coverage_t_extra_and_first_out_of_range_length)
{
    const double two_pi = 6.283185307179586476925286766559;
    struct {
        const char *type, *enc, *params;
        double t_extra, ood_from, ood_pair;
    } c[] = {
        {"rope", "{\"rope_theta\": 1000000}", "{\"eval_len\": 131072, \"pretrain_base\": 10000}",
         two_pi * pow(1e6, 92.0 / 128), 4096 * pow(100, 92.0 / 128), 46},
        {"rope", "{\"rope_theta\": 40000}", "{\"eval_len\": 8192, \"pretrain_base\": 10000}",
         two_pi * pow(4e4, 92.0 / 128), 4096 * pow(4, 92.0 / 128), 46},
        {"rope", "{\"rope_theta\": 10000}", "{\"eval_len\": 8192}",
         two_pi * pow(1e4, 92.0 / 128), 4096, 46},
        {"linear", "{\"factor\": 4}", "{\"eval_len\": 8192}",
         4 * two_pi * pow(1e4, 92.0 / 128), 4 * 4096, 46},
        {"rope", "{\"rope_theta\": 500}", "{\"eval_len\": 131072, \"pretrain_base\": 10000}",
         two_pi * pow(500, 92.0 / 128), -1, -1},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        fixture f;
        fx_init(&f, c[i].type, c[i].enc, c[i].params, 128, 4096, 0);
        rl_error err = {0};
        ck_assert_msg(fx_run(&f, "coverage", NULL, &err) == RL_OK, "%s", err.msg);
        ck_assert_double_eq(metric(&f, "critical_dim_formula"), 92);
        ck_assert_double_eq_tol(metric(&f, "t_extra_tokens"), c[i].t_extra, 1e-9 * c[i].t_extra);
        ck_assert_double_eq_tol(metric(&f, "ood_from_tokens"), c[i].ood_from,
                                1e-9 * fabs(c[i].ood_from));
        ck_assert_double_eq(metric(&f, "ood_from_pair"), c[i].ood_pair);
        if (c[i].ood_from > 0)
            ck_assert_double_eq_tol(metric(&f, "t_extra_over_ood_from"),
                                    two_pi * pow(1e4, 92.0 / 128) / 4096, 1e-9);
        if (i == 0) {
            ck_assert_double_eq_tol(c[i].t_extra, 129026.8, 0.1);
            ck_assert_double_eq_tol(c[i].ood_from, 112165.7, 0.1);
            /* E_j < 131072 <=> 100^(j/64) < 32 <=> j < 64 log_100 32 = 48.2 */
            ck_assert_double_eq(metric(&f, "ood_pairs"), 3);
        }
        if (i == 4)
            ck_assert_double_eq(metric(&f, "ood_pairs"), 0);
        fx_free(&f);
    }
    fixture f;
    fx_init(&f, "rope", "{}", "{\"pretrain_base\": 0.5}", 128, 4096, 0);
    rl_error err = {0};
    ck_assert_int_ne(fx_run(&f, "coverage", NULL, &err), RL_OK);
    ck_assert_ptr_nonnull(strstr(err.msg, "pretrain_base"));
    fx_free(&f);
}
END_TEST

/* Column `col` of table `table` (dir/<table>.csv) of a finished run into
 * v[0..n), n the table's row count (at most max). */
static uint32_t table_col(const fixture *f, const char *table, const char *col, double *v,
                          uint32_t max)
{
    char path[128], line[4096];
    snprintf(path, sizeof path, "%s/%s.csv", f->dir, table);
    FILE *fp = fopen(path, "r");
    ck_assert_msg(fp != NULL, "no table %s", path);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, fp));
    int c = -1, i = 0;
    for (char *t = strtok(line, ",\n"); t; t = strtok(NULL, ",\n"), i++)
        if (strcmp(t, col) == 0)
            c = i;
    ck_assert_msg(c >= 0, "table %s has no column %s", table, col);
    uint32_t n = 0;
    while (n < max && fgets(line, sizeof line, fp)) {
        char *t = strtok(line, ",\n");
        for (i = 0; i < c && t; i++)
            t = strtok(NULL, ",\n");
        ck_assert_ptr_nonnull(t);
        v[n++] = strtod(t, NULL);
    }
    fclose(fp);
    return n;
}

/* The per-pair scale theta'_j / theta_j, derived by hand (d = 128, base
 * 10000, train_len 4096):
 * - Position Interpolation divides every frequency by s: 1/s on every pair
 *   (exactly for s = 4: dividing by a power of two is exact), and the
 *   wavelength is s times 2 pi 10000^(2j/128).
 * - YaRN x8 (beta_fast 32, beta_slow 1, truncated): the ramp runs from
 *   lo = floor(128 ln(4096 / (32 2 pi)) / (2 ln 10000)) = floor(20.94) = 20
 *   to hi = ceil(128 ln(4096 / (2 pi)) / (2 ln 10000)) = ceil(45.03) = 46,
 *   so pairs 0..20 keep scale 1 (the highest-frequency pair first), pairs
 *   46..63 get 1/8 and the ones between lie strictly inside; none of its
 *   pairs leaves its trained angle range at 8 x train_len (the pairs with
 *   wavelength > 4096, 46..63, are exactly the interpolated ones). */
START_TEST(coverage_scale_column_pi_and_yarn)
{
    const double pi = 3.14159265358979323846;
    double v[64], w[64];
    const char *pis[] = {"{\"factor\": 4}", "{\"factor\": 3}"};
    const double s[] = {4, 3};
    for (int k = 0; k < 2; k++) {
        fixture f;
        fx_init(&f, "linear", pis[k], "{\"eval_len\": 16384}", 128, 4096, 0);
        rl_error err = {0};
        ck_assert_msg(fx_run(&f, "coverage", NULL, &err) == RL_OK, "%s", err.msg);
        ck_assert_uint_eq(table_col(&f, "coverage", "frequency_ratio", v, 64), 64);
        ck_assert_uint_eq(table_col(&f, "coverage", "wavelength_tokens", w, 64), 64);
        for (int j = 0; j < 64; j++) {
            if (s[k] == 4)
                ck_assert_double_eq(v[j], 0.25);
            else
                ck_assert_double_eq_tol(v[j], 1.0 / 3.0, 1e-15);
            double lam = s[k] * 2 * pi * pow(10000.0, 2.0 * j / 128.0);
            ck_assert_double_eq_tol(w[j], lam, 1e-12 * lam);
        }
        fx_free(&f);
    }
    fixture f;
    fx_init(&f, "yarn", "{\"factor\": 8, \"original_max_position_embeddings\": 4096}",
            "{\"eval_len\": 32768}", 128, 4096, 0);
    rl_error err = {0};
    ck_assert_msg(fx_run(&f, "coverage", NULL, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(table_col(&f, "coverage", "frequency_ratio", v, 64), 64);
    for (int j = 0; j <= 20; j++)
        ck_assert_double_eq(v[j], 1.0);
    for (int j = 21; j < 46; j++) {
        ck_assert_double_lt(v[j], 1.0);
        ck_assert_double_gt(v[j], 0.125);
        ck_assert_double_lt(v[j], v[j - 1]);
    }
    for (int j = 46; j < 64; j++)
        ck_assert_double_eq_tol(v[j], 0.125, 1e-15);
    ck_assert_double_eq(metric(&f, "ood_pairs"), 0);
    fx_free(&f);
}
END_TEST

/* eval_len 0: the encoding's seq_len is the evaluation length. Dynamic NTK
 * with factor 4 at seq_len 16384 over M = train_len 4096 has base
 * 10000 (4 16384/4096 - 3)^(128/126) = 10000 13^(128/126), so pair j's
 * scale is 13^(-2j/126): 1/13 for j = 63, and for the pairs that never
 * turned in training (46..63) at most 13^(-92/126) = 0.154 < 1/4: none out
 * of range at 4 x train_len. Without a seq_len eval_len 0 is refused. */
START_TEST(coverage_eval_len_zero_takes_the_encoding_seq_len)
{
    fixture f;
    fx_init(&f, "dynamic",
            "{\"factor\": 4, \"seq_len\": 16384, \"max_position_embeddings\": 4096}",
            "{\"eval_len\": 0}", 128, 4096, 0);
    rl_error err = {0};
    ck_assert_msg(fx_run(&f, "coverage", NULL, &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq(metric(&f, "eval_len_tokens"), 16384);
    ck_assert_double_eq(metric(&f, "eval_over_train"), 4);
    ck_assert_double_eq(metric(&f, "ood_pairs"), 0);
    double v[64];
    ck_assert_uint_eq(table_col(&f, "coverage", "frequency_ratio", v, 64), 64);
    ck_assert_double_eq(v[0], 1.0);
    for (int j = 1; j < 64; j++)
        ck_assert_double_eq_tol(v[j], pow(13.0, -2.0 * j / 126.0), 1e-13);
    ck_assert_double_eq_tol(v[63], 1.0 / 13.0, 1e-15);
    fx_free(&f);

    fx_init(&f, "rope", "{}", "{\"eval_len\": 0}", 128, 4096, 0);
    ck_assert_int_eq(fx_run(&f, "coverage", NULL, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "sets none"));
    fx_free(&f);
}
END_TEST

START_TEST(coverage_refuses_non_rope_encodings)
{
    fixture f;
    fx_init(&f, "sinusoidal", "{}", "{\"eval_len\": 100}", 16, 64, 0);
    rl_error err = {0};
    ck_assert_int_ne(fx_run(&f, "coverage", NULL, &err), RL_OK);
    ck_assert_ptr_nonnull(strstr(err.msg, "RoPE-family"));
    fx_free(&f);
}
END_TEST

/* ---- typed parameters -------------------------------------------------------- */

START_TEST(kinds_registry_lists_every_kind_once)
{
    const char *want[] = {"decay", "precision", "invariance", "coverage", "interpolation",
                          "entropy", "retrieval", "content_retrieval", "distortion", "base_bound"};
    size_t n;
    const exp_kind *const *k = exp_kinds(&n);
    ck_assert_uint_eq(n, RL_ARRAY_LEN(want));
    for (size_t i = 0; i < n; i++) {
        ck_assert_str_eq(k[i]->name, want[i]);
        ck_assert_ptr_eq(exp_find(want[i]), k[i]);
    }
    ck_assert_str_eq(exp_kind_names(), "decay, precision, invariance, coverage, interpolation, "
                                       "entropy, retrieval, content_retrieval, distortion, base_bound");
}
END_TEST

START_TEST(hand_built_runs_see_the_kinds_defaults)
{
    /* No parameters given: decay's documented defaults max_distance 1024,
     * step 1 give rows r = 0..1024; coverage's eval_len 8192 at 4x a
     * train_len of 2048 leaves pairs out of distribution (with eval_len
     * read as 0, none would be). */
    fixture f;
    fx_init(&f, "rope", "{}", "{}", 64, 2048, 0);
    rl_error err = {0};
    ck_assert_msg(fx_run(&f, "decay", NULL, &err) == RL_OK, "%s", err.msg);
    const json_t *t = json_array_get(f.sink.tables, 0);
    ck_assert_int_eq(json_integer_value(json_object_get(t, "rows")), 1025);
    fx_free(&f);
    fx_init(&f, "rope", "{}", "{}", 64, 2048, 0);
    ck_assert_msg(fx_run(&f, "coverage", NULL, &err) == RL_OK, "%s", err.msg);
    ck_assert_double_gt(metric(&f, "ood_pairs"), 0);
    fx_free(&f);
    /* a given value of the wrong type or outside the range is refused by the
     * kind itself, naming the key */
    fx_init(&f, "rope", "{}", "{\"step\": \"2\"}", 64, 2048, 0);
    ck_assert_int_eq(fx_run(&f, "decay", NULL, &err), RL_ERR_ARG);
    ck_assert_str_eq(err.msg, "decay: step must be an integer");
    fx_free(&f);
    fx_init(&f, "rope", "{}", "{\"step\": 0}", 64, 2048, 0);
    ck_assert_int_eq(fx_run(&f, "decay", NULL, &err), RL_ERR_ARG);
    ck_assert_str_eq(err.msg, "decay: step 0 is below the minimum 1");
    fx_free(&f);
}
END_TEST

START_TEST(direction_dependent_biases_take_the_pass_direction)
{
    /* ALiBi's default form is causal (-m(i - j)) and T5's bidirectional: in
     * a bidirectional pass the former would reward future keys, in a causal
     * pass the latter would use encoder buckets. Each pass gets the form of
     * its own direction; a batch value that disagrees is refused. */
    const char *fams[] = {"alibi", "t5"};
    for (int f = 0; f < 2; f++) {
        for (int causal = 0; causal < 2; causal++) {
            fixture fx;
            fx_init(&fx, fams[f], "{}", "{}", 64, 2048, 0);
            pe_encoding *e = NULL;
            rl_error err = {0};
            ck_assert_msg(exp_encoding_for_pass(&fx.run, 64, causal, &e, &err) == RL_OK, "%s",
                          err.msg);
            ck_assert_int_eq(json_is_true(json_object_get(pe_encoding_params(e), "bidirectional")),
                             !causal);
            /* bias of a key 3 positions in the future: 0 in the causal form
             * (masked anyway), -3 m in the bidirectional form, never +3 m */
            if (f == 0)
                ck_assert(pe_bias_ref(e, 0, 0, 0, 10, 13, NULL, NULL) <= 0 || causal);
            pe_encoding_destroy(e);
            fx_free(&fx);
        }
        fixture fx;
        fx_init(&fx, fams[f], "{\"bidirectional\": false}", "{}", 64, 2048, 0);
        pe_encoding *e = NULL;
        rl_error err = {0};
        ck_assert_int_eq(exp_encoding_for_pass(&fx.run, 64, 0, &e, &err), RL_ERR_ARG);
        ck_assert_ptr_nonnull(strstr(err.msg, "bidirectional is given but this kind runs "
                                              "bidirectional attention here"));
        ck_assert_int_eq(exp_find("entropy")->check(&fx.run, &err), RL_ERR_ARG);
        fx_free(&fx);
    }
}
END_TEST

/* ---- invariance ------------------------------------------------------------ */

static const json_t *find_verification(const fixture *f, const char *needle)
{
    size_t i;
    const json_t *v;
    json_array_foreach(f->sink.verification, i, v)
    {
        const char *w = json_string_value(json_object_get(v, "what"));
        if (w && strstr(w, needle))
            return v;
    }
    return NULL;
}

/* RoPE: R(m)^T R(n) = R(n - m) (Su et al. 2021 eq. 16), so in double the
 * score changes only by rounding: with shifts up to 2^12 and angles below
 * 2^13 rad, each angle's rounding is below 2^13 * 2^-53 ~ 1e-12 of the score
 * scale in the worst case (and far less on average) -> <= 1e-12 relative. */
START_TEST(invariance_rope_double_is_rounding_level_and_device_is_verified)
{
    rl_gpu g;
    rl_gpu_open(&g);
    fixture f;
    fx_init(&f, "rope", "{}", "{\"pairs\": 4, \"m\": 64, \"n\": 5, \"max_shift_log2\": 12}", 32,
            64, 0);
    rl_error err = {0};
    ck_assert_msg(fx_run(&f, "invariance", &g.dev, &err) == RL_OK, "%s", err.msg);
    ck_assert_double_le(metric(&f, "reference_max_rel_change"), 1e-12);
    ck_assert_double_le(metric(&f, "vector_worst_error_over_bound"), 1.0);
    const json_t *v = find_verification(&f, "device vs double reference");
    ck_assert_ptr_nonnull(v);
    ck_assert(json_is_true(json_object_get(v, "pass")));
    ck_assert_ptr_nonnull(find_verification(&f, "relative encoding"));
    fx_free(&f);
    rl_gpu_close(&g);
}
END_TEST

/* dynamic_mode cache_consistent: token p is rotated with its own length
 * max(p+1, P), so shifting both tokens changes their scales and the score
 * by design: the kind treats it as not relative (no invariance claim) and
 * passes, and the double reference's change is far above rounding; the same
 * dynamic NTK with recompute (one length for all) stays relative. */
START_TEST(invariance_cache_consistent_is_not_a_relative_rotation)
{
    rl_gpu g;
    rl_gpu_open(&g);
    fixture f;
    fx_init(&f, "dynamic", "{\"factor\": 2, \"max_position_embeddings\": 256, "
            "\"dynamic_mode\": \"cache_consistent\", \"prompt_len\": 64}",
            "{\"pairs\": 4, \"m\": 64, \"n\": 5, \"max_shift_log2\": 12}", 32, 64, 0);
    rl_error err = {0};
    ck_assert_msg(fx_run(&f, "invariance", &g.dev, &err) == RL_OK, "%s", err.msg);
    ck_assert_double_gt(metric(&f, "reference_max_rel_change"), 1e-3);
    ck_assert_ptr_null(find_verification(&f, "relative encoding"));
    fx_free(&f);
    fx_init(&f, "dynamic", "{\"factor\": 2, \"max_position_embeddings\": 256}",
            "{\"pairs\": 4, \"m\": 64, \"n\": 5, \"max_shift_log2\": 12}", 32, 64, 0);
    ck_assert_msg(fx_run(&f, "invariance", &g.dev, &err) == RL_OK, "%s", err.msg);
    ck_assert_double_le(metric(&f, "reference_max_rel_change"), 1e-12);
    ck_assert_ptr_nonnull(find_verification(&f, "relative encoding"));
    fx_free(&f);
    rl_gpu_close(&g);
}
END_TEST

/* Sinusoidal (interleaved, dim 0 = sin(p * base^0) = sin p), alpha 1, with
 * q = e_0 and k = 0 and m = n = 0: <q + P(m+t), P(n+t)> = sin(t) + <P(t),
 * P(t)>, and <P(t), P(t)> = d/2 for every t, so the change against t = 0 is
 * |sin t|: for t in {1, 2, 4} the largest is |sin 2| = 0.909297426825682 —
 * order one, where RoPE would give 0. nope: identity, exactly 0. */
START_TEST(invariance_sinusoidal_shows_its_cross_term_nope_is_exact)
{
    rl_gpu g;
    rl_gpu_open(&g);
    fixture f;
    fx_init(&f, "sinusoidal", "{}", "{\"pairs\": 1, \"m\": 0, \"n\": 0, \"max_shift_log2\": 2}",
            16, 64, 1);
    rl_error err = {0};
    ck_assert_msg(fx_run(&f, "invariance", &g.dev, &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq_tol(metric(&f, "reference_max_abs_change"), 0.909297426825682, 1e-12);
    /* device: fp32 sin/cos within 2^-11 + angle rounding, times d = 16
     * terms of the score, well below 0.05 */
    ck_assert_double_eq_tol(metric(&f, "device_max_abs_change"), 0.909297426825682, 0.05);
    ck_assert_ptr_null(find_verification(&f, "relative encoding"));
    fx_free(&f);

    fx_init(&f, "nope", "{}", "{\"pairs\": 3, \"max_shift_log2\": 20}", 16, 64, 0);
    ck_assert_msg(fx_run(&f, "invariance", &g.dev, &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq(metric(&f, "reference_max_abs_change"), 0);
    ck_assert_double_eq(metric(&f, "device_max_abs_change"), 0);
    fx_free(&f);
    rl_gpu_close(&g);
}
END_TEST

/* xpos is relative: q' k' = sum_j zeta_j^((m-n)/s) <R((m-n) theta_j) q_j, k_j>, so shifting
 * both positions leaves the reference score at rounding level — only when keys are
 * transformed as keys (as queries the product would carry zeta^((m+n+2t)/s): a relative
 * change of 1 - zeta_0^(2048/4096) = 0.47 at t = 1024). */
START_TEST(invariance_xpos_is_relative_with_keys_as_keys)
{
    rl_gpu g;
    rl_gpu_open(&g);
    fixture f;
    fx_init(&f, "xpos", "{\"scale_base\": 4096}",
            "{\"pairs\": 2, \"m\": 64, \"n\": 0, \"max_shift_log2\": 10}", 16, 64, 0);
    rl_error err = {0};
    ck_assert_msg(fx_run(&f, "invariance", &g.dev, &err) == RL_OK, "%s", err.msg);
    ck_assert(metric(&f, "reference_max_rel_change") < 1e-12);
    ck_assert(metric(&f, "device_max_rel_change") < 0.05);
    ck_assert(metric(&f, "vector_worst_error_over_bound") <= 1.0);
    fx_free(&f);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(invariance_refuses_logit_bias_encodings)
{
    fixture f;
    fx_init(&f, "alibi", "{}", "{\"pairs\": 1, \"max_shift_log2\": 2}", 16, 64, 0);
    rl_error err = {0};
    ck_assert_int_ne(exp_find("invariance")->check(&f.run, &err), RL_OK);
    ck_assert_ptr_nonnull(strstr(err.msg, "logits"));
    fx_free(&f);
}
END_TEST

/* ---- interpolation ----------------------------------------------------------- */

/* head_dim 2: one pair, theta_0 = base^0 = 1, a(s) = c cos s - d sin s.
 * The test draws the kind's documented targets (rl_rng, seed + draw *
 * 0x9E3779B97F4A7C15, stream "interpolation/targets", 2u - 1) and solves
 * the 2 x 2 normal equations by Cramer's rule — an independent solver —
 * then evaluates the fit at half-integers inside [0, L] and at integers in
 * (L, 2L]. The problem is well conditioned (s = 0..8 spans more than a
 * turn), so both solutions agree to rounding. */
START_TEST(interpolation_matches_a_hand_solved_one_pair_fit)
{
    fixture f;
    fx_init(&f, "rope", "{}", "{\"eval_factor\": 2, \"step\": 1, \"draw\": 3, \"rcond_exp\": 0}",
            2, 8, 0);
    rl_error err = {0};
    ck_assert_msg(fx_run(&f, "interpolation", NULL, &err) == RL_OK, "%s", err.msg);
    rl_rng rng;
    rl_rng_seed(&rng, 1 + 3 * 0x9E3779B97F4A7C15ull, "interpolation/targets");
    double cc = 0, ss = 0, cs = 0, cy = 0, sy = 0;
    for (int s = 0; s <= 8; s++) {
        double y = 2.0 * rl_rng_uniform(&rng) - 1.0, c = cos(s), sn = -sin(s);
        cc += c * c, ss += sn * sn, cs += c * sn, cy += c * y, sy += sn * y;
    }
    double det = cc * ss - cs * cs, hc = (cy * ss - sy * cs) / det, hs = (cc * sy - cs * cy) / det;
    double interp = 0, extrap = 0;
    for (int s = 0; s < 8; s++)
        interp = fmax(interp, fabs(hc * cos(s + 0.5) - hs * sin(s + 0.5)));
    for (int s = 9; s <= 16; s++)
        extrap = fmax(extrap, fabs(hc * cos(s) - hs * sin(s)));
    ck_assert_double_eq_tol(metric(&f, "interpolation_max_abs"), interp, 1e-12);
    ck_assert_double_eq_tol(metric(&f, "extrapolation_max_abs"), extrap, 1e-12);
    ck_assert_double_eq(metric(&f, "rank"), 2);
    fx_free(&f);
}
END_TEST

/* ---- base_bound ------------------------------------------------------------ */

/* head_dim 4, base 100: theta_0 = 1, theta_1 = 100^(-1/2) = 0.1, so
 * <R_r 1, R_0 1> = 2 (cos r + cos 0.1 r): r = 0, 1, 2 give 4, 3.07, 1.13,
 * r = 3 gives 2 (cos 3 + cos 0.3) = 2 (-0.98999 + 0.95534) = -0.0693, the
 * first negative (0.017 per dim from 0, far beyond fp32 rounding). With
 * max_distance 2 the scan never sees it. Half the dims unrotated (partial
 * rotary 0.5): 2 + 2 cos r >= 0 for every r (Su 2024): never negative in
 * double (cos r = -1 needs r an odd multiple of pi, never an integer), but
 * near-multiples (r = 355: 2 + 2 cos r = 9.1e-10) are below fp32's
 * resolution, so there only the reference's sign is asserted; the kind
 * accepts a device sign that differs within the score's error bound. */
START_TEST(base_bound_finds_the_hand_computed_first_negative_distance)
{
    rl_gpu g;
    rl_gpu_open(&g);
    fixture f;
    fx_init(&f, "rope", "{\"rope_theta\": 100}", "{\"max_distance\": 100}", 4, 64, 0);
    rl_error err = {0};
    ck_assert_msg(fx_run(&f, "base_bound", &g.dev, &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq(metric(&f, "first_negative_distance"), 3);
    ck_assert_double_eq(metric(&f, "reference_first_negative_distance"), 3);
    ck_assert_double_eq(metric(&f, "nonnegative_to_max_distance"), 0);
    /* the minimum over the scanned r includes r = 3 */
    ck_assert_double_le(metric(&f, "min_score_reference"), 2 * (cos(3.0) + cos(0.3)) / 4 + 1e-15);
    ck_assert_double_le(metric(&f, "vector_worst_error_over_bound"), 1.0);
    ck_assert_double_le(metric(&f, "score_worst_error_over_bound"), 1.0);
    const json_t *v = find_verification(&f, "sign of the score");
    ck_assert_ptr_nonnull(v);
    ck_assert(json_is_true(json_object_get(v, "pass")));
    fx_free(&f);

    fx_init(&f, "rope", "{\"rope_theta\": 100}", "{\"max_distance\": 2}", 4, 64, 0);
    ck_assert_msg(fx_run(&f, "base_bound", &g.dev, &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq(metric(&f, "nonnegative_to_max_distance"), 1);
    ck_assert_double_eq(metric(&f, "first_negative_distance"), 3);
    ck_assert_double_eq(metric(&f, "scanned_distances"), 3);
    fx_free(&f);

    fx_init(&f, "rope", "{\"rope_theta\": 100, \"partial_rotary_factor\": 0.5}",
            "{\"max_distance\": 1000}", 4, 64, 0);
    ck_assert_msg(fx_run(&f, "base_bound", &g.dev, &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq(metric(&f, "reference_first_negative_distance"), 1001);
    fx_free(&f);

    /* table mode over more chunks (8192 rows) than one device state takes
     * table launches (16): the kind renews the state */
    fx_init(&f, "rope",
            "{\"rope_theta\": 100, \"partial_rotary_factor\": 0.5, \"precision\": \"table\"}",
            "{\"max_distance\": 140000}", 4, 64, 0);
    ck_assert_msg(fx_run(&f, "base_bound", &g.dev, &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq(metric(&f, "reference_first_negative_distance"), 140001);
    ck_assert_double_eq(metric(&f, "scanned_distances"), 140001);
    v = find_verification(&f, "sign of the score");
    ck_assert_ptr_nonnull(v);
    ck_assert(json_is_true(json_object_get(v, "pass")));
    fx_free(&f);

    fx_init(&f, "sinusoidal", "{}", "{\"max_distance\": 10}", 4, 64, 0);
    ck_assert_int_ne(fx_run(&f, "base_bound", &g.dev, &err), RL_OK);
    ck_assert_ptr_nonnull(strstr(err.msg, "RoPE-family"));
    fx_free(&f);
    rl_gpu_close(&g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("exp");
    TCase *c = tcase_create("coverage");
    tcase_add_test(c, coverage_marks_no_pair_out_of_distribution_within_train_len);
    tcase_add_test(c, coverage_llama2_critical_dimension_and_ood_pairs_at_4x);
    tcase_add_test(c, coverage_t_extra_and_first_out_of_range_length);
    tcase_add_test(c, coverage_refuses_non_rope_encodings);
    tcase_add_test(c, coverage_scale_column_pi_and_yarn);
    tcase_add_test(c, coverage_eval_len_zero_takes_the_encoding_seq_len);
    tcase_add_test(c, interpolation_matches_a_hand_solved_one_pair_fit);
    suite_add_tcase(s, c);
    TCase *tp = tcase_create("params");
    tcase_add_test(tp, kinds_registry_lists_every_kind_once);
    tcase_add_test(tp, hand_built_runs_see_the_kinds_defaults);
    tcase_add_test(tp, direction_dependent_biases_take_the_pass_direction);
    suite_add_tcase(s, tp);
    TCase *i = tcase_create("invariance");
    tcase_add_test(i, invariance_refuses_logit_bias_encodings);
    tcase_add_test(i, invariance_rope_double_is_rounding_level_and_device_is_verified);
    tcase_add_test(i, invariance_sinusoidal_shows_its_cross_term_nope_is_exact);
    tcase_add_test(i, invariance_xpos_is_relative_with_keys_as_keys);
    tcase_add_test(i, base_bound_finds_the_hand_computed_first_negative_distance);
    tcase_add_test(i, invariance_cache_consistent_is_not_a_relative_rotation);
    suite_add_tcase(s, i);
    rl_test_require_vulkan("exp");
    return rl_test_run(s);
}
