/* run_value.c — one YAML scalar of a batch file under a parameter spec:
 * type, range and choices. */
#include <stdio.h>
#include <string.h>

#include "run/run_parse.h"

static const char *type_name(rl_ptype t)
{
    switch (t) {
    case RL_P_INT:
        return "an integer";
    case RL_P_NUM:
        return "a number";
    case RL_P_STR:
    case RL_P_ENUM:
        return "a string";
    case RL_P_BOOL:
        return "true or false";
    case RL_P_JSON:
        break;
    }
    return "a value";
}

/* The one validator (rl_param_check) on the scalar's JSON value; a string
 * parameter takes any scalar's text (`name: 123` is the string "123"). An
 * enum outside its choices gets a suggestion. */
json_t *run_typed_value(run_pctx *c, const run_node *n, const rl_param *p, const char *path)
{
    if (n->type != RUN_NODE_SCALAR) {
        run_diag_add(c, RUN_AT(n), path, "expected %s, got %s", type_name(p->type),
                     run_node_kind(n));
        return NULL;
    }
    json_t *v = run_scalar_json(n);
    if (v && (p->type == RL_P_STR || p->type == RL_P_ENUM) && !json_is_string(v)) {
        json_decref(v);
        v = json_string(n->text);
    }
    if (!v) {
        c->oom = 1;
        return NULL;
    }
    json_t *out = NULL;
    rl_error err = {0};
    if (rl_param_check(NULL, p, v, &out, &err) != RL_OK) {
        if (p->type == RL_P_ENUM) {
            const char *valid[32];
            char names[512];
            size_t nv = 0;
            snprintf(names, sizeof names, "%s", p->choices);
            for (char *t = strtok(names, "|"); t && nv < 32; t = strtok(NULL, "|"))
                valid[nv++] = t;
            char buf[600];
            run_suggest(n->text, valid, nv, buf, sizeof buf);
            run_diag_add(c, RUN_AT(n), path, "'%s' is not one of the choices%s", n->text,
                         strstr(buf, "valid keys") ? strstr(buf, ":") : buf);
        } else {
            /* a type error shows what was written; a range error has the value */
            if (!rl_param_type_ok(p, v))
                run_diag_add(c, RUN_AT(n), path, "%s (got '%s')", err.msg, n->text);
            else
                run_diag_add(c, RUN_AT(n), path, "%s", err.msg);
        }
    }
    json_decref(v);
    return out;
}

const rl_param *run_find_param(const rl_param *ps, size_t np, const char *key)
{
    for (size_t i = 0; i < np; i++)
        if (strcmp(ps[i].key, key) == 0)
            return &ps[i];
    return NULL;
}

size_t run_param_names(const rl_param *ps, size_t np, const char **valid, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < np && n < cap; i++)
        valid[n++] = ps[i].key;
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

json_t *run_list_value(run_pctx *c, const run_node *n, const rl_param *p, const char *path)
{
    if (p && p->type != RL_P_JSON) {
        run_diag_add(c, RUN_AT(n), path, "takes %s, not a list (!list [...] is for list "
                     "parameters)", type_name(p->type));
        return NULL;
    }
    json_t *v = run_node_json(n);
    if (!v) {
        c->oom = 1;
        return NULL;
    }
    json_t *out = NULL;
    rl_error err = {0};
    if (p && rl_param_check(NULL, p, v, &out, &err) != RL_OK)
        run_diag_add(c, RUN_AT(n), path, "%s", err.msg);
    if (!p)
        out = json_incref(v);
    json_decref(v);
    return out;
}
