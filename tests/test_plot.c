/* plot/: figures and report from a results directory. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plot/plot.h"
#include "rl_test.h"

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = calloc((size_t)n + 1, 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    if (len)
        *len = (size_t)n;
    return b;
}

static void make_dir(char *dir)
{
    strcpy(dir, "/tmp/rlplotXXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void rm_tree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Two runs of a decay-like table over r = 1..1024 declared log-x, its
 * reference curve, one categorical table (distance buckets), scalar rows, a
 * quoted field — in the tidy format (docs/runner.md "results.csv"). */
#define HEAD                                                                                    \
    "run_id,device,kind,status,encoding,type,factor,head_dim,heads,kv_heads,train_len,seed,"    \
    "params.max_distance,metric,length,x,value,unit,title,x_name,x_unit,x_title,plot\n"
#define A1 "a1,llvmpipe,decay,passed,rope,rope,,64,2,1,512,1,16,"
#define B2 "b2,llvmpipe,decay,passed,\"yarn, x4\",yarn,4,64,2,1,512,1,32,"
#define BOUND ",,relative bound,r,tokens,relative distance r,log-x\n"
static const char *results =
    HEAD
    A1 "decay.bound,,1,20.5" BOUND
    A1 "decay.bound,,1024,3.25" BOUND
    A1 "decay.bound,,32,8.0" BOUND
    B2 "decay.bound,,1,20.5" BOUND
    B2 "decay.bound,,1024,5.5" BOUND
    A1 "decay.one_over_r,,1,1,,1/r,r,tokens,relative distance r,log-x ref\n"
    A1 "decay.one_over_r,,1024,0.0009765625,,1/r,r,tokens,relative distance r,log-x ref\n"
    A1 "mass,,0,0.5,,attention mass,bucket,,distance bucket,\n"
    A1 "mass,,2-3,0.25,,attention mass,bucket,,distance bucket,\n"
    A1 "verify.max_abs_error,,,1.5e-07,,max abs error,,,,\n"
    B2 "verify.max_abs_error,,,2.5e-07,,max abs error,,,,\n";

