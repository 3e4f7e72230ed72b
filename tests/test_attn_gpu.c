/* The streaming attention engine on the Vulkan device (validation layer on,
 * any message fails): hand-computed statistics, the bias hook, the CPU
 * verification of random problems, split submissions, the logit dump and
 * the size limits. */
#include "rl_check.h"
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/attn_cm.h"
#include "attn/attn_path.h"
#include "check/chk.h"
#include "core/rl_util.h"
/* one device for the suite (rl_test.h) */
#define RL_TEST_SHARED_GPU
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

/* Masks with q = 0: every visible logit is exactly 0, so lse = log(number
 * of visible keys) and the argmax is the first visible key, both counted by
 * hand from the mask definitions (token i, key j): sliding window W (causal:
 * min(i + 1, W) keys from max(0, i - W + 1); bidirectional: keys
 * max(0, i - W + 1) .. min(N - 1, i + W - 1)), sinks S + window W (causal:
 * i + 1 keys while i < S + W, then S + W; first key 0), chunks C (causal:
 * i mod C + 1 keys from i - i mod C). Bound as above (4e-4). Chunks of 4
 * keys (block 4, 1 per dispatch): whole chunks are skipped; the skipped
 * tiles are counted against the masks' own (query block, chunk) bands. */
static void mask_case(attn_engine *e, int causal, uint32_t w, uint32_t sink, uint32_t chunk,
                      const float *q, const float *k, float *stats, int n)
{
    rl_error err = {0};
    attn_desc d = {.tokens = (uint64_t)n, .heads = 1, .head_dim = 8, .causal = causal,
                   .flags = ATTN_ARGMAX, .scale = 1, .no_verify = 1, .block_keys = 4,
                   .chunk_blocks = 1, .window = w, .n_sink = sink, .chunk_size = chunk};
    attn_inputs in = {.q = q, .k = k};
    attn_outputs out = {.stats = stats};
    attn_result res;
    ck_assert_msg(attn_run(e, &d, &in, &out, &res, &err) == RL_OK, "%s", err.msg);
    ck_assert_msg(res.tiles_run < res.tiles_full, "w %u s %u c %u: %llu of %llu tiles", w, sink,
                  chunk, (unsigned long long)res.tiles_run, (unsigned long long)res.tiles_full);
    for (int i = 0; i < n; i++) {
        long cnt, first;
        if (chunk) {
            cnt = i % (long)chunk + 1;
            first = i - i % (long)chunk;
        } else if (sink) {
            cnt = i < (long)(sink + w) ? i + 1 : (long)(sink + w);
            first = 0;
        } else if (causal) {
            cnt = i + 1 < (long)w ? i + 1 : (long)w;
            first = i - cnt + 1;
        } else {
            first = i - (long)w + 1 > 0 ? i - (long)w + 1 : 0;
            long last = i + (long)w - 1 < n - 1 ? i + (long)w - 1 : n - 1;
            cnt = last - first + 1;
        }
        const float *s = stats + i * RL_ATTN_NSTAT;
        uint32_t am;
        memcpy(&am, &s[RL_ATTN_S_ARGMAX], 4);
        ck_assert_msg(fabs(s[RL_ATTN_S_LSE] - log((double)cnt)) < 4e-4,
                      "w %u s %u c %u causal %d row %d: lse %g, log %ld keys %g", w, sink, chunk,
                      causal, i, s[RL_ATTN_S_LSE], cnt, log((double)cnt));
        ck_assert_float_eq(s[RL_ATTN_S_MAX], 0);
        ck_assert_msg(am == (uint32_t)first, "row %d: argmax %u, first visible %ld", i, am, first);
    }
}

START_TEST(gpu_masks_count_visible_keys)
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
    mask_case(&e, 1, 37, 0, 0, q, k, stats, N);
    mask_case(&e, 0, 37, 0, 0, q, k, stats, N);
    mask_case(&e, 1, 20, 6, 0, q, k, stats, N);
    mask_case(&e, 1, 0, 0, 70, q, k, stats, N);
    /* n_sink alone is refused (every key would be visible). */
    attn_desc d = {.tokens = N, .heads = 1, .head_dim = D, .scale = 1, .n_sink = 4};
    attn_inputs in = {.q = q, .k = k};
    attn_outputs out = {.stats = stats};
    attn_result res;
    ck_assert(attn_run(&e, &d, &in, &out, &res, &err) == RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "n_sink") != NULL, "%s", err.msg);
    attn_engine_destroy(&e);
    free(stats);
    free(k);
    free(q);
    rl_gpu_close(&g);
}
END_TEST

/* Learned sinks with q = 0: N keys of logit 0 and a sink logit s_h in the
 * denominator only: L = N + e^(s_h), lse = log L, every p = 1/L, the keys'
 * entropy -sum p log p = (N / L) log L, argmax_p = 1/L, and the masses sum to
 * N / L (hand derivation). Bound as above, 4e-4 (relative 4e-4 on p). */
START_TEST(gpu_learned_sinks_enter_the_denominator_only)
{
    rl_gpu g;
    rl_gpu_open(&g);
    enum { N = 300, H = 2, D = 8 };
    float *q = calloc(N * H * D, sizeof *q), *k = malloc(N * D * sizeof *k);
    for (int i = 0; i < N * D; i++)
        k[i] = (float)((i * 37) % 11) - 5;
    float *stats = malloc(N * H * RL_ATTN_NSTAT * sizeof *stats);
    float *buckets = malloc(N * H * ATTN_MAX_BUCKETS * sizeof *buckets);
    const float sinks[H] = {2.0f, -3.0f};
    attn_engine e;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &e, &err) == RL_OK);
    attn_desc d = {.tokens = N, .heads = H, .kv_heads = 1, .head_dim = D,
                   .flags = ATTN_ENTROPY | ATTN_ARGMAX | ATTN_BUCKETS, .scale = 1};
    attn_inputs in = {.q = q, .k = k, .sinks = sinks};
    attn_outputs out = {.stats = stats, .buckets = buckets};
    attn_result res;
    ck_assert_msg(attn_run(&e, &d, &in, &out, &res, &err) == RL_OK, "%s", err.msg);
    ck_assert_msg(res.verify.verdict.pass, "worst %s", res.verify.worst);
    for (int i = 0; i < N; i += 37)
        for (int h = 0; h < H; h++) {
            const float *s = stats + (i * H + h) * RL_ATTN_NSTAT;
            double L = N + exp((double)sinks[h]);
            ck_assert_double_eq_tol(s[RL_ATTN_S_LSE], log(L), 4e-4);
            ck_assert_double_eq_tol(s[RL_ATTN_S_ENTROPY], N / L * log(L), 4e-4);
            ck_assert_double_eq_tol(s[RL_ATTN_S_ARGMAX_P], 1.0 / L, 4e-4 / L);
            ck_assert_float_eq(s[RL_ATTN_S_MAX], 0); /* the sink is no key */
            double mass = 0;
            for (uint32_t b = 0; b < res.n_buckets; b++)
                mass += buckets[(i * H + h) * res.n_buckets + b];
            ck_assert_double_eq_tol(mass, N / L, 4e-4);
        }
    /* Paired mode with sinks is refused. */
    d.flags = ATTN_PAIRED;
    ck_assert(attn_run(&e, &d, &in, &out, &res, &err) == RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "sinks") != NULL, "%s", err.msg);
    attn_engine_destroy(&e);
    free(buckets);
    free(stats);
    free(k);
    free(q);
    rl_gpu_close(&g);
}
END_TEST

