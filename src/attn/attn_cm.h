/* attn_cm.h — the cooperative-matrix attention path (prefix attn_cm_).
 *
 * shaders/attn_cm.comp computes QK^T and PV with VK_NV_cooperative_matrix
 * (fp16 A/B, fp32 accumulators, 16x16x16 tiles, subgroup scope) and the
 * online-softmax statistics from the stored accumulator tiles; the engine
 * (attn_gpu.c) drives it like attn.comp when attn_desc.coopmat = 1. This
 * header holds what needs no device: which devices get the path (from
 * their listed properties), what a problem may ask of it, the tile
 * decomposition, and the extra error terms of its tolerance
 * (docs/attention.md "Cooperative-matrix path").
 *
 * Not run on any device yet: none of the machines here exposes
 * cooperative matrices (lavapipe does not). The KHR extension is detected
 * and reported, but the kernel exists as NV SPIR-V only. */
#ifndef ATTN_CM_H
#define ATTN_CM_H

#include <stddef.h>
#include <stdint.h>

#include "attn/attn.h"
#include "vk/rlvk.h"

#define ATTN_CM_M 16u            /* rows (queries) of a tile */
#define ATTN_CM_N 16u            /* columns (keys) of a tile = keys per block */
#define ATTN_CM_K 16u            /* head dimensions per multiply-add step */
#define ATTN_CM_MAX_HEAD_DIM 128u /* Q of 64 rows in shared memory */
/* Statistics the kernel computes (lse and max always): */
#define ATTN_CM_FLAGS (ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_OUT)

/* The kernel's SPIR-V (VK_NV_cooperative_matrix), embedded at build time;
 * emulated = 1: the test variant with the tensor ops as subgroup loops
 * (attn_desc.test_cm_emulate). *bytes: its size. */
const uint32_t *attn_cm_spirv(int emulated, size_t *bytes);

/* 1 when a device with these properties gets the cooperative-matrix path:
 * VK_NV_cooperative_matrix listed with its cooperativeMatrix feature,
 * vulkanMemoryModel, shaderFloat16 and 16-bit storage, a subgroup size
 * dividing the 64-query workgroup, and a 16x16x16 float16 x float16 ->
 * float32 subgroup shape in the NV property list. Else 0 and *why (static
 * text) says what is missing, e.g. "device lacks VK_NV_cooperative_matrix /
 * VK_KHR_cooperative_matrix". For path-selection tables. */
int attn_cm_supported(const rlvk_device_info *props, const char **why);

/* Shared memory the kernel declares for head_dim (with O or not), bytes. */
uint64_t attn_cm_shared_bytes(uint32_t head_dim, int want_o);

/* RL_OK when d (resolved) fits the kernel on a device with these
 * properties, else RL_ERR_UNSUPPORTED naming the first refused option:
 * fp32 inputs (the path reads fp16: attn_desc.fp16 = 1), head_dim not a
 * multiple of 16 or over ATTN_CM_MAX_HEAD_DIM, shared memory, block_keys
 * other than 0/16, or a statistic / option the kernel does not compute:
 * distance buckets, paired KL, logit dump, logit bias, masks beyond causal,
 * learned sinks, temperature. bias_variant: the bias's shader variant
 * (NULL or "none": no bias). With d->test_cm_emulate the device's support
 * is not asked (the emulated variant needs no extension), only the rest. */
rl_status attn_cm_check(const rlvk_device_info *props, const attn_desc *d,
                        const char *bias_variant, int have_sinks, rl_error *err);

/* ---- tile decomposition (what the engine dispatches and the kernel runs) */

/* A problem of `tokens` queries and keys cut as the engine and the kernel
 * cut it: 64-query workgroups (4 row tiles of 16), key chunks of
 * chunk_blocks key tiles of 16 (one dispatch per chunk and KV head), head
 * dimensions in k_steps steps of 16. Causal: a chunk is dispatched for the
 * query blocks from the one holding its first key on. */
typedef struct attn_cm_plan {
    uint64_t tokens;
    uint32_t head_dim, chunk_blocks;
    int causal;
    uint32_t k_steps;            /* head_dim / 16 */
    uint64_t chunk_keys;         /* chunk_blocks * 16 */
    uint64_t n_qblocks;          /* ceil(tokens / 64) */
    uint64_t n_chunks;           /* ceil(tokens / chunk_keys) */
    uint64_t padded_rows;        /* n_qblocks * 64: rows the tiles cover */
    uint64_t padded_keys;        /* n_chunks * chunk_keys: keys the tiles cover */
} attn_cm_plan;

/* One (row tile, key tile) product of one KV head: queries [q0, q0 + 16),
 * keys [k0, k0 + 16); rows/keys: how many of them are < tokens (the rest
 * are padding: clamped copies the kernel masks or does not write). */
typedef struct attn_cm_tile {
    uint64_t q0, k0;
    uint32_t rows, keys;
} attn_cm_tile;

/* The plan; RL_ERR_ARG for tokens 0, head_dim not a multiple of 16 or
 * chunk_blocks outside 1..RL_ATTN_MAX_BLOCKS. */
rl_status attn_cm_plan_make(uint64_t tokens, uint32_t head_dim, uint32_t chunk_blocks, int causal,
                            attn_cm_plan *p, rl_error *err);
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
 * truncating or rounding fp32 adders (A = max |scale| sum_d |q_d k_d|). */
double attn_cm_logit_err(uint32_t head_dim, double max_abs_dot);
/* Relative error O gains from P's fp16 rounding and the tensor op's fp32
 * accumulation of n_keys products: 2^-10 + (96 + 4 n_keys) u. */
double attn_cm_out_extra(uint64_t n_keys);
/* O's floor weight: the verification judges O relative to
 * sum_j p_j |v_jd| + ATTN_CM_O_FLOOR * sum_j |v_jd| (P below 2^-29 may
 * flush to 0 in fp16). */
#define ATTN_CM_O_FLOOR 0x1p-19

#endif
