/* The streaming attention engine on the Vulkan device (validation layer on,
 * any message fails): hand-computed statistics, the bias hook, the CPU
 * verification of random problems, split submissions, the logit dump and
 * the size limits. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "check/chk.h"
#include "core/rl_util.h"
#include "rl_test.h"

/* q = 0 makes every logit exactly 0, so p = 1/N and lse = H = log N (hand
 * derivation, no reference code). Bound: Vulkan allows exp(0) 3 ulp from 1
 * (3 + 2|x| ulp), so l = sum of N such terms is within 3 * 2^-23 + N 2^-24
 * relative (N = 300: 1.8e-5), and log adds 2^-21 absolute: 4e-4 absolute on
 * lse and entropy has ample margin, and argmax_p = 1/l within 4e-4/N. */
START_TEST(gpu_uniform_logits_give_log_n)
{
    rl_gpu g;
    rl_gpu_open(&g);
    enum { N = 300, D = 8 };
    float *q = calloc(N * D, sizeof *q), *k = malloc(N * D * sizeof *k);
    for (int i = 0; i < N * D; i++)
        k[i] = (float)((i * 37) % 11) - 5;
    float *stats = malloc(N * RL_ATTN_NSTAT * sizeof *stats);
    attn_engine e;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &e, &err) == RL_OK);
    attn_desc d = {.tokens = N, .heads = 1, .head_dim = D, .flags = ATTN_ENTROPY | ATTN_ARGMAX,
                   .scale = 1, .no_verify = 1};
    attn_inputs in = {.q = q, .k = k};
    attn_outputs out = {.stats = stats};
    attn_result res;
    ck_assert_msg(attn_run(&e, &d, &in, &out, &res, &err) == RL_OK, "%s", err.msg);
    for (int i = 0; i < N; i += 37) {
        const float *s = stats + i * RL_ATTN_NSTAT;
        uint32_t am;
        memcpy(&am, &s[RL_ATTN_S_ARGMAX], 4);
        ck_assert_double_eq_tol(s[RL_ATTN_S_LSE], log((double)N), 4e-4);
        ck_assert_double_eq_tol(s[RL_ATTN_S_ENTROPY], log((double)N), 4e-4);
        ck_assert_float_eq(s[RL_ATTN_S_MAX], 0);
        ck_assert_uint_eq(am, 0);
        ck_assert_double_eq_tol(s[RL_ATTN_S_ARGMAX_P], 1.0 / N, 4e-4 / N);
    }
    /* Causal: row i sees i + 1 keys, lse = log(i + 1). */
    d.causal = 1;
    ck_assert_msg(attn_run(&e, &d, &in, &out, &res, &err) == RL_OK, "%s", err.msg);
    for (int i = 0; i < N; i += 29)
        ck_assert_double_eq_tol(stats[i * RL_ATTN_NSTAT + RL_ATTN_S_LSE], log(i + 1.0), 4e-4);
    attn_engine_destroy(&e);
    free(stats);
    free(k);
    free(q);
    rl_gpu_close(&g);
}
END_TEST

/* The registry's ALiBi (causal) with q = 0: logit(h, i, j) = -m_h (i - j),
 * m_h = 2^(-8 (h+1) / H) (Press et al. 2022). H = 2: slopes 1/16 and 1/256.
 * Causal row 2 of head 0: logits -1/8, -1/16, 0. Bound: slopes and distances
 * exact in fp32, products exact (powers of two), so only exp/log error: 1e-6. */
