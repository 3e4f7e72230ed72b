/* The encoding registry: the family table (one line per encoding),
 * parameter resolution, and the dispatch of each operation to the family. */
#include "pe/pe.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_npy.h"
#include "verify/vf.h"
#include "pe_add.spv.h"
#include "pe/pe_families.h" /* generated from src/pe/meson.build */
#include "rl_push.h"

/* The registry, generated from the one list in src/pe/meson.build (adding
 * an encoding = one src/pe/<name>.c defining pe_family_<name> + one line
 * there). */
#define X(name) extern const pe_family pe_family_##name;
PE_FAMILY_LIST(X)
#undef X
#define X(name) &pe_family_##name,
static const pe_family *const families[] = {PE_FAMILY_LIST(X)};
#undef X

struct pe_encoding {
    const pe_family *fam;
    json_t *params;  /* resolved, owned */
    pe_shape shape;  /* resolved */
    void *state;     /* the family's, freed by ops.destroy */
};

size_t pe_family_count(void) { return RL_ARRAY_LEN(families); }

const pe_family *pe_family_at(size_t i)
{
    return i < RL_ARRAY_LEN(families) ? families[i] : NULL;
}

const pe_family *pe_family_find(const char *name)
{
    for (size_t i = 0; i < RL_ARRAY_LEN(families); i++)
        if (strcmp(families[i]->name, name) == 0)
            return families[i];
    return NULL;
}

const char *pe_family_names(void)
{
    /* ", nope, rope, ..." at compile time from the same list; skip the first ", ". */
#define X(name) ", " #name
    static const char names[] = PE_FAMILY_LIST(X);
#undef X
    return names + 2;
}

const char *pe_bias_variant(const pe_family *fam)
{
    return (fam->acts & PE_ACTS_LOGITS) ? fam->name : "none";
}

rl_status pe_params_resolve(const pe_family *fam, const json_t *params, json_t **out,
                            rl_error *err)
{
    size_t n;
    const pe_param *ps = pe_family_params(fam, &n);
    return rl_params_resolve(fam->name, ps, n, params, out, err);
}

const pe_param *pe_family_params(const pe_family *fam, size_t *n)
{
    if (fam->params_table)
        return fam->params_table(n);
    *n = fam->n_params;
    return fam->params;
}

rl_status pe_set_parse(json_t *obj, const char *kv, rl_error *err)
{
    const char *eq = strchr(kv, '=');
    if (!eq)
        return rl_fail(err, RL_ERR_ARG, "--set '%s': expected key=value", kv);
    if (eq == kv)
        return rl_fail(err, RL_ERR_ARG, "--set '%s': empty key", kv);
    char key[128];
    if ((size_t)(eq - kv) >= sizeof key)
        return rl_fail(err, RL_ERR_ARG, "--set '%s': key too long", kv);
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = '\0';
    json_error_t je;
    json_t *v = json_loads(eq + 1, JSON_DECODE_ANY, &je);
    if (!v)
        v = json_string(eq + 1);
    if (!v)
        return rl_fail(err, RL_ERR_ARG, "--set '%s': value is not valid UTF-8", kv);
    json_object_set_new(obj, key, v);
    return RL_OK;
}

/* ---- encodings ------------------------------------------------------------- */

rl_status pe_encoding_create(const char *name, const json_t *params, const pe_shape *shape,
                             pe_encoding **out, rl_error *err)
{
    *out = NULL;
    const pe_family *fam = pe_family_find(name);
    if (!fam)
        return rl_fail(err, RL_ERR_ARG, "unknown encoding '%s' (known: %s)", name,
                       pe_family_names());
    pe_shape s = *shape;
    if (s.head_dim == 0)
        return rl_fail(err, RL_ERR_ARG, "%s: head_dim must be at least 1", name);
    if (s.heads == 0)
        s.heads = 1;
    if (s.kv_heads == 0)
        s.kv_heads = s.heads;
    if (s.kv_heads > s.heads || s.heads % s.kv_heads)
        return rl_fail(err, RL_ERR_ARG, "%s: kv_heads %u must divide heads %u", name, s.kv_heads,
                       s.heads);
    if (s.seed == 0)
        s.seed = 1;
    pe_encoding *e = calloc(1, sizeof *e);
    if (!e)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    e->fam = fam;
    e->shape = s;
    rl_status st = pe_params_resolve(fam, params, &e->params, err);
    if (!st && fam->ops.create)
        st = fam->ops.create(e, err);
    if (st) {
        pe_encoding_destroy(e);
        return st;
    }
    *out = e;
    return RL_OK;
}

