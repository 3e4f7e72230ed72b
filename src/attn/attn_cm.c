/* The cooperative-matrix path without a device: support from listed
 * properties, the options it takes, the tile decomposition, and its error
 * terms.
 *
 * Numerics (u = 2^-24; inputs are fp16 as stored, and the CPU reference
 * reads the same halves exactly, so input rounding is outside the
 * comparison as for attn.comp's fp16 variant):
 *  logit: the products q_d k_d of two halves are exact in fp32 (11 x 11
 *       significant bits). The tensor op sums them in an order the
 *       extension leaves unspecified, and NVIDIA's fp32 accumulation
 *       aligns a group of k products to the largest exponent and truncates
 *       (Fasi, Higham, Mikaitis, Pranesh 2021): in a group step of k
 *       products and the accumulator, each of the k + 1 aligned terms loses
 *       < 2u of the largest magnitude (truncation: 2u, twice rounding's u)
 *       and the normalised result < 2u of its own, so < 2 (k + 2) u times
 *       the sum of the magnitudes; over the D / k steps of a chain (the
 *       accumulator's magnitude <= A) that is < 2 (D / k)(k + 2) u A <= 6 D
 *       u A for every k >= 1, order or rounding (a plain IEEE chain, round
 *       to nearest or toward zero, stays under 2 D u A), A = |scale| sum_d
 *       |q_d k_d|. The stored fp32 tile is then scaled (one rounding, the
 *       "+ 2" kept from attn_tol.c): E_s = (6 D + 2) u A. tests/test_attn_cm.c
 *       runs this model for k = 1..16 in random orders against the bound.
 *  O: P = 2^15 exp(s - m) (<= 2^15, below fp16's 65504) rounded to fp16:
 *       relative error < 2^-10 (round to nearest or toward zero), and for P
 *       under 2^-14 (p < 2^-29) an absolute error < 2^-14 (2^-29 in p)
 *       where the device flushes fp16 denormals. V is exact (fp16). The PV
 *       products are exact in fp32; their sum over the block's N <= 16 keys
 *       in the tensor op errs by < 6 * 16 u (the logit's argument with D = N)
 *       and the running o = o alpha + 2^-15 PV per block (a multiply and an
 *       add, < 2u each) by < 4u per block step: (96 + 4 N_k) u relative to
 *       sum_j p_j |v_jd|. The flushed part, after
 *       the normalisation by l >= 1, is < 2^-29 sum_j |v_jd|; since O's
 *       tolerance is >= 2^-10, judging O relative to sum_j p_j |v_jd| +
 *       2^-19 sum_j |v_jd| covers it (ATTN_CM_O_FLOOR).
 *  The statistics (m, l, entropy, argmax, target) come from the fp32 S
 *       tile exactly as attn.comp computes them per key, so attn_tol.c's
 *       terms apply with the E_s above. */
#include <stdio.h>
#include <string.h>

#include "attn/attn_cm.h"
/* embedded SPIR-V (after <stdint.h>) */
#include "attn_cm_f16.spv.h"
#include "attn_cm_emu_f16.spv.h"
#include "attn_cm_khr_f16.spv.h"

const uint32_t *attn_cm_spirv(int module, size_t *bytes)
{
    switch (module) {
    case ATTN_CM_SPV_EMU:
        *bytes = sizeof rl_spv_attn_cm_emu_f16;
        return rl_spv_attn_cm_emu_f16;
    case ATTN_CM_SPV_KHR:
        *bytes = sizeof rl_spv_attn_cm_khr_f16;
        return rl_spv_attn_cm_khr_f16;
    default:
        *bytes = sizeof rl_spv_attn_cm_f16;
        return rl_spv_attn_cm_f16;
    }
}

/* A listed shape the kernel can take: fp16 x fp16 + fp32 -> fp32 at
 * subgroup scope, M dividing the 64-query workgroup, N a key block the
 * engine stages (8 or 16), K 8, 16 or 32. */
