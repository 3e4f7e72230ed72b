/* attn.h — streaming attention statistics on Vulkan (prefix attn_).
 *
 * Flash-attention style online softmax (Dao et al. 2022), streamed over key
 * chunks (one dispatch per chunk and KV head, the running statistics kept
 * in the output slots between chunks): memory stays O(tokens * head_dim),
 * and the kernel returns per-query statistics of the attention distribution
 * instead of (or besides) the output O. Definitions (docs/attention.md):
 *
 *   logit(h, i, j) = scale * <q[i,h], k[j,kvh]> + bias(h, i, j)
 *   kvh = h / (heads / kv_heads)                    (grouped-query attention)
 *   keys j: all tokens (bidirectional) or j <= i (causal, token order)
 *   p_j = exp(logit_j - lse),  lse = log sum_j exp(logit_j)
 *
 * Q and K arrive already transformed by the encoding's vector part (RoPE,
 * additive embeddings); the engine adds the encoding's logit bias inside the
 * kernel through bias_NAME.glsl (see struct attn_bias).
 *
 * Two parts kept apart: the CPU reference (attn_ref.c, double precision,
 * straight from the definitions, no Vulkan) and the GPU host side
 * (attn_gpu.c: limits, buffers, pipelines, chunked dispatches grouped into
 * submissions, verification of sampled rows against the reference). */
#ifndef ATTN_H
#define ATTN_H

#include <stddef.h>
#include <stdint.h>

#include "attn/attn_mask.h"
#include "core/rl_status.h"
#include "rl_push.h" /* RL_ATTN_F_*, RL_ATTN_S_*, RL_ATTN_NSTAT */
#include "pe/pe.h"
#include "verify/vf.h"
#include "vk/rlvk.h"

/* Statistics the caller may ask for (attn_desc.flags); log-sum-exp and the
 * max logit are always produced. */
#define ATTN_ENTROPY RL_ATTN_F_ENTROPY
#define ATTN_ARGMAX RL_ATTN_F_ARGMAX
#define ATTN_TARGET RL_ATTN_F_TARGET
#define ATTN_BUCKETS RL_ATTN_F_BUCKETS
#define ATTN_OUT RL_ATTN_F_OUT
#define ATTN_PAIRED RL_ATTN_F_PAIRED
#define ATTN_DUMP RL_ATTN_F_DUMP
#define ATTN_NO_BIAS_A RL_ATTN_F_NO_BIAS_A
#define ATTN_NO_BIAS_B RL_ATTN_F_NO_BIAS_B
#define ATTN_USER_FLAGS                                                                     \
    (ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | ATTN_BUCKETS | ATTN_OUT | ATTN_PAIRED |   \
     ATTN_DUMP | ATTN_NO_BIAS_A | ATTN_NO_BIAS_B)

enum { ATTN_TEMP_NONE, ATTN_TEMP_LLAMA4, ATTN_TEMP_QWEN_LOGN, ATTN_TEMP_SSMAX };

#define ATTN_MAX_HEAD_DIM 512
#define ATTN_MAX_BUCKETS 34        /* distances up to 2^32 - 1 */
#define ATTN_DUMP_MAX 4194304u     /* heads * tokens^2 logits at most (16 MiB) */
#define ATTN_DEFAULT_VERIFY_ROWS 32
#define ATTN_WG 64                 /* queries per workgroup (GPU paths) */
/* Queries per workgroup of the scalar path on CPU devices. lavapipe runs a
 * workgroup's staging (each invocation copies KB * head_dim / 4 / WG vec4 of
 * the block into shared memory, through per-lane load and store loops) once
 * per block for all its rows, so the copy per row falls as the workgroup
 * grows: statistics at 16384 x 128 causal took 597 / 478 / 477 / 425 ms at
 * 64 / 128 / 256 / 512 rows (docs/performance.md "Issue 17: workgroup rows"). */
#define ATTN_WG_CPU 256

/* The logit bias of an encoding: shader variant + its buffers (bindings
 * 8..8+n_buffers-1) + its CPU reference. Filled by the caller (the encoding
 * registry); a NULL attn_bias pointer means no bias. */
