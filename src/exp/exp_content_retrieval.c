/* exp_content_retrieval.c — needle retrieval by content, against distance
 * and length (the kind `retrieval` was before the positional one,
 * exp_retrieval.c). The needle is built from its query, so it is found by
 * content and a method that discards position wins (NoPE ~0.99 within and
 * beyond train_len on the structured source): it measures content matching
 * and recency, not addressing by position (docs/runner.md "Positional
 * retrieval").
 *
 * For each length N = min_len, 2 min_len, ..., max_len: N tokens at
 * positions 0..N-1, causal. The last W = max(N/4, 1) tokens are the queries
 * (q from the run's data source; the query heads of one GQA group share the
 * group's first head so one key can match all of them). Query i is given a
 * distance r from the set 1, 2, 4, ... (powers of two below N - W) plus
 * N - W (the one with the fewest queries so far whose key is still free),
 * and its needle is the key at token i - r:
 *
 *   k_needle = needle_scale (sim q_i + sqrt(1 - sim^2) |q_i| w) + noise g
 *
 * with w a random unit vector orthogonal to q_i and g ~ N(0, I) (similarity
 * 1, noise 0, scale 1: the needle equals the query). A key is the needle of
 * one query at most (a query with no free key is not scored). Every other key is a distractor: the data
 * source's k rows (`data`), N(0, distractor_scale^2) per element
 * (`gaussian`), or zero (`none`). The kernel reports, per query and head,
 * the argmax key (ATTN_ARGMAX) and the needle's probability (ATTN_TARGET):
 * accuracy = fraction of scored rows whose argmax is the needle.
 *
 * With the structured data source (a mean shared by every q and k row,
 * run_data.c) use distractors `data`, needle_scale 1 and similarity 1: the
 * needle is then its query, mean included, and differs from the other keys
 * only by content; gaussian distractors lack the mean, so the needle would
 * stand out by its mean alone (docs/runner.md "Data sources").
 *
 * Tables: retrieval_n<N> (accuracy and needle probability against r) and
 * retrieval_length (against N, split at distance train_len). Each pass is
 * verified through exp_attn_run (transform vs double reference, argmax gap
 * within 2 E_s and the needle probability within its relative fp32
 * tolerance E_s + tol_lse + rho + 2^-22 over N keys, exp_attn_verify.c);
 * any excess fails the run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"
#include "exp/exp.h"
#include "pe/pe.h"

enum {
    P_MIN_LEN, P_MAX_LEN, P_SIMILARITY, P_NEEDLE_SCALE, P_NOISE, P_DISTRACTORS,
    P_DISTRACTOR_SCALE, P_WINDOW, P_SINKS, P_CHUNK, P_LSINK, P_SLOGIT, P_TEMP, P_TSCALE,
    P_TFLOOR, P_REMAP, P_RWINDOW, P_RGROUP, P_RLEAK, P_RCHUNK, P_RLOCAL, P_QROWS, P_COUNT
};
static const rl_param params[P_COUNT] = {
    [P_MIN_LEN] = {.key = "min_len", .type = RL_P_INT, .min = 4, .max = 1048576, .def = "256",
                   .help = "shortest sequence (tokens); lengths double up to max_len"},
    [P_MAX_LEN] = {.key = "max_len", .type = RL_P_INT, .min = 4, .max = 1048576,
                   .def = "2048", .help = "longest sequence (tokens)"},
    [P_SIMILARITY] = {.key = "similarity", .type = RL_P_NUM, .min = -1, .max = 1, .def = "1",
                      .help = "cosine between the needle (before noise) and its query"},
    [P_NEEDLE_SCALE] = {.key = "needle_scale", .type = RL_P_NUM, .min = 0, .max = 1e4,
                        .def = "1", .help = "needle norm relative to the query's"},
    [P_NOISE] = {.key = "noise", .type = RL_P_NUM, .min = 0, .max = 1e4, .def = "0",
                 .help = "standard deviation of the gaussian noise added to each needle element"},
    [P_DISTRACTORS] = {.key = "distractors", .type = RL_P_ENUM, .def = "\"gaussian\"",
                       .choices = "data|gaussian|none",
                       .help = "other keys: data source k, gaussian or none (zero)"},
    [P_DISTRACTOR_SCALE] = {.key = "distractor_scale", .type = RL_P_NUM, .min = 0, .max = 1e4,
                            .def = "1",
                            .help = "gaussian distractors: standard deviation per element"},
    EXP_ATTN_MASK_PARAMS(P_WINDOW, P_SINKS, P_CHUNK, P_LSINK, P_SLOGIT, P_TEMP, P_TSCALE,
                         P_TFLOOR),
    EXP_ATTN_REMAP_PARAMS(P_REMAP, P_RWINDOW, P_RGROUP, P_RLEAK, P_RCHUNK, P_RLOCAL),
    [P_QROWS] = {.key = "query_rows", .type = RL_P_INT, .min = 0, .max = 1048576, .def = "0",
                 .help = "scored queries per length: 0 every one of the last N/4 (full passes); "
                         "S > 0 at most S of them, evenly spread, each computed exactly against "
                         "every key it sees, and only those rows"},
};

/* The kind's typed parameters, defaults applied (exp_params_get). */
typedef struct ret_params {
    uint64_t min_len, max_len;
    double similarity, needle_scale, noise, distractor_scale;
    char distractors[64];
    uint32_t query_rows;          /* 0: every scored query, full passes */
    exp_attn_mask mask;
} ret_params;

