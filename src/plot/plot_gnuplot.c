/* plot_gnuplot.c — one figure drawn by gnuplot: its data file (.dat), its
 * script (.gp), and gnuplot run on the script without a shell.
 *
 * No byte of input reaches gnuplot as code (results.csv may come from
 * someone else; the directory is whatever the user named):
 *   - every string taken from results.csv (title, axis labels, legend
 *     titles) is written as a single-quoted gnuplot string: inside single
 *     quotes gnuplot does no backquote command substitution, no @macro
 *     expansion and no backslash escapes; a ' is written doubled (''), and
 *     control characters (a newline would end the command) become spaces;
 *   - no path is written into the script: gnuplot runs in DIR/plots and
 *     names its files by the metric's safe name (letters, digits, '-', '.',
 *     '_'), so nothing user-given can form gnuplot's '<command' (input
 *     pipe) or '|command' (output pipe) file names either;
 *   - gnuplot is started with fork and execv on an argument vector: no
 *     shell parses any of it;
 *   - the data file holds numbers and, for categorical axes, x values as
 *     data strings (data is never executed), with " written as ', control
 *     characters as spaces and backslashes doubled. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <unistd.h>

#include "core/rl_fs.h"
#include "core/rl_util.h"
#include "plot/plot_int.h"

static int is_control(unsigned char ch)
{
    return ch < 0x20 || ch == 0x7f;
}

/* Writes s as a single-quoted gnuplot string: ' doubled, control
 * characters as spaces; nothing else inside single quotes is special. */
static void gp_string(FILE *fp, const char *s)
{
    fputc('\'', fp);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\'')
            fputs("''", fp);
        else
            fputc(is_control(*p) ? ' ' : *p, fp);
    }
    fputc('\'', fp);
}

/* Text in the data file (a comment, or with quoted set a double-quoted
 * data string, in which gnuplot reads backslash escapes): one line, no '"',
 * backslashes in a data string doubled so that they stay as written. */
static void dat_text(FILE *fp, const char *s, int quoted)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (quoted && *p == '\\')
            fputc('\\', fp);
        fputc(*p == '"' ? '\'' : is_control(*p) ? ' ' : *p, fp);
    }
}

/* Runs `prog -e outputs ./script` in directory dir (fork, chdir, execv: no shell), its
 * messages (gnuplot's warnings) appended to log. where: the script's path
 * for messages. */
