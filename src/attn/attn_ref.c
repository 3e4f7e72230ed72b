/* Attention statistics, CPU reference in double, straight from the
 * definitions (no online rescaling, no tiles): all logits of a row first,
 * then the max, the log-sum-exp, the probabilities and every statistic from
 * them. Never touches Vulkan; shares no code with attn.comp. */
#include <math.h>
#include <string.h>

#include "attn/attn.h"

int attn_ref_visible(const attn_ref_problem *p, uint64_t i, uint64_t j)
{
    if (p->causal && j > i)
        return 0;
    if (j < p->n_sink)
        return 1;
    uint64_t dist = i > j ? i - j : j - i;
    if (p->window && dist >= p->window)
        return 0;
    if (p->chunk_size && i / p->chunk_size != j / p->chunk_size)
        return 0;
    return 1;
}

double attn_ref_temperature(const attn_ref_problem *p, uint64_t i)
{
    double pos = (double)p->pos[i];
    switch (p->temp) {
    case ATTN_TEMP_LLAMA4: /* HF Llama4: log(floor((cache_position + 1) / floor_scale) + 1) * attn_scale + 1 */
        return 1.0 + p->temp_a * log(floor((pos + 1.0) / p->temp_b) + 1.0);
    case ATTN_TEMP_QWEN_LOGN: /* Qwen: log_L(n) for the 1-based position n > L */
        return pos + 1.0 > p->temp_a ? log(pos + 1.0) / log(p->temp_a) : 1.0;
    case ATTN_TEMP_SSMAX: /* Nakanishi 2025: s log n, n = keys of the row */
        return p->temp_a * log(p->causal ? (double)i + 1.0 : (double)p->tokens);
    default:
        return 1.0;
    }
}

int attn_ref_remapped(const attn_ref_problem *p, uint64_t i, uint64_t j)
{
    if (p->remap_chunk) { /* Dual Chunk Attention: intra, successive, inter */
        uint64_t ci = p->pos[i] / p->remap_chunk, cj = p->pos[j] / p->remap_chunk;
        uint64_t dc = ci > cj ? ci - cj : cj - ci;
        return dc == 0 ? 0 : dc == 1 ? 1 : 2;
    }
    if (!p->remap_window)
        return 0;
    int64_t dist = (int64_t)p->pos[i] - (int64_t)p->pos[j];
    return (dist < 0 ? -dist : dist) >= (int64_t)p->remap_window;
}

/* Row of query token i in p's query tensors: i, or its slot among the
 * sampled rows (binary search; i must be one of them). */
