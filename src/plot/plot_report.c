/* plot_report.c — DIR/report.md: the runs and their status, the figures,
 * each run's verification records and the scalar rows. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/rl_fs.h"
#include "core/rl_util.h"
#include "plot/plot_int.h"

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

/* Every string that did not come from this file's own text — encoding
 * names, run ids, labels, devices, column names, metric names, paths: a
 * results folder is someone else's — goes through md_text or md_code, so
 * report.md holds no live HTML, link, image or table structure that
 * renders from it (Python-Markdown, what mkdocs uses, and CommonMark).
 *
 * md_text: prose and table cells. HTML's specials become entities (< > &
 * "), so neither raw HTML nor an autolink can start; the characters that
 * make Markdown structure mid-line are backslash-escaped: [ ] (every link,
 * image and reference, so no `javascript:` link), ` (code spans), |
 * (table cells), * (emphasis) and \ itself. Intra-word _ and the
 * line-start markers (# - + .) make nothing live mid-line and stay as
 * written. Newlines and other control characters become spaces, so a
 * string is one line of text. */
static void md_text(FILE *fp, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch < 0x20 || ch == 0x7f)
            fputc(' ', fp);
        else if (ch == '<')
            fputs("&lt;", fp);
        else if (ch == '>')
            fputs("&gt;", fp);
        else if (ch == '&')
            fputs("&amp;", fp);
        else if (ch == '"')
            fputs("&quot;", fp);
        else if (strchr("\\`*[]|", ch)) {
            fputc('\\', fp);
            fputc(ch, fp);
        } else
            fputc(ch, fp);
    }
}

/* md_code: a code span (names read best as written: `rope_theta`). Its
 * content is never parsed as Markdown or HTML; the fence is one backtick
 * longer than the longest run of backticks in s, so s cannot close it. */
static void md_code(FILE *fp, const char *s)
{
    size_t run = 0, longest = 0;
    for (const char *p = s; *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        longest = run > longest ? run : longest;
    }
    for (size_t i = 0; i <= longest; i++)
        fputc('`', fp);
    if (longest)
        fputc(' ', fp); /* a backtick at either end stays content */
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        fputc(ch < 0x20 || ch == 0x7f ? ' ' : ch, fp);
    }
    if (longest)
        fputc(' ', fp);
    for (size_t i = 0; i <= longest; i++)
        fputc('`', fp);
}

static void md_cell(FILE *fp, const char *s)
{
    fputs("| ", fp);
    md_text(fp, s);
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

/* "| run | device | kind | encoding | <params> [| status] |" and its rule. */
static void runs_header(FILE *fp, const plot_ctx *c, int show_status)
{
    const rl_csv_row *h = &c->t->rows[0];
    fputs("| run | device | kind | encoding", fp);
    for (size_t col = 0; col < h->n; col++)
        if (c->is_param[col]) {
            fputc(' ', fp);
            md_cell(fp, h->f[col]);
        }
    fputs(show_status ? " | status |\n|---|---|---|---" : " |\n|---|---|---|---", fp);
    for (size_t col = 0; col < h->n; col++)
        if (c->is_param[col])
            fputs("|---", fp);
    fputs(show_status ? "|---|\n" : "|\n", fp);
}

/* One line per run (and device): id, device, kind, encoding, parameters,
 * status (from the manifest, else the status column). */
static rl_status runs_table(FILE *fp, const plot_ctx *c, json_t *manifest, plot_result *res,
                            rl_error *err)
{
    const rl_csv_row *h = &c->t->rows[0];
    int show_status = manifest || c->c_status >= 0;
    runs_header(fp, c, show_status);
    /* Distinct runs in order of first appearance: sort (id, row) pairs by id,
     * keep each id's first row, then restore row order. */
    size_t n_rows = c->t->n - 1, n_runs = 0;
    run_first *rf = malloc((n_rows ? n_rows : 1) * sizeof *rf);
    if (!rf)
        return rl_fail(err, RL_ERR_NOMEM, "out of memory");
    for (size_t r = 1; r < c->t->n; r++)
        rf[r - 1] = (run_first){plot_field(c, r, c->c_run), plot_field(c, r, c->c_dev), r};
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
        md_cell(fp, plot_field(c, r, c->c_dev));
        md_cell(fp, plot_field(c, r, c->c_kind));
        md_cell(fp, plot_field(c, r, c->c_enc));
        for (size_t col = 0; col < h->n; col++)
            if (c->is_param[col])
                md_cell(fp, plot_field(c, r, (int)col));
        if (show_status) {
            const char *reason = "", *st_s = manifest_status(manifest, id, rf[i].device, &reason);
            if (!st_s)
                st_s = c->c_status >= 0 ? plot_field(c, r, c->c_status) : "?";
            char buf[600];
            snprintf(buf, sizeof buf, "%s%s%s", st_s, *reason ? ": " : "", reason);
            md_cell(fp, buf);
        }
        fputs("|\n", fp);
    }
    free(rf);
    res->n_runs = n_runs;
    return RL_OK;
}


