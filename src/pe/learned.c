/* learned — a trained absolute position table (BERT, Devlin et al. 2019;
 * GPT-2, Radford et al. 2019), added to q and k of every head like the
 * sinusoidal one: q' = q + alpha T[pos_i], k' = k + alpha T[pos_j].
 * T is [max_positions][head_dim], read from a float32/float16 .npy (`path`)
 * or drawn as sigma * N(0, 1) from the stream "learned/table" (row-major),
 * rounded to float32 like a real checkpoint. Positions >= max_positions are
 * the known weakness: an error by default; `beyond` = clamp (use the last
 * row) or wrap (pos mod max_positions) for studies that want to see it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_npy.h"
#include "pe/pe.h"

enum { BEYOND_ERROR = 0, BEYOND_CLAMP = 1, BEYOND_WRAP = 2 };

static const pe_param params[] = {
    {"path", RL_P_STR, "\"\"", 0, 0, NULL,
     ".npy table [max_positions, head_dim] (float32/float16); empty: seeded N(0, sigma^2)"},
    {"max_positions", RL_P_INT, "0", 0, 16777216, NULL,
     "rows of the table; 0: 2048 when seeded, the file's rows with path"},
    {"sigma", RL_P_NUM, "0.02", 0, 1e6, NULL, "standard deviation of the seeded table"},
    {"alpha", RL_P_NUM, "1.0", -1e6, 1e6, NULL, "scale of the added row (q' = q + alpha*T[pos])"},
    {"beyond", RL_P_ENUM, "\"error\"", 0, 0, "error|clamp|wrap",
     "positions >= max_positions: refuse, use the last row, or wrap around"},
};

typedef struct learned_state {
    uint32_t rows, policy;
    double alpha;
    float *table;  /* [rows][head_dim]; a seeded one is drawn at its first read (rows_of) */
    int drawn;     /* 1: table holds its values (a file's, or the seeded draw made) */
    rl_rng rng;    /* the seeded table's stream as create left it */
    double sigma;
} learned_state;

/* The table, drawn on its first read: the runner creates an encoding to
 * validate it and to estimate a run several times before a run reads its
 * rows, and a seeded table of 2^20 x 128 takes seconds to draw. The values
 * are the same whenever they are drawn (the stream was seeded at create).
 * One thread uses an encoding at a time (a run's, in its worker). */
static const float *rows_of(const learned_state *cs, uint32_t d)
{
    learned_state *s = (learned_state *)cs;
    if (!s->drawn) {
        size_t n = (size_t)s->rows * d;
        for (size_t i = 0; i < n; i++)
            s->table[i] = (float)(s->sigma * rl_rng_normal(&s->rng));
        s->drawn = 1;
    }
    return s->table;
}

static void destroy(pe_encoding *e)
{
    learned_state *s = pe_encoding_state(e);
    if (s)
        free(s->table);
    free(s);
}