static int shape_fits(const rlvk_cm_shape *s)
{
    return s->a == RLVK_CM_F16 && s->b == RLVK_CM_F16 && s->c == RLVK_CM_F32 &&
           s->result == RLVK_CM_F32 && s->scope == RLVK_CM_SCOPE_SUBGROUP && !s->saturating &&
           s->m >= 8 && s->m <= ATTN_WG && ATTN_WG % s->m == 0 && (s->n == 8 || s->n == 16) &&
           (s->k == 8 || s->k == 16 || s->k == 32);
}

/* The extension's pick: 16x16x16 when listed, else its first fitting shape. */
static int pick(const rlvk_cm_info *cm, int khr, attn_cm_shape *out)
{
    const rlvk_cm_shape *best = NULL;
    for (uint32_t i = 0; i < cm->n_shapes; i++) {
        const rlvk_cm_shape *s = &cm->shapes[i];
        if (s->khr != khr || !shape_fits(s))
            continue;
        if (!best || (s->m == 16 && s->n == 16 && s->k == 16 &&
                      !(best->m == 16 && best->n == 16 && best->k == 16)))
            best = s;
    }
    if (best)
        *out = (attn_cm_shape){best->m, best->n, best->k,
                               khr ? ATTN_CM_SPV_KHR : ATTN_CM_SPV_NV};
    return best != NULL;
}

int attn_cm_shape_of(const rlvk_device_info *props, attn_cm_shape *s, const char **why)
{
    const rlvk_cm_info *cm = &props->cm;
    const char *w = NULL;
    attn_cm_shape sh = {0};
    int khr_ok = cm->has_khr && cm->feat_khr, nv_ok = cm->has_nv && cm->feat_nv && cm->nv_compute;
    if (!cm->has_nv && !cm->has_khr)
        w = "device lacks VK_NV_cooperative_matrix / VK_KHR_cooperative_matrix";
    else if (!khr_ok && !nv_ok)
        w = !cm->has_nv   ? "VK_KHR_cooperative_matrix is listed but its cooperativeMatrix "
                            "feature is off"
            : !cm->feat_nv ? "VK_NV_cooperative_matrix is listed but its cooperativeMatrix "
                             "feature is off"
                           : "VK_NV_cooperative_matrix does not list the compute stage";
    else if (!cm->vk_memory_model)
        w = "the kernel's SPIR-V needs vulkanMemoryModel, which the device lacks";
    else if (!props->fp16 || !props->storage16)
        w = "the kernel needs shaderFloat16 and storageBuffer16BitAccess";
    else if (props->subgroup_size == 0 || props->subgroup_size > 64 ||
             64 % props->subgroup_size != 0)
        w = "the subgroup size does not divide the 64-query workgroup";
    else if (!(khr_ok && pick(cm, 1, &sh)) && !(nv_ok && pick(cm, 0, &sh)))
        w = "no listed float16 x float16 + float32 -> float32 subgroup shape fits (M dividing "
            "64, N 8 or 16, K 8, 16 or 32)";
    if (why)
        *why = w;
    if (s)
        *s = w ? (attn_cm_shape){0} : sh;
    return w == NULL;
}

int attn_cm_supported(const rlvk_device_info *props, const char **why)
{
    return attn_cm_shape_of(props, NULL, why);
}

attn_cm_shape attn_cm_shape_for(const rlvk_device_info *props, const attn_desc *d)
{
    attn_cm_shape s = {0};
    if (d->test_cm_emulate) {
        uint32_t e = d->test_cm_tile ? d->test_cm_tile : 16;
        return (attn_cm_shape){e, e, e, ATTN_CM_SPV_EMU};
    }
    attn_cm_shape_of(props, &s, NULL);
    return s;
}

const char *attn_cm_shape_str(const attn_cm_shape *s, char *buf, size_t cap)
{
    static const char *const ext[] = {"VK_NV_cooperative_matrix", "emulated tensor ops",
                                      "VK_KHR_cooperative_matrix"};
    snprintf(buf, cap, "%s %ux%ux%u", ext[s->module >= 0 && s->module <= 2 ? s->module : 0], s->m,
             s->n, s->k);
    return buf;
}

