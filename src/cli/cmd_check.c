/* ropelab check [--device D|all] [--json] */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/chk.h"
#include "cli/cli.h"
#include "core/rl_util.h"

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *row_json(const chk_row *r)
{
    const vf_stats *s = &r->stats;
    json_int_t first = s->first_bad == VF_NONE ? -1 : (json_int_t)s->first_bad;
    return json_pack("{s:s,s:s,s:s,s:b,s:b,s:f,s:f,s:f,s:o,s:o,s:o,s:o,s:b,s:I,s:I,s:I,s:I,s:b,s:f}",
                     "kernel", r->kernel, "shape", r->shape, "tolerance", r->tolerance, "skipped",
                     r->skipped, "pass", !r->skipped && s->pass && r->guard_ok, "max_abs_error",
                     s->max_abs, "max_rel_error", s->max_rel, "bound_at_worst", s->bound_at_worst,
                     "worst_error_over_bound", num(s->worst_ratio), "nmse", num(s->nmse),
                     "nmse_gate", num(s->nmse_gate), "nmse_gate_fraction", num(s->gate_fraction),
                     "nmse_ok", s->nmse_ok, "elements", (json_int_t)s->n, "over_bound",
                     (json_int_t)(s->n_over + s->n_nonfinite), "reference_nan",
                     (json_int_t)s->n_ref_nan, "first_bad", (json_int_t)(s->pass ? -1 : first),
                     "guard_ok", r->guard_ok, "gpu_ms", r->gpu_ms);
}

static void print_report(const chk_report *rep)
{
    printf("device %u: %s (%s)\n", rep->device_index, rep->device, rep->driver);
    printf("  %-22s %-40s %10s %10s %10s %8s %10s %10s  %s\n", "kernel", "shape", "max_abs",
           "max_rel", "bound", "err/bnd", "nmse", "gate", "result");
    for (size_t i = 0; i < rep->n_rows; i++) {
        const chk_row *r = &rep->rows[i];
        const vf_stats *s = &r->stats;
        const char *res = r->skipped ? "SKIP (unsupported)"
                        : !r->guard_ok ? "FAIL (wrote past the output)"
                        : s->pass     ? "pass"
                                      : "FAIL";
        printf("  %-22s %-40s %10.3e %10.3e %10.3e %8.3f %10.3e %10.3e  %s", r->kernel, r->shape,
               s->max_abs, s->max_rel, s->bound_at_worst, s->worst_ratio, s->nmse, s->nmse_gate,
               res);
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
    if (rep->error[0])
        printf("  ERROR: %s\n", rep->error);
}

int cmd_check(int argc, char **argv)
{
    const char *device = "auto";
    int json = 0, quick = 0, no_validate = 0;
    uint32_t max_pos_log2 = 20;
    uint64_t seed = 1;
    const cli_opt opts[] = {
        {"--device", CLI_STR, &device, "D", "device: index, name substring, auto (default) or all"},
        {"--json", CLI_FLAG, &json, NULL, "print results as JSON"},
        {"--quick", CLI_FLAG, &quick, NULL, "run a reduced set of shapes"},
        {"--max-pos-log2", CLI_U32, &max_pos_log2, "K", "largest position tested is 2^K (default 20, max 24)"},
        {"--seed", CLI_U64, &seed, "S", "seed of the random inputs (default 1)"},
        {"--no-validate", CLI_FLAG, &no_validate, NULL,
         "do not enable the Khronos validation layer (on by default when installed)"},
    };
    int rc = cli_parse("ropelab check [--device D|all] [--json] [--quick]",
                       "Runs every kernel at several shapes (odd token counts, 1 and 8 heads, head_dim\n"
                       "64 and 128, partial rotary dims, positions up to 2^20) on the chosen devices\n"
                       "and compares each output element with a double-precision CPU reference\n"
                       "against an explicit per-element bound. Prints max abs/rel error, the bound and\n"
                       "pass/fail per kernel and shape. Exit code 1 if anything fails.",
                       argc, argv, opts, RL_ARRAY_LEN(opts), NULL, 0, NULL);
    if (rc >= 0)
        return rc;
    if (max_pos_log2 < 1 || max_pos_log2 > 24) {
        cli_error("--max-pos-log2 %u: must be 1..24 (positions above 2^24 are not exact in fp32)",
                  max_pos_log2);
        return CLI_EXIT_USAGE;
    }
    cli_devices d;
    if ((rc = cli_open(device, !no_validate, &d)) >= 0)
        return rc;
    if (!no_validate && !d.inst.validation)
        fprintf(stderr, "ropelab: note: VK_LAYER_KHRONOS_validation is not installed; "
                        "checking without it\n");
    chk_options opt = {.quick = quick, .max_pos_log2 = max_pos_log2, .seed = seed};
    int failed = 0;
    json_t *devs = json_array();
    for (uint32_t k = 0; k < d.n; k++) {
        chk_report rep = {0};
        rlvk_device dev;
        rl_error err = {0};
        rl_status st = rlvk_device_create(&d.inst, d.index[k], &dev, &err);
        if (st == RL_OK) {
            st = chk_run_device(&dev, &opt, &rep, &err);
            rlvk_device_destroy(&dev);
        } else {
            snprintf(rep.device, sizeof rep.device, "device %u", d.index[k]);
            rep.device_index = d.index[k];
        }
        if (st != RL_OK) {
            snprintf(rep.error, sizeof rep.error, "%s", err.msg);
            rep.failed = 1;
        }
        failed |= rep.failed;
        if (json) {
            json_t *rows = json_array();
            for (size_t i = 0; i < rep.n_rows; i++)
                json_array_append_new(rows, row_json(&rep.rows[i]));
            json_array_append_new(
                devs, json_pack("{s:i,s:s,s:s,s:b,s:i,s:b,s:s,s:o}", "index", (int)rep.device_index,
                                "device", rep.device, "driver", rep.driver, "validation",
                                d.inst.validation, "validation_messages",
                                (int)rep.validation_messages, "pass", !rep.failed, "error",
                                rep.error, "results", rows));
        } else {
            print_report(&rep);
        }
        chk_report_free(&rep);
    }
    if (json) {
        json_t *root = json_pack("{s:b,s:o}", "pass", !failed, "devices", devs);
        char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
        if (s)
            puts(s);
        free(s);
        json_decref(root);
    } else {
        json_decref(devs);
        printf("%s\n", failed ? "check: FAILED" : "check: all kernels within bounds");
    }
    cli_close(&d);
    return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
