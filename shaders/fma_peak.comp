#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
/* FMA peak yardstick. Each invocation keeps RL_FMA_RING running vec4 values
 * a_0 .. a_{R-1} (R = 3, 4, 6 or 8: one build each, fma_peak_r3 .. _r8) and
 * runs RL_FMA_ROUNDS rounds of 8 vec4 FMAs (32 fp32 FMAs = 64 flops per
 * round) that walk the ring in order, a_i = a_i a_{i+1} + c, where the
 * last of a pass reads a_0's value from before the pass (t). Within a pass
 * every FMA reads only values from before it, so a round's 8 FMAs are
 * independent and the chain depth is the number of passes; each multiplies
 * two running values, so no compiler may fold rounds together or share
 * products, even with reassociation allowed. With c = 0.125 (seed 0.5) the
 * values fall from 0.5 to the fixed point x = x^2 + c, x = 0.146 (no
 * overflow, no denormals), contracting, so rounding errors do not grow:
 * bench_attn.c checks each width's output against the same recurrence in
 * double before timing it. The rounds are unrolled by the preprocessor,
 * straight-line like the attention kernel: a loop would add per-iteration
 * mask bookkeeping on SIMD-across-lanes CPU drivers (lavapipe) and
 * understate the peak.
 *
 * Why several widths: the peak needs enough independent chains to hide the
 * FMA latency, but no more live values than the device keeps in registers.
 * A CPU driver keeps each lane of a value in one SIMD register slot, so
 * R vec4 are 4R registers (x86-64 has 16 ymm; 8 vec4 spill) while a GPU has
 * registers for all of them. The bench times every width on the device
 * and takes the fastest as its peak (bench_attn.c). */
#include "rl_push.h"
#include "rl_common.glsl"

#ifndef RL_FMA_RING
#define RL_FMA_RING 4
#endif

layout(push_constant) uniform Push { rl_fma_push p; } pc;
layout(std430, binding = 0) writeonly buffer Y { vec4 y[]; };

#define F(i, j) a##i = fma(a##i, a##j, c);
#define FT(i) a##i = fma(a##i, t, c);
#if RL_FMA_RING == 3 /* 3 + 3 + 2 */
#define RL_ROUND t = a0; F(0, 1) F(1, 2) FT(2) t = a0; F(0, 1) F(1, 2) FT(2) F(0, 1) F(1, 2)
#elif RL_FMA_RING == 4 /* 4 + 4 */
#define RL_ROUND t = a0; F(0, 1) F(1, 2) F(2, 3) FT(3) t = a0; F(0, 1) F(1, 2) F(2, 3) FT(3)
#elif RL_FMA_RING == 6 /* 6 + 2 */
#define RL_ROUND t = a0; F(0, 1) F(1, 2) F(2, 3) F(3, 4) F(4, 5) FT(5) F(0, 1) F(1, 2)
#elif RL_FMA_RING == 8 /* 8 */
#define RL_ROUND t = a0; F(0, 1) F(1, 2) F(2, 3) F(3, 4) F(4, 5) F(5, 6) F(6, 7) FT(7)
#else
#error "RL_FMA_RING must be 3, 4, 6 or 8"
#endif
#define RL_R4 RL_ROUND RL_ROUND RL_ROUND RL_ROUND
#define RL_R16 RL_R4 RL_R4 RL_R4 RL_R4
#define RL_R64 RL_R16 RL_R16 RL_R16 RL_R16

void main()
{
    uint32_t i = RL_GROUP_ID * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    float s = pc.p.seed + float(gl_LocalInvocationID.x) * 1e-7;
    /* Distinct components: equal ones would be computed once (SIMD-across-
     * lanes drivers keep each component in its own register). */
    vec4 e = vec4(0.0, 1e-4, 2e-4, 3e-4);
    vec4 t, a0 = s + e, a1 = s + 1e-3 + e, a2 = s + 2e-3 + e, y4 = vec4(0.0);
#if RL_FMA_RING >= 4
    vec4 a3 = s + 3e-3 + e;
#endif
#if RL_FMA_RING >= 6
    vec4 a4 = s + 4e-3 + e, a5 = s + 5e-3 + e;
#endif
#if RL_FMA_RING == 8
    vec4 a6 = s + 6e-3 + e, a7 = s + 7e-3 + e;
#endif
    vec4 c = vec4(0.25 * pc.p.seed); /* seed 0.5: c = 0.125 */
    RL_R64 RL_R64 RL_R64 RL_R64 /* RL_FMA_ROUNDS = 256 */
    y4 = a0 + a1 + a2;
#if RL_FMA_RING >= 4
    y4 += a3;
#endif
#if RL_FMA_RING >= 6
    y4 += a4 + a5;
#endif
#if RL_FMA_RING == 8
    y4 += a6 + a7;
#endif
    y[i] = y4;
}