void pe_encoding_destroy(pe_encoding *e)
{
    if (!e)
        return;
    if (e->fam->ops.destroy)
        e->fam->ops.destroy(e);
    json_decref(e->params);
    free(e);
}

const pe_family *pe_encoding_family(const pe_encoding *e) { return e->fam; }
const json_t *pe_encoding_params(const pe_encoding *e) { return e->params; }
const pe_shape *pe_encoding_shape(const pe_encoding *e) { return &e->shape; }
int pe_has_vectors(const pe_encoding *e) { return (e->fam->acts & PE_ACTS_VECTORS) != 0; }
int pe_has_bias(const pe_encoding *e) { return (e->fam->acts & PE_ACTS_LOGITS) != 0; }
void pe_encoding_set_state(pe_encoding *e, void *state) { e->state = state; }
void *pe_encoding_state(const pe_encoding *e) { return e->state; }

static json_t *param(const pe_encoding *e, const char *key)
{
    json_t *v = json_object_get(e->params, key);
    assert(v && "parameter not declared by the family");
    return v;
}

int64_t pe_param_int(const pe_encoding *e, const char *key)
{
    return (int64_t)json_integer_value(param(e, key));
}
double pe_param_num(const pe_encoding *e, const char *key)
{
    return json_number_value(param(e, key));
}
int pe_param_bool(const pe_encoding *e, const char *key)
{
    return json_is_true(param(e, key));
}
const char *pe_param_str(const pe_encoding *e, const char *key)
{
    return json_string_value(param(e, key));
}

void pe_param_set_int(pe_encoding *e, const char *key, int64_t v)
{
    json_object_set_new(e->params, key, json_integer((json_int_t)v));
}

void pe_param_set_json(pe_encoding *e, const char *key, json_t *v)
{
    json_object_set_new(e->params, key, v);
}

void pe_rng_seed(const pe_encoding *e, const char *tensor, rl_rng *rng)
{
    char stream[128];
    snprintf(stream, sizeof stream, "%s/%s", e->fam->name, tensor);
    rl_rng_seed(rng, e->shape.seed, stream);
}

rl_status pe_load_npy(const pe_encoding *e, const char *key, const char *path,
                      const uint64_t *want, uint32_t ndim, int merge_ok, rl_npy *out,
                      rl_error *err)
{
    rl_status st = rl_npy_load(path, out, err);
    if (st) {
        rl_error_prefix(err, "%s: %s", e->fam->name, key);
        rl_error_set_key(err, key);
        return st;
    }
    int ok = out->ndim == ndim;
    for (uint32_t i = 0; ok && i < ndim; i++)
        ok = out->shape[i] == want[i];
    if (!ok && merge_ok && ndim >= 2 && out->ndim == ndim - 1 &&
        out->shape[0] == want[0] * want[1]) {
        ok = 1;
        for (uint32_t i = 1; ok && i < out->ndim; i++)
            ok = out->shape[i] == want[i + 1];
    }
    if (!ok) {
        char got[128] = "", exp[128] = "";
        size_t a = 0, b = 0;
        for (uint32_t i = 0; i < out->ndim; i++)
            a += (size_t)snprintf(got + a, sizeof got - a, "%s%llu", i ? ", " : "",
                                  (unsigned long long)out->shape[i]);
        for (uint32_t i = 0; i < ndim; i++)
            b += (size_t)snprintf(exp + b, sizeof exp - b, "%s%llu", i ? ", " : "",
                                  (unsigned long long)want[i]);
        rl_npy_free(out);
        return rl_fail_key(err, RL_ERR_ARG, key, "%s: %s: %s has shape (%s), expected (%s)",
                           e->fam->name, key, path, got, exp);
    }
    return RL_OK;
}

/* ---- vector transform -------------------------------------------------------- */

rl_status pe_vec_check(const pe_encoding *e, const uint32_t *pos, size_t tokens, rl_error *err)
{
    return e->fam->ops.vec_check ? e->fam->ops.vec_check(e, pos, tokens, err) : RL_OK;
}

rl_status pe_vec_ref(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                     uint32_t heads, double *y, rl_error *err)
{
    return pe_vec_ref_role(e, PE_ROLE_Q, x, pos, tokens, heads, y, err);
}

json_t *pe_rope_twin(const pe_encoding *e)
{
    return e->fam->ops.rope_twin ? e->fam->ops.rope_twin(e) : NULL;
}

int pe_vec_qk_differ(const pe_encoding *e) { return e->fam->ops.vec_ref_k != NULL; }

