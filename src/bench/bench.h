/* bench.h — `ropelab bench` measurements (prefix bench_).
 *
 * Speed is reported as ratios measured in one run on one device: a kernel's
 * bandwidth against a plain copy kernel moving the same bytes. Every kernel
 * is verified against its CPU reference before it is timed; GPU time comes
 * from timestamp queries (masked to timestampValidBits, scaled by
 * timestampPeriod in double), median of several runs after warm-up. */
#ifndef BENCH_H
#define BENCH_H

#include <stdint.h>

#include "core/rl_status.h"
#include "verify/vf.h"
#include "vk/rlvk.h"

/* Most timed runs of one measurement (bench rope times its rounds of one
 * rope and one copy launch in command buffers of 31 rounds each). */
#define BENCH_MAX_REPS (RLVK_MAX_TIMESTAMPS - 1)

/* One measurement's GPU times: every run in the order it ran, and their
 * median, min and max (all in ms). */
typedef struct bench_times {
    uint32_t n;                    /* runs, at most BENCH_MAX_REPS */
    double ms[BENCH_MAX_REPS];     /* [n], run order */
    double median, min, max;
} bench_times;

/* Copies n (at most BENCH_MAX_REPS; more are ignored) times in ms into t and
 * computes their median, min and max; ms is not modified. n = 0 gives zeros. */
void bench_times_set(bench_times *t, const double *ms, uint32_t n);

typedef struct bench_rope_opts {
    uint64_t tokens;      /* 0: 65536 */
    uint32_t heads;       /* 0: 1 */
    uint32_t head_dim;    /* 0: 128 */
    uint32_t rotary_dim;  /* 0: head_dim */
    int layout;           /* RL_ROPE_LAYOUT_* */
    int precision;        /* RL_ROPE_PREC_* (0: fp32) */
    uint32_t reps;        /* timed runs, 0: 25 (max BENCH_MAX_REPS) */
    uint32_t warmup;      /* 0: 3 */
} bench_rope_opts;

typedef struct bench_rope_result {
    bench_rope_opts opts;          /* resolved */
    uint64_t bytes;                /* bytes moved per run (read + write of Q) */
    bench_times rope, copy;        /* GPU time per run of each kernel (same reps, warm-up),
                                      interleaved: round i is one rope and one copy launch */
    bench_times ratio_rounds;      /* per round: copy ms / rope ms (= the round's bandwidth
                                      ratio); its median/min/max are the ratio's spread */
    double rope_gbs, copy_gbs;     /* bytes / median time */
    double ratio;                  /* rope_gbs / copy_gbs */
    /* Bytes the mode actually moves: bytes (Q read and written) plus its
     * per-token table (table mode: the (cos, sin) pairs of every token, read
     * once each); ratio_read = (read_bytes / rope time) / copy_gbs, the ratio
     * against a copy of those bytes at the copy's measured bandwidth. */
    uint64_t read_bytes;
    double ratio_read;
    vf_stats verify;               /* RoPE output vs the CPU reference (guarded) */
    uint32_t copy_vec4_per_inv;    /* the copy yardstick's vec4s per invocation */
    int rope_texel, copy_texel;    /* 1: the kernel / the copy read x as texels (else the
                                      storage buffer) */
} bench_rope_result;

/* Verifies, then times the RoPE kernel and the copy kernel on dev.
 * RL_ERR_MISMATCH if verification fails (nothing is timed then);
 * RL_ERR_UNSUPPORTED without timestamp queries. */
rl_status bench_rope(rlvk_device *dev, const bench_rope_opts *opts, bench_rope_result *res,
                     rl_error *err);

/* The copy kernel (y[i] = x[i] over n_vec4 vec4s): the bandwidth yardstick.
 * Each invocation copies vec4_per_inv consecutive vec4s. vec4_per_inv 0
 * picks the yardstick's: on a CPU device BENCH_COPY_VEC4 = one 64-byte line,
 * which on lavapipe moved ~1.4x the bytes per second of one vec4 per
 * invocation (docs/rope.md, "Speed of the three modes"); elsewhere 1, so
 * that neighbouring invocations touch neighbouring vec4s (the coalesced
 * pattern; not measured on a GPU here). On a CPU device with rgba32f
 * texel buffers a second pipeline reads x as texels, the way the RoPE and
 * attention kernels read there (~1.3x the storage-buffer copy's bytes per
 * second on lavapipe); bench_copy_record takes it whenever n_vec4 fits
 * one view (rlvk_texel_fits), and says which in *texel. */
#define BENCH_COPY_VEC4 4u
typedef struct bench_copy {
    rlvk_pipeline pipe;          /* storage-buffer reads */
    rlvk_pipeline pipe_texel;    /* texel reads (CPU devices; pipeline 0 otherwise) */
    int has_texel;
    uint32_t vec4_per_inv;
} bench_copy;
rl_status bench_copy_create(rlvk_device *dev, uint32_t vec4_per_inv, bench_copy *c, rl_error *err);
rl_status bench_copy_record(rlvk_cmd *cmd, const bench_copy *c, const rlvk_buffer *x,
                            const rlvk_buffer *y, uint32_t n_vec4, rl_error *err);
/* 1 when bench_copy_record reads n_vec4 vec4s as texels. */
int bench_copy_texel(const rlvk_device *dev, const bench_copy *c, uint32_t n_vec4);
void bench_copy_destroy(rlvk_device *dev, bench_copy *c);

