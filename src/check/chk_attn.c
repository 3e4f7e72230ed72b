/* Attention engine's `ropelab check` cases: lengths 1, 2, 63, 64, 65 (around
 * the 64-query workgroup), 1000 and 4097 (odd tail of the key chunks), causal
 * and bidirectional, fp32 and fp16 storage, grouped-query attention, with
 * and with the registry's logit biases (alibi, t5, xl), every statistic at once
 * (entropy, argmax, target, distance buckets, O, paired KL). Sampled rows
 * (32, first and last included, all heads) are compared with the double CPU
 * reference; the tolerances are derived in chk_attn_tolerances. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "check/chk.h"
#include "core/rl_util.h"

/* Tolerances per verified statistic, from the sampled rows' own numbers
 * (u = 2^-24, fp32 unit roundoff; all GPU arithmetic is fp32):
 *
 *  E_s  logit: <q,k> of D products summed in one fp32 chain per key (fused
 *       or separate multiply-add, dimension order; Higham's inner-product
 *       bound gamma_D), then one scale multiply: |err| <= (D + 2) u A with
 *       A = |scale| sum_d |q_d k_d| (max over keys, verify.max_abs_dot). The
 *       bias adds <= 3 u B (B = max |bias|: fp32 slope and product roundings
 *       and the final addition). fp16 storage adds nothing here: the
 *       reference reads the same half values (exactly converted), and the
 *       kernel accumulates in fp32. Operands that are themselves only
 *       within a bound of what the reference reads (an encoding's device
 *       transform kept on the device, attn_ref_operands) move each logit by
 *       at most S = verify.max_operand_shift more, and the device's own dot
 *       product sees |q k| up to A + S: E_s = (D + 2) u (A + S) + 3 u B + S,
 *       and every tolerance below follows from that E_s, with the range R
 *       widened by 2 S (S = 0: exact).
 *  rho  exp: Vulkan bounds exp(x) by (3 + 2|x|) ulp; x = logit - max lies in
 *       [-R, 0] (R = logit range, capped at 104 where fp32 exp underflows):
 *       rho = (3 + 2 min(R, 104)) 2^-23 relative.
 *  eps  relative error of the normaliser l = sum_j exp(s_j - m): each term
 *       off by 2 E_s (its logit and the max) and rho, N_k sequential fp32
 *       additions (N_k u), one rescale exp per key block (<= N_k/4 blocks, 3
 *       ulp each) and log's 2^-21 absolute error:
 *       eps = 2 E_s + rho + N_k u + 3 (N_k/4 + 1) 2^-23 + 2^-21.
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
 * These are worst-case sums; sampled errors sit far below them. */
void chk_attn_tolerances(const attn_desc *d, const attn_verify *v, double *tol)
{
    const double u = 0x1p-24;
    double S = v->max_operand_shift, A = v->max_abs_dot + S, B = v->max_abs_bias;
    double R = v->max_range + 2 * S < 104 ? v->max_range + 2 * S : 104; /* device logits' range */
    double nk = (double)v->max_keys;
    double es = (d->head_dim + 2.0) * u * A + 3 * u * B + S;
    double rho = (3 + 2 * R) * 0x1p-23;
    double eps = 2 * es + rho + nk * u + 3 * (nk / 4 + 1) * 0x1p-23 + 0x1p-21;
    /* |lse| <= max logit + log N_k <= A + B + log N_k (final addition's rounding). */
    tol[ATTN_V_LSE] = es + eps + 0x1p-23 * (A + B + log(nk > 1 ? nk : 1) + 1);
    tol[ATTN_V_MAX] = es;
    tol[ATTN_V_ENTROPY] = (R + 2) * eps + 2 * es;
    tol[ATTN_V_ARGMAX_GAP] = 2 * es;
    double tp = es + tol[ATTN_V_LSE] + rho + 0x1p-22;
    tol[ATTN_V_ARGMAX_P] = tp;
    tol[ATTN_V_TARGET_P] = tp;
    tol[ATTN_V_BUCKETS] = tp + nk * u;
    tol[ATTN_V_OUT] = tp + nk * u + 0x1p-22;
    tol[ATTN_V_KL] = (2 * R + 4) * eps + 4 * es;
    tol[ATTN_V_DUMP] = es;
}

