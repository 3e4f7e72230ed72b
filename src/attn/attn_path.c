/* The attention path table: which kernel a device gets, with which tile
 * sizes and workgroup shape, from its properties alone (no device names).
 * docs/attention.md "Kernel paths" explains each rule. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attn/attn.h"
#include "attn/attn_cm.h"
#include "attn/attn_path.h"

/* 1 when this build embeds a cooperative-matrix attention kernel. */

static const char *const names[ATTN_PATH_COUNT] = {"auto", "scalar", "subgroup", "coopmat"};

const char *attn_path_name(attn_path_kind k)
{
    return k >= 0 && k < ATTN_PATH_COUNT ? names[k] : "?";
}

attn_path_kind attn_path_parse(const char *s)
{
    for (int k = 0; k < ATTN_PATH_COUNT; k++)
        if (s && strcmp(s, names[k]) == 0)
            return (attn_path_kind)k;
    return ATTN_PATH_COUNT;
}

void attn_path_props_of(const rlvk_device_info *in, attn_path_props *p)
{
    memset(p, 0, sizeof *p);
    p->type = in->vk_type;
    p->subgroup_size = in->subgroup_size;
    p->subgroup_ops = in->subgroup_ops;
    p->subgroup_stages = in->subgroup_stages;
    p->max_shared_memory = in->max_shared_memory;
    p->max_invocations = in->max_workgroup_invocations;
    p->max_workgroup_size_x = in->max_workgroup_size[0];
    const char *why = NULL;
    attn_cm_shape cs;
    p->coopmat_ext = attn_cm_shape_of(in, &cs, &why); /* the kernel's own test (attn_cm.c) */
    if (p->coopmat_ext)
        attn_cm_shape_str(&cs, p->coopmat_why, sizeof p->coopmat_why); /* its shape */
    else
        snprintf(p->coopmat_why, sizeof p->coopmat_why, "%s", why ? why : "");
    p->coopmat_keys = cs.n;
    p->storage16 = in->storage16;
    p->max_texel_elements = in->max_texel_elements;
    p->texel_preferred = rlvk_texel_reads_preferred(in);
    if (in->vk_type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
        const char *lp = getenv("LP_NUM_THREADS");
        long n = lp && *lp ? strtol(lp, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
        p->cpu_threads = n >= 1 && n <= 4096 ? (uint32_t)n : 1u;
    }
}

/* Texel reads on the scalar path where the device prefers them
 * (rlvk_texel_reads_preferred: CPU drivers), while every view fits. */
static int texel_reads(const attn_path_props *p, const attn_path_shape *s)
{
    return p->texel_preferred && rlvk_texel_count_fits(p->max_texel_elements, s->texels);
}

/* Shared memory of one staged block of kb keys: every key-side operand as
 * fp32 vec4 rows, the two one-vec4 placeholders of unused operands, one
 * position per key (attn.comp's ks_a, ks_b, vs, kpos_s). */
static uint64_t block_bytes(const attn_path_shape *s, uint32_t kb)
{
    return (uint64_t)kb * s->head_dim * 4u * s->key_operands + 2 * 16 + kb * 4u;
}

/* The largest block of 16, 8 or 4 keys that fits; 0 when none does. */
static uint32_t fit_block(const attn_path_props *p, const attn_path_shape *s)
{
    for (uint32_t kb = RL_ATTN_KB; kb >= 4; kb /= 2)
        if (block_bytes(s, kb) <= p->max_shared_memory)
            return kb;
    return 0;
}

static int fits_workgroup(const attn_path_props *p, uint32_t wg)
{
    return wg <= p->max_invocations && wg <= p->max_workgroup_size_x;
}

/* Rows per workgroup on a CPU device's scalar path: ATTN_WG_CPU share each
 * staged block; a sampled pass of few rows halves that (down to ATTN_WG)
 * until it has a workgroup per driver thread: 256 sampled rows in one
 * workgroup ran on one of lavapipe's two threads (docs/attention.md
 * "Sampled query rows": 234 ms at 256 rows per group, 113-119 at 128). */
static uint32_t cpu_rows(const attn_path_props *p, const attn_path_shape *s)
{
    uint32_t rows = ATTN_WG_CPU, threads = p->cpu_threads ? p->cpu_threads : 1u;
    while (s->query_rows && rows > ATTN_WG && (s->query_rows + rows - 1) / rows < threads)
        rows /= 2;
    return rows;
}

void attn_path_eval(const attn_path_props *p, const attn_path_shape *s, attn_path_kind kind,
                    attn_path *out)
{
    memset(out, 0, sizeof *out);
    out->kind = kind;
    out->split = 1;
    out->wg_size = ATTN_WG;
    out->block_keys = fit_block(p, s);
    if (kind <= ATTN_PATH_AUTO || kind >= ATTN_PATH_COUNT) {
        snprintf(out->why, sizeof out->why, "not a path");
        return;
    }
    if (s->fp16 && !p->storage16) {
        snprintf(out->why, sizeof out->why, "fp16 storage needs storageBuffer16BitAccess");
        return;
    }
    if (!out->block_keys) {
        snprintf(out->why, sizeof out->why,
                 "a 4-key block of head_dim %u x %u operands needs %llu B of shared memory, "
                 "over maxComputeSharedMemorySize %u B", s->head_dim, s->key_operands,
                 (unsigned long long)block_bytes(s, 4), p->max_shared_memory);
        return;
    }
    if (kind == ATTN_PATH_SCALAR) {
        /* CPU devices: ATTN_WG_CPU rows share each staged block (attn.h);
         * one that cannot take so many falls back to ATTN_WG. */
        uint32_t rows = p->type == VK_PHYSICAL_DEVICE_TYPE_CPU && fits_workgroup(p, cpu_rows(p, s))
                            ? cpu_rows(p, s) : ATTN_WG;
        if (!fits_workgroup(p, rows)) {
            snprintf(out->why, sizeof out->why, "%u invocations per workgroup exceed the limit %u",
                     rows, p->max_invocations < p->max_workgroup_size_x
                               ? p->max_invocations : p->max_workgroup_size_x);
            return;
        }
        out->wg_size = rows;
        out->supported = 1;
        /* CPU drivers compile the unrolled kernel in the run's own process
         * on the cores that then run it: lavapipe's compile CPU per pipeline
         * is 0.07 / 0.125 / 0.27 / 0.67 s at 1 / 2 / 4 / 8 blocks per
         * dispatch (head_dim 128, statistics), while a pass at 4 blocks
         * costs about 4% more than at 8 (docs/runner.md "Timing"). */
        /* A sampled pass runs a dispatch per key chunk for few rows, where
         * lavapipe's per-dispatch cost shows: it takes the shader's most
         * (RL_ATTN_MAX_BLOCKS; 65536 keys x 256 rows: 189 ms at 4 blocks,
         * 145 at 8), the compile paid once per pipeline. A short full pass
         * (at most ATTN_PATH_CPU_SHORT_KEYS keys) takes one block per
         * dispatch: a dispatch more per block costs each row a reload and
         * store of its running state, about 0.4 us per row and extra
         * dispatch here, against 1-2 s less compile per pipeline at 1 block
         * than at 4 (measured, lavapipe: the attention rows of check
         * --quick, every one at most 1000 tokens, 162 -> 75 s cold, while
         * test_attn_gpu's 70001-key pass took 51 s more at 1 block; the two
         * costs meet near 12k keys). */
        if (p->type == VK_PHYSICAL_DEVICE_TYPE_CPU)
            out->max_chunk_blocks =
                s->query_rows ? RL_ATTN_MAX_BLOCKS
                : s->keys && s->keys <= ATTN_PATH_CPU_SHORT_KEYS ? 1u
                                                                  : ATTN_PATH_CPU_MAX_BLOCKS;
        out->texel = texel_reads(p, s);
        const char *reads = "";
        char over[80] = "";
        if (out->texel)
            reads = ", rows read as texels";
        else if (p->texel_preferred) {
            snprintf(over, sizeof over, ", rows read as storage buffers (%llu texels > %u)",
                     (unsigned long long)s->texels, p->max_texel_elements);
            reads = over;
        }
        char cap[64] = "";
        if (out->max_chunk_blocks)
            snprintf(cap, sizeof cap, ", at most %u per dispatch (CPU%s)", out->max_chunk_blocks,
                     s->query_rows ? ", sampled rows"
                     : out->max_chunk_blocks == 1 ? ", a short run" : "");
        snprintf(out->why, sizeof out->why,
                 "one invocation per query row, %u rows per workgroup, %u-key blocks%s%s", rows,
                 out->block_keys, cap, reads);
        return;
    }
    if (kind == ATTN_PATH_COOPMAT) {
        /* attn_cm.comp (fp16 -> fp32 cooperative matrices at subgroup scope,
         * KHR or NV, the tile shape from the device's list); never the
         * default: it computes a subset of the statistics (attn_cm_check
         * refuses the rest by name), so it runs only when asked
         * (attn_desc.coopmat, --attn-path coopmat, check). */
        out->supported = p->coopmat_ext;
        out->block_keys = p->coopmat_ext ? p->coopmat_keys : 16;
        if (p->coopmat_ext)
            snprintf(out->why, sizeof out->why,
                     "cooperative matrices (%.100s, attn_cm.comp); only when asked",
                     p->coopmat_why);
        else
            snprintf(out->why, sizeof out->why, "%s",
                     p->coopmat_why[0] ? p->coopmat_why
                                         : "no VK_KHR_cooperative_matrix / "
                                           "VK_NV_cooperative_matrix with a usable fp16 shape");
        return;
    }
    /* Subgroup split: SPLIT lanes of one subgroup per query row, each with
     * head_dim / SPLIT dimensions of q and O (about 32 floats of each per
     * invocation, so q and O stay in registers on GPUs); the partial logits
     * are summed by a subgroupShuffleXor butterfly, which needs the SHUFFLE
     * operations in the compute stage, SPLIT dividing the subgroup and the
     * workgroup made of whole subgroups. */
    if (!(p->subgroup_stages & VK_SHADER_STAGE_COMPUTE_BIT) ||
        !(p->subgroup_ops & VK_SUBGROUP_FEATURE_BASIC_BIT) ||
        !(p->subgroup_ops & VK_SUBGROUP_FEATURE_SHUFFLE_BIT)) {
        snprintf(out->why, sizeof out->why,
                 "needs subgroup basic + shuffle operations in compute shaders (has ops 0x%x, "
                 "stages 0x%x)", p->subgroup_ops, p->subgroup_stages);
        return;
    }
    uint32_t d4 = s->head_dim / 4u, split = 8;
    while (split > s->head_dim / 32u && split > 2)
        split /= 2;
    while (split >= 2 && (split > p->subgroup_size || d4 % split ||
                          !fits_workgroup(p, ATTN_WG * split) ||
                          (ATTN_WG * split) % p->subgroup_size))
        split /= 2;
    if (split < 2) {
        snprintf(out->why, sizeof out->why,
                 "no split of 2..8 lanes per row fits: subgroup %u, head_dim %u, workgroups of "
                 "%u x split invocations (limit %u)", p->subgroup_size, s->head_dim, ATTN_WG,
                 p->max_invocations);
        return;
    }
    out->split = split;
    out->wg_size = ATTN_WG * split;
    out->supported = 1;
    if (p->type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
        /* A CPU driver turns each lane's slice read of shared memory into
         * a gather: the unrolled code grows by lanes x dims per key and
         * LLVM took minutes on a 128-key chunk. Smallest tile: it is the
         * correctness path there, not the fast one. */
        out->block_keys = 4;
        out->chunk_blocks = 1;
    }
    snprintf(out->why, sizeof out->why,
             "%u lanes per query row (%u dims each), workgroup %u, %u-key blocks, shuffle-xor sums",
             split, s->head_dim / split, out->wg_size, out->block_keys);
}

void attn_path_choose(const attn_path_props *p, const attn_path_shape *s, attn_path *out)
{
    /* CPU drivers (lavapipe) run a subgroup as SIMD lanes of one thread:
     * the scalar kernel's shared-memory reads at uniform addresses become
     * one load and a broadcast, while the split path's per-lane slices
     * become gathers (docs/attention.md, measured). GPUs: the richest
     * supported path first. */
    static const attn_path_kind cpu_order[] = {ATTN_PATH_SCALAR, ATTN_PATH_SUBGROUP};
    static const attn_path_kind gpu_order[] = {ATTN_PATH_SUBGROUP, ATTN_PATH_SCALAR};
    int cpu = p->type == VK_PHYSICAL_DEVICE_TYPE_CPU;
    const attn_path_kind *order = cpu ? cpu_order : gpu_order;
    size_t n = cpu ? sizeof cpu_order / sizeof *cpu_order : sizeof gpu_order / sizeof *gpu_order;
    for (size_t i = 0; i < n; i++) {
        attn_path_eval(p, s, order[i], out);
        if (out->supported) {
            char why[sizeof out->why];
            snprintf(why, sizeof why, "%s", out->why);
            snprintf(out->why, sizeof out->why, "%s device, first supported of %s: %.180s",
                     cpu ? "CPU" : "GPU", cpu ? "scalar, subgroup" : "subgroup, scalar",
                     why);
            return;
        }
    }
    attn_path_eval(p, s, ATTN_PATH_SCALAR, out); /* the fallback: its reason names the limit */
}
