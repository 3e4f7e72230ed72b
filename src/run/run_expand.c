/* run_expand.c — experiment entries expanded over their sweeps into the
 * plan's resolved runs, each checked by its kind and named by the hash of
 * its resolved parameters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"
#include "pe/pe.h"
#include "pe/rope.h"
#include "run/run_int.h"
#include "run/run_parse.h"

static void item_release(run_item *it)
{
    json_decref(it->resolved);
    json_decref(it->swept);
    json_decref(it->enc_params);
}

/* Appends *it to the plan, or counts it as a duplicate of an equal run
 * (same id); the plan owns (or has released) its JSON afterwards. */
static rl_status add_item(run_batch *b, size_t *cap, run_item *it)
{
    /* a hash lookup by run id (the id is the hash): expansion stays linear
     * in the number of runs */
    if (!b->item_seen && !(b->item_seen = json_object())) {
        item_release(it);
        return RL_ERR_NOMEM;
    }
    char key[24];
    snprintf(key, sizeof key, "%016llx", (unsigned long long)it->hash);
    if (json_object_get(b->item_seen, key)) {
        b->n_duplicates++;
        item_release(it);
        return RL_OK;
    }
    if (json_object_set_new(b->item_seen, key, json_true())) {
        item_release(it);
        return RL_ERR_NOMEM;
    }
    if (b->n_items == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        run_item *m = realloc(b->items, nc * sizeof *m);
        if (!m) {
            item_release(it);
            return RL_ERR_NOMEM;
        }
        b->items = m;
        *cap = nc;
    }
    b->items[b->n_items++] = *it;
    return RL_OK;
}

/* 1 when the experiment entry gives params key k itself (a value, a sweep,
 * or inside its zip group). */
static int batch_gives(const run_node *entry, const char *k)
{
    const run_node *p = entry ? run_node_get(entry, "params", NULL) : NULL;
    if (!p || p->type != RUN_NODE_MAP)
        return 0;
    const run_node *z = run_node_get(p, "zip", NULL);
    return run_node_get(p, k, NULL) || (z && z->type == RUN_NODE_MAP && run_node_get(z, k, NULL));
}

/* The model's layer type's attention attributes (attn, run_model_resolve)
 * into the params of a kind that takes them, unless the entry gives the key
 * itself (the batch wins); where each came from goes to model.attention
 * (manifest, dry run, run id). 0 after reporting. */
static int apply_model_attn(run_pctx *c, json_t *res, const run_node *entry, const char *ep,
                            const exp_kind *kind, const json_t *attn)
{
    json_t *params = json_object_get(res, "params"), *from = json_object();
    const char *k;
    json_t *v;
    int ok = 1;
    json_object_foreach((json_t *)attn, k, v) {
        const rl_param *p = NULL;
        for (size_t i = 0; i < kind->n_params; i++)
            if (!strcmp(kind->params[i].key, k))
                p = &kind->params[i];
        if (!p || !json_object_get(params, k))
            continue; /* the kind has no such key */
        const char *src = json_string_value(json_object_get(v, "from"));
        char buf[128], txt[400];
        run_json_text(json_object_get(v, "value"), buf, sizeof buf);
        if (batch_gives(entry, k)) {
            snprintf(txt, sizeof txt, "batch (the model's %s gives %s)", src, buf);
            json_object_set_new(from, k, json_string(txt));
            continue;
        }
        json_t *typed = NULL;
        rl_error err = {0};
        if (rl_param_check(NULL, p, json_object_get(v, "value"), &typed, &err)) {
            run_diag_add(c, RUN_AT(entry), ep, "params.%s from the model's %s (%s): %s; give "
                         "params.%s in the batch", k, src, buf, err.msg, k);
            ok = 0;
            continue;
        }
        json_object_set_new(params, k, typed);
        snprintf(txt, sizeof txt, "model: %s", src);
        json_object_set_new(from, k, json_string(txt));
    }
    if (json_object_size(from))
        json_object_set_new(json_object_get(res, "model"), "attention", from);
    else
        json_decref(from);
    return ok;
}

/* The point's model section into numbers, and an encoding of type 'model'
 * into the model's own RoPE settings; *attn: the model's attention
 * attributes (run_model_resolve). 0 after reporting. */
