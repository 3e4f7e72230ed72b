/* Streaming attention, GPU host side: limits checked before any allocation,
 * buffers, pipelines per (bias variant, precision, shape, flags), the kernel
 * split into query-block submissions, and verification of sampled rows
 * against the CPU reference (attn_ref.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/attn_cm.h"
#include "attn/attn_path.h"
#include "core/rl_util.h"
/* embedded SPIR-V (after <stdint.h>) */
#include "attn_variants.spv.h"

_Static_assert(sizeof(struct rl_attn_push) == 80, "rl_attn_push layout");
_Static_assert(offsetof(struct rl_attn_push, key_base) == 32, "rl_attn_push layout");
_Static_assert(offsetof(struct rl_attn_push, group_base) == 0, "group_base first");
_Static_assert(offsetof(struct rl_attn_push, scale_a) == 12, "rl_attn_push layout");
_Static_assert(offsetof(struct rl_attn_push, off_dump) == 28, "rl_attn_push layout");

/* One SPIR-V variant per bias encoding and precision, generated from the
 * encoding registry (src/pe/meson.build -> shaders/meson.build). */
typedef struct attn_variant {
    const char *name;
    const uint32_t *spv32, *spv16, *spv32_sg, *spv16_sg; /* _sg: the subgroup-split path */
    size_t bytes32, bytes16, bytes32_sg, bytes16_sg;
} attn_variant;

#define ATTN_VARIANT(n) {#n, rl_spv_attn_##n, rl_spv_attn_##n##_f16, rl_spv_attn_##n##_sg, \
                         rl_spv_attn_##n##_f16_sg, sizeof rl_spv_attn_##n, \
                         sizeof rl_spv_attn_##n##_f16, sizeof rl_spv_attn_##n##_sg, \
                         sizeof rl_spv_attn_##n##_f16_sg},
static const attn_variant variants[] = {RL_ATTN_VARIANTS(ATTN_VARIANT)};

static const attn_variant *find_variant(const char *name)
{
    for (size_t i = 0; i < RL_ARRAY_LEN(variants); i++)
        if (strcmp(variants[i].name, name) == 0)
            return &variants[i];
    return NULL;
}

rl_status attn_engine_create(rlvk_device *dev, attn_engine *e, rl_error *err)
{
    (void)err;
    memset(e, 0, sizeof *e);
    e->dev = dev;
    return RL_OK;
}

void attn_engine_destroy(attn_engine *e)
{
    for (uint32_t i = 0; i < e->n_pipes; i++)
        rlvk_pipeline_destroy(e->dev, &e->pipes[i].pipe);
    e->n_pipes = 0;
}

/* Resolved desc with defaults. */
static attn_desc resolve(const attn_desc *d)
{
    attn_desc r = *d;
    if (!r.kv_heads)
        r.kv_heads = r.heads;
    if (!r.verify_rows)
        r.verify_rows = ATTN_DEFAULT_VERIFY_ROWS;
    if (!r.work_per_submit)
        r.work_per_submit = 1ull << 31;
    if (r.path == ATTN_PATH_COOPMAT) /* the path names the kernel (attn_cm.c) */
        r.coopmat = 1;
    if (r.coopmat)
        r.path = ATTN_PATH_COOPMAT;
    return r;
}

/* Keys per block: the block's K_a (+ K_b paired, + V with O) rows as fp32
 * vec4 plus one position per key must fit maxComputeSharedMemorySize
 * (16, 8 or 4 keys; 0 when not even 4 fit). */
/* Key-side operands read per key: K_a, plus K_b (paired) and V (with O). */
/* 1 when the kernel reads a second Q/K pair (bindings 2, 3): paired mode's
 * definition b or position remapping's remapped definition. */
static int two_defs(const attn_desc *d)
{
    return (d->flags & ATTN_PAIRED) || d->remap_window || d->remap_chunk;
}

static uint32_t key_operands(const attn_desc *d)
{
    return 1u + (two_defs(d) ? 1u : 0u) + ((d->flags & ATTN_OUT) ? 1u : 0u);
}

static uint64_t block_bytes(const attn_desc *d, uint32_t kb)
{
    return (uint64_t)kb * d->head_dim * 4u * key_operands(d) + 2 * 16 + kb * 4u;
}

typedef struct attn_layout attn_layout;
static void layout_of(const attn_desc *d, uint32_t n_buckets, attn_layout *L);

/* The most texels one of the kernel's texel views must hold for d: Q, K
 * (and Q_b, K_b, V: the same sizes) as vec4 texels of their dtype, and with
 * O the output buffer up to O's end as fp32 vec4 (the layout with the most
 * buckets, so prepare and run agree). */
static uint64_t texels_of(const attn_desc *d);

/* The path this run takes (attn_path.c: from the device's properties, or
 * d->path when forced); out->supported = 0 with the reason otherwise. */
static void path_of(const rlvk_device *dev, const attn_desc *d, attn_path *out)
{
    attn_path_props p;
    attn_path_props_of(&dev->info, &p);
    attn_path_shape s = {.head_dim = d->head_dim, .key_operands = key_operands(d), .fp16 = d->fp16,
                         .texels = texels_of(d), .query_rows = d->query_rows,
                         .keys = d->tokens};
    if (d->coopmat && d->test_cm_emulate) { /* test hook: no extension needed */
        *out = (attn_path){.kind = ATTN_PATH_COOPMAT, .supported = 1, .split = 1,
                           .wg_size = ATTN_WG,
                           .block_keys = attn_cm_shape_for(&dev->info, d).n};
        snprintf(out->why, sizeof out->why, "cooperative-matrix kernel, tensor ops emulated (test)");
        return;
    }
    if (d->path == ATTN_PATH_AUTO)
        attn_path_choose(&p, &s, out);
    else
        attn_path_eval(&p, &s, (attn_path_kind)d->path, out);
    if (d->test_storage_reads)
        out->texel = 0;
}

static uint32_t block_keys(const rlvk_device *dev, const attn_desc *d)
{
    if (d->coopmat) { /* its key tile (the device's shape); shared memory: attn_cm_check */
        uint32_t n = attn_cm_shape_for(&dev->info, d).n;
        return n ? n : ATTN_CM_N; /* no shape: attn_cm_check refuses it with the reason */
    }
    if (d->block_keys)
        return block_bytes(d, d->block_keys) <= dev->info.max_shared_memory ? d->block_keys : 0;
    attn_path a;
    path_of(dev, d, &a);
    return a.block_keys;
}

/* Blocks per dispatch: the shader unrolls them all, so the count shrinks as
 * the work per key grows (head_dim, paired logits, O), keeping the code near
 * RL_ATTN_UNROLL_BUDGET vec4 multiply-adds per invocation and dispatch (128
 * keys at head_dim 128 for statistics alone). */
#define RL_ATTN_UNROLL_BUDGET 4096u
static uint32_t key_blocks(const attn_desc *d, uint32_t kb, uint32_t split);

/* Blocks per dispatch of a run of d on path a: d's own, else the path's
 * fixed count, else the unroll budget's, capped by the path (CPU devices). */
static uint32_t path_blocks(const attn_desc *d, uint32_t kb, const attn_path *a)
{
    if (d->chunk_blocks)
        return d->chunk_blocks;
    if (a->chunk_blocks)
        return a->chunk_blocks;
    uint32_t b = key_blocks(d, kb, a->split);
    return a->max_chunk_blocks && b > a->max_chunk_blocks ? a->max_chunk_blocks : b;
}

static uint32_t key_blocks(const attn_desc *d, uint32_t kb, uint32_t split)
{
    if (d->chunk_blocks)
        return d->chunk_blocks;
    uint32_t ds = d->head_dim / 4u / split; /* vec4s per invocation */
    uint32_t b = RL_ATTN_UNROLL_BUDGET / (kb * key_operands(d) * (ds ? ds : 1u));
    if (b > RL_ATTN_MAX_BLOCKS)
        b = RL_ATTN_MAX_BLOCKS;
    return b ? b : 1u;
}

/* Bytes per token of each device buffer (for limits) and the out layout. */
struct attn_layout {
    uint64_t q_bytes, k_bytes, out_floats;
    uint64_t off_buckets, off_out, off_dump;
    uint32_t n_buckets;
};

uint64_t attn_query_rows(const attn_desc *d)
{
    return d->query_rows ? d->query_rows : d->tokens;
}

/* Query-side tensors and output rows have attn_query_rows rows, key-side
 * ones tokens rows. */
static void layout_of(const attn_desc *d, uint32_t n_buckets, attn_layout *L)
{
    uint64_t n = attn_query_rows(d), esz = d->fp16 ? 2 : 4;
    L->n_buckets = n_buckets;
    L->q_bytes = n * d->heads * d->head_dim * esz;
    L->k_bytes = d->tokens * d->kv_heads * d->head_dim * esz;
    uint64_t off = n * d->heads * RL_ATTN_NSTAT;
    L->off_buckets = off;
    if (d->flags & ATTN_BUCKETS)
        off += n * d->heads * n_buckets;
    off = (off + 3) & ~(uint64_t)3; /* O rows as vec4 (attn.comp's outv4) */
    L->off_out = off;
    if (d->flags & ATTN_OUT)
        off += n * d->heads * d->head_dim;
    L->off_dump = off;
    if (d->flags & ATTN_DUMP)
        off += n * n * d->heads;
    L->out_floats = off;
}

