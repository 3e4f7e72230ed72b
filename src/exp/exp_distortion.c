/* exp_distortion.c — how much a RoPE scaling disturbs attention within the
 * original context.
 *
 * The same raw Q/K (the run's data source, `length` tokens at positions
 * 0..length-1, length <= train_len by default) are transformed twice: by the
 * run's encoding (a scaled RoPE: PI, NTK-aware, YaRN, ...) and by plain RoPE
 * with the same base, rotary dims, layout and precision (b). The kernel's
 * paired mode (ATTN_PAIRED) computes, per causal query row, the KL
 * divergence KL(p_scaled || p_rope) in nats in one pass; a second pass of
 * plain RoPE alone gives its attention mass per distance bucket (0 | 1 | 2-3
 * | 4-7 | ..., ATTN_BUCKETS) next to the scaled encoding's.
 *
 * The scaled side uses its attention factor (logits * af^2, YaRN's
 * temperature) unless attention_factor is false; plain RoPE has none.
 *
 * Each pass goes through exp_attn_run: device transforms verified against
 * the double reference (pe_vec_bound), the sampled rows' KL within
 * (2R + 4) eps + 4 E_s and bucket masses within tol_p + N u (fp32
 * accumulation over N keys; derivation in attn/attn_tol.c). Every
 * statistic's error, tolerance, NMSE and gate are recorded; any
 * excess fails the run. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_sample.h"
#include "exp/exp.h"
#include "pe/pe.h"

enum { P_LENGTH, P_ATTENTION_FACTOR, P_WINDOW, P_SINKS, P_CHUNK, P_LSINK, P_SLOGIT, P_TEMP, P_TSCALE,
    P_TFLOOR, P_REMAP, P_RWINDOW, P_RGROUP, P_RLEAK, P_RCHUNK, P_RLOCAL, P_QROWS, P_QSAMPLING, P_COUNT };
static const rl_param params[P_COUNT] = {
    [P_LENGTH] = {.key = "length", .type = RL_P_INT, .min = 0, .max = 1048576, .def = "0",
                  .help = "tokens (0: the model's train_len, the original context)"},
    [P_ATTENTION_FACTOR] = {.key = "attention_factor", .type = RL_P_BOOL, .def = "true",
                            .help = "apply the scaled encoding's attention factor (af^2 on the "
                                    "logits)"},
    EXP_ATTN_MASK_PARAMS(P_WINDOW, P_SINKS, P_CHUNK, P_LSINK, P_SLOGIT, P_TEMP, P_TSCALE,
                         P_TFLOOR),
    EXP_ATTN_REMAP_PARAMS(P_REMAP, P_RWINDOW, P_RGROUP, P_RLEAK, P_RCHUNK, P_RLOCAL),
    [P_QROWS] = {.key = "query_rows", .type = RL_P_INT, .min = 0, .max = 1048576, .def = "0",
                 .help = "query rows: 0 every row (the full pass); S >= 1 samples S rows (every "
                         "row when S >= length), each exact against all its keys; means with "
                         "95 % intervals; log_groups needs 2 per position group (20 at 1024 "
                         "tokens)"},
    [P_QSAMPLING] = {.key = "query_sampling", .type = RL_P_ENUM, .def = "\"log_groups\"",
                     .choices = RL_ROWS_CHOICES,
                     .help = "how sampled query rows are drawn: uniform over positions, equally "
                             "per power-of-two position group (log_groups), or the last rows"},
};

/* The kind's typed parameters, defaults applied (exp_params_get); length
 * 0 resolved to the model's train_len. */
typedef struct dist_params {
    uint64_t length;
    int attention_factor;
    uint32_t query_rows;          /* 0: every row */
    rl_rows_scheme sampling;
    exp_attn_mask mask;
} dist_params;