static rl_status run_gnuplot(const char *root, const char *prog, const char *dir,
                             const char *script,
                             const char *outputs, const char *where, const char *log,
                             rl_error *err)
{
    /* prog may be relative to our directory, the child runs in dir */
    char exe[2200], cwd[1024];
    if (prog[0] == '/')
        snprintf(exe, sizeof exe, "%s", prog);
    else if (getcwd(cwd, sizeof cwd))
        snprintf(exe, sizeof exe, "%s/%s", cwd, prog);
    else
        return rl_fail(err, RL_ERR_IO, "cannot run %s: %s", prog, strerror(errno));
    char arg[240];
    snprintf(arg, sizeof arg, "./%s", script); /* never read as an option */
    /* outputs: "out_png='<safe name>.png.tmp.<pid>'; ..." (safe names only) */
    char *argv[] = {exe, "-e", (char *)outputs, arg, NULL};
    rl_error lerr = {0};
    int logfd = rl_fs_open(root, log, O_WRONLY | O_CREAT | O_APPEND, 0644, &lerr);
    int pfd[2] = {-1, -1};
    rl_status st = RL_OK;
    if (logfd < 0) {
        st = rl_fail(err, lerr.status, "%s", lerr.msg);
    } else if (pipe(pfd) != 0 || fcntl(pfd[0], F_SETFD, FD_CLOEXEC) != 0 ||
               fcntl(pfd[1], F_SETFD, FD_CLOEXEC) != 0) {
        st = rl_fail(err, RL_ERR_IO, "cannot run %s: %s", prog, strerror(errno));
    }
    pid_t parent = getpid();
    pid_t pid = st ? -1 : fork();
    if (pid == 0) {
        /* child: only async-signal-safe calls; a failure's errno goes back
         * through the pipe (closed on a successful exec) */
        int e = 0;
#ifdef __linux__
        /* gnuplot dies with us: a plot killed (kill -9 included) leaves no
         * gnuplot writing its temporary after the lock is released (the
         * next plot, holding the lock, removes what is left) */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(127);
#else
        (void)parent;
#endif
        if (chdir(dir) != 0 || dup2(logfd, 2) < 0)
            e = errno;
        else if (execv(exe, argv) != 0)
            e = errno;
        ssize_t w = write(pfd[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    if (!st && pid < 0)
        st = rl_fail(err, RL_ERR_IO, "cannot run %s: %s", prog, strerror(errno));
    if (logfd >= 0)
        close(logfd);
    if (pfd[1] >= 0)
        close(pfd[1]);
    int e = 0;
    ssize_t got = 0;
    if (pid > 0)
        while ((got = read(pfd[0], &e, sizeof e)) < 0 && errno == EINTR)
            ;
    if (pfd[0] >= 0)
        close(pfd[0]);
    int status = 0;
    if (pid > 0)
        while (waitpid(pid, &status, 0) < 0)
            if (errno != EINTR) {
                st = rl_fail(err, RL_ERR_IO, "waiting for %s: %s", prog, strerror(errno));
                break;
            }
    if (st)
        return st;
    if (got == (ssize_t)sizeof e)
        return rl_fail(err, RL_ERR_IO, "cannot run %s in %s: %s", prog, dir, strerror(e));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return rl_fail(err, RL_ERR_IO, "%s %s failed (exit status %d; its messages are in %s)",
                       prog, where, WIFEXITED(status) ? WEXITSTATUS(status) : -1, log);
    return RL_OK;
}

/* Ranges of a figure's runs' points (references do not choose the axes):
 * x and y over positive values; *_pos: no negative value at all (a zero,
 * e.g. position 0 or an exact result, is left off a log axis); lo, hi: all
 * y values and interval bounds; amax, amed: the largest and the median
 * nonzero |y| (does a signed axis span decades?). */
typedef struct ranges {
    double xmin, xmax, ymin, ymax;
    double lo, hi, amax, amed;
    double ref_lo, ref_hi, ref_pos; /* the references' y: least, largest, least positive */
    int x_pos, y_pos, y_neg;
} ranges;

static int by_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void figure_ranges(const plot_figure *fg, ranges *rg)
{
    *rg = (ranges){INFINITY,  -INFINITY, INFINITY, -INFINITY, INFINITY, -INFINITY, 0, 0,
                   INFINITY, -INFINITY, INFINITY, 1,        1,         0};
    size_t n_all = 0, n_abs = 0;
    for (size_t si = 0; si < fg->n; si++)
        n_all += fg->s[si].n_pt;
    double *abs_y = malloc((n_all ? n_all : 1) * sizeof *abs_y);
    for (size_t si = 0; si < fg->n; si++)
        for (size_t k = 0; k < fg->s[si].n_pt; k++) {
            const plot_point *p = &fg->s[si].pt[k];
            if (!fg->categorical) {
                if (p->x > 0) {
                    rg->xmin = fmin(rg->xmin, p->x);
                    rg->xmax = fmax(rg->xmax, p->x);
                }
                rg->x_pos &= p->x >= 0;
            }
            if (p->y > 0) {
                rg->ymin = fmin(rg->ymin, p->y);
                rg->ymax = fmax(rg->ymax, p->y);
            }
            rg->y_pos &= p->y >= 0;
            rg->y_neg |= p->y < 0;
            rg->lo = fmin(rg->lo, p->y);
            rg->hi = fmax(rg->hi, p->y);
            if (isfinite(p->lo) && isfinite(p->hi)) {
                rg->lo = fmin(rg->lo, p->lo);
                rg->hi = fmax(rg->hi, p->hi);
            }
            rg->amax = fmax(rg->amax, fabs(p->y));
            if (abs_y && p->y != 0)
                abs_y[n_abs++] = fabs(p->y);
        }
    if (abs_y && n_abs) {
        qsort(abs_y, n_abs, sizeof *abs_y, by_dbl);
        rg->amed = abs_y[n_abs / 2];
    }
    free(abs_y);
}

/* How the axes are drawn. */
typedef struct axes {
    int logx, logy;
    int symlog;                  /* signed y over decades: asinh(y / sym_c) */
    double sym_c;
} axes;

/* Log x only where the kind declares it (lengths, distances): a pair index
 * or a linear sweep stays linear, and ln N is a straight line over any span
 * of lengths. Log y where declared or where the positive values span more
 * than two decades, unless they are fractions; signed values whose
 * magnitudes span more than three decades (a fit that blows up beyond its
 * range) on a symmetric log axis, linear within +-(median |y|). */
static axes choose_axes(const plot_figure *fg, const ranges *rg)
{
    axes a = {0};
    a.logx = !fg->categorical && (fg->flags & RL_PLOT_LOGX) && rg->x_pos && rg->xmin > 0;
    int frac = (fg->flags & RL_PLOT_FRACTION) != 0;
    a.logy = !frac && rg->y_pos && rg->ymin > 0 &&
             ((fg->flags & RL_PLOT_LOGY) || rg->ymax / rg->ymin > 100);
    a.symlog = !frac && !a.logy && rg->y_neg && rg->amed > 0 && rg->amax / rg->amed > 1000;
    a.sym_c = rg->amed;
    return a;
}

/* Reference curves of fg's table (plot word "ref", or "<table>.ref_*") at
 * fg's length and in fg's unit: for each of fg's lines the curve its own
 * run emits (the training length of that run, not of another one), the
 * same curve once; when no run of fg emits it, the reference run with the
 * most points. Drawn dashed black after the runs' lines. A reference in
 * another unit (a relative bound beside absolute errors) is never drawn on
 * fg's axis. */
#define MAX_REFS 4
#define MAX_REF_CURVES 16
typedef struct refset {
    size_t n;                                /* reference metrics */
    const char *name[MAX_REFS];              /* their titles */
    size_t n_curves;                         /* distinct curves: data blocks fg->n + k */
    const plot_series *curve[MAX_REF_CURVES];
    size_t curve_ref[MAX_REF_CURVES];        /* the reference metric of each */
    int *of;                                 /* [n][fg->n]: the curve of line si, -1 none */
} refset;

/* The same points exactly (a reference repeated by every run). */
static int same_curve(const plot_series *a, const plot_series *b)
{
    if (a->n_pt != b->n_pt)
        return 0;
    for (size_t k = 0; k < a->n_pt; k++)
        if (a->pt[k].x != b->pt[k].x || a->pt[k].y != b->pt[k].y)
            return 0;
    return 1;
}

static int add_curve(refset *rs, size_t r, const plot_series *s)
{
    for (size_t k = 0; k < rs->n_curves; k++)
        if (rs->curve_ref[k] == r && same_curve(rs->curve[k], s))
            return (int)k;
    if (rs->n_curves == MAX_REF_CURVES)
        return -1;
    rs->curve[rs->n_curves] = s;
    rs->curve_ref[rs->n_curves] = r;
    return (int)rs->n_curves++;
}

static rl_status find_refs(const plot_figure *fg, const plot_figure *figs, size_t n_figs,
                           refset *rs, rl_error *err)
{
    memset(rs, 0, sizeof *rs);
    rs->of = malloc(MAX_REFS * (fg->n ? fg->n : 1) * sizeof *rs->of);
    if (!rs->of)
        return rl_fail(err, RL_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n_figs && rs->n < MAX_REFS && !fg->categorical; i++) {
        const plot_figure *rf = &figs[i];
        if (!rf->is_ref || rf->categorical || !plot_same_table(rf->metric, fg->metric) ||
            rf->n == 0 || strcmp(rf->length, fg->length) != 0 || strcmp(rf->unit, fg->unit) != 0)
            continue;
        size_t r = rs->n++;
        rs->name[r] = rf->title;
        int *of = rs->of + r * fg->n, any = 0;
        for (size_t si = 0; si < fg->n; si++) {
            of[si] = -1;
            for (size_t k = 0; k < rf->n && of[si] < 0; k++)
                if (strcmp(rf->s[k].run_id, fg->s[si].run_id) == 0 &&
                    strcmp(rf->s[k].device, fg->s[si].device) == 0 && rf->s[k].n_pt)
                    of[si] = add_curve(rs, r, &rf->s[k]);
            any |= of[si] >= 0;
        }
        if (!any) {
            const plot_series *best = &rf->s[0];
            for (size_t k = 1; k < rf->n; k++)
                if (rf->s[k].n_pt > best->n_pt)
                    best = &rf->s[k];
            int b = add_curve(rs, r, best);
            for (size_t si = 0; si < fg->n; si++)
                of[si] = b;
        }
    }
    return RL_OK;
}

static void dat_num(FILE *fp, double v)
{
    if (isfinite(v))
        fprintf(fp, " %.17g", v);
    else
        fputs(" NaN", fp); /* undefined: not drawn */
}

/* Writes the data file: one block per series, "x y", or "x y lo hi" for a
 * series with intervals (NaN where a point has none; on a log axis a bound
 * at or below 0 is drawn a decade below the smallest value), the
 * references last ("x y"). */
static rl_status write_data(const char *root, const plot_figure *fg, const refset *rs,
                            const axes *ax, const ranges *rg, const char *path, rl_error *err)
{
    rl_atomic_file af;
    rl_status st = rl_atomic_open_below(&af, root, path, err);
    if (st)
        return st;
    double floor_lo = isfinite(rg->ymin) ? rg->ymin / 10 : NAN;
    for (size_t si = 0; si < fg->n + rs->n_curves; si++) {
        const plot_series *s = si < fg->n ? &fg->s[si] : rs->curve[si - fg->n];
        fputs("# ", af.fp);
        dat_text(af.fp, s->run_id, 0);
        if (s->n_runs > 1)
            fprintf(af.fp, " and %zu runs more (seeds): mean, 95 %% interval", s->n_runs - 1);
        fputc('\n', af.fp);
        for (size_t k = 0; k < s->n_pt; k++) {
            const plot_point *p = &s->pt[k];
            if (fg->categorical) {
                fputc('"', af.fp);
                dat_text(af.fp, p->xs, 1);
                fputc('"', af.fp);
            } else {
                fprintf(af.fp, "%.17g", p->x);
            }
            dat_num(af.fp, p->y);
            if (si < fg->n && s->ci) {
                double lo = p->lo, hi = p->hi;
                if (ax->logy && isfinite(lo) && lo <= 0)
                    lo = floor_lo;
                dat_num(af.fp, lo);
                dat_num(af.fp, hi);
            }
            fputc('\n', af.fp);
        }
        fputs("\n\n", af.fp);
    }
    return rl_atomic_commit(&af, err);
}

/* "title (unit)", or the title alone when dimensionless. */
static void with_unit(char *out, size_t cap, const char *title, const char *unit)
{
    snprintf(out, cap, *unit ? "%s (%s)" : "%s", title, unit);
}

/* The one training length of fg's series (0: none, or they differ). */
static double train_len_of(const plot_ctx *c, const plot_figure *fg)
{
    double t = 0, v;
    for (size_t k = 0; k < fg->n; k++) {
        if (!rl_csv_num(plot_field(c, fg->s[k].first_row, c->c_train), &v) || v <= 0)
            return 0;
        if (k && v != t)
            return 0;
        t = v;
    }
    return t;
}

/* Series a and b coincide when they have the same x values and their y
 * values differ by at most 0.1% of the figure's y range (on a log y axis:
 * of the larger value) at every x: one would hide the other. */
static int coincide(const plot_series *a, const plot_series *b, double span, int logy)
{
    if (a->n_pt != b->n_pt || a->n_pt == 0)
        return 0;
    for (size_t k = 0; k < a->n_pt; k++) {
        const plot_point *p = &a->pt[k], *q = &b->pt[k];
        if (strcmp(p->xs, q->xs) != 0 && p->x != q->x)
            return 0;
        double tol = logy ? 1e-3 * fmax(fabs(p->y), fabs(q->y)) : 1e-3 * span;
        if (fabs(p->y - q->y) > tol)
            return 0;
    }
    return 1;
}

/* Appends to fg->caption which series coincide ("rope, t5 coincide"). */
static void note_coinciding(const plot_ctx *c, plot_figure *fg, const ranges *rg, int logy)
{
    if (fg->categorical || fg->n < 2)
        return;
    double span = rg->ymax > rg->ymin ? rg->ymax - rg->ymin : 0;
    if (!rg->y_pos && rg->hi > rg->lo)
        span = rg->hi - rg->lo;
    unsigned char *done = calloc(fg->n, 1);
    if (!done)
        return;
    size_t len = strlen(fg->caption), cap = sizeof fg->caption;
    for (size_t i = 0; i < fg->n && len < cap; i++) {
        if (done[i])
            continue;
        size_t n_same = 0;
        char label[512];
        for (size_t j = i + 1; j < fg->n; j++)
            if (!done[j] && coincide(&fg->s[i], &fg->s[j], span, logy)) {
                if (n_same++ == 0) {
                    plot_series_label(c, fg, i, -1, label, sizeof label);
                    len += (size_t)snprintf(fg->caption + len, cap - len,
                                            " Coinciding (within 0.1%% of the y range, so one "
                                            "line hides the other; told apart by dash and "
                                            "point type): %s",
                                            label);
                }
                done[j] = 1;
                plot_series_label(c, fg, j, -1, label, sizeof label);
                if (len < cap)
                    len += (size_t)snprintf(fg->caption + len, cap - len, " = %s", label);
            }
        if (n_same && len < cap)
            len += (size_t)snprintf(fg->caption + len, cap - len, ".");
    }
    free(done);
}

/* ---- line styles -------------------------------------------------------- */

/* Eight colours told apart in print and by most colour-blind readers, then
 * dash types: 8 x 5 distinct combinations before any repeats. */
static const char *const palette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                      "#e69f00", "#56b4e9", "#000000", "#8c564b"};
#define N_COLOURS (sizeof palette / sizeof palette[0])
#define N_DASHES 5
static const int point_types[] = {7, 5, 9, 11, 13, 4, 6, 1, 2, 3, 8, 10, 12};

typedef struct style {
    size_t colour;               /* index into palette */
    int dash;                    /* gnuplot dt 1..5 */
    int point;
} style;

/* One colour per encoding and a dash type per variant of it (factor,
 * parameter) when the series idx[n] (a figure's, or one panel's) have 2..8
 * encodings of at most 5 variants each; otherwise colour after colour, the
 * dash changing only once all colours are used (series 1-8 solid, 9-16
 * dashed, ...). Point types change from one series to the next, so
 * coinciding series stay visible. */
static void choose_styles(const plot_ctx *c, const plot_figure *fg, const size_t *idx, size_t n,
                          style *st)
{
    size_t n_enc = 0, max_var = 0;
    size_t *enc_of = calloc(n ? n : 1, sizeof *enc_of);
    size_t *var_of = calloc(n ? n : 1, sizeof *var_of);
    size_t *count = calloc(n ? n : 1, sizeof *count);
    size_t *first = calloc(n ? n : 1, sizeof *first);
    int by_enc = enc_of && var_of && count && first;
    for (size_t i = 0; i < n && by_enc; i++) {
        const char *e = plot_field(c, fg->s[idx[i]].first_row, c->c_enc);
        size_t k = 0;
        for (; k < n_enc; k++)
            if (strcmp(plot_field(c, fg->s[idx[first[k]]].first_row, c->c_enc), e) == 0)
                break;
        if (k == n_enc)
            first[n_enc++] = i;
        enc_of[i] = k;
        var_of[i] = count[k]++;
        if (count[k] > max_var)
            max_var = count[k];
    }
    by_enc = by_enc && n_enc >= 2 && n_enc <= N_COLOURS && max_var <= N_DASHES;
    for (size_t i = 0; i < n; i++) {
        style *s = &st[idx[i]];
        s->point = point_types[i % (sizeof point_types / sizeof point_types[0])];
        if (by_enc) {
            s->colour = enc_of[i];
            s->dash = (int)var_of[i] + 1;
        } else {
            s->colour = i % N_COLOURS;
            s->dash = (int)(i / N_COLOURS % N_DASHES) + 1;
        }
    }
    free(enc_of);
    free(var_of);
    free(count);
    free(first);
}

/* ---- small multiples ---------------------------------------------------- */

#define MAX_PANELS 9

/* More than 10 series: one panel per value of a column (encoding, device
 * or a swept key, 2 to 9 values): the fewest panels of at most 8 series
 * each (ties: fewer series in the fullest), else the fewest series in the
 * fullest panel. Returns the number of panels (0: one figure), the column
 * in *col and each series' panel in panel[]. */
static size_t choose_facets(const plot_ctx *c, const plot_figure *fg, int *col, size_t *panel)
{
    if (c->facet_col >= 0 && fg->n) {
        /* --facet: one panel per value, in order of first appearance */
        size_t n_val = 0;
        for (size_t i = 0; i < fg->n; i++) {
            const char *v = plot_field(c, fg->s[i].first_row, c->facet_col);
            size_t k = 0;
            while (k < i && strcmp(plot_field(c, fg->s[k].first_row, c->facet_col), v) != 0)
                k++;
            panel[i] = k < i ? panel[k] : n_val++;
        }
        *col = c->facet_col;
        return n_val;
    }
    if (fg->n <= 10)
        return 0;
    const rl_csv_row *h = &c->t->rows[0];
    size_t best_max = fg->n, best_n = 0;
    size_t *pan = malloc(fg->n * sizeof *pan);
    if (!pan)
        return 0;
    for (int cand = 0; cand < (int)h->n; cand++) {
        if (!(cand == c->c_enc || cand == c->c_dev || (c->is_param[cand] && !c->is_seed[cand])))
            continue;
        size_t n_val = 0, first[MAX_PANELS], cnt[MAX_PANELS] = {0}, i;
        for (i = 0; i < fg->n; i++) {
            const char *v = plot_field(c, fg->s[i].first_row, cand);
            size_t k = 0;
            for (; k < n_val; k++)
                if (strcmp(plot_field(c, fg->s[first[k]].first_row, cand), v) == 0)
                    break;
            if (k == n_val) {
                if (n_val == MAX_PANELS)
                    break;
                first[n_val++] = i;
            }
            pan[i] = k;
            cnt[k]++;
        }
        if (i < fg->n || n_val < 2)
            continue;
        size_t mx = 0;
        for (size_t k = 0; k < n_val; k++)
            mx = cnt[k] > mx ? cnt[k] : mx;
        int fits = mx <= 8, best_fits = best_n && best_max <= 8;
        if (!best_n || (fits && !best_fits) ||
            (fits && best_fits && (n_val < best_n || (n_val == best_n && mx < best_max))) ||
            (!fits && !best_fits && (mx < best_max || (mx == best_max && n_val < best_n)))) {
            best_max = mx;
            best_n = n_val;
            *col = cand;
            memcpy(panel, pan, fg->n * sizeof *pan);
        }
    }
    free(pan);
    return best_n;
}

/* Panel p's title: "key=value", the encoding itself, or for runs that do
 * not set the key, their encodings. */
static void panel_title(const plot_ctx *c, const plot_figure *fg, int col, const size_t *panel,
                        size_t p, char *out, size_t cap)
{
    size_t first = 0;
    while (panel[first] != p)
        first++;
    const char *v = plot_field(c, fg->s[first].first_row, col);
    if (*v) {
        if (col == c->c_enc)
            snprintf(out, cap, "%s", v);
        else
            snprintf(out, cap, "%s=%s", plot_key_name(c->t->rows[0].f[col]), v);
        return;
    }
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = first; i < fg->n && len < cap; i++) {
        if (panel[i] != p)
            continue;
        const char *e = plot_field(c, fg->s[i].first_row, c->c_enc);
        int seen = 0;
        for (size_t j = first; j < i && !seen; j++)
            seen = panel[j] == p && strcmp(plot_field(c, fg->s[j].first_row, c->c_enc), e) == 0;
        if (!seen)
            len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? ", " : "", e);
    }
}