typedef struct attn_bias {
    const char *variant;                 /* "none", "alibi", "t5", "xl" */
    uint32_t n_buffers;                  /* bound at bindings 8.. */
    const rlvk_buffer *buffers[4];
    double (*ref)(void *ctx, uint32_t h, uint64_t qtok, uint64_t ktok, int64_t qpos,
                  int64_t kpos);         /* CPU reference of bias; NULL = 0 */
    double (*bound)(void *ctx, uint32_t h, uint64_t qtok, uint64_t ktok, int64_t qpos,
                    int64_t kpos);       /* absolute error bound of the device's bias
                                            (its own fp32 arithmetic, e.g. XL's trig);
                                            NULL: exact up to the 3 u |bias| of E_s */
    void *ref_ctx;                       /* ctx of ref and bound */
} attn_bias;

/* Problem shape and options. Zero fields mean defaults where stated. */
typedef struct attn_desc {
    uint64_t tokens;        /* >= 1 */
    uint32_t heads;         /* >= 1 */
    uint32_t kv_heads;      /* 0: heads; must divide heads */
    uint32_t head_dim;      /* multiple of 4, <= ATTN_MAX_HEAD_DIM */
    int causal;             /* 1: keys j <= i only */
    /* Masks beyond causal/bidirectional (docs/attention.md "Masks"), in
     * token order like causal: key j is visible to query i when it passes
     * causal and (j < n_sink or local(i, j)), local(i, j) = (window == 0 or
     * |i - j| < window) and (chunk_size == 0 or floor(i / chunk_size) ==
     * floor(j / chunk_size)). All 0: no mask. n_sink needs window or
     * chunk_size. Each at most 2^31. Sliding window (Mistral, Gemma local
     * layers): window = W; StreamingLLM / LM-Infinite's Lambda mask: n_sink +
     * window; Llama 4 chunked attention: chunk_size. */
    uint32_t window, n_sink, chunk_size;
    /* Attention temperature: a per-query logit scale tau_i on definition a
     * (docs/attention.md "Temperature"; pos_i = the query's position, n_i =
     * its key count, i + 1 causal, tokens bidirectional):
     *   ATTN_TEMP_LLAMA4: 1 + temp_a log(floor((pos_i + 1) / temp_b) + 1)
     *                     (attn_scale, floor_scale)
     *   ATTN_TEMP_QWEN_LOGN: log(pos_i + 1) / log(temp_a) when pos_i + 1 > temp_a, else 1
     *                     (temp_a = the training length L)
     *   ATTN_TEMP_SSMAX:  temp_a log n_i (Scalable-Softmax's s) */
    int temp;
    double temp_a, temp_b;
    /* Position remapping (docs/attention.md "Position remapping"): with
     * remap_window W >= 1, logit_a(h, i, j) comes from Q/K where
     * |pos_i - pos_j| < W (the exact definition) and from the second pair
     * Q_b/K_b beyond (the remapped definition: Self-Extend's grouped
     * positions, ReRoPE's clamped distance, ... rotated by the caller,
     * attn_remap_*), at the same scale, temperature and mask. Paired with
     * it (ATTN_PAIRED), definition b is logit_a without the selection (Q/K
     * everywhere, scale_b): KL(remapped || exact). 0: none. At most 2^31;
     * no logit bias.
     * Dual Chunk Attention (remap_chunk c >= 1, remap_window 0): three
     * definitions by the chunk distance d = |floor(pos_i/c) -
     * floor(pos_j/c)|: Q.K (d = 0, intra-chunk), Q_b.K_b (d = 1,
     * successive), Q_c.K_b (d >= 2, inter); not with ATTN_PAIRED.
     * remap_edge 1 (with remap_window, not remap_chunk): the key at
     * |pos_i - pos_j| = remap_window enters the softmax with both
     * definitions, weight e^(exact logit) + e^(remapped logit), i.e. the
     * one logit log of that sum (STRING's authors' code counts the key at
     * distance S in both of its flash passes; docs/attention.md). Every
     * statistic is over keys (a key's p is the sum of its terms). */
    uint32_t remap_window;
    uint32_t remap_chunk;
    int remap_edge;
    int fp16;               /* 1: Q/K/V stored as IEEE half (needs 16-bit storage) */
    int coopmat;            /* 1: the cooperative-matrix kernel (attn_cm.h: fp16 only, its
                               statistics only; RL_ERR_UNSUPPORTED where the device or the
                               problem does not fit it) */
    uint32_t flags;         /* ATTN_* statistics */
    float scale;            /* logit scale of definition a (e.g. 1/sqrt(head_dim)) */
    float scale_b;          /* paired mode: scale of definition b */
    uint32_t verify_rows;   /* sampled query tokens verified (all heads); 0: 32 */
    int no_verify;          /* 1: skip the CPU verification */
    uint64_t work_per_submit; /* key*query*dim MACs per submission (at least one
                                 dispatch = one key chunk of one KV head); 0: 2^31 */
    uint32_t block_keys;    /* keys per staged block: 0 automatic (16, or 8/4 when
                               shared memory is short), else 4, 8 or 16 */
    uint32_t chunk_blocks;  /* blocks per dispatch: 0 automatic (see attn_gpu.c),
                               else 1..RL_ATTN_MAX_BLOCKS */
    int test_write_past;    /* test hook: 1 writes one word past the output tensor
                               (into its guard) after the kernel ran */
    int test_cm_emulate;    /* test hook, with coopmat: runs attn_cm.comp with its tensor ops
                               emulated by subgroup loops (attn_cm_emu_f16; no extension
                               needed), to test the rest of that kernel on any device */
    uint32_t test_cm_tile;  /* test hook, with test_cm_emulate: the emulated tile edge M = N = K,
                               8 or 16 (0: 16) */
    uint32_t test_key_window; /* test hook: bind K/K_b/V as windows of about this many keys
                                 (rounded up to whole chunks) even when they fit one binding */
    int test_storage_reads; /* test hook: 1 reads rows from the storage buffers where the path
                               would read them as texels (attn_path.texel), as GPUs do */
    /* Sampled query rows (docs/attention.md "Sampled query rows"): 0 every
     * token is a query row; S >= 1: only the S query tokens of the inputs'
     * `rows` (strictly ascending, < tokens) are, each against every key it
     * sees (causal, mask, remap, bias, temperature exactly as for the full
     * pass), so the work is O(S tokens head_dim). Then Q, Q_b, Q_c are
     * [S][heads][head_dim] (slot r holds token rows[r]) and every output row
     * (stats, buckets, O) is a slot; keys, V, positions and targets stay
     * [tokens]. Not with ATTN_DUMP or the cooperative-matrix path. A row's
     * numbers are the full pass's for that token bit for bit (the same key
     * chunks in the same order; a chunk skipped for one and not the other is
     * wholly masked for the row and leaves its state unchanged). */
    uint32_t query_rows;
    int path;               /* attn_path_kind (attn_path.h): 0 the device's default
                               (attn_path_choose), else that path or RL_ERR_UNSUPPORTED;
                               ATTN_PATH_COOPMAT is the same as coopmat = 1 */
} attn_desc;

