/* RoPE GPU host side: pipelines, operand checks, launch recording. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"
#include "pe/rope.h"
#include "pe/rope_sleef.h"
#include "verify/vf.h"
#include "rl_rempitab.h"
#include "rope.spv.h"
#include "rope_vec4.spv.h"

_Static_assert(sizeof(struct rl_rope_push) == 16, "rl_rope_push layout");
_Static_assert(offsetof(struct rl_rope_push, group_base) == 0, "group_base first");
_Static_assert(offsetof(struct rl_rope_push, attn_factor) == 8, "rl_rope_push layout");

rl_status rope_kernel_create(rlvk_device *dev, rope_kernel *k, rl_error *err)
{
    (void)err;
    memset(k, 0, sizeof *k);
    k->dev = dev;
    return RL_OK;
}

void rope_kernel_destroy(rlvk_device *dev, rope_kernel *k)
{
    for (uint32_t i = 0; i < k->n_pipes; i++)
        rlvk_pipeline_destroy(dev, &k->pipes[i].pipe);
    k->n_pipes = 0;
}

/* A rotation of its own per token (cache_consistent): binding 3 holds
 * [tokens][n_pairs] inv_freq + [tokens] attention factors. */
static int per_token(const rope_freqs *f) { return rope_freqs_per_position(f); }

static int use_vec4(const rope_freqs *f)
{
    /* The emulation modes run the scalar variant only. */
    return f->head_dim % 4 == 0 && f->rotary_dim % 8 == 0 && !rope_prec_is_emu(f->precision);
}

/* Rows one invocation of rope.comp covers (its HEAD_GROUP x TOKEN_GROUP):
 * the rotation of a (token, pair) is computed once for all heads of the
 * group, and the per-pair constants are read once for the whole block. The
 * heads: the largest divisor of heads up to ROPE_MAX_HEAD_GROUP; with every
 * head in one group, tokens until the block has ROPE_MIN_BLOCK_ROWS rows
 * (ROPE_MIN_BLOCK_ROWS_CPU on a CPU device). Measured on lavapipe against
 * the copy yardstick (docs/performance.md "Copy yardstick", 4-quad chunks): 4096 x 32 x 128 with
 * 32 heads per invocation 0.87-1.04 vs 16 heads 0.86-0.99 vs 8 0.75-0.93;
 * 65536 x 1 x 128 fp32 (half) 1 / 4 / 8 / 16 / 32 / 64 tokens 0.51 / 0.68 /
 * 0.75-0.82 / 0.82-0.84 / 0.80-0.86 / 0.87-0.90, precise 8 / 16 / 32 / 64
 * tokens 0.71-0.72 / 0.73-0.74 / 0.65-0.82 / 0.57-0.79:
 * per-invocation costs (index arithmetic, the per-pair constants' loads)
 * are shared by more rows. A GPU keeps 8 rows, which leaves it more
 * invocations. The emulation modes keep one row per invocation (their angle
 * dump and per-head arithmetic are written for it). */
#define ROPE_MAX_HEAD_GROUP 32u
#define ROPE_MIN_BLOCK_ROWS 8u
#define ROPE_MIN_BLOCK_ROWS_CPU 32u
static int cpu_device(const rlvk_device *dev)
{
    return dev->info.vk_type == VK_PHYSICAL_DEVICE_TYPE_CPU;
}

static void row_groups(const rlvk_device *dev, const rope_freqs *f, uint32_t heads,
                       uint32_t *head_group, uint32_t *token_group)
{
    uint32_t min_rows = cpu_device(dev) ? ROPE_MIN_BLOCK_ROWS_CPU : ROPE_MIN_BLOCK_ROWS;
    *head_group = 1;
    *token_group = 1;
    if (rope_prec_is_emu(f->precision))
        return;
    for (uint32_t g = ROPE_MAX_HEAD_GROUP < heads ? ROPE_MAX_HEAD_GROUP : heads; g > 1; g--)
        if (heads % g == 0) {
            *head_group = g;
            break;
        }
    if (*head_group == heads && heads < min_rows)
        *token_group = min_rows / heads;
}