/* ---- the script ---------------------------------------------------------- */

/* Series si's interval as error bars rather than a band: on a categorical
 * axis, and for a line of one point (a band needs two x values to have an
 * area: gnuplot draws none, and the interval would be silently missing). */
static int ci_bars(const plot_figure *fg, size_t si)
{
    return fg->categorical || fg->s[si].n_pt < 2;
}

/* Series si is a line of one point with an interval on a numeric axis:
 * drawn as an error bar (ci_bars) and, beside others like it, dodged. */
static int one_point_bar(const plot_figure *fg, size_t si)
{
    return !fg->categorical && fg->s[si].ci && fg->s[si].n_pt == 1;
}

/* How many series of the figure are dodged (one_point_bar), 0 when fewer
 * than two: one alone stays at its x. */
static size_t dodged(const plot_figure *fg)
{
    size_t m = 0;
    for (size_t j = 0; j < fg->n; j++)
        m += one_point_bar(fg, j);
    return m >= 2 ? m : 0;
}

/* The x column of series si: "1", or for a dodged series its x moved
 * apart from the others' (x times 2^(0.04 (k - (m - 1)/2)), k its place
 * among the figure's m dodged series), so that overlapping intervals stay
 * readable; the caption says so. */
static const char *x_col(const plot_figure *fg, size_t si, char *buf, size_t cap)
{
    size_t k = 0, m = dodged(fg);
    if (!m || !one_point_bar(fg, si))
        return "1";
    for (size_t j = 0; j < si; j++)
        k += one_point_bar(fg, j);
    snprintf(buf, cap, "($1*%.6f)", exp2(0.04 * ((double)k - (double)(m - 1) / 2)));
    return buf;
}

