#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
/* Rotary position embedding (Su et al., RoFormer) applied to one
 * [tokens][heads][head_dim] float32 tensor with arbitrary integer positions.
 *
 * One invocation per "item" of a block of rows (HEAD_GROUP heads x
 * TOKEN_GROUP tokens, see main): in the vec4 variant (RL_ROPE_VEC4, needs
 * head_dim % 4 == 0 and rotary_dim % 8 == 0) an item is CHUNK consecutive
 * quads of rotary pairs or PCHUNK pass-through vec4s; in the scalar variant
 * one pair or one pass-through dimension. The shape is specialised (HEAD_DIM, ROT_DIM,
 * N_HEADS) so index arithmetic divides by constants. */
#include "rl_push.h"
#include "rl_common.glsl"
#include "rope_angle.glsl"
#include "rl_round.glsl"

layout(constant_id = 1) const uint32_t LAYOUT = RL_ROPE_LAYOUT_HALF;
layout(constant_id = 2) const uint32_t HEAD_DIM = 128;
layout(constant_id = 3) const uint32_t ROT_DIM = 128;
layout(constant_id = 4) const uint32_t N_HEADS = 1;
layout(constant_id = 5) const uint32_t PRECISION = RL_ROPE_PREC_FP32;
layout(constant_id = 6) const uint32_t DTYPE = RL_DTYPE_FP32;   /* emulation modes */
layout(constant_id = 7) const uint32_t EMU_FLAGS = 0u;          /* RL_ROPE_EMU_* */
/* 1: every token has its own rotation (dynamic_mode cache_consistent):
 * binding 3 is [tokens][rot/2] inv_freq then [tokens] attention factors
 * (from pc.p.af_offset), binding 5 [tokens][rot/2] turns; all made on the
 * host from the one frequency formula (rope_freqs_at), in double. */
layout(constant_id = 8) const uint32_t PER_TOKEN = 0u;
/* Rows per invocation (see main): heads of one token (divides N_HEADS) and
 * tokens (> 1 only when HEAD_GROUP == N_HEADS). */
layout(constant_id = 9) const uint32_t HEAD_GROUP = 1u;
layout(constant_id = 10) const uint32_t TOKEN_GROUP = 1u;
/* mRoPE (rope.h ROPE_MROPE_*): 0 off; 1 sections, 2 interleaved. Then
 * binding 2 is [tokens][3] (t, h, w) and pair j reads the position of its
 * stream (sections MROPE_S0..S2 pairs per stream). */
layout(constant_id = 11) const uint32_t MROPE = 0u;
layout(constant_id = 12) const uint32_t MROPE_S0 = 0u;
layout(constant_id = 13) const uint32_t MROPE_S1 = 0u;
layout(constant_id = 14) const uint32_t MROPE_S2 = 0u;
/* vec4 variant: consecutive items one invocation covers (see main): CHUNK
 * rotary items (divides ROT_DIM / 8) and PCHUNK pass-through vec4s
 * (divides (HEAD_DIM - ROT_DIM) / 4), each 1..4, and TEXEL (1: x is read
 * through the texel view x_t, see below), packed as CHUNK | PCHUNK << 8 |
 * TEXEL << 16 (constant ids stop at 15); rope_gpu.c picks them. */
layout(constant_id = 15) const uint32_t CHUNKS = 0x101u;
const uint32_t CHUNK = CHUNKS & 0xffu;
const uint32_t PCHUNK = (CHUNKS >> 8) & 0xffu;
const uint32_t TEXEL = CHUNKS >> 16;
#define RL_ROPE_CHUNK_MAX 4

layout(push_constant) uniform Push { rl_rope_push p; } pc;