/* O after 34 kernel buckets of an odd number of rows: the statistics and
 * bucket slots then end 2 floats past a multiple of 4, and O, which the
 * kernel reads and writes as vec4 (outv4), must start at the next one
 * (layout_of). Positions 1000 apart span 66000: more than 16 buckets, so
 * the kernel keeps ATTN_MAX_BUCKETS. Every row verified against the double
 * reference (a misaligned O is off by half a vec4 in every row). */
START_TEST(gpu_output_after_odd_bucket_slots)
{
    rl_gpu g;
    rl_gpu_open(&g);
    enum { N = 67, D = 8 };
    float q[N * D], k[N * D], v[N * D], o[N * D];
    uint32_t pos[N];
    for (int i = 0; i < N * D; i++) {
        q[i] = (float)((i * 29) % 13) / 13 - 0.5f;
        k[i] = (float)((i * 17) % 11) / 11 - 0.5f;
        v[i] = (float)((i * 7) % 5) - 2;
    }
    for (int i = 0; i < N; i++)
        pos[i] = 1000u * (uint32_t)i;
    float *stats = malloc(N * RL_ATTN_NSTAT * sizeof *stats);
    float *buckets = malloc(N * ATTN_MAX_BUCKETS * sizeof *buckets);
    attn_engine e;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &e, &err) == RL_OK);
    attn_desc d = {.tokens = N, .heads = 1, .kv_heads = 1, .head_dim = D, .causal = 1,
                   .flags = ATTN_ENTROPY | ATTN_BUCKETS | ATTN_OUT, .scale = 1,
                   .verify_rows = N};
    attn_inputs in = {.q = q, .k = k, .v = v, .pos = pos};
    attn_outputs out = {.stats = stats, .buckets = buckets, .out = o};
    attn_result res;
    ck_assert_msg(attn_run(&e, &d, &in, &out, &res, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_gt(res.n_buckets, 16);
    ck_assert_uint_eq(res.verify.rows, N);
    ck_assert(res.verify.checked[ATTN_V_OUT]);
    ck_assert_msg(res.verify.verdict.pass, "worst %s", res.verify.worst);
    /* row 0 sees key 0 only: its O is v_0 */
    for (int c = 0; c < D; c++)
        ck_assert_float_eq_tol(o[c], v[c], 1e-6);
    attn_engine_destroy(&e);
    free(buckets);
    free(stats);
    rl_gpu_close(&g);
}
END_TEST

/* Texel reads (attn_path.texel: the scalar path of a CPU device) and
 * storage-buffer reads (what GPUs run) load the same values, so every
 * output must have the same bits. Paired, grouped heads, with O, several key
 * chunks and query blocks (300 tokens: 5 chunks of 64 keys; 2 blocks of 256
 * rows on lavapipe), every statistic and buckets (the statistics' vec4
 * write-back): every texel binding is read (Q_a, K_a, Q_b, K_b, V, and O
 * carried between dispatches), fp32 and fp16. Both runs are also verified
 * against the double reference. On a device whose path reads storage
 * buffers both runs are that path (and the test says so). */
START_TEST(gpu_texel_reads_give_the_same_bits)
{
    rl_gpu g;
    rl_gpu_open(&g);
    enum { N = 300, H = 2, D = 16 };
    int fp16 = _i;
    if (fp16 && !g.dev.feat_storage16) {
        rl_gpu_close(&g);
        return;
    }
    size_t nq = (size_t)N * H * D, nk = (size_t)N * D;
    float *qf = malloc(2 * nq * sizeof *qf), *kf = malloc(3 * nk * sizeof *kf);
    uint16_t *qh = malloc(2 * nq * sizeof *qh), *kh = malloc(3 * nk * sizeof *kh);
    ck_assert(qf && kf && qh && kh);
    rl_rng rng;
    rl_rng_seed(&rng, 41, "texel");
    for (size_t i = 0; i < 2 * nq; i++) /* q_a, q_b */
        qh[i] = attn_f32_to_f16(qf[i] = (float)(2 * rl_rng_uniform(&rng) - 1));
    for (size_t i = 0; i < 3 * nk; i++) /* k_a, k_b, v */
        kh[i] = attn_f32_to_f16(kf[i] = (float)(2 * rl_rng_uniform(&rng) - 1));
    uint32_t pos[N], target[N];
    for (int i = 0; i < N; i++) {
        pos[i] = 3u * (uint32_t)i;
        target[i] = (uint32_t)(i * 7 % (i + 1));
    }
    float *stats[2], *o[2], *bk[2];
    attn_engine e;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &e, &err) == RL_OK);
    int texel[2];
    for (int r = 0; r < 2; r++) {
        stats[r] = calloc((size_t)N * H * RL_ATTN_NSTAT, sizeof *stats[r]);
        o[r] = calloc(nq, sizeof *o[r]);
        bk[r] = calloc((size_t)N * H * ATTN_MAX_BUCKETS, sizeof *bk[r]);
        attn_desc d = {.tokens = N, .heads = H, .kv_heads = 1, .head_dim = D, .causal = 1,
                       .fp16 = fp16,
                       .flags = ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS | ATTN_OUT |
                                ATTN_PAIRED,
                       .scale = 0.25f, .scale_b = 0.5f, .verify_rows = 8,
                       .test_storage_reads = r};
        const void *src_q = fp16 ? (const void *)qh : qf, *src_k = fp16 ? (const void *)kh : kf;
        size_t eq = fp16 ? 2 : 4;
        attn_inputs in = {.q = src_q, .k = src_k, .v = (const char *)src_k + 2 * nk * eq,
                          .q_b = (const char *)src_q + nq * eq,
                          .k_b = (const char *)src_k + nk * eq, .pos = pos, .target = target};
        attn_outputs out = {.stats = stats[r], .out = o[r], .buckets = bk[r]};
        attn_result res;
        ck_assert_msg(attn_run(&e, &d, &in, &out, &res, &err) == RL_OK, "%s", err.msg);
        ck_assert_msg(res.verify.verdict.pass, "run %d: worst %s", r, res.verify.worst);
        ck_assert_uint_lt(res.chunk_keys, N); /* O carried over several dispatches */
        texel[r] = res.texel;
    }
    ck_assert_int_eq(texel[1], 0);
    if (g.dev.info.vk_type == VK_PHYSICAL_DEVICE_TYPE_CPU)
        ck_assert_msg(texel[0], "a CPU device's scalar path reads rows as texels");
    else
        printf("texel reads: %s path reads storage buffers; both runs compared it with itself\n",
               g.dev.info.name);
    ck_assert(memcmp(stats[0], stats[1], (size_t)N * H * RL_ATTN_NSTAT * sizeof *stats[0]) == 0);
    ck_assert(memcmp(o[0], o[1], nq * sizeof *o[0]) == 0);
    ck_assert(memcmp(bk[0], bk[1], (size_t)N * H * ATTN_MAX_BUCKETS * sizeof *bk[0]) == 0);
    for (int r = 0; r < 2; r++) {
        free(stats[r]);
        free(o[r]);
        free(bk[r]);
    }
    attn_engine_destroy(&e);
    free(qf);
    free(kf);
    free(qh);
    free(kh);
    rl_gpu_close(&g);
}
END_TEST

/* Temperature: q = e_0, k_j = c_j e_0 with c_j = (j mod 3) - 1, scale 1, so
 * row i's logits are tau_i c_j and (causal) lse_i = log(n_- e^-tau + n_0 +
 * n_+ e^tau) with n_c the keys j <= i of each c, tau_i from the formulas
 * (attn.h) written out here: Llama 4 (attn_scale 0.1, floor_scale 4 at
 * positions 1000 + i), Qwen log-n (L = 64 at positions i), SSMax (s = 0.4,
 * n = i + 1). Bound 1e-4: logits below 3.3 in magnitude, exp 9 ulp, 300
 * terms (4e-5 relative), log 2^-21. Then random q/k through the engine's own
 * verification (tolerance with the temperature's terms, attn_tol.c). */
