/* `ropelab check --tap` and `--junit FILE` (cmd_check_out.h). */
#include "cli/cmd_check_out.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/rl_util.h"

void cli_check_family(const char *kernel, char *buf, size_t cap)
{
    size_t n = strcspn(kernel, "/_");
    snprintf(buf, cap, "%.*s", (int)n, kernel);
}

int cli_check_row_failed(const chk_row *r)
{
    return !r->skipped && !r->listed && !r->stats.pass;
}

void cli_check_failure_text(const chk_row *r, char *buf, size_t cap)
{
    const vf_stats *s = &r->stats;
    size_t len = 0;
    buf[0] = '\0';
    if (!cli_check_row_failed(r))
        return;
#define ADD(...)                                                                   \
    do {                                                                           \
        if (len < cap)                                                             \
            len += (size_t)snprintf(buf + len, cap - len, __VA_ARGS__);            \
    } while (0)
    if (!r->guard_ok)
        ADD("wrote past the output (guard words changed); ");
    if (s->n_over + s->n_nonfinite)
        ADD("%zu of %zu elements over bound (%zu non-finite), first at index %zu; ",
            s->n_over + s->n_nonfinite, s->n, s->n_nonfinite, s->first_bad);
    if (s->n_ref_nan)
        ADD("%zu NaN in the reference; ", s->n_ref_nan);
    if (!s->nmse_ok)
        ADD("NMSE over its gate; ");
    ADD("max abs error %.6g, worst error %.6g against its bound %.6g (err/bnd %.6g), "
        "NMSE %.6g, gate %.6g (fraction %.6g of the bounds' NMSE); bound: %s",
        s->max_abs, s->err_at_worst, s->bound_at_worst, s->worst_ratio, s->nmse, s->nmse_gate,
        s->gate_fraction, r->tolerance);
#undef ADD
}

/* ---- TAP --------------------------------------------------------------- */

static int device_failed(const chk_report *rep)
{
    return rep->error[0] || rep->validation_messages;
}

/* Why a device failed as a whole: its error, else its validation messages. */
static void device_failure_text(const chk_report *rep, char *buf, size_t cap)
{
    if (rep->error[0])
        snprintf(buf, cap, "%s", rep->error);
    else
        snprintf(buf, cap, "the validation layer reported %u message(s)", rep->validation_messages);
}

/* A YAML double-quoted scalar: backslash, quote and control characters escaped. */
static void yaml_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

/* A test point's description: '#' escaped (it would start a directive),
 * line breaks as spaces (they would end the line). */
static void tap_desc(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '#')
            fputs("\\#", out);
        else
            fputc(*s == '\n' || *s == '\r' ? ' ' : *s, out);
    }
}

static void yaml_num(FILE *out, const char *key, double v)
{
    if (isfinite(v))
        fprintf(out, "    %s: %.6g\n", key, v);
    else
        fprintf(out, "    %s: %s\n", key, isnan(v) ? ".nan" : v > 0 ? ".inf" : "-.inf");
}

void cli_check_tap(FILE *out, const chk_report *reps, size_t n)
{
    size_t total = 0, k = 0;
    for (size_t d = 0; d < n; d++)
        total += reps[d].n_rows + (device_failed(&reps[d]) ? 1 : 0);
    fprintf(out, "TAP version 13\n1..%zu\n", total);
    for (size_t d = 0; d < n; d++) {
        const chk_report *rep = &reps[d];
        fprintf(out, "# device %u: %s (%s)\n", rep->device_index, rep->device, rep->driver);
        for (size_t i = 0; i < rep->n_rows; i++) {
            const chk_row *r = &rep->rows[i];
            int bad = cli_check_row_failed(r);
            fprintf(out, "%s %zu - ", bad ? "not ok" : "ok", ++k);
            tap_desc(out, r->kernel);
            fputc(' ', out);
            tap_desc(out, r->shape);
            if (r->skipped)
                fprintf(out, " # SKIP unsupported on this device");
            fputc('\n', out);
            if (!bad)
                continue;
            char why[1024];
            cli_check_failure_text(r, why, sizeof why);
            const vf_stats *s = &r->stats;
            fprintf(out, "  ---\n    message: ");
            yaml_str(out, why);
            fprintf(out, "\n    device: %u\n    bound: ", rep->device_index);
            yaml_str(out, r->tolerance);
            fputc('\n', out);
            yaml_num(out, "max_abs_error", s->max_abs);
            yaml_num(out, "max_rel_error", s->max_rel);
            yaml_num(out, "bound_at_worst", s->bound_at_worst);
            yaml_num(out, "worst_error_over_bound", s->worst_ratio);
            yaml_num(out, "nmse", s->nmse);
            yaml_num(out, "nmse_gate", s->nmse_gate);
            fprintf(out, "    elements: %zu\n    over_bound: %zu\n    guard_ok: %s\n  ...\n", s->n,
                    s->n_over + s->n_nonfinite, r->guard_ok ? "true" : "false");
        }
        if (device_failed(rep)) {
            fprintf(out, "not ok %zu - device %u run\n  ---\n    message: ", ++k, rep->device_index);
            char msg[1200];
            device_failure_text(rep, msg, sizeof msg);
            yaml_str(out, msg);
            fprintf(out, "\n  ...\n");
        }
    }
}

