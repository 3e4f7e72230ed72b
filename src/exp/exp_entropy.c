/* exp_entropy.c — attention entropy against sequence length and query
 * position, with and without the encoding's attention factor.
 *
 * Q/K rows come from the run's data source. For each length N = min_len,
 * 2 min_len, ..., max_len the first N rows (positions 0..N-1) are attended
 * bidirectionally, so every query sees N keys, and the entropy
 * H = -sum_j p_j ln p_j (nats) is averaged over all query rows and heads;
 * ln N, the entropy of uniform attention, is the reference line. A causal
 * pass at max_len gives entropy against query position (query i sees i + 1
 * keys), averaged over power-of-two groups of key counts.
 *
 * The attention factor: RoPE scalings with one (YaRN: 0.1 ln s + 1, Peng et
 * al. 2023 §3.4; LongRoPE) multiply cos and sin by it, so logits scale by
 * its square: scale = af^2 / sqrt(d). The "no factor" columns use
 * 1 / sqrt(d). Encodings without a factor (af = 1) give equal columns and
 * run once.
 *
 * With sink_tokens S > 0 it also reports the attention mass on the first S
 * keys (attention sinks, StreamingLLM) per length and query position, from
 * one more engine pass per pass (below, "sink mass"; docs/attention.md).
 *
 * Every pass runs through exp_attn_run: the device transform is verified
 * against the double reference, the entropy of sampled rows against the
 * double CPU attention within (R + 2) eps + 2 E_s (derivation in
 * exp_attn_verify.c / attn_tol.c: fp32 accumulation over N keys); each
 * statistic's error and tolerance is recorded and any excess fails the run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_sample.h"
#include "exp/exp.h"
#include "pe/pe.h"

/* Sampled query rows (docs/attention.md "Sampled query rows"): a pass over N tokens
 * computes every query row when N <= ENT_FULL_MAX (or query_rows >= N), else
 * query_rows (0: ENT_AUTO_ROWS) rows drawn by query_sampling, exactly,
 * against all the keys they see; the means then carry a 95 % interval
 * (rl_sample.h: stratified, finite-population corrected). */
#define ENT_FULL_MAX 16384u
#define ENT_AUTO_ROWS 1024u

enum { P_MIN_LEN, P_MAX_LEN, P_SINK_TOKENS, P_QROWS, P_QSAMPLING, P_WINDOW, P_SINKS, P_CHUNK, P_LSINK, P_SLOGIT,
    P_TEMP, P_TSCALE, P_TFLOOR, P_REMAP, P_RWINDOW, P_RGROUP, P_RLEAK, P_RCHUNK, P_RLOCAL, P_COUNT };
static const rl_param params[P_COUNT] = {
    [P_MIN_LEN] = {.key = "min_len", .type = RL_P_INT, .min = 1, .max = 1048576, .def = "64",
                   .help = "shortest sequence (tokens); lengths double up to max_len"},
    [P_MAX_LEN] = {.key = "max_len", .type = RL_P_INT, .min = 1, .max = 1048576,
                   .def = "1024", .help = "longest sequence (tokens); also the causal pass's length"},
    [P_SINK_TOKENS] = {.key = "sink_tokens", .type = RL_P_INT, .min = 0, .max = 1048576,
                       .def = "0",
                       .help = "attention sinks (StreamingLLM): report the attention mass on the "
                               "first sink_tokens keys per length and query position (0: off)"},
    [P_QROWS] = {.key = "query_rows", .type = RL_P_INT, .min = 0, .max = 1048576, .def = "0",
                 .help = "query rows per pass: 0 every row up to 16384 tokens and 1024 sampled "
                         "rows beyond; S >= 1 samples S rows (every row when S >= the length), "
                         "each exact against all its keys, means with 95 % intervals; "
                         "log_groups needs 2 per position group (20 at 1024 tokens)"},
    [P_QSAMPLING] = {.key = "query_sampling", .type = RL_P_ENUM, .def = "\"log_groups\"",
                     .choices = RL_ROWS_CHOICES,
                     .help = "how sampled query rows are drawn: uniform over positions, equally "
                             "per power-of-two position group (log_groups), or the last rows"},
    EXP_ATTN_MASK_PARAMS(P_WINDOW, P_SINKS, P_CHUNK, P_LSINK, P_SLOGIT, P_TEMP, P_TSCALE,
                         P_TFLOOR),
    EXP_ATTN_REMAP_PARAMS(P_REMAP, P_RWINDOW, P_RGROUP, P_RLEAK, P_RCHUNK, P_RLOCAL),
};

/* The kind's typed parameters, defaults applied (exp_params_get). */
typedef struct ent_params {
    uint64_t min_len, max_len;
    uint32_t sink_tokens;
    uint32_t query_rows;          /* 0: automatic (ENT_FULL_MAX, ENT_AUTO_ROWS) */
    rl_rows_scheme sampling;
    exp_attn_mask mask;
} ent_params;

