/* run_model.c — model shapes from presets, HF config.json files and
 * explicit keys. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pe/rope.h"
#include "run/run_int.h"

static int get_u32(const json_t *o, const char *k, uint32_t *v)
{
    json_t *x = json_object_get(o, k);
    if (!json_is_integer(x) || json_integer_value(x) <= 0 || json_integer_value(x) > 1 << 30)
        return 0;
    *v = (uint32_t)json_integer_value(x);
    return 1;
}

/* RoPE settings of a preset or HF config as a registry encoding of family
 * rope: rope_theta, partial_rotary_factor, max_position_embeddings and the
 * keys of rope_scaling / rope_parameters that RoPE knows (HF's "type" alias
 * becomes rope_type; keys HF itself ignores, e.g. mrope_section, are
 * dropped as HF only warns about them). */
static json_t *rope_of(const json_t *cfg)
{
    json_t *theta = json_object_get(cfg, "rope_theta");
    json_t *sc = json_object_get(cfg, "rope_scaling");
    if (!json_is_object(sc))
        sc = json_object_get(cfg, "rope_parameters");
    if (!json_is_number(theta) && json_is_object(sc))
        theta = json_object_get(sc, "rope_theta");
    if (!json_is_number(theta) && !json_is_object(sc))
        return NULL;
    json_t *e = json_pack("{s:s}", "type", "rope");
    if (json_is_number(theta))
        json_object_set(e, "rope_theta", theta);
    static const char *const top[] = {"partial_rotary_factor", "max_position_embeddings"};
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++) {
        json_t *v = json_object_get(cfg, top[i]);
        if (json_is_number(v))
            json_object_set(e, top[i], v);
    }
    if (json_is_object(sc)) {
        const char *key;
        json_t *v;
        json_object_foreach(sc, key, v) {
            const char *k = strcmp(key, "type") == 0 ? "rope_type" : key;
            if (rl_param_find(rope_params, ROPE_N_PARAMS, k) >= 0)
                json_object_set(e, k, v);
        }
    }
    return e;
}

rl_status run_model_resolve(const json_t *model, const char *base_dir, exp_model *m,
                            json_t **rope, rl_error *err)
{
    rl_status st = run_model_load(model, base_dir, m, rope, err);
    for (unsigned i = 0; !st && i < RUN_MODEL_CHECKS; i++)
        st = run_model_check(m, i, err);
    if (st) {
        json_decref(*rope);
        *rope = NULL;
    }
    return st;
}

rl_status run_model_load(const json_t *model, const char *base_dir, exp_model *m,
                         json_t **rope, rl_error *err)
{
    memset(m, 0, sizeof *m);
    *rope = NULL;
    const char *preset = json_string_value(json_object_get(model, "preset"));
    const char *hf = json_string_value(json_object_get(model, "hf_config"));
    rl_status st;
    if (preset) {
        json_t *p;
        if ((st = run_preset_load(preset, &p, err)))
            return st;
        get_u32(p, "head_dim", &m->head_dim);
        get_u32(p, "heads", &m->heads);
        get_u32(p, "kv_heads", &m->kv_heads);
        get_u32(p, "train_len", &m->train_len);
        *rope = rope_of(p);
        json_decref(p);
    }
    if (hf) {
        char path[1200];
        snprintf(path, sizeof path, "%s%s%s", hf[0] == '/' ? "" : base_dir, hf[0] == '/' ? "" : "/",
                 hf);
        json_error_t je;
        json_t *cfg = json_load_file(path, 0, &je);
        if (!json_is_object(cfg)) {
            json_decref(cfg);
            json_decref(*rope);
            *rope = NULL;
            return rl_fail(err, RL_ERR_ARG, "hf_config %s: %s", path,
                           cfg ? "not a JSON object" : je.text);
        }
        uint32_t hidden = 0;
        get_u32(cfg, "num_attention_heads", &m->heads);
        if (!get_u32(cfg, "num_key_value_heads", &m->kv_heads))
            m->kv_heads = m->heads;
        if (!get_u32(cfg, "head_dim", &m->head_dim) && get_u32(cfg, "hidden_size", &hidden) &&
            m->heads)
            m->head_dim = hidden / m->heads;
        get_u32(cfg, "max_position_embeddings", &m->train_len);
        json_t *sc = json_object_get(cfg, "rope_scaling");
        get_u32(sc, "original_max_position_embeddings", &m->train_len);
        json_decref(*rope);
        *rope = rope_of(cfg);
        json_decref(cfg);
    }
    get_u32(model, "head_dim", &m->head_dim);
    get_u32(model, "heads", &m->heads);
    get_u32(model, "kv_heads", &m->kv_heads);
    get_u32(model, "train_len", &m->train_len);
    if (m->heads && !m->kv_heads)
        m->kv_heads = m->heads;
    return RL_OK;
}

rl_status run_model_check(const exp_model *m, unsigned i, rl_error *err)
{
    switch (i) {
    case 0: {
        const char *missing = !m->head_dim ? "head_dim" : !m->heads ? "heads"
                            : !m->train_len ? "train_len" : NULL;
        if (missing)
            return rl_fail(err, RL_ERR_ARG, "%s is not given (set it, or use preset or hf_config)",
                           missing);
        return RL_OK;
    }
    case 1:
        if (m->head_dim % 2)
            return rl_fail(err, RL_ERR_ARG, "head_dim %u must be even (RoPE rotates pairs)",
                           m->head_dim);
        return RL_OK;
    case 2:
        if (m->heads && m->kv_heads && m->heads % m->kv_heads)
            return rl_fail(err, RL_ERR_ARG, "kv_heads %u does not divide heads %u", m->kv_heads,
                           m->heads);
        return RL_OK;
    default:
        return RL_OK;
    }
}
