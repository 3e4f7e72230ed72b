/* Figures (gnuplot) and report.md from a results directory. */
#include "plot/plot.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/rl_util.h"

extern char **environ;

/* ---- CSV (RFC 4180: quoted fields, "" escapes, CRLF) -------------------- */

typedef struct csv_row {
    char **f;
    size_t n;
    size_t line;
} csv_row;

typedef struct csv_table {
    csv_row *rows;      /* rows[0] is the header */
    size_t n, cap;
    char *text;         /* owned file contents; fields point into it */
} csv_table;

static void csv_free(csv_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->rows[i].f);
    free(t->rows);
    free(t->text);
    memset(t, 0, sizeof *t);
}

static int push_field(csv_row *r, size_t *cap, char *f)
{
    if (r->n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        char **p = realloc(r->f, c * sizeof *p);
        if (!p)
            return -1;
        r->f = p;
        *cap = c;
    }
    r->f[r->n++] = f;
    return 0;
}

static rl_status csv_read(const char *path, csv_table *t, rl_error *err)
{
    memset(t, 0, sizeof *t);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return rl_fail(err, RL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, fp)) > 0) {
        len += got;
        if (len == cap) {
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(fp);
    if (!buf)
        return rl_fail(err, RL_ERR_NOMEM, "%s: out of memory reading", path);
    buf[len] = '\0';
    t->text = buf;
    /* Parse in place: fields are NUL-terminated inside buf. */
    char *p = buf, *end = buf + len;
    size_t line = 1;
    while (p < end) {
        csv_row row = {.line = line};
        size_t fcap = 0;
        for (;;) {
            char *out = p, *start = p;
            if (*p == '"') {
                p++;
                start = out = p;
                for (;;) {
                    if (p >= end) {
                        free(row.f);
                        return rl_fail(err, RL_ERR_PARSE, "%s:%zu: unterminated quoted field", path,
                                       row.line);
                    }
                    if (*p == '"' && p[1] == '"') {
                        *out++ = '"';
                        p += 2;
                    } else if (*p == '"') {
                        p++;
                        break;
                    } else {
                        if (*p == '\n')
                            line++;
                        *out++ = *p++;
                    }
                }
            } else {
                while (p < end && *p != ',' && *p != '\n' && *p != '\r')
                    p++;
                out = p;
            }
            char term = p < end ? *p : '\n';
            if (term == '\r' && p + 1 < end && p[1] == '\n')
                p++;
            if (term != ',' && term != '\n' && term != '\r') {
                free(row.f);
                return rl_fail(err, RL_ERR_PARSE, "%s:%zu: unexpected character after a quoted field",
                               path, row.line);
            }
            *out = '\0';
            if (p < end)
                p++;
            if (push_field(&row, &fcap, start) != 0) {
                free(row.f);
                return rl_fail(err, RL_ERR_NOMEM, "%s: out of memory", path);
            }
            if (term != ',')
                break;
        }
        line++;
        if (row.n == 1 && row.f[0][0] == '\0') { /* blank line */
            free(row.f);
            continue;
        }
        if (t->n == t->cap) {
            size_t c = t->cap ? t->cap * 2 : 256;
            csv_row *nr = realloc(t->rows, c * sizeof *nr);
            if (!nr) {
                free(row.f);
                return rl_fail(err, RL_ERR_NOMEM, "%s: out of memory", path);
            }
            t->rows = nr;
            t->cap = c;
        }
        t->rows[t->n++] = row;
    }
    return RL_OK;
}

static int col_index(const csv_row *h, const char *name)
{
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->f[i], name) == 0)
            return (int)i;
    return -1;
}

static int parse_num(const char *s, double *v)
{
    if (!*s)
        return 0;
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return *end == '\0' && errno == 0 && isfinite(*v);
}

/* ---- grouping ------------------------------------------------------------ */

typedef struct series {
    const char *run_id;
    const char *device;  /* a run on several devices is one series per device */
    size_t first_row;   /* for labels: a row of this run */
    size_t *rows;
    size_t n, cap;
} series;

