/* run_batch.c — a whole batch file: its top-level keys, the model and data
 * sections (checked at once when they are not swept), the encodings and
 * the experiment entries, expanded into the plan (run_expand.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"
#include "run/run.h"
#include "run/run_int.h"
#include "run/run_parse.h"

/* ---- schemas of the runner's own sections ------------------------------ */

static const char *const top_keys[] = {"name", "output", "device", "seed", "model",
                                       "encodings", "data", "experiments"};

/* Runner sections use the house schema (core/rl_param.h); def "null": optional
 * with no default (the model shape may come from a preset or hf_config). */
static const rl_param model_params[] = {
    {.key = "head_dim", .type = RL_P_INT, .def = "null", .min = 2, .max = ROPE_MAX_HEAD_DIM},
    {.key = "heads", .type = RL_P_INT, .def = "null", .min = 1, .max = 4096},
    {.key = "kv_heads", .type = RL_P_INT, .def = "null", .min = 1, .max = 4096},
    {.key = "train_len", .type = RL_P_INT, .def = "null", .min = 1, .max = 1 << 30},
    {.key = "preset", .type = RL_P_STR, .def = "null"},
    {.key = "hf_config", .type = RL_P_STR, .def = "null"},
    {.key = "capture", .type = RL_P_STR, .def = "null"},
    {.key = "layer_type", .type = RL_P_STR, .def = "null"},
};

static const char *const exp_entry_keys[] = {"kind", "params", "encodings", "seed"};

/* ---- the loader's state -------------------------------------------------- */

typedef struct loader {
    run_pctx c;
    run_batch *b;
    const run_node *root;        /* the batch mapping */
    json_t *model_tmpl, *data_tmpl;
    run_axes *model_ax, *data_ax;
    const run_node *model;       /* NULL when absent */
    const run_node *data;        /* the data section, or the root (positions) */
    int shape_bad;               /* model or data invalid: no plan is expanded */
    exp_model m;                 /* the model, when it is not swept and valid (m_ok) */
    int m_ok;
    run_enc_list encs;
    size_t cap;                  /* capacity of b->items */
} loader;

/* b's defaults and its own copy of the text. */
static rl_status batch_init(run_batch *b, const char *name, const char *text, size_t len,
                            const char *base_dir, rl_error *err)
{
    snprintf(b->file, sizeof b->file, "%s", name);
    snprintf(b->base_dir, sizeof b->base_dir, "%s", base_dir);
    snprintf(b->device, sizeof b->device, "auto");
    b->seed = 1;
    b->seeds[0] = 1, b->n_seeds = 1;
    b->swept_keys = json_array();
    b->text = malloc(len + 1);
    if (!b->text || !b->swept_keys) {
        run_batch_free(b);
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    }
    memcpy(b->text, text, len);
    b->text[len] = '\0';
    b->text_len = len;
    b->text_hash = rl_hash64(text, len, RUN_FNV_OFFSET);
    return RL_OK;
}

/* A YAML syntax error: the one diagnostic (b freed). */
static rl_status syntax_error(run_batch *b, run_diag *diag, const rl_error *perr, rl_error *err)
{
    run_batch_free(b);
    if (perr->status == RL_ERR_NOMEM)
        return rl_fail(err, RL_ERR_NOMEM, "%s", perr->msg);
    diag->msg = malloc(sizeof *diag->msg);
    if (diag->msg && (diag->msg[0] = strdup(perr->msg)))
        diag->n = diag->cap = 1;
    return rl_fail(err, RL_ERR_PARSE, "%s", perr->msg);
}

/* `seed:` (at kp) of the batch or of one experiment: a scalar, or a list,
 * one sweep axis (each run gets one seed; the data section's seed follows
 * it unless the data section gives its own). seeds[*n] receives the list,
 * *first its first seed; left as they were where nothing valid is given. */