static rl_status dist_params_of(const exp_run *run, dist_params *p, rl_error *err)
{
    exp_value v[P_COUNT];
    rl_status st = exp_params_get("distortion", params, P_COUNT, run, v, err);
    if (st)
        return st;
    p->length = v[P_LENGTH].num ? (uint64_t)v[P_LENGTH].num : run->model.train_len;
    p->attention_factor = v[P_ATTENTION_FACTOR].num != 0;
    p->query_rows = (uint32_t)v[P_QROWS].num;
    if (rl_rows_scheme_parse(v[P_QSAMPLING].str, &p->sampling))
        return rl_fail_key(err, RL_ERR_ARG, "query_sampling",
                           "query_sampling '%s': one of %s", v[P_QSAMPLING].str,
                           RL_ROWS_CHOICES);
    st = exp_attn_mask_get("distortion", v, EXP_ATTN_MASK_KEYS,
                           run->model.train_len, &p->mask, err);
    if (!st && attn_remap_defs(&p->mask.remap) == ATTN_REMAP_DEFS_CHUNK)
        return rl_fail_key(err, RL_ERR_ARG, "attn_remap",
                           "distortion: attn_remap %s is not supported (its three definitions "
                           "leave no room for the exact one its KL pass compares with)",
                           attn_remap_name(p->mask.remap.method));
    if (!st && p->mask.temp)
        return rl_fail_key(err, RL_ERR_ARG, "attn_temperature",
                           "distortion: attn_temperature is not supported (the engine "
                           "scales definition a only; its KL pass is paired)");
    if (!st && p->mask.learned_sink)
        return rl_fail_key(err, RL_ERR_ARG, "attn_learned_sink",
                           "distortion: attn_learned_sink is not supported (its KL "
                           "pass is paired; the engine has no sink in paired mode)");
    return st;
}

/* The plain RoPE twin of a run encoding: for family rope the same base,
 * rotary dims, layout and precision; for a family built on the rotation
 * (xpos) its declared twin (pe_rope_twin). */
static rl_status plain_rope(const exp_run *run, uint64_t T, const pe_encoding *a, pe_encoding **b,
                            rl_error *err)
{
    const rope_freqs *f = pe_rope_freqs(a);
    json_t *p = f ? json_pack("{s:f, s:i, s:s, s:s}", "rope_theta", f->base, "rotary_dim",
                              (json_int_t)f->rotary_dim, "layout",
                              rope_layout_name(f->layout),
                              "precision", rope_precision_name(f->precision))
                  : pe_rope_twin(a);
    if (!p)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    pe_shape shape = {.head_dim = run->model.head_dim, .heads = run->model.heads,
                      .kv_heads = run->model.kv_heads, .seed = run->seed,
                      .max_positions = T};
    rl_status st = pe_encoding_create("rope", p, &shape, b, err);
    json_decref(p);
    if (st) {
        rl_error_prefix(err, "distortion: plain RoPE twin of '%s'", run->encoding_name);
        rl_error_set_key(err, NULL); /* a key of the twin, not of the kind's params */
    }
    return st;
}

static rl_status dist_encodings(const exp_run *run, uint64_t T, pe_encoding **a, pe_encoding **b,
                                rl_error *err)
{
    *a = *b = NULL;
    rl_status st = exp_encoding_for_pass(run, T, 1, a, err); /* causal passes */
    if (st)
        return st;
    json_t *twin = pe_rope_twin(*a);
    if (!pe_rope_freqs(*a) && !twin) {
        st = rl_fail(err, RL_ERR_ARG,
                     "encoding '%s': distortion compares a RoPE scaling with plain RoPE and "
                     "needs a RoPE-family encoding (type rope or a scaling name such as yarn, "
                     "or one built on the rotation such as xpos), not '%s'",
                     run->encoding_name, run->encoding_type);
    } else {
        st = plain_rope(run, T, *a, b, err);
    }
    json_decref(twin);
    if (st) {
        pe_encoding_destroy(*a);
        *a = NULL;
    }
    return st;
}