/* Host inputs. Tensors are float (fp32) or uint16_t half bits (fp16). */
typedef struct attn_inputs {
    const void *q;          /* [tokens][heads][head_dim] */
    const void *k;          /* [tokens][kv_heads][head_dim] */
    const void *v;          /* [tokens][kv_heads][head_dim], needed for ATTN_OUT */
    const void *q_b;        /* paired or remap (the remapped definition):
                               [tokens][heads][head_dim]; NULL: q */
    const void *k_b;        /* paired or remap: [tokens][kv_heads][head_dim]; NULL: k */
    const void *q_c;        /* remap_chunk: inter-chunk queries [tokens][heads][head_dim] */
    const uint32_t *pos;    /* [tokens] positions; NULL: 0, 1, ... */
    const uint32_t *target; /* [tokens] target key per query, for ATTN_TARGET */
    const attn_bias *bias;  /* NULL: no bias */
    const float *sinks;     /* [heads] learned sink logits (gpt-oss), in the softmax
                               denominator only; NULL: none. Not with ATTN_PAIRED */
    const uint32_t *rows;   /* attn_desc.query_rows: [query_rows] query tokens, ascending */
} attn_inputs;

/* What the CPU reference computes from when the engine's operands are not
 * the caller's host arrays (attn_run_resident): host fp32 tensors, shapes
 * as attn_inputs (q_b/k_b NULL: q/k; v only for ATTN_OUT), holding exactly
 * what the device's operand buffers hold (e.g. downloaded from them), so
 * the tolerances are those of exact operands (attn_tol.c). Only the sampled
 * query rows (attn_verify_token) of q/q_b are read; every key row of k/k_b/v
 * is. */
