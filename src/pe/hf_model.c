/* hf_model.c — the one config.json reader (hf_model.h). Each family's
 * reader follows that family's transformers configuration_*.py and
 * modeling_*.py (sources per family in docs/rope.md); keys are taken with
 * take(), so that a position- or attention-relevant key no reader took is
 * refused instead of dropped (watched[]). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_fs.h"
#include "core/rl_util.h"
#include "pe/hf_model.h"
#include "pe/rope.h"

/* Keys that change positions or attention scores: present and not taken
 * by the family's reader means ropelab would compute something else. */
static const char *const watched[] = {
    "rope_theta", "rope_scaling", "rope_parameters", "partial_rotary_factor", "rotary_pct",
    "rotary_emb_base", "rotary_dim", "rotary_emb_fraction", "rope_local_base_freq", "head_dim",
    "original_max_position_embeddings", "no_rope_layers", "no_rope_layer_interval",
    "attn_temperature_tuning", "floor_scale", "attn_scale", "attention_chunk_size", "alibi",
    "use_alibi", "position_embedding_type", "qk_rope_head_dim", "qk_nope_head_dim",
    "rope_interleave", "sliding_window", "use_sliding_window", "max_window_layers",
    "sliding_window_pattern", "layer_types", "query_pre_attn_scalar", "attn_logit_softcapping",
    "scale_attn_by_inverse_layer_idx", "attention_multiplier", "relative_attention_num_buckets",
    "relative_attention_max_distance", "attn_config", "mrope_section", "use_mrope",
    "rotary_base", "rope_type", "pos_emb", "use_rope",
};

typedef struct rd {
    const json_t *cfg;  /* the language model's config (text_config when nested) */
    const char *where;  /* "" or "text_config." for messages */
    json_t *used;       /* keys taken */
    hfm_model *m;
    rl_error *err;
} rd;

static const json_t *take(rd *r, const char *k)
{
    const json_t *v = json_object_get(r->cfg, k);
    if (v)
        json_object_set_new(r->used, k, json_true());
    return json_is_null(v) ? NULL : v;
}

static rl_status bad(rd *r, const char *key, const char *fmt, const char *detail)
{
    return rl_fail(r->err, RL_ERR_ARG, "%s: %s%s %s%s", r->m->path, r->where, key, fmt,
                   detail ? detail : "");
}

/* An integer (HF writes some as 4096.0), min..2^30; *out untouched when absent. */
static rl_status get_u(rd *r, const char *k, uint32_t min, uint32_t *out)
{
    const json_t *v = take(r, k);
    if (!v)
        return RL_OK;
    double x = json_is_number(v) ? json_number_value(v) : NAN;
    if (!(x == floor(x)) || x < min || x > (1 << 30)) {
        char d[64];
        snprintf(d, sizeof d, "(at least %u)", min);
        return bad(r, k, "must be an integer ", d);
    }
    *out = (uint32_t)x;
    return RL_OK;
}

static rl_status get_num(rd *r, const char *k, double *out, int *given)
{
    const json_t *v = take(r, k);
    if (given)
        *given = v != NULL;
    if (!v)
        return RL_OK;
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return bad(r, k, "must be a finite number", NULL);
    *out = json_number_value(v);
    return RL_OK;
}

static int get_bool(rd *r, const char *k, int def)
{
    const json_t *v = take(r, k);
    return v ? json_is_true(v) || (json_is_number(v) && json_number_value(v) != 0) : def;
}

static void attr(rd *r, const char *k)
{
    const json_t *v = take(r, k);
    if (v)
        json_object_set(r->m->attrs, k, (json_t *)v);
}

static hfm_layer_type *add_type(hfm_model *m, const char *name)
{
    for (uint32_t i = 0; i < m->n_types; i++)
        if (!strcmp(m->types[i].name, name))
            return &m->types[i];
    if (m->n_types == HFM_MAX_TYPES)
        return NULL;
    hfm_layer_type *t = &m->types[m->n_types++];
    snprintf(t->name, sizeof t->name, "%s", name);
    return t;
}

/* Every layer of one type. */
static void uniform_layers(hfm_model *m, const char *name)
{
    for (uint32_t i = 0; i < m->n_layers; i++)
        json_array_append_new(m->layers, json_string(name));
}

/* Forward: RoPE's shared finishing (layout, lengths). */
static void rope_finish(hfm_model *m, json_t *enc, int interleaved, uint32_t orig_top);

/* Every layer full attention with encoding enc (taken); RoPE finished. */
static hfm_layer_type *one_type(hfm_model *m, json_t *enc, int interleaved)
{
    hfm_layer_type *t = add_type(m, "full_attention");
    t->count = m->n_layers;
    t->encoding = enc;
    if (!strcmp(json_string_value(json_object_get(enc, "type")), "rope"))
        rope_finish(m, enc, interleaved, 0);
    uniform_layers(m, "full_attention");
    return t;
}

/* ---- shape ------------------------------------------------------------- */

/* heads / kv heads / hidden size / layers / head_dim under the family's names. */
static rl_status read_shape(rd *r, const char *heads_k, const char *kv_k, const char *hidden_k,
                            const char *layers_k)
{
    hfm_model *m = r->m;
    rl_status st;
    if ((st = get_u(r, heads_k, 1, &m->heads)) || (st = get_u(r, hidden_k, 1, &m->hidden_size)) ||
        (st = get_u(r, layers_k, 1, &m->n_layers)))
        return st;
    if (!m->heads)
        return bad(r, heads_k, "is required (the number of attention heads)", NULL);
    if (kv_k && (st = get_u(r, kv_k, 1, &m->kv_heads)))
        return st;
    if (!m->kv_heads)
        m->kv_heads = m->heads;
    if (m->heads % m->kv_heads)
        return bad(r, kv_k ? kv_k : heads_k, "does not divide the number of attention heads", NULL);
    if ((st = get_u(r, "head_dim", 1, &m->head_dim)))
        return st;
    if (!m->head_dim) {
        if (!m->hidden_size)
            return bad(r, hidden_k, "is required (head_dim = hidden size / heads)", NULL);
        m->head_dim = m->hidden_size / m->heads; /* HF: hidden_size // num_attention_heads */
    }
    if (!m->n_layers)
        m->n_layers = 1;
    return RL_OK;
}

