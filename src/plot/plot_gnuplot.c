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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/rl_util.h"
#include "plot/plot_int.h"

void plot_safe_name(const char *in, char *out, size_t cap)
{
    size_t i = 0;
    for (; in[i] && i + 1 < cap; i++) {
        char c = in[i];
        out[i] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '.') ? c : '_';
    }
    out[i] = '\0';
}

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
static rl_status run_gnuplot(const char *prog, const char *dir, const char *script,
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
    int logfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int pfd[2] = {-1, -1};
    rl_status st = RL_OK;
    if (logfd < 0) {
        st = rl_fail(err, RL_ERR_IO, "%s: cannot open: %s", log, strerror(errno));
    } else if (pipe(pfd) != 0 || fcntl(pfd[0], F_SETFD, FD_CLOEXEC) != 0 ||
               fcntl(pfd[1], F_SETFD, FD_CLOEXEC) != 0) {
        st = rl_fail(err, RL_ERR_IO, "cannot run %s: %s", prog, strerror(errno));
    }
    pid_t pid = st ? -1 : fork();
    if (pid == 0) {
        /* child: only async-signal-safe calls; a failure's errno goes back
         * through the pipe (closed on a successful exec) */
        int e = 0;
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

/* Ranges of a figure's data over positive values; *_pos: no negative value
 * at all (a zero, e.g. position 0 or an exact result, is left off a log
 * axis). */
typedef struct ranges {
    double xmin, xmax, ymin, ymax;
    int x_pos, y_pos;
} ranges;

/* Reference curves of fg's table (plot word "ref", or "<table>.ref_*") at
 * fg's length and in fg's unit among figs: the run with the most points of
 * each, drawn dashed after the runs' series. */
static size_t find_refs(const plot_figure *fg, const plot_figure *figs, size_t n_figs,
                        plot_series **refs, const char **ref_names, size_t cap)
{
    size_t n_refs = 0;
    for (size_t i = 0; i < n_figs && n_refs < cap && !fg->categorical; i++) {
        if (!figs[i].is_ref || figs[i].categorical ||
            !plot_same_table(figs[i].metric, fg->metric) || figs[i].n == 0 ||
            strcmp(figs[i].length, fg->length) != 0 || strcmp(figs[i].unit, fg->unit) != 0)
            continue;
        plot_series *best = &figs[i].s[0];
        for (size_t k = 1; k < figs[i].n; k++)
            if (figs[i].s[k].n > best->n)
                best = &figs[i].s[k];
        refs[n_refs] = best;
        ref_names[n_refs++] = figs[i].title;
    }
    return n_refs;
}

/* Writes the data file: one block per series (sorted by x unless
 * categorical), the references last; fills the ranges of the runs'
 * series. */
static rl_status write_data(const plot_ctx *c, const plot_figure *fg, plot_series *const *refs,
                            size_t n_refs, const char *path, ranges *rg, rl_error *err)
{
    *rg = (ranges){INFINITY, -INFINITY, INFINITY, -INFINITY, 1, 1};
    rl_atomic_file af;
    rl_status st = rl_atomic_open(&af, path, err);
    if (st)
        return st;
    for (size_t si = 0; si < fg->n + n_refs; si++) {
        plot_series *s = si < fg->n ? &fg->s[si] : refs[si - fg->n];
        if (!fg->categorical && (st = plot_sort_series(c, s, err))) {
            rl_atomic_abort(&af);
            return st;
        }
        fputs("# ", af.fp);
        dat_text(af.fp, s->run_id, 0);
        fputc('\n', af.fp);
        for (size_t k = 0; k < s->n; k++) {
            double x = 0, y;
            const char *xs = plot_field(c, s->rows[k], c->c_x);
            if (!plot_parse_num(plot_field(c, s->rows[k], c->c_value), &y))
                continue; /* NaN/empty values are skipped, not plotted as 0 */
            if (fg->categorical) {
                fputc('"', af.fp);
                dat_text(af.fp, xs, 1);
                fprintf(af.fp, "\" %.17g\n", y);
            } else {
                plot_parse_num(xs, &x);
                fprintf(af.fp, "%.17g %.17g\n", x, y);
                if (si >= fg->n)
                    continue; /* references do not choose the axes */
                if (x > 0) {
                    rg->xmin = fmin(rg->xmin, x);
                    rg->xmax = fmax(rg->xmax, x);
                }
                rg->x_pos &= x >= 0;
            }
            if (y > 0) {
                rg->ymin = fmin(rg->ymin, y);
                rg->ymax = fmax(rg->ymax, y);
            }
            rg->y_pos &= y >= 0;
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
        if (!plot_parse_num(plot_field(c, fg->s[k].first_row, c->c_train), &v) || v <= 0)
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
static int coincide(const plot_ctx *c, const plot_series *a, const plot_series *b, double span,
                    int logy)
{
    if (a->n != b->n || a->n == 0)
        return 0;
    for (size_t k = 0; k < a->n; k++) {
        double xa, xb, ya, yb;
        int na = plot_parse_num(plot_field(c, a->rows[k], c->c_value), &ya);
        int nb = plot_parse_num(plot_field(c, b->rows[k], c->c_value), &yb);
        if (strcmp(plot_field(c, a->rows[k], c->c_x), plot_field(c, b->rows[k], c->c_x)) != 0 &&
            !(plot_parse_num(plot_field(c, a->rows[k], c->c_x), &xa) &&
              plot_parse_num(plot_field(c, b->rows[k], c->c_x), &xb) && xa == xb))
            return 0;
        if (na != nb)
            return 0;
        double tol = logy ? 1e-3 * fmax(fabs(ya), fabs(yb)) : 1e-3 * span;
        if (na && fabs(ya - yb) > tol)
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
            if (!done[j] && coincide(c, &fg->s[i], &fg->s[j], span, logy)) {
                if (n_same++ == 0) {
                    plot_series_label(c, fg, i, label, sizeof label);
                    len += (size_t)snprintf(fg->caption + len, cap - len,
                                            " Coinciding (within 0.1%% of the y range, so one "
                                            "line hides the other; told apart by dash and "
                                            "point type): %s",
                                            label);
                }
                done[j] = 1;
                plot_series_label(c, fg, j, label, sizeof label);
                if (len < cap)
                    len += (size_t)snprintf(fg->caption + len, cap - len, " = %s", label);
            }
        if (n_same && len < cap)
            len += (size_t)snprintf(fg->caption + len, cap - len, ".");
    }
    free(done);
}

/* Line styles: colour, dash and point type all change from one series to
 * the next, so coinciding series stay visible as distinct marks. */
static const int point_types[] = {7, 5, 9, 11, 13, 4, 6, 1, 2, 3, 8, 10, 12};

/* Writes the script (path) drawing name.dat into the files named by the
 * gnuplot variables out_png and out_svg (name.png / name.svg unless set
 * with -e), file names relative to DIR/plots; fills fg->caption. */
static rl_status write_script(const plot_ctx *c, plot_figure *fg, const char *name,
                              const char *const *ref_names, size_t n_refs, const ranges *rg,
                              int svg, const char *path, rl_error *err)
{
    char file[200], text[700];
    rl_atomic_file af;
    rl_status st = rl_atomic_open(&af, path, err);
    if (st)
        return st;
    FILE *fp = af.fp;
    fprintf(fp, "# ropelab plot: %s (re-render here with: gnuplot %s.gp)\n", name, name);
    fputs("if (!exists(\"out_png\")) out_png = ", fp);
    snprintf(file, sizeof file, "%s.png", name);
    gp_string(fp, file);
    fputs("\nif (!exists(\"out_svg\")) out_svg = ", fp);
    snprintf(file, sizeof file, "%s.svg", name);
    gp_string(fp, file);
    fputs("\nset terminal pngcairo size 1000,680 font \"sans,11\"\n"
          "set termoption noenhanced\nset output out_png\nset title ", fp);
    if (*fg->length)
        snprintf(text, sizeof text, "%s, N = %s tokens", fg->title, fg->length);
    else
        snprintf(text, sizeof text, "%s", fg->title);
    gp_string(fp, text);
    fputs("\nset xlabel ", fp);
    with_unit(text, sizeof text, fg->x_title, fg->x_unit);
    gp_string(fp, text);
    fputs("\nset ylabel ", fp);
    with_unit(text, sizeof text, fg->title, fg->unit);
    gp_string(fp, text);
    /* The legend below the frame, several entries a row; entries too
     * long for that (gnuplot would drop them) go in one column at the
     * right. */
    size_t longest = 0;
    for (size_t si = 0; si < fg->n; si++) {
        char label[512];
        plot_series_label(c, fg, si, label, sizeof label);
        longest = strlen(label) > longest ? strlen(label) : longest;
    }
    fputs(longest <= 60 ? "\nset grid\nset key below horizontal\n"
                        : "\nset grid\nset key outside right top vertical\n", fp);
    /* Log x only where the kind declares it (lengths, distances): a pair
     * index or a linear sweep stays linear, and ln N is a straight line
     * over any span of lengths. Base 2 for lengths up to 2^12 apart. */
    int logx = !fg->categorical && (fg->flags & PLOT_F_LOGX) && rg->x_pos && rg->xmin > 0;
    if (logx)
        fputs(rg->xmax / rg->xmin <= 4096
                  ? "set logscale x 2\nset format x \"%.0f\"\nset autoscale xfix\n"
                  : "set logscale x 10\nset autoscale xfix\n", fp);
    /* Log y where declared or where the (positive) data span 1000x. */
    int logy = !(fg->flags & PLOT_F_FRACTION) && rg->y_pos && rg->ymin > 0 &&
               ((fg->flags & PLOT_F_LOGY) || rg->ymax / rg->ymin >= 1000);
    if (logy)
        fputs("set logscale y\nset format y \"%.0e\"\n", fp);
    if (fg->flags & PLOT_F_FRACTION)
        fputs("set yrange [-0.04:1.06]\n", fp); /* 0 and 1 inside the frame */
    else if (fg->flags & PLOT_F_ONE) {
        /* y = 1 inside the frame, not on its edge */
        double top = fmax(isfinite(rg->ymax) ? rg->ymax : 1, 1);
        fprintf(fp, "set yrange [*:%.17g]\n", logy ? 2 * top : 1.1 * top);
    }
    with_unit(text, sizeof text, fg->title, fg->unit);
    snprintf(fg->caption, sizeof fg->caption, "%s against %s; one line per run.", text,
             fg->x_title);
    double tl = (fg->flags & PLOT_F_TRAIN) ? train_len_of(c, fg) : 0;
    if (tl > 0 && !fg->categorical && tl >= rg->xmin && tl <= rg->xmax) {
        fprintf(fp, "set arrow 1 from %.17g, graph 0 to %.17g, graph 1 nohead dt 3 lw 1.5 "
                    "lc rgb \"gray30\" front\n"
                    "set label 1 'training length %.17g' at %.17g, graph 0.96 offset 0.5,0 "
                    "left front tc rgb \"gray30\"\n",
                tl, tl, tl, tl);
        size_t len = strlen(fg->caption);
        snprintf(fg->caption + len, sizeof fg->caption - len,
                 " Dotted vertical line: the training length, %.17g tokens.", tl);
    }
    fputs("plot ", fp);
    for (size_t si = 0; si < fg->n; si++) {
        char label[512];
        plot_series_label(c, fg, si, label, sizeof label);
        if (si)
            fputs(", \\\n     ", fp);
        if (si == 0) {
            snprintf(file, sizeof file, "%s.dat", name);
            gp_string(fp, file);
        } else {
            fputs("\"\"", fp);
        }
        size_t every = fg->s[si].n / 16 + 1; /* about 16 marks a line */
        /* later series draw smaller marks over earlier ones: where series
         * coincide, their marks nest instead of hiding each other */
        double ps = fmin(0.8 + 0.25 * (double)(fg->n - 1 - si), 2.3);
        fprintf(fp, " index %zu using %s with linespoints lc %zu dt %zu pt %d ps %.2f pi %zu "
                    "title ",
                si, fg->categorical ? "2:xtic(1)" : "1:2", si % 8 + 1, si % 5 + 1,
                point_types[si % (sizeof point_types / sizeof point_types[0])], ps, every);
        gp_string(fp, label);
    }
    for (size_t r = 0; r < n_refs; r++) {
        fprintf(fp, ", \\\n     \"\" index %zu using 1:2 with lines dt 2 lw 1.5 lc rgb \"black\" "
                    "title ", fg->n + r);
        gp_string(fp, ref_names[r]);
        size_t len = strlen(fg->caption);
        snprintf(fg->caption + len, sizeof fg->caption - len, " Dashed black: %s.", ref_names[r]);
    }
    if ((fg->flags & PLOT_F_ONE) && !fg->categorical) {
        fputs(", \\\n     1 with lines dt 3 lw 2 lc rgb \"black\" "
              "title 'y = 1 (error at its bound)'", fp);
        size_t len = strlen(fg->caption);
        snprintf(fg->caption + len, sizeof fg->caption - len,
                 " Dotted horizontal line: 1 (error at its bound).");
    }
    fputs("\n", fp);
    if (svg)
        fputs("set terminal svg size 1000,680 dynamic font \"sans,11\"\n"
              "set termoption noenhanced\nset output out_svg\nreplot\n", fp);
    fputs("unset output\n", fp);
    note_coinciding(c, fg, rg, logy);
    return rl_atomic_commit(&af, err);
}

rl_status plot_figure_render(const plot_ctx *c, plot_figure *fg, const plot_figure *figs,
                             size_t n_figs, const char *prog, int svg, rl_error *err)
{
    char pd[1100], dat[1300], gp[1300], script[200], log[1200], outputs[600];
    char png[1300], pngtmp[1400], svgf[1300], svgtmp[1400];
    const char *name = fg->name;
    snprintf(pd, sizeof pd, "%s/plots", c->dir);
    snprintf(dat, sizeof dat, "%s/%s.dat", pd, name);
    snprintf(gp, sizeof gp, "%s/%s.gp", pd, name);
    snprintf(script, sizeof script, "%s.gp", name);
    snprintf(log, sizeof log, "%s/gnuplot.log", pd);
    snprintf(png, sizeof png, "%s/%s.png", pd, name);
    snprintf(svgf, sizeof svgf, "%s/%s.svg", pd, name);
    snprintf(pngtmp, sizeof pngtmp, "%s.tmp.%ld", png, (long)getpid());
    snprintf(svgtmp, sizeof svgtmp, "%s.tmp.%ld", svgf, (long)getpid());
    plot_series *refs[4];
    const char *ref_names[4];
    size_t n_refs = find_refs(fg, figs, n_figs, refs, ref_names, 4);
    ranges rg;
    rl_status st;
    if ((st = write_data(c, fg, refs, n_refs, dat, &rg, err)) ||
        (st = write_script(c, fg, name, ref_names, n_refs, &rg, svg, gp, err)))
        return st;
    /* the temporary names, from the safe name and our pid only */
    snprintf(outputs, sizeof outputs, "out_png='%s.png.tmp.%ld'; out_svg='%s.svg.tmp.%ld'", name,
             (long)getpid(), name, (long)getpid());
    if ((st = run_gnuplot(prog, pd, script, outputs, gp, log, err))) {
        remove(pngtmp);
        remove(svgtmp);
        return st;
    }
    if (rename(pngtmp, png) != 0 || (svg && rename(svgtmp, svgf) != 0))
        return rl_fail(err, RL_ERR_IO, "%s: cannot rename the figure into place: %s", png,
                       strerror(errno));
    fg->drawn = 1;
    return RL_OK;
}
