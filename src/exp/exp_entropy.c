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
 * Every pass runs through exp_attn_run: the device transform is verified
 * against the double reference, the entropy of sampled rows against the
 * double CPU attention within (R + 2) eps + 2 E_s (derivation in
 * exp_attn_verify.c / attn_tol.c: fp32 accumulation over N keys); each
 * statistic's error and tolerance is recorded and any excess fails the run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exp/exp.h"
#include "pe/pe.h"

enum { P_MIN_LEN, P_MAX_LEN, P_WINDOW, P_SINKS, P_CHUNK, P_LSINK, P_SLOGIT, P_TEMP, P_TSCALE,
    P_TFLOOR, P_REMAP, P_RWINDOW, P_RGROUP, P_RLEAK, P_RCHUNK, P_COUNT };
static const rl_param params[P_COUNT] = {
    [P_MIN_LEN] = {.key = "min_len", .type = RL_P_INT, .min = 1, .max = 1048576, .def = "64",
                   .help = "shortest sequence (tokens); lengths double up to max_len"},
    [P_MAX_LEN] = {.key = "max_len", .type = RL_P_INT, .min = 1, .max = 1048576,
                   .def = "1024", .help = "longest sequence (tokens); also the causal pass's length"},
    EXP_ATTN_MASK_PARAMS(P_WINDOW, P_SINKS, P_CHUNK, P_LSINK, P_SLOGIT, P_TEMP, P_TSCALE,
                         P_TFLOOR),
    EXP_ATTN_REMAP_PARAMS(P_REMAP, P_RWINDOW, P_RGROUP, P_RLEAK, P_RCHUNK),
};

/* The kind's typed parameters, defaults applied (exp_params_get). */
typedef struct ent_params {
    uint64_t min_len, max_len;
    exp_attn_mask mask;
} ent_params;

static rl_status ent_params_of(const exp_run *run, ent_params *p, rl_error *err)
{
    exp_value v[P_COUNT];
    rl_status st = exp_params_get("entropy", params, P_COUNT, run, v, err);
    if (!st)
        *p = (ent_params){.min_len = (uint64_t)v[P_MIN_LEN].num,
                          .max_len = (uint64_t)v[P_MAX_LEN].num};
    if (!st)
        st = exp_attn_mask_get("entropy", &v[P_WINDOW], &v[P_SINKS], &v[P_CHUNK], &v[P_LSINK],
                               &v[P_SLOGIT], &v[P_TEMP], &v[P_TSCALE], &v[P_TFLOOR],
                           run->model.train_len, &p->mask, err);
    if (!st)
        st = exp_attn_remap_get("entropy", &v[P_REMAP], &v[P_RWINDOW], &v[P_RGROUP],
                                &v[P_RLEAK], &v[P_RCHUNK], run->model.train_len, &p->mask, err);
    return st;
}

static rl_status ent_check(const exp_run *run, rl_error *err)
{
    ent_params p;
    rl_status st = ent_params_of(run, &p, err);
    if (!st)
        st = exp_attn_check(run, p.min_len, p.max_len, EXP_PASS_CAUSAL | EXP_PASS_BIDIR, err);
    return st ? st : exp_attn_remap_check(run, p.max_len, &p.mask.remap, err);
}

static uint64_t ent_bytes(const exp_run *run)
{
    ent_params p;
    rl_error err;
    if (ent_params_of(run, &p, &err))
        return 0; /* refused by ent_check before any estimate is used */
    uint64_t T = p.max_len;
    uint64_t row = (uint64_t)(run->model.heads + run->model.kv_heads) * run->model.head_dim;
    /* raw + downloaded transformed Q/K on host (f32), reference/bounds
     * (3 f64) while checking them, device copies, stats */
    return T * row * (4 + 4 + 24 + 8) + T * run->model.heads * RL_ATTN_NSTAT * 4 * 2;
}

/* Lengths lo, 2 lo, 4 lo, ..., then max_len itself; 0 ends. */
static uint64_t next_len(uint64_t N, uint64_t T)
{
    return N >= T ? 0 : N * 2 > T ? T : N * 2;
}

/* Multiply-adds of QK^T over the run: N^2 H D per bidirectional pass, half
 * that for the causal one, each once more for the no-factor twin (two). */