static rl_status ent_params_of(const exp_run *run, ent_params *p, rl_error *err)
{
    exp_value v[P_COUNT];
    rl_status st = exp_params_get("entropy", params, P_COUNT, run, v, err);
    if (!st)
        *p = (ent_params){.min_len = (uint64_t)v[P_MIN_LEN].num,
                          .max_len = (uint64_t)v[P_MAX_LEN].num,
                          .sink_tokens = (uint32_t)v[P_SINK_TOKENS].num,
                          .query_rows = (uint32_t)v[P_QROWS].num};
    if (!st && rl_rows_scheme_parse(v[P_QSAMPLING].str, &p->sampling))
        st = rl_fail_key(err, RL_ERR_ARG, "query_sampling",
                         "entropy: query_sampling '%s' is not one of %s",
                         v[P_QSAMPLING].str, RL_ROWS_CHOICES);
    if (!st)
        st = exp_attn_mask_get("entropy", v, EXP_ATTN_MASK_KEYS,
                               run->model.train_len, &p->mask, err);
    const exp_attn_mask *m = &p->mask;
    /* The sink mass is that of the first sink_tokens keys in the run's own
     * attention; a window or chunk would hide them from later rows unless
     * they are the mask's sinks too. */
    if (!st && p->sink_tokens && p->sink_tokens >= p->min_len)
        st = rl_fail_key(err, RL_ERR_ARG, "sink_tokens",
                         "entropy: sink_tokens %u must be below min_len %llu (the shortest length "
                         "needs keys that are not sinks)", p->sink_tokens,
                         (unsigned long long)p->min_len);
    if (!st && p->sink_tokens && (m->window || m->chunk_size) && m->n_sink < p->sink_tokens)
        st = rl_fail_key(err, RL_ERR_ARG, "sink_tokens",
                         "entropy: sink_tokens %u with attn_window %u / attn_chunk %u needs "
                         "attn_sinks >= %u (got %u): the first keys must stay visible to every "
                         "query, as StreamingLLM's sinks; without them their mass is 0 outside the "
                         "window",
                         p->sink_tokens, m->window, m->chunk_size, p->sink_tokens, m->n_sink);
    return st;
}

static uint64_t next_len(uint64_t N, uint64_t T);

static rl_status ent_check(const exp_run *run, rl_error *err)
{
    ent_params p;
    rl_status st = ent_params_of(run, &p, err);
    /* the longest length its query_rows samples needs the most rows
     * (rl_rows_min_rows grows with N): that one is checked and named */
    uint64_t longest = 0;
    for (uint64_t N = p.min_len; !st && N; N = next_len(N, p.max_len))
        if (p.query_rows && p.query_rows < N)
            longest = N;
    if (!st && longest)
        st = exp_query_rows_check("entropy", p.query_rows, p.sampling, longest, err);
    if (!st)
        st = exp_attn_check(run, p.min_len, p.max_len, EXP_PASS_CAUSAL | EXP_PASS_BIDIR, err);
    return st ? st : exp_attn_remap_check(run, p.max_len, &p.mask.remap, err);
}

static uint64_t ent_rows_of(const ent_params *p, uint64_t N);

static uint64_t ent_bytes(const exp_run *run)
{
    ent_params p;
    rl_error err;
    if (ent_params_of(run, &p, &err))
        return 0; /* refused by ent_check before any estimate is used */
    uint64_t T = p.max_len, S = ent_rows_of(&p, T), d = run->model.head_dim;
    uint64_t hq = run->model.heads, hk = run->model.kv_heads;
    uint64_t blk = T < EXP_ATTN_VERIFY_BLOCK ? T : EXP_ATTN_VERIFY_BLOCK;
    /* K: raw, device copy, downloaded transform (f32); Q: raw for every
     * token, its S query rows gathered, on the device and downloaded;
     * reference/bounds/scales (3 f64) of one verified block; stats of the
     * query rows. A 1M-token run of experiments/million-tokens (S 256,
     * head_dim 128, 1 head): this gives 2.0 GiB, measured peak 2.3 GiB. */
    uint64_t sinks = p.sink_tokens ? S * hq * (RL_ATTN_NSTAT * 4 + 16) + T * 4 : 0;
    return T * hk * d * 12 + T * hq * d * 4 + S * hq * d * 12 + blk * (hq + hk) * d * 24 +
           S * hq * RL_ATTN_NSTAT * 4 * 2 + sinks;
}

/* Query rows of a pass over N tokens (N: every row). */
static uint64_t ent_rows_of(const ent_params *p, uint64_t N)
{
    uint64_t s = p->query_rows ? p->query_rows : (N <= ENT_FULL_MAX ? N : ENT_AUTO_ROWS);
    return s < N ? s : N;
}

/* Lengths lo, 2 lo, 4 lo, ..., then max_len itself; 0 ends. */
static uint64_t next_len(uint64_t N, uint64_t T)
{
    return N >= T ? 0 : N * 2 > T ? T : N * 2;
}

/* Multiply-adds of QK^T over the run: rows x N x H D per bidirectional pass
 * (rows = N for a full pass), about half that for the causal one, each once
 * more for the no-factor twin (two). */
static double ent_work(const ent_params *p, double hd, int two)
{
    double work = 0;
    uint64_t T = p->max_len;
    for (uint64_t N = p->min_len; N; N = next_len(N, T))
        work += (double)ent_rows_of(p, N) * N * hd * (1 + two);
    return work + 0.5 * (double)ent_rows_of(p, T) * T * hd * (1 + two);
}

static double ent_flops(const exp_run *run)
{
    ent_params p;
    rl_error err;
    pe_encoding *e = NULL;
    if (ent_params_of(run, &p, &err) || exp_encoding_create(run, p.max_len, &e, &err))
        return 0; /* refused by ent_check before any estimate is used */
    const rope_freqs *f = pe_rope_freqs(e);
    int two = f && f->attention_factor != 1.0;
    pe_encoding_destroy(e);
    return 2 * ent_work(&p, (double)run->model.heads * run->model.head_dim, two);
}

/* The query rows of one pass (N tokens, causal or not): every row, or
 * ent_rows_of(N) drawn by p->sampling from a seed of the run's seed, the
 * length and the direction (so the no-factor twin and the sink pass of the
 * same pass see the same rows, and runs repeat). */
static rl_status ent_plan(const exp_run *run, const ent_params *p, uint64_t N, int causal,
                          rl_rows_plan *plan, rl_error *err)
{
    uint64_t seed = run->seed ^ (N * 0x9e3779b97f4a7c15ull) ^ (causal ? 0xc2b2ae3d27d4eb4full : 0);
    return rl_rows_plan_make(p->sampling, N, ent_rows_of(p, N), seed, plan, err);
}