static rl_status ret_params_of(const exp_run *run, ret_params *p, rl_error *err)
{
    exp_value v[P_COUNT];
    rl_status st = exp_params_get("content_retrieval", params, P_COUNT, run, v, err);
    if (!st) {
        *p = (ret_params){.min_len = (uint64_t)v[P_MIN_LEN].num,
                          .max_len = (uint64_t)v[P_MAX_LEN].num,
                          .similarity = v[P_SIMILARITY].num,
                          .needle_scale = v[P_NEEDLE_SCALE].num,
                          .noise = v[P_NOISE].num,
                          .distractor_scale = v[P_DISTRACTOR_SCALE].num,
                          .query_rows = (uint32_t)v[P_QROWS].num};
        snprintf(p->distractors, sizeof p->distractors, "%s", v[P_DISTRACTORS].str);
        st = exp_attn_mask_get("content_retrieval", v, EXP_ATTN_MASK_KEYS,
                               run->model.train_len, &p->mask, err);
    }
    return st;
}


static uint64_t next_len(uint64_t N, uint64_t T)
{
    return N >= T ? 0 : N * 2 > T ? T : N * 2;
}

/* Multiply-adds of QK^T over the run: N^2 H D / 2 per causal pass; with
 * query_rows S, S rows of the last quarter (~7N/8 keys each). */
static double ret_work(uint64_t lo, uint64_t T, double hd, uint32_t S)
{
    double work = 0;
    for (uint64_t N = lo; N; N = next_len(N, T)) {
        uint64_t W = N / 4 ? N / 4 : 1, rows = S && S < W ? S : W;
        work += S ? (double)rows * 0.875 * (double)N * hd : 0.5 * (double)N * N * hd;
    }
    return work;
}

static double ret_flops(const exp_run *run)
{
    ret_params p;
    rl_error err;
    if (ret_params_of(run, &p, &err))
        return 0; /* refused by ret_check before any estimate is used */
    return 2 * ret_work(p.min_len, p.max_len, (double)run->model.heads * run->model.head_dim,
                        p.query_rows);
}

#define RET_MAX_R 40

/* Distances for length N: powers of two below N - W, then N - W. */
static uint32_t distances(uint64_t N, uint64_t *r)
{
    uint64_t W = N / 4 ? N / 4 : 1, rmax = N - W;
    uint32_t m = 0;
    for (uint64_t p = 1; p < rmax && m < RET_MAX_R - 1; p *= 2)
        r[m++] = p;
    if (rmax >= 1)
        r[m++] = rmax;
    return m;
}

static rl_status ret_check(const exp_run *run, rl_error *err)
{
    ret_params p;
    rl_status st = ret_params_of(run, &p, err);
    if (!st)
        st = exp_attn_check(run, p.min_len, p.max_len, EXP_PASS_CAUSAL, err);
    return st ? st : exp_attn_remap_check(run, p.max_len, &p.mask.remap, err);
}