/* vec4 variant: the consecutive items one invocation covers (rope.comp
 * CHUNK, PCHUNK). On a CPU device (lavapipe) 4 quads of pairs (half layout:
 * 4 consecutive vec4s, one 64-byte line, from each half; interleaved: 8
 * consecutive vec4s) and 4 pass-through vec4s, loaded and then stored as the
 * copy yardstick does (bench.h BENCH_COPY_VEC4); measured 0.78-0.93 of the
 * copy vs 0.69-0.75 with one quad (65536 x 1 x 128 fp32), 0.87-1.04 vs
 * 0.65-0.82 (4096 x 32 x 128). Interleaved with 2 quads (64 bytes) in
 * 16-token blocks: 0.66-0.78 vs 0.84-0.85 with 4. A GPU keeps one item per
 * invocation, neighbouring invocations on neighbouring vec4s. The largest
 * divisor of the row's item count up to that. */
static uint32_t divisor_upto(uint32_t n, uint32_t want)
{
    uint32_t c = want;
    while (c > 1 && n % c != 0)
        c--;
    return c ? c : 1;
}

static void vec4_chunks(const rlvk_device *dev, const rope_freqs *f, uint32_t *chunk,
                        uint32_t *pchunk)
{
    uint32_t want = cpu_device(dev) ? 4u : 1u, pass4 = (f->head_dim - f->rotary_dim) / 4;
    *chunk = divisor_upto(f->rotary_dim / 8, want);
    *pchunk = pass4 ? divisor_upto(pass4, want) : 1u;
}

/* The vec4 variant reads x through a texel view on a CPU device: gallivm
 * turns a storage-buffer read at a per-lane address into a loop over the
 * lanes, a texel fetch into a branch-free gather; with the copy yardstick
 * reading the same way, both ran ~1.3x faster on lavapipe (docs/rope.md
 * "Texel reads"). Only while the view holds the whole tensor; GPUs read
 * the storage buffer (coalesced; texels not measured there). */
static int use_texel(const rope_kernel *k, const rope_freqs *f, uint64_t rows)
{
    return use_vec4(f) && !k->test_storage_reads && rlvk_texel_reads_preferred(&k->dev->info) &&
           rlvk_texel_fits(&k->dev->info, rows * (f->head_dim / 4));
}

int rope_gpu_texel_reads(const rope_kernel *k, const rope_freqs *f, uint64_t rows)
{
    return use_texel(k, f, rows);
}