static double hand_tau(int kind, int i)
{
    if (kind == ATTN_TEMP_LLAMA4)
        return 1 + 0.1 * log(floor((1000.0 + i + 1) / 4) + 1);
    if (kind == ATTN_TEMP_QWEN_LOGN)
        return i + 1 > 64 ? log(i + 1.0) / log(64.0) : 1.0;
    return 0.4 * log(i + 1.0);
}

START_TEST(gpu_temperature_scales_each_querys_logits)
{
    rl_gpu g;
    rl_gpu_open(&g);
    enum { N = 300, D = 8 };
    float *q = calloc(N * 2 * D, sizeof *q), *k = calloc(N * D, sizeof *k);
    uint32_t pos[N];
    float *stats = malloc(N * 2 * RL_ATTN_NSTAT * sizeof *stats);
    attn_engine e;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &e, &err) == RL_OK);
    const int kinds[3] = {ATTN_TEMP_LLAMA4, ATTN_TEMP_QWEN_LOGN, ATTN_TEMP_SSMAX};
    const double as[3] = {0.1, 64, 0.4}, bs[3] = {4, 0, 0};
    for (int c = 0; c < 3; c++) {
        memset(q, 0, N * 2 * D * sizeof *q);
        for (int i = 0; i < N; i++) {
            q[(i * 2 + 0) * D] = q[(i * 2 + 1) * D] = 1;
            k[i * D] = (float)(i % 3 - 1);
            pos[i] = (uint32_t)(kinds[c] == ATTN_TEMP_LLAMA4 ? 1000 + i : i);
        }
        attn_desc d = {.tokens = N, .heads = 2, .kv_heads = 1, .head_dim = D, .causal = 1,
                       .flags = ATTN_ENTROPY, .scale = 1, .temp = kinds[c], .temp_a = as[c],
                       .temp_b = bs[c]};
        attn_inputs in = {.q = q, .k = k, .pos = pos};
        attn_outputs out = {.stats = stats};
        attn_result res;
        ck_assert_msg(attn_run(&e, &d, &in, &out, &res, &err) == RL_OK, "%s", err.msg);
        ck_assert_msg(res.verify.verdict.pass, "kind %d: worst %s", kinds[c], res.verify.worst);
        for (int i = 0; i < N; i += 7) {
            double t = hand_tau(kinds[c], i), n[3] = {0, 0, 0};
            for (int j = 0; j <= i; j++)
                n[j % 3] += 1;
            double want = log(n[0] * exp(-t) + n[1] + n[2] * exp(t));
            ck_assert_msg(fabs(stats[(i * 2 + 1) * RL_ATTN_NSTAT + RL_ATTN_S_LSE] - want) < 1e-4,
                          "kind %d row %d: lse %g, want %g (tau %g)", kinds[c], i,
                          stats[(i * 2 + 1) * RL_ATTN_NSTAT + RL_ATTN_S_LSE], want, t);
        }
        /* random q/k, bidirectional, GQA, through the engine's verification */
        rl_rng rng;
        rl_rng_seed(&rng, 5 + (uint64_t)c, "test/attn/temp");
        for (int i = 0; i < N * 2 * D; i++)
            q[i] = (float)rl_rng_normal(&rng);
        for (int i = 0; i < N * D; i++)
            k[i] = (float)rl_rng_normal(&rng);
        d.causal = 0;
        d.flags = ATTN_ENTROPY | ATTN_ARGMAX | ATTN_BUCKETS;
        d.scale = 0.35f;
        float *bk = malloc(N * 2 * ATTN_MAX_BUCKETS * sizeof *bk);
        out.buckets = bk;
        ck_assert_msg(attn_run(&e, &d, &in, &out, &res, &err) == RL_OK, "%s", err.msg);
        ck_assert_msg(res.verify.verdict.pass, "kind %d random: worst %s ratio %g", kinds[c],
                      res.verify.worst, res.verify.verdict.worst_ratio);
        free(bk);
    }
    attn_desc bad = {.tokens = N, .heads = 1, .head_dim = D, .scale = 1,
                     .temp = ATTN_TEMP_QWEN_LOGN, .temp_a = 1};
    attn_inputs in = {.q = q, .k = k};
    attn_outputs out = {.stats = stats};
    attn_result res;
    ck_assert(attn_run(&e, &bad, &in, &out, &res, &err) == RL_ERR_ARG);
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
 * derived per-statistic bounds of attn/attn_tol.c (see there) and
 * the NMSE gate of verify/vf.h. */