/* The io fields of a plan: none for a census of every token. */
static void io_rows(exp_attn_io *io, const rl_rows_plan *plan)
{
    int smp = plan->n_rows < plan->tokens;
    io->rows = smp ? plan->rows : NULL;
    io->n_rows = smp ? plan->n_rows : 0;
}

/* y[r] = statistic `slot` of sampled row r averaged over the heads (the
 * sampling unit is the query token; its heads are not independent). */
static void row_means(const float *stats, int slot, uint64_t rows, uint32_t H, double *y)
{
    for (uint64_t r = 0; r < rows; r++) {
        double s = 0;
        for (uint32_t h = 0; h < H; h++)
            s += stats[(r * H + h) * RL_ATTN_NSTAT + slot];
        y[r] = s / H;
    }
}

/* The same for a double [rows][H] array. */
static void row_means_d(const double *v, uint64_t rows, uint32_t H, double *y)
{
    for (uint64_t r = 0; r < rows; r++) {
        double s = 0;
        for (uint32_t h = 0; h < H; h++)
            s += v[r * H + h];
        y[r] = s / H;
    }
}

/* A label's sampling note: "" for every row, else " (S of N query rows,
 * scheme)". */
static void rows_note(const rl_rows_plan *plan, char *buf, size_t cap)
{
    if (plan->n_rows < plan->tokens)
        snprintf(buf, cap, " (%u of %llu query rows, %s)", plan->n_rows,
                 (unsigned long long)plan->tokens, rl_rows_scheme_name(plan->scheme));
    else
        buf[0] = 0;
}

/* ---- sink mass (sink_tokens S > 0) ---------------------------------------
 * The mass on the first S keys, m_i = sum_{j < S} p_ij, from two passes of
 * the engine (no statistic of its own): the run's pass gives lse_i over all
 * visible keys (with a learned sink, its exp(sigma) too); a second pass with
 * the mask {n_sink = S, window = 1} sees the S sink keys and the query's own
 * key i only (chunk skipping dispatches the sink chunk and the diagonal), and
 * its target statistic is p of key i there, t_i. With lse'_i its log-sum-exp:
 *   i <  S: every key of that pass is a sink:  m_i = exp(lse'_i - lse_i)
 *   i >= S:                                    m_i = exp(lse'_i - lse_i) (1 - t_i)
 * The learned sink's share of the denominator is exp(sigma - lse_i)
 * (docs/attention.md, "Learned sinks"). Same temperature in both passes (a
 * per-query factor on every logit) and position remapping (the same logit
 * for each (i, j)) in both passes, no learned sink in the second. */
typedef struct sink_bufs {
    uint32_t S;
    float *stats_r;     /* [T][H][RL_ATTN_NSTAT] of the restricted pass */
    uint32_t *target;   /* [T]: t -> t */
    double *mass, *lmass; /* [T][H] device sink mass, learned sink share */
    double *ref, *ref_l;  /* [rows][H] the double reference of the sampled rows */
} sink_bufs;

/* Keys visible to row i of an N-token pass under mask m (causal: j <= i;
 * attn_mask_row_keys), and how many of them are among the first S (every
 * one of [0, S) up to the row's last key, since the mask keeps them:
 * ent_params_of). */
static double uniform_sink_mass(uint64_t i, uint64_t N, int causal, const exp_attn_mask *m,
                                uint32_t S)
{
    const attn_mask am = {.causal = causal, .window = m->window, .n_sink = m->n_sink,
                          .chunk_size = m->chunk_size};
    uint64_t hi = causal ? i : N - 1;
    return (double)(S < hi + 1 ? S : hi + 1) / (double)attn_mask_row_keys(&am, i, N);
}

/* Runs the restricted pass for the pass ra (N tokens, its query rows plan,
 * statistics stats per slot, the sampled rows' reference in b->ref /
 * b->ref_l), fills b->mass and b->lmass [slots][H], and records the
 * verification of the derived mass: on each verified row against the double
 * reference sum_{j<S} p_j within the bound propagated from the verified lse
 * and target tolerances (tau_a, tau_r of the two lse, relative tau_t of t;
 * t <= t' / (1 - tau_t)):
 *   |m' - m| <= exp(lse'_r - lse'_a) [(1 - t')(e^(tau_a + tau_r) - 1) + e^(tau_a + tau_r) tau_t t' / (1 - tau_t)]
 * (t' = 0 for i < S), the learned share within exp(sigma - lse'_a)(e^tau_a - 1),
 * each plus 8 ulp of double for the host's own arithmetic. */
