/* plot_gnuplot.c — one figure drawn by gnuplot: its data file (.dat), its
 * script (.gp), and gnuplot run on the script without a shell. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/rl_util.h"
#include "plot/plot_int.h"

extern char **environ;

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

rl_status plot_figure_render(const plot_ctx *c, plot_figure *fg, const plot_figure *figs,
                             size_t n_figs, const char *prog, int svg, rl_error *err)
{
    char name[128], dat[1200], gp[1200], png[1200], pngtmp[1300], svgf[1200], svgtmp[1300];
    plot_safe_name(fg->metric, name, sizeof name);
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
    plot_series *refs[4];
    const char *ref_names[4];
    size_t n_refs = 0;
    for (size_t i = 0; i < n_figs && n_refs < 4 && !fg->categorical; i++) {
        if (!figs[i].is_ref || figs[i].categorical || !plot_same_table(figs[i].metric, fg->metric) ||
            figs[i].n == 0)
            continue;
        plot_series *best = &figs[i].s[0];
        for (size_t k = 1; k < figs[i].n; k++)
            if (figs[i].s[k].n > best->n)
                best = &figs[i].s[k];
        refs[n_refs] = best;
        ref_names[n_refs++] = strrchr(figs[i].metric, '.') + 1;
    }
    for (size_t si = 0; si < fg->n + n_refs; si++) {
        plot_series *s = si < fg->n ? &fg->s[si] : refs[si - fg->n];
        if (!fg->categorical && (st = plot_sort_series(c, s, err))) {
            rl_atomic_abort(&af);
            return st;
        }
        fprintf(af.fp, "# %s\n", s->run_id);
        for (size_t k = 0; k < s->n; k++) {
            double x = 0, y;
            const char *xs = plot_field(c, s->rows[k], c->c_x);
            if (!plot_parse_num(plot_field(c, s->rows[k], c->c_value), &y))
                continue; /* NaN/empty values are skipped, not plotted as 0 */
            if (fg->categorical) {
                fputc('"', af.fp);
                for (const char *q = xs; *q; q++)
                    fputc(*q == '"' ? '\'' : *q, af.fp);
                fprintf(af.fp, "\" %.17g\n", y);
            } else {
                plot_parse_num(xs, &x);
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
        plot_series_label(c, fg, si, label, sizeof label);
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