static const chk_attn_case random_cases[] = {
    {65, 4, 2, 64, 1, 0, NULL,
     ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS | ATTN_PAIRED, 0, 0, 0, 0, 0, 0, 0, 0},
    {130, 2, 1, 32, 0, 1, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS, 0, 0, 0, 0, 0, 0, 0, 0},
    {97, 2, 2, 32, 1, 0, "t5", ATTN_ENTROPY | ATTN_PAIRED | ATTN_NO_BIAS_B, 0, 0, 0, 0, 0, 0, 0, 0},
    {70, 4, 2, 32, 0, 0, "xl", ATTN_ENTROPY | ATTN_ARGMAX | ATTN_PAIRED | ATTN_NO_BIAS_B, 0, 0, 0, 0, 0, 0, 0, 0},
    /* 4-key blocks, 3 per dispatch: 12-key chunks start inside the 64-query
     * workgroups (causal rows before a chunk must be left alone) and rows
     * are finished mid-workgroup. */
    {200, 2, 1, 32, 1, 0, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_OUT, 4, 3, 0, 0, 0, 0, 0, 0},
    {130, 4, 2, 16, 0, 1, "alibi", ATTN_ENTROPY | ATTN_BUCKETS | ATTN_PAIRED | ATTN_NO_BIAS_B, 8, 1, 0, 0, 0, 0, 0, 0},
    /* Masks with chunks of 4 or 12 keys, so whole chunks are skipped, rows
     * start on wholly masked blocks and finish mid-workgroup: sliding
     * window (causal; bidirectional with every output and the dump), sinks
     * + window with a bias, chunks, chunks + window. */
    {300, 2, 1, 32, 1, 0, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS | ATTN_OUT,
     4, 1, 37, 0, 0, 0, 0, 0},
    {200, 4, 2, 16, 0, 0, NULL,
     ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS | ATTN_OUT | ATTN_PAIRED, 4, 3, 29, 0, 0, 0, 0, 0},
    {260, 2, 1, 32, 1, 0, "alibi", ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_PAIRED |
     ATTN_NO_BIAS_B, 4, 1, 50, 5, 0, 0, 0, 0},
    {230, 2, 2, 32, 0, 1, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS, 4, 3, 40, 3,
     0, 0, 0, 0},
    {300, 2, 1, 32, 1, 0, "t5", ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_OUT, 4, 1, 0, 0, 70, 0, 0, 0},
    {300, 2, 1, 16, 0, 0, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS, 4, 3, 20, 2,
     90, 0, 0, 0},
    /* Learned sinks (head h: 1.5 - 0.75 h): causal with O and 12-key
     * chunks; bidirectional with a bias and a window (sinks and masks
     * together, as gpt-oss's sliding layers). */
    {200, 2, 1, 32, 1, 0, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS | ATTN_OUT,
     4, 3, 0, 0, 0, 1, 0, 0},
    {150, 4, 2, 16, 0, 0, "alibi", ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS, 4, 1, 33,
     0, 0, 1, 0, 0},
    /* The subgroup-split path (attn_path.c), forced: 2 lanes per row at
     * head_dim 32/64, 4 at 128 and 8 at 256 (lavapipe: subgroup 8); every
     * statistic, fp16, a bias, O across 12-key chunks, a mask, sinks. */
    {65, 4, 2, 64, 1, 0, NULL,
     ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS | ATTN_PAIRED, 0, 0, 0, 0, 0, 0, 0,
     ATTN_PATH_SUBGROUP},
    {130, 2, 1, 32, 0, 1, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS, 0, 0, 0, 0,
     0, 0, 0, ATTN_PATH_SUBGROUP},
    {97, 2, 2, 32, 1, 0, "t5", ATTN_ENTROPY | ATTN_PAIRED | ATTN_NO_BIAS_B, 0, 0, 0, 0, 0, 0, 0,
     ATTN_PATH_SUBGROUP},
    {200, 2, 1, 32, 1, 0, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_OUT, 4, 3, 0, 0, 0, 0,
     0, ATTN_PATH_SUBGROUP},
    {70, 2, 1, 128, 0, 0, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_OUT | ATTN_PAIRED, 0, 0, 0, 0, 0, 0,
     0, ATTN_PATH_SUBGROUP},
    {67, 1, 1, 256, 1, 0, NULL, ATTN_ENTROPY | ATTN_OUT, 0, 0, 0, 0, 0, 0, 0, ATTN_PATH_SUBGROUP},
    {300, 2, 1, 32, 1, 0, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS | ATTN_OUT,
     4, 1, 37, 0, 0, 0, 0, ATTN_PATH_SUBGROUP},
    {200, 2, 1, 32, 1, 0, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS | ATTN_OUT,
     4, 3, 0, 0, 0, 1, 0, ATTN_PATH_SUBGROUP},
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
    if (random_cases[_i].path) { /* a forced path the device supports must run, not skip */
        attn_path_props p;
        attn_path_props_of(&g.dev.info, &p);
        attn_path_shape sh = {.head_dim = random_cases[_i].head_dim, .key_operands = 3};
        attn_path a;
        attn_path_eval(&p, &sh, (attn_path_kind)random_cases[_i].path, &a);
        ck_assert_msg(!a.supported || !row.skipped, "%s %s skipped: %s", row.kernel, row.shape,
                      row.tolerance);
    }
    if (!row.skipped)
        ck_assert_msg(row.stats.pass, "%s %s: worst err/bound %.3f (%s), nmse %g gate %g, nonfinite %zu",
                      row.kernel, row.shape, row.stats.worst_ratio, row.tolerance, row.stats.nmse,
                      row.stats.nmse_gate, row.stats.n_nonfinite);
    attn_engine_destroy(&e);
    rl_gpu_close(&g);
}
END_TEST

/* Rows with more than 65535 keys: lavapipe ends any shader after 65535 loop
 * iterations in total, which once cut such rows short (session-1 failure at
 * 131072 tokens). The kernel now has no loops and splits keys over
 * dispatches; the last row here sees 70001 keys, and the sampled rows (first
 * and last included) must match the double reference. */
/* Sampled query rows (attn_desc.query_rows): each sampled row's statistics,
 * buckets and O equal the full pass's row for that token bit for bit (the
 * same kernel over the same key chunks in the same order; a chunk one pass
 * skips is wholly masked for the row), under causal, masks, temperature,
 * targets and both GPU paths; and the sampled-row verification passes. K
 * and V bound a window of keys per dispatch (as beyond maxStorageBufferRange,
 * forced by test_key_window) give the full pass's bits too.
 * Rows not ascending, beyond the tokens, or with the dump are refused. */
static const struct {
    int causal;
    uint32_t window, n_sink, chunk;
    int temp;
    int path;
} rows_cases[] = {
    {0, 0, 0, 0, 0, 0},   {1, 0, 0, 0, 0, 0},
    {1, 96, 4, 0, 0, 0},  {0, 0, 0, 128, 0, 0},
    {1, 0, 0, 0, ATTN_TEMP_QWEN_LOGN, 0}, {1, 200, 0, 0, 0, ATTN_PATH_SUBGROUP},
};

