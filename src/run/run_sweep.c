/* run_sweep.c — sweep axes of a batch file: a list where a scalar is
 * expected is one axis, a `zip:` group pairs its lists element-wise into
 * one axis; a point of the sweep sets one value of every axis. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_parse.h"

void run_axes_free(run_axes *x)
{
    for (size_t i = 0; i < x->n; i++)
        for (size_t k = 0; k < x->a[i].n_keys; k++)
            json_decref(x->a[i].vals[k]);
    x->n = 0;
}

static run_axis *axis_new(run_pctx *c, run_axes *x, const run_node *at, const char *path)
{
    if (x->n == RUN_MAX_AXES) {
        run_diag_add(c, RUN_AT(at), path, "too many swept keys (at most %d per experiment)",
                     RUN_MAX_AXES);
        return NULL;
    }
    run_axis *a = &x->a[x->n++];
    memset(a, 0, sizeof *a);
    return a;
}

/* The values of list n as a JSON array, typed under p (NULL: any scalar);
 * NULL after reporting every bad item. */
static json_t *sweep_values(run_pctx *c, const run_node *n, const rl_param *p, const char *path)
{
    if (n->n == 0) {
        run_diag_add(c, RUN_AT(n), path, "an empty list sweeps over nothing");
        return NULL;
    }
    json_t *arr = json_array();
    int bad = 0;
    for (size_t i = 0; i < n->n; i++) {
        char ip[400];
        snprintf(ip, sizeof ip, "%s[%zu]", path, i);
        json_t *v;
        const run_node *it = n->items[i];
        if (it->type == RUN_NODE_SEQ && it->value_list)
            v = run_list_value(c, it, p, ip); /* a sweep of lists */
        else if (p)
            v = run_typed_value(c, it, p, ip);
        else if (it->type != RUN_NODE_SCALAR) {
            run_diag_add(c, RUN_AT(it), ip, "a swept value must be a scalar%s, got %s",
                         it->type == RUN_NODE_SEQ ? " or a !list [...]" : "", run_node_kind(it));
            v = NULL;
        } else
            v = run_scalar_json(it);
        if (!v)
            bad = 1;
        else
            json_array_append_new(arr, v);
    }
    if (bad) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

void run_sweep_list(run_pctx *c, run_axes *ax, const run_node *v, const rl_param *p,
                    const char *path, const char *key)
{
    json_t *vals = sweep_values(c, v, p, path);
    if (!vals)
        return;
    run_axis *a = axis_new(c, ax, v, path);
    if (!a) {
        json_decref(vals);
        return;
    }
    a->n_keys = 1;
    snprintf(a->key[0], sizeof a->key[0], "%s", key);
    a->vals[0] = vals;
    a->len = json_array_size(vals);
}

/* Member k of zip group z: its values, or NULL after reporting. */
static json_t *zip_member(run_pctx *c, const run_node *z, size_t k, const char *zp,
                          const char *path, const rl_param *ps, size_t np,
                          const run_node *outer)
{
    const rl_param *p = NULL;
    if (ps) {
        p = run_find_param(ps, np, z->keys[k]);
        if (!p) {
            const char *valid[64];
            size_t nv = run_param_names(ps, np, valid, 63);
            run_unknown_key(c, z, k, path, valid, nv);
            return NULL;
        }
        if (outer && run_node_get(outer, z->keys[k], NULL)) {
            run_diag_add(c, z->key_line[k], z->key_col[k], zp,
                         "also given outside the zip group");
            return NULL;
        }
    }
    const run_node *m = z->items[k];
    if (m->type != RUN_NODE_SEQ) {
        run_diag_add(c, RUN_AT(m), zp, "a zip member must be a list, got %s", run_node_kind(m));
        return NULL;
    }
    return sweep_values(c, m, p, zp);
}

void run_sweep_zip(run_pctx *c, run_axes *ax, const run_node *z, const char *path,
                   const char *qual, const rl_param *ps, size_t np, const run_node *outer)
{
    if (z->type != RUN_NODE_MAP || z->n == 0) {
        run_diag_add(c, RUN_AT(z), path, "zip: expects a mapping of key: [list] pairs");
        return;
    }
    run_axis *a = axis_new(c, ax, z, path);
    if (!a)
        return;
    int bad = 0;
    for (size_t k = 0; k < z->n; k++) {
        char zp[450];
        run_path_join(zp, sizeof zp, path, z->keys[k]);
        json_t *vals = zip_member(c, z, k, zp, path, ps, np, outer);
        if (!vals) {
            bad = 1;
            continue;
        }
        const run_node *m = z->items[k];
        if (a->n_keys && json_array_size(vals) != a->len) {
            run_diag_add(c, RUN_AT(m), zp,
                         "zip lists must have equal lengths: %zu here, %zu for '%s'",
                         json_array_size(vals), a->len, z->keys[0]);
            json_decref(vals);
            bad = 1;
            continue;
        }
        if (a->n_keys == RUN_MAX_AXIS_KEYS) {
            run_diag_add(c, RUN_AT(m), zp, "at most %d keys per zip group", RUN_MAX_AXIS_KEYS);
            json_decref(vals);
            bad = 1;
            continue;
        }
        a->len = json_array_size(vals);
        run_path_join(a->key[a->n_keys], sizeof a->key[0], qual, z->keys[k]);
        a->vals[a->n_keys++] = vals;
    }
    if (bad || a->n_keys == 0) {
        for (size_t k = 0; k < a->n_keys; k++)
            json_decref(a->vals[k]);
        ax->n--;
    }
}

/* Sets obj.<dotted path> = v (takes a reference), creating objects. */
static void set_dotted(json_t *obj, const char *path, json_t *v)
{
    char buf[200];
    snprintf(buf, sizeof buf, "%s", path);
    char *s = buf, *dot;
    while ((dot = strchr(s, '.'))) {
        *dot = '\0';
        json_t *sub = json_object_get(obj, s);
        if (!json_is_object(sub)) {
            sub = json_object();
            json_object_set_new(obj, s, sub);
        }
        obj = sub;
        s = dot + 1;
    }
    json_object_set(obj, s, v);
}

void run_sweep_apply(json_t *resolved, json_t *swept, const run_axes *const *lists, size_t nl,
                     const size_t *idx)
{
    size_t k = 0;
    for (size_t l = 0; l < nl; l++)
        for (size_t i = 0; i < lists[l]->n; i++, k++) {
            const run_axis *a = &lists[l]->a[i];
            for (size_t j = 0; j < a->n_keys; j++) {
                json_t *v = json_array_get(a->vals[j], idx[k]);
                set_dotted(resolved, a->key[j], v);
                if (json_is_array(v) || json_is_object(v)) {
                    /* a swept list value: its compact JSON text, so that
                     * results.csv's column and --dry-run show which one */
                    char *t = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
                    json_object_set_new(swept, a->key[j], json_string(t ? t : ""));
                    free(t);
                } else
                    json_object_set(swept, a->key[j], v);
            }
        }
}
