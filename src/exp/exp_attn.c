/* exp_attn.c — attention of a run's encoding, for experiment kinds:
 * the encoding's vector transform on the device, recorded with the
 * attention into one command buffer on the same device buffers (afterwards
 * the transformed K and the sampled query rows of the transformed Q come
 * back once, for verification: element-wise against the double reference
 * within the registry's bound, and as the attention reference's operands),
 * its logit bias
 * inside the streaming kernel (registry buffers + CPU reference), the logit
 * scale 1/sqrt(d) times the RoPE attention factor squared (HF: the factor
 * multiplies cos and sin), and the engine's sampled-row verification judged
 * by the verification layer against the per-statistic tolerances of
 * attn/attn_tol.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"
#include "exp/exp.h"
#include "pe/pe.h"
#include "pe/rope.h"

/* Logit scale handed to the kernel. The RoPE transform already multiplies
 * cos and sin by the attention factor af (HF; rope_ref.c, rope_gpu.c), so
 * <q', k'> of rotated vectors carries af^2 and the effective logit scale is
 * af^2/sqrt(d) with the kernel scale 1/sqrt(d). Without the factor the
 * kernel scale is 1/(af^2 sqrt(d)), which cancels it: effective 1/sqrt(d).
 * (Multiplying the kernel scale by af^2 as well would apply it twice.) */
static double logit_scale(const pe_encoding *e, uint32_t head_dim, int no_af)
{
    /* the family's convention: 1/sqrt(d), or 1 for families that never
     * scale (T5, pe_family.unscaled_logits) */
    double s = pe_encoding_family(e)->unscaled_logits ? 1.0 : 1.0 / sqrt((double)head_dim);
    const rope_freqs *f = pe_rope_freqs(e);
    if (f && no_af && f->attention_factor > 0)
        s /= f->attention_factor * f->attention_factor;
    return s;
}

/* m->remap from the attn_remap* values; -1 when the method name is unknown
 * (m->remap.method is then 0). */
static int remap_of(const exp_value *v, const exp_attn_mask_keys *keys, uint32_t train_len,
                    exp_attn_mask *m)
{
    int method = attn_remap_from_name(v[keys->remap].str);
    double rc = v[keys->remap_chunk].num;
    m->remap = (attn_remap){.method = method < 0 ? 0 : method,
                            .window = (uint32_t)v[keys->remap_window].num,
                            .group = (uint32_t)v[keys->remap_group].num,
                            .leak = (uint32_t)v[keys->remap_leak].num,
                            .chunk = rc ? (uint32_t)rc : train_len / 4 * 3,
                            .local = (uint32_t)v[keys->remap_local].num};
    return method;
}

rl_status exp_attn_mask_get(const char *kind, const exp_value *v, const exp_attn_mask_keys *keys,
                            uint32_t train_len, exp_attn_mask *m, rl_error *err)
{
    const exp_value *w = &v[keys->window], *s = &v[keys->sinks], *c = &v[keys->chunk],
                    *ls = &v[keys->learned_sink], *sl = &v[keys->sink_logit],
                    *t = &v[keys->temp], *ts = &v[keys->temp_scale], *tf = &v[keys->temp_floor];
    *m = (exp_attn_mask){.window = (uint32_t)w->num, .n_sink = (uint32_t)s->num,
                         .chunk_size = (uint32_t)c->num, .learned_sink = ls->num != 0,
                         .sink_logit = sl->num};
    static const char *const temps[] = {"none", "llama4", "qwen_logn", "ssmax"};
    for (int i = 0; i < 4; i++)
        if (strcmp(t->str, temps[i]) == 0)
            m->temp = i; /* ATTN_TEMP_* in this order */
    m->temp_a = m->temp == ATTN_TEMP_QWEN_LOGN ? (double)train_len : ts->num;
    m->temp_b = tf->num;
    if (m->temp == ATTN_TEMP_QWEN_LOGN && train_len < 2)
        return rl_fail_key(err, RL_ERR_ARG, "attn_temperature",
                           "%s: attn_temperature qwen_logn needs the model's train_len above 1 "
                           "(got %u)",
                           kind, train_len);
    int method = remap_of(v, keys, train_len, m);
    rl_status st;
    const attn_remap_method *rm = attn_remap_method_at(m->remap.method);
    if (rm && rm->mask) { /* the mask a method implies, before the mask's own rule */
        if ((st = attn_remap_check(&m->remap, err))) {
            rl_error_prefix(err, "%s", kind);
            return st;
        }
        attn_remap_mask am = {m->window, m->n_sink, m->chunk_size};
        if ((st = attn_remap_apply_mask(&m->remap, &am, err))) {
            rl_error_prefix(err, "%s", kind);
            return st;
        }
        m->window = am.window, m->n_sink = am.n_sink, m->chunk_size = am.chunk_size;
    }
    if (m->n_sink && !m->window && !m->chunk_size)
        return rl_fail_key(err, RL_ERR_ARG, "attn_sinks",
                           "%s: attn_sinks %u needs attn_window or attn_chunk (without either "
                           "every key is visible)", kind, m->n_sink);
    if (method < 0)
        return rl_fail_key(err, RL_ERR_ARG, "attn_remap",
                           "%s: attn_remap '%s' is not one of %s", kind,
                           v[keys->remap].str, attn_remap_names());
    st = attn_remap_check(&m->remap, err);
    if (st)
        rl_error_prefix(err, "%s", kind);
    return st;
}

/* One operand on the device: [tokens][heads][head_dim] f32 (the raw tensor,
 * or nothing when a transform writes it) followed by the verification
 * layer's guard words (vf_guarded_create), which no transform may touch. */