/* The drawn figures with their captions, then a sentence for each figure
 * not drawn (constant, or declared as bookkeeping); references are drawn
 * inside their table's figures and named in those captions. */
static void figures_list(FILE *fp, const plot_figure *figs, size_t n_figs, unsigned formats)
{
    size_t n_drawn = 0;
    for (size_t i = 0; i < n_figs; i++)
        n_drawn += figs[i].drawn != 0;
    if (n_drawn)
        fputs("\n## Figures\n", fp);
    size_t k = 0;
    for (size_t i = 0; i < n_figs; i++) {
        const plot_figure *f = &figs[i];
        if (!f->drawn)
            continue;
        fputs("\n### ", fp);
        md_text(fp, f->title);
        if (*f->length) {
            fputs(", N = ", fp);
            md_text(fp, f->length);
        }
        fputs("\n\n", fp);
        if (formats & PLOT_FMT_PNG) {
            fputs("![", fp);
            md_text(fp, f->title);
            fprintf(fp, "](plots/%s.png)\n\n", f->name);
        }
        fprintf(fp, "*Figure %zu.* ", ++k);
        md_text(fp, f->caption);
        fputs(" Metric ", fp);
        md_code(fp, f->metric);
        fputs(".\n\n", fp);
        if (formats & PLOT_FMT_SVG)
            fprintf(fp, "[SVG](plots/%s.svg) · ", f->name);
        if (formats & PLOT_FMT_PDF)
            fprintf(fp, "[PDF](plots/%s.pdf) · ", f->name);
        fprintf(fp, "[data](plots/%s.dat) · [script](plots/%s.gp)\n", f->name, f->name);
    }
    /* once per metric: "at N = ..." only when it has a single length */
    int any = 0;
    for (size_t i = 0; i < n_figs; i++) {
        const plot_figure *f = &figs[i];
        if (f->drawn || f->is_ref)
            continue;
        size_t first = 0, n_len = 0;
        int all_const = 1;
        for (size_t j = 0; j < n_figs; j++)
            if (!figs[j].drawn && strcmp(figs[j].metric, f->metric) == 0) {
                if (n_len++ == 0)
                    first = j;
                all_const &= figs[j].constant && figs[j].constant_value == f->constant_value;
            }
        if (first != i)
            continue;
        if (!any++)
            fputs("\nNot drawn:", fp);
        fputc(' ', fp);
        md_code(fp, f->metric);
        if (*f->length && n_len == 1) {
            fputs(" at N = ", fp);
            md_text(fp, f->length);
        }
        if (all_const) {
            fprintf(fp, " (constant %.6g%s", f->constant_value, *f->unit ? " " : "");
            md_text(fp, f->unit);
            fputs(")", fp);
        } else {
            fputs(" (bookkeeping)", fp);
        }
        fputc(';', fp);
    }
    if (any)
        fputs(" their values are in results.csv.\n", fp);
}

static const char *str_or(const json_t *o, const char *key, const char *fallback)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : fallback;
}

