/* Attention kernel paths and the one table that chooses among them from a
 * device's properties (attn_path.c). Prefix attn_path_. */
#ifndef RL_ATTN_PATH_H
#define RL_ATTN_PATH_H

#include <stdint.h>

#include "vk/rlvk.h"

/* The kernel paths, in the order `ropelab check` and `devices` list them. */
typedef enum attn_path_kind {
    ATTN_PATH_AUTO = 0,     /* attn_desc.path default: attn_path_choose's pick */
    ATTN_PATH_SCALAR,       /* attn.comp: one invocation per query row */
    ATTN_PATH_SUBGROUP,     /* attn.comp with RL_ATTN_SPLIT: SPLIT invocations per row, each
                               owning head_dim / SPLIT dimensions of q and O, logits summed
                               by subgroupShuffleXor */
    ATTN_PATH_COOPMAT,      /* cooperative-matrix kernel attn_cm.comp (VK_KHR_ or
                               VK_NV_cooperative_matrix; only when asked: it computes a subset
                               of the statistics) */
    ATTN_PATH_COUNT
} attn_path_kind;

/* What the choice reads: a device's properties (attn_path_props_of fills it
 * from rlvk_device_info; tests feed made-up sets). */
/* Blocks per dispatch at most on CPU devices (the scalar path), and one
 * block per dispatch for a full pass over at most ATTN_PATH_CPU_SHORT_KEYS
 * keys: there the pipeline's compile, paid in the run's own process at its
 * first dispatch, outweighs the extra dispatches (attn_path.c). */
#define ATTN_PATH_CPU_MAX_BLOCKS 4u
#define ATTN_PATH_CPU_SHORT_KEYS 8192u

typedef struct attn_path_props {
    VkPhysicalDeviceType type;
    uint32_t subgroup_size;
    uint32_t subgroup_ops;           /* VkSubgroupFeatureFlags */
    uint32_t subgroup_stages;        /* VkShaderStageFlags */
    uint32_t max_shared_memory;      /* maxComputeSharedMemorySize, bytes */
    uint32_t max_invocations;        /* maxComputeWorkGroupInvocations */
    uint32_t max_workgroup_size_x;   /* maxComputeWorkGroupSize[0] */
    int coopmat_ext;                 /* the cooperative-matrix kernel runs here (attn_cm_shape_of:
                                        KHR or NV with a usable shape) */
    char coopmat_why[160];           /* why not (attn_cm_shape_of); when it runs, its shape
                                        ("VK_KHR_cooperative_matrix 8x8x8") */
    uint32_t coopmat_keys;           /* the shape's N (keys per block) when it runs */
    int storage16;                   /* storageBuffer16BitAccess */
    uint32_t max_texel_elements;     /* maxTexelBufferElements */
    int texel_preferred;             /* rlvk_texel_reads_preferred: a CPU driver with rgba32f
                                        and rgba16f uniform texel buffers */
    uint32_t cpu_threads;            /* CPU devices: the threads the driver runs workgroups on
                                        (the host's online processors, or LP_NUM_THREADS when
                                        set: lavapipe's rule); 0 otherwise */
} attn_path_props;

/* What the choice reads of the problem: head_dim and the key-side operands
 * staged per key (1 = K, + 1 paired K_b, + 1 V with O). */
typedef struct attn_path_shape {
    uint32_t head_dim;
    uint32_t key_operands;
    int fp16;
    uint64_t texels;        /* the most vec4 texels one texel view must hold (Q, K, V, or the
                               output buffer up to O's end); 0: not known (`devices`) */
    uint64_t query_rows;    /* sampled query rows (attn_desc.query_rows); 0: the full pass */
    uint64_t keys;          /* keys of the run (attn_desc.tokens); 0: not known (`devices`) */
} attn_path_shape;

/* One path on one device for one shape: whether it runs, why (or why not),
 * and the specialization it runs with. */
typedef struct attn_path {
    attn_path_kind kind;
    int supported;          /* 1: runnable here; 0: why says what is missing */
    uint32_t split;         /* invocations per query row (1 scalar) */
    uint32_t wg_size;       /* invocations per workgroup: rows x split, rows = ATTN_WG, or
                               ATTN_WG_CPU on the scalar path of a CPU device (fewer for
                               a few sampled rows: attn_path.c cpu_rows) */
    uint32_t block_keys;    /* keys staged per block (16, 8 or 4) */
    uint32_t chunk_blocks;  /* blocks per dispatch; 0: the engine's unroll budget decides */
    uint32_t max_chunk_blocks; /* cap on the engine's choice (0: none; CPU devices:
                                  ATTN_PATH_CPU_MAX_BLOCKS, 1 for a short full pass:
                                  compile time) */
    int texel;              /* 1: the per-row reads (q, staged K/V, O carried between
                               dispatches) go through uniform texel buffers (the scalar path
                               of a CPU device, when every view fits maxTexelBufferElements) */
    char why[240];
} attn_path;

/* Query rows per workgroup of a path (the engine's query block). */
static inline uint32_t attn_path_rows(const attn_path *a)
{
    return a->wg_size / a->split;
}

/* "scalar", "subgroup", "coopmat" ("auto" for ATTN_PATH_AUTO, "?" else). */
const char *attn_path_name(attn_path_kind k);
/* The kind named s (the names above); ATTN_PATH_COUNT when unknown. */
attn_path_kind attn_path_parse(const char *s);

/* The device properties the table reads. */
void attn_path_props_of(const rlvk_device_info *info, attn_path_props *p);

/* Path `kind` (not AUTO) on props for shape: supported, its tile sizes and
 * workgroup shape within the device's limits, and the reason. */
void attn_path_eval(const attn_path_props *p, const attn_path_shape *s, attn_path_kind kind,
                    attn_path *out);

/* The path the engine takes by default: the first supported one in the
 * device's order of preference (why says why). Never fails: when no path
 * fits (shared memory too small for a 4-key block), out->supported = 0 and
 * why names the limit. */
void attn_path_choose(const attn_path_props *p, const attn_path_shape *s, attn_path *out);

#endif