typedef struct attn_ref_operands {
    const float *q, *k, *v, *q_b, *k_b, *q_c;
} attn_ref_operands;

/* Records work into the engine's first command buffer, before the attention
 * dispatches (a barrier follows each dispatch, so the attention sees what it
 * wrote). pos: the engine's position buffer, [tokens] u32 at offset 0 (the
 * host positions, already uploaded). Must only record: no transfer, no
 * wait. */
typedef rl_status (*attn_record_fn)(void *ctx, rlvk_cmd *cmd, const rlvk_buffer *pos,
                                    rl_error *err);

/* Inputs resident in device buffers (fp32, layouts as attn_inputs, from
 * offset 0; caller-owned, not modified by the engine): Q/K stay on the
 * device between a producer (an encoding's transform, recorded through
 * `before` into the same command buffer) and the attention. */
typedef struct attn_resident {
    const rlvk_buffer *q, *k;    /* [tokens][heads|kv_heads][head_dim] */
    const rlvk_buffer *v;        /* for ATTN_OUT, else NULL */
    const rlvk_buffer *q_b, *k_b; /* paired or remap; NULL: q/k */
    const rlvk_buffer *q_c;      /* remap_chunk: inter-chunk queries */
    const uint32_t *pos;         /* host [tokens] positions; NULL: 0, 1, ... */
    const uint32_t *target;      /* host [tokens], for ATTN_TARGET */
    const attn_bias *bias;       /* NULL: no bias */
    const float *sinks;          /* host [heads] learned sink logits; NULL: none */
    const uint32_t *rows;        /* attn_desc.query_rows: [query_rows] query tokens, ascending */
    attn_record_fn before;       /* NULL: nothing recorded before */
    void *before_ctx;
    uint32_t before_dispatches;  /* dispatches `before` records (descriptor sets) */
    attn_ref_operands ref;       /* for verification (ignored with no_verify) */
} attn_resident;

/* Host outputs (caller-owned; NULL where not asked for). */
typedef struct attn_outputs {
    float *stats;           /* [tokens][heads][RL_ATTN_NSTAT], slots RL_ATTN_S_* (argmax as uint bits) */
    float *buckets;         /* [tokens][heads][attn_n_buckets()] masses */
    float *out;             /* [tokens][heads][head_dim] O, for ATTN_OUT */
    float *dump;            /* [heads][tokens][tokens] logits (-inf masked), for ATTN_DUMP */
} attn_outputs;

/* Verified statistics (index into attn_verify arrays). */
enum {
    ATTN_V_LSE, ATTN_V_MAX, ATTN_V_ENTROPY, ATTN_V_ARGMAX_GAP, ATTN_V_ARGMAX_P,
    ATTN_V_TARGET_P, ATTN_V_BUCKETS, ATTN_V_OUT, ATTN_V_KL, ATTN_V_DUMP, ATTN_V_COUNT
};
/* Name of a verified statistic ("lse", "entropy", ...). */
const char *attn_stat_name(int v);

/* Errors of sampled rows against the CPU reference. Relative errors divide
 * by: max(|ref|, 1) for lse, max, entropy, KL, dump; the argmax gap is
 * ref_max - ref_logit[gpu argmax] (0 when the GPU picked a maximal key);
 * probabilities by max(ref, 1e-30); bucket masses by 1 (total mass);
 * O by sum_j p_j |v_jd|. */
typedef struct attn_verify {
    uint32_t rows;                  /* (token, head) rows verified */
    int checked[ATTN_V_COUNT];      /* 1 where the statistic was produced */
    double max_abs[ATTN_V_COUNT];
    double max_rel[ATTN_V_COUNT];
    int n_nonfinite;                /* NaN/Inf where the reference is finite */
    /* Quantities tolerances are derived from (over the sampled rows): */
    double max_abs_dot;             /* max_j |scale| * sum_d |q_d k_d| (either definition) */
    double max_abs_bias;            /* max |bias| */
    double max_range;               /* max over rows of (max logit - min valid logit) */
    uint64_t max_keys;              /* most keys of a row */
    double max_bias_err;            /* max over valid keys of the bias's own bound (attn_bias.bound) */
    int sinks;                      /* learned sinks folded in (their terms in attn_tol.c) */
    int temp;                       /* a temperature scaled definition a (attn_tol.c) */
    int remap_edge;                 /* the edge key's two terms folded (attn_tol.c) */
    /* Judged by the verification layer (verify/vf.h): */
    vf_acc acc[ATTN_V_COUNT];       /* per statistic, bound tol[k] * scale (abs: 1) */
    double tol[ATTN_V_COUNT];       /* attn_tolerances */
    double gate_fraction;           /* attn_gate_fraction: NMSE gate f of every statistic */
    vf_stats verdict;               /* all statistics (vf_merge) and the output guard */
    char worst[32];                 /* statistic with the worst error/bound */
} attn_verify;