/* A verification record's worst error and its bound (the tolerance
 * record's error_at_worst, bound_at_worst; null, a non-finite error: NaN).
 * Folders written before 2026-12-07 spelt them max_error and bound. */
static double rec_num(const json_t *rec, const char *key, const char *old)
{
    const json_t *v = json_object_get(rec, key);
    if (!v)
        v = json_object_get(rec, old);
    return json_is_number(v) ? json_number_value(v) : NAN;
}
static double rec_error(const json_t *rec) { return rec_num(rec, "error_at_worst", "max_error"); }
static double rec_bound(const json_t *rec) { return rec_num(rec, "bound_at_worst", "bound"); }

/* One job's verification records (its summary.json): how many, how many
 * failed, and the worst one (largest error/bound). */
static void verification_row(FILE *fp, const plot_ctx *c, const json_t *job, const char *dirn)
{
    char sp[1400];
    snprintf(sp, sizeof sp, "%s/runs/%s/summary.json", c->dir, dirn);
    json_t *sum = rl_fs_load_json(c->dir, sp, RL_FS_MAX_SUMMARY, NULL);
    json_t *ver = json_object_get(sum, "verification");
    size_t n = json_array_size(ver), failed = 0, vi;
    json_t *rec, *worst = NULL;
    double worst_ratio = -1;
    json_array_foreach(ver, vi, rec) {
        double e = rec_error(rec), b = rec_bound(rec);
        double ratio = b > 0 ? e / b : (e > 0 || isnan(e) ? INFINITY : 0);
        if (!json_is_true(json_object_get(rec, "pass")))
            failed++;
        if (ratio > worst_ratio) {
            worst_ratio = ratio;
            worst = rec;
        }
    }
    char e[32] = "", b[32] = "";
    if (worst) {
        snprintf(e, sizeof e, "%.3g", rec_error(worst));
        snprintf(b, sizeof b, "%.3g", rec_bound(worst));
    }
    char nb[32], fb[32];
    snprintf(nb, sizeof nb, "%zu", n);
    snprintf(fb, sizeof fb, "%zu", failed);
    md_cell(fp, str_or(job, "run_id", dirn));
    md_cell(fp, str_or(job, "device", ""));
    md_cell(fp, str_or(sum, "kind", ""));
    md_cell(fp, sum ? nb : "no summary");
    md_cell(fp, fb);
    md_cell(fp, worst ? str_or(worst, "what", "") : "");
    md_cell(fp, e);
    md_cell(fp, b);
    fputs("|\n", fp);
    json_decref(sum);
}

/* Verification: every job's records — the error of each device figure
 * against the CPU reference next to its bound. */
/* Is job one of the table's runs? A --where view reports only its own
 * (without one every job is). */
static int job_in_view(const plot_ctx *c, const json_t *job)
{
    if (!*c->view)
        return 1;
    const char *id = json_string_value(json_object_get(job, "run_id"));
    for (size_t r = 1; id && r < c->t->n; r++)
        if (strcmp(plot_field(c, r, c->c_run), id) == 0)
            return 1;
    return 0;
}

static void verification_table(FILE *fp, const plot_ctx *c, const json_t *manifest)
{
    json_t *jobs = manifest ? json_object_get(manifest, "jobs") : NULL;
    if (!json_array_size(jobs))
        return;
    fputs("\n## Verification\n\nEach run's device results against the double-precision "
          "CPU reference: how many records, how many failed, and the worst one (largest "
          "error/bound).\n\n| run | device | kind | records | failed | worst check | error "
          "| bound |\n|---|---|---|---|---|---|---|---|\n", fp);
    size_t ji;
    json_t *job;
    json_array_foreach(jobs, ji, job) {
        const char *dirn = json_string_value(json_object_get(job, "dir"));
        if (dirn && job_in_view(c, job))
            verification_row(fp, c, job, dirn);
    }
}

/* The value of summary metric `metric` of row r0's run and device ("" when
 * absent). */
