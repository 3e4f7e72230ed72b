/* Collected rows of `ropelab check` (the judging is verify/vf.h's). */
#include <stdlib.h>

#include "check/chk.h"

rl_status chk_report_add(chk_report *r, const chk_row *row, rl_error *err)
{
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
    if (!row->skipped && !r->rows[r->n_rows].stats.pass)
        r->failed = 1;
    r->n_rows++;
    return RL_OK;
}

void chk_report_free(chk_report *r)
{
    free(r->rows);
    r->rows = NULL;
    r->n_rows = r->cap = 0;
}
