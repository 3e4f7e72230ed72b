/* ropelab check [--device D|all] [--json|--tap] [--junit FILE] [--kernel GLOB] [--shape GLOB]
 *               [--list] */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <errno.h>

#include "check/chk.h"
#include "cli/cli.h"
#include "cli/cmd_check_out.h"
#include "cli_version.h"
#include "core/rl_util.h"

/* One row's verdict and tolerances (numbers), no timings: two identical
 * runs give identical rows. */
static json_t *row_json(const chk_row *r)
{
    const vf_stats *s = &r->stats;
    char fam[32];
    cli_check_family(r->kernel, fam, sizeof fam);
    /* the row's identity, then the one tolerance record (vf_stats_json) */
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:b}", "kernel", r->kernel, "family", fam, "shape",
                          r->shape, "tolerance", r->tolerance, "skipped", r->skipped);
    json_t *rec = vf_stats_json(s);
    if (!o || !rec) {
        json_decref(o);
        json_decref(rec);
        return NULL;
    }
    json_object_update(o, rec);
    json_decref(rec);
    int pass = !r->skipped && s->pass && r->guard_ok;
    json_object_set_new(o, "pass", json_boolean(pass));
    json_object_set_new(o, "guard_ok", json_boolean(r->guard_ok));
    if (!pass && !r->skipped && s->pass) /* failed on its guard words alone */
        json_object_set_new(o, "reason", json_string("the kernel wrote past its output (guard "
                                                     "words overwritten)"));
    if (r->listed)
        json_object_set_new(o, "listed", json_true());
    return o;
}

static int width(const chk_report *rep, int shape, int minimum)
{
    size_t w = (size_t)minimum;
    for (size_t i = 0; i < rep->n_rows; i++) {
        size_t n = strlen(shape ? rep->rows[i].shape : rep->rows[i].kernel);
        if (n > w)
            w = n;
    }
    return (int)w;
}

/* The case tables' notes, one indented line each. */
static void print_notes(const chk_report *rep)
{
    for (const char *p = rep->notes; *p;) {
        const char *e = strchr(p, '\n');
        int len = e ? (int)(e - p) : (int)strlen(p);
        printf("  %.*s\n", len, p);
        p += len + (e ? 1 : 0);
    }
}

static void print_list(const chk_report *rep)
{
    int wk = width(rep, 0, 6);
    printf("device %u: %s (%s)\n", rep->device_index, rep->device, rep->driver);
    for (size_t i = 0; i < rep->n_rows; i++)
        printf("  %-*s  %s\n", wk, rep->rows[i].kernel, rep->rows[i].shape);
    print_notes(rep);
    if (rep->error[0])
        printf("  ERROR: %s\n", rep->error);
}

