/* The encoding registry's `ropelab check` cases: every encoding's vector
 * transform element-wise against its CPU reference (pe_vec_ref, bound from
 * the family's pe_vec_bound), and every logit bias by evaluating its GLSL
 * rl_bias (shaders/bias_NAME.glsl inside bias_eval.comp) over a grid of
 * (h, i, j) with positions up to 2^max_pos_log2 against pe_bias_ref, with
 * the family's per-point bound (pe_bias_bound). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/chk.h"
#include "core/rl_util.h"
#include "pe/pe.h"
#include "rl_push.h"
/* embedded SPIR-V (after <stdint.h>) */
#include "bias_eval_variants.spv.h"

/* bias_eval.comp per registry bias, generated (src/pe/meson.build). */
typedef struct eval_variant {
    const char *name;
    const uint32_t *spv;
    size_t bytes;
} eval_variant;
#define EVAL_VARIANT(n) {#n, rl_spv_bias_eval_##n, sizeof rl_spv_bias_eval_##n},
static const eval_variant eval_variants[] = {RL_BIAS_EVAL_VARIANTS(EVAL_VARIANT)};

_Static_assert(sizeof(struct rl_bias_eval_push) == 8, "rl_bias_eval_push layout");
_Static_assert(offsetof(struct rl_bias_eval_push, group_base) == 0, "group_base first");

/* ---- vector transforms ----------------------------------------------------- */

static rl_status make_encoding(const char *name, const char *params_json, const pe_shape *shape,
                               pe_encoding **e, rl_error *err)
{
    json_error_t je;
    json_t *p = json_loads(params_json, 0, &je);
    if (!p)
        return rl_fail(err, RL_ERR_PARSE, "check case %s: bad params %s", name, params_json);
    rl_status st = pe_encoding_create(name, p, shape, e, err);
    json_decref(p);
    return st;
}

static rl_status run_vec_case(rlvk_device *dev, const pe_family *fam, const pe_check_case *c,
                              pe_role role, const chk_options *opt, chk_report *report,
                              rl_error *err)
{
    uint32_t k = opt->max_pos_log2 ? opt->max_pos_log2 : 20;
    uint32_t pmax = c->pos_cap_log2 ? (1u << c->pos_cap_log2) - 1 : 1u << k;
    pe_shape shape = {.head_dim = c->head_dim, .heads = c->heads, .seed = opt->seed ? opt->seed : 1};
    pe_encoding *e = NULL;
    rl_status st = make_encoding(fam->name, c->params, &shape, &e, err);
    if (st)
        return st;
    chk_row row = {0};
    if (pe_vec_qk_differ(e))
        snprintf(row.kernel, sizeof row.kernel, "pe/%s/%s", c->label,
                 role == PE_ROLE_K ? "k" : "q");
    else
        snprintf(row.kernel, sizeof row.kernel, "pe/%s", c->label);
    if (c->pos_cap_log2)
        snprintf(row.shape, sizeof row.shape, "T=%u H=%u D=%u pos<=%u", c->tokens, c->heads,
                 c->head_dim, pmax);
    else
        snprintf(row.shape, sizeof row.shape, "T=%u H=%u D=%u pos<=2^%u", c->tokens, c->heads,
                 c->head_dim, k);
    snprintf(row.tolerance, sizeof row.tolerance, "family bound (pe_vec_bound; 0: bit-exact)");
    int run;
    if ((st = chk_case_begin(opt, report, &row, &run, err)) || !run) {
        pe_encoding_destroy(e);
        return st;
    }
    size_t n = (size_t)c->tokens * c->heads * c->head_dim;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *ref = malloc(n * sizeof *ref), *bound = malloc(n * sizeof *bound),
           *scale = malloc(n * sizeof *scale);
    uint32_t *pos = malloc(c->tokens * sizeof *pos);
    pe_vec_gpu g = {0};
    if (!x || !y || !ref || !bound || !scale || !pos) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for a check case");
        goto done;
    }
    char stream[96];
    snprintf(stream, sizeof stream, "check/pe/%s/%u/%u/%u", c->label, c->tokens, c->heads,
             c->head_dim);
    rl_rng rng;
    rl_rng_seed(&rng, opt->seed ? opt->seed : 1, stream);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rl_rng_normal(&rng);
    for (uint32_t t = 0; t < c->tokens; t++)
        pos[t] = (uint32_t)(rl_rng_uniform(&rng) * (double)(pmax + 1u));
    pos[0] = 0; /* both ends, always */
    pos[c->tokens - 1] = pmax;
    if ((st = pe_vec_ref_role(e, role, x, pos, c->tokens, c->heads, ref, err)))
        goto done;
    pe_vec_bound_role(e, role, x, pos, c->tokens, c->heads, bound, scale);
    row.gpu_ms = -1;
    if ((st = pe_vec_gpu_create_role(dev, e, c->heads, role, &g, err)) ||
        (st = pe_vec_gpu_apply(dev, &g, x, pos, c->tokens, y, &row.guard_ok, err)))
        goto done;
    vf_compare(y, ref, bound, scale, n, VF_GATE_ELEM, &row.stats);
    vf_set_guard(&row.stats, row.guard_ok);
    st = chk_report_add(report, &row, err);