rl_status pe_vec_ref_role(const pe_encoding *e, pe_role role, const float *x, const uint32_t *pos,
                          size_t tokens, uint32_t heads, double *y, rl_error *err)
{
    rl_status st = pe_vec_check(e, pos, tokens, err);
    if (st)
        return st;
    if (role == PE_ROLE_K && e->fam->ops.vec_ref_k) {
        e->fam->ops.vec_ref_k(e, x, pos, tokens, heads, y);
    } else if (e->fam->ops.vec_ref) {
        e->fam->ops.vec_ref(e, x, pos, tokens, heads, y);
    } else {
        size_t n = tokens * heads * e->shape.head_dim;
        for (size_t i = 0; i < n; i++)
            y[i] = x[i];
    }
    return RL_OK;
}

void pe_vec_bound(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                  uint32_t heads, double *bound, double *scale)
{
    pe_vec_bound_role(e, PE_ROLE_Q, x, pos, tokens, heads, bound, scale);
}

void pe_vec_bound_role(const pe_encoding *e, pe_role role, const float *x, const uint32_t *pos,
                       size_t tokens, uint32_t heads, double *bound, double *scale)
{
    if (role == PE_ROLE_K && e->fam->ops.vec_bound_k) {
        e->fam->ops.vec_bound_k(e, x, pos, tokens, heads, bound, scale);
        return;
    }
    if (e->fam->ops.vec_bound) {
        e->fam->ops.vec_bound(e, x, pos, tokens, heads, bound, scale);
        return;
    }
    size_t n = tokens * heads * e->shape.head_dim;
    for (size_t i = 0; i < n; i++) { /* identity: a copy must be bit-exact */
        bound[i] = 0;
        scale[i] = fabs(x[i]);
    }
}

rl_status pe_vec_gpu_create(rlvk_device *dev, const pe_encoding *e, uint32_t heads,
                            pe_vec_gpu *g, rl_error *err)
{
    return pe_vec_gpu_create_role(dev, e, heads, PE_ROLE_Q, g, err);
}

rl_status pe_vec_gpu_create_role(rlvk_device *dev, const pe_encoding *e, uint32_t heads,
                                 pe_role role, pe_vec_gpu *g, rl_error *err)
{
    memset(g, 0, sizeof *g);
    g->role = role;
    g->dev = dev;
    g->e = e;
    g->heads = heads ? heads : 1;
    rl_status st = e->fam->ops.vec_gpu_create
                       ? e->fam->ops.vec_gpu_create(g, err)
                       : pe_add_create(g, PE_ADD_IDENTITY, 0, 0, 0.0f, NULL, 0, err);
    if (st)
        pe_vec_gpu_destroy(g);
    return st;
}

rl_status pe_vec_gpu_prepare(pe_vec_gpu *g, const uint32_t *pos, uint64_t tokens,
                             rl_error *err)
{
    return g->e->fam->ops.vec_gpu_prepare ? g->e->fam->ops.vec_gpu_prepare(g, pos, tokens, err)
                                          : RL_OK;
}

rl_status pe_vec_gpu_record(rlvk_cmd *cmd, pe_vec_gpu *g, const rlvk_buffer *x,
                            const rlvk_buffer *y, const rlvk_buffer *pos, uint64_t tokens,
                            rl_error *err)
{
    if (tokens == 0)
        return rl_fail(err, RL_ERR_ARG, "tokens must be at least 1 (got 0)");
    uint64_t elems = tokens * g->heads * g->e->shape.head_dim;
    if (elems > UINT32_MAX)
        return rl_fail(err, RL_ERR_LIMIT,
                       "%llu tokens x %u heads x %u dims exceeds the kernel's 32-bit element index",
                       (unsigned long long)tokens, g->heads, g->e->shape.head_dim);
    if (g->e->fam->ops.vec_gpu_record)
        return g->e->fam->ops.vec_gpu_record(cmd, g, x, y, pos, tokens, err);
    return pe_add_record(cmd, g, x, y, pos, tokens, err);
}

void pe_vec_gpu_destroy(pe_vec_gpu *g)
{
    if (!g->e)
        return;
    if (g->e->fam->ops.vec_gpu_destroy)
        g->e->fam->ops.vec_gpu_destroy(g);
    else
        pe_add_destroy(g);
    g->impl = NULL;
}

