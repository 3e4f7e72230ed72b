/* run_encodings.c — the `encodings:` list of a batch file: `{set: NAME}`
 * entries flattened into the entries of configs/encodings/NAME.yaml, each
 * entry's name, type and (free-form, possibly swept) parameters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"
#include "pe/pe.h"
#include "pe/rope.h"
#include "pe/rope_scaling.h"
#include "run/run_int.h"
#include "run/run_parse.h"

/* An entry of the flattened list. */
typedef struct flat_enc {
    const run_node *node;        /* the encoding mapping */
    const run_node *at;          /* where plan-time errors point (the batch entry) */
    const char *file;            /* file the node comes from */
    char path[112];
} flat_enc;

typedef struct flat_list {
    flat_enc *v;
    size_t n, cap;
} flat_list;

static void flat_push(run_pctx *c, flat_list *f, const run_node *node, const run_node *at,
                      const char *file, const char *path)
{
    if (f->n == f->cap) {
        size_t nc = f->cap ? f->cap * 2 : 8;
        flat_enc *m = realloc(f->v, nc * sizeof *m);
        if (!m) {
            c->oom = 1;
            return;
        }
        f->v = m;
        f->cap = nc;
    }
    flat_enc *e = &f->v[f->n++];
    e->node = node;
    e->at = at;
    e->file = file;
    snprintf(e->path, sizeof e->path, "%s", path);
}

/* Entry i, {set: NAME}: the set's entries, each pointing back at entry e. */
static void flatten_set(run_pctx *c, run_enc_list *l, flat_list *f, const run_node *e,
                        const run_node *set, size_t i)
{
    char ep[96], sp[112];
    snprintf(ep, sizeof ep, "encodings[%zu]", i);
    snprintf(sp, sizeof sp, "%s.set", ep);
    if (e->n != 1) {
        run_diag_add(c, RUN_AT(e), ep, "an encoding set entry holds only 'set: NAME'");
        return;
    }
    char name[128];
    if (!run_scalar_str(c, set, sp, name, sizeof name))
        return;
    run_node *root = NULL;
    rl_error serr = {0};
    if (l->n_sets < RUN_MAX_SETS &&
        run_encoding_set_load(name, &root, l->set_files[l->n_sets], sizeof l->set_files[0],
                              &serr)) {
        run_diag_add(c, RUN_AT(set), sp, "%s", serr.msg);
        return;
    }
    if (l->n_sets == RUN_MAX_SETS) {
        run_node_free(root);
        run_diag_add(c, RUN_AT(set), sp, "at most %d encoding sets per batch", RUN_MAX_SETS);
        return;
    }
    const char *file = l->set_files[l->n_sets];
    l->sets[l->n_sets++] = root;
    for (size_t j = 0; j < root->n; j++) {
        snprintf(ep, sizeof ep, "encodings[%zu](set %.20s)[%zu]", i, name, j);
        flat_push(c, f, root->items[j], e, file, ep);
    }
}

/* The names a type may take, from the registries: every encoding family,
 * every RoPE scaling (rope_type) and "model"; at most cap. */
static size_t type_names(const char **names, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < pe_family_count() && n < cap; i++)
        names[n++] = pe_family_at(i)->name;
    for (int t = 0; t < ROPE_TYPE_COUNT && n < cap; t++)
        names[n++] = rope_type_name(t);
    if (n < cap)
        names[n++] = "model";
    return n;
}

const char *run_enc_family(const char *type)
{
    if (!type)
        return NULL;
    const pe_family *f = pe_family_find(type);
    if (f)
        return f->name;
    return rope_type_parse(type) < ROPE_TYPE_COUNT ? "rope" : NULL;
}

/* A type value (scalar n): 1 when the registry knows it, else reported
 * with the nearest name and the full lists. */
static int check_type(run_pctx *c, const run_node *n, const char *path)
{
    if (n->type != RUN_NODE_SCALAR) {
        run_diag_add(c, RUN_AT(n), path, "expected an encoding type, got %s", run_node_kind(n));
        return 0;
    }
    if (!strcmp(n->text, "model") || run_enc_family(n->text))
        return 1;
    const char *names[64];
    size_t nn = type_names(names, 64);
    char buf[600];
    run_suggest(n->text, names, nn, buf, sizeof buf);
    run_diag_add(c, RUN_AT(n), path,
                 "unknown encoding type '%s'%s (encoding families: %s; RoPE scalings: %s; or "
                 "model, the model's own)",
                 n->text, strstr(buf, "did you mean") ? buf : "", pe_family_names(),
                 rope_type_list());
    return 0;
}