static uint64_t ret_bytes(const exp_run *run)
{
    ret_params p;
    rl_error err;
    if (ret_params_of(run, &p, &err))
        return 0; /* refused by ret_check before any estimate is used */
    uint64_t T = p.max_len;
    uint64_t row = (uint64_t)(run->model.heads + run->model.kv_heads) * run->model.head_dim;
    return T * row * (4 + 4 + 4 + 24 + 8) + T * run->model.heads * RL_ATTN_NSTAT * 4 + T * 9;
}

/* Builds keys for length N: distractors, then needles; fills target[] and
 * dist_idx[] (-1: query not scored). q: [T][H][D] (group heads equal). */
static void build_keys(const exp_run *run, const ret_params *p, uint64_t N, const float *q, const float *kdata,
                       float *k, uint32_t *target, int *dist_idx, const uint64_t *r, uint32_t m,
                       rl_rng *rng)
{
    uint32_t H = run->model.heads, KV = run->model.kv_heads, D = run->model.head_dim;
    uint32_t G = H / KV;
    const char *dist = p->distractors;
    double sim = p->similarity, ns = p->needle_scale, noise = p->noise,
           dsc = p->distractor_scale;
    for (uint64_t i = 0; i < N * KV * D; i++)
        k[i] = !strcmp(dist, "data")       ? kdata[i]
               : !strcmp(dist, "gaussian") ? (float)(dsc * rl_rng_normal(rng))
                                           : 0.0f;
    uint64_t W = N / 4 ? N / 4 : 1;
    unsigned char *used = calloc(N, 1);
    uint64_t count[RET_MAX_R] = {0};
    for (uint64_t i = 0; i < N; i++) {
        target[i] = (uint32_t)i;
        dist_idx[i] = -1;
    }
    for (uint64_t t = 0; used && t < W; t++) {
        uint64_t i = N - 1 - t;
        /* The distance with the fewest queries so far whose key is free. */
        int best = -1;
        for (uint32_t a = 0; a < m; a++) {
            uint32_t di = (uint32_t)((t + a) % m);
            if (r[di] <= i && !used[i - r[di]] && (best < 0 || count[di] < count[best]))
                best = (int)di;
        }
        if (best >= 0) {
            uint32_t di = (uint32_t)best;
            uint64_t j = i - r[di];
            count[di]++;
            used[j] = 1;
            target[i] = (uint32_t)j;
            dist_idx[i] = (int)di;
            for (uint32_t g = 0; g < KV; g++) {
                const float *qi = q + (i * H + (uint64_t)g * G) * D;
                float *kj = k + (j * KV + g) * D;
                double qq = 0;
                for (uint32_t d = 0; d < D; d++)
                    qq += (double)qi[d] * qi[d];
                double qn = sqrt(qq);
                /* w: a gaussian vector made orthogonal to q_i, unit norm. */
                double w[1024], wq = 0, ww = 0;
                for (uint32_t d = 0; d < D; d++)
                    w[d] = rl_rng_normal(rng), wq += w[d] * qi[d];
                for (uint32_t d = 0; d < D; d++) {
                    if (qq > 0)
                        w[d] -= wq / qq * qi[d];
                    ww += w[d] * w[d];
                }
                double wn = ww > 0 ? 1.0 / sqrt(ww) : 0.0;
                double perp = sqrt(fmax(0.0, 1.0 - sim * sim));
                for (uint32_t d = 0; d < D; d++)
                    kj[d] = (float)(ns * (sim * qi[d] + perp * qn * w[d] * wn) +
                                    (noise > 0 ? noise * rl_rng_normal(rng) : 0.0));
            }
        }
    }
    free(used);
}

