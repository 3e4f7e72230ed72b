/* rl_sample.c — row plans (simple random and stratified samples of query
 * rows) and the design-based estimator of a range's mean. */
#include "core/rl_sample.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"

/* c_std=c11 (strict) defines no rl_pi */
static const double rl_pi = 3.14159265358979323846;

static const char *const scheme_names[RL_ROWS_SCHEME_COUNT] = {"uniform", "log_groups", "last"};

const char *rl_rows_scheme_name(rl_rows_scheme s)
{
    return (unsigned)s < RL_ROWS_SCHEME_COUNT ? scheme_names[s] : "?";
}

int rl_rows_scheme_parse(const char *name, rl_rows_scheme *out)
{
    if (!name)
        return -1;
    for (unsigned i = 0; i < RL_ROWS_SCHEME_COUNT; i++)
        if (!strcmp(name, scheme_names[i])) {
            *out = (rl_rows_scheme)i;
            return 0;
        }
    return -1;
}

/* Uniform integer in [0, n), n >= 1: rejection of the low 2^64 mod n values
 * so every residue is equally likely (a bare modulo favours small ones). */
static uint64_t rng_below(rl_rng *rng, uint64_t n)
{
    uint64_t threshold = (0 - n) % n;
    for (;;) {
        uint64_t r = rl_rng_u64(rng);
        if (r >= threshold)
            return r % n;
    }
}

/* An open-addressing set of token indices for Floyd's algorithm; the slot
 * value UINT32_MAX is free (tokens are < 2^31). */
typedef struct row_set {
    uint32_t *slot;
    uint64_t mask;
} row_set;