layout(std430, binding = 2) readonly buffer P { uint32_t pos[]; };  /* [tokens]; MROPE: [tokens][3] */
/* table mode: attention-scaled (cos, sin) per token and pair, from double,
 * in the order the kernel reads them: scalar variant [tokens][rot/2] (cos,
 * sin); vec4 variant [tokens][rot/8] (cos of the quad's four pairs, then
 * their sin), two vec4 loads per quad (rope_gpu_upload_angles). mRoPE: each
 * pair's entry is at its stream's position. */
#ifdef RL_ROPE_VEC4
layout(std430, binding = 4) readonly buffer T { vec4 cs_table[]; };  /* [tokens][rot/8][2] */
/* The same memory as rgba32f texels (rlvk_texel_binding 17 <- 4), read so
 * when TEXEL (like x: a gather instead of a loop over the lanes on a CPU
 * driver). Same bits. */
layout(binding = 17) uniform samplerBuffer cs_t;
vec4 rd_cs(uint32_t i)
{
    if (TEXEL != 0u)
        return texelFetch(cs_t, int(i));
    return cs_table[i];
}
#else
layout(std430, binding = 4) readonly buffer T { vec2 cs_table[]; };  /* [tokens][rot/2] */
#endif
/* precise mode: frac(inv_freq / 2pi) as (lo, hi) 64-bit binary fractions. */
layout(std430, binding = 5) readonly buffer W { uvec2 turns[]; };    /* [rot/2] (per token: [tokens][rot/2]) */
/* emulation modes with RL_ROPE_EMU_DUMP: the angle handed to cos/sin. */
layout(std430, binding = 6) writeonly buffer A { float angles_out[]; }; /* [tokens][rot/2] */

#ifdef RL_ROPE_VEC4
layout(std430, binding = 0) readonly buffer X { vec4 x[]; };        /* [rows][head_dim/4] */
/* The same memory as rgba32f texels (rlvk_texel_binding 16 <- 0): on a CPU
 * device (TEXEL) x is read by texelFetch, which gallivm serves with a
 * branch-free gather, where a storage-buffer read at a per-lane address is
 * a loop over the lanes (docs/rope.md "Texel reads"). Same bits. */
layout(binding = 16) uniform samplerBuffer x_t;
vec4 rd_x(uint32_t i)
{
    if (TEXEL != 0u)
        return texelFetch(x_t, int(i));
    return x[i];
}
layout(std430, binding = 1) writeonly buffer Y { vec4 y[]; };       /* [rows][head_dim/4] */
layout(std430, binding = 3) readonly buffer F { vec4 inv_freq[]; }; /* [rot/8] */
const uint32_t ROW4 = HEAD_DIM / 4u;
const uint32_t ROT_ITEMS = ROT_DIM / 8u;                  /* quads of pairs */
const uint32_t ROT_CHUNKS = ROT_ITEMS / CHUNK;
const uint32_t ITEMS = ROT_CHUNKS + (HEAD_DIM - ROT_DIM) / 4u / PCHUNK; /* per row */
#else
layout(std430, binding = 0) readonly buffer X { float x[]; };       /* [rows][head_dim] */
layout(std430, binding = 1) writeonly buffer Y { float y[]; };      /* [rows][head_dim] */
layout(std430, binding = 3) readonly buffer F { float inv_freq[]; };/* [rot/2] */
const uint32_t ROT_ITEMS = ROT_DIM / 2u;                  /* pairs */
const uint32_t ITEMS = ROT_ITEMS + (HEAD_DIM - ROT_DIM);
#endif

/* rl_sleef.glsl's reduction table: after the pairs' factors (the host's
 * rope_gpu_upload_freqs; the emulation modes run the scalar variant) */
#ifdef RL_ROPE_VEC4
#define RL_SLEEF_TAB(i) inv_freq[(ROT_ITEMS * 4u + uint(i)) / 4u][(uint(i)) % 4u]
#else
#define RL_SLEEF_TAB(i) inv_freq[ROT_ITEMS + uint(i)]
#endif
#include "rl_rempitab.h"
#include "rl_sleef.glsl"
#include "rope_emu.glsl"

