/* exp_retrieval.c — positional retrieval: can the encoding address a key by
 * its offset when content cannot tell the candidates apart?
 *
 * For each length N = min_len, 2 min_len, ..., max_len: N tokens at
 * positions 0..N-1 (or a random permutation of them, `positions: shuffled`),
 * causal. W = N/(2C) queries, every C-th token of the second half. Query i
 * gets a target offset r (powers of two up to N/2, the one with the fewest
 * trials so far whose keys are free) and C = `candidates` key slots j = i -
 * r_c: the target r and
 * C - 1 decoy offsets drawn without replacement from the window
 *     [max(1, r - max(r/2, C)),  min(i, r + max(r, 2C))]
 * (ratios 1/2 .. 2 of r for long offsets, at least 2C slots for short ones).
 * Every candidate holds the SAME content c ~ N(0, I_D) plus independent
 * noise (`noise` per element), so content alone selects a candidate at
 * random; every other key is a distractor (N(0, I), or zero).
 *
 * The query is what a model that knows the encoding's rotation would ask
 * for offset r: per rotary pair p (the encoding's own frequencies theta'_p
 * at this pass, per token where the scaling is per position),
 *     q_p = R(-Delta_p) c_p,   Delta_p = i theta'_p(i) - j theta'_p(j),
 * so after the encoding rotates q at i and c at j = i - r the target scores
 * |c|^2 and a decoy at offset r' scores sum_p |c_p|^2 cos(Delta_p - Delta'_p):
 * telling them apart needs the offset. A model trained at L = train_len with
 * the unscaled frequencies theta0_p saw angles [0, theta0_p L) in pair p (the
 * coverage kind's definition, exp_coverage.c): with `ood: random` (default)
 * a pair whose Delta_p falls outside that range (theta0_p L < 2 pi and
 * Delta_p > theta0_p L) cannot be asked for, and its query part gets a
 * uniformly random phase instead (the pair adds noise, not position); `ood:
 * keep` rotates every pair exactly (an oracle that extrapolates: pure
 * resolution). Dimensions outside the rotary pairs, and every dimension of
 * an encoding without rotary frequencies (NoPE, ALiBi, T5, sinusoidal, ...),
 * carry q = c: such an encoding can prefer the target only through a
 * distance bias, which favours the nearest candidate, not a chosen one.
 *
 * With a position remap (attn_remap: Self-Extend, ReRoPE, Leaky ReRoPE,
 * DCA) Delta_p is the remapped distance times theta'_p
 * (attn_remap_distance): the query asks for the angle the remap presents,
 * so offsets the remap merges become indistinguishable, not wrong.
 *
 * Controls (docs/runner.md "retrieval"): NoPE and `positions: shuffled` (the
 * encoding sees a permutation of the positions the query was built for) are
 * at chance = 1/C by symmetry: the target is one of C exchangeable
 * candidates. Plain RoPE within train_len is high.
 *
 * A trial is one (query, kv head): the query heads of a GQA group read the
 * same key and copy the group's query, so they are one trial, not several.
 * Each length runs C passes over the same q/k, pass a asking for candidate
 * a's probability (ATTN_TARGET): a hit is a trial whose target has the
 * largest probability of its C candidates (a tie of k: 1/k), so a method
 * blind to the offset scores exactly 1/C whatever the distractors do.
 * accuracy = hits / trials with its 95 % Wilson interval; haystack_accuracy
 * = share of trials whose argmax over all keys is the target (pass 0).
 * Each pass is verified through exp_attn_run (transform vs double
 * reference, argmax gap and target probability within their fp32
 * tolerances, exp_attn_verify.c); any excess fails the run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"
#include "exp/exp.h"
#include "pe/pe.h"
#include "pe/rope.h"

#define RET_PI 3.14159265358979323846

enum {
    P_MIN_LEN, P_MAX_LEN, P_CANDIDATES, P_NOISE, P_DISTRACTORS, P_OOD, P_POSITIONS, P_DECOYS,
    P_WINDOW, P_SINKS, P_CHUNK, P_LSINK, P_SLOGIT, P_TEMP, P_TSCALE, P_TFLOOR,
    P_REMAP, P_RWINDOW, P_RGROUP, P_RLEAK, P_RCHUNK, P_RLOCAL, P_QROWS, P_COUNT
};
static const rl_param params[P_COUNT] = {
    [P_MIN_LEN] = {.key = "min_len", .type = RL_P_INT, .min = 16, .max = 1048576, .def = "256",
                   .help = "shortest sequence (tokens); lengths double up to max_len"},
    [P_MAX_LEN] = {.key = "max_len", .type = RL_P_INT, .min = 16, .max = 1048576,
                   .def = "2048", .help = "longest sequence (tokens)"},
    [P_CANDIDATES] = {.key = "candidates", .type = RL_P_INT, .min = 2, .max = 64, .def = "8",
                      .help = "keys with the query's content per trial, at different offsets "
                              "(chance = 1/candidates)"},
    [P_NOISE] = {.key = "noise", .type = RL_P_NUM, .min = 0, .max = 10, .def = "0.05",
                 .help = "standard deviation of the noise added to each candidate's content "
                         "(content std 1): breaks content ties at random"},
    [P_DISTRACTORS] = {.key = "distractors", .type = RL_P_ENUM, .def = "\"gaussian\"",
                       .choices = "gaussian|none",
                       .help = "every other key: N(0, 1) per element, or zero"},
    [P_OOD] = {.key = "ood", .type = RL_P_ENUM, .def = "\"random\"", .choices = "random|keep",
               .help = "query pairs whose angle lies outside the range seen up to train_len: "
                       "random phase (the model cannot ask for it), or exact (an oracle)"},
    [P_POSITIONS] = {.key = "positions", .type = RL_P_ENUM, .def = "\"ordered\"",
                     .choices = "ordered|shuffled",
                     .help = "positions the encoding sees: 0..N-1, or a random permutation "
                             "(control: the query asks for the unshuffled offset)"},
    [P_DECOYS] = {.key = "decoys", .type = RL_P_ENUM, .def = "\"near\"",
                  .choices = "near|uniform",
                  .help = "decoy offsets: uniform over the query's history 1..i, or near the "
                          "target (ratios 1/2 .. 2, at least 2 candidates' worth of slots)"},
    EXP_ATTN_MASK_PARAMS(P_WINDOW, P_SINKS, P_CHUNK, P_LSINK, P_SLOGIT, P_TEMP, P_TSCALE,
                         P_TFLOOR),
    EXP_ATTN_REMAP_PARAMS(P_REMAP, P_RWINDOW, P_RGROUP, P_RLEAK, P_RCHUNK, P_RLOCAL),
    [P_QROWS] = {.key = "query_rows", .type = RL_P_INT, .min = 0, .max = 1048576, .def = "0",
                 .help = "trials (query rows) per length: 0 every one of the N/(2 candidates) "
                         "(full passes); S > 0 at most S of them, evenly spread over the "
                         "trial order (offsets in turn), each computed exactly against every "
                         "key it sees, and only those rows"},
};

/* The kind's typed parameters, defaults applied (exp_params_get). */
typedef struct ret_params {
    uint64_t min_len, max_len;
    uint32_t candidates;
    uint32_t query_rows;          /* 0: every trial, full passes */
    double noise;
    int gaussian, ood_random, shuffled, near;
    exp_attn_mask mask;
} ret_params;