START_TEST(gpu_sampled_rows_equal_the_full_pass_bit_for_bit)
{
    rl_gpu g;
    rl_gpu_open(&g);
    enum { N = 700, H = 2, KV = 1, D = 16, S = 41 };
    float *q = malloc(N * H * D * sizeof *q), *k = malloc(N * KV * D * sizeof *k);
    float *v = malloc(N * KV * D * sizeof *v), *qs = malloc(S * H * D * sizeof *qs);
    uint32_t rows[S], target[N];
    rl_rng rng;
    rl_rng_seed(&rng, 11, "rows");
    for (int i = 0; i < N * H * D; i++)
        q[i] = (float)rl_rng_normal(&rng);
    for (int i = 0; i < N * KV * D; i++)
        k[i] = (float)rl_rng_normal(&rng), v[i] = (float)rl_rng_normal(&rng);
    for (int i = 0; i < N; i++)
        target[i] = (uint32_t)(i * 7 % (i + 1));
    /* first, last, a run of neighbours, and spread tokens */
    for (int r = 0; r < S; r++)
        rows[r] = r == 0 ? 0 : r == S - 1 ? N - 1 : r < 6 ? (uint32_t)(300 + r) : (uint32_t)(r * 17);
    /* sorted (the spread tokens cross the run) */
    for (int a = 0; a < S; a++)
        for (int b = a + 1; b < S; b++)
            if (rows[b] < rows[a]) {
                uint32_t t = rows[a];
                rows[a] = rows[b];
                rows[b] = t;
            }
    int m = 0; /* drop duplicates */
    for (int r = 0; r < S; r++)
        if (!m || rows[r] != rows[m - 1])
            rows[m++] = rows[r];
    for (int r = 0; r < m; r++)
        memcpy(qs + (size_t)r * H * D, q + (size_t)rows[r] * H * D, H * D * sizeof *q);
    uint32_t nb = attn_n_buckets(N - 1);
    float *st_f = malloc(N * H * RL_ATTN_NSTAT * sizeof *st_f), *st_s = malloc(S * H * RL_ATTN_NSTAT * sizeof *st_s);
    float *b_f = malloc(N * H * nb * sizeof *b_f), *b_s = malloc(S * H * nb * sizeof *b_s);
    float *o_f = malloc(N * H * D * sizeof *o_f), *o_s = malloc(S * H * D * sizeof *o_s);
    attn_engine e;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &e, &err) == RL_OK);
    int c = _i;
    attn_desc d = {.tokens = N, .heads = H, .kv_heads = KV, .head_dim = D,
                   .causal = rows_cases[c].causal, .window = rows_cases[c].window,
                   .n_sink = rows_cases[c].n_sink, .chunk_size = rows_cases[c].chunk,
                   .temp = rows_cases[c].temp, .temp_a = 256, .path = rows_cases[c].path,
                   .flags = ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS | ATTN_OUT,
                   .scale = 0.25f, .chunk_blocks = 1};
    attn_inputs in = {.q = q, .k = k, .v = v, .target = target};
    attn_outputs of = {.stats = st_f, .buckets = b_f, .out = o_f};
    attn_result rf, rs;
    rl_status st = attn_run(&e, &d, &in, &of, &rf, &err);
    if (st == RL_ERR_UNSUPPORTED && rows_cases[c].path) { /* the device lacks the path */
        fprintf(stderr, "rows case %d: %s (skipped)\n", c, err.msg);
        goto out;
    }
    ck_assert_msg(st == RL_OK, "%s", err.msg);
    ck_assert(rf.verify.verdict.pass);
    ck_assert_uint_eq(rf.key_windows, 1);
    {
        /* K, V bound as windows of keys (the path of K beyond one binding,
         * forced at this size): the same bits */
        float *st_w = malloc(N * H * RL_ATTN_NSTAT * sizeof *st_w);
        float *b_w = malloc(N * H * nb * sizeof *b_w), *o_w = malloc(N * H * D * sizeof *o_w);
        attn_desc dw = d;
        dw.test_key_window = 100;
        attn_outputs ow = {.stats = st_w, .buckets = b_w, .out = o_w};
        attn_result rw;
        ck_assert_msg(attn_run(&e, &dw, &in, &ow, &rw, &err) == RL_OK, "%s", err.msg);
        ck_assert_uint_ge(rw.key_windows, 2);
        ck_assert(rw.verify.verdict.pass);
        ck_assert(memcmp(st_w, st_f, N * H * RL_ATTN_NSTAT * sizeof *st_w) == 0);
        ck_assert(memcmp(b_w, b_f, N * H * nb * sizeof *b_w) == 0);
        ck_assert(memcmp(o_w, o_f, N * H * D * sizeof *o_w) == 0);
        free(st_w), free(b_w), free(o_w);
    }
    attn_desc ds = d;
    ds.query_rows = (uint32_t)m;
    attn_inputs is = {.q = qs, .k = k, .v = v, .target = target, .rows = rows};
    attn_outputs os = {.stats = st_s, .buckets = b_s, .out = o_s};
    ck_assert_msg(attn_run(&e, &ds, &is, &os, &rs, &err) == RL_OK, "%s", err.msg);
    ck_assert_msg(rs.verify.verdict.pass, "sampled rows' verification failed (%s)", rs.verify.worst);
    ck_assert_uint_eq(rs.verify.rows, (uint32_t)(m < 32 ? m : 32) * H);
    ck_assert_uint_le(rs.tiles_run, rf.tiles_run);
    for (int r = 0; r < m; r++) {
        size_t a = (size_t)rows[r] * H, b = (size_t)r * H;
        ck_assert_msg(memcmp(st_f + a * RL_ATTN_NSTAT, st_s + b * RL_ATTN_NSTAT,
                             H * RL_ATTN_NSTAT * sizeof *st_f) == 0,
                      "case %d: row %d (token %u) statistics differ", c, r, rows[r]);
        ck_assert(memcmp(b_f + a * nb, b_s + b * nb, H * nb * sizeof *b_f) == 0);
        ck_assert(memcmp(o_f + a * D, o_s + b * D, H * D * sizeof *o_f) == 0);
    }
    /* refusals: not ascending, beyond the tokens, more rows than tokens, the dump */
    uint32_t bad[3] = {5, 5, 9};
    attn_desc d3 = ds;
    d3.query_rows = 3;
    attn_inputs ib = is;
    ib.rows = bad;
    ck_assert(attn_run(&e, &d3, &ib, &os, &rs, &err) == RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "ascend"));
    bad[1] = 6, bad[2] = N;
    ck_assert(attn_run(&e, &d3, &ib, &os, &rs, &err) == RL_ERR_ARG);
    d3.query_rows = N + 1;
    ck_assert(attn_run(&e, &d3, &is, &os, &rs, &err) == RL_ERR_ARG);
    d3.query_rows = 3;
    d3.flags |= ATTN_DUMP;
    ck_assert(attn_run(&e, &d3, &is, &os, &rs, &err) == RL_ERR_UNSUPPORTED);