/* The pipeline for f's shape, created on first use. */
static rl_status get_pipe(rope_kernel *k, const rope_freqs *f, uint32_t heads, uint64_t rows,
                          uint32_t emu_flags, int mrope, const rlvk_pipeline **out, rl_error *err)
{
    int vec4 = use_vec4(f), texel = use_texel(k, f, rows);
    for (uint32_t i = 0; i < k->n_pipes; i++) {
        const rope_kernel_pipe *p = &k->pipes[i];
        if (p->layout == f->layout && p->vec4 == vec4 && p->precision == f->precision && p->head_dim == f->head_dim &&
            p->rotary_dim == f->rotary_dim && p->heads == heads && p->dtype == f->dtype &&
            p->emu_flags == emu_flags && p->per_token == per_token(f) && p->mrope == mrope &&
            p->texel == texel &&
            (!mrope || !memcmp(p->mrope_section, f->mrope_section, sizeof p->mrope_section))) {
            *out = &p->pipe;
            return RL_OK;
        }
    }
    if (k->n_pipes == ROPE_KERNEL_MAX_PIPES)
        return rl_fail(err, RL_ERR_LIMIT, "rope: more than %d distinct shapes in one kernel object",
                       ROPE_KERNEL_MAX_PIPES);
    rope_kernel_pipe *p = &k->pipes[k->n_pipes];
    uint32_t hg, tg, chunk = 1, pchunk = 1;
    row_groups(k->dev, f, heads, &hg, &tg);
    if (vec4)
        vec4_chunks(k->dev, f, &chunk, &pchunk);
    /* mRoPE's sections are specialization constants: the stream rule is
     * the shader's own (rope_mrope_stream), checked against rope_mrope.c. */
    uint32_t spec[15] = {(uint32_t)f->layout, f->head_dim, f->rotary_dim, heads,
                         (uint32_t)f->precision, (uint32_t)f->dtype, emu_flags,
                         (uint32_t)per_token(f), hg, tg, (uint32_t)mrope,
                         mrope ? f->mrope_section[0] : 0u, mrope ? f->mrope_section[1] : 0u,
                         mrope ? f->mrope_section[2] : 0u,
                         chunk | pchunk << 8 | (uint32_t)texel << 16};
    char name[96];
    snprintf(name, sizeof name, "rope_%s%s%s_%s_%s_d%u_r%u_h%u%s%s",
             f->layout == RL_ROPE_LAYOUT_HALF ? "half" : "inter", vec4 ? "_vec4" : "",
             texel ? "_tx" : "",
             rope_precision_name(f->precision), rope_dtype_name(f->dtype), f->head_dim,
             f->rotary_dim, heads, per_token(f) ? "_pt" : "",
             mrope == ROPE_MROPE_SECTIONS ? "_mrope" : mrope ? "_imrope" : "");
    rlvk_pipeline_desc pd = {
        .name = name,
        .spirv = vec4 ? rl_spv_rope_vec4 : rl_spv_rope,
        .spirv_bytes = vec4 ? sizeof rl_spv_rope_vec4 : sizeof rl_spv_rope,
        .n_bindings = 7,
        .push_bytes = sizeof(struct rl_rope_push),
        .local_size_x = 64,
        .n_spec = 15,
        .spec = spec,
    };
    /* rope_vec4 declares x_t and cs_t (the table's texels; read only when
     * texel, in table mode): the table holds 2 texels per token and quad,
     * at most x's head_dim / 4 per row, so it fits a view whenever x does */
    static const rlvk_texel_binding vec4_texels[2] = {{16, 0, VK_FORMAT_R32G32B32A32_SFLOAT},
                                                      {17, 4, VK_FORMAT_R32G32B32A32_SFLOAT}};
    if (vec4) {
        pd.n_texel = 2;
        pd.texel = vec4_texels;
    }
    rl_status st = rlvk_pipeline_create(k->dev, &pd, &p->pipe, err);
    if (st)
        return st;
    p->layout = f->layout;
    p->vec4 = vec4;
    p->texel = texel;
    p->precision = f->precision;
    p->dtype = f->dtype;
    p->emu_flags = emu_flags;
    p->per_token = per_token(f);
    p->mrope = mrope;
    memcpy(p->mrope_section, f->mrope_section, sizeof p->mrope_section);
    p->head_dim = f->head_dim;
    p->rotary_dim = f->rotary_dim;
    p->heads = heads;
    k->n_pipes++;
    *out = &p->pipe;
    return RL_OK;
}

rl_status rope_gpu_check_shape(const rlvk_device *dev, const rope_freqs *f, uint64_t tokens,
                               uint32_t heads, rl_error *err)
{
    if (tokens == 0)
        return rl_fail(err, RL_ERR_ARG, "tokens must be at least 1 (got 0)");
    if (heads == 0)
        return rl_fail(err, RL_ERR_ARG, "heads must be at least 1 (got 0)");
    uint64_t rows = tokens * heads;
    uint64_t elems = rows * f->head_dim;
    if (rows > UINT32_MAX || elems > UINT32_MAX)
        return rl_fail(err, RL_ERR_LIMIT,
                       "%llu tokens x %u heads x %u dims exceeds the kernel's 32-bit element index",
                       (unsigned long long)tokens, heads, f->head_dim);
    return rlvk_check_buffer_size(dev, elems * sizeof(float), "the Q/K tensor", err);
}

/* Per token: each token's inv_freq and attention factor (rope_freqs_at, in
 * double) rounded to fp32: [tokens][n_pairs], then [tokens] factors, padded
 * to a vec4. Tokens of equal length share one evaluation of the formula. */