static void parse_seeds(run_pctx *c, const run_node *n, const char *kp, uint64_t *seeds,
                        uint32_t *n_seeds, uint64_t *first)
{
    static const rl_param sp = {.key = "seed", .type = RL_P_INT, .min = 0,
                                 .max = 9007199254740991.0};
    if (n->type != RUN_NODE_SEQ) {
        json_t *v = run_typed_value(c, n, &sp, kp);
        if (v)
            *first = (uint64_t)json_integer_value(v);
        json_decref(v);
        seeds[0] = *first, *n_seeds = 1;
        return;
    }
    uint32_t got = 0;
    if (n->n == 0 || n->n > RUN_MAX_SEEDS)
        run_diag_add(c, RUN_AT(n), kp, "a seed list holds 1 to %d seeds, got %zu",
                     RUN_MAX_SEEDS, n->n);
    for (size_t i = 0; i < n->n && i < RUN_MAX_SEEDS; i++) {
        char ip[128];
        snprintf(ip, sizeof ip, "%s[%zu]", kp, i);
        json_t *v = run_typed_value(c, n->items[i], &sp, ip);
        if (!v)
            continue;
        uint64_t sv = (uint64_t)json_integer_value(v);
        json_decref(v);
        int dup = 0;
        for (uint32_t k = 0; k < got; k++)
            dup |= seeds[k] == sv;
        if (dup)
            run_diag_add(c, RUN_AT(n->items[i]), ip, "seed %llu is listed twice",
                         (unsigned long long)sv);
        else
            seeds[got++] = sv;
    }
    if (got) {
        *n_seeds = got;
        *first = seeds[0];
    } else {
        *n_seeds = 1, seeds[0] = *first;
    }
}

/* Unknown top-level keys; name, output, device, seed. */
static void parse_top(loader *L)
{
    run_pctx *c = &L->c;
    const run_node *r = L->root, *n;
    run_batch *b = L->b;
    for (size_t i = 0; i < r->n; i++) {
        int known = 0;
        for (size_t k = 0; k < RL_ARRAY_LEN(top_keys); k++)
            known |= !strcmp(r->keys[i], top_keys[k]);
        if (!known)
            run_unknown_key(c, r, i, "", top_keys, RL_ARRAY_LEN(top_keys));
    }
    if ((n = run_node_get(r, "name", NULL)))
        run_scalar_str(c, n, "name", b->name, sizeof b->name);
    else
        snprintf(b->name, sizeof b->name, "batch");
    if ((n = run_node_get(r, "output", NULL)))
        run_scalar_str(c, n, "output", b->output, sizeof b->output);
    if ((n = run_node_get(r, "device", NULL)))
        run_scalar_str(c, n, "device", b->device, sizeof b->device);
    if ((n = run_node_get(r, "seed", NULL)))
        parse_seeds(c, n, "seed", b->seeds, &b->n_seeds, &b->seed);
}

/* Each failing shape check of the unswept model at its own key. */
static void report_model_checks(loader *L, const exp_model *m, int *failed)
{
    const run_node *model = L->model;
    rl_error merr = {0};
    for (unsigned k = 0; k < RUN_MODEL_CHECKS; k++) {
        if (run_model_check(m, k, &merr) == RL_OK)
            continue;
        /* every check guards its own fields, so all are reported, each at
         * the key it names */
        run_diag_err(&L->c, model, "model", model, "model", &merr);
        *failed = 1;
    }
}

/* Without model sweeps the model (and the data against it, without data
 * sweeps) is checked now, so these errors come together with all others. */
static void check_shape_now(loader *L, int data_clean)
{
    exp_model m;
    json_t *rope = NULL;
    rl_error merr = {0};
    if (run_model_load(L->model_tmpl, L->c.base_dir, &m, &rope, &merr)) {
        run_diag_err(&L->c, L->model, "model", L->model, "model", &merr);
        L->shape_bad = 1;
        return;
    }
    json_decref(rope);
    int failed = 0;
    report_model_checks(L, &m, &failed);
    if (failed) {
        L->shape_bad = 1;
        return;
    }
    L->m = m;
    L->m_ok = 1;
    if (L->data_ax->n == 0 && data_clean) {
        if (json_integer_value(json_object_get(L->data_tmpl, "seed")) < 0) {
            json_object_set_new(L->data_tmpl, "seed", json_integer((json_int_t)L->b->seed));
            L->b->data_seed_follows = 1; /* each point's seed (run_expand_entry) */
        }
        if (run_data_resolve(L->data_tmpl, &merr) ||
            run_data_probe(L->data_tmpl, &m, L->c.base_dir, &merr)) {
            run_diag_err(&L->c, run_node_get(L->root, "data", NULL), "data", L->data, "data",
                         &merr);
            L->shape_bad = 1;
        }
    }
}