static rl_status ret_run(const exp_run *run, exp_ctx *ctx, exp_sink *sink, rl_error *err)
{
    if (!ctx->dev)
        return rl_fail(err, RL_ERR_ARG, "content_retrieval: needs a device");
    ret_params p;
    rl_status st0 = ret_params_of(run, &p, err);
    if (st0)
        return st0;
    uint64_t lo = p.min_len, T = p.max_len;
    uint64_t Wmax = T / 4 ? T / 4 : 1;
    if ((st0 = exp_attn_limits(ctx->dev, run, T,
                               p.query_rows && p.query_rows < Wmax ? p.query_rows : 0,
                               ATTN_ARGMAX | ATTN_TARGET, err)))
        return st0; /* before any host work */
    uint32_t H = run->model.heads, KV = run->model.kv_heads, D = run->model.head_dim;
    uint32_t G = H / KV, L = run->model.train_len;
    int use_data = !strcmp(p.distractors, "data");
    float *q = malloc(T * H * D * sizeof *q), *k = malloc(T * KV * D * sizeof *k);
    float *kdata = use_data ? malloc(T * KV * D * sizeof *kdata) : NULL;
    float *stats = malloc(T * H * RL_ATTN_NSTAT * sizeof *stats);
    uint32_t *target = malloc(T * sizeof *target);
    int *dist_idx = malloc(T * sizeof *dist_idx);
    uint32_t *qrows = malloc(T * sizeof *qrows);
    uint64_t rows_hi = 0;
    pe_encoding *e = NULL;
    attn_engine own, *eng = NULL;
    int have_eng = 0, pass = 1;
    rl_status st = RL_OK;
    if (!q || !k || !stats || !target || !dist_idx || !qrows || (use_data && !kdata)) {
        st = rl_fail(err, RL_ERR_NOMEM, "content_retrieval: out of host memory for %llu tokens",
                     (unsigned long long)T);
        goto done;
    }
    if (D > 1024) {
        st = rl_fail(err, RL_ERR_ARG, "content_retrieval: head_dim %u above 1024", D);
        goto done;
    }
    if ((st = run->data(run->data_user, 'q', T, q, err)) ||
        (use_data && (st = run->data(run->data_user, 'k', T, kdata, err))) ||
        (st = exp_attn_engine(ctx, &own, &eng, &have_eng, err)))
        goto done;
    /* One query per GQA group: heads of a group copy its first head. */
    for (uint64_t t = 0; t < T; t++)
        for (uint32_t h = 0; h < H; h++)
            if (h % G)
                memcpy(q + (t * H + h) * D, q + (t * H + h - h % G) * D, D * sizeof *q);
    rl_rng rng;
    rl_rng_seed(&rng, run->seed, "exp/retrieval");
    const char *lcols[] = {"length_tokens", "accuracy", "needle_p", "accuracy_within_train",
                           "accuracy_beyond_train"};
    double acc_in = 0, acc_out = 0, p_in = 0, p_out = 0, n_in = 0, n_out = 0, acc_last = NAN;
    /* Per-length results, written as a table after the per-length tables. */
    double lrows[64][5];
    uint32_t n_lrows = 0;
    /* Progress in multiply-adds of QK^T (ret_work). */
    double done_w = 0, work = ret_work(lo, T, (double)H * D, p.query_rows);
    for (uint64_t N = lo; N && !st; N = next_len(N, T)) {
        uint64_t r[RET_MAX_R];
        uint32_t m = distances(N, r);
        pe_encoding_destroy(e);
        e = NULL;
        if ((st = exp_encoding_for_pass(run, N, 1, &e, err))) /* causal passes */
            goto done;
        build_keys(run, &p, N, q, kdata, k, target, dist_idx, r, m, &rng);
        /* query_rows S: S of the scored queries, evenly spread in token
         * order (the others unscored: their needles stay as distractors, so
         * each kept query's statistics are the full pass's), only their
         * rows computed (slot r = token qrows[r]) */
        uint32_t n_rows = 0;
        if (p.query_rows) {
            uint32_t scored = 0;
            for (uint64_t i = 0; i < N; i++)
                scored += dist_idx[i] >= 0;
            uint32_t keep = p.query_rows < scored ? p.query_rows : scored, seen = 0;
            for (uint64_t i = 0; i < N; i++) {
                if (dist_idx[i] < 0)
                    continue;
                if ((uint64_t)seen * keep / scored != ((uint64_t)seen + 1) * keep / scored)
                    qrows[n_rows++] = (uint32_t)i;
                else
                    dist_idx[i] = -1;
                seen++;
            }
            if (n_rows >= N)
                n_rows = 0;
        }
        if (N == T)
            rows_hi = n_rows ? n_rows : N;
        exp_attn_io io = {.tokens = N, .q = q, .k = k, .target = target, .causal = 1,
                          .mask = p.mask, .flags = ATTN_ARGMAX | ATTN_TARGET,
                          .rows = n_rows ? qrows : NULL, .n_rows = n_rows};
        attn_outputs out = {.stats = stats};
        exp_attn_result res;
        char label[96];
        if (n_rows)
            snprintf(label, sizeof label, "N=%llu (%u of %llu query rows)", (unsigned long long)N,
                     n_rows, (unsigned long long)N);
        else
            snprintf(label, sizeof label, "N=%llu", (unsigned long long)N);
        exp_sink_progress(sink, label, done_w, work);
        if ((st = exp_attn_run(ctx->dev, eng, e, &io, &out, &res, err)))
            goto done;
        done_w += n_rows ? (double)n_rows * 0.875 * (double)N * H * D : 0.5 * (double)N * N * H * D;
        pass &= exp_attn_record_stats(sink, label, &res);
        double hits[RET_MAX_R] = {0}, psum[RET_MAX_R] = {0}, cnt[RET_MAX_R] = {0};
        double a_in = 0, a_out = 0, c_in = 0, c_out = 0, a_all = 0, p_all = 0, c_all = 0;
        for (uint64_t ii = 0; ii < (n_rows ? n_rows : N); ii++) {
            uint64_t i = n_rows ? qrows[ii] : ii, slot = n_rows ? ii : i;
            if (dist_idx[i] < 0)
                continue;
            int di = dist_idx[i];
            for (uint32_t h = 0; h < H; h++) {
                const float *s = stats + (slot * H + h) * RL_ATTN_NSTAT;
                uint32_t am;
                memcpy(&am, &s[RL_ATTN_S_ARGMAX], sizeof am);
                double hit = am == target[i];
                hits[di] += hit, psum[di] += s[RL_ATTN_S_TARGET_P], cnt[di] += 1;
                a_all += hit, p_all += s[RL_ATTN_S_TARGET_P], c_all += 1;
                if (r[di] <= L)
                    a_in += hit, c_in += 1, p_in += s[RL_ATTN_S_TARGET_P];
                else
                    a_out += hit, c_out += 1, p_out += s[RL_ATTN_S_TARGET_P];
            }
        }
        /* The query heads of a GQA group are copies (one query, one key):
         * the interval counts one trial per (query, kv head), cnt / G. */
        const char *cols[] = {"distance_tokens", "accuracy", "needle_p", "trials",
                              "accuracy_lo95", "accuracy_hi95"};
        if ((st = exp_sink_table_at(sink, "retrieval_distance", N, 6, cols, err)))
            goto done;
        for (uint32_t di = 0; di < m && !st; di++) {
            double row[6] = {(double)r[di], cnt[di] ? hits[di] / cnt[di] : NAN,
                             cnt[di] ? psum[di] / cnt[di] : NAN, cnt[di], NAN, NAN};
            rl_wilson95(hits[di] / G, cnt[di] / G, &row[4], &row[5]);
            st = exp_sink_row(sink, row, err);
        }
        if (st || (st = exp_sink_end_table(sink, err)))
            goto done;
        acc_in += a_in, acc_out += a_out, n_in += c_in, n_out += c_out;
        acc_last = c_all ? a_all / c_all : NAN;
        if (n_lrows < 64) {
            double *lr = lrows[n_lrows++];
            lr[0] = (double)N, lr[1] = acc_last, lr[2] = c_all ? p_all / c_all : NAN;
            lr[3] = c_in ? a_in / c_in : NAN, lr[4] = c_out ? a_out / c_out : NAN;
        }
    }
    if ((st = exp_sink_table(sink, "retrieval_length", 5, lcols, err)))
        goto done;
    for (uint32_t i = 0; i < n_lrows && !st; i++)
        st = exp_sink_row(sink, lrows[i], err);
    if (st || (st = exp_sink_end_table(sink, err)))
        goto done;
    double lo95, hi95;
    exp_sink_metric(sink, "accuracy_within_train", n_in ? acc_in / n_in : NAN);
    rl_wilson95(acc_in / G, n_in / G, &lo95, &hi95);
    exp_sink_metric(sink, "accuracy_within_train_lo95", lo95);
    exp_sink_metric(sink, "accuracy_within_train_hi95", hi95);
    exp_sink_metric(sink, "trials_within_train", n_in / G);
    exp_sink_metric(sink, "accuracy_beyond_train", n_out ? acc_out / n_out : NAN);
    rl_wilson95(acc_out / G, n_out / G, &lo95, &hi95);
    exp_sink_metric(sink, "accuracy_beyond_train_lo95", lo95);
    exp_sink_metric(sink, "accuracy_beyond_train_hi95", hi95);
    exp_sink_metric(sink, "trials_beyond_train", n_out / G);
    exp_sink_metric(sink, "needle_p_within_train", n_in ? p_in / n_in : NAN);
    exp_sink_metric(sink, "needle_p_beyond_train", n_out ? p_out / n_out : NAN);
    exp_sink_metric(sink, "accuracy_at_max_len", acc_last);
    exp_sink_metric(sink, "query_rows_at_max_len", (double)rows_hi);
    if (!pass)
        st = rl_fail(err, RL_ERR_MISMATCH, "content_retrieval: a verification exceeded its tolerance "
                                           "(see the verification records)");
done:
    if (have_eng)
        attn_engine_destroy(&own);
    pe_encoding_destroy(e);
    free(q), free(k), free(kdata), free(stats), free(target), free(dist_idx), free(qrows);
    return st;
}