static void print_report(const chk_report *rep)
{
    /* Columns as wide as the longest kernel name and shape, so long names
     * keep the table aligned. */
    int wk = width(rep, 0, 22), ws = width(rep, 1, 40);
    printf("device %u: %s (%s)\n", rep->device_index, rep->device, rep->driver);
    printf("  %-*s %-*s %10s %10s %10s %8s %10s %10s  %s\n", wk, "kernel", ws, "shape", "max_abs",
           "max_rel", "bound", "err/bnd", "nmse", "gate", "result");
    for (size_t i = 0; i < rep->n_rows; i++) {
        const chk_row *r = &rep->rows[i];
        const vf_stats *s = &r->stats;
        const char *res = r->skipped ? "SKIP (unsupported)"
                        : !r->guard_ok ? "FAIL (wrote past the output)"
                        : s->pass     ? "pass"
                                      : "FAIL";
        printf("  %-*s %-*s %10.3e %10.3e %10.3e %8.3f %10.3e %10.3e  %s", wk, r->kernel, ws,
               r->shape, s->max_abs, s->max_rel, s->bound_at_worst, s->worst_ratio, s->nmse,
               s->nmse_gate, res);
        if (r->skipped)
            printf(" (%s)", r->tolerance); /* why: the device lacks what the row needs */
        if (!r->skipped && r->guard_ok && !s->pass) {
            if (s->n_over + s->n_nonfinite)
                printf(" (%zu of %zu over bound, first at %zu)", s->n_over + s->n_nonfinite, s->n,
                       s->first_bad);
            if (s->n_ref_nan)
                printf(" (%zu NaN in the reference)", s->n_ref_nan);
            if (!s->nmse_ok)
                printf(" (NMSE over its gate)");
        }
        printf("\n");
    }
    for (size_t i = 0; i < rep->n_rows; i++) { /* each distinct bound once */
        size_t k = 0;
        while (k < i && strcmp(rep->rows[k].tolerance, rep->rows[i].tolerance) != 0)
            k++;
        if (k == i)
            printf("  bound: %s (e.g. %s)\n", rep->rows[i].tolerance, rep->rows[i].kernel);
    }
    if (rep->n_rows)
        printf("  err/bnd is the worst element's error over its own bound; nmse = sum err^2 / sum "
               "ref^2, gate = a fraction of the nmse the bounds allow (verify/vf.h)\n");
    if (rep->validation_messages)
        printf("  FAIL: the validation layer reported %u message(s)\n", rep->validation_messages);
    print_notes(rep);
    if (rep->error[0])
        printf("  ERROR: %s\n", rep->error);
}

typedef struct check_flags {
    const char *device, *junit, *kernel, *shape;
    int json, tap, quick, validate, list;
    uint32_t max_pos_log2;
    uint64_t seed;
} check_flags;

/* --json: version, build, inputs, each device's identity and rows; every
 * timing in "timings" alone, so deleting it leaves a deterministic document. */
static void print_json(const check_flags *f, const cli_devices *d, const chk_report *reps,
                       const rlvk_device_info *infos, const int *have_info, int failed)
{
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)f->seed);
    json_t *devs = json_array(), *tdevs = json_array();
    for (uint32_t k = 0; k < d->n; k++) {
        const chk_report *rep = &reps[k];
        json_t *rows = json_array(), *trows = json_array();
        for (size_t i = 0; i < rep->n_rows; i++) {
            const chk_row *r = &rep->rows[i];
            json_array_append_new(rows, row_json(r));
            json_array_append_new(trows, json_pack("{s:s,s:s,s:o}", "kernel", r->kernel, "shape",
                                                   r->shape, "gpu_ms",
                                                   r->gpu_ms >= 0 ? json_real(r->gpu_ms)
                                                                  : json_null()));
        }
        json_t *o = json_pack("{s:i,s:s,s:s,s:b,s:i,s:b,s:s}", "index", (int)rep->device_index,
                              "device", rep->device, "driver", rep->driver, "validation",
                              d->inst.validation, "validation_messages",
                              (int)rep->validation_messages, "pass", !rep->failed, "error",
                              rep->error);
        if (have_info[k]) {
            json_t *ident = cli_device_identity_json(&infos[k]);
            json_object_update(o, ident);
            json_decref(ident);
        }
        json_object_set_new(o, "notes", json_string(rep->notes));
        json_object_set_new(o, "results", rows);
        json_array_append_new(devs, o);
        json_array_append_new(tdevs, json_pack("{s:i,s:o}", "index", (int)rep->device_index,
                                               "rows", trows));
    }
    json_t *flags = json_pack("{s:s,s:b,s:i,s:s,s:s,s:b,s:b}", "device", f->device, "quick",
                              f->quick, "max_pos_log2", (int)f->max_pos_log2, "kernel",
                              f->kernel ? f->kernel : "", "shape", f->shape ? f->shape : "",
                              "validate", f->validate, "list", f->list);
    json_t *root = json_pack("{s:s,s:s,s:s,s:o,s:b,s:o,s:{s:o}}", "version", RL_VERSION,
                             "git_commit", RL_GIT_COMMIT, "seed", seed, "flags", flags, "pass",
                             !failed, "devices", devs, "timings", "devices", tdevs);
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    if (s)
        puts(s);
    free(s);
    json_decref(root);
}