START_TEST(gpu_bias_hook_adds_alibi_logits)
{
    rl_gpu g;
    rl_gpu_open(&g);
    enum { N = 3, H = 2, D = 4 };
    float q[N * H * D] = {0}, k[N * D] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3};
    float stats[N * H * RL_ATTN_NSTAT];
    rl_error err = {0};
    pe_shape shape = {.head_dim = D, .heads = H, .kv_heads = 1};
    pe_encoding *enc;
    ck_assert_msg(pe_encoding_create("alibi", NULL, &shape, &enc, &err) == RL_OK, "%s", err.msg);
    attn_pe_bias pb;
    ck_assert_msg(attn_pe_bias_create(&g.dev, enc, q, k, N, H, 1, D, &pb, &err) == RL_OK, "%s",
                  err.msg);
    ck_assert_str_eq(pb.bias.variant, "alibi");
    attn_engine e;
    ck_assert(attn_engine_create(&g.dev, &e, &err) == RL_OK);
    attn_desc d = {.tokens = N, .heads = H, .kv_heads = 1, .head_dim = D, .causal = 1,
                   .flags = ATTN_ARGMAX, .scale = 1};
    attn_inputs in = {.q = q, .k = k, .bias = &pb.bias};
    attn_outputs out = {.stats = stats};
    attn_result res;
    ck_assert_msg(attn_run(&e, &d, &in, &out, &res, &err) == RL_OK, "%s", err.msg);
    double want = log(exp(-0.125) + exp(-0.0625) + 1);
    ck_assert_double_eq_tol(stats[(2 * H + 0) * RL_ATTN_NSTAT + RL_ATTN_S_LSE], want, 1e-6);
    double want1 = log(exp(-2.0 / 256) + exp(-1.0 / 256) + 1);
    ck_assert_double_eq_tol(stats[(2 * H + 1) * RL_ATTN_NSTAT + RL_ATTN_S_LSE], want1, 1e-6);
    uint32_t am;
    memcpy(&am, &stats[(2 * H + 0) * RL_ATTN_NSTAT + RL_ATTN_S_ARGMAX], 4);
    ck_assert_uint_eq(am, 2); /* the nearest key has the largest logit */
    /* The engine's own verification used the registry's CPU reference. */
    ck_assert_uint_eq(res.verify.rows, N * H);
    ck_assert(res.verify.max_abs[ATTN_V_LSE] < 1e-6);
    attn_engine_destroy(&e);
    attn_pe_bias_destroy(&g.dev, &pb);
    pe_encoding_destroy(enc);
    rl_gpu_close(&g);
}
END_TEST

/* Random problems through the check harness: every statistic within the
 * derived per-statistic bounds of chk_attn.c (see there). */
static const chk_attn_case random_cases[] = {
    {65, 4, 2, 64, 1, 0, NULL,
     ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS | ATTN_PAIRED, 0, 0},
    {130, 2, 1, 32, 0, 1, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS, 0, 0},
    {97, 2, 2, 32, 1, 0, "t5", ATTN_ENTROPY | ATTN_PAIRED | ATTN_NO_BIAS_B, 0, 0},
    {70, 4, 2, 32, 0, 0, "xl", ATTN_ENTROPY | ATTN_ARGMAX | ATTN_PAIRED | ATTN_NO_BIAS_B, 0, 0},
    /* 4-key blocks, 3 per dispatch: 12-key chunks start inside the 64-query
     * workgroups (causal rows before a chunk must be left alone) and rows
     * are finished mid-workgroup. */
    {200, 2, 1, 32, 1, 0, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_OUT, 4, 3},
    {130, 4, 2, 16, 0, 1, "alibi", ATTN_ENTROPY | ATTN_BUCKETS | ATTN_PAIRED | ATTN_NO_BIAS_B, 8, 1},
};

START_TEST(gpu_random_problems_match_reference)
{
    rl_gpu g;
    rl_gpu_open(&g);
    attn_engine e;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &e, &err) == RL_OK);
    chk_row row;
    ck_assert_msg(chk_attn_run_case(&g.dev, &e, &random_cases[_i], 7 + _i, &row, &err) == RL_OK,
                  "%s", err.msg);
    if (!row.skipped)
        ck_assert_msg(row.stats.pass, "%s %s: worst err/bound %.3f (%s)", row.kernel, row.shape,
                      row.stats.worst_ratio, row.tolerance);
    attn_engine_destroy(&e);
    rl_gpu_close(&g);
}
END_TEST

/* Rows with more than 65535 keys: lavapipe ends any shader after 65535 loop
 * iterations in total, which once cut such rows short (session-1 failure at
 * 131072 tokens). The kernel now has no loops and splits keys over
 * dispatches; the last row here sees 70001 keys, and the sampled rows (first
 * and last included) must match the double reference. */