static int resolve_model(run_pctx *c, json_t *res, const run_node *entry,
                         const run_node *model_map, const run_enc *enc, exp_model *m,
                         json_t **attn)
{
    rl_error err = {0};
    json_t *rope = NULL;
    if (run_model_resolve(json_object_get(res, "model"), c->base_dir, m, &rope, attn, &err)) {
        run_diag_err(c, model_map, "model", entry, "model", &err);
        return 0;
    }
    int ok = 1;
    json_t *lt = json_incref(json_object_get(json_object_get(res, "model"), "layer_type"));
    json_object_set_new(res, "model",
                        json_pack("{s:i,s:i,s:i,s:i}", "head_dim", (int)m->head_dim, "heads",
                                  (int)m->heads, "kv_heads", (int)m->kv_heads, "train_len",
                                  (int)m->train_len));
    if (json_is_string(lt)) /* which layers the model's encoding came from */
        json_object_set(json_object_get(res, "model"), "layer_type", lt);
    json_decref(lt);
    json_t *e = json_object_get(res, "encoding");
    if (!strcmp(json_string_value(json_object_get(e, "type")), "model")) {
        if (!rope) {
            run_diag_add(c, RUN_AT(enc->node), "encodings", "encoding '%s' has type 'model' but "
                         "the model gives no encoding (use a preset or hf_config)",
                         enc->name);
            ok = 0;
        } else if (json_is_string(rope)) {
            run_diag_add(c, RUN_AT(enc->node), "encodings", "encoding '%s' has type 'model': %s",
                         enc->name, json_string_value(rope));
            ok = 0;
        } else {
            json_t *ne = json_deep_copy(rope);
            json_object_set(ne, "name", json_object_get(e, "name"));
            json_object_set_new(res, "encoding", ne);
        }
    }
    json_decref(rope);
    return ok;
}

/* The point's data section (seed defaulting to the batch's) checked
 * against its model. 0 after reporting. */
static int probe_data(run_pctx *c, const run_batch *b, json_t *res, const run_sections *s,
                      const exp_model *m)
{
    rl_error err = {0};
    json_t *d = json_object_get(res, "data");
    if (json_integer_value(json_object_get(d, "seed")) < 0)
        json_object_set_new(d, "seed", json_integer((json_int_t)b->seed));
    if (run_data_resolve(d, &err) || run_data_probe(d, m, c->base_dir, &err)) {
        run_diag_err(c, s->data_map, "data", s->data_node, "data", &err);
        return 0;
    }
    return 1;
}

/* Id, the kind's view of the encoding, the kind's check and estimate. 0
 * after reporting (at the key the check names, or at ep, the entry). */
static int check_item(run_pctx *c, run_item *it, const run_node *entry, const char *ep)
{
    char *txt = json_dumps(it->resolved, JSON_SORT_KEYS | JSON_COMPACT);
    it->hash = txt ? rl_hash64(txt, strlen(txt), RUN_FNV_OFFSET) : 0;
    free(txt);
    snprintf(it->id, sizeof it->id, "%016llx", (unsigned long long)it->hash);
    /* the kind sees the encoding's parameters without name and type, and a
     * scaling name as the type with its rope_type (run_enc_params) */
    const json_t *model = json_object_get(it->resolved, "model");
    it->enc_params = run_enc_params(json_object_get(it->resolved, "encoding"),
                                    (uint32_t)json_integer_value(json_object_get(model,
                                                                                 "train_len")));
    exp_run r;
    run_item_to_exp(it, &r);
    rl_error err = {0};
    if (it->kind->check(&r, &err)) {
        char pp[80];
        snprintf(pp, sizeof pp, "%s.params", ep);
        run_diag_err(c, run_node_get(entry, "params", NULL), pp, entry, ep, &err);
        return 0;
    }
    /* a capture holds a fixed number of tokens: a longer run is refused now */
    if (it->kind->uses_data && it->kind->data_rows &&
        run_data_check_rows(json_object_get(it->resolved, "data"), it->kind->data_rows(&r),
                            c->base_dir, &err)) {
        run_diag_add(c, RUN_AT(entry), ep, "%s", err.msg);
        return 0;
    }
    it->est_bytes = it->kind->estimate_bytes(&r);
    return 1;
}

/* Adds this run's swept keys to b->swept_keys (first-seen order). */
static void note_swept_keys(run_batch *b, const json_t *swept)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)swept, key, v) {
        int seen = 0;
        for (size_t s = 0; s < json_array_size(b->swept_keys); s++)
            seen |= !strcmp(json_string_value(json_array_get(b->swept_keys, s)), key);
        if (!seen)
            json_array_append_new(b->swept_keys, json_string(key));
    }
}

/* The model files a point reads (manifest.json's inputs): its preset and
 * its hf_config, as run_model.c opens them. */
static void note_model_files(run_pctx *c, run_batch *b, const json_t *model)
{
    const char *preset = json_string_value(json_object_get(model, "preset"));
    const char *hf = json_string_value(json_object_get(model, "hf_config"));
    const char *cap = json_string_value(json_object_get(model, "capture"));
    char path[1300];
    if (cap) {
        snprintf(path, sizeof path, "%s%s%s", cap[0] == '/' ? "" : c->base_dir,
                 cap[0] == '/' ? "" : "/", cap);
        if (!run_inputs_note(b, "capture", cap, path))
            c->oom = 1;
    }
    if (preset) {
        run_preset_path(preset, path, sizeof path);
        if (!run_inputs_note(b, "preset", preset, path))
            c->oom = 1;
    }
    if (hf) {
        snprintf(path, sizeof path, "%s%s%s", hf[0] == '/' ? "" : c->base_dir,
                 hf[0] == '/' ? "" : "/", hf);
        if (!run_inputs_note(b, "hf_config", hf, path))
            c->oom = 1;
    }
}

