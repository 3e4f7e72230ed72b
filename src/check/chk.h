/* chk.h — the conformance harness behind `ropelab check` (prefix chk_).
 *
 * Case tables (every registry entry x edge shapes) and their runner; each
 * case's device output is judged by the verification layer (verify/vf.h:
 * non-finite rules, per-element bounds, NMSE gate, guard words). Each
 * kernel contributes a case table; "unsupported on this device" is a skip,
 * never a pass. */
#ifndef CHK_H
#define CHK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/rl_status.h"
#include "verify/vf.h"
#include "vk/rlvk.h"

/* One reported line of `ropelab check`. */
typedef struct chk_row {
    char kernel[48];
    char shape[96];
    char tolerance[96];         /* how the bound is formed, in words */
    vf_stats stats;             /* the verdict (guard folded in: vf_set_guard) */
    int skipped;                /* unsupported on this device */
    int guard_ok;               /* the guard words after the output are untouched */
    int listed;                 /* --list: named only, never run (no verdict) */
    double gpu_ms;
} chk_row;

/* Collected rows for one device. */
typedef struct chk_report {
    char device[256];
    char driver[520];
    uint32_t device_index;
    chk_row *rows;
    size_t n_rows, cap;
    const char *kernel_pattern; /* rows kept: kernel matches this fnmatch glob; NULL: all */
    const char *shape_pattern;  /* and the shape matches this one; NULL: all */
    unsigned validation_messages;
    int failed;                 /* any row failed, or an error occurred */
    char error[1024];           /* non-empty if the device could not run */
    char notes[1024];           /* lines a case table adds (chk_report_note), each ending in \n,
                                   e.g. which kernel path the device skipped and why */
} chk_report;

/* Appends one line to r->notes (printed under the device's rows); a line
 * that does not fit is cut. */
void chk_report_note(chk_report *r, const char *line);

/* Appends a copy of row unless r->kernel_pattern (r->shape_pattern) is set
 * and row->kernel (row->shape) does not match it (dropped, RL_OK). A
 * failed, non-skipped, non-listed row marks the report failed. */
rl_status chk_report_add(chk_report *r, const chk_row *row, rl_error *err);
void chk_report_free(chk_report *r);

/* Options of one check run. */
typedef struct chk_options {
    int quick;                  /* fewer shapes (tests) */
    uint32_t max_pos_log2;      /* largest position 2^k; 0: 20 */
    uint64_t seed;              /* 0: 1 */
    const char *kernel_pattern; /* run only rows whose kernel matches (fnmatch); NULL: all */
    const char *shape_pattern;  /* ... and whose shape matches (fnmatch); NULL: all */
    int list_only;              /* name the rows that would run, run nothing on the device */
} chk_options;

/* 1 if a row named `kernel` is selected by opt->kernel_pattern (fnmatch glob,
 * no flags; NULL or "" selects everything). */
int chk_kernel_selected(const chk_options *opt, const char *kernel);

/* Called by a case table once row->kernel and row->shape are named, before
 * any device work. *run = 1: run the case. *run = 0: skip it — the kernel
 * or the shape is not selected, or opt->list_only (then row is recorded as
 * listed). Returns RL_ERR_NOMEM only if recording fails. */
rl_status chk_case_begin(const chk_options *opt, chk_report *report, const chk_row *row,
                         int *run, rl_error *err);

/* Runs every registered kernel's case table on an open device. Returns
 * RL_OK when the cases could be run (passes and failures are in report). */
rl_status chk_run_device(rlvk_device *dev, const chk_options *opt, chk_report *report,
                         rl_error *err);

/* The RoPE case table (used by chk_run_device; exposed for tests). */
rl_status chk_rope_cases(rlvk_device *dev, const chk_options *opt, chk_report *report,
                         rl_error *err);

