/* rl_sample.h — sampled query rows and their 95 % intervals (prefix rl_rows_).
 *
 * Attention statistics over query rows (mean entropy, say) at N up to 2^20
 * tokens are computed exactly for only S sampled rows. This module chooses
 * the rows (a plan) and turns the S computed values into the mean over the
 * rows of a token range with a design-based 95 % interval: the randomness is
 * the row draw, not a model of the values.
 *
 * API at a glance:
 *   rl_rows_plan_make(scheme, N, S, seed, &plan, &err)  choose S of N rows
 *   rl_rows_estimate(&plan, y, t0, t1, &est)             mean over [t0, t1)
 *   rl_rows_plan_free(&plan)
 *   rl_t975(df)                                          Student-t quantile
 *   rl_line_fit(x, y, n, &fit)                           least squares with a 95 % slope interval
 *
 * Schemes:
 *   uniform     one stratum [0, N): a simple random sample without
 *               replacement (every S-subset equally likely).
 *   log_groups  stratum g holds the tokens i with i + 1 in [2^g, 2^(g+1))
 *               (lo = 2^g - 1, hi = min(2^(g+1) - 1, N)): the query's key
 *               count doubles from one stratum to the next, so short and
 *               long contexts are both represented. The S rows are
 *               allocated equally, capped at each stratum's size, the rows a
 *               capped stratum cannot take shared equally by the others
 *               (water filling; when S does not divide evenly the largest
 *               strata get the one extra row each). With S >= (strata of 1
 *               token) + 2 * (the others) every stratum of >= 2 tokens gets
 *               >= 2 rows, so its variance is estimable. A simple random
 *               sample without replacement within each stratum.
 *   last        the last S tokens [N - S, N), all computed: a census of a
 *               population that is only those tokens (pop_lo = N - S).
 *   S >= N      every token, any scheme: a census (pop_lo = 0).
 */
#ifndef RL_SAMPLE_H
#define RL_SAMPLE_H

#include <stdint.h>

#include "core/rl_status.h"

typedef enum rl_rows_scheme {
    RL_ROWS_UNIFORM,
    RL_ROWS_LOG_GROUPS,
    RL_ROWS_LAST,
    RL_ROWS_SCHEME_COUNT
} rl_rows_scheme;

/* The scheme names in enum order, for an enum parameter's choices. */
#define RL_ROWS_CHOICES "uniform|log_groups|last"

/* "uniform", "log_groups", "last"; "?" for a value outside the enum. */
const char *rl_rows_scheme_name(rl_rows_scheme s);
/* name -> *out: 0 ok, -1 unknown (or NULL) name, *out untouched. */
int rl_rows_scheme_parse(const char *name, rl_rows_scheme *out);

/* log_groups needs floor(log2 N) + 1 <= 32 strata at N <= 2^31. */
#define RL_ROWS_MAX_STRATA 64
/* The largest token count a plan takes: rows are stored as uint32_t. */
#define RL_ROWS_MAX_TOKENS (UINT64_C(1) << 31)

typedef struct rl_rows_plan {
    rl_rows_scheme scheme;
    uint64_t tokens;   /* N */
    uint32_t n_rows;   /* rows drawn: min(S, N) */
    uint32_t *rows;    /* [n_rows] token indices < N, strictly ascending; malloc'd, owned */
    uint32_t n_strata; /* >= 1 */
    /* stratum g = tokens [lo[g], hi[g]): contiguous, disjoint, ascending */
    uint64_t lo[RL_ROWS_MAX_STRATA], hi[RL_ROWS_MAX_STRATA];
    uint32_t drawn[RL_ROWS_MAX_STRATA]; /* rows drawn in stratum g (they sum to n_rows) */
    uint64_t pop_lo;                    /* the population is tokens [pop_lo, N) */
} rl_rows_plan;

/* Fills *p with the plan of scheme s over tokens N with S rows, drawn from
 * the RNG stream (seed, "query_rows"): the same arguments give the same rows
 * on every machine. O(S log S) time and O(S) memory, whatever N. *p is
 * zeroed first, so rl_rows_plan_free is safe after a failure too.
 * Returns RL_ERR_ARG for N = 0, S = 0, N > 2^31 or an unknown scheme,
 * RL_ERR_NOMEM when the rows cannot be allocated. */