/* mRoPE: the stream of pair j (HF Qwen2-VL sections; Qwen3-VL interleaved:
 * h at j % 3 == 1 below 3 S1, w at j % 3 == 2 below 3 S2, else t). */
uint32_t rope_mrope_stream(uint32_t j)
{
    if (MROPE == 1u)
        return j < MROPE_S0 ? 0u : (j < MROPE_S0 + MROPE_S1 ? 1u : 2u);
    if (j % 3u == 1u && j < 3u * MROPE_S1)
        return 1u;
    return j % 3u == 2u && j < 3u * MROPE_S2 ? 2u : 0u;
}

/* The position of token t for rotary pair j: the one place the kernel reads
 * positions (every pair of a token shares pos[t], except in mRoPE, where
 * pair j reads its stream's position). MROPE is a specialization constant. */
uint32_t rope_position(uint32_t t, uint32_t j)
{
    if (MROPE != 0u)
        return pos[3u * t + rope_mrope_stream(j)];
    return pos[t];
}

/* (cos, sin) * attention factor of pair j of token t; f is inv_freq[j]
 * (used only in fp32 mode), w the pair's turns (only in precise mode).
 * PRECISION is a specialization constant, so the unused modes compile away. */
vec2 rope_cs(uint32_t t, uint32_t j, float f, uvec2 w, float af)
{
#ifndef RL_ROPE_VEC4 /* the vec4 variant reads its table in main */
    if (PRECISION == RL_ROPE_PREC_TABLE)
        return cs_table[t * (ROT_DIM / 2u) + j];
#endif
    if (PRECISION == RL_ROPE_PREC_PRECISE)
        return rope_cos_sin_precise(rope_position(t, j), w) * af;
    return rope_cos_sin_fp32(rope_position(t, j), f) * af;
}

/* The per-pair constants of pair j for token t: inv_freq in fp32 mode, the
 * turns in precise mode (zero where the mode does not read them). */
uvec2 rope_turns(uint32_t t, uint32_t j)
{
    if (PRECISION != RL_ROPE_PREC_PRECISE)
        return uvec2(0u);
    return turns[PER_TOKEN != 0u ? t * (ROT_DIM / 2u) + j : j];
}

/* Work split: invocation i handles item k = i % ITEMS (ITEMS per row) of a
 * block of rows, HEAD_GROUP heads (of one token) x TOKEN_GROUP tokens
 * (TOKEN_GROUP > 1 only when HEAD_GROUP == N_HEADS; rope_gpu.c picks both).
 * The rotation of a (token, pair) is computed once and applied to all
 * HEAD_GROUP heads, and the per-pair constants (inv_freq, turns) are read
 * once for the block: neighbouring invocations still touch neighbouring
 * words (vec4 variant: neighbouring chunks) of one row. */
const uint32_t N_HGROUPS = N_HEADS / HEAD_GROUP;