int chk_attn_judge(const attn_desc *d, const attn_verify *v, chk_stats *s, char *worst_name,
                   size_t cap)
{
    double tol[ATTN_V_COUNT];
    chk_attn_tolerances(d, v, tol);
    memset(s, 0, sizeof *s);
    s->n = v->rows;
    s->n_nonfinite = (size_t)v->n_nonfinite;
    snprintf(worst_name, cap, "-");
    for (int k = 0; k < ATTN_V_COUNT; k++) {
        if (!v->checked[k])
            continue;
        /* Relative error where the statistic is judged relatively, else absolute. */
        double e = (k == ATTN_V_ARGMAX_P || k == ATTN_V_TARGET_P || k == ATTN_V_OUT ||
                    k == ATTN_V_DUMP)
                       ? v->max_rel[k]
                       : v->max_abs[k];
        double ratio = e / tol[k];
        if (ratio > 1)
            s->n_over++;
        if (ratio >= s->worst_ratio) {
            s->worst_ratio = ratio;
            s->bound_at_worst = tol[k];
            s->err_at_worst = e;
            s->max_abs = v->max_abs[k];
            s->max_rel = v->max_rel[k];
            snprintf(worst_name, cap, "%s", attn_stat_name(k));
        }
    }
    s->pass = s->n_over == 0 && s->n_nonfinite == 0;
    return s->pass;
}

typedef chk_attn_case attn_case;

/* Everything but O; O (ATTN_OUT) is checked on two cases only because its
 * pipeline takes lavapipe ~10 s to build. */
#define ALL_STATS (ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS | ATTN_PAIRED)

/* Random test problem: q, k, v ~ N(0, 1) (rounded to half for fp16), q_b/k_b
 * a perturbed copy (paired mode: KL of a small distortion), positions
 * consecutive from an offset, random targets. Arrays owned by the caller. */
typedef struct attn_data {
    void *q, *k, *v, *qb, *kb;
    uint32_t *pos, *target;
} attn_data;

static void data_free(attn_data *x)
{
    free(x->q);
    free(x->k);
    free(x->v);
    free(x->qb);
    free(x->kb);
    free(x->pos);
    free(x->target);
}

static int data_make(const attn_case *c, uint64_t seed, attn_data *x)
{
    memset(x, 0, sizeof *x);
    size_t esz = c->fp16 ? 2 : 4;
    size_t nq = (size_t)c->tokens * c->heads * c->head_dim;
    size_t nk = (size_t)c->tokens * c->kv_heads * c->head_dim;
    x->q = malloc(nq * esz);
    x->qb = malloc(nq * esz);
    x->k = malloc(nk * esz);
    x->kb = malloc(nk * esz);
    x->v = malloc(nk * esz);
    x->pos = malloc(c->tokens * sizeof *x->pos);
    x->target = malloc(c->tokens * sizeof *x->target);
    if (!x->q || !x->qb || !x->k || !x->kb || !x->v || !x->pos || !x->target)
        return 0;
    rl_rng rng;
    rl_rng_seed(&rng, seed, "check/attn");
    void *arrs[5] = {x->q, x->qb, x->k, x->kb, x->v};
    size_t ns[5] = {nq, nq, nk, nk, nk};
    for (int a = 0; a < 5; a++)
        for (size_t i = 0; i < ns[a]; i++) {
            /* b = a + 0.1 N(0,1): q_b/k_b follow q/k with a small distortion. */
            float val = (float)rl_rng_normal(&rng);
            if (a == 1 || a == 3) {
                float base = c->fp16 ? attn_f16_to_f32(((uint16_t *)arrs[a - 1])[i])
                                     : ((float *)arrs[a - 1])[i];
                val = base + 0.1f * val;
            }
            if (c->fp16)
                ((uint16_t *)arrs[a])[i] = attn_f32_to_f16(val);
            else
                ((float *)arrs[a])[i] = val;
        }
    for (uint32_t t = 0; t < c->tokens; t++) {
        x->pos[t] = 5 + t;
        x->target[t] = (uint32_t)(rl_rng_u64(&rng) % c->tokens);
    }
    return 1;
}