/* ---- RoPE -------------------------------------------------------------- */

/* Keys of an HF rope_scaling / rope_parameters dict ropelab represents. */
static int scaling_key(const char *k)
{
    size_t n;
    const rl_param *ps = rope_param_table(&n);
    return rl_param_find(ps, n, k) >= 0 && strcmp(k, "layout") &&
           strcmp(k, "precision") && strcmp(k, "rotary_dim") && strcmp(k, "rotary_part") && strcmp(k, "seq_len") &&
           strcmp(k, "max_position_embeddings") && strcmp(k, "dynamic_mode") &&
           strcmp(k, "prompt_len") && strcmp(k, "semantics") && strcmp(k, "mrope_positions") &&
           strcmp(k, "mrope_positions_path") && strcmp(k, "mrope_image_grid") &&
           strcmp(k, "mrope_text_before") && strcmp(k, "spatial_merge_size");
}

/* One rope dict into enc (registry keys), validating every value with
 * rope's own setter; "su" (Phi-3) is longrope, "dynamic-yarn" (jquesnelle/yarn)
 * dynamic_yarn, "mrope" (Qwen2-VL) is
 * default with mrope_section: captured into *mrope (the key's name). */
static rl_status read_rope_dict(rd *r, const char *name, const json_t *sc, json_t *enc,
                                const char **mrope)
{
    if (!json_is_object(sc))
        return bad(r, name, "must be an object or null", NULL);
    const char *key;
    json_t *v;
    const json_t *rt = json_object_get(sc, "rope_type");
    if (!rt)
        rt = json_object_get(sc, "type");
    json_object_foreach((json_t *)sc, key, v) {
        char full[160];
        snprintf(full, sizeof full, "%s.%s", name, key);
        /* mRoPE (Qwen2-VL, Qwen3-VL): mrope_section, with mrope_interleaved
         * beside it, are the encoding's keys; mrope_interleaved alone
         * (no sections: HF never reads it) is captured, not applied. */
        if (!strcmp(key, "mrope_interleaved") && !json_object_get(sc, "mrope_section")) {
            json_object_set(r->m->attrs, key, v);
            continue;
        }
        if (!strcmp(key, "mrope_section"))
            *mrope = !strncmp(name, "rope_parameters", 15) ? "rope_parameters.mrope_section"
                                                           : "rope_scaling.mrope_section";
        if (!strcmp(key, "type") && json_object_get(sc, "rope_type"))
            continue; /* both given: rope_type wins (HF) */
        /* HunYuan's configs carry YaRN keys beside alpha; vLLM's get_rope
         * reads alpha alone there (DynamicNTKAlphaRotaryEmbedding), as does
         * llama.cpp's conversion (alpha folded into the base): captured, shown
         * by `ropelab model`, not applied. */
        const json_t *alpha = json_object_get(sc, "alpha");
        if (alpha && !json_is_null(alpha) &&
            (!strcmp(key, "beta_fast") || !strcmp(key, "beta_slow") || !strcmp(key, "mscale") ||
             !strcmp(key, "mscale_all_dim"))) {
            char cap[200];
            snprintf(cap, sizeof cap, "%s (unread beside alpha, as vLLM)", full);
            json_object_set(r->m->attrs, cap, v);
            continue;
        }
        if (!scaling_key(key))
            return bad(r, full, "is not a RoPE key ropelab represents", NULL);
        json_t *val = v;
        if ((!strcmp(key, "type") || !strcmp(key, "rope_type")) && json_is_string(v)) {
            const char *s = json_string_value(v);
            if (!strcmp(s, "su"))
                val = json_string("longrope"); /* Phi3Config: su is longrope */
            else if (!strcmp(s, "dynamic-yarn"))
                val = json_string("dynamic_yarn"); /* jquesnelle/yarn's configs */
            else if (!strcmp(s, "mrope")) {
                val = json_string("default"); /* Qwen2-VL: mrope is default + sections */
                *mrope = "rope_scaling.type mrope";
            } else
                json_incref(val);
        } else
            json_incref(val);
        rope_desc scratch = {0};
        rl_error e = {0};
        const char *k = !strcmp(key, "type") ? "rope_type" : key;
        if (rope_desc_set_json(&scratch, k, val, &e)) {
            json_decref(val);
            return rl_fail(r->err, RL_ERR_ARG, "%s: %s%s: %s", r->m->path, r->where, name, e.msg);
        }
        json_object_set_new(enc, k, val);
        /* alpha (HunYuan's dynamic) and mixed_b (ntk) are vLLM's keys, read
         * by vLLM's get_rope only: such a config imports with vLLM's reading,
         * flagged as such (docs/rope.md "vLLM's readings"). */
        if (!strcmp(k, "alpha") || !strcmp(k, "mixed_b"))
            json_object_set_new(enc, "semantics", json_string("vllm"));
    }
    (void)rt;
    return RL_OK;
}

static json_t *rope_enc(double theta)
{
    return json_pack("{s:s,s:s,s:f}", "type", "rope", "rope_type", "default", "rope_theta", theta);
}

/* The rope dict of a Llama-style config: rope_parameters (transformers 5)
 * or rope_scaling (4.x); both present must agree. *per_type receives a
 * per-layer-type dict (borrowed), else the one dict is applied to enc. */
