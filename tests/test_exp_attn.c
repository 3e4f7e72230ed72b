/* exp/exp_attn.c: attention of a registry encoding, verified end to end. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_sample.h"
#include "core/rl_util.h"
#include "exp/exp.h"
#include "pe/pe.h"
/* one device for the suite (rl_test.h) */
#define RL_TEST_SHARED_GPU
#include "rl_test.h"

static pe_encoding *make(const char *name, const char *params, const pe_shape *s)
{
    json_error_t je;
    json_t *p = params ? json_loads(params, 0, &je) : NULL;
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_msg(pe_encoding_create(name, p, s, &e, &err) == RL_OK, "%s", err.msg);
    json_decref(p);
    return e;
}

static const struct {
    const char *name, *params;
} encodings[] = {
    {"rope", "{\"rope_type\": \"yarn\", \"factor\": 4, \"original_max_position_embeddings\": 32}"},
    {"alibi", NULL},
    {"t5", NULL},
    {"sinusoidal", NULL},
    {"xl", NULL},
    {"nope", NULL},
    /* keys decay the other way (zeta^-n): the K transform must run as K */
    {"xpos", "{\"scale_base\": 64}"},
    {"rope", "{\"rope_type\": \"linear\", \"factor\": 2, \"resonance\": true, "
             "\"original_max_position_embeddings\": 32}"},
};

START_TEST(encoding_attention_is_verified_end_to_end)
{
    enum { T = 40, H = 2, KV = 1, D = 32 };
    rl_gpu g;
    rl_gpu_open(&g);
    pe_shape s = {.head_dim = D, .heads = H, .kv_heads = KV, .seed = 3, .max_positions = 1000 + T};
    pe_encoding *e = make(encodings[_i].name, encodings[_i].params, &s);
    float *q = malloc(T * H * D * sizeof *q), *k = malloc(T * KV * D * sizeof *k);
    uint32_t pos[T];
    rl_rng rng;
    rl_rng_seed(&rng, 5, "test/exp_attn");
    for (int i = 0; i < T * H * D; i++)
        q[i] = (float)rl_rng_normal(&rng);
    for (int i = 0; i < T * KV * D; i++)
        k[i] = (float)rl_rng_normal(&rng);
    for (int t = 0; t < T; t++)
        pos[t] = 1000 + (uint32_t)t;
    float stats[T * H * RL_ATTN_NSTAT];
    attn_engine eng;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &eng, &err) == RL_OK);
    exp_attn_io io = {.tokens = T, .q = q, .k = k, .pos = pos, .causal = 1,
                      .flags = ATTN_ENTROPY | ATTN_ARGMAX};
    attn_outputs out = {.stats = stats};
    exp_attn_result r;
    ck_assert_msg(exp_attn_run(&g.dev, &eng, e, &io, &out, &r, &err) == RL_OK, "%s", err.msg);
    ck_assert_msg(r.pass, "%s: worst %s error/bound %g, q %g k %g", encodings[_i].name, r.worst,
                  r.attn_stats.worst_ratio, r.vec_q.worst_ratio, r.vec_k.worst_ratio);
    ck_assert_uint_eq(r.attn.verify.rows, 32 * H);
    if (_i == 0) {
        /* YaRN factor 4: attention factor 0.1 ln 4 + 1 multiplies cos and sin
         * in the rotated vectors, so logits already scale by its square and
         * the kernel scale stays 1/sqrt(d). */
        ck_assert_double_eq_tol(r.scale, 1.0 / sqrt(D), 1e-6);
        /* the transformed q is checked element-wise on the sampled rows */
        ck_assert_uint_eq(r.vec_q.n, 32 * H * D);
    }
    /* Entropy of a causal row lies in [0, ln(keys)]. */
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            float ent = stats[(t * H + h) * RL_ATTN_NSTAT + RL_ATTN_S_ENTROPY];
            ck_assert(ent >= -1e-5f && ent <= logf((float)(t + 1)) + 1e-4f);
        }
    attn_engine_destroy(&eng);
    pe_encoding_destroy(e);
    free(q);
    free(k);
    rl_gpu_close(&g);
}
END_TEST

/* Sampled query rows through the encoding's device transform (exp_attn_io
 * rows): at N = 4096 (YaRN factor 4 on RoPE, 2 heads, GQA), one full pass,
 * then 200 seeded plans per design, each a sampled pass of S = 256 rows:
 * every sampled row's statistics equal the full pass's row bit for bit (the
 * gathered Q rotates at its own positions as in place), each pass verifies
 * against the double reference, and the 95 % interval of the mean entropy
 * (rl_rows_estimate over the rows) covers the full pass's mean. A coverage
 * count is binomial: with exactly 95 % coverage, 40 plans give >= 38 only
 * with probability 0.68 (so "38 of 40" is no test), 200 plans have sd
 * 3.1 plans, and >= 180 (90 %, 3.2 sd below 190) is what a sound interval
 * passes and one that under-covers (a missing finite-population or
 * stratum weight: 80 % or less) fails. The counts of the first 40 plans and
 * of all 200 are printed. Designs: bidirectional uniform, causal log_groups
 * (entropy grows as ln(i + 1): the strata carry it), causal uniform. */
static const struct {
    int causal;
    rl_rows_scheme scheme;
} cover_cases[] = {{0, RL_ROWS_UNIFORM}, {1, RL_ROWS_LOG_GROUPS}, {1, RL_ROWS_UNIFORM}};

START_TEST(sampled_rows_interval_covers_the_full_pass)
{
    enum { T = 4096, H = 2, KV = 1, D = 32, S = 256, TRIALS = 200, FIRST = 40 };
    rl_gpu g;
    rl_gpu_open(&g);
    pe_shape sh = {.head_dim = D, .heads = H, .kv_heads = KV, .seed = 3, .max_positions = T};
    pe_encoding *e = make("rope", "{\"rope_type\": \"yarn\", \"factor\": 4, "
                                  "\"original_max_position_embeddings\": 1024}", &sh);
    float *q = malloc((size_t)T * H * D * sizeof *q), *k = malloc((size_t)T * KV * D * sizeof *k);
    float *full = malloc((size_t)T * H * RL_ATTN_NSTAT * sizeof *full);
    float *part = malloc((size_t)S * H * RL_ATTN_NSTAT * sizeof *part);
    double *y = malloc(T * sizeof *y);
    rl_rng rng;
    rl_rng_seed(&rng, 9, "test/sampled");
    /* a shared direction in q and k: logits with structure, not pure noise */
    for (int i = 0; i < T * H * D; i++)
        q[i] = (float)(rl_rng_normal(&rng) + (i % D == 0 ? 2.0 : 0.0));
    for (int i = 0; i < T * KV * D; i++)
        k[i] = (float)(rl_rng_normal(&rng) + (i % D == 0 ? 2.0 : 0.0));
    attn_engine eng;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &eng, &err) == RL_OK);
    int c = _i;
    exp_attn_io io = {.tokens = T, .q = q, .k = k, .causal = cover_cases[c].causal,
                      .flags = ATTN_ENTROPY | ATTN_ARGMAX};
    attn_outputs out = {.stats = full};
    exp_attn_result r;
    ck_assert_msg(exp_attn_run(&g.dev, &eng, e, &io, &out, &r, &err) == RL_OK, "%s", err.msg);
    ck_assert(r.pass);
    double truth = 0;
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++)
            truth += full[(t * H + h) * RL_ATTN_NSTAT + RL_ATTN_S_ENTROPY];
    truth /= (double)T * H;
    int covered = 0, covered_first = 0;
    double width = 0;
    for (int trial = 0; trial < TRIALS; trial++) {
        rl_rows_plan plan;
        ck_assert_msg(rl_rows_plan_make(cover_cases[c].scheme, T, S, 1000 + trial, &plan, &err) ==
                          RL_OK, "%s", err.msg);
        ck_assert_uint_eq(plan.n_rows, S);
        exp_attn_io is = io;
        is.rows = plan.rows;
        is.n_rows = plan.n_rows;
        attn_outputs os = {.stats = part};
        ck_assert_msg(exp_attn_run(&g.dev, &eng, e, &is, &os, &r, &err) == RL_OK, "%s", err.msg);
        ck_assert_msg(r.pass, "trial %d: sampled pass failed its verification (%s)", trial,
                      r.worst);
        ck_assert_uint_eq(r.attn.verify.rows, 32 * H);
        for (uint32_t s = 0; s < plan.n_rows; s++) {
            ck_assert_msg(memcmp(part + (size_t)s * H * RL_ATTN_NSTAT,
                                 full + (size_t)plan.rows[s] * H * RL_ATTN_NSTAT,
                                 H * RL_ATTN_NSTAT * sizeof *part) == 0,
                          "trial %d: row %u (token %u) differs from the full pass", trial, s,
                          plan.rows[s]);
            y[s] = 0;
            for (int h = 0; h < H; h++)
                y[s] += part[(s * H + h) * RL_ATTN_NSTAT + RL_ATTN_S_ENTROPY] / H;
        }
        rl_estimate est;
        rl_rows_estimate(&plan, y, 0, T, &est);
        ck_assert(est.lo < est.hi && !est.exact && est.n == S);
        covered += est.lo <= truth && truth <= est.hi;
        if (trial == FIRST - 1)
            covered_first = covered;
        width += (est.hi - est.lo) / TRIALS;
        rl_rows_plan_free(&plan);
    }
    fprintf(stderr, "sampled rows (%s, %s): the 95 %% interval covered the full pass's mean "
            "entropy %.6f in %d of the first %d plans, %d of %d (mean width %.4f nats)\n",
            cover_cases[c].causal ? "causal" : "bidirectional",
            rl_rows_scheme_name(cover_cases[c].scheme), truth, covered_first, FIRST, covered,
            TRIALS, width);
    ck_assert_int_ge(covered, 180);
    attn_engine_destroy(&eng);
    pe_encoding_destroy(e);
    free(q), free(k), free(full), free(part), free(y);
    rl_gpu_close(&g);
}
END_TEST

