/* run_results.c — OUT/results.csv: every run's metrics and table values
 * in tidy long format, one value per row (columns: docs/runner.md
 * "results.csv"). */
#include <stdio.h>
#include <string.h>

#include "core/rl_csv.h"
#include "core/rl_fs.h"
#include "core/rl_util.h"
#include "run/run_int.h"

void run_json_text(const json_t *v, char *buf, size_t cap)
{
    if (!v)
        buf[0] = '\0';
    else if (json_is_string(v))
        snprintf(buf, cap, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, cap, "%.17g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, cap, "%s", json_is_true(v) ? "true" : "false");
    else
        buf[0] = '\0';
}

/* The fixed columns every row carries, swept or not: who ran (run, device,
 * kind, status) and what (encoding, its type and factor, model shape,
 * seed), from the run's resolved description. */
static const char *const fixed_cols[] = {"run_id",   "device",   "kind",     "status",
                                         "encoding", "type",     "factor",   "head_dim",
                                         "heads",    "kv_heads", "train_len", "seed"};

static void row_prefix(FILE *fp, const json_t *sum, const json_t *keys)
{
    char buf[512];
    const json_t *res = json_object_get(sum, "resolved");
    const json_t *enc = json_object_get(res, "encoding"), *model = json_object_get(res, "model");
    const json_t *vals[] = {
        json_object_get(sum, "run_id"),   json_object_get(sum, "device"),
        json_object_get(sum, "kind"),     json_object_get(sum, "status"),
        json_object_get(enc, "name"),     json_object_get(enc, "type"),
        /* the factor given, else the one the family derived (longrope) */
        json_object_get(enc, "factor") ? json_object_get(enc, "factor")
                                       : json_object_get(json_object_get(sum, "encoding_resolved"),
                                                         "factor"),
        json_object_get(model, "head_dim"),
        json_object_get(model, "heads"),  json_object_get(model, "kv_heads"),
        json_object_get(model, "train_len"), json_object_get(res, "seed")};
    _Static_assert(sizeof vals / sizeof vals[0] == sizeof fixed_cols / sizeof fixed_cols[0],
                   "one value per fixed column");
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        run_json_text(vals[i], buf, sizeof buf);
        if (i)
            fputc(',', fp);
        rl_csv_field(fp, buf);
    }
    const json_t *sw = json_object_get(sum, "swept");
    for (size_t k = 0; k < json_array_size(keys); k++) {
        run_json_text(json_object_get(sw, json_string_value(json_array_get(keys, k))), buf,
                      sizeof buf);
        fputc(',', fp);
        rl_csv_field(fp, buf);
    }
}

/* The columns after metric, length, x, value: unit, title, x_name, x_unit,
 * x_title, plot — from the kind's declaration (exp_metric; a metric the
 * kind does not declare gets its own name as title). */
static void row_meaning(FILE *fp, const exp_kind *k, const char *metric, const char *xname,
                        const exp_metric *xm)
{
    const exp_metric *m = exp_metric_find(k, metric);
    fputc(',', fp);
    rl_csv_field(fp, m ? m->unit : "");
    fputc(',', fp);
    rl_csv_field(fp, m ? m->title : metric);
    fputc(',', fp);
    rl_csv_field(fp, xname ? xname : "");
    fputc(',', fp);
    rl_csv_field(fp, xm ? xm->unit : "");
    fputc(',', fp);
    rl_csv_field(fp, xm ? xm->title : xname ? xname : "");
    fputc(',', fp);
    rl_plot_words_write(fp, ((m ? m->plot : 0) | (xm ? xm->plot : 0)) & ~(unsigned)RL_PLOT_LENGTH);
    fputc('\n', fp);
}

/* Appends the tidy rows of one run directory: each summary metric, then
 * each value of each table (one row per x and column). */