START_TEST(renders_png_svg_and_report)
{
    char dir[64], path[256];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    write_file(path, results);
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    write_file(path, "{\"runs\": [{\"id\": \"a1\", \"status\": \"ok\"},"
                     " {\"id\": \"b2\", \"status\": \"failed\", \"reason\": \"out of device memory\"}]}");
    plot_result r;
    rl_error err = {0};
    ck_assert_msg(plot_dir(dir, NULL, &r, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(r.n_figures, 2);
    ck_assert_uint_eq(r.n_runs, 2);
    ck_assert_uint_eq(r.n_scalars, 2);
    static const char *const names[] = {"decay.bound", "mass"};
    for (int i = 0; i < 2; i++) {
        size_t len;
        snprintf(path, sizeof path, "%s/plots/%s.png", dir, names[i]);
        char *png = read_file(path, &len);
        ck_assert_msg(png != NULL, "%s missing", path);
        ck_assert_uint_gt(len, 1000);
        ck_assert_mem_eq(png, "\x89PNG\r\n\x1a\n", 8);
        free(png);
        snprintf(path, sizeof path, "%s/plots/%s.svg", dir, names[i]);
        char *svg = read_file(path, NULL);
        ck_assert_ptr_nonnull(svg);
        ck_assert_ptr_nonnull(strstr(svg, "<svg"));
        ck_assert_ptr_nonnull(strstr(svg, "</svg>"));
        free(svg);
    }
    /* log x as declared; legend names runs by encoding and the parameter
     * that differs; titles and axis labels are the human ones with units */
    snprintf(path, sizeof path, "%s/plots/decay.bound.gp", dir);
    char *gp = read_file(path, NULL);
    ck_assert_ptr_nonnull(strstr(gp, "set logscale x"));
    ck_assert_ptr_null(strstr(gp, "set logscale y"));
    ck_assert_ptr_nonnull(strstr(gp, "title 'rope max_distance=16'"));
    ck_assert_ptr_nonnull(strstr(gp, "title 'yarn, x4 max_distance=32'"));
    ck_assert_ptr_nonnull(strstr(gp, "set xlabel 'relative distance r (tokens)'"));
    ck_assert_ptr_nonnull(strstr(gp, "set title 'relative bound'"));
    /* two encodings: a colour each (a dash type per variant of one), and
     * point types that differ */
    ck_assert_ptr_nonnull(strstr(gp, "lc rgb \"#0072b2\" dt 1 pt 7"));
    ck_assert_ptr_nonnull(strstr(gp, "lc rgb \"#d55e00\" dt 1 pt 5"));
    /* the "ref" column is a dashed reference inside the figure, not a
     * figure of its own (n_figures stays 2) */
    ck_assert_ptr_nonnull(strstr(gp, "index 2 using 1:2 with lines dt 2"));
    ck_assert_ptr_nonnull(strstr(gp, "title '1/r'"));
    free(gp);
    /* Data sorted by x within a run. */
    snprintf(path, sizeof path, "%s/plots/decay.bound.dat", dir);
    char *dat = read_file(path, NULL);
    ck_assert_ptr_nonnull(strstr(dat, "1 20.5\n32 8\n1024 3.25\n"));
    free(dat);
    snprintf(path, sizeof path, "%s/report.md", dir);
    char *md = read_file(path, NULL);
    ck_assert_ptr_nonnull(strstr(md, "![relative bound](plots/decay.bound.png)"));
    ck_assert_ptr_nonnull(
        strstr(md, "| b2 | llvmpipe | decay | yarn, x4 | 32 | failed: out of device memory |"));
    /* scalars: an encoding x metric table per kind, readable precision */
    ck_assert_ptr_nonnull(strstr(md, "| run | encoding | params.max_distance | max abs error |"));
    ck_assert_ptr_nonnull(strstr(md, "| a1 | rope | 16 | 1.5e-07 |"));
    free(md);
    rm_tree(dir);
}
END_TEST

/* Every ](target) link of DIR/report.md names a file that exists. */
static void assert_report_links_exist(const char *dir)
{
    char path[600];
    snprintf(path, sizeof path, "%s/report.md", dir);
    char *md = read_file(path, NULL);
    ck_assert_ptr_nonnull(md);
    size_t n = 0;
    for (const char *p = strstr(md, "]("); p; p = strstr(p + 2, "](")) {
        const char *e = strchr(p + 2, ')');
        ck_assert_ptr_nonnull(e);
        snprintf(path, sizeof path, "%s/%.*s", dir, (int)(e - p - 2), p + 2);
        ck_assert_msg(access(path, F_OK) == 0, "report.md links %s, which does not exist", path);
        n++;
    }
    ck_assert_uint_gt(n, 0);
    free(md);
}

/* An entropy-like table over lengths 64..256 (a 4x span, declared log-x,
 * with the training length), its ln N reference, retrieval-like curves at
 * two context lengths (fractions), a pair index over decades (linear), a
 * constant column and a bookkeeping one, an error/bound column, and two
 * runs whose curves coincide. */
#define E1 "e1,cpu,entropy,passed,rope,rope,,64,2,1,128,1,"
#define E2 "e2,cpu,entropy,passed,pi,linear,4,64,2,1,128,1,"
#define E3 "e3,cpu,entropy,passed,ntk,ntk,4,64,2,1,128,1,"
#define HEAD2                                                                                   \
    "run_id,device,kind,status,encoding,type,factor,head_dim,heads,kv_heads,train_len,seed,"    \
    "metric,length,x,value,unit,title,x_name,x_unit,x_title,plot\n"
#define ENT ",nats,entropy,length_tokens,tokens,context length N,log-x train-len\n"
#define LN ",nats,ln N,length_tokens,tokens,context length N,log-x train-len ref\n"
#define ACC ",,accuracy,distance_tokens,tokens,needle distance,log-x train-len fraction\n"
#define PAIR ",tokens,wavelength,pair,,rotary pair index j,\n"
static const char *marks =
    HEAD2
    E1 "h.entropy_nats,64,64,2" ENT E1 "h.entropy_nats,128,128,3" ENT
    E1 "h.entropy_nats,256,256,4" ENT
    E2 "h.entropy_nats,64,64,2" ENT E2 "h.entropy_nats,128,128,3" ENT
    E2 "h.entropy_nats,256,256,4" ENT
    E3 "h.entropy_nats,64,64,1" ENT E3 "h.entropy_nats,128,128,2" ENT
    E3 "h.entropy_nats,256,256,2.5" ENT
    E1 "h.ref_ln,64,64,4.1589" LN E1 "h.ref_ln,128,128,4.852" LN E1 "h.ref_ln,256,256,5.545" LN
    E1 "r.accuracy,256,1,1" ACC E1 "r.accuracy,256,200,0.5" ACC
    E1 "r.accuracy,512,1,1" ACC E1 "r.accuracy,512,400,0.25" ACC
    E1 "r.trials,256,1,8,trials,trials,distance_tokens,tokens,needle distance,log-x hide\n"
    E1 "r.trials,256,200,16,trials,trials,distance_tokens,tokens,needle distance,log-x hide\n"
    E1 "c.wavelength,,0,6" PAIR E1 "c.wavelength,,1,60" PAIR E1 "c.wavelength,,63,60000" PAIR
    E1 "c.train,,0,128,tokens,training length,pair,,rotary pair index j,\n"
    E1 "c.train,,63,128,tokens,training length,pair,,rotary pair index j,\n"
    E1 "p.error_over_bound,,1,0.25,,error / bound,position,tokens,position,log-x line-1\n"
    E1 "p.error_over_bound,,64,0.5,,error / bound,position,tokens,position,log-x line-1\n";

START_TEST(figures_carry_reference_marks_and_skip_constants)
{
    char dir[64], path[256];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    write_file(path, marks);
    plot_result r;
    rl_error err = {0};
    ck_assert_msg(plot_dir(dir, NULL, &r, &err) == RL_OK, "%s", err.msg);
    /* entropy, accuracy at 256 and at 512, wavelength, error/bound; not the
     * reference, the constant training length or the bookkeeping trials */
    ck_assert_uint_eq(r.n_figures, 5);
    snprintf(path, sizeof path, "%s/plots/c.train.png", dir);
    ck_assert_int_ne(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/plots/r.trials_n256.png", dir);
    ck_assert_int_ne(access(path, F_OK), 0);
    /* log x over a 4x span (ln N straight), training length marked */
    snprintf(path, sizeof path, "%s/plots/h.entropy_nats.gp", dir);
    char *gp = read_file(path, NULL);
    ck_assert_ptr_nonnull(strstr(gp, "set logscale x 2"));
    ck_assert_ptr_nonnull(strstr(gp, "set arrow 1 from 128, graph 0 to 128, graph 1 nohead"));
    ck_assert_ptr_nonnull(strstr(gp, "set ylabel 'entropy (nats)'"));
    ck_assert_ptr_nonnull(strstr(gp, "title 'ln N'"));
    free(gp);
    /* one figure per context length, 0 and 1 inside the frame */
    snprintf(path, sizeof path, "%s/plots/r.accuracy_n512.gp", dir);
    gp = read_file(path, NULL);
    ck_assert_ptr_nonnull(gp);
    ck_assert_ptr_nonnull(strstr(gp, "set title 'accuracy, N = 512 tokens'"));
    ck_assert_ptr_nonnull(strstr(gp, "set yrange [-0.04:1.06]"));
    free(gp);
    /* the pair index stays linear though it spans decades */
    snprintf(path, sizeof path, "%s/plots/c.wavelength.gp", dir);
    gp = read_file(path, NULL);
    ck_assert_ptr_null(strstr(gp, "set logscale x"));
    free(gp);
    snprintf(path, sizeof path, "%s/plots/p.error_over_bound.gp", dir);
    gp = read_file(path, NULL);
    ck_assert_ptr_nonnull(strstr(gp, "1 with lines dt 3"));
    free(gp);
    /* captions: coinciding series named, skipped figures said */
    snprintf(path, sizeof path, "%s/report.md", dir);
    char *md = read_file(path, NULL);
    ck_assert_ptr_nonnull(strstr(md, "Coinciding"));
    ck_assert_ptr_nonnull(strstr(md, ": rope = pi."));
    ck_assert_ptr_null(strstr(md, "= ntk"));
    ck_assert_ptr_nonnull(strstr(md, "`c.train` (constant 128 tokens)"));
    ck_assert_ptr_nonnull(strstr(md, "`r.trials` at N = 256 (bookkeeping)"));
    free(md);
    assert_report_links_exist(dir);
    rm_tree(dir);
}
END_TEST

/* A .gp file re-renders its figure where it lies: `cd plots && gnuplot
 * NAME.gp` writes NAME.png and NAME.svg beside it, naming no other path. */
START_TEST(gp_files_rerender_where_they_lie)
{
    char dir[64], path[256], cmd[600];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    write_file(path, marks);
    rl_error err = {0};
    ck_assert_msg(plot_dir(dir, NULL, NULL, &err) == RL_OK, "%s", err.msg);
    static const char *const names[] = {"h.entropy_nats", "r.accuracy_n256", "c.wavelength"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/plots/%s.png", dir, names[i]);
        ck_assert_int_eq(remove(path), 0);
        snprintf(path, sizeof path, "%s/plots/%s.svg", dir, names[i]);
        ck_assert_int_eq(remove(path), 0);
        snprintf(cmd, sizeof cmd, "cd '%s/plots' && gnuplot %s.gp 2>/dev/null", dir, names[i]);
        ck_assert_int_eq(system(cmd), 0);
        size_t len;
        snprintf(path, sizeof path, "%s/plots/%s.png", dir, names[i]);
        char *png = read_file(path, &len);
        ck_assert_msg(png != NULL, "%s not re-rendered", path);
        ck_assert_mem_eq(png, "\x89PNG\r\n\x1a\n", 8);
        free(png);
        snprintf(path, sizeof path, "%s/plots/%s.svg", dir, names[i]);
        ck_assert_int_eq(access(path, F_OK), 0);
    }
    /* nothing left under a temporary name */
    snprintf(cmd, sizeof cmd, "ls '%s/plots' | grep -q tmp", dir);
    ck_assert_int_ne(system(cmd), 0);
    rm_tree(dir);
}
END_TEST

/* results.csv written before the tidy format is refused, saying how to
 * rewrite it. */
START_TEST(old_format_results_are_refused_clearly)
{
    char dir[64], path[256];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    write_file(path, "run_id,device,kind,encoding,status,metric,x,value,x_label,y_label\n"
                     "r,cpu,decay,rope,passed,decay.bound,1,2,r,bound\n");
    rl_error err = {0};
    ck_assert_int_eq(plot_dir(dir, NULL, NULL, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "results.csv:1: results.csv in the old format"));
    ck_assert_ptr_nonnull(strstr(err.msg, "ropelab merge"));
    rm_tree(dir);
}
END_TEST

START_TEST(missing_gnuplot_says_how_to_install)
{
    char dir[64], path[256];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    write_file(path, results);
    plot_options o = {.gnuplot = "/nonexistent/gnuplot"};
    rl_error err = {0};
    ck_assert_int_eq(plot_dir(dir, &o, NULL, &err), RL_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err.msg, "apt-get install gnuplot-nox"));
    snprintf(path, sizeof path, "%s/report.md", dir);
    ck_assert_int_ne(access(path, F_OK), 0); /* nothing half-written */
    rm_tree(dir);
}
END_TEST

START_TEST(malformed_results_are_reported_with_line)
{
    char dir[64], path[256];
    rl_error err = {0};
    make_dir(dir);
    ck_assert_int_eq(plot_dir(dir, NULL, NULL, &err), RL_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.msg, "results.csv: cannot open"));
    snprintf(path, sizeof path, "%s/results.csv", dir);
    write_file(path, "run_id,encoding,x,value,unit\nr,rope,1,2,\n");
    ck_assert_int_eq(plot_dir(dir, NULL, NULL, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "results.csv:1: missing column 'metric'"));
    write_file(path, "run_id,encoding,metric,x,value,unit\nr,rope,m,1,2,\nr,rope,m,2,\n");
    ck_assert_int_eq(plot_dir(dir, NULL, NULL, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "results.csv:3: 5 fields, the header has 6"));
    write_file(path, "run_id,encoding,metric,x,value,unit\nr,\"rope,m,1,2\n");
    ck_assert_int_eq(plot_dir(dir, NULL, NULL, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "unterminated quoted field"));
    rm_tree(dir);
}
END_TEST

/* ---- no input becomes gnuplot code ------------------------------------- */

/* mkdir -p */
static void make_path(const char *path)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            ck_assert_msg(mkdir(buf, 0777) == 0 || errno == EEXIST, "mkdir %s", buf);
            *p = '/';
        }
    ck_assert_msg(mkdir(buf, 0777) == 0 || errno == EEXIST, "mkdir %s", buf);
}