static double ent_work(uint64_t lo, uint64_t T, double hd, int two)
{
    double work = 0;
    for (uint64_t N = lo; N; N = next_len(N, T))
        work += (double)N * N * hd * (1 + two);
    return work + 0.5 * (double)T * T * hd * (1 + two);
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
    return 2 * ent_work(p.min_len, p.max_len, (double)run->model.heads * run->model.head_dim, two);
}

/* Mean entropy of rows [t0, t1) over all heads. */
static double mean_entropy(const float *stats, uint64_t t0, uint64_t t1, uint32_t H)
{
    double s = 0;
    for (uint64_t t = t0; t < t1; t++)
        for (uint32_t h = 0; h < H; h++)
            s += stats[(t * H + h) * RL_ATTN_NSTAT + RL_ATTN_S_ENTROPY];
    return s / ((double)(t1 - t0) * H);
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
    if ((st0 = exp_attn_limits(ctx->dev, run, T, ATTN_ENTROPY, err)))
        return st0; /* before any host work */
    uint32_t H = run->model.heads, KV = run->model.kv_heads, D = run->model.head_dim;
    pe_encoding *e = NULL, *ec = NULL; /* the encoding in its bidirectional / causal form */
    attn_engine own, *eng = NULL;
    int have_eng = 0, pass = 1;
    float *q = malloc(T * H * D * sizeof *q), *k = malloc(T * KV * D * sizeof *k);
    float *stats = malloc(T * H * RL_ATTN_NSTAT * sizeof *stats);
    float *stats_nf = malloc(T * H * RL_ATTN_NSTAT * sizeof *stats_nf);
    rl_status st = RL_OK;
    if (!q || !k || !stats || !stats_nf) {
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
    char label[64];

    /* Progress in multiply-adds of QK^T (ent_work). */
    double done_w = 0, hd = (double)H * D, work = ent_work(lo, T, hd, two);

    /* Entropy against length: bidirectional passes over the first N rows. */
    const char *cols[] = {"length_tokens", "entropy_nats", "entropy_no_factor_nats", "ref_ln_n_nats"};
    if ((st = exp_sink_table(sink, "entropy_length", 4, cols, err)))
        goto done;
    double h_lo = NAN, h_hi = NAN, hn_lo = NAN, hn_hi = NAN;
    uint64_t n_lo = 0, n_hi = 0;
    for (uint64_t N = lo; N && !st; N = next_len(N, T)) {
        double hv[2];
        /* The encoding for this length: scalings that depend on the length
         * in use (dynamic NTK, LongRoPE) are recomputed from N, as HF does
         * for each new sequence length (was: built once for max_len). */
        pe_encoding *en = NULL;
        if ((st = exp_encoding_for_pass(run, N, 0, &en, err)))
            goto done;
        for (int nf = 0; nf <= two; nf++) {
            exp_attn_io io = {.tokens = N, .q = q, .k = k, .causal = 0, .mask = p.mask, .flags = ATTN_ENTROPY,
                              .no_attention_factor = nf};
            attn_outputs out = {.stats = nf ? stats_nf : stats};
            snprintf(label, sizeof label, "N=%llu%s", (unsigned long long)N,
                     nf ? ", no attention factor" : "");
            exp_sink_progress(sink, label, done_w, work);
            if ((st = exp_attn_run(ctx->dev, eng, en, &io, &out, &r, err))) {
                pe_encoding_destroy(en);
                goto done;
            }
            done_w += (double)N * N * hd;
            pass &= exp_attn_record_stats(sink, label, &r);
            hv[nf] = mean_entropy(nf ? stats_nf : stats, 0, N, H);
        }
        pe_encoding_destroy(en);
        if (!two)
            hv[1] = hv[0];
        double row[4] = {(double)N, hv[0], hv[1], log((double)N)};
        if ((st = exp_sink_row(sink, row, err)))
            goto done;
        if (!n_lo)
            n_lo = N, h_lo = hv[0], hn_lo = hv[1];
        n_hi = N, h_hi = hv[0], hn_hi = hv[1];
    }
    if ((st = exp_sink_end_table(sink, err)))
        goto done;

    /* Entropy against query position: one causal pass at max_len; rows
     * grouped by key count i + 1 in [2^b, 2^(b+1)). */
    for (int nf = 0; nf <= two; nf++) {
        exp_attn_io io = {.tokens = T, .q = q, .k = k, .causal = 1, .mask = p.mask, .flags = ATTN_ENTROPY,
                          .no_attention_factor = nf};
        attn_outputs out = {.stats = nf ? stats_nf : stats};
        snprintf(label, sizeof label, "causal N=%llu%s", (unsigned long long)T,
                 nf ? ", no attention factor" : "");
        exp_sink_progress(sink, label, done_w, work);
        if ((st = exp_attn_run(ctx->dev, eng, ec, &io, &out, &r, err)))
            goto done;
        done_w += 0.5 * (double)T * T * hd;
        pass &= exp_attn_record_stats(sink, label, &r);
        if (!nf) /* the kernel's scale; the rotation carries af on cos and sin */
            eff_scale = r.scale * af * af;
    }
    exp_sink_progress(sink, "tables", done_w, work);
    const char *pcols[] = {"query_keys_tokens", "entropy_nats", "entropy_no_factor_nats",
                           "ref_ln_keys_nats"};
    if ((st = exp_sink_table(sink, "entropy_position", 4, pcols, err)))
        goto done;
    for (uint64_t a = 1; a <= T && !st; a *= 2) {
        uint64_t t0 = a - 1, t1 = a * 2 - 1 < T ? a * 2 - 1 : T; /* rows with i+1 in [a, 2a) */
        double keys = 0, lnk = 0;
        for (uint64_t t = t0; t < t1; t++)
            keys += (double)(t + 1), lnk += log((double)(t + 1));
        double n = (double)(t1 - t0);
        double hf = mean_entropy(stats, t0, t1, H);
        double row[4] = {keys / n, hf, two ? mean_entropy(stats_nf, t0, t1, H) : hf, lnk / n};
        st = exp_sink_row(sink, row, err);
    }
    if (st || (st = exp_sink_end_table(sink, err)))
        goto done;

    exp_sink_metric(sink, "attention_factor", af);
    exp_sink_metric(sink, "logit_scale", eff_scale); /* af^2/sqrt(d); 1 for T5 (unscaled) */
    exp_sink_metric(sink, "entropy_at_max_len", h_hi);
    exp_sink_metric(sink, "entropy_no_factor_at_max_len", hn_hi);
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
    free(q), free(k), free(stats), free(stats_nf);
    return st;
}

/* Every metric and table column this kind emits: title, unit, how it is drawn. */
static const exp_metric metrics[] = {
    {"entropy_length.length_tokens", "context length N",
     "tokens", EXP_PLOT_LOGX | EXP_PLOT_TRAIN | EXP_PLOT_LENGTH},
    {"entropy_length.entropy_nats", "mean attention entropy", "nats", 0},
    {"entropy_length.entropy_no_factor_nats", "mean attention entropy without the attention factor",
     "nats", 0},
    {"entropy_length.ref_ln_n_nats", "ln N (uniform attention)", "nats", EXP_PLOT_REF},
    {"entropy_position.query_keys_tokens", "keys a query sees",
     "tokens", EXP_PLOT_LOGX | EXP_PLOT_TRAIN},
    {"entropy_position.entropy_nats", "attention entropy by query position", "nats", 0},
    {"entropy_position.entropy_no_factor_nats",
     "attention entropy by query position, without the attention factor",
     "nats", 0},
    {"entropy_position.ref_ln_keys_nats", "ln(keys) (uniform attention)", "nats", EXP_PLOT_REF},
    {"attention_factor", "attention factor", "", 0},
    {"logit_scale", "effective logit scale", "", 0},
    {"entropy_at_max_len", "entropy at max_len", "nats", 0},
    {"entropy_no_factor_at_max_len", "entropy at max_len without the factor", "nats", 0},
    {"ln_max_len", "ln max_len", "nats", 0},
    {"entropy_growth_per_ln_n", "entropy growth per unit ln N", "", 0},
    {"entropy_no_factor_growth_per_ln_n", "entropy growth per unit ln N without the factor", "", 0},
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