static rl_status upload_freqs_per_token(rlvk_device *dev, const rope_freqs *f, const uint32_t *pos,
                                        uint64_t tokens, rlvk_buffer *buf, rl_error *err)
{
    uint64_t np = f->n_pairs, n = tokens * np + tokens;
    uint64_t bytes = ((n + 3) / 4) * 4 * sizeof(float);
    if (!pos || !tokens)
        return rl_fail(err, RL_ERR_ARG, "rope: a per-position rotation needs the launch's positions");
    rl_status st = rlvk_check_buffer_size(dev, bytes, "the per-token inv_freq table", err);
    if (st)
        return st;
    float *t = calloc(1, bytes);
    if (!t)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory for the per-token inv_freq table");
    double inv[ROPE_MAX_PAIRS], af = 1;
    uint64_t last = UINT64_MAX;
    for (uint64_t i = 0; i < tokens; i++) {
        uint64_t len = rope_position_len(f, pos[i]);
        if (len != last)
            rope_freqs_at(f, pos[i], inv, &af);
        last = len;
        for (uint64_t j = 0; j < np; j++)
            t[i * np + j] = (float)inv[j];
        t[tokens * np + i] = (float)af;
    }
    st = rlvk_buffer_create(dev, bytes, "inv_freq per token", buf, err);
    if (!st)
        st = rlvk_buffer_upload(dev, buf, 0, t, bytes, err);
    free(t);
    return st;
}

rl_status rope_gpu_upload_freqs(rlvk_device *dev, const rope_freqs *f, const uint32_t *pos,
                                uint64_t tokens, rlvk_buffer *buf, rl_error *err)
{
    if (per_token(f))
        return upload_freqs_per_token(dev, f, pos, tokens, buf, err);
    float fr[2 * ROPE_MAX_PAIRS + 8 + RL_REMPITAB_N] = {0};
    uint64_t nf = f->n_pairs;
    for (uint32_t j = 0; j < f->n_pairs; j++)
        fr[j] = (float)f->inv_freq[j];
    if (rope_prec_is_emu(f->precision))
        rope_emu_factors(f, fr); /* the framework's own fp32 factors */
    /* ggml rope_yarn: freq_scale at [n_pairs], ramp_mix from [n_pairs + 1] */
    if (rope_emu_yarn(f, &fr[f->n_pairs], &fr[f->n_pairs + 1], NULL))
        nf = 2 * (uint64_t)f->n_pairs + 1;
    if (rope_emu_sleef(f)) { /* rl_sleef.glsl's table (RL_SLEEF_TAB) after the factors */
        rope_sleef_table(&fr[f->n_pairs]);
        nf = f->n_pairs + (uint64_t)RL_REMPITAB_N;
    }
    uint64_t bytes = ((nf + 3) / 4) * 4 * sizeof(float);
    if (bytes == 0)
        bytes = 16;
    rl_status st = rlvk_buffer_create(dev, bytes, "inv_freq", buf, err);
    if (!st)
        st = rlvk_buffer_upload(dev, buf, 0, fr, bytes, err);
    return st;
}

/* pos: [tokens] (stride 1) or, mRoPE, [tokens][3] (stride 3, pair j reading
 * its stream's position). */