uint64_t attn_cm_shared_bytes(uint32_t head_dim, int want_o, uint32_t n, uint32_t k)
{
    /* qs [64][D] f16, ks [N][D] f16, ss [64][N] f32; with O vs [N][D] f16,
     * ps [64][N] f16, pvs [64][K] f32 (one element each without). */
    uint64_t d = head_dim;
    uint64_t b = 64 * d * 2 + n * d * 2 + 64 * (uint64_t)n * 4;
    b += want_o ? n * d * 2 + 64 * (uint64_t)n * 2 + 64 * (uint64_t)k * 4 : 2 + 2 + 4;
    return b;
}

rl_status attn_cm_check(const rlvk_device_info *props, const attn_desc *d,
                        const char *bias_variant, int have_sinks, rl_error *err)
{
    const char *why;
    if (!d->test_cm_emulate && !attn_cm_supported(props, &why))
        return rl_fail(err, RL_ERR_UNSUPPORTED, "cooperative-matrix path on %s: %s", props->name,
                       why);
    attn_cm_shape cs = attn_cm_shape_for(props, d);
    if (d->test_cm_emulate && cs.m != 8 && cs.m != 16)
        return rl_fail(err, RL_ERR_ARG, "cooperative-matrix path: emulated tile %u (8 or 16)",
                       cs.m);
    static const struct {
        uint32_t flag;
        const char *name;
    } refused[] = {{ATTN_BUCKETS, "distance buckets"},
                   {ATTN_PAIRED, "paired logits (KL)"},
                   {ATTN_DUMP, "the logit dump"}};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (d->flags & refused[i].flag)
            return rl_fail(err, RL_ERR_UNSUPPORTED,
                           "cooperative-matrix path: %s not computed (it computes lse, max, "
                           "entropy, argmax, target p, O)", refused[i].name);
    const char *opt = NULL;
    if (bias_variant && strcmp(bias_variant, "none") != 0)
        opt = "a logit bias";
    else if (d->window || d->n_sink || d->chunk_size)
        opt = "masks beyond causal (window, n_sink, chunk_size)";
    else if (have_sinks)
        opt = "learned sinks";
    else if (d->temp)
        opt = "an attention temperature";
    else if (d->remap_window || d->remap_chunk)
        opt = "position remapping (remap_window, remap_chunk)";
    if (opt)
        return rl_fail(err, RL_ERR_UNSUPPORTED, "cooperative-matrix path: %s is not supported",
                       opt);
    if (!d->fp16)
        return rl_fail(err, RL_ERR_UNSUPPORTED,
                       "cooperative-matrix path: reads fp16 Q/K/V (attn_desc.fp16 = 1), not fp32");
    if (d->head_dim % cs.k != 0 || d->head_dim > ATTN_CM_MAX_HEAD_DIM)
        return rl_fail(err, RL_ERR_UNSUPPORTED,
                       "cooperative-matrix path: head_dim %u must be a multiple of %u (the "
                       "tile's K) and at most %u", d->head_dim, cs.k, ATTN_CM_MAX_HEAD_DIM);
    uint64_t sh = attn_cm_shared_bytes(d->head_dim, (d->flags & ATTN_OUT) != 0, cs.n, cs.k);
    if (sh > props->max_shared_memory)
        return rl_fail(err, RL_ERR_UNSUPPORTED,
                       "cooperative-matrix path: needs %llu bytes of shared memory, over %s's "
                       "maxComputeSharedMemorySize (%u)",
                       (unsigned long long)sh, props->name, props->max_shared_memory);
    if (d->block_keys && d->block_keys != cs.n)
        return rl_fail(err, RL_ERR_UNSUPPORTED,
                       "cooperative-matrix path: block_keys %u (its key tile is %u keys)",
                       d->block_keys, cs.n);
    return RL_OK;
}