/* One sweep point: resolved, checked and added (or reported). */
static void expand_point(run_pctx *c, run_batch *b, size_t *cap, const run_sections *s,
                         const run_node *entry, uint32_t ei, const exp_kind *kind,
                         const json_t *params, const run_enc *enc, const run_axes *const *lists,
                         size_t nl, const size_t *idx)
{
    char ep[64];
    snprintf(ep, sizeof ep, "experiments[%u]", ei);
    json_t *res = json_object(), *swept = json_object();
    json_object_set_new(res, "kind", json_string(kind->name));
    json_object_set_new(res, "seed", json_integer((json_int_t)b->seed));
    json_object_set_new(res, "model", json_deep_copy(s->model_tmpl));
    json_object_set_new(res, "encoding", json_deep_copy(enc->tmpl));
    json_object_set_new(res, "params", json_deep_copy(params));
    if (kind->uses_data) {
        json_object_set_new(res, "data", json_deep_copy(s->data_tmpl));
        if (b->data_seed_follows)
            json_object_set_new(json_object_get(res, "data"), "seed",
                                json_integer((json_int_t)b->seed));
    }
    run_sweep_apply(res, swept, lists, nl, idx);
    run_item it = {.kind = kind, .entry = ei, .resolved = res, .swept = swept};
    note_model_files(c, b, json_object_get(res, "model"));
    exp_model m;
    json_t *attn = NULL;
    int ok = resolve_model(c, res, entry, s->model_map, enc, &m, &attn);
    if (ok && attn)
        ok = apply_model_attn(c, res, entry, ep, kind, attn);
    json_decref(attn);
    if (ok && kind->uses_data)
        ok = probe_data(c, b, res, s, &m);
    /* the encoding's own problems at its keys, once however many runs share
     * them (the same line as the batch-wide pass's); the kind's check only
     * for a valid encoding */
    if (ok)
        ok = run_enc_check(c, enc, json_object_get(res, "encoding"), &m);
    if (ok)
        ok = check_item(c, &it, entry, ep);
    if (!ok) {
        item_release(&it);
        return;
    }
    note_swept_keys(b, swept);
    if (!run_inputs_note_item(b, &it))
        c->oom = 1;
    if (add_item(b, cap, &it))
        c->oom = 1;
}

void run_expand_entry(run_pctx *c, run_batch *b, size_t *cap, const run_sections *s,
                     const run_node *entry, uint32_t ei, const exp_kind *kind,
                     const json_t *params, const run_axes *pax, const int *use_enc)
{
    /* the runs this entry makes, counted before any is made: a plan over
     * the limit is refused with the count it would have */
    double total = 0;
    for (size_t e = 0; e < s->encs->n; e++) {
        if (!use_enc[e] || s->encs->v[e].bad)
            continue;
        const run_axes *lists[4] = {s->model_ax, &s->encs->v[e].ax, pax, s->data_ax};
        double count = b->n_seeds;
        for (size_t l = 0; l < (kind->uses_data ? 4u : 3u); l++)
            for (size_t i = 0; i < lists[l]->n; i++)
                count *= (double)lists[l]->a[i].len;
        total += count;
    }
    if (total + (double)b->n_items > RUN_MAX_PLAN) {
        char ep[64];
        snprintf(ep, sizeof ep, "experiments[%u]", ei);
        run_diag_add(c, RUN_AT(entry), ep,
                     "this entry expands to %.0f runs (%.0f with the entries before it), more "
                     "than the limit of %d runs per batch; split the batch or narrow its sweeps",
                     total, total + (double)b->n_items, RUN_MAX_PLAN);
        return;
    }
    /* the batch's seed list is the outermost axis (b->seed is the point's) */
    for (uint32_t si = 0; si < b->n_seeds; si++) {
        b->seed = b->seeds[si];
        for (size_t e = 0; e < s->encs->n; e++) {
            if (!use_enc[e] || s->encs->v[e].bad)
                continue;
            const run_enc *enc = &s->encs->v[e];
            const run_axes *lists[4] = {s->model_ax, &enc->ax, pax, s->data_ax};
            size_t nl = kind->uses_data ? 4 : 3, total_axes = 0;
            size_t lens[4 * RUN_MAX_AXES];
            for (size_t l = 0; l < nl; l++)
                for (size_t i = 0; i < lists[l]->n; i++)
                    lens[total_axes++] = lists[l]->a[i].len;
            /* odometer over the axes, the first axis turning fastest */
            size_t idx[4 * RUN_MAX_AXES] = {0};
            for (;;) {
                expand_point(c, b, cap, s, entry, ei, kind, params, enc, lists, nl, idx);
                size_t k = 0;
                while (k < total_axes && ++idx[k] == lens[k])
                    idx[k++] = 0;
                if (k == total_axes)
                    break;
            }
        }
    }
    b->seed = b->seeds[0];
}