rl_status rl_rows_plan_make(rl_rows_scheme s, uint64_t tokens, uint64_t rows, uint64_t seed,
                            rl_rows_plan *p, rl_error *err);
/* The fewest rows S with which scheme s over N tokens gives the mean over
 * its whole population and its 95 % interval (every stratum of two or more
 * tokens two rows: its variance is estimable; fewer, and
 * rl_rows_estimate's mean is NaN): log_groups (strata of one token) + 2 x
 * (the other strata), 2N/log2 N-like growth: 18 at N = 512, 20 at 1024,
 * 40 at 2^20; uniform 2; last 1 (a census of its population). 1 when
 * N = 1. Kinds refuse a query_rows below it at load. */
uint64_t rl_rows_min_rows(rl_rows_scheme s, uint64_t tokens);
/* Frees p's rows and zeroes it; p zeroed or NULL: nothing. */
void rl_rows_plan_free(rl_rows_plan *p);

typedef struct rl_estimate {
    double mean, lo, hi; /* 95 % interval [lo, hi]; lo = hi = mean for a census */
    double se;           /* standard error (0 for a census) */
    double df;           /* degrees of freedom of the t quantile (0: census or none) */
    uint64_t n;          /* sampled rows inside the range */
    uint64_t population; /* tokens of the range inside the plan's population */
    int exact;           /* 1: every token of the range was computed (a census) */
} rl_estimate;

/* The mean of the values over the tokens of D = [t0, t1) ∩ [pop_lo, N),
 * from y: [p->n_rows] doubles, y[r] the value of row p->rows[r].
 *
 * Stratified estimator: stratum g's part D_g = [lo_g, hi_g) ∩ D holds N_g
 * tokens and the n_g plan rows inside it, a simple random sample of D_g
 * given n_g (conditional SRS), so
 *   mean = sum_g (N_g / N_D) ybar_g,
 *   Var  = sum_g (N_g / N_D)^2 (1 - n_g / N_g) s_g^2 / n_g
 * (s_g^2 the unbiased sample variance; a fully computed part adds 0), and
 * [lo, hi] = mean ± rl_t975(df) * sqrt(Var), df = sum of (n_g - 1) over the
 * parts not fully computed (the ones whose s_g^2 enter Var).
 *
 * Not estimable: when some D_g with N_g > 0 has n_g = 0 (nothing seen) or
 * n_g = 1 < N_g (no variance), mean, lo, hi and se are NaN, exact is 0, n
 * and population are filled. An empty D: n = 0, population = 0, all NaN.
 * A census (n_g = N_g for every part): exact = 1, lo = hi = mean, se = 0. */
void rl_rows_estimate(const rl_rows_plan *p, const double *y, uint64_t t0, uint64_t t1,
                      rl_estimate *e);

/* Two-sided 95 % Student-t quantile (the 0.975 quantile) for df degrees of
 * freedom, non-integer df allowed: closed forms at df = 1 and 2; Hill's
 * (1970) algorithm 396 for df >= 3 (within 1e-5 of the tables); in
 * 1 < df < 3, where Hill alone is up to 5 % off, Hill refined by Newton
 * steps on the exact t tail (1e-9). +inf for df < 1 or NaN. */
double rl_t975(double df);

/* Ordinary least squares y = a + b x over n points (bench attention --scale
 * fits ln t on ln N: b is the cost exponent). se_b = sqrt(s^2 / Sxx) with
 * s^2 = RSS / (n - 2) and Sxx = sum (x - xbar)^2; [lo, hi] = b ± rl_t975(n - 2)
 * se_b, the 95 % interval of the slope under independent normal errors.
 * n < 2 or all x equal: everything NaN; n = 2: a and b exact, se_b, lo, hi
 * NaN (no residual degree of freedom). */
typedef struct rl_line {
    double a, b;     /* intercept, slope */
    double se_b;     /* standard error of b */
    double lo, hi;   /* 95 % interval of b */
    double r2;       /* coefficient of determination (1 for a perfect line) */
    uint32_t n;      /* points */
} rl_line;
void rl_line_fit(const double *x, const double *y, uint32_t n, rl_line *fit);

#endif