/* The model and data sections. A section with errors makes every run
 * invalid: the plan is not expanded then (its errors would repeat these). */
static void parse_sections(loader *L)
{
    run_pctx *c = &L->c;
    run_diag *diag = c->diag;
    L->model = run_node_get(L->root, "model", NULL);
    if (!L->model)
        run_diag_add(c, RUN_AT(L->root), "", "missing required key 'model' (head_dim, heads, "
                     "kv_heads, train_len, or preset, or hf_config)");
    size_t d0 = diag->n;
    if (L->model)
        run_schema_parse(c, L->model, "model", "model", model_params,
                         RL_ARRAY_LEN(model_params), L->model_tmpl, L->model_ax);
    int model_clean = diag->n == d0;
    const run_node *data = run_node_get(L->root, "data", NULL);
    d0 = diag->n;
    run_schema_parse(c, data, "data", "data", run_data_params, run_data_n_params,
                     L->data_tmpl, L->data_ax);
    int data_clean = diag->n == d0;
    L->data = data ? data : L->root;
    L->shape_bad = !model_clean || !data_clean || !L->model;
    if (L->model && L->model->type == RUN_NODE_MAP && L->model_ax->n == 0 && model_clean)
        check_shape_now(L, data_clean);
}

/* An entry's `encodings:` selection into use_enc[0..encs.n). */
static void select_encodings(loader *L, const run_node *e, const char *ep, int *use_enc)
{
    const run_enc_list *encs = &L->encs;
    const run_node *sel = run_node_get(e, "encodings", NULL);
    for (size_t k = 0; k < encs->n; k++)
        use_enc[k] = sel == NULL;
    if (!sel)
        return;
    char kp[96];
    snprintf(kp, sizeof kp, "%s.encodings", ep);
    size_t ns = sel->type == RUN_NODE_SEQ ? sel->n : 1;
    for (size_t s = 0; s < ns; s++) {
        const run_node *sn = sel->type == RUN_NODE_SEQ ? sel->items[s] : sel;
        if (sn->type != RUN_NODE_SCALAR) {
            run_diag_add(&L->c, RUN_AT(sn), kp, "expected encoding names, got %s",
                         run_node_kind(sn));
            continue;
        }
        int found = 0;
        const char *names[64];
        size_t nn = 0;
        for (size_t k = 0; k < encs->n; k++) {
            if (!strcmp(encs->v[k].name, sn->text))
                found = 1, use_enc[k] = 1;
            if (nn < 64)
                names[nn++] = encs->v[k].name;
        }
        if (!found) {
            char buf[512];
            run_diag_add(&L->c, RUN_AT(sn), kp, "no encoding named '%s'%s", sn->text,
                         run_suggest(sn->text, names, nn, buf, sizeof buf));
        }
    }
}

/* The kind of entry e, or NULL after reporting. */
static const exp_kind *entry_kind(loader *L, const run_node *e, const char *ep)
{
    const run_node *kn = run_node_get(e, "kind", NULL);
    char kp[96], kname[64];
    snprintf(kp, sizeof kp, "%s.kind", ep);
    if (!kn) {
        run_diag_add(&L->c, RUN_AT(e), ep, "missing required key 'kind'");
        return NULL;
    }
    if (!run_scalar_str(&L->c, kn, kp, kname, sizeof kname))
        return NULL;
    const exp_kind *kind = exp_find(kname);
    if (!kind) {
        size_t nk;
        const exp_kind *const *kinds = exp_kinds(&nk);
        const char *kind_names[32];
        if (nk > 32)
            nk = 32;
        for (size_t i = 0; i < nk; i++)
            kind_names[i] = kinds[i]->name;
        char buf[512];
        run_suggest(kname, kind_names, nk, buf, sizeof buf);
        /* a close name is suggested; otherwise every kind from the registry */
        if (strstr(buf, "valid keys"))
            snprintf(buf, sizeof buf, "; known kinds: %s", exp_kind_names());
        run_diag_add(&L->c, RUN_AT(kn), kp, "unknown experiment kind '%s'%s", kname, buf);
    }
    return kind;
}