static rl_status operand_create(rlvk_device *dev, const char *name, const float *raw, size_t n,
                                rlvk_buffer *b, rl_error *err)
{
    /* key-side tensors may exceed one binding: the transforms and the
     * attention bind them a window at a time */
    rl_status st = vf_guarded_create_large(dev, n * sizeof *raw, name, b, err);
    if (!st && raw)
        st = rlvk_buffer_upload(dev, b, 0, raw, n * sizeof *raw, err);
    return st;
}

/* Tokens whose reference, bounds and scales operand_fetch holds at once
 * (3 doubles per element: 24 MiB at 8192 x 128): a million-token K is
 * checked a block at a time, not through 3 GiB of arrays that are faulted
 * in and zeroed on every pass (a third of a 1M-token run's time before). */
#define FETCH_BLOCK_TOKENS EXP_ATTN_VERIFY_BLOCK

/* The verification side of one operand the encoding e transformed on the
 * device (buffer b, raw host tensor x, [tokens][heads][head_dim]): after the
 * attention's command buffer, downloads the rows the attention reference
 * reads — every token (keys, all = 1) or the sampled query tokens only
 * (attn_verify_token of rows) — and the guard words, into got (same shape
 * as x; rows not read stay 0), and checks those elements against pe_vec_ref
 * within pe_vec_bound (vf_compare, VF_GATE_ELEM, guard folded in), a block
 * of FETCH_BLOCK_TOKENS rows at a time (the references are row-wise,
 * pe.h): the record is vf_compare's over the compared rows in order. got
 * is then exactly what the device's attention read there. */
static rl_status operand_fetch(rlvk_device *dev, const pe_encoding *e, pe_role role,
                               const rlvk_buffer *b,
                               const float *x, const uint32_t *pos, uint64_t tokens,
                               uint32_t heads, int all, uint64_t rows, float *got, vf_stats *s,
                               rl_error *err)
{
    size_t row = (size_t)heads * pe_encoding_shape(e)->head_dim, n = tokens * row;
    uint64_t nr = all ? tokens : rows, blk = all ? FETCH_BLOCK_TOKENS : 1;
    if (blk > nr)
        blk = nr ? nr : 1;
    size_t nb = blk * row;
    double *ref = malloc(nb * sizeof *ref), *bound = malloc(nb * sizeof *bound),
           *scale = malloc(nb * sizeof *scale);
    int guard_ok = 0;
    rl_status st = RL_OK;
    if (!ref || !bound || !scale)
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for %zu transformed elements", nb);
    if (!st && all)
        st = vf_guarded_download(dev, b, n * sizeof *got, got, &guard_ok, err);
    if (!st && !all) {
        memset(got, 0, n * sizeof *got);
        for (uint64_t r = 0; r < nr && !st; r++) {
            uint64_t t = attn_verify_token(r, nr, tokens);
            st = rlvk_buffer_download(dev, b, t * row * sizeof *got, got + t * row,
                                      row * sizeof *got, err);
        }
        if (!st)
            st = vf_guard_check(dev, b, n * sizeof *got, &guard_ok, err);
    }
    vf_stream vs;
    vf_stream_begin(&vs, VF_GATE_ELEM);
    /* every token in blocks, or each sampled token alone (ascending) */
    for (uint64_t r = 0; r < nr && !st; r += blk) {
        uint64_t t0 = all ? r : attn_verify_token(r, nr, tokens);
        uint64_t m = all && nr - r < blk ? nr - r : blk;
        st = pe_vec_ref_role(e, role, x + t0 * row, pos + t0, m, heads, ref, err);
        if (!st) {
            pe_vec_bound_role(e, role, x + t0 * row, pos + t0, m, heads, bound, scale);
            vf_stream_add(&vs, got + t0 * row, ref, bound, scale, m * row);
        }
    }
    if (!st) {
        vf_stream_end(&vs, s);
        vf_set_guard(s, guard_ok);
    }
    free(ref);
    free(bound);
    free(scale);
    return st;
}

/* The record of an operand the encoding leaves alone: the device holds the
 * raw upload bit for bit (as main's host path copied it). */
static void exact_copy(size_t n, vf_stats *s)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->first_bad = VF_NONE;
    s->nmse_ok = 1;
    s->pass = 1;
}

/* The transforms recorded before the attention, in order (definition b's
 * from the raw tensors first, then definition a's in place). */
typedef struct xform {
    pe_vec_gpu g;
    const rlvk_buffer *x, *y;
    const rlvk_buffer *pos;  /* its own positions (the remapped definition, sampled query
                                rows); NULL: the engine's */
    uint64_t tokens;         /* rows it transforms (sampled query rows: S) */
    uint32_t test_window;    /* exp_attn_io.test_window */
} xform;

typedef struct xforms {
    xform t[4];
    uint32_t n;
    uint32_t test_window;    /* exp_attn_io.test_window */
} xforms;

/* Tokens per window of a transform whose operand exceeds one binding (0:
 * bound whole): a multiple of 64 tokens (so the positions' byte offset, 4
 * per token, meets any offset alignment up to 256) within
 * maxStorageBufferRange. */
static uint64_t xform_window(const rlvk_device *dev, const xform *t)
{
    uint64_t row = (uint64_t)t->g.heads * pe_encoding_shape(t->g.e)->head_dim * sizeof(float);
    uint64_t range = dev->info.max_storage_buffer_range;
    if (t->test_window) /* test hook: whole steps of 64 tokens */
        return (t->test_window + 63) / 64 * 64;
    if (t->x->size <= range && t->y->size <= range)
        return 0;
    return range / row / 64 * 64;
}

/* Dispatches t records: one, or one per window. */
static uint32_t xform_dispatches(const rlvk_device *dev, const xform *t)
{
    uint64_t w = xform_window(dev, t);
    return w ? (uint32_t)((t->tokens + w - 1) / w) : 1;
}