/* attn_remap in distortion: pass 1 is the remapped encoding paired with
 * its own exact-position logits (ATTN_PAIRED with attn_desc.remap_window:
 * the engine's definition b is definition a without the selection, so no
 * third Q/K pair is needed). That equals "remapped vs the unscaled model"
 * only when the encoding is plain RoPE, the setting of Self-Extend and
 * ReRoPE; a scaled encoding would need a third definition (its plain twin)
 * and is refused. */
static rl_status remap_fits(const dist_params *p, const pe_encoding *a, rl_error *err)
{
    if (p->mask.remap.method == ATTN_REMAP_NONE)
        return RL_OK;
    const rope_freqs *f = pe_rope_freqs(a);
    if (!f || f->rope_type != ROPE_TYPE_DEFAULT)
        return rl_fail_key(err, RL_ERR_ARG, "attn_remap",
                           "distortion: attn_remap %s compares the remapped attention with plain "
                           "RoPE's and needs a plain RoPE encoding (rope_type default), not '%s'",
                           attn_remap_name(p->mask.remap.method),
                           f ? rope_type_name(f->rope_type) : pe_encoding_family(a)->name);
    return RL_OK;
}

static rl_status dist_check(const exp_run *run, rl_error *err)
{
    dist_params p;
    rl_status st = dist_params_of(run, &p, err);
    if (st)
        return st;
    if (p.length < 1)
        return rl_fail_key(err, RL_ERR_ARG, "length", "length: 0 and the model has no train_len");
    if ((st = exp_query_rows_check("distortion", p.query_rows, p.sampling, p.length, err)) ||
        (st = exp_attn_check(run, 1, p.length, EXP_PASS_CAUSAL, err)))
        return st;
    pe_encoding *a, *b;
    st = dist_encodings(run, p.length, &a, &b, err);
    if (!st)
        st = remap_fits(&p, a, err);
    if (!st)
        st = exp_attn_remap_check(run, p.length, &p.mask.remap, err);
    pe_encoding_destroy(a);
    pe_encoding_destroy(b);
    return st;
}

static uint64_t dist_bytes(const exp_run *run)
{
    dist_params p;
    rl_error err;
    if (dist_params_of(run, &p, &err))
        return 0; /* refused by dist_check before any estimate is used */
    uint64_t T = p.length;
    uint64_t row = (uint64_t)(run->model.heads + run->model.kv_heads) * run->model.head_dim;
    uint64_t nb = attn_n_buckets(T);
    return T * row * (4 + 8 + 24 + 8) + T * run->model.heads * (RL_ATTN_NSTAT + 2 * nb) * 4;
}

/* The tables and the means of a sampled pass (slot r holds token
 * pl->rows[r]): every mean the stratified estimate over its tokens with its
 * 95 % interval (rl_rows_estimate; the sampling unit is the query token, its
 * heads averaged), each table row with the rows it rests on; position
 * groups the sample does not estimate are left out. out: kl mean, lo, hi,
 * the largest KL of the computed rows, the farthest bucket's masses. */