/* The entry's `type`: one type, or a list of types (a sweep axis
 * "encoding.type"); the first one goes into type. 0 after reporting. */
static int parse_type(run_pctx *c, run_enc *en, const run_node *ty, const char *p2, char *type,
                      size_t cap)
{
    if (ty->type == RUN_NODE_SEQ && ty->value_list) {
        run_diag_add(c, RUN_AT(ty), p2, "takes one type, or a plain list of types to sweep "
                     "(not a !list)");
        return 0;
    }
    if (ty->type != RUN_NODE_SEQ) {
        if (!run_scalar_str(c, ty, p2, type, cap))
            return 0;
        return check_type(c, ty, p2);
    }
    int ok = ty->n > 0;
    for (size_t i = 0; i < ty->n; i++) {
        char ip[160];
        snprintf(ip, sizeof ip, "%s[%zu]", p2, i);
        ok &= check_type(c, ty->items[i], ip);
    }
    static const rl_param tp = {.key = "type", .type = RL_P_STR};
    size_t before = en->ax.n;
    run_sweep_list(c, &en->ax, ty, &tp, p2, "encoding.type"); /* reports an empty list */
    if (!ok || en->ax.n == before)
        return 0;
    for (size_t i = 0; i < ty->n; i++)
        if (!strcmp(ty->items[i]->text, "model")) {
            run_diag_add(c, RUN_AT(ty->items[i]), p2, "type 'model' cannot be swept with other "
                         "types (give it its own encoding entry)");
            return 0;
        }
    snprintf(type, cap, "%s", ty->items[0]->text);
    return 1;
}

/* One flattened entry into l->v[l->n] (counted once it has a name; one with
 * a problem is kept as `bad`, so that experiments selecting it by name
 * report nothing more). */
static void parse_entry(run_pctx *c, run_enc_list *l, const flat_enc *f)
{
    const run_node *e = f->node;
    const char *ep = f->path;
    run_enc *en = &l->v[l->n];
    en->node = f->at;
    en->map = e;
    en->file = f->file;
    snprintf(en->path, sizeof en->path, "%s", ep);
    if (e->type != RUN_NODE_MAP) {
        run_diag_add(c, RUN_AT(e), ep, "expected a mapping {name: ..., type: ..., params}, got %s",
                     run_node_kind(e));
        return;
    }
    const run_node *nm = run_node_get(e, "name", NULL), *ty = run_node_get(e, "type", NULL);
    char p2[128];
    snprintf(p2, sizeof p2, "%s.name", ep);
    if (!nm) {
        run_diag_add(c, RUN_AT(e), ep, "missing required key 'name'");
        return;
    }
    if (!run_scalar_str(c, nm, p2, en->name, sizeof en->name))
        return;
    if (!l->names && !(l->names = json_object())) {
        c->oom = 1;
        return;
    }
    if (json_object_get(l->names, en->name)) {
        run_diag_add(c, RUN_AT(nm), ep, "encoding name '%s' is used twice", en->name);
        return;
    }
    json_object_set_new(l->names, en->name, json_true());
    en->tmpl = json_object();
    l->n++;
    snprintf(p2, sizeof p2, "%s.type", ep);
    char type[64] = "";
    en->type_node = ty;
    const run_node *zip = run_node_get(e, "zip", NULL);
    const run_node *zty = zip ? run_node_get(zip, "type", NULL) : NULL;
    if (!ty && zty && zty->type == RUN_NODE_SEQ && !zty->value_list && zty->n) {
        /* the type swept in a zip group (paired with keys only some types
         * take); the group's parser makes the axis */
        en->type_node = zty;
        int ok = 1;
        for (size_t i = 0; i < zty->n; i++) {
            char ip[160];
            snprintf(ip, sizeof ip, "%s.zip.type[%zu]", ep, i);
            ok &= check_type(c, zty->items[i], ip);
            if (ok && !strcmp(zty->items[i]->text, "model")) {
                run_diag_add(c, RUN_AT(zty->items[i]), ip, "type 'model' cannot be swept with "
                             "other types (give it its own encoding entry)");
                ok = 0;
            }
        }
        if (ok)
            snprintf(type, sizeof type, "%s", zty->items[0]->text);
        else
            en->bad = 1;
    } else if (!ty) {
        run_diag_add(c, RUN_AT(e), ep, "missing required key 'type' (rope, model, ...)");
        en->bad = 1;
    } else if (zty) {
        size_t zi = 0;
        run_node_get(zip, "type", &zi);
        run_diag_add(c, zip->key_line[zi], zip->key_col[zi], p2, "also given in the zip group");
        en->bad = 1;
    } else if (!parse_type(c, en, ty, p2, type, sizeof type))
        en->bad = 1;
    size_t d0 = c->diag->n;
    for (size_t k = 0; k < e->n; k++) {
        if (!strcmp(e->keys[k], "name") || !strcmp(e->keys[k], "type"))
            continue;
        run_node sub = *e; /* one key at a time keeps paths and positions */
        sub.n = 1;
        sub.keys = &e->keys[k];
        sub.items = &e->items[k];
        sub.key_line = &e->key_line[k];
        sub.key_col = &e->key_col[k];
        run_free_parse(c, &sub, ep, "encoding", en->tmpl, &en->ax, 0);
    }
    if (c->diag->n != d0)
        en->bad = 1;
    json_object_set_new(en->tmpl, "name", json_string(en->name));
    json_object_set_new(en->tmpl, "type", json_string(type));
}