/* One CSV field, always quoted ("" for a quote). */
static void csv_put(FILE *f, const char *s, char sep)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
    fputc(sep, f);
}

/* A hostile string for field `tag`: every way into gnuplot code — a
 * backquote command, a shell-style $(...), a ' and a " to leave a quoted
 * string, a @macro, a backslash, a newline starting a command of its own —
 * where each command would create a file in the marker directory mk. No
 * '.' in it: a reference metric's name is what follows the last '.'. */
static void payload(char *out, size_t cap, const char *mk, const char *tag)
{
    snprintf(out, cap,
             "L%s `touch %s/b%s` $(touch %s/s%s) q'q d\"d @GPVAL_PWD b\\\\ "
             "x' ; system 'touch %s/a%s' ; print '\nsystem('touch %s/n%s')\n",
             tag, mk, tag, mk, tag, mk, tag, mk, tag);
}

/* The text payload(tag) is drawn as: control characters as spaces, every
 * quote, backslash and @ as written (a categorical x value's " as '). */
static void rendered(char *out, size_t cap, const char *mk, const char *tag)
{
    payload(out, cap, mk, tag);
    for (char *p = out; *p; p++)
        if (*p == '\n')
            *p = ' ';
}

static size_t count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* results.csv from someone else, in which every string that reaches a
 * gnuplot script is hostile: the swept parameter's column name (a short
 * payload: legends are cut at 511 bytes) and values, device, encoding, run
 * id (a legend falls back to it), metric (title and reference name),
 * x_label, y_label and categorical x values. */
static void write_hostile_results(const char *dir, const char *mk)
{
    char path[1400], p[12][1024], col[600];
    static const char *const tags[] = {"val1", "dev1", "enc1", "run3", "met", "ref",
                                       "xl",   "yl",   "cat",  "val2", "met2", "unit"};
    for (int i = 0; i < 12; i++)
        payload(p[i], sizeof p[i], mk, tags[i]);
    snprintf(col, sizeof col, "Lcol `touch %s/bcol` $(touch %s/scol) q'q d\"d @GPVAL_PWD\n"
             "system 'touch %s/ncol'", mk, mk, mk);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("run_id,device,encoding,", f);
    csv_put(f, col, ',');
    fputs("metric,x,value,x_title,title,unit\n", f);
    char metric[1100], ref[2200], plain[1100];
    snprintf(metric, sizeof metric, "%s.t", p[4]);
    snprintf(ref, sizeof ref, "%s.ref_%s", p[4], p[5]);
    snprintf(plain, sizeof plain, "%s.u", p[10]);
    for (int x = 1; x <= 2; x++) {
        /* two runs that differ in the parameter, one with a hostile encoding */
        fputs("r1,d,", f);
        csv_put(f, p[2], ',');
        csv_put(f, p[0], ',');
        csv_put(f, metric, ',');
        fprintf(f, "%d,%d,", x, x + 1);
        csv_put(f, p[6], ',');
        csv_put(f, p[7], ',');
        csv_put(f, p[11], '\n');
        fputs("r2,d,rope,", f);
        csv_put(f, p[9], ',');
        csv_put(f, metric, ',');
        fprintf(f, "%d,%d,xl,yl,", x, x + 2);
        csv_put(f, p[11], '\n');
        /* a reference curve of that table, in the same unit */
        fputs("r1,d,rope,1,", f);
        csv_put(f, ref, ',');
        fprintf(f, "%d,%d,xl,", x, x);
        csv_put(f, p[5], ',');
        csv_put(f, p[11], '\n');
        /* one run on two devices: the device goes into the legend */
        fputs("r1,", f);
        csv_put(f, p[1], ',');
        fprintf(f, "rope,1,dev.w,%d,%d,xl,yl,\nr1,d,rope,1,dev.w,%d,%d,xl,yl,\n", x, x, x, x + 1);
        /* one series without encoding: its legend is the run id */
        csv_put(f, p[3], ',');
        fputs("d,,1,", f);
        csv_put(f, plain, ',');
        fprintf(f, "%d,%d,xl,", x, x);
        csv_put(f, p[10], ',');
        fputs("\n", f);
        /* categorical x values */
        fputs("r1,d,rope,1,cat.v,", f);
        csv_put(f, x == 1 ? p[8] : "plain", ',');
        fprintf(f, "%d,xl,yl,\n", x);
    }
    fclose(f);
}

START_TEST(hostile_labels_and_directory_never_run_as_gnuplot_code)
{
    char base[64], mk[128], dir[1200], path[2600], want[1200];
    make_dir(base);
    snprintf(mk, sizeof mk, "%s/mk", base);
    make_path(mk);
    /* the results directory itself is hostile too */
    snprintf(dir, sizeof dir, "%s/o`touch %s/bdir` $(touch %s/sdir) q'q \"@GPVAL_PWD", base, mk,
             mk);
    make_path(dir);
    write_hostile_results(dir, mk);
    plot_result r;
    rl_error err = {0};
    rl_status st = plot_dir(dir, NULL, &r, &err);
    ck_assert_uint_eq(count_entries(mk), 0); /* no command ran */
    ck_assert_msg(st == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(r.n_figures, 4);
    /* ... and gnuplot drew every label as text */
    char *svg = NULL;
    DIR *d;
    snprintf(path, sizeof path, "%s/plots", dir);
    ck_assert_ptr_nonnull(d = opendir(path));
    size_t n_svg = 0, total = 0;
    struct dirent *e;
    char *all = calloc(1, 1);
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 4, ".svg"))
            continue;
        snprintf(path, sizeof path, "%s/plots/%s", dir, e->d_name);
        size_t len;
        svg = read_file(path, &len);
        ck_assert_ptr_nonnull(strstr(svg, "</svg>"));
        all = realloc(all, total + len + 1);
        memcpy(all + total, svg, len + 1);
        total += len;
        free(svg);
        n_svg++;
    }
    closedir(d);
    ck_assert_uint_eq(n_svg, 4);
    /* (the metric names themselves are file names, never drawn) */
    static const char *const shown[] = {"val1", "dev1", "enc1", "run3", "unit", "ref",
                                        "xl",   "yl",   "cat",  "val2", "met2"};
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
        rendered(want, sizeof want, mk, shown[i]);
        if (!strcmp(shown[i], "val1")) /* the end of its legend is past 511 bytes */
            *strstr(want, "@GPVAL_PWD") = '\0';
        if (!strcmp(shown[i], "cat")) /* a data string: " written as ' */
            *strchr(want, '"') = '\'';
        ck_assert_msg(strstr(all, want) != NULL, "label '%s' not drawn", want);
    }
    snprintf(want, sizeof want, "Lcol `touch %s/bcol` $(touch %s/scol) q'q d\"d @GPVAL_PWD "
             "system 'touch %s/ncol'=", mk, mk, mk);
    ck_assert_msg(strstr(all, want) != NULL, "column name '%s' not drawn", want);
    ck_assert_ptr_nonnull(strstr(all, "@GPVAL_PWD")); /* no macro expansion */
    free(all);
    /* no path, no newline of input and no double-quoted label in a script */
    snprintf(path, sizeof path, "%s/plots", dir);
    ck_assert_ptr_nonnull(d = opendir(path));
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 3 || strcmp(e->d_name + l - 3, ".gp"))
            continue;
        snprintf(path, sizeof path, "%s/plots/%s", dir, e->d_name);
        char *gp = read_file(path, NULL);
        ck_assert_ptr_null(strstr(gp, "/o`touch")); /* the directory's name */
        ck_assert_ptr_null(strstr(gp, "\nsystem("));
        ck_assert_ptr_null(strstr(gp, "\"L")); /* no label in double quotes */
        free(gp);
    }
    closedir(d);
    rm_tree(base);
}
END_TEST

