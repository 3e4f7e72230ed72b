/* exp_coverage.c — which rotation angles a model saw in training.
 *
 * Pair j of RoPE rotates by p * theta_j. The pre-trained model (the
 * unscaled frequencies theta0_j = base^(-2j/rotary_dim), recovered from the
 * registry's rope_freqs as inv_freq[j] * scale[j]) saw relative distances
 * positions in [0, train_len) (Chen et al. 2023 write the pre-trained range
 * as the half-open [0, L)), i.e. angles in
 *     [0, phi_train_j),  phi_train_j = theta0_j * train_len.
 * At the evaluation length the (possibly scaled) encoding produces angles in
 *     [0, phi_eval_j),   phi_eval_j = theta_j * eval_len,
 * so Position Interpolation with factor eval_len / train_len maps the range
 * exactly onto the trained one (theta_j = theta0_j / factor).
 * A pair whose training angles covered a whole turn (phi_train_j >= 2 pi,
 * i.e. wavelength 2 pi / theta0_j <= train_len) has seen every angle
 * modulo 2 pi; any other pair is pushed out of distribution when
 * phi_eval_j > phi_train_j (1 + 1e-12) (the 1e-12 absorbs the rounding of
 * theta_j = theta0_j / factor in double for factors that are not powers of
 * two) (Chen et al. 2023 §2.3 on extrapolated angles; Liu
 * et al. 2023, "Scaling Laws of RoPE-based Extrapolation", arXiv:2310.05209,
 * §3: dimensions whose period exceeds the training length are the ones that
 * fail to extrapolate; Peng et al. 2023 (YaRN) §3.3 use the same wavelength
 * test). The critical dimension of Liu et al. is
 *     d_extra = 2 ceil((d/2) log_base(train_len / (2 pi)))
 * (d = rotary_dim, base = the configured rope_theta): the number of
 * dimensions whose period fits into train_len. It is reported from the
 * formula and counted from the unscaled frequencies (2 x the pairs with
 * 2 pi / theta0_j <= train_len); for plain RoPE the two agree by algebra (both
 * count the wavelengths that fit in train_len): an implementation check, not
 * evidence about the paper.
 * Liu et al.'s extrapolation bound (Theorem 3, eq. 16b, larger bases:
 * pre-trained with base 10000 at T_train, fine-tuned with base beta) is
 *     T_extra = 2 pi beta^(d_extra / d),
 * the wavelength under the new base of the first pair that did not turn
 * fully in pre-training. This kind reports it from the frequencies,
 * 2 pi / theta_jc with jc = critical_dim_counted / 2 (t_extra_tokens), next
 * to its own break: the shortest evaluation length at which any pair leaves
 * its trained angle range, min_j range_j / theta_j over the pairs that never
 * turned fully (ood_from_tokens). The parameter pretrain_base b0 models
 * Liu's setting: theta0_j = b0^(-2j/rotary_dim) are the pre-trained
 * frequencies, the run's frequencies theta_j those of fine-tuning at
 * train_len (T_tune = T_train), so a pair's trained range is
 * max(theta0_j, theta_j) train_len and it turned fully when that is >= 2 pi;
 * the formula's log base is b0. For plain RoPE with beta >= b0 the break is
 * train_len (beta/b0)^(d_extra/d) and T_extra / break = 2 pi / (theta0_jc
 * train_len) in (1, b0^(2/d)]: Liu's bound counts a full turn for the
 * critical pair, which in pre-training saw only theta0_jc train_len < 2 pi.
 * The table also gives each pair's scale theta_j / theta0_j (1 unscaled,
 * 1/factor for Position Interpolation), the per-pair view of a scaling.
 * eval_len 0 takes the evaluation length from the encoding's own seq_len
 * (the length a dynamic or longrope scaling is set for), so one sweep of
 * {factor, seq_len} pairs evaluates each scaling at its own length.
 * CPU only, double precision. */
#include <math.h>
#include <stdlib.h>

#include "exp/exp.h"

#define COV_PI 3.14159265358979323846

enum { P_EVAL_LEN, P_PRETRAIN_BASE, P_COUNT };
static const rl_param params[P_COUNT] = {
    [P_EVAL_LEN] = {.key = "eval_len", .type = RL_P_INT, .min = 0, .max = 2147483647.0,
                    .def = "8192",
                    .help = "evaluation sequence length (also the seq_len of dynamic/longrope "
                            "scalings unless the encoding sets seq_len); 0: the encoding's "
                            "seq_len"},
    [P_PRETRAIN_BASE] = {.key = "pretrain_base", .type = RL_P_NUM, .min = 0, .max = 1e300,
                         .def = "0",
                         .help = "0: the unscaled frequencies are the trained ones; > 1: "
                                 "pre-trained with this base, fine-tuned with the run's "
                                 "frequencies, both at train_len (Liu et al. 2023)"},
};