/* Returns 1 if v was inserted, 0 if already present. */
static int row_set_insert(row_set *s, uint32_t v)
{
    uint64_t h = ((uint64_t)v * UINT64_C(0x9E3779B97F4A7C15)) >> 17;
    for (uint64_t i = h & s->mask;; i = (i + 1) & s->mask) {
        if (s->slot[i] == v)
            return 0;
        if (s->slot[i] == UINT32_MAX) {
            s->slot[i] = v;
            return 1;
        }
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* out[0..k): a simple random sample without replacement of k tokens of
 * [lo, lo + n), k < n, ascending. Floyd's algorithm (Bentley & Floyd 1987):
 * k draws whatever n, where selection sampling would walk all n tokens. */
static rl_status srs(rl_rng *rng, uint64_t lo, uint64_t n, uint32_t k, uint32_t *out,
                     rl_error *err)
{
    uint64_t cap = 1;
    while (cap < 2 * (uint64_t)k) /* load <= 1/2: short probes */
        cap <<= 1;
    row_set set = {malloc(cap * sizeof *set.slot), cap - 1};
    if (!set.slot)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory for the set of %u query rows", k);
    memset(set.slot, 0xff, cap * sizeof *set.slot);
    uint32_t m = 0;
    for (uint64_t j = n - k; j < n; j++) {
        /* t uniform in [0, j]: taken if new, else j (new, as j was never
         * drawn before), so every k-subset ends equally likely. */
        uint32_t t = (uint32_t)(lo + rng_below(rng, j + 1));
        if (!row_set_insert(&set, t)) {
            t = (uint32_t)(lo + j);
            row_set_insert(&set, t);
        }
        out[m++] = t;
    }
    free(set.slot);
    qsort(out, k, sizeof *out, cmp_u32);
    return RL_OK;
}

/* log_groups' strata of N tokens: i + 1 in [2^g, 2^(g+1)) for g = 0 ..
 * floor(log2 N), the last one cut at N. */
static void log_groups(rl_rows_plan *p, uint64_t tokens)
{
    for (uint32_t g = 0; (UINT64_C(1) << g) <= tokens; g++) {
        uint64_t hi = (UINT64_C(1) << (g + 1)) - 1;
        p->lo[g] = (UINT64_C(1) << g) - 1;
        p->hi[g] = hi < tokens ? hi : tokens;
        p->n_strata = g + 1;
    }
}

uint64_t rl_rows_min_rows(rl_rows_scheme s, uint64_t tokens)
{
    if (s == RL_ROWS_LAST || tokens < 2)
        return tokens ? 1 : 0; /* a census of its population: exact */
    if (s != RL_ROWS_LOG_GROUPS)
        return 2;
    /* every stratum of one token its row, every other two (allocate_equal
     * gives each stratum min(size, L) rows, L >= 2 once S reaches this) */
    rl_rows_plan p = {0};
    log_groups(&p, tokens);
    uint64_t n = 0;
    for (uint32_t g = 0; g < p.n_strata; g++)
        n += p.hi[g] - p.lo[g] < 2 ? p.hi[g] - p.lo[g] : 2;
    return n;
}

/* Equal allocation with caps (water filling): the largest level L with
 * sum_g min(size_g, L) <= S, then the rows left one each to the largest
 * strata still below their size (they carry the most weight in a mean). */
static void allocate_equal(rl_rows_plan *p, uint64_t s)
{
    uint64_t lo = 0, hi = s; /* sum at L = 0 is 0 <= s; find the largest fitting L */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2, sum = 0;
        for (uint32_t g = 0; g < p->n_strata; g++) {
            uint64_t size = p->hi[g] - p->lo[g];
            sum += size < mid ? size : mid;
        }
        if (sum <= s)
            lo = mid;
        else
            hi = mid - 1;
    }
    uint64_t left = s;
    for (uint32_t g = 0; g < p->n_strata; g++) {
        uint64_t size = p->hi[g] - p->lo[g];
        p->drawn[g] = (uint32_t)(size < lo ? size : lo);
        left -= p->drawn[g];
    }
    /* fewer rows left than strata below their cap, or L + 1 would fit */
    for (uint32_t i = 0; left && i < p->n_strata; i++) {
        uint32_t g = p->n_strata - 1 - i;
        if (p->drawn[g] < p->hi[g] - p->lo[g]) {
            p->drawn[g]++;
            left--;
        }
    }
}

rl_status rl_rows_plan_make(rl_rows_scheme s, uint64_t tokens, uint64_t rows, uint64_t seed,
                            rl_rows_plan *p, rl_error *err)
{
    assert(p);
    memset(p, 0, sizeof *p);
    if ((unsigned)s >= RL_ROWS_SCHEME_COUNT)
        return rl_fail(err, RL_ERR_ARG, "query rows: unknown scheme %d (choices: %s)", (int)s,
                       RL_ROWS_CHOICES);
    if (tokens == 0 || tokens > RL_ROWS_MAX_TOKENS)
        return rl_fail(err, RL_ERR_ARG,
                       "query rows: %llu tokens is outside 1..%llu", (unsigned long long)tokens,
                       (unsigned long long)RL_ROWS_MAX_TOKENS);
    if (rows == 0)
        return rl_fail(err, RL_ERR_ARG, "query rows: %llu rows requested, at least 1 needed",
                       (unsigned long long)rows);
    p->scheme = s;
    p->tokens = tokens;
    p->n_rows = (uint32_t)(rows < tokens ? rows : tokens);
    p->rows = malloc((size_t)p->n_rows * sizeof *p->rows);
    if (!p->rows) {
        rl_rows_plan_free(p);
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory for %u query rows", p->n_rows);
    }
    int census = rows >= tokens;
    if (s == RL_ROWS_LOG_GROUPS) {
        log_groups(p, tokens);
        allocate_equal(p, p->n_rows);
    } else {
        p->n_strata = 1;
        p->pop_lo = s == RL_ROWS_LAST && !census ? tokens - p->n_rows : 0;
        p->lo[0] = p->pop_lo;
        p->hi[0] = tokens;
        p->drawn[0] = p->n_rows;
    }
    rl_rng rng;
    rl_rng_seed(&rng, seed, "query_rows");
    uint32_t at = 0;
    for (uint32_t g = 0; g < p->n_strata; g++) {
        uint64_t size = p->hi[g] - p->lo[g];
        if (p->drawn[g] == size) { /* the whole stratum: no draw needed */
            for (uint64_t t = p->lo[g]; t < p->hi[g]; t++)
                p->rows[at++] = (uint32_t)t;
        } else if (p->drawn[g]) {
            rl_status st = srs(&rng, p->lo[g], size, p->drawn[g], p->rows + at, err);
            if (st) {
                rl_rows_plan_free(p);
                return st;
            }
            at += p->drawn[g];
        }
    }
    return RL_OK;
}

void rl_rows_plan_free(rl_rows_plan *p)
{
    if (!p)
        return;
    free(p->rows);
    memset(p, 0, sizeof *p);
}

void rl_rows_estimate(const rl_rows_plan *p, const double *y, uint64_t t0, uint64_t t1,
                      rl_estimate *e)
{
    assert(p && e && (y || !p->n_rows) && p->n_strata <= RL_ROWS_MAX_STRATA);
    *e = (rl_estimate){.mean = NAN, .lo = NAN, .hi = NAN, .se = NAN};
    uint64_t a = t0 > p->pop_lo ? t0 : p->pop_lo, b = t1 < p->tokens ? t1 : p->tokens;
    if (a >= b)
        return;
    /* Per stratum part: N_g, n_g and Welford's running mean and sum of
     * squared deviations (one pass, no cancellation of large sums). */
    uint64_t big_n[RL_ROWS_MAX_STRATA] = {0}, small_n[RL_ROWS_MAX_STRATA] = {0};
    double mean[RL_ROWS_MAX_STRATA] = {0}, m2[RL_ROWS_MAX_STRATA] = {0};
    for (uint32_t g = 0; g < p->n_strata; g++) {
        uint64_t lo = p->lo[g] > a ? p->lo[g] : a, hi = p->hi[g] < b ? p->hi[g] : b;
        big_n[g] = hi > lo ? hi - lo : 0;
        e->population += big_n[g];
    }
    /* rows ascending and strata ascending: one walk pairs each row with its
     * stratum */
    uint32_t g = 0;
    for (uint32_t r = 0; r < p->n_rows; r++) {
        uint64_t t = p->rows[r];
        if (t < a || t >= b)
            continue;
        while (g < p->n_strata && t >= p->hi[g])
            g++;
        if (g == p->n_strata || t < p->lo[g])
            continue; /* outside every stratum: cannot happen in a made plan */
        uint64_t k = ++small_n[g];
        double d = y[r] - mean[g];
        mean[g] += d / (double)k;
        m2[g] += d * (y[r] - mean[g]);
    }
    double total = (double)e->population, m = 0, var = 0, df = 0;
    int exact = 1, estimable = 1;
    for (g = 0; g < p->n_strata; g++) {
        if (!big_n[g])
            continue;
        e->n += small_n[g];
        if (small_n[g] == big_n[g]) {
            m += (double)big_n[g] / total * mean[g];
            continue;
        }
        exact = 0;
        if (small_n[g] < 2) {
            estimable = 0;
            continue;
        }
        double w = (double)big_n[g] / total, nn = (double)small_n[g];
        double s2 = m2[g] / (nn - 1);
        m += w * mean[g];
        var += w * w * (1 - nn / (double)big_n[g]) * s2 / nn;
        df += nn - 1;
    }
    if (!estimable)
        return;
    e->mean = m;
    if (exact) {
        e->exact = 1;
        e->lo = e->hi = m;
        e->se = 0;
        return;
    }
    e->se = sqrt(var);
    e->df = df;
    double half = rl_t975(df) * e->se;
    e->lo = m - half;
    e->hi = m + half;
}

/* Continued fraction of the incomplete beta function (modified Lentz), the
 * part of I_x(a, b) that converges fast for x < (a + 1) / (a + b + 2). */
static double beta_cf(double a, double b, double x)
{
    const double tiny = 1e-300;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    d = 1 / (fabs(d) < tiny ? tiny : d);
    double h = d;
    for (int m = 1; m <= 300; m++) {
        for (int half = 0; half < 2; half++) {
            double num = half ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                              : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
            d = 1 + num * d;
            d = 1 / (fabs(d) < tiny ? tiny : d);
            c = 1 + num / c;
            c = fabs(c) < tiny ? tiny : c;
            h *= d * c;
            if (half && fabs(d * c - 1) < 1e-15)
                return h;
        }
    }
    return h;
}

/* P(|T| > t) for Student's t with df degrees of freedom: the regularized
 * incomplete beta I_x(df / 2, 1 / 2) at x = df / (df + t^2). */
static double t_two_tail(double t, double df)
{
    double a = df / 2, b = 0.5, x = df / (df + t * t);
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1) / (a + b + 2))
        return front * beta_cf(a, b, x) / a;
    return 1 - front * beta_cf(b, a, 1 - x) / b;
}