static rl_status ret_params_of(const exp_run *run, ret_params *p, rl_error *err)
{
    exp_value v[P_COUNT];
    rl_status st = exp_params_get("retrieval", params, P_COUNT, run, v, err);
    if (st)
        return st;
    *p = (ret_params){.min_len = (uint64_t)v[P_MIN_LEN].num,
                      .max_len = (uint64_t)v[P_MAX_LEN].num,
                      .candidates = (uint32_t)v[P_CANDIDATES].num,
                      .noise = v[P_NOISE].num,
                      .gaussian = !strcmp(v[P_DISTRACTORS].str, "gaussian"),
                      .ood_random = !strcmp(v[P_OOD].str, "random"),
                      .shuffled = !strcmp(v[P_POSITIONS].str, "shuffled"),
                      .near = !strcmp(v[P_DECOYS].str, "near"),
                      .query_rows = (uint32_t)v[P_QROWS].num};
    st = exp_attn_mask_get("retrieval", v, EXP_ATTN_MASK_KEYS,
                           run->model.train_len, &p->mask, err);
    return st;
}

static uint64_t next_len(uint64_t N, uint64_t T)
{
    return N >= T ? 0 : N * 2 > T ? T : N * 2;
}

/* The trials a length-N pass computes: N / (2C) queries, at most S of them
 * with query_rows S (0: all). */
static uint64_t ret_rows(uint64_t N, uint32_t C, uint32_t S)
{
    uint64_t w = N / (2 * (uint64_t)C);
    return S && S < w ? S : w;
}

/* Multiply-adds of QK^T of one pass per length: N^2 H D / 2 per causal
 * pass; with query_rows, each computed row (in the second half: ~3N/4 keys
 * seen) only (the run makes `candidates` such passes per length). */
static double ret_work(uint64_t lo, uint64_t T, double hd, uint32_t C, uint32_t S)
{
    double work = 0;
    for (uint64_t N = lo; N; N = next_len(N, T))
        work += S ? (double)ret_rows(N, C, S) * 0.75 * (double)N * hd : 0.5 * (double)N * N * hd;
    return work;
}

