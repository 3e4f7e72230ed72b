/* run_batch.c — batch validation, sweep expansion, plan and run ids. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"
#include "run/run.h"
#include "run/run_int.h"
#include "run/run_yaml.h"

#define FNV_OFFSET 0xcbf29ce484222325ull
#define MAX_AXES 32
#define MAX_AXIS_KEYS 8

/* ---- diagnostics ------------------------------------------------------- */

void run_diag_free(run_diag *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->msg[i]);
    free(d->msg);
    memset(d, 0, sizeof *d);
}

typedef struct ctx {
    const char *file;
    const char *base_dir;
    run_diag *diag;
    int oom;
} ctx;

static void diag_add(ctx *c, uint32_t line, uint32_t col, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void diag_add(ctx *c, uint32_t line, uint32_t col, const char *path, const char *fmt, ...)
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

#define AT(node) (node)->line, (node)->col

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

/* "; did you mean 'x'?" or "; valid keys: a, b, c" into buf. */
static const char *suggest(const char *key, const char *const *valid, size_t n, char *buf,
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

static const char *type_name(exp_ptype t)
{
    switch (t) {
    case EXP_P_INT:
        return "an integer";
    case EXP_P_NUM:
        return "a number";
    case EXP_P_STR:
        return "a string";
    case EXP_P_BOOL:
        return "true or false";
    }
    return "a value";
}

/* Converts one scalar under spec p; NULL after reporting a problem. */
static json_t *typed_value(ctx *c, const run_node *n, const exp_param *p, const char *path)
{
    if (n->type != RUN_NODE_SCALAR) {
        diag_add(c, AT(n), path, "expected %s, got %s", type_name(p->type), run_node_kind(n));
        return NULL;
    }
    json_t *v = run_scalar_json(n);
    if (!v) {
        c->oom = 1;
        return NULL;
    }
    switch (p->type) {
    case EXP_P_INT:
    case EXP_P_NUM: {
        if (!json_is_number(v)) {
            diag_add(c, AT(n), path, "expected %s, got '%s'", type_name(p->type), n->text);
            break;
        }
        double x = json_number_value(v);
        if (p->type == EXP_P_INT && !json_is_integer(v)) {
            diag_add(c, AT(n), path, "expected an integer, got %s", n->text);
            break;
        }
        if (x < p->min || x > p->max) {
            diag_add(c, AT(n), path, "%s is out of range [%.15g, %.15g]", n->text, p->min, p->max);
            break;
        }
        json_decref(v);
        return p->type == EXP_P_INT ? json_integer((json_int_t)x) : json_real(x);
    }
    case EXP_P_STR:
        if (!json_is_string(v)) {
            json_decref(v);
            v = json_string(n->text);
        }
        if (p->choices) {
            int ok = 0;
            size_t nc = 0;
            for (; p->choices[nc]; nc++)
                ok |= strcmp(p->choices[nc], n->text) == 0;
            if (!ok) {
                char buf[512];
                suggest(n->text, p->choices, nc, buf, sizeof buf);
                diag_add(c, AT(n), path, "'%s' is not one of the choices%s", n->text,
                         strstr(buf, "valid keys") ? strstr(buf, ":") : buf);
                break;
            }
        }
        return v;
    case EXP_P_BOOL:
        if (json_is_boolean(v))
            return v;
        diag_add(c, AT(n), path, "expected true or false, got '%s'", n->text);
        break;
    }
    json_decref(v);
    return NULL;
}

/* ---- sections with a schema, sweeps and zip groups --------------------- */

typedef struct axis {
    size_t n_keys;
    char key[MAX_AXIS_KEYS][200];    /* "params.tokens", "encoding.rope_scaling.factor" */
    json_t *vals[MAX_AXIS_KEYS];     /* arrays, equal length */
    size_t len;
} axis;

typedef struct axes {
    axis a[MAX_AXES];
    size_t n;
} axes;

static void axes_free(axes *x)
{
    for (size_t i = 0; i < x->n; i++)
        for (size_t k = 0; k < x->a[i].n_keys; k++)
            json_decref(x->a[i].vals[k]);
    x->n = 0;
}

static axis *axis_new(ctx *c, axes *x, const run_node *at, const char *path)
{
    if (x->n == MAX_AXES) {
        diag_add(c, AT(at), path, "too many swept keys (at most %d per experiment)", MAX_AXES);
        return NULL;
    }
    axis *a = &x->a[x->n++];
    memset(a, 0, sizeof *a);
    return a;
}

/* A list given where a scalar is expected: one swept axis of its values,
 * named key (validated against p when given). Errors are reported. */
static json_t *sweep_values(ctx *c, const run_node *n, const exp_param *p, const char *path);
static void list_axis(ctx *c, axes *ax, const run_node *v, const exp_param *p, const char *path,
                      const char *key)
{
    json_t *vals = sweep_values(c, v, p, path);
    if (!vals)
        return;
    axis *a = axis_new(c, ax, v, path);
    if (!a) {
        json_decref(vals);
        return;
    }
    a->n_keys = 1;
    snprintf(a->key[0], sizeof a->key[0], "%s", key);
    a->vals[0] = vals;
    a->len = json_array_size(vals);
}

static void join(char *dst, size_t cap, const char *a, const char *b)
{
    snprintf(dst, cap, "%s%s%s", a, *a ? "." : "", b);
}

/* A list given where a scalar is expected: one sweep axis (or a zip member). */
static json_t *sweep_values(ctx *c, const run_node *n, const exp_param *p, const char *path)
{
    if (n->n == 0) {
        diag_add(c, AT(n), path, "an empty list sweeps over nothing");
        return NULL;
    }
    json_t *arr = json_array();
    int bad = 0;
    for (size_t i = 0; i < n->n; i++) {
        char ip[400];
        snprintf(ip, sizeof ip, "%s[%zu]", path, i);
        json_t *v;
        if (p)
            v = typed_value(c, n->items[i], p, ip);
        else if (n->items[i]->type != RUN_NODE_SCALAR) {
            diag_add(c, AT(n->items[i]), ip, "a swept value must be a scalar, got %s",
                     run_node_kind(n->items[i]));
            v = NULL;
        } else
            v = run_scalar_json(n->items[i]);
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

static const exp_param *find_param(const exp_param *ps, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(ps[i].name, key) == 0)
            return &ps[i];
    return NULL;
}

static void unknown_key(ctx *c, const run_node *map, size_t i, const char *path,
                        const char *const *valid, size_t nv)
{
    char buf[1024], kp[400];
    join(kp, sizeof kp, path, map->keys[i]);
    diag_add(c, map->key_line[i], map->key_col[i], kp, "unknown key%s",
             suggest(map->keys[i], valid, nv, buf, sizeof buf));
}

/* Validates a mapping against a parameter table: scalars go to tmpl, lists
 * become axes (qualified as "<section>.<key>"), `zip:` pairs lists. Missing
 * optional parameters take their defaults. */
static void parse_schema(ctx *c, const run_node *map, const char *path, const char *section,
                         const exp_param *ps, size_t np, json_t *tmpl, axes *ax)
{
    const char *valid[64];
    size_t nv = 0;
    for (size_t i = 0; i < np && nv < 63; i++)
        valid[nv++] = ps[i].name;
    if (map && map->type != RUN_NODE_MAP) {
        diag_add(c, AT(map), path, "expected a mapping of keys, got %s", run_node_kind(map));
        return;
    }
    for (size_t i = 0; map && i < map->n; i++) {
        const char *key = map->keys[i];
        const run_node *v = map->items[i];
        char kp[400];
        join(kp, sizeof kp, path, key);
        if (strcmp(key, "zip") == 0) {
            if (v->type != RUN_NODE_MAP || v->n == 0) {
                diag_add(c, AT(v), kp, "zip: expects a mapping of key: [list] pairs");
                continue;
            }
            axis *a = axis_new(c, ax, v, kp);
            if (!a)
                continue;
            int bad = 0;
            for (size_t k = 0; k < v->n; k++) {
                char zp[450];
                join(zp, sizeof zp, kp, v->keys[k]);
                const exp_param *p = find_param(ps, np, v->keys[k]);
                if (!p) {
                    unknown_key(c, v, k, kp, valid, nv);
                    bad = 1;
                    continue;
                }
                if (run_node_get(map, v->keys[k], NULL)) {
                    diag_add(c, v->key_line[k], v->key_col[k], zp,
                             "also given outside the zip group");
                    bad = 1;
                    continue;
                }
                if (v->items[k]->type != RUN_NODE_SEQ) {
                    diag_add(c, AT(v->items[k]), zp, "a zip member must be a list, got %s",
                             run_node_kind(v->items[k]));
                    bad = 1;
                    continue;
                }
                json_t *vals = sweep_values(c, v->items[k], p, zp);
                if (!vals) {
                    bad = 1;
                    continue;
                }
                if (a->n_keys && json_array_size(vals) != a->len) {
                    diag_add(c, AT(v->items[k]), zp,
                             "zip lists must have equal lengths: %zu here, %zu for '%s'",
                             json_array_size(vals), a->len, v->keys[0]);
                    json_decref(vals);
                    bad = 1;
                    continue;
                }
                if (a->n_keys == MAX_AXIS_KEYS) {
                    diag_add(c, AT(v->items[k]), zp, "at most %d keys per zip group",
                             MAX_AXIS_KEYS);
                    json_decref(vals);
                    bad = 1;
                    continue;
                }
                a->len = json_array_size(vals);
                join(a->key[a->n_keys], sizeof a->key[0], section, v->keys[k]);
                a->vals[a->n_keys++] = vals;
            }
            if (bad || a->n_keys == 0) {
                for (size_t k = 0; k < a->n_keys; k++)
                    json_decref(a->vals[k]);
                ax->n--;
            }
            continue;
        }
        const exp_param *p = find_param(ps, np, key);
        if (!p) {
            unknown_key(c, map, i, path, valid, nv);
            continue;
        }
        if (v->type == RUN_NODE_SEQ) {
            char full[sizeof ax->a[0].key[0]];
            join(full, sizeof full, section, key);
            list_axis(c, ax, v, p, kp, full);
            continue;
        }
        json_t *val = typed_value(c, v, p, kp);
        if (val)
            json_object_set_new(tmpl, key, val);
    }
    /* defaults and required keys */
    for (size_t i = 0; i < np; i++) {
        const exp_param *p = &ps[i];
        int swept = 0;
        char q[200];
        join(q, sizeof q, section, p->name);
        for (size_t k = 0; k < ax->n; k++)
            for (size_t j = 0; j < ax->a[k].n_keys; j++)
                swept |= strcmp(ax->a[k].key[j], q) == 0;
        if (swept || json_object_get(tmpl, p->name))
            continue;
        if (p->required) {
            if (map)
                diag_add(c, AT(map), path, "missing required key '%s'", p->name);
            continue;
        }
        if (p->type == EXP_P_STR && p->def_str)
            json_object_set_new(tmpl, p->name, json_string(p->def_str));
        else if (p->type == EXP_P_INT)
            json_object_set_new(tmpl, p->name, json_integer((json_int_t)p->def_num));
        else if (p->type == EXP_P_NUM)
            json_object_set_new(tmpl, p->name, json_real(p->def_num));
        else if (p->type == EXP_P_BOOL)
            json_object_set_new(tmpl, p->name, json_boolean(p->def_num != 0));
    }
}

/* Free-form (encoding parameters): scalars and nested mappings kept as
 * JSON, lists of scalars become axes, `zip:` pairs lists. */
static void parse_free(ctx *c, const run_node *map, const char *path, const char *qual,
                       json_t *obj, axes *ax, int depth)
{
    for (size_t i = 0; i < map->n; i++) {
        const char *key = map->keys[i];
        const run_node *v = map->items[i];
        char kp[400], q[200];
        join(kp, sizeof kp, path, key);
        join(q, sizeof q, qual, key);
        if (strcmp(key, "zip") == 0 && depth == 0) {
            if (v->type != RUN_NODE_MAP || v->n == 0) {
                diag_add(c, AT(v), kp, "zip: expects a mapping of key: [list] pairs");
                continue;
            }
            axis *a = axis_new(c, ax, v, kp);
            if (!a)
                continue;
            int bad = 0;
            for (size_t k = 0; k < v->n && !bad; k++) {
                char zp[450], zq[200];
                join(zp, sizeof zp, kp, v->keys[k]);
                join(zq, sizeof zq, qual, v->keys[k]);
                json_t *vals = v->items[k]->type == RUN_NODE_SEQ
                                   ? sweep_values(c, v->items[k], NULL, zp)
                                   : NULL;
                if (v->items[k]->type != RUN_NODE_SEQ)
                    diag_add(c, AT(v->items[k]), zp, "a zip member must be a list, got %s",
                             run_node_kind(v->items[k]));
                if (!vals || a->n_keys == MAX_AXIS_KEYS ||
                    (a->n_keys && json_array_size(vals) != a->len)) {
                    if (vals)
                        diag_add(c, AT(v->items[k]), zp,
                                 "zip lists must have equal lengths: %zu here, %zu for '%s'",
                                 json_array_size(vals), a->len, v->keys[0]);
                    json_decref(vals);
                    bad = 1;
                    break;
                }
                a->len = json_array_size(vals);
                snprintf(a->key[a->n_keys], sizeof a->key[0], "%s", zq);
                a->vals[a->n_keys++] = vals;
            }
            if (bad) {
                for (size_t k = 0; k < a->n_keys; k++)
                    json_decref(a->vals[k]);
                ax->n--;
            }
            continue;
        }
        if (v->type == RUN_NODE_SCALAR) {
            json_object_set_new(obj, key, run_scalar_json(v));
        } else if (v->type == RUN_NODE_MAP) {
            json_t *sub = json_object();
            parse_free(c, v, kp, q, sub, ax, depth + 1);
            json_object_set_new(obj, key, sub);
        } else {
            list_axis(c, ax, v, NULL, kp, q);
        }
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

/* ---- schemas of the runner's own sections ------------------------------ */

static const char *const top_keys[] = {"name", "output", "device", "seed", "model",
                                       "encodings", "data", "experiments"};

static const exp_param model_params[] = {
    {.name = "head_dim", .type = EXP_P_INT, .min = 2, .max = ROPE_MAX_HEAD_DIM},
    {.name = "heads", .type = EXP_P_INT, .min = 1, .max = 4096},
    {.name = "kv_heads", .type = EXP_P_INT, .min = 1, .max = 4096},
    {.name = "train_len", .type = EXP_P_INT, .min = 1, .max = 1 << 30},
    {.name = "preset", .type = EXP_P_STR},
    {.name = "hf_config", .type = EXP_P_STR},
};

static const char *const data_sources[] = {"gaussian", "ones", "shared", "npy", "safetensors",
                                           NULL};
static const char *const data_layouts[] = {"thd", "htd", NULL};

static const exp_param data_params[] = {
    {.name = "source", .type = EXP_P_STR, .def_str = "gaussian", .choices = data_sources},
    {.name = "seed", .type = EXP_P_INT, .min = 0, .max = 9007199254740991.0, .def_num = -1},
    {.name = "scale", .type = EXP_P_NUM, .min = 0, .max = 1e30, .def_num = 1},
    {.name = "noise", .type = EXP_P_NUM, .min = 0, .max = 1e30, .def_num = 0.1},
    {.name = "path", .type = EXP_P_STR},
    {.name = "q", .type = EXP_P_STR},
    {.name = "k", .type = EXP_P_STR},
    {.name = "v", .type = EXP_P_STR},
    {.name = "layout", .type = EXP_P_STR, .def_str = "thd", .choices = data_layouts},
};

static const char *const exp_entry_keys[] = {"kind", "params", "encodings"};

/* ---- the whole file ------------------------------------------------------ */

typedef struct enc_entry {
    char name[64];
    json_t *tmpl;                /* {name, type, ...params} */
    axes ax;
    const run_node *node;
    uint32_t index;
} enc_entry;

typedef struct flat_enc {
    const run_node *node;        /* the encoding mapping */
    const run_node *at;          /* where plan-time errors point (the batch entry) */
    const char *file;            /* file the node comes from */
    char path[112];
} flat_enc;

static int flat_push(flat_enc **v, size_t *n, size_t *cap, const run_node *node,
                     const run_node *at, const char *file, const char *path)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        flat_enc *m = realloc(*v, nc * sizeof *m);
        if (!m)
            return 0;
        *v = m;
        *cap = nc;
    }
    flat_enc *f = &(*v)[(*n)++];
    f->node = node;
    f->at = at;
    f->file = file;
    snprintf(f->path, sizeof f->path, "%s", path);
    return 1;
}

static int scalar_str(ctx *c, const run_node *n, const char *path, char *dst, size_t cap)
{
    if (!n || n->type != RUN_NODE_SCALAR) {
        diag_add(c, AT(n), path, "expected a string, got %s", run_node_kind(n));
        return 0;
    }
    if (strlen(n->text) >= cap) {
        diag_add(c, AT(n), path, "longer than %zu characters", cap - 1);
        return 0;
    }
    snprintf(dst, cap, "%s", n->text);
    return 1;
}

static void odometer_apply(json_t *resolved, json_t *swept, const axes *const *lists, size_t nl,
                           const size_t *idx)
{
    size_t k = 0;
    for (size_t l = 0; l < nl; l++)
        for (size_t i = 0; i < lists[l]->n; i++, k++) {
            const axis *a = &lists[l]->a[i];
            for (size_t j = 0; j < a->n_keys; j++) {
                json_t *v = json_array_get(a->vals[j], idx[k]);
                set_dotted(resolved, a->key[j], v);
                json_object_set(swept, a->key[j], v);
            }
        }
}

static rl_status add_item(run_batch *b, size_t *cap, run_item *it)
{
    for (size_t i = 0; i < b->n_items; i++)
        if (b->items[i].hash == it->hash) {
            b->n_duplicates++;
            json_decref(it->resolved);
            json_decref(it->swept);
            json_decref(it->enc_params);
            return RL_OK;
        }
    if (b->n_items == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        run_item *m = realloc(b->items, nc * sizeof *m);
        if (!m) {
            json_decref(it->resolved);
            json_decref(it->swept);
            json_decref(it->enc_params);
            return RL_ERR_NOMEM;
        }
        b->items = m;
        *cap = nc;
    }
    b->items[b->n_items++] = *it;
    return RL_OK;
}

static void expand_entry(ctx *c, run_batch *b, size_t *cap, const run_node *entry_node,
                         uint32_t ei, const exp_kind *kind, json_t *params, axes *pax,
                         enc_entry *encs, size_t n_enc, const int *use_enc, json_t *model_tmpl,
                         axes *max, json_t *data_tmpl, axes *dax, const run_node *data_node)
{
    for (size_t e = 0; e < n_enc; e++) {
        if (!use_enc[e])
            continue;
        const axes *lists[4] = {max, &encs[e].ax, pax, dax};
        size_t nl = kind->uses_data ? 4 : 3, total_axes = 0;
        size_t lens[4 * MAX_AXES];
        double count = 1;
        for (size_t l = 0; l < nl; l++)
            for (size_t i = 0; i < lists[l]->n; i++) {
                lens[total_axes++] = lists[l]->a[i].len;
                count *= (double)lists[l]->a[i].len;
            }
        char ep[64];
        snprintf(ep, sizeof ep, "experiments[%u]", ei);
        if (count + (double)b->n_items > RUN_MAX_PLAN) {
            diag_add(c, AT(entry_node), ep, "the sweep expands to %.0f runs, more than the limit %d",
                     count + (double)b->n_items, RUN_MAX_PLAN);
            return;
        }
        size_t idx[4 * MAX_AXES] = {0};
        for (;;) {
            json_t *res = json_object(), *swept = json_object();
            json_object_set_new(res, "kind", json_string(kind->name));
            json_object_set_new(res, "seed", json_integer((json_int_t)b->seed));
            json_object_set_new(res, "model", json_deep_copy(model_tmpl));
            json_object_set_new(res, "encoding", json_deep_copy(encs[e].tmpl));
            json_object_set_new(res, "params", json_deep_copy(params));
            if (kind->uses_data)
                json_object_set_new(res, "data", json_deep_copy(data_tmpl));
            odometer_apply(res, swept, lists, nl, idx);
            /* model: preset / hf_config / explicit keys -> numbers */
            exp_model m;
            rl_error err = {0};
            int ok = 1;
            json_t *rope = NULL;
            if (run_model_resolve(json_object_get(res, "model"), c->base_dir, &m, &rope, &err)) {
                diag_add(c, AT(entry_node), "model", "%s", err.msg);
                ok = 0;
            } else {
                json_object_set_new(res, "model",
                                    json_pack("{s:i,s:i,s:i,s:i}", "head_dim", (int)m.head_dim,
                                              "heads", (int)m.heads, "kv_heads", (int)m.kv_heads,
                                              "train_len", (int)m.train_len));
                json_t *enc = json_object_get(res, "encoding");
                if (!strcmp(json_string_value(json_object_get(enc, "type")), "model")) {
                    if (!rope) {
                        diag_add(c, AT(encs[e].node), "encodings", "encoding '%s' has type "
                                 "'model' but the model gives no RoPE settings (use a preset "
                                 "or hf_config)", encs[e].name);
                        ok = 0;
                    } else {
                        json_t *ne = json_deep_copy(rope);
                        json_object_set(ne, "name", json_object_get(enc, "name"));
                        json_object_set_new(res, "encoding", ne);
                    }
                }
            }
            json_decref(rope);
            if (ok && kind->uses_data) {
                json_t *d = json_object_get(res, "data");
                if (json_integer_value(json_object_get(d, "seed")) < 0)
                    json_object_set_new(d, "seed", json_integer((json_int_t)b->seed));
                if (run_data_probe(d, &m, c->base_dir, &err)) {
                    diag_add(c, AT(data_node), "data", "%s", err.msg);
                    ok = 0;
                }
            }
            run_item it = {.kind = kind, .entry = ei, .resolved = res, .swept = swept};
            if (ok) {
                char *txt = json_dumps(res, JSON_SORT_KEYS | JSON_COMPACT);
                it.hash = txt ? rl_hash64(txt, strlen(txt), FNV_OFFSET) : 0;
                free(txt);
                snprintf(it.id, sizeof it.id, "%016llx", (unsigned long long)it.hash);
                /* the kind sees the encoding's parameters without name and type */
                it.enc_params = json_deep_copy(json_object_get(res, "encoding"));
                json_object_del(it.enc_params, "name");
                json_object_del(it.enc_params, "type");
                exp_run r;
                run_item_to_exp(&it, &r);
                if (kind->check(&r, &err)) {
                    diag_add(c, AT(entry_node), ep, "%s", err.msg);
                    ok = 0;
                } else {
                    it.est_bytes = kind->estimate_bytes(&r);
                }
            }
            if (ok) {
                const char *key;
                json_t *v;
                json_object_foreach(swept, key, v) {
                    int seen = 0;
                    for (size_t s = 0; s < json_array_size(b->swept_keys); s++)
                        seen |= !strcmp(json_string_value(json_array_get(b->swept_keys, s)), key);
                    if (!seen)
                        json_array_append_new(b->swept_keys, json_string(key));
                }
                if (add_item(b, cap, &it))
                    c->oom = 1;
            } else {
                json_decref(res);
                json_decref(swept);
                json_decref(it.enc_params);
            }
            size_t k = 0;
            while (k < total_axes && ++idx[k] == lens[k])
                idx[k++] = 0;
            if (k == total_axes)
                break;
        }
    }
}

void run_item_to_exp(const run_item *it, exp_run *r)
{
    const json_t *res = it->resolved, *m = json_object_get(res, "model"),
                 *e = json_object_get(res, "encoding");
    memset(r, 0, sizeof *r);
    r->id = it->id;
    r->model.head_dim = (uint32_t)json_integer_value(json_object_get(m, "head_dim"));
    r->model.heads = (uint32_t)json_integer_value(json_object_get(m, "heads"));
    r->model.kv_heads = (uint32_t)json_integer_value(json_object_get(m, "kv_heads"));
    r->model.train_len = (uint32_t)json_integer_value(json_object_get(m, "train_len"));
    r->encoding_name = json_string_value(json_object_get(e, "name"));
    r->encoding_type = json_string_value(json_object_get(e, "type"));
    r->params = json_object_get(res, "params");
    r->seed = (uint64_t)json_integer_value(json_object_get(res, "seed"));
    r->encoding = it->enc_params;
}

rl_status run_batch_parse(const char *name, const char *text, size_t len, const char *base_dir,
                          run_batch *b, run_diag *diag, rl_error *err)
{
    memset(b, 0, sizeof *b);
    memset(diag, 0, sizeof *diag);
    ctx c = {.file = name, .base_dir = base_dir ? base_dir : ".", .diag = diag};
    snprintf(b->file, sizeof b->file, "%s", name);
    snprintf(b->base_dir, sizeof b->base_dir, "%s", c.base_dir);
    snprintf(b->device, sizeof b->device, "auto");
    b->seed = 1;
    b->swept_keys = json_array();
    b->text = malloc(len + 1);
    if (!b->text || !b->swept_keys) {
        run_batch_free(b);
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    }
    memcpy(b->text, text, len);
    b->text[len] = '\0';
    b->text_len = len;
    b->text_hash = rl_hash64(text, len, FNV_OFFSET);

    run_node *root = NULL;
    rl_error perr = {0};
    if (run_yaml_parse(name, text, len, &root, &perr)) {
        run_batch_free(b);
        if (perr.status == RL_ERR_NOMEM)
            return rl_fail(err, RL_ERR_NOMEM, "%s", perr.msg);
        /* the syntax error is itself a diagnostic */
        diag->msg = malloc(sizeof *diag->msg);
        if (diag->msg && (diag->msg[0] = strdup(perr.msg))) {
            diag->n = diag->cap = 1;
        }
        return rl_fail(err, RL_ERR_PARSE, "%s", perr.msg);
    }
    static const run_node empty = {.type = RUN_NODE_MAP, .line = 1, .col = 1};
    const run_node *r = root ? root : &empty;
    enc_entry *encs = NULL;
    size_t n_enc = 0, n_encs_alloc = 0, n_sets = 0;
    run_node *sets[16];
    char set_files[16][1100];
    json_t *model_tmpl = json_object(), *data_tmpl = json_object();
    axes *max = calloc(1, sizeof *max), *dax = calloc(1, sizeof *dax);
    if (!model_tmpl || !data_tmpl || !max || !dax) {
        c.oom = 1;
        goto finish;
    }
    if (r->type != RUN_NODE_MAP) {
        diag_add(&c, AT(r), "", "a batch file is a mapping (name:, model:, experiments:, ...), "
                 "got %s", run_node_kind(r));
        goto finish;
    }
    for (size_t i = 0; i < r->n; i++) {
        int known = 0;
        for (size_t k = 0; k < RL_ARRAY_LEN(top_keys); k++)
            known |= !strcmp(r->keys[i], top_keys[k]);
        if (!known)
            unknown_key(&c, r, i, "", top_keys, RL_ARRAY_LEN(top_keys));
    }
    const run_node *n;
    if ((n = run_node_get(r, "name", NULL)))
        scalar_str(&c, n, "name", b->name, sizeof b->name);
    else
        snprintf(b->name, sizeof b->name, "batch");
    if ((n = run_node_get(r, "output", NULL)))
        scalar_str(&c, n, "output", b->output, sizeof b->output);
    if ((n = run_node_get(r, "device", NULL)))
        scalar_str(&c, n, "device", b->device, sizeof b->device);
    if ((n = run_node_get(r, "seed", NULL))) {
        static const exp_param sp = {.name = "seed", .type = EXP_P_INT, .min = 0,
                                     .max = 9007199254740991.0};
        json_t *v = typed_value(&c, n, &sp, "seed");
        if (v)
            b->seed = (uint64_t)json_integer_value(v);
        json_decref(v);
    }
    const run_node *model = run_node_get(r, "model", NULL);
    if (!model)
        diag_add(&c, AT(r), "", "missing required key 'model' (head_dim, heads, kv_heads, "
                 "train_len, or preset, or hf_config)");
    size_t d0 = diag->n;
    if (model)
        parse_schema(&c, model, "model", "model", model_params, RL_ARRAY_LEN(model_params),
                     model_tmpl, max);
    int model_clean = diag->n == d0;
    const run_node *data = run_node_get(r, "data", NULL);
    d0 = diag->n;
    parse_schema(&c, data, "data", "data", data_params, RL_ARRAY_LEN(data_params), data_tmpl,
                 dax);
    int data_clean = diag->n == d0;
    if (!data)
        data = r;
    /* a model or data section with errors makes every run invalid: the plan
     * is not expanded then (its errors would repeat these) */
    int shape_bad = !model_clean || !data_clean || !model;
    /* without model sweeps, check the model (and the data against it) now,
     * so these errors are reported together with all others */
    if (model && model->type == RUN_NODE_MAP && max->n == 0 && model_clean) {
        exp_model m;
        json_t *rope = NULL;
        rl_error merr = {0};
        int ms_failed = 0;
        int ok = 1;
        if (run_model_load(model_tmpl, c.base_dir, &m, &rope, &merr)) {
            diag_add(&c, AT(model), "model", "%s", merr.msg);
            ok = 0;
            shape_bad = 1;
        }
        /* each shape problem at its own key */
        for (unsigned k = 0; ok && k < RUN_MODEL_CHECKS; k++) {
            if (run_model_check(&m, k, &merr) == RL_OK)
                continue;
            /* every check guards its own fields, so all are reported */
            const run_node *at = model;
            char mp[64] = "model";
            for (size_t i = 0; i < model->n; i++) {
                size_t kl = strlen(model->keys[i]);
                if (!strncmp(merr.msg, model->keys[i], kl) && merr.msg[kl] == ' ') {
                    at = model->items[i];
                    snprintf(mp, sizeof mp, "model.%s", model->keys[i]);
                }
            }
            diag_add(&c, AT(at), mp, "%s", merr.msg);
            ms_failed = 1;
            shape_bad = 1;
        }
        if (ok && !ms_failed && dax->n == 0 && data_clean) {
            if (json_integer_value(json_object_get(data_tmpl, "seed")) < 0)
                json_object_set_new(data_tmpl, "seed", json_integer((json_int_t)b->seed));
            if (run_data_probe(data_tmpl, &m, c.base_dir, &merr)) {
                diag_add(&c, AT(data), "data", "%s", merr.msg);
                shape_bad = 1;
            }
        }
        json_decref(rope);
    }

    /* encodings */
    const run_node *el = run_node_get(r, "encodings", NULL);
    static const run_node default_enc_list = {.type = RUN_NODE_SEQ, .line = 1, .col = 1};
    if (el && el->type != RUN_NODE_SEQ) {
        diag_add(&c, AT(el), "encodings", "expected a list of encodings, got %s",
                 run_node_kind(el));
        el = NULL;
    }
    /* flatten: an entry {set: NAME} stands for the list in
     * configs/encodings/NAME.yaml (errors there name that file) */
    size_t n_flat = 0, cap_flat = 0;
    flat_enc *flat = NULL;
    for (size_t i = 0; el && i < el->n; i++) {
        const run_node *e = el->items[i], *set = run_node_get(e, "set", NULL);
        char ep[96];
        snprintf(ep, sizeof ep, "encodings[%zu]", i);
        if (!set) {
            if (!flat_push(&flat, &n_flat, &cap_flat, e, e, c.file, ep))
                c.oom = 1;
            continue;
        }
        char sp[112];
        snprintf(sp, sizeof sp, "%s.set", ep);
        if (e->n != 1) {
            diag_add(&c, AT(e), ep, "an encoding set entry holds only 'set: NAME'");
            continue;
        }
        char name[128];
        if (!scalar_str(&c, set, sp, name, sizeof name))
            continue;
        run_node *root = NULL;
        rl_error serr = {0};
        if (n_sets < RL_ARRAY_LEN(sets) &&
            run_encoding_set_load(name, &root, set_files[n_sets], sizeof set_files[0], &serr)) {
            diag_add(&c, AT(set), sp, "%s", serr.msg);
            continue;
        }
        if (n_sets == RL_ARRAY_LEN(sets)) {
            run_node_free(root);
            diag_add(&c, AT(set), sp, "at most %zu encoding sets per batch", RL_ARRAY_LEN(sets));
            continue;
        }
        sets[n_sets++] = root;
        for (size_t j = 0; j < root->n; j++) {
            snprintf(ep, sizeof ep, "encodings[%zu](set %.20s)[%zu]", i, name, j);
            if (!flat_push(&flat, &n_flat, &cap_flat, root->items[j], e, set_files[n_sets - 1],
                           ep))
                c.oom = 1;
        }
    }
    size_t want = n_flat ? n_flat : 1;
    encs = calloc(want, sizeof *encs);
    n_encs_alloc = want;
    if (!encs || c.oom) {
        free(flat);
        c.oom = 1;
        goto finish;
    }
    if (!el || n_flat == 0) {
        /* no list: base RoPE with default settings */
        encs[0].tmpl = json_pack("{s:s,s:s}", "name", "rope", "type", "rope");
        snprintf(encs[0].name, sizeof encs[0].name, "rope");
        encs[0].node = el ? el : &default_enc_list;
        n_enc = 1;
    }
    const char *batch_file = c.file;
    for (size_t i = 0; i < n_flat; i++) {
        const run_node *e = flat[i].node;
        const char *ep = flat[i].path;
        c.file = flat[i].file;
        enc_entry *en = &encs[n_enc];
        en->node = flat[i].at;
        en->index = (uint32_t)i;
        if (e->type != RUN_NODE_MAP) {
            diag_add(&c, AT(e), ep, "expected a mapping {name: ..., type: ..., params}, got %s",
                     run_node_kind(e));
            continue;
        }
        const run_node *nm = run_node_get(e, "name", NULL), *ty = run_node_get(e, "type", NULL);
        char p2[128];
        snprintf(p2, sizeof p2, "%s.name", ep);
        if (!nm) {
            diag_add(&c, AT(e), ep, "missing required key 'name'");
            continue;
        }
        if (!scalar_str(&c, nm, p2, en->name, sizeof en->name))
            continue;
        snprintf(p2, sizeof p2, "%s.type", ep);
        char type[64];
        if (!ty) {
            diag_add(&c, AT(e), ep, "missing required key 'type' (rope, model, ...)");
            continue;
        }
        if (!scalar_str(&c, ty, p2, type, sizeof type))
            continue;
        int dup = 0;
        for (size_t k = 0; k < n_enc; k++)
            dup |= !strcmp(encs[k].name, en->name);
        if (dup) {
            diag_add(&c, AT(nm), ep, "encoding name '%s' is used twice", en->name);
            continue;
        }
        en->tmpl = json_object();
        char qual[16] = "encoding";
        for (size_t k = 0; k < e->n; k++) {
            if (!strcmp(e->keys[k], "name") || !strcmp(e->keys[k], "type"))
                continue;
            run_node sub = *e; /* one key at a time keeps paths and positions */
            sub.n = 1;
            sub.keys = &e->keys[k];
            sub.items = &e->items[k];
            sub.key_line = &e->key_line[k];
            sub.key_col = &e->key_col[k];
            parse_free(&c, &sub, ep, qual, en->tmpl, &en->ax, 0);
        }
        json_object_set_new(en->tmpl, "name", json_string(en->name));
        json_object_set_new(en->tmpl, "type", json_string(type));
        n_enc++;
    }
    c.file = batch_file;
    free(flat);

    /* experiments */
    size_t cap = 0;
    const run_node *xl = run_node_get(r, "experiments", NULL);
    if (!xl)
        diag_add(&c, AT(r), "", "missing required key 'experiments' (a list of {kind: ..., "
                 "params: ...})");
    else if (xl->type != RUN_NODE_SEQ || xl->n == 0)
        diag_add(&c, AT(xl), "experiments", "expected a non-empty list of experiments, got %s",
                 xl->type == RUN_NODE_SEQ ? "an empty list" : run_node_kind(xl));
    int *use_enc = calloc(n_enc ? n_enc : 1, sizeof *use_enc);
    if (!use_enc)
        c.oom = 1;
    size_t nk;
    const exp_kind *const *kinds = exp_kinds(&nk);
    const char *kind_names[32];
    for (size_t i = 0; i < nk && i < 32; i++)
        kind_names[i] = kinds[i]->name;
    for (size_t i = 0; use_enc && xl && xl->type == RUN_NODE_SEQ && i < xl->n; i++) {
        const run_node *e = xl->items[i];
        char ep[64], kp[96];
        snprintf(ep, sizeof ep, "experiments[%zu]", i);
        if (e->type != RUN_NODE_MAP) {
            diag_add(&c, AT(e), ep, "expected a mapping {kind: ..., params: ...}, got %s",
                     run_node_kind(e));
            continue;
        }
        for (size_t k = 0; k < e->n; k++) {
            int known = 0;
            for (size_t j = 0; j < RL_ARRAY_LEN(exp_entry_keys); j++)
                known |= !strcmp(e->keys[k], exp_entry_keys[j]);
            if (!known)
                unknown_key(&c, e, k, ep, exp_entry_keys, RL_ARRAY_LEN(exp_entry_keys));
        }
        const run_node *kn = run_node_get(e, "kind", NULL);
        snprintf(kp, sizeof kp, "%s.kind", ep);
        char kname[64];
        if (!kn) {
            diag_add(&c, AT(e), ep, "missing required key 'kind'");
            continue;
        }
        if (!scalar_str(&c, kn, kp, kname, sizeof kname))
            continue;
        const exp_kind *kind = exp_find(kname);
        if (!kind) {
            char buf[512];
            suggest(kname, kind_names, nk, buf, sizeof buf);
            diag_add(&c, AT(kn), kp, "unknown experiment kind '%s'%s", kname,
                     strstr(buf, "valid keys") ? "; known kinds: decay, precision" : buf);
            continue;
        }
        const run_node *sel = run_node_get(e, "encodings", NULL);
        for (size_t k = 0; k < n_enc; k++)
            use_enc[k] = sel == NULL;
        if (sel) {
            snprintf(kp, sizeof kp, "%s.encodings", ep);
            size_t ns = sel->type == RUN_NODE_SEQ ? sel->n : 1;
            for (size_t s = 0; s < ns; s++) {
                const run_node *sn = sel->type == RUN_NODE_SEQ ? sel->items[s] : sel;
                if (sn->type != RUN_NODE_SCALAR) {
                    diag_add(&c, AT(sn), kp, "expected encoding names, got %s",
                             run_node_kind(sn));
                    continue;
                }
                int found = 0;
                const char *names[64];
                size_t nn = 0;
                for (size_t k = 0; k < n_enc; k++) {
                    if (!strcmp(encs[k].name, sn->text))
                        found = 1, use_enc[k] = 1;
                    if (nn < 64)
                        names[nn++] = encs[k].name;
                }
                if (!found) {
                    char buf[512];
                    diag_add(&c, AT(sn), kp, "no encoding named '%s'%s", sn->text,
                             suggest(sn->text, names, nn, buf, sizeof buf));
                }
            }
        }
        json_t *params = json_object();
        axes *pax = calloc(1, sizeof *pax);
        if (!params || !pax) {
            json_decref(params);
            free(pax);
            c.oom = 1;
            break;
        }
        snprintf(kp, sizeof kp, "%s.params", ep);
        const run_node *pn = run_node_get(e, "params", NULL);
        size_t before = diag->n;
        parse_schema(&c, pn, kp, "params", kind->params, kind->n_params, params, pax);
        if (!shape_bad && diag->n == before)
            expand_entry(&c, b, &cap, e, (uint32_t)i, kind, params, pax, encs, n_enc, use_enc,
                         model_tmpl, max, data_tmpl, dax, data);
        axes_free(pax);
        free(pax);
        json_decref(params);
    }
    free(use_enc);

finish:
    for (size_t i = 0; i < n_sets; i++)
        run_node_free(sets[i]);
    for (size_t i = 0; encs && i < n_encs_alloc; i++) {
        json_decref(encs[i].tmpl);
        axes_free(&encs[i].ax);
    }
    free(encs);
    if (max)
        axes_free(max);
    if (dax)
        axes_free(dax);
    free(max);
    free(dax);
    json_decref(model_tmpl);
    json_decref(data_tmpl);
    run_node_free(root);
    if (c.oom) {
        run_batch_free(b);
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory while loading %s", name);
    }
    if (diag->n) {
        run_batch_free(b);
        return rl_fail(err, RL_ERR_PARSE, "%s: %zu error(s)", name, diag->n);
    }
    return RL_OK;
}

rl_status run_batch_load(const char *path, run_batch *b, run_diag *diag, rl_error *err)
{
    memset(b, 0, sizeof *b);
    memset(diag, 0, sizeof *diag);
    char *text = NULL;
    size_t len = 0;
    rl_status st = run_read_file(path, 16u << 20, &text, &len, err);
    if (st)
        return st;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    st = run_batch_parse(path, text, len, dir, b, diag, err);
    free(text);
    return st;
}

void run_batch_free(run_batch *b)
{
    for (size_t i = 0; i < b->n_items; i++) {
        json_decref(b->items[i].resolved);
        json_decref(b->items[i].swept);
        json_decref(b->items[i].enc_params);
    }
    free(b->items);
    free(b->text);
    json_decref(b->swept_keys);
    memset(b, 0, sizeof *b);
}

int run_in_shard(const run_item *it, uint32_t index, uint32_t count)
{
    return count <= 1 || it->hash % count == index;
}

rl_status run_shard_parse(const char *spec, uint32_t *index, uint32_t *count, rl_error *err)
{
    char buf[64];
    const char *what = "--shard";
    if (!spec) {
        const char *id = getenv("SLURM_ARRAY_TASK_ID"), *n = getenv("SLURM_ARRAY_TASK_COUNT");
        if (!id || !n) {
            *index = 0;
            *count = 1;
            return RL_OK;
        }
        snprintf(buf, sizeof buf, "%s/%s", id, n);
        spec = buf;
        what = "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT";
    }
    char *end;
    errno = 0;
    unsigned long i = strtoul(spec, &end, 10);
    if (end == spec || *end != '/' || spec[0] == '-')
        return rl_fail(err, RL_ERR_ARG, "%s '%s': expected I/N, e.g. 0/4", what, spec);
    const char *ns = end + 1;
    unsigned long n = strtoul(ns, &end, 10);
    if (end == ns || *end || errno || ns[0] == '-' || n == 0 || n > 100000 || i >= n)
        return rl_fail(err, RL_ERR_ARG, "%s '%s': expected I/N with 0 <= I < N <= 100000", what,
                       spec);
    *index = (uint32_t)i;
    *count = (uint32_t)n;
    return RL_OK;
}