/* 1 where statistic v is judged relative to its reference (argmax/target p,
 * O, dump), else absolute. */
int attn_stat_relative(int v);

/* Tolerance per verified statistic (tol[ATTN_V_COUNT]) from the problem and
 * the sampled rows' numbers (attn_tol.c, derivation there). */
void attn_tolerances(const attn_desc *d, const attn_verify *v, double *tol);

/* NMSE gate fraction of the attention statistics: VF_GATE_ATTN_C / (head_dim
 * + 2) (attn_tol.c, vf.h). */
double attn_gate_fraction(const attn_desc *d);

/* Judges v (its accumulators against attn_tolerances, NMSE gate
 * attn_gate_fraction) into v->tol, v->gate_fraction, v->verdict and
 * v->worst; guard_ok = 0 fails it. */
void attn_judge(const attn_desc *d, attn_verify *v, int guard_ok);

typedef struct attn_result {
    uint32_t n_buckets;     /* buckets per row (when asked) */
    uint32_t chunk_keys;    /* keys per dispatch (one chunk of one KV head) */
    uint32_t submissions;
    double gpu_ms;          /* sum of the submissions' GPU time (-1 without timestamps) */
    double wall_ms;         /* host wall time of the GPU part (upload to download) */
    uint64_t tiles_run;     /* (query block of path rows, key chunk, KV head) tiles dispatched */
    uint64_t tiles_full;    /* the same without the mask (causal or bidirectional) */
    double before_gpu_ms;   /* attn_run_resident: GPU time of `before`'s work (0: none, -1: no
                               timestamps); not in gpu_ms */
    int guard_ok;           /* the guard words after the output tensor are untouched */
    int path;               /* attn_path_kind the run took */
    uint32_t split;         /* its invocations per query row */
    int texel;              /* 1: rows read through texel buffers (attn_path.texel) */
    uint32_t key_windows;   /* K bound as this many windows of keys (1: whole; more when K is
                               beyond maxStorageBufferRange) */
    attn_verify verify;     /* verify.verdict: the verdict (guard included) */
} attn_result;

/* Pipelines, created on first use per (variant, precision, shape, flags). */
#define ATTN_MAX_PIPES 12
typedef struct attn_pipe {
    char key[96];
    rlvk_pipeline pipe;
} attn_pipe;

typedef struct attn_engine {
    rlvk_device *dev;
    uint32_t n_pipes;
    attn_pipe pipes[ATTN_MAX_PIPES];
} attn_engine;

rl_status attn_engine_create(rlvk_device *dev, attn_engine *e, rl_error *err);
void attn_engine_destroy(attn_engine *e);

/* One attention run a caller will make, for attn_engine_prepare. */
typedef struct attn_prep {
    attn_desc desc;              /* as attn_run / attn_run_resident will get it */
    const char *variant;         /* the bias's shader variant (attn_bias.variant); NULL: "none" */
    int sinks;                   /* learned sinks will be given */
    uint64_t max_distance;       /* ATTN_BUCKETS: largest position distance; 0: tokens - 1 */
} attn_prep;

/* Creates, before any run, the pipelines the runs items[0..n-1] will use
 * and the engine does not hold yet, all at once (rlvk_pipelines_create:
 * compiled in parallel), so a run of several passes pays the longest
 * compile instead of their sum; the runs then find them. Items attn_run
 * would refuse are skipped (it reports them); at most ATTN_MAX_PIPES / 2
 * pipelines per call. Results are the same with or without it. */
rl_status attn_engine_prepare(attn_engine *e, uint32_t n, const attn_prep *items, rl_error *err);