static uint64_t q_row(const attn_ref_problem *p, uint64_t i)
{
    if (!p->q_rows)
        return i;
    uint64_t lo = 0, hi = p->n_q_rows;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (p->q_rows[mid] <= i)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* The operands of definition `which` at (i, j): q/k, or q_b/k_b for
 * definition b (paired) or for a remapped (i, j) of definition a, or
 * q_c/k_b for DCA's inter-chunk pairs. */
static int operand_def(const attn_ref_problem *p, int which, uint64_t i, uint64_t j)
{
    return (p->remap_window || p->remap_chunk) ? (which ? 0 : attn_ref_remapped(p, i, j)) : which;
}

/* <q_i, k_j> of definition def's operands (0: q/k, 1: q_b/k_b, 2: q_c/k_b)
 * for head h, and sum_d |q_d k_d| in *sabs (each sum in dimension order). */
static double def_dot(const attn_ref_problem *p, int def, uint32_t h, uint64_t i, uint64_t j,
                      double *sabs)
{
    uint32_t d = p->head_dim;
    uint32_t kvh = h / (p->heads / p->kv_heads);
    const float *q = def == 2 ? p->q_c : def ? p->q_b : p->q;
    const float *k = def ? p->k_b : p->k;
    const float *qi = q + (q_row(p, i) * p->heads + h) * d;
    const float *kj = k + (j * p->kv_heads + kvh) * d;
    double dot = 0;
    *sabs = 0;
    for (uint32_t e = 0; e < d; e++) {
        double m = (double)qi[e] * (double)kj[e];
        dot += m;
        *sabs += fabs(m);
    }
    return dot;
}

/* 1 when (i, j) is the window's edge whose key takes both definitions
 * (remap_edge: |pos_i - pos_j| = remap_window). */
static int edge_key(const attn_ref_problem *p, uint64_t i, uint64_t j)
{
    if (!p->remap_edge || !p->remap_window)
        return 0;
    int64_t dist = (int64_t)p->pos[i] - (int64_t)p->pos[j];
    return (dist < 0 ? -dist : dist) == (int64_t)p->remap_window;
}

/* The logit of definition `which` at (i, j) (-inf where not visible) and,
 * when ad is not NULL and (i, j) is visible, the tolerance's |scale| t
 * sum_d |q_d k_d| of the same operands (the larger of the two definitions'
 * at an edge key). */
static double logit_parts(const attn_ref_problem *p, int which, uint32_t h, uint64_t i,
                          uint64_t j, double *ad)
{
    if (!attn_ref_visible(p, i, j))
        return -INFINITY;
    double sabs;
    double dot = def_dot(p, operand_def(p, which, i, j), h, i, j, &sabs);
    double sc = which ? p->scale_b : p->scale;
    double s = sc * dot, t = 1.0;
    if (!which && p->temp) {
        t = attn_ref_temperature(p, i);
        s *= t;
    }
    if (ad)
        *ad = sabs * fabs(sc) * fabs(t);
    if (!which && edge_key(p, i, j)) {
        /* the key enters the softmax twice, at its remapped logit s and at
         * its exact one x: weight e^s + e^x, i.e. the logit log(e^s + e^x) */
        double sabs0;
        double x = sc * def_dot(p, 0, h, i, j, &sabs0) * t;
        double hi = s > x ? s : x, lo = s > x ? x : s;
        s = hi + log1p(exp(lo - hi));
        if (ad && sabs0 * fabs(sc) * fabs(t) > *ad)
            *ad = sabs0 * fabs(sc) * fabs(t);
    }
    int use_bias = which ? p->bias_b : p->bias_a;
    if (use_bias && p->bias && p->bias->ref)
        s += p->bias->ref(p->bias->ref_ctx, h, i, j, (int64_t)p->pos[i], (int64_t)p->pos[j]);
    return s;
}

double attn_ref_logit(const attn_ref_problem *p, int which, uint32_t h, uint64_t i, uint64_t j)
{
    return logit_parts(p, which, h, i, j, NULL);
}

void attn_ref_row_stats(const attn_ref_problem *p, uint32_t h, uint64_t i, uint64_t target,
                        uint32_t n_buckets, double *scratch, attn_ref_row *r, double *buckets,
                        double *out, double *out_scale)
{
    memset(r, 0, sizeof *r);
    uint64_t n = p->tokens;
    uint64_t nk = p->causal ? i + 1 : n;   /* keys 0..nk-1 are valid */
    double *sa = scratch, *sb = scratch + n;
    double m = -INFINITY, mn = INFINITY;
    r->argmax = 0;
    uint64_t nvis = 0;
    for (uint64_t j = 0; j < nk; j++) {
        double ad = 0;
        sa[j] = logit_parts(p, 0, h, i, j, &ad);
        if (!attn_ref_visible(p, i, j)) { /* masked: p = 0, no error term */
            if (p->paired)
                sb[j] = -INFINITY;
            continue;
        }
        nvis++;
        if (sa[j] > m) {
            m = sa[j];
            r->argmax = j;
        }
        if (sa[j] < mn)
            mn = sa[j];
        if (p->paired) {
            double adb = 0;
            sb[j] = logit_parts(p, 1, h, i, j, &adb);
            if (adb > ad)
                ad = adb;
        }
        if (ad > r->max_abs_dot)
            r->max_abs_dot = ad;
        double b = 0;
        if (p->bias && p->bias->ref) {
            b = fabs(p->bias->ref(p->bias->ref_ctx, h, i, j, (int64_t)p->pos[i],
                                  (int64_t)p->pos[j]));
            if (b > r->max_abs_bias)
                r->max_abs_bias = b;
        }
        if (p->bias && p->bias->bound && (p->bias_a || p->bias_b)) {
            /* The device bias's own error beyond two fp32 roundings of its
             * value ((2u + u^2)|b|, already inside the tolerance's 3 u B). */
            const double u = 0x1p-24;
            double eb = p->bias->bound(p->bias->ref_ctx, h, i, j, (int64_t)p->pos[i],
                                       (int64_t)p->pos[j]) - (2 * u + u * u) * b;
            if (eb < 0)
                eb = 0;
            if (!(eb <= r->max_bias_err)) /* NaN/inf bounds propagate */
                r->max_bias_err = eb;
        }
    }
    r->n_keys = nvis;
    r->max = m;
    r->min_logit = mn;
    double sum = 0;
    for (uint64_t j = 0; j < nk; j++)
        sum += exp(sa[j] - m); /* masked keys: exp(-inf) = 0 */
    r->lse = m + log(sum);
    if (p->sinks) {
        /* learned sink: one more term of the denominator, no key */
        double sg = p->sinks[h], m2 = m > sg ? m : sg;
        double s2 = 0;
        for (uint64_t j = 0; j < nk; j++)
            s2 += exp(sa[j] - m2);
        s2 += exp(sg - m2);
        r->lse = m2 + log(s2);
        if (sg < r->min_logit)
            r->min_logit = sg;
    }
    double lse_b = 0;
    if (p->paired) {
        double mb = -INFINITY, sumb = 0;
        for (uint64_t j = 0; j < nk; j++)
            mb = sb[j] > mb ? sb[j] : mb;
        for (uint64_t j = 0; j < nk; j++)
            sumb += exp(sb[j] - mb);
        lse_b = mb + log(sumb);
        r->lse_b = lse_b;
    }
    if (buckets)
        for (uint32_t b = 0; b < n_buckets; b++)
            buckets[b] = 0;
    if (out)
        for (uint32_t e = 0; e < p->head_dim; e++)
            out[e] = out_scale[e] = 0;
    uint32_t kvh = h / (p->heads / p->kv_heads);
    double ent = 0, kl = 0;
    for (uint64_t j = 0; j < nk; j++) {
        if (sa[j] == -INFINITY)
            continue;                         /* masked */
        double lp = sa[j] - r->lse;          /* log p_j */
        double pj = exp(lp);
        if (pj > 0)
            ent -= pj * lp;                   /* H = -sum p log p */
        if (p->paired && pj > 0)
            kl += pj * (lp - (sb[j] - lse_b)); /* sum p_a (log p_a - log p_b) */
        if (j == target)
            r->target_p = pj;
        if (buckets) {
            int64_t dd = (int64_t)p->pos[j] - (int64_t)p->pos[i];
            buckets[attn_bucket_of((uint64_t)(dd < 0 ? -dd : dd))] += pj;
        }
        if (out) {
            const float *vj = p->v + (j * p->kv_heads + kvh) * p->head_dim;
            for (uint32_t e = 0; e < p->head_dim; e++) {
                out[e] += pj * vj[e];
                out_scale[e] += pj * fabs((double)vj[e]);
            }
        }
    }
    r->entropy = ent;
    r->kl = kl;
    r->argmax_p = exp(m - r->lse);
}

uint32_t attn_bucket_of(uint64_t distance)
{
    uint32_t b = 0;
    while (distance) {   /* floor(log2 d) + 1 for d >= 1 */
        distance >>= 1;
        b++;
    }
    return b;
}

uint32_t attn_n_buckets(uint64_t max_distance)
{
    return attn_bucket_of(max_distance) + 1;
}

uint16_t attn_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ex = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;
    if (ex == 0xffu)
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
    int e = (int)ex - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t h = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++;                                  /* may carry into the exponent: correct */
    return (uint16_t)(sign | h);
}
