/* attn_cm.h — the cooperative-matrix attention path (prefix attn_cm_).
 *
 * shaders/attn_cm.comp computes QK^T and PV with cooperative matrices
 * (fp16 A/B, fp32 accumulators, subgroup scope, the tile shape M x N x K a
 * specialization constant chosen from the device's list) and the
 * online-softmax statistics from the stored accumulator tiles; the engine
 * (attn_gpu.c) drives it like attn.comp when attn_desc.coopmat = 1. This
 * header holds what needs no device: which devices get the path (from
 * their listed properties), what a problem may ask of it, the tile
 * decomposition, and the extra error terms of its tolerance
 * (docs/attention.md "Cooperative-matrix path").
 *
 * The kernel is built twice from one source: VK_NV_cooperative_matrix
 * SPIR-V from glslang, and its VK_KHR_cooperative_matrix twin from our
 * rewriter (tools/spv_khr.h); a device with KHR gets the KHR module (KHR
 * is preferred when both are listed). Run on Mesa 26's lavapipe (KHR
 * 8x8x8); bookworm's lavapipe (Mesa 22) has neither extension. */
#ifndef ATTN_CM_H
#define ATTN_CM_H

#include <stddef.h>
#include <stdint.h>

#include "attn/attn.h"
#include "vk/rlvk.h"

#define ATTN_CM_M 16u            /* the NV default tile: rows (queries) */
#define ATTN_CM_N 16u            /* columns (keys) = keys per block */
#define ATTN_CM_K 16u            /* head dimensions per multiply-add step */
#define ATTN_CM_MAX_HEAD_DIM 128u /* Q of 64 rows in shared memory */
/* Statistics the kernel computes (lse and max always): */
#define ATTN_CM_FLAGS (ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_OUT)

/* The kernel's embedded SPIR-V modules. */
enum {
    ATTN_CM_SPV_NV = 0,  /* glslang's VK_NV_cooperative_matrix module */
    ATTN_CM_SPV_EMU = 1, /* the test variant: tensor ops as subgroup loops (no extension) */
    ATTN_CM_SPV_KHR = 2, /* the NV module rewritten to SPV_KHR_cooperative_matrix */
};
/* That module's words; *bytes: its size. */
const uint32_t *attn_cm_spirv(int module, size_t *bytes);

/* The tile shape a run uses and where it comes from. */
typedef struct attn_cm_shape {
    uint32_t m, n, k;    /* rows (queries), columns (keys = KB), head dims per step; 0: none */
    int module;          /* ATTN_CM_SPV_* */
} attn_cm_shape;

/* 1 when a device with these properties gets the cooperative-matrix path,
 * with *s (may be NULL) its tile shape: vulkanMemoryModel, shaderFloat16
 * and 16-bit storage, a subgroup size dividing the 64-query workgroup,
 * and VK_KHR_cooperative_matrix (then VK_NV_cooperative_matrix, with the
 * compute stage) with its cooperativeMatrix feature listing a float16 x
 * float16 + float32 -> float32 subgroup-scope shape, not saturating, with
 * M dividing 64 (8..64), N (the key block) 8 or 16 and K 8, 16 or 32:
 * 16x16x16 when listed, else the first such entry. KHR is tried first.
 * Else 0 and *why (static text) says what is missing, e.g. "device lacks
 * VK_NV_cooperative_matrix / VK_KHR_cooperative_matrix". */
int attn_cm_shape_of(const rlvk_device_info *props, attn_cm_shape *s, const char **why);
/* attn_cm_shape_of without the shape (path-selection tables). */
int attn_cm_supported(const rlvk_device_info *props, const char **why);
/* The shape run d takes on a device with these properties: with
 * d->test_cm_emulate the emulated module at d->test_cm_tile (8 or 16; 0:
 * 16) on every edge, else attn_cm_shape_of's (m = 0 when none). */
attn_cm_shape attn_cm_shape_for(const rlvk_device_info *props, const attn_desc *d);
/* "VK_KHR_cooperative_matrix 8x8x8" and the like, into buf. */
const char *attn_cm_shape_str(const attn_cm_shape *s, char *buf, size_t cap);

/* Shared memory the kernel declares for head_dim (with O or not) at key
 * block n and step k, bytes. */
uint64_t attn_cm_shared_bytes(uint32_t head_dim, int want_o, uint32_t n, uint32_t k);