/* K beyond one storage binding: the transforms and the attention bind it a
 * window at a time. (a) Forced windows (test_window) at 1000 tokens give the
 * bits of the whole-buffer run; (b) 300000 tokens x 128 dims (153.6 MB of K,
 * over lavapipe's 128 MiB maxStorageBufferRange; skipped where one binding
 * holds it) run with 64 sampled query rows and verify against the double
 * reference. */
START_TEST(keys_beyond_one_binding_are_bound_in_windows)
{
    rl_gpu g;
    rl_gpu_open(&g);
    attn_engine eng;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &eng, &err) == RL_OK);
    {
        enum { T = 1000, H = 2, KV = 1, D = 32 };
        pe_shape sh = {.head_dim = D, .heads = H, .kv_heads = KV, .seed = 3, .max_positions = T};
        pe_encoding *e = make("rope", NULL, &sh);
        float *q = malloc(T * H * D * sizeof *q), *k = malloc(T * KV * D * sizeof *k);
        rl_rng rng;
        rl_rng_seed(&rng, 4, "test/windows");
        for (int i = 0; i < T * H * D; i++)
            q[i] = (float)rl_rng_normal(&rng);
        for (int i = 0; i < T * KV * D; i++)
            k[i] = (float)rl_rng_normal(&rng);
        float *a = malloc(T * H * RL_ATTN_NSTAT * sizeof *a), *b = malloc(T * H * RL_ATTN_NSTAT * sizeof *b);
        exp_attn_io io = {.tokens = T, .q = q, .k = k, .causal = 1, .flags = ATTN_ENTROPY | ATTN_ARGMAX};
        exp_attn_result r;
        attn_outputs oa = {.stats = a}, ob = {.stats = b};
        ck_assert_msg(exp_attn_run(&g.dev, &eng, e, &io, &oa, &r, &err) == RL_OK, "%s", err.msg);
        ck_assert(r.pass && r.attn.key_windows == 1);
        io.test_window = 200;
        ck_assert_msg(exp_attn_run(&g.dev, &eng, e, &io, &ob, &r, &err) == RL_OK, "%s", err.msg);
        ck_assert_msg(r.pass && r.attn.key_windows >= 3, "pass %d windows %u worst %s q %d k %d", r.pass, r.attn.key_windows, r.worst, r.vec_q.pass, r.vec_k.pass);
        ck_assert(memcmp(a, b, T * H * RL_ATTN_NSTAT * sizeof *a) == 0);
        free(a), free(b), free(q), free(k);
        pe_encoding_destroy(e);
    }
    {
        enum { H = 1, KV = 1, D = 128, S = 64 };
        const uint64_t T = 300000;
        if (T * KV * D * 4 <= g.dev.info.max_storage_buffer_range) {
            fprintf(stderr, "K of %llu bytes fits one binding on %s: part (b) not needed\n",
                    (unsigned long long)(T * KV * D * 4), g.dev.info.name);
        } else {
            pe_shape sh = {.head_dim = D, .heads = H, .kv_heads = KV, .seed = 3,
                           .max_positions = T};
            pe_encoding *e = make("rope", "{\"rope_type\": \"yarn\", \"factor\": 8, "
                                          "\"original_max_position_embeddings\": 32768}", &sh);
            float *q = malloc(T * H * D * sizeof *q), *k = malloc(T * KV * D * sizeof *k);
            ck_assert(q && k);
            rl_rng rng;
            rl_rng_seed(&rng, 6, "test/windows-large");
            for (uint64_t i = 0; i < T * H * D; i++)
                q[i] = (float)rl_rng_normal(&rng);
            for (uint64_t i = 0; i < T * KV * D; i++)
                k[i] = (float)rl_rng_normal(&rng);
            uint32_t rows[S];
            for (int r = 0; r < S; r++)
                rows[r] = (uint32_t)((T - 1) * (uint64_t)r / (S - 1));
            float stats[S * H * RL_ATTN_NSTAT];
            exp_attn_io io = {.tokens = T, .q = q, .k = k, .causal = 1, .flags = ATTN_ENTROPY,
                              .rows = rows, .n_rows = S};
            attn_outputs o = {.stats = stats};
            exp_attn_result r;
            ck_assert_msg(exp_attn_run(&g.dev, &eng, e, &io, &o, &r, &err) == RL_OK, "%s",
                          err.msg);
            ck_assert_msg(r.pass, "worst %s error/bound %g", r.worst, r.attn_stats.worst_ratio);
            ck_assert_uint_ge(r.attn.key_windows, 2);
            ck_assert_uint_eq(r.vec_k.n, T * KV * D); /* every transformed key checked */
            fprintf(stderr, "K beyond one binding: %llu tokens in %u windows, GPU %.0f ms\n",
                    (unsigned long long)T, r.attn.key_windows, r.attn.gpu_ms);
            free(q), free(k);
            pe_encoding_destroy(e);
        }
    }
    attn_engine_destroy(&eng);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(paired_encoding_against_itself_has_zero_kl)
{
    enum { T = 33, H = 2, KV = 2, D = 16 };
    rl_gpu g;
    rl_gpu_open(&g);
    pe_shape s = {.head_dim = D, .heads = H, .kv_heads = KV};
    pe_encoding *a = make("rope", NULL, &s), *b = make("rope", NULL, &s);
    float q[T * H * D], k[T * KV * D];
    rl_rng rng;
    rl_rng_seed(&rng, 9, "test/exp_attn/kl");
    for (int i = 0; i < T * H * D; i++)
        q[i] = (float)rl_rng_normal(&rng);
    for (int i = 0; i < T * KV * D; i++)
        k[i] = (float)rl_rng_normal(&rng);
    float stats[T * H * RL_ATTN_NSTAT];
    attn_engine eng;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &eng, &err) == RL_OK);
    exp_attn_io io = {.tokens = T, .q = q, .k = k, .causal = 0, .paired = b};
    attn_outputs out = {.stats = stats};
    exp_attn_result r;
    ck_assert_msg(exp_attn_run(&g.dev, &eng, a, &io, &out, &r, &err) == RL_OK, "%s", err.msg);
    ck_assert(r.pass);
    /* Identical definitions: the kernel computes the same logits twice, so
     * KL(p || p) is 0 up to fp32 rounding of two identical sums. */
    for (int i = 0; i < T * H; i++)
        ck_assert_float_eq_tol(stats[i * RL_ATTN_NSTAT + RL_ATTN_S_KL], 0.0f, 1e-6f);
    attn_engine_destroy(&eng);
    pe_encoding_destroy(a);
    pe_encoding_destroy(b);
    rl_gpu_close(&g);
}
END_TEST

/* Raw Q/K (+ positions) go up once, nothing crosses between transform and
 * attention, and after the one command buffer exactly this comes back: the
 * statistics (+ the output's guard), the sampled query rows of the
 * transformed Q and the whole transformed K, each with its guard words —
 * less than a full Q + K round trip; no transformed tensor goes up again.
 * Numbers and tolerances equal those of the old round trip (device
 * transform downloaded, then uploaded to attn_run). Also: table-mode RoPE,
 * whose table is prepared before recording. */