/* A transform is applied row by row at each row's position, so a window of
 * tokens [w0, w0 + n) transforms alone when x, y and the positions are bound
 * from w0 on: pe_vec_gpu_record over windows. Refused where the transform
 * reads per-token data of its own (RoPE with a per-token rotation, mRoPE's
 * position triples): those bind whole. */
static rl_status record_xforms(void *ctx, rlvk_cmd *cmd, const rlvk_buffer *pos, rl_error *err)
{
    xforms *X = ctx;
    rl_status st = RL_OK;
    for (uint32_t i = 0; i < X->n && !st; i++) {
        xform *t = &X->t[i];
        const rlvk_buffer *p = t->pos ? t->pos : pos;
        uint64_t w = xform_window(cmd->dev, t);
        if (!w) {
            st = pe_vec_gpu_record(cmd, &t->g, t->x, t->y, p, t->tokens, err);
            continue;
        }
        const rope_freqs *rf = pe_rope_freqs(t->g.e);
        if (rf && (rope_freqs_per_position(rf) || rf->desc.n_mrope_section))
            return rl_fail(err, RL_ERR_LIMIT, "%s: %llu tokens exceed one storage binding, and a "
                           "per-token rotation (or mRoPE) cannot be applied a window at a time",
                           t->x->name, (unsigned long long)t->tokens);
        uint64_t row = (uint64_t)t->g.heads * pe_encoding_shape(t->g.e)->head_dim * sizeof(float);
        for (uint64_t w0 = 0; w0 < t->tokens && !st; w0 += w) {
            uint64_t n = t->tokens - w0 < w ? t->tokens - w0 : w;
            rlvk_buffer xw, yw, pw;
            if ((st = rlvk_buffer_window(cmd->dev, t->x, w0 * row, n * row, &xw, err)) ||
                (st = rlvk_buffer_window(cmd->dev, t->y, w0 * row, n * row, &yw, err)) ||
                (st = rlvk_buffer_window(cmd->dev, p, w0 * 4, n * 4, &pw, err)))
                break;
            st = pe_vec_gpu_record(cmd, &t->g, &xw, &yw, &pw, n, err);
        }
    }
    return st;
}

/* Adds the transform x -> y of encoding e (heads heads, tokens rows at
 * positions pos) to X, its position-dependent data uploaded now
 * (pe_vec_gpu_prepare). */
static rl_status xform_add(rlvk_device *dev, xforms *X, const pe_encoding *e, uint32_t heads,
                           pe_role role, const uint32_t *pos, uint64_t tokens,
                           const rlvk_buffer *x, const rlvk_buffer *y, rl_error *err)
{
    xform *t = &X->t[X->n];
    rl_status st = pe_vec_gpu_create_role(dev, e, heads, role, &t->g, err);
    if (st)
        return st;
    X->n++;
    t->x = x;
    t->y = y;
    t->pos = NULL;
    t->tokens = tokens;
    t->test_window = X->test_window;
    return pe_vec_gpu_prepare(&t->g, pos, tokens, err);
}

/* The engine's desc of a run of e over io (have_bias: e's logit bias is
 * in the kernel). */
static attn_desc io_desc(const pe_encoding *e, const exp_attn_io *io, int have_bias,
                         double scale, double scale_b)
{
    const pe_shape *sh = pe_encoding_shape(e);
    return (attn_desc){
        .tokens = io->tokens, .heads = sh->heads, .kv_heads = sh->kv_heads,
        .head_dim = sh->head_dim, .causal = io->causal,
        .window = io->mask.window, .n_sink = io->mask.n_sink, .chunk_size = io->mask.chunk_size,
        .temp = io->mask.temp, .temp_a = io->mask.temp_a, .temp_b = io->mask.temp_b,
        /* position remapping: the window methods' W, or DCA's chunk length S - L */
        .remap_window = attn_remap_defs(&io->mask.remap) == ATTN_REMAP_DEFS_WINDOW
                            ? io->mask.remap.window
                            : 0,
        .remap_chunk = attn_remap_defs(&io->mask.remap) == ATTN_REMAP_DEFS_CHUNK
                           ? io->mask.remap.chunk - io->mask.remap.window
                           : 0,
        /* STRING's authors' code: the edge key under both definitions */
        .remap_edge = attn_remap_defs(&io->mask.remap) == ATTN_REMAP_DEFS_WINDOW &&
                      attn_remap_edge_both(&io->mask.remap),
        .flags = io->flags | (io->paired ? ATTN_PAIRED | (have_bias ? ATTN_NO_BIAS_B : 0) : 0),
        .scale = (float)scale, .scale_b = (float)scale_b,
        .verify_rows = io->verify_rows, .query_rows = io->n_rows,
    };
}

rl_status exp_attn_prepare(attn_engine *eng, uint32_t n, const pe_encoding *const *encs,
                           const exp_attn_io *ios, rl_error *err)
{
    attn_prep items[ATTN_MAX_PIPES / 2];
    uint32_t m = 0;
    for (uint32_t i = 0; i < n && m < ATTN_MAX_PIPES / 2; i++) {
        const exp_attn_io *io = &ios[i];
        uint64_t span = 0; /* position distance, for the bucket count */
        if (io->pos && io->tokens) {
            uint32_t lo = UINT32_MAX, hi = 0;
            for (uint64_t t = 0; t < io->tokens; t++) {
                lo = io->pos[t] < lo ? io->pos[t] : lo;
                hi = io->pos[t] > hi ? io->pos[t] : hi;
            }
            span = hi - lo;
            if (!span) /* 0 would read as tokens - 1 */
                continue;
        }
        int bias = pe_has_bias(encs[i]);
        items[m++] = (attn_prep){
            .desc = io_desc(encs[i], io, bias, 1.0, 1.0),
            .variant = bias ? pe_bias_variant(pe_encoding_family(encs[i])) : NULL,
            .sinks = io->mask.learned_sink, .max_distance = span};
    }
    return attn_engine_prepare(eng, m, items, err);
}