double rl_t975(double df)
{
    if (!(df >= 1))
        return INFINITY;
    const double p = 0.05; /* two-sided tail probability */
    if (df == 1)
        return 1 / tan(rl_pi / 2 * p); /* Cauchy: tan(pi (0.975 - 1/2)) */
    if (df == 2)
        return sqrt(2 / (p * (2 - p)) - 2);
    /* Hill, "Algorithm 396: Student's t-quantiles", CACM 13 (1970) 619-620,
     * as R's qt uses it for non-integer df: an expansion about the normal
     * quantile in a = 1 / (df - 1/2), far more accurate at small df than the
     * plain Cornish-Fisher series in 1 / df (which is 4e-3 off at df = 3). */
    const double x = -1.959963984540054; /* normal quantile of p / 2 */
    double a = 1 / (df - 0.5), b = 48 / (a * a);
    double c = ((20700 * a / b - 98) * a - 16) * a + 96.36;
    double d = ((94.5 / (b + c) - 3) / b + 1) * sqrt(a * rl_pi / 2) * df;
    double y = pow(d * p, 2 / df);
    if (y > 0.05 + a) {
        double x2 = x * x;
        if (df < 5)
            c += 0.3 * (df - 4.5) * (x + 0.6);
        c = (((0.05 * d * x - 5) * x - 7) * x - 2) * x + b + c;
        y = (((((0.4 * x2 + 6.3) * x2 + 36) * x2 + 94.5) / c - x2 - 3) / b + 1) * x;
        y = expm1(a * y * y);
    } else {
        y = ((1 / (((df + 6) / (df * y) - 0.089 * d - 0.822) * (df + 2) * 3) + 0.5 / (df + 4)) * y -
             1) * (df + 1) / (df + 2) + 1 / y;
    }
    double t = sqrt(df * y);
    /* Below df = 3 Hill is up to 5 % off (df = 1.2); Newton steps on the
     * exact tail, P(|T| > t) = 0.05 with slope -2 pdf(t), make it exact. */
    if (df < 3) {
        double k = exp(lgamma((df + 1) / 2) - lgamma(df / 2)) / sqrt(df * rl_pi);
        for (int i = 0; i < 8; i++) {
            double pdf = k * pow(1 + t * t / df, -(df + 1) / 2);
            double step = (t_two_tail(t, df) - p) / (2 * pdf);
            t += step;
            if (fabs(step) < 1e-13 * t)
                break;
        }
    }
    return t;
}