static rl_status read_rope_scaling(rd *r, json_t *enc, const json_t **per_type, const char **mrope)
{
    const json_t *rp = take(r, "rope_parameters"), *rs = take(r, "rope_scaling");
    *per_type = NULL;
    if (rp && rs && !json_equal((json_t *)rp, (json_t *)rs))
        return bad(r, "rope_parameters", "and rope_scaling are both given and differ; "
                   "transformers 5 reads rope_parameters, 4.x rope_scaling", NULL);
    const json_t *sc = rp ? rp : rs;
    const char *name = rp ? "rope_parameters" : "rope_scaling";
    if (!sc)
        return RL_OK;
    if (json_is_object(sc) && json_object_size(sc) > 0 &&
        json_is_object(json_object_iter_value(json_object_iter((json_t *)sc)))) {
        *per_type = sc;
        return RL_OK;
    }
    return read_rope_dict(r, name, sc, enc, mrope);
}

/* Common RoPE keys: base, partial rotation, max/original lengths. */
static rl_status read_rope_common(rd *r, json_t *enc, const char *theta_key, const char *prf_key)
{
    rl_status st;
    double theta = ROPE_DEFAULT_THETA, prf = 0;
    int has_prf = 0;
    const json_t *v = take(r, theta_key);
    if (v) {
        rope_desc s = {0};
        rl_error e = {0};
        if (rope_desc_set_json(&s, "rope_theta", v, &e))
            return rl_fail(r->err, RL_ERR_ARG, "%s: %s%s: %s", r->m->path, r->where, theta_key, e.msg);
        theta = json_number_value(v);
    }
    json_object_set_new(enc, "rope_theta", json_real(theta));
    if (prf_key && (st = get_num(r, prf_key, &prf, &has_prf)))
        return st;
    if (has_prf) {
        if (!(prf > 0 && prf <= 1))
            return bad(r, prf_key, "must be in (0, 1]", NULL);
        json_object_set_new(enc, "partial_rotary_factor", json_real(prf));
    }
    return RL_OK;
}

/* One RoPE for every layer (families without per-layer dicts or mrope):
 * base under theta_key, rope_scaling / rope_parameters; *enc (new) on success. */
static rl_status single_rope(rd *r, const char *family, const char *theta_key, json_t **enc)
{
    const json_t *per_type = NULL;
    const char *mrope = NULL;
    *enc = rope_enc(ROPE_DEFAULT_THETA);
    rl_status st = read_rope_common(r, *enc, theta_key, NULL);
    if (!st)
        st = read_rope_scaling(r, *enc, &per_type, &mrope);
    if (!st && (per_type || mrope)) {
        char what[96];
        snprintf(what, sizeof what, "per-layer or mrope settings are not %s's", family);
        st = bad(r, per_type ? "rope_parameters" : "rope_scaling", what, NULL);
    }
    if (st) {
        json_decref(*enc);
        *enc = NULL;
    }
    return st;
}

/* Final RoPE values every rope layer type shares: layout, lengths. */
static void rope_finish(hfm_model *m, json_t *enc, int interleaved, uint32_t orig_top)
{
    json_object_set_new(enc, "layout", json_string(rope_layout_name(interleaved ? RL_ROPE_LAYOUT_INTERLEAVED : RL_ROPE_LAYOUT_HALF)));
    if (m->max_position_embeddings)
        json_object_set_new(enc, "max_position_embeddings", json_integer(m->max_position_embeddings));
    const char *rt = json_string_value(json_object_get(enc, "rope_type"));
    /* Phi-3: the top-level original_max_position_embeddings is longrope's L_orig. */
    if (orig_top && !json_object_get(enc, "original_max_position_embeddings") && rt &&
        (!strcmp(rt, "longrope") || !strcmp(rt, "yarn")))
        json_object_set_new(enc, "original_max_position_embeddings", json_integer(orig_top));
    uint32_t L = (uint32_t)json_integer_value(json_object_get(enc, "original_max_position_embeddings"));
    if (L && (!m->train_len || L < m->train_len))
        m->train_len = L;
}

/* Llama-style families: Llama 2/3/3.x, Mistral, Mixtral, Qwen2/3, Phi-3,
 * StableLM, Phi-2, Gemma, gpt-oss and configs without model_type. */
