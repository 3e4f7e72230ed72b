/* run_diag.c — the batch loader's diagnostics: one complete
 * "file:line:col: key.path: message" line per problem, and suggestions of
 * the nearest valid key. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_parse.h"

void run_diag_free(run_diag *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->msg[i]);
    free(d->msg);
    memset(d, 0, sizeof *d);
}

void run_diag_add(run_pctx *c, uint32_t line, uint32_t col, const char *path, const char *fmt,
                  ...)
{
    char msg[1024], full[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "%s:%u:%u: %s%s%s", c->file, line, col, path ? path : "",
             path && *path ? ": " : "", msg);
    run_diag *d = c->diag;
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->msg[i], full) == 0)
            return; /* the same problem seen from another sweep point */
    if (d->n == d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 8;
        char **m = realloc(d->msg, nc * sizeof *m);
        if (!m) {
            c->oom = 1;
            return;
        }
        d->msg = m;
        d->cap = nc;
    }
    char *s = strdup(full);
    if (!s) {
        c->oom = 1;
        return;
    }
    d->msg[d->n++] = s;
}

size_t run_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return la > lb ? la : lb;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cur = row[j];
            size_t sub = prev + (a[i - 1] != b[j - 1]);
            size_t del = row[j] + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
            prev = cur;
        }
    }
    return row[lb];
}

const char *run_suggest(const char *key, const char *const *valid, size_t n, char *buf,
                        size_t cap)
{
    size_t best = (size_t)-1, bi = 0;
    for (size_t i = 0; i < n; i++) {
        size_t d = run_edit_distance(key, valid[i]);
        if (d < best) {
            best = d;
            bi = i;
        }
    }
    size_t limit = strlen(key) / 3 + 1;
    if (limit < 2)
        limit = 2;
    if (n && best <= limit) {
        snprintf(buf, cap, "; did you mean '%s'?", valid[bi]);
        return buf;
    }
    size_t o = (size_t)snprintf(buf, cap, "; valid keys: ");
    for (size_t i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", valid[i]);
    return buf;
}

void run_path_join(char *dst, size_t cap, const char *a, const char *b)
{
    snprintf(dst, cap, "%s%s%s", a, *a ? "." : "", b);
}

void run_unknown_key(run_pctx *c, const run_node *map, size_t i, const char *path,
                     const char *const *valid, size_t nv)
{
    char buf[1024], kp[400];
    run_path_join(kp, sizeof kp, path, map->keys[i]);
    run_diag_add(c, map->key_line[i], map->key_col[i], kp, "unknown key%s",
                 run_suggest(map->keys[i], valid, nv, buf, sizeof buf));
}