/* Experiment entry i: keys, kind, encodings, params; expanded when the
 * batch so far is clean. Returns 0 when out of memory. */
static int parse_experiment(loader *L, const run_node *e, size_t i, int *use_enc)
{
    run_pctx *c = &L->c;
    char ep[64], kp[96];
    snprintf(ep, sizeof ep, "experiments[%zu]", i);
    if (e->type != RUN_NODE_MAP) {
        run_diag_add(c, RUN_AT(e), ep, "expected a mapping {kind: ..., params: ...}, got %s",
                     run_node_kind(e));
        return 1;
    }
    for (size_t k = 0; k < e->n; k++) {
        int known = 0;
        for (size_t j = 0; j < RL_ARRAY_LEN(exp_entry_keys); j++)
            known |= !strcmp(e->keys[k], exp_entry_keys[j]);
        if (!known)
            run_unknown_key(c, e, k, ep, exp_entry_keys, RL_ARRAY_LEN(exp_entry_keys));
    }
    const exp_kind *kind = entry_kind(L, e, ep);
    if (!kind)
        return 1;
    select_encodings(L, e, ep, use_enc);
    json_t *params = json_object();
    run_axes *pax = calloc(1, sizeof *pax);
    if (!params || !pax) {
        json_decref(params);
        free(pax);
        c->oom = 1;
        return 0;
    }
    snprintf(kp, sizeof kp, "%s.params", ep);
    size_t before = c->diag->n;
    run_schema_parse(c, run_node_get(e, "params", NULL), kp, "params", kind->params,
                     kind->n_params, params, pax);
    /* the entry's own seeds (a value or a list) in place of the batch's
     * for its runs alone */
    run_batch *b = L->b;
    uint64_t seeds[RUN_MAX_SEEDS], seed = b->seed;
    uint32_t n_seeds = b->n_seeds;
    memcpy(seeds, b->seeds, sizeof seeds);
    const run_node *sn = run_node_get(e, "seed", NULL);
    if (sn) {
        snprintf(kp, sizeof kp, "%s.seed", ep);
        parse_seeds(c, sn, kp, seeds, &n_seeds, &seed);
    }
    if (!L->shape_bad && c->diag->n == before) {
        run_sections s = {.model_tmpl = L->model_tmpl, .model_ax = L->model_ax,
                          .data_tmpl = L->data_tmpl, .data_ax = L->data_ax,
                          .model_map = L->model, .data_node = L->data,
                          .data_map = run_node_get(L->root, "data", NULL), .encs = &L->encs};
        uint64_t keep[RUN_MAX_SEEDS], keep_seed = b->seed;
        uint32_t keep_n = b->n_seeds;
        memcpy(keep, b->seeds, sizeof keep);
        memcpy(b->seeds, seeds, sizeof seeds);
        b->n_seeds = n_seeds, b->seed = seed;
        run_expand_entry(c, b, &L->cap, &s, e, (uint32_t)i, kind, params, pax, use_enc);
        memcpy(b->seeds, keep, sizeof keep);
        b->n_seeds = keep_n, b->seed = keep_seed;
    }
    run_axes_free(pax);
    free(pax);
    json_decref(params);
    return 1;
}

static void parse_experiments(loader *L)
{
    const run_node *xl = run_node_get(L->root, "experiments", NULL);
    if (!xl)
        run_diag_add(&L->c, RUN_AT(L->root), "", "missing required key 'experiments' (a list of "
                     "{kind: ..., params: ...})");
    else if (xl->type != RUN_NODE_SEQ || xl->n == 0)
        run_diag_add(&L->c, RUN_AT(xl), "experiments",
                     "expected a non-empty list of experiments, got %s",
                     xl->type == RUN_NODE_SEQ ? "an empty list" : run_node_kind(xl));
    else if (xl->n > RUN_MAX_EXPERIMENTS) {
        run_diag_add(&L->c, RUN_AT(xl), "experiments",
                     "%zu experiments, more than the limit of %d per batch; split the batch",
                     xl->n, RUN_MAX_EXPERIMENTS);
        return;
    }
    int *use_enc = calloc(L->encs.n ? L->encs.n : 1, sizeof *use_enc);
    if (!use_enc) {
        L->c.oom = 1;
        return;
    }
    for (size_t i = 0; xl && xl->type == RUN_NODE_SEQ && i < xl->n; i++)
        if (!parse_experiment(L, xl->items[i], i, use_enc))
            break;
    free(use_enc);
}