done:
    pe_vec_gpu_destroy(&g);
    pe_encoding_destroy(e);
    free(x);
    free(y);
    free(ref);
    free(bound);
    free(scale);
    free(pos);
    return st;
}

/* ---- logit biases ---------------------------------------------------------- */

typedef chk_bias_item bias_item;
_Static_assert(sizeof(bias_item) == 32, "bias_eval.comp item layout");

rl_status chk_pe_bias_eval(rlvk_device *dev, const pe_bias_gpu *b, const chk_bias_item *items,
                           uint32_t n, float *out, int *guard_ok, rl_error *err)
{
    const eval_variant *v = NULL;
    for (size_t i = 0; i < RL_ARRAY_LEN(eval_variants) && !v; i++)
        if (strcmp(eval_variants[i].name, b->variant) == 0)
            v = &eval_variants[i];
    if (!v)
        return rl_fail(err, RL_ERR_ARG, "no bias_eval variant for bias '%s'", b->variant);
    const uint32_t *spv = v->spv;
    size_t spv_bytes = v->bytes;
    rlvk_pipeline pipe = {0};
    rlvk_buffer bi = {0}, bo = {0};
    rlvk_cmd cmd = {0};
    uint64_t ob = (uint64_t)n * sizeof(float);
    char name[48];
    snprintf(name, sizeof name, "bias_eval_%s", b->variant);
    rlvk_pipeline_desc pd = {
        .name = name,
        .spirv = spv,
        .spirv_bytes = spv_bytes,
        .n_bindings = 8 + b->n_buffers,
        .push_bytes = sizeof(struct rl_bias_eval_push),
        .local_size_x = 64,
    };
    rl_status st;
    if ((st = rlvk_pipeline_create(dev, &pd, &pipe, err)) ||
        (st = rlvk_buffer_create(dev, (uint64_t)n * sizeof *items, "bias items", &bi, err)) ||
        (st = vf_guarded_create(dev, ob, "bias out", &bo, err)) ||
        (st = rlvk_buffer_upload(dev, &bi, 0, items, (uint64_t)n * sizeof *items, err)) ||
        (st = rlvk_cmd_begin(dev, 1, &cmd, err)))
        goto done;
    const rlvk_buffer *bufs[12] = {&bi, &bo, &bi, &bi, &bi, &bi, &bi, &bi};
    for (uint32_t i = 0; i < b->n_buffers; i++)
        bufs[8 + i] = &b->buffers[i];
    struct rl_bias_eval_push p = {.group_base = 0, .n_items = n};
    if ((st = rlvk_cmd_dispatch(&cmd, &pipe, bufs, &p, rlvk_groups(n, pipe.local_size_x), err)) ||
        (st = rlvk_cmd_submit_wait(&cmd, err)) ||
        (st = vf_guarded_download(dev, &bo, ob, out, guard_ok, err)))
        goto done;
done:
    rlvk_cmd_destroy(&cmd);
    rlvk_buffer_destroy(dev, &bo);
    rlvk_buffer_destroy(dev, &bi);
    rlvk_pipeline_destroy(dev, &pipe);
    return st;
}