static void results_rows(FILE *fp, const char *run_dir, const json_t *sum, const json_t *keys)
{
    const char *mk;
    json_t *mv;
    char buf[64];
    const char *kn = json_string_value(json_object_get(sum, "kind"));
    const exp_kind *kind = kn ? exp_find(kn) : NULL;
    json_object_foreach(json_object_get(sum, "metrics"), mk, mv) {
        row_prefix(fp, sum, keys);
        run_json_text(mv, buf, sizeof buf);
        fputc(',', fp);
        rl_csv_field(fp, mk);
        fprintf(fp, ",,,%s", buf[0] ? buf : "nan");
        row_meaning(fp, kind, mk, NULL, NULL);
    }
    const json_t *tables = json_object_get(sum, "tables");
    for (size_t t = 0; t < json_array_size(tables); t++) {
        const json_t *tab = json_array_get(tables, t);
        const char *file = json_string_value(json_object_get(tab, "name"));
        const char *tn = json_string_value(json_object_get(tab, "table"));
        json_int_t length = json_integer_value(json_object_get(tab, "length"));
        if (!file)
            continue;
        /* a run directory written before tables carried their length
         * (retrieval_n<N>.csv, merged into a new results.csv) */
        unsigned long long old_n = 0;
        int used = 0;
        if (!tn && sscanf(file, "retrieval_n%llu%n", &old_n, &used) == 1 && !file[used] &&
            old_n > 0) {
            tn = "retrieval_distance";
            length = (json_int_t)old_n;
        }
        if (!tn)
            tn = file;
        char path[1400];
        snprintf(path, sizeof path, "%s/%s.csv", run_dir, file);
        rl_csv in;
        if (rl_csv_read(path, &in, NULL) != RL_OK || in.n == 0) {
            rl_csv_free(&in);
            continue;
        }
        const rl_csv_row *head = &in.rows[0];
        size_t nc = head->n < EXP_MAX_COLS ? head->n : EXP_MAX_COLS;
        char metric[EXP_MAX_COLS][160];
        for (size_t c = 0; c < nc; c++)
            snprintf(metric[c], sizeof metric[0], "%s.%s", tn, head->f[c]);
        const exp_metric *xm = nc ? exp_metric_find(kind, metric[0]) : NULL;
        for (size_t r = 1; r < in.n; r++) {
            const rl_csv_row *row = &in.rows[r];
            for (size_t c = 1; c < row->n && c < nc; c++) {
                row_prefix(fp, sum, keys);
                fputc(',', fp);
                rl_csv_field(fp, metric[c]);
                /* length: the table's context length, or x when x is one */
                if (length > 0)
                    fprintf(fp, ",%lld", (long long)length);
                else if (xm && (xm->plot & RL_PLOT_LENGTH)) {
                    fputc(',', fp);
                    rl_csv_field(fp, row->f[0]);
                } else {
                    fputc(',', fp);
                }
                fputc(',', fp);
                rl_csv_field(fp, row->f[0]);
                fputc(',', fp);
                rl_csv_field(fp, row->f[c]);
                row_meaning(fp, kind, metric[c], head->f[0], xm);
            }
        }
        rl_csv_free(&in);
    }
}

rl_status run_results_write(const char *out, const json_t *keys, const json_t *dirs,
                            rl_error *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/results.csv", out);
    rl_atomic_file af;
    rl_status st = rl_atomic_open(&af, path, err);
    if (st)
        return st;
    for (size_t i = 0; i < sizeof fixed_cols / sizeof fixed_cols[0]; i++)
        fprintf(af.fp, "%s%s", i ? "," : "", fixed_cols[i]);
    for (size_t k = 0; k < json_array_size(keys); k++) {
        fputc(',', af.fp);
        rl_csv_field(af.fp, json_string_value(json_array_get(keys, k)));
    }
    fputs(",metric,length,x,value,unit,title,x_name,x_unit,x_title,plot\n", af.fp);
    for (size_t i = 0; i < json_array_size(dirs); i++) {
        const char *d = json_string_value(json_array_get(dirs, i));
        char sp[1300];
        snprintf(sp, sizeof sp, "%s/summary.json", d);
        json_t *sum = rl_fs_load_json(NULL, sp, RL_FS_MAX_SUMMARY, NULL);
        if (sum)
            results_rows(af.fp, d, sum, keys);
        json_decref(sum);
    }
    return rl_atomic_commit(&af, err);
}