static uint64_t texels_of(const attn_desc *d)
{
    attn_layout L;
    layout_of(d, ATTN_MAX_BUCKETS, &L);
    uint64_t t4 = d->fp16 ? 8 : 16;
    uint64_t q = L.q_bytes / t4, k = L.k_bytes / t4;
    uint64_t o = (d->flags & ATTN_OUT) ? L.off_dump / 4 : 0;
    uint64_t m = q > k ? q : k;
    return m > o ? m : o;
}

/* Largest token count whose per-token bytes fit `limit` (dump excluded). */
static uint64_t largest_fit(const attn_desc *d, uint64_t limit)
{
    uint64_t esz = d->fp16 ? 2 : 4;
    uint64_t per_q = (uint64_t)d->heads * d->head_dim * esz;
    uint64_t per_out = (uint64_t)d->heads * 4 *
                       (RL_ATTN_NSTAT + ((d->flags & ATTN_BUCKETS) ? ATTN_MAX_BUCKETS : 0) +
                        ((d->flags & ATTN_OUT) ? d->head_dim : 0));
    uint64_t worst = per_q > per_out ? per_q : per_out;
    return limit / worst;
}

static uint64_t total_fit(const attn_desc *d, uint64_t heap)
{
    uint64_t esz = d->fp16 ? 2 : 4, paired = two_defs(d) ? 2 : 1;
    uint64_t per = paired * ((uint64_t)d->heads + d->kv_heads) * d->head_dim * esz + 8 +
                   (d->remap_chunk ? (uint64_t)d->heads * d->head_dim * esz : 0) +
                   (uint64_t)d->heads * 4 *
                       (RL_ATTN_NSTAT + ((d->flags & ATTN_BUCKETS) ? ATTN_MAX_BUCKETS : 0) +
                        ((d->flags & ATTN_OUT) ? d->head_dim : 0));
    if (d->flags & ATTN_OUT)
        per += (uint64_t)d->kv_heads * d->head_dim * esz;
    return heap / per;
}

rl_status attn_check_shape(const rlvk_device *dev, const attn_desc *din, rl_error *err)
{
    attn_desc d = resolve(din);
    if (d.tokens == 0 || d.heads == 0)
        return rl_fail(err, RL_ERR_ARG, "attention: tokens and heads must be at least 1 (got %llu, %u)",
                       (unsigned long long)d.tokens, d.heads);
    if (d.heads % d.kv_heads)
        return rl_fail(err, RL_ERR_ARG, "attention: kv_heads %u must divide heads %u", d.kv_heads,
                       d.heads);
    if (d.head_dim == 0 || d.head_dim % 4 || d.head_dim > ATTN_MAX_HEAD_DIM)
        return rl_fail(err, RL_ERR_ARG,
                       "attention: head_dim %u must be a positive multiple of 4 up to %u", d.head_dim,
                       ATTN_MAX_HEAD_DIM);
    if (d.flags & ~ATTN_USER_FLAGS)
        return rl_fail(err, RL_ERR_ARG, "attention: unknown statistic flags 0x%x",
                       d.flags & ~ATTN_USER_FLAGS);
    if ((d.block_keys && d.block_keys != 4 && d.block_keys != 8 && d.block_keys != 16) ||
        d.chunk_blocks > RL_ATTN_MAX_BLOCKS)
        return rl_fail(err, RL_ERR_ARG,
                       "attention: block_keys %u must be 0, 4, 8 or 16 and chunk_blocks %u at most %u",
                       d.block_keys, d.chunk_blocks, RL_ATTN_MAX_BLOCKS);
    if (d.window > (1u << 31) || d.n_sink > (1u << 31) || d.chunk_size > (1u << 31))
        return rl_fail(err, RL_ERR_ARG,
                       "attention: window %u, n_sink %u and chunk_size %u must be at most 2^31",
                       d.window, d.n_sink, d.chunk_size);
    if (d.remap_window > (1u << 31) || d.remap_chunk > (1u << 31))
        return rl_fail(err, RL_ERR_ARG, "attention: remap_window %u and remap_chunk %u must be at "
                       "most 2^31", d.remap_window, d.remap_chunk);
    if (d.remap_edge && (!d.remap_window || d.remap_chunk))
        return rl_fail(err, RL_ERR_ARG, "attention: remap_edge (the window's edge key under both "
                       "definitions) needs remap_window (got %u) and no remap_chunk (got %u)",
                       d.remap_window, d.remap_chunk);
    if (d.remap_chunk && (d.remap_window || (d.flags & ATTN_PAIRED)))
        return rl_fail(err, RL_ERR_ARG, "attention: remap_chunk %u (dual chunk attention) takes "
                       "neither remap_window (%u) nor paired mode", d.remap_chunk, d.remap_window);
    if (d.temp < ATTN_TEMP_NONE || d.temp > ATTN_TEMP_SSMAX ||
        (d.temp == ATTN_TEMP_LLAMA4 && !(d.temp_b >= 1)) ||
        (d.temp == ATTN_TEMP_QWEN_LOGN && !(d.temp_a > 1)) ||
        (d.temp && !isfinite(d.temp_a)))
        return rl_fail(err, RL_ERR_ARG,
                       "attention: temperature %d with a = %g, b = %g: the kinds are 1 llama4 "
                       "(b = floor_scale >= 1), 2 qwen_logn (a = training length > 1), 3 ssmax",
                       d.temp, d.temp_a, d.temp_b);
    if (d.n_sink && !d.window && !d.chunk_size)
        return rl_fail(err, RL_ERR_ARG,
                       "attention: n_sink %u needs a window or a chunk_size (without either every "
                       "key is visible)", d.n_sink);
    if (d.query_rows > d.tokens)
        return rl_fail(err, RL_ERR_ARG, "attention: query_rows %u exceeds tokens %llu",
                       d.query_rows, (unsigned long long)d.tokens);
    if (d.query_rows && ((d.flags & ATTN_DUMP) || d.coopmat))
        return rl_fail(err, RL_ERR_UNSUPPORTED,
                       "attention: sampled query rows (query_rows %u) take neither the logit dump "
                       "nor the cooperative-matrix path (its tiles are consecutive queries)",
                       d.query_rows);
    if (block_keys(dev, &d) == 0)
        return rl_fail(err, RL_ERR_LIMIT,
                       "attention: head_dim %u with these outputs needs more than %s's "
                       "maxComputeSharedMemorySize (%u bytes) for a 4-key block",
                       d.head_dim, dev->info.name, dev->info.max_shared_memory);
    if ((d.flags & ATTN_DUMP) && d.tokens * d.tokens * d.heads > ATTN_DUMP_MAX) {
        uint64_t t = (uint64_t)floor(sqrt((double)ATTN_DUMP_MAX / d.heads));
        return rl_fail(err, RL_ERR_LIMIT,
                       "attention: a logit dump of %llu tokens x %u heads exceeds the dump limit "
                       "of %u values; the largest length that fits is %llu tokens",
                       (unsigned long long)d.tokens, d.heads, ATTN_DUMP_MAX, (unsigned long long)t);
    }
    attn_layout L;
    layout_of(&d, ATTN_MAX_BUCKETS, &L);
    /* 32-bit indices in the shader: vec4 index of Q, float index of out. */
    uint64_t idx_limit = 1ull << 32;
    if (L.q_bytes / (d.fp16 ? 2 : 4) / 4 >= idx_limit || L.out_floats >= idx_limit ||
        d.tokens >= (1ull << 31))
        return rl_fail(err, RL_ERR_LIMIT,
                       "attention: %llu tokens exceed the kernel's 32-bit indices; the largest "
                       "length that fits is %llu tokens",
                       (unsigned long long)d.tokens,
                       (unsigned long long)largest_fit(&d, (idx_limit - 1) * 2));
    uint64_t range = dev->info.max_storage_buffer_range;
    uint64_t out_bytes = L.out_floats * 4 + VF_GUARD_BYTES; /* guarded (verify/vf.h) */
    uint64_t worst = L.q_bytes > out_bytes ? L.q_bytes : out_bytes;
    /* K, K_b and V may exceed one binding (run() binds a window of keys per
     * dispatch), not the cooperative-matrix path */
    if (d.coopmat)
        worst = L.k_bytes > worst ? L.k_bytes : worst;
    if (worst > range)
        return rl_fail(err, RL_ERR_LIMIT,
                       "attention: %llu tokens need a %llu-byte buffer, beyond %s's "
                       "maxStorageBufferRange (%llu bytes); the largest length that fits is %llu tokens",
                       (unsigned long long)d.tokens, (unsigned long long)worst, dev->info.name,
                       (unsigned long long)range, (unsigned long long)largest_fit(&d, range - VF_GUARD_BYTES));
    if (L.k_bytes + VF_GUARD_BYTES > dev->info.max_allocation) {
        uint64_t krow = (uint64_t)d.kv_heads * d.head_dim * (d.fp16 ? 2 : 4);
        return rl_fail(err, RL_ERR_LIMIT,
                       "attention: %llu tokens need a %llu-byte K tensor, beyond %s's "
                       "maxMemoryAllocationSize (%llu bytes); the largest length that fits is "
                       "%llu tokens",
                       (unsigned long long)d.tokens, (unsigned long long)L.k_bytes, dev->info.name,
                       (unsigned long long)dev->info.max_allocation,
                       (unsigned long long)((dev->info.max_allocation - VF_GUARD_BYTES) / krow));
    }
    uint64_t heap = 0;
    for (uint32_t i = 0; i < dev->info.n_heaps; i++)
        if (dev->info.heaps[i].device_local && dev->info.heaps[i].size > heap)
            heap = dev->info.heaps[i].size;
    uint64_t paired = two_defs(&d) ? 2 : 1;
    uint64_t total = paired * (L.q_bytes + L.k_bytes) + ((d.flags & ATTN_OUT) ? L.k_bytes : 0) +
                     (d.remap_chunk ? L.q_bytes : 0) +
                     d.tokens * 8 + out_bytes;
    if (heap && total > heap)
        return rl_fail(err, RL_ERR_LIMIT,
                       "attention: %llu tokens need %llu bytes of device memory, beyond %s's largest "
                       "device-local heap (%llu bytes); the largest length that fits is %llu tokens",
                       (unsigned long long)d.tokens, (unsigned long long)total, dev->info.name,
                       (unsigned long long)heap, (unsigned long long)total_fit(&d, heap - VF_GUARD_BYTES));
    return RL_OK;
}