static rl_status sink_pass(exp_ctx *ctx, attn_engine *eng, const pe_encoding *en,
                           const ent_params *p, const float *q, const float *k, uint64_t N,
                           int causal, const rl_rows_plan *plan, const float *stats,
                           const exp_attn_result *ra, sink_bufs *b, exp_sink *sink,
                           const char *label, int *pass, rl_error *err)
{
    uint32_t H = pe_encoding_shape(en)->heads, S = b->S;
    uint64_t ns = plan->n_rows; /* slots; token plan->rows[slot] */
    exp_attn_mask mr = {.window = 1, .n_sink = S, .temp = p->mask.temp,
                        .temp_a = p->mask.temp_a, .temp_b = p->mask.temp_b,
                        .remap = p->mask.remap};
    exp_attn_io io = {.tokens = N, .q = q, .k = k, .target = b->target, .causal = causal,
                      .mask = mr, .flags = ATTN_TARGET};
    io_rows(&io, plan);
    attn_outputs out = {.stats = b->stats_r};
    exp_attn_result rr;
    char lab[160];
    snprintf(lab, sizeof lab, "%s, sink keys %u + own key", label, S);
    rl_status st = exp_attn_run(ctx->dev, eng, en, &io, &out, &rr, err);
    if (st)
        return st;
    *pass &= exp_attn_record_stats(sink, lab, &rr);
    const float *sig = NULL;
    float sigma = (float)p->mask.sink_logit;
    if (p->mask.learned_sink)
        sig = &sigma;
    for (uint64_t r = 0; r < ns; r++) {
        uint64_t t = plan->rows[r];
        for (uint32_t h = 0; h < H; h++) {
            const float *sa = stats + (r * H + h) * RL_ATTN_NSTAT;
            const float *sr = b->stats_r + (r * H + h) * RL_ATTN_NSTAT;
            double e = exp((double)sr[RL_ATTN_S_LSE] - (double)sa[RL_ATTN_S_LSE]);
            b->mass[r * H + h] = t < S ? e : e * (1.0 - (double)sr[RL_ATTN_S_TARGET_P]);
            b->lmass[r * H + h] = sig ? exp((double)*sig - (double)sa[RL_ATTN_S_LSE]) : 0.0;
        }
    }
    double ta = ra->attn.verify.tol[ATTN_V_LSE], tr = rr.attn.verify.tol[ATTN_V_LSE];
    double tt = rr.attn.verify.tol[ATTN_V_TARGET_P], tau = ta + tr;
    uint64_t vr = ATTN_DEFAULT_VERIFY_ROWS, rows = vr < ns ? vr : ns;
    double worst = -1, w_err = 0, w_bound = 0, l_worst = -1, l_err = 0, l_bound = 0, max_err = 0;
    int ok = tt < 1;
    for (uint64_t r = 0; r < rows; r++) {
        uint64_t slot = attn_verify_token(r, rows, ns), t = plan->rows[slot];
        for (uint32_t h = 0; h < H; h++) {
            const float *sa = stats + (slot * H + h) * RL_ATTN_NSTAT;
            const float *sr = b->stats_r + (slot * H + h) * RL_ATTN_NSTAT;
            double tp = t < S ? 0.0 : (double)sr[RL_ATTN_S_TARGET_P];
            double e = exp((double)sr[RL_ATTN_S_LSE] - (double)sa[RL_ATTN_S_LSE]);
            double m = b->mass[slot * H + h], ref = b->ref[r * H + h];
            double bound = e * ((1.0 - tp) * expm1(tau) + exp(tau) * tt * tp / (1.0 - tt)) +
                           0x1p-50 * (m + 1e-300);
            double a = fabs(m - ref);
            if (!(a <= bound))
                ok = 0;
            if (a > max_err || !(a == a))
                max_err = a;
            if (!(a / bound <= worst))
                worst = a / bound, w_err = a, w_bound = bound;
            double lm = b->lmass[slot * H + h], lref = b->ref_l[r * H + h];
            double lb = lm * expm1(ta) + 0x1p-50 * (lm + 1e-300), la = fabs(lm - lref);
            if (!(la <= lb))
                ok = 0;
            if (!(la / lb <= l_worst))
                l_worst = la / lb, l_err = la, l_bound = lb;
        }
    }
    char what[256], detail[200];
    snprintf(what, sizeof what, "%s: mass on the first %u keys of %llu verified rows vs double "
             "reference", label, S, (unsigned long long)rows);
    snprintf(detail, sizeof detail, "absolute error; bound from the lse (%.3g, %.3g) and target "
             "(%.3g, relative) tolerances of the two passes; max abs error %.3g", ta, tr, tt,
             max_err);
    exp_sink_verify(sink, what, w_err, w_bound, ok, detail);
    if (p->mask.learned_sink) {
        snprintf(what, sizeof what, "%s: learned sink share of %llu verified rows vs double "
                 "reference", label, (unsigned long long)rows);
        exp_sink_verify(sink, what, l_err, l_bound, ok, "absolute error; bound exp(sigma - lse) "
                        "(e^tol_lse - 1)");
    }
    *pass &= ok;
    return RL_OK;
}

/* Mean of the per-row values y over [t0, t1) with its interval. */
static rl_estimate est_of(const rl_rows_plan *plan, const double *y, uint64_t t0, uint64_t t1)
{
    rl_estimate e;
    rl_rows_estimate(plan, y, t0, t1, &e);
    return e;
}

/* The tables' interval and row-count columns (X_lo95, X_hi95, query_rows)
 * exist only when some pass samples its rows (smp): a run of full passes
 * writes the tables it always wrote. One column list per table; these pick
 * its columns and a row's values. */
static int sampled_only(const char *col)
{
    size_t n = strlen(col);
    return strcmp(col, "query_rows") == 0 ||
           (n > 5 && (strcmp(col + n - 5, "_lo95") == 0 || strcmp(col + n - 5, "_hi95") == 0));
}

static rl_status ent_table(exp_sink *sink, const char *name, uint32_t n, const char *const *cols,
                           int smp, rl_error *err)
{
    const char *keep[EXP_MAX_COLS];
    uint32_t m = 0;
    for (uint32_t i = 0; i < n && m < EXP_MAX_COLS; i++)
        if (smp || !sampled_only(cols[i]))
            keep[m++] = cols[i];
    return exp_sink_table(sink, name, m, keep, err);
}

static rl_status ent_row(exp_sink *sink, uint32_t n, const char *const *cols, const double *v,
                         int smp, rl_error *err)
{
    double keep[EXP_MAX_COLS];
    uint32_t m = 0;
    for (uint32_t i = 0; i < n && m < EXP_MAX_COLS; i++)
        if (smp || !sampled_only(cols[i]))
            keep[m++] = v[i];
    return exp_sink_row(sink, keep, err);
}

