/* rope.h — rotary position embedding (prefix rope_).
 *
 * Three parts, kept apart on purpose:
 *   frequencies (rope_freq.c): parameters -> inv_freq[] and attention factor,
 *       in double. The ONE function shared by the CPU reference and the GPU
 *       host side (conventions: the formula exists once).
 *   CPU reference (rope_ref.c): the rotation in double precision, plain loops
 *       written from the RoFormer formula; never touches Vulkan.
 *   GPU host side (rope_gpu.c): buffers, pipeline and dispatch of
 *       shaders/rope.comp.
 *
 * Tensors are [tokens][heads][head_dim], row-major, float32 on the device.
 * Positions are one unsigned integer per token (any order, any values). */
#ifndef ROPE_H
#define ROPE_H

#include <stddef.h>
#include <stdint.h>

#include "core/rl_status.h"
#include "rl_push.h" /* RL_ROPE_LAYOUT_*, RL_ROPE_PREC_* */
#include "vk/rlvk.h"

#define ROPE_MAX_HEAD_DIM 1024
#define ROPE_MAX_PAIRS (ROPE_MAX_HEAD_DIM / 2)
#define ROPE_DEFAULT_THETA 10000.0

/* A RoPE configuration. Zero fields mean "default" (see rope_desc_resolve). */
typedef struct rope_desc {
    uint32_t head_dim;     /* required, 2..ROPE_MAX_HEAD_DIM */
    uint32_t rotary_dim;   /* 0: head_dim; else even and <= head_dim */
    double theta;          /* base (HF rope_theta); 0: 10000 */
    int layout;            /* RL_ROPE_LAYOUT_HALF (default) or _INTERLEAVED */
} rope_desc;

/* Effective rotation: what the kernel and the reference both consume. */
typedef struct rope_freqs {
    uint32_t head_dim, rotary_dim, n_pairs;  /* n_pairs = rotary_dim / 2 */
    int layout;
    double theta;                            /* effective base */
    double attention_factor;                 /* multiplies cos and sin; 1 here */
    double inv_freq[ROPE_MAX_PAIRS];         /* [n_pairs], theta_j, pair order */
} rope_freqs;

/* Validates d and fills defaults into *out. Errors name the key:
 * "rotary_dim 5 must be even", "rotary_dim 192 exceeds head_dim 128". */
rl_status rope_desc_resolve(const rope_desc *d, rope_desc *out, rl_error *err);

/* theta_j = base^(-2j/rotary_dim), j = 0..rotary_dim/2-1 (Su et al. 2021). */
rl_status rope_freqs_compute(const rope_desc *d, rope_freqs *f, rl_error *err);

/* ---- CPU reference (double) ------------------------------------------- */

/* y = R(pos) x for every token and head, in double:
 *   half:        (x_j, x_{j+r/2}) rotated by pos*theta_j
 *   interleaved: (x_{2j}, x_{2j+1}) rotated by pos*theta_j
 * dimensions >= rotary_dim copied. x: [tokens][heads][head_dim] float32,
 * pos: [tokens], y: [tokens][heads][head_dim] double (caller-owned). */
void rope_ref_apply(const rope_freqs *f, const float *x, const uint32_t *pos, size_t tokens,
                    uint32_t heads, double *y);

/* The same in double input (used by property tests). */
void rope_ref_apply_d(const rope_freqs *f, const double *x, const uint32_t *pos, size_t tokens,
                      uint32_t heads, double *y);

/* Index of the partner dimension of dimension i < rotary_dim, and whether i
 * is the first ("a") member of its pair; pair index in *pair. */
uint32_t rope_partner(const rope_freqs *f, uint32_t i, int *is_first, uint32_t *pair);

/* ---- GPU host side ------------------------------------------------------ */

/* Pipelines specialised per shape (layout, head_dim, rotary_dim, heads) and
 * variant (vec4 when head_dim % 4 == 0 and rotary_dim % 8 == 0), created on
 * first use and kept until rope_kernel_destroy. */
#define ROPE_KERNEL_MAX_PIPES 32
typedef struct rope_kernel_pipe {
    int layout, vec4;
    uint32_t head_dim, rotary_dim, heads;
    rlvk_pipeline pipe;
} rope_kernel_pipe;

typedef struct rope_kernel {
    rlvk_device *dev;
    uint32_t n_pipes;
    rope_kernel_pipe pipes[ROPE_KERNEL_MAX_PIPES];
} rope_kernel;

rl_status rope_kernel_create(rlvk_device *dev, rope_kernel *k, rl_error *err);
void rope_kernel_destroy(rlvk_device *dev, rope_kernel *k);

/* Device-resident operands of one RoPE launch. */
typedef struct rope_gpu_io {
    const rlvk_buffer *x;    /* [tokens][heads][head_dim] f32 */
    const rlvk_buffer *y;    /* same shape, may equal x (in place) */
    const rlvk_buffer *pos;  /* [tokens] u32 */
    const rlvk_buffer *freq; /* [n_pairs] f32, from rope_gpu_upload_freqs */
    uint64_t tokens;
    uint32_t heads;
} rope_gpu_io;

/* Refuses shapes beyond the device's limits (message names the limit). */
rl_status rope_gpu_check_shape(const rlvk_device *dev, const rope_freqs *f, uint64_t tokens,
                               uint32_t heads, rl_error *err);
/* Creates and fills the fp32 inv_freq buffer for f (padded to a vec4). */
rl_status rope_gpu_upload_freqs(rlvk_device *dev, const rope_freqs *f, rlvk_buffer *buf,
                                rl_error *err);
/* Records one launch into cmd (one descriptor set). */
rl_status rope_gpu_record(rlvk_cmd *cmd, rope_kernel *k, const rope_freqs *f,
                          const rope_gpu_io *io, rl_error *err);

/* Convenience: upload x and pos, run, download y (all host arrays of the
 * shapes above). *gpu_ns receives the kernel's GPU time, or -1 without
 * timestamps. y gets `guard` extra floats after the tensor pre-filled with a
 * sentinel; *guard_ok is 0 if the kernel wrote into them. */
rl_status rope_gpu_apply(rlvk_device *dev, rope_kernel *k, const rope_freqs *f,
                         const float *x, const uint32_t *pos, uint64_t tokens, uint32_t heads,
                         float *y, double *gpu_ns, int *guard_ok, rl_error *err);

#endif