START_TEST(attention_path_keeps_transformed_qk_on_the_device)
{
    enum { T = 1024, H = 2, KV = 1, D = 32, ROWS = 32 };
    static const char *const params[2] = {NULL, "{\"precision\": \"table\"}"};
    rl_gpu g;
    rl_gpu_open(&g);
    pe_shape s = {.head_dim = D, .heads = H, .kv_heads = KV, .max_positions = T};
    float *q = malloc(T * H * D * sizeof *q), *k = malloc(T * KV * D * sizeof *k);
    float *qt = malloc(T * H * D * sizeof *qt), *kt = malloc(T * KV * D * sizeof *kt);
    float *stats = malloc(T * H * RL_ATTN_NSTAT * sizeof *stats);
    float *stats_rt = malloc(T * H * RL_ATTN_NSTAT * sizeof *stats_rt);
    uint32_t *pos = malloc(T * sizeof *pos);
    rl_rng rng;
    rl_rng_seed(&rng, 21, "test/exp_attn/resident");
    for (int i = 0; i < T * H * D; i++)
        q[i] = (float)rl_rng_normal(&rng);
    for (int i = 0; i < T * KV * D; i++)
        k[i] = (float)rl_rng_normal(&rng);
    for (int t = 0; t < T; t++)
        pos[t] = (uint32_t)t;
    attn_engine eng;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &eng, &err) == RL_OK);
    for (int m = 0; m < 2; m++) {
        pe_encoding *e = make("rope", params[m], &s);
        exp_attn_io io = {.tokens = T, .q = q, .k = k, .causal = 1, .flags = ATTN_ENTROPY};
        attn_outputs out = {.stats = stats};
        exp_attn_result r;
        uint64_t up = g.dev.bytes_uploaded, down = g.dev.bytes_downloaded;
        ck_assert_msg(exp_attn_run(&g.dev, &eng, e, &io, &out, &r, &err) == RL_OK, "%s", err.msg);
        ck_assert_msg(r.pass, "worst %s %g", r.worst, r.attn_stats.worst_ratio);
        uint64_t got_down = g.dev.bytes_downloaded - down, got_up = g.dev.bytes_uploaded - up;
        uint64_t stats_b = (uint64_t)T * H * RL_ATTN_NSTAT * 4;
        uint64_t want_down = stats_b + VF_GUARD_BYTES          /* statistics + guard */
                             + (uint64_t)ROWS * H * D * 4    /* sampled rows of Q' */
                             + (uint64_t)T * KV * D * 4      /* all of K' */
                             + 2 * VF_GUARD_BYTES;           /* Q', K' guards */
        ck_assert_uint_eq(got_down, want_down);
        /* less than the round trip's download of Q' and K' */
        ck_assert_uint_lt(got_down - stats_b, (uint64_t)T * (H + KV) * D * 4);
        /* raw Q and K once, their guards, positions+targets, frequencies
         * (table mode: one cos/sin table of T x D floats per transform) */
        ck_assert_uint_ge(got_up, (uint64_t)T * (H + KV) * D * 4);
        ck_assert_uint_lt(got_up, (uint64_t)T * (H + KV) * D * 4 + 2 * T * 4 +
                                      (m ? 2 * (uint64_t)T * D * 4 : 0) + 4096);
        ck_assert_uint_eq(r.vec_q.n, ROWS * H * D);
        ck_assert_uint_eq(r.vec_k.n, T * KV * D);
        ck_assert(r.vec_q.pass && r.vec_k.pass);

        /* The round trip it replaces: transform, download, attn_run. */
        pe_vec_gpu gq, gk;
        ck_assert(pe_vec_gpu_create(&g.dev, e, H, &gq, &err) == RL_OK);
        ck_assert(pe_vec_gpu_create(&g.dev, e, KV, &gk, &err) == RL_OK);
        ck_assert(pe_vec_gpu_apply(&g.dev, &gq, q, pos, T, qt, NULL, &err) == RL_OK);
        ck_assert(pe_vec_gpu_apply(&g.dev, &gk, k, pos, T, kt, NULL, &err) == RL_OK);
        attn_inputs in = {.q = qt, .k = kt};
        attn_outputs out_rt = {.stats = stats_rt};
        attn_result ar;
        ck_assert_msg(attn_run(&eng, &r.desc, &in, &out_rt, &ar, &err) == RL_OK, "%s", err.msg);
        ck_assert_mem_eq(stats, stats_rt, (size_t)T * H * RL_ATTN_NSTAT * sizeof *stats);
        /* same reference operands, so the same errors and exact-operand
         * tolerances */
        ck_assert_mem_eq(r.attn.verify.tol, ar.verify.tol, sizeof ar.verify.tol);
        ck_assert_mem_eq(r.attn.verify.max_abs, ar.verify.max_abs, sizeof ar.verify.max_abs);
        pe_vec_gpu_destroy(&gk);
        pe_vec_gpu_destroy(&gq);
        pe_encoding_destroy(e);
    }
    attn_engine_destroy(&eng);
    free(pos);
    free(stats_rt);
    free(stats);
    free(kt);
    free(qt);
    free(k);
    free(q);
    rl_gpu_close(&g);
}
END_TEST

/* A device transform that is not the reference's (rope_theta 10000 on the
 * device, 10500 in the reference) fails the element-wise check of the
 * downloaded transformed q (sampled rows) and k, and with it the run; the
 * attention itself, judged on the operands the device read, passes. */
START_TEST(verification_catches_a_wrong_device_transform)
{
    enum { T = 256, H = 1, KV = 1, D = 32 };
    rl_gpu g;
    rl_gpu_open(&g);
    pe_shape s = {.head_dim = D, .heads = H, .kv_heads = KV, .max_positions = 4096 + T};
    pe_encoding *dev_e = make("rope", "{\"rope_theta\": 10000}", &s);
    pe_encoding *ref_e = make("rope", "{\"rope_theta\": 10500}", &s);
    float *q = malloc(T * H * D * sizeof *q), *k = malloc(T * KV * D * sizeof *k);
    float *stats = malloc(T * H * RL_ATTN_NSTAT * sizeof *stats);
    uint32_t pos[T];
    rl_rng rng;
    rl_rng_seed(&rng, 23, "test/exp_attn/wrong");
    for (int i = 0; i < T * H * D; i++)
        q[i] = (float)rl_rng_normal(&rng);
    for (int i = 0; i < T * KV * D; i++)
        k[i] = (float)rl_rng_normal(&rng);
    for (int t = 0; t < T; t++)
        pos[t] = 4096 + (uint32_t)t;
    attn_engine eng;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &eng, &err) == RL_OK);
    exp_attn_io io = {.tokens = T, .q = q, .k = k, .pos = pos, .causal = 0,
                      .flags = ATTN_ENTROPY | ATTN_ARGMAX};
    attn_outputs out = {.stats = stats};
    exp_attn_result r;
    ck_assert_msg(exp_attn_run(&g.dev, &eng, dev_e, &io, &out, &r, &err) == RL_OK, "%s", err.msg);
    ck_assert(r.pass);
    io.ref_encoding = ref_e;
    ck_assert_msg(exp_attn_run(&g.dev, &eng, dev_e, &io, &out, &r, &err) == RL_OK, "%s", err.msg);
    ck_assert(!r.pass);
    ck_assert(!r.vec_q.pass && !r.vec_k.pass);
    ck_assert(r.vec_q.n_over > 0 && r.vec_k.n_over > 0);
    ck_assert_msg(r.attn_stats.pass, "worst %s ratio %g", r.worst, r.attn_stats.worst_ratio);
    attn_engine_destroy(&eng);
    pe_encoding_destroy(ref_e);
    pe_encoding_destroy(dev_e);
    free(stats);
    free(k);
    free(q);
    rl_gpu_close(&g);
}
END_TEST

/* YaRN x4 at position 0 (no rotation): q' = af q, k' = af k. q = e_0,
 * k_0 = 2 e_0, k_1 = 0, d = 4: logits af^2 * 2 / sqrt(4) = af^2 and 0, so
 * lse = ln(1 + e^{af^2}) with the factor (applied once, not af^4) and
 * ln(1 + e^1) without it. fp32: a few ulp of values near 1.6. */
START_TEST(attention_factor_scales_logits_by_its_square_once)
{
    enum { T = 2, D = 4 };
    rl_gpu g;
    rl_gpu_open(&g);
    pe_shape s = {.head_dim = D, .heads = 1, .kv_heads = 1, .max_positions = 8};
    pe_encoding *e = make("rope", "{\"rope_type\": \"yarn\", \"factor\": 4, "
                                  "\"original_max_position_embeddings\": 8}", &s);
    float q[T * D] = {1, 0, 0, 0, 1, 0, 0, 0}, k[T * D] = {2, 0, 0, 0, 0, 0, 0, 0};
    uint32_t pos[T] = {0, 0};
    float stats[T * RL_ATTN_NSTAT];
    attn_engine eng;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &eng, &err) == RL_OK);
    double af = 0.1 * log(4.0) + 1.0;
    for (int nf = 0; nf <= 1; nf++) {
        exp_attn_io io = {.tokens = T, .q = q, .k = k, .pos = pos, .no_attention_factor = nf};
        attn_outputs out = {.stats = stats};
        exp_attn_result r;
        ck_assert_msg(exp_attn_run(&g.dev, &eng, e, &io, &out, &r, &err) == RL_OK, "%s",
                      err.msg);
        ck_assert(r.pass);
        double l0 = nf ? 1.0 : af * af;
        ck_assert_double_eq_tol(stats[RL_ATTN_S_MAX], l0, 1e-6);
        ck_assert_double_eq_tol(stats[RL_ATTN_S_LSE], log(1.0 + exp(l0)), 1e-6);
    }
    attn_engine_destroy(&eng);
    pe_encoding_destroy(e);
    rl_gpu_close(&g);
}
END_TEST

/* ---- attention kinds (entropy, retrieval, distortion) through a sink ---- */

/* Data modes: 0 = smooth pseudo-random rows; 1 = q as 0, every k row the
 * same vector; 2 = q all zero, k as 0. */
static rl_status kdata_fn(void *user, char which, uint64_t tokens, float *out, rl_error *err)
{
    (void)err;
    const uint32_t *shape = user; /* {mode, heads, kv_heads, head_dim} */
    uint32_t heads = which == 'q' ? shape[1] : shape[2], hd = shape[3];
    uint64_t n = tokens * heads * hd;
    for (uint64_t i = 0; i < n; i++) {
        double v = sin(1.37 * (double)i + (which == 'q' ? 0.3 : 1.1));
        if (shape[0] == 1 && which == 'k')
            v = cos(0.7 * (double)(i % hd));
        if (shape[0] == 2 && which == 'q')
            v = 0;
        out[i] = (float)v;
    }
    return RL_OK;
}

typedef struct kfix {
    exp_run run;
    json_t *enc, *params;
    uint32_t shape[4];
    char dir[64];
    exp_sink sink;
    rl_gpu g;
} kfix;