static int masked(const attn_desc *d)
{
    attn_mask m = attn_desc_mask(d);
    return attn_mask_active(&m);
}

/* The temperature of query token t at position pos (attn.h), in double,
 * rounded to fp32 by the caller: the kernel multiplies the row's logits by
 * it. */
static double temperature(const attn_desc *d, uint64_t t, uint32_t pos)
{
    double n1 = (double)pos + 1.0;
    if (d->temp == ATTN_TEMP_LLAMA4)
        return d->temp_a * log(floor(n1 / d->temp_b) + 1.0) + 1.0;
    if (d->temp == ATTN_TEMP_QWEN_LOGN)
        return n1 > d->temp_a ? log(n1) / log(d->temp_a) : 1.0;
    if (d->temp == ATTN_TEMP_SSMAX)
        return d->temp_a * log(d->causal ? (double)(t + 1) : (double)d->tokens);
    return 1.0;
}

int attn_tile_visible(const attn_desc *d, uint64_t q0, uint64_t q1, uint64_t k0, uint64_t k1)
{
    attn_mask m = attn_desc_mask(d);
    return attn_mask_tile_visible(&m, d->tokens, q0, q1, k0, k1);
}

/* attn.comp's uniform texel buffers (bindings 16 + the storage buffer's
 * binding): Q_a, K_a, Q_b, K_b, V as vec4 of their dtype, the output
 * buffer as fp32 vec4 (O carried between dispatches). Read only when
 * TEXEL (constant 9) is 1; always bound, since the shader declares them. */
static const rlvk_texel_binding texel32[] = {
    {16, 0, VK_FORMAT_R32G32B32A32_SFLOAT}, {17, 1, VK_FORMAT_R32G32B32A32_SFLOAT},
    {18, 2, VK_FORMAT_R32G32B32A32_SFLOAT}, {19, 3, VK_FORMAT_R32G32B32A32_SFLOAT},
    {20, 4, VK_FORMAT_R32G32B32A32_SFLOAT}, {22, 6, VK_FORMAT_R32G32B32A32_SFLOAT}};
static const rlvk_texel_binding texel16[] = {
    {16, 0, VK_FORMAT_R16G16B16A16_SFLOAT}, {17, 1, VK_FORMAT_R16G16B16A16_SFLOAT},
    {18, 2, VK_FORMAT_R16G16B16A16_SFLOAT}, {19, 3, VK_FORMAT_R16G16B16A16_SFLOAT},
    {20, 4, VK_FORMAT_R16G16B16A16_SFLOAT}, {22, 6, VK_FORMAT_R32G32B32A32_SFLOAT}};

/* The pipeline a run of d needs on a device with these properties: its
 * engine key, specialization constants (spec[ATTN_N_SPEC]: ids 1..6 head_dim,
 * flags, buckets, blocks, keys per block, split; id 7 attn.comp's TEXEL, or
 * for the cooperative-matrix kernel its tile's M and K as ids 7, 8) and desc
 * (pointing into key and spec). The head count and the GQA group are push
 * constants (rl_attn_push), so they are not in the key: one pipeline serves
 * every head count of a shape. path: the path's workgroup (rows x
 * split invocations) and split, invocations per query row (attn_path.c; 1
 * scalar, > 1 the subgroup-split variant). */
#define ATTN_N_SPEC 8
static void pipe_desc(const rlvk_device_info *info, const attn_variant *v, const attn_desc *d,
                      int sinks, uint32_t kb, uint32_t blocks, const attn_path *path,
                      uint32_t n_buckets, char key[96], uint32_t spec[ATTN_N_SPEC],
                      rlvk_pipeline_desc *pd)
{
    uint32_t split = path->split;
    attn_cm_shape cs = {0};
    if (d->coopmat)
        cs = attn_cm_shape_for(info, d);
    uint32_t flags = d->flags;
    if (d->causal)
        flags |= RL_ATTN_F_CAUSAL;
    if (masked(d))
        flags |= RL_ATTN_F_MASK;
    if (sinks)
        flags |= RL_ATTN_F_SINKS;
    if (d->temp)
        flags |= RL_ATTN_F_TEMP;
    if (d->remap_window)
        flags |= RL_ATTN_F_REMAP;
    if (d->remap_chunk)
        flags |= RL_ATTN_F_REMAP | RL_ATTN_F_DCA;
    if (d->remap_window && d->remap_edge)
        flags |= RL_ATTN_F_REMAP_EDGE;
    if (d->query_rows)
        flags |= RL_ATTN_F_ROWS;
    static const char *const cm_name[] = {"cm", "cm_emu", "cm_khr"};
    char cm_key[32];
    snprintf(cm_key, sizeof cm_key, "%s%ux%u", cm_name[cs.module], cs.m, cs.k);
    uint32_t texel = !d->coopmat && path->texel ? 1u : 0u;
    snprintf(key, 96, "attn_%s%s_d%u_k%ux%u_f%x_b%u_s%u_w%u_t%u",
             d->coopmat ? cm_key : v->name, d->fp16 ? "_f16" : "", d->head_dim, blocks, kb,
             flags, n_buckets, split, path->wg_size, texel);
    const uint32_t sp[ATTN_N_SPEC] = {d->head_dim, flags, n_buckets, blocks, kb, split,
                                      d->coopmat ? cs.m : texel, cs.k};
    memcpy(spec, sp, sizeof sp);
    size_t cm_bytes = 0;
    const uint32_t *cm_spv = d->coopmat ? attn_cm_spirv(cs.module, &cm_bytes) : NULL;
    int sg = split > 1;
    *pd = (rlvk_pipeline_desc){
        .name = key,
        .spirv = d->coopmat ? cm_spv
                 : sg       ? (d->fp16 ? v->spv16_sg : v->spv32_sg)
                            : (d->fp16 ? v->spv16 : v->spv32),
        .spirv_bytes = d->coopmat ? cm_bytes
                       : sg       ? (d->fp16 ? v->bytes16_sg : v->bytes32_sg)
                                  : (d->fp16 ? v->bytes16 : v->bytes32),
        .n_bindings = 12,
        .push_bytes = sizeof(struct rl_attn_push),
        .local_size_x = path->wg_size,
        .n_spec = d->coopmat ? ATTN_N_SPEC : 7,
        .spec = spec,
        .n_texel = d->coopmat ? 0u : (uint32_t)RL_ARRAY_LEN(texel32),
        .texel = d->fp16 ? texel16 : texel32,
    };
}

static const rlvk_pipeline *engine_find(const attn_engine *e, const char *key)
{
    for (uint32_t i = 0; i < e->n_pipes; i++)
        if (strcmp(e->pipes[i].key, key) == 0)
            return &e->pipes[i].pipe;
    return NULL;
}

/* A free engine slot (the oldest recycled: callers sweeping many shapes
 * stay bounded). */
static attn_pipe *engine_slot(attn_engine *e)
{
    if (e->n_pipes == ATTN_MAX_PIPES) {
        rlvk_pipeline_destroy(e->dev, &e->pipes[0].pipe);
        memmove(&e->pipes[0], &e->pipes[1], (ATTN_MAX_PIPES - 1) * sizeof e->pipes[0]);
        e->n_pipes--;
    }
    return &e->pipes[e->n_pipes];
}