rl_status pe_vec_gpu_apply(rlvk_device *dev, pe_vec_gpu *g, const float *x, const uint32_t *pos,
                           uint64_t tokens, float *y, int *guard_ok, rl_error *err)
{
    rl_status st = pe_vec_check(g->e, pos, tokens, err);
    if (st)
        return st;
    uint64_t n = tokens * g->heads * g->e->shape.head_dim, bytes = n * sizeof(float);
    rlvk_buffer bx = {0}, by = {0}, bp = {0};
    rlvk_cmd cmd = {0};
    if ((st = rlvk_check_buffer_size(dev, bytes + VF_GUARD_BYTES, "the Q/K tensor", err)) ||
        (st = rlvk_buffer_create(dev, bytes, "x", &bx, err)) ||
        (st = vf_guarded_create(dev, bytes, "y", &by, err)) ||
        (st = rlvk_buffer_create(dev, tokens * sizeof(uint32_t), "positions", &bp, err)) ||
        (st = rlvk_buffer_upload(dev, &bx, 0, x, bytes, err)) ||
        (st = rlvk_buffer_upload(dev, &bp, 0, pos, tokens * sizeof(uint32_t), err)) ||
        (st = pe_vec_gpu_prepare(g, pos, tokens, err)) ||
        (st = rlvk_cmd_begin(dev, 2, &cmd, err)) ||
        (st = pe_vec_gpu_record(&cmd, g, &bx, &by, &bp, tokens, err)) ||
        (st = rlvk_cmd_submit_wait(&cmd, err)) ||
        (st = vf_guarded_download(dev, &by, bytes, y, guard_ok, err)))
        goto done;
done:
    rlvk_cmd_destroy(&cmd);
    rlvk_buffer_destroy(dev, &bp);
    rlvk_buffer_destroy(dev, &by);
    rlvk_buffer_destroy(dev, &bx);
    return st;
}

/* ---- pe_add.comp (identity, sinusoid, table) --------------------------------- */

_Static_assert(sizeof(struct rl_pe_add_push) == 16, "rl_pe_add_push layout");
_Static_assert(offsetof(struct rl_pe_add_push, group_base) == 0, "group_base first");
_Static_assert(offsetof(struct rl_pe_add_push, alpha) == 8, "rl_pe_add_push layout");

rl_status pe_add_create(pe_vec_gpu *g, uint32_t mode, uint32_t policy, uint32_t table_rows,
                        float alpha, const float *aux, uint64_t aux_floats, rl_error *err)
{
    pe_add_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    g->impl = k;
    k->mode = mode;
    k->policy = policy;
    k->table_rows = table_rows;
    k->alpha = alpha;
    uint32_t spec[4] = {mode, g->e->shape.head_dim, g->heads, policy};
    char name[48];
    snprintf(name, sizeof name, "pe_add_m%u_d%u_h%u", mode, g->e->shape.head_dim, g->heads);
    rlvk_pipeline_desc pd = {
        .name = name,
        .spirv = rl_spv_pe_add,
        .spirv_bytes = sizeof rl_spv_pe_add,
        .n_bindings = 4,
        .push_bytes = sizeof(struct rl_pe_add_push),
        .local_size_x = 64,
        .n_spec = 4,
        .spec = spec,
    };
    rl_status st = rlvk_pipeline_create(g->dev, &pd, &k->pipe, err);
    if (st)
        return st;
    uint64_t bytes = (aux_floats ? aux_floats : 1) * sizeof(float);
    if ((st = rlvk_check_buffer_size(g->dev, bytes, "the encoding's table", err)) ||
        (st = rlvk_buffer_create(g->dev, bytes, "pe table", &k->aux, err)))
        return st;
    if (aux_floats)
        st = rlvk_buffer_upload(g->dev, &k->aux, 0, aux, bytes, err);
    return st;
}

rl_status pe_add_record(rlvk_cmd *cmd, pe_vec_gpu *g, const rlvk_buffer *x, const rlvk_buffer *y,
                        const rlvk_buffer *pos, uint64_t tokens, rl_error *err)
{
    pe_add_kernel *k = g->impl;
    struct rl_pe_add_push p = {
        .group_base = 0,
        .n_elems = (uint32_t)(tokens * g->heads * g->e->shape.head_dim),
        .alpha = k->alpha,
        .table_rows = k->table_rows,
    };
    const rlvk_buffer *bufs[4] = {x, y, pos, &k->aux};
    return rlvk_cmd_dispatch(cmd, &k->pipe, bufs, &p,
                             rlvk_groups(p.n_elems, k->pipe.local_size_x), err);
}

void pe_add_destroy(pe_vec_gpu *g)
{
    pe_add_kernel *k = g->impl;
    if (!k)
        return;
    rlvk_pipeline_destroy(g->dev, &k->pipe);
    rlvk_buffer_destroy(g->dev, &k->aux);
    free(k);
    g->impl = NULL;
}

