/* Attention engine's `ropelab check` cases: lengths 1, 2, 63, 64, 65 (around
 * the 64-query workgroup), 1000 and 4097 (odd tail of the key chunks), causal
 * and bidirectional, fp32 and fp16 storage, grouped-query attention, with
 * and with each of the registry's logit biases in turn, every statistic at once
 * (entropy, argmax, target, distance buckets, O, paired KL). Sampled rows
 * (32, first and last included, all heads) are compared with the double CPU
 * reference inside attn_run; the tolerances are derived in attn/attn_tol.c,
 * the verdict (bounds, NMSE gate, output guard) is verify/vf.h's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/attn_cm.h"
#include "attn/attn_path.h"
#include "check/chk.h"
#include "core/rl_util.h"

typedef chk_attn_case attn_case;

/* Everything but O; O (ATTN_OUT) is checked on two cases only because its
 * pipeline takes lavapipe ~10 s to build. */
#define ALL_STATS (ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS | ATTN_PAIRED)
#define SINK_STATS (ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS)

/* Random test problem: q, k, v ~ N(0, 1) (rounded to half for fp16), q_b/k_b
 * a perturbed copy (paired mode: KL of a small distortion), positions
 * consecutive from an offset, random targets. Arrays owned by the caller. */
typedef struct attn_data {
    void *q, *k, *v, *qb, *kb, *qc;
    uint32_t *pos, *target;
} attn_data;

static void data_free(attn_data *x)
{
    free(x->q);
    free(x->k);
    free(x->v);
    free(x->qb);
    free(x->kb);
    free(x->qc);
    free(x->pos);
    free(x->target);
}

static int data_make(const attn_case *c, uint32_t pos0, int with_qc, uint64_t seed, attn_data *x)
{
    memset(x, 0, sizeof *x);
    size_t esz = c->fp16 ? 2 : 4;
    size_t nq = (size_t)c->tokens * c->heads * c->head_dim;
    size_t nk = (size_t)c->tokens * c->kv_heads * c->head_dim;
    x->q = malloc(nq * esz);
    x->qb = malloc(nq * esz);
    x->k = malloc(nk * esz);
    x->kb = malloc(nk * esz);
    x->v = malloc(nk * esz);
    x->pos = malloc(c->tokens * sizeof *x->pos);
    x->target = malloc(c->tokens * sizeof *x->target);
    if (!x->q || !x->qb || !x->k || !x->kb || !x->v || !x->pos || !x->target)
        return 0;
    rl_rng rng;
    rl_rng_seed(&rng, seed, "check/attn");
    void *arrs[5] = {x->q, x->qb, x->k, x->kb, x->v};
    size_t ns[5] = {nq, nq, nk, nk, nk};
    for (int a = 0; a < 5; a++)
        for (size_t i = 0; i < ns[a]; i++) {
            /* b = a + 0.1 N(0,1): q_b/k_b follow q/k with a small distortion. */
            float val = (float)rl_rng_normal(&rng);
            if (a == 1 || a == 3) {
                float base = c->fp16 ? rl_half_to_float(((uint16_t *)arrs[a - 1])[i])
                                     : ((float *)arrs[a - 1])[i];
                val = base + 0.1f * val;
            }
            if (c->fp16)
                ((uint16_t *)arrs[a])[i] = attn_f32_to_f16(val);
            else
                ((float *)arrs[a])[i] = val;
        }
    for (uint32_t t = 0; t < c->tokens; t++) {
        x->pos[t] = (pos0 ? pos0 : 5) + t;
        x->target[t] = (uint32_t)(rl_rng_u64(&rng) % c->tokens);
    }
    if (with_qc) { /* q_c = q + 0.2 N(0,1), drawn last (the other arrays stay as without it) */
        if (!(x->qc = malloc(nq * esz)))
            return 0;
        for (size_t i = 0; i < nq; i++) {
            float base = c->fp16 ? rl_half_to_float(((uint16_t *)x->q)[i]) : ((float *)x->q)[i];
            float val = base + 0.2f * (float)rl_rng_normal(&rng);
            if (c->fp16)
                ((uint16_t *)x->qc)[i] = attn_f32_to_f16(val);
            else
                ((float *)x->qc)[i] = val;
        }
    }
    return 1;
}