/* Buckets for distances up to max_distance: floor(log2(max_distance)) + 2
 * for max_distance >= 1 (bucket 0 holds distance 0), else 1. Bucket of d:
 * 0 for d = 0, else
 * floor(log2 d) + 1 (0 | 1 | 2-3 | 4-7 | ...). Distance = |pos_j - pos_i|. */
uint32_t attn_n_buckets(uint64_t max_distance);
uint32_t attn_bucket_of(uint64_t distance);

/* Refuses shapes beyond limits before anything is allocated: the message
 * names the limit (maxStorageBufferRange, heap size, 32-bit index, shared
 * memory, dump size) and the largest token count that fits. */
rl_status attn_check_shape(const rlvk_device *dev, const attn_desc *d, rl_error *err);

/* d's causal flag and mask as the one host mask description (attn_mask.h). */
attn_mask attn_desc_mask(const attn_desc *d);

/* 1 when some query of [q0, q1) sees some key of [k0, k1) under d's causal
 * flag and mask (exact: attn_mask_tile_visible): the host skips the tiles where it is
 * 0 (attn_gpu.c). */
int attn_tile_visible(const attn_desc *d, uint64_t q0, uint64_t q1, uint64_t k0, uint64_t k1);

/* Runs the engine: uploads inputs, records one dispatch per (key chunk, KV
 * head) in submissions of at most d->work_per_submit MACs, downloads the asked
 * outputs, then (unless no_verify) verifies d->verify_rows sampled query
 * tokens (always first and last, all heads) against the CPU reference and
 * fills res->verify. RL_ERR_UNSUPPORTED for fp16 without 16-bit storage or
 * an unknown bias variant; RL_ERR_LIMIT for sizes the device cannot hold. */
rl_status attn_run(attn_engine *e, const attn_desc *d, const attn_inputs *in,
                   const attn_outputs *out, attn_result *res, rl_error *err);

/* Same, with Q/K/V already in device buffers (fp32 only) and optional work
 * recorded before the attention in its first command buffer; verification
 * uses in->ref (exact operands). Nothing of Q/K/V crosses to the host. */
rl_status attn_run_resident(attn_engine *e, const attn_desc *d, const attn_resident *in,
                            const attn_outputs *out, attn_result *res, rl_error *err);

/* Token of sampled row r of `rows` (rows = min(verify_rows, tokens)) that
 * verification checks: evenly spread, first and last always included. With
 * query_rows S, verification checks the slots attn_verify_token(r, rows', S)
 * (rows' = min(verify_rows, S)), i.e. tokens rows[slot]. */
uint64_t attn_verify_token(uint64_t r, uint64_t rows, uint64_t tokens);

/* Query rows of d: query_rows, or tokens for the full pass. */
uint64_t attn_query_rows(const attn_desc *d);

/* The sampled-row verification of attn_run on host outputs (as attn_run
 * downloaded them, out->stats required; buckets with n_buckets per row):
 * fills v and judges it (attn_judge with guard_ok). For tests that alter a
 * downloaded result and for re-judging. */
rl_status attn_verify_outputs(const attn_desc *d, const attn_inputs *in, const attn_outputs *out,
                              uint32_t n_buckets, int guard_ok, attn_verify *v, rl_error *err);

/* An encoding's logit bias wired for the engine: the registry's device
 * buffers (pe_bias_gpu) and its CPU reference over the raw q/k
 * (pe_bias_ref_cb). `bias` points into the struct itself: create it where
 * it will stay (do not copy it). q: [tokens][heads][head_dim] f32 raw,
 * k: [tokens][kv_heads][head_dim] f32 raw; both must outlive the struct. */
typedef struct attn_pe_bias {
    pe_bias_gpu gpu;
    pe_bias_ref_ctx ctx;
    attn_bias bias;
} attn_pe_bias;

rl_status attn_pe_bias_create(rlvk_device *dev, const pe_encoding *e, const float *q,
                              const float *k, uint64_t tokens, uint32_t heads, uint32_t kv_heads,
                              uint32_t head_dim, attn_pe_bias *out, rl_error *err);
void attn_pe_bias_destroy(rlvk_device *dev, attn_pe_bias *b);

/* ---- position remapping methods: attn_remap.h (their registry) -------- */
#include "attn/attn_remap.h"

