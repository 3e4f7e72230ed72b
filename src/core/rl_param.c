/* The one parameter validator (rl_param.h). */
#include "core/rl_param.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

const char *rl_ptype_name(rl_ptype t)
{
    switch (t) {
    case RL_P_INT: return "int";
    case RL_P_NUM: return "number";
    case RL_P_BOOL: return "bool";
    case RL_P_STR: return "string";
    case RL_P_ENUM: return "enum";
    case RL_P_JSON: return "json";
    }
    return "?";
}

long rl_param_find(const rl_param *ps, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(ps[i].key, key) == 0)
            return (long)i;
    return -1;
}

int rl_param_type_ok(const rl_param *p, const json_t *v)
{
    switch (p->type) {
    case RL_P_JSON: return 1;
    case RL_P_INT:
        return json_is_integer(v) ||
               (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)));
    case RL_P_NUM: return json_is_number(v);
    case RL_P_BOOL: return json_is_boolean(v);
    case RL_P_STR:
    case RL_P_ENUM: return json_is_string(v);
    }
    return 0;
}

rl_status rl_param_check(const char *owner, const rl_param *p, const json_t *v, json_t **out,
                         rl_error *err)
{
    *out = NULL;
    /* "<owner>: <key> " before each message; nothing when the caller (the
     * batch loader) names the place itself. */
    char pre[160] = "";
    if (owner)
        snprintf(pre, sizeof pre, "%s: %s ", owner, p->key);
    switch (p->type) {
    case RL_P_JSON:
        *out = json_deep_copy(v);
        break;
    case RL_P_INT: {
        if (!rl_param_type_ok(p, v))
            return rl_fail_key(err, RL_ERR_ARG, p->key, "%smust be an integer", pre);
        double x = json_is_integer(v) ? (double)json_integer_value(v) : json_real_value(v);
        if (x < p->min)
            return rl_fail_key(err, RL_ERR_ARG, p->key,
                               "%s%.17g is below the minimum %.17g", pre, x, p->min);
        if (x > p->max)
            return rl_fail_key(err, RL_ERR_ARG, p->key,
                               "%s%.17g exceeds the maximum %.17g", pre, x, p->max);
        *out = json_integer((json_int_t)x);
        break;
    }
    case RL_P_NUM: {
        if (!rl_param_type_ok(p, v))
            return rl_fail_key(err, RL_ERR_ARG, p->key, "%smust be a number", pre);
        double x = json_number_value(v);
        if (!isfinite(x) || x < p->min)
            return rl_fail_key(err, RL_ERR_ARG, p->key,
                               "%s%.17g is below the minimum %.17g", pre, x, p->min);
        if (x > p->max)
            return rl_fail_key(err, RL_ERR_ARG, p->key,
                               "%s%.17g exceeds the maximum %.17g", pre, x, p->max);
        *out = json_real(x);
        break;
    }
    case RL_P_BOOL:
        if (!rl_param_type_ok(p, v))
            return rl_fail_key(err, RL_ERR_ARG, p->key, "%smust be true or false", pre);
        *out = json_boolean(json_is_true(v));
        break;
    case RL_P_STR:
        if (!rl_param_type_ok(p, v))
            return rl_fail_key(err, RL_ERR_ARG, p->key, "%smust be a string", pre);
        *out = json_string(json_string_value(v));
        break;
    case RL_P_ENUM: {
        if (!rl_param_type_ok(p, v))
            return rl_fail_key(err, RL_ERR_ARG, p->key, "%smust be one of %s", pre, p->choices);
        const char *s = json_string_value(v);
        if (!rl_param_choice_ok(p, s))
            return rl_fail_key(err, RL_ERR_ARG, p->key,
                               "%s'%s' is not one of %s", pre, s, p->choices);
        *out = json_string(s);
        break;
    }
    }
    return *out ? RL_OK : rl_fail(err, RL_ERR_NOMEM, "out of host memory");
}

const char *rl_param_choice_at(const rl_param *p, int i, size_t *len)
{
    const char *c = p->choices && *p->choices ? p->choices : NULL;
    for (; c && i > 0; i--)
        c = strchr(c, '|') ? strchr(c, '|') + 1 : NULL;
    if (!c || i < 0)
        return NULL;
    *len = strchr(c, '|') ? (size_t)(strchr(c, '|') - c) : strlen(c);
    return c;
}

int rl_param_choice_index(const rl_param *p, const char *s)
{
    size_t n = strlen(s), len;
    const char *c;
    for (int i = 0; (c = rl_param_choice_at(p, i, &len)); i++)
        if (len == n && strncmp(c, s, n) == 0)
            return i;
    return -1;
}

int rl_param_choice_ok(const rl_param *p, const char *s) { return rl_param_choice_index(p, s) >= 0; }

rl_status rl_params_resolve(const char *owner, const rl_param *ps, size_t n, const json_t *given,
                            json_t **out, rl_error *err)
{
    *out = NULL;
    if (given && !json_is_object(given))
        return rl_fail(err, RL_ERR_ARG, "%s: parameters must be a JSON object", owner);
    if (given) {
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)given, key, v) {
            if (rl_param_find(ps, n, key) >= 0)
                continue;
            char known[512] = "";
            size_t m = 0;
            for (size_t k = 0; k < n && m < sizeof known; k++)
                m += (size_t)snprintf(known + m, sizeof known - m, "%s%s", k ? ", " : "",
                                      ps[k].key);
            return rl_fail_key(err, RL_ERR_ARG, key, "%s: unknown parameter '%s' (known: %s)",
                               owner, key, n ? known : "none");
        }
    }
    json_t *res = json_object();
    if (!res)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    for (size_t i = 0; i < n; i++) {
        const rl_param *p = &ps[i];
        json_t *v = given ? json_object_get(given, p->key) : NULL;
        json_t *def = NULL;
        if (!v || json_is_null(v)) {
            if (!p->def) {
                json_decref(res);
                return rl_fail_key(err, RL_ERR_ARG, p->key, "%s: %s is required", owner, p->key);
            }
            json_error_t je;
            def = json_loads(p->def, JSON_DECODE_ANY, &je);
            assert(def && "rl_param default must be valid JSON");
            if (json_is_null(def)) {
                /* no constant default: stays null, the owner derives it */
                json_object_set_new(res, p->key, def);
                continue;
            }
            v = def;
        }
        json_t *val = NULL;
        rl_status st = rl_param_check(owner, p, v, &val, err);
        json_decref(def);
        if (st) {
            json_decref(res);
            return st;
        }
        json_object_set_new(res, p->key, val);
    }
    *out = res;
    return RL_OK;
}
