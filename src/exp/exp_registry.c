/* exp_registry.c — the experiment kinds (listed once, in src/exp/meson.build)
 * and their shared helpers. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "exp/exp.h"
#include "exp/exp_kinds.h" /* generated from src/exp/meson.build */
#include "pe/pe.h"

/* The registry, generated from the one list in src/exp/meson.build. */
#define X(name) extern const exp_kind exp_kind_##name;
EXP_KIND_LIST(X)
#undef X
#define X(name) &exp_kind_##name,
static const exp_kind *const kinds[] = {EXP_KIND_LIST(X)};
#undef X

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

const exp_metric *exp_metric_find(const exp_kind *k, const char *metric)
{
    for (size_t i = 0; k && i < k->n_metrics; i++)
        if (strcmp(k->metrics[i].name, metric) == 0)
            return &k->metrics[i];
    return NULL;
}

rl_status exp_params_get(const char *kind, const rl_param *ps, size_t n, const exp_run *run,
                         exp_value *out, rl_error *err)
{
    json_t *res = NULL;
    rl_status st = rl_params_resolve(kind, ps, n, run->params, &res, err);
    if (st)
        return st;
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_object_get(res, ps[i].key);
        out[i].num = json_is_number(v) ? json_number_value(v) : json_is_true(v) ? 1.0 : 0.0;
        snprintf(out[i].str, sizeof out[i].str, "%s", json_is_string(v) ? json_string_value(v) : "");
    }
    json_decref(res);
    return RL_OK;
}

rl_status exp_query_rows_check(const char *kind, uint64_t query_rows, rl_rows_scheme s,
                               uint64_t tokens, rl_error *err)
{
    uint64_t need = rl_rows_min_rows(s, tokens);
    if (!query_rows || query_rows >= tokens || query_rows >= need)
        return RL_OK;
    return rl_fail_key(err, RL_ERR_ARG, "query_rows",
                       "%s: query_rows %llu is too few for query_sampling %s at %llu tokens: "
                       "a mean and its 95 %% interval need at least %llu rows there (%s); "
                       "give query_rows >= %llu",
                       kind, (unsigned long long)query_rows, rl_rows_scheme_name(s),
                       (unsigned long long)tokens, (unsigned long long)need,
                       s == RL_ROWS_LOG_GROUPS
                           ? "two in each power-of-two position group of two or more tokens, "
                             "one in a group of one"
                           : "two for a variance",
                       (unsigned long long)need);
}

rl_status exp_encoding_create(const exp_run *run, uint64_t seq_len, pe_encoding **e,
                              rl_error *err)
{
    return exp_encoding_for_pass(run, seq_len, -1, e, err);
}

rl_status exp_encoding_for_pass(const exp_run *run, uint64_t seq_len, int causal, pe_encoding **e,
                                rl_error *err)
{
    *e = NULL;
    const char *type = run->encoding_type ? run->encoding_type : "";
    const char *family = type;
    /* The runner's parameters are used as they are: the length goes in
     * through the shape (RoPE takes it as seq_len unless seq_len is given),
     * and a scaling name as the type already has its rope_type written in
     * (run_expand.c). Only a run built by hand without it gets a copy. */
    const json_t *p = run->encoding;
    json_t *own = NULL;
    if (!pe_family_find(type) && rope_type_parse(type) < ROPE_TYPE_COUNT) {
        family = "rope";
        if (!json_object_get(p, "rope_type") && !json_object_get(p, "type")) {
            own = p ? json_deep_copy(p) : json_object();
            if (!own)
                return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
            json_object_set_new(own, "rope_type", json_string(type));
            p = own;
        }
    }
    /* A bias whose form depends on the direction (ALiBi's and T5's
     * `bidirectional`) takes it from the pass; a value the batch gives that
     * disagrees with the pass is refused, never silently replaced. */
    const pe_family *fam = pe_family_find(family);
    if (causal >= 0 && fam && fam->direction_key) {
        const json_t *given = p ? json_object_get(p, fam->direction_key) : NULL;
        if (given && !json_is_null(given) && json_is_boolean(given) &&
            json_is_true(given) == causal) {
            json_decref(own);
            return rl_fail(err, RL_ERR_ARG,
                           "encoding '%s': %s: %s is given but this kind runs %s attention here; "
                           "leave %s out (the kind sets it from each pass)",
                           run->encoding_name, family, fam->direction_key,
                           causal ? "causal" : "bidirectional", fam->direction_key);
        }
        if (!given || json_is_null(given)) {
            json_t *c = own ? own : p ? json_deep_copy(p) : json_object();
            if (!c)
                return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
            json_object_set_new(c, fam->direction_key, json_boolean(!causal));
            own = c;
            p = own;
        }
    }
    pe_shape shape = {
        .head_dim = run->model.head_dim,
        .heads = run->model.heads,
        .kv_heads = run->model.kv_heads,
        .seed = run->seed,
        .max_positions = seq_len,
    };
    rl_status st = pe_encoding_create(family, p, &shape, e, err);
    json_decref(own);
    if (st) {
        rl_error_prefix(err, "encoding '%s'", run->encoding_name);
        rl_error_set_key(err, NULL); /* a key of the encoding, not of the kind's params */
    } else if (run->encoding_used && !json_object_size(run->encoding_used)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)pe_encoding_params(*e), k, v)
            if (!json_is_null(v)) /* the values in use; null = not given and not derived */
                json_object_set_new(run->encoding_used, k, json_deep_copy(v));
    }
    return st;
}

rl_status exp_rope_freqs(const exp_run *run, uint64_t seq_len, rope_freqs *f, rl_error *err)
{
    pe_encoding *e;
    rl_status st = exp_encoding_create(run, seq_len, &e, err);
    if (st)
        return st;
    const rope_freqs *rf = pe_rope_freqs(e);
    if (rf)
        *f = *rf;
    else
        st = rl_fail(err, RL_ERR_ARG,
                     "encoding '%s': this kind studies the rotation itself and needs a RoPE-family "
                     "encoding (type rope or a scaling name such as yarn), not '%s'",
                     run->encoding_name, run->encoding_type);
    pe_encoding_destroy(e);
    return st;
}

const char *exp_kind_names(void)
{
#define X(name) ", " #name
    static const char names[] = EXP_KIND_LIST(X);
#undef X
    return names + 2;
}