rl_status chk_attn_run_case(rlvk_device *dev, attn_engine *e, const attn_case *c, uint64_t seed,
                            chk_row *row, rl_error *err)
{
    memset(row, 0, sizeof *row);
    snprintf(row->kernel, sizeof row->kernel, "attn_%s%s", c->bias ? c->bias : "none",
             c->fp16 ? "_f16" : "");
    snprintf(row->shape, sizeof row->shape, "%ux%u/%ux%u %s%s", c->tokens, c->heads, c->kv_heads,
             c->head_dim, c->causal ? "causal" : "bidir",
             (c->flags & ATTN_OUT) ? " O" : "");
    row->guard_ok = 1;
    if (c->fp16 && !dev->feat_storage16) {
        row->skipped = 1;
        snprintf(row->tolerance, sizeof row->tolerance, "fp16 storage unsupported");
        return RL_OK;
    }
    attn_data x;
    size_t nrow = (size_t)c->tokens * c->heads;
    uint32_t nb_max = ATTN_MAX_BUCKETS;
    float *stats = malloc(nrow * RL_ATTN_NSTAT * sizeof *stats);
    float *buckets = malloc(nrow * nb_max * sizeof *buckets);
    float *o = malloc(nrow * c->head_dim * sizeof *o);
    attn_pe_bias pb = {0};
    pe_encoding *enc = NULL;
    rl_status st = RL_OK;
    if (!data_make(c, seed, &x) || !stats || !buckets || !o) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for the attention case");
        goto done;
    }
    if (c->bias) {
        /* The registry's bias with its default parameters (bias cases are
         * fp32, so the raw q/k the reference reads are these floats). */
        pe_shape shape = {.head_dim = c->head_dim, .heads = c->heads, .kv_heads = c->kv_heads,
                          .seed = seed, .max_positions = 5 + c->tokens};
        if ((st = pe_encoding_create(c->bias, NULL, &shape, &enc, err)) ||
            (st = attn_pe_bias_create(dev, enc, x.q, x.k, c->tokens, c->heads, c->kv_heads,
                                      c->head_dim, &pb, err)))
            goto done;
    }
    attn_desc d = {.tokens = c->tokens, .heads = c->heads, .kv_heads = c->kv_heads,
                   .head_dim = c->head_dim, .causal = c->causal, .fp16 = c->fp16,
                   .flags = c->flags, .scale = (float)(1.0 / sqrt(c->head_dim)),
                   .scale_b = (float)(1.25 / sqrt(c->head_dim)),
                   .block_keys = c->block_keys, .chunk_blocks = c->chunk_blocks};
    attn_inputs in = {.q = x.q, .k = x.k, .v = x.v, .q_b = x.qb, .k_b = x.kb, .pos = x.pos,
                      .target = x.target, .bias = c->bias ? &pb.bias : NULL};
    attn_outputs out = {.stats = stats, .buckets = buckets, .out = o};
    attn_result res;
    st = attn_run(e, &d, &in, &out, &res, err);
    if (st == RL_ERR_UNSUPPORTED) {
        row->skipped = 1;
        snprintf(row->tolerance, sizeof row->tolerance, "%.90s", err->msg);
        st = RL_OK;
        goto done;
    }
    if (st)
        goto done;
    row->gpu_ms = res.gpu_ms;
    char worst[32];
    chk_attn_judge(&d, &res.verify, &row->stats, worst, sizeof worst);
    snprintf(row->tolerance, sizeof row->tolerance,
             "attn: per-statistic fp32 bounds (chk_attn.c); worst here: %s", worst);
done:
    if (enc)
        attn_pe_bias_destroy(dev, &pb);
    pe_encoding_destroy(enc);
    data_free(&x);
    free(o);
    free(buckets);
    free(stats);
    return st;
}

static const uint32_t lengths[] = {1, 2, 63, 64, 65, 1000, 4097};

rl_status chk_attn_cases(rlvk_device *dev, const chk_options *opt, chk_report *report,
                         rl_error *err)
{
    attn_engine e;
    rl_status st = attn_engine_create(dev, &e, err);
    if (st)
        return st;
    uint64_t seed = opt->seed ? opt->seed : 1;
    for (size_t li = 0; li < RL_ARRAY_LEN(lengths) && !st; li++) {
        uint32_t n = lengths[li];
        if (opt->quick && n > 1000)
            continue;
        for (int causal = 0; causal < 2 && !st; causal++) {
            /* GQA (4 heads over 2 KV heads), every statistic, fp32 and fp16,
             * no bias; then the registry's biases (one per length, in turn:
             * alibi, t5, xl) with 2 heads over 1 KV head, paired against the
             * same logits without the bias. */
            static const char *const biases[] = {"alibi", "t5", "xl"};
            const char *bias = biases[(li + (size_t)causal) % RL_ARRAY_LEN(biases)];
            attn_case cs[4] = {
                {n, 4, 2, 64, causal, 0, NULL, ALL_STATS, 0, 0},
                {n, 4, 2, 64, causal, 1, NULL, ALL_STATS, 0, 0},
                {n, 2, 1, 32, causal, 0, bias, ALL_STATS | ATTN_NO_BIAS_B, 0, 0},
                {n, 4, 2, 64, causal, 0, NULL, ATTN_OUT | ATTN_ENTROPY, 0, 0},
            };
            /* O on 65 tokens causal (tail of a workgroup) and 1000 bidirectional. */
            int with_o = (n == 65 && causal) || (n == 1000 && !causal && !opt->quick);
            for (int k = 0; k < 3 + with_o && !st; k++) {
                chk_row row;
                st = chk_attn_run_case(dev, &e, &cs[k], seed + li * 16 + causal * 4 + k, &row, err);
                if (!st)
                    st = chk_report_add(report, &row, err);
            }
        }
    }
    attn_engine_destroy(&e);
    return st;
}
