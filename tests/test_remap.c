/* Position remapping (Self-Extend, ReRoPE, Leaky ReRoPE, DCA, LM-Infinite,
 * STRING): attn/attn_remap.c,
 * the engine's selection (attn_desc.remap_window, shaders/attn_remap.glsl)
 * and the attention kinds' attn_remap keys. The expected logits are built
 * here from each method's relative distance as written in its paper / code
 * (RoPE's logit depends on the distance only), not from the position maps
 * the host hands the kernel. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/chk.h"
#include "core/rl_util.h"
#include "exp/exp.h"
#include "pe/pe.h"
/* one device for the suite (rl_test.h) */
#define RL_TEST_SHARED_GPU
#include "rl_test.h"

/* The distance of (i, j) under each method, from the sources:
 * Self-Extend (LongLM): i - j < W exact; else q at floor(i/G) + W - floor(W/G),
 * k at floor(j/G). ReRoPE: w beyond w. Leaky: w + (i - j - w)/k.
 * DCA (ChunkLlama, chunk_size S, local window L = W, chunk_len c = S - L):
 * keys at j % c; the same chunk: q at i % c; the previous chunk: q at
 * min(i % c + c, S); earlier chunks: q at min(c - 1 + c, S). */
/* self_extend_floor's id: after the built-in methods and lm_infinite
 * (registry order; registry_entries_are_complete_and_listed checks it) */
#define SE_FLOOR 6

static double want_distance(int method, long W, long G, long K, long S, long i, long j)
{
    long d = i - j;
    if (method == ATTN_REMAP_DCA) {
        long c = S - W, ci = i / c, cj = j / c;
        if (ci == cj)
            return (double)d;
        long qp = ci - cj == 1 ? (i % c + c < S ? i % c + c : S) : (2 * c - 1 < S ? 2 * c - 1 : S);
        return (double)(qp - j % c);
    }
    if (labs(d) < W)
        return (double)d;
    if (method == ATTN_REMAP_SELF_EXTEND || method == SE_FLOOR) /* self_extend: G divides W */
        return (double)(i / G + W - W / G - j / G);
    if (method == ATTN_REMAP_REROPE)
        return (double)W;
    return (double)W + (double)(d - W) / (double)K;
}

/* <R(a) q, R(b) k> of half-layout RoPE (theta 10000) for a - b = dist, in
 * double: sum over pairs m of (q1 k1 + q2 k2) cos(dist w_m) - (q2 k1 - q1 k2)
 * sin(dist w_m), w_m = 10000^(-2m/D). */
static double rope_dot(const float *q, const float *k, int D, double dist)
{
    double s = 0;
    for (int m = 0; m < D / 2; m++) {
        double w = pow(10000.0, -2.0 * m / D), c = cos(dist * w), sn = sin(dist * w);
        double q1 = q[m], q2 = q[m + D / 2], k1 = k[m], k2 = k[m + D / 2];
        s += (q1 * k1 + q2 * k2) * c - (q2 * k1 - q1 * k2) * sn;
    }
    return s;
}

static const struct {
    int method;
    uint32_t W, G, K, S, p0;
} dump_cases[] = {
    {SE_FLOOR, 6, 4, 1, 0, 0},                       /* G does not divide W: the integer form */
    {ATTN_REMAP_SELF_EXTEND, 12, 4, 1, 0, 0},
    {ATTN_REMAP_SELF_EXTEND, 8, 2, 1, 0, 1048550},   /* positions near 2^20 */
    {ATTN_REMAP_REROPE, 5, 1, 1, 0, 3},
    {ATTN_REMAP_REROPE, 7, 1, 1, 0, 1048550},
    {ATTN_REMAP_LEAKY_REROPE, 5, 1, 4, 0, 0},
    {ATTN_REMAP_LEAKY_REROPE, 9, 1, 16, 0, 1048550},
    /* DCA: c = 9, successive and inter clamped at S = 12; c = 8, neither
     * clamped (S = 20); 40 tokens span 5 chunks (distances 0, 1, >= 2) */
    {ATTN_REMAP_DCA, 3, 1, 1, 12, 0},
    {ATTN_REMAP_DCA, 12, 1, 1, 20, 1048550},
};

/* Every causal logit of a 40-token problem (GQA 2 over 1 head) from the
 * logit dump, against rope_dot at want_distance: the window edges i - j =
 * W - 1, W, W + 1 are all inside. RoPE in table mode (host double cos/sin):
 * each rotated element is off by a few fp32 roundings, the dot of D = 16
 * products of N(0,1) values by ~(D + 4) u sum |q k|, so 2e-5 (|logit| <~ 6
 * here) is a bound with margin that a wrong distance (>= 1/16 rad on the
 * fastest pair) breaks by orders of magnitude. The engine's own
 * verification passes too. */
START_TEST(remapped_logits_are_rope_at_the_methods_distance)
{
    enum { T = 40, H = 2, KV = 1, D = 16 };
    rl_gpu g;
    rl_gpu_open(&g);
    uint32_t p0 = dump_cases[_i].p0;
    pe_shape s = {.head_dim = D, .heads = H, .kv_heads = KV, .max_positions = p0 + T};
    json_t *ep = json_pack("{s:s}", "precision", "table");
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_msg(pe_encoding_create("rope", ep, &s, &e, &err) == RL_OK, "%s", err.msg);
    json_decref(ep);
    static float q[T * H * D], k[T * KV * D], dump[H * T * T];
    float stats[T * H * RL_ATTN_NSTAT];
    uint32_t pos[T];
    rl_rng rng;
    rl_rng_seed(&rng, 11 + (uint64_t)_i, "test/remap");
    for (int i = 0; i < T * H * D; i++)
        q[i] = (float)rl_rng_normal(&rng);
    for (int i = 0; i < T * KV * D; i++)
        k[i] = (float)rl_rng_normal(&rng);
    for (int t = 0; t < T; t++)
        pos[t] = p0 + (uint32_t)t;
    attn_engine eng;
    ck_assert(attn_engine_create(&g.dev, &eng, &err) == RL_OK);
    exp_attn_io io = {.tokens = T, .q = q, .k = k, .pos = pos, .causal = 1,
                      .flags = ATTN_ENTROPY | ATTN_DUMP};
    io.mask.remap = (attn_remap){.method = dump_cases[_i].method, .window = dump_cases[_i].W,
                                 .group = dump_cases[_i].G, .leak = dump_cases[_i].K,
                                 .chunk = dump_cases[_i].S};
    attn_outputs out = {.stats = stats, .dump = dump};
    exp_attn_result r;
    ck_assert_msg(exp_attn_run(&g.dev, &eng, e, &io, &out, &r, &err) == RL_OK, "%s", err.msg);
    ck_assert_msg(r.pass, "worst %s %g", r.worst, r.attn_stats.worst_ratio);
    ck_assert_uint_gt(r.vec_qb.n, 0); /* the remapped operands were verified */
    double worst = 0, scale = 1.0 / sqrt((double)D);
    for (int h = 0; h < H; h++)
        for (long i = 0; i < T; i++)
            for (long j = 0; j <= i; j++) {
                double dist = want_distance(dump_cases[_i].method, dump_cases[_i].W,
                                            dump_cases[_i].G, dump_cases[_i].K, dump_cases[_i].S,
                                            (long)p0 + i, (long)p0 + j);
                double want = scale * rope_dot(q + (i * H + h) * D, k + j * KV * D, D, dist);
                double got = dump[(h * T + i) * T + j];
                double e_ = fabs(got - want);
                if (e_ > worst)
                    worst = e_;
                ck_assert_msg(e_ <= 2e-5, "case %d h %d i %ld j %ld: %.9g want %.9g (dist %g)",
                              _i, h, i, j, got, want, dist);
            }
    fprintf(stderr, "remap case %d (%s W %u G %u k %u S %u p0 %u): max |logit error| %.3g\n",
            _i, attn_remap_name(dump_cases[_i].method), dump_cases[_i].W, dump_cases[_i].G,
            dump_cases[_i].K, dump_cases[_i].S, p0, worst);
    attn_engine_destroy(&eng);
    pe_encoding_destroy(e);
    rl_gpu_close(&g);
}
END_TEST