static double ret_flops(const exp_run *run)
{
    ret_params p;
    rl_error err;
    if (ret_params_of(run, &p, &err))
        return 0; /* refused by ret_check before any estimate is used */
    /* C passes per length (one per candidate) */
    return 2.0 * p.candidates *
           ret_work(p.min_len, p.max_len, (double)run->model.heads * run->model.head_dim,
                    p.candidates, p.query_rows);
}

#define RET_MAX_R 40

/* Target offsets for length N: powers of two up to N/2. */
static uint32_t offsets(uint64_t N, uint64_t *r)
{
    uint32_t m = 0;
    for (uint64_t p = 1; p <= N / 2 && m < RET_MAX_R; p *= 2)
        r[m++] = p;
    return m;
}

/* The encoding's rotation as the query builder needs it: NULL for an
 * encoding without rotary frequencies. Refuses a rotation whose score is
 * not a function of token indices the builder can form (mRoPE's vl / npy
 * 3-D positions). */
static rl_status ret_check(const exp_run *run, rl_error *err)
{
    ret_params p;
    rl_status st = ret_params_of(run, &p, err);
    if (!st && p.min_len < 4 * (uint64_t)p.candidates)
        st = rl_fail_key(err, RL_ERR_ARG, "min_len",
                         "retrieval: min_len %llu below 4 x candidates (%u): a length N holds "
                         "N / (2 candidates) queries",
                         (unsigned long long)p.min_len, p.candidates);
    if (!st)
        st = exp_attn_check(run, p.min_len, p.max_len, EXP_PASS_CAUSAL, err);
    if (!st)
        st = exp_attn_remap_check(run, p.max_len, &p.mask.remap, err);
    if (st)
        return st;
    pe_encoding *e = NULL;
    if ((st = exp_encoding_create(run, p.max_len, &e, err)))
        return st;
    const rope_freqs *f = pe_rope_freqs(e);
    if (f && f->mrope && !rope_freqs_index_relative(f) && !rope_freqs_per_position(f))
        st = rl_fail(err, RL_ERR_ARG,
                     "retrieval: encoding '%s': mRoPE with 3-D positions (mrope_positions "
                     "vl/npy): the query builder forms offsets of token indices only",
                     run->encoding_name);
    pe_encoding_destroy(e);
    return st;
}

static uint64_t ret_bytes(const exp_run *run)
{
    ret_params p;
    rl_error err;
    if (ret_params_of(run, &p, &err))
        return 0; /* refused by ret_check before any estimate is used */
    uint64_t T = p.max_len;
    uint64_t row = (uint64_t)(run->model.heads + run->model.kv_heads) * run->model.head_dim;
    return T * row * (4 + 4 + 4 + 24 + 8) + T * run->model.heads * RL_ATTN_NSTAT * 4 + T * 20;
}

/* Angle of pair p of the token at index t as the encoding rotates it. */
static double pair_angle(const rope_freqs *f, const double *inv_per_tok, uint64_t t, uint32_t p)
{
    double th = inv_per_tok ? inv_per_tok[t * f->n_pairs + p] : f->inv_freq[p];
    return (double)t * th;
}

/* Dimension indices (a, b) of rotary pair p in f's layout. */
static void pair_dims(const rope_freqs *f, uint32_t p, uint32_t *a, uint32_t *b)
{
    if (f->layout == RL_ROPE_LAYOUT_INTERLEAVED)
        *a = 2 * p, *b = 2 * p + 1;
    else
        *a = p, *b = p + f->rotary_dim / 2;
}

/* One trial's layout: the query token, its target slot and candidates. */
typedef struct ret_trial {
    uint64_t i, target;
    int ri;                     /* index into the offset list */
} ret_trial;

/* Picks trials for length N: W = N/(2C) queries (see below); each takes C
 * free slots (target + decoys, see the header). used[] marks taken slots.
 * Returns the number of trials; slots[t * C + c] are trial t's candidates
 * (c = 0 the target). */