/* RL_OK when d (resolved) fits the kernel on a device with these
 * properties, else RL_ERR_UNSUPPORTED naming the first refused option:
 * fp32 inputs (the path reads fp16: attn_desc.fp16 = 1), head_dim not a
 * multiple of the shape's K or over ATTN_CM_MAX_HEAD_DIM, shared memory,
 * block_keys other than 0 / the shape's N, or a statistic / option the
 * kernel does not compute:
 * distance buckets, paired KL, logit dump, logit bias, masks beyond causal,
 * learned sinks, temperature. bias_variant: the bias's shader variant
 * (NULL or "none": no bias). With d->test_cm_emulate the device's support
 * is not asked (the emulated variant needs no extension), only the rest. */
rl_status attn_cm_check(const rlvk_device_info *props, const attn_desc *d,
                        const char *bias_variant, int have_sinks, rl_error *err);

/* ---- tile decomposition (what the engine dispatches and the kernel runs) */

/* A problem of `tokens` queries and keys cut as the engine and the kernel
 * cut it at tile shape m x n x k: 64-query workgroups (64 / m row tiles),
 * key chunks of chunk_blocks key tiles of n (one dispatch per chunk and KV
 * head), head dimensions in k_steps steps of k. Causal: a chunk is
 * dispatched for the query blocks from the one holding its first key on. */
typedef struct attn_cm_plan {
    uint64_t tokens;
    uint32_t head_dim, chunk_blocks;
    int causal;
    uint32_t m, n, k;            /* the tile shape */
    uint32_t k_steps;            /* head_dim / k */
    uint64_t chunk_keys;         /* chunk_blocks * n */
    uint64_t n_qblocks;          /* ceil(tokens / 64) */
    uint64_t n_chunks;           /* ceil(tokens / chunk_keys) */
    uint64_t padded_rows;        /* n_qblocks * 64: rows the tiles cover */
    uint64_t padded_keys;        /* n_chunks * chunk_keys: keys the tiles cover */
} attn_cm_plan;

/* One (row tile, key tile) product of one KV head: queries [q0, q0 + m),
 * keys [k0, k0 + n); rows/keys: how many of them are < tokens (the rest
 * are padding: clamped copies the kernel masks or does not write). */
typedef struct attn_cm_tile {
    uint64_t q0, k0;
    uint32_t rows, keys;
} attn_cm_tile;

/* The plan at shape s (NULL: 16x16x16); RL_ERR_ARG for tokens 0, head_dim
 * not a multiple of s->k, a shape whose m does not divide 64, or
 * chunk_blocks outside 1..RL_ATTN_MAX_BLOCKS. */
rl_status attn_cm_plan_make(uint64_t tokens, uint32_t head_dim, uint32_t chunk_blocks, int causal,
                            const attn_cm_shape *s, attn_cm_plan *p, rl_error *err);
/* First query block the engine dispatches chunk c for. */
uint64_t attn_cm_chunk_qblock0(const attn_cm_plan *p, uint64_t c);
/* The tiles one KV head computes, in dispatch order (chunk, query block,
 * key tile, row tile): writes min(count, cap) of them to out (NULL: none)
 * and returns the count. */
uint64_t attn_cm_tiles(const attn_cm_plan *p, attn_cm_tile *out, uint64_t cap);
/* 1 when query row i finishes in chunk c (the kernel's `last`). */
int attn_cm_row_last_chunk(const attn_cm_plan *p, uint64_t i, uint64_t c);

/* ---- numerics (attn_cm.c derives them; attn_tol.c applies them) -------- */

/* Logit error bound of the tensor-op product, replacing attn_tol.c's
 * (D + 2) u A: (6 D + 2) u A, for any summation order and grouping and
 * truncating or rounding fp32 adders (A = max |scale| sum_d |q_d k_d|),
 * so for every step K of the shape. */
double attn_cm_logit_err(uint32_t head_dim, double max_abs_dot);
/* Relative error O gains from P's fp16 rounding and the tensor op's fp32
 * accumulation of n_keys products: 2^-10 + (96 + 4 n_keys) u (96 = 6 x 16
 * covers key blocks N <= 16; the fold's 4u per key covers any N >= 1). */
double attn_cm_out_extra(uint64_t n_keys);
/* O's floor weight: the verification judges O relative to
 * sum_j p_j |v_jd| + ATTN_CM_O_FLOOR * sum_j |v_jd| (P below 2^-29 may
 * flush to 0 in fp16). */
#define ATTN_CM_O_FLOOR 0x1p-19

#endif
