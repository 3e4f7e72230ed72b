/* exp_attn.c — attention of a run's encoding, for experiment kinds:
 * the encoding's vector transform on the device, recorded with the
 * attention into one command buffer on the same device buffers (sampled
 * rows verified element-wise against its double reference within the
 * registry's bound), its logit bias
 * inside the streaming kernel (registry buffers + CPU reference), the logit
 * scale 1/sqrt(d) times the RoPE attention factor squared (HF: the factor
 * multiplies cos and sin), and the engine's sampled-row verification judged
 * against the per-statistic tolerances derived in check/chk_attn.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    double s = 1.0 / sqrt((double)head_dim);
    const rope_freqs *f = pe_rope_freqs(e);
    if (f && no_af && f->attention_factor > 0)
        s /= f->attention_factor * f->attention_factor;
    return s;
}

/* The reference side of one operand: the fp32 operand the attention
 * reference reads (the encoding's double reference transform pe_vec_ref of
 * the raw tensor, rounded) and how far the device's transformed value may
 * lie from it (the kernel's bound pe_vec_bound + that rounding), both
 * [tokens][heads][head_dim]; and, for the element-wise check, the double
 * reference, bound and error scale of the sampled tokens only
 * ([rows][heads][head_dim]). */
typedef struct ref_side {
    float *f;
    double *err;
    double *s_ref, *s_bound, *s_scale;
    uint64_t rows;
} ref_side;

static void side_free(ref_side *s)
{
    free(s->f);
    free(s->err);
    free(s->s_ref);
    free(s->s_bound);
    free(s->s_scale);
    memset(s, 0, sizeof *s);
}

static rl_status side_make(const pe_encoding *e, const float *x, const uint32_t *pos,
                           uint64_t tokens, uint32_t heads, uint32_t verify_rows, ref_side *s,
                           rl_error *err)
{
    size_t row = (size_t)heads * pe_encoding_shape(e)->head_dim, n = tokens * row;
    memset(s, 0, sizeof *s);
    s->rows = verify_rows < tokens ? verify_rows : tokens;
    size_t ns = s->rows * row;
    double *ref = malloc(n * sizeof *ref), *bound = malloc(n * sizeof *bound),
           *scale = malloc(n * sizeof *scale);
    s->f = malloc(n * sizeof *s->f);
    s->err = malloc(n * sizeof *s->err);
    s->s_ref = malloc(ns * sizeof *s->s_ref);
    s->s_bound = malloc(ns * sizeof *s->s_bound);
    s->s_scale = malloc(ns * sizeof *s->s_scale);
    rl_status st = RL_OK;
    if (!ref || !bound || !scale || !s->f || !s->err || !s->s_ref || !s->s_bound || !s->s_scale)
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for %zu transformed elements", n);
    if (!st)
        st = pe_vec_ref(e, x, pos, tokens, heads, ref, err);
    if (!st) {
        pe_vec_bound(e, x, pos, tokens, heads, bound, scale);
        for (size_t i = 0; i < n; i++) {
            s->f[i] = (float)ref[i];
            s->err[i] = bound[i] + fabs(ref[i] - (double)s->f[i]);
        }
        for (uint64_t r = 0; r < s->rows; r++) {
            uint64_t t = attn_verify_token(r, s->rows, tokens);
            memcpy(s->s_ref + r * row, ref + t * row, row * sizeof *ref);
            memcpy(s->s_bound + r * row, bound + t * row, row * sizeof *bound);
            memcpy(s->s_scale + r * row, scale + t * row, row * sizeof *scale);
        }
    }
    free(ref);
    free(bound);
    free(scale);
    return st;
}

/* One operand on the device: [tokens][heads][head_dim] f32 followed by
 * guard words the transform must not touch. */
#define EXP_GUARD_WORDS 64
#define EXP_GUARD_BITS 0x7fc0beefu