rl_status attn_cm_plan_make(uint64_t tokens, uint32_t head_dim, uint32_t chunk_blocks, int causal,
                            const attn_cm_shape *s, attn_cm_plan *p, rl_error *err)
{
    attn_cm_shape d16 = {ATTN_CM_M, ATTN_CM_N, ATTN_CM_K, ATTN_CM_SPV_NV};
    if (!s)
        s = &d16;
    memset(p, 0, sizeof *p);
    if (s->m == 0 || ATTN_WG % s->m != 0 || s->n == 0 || s->k == 0)
        return rl_fail(err, RL_ERR_ARG,
                       "cooperative-matrix plan: tile %ux%ux%u (M must divide %u, N and K >= 1)",
                       s->m, s->n, s->k, ATTN_WG);
    if (tokens == 0 || head_dim == 0 || head_dim % s->k != 0 || chunk_blocks == 0 ||
        chunk_blocks > RL_ATTN_MAX_BLOCKS)
        return rl_fail(err, RL_ERR_ARG,
                       "cooperative-matrix plan: tokens %llu (>= 1), head_dim %u (multiple of "
                       "%u), chunk_blocks %u (1..%u)",
                       (unsigned long long)tokens, head_dim, s->k, chunk_blocks,
                       RL_ATTN_MAX_BLOCKS);
    p->tokens = tokens;
    p->head_dim = head_dim;
    p->chunk_blocks = chunk_blocks;
    p->causal = causal != 0;
    p->m = s->m;
    p->n = s->n;
    p->k = s->k;
    p->k_steps = head_dim / s->k;
    p->chunk_keys = (uint64_t)chunk_blocks * s->n;
    p->n_qblocks = (tokens + ATTN_WG - 1) / ATTN_WG;
    p->n_chunks = (tokens + p->chunk_keys - 1) / p->chunk_keys;
    p->padded_rows = p->n_qblocks * ATTN_WG;
    p->padded_keys = p->n_chunks * p->chunk_keys;
    return RL_OK;
}

uint64_t attn_cm_chunk_qblock0(const attn_cm_plan *p, uint64_t c)
{
    /* attn_gpu.c: full0 = causal ? k0 / ATTN_WG : 0 */
    return p->causal ? c * p->chunk_keys / ATTN_WG : 0;
}

static uint32_t valid(uint64_t start, uint64_t len, uint64_t n)
{
    return start >= n ? 0u : (uint32_t)(n - start < len ? n - start : len);
}

uint64_t attn_cm_tiles(const attn_cm_plan *p, attn_cm_tile *out, uint64_t cap)
{
    uint64_t count = 0;
    for (uint64_t c = 0; c < p->n_chunks; c++)
        for (uint64_t qb = attn_cm_chunk_qblock0(p, c); qb < p->n_qblocks; qb++)
            for (uint32_t b = 0; b < p->chunk_blocks; b++)
                for (uint32_t rt = 0; rt < ATTN_WG / p->m; rt++) {
                    if (out && count < cap) {
                        attn_cm_tile *t = &out[count];
                        t->q0 = qb * ATTN_WG + (uint64_t)rt * p->m;
                        t->k0 = c * p->chunk_keys + (uint64_t)b * p->n;
                        t->rows = valid(t->q0, p->m, p->tokens);
                        t->keys = valid(t->k0, p->n, p->tokens);
                    }
                    count++;
                }
    return count;
}

int attn_cm_row_last_chunk(const attn_cm_plan *p, uint64_t i, uint64_t c)
{
    /* attn_cm.comp: last = CAUSAL ? qi < j0 + chunk : j0 + chunk >= n */
    uint64_t j0 = c * p->chunk_keys;
    return p->causal ? (i >= j0 && i < j0 + p->chunk_keys) : j0 + p->chunk_keys >= p->tokens;
}

double attn_cm_logit_err(uint32_t head_dim, double max_abs_dot)
{
    return (6.0 * head_dim + 2.0) * 0x1p-24 * max_abs_dot;
}

double attn_cm_out_extra(uint64_t n_keys)
{
    return 0x1p-10 + (96.0 + 4.0 * (double)n_keys) * 0x1p-24;
}
