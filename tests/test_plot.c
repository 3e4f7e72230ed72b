/* plot/: figures and report from a results directory. */
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

/* Two runs of a decay-like table over r = 1..1024 (decades: log x), one
 * categorical table (distance buckets), scalar rows, a quoted field. */
static const char *results =
    "run_id,device,encoding,factor,metric,x,value,x_label,y_label\n"
    "a1,llvmpipe,rope,1,decay.bound,1,20.5,relative distance r (tokens),bound\n"
    "a1,llvmpipe,rope,1,decay.bound,1024,3.25,relative distance r (tokens),bound\n"
    "a1,llvmpipe,rope,1,decay.bound,32,8.0,relative distance r (tokens),bound\n"
    "b2,llvmpipe,\"yarn, x4\",4,decay.bound,1,20.5,relative distance r (tokens),bound\n"
    "b2,llvmpipe,\"yarn, x4\",4,decay.bound,1024,5.5,relative distance r (tokens),bound\n"
    "a1,llvmpipe,rope,1,decay.ref_one_over_r,1,1,relative distance r (tokens),ref\n"
    "a1,llvmpipe,rope,1,decay.ref_one_over_r,1024,0.0009765625,relative distance r (tokens),ref\n"
    "a1,llvmpipe,rope,1,mass,0,0.5,distance bucket,attention mass\n"
    "a1,llvmpipe,rope,1,mass,2-3,0.25,distance bucket,attention mass\n"
    "a1,llvmpipe,rope,1,verify.max_abs_error,,1.5e-07,,\n"
    "b2,llvmpipe,\"yarn, x4\",4,verify.max_abs_error,,2.5e-07,,\n";

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
    /* The decay figure spans three decades of r: log x; legend names runs by
     * encoding and the parameter that differs. */
    snprintf(path, sizeof path, "%s/plots/decay.bound.gp", dir);
    char *gp = read_file(path, NULL);
    ck_assert_ptr_nonnull(strstr(gp, "set logscale x"));
    ck_assert_ptr_null(strstr(gp, "set logscale y"));
    ck_assert_ptr_nonnull(strstr(gp, "title \"rope factor=1\""));
    ck_assert_ptr_nonnull(strstr(gp, "title \"yarn, x4 factor=4\""));
    ck_assert_ptr_nonnull(strstr(gp, "set xlabel \"relative distance r (tokens)\""));
    /* The table's ref_ column is a dashed reference inside the figure, not a
     * figure of its own (n_figures stays 2). */
    ck_assert_ptr_nonnull(strstr(gp, "index 2 using 1:2 with lines dt 2"));
    ck_assert_ptr_nonnull(strstr(gp, "title \"ref_one_over_r\""));
    free(gp);
    /* Data sorted by x within a run. */
    snprintf(path, sizeof path, "%s/plots/decay.bound.dat", dir);
    char *dat = read_file(path, NULL);
    ck_assert_ptr_nonnull(strstr(dat, "1 20.5\n32 8\n1024 3.25\n"));
    free(dat);
    snprintf(path, sizeof path, "%s/report.md", dir);
    char *md = read_file(path, NULL);
    ck_assert_ptr_nonnull(strstr(md, "![decay.bound](plots/decay.bound.png)"));
    ck_assert_ptr_nonnull(strstr(md, "| b2 | llvmpipe |  | yarn, x4 | 4 | failed: out of device memory |"));
    ck_assert_ptr_nonnull(strstr(md, "| a1 | rope | verify.max_abs_error | 1.5e-07 |"));
    free(md);
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
    write_file(path, "run_id,encoding,x,value\nr,rope,1,2\n");
    ck_assert_int_eq(plot_dir(dir, NULL, NULL, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "results.csv:1: missing column 'metric'"));
    write_file(path, "run_id,encoding,metric,x,value\nr,rope,m,1,2\nr,rope,m,2\n");
    ck_assert_int_eq(plot_dir(dir, NULL, NULL, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "results.csv:3: 4 fields, the header has 5"));
    write_file(path, "run_id,encoding,metric,x,value\nr,\"rope,m,1,2\n");
    ck_assert_int_eq(plot_dir(dir, NULL, NULL, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "unterminated quoted field"));
    rm_tree(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plot");
    TCase *tc = tcase_create("plot");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, renders_png_svg_and_report);
    tcase_add_test(tc, missing_gnuplot_says_how_to_install);
    tcase_add_test(tc, malformed_results_are_reported_with_line);
    suite_add_tcase(s, tc);
    return rl_test_run(s);
}
