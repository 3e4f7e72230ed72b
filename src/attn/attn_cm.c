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
 *       products are exact in fp32; their sum over the block's 16 keys in
 *       the tensor op errs by < 6 * 16 u (the logit's argument with D = 16)
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

const uint32_t *attn_cm_spirv(int emulated, size_t *bytes)
{
    *bytes = emulated ? sizeof rl_spv_attn_cm_emu_f16 : sizeof rl_spv_attn_cm_f16;
    return emulated ? rl_spv_attn_cm_emu_f16 : rl_spv_attn_cm_f16;
}

int attn_cm_supported(const rlvk_device_info *props, const char **why)
{
    const rlvk_cm_info *cm = &props->cm;
    const char *w = NULL;
    if (!cm->has_nv && !cm->has_khr)
        w = "device lacks VK_NV_cooperative_matrix / VK_KHR_cooperative_matrix";
    else if (!cm->has_nv)
        w = "device exposes VK_KHR_cooperative_matrix only; the kernel is built as "
            "VK_NV_cooperative_matrix SPIR-V (glslang 12 lacks GL_KHR_cooperative_matrix)";
    else if (!cm->feat_nv)
        w = "VK_NV_cooperative_matrix is listed but its cooperativeMatrix feature is off";
    else if (!cm->nv_compute)
        w = "VK_NV_cooperative_matrix does not list the compute stage";
    else if (!cm->vk_memory_model)
        w = "the kernel's SPIR-V needs vulkanMemoryModel, which the device lacks";
    else if (!props->fp16 || !props->storage16)
        w = "the kernel needs shaderFloat16 and storageBuffer16BitAccess";
    else if (props->subgroup_size == 0 || props->subgroup_size > 64 ||
             64 % props->subgroup_size != 0)
        w = "the subgroup size does not divide the 64-query workgroup";
    else {
        int shape = 0;
        for (uint32_t i = 0; i < cm->n_shapes && !shape; i++) {
            const rlvk_cm_shape *s = &cm->shapes[i];
            shape = !s->khr && s->m == ATTN_CM_M && s->n == ATTN_CM_N && s->k == ATTN_CM_K &&
                    s->a == RLVK_CM_F16 && s->b == RLVK_CM_F16 && s->c == RLVK_CM_F32 &&
                    s->result == RLVK_CM_F32 && s->scope == RLVK_CM_SCOPE_SUBGROUP;
        }
        if (!shape)
            w = "VK_NV_cooperative_matrix lists no 16x16x16 float16 x float16 -> float32 "
                "subgroup shape";
    }
    if (why)
        *why = w;
    return w == NULL;
}

uint64_t attn_cm_shared_bytes(uint32_t head_dim, int want_o)
{
    /* qs [64][D] f16, ks [16][D] f16, ss [64][16] f32; with O vs [16][D]
     * f16, ps [64][16] f16, pvs [64][16] f32 (one element each without). */
    uint64_t d = head_dim;
    uint64_t b = 64 * d * 2 + 16 * d * 2 + 64 * 16 * 4;
    b += want_o ? 16 * d * 2 + 64 * 16 * 2 + 64 * 16 * 4 : 2 + 2 + 4;
    return b;
}

rl_status attn_cm_check(const rlvk_device_info *props, const attn_desc *d,
                        const char *bias_variant, int have_sinks, rl_error *err)
{
    const char *why;
    if (!d->test_cm_emulate && !attn_cm_supported(props, &why))
        return rl_fail(err, RL_ERR_UNSUPPORTED, "cooperative-matrix path on %s: %s", props->name,
                       why);
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
    if (d->head_dim % ATTN_CM_K != 0 || d->head_dim > ATTN_CM_MAX_HEAD_DIM)
        return rl_fail(err, RL_ERR_UNSUPPORTED,
                       "cooperative-matrix path: head_dim %u must be a multiple of %u and at "
                       "most %u", d->head_dim, ATTN_CM_K, ATTN_CM_MAX_HEAD_DIM);
    uint64_t sh = attn_cm_shared_bytes(d->head_dim, (d->flags & ATTN_OUT) != 0);
    if (sh > props->max_shared_memory)
        return rl_fail(err, RL_ERR_UNSUPPORTED,
                       "cooperative-matrix path: needs %llu bytes of shared memory, over %s's "
                       "maxComputeSharedMemorySize (%u)",
                       (unsigned long long)sh, props->name, props->max_shared_memory);
    if (d->block_keys && d->block_keys != ATTN_CM_N)
        return rl_fail(err, RL_ERR_UNSUPPORTED,
                       "cooperative-matrix path: block_keys %u (its key tile is %u keys)",
                       d->block_keys, ATTN_CM_N);
    return RL_OK;
}

rl_status attn_cm_plan_make(uint64_t tokens, uint32_t head_dim, uint32_t chunk_blocks, int causal,
                            attn_cm_plan *p, rl_error *err)
{
    memset(p, 0, sizeof *p);
    if (tokens == 0 || head_dim == 0 || head_dim % ATTN_CM_K != 0 || chunk_blocks == 0 ||
        chunk_blocks > RL_ATTN_MAX_BLOCKS)
        return rl_fail(err, RL_ERR_ARG,
                       "cooperative-matrix plan: tokens %llu (>= 1), head_dim %u (multiple of "
                       "%u), chunk_blocks %u (1..%u)",
                       (unsigned long long)tokens, head_dim, ATTN_CM_K, chunk_blocks,
                       RL_ATTN_MAX_BLOCKS);
    p->tokens = tokens;
    p->head_dim = head_dim;
    p->chunk_blocks = chunk_blocks;
    p->causal = causal != 0;
    p->k_steps = head_dim / ATTN_CM_K;
    p->chunk_keys = (uint64_t)chunk_blocks * ATTN_CM_N;
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
                for (uint32_t rt = 0; rt < ATTN_WG / ATTN_CM_M; rt++) {
                    if (out && count < cap) {
                        attn_cm_tile *t = &out[count];
                        t->q0 = qb * ATTN_WG + rt * ATTN_CM_M;
                        t->k0 = c * p->chunk_keys + (uint64_t)b * ATTN_CM_N;
                        t->rows = valid(t->q0, ATTN_CM_M, p->tokens);
                        t->keys = valid(t->k0, ATTN_CM_N, p->tokens);
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