/* How the figure's intervals are drawn, for its caption. */
static const char *ci_drawn(const plot_figure *fg)
{
    size_t bars = 0, bands = 0;
    for (size_t si = 0; si < fg->n; si++)
        if (fg->s[si].ci)
            *(ci_bars(fg, si) ? &bars : &bands) += 1;
    return !bands ? "Error bars" : !bars ? "Shaded band"
                                         : "Shaded band (error bars on a line of one point)";
}

/* The plot command of the series in panel p (all when panel is NULL):
 * each series' interval band (error bars: ci_bars) under its
 * line, then the references and the line at 1. */
static void plot_command(FILE *fp, const plot_ctx *c, const plot_figure *fg, const char *name,
                         const style *sty, const size_t *panel, size_t p, int skip,
                         const refset *rs)
{
    char file[200], label[512];
    snprintf(file, sizeof file, "%s.dat", name);
    /* the legend below the frame, several entries a row, for up to 6
     * short entries (and in a panel); else one column right of the frame */
    size_t n_in = 0, longest = 0;
    for (size_t si = 0; si < fg->n; si++)
        if (!panel || panel[si] == p) {
            n_in++;
            plot_series_label(c, fg, si, skip, label, sizeof label);
            longest = strlen(label) > longest ? strlen(label) : longest;
        }
    fputs((panel || n_in + rs->n <= 6) && longest <= 60 ? "set key below horizontal\n"
                                                         : "set key outside right top vertical\n",
          fp);
    fputs("plot ", fp);
    int any = 0;
    /* every band first, then the lines over them */
    for (size_t si = 0; si < fg->n; si++) {
        if ((panel && panel[si] != p) || !fg->s[si].ci)
            continue;
        const char *rgb = palette[sty[si].colour];
        fputs(any++ ? ", \\\n     " : "", fp);
        gp_string(fp, file);
        char xc[40];
        if (ci_bars(fg, si))
            fprintf(fp, " index %zu using %s:2:3:4 with yerrorbars lc rgb \"%s\" pt 0 notitle",
                    si, fg->categorical ? "0" : x_col(fg, si, xc, sizeof xc), rgb);
        else
            fprintf(fp, " index %zu using 1:3:4 with filledcurves fs transparent solid 0.15 "
                        "noborder lc rgb \"%s\" notitle", si, rgb);
    }
    for (size_t si = 0; si < fg->n; si++) {
        if (panel && panel[si] != p)
            continue;
        const plot_series *s = &fg->s[si];
        const char *rgb = palette[sty[si].colour];
        fputs(any++ ? ", \\\n     " : "", fp);
        gp_string(fp, file);
        size_t every = s->n_pt / 16 + 1; /* about 16 marks a line */
        /* later series draw smaller marks over earlier ones: where series
         * coincide, their marks nest instead of hiding each other */
        double ps = fmin(0.8 + 0.25 * (double)(fg->n - 1 - si), 2.3);
        char xc[40];
        fprintf(fp, " index %zu using %s%s with linespoints lc rgb \"%s\" dt %d pt %d ps %.2f "
                    "pi %zu title ",
                si, fg->categorical ? "2:xtic(1)" : x_col(fg, si, xc, sizeof xc),
                fg->categorical ? "" : ":2", rgb, sty[si].dash, sty[si].point, ps, every);
        plot_series_label(c, fg, si, skip, label, sizeof label);
        gp_string(fp, label);
    }
    /* each reference's distinct curves among these lines; several: each
     * named by the first line it belongs to, in its own dash type */
    static const int ref_dash[] = {2, 4, 5, 3};
    for (size_t r = 0; r < rs->n; r++) {
        const int *of = rs->of + r * fg->n;
        int shown[MAX_REF_CURVES];
        size_t first[MAX_REF_CURVES], n_shown = 0;
        for (size_t si = 0; si < fg->n; si++) {
            if ((panel && panel[si] != p) || of[si] < 0)
                continue;
            size_t k = 0;
            while (k < n_shown && shown[k] != of[si])
                k++;
            if (k == n_shown) {
                shown[n_shown] = of[si];
                first[n_shown++] = si;
            }
        }
        for (size_t k = 0; k < n_shown; k++) {
            fputs(any++ ? ", \\\n     " : "", fp);
            gp_string(fp, file);
            fprintf(fp, " index %zu using 1:2 with lines dt %d lw 1.5 lc rgb \"black\" title ",
                    fg->n + (size_t)shown[k], ref_dash[k % 4]);
            if (n_shown == 1) {
                gp_string(fp, rs->name[r]);
            } else {
                char both[1100];
                plot_series_label(c, fg, first[k], skip, label, sizeof label);
                snprintf(both, sizeof both, "%s (%s)", rs->name[r], label);
                gp_string(fp, both);
            }
        }
    }
    if ((fg->flags & RL_PLOT_ONE) && !fg->categorical)
        fputs(", \\\n     1 with lines dt 3 lw 2 lc rgb \"black\" "
              "title 'y = 1 (error at its bound)'", fp);
    fputs("\n", fp);
}