static rl_status dist_sampled(exp_sink *sink, const rl_rows_plan *pl, const float *stats,
                              const float *bk_a, const float *bk_b, uint32_t H, uint32_t nb,
                              uint64_t T, double out[6], rl_error *err)
{
    uint32_t n = pl->n_rows;
    double *y = malloc(3 * (size_t)n * sizeof *y);
    if (!y)
        return rl_fail(err, RL_ERR_NOMEM, "distortion: out of host memory");
    double *ya = y + n, *yb = y + 2 * (size_t)n, kl_max = 0;
    for (uint32_t r = 0; r < n; r++) {
        double m = 0;
        for (uint32_t h = 0; h < H; h++) {
            double v = stats[((uint64_t)r * H + h) * RL_ATTN_NSTAT + RL_ATTN_S_KL];
            m += v, kl_max = fmax(kl_max, v);
        }
        y[r] = m / H;
    }
    const char *kcols[] = {"query_keys_tokens", "kl_nats", "kl_nats_lo95", "kl_nats_hi95",
                           "query_rows"};
    rl_status st = exp_sink_table(sink, "kl_position", 5, kcols, err);
    for (uint64_t g = 1; g <= T && !st; g *= 2) {
        uint64_t t0 = g - 1, t1 = g * 2 - 1 < T ? g * 2 - 1 : T;
        rl_estimate e;
        rl_rows_estimate(pl, y, t0, t1, &e);
        if (isnan(e.mean))
            continue; /* not estimated by this sample */
        double row[5] = {0.5 * (double)(t0 + 1 + t1), e.mean, e.lo, e.hi, (double)e.n};
        st = exp_sink_row(sink, row, err);
    }
    if (!st)
        st = exp_sink_end_table(sink, err);
    rl_estimate e;
    rl_rows_estimate(pl, y, 0, T, &e);
    out[0] = e.mean, out[1] = e.lo, out[2] = e.hi, out[3] = kl_max;
    const char *bcols[] = {"distance_tokens",      "mass_scaled",     "mass_scaled_lo95",
                           "mass_scaled_hi95",     "mass_rope",       "mass_rope_lo95",
                           "mass_rope_hi95",       "mass_difference", "mass_difference_lo95",
                           "mass_difference_hi95"};
    if (!st)
        st = exp_sink_table(sink, "mass_buckets", 10, bcols, err);
    for (uint32_t bi = 0; bi < nb && !st; bi++) {
        for (uint32_t r = 0; r < n; r++) {
            double ma = 0, mb = 0;
            for (uint32_t h = 0; h < H; h++) {
                uint64_t i = (uint64_t)r * H + h;
                ma += bk_a[i * nb + bi], mb += bk_b[i * nb + bi];
            }
            ya[r] = ma / H, yb[r] = mb / H, y[r] = (ma - mb) / H;
        }
        rl_estimate ea, eb, ed;
        rl_rows_estimate(pl, ya, 0, T, &ea);
        rl_rows_estimate(pl, yb, 0, T, &eb);
        rl_rows_estimate(pl, y, 0, T, &ed);
        if (bi + 1 == nb)
            out[4] = ea.mean, out[5] = eb.mean;
        double row[10] = {bi ? ldexp(1.0, (int)bi - 1) : 0.0, ea.mean, ea.lo, ea.hi, eb.mean,
                          eb.lo, eb.hi, ed.mean, ed.lo, ed.hi};
        st = exp_sink_row(sink, row, err);
    }
    if (!st)
        st = exp_sink_end_table(sink, err);
    free(y);
    return st;
}