static rl_status ent_run(const exp_run *run, exp_ctx *ctx, exp_sink *sink, rl_error *err)
{
    if (!ctx->dev)
        return rl_fail(err, RL_ERR_ARG, "entropy: needs a device");
    ent_params p;
    rl_status st0 = ent_params_of(run, &p, err);
    if (st0)
        return st0;
    uint64_t lo = p.min_len, T = p.max_len;
    if ((st0 = exp_attn_limits(ctx->dev, run, T, ent_rows_of(&p, T), ATTN_ENTROPY, err)))
        return st0; /* before any host work */
    uint32_t H = run->model.heads, KV = run->model.kv_heads, D = run->model.head_dim;
    /* Some pass samples its query rows: the tables carry intervals and row
     * counts (the longest length samples whenever a shorter one does). */
    int smp = ent_rows_of(&p, T) < T;
    pe_encoding *e = NULL, *ec = NULL; /* the encoding in its bidirectional / causal form */
    attn_engine own, *eng = NULL;
    int have_eng = 0, pass = 1;
    float *q = malloc(T * H * D * sizeof *q), *k = malloc(T * KV * D * sizeof *k);
    float *stats = malloc(T * H * RL_ATTN_NSTAT * sizeof *stats);
    float *stats_nf = malloc(T * H * RL_ATTN_NSTAT * sizeof *stats_nf);
    double *y = malloc(T * sizeof *y), *y_nf = malloc(T * sizeof *y_nf);
    double *ym = NULL, *yl = NULL;  /* per-row sink mass, learned share */
    rl_rows_plan plan = {0}, plan_c = {0};
    sink_bufs sb = {.S = p.sink_tokens};
    uint32_t S = p.sink_tokens;
    if (S) {
        sb.stats_r = malloc(T * H * RL_ATTN_NSTAT * sizeof *sb.stats_r);
        sb.target = malloc(T * sizeof *sb.target);
        sb.mass = malloc(T * H * sizeof *sb.mass);
        sb.lmass = malloc(T * H * sizeof *sb.lmass);
        sb.ref = malloc(ATTN_DEFAULT_VERIFY_ROWS * H * sizeof *sb.ref);
        sb.ref_l = malloc(ATTN_DEFAULT_VERIFY_ROWS * H * sizeof *sb.ref_l);
        ym = malloc(T * sizeof *ym);
        yl = malloc(T * sizeof *yl);
        for (uint64_t t = 0; sb.target && t < T; t++)
            sb.target[t] = (uint32_t)t;
    }
    /* per length: sink mass, its interval, learned share, uniform reference */
    enum { LM = 5 };
    double *len_mass = S ? calloc(64, LM * sizeof *len_mass) : NULL;
    rl_status st = RL_OK;
    if (!q || !k || !stats || !stats_nf || !y || !y_nf ||
        (S && (!sb.stats_r || !sb.target || !sb.mass || !sb.lmass || !sb.ref || !sb.ref_l ||
               !len_mass || !ym || !yl))) {
        st = rl_fail(err, RL_ERR_NOMEM, "entropy: out of host memory for %llu tokens",
                     (unsigned long long)T);
        goto done;
    }
    if ((st = exp_encoding_for_pass(run, T, 0, &e, err)) ||
        (st = exp_encoding_for_pass(run, T, 1, &ec, err)) ||
        (st = run->data(run->data_user, 'q', T, q, err)) ||
        (st = run->data(run->data_user, 'k', T, k, err)) ||
        (st = exp_attn_engine(ctx, &own, &eng, &have_eng, err)))
        goto done;
    const rope_freqs *f = pe_rope_freqs(e);
    double af = f ? f->attention_factor : 1.0;
    int two = af != 1.0;
    double eff_scale = NAN;
    exp_attn_result r;
    char label[160], note[96];

    /* The bidirectional and the causal kernel are two pipelines (four with
     * sampled rows: the full passes of the short lengths, the sampled ones
     * of the long): compiled together now instead of one before each part. */
    {
        const pe_encoding *pe[4] = {e, ec, e, ec};
        static const uint32_t one = 0;
        exp_attn_io pio[4] = {
            {.tokens = T, .causal = 0, .mask = p.mask, .flags = ATTN_ENTROPY},
            {.tokens = T, .causal = 1, .mask = p.mask, .flags = ATTN_ENTROPY},
            {.tokens = T, .causal = 0, .mask = p.mask, .flags = ATTN_ENTROPY, .rows = &one,
             .n_rows = 1},
            {.tokens = T, .causal = 1, .mask = p.mask, .flags = ATTN_ENTROPY, .rows = &one,
             .n_rows = 1}};
        uint32_t n_prep = smp ? (ent_rows_of(&p, lo) < lo ? 2 : 4) : 2;
        if ((st = exp_attn_prepare(eng, n_prep, n_prep == 2 && smp ? pe + 2 : pe,
                                   n_prep == 2 && smp ? pio + 2 : pio, err)))
            goto done;
    }

    /* Progress in multiply-adds of QK^T (ent_work). */
    double done_w = 0, hd = (double)H * D, work = ent_work(&p, hd, two);

    /* Entropy against length: bidirectional passes over the first N rows. */
    const char *cols[] = {"length_tokens", "entropy_nats", "entropy_nats_lo95",
                          "entropy_nats_hi95", "entropy_no_factor_nats",
                          "entropy_no_factor_nats_lo95", "entropy_no_factor_nats_hi95",
                          "ref_ln_n_nats", "query_rows"};
    if ((st = ent_table(sink, "entropy_length", 9, cols, smp, err)))
        goto done;
    double h_lo = NAN, h_hi = NAN, hn_lo = NAN, hn_hi = NAN;
    rl_estimate e_hi = {0}, en_hi = {0};
    uint64_t n_lo = 0, n_hi = 0, n_len = 0, rows_hi = 0;
    for (uint64_t N = lo; N && !st; N = next_len(N, T)) {
        rl_estimate hv[2];
        /* The encoding for this length: scalings that depend on the length
         * in use (dynamic NTK, LongRoPE) are recomputed from N, as HF does
         * for each new sequence length (was: built once for max_len). */
        pe_encoding *own_en = NULL, *en = e; /* at max_len: e, made above */
        rl_rows_plan_free(&plan);
        if ((st = ent_plan(run, &p, N, 0, &plan, err)) ||
            (N != T && (st = exp_encoding_for_pass(run, N, 0, &own_en, err))))
            goto done;
        if (own_en)
            en = own_en;
        rows_note(&plan, note, sizeof note);
        for (int nf = 0; nf <= two; nf++) {
            exp_attn_io io = {.tokens = N, .q = q, .k = k, .causal = 0, .mask = p.mask, .flags = ATTN_ENTROPY,
                              .no_attention_factor = nf};
            io_rows(&io, &plan);
            if (S && !nf)
                io.ref_sink_keys = S, io.ref_sink_mass = sb.ref, io.ref_sink_learned = sb.ref_l;
            attn_outputs out = {.stats = nf ? stats_nf : stats};
            snprintf(label, sizeof label, "N=%llu%s%s", (unsigned long long)N,
                     nf ? ", no attention factor" : "", note);
            exp_sink_progress(sink, label, done_w, work);
            if ((st = exp_attn_run(ctx->dev, eng, en, &io, &out, &r, err))) {
                pe_encoding_destroy(own_en);
                goto done;
            }
            done_w += (double)plan.n_rows * N * hd;
            pass &= exp_attn_record_stats(sink, label, &r);
            row_means(nf ? stats_nf : stats, RL_ATTN_S_ENTROPY, plan.n_rows, H, nf ? y_nf : y);
            hv[nf] = est_of(&plan, nf ? y_nf : y, 0, N);
            if (S && !nf) {
                if ((st = sink_pass(ctx, eng, en, &p, q, k, N, 0, &plan, stats, &r, &sb, sink,
                                    label, &pass, err))) {
                    pe_encoding_destroy(own_en);
                    goto done;
                }
                double u = 0;
                for (uint64_t t = 0; t < N; t++)
                    u += uniform_sink_mass(t, N, 0, &p.mask, S);
                row_means_d(sb.mass, plan.n_rows, H, ym);
                row_means_d(sb.lmass, plan.n_rows, H, yl);
                rl_estimate em = est_of(&plan, ym, 0, N);
                if (n_len < 64) {
                    double *lm = len_mass + LM * n_len;
                    lm[0] = em.mean, lm[1] = em.lo, lm[2] = em.hi;
                    lm[3] = est_of(&plan, yl, 0, N).mean;
                    lm[4] = u / (double)N;
                }
            }
        }
        n_len++;
        pe_encoding_destroy(own_en);
        if (!two)
            hv[1] = hv[0];
        double row[9] = {(double)N, hv[0].mean, hv[0].lo, hv[0].hi, hv[1].mean, hv[1].lo,
                         hv[1].hi, log((double)N), (double)plan.n_rows};
        if ((st = ent_row(sink, 9, cols, row, smp, err)))
            goto done;
        if (!n_lo)
            n_lo = N, h_lo = hv[0].mean, hn_lo = hv[1].mean;
        n_hi = N, h_hi = hv[0].mean, hn_hi = hv[1].mean;
        e_hi = hv[0], en_hi = hv[1], rows_hi = plan.n_rows;
    }
    if ((st = exp_sink_end_table(sink, err)))
        goto done;

    /* Entropy against query position: one causal pass at max_len; rows
     * grouped by key count i + 1 in [2^b, 2^(b+1)). */
    if ((st = ent_plan(run, &p, T, 1, &plan_c, err)))
        goto done;
    rows_note(&plan_c, note, sizeof note);
    for (int nf = 0; nf <= two; nf++) {
        exp_attn_io io = {.tokens = T, .q = q, .k = k, .causal = 1, .mask = p.mask, .flags = ATTN_ENTROPY,
                          .no_attention_factor = nf};
        io_rows(&io, &plan_c);
        if (S && !nf)
            io.ref_sink_keys = S, io.ref_sink_mass = sb.ref, io.ref_sink_learned = sb.ref_l;
        attn_outputs out = {.stats = nf ? stats_nf : stats};
        snprintf(label, sizeof label, "causal N=%llu%s%s", (unsigned long long)T,
                 nf ? ", no attention factor" : "", note);
        exp_sink_progress(sink, label, done_w, work);
        if ((st = exp_attn_run(ctx->dev, eng, ec, &io, &out, &r, err)))
            goto done;
        done_w += 0.5 * (double)plan_c.n_rows * T * hd;
        pass &= exp_attn_record_stats(sink, label, &r);
        row_means(nf ? stats_nf : stats, RL_ATTN_S_ENTROPY, plan_c.n_rows, H, nf ? y_nf : y);
        if (!nf) /* the kernel's scale; the rotation carries af on cos and sin */
            eff_scale = r.scale * af * af;
        if (S && !nf &&
            (st = sink_pass(ctx, eng, ec, &p, q, k, T, 1, &plan_c, stats, &r, &sb, sink, label,
                            &pass, err)))
            goto done;
    }
    exp_sink_progress(sink, "tables", done_w, work);
    const char *pcols[] = {"query_keys_tokens", "entropy_nats", "entropy_nats_lo95",
                           "entropy_nats_hi95", "entropy_no_factor_nats",
                           "entropy_no_factor_nats_lo95", "entropy_no_factor_nats_hi95",
                           "ref_ln_keys_nats", "query_rows"};
    if ((st = ent_table(sink, "entropy_position", 9, pcols, smp, err)))
        goto done;
    if (!two)
        memcpy(y_nf, y, plan_c.n_rows * sizeof *y);
    for (uint64_t a = 1; a <= T && !st; a *= 2) {
        uint64_t t0 = a - 1, t1 = a * 2 - 1 < T ? a * 2 - 1 : T; /* rows with i+1 in [a, 2a) */
        double keys = 0, lnk = 0;
        for (uint64_t t = t0; t < t1; t++)
            keys += (double)(t + 1), lnk += log((double)(t + 1));
        double n = (double)(t1 - t0);
        rl_estimate hf = est_of(&plan_c, y, t0, t1), hn = est_of(&plan_c, y_nf, t0, t1);
        if (!(hf.mean == hf.mean) || !(hn.mean == hn.mean))
            continue; /* a group the sample does not estimate (uniform: too few rows there) */
        double row[9] = {keys / n, hf.mean, hf.lo, hf.hi, hn.mean, hn.lo, hn.hi, lnk / n,
                         (double)hf.n};
        st = ent_row(sink, 9, pcols, row, smp, err);
    }
    if (st || (st = exp_sink_end_table(sink, err)))
        goto done;
    double sink_last = NAN;
    if (S) {
        const char *lc[] = {"length_tokens", "sink_mass", "sink_mass_lo95", "sink_mass_hi95",
                            "learned_sink_mass", "ref_uniform_mass"};
        if ((st = ent_table(sink, "sink_length", 6, lc, smp, err)))
            goto done;
        uint64_t i = 0;
        for (uint64_t N = lo; N && !st && i < 64; N = next_len(N, T), i++) {
            const double *lm = len_mass + LM * i;
            double row[6] = {(double)N, lm[0], lm[1], lm[2], lm[3], lm[4]};
            st = ent_row(sink, 6, lc, row, smp, err);
        }
        const char *pc[] = {"query_keys_tokens", "sink_mass", "sink_mass_lo95",
                            "sink_mass_hi95", "learned_sink_mass", "ref_uniform_mass"};
        if (st || (st = exp_sink_end_table(sink, err)) ||
            (st = ent_table(sink, "sink_position", 6, pc, smp, err)))
            goto done;
        row_means_d(sb.mass, plan_c.n_rows, H, ym);
        row_means_d(sb.lmass, plan_c.n_rows, H, yl);
        for (uint64_t a = 1; a <= T && !st; a *= 2) {
            uint64_t t0 = a - 1, t1 = a * 2 - 1 < T ? a * 2 - 1 : T;
            double keys = 0, u = 0;
            for (uint64_t t = t0; t < t1; t++)
                keys += (double)(t + 1), u += uniform_sink_mass(t, T, 1, &p.mask, S);
            double n = (double)(t1 - t0);
            rl_estimate em = est_of(&plan_c, ym, t0, t1);
            if (!(em.mean == em.mean))
                continue;
            double lmean = est_of(&plan_c, yl, t0, t1).mean;
            double row[6] = {keys / n, em.mean, em.lo, em.hi, lmean, u / n};
            st = ent_row(sink, 6, pc, row, smp, err);
        }
        if (st || (st = exp_sink_end_table(sink, err)))
            goto done;
        sink_last = est_of(&plan_c, ym, T / 2, T).mean; /* the causal pass's second half */
        uint64_t last = n_len - 1 < 64 ? n_len - 1 : 63;
        exp_sink_metric(sink, "sink_mass_at_max_len", len_mass[LM * last]);
        exp_sink_metric(sink, "learned_sink_mass_at_max_len", len_mass[LM * last + 3]);
        exp_sink_metric(sink, "sink_mass_causal_last", sink_last);
    }

    exp_sink_metric(sink, "attention_factor", af);
    exp_sink_metric(sink, "logit_scale", eff_scale); /* af^2/sqrt(d); 1 for T5 (unscaled) */
    exp_sink_metric(sink, "entropy_at_max_len", h_hi);
    exp_sink_metric(sink, "entropy_no_factor_at_max_len", hn_hi);
    /* how many query rows the longest pass computed: max_len for the full
     * pass, else the sample (the choice made, in summary.json) */
    exp_sink_metric(sink, "query_rows_at_max_len", (double)rows_hi);
    if (smp) {
        exp_sink_metric(sink, "entropy_at_max_len_lo95", e_hi.lo);
        exp_sink_metric(sink, "entropy_at_max_len_hi95", e_hi.hi);
        exp_sink_metric(sink, "entropy_no_factor_at_max_len_lo95", en_hi.lo);
        exp_sink_metric(sink, "entropy_no_factor_at_max_len_hi95", en_hi.hi);
    }
    exp_sink_metric(sink, "ln_max_len", log((double)n_hi));
    /* Growth of entropy per unit of ln N between the shortest and longest
     * length (1 = grows like uniform attention's ln N; 0 = flat). */
    double span = log((double)n_hi / (double)n_lo);
    exp_sink_metric(sink, "entropy_growth_per_ln_n", span > 0 ? (h_hi - h_lo) / span : NAN);
    exp_sink_metric(sink, "entropy_no_factor_growth_per_ln_n",
                    span > 0 ? (hn_hi - hn_lo) / span : NAN);
    if (!pass)
        st = rl_fail(err, RL_ERR_MISMATCH, "entropy: a verification exceeded its tolerance "
                                           "(see the verification records)");
done:
    if (have_eng)
        attn_engine_destroy(&own);
    pe_encoding_destroy(e);
    pe_encoding_destroy(ec);
    rl_rows_plan_free(&plan);
    rl_rows_plan_free(&plan_c);
    free(q), free(k), free(stats), free(stats_nf), free(y), free(y_nf), free(ym), free(yl);
    free(sb.stats_r), free(sb.target), free(sb.mass), free(sb.lmass), free(sb.ref), free(sb.ref_l);
    free(len_mass);
    return st;
}