static void kf_init(kfix *f, const char *type, const char *enc, const char *params,
                    uint32_t heads, uint32_t kv_heads, uint32_t train_len, uint32_t mode)
{
    memset(f, 0, sizeof *f);
    json_error_t je;
    f->enc = json_loads(enc, 0, &je);
    f->params = json_loads(params, 0, &je);
    ck_assert_ptr_nonnull(f->enc);
    ck_assert_ptr_nonnull(f->params);
    f->shape[0] = mode, f->shape[1] = heads, f->shape[2] = kv_heads, f->shape[3] = 16;
    f->run = (exp_run){.id = "0000000000000000",
                       .model = {.head_dim = 16, .heads = heads, .kv_heads = kv_heads,
                                 .train_len = train_len},
                       .encoding_name = type, .encoding_type = type, .encoding = f->enc,
                       .params = f->params, .seed = 1, .data = kdata_fn, .data_user = f->shape};
    snprintf(f->dir, sizeof f->dir, "/tmp/rl_expattn_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(f->dir));
    rl_error err = {0};
    ck_assert_int_eq(exp_sink_init(&f->sink, f->dir, &err), RL_OK);
    rl_gpu_open(&f->g);
}

/* Checks and runs (the kind itself applies its defaults, as in real runs). */
static rl_status kf_run(kfix *f, const char *kind, rl_error *err)
{
    const exp_kind *k = exp_find(kind);
    ck_assert_ptr_nonnull(k);
    rl_status st = k->check(&f->run, err);
    if (st)
        return st;
    exp_ctx ctx = {.dev = &f->g.dev};
    st = k->run(&f->run, &ctx, &f->sink, err);
    exp_sink_end_table(&f->sink, err);
    return st;
}

static void kf_free(kfix *f)
{
    rl_gpu_close(&f->g);
    exp_sink_free(&f->sink);
    json_decref(f->enc);
    json_decref(f->params);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    ck_assert_int_eq(system(cmd), 0);
}

static double kmetric(const kfix *f, const char *name)
{
    const json_t *v = json_object_get(f->sink.metrics, name);
    ck_assert_msg(json_is_number(v), "metric %s missing", name);
    return json_number_value(v);
}

/* Every verification record passed, and one names `stat`. */
static void assert_verified(const kfix *f, const char *stat)
{
    size_t i, n = json_array_size(f->sink.verification), named = 0;
    json_t *v;
    ck_assert_uint_gt(n, 0);
    json_array_foreach(f->sink.verification, i, v) {
        const char *what = json_string_value(json_object_get(v, "what"));
        ck_assert_msg(json_is_true(json_object_get(v, "pass")), "%s failed", what);
        double e = json_number_value(json_object_get(v, "error_at_worst")),
               b = json_number_value(json_object_get(v, "bound_at_worst"));
        ck_assert_msg(e >= 0 && e <= b, "%s: error %g bound %g", what, e, b);
        if (what && strstr(what, stat))
            named++;
    }
    ck_assert_msg(named > 0, "no verification record of %s", stat);
    ck_assert_int_eq(f->sink.failed_verification, 0);
}

/* All keys equal (nope, no bias): every logit of a row is the same, p is
 * uniform over the N keys and H = ln N. fp32: the kernel's normaliser sums N
 * exact ones (exact below 2^24) and log adds <= 2^-21, so 1e-5 is ample. */
START_TEST(entropy_of_identical_keys_is_ln_n)
{
    kfix f;
    kf_init(&f, "nope", "{}", "{\"min_len\": 8, \"max_len\": 96}", 2, 1, 64, 1);
    rl_error err = {0};
    ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq_tol(kmetric(&f, "entropy_at_max_len"), log(96.0), 1e-5);
    ck_assert_double_eq_tol(kmetric(&f, "ln_max_len"), log(96.0), 1e-12);
    /* lengths 8 and 96: (ln 96 - ln 8) / ln(96 / 8) = 1 */
    ck_assert_double_eq_tol(kmetric(&f, "entropy_growth_per_ln_n"), 1.0, 1e-5);
    ck_assert_double_eq(kmetric(&f, "attention_factor"), 1.0);
    assert_verified(&f, "entropy");
    kf_free(&f);
}
END_TEST

/* Zero queries: every logit is 0 whatever the rotation or the scale, so
 * YaRN's entropy is ln N with and without its temperature; the temperature
 * itself is 0.1 ln 4 + 1 for factor 4 and the logit scale af^2 / sqrt(16). */
START_TEST(entropy_of_zero_queries_is_ln_n_with_and_without_the_factor)
{
    kfix f;
    kf_init(&f, "yarn", "{\"factor\": 4, \"original_max_position_embeddings\": 32}",
            "{\"min_len\": 16, \"max_len\": 64}", 1, 1, 32, 2);
    rl_error err = {0};
    ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
    double af = 0.1 * log(4.0) + 1.0;
    ck_assert_double_eq_tol(kmetric(&f, "attention_factor"), af, 1e-12);
    ck_assert_double_eq_tol(kmetric(&f, "logit_scale"), af * af / 4.0, 1e-12);
    ck_assert_double_eq_tol(kmetric(&f, "entropy_at_max_len"), log(64.0), 1e-5);
    ck_assert_double_eq_tol(kmetric(&f, "entropy_no_factor_at_max_len"), log(64.0), 1e-5);
    assert_verified(&f, "entropy");
    kf_free(&f);
}
END_TEST

/* Needle = query scaled by 4, no distractors (zero keys): the needle's logit
 * is 4 |q|^2 / sqrt(d) > 0 and every other logit is exactly 0, so the
 * argmax is the needle for every scored query, at every distance and length
 * (2 query heads share one kv head: the group's heads share the query). */
/* Row of the entropy_length table at length N: entropy_nats, or
 * entropy_no_factor_nats with nf. */
static double entropy_col(const kfix *f, uint64_t N, int nf)
{
    char path[128], line[256];
    snprintf(path, sizeof path, "%s/entropy_length.csv", f->dir);
    FILE *fp = fopen(path, "r");
    ck_assert_ptr_nonnull(fp);
    double v = NAN;
    while (fgets(line, sizeof line, fp)) {
        double n, h, hn;
        if (sscanf(line, "%lf,%lf,%lf", &n, &h, &hn) == 3 && n == (double)N)
            v = nf ? hn : h;
    }
    fclose(fp);
    ck_assert_msg(!isnan(v), "no entropy row for N=%llu", (unsigned long long)N);
    return v;
}

static double entropy_at(const kfix *f, uint64_t N) { return entropy_col(f, N, 0); }

/* Dynamic NTK rescales only once the sequence outgrows
 * max_position_embeddings M (HF recomputes from the current length): at
 * N = 16 <= M = 32 the entropy sweep must see plain RoPE's frequencies (the
 * same number on the same data), at N = 128 > M the scaled ones. */
START_TEST(entropy_sweep_recomputes_dynamic_scaling_per_length)
{
    kfix a, b;
    kf_init(&a, "dynamic", "{\"factor\": 4, \"max_position_embeddings\": 32}",
            "{\"min_len\": 16, \"max_len\": 128}", 1, 1, 32, 0);
    kf_init(&b, "rope", "{}", "{\"min_len\": 16, \"max_len\": 128}", 1, 1, 32, 0);
    rl_error err = {0};
    ck_assert_msg(kf_run(&a, "entropy", &err) == RL_OK, "%s", err.msg);
    ck_assert_msg(kf_run(&b, "entropy", &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq(entropy_at(&a, 16), entropy_at(&b, 16));
    ck_assert(fabs(entropy_at(&a, 128) - entropy_at(&b, 128)) > 1e-4);
    kf_free(&a);
    kf_free(&b);
}
END_TEST

/* The largest bound among the run's entropy verifications (device entropy vs
 * the double reference on the sampled rows, attn_tol.c). */
static double entropy_bound(const kfix *f)
{
    size_t i;
    json_t *v;
    double b = 0;
    json_array_foreach(f->sink.verification, i, v) {
        const char *what = json_string_value(json_object_get(v, "what"));
        if (what && strstr(what, ": entropy of "))
            b = fmax(b, json_number_value(json_object_get(v, "bound_at_worst")));
    }
    ck_assert(b > 0);
    return b;
}

/* dynamic_mode cache_consistent (HF generation with a KV cache, #25104):
 * the token at p keeps the rotation of the step that computed it, length
 * max(p+1, P). Default P = N (pure prefill): every token has length N, the
 * recompute rotation, so the whole sweep agrees with recompute. P = 16:
 * at N = 16 still a prefill (agree); at N = 64 and 128 the tokens past 16
 * keep s = max(1, (p+1)/32) where recompute gives every token s = N/32:
 * the entropies differ by far more than the verified tolerance. */
START_TEST(entropy_cache_consistent_differs_from_recompute_only_past_the_prompt)
{
    static const char *const enc[4] = {
        "{\"original_max_position_embeddings\": 32}",
        "{\"original_max_position_embeddings\": 32, \"dynamic_mode\": \"cache_consistent\"}",
        "{\"original_max_position_embeddings\": 32, \"dynamic_mode\": \"cache_consistent\", "
        "\"prompt_len\": 16}",
        "{\"original_max_position_embeddings\": 32, \"dynamic_mode\": \"cache_consistent\", "
        "\"prompt_len\": 16, \"attention_factor\": 1}",
    };
    kfix f[4];
    rl_error err = {0};
    for (int i = 0; i < 4; i++) {
        kf_init(&f[i], "dynamic_yarn", enc[i], "{\"min_len\": 16, \"max_len\": 128}", 2, 1, 32, 0);
        ck_assert_msg(kf_run(&f[i], "entropy", &err) == RL_OK, "%s", err.msg);
        assert_verified(&f[i], "entropy");
    }
    static const uint64_t ns[] = {16, 32, 64, 128};
    for (size_t i = 0; i < RL_ARRAY_LEN(ns); i++) {
        double tol = entropy_bound(&f[0]) + entropy_bound(&f[1]);
        double d = fabs(entropy_at(&f[0], ns[i]) - entropy_at(&f[1], ns[i]));
        ck_assert_msg(d <= tol, "N=%llu: prefill differs from recompute by %g (tol %g)",
                      (unsigned long long)ns[i], d, tol);
    }
    double tol = entropy_bound(&f[0]) + entropy_bound(&f[2]);
    ck_assert_msg(fabs(entropy_at(&f[0], 16) - entropy_at(&f[2], 16)) <= tol, "N=16");
    for (size_t i = 2; i < RL_ARRAY_LEN(ns); i++) {
        double d = fabs(entropy_at(&f[0], ns[i]) - entropy_at(&f[2], ns[i]));
        ck_assert_msg(d > 10 * tol, "N=%llu: cache_consistent P=16 within %g of recompute (tol %g)",
                      (unsigned long long)ns[i], d, tol);
    }
    /* "Without the factor" of a per-token factor is every token at factor 1
     * (no one logit scale undoes factors that differ per token): the same
     * as the run with attention_factor 1 given. */
    tol = entropy_bound(&f[2]) + entropy_bound(&f[3]);
    for (size_t i = 0; i < RL_ARRAY_LEN(ns); i++)
        ck_assert_msg(fabs(entropy_col(&f[2], ns[i], 1) - entropy_at(&f[3], ns[i])) <= tol,
                      "N=%llu: no-factor %.9g vs attention_factor 1 %.9g",
                      (unsigned long long)ns[i], entropy_col(&f[2], ns[i], 1),
                      entropy_at(&f[3], ns[i]));
    for (int i = 0; i < 4; i++)
        kf_free(&f[i]);
}
END_TEST

/* T5 scores are not scaled by 1/sqrt(d) (HF T5Attention; Mesh TensorFlow
 * folds it into the weights): its attention runs at logit scale 1. */
START_TEST(t5_attention_is_unscaled_as_in_the_model)
{
    kfix f;
    kf_init(&f, "t5", "{}", "{\"min_len\": 16, \"max_len\": 32}", 1, 1, 32, 0);
    rl_error err = {0};
    ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq(kmetric(&f, "logit_scale"), 1.0);
    kf_free(&f);
    kf_init(&f, "alibi", "{}", "{\"min_len\": 16, \"max_len\": 32}", 1, 1, 32, 0);
    ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq_tol(kmetric(&f, "logit_scale"), 0.25, 1e-7); /* 1/sqrt(16), fp32 */
    kf_free(&f);
}
END_TEST

/* Positional retrieval (exp_retrieval.c) of one encoding: head_dim 64, 4
 * independent kv heads, train_len 32, lengths 64 .. 1024, 8 candidates.
 * out: accuracy, lo95, hi95 within train_len, then beyond it. */
static void posret(const char *type, const char *enc, const char *extra, double out[6])
{
    char params[256];
    snprintf(params, sizeof params, "{\"min_len\": 64, \"max_len\": 1024%s}", extra);
    kfix f;
    kf_init(&f, type, enc, params, 4, 4, 32, 0);
    f.run.model.head_dim = 64; /* the kind makes its own q/k: no data source */
    rl_error err = {0};
    ck_assert_msg(kf_run(&f, "retrieval", &err) == RL_OK, "%s %s: %s", type, extra, err.msg);
    assert_verified(&f, "target_p");
    const char *names[6] = {"accuracy_within_train", "accuracy_within_train_lo95",
                            "accuracy_within_train_hi95", "accuracy_beyond_train",
                            "accuracy_beyond_train_lo95", "accuracy_beyond_train_hi95"};
    for (int i = 0; i < 6; i++)
        out[i] = kmetric(&f, names[i]);
    ck_assert_double_eq_tol(kmetric(&f, "chance"), 0.125, 1e-15);
    ck_assert(kmetric(&f, "trials_within_train") >= 150 &&
              kmetric(&f, "trials_beyond_train") >= 150);
    fprintf(stderr, "retrieval %s%s: within %.3f [%.3f, %.3f], beyond %.3f [%.3f, %.3f]\n", type,
            extra, out[0], out[1], out[2], out[3], out[4], out[5]);
    kf_free(&f);
}

/* The metric's defining properties (docs/runner.md "retrieval"): content
 * cannot tell the 8 candidates apart, so NoPE and RoPE on shuffled positions
 * are at chance 1/8 (inside their 95 % intervals, seeded: deterministic),
 * plain RoPE within train_len is near 1, an oracle query (ood: keep)
 * retrieves beyond it, the default query (no angle outside the trained
 * range) loses RoPE beyond train_len below YaRN x8, and PI x8's squeezed
 * high frequencies lose nearby offsets within it. */
START_TEST(retrieval_needs_position_nope_and_shuffled_at_chance)
{
    double nope[6], shuf[6], rope[6], keep[6], yarn[6], pi[6], rerope[6];
    posret("nope", "{}", "", nope);
    posret("rope", "{}", ", \"positions\": \"shuffled\"", shuf);
    posret("rope", "{}", "", rope);
    posret("rope", "{}", ", \"ood\": \"keep\"", keep);
    posret("yarn", "{\"factor\": 8, \"original_max_position_embeddings\": 32}", "", yarn);
    posret("linear", "{\"factor\": 8}", "", pi);
    /* ReRoPE with window 16: every offset >= 16 reads as 16, so beyond
     * train_len (r > 32) the candidates are indistinguishable: chance */
    posret("rope", "{}", ", \"attn_remap\": \"rerope\", \"attn_remap_window\": 16", rerope);
    for (int i = 0; i < 6; i += 3) {
        ck_assert_msg(nope[i + 1] <= 0.125 && 0.125 <= nope[i + 2], "NoPE not at chance");
        ck_assert_msg(shuf[i + 1] <= 0.125 && 0.125 <= shuf[i + 2], "shuffled not at chance");
    }
    ck_assert_msg(rope[1] >= 0.9, "RoPE within train_len: %g", rope[0]);
    ck_assert_msg(keep[4] >= 0.9, "oracle RoPE beyond train_len: %g", keep[3]);
    ck_assert_msg(rope[5] < yarn[4], "RoPE beyond train_len not below YaRN: %g vs %g", rope[3],
                  yarn[3]);
    ck_assert_msg(pi[2] < rope[1], "PI within train_len not below RoPE: %g vs %g", pi[0], rope[0]);
    ck_assert_msg(rerope[4] <= 0.125 && 0.125 <= rerope[5], "ReRoPE beyond its window: %g",
                  rerope[3]);
}
END_TEST

/* query_rows (docs/runner.md "retrieval"): with every trial's row asked
 * for (S >= N / (2C)) the sampled path gives the full passes' results bit
 * for bit, tables included; with S = 16 each length computes 16 trials per
 * kv head (evenly spread over the offsets), verified, and NoPE stays at
 * chance inside its interval. */
START_TEST(retrieval_query_rows_are_the_full_pass_rows)
{
    static const char *const enc = "{\"factor\": 8, \"original_max_position_embeddings\": 32}";
    static const char *const names[] = {"accuracy_within_train", "accuracy_beyond_train",
                                        "haystack_accuracy", "accuracy_at_max_len",
                                        "trials_within_train", "trials_beyond_train"};
    kfix a, b;
    rl_error err = {0};
    kf_init(&a, "yarn", enc, "{\"min_len\": 64, \"max_len\": 1024}", 4, 4, 32, 0);
    kf_init(&b, "yarn", enc, "{\"min_len\": 64, \"max_len\": 1024, \"query_rows\": 100000}",
            4, 4, 32, 0);
    a.run.model.head_dim = b.run.model.head_dim = 64;
    ck_assert_msg(kf_run(&a, "retrieval", &err) == RL_OK, "%s", err.msg);
    ck_assert_msg(kf_run(&b, "retrieval", &err) == RL_OK, "%s", err.msg);
    assert_verified(&b, "target_p");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        ck_assert_msg(kmetric(&a, names[i]) == kmetric(&b, names[i]), "%s: %.17g vs %.17g",
                      names[i], kmetric(&a, names[i]), kmetric(&b, names[i]));
    ck_assert(json_equal(a.sink.tables, b.sink.tables));
    ck_assert_double_eq(kmetric(&a, "query_rows_at_max_len"), 1024);
    /* every trial's row at 1024 (at most 1024 / (2 x 8) = 64; the plan can place fewer), one
     * trial per kv head each */
    ck_assert_double_eq(kmetric(&b, "query_rows_at_max_len") * 4, kmetric(&b, "trials_at_max_len"));
    ck_assert(kmetric(&b, "query_rows_at_max_len") <= 64 && kmetric(&b, "query_rows_at_max_len") >= 60);
    kf_free(&a);
    kf_free(&b);
    kf_init(&a, "yarn", enc, "{\"min_len\": 64, \"max_len\": 1024, \"query_rows\": 16}", 4,
            4, 32, 0);
    a.run.model.head_dim = 64;
    ck_assert_msg(kf_run(&a, "retrieval", &err) == RL_OK, "%s", err.msg);
    assert_verified(&a, "target_p");
    ck_assert_double_eq(kmetric(&a, "trials_at_max_len"), 16 * 4);
    ck_assert_double_eq(kmetric(&a, "query_rows_at_max_len"), 16);
    /* lengths 64 .. 1024 hold 4, 8, 16, 32, 64 trials per kv head: at most 4 + 8 + 16 x 3 = 60
     * computed (the plan can place a few fewer at short lengths) */
    double all = kmetric(&a, "trials_within_train") + kmetric(&a, "trials_beyond_train");
    ck_assert_msg(all <= 60 * 4 && all >= 54 * 4, "%g trials", all);
    kf_free(&a);
    kf_init(&a, "nope", "{}", "{\"min_len\": 256, \"max_len\": 1024, \"query_rows\": 32}", 4, 4,
            32, 0);
    a.run.model.head_dim = 64;
    ck_assert_msg(kf_run(&a, "retrieval", &err) == RL_OK, "%s", err.msg);
    ck_assert_msg(kmetric(&a, "accuracy_beyond_train_lo95") <= 0.125 &&
                      0.125 <= kmetric(&a, "accuracy_beyond_train_hi95"),
                  "NoPE with sampled rows not at chance: %g", kmetric(&a, "accuracy_beyond_train"));
    kf_free(&a);
}
END_TEST

START_TEST(retrieval_accuracy_is_one_for_the_query_as_needle_without_distractors)
{
    kfix f;
    kf_init(&f, "nope", "{}",
            "{\"min_len\": 32, \"max_len\": 128, \"needle_scale\": 4, \"distractors\": "
            "\"none\"}", 2, 1, 64, 0);
    rl_error err = {0};
    ck_assert_msg(kf_run(&f, "content_retrieval", &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq(kmetric(&f, "accuracy_within_train"), 1.0);
    ck_assert_double_eq(kmetric(&f, "accuracy_beyond_train"), 1.0); /* r = 96 > 64 at N = 128 */
    ck_assert_double_eq(kmetric(&f, "accuracy_at_max_len"), 1.0);
    assert_verified(&f, "target_p");
    kf_free(&f);
}
END_TEST

/* content_retrieval's query_rows: every scored query asked for is the full
 * passes bit for bit (metrics and tables); S = 8 computes 8 rows at each
 * length, verified. */
START_TEST(content_retrieval_query_rows_are_the_full_pass_rows)
{
    static const char *const P = "{\"min_len\": 64, \"max_len\": 256, \"noise\": 0.5";
    static const char *const names[] = {"accuracy_within_train", "accuracy_beyond_train",
                                        "accuracy_at_max_len"};
    char pa[160], pb[160], pc[160];
    snprintf(pa, sizeof pa, "%s}", P);
    snprintf(pb, sizeof pb, "%s, \"query_rows\": 1000}", P);
    snprintf(pc, sizeof pc, "%s, \"query_rows\": 8}", P);
    kfix a, b;
    rl_error err = {0};
    kf_init(&a, "rope", "{}", pa, 2, 1, 64, 0);
    kf_init(&b, "rope", "{}", pb, 2, 1, 64, 0);
    ck_assert_msg(kf_run(&a, "content_retrieval", &err) == RL_OK, "%s", err.msg);
    ck_assert_msg(kf_run(&b, "content_retrieval", &err) == RL_OK, "%s", err.msg);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        ck_assert_msg(kmetric(&a, names[i]) == kmetric(&b, names[i]), "%s", names[i]);
    ck_assert(json_equal(a.sink.tables, b.sink.tables));
    ck_assert_double_eq(kmetric(&a, "query_rows_at_max_len"), 256);
    ck_assert_double_eq(kmetric(&b, "query_rows_at_max_len"), 64); /* the last quarter */
    kf_free(&a);
    kf_free(&b);
    kf_init(&a, "rope", "{}", pc, 2, 1, 64, 0);
    ck_assert_msg(kf_run(&a, "content_retrieval", &err) == RL_OK, "%s", err.msg);
    assert_verified(&a, "target_p");
    ck_assert_double_eq(kmetric(&a, "query_rows_at_max_len"), 8);
    kf_free(&a);
}
END_TEST

/* The needle orthogonal to its query at scale 0 is the zero key: every
 * logit of a row is 0, the first key (token 0) is the argmax, and the
 * needle's probability is 1 / (i + 1) — never above 1 / (3N/4 + 1). */
START_TEST(retrieval_fails_when_the_needle_is_a_zero_key)
{
    kfix f;
    kf_init(&f, "nope", "{}",
            "{\"min_len\": 64, \"max_len\": 64, \"needle_scale\": 0, \"distractors\": "
            "\"none\"}", 1, 1, 64, 0);
    rl_error err = {0};
    ck_assert_msg(kf_run(&f, "content_retrieval", &err) == RL_OK, "%s", err.msg);
    /* 16 queries; only a needle at token 0 (query 48 at r = 48) can be hit. */
    ck_assert(kmetric(&f, "accuracy_at_max_len") <= 1.0 / 16.0);
    ck_assert(kmetric(&f, "needle_p_within_train") <= 1.0 / 49.0 + 1e-6);
    kf_free(&f);
}
END_TEST

/* The mask keys reach the engine. Identical keys (nope): a bidirectional row
 * i of N = 96 with attn_window 8 sees the keys max(0, i - 7) .. min(95, i + 7),
 * uniformly, so its entropy is ln of their count and entropy_at_max_len is
 * the mean of those logs (counted here by hand). Bound as the unmasked test. */
START_TEST(entropy_with_a_window_is_ln_of_the_visible_keys)
{
    kfix f;
    kf_init(&f, "nope", "{}", "{\"min_len\": 96, \"max_len\": 96, \"attn_window\": 8}", 2, 1,
            64, 1);
    rl_error err = {0};
    ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
    double want = 0;
    for (int i = 0; i < 96; i++) {
        int lo = i - 7 > 0 ? i - 7 : 0, hi = i + 7 < 95 ? i + 7 : 95;
        want += log((double)(hi - lo + 1)) / 96;
    }
    ck_assert_double_eq_tol(kmetric(&f, "entropy_at_max_len"), want, 1e-5);
    assert_verified(&f, "entropy");
    kf_free(&f);
    /* attn_sinks alone would leave every key visible: refused, naming the keys */
    kf_init(&f, "nope", "{}", "{\"attn_sinks\": 4}", 1, 1, 64, 1);
    ck_assert_int_eq(kf_run(&f, "entropy", &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "attn_sinks 4 needs attn_window or attn_chunk") != NULL, "%s",
                  err.msg);
    kf_free(&f);
}
END_TEST

/* A learned sink reaches the engine: zero queries make every key's logit 0,
 * so with the sink logit 1.5 each p_j = 1 / L, L = N + e^1.5, and the keys'
 * entropy is (N / L) ln L at N = 64 (hand derivation; bound as above).
 * Distortion's paired pass cannot take a sink: refused naming the key. */
START_TEST(entropy_with_a_learned_sink_takes_its_share)
{
    kfix f;
    kf_init(&f, "nope", "{}",
            "{\"min_len\": 64, \"max_len\": 64, \"attn_learned_sink\": true, "
            "\"attn_sink_logit\": 1.5}", 1, 1, 64, 2);
    rl_error err = {0};
    ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
    double L = 64 + exp(1.5);
    ck_assert_double_eq_tol(kmetric(&f, "entropy_at_max_len"), 64 / L * log(L), 1e-5);
    assert_verified(&f, "entropy");
    kf_free(&f);
    kf_init(&f, "rope", "{}", "{\"length\": 64, \"attn_learned_sink\": true}", 1, 1, 64, 0);
    ck_assert_int_eq(kf_run(&f, "distortion", &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "attn_learned_sink") != NULL, "%s", err.msg);
    kf_free(&f);
}
END_TEST

/* attn_temperature reaches the engine: SSMax with s = 0 makes every logit
 * 0 (tau = 0 log n), so the entropy of any data is ln N (without the
 * temperature these rows are not uniform: checked against 0.01 below ln N).
 * Llama 4 with its defaults verifies too; distortion refuses it. */
START_TEST(entropy_with_a_temperature_scales_the_logits)
{
    kfix f;
    kf_init(&f, "rope", "{}", "{\"min_len\": 64, \"max_len\": 64}", 1, 1, 64, 0);
    rl_error err = {0};
    ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
    ck_assert_double_lt(kmetric(&f, "entropy_at_max_len"), log(64.0) - 0.01);
    kf_free(&f);
    kf_init(&f, "rope", "{}",
            "{\"min_len\": 64, \"max_len\": 64, \"attn_temperature\": \"ssmax\", "
            "\"attn_temp_scale\": 0}", 1, 1, 64, 0);
    ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq_tol(kmetric(&f, "entropy_at_max_len"), log(64.0), 1e-5);
    assert_verified(&f, "entropy");
    kf_free(&f);
    kf_init(&f, "rope", "{}",
            "{\"min_len\": 64, \"max_len\": 256, \"attn_temperature\": \"llama4\", "
            "\"attn_temp_floor\": 16}", 2, 1, 64, 0);
    ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
    assert_verified(&f, "entropy");
    kf_free(&f);
    kf_init(&f, "rope", "{}", "{\"length\": 64, \"attn_temperature\": \"qwen_logn\"}", 1, 1,
            64, 0);
    ck_assert_int_eq(kf_run(&f, "distortion", &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "attn_temperature") != NULL, "%s", err.msg);
    kf_free(&f);
}
END_TEST

/* Retrieval as in the test above, with attn_window 65 at N = 128: needles at
 * distances 1, 2, 4, ..., 64 stay visible (accuracy 1), the needle at
 * r = 96 is masked (p = 0, the argmax is another key: accuracy 0). */
START_TEST(retrieval_with_a_window_misses_needles_beyond_it)
{
    kfix f;
    kf_init(&f, "nope", "{}",
            "{\"min_len\": 128, \"max_len\": 128, \"needle_scale\": 4, \"distractors\": "
            "\"none\", \"attn_window\": 65}", 2, 1, 64, 0);
    rl_error err = {0};
    ck_assert_msg(kf_run(&f, "content_retrieval", &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq(kmetric(&f, "accuracy_within_train"), 1.0);
    ck_assert_double_eq(kmetric(&f, "accuracy_beyond_train"), 0.0);
    ck_assert_double_eq(kmetric(&f, "needle_p_beyond_train"), 0.0);
    assert_verified(&f, "target_p");
    kf_free(&f);
}
END_TEST

/* Plain RoPE paired with its own twin: identical logits, KL = 0 up to the
 * fp32 rounding of two identical sums, equal bucket masses. */
START_TEST(distortion_of_rope_against_itself_is_zero)
{
    kfix f;
    kf_init(&f, "rope", "{}", "{\"length\": 64}", 2, 2, 96, 0);
    rl_error err = {0};
    ck_assert_msg(kf_run(&f, "distortion", &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq_tol(kmetric(&f, "kl_max"), 0.0, 1e-6);
    /* 64 tokens: distances 0..63, buckets 0 | 1 | 2-3 | ... | 32-63 (7); the
     * farthest holds keys 32..63 of rows 32..63: a mass in [0, 1/2]. */
    ck_assert(kmetric(&f, "mass_farthest_bucket_rope") >= 0);
    ck_assert(kmetric(&f, "mass_farthest_bucket_rope") <= 0.5 + 1e-6);
    ck_assert_double_eq_tol(kmetric(&f, "mass_farthest_bucket_scaled"),
                            kmetric(&f, "mass_farthest_bucket_rope"), 1e-6);
    ck_assert_double_eq(kmetric(&f, "logit_scale_ratio"), 1.0);
    assert_verified(&f, "kl");
    kf_free(&f);
    /* the control of the sampled rows: RoPE against itself over 16 sampled
     * rows is 0 too, its interval at 0 */
    kf_init(&f, "rope", "{}", "{\"length\": 64, \"query_rows\": 16}", 2, 2, 96, 0);
    ck_assert_msg(kf_run(&f, "distortion", &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq(kmetric(&f, "query_rows"), 16);
    ck_assert_double_eq_tol(kmetric(&f, "kl_max"), 0.0, 1e-6);
    ck_assert_double_eq_tol(kmetric(&f, "kl_mean_lo95"), 0.0, 1e-6);
    ck_assert_double_eq_tol(kmetric(&f, "kl_mean_hi95"), 0.0, 1e-6);
    assert_verified(&f, "kl");
    kf_free(&f);
}
END_TEST

/* YaRN x4 against plain RoPE: its temperature scales logits by
 * (0.1 ln 4 + 1)^2 relative to RoPE's, and it changes the distribution
 * (KL > 0); without the factor the ratio is 1. */
START_TEST(distortion_of_yarn_applies_its_temperature)
{
    kfix f;
    kf_init(&f, "yarn", "{\"factor\": 4, \"original_max_position_embeddings\": 64}", "{}", 1, 1,
            64, 0);
    rl_error err = {0};
    ck_assert_msg(kf_run(&f, "distortion", &err) == RL_OK, "%s", err.msg);
    double af = 0.1 * log(4.0) + 1.0;
    ck_assert_double_eq_tol(kmetric(&f, "logit_scale_ratio"), af * af, 1e-6);
    ck_assert(kmetric(&f, "kl_mean") > 1e-3);
    assert_verified(&f, "buckets");
    kf_free(&f);
    kf_init(&f, "yarn", "{\"factor\": 4, \"original_max_position_embeddings\": 64}",
            "{\"attention_factor\": false}", 1, 1, 64, 0);
    ck_assert_msg(kf_run(&f, "distortion", &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq_tol(kmetric(&f, "logit_scale_ratio"), 1.0, 1e-12);
    kf_free(&f);
}
END_TEST

/* Sampled query rows in distortion: S >= length is the full pass bit for
 * bit (seed 1); S = 128 of 1024 rows (log_groups) gives a mean KL whose
 * 95 % interval covers the full pass's in at least 16 of seeds 2..20 (each
 * seed new data and a new sample; P(X <= 15) = 1.4 % at 95 % coverage),
 * every sampled pass verified. */
START_TEST(distortion_sampled_rows_cover_the_full_pass)
{
    static const char *const enc = "{\"factor\": 4, \"original_max_position_embeddings\": 256}";
    rl_error err = {0};
    int covered = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        kfix a, b;
        kf_init(&a, "yarn", enc, "{\"length\": 1024}", 2, 1, 256, 0);
        kf_init(&b, "yarn", enc, seed == 1 ? "{\"length\": 1024, \"query_rows\": 1024}"
                                            : "{\"length\": 1024, \"query_rows\": 128}",
                2, 1, 256, 0);
        a.run.seed = b.run.seed = seed;
        ck_assert_msg(kf_run(&a, "distortion", &err) == RL_OK, "%s", err.msg);
        ck_assert_msg(kf_run(&b, "distortion", &err) == RL_OK, "%s", err.msg);
        double full = kmetric(&a, "kl_mean");
        if (seed == 1) { /* every row asked for: the full pass itself */
            ck_assert(kmetric(&b, "kl_mean") == full);
            ck_assert(json_equal(a.sink.tables, b.sink.tables));
        } else {
            assert_verified(&b, "kl");
            ck_assert_double_eq(kmetric(&b, "query_rows"), 128);
            double lo = kmetric(&b, "kl_mean_lo95"), hi = kmetric(&b, "kl_mean_hi95");
            ck_assert(lo <= kmetric(&b, "kl_mean") && kmetric(&b, "kl_mean") <= hi);
            covered += lo <= full && full <= hi;
            fprintf(stderr, "distortion seed %llu: full %.5f, 128 rows %.5f [%.5f, %.5f]\n",
                    (unsigned long long)seed, full, kmetric(&b, "kl_mean"), lo, hi);
        }
        kf_free(&a);
        kf_free(&b);
    }
    ck_assert_msg(covered >= 16, "the interval covered the full pass in %d of 19 seeds", covered);
}
END_TEST

START_TEST(distortion_refuses_non_rope_encodings)
{
    kfix f;
    kf_init(&f, "alibi", "{}", "{}", 1, 1, 64, 0);
    rl_error err = {0};
    ck_assert_int_ne(kf_run(&f, "distortion", &err), RL_OK);
    ck_assert_ptr_nonnull(strstr(err.msg, "RoPE-family"));
    kf_free(&f);
}
END_TEST

/* ---- xpos and Resonance RoPE in the attention kinds ---- */

/* Zero queries: q' = 0 whatever the decay, every logit 0, H = ln N at N = 64
 * (as entropy_of_zero_queries...); smooth data: every pass verified. */
START_TEST(entropy_of_xpos_and_resonance_runs_verified)
{
    const char *type[] = {"xpos", "rope"};
    const char *enc[] = {"{}", "{\"resonance\": true, \"original_max_position_embeddings\": 32}"};
    for (int i = 0; i < 2; i++) {
        kfix f;
        kf_init(&f, type[i], enc[i], "{\"min_len\": 16, \"max_len\": 64}", 2, 1, 32, 2);
        rl_error err = {0};
        ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
        ck_assert_double_eq_tol(kmetric(&f, "entropy_at_max_len"), log(64.0), 1e-5);
        assert_verified(&f, "entropy");
        kf_free(&f);
        kf_init(&f, type[i], enc[i], "{\"min_len\": 16, \"max_len\": 64}", 2, 1, 32, 0);
        ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
        double h = kmetric(&f, "entropy_at_max_len");
        ck_assert(h >= 0 && h <= log(64.0) + 1e-5);
        assert_verified(&f, "entropy");
        kf_free(&f);
    }
}
END_TEST

START_TEST(retrieval_of_xpos_and_resonance_runs_verified)
{
    const char *type[] = {"xpos", "rope"};
    const char *enc[] = {"{\"scale_base\": 128}",
                         "{\"resonance\": true, \"original_max_position_embeddings\": 64}"};
    for (int i = 0; i < 2; i++) {
        kfix f;
        kf_init(&f, type[i], enc[i],
                "{\"min_len\": 32, \"max_len\": 128, \"needle_scale\": 4, \"distractors\": "
                "\"none\"}", 2, 1, 64, 0);
        rl_error err = {0};
        ck_assert_msg(kf_run(&f, "content_retrieval", &err) == RL_OK, "%s", err.msg);
        double a = kmetric(&f, "accuracy_at_max_len");
        ck_assert(a >= 0 && a <= 1);
        assert_verified(&f, "target_p");
        kf_free(&f);
    }
}
END_TEST

/* xpos against its plain-RoPE twin (interleaved, same base): with scale_base
 * 1e12 the decay zeta^((m-n)/1e12) is 1 - O(1e-10) over 64 tokens, so the
 * distributions agree (KL ~ 0, as rope against itself); with the paper's 512
 * the logits of distant keys shrink (zeta_0^(63/512) = 0.86) and KL > 0. No
 * attention factor: ratio 1. Resonance rounds theta_0 = 1 to 2pi/6: KL > 0. */
START_TEST(distortion_of_xpos_and_resonance_against_plain_rope)
{
    kfix f;
    rl_error err = {0};
    kf_init(&f, "xpos", "{\"scale_base\": 1e12}", "{\"length\": 64}", 2, 1, 64, 0);
    ck_assert_msg(kf_run(&f, "distortion", &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq_tol(kmetric(&f, "kl_max"), 0.0, 1e-6);
    ck_assert_double_eq(kmetric(&f, "logit_scale_ratio"), 1.0);
    assert_verified(&f, "kl");
    kf_free(&f);
    kf_init(&f, "xpos", "{}", "{\"length\": 64}", 2, 1, 64, 0);
    ck_assert_msg(kf_run(&f, "distortion", &err) == RL_OK, "%s", err.msg);
    ck_assert(kmetric(&f, "kl_mean") > 1e-5);
    assert_verified(&f, "kl");
    kf_free(&f);
    kf_init(&f, "rope", "{\"resonance\": true, \"original_max_position_embeddings\": 64}",
            "{\"length\": 64}", 2, 1, 64, 0);
    ck_assert_msg(kf_run(&f, "distortion", &err) == RL_OK, "%s", err.msg);
    ck_assert(kmetric(&f, "kl_mean") > 1e-5);
    ck_assert_double_eq(kmetric(&f, "logit_scale_ratio"), 1.0);
    assert_verified(&f, "kl");
    kf_free(&f);
}
END_TEST

/* exp_attn_prepare: the pipelines compiled together up front (two threads)
 * are exactly the ones the passes then use (the engine creates none during
 * them: prepare chose the same variant, flags and shape as exp_attn_run),
 * and the statistics are bit for bit those of a device that compiled each
 * pipeline at its pass, one after the other. Passes: bidirectional,
 * causal, and a causal window with sinks and a learned sink; encodings with
 * and without a logit bias. */
#define PREP_T 48
#define PREP_PASSES 4
static void prepared_passes(const pe_encoding *e, const float *q, const float *k, int prepare,
                            float *stats /* [PREP_PASSES][T][H][NSTAT] */)
{
    /* RoPE also with position remapping (Self-Extend): its own kernel */
    uint32_t passes = pe_rope_freqs(e) ? PREP_PASSES : PREP_PASSES - 1;
    rl_gpu g;
    rl_gpu_open(&g);
    g.dev.compile_threads = 2;
    attn_engine eng;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &eng, &err) == RL_OK);
    exp_attn_io io[PREP_PASSES] = {
        {.tokens = PREP_T, .q = q, .k = k, .causal = 0, .flags = ATTN_ENTROPY | ATTN_ARGMAX},
        {.tokens = PREP_T, .q = q, .k = k, .causal = 1, .flags = ATTN_ENTROPY | ATTN_ARGMAX},
        {.tokens = PREP_T, .q = q, .k = k, .causal = 1, .flags = ATTN_ENTROPY | ATTN_ARGMAX,
         .mask = {.window = 8, .n_sink = 2, .learned_sink = 1, .sink_logit = 0.5}},
        {.tokens = PREP_T, .q = q, .k = k, .causal = 1, .flags = ATTN_ENTROPY | ATTN_ARGMAX,
         .mask = {.remap = {.method = ATTN_REMAP_SELF_EXTEND, .window = 8, .group = 2}}},
    };
    const pe_encoding *encs[PREP_PASSES] = {e, e, e, e};
    if (prepare) {
        ck_assert_msg(exp_attn_prepare(&eng, passes, encs, io, &err) == RL_OK, "%s", err.msg);
        ck_assert_uint_eq(eng.n_pipes, passes);
        ck_assert_uint_eq(g.dev.compile_threads_used, 2);
    }
    uint32_t H = pe_encoding_shape(e)->heads;
    for (uint32_t p = 0; p < passes; p++) {
        attn_outputs out = {.stats = stats + (size_t)p * PREP_T * H * RL_ATTN_NSTAT};
        exp_attn_result r;
        ck_assert_msg(exp_attn_run(&g.dev, &eng, e, &io[p], &out, &r, &err) == RL_OK, "%s",
                      err.msg);
        ck_assert_msg(r.pass, "pass %u: worst %s", p, r.worst);
        ck_assert_uint_eq(eng.n_pipes, prepare ? passes : p + 1);
    }
    attn_engine_destroy(&eng);
    rl_gpu_close(&g);
}

START_TEST(prepared_pipelines_serve_the_passes_bit_for_bit)
{
    enum { H = 2, KV = 1, D = 32 };
    static const char *const names[] = {"rope", "alibi"};
    pe_shape s = {.head_dim = D, .heads = H, .kv_heads = KV, .seed = 3, .max_positions = 4096};
    pe_encoding *e = make(names[_i], NULL, &s);
    float *q = malloc(PREP_T * H * D * sizeof *q), *k = malloc(PREP_T * KV * D * sizeof *k);
    rl_rng rng;
    rl_rng_seed(&rng, 9, "test/exp_attn_prepare");
    for (int i = 0; i < PREP_T * H * D; i++)
        q[i] = (float)rl_rng_normal(&rng);
    for (int i = 0; i < PREP_T * KV * D; i++)
        k[i] = (float)rl_rng_normal(&rng);
    size_t n = (size_t)PREP_PASSES * PREP_T * H * RL_ATTN_NSTAT;
    float *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
    prepared_passes(e, q, k, 1, a);
    prepared_passes(e, q, k, 0, b);
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof a[i]) != 0)
            ck_abort_msg("%s: statistic %zu differs: %g prepared, %g one by one", names[_i], i,
                         a[i], b[i]);
    free(a);
    free(b);
    free(q);
    free(k);
    pe_encoding_destroy(e);
}
END_TEST

int main(void)
{
    rl_test_pin_driver();
    rl_test_require_vulkan("exp_attn");
    Suite *s = suite_create("exp_attn");
    TCase *tc = tcase_create("exp_attn");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, encoding_attention_is_verified_end_to_end, 0,
                        (int)(sizeof encodings / sizeof encodings[0]));
    tcase_add_test(tc, entropy_of_xpos_and_resonance_runs_verified);
    tcase_add_test(tc, retrieval_of_xpos_and_resonance_runs_verified);
    tcase_add_test(tc, distortion_of_xpos_and_resonance_against_plain_rope);
    tcase_add_test(tc, paired_encoding_against_itself_has_zero_kl);
    tcase_add_test(tc, attention_path_keeps_transformed_qk_on_the_device);
    tcase_add_test(tc, verification_catches_a_wrong_device_transform);
    tcase_add_test(tc, attention_factor_scales_logits_by_its_square_once);
    tcase_add_test(tc, entropy_of_identical_keys_is_ln_n);
    tcase_add_test(tc, entropy_of_zero_queries_is_ln_n_with_and_without_the_factor);
    tcase_add_test(tc, entropy_sweep_recomputes_dynamic_scaling_per_length);
    tcase_add_test(tc, entropy_cache_consistent_differs_from_recompute_only_past_the_prompt);
    tcase_add_test(tc, t5_attention_is_unscaled_as_in_the_model);
    tcase_add_test(tc, retrieval_needs_position_nope_and_shuffled_at_chance);
    tcase_add_test(tc, retrieval_query_rows_are_the_full_pass_rows);
    tcase_add_test(tc, distortion_sampled_rows_cover_the_full_pass);
    tcase_add_test(tc, content_retrieval_query_rows_are_the_full_pass_rows);
    tcase_add_test(tc, retrieval_accuracy_is_one_for_the_query_as_needle_without_distractors);
    tcase_add_test(tc, retrieval_fails_when_the_needle_is_a_zero_key);
    tcase_add_test(tc, entropy_with_a_window_is_ln_of_the_visible_keys);
    tcase_add_test(tc, retrieval_with_a_window_misses_needles_beyond_it);
    tcase_add_test(tc, entropy_with_a_learned_sink_takes_its_share);
    tcase_add_test(tc, entropy_with_a_temperature_scales_the_logits);
    tcase_add_test(tc, distortion_of_rope_against_itself_is_zero);
    tcase_add_test(tc, distortion_of_yarn_applies_its_temperature);
    tcase_add_test(tc, distortion_refuses_non_rope_encodings);
    tcase_add_loop_test(tc, prepared_pipelines_serve_the_passes_bit_for_bit, 0, 2);
    TCase *ts = tcase_create("sampled_rows");
    tcase_set_timeout(ts, 600);
    tcase_add_loop_test(ts, sampled_rows_interval_covers_the_full_pass, 0,
                        (int)RL_ARRAY_LEN(cover_cases));
    tcase_add_test(ts, keys_beyond_one_binding_are_bound_in_windows);
    suite_add_tcase(s, ts);
    suite_add_tcase(s, tc);
    return rl_test_run(s);
}
