/* run_capture.c — capture files of scripts/capture_qk.py: one .safetensors
 * (read by core/rl_safetensors.c, the one reader) with pre-rotation Q/K/V
 * of some layers of a model on one text, and __metadata__ describing them.
 * Everything the runner takes from such a file is checked here against the
 * file itself (docs/runner.md, "The capture source"). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_int.h"

void run_capture_close(run_capture *c)
{
    rl_safetensors_close(&c->st);
    memset(c, 0, sizeof *c);
}

/* A metadata value that must be a decimal integer in [1, max]. */
static rl_status meta_u64(const run_capture *c, const char *key, uint64_t max, uint64_t *v,
                          rl_error *err)
{
    const char *s = rl_safetensors_meta(&c->st, key);
    if (!s)
        return rl_fail(err, RL_ERR_PARSE, "%s: corrupted capture metadata: key '%s' is missing",
                       c->path, key);
    uint64_t x = 0;
    int ok = s[0] != '\0';
    for (const char *p = s; *p && ok; p++) {
        ok = *p >= '0' && *p <= '9' && x <= (max - (uint64_t)(*p - '0')) / 10;
        x = x * 10 + (uint64_t)(*p - '0');
    }
    if (!ok || x == 0)
        return rl_fail(err, RL_ERR_PARSE, "%s: corrupted capture metadata: key '%s' is '%.40s' "
                       "(a decimal integer 1..%llu expected)", c->path, key, s,
                       (unsigned long long)max);
    *v = x;
    return RL_OK;
}

/* "0,5,31": strictly increasing decimal layer indices. */
static rl_status parse_layers(run_capture *c, rl_error *err)
{
    const char *s = rl_safetensors_meta(&c->st, "layers");
    if (!s)
        return rl_fail(err, RL_ERR_PARSE, "%s: corrupted capture metadata: key 'layers' is "
                       "missing", c->path);
    const char *p = s;
    while (*p) {
        uint64_t x = 0;
        const char *d0 = p;
        while (*p >= '0' && *p <= '9' && x < (1u << 20))
            x = x * 10 + (uint64_t)(*p++ - '0');
        if (p == d0 || x >= (1u << 20) || (*p && *p != ',') || (*p == ',' && !p[1]) ||
            c->n_layers == RUN_CAPTURE_MAX_LAYERS ||
            (c->n_layers && x <= c->layers[c->n_layers - 1]))
            return rl_fail(err, RL_ERR_PARSE, "%s: corrupted capture metadata: key 'layers' is "
                           "'%.80s' (increasing layer indices separated by commas, at most %d, "
                           "expected)", c->path, s, RUN_CAPTURE_MAX_LAYERS);
        c->layers[c->n_layers++] = (uint32_t)x;
        if (*p == ',')
            p++;
    }
    if (!c->n_layers)
        return rl_fail(err, RL_ERR_PARSE, "%s: corrupted capture metadata: key 'layers' is "
                       "empty", c->path);
    return RL_OK;
}

/* Tensor name of which ('q', 'k', 'v', 0: positions) of layer into buf. */
static const char *tensor_name(char which, uint32_t layer, char *buf, size_t cap)
{
    if (!which)
        snprintf(buf, cap, "positions");
    else
        snprintf(buf, cap, "layer.%u.%c", layer, which);
    return buf;
}

/* The tensor must exist with the shape the metadata describes and the
 * stored dtype. */
static rl_status check_tensor(const run_capture *c, char which, uint32_t layer, const char *dtype,
                              rl_error *err)
{
    char name[64];
    tensor_name(which, layer, name, sizeof name);
    const rl_st_tensor *t = rl_safetensors_find(&c->st, name);
    if (!t)
        return rl_fail(err, RL_ERR_PARSE, "%s: corrupted capture: metadata lists layer %u but "
                       "there is no tensor '%s'", c->path, layer, name);
    uint64_t want[3] = {c->tokens, which == 'q' ? c->heads : c->kv_heads, c->head_dim};
    uint32_t rank = which ? 3 : 1;
    int ok = t->rank == rank && !strcmp(t->dtype, dtype);
    for (uint32_t i = 0; ok && i < rank; i++)
        ok = t->shape[i] == want[i];
    if (!ok) {
        char got[96] = "", need[96] = "";
        for (uint32_t i = 0; i < t->rank && i < 3; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%llu", i ? ", " : "",
                     (unsigned long long)t->shape[i]);
        for (uint32_t i = 0; i < rank; i++)
            snprintf(need + strlen(need), sizeof need - strlen(need), "%s%llu", i ? ", " : "",
                     (unsigned long long)want[i]);
        return rl_fail(err, RL_ERR_PARSE, "%s: corrupted capture: tensor '%s' is %s [%s%s] but "
                       "the metadata (tokens, %s, head_dim, dtype) says %s [%s]", c->path, name,
                       t->dtype, got, t->rank > 3 ? ", ..." : "",
                       which == 'q' ? "heads" : "kv_heads", dtype, need);
    }
    return RL_OK;
}