static rl_status create(pe_encoding *e, rl_error *err)
{
    const pe_shape *sh = pe_encoding_shape(e);
    learned_state *s = calloc(1, sizeof *s);
    if (!s)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    pe_encoding_set_state(e, s);
    const char *b = pe_param_str(e, "beyond");
    s->policy = strcmp(b, "clamp") == 0 ? BEYOND_CLAMP : strcmp(b, "wrap") == 0 ? BEYOND_WRAP
                                                                                 : BEYOND_ERROR;
    s->alpha = pe_param_num(e, "alpha");
    const char *path = pe_param_str(e, "path");
    int64_t mp = pe_param_int(e, "max_positions");
    if (path[0]) {
        rl_npy a;
        uint64_t want[2] = {0, sh->head_dim};
        rl_status st = rl_npy_load(path, &a, err);
        if (st) {
            rl_error_prefix(err, "learned: path");
            rl_error_set_key(err, "path");
            return st;
        }
        want[0] = a.ndim >= 1 ? a.shape[0] : 0;
        if (a.ndim != 2 || a.shape[1] != sh->head_dim || a.shape[0] == 0) {
            char got[96] = "";
            size_t n = 0;
            for (uint32_t i = 0; i < a.ndim; i++)
                n += (size_t)snprintf(got + n, sizeof got - n, "%s%llu", i ? ", " : "",
                                      (unsigned long long)a.shape[i]);
            rl_npy_free(&a);
            return rl_fail_key(err, RL_ERR_ARG, "path",
                               "learned: path: %s has shape (%s), expected "
                               "(max_positions, %u) with head_dim %u",
                               path, got, sh->head_dim, sh->head_dim);
        }
        if (mp && (uint64_t)mp != want[0]) {
            rl_npy_free(&a);
            return rl_fail_key(err, RL_ERR_ARG, "max_positions",
                               "learned: max_positions %lld does not match the %llu rows of %s",
                               (long long)mp, (unsigned long long)want[0], path);
        }
        if (want[0] > 16777216) {
            rl_npy_free(&a);
            return rl_fail_key(err, RL_ERR_ARG, "path",
                               "learned: %s has %llu rows, more than 2^24", path,
                               (unsigned long long)want[0]);
        }
        s->rows = (uint32_t)want[0];
        s->table = a.data; /* ownership moves to the state */
        s->drawn = 1;
    } else {
        s->rows = mp ? (uint32_t)mp : 2048;
        if (s->rows == 0)
            return rl_fail_key(err, RL_ERR_ARG, "max_positions",
                               "learned: max_positions must be at least 1");
        size_t n = (size_t)s->rows * sh->head_dim;
        s->table = malloc(n * sizeof *s->table); /* drawn at the first read (rows_of) */
        if (!s->table)
            return rl_fail(err, RL_ERR_NOMEM, "learned: out of host memory for the table");
        pe_rng_seed(e, "table", &s->rng);
        s->sigma = pe_param_num(e, "sigma");
    }
    pe_param_set_int(e, "max_positions", s->rows);
    /* max_positions of the shape is a count: positions 0 .. max_positions - 1,
     * so a table of exactly N rows serves an N-token run. */
    if (s->policy == BEYOND_ERROR && sh->max_positions > s->rows)
        return rl_fail_key(err, RL_ERR_ARG, "max_positions",
                           "learned: positions 0..%llu need more than the table's %u rows "
                           "(max_positions); set beyond=clamp or beyond=wrap to study that",
                           (unsigned long long)sh->max_positions - 1, s->rows);
    return RL_OK;
}

static rl_status vec_check(const pe_encoding *e, const uint32_t *pos, size_t tokens, rl_error *err)
{
    const learned_state *s = pe_encoding_state(e);
    if (s->policy != BEYOND_ERROR)
        return RL_OK;
    for (size_t t = 0; t < tokens; t++)
        if (pos[t] >= s->rows)
            return rl_fail_key(err, RL_ERR_ARG, "max_positions",
                               "learned: position %u (token %zu) is beyond the table's %u rows "
                               "(max_positions); set beyond=clamp or beyond=wrap to study that",
                               pos[t], t, s->rows);
    return RL_OK;
}

static uint32_t row_of(const learned_state *s, uint32_t p)
{
    if (p < s->rows)
        return p;
    return s->policy == BEYOND_WRAP ? p % s->rows : s->rows - 1;
}

static void vec_ref(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                    uint32_t heads, double *y)
{
    const learned_state *s = pe_encoding_state(e);
    uint32_t d = pe_encoding_shape(e)->head_dim;
    for (size_t t = 0; t < tokens; t++) {
        const float *row = rows_of(s, d) + (size_t)row_of(s, pos[t]) * d;
        for (uint32_t h = 0; h < heads; h++)
            for (uint32_t k = 0; k < d; k++) {
                size_t o = (t * heads + h) * d + k;
                y[o] = (double)x[o] + s->alpha * (double)row[k];
            }
    }
}

/* GPU: fl(x + fl(alpha * T)) with T exact fp32: two roundings, each at most
 * half an ulp of a value <= |x| + |alpha T|: bound ulp32(|x| + |alpha T|). */