/* The host's position maps give each method's distance (CPU): for
 * self_extend and rerope qpos - kpos, for leaky_rerope (qpos - kpos) / k
 * (its twin is linear with factor k), against want_distance beyond the
 * window; and attn_remap_distance agrees with want_distance everywhere. */
START_TEST(position_maps_give_the_methods_distance)
{
    rl_error err = {0};
    const attn_remap rs[] = {{SE_FLOOR, 6, 4, 1, 0, 0}, {ATTN_REMAP_SELF_EXTEND, 12, 4, 1, 0, 0},
                             {ATTN_REMAP_SELF_EXTEND, 512, 8, 1, 0, 0},
                             {ATTN_REMAP_REROPE, 5, 1, 1, 0, 0},
                             {ATTN_REMAP_LEAKY_REROPE, 7, 1, 3, 0, 0},
                             {ATTN_REMAP_DCA, 40, 1, 1, 100, 0}, {ATTN_REMAP_DCA, 90, 1, 1, 100, 0}};
    uint32_t pos[300], qp[300], kp[300];
    for (int t = 0; t < 300; t++)
        pos[t] = 1048000u + (uint32_t)t * 3u;
    for (size_t c = 0; c < sizeof rs / sizeof rs[0]; c++) {
        const attn_remap *r = &rs[c];
        uint32_t qa[300], qs[300], qi[300];
        if (r->method == ATTN_REMAP_DCA)
            ck_assert_int_eq(attn_remap_dca_positions(r, pos, 300, qa, qs, qi, kp, &err), RL_OK);
        else
            ck_assert_int_eq(attn_remap_positions(r, pos, 300, qp, kp, &err), RL_OK);
        for (int i = 0; i < 300; i++)
            for (int j = 0; j <= i; j++) {
                long pi = pos[i], pj = pos[j];
                double want = want_distance(r->method, r->window, r->group, r->leak, r->chunk, pi,
                                            pj);
                ck_assert_double_eq_tol(attn_remap_distance(r, pi, pj), want, 1e-9);
                if (r->method == ATTN_REMAP_DCA) {
                    long c = (long)(r->chunk - r->window), dc = pi / c - pj / c;
                    uint32_t q = dc == 0 ? qa[i] : dc == 1 ? qs[i] : qi[i];
                    ck_assert_double_eq_tol((double)q - (double)kp[j], want, 1e-9);
                    continue;
                }
                if (labs(pi - pj) < (long)r->window)
                    continue;
                double got = ((double)qp[i] - (double)kp[j]) /
                             (r->method == ATTN_REMAP_LEAKY_REROPE ? r->leak : 1);
                ck_assert_double_eq_tol(got, want, 1e-9);
            }
    }
    /* Self-Extend's offset is LongLM's W - W/G, a true division: a window
     * the group does not divide would need a fractional position */
    ck_assert_int_eq(attn_remap_from_name("self_extend_floor"), SE_FLOOR);
    attn_remap frac = {ATTN_REMAP_SELF_EXTEND, 6, 4, 1, 0, 0};
    ck_assert_int_eq(attn_remap_check(&frac, &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "W - W / G, a true division, here 4.5") &&
                      strstr(err.msg, "self_extend_floor (W - floor(W/G) = 5)"), "%s", err.msg);
    frac.method = SE_FLOOR;
    ck_assert_int_eq(attn_remap_check(&frac, &err), RL_OK);
    /* out-of-range parameters and overflowing positions name their key */
    attn_remap bad = {ATTN_REMAP_SELF_EXTEND, 0, 4, 1, 0, 0};
    ck_assert_int_eq(attn_remap_check(&bad, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "attn_remap_window 0"));
    attn_remap big = {ATTN_REMAP_LEAKY_REROPE, 1u << 20, 1, 8192, 0, 0};
    uint32_t p = 5, a, b;
    ck_assert_int_eq(attn_remap_positions(&big, &p, 1, &a, &b, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "beyond 2^32 - 1"));
    attn_remap dca = {ATTN_REMAP_DCA, 64, 1, 1, 64, 0};
    ck_assert_int_eq(attn_remap_check(&dca, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "attn_remap_chunk 64"));
}
END_TEST

/* ---- the engine's selection on random operands ---- */

/* Random q/k and a perturbed q_b/k_b standing for the remapped definition
 * (chk_attn_run_case), every statistic against the double reference
 * (attn_ref_logit's selection): 4-key blocks 3 per dispatch (chunks that
 * start and rows that finish inside the 64-query workgroups), causal and
 * bidirectional, fp16 storage, O, paired (KL remapped ||
 * exact), with a mask and sinks, positions near 2^20, W = 1 and a W longer
 * than the run (nothing remapped). */
