/* exp_registry.c — the experiment kinds, one line each, and helpers. */
#include <math.h>
#include <string.h>

#include "exp/exp.h"

extern const exp_kind exp_kind_decay;
extern const exp_kind exp_kind_precision;

static const exp_kind *const kinds[] = {
    &exp_kind_decay,
    &exp_kind_precision,
};

const exp_kind *const *exp_kinds(size_t *n)
{
    *n = sizeof kinds / sizeof kinds[0];
    return kinds;
}

const exp_kind *exp_find(const char *name)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i]->name, name) == 0)
            return kinds[i];
    return NULL;
}

double exp_num(const exp_run *run, const char *name)
{
    const json_t *v = json_object_get(run->params, name);
    return json_is_number(v) ? json_number_value(v) : json_is_true(v) ? 1.0 : 0.0;
}

const char *exp_str(const exp_run *run, const char *name)
{
    const char *s = json_string_value(json_object_get(run->params, name));
    return s ? s : "";
}

rl_status exp_rope_desc(const exp_run *run, rope_desc *d, rl_error *err)
{
    memset(d, 0, sizeof *d);
    const char *type = run->encoding_type ? run->encoding_type : "";
    if (strcmp(type, "rope") != 0 && strcmp(type, "default") != 0)
        return rl_fail(err, RL_ERR_UNSUPPORTED,
                       "encoding '%s': type '%s' is not available to this runner yet (only "
                       "'rope', base RoPE; scaled variants come with the encoding registry)",
                       run->encoding_name, type);
    static const char *const known[] = {"rope_theta", "partial_rotary_factor", "layout", NULL};
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)run->encoding, key, val) {
        int ok = 0;
        for (int i = 0; known[i]; i++)
            ok |= strcmp(key, known[i]) == 0;
        if (!ok)
            return rl_fail(err, RL_ERR_ARG,
                           "encoding '%s': key '%s' is not a parameter of type 'rope' "
                           "(rope_theta, partial_rotary_factor, layout)",
                           run->encoding_name, key);
    }
    d->head_dim = run->model.head_dim;
    json_t *theta = json_object_get(run->encoding, "rope_theta");
    if (theta) {
        if (!json_is_number(theta) || !(json_number_value(theta) > 1.0))
            return rl_fail(err, RL_ERR_ARG, "encoding '%s': rope_theta must be a number > 1",
                           run->encoding_name);
        d->theta = json_number_value(theta);
    }
    json_t *prf = json_object_get(run->encoding, "partial_rotary_factor");
    if (prf) {
        double f = json_number_value(prf);
        if (!json_is_number(prf) || !(f > 0.0 && f <= 1.0))
            return rl_fail(err, RL_ERR_ARG,
                           "encoding '%s': partial_rotary_factor must be in (0, 1]",
                           run->encoding_name);
        /* HF: rotary_dim = int(head_dim * partial_rotary_factor) */
        d->rotary_dim = (uint32_t)(run->model.head_dim * f);
        if (d->rotary_dim < 2)
            return rl_fail(err, RL_ERR_ARG,
                           "encoding '%s': partial_rotary_factor %g leaves fewer than 2 rotary "
                           "dimensions of head_dim %u", run->encoding_name, f, run->model.head_dim);
    }
    json_t *lay = json_object_get(run->encoding, "layout");
    if (lay) {
        const char *l = json_string_value(lay);
        if (l && strcmp(l, "half") == 0)
            d->layout = RL_ROPE_LAYOUT_HALF;
        else if (l && strcmp(l, "interleaved") == 0)
            d->layout = RL_ROPE_LAYOUT_INTERLEAVED;
        else
            return rl_fail(err, RL_ERR_ARG,
                           "encoding '%s': layout must be 'half' or 'interleaved'",
                           run->encoding_name);
    }
    rope_desc out;
    rl_status st = rope_desc_resolve(d, &out, err);
    if (st) {
        rl_error_prefix(err, "encoding '%s'", run->encoding_name);
        return st;
    }
    *d = out;
    return RL_OK;
}