static rl_status get_pipe(attn_engine *e, const attn_variant *v, const attn_desc *d, int sinks,
                          uint32_t kb, uint32_t blocks, const attn_path *path,
                          uint32_t n_buckets, const rlvk_pipeline **out, rl_error *err)
{
    char key[96];
    uint32_t spec[ATTN_N_SPEC];
    rlvk_pipeline_desc pd;
    pipe_desc(&e->dev->info, v, d, sinks, kb, blocks, path, n_buckets, key, spec, &pd);
    if ((*out = engine_find(e, key)))
        return RL_OK;
    attn_pipe *p = engine_slot(e);
    rl_status st = rlvk_pipeline_create(e->dev, &pd, &p->pipe, err);
    if (st)
        return st;
    snprintf(p->key, sizeof p->key, "%s", key);
    e->n_pipes++;
    *out = &p->pipe;
    return RL_OK;
}

/* The kernel's bucket count for positions spanning max_distance (run()
 * keeps 16 or ATTN_MAX_BUCKETS; 1 without buckets). */
static uint32_t kernel_buckets(const attn_desc *d, uint64_t max_distance)
{
    if (!(d->flags & ATTN_BUCKETS))
        return 1;
    return attn_n_buckets(max_distance) <= 16 ? 16 : ATTN_MAX_BUCKETS;
}

rl_status attn_engine_prepare(attn_engine *e, uint32_t n, const attn_prep *items, rl_error *err)
{
    enum { MAX_PREP = ATTN_MAX_PIPES / 2 };
    char keys[MAX_PREP][96];
    uint32_t specs[MAX_PREP][ATTN_N_SPEC];
    rlvk_pipeline_desc pds[MAX_PREP];
    rlvk_pipeline pipes[MAX_PREP];
    uint32_t m = 0;
    for (uint32_t i = 0; i < n && m < MAX_PREP; i++) {
        const attn_prep *it = &items[i];
        attn_desc d = resolve(&it->desc);
        const attn_variant *v = find_variant(it->variant ? it->variant : "none");
        /* what attn_run would refuse is left to it (and its message) */
        if (!v || attn_check_shape(e->dev, &d, NULL) || (d.fp16 && !e->dev->feat_storage16))
            continue;
        attn_path path; /* the path and tiles run() will take */
        path_of(e->dev, &d, &path);
        if (!path.supported)
            continue;
        uint32_t kb = block_keys(e->dev, &d);
        uint32_t blocks = path_blocks(&d, kb, &path);
        uint64_t span = it->max_distance ? it->max_distance : d.tokens - 1;
        pipe_desc(&e->dev->info, v, &d, it->sinks, kb, blocks, &path,
                  kernel_buckets(&d, span), keys[m], specs[m], &pds[m]);
        pds[m].name = keys[m];
        pds[m].spec = specs[m];
        int dup = engine_find(e, keys[m]) != NULL;
        for (uint32_t j = 0; j < m && !dup; j++)
            dup = strcmp(keys[j], keys[m]) == 0;
        if (!dup)
            m++;
    }
    if (!m)
        return RL_OK;
    rl_status st = rlvk_pipelines_create(e->dev, m, pds, pipes, err);
    if (st)
        return st;
    for (uint32_t j = 0; j < m; j++) {
        attn_pipe *p = engine_slot(e);
        p->pipe = pipes[j];
        snprintf(p->key, sizeof p->key, "%.95s", keys[j]);
        e->n_pipes++;
    }
    return RL_OK;
}

/* Converts a host tensor to float for the reference (fp16 exactly). */
static float *as_float(const void *src, uint64_t n, int fp16)
{
    float *f = malloc(n * sizeof *f);
    if (!f)
        return NULL;
    if (fp16)
        for (uint64_t i = 0; i < n; i++)
            f[i] = rl_half_to_float(((const uint16_t *)src)[i]);
    else
        memcpy(f, src, n * sizeof *f);
    return f;
}

/* One sampled value of statistic s: into the verification layer's
 * accumulator (non-finite rules, bound tol[s] * scale: scale = denom for
 * relatively judged statistics, 1 otherwise), plus the displayed max
 * abs/rel errors. */
static void note(attn_verify *v, int s, double got, double want, double denom)
{
    v->checked[s] = 1;
    size_t before = v->acc[s].n_nonfinite;
    vf_acc_add(&v->acc[s], got, want, attn_stat_relative(s) ? denom : 1.0);
    if (v->acc[s].n_nonfinite != before) {
        v->n_nonfinite++;
        return;
    }
    if (isinf(want)) /* the same infinity on both sides */
        return;
    double a = fabs(got - want);
    if (a > v->max_abs[s])
        v->max_abs[s] = a;
    double r = a / denom;
    if (r > v->max_rel[s])
        v->max_rel[s] = r;
}

static double dmax(double a, double b)
{
    return a > b ? a : b;
}

uint64_t attn_verify_token(uint64_t r, uint64_t rows, uint64_t tokens)
{
    return rows <= 1 ? 0
                     : (uint64_t)((double)r * (double)(tokens - 1) / (double)(rows - 1) + 0.5);
}

/* Verifies sampled rows; stats/buckets/o/dump are the downloaded outputs,
 * ref what the reference computes from (fp32 host tensors). */
static rl_status verify(const attn_desc *d, const attn_ref_operands *ref, const uint32_t *pos,
                        const uint32_t *target, const attn_bias *bias, const float *sinks,
                        const uint32_t *qrows, uint32_t n_buckets,
                        const float *stats, const float *buckets, const float *o,
                        const float *dump, attn_verify *v, rl_error *err)
{
    memset(v, 0, sizeof *v);
    uint64_t n = d->tokens;
    int paired = (d->flags & ATTN_PAIRED) != 0, two = two_defs(d);
    double *scratch = malloc(2 * n * sizeof *scratch);
    double *rb = malloc((n_buckets + 1) * sizeof *rb);
    double *ro = malloc(3 * d->head_dim * sizeof *ro); /* O, sum p|v|, sum |v| (coopmat) */
    rl_status st = RL_OK;
    if (!scratch || !rb || !ro) {
        st = rl_fail(err, RL_ERR_NOMEM, "attention: out of host memory for verification");
        goto done;
    }
    const float *qb = ref->q_b ? ref->q_b : ref->q, *kb = ref->k_b ? ref->k_b : ref->k;
    attn_ref_problem P = {
        .remap_chunk = d->remap_chunk, .q_c = ref->q_c ? ref->q_c : ref->q,
        .tokens = n, .heads = d->heads, .kv_heads = d->kv_heads, .head_dim = d->head_dim,
        .causal = d->causal, .scale = d->scale, .scale_b = d->scale_b, .paired = paired,
        .bias_a = !(d->flags & ATTN_NO_BIAS_A), .bias_b = !(d->flags & ATTN_NO_BIAS_B),
        .q = ref->q, .k = ref->k, .v = ref->v, .q_b = two ? qb : NULL,
        .k_b = two ? kb : NULL, .pos = pos, .bias = bias, .remap_window = d->remap_window,
        .remap_edge = d->remap_edge,
        .window = d->window, .n_sink = d->n_sink, .chunk_size = d->chunk_size,
        .sinks = sinks, .temp = d->temp, .temp_a = d->temp_a, .temp_b = d->temp_b,
        .q_rows = d->query_rows ? qrows : NULL, .n_q_rows = d->query_rows,
    };
    v->sinks = sinks != NULL;
    v->temp = d->temp != 0;
    v->remap_edge = d->remap_window && d->remap_edge;
    uint64_t nq = attn_query_rows(d); /* slots; token = qrows[slot] when sampled */
    uint64_t rows = d->verify_rows < nq ? d->verify_rows : nq;
    for (uint64_t r = 0; r < rows; r++) {
        uint64_t slot = attn_verify_token(r, rows, nq);
        uint64_t i = d->query_rows ? qrows[slot] : slot;
        for (uint32_t h = 0; h < d->heads; h++) {
            attn_ref_row R;
            uint64_t tgt = (d->flags & ATTN_TARGET) ? target[i] : UINT64_MAX;
            attn_ref_row_stats(&P, h, i, tgt, n_buckets, scratch, &R,
                               (d->flags & ATTN_BUCKETS) ? rb : NULL,
                               (d->flags & ATTN_OUT) ? ro : NULL, ro + d->head_dim);
            v->rows++;
            v->max_abs_dot = dmax(v->max_abs_dot, R.max_abs_dot);
            v->max_abs_bias = dmax(v->max_abs_bias, R.max_abs_bias);
            if (!(R.max_bias_err <= v->max_bias_err))
                v->max_bias_err = R.max_bias_err;
            /* a sink is one more term of the normaliser, inside the range */
            double top = sinks ? dmax(R.max, sinks[h]) : R.max;
            v->max_range = dmax(v->max_range, top - R.min_logit);
            if (R.n_keys + (sinks ? 1 : 0) > v->max_keys)
                v->max_keys = R.n_keys + (sinks ? 1 : 0);
            uint64_t row = slot * d->heads + h;
            const float *s = stats + row * RL_ATTN_NSTAT;
            note(v, ATTN_V_LSE, s[RL_ATTN_S_LSE], R.lse, dmax(fabs(R.lse), 1));
            note(v, ATTN_V_MAX, s[RL_ATTN_S_MAX], R.max, dmax(fabs(R.max), 1));
            if (d->flags & ATTN_ENTROPY)
                note(v, ATTN_V_ENTROPY, s[RL_ATTN_S_ENTROPY], R.entropy, dmax(fabs(R.entropy), 1));
            if (d->flags & ATTN_ARGMAX) {
                uint32_t am;
                memcpy(&am, &s[RL_ATTN_S_ARGMAX], 4);
                double gap = am < n && attn_ref_visible(&P, i, am)
                                 ? R.max - attn_ref_logit(&P, 0, h, i, am)
                                 : INFINITY;
                note(v, ATTN_V_ARGMAX_GAP, gap, 0, 1);
                note(v, ATTN_V_ARGMAX_P, s[RL_ATTN_S_ARGMAX_P], R.argmax_p, dmax(R.argmax_p, 1e-30));
            }
            if (d->flags & ATTN_TARGET)
                note(v, ATTN_V_TARGET_P, s[RL_ATTN_S_TARGET_P], R.target_p, dmax(R.target_p, 1e-30));
            if (paired)
                note(v, ATTN_V_KL, s[RL_ATTN_S_KL], R.kl, dmax(fabs(R.kl), 1));
            if (d->flags & ATTN_BUCKETS)
                for (uint32_t b = 0; b < n_buckets; b++)
                    note(v, ATTN_V_BUCKETS, buckets[row * n_buckets + b], rb[b], 1);
            if (d->flags & ATTN_OUT) {
                /* Cooperative matrices: O judged against sum p|v| plus a
                 * floor for P's fp16 underflow (attn_cm.c). */
                double *vsum = ro + 2 * d->head_dim;
                memset(vsum, 0, d->head_dim * sizeof *vsum);
                uint32_t kvh = h / (d->heads / d->kv_heads);
                for (uint64_t j = 0; d->coopmat && j < n; j++)
                    if (attn_ref_visible(&P, i, j))
                        for (uint32_t e = 0; e < d->head_dim; e++)
                            vsum[e] += fabs(ref->v[(j * d->kv_heads + kvh) * d->head_dim + e]);
                for (uint32_t e = 0; e < d->head_dim; e++)
                    note(v, ATTN_V_OUT, o[row * d->head_dim + e], ro[e],
                         dmax(ro[d->head_dim + e] + ATTN_CM_O_FLOOR * vsum[e], 1e-30));
            }
            if (d->flags & ATTN_DUMP)
                for (uint64_t j = 0; j < n; j++) {
                    double want = attn_ref_logit(&P, 0, h, i, j);
                    note(v, ATTN_V_DUMP, dump[(h * n + i) * n + j], want, dmax(fabs(want), 1));
                }
        }
    }
done:
    free(ro);
    free(rb);
    free(scratch);
    return st;
}