static rl_status upload_angles(rlvk_device *dev, const rope_freqs *f, const uint32_t *pos,
                               uint32_t stride, uint64_t tokens, rlvk_buffer *buf, rl_error *err)
{
    rl_status st;
    if (f->precision == RL_ROPE_PREC_TABLE) {
        int vec4 = use_vec4(f); /* n_pairs is then a multiple of 4 */
        uint64_t n = tokens * f->n_pairs * 2;
        uint64_t bytes = n ? n * sizeof(float) : 16;
        if ((st = rlvk_check_buffer_size(dev, bytes, "the cos/sin table", err)))
            return st;
        float *t = malloc(bytes);
        if (!t)
            return rl_fail(err, RL_ERR_NOMEM, "out of host memory for the cos/sin table");
        memset(t, 0, bytes);
        double inv[ROPE_MAX_PAIRS], af = f->attention_factor;
        memcpy(inv, f->inv_freq, sizeof inv);
        for (uint64_t i = 0; i < tokens; i++) {
            if (per_token(f)) /* this token's own rotation */
                rope_freqs_at(f, pos[i], inv, &af);
            for (uint32_t j = 0; j < f->n_pairs; j++) {
                double a = (double)pos[i * stride + (stride == 3 ? rope_mrope_stream(f, j) : 0)] *
                           inv[j];
                /* In the order rope.comp reads it: (cos, sin) per pair, or
                 * per quad of pairs four cos then four sin (vec4 variant). */
                uint64_t q = i * f->n_pairs + j;
                uint64_t ic = vec4 ? (q / 4) * 8 + q % 4 : 2 * q, is = vec4 ? ic + 4 : ic + 1;
                t[ic] = (float)(cos(a) * af);
                t[is] = (float)(sin(a) * af);
            }
        }
        st = rlvk_buffer_create(dev, bytes, "cos/sin table", buf, err);
        if (!st)
            st = rlvk_buffer_upload(dev, buf, 0, t, bytes, err);
        free(t);
        return st;
    }
    if (f->precision == RL_ROPE_PREC_PRECISE) {
        /* One row of turns per token for a per-position rotation. */
        uint64_t rows = per_token(f) ? tokens : 1;
        if (per_token(f) && (!pos || !tokens))
            return rl_fail(err, RL_ERR_ARG, "rope: a per-position rotation needs the launch's "
                           "positions");
        uint64_t bytes = rows * (f->n_pairs ? f->n_pairs : 1) * 8;
        if ((st = rlvk_check_buffer_size(dev, bytes, "the precise turns", err)))
            return st;
        uint32_t *w = calloc(1, bytes);
        if (!w)
            return rl_fail(err, RL_ERR_NOMEM, "out of host memory for the precise turns");
        double inv[ROPE_MAX_PAIRS], af;
        memcpy(inv, f->inv_freq, sizeof inv);
        for (uint64_t i = 0; i < rows; i++) {
            if (per_token(f))
                rope_freqs_at(f, pos[i], inv, &af);
            for (uint32_t j = 0; j < f->n_pairs; j++) {
                /* frac(theta / 2pi) in long double (64-bit mantissa on x86-64),
                 * scaled to a 64-bit fraction: pos * turns mod 2^64 is then the
                 * angle in 2^-64 turns, exactly, in the shader. */
                long double tw = (long double)inv[j] / 6.28318530717958647692528676655900577L;
                tw -= floorl(tw);  /* [0, 1): the scaled value is < 2^64 */
                uint64_t fx = (uint64_t)ldexpl(tw, 64);
                w[2 * (i * f->n_pairs + j)] = (uint32_t)fx;
                w[2 * (i * f->n_pairs + j) + 1] = (uint32_t)(fx >> 32);
            }
        }
        st = rlvk_buffer_create(dev, bytes, "precise turns", buf, err);
        if (!st)
            st = rlvk_buffer_upload(dev, buf, 0, w, bytes, err);
        free(w);
        return st;
    }
    uint32_t z[4] = {0};
    st = rlvk_buffer_create(dev, 16, "angle placeholder", buf, err);
    if (!st)
        st = rlvk_buffer_upload(dev, buf, 0, z, 16, err);
    return st;
}

rl_status rope_gpu_upload_angles(rlvk_device *dev, const rope_freqs *f, const uint32_t *pos,
                                 uint64_t tokens, rlvk_buffer *buf, rl_error *err)
{
    return upload_angles(dev, f, pos, 1, tokens, buf, err);
}

rl_status rope_gpu_upload_angles3(rlvk_device *dev, const rope_freqs *f, const uint32_t *pos3,
                                  uint64_t tokens, rlvk_buffer *buf, rl_error *err)
{
    return upload_angles(dev, f, pos3, 3, tokens, buf, err);
}