/* `ropelab bench attention`: streaming attention statistics (QK^T and the
 * online softmax; O as well with with_output). */
typedef struct bench_attn_opts {
    uint64_t tokens;      /* 0: 16384 */
    uint32_t heads;       /* 0: 1 */
    uint32_t head_dim;    /* 0: 128 */
    int causal, fp16;
    int with_output;      /* also O = softmax(QK^T) V (random V) */
    uint32_t reps;        /* timed runs, 0: 3 (max BENCH_MAX_REPS) */
    int single;           /* 1: time the verified run itself, no extra runs (long inputs) */
    uint32_t window, n_sink, chunk_size; /* mask (attn_desc); any set: the unmasked run is
                                            timed too */
    int path;             /* attn_desc.path: 0 the device's default path */
    /* Sampled query rows (attn_desc.query_rows): 0 the full pass; S >= 1:
     * S rows of the plan (rl_rows_plan_make(sampling, tokens, S, seed 1)),
     * each against every key it sees, so the work is S x keys x head_dim. */
    uint32_t query_rows;
    int sampling;         /* rl_rows_scheme (0: uniform) */
} bench_attn_opts;

#define BENCH_FMA_WIDTHS 4
/* The names the yardsticks' kernels go by in cached throughput files
 * (run_estimate.c): change them with the kernels, so a value measured by
 * another yardstick is measured again. */
#define BENCH_FMA_YARDSTICK "fma_peak rings 3/4/6/8"
#define BENCH_COPY_YARDSTICK "copy 64-byte lines, texel reads, on CPU devices"

typedef struct bench_attn_result {
    bench_attn_opts opts;       /* resolved */
    bench_times gpu;            /* GPU time of one full pass (all submissions) per timed run;
                                   --single: the verified run alone */
    double wall_ms;             /* host wall time of the last timed run */
    double flops;               /* 2 pairs d heads (x2 with O): 2 N^2 d heads for the
                                   full bidirectional pass */
    uint32_t query_rows;        /* rows computed: tokens (full pass) or the plan's S */
    double pairs;               /* visible (query row, key) pairs per head */
    double ns_per_key;          /* median GPU time / tokens, in ns (flat when the cost
                                   grows as N for fixed query rows) */
    double ns_per_pair;         /* median GPU time / (pairs x heads), in ns */
    double gflops;              /* flops / median gpu time */
    double fma_width_gflops[BENCH_FMA_WIDTHS]; /* each width of fma_peak.comp (3, 4, 6, 8 running
                                   vec4 per invocation), median of 3 before the passes */
    uint32_t fma_width_groups[BENCH_FMA_WIDTHS]; /* the groups each width ran with: about
                                   50 ms of work, within [max / 4, max] (bench_attn.c) */
    uint32_t fma_width;         /* the fastest: the device's peak, timed next to each pass */
    bench_times fma;            /* that width on the same device, one dispatch right
                                   after each timed attention pass (one untimed warm-up first) */
    uint32_t fma_groups, fma_local;  /* its dispatch: groups x local invocations */
    double fma_flops;           /* flops of one fma_peak dispatch */
    double fma_gflops;          /* fma_flops / median fma time */
    bench_times ratios;         /* per timed pass: its GFLOP/s over the FMA peak of the
                                   fma_peak dispatch run right after it (.ms holds ratios) */
    double ratio;               /* ratios.median */
    int path;                   /* attn_path_kind the kernel ran on */
    uint32_t split;             /* its invocations per query row */
    uint32_t submissions, chunk_keys;
    vf_stats verify;            /* the engine's verdict before timing */
    char verify_worst[32];      /* statistic with the worst error/bound */
    /* With a mask: */
    double excluded;            /* f: fraction of the unmasked (query, key) pairs the mask excludes */
    double tiles_skipped;       /* fraction of (query block, key chunk) tiles not dispatched */
    double full_gpu_ms;         /* median GPU time of the same run unmasked */
    double time_ratio;          /* gpu_ms / full_gpu_ms */
    double saved_over_f;        /* (1 - time_ratio) / f (the target is >= 0.8) */
} bench_attn_result;

/* Verifies, then times the attention kernel and the FMA yardstick.
 * RL_ERR_MISMATCH if verification fails; RL_ERR_UNSUPPORTED without
 * timestamps or (fp16) 16-bit storage; RL_ERR_LIMIT beyond the device. */
rl_status bench_attention(rlvk_device *dev, const bench_attn_opts *opts, bench_attn_result *res,
                          rl_error *err);

/* The yardsticks on their own (--dry-run's time estimates): the FMA peak
 * in GFLOP/s (fma_peak.comp, median of reps after a warm-up) and the copy
 * kernel's bandwidth in GB/s (read + write of a 32 MiB buffer, median of
 * reps after a warm-up). RL_ERR_UNSUPPORTED without timestamps. */
rl_status bench_fma_peak(rlvk_device *dev, uint32_t reps, double *gflops, rl_error *err);
/* Running vec4 values per invocation of FMA width w (0 .. BENCH_FMA_WIDTHS-1). */
uint32_t bench_fma_chains(uint32_t width);
rl_status bench_copy_gbs(rlvk_device *dev, uint32_t reps, double *gbs, rl_error *err);

/* Median of n doubles (sorts v in place). */
double bench_median(double *v, uint32_t n);

/* Number of FMA peak runs timed per bench_attention (after one warm-up). */
#define BENCH_FMA_REPS 5

#endif
