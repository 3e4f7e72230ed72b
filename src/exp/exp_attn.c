/* exp_attn.c — attention of a run's encoding, for experiment kinds:
 * the encoding's vector transform on the device (verified element-wise
 * against its double reference within the registry's bound), its logit bias
 * inside the streaming kernel (registry buffers + CPU reference), the logit
 * scale 1/sqrt(d) times the RoPE attention factor squared (HF: the factor
 * multiplies cos and sin), and the engine's sampled-row verification judged
 * by the verification layer against the per-statistic tolerances of
 * attn/attn_tol.c. */
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

/* y = transform(x) on the device, and its check against the reference.
 * x: [tokens][heads][head_dim] f32 raw; y: same shape (caller-owned). */
static rl_status transform(rlvk_device *dev, const pe_encoding *e, const float *x,
                           const uint32_t *pos, uint64_t tokens, uint32_t heads, float *y,
                           vf_stats *s, rl_error *err)
{
    size_t n = (size_t)tokens * heads * pe_encoding_shape(e)->head_dim;
    if (!pe_has_vectors(e)) {
        memcpy(y, x, n * sizeof *y);
        memset(s, 0, sizeof *s);
        s->n = n;
        s->first_bad = VF_NONE;
        s->nmse_ok = 1;
        s->pass = 1;
        return RL_OK;
    }
    pe_vec_gpu g = {0};
    double *ref = malloc(n * sizeof *ref), *bound = malloc(n * sizeof *bound),
           *scale = malloc(n * sizeof *scale);
    int guard_ok = 0;
    rl_status st = RL_OK;
    if (!ref || !bound || !scale)
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for %zu transformed elements", n);
    if (!st)
        st = pe_vec_gpu_create(dev, e, heads, &g, err);
    if (!st)
        st = pe_vec_gpu_apply(dev, &g, x, pos, tokens, y, &guard_ok, err);
    if (!st)
        st = pe_vec_ref(e, x, pos, tokens, heads, ref, err);
    if (!st) {
        pe_vec_bound(e, x, pos, tokens, heads, bound, scale);
        vf_compare(y, ref, bound, scale, n, VF_GATE_ELEM, s);
        vf_set_guard(s, guard_ok);
    }
    pe_vec_gpu_destroy(&g);
    free(ref);
    free(bound);
    free(scale);
    return st;
}

rl_status exp_attn_run(rlvk_device *dev, attn_engine *eng, const pe_encoding *e,
                       const exp_attn_io *io, const attn_outputs *out, exp_attn_result *r,
                       rl_error *err)
{
    memset(r, 0, sizeof *r);
    const pe_shape *sh = pe_encoding_shape(e);
    uint32_t H = sh->heads, KV = sh->kv_heads, D = sh->head_dim;
    uint64_t T = io->tokens;
    if (io->paired && pe_has_bias(io->paired))
        return rl_fail(err, RL_ERR_ARG, "paired attention: the second encoding must act on the "
                                        "vectors only (got a logit bias)");
    size_t nq = (size_t)T * H * D, nk = (size_t)T * KV * D;
    float *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k);
    float *qb = io->paired ? malloc(nq * sizeof *qb) : NULL;
    float *kb = io->paired ? malloc(nk * sizeof *kb) : NULL;
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
    if (!q || !k || !pos || (io->paired && (!qb || !kb))) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for %llu tokens of Q/K",
                     (unsigned long long)T);
        goto done;
    }
    if ((st = transform(dev, e, io->q, pos, T, H, q, &r->vec_q, err)) ||
        (st = transform(dev, e, io->k, pos, T, KV, k, &r->vec_k, err)))
        goto done;
    if (io->paired &&
        ((st = transform(dev, io->paired, io->q, pos, T, H, qb, &r->vec_qb, err)) ||
         (st = transform(dev, io->paired, io->k, pos, T, KV, kb, &r->vec_kb, err))))
        goto done;
    if (pe_has_bias(e)) {
        if ((st = attn_pe_bias_create(dev, e, io->q, io->k, T, H, KV, D, &pb, err)))
            goto done;
        have_bias = 1;
    }
    r->scale = logit_scale(e, D, io->no_attention_factor);
    r->scale_b = io->paired ? logit_scale(io->paired, D, io->paired_no_attention_factor) : r->scale;
    r->desc = (attn_desc){
        .tokens = T, .heads = H, .kv_heads = KV, .head_dim = D, .causal = io->causal,
        .flags = io->flags | (io->paired ? ATTN_PAIRED | (have_bias ? ATTN_NO_BIAS_B : 0) : 0),
        .scale = (float)r->scale, .scale_b = (float)r->scale_b,
        .verify_rows = io->verify_rows,
    };
    attn_inputs in = {.q = q, .k = k, .v = io->v, .q_b = qb, .k_b = kb, .pos = pos,
                      .target = io->target, .bias = have_bias ? &pb.bias : NULL};
    if ((st = attn_run(eng, &r->desc, &in, out, &r->attn, err)))
        goto done;
    r->attn_stats = r->attn.verify.verdict;
    snprintf(r->worst, sizeof r->worst, "%s", r->attn.verify.worst);
    r->pass = r->vec_q.pass && r->vec_k.pass && r->attn_stats.pass &&
              (!io->paired || (r->vec_qb.pass && r->vec_kb.pass));
done:
    if (have_bias)
        attn_pe_bias_destroy(dev, &pb);
    free(q);
    free(k);
    free(qb);
    free(kb);
    free(own_pos);
    return st;
}

int exp_attn_record(exp_sink *sink, const char *label, const exp_attn_result *r)
{
    char what[160];
    const vf_stats *v[4] = {&r->vec_q, &r->vec_k, &r->vec_qb, &r->vec_kb};
    static const char *const names[4] = {"q", "k", "q (paired)", "k (paired)"};
    for (int i = 0; i < 4; i++) {
        if (v[i]->n == 0)
            continue;
        snprintf(what, sizeof what, "%s: transformed %s, device vs double reference", label,
                 names[i]);
        exp_sink_verify_stats(sink, what, v[i],
                              "per element within the encoding's bound (pe_vec_bound), NMSE gate");
    }
    snprintf(what, sizeof what, "%s: attention statistics of %u sampled rows vs double reference",
             label, r->attn.verify.rows);
    char detail[200];
    snprintf(detail, sizeof detail, "per-statistic fp32 bounds (attn_tol.c); worst: %s, "
                                    "error/bound %.3g%s", r->worst, r->attn_stats.worst_ratio,
             r->attn.guard_ok ? "" : "; kernel wrote past its output");
    exp_sink_verify_stats(sink, what, &r->attn_stats, detail);
    return r->pass;
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