/* The caller's host operands as the fp32 tensors the reference reads:
 * fp32 arrays as they are, fp16 ones converted exactly into conv[] (the
 * caller frees conv[0..4]). own_b: paired with its own q_b/k_b. */
static rl_status ref_of_inputs(const attn_desc *d, const attn_inputs *in, int own_b,
                               attn_ref_operands *ref, float *conv[6], rl_error *err)
{
    uint64_t n = d->tokens, nq = attn_query_rows(d) * d->heads * d->head_dim,
             nk = n * d->kv_heads * d->head_dim;
    const void *src[6] = {in->q, in->k, (d->flags & ATTN_OUT) ? in->v : NULL,
                          own_b ? (in->q_b ? in->q_b : in->q) : NULL,
                          own_b ? (in->k_b ? in->k_b : in->k) : NULL,
                          d->remap_chunk ? in->q_c : NULL};
    const uint64_t cnt[6] = {nq, nk, nk, nq, nk, nq};
    const float *f32[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    for (int i = 0; i < 6; i++)
        conv[i] = NULL;
    for (int i = 0; i < 6; i++) {
        if (!src[i])
            continue;
        if (d->fp16 && !(conv[i] = as_float(src[i], cnt[i], 1)))
            return rl_fail(err, RL_ERR_NOMEM, "attention: out of host memory for verification");
        f32[i] = d->fp16 ? conv[i] : src[i];
    }
    *ref = (attn_ref_operands){.q = f32[0], .k = f32[1], .v = f32[2], .q_b = f32[3], .k_b = f32[4],
                               .q_c = f32[5]};
    return RL_OK;
}

rl_status attn_verify_outputs(const attn_desc *din, const attn_inputs *in, const attn_outputs *out,
                              uint32_t n_buckets, int guard_ok, attn_verify *v, rl_error *err)
{
    attn_desc d = resolve(din);
    if (!out->stats || !in->q || !in->k)
        return rl_fail(err, RL_ERR_ARG, "attention verification: missing Q, K or statistics");
    if ((d.flags & ATTN_OUT) && !in->v)
        return rl_fail(err, RL_ERR_ARG, "attention verification: missing V for O");
    uint32_t *pos = malloc(d.tokens * sizeof *pos);
    if (!pos)
        return rl_fail(err, RL_ERR_NOMEM, "attention verification: out of host memory");
    for (uint64_t t = 0; t < d.tokens; t++)
        pos[t] = in->pos ? in->pos[t] : (uint32_t)t;
    attn_ref_operands ref;
    float *conv[6];
    int own_b = two_defs(&d) && (in->q_b || in->k_b);
    rl_status st = RL_OK;
    if (d.query_rows && !in->rows)
        st = rl_fail(err, RL_ERR_ARG, "attention verification: query_rows without rows");
    if (!st)
        st = ref_of_inputs(&d, in, own_b, &ref, conv, err);
    if (!st)
        st = verify(&d, &ref, pos, in->target, in->bias, in->sinks, in->rows, n_buckets, out->stats,
                    out->buckets,
                    out->out, out->dump, v, err);
    if (!st)
        attn_judge(&d, v, guard_ok);
    for (int i = 0; i < 6; i++)
        free(conv[i]);
    free(pos);
    return st;
}

/* What both entry points do first: res cleared, *d = din with defaults,
 * the checks, *var = the bias's shader variant. */
static rl_status begin_run(attn_engine *e, const attn_desc *din, const attn_bias *bias,
                           int have_sinks, int have_qk, int have_v, int have_target, const attn_outputs *out,
                           attn_desc *d, const attn_variant **var, attn_result *res, rl_error *err)
{
    rlvk_device *dev = e->dev;
    memset(res, 0, sizeof *res);
    *d = resolve(din);
    rl_status st = attn_check_shape(dev, d, err);
    if (st)
        return st;
    const char *vname = bias && bias->variant ? bias->variant : "none";
    if (!(*var = find_variant(vname))) {
        char built[256] = "";
        size_t n = 0;
        for (size_t i = 0; i < RL_ARRAY_LEN(variants) && n < sizeof built; i++)
            n += (size_t)snprintf(built + n, sizeof built - n, "%s%s", i ? ", " : "",
                                  variants[i].name);
        return rl_fail(err, RL_ERR_UNSUPPORTED,
                       "attention: no shader variant for bias '%s' (built: %s)", vname, built);
    }
    if (d->fp16 && !dev->feat_storage16)
        return rl_fail(err, RL_ERR_UNSUPPORTED,
                       "attention: fp16 storage needs storageBuffer16BitAccess, which %s lacks",
                       dev->info.name);
    if (d->coopmat && (st = attn_cm_check(&dev->info, d, vname, have_sinks, err)))
        return st;
    if (d->coopmat && !d->test_cm_emulate &&
        !(attn_cm_shape_for(&dev->info, d).module == ATTN_CM_SPV_KHR ? dev->feat_coopmat_khr
                                                                      : dev->feat_coopmat_nv))
        return rl_fail(err, RL_ERR_UNSUPPORTED,
                       "cooperative-matrix path: the device's cooperative-matrix extension is not "
                       "enabled on %s", dev->info.name);
    if (d->path < ATTN_PATH_AUTO || d->path >= ATTN_PATH_COUNT)
        return rl_fail(err, RL_ERR_ARG, "attention: unknown kernel path %d", d->path);
    attn_path path;
    path_of(dev, d, &path);
    if (!path.supported)
        return rl_fail(err, RL_ERR_UNSUPPORTED, "attention: the %s path does not run on %s: %s",
                       attn_path_name(path.kind), dev->info.name, path.why);
    if (!have_qk || ((d->flags & ATTN_OUT) && !have_v) || ((d->flags & ATTN_TARGET) && !have_target))
        return rl_fail(err, RL_ERR_ARG, "attention: missing input (Q, K, V for O, or targets)");
    if (((d->flags & ATTN_BUCKETS) && !out->buckets) || ((d->flags & ATTN_OUT) && !out->out) ||
        ((d->flags & ATTN_DUMP) && !out->dump))
        return rl_fail(err, RL_ERR_ARG, "attention: an asked-for output array is NULL");
    if (have_sinks && (d->flags & ATTN_PAIRED))
        return rl_fail(err, RL_ERR_ARG, "attention: learned sinks are not supported in paired mode "
                                        "(KL between definitions with and without a sink term)");
    if (bias && (d->remap_window || d->remap_chunk))
        return rl_fail(err, RL_ERR_ARG, "attention: position remapping (remap_window %u, "
                                        "remap_chunk %u) takes rotary operands only, not a logit "
                                        "bias ('%s')",
                       d->remap_window, d->remap_chunk, vname);
    if (bias && bias->n_buffers > 4)
        return rl_fail(err, RL_ERR_ARG, "attention: bias '%s' has %u buffers (at most 4)", vname,
                       bias->n_buffers);
    return RL_OK;
}

/* The engine over operands in device buffers (d resolved and checked, var
 * its variant; in->q_b/k_b already resolved to q/k when absent): positions,
 * outputs, `before`, the chunked dispatches, downloads, verification.
 * t_start: when the caller's GPU part began (for wall_ms). */
static rl_status run(attn_engine *e, const attn_desc *dp, const attn_variant *var,
                     const attn_resident *in, const attn_outputs *out, attn_result *res,
                     double t_start, rl_error *err)
{
    rlvk_device *dev = e->dev;
    const attn_desc d = *dp;
    rl_status st = RL_OK;
    uint64_t n = d.tokens;
    attn_path path;
    path_of(dev, &d, &path);
    const uint64_t qwg = attn_path_rows(&path); /* query block */
    /* query slots: every token, or the sampled rows (in->rows[slot]) */
    const uint64_t nq = attn_query_rows(&d);
    const uint32_t *qrows = d.query_rows ? in->rows : NULL;
    uint64_t n_qb = (nq + qwg - 1) / qwg;
    uint32_t *idx = malloc((3 * n + n_qb + (qrows ? nq : 0)) * sizeof *idx);
    uint32_t *qlo = NULL, *qcnt = NULL; /* per key chunk: query blocks dispatched */
    float *stats = out->stats ? out->stats : malloc(nq * d.heads * RL_ATTN_NSTAT * sizeof(float));
    rlvk_buffer bidx = {0}, bout = {0}, dummy = {0}, bsink = {0};
    rlvk_cmd cmd = {0};
    if (!idx || !stats) {
        st = rl_fail(err, RL_ERR_NOMEM, "attention: out of host memory for %llu tokens",
                     (unsigned long long)n);
        goto done;
    }
    if (d.query_rows && !qrows) {
        st = rl_fail(err, RL_ERR_ARG, "attention: query_rows %u without the rows", d.query_rows);
        goto done;
    }
    for (uint64_t r = 0; qrows && r < nq; r++)
        if (qrows[r] >= n || (r && qrows[r] <= qrows[r - 1])) {
            st = rl_fail(err, RL_ERR_ARG, "attention: query row %llu is token %u: the rows must "
                         "ascend strictly and stay below tokens %llu", (unsigned long long)r,
                         qrows[r], (unsigned long long)n);
            goto done;
        }
    uint32_t pmin = UINT32_MAX, pmax = 0;
    for (uint64_t t = 0; t < n; t++) {
        idx[t] = in->pos ? in->pos[t] : (uint32_t)t;
        idx[n + t] = (d.flags & ATTN_TARGET) ? in->target[t] : 0;
        pmin = idx[t] < pmin ? idx[t] : pmin;
        pmax = idx[t] > pmax ? idx[t] : pmax;
        if (idx[t] > INT32_MAX) {
            st = rl_fail(err, RL_ERR_ARG, "attention: position %u of token %llu exceeds 2^31 - 1",
                         idx[t], (unsigned long long)t);
            goto done;
        }
    }
    uint32_t nb = (d.flags & ATTN_BUCKETS) ? attn_n_buckets(pmax - pmin) : 1;
    /* The kernel keeps 16 or ATTN_MAX_BUCKETS buckets (fewer pipelines to
     * build); rows are compacted to nb after download. */
    uint32_t nb_k = kernel_buckets(&d, pmax - pmin);
    uint32_t kb = block_keys(dev, &d);
    uint32_t blocks = path_blocks(&d, kb, &path);
    res->path = path.kind;
    res->split = path.split;
    res->texel = !d.coopmat && path.texel;
    attn_layout L;
    layout_of(&d, nb_k, &L);
    res->n_buckets = nb;
    res->chunk_keys = blocks * kb;

    int paired = two_defs(&d);
    /* Per key chunk, the query blocks that see it: all (bidirectional) or
     * from the block holding the chunk's first key on (causal); with a mask,
     * the blocks attn_tile_visible finds (a band: sinks, windows and chunks
     * keep it contiguous; checked), none = the chunk is skipped. idx[2n + qb]:
     * key_base of the last chunk block qb is dispatched for. */
    uint64_t chunk = (uint64_t)blocks * kb;
    uint64_t n_chunks = (n + chunk - 1) / chunk;
    if (!(qlo = malloc(n_chunks * sizeof *qlo)) || !(qcnt = malloc(n_chunks * sizeof *qcnt))) {
        st = rl_fail(err, RL_ERR_NOMEM, "attention: out of host memory for %llu chunks",
                     (unsigned long long)n_chunks);
        goto done;
    }
    for (uint64_t qb = 0; qb < n_qb; qb++)
        idx[2 * n + qb] = 0;
    res->tiles_run = res->tiles_full = 0;
    /* Query block qb's tokens: [qb qwg, ...) of every token, or the token
     * span of its sampled rows (ascending, so the blocks seeing a chunk stay
     * a band; the kernel masks each row exactly). */
#define QTOK0(qb) (qrows ? (uint64_t)qrows[(qb) * qwg] : (qb) * qwg)
#define QTOK1(qb) (qrows ? (uint64_t)qrows[((qb) + 1) * qwg < nq ? ((qb) + 1) * qwg - 1 : nq - 1] + 1 \
                         : ((qb) + 1) * qwg < n ? ((qb) + 1) * qwg : n)
    attn_desc dfull = d; /* causal only: the tiles a full pass of these rows runs */
    dfull.window = dfull.n_sink = dfull.chunk_size = 0;
    for (uint64_t c = 0; c < n_chunks; c++) {
        uint64_t k0 = c * chunk, k1 = k0 + chunk < n ? k0 + chunk : n;
        uint64_t full0 = d.causal ? k0 / qwg : 0;
        if (qrows) {
            full0 = n_qb;
            for (uint64_t qb = 0; qb < n_qb && full0 == n_qb; qb++)
                if (attn_tile_visible(&dfull, QTOK0(qb), QTOK1(qb), k0, k1))
                    full0 = qb;
        }
        res->tiles_full += (n_qb - full0) * d.kv_heads;
        if (!masked(&d) && !qrows) {
            qlo[c] = (uint32_t)full0;
            qcnt[c] = (uint32_t)(n_qb - full0);
        } else {
            uint64_t lo = n_qb, hi = 0;
            for (uint64_t qb = full0; qb < n_qb; qb++) {
                uint64_t q0 = QTOK0(qb), q1 = QTOK1(qb);
                if (attn_tile_visible(&d, q0, q1, k0, k1)) {
                    if (lo == n_qb)
                        lo = qb;
                    else if (hi + 1 != qb) {
                        st = rl_fail(err, RL_ERR_ARG,
                                     "attention: the query blocks seeing key chunk %llu are not "
                                     "contiguous (mask window %u, n_sink %u, chunk_size %u)",
                                     (unsigned long long)c, d.window, d.n_sink, d.chunk_size);
                        goto done;
                    }
                    hi = qb;
                    idx[2 * n + qb] = (uint32_t)k0;
                }
            }
            qlo[c] = (uint32_t)(lo == n_qb ? 0 : lo);
            qcnt[c] = (uint32_t)(lo == n_qb ? 0 : hi - lo + 1);
        }
        res->tiles_run += (uint64_t)qcnt[c] * d.kv_heads;
    }
#undef QTOK0
#undef QTOK1
    uint64_t off_temp = 2 * n + (masked(&d) ? n_qb : 0);
    uint64_t off_rows = off_temp + (d.temp ? n : 0);
    uint64_t n_idx = off_rows + (qrows ? nq : 0);
    for (uint64_t t = 0; d.temp && t < n; t++) {
        float tau = (float)temperature(&d, t, idx[t]);
        memcpy(&idx[off_temp + t], &tau, 4);
    }
    if (qrows)
        memcpy(&idx[off_rows], qrows, nq * sizeof *qrows);
    if ((st = rlvk_buffer_create(dev, 16, "attn dummy", &dummy, err)) ||
        (st = rlvk_buffer_create(dev, n_idx * 4, "positions+targets", &bidx, err)) ||
        (st = vf_guarded_create(dev, L.out_floats * 4, "attention outputs", &bout, err)) ||
        (st = rlvk_buffer_upload(dev, &bidx, 0, idx, n_idx * 4, err)))
        goto done;

    const rlvk_pipeline *pipe;
    if ((st = get_pipe(e, var, &d, in->sinks != NULL, kb, blocks, &path, nb_k, &pipe, err)))
        goto done;
    if (in->sinks && ((st = rlvk_buffer_create(dev, (uint64_t)d.heads * 4, "sinks", &bsink, err)) ||
                      (st = rlvk_buffer_upload(dev, &bsink, 0, in->sinks, (uint64_t)d.heads * 4, err))))
        goto done;
    /* K beyond one binding: every dispatch binds the window of wkeys keys
     * holding its chunk (K, K_b, V alike; wkeys a multiple of the chunk whose
     * byte offset meets the device's alignment), and the kernel reads key j
     * at j - key_window. Whole buffers otherwise. */
    uint64_t krow = (uint64_t)d.kv_heads * d.head_dim * (d.fp16 ? 2 : 4);
    uint64_t range = dev->info.max_storage_buffer_range;
    int windowed = in->k->size > range || (paired && in->k_b->size > range) ||
                   ((d.flags & ATTN_OUT) && in->v->size > range) || d.test_key_window;
    uint64_t wkeys = n;
    if (windowed) {
        uint64_t align = dev->info.min_storage_offset > dev->info.min_texel_offset
                             ? dev->info.min_storage_offset
                             : dev->info.min_texel_offset;
        uint64_t g = chunk;
        while (align > 1 && (g * krow) % align)
            g += chunk;
        wkeys = range / krow / g * g;
        if (d.test_key_window) /* whole chunks of the alignment step, at least one */
            wkeys = (d.test_key_window + g - 1) / g * g;
        if (d.coopmat || wkeys == 0) {
            st = rl_fail(err, RL_ERR_LIMIT, "attention: K of %llu bytes needs windows of whole "
                         "chunks, which %s the cooperative-matrix path cannot take",
                         (unsigned long long)(n * krow), d.coopmat ? "" : "(none fits one binding)");
            goto done;
        }
        res->key_windows = (uint32_t)((n + wkeys - 1) / wkeys);
    } else {
        res->key_windows = 1;
    }
    rlvk_buffer kwin = {0}, kbwin = {0}, vwin = {0};
    /* binding 11: DCA's inter-chunk queries (no bias then, begin_run) */
    const rlvk_buffer *bufs[12] = {
        in->q, in->k, paired ? in->q_b : &dummy, paired ? in->k_b : &dummy,
        (d.flags & ATTN_OUT) ? in->v : &dummy, &bidx, &bout, in->sinks ? &bsink : &dummy, &dummy,
        &dummy, &dummy, d.remap_chunk ? in->q_c : &dummy};
    for (uint32_t b = 0; in->bias && b < in->bias->n_buffers; b++)
        bufs[8 + b] = in->bias->buffers[b];

    /* Dispatches: one per (key chunk, KV head), over the query blocks that
     * see the chunk (causal: from the block holding the chunk's first key
     * on); submissions gather dispatches up to d.work_per_submit MACs each,
     * so no single submission runs for seconds on a desktop GPU. A chunk's
     * dispatch reads the running state the previous one wrote (barrier in
     * rlvk_cmd_dispatch). The first submission starts with `before`'s work
     * (its own timestamps), so producer and attention share one command
     * buffer. */
    uint32_t group = d.heads / d.kv_heads;
    struct rl_attn_push push = {
        .group_base = 0, .n_tokens = (uint32_t)n, .scale_a = d.scale, .scale_b = d.scale_b,
        .off_buckets = (uint32_t)L.off_buckets, .off_out = (uint32_t)L.off_out,
        .off_dump = (uint32_t)L.off_dump, .window = d.window, .n_sink = d.n_sink,
        .chunk_size = d.chunk_size, .off_temp = (uint32_t)off_temp,
        .off_rows = (uint32_t)off_rows, .n_rows = d.query_rows,
        .remap_window = d.remap_chunk ? d.remap_chunk : d.remap_window,
        .heads = d.heads, .kv_group = group};
    res->gpu_ms = 0;
    /* Dispatch x: chunk x / kv_heads, KV head x % kv_heads; its first key and
     * first query block (causal: the block holding that key). */
#define KEY0(x) ((x) / d.kv_heads * chunk)
#define QB0(x) qlo[(x) / d.kv_heads]
#define QBN(x) qcnt[(x) / d.kv_heads]
    uint64_t next = 0, total = n_chunks * d.kv_heads;
    while (next < total && QBN(next) == 0) /* skipped chunks (mask) */
        next++;
    while (next < total) {
        uint64_t work = 0, end = next;
        while (end < total && (end == next || work < d.work_per_submit)) {
            work += (uint64_t)QBN(end) * qwg * group * chunk * d.head_dim * (paired ? 2 : 1);
            end++;
        }
        uint32_t n_disp = 0;
        for (uint64_t x = next; x < end; x++)
            n_disp += QBN(x) ? 1u : 0u;
        int first = next == 0, hook = first && in->before;
        if ((st = rlvk_cmd_begin(dev, n_disp + (hook ? in->before_dispatches : 0),
                                 &cmd, err)))
            goto done;
        if (hook) {
            rlvk_cmd_timestamp(&cmd, 2);
            if ((st = in->before(in->before_ctx, &cmd, &bidx, err)))
                goto done;
        }
        if (first) {
            /* Statistics not asked for read 0, not stale memory; the dump
             * starts all -inf, since a row's workgroup skips the chunks past
             * its last key (causal) and masked logits are -inf. */
            rlvk_cmd_fill(&cmd, &bout, 0, L.off_dump * 4, 0);
            if (d.flags & ATTN_DUMP)
                rlvk_cmd_fill(&cmd, &bout, L.off_dump * 4, (L.out_floats - L.off_dump) * 4,
                              0xff800000u); /* not to the end: the guard follows */
        }
        rlvk_cmd_timestamp(&cmd, 0);
        for (uint64_t x = next; x < end; x++) {
            if (QBN(x) == 0)
                continue;
            push.qblock_base = (uint32_t)QB0(x);
            push.key_base = (uint32_t)KEY0(x);
            push.kv_head = (uint32_t)(x % d.kv_heads);
            if (windowed) {
                uint64_t w0 = KEY0(x) / wkeys * wkeys, wn = n - w0 < wkeys ? n - w0 : wkeys;
                push.key_window = (uint32_t)w0;
                if ((st = rlvk_buffer_window(dev, in->k, w0 * krow, wn * krow, &kwin, err)) ||
                    (paired &&
                     (st = rlvk_buffer_window(dev, in->k_b, w0 * krow, wn * krow, &kbwin, err))) ||
                    ((d.flags & ATTN_OUT) &&
                     (st = rlvk_buffer_window(dev, in->v, w0 * krow, wn * krow, &vwin, err))))
                    goto done;
                bufs[1] = &kwin;
                if (paired)
                    bufs[3] = &kbwin;
                if (d.flags & ATTN_OUT)
                    bufs[4] = &vwin;
            }
            if ((st = rlvk_cmd_dispatch(&cmd, pipe, bufs, &push, (uint64_t)QBN(x) * group, err)))
                goto done;
        }
        rlvk_cmd_timestamp(&cmd, 1);
        if ((st = rlvk_cmd_submit_wait(&cmd, err)))
            goto done;
        double ns;
        if (res->gpu_ms >= 0 && dev->query_pool && rlvk_cmd_elapsed_ns(&cmd, 0, 1, &ns, NULL) == RL_OK)
            res->gpu_ms += ns * 1e-6;
        else
            res->gpu_ms = -1;
        if (hook)
            res->before_gpu_ms = dev->query_pool && rlvk_cmd_elapsed_ns(&cmd, 2, 0, &ns, NULL) == RL_OK
                                     ? ns * 1e-6
                                     : -1;
        rlvk_cmd_destroy(&cmd);
        memset(&cmd, 0, sizeof cmd);
        res->submissions++;
        next = end;
        while (next < total && QBN(next) == 0)
            next++;
    }
#undef QBN
#undef QB0
#undef KEY0
    if (d.test_write_past) {
        uint32_t word = 0;
        if ((st = rlvk_buffer_upload(dev, &bout, L.out_floats * 4, &word, 4, err)))
            goto done;
    }
    if ((st = vf_guard_check(dev, &bout, L.out_floats * 4, &res->guard_ok, err)))
        goto done;
    if ((st = rlvk_buffer_download(dev, &bout, 0, stats, nq * d.heads * RL_ATTN_NSTAT * 4, err)))
        goto done;
    if (d.flags & ATTN_BUCKETS) {
        float *tmp = malloc(nq * d.heads * nb_k * sizeof *tmp);
        if (!tmp) {
            st = rl_fail(err, RL_ERR_NOMEM, "attention: out of host memory for bucket masses");
            goto done;
        }
        st = rlvk_buffer_download(dev, &bout, L.off_buckets * 4, tmp, nq * d.heads * nb_k * 4, err);
        for (uint64_t r = 0; !st && r < nq * d.heads; r++)
            memcpy(out->buckets + r * nb, tmp + r * nb_k, nb * sizeof *tmp);
        free(tmp);
        if (st)
            goto done;
    }
    if ((d.flags & ATTN_OUT) &&
        (st = rlvk_buffer_download(dev, &bout, L.off_out * 4, out->out,
                                   nq * d.heads * d.head_dim * 4, err)))
        goto done;
    if ((d.flags & ATTN_DUMP) &&
        (st = rlvk_buffer_download(dev, &bout, L.off_dump * 4, out->dump, n * n * d.heads * 4, err)))
        goto done;
    res->wall_ms = (rl_now() - t_start) * 1e3;
    if (!d.no_verify &&
        !(st = verify(&d, &in->ref, idx, in->target, in->bias, in->sinks, in->rows, nb, stats,
                      out->buckets,
                      out->out,
                      out->dump, &res->verify, err)))
        attn_judge(&d, &res->verify, res->guard_ok);
done:
    rlvk_cmd_destroy(&cmd);
    rlvk_buffer_destroy(dev, &bsink);
    rlvk_buffer_destroy(dev, &dummy);
    rlvk_buffer_destroy(dev, &bout);
    rlvk_buffer_destroy(dev, &bidx);
    if (stats != out->stats)
        free(stats);
    free(qcnt);
    free(qlo);
    free(idx);
    return st;
}