void main()
{
    uint32_t i = RL_GROUP_ID * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    uint32_t g = i / ITEMS;                     /* block index */
    uint32_t k = i - g * ITEMS;
    uint32_t n_tok = pc.p.n_rows / N_HEADS;
    uint32_t tok0 = (g / N_HGROUPS) * TOKEN_GROUP;
    uint32_t h0 = (g % N_HGROUPS) * HEAD_GROUP;
    if (tok0 >= n_tok)
        return;
    uint32_t tok_end = min(tok0 + TOKEN_GROUP, n_tok);
#ifdef RL_ROPE_VEC4
    /* Item k of a row is chunk k: CHUNK consecutive quads q0.. (half: the
     * vec4s q0.. and their partners ROT_ITEMS further; interleaved: the
     * 2 CHUNK vec4s from 2 q0), or PCHUNK pass-through vec4s. Each
     * invocation loads its consecutive vec4s, then stores them, as the copy
     * yardstick does (bench.h BENCH_COPY_VEC4). */
    if (k < ROT_CHUNKS) {
        uint32_t q0 = k * CHUNK;
        vec4 f[RL_ROPE_CHUNK_MAX];
        uvec2 w[4 * RL_ROPE_CHUNK_MAX];
        for (uint32_t c = 0u; c < CHUNK; c++) {
            f[c] = vec4(0);
            for (uint32_t e = 0u; e < 4u; e++)
                w[4u * c + e] = uvec2(0u);
        }
        if (PER_TOKEN == 0u)
            for (uint32_t c = 0u; c < CHUNK; c++) {
                if (PRECISION == RL_ROPE_PREC_FP32)
                    f[c] = inv_freq[q0 + c];
                for (uint32_t e = 0u; e < 4u; e++)
                    w[4u * c + e] = rope_turns(0u, 4u * (q0 + c) + e);
            }
        for (uint32_t tok = tok0; tok < tok_end; tok++) {
            float af = pc.p.attn_factor;
            if (PER_TOKEN != 0u) { /* af_offset and rot/2 are multiples of 4 here */
                uint32_t a = pc.p.af_offset + tok;
                af = inv_freq[a / 4u][a % 4u];
                for (uint32_t c = 0u; c < CHUNK; c++) {
                    if (PRECISION == RL_ROPE_PREC_FP32)
                        f[c] = inv_freq[tok * ROT_ITEMS + q0 + c];
                    for (uint32_t e = 0u; e < 4u; e++)
                        w[4u * c + e] = rope_turns(tok, 4u * (q0 + c) + e);
                }
            }
            vec4 cs_c[RL_ROPE_CHUNK_MAX], cs_s[RL_ROPE_CHUNK_MAX];
            for (uint32_t c = 0u; c < CHUNK; c++) {
                if (PRECISION == RL_ROPE_PREC_TABLE) {
                    cs_c[c] = rd_cs(2u * (tok * ROT_ITEMS + q0 + c));
                    cs_s[c] = rd_cs(2u * (tok * ROT_ITEMS + q0 + c) + 1u);
                } else {
                    for (uint32_t e = 0u; e < 4u; e++) {
                        vec2 cs = rope_cs(tok, 4u * (q0 + c) + e, f[c][e], w[4u * c + e], af);
                        cs_c[c][e] = cs.x;
                        cs_s[c][e] = cs.y;
                    }
                }
            }
            for (uint32_t h = 0u; h < HEAD_GROUP; h++) {
                uint32_t base = (tok * N_HEADS + h0 + h) * ROW4;
                if (LAYOUT == RL_ROPE_LAYOUT_HALF) {
                    vec4 a[RL_ROPE_CHUNK_MAX], b[RL_ROPE_CHUNK_MAX];
                    for (uint32_t c = 0u; c < CHUNK; c++)
                        a[c] = rd_x(base + q0 + c);
                    for (uint32_t c = 0u; c < CHUNK; c++)
                        b[c] = rd_x(base + ROT_ITEMS + q0 + c);
                    for (uint32_t c = 0u; c < CHUNK; c++)
                        y[base + q0 + c] = a[c] * cs_c[c] - b[c] * cs_s[c];
                    for (uint32_t c = 0u; c < CHUNK; c++)
                        y[base + ROT_ITEMS + q0 + c] = b[c] * cs_c[c] + a[c] * cs_s[c];
                } else {
                    vec4 v[2 * RL_ROPE_CHUNK_MAX];
                    for (uint32_t c = 0u; c < 2u * CHUNK; c++)
                        v[c] = rd_x(base + 2u * q0 + c);
                    for (uint32_t c = 0u; c < CHUNK; c++) {
                        vec4 v0 = v[2u * c], v1 = v[2u * c + 1u];
                        vec4 a = vec4(v0.x, v0.z, v1.x, v1.z), b = vec4(v0.y, v0.w, v1.y, v1.w);
                        vec4 ra = a * cs_c[c] - b * cs_s[c], rb = b * cs_c[c] + a * cs_s[c];
                        y[base + 2u * (q0 + c)] = vec4(ra.x, rb.x, ra.y, rb.y);
                        y[base + 2u * (q0 + c) + 1u] = vec4(ra.z, rb.z, ra.w, rb.w);
                    }
                }
            }
        }
    } else {
        uint32_t p0 = ROT_DIM / 4u + (k - ROT_CHUNKS) * PCHUNK;
        for (uint32_t tok = tok0; tok < tok_end; tok++)
            for (uint32_t h = 0u; h < HEAD_GROUP; h++) {
                uint32_t o = (tok * N_HEADS + h0 + h) * ROW4 + p0;
                vec4 v[RL_ROPE_CHUNK_MAX];
                for (uint32_t c = 0u; c < PCHUNK; c++)
                    v[c] = rd_x(o + c);
                for (uint32_t c = 0u; c < PCHUNK; c++)
                    y[o + c] = v[c];
            }
    }
#else
    if (k < ROT_ITEMS) {
        float f = 0.0;
        uvec2 w = uvec2(0u);
        if (PRECISION >= RL_ROPE_PREC_HF) /* the mode's fp32 factor (rope_emu_factors) */
            f = inv_freq[k];
        if (PER_TOKEN == 0u) {
            if (PRECISION == RL_ROPE_PREC_FP32)
                f = inv_freq[k];
            w = rope_turns(0u, k);
        }
        for (uint32_t tok = tok0; tok < tok_end; tok++) {
            float af = pc.p.attn_factor;
            if (PER_TOKEN != 0u) {
                af = inv_freq[pc.p.af_offset + tok];
                if (PRECISION == RL_ROPE_PREC_FP32)
                    f = inv_freq[tok * ROT_ITEMS + k];
                w = rope_turns(tok, k);
            }
            vec2 cs = vec2(0.0);
            float ang = 0.0;
            if (PRECISION >= RL_ROPE_PREC_HF) {
                /* Framework emulation (scalar variant only, rope_gpu.c). */
                ang = rope_emu_angle(rope_position(tok, k), k, f);
                if ((EMU_FLAGS & RL_ROPE_EMU_YARN) != 0u) /* freq_scale, ramp_mix after the factors */
                    ang = rope_emu_yarn(ang, inv_freq[ROT_ITEMS], inv_freq[ROT_ITEMS + 1u + k]);
                if ((EMU_FLAGS & RL_ROPE_EMU_DUMP) != 0u && h0 == 0u)
                    angles_out[tok * ROT_ITEMS + k] = ang;
            } else {
                cs = rope_cs(tok, k, f, w, af);
            }
            for (uint32_t h = 0u; h < HEAD_GROUP; h++) {
                uint32_t base = (tok * N_HEADS + h0 + h) * HEAD_DIM;
                uint32_t ia = LAYOUT == RL_ROPE_LAYOUT_HALF ? base + k : base + 2u * k;
                uint32_t ib = LAYOUT == RL_ROPE_LAYOUT_HALF ? ia + ROT_ITEMS : ia + 1u;
                float a = x[ia], b = x[ib];
                if (PRECISION >= RL_ROPE_PREC_HF) {
                    vec2 r = rope_emu_rotate(a, b, ang, af);
                    y[ia] = r.x;
                    y[ib] = r.y;
                } else {
                    y[ia] = a * cs.x - b * cs.y;
                    y[ib] = b * cs.x + a * cs.y;
                }
            }
        }
    } else {
        for (uint32_t tok = tok0; tok < tok_end; tok++)
            for (uint32_t h = 0u; h < HEAD_GROUP; h++) {
                uint32_t o = (tok * N_HEADS + h0 + h) * HEAD_DIM + ROT_DIM + (k - ROT_ITEMS);
                y[o] = PRECISION >= RL_ROPE_PREC_HF ? rl_round_dt(x[o], DTYPE) : x[o];
            }
    }
#endif
}