static rl_status fam_llama(rd *r)
{
    hfm_model *m = r->m;
    rl_status st;
    if ((st = read_shape(r, "num_attention_heads", "num_key_value_heads", "hidden_size",
                         "num_hidden_layers")))
        return st;
    json_t *enc = rope_enc(ROPE_DEFAULT_THETA);
    const json_t *per_type = NULL;
    const char *mrope = NULL;
    uint32_t orig = 0, window = 0;
    if ((st = read_rope_common(r, enc, "rope_theta", "partial_rotary_factor")) ||
        (st = read_rope_scaling(r, enc, &per_type, &mrope)) ||
        (st = get_u(r, "original_max_position_embeddings", 1, &orig)) ||
        (st = get_u(r, "sliding_window", 0, &window))) {
        json_decref(enc);
        return st;
    }
    if (orig)
        m->train_len = orig;
    /* Layer types: explicit layer_types, else the family's rule. */
    const json_t *lt = take(r, "layer_types");
    int use_sw = get_bool(r, "use_sliding_window", 1);
    uint32_t max_window_layers = 0, pattern = 0;
    if ((st = get_u(r, "max_window_layers", 0, &max_window_layers)) ||
        (st = get_u(r, "sliding_window_pattern", 1, &pattern))) {
        json_decref(enc);
        return st;
    }
    const char *mt = m->model_type;
    int qwen = !strncmp(mt, "qwen2", 5) || !strncmp(mt, "qwen3", 5);
    if (lt) {
        if (!json_is_array(lt) || json_array_size(lt) != m->n_layers) {
            json_decref(enc);
            return bad(r, "layer_types", "must list one type per layer (num_hidden_layers)", NULL);
        }
        json_decref(m->layers);
        m->layers = json_deep_copy(lt);
    } else {
        for (uint32_t i = 0; i < m->n_layers; i++) {
            int sliding;
            if (!strcmp(mt, "gemma2"))
                sliding = (i + 1) % 2 != 0; /* Gemma2: even layers slide */
            else if (!strncmp(mt, "gemma3", 6))
                sliding = (i + 1) % (pattern ? pattern : 6) != 0; /* Gemma3: 5 local, 1 global */
            else if (qwen)
                sliding = use_sw && window && i >= max_window_layers; /* Qwen2/3 */
            else
                sliding = window != 0; /* Mistral: every layer */
            json_array_append_new(m->layers, json_string(sliding ? "sliding_attention" : "full_attention"));
        }
    }
    if (qwen && !use_sw && window) {
        json_object_set_new(m->attrs, "sliding_window (unused: use_sliding_window false)",
                            json_integer(window));
        window = 0;
    }
    /* Gemma: queries scaled by query_pre_attn_scalar^-0.5, logits soft-capped. */
    double qpas = 0;
    int has_qpas = 0;
    if ((st = get_num(r, "query_pre_attn_scalar", &qpas, &has_qpas)) ||
        (st = get_num(r, "attn_logit_softcapping", &m->softcap, NULL))) {
        json_decref(enc);
        return st;
    }
    if (has_qpas) {
        if (!(qpas > 0)) {
            json_decref(enc);
            return bad(r, "query_pre_attn_scalar", "must be > 0", NULL);
        }
        m->logit_scale = 1.0 / sqrt(qpas);
    }
    /* Gemma 3: sliding layers rotate with rope_local_base_freq, unscaled. */
    double local = 0;
    int has_local = 0;
    if ((st = get_num(r, "rope_local_base_freq", &local, &has_local))) {
        json_decref(enc);
        return st;
    }
    if (has_local && !(local > 1)) {
        json_decref(enc);
        return bad(r, "rope_local_base_freq", "must be > 1", NULL);
    }
    if (!strcmp(mt, "gpt_oss"))
        json_object_set_new(m->attrs, "attention_sinks",
                            json_string("learned, one logit per head: weights, not in config.json; "
                                        "not applied (a batch gives attn_learned_sink: true and "
                                        "attn_sink_logit, one logit for every head)"));
    attr(r, "use_qk_norm");
    /* One layer type per distinct name. */
    size_t i;
    json_t *name;
    json_array_foreach(m->layers, i, name) {
        const char *n = json_string_value(name);
        hfm_layer_type *t = n ? add_type(m, n) : NULL;
        if (!t) {
            json_decref(enc);
            return bad(r, "layer_types", "holds a non-string or too many distinct types", NULL);
        }
        t->count++;
        if (t->encoding)
            continue;
        int sl = !strcmp(n, "sliding_attention");
        if (sl)
            t->window = window;
        json_t *e = json_deep_copy(enc);
        if (per_type) {
            const json_t *d = json_object_get(per_type, n);
            if (!d) {
                json_decref(e);
                json_decref(enc);
                return bad(r, "rope_parameters", "has no dict for layer type ", n);
            }
            char nm[96];
            snprintf(nm, sizeof nm, "rope_parameters.%s", n);
            if ((st = read_rope_dict(r, nm, d, e, &mrope))) {
                json_decref(e);
                json_decref(enc);
                return st;
            }
        } else if (sl && has_local) {
            json_decref(e);
            e = rope_enc(local);
            if (json_object_get(enc, "partial_rotary_factor"))
                json_object_set(e, "partial_rotary_factor", json_object_get(enc, "partial_rotary_factor"));
        }
        rope_finish(m, e, 0, orig);
        t->encoding = e;
        if (mrope && !json_object_get(e, "mrope_section"))
            snprintf(t->refuse, sizeof t->refuse,
                     "%s: %s%s: multimodal RoPE without mrope_section (the pairs per "
                     "time/height/width stream); refusing rather than planning plain RoPE",
                     m->path, r->where, mrope);
    }
    json_decref(enc);
    if (per_type) {
        const char *k;
        json_t *d;
        json_object_foreach((json_t *)per_type, k, d) {
            uint32_t j = 0;
            while (j < m->n_types && strcmp(m->types[j].name, k))
                j++;
            if (j == m->n_types)
                return bad(r, "rope_parameters", "has a dict for a layer type no layer has: ", k);
        }
    }
    attr(r, "initial_context_length");
    return RL_OK;
}

/* Llama 4 (text_config): RoPE layers use chunked attention, every
 * no_rope_layer_interval-th layer is NoPE with query temperature. Complex
 * (interleaved) rotation (modeling_llama4.py apply_rotary_emb). */
