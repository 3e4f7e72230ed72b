/* run_results.c — OUT/results.csv: every run's metrics and table values
 * in long format, one value per row. */
#include <stdio.h>
#include <string.h>

#include "core/rl_util.h"
#include "run/run_int.h"

static void csv_field(FILE *fp, const char *s)
{
    if (strpbrk(s, ",\"\n\r")) {
        fputc('"', fp);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', fp);
            fputc(*s, fp);
        }
        fputc('"', fp);
    } else {
        fputs(s, fp);
    }
}

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

static void row_prefix(FILE *fp, const json_t *sum, const json_t *keys)
{
    char buf[512];
    csv_field(fp, json_string_value(json_object_get(sum, "run_id")));
    fputc(',', fp);
    csv_field(fp, json_string_value(json_object_get(sum, "device")));
    fputc(',', fp);
    csv_field(fp, json_string_value(json_object_get(sum, "kind")));
    fputc(',', fp);
    const json_t *res = json_object_get(sum, "resolved");
    csv_field(fp, json_string_value(json_object_get(json_object_get(res, "encoding"), "name")));
    fputc(',', fp);
    csv_field(fp, json_string_value(json_object_get(sum, "status")));
    const json_t *sw = json_object_get(sum, "swept");
    for (size_t k = 0; k < json_array_size(keys); k++) {
        run_json_text(json_object_get(sw, json_string_value(json_array_get(keys, k))), buf,
                      sizeof buf);
        fputc(',', fp);
        csv_field(fp, buf);
    }
}

/* Appends the long-format rows of one run directory. */
static void results_rows(FILE *fp, const char *run_dir, const json_t *sum, const json_t *keys)
{
    const char *mk;
    json_t *mv;
    char buf[64];
    json_object_foreach(json_object_get(sum, "metrics"), mk, mv) {
        row_prefix(fp, sum, keys);
        run_json_text(mv, buf, sizeof buf);
        fprintf(fp, ",%s,,%s,,\n", mk, buf[0] ? buf : "nan");
    }
    const json_t *tables = json_object_get(sum, "tables");
    for (size_t t = 0; t < json_array_size(tables); t++) {
        const char *tn = json_string_value(json_object_get(json_array_get(tables, t), "name"));
        char path[1400];
        snprintf(path, sizeof path, "%s/%s.csv", run_dir, tn);
        FILE *in = fopen(path, "r");
        if (!in)
            continue;
        char line[4096], cols[EXP_MAX_COLS][64];
        size_t nc = 0;
        if (fgets(line, sizeof line, in)) {
            line[strcspn(line, "\r\n")] = '\0';
            for (char *tok = strtok(line, ","); tok && nc < EXP_MAX_COLS; tok = strtok(NULL, ","))
                snprintf(cols[nc++], sizeof cols[0], "%s", tok);
        }
        while (fgets(line, sizeof line, in)) {
            line[strcspn(line, "\r\n")] = '\0';
            char *vals[EXP_MAX_COLS];
            size_t nv = 0;
            for (char *tok = strtok(line, ","); tok && nv < EXP_MAX_COLS; tok = strtok(NULL, ","))
                vals[nv++] = tok;
            for (size_t c = 1; c < nv && c < nc; c++) {
                row_prefix(fp, sum, keys);
                /* x_label / y_label: the table's x column and this column,
                 * for plot axes. */
                fprintf(fp, ",%s.%s,%s,%s,", tn, cols[c], vals[0], vals[c]);
                csv_field(fp, cols[0]);
                fputc(',', fp);
                csv_field(fp, cols[c]);
                fputc('\n', fp);
            }
        }
        fclose(in);
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
    fputs("run_id,device,kind,encoding,status", af.fp);
    for (size_t k = 0; k < json_array_size(keys); k++) {
        fputc(',', af.fp);
        csv_field(af.fp, json_string_value(json_array_get(keys, k)));
    }
    fputs(",metric,x,value,x_label,y_label\n", af.fp);
    for (size_t i = 0; i < json_array_size(dirs); i++) {
        const char *d = json_string_value(json_array_get(dirs, i));
        char sp[1300];
        snprintf(sp, sizeof sp, "%s/summary.json", d);
        json_t *sum = json_load_file(sp, 0, NULL);
        if (sum)
            results_rows(af.fp, d, sum, keys);
        json_decref(sum);
    }
    return rl_atomic_commit(&af, err);
}
