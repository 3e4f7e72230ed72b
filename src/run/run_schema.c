/* run_schema.c — one section of a batch file: validated against a
 * parameter table (model, data, an experiment's params), or kept
 * free-form (an encoding's parameters, checked by the encoding itself). */
#include <string.h>

#include "run/run_parse.h"

/* Is "<section>.<name>" a key of one of the axes? */
static int is_swept(const run_axes *ax, const char *section, const char *name)
{
    char q[200];
    run_path_join(q, sizeof q, section, name);
    for (size_t k = 0; k < ax->n; k++)
        for (size_t j = 0; j < ax->a[k].n_keys; j++)
            if (strcmp(ax->a[k].key[j], q) == 0)
                return 1;
    return 0;
}

/* Parameters neither given nor swept: defaults, or a report when required
 * (map NULL: the section is absent and its requirements were reported). */
static void fill_defaults(run_pctx *c, const run_node *map, const char *path,
                          const char *section, const rl_param *ps, size_t np, json_t *tmpl,
                          const run_axes *ax)
{
    for (size_t i = 0; i < np; i++) {
        const rl_param *p = &ps[i];
        if (is_swept(ax, section, p->key) || json_object_get(tmpl, p->key))
            continue;
        if (!p->def) { /* required */
            if (map)
                run_diag_add(c, RUN_AT(map), path, "missing required key '%s'", p->key);
            continue;
        }
        json_error_t je;
        json_t *d = json_loads(p->def, JSON_DECODE_ANY, &je);
        if (!d) {
            c->oom = 1; /* a default is valid JSON by construction */
            continue;
        }
        if (json_is_null(d)) /* optional, no default: stays absent */
            json_decref(d);
        else
            json_object_set_new(tmpl, p->key, d);
    }
}

void run_schema_parse(run_pctx *c, const run_node *map, const char *path, const char *section,
                      const rl_param *ps, size_t np, json_t *tmpl, run_axes *ax)
{
    const char *valid[64];
    size_t nv = run_param_names(ps, np, valid, 63);
    if (map && map->type != RUN_NODE_MAP) {
        run_diag_add(c, RUN_AT(map), path, "expected a mapping of keys, got %s",
                     run_node_kind(map));
        return;
    }
    for (size_t i = 0; map && i < map->n; i++) {
        const char *key = map->keys[i];
        const run_node *v = map->items[i];
        char kp[400];
        run_path_join(kp, sizeof kp, path, key);
        if (strcmp(key, "zip") == 0) {
            run_sweep_zip(c, ax, v, kp, section, ps, np, map);
            continue;
        }
        const rl_param *p = run_find_param(ps, np, key);
        if (!p) {
            run_unknown_key(c, map, i, path, valid, nv);
            continue;
        }
        if (v->type == RUN_NODE_SEQ && v->value_list) {
            json_t *val = run_list_value(c, v, p, kp);
            if (val)
                json_object_set_new(tmpl, key, val);
            continue;
        }
        if (v->type == RUN_NODE_SEQ) {
            char full[sizeof ax->a[0].key[0]];
            run_path_join(full, sizeof full, section, key);
            run_sweep_list(c, ax, v, p, kp, full);
            continue;
        }
        json_t *val = run_typed_value(c, v, p, kp);
        if (val)
            json_object_set_new(tmpl, key, val);
    }
    fill_defaults(c, map, path, section, ps, np, tmpl, ax);
}

void run_free_parse(run_pctx *c, const run_node *map, const char *path, const char *qual,
                    json_t *obj, run_axes *ax, int depth)
{
    for (size_t i = 0; i < map->n; i++) {
        const char *key = map->keys[i];
        const run_node *v = map->items[i];
        char kp[400], q[200];
        run_path_join(kp, sizeof kp, path, key);
        run_path_join(q, sizeof q, qual, key);
        if (strcmp(key, "zip") == 0 && depth == 0) {
            run_sweep_zip(c, ax, v, kp, qual, NULL, 0, NULL);
            continue;
        }
        if (v->type == RUN_NODE_SCALAR) {
            json_object_set_new(obj, key, run_scalar_json(v));
        } else if (v->type == RUN_NODE_SEQ && v->value_list) {
            json_t *val = run_list_value(c, v, NULL, kp);
            if (val)
                json_object_set_new(obj, key, val);
        } else if (v->type == RUN_NODE_MAP) {
            json_t *sub = json_object();
            run_free_parse(c, v, kp, q, sub, ax, depth + 1);
            json_object_set_new(obj, key, sub);
        } else {
            run_sweep_list(c, ax, v, NULL, kp, q);
        }
    }
}