/* Appends printf-formatted text to fg->caption. */
static void caption_add(plot_figure *fg, const char *fmt, ...)
{
    size_t len = strlen(fg->caption);
    if (len + 1 >= sizeof fg->caption)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fg->caption + len, sizeof fg->caption - len, fmt, ap);
    va_end(ap);
}

/* Symmetric-log y tics: 0 and +-10^k, every `step` decades, from the
 * linear region's width to the largest magnitude, on the signs present. */
static void symlog_tics(FILE *fp, const ranges *rg, double cw)
{
    int k0 = (int)ceil(log10(cw)), k1 = (int)ceil(log10(rg->amax));
    int step = (k1 - k0) / 6 + 1;
    fputs("set ytics (\"0\" 0", fp);
    for (int k = k0; k <= k1; k += step) {
        double v = pow(10, k);
        if (rg->hi > 0)
            fprintf(fp, ", \"1e%d\" %.17g", k, v);
        if (rg->lo < 0)
            fprintf(fp, ", \"-1e%d\" %.17g", k, -v);
    }
    fputs(")\n", fp);
}

/* The formats: extension and the gnuplot terminal that writes it (size in
 * pixels; pdfcairo's in inches, 100 pixels an inch). */
static const struct {
    unsigned flag;
    const char *ext, *terminal;
    double per_px;
} formats_known[] = {
    {PLOT_FMT_PNG, "png", "pngcairo size %.0f,%.0f font \"sans,11\"", 1},
    {PLOT_FMT_SVG, "svg", "svg size %.0f,%.0f dynamic font \"sans,11\"", 1},
    {PLOT_FMT_PDF, "pdf", "pdfcairo size %.2fin,%.2fin font \"sans,9\"", 0.01},
};