static rl_status operand_create(rlvk_device *dev, const char *name, const float *raw, size_t n,
                                rlvk_buffer *b, rl_error *err)
{
    uint32_t guard[EXP_GUARD_WORDS];
    for (int i = 0; i < EXP_GUARD_WORDS; i++)
        guard[i] = EXP_GUARD_BITS;
    rl_status st = rlvk_buffer_create(dev, n * sizeof *raw + sizeof guard, name, b, err);
    if (!st && raw)
        st = rlvk_buffer_upload(dev, b, 0, raw, n * sizeof *raw, err);
    if (!st)
        st = rlvk_buffer_upload(dev, b, n * sizeof *raw, guard, sizeof guard, err);
    return st;
}

/* Element-wise check of the transformed operand on the device against its
 * double reference, on the sampled tokens only (those the attention
 * verification samples): downloads those rows and the guard words. */
static rl_status operand_check(rlvk_device *dev, const rlvk_buffer *b, const ref_side *s,
                               uint64_t tokens, uint32_t heads, uint32_t D, chk_stats *cs,
                               rl_error *err)
{
    size_t row = (size_t)heads * D, n = s->rows * row;
    float *got = malloc(n * sizeof *got);
    uint32_t guard[EXP_GUARD_WORDS];
    rl_status st = RL_OK;
    if (!got)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory for the sampled rows");
    for (uint64_t r = 0; r < s->rows && !st; r++)
        st = rlvk_buffer_download(dev, b, attn_verify_token(r, s->rows, tokens) * row * sizeof *got,
                                  got + r * row, row * sizeof *got, err);
    if (!st)
        st = rlvk_buffer_download(dev, b, tokens * row * sizeof *got, guard, sizeof guard, err);
    if (!st) {
        chk_compare(got, s->s_ref, s->s_bound, s->s_scale, n, cs);
        for (int i = 0; i < EXP_GUARD_WORDS; i++)
            if (guard[i] != EXP_GUARD_BITS)
                cs->pass = 0;
    }
    free(got);
    return st;
}

/* The transforms recorded before the attention, in order (definition b's
 * from the raw tensors first, then definition a's in place). */
typedef struct xform {
    pe_vec_gpu g;
    const rlvk_buffer *x, *y;
} xform;

typedef struct xforms {
    xform t[4];
    uint32_t n;
    uint64_t tokens;
} xforms;

static rl_status record_xforms(void *ctx, rlvk_cmd *cmd, const rlvk_buffer *pos, rl_error *err)
{
    xforms *X = ctx;
    rl_status st = RL_OK;
    for (uint32_t i = 0; i < X->n && !st; i++)
        st = pe_vec_gpu_record(cmd, &X->t[i].g, X->t[i].x, X->t[i].y, pos, X->tokens, err);
    return st;
}

/* Adds the transform x -> y of encoding e (heads heads) to X, its
 * position-dependent data uploaded now (pe_vec_gpu_prepare). */
static rl_status xform_add(rlvk_device *dev, xforms *X, const pe_encoding *e, uint32_t heads,
                           const uint32_t *pos, const rlvk_buffer *x, const rlvk_buffer *y,
                           rl_error *err)
{
    xform *t = &X->t[X->n];
    rl_status st = pe_vec_gpu_create(dev, e, heads, &t->g, err);
    if (st)
        return st;
    X->n++;
    t->x = x;
    t->y = y;
    return pe_vec_gpu_prepare(&t->g, pos, X->tokens, err);
}

/* Q/K go up raw once and stay on the device: the encoding's transform is
 * recorded into the attention's first command buffer (attn_run_resident's
 * `before`), and nothing of the transformed tensors comes back but the
 * sampled rows' (element-wise check). The attention reference is
 * independent of the device transform: it reads the double reference
 * transform of the raw tensors (rounded to fp32), and the transform's
 * per-element bound widens the attention tolerances by the logit shift it
 * allows (docs/attention.md, "Verification"). */