static const char *scalar_of(const plot_ctx *c, size_t r0, const char *metric)
{
    for (size_t r = 1; r < c->t->n; r++)
        if (!*plot_field(c, r, c->c_x) &&
            strcmp(plot_field(c, r, c->c_run), plot_field(c, r0, c->c_run)) == 0 &&
            strcmp(plot_field(c, r, c->c_dev), plot_field(c, r0, c->c_dev)) == 0 &&
            strcmp(plot_field(c, r, c->c_metric), metric) == 0)
            return plot_field(c, r, c->c_value);
    return "";
}

/* Rows without x of kind `kind`: an encoding x metric table (one row per
 * run and device, one column per metric, in order of first appearance). */
static void scalars_kind(FILE *fp, const plot_ctx *c, const char *kind, size_t *n_scalars)
{
    const rl_csv_row *h = &c->t->rows[0];
    size_t n = c->t->n, n_runs = 0, n_m = 0;
    size_t *runs = malloc(n * sizeof *runs), *mets = malloc(n * sizeof *mets);
    if (!runs || !mets) {
        free(runs);
        free(mets);
        return;
    }
    for (size_t r = 1; r < n; r++) {
        if (*plot_field(c, r, c->c_x) || strcmp(plot_field(c, r, c->c_kind), kind) != 0)
            continue;
        (*n_scalars)++;
        size_t i = 0;
        for (; i < n_runs; i++)
            if (strcmp(plot_field(c, runs[i], c->c_run), plot_field(c, r, c->c_run)) == 0 &&
                strcmp(plot_field(c, runs[i], c->c_dev), plot_field(c, r, c->c_dev)) == 0)
                break;
        if (i == n_runs)
            runs[n_runs++] = r;
        for (i = 0; i < n_m; i++)
            if (strcmp(plot_field(c, mets[i], c->c_metric), plot_field(c, r, c->c_metric)) == 0)
                break;
        if (i == n_m)
            mets[n_m++] = r;
    }
    /* X_lo95 / X_hi95 beside X: in X's cell, "v [lo, hi]", not columns of
     * their own */
    int *lo_of = malloc((n_m ? n_m : 1) * sizeof *lo_of);
    int *hi_of = malloc((n_m ? n_m : 1) * sizeof *hi_of);
    unsigned char *bound = calloc(n_m ? n_m : 1, 1);
    if (!lo_of || !hi_of || !bound)
        n_runs = 0;
    for (size_t m = 0; m < n_m && n_runs; m++)
        lo_of[m] = hi_of[m] = -1;
    for (size_t b = 0; b < n_m && n_runs; b++) {
        const char *bm = plot_field(c, mets[b], c->c_metric);
        size_t bl;
        int hi;
        if (!plot_ci_bound(bm, plot_flags(plot_field(c, mets[b], c->c_plot)), &bl, &hi))
            continue;
        for (size_t m = 0; m < n_m; m++) {
            const char *xm = plot_field(c, mets[m], c->c_metric);
            if (m != b && strlen(xm) == bl && strncmp(xm, bm, bl) == 0) {
                *(hi ? &hi_of[m] : &lo_of[m]) = (int)b;
                bound[b] = 1;
            }
        }
    }
    if (n_runs) {
        fputs("\n### ", fp);
        md_text(fp, *kind ? kind : "runs");
        fputs("\n\n| run | encoding ", fp);
        int *differs = calloc(h->n, sizeof *differs);
        for (size_t col = 0; differs && col < h->n; col++) {
            if (!c->is_param[col] && (int)col != c->c_dev)
                continue;
            for (size_t i = 1; i < n_runs && !differs[col]; i++)
                differs[col] = strcmp(plot_field(c, runs[0], (int)col),
                                      plot_field(c, runs[i], (int)col)) != 0;
            if (differs[col])
                md_cell(fp, h->f[col]);
        }
        for (size_t m = 0; m < n_m; m++) {
            if (bound[m])
                continue;
            const char *t = plot_field(c, mets[m], c->c_title);
            const char *u = plot_field(c, mets[m], c->c_unit);
            if (!*t)
                t = plot_field(c, mets[m], c->c_metric);
            int ci = lo_of[m] >= 0 && hi_of[m] >= 0;
            fputs("| ", fp);
            md_text(fp, t);
            if (*u) {
                fputs(" (", fp);
                md_text(fp, u);
                fputc(')', fp);
            }
            fputs(ci ? " [95 % interval] " : " ", fp);
        }
        fputs("|\n|---|---", fp);
        for (size_t col = 0; differs && col < h->n; col++)
            if (differs[col])
                fputs("|---", fp);
        for (size_t m = 0; m < n_m; m++)
            if (!bound[m])
                fputs("|---:", fp);
        fputs("|\n", fp);
        for (size_t i = 0; i < n_runs; i++) {
            size_t r0 = runs[i];
            md_cell(fp, plot_field(c, r0, c->c_run));
            md_cell(fp, plot_field(c, r0, c->c_enc));
            for (size_t col = 0; differs && col < h->n; col++)
                if (differs[col])
                    md_cell(fp, plot_field(c, r0, (int)col));
            for (size_t m = 0; m < n_m; m++) {
                if (bound[m])
                    continue;
                const char *v = scalar_of(c, r0, plot_field(c, mets[m], c->c_metric));
                double d, lo, hi;
                char num[120];
                if (rl_csv_num(v, &d)) {
                    const char *lm =
                        lo_of[m] >= 0 ? plot_field(c, mets[lo_of[m]], c->c_metric) : "";
                    const char *hm =
                        hi_of[m] >= 0 ? plot_field(c, mets[hi_of[m]], c->c_metric) : "";
                    if (*lm && *hm && rl_csv_num(scalar_of(c, r0, lm), &lo) &&
                        rl_csv_num(scalar_of(c, r0, hm), &hi))
                        snprintf(num, sizeof num, "%.4g [%.4g, %.4g]", d, lo, hi);
                    else
                        snprintf(num, sizeof num, "%.4g", d);
                    fprintf(fp, "| %s ", num); /* ropelab's own digits */
                    continue;
                }
                md_cell(fp, *v ? v : "—");
            }
            fputs("|\n", fp);
        }
        fputs("\nColumns, as named in results.csv:", fp);
        for (size_t m = 0; m < n_m; m++) {
            fputs(m ? ", " : " ", fp);
            md_code(fp, plot_field(c, mets[m], c->c_metric));
        }
        fputs(". Values to 4 significant digits (results.csv has all 17)", fp);
        int any_ci = 0;
        for (size_t m = 0; m < n_m; m++)
            any_ci |= bound[m];
        if (any_ci)
            fputs("; [lo, hi]: the 95 % interval results.csv gives (`X_lo95`, `X_hi95`)", fp);
        fputs(".\n", fp);
        free(differs);
    }
    free(lo_of);
    free(hi_of);
    free(bound);
    free(runs);
    free(mets);
}