/* The kind's typed parameters, defaults applied (exp_params_get). */
typedef struct cov_params {
    uint64_t eval_len;
    double pretrain_base;
} cov_params;

static rl_status cov_params_of(const exp_run *run, cov_params *p, rl_error *err)
{
    exp_value v[P_COUNT];
    rl_status st = exp_params_get("coverage", params, P_COUNT, run, v, err);
    if (!st) {
        p->eval_len = (uint64_t)v[P_EVAL_LEN].num;
        p->pretrain_base = v[P_PRETRAIN_BASE].num;
        if (p->pretrain_base != 0 && !(p->pretrain_base > 1))
            st = rl_fail_key(err, RL_ERR_ARG, "pretrain_base",
                             "coverage: pretrain_base %g: 0 (off) or a base > 1", p->pretrain_base);
    }
    return st;
}

/* The run's parameters and frequencies at its evaluation length *eval:
 * eval_len, or with eval_len 0 the encoding's seq_len (refused when it sets
 * none). */
static rl_status cov_freqs(const exp_run *run, cov_params *p, rope_freqs *f, uint64_t *eval,
                           rl_error *err)
{
    rl_status st = cov_params_of(run, p, err);
    if (st || (st = exp_rope_freqs(run, p->eval_len, f, err)))
        return st;
    *eval = p->eval_len ? p->eval_len : f->seq_len;
    if (!*eval)
        return rl_fail_key(err, RL_ERR_ARG, "eval_len",
                           "coverage: eval_len 0 takes the evaluation length from the encoding's "
                           "seq_len, but encoding '%s' sets none", run->encoding_name);
    return RL_OK;
}

static rl_status cov_check(const exp_run *run, rl_error *err)
{
    rope_freqs f;
    cov_params p;
    uint64_t eval;
    return cov_freqs(run, &p, &f, &eval, err);
}

static uint64_t cov_bytes(const exp_run *run)
{
    return (uint64_t)run->model.head_dim * 8 * sizeof(double);
}

static rl_status cov_run(const exp_run *run, exp_ctx *ctx, exp_sink *sink, rl_error *err)
{
    (void)ctx;
    rope_freqs f;
    cov_params p;
    uint64_t eval;
    rl_status st = cov_freqs(run, &p, &f, &eval, err);
    if (st)
        return st;
    double L = run->model.train_len, E = (double)eval, two_pi = 2.0 * COV_PI;
    /* Column names are identifiers (exp_sink); units are suffixes. */
    const char *cols[] = {"rotary_pair_j",         "wavelength_tokens",
                          "unscaled_wavelength_tokens", "train_len_tokens",
                          "angle_range_at_eval_len_rad", "angle_range_in_training_rad",
                          "out_of_distribution", "frequency_ratio"};
    if ((st = exp_sink_table(sink, "coverage", 8, cols, err)))
        return st;
    uint32_t ood = 0, counted = 0;
    double first_ood = -1, ood_from = INFINITY, ood_from_pair = -1;
    uint32_t jc = f.n_pairs; /* the first pair whose (pre-)trained wavelength exceeds L */
    double b0 = p.pretrain_base > 0 ? p.pretrain_base : f.base;
    for (uint32_t j = 0; j < f.n_pairs && !st; j++) {
        double th = f.inv_freq[j], th0;
        if (p.pretrain_base > 0)
            th0 = pow(p.pretrain_base, -2.0 * j / f.rotary_dim);
        else
            th0 = f.scale[j] > 0 ? f.inv_freq[j] * f.scale[j]
                                 : pow(f.base, -2.0 * j / f.rotary_dim);
        double lam = th > 0 ? two_pi / th : INFINITY, lam0 = th0 > 0 ? two_pi / th0 : INFINITY;
        /* trained range: pre-training's, and with pretrain_base also fine-tuning's */
        double pe = th * E, pt = (p.pretrain_base > 0 ? fmax(th0, th) : th0) * L;
        int full_turn = pt >= two_pi;
        int out = !full_turn && pe > pt * (1.0 + 1e-12);
        ood += (uint32_t)out;
        if (out && first_ood < 0)
            first_ood = j;
        /* the longest evaluation length that keeps pair j inside its range */
        if (!full_turn && th > 0 && pt / th < ood_from)
            ood_from = pt / th, ood_from_pair = j;
        counted += lam0 <= L;
        if (lam0 > L && jc == f.n_pairs)
            jc = j;
        double row[8] = {j, lam, lam0, L, pe, pt, out, th0 > 0 ? th / th0 : 0};
        st = exp_sink_row(sink, row, err);
    }
    if (st)
        return st;
    /* Liu et al.'s T_extra: the run's wavelength of the first pair that did
     * not turn fully in (pre-)training, pair jc (-1: every pair did). */
    double t_extra = jc < f.n_pairs && f.inv_freq[jc] > 0 ? two_pi / f.inv_freq[jc] : -1;
    double lg = log(L / two_pi) / log(b0);
    double formula = 2.0 * ceil((f.rotary_dim / 2.0) * lg);
    formula = fmin(fmax(formula, 0.0), f.rotary_dim);
    exp_sink_metric(sink, "ood_pairs", ood);
    exp_sink_metric(sink, "ood_fraction", f.n_pairs ? (double)ood / f.n_pairs : 0.0);
    exp_sink_metric(sink, "first_ood_pair", first_ood);
    exp_sink_metric(sink, "critical_dim_formula", formula);
    exp_sink_metric(sink, "critical_dim_counted", 2.0 * counted);
    exp_sink_metric(sink, "eval_over_train", E / L);
    exp_sink_metric(sink, "t_extra_tokens", t_extra);
    exp_sink_metric(sink, "ood_from_tokens", isfinite(ood_from) ? ood_from : -1);
    exp_sink_metric(sink, "ood_from_pair", ood_from_pair);
    exp_sink_metric(sink, "t_extra_over_ood_from",
                    t_extra > 0 && isfinite(ood_from) ? t_extra / ood_from : -1);
    exp_sink_metric(sink, "eval_len_tokens", E);
    /* The formula's ceil and the count differ only when (d/2) log_base(L/2pi)
     * is an integer (a pair whose wavelength is exactly train_len) or when
     * the configured base is not the one of the unscaled frequencies
     * (proportional's exponent over head_dim): reported, not hidden. */
    int pass = formula == 2.0 * counted;
    exp_sink_verify(sink, "critical dimension: Liu et al. formula vs pairs counted "
                    "(an identity for plain RoPE)",
                    fabs(formula - 2.0 * counted), 0, pass,
                    "2 ceil((d/2) log_base(train_len/2pi)) vs 2 #{j: 2pi/theta0_j <= train_len}");
    if (!pass)
        return rl_fail(err, RL_ERR_MISMATCH,
                       "coverage: critical dimension %.0f by the formula but %u dimensions "
                       "counted with wavelength <= train_len", formula, 2 * counted);
    return RL_OK;
}