int cmd_check(int argc, char **argv)
{
    check_flags f = {.device = "auto", .max_pos_log2 = 20, .seed = 1, .validate = 1};
    const cli_opt opts[] = {
        CLI_OPT_DEVICE(&f.device),
        {"--json", CLI_FLAG, &f.json, NULL,
         "print results as JSON (version, commit, seed, flags, device identity, rows; "
         "timings in their own section)"},
        {"--tap", CLI_FLAG, &f.tap, NULL, "print results as TAP version 13 (one test point per row)"},
        {"--junit", CLI_STR, &f.junit, "FILE",
         "also write JUnit XML to FILE (atomically; one testcase per kernel x shape)"},
        {"--kernel", CLI_STR, &f.kernel, "GLOB",
         "run only rows whose kernel name matches the glob (fnmatch), e.g. 'rope/*' or 'attn_*'"},
        {"--shape", CLI_STR, &f.shape, "GLOB",
         "run only rows whose shape (as --list prints it) matches the glob, e.g. '65x*' or '* causal'"},
        {"--list", CLI_FLAG, &f.list, NULL,
         "print the rows that would run (kernel, shape) and run nothing on the device"},
        {"--quick", CLI_FLAG, &f.quick, NULL, "run a reduced set of shapes"},
        {"--max-pos-log2", CLI_U32, &f.max_pos_log2, "K", "largest position tested is 2^K (default 20, max 24)"},
        {"--seed", CLI_U64, &f.seed, "S", "seed of the random inputs (default 1)"},
        CLI_OPTS_VALIDATE(&f.validate, CLI_VALIDATE_ON),
    };
    int rc = cli_parse("ropelab check [--device D|all] [--json|--tap] [--junit FILE] [--kernel GLOB] "
                       "[--shape GLOB] [--list] [--quick]",
                       "Runs every kernel at several shapes (odd token counts, 1 and 8 heads, head_dim\n"
                       "64 and 128, partial rotary dims, positions up to 2^20) on the chosen devices\n"
                       "and compares each output element with a double-precision CPU reference\n"
                       "against an explicit per-element bound. Prints max abs/rel error, the bound and\n"
                       "pass/fail per kernel and shape. Exit code 1 if anything fails. For CI:\n"
                       "--junit FILE (JUnit XML), --tap (TAP 13 on stdout); --kernel GLOB selects\n"
                       "rows by kernel name and --shape GLOB by shape, --list names them without\n"
                       "running (after opening the device: the case tables ask it what it supports).",
                       argc, argv, opts, RL_ARRAY_LEN(opts), NULL, 0, NULL);
    if (rc >= 0)
        return rc;
    if (f.max_pos_log2 < 1 || f.max_pos_log2 > 24) {
        cli_error("--max-pos-log2 %u: must be 1..24 (positions above 2^24 are not exact in fp32)",
                  f.max_pos_log2);
        return CLI_EXIT_USAGE;
    }
    if (f.json && f.tap) {
        cli_error("--json and --tap both print on stdout; choose one (--junit FILE goes with either)");
        return CLI_EXIT_USAGE;
    }
    if (f.list && (f.tap || f.junit)) {
        cli_error("--list names the rows without running them; it has no results for --tap or --junit");
        return CLI_EXIT_USAGE;
    }
    if (f.junit && !*f.junit) {
        cli_error("--junit: empty file name");
        return CLI_EXIT_USAGE;
    }
    if (f.junit) {
        /* the report's folder must exist and take files before anything
         * runs: a bad path is usage (2), never a failed kernel (1) */
        char dir[4096];
        const char *slash = strrchr(f.junit, '/');
        size_t dl = slash ? (size_t)(slash - f.junit) : 0;
        if (dl >= sizeof dir) {
            cli_error("--junit %s: the path is too long", f.junit);
            return CLI_EXIT_USAGE;
        }
        memcpy(dir, slash ? f.junit : ".", slash ? dl : 1);
        dir[slash ? (dl ? dl : 1) : 1] = '\0';
        if (slash && dl == 0)
            dir[0] = '/';
        struct stat sb;
        if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || access(dir, W_OK | X_OK) != 0) {
            cli_error("--junit %s: %s is not a folder ropelab can write into (%s)", f.junit, dir,
                      stat(dir, &sb) != 0 ? strerror(errno) : !S_ISDIR(sb.st_mode)
                                                              ? "not a directory"
                                                              : strerror(errno));
            return CLI_EXIT_USAGE;
        }
    }
    cli_devices d;
    if ((rc = cli_open(f.device, f.validate, &d)) >= 0)
        return rc;
    if (f.validate && !d.inst.validation)
        fprintf(stderr, "ropelab: note: VK_LAYER_KHRONOS_validation is not installed; "
                        "checking without it\n");
    chk_options opt = {.quick = f.quick, .max_pos_log2 = f.max_pos_log2, .seed = f.seed,
                       .kernel_pattern = f.kernel, .shape_pattern = f.shape, .list_only = f.list};
    chk_report reps[RL_ARRAY_LEN(d.index)];
    memset(reps, 0, sizeof reps);
    rlvk_device_info infos[RL_ARRAY_LEN(d.index)];
    int have_info[RL_ARRAY_LEN(d.index)] = {0};
    int failed = 0;
    size_t n_rows = 0;
    for (uint32_t k = 0; k < d.n; k++) {
        chk_report *rep = &reps[k];
        rlvk_device dev;
        rl_error err = {0};
        rl_status st = rlvk_device_create(&d.inst, d.index[k], &dev, &err);
        if (st == RL_OK) {
            infos[k] = dev.info;
            have_info[k] = 1;
            st = chk_run_device(&dev, &opt, rep, &err);
            rlvk_device_destroy(&dev);
        } else {
            snprintf(rep->device, sizeof rep->device, "device %u", d.index[k]);
            rep->device_index = d.index[k];
        }
        if (st != RL_OK) {
            snprintf(rep->error, sizeof rep->error, "%s", err.msg);
            rep->failed = 1;
        }
        failed |= rep->failed;
        n_rows += rep->n_rows;
        if (!f.json && !f.tap)
            (f.list ? print_list : print_report)(rep);
        fflush(stdout);
    }
    /* A glob that selects nothing is a mistake (a typo would pass CI green). */
    int none = ((f.kernel && *f.kernel) || (f.shape && *f.shape)) && n_rows == 0 && !failed;
    if (f.tap)
        cli_check_tap(stdout, reps, d.n);
    if (f.json)
        print_json(&f, &d, reps, infos, have_info, failed || none);
    if (f.junit) {
        rl_error err = {0};
        if (cli_check_junit(f.junit, reps, d.n, &err) != RL_OK) {
            cli_error("--junit: %s", err.msg);
            failed = 1;
        }
    }
    if (!f.json && !f.tap) {
        if (f.list)
            printf("%zu row%s would run\n", n_rows, n_rows == 1 ? "" : "s");
        else if (!none)
            printf("%s\n", failed ? "check: FAILED" : "check: all kernels within bounds");
    }
    for (uint32_t k = 0; k < d.n; k++)
        chk_report_free(&reps[k]);
    cli_close(&d);
    if (none) {
        if (f.shape && *f.shape)
            cli_error("--kernel '%s' --shape '%s' match no row (see `ropelab check --list`)",
                      f.kernel ? f.kernel : "*", f.shape);
        else
            cli_error("--kernel '%s' matches no kernel (see `ropelab check --list`)", f.kernel);
        return CLI_EXIT_USAGE;
    }
    return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