typedef struct figure {
    const char *metric;
    series *s;
    size_t n, cap;
    int is_ref;         /* a "<table>.ref_*" column: drawn in the table's other figures */
    int categorical;    /* some x is not a number */
    const char *x_label, *y_label;
} figure;

/* "<table>.ref_<name>" metrics are reference curves (ln N, a bound...). */
static int is_ref_metric(const char *m)
{
    const char *dot = strrchr(m, '.');
    return dot && strncmp(dot + 1, "ref_", 4) == 0;
}

/* Same table: the metrics share the text before their last '.'. */
static int same_table(const char *a, const char *b)
{
    const char *da = strrchr(a, '.'), *db = strrchr(b, '.');
    return da && db && da - a == db - b && strncmp(a, b, (size_t)(da - a)) == 0;
}

static int push_idx(size_t **a, size_t *n, size_t *cap, size_t v)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        size_t *p = realloc(*a, c * sizeof *p);
        if (!p)
            return -1;
        *a = p;
        *cap = c;
    }
    (*a)[(*n)++] = v;
    return 0;
}

static void safe_name(const char *in, char *out, size_t cap)
{
    size_t i = 0;
    for (; in[i] && i + 1 < cap; i++) {
        char c = in[i];
        out[i] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '.') ? c : '_';
    }
    out[i] = '\0';
}

/* Writes s into a gnuplot double-quoted string (escaping " and \). */
static void gp_quote(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', fp);
        fputc(*s, fp);
    }
    fputc('"', fp);
}