/* The sink mass of the sampled rows (exp_attn_io.ref_sink_keys), in double
 * from the definitions (attn_ref_row_stats for the row's lse with the
 * learned sink, attn_ref_logit for each of the first keys, -inf where
 * masked), over the operands in `in` (what the device read). */
static rl_status sink_reference(const attn_desc *d, const attn_inputs *in, int have_bias,
                                const exp_attn_io *io, uint64_t rows, rl_error *err)
{
    uint64_t T = d->tokens;
    double *scratch = malloc(2 * T * sizeof *scratch);
    if (!scratch)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory for the sink reference");
    attn_ref_problem P = {
        .tokens = T, .heads = d->heads, .kv_heads = d->kv_heads ? d->kv_heads : d->heads,
        .head_dim = d->head_dim, .causal = d->causal, .scale = d->scale,
        .bias_a = have_bias, .q = in->q, .k = in->k, .pos = in->pos,
        .bias = have_bias ? in->bias : NULL, .window = d->window, .n_sink = d->n_sink,
        .chunk_size = d->chunk_size, .sinks = in->sinks, .temp = d->temp, .temp_a = d->temp_a,
        .temp_b = d->temp_b,
        /* position remapping: the remapped definition beyond remap_window */
        .remap_window = d->remap_window, .q_b = d->remap_window || d->remap_chunk ? in->q_b : NULL,
        .k_b = d->remap_window || d->remap_chunk ? in->k_b : NULL,
        .remap_chunk = d->remap_chunk, .q_c = d->remap_chunk ? in->q_c : NULL,
        .remap_edge = d->remap_edge,
        .q_rows = d->query_rows ? in->rows : NULL, .n_q_rows = d->query_rows,
    };
    uint64_t S = io->ref_sink_keys < T ? io->ref_sink_keys : T, nq = attn_query_rows(d);
    for (uint64_t r = 0; r < rows; r++) {
        uint64_t slot = attn_verify_token(r, rows, nq), i = d->query_rows ? in->rows[slot] : slot;
        for (uint32_t h = 0; h < d->heads; h++) {
            attn_ref_row R;
            attn_ref_row_stats(&P, h, i, UINT64_MAX, 0, scratch, &R, NULL, NULL, NULL);
            double m = 0;
            for (uint64_t j = 0; j < S; j++)
                m += exp(attn_ref_logit(&P, 0, h, i, j) - R.lse);
            io->ref_sink_mass[r * d->heads + h] = m;
            if (io->ref_sink_learned)
                io->ref_sink_learned[r * d->heads + h] =
                    in->sinks ? exp((double)in->sinks[h] - R.lse) : 0.0;
        }
    }
    free(scratch);
    return RL_OK;
}

/* Q/K go up raw once and stay on the device: the encoding's transform is
 * recorded into the attention's first command buffer (attn_run_resident's
 * `before`), so nothing crosses between transform and attention. After
 * that command buffer, for verification only, the transformed K (every
 * key a sampled row sees) and the sampled query rows of the transformed Q
 * come back with their guard words; they are checked element-wise against
 * the encoding's double reference (pe_vec_ref within pe_vec_bound), and the
 * attention reference computes from exactly those device operands, so the
 * attention tolerances are the exact-operand ones of attn_tol.c
 * (docs/attention.md, "Verification"). */