rl_status attn_run(attn_engine *e, const attn_desc *din, const attn_inputs *in,
                   const attn_outputs *out, attn_result *res, rl_error *err)
{
    rlvk_device *dev = e->dev;
    attn_desc d;
    const attn_variant *var;
    rl_status st = begin_run(e, din, in->bias, in->sinks != NULL, in->q && in->k, in->v != NULL,
                             in->target != NULL,
                             out, &d, &var, res, err);
    if (st)
        return st;
    int own_b = two_defs(&d) && (in->q_b || in->k_b);
    attn_layout L;
    layout_of(&d, 1, &L);
    rlvk_buffer bqa = {0}, bka = {0}, bqb = {0}, bkb = {0}, bv = {0}, bqc = {0};
    attn_ref_operands ref = {0};
    float *conv[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    if (d.remap_chunk && !in->q_c)
        return rl_fail(err, RL_ERR_ARG, "attention: remap_chunk needs the inter-chunk queries q_c");
    if (!d.no_verify && (st = ref_of_inputs(&d, in, own_b, &ref, conv, err)))
        goto done;
    double t_start = rl_now();
    if ((st = rlvk_buffer_create(dev, L.q_bytes, "Q", &bqa, err)) ||
        (st = rlvk_buffer_create_large(dev, L.k_bytes, "K", &bka, err)) ||
        (st = rlvk_buffer_upload(dev, &bqa, 0, in->q, L.q_bytes, err)) ||
        (st = rlvk_buffer_upload(dev, &bka, 0, in->k, L.k_bytes, err)))
        goto done;
    if (own_b &&
        ((st = rlvk_buffer_create(dev, L.q_bytes, "Q_b", &bqb, err)) ||
         (st = rlvk_buffer_create_large(dev, L.k_bytes, "K_b", &bkb, err)) ||
         (st = rlvk_buffer_upload(dev, &bqb, 0, in->q_b ? in->q_b : in->q, L.q_bytes, err)) ||
         (st = rlvk_buffer_upload(dev, &bkb, 0, in->k_b ? in->k_b : in->k, L.k_bytes, err))))
        goto done;
    if ((d.flags & ATTN_OUT) &&
        ((st = rlvk_buffer_create_large(dev, L.k_bytes, "V", &bv, err)) ||
         (st = rlvk_buffer_upload(dev, &bv, 0, in->v, L.k_bytes, err))))
        goto done;
    if (d.remap_chunk &&
        ((st = rlvk_buffer_create(dev, L.q_bytes, "Q_c", &bqc, err)) ||
         (st = rlvk_buffer_upload(dev, &bqc, 0, in->q_c, L.q_bytes, err))))
        goto done;
    attn_resident r = {
        .q = &bqa, .k = &bka, .v = &bv, .q_b = own_b ? &bqb : &bqa, .k_b = own_b ? &bkb : &bka,
        .q_c = d.remap_chunk ? &bqc : NULL,
        .pos = in->pos, .target = in->target, .bias = in->bias, .sinks = in->sinks,
        .rows = in->rows, .ref = ref,
    };
    st = run(e, &d, var, &r, out, res, t_start, err);
done:
    rlvk_buffer_destroy(dev, &bqc);
    rlvk_buffer_destroy(dev, &bv);
    rlvk_buffer_destroy(dev, &bkb);
    rlvk_buffer_destroy(dev, &bqb);
    rlvk_buffer_destroy(dev, &bka);
    rlvk_buffer_destroy(dev, &bqa);
    for (int i = 0; i < 6; i++)
        free(conv[i]);
    return st;
}

rl_status attn_run_resident(attn_engine *e, const attn_desc *din, const attn_resident *in,
                            const attn_outputs *out, attn_result *res, rl_error *err)
{
    attn_desc d;
    const attn_variant *var;
    rl_status st = begin_run(e, din, in->bias, in->sinks != NULL, in->q && in->k, in->v != NULL,
                             in->target != NULL,
                             out, &d, &var, res, err);
    if (st)
        return st;
    if (d.fp16)
        return rl_fail(err, RL_ERR_UNSUPPORTED, "attention: device-resident inputs are fp32 only");
    int paired = two_defs(&d);
    if (!d.no_verify && (!in->ref.q || !in->ref.k || ((d.flags & ATTN_OUT) && !in->ref.v)))
        return rl_fail(err, RL_ERR_ARG, "attention: verification needs the reference operands "
                                        "(ref.q, ref.k, and ref.v for O)");
    attn_layout L;
    layout_of(&d, 1, &L);
    attn_resident r = *in;
    r.q_b = in->q_b ? in->q_b : in->q;
    r.k_b = in->k_b ? in->k_b : in->k;
    if (d.remap_chunk && (!in->q_c || (!d.no_verify && !in->ref.q_c)))
        return rl_fail(err, RL_ERR_ARG, "attention: remap_chunk needs the inter-chunk queries q_c "
                                        "(and ref.q_c for verification)");
    const rlvk_buffer *q_like[3] = {r.q, paired ? r.q_b : r.q, d.remap_chunk ? r.q_c : r.q};
    const rlvk_buffer *k_like[3] = {r.k, paired ? r.k_b : r.k, (d.flags & ATTN_OUT) ? r.v : r.k};
    for (int i = 0; i < 3; i++)
        if (q_like[i]->size < L.q_bytes)
            return rl_fail(err, RL_ERR_ARG, "attention: %s holds %llu bytes, fewer than the %llu of "
                           "[tokens][heads][head_dim] fp32", q_like[i]->name,
                           (unsigned long long)q_like[i]->size, (unsigned long long)L.q_bytes);
    for (int i = 0; i < 3; i++)
        if (k_like[i]->size < L.k_bytes)
            return rl_fail(err, RL_ERR_ARG, "attention: %s holds %llu bytes, fewer than the %llu of "
                           "[tokens][kv_heads][head_dim] fp32", k_like[i]->name,
                           (unsigned long long)k_like[i]->size, (unsigned long long)L.k_bytes);
    return run(e, &d, var, &r, out, res, rl_now(), err);
}

/* ---- an encoding's logit bias ---------------------------------------------- */

rl_status attn_pe_bias_create(rlvk_device *dev, const pe_encoding *e, const float *q,
                              const float *k, uint64_t tokens, uint32_t heads, uint32_t kv_heads,
                              uint32_t head_dim, attn_pe_bias *out, rl_error *err)
{
    memset(out, 0, sizeof *out);
    rl_status st = pe_bias_gpu_create(dev, e, q, k, tokens, heads, kv_heads, head_dim, &out->gpu,
                                      err);
    if (st)
        return st;
    out->ctx = (pe_bias_ref_ctx){.e = e, .q = q, .k = k};
    out->bias.variant = out->gpu.variant;
    out->bias.n_buffers = out->gpu.n_buffers;
    for (uint32_t i = 0; i < out->gpu.n_buffers; i++)
        out->bias.buffers[i] = &out->gpu.buffers[i];
    out->bias.ref = pe_bias_ref_cb;
    out->bias.bound = pe_bias_bound_cb;
    out->bias.ref_ctx = &out->ctx;
    return RL_OK;
}

void attn_pe_bias_destroy(rlvk_device *dev, attn_pe_bias *b)
{
    pe_bias_gpu_destroy(dev, &b->gpu);
    memset(b, 0, sizeof *b);
}