/* A RoPE case's inputs from stream `stream` of opt's seed: x [n] ~ N(0, 1);
 * pos [tokens] consecutive ending at 2^max_pos_log2, or uniform in
 * [0, 2^max_pos_log2] with both ends included (random_positions). */
void chk_rope_inputs(const chk_options *opt, const char *stream, float *x, size_t n,
                     uint32_t *pos, uint32_t tokens, int random_positions);

/* The framework emulation modes' case table (chk_rope_emu.c): per mode,
 * dtype and shape the device angles (bit-exact), the output against the CPU
 * emulation and against the double reference. */
rl_status chk_rope_emu_cases(rlvk_device *dev, const chk_options *opt, chk_report *report,
                             rl_error *err);

/* The encoding registry's cases (chk_pe.c): every encoding's vector
 * transform and every logit bias (GLSL rl_bias over a grid of (h, i, j)). */
rl_status chk_pe_cases(rlvk_device *dev, const chk_options *opt, chk_report *report,
                       rl_error *err);

/* One point of a bias grid, as shaders/bias_eval.comp reads it. */
typedef struct chk_bias_item {
    uint32_t h, qtok, ktok;
    int32_t qpos, kpos, pad[3];
} chk_bias_item;
/* Evaluates the GLSL rl_bias of b's variant (any registry bias) at n points on
 * the device: out [n] f32 (guarded, vf_guarded_*); *guard_ok = 0 if it
 * wrote past out. */
struct pe_bias_gpu;
rl_status chk_pe_bias_eval(rlvk_device *dev, const struct pe_bias_gpu *b,
                           const chk_bias_item *items, uint32_t n, float *out, int *guard_ok,
                           rl_error *err);


/* The attention engine's case table (chk_attn.c). */
rl_status chk_attn_cases(rlvk_device *dev, const chk_options *opt, chk_report *report,
                         rl_error *err);
/* One random attention problem (q, k, v ~ N(0,1), q_b/k_b = q/k + 0.1 N(0,1),
 * consecutive positions, random targets) run and verified into row;
 * unsupported (fp16 without 16-bit storage) is a skip. */
typedef struct chk_attn_case {
    uint32_t tokens, heads, kv_heads, head_dim;
    int causal, fp16;
    const char *bias;         /* registry encoding of the logit bias ("alibi", "t5", "xl"); NULL: none */
    uint32_t flags;           /* ATTN_* statistics */
    uint32_t block_keys, chunk_blocks; /* attn_desc tuning; 0: automatic */
    uint32_t window, n_sink, chunk_size; /* attn_desc mask; 0: none */
    int sinks;                /* 1: learned sinks, head h's logit 1.5 - 0.75 h (attn_inputs.sinks) */
    int temp;                 /* attn_desc.temp with fixed parameters (chk_attn.c); 0: none */
    int path;                 /* attn_desc.path (attn_path_kind); 0: the device's default */
} chk_attn_case;
struct attn_engine;
rl_status chk_attn_run_case(rlvk_device *dev, struct attn_engine *e, const chk_attn_case *c,
                            uint64_t seed, chk_row *row, rl_error *err);
/* Settings beyond chk_attn_case (zero: none). */
typedef struct chk_attn_extra {
    uint32_t remap_window;    /* attn_desc.remap_window: q_b/k_b stand for the remapped definition */
    uint32_t pos0;            /* first position (0: 5) */
    uint32_t remap_chunk;     /* attn_desc.remap_chunk (DCA): q_c = q + 0.2 N(0,1) the third
                                 definition's queries */
    int remap_edge;           /* attn_desc.remap_edge: the key at distance remap_window under
                                 both definitions */
} chk_attn_extra;
/* chk_attn_run_case with x (NULL: none). */
rl_status chk_attn_run_case_ex(rlvk_device *dev, struct attn_engine *e, const chk_attn_case *c,
                               const chk_attn_extra *x, uint64_t seed, chk_row *row,
                               rl_error *err);

#endif