static uint32_t plan_trials(uint64_t N, uint32_t C, int near, const uint64_t *r, uint32_t m,
                            ret_trial *trials, uint64_t *slots, unsigned char *used,
                            uint64_t *free_off, rl_rng *rng)
{
    /* W = N / (2C) queries, every C-th token of the second half (their C
     * slots each fill at most half the keys, so every offset finds room;
     * a query token's own key may serve another query as a candidate) */
    uint64_t W = N / (2 * (uint64_t)C), count[RET_MAX_R] = {0};
    uint32_t n = 0;
    memset(used, 0, N);
    for (uint64_t t = 0; t < W; t++) {
        uint64_t i = N - 1 - t * C;
        /* Offsets in order of fewest trials so far (ties from a start that
         * rotates with t); the first whose C slots are free is taken. */
        uint32_t order[RET_MAX_R];
        for (uint32_t a = 0; a < m; a++)
            order[a] = (uint32_t)((t + a) % m);
        for (uint32_t a = 1; a < m; a++) /* stable insertion sort by count */
            for (uint32_t b = a; b > 0 && count[order[b]] < count[order[b - 1]]; b--) {
                uint32_t tmp = order[b];
                order[b] = order[b - 1], order[b - 1] = tmp;
            }
        for (uint32_t a = 0; a < m; a++) {
            uint32_t di = order[a];
            uint64_t rr = r[di];
            if (rr > i || used[i - rr])
                continue;
            uint64_t h = rr / 2 > C ? rr / 2 : C, g = rr > 2 * (uint64_t)C ? rr : 2 * (uint64_t)C;
            uint64_t lo = rr > h ? rr - h : 1, hi = rr + g < i ? rr + g : i;
            if (!near)
                lo = 1, hi = i;
            uint64_t nf = 0;
            for (uint64_t o = lo; o <= hi; o++)
                if (o != rr && !used[i - o])
                    free_off[nf++] = o;
            if (nf + 1 < C)
                continue;
            /* C - 1 decoys: a partial Fisher-Yates shuffle of the free offsets */
            uint64_t *s = slots + (uint64_t)n * C;
            s[0] = i - rr;
            for (uint32_t c = 1; c < C; c++) {
                uint64_t k = c - 1 + (uint64_t)(rl_rng_uniform(rng) * (double)(nf - (c - 1)));
                if (k >= nf)
                    k = nf - 1;
                uint64_t tmp = free_off[c - 1];
                free_off[c - 1] = free_off[k], free_off[k] = tmp;
                s[c] = i - free_off[c - 1];
            }
            for (uint32_t c = 0; c < C; c++)
                used[s[c]] = 1;
            trials[n++] = (ret_trial){.i = i, .target = i - rr, .ri = (int)di};
            count[di]++;
            break;
        }
    }
    return n;
}

/* Keys and queries of one pass: distractors, then each trial's candidates
 * and query (see the header). q: [N][H][D], k: [N][KV][D], raw. inv_tok:
 * per-token inv_freq [N][n_pairs] when f rotates per position, else NULL. */
static void build_pass(const exp_run *run, const ret_params *p, uint64_t N, const rope_freqs *f,
                       const double *inv_tok, const ret_trial *trials, uint32_t n,
                       const uint64_t *slots, float *q, float *k, rl_rng *rng)
{
    uint32_t H = run->model.heads, KV = run->model.kv_heads, D = run->model.head_dim;
    uint32_t G = H / KV, C = p->candidates, L = run->model.train_len;
    int remap = p->mask.remap.method != ATTN_REMAP_NONE;
    for (uint64_t x = 0; x < N * KV * D; x++)
        k[x] = p->gaussian ? (float)rl_rng_normal(rng) : 0.0f;
    for (uint64_t x = 0; x < N * H * D; x++)
        q[x] = p->gaussian ? (float)rl_rng_normal(rng) : 0.0f; /* rows that are no query */
    double c[1024], qv[1024];
    for (uint32_t t = 0; t < n; t++) {
        const ret_trial *tr = &trials[t];
        for (uint32_t g = 0; g < KV; g++) {
            for (uint32_t d = 0; d < D; d++)
                c[d] = rl_rng_normal(rng), qv[d] = c[d];
            for (uint32_t a = 0; a < C; a++) {
                float *kj = k + (slots[(uint64_t)t * C + a] * KV + g) * D;
                for (uint32_t d = 0; d < D; d++)
                    kj[d] = (float)(c[d] + (p->noise > 0 ? p->noise * rl_rng_normal(rng) : 0.0));
            }
            /* a remap (Self-Extend, ReRoPE, DCA, ...) rotates the pair by its
             * remapped distance: the query asks for that angle */
            double rd = remap ? attn_remap_distance(&p->mask.remap, (int64_t)tr->i,
                                                    (int64_t)tr->target)
                              : 0;
            for (uint32_t pp = 0; f && pp < f->n_pairs; pp++) {
                double delta = remap ? rd * f->inv_freq[pp]
                                     : pair_angle(f, inv_tok, tr->i, pp) -
                                           pair_angle(f, inv_tok, tr->target, pp);
                double th0 = f->inv_freq[pp] * f->scale[pp], seen = th0 * (double)L;
                if (p->ood_random && seen < 2 * RET_PI && delta > seen * (1 + 1e-12))
                    delta = 2 * RET_PI * rl_rng_uniform(rng);
                uint32_t da, db;
                pair_dims(f, pp, &da, &db);
                double cs = cos(delta), sn = sin(delta);
                /* R(-delta) (c_a, c_b) */
                qv[da] = cs * c[da] + sn * c[db];
                qv[db] = -sn * c[da] + cs * c[db];
            }
            for (uint32_t h = g * G; h < (g + 1) * G; h++)
                for (uint32_t d = 0; d < D; d++)
                    q[(tr->i * H + h) * D + d] = (float)qv[d];
        }
    }
}