/* Writes the script (path) drawing name.dat into the files named by the
 * gnuplot variables out_png, out_svg and out_pdf (name.png ... unless set
 * with -e), one for each format asked for, file names relative to
 * DIR/plots; fills fg->caption. */
static rl_status write_script(const plot_ctx *c, plot_figure *fg, const char *name,
                              const refset *rs, const ranges *rg,
                              const axes *ax, unsigned formats, const char *path, rl_error *err)
{
    char file[200], text[700];
    style *sty = calloc(fg->n ? fg->n : 1, sizeof *sty);
    size_t *panel = calloc(fg->n ? fg->n : 1, sizeof *panel);
    char *body = NULL;
    size_t body_len = 0;
    FILE *bp = NULL;
    if (!sty || !panel || !(bp = open_memstream(&body, &body_len))) {
        free(sty);
        free(panel);
        return rl_fail(err, RL_ERR_NOMEM, "out of memory writing %s", path);
    }
    int fcol = -1;
    size_t n_panels = choose_facets(c, fg, &fcol, panel);
    /* styles per panel: each panel's legend tells its lines apart */
    size_t *idx = malloc((fg->n ? fg->n : 1) * sizeof *idx);
    if (!idx) {
        fclose(bp);
        free(body);
        free(sty);
        free(panel);
        return rl_fail(err, RL_ERR_NOMEM, "out of memory writing %s", path);
    }
    /* --facet: one choice over the whole figure, so that an encoding keeps
     * its colour from panel to panel (the panels are to be compared);
     * panels chosen beyond 10 lines restart per panel (each legend tells
     * its own lines apart) */
    int global = c->facet_col >= 0;
    for (size_t p = 0; p < (n_panels && !global ? n_panels : 1); p++) {
        size_t n_idx = 0;
        for (size_t si = 0; si < fg->n; si++)
            if (!n_panels || global || panel[si] == p)
                idx[n_idx++] = si;
        choose_styles(c, fg, idx, n_idx, sty);
    }
    free(idx);

    /* settings, written once; body: what draws, written per terminal */
    rl_atomic_file af;
    rl_status st = rl_atomic_open_below(&af, plot_out_dir(c), path, err);
    if (st) {
        fclose(bp);
        free(body);
        free(sty);
        free(panel);
        return st;
    }
    FILE *fp = af.fp;
    size_t cols = n_panels <= 3 ? n_panels : n_panels == 4 ? 2 : 3;
    size_t rows = n_panels ? (n_panels + cols - 1) / cols : 1;
    int width = n_panels ? (int)cols * 620 : 1000, height = n_panels ? (int)rows * 600 + 40 : 680;
    fprintf(fp, "# ropelab plot: %s (re-render here with: gnuplot %s.gp)\n", name, name);
    for (size_t k = 0; k < RL_ARRAY_LEN(formats_known); k++) {
        if (!(formats & formats_known[k].flag))
            continue;
        fprintf(fp, "if (!exists(\"out_%s\")) out_%s = ", formats_known[k].ext,
                formats_known[k].ext);
        snprintf(file, sizeof file, "%s.%s", name, formats_known[k].ext);
        gp_string(fp, file);
        fputc('\n', fp);
    }
    if (*fg->length)
        snprintf(text, sizeof text, "%s, N = %s tokens", fg->title, fg->length);
    else
        snprintf(text, sizeof text, "%s", fg->title);
    if (!n_panels) {
        fputs("set title ", fp);
        gp_string(fp, text);
        fputc('\n', fp);
    }
    fputs("set xlabel ", fp);
    char xlab[600];
    with_unit(xlab, sizeof xlab, fg->x_title, fg->x_unit);
    gp_string(fp, xlab);
    fputs("\nset ylabel ", fp);
    char ylab[600];
    with_unit(ylab, sizeof ylab, fg->title, fg->unit);
    gp_string(fp, ylab);
    fputs("\nset grid\n", fp);
    /* x: the data's range (a margin either side on a linear axis, the
     * categories off the frame's edges); y: marks and error bars at the
     * ends of an autoscaled range inside the frame, but no margin below
     * positive values on a linear axis (it would reach below 0) */
    if (ax->logx)
        fputs(rg->xmax / rg->xmin <= 4096
                  ? "set logscale x 2\nset format x \"%.0f\"\nset autoscale xfix\n"
                  : "set logscale x 10\nset autoscale xfix\n", fp);
    else if (!fg->categorical)
        fputs("set autoscale xfix\n", fp);
    /* dodged lines of one point (x_col) sit beside x, off the frame's edges */
    size_t n_dodged = dodged(fg);
    fprintf(fp, "set offsets %s, graph 0.03, %s\n",
            n_dodged                ? "graph 0.08, graph 0.08"
            : ax->logx              ? "0, 0"
            : fg->categorical       ? "0.4, 0.4"
                                    : "graph 0.02, graph 0.02",
            !ax->logy && !ax->symlog && rg->lo > 0 ? "0" : "graph 0.03");
    if (ax->logy)
        fputs("set logscale y\nset format y \"%.0e\"\n", fp);
    if (ax->symlog) {
        fprintf(fp, "set nonlinear y via asinh(y/%.6g) inverse %.6g*sinh(y)\n", ax->sym_c,
                ax->sym_c);
        symlog_tics(fp, rg, ax->sym_c);
    }
    /* the panels share one y range, the references' in it (as autoscale
     * would have it) */
    double ylo = fmin(rg->lo, rg->ref_lo), yhi = fmax(rg->hi, rg->ref_hi);
    if (ax->logy && !(ylo > 0))
        ylo = fmin(rg->ymin, rg->ref_pos); /* zeros are left off a log axis */
    if (fg->flags & RL_PLOT_FRACTION)
        fputs("set yrange [-0.04:1.06]\n", fp); /* 0 and 1 inside the frame */
    else if (fg->flags & RL_PLOT_ONE) {
        /* y = 1 inside the frame, not on its edge */
        double top = fmax(isfinite(rg->ymax) ? rg->ymax : 1, 1);
        if (n_panels && isfinite(ylo))
            fprintf(fp, "set yrange [%.17g:%.17g]\n", ax->logy ? ylo / 1.5 : ylo,
                    ax->logy ? 2 * top : 1.1 * top);
        else
            fprintf(fp, "set yrange [*:%.17g]\n", ax->logy ? 2 * top : 1.1 * top);
    } else if (n_panels && isfinite(ylo) && isfinite(yhi) && yhi > ylo) {
        if (ax->logy)
            fprintf(fp, "set yrange [%.17g:%.17g]\n", ylo / 2, yhi * 2);
        else
            fprintf(fp, "set yrange [%.17g:%.17g]\n", ylo - 0.04 * (yhi - ylo),
                    yhi + 0.04 * (yhi - ylo));
    }
    size_t merged = 0, most = 1;
    unsigned ci = 0;
    for (size_t si = 0; si < fg->n; si++) {
        merged += fg->s[si].n_runs > 1;
        most = fg->s[si].n_runs > most ? fg->s[si].n_runs : most;
        ci |= fg->s[si].ci;
    }
    snprintf(fg->caption, sizeof fg->caption, "%s against %s; ", ylab, fg->x_title);
    /* what a line averages over: seeds, or the --aggregate columns' runs */
    const char *agg = *c->agg_words ? c->agg_words : "seed";
    const char *unit = strcmp(agg, "seed") == 0 ? "seeds" : "runs";
    char by[300] = "configuration";
    if (c->is_series) {
        size_t bl = (size_t)snprintf(by, sizeof by, "value of");
        for (size_t col = 0; col < c->t->rows[0].n && bl < sizeof by; col++)
            if (c->is_series[col])
                bl += (size_t)snprintf(by + bl, sizeof by - bl, " %s",
                                       plot_key_name(c->t->rows[0].f[col]));
    }
    if (merged)
        caption_add(fg, "one line per %s: runs that differ only in their %s are one line, their "
                        "mean (up to %zu %s).", by, agg, most, unit);
    else
        caption_add(fg, c->is_series ? "one line per %s." : "one line per run.", by);
    if (ci & (PLOT_CI_T | PLOT_CI_BOOT))
        caption_add(fg, " %s: the 95 %% interval of the mean over %s (%s%s%s%s).",
                    ci_drawn(fg), unit,
                    ci & PLOT_CI_T ? "t-interval for 2 to 4 " : "", ci & PLOT_CI_T ? unit : "",
                    (ci & PLOT_CI_T) && (ci & PLOT_CI_BOOT) ? "; " : "",
                    ci & PLOT_CI_BOOT ? (strcmp(unit, "seeds") == 0
                                             ? "percentile bootstrap over seeds, 2000 resamples, "
                                               "for 5 or more"
                                             : "percentile bootstrap over runs, 2000 resamples, "
                                               "for 5 or more")
                                      : "");
    if (ci & PLOT_CI_ROWS)
        caption_add(fg, " %s: the 95 %% interval results.csv gives for one run (`%s_lo95` to "
                        "`%s_hi95`).", ci_drawn(fg),
                    fg->metric, fg->metric);
    if (n_dodged)
        caption_add(fg, " Lines of one point are set side by side around their common x (a "
                        "shift of a few percent), so that their intervals do not overlap.");
    if (ax->logy && !(fg->flags & RL_PLOT_LOGY))
        caption_add(fg, " Log y: the values span %.1f decades.", log10(rg->ymax / rg->ymin));
    if (ax->symlog)
        caption_add(fg, " y on a symmetric log scale, asinh(y / %.3g): linear within +-%.3g, "
                        "logarithmic beyond (the values reach %.3g in magnitude).",
                    ax->sym_c, ax->sym_c, rg->amax);
    double tl = (fg->flags & RL_PLOT_TRAIN) ? train_len_of(c, fg) : 0;
    if (tl > 0 && !fg->categorical && tl >= rg->xmin && tl <= rg->xmax) {
        /* the label on the side of the line with room for it */
        double at = ax->logx ? log(tl / rg->xmin) / log(rg->xmax / rg->xmin)
                             : (tl - rg->xmin) / (rg->xmax - rg->xmin);
        int right = !(at > 0.7);
        fprintf(fp, "set arrow 1 from %.17g, graph 0 to %.17g, graph 1 nohead dt 3 lw 1.5 "
                    "lc rgb \"gray30\" front\n"
                    "set label 1 'training length %.17g' at %.17g, graph 0.96 offset %s,0 "
                    "%s front tc rgb \"gray30\"\n",
                tl, tl, tl, tl, right ? "0.5" : "-0.5", right ? "left" : "right");
        caption_add(fg, " Dotted vertical line: the training length, %.17g tokens.", tl);
    }
    for (size_t r = 0; r < rs->n; r++) {
        size_t n_c = 0;
        for (size_t k = 0; k < rs->n_curves; k++)
            n_c += rs->curve_ref[k] == r;
        caption_add(fg, n_c > 1 ? " Dashed black: %s, each run's own (they differ: one line "
                                  "each, named by its run)."
                                : " Dashed black: %s.", rs->name[r]);
    }
    if ((fg->flags & RL_PLOT_ONE) && !fg->categorical)
        caption_add(fg, " Dotted horizontal line: 1 (error at its bound).");
    if (n_panels) {
        fputs("set multiplot layout ", bp);
        fprintf(bp, "%zu,%zu title ", rows, cols);
        gp_string(bp, text);
        fputc('\n', bp);
        for (size_t p = 0; p < n_panels; p++) {
            char pt[600];
            panel_title(c, fg, fcol, panel, p, pt, sizeof pt);
            fputs("set title ", bp);
            gp_string(bp, pt);
            fputc('\n', bp);
            /* a panel titled by its one encoding: labels without it */
            int skip = fcol;
            const char *e0 = NULL;
            int one_enc = 1;
            for (size_t si = 0; si < fg->n; si++)
                if (panel[si] == p) {
                    const char *e = plot_field(c, fg->s[si].first_row, c->c_enc);
                    one_enc &= !e0 || strcmp(e, e0) == 0;
                    e0 = e;
                }
            if (one_enc && e0 && strcmp(pt, e0) == 0)
                skip = c->c_enc;
            plot_command(bp, c, fg, name, sty, panel, p, skip, rs);
        }
        fputs("unset multiplot\n", bp);
        caption_add(fg, " One panel per %s (more than 10 lines in one frame would not be "
                        "told apart); the panels share their axes.",
                    fcol == c->c_enc ? "encoding" : plot_key_name(c->t->rows[0].f[fcol]));
    } else {
        plot_command(bp, c, fg, name, sty, NULL, 0, -1, rs);
    }
    fclose(bp);
    /* the settings above hold for every terminal: each format draws the
     * same body */
    for (size_t k = 0; k < RL_ARRAY_LEN(formats_known); k++) {
        if (!(formats & formats_known[k].flag))
            continue;
        fputs("set terminal ", fp);
        fprintf(fp, formats_known[k].terminal, width * formats_known[k].per_px,
                height * formats_known[k].per_px);
        fprintf(fp, "\nset termoption noenhanced\nset output out_%s\n", formats_known[k].ext);
        fputs(body, fp);
    }
    fputs("unset output\n", fp);
    free(body);
    free(sty);
    free(panel);
    note_coinciding(c, fg, rg, ax->logy);
    return rl_atomic_commit(&af, err);
}