/* gnuplot reads a file name "<cmd" from a command and writes "|cmd" to
 * one: a results directory named so (relative, as `ropelab plot '|...'`
 * would give it) must not become either. */
START_TEST(directory_named_like_a_gnuplot_pipe_runs_nothing)
{
    char base[64], mk[128], cwd[1024], dir[600], path[800];
    make_dir(base);
    snprintf(mk, sizeof mk, "%s/mk", base);
    make_path(mk);
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir(base), 0);
    static const char *const lead[] = {"|", "<"};
    for (int i = 0; i < 2; i++) {
        snprintf(dir, sizeof dir, "%stouch %s/p%d #", lead[i], mk, i);
        make_path(dir);
        snprintf(path, sizeof path, "%s/results.csv", dir);
        write_file(path, results);
        plot_result r;
        rl_error err = {0};
        rl_status st = plot_dir(dir, NULL, &r, &err);
        ck_assert_uint_eq(count_entries(mk), 0); /* no command ran */
        ck_assert_msg(st == RL_OK, "%s: %s", dir, err.msg);
        ck_assert_uint_eq(r.n_figures, 2);
        snprintf(path, sizeof path, "%s/plots/mass.png", dir);
        ck_assert_int_eq(access(path, F_OK), 0);
    }
    ck_assert_int_eq(chdir(cwd), 0);
    ck_assert_uint_eq(count_entries(mk), 0);
    rm_tree(base);
}
END_TEST

/* gnuplot given as a relative path still runs (it is started in DIR/plots).
 * The link to it lies beside the results folder: a link inside one is
 * refused (plot never follows a link in a folder it writes). */
START_TEST(relative_gnuplot_path_still_runs)
{
    char base[64], cwd[1024], path[256];
    make_dir(base);
    snprintf(path, sizeof path, "%s/res", base);
    ck_assert_int_eq(mkdir(path, 0777), 0);
    snprintf(path, sizeof path, "%s/res/results.csv", base);
    write_file(path, results);
    char prog[1024];
    ck_assert(plot_find_program("gnuplot", prog, sizeof prog));
    snprintf(path, sizeof path, "%s/gp", base);
    ck_assert_int_eq(symlink(prog, path), 0);
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir(base), 0);
    plot_options o = {.gnuplot = "./gp", .no_svg = 1};
    plot_result r;
    rl_error err = {0};
    ck_assert_msg(plot_dir("res", &o, &r, &err) == RL_OK, "%s", err.msg);
    ck_assert_int_eq(chdir(cwd), 0);
    ck_assert_uint_eq(r.n_figures, 2);
    rm_tree(base);
}
END_TEST

/* ---- intervals, seeds, styles ------------------------------------------ */

static char *read_plot_file(const char *dir, const char *name)
{
    char path[300];
    snprintf(path, sizeof path, "%s/plots/%s", dir, name);
    char *t = read_file(path, NULL);
    ck_assert_msg(t != NULL, "%s missing", path);
    return t;
}