static rl_status ret_run(const exp_run *run, exp_ctx *ctx, exp_sink *sink, rl_error *err)
{
    if (!ctx->dev)
        return rl_fail(err, RL_ERR_ARG, "retrieval: needs a device");
    ret_params p;
    rl_status st0 = ret_params_of(run, &p, err);
    if (st0)
        return st0;
    uint64_t lo = p.min_len, T = p.max_len;
    if ((st0 = exp_attn_limits(ctx->dev, run, T, p.query_rows ? ret_rows(T, p.candidates,
                                                                          p.query_rows) : 0,
                               ATTN_ARGMAX | ATTN_TARGET, err)))
        return st0; /* before any host work */
    uint32_t H = run->model.heads, KV = run->model.kv_heads, D = run->model.head_dim;
    uint32_t L = run->model.train_len, C = p.candidates;
    float *q = malloc(T * H * D * sizeof *q), *k = malloc(T * KV * D * sizeof *k);
    float *stats = malloc(T * H * RL_ATTN_NSTAT * sizeof *stats);
    uint32_t *target = malloc(T * sizeof *target), *pos = malloc(T * sizeof *pos);
    ret_trial *trials = malloc((T / 4 + 1) * sizeof *trials);
    uint64_t *slots = malloc((T / 4 + 1) * C * sizeof *slots);
    uint64_t *free_off = malloc(T * sizeof *free_off);
    unsigned char *used = malloc(T), *hay = malloc((T / 4 + 1) * KV);
    float *cand_p = malloc((T / 4 + 1) * KV * C * sizeof *cand_p);
    double *inv_tok = NULL;
    uint32_t *qrows = malloc((T / 4 + 1) * sizeof *qrows), *slot = malloc((T / 4 + 1) * sizeof *slot);
    uint64_t rows_hi = 0;
    pe_encoding *e = NULL;
    attn_engine own, *eng = NULL;
    int have_eng = 0, pass = 1;
    rl_status st = RL_OK;
    if (!q || !k || !stats || !target || !pos || !trials || !slots || !free_off || !used || !hay ||
        !cand_p || !qrows || !slot) {
        st = rl_fail(err, RL_ERR_NOMEM, "retrieval: out of host memory for %llu tokens",
                     (unsigned long long)T);
        goto done;
    }
    if (D > 1024) {
        st = rl_fail(err, RL_ERR_ARG, "retrieval: head_dim %u above 1024", D);
        goto done;
    }
    if ((st = exp_attn_engine(ctx, &own, &eng, &have_eng, err)))
        goto done;
    rl_rng rng;
    rl_rng_seed(&rng, run->seed, "exp/retrieval");
    /* Totals over lengths: within / beyond train_len by target offset. */
    double hit_in = 0, n_in = 0, hit_out = 0, n_out = 0, hay_hits = 0, n_all = 0;
    double acc_last = NAN, n_last = 0, hit_last = 0;
    double lrows[64][10];
    uint32_t n_lrows = 0;
    double done_w = 0, work = C * ret_work(lo, T, (double)H * D, C, p.query_rows);

    for (uint64_t N = lo; N && !st; N = next_len(N, T)) {
        uint64_t r[RET_MAX_R];
        uint32_t m = offsets(N, r);
        pe_encoding_destroy(e);
        e = NULL;
        free(inv_tok);
        inv_tok = NULL;
        if ((st = exp_encoding_for_pass(run, N, 1, &e, err))) /* causal passes */
            goto done;
        const rope_freqs *f = pe_rope_freqs(e);
        if (f && rope_freqs_per_position(f)) {
            if (!(inv_tok = malloc(N * f->n_pairs * sizeof *inv_tok))) {
                st = rl_fail(err, RL_ERR_NOMEM, "retrieval: out of host memory");
                goto done;
            }
            for (uint64_t t = 0; t < N; t++) {
                double af;
                rope_freqs_at(f, (uint32_t)t, inv_tok + t * f->n_pairs, &af);
            }
        }
        uint32_t n = plan_trials(N, C, p.near, r, m, trials, slots, used, free_off, &rng);
        build_pass(run, &p, N, f, inv_tok, trials, n, slots, q, k, &rng);
        /* query_rows S: S trials evenly spread over the trial order (which
         * takes the offsets in turn), the others' queries never computed
         * (their keys stay: distractors as in the full pass), so each kept
         * trial's statistics are the full pass's */
        uint32_t n_rows = 0;
        if (p.query_rows) {
            uint32_t keep = (uint32_t)ret_rows(N, C, p.query_rows), kept = 0;
            keep = keep < n ? keep : n;
            for (uint32_t t = 0; t < n; t++)
                if ((uint64_t)t * keep / n != ((uint64_t)t + 1) * keep / n) {
                    trials[kept] = trials[t];
                    memmove(slots + (uint64_t)kept * C, slots + (uint64_t)t * C, C * sizeof *slots);
                    kept++;
                }
            n = kept;
            /* the kept trials' rows ascending, and each trial's slot */
            for (uint32_t t = 0; t < n; t++)
                qrows[t] = (uint32_t)trials[t].i;
            for (uint32_t a = 1; a < n; a++) /* insertion sort: n is small */
                for (uint32_t b = a; b > 0 && qrows[b - 1] > qrows[b]; b--) {
                    uint32_t x = qrows[b];
                    qrows[b] = qrows[b - 1], qrows[b - 1] = x;
                }
            for (uint32_t t = 0; t < n; t++) {
                uint32_t lo_i = 0, hi_i = n;
                while (lo_i < hi_i) {
                    uint32_t mid = (lo_i + hi_i) / 2;
                    if (qrows[mid] < trials[t].i)
                        lo_i = mid + 1;
                    else
                        hi_i = mid;
                }
                slot[t] = lo_i;
            }
            n_rows = n < N ? n : 0;
        }
        if (N == T)
            rows_hi = n_rows ? n_rows : N;
        for (uint64_t t = 0; t < N; t++)
            target[t] = (uint32_t)t, pos[t] = (uint32_t)t;
        for (uint32_t t = 0; t < n; t++)
            target[trials[t].i] = (uint32_t)trials[t].target;
        if (p.shuffled)
            for (uint64_t t = N - 1; t > 0; t--) {
                uint64_t s = (uint64_t)(rl_rng_uniform(&rng) * (double)(t + 1));
                s = s > t ? t : s;
                uint32_t tmp = pos[t];
                pos[t] = pos[s], pos[s] = tmp;
            }
        /* C passes over the same q/k: pass a asks for candidate a's
         * probability (ATTN_TARGET); pass 0 (the target) also gives the
         * argmax over all keys. */
        uint32_t G = H / KV;
        for (uint32_t a = 0; a < C && !st; a++) {
            for (uint32_t t = 0; t < n; t++)
                target[trials[t].i] = (uint32_t)slots[(uint64_t)t * C + a];
            exp_attn_io io = {.tokens = N, .q = q, .k = k, .target = target, .causal = 1,
                              .pos = pos, .mask = p.mask, .flags = ATTN_ARGMAX | ATTN_TARGET,
                              .rows = n_rows ? qrows : NULL, .n_rows = n_rows};
            attn_outputs out = {.stats = stats};
            exp_attn_result res;
            char label[128];
            if (n_rows)
                snprintf(label, sizeof label, "N=%llu candidate %u (%u of %llu query rows)",
                         (unsigned long long)N, a, n_rows, (unsigned long long)N);
            else
                snprintf(label, sizeof label, "N=%llu candidate %u", (unsigned long long)N, a);
            exp_sink_progress(sink, label, done_w, work);
            if ((st = exp_attn_run(ctx->dev, eng, e, &io, &out, &res, err)))
                goto done;
            done_w += n_rows ? (double)n_rows * 0.75 * (double)N * H * D
                             : 0.5 * (double)N * N * H * D;
            pass &= exp_attn_record_stats(sink, label, &res);
            for (uint32_t t = 0; t < n; t++)
                for (uint32_t g = 0; g < KV; g++) {
                    /* one trial per kv head: its group's heads are copies */
                    uint64_t row = n_rows ? slot[t] : trials[t].i; /* a sampled pass: slots */
                    const float *sv = stats + (row * H + (uint64_t)g * G) * RL_ATTN_NSTAT;
                    cand_p[((uint64_t)t * KV + g) * C + a] = sv[RL_ATTN_S_TARGET_P];
                    if (a == 0) {
                        uint32_t am;
                        memcpy(&am, &sv[RL_ATTN_S_ARGMAX], sizeof am);
                        hay[(uint64_t)t * KV + g] = am == trials[t].target;
                    }
                }
        }
        double hits[RET_MAX_R] = {0}, cnt[RET_MAX_R] = {0};
        double a_in = 0, c_in = 0, a_out = 0, c_out = 0;
        for (uint32_t t = 0; t < n; t++) {
            const ret_trial *tr = &trials[t];
            for (uint32_t g = 0; g < KV; g++) {
                /* hit: the target's probability is the largest of the C
                 * (a tie of k shares one hit: 1/k each) */
                const float *cp = cand_p + ((uint64_t)t * KV + g) * C;
                uint32_t above = 0, equal = 0;
                for (uint32_t a = 1; a < C; a++)
                    above += cp[a] > cp[0], equal += cp[a] == cp[0];
                double hit = above ? 0.0 : 1.0 / (1 + equal);
                hits[tr->ri] += hit, cnt[tr->ri] += 1;
                hay_hits += hay[(uint64_t)t * KV + g], n_all += 1;
                if (r[tr->ri] <= L)
                    a_in += hit, c_in += 1;
                else
                    a_out += hit, c_out += 1;
            }
        }
        const char *cols[] = {"offset_tokens", "accuracy", "accuracy_lo95", "accuracy_hi95",
                              "trials"};
        if ((st = exp_sink_table_at(sink, "retrieval_offset", N, 5, cols, err)))
            goto done;
        for (uint32_t di = 0; di < m && !st; di++) {
            double row[5] = {(double)r[di], cnt[di] ? hits[di] / cnt[di] : NAN, NAN, NAN,
                             cnt[di]};
            rl_wilson95(hits[di], cnt[di], &row[2], &row[3]);
            if (cnt[di])
                st = exp_sink_row(sink, row, err);
        }
        if (st || (st = exp_sink_end_table(sink, err)))
            goto done;
        hit_in += a_in, n_in += c_in, hit_out += a_out, n_out += c_out;
        hit_last = a_in + a_out, n_last = c_in + c_out;
        acc_last = n_last ? hit_last / n_last : NAN;
        if (n_lrows < 64) {
            double *lr = lrows[n_lrows++];
            lr[0] = (double)N;
            lr[1] = acc_last, rl_wilson95(hit_last, n_last, &lr[2], &lr[3]);
            lr[4] = c_in ? a_in / c_in : NAN, rl_wilson95(a_in, c_in, &lr[5], &lr[6]);
            lr[7] = c_out ? a_out / c_out : NAN, rl_wilson95(a_out, c_out, &lr[8], &lr[9]);
        }
    }
    const char *lcols[] = {"length_tokens",         "accuracy",
                           "accuracy_lo95",         "accuracy_hi95",
                           "accuracy_within_train", "accuracy_within_train_lo95",
                           "accuracy_within_train_hi95", "accuracy_beyond_train",
                           "accuracy_beyond_train_lo95", "accuracy_beyond_train_hi95"};
    if ((st = exp_sink_table(sink, "retrieval_length", 10, lcols, err)))
        goto done;
    for (uint32_t i = 0; i < n_lrows && !st; i++)
        st = exp_sink_row(sink, lrows[i], err);
    if (st || (st = exp_sink_end_table(sink, err)))
        goto done;
    double a, b;
    exp_sink_metric(sink, "accuracy_within_train", n_in ? hit_in / n_in : NAN);
    rl_wilson95(hit_in, n_in, &a, &b);
    exp_sink_metric(sink, "accuracy_within_train_lo95", a);
    exp_sink_metric(sink, "accuracy_within_train_hi95", b);
    exp_sink_metric(sink, "trials_within_train", n_in);
    exp_sink_metric(sink, "accuracy_beyond_train", n_out ? hit_out / n_out : NAN);
    rl_wilson95(hit_out, n_out, &a, &b);
    exp_sink_metric(sink, "accuracy_beyond_train_lo95", a);
    exp_sink_metric(sink, "accuracy_beyond_train_hi95", b);
    exp_sink_metric(sink, "trials_beyond_train", n_out);
    exp_sink_metric(sink, "accuracy_at_max_len", acc_last);
    rl_wilson95(hit_last, n_last, &a, &b);
    exp_sink_metric(sink, "accuracy_at_max_len_lo95", a);
    exp_sink_metric(sink, "accuracy_at_max_len_hi95", b);
    exp_sink_metric(sink, "trials_at_max_len", n_last);
    exp_sink_metric(sink, "query_rows_at_max_len", (double)rows_hi);
    exp_sink_metric(sink, "chance", 1.0 / C);
    exp_sink_metric(sink, "haystack_accuracy", n_all ? hay_hits / n_all : NAN);
    rl_wilson95(hay_hits, n_all, &a, &b);
    exp_sink_metric(sink, "haystack_accuracy_lo95", a);
    exp_sink_metric(sink, "haystack_accuracy_hi95", b);
    if (!pass)
        st = rl_fail(err, RL_ERR_MISMATCH, "retrieval: a verification exceeded its tolerance "
                                           "(see the verification records)");
done:
    if (have_eng)
        attn_engine_destroy(&own);
    pe_encoding_destroy(e);
    free(q), free(k), free(stats), free(target), free(pos), free(trials), free(slots);
    free(free_off), free(used), free(inv_tok), free(hay), free(cand_p), free(qrows), free(slot);
    return st;
}