static rl_status fam_llama4(rd *r)
{
    hfm_model *m = r->m;
    rl_status st;
    if ((st = read_shape(r, "num_attention_heads", "num_key_value_heads", "hidden_size",
                         "num_hidden_layers")))
        return st;
    json_t *enc;
    uint32_t chunk = 0, interval = 4;
    if ((st = single_rope(r, "Llama 4", "rope_theta", &enc)))
        return st;
    if ((st = get_u(r, "attention_chunk_size", 0, &chunk)) ||
        (st = get_u(r, "no_rope_layer_interval", 1, &interval))) {
        json_decref(enc);
        return st;
    }
    const json_t *nrl = take(r, "no_rope_layers");
    if (nrl && (!json_is_array(nrl) ||
                (json_array_size(nrl) && json_array_size(nrl) != m->n_layers))) {
        json_decref(enc);
        return bad(r, "no_rope_layers", "must list 0/1 per layer (1: the layer uses RoPE)", NULL);
    }
    const json_t *lt = take(r, "layer_types"); /* newer configs: must agree */
    if (lt && (!json_is_array(lt) || json_array_size(lt) != m->n_layers)) {
        json_decref(enc);
        return bad(r, "layer_types", "must list one type per layer (num_hidden_layers)", NULL);
    }
    int temp = get_bool(r, "attn_temperature_tuning", 1);
    double floor_scale = 8192, attn_scale = 0.1;
    if ((st = get_num(r, "floor_scale", &floor_scale, NULL)) ||
        (st = get_num(r, "attn_scale", &attn_scale, NULL))) {
        json_decref(enc);
        return st;
    }
    /* the engine's limits (attn_temp_floor >= 1, attn_temp_scale in [0, 1000]) */
    if (temp && !(floor_scale >= 1 && floor_scale <= 1e9)) {
        json_decref(enc);
        return bad(r, "floor_scale", "must be in [1, 1e9] (the engine's attn_temp_floor)", NULL);
    }
    if (temp && !(attn_scale >= 0 && attn_scale <= 1e3)) {
        json_decref(enc);
        return bad(r, "attn_scale", "must be in [0, 1000] (the engine's attn_temp_scale)", NULL);
    }
    attr(r, "use_qk_norm");
    for (uint32_t i = 0; i < m->n_layers; i++) {
        /* HF default: [int((i + 1) % interval != 0) for i in range(n_layers)] */
        int use_rope = json_array_size(nrl) ? json_is_true(json_array_get(nrl, i)) ||
                                                  json_integer_value(json_array_get(nrl, i)) != 0
                                            : (i + 1) % interval != 0;
        const char *n = use_rope ? "chunked_attention" : "full_attention";
        const char *given = lt ? json_string_value(json_array_get(lt, i)) : n;
        if (!given || strcmp(given, n)) {
            json_decref(enc);
            return bad(r, "layer_types", "disagrees with no_rope_layers (chunked_attention layers "
                       "use RoPE, full_attention layers are NoPE)", NULL);
        }
        json_array_append_new(m->layers, json_string(n));
        hfm_layer_type *t = add_type(m, n);
        t->count++;
        if (t->encoding)
            continue;
        if (use_rope) {
            t->chunk = chunk;
            t->encoding = json_deep_copy(enc);
            rope_finish(m, t->encoding, 1, 0);
        } else {
            /* HF modeling_llama4.py, Llama4TextAttention.forward: when
             * attn_temperature_tuning and not use_rope, query_states *=
             * log(floor((cache_position + 1) / floor_scale) + 1) * attn_scale
             * + 1, with the full causal mask (chunked only for RoPE layers)
             * and no qk_norm (only with use_rope) */
            t->encoding = json_pack("{s:s}", "type", "nope");
            t->temp = temp;
            t->temp_scale = attn_scale;
            t->temp_floor = floor_scale;
        }
    }
    json_decref(enc);
    return RL_OK;
}

/* DeepSeek-V2/V3 (MLA): RoPE on the qk_rope_head_dim part, interleaved
 * (rope_interleave, default true); yarn's mscale_all_dim also scales the
 * softmax: scaling = qk_head_dim^-0.5 * mscale(factor, mscale_all_dim)^2.
 * The rotated part is the head's last qk_rope_head_dim dimensions:
 * modeling_deepseek_v3.py DeepseekV3Attention.forward splits q into
 * (q_pass, q_rot) = split([qk_nope_head_dim, qk_rope_head_dim]) and
 * rebuilds query_states = cat((q_pass, q_rot), dim=-1) (k likewise), so
 * rotary_part is last. */
static rl_status fam_deepseek(rd *r)
{
    hfm_model *m = r->m;
    rl_status st;
    uint32_t rope_d = 64, nope_d = 128, v_d = 128;
    if ((st = read_shape(r, "num_attention_heads", "num_key_value_heads", "hidden_size",
                         "num_hidden_layers")) ||
        (st = get_u(r, "qk_rope_head_dim", 2, &rope_d)) ||
        (st = get_u(r, "qk_nope_head_dim", 0, &nope_d)) || (st = get_u(r, "v_head_dim", 1, &v_d)))
        return st;
    m->head_dim = rope_d + nope_d;
    m->v_head_dim = v_d;
    m->logit_scale = 1.0 / sqrt((double)m->head_dim);
    int inter = get_bool(r, "rope_interleave", 1);
    json_t *enc;
    if ((st = single_rope(r, "DeepSeek", "rope_theta", &enc)))
        return st;
    json_object_set_new(enc, "rotary_dim", json_integer(rope_d));
    json_object_set_new(enc, "rotary_part", json_string("last"));
    double f = json_number_value(json_object_get(enc, "factor"));
    double msad = json_number_value(json_object_get(enc, "mscale_all_dim"));
    if (f > 1 && msad != 0) {
        double ms = 0.1 * msad * log(f) + 1.0;
        m->logit_scale *= ms * ms;
    }
    attr(r, "kv_lora_rank");
    attr(r, "q_lora_rank");
    json_object_set_new(m->attrs, "qk_nope_head_dim", json_integer(nope_d));
    json_object_set_new(m->attrs, "qk_rope_head_dim", json_integer(rope_d));
    one_type(m, enc, inter);
    return RL_OK;
}

/* GPT-NeoX / Pythia: rotary_pct of head_size, base rotary_emb_base, half layout. */
static rl_status fam_neox(rd *r)
{
    hfm_model *m = r->m;
    rl_status st;
    if ((st = read_shape(r, "num_attention_heads", NULL, "hidden_size", "num_hidden_layers")))
        return st;
    json_t *enc;
    double pct = 0.25;
    int given = 0;
    /* transformers 5 renames them; either name, not both */
    const char *tk = json_object_get(r->cfg, "rotary_emb_base") ? "rotary_emb_base" : "rope_theta";
    const char *pk = json_object_get(r->cfg, "rotary_pct") ? "rotary_pct" : "partial_rotary_factor";
    if ((st = single_rope(r, "GPT-NeoX", tk, &enc)))
        return st;
    if ((st = get_num(r, pk, &pct, &given)) || (!(pct > 0 && pct <= 1) &&
                                                (st = bad(r, pk, "must be in (0, 1]", NULL)))) {
        json_decref(enc);
        return st;
    }
    /* HF: rotary_ndims = int(head_size * rotary_pct) */
    json_object_set_new(enc, "partial_rotary_factor", json_real(pct));
    one_type(m, enc, 0);
    return RL_OK;
}

