/* run_diag.c — the batch loader's diagnostics: one complete
 * "file:line:col: key.path: message" line per problem, and suggestions of
 * the nearest valid key. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"
#include "run/run_parse.h"

void run_diag_free(run_diag *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->msg[i]);
    free(d->msg);
    free(d->slots);
    memset(d, 0, sizeof *d);
}

/* Slot of message text in d's hash index (its own or the empty one where it
 * would go). */
static size_t diag_slot(const run_diag *d, const char *text)
{
    size_t mask = d->n_slots - 1, i = (size_t)rl_hash64(text, strlen(text), 0) & mask;
    while (d->slots[i] && strcmp(d->msg[d->slots[i] - 1], text) != 0)
        i = (i + 1) & mask;
    return i;
}

/* Keeps the index at most half full; 0 when out of memory. */
static int diag_index_grow(run_diag *d)
{
    if (2 * (d->n + 1) < d->n_slots)
        return 1;
    size_t ns = d->n_slots ? 2 * d->n_slots : 64;
    size_t *sl = calloc(ns, sizeof *sl);
    if (!sl)
        return 0;
    free(d->slots);
    d->slots = sl;
    d->n_slots = ns;
    for (size_t i = 0; i < d->n; i++)
        d->slots[diag_slot(d, d->msg[i])] = i + 1;
    return 1;
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
    if (!diag_index_grow(d)) {
        c->oom = 1;
        return;
    }
    size_t slot = diag_slot(d, full);
    if (d->slots[slot])
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
    d->slots[slot] = d->n;
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

void run_diag_err(run_pctx *c, const run_node *map, const char *key_prefix, const run_node *at,
                  const char *at_path, const rl_error *err)
{
    size_t i;
    if (err->key[0] && map && map->type == RUN_NODE_MAP) {
        const run_node *in = map;
        if (!run_node_get(map, err->key, NULL)) { /* a zip member? */
            const run_node *zip = run_node_get(map, "zip", NULL);
            in = zip && zip->type == RUN_NODE_MAP ? zip : NULL;
        }
        if (in && run_node_get(in, err->key, &i)) {
            char kp[200];
            snprintf(kp, sizeof kp, "%s.%s", key_prefix, err->key);
            run_diag_add(c, RUN_AT(in->items[i]), kp, "%s", err->msg);
            return;
        }
    }
    run_diag_add(c, RUN_AT(at), at_path, "%s", err->msg);
}