/* Parses the (syntactically valid) document root into L->b's plan. */
static void parse_document(loader *L, const run_node *root)
{
    static const run_node empty = {.type = RUN_NODE_MAP, .line = 1, .col = 1};
    L->root = root ? root : &empty;
    L->model_tmpl = json_object();
    L->data_tmpl = json_object();
    L->model_ax = calloc(1, sizeof *L->model_ax);
    L->data_ax = calloc(1, sizeof *L->data_ax);
    if (!L->model_tmpl || !L->data_tmpl || !L->model_ax || !L->data_ax) {
        L->c.oom = 1;
        return;
    }
    if (L->root->type != RUN_NODE_MAP) {
        run_diag_add(&L->c, RUN_AT(L->root), "", "a batch file is a mapping (name:, model:, "
                     "experiments:, ...), got %s", run_node_kind(L->root));
        return;
    }
    parse_top(L);
    parse_sections(L);
    run_encodings_parse(&L->c, L->root, &L->encs);
    for (size_t k = 0; k < L->encs.n_sets; k++)
        if (!run_inputs_note(L->b, "encoding_set", L->encs.set_files[k], L->encs.set_files[k]))
            L->c.oom = 1;
    /* every encoding checked on its own, whatever else is wrong: against its
     * family's keys always, and created for the model when the model is
     * known (a swept model: per point, during expansion) */
    for (size_t k = 0; k < L->encs.n && !L->c.oom; k++)
        run_enc_check_all(&L->c, &L->encs.v[k], L->m_ok ? &L->m : NULL);
    if (!L->c.oom)
        parse_experiments(L);
}

static void loader_free(loader *L)
{
    run_enc_list_free(&L->encs);
    if (L->model_ax)
        run_axes_free(L->model_ax);
    if (L->data_ax)
        run_axes_free(L->data_ax);
    free(L->model_ax);
    free(L->data_ax);
    json_decref(L->model_tmpl);
    json_decref(L->data_tmpl);
    json_decref(L->c.enc_valid);
}

rl_status run_batch_parse(const char *name, const char *text, size_t len, const char *base_dir,
                          run_batch *b, run_diag *diag, rl_error *err)
{
    memset(b, 0, sizeof *b);
    memset(diag, 0, sizeof *diag);
    loader L = {.c = {.file = name, .base_dir = base_dir ? base_dir : ".", .diag = diag},
                .b = b};
    rl_status st = batch_init(b, name, text, len, L.c.base_dir, err);
    if (st)
        return st;
    run_node *root = NULL;
    rl_error perr = {0};
    if (run_yaml_parse(name, text, len, &root, &perr))
        return syntax_error(b, diag, &perr, err);
    parse_document(&L, root);
    loader_free(&L);
    run_node_free(root);
    if (L.c.oom) {
        run_batch_free(b);
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory while loading %s", name);
    }
    if (diag->n) {
        run_batch_free(b);
        return rl_fail(err, RL_ERR_PARSE, "%s: %zu error(s)", name, diag->n);
    }
    return RL_OK;
}

rl_status run_batch_load(const char *path, run_batch *b, run_diag *diag, rl_error *err)
{
    memset(b, 0, sizeof *b);
    memset(diag, 0, sizeof *diag);
    char *text = NULL;
    size_t len = 0;
    rl_status st = run_read_file(path, 16u << 20, &text, &len, err);
    if (st)
        return st;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    st = run_batch_parse(path, text, len, dir, b, diag, err);
    free(text);
    return st;
}

void run_batch_free(run_batch *b)
{
    for (size_t i = 0; i < b->n_items; i++) {
        json_decref(b->items[i].resolved);
        json_decref(b->items[i].swept);
        json_decref(b->items[i].enc_params);
    }
    free(b->items);
    free(b->text);
    json_decref(b->swept_keys);
    json_decref(b->inputs);
    json_decref(b->input_seen);
    json_decref(b->item_seen);
    memset(b, 0, sizeof *b);
}