/* Rows without x (summaries, verification errors): one table per kind. */
static void scalars_table(FILE *fp, const plot_ctx *c, plot_result *res)
{
    fputs("\n## Scalar figures\n", fp);
    size_t n_scalars = 0, n = c->t->n;
    /* kinds in order of first appearance */
    for (size_t r = 1; r < n; r++) {
        if (*plot_field(c, r, c->c_x))
            continue;
        const char *k = plot_field(c, r, c->c_kind);
        size_t q = 1;
        for (; q < r; q++)
            if (!*plot_field(c, q, c->c_x) && strcmp(plot_field(c, q, c->c_kind), k) == 0)
                break;
        if (q == r)
            scalars_kind(fp, c, k, &n_scalars);
    }
    res->n_scalars = n_scalars;
}

/* One line of "key=value, ..." for a JSON object (nested ones compact). */
static void md_object(FILE *fp, const json_t *o)
{
    const char *k;
    json_t *v;
    int first = 1;
    json_object_foreach((json_t *)o, k, v) {
        fputs(first ? "" : ", ", fp);
        first = 0;
        md_text(fp, k);
        fputc('=', fp);
        if (json_is_string(v)) {
            md_text(fp, json_string_value(v));
        } else {
            char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(10));
            md_text(fp, d ? d : "?");
            free(d);
        }
    }
    if (first)
        fputs("(defaults)", fp);
}