rl_status exp_attn_run(rlvk_device *dev, attn_engine *eng, const pe_encoding *e,
                       const exp_attn_io *io, const attn_outputs *out, exp_attn_result *r,
                       rl_error *err)
{
    memset(r, 0, sizeof *r);
    const pe_shape *sh = pe_encoding_shape(e);
    uint32_t H = sh->heads, KV = sh->kv_heads, D = sh->head_dim;
    uint64_t T = io->tokens;
    /* Sampled query rows: the query side (raw Q, its positions, every Q
     * operand, the statistics) is gathered to the S rows io->rows names;
     * the key side stays T tokens. */
    int sampled = io->n_rows != 0;
    uint64_t S = sampled ? io->n_rows : T;
    if (sampled && (!io->rows || io->n_rows > T))
        return rl_fail(err, RL_ERR_ARG, "sampled attention: %u query rows of %llu tokens need "
                       "their token list", io->n_rows, (unsigned long long)T);
    const pe_encoding *b = io->paired;
    if (b && pe_has_bias(b))
        return rl_fail(err, RL_ERR_ARG, "paired attention: the second encoding must act on the "
                                        "vectors only (got a logit bias)");
    /* Position remapping: the second Q/K pair is the remapped definition
     * (encoding eg at the method's positions); ATTN_PAIRED then compares
     * with the exact definition (attn_desc.remap_window). */
    const attn_remap *rm = &io->mask.remap;
    int remap = rm->method != ATTN_REMAP_NONE;
    /* Dual Chunk Attention: definition a is the intra-chunk one (Q and K
     * both at chunk positions), b the successive-chunk queries, c the
     * inter-chunk ones; every definition's keys are K at j mod c. */
    int dca = attn_remap_defs(rm) == ATTN_REMAP_DEFS_CHUNK;
    if (dca && (io->flags & ATTN_PAIRED))
        return rl_fail_key(err, RL_ERR_ARG, "attn_remap",
                           "attn_remap dca: three definitions, no paired mode (no "
                           "exact definition among them)");
    if (remap && b)
        return rl_fail_key(err, RL_ERR_ARG, "attn_remap",
                           "attn_remap %s: a paired encoding cannot be combined with "
                           "remapping (its definition b is the exact positions)",
                           attn_remap_name(rm->method));
    if ((io->flags & ATTN_PAIRED) && !remap)
        return rl_fail(err, RL_ERR_ARG, "paired attention needs a second encoding (io->paired)");
    size_t nq = (size_t)S * H * D, nk = (size_t)T * KV * D; /* query side: S rows */
    rlvk_buffer bq = {0}, bk = {0}, bqb = {0}, bkb = {0}, bv = {0}, bpq = {0}, bpk = {0};
    pe_encoding *far_own = NULL;
    const pe_encoding *eg = NULL;       /* remap: the encoding of the remapped definition */
    uint32_t *qpos_g = NULL, *kpos_g = NULL; /* remap: its query / key positions */
    uint32_t *qpos_a = NULL, *qpos_c = NULL; /* dca: intra- and inter-chunk query positions */
    rlvk_buffer bqc = {0}, bpqa = {0}, bpqc = {0};
    float *hqc = NULL;
    xforms X = {.test_window = io->test_window};
    /* sampled: gathered raw Q and query positions (else the full arrays) */
    float *qraw_own = NULL;
    uint32_t *pq_own = NULL, *qg_own = NULL, *qa_own = NULL, *qc_own = NULL;
    rlvk_buffer bps = {0}; /* sampled: the gathered positions of definition a's queries */
    attn_pe_bias pb;
    int have_bias = 0;
    rl_status st = RL_OK;
    uint32_t *own_pos = NULL;
    float *own_stats = NULL, *sinks = NULL, *hq = NULL, *hk = NULL, *hqb = NULL, *hkb = NULL;
    const uint32_t *pos = io->pos;
    /* Without the attention factor: a rotation whose factor differs per
     * token (dynamic_yarn, dynamic_mode cache_consistent) cannot be undone
     * by one logit scale, so its twin with attention_factor 1 rotates every
     * token without it (and logit_scale then leaves 1/sqrt(d) alone). */
    pe_encoding *twin = NULL;
    const rope_freqs *rf = pe_rope_freqs(e);
    if (io->no_attention_factor && rf && rope_freqs_per_position(rf) &&
        rf->rope_type == ROPE_TYPE_DYNAMIC_YARN && rf->desc.attention_factor == 0) {
        json_t *tp = json_deep_copy(pe_encoding_params(e));
        if (!tp) {
            st = rl_fail(err, RL_ERR_NOMEM, "out of host memory");
            goto done;
        }
        json_object_set_new(tp, "attention_factor", json_real(1.0));
        st = pe_encoding_create(pe_encoding_family(e)->name, tp, sh, &twin, err);
        json_decref(tp);
        if (st) {
            rl_error_set_key(err, NULL); /* the twin's key, not the kind's */
            goto done;
        }
        e = twin;
    }
    if (!pos) { /* positions 0, 1, ... as the engine's default */
        own_pos = malloc((T ? T : 1) * sizeof *own_pos);
        for (uint64_t t = 0; own_pos && t < T; t++)
            own_pos[t] = (uint32_t)t;
        pos = own_pos;
    }
    if (!pos) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for %llu positions",
                     (unsigned long long)T);
        goto done;
    }
    /* Positions the encodings cannot take are refused before any device
     * work. */
    const pe_encoding *eref = io->ref_encoding ? io->ref_encoding : e;
    if ((st = pe_vec_check(e, pos, T, err)) || (st = pe_vec_check(eref, pos, T, err)) ||
        (b && (st = pe_vec_check(b, pos, T, err))))
        goto done;
    if (remap) {
        if ((st = attn_remap_encoding(rm, e, &far_own, err)))
            goto done;
        eg = far_own ? far_own : e;
        if (!(qpos_g = malloc(T * sizeof *qpos_g)) || !(kpos_g = malloc(T * sizeof *kpos_g))) {
            st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for %llu positions",
                         (unsigned long long)T);
            goto done;
        }
        if (dca && (!(qpos_a = malloc(T * sizeof *qpos_a)) ||
                    !(qpos_c = malloc(T * sizeof *qpos_c)))) {
            st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for %llu positions",
                         (unsigned long long)T);
            goto done;
        }
        if ((st = dca ? attn_remap_dca_positions(rm, pos, T, qpos_a, qpos_g, qpos_c, kpos_g, err)
                      : attn_remap_positions(rm, pos, T, qpos_g, kpos_g, err)) ||
            (st = pe_vec_check(eg, qpos_g, T, err)) || (st = pe_vec_check(eg, kpos_g, T, err)) ||
            (dca && ((st = pe_vec_check(eg, qpos_a, T, err)) ||
                     (st = pe_vec_check(eg, qpos_c, T, err)))))
            goto done;
    }
    /* The query side of the sampled rows, gathered (pe_vec transforms are
     * per row at its position, so a gathered row transforms as in place). */
    const float *qraw = io->q;
    const uint32_t *pos_q = pos, *qg = qpos_g, *qa = qpos_a, *qc = qpos_c;
    if (sampled) {
        size_t row = (size_t)H * D;
        qraw_own = malloc(nq * sizeof *qraw_own);
        pq_own = malloc(S * sizeof *pq_own);
        qg_own = remap ? malloc(S * sizeof *qg_own) : NULL;
        qa_own = dca ? malloc(S * sizeof *qa_own) : NULL;
        qc_own = dca ? malloc(S * sizeof *qc_own) : NULL;
        if (!qraw_own || !pq_own || (remap && !qg_own) || (dca && (!qa_own || !qc_own))) {
            st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for %llu sampled query rows",
                         (unsigned long long)S);
            goto done;
        }
        for (uint64_t r = 0; r < S; r++) {
            uint32_t t = io->rows[r];
            if (t >= T || (r && t <= io->rows[r - 1])) {
                st = rl_fail(err, RL_ERR_ARG, "sampled attention: query row %llu is token %u: the "
                             "rows must ascend strictly below %llu", (unsigned long long)r, t,
                             (unsigned long long)T);
                goto done;
            }
            memcpy(qraw_own + r * row, io->q + (size_t)t * row, row * sizeof *qraw_own);
            pq_own[r] = pos[t];
            if (remap)
                qg_own[r] = qpos_g[t];
            if (dca)
                qa_own[r] = qpos_a[t], qc_own[r] = qpos_c[t];
        }
        qraw = qraw_own, pos_q = pq_own, qg = qg_own, qa = qa_own, qc = qc_own;
        if ((st = rlvk_buffer_create(dev, S * 4, "sampled query positions", &bps, err)) ||
            (st = rlvk_buffer_upload(dev, &bps, 0, pos_q, S * 4, err)))
            goto done;
    }
    const rlvk_buffer *qpos_buf = sampled ? &bps : NULL; /* a's and b's query transforms */
    int ea = pe_has_vectors(e), eb = b && pe_has_vectors(b);
    if ((st = operand_create(dev, "Q", qraw, nq, &bq, err)) ||
        (st = operand_create(dev, "K", io->k, nk, &bk, err)))
        goto done;
    if (b) {
        /* Definition b: from the raw tensors (before a's in-place transform)
         * when it has a transform, else the raw tensors themselves. */
        if ((st = operand_create(dev, "Q_b", eb ? NULL : qraw, nq, &bqb, err)) ||
            (st = operand_create(dev, "K_b", eb ? NULL : io->k, nk, &bkb, err)))
            goto done;
        if (eb && (st = xform_add(dev, &X, b, H, PE_ROLE_Q, pos_q, S, &bq, &bqb, err)))
            goto done;
        if (eb)
            X.t[X.n - 1].pos = qpos_buf;
        if (eb && (st = xform_add(dev, &X, b, KV, PE_ROLE_K, pos, T, &bk, &bkb, err)))
            goto done;
    }
    if (remap) {
        /* The remapped definition: from the raw tensors (before a's
         * in-place transform), rotated at its own positions. */
        if ((st = operand_create(dev, "Q_remap", NULL, nq, &bqb, err)) ||
            (!dca && (st = operand_create(dev, "K_remap", NULL, nk, &bkb, err))) ||
            (st = rlvk_buffer_create(dev, S * 4, "remapped q positions", &bpq, err)) ||
            (st = rlvk_buffer_create(dev, T * 4, "remapped k positions", &bpk, err)) ||
            (st = rlvk_buffer_upload(dev, &bpq, 0, qg, S * 4, err)) ||
            (st = rlvk_buffer_upload(dev, &bpk, 0, kpos_g, T * 4, err)) ||
            (st = xform_add(dev, &X, eg, H, PE_ROLE_Q, qg, S, &bq, &bqb, err)))
            goto done;
        X.t[X.n - 1].pos = &bpq;
        if (!dca) {
            if ((st = xform_add(dev, &X, eg, KV, PE_ROLE_K, kpos_g, T, &bk, &bkb, err)))
                goto done;
            X.t[X.n - 1].pos = &bpk;
        } else {
            /* inter-chunk queries from the raw Q; a's Q and K in place
             * below, at the intra-chunk and key positions */
            if ((st = operand_create(dev, "Q_inter", NULL, nq, &bqc, err)) ||
                (st = rlvk_buffer_create(dev, S * 4, "intra-chunk q positions", &bpqa, err)) ||
                (st = rlvk_buffer_create(dev, S * 4, "inter-chunk q positions", &bpqc, err)) ||
                (st = rlvk_buffer_upload(dev, &bpqa, 0, qa, S * 4, err)) ||
                (st = rlvk_buffer_upload(dev, &bpqc, 0, qc, S * 4, err)) ||
                (st = xform_add(dev, &X, eg, H, PE_ROLE_Q, qc, S, &bq, &bqc, err)))
                goto done;
            X.t[X.n - 1].pos = &bpqc;
        }
    }
    /* Definition a's own positions: the caller's, or DCA's chunk positions. */
    const uint32_t *pos_qa = dca ? qa : pos_q, *pos_ka = dca ? kpos_g : pos;
    if (ea) {
        if ((st = xform_add(dev, &X, e, H, PE_ROLE_Q, pos_qa, S, &bq, &bq, err)))
            goto done;
        X.t[X.n - 1].pos = dca ? &bpqa : qpos_buf;
        if ((st = xform_add(dev, &X, e, KV, PE_ROLE_K, pos_ka, T, &bk, &bk, err)))
            goto done;
        X.t[X.n - 1].pos = dca ? &bpk : NULL;
    }
    if ((io->flags & ATTN_OUT) &&
        ((st = rlvk_buffer_create_large(dev, nk * sizeof(float), "V", &bv, err)) ||
         (st = rlvk_buffer_upload(dev, &bv, 0, io->v, nk * sizeof(float), err))))
        goto done;
    if (pe_has_bias(e)) {
        if ((st = attn_pe_bias_create(dev, e, io->q, io->k, T, H, KV, D, &pb, err)))
            goto done;
        have_bias = 1;
    }
    double base = logit_scale(e, D, io->no_attention_factor);
    r->scale_b = b ? logit_scale(b, D, io->paired_no_attention_factor) : base;
    /* a remap's own logit multiplier (STRING's attention factor squared) on
     * the remapped attention only: paired mode's exact definition keeps base */
    r->scale = base * attn_remap_logit_factor(&io->mask.remap);
    r->desc = io_desc(e, io, have_bias, r->scale, r->scale_b);
    attn_outputs o = *out;
    if (!o.stats && !(o.stats = own_stats = malloc(S * H * RL_ATTN_NSTAT * sizeof(float)))) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for %llu tokens of statistics",
                     (unsigned long long)T);
        goto done;
    }
    /* The engine runs transform + attention in one command buffer and
     * leaves verification to the steps below (they need the operands it
     * read, which are on the device until it finished). */
    attn_desc run_desc = r->desc;
    run_desc.no_verify = 1;
    run_desc.test_key_window = io->test_window;
    if (io->mask.learned_sink) {
        if (!(sinks = malloc(H * sizeof *sinks))) {
            st = rl_fail(err, RL_ERR_NOMEM, "out of host memory");
            goto done;
        }
        for (uint32_t h = 0; h < H; h++)
            sinks[h] = (float)io->mask.sink_logit;
    }
    uint32_t xd = 0; /* the transforms' dispatches (2 each: room for a second pass) */
    for (uint32_t i = 0; i < X.n; i++)
        xd += 2 * xform_dispatches(dev, &X.t[i]);
    attn_resident in = {
        .q = &bq, .k = &bk, .v = (io->flags & ATTN_OUT) ? &bv : NULL,
        .q_b = (b || remap) ? &bqb : NULL,
        .k_b = dca ? &bk : (b || remap) ? &bkb : NULL, .q_c = dca ? &bqc : NULL,
        .pos = pos, .target = io->target, .bias = have_bias ? &pb.bias : NULL, .sinks = sinks,
        .rows = sampled ? io->rows : NULL, .before = X.n ? record_xforms : NULL, .before_ctx = &X,
        .before_dispatches = xd,
    };
    if ((st = attn_run_resident(eng, &run_desc, &in, &o, &r->attn, err)))
        goto done;
    /* Verification download: the transformed K whole, the sampled rows of
     * the transformed Q (the only query rows the reference reads). V and
     * untransformed operands are the raw uploads, bit for bit. */
    double t_verify = rl_now();
    uint64_t vr = io->verify_rows ? io->verify_rows : ATTN_DEFAULT_VERIFY_ROWS;
    uint64_t rows = vr < S ? vr : S;
    attn_inputs ref = {.q = qraw, .k = io->k, .v = io->v, .pos = pos, .target = io->target,
                       .bias = have_bias ? &pb.bias : NULL, .sinks = sinks,
                       .rows = sampled ? io->rows : NULL};
    if (ea) {
        if (!(hq = malloc(nq * sizeof *hq)) || !(hk = malloc(nk * sizeof *hk))) {
            st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for the transformed Q/K");
            goto done;
        }
        if ((st = operand_fetch(dev, eref, PE_ROLE_Q, &bq, qraw, pos_qa, S, H, 0, rows, hq,
                                &r->vec_q, err)) ||
            (st = operand_fetch(dev, eref, PE_ROLE_K, &bk, io->k, pos_ka, T, KV, 1, rows, hk,
                                &r->vec_k, err)))
            goto done;
        ref.q = hq;
        ref.k = hk;
    } else {
        exact_copy(nq, &r->vec_q);
        exact_copy(nk, &r->vec_k);
    }
    if (remap) {
        if (!(hqb = malloc(nq * sizeof *hqb)) || !(hkb = malloc(nk * sizeof *hkb)) ||
            (dca && !(hqc = malloc(nq * sizeof *hqc)))) {
            st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for the remapped Q/K");
            goto done;
        }
        if ((st = operand_fetch(dev, eg, PE_ROLE_Q, &bqb, qraw, qg, S, H, 0, rows, hqb,
                                &r->vec_qb, err)) ||
            (!dca && (st = operand_fetch(dev, eg, PE_ROLE_K, &bkb, io->k, kpos_g, T, KV, 1, rows,
                                         hkb, &r->vec_kb, err))) ||
            (dca && (st = operand_fetch(dev, eg, PE_ROLE_Q, &bqc, qraw, qc, S, H, 0, rows,
                                        hqc, &r->vec_qc, err))))
            goto done;
        ref.q_b = hqb;
        ref.k_b = dca ? hk : hkb; /* dca: one key set */
        ref.q_c = hqc;
        if (dca)
            exact_copy(nk, &r->vec_kb); /* K_b is K itself */
        r->remap = 1;
    }
    if (b) {
        ref.q_b = qraw;
        ref.k_b = io->k;
        if (eb) {
            if (!(hqb = malloc(nq * sizeof *hqb)) || !(hkb = malloc(nk * sizeof *hkb))) {
                st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for the transformed Q/K");
                goto done;
            }
            if ((st = operand_fetch(dev, b, PE_ROLE_Q, &bqb, qraw, pos_q, S, H, 0, rows, hqb,
                                    &r->vec_qb, err)) ||
                (st = operand_fetch(dev, b, PE_ROLE_K, &bkb, io->k, pos, T, KV, 1, rows, hkb,
                                    &r->vec_kb, err)))
                goto done;
            ref.q_b = hqb;
            ref.k_b = hkb;
        } else {
            exact_copy(nq, &r->vec_qb);
            exact_copy(nk, &r->vec_kb);
        }
    }
    if ((st = attn_verify_outputs(&r->desc, &ref, &o, r->attn.n_buckets, r->attn.guard_ok,
                                  &r->attn.verify, err)))
        goto done;
    if (io->ref_sink_keys && (st = sink_reference(&r->desc, &ref, have_bias, io, rows, err)))
        goto done;
    r->attn_stats = r->attn.verify.verdict;
    snprintf(r->worst, sizeof r->worst, "%s", r->attn.verify.worst);
    r->pass = r->vec_q.pass && r->vec_k.pass && r->attn_stats.pass &&
              (!(b || remap) || (r->vec_qb.pass && r->vec_kb.pass)) &&
              (!dca || r->vec_qc.pass);
    r->verify_s = rl_now() - t_verify;
