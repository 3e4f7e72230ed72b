/* run_model.c — model shapes from presets, HF config.json files and
 * explicit keys. config.json (and presets, which hold its keys) are read
 * by the one reader, pe/hf_model.h; this file only adds what a batch
 * overrides. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pe/hf_model.h"
#include "run/run_int.h"

static int get_u32(const json_t *o, const char *k, uint32_t *v)
{
    json_t *x = json_object_get(o, k);
    if (!json_is_integer(x) || json_integer_value(x) <= 0 || json_integer_value(x) > 1 << 30)
        return 0;
    *v = (uint32_t)json_integer_value(x);
    return 1;
}

/* A preset (configs/models/NAME.yaml: head_dim, heads, kv_heads, train_len
 * and HF's RoPE keys) as the config.json the one reader takes. */
static json_t *preset_as_hf(const json_t *p)
{
    static const char *const map[][2] = {
        {"heads", "num_attention_heads"}, {"kv_heads", "num_key_value_heads"},
        {"head_dim", "head_dim"}, {"model_type", "model_type"},
    };
    json_t *cfg = json_object();
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)p, key, v) {
        const char *k = key;
        for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
            if (!strcmp(key, map[i][0]))
                k = map[i][1];
        if (strcmp(key, "train_len"))
            json_object_set(cfg, k, v);
    }
    return cfg;
}

rl_status run_preset_model(const char *name, hfm_model *m, rl_error *err)
{
    memset(m, 0, sizeof *m);
    json_t *p;
    rl_status st = run_preset_load(name, &p, err);
    if (st)
        return st;
    json_t *cfg = preset_as_hf(p);
    char label[160];
    snprintf(label, sizeof label, "preset %s", name);
    st = hfm_from_json(cfg, label, m, err);
    /* the preset's train_len is the length runs use (from_preset below):
     * `model --preset` shows that one, not the config reader's 0 */
    const json_t *tl = json_object_get(p, "train_len");
    if (!st && json_is_integer(tl) && json_integer_value(tl) > 0 &&
        json_integer_value(tl) <= (json_int_t)UINT32_MAX)
        m->train_len = (uint32_t)json_integer_value(tl);
    json_decref(cfg);
    json_decref(p);
    return st;
}

/* run_model_attn_params (run.h): the runner, not pe/, owns the batch keys */
static void attn_param(json_t *o, const char *key, json_t *value, const char *src,
                       const char *hf_key, const hfm_layer_type *t)
{
    char from[256];
    if (src)
        snprintf(from, sizeof from, "%s %s, layer type %s", src, hf_key, t->name);
    else
        snprintf(from, sizeof from, "%s", hf_key);
    json_object_set_new(o, key, json_pack("{s:o,s:s}", "value", value, "from", from));
}

json_t *run_model_attn_params(const hfm_layer_type *t, const char *src)
{
    json_t *o = json_object();
    if (t->window)
        attn_param(o, "attn_window", json_integer(t->window), src, "sliding_window", t);
    if (t->chunk)
        attn_param(o, "attn_chunk", json_integer(t->chunk), src, "attention_chunk_size", t);
    if (t->temp) {
        attn_param(o, "attn_temperature", json_string("llama4"), src, "attn_temperature_tuning",
                   t);
        attn_param(o, "attn_temp_scale", json_real(t->temp_scale), src, "attn_scale", t);
        attn_param(o, "attn_temp_floor", json_real(t->temp_floor), src, "floor_scale", t);
    }
    return o;
}

/* The model of hfm m as the runner's shape, and its layer type's encoding
 * (or, when ropelab cannot plan that layer type, the refusal as a string). */
static rl_status from_hfm(const hfm_model *hm, const char *layer_type, const char *src,
                          exp_model *m, json_t **rope, json_t **attn, rl_error *err)
{
    m->heads = hm->heads;
    m->kv_heads = hm->kv_heads;
    m->head_dim = hm->head_dim;
    m->train_len = hm->train_len;
    const hfm_layer_type *t;
    rl_error e = {0};
    json_decref(*rope);
    *rope = NULL;
    if (hfm_select(hm, layer_type, &t, NULL, &e)) {
        if (!strcmp(e.key, "layer_type")) /* an unknown name, not a refused type */
            return rl_fail_key(err, RL_ERR_ARG, "layer_type", "layer_type: %s", e.msg);
        *rope = json_string(e.msg); /* refused: reported where the encoding is used */
        return RL_OK;
    }
    *rope = json_deep_copy(t->encoding);
    if (attn) { /* the layer type's own attention attributes, with their source */
        json_decref(*attn);
        *attn = run_model_attn_params(t, src);
    }
    return RL_OK;
}

static rl_status model_load(const json_t *model, const char *base_dir, exp_model *m,
                            json_t **rope, json_t **attn, rl_error *err);

rl_status run_model_resolve(const json_t *model, const char *base_dir, exp_model *m,
                            json_t **rope, json_t **attn, rl_error *err)
{
    if (attn)
        *attn = NULL;
    rl_status st = model_load(model, base_dir, m, rope, attn, err);
    for (unsigned i = 0; !st && i < RUN_MODEL_CHECKS; i++)
        st = run_model_check(m, i, err);
    if (st) {
        json_decref(*rope);
        *rope = NULL;
        if (attn) {
            json_decref(*attn);
            *attn = NULL;
        }
    }
    return st;
}