static void vec_bound(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                      uint32_t heads, double *bound, double *scale)
{
    const learned_state *s = pe_encoding_state(e);
    uint32_t d = pe_encoding_shape(e)->head_dim;
    for (size_t t = 0; t < tokens; t++) {
        const float *row = rows_of(s, d) + (size_t)row_of(s, pos[t]) * d;
        for (uint32_t h = 0; h < heads; h++)
            for (uint32_t k = 0; k < d; k++) {
                size_t o = (t * heads + h) * d + k;
                double m = fabs(x[o]) + fabs(s->alpha * row[k]);
                bound[o] = rl_ulp32(m);
                scale[o] = m;
            }
    }
}

static rl_status vec_gpu_create(pe_vec_gpu *g, rl_error *err)
{
    const learned_state *s = pe_encoding_state(g->e);
    uint64_t n = (uint64_t)s->rows * pe_encoding_shape(g->e)->head_dim;
    if (n > UINT32_MAX)
        return rl_fail(err, RL_ERR_LIMIT,
                       "learned: table of %u rows x %u dims exceeds the kernel's 32-bit index",
                       s->rows, pe_encoding_shape(g->e)->head_dim);
    return pe_add_create(g, PE_ADD_TABLE, s->policy, s->rows, (float)s->alpha,
                         rows_of(s, pe_encoding_shape(g->e)->head_dim),
                         (uint64_t)s->rows * pe_encoding_shape(g->e)->head_dim, err);
}

static rl_status inspect(const pe_encoding *e, int64_t r0, int64_t r1, json_t *obj, rl_error *err)
{
    (void)err;
    /* Rows r0..r1 of the table (clipped to it): "position" and "table". */
    const learned_state *s = pe_encoding_state(e);
    uint32_t d = pe_encoding_shape(e)->head_dim;
    json_t *ps = json_array(), *tb = json_array();
    for (int64_t p = r0 < 0 ? 0 : r0; p <= r1 && p < (int64_t)s->rows; p++) {
        json_array_append_new(ps, json_integer(p));
        json_t *row = json_array();
        for (uint32_t k = 0; k < d; k++)
            json_array_append_new(row, json_real(rows_of(s, d)[(size_t)p * d + k]));
        json_array_append_new(tb, row);
    }
    json_object_set_new(obj, "position", ps);
    json_object_set_new(obj, "table", tb);
    return RL_OK;
}

/* `ropelab check` rows: {label, params, tokens, heads, kv_heads, head_dim,
 * pos_cap_log2, quick}. */
static const pe_check_case vec_checks[] = {
    {"learned/wrap", "{\"beyond\": \"wrap\", \"max_positions\": 1000}", 33, 4, 0, 64, 0, 1},
    {"learned/error", "{}", 257, 2, 0, 128, 11, 0},
    {"learned/clamp", "{\"beyond\": \"clamp\", \"max_positions\": 512}", 64, 8, 0, 32, 0, 0},
};

const pe_family pe_family_learned = {
    .name = "learned",
    .title = "learned absolute position table, added to q and k",
    .paper = "Devlin et al. 2019 (BERT), arXiv:1810.04805; Radford et al. 2019 (GPT-2)",
    .acts = PE_ACTS_VECTORS,
    .params = params,
    .file_keys = "path",
    .n_params = RL_ARRAY_LEN(params),
    .formula = "q' = q + alpha*T[i], k' = k + alpha*T[j]; T [max_positions][head_dim]",
    .ops = {
        .create = create,
        .destroy = destroy,
        .vec_check = vec_check,
        .vec_ref = vec_ref,
        .vec_bound = vec_bound,
        .vec_gpu_create = vec_gpu_create,
        .vec_gpu_record = pe_add_record,
        .vec_gpu_destroy = pe_add_destroy,
        .inspect = inspect,
    },
    .vec_checks = vec_checks,
    .n_vec_checks = RL_ARRAY_LEN(vec_checks),
};