rl_status rope_gpu_record(rlvk_cmd *cmd, rope_kernel *k, const rope_freqs *f,
                          const rope_gpu_io *io, rl_error *err)
{
    rl_status st = rope_gpu_check_shape(cmd->dev, f, io->tokens, io->heads, err);
    if (st)
        return st;
    const rlvk_pipeline *pipe = NULL;
    uint32_t emu_flags = 0;
    float mscale = (float)f->attention_factor;
    if (rope_prec_is_emu(f->precision))
        emu_flags = (f->tf32 ? RL_ROPE_EMU_TF32 : 0u) | (io->angle_dump ? RL_ROPE_EMU_DUMP : 0u) |
                    (rope_emu_sleef(f) ? RL_ROPE_EMU_SLEEF : 0u) |
                    (rope_emu_yarn(f, NULL, NULL, &mscale) ? RL_ROPE_EMU_YARN : 0u);
    /* 3-D positions select the mRoPE variant; 1-D ones are (p, p, p), which
     * is the plain kernel exactly. */
    int mrope = io->pos3 ? f->mrope : ROPE_MROPE_OFF;
    if (io->pos3 && !f->mrope)
        return rl_fail(err, RL_ERR_ARG, "rope: 3-D positions given to a rotation without "
                       "mrope_section");
    if ((st = get_pipe(k, f, io->heads, io->tokens * io->heads, emu_flags, mrope, &pipe, err)))
        return st;
    struct rl_rope_push p = {
        .group_base = 0,
        .n_rows = (uint32_t)(io->tokens * io->heads),
        .attn_factor = mscale, /* ggml rope_yarn: ggml's fp32 mscale */
        .af_offset = per_token(f) ? (uint32_t)(io->tokens * f->n_pairs) : 0u,
    };
    /* Items per row as in rope.comp: quads (vec4) or single pairs, plus the
     * pass-through tail; one invocation per item of each block of hg heads
     * x tg tokens. */
    uint64_t items = f->rotary_dim / 2 + (f->head_dim - f->rotary_dim);
    if (use_vec4(f)) {
        uint32_t chunk, pchunk;
        vec4_chunks(cmd->dev, f, &chunk, &pchunk);
        items = f->rotary_dim / 8 / chunk + (f->head_dim - f->rotary_dim) / 4 / pchunk;
    }
    uint32_t hg, tg;
    row_groups(cmd->dev, f, io->heads, &hg, &tg);
    uint64_t blocks = (io->tokens + tg - 1) / tg * (io->heads / hg);
    if ((f->precision == RL_ROPE_PREC_TABLE || f->precision == RL_ROPE_PREC_PRECISE) && !io->angles)
        return rl_fail(err, RL_ERR_ARG, "rope precision %s needs its angle buffer (rope_gpu_upload_angles)",
                       rope_precision_name(f->precision));
    /* Unused angle bindings get a valid buffer that the mode never reads. */
    const rlvk_buffer *ang = io->angles ? io->angles : io->freq;
    /* Binding 6 is written only with RL_ROPE_EMU_DUMP. */
    const rlvk_buffer *bufs[7] = {io->x, io->y, mrope ? io->pos3 : io->pos, io->freq, ang, ang,
                                  io->angle_dump ? io->angle_dump : ang};
    return rlvk_cmd_dispatch(cmd, pipe, bufs, &p, rlvk_groups(blocks * items, pipe->local_size_x),
                             err);
}

rl_status rope_gpu_apply(rlvk_device *dev, rope_kernel *k, const rope_freqs *f,
                         const float *x, const uint32_t *pos, uint64_t tokens, uint32_t heads,
                         float *y, double *gpu_ns, int *guard_ok, rl_error *err)
{
    return rope_gpu_apply_dump(dev, k, f, x, pos, tokens, heads, y, NULL, gpu_ns, guard_ok, err);
}

static rl_status apply_impl(rlvk_device *dev, rope_kernel *k, const rope_freqs *f,
                            const float *x, const uint32_t *pos, int three, uint64_t tokens,
                            uint32_t heads, float *y, float *angles, double *gpu_ns,
                            int *guard_ok, rl_error *err);

rl_status rope_gpu_apply_dump(rlvk_device *dev, rope_kernel *k, const rope_freqs *f,
                              const float *x, const uint32_t *pos, uint64_t tokens,
                              uint32_t heads, float *y, float *angles, double *gpu_ns,
                              int *guard_ok, rl_error *err)
{
    return apply_impl(dev, k, f, x, pos, 0, tokens, heads, y, angles, gpu_ns, guard_ok, err);
}