static rl_status run_bias_case(rlvk_device *dev, const pe_family *fam, const pe_check_case *c, const chk_options *opt,
                               chk_report *report, rl_error *err)
{
    uint32_t k = opt->max_pos_log2 ? opt->max_pos_log2 : 20;
    int32_t pmax = (int32_t)(1u << k);
    uint64_t seed = opt->seed ? opt->seed : 1;
    uint32_t KV = c->kv_heads ? c->kv_heads : c->heads;
    pe_shape shape = {.head_dim = c->head_dim, .heads = c->heads, .kv_heads = KV, .seed = seed};
    pe_encoding *e = NULL;
    rl_status st = make_encoding(fam->name, c->params, &shape, &e, err);
    if (st)
        return st;
    uint32_t T = c->tokens, H = c->heads, D = c->head_dim;
    const int32_t sweep = 300; /* r in [-sweep, sweep] at a mid position */
    uint32_t n = T * T * H + (2 * sweep + 1) * 2;
    chk_row row = {0};
    snprintf(row.kernel, sizeof row.kernel, "bias/%s", c->label);
    snprintf(row.shape, sizeof row.shape, "H=%u KV=%u D=%u %u points pos<=2^%u", H, KV, D, n, k);
    snprintf(row.tolerance, sizeof row.tolerance, "family bound (pe_bias_bound; 0: bit-exact)");
    int run;
    if ((st = chk_case_begin(opt, report, &row, &run, err)) || !run) {
        pe_encoding_destroy(e);
        return st;
    }
    float *q = malloc((size_t)T * H * D * sizeof *q), *kk = malloc((size_t)T * KV * D * sizeof *kk);
    int32_t *pos = malloc(T * sizeof *pos);
    bias_item *items = calloc(n, sizeof *items);
    float *got = malloc(n * sizeof *got);
    double *want = malloc(n * sizeof *want), *bound = malloc(n * sizeof *bound);
    pe_bias_gpu b = {0};
    if (!q || !kk || !pos || !items || !got || !want || !bound) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for a check case");
        goto done;
    }
    char stream[96];
    snprintf(stream, sizeof stream, "check/bias/%s/%u/%u", c->label, H, T);
    rl_rng rng;
    rl_rng_seed(&rng, seed, stream);
    for (size_t i = 0; i < (size_t)T * H * D; i++)
        q[i] = (float)rl_rng_normal(&rng);
    for (size_t i = 0; i < (size_t)T * KV * D; i++)
        kk[i] = (float)rl_rng_normal(&rng);
    /* A third of the tokens at small positions (every small relative
     * distance, T5's exact/log boundary), the rest anywhere up to 2^k, and
     * both ends. */
    for (uint32_t t = 0; t < T; t++)
        pos[t] = t < T / 3 ? (int32_t)(rl_rng_uniform(&rng) * 200.0)
                           : (int32_t)(rl_rng_uniform(&rng) * ((double)pmax + 1.0));
    pos[0] = 0;
    pos[T - 1] = pmax;
    uint32_t m = 0;
    for (uint32_t i = 0; i < T; i++)
        for (uint32_t j = 0; j < T; j++)
            for (uint32_t h = 0; h < H; h++)
                items[m++] = (bias_item){.h = h, .qtok = i, .ktok = j, .qpos = pos[i], .kpos = pos[j]};
    for (int32_t r = -sweep; r <= sweep; r++)
        for (int end = 0; end < 2; end++) { /* near 0 and near the top */
            int32_t qp = end ? pmax - sweep : sweep;
            items[m++] = (bias_item){.h = (uint32_t)(r + sweep) % H,
                                     .qtok = (uint32_t)(r + sweep) % T,
                                     .ktok = (uint32_t)(r + 2 * sweep) % T,
                                     .qpos = qp, .kpos = qp + r};
        }
    uint32_t group = H / KV;
    for (uint32_t i = 0; i < n; i++) {
        const bias_item *it = &items[i];
        const float *qi = q + ((size_t)it->qtok * H + it->h) * D;
        const float *kj = kk + ((size_t)it->ktok * KV + it->h / group) * D;
        want[i] = pe_bias_ref(e, it->h, it->qtok, it->ktok, it->qpos, it->kpos, qi, kj);
        bound[i] = pe_bias_bound(e, it->h, it->qtok, it->ktok, it->qpos, it->kpos, qi, kj);
    }
    row.gpu_ms = -1;
    if ((st = pe_bias_gpu_create(dev, e, q, kk, T, H, KV, D, &b, err)) ||
        (st = chk_pe_bias_eval(dev, &b, items, n, got, &row.guard_ok, err)))
        goto done;
    vf_compare(got, want, bound, NULL, n, VF_GATE_ELEM, &row.stats);
    vf_set_guard(&row.stats, row.guard_ok);
    st = chk_report_add(report, &row, err);
done:
    pe_bias_gpu_destroy(dev, &b);
    pe_encoding_destroy(e);
    free(q);
    free(kk);
    free(pos);
    free(items);
    free(got);
    free(want);
    free(bound);
    return st;
}

rl_status chk_pe_cases(rlvk_device *dev, const chk_options *opt, chk_report *report,
                       rl_error *err)
{
    /* Every family's own cases, in registry order: vector transforms first,
     * then the logit biases. */
    rl_status st = RL_OK;
    for (int bias = 0; bias < 2 && !st; bias++)
        for (size_t f = 0; f < pe_family_count() && !st; f++) {
            const pe_family *fam = pe_family_at(f);
            const pe_check_case *cs = bias ? fam->bias_checks : fam->vec_checks;
            size_t n = bias ? fam->n_bias_checks : fam->n_vec_checks;
            for (size_t i = 0; i < n && !st; i++) {
                if (opt->quick && !cs[i].quick)
                    continue;
                if (bias) {
                    st = run_bias_case(dev, fam, &cs[i], opt, report, err);
                    continue;
                }
                /* q and k, for a family whose keys differ (vec_ref_k) */
                int roles = fam->ops.vec_ref_k ? 2 : 1;
                for (int r = 0; r < roles && !st; r++)
                    st = run_vec_case(dev, fam, &cs[i], r ? PE_ROLE_K : PE_ROLE_Q, opt, report,
                                      err);
            }
        }
    return st;
}