/* GPT-J: n_embd / n_head, rotary_dim (None: the whole head), rotate_every_two. */
static rl_status fam_gptj(rd *r)
{
    hfm_model *m = r->m;
    rl_status st;
    uint32_t rot = 0;
    if ((st = read_shape(r, "n_head", NULL, "n_embd", "n_layer")) ||
        (st = get_u(r, "rotary_dim", 2, &rot)) ||
        (st = get_u(r, "n_positions", 1, &m->max_position_embeddings)))
        return st;
    json_t *enc = rope_enc(ROPE_DEFAULT_THETA);
    if (rot)
        json_object_set_new(enc, "rotary_dim", json_integer(rot));
    one_type(m, enc, 1);
    return RL_OK;
}

/* Falcon: RoPE (theta 10000) unless alibi; multi_query gives one kv head,
 * new_decoder_architecture num_kv_heads. */
static rl_status fam_falcon(rd *r)
{
    hfm_model *m = r->m;
    rl_status st;
    const char *hk = json_object_get(r->cfg, "n_head") ? "n_head" : "num_attention_heads";
    const char *lk = json_object_get(r->cfg, "n_layer") ? "n_layer" : "num_hidden_layers";
    int newarch = get_bool(r, "new_decoder_architecture", 0);
    int mq = get_bool(r, "multi_query", 1);
    uint32_t kv = 0;
    if ((st = read_shape(r, hk, NULL, "hidden_size", lk)) || (st = get_u(r, "num_kv_heads", 1, &kv)))
        return st;
    m->kv_heads = newarch ? (kv ? kv : m->heads) : mq ? 1 : m->heads;
    if (m->heads % m->kv_heads)
        return bad(r, "num_kv_heads", "does not divide the number of attention heads", NULL);
    if (!m->max_position_embeddings)
        m->max_position_embeddings = 2048; /* FalconConfig default */
    json_object_set_new(m->attrs, "multi_query", json_boolean(mq));
    json_object_set_new(m->attrs, "new_decoder_architecture", json_boolean(newarch));
    int alibi = get_bool(r, "alibi", 0);
    json_object_set_new(m->attrs, "alibi", json_boolean(alibi));
    if (alibi) {
        one_type(m, json_pack("{s:s,s:f}", "type", "alibi", "max_bias", 8.0), 0);
        return RL_OK;
    }
    json_t *enc;
    if ((st = single_rope(r, "Falcon", "rope_theta", &enc)))
        return st;
    one_type(m, enc, 0);
    return RL_OK;
}

/* Bloom: ALiBi, slopes of Press et al. (build_alibi_tensor). */
static rl_status fam_bloom(rd *r)
{
    hfm_model *m = r->m;
    rl_status st;
    const char *hk = json_object_get(r->cfg, "n_embed") ? "n_embed" : "hidden_size";
    if ((st = read_shape(r, "n_head", NULL, hk, "n_layer")))
        return st;
    one_type(m, json_pack("{s:s,s:f}", "type", "alibi", "max_bias", 8.0), 0);
    return RL_OK;
}

/* MPT: attn_config.alibi (alibi_bias_max), else learned positions. */
static rl_status fam_mpt(rd *r)
{
    hfm_model *m = r->m;
    rl_status st;
    if ((st = read_shape(r, "n_heads", NULL, "d_model", "n_layers")) ||
        (st = get_u(r, "max_seq_len", 1, &m->max_position_embeddings)))
        return st;
    const json_t *ac = take(r, "attn_config");
    int alibi = 0;
    double bias_max = 8;
    if (ac) {
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)ac, key, v) {
            if (!strcmp(key, "alibi"))
                alibi = json_is_true(v);
            else if (!strcmp(key, "alibi_bias_max") && json_is_number(v))
                bias_max = json_number_value(v);
            else if (!strcmp(key, "kv_n_heads") && json_is_integer(v) && json_integer_value(v) > 0)
                m->kv_heads = (uint32_t)json_integer_value(v);
            else if (!strcmp(key, "softmax_scale") && json_is_number(v))
                m->logit_scale = json_number_value(v);
            else if ((!strcmp(key, "rope") && json_is_true(v)) || !strncmp(key, "rope_", 5))
                return bad(r, "attn_config.", key, " (MPT RoPE) is not read by ropelab");
            else
                json_object_set(m->attrs, key, v);
        }
    }
    if (m->heads % m->kv_heads)
        return bad(r, "attn_config.kv_n_heads", "does not divide n_heads", NULL);
    if (!(bias_max > 0))
        return bad(r, "attn_config.alibi_bias_max", "must be > 0", NULL);
    if (alibi)
        one_type(m, json_pack("{s:s,s:f}", "type", "alibi", "max_bias", bias_max), 0);
    else {
        hfm_layer_type *t = one_type(m, json_pack("{s:s,s:i}", "type", "learned", "max_positions",
                                                  (int)m->max_position_embeddings), 0);
        snprintf(t->refuse, sizeof t->refuse,
                 "%s: attn_config.alibi false: MPT's learned position table (wpe) is checkpoint "
                 "weights, not config.json; give an encoding {type: learned, path: wpe.npy}", m->path);
    }
    return RL_OK;
}

/* GPT-2: learned absolute positions, n_positions rows (weights, not config). */
static rl_status fam_gpt2(rd *r)
{
    hfm_model *m = r->m;
    rl_status st;
    if ((st = read_shape(r, "n_head", NULL, "n_embd", "n_layer")) ||
        (st = get_u(r, "n_positions", 1, &m->max_position_embeddings)))
        return st;
    if (!m->max_position_embeddings)
        m->max_position_embeddings = 1024;
    if (get_bool(r, "scale_attn_by_inverse_layer_idx", 0))
        return bad(r, "scale_attn_by_inverse_layer_idx", "true (logits / (layer + 1)) is not "
                   "modelled by ropelab", NULL);
    if (!get_bool(r, "scale_attn_weights", 1))
        m->logit_scale = 1.0;
    hfm_layer_type *t = one_type(m, json_pack("{s:s,s:i}", "type", "learned", "max_positions",
                                              (int)m->max_position_embeddings), 0);
    snprintf(t->refuse, sizeof t->refuse,
             "%s: GPT-2's learned position table (wpe, %u rows) is checkpoint weights, not "
             "config.json; give an encoding {type: learned, path: wpe.npy}", m->path,
             m->max_position_embeddings);
    return RL_OK;
}