void rl_line_fit(const double *x, const double *y, uint32_t n, rl_line *f)
{
    f->a = f->b = f->se_b = f->lo = f->hi = f->r2 = NAN;
    f->n = n;
    if (n < 2)
        return;
    double mx = 0, my = 0;
    for (uint32_t i = 0; i < n; i++) {
        mx += x[i];
        my += y[i];
    }
    mx /= n;
    my /= n;
    double sxx = 0, sxy = 0, syy = 0;
    for (uint32_t i = 0; i < n; i++) { /* centred sums: no cancellation of large means */
        sxx += (x[i] - mx) * (x[i] - mx);
        sxy += (x[i] - mx) * (y[i] - my);
        syy += (y[i] - my) * (y[i] - my);
    }
    if (!(sxx > 0))
        return;
    f->b = sxy / sxx;
    f->a = my - f->b * mx;
    double rss = 0;
    for (uint32_t i = 0; i < n; i++) {
        double r = y[i] - (f->a + f->b * x[i]);
        rss += r * r;
    }
    f->r2 = syy > 0 ? 1 - rss / syy : 1;
    if (n < 3)
        return;
    f->se_b = sqrt(rss / (n - 2) / sxx);
    double h = rl_t975((double)(n - 2)) * f->se_b;
    f->lo = f->b - h;
    f->hi = f->b + h;
}