out:
    attn_engine_destroy(&e);
    free(st_f), free(st_s), free(b_f), free(b_s), free(o_f), free(o_s);
    free(q), free(k), free(v), free(qs);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(gpu_rows_beyond_65535_keys)
{
    rl_gpu g;
    rl_gpu_open(&g);
    attn_engine e;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &e, &err) == RL_OK);
    const chk_attn_case c = {70001, 1, 1, 8, 1, 0, NULL,
                             ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS, 0, 0, 0, 0, 0, 0, 0, 0};
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
 * logit dump is verified against the reference logits (bound E_s, attn_tol.c). */
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
    const double *tol = r1.verify.tol;
    ck_assert_msg(r1.verify.verdict.pass, "worst %s %g, nmse %g gate %g, nonfinite %zu",
                  r1.verify.worst, r1.verify.verdict.worst_ratio, r1.verify.verdict.nmse,
                  r1.verify.verdict.nmse_gate, r1.verify.verdict.n_nonfinite);
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
 * positions go up and only the statistics (and the output's guard words)
 * come back; work recorded before the attention is seen by it; reference
 * operands that are not what the device read fail the exact-operand
 * tolerances (operands off by 1e-3 per element are caught). */
START_TEST(gpu_resident_operands_stay_on_the_device)
{
    rl_gpu g;
    rl_gpu_open(&g);
    enum { N = 200, H = 2, KV = 1, D = 16 };
    float *q = malloc(N * H * D * sizeof *q), *k = malloc(N * KV * D * sizeof *k);
    float *qp = malloc(N * H * D * sizeof *qp), *zero = calloc(N * H * D, sizeof *zero);
    rl_rng rng;
    rl_rng_seed(&rng, 11, "test/attn/resident");
    for (int i = 0; i < N * H * D; i++) {
        q[i] = (float)rl_rng_normal(&rng);
        qp[i] = q[i] + ((i % 3) - 1) * 1e-3f; /* within 1e-3 of q */
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
    ck_assert_uint_eq(g.dev.bytes_uploaded - up,
                      2 * N * 4 + VF_GUARD_BYTES); /* positions+targets, output guard */
    ck_assert_uint_eq(g.dev.bytes_downloaded - down,
                      N * H * RL_ATTN_NSTAT * 4 + VF_GUARD_BYTES); /* statistics, guard */
    ck_assert_mem_eq(s1, s2, sizeof s1);
    ck_assert_uint_eq(r2.verify.rows, r1.verify.rows);
    ck_assert_double_eq(r2.verify.max_abs[ATTN_V_ENTROPY], r1.verify.max_abs[ATTN_V_ENTROPY]);
    ck_assert(r1.verify.verdict.pass && r2.verify.verdict.pass);
    ck_assert_mem_eq(r2.verify.tol, r1.verify.tol, sizeof r1.verify.tol);

    /* Reference operands 1e-3 off the device's: the tolerances stay those
     * of exact operands, and the verdict fails. */
    ri.ref.q = qp;
    ck_assert_msg(attn_run_resident(&e, &d, &ri, &o2, &r2, &err) == RL_OK, "%s", err.msg);
    ck_assert(!r2.verify.verdict.pass);

    /* Work recorded before the attention in its first command buffer: Q
     * zeroed, so row i is uniform over its i + 1 keys. */
    ri = (attn_resident){.q = &bq, .k = &bk, .before = zero_q, .before_ctx = &bq,
                         .ref = {.q = zero, .k = k}};
    hook_calls = 0;
    ck_assert_msg(attn_run_resident(&e, &d, &ri, &o2, &r2, &err) == RL_OK, "%s", err.msg);
    ck_assert_int_eq(hook_calls, 1);
    for (int i = 0; i < N; i += 17)
        ck_assert_double_eq_tol(s2[i * H * RL_ATTN_NSTAT + RL_ATTN_S_LSE], log(i + 1.0), 4e-4);
    ck_assert_msg(r2.verify.verdict.pass, "%s", r2.verify.worst);

    /* A buffer smaller than its tensor is refused, naming it. */
    ri.k = &bq, ri.q = &bk;
    ck_assert_int_eq(attn_run_resident(&e, &d, &ri, &o2, &r2, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "K'"));
    rlvk_buffer_destroy(&g.dev, &bk);
    rlvk_buffer_destroy(&g.dev, &bq);
    attn_engine_destroy(&e);
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

/* The cooperative-matrix path where the device lacks it (lavapipe): the
 * engine refuses it with the reason, the extension is not enabled, and the
 * same problem runs (and verifies) on the scalar kernel. On a device that
 * has the path, the same problem runs and verifies on it. */
START_TEST(gpu_coopmat_path_is_refused_with_its_reason_or_runs)
{
    rl_gpu g;
    rl_gpu_open(&g);
    rl_error err = {0};
    attn_engine e;
    ck_assert(attn_engine_create(&g.dev, &e, &err) == RL_OK);
    enum { N = 20, D = 16 };
    uint16_t q[N * D], k[N * D];
    float stats[N * RL_ATTN_NSTAT];
    rl_rng rng;
    rl_rng_seed(&rng, 5, "test/attn/coopmat");
    for (int i = 0; i < N * D; i++) {
        q[i] = attn_f32_to_f16((float)rl_rng_normal(&rng));
        k[i] = attn_f32_to_f16((float)rl_rng_normal(&rng));
    }
    attn_desc d = {.tokens = N, .heads = 1, .head_dim = D, .fp16 = 1, .coopmat = 1,
                   .causal = 1, .flags = ATTN_ENTROPY | ATTN_ARGMAX, .scale = 0.25f};
    attn_inputs in = {.q = q, .k = k};
    attn_outputs out = {.stats = stats};
    attn_result res;
    const char *why;
    int have = attn_cm_supported(&g.dev.info, &why);
    rl_status st = attn_run(&e, &d, &in, &out, &res, &err);
    if (!have) {
        ck_assert_int_eq(g.dev.feat_coopmat_nv, 0);
        ck_assert_int_eq(g.dev.feat_coopmat_khr, 0);
        ck_assert_int_eq(st, RL_ERR_UNSUPPORTED);
        ck_assert_msg(strstr(err.msg, why), "'%s' lacks '%s'", err.msg, why);
        if (!g.dev.info.cm.has_nv && !g.dev.info.cm.has_khr)
            ck_assert(g.dev.info.cm.n_shapes == 0 && g.dev.info.cm.n_listed == 0);
        d.coopmat = 0; /* the fallback */
        st = attn_run(&e, &d, &in, &out, &res, &err);
    }
    ck_assert_msg(st == RL_OK, "%s", err.msg);
    ck_assert(res.verify.verdict.pass);
    attn_engine_destroy(&e);
    rl_gpu_close(&g);
}
END_TEST

/* attn_cm.comp with its three tensor ops emulated by subgroup loops (the
 * extension's layout rule on the same operands; test_cm_emulate): the
 * kernel's staging, tile layouts, online softmax from the stored S tiles,
 * fp16 P and the P V fold, across chunks (chunk_blocks 1 and automatic),
 * against the double reference. The cooperative-matrix instructions
 * themselves do not run here. */
static const struct {
    uint32_t n, heads, kv, dim, flags, blocks;
    int causal;
    uint32_t tile; /* emulated M = N = K: 16 (NV's) or 8 (lavapipe's KHR) */
} cm_emu_cases[] = {
    {1, 1, 1, 16, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_OUT, 0, 1, 16},
    {17, 2, 1, 16, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_OUT, 1, 0, 16},
    {65, 4, 2, 64, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_OUT, 1, 1, 16},
    {130, 4, 2, 64, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET, 0, 0, 16},
    {150, 2, 2, 128, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET, 3, 1, 16},
    {257, 2, 1, 32, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_OUT, 0, 1, 16},
    {9, 2, 1, 8, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_OUT, 1, 0, 8},
    {65, 4, 2, 64, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_OUT, 1, 1, 8},
    {150, 2, 2, 40, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET, 3, 0, 8},
};

START_TEST(gpu_coopmat_kernel_logic_with_emulated_tensor_ops)
{
    rl_gpu g;
    rl_gpu_open(&g);
    rl_error err = {0};
    attn_engine e;
    ck_assert(attn_engine_create(&g.dev, &e, &err) == RL_OK);
    uint32_t n = cm_emu_cases[_i].n, h = cm_emu_cases[_i].heads, kv = cm_emu_cases[_i].kv,
             dim = cm_emu_cases[_i].dim;
    size_t nq = (size_t)n * h * dim, nk = (size_t)n * kv * dim;
    uint16_t *q = malloc(nq * 2), *k = malloc(nk * 2), *v = malloc(nk * 2);
    uint32_t *target = malloc(n * sizeof *target);
    float *stats = malloc((size_t)n * h * RL_ATTN_NSTAT * sizeof *stats);
    float *o = malloc(nq * sizeof *o);
    ck_assert(q && k && v && target && stats && o);
    rl_rng rng;
    rl_rng_seed(&rng, 40 + (uint64_t)_i, "test/attn/cm_emu");
    for (size_t i = 0; i < nq; i++)
        q[i] = attn_f32_to_f16((float)rl_rng_normal(&rng));
    for (size_t i = 0; i < nk; i++) {
        k[i] = attn_f32_to_f16((float)rl_rng_normal(&rng));
        v[i] = attn_f32_to_f16((float)rl_rng_normal(&rng));
    }
    for (uint32_t t = 0; t < n; t++)
        target[t] = (uint32_t)(rl_rng_u64(&rng) % n);
    attn_desc d = {.tokens = n, .heads = h, .kv_heads = kv, .head_dim = dim, .fp16 = 1,
                   .coopmat = 1, .test_cm_emulate = 1, .test_cm_tile = cm_emu_cases[_i].tile,
                   .causal = cm_emu_cases[_i].causal,
                   .flags = cm_emu_cases[_i].flags, .chunk_blocks = cm_emu_cases[_i].blocks,
                   .scale = (float)(1.0 / sqrt(dim)), .verify_rows = 64};
    attn_inputs in = {.q = q, .k = k, .v = v, .target = target};
    attn_outputs out = {.stats = stats, .out = o};
    attn_result res;
    ck_assert_msg(attn_run(&e, &d, &in, &out, &res, &err) == RL_OK, "%s", err.msg);
    ck_assert_msg(res.verify.verdict.pass, "case %d: worst %s (%.3f of its bound)", _i,
                  res.verify.worst, res.verify.verdict.worst_ratio);
    ck_assert(res.verify.checked[ATTN_V_ENTROPY] && res.verify.checked[ATTN_V_TARGET_P]);
    ck_assert_int_eq(res.verify.checked[ATTN_V_OUT], (d.flags & ATTN_OUT) != 0);
    /* The argmax p is 1 / l, the max key's own probability: a direct check
     * that the kernel's l and max agree on every row. */
    for (size_t r = 0; r < (size_t)n * h; r++) {
        const float *st = stats + r * RL_ATTN_NSTAT;
        ck_assert(fabs(st[RL_ATTN_S_ARGMAX_P] - exp(st[RL_ATTN_S_MAX] - st[RL_ATTN_S_LSE])) <=
                  1e-5 * st[RL_ATTN_S_ARGMAX_P] + 1e-30);
    }
    free(q);
    free(k);
    free(v);
    free(target);
    free(stats);
    free(o);
    attn_engine_destroy(&e);
    rl_gpu_close(&g);
}
END_TEST


/* ---- the verdict of `ropelab check` on broken results ------------------- */

/* Fixture of the verdict tests: device, engine, q, k ~ N(0, 1) ([n][h][dim]
 * and [n][kvh][dim]), positions 0, 1, ... and room for the statistics. */
typedef struct vfx {
    rl_gpu g;
    attn_engine e;
    float *q, *k, *stats;
    uint32_t *pos;
    rl_error err;
} vfx;

static void vfx_open(vfx *x, uint64_t n, uint32_t h, uint32_t kvh, uint32_t dim)
{
    memset(x, 0, sizeof *x);
    rl_gpu_open(&x->g);
    ck_assert(attn_engine_create(&x->g.dev, &x->e, &x->err) == RL_OK);
    x->q = malloc(n * h * dim * sizeof *x->q);
    x->k = malloc(n * kvh * dim * sizeof *x->k);
    x->stats = malloc(n * h * RL_ATTN_NSTAT * sizeof *x->stats);
    x->pos = malloc(n * sizeof *x->pos);
    ck_assert(x->q && x->k && x->stats && x->pos);
    rl_rng rng;
    rl_rng_seed(&rng, 21, "test/attn/verdict");
    for (uint64_t i = 0; i < n * h * dim; i++)
        x->q[i] = (float)rl_rng_normal(&rng);
    for (uint64_t i = 0; i < n * kvh * dim; i++)
        x->k[i] = (float)rl_rng_normal(&rng);
    for (uint64_t t = 0; t < n; t++)
        x->pos[t] = (uint32_t)t;
}

static void vfx_close(vfx *x)
{
    attn_engine_destroy(&x->e);
    free(x->stats);
    free(x->pos);
    free(x->k);
    free(x->q);
    rl_gpu_close(&x->g);
}

/* 1 when `ropelab check`'s report fails a row carrying this verdict. */
static int check_fails(const vf_stats *s, int guard_ok)
{
    chk_report rep = {0};
    rl_error err = {0};
    chk_row row = {.guard_ok = guard_ok, .stats = *s};
    snprintf(row.kernel, sizeof row.kernel, "attn_none");
    ck_assert(chk_report_add(&rep, &row, &err) == RL_OK);
    int failed = rep.failed;
    chk_report_free(&rep);
    return failed;
}

/* A kernel that writes past its output tensor: the test hook overwrites the
 * first guard word after the attention outputs. The statistics themselves
 * are right, so only the guard can fail the row, and check must fail it. */
START_TEST(gpu_check_fails_a_write_past_the_attention_outputs)
{
    enum { N = 70, H = 2, D = 32 };
    vfx x;
    vfx_open(&x, N, H, H, D);
    attn_desc d = {.tokens = N, .heads = H, .head_dim = D, .flags = ATTN_ENTROPY,
                   .scale = (float)(1 / sqrt(D))};
    attn_inputs in = {.q = x.q, .k = x.k, .pos = x.pos};
    attn_outputs out = {.stats = x.stats};
    for (int hook = 0; hook < 2; hook++) {
        attn_result res;
        d.test_write_past = hook;
        ck_assert_msg(attn_run(&x.e, &d, &in, &out, &res, &x.err) == RL_OK, "%s", x.err.msg);
        ck_assert_int_eq(res.guard_ok, !hook);
        ck_assert_int_eq(res.verify.verdict.pass, !hook);
        ck_assert_uint_eq(res.verify.verdict.n_over, 0); /* the numbers are fine */
        ck_assert_int_eq(check_fails(&res.verify.verdict, res.guard_ok), hook);
    }
    vfx_close(&x);
}
END_TEST

/* A NaN in one query makes that row's statistics NaN on the device and in
 * the double reference alike; NaN never equals NaN, so the row fails (and
 * the reference NaN is reported), where comparing got == want would pass. */
START_TEST(gpu_check_fails_nan_against_nan_reference)
{
    enum { N = 40, H = 1, D = 16 };
    vfx x;
    vfx_open(&x, N, H, H, D);
    x.q[(N - 1) * H * D + 3] = NAN; /* the last token is always verified */
    attn_desc d = {.tokens = N, .heads = H, .head_dim = D, .causal = 1, .flags = ATTN_ENTROPY,
                   .scale = 0.25f};
    attn_inputs in = {.q = x.q, .k = x.k, .pos = x.pos};
    attn_outputs out = {.stats = x.stats};
    attn_result res;
    ck_assert_msg(attn_run(&x.e, &d, &in, &out, &res, &x.err) == RL_OK, "%s", x.err.msg);
    ck_assert(isnan(x.stats[(N - 1) * H * RL_ATTN_NSTAT + RL_ATTN_S_LSE]));
    ck_assert(res.guard_ok);
    ck_assert(!res.verify.verdict.pass);
    ck_assert_uint_gt(res.verify.verdict.n_ref_nan, 0);
    ck_assert(check_fails(&res.verify.verdict, 1));
    vfx_close(&x);
}
END_TEST

/* The downloaded statistics of a correct run, their errors against the
 * double reference made 10x larger: every value stays inside its
 * worst-case bound (the bounds are far from the errors), but the NMSE gate
 * fails the row. The unaltered result passes the same re-verification. */
START_TEST(gpu_check_fails_a_tenfold_error_inside_the_bounds)
{
    enum { N = 300, H = 2, D = 64 };
    vfx x;
    vfx_open(&x, N, H, H, D);
    double *scratch = malloc(2 * N * sizeof *scratch);
    attn_desc d = {.tokens = N, .heads = H, .head_dim = D, .flags = ATTN_ENTROPY | ATTN_ARGMAX,
                   .scale = (float)(1 / sqrt(D))};
    attn_inputs in = {.q = x.q, .k = x.k, .pos = x.pos};
    attn_outputs out = {.stats = x.stats};
    attn_result res;
    ck_assert_msg(attn_run(&x.e, &d, &in, &out, &res, &x.err) == RL_OK, "%s", x.err.msg);
    ck_assert(res.verify.verdict.pass);
    attn_verify v;
    ck_assert(attn_verify_outputs(&d, &in, &out, 1, 1, &v, &x.err) == RL_OK);
    ck_assert_msg(v.verdict.pass, "unaltered: nmse %g gate %g", v.verdict.nmse,
                  v.verdict.nmse_gate);
    ck_assert(!check_fails(&v.verdict, 1));
    attn_ref_problem P = {.tokens = N, .heads = H, .kv_heads = H, .head_dim = D,
                          .scale = d.scale, .q = x.q, .k = x.k, .pos = x.pos};
    for (uint64_t i = 0; i < N; i++)
        for (uint32_t h = 0; h < H; h++) {
            attn_ref_row R;
            attn_ref_row_stats(&P, h, i, UINT64_MAX, 0, scratch, &R, NULL, NULL, NULL);
            float *s = x.stats + (i * H + h) * RL_ATTN_NSTAT;
            s[RL_ATTN_S_LSE] = (float)(R.lse + 10 * (s[RL_ATTN_S_LSE] - R.lse));
            s[RL_ATTN_S_MAX] = (float)(R.max + 10 * (s[RL_ATTN_S_MAX] - R.max));
            s[RL_ATTN_S_ENTROPY] = (float)(R.entropy + 10 * (s[RL_ATTN_S_ENTROPY] - R.entropy));
        }
    ck_assert(attn_verify_outputs(&d, &in, &out, 1, 1, &v, &x.err) == RL_OK);
    ck_assert_uint_eq(v.verdict.n_over, 0);
    ck_assert_uint_eq(v.verdict.n_nonfinite, 0);
    ck_assert_msg(v.verdict.worst_ratio < 1, "worst %g", v.verdict.worst_ratio);
    ck_assert_msg(!v.verdict.nmse_ok, "10x: nmse %g gate %g", v.verdict.nmse, v.verdict.nmse_gate);
    ck_assert(!v.verdict.pass);
    ck_assert(check_fails(&v.verdict, 1));
    free(scratch);
    vfx_close(&x);
}
END_TEST

/* Transformer-XL with u, v, W_R of sigma 0.3 at distances up to 2^20 (few
 * tokens, positions 2^20 / 63 apart): the bias's fp32 sin/cos error grows
 * with the distance and is within XL's own bound (pe_bias_bound); the
 * attention tolerance carries that bound, so verification passes. Without
 * the bias's bound in the tolerance it fails (the bug this guards). */
START_TEST(gpu_xl_sigma_03_verifies_up_to_2_pow_20)
{
    enum { N = 64, H = 2, KV = 1, D = 32 };
    vfx x;
    vfx_open(&x, N, H, KV, D);
    for (uint64_t t = 0; t < N; t++)
        x.pos[t] = (uint32_t)(t * (1u << 20) / (N - 1));
    ck_assert_uint_eq(x.pos[N - 1], 1u << 20);
    json_t *p = json_pack("{s:f}", "sigma", 0.3);
    pe_shape shape = {.head_dim = D, .heads = H, .kv_heads = KV, .seed = 3,
                      .max_positions = (1u << 20) + 1};
    pe_encoding *enc = NULL;
    ck_assert_msg(pe_encoding_create("xl", p, &shape, &enc, &x.err) == RL_OK, "%s", x.err.msg);
    json_decref(p);
    attn_pe_bias pb;
    ck_assert_msg(attn_pe_bias_create(&x.g.dev, enc, x.q, x.k, N, H, KV, D, &pb, &x.err) == RL_OK,
                  "%s", x.err.msg);
    float *buckets = malloc(N * H * ATTN_MAX_BUCKETS * sizeof *buckets);
    uint32_t *target = malloc(N * sizeof *target);
    for (uint32_t t = 0; t < N; t++)
        target[t] = (t * 7) % N;
    attn_desc d = {.tokens = N, .heads = H, .kv_heads = KV, .head_dim = D, .causal = 1,
                   .flags = ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS,
                   .scale = (float)(1 / sqrt(D)), .verify_rows = N};
    attn_inputs in = {.q = x.q, .k = x.k, .pos = x.pos, .target = target, .bias = &pb.bias};
    attn_outputs out = {.stats = x.stats, .buckets = buckets};
    attn_result res;
    ck_assert_msg(attn_run(&x.e, &d, &in, &out, &res, &x.err) == RL_OK, "%s", x.err.msg);
    ck_assert(res.verify.max_bias_err > 0);
    ck_assert_msg(res.verify.verdict.pass, "xl sigma 0.3: worst %s err/bound %.3g, nmse %g gate %g",
                  res.verify.worst, res.verify.verdict.worst_ratio, res.verify.verdict.nmse,
                  res.verify.verdict.nmse_gate);
    /* The same result judged without the bias's own bound fails. */
    attn_bias nobound = pb.bias;
    nobound.bound = NULL;
    in.bias = &nobound;
    attn_verify v;
    ck_assert(attn_verify_outputs(&d, &in, &out, res.n_buckets, 1, &v, &x.err) == RL_OK);
    ck_assert_msg(!v.verdict.pass, "without the bias bound: worst %s %.3g", v.worst,
                  v.verdict.worst_ratio);
    attn_pe_bias_destroy(&x.g.dev, &pb);
    pe_encoding_destroy(enc);
    free(target);
    free(buckets);
    vfx_close(&x);
}
END_TEST

int main(void)
{
    rl_test_pin_driver();
    rl_test_require_vulkan("attn_gpu");
    Suite *s = suite_create("attn_gpu");
    /* hand-derived values: uniform logits, ALiBi, masks, sinks, temperature */
    TCase *tc_hand = tcase_create("hand");
    tcase_set_timeout(tc_hand, 300);
    tcase_add_test(tc_hand, gpu_uniform_logits_give_log_n);
    tcase_add_test(tc_hand, gpu_bias_hook_adds_alibi_logits);
    tcase_add_test(tc_hand, gpu_masks_count_visible_keys);
    tcase_add_test(tc_hand, gpu_learned_sinks_enter_the_denominator_only);
    tcase_add_test(tc_hand, gpu_temperature_scales_each_querys_logits);
    suite_add_tcase(s, tc_hand);
    /* the output's place after the bucket slots; texel reads against storage reads */
    TCase *tc_layout = tcase_create("layout");
    tcase_set_timeout(tc_layout, 300);
    tcase_add_test(tc_layout, gpu_output_after_odd_bucket_slots);
    tcase_add_loop_test(tc_layout, gpu_texel_reads_give_the_same_bits, 0, 2);
    suite_add_tcase(s, tc_layout);
    /* random problems, long rows and sampled rows against the reference */
    TCase *tc_reference = tcase_create("reference");
    tcase_set_timeout(tc_reference, 300);
    tcase_add_loop_test(tc_reference, gpu_random_problems_match_reference, 0,
                        (int)(sizeof random_cases / sizeof random_cases[0]));
    tcase_add_loop_test(tc_reference, gpu_sampled_rows_equal_the_full_pass_bit_for_bit, 0,
                        (int)RL_ARRAY_LEN(rows_cases));
    suite_add_tcase(s, tc_reference);
    /* one row past 65535 keys: a full pass over 70001 tokens */
    TCase *tc_long = tcase_create("long");
    tcase_set_tags(tc_long, "long"); /* its own meson test, attn_gpu_long (tests/meson.build) */
    tcase_set_timeout(tc_long, 300);
    tcase_add_test(tc_long, gpu_rows_beyond_65535_keys);
    suite_add_tcase(s, tc_long);
    /* the engine: split submissions and dump, resident operands, size limits */
    TCase *tc_engine = tcase_create("engine");
    tcase_set_timeout(tc_engine, 300);
    tcase_add_test(tc_engine, gpu_split_submissions_and_dump);
    tcase_add_test(tc_engine, gpu_resident_operands_stay_on_the_device);
    tcase_add_test(tc_engine, gpu_refuses_sizes_beyond_limits);
    suite_add_tcase(s, tc_engine);
    TCase *tc_coopmat = tcase_create("coopmat");
    tcase_set_timeout(tc_coopmat, 300);
    tcase_add_test(tc_coopmat, gpu_coopmat_path_is_refused_with_its_reason_or_runs);
    tcase_add_loop_test(tc_coopmat, gpu_coopmat_kernel_logic_with_emulated_tensor_ops, 0,
                        (int)RL_ARRAY_LEN(cm_emu_cases));
    suite_add_tcase(s, tc_coopmat);
    /* check's verdict: broken results fail, XL's bias bound keeps a right one passing */
    TCase *tc_verdict = tcase_create("verdict");
    tcase_set_timeout(tc_verdict, 300);
    tcase_add_test(tc_verdict, gpu_check_fails_a_write_past_the_attention_outputs);
    tcase_add_test(tc_verdict, gpu_check_fails_nan_against_nan_reference);
    tcase_add_test(tc_verdict, gpu_check_fails_a_tenfold_error_inside_the_bounds);
    tcase_add_test(tc_verdict, gpu_xl_sigma_03_verifies_up_to_2_pow_20);
    suite_add_tcase(s, tc_verdict);
    return rl_test_run(s);
}