/* Every metric and table column this kind emits: title, unit, how it is drawn. */
static const exp_metric metrics[] = {
    {"retrieval_distance.distance_tokens", "needle distance",
     "tokens", RL_PLOT_LOGX | RL_PLOT_TRAIN},
    {"retrieval_distance.accuracy", "retrieval accuracy (argmax is the needle)",
     "", RL_PLOT_FRACTION},
    {"retrieval_distance.needle_p", "needle probability", "", RL_PLOT_FRACTION},
    {"retrieval_distance.trials", "trials per distance", "trials", RL_PLOT_HIDE},
    {"retrieval_distance.accuracy_lo95", "accuracy, 95 % interval low", "", RL_PLOT_CI},
    {"retrieval_distance.accuracy_hi95", "accuracy, 95 % interval high", "", RL_PLOT_CI},
    {"retrieval_length.length_tokens", "context length N",
     "tokens", RL_PLOT_LOGX | RL_PLOT_TRAIN | RL_PLOT_LENGTH},
    {"retrieval_length.accuracy", "retrieval accuracy", "", RL_PLOT_FRACTION},
    {"retrieval_length.needle_p", "needle probability", "", RL_PLOT_FRACTION},
    {"retrieval_length.accuracy_within_train", "accuracy, needle within train_len",
     "", RL_PLOT_FRACTION},
    {"retrieval_length.accuracy_beyond_train", "accuracy, needle beyond train_len",
     "", RL_PLOT_FRACTION},
    {"accuracy_within_train", "accuracy, needle within train_len", "", 0},
    {"accuracy_within_train_lo95", "accuracy within train_len, 95 % low", "", RL_PLOT_CI},
    {"accuracy_within_train_hi95", "accuracy within train_len, 95 % high", "", RL_PLOT_CI},
    {"trials_within_train", "independent trials within train_len (one per kv head)", "trials",
     0},
    {"accuracy_beyond_train", "accuracy, needle beyond train_len", "", 0},
    {"accuracy_beyond_train_lo95", "accuracy beyond train_len, 95 % low", "", RL_PLOT_CI},
    {"accuracy_beyond_train_hi95", "accuracy beyond train_len, 95 % high", "", RL_PLOT_CI},
    {"trials_beyond_train", "independent trials beyond train_len (one per kv head)", "trials",
     0},
    {"needle_p_within_train", "needle probability within train_len", "", 0},
    {"needle_p_beyond_train", "needle probability beyond train_len", "", 0},
    {"accuracy_at_max_len", "accuracy at max_len", "", 0},
    {"query_rows_at_max_len", "query rows the longest pass computed (max_len: every one)", "rows",
     0},
};

/* Rows of each tensor the run reads: max_len. */
static uint64_t ret_rows(const exp_run *run)
{
    ret_params p;
    rl_error err = {0};
    return ret_params_of(run, &p, &err) ? 0 : (uint64_t)p.max_len;
}

const exp_kind exp_kind_content_retrieval = {
    .name = "content_retrieval",
    .about = "needle retrieval by content (the needle is built from its query; position only "
             "lowers its score): accuracy and the needle's probability against distance and "
             "length",
    .params = params,
    .n_params = sizeof params / sizeof params[0],
    .uses_data = 1,
    .needs_gpu = 1,
    .check = ret_check,
    .estimate_bytes = ret_bytes,
    .estimate_flops = ret_flops,
    .run = ret_run,
    .metrics = metrics,
    .n_metrics = sizeof metrics / sizeof metrics[0],
    .data_rows = ret_rows,
};