/* Zeroes row and names its kernel and shape (before any work: --kernel, --list);
 * x: the remap extras (NULL: none); coopmat: the cooperative-matrix kernel (attn_cm.h). */
static void attn_row_name(const attn_case *c, const chk_attn_extra *x, int coopmat, chk_row *row)
{
    memset(row, 0, sizeof *row);
    /* the scalar path keeps the plain names; the subgroup path adds _sg; the
     * cooperative-matrix kernel's rows are attn_cm[_f16] */
    const char *suffix = c->path == ATTN_PATH_SUBGROUP ? "_sg" : "";
    snprintf(row->kernel, sizeof row->kernel, "attn_%s%s%s",
             coopmat ? "cm" : c->bias ? c->bias : "none", c->fp16 ? "_f16" : "", coopmat ? "" : suffix);
    snprintf(row->shape, sizeof row->shape, "%ux%u/%ux%u %s%s", c->tokens, c->heads, c->kv_heads,
             c->head_dim, c->causal ? "causal" : "bidir",
             (c->flags & ATTN_OUT) ? " O" : "");
    size_t n = strlen(row->shape);
    if (c->window || c->chunk_size)
        n += (size_t)snprintf(row->shape + n, sizeof row->shape - n, " mask w%u s%u c%u",
                              c->window, c->n_sink, c->chunk_size);
    if (c->sinks && n < sizeof row->shape)
        n += (size_t)snprintf(row->shape + n, sizeof row->shape - n, " sinks");
    static const char *const temps[] = {"", " temp llama4", " temp qwen_logn", " temp ssmax"};
    if (c->temp > 0 && c->temp < 4 && n < sizeof row->shape)
        n += (size_t)snprintf(row->shape + n, sizeof row->shape - n, "%s", temps[c->temp]);
    if (x && x->remap_window && n < sizeof row->shape)
        n += (size_t)snprintf(row->shape + n, sizeof row->shape - n, " remap w%u%s",
                              x->remap_window, x->remap_edge ? " edge" : "");
    if (x && x->remap_chunk && n < sizeof row->shape)
        n += (size_t)snprintf(row->shape + n, sizeof row->shape - n, " dca c%u", x->remap_chunk);
    if (x && x->pos0 && n < sizeof row->shape)
        snprintf(row->shape + n, sizeof row->shape - n, " pos %u+", x->pos0);
}