static size_t count_str(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* X_lo95 / X_hi95 rows (plot word ci) are X's interval, drawn as a band
 * around X's line, never as series; a summary pair bounds the summary X. */
#define CIH                                                                                     \
    "run_id,device,kind,status,encoding,type,factor,head_dim,heads,kv_heads,train_len,seed,"    \
    "metric,length,x,value,unit,title,x_name,x_unit,x_title,plot\n"
#define CR "c1,cpu,retrieval,passed,rope,rope,,64,1,1,128,1,"
#define ACC_T ",,accuracy,distance,tokens,needle distance,log-x fraction\n"
#define ACC_CI ",,accuracy bound,distance,tokens,needle distance,log-x fraction ci\n"
static const char *ci_results =
    CIH
    CR "r.accuracy,,1,0.5" ACC_T CR "r.accuracy,,4,0.75" ACC_T CR "r.accuracy,,16,0.25" ACC_T
    CR "r.accuracy_lo95,,1,0.375" ACC_CI CR "r.accuracy_lo95,,4,0.625" ACC_CI
    CR "r.accuracy_lo95,,16,0.125" ACC_CI
    CR "r.accuracy_hi95,,1,0.625" ACC_CI CR "r.accuracy_hi95,,4,0.875" ACC_CI
    CR "r.accuracy_hi95,,16,0.375" ACC_CI
    CR "acc,,,0.75,,accuracy,,,,\n"
    CR "acc_lo95,,,0.7,,accuracy bound,,,,ci\n"
    CR "acc_hi95,,,0.8,,accuracy bound,,,,ci\n";

START_TEST(interval_bounds_are_bands_not_series)
{
    char dir[64], path[256];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    write_file(path, ci_results);
    plot_result r;
    rl_error err = {0};
    ck_assert_msg(plot_dir(dir, NULL, &r, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(r.n_figures, 1);
    snprintf(path, sizeof path, "%s/plots/r.accuracy_lo95.png", dir);
    ck_assert_int_ne(access(path, F_OK), 0);
    char *dat = read_plot_file(dir, "r.accuracy.dat");
    ck_assert_ptr_nonnull(strstr(dat, "1 0.5 0.375 0.625\n4 0.75 0.625 0.875\n"
                                      "16 0.25 0.125 0.375\n"));
    free(dat);
    char *gp = read_plot_file(dir, "r.accuracy.gp");
    ck_assert_ptr_nonnull(strstr(gp, "index 0 using 1:3:4 with filledcurves fs transparent"));
    ck_assert_ptr_nonnull(strstr(gp, "notitle"));
    ck_assert_uint_eq(count_str(gp, "with linespoints"), 2); /* one line, PNG and SVG */
    free(gp);
    snprintf(path, sizeof path, "%s/report.md", dir);
    char *md = read_file(path, NULL);
    ck_assert_ptr_nonnull(strstr(md, "Shaded band: the 95 % interval results.csv gives"));
    ck_assert_ptr_nonnull(strstr(md, "| accuracy [95 % interval] |"));
    ck_assert_ptr_nonnull(strstr(md, "| 0.75 [0.7, 0.8] |"));
    ck_assert_ptr_null(strstr(md, "| accuracy bound |"));
    free(md);
    rm_tree(dir);
}
END_TEST

/* A line of one point has no band (gnuplot fills no area over one x): its
 * interval is an error bar, and several such lines are set side by side
 * around their x so that the bars do not overlap; beside a line of several
 * points, the one-point line alone gets a bar and no shift. */
#define R1(enc) "r" enc ",cpu,retrieval,passed," enc ",rope,,64,1,1,128,1,"
#define ONE_T ",,accuracy,length,tokens,length,log-x fraction\n"
#define ONE_CI ",,accuracy bound,length,tokens,length,log-x fraction ci\n"
static const char *one_point_results =
    CIH
    R1("a") "b.acc,,2048,0.9" ONE_T R1("a") "b.acc_lo95,,2048,0.7" ONE_CI
    R1("a") "b.acc_hi95,,2048,0.99" ONE_CI
    R1("b") "b.acc,,2048,0.2" ONE_T R1("b") "b.acc_lo95,,2048,0.05" ONE_CI
    R1("b") "b.acc_hi95,,2048,0.4" ONE_CI
    R1("a") "m.acc,,512,0.9" ONE_T R1("a") "m.acc,,1024,0.8" ONE_T
    R1("a") "m.acc_lo95,,512,0.8" ONE_CI R1("a") "m.acc_lo95,,1024,0.7" ONE_CI
    R1("a") "m.acc_hi95,,512,0.95" ONE_CI R1("a") "m.acc_hi95,,1024,0.9" ONE_CI
    R1("b") "m.acc,,1024,0.3" ONE_T R1("b") "m.acc_lo95,,1024,0.1" ONE_CI
    R1("b") "m.acc_hi95,,1024,0.5" ONE_CI;

START_TEST(a_line_of_one_point_gets_an_error_bar)
{
    char dir[64], path[256];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    write_file(path, one_point_results);
    rl_error err = {0};
    plot_options o = {.no_svg = 1};
    plot_result r;
    ck_assert_msg(plot_dir(dir, &o, &r, &err) == RL_OK, "%s", err.msg);
    char *gp = read_plot_file(dir, "b.acc.gp");
    ck_assert_uint_eq(count_str(gp, "with filledcurves"), 0);
    ck_assert_uint_eq(count_str(gp, "with yerrorbars"), 2);
    /* two lines of one point: x times 2^(-0.02) and 2^(+0.02), marks and bars alike */
    ck_assert_uint_eq(count_str(gp, "using ($1*0.986233):2"), 2);
    ck_assert_uint_eq(count_str(gp, "using ($1*1.013959):2"), 2);
    ck_assert_ptr_nonnull(strstr(gp, "set offsets graph 0.08, graph 0.08"));
    free(gp);
    gp = read_plot_file(dir, "m.acc.gp");
    ck_assert_uint_eq(count_str(gp, "with filledcurves"), 1);
    ck_assert_ptr_nonnull(strstr(gp, "index 1 using 1:2:3:4 with yerrorbars"));
    ck_assert_ptr_null(strstr(gp, "$1*"));
    free(gp);
    snprintf(path, sizeof path, "%s/report.md", dir);
    char *md = read_file(path, NULL);
    ck_assert_ptr_nonnull(strstr(md, "Error bars: the 95 % interval results.csv gives"));
    ck_assert_ptr_nonnull(strstr(md, "Lines of one point are set side by side"));
    ck_assert_ptr_nonnull(strstr(md, "Shaded band (error bars on a line of one point)"));
    free(md);
    rm_tree(dir);
}
END_TEST

/* Runs that differ only in their seed (the seed column, or a swept
 * data.seed) are one line: the mean, with a t-interval for 2..4 seeds and
 * a bootstrap one for 5 or more; runs with the same seed are never
 * averaged. */
#define SH                                                                                      \
    "run_id,device,kind,status,encoding,type,factor,head_dim,heads,kv_heads,train_len,seed,"    \
    "data.seed,metric,length,x,value,unit,title,x_name,x_unit,x_title,plot\n"
#define SV ",,score,x,,x,\n"
static const char *seed_results =
    SH
    "a1,cpu,k,passed,rope,rope,,64,1,1,128,1,,t.v,,1,1" SV
    "a1,cpu,k,passed,rope,rope,,64,1,1,128,1,,t.v,,2,10" SV
    "a2,cpu,k,passed,rope,rope,,64,1,1,128,2,,t.v,,1,2" SV
    "a2,cpu,k,passed,rope,rope,,64,1,1,128,2,,t.v,,2,10" SV
    "a3,cpu,k,passed,rope,rope,,64,1,1,128,3,,t.v,,1,3" SV
    "a3,cpu,k,passed,rope,rope,,64,1,1,128,3,,t.v,,2,10" SV
    "b1,cpu,k,passed,pi,linear,4,64,1,1,128,1,1,t.v,,1,1" SV
    "b2,cpu,k,passed,pi,linear,4,64,1,1,128,1,2,t.v,,1,2" SV
    "b3,cpu,k,passed,pi,linear,4,64,1,1,128,1,3,t.v,,1,3" SV
    "b4,cpu,k,passed,pi,linear,4,64,1,1,128,1,4,t.v,,1,4" SV
    "b5,cpu,k,passed,pi,linear,4,64,1,1,128,1,5,t.v,,1,5" SV
    "c1,cpu,k,passed,ntk,ntk,4,64,1,1,128,1,,t.v,,1,7" SV
    "c2,cpu,k,passed,ntk,ntk,4,64,1,1,128,1,,t.v,,1,8" SV;

START_TEST(seeds_are_one_line_with_an_interval)
{
    char dir[64], path[256];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    write_file(path, seed_results);
    rl_error err = {0};
    plot_options o = {.no_svg = 1};
    ck_assert_msg(plot_dir(dir, &o, NULL, &err) == RL_OK, "%s", err.msg);
    char *gp = read_plot_file(dir, "t.v.gp");
    /* rope (3 seeds), pi (5 seeds), and the two ntk runs kept apart; pi's
     * line is one point (x = 1): its interval is an error bar, rope's a band */
    ck_assert_uint_eq(count_str(gp, "with linespoints"), 4);
    ck_assert_uint_eq(count_str(gp, "with filledcurves"), 1);
    ck_assert_uint_eq(count_str(gp, "with yerrorbars"), 1);
    ck_assert_ptr_nonnull(strstr(gp, "title 'rope'"));
    ck_assert_ptr_nonnull(strstr(gp, "title 'pi'"));
    ck_assert_ptr_null(strstr(gp, "seed="));
    free(gp);
    char *dat = read_plot_file(dir, "t.v.dat");
    /* mean 2, s = 1: 2 -+ t(0.975, 2) / sqrt 3 = 2 -+ 2.4841377; all 10:
     * an interval of width 0 */
    ck_assert_ptr_nonnull(strstr(dat, "1 2 -0.484137"));
    ck_assert_ptr_nonnull(strstr(dat, " 4.484137"));
    ck_assert_ptr_nonnull(strstr(dat, "2 10 10 10\n"));
    /* pi: mean 3, a bootstrap interval inside [1, 5] around it */
    const char *b = strstr(dat, "# b1");
    ck_assert_ptr_nonnull(b);
    double x, y, lo, hi;
    ck_assert_int_eq(sscanf(strchr(b, '\n') + 1, "%lf %lf %lf %lf", &x, &y, &lo, &hi), 4);
    ck_assert_double_eq(y, 3);
    ck_assert(lo >= 1 && lo < 3 && hi > 3 && hi <= 5);
    free(dat);
    snprintf(path, sizeof path, "%s/report.md", dir);
    char *md = read_file(path, NULL);
    ck_assert_ptr_nonnull(strstr(md, "their mean (up to 5 seeds)"));
    ck_assert_ptr_nonnull(strstr(md, "t-interval for 2 to 4 seeds"));
    ck_assert_ptr_nonnull(strstr(md, "percentile bootstrap over seeds"));
    free(md);
    rm_tree(dir);
}
END_TEST

/* A fraction's interval over seeds stays inside [0, 1]: accuracies 0.9,
 * 1, 1 over 3 seeds have mean 0.9667, s = 0.0577, t-interval 0.9667 -+
 * 4.3027 * 0.0577 / sqrt 3 = [0.8232, 1.1101], drawn as [0.8232, 1]. */
START_TEST(a_fraction_interval_over_seeds_is_clipped_to_one)
{
    char dir[64], path[256];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    write_file(path, SH
               "a1,cpu,k,passed,rope,rope,,64,1,1,128,1,,t.acc,,1,0.9,,acc,x,,x,fraction\n"
               "a2,cpu,k,passed,rope,rope,,64,1,1,128,2,,t.acc,,1,1,,acc,x,,x,fraction\n"
               "a3,cpu,k,passed,rope,rope,,64,1,1,128,3,,t.acc,,1,1,,acc,x,,x,fraction\n");
    rl_error err = {0};
    plot_options o = {.no_svg = 1};
    ck_assert_msg(plot_dir(dir, &o, NULL, &err) == RL_OK, "%s", err.msg);
    char *dat = read_plot_file(dir, "t.acc.dat");
    double x, y, lo, hi;
    const char *b = strstr(dat, "# a1");
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(sscanf(strchr(b, '\n') + 1, "%lf %lf %lf %lf", &x, &y, &lo, &hi), 4);
    ck_assert_double_eq_tol(y, 0.966667, 1e-5);
    ck_assert_double_eq_tol(lo, 0.8232, 1e-4);
    ck_assert_double_eq(hi, 1);
    free(dat);
    rm_tree(dir);
}
END_TEST

/* n series over a swept key (p = 1..n, the first run not setting it; the
 * second half of encoding enc2 unless NULL), values v0 x^e (1 + i): a
 * results.csv for the style tests. */
static void write_series(const char *dir, size_t n, const char *enc2, double v0, int e,
                         const char *plot)
{
    char path[256];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("run_id,device,kind,status,encoding,type,factor,head_dim,heads,kv_heads,train_len,seed,"
          "params.p,metric,length,x,value,unit,title,x_name,x_unit,x_title,plot\n", f);
    for (size_t i = 0; i < n; i++)
        for (int x = 1; x <= 64; x *= 4) {
            const char *enc = enc2 && i >= n / 2 ? enc2 : "rope";
            char p[24] = "";
            if (i)
                snprintf(p, sizeof p, "%zu", enc2 ? i % (n / 2) + 1 : i);
            fprintf(f, "r%zu,cpu,k,passed,%s,rope,,64,1,1,16,1,%s,t.v,,%d,%.17g,tokens,value,x,"
                       "tokens,distance,%s\n",
                    i, enc, p, x, v0 * pow(x, e) * (1 + (double)i), plot);
        }
    fclose(f);
}

START_TEST(styles_legends_and_log_axes)
{
    char dir[64];
    make_dir(dir);
    rl_error err = {0};
    plot_options o = {.no_svg = 1};
    /* 9 series: 8 colours, solid, then the first colour dashed; the legend
     * right of the frame; no "(default)" for the run without p */
    write_series(dir, 9, NULL, 1, 0, "train-len");
    ck_assert_msg(plot_dir(dir, &o, NULL, &err) == RL_OK, "%s", err.msg);
    char *gp = read_plot_file(dir, "t.v.gp");
    static const char *const pal[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                      "#e69f00", "#56b4e9", "#000000", "#8c564b"};
    char want[80];
    for (size_t i = 0; i < 8; i++) {
        snprintf(want, sizeof want, "lc rgb \"%s\" dt 1 ", pal[i]);
        ck_assert_msg(count_str(gp, want) == 1, "%s", want);
    }
    ck_assert_ptr_nonnull(strstr(gp, "lc rgb \"#0072b2\" dt 2 "));
    ck_assert_ptr_nonnull(strstr(gp, "set key outside right"));
    ck_assert_ptr_nonnull(strstr(gp, "title 'rope'"));
    ck_assert_ptr_nonnull(strstr(gp, "title 'rope p=8'"));
    ck_assert_ptr_null(strstr(gp, "default"));
    /* values 1..9: under two decades, linear y; the training length (16,
     * at 2/3 of the log x axis) labelled right of its line */
    ck_assert_ptr_null(strstr(gp, "set logscale y"));
    ck_assert_ptr_nonnull(strstr(gp, "offset 0.5,0 left"));
    free(gp);
    /* 12 series of two encodings: a panel per encoding, 6 lines each, the
     * colours by p within a panel; values 1e-3..25: log y */
    write_series(dir, 12, "pi", 1e-3, 2, "");
    ck_assert_msg(plot_dir(dir, &o, NULL, &err) == RL_OK, "%s", err.msg);
    gp = read_plot_file(dir, "t.v.gp");
    ck_assert_ptr_nonnull(strstr(gp, "set multiplot layout 1,2 title 'value'"));
    ck_assert_ptr_nonnull(strstr(gp, "set title 'rope'"));
    ck_assert_ptr_nonnull(strstr(gp, "set title 'pi'"));
    ck_assert_uint_eq(count_str(gp, "lc rgb \"#0072b2\" dt 1 "), 2);
    ck_assert_ptr_nonnull(strstr(gp, "set key below"));
    ck_assert_ptr_nonnull(strstr(gp, "set logscale y"));
    free(gp);
    rm_tree(dir);
}
END_TEST

/* Signed values over many decades (a fit that blows up): a symmetric log
 * axis; a reference in another unit is not drawn on the axis; one in the
 * figure's unit is. */
START_TEST(signed_decades_and_references_of_another_unit)
{
    char dir[64], path[256];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    write_file(path,
               HEAD2
               E1 "f.score,,1,0.5,,score,s,,s,\n" E1 "f.score,,2,-0.25,,score,s,,s,\n"
               E1 "f.score,,3,0.75,,score,s,,s,\n" E1 "f.score,,4,-3e9,,score,s,,s,\n"
               E1 "i.abs,,1,2,q.k,change,t,,t,log-y\n" E1 "i.abs,,2,3,q.k,change,t,,t,log-y\n"
               E1 "i.rel,,1,0.1,,relative change,t,,t,log-y\n"
               E1 "i.rel,,2,0.2,,relative change,t,,t,log-y\n"
               E1 "i.ref_bound,,1,0.01,,relative bound,t,,t,log-y ref\n"
               E1 "i.ref_bound,,2,0.02,,relative bound,t,,t,log-y ref\n");
    rl_error err = {0};
    plot_options o = {.no_svg = 1};
    ck_assert_msg(plot_dir(dir, &o, NULL, &err) == RL_OK, "%s", err.msg);
    char *gp = read_plot_file(dir, "f.score.gp");
    ck_assert_ptr_nonnull(strstr(gp, "set nonlinear y via asinh(y/"));
    ck_assert_ptr_nonnull(strstr(gp, "\"-1e10\" -10000000000"));
    free(gp);
    gp = read_plot_file(dir, "i.abs.gp");
    ck_assert_ptr_null(strstr(gp, "relative bound"));
    free(gp);
    gp = read_plot_file(dir, "i.rel.gp");
    ck_assert_ptr_nonnull(strstr(gp, "title 'relative bound'"));
    free(gp);
    rm_tree(dir);
}
END_TEST

/* A reference each run emits with its own values (its training length) is
 * drawn once per distinct curve, named by its run; the same curve from
 * every run, once. */
START_TEST(each_run_keeps_its_own_reference)
{
    char dir[64], path[256];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    write_file(path,
               HEAD2
               E1 "w.len,,0,6,tokens,wavelength,j,,j,log-y\n"
               E1 "w.len,,1,600,tokens,wavelength,j,,j,log-y\n"
               E1 "w.train,,0,128,tokens,training length,j,,j,ref\n"
               E1 "w.train,,1,128,tokens,training length,j,,j,ref\n"
               E1 "w.one,,0,1,tokens,one,j,,j,ref\n" E1 "w.one,,1,1,tokens,one,j,,j,ref\n"
               E2 "w.len,,0,5,tokens,wavelength,j,,j,log-y\n"
               E2 "w.len,,1,500,tokens,wavelength,j,,j,log-y\n"
               E2 "w.train,,0,512,tokens,training length,j,,j,ref\n"
               E2 "w.train,,1,512,tokens,training length,j,,j,ref\n"
               E2 "w.one,,0,1,tokens,one,j,,j,ref\n" E2 "w.one,,1,1,tokens,one,j,,j,ref\n");
    rl_error err = {0};
    plot_options o = {.no_svg = 1};
    ck_assert_msg(plot_dir(dir, &o, NULL, &err) == RL_OK, "%s", err.msg);
    char *gp = read_plot_file(dir, "w.len.gp");
    ck_assert_ptr_nonnull(strstr(gp, "title 'training length (rope)'"));
    ck_assert_ptr_nonnull(strstr(gp, "title 'training length (pi)'"));
    ck_assert_uint_eq(count_str(gp, "title 'one'"), 1);
    free(gp);
    char *dat = read_plot_file(dir, "w.len.dat");
    ck_assert_ptr_nonnull(strstr(dat, "0 128\n1 128\n"));
    ck_assert_ptr_nonnull(strstr(dat, "0 512\n1 512\n"));
    free(dat);
    rm_tree(dir);
}
END_TEST

/* A view over 12 runs: encodings A and B, a swept params.band (0.1, 0.2)
 * and seeds 1..3; at x = 1 run (e, band, seed) has value base(e) +
 * 10 * band index + seed (A: 0, B: 100), at x = 2 that plus 0.5. */
static char *view_results(void)
{
    static char buf[8192];
    size_t len = (size_t)snprintf(buf, sizeof buf,
        "run_id,device,kind,status,encoding,type,factor,head_dim,heads,kv_heads,train_len,seed,"
        "params.band,metric,length,x,value,unit,title,x_name,x_unit,x_title,plot\n");
    for (int e = 0; e < 2; e++)
        for (int b = 0; b < 2; b++)
            for (int sd = 1; sd <= 3; sd++)
                for (int x = 1; x <= 2; x++)
                    len += (size_t)snprintf(buf + len, sizeof buf - len,
                        "%c-b%d-s%d,dev,k,passed,%c,rope,,64,1,1,512,%d,0.%d,t.v,,%d,%g,,value,x,,x,\n",
                        "AB"[e], b + 1, sd, "AB"[e], sd, b + 1, x,
                        100.0 * e + 10.0 * b + sd + (x == 2 ? 0.5 : 0));
    return buf;
}

static rl_status view_plot(const char *dir, plot_options *o, rl_error *err)
{
    if (!o->formats)
        o->formats = PLOT_FMT_PNG;
    memset(err, 0, sizeof *err);
    return plot_dir(dir, o, NULL, err);
}

START_TEST(a_view_chooses_series_aggregates_and_panels)
{
    char dir[64], path[256];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    write_file(path, view_results());
    rl_error err;
    /* default: a line per configuration (encoding x band), the mean over
     * its 3 seeds: A band 0.1 has 1, 2, 3 at x = 1 */
    plot_options o = {0};
    ck_assert_msg(view_plot(dir, &o, &err) == RL_OK, "%s", err.msg);
    char *gp = read_plot_file(dir, "t.v.gp"), *dat = read_plot_file(dir, "t.v.dat");
    ck_assert_uint_eq(count_str(gp, "with linespoints"), 4);
    ck_assert_ptr_nonnull(strstr(gp, "title 'A band=0.1'"));
    ck_assert_ptr_nonnull(strstr(dat, "# A-b1-s1 and 2 runs more (seeds)"));
    ck_assert_ptr_nonnull(strstr(dat, "\n1 2 "));
    free(gp);
    free(dat);

    /* --series encoding: the band differs inside a line and is not said */
    o = (plot_options){.series = "encoding"};
    ck_assert_int_eq(view_plot(dir, &o, &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "differ in params.band ('0.1' and '0.2')") &&
                      strstr(err.msg, "--aggregate it"), "%s", err.msg);

    /* ... with the band averaged as well: one line per encoding over six
     * runs (A at x = 1: 1, 2, 3, 11, 12, 13, mean 7; a bootstrap interval) */
    o = (plot_options){.series = "encoding", .aggregate = "seed,band"};
    ck_assert_msg(view_plot(dir, &o, &err) == RL_OK, "%s", err.msg);
    gp = read_plot_file(dir, "t.v.gp");
    dat = read_plot_file(dir, "t.v.dat");
    ck_assert_uint_eq(count_str(gp, "with linespoints"), 2);
    ck_assert_uint_eq(count_str(gp, "with filledcurves"), 2);
    ck_assert_ptr_nonnull(strstr(gp, "title 'A'"));
    ck_assert_ptr_nonnull(strstr(gp, "title 'B'"));
    ck_assert_ptr_nonnull(strstr(dat, "# A-b1-s1 and 5 runs more"));
    const char *b = strstr(dat, "# B-b1-s1");
    ck_assert_ptr_nonnull(b);
    double x, y, lo, hi;
    ck_assert_int_eq(sscanf(strchr(b, '\n') + 1, "%lf %lf %lf %lf", &x, &y, &lo, &hi), 4);
    ck_assert_double_eq(x, 1);
    ck_assert_double_eq(y, 107);
    ck_assert(lo >= 101 && lo < 107 && hi > 107 && hi <= 113);
    free(gp);
    free(dat);
    snprintf(path, sizeof path, "%s/report.md", dir);
    char *md = read_file(path, NULL);
    ck_assert_ptr_nonnull(strstr(md, "View: `--series encoding --aggregate seed,band`"));
    ck_assert_msg(strstr(md, "differ only in their seed, band are one line"), "%s", md);
    free(md);

    /* --where and no averaging: A's six runs, each its own line, named by
     * band and seed */
    o = (plot_options){.aggregate = "none", .n_where = 1, .where = {"encoding=A"}};
    ck_assert_msg(view_plot(dir, &o, &err) == RL_OK, "%s", err.msg);
    gp = read_plot_file(dir, "t.v.gp");
    ck_assert_uint_eq(count_str(gp, "with linespoints"), 6);
    ck_assert_uint_eq(count_str(gp, "with filledcurves"), 0);
    ck_assert_ptr_nonnull(strstr(gp, "title 'A band=0.2 seed=3'"));
    ck_assert_ptr_null(strstr(gp, "'B"));
    free(gp);
    /* two conditions together, one of them a list */
    o = (plot_options){.n_where = 2, .where = {"encoding=A,B", "band=0.2"}};
    ck_assert_msg(view_plot(dir, &o, &err) == RL_OK, "%s", err.msg);
    gp = read_plot_file(dir, "t.v.gp");
    ck_assert_uint_eq(count_str(gp, "with linespoints"), 2);
    ck_assert_ptr_null(strstr(gp, "band=0.1"));
    free(gp);

    /* --facet: a panel per band though 4 lines would fit one frame; the
     * panels' legends without the band */
    o = (plot_options){.facet = "band"};
    ck_assert_msg(view_plot(dir, &o, &err) == RL_OK, "%s", err.msg);
    gp = read_plot_file(dir, "t.v.gp");
    ck_assert_ptr_nonnull(strstr(gp, "set multiplot layout 1,2"));
    ck_assert_ptr_nonnull(strstr(gp, "set title 'band=0.1'"));
    ck_assert_ptr_nonnull(strstr(gp, "set title 'band=0.2'"));
    ck_assert_ptr_nonnull(strstr(gp, "title 'A'"));
    ck_assert_ptr_null(strstr(gp, "title 'A band="));
    free(gp);
    /* --facet encoding: an encoding keeps its colour from panel to panel
     * (one choice over the figure): A's panel draws both its lines (band
     * 0.1, 0.2) in the first colour, told apart by dash; B's in the second.
     * Chosen per panel, each panel would restart at the first colour. */
    o = (plot_options){.facet = "encoding"};
    ck_assert_msg(view_plot(dir, &o, &err) == RL_OK, "%s", err.msg);
    gp = read_plot_file(dir, "t.v.gp");
    const char *p1 = strstr(gp, "set title 'A'"), *p2 = strstr(gp, "set title 'B'");
    ck_assert(p1 && p2 && p1 < p2);
    char *panel_a = strndup(p1, (size_t)(p2 - p1));
    ck_assert_uint_eq(count_str(panel_a, "with linespoints lc rgb \"#0072b2\" dt 1"), 1);
    ck_assert_uint_eq(count_str(panel_a, "with linespoints lc rgb \"#0072b2\" dt 2"), 1);
    ck_assert_uint_eq(count_str(p2, "with linespoints lc rgb \"#d55e00\""), 2);
    ck_assert_uint_eq(count_str(p2, "with linespoints lc rgb \"#0072b2\""), 0);
    free(panel_a);
    free(gp);
    rm_tree(dir);
}
END_TEST

START_TEST(a_view_that_the_table_cannot_give_is_refused_by_name)
{
    char dir[64], path[256];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    write_file(path, view_results());
    rl_error err;
    struct {
        plot_options o;
        const char *says;
    } bad[] = {
        {{.n_where = 1, .where = {"encoding=C"}}, "has encoding = 'C' (its values: A, B)"},
        {{.n_where = 1, .where = {"encoding=A,C"}}, "'C'"},
        {{.n_where = 1, .where = {"encodng=A"}}, "no column 'encodng' (columns: run_id,"},
        {{.n_where = 1, .where = {"encoding"}}, "expected KEY=VALUE"},
        {{.n_where = 2, .where = {"encoding=A", "seed=1"}, .series = "band", .aggregate = "none"},
         NULL},
        {{.n_where = 2, .where = {"encoding=A", "band=0.2"}, .facet = "band"}, NULL},
        {{.series = "bandwidth"}, "no column 'bandwidth' (a run's configuration is in:"},
        {{.facet = "seed"}, "that column is averaged over"},
        {{.series = "encoding", .aggregate = "none"}, "differ in seed ('1' and '2')"},
        {{.series = "seed"}, "is averaged over"},
        {{.aggregate = "seed,"}, "expected KEY[,KEY...]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rl_status st = view_plot(dir, &bad[i].o, &err);
        if (!bad[i].says) {
            ck_assert_msg(st == RL_OK, "case %zu: %s", i, err.msg);
            continue;
        }
        ck_assert_msg(st == RL_ERR_ARG, "case %zu: status %d", i, (int)st);
        ck_assert_msg(strstr(err.msg, bad[i].says), "case %zu: %s", i, err.msg);
    }
    /* rows that agree in their series and in what is averaged: one line
     * would hide one of them */
    plot_options o = {.series = "encoding,band", .aggregate = "none"};
    ck_assert_int_eq(view_plot(dir, &o, &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "differ in seed"), "%s", err.msg);
    rm_tree(dir);
}
END_TEST

/* --format pdf and --out: PDFs only, into another folder, the results
 * directory untouched; an --out that is a link is refused and nothing is
 * written where it points. */
START_TEST(pdf_into_another_folder_and_never_through_a_link)
{
    char dir[64], out[128], path[300], target[64];
    make_dir(dir);
    make_dir(target);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    write_file(path, view_results());
    snprintf(out, sizeof out, "%s/view", dir);
    rl_error err;
    plot_options o = {.formats = PLOT_FMT_PDF, .out = out};
    ck_assert_msg(view_plot(dir, &o, &err) == RL_OK, "%s", err.msg);
    size_t n = 0;
    char *pdf = read_plot_file(out, "t.v.pdf");
    snprintf(path, sizeof path, "%s/plots/t.v.pdf", out);
    free(read_file(path, &n));
    ck_assert_int_eq(memcmp(pdf, "%PDF-", 5), 0);
    ck_assert_uint_gt(n, 1000);
    free(pdf);
    snprintf(path, sizeof path, "%s/plots/t.v.png", out);
    ck_assert_int_ne(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/plots", dir);
    ck_assert_int_ne(access(path, F_OK), 0); /* DIR itself gained no plots/ */
    snprintf(path, sizeof path, "%s/report.md", dir);
    ck_assert_int_ne(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/report.md", out);
    char *md = read_file(path, NULL);
    ck_assert_ptr_nonnull(md);
    ck_assert_ptr_nonnull(strstr(md, "[PDF](plots/t.v.pdf)"));
    ck_assert_ptr_null(strstr(md, "](plots/t.v.png)"));
    free(md);
    char *gp = read_plot_file(out, "t.v.gp");
    ck_assert_ptr_nonnull(strstr(gp, "set terminal pdfcairo size 10.00in,6.80in"));
    ck_assert_ptr_null(strstr(gp, "pngcairo"));
    free(gp);
    /* all three */
    o = (plot_options){.formats = PLOT_FMT_PNG | PLOT_FMT_SVG | PLOT_FMT_PDF, .out = out};
    ck_assert_msg(view_plot(dir, &o, &err) == RL_OK, "%s", err.msg);
    const char *ext[] = {"png", "svg", "pdf"};
    for (size_t k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/plots/t.v.%s", out, ext[k]);
        ck_assert_msg(access(path, F_OK) == 0, "%s missing", path);
    }
    /* a link as --out */
    snprintf(out, sizeof out, "%s/linked", dir);
    ck_assert_int_eq(symlink(target, out), 0);
    o = (plot_options){.out = out};
    ck_assert_int_eq(view_plot(dir, &o, &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "link"), "%s", err.msg);
    DIR *d = opendir(target);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    size_t entries = 0;
    while ((e = readdir(d)))
        entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    ck_assert_uint_eq(entries, 0);
    rm_tree(dir);
    rm_tree(target);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plot");
    /* figures, the report and .gp files that re-render */
    TCase *tc_render = tcase_create("render");
    tcase_set_timeout(tc_render, 120);
    tcase_add_test(tc_render, renders_png_svg_and_report);
    tcase_add_test(tc_render, figures_carry_reference_marks_and_skip_constants);
    tcase_add_test(tc_render, gp_files_rerender_where_they_lie);
    suite_add_tcase(s, tc_render);
    /* bad results or no gnuplot: a clear message */
    TCase *tc_errors = tcase_create("errors");
    tcase_set_timeout(tc_errors, 120);
    tcase_add_test(tc_errors, old_format_results_are_refused_clearly);
    tcase_add_test(tc_errors, missing_gnuplot_says_how_to_install);
    tcase_add_test(tc_errors, malformed_results_are_reported_with_line);
    suite_add_tcase(s, tc_errors);
    /* no input becomes gnuplot code; gnuplot itself found and started safely */
    TCase *tc_safety = tcase_create("safety");
    tcase_set_timeout(tc_safety, 120);
    tcase_add_test(tc_safety, hostile_labels_and_directory_never_run_as_gnuplot_code);
    tcase_add_test(tc_safety, directory_named_like_a_gnuplot_pipe_runs_nothing);
    tcase_add_test(tc_safety, relative_gnuplot_path_still_runs);
    suite_add_tcase(s, tc_safety);
    /* interval bands and seeds */
    TCase *tc_intervals = tcase_create("intervals");
    tcase_set_timeout(tc_intervals, 120);
    tcase_add_test(tc_intervals, interval_bounds_are_bands_not_series);
    tcase_add_test(tc_intervals, a_line_of_one_point_gets_an_error_bar);
    tcase_add_test(tc_intervals, seeds_are_one_line_with_an_interval);
    tcase_add_test(tc_intervals, a_fraction_interval_over_seeds_is_clipped_to_one);
    suite_add_tcase(s, tc_intervals);
    /* styles, legends, axes and reference lines */
    TCase *tc_styles = tcase_create("styles");
    tcase_set_timeout(tc_styles, 120);
    tcase_add_test(tc_styles, styles_legends_and_log_axes);
    tcase_add_test(tc_styles, signed_decades_and_references_of_another_unit);
    tcase_add_test(tc_styles, each_run_keeps_its_own_reference);
    suite_add_tcase(s, tc_styles);
    /* views: series, aggregates and panels chosen, or refused by name */
    TCase *tc_views = tcase_create("views");
    tcase_set_timeout(tc_views, 120);
    tcase_add_test(tc_views, a_view_chooses_series_aggregates_and_panels);
    tcase_add_test(tc_views, a_view_that_the_table_cannot_give_is_refused_by_name);
    suite_add_tcase(s, tc_views);
    /* --format pdf and --out */
    TCase *tc_output = tcase_create("output");
    tcase_set_timeout(tc_output, 120);
    tcase_add_test(tc_output, pdf_into_another_folder_and_never_through_a_link);
    suite_add_tcase(s, tc_output);
    return rl_test_run(s);
}