/* Per run, from its summary.json: model, encoding and every resolved
 * parameter (defaults filled in), data and seed. */
static void parameters_list(FILE *fp, const plot_ctx *c, const json_t *manifest)
{
    json_t *jobs = manifest ? json_object_get(manifest, "jobs") : NULL;
    if (!json_array_size(jobs))
        return;
    fputs("\n## Run parameters\n\nEvery run as it was resolved (defaults filled in), from its "
          "`runs/<dir>/summary.json`.\n\n", fp);
    size_t ji;
    json_t *job;
    json_array_foreach(jobs, ji, job) {
        const char *dirn = json_string_value(json_object_get(job, "dir"));
        if (!dirn || !job_in_view(c, job))
            continue;
        char sp[1400];
        snprintf(sp, sizeof sp, "%s/runs/%s/summary.json", c->dir, dirn);
        json_t *sum = rl_fs_load_json(c->dir, sp, RL_FS_MAX_SUMMARY, NULL);
        const json_t *res = json_object_get(sum, "resolved");
        if (res) {
            fputs("- ", fp);
            md_code(fp, str_or(job, "run_id", dirn));
            fputc(' ', fp);
            md_text(fp, str_or(sum, "kind", ""));
            fputs(" on ", fp);
            md_text(fp, str_or(job, "device", ""));
            fputs(": encoding ", fp);
            md_object(fp, json_object_get(res, "encoding"));
            fputs("; model ", fp);
            md_object(fp, json_object_get(res, "model"));
            fputs("; params ", fp);
            md_object(fp, json_object_get(res, "params"));
            if (json_object_get(res, "data")) {
                fputs("; data ", fp);
                md_object(fp, json_object_get(res, "data"));
            }
            json_t *seed = json_object_get(res, "seed");
            if (json_is_integer(seed))
                fprintf(fp, "; seed %lld", (long long)json_integer_value(seed));
            fputc('\n', fp);
        }
        json_decref(sum);
    }
}

rl_status plot_report_write(const plot_ctx *c, const plot_figure *figs, size_t n_figs,
                            unsigned formats, plot_result *res, rl_error *err)
{
    char path[1100], mpath[1100];
    snprintf(path, sizeof path, "%s/report.md", plot_out_dir(c));
    snprintf(mpath, sizeof mpath, "%s/manifest.json", c->dir);
    json_t *manifest = rl_fs_kind(c->dir, mpath, NULL) == 'f'
                           ? rl_fs_load_json(c->dir, mpath, RL_FS_MAX_MANIFEST, NULL)
                           : NULL;
    rl_atomic_file af;
    rl_status st = rl_atomic_open_below(&af, plot_out_dir(c), path, err);
    if (st) {
        json_decref(manifest);
        return st;
    }
    FILE *fp = af.fp;
    char from[1200];
    snprintf(from, sizeof from, "%s/results.csv", c->dir);
    fputs("# ropelab results\n\nFrom ", fp);
    md_code(fp, from);
    fprintf(fp, " (%zu rows). Every GPU figure below was verified against the double-precision "
                "CPU reference; verification errors are in the scalar table.\n\n## Runs\n\n",
            c->t->n - 1);
    if (*c->view) {
        /* what was chosen is part of what the figures say */
        fputs("View: ", fp);
        md_code(fp, c->view);
        fputs(" (`ropelab plot` options; the runs, figures and tables below are that view's).\n\n",
              fp);
    }
    if ((st = runs_table(fp, c, manifest, res, err))) {
        rl_atomic_abort(&af);
        json_decref(manifest);
        return st;
    }
    parameters_list(fp, c, manifest);
    figures_list(fp, figs, n_figs, formats);
    verification_table(fp, c, manifest);
    scalars_table(fp, c, res);
    json_decref(manifest);
    return rl_atomic_commit(&af, err);
}