static rl_status run_case(rlvk_device *dev, attn_engine *e, const attn_case *c,
                          const chk_attn_extra *xt, int coopmat, uint64_t seed, chk_row *row,
                          rl_error *err)
{
    attn_row_name(c, xt, coopmat, row);
    row->guard_ok = 1;
    if (c->fp16 && !dev->feat_storage16) {
        row->skipped = 1;
        snprintf(row->tolerance, sizeof row->tolerance, "fp16 storage unsupported");
        return RL_OK;
    }
    attn_data x;
    size_t nrow = (size_t)c->tokens * c->heads;
    uint32_t nb_max = ATTN_MAX_BUCKETS;
    float *stats = malloc(nrow * RL_ATTN_NSTAT * sizeof *stats);
    float *buckets = malloc(nrow * nb_max * sizeof *buckets);
    float *o = malloc(nrow * c->head_dim * sizeof *o);
    attn_pe_bias pb = {0};
    pe_encoding *enc = NULL;
    rl_status st = RL_OK;
    if (!data_make(c, xt ? xt->pos0 : 0, xt && xt->remap_chunk, seed, &x) || !stats || !buckets || !o) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for the attention case");
        goto done;
    }
    if (c->bias) {
        /* The registry's bias with its default parameters (bias cases are
         * fp32, so the raw q/k the reference reads are these floats). */
        pe_shape shape = {.head_dim = c->head_dim, .heads = c->heads, .kv_heads = c->kv_heads,
                          .seed = seed, .max_positions = 5 + c->tokens};
        if ((st = pe_encoding_create(c->bias, NULL, &shape, &enc, err)) ||
            (st = attn_pe_bias_create(dev, enc, x.q, x.k, c->tokens, c->heads, c->kv_heads,
                                      c->head_dim, &pb, err)))
            goto done;
    }
    attn_desc d = {.tokens = c->tokens, .heads = c->heads, .kv_heads = c->kv_heads,
                   .head_dim = c->head_dim, .causal = c->causal, .fp16 = c->fp16,
                   .flags = c->flags, .scale = (float)(1.0 / sqrt(c->head_dim)),
                   .scale_b = (float)(1.25 / sqrt(c->head_dim)),
                   .block_keys = c->block_keys, .chunk_blocks = c->chunk_blocks,
                   .coopmat = coopmat,
                   .window = c->window, .n_sink = c->n_sink, .chunk_size = c->chunk_size,
                   .temp = c->temp,
                   .temp_a = c->temp == ATTN_TEMP_LLAMA4      ? 0.1
                             : c->temp == ATTN_TEMP_QWEN_LOGN ? c->tokens / 4 + 1.0
                                                              : 0.35,
                   .temp_b = 64, .remap_window = xt ? xt->remap_window : 0,
                   .remap_chunk = xt ? xt->remap_chunk : 0,
                   .remap_edge = xt ? xt->remap_edge : 0, .path = coopmat ? 0 : c->path};
    float sinks[64];
    for (uint32_t h = 0; h < c->heads && h < 64; h++)
        sinks[h] = 1.5f - 0.75f * (float)h; /* above and below the logits' typical range */
    attn_inputs in = {.q = x.q, .k = x.k, .v = x.v, .q_b = x.qb, .k_b = x.kb, .q_c = x.qc,
                      .pos = x.pos,
                      .target = x.target, .bias = c->bias ? &pb.bias : NULL,
                      .sinks = c->sinks && c->heads <= 64 ? sinks : NULL};
    attn_outputs out = {.stats = stats, .buckets = buckets, .out = o};
    attn_result res;
    st = attn_run(e, &d, &in, &out, &res, err);
    if (st == RL_ERR_UNSUPPORTED) {
        row->skipped = 1;
        snprintf(row->tolerance, sizeof row->tolerance, "%.90s", err->msg);
        st = RL_OK;
        goto done;
    }
    if (st)
        goto done;
    row->gpu_ms = res.gpu_ms;
    row->guard_ok = res.guard_ok;
    row->stats = res.verify.verdict;
    snprintf(row->tolerance, sizeof row->tolerance,
             coopmat ? "attn cm: tensor-op bounds (attn_cm.c, attn_tol.c); worst here: %s"
                        : "attn: per-statistic fp32 bounds (attn_tol.c); worst here: %s",
             res.verify.worst);
done:
    if (enc)
        attn_pe_bias_destroy(dev, &pb);
    pe_encoding_destroy(enc);
    data_free(&x);
    free(o);
    free(buckets);
    free(stats);
    return st;
}

rl_status chk_attn_run_case(rlvk_device *dev, attn_engine *e, const attn_case *c, uint64_t seed,
                            chk_row *row, rl_error *err)
{
    return run_case(dev, e, c, NULL, 0, seed, row, err);
}

rl_status chk_attn_run_case_ex(rlvk_device *dev, attn_engine *e, const attn_case *c,
                               const chk_attn_extra *xt, uint64_t seed, chk_row *row,
                               rl_error *err)
{
    return run_case(dev, e, c, xt, 0, seed, row, err);
}

static const uint32_t lengths[] = {1, 2, 63, 64, 65, 1000, 4097};

/* The cooperative-matrix path (attn_cm.h) where the device has it (KHR or
 * NV, the note "cooperative-matrix path: <extension> MxNxK" names which):
 * fp16 inputs, its statistics (entropy, argmax, target; O on two cases),
 * lengths around the 64-query workgroup and 8/16-key tiles, causal and
 * bidirectional, head_dim 16, 64 and 128. Elsewhere one skipped row and
 * the note "cooperative-matrix path: skipped (why)". */