/* ---- CPU reference (attn_ref.c, double) ------------------------------- */

/* A problem as the reference sees it: float tensors (fp16 inputs are
 * converted exactly to float first). */
typedef struct attn_ref_problem {
    uint64_t tokens;
    uint32_t heads, kv_heads, head_dim;
    int causal;
    uint32_t window, n_sink, chunk_size; /* as attn_desc (0: none) */
    int temp;                        /* as attn_desc */
    double temp_a, temp_b;
    uint32_t remap_window;           /* as attn_desc: q_b/k_b are the remapped definition */
    uint32_t remap_chunk;            /* as attn_desc: q/k, q_b/k_b, q_c/k_b by chunk distance */
    int remap_edge;                  /* as attn_desc: the key at |pos_i - pos_j| = remap_window
                                        weighs e^(q.k) + e^(q_b.k_b) (both scaled) */
    const float *q_c;                /* remap_chunk: [tokens][heads][head_dim] */
    double scale, scale_b;
    int paired, bias_a, bias_b;      /* bias_a/b: apply the bias to definition a/b */
    const float *q, *k, *v, *q_b, *k_b; /* shapes as attn_inputs; v may be NULL */
    const uint32_t *pos;             /* [tokens] */
    const attn_bias *bias;           /* may be NULL */
    const float *sinks;              /* [heads] learned sink logits or NULL (definition a;
                                        not paired) */
    /* Sampled query rows: q, q_b, q_c hold n_q_rows rows, row r being token
     * q_rows[r] (ascending); a query token i is looked up there. NULL: q
     * holds every token. */
    const uint32_t *q_rows;
    uint64_t n_q_rows;
} attn_ref_problem;

/* Statistics of one query row, from the definitions. */
typedef struct attn_ref_row {
    double lse, max, entropy, argmax_p, target_p, kl, lse_b;
    uint64_t argmax;                 /* first maximal key */
    uint64_t n_keys;
    double min_logit;                /* smallest valid logit */
    double max_abs_dot, max_abs_bias;
    double max_bias_err;             /* max attn_bias.bound over the row's keys (0: none) */
} attn_ref_row;

/* 1 when key j is visible to query i under p's causal flag and mask
 * (attn_desc.window/n_sink/chunk_size), from the definition. */
int attn_ref_visible(const attn_ref_problem *p, uint64_t i, uint64_t j);

/* The temperature tau_i of query token i under p (1 without), from the
 * definitions in attn_desc, in double. */
double attn_ref_temperature(const attn_ref_problem *p, uint64_t i);

/* Which definition (i, j) takes: 0 the first (q/k), 1 the second
 * (q_b/k_b: remap_window set and |pos_i - pos_j| >= remap_window, or
 * remap_chunk set and chunk distance 1), 2 the third (q_c/k_b: chunk
 * distance >= 2). */
int attn_ref_remapped(const attn_ref_problem *p, uint64_t i, uint64_t j);

/* logit_a (which = 0) or logit_b (which = 1) of (h, i, j) in double; -inf
 * when j is masked. With remap_window, logit_a takes q_b/k_b where
 * attn_ref_remapped and logit_b is logit_a's exact definition (q/k). With
 * remap_edge, logit_a of the key at |pos_i - pos_j| = remap_window is
 * log(e^x + e^y) of its two definitions' logits x (q/k) and y (q_b/k_b). */
double attn_ref_logit(const attn_ref_problem *p, int which, uint32_t h, uint64_t i, uint64_t j);

/* Statistics of row (i, h). target: key for target_p (UINT64_MAX: none).
 * buckets: [n_buckets] or NULL; out: [head_dim] or NULL (needs v);
 * out_scale: [head_dim] sum_j p_j |v_jd| or NULL. Needs O(tokens) doubles of
 * scratch: logits [2][tokens] (caller-owned). */
void attn_ref_row_stats(const attn_ref_problem *p, uint32_t h, uint64_t i, uint64_t target,
                        uint32_t n_buckets, double *scratch, attn_ref_row *r, double *buckets,
                        double *out, double *out_scale);

/* IEEE float -> half (round to nearest even); half -> float is
 * rl_half_to_float (core/rl_util.h). */
uint16_t attn_f32_to_f16(float f);

#endif