/* ---- logit bias ----------------------------------------------------------------- */

rl_status pe_bias_gpu_create(rlvk_device *dev, const pe_encoding *e, const float *q,
                             const float *k, uint64_t tokens, uint32_t heads, uint32_t kv_heads,
                             uint32_t head_dim, pe_bias_gpu *out, rl_error *err)
{
    memset(out, 0, sizeof *out);
    out->variant = pe_bias_variant(e->fam);
    if (heads != e->shape.heads || (kv_heads ? kv_heads : heads) != e->shape.kv_heads ||
        head_dim != e->shape.head_dim)
        return rl_fail(err, RL_ERR_ARG,
                       "%s: bias prepared for heads %u, kv_heads %u, head_dim %u but the encoding "
                       "was created for %u, %u, %u",
                       e->fam->name, heads, kv_heads, head_dim, e->shape.heads, e->shape.kv_heads,
                       e->shape.head_dim);
    if (!e->fam->ops.bias_gpu_create)
        return RL_OK;
    rl_status st = e->fam->ops.bias_gpu_create(dev, e, q, k, tokens, out, err);
    if (st)
        pe_bias_gpu_destroy(dev, out);
    return st;
}

void pe_bias_gpu_destroy(rlvk_device *dev, pe_bias_gpu *b)
{
    for (uint32_t i = 0; i < 4; i++)
        rlvk_buffer_destroy(dev, &b->buffers[i]);
    b->n_buffers = 0;
}

double pe_bias_ref(const pe_encoding *e, uint32_t h, uint64_t qtok, uint64_t ktok, int64_t qpos,
                   int64_t kpos, const float *q_i, const float *k_j)
{
    return e->fam->ops.bias_ref ? e->fam->ops.bias_ref(e, h, qtok, ktok, qpos, kpos, q_i, k_j) : 0.0;
}

/* q_i and k_j of (h, qtok, ktok) in the raw arrays of ctx. */
static void bias_operands(const pe_bias_ref_ctx *c, uint32_t h, uint64_t qtok, uint64_t ktok,
                          const float **qi, const float **kj)
{
    const pe_shape *s = &c->e->shape;
    *qi = c->q ? c->q + (qtok * s->heads + h) * s->head_dim : NULL;
    *kj = c->k ? c->k + (ktok * s->kv_heads + h / (s->heads / s->kv_heads)) * s->head_dim : NULL;
}

double pe_bias_ref_cb(void *ctx, uint32_t h, uint64_t qtok, uint64_t ktok, int64_t qpos,
                      int64_t kpos)
{
    const pe_bias_ref_ctx *c = ctx;
    const float *qi, *kj;
    bias_operands(c, h, qtok, ktok, &qi, &kj);
    return pe_bias_ref(c->e, h, qtok, ktok, qpos, kpos, qi, kj);
}

double pe_bias_bound_cb(void *ctx, uint32_t h, uint64_t qtok, uint64_t ktok, int64_t qpos,
                        int64_t kpos)
{
    const pe_bias_ref_ctx *c = ctx;
    const float *qi, *kj;
    bias_operands(c, h, qtok, ktok, &qi, &kj);
    return pe_bias_bound(c->e, h, qtok, ktok, qpos, kpos, qi, kj);
}

double pe_bias_bound(const pe_encoding *e, uint32_t h, uint64_t qtok, uint64_t ktok,
                     int64_t qpos, int64_t kpos, const float *q_i, const float *k_j)
{
    return e->fam->ops.bias_bound ? e->fam->ops.bias_bound(e, h, qtok, ktok, qpos, kpos, q_i, k_j)
                                  : 0.0;
}

rl_status pe_buffer_from(rlvk_device *dev, const char *name, const void *data, uint64_t bytes,
                         rlvk_buffer *buf, rl_error *err)
{
    rl_status st;
    if ((st = rlvk_check_buffer_size(dev, bytes, name, err)) ||
        (st = rlvk_buffer_create(dev, bytes, name, buf, err)) ||
        (st = rlvk_buffer_upload(dev, buf, 0, data, bytes, err)))
        return st;
    return RL_OK;
}

/* ---- shared formulas ------------------------------------------------------------- */

double pe_sinusoid_inv_freq(uint32_t i, uint32_t d, double base)
{
    return pow(base, -2.0 * (double)i / (double)d);
}

double pe_fp32_trig_err(double phi)
{
    return fabs(phi) * 0x1p-23 + 0x1p-11;
}