static const struct {
    chk_attn_case c;
    chk_attn_extra x;
} random_cases[] = {
    {{130, 4, 2, 32, 1, 0, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS,
      4, 3, 0, 0, 0, 0, 0, 0}, {9, 0, 0, 0}},
    {{97, 2, 1, 16, 0, 0, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_PAIRED | ATTN_OUT, 4, 1, 0, 0, 0,
      0, 0, 0}, {13, 1048000, 0, 0}},
    {{200, 2, 2, 32, 1, 1, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET, 8, 1, 0, 0, 0, 0, 0, 0},
     {1, 0, 0, 0}},
    {{150, 4, 2, 16, 1, 0, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_BUCKETS, 4, 3, 40, 3, 0, 1, 0, 0},
     {17, 0, 0, 0}},
    {{64, 2, 1, 16, 0, 0, NULL, ATTN_ENTROPY | ATTN_PAIRED | ATTN_TARGET, 0, 0, 0, 0, 0, 0, 0, 0},
     {1000, 0, 0, 0}},
    /* Dual Chunk Attention (remap_chunk c): q, q_b, q_c by chunk distance
     * 0, 1, >= 2; chunks of 13 keys in 4-key blocks, bidirectional fp16,
     * a chunk longer than the run (intra only) */
    {{150, 4, 2, 16, 1, 0, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_OUT, 4, 3, 0, 0,
      0, 0, 0, 0}, {0, 0, 13, 0}},
    {{130, 2, 1, 32, 0, 1, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_BUCKETS, 8, 1, 0, 0, 0, 0, 0, 0},
     {0, 1048000, 29, 0}},
    {{70, 2, 2, 16, 1, 0, NULL, ATTN_ENTROPY | ATTN_TARGET, 0, 0, 0, 0, 0, 1, 0, 0}, {0, 0, 500, 0}},
    /* The window's edge under both definitions (remap_edge, STRING's
     * authors' code): the key at |i - j| = W weighs e^(q.k) + e^(q_b.k_b).
     * Every statistic, GQA, 4-key blocks 3 per dispatch, W = 9 (edges
     * inside and across blocks); bidirectional paired fp32 at positions
     * near 2^20 with O (both sides' edges); with a window mask, sinks and
     * the temperature; W = 1 (the edge is the diagonal's neighbour). */
    {{130, 4, 2, 32, 1, 0, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS | ATTN_OUT,
      4, 3, 0, 0, 0, 0, 0, 0}, {9, 0, 0, 1}},
    {{97, 2, 1, 16, 0, 0, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_PAIRED | ATTN_OUT, 4, 1, 0, 0, 0,
      0, 0, 0}, {13, 1048000, 0, 1}},
    {{150, 4, 2, 16, 1, 0, NULL, ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET, 4, 3, 40, 3, 0, 1,
      ATTN_TEMP_SSMAX, 0}, {17, 0, 0, 1}},
    {{66, 2, 2, 16, 1, 0, NULL, ATTN_ENTROPY | ATTN_TARGET | ATTN_OUT, 8, 1, 0, 0, 0, 0, 0, 0},
     {1, 0, 0, 1}},
};

START_TEST(gpu_remap_selection_matches_reference)
{
    rl_gpu g;
    rl_gpu_open(&g);
    attn_engine e;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &e, &err) == RL_OK);
    chk_row row;
    ck_assert_msg(chk_attn_run_case_ex(&g.dev, &e, &random_cases[_i].c, &random_cases[_i].x,
                                       21 + (uint64_t)_i, &row, &err) == RL_OK, "%s", err.msg);
    ck_assert_msg(!row.skipped || random_cases[_i].c.fp16, "%s", row.tolerance);
    ck_assert_msg(row.skipped || row.stats.pass, "%s %s: worst %.3g (%s)", row.kernel, row.shape,
                  row.stats.worst_ratio, row.tolerance);
    attn_engine_destroy(&e);
    rl_gpu_close(&g);
}
END_TEST

/* A logit bias cannot be remapped (its positions are not rotations):
 * refused by the engine naming both. */
START_TEST(gpu_remap_refuses_a_bias)
{
    rl_gpu g;
    rl_gpu_open(&g);
    attn_engine e;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &e, &err) == RL_OK);
    chk_attn_case c = {65, 2, 1, 16, 1, 0, "alibi", ATTN_ENTROPY, 0, 0, 0, 0, 0, 0, 0, 0};
    chk_attn_extra x = {8, 0, 0, 0};
    chk_row row;
    ck_assert_int_eq(chk_attn_run_case_ex(&g.dev, &e, &c, &x, 3, &row, &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "remap_window 8") && strstr(err.msg, "alibi"), "%s", err.msg);
    attn_engine_destroy(&e);
    rl_gpu_close(&g);
}
END_TEST

/* ---- the attention kinds ---- */

static rl_status kdata_fn(void *user, char which, uint64_t tokens, float *out, rl_error *err)
{
    (void)err;
    const uint32_t *shape = user; /* {heads, kv_heads, head_dim} */
    uint32_t heads = which == 'q' ? shape[0] : shape[1];
    uint64_t n = tokens * heads * shape[2];
    for (uint64_t i = 0; i < n; i++)
        out[i] = (float)sin(1.37 * (double)i + (which == 'q' ? 0.3 : 1.1));
    return RL_OK;
}

typedef struct kfix {
    exp_run run;
    json_t *enc, *params;
    uint32_t shape[3];
    char dir[64];
    exp_sink sink;
    rl_gpu g;
} kfix;