rl_status run_capture_open(const char *path, run_capture *c, rl_error *err)
{
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", path);
    rl_status st = rl_safetensors_open(path, &c->st, err);
    if (st)
        return st;
    const char *ver = rl_safetensors_meta(&c->st, "ropelab_capture");
    if (!ver) {
        st = rl_fail(err, RL_ERR_PARSE, "%s: not a ropelab capture (no __metadata__ key "
                     "'ropelab_capture'; write it with scripts/capture_qk.py, or use source "
                     "safetensors with tensor names)", path);
        goto fail;
    }
    if (strcmp(ver, RUN_CAPTURE_VERSION)) {
        st = rl_fail(err, RL_ERR_UNSUPPORTED, "%s: capture format version '%.20s'; this ropelab "
                     "reads version %s", path, ver, RUN_CAPTURE_VERSION);
        goto fail;
    }
    uint64_t v;
    if ((st = meta_u64(c, "tokens", (uint64_t)1 << 30, &c->tokens, err)) ||
        (st = meta_u64(c, "heads", 4096, &v, err)))
        goto fail;
    c->heads = (uint32_t)v;
    if ((st = meta_u64(c, "kv_heads", 4096, &v, err)))
        goto fail;
    c->kv_heads = (uint32_t)v;
    if ((st = meta_u64(c, "head_dim", ROPE_MAX_HEAD_DIM, &v, err)))
        goto fail;
    c->head_dim = (uint32_t)v;
    if (c->heads % c->kv_heads) {
        st = rl_fail(err, RL_ERR_PARSE, "%s: corrupted capture metadata: kv_heads %u does not "
                     "divide heads %u", path, c->kv_heads, c->heads);
        goto fail;
    }
    const char *dt = rl_safetensors_meta(&c->st, "dtype");
    static const char *const dtypes[][2] = {{"fp32", "F32"}, {"fp16", "F16"}, {"bf16", "BF16"}};
    const char *sdt = NULL;
    for (size_t i = 0; dt && i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (!strcmp(dt, dtypes[i][0]))
            sdt = dtypes[i][1];
    if (!sdt) {
        st = rl_fail(err, RL_ERR_PARSE, "%s: corrupted capture metadata: key 'dtype' is '%.20s' "
                     "(fp32, fp16 or bf16 expected)", path, dt ? dt : "(missing)");
        goto fail;
    }
    c->model_id = rl_safetensors_meta(&c->st, "model_id");
    c->config_json = rl_safetensors_meta(&c->st, "config_json");
    if (!c->model_id || !c->config_json) {
        st = rl_fail(err, RL_ERR_PARSE, "%s: corrupted capture metadata: key '%s' is missing",
                     path, c->model_id ? "config_json" : "model_id");
        goto fail;
    }
    if ((st = parse_layers(c, err)))
        goto fail;
    for (uint32_t i = 0; i < c->n_layers; i++)
        for (const char *w = "qkv"; *w; w++)
            if ((st = check_tensor(c, *w, c->layers[i], sdt, err)))
                goto fail;
    /* positions: the runner attends rows 0..N-1 at positions 0..N-1, so the
     * capture must have been made at exactly those positions */
    const rl_st_tensor *pt = rl_safetensors_find(&c->st, "positions");
    if (!pt || pt->rank != 1 || pt->shape[0] != c->tokens ||
        (strcmp(pt->dtype, "I64") && strcmp(pt->dtype, "I32"))) {
        st = rl_fail(err, RL_ERR_PARSE, "%s: corrupted capture: tensor 'positions' must be I64 "
                     "or I32 [%llu] (metadata tokens)", path, (unsigned long long)c->tokens);
        goto fail;
    }
    int64_t *pos = malloc(c->tokens * sizeof *pos);
    if (!pos) {
        st = rl_fail(err, RL_ERR_NOMEM, "%s: out of host memory for %llu positions", path,
                     (unsigned long long)c->tokens);
        goto fail;
    }
    st = rl_safetensors_read_i64(&c->st, pt, 0, c->tokens, pos, err);
    for (uint64_t i = 0; !st && i < c->tokens; i++)
        if (pos[i] != (int64_t)i)
            st = rl_fail(err, RL_ERR_UNSUPPORTED, "%s: token %llu was captured at position "
                         "%lld; ropelab attends a capture at positions 0..N-1, so the capture "
                         "must start at position 0 with consecutive positions", path,
                         (unsigned long long)i, (long long)pos[i]);
    free(pos);
    if (st)
        goto fail;
    return RL_OK;
fail:
    run_capture_close(c);
    return st;
}

rl_status run_capture_has_layer(const run_capture *c, uint32_t layer, rl_error *err)
{
    char list[512] = "";
    for (uint32_t i = 0; i < c->n_layers; i++) {
        if (c->layers[i] == layer)
            return RL_OK;
        size_t n = strlen(list);
        if (n + 16 < sizeof list)
            snprintf(list + n, sizeof list - n, "%s%u", i ? ", " : "", c->layers[i]);
    }
    return rl_fail(err, RL_ERR_ARG, "%s: layer %u was not captured; captured layers: %s", c->path,
                   layer, list);
}

const rl_st_tensor *run_capture_tensor(const run_capture *c, uint32_t layer, char which)
{
    char name[64];
    return rl_safetensors_find(&c->st, tensor_name(which, layer, name, sizeof name));
}