json_t *run_enc_params(const json_t *enc, uint32_t train_len)
{
    const char *type = json_string_value(json_object_get(enc, "type"));
    json_t *p = json_deep_copy(enc);
    if (!p)
        return NULL;
    json_object_del(p, "name");
    json_object_del(p, "type");
    /* a type that names a RoPE scaling (`type: yarn`) is family rope with
     * that rope_type, written here once so every encoding the kinds create
     * reads these parameters as they are */
    if (type && !pe_family_find(type) && rope_type_parse(type) < ROPE_TYPE_COUNT &&
        !json_object_get(p, "rope_type"))
        json_object_set_new(p, "rope_type", json_string(type));
    /* the model's train_len is the length a scaling extends: where the
     * scaling needs it and neither length is given, it is the pre-training
     * length (HF: original_max_position_embeddings, for dynamic
     * max_position_embeddings) */
    const json_t *rt = json_object_get(p, "rope_type");
    if (!rt)
        rt = json_object_get(p, "type");
    const char *fam = run_enc_family(type);
    int t = json_is_string(rt) ? rope_type_parse(json_string_value(rt)) : ROPE_TYPE_DEFAULT;
    if (train_len && fam && !strcmp(fam, "rope") && t != ROPE_TYPE_DEFAULT &&
        t < ROPE_TYPE_COUNT && !json_object_get(p, "original_max_position_embeddings") &&
        !json_object_get(p, "max_position_embeddings")) {
        const char *key = t == ROPE_TYPE_DYNAMIC ? "max_position_embeddings"
                                                 : "original_max_position_embeddings";
        if (t == ROPE_TYPE_DYNAMIC || rope_type_uses_key(t, key))
            json_object_set_new(p, key, json_integer((json_int_t)train_len));
    }
    return p;
}

/* Position of key in the entry's mapping (or in its `zip:` group); 0 when
 * it is not there (a key the model's own encoding brought). */
static int key_pos(const run_enc *en, const char *key, uint32_t *line, uint32_t *col)
{
    size_t i;
    const run_node *m = en->map;
    if (m && run_node_get(m, key, &i)) {
        *line = m->key_line[i], *col = m->key_col[i];
        return 1;
    }
    const run_node *z = m ? run_node_get(m, "zip", NULL) : NULL;
    if (z && run_node_get(z, key, &i)) {
        *line = z->key_line[i], *col = z->key_col[i];
        return 1;
    }
    return 0;
}

/* 1 when key of this entry is swept (a plain list or a zip group). */
static int key_swept(const run_enc *en, const char *key)
{
    char name[200];
    snprintf(name, sizeof name, "encoding.%s", key);
    for (size_t i = 0; i < en->ax.n; i++)
        for (size_t k = 0; k < en->ax.a[i].n_keys; k++)
            if (!strcmp(en->ax.a[i].key[k], name))
                return 1;
    return 0;
}

/* A RoPE encoding's scaling keys against its rope_type: a key that only
 * other scalings read is refused at its line, naming the types that do. */