done:
    if (have_bias)
        attn_pe_bias_destroy(dev, &pb);
    for (uint32_t i = 0; i < X.n; i++)
        pe_vec_gpu_destroy(&X.t[i].g);
    rlvk_buffer_destroy(dev, &bv);
    rlvk_buffer_destroy(dev, &bqc);
    rlvk_buffer_destroy(dev, &bpqa);
    rlvk_buffer_destroy(dev, &bpqc);
    rlvk_buffer_destroy(dev, &bpk);
    rlvk_buffer_destroy(dev, &bpq);
    rlvk_buffer_destroy(dev, &bkb);
    rlvk_buffer_destroy(dev, &bqb);
    rlvk_buffer_destroy(dev, &bk);
    rlvk_buffer_destroy(dev, &bq);
    rlvk_buffer_destroy(dev, &bps);
    free(qraw_own), free(pq_own), free(qg_own), free(qa_own), free(qc_own);
    free(hq), free(hk), free(hqb), free(hkb);
    free(own_stats);
    free(sinks);
    free(own_pos);
    pe_encoding_destroy(twin); /* after the transforms that point to it */
    pe_encoding_destroy(far_own);
    free(qpos_g);
    free(kpos_g);
    free(qpos_a);
    free(qpos_c);
    free(hqc);
    return st;
}

