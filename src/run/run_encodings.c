/* run_encodings.c — the `encodings:` list of a batch file: `{set: NAME}`
 * entries flattened into the entries of configs/encodings/NAME.yaml, each
 * entry's name, type and (free-form, possibly swept) parameters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"
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

/* One flattened entry into l->v[l->n] (counted only when valid). */
static void parse_entry(run_pctx *c, run_enc_list *l, const flat_enc *f)
{
    const run_node *e = f->node;
    const char *ep = f->path;
    run_enc *en = &l->v[l->n];
    en->node = f->at;
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
    snprintf(p2, sizeof p2, "%s.type", ep);
    char type[64];
    if (!ty) {
        run_diag_add(c, RUN_AT(e), ep, "missing required key 'type' (rope, model, ...)");
        return;
    }
    if (!run_scalar_str(c, ty, p2, type, sizeof type))
        return;
    for (size_t k = 0; k < l->n; k++)
        if (!strcmp(l->v[k].name, en->name)) {
            run_diag_add(c, RUN_AT(nm), ep, "encoding name '%s' is used twice", en->name);
            return;
        }
    en->tmpl = json_object();
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
    json_object_set_new(en->tmpl, "name", json_string(en->name));
    json_object_set_new(en->tmpl, "type", json_string(type));
    l->n++;
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
    for (size_t i = 0; i < l->n_sets; i++)
        run_node_free(l->sets[i]);
    for (size_t i = 0; l->v && i < l->cap; i++) {
        json_decref(l->v[i].tmpl);
        run_axes_free(&l->v[i].ax);
    }
    free(l->v);
    memset(l, 0, sizeof *l);
}