/* Every metric and table column this kind emits: title, unit, how it is drawn. */
static const exp_metric metrics[] = {
    {"retrieval_offset.offset_tokens", "target offset", "tokens",
     RL_PLOT_LOGX | RL_PLOT_TRAIN},
    {"retrieval_offset.accuracy",
     "positional retrieval accuracy (target first of the candidates)", "", RL_PLOT_FRACTION},
    {"retrieval_offset.accuracy_lo95", "accuracy, 95 % interval low", "", RL_PLOT_CI},
    {"retrieval_offset.accuracy_hi95", "accuracy, 95 % interval high", "", RL_PLOT_CI},
    {"retrieval_offset.trials", "trials per offset", "trials", RL_PLOT_HIDE},
    {"retrieval_length.length_tokens", "context length N", "tokens",
     RL_PLOT_LOGX | RL_PLOT_TRAIN | RL_PLOT_LENGTH},
    {"retrieval_length.accuracy", "positional retrieval accuracy", "", RL_PLOT_FRACTION},
    {"retrieval_length.accuracy_lo95", "accuracy, 95 % interval low", "", RL_PLOT_CI},
    {"retrieval_length.accuracy_hi95", "accuracy, 95 % interval high", "", RL_PLOT_CI},
    {"retrieval_length.accuracy_within_train", "accuracy, target offset within train_len", "",
     RL_PLOT_FRACTION},
    {"retrieval_length.accuracy_within_train_lo95", "within train_len, 95 % low", "",
     RL_PLOT_CI},
    {"retrieval_length.accuracy_within_train_hi95", "within train_len, 95 % high", "",
     RL_PLOT_CI},
    {"retrieval_length.accuracy_beyond_train", "accuracy, target offset beyond train_len", "",
     RL_PLOT_FRACTION},
    {"retrieval_length.accuracy_beyond_train_lo95", "beyond train_len, 95 % low", "",
     RL_PLOT_CI},
    {"retrieval_length.accuracy_beyond_train_hi95", "beyond train_len, 95 % high", "",
     RL_PLOT_CI},
    {"accuracy_within_train", "accuracy, target offset within train_len", "", 0},
    {"accuracy_within_train_lo95", "accuracy within train_len, 95 % low", "", RL_PLOT_CI},
    {"accuracy_within_train_hi95", "accuracy within train_len, 95 % high", "", RL_PLOT_CI},
    {"trials_within_train", "trials with the target within train_len", "trials", 0},
    {"accuracy_beyond_train", "accuracy, target offset beyond train_len", "", 0},
    {"accuracy_beyond_train_lo95", "accuracy beyond train_len, 95 % low", "", RL_PLOT_CI},
    {"accuracy_beyond_train_hi95", "accuracy beyond train_len, 95 % high", "", RL_PLOT_CI},
    {"trials_beyond_train", "trials with the target beyond train_len", "trials", 0},
    {"accuracy_at_max_len", "accuracy at max_len", "", 0},
    {"accuracy_at_max_len_lo95", "accuracy at max_len, 95 % low", "", RL_PLOT_CI},
    {"accuracy_at_max_len_hi95", "accuracy at max_len, 95 % high", "", RL_PLOT_CI},
    {"trials_at_max_len", "trials at max_len", "trials", 0},
    {"query_rows_at_max_len", "query rows the longest pass computed (max_len: every one)", "rows",
     0},
    {"chance", "chance accuracy (1 / candidates)", "", 0},
    {"haystack_accuracy", "share of trials whose argmax over all keys is the target", "", 0},
    {"haystack_accuracy_lo95", "haystack accuracy, 95 % low", "", RL_PLOT_CI},
    {"haystack_accuracy_hi95", "haystack accuracy, 95 % high", "", RL_PLOT_CI},
};

/* Rows of each tensor the run reads: none from a data source (it makes its own). */
const exp_kind exp_kind_retrieval = {
    .name = "retrieval",
    .about = "positional retrieval: C keys share the query's content at different offsets; "
             "accuracy (argmax is the one at the asked offset, chance 1/C) with 95 % "
             "intervals against offset and length",
    .params = params,
    .n_params = sizeof params / sizeof params[0],
    .uses_data = 0,
    .needs_gpu = 1,
    .check = ret_check,
    .estimate_bytes = ret_bytes,
    .estimate_flops = ret_flops,
    .run = ret_run,
    .metrics = metrics,
    .n_metrics = sizeof metrics / sizeof metrics[0],
};