rl_status exp_attn_run(rlvk_device *dev, attn_engine *eng, const pe_encoding *e,
                       const exp_attn_io *io, const attn_outputs *out, exp_attn_result *r,
                       rl_error *err)
{
    memset(r, 0, sizeof *r);
    const pe_shape *sh = pe_encoding_shape(e);
    uint32_t H = sh->heads, KV = sh->kv_heads, D = sh->head_dim;
    uint64_t T = io->tokens;
    const pe_encoding *b = io->paired;
    if (b && pe_has_bias(b))
        return rl_fail(err, RL_ERR_ARG, "paired attention: the second encoding must act on the "
                                        "vectors only (got a logit bias)");
    size_t nq = (size_t)T * H * D, nk = (size_t)T * KV * D;
    ref_side sq = {0}, sk = {0}, sqb = {0}, skb = {0};
    rlvk_buffer bq = {0}, bk = {0}, bqb = {0}, bkb = {0}, bv = {0};
    xforms X = {.tokens = T};
    attn_pe_bias pb;
    int have_bias = 0;
    rl_status st = RL_OK;
    uint32_t *own_pos = NULL;
    const uint32_t *pos = io->pos;
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
    /* References first: they also refuse positions the encoding cannot take
     * (pe_vec_check) before any device work. */
    const pe_encoding *eref = io->ref_encoding ? io->ref_encoding : e;
    uint32_t vr = io->verify_rows ? io->verify_rows : ATTN_DEFAULT_VERIFY_ROWS;
    if ((st = side_make(eref, io->q, pos, T, H, vr, &sq, err)) ||
        (st = side_make(eref, io->k, pos, T, KV, vr, &sk, err)))
        goto done;
    if (b && ((st = side_make(b, io->q, pos, T, H, vr, &sqb, err)) ||
              (st = side_make(b, io->k, pos, T, KV, vr, &skb, err))))
        goto done;
    if ((st = operand_create(dev, "Q", io->q, nq, &bq, err)) ||
        (st = operand_create(dev, "K", io->k, nk, &bk, err)))
        goto done;
    if (b) {
        /* Definition b: from the raw tensors (before a's in-place transform)
         * when it has a transform, else the raw tensors themselves. */
        int bv_ = pe_has_vectors(b);
        if ((st = operand_create(dev, "Q_b", bv_ ? NULL : io->q, nq, &bqb, err)) ||
            (st = operand_create(dev, "K_b", bv_ ? NULL : io->k, nk, &bkb, err)))
            goto done;
        if (bv_ && ((st = xform_add(dev, &X, b, H, pos, &bq, &bqb, err)) ||
                    (st = xform_add(dev, &X, b, KV, pos, &bk, &bkb, err))))
            goto done;
    }
    if (pe_has_vectors(e) && ((st = xform_add(dev, &X, e, H, pos, &bq, &bq, err)) ||
                              (st = xform_add(dev, &X, e, KV, pos, &bk, &bk, err))))
        goto done;
    if ((io->flags & ATTN_OUT) &&
        ((st = rlvk_buffer_create(dev, nk * sizeof(float), "V", &bv, err)) ||
         (st = rlvk_buffer_upload(dev, &bv, 0, io->v, nk * sizeof(float), err))))
        goto done;
    if (pe_has_bias(e)) {
        if ((st = attn_pe_bias_create(dev, e, io->q, io->k, T, H, KV, D, &pb, err)))
            goto done;
        have_bias = 1;
    }
    r->scale = logit_scale(e, D, io->no_attention_factor);
    r->scale_b = b ? logit_scale(b, D, io->paired_no_attention_factor) : r->scale;
    r->desc = (attn_desc){
        .tokens = T, .heads = H, .kv_heads = KV, .head_dim = D, .causal = io->causal,
        .flags = io->flags | (b ? ATTN_PAIRED | (have_bias ? ATTN_NO_BIAS_B : 0) : 0),
        .scale = (float)r->scale, .scale_b = (float)r->scale_b,
        .verify_rows = io->verify_rows,
    };
    /* Operands the encoding leaves alone are exact copies (no bound). */
    int ea = pe_has_vectors(eref), eb = b && pe_has_vectors(b);
    attn_resident in = {
        .q = &bq, .k = &bk, .v = (io->flags & ATTN_OUT) ? &bv : NULL,
        .q_b = b ? &bqb : NULL, .k_b = b ? &bkb : NULL,
        .pos = pos, .target = io->target, .bias = have_bias ? &pb.bias : NULL,
        .before = X.n ? record_xforms : NULL, .before_ctx = &X, .before_dispatches = 2 * X.n,
        .ref = {.q = sq.f, .k = sk.f, .v = io->v, .q_b = b ? sqb.f : NULL, .k_b = b ? skb.f : NULL,
                .err_q = ea ? sq.err : NULL, .err_k = ea ? sk.err : NULL,
                .err_q_b = eb ? sqb.err : NULL, .err_k_b = eb ? skb.err : NULL},
    };
    if ((st = attn_run_resident(eng, &r->desc, &in, out, &r->attn, err)))
        goto done;
    if ((st = operand_check(dev, &bq, &sq, T, H, D, &r->vec_q, err)) ||
        (st = operand_check(dev, &bk, &sk, T, KV, D, &r->vec_k, err)))
        goto done;
    if (b && ((st = operand_check(dev, &bqb, &sqb, T, H, D, &r->vec_qb, err)) ||
              (st = operand_check(dev, &bkb, &skb, T, KV, D, &r->vec_kb, err))))
        goto done;
    chk_attn_judge(&r->desc, &r->attn.verify, &r->attn_stats, r->worst, sizeof r->worst);
    r->pass = r->vec_q.pass && r->vec_k.pass && r->attn_stats.pass &&
              (!b || (r->vec_qb.pass && r->vec_kb.pass));
done:
    if (have_bias)
        attn_pe_bias_destroy(dev, &pb);
    for (uint32_t i = 0; i < X.n; i++)
        pe_vec_gpu_destroy(&X.t[i].g);
    rlvk_buffer_destroy(dev, &bv);
    rlvk_buffer_destroy(dev, &bkb);
    rlvk_buffer_destroy(dev, &bqb);
    rlvk_buffer_destroy(dev, &bk);
    rlvk_buffer_destroy(dev, &bq);
    side_free(&skb);
    side_free(&sqb);
    side_free(&sk);
    side_free(&sq);
    free(own_pos);
    return st;
}

