/* The attention engine's error analysis: the tolerance of each verified
 * statistic, derived from the problem and the sampled rows' own numbers,
 * and the verdict through the verification layer (verify/vf.h).
 *
 * Tolerances (u = 2^-24, fp32 unit roundoff; all GPU arithmetic is fp32):
 *
 *  E_s  logit: <q,k> of D products summed in one fp32 chain per key (fused
 *       or separate multiply-add, dimension order; Higham's inner-product
 *       bound gamma_D), then one scale multiply: |err| <= (D + 2) u A with
 *       A = |scale| sum_d |q_d k_d| (max over keys, verify.max_abs_dot). The
 *       bias adds <= 3 u B (B = max |bias|: fp32 slope and product roundings
 *       and the final addition) plus E_b, the bias's own device error beyond
 *       the two roundings of its value that 3 u B holds: attn_bias.bound
 *       (the registry's pe_bias_bound) - (2u + u^2)|bias|, at least 0, max
 *       over the sampled rows' keys (verify.max_bias_err). ALiBi's bound is
 *       exactly those two roundings (E_b = 0), T5's is 0 (a table lookup);
 *       Transformer-XL's fp32 sin/cos of s * w_m grows with the distance s
 *       and is all of E_b (without it XL with u/v/W_R of sigma 0.3 fails
 *       beyond ~4k distance on a device within XL's own bound). fp16 storage adds nothing here: the reference
 *       reads the same half values (exactly converted), and the kernel
 *       accumulates in fp32.
 *  rho  exp: Vulkan bounds exp(x) by (3 + 2|x|) ulp; x = logit - max lies in
 *       [-R, 0] (R = logit range, capped at 104 where fp32 exp underflows):
 *       rho = (3 + 2 min(R, 104)) 2^-23 relative.
 *  eps  relative error of the normaliser l = sum_j exp(s_j - m): each term
 *       off by 2 E_s (its logit and the max) and rho, N_k sequential fp32
 *       additions (N_k u), one rescale exp per key block (<= N_k/4 blocks, 3
 *       ulp each) and log's 2^-21 absolute error:
 *       eps = 2 E_s + rho + N_k u + 3 (N_k/4 + 1) 2^-23 + 2^-21.
 *       A learned sink adds 2 rho + 3 ulp to eps (its fold, see below) and
 *       one term to N_k.
 *  lse      : E_s + eps + 2^-23 (A + B + log N_k + 1)  (absolute; |lse| bound)
 *  max      : E_s                                      (absolute)
 *  entropy  : H = log l - sum_j p_j t_j with |t_j| <= R: (R + 2) eps + 2 E_s
 *  argmax   : the key picked has a true logit within 2 E_s of the true max
 *  p (argmax, target): exp(s - lse): relative E_s + tol_lse + rho + 2^-22
 *  buckets  : a sum of probabilities, absolute tol_p + N_k u
 *  O        : sum_j p_j v_j relative to sum_j p_j |v_j|: tol_p + N_k u + 2^-22
 *  KL       : c / l_a - log l_a + log l_b, c = sum p_a (t_a - t_b), |t_a - t_b|
 *             <= 2R: (2R + 4) eps + 4 E_s
 *  dump     : E_s (relative to max(|logit|, 1), so E_s is also a bound).
 * Window edge under both definitions (v->remap_edge, STRING): the edge
 * key's logit is hi + log(1 + exp(lo - hi)) of its two fp32 logits, each
 * within E_s (A covers both definitions' |q.k|). log(e^x + e^y) has partial
 * derivatives >= 0 summing to 1, so the inputs' errors pass on as at most
 * E_s; the evaluation adds: lo - hi rounded (u x, through exp at most u/e),
 * exp's (3 + 2x) ulp of e^-x (at most 3 2^-23 absolute, x >= 0), 1 + t
 * rounded (2^-24), log on [1, 2] (2^-21 absolute, Vulkan's bound there;
 * its argument's error passes through 1/y <= 1), the final addition
 * (u (|hi| + ln 2) <= u (A + 1); no bias with a remap): E_s grows by
 * 2^-21 + 3 2^-23 + 2^-24 + u/2 (>= u/e) + u (A + 1) for every key, which covers
 * the one key where the fold happens.
 * Cooperative-matrix path (attn_desc.coopmat): E_s = (6 D + 2) u A for the
 * tensor op's sums in any order and grouping, and O adds P's fp16 rounding
 * and the tensor op's sum (attn_cm.c derives both).
 * These are worst-case sums; sampled errors sit far below them, which is why
 * the verdict also gates the NMSE: sum err^2 <= f sum bound^2 per statistic
 * with f = VF_GATE_ATTN_C / (D + 2) (vf.h): every statistic's bound carries
 * E_s, D + 2 roundings at their extreme and of one sign; independent
 * roundings add like a random walk, so the RMS error is about 1/sqrt(D + 2)
 * of the bound and NMSE/NMSE_bound about 1/(D + 2) at most (measured on
 * lavapipe: max_logit, the statistic nearest its bound, up to 0.9/(D + 2)
 * ... see vf.h). A 10x regression multiplies NMSE by 100 and crosses the
 * gate while every element is still inside its bound. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/attn_cm.h"

static const char *const stat_names[ATTN_V_COUNT] = {
    "lse", "max_logit", "entropy", "argmax_gap", "argmax_p", "target_p", "buckets", "out", "kl",
    "dump"};

const char *attn_stat_name(int v)
{
    return v >= 0 && v < ATTN_V_COUNT ? stat_names[v] : "?";
}

int attn_stat_relative(int k)
{
    return k == ATTN_V_ARGMAX_P || k == ATTN_V_TARGET_P || k == ATTN_V_OUT || k == ATTN_V_DUMP;
}

void attn_tolerances(const attn_desc *d, const attn_verify *v, double *tol)
{
    const double u = 0x1p-24;
    double A = v->max_abs_dot, B = v->max_abs_bias;
    double R = v->max_range < 104 ? v->max_range : 104;
    double nk = (double)v->max_keys;
    /* Temperature (v->temp): tau_i rounded to fp32 on the host and one more
     * multiply in the kernel, 2 u of the scaled dot (A includes |tau|). */
    double es = (d->head_dim + 2.0 + (v->temp ? 2.0 : 0.0)) * u * A + 3 * u * B + v->max_bias_err;
    /* Cooperative matrices: the tensor op's sum in any order (attn_cm.c;
     * no bias or temperature there). */
    if (d->coopmat)
        es = attn_cm_logit_err(d->head_dim, A);
    /* The window's edge under both definitions: the fold's own roundings
     * (see above). */
    if (v->remap_edge)
        es += 0x1p-21 + 3 * 0x1p-23 + 0x1p-24 + u / 2 + u * (A + 1);
    double rho = (3 + 2 * R) * 0x1p-23;
    double eps = 2 * es + rho + nk * u + 3 * (nk / 4 + 1) * 0x1p-23 + 0x1p-21;
    /* Learned sink (v->sinks): folded into l once at the end, in the frame
     * m2 = max(m, sink): exp(m - m2) and exp(sink - m2) (rho each, their
     * arguments within the range R, which includes the sink), one multiply,
     * one add, one divide (3 ulp = 3 * 2^-23); N_k counts the sink as a key. */
    if (v->sinks)
        eps += 2 * rho + 3 * 0x1p-23;
    /* |lse| <= max logit + log N_k <= A + B + log N_k (final addition's rounding). */
    tol[ATTN_V_LSE] = es + eps + 0x1p-23 * (A + B + log(nk > 1 ? nk : 1) + 1);
    tol[ATTN_V_MAX] = es;
    tol[ATTN_V_ENTROPY] = (R + 2) * eps + 2 * es;
    tol[ATTN_V_ARGMAX_GAP] = 2 * es;
    double tp = es + tol[ATTN_V_LSE] + rho + 0x1p-22;
    tol[ATTN_V_ARGMAX_P] = tp;
    tol[ATTN_V_TARGET_P] = tp;
    tol[ATTN_V_BUCKETS] = tp + nk * u;
    tol[ATTN_V_OUT] = tp + nk * u + 0x1p-22 + (d->coopmat ? attn_cm_out_extra(v->max_keys) : 0);
    tol[ATTN_V_KL] = (2 * R + 4) * eps + 4 * es;
    tol[ATTN_V_DUMP] = es;
}

double attn_gate_fraction(const attn_desc *d)
{
    return VF_GATE_ATTN_C / (d->head_dim + 2.0);
}

void attn_judge(const attn_desc *d, attn_verify *v, int guard_ok)
{
    attn_tolerances(d, v, v->tol);
    v->gate_fraction = attn_gate_fraction(d);
    memset(&v->verdict, 0, sizeof v->verdict);
    v->verdict.first_bad = VF_NONE;
    snprintf(v->worst, sizeof v->worst, "-");
    double worst = -1;
    for (int k = 0; k < ATTN_V_COUNT; k++) {
        if (!v->checked[k])
            continue;
        vf_stats s;
        vf_acc_judge(&v->acc[k], v->tol[k], v->gate_fraction, &s);
        if (s.worst_ratio >= worst) {
            worst = s.worst_ratio;
            snprintf(v->worst, sizeof v->worst, "%s", attn_stat_name(k));
        }
        vf_merge(&v->verdict, &s);
    }
    vf_set_guard(&v->verdict, guard_ok);
}