/* ---- JUnit XML --------------------------------------------------------- */

/* s as XML character data or attribute value: & < > " ' escaped; control
 * characters XML 1.0 cannot carry (all below 0x20 but tab, LF, CR) become '?'. */
static void xml_str(FILE *out, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default:
            fputc(c < 0x20 && c != '\t' && c != '\n' && c != '\r' ? '?' : c, out);
        }
    }
}

static void xml_attr(FILE *out, const char *name, const char *value)
{
    fprintf(out, " %s=\"", name);
    xml_str(out, value);
    fputc('"', out);
}

static void junit_counts(const chk_report *rep, size_t *tests, size_t *fail, size_t *skip,
                         size_t *errs)
{
    *tests += rep->n_rows + (device_failed(rep) ? 1 : 0);
    *errs += device_failed(rep) ? 1 : 0;
    for (size_t i = 0; i < rep->n_rows; i++) {
        *fail += cli_check_row_failed(&rep->rows[i]) ? 1 : 0;
        *skip += rep->rows[i].skipped ? 1 : 0;
    }
}

rl_status cli_check_junit(const char *path, const chk_report *reps, size_t n, rl_error *err)
{
    rl_atomic_file af;
    rl_status st = rl_atomic_open(&af, path, err);
    if (st)
        return st;
    FILE *out = af.fp;
    size_t tests = 0, fail = 0, skip = 0, errs = 0;
    for (size_t d = 0; d < n; d++)
        junit_counts(&reps[d], &tests, &fail, &skip, &errs);
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(out, "<testsuites name=\"ropelab check\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" "
                 "skipped=\"%zu\">\n", tests, fail, errs, skip);
    for (size_t d = 0; d < n; d++) {
        const chk_report *rep = &reps[d];
        size_t t = 0, f = 0, s = 0, e = 0;
        junit_counts(rep, &t, &f, &s, &e);
        char name[320];
        snprintf(name, sizeof name, "device %u: %s", rep->device_index, rep->device);
        fprintf(out, "  <testsuite");
        xml_attr(out, "name", name);
        fprintf(out, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\">\n", t, f, e, s);
        fprintf(out, "    <properties><property name=\"driver\"");
        xml_attr(out, "value", rep->driver);
        fprintf(out, "/></properties>\n");
        for (size_t i = 0; i < rep->n_rows; i++) {
            const chk_row *r = &rep->rows[i];
            char fam[32], tc[200];
            cli_check_family(r->kernel, fam, sizeof fam);
            snprintf(tc, sizeof tc, "%s %s", r->kernel, r->shape);
            fprintf(out, "    <testcase");
            xml_attr(out, "classname", fam);
            xml_attr(out, "name", tc);
            fprintf(out, " time=\"%.6f\"", r->gpu_ms > 0 ? r->gpu_ms * 1e-3 : 0.0);
            if (r->skipped) {
                fprintf(out, "><skipped message=\"unsupported on this device\"/></testcase>\n");
            } else if (cli_check_row_failed(r)) {
                char why[1024];
                cli_check_failure_text(r, why, sizeof why);
                fprintf(out, ">\n      <failure");
                xml_attr(out, "message", why);
                xml_attr(out, "type", !r->guard_ok ? "guard"
                                      : r->stats.n_over + r->stats.n_nonfinite ? "bound"
                                      : r->stats.n_ref_nan ? "reference"
                                                           : "nmse");
                fputc('>', out);
                xml_str(out, why);
                fprintf(out, "</failure>\n    </testcase>\n");
            } else {
                fprintf(out, "/>\n");
            }
        }
        if (device_failed(rep)) {
            char msg[1200];
            device_failure_text(rep, msg, sizeof msg);
            fprintf(out, "    <testcase classname=\"device\" name=\"device %u run\">\n      <error",
                    rep->device_index);
            xml_attr(out, "message", msg);
            fputc('>', out);
            xml_str(out, msg);
            fprintf(out, "</error>\n    </testcase>\n");
        }
        fprintf(out, "  </testsuite>\n");
    }
    fprintf(out, "</testsuites>\n");
    return rl_atomic_commit(&af, err);
}