static rl_status dist_run(const exp_run *run, exp_ctx *ctx, exp_sink *sink, rl_error *err)
{
    if (!ctx->dev)
        return rl_fail(err, RL_ERR_ARG, "distortion: needs a device");
    dist_params p;
    rl_status st = dist_params_of(run, &p, err);
    if (st)
        return st;
    uint64_t T = p.length;
    /* query_rows S < T: S rows drawn by query_sampling, the same in both
     * passes (a seed of the run's and the length) */
    rl_rows_plan plan = {0};
    int smp = p.query_rows && p.query_rows < T;
    if (smp && (st = rl_rows_plan_make(p.sampling, T, p.query_rows,
                                       run->seed ^ (T * 0x9e3779b97f4a7c15ull), &plan, err)))
        return st;
    if ((st = exp_attn_limits(ctx->dev, run, T, smp ? plan.n_rows : 0, ATTN_BUCKETS | ATTN_PAIRED,
                              err))) {
        rl_rows_plan_free(&plan);
        return st;
    }
    char note[96] = "";
    if (smp)
        snprintf(note, sizeof note, " (%u of %llu query rows, %s)", plan.n_rows,
                 (unsigned long long)T, rl_rows_scheme_name(p.sampling));
    uint32_t H = run->model.heads, KV = run->model.kv_heads, D = run->model.head_dim;
    uint32_t nb = attn_n_buckets(T);
    pe_encoding *a = NULL, *b = NULL;
    attn_engine own, *eng = NULL;
    int have_eng = 0, pass = 1;
    float *q = malloc(T * H * D * sizeof *q), *k = malloc(T * KV * D * sizeof *k);
    float *stats = malloc(T * H * RL_ATTN_NSTAT * sizeof *stats);
    float *bk_a = malloc(T * H * nb * sizeof *bk_a), *bk_b = malloc(T * H * nb * sizeof *bk_b);
    if (!q || !k || !stats || !bk_a || !bk_b) {
        st = rl_fail(err, RL_ERR_NOMEM, "distortion: out of host memory for %llu tokens",
                     (unsigned long long)T);
        goto done;
    }
    if ((st = dist_encodings(run, T, &a, &b, err)) || (st = remap_fits(&p, a, err)) ||
        (st = run->data(run->data_user, 'q', T, q, err)) ||
        (st = run->data(run->data_user, 'k', T, k, err)) ||
        (st = exp_attn_engine(ctx, &own, &eng, &have_eng, err)))
        goto done;
    int no_af = !p.attention_factor;
    exp_attn_result r;
    /* Pass 1: scaled (a) paired with plain RoPE (b): KL and a's masses.
     * With attn_remap: the remapped plain RoPE paired with its exact
     * positions (remap_fits). */
    int remap = p.mask.remap.method != ATTN_REMAP_NONE;
    exp_attn_io io = {.tokens = T, .q = q, .k = k, .causal = 1, .mask = p.mask,
                      .flags = ATTN_BUCKETS | (remap ? ATTN_PAIRED : 0),
                      .no_attention_factor = no_af, .paired = remap ? NULL : b,
                      .rows = smp ? plan.rows : NULL, .n_rows = smp ? plan.n_rows : 0};
    exp_attn_mask mask_b = p.mask;
    mask_b.remap.method = ATTN_REMAP_NONE; /* plain RoPE at the exact positions */
    exp_attn_io io_b = {.tokens = T, .q = q, .k = k, .causal = 1, .mask = mask_b,
                        .flags = ATTN_BUCKETS, .rows = io.rows, .n_rows = io.n_rows};
    /* the paired and the plain kernel: two pipelines, compiled together */
    const pe_encoding *pe[2] = {a, b};
    const exp_attn_io pio[2] = {io, io_b};
    if ((st = exp_attn_prepare(eng, 2, pe, pio, err)))
        goto done;
    attn_outputs out = {.stats = stats, .buckets = bk_a};
    if ((st = exp_attn_run(ctx->dev, eng, a, &io, &out, &r, err)))
        goto done;
    char label[160];
    snprintf(label, sizeof label, "%s%s", remap ? "remapped vs plain RoPE (paired)"
                                                : "scaled vs plain RoPE (paired)", note);
    pass &= exp_attn_record_stats(sink, label, &r);
    double scale_a = r.scale, scale_b = r.scale_b;
    /* The engine's bucket count: 1 + floor(log2(T - 1)) for the largest
     * distance T - 1 (nb above is an upper bound for the allocation). */
    nb = r.attn.n_buckets;
    /* Pass 2: plain RoPE alone: its masses. */
    attn_outputs out_b = {.buckets = bk_b};
    if ((st = exp_attn_run(ctx->dev, eng, b, &io_b, &out_b, &r, err)))
        goto done;
    snprintf(label, sizeof label, "plain RoPE%s", note);
    pass &= exp_attn_record_stats(sink, label, &r);
    assert(r.attn.n_buckets == nb); /* same T, same count */
    const rope_freqs *f = pe_rope_freqs(a);
    double af = f ? f->attention_factor : 1.0; /* a twin-declaring family has none */
    if (smp) {
        double o[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
        if ((st = dist_sampled(sink, &plan, stats, bk_a, bk_b, H, nb, T, o, err)))
            goto done;
        exp_sink_metric(sink, "kl_mean", o[0]);
        exp_sink_metric(sink, "kl_mean_lo95", o[1]);
        exp_sink_metric(sink, "kl_mean_hi95", o[2]);
        exp_sink_metric(sink, "kl_max", o[3]);
        exp_sink_metric(sink, "query_rows", (double)plan.n_rows);
        exp_sink_metric(sink, "attention_factor", no_af ? 1.0 : af);
        exp_sink_metric(sink, "logit_scale_ratio", scale_a * af * af / scale_b);
        exp_sink_metric(sink, "mass_farthest_bucket_scaled", o[4]);
        exp_sink_metric(sink, "mass_farthest_bucket_rope", o[5]);
        goto verdict;
    }

    /* KL against query position, rows grouped by key count in [2^g, 2^(g+1)). */
    const char *kcols[] = {"query_keys_tokens", "kl_nats"};
    if ((st = exp_sink_table(sink, "kl_position", 2, kcols, err)))
        goto done;
    double kl_sum = 0, kl_max = 0;
    for (uint64_t g = 1; g <= T && !st; g *= 2) {
        uint64_t t0 = g - 1, t1 = g * 2 - 1 < T ? g * 2 - 1 : T;
        double keys = 0, kl = 0;
        for (uint64_t t = t0; t < t1; t++) {
            keys += (double)(t + 1);
            for (uint32_t h = 0; h < H; h++) {
                double v = stats[(t * H + h) * RL_ATTN_NSTAT + RL_ATTN_S_KL];
                kl += v, kl_sum += v, kl_max = fmax(kl_max, v);
            }
        }
        double n = (double)(t1 - t0);
        double row[2] = {keys / n, kl / (n * H)};
        st = exp_sink_row(sink, row, err);
    }
    if (st || (st = exp_sink_end_table(sink, err)))
        goto done;

    /* Mass per distance bucket, averaged over query rows and heads; x is
     * the bucket's smallest distance (0, 1, 2, 4, ...). */
    const char *bcols[] = {"distance_tokens", "mass_scaled", "mass_rope", "mass_difference"};
    if ((st = exp_sink_table(sink, "mass_buckets", 4, bcols, err)))
        goto done;
    double far_a = 0, far_b = 0;
    for (uint32_t bi = 0; bi < nb && !st; bi++) {
        double ma = 0, mb = 0;
        for (uint64_t i = 0; i < T * H; i++)
            ma += bk_a[i * nb + bi], mb += bk_b[i * nb + bi];
        ma /= (double)(T * H), mb /= (double)(T * H);
        if (bi + 1 == nb)
            far_a = ma, far_b = mb;
        double row[4] = {bi ? ldexp(1.0, (int)bi - 1) : 0.0, ma, mb, ma - mb};
        st = exp_sink_row(sink, row, err);
    }
    if (st || (st = exp_sink_end_table(sink, err)))
        goto done;
    exp_sink_metric(sink, "kl_mean", kl_sum / (double)(T * H));
    exp_sink_metric(sink, "kl_max", kl_max);
    exp_sink_metric(sink, "attention_factor", no_af ? 1.0 : af);
    /* Effective logit scales: the rotation of a carries af on cos and sin
     * (af^2 on the logits); plain RoPE's af is 1. */
    exp_sink_metric(sink, "logit_scale_ratio",
                    scale_a * af * af / scale_b);
    exp_sink_metric(sink, "mass_farthest_bucket_scaled", far_a);
    exp_sink_metric(sink, "mass_farthest_bucket_rope", far_b);
verdict:
    if (!pass)
        st = rl_fail(err, RL_ERR_MISMATCH, "distortion: a verification exceeded its tolerance "
                                           "(see the verification records)");
done:
    if (have_eng)
        attn_engine_destroy(&own);
    pe_encoding_destroy(a);
    pe_encoding_destroy(b);
    free(q), free(k), free(stats), free(bk_a), free(bk_b);
    rl_rows_plan_free(&plan);
    return st;
}

/* Every metric and table column this kind emits: title, unit, how it is drawn. */
static const exp_metric metrics[] = {
    {"kl_position.query_keys_tokens", "keys a query sees",
     "tokens", RL_PLOT_LOGX | RL_PLOT_TRAIN},
    {"kl_position.kl_nats", "KL(scaled || RoPE) per query", "nats", 0},
    {"kl_position.kl_nats_lo95", "KL per query, 95 % low (sampled rows)", "nats", RL_PLOT_CI},
    {"kl_position.kl_nats_hi95", "KL per query, 95 % high (sampled rows)", "nats", RL_PLOT_CI},
    {"kl_position.query_rows", "sampled query rows in the position group", "rows",
     RL_PLOT_HIDE},
    {"mass_buckets.distance_tokens", "distance bucket (smallest distance)", "tokens", 0},
    {"mass_buckets.mass_scaled", "attention mass, scaled", "", RL_PLOT_FRACTION},
    {"mass_buckets.mass_rope", "attention mass, plain RoPE", "", RL_PLOT_FRACTION},
    {"mass_buckets.mass_difference", "attention mass, scaled - RoPE", "", 0},
    {"mass_buckets.mass_scaled_lo95", "mass, scaled, 95 % low", "", RL_PLOT_CI},
    {"mass_buckets.mass_scaled_hi95", "mass, scaled, 95 % high", "", RL_PLOT_CI},
    {"mass_buckets.mass_rope_lo95", "mass, plain RoPE, 95 % low", "", RL_PLOT_CI},
    {"mass_buckets.mass_rope_hi95", "mass, plain RoPE, 95 % high", "", RL_PLOT_CI},
    {"mass_buckets.mass_difference_lo95", "mass difference, 95 % low", "", RL_PLOT_CI},
    {"mass_buckets.mass_difference_hi95", "mass difference, 95 % high", "", RL_PLOT_CI},
    {"kl_mean", "mean KL per query", "nats", 0},
    {"kl_mean_lo95", "mean KL per query, 95 % low (sampled rows)", "nats", RL_PLOT_CI},
    {"kl_mean_hi95", "mean KL per query, 95 % high (sampled rows)", "nats", RL_PLOT_CI},
    {"kl_max", "max KL over the computed queries", "nats", 0},
    {"query_rows", "query rows computed (sampled; absent: every row)", "rows", 0},
    {"attention_factor", "attention factor", "", 0},
    {"logit_scale_ratio", "logit scale ratio (scaled / RoPE)", "", 0},
    {"mass_farthest_bucket_scaled", "mass in the farthest bucket, scaled", "", 0},
    {"mass_farthest_bucket_rope", "mass in the farthest bucket, RoPE", "", 0},
};

/* Rows of each tensor the run reads: length. */
static uint64_t dist_rows(const exp_run *run)
{
    dist_params p;
    rl_error err = {0};
    return dist_params_of(run, &p, &err) ? 0 : (uint64_t)p.length;
}

const exp_kind exp_kind_distortion = {
    .name = "distortion",
    .about = "KL divergence of a RoPE scaling's attention from plain RoPE's within the original "
             "length, and attention mass per distance bucket",
    .params = params,
    .n_params = sizeof params / sizeof params[0],
    .uses_data = 1,
    .needs_gpu = 1,
    .check = dist_check,
    .estimate_bytes = dist_bytes,
    .run = dist_run,
    .metrics = metrics,
    .n_metrics = sizeof metrics / sizeof metrics[0],
    .data_rows = dist_rows,
};