rl_status plot_figure_write(const plot_ctx *c, plot_figure *fg, const plot_figure *figs,
                            size_t n_figs, unsigned formats, rl_error *err)
{
    char pd[1100], dat[1300], gp[1300];
    const char *name = fg->name;
    snprintf(pd, sizeof pd, "%s/plots", plot_out_dir(c));
    snprintf(dat, sizeof dat, "%s/%s.dat", pd, name);
    snprintf(gp, sizeof gp, "%s/%s.gp", pd, name);
    refset rs;
    rl_status st = find_refs(fg, figs, n_figs, &rs, err);
    if (st) {
        free(rs.of);
        return st;
    }
    ranges rg;
    figure_ranges(fg, &rg);
    for (size_t r = 0; r < rs.n_curves; r++)
        for (size_t k = 0; k < rs.curve[r]->n_pt; k++) {
            double y = rs.curve[r]->pt[k].y;
            rg.ref_lo = fmin(rg.ref_lo, y);
            rg.ref_hi = fmax(rg.ref_hi, y);
            if (y > 0)
                rg.ref_pos = fmin(rg.ref_pos, y);
        }
    axes ax = choose_axes(fg, &rg);
    if (!(st = write_data(plot_out_dir(c), fg, &rs, &ax, &rg, dat, err)))
        st = write_script(c, fg, name, &rs, &rg, &ax, formats, gp, err);
    free(rs.of);
    return st;
}