static void kf_init(kfix *f, const char *type, const char *enc, const char *params)
{
    memset(f, 0, sizeof *f);
    json_error_t je;
    f->enc = json_loads(enc, 0, &je);
    f->params = json_loads(params, 0, &je);
    ck_assert_ptr_nonnull(f->enc);
    ck_assert_ptr_nonnull(f->params);
    f->shape[0] = 2, f->shape[1] = 1, f->shape[2] = 16;
    f->run = (exp_run){.id = "0000000000000000",
                       .model = {.head_dim = 16, .heads = 2, .kv_heads = 1, .train_len = 64},
                       .encoding_name = type, .encoding_type = type, .encoding = f->enc,
                       .params = f->params, .seed = 1, .data = kdata_fn, .data_user = f->shape};
    snprintf(f->dir, sizeof f->dir, "/tmp/rl_remap_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(f->dir));
    rl_error err = {0};
    ck_assert_int_eq(exp_sink_init(&f->sink, f->dir, &err), RL_OK);
    rl_gpu_open(&f->g);
}

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

/* Every verification record passed, and one names the remapped operands. */
static void assert_verified_remapped(const kfix *f)
{
    size_t i, n = json_array_size(f->sink.verification), named = 0;
    json_t *v;
    ck_assert_uint_gt(n, 0);
    json_array_foreach(f->sink.verification, i, v) {
        const char *what = json_string_value(json_object_get(v, "what"));
        ck_assert_msg(json_is_true(json_object_get(v, "pass")), "%s failed", what);
        if (what && strstr(what, "(remapped)"))
            named++;
    }
    ck_assert_msg(named > 0, "no verification of the remapped operands");
    ck_assert_int_eq(f->sink.failed_verification, 0);
}

/* Entropy and retrieval with each method run verified; a window as long
 * as the run (every |i - j| < W; DCA: a chunk length S - L = 136 beyond it,
 * every pair intra-chunk at its own positions) leaves the result exactly
 * the unremapped one, a short window (DCA: chunk length 11) changes it. */
START_TEST(attention_kinds_run_each_method_verified)
{
    static const char *const methods[] = {"self_extend", "rerope", "leaky_rerope", "dca",
                                          "self_extend_floor"};
    kfix f;
    rl_error err = {0};
    kf_init(&f, "rope", "{}", "{\"min_len\": 64, \"max_len\": 64}");
    ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
    double plain = kmetric(&f, "entropy_at_max_len");
    kf_free(&f);
    for (int m = 0; m < 5; m++) {
        char params[256];
        snprintf(params, sizeof params,
                 "{\"min_len\": 64, \"max_len\": 64, \"attn_remap\": \"%s\", "
                 "\"attn_remap_window\": 64, \"attn_remap_group\": 4, \"attn_remap_chunk\": 200}",
                 methods[m]);
        kf_init(&f, "rope", "{}", params);
        ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
        ck_assert_double_eq_tol(kmetric(&f, "entropy_at_max_len"), plain, 1e-6);
        assert_verified_remapped(&f);
        kf_free(&f);
        snprintf(params, sizeof params,
                 "{\"min_len\": 64, \"max_len\": 64, \"attn_remap\": \"%s\", "
                 "\"attn_remap_window\": 6, \"attn_remap_group\": 3, \"attn_remap_chunk\": 16}",
                 methods[m]);
        kf_init(&f, "rope", "{}", params);
        ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
        ck_assert_msg(fabs(kmetric(&f, "entropy_at_max_len") - plain) > 1e-3, "%s: %g vs %g",
                      methods[m], kmetric(&f, "entropy_at_max_len"), plain);
        assert_verified_remapped(&f);
        if (!strcmp(methods[m], "dca")) { /* its 5th transform, the inter-chunk q, has a record */
            size_t i, inter = 0;
            json_t *v;
            json_array_foreach(f.sink.verification, i, v) {
                const char *what = json_string_value(json_object_get(v, "what"));
                inter += what && strstr(what, "q (remapped, inter-chunk)") != NULL;
            }
            ck_assert_msg(inter > 0, "DCA: no verification record of the inter-chunk q");
        }
        kf_free(&f);
        snprintf(params, sizeof params,
                 "{\"min_len\": 64, \"max_len\": 128, \"attn_remap\": \"%s\", "
                 "\"attn_remap_window\": 16, \"attn_remap_chunk\": 40}", methods[m]);
        kf_init(&f, "rope", "{}", params);
        ck_assert_msg(kf_run(&f, "content_retrieval", &err) == RL_OK, "%s", err.msg);
        assert_verified_remapped(&f);
        kf_free(&f);
    }
}
END_TEST

/* Distortion with a remap: KL(remapped || plain RoPE), 0 when the window
 * covers the run, > 0 for a short one; refused for a scaled encoding
 * (it would need a third definition) and for a non-rotary one. */
START_TEST(distortion_of_a_remap_against_plain_rope)
{
    kfix f;
    rl_error err = {0};
    kf_init(&f, "rope", "{}",
            "{\"length\": 64, \"attn_remap\": \"self_extend\", \"attn_remap_window\": 64}");
    ck_assert_msg(kf_run(&f, "distortion", &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq_tol(kmetric(&f, "kl_max"), 0.0, 1e-6);
    assert_verified_remapped(&f);
    kf_free(&f);
    kf_init(&f, "rope", "{}",
            "{\"length\": 64, \"attn_remap\": \"rerope\", \"attn_remap_window\": 4}");
    ck_assert_msg(kf_run(&f, "distortion", &err) == RL_OK, "%s", err.msg);
    ck_assert(kmetric(&f, "kl_mean") > 1e-3);
    assert_verified_remapped(&f);
    kf_free(&f);
    kf_init(&f, "rope", "{}", "{\"length\": 64, \"attn_remap\": \"dca\", \"attn_remap_window\": 8, "
                              "\"attn_remap_chunk\": 32}");
    ck_assert_int_eq(kf_run(&f, "distortion", &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "attn_remap dca is not supported") != NULL, "%s", err.msg);
    kf_free(&f);
    kf_init(&f, "yarn", "{\"factor\": 4, \"original_max_position_embeddings\": 16}",
            "{\"length\": 64, \"attn_remap\": \"rerope\"}");
    ck_assert_int_eq(kf_run(&f, "distortion", &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "needs a plain RoPE encoding") != NULL, "%s", err.msg);
    kf_free(&f);
    kf_init(&f, "alibi", "{}", "{\"min_len\": 64, \"max_len\": 64, \"attn_remap\": \"rerope\"}");
    ck_assert_int_eq(kf_run(&f, "entropy", &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "remaps the positions of a rotary encoding") != NULL, "%s",
                  err.msg);
    kf_free(&f);
    kf_init(&f, "yarn", "{\"factor\": 4, \"original_max_position_embeddings\": 16}",
            "{\"min_len\": 64, \"max_len\": 64, \"attn_remap\": \"leaky_rerope\"}");
    ck_assert_int_eq(kf_run(&f, "entropy", &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "linear-scaled") != NULL, "%s", err.msg);
    kf_free(&f);
}
END_TEST

/* ---- LM-Infinite (src/attn/remap/lm_infinite.c) ---- */

/* Half-layout RoPE (theta 10000) of x [D] at position p, in double. */
static void rope_rotate(const float *x, int D, double p, double *y)
{
    for (int m = 0; m < D / 2; m++) {
        double w = pow(10000.0, -2.0 * m / D), c = cos(p * w), sn = sin(p * w);
        y[m] = x[m] * c - x[m + D / 2] * sn;
        y[m + D / 2] = x[m + D / 2] * c + x[m] * sn;
    }
}

/* Both definitions' rotated Q/K of n tokens ([n][D] float32 each): qr, kr at
 * the tokens' positions pos, qb, kb at the remapped positions qp, kp. */
static void rotate_both(const float *q, const float *k, const uint32_t *pos, const uint32_t *qp,
                        const uint32_t *kp, int n, int D, float *qr, float *kr, float *qb,
                        float *kb)
{
    double y[512];
    ck_assert_int_le(D, 512);
    const struct { const float *x; const uint32_t *p; float *out; } v[4] = {
        {q, pos, qr}, {k, pos, kr}, {q, qp, qb}, {k, kp, kb}};
    for (int t = 0; t < n; t++)
        for (int i = 0; i < 4; i++) {
            rope_rotate(&v[i].x[t * D], D, v[i].p[t], y);
            for (int d = 0; d < D; d++)
                v[i].out[t * D + d] = (float)y[d];
        }
}

/* The lm_infinite entry configures the CPU reference (its mask through
 * attn_remap_apply_mask, its remapped positions through
 * attn_remap_positions, the selection at remap_window = L); each row's lse
 * and entropy then equal a brute-force float64 evaluation of the authors'
 * rule (Glaciohound/LM-Infinite Lambda_Attention_Matrix with
 * limit_distance = local_branch, computed here from raw q, k): causal,
 * i - j < L: q R(i - j) k; j < n_global and i - j >= L: q R(min(L, N - 1))
 * k (the stationary query rotated at effective_limit_distance, the key
 * unrotated); otherwise masked. The reference's inputs are the rotated
 * vectors rounded to fp32 (2e-6 of slack covers it; a wrong distance or a
 * missing global key changes lse by > 1e-2 here). N = 40, L = 6,
 * n_global = 3, and L = 1 (only the diagonal local) and L >= N (all exact). */
START_TEST(lm_infinite_reference_matches_the_authors_rule)
{
    enum { N = 40, D = 16 };
    static float q[N * D], k[N * D], qr[N * D], kr[N * D], qb[N * D], kb[N * D];
    for (int i = 0; i < N * D; i++) {
        q[i] = (float)sin(0.71 * i + 0.2);
        k[i] = (float)cos(1.13 * i + 0.5);
    }
    const int id = attn_remap_from_name("lm_infinite");
    ck_assert_int_gt(id, 0);
    const uint32_t Ls[] = {6, 1, 64}, G = 3;
    for (size_t c = 0; c < sizeof Ls / sizeof Ls[0]; c++) {
        const uint32_t L = Ls[c];
        rl_error err = {0};
        attn_remap r = {.method = id, .window = L};
        attn_remap_mask am = {.n_sink = G};
        ck_assert_int_eq(attn_remap_check(&r, &err), RL_OK);
        ck_assert_int_eq(attn_remap_apply_mask(&r, &am, &err), RL_OK);
        ck_assert_uint_eq(am.window, L);
        ck_assert_uint_eq(am.n_sink, G);
        ck_assert_int_eq(attn_remap_defs(&r), ATTN_REMAP_DEFS_WINDOW);
        uint32_t pos[N], qp[N], kp[N];
        for (int t = 0; t < N; t++)
            pos[t] = (uint32_t)t;
        ck_assert_int_eq(attn_remap_positions(&r, pos, N, qp, kp, &err), RL_OK);
        rotate_both(q, k, pos, qp, kp, N, D, qr, kr, qb, kb);
        const double scale = 1.0 / sqrt((double)D);
        attn_ref_problem p = {.tokens = N, .heads = 1, .kv_heads = 1, .head_dim = D, .causal = 1,
                              .window = am.window, .n_sink = am.n_sink,
                              .chunk_size = am.chunk_size, .remap_window = L, .scale = scale,
                              .q = qr, .k = kr, .q_b = qb, .k_b = kb, .pos = pos};
        double scratch[2 * N], worst = 0;
        for (uint64_t i = 0; i < N; i++) {
            attn_ref_row row;
            attn_ref_row_stats(&p, 0, i, UINT64_MAX, 0, scratch, &row, NULL, NULL, NULL);
            /* the authors' rule, float64, from the raw vectors */
            double lg[N], mx = -INFINITY;
            for (uint64_t j = 0; j < N; j++) {
                uint64_t dist = i - j;
                double cap = L < N - 1 ? L : N - 1; /* effective_limit_distance */
                lg[j] = j > i ? -INFINITY
                        : dist < L ? scale * rope_dot(&q[i * D], &k[j * D], D, (double)dist)
                        : j < G   ? scale * rope_dot(&q[i * D], &k[j * D], D, cap)
                                  : -INFINITY;
                mx = lg[j] > mx ? lg[j] : mx;
            }
            double z = 0, ez = 0;
            for (uint64_t j = 0; j < N; j++)
                if (lg[j] > -INFINITY) {
                    z += exp(lg[j] - mx);
                    ez += exp(lg[j] - mx) * (lg[j] - mx);
                }
            double lse = mx + log(z), ent = log(z) - ez / z;
            ck_assert_msg(fabs(row.lse - lse) < 2e-6 && fabs(row.entropy - ent) < 2e-6,
                          "L %u row %llu: lse %.9g vs %.9g, entropy %.9g vs %.9g", L,
                          (unsigned long long)i, row.lse, lse, row.entropy, ent);
            double e1 = fabs(row.lse - lse), e2 = fabs(row.entropy - ent);
            worst = e1 > worst ? e1 : worst;
            worst = e2 > worst ? e2 : worst;
        }
        fprintf(stderr, "lm_infinite L %u n_global %u: max |lse|, |entropy| error %.3g\n", L, G,
                worst);
    }
    /* its rules, naming the keys */
    rl_error err = {0};
    attn_remap r = {.method = id, .window = 8};
    attn_remap_mask bad = {.window = 4, .n_sink = 2};
    ck_assert_int_eq(attn_remap_apply_mask(&r, &bad, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "attn_window 4"));
    attn_remap_mask none = {0};
    ck_assert_int_eq(attn_remap_apply_mask(&r, &none, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "attn_sinks 0"));
    attn_remap_mask chunked = {.n_sink = 2, .chunk_size = 16};
    ck_assert_int_eq(attn_remap_apply_mask(&r, &chunked, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "attn_chunk 16"));
}
END_TEST

/* The entropy kind with attn_remap lm_infinite (batch keys only: attn_sinks
 * and attn_remap_window; the kind's mask gets attn_window = L from the
 * entry) runs on the engine verified against the CPU reference; a local
 * branch covering the run leaves the unmasked entropy (every key local,
 * every distance exact), a short one changes it; attn_sinks 0 is refused
 * naming the key. */
START_TEST(lm_infinite_entropy_kind_runs_verified)
{
    kfix f;
    rl_error err = {0};
    kf_init(&f, "rope", "{}", "{\"min_len\": 64, \"max_len\": 64}");
    ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
    double plain = kmetric(&f, "entropy_at_max_len");
    kf_free(&f);
    kf_init(&f, "rope", "{}", "{\"min_len\": 64, \"max_len\": 64, \"attn_remap\": "
                              "\"lm_infinite\", \"attn_remap_window\": 64, \"attn_sinks\": 4}");
    ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
    ck_assert_double_eq_tol(kmetric(&f, "entropy_at_max_len"), plain, 1e-6);
    assert_verified_remapped(&f);
    kf_free(&f);
    kf_init(&f, "rope", "{}", "{\"min_len\": 64, \"max_len\": 64, \"attn_remap\": "
                              "\"lm_infinite\", \"attn_remap_window\": 8, \"attn_sinks\": 4}");
    ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
    ck_assert_msg(fabs(kmetric(&f, "entropy_at_max_len") - plain) > 1e-3, "%g vs %g",
                  kmetric(&f, "entropy_at_max_len"), plain);
    assert_verified_remapped(&f);
    kf_free(&f);
    kf_init(&f, "rope", "{}", "{\"min_len\": 64, \"max_len\": 64, \"attn_remap\": "
                              "\"lm_infinite\", \"attn_remap_window\": 8}");
    ck_assert_int_eq(kf_run(&f, "entropy", &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "attn_sinks 0") != NULL, "%s", err.msg);
    kf_free(&f);
}
END_TEST

/* ---- STRING (src/attn/remap/string.c) ---- */

/* The authors' rule for one row, float64 from the raw q, k, v
 * (HKUNLP/STRING string_flash_forward, attention_factor 0.1 ln 2 + 1 on cos
 * and sin, so every logit carries its square): the diagonal pass over keys
 * i - S <= j <= i at distance i - j, the shifted pass (queries i >= S) over
 * keys j <= i - S at distance (i - S + w) - j, each pass's lse and output,
 * merged as the code does (lse_gap, lse_gap_re). The row's key weights
 * (the two terms of key i - S summed) give the entropy over keys. dup = 0
 * drops the duplicate as the code's decoding path does (the diagonal pass
 * over i - S + 1 <= j <= i, the key at distance S only in the shifted
 * one): the paper's matrix. */
static void string_brute_row(const float *q, const float *k, const float *v, int D, long N,
                             long S, long w, long i, int dup, double *lse, double *ent,
                             double *out)
{
    const double af = 0.1 * log(2.0) + 1, scale = af * af / sqrt((double)D);
    double wt[64] = {0}, od[16] = {0}, os[16] = {0}, zd = 0, zs = 0, md = -INFINITY,
           ms = -INFINITY, lg[2][64];
    for (long j = 0; j < N; j++) {
        lg[0][j] = j <= i && i - j <= S - (dup ? 0 : 1)
                       ? scale * rope_dot(q, &k[j * D], D, (double)(i - j))
                       : -INFINITY;
        lg[1][j] = i >= S && j <= i - S
                       ? scale * rope_dot(q, &k[j * D], D, (double)(i - S + w - j))
                       : -INFINITY;
        md = lg[0][j] > md ? lg[0][j] : md;
        ms = lg[1][j] > ms ? lg[1][j] : ms;
    }
    for (long j = 0; j < N; j++) {
        double ed = exp(lg[0][j] - md), es = ms > -INFINITY ? exp(lg[1][j] - ms) : 0;
        zd += ed, zs += es;
        for (int e = 0; e < D; e++) {
            od[e] += ed * v[j * D + e];
            os[e] += es * v[j * D + e];
        }
    }
    double lse_d = md + log(zd), lse_s = zs > 0 ? ms + log(zs) : -INFINITY;
    /* string_flash_forward's merge: out_d / (1 + e^(lse_s - lse_d)) + out_s / (1 + e^(lse_d - lse_s)) */
    double gd = 1 / (1 + exp(lse_s - lse_d)), gs = 1 - gd;
    *lse = lse_s > -INFINITY ? lse_d + log1p(exp(lse_s - lse_d)) : lse_d;
    for (int e = 0; e < D; e++)
        out[e] = od[e] / zd * gd + (zs > 0 ? os[e] / zs * gs : 0);
    for (long j = 0; j < N; j++)
        wt[j] = exp(lg[0][j] - *lse) + (lse_s > -INFINITY ? exp(lg[1][j] - *lse) : 0);
    *ent = 0;
    for (long j = 0; j < N; j++)
        if (wt[j] > 0)
            *ent -= wt[j] * log(wt[j]);
}

/* The string entry configures the CPU reference (its positions through
 * attn_remap_positions, the edge through attn_remap_edge_both, its logit
 * factor through attn_remap_logit_factor, the selection at remap_window =
 * S); each row's lse, entropy and O then equal string_brute_row's float64
 * evaluation of the authors' two passes, the key at distance S counted in
 * both. The reference's inputs are the rotated vectors rounded to fp32
 * (2e-6 of slack, as lm_infinite's; the measured error is printed). The
 * controls: the same brute force without the duplicate differs from the
 * reference on every row with a key at distance S (by > 1e-4, 50x the slack), and
 * string_paper's reference is that brute force. N = 40, D = 16, (S, w) =
 * (9, 3), (5, 0), (12, 12) (w = S: RoPE again plus the duplicate) and
 * S = 64 >= N (nothing shifted, no duplicate: plain RoPE times the factor). */
START_TEST(string_reference_matches_the_authors_rule)
{
    enum { N = 40, D = 16 };
    static float q[N * D], k[N * D], v[N * D], qr[N * D], kr[N * D], qb[N * D], kb[N * D];
    for (int i = 0; i < N * D; i++) {
        q[i] = (float)sin(0.71 * i + 0.2);
        k[i] = (float)cos(1.13 * i + 0.5);
        v[i] = (float)sin(0.37 * i + 1.9);
    }
    const int ids[2] = {attn_remap_from_name("string"), attn_remap_from_name("string_paper")};
    ck_assert_int_gt(ids[0], 0);
    ck_assert_int_gt(ids[1], 0);
    const uint32_t Ss[] = {9, 5, 12, 64}, ws[] = {3, 0, 12, 3};
    for (int m = 0; m < 2; m++)
        for (size_t c = 0; c < sizeof Ss / sizeof Ss[0]; c++) {
            const uint32_t S = Ss[c], w = ws[c];
            rl_error err = {0};
            attn_remap r = {.method = ids[m], .window = S, .local = w};
            ck_assert_int_eq(attn_remap_check(&r, &err), RL_OK);
            ck_assert_int_eq(attn_remap_defs(&r), ATTN_REMAP_DEFS_WINDOW);
            ck_assert_int_eq(attn_remap_edge_both(&r), m == 0);
            uint32_t pos[N], qp[N], kp[N];
            for (int t = 0; t < N; t++)
                pos[t] = (uint32_t)t;
            ck_assert_int_eq(attn_remap_positions(&r, pos, N, qp, kp, &err), RL_OK);
            rotate_both(q, k, pos, qp, kp, N, D, qr, kr, qb, kb);
            attn_ref_problem p = {.tokens = N, .heads = 1, .kv_heads = 1, .head_dim = D,
                                  .causal = 1, .remap_window = S,
                                  .remap_edge = attn_remap_edge_both(&r),
                                  .scale = attn_remap_logit_factor(&r) / sqrt((double)D),
                                  .q = qr, .k = kr, .v = v, .q_b = qb, .k_b = kb, .pos = pos};
            double scratch[2 * N], worst = 0, ctl_min = INFINITY;
            for (long i = 0; i < N; i++) {
                attn_ref_row row;
                double o[D], os[D];
                attn_ref_row_stats(&p, 0, (uint64_t)i, UINT64_MAX, 0, scratch, &row, NULL, o, os);
                double lse, ent, bo[D], lse0, ent0, bo0[D];
                string_brute_row(&q[i * D], k, v, D, N, S, w, i, m == 0, &lse, &ent, bo);
                double e = fmax(fabs(row.lse - lse), fabs(row.entropy - ent));
                for (int d = 0; d < D; d++)
                    e = fmax(e, fabs(o[d] - bo[d]));
                ck_assert_msg(e < 2e-6, "%s S %u w %u row %ld: lse %.9g vs %.9g, entropy %.9g vs "
                              "%.9g (max error %.3g)", attn_remap_name(ids[m]), S, w, i, row.lse,
                              lse, row.entropy, ent, e);
                worst = fmax(worst, e);
                /* the control: the other rule (with / without the duplicate) */
                string_brute_row(&q[i * D], k, v, D, N, S, w, i, m != 0, &lse0, &ent0, bo0);
                if (i >= (long)S)
                    ctl_min = fmin(ctl_min, fmax(fabs(row.lse - lse0), fabs(row.entropy - ent0)));
                else /* no key at distance S: the two rules agree */
                    ck_assert_double_eq_tol(lse0, lse, 1e-12);
            }
            if (S < N)
                ck_assert_msg(ctl_min > 1e-4, "%s S %u w %u: the other rule is within %.3g",
                              attn_remap_name(ids[m]), S, w, ctl_min);
            fprintf(stderr, "%s S %u w %u: max |lse|, |entropy|, |O| error %.3g against the "
                    "authors' rule%s; the other rule off by >= %.3g\n", attn_remap_name(ids[m]),
                    S, w, worst, m ? " without the duplicate" : "", S < N ? ctl_min : 0.0);
        }
    /* the map's distance (attn_remap_distance, the positions' difference) */
    attn_remap r = {.method = ids[0], .window = 9, .local = 3};
    uint32_t pos[30], qp[30], kp[30];
    rl_error err = {0};
    for (int t = 0; t < 30; t++)
        pos[t] = 1048000u + (uint32_t)t;
    ck_assert_int_eq(attn_remap_positions(&r, pos, 30, qp, kp, &err), RL_OK);
    for (long i = 0; i < 30; i++)
        for (long j = 0; j < 30; j++) {
            long d = i - j;
            double want = labs(d) < 9 ? (double)d : (double)(d - 9 + 3);
            ck_assert_double_eq_tol(attn_remap_distance(&r, pos[i], pos[j]), want, 1e-12);
            if (labs(d) >= 9)
                ck_assert_double_eq_tol((double)qp[i] - (double)kp[j], want, 1e-12);
        }
    /* the factor is the code's attention_factor squared */
    ck_assert_double_eq_tol(attn_remap_logit_factor(&r), 1.0693147180559945 * 1.0693147180559945,
                            1e-15);
    /* its rules, naming the keys */
    attn_remap wide = {.method = ids[0], .window = 8, .local = 9};
    ck_assert_int_eq(attn_remap_check(&wide, &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "attn_remap_local 9") && strstr(err.msg, "attn_remap_window 8"),
                  "%s", err.msg);
    attn_remap far = {.method = ids[0], .window = 1u << 31, .local = 0};
    uint32_t p = 4294000000u, a, b;
    ck_assert_int_eq(attn_remap_positions(&far, &p, 1, &a, &b, &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "beyond 2^32 - 1") && strstr(err.msg, "attn_remap_local 0"),
                  "%s", err.msg);
}
END_TEST

/* Every causal logit of a 40-token problem under string (S = 9, w = 3) from
 * the engine's logit dump (exp_attn_run: the entry's positions, edge flag
 * and logit factor), at positions near 2^20, against the authors' rule
 * computed here from raw q, k: scale (0.1 ln 2 + 1)^2 <q, R(dist) k> at
 * dist = d for d < S and d - S + w for d > S, and at d = S the key's two
 * terms folded, log(e^(logit at S) + e^(logit at w)). Bound 2e-5 as in
 * remapped_logits_are_rope_at_the_methods_distance (|logit| <~ 7 here); a
 * missing duplicate changes the edge logit by log(1 + e^(x - y)) >= 1e-3
 * unless one term is 7 units below the other. */
START_TEST(string_logits_are_the_authors_on_the_device)
{
    enum { T = 40, H = 2, KV = 1, D = 16 };
    const long S = 9, w = 3, p0 = 1048550;
    rl_gpu g;
    rl_gpu_open(&g);
    pe_shape s = {.head_dim = D, .heads = H, .kv_heads = KV, .max_positions = p0 + T + S};
    json_t *ep = json_pack("{s:s}", "precision", "table");
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_msg(pe_encoding_create("rope", ep, &s, &e, &err) == RL_OK, "%s", err.msg);
    json_decref(ep);
    static float q[T * H * D], k[T * KV * D], dump[H * T * T];
    float stats[T * H * RL_ATTN_NSTAT];
    uint32_t pos[T];
    rl_rng rng;
    rl_rng_seed(&rng, 97, "test/remap/string");
    for (int i = 0; i < T * H * D; i++)
        q[i] = (float)rl_rng_normal(&rng);
    for (int i = 0; i < T * KV * D; i++)
        k[i] = (float)rl_rng_normal(&rng);
    for (int t = 0; t < T; t++)
        pos[t] = (uint32_t)p0 + (uint32_t)t;
    attn_engine eng;
    ck_assert(attn_engine_create(&g.dev, &eng, &err) == RL_OK);
    exp_attn_io io = {.tokens = T, .q = q, .k = k, .pos = pos, .causal = 1,
                      .flags = ATTN_ENTROPY | ATTN_DUMP};
    io.mask.remap = (attn_remap){.method = attn_remap_from_name("string"), .window = (uint32_t)S,
                                 .local = (uint32_t)w};
    attn_outputs out = {.stats = stats, .dump = dump};
    exp_attn_result r;
    ck_assert_msg(exp_attn_run(&g.dev, &eng, e, &io, &out, &r, &err) == RL_OK, "%s", err.msg);
    ck_assert_msg(r.pass, "worst %s %g", r.worst, r.attn_stats.worst_ratio);
    const double af = 0.1 * log(2.0) + 1, scale = af * af / sqrt((double)D);
    double worst = 0, dup_min = INFINITY;
    for (int h = 0; h < H; h++)
        for (long i = 0; i < T; i++)
            for (long j = 0; j <= i; j++) {
                const float *qi = q + (i * H + h) * D, *kj = k + j * KV * D;
                long d = i - j;
                double want = scale * rope_dot(qi, kj, D, (double)(d < S ? d : d - S + w));
                if (d == S) { /* in both passes: at distance S and at distance w */
                    double x = scale * rope_dot(qi, kj, D, (double)S);
                    double hi = fmax(x, want), lo = fmin(x, want);
                    dup_min = fmin(dup_min, log1p(exp(lo - hi)));
                    want = hi + log1p(exp(lo - hi));
                }
                double got = dump[(h * T + i) * T + j], e_ = fabs(got - want);
                worst = fmax(worst, e_);
                ck_assert_msg(e_ <= 2e-5, "h %d i %ld j %ld: %.9g want %.9g", h, i, j, got, want);
            }
    ck_assert_msg(dup_min > 1e-3, "a duplicate term too small to tell (%g)", dup_min);
    fprintf(stderr, "string S %ld w %ld p0 %ld on the device: max |logit error| %.3g (the "
            "duplicate adds >= %.3g to each edge logit)\n", S, w, p0, worst, dup_min);
    attn_engine_destroy(&eng);
    pe_encoding_destroy(e);
    rl_gpu_close(&g);
}
END_TEST

/* The attention kinds with string and string_paper (batch keys only:
 * attn_remap_window = S, attn_remap_local = w) run on the engine verified
 * against the CPU reference. A shift covering the run (S = 64: no key at
 * distance >= S) makes the two identical (nothing duplicated); S = 6, w = 2
 * makes them differ (the duplicated key) and differ from S = 64; the
 * distortion kind gives KL(string || plain RoPE) > 0 (the logit factor
 * alone makes it positive) verified; attn_remap_local above S is refused
 * naming the key. */
START_TEST(string_kinds_run_verified)
{
    kfix f;
    rl_error err = {0};
    double h[2][2];
    static const char *const names[2] = {"string", "string_paper"};
    for (int m = 0; m < 2; m++)
        for (int c = 0; c < 2; c++) {
            char params[256];
            snprintf(params, sizeof params,
                     "{\"min_len\": 64, \"max_len\": 64, \"attn_remap\": \"%s\", "
                     "\"attn_remap_window\": %d, \"attn_remap_local\": 2}", names[m],
                     c ? 6 : 64);
            kf_init(&f, "rope", "{}", params);
            ck_assert_msg(kf_run(&f, "entropy", &err) == RL_OK, "%s", err.msg);
            h[m][c] = kmetric(&f, "entropy_at_max_len");
            assert_verified_remapped(&f);
            kf_free(&f);
        }
    ck_assert_double_eq_tol(h[0][0], h[1][0], 1e-9);
    ck_assert_msg(fabs(h[0][1] - h[1][1]) > 1e-4, "duplicate: %g vs %g", h[0][1], h[1][1]);
    ck_assert_msg(fabs(h[0][1] - h[0][0]) > 1e-3, "shift: %g vs %g", h[0][1], h[0][0]);
    kf_init(&f, "rope", "{}", "{\"length\": 64, \"attn_remap\": \"string\", "
                              "\"attn_remap_window\": 8, \"attn_remap_local\": 2}");
    ck_assert_msg(kf_run(&f, "distortion", &err) == RL_OK, "%s", err.msg);
    ck_assert(kmetric(&f, "kl_mean") > 1e-3);
    assert_verified_remapped(&f);
    kf_free(&f);
    kf_init(&f, "rope", "{}", "{\"min_len\": 64, \"max_len\": 64, \"attn_remap\": \"string\", "
                              "\"attn_remap_window\": 8, \"attn_remap_local\": 9}");
    ck_assert_int_eq(kf_run(&f, "entropy", &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "attn_remap_local 9") != NULL, "%s", err.msg);
    kf_free(&f);
}
END_TEST

/* The remap registry is complete: every entry has its name, summary,
 * source, selection and formulas (a position map exactly for the window
 * methods), its id round-trips through its name, the attn_remap key's
 * choices and the message list name it, and every key it reads is an
 * attention kind's batch key. */
START_TEST(registry_entries_are_complete_and_listed)
{
    const exp_kind *k = exp_find("entropy");
    ck_assert_ptr_nonnull(k);
    ck_assert_str_eq(attn_remap_name(ATTN_REMAP_NONE), "none");
    ck_assert_ptr_null(attn_remap_method_at(ATTN_REMAP_NONE));
    ck_assert_ptr_null(attn_remap_method_at(attn_remap_count()));
    char choices[512];
    snprintf(choices, sizeof choices, "|%s|", ATTN_REMAP_CHOICES);
    for (int m = 1; m < attn_remap_count(); m++) {
        const attn_remap_method *r = attn_remap_method_at(m);
        ck_assert_ptr_nonnull(r);
        ck_assert(r->name && r->summary && r->source && r->distance && r->keys);
        ck_assert(r->defs == ATTN_REMAP_DEFS_WINDOW || r->defs == ATTN_REMAP_DEFS_CHUNK);
        ck_assert_int_eq(r->positions != NULL, r->defs == ATTN_REMAP_DEFS_WINDOW);
        ck_assert_int_eq(attn_remap_from_name(r->name), m);
        ck_assert_str_eq(attn_remap_name(m), r->name);
        char bar[80];
        snprintf(bar, sizeof bar, "|%s|", r->name);
        ck_assert_msg(strstr(choices, bar), "%s not in the attn_remap choices", r->name);
        ck_assert_ptr_nonnull(strstr(attn_remap_names(), r->name));
        for (const char *const *key = r->keys; *key; key++) {
            int found = 0;
            for (size_t j = 0; j < k->n_params && !found; j++)
                found = strcmp(k->params[j].key, *key) == 0;
            ck_assert_msg(found, "%s reads %s, not a batch key", r->name, *key);
        }
    }
    ck_assert_int_eq(attn_remap_from_name("nonesuch"), -1);
}
END_TEST

int main(void)
{
    rl_test_pin_driver();
    rl_test_require_vulkan("remap");
    Suite *s = suite_create("remap");
    /* on the host: the position maps and the remap registry */
    TCase *tc_host = tcase_create("host");
    tcase_set_timeout(tc_host, 300);
    tcase_add_test(tc_host, position_maps_give_the_methods_distance);
    tcase_add_test(tc_host, registry_entries_are_complete_and_listed);
    suite_add_tcase(s, tc_host);
    TCase *tc_lm_infinite = tcase_create("lm_infinite");
    tcase_set_timeout(tc_lm_infinite, 300);
    tcase_add_test(tc_lm_infinite, lm_infinite_reference_matches_the_authors_rule);
    tcase_add_test(tc_lm_infinite, lm_infinite_entropy_kind_runs_verified);
    suite_add_tcase(s, tc_lm_infinite);
    TCase *tc_string = tcase_create("string");
    tcase_set_timeout(tc_string, 300);
    tcase_add_test(tc_string, string_reference_matches_the_authors_rule);
    tcase_add_test(tc_string, string_kinds_run_verified);
    tcase_add_test(tc_string, string_logits_are_the_authors_on_the_device);
    suite_add_tcase(s, tc_string);
    /* the engine's remapped logits and selection against the reference, and its refusal */
    TCase *tc_engine = tcase_create("engine");
    tcase_set_timeout(tc_engine, 300);
    tcase_add_loop_test(tc_engine, remapped_logits_are_rope_at_the_methods_distance, 0,
                        (int)(sizeof dump_cases / sizeof dump_cases[0]));
    tcase_add_loop_test(tc_engine, gpu_remap_selection_matches_reference, 0,
                        (int)(sizeof random_cases / sizeof random_cases[0]));
    tcase_add_test(tc_engine, gpu_remap_refuses_a_bias);
    suite_add_tcase(s, tc_engine);
    /* the attention kinds (entropy, retrieval, distortion) with each method */
    TCase *tc_kinds = tcase_create("kinds");
    tcase_set_timeout(tc_kinds, 300);
    tcase_add_test(tc_kinds, attention_kinds_run_each_method_verified);
    tcase_add_test(tc_kinds, distortion_of_a_remap_against_plain_rope);
    suite_add_tcase(s, tc_kinds);
    return rl_test_run(s);
}