/* T5: bucketed relative bias, shared by layers, no 1/sqrt(d) scaling. */
static rl_status fam_t5(rd *r)
{
    hfm_model *m = r->m;
    rl_status st;
    uint32_t nb = 32, md = 128, dl = 0;
    if ((st = read_shape(r, "num_heads", NULL, "d_model", "num_layers")) ||
        (st = get_u(r, "d_kv", 1, &m->head_dim)) ||
        (st = get_u(r, "relative_attention_num_buckets", 2, &nb)) ||
        (st = get_u(r, "relative_attention_max_distance", 1, &md)) ||
        (st = get_u(r, "num_decoder_layers", 1, &dl)) ||
        (st = get_u(r, "n_positions", 1, &m->max_position_embeddings)))
        return st;
    m->logit_scale = 1.0; /* T5Attention: no scaling (folded into the weights) */
    hfm_layer_type *e = add_type(m, "encoder"), *d = add_type(m, "decoder");
    e->count = m->n_layers;
    d->count = dl ? dl : m->n_layers;
    e->encoding = json_pack("{s:s,s:b,s:i,s:i}", "type", "t5", "bidirectional", 1, "num_buckets",
                            (int)nb, "max_distance", (int)md);
    d->encoding = json_pack("{s:s,s:b,s:i,s:i}", "type", "t5", "bidirectional", 0, "num_buckets",
                            (int)nb, "max_distance", (int)md);
    uniform_layers(m, "encoder");
    for (uint32_t i = 0; i < d->count; i++)
        json_array_append_new(m->layers, json_string("decoder"));
    for (hfm_layer_type *t = e; t <= d; t++)
        snprintf(t->refuse, sizeof t->refuse,
                 "%s: T5's relative bias table [num_buckets][heads] is checkpoint weights, not "
                 "config.json; give an encoding {type: t5, path: table.npy, num_buckets: %u, "
                 "max_distance: %u}", m->path, nb, md);
    return RL_OK;
}

static const struct family {
    const char *model_type;
    rl_status (*read)(rd *r);
} families[] = {
    {"", fam_llama}, {"llama", fam_llama}, {"mistral", fam_llama}, {"mixtral", fam_llama},
    {"qwen2", fam_llama}, {"qwen2_moe", fam_llama}, {"qwen3", fam_llama}, {"qwen3_moe", fam_llama},
    {"qwen2_vl", fam_llama}, {"qwen2_5_vl", fam_llama}, {"qwen3_vl", fam_llama},
    {"qwen2_vl_text", fam_llama}, {"qwen3_vl_text", fam_llama}, {"phi3", fam_llama},
    {"phimoe", fam_llama}, {"phi", fam_llama}, {"stablelm", fam_llama}, {"gemma", fam_llama},
    {"gemma2", fam_llama}, {"gemma3", fam_llama}, {"gemma3_text", fam_llama},
    {"gpt_oss", fam_llama}, {"llama4", fam_llama4}, {"llama4_text", fam_llama4},
    {"deepseek_v2", fam_deepseek}, {"deepseek_v3", fam_deepseek}, {"gpt_neox", fam_neox},
    {"gptj", fam_gptj}, {"falcon", fam_falcon}, {"RefinedWeb", fam_falcon},
    {"RefinedWebModel", fam_falcon}, {"bloom", fam_bloom}, {"mpt", fam_mpt}, {"gpt2", fam_gpt2},
    {"t5", fam_t5},
};

static const char *family_list(void)
{
    return "llama, llama4, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, qwen2_vl, "
           "qwen2_5_vl, qwen3_vl, phi3, phimoe, phi, stablelm, gemma, gemma2, gemma3, gpt_oss, "
           "deepseek_v2, deepseek_v3, gpt_neox, gptj, falcon, bloom, mpt, gpt2, t5";
}

rl_status hfm_rope_desc(const hfm_model *m, const hfm_layer_type *t, rope_desc *d, rl_error *err)
{
    memset(d, 0, sizeof *d);
    const char *type = json_string_value(json_object_get(t->encoding, "type"));
    if (strcmp(type, "rope"))
        return rl_fail(err, RL_ERR_ARG, "%s: layer type %s uses encoding %s, not RoPE", m->path,
                       t->name, type);
    d->head_dim = m->head_dim;
    const char *key;
    json_t *v;
    json_object_foreach(t->encoding, key, v)
        if (strcmp(key, "type")) {
            rl_status st = rope_desc_set_json(d, key, v, err);
            if (st)
                return st;
        }
    return RL_OK;
}

/* Checks each RoPE layer type's parameters now, so errors name the file. */
static rl_status check_types(hfm_model *m, rl_error *err)
{
    for (uint32_t i = 0; i < m->n_types; i++) {
        hfm_layer_type *t = &m->types[i];
        if (t->refuse[0] || strcmp(json_string_value(json_object_get(t->encoding, "type")), "rope"))
            continue;
        rope_desc d;
        rope_freqs *f = malloc(sizeof *f);
        if (!f)
            return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
        rl_status st = hfm_rope_desc(m, t, &d, err);
        if (!st)
            st = rope_freqs_compute(&d, f, err);
        free(f);
        if (st) {
            rl_error_prefix(err, "%s: layer type %s", m->path, t->name);
            return st;
        }
    }
    return RL_OK;
}