static int check_rope_keys(run_pctx *c, const run_enc *en, const json_t *params, uint32_t tl,
                           uint32_t tc)
{
    if (!strcmp(json_string_value(json_object_get(en->tmpl, "type")), "model"))
        return 1; /* the model's own settings, as its config gives them */
    const json_t *rt = json_object_get(params, "rope_type");
    if (!rt)
        rt = json_object_get(params, "type");
    int t = json_is_string(rt) ? rope_type_parse(json_string_value(rt)) : ROPE_TYPE_DEFAULT;
    if (t >= ROPE_TYPE_COUNT)
        return 1; /* the family reports the unknown rope_type */
    int ok = 1;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)params, key, v) {
        if (json_is_null(v) ||
            rope_reads_key(t, json_is_true(json_object_get(params, "resonance")), key))
            continue;
        char users[256];
        rope_key_readers(key, users, sizeof users);
        uint32_t line = tl, col = tc;
        key_pos(en, key, &line, &col);
        char kp[200];
        run_path_join(kp, sizeof kp, en->path, key);
        run_diag_add(c, line, col, kp, "'%s' has no effect with type %s (it is read by %s)", key,
                     rope_type_name(t), users);
        ok = 0;
    }
    return ok;
}

int run_enc_check(run_pctx *c, const run_enc *en, const json_t *enc, const exp_model *m)
{
    const char *type = json_string_value(json_object_get(enc, "type"));
    if (!type || !strcmp(type, "model"))
        return 1;
    const char *family = run_enc_family(type);
    const pe_family *fam = family ? pe_family_find(family) : NULL;
    if (!fam)
        return 1; /* reported by parse_type */
    const char *file = c->file;
    c->file = en->file;
    const run_node *at = en->type_node ? en->type_node : en->map ? en->map : en->node;
    uint32_t tl = at->line, tc = at->col;
    json_t *params = run_enc_params(enc, m ? m->train_len : 0);
    if (!params) {
        c->oom = 1;
        c->file = file;
        return 0;
    }
    int ok = 1;
    const char *key;
    json_t *v;
    const char *valid[64];
    size_t n_fp;
    const pe_param *fp = pe_family_params(fam, &n_fp);
    size_t nv = run_param_names(fp, n_fp, valid, 64);
    json_object_foreach(params, key, v) {
        if (run_find_param(fp, n_fp, key))
            continue;
        uint32_t line = tl, col = tc;
        key_pos(en, key, &line, &col);
        char kp[200], buf[1024];
        run_path_join(kp, sizeof kp, en->path, key);
        char sug[900];
        run_suggest(key, valid, nv, sug, sizeof sug);
        if (!strncmp(sug, "; valid keys: ", 14))
            snprintf(buf, sizeof buf, "; its parameters: %s", sug + 14);
        else
            snprintf(buf, sizeof buf, "%s", sug);
        run_diag_add(c, line, col, kp, "'%s' is not a parameter of type '%s'%s%s%s%s", key,
                     type, strcmp(family, type) ? " (family " : "",
                     strcmp(family, type) ? family : "", strcmp(family, type) ? ")" : "", buf);
        ok = 0;
    }
    if (ok && !strcmp(family, "rope"))
        ok = check_rope_keys(c, en, params, tl, tc);
    /* Created once per distinct (family, settings, model shape) while the
     * batch loads: the batch-wide pass and every run that shares them (a
     * kind, a seed, another entry) reuse the first verdict instead of
     * building the encoding again (a refusal is reported once anyway). */
    char *seen = NULL;
    if (ok && m) {
        char *dump = json_dumps(params, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        size_t n = dump ? strlen(family) + strlen(dump) + 40 : 0;
        if (dump && (seen = malloc(n)))
            snprintf(seen, n, "%s %u %u %u %s", family, m->head_dim, m->heads, m->kv_heads, dump);
        free(dump);
        if (!seen) {
            c->oom = 1;
            ok = 0;
        } else if (c->enc_valid && json_object_get(c->enc_valid, seen)) {
            json_decref(params);
            free(seen);
            c->file = file;
            return 1;
        }
    }
    if (ok && m) {
        pe_shape shape = {.head_dim = m->head_dim, .heads = m->heads, .kv_heads = m->kv_heads};
        pe_encoding *pe = NULL;
        rl_error err = {0};
        if (pe_encoding_create(family, params, &shape, &pe, &err)) {
            const char *msg = err.msg;
            size_t fl = strlen(family);
            if (!strncmp(msg, family, fl) && !strncmp(msg + fl, ": ", 2))
                msg += fl + 2;
            /* the failing key as the family gives it (err.key), at its line
             * when the entry wrote it; else at the type */
            const char *k = err.key[0] ? err.key : NULL;
            uint32_t line = tl, col = tc;
            char kp[200];
            if (k && key_pos(en, k, &line, &col))
                run_path_join(kp, sizeof kp, en->path, k);
            else
                snprintf(kp, sizeof kp, "%s.type", en->path);
            /* a list parameter swept by a plain list gets one element per
             * run: say how a list that is one value is written */
            const pe_param *kparam = k ? run_find_param(fp, n_fp, k) : NULL;
            int list_hint = kparam && kparam->type == RL_P_JSON && key_swept(en, k) &&
                            !json_is_array(json_object_get(params, k));
            run_diag_add(c, line, col, kp, "type %s: %s%s", type, msg,
                         list_hint ? " (a plain list is a sweep; a list that is one value is "
                                     "written !list [...])"
                                   : "");
            ok = 0;
        }
        pe_encoding_destroy(pe);
        if (ok && ((!c->enc_valid && !(c->enc_valid = json_object())) ||
                   json_object_set_new(c->enc_valid, seen, json_true())))
            c->oom = 1;
    }
    free(seen);
    json_decref(params);
    c->file = file;
    return ok;
}

void run_enc_check_all(run_pctx *c, const run_enc *en, const exp_model *m)
{
    if (en->bad)
        return;
    size_t lens[RUN_MAX_AXES], idx[RUN_MAX_AXES] = {0};
    for (size_t i = 0; i < en->ax.n; i++)
        lens[i] = en->ax.a[i].len;
    const run_axes *lists[1] = {&en->ax};
    for (;;) {
        json_t *res = json_object(), *swept = json_object();
        json_object_set_new(res, "encoding", json_deep_copy(en->tmpl));
        run_sweep_apply(res, swept, lists, 1, idx);
        run_enc_check(c, en, json_object_get(res, "encoding"), m);
        json_decref(res);
        json_decref(swept);
        size_t k = 0;
        while (k < en->ax.n && ++idx[k] == lens[k])
            idx[k++] = 0;
        if (k == en->ax.n)
            break;
    }
}

void run_encodings_parse(run_pctx *c, const run_node *root, run_enc_list *l)
{
    memset(l, 0, sizeof *l);
    static const run_node default_list = {.type = RUN_NODE_SEQ, .line = 1, .col = 1};
    const run_node *el = run_node_get(root, "encodings", NULL);
    if (el && el->type != RUN_NODE_SEQ) {
        run_diag_add(c, RUN_AT(el), "encodings", "expected a list of encodings, got %s",
                     run_node_kind(el));
        el = NULL;
    }
    flat_list f = {0};
    for (size_t i = 0; el && i < el->n; i++) {
        const run_node *e = el->items[i], *set = run_node_get(e, "set", NULL);
        char ep[96];
        snprintf(ep, sizeof ep, "encodings[%zu]", i);
        if (set)
            flatten_set(c, l, &f, e, set, i);
        else
            flat_push(c, &f, e, e, c->file, ep);
    }
    if (f.n > RUN_MAX_ENCODINGS) {
        /* refused by count before any entry is parsed: a list that long is
         * a generated mistake, and parsing it would take the time of it */
        run_diag_add(c, RUN_AT(el), "encodings",
                     "%zu encodings, more than the limit of %d per batch; split the batch",
                     f.n, RUN_MAX_ENCODINGS);
        free(f.v);
        return;
    }
    l->cap = f.n ? f.n : 1;
    l->v = calloc(l->cap, sizeof *l->v);
    if (!l->v || c->oom) {
        free(f.v);
        c->oom = 1;
        return;
    }
    if (!el || f.n == 0) {
        /* no list: base RoPE with default settings */
        l->v[0].tmpl = json_pack("{s:s,s:s}", "name", "rope", "type", "rope");
        snprintf(l->v[0].name, sizeof l->v[0].name, "rope");
        l->v[0].node = el ? el : &default_list;
        l->v[0].file = c->file;
        snprintf(l->v[0].path, sizeof l->v[0].path, "encodings");
        l->n = 1;
    }
    const char *batch_file = c->file;
    for (size_t i = 0; i < f.n; i++) {
        c->file = f.v[i].file;
        parse_entry(c, l, &f.v[i]);
    }
    c->file = batch_file;
    free(f.v);
}

void run_enc_list_free(run_enc_list *l)
{
    json_decref(l->names);
    for (size_t i = 0; i < l->n_sets; i++)
        run_node_free(l->sets[i]);
    for (size_t i = 0; l->v && i < l->cap; i++) {
        json_decref(l->v[i].tmpl);
        run_axes_free(&l->v[i].ax);
    }
    free(l->v);
    memset(l, 0, sizeof *l);
}