static rl_status cm_cases(rlvk_device *dev, attn_engine *e, const chk_options *opt,
                          chk_report *report, uint64_t seed, rl_error *err)
{
    if (!chk_kernel_selected(opt, "attn_cm_f16"))
        return RL_OK;
    const char *why = NULL;
    attn_cm_shape cs;
    int have = attn_cm_shape_of(&dev->info, &cs, &why);
    if (have && !(cs.module == ATTN_CM_SPV_KHR ? dev->feat_coopmat_khr : dev->feat_coopmat_nv)) {
        have = 0;
        why = "the cooperative-matrix extension is not enabled on the device";
    }
    if (!have) {
        char line[256];
        snprintf(line, sizeof line, "cooperative-matrix path: skipped (%s)", why);
        chk_report_note(report, line);
        if (opt->list_only)
            return RL_OK;
        chk_row row;
        memset(&row, 0, sizeof row);
        row.skipped = 1;
        row.guard_ok = 1;
        row.gpu_ms = -1;
        snprintf(row.kernel, sizeof row.kernel, "attn_cm_f16");
        snprintf(row.shape, sizeof row.shape, "cooperative-matrix path");
        snprintf(row.tolerance, sizeof row.tolerance, "skipped: %.86s", why ? why : "not enabled");
        return chk_report_add(report, &row, err);
    }
    {
        char line[160], sb[64];
        snprintf(line, sizeof line, "cooperative-matrix path: %s (attn_cm.comp)",
                 attn_cm_shape_str(&cs, sb, sizeof sb));
        chk_report_note(report, line);
    }
    static const uint32_t cm_lengths[] = {1, 17, 65, 1000, 4097};
    const uint32_t stats = ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET;
    rl_status st = RL_OK;
    for (size_t li = 0; li < RL_ARRAY_LEN(cm_lengths) && !st; li++) {
        uint32_t n = cm_lengths[li];
        if (opt->quick && n > 1000)
            continue;
        for (int causal = 0; causal < 2 && !st; causal++) {
            chk_attn_case cs[3] = {
                {.tokens = n, .heads = 4, .kv_heads = 2, .head_dim = 64, .causal = causal,
                 .fp16 = 1, .flags = stats},
                {.tokens = n, .heads = 2, .kv_heads = 1, .head_dim = 16, .causal = causal,
                 .fp16 = 1, .flags = stats},
                {.tokens = n, .heads = 2, .kv_heads = 2, .head_dim = 128, .causal = causal,
                 .fp16 = 1, .flags = stats | ATTN_OUT},
            };
            int with_o = (n == 65 && causal) || (n == 1000 && !causal);
            for (int k = 0; k < 3 && !st; k++) {
                if ((k == 1 && n != 17 && n != 1000) || (k == 2 && !with_o))
                    continue;
                chk_row row;
                attn_row_name(&cs[k], NULL, 1, &row);
                int run;
                if ((st = chk_case_begin(opt, report, &row, &run, err)) || !run)
                    continue;
                st = run_case(dev, e, &cs[k], NULL, 1, seed + 4096 + li * 16 + causal * 4 + k,
                                       &row, err);
                if (!st)
                    st = chk_report_add(report, &row, err);
            }
        }
    }
    return st;
}