/* Every metric and table column this kind emits: title, unit, how it is drawn. */
static const exp_metric metrics[] = {
    {"coverage.rotary_pair_j", "rotary pair index j", "", 0},
    {"coverage.wavelength_tokens", "wavelength 2π/θ_j", "tokens", RL_PLOT_LOGY},
    {"coverage.unscaled_wavelength_tokens", "wavelength before the scaling",
     "tokens", RL_PLOT_LOGY},
    {"coverage.train_len_tokens", "training length", "tokens", RL_PLOT_REF},
    {"coverage.angle_range_at_eval_len_rad", "largest angle at eval_len", "rad", RL_PLOT_LOGY},
    {"coverage.angle_range_in_training_rad", "largest angle within train_len",
     "rad", RL_PLOT_LOGY},
    {"coverage.out_of_distribution", "pair leaves its trained angle range (1: yes)", "", 0},
    {"coverage.frequency_ratio", "scale θ'_j/θ_j (scaled / unscaled frequency)", "",
     RL_PLOT_LOGY},
    {"ood_pairs", "pairs out of their trained angle range", "pairs", 0},
    {"ood_fraction", "fraction of pairs out of range", "", 0},
    {"first_ood_pair", "first out-of-range pair (-1: none)", "", 0},
    {"critical_dim_formula", "critical dimension, formula", "dims", 0},
    {"critical_dim_counted", "critical dimension, counted (= formula by algebra)", "dims", 0},
    {"eval_over_train", "eval_len / train_len", "", 0},
    {"t_extra_tokens", "Liu et al.'s T_extra: wavelength of the first pair not turned fully "
     "in training (-1: none)", "tokens", 0},
    {"ood_from_tokens", "longest length with every pair inside its trained range (-1: any)",
     "tokens", 0},
    {"ood_from_pair", "the pair that leaves its range first (-1: none)", "", 0},
    {"t_extra_over_ood_from", "T_extra / ood_from_tokens (-1: undefined)", "", 0},
    {"eval_len_tokens", "evaluation length", "tokens", 0},
};

const exp_kind exp_kind_coverage = {
    .name = "coverage",
    .about = "per rotary pair: scale, wavelength and largest angle at eval_len vs training; OOD "
             "pairs",
    .params = params,
    .n_params = sizeof params / sizeof params[0],
    .uses_data = 0,
    .needs_gpu = 0,
    .check = cov_check,
    .estimate_bytes = cov_bytes,
    .run = cov_run,
    .metrics = metrics,
    .n_metrics = sizeof metrics / sizeof metrics[0],
};