int plot_find_program(const char *name, char *out, size_t cap)
{
    if (strchr(name, '/')) {
        if (access(name, X_OK) == 0) {
            snprintf(out, cap, "%s", name);
            return 1;
        }
        return 0;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    while (*path) {
        const char *c = strchr(path, ':');
        size_t n = c ? (size_t)(c - path) : strlen(path);
        snprintf(out, cap, "%.*s/%s", (int)n, path, name);
        if (n && access(out, X_OK) == 0)
            return 1;
        path += n + (c ? 1 : 0);
    }
    return 0;
}

/* Runs prog script with its messages (gnuplot's warnings) appended to log. */
static rl_status run_gnuplot(const char *prog, const char *script, const char *log,
                             rl_error *err)
{
    pid_t pid;
    char *argv[] = {(char *)prog, (char *)script, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    int rc = posix_spawn(&pid, prog, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return rl_fail(err, RL_ERR_IO, "cannot run %s: %s", prog, strerror(rc));
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return rl_fail(err, RL_ERR_IO, "waiting for %s: %s", prog, strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return rl_fail(err, RL_ERR_IO, "%s %s failed (exit status %d; its messages are in %s)",
                       prog, script, WIFEXITED(status) ? WEXITSTATUS(status) : -1, log);
    return RL_OK;
}

typedef struct ctx {
    const char *dir;
    const csv_table *t;
    int c_run, c_dev, c_enc, c_metric, c_x, c_value, c_xl, c_yl, c_kind, c_status;
    int *is_param;      /* [header columns] swept-parameter columns */
} ctx;

static const char *field(const ctx *c, size_t row, int col)
{
    const csv_row *r = &c->t->rows[row];
    return col >= 0 && (size_t)col < r->n ? r->f[col] : "";
}

/* Label of a series: encoding, then every parameter (and the device) whose
 * value differs between the figure's series. */
static void series_label(const ctx *c, const figure *fg, size_t si, char *out, size_t cap)
{
    size_t len = (size_t)snprintf(out, cap, "%s", field(c, fg->s[si].first_row, c->c_enc));
    const csv_row *h = &c->t->rows[0];
    for (size_t col = 0; col < h->n && len < cap; col++) {
        if (!(c->is_param[col] || (int)col == c->c_dev))
            continue;
        const char *v0 = field(c, fg->s[0].first_row, (int)col);
        int differs = 0;
        for (size_t k = 1; k < fg->n && !differs; k++)
            differs = strcmp(v0, field(c, fg->s[k].first_row, (int)col)) != 0;
        if (differs) {
            const char *v = field(c, fg->s[si].first_row, (int)col);
            len += (size_t)snprintf(out + len, cap - len, "%s%s=%s", len ? " " : "", h->f[col],
                                    *v ? v : "(default)");
        }
    }
    if (len == 0)
        snprintf(out, cap, "%s", fg->s[si].run_id);
}

typedef struct xrow {
    double x;
    size_t row;
} xrow;

static int by_x(const void *a, const void *b)
{
    double xa = ((const xrow *)a)->x, xb = ((const xrow *)b)->x;
    return (xa > xb) - (xa < xb);
}

/* Orders a series' rows by numeric x (stable enough for plotting). */
static rl_status sort_series(const ctx *c, series *s, rl_error *err)
{
    xrow *v = malloc((s->n ? s->n : 1) * sizeof *v);
    if (!v)
        return rl_fail(err, RL_ERR_NOMEM, "out of memory sorting a series");
    for (size_t k = 0; k < s->n; k++) {
        v[k].row = s->rows[k];
        v[k].x = 0;
        parse_num(field(c, s->rows[k], c->c_x), &v[k].x);
    }
    qsort(v, s->n, sizeof *v, by_x);
    for (size_t k = 0; k < s->n; k++)
        s->rows[k] = v[k].row;
    free(v);
    return RL_OK;
}

static rl_status write_figure(const ctx *c, figure *fg, const figure *figs, size_t n_figs,
                              const char *prog, int svg, rl_error *err)
{
    char name[128], dat[1200], gp[1200], png[1200], pngtmp[1300], svgf[1200], svgtmp[1300];
    safe_name(fg->metric, name, sizeof name);
    snprintf(dat, sizeof dat, "%s/plots/%s.dat", c->dir, name);
    snprintf(gp, sizeof gp, "%s/plots/%s.gp", c->dir, name);
    snprintf(png, sizeof png, "%s/plots/%s.png", c->dir, name);
    snprintf(svgf, sizeof svgf, "%s/plots/%s.svg", c->dir, name);
    snprintf(pngtmp, sizeof pngtmp, "%s.tmp.%ld", png, (long)getpid());
    snprintf(svgtmp, sizeof svgtmp, "%s.tmp.%ld", svgf, (long)getpid());

    /* Ranges over positive values; *_nonneg: no negative value at all (a
     * zero, e.g. position 0 or an exact result, is left off a log axis). */
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    int x_pos = 1, y_pos = 1;
    rl_atomic_file af;
    rl_status st = rl_atomic_open(&af, dat, err);
    if (st)
        return st;
    /* Reference curves of the same table ("<table>.ref_*"): the run with the
     * most points of each, drawn dashed after the runs' series. */
    series *refs[4];
    const char *ref_names[4];
    size_t n_refs = 0;
    for (size_t i = 0; i < n_figs && n_refs < 4 && !fg->categorical; i++) {
        if (!figs[i].is_ref || figs[i].categorical || !same_table(figs[i].metric, fg->metric) ||
            figs[i].n == 0)
            continue;
        series *best = &figs[i].s[0];
        for (size_t k = 1; k < figs[i].n; k++)
            if (figs[i].s[k].n > best->n)
                best = &figs[i].s[k];
        refs[n_refs] = best;
        ref_names[n_refs++] = strrchr(figs[i].metric, '.') + 1;
    }
    for (size_t si = 0; si < fg->n + n_refs; si++) {
        series *s = si < fg->n ? &fg->s[si] : refs[si - fg->n];
        if (!fg->categorical && (st = sort_series(c, s, err))) {
            rl_atomic_abort(&af);
            return st;
        }
        fprintf(af.fp, "# %s\n", s->run_id);
        for (size_t k = 0; k < s->n; k++) {
            double x = 0, y;
            const char *xs = field(c, s->rows[k], c->c_x);
            if (!parse_num(field(c, s->rows[k], c->c_value), &y))
                continue; /* NaN/empty values are skipped, not plotted as 0 */
            if (fg->categorical) {
                fputc('"', af.fp);
                for (const char *q = xs; *q; q++)
                    fputc(*q == '"' ? '\'' : *q, af.fp);
                fprintf(af.fp, "\" %.17g\n", y);
            } else {
                parse_num(xs, &x);
                fprintf(af.fp, "%.17g %.17g\n", x, y);
                if (si >= fg->n)
                    continue; /* references do not choose the axes */
                if (x > 0) {
                    xmin = fmin(xmin, x);
                    xmax = fmax(xmax, x);
                }
                x_pos &= x >= 0;
            }
            if (y > 0) {
                ymin = fmin(ymin, y);
                ymax = fmax(ymax, y);
            }
            y_pos &= y >= 0;
        }
        fputs("\n\n", af.fp);
    }
    if ((st = rl_atomic_commit(&af, err)))
        return st;

    if ((st = rl_atomic_open(&af, gp, err)))
        return st;
    FILE *fp = af.fp;
    fprintf(fp, "# ropelab plot: %s\nset terminal pngcairo size 1000,620 font \"sans,11\"\n", fg->metric);
    fputs("set termoption noenhanced\nset output ", fp);
    gp_quote(fp, pngtmp);
    fputs("\nset title ", fp);
    gp_quote(fp, fg->metric);
    fputs("\nset xlabel ", fp);
    gp_quote(fp, fg->x_label);
    fputs("\nset ylabel ", fp);
    gp_quote(fp, fg->y_label);
    fputs("\nset grid\nset key outside right top\n", fp);
    /* Log scales where the (non-negative) data span decades (x: 32x, e.g.
     * lengths doubling six times; y: 1000x). */
    if (!fg->categorical && x_pos && xmin > 0 && xmax / xmin >= 32)
        fputs("set logscale x\n", fp);
    if (y_pos && ymin > 0 && ymax / ymin >= 1000)
        fputs("set logscale y\nset format y \"%.0e\"\n", fp);
    fputs("plot ", fp);
    for (size_t si = 0; si < fg->n; si++) {
        char label[512];
        series_label(c, fg, si, label, sizeof label);
        if (si)
            fputs(", \\\n     ", fp);
        if (si == 0)
            gp_quote(fp, dat);
        else
            fputs("\"\"", fp);
        fprintf(fp, " index %zu using %s with linespoints pt 7 ps 0.5 title ", si,
                fg->categorical ? "2:xtic(1)" : "1:2");
        gp_quote(fp, label);
    }
    for (size_t r = 0; r < n_refs; r++) {
        fprintf(fp, ", \\\n     \"\" index %zu using 1:2 with lines dt 2 lw 1.5 lc rgb \"black\" "
                    "title ", fg->n + r);
        gp_quote(fp, ref_names[r]);
    }
    fputs("\n", fp);
    if (svg) {
        fputs("set terminal svg size 1000,620 dynamic font \"sans,11\"\nset termoption noenhanced\nset output ", fp);
        gp_quote(fp, svgtmp);
        fputs("\nreplot\n", fp);
    }
    fputs("unset output\n", fp);
    if ((st = rl_atomic_commit(&af, err)))
        return st;
    char log[1200];
    snprintf(log, sizeof log, "%s/plots/gnuplot.log", c->dir);
    if ((st = run_gnuplot(prog, gp, log, err))) {
        remove(pngtmp);
        remove(svgtmp);
        return st;
    }
    if (rename(pngtmp, png) != 0 || (svg && rename(svgtmp, svgf) != 0))
        return rl_fail(err, RL_ERR_IO, "%s: cannot rename the figure into place: %s", png,
                       strerror(errno));
    return RL_OK;
}

static void free_figures(figure *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < f[i].n; k++)
            free(f[i].s[k].rows);
        free(f[i].s);
    }
    free(f);
}

/* Status of a run on a device from manifest.json: the runner's "jobs"
 * array ({run_id, device, status, reason}), or a "runs" array of the same
 * shape ("id" accepted for run_id). NULL if the manifest does not say. */
static const char *manifest_status(json_t *m, const char *run, const char *device,
                                   const char **reason)
{
    *reason = "";
    json_t *runs = m ? json_object_get(m, "jobs") : NULL;
    if (!runs && m)
        runs = json_object_get(m, "runs");
    size_t i;
    json_t *r;
    json_array_foreach(runs, i, r) {
        const char *id = json_string_value(json_object_get(r, "run_id"));
        if (!id)
            id = json_string_value(json_object_get(r, "id"));
        const char *dev = json_string_value(json_object_get(r, "device"));
        if (!id || strcmp(id, run) != 0 || (dev && device && *device && strcmp(dev, device) != 0))
            continue;
        const char *why = json_string_value(json_object_get(r, "reason"));
        if (!why)
            why = json_string_value(json_object_get(r, "error"));
        *reason = why ? why : "";
        const char *st = json_string_value(json_object_get(r, "status"));
        return st ? st : "";
    }
    return NULL;
}

static void md_cell(FILE *fp, const char *s)
{
    fputs("| ", fp);
    for (; *s; s++) {
        if (*s == '|')
            fputc('\\', fp);
        fputc(*s == '\n' ? ' ' : *s, fp);
    }
    fputc(' ', fp);
}

typedef struct run_first {
    const char *id, *device;
    size_t row;
} run_first;

static int by_id_then_row(const void *a, const void *b)
{
    const run_first *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    if (!c)
        c = strcmp(x->device, y->device);
    return c ? c : (x->row > y->row) - (x->row < y->row);
}

static int by_row(const void *a, const void *b)
{
    const run_first *x = a, *y = b;
    return (x->row > y->row) - (x->row < y->row);
}

static rl_status write_report(const ctx *c, figure *figs, size_t n_figs, int svg, plot_result *res,
                              rl_error *err)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/report.md", c->dir);
    char mpath[1100];
    snprintf(mpath, sizeof mpath, "%s/manifest.json", c->dir);
    json_t *manifest = access(mpath, R_OK) == 0 ? json_load_file(mpath, 0, NULL) : NULL;
    rl_atomic_file af;
    rl_status st = rl_atomic_open(&af, path, err);
    if (st) {
        json_decref(manifest);
        return st;
    }
    FILE *fp = af.fp;
    const csv_row *h = &c->t->rows[0];
    fprintf(fp, "# ropelab results\n\nFrom `%s/results.csv` (%zu rows). Every GPU figure below was "
                "verified against the double-precision CPU reference; verification errors are in the "
                "scalar table.\n\n## Runs\n\n",
            c->dir, c->t->n - 1);
    /* One line per run: id, device, encoding, parameters, status. */
    int show_status = manifest || c->c_status >= 0;
    fputs("| run | device | kind | encoding", fp);
    for (size_t col = 0; col < h->n; col++)
        if (c->is_param[col])
            fprintf(fp, " | %s", h->f[col]);
    fputs(show_status ? " | status |\n|---|---|---|---" : " |\n|---|---|---|---", fp);
    for (size_t col = 0; col < h->n; col++)
        if (c->is_param[col])
            fputs("|---", fp);
    fputs(show_status ? "|---|\n" : "|\n", fp);
    /* Distinct runs in order of first appearance: sort (id, row) pairs by id,
     * keep each id's first row, then restore row order. */
    size_t n_rows = c->t->n - 1, n_runs = 0;
    run_first *rf = malloc((n_rows ? n_rows : 1) * sizeof *rf);
    if (!rf) {
        rl_atomic_abort(&af);
        json_decref(manifest);
        return rl_fail(err, RL_ERR_NOMEM, "out of memory");
    }
    for (size_t r = 1; r < c->t->n; r++)
        rf[r - 1] = (run_first){field(c, r, c->c_run), field(c, r, c->c_dev), r};
    qsort(rf, n_rows, sizeof *rf, by_id_then_row);
    for (size_t i = 0; i < n_rows; i++)
        if (n_runs == 0 || strcmp(rf[n_runs - 1].id, rf[i].id) != 0 ||
            strcmp(rf[n_runs - 1].device, rf[i].device) != 0)
            rf[n_runs++] = rf[i];
    qsort(rf, n_runs, sizeof *rf, by_row);
    for (size_t i = 0; i < n_runs; i++) {
        size_t r = rf[i].row;
        const char *id = rf[i].id;
        md_cell(fp, id);
        md_cell(fp, field(c, r, c->c_dev));
        md_cell(fp, field(c, r, c->c_kind));
        md_cell(fp, field(c, r, c->c_enc));
        for (size_t col = 0; col < h->n; col++)
            if (c->is_param[col])
                md_cell(fp, field(c, r, (int)col));
        if (show_status) {
            const char *reason = "", *st_s = manifest_status(manifest, id, rf[i].device, &reason);
            if (!st_s)
                st_s = c->c_status >= 0 ? field(c, r, c->c_status) : "?";
            char buf[600];
            snprintf(buf, sizeof buf, "%s%s%s", st_s, *reason ? ": " : "", reason);
            md_cell(fp, buf);
        }
        fputs("|\n", fp);
    }
    free(rf);
    res->n_runs = n_runs;

    if (n_figs)
        fputs("\n## Figures\n", fp);
    for (size_t i = 0; i < n_figs; i++) {
        char name[128];
        safe_name(figs[i].metric, name, sizeof name);
        fprintf(fp, "\n### %s\n\n![%s](plots/%s.png)\n", figs[i].metric, figs[i].metric, name);
        if (svg)
            fprintf(fp, "\n[SVG](plots/%s.svg) · [data](plots/%s.dat)\n", name, name);
    }

    /* Verification: every run's records (summary.json) — the error of each
     * device figure against the CPU reference next to its bound. */
    json_t *jobs = manifest ? json_object_get(manifest, "jobs") : NULL;
    if (json_array_size(jobs)) {
        fputs("\n## Verification\n\nEach run's device results against the double-precision "
              "CPU reference: how many records, how many failed, and the worst one (largest "
              "error/bound).\n\n| run | device | kind | records | failed | worst check | error "
              "| bound |\n|---|---|---|---|---|---|---|---|\n", fp);
        size_t ji;
        json_t *job;
        json_array_foreach(jobs, ji, job) {
            const char *dirn = json_string_value(json_object_get(job, "dir"));
            if (!dirn)
                continue;
            char sp[1400];
            snprintf(sp, sizeof sp, "%s/runs/%s/summary.json", c->dir, dirn);
            json_t *sum = json_load_file(sp, 0, NULL);
            json_t *ver = json_object_get(sum, "verification");
            size_t n = json_array_size(ver), failed = 0, vi;
            json_t *rec, *worst = NULL;
            double worst_ratio = -1;
            json_array_foreach(ver, vi, rec) {
                double e = json_number_value(json_object_get(rec, "max_error"));
                double b = json_number_value(json_object_get(rec, "bound"));
                double ratio = b > 0 ? e / b : (e > 0 ? INFINITY : 0);
                if (!json_is_true(json_object_get(rec, "pass")))
                    failed++;
                if (ratio > worst_ratio) {
                    worst_ratio = ratio;
                    worst = rec;
                }
            }
            char e[32] = "", b[32] = "";
            if (worst) {
                snprintf(e, sizeof e, "%.3g", json_number_value(json_object_get(worst, "max_error")));
                snprintf(b, sizeof b, "%.3g", json_number_value(json_object_get(worst, "bound")));
            }
            char nb[32], fb[32];
            snprintf(nb, sizeof nb, "%zu", n);
            snprintf(fb, sizeof fb, "%zu", failed);
            md_cell(fp, json_string_value(json_object_get(job, "run_id")) ?
                            json_string_value(json_object_get(job, "run_id")) : dirn);
            md_cell(fp, json_string_value(json_object_get(job, "device")) ?
                            json_string_value(json_object_get(job, "device")) : "");
            md_cell(fp, json_string_value(json_object_get(sum, "kind")) ?
                            json_string_value(json_object_get(sum, "kind")) : "");
            md_cell(fp, sum ? nb : "no summary");
            md_cell(fp, fb);
            md_cell(fp, worst && json_string_value(json_object_get(worst, "what")) ?
                            json_string_value(json_object_get(worst, "what")) : "");
            md_cell(fp, e);
            md_cell(fp, b);
            fputs("|\n", fp);
            json_decref(sum);
        }
    }

    fputs("\n## Scalar figures\n\n| run | encoding | metric | value |\n|---|---|---|---|\n", fp);
    size_t n_scalars = 0;
    for (size_t r = 1; r < c->t->n; r++) {
        if (*field(c, r, c->c_x))
            continue;
        md_cell(fp, field(c, r, c->c_run));
        md_cell(fp, field(c, r, c->c_enc));
        md_cell(fp, field(c, r, c->c_metric));
        md_cell(fp, field(c, r, c->c_value));
        fputs("|\n", fp);
        n_scalars++;
    }
    res->n_scalars = n_scalars;
    json_decref(manifest);
    return rl_atomic_commit(&af, err);
}

rl_status plot_dir(const char *dir, const plot_options *opt, plot_result *res, rl_error *err)
{
    plot_options o = opt ? *opt : (plot_options){0};
    plot_result dummy;
    if (!res)
        res = &dummy;
    memset(res, 0, sizeof *res);
    char path[1100];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    csv_table t;
    rl_status st = csv_read(path, &t, err);
    if (st) {
        csv_free(&t);
        return st;
    }
    if (t.n == 0) {
        csv_free(&t);
        return rl_fail(err, RL_ERR_PARSE, "%s: empty file (no header)", path);
    }
    ctx c = {.dir = dir, .t = &t};
    const csv_row *h = &t.rows[0];
    static const char *const required[] = {"run_id", "encoding", "metric", "x", "value"};
    for (size_t i = 0; i < RL_ARRAY_LEN(required); i++)
        if (col_index(h, required[i]) < 0) {
            csv_free(&t);
            return rl_fail(err, RL_ERR_PARSE, "%s:1: missing column '%s' (the header needs %s)", path,
                           required[i], "run_id, encoding, metric, x, value");
        }
    c.c_run = col_index(h, "run_id");
    c.c_dev = col_index(h, "device");
    c.c_enc = col_index(h, "encoding");
    c.c_metric = col_index(h, "metric");
    c.c_x = col_index(h, "x");
    c.c_value = col_index(h, "value");
    c.c_xl = col_index(h, "x_label");
    c.c_yl = col_index(h, "y_label");
    c.c_kind = col_index(h, "kind");
    c.c_status = col_index(h, "status");
    c.is_param = calloc(h->n, sizeof *c.is_param);
    if (!c.is_param) {
        csv_free(&t);
        return rl_fail(err, RL_ERR_NOMEM, "out of memory");
    }
    for (size_t col = 0; col < h->n; col++) {
        int k = (int)col;
        c.is_param[col] = k != c.c_run && k != c.c_dev && k != c.c_enc && k != c.c_metric &&
                          k != c.c_x && k != c.c_value && k != c.c_xl && k != c.c_yl &&
                          k != c.c_kind && k != c.c_status;
    }
    for (size_t r = 1; r < t.n; r++)
        if (t.rows[r].n != h->n) {
            size_t line = t.rows[r].line, n = t.rows[r].n, hn = h->n;
            free(c.is_param);
            csv_free(&t);
            return rl_fail(err, RL_ERR_PARSE, "%s:%zu: %zu fields, the header has %zu", path, line, n,
                           hn);
        }

    /* Group rows with an x into figures (by metric) and series (by run). */
    figure *figs = NULL;
    size_t n_figs = 0, cap_figs = 0;
    for (size_t r = 1; r < t.n && !st; r++) {
        const char *xs = field(&c, r, c.c_x);
        if (!*xs)
            continue;
        const char *m = field(&c, r, c.c_metric), *run = field(&c, r, c.c_run);
        figure *fg = NULL;
        for (size_t i = 0; i < n_figs && !fg; i++)
            if (strcmp(figs[i].metric, m) == 0)
                fg = &figs[i];
        if (!fg) {
            if (n_figs == cap_figs) {
                size_t cc = cap_figs ? cap_figs * 2 : 8;
                figure *nf = realloc(figs, cc * sizeof *nf);
                if (!nf) {
                    st = rl_fail(err, RL_ERR_NOMEM, "out of memory");
                    break;
                }
                figs = nf;
                cap_figs = cc;
            }
            fg = &figs[n_figs++];
            memset(fg, 0, sizeof *fg);
            fg->metric = m;
            fg->is_ref = is_ref_metric(m);
            fg->x_label = c.c_xl >= 0 && *field(&c, r, c.c_xl) ? field(&c, r, c.c_xl) : "x";
            fg->y_label = c.c_yl >= 0 && *field(&c, r, c.c_yl) ? field(&c, r, c.c_yl) : m;
        }
        double xv;
        if (!parse_num(xs, &xv))
            fg->categorical = 1;
        series *s = NULL;
        const char *dev = field(&c, r, c.c_dev);
        for (size_t i = 0; i < fg->n && !s; i++)
            if (strcmp(fg->s[i].run_id, run) == 0 && strcmp(fg->s[i].device, dev) == 0)
                s = &fg->s[i];
        if (!s) {
            if (fg->n == fg->cap) {
                size_t cc = fg->cap ? fg->cap * 2 : 8;
                series *ns = realloc(fg->s, cc * sizeof *ns);
                if (!ns) {
                    st = rl_fail(err, RL_ERR_NOMEM, "out of memory");
                    break;
                }
                fg->s = ns;
                fg->cap = cc;
            }
            s = &fg->s[fg->n++];
            memset(s, 0, sizeof *s);
            s->run_id = run;
            s->device = dev;
            s->first_row = r;
        }
        if (push_idx(&s->rows, &s->n, &s->cap, r) != 0)
            st = rl_fail(err, RL_ERR_NOMEM, "out of memory");
    }

    char prog[1024] = "";
    if (!st && n_figs) {
        const char *want = o.gnuplot ? o.gnuplot : "gnuplot";
        if (!plot_find_program(want, prog, sizeof prog))
            st = rl_fail(err, RL_ERR_UNSUPPORTED,
                         "gnuplot not found (looked for '%s'); install it with "
                         "`apt-get install gnuplot-nox`, or pass --no-plot to `ropelab run`",
                         want);
    }
    if (!st && n_figs) {
        char pd[1100];
        snprintf(pd, sizeof pd, "%s/plots", dir);
        if (mkdir(pd, 0777) != 0 && errno != EEXIST)
            st = rl_fail(err, RL_ERR_IO, "%s: cannot create: %s", pd, strerror(errno));
    }
    for (size_t i = 0; i < n_figs && !st; i++) {
        if (figs[i].is_ref)
            continue; /* drawn inside its table's figures */
        st = write_figure(&c, &figs[i], figs, n_figs, prog, !o.no_svg, err);
        if (!st)
            res->n_figures++;
    }
    if (!st)
        st = write_report(&c, figs, n_figs, !o.no_svg, res, err);
    free_figures(figs, n_figs);
    free(c.is_param);
    csv_free(&t);
    return st;
}