START_TEST(gpu_rows_beyond_65535_keys)
{
    rl_gpu g;
    rl_gpu_open(&g);
    attn_engine e;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &e, &err) == RL_OK);
    const chk_attn_case c = {70001, 1, 1, 8, 1, 0, NULL,
                             ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS, 0, 0};
    chk_row row;
    ck_assert_msg(chk_attn_run_case(&g.dev, &e, &c, 11, &row, &err) == RL_OK, "%s", err.msg);
    ck_assert(!row.skipped);
    ck_assert_msg(row.stats.pass, "%s %s: worst err/bound %.3f (%s)", row.kernel, row.shape,
                  row.stats.worst_ratio, row.tolerance);
    attn_engine_destroy(&e);
    rl_gpu_close(&g);
}
END_TEST

/* Splitting the dispatches over several submissions changes nothing: each
 * row's arithmetic is the same, so the statistics are bit-identical. The
 * logit dump is verified against the reference logits (bound E_s, chk_attn.c). */
START_TEST(gpu_split_submissions_and_dump)
{
    rl_gpu g;
    rl_gpu_open(&g);
    enum { N = 200, H = 2, D = 16 };
    float *q = malloc(N * H * D * sizeof *q), *k = malloc(N * H * D * sizeof *k);
    rl_rng rng;
    rl_rng_seed(&rng, 3, "test/attn/split");
    for (int i = 0; i < N * H * D; i++) {
        q[i] = (float)rl_rng_normal(&rng);
        k[i] = (float)rl_rng_normal(&rng);
    }
    float *s1 = malloc(N * H * RL_ATTN_NSTAT * 4), *s2 = malloc(N * H * RL_ATTN_NSTAT * 4);
    float *dump = malloc((size_t)N * N * H * 4);
    attn_engine e;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &e, &err) == RL_OK);
    attn_desc d = {.tokens = N, .heads = H, .head_dim = D, .causal = 1,
                   .flags = ATTN_ENTROPY | ATTN_DUMP, .scale = 0.25f};
    attn_inputs in = {.q = q, .k = k};
    attn_outputs o1 = {.stats = s1, .dump = dump}, o2 = {.stats = s2, .dump = dump};
    attn_result r1, r2;
    ck_assert_msg(attn_run(&e, &d, &in, &o1, &r1, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(r1.submissions, 1);
    ck_assert(r1.verify.checked[ATTN_V_DUMP]);
    double tol[ATTN_V_COUNT];
    chk_attn_tolerances(&d, &r1.verify, tol);
    ck_assert_msg(r1.verify.max_rel[ATTN_V_DUMP] <= tol[ATTN_V_DUMP], "dump error %g > %g",
                  r1.verify.max_rel[ATTN_V_DUMP], tol[ATTN_V_DUMP]);
    ck_assert(isinf(dump[(0 * N + 0) * N + 1]) && dump[(0 * N + 0) * N + 1] < 0); /* masked */
    d.work_per_submit = 1; /* one dispatch (key chunk x KV head) per submission */
    ck_assert_msg(attn_run(&e, &d, &in, &o2, &r2, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(r2.submissions, (N + r2.chunk_keys - 1) / r2.chunk_keys * H);
    ck_assert(memcmp(s1, s2, N * H * RL_ATTN_NSTAT * 4) == 0);
    attn_engine_destroy(&e);
    free(dump);
    free(s2);
    free(s1);
    free(k);
    free(q);
    rl_gpu_close(&g);
}
END_TEST

/* Sizes beyond the device are refused before any allocation, naming the
 * limit and the largest length that fits. */
/* A `before` hook that zeroes Q in the engine's first command buffer. */
static int hook_calls;
static rl_status zero_q(void *ctx, rlvk_cmd *cmd, const rlvk_buffer *pos, rl_error *err)
{
    (void)err;
    ck_assert_uint_ge(pos->size, 4);
    hook_calls++;
    rlvk_cmd_fill(cmd, ctx, 0, 0, 0);
    return RL_OK;
}

/* Operands already on the device: the same numbers as the host path, only
 * positions go up and only the statistics come back; work recorded before
 * the attention is seen by it; reference operands off by a stated bound
 * widen the tolerances by the logit shift (and fail without the bound). */
START_TEST(gpu_resident_operands_stay_on_the_device)
{
    rl_gpu g;
    rl_gpu_open(&g);
    enum { N = 200, H = 2, KV = 1, D = 16 };
    float *q = malloc(N * H * D * sizeof *q), *k = malloc(N * KV * D * sizeof *k);
    float *qp = malloc(N * H * D * sizeof *qp), *zero = calloc(N * H * D, sizeof *zero);
    double *eq = malloc(N * H * D * sizeof *eq);
    rl_rng rng;
    rl_rng_seed(&rng, 11, "test/attn/resident");
    for (int i = 0; i < N * H * D; i++) {
        q[i] = (float)rl_rng_normal(&rng);
        qp[i] = q[i] + ((i % 3) - 1) * 1e-3f; /* within 1.5e-3 of q */
        eq[i] = 1.5e-3;
    }
    for (int i = 0; i < N * KV * D; i++)
        k[i] = (float)rl_rng_normal(&rng);
    float s1[N * H * RL_ATTN_NSTAT], s2[N * H * RL_ATTN_NSTAT];
    attn_engine e;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &e, &err) == RL_OK);
    attn_desc d = {.tokens = N, .heads = H, .kv_heads = KV, .head_dim = D, .causal = 1,
                   .flags = ATTN_ENTROPY | ATTN_ARGMAX, .scale = 0.25f};
    attn_inputs in = {.q = q, .k = k};
    attn_outputs o1 = {.stats = s1}, o2 = {.stats = s2};
    attn_result r1, r2;
    ck_assert_msg(attn_run(&e, &d, &in, &o1, &r1, &err) == RL_OK, "%s", err.msg);

    rlvk_buffer bq, bk;
    ck_assert_int_eq(rlvk_buffer_create(&g.dev, sizeof(float) * N * H * D, "Q'", &bq, &err), RL_OK);
    ck_assert_int_eq(rlvk_buffer_create(&g.dev, sizeof(float) * N * KV * D, "K'", &bk, &err), RL_OK);
    ck_assert_int_eq(rlvk_buffer_upload(&g.dev, &bq, 0, q, sizeof(float) * N * H * D, &err), RL_OK);
    ck_assert_int_eq(rlvk_buffer_upload(&g.dev, &bk, 0, k, sizeof(float) * N * KV * D, &err), RL_OK);
    attn_resident ri = {.q = &bq, .k = &bk, .ref = {.q = q, .k = k}};
    uint64_t up = g.dev.bytes_uploaded, down = g.dev.bytes_downloaded;
    ck_assert_msg(attn_run_resident(&e, &d, &ri, &o2, &r2, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(g.dev.bytes_uploaded - up, 2 * N * 4);                 /* positions+targets */
    ck_assert_uint_eq(g.dev.bytes_downloaded - down, N * H * RL_ATTN_NSTAT * 4); /* statistics */
    ck_assert_mem_eq(s1, s2, sizeof s1);
    ck_assert_uint_eq(r2.verify.rows, r1.verify.rows);
    ck_assert_double_eq(r2.verify.max_abs[ATTN_V_ENTROPY], r1.verify.max_abs[ATTN_V_ENTROPY]);
    ck_assert_double_eq(r2.verify.max_operand_shift, 0);

    /* Reference operands within 1.5e-3 of the device's: passes with the
     * bound folded in, fails without it. */
    chk_stats js;
    char worst[32];
    ri.ref.q = qp;
    ck_assert_msg(attn_run_resident(&e, &d, &ri, &o2, &r2, &err) == RL_OK, "%s", err.msg);
    ck_assert(!chk_attn_judge(&d, &r2.verify, &js, worst, sizeof worst));
    ri.ref.err_q = eq;
    ck_assert_msg(attn_run_resident(&e, &d, &ri, &o2, &r2, &err) == RL_OK, "%s", err.msg);
    ck_assert_double_gt(r2.verify.max_operand_shift, 1e-3);
    ck_assert_msg(chk_attn_judge(&d, &r2.verify, &js, worst, sizeof worst), "%s", worst);

    /* Work recorded before the attention in its first command buffer: Q
     * zeroed, so row i is uniform over its i + 1 keys. */
    ri = (attn_resident){.q = &bq, .k = &bk, .before = zero_q, .before_ctx = &bq,
                         .ref = {.q = zero, .k = k}};
    hook_calls = 0;
    ck_assert_msg(attn_run_resident(&e, &d, &ri, &o2, &r2, &err) == RL_OK, "%s", err.msg);
    ck_assert_int_eq(hook_calls, 1);
    for (int i = 0; i < N; i += 17)
        ck_assert_double_eq_tol(s2[i * H * RL_ATTN_NSTAT + RL_ATTN_S_LSE], log(i + 1.0), 4e-4);
    ck_assert_msg(chk_attn_judge(&d, &r2.verify, &js, worst, sizeof worst), "%s", worst);

    /* A buffer smaller than its tensor is refused, naming it. */
    ri.k = &bq, ri.q = &bk;
    ck_assert_int_eq(attn_run_resident(&e, &d, &ri, &o2, &r2, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "K'"));
    rlvk_buffer_destroy(&g.dev, &bk);
    rlvk_buffer_destroy(&g.dev, &bq);
    attn_engine_destroy(&e);
    free(eq);
    free(zero);
    free(qp);
    free(k);
    free(q);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(gpu_refuses_sizes_beyond_limits)
{
    rl_gpu g;
    rl_gpu_open(&g);
    rl_error err = {0};
    uint64_t range = g.dev.info.max_storage_buffer_range;
    attn_desc d = {.tokens = range / (8 * 128 * 4) + 1, .heads = 8, .head_dim = 128, .scale = 1};
    ck_assert(attn_check_shape(&g.dev, &d, &err) == RL_ERR_LIMIT);
    ck_assert_msg(strstr(err.msg, "maxStorageBufferRange") || strstr(err.msg, "32-bit"), "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "largest length that fits"), "%s", err.msg);
    d.tokens = range / (8 * 128 * 4);
    ck_assert_msg(attn_check_shape(&g.dev, &d, &err) == RL_OK || strstr(err.msg, "heap"), "%s",
                  err.msg);
    attn_desc dump = {.tokens = 3000, .heads = 1, .head_dim = 16, .flags = ATTN_DUMP, .scale = 1};
    ck_assert(attn_check_shape(&g.dev, &dump, &err) == RL_ERR_LIMIT);
    ck_assert_msg(strstr(err.msg, "2048 tokens"), "%s", err.msg); /* floor(sqrt(2^22)) */
    /* No length limit from the driver's loop counter any more (lavapipe ends
     * a shader after 65535 loop iterations): the kernel has no loops. */
    attn_desc longer = {.tokens = 1u << 20, .heads = 1, .head_dim = 16, .scale = 1};
    ck_assert_msg(attn_check_shape(&g.dev, &longer, &err) == RL_OK, "%s", err.msg);
    attn_desc bad = {.tokens = 4, .heads = 3, .kv_heads = 2, .head_dim = 16, .scale = 1};
    ck_assert(attn_check_shape(&g.dev, &bad, &err) == RL_ERR_ARG);
    rl_gpu_close(&g);
}
END_TEST

int main(void)
{
    rl_test_pin_driver();
    rl_test_require_vulkan("attn_gpu");
    Suite *s = suite_create("attn_gpu");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, gpu_uniform_logits_give_log_n);
    tcase_add_test(tc, gpu_bias_hook_adds_alibi_logits);
    tcase_add_loop_test(tc, gpu_random_problems_match_reference, 0,
                        (int)(sizeof random_cases / sizeof random_cases[0]));
    tcase_add_test(tc, gpu_rows_beyond_65535_keys);
    tcase_add_test(tc, gpu_split_submissions_and_dump);
    tcase_add_test(tc, gpu_resident_operands_stay_on_the_device);
    tcase_add_test(tc, gpu_refuses_sizes_beyond_limits);
    suite_add_tcase(s, tc);
    return rl_test_run(s);
}