rl_status chk_attn_cases(rlvk_device *dev, const chk_options *opt, chk_report *report,
                         rl_error *err)
{
    attn_engine e;
    rl_status st = attn_engine_create(dev, &e, err);
    if (st)
        return st;
    uint64_t seed = opt->seed ? opt->seed : 1;
    const char *biases[64];
    size_t nbias = 0;
    for (size_t f = 0; f < pe_family_count() && nbias < RL_ARRAY_LEN(biases); f++)
        if (pe_family_at(f)->acts & PE_ACTS_LOGITS)
            biases[nbias++] = pe_family_at(f)->name;
    /* Every kernel path the device supports (attn_path.c), each forced in
     * turn: the scalar path runs the whole table; the others a subset
     * (every statistic fp32 and fp16, a bias, O, learned sinks with O, a
     * mask) at the lengths around the workgroup and one long tail. A path
     * the device lacks is one skipped row saying why. */
    attn_path_props props;
    attn_path_props_of(&dev->info, &props);
    for (int pk = ATTN_PATH_SCALAR; pk < ATTN_PATH_COUNT && !st; pk++) {
    attn_path_shape ps = {.head_dim = 64, .key_operands = 2};
    if (pk == ATTN_PATH_COOPMAT)
        continue; /* the cooperative-matrix kernel's own rows: cm_cases below */
    attn_path pa;
    attn_path_eval(&props, &ps, (attn_path_kind)pk, &pa);
    if (!pa.supported) {
        chk_row row;
        attn_case sc = {.tokens = 65, .heads = 4, .kv_heads = 2, .head_dim = 64, .path = pk};
        attn_row_name(&sc, NULL, 0, &row);
        snprintf(row.shape, sizeof row.shape, "path %s", attn_path_name((attn_path_kind)pk));
        int run;
        if ((st = chk_case_begin(opt, report, &row, &run, err)) || !run)
            continue;
        row.skipped = 1;
        row.guard_ok = 1;
        snprintf(row.tolerance, sizeof row.tolerance, "%s path: %.80s",
                 attn_path_name((attn_path_kind)pk), pa.why);
        st = chk_report_add(report, &row, err);
        continue;
    }
    int sub = pk != ATTN_PATH_SCALAR;
    for (size_t li = 0; li < RL_ARRAY_LEN(lengths) && !st; li++) {
        uint32_t n = lengths[li];
        if (opt->quick && n > 1000)
            continue;
        if (sub && (n == 1 || n == 2 || n == 64 || n == 4097))
            continue;
        for (int causal = 0; causal < 2 && !st; causal++) {
            /* GQA (4 heads over 2 KV heads), every statistic, fp32 and fp16,
             * no bias; then the registry's logit biases (one per length and
             * direction, in registry order) with 2 heads over 1 KV head,
             * paired against the same logits without the bias. */
            const char *bias = nbias ? biases[(li + (size_t)causal) % nbias] : NULL;
            attn_case cs[12] = {
                {n, 4, 2, 64, causal, 0, NULL, ALL_STATS, 0, 0, 0, 0, 0, 0, 0, pk},
                {n, 4, 2, 64, causal, 1, NULL, ALL_STATS, 0, 0, 0, 0, 0, 0, 0, pk},
                {n, 2, 1, 32, causal, 0, bias, ALL_STATS | ATTN_NO_BIAS_B, 0, 0, 0, 0, 0, 0, 0, pk},
                {n, 4, 2, 64, causal, 0, NULL, ATTN_OUT | ATTN_ENTROPY, 0, 0, 0, 0, 0, 0, 0, pk},
                /* Masks (docs/attention.md "Masks"), from 65 tokens on: a
                 * sliding window, StreamingLLM / LM-Infinite sinks + window
                 * (with the bias), Llama 4 chunks; sizes that cut chunks and
                 * workgroups unevenly (window/chunk in keys). */
                {n, 4, 2, 64, causal, 0, NULL, ALL_STATS, 0, 0, n / 5 + 1, 0, 0, 0, 0, pk},
                {n, 2, 1, 32, causal, 0, bias, ALL_STATS | ATTN_NO_BIAS_B, 0, 0, n / 7 + 3, 4, 0, 0, 0, pk},
                {n, 4, 2, 64, causal, 0, NULL, ALL_STATS | ATTN_OUT, 0, 0, 0, 0, n / 3 + 5, 0, 0, pk},
                /* Learned sinks (gpt-oss), with O; the last with a window
                 * as gpt-oss's sliding layers. Not paired. */
                {n, 4, 2, 64, causal, 0, NULL, SINK_STATS | ATTN_OUT, 0, 0, 0, 0, 0, 1, 0, pk},
                {n, 2, 1, 32, causal, 0, NULL, SINK_STATS, 0, 0, n / 4 + 1, 0, 0, 1, 0, pk},
                /* Temperature (per-query logit scale): Llama 4 (attn_scale 0.1,
                 * floor_scale 64), Qwen log-n (L = n / 4 + 1), SSMax (s = 0.35). */
                {n, 4, 2, 64, causal, 0, NULL, SINK_STATS, 0, 0, 0, 0, 0, 0, ATTN_TEMP_LLAMA4, pk},
                {n, 2, 1, 32, causal, 0, bias, ALL_STATS | ATTN_NO_BIAS_B, 0, 0, 0, 0, 0, 0,
                 ATTN_TEMP_QWEN_LOGN, pk},
                {n, 4, 2, 64, causal, 0, NULL, SINK_STATS | ATTN_OUT, 0, 0, n / 3 + 1, 0, 0, 1,
                 ATTN_TEMP_SSMAX, pk},
            };
            /* O on 65 tokens causal (tail of a workgroup) and 1000 bidirectional. */
            int with_o = (n == 65 && causal) || (n == 1000 && !causal && !opt->quick);
            for (int k = 0; k < 12 && !st; k++) {
                if ((!cs[k].bias && (k == 2 || k == 5 || k == 10)) || (k == 3 && !with_o) || (k >= 4 && n < 65))
                    continue;
                if (sub && (k == 5 || k == 6 || k >= 8))
                    continue;
                chk_row row;
                attn_row_name(&cs[k], NULL, 0, &row);
                int run;
                if ((st = chk_case_begin(opt, report, &row, &run, err)) || !run)
                    continue;
                st = chk_attn_run_case(dev, &e, &cs[k], seed + li * 16 + causal * 4 + k, &row, err);
                if (!st)
                    st = chk_report_add(report, &row, err);
            }
            /* Position remapping (Self-Extend / ReRoPE / Leaky ReRoPE's
             * selection, docs/attention.md "Position remapping"), from 65
             * tokens on, on every path: q_b/k_b stand for the remapped
             * definition; every row with more than W + 1 keys meets
             * i - j = W - 1, W, W + 1. GQA with a window that cuts blocks
             * unevenly; paired (KL of the remapped attention against the
             * exact one) at positions near 2^20; W = 1 (only the diagonal
             * exact) with a mask and learned sinks; Dual Chunk Attention's
             * three definitions by chunk distance (q_b, q_c stand for the
             * successive and inter queries), chunks of 17 keys (uneven in
             * blocks and workgroups), and at positions near 2^20. */
            attn_case rc[6] = {
                {n, 4, 2, 64, causal, 0, NULL, SINK_STATS, 0, 0, 0, 0, 0, 0, 0, pk},
                {n, 2, 1, 32, causal, 0, NULL, ALL_STATS, 0, 0, 0, 0, 0, 0, 0, pk},
                {n, 4, 2, 64, causal, 0, NULL, SINK_STATS, 0, 0, n / 3 + 1, 0, 0, 1, 0, pk},
                {n, 4, 2, 64, causal, 0, NULL, SINK_STATS, 0, 0, 0, 0, 0, 0, 0, pk},
                {n, 2, 1, 32, causal, 0, NULL, SINK_STATS, 0, 0, 0, 0, 0, 0, 0, pk},
                {n, 4, 2, 64, causal, 0, NULL, SINK_STATS, 0, 0, 0, 0, 0, 0, 0, pk},
            };
            /* the last: the window's edge key under both definitions
             * (remap_edge, STRING's authors' prefill), W = n/5 + 1 */
            chk_attn_extra rx[6] = {{n / 5 + 1, 0, 0, 0}, {7, (1u << 20) - n / 2, 0, 0},
                                    {1, 0, 0, 0}, {0, 0, 17, 0},
                                    {0, (1u << 20) - n / 2, n / 4 + 1, 0},
                                    {n / 5 + 1, 0, 0, 1}};
            /* --quick: one window remap, one DCA and one edge row, causal,
             * at 65 tokens, in 4-key blocks (a remap pipeline at the default
             * 16 keys x 8 blocks takes lavapipe about 45 s to compile cold;
             * the ten rows at default tiles cost 226 s of a cold `check
             * --quick`) */
            for (int k = 0; k < 6 && !st && n >= 65; k++) {
                if (opt->quick && (n != 65 || !causal || (k != 0 && k != 3 && k != 5)))
                    continue;
                if (opt->quick) { /* 4-key blocks, one per dispatch: small pipelines */
                    rc[k].block_keys = 4;
                    rc[k].chunk_blocks = 1;
                }
                chk_row row;
                attn_row_name(&rc[k], &rx[k], 0, &row);
                int run;
                if ((st = chk_case_begin(opt, report, &row, &run, err)) || !run)
                    continue;
                st = chk_attn_run_case_ex(dev, &e, &rc[k], &rx[k], seed + li * 16 + causal * 4 + 12 + k,
                                          &row, err);
                if (!st)
                    st = chk_report_add(report, &row, err);
            }
        }
    }
    }
    if (!st)
        st = cm_cases(dev, &e, opt, report, seed, err);
    attn_engine_destroy(&e);
    return st;
}
