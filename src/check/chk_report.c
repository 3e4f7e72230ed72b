/* Collected rows of `ropelab check` (the judging is verify/vf.h's). */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/chk.h"

/* 1 if pattern (an fnmatch glob; NULL or "" matches everything) matches s. */
static int glob_ok(const char *pattern, const char *s)
{
    return !pattern || !*pattern || fnmatch(pattern, s, 0) == 0;
}

int chk_kernel_selected(const chk_options *opt, const char *kernel)
{
    return glob_ok(opt ? opt->kernel_pattern : NULL, kernel);
}

rl_status chk_case_begin(const chk_options *opt, chk_report *report, const chk_row *row,
                         int *run, rl_error *err)
{
    *run = 0;
    if (!glob_ok(opt->kernel_pattern, row->kernel) || !glob_ok(opt->shape_pattern, row->shape))
        return RL_OK;
    if (!opt->list_only) {
        *run = 1;
        return RL_OK;
    }
    chk_row l = *row;
    l.listed = 1;
    l.guard_ok = 1;
    l.gpu_ms = -1;
    return chk_report_add(report, &l, err);
}

rl_status chk_report_add(chk_report *r, const chk_row *row, rl_error *err)
{
    if (!glob_ok(r->kernel_pattern, row->kernel) || !glob_ok(r->shape_pattern, row->shape))
        return RL_OK;
    if (r->n_rows == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 32;
        chk_row *p = realloc(r->rows, cap * sizeof *p);
        if (!p)
            return rl_fail(err, RL_ERR_NOMEM, "out of host memory collecting check results");
        r->rows = p;
        r->cap = cap;
    }
    r->rows[r->n_rows] = *row;
    /* The guard is part of the verdict (also when a case table forgot to fold it in). */
    vf_set_guard(&r->rows[r->n_rows].stats, row->guard_ok);
    if (!row->skipped && !row->listed && !r->rows[r->n_rows].stats.pass)
        r->failed = 1;
    r->n_rows++;
    return RL_OK;
}

void chk_report_note(chk_report *r, const char *line)
{
    size_t n = strlen(r->notes);
    if (n + 1 < sizeof r->notes)
        snprintf(r->notes + n, sizeof r->notes - n, "%s\n", line);
}

void chk_report_free(chk_report *r)
{
    free(r->rows);
    r->rows = NULL;
    r->n_rows = r->cap = 0;
}