/* Every metric and table column this kind emits: title, unit, how it is drawn. */
static const exp_metric metrics[] = {
    {"entropy_length.length_tokens", "context length N",
     "tokens", RL_PLOT_LOGX | RL_PLOT_TRAIN | RL_PLOT_LENGTH},
    {"entropy_length.entropy_nats", "mean attention entropy", "nats", 0},
    {"entropy_length.entropy_no_factor_nats", "mean attention entropy without the attention factor",
     "nats", 0},
    {"entropy_length.ref_ln_n_nats", "ln N (uniform attention)", "nats", RL_PLOT_REF},
    {"entropy_position.query_keys_tokens", "keys a query sees",
     "tokens", RL_PLOT_LOGX | RL_PLOT_TRAIN},
    {"entropy_position.entropy_nats", "attention entropy by query position", "nats", 0},
    {"entropy_position.entropy_no_factor_nats",
     "attention entropy by query position, without the attention factor",
     "nats", 0},
    {"entropy_position.ref_ln_keys_nats", "ln(keys) (uniform attention)", "nats", RL_PLOT_REF},
    {"attention_factor", "attention factor", "", 0},
    {"logit_scale", "effective logit scale", "", 0},
    {"entropy_length.entropy_nats_lo95", "mean attention entropy, 95 % interval low", "nats",
     RL_PLOT_CI},
    {"entropy_length.entropy_nats_hi95", "mean attention entropy, 95 % interval high", "nats",
     RL_PLOT_CI},
    {"entropy_length.entropy_no_factor_nats_lo95", "entropy without the factor, 95 % low", "nats",
     RL_PLOT_CI},
    {"entropy_length.entropy_no_factor_nats_hi95", "entropy without the factor, 95 % high",
     "nats", RL_PLOT_CI},
    {"entropy_length.query_rows", "query rows computed per pass", "rows", RL_PLOT_HIDE},
    {"entropy_position.entropy_nats_lo95", "entropy by query position, 95 % low", "nats",
     RL_PLOT_CI},
    {"entropy_position.entropy_nats_hi95", "entropy by query position, 95 % high", "nats",
     RL_PLOT_CI},
    {"entropy_position.entropy_no_factor_nats_lo95",
     "entropy by query position without the factor, 95 % low", "nats", RL_PLOT_CI},
    {"entropy_position.entropy_no_factor_nats_hi95",
     "entropy by query position without the factor, 95 % high", "nats", RL_PLOT_CI},
    {"entropy_position.query_rows", "sampled query rows in the position group", "rows",
     RL_PLOT_HIDE},
    {"sink_length.sink_mass_lo95", "sink mass, 95 % low", "", RL_PLOT_CI},
    {"sink_length.sink_mass_hi95", "sink mass, 95 % high", "", RL_PLOT_CI},
    {"sink_position.sink_mass_lo95", "sink mass by query position, 95 % low", "", RL_PLOT_CI},
    {"sink_position.sink_mass_hi95", "sink mass by query position, 95 % high", "", RL_PLOT_CI},
    {"query_rows_at_max_len", "query rows the longest pass computed", "rows", 0},
    {"entropy_at_max_len_lo95", "entropy at max_len, 95 % low", "nats", RL_PLOT_CI},
    {"entropy_at_max_len_hi95", "entropy at max_len, 95 % high", "nats", RL_PLOT_CI},
    {"entropy_no_factor_at_max_len_lo95", "entropy at max_len without the factor, 95 % low",
     "nats", RL_PLOT_CI},
    {"entropy_no_factor_at_max_len_hi95", "entropy at max_len without the factor, 95 % high",
     "nats", RL_PLOT_CI},
    {"entropy_at_max_len", "entropy at max_len", "nats", 0},
    {"entropy_no_factor_at_max_len", "entropy at max_len without the factor", "nats", 0},
    {"ln_max_len", "ln max_len", "nats", 0},
    {"entropy_growth_per_ln_n", "entropy growth per unit ln N", "", 0},
    {"entropy_no_factor_growth_per_ln_n", "entropy growth per unit ln N without the factor", "", 0},
    {"sink_length.length_tokens", "context length N", "tokens",
     RL_PLOT_LOGX | RL_PLOT_TRAIN | RL_PLOT_LENGTH},
    {"sink_length.sink_mass", "attention mass on the first sink_tokens keys", "",
     RL_PLOT_FRACTION},
    {"sink_length.learned_sink_mass", "learned sink's share of the softmax denominator", "",
     RL_PLOT_FRACTION},
    {"sink_length.ref_uniform_mass", "sink mass of uniform attention", "", RL_PLOT_REF},
    {"sink_position.query_keys_tokens", "keys a query sees", "tokens",
     RL_PLOT_LOGX | RL_PLOT_TRAIN},
    {"sink_position.sink_mass", "attention mass on the first sink_tokens keys by query position",
     "", RL_PLOT_FRACTION},
    {"sink_position.learned_sink_mass", "learned sink's share by query position", "",
     RL_PLOT_FRACTION},
    {"sink_position.ref_uniform_mass", "sink mass of uniform attention", "", RL_PLOT_REF},
    {"sink_mass_at_max_len", "sink mass at max_len (bidirectional)", "", 0},
    {"learned_sink_mass_at_max_len", "learned sink share at max_len (bidirectional)", "", 0},
    {"sink_mass_causal_last", "sink mass of the causal pass's second half of the rows", "", 0},
};

/* Rows of each tensor the run reads: max_len. */
static uint64_t ent_rows(const exp_run *run)
{
    ent_params p;
    rl_error err = {0};
    return ent_params_of(run, &p, &err) ? 0 : (uint64_t)p.max_len;
}

const exp_kind exp_kind_entropy = {
    .name = "entropy",
    .about = "attention entropy against length and query position, with and without the "
             "attention factor, against ln N",
    .params = params,
    .n_params = sizeof params / sizeof params[0],
    .uses_data = 1,
    .needs_gpu = 1,
    .check = ent_check,
    .estimate_bytes = ent_bytes,
    .estimate_flops = ent_flops,
    .run = ent_run,
    .metrics = metrics,
    .n_metrics = sizeof metrics / sizeof metrics[0],
    .data_rows = ent_rows,
};