rl_status rope_gpu_apply3(rlvk_device *dev, rope_kernel *k, const rope_freqs *f,
                          const float *x, const uint32_t *pos3, uint64_t tokens, uint32_t heads,
                          float *y, double *gpu_ns, int *guard_ok, rl_error *err)
{
    if (!f->mrope)
        return rl_fail(err, RL_ERR_ARG, "rope: 3-D positions given to a rotation without "
                       "mrope_section");
    return apply_impl(dev, k, f, x, pos3, 1, tokens, heads, y, NULL, gpu_ns, guard_ok, err);
}

/* pos: [tokens], or [tokens][3] when three. */
static rl_status apply_impl(rlvk_device *dev, rope_kernel *k, const rope_freqs *f,
                            const float *x, const uint32_t *pos, int three, uint64_t tokens,
                            uint32_t heads, float *y, float *angles, double *gpu_ns,
                            int *guard_ok, rl_error *err)
{
    rl_status st = rope_gpu_check_shape(dev, f, tokens, heads, err);
    if (st)
        return st;
    uint64_t n = tokens * heads * f->head_dim;
    uint64_t bytes = n * sizeof(float);
    rlvk_buffer bx = {0}, by = {0}, bp = {0}, bf = {0}, ba = {0}, bd = {0};
    int dump = angles && rope_prec_is_emu(f->precision);
    uint64_t dump_bytes = tokens * f->n_pairs * sizeof(float);
    uint64_t pos_bytes = tokens * (three ? 3 : 1) * sizeof(uint32_t);
    rlvk_cmd cmd = {0};
    if (gpu_ns)
        *gpu_ns = -1;

    if ((st = rlvk_buffer_create(dev, bytes, "x", &bx, err)) ||
        (st = vf_guarded_create(dev, bytes, "y", &by, err)) ||
        (st = rlvk_buffer_create(dev, pos_bytes, "positions", &bp, err)) ||
        (st = rope_gpu_upload_freqs(dev, f, three ? NULL : pos, tokens, &bf, err)) ||
        (st = upload_angles(dev, f, pos, three ? 3 : 1, tokens, &ba, err)) ||
        (st = rlvk_buffer_upload(dev, &bx, 0, x, bytes, err)) ||
        (st = rlvk_buffer_upload(dev, &bp, 0, pos, pos_bytes, err)) ||
        (dump && (st = vf_guarded_create(dev, dump_bytes ? dump_bytes : 4, "angles", &bd, err))))
        goto done;
    if ((st = rlvk_cmd_begin(dev, 1, &cmd, err)))
        goto done;
    rope_gpu_io io = {.x = &bx, .y = &by, .pos = &bp, .pos3 = three ? &bp : NULL, .freq = &bf, .angles = &ba, .tokens = tokens,
                      .heads = heads, .angle_dump = dump ? &bd : NULL};
    rlvk_cmd_timestamp(&cmd, 0);
    if ((st = rope_gpu_record(&cmd, k, f, &io, err)))
        goto done;
    rlvk_cmd_timestamp(&cmd, 1);
    if ((st = rlvk_cmd_submit_wait(&cmd, err)))
        goto done;
    if (gpu_ns && dev->query_pool && rlvk_cmd_elapsed_ns(&cmd, 0, 1, gpu_ns, NULL) != RL_OK)
        *gpu_ns = -1;
    if ((st = vf_guarded_download(dev, &by, bytes, y, guard_ok, err)))
        goto done;
    if (dump) {
        int dump_ok = 1;
        if ((st = vf_guarded_download(dev, &bd, dump_bytes, angles, &dump_ok, err)))
            goto done;
        if (guard_ok && !dump_ok)
            *guard_ok = 0;
    }
done:
    rlvk_buffer_destroy(dev, &bd);
    rlvk_cmd_destroy(&cmd);
    rlvk_buffer_destroy(dev, &ba);
    rlvk_buffer_destroy(dev, &bf);
    rlvk_buffer_destroy(dev, &bp);
    rlvk_buffer_destroy(dev, &by);
    rlvk_buffer_destroy(dev, &bx);
    return st;
}