rl_status hfm_load(const char *path, hfm_model *m, rl_error *err)
{
    json_error_t je;
    FILE *fp = rl_fs_open_input_max(path, RL_FS_MAX_CONFIG_JSON, err); /* never blocks */
    if (!fp) {
        memset(m, 0, sizeof *m);
        return err ? err->status : RL_ERR_IO;
    }
    json_t *root = json_loadf(fp, 0, &je);
    fclose(fp);
    if (!root) {
        memset(m, 0, sizeof *m);
        return rl_fail(err, RL_ERR_PARSE, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    }
    rl_status st = hfm_from_json(root, path, m, err);
    json_decref(root);
    return st;
}

rl_status hfm_from_json(const json_t *root, const char *path, hfm_model *m, rl_error *err)
{
    memset(m, 0, sizeof *m);
    snprintf(m->path, sizeof m->path, "%s", path);
    m->layers = json_array();
    m->attrs = json_object();
    if (!json_is_object(root))
        return rl_fail(err, RL_ERR_PARSE, "%s: an HF config must be a JSON object", path);
    rd r = {root, "", json_object(), m, err};
    /* Multimodal configs (Gemma 3, Llama 4, Qwen3-VL) keep the language model
     * under text_config; Qwen2-VL keeps it at the top. */
    const json_t *mt = json_object_get(root, "model_type");
    const json_t *tc = json_object_get(root, "text_config");
    if (tc && !json_is_object(tc) && !json_is_null(tc)) {
        json_decref(r.used);
        return rl_fail(err, RL_ERR_ARG, "%s: text_config must be an object (the language "
                       "model's config), got %s", path,
                       json_is_array(tc) ? "an array" : json_is_string(tc) ? "a string"
                                                                           : "a scalar");
    }
    if (json_is_object(tc) && !json_object_get(root, "num_attention_heads") &&
        !json_object_get(root, "hidden_size")) {
        r.cfg = tc;
        r.where = "text_config.";
        if (json_is_string(json_object_get(tc, "model_type")))
            mt = json_object_get(tc, "model_type");
    }
    if (mt && !json_is_string(mt)) {
        json_decref(r.used);
        return rl_fail(err, RL_ERR_ARG, "%s: model_type must be a string", path);
    }
    snprintf(m->model_type, sizeof m->model_type, "%s", mt ? json_string_value(mt) : "");
    const struct family *fam = NULL;
    for (size_t i = 0; i < RL_ARRAY_LEN(families); i++)
        if (!strcmp(families[i].model_type, m->model_type))
            fam = &families[i];
    rl_status st;
    if (!fam)
        st = rl_fail(err, RL_ERR_ARG, "%s: model_type '%s' is not a family ropelab imports "
                     "(known: %s)", path, m->model_type, family_list());
    else
        st = get_u(&r, "max_position_embeddings", 1, &m->max_position_embeddings);
    if (!st)
        st = fam->read(&r);
    if (!st && !m->logit_scale)
        m->logit_scale = 1.0 / sqrt((double)m->head_dim);
    if (!st && !m->train_len)
        m->train_len = m->max_position_embeddings;
    for (size_t i = 0; !st && i < RL_ARRAY_LEN(watched); i++)
        if (json_object_get(r.cfg, watched[i]) && !json_object_get(r.used, watched[i]))
            st = rl_fail(err, RL_ERR_ARG, "%s: %s%s is not read for model_type '%s'; ropelab "
                         "refuses rather than ignore it", path, r.where, watched[i],
                         m->model_type[0] ? m->model_type : "(none: Llama-style)");
    if (!st)
        st = check_types(m, err);
    json_decref(r.used);
    return st;
}

void hfm_free(hfm_model *m)
{
    for (uint32_t i = 0; i < m->n_types; i++)
        json_decref(m->types[i].encoding);
    json_decref(m->layers);
    json_decref(m->attrs);
    memset(m, 0, sizeof *m);
}

rl_status hfm_select(const hfm_model *m, const char *name, const hfm_layer_type **out,
                     int *defaulted, rl_error *err)
{
    *out = NULL;
    if (defaulted)
        *defaulted = name == NULL;
    if (!name) {
        name = m->n_types ? m->types[0].name : "";
        for (uint32_t i = 0; i < m->n_types; i++)
            if (!strcmp(m->types[i].name, "full_attention"))
                name = "full_attention";
    }
    for (uint32_t i = 0; i < m->n_types; i++)
        if (!strcmp(m->types[i].name, name)) {
            if (m->types[i].refuse[0])
                return rl_fail(err, RL_ERR_ARG, "%s", m->types[i].refuse);
            *out = &m->types[i];
            return RL_OK;
        }
    char list[160] = "";
    for (uint32_t i = 0; i < m->n_types; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                 m->types[i].name);
    return rl_fail_key(err, RL_ERR_ARG, "layer_type", "%s: no layer type '%s' (the model has: %s)",
                       m->path, name, list);
}

json_t *hfm_to_json(const hfm_model *m)
{
    json_t *types = json_array();
    for (uint32_t i = 0; i < m->n_types; i++) {
        const hfm_layer_type *t = &m->types[i];
        json_array_append_new(types, json_pack("{s:s,s:i,s:i,s:i,s:b,s:f,s:f,s:O,s:s?}", "name",
                                               t->name, "count", (int)t->count, "window",
                                               (int)t->window, "chunk", (int)t->chunk,
                                               "temperature", t->temp, "temp_scale",
                                               t->temp_scale, "temp_floor", t->temp_floor,
                                               "encoding", t->encoding, "refused",
                                               t->refuse[0] ? t->refuse : NULL));
    }
    return json_pack("{s:s,s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:f,s:f,s:o,s:O,s:O}", "path",
                     m->path, "model_type", m->model_type, "heads", (int)m->heads, "kv_heads",
                     (int)m->kv_heads, "head_dim", (int)m->head_dim, "v_head_dim",
                     (int)(m->v_head_dim ? m->v_head_dim : m->head_dim), "hidden_size",
                     (int)m->hidden_size, "layers", (int)m->n_layers, "max_position_embeddings",
                     (int)m->max_position_embeddings, "train_len", (int)m->train_len,
                     "logit_scale", m->logit_scale, "attn_logit_softcapping", m->softcap,
                     "layer_types", types, "layers_by_index", m->layers, "attributes", m->attrs);
}