rl_status exp_attn_engine(const exp_ctx *ctx, attn_engine *own, attn_engine **eng, int *made,
                          rl_error *err)
{
    *made = 0;
    if (ctx->attn) {
        *eng = ctx->attn;
        return RL_OK;
    }
    rl_status st = attn_engine_create(ctx->dev, own, err);
    if (st)
        return st;
    *eng = own;
    *made = 1;
    return RL_OK;
}

rl_status exp_attn_limits(const rlvk_device *dev, const exp_run *run, uint64_t tokens,
                          uint64_t query_rows, uint32_t flags, rl_error *err)
{
    uint64_t qr = query_rows && query_rows < tokens ? query_rows : 0;
    attn_desc d = {.tokens = tokens, .heads = run->model.heads, .kv_heads = run->model.kv_heads,
                   .head_dim = run->model.head_dim, .flags = flags, .query_rows = (uint32_t)qr};
    rl_status st = attn_check_shape(dev, &d, err);
    if (!st) /* the raw Q the transform reads (its sampled rows), with its guard words */
        st = rlvk_check_buffer_size(dev,
                                    (qr ? qr : tokens) * run->model.heads * run->model.head_dim *
                                            sizeof(float) + 256,
                                    "the Q tensor", err);
    if (!st) /* the K tensor the transform writes in place, guarded the same way (bound a
                window at a time beyond one binding: its allocation is the limit) */
        st = rlvk_check_alloc_size(dev,
                                    tokens * run->model.kv_heads * run->model.head_dim *
                                            sizeof(float) + 256,
                                    "the K tensor", err);
    if (st)
        rl_error_prefix(err, "%llu tokens on %s", (unsigned long long)tokens, dev->info.name);
    return st;
}