rl_status run_capture_model(const char *path, hfm_model *hm, rl_error *err)
{
    memset(hm, 0, sizeof *hm);
    run_capture c;
    rl_status st = run_capture_open(path, &c, err);
    if (st)
        return st;
    json_error_t je;
    json_t *cfg = json_loads(c.config_json, 0, &je);
    char name[1300];
    snprintf(name, sizeof name, "%s (embedded config.json)", path);
    if (!json_is_object(cfg)) {
        st = rl_fail(err, RL_ERR_PARSE, "%s: corrupted capture metadata: key 'config_json' is "
                     "not a JSON object (%s)", path, cfg ? "wrong type" : je.text);
    } else if (!(st = hfm_from_json(cfg, name, hm, err))) {
        static const char *const keys[] = {"heads", "kv_heads", "head_dim"};
        uint32_t file[] = {c.heads, c.kv_heads, c.head_dim},
                 conf[] = {hm->heads, hm->kv_heads, hm->head_dim};
        for (size_t i = 0; !st && i < 3; i++)
            if (file[i] != conf[i])
                st = rl_fail(err, RL_ERR_PARSE, "%s: corrupted capture metadata: %s is %u but "
                             "its embedded config.json gives %u", path, keys[i], file[i],
                             conf[i]);
    }
    if (st)
        hfm_free(hm); /* whatever the reader filled before it failed */
    json_decref(cfg);
    run_capture_close(&c);
    return st;
}

/* model.capture: the capture's embedded config.json through the one reader,
 * with the shape the capture's metadata records (which must agree with
 * that config: a disagreement means the file is not what it says). */
static rl_status from_capture(const char *path, const char *lt, exp_model *m, json_t **rope,
                              json_t **attn, rl_error *err)
{
    hfm_model hm;
    rl_status st = run_capture_model(path, &hm, err);
    if (!st) {
        st = from_hfm(&hm, lt, "capture's config.json", m, rope, attn, err);
        hfm_free(&hm);
    }
    if (st) {
        json_decref(*rope);
        *rope = NULL;
    }
    return st;
}

rl_status run_model_load(const json_t *model, const char *base_dir, exp_model *m,
                         json_t **rope, rl_error *err)
{
    return model_load(model, base_dir, m, rope, NULL, err);
}

/* A failure inside the model file named by key (preset, hf_config,
 * capture) is that key's, except an unknown layer_type, which is its own;
 * the file's own keys (config.json's) are not the model section's. */
static void file_key(rl_error *err, const char *key)
{
    if (err && strcmp(err->key, "layer_type"))
        rl_error_set_key(err, key);
}

static rl_status model_load(const json_t *model, const char *base_dir, exp_model *m,
                            json_t **rope, json_t **attn, rl_error *err)
{
    memset(m, 0, sizeof *m);
    *rope = NULL;
    const char *preset = json_string_value(json_object_get(model, "preset"));
    const char *hf = json_string_value(json_object_get(model, "hf_config"));
    const char *cap = json_string_value(json_object_get(model, "capture"));
    const char *lt = json_string_value(json_object_get(model, "layer_type"));
    if (cap && (preset || hf))
        return rl_fail_key(err, RL_ERR_ARG, "capture",
                           "capture takes the model from the capture's embedded config.json; "
                           "give capture or %s, not both", preset ? "preset" : "hf_config");
    if (lt && !preset && !hf && !cap)
        return rl_fail_key(err, RL_ERR_ARG, "layer_type",
                           "layer_type needs hf_config, preset or capture (a model with layer "
                           "types)");
    rl_status st = RL_OK;
    hfm_model hm;
    if (cap) {
        char path[1200];
        snprintf(path, sizeof path, "%s%s%s", cap[0] == '/' ? "" : base_dir,
                 cap[0] == '/' ? "" : "/", cap);
        if ((st = from_capture(path, lt, m, rope, attn, err))) {
            rl_error_prefix(err, "capture");
            file_key(err, "capture");
            return st;
        }
    }
    if (preset) {
        json_t *p;
        if ((st = run_preset_load(preset, &p, err))) {
            file_key(err, "preset");
            return st;
        }
        json_t *cfg = preset_as_hf(p);
        char name[160];
        snprintf(name, sizeof name, "preset %s", preset);
        st = hfm_from_json(cfg, name, &hm, err);
        if (!st)
            st = from_hfm(&hm, lt, "preset", m, rope, attn, err);
        get_u32(p, "train_len", &m->train_len);
        hfm_free(&hm);
        json_decref(cfg);
        json_decref(p);
        if (st) {
            file_key(err, "preset");
            return st;
        }
    }
    if (hf) {
        char path[1200];
        snprintf(path, sizeof path, "%s%s%s", hf[0] == '/' ? "" : base_dir, hf[0] == '/' ? "" : "/",
                 hf);
        st = hfm_load(path, &hm, err);
        if (!st)
            st = from_hfm(&hm, lt, "hf_config", m, rope, attn, err);
        hfm_free(&hm);
        if (st) {
            rl_error_prefix(err, "hf_config");
            file_key(err, "hf_config");
            json_decref(*rope);
            *rope = NULL;
            return st;
        }
    }
    /* The batch's own keys override what the model file says. */
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
            return rl_fail_key(err, RL_ERR_ARG, missing,
                               "%s is not given (set it, or use preset or hf_config)", missing);
        return RL_OK;
    }
    case 1:
        if (m->head_dim % 2)
            return rl_fail_key(err, RL_ERR_ARG, "head_dim",
                               "head_dim %u must be even (RoPE rotates pairs)", m->head_dim);
        return RL_OK;
    case 2:
        if (m->heads && m->kv_heads && m->heads % m->kv_heads)
            return rl_fail_key(err, RL_ERR_ARG, "kv_heads", "kv_heads %u does not divide heads %u",
                               m->kv_heads, m->heads);
        return RL_OK;
    default:
        return RL_OK;
    }
}
