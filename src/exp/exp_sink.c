/* exp_sink.c — CSV tables and summary metrics of one run. */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "core/rl_csv.h"
#include "exp/exp.h"

rl_status exp_sink_init(exp_sink *s, const char *dir, rl_error *err)
{
    memset(s, 0, sizeof *s);
    if (strlen(dir) >= sizeof s->dir - 80)
        return rl_fail(err, RL_ERR_ARG, "%s: output path too long", dir);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    s->metrics = json_object();
    s->verification = json_array();
    s->tables = json_array();
    s->encoding_used = json_object();
    if (!s->metrics || !s->verification || !s->tables || !s->encoding_used) {
        exp_sink_free(s);
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory creating the result sink");
    }
    return RL_OK;
}

void exp_sink_free(exp_sink *s)
{
    if (s->fp)
        fclose(s->fp);
    s->fp = NULL;
    json_decref(s->metrics);
    json_decref(s->verification);
    json_decref(s->tables);
    json_decref(s->encoding_used);
    s->metrics = s->verification = s->tables = s->encoding_used = NULL;
}

rl_status exp_sink_end_table(exp_sink *s, rl_error *err)
{
    if (!s->fp)
        return RL_OK;
    int bad = ferror(s->fp);
    bad |= fclose(s->fp) != 0;
    s->fp = NULL;
    json_t *t = json_array_get(s->tables, json_array_size(s->tables) - 1);
    json_object_set_new(t, "rows", json_integer((json_int_t)s->rows));
    if (bad)
        return rl_fail(err, RL_ERR_IO, "%s/%s.csv: write failed: %s", s->dir, s->table,
                       strerror(errno));
    return RL_OK;
}

static int name_ok(const char *n)
{
    if (!*n || strlen(n) >= 64)
        return 0;
    for (; *n; n++)
        if (!((*n >= 'a' && *n <= 'z') || (*n >= '0' && *n <= '9') || *n == '_'))
            return 0;
    return 1;
}

/* Opens dir/<file>.csv for table `name` (length 0: none). */
static rl_status sink_open(exp_sink *s, const char *file, const char *name, uint64_t length,
                           uint32_t n_cols, const char *const *cols, rl_error *err)
{
    rl_status st = exp_sink_end_table(s, err);
    if (st)
        return st;
    assert(name_ok(name) && n_cols >= 2 && n_cols <= EXP_MAX_COLS);
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.csv", s->dir, file);
    s->fp = fopen(path, "w");
    if (!s->fp)
        return rl_fail(err, RL_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    snprintf(s->table, sizeof s->table, "%s", file);
    s->n_cols = n_cols;
    s->rows = 0;
    json_t *c = json_array();
    for (uint32_t i = 0; i < n_cols; i++) {
        assert(name_ok(cols[i]));
        if (i)
            fputc(',', s->fp);
        rl_csv_field(s->fp, cols[i]);
        json_array_append_new(c, json_string(cols[i]));
    }
    fputc('\n', s->fp);
    /* name: the file (without .csv); table and length: what results.csv
     * calls it */
    json_t *t = json_pack("{s:s,s:o}", "name", file, "columns", c);
    if (length) {
        json_object_set_new(t, "table", json_string(name));
        json_object_set_new(t, "length", json_integer((json_int_t)length));
    }
    json_array_append_new(s->tables, t);
    return RL_OK;
}

rl_status exp_sink_table(exp_sink *s, const char *name, uint32_t n_cols,
                         const char *const *cols, rl_error *err)
{
    return sink_open(s, name, name, 0, n_cols, cols, err);
}

rl_status exp_sink_table_at(exp_sink *s, const char *name, uint64_t length, uint32_t n_cols,
                            const char *const *cols, rl_error *err)
{
    assert(length > 0);
    char file[64];
    snprintf(file, sizeof file, "%s_n%llu", name, (unsigned long long)length);
    return sink_open(s, file, name, length, n_cols, cols, err);
}

rl_status exp_sink_row(exp_sink *s, const double *vals, rl_error *err)
{
    assert(s->fp);
    for (uint32_t i = 0; i < s->n_cols; i++) {
        if (isfinite(vals[i]))
            fprintf(s->fp, "%s%.17g", i ? "," : "", vals[i]);
        else
            fprintf(s->fp, "%s%s", i ? "," : "", isnan(vals[i]) ? "nan" : vals[i] > 0 ? "inf" : "-inf");
    }
    if (fputc('\n', s->fp) == EOF)
        return rl_fail(err, RL_ERR_IO, "%s/%s.csv: write failed: %s", s->dir, s->table,
                       strerror(errno));
    s->rows++;
    return RL_OK;
}

void exp_sink_progress(exp_sink *s, const char *phase, double done, double total)
{
    if (s->progress)
        s->progress(s->progress_user, phase, done, total);
}

void exp_sink_metric(exp_sink *s, const char *name, double value)
{
    json_object_set_new(s->metrics, name, isfinite(value) ? json_real(value) : json_null());
}

/* A verification entry: the one tolerance record (verify/vf_json.c), its
 * check named by "what", "detail" the words beside it. */
static void add_record(exp_sink *s, const char *what, json_t *rec, const char *detail)
{
    if (!rec) { /* out of memory: a verdict that cannot be recorded is not a pass */
        s->failed_verification = 1;
        return;
    }
    json_object_set_new(rec, "what", json_string(what));
    json_object_set_new(rec, "detail", json_string(detail ? detail : ""));
    json_array_append_new(s->verification, rec);
}

int exp_sink_verify_stats(exp_sink *s, const char *what, const vf_stats *v, const char *detail)
{
    if (!v->pass)
        s->failed_verification = 1;
    add_record(s, what, vf_stats_json(v), detail);
    return v->pass;
}

void exp_sink_verify(exp_sink *s, const char *what, double max_error, double bound, int pass,
                     const char *detail)
{
    if (!pass)
        s->failed_verification = 1;
    add_record(s, what, vf_scalar_json(max_error, bound, pass), detail);
}