rl_status exp_attn_remap_check(const exp_run *run, uint64_t max_len, const attn_remap *r,
                               rl_error *err)
{
    if (r->method == ATTN_REMAP_NONE || max_len == 0)
        return RL_OK;
    pe_encoding *e = NULL, *far = NULL;
    rl_status st = exp_encoding_for_pass(run, max_len, 1, &e, err);
    if (!st)
        st = attn_remap_encoding(r, e, &far, err);
    /* every map is monotone in the position: the last token's are the largest */
    uint32_t last = (uint32_t)(max_len - 1), qp, kp, qa, qc;
    if (!st)
        st = attn_remap_defs(r) == ATTN_REMAP_DEFS_CHUNK
                 ? attn_remap_dca_positions(r, &last, 1, &qa, &qp, &qc, &kp, err)
                 : attn_remap_positions(r, &last, 1, &qp, &kp, err);
    if (!st)
        st = pe_vec_check(far ? far : e, &qp, 1, err);
    pe_encoding_destroy(far);
    pe_encoding_destroy(e);
    return st;
}

rl_status exp_attn_check(const exp_run *run, uint64_t min_len, uint64_t max_len, int passes,
                         rl_error *err)
{
    if (min_len > max_len)
        return rl_fail_key(err, RL_ERR_ARG, "min_len", "min_len %llu exceeds max_len %llu",
                           (unsigned long long)min_len, (unsigned long long)max_len);
    if (run->model.head_dim % 4)
        return rl_fail(err, RL_ERR_ARG, "head_dim %u: the attention kernel needs a multiple of 4",
                       run->model.head_dim);
    /* the engine's limit, at load: refused here, not in every run */
    if (run->model.head_dim > ATTN_MAX_HEAD_DIM)
        return rl_fail(err, RL_ERR_LIMIT, "head_dim %u exceeds the attention engine's limit "
                       "ATTN_MAX_HEAD_DIM = %u (Q, K and V rows held per invocation)",
                       run->model.head_dim, ATTN_MAX_HEAD_DIM);
    rl_status st = RL_OK;
    for (int causal = 0; causal < 2 && !st; causal++) {
        if (!(passes & (causal ? EXP_PASS_CAUSAL : EXP_PASS_BIDIR)))
            continue;
        pe_encoding *e;
        st = exp_encoding_for_pass(run, max_len, causal, &e, err);
        pe_encoding_destroy(e);
    }
    return st;
}
