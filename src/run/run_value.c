/* run_value.c — one YAML scalar of a batch file under a parameter spec:
 * type, range and choices. */
#include <stdio.h>
#include <string.h>

#include "run/run_parse.h"

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

/* A string that must be one of p->choices; 0 after reporting. */
static int check_choice(run_pctx *c, const run_node *n, const exp_param *p, const char *path)
{
    int ok = 0;
    size_t nc = 0;
    for (; p->choices[nc]; nc++)
        ok |= strcmp(p->choices[nc], n->text) == 0;
    if (ok)
        return 1;
    char buf[512];
    run_suggest(n->text, p->choices, nc, buf, sizeof buf);
    run_diag_add(c, RUN_AT(n), path, "'%s' is not one of the choices%s", n->text,
                 strstr(buf, "valid keys") ? strstr(buf, ":") : buf);
    return 0;
}

json_t *run_typed_value(run_pctx *c, const run_node *n, const exp_param *p, const char *path)
{
    if (n->type != RUN_NODE_SCALAR) {
        run_diag_add(c, RUN_AT(n), path, "expected %s, got %s", type_name(p->type),
                     run_node_kind(n));
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
            run_diag_add(c, RUN_AT(n), path, "expected %s, got '%s'", type_name(p->type),
                         n->text);
            break;
        }
        double x = json_number_value(v);
        if (p->type == EXP_P_INT && !json_is_integer(v)) {
            run_diag_add(c, RUN_AT(n), path, "expected an integer, got %s", n->text);
            break;
        }
        if (x < p->min || x > p->max) {
            run_diag_add(c, RUN_AT(n), path, "%s is out of range [%.15g, %.15g]", n->text, p->min,
                         p->max);
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
        if (p->choices && !check_choice(c, n, p, path))
            break;
        return v;
    case EXP_P_BOOL:
        if (json_is_boolean(v))
            return v;
        run_diag_add(c, RUN_AT(n), path, "expected true or false, got '%s'", n->text);
        break;
    }
    json_decref(v);
    return NULL;
}

const exp_param *run_find_param(const exp_param *ps, size_t np, const char *key)
{
    for (size_t i = 0; i < np; i++)
        if (strcmp(ps[i].name, key) == 0)
            return &ps[i];
    return NULL;
}

size_t run_param_names(const exp_param *ps, size_t np, const char **valid, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < np && n < cap; i++)
        valid[n++] = ps[i].name;
    return n;
}

int run_scalar_str(run_pctx *c, const run_node *n, const char *path, char *dst, size_t cap)
{
    if (!n || n->type != RUN_NODE_SCALAR) {
        run_diag_add(c, RUN_AT(n), path, "expected a string, got %s", run_node_kind(n));
        return 0;
    }
    if (strlen(n->text) >= cap) {
        run_diag_add(c, RUN_AT(n), path, "longer than %zu characters", cap - 1);
        return 0;
    }
    snprintf(dst, cap, "%s", n->text);
    return 1;
}