int exp_attn_record(exp_sink *sink, const char *label, const exp_attn_result *r)
{
    char what[160];
    const chk_stats *v[4] = {&r->vec_q, &r->vec_k, &r->vec_qb, &r->vec_kb};
    static const char *const names[4] = {"q", "k", "q (paired)", "k (paired)"};
    for (int i = 0; i < 4; i++) {
        if (v[i]->n == 0)
            continue;
        snprintf(what, sizeof what, "%s: transformed %s, device vs double reference", label,
                 names[i]);
        exp_sink_verify(sink, what, v[i]->err_at_worst, v[i]->bound_at_worst, v[i]->pass,
                        "per element within the encoding's bound (pe_vec_bound)");
    }
    snprintf(what, sizeof what, "%s: attention statistics of %u sampled rows vs double reference",
             label, r->attn.verify.rows);
    char detail[128];
    snprintf(detail, sizeof detail, "per-statistic fp32 bounds (chk_attn.c); worst: %s, "
                                    "error/bound %.3g", r->worst, r->attn_stats.worst_ratio);
    exp_sink_verify(sink, what, r->attn_stats.err_at_worst, r->attn_stats.bound_at_worst,
                    r->attn_stats.pass, detail);
    return r->pass;
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

rl_status exp_attn_check(const exp_run *run, uint64_t min_len, uint64_t max_len, rl_error *err)
{
    if (min_len > max_len)
        return rl_fail(err, RL_ERR_ARG, "min_len %llu exceeds max_len %llu",
                       (unsigned long long)min_len, (unsigned long long)max_len);
    if (run->model.head_dim % 4)
        return rl_fail(err, RL_ERR_ARG, "head_dim %u: the attention kernel needs a multiple of 4",
                       run->model.head_dim);
    pe_encoding *e;
    rl_status st = exp_encoding_create(run, max_len, &e, err);
    pe_encoding_destroy(e);
    return st;
}