/* Removes the temporaries of fg's formats (tmp[k] for each). */
static void remove_tmps(const char *root, char tmp[][1400], size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (tmp[k][0])
            rl_fs_remove(root, tmp[k], NULL);
}

rl_status plot_figure_render(const plot_ctx *c, plot_figure *fg, const plot_figure *figs,
                             size_t n_figs, const char *prog, unsigned formats, rl_error *err)
{
    enum { NF = RL_ARRAY_LEN(formats_known) };
    char pd[1000], gp[1300], script[200], log[1200], outputs[600];
    char dst[NF][1300], tmp[NF][1400];
    const char *name = fg->name, *root = plot_out_dir(c);
    snprintf(pd, sizeof pd, "%s/plots", root);
    snprintf(gp, sizeof gp, "%s/%s.gp", pd, name);
    snprintf(script, sizeof script, "%s.gp", name);
    snprintf(log, sizeof log, "%s/gnuplot.log", pd);
    rl_status st = plot_figure_write(c, fg, figs, n_figs, formats, err);
    if (st)
        return st;
    /* the temporary names, from the safe name and our pid only */
    size_t len = 0;
    outputs[0] = '\0';
    for (size_t k = 0; k < NF; k++) {
        dst[k][0] = tmp[k][0] = '\0';
        if (!(formats & formats_known[k].flag))
            continue;
        const char *ext = formats_known[k].ext;
        snprintf(dst[k], sizeof dst[k], "%s/%s.%s", pd, name, ext);
        snprintf(tmp[k], sizeof tmp[k], "%s/%s.%s.tmp.%ld", pd, name, ext, (long)getpid());
        len += (size_t)snprintf(outputs + len, sizeof outputs - len, "%sout_%s='%s.%s.tmp.%ld'",
                                len ? "; " : "", ext, name, ext, (long)getpid());
        /* gnuplot creates the temporaries by name: none may be there first
         * (a planted link is refused here, never written through) */
        if ((st = rl_fs_remove(root, tmp[k], err)))
            return st;
    }
    if ((st = run_gnuplot(root, prog, pd, script, outputs, gp, log, err))) {
        remove_tmps(root, tmp, NF);
        return st;
    }
    for (size_t k = 0; k < NF; k++)
        if (tmp[k][0] && (st = rl_fs_rename(root, tmp[k], dst[k], err))) {
            remove_tmps(root, tmp, NF);
            return st;
        }
    fg->drawn = 1;
    return RL_OK;
}
