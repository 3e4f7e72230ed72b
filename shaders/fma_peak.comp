#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
/* FMA peak yardstick: each invocation runs RL_FMA_ROUNDS rounds of 8 vec4
 * FMAs (32 fp32 FMAs = 64 flops per round) in 4 independent pairs of chains,
 * and writes one value so nothing is dead code. Each FMA multiplies two
 * running values (a' = a b + c, b' = b a' + c), so no compiler may fold the
 * rounds together, even with reassociation allowed; the values converge to
 * a fixed point near 0.3 (no overflow, no denormals). The rounds are
 * unrolled by the preprocessor, straight-line like the attention kernel: a
 * loop would add per-iteration mask bookkeeping on SIMD-across-lanes CPU
 * drivers (lavapipe) and understate the peak. */
#include "rl_push.h"
#include "rl_common.glsl"

layout(push_constant) uniform Push { rl_fma_push p; } pc;
layout(std430, binding = 0) writeonly buffer Y { vec4 y[]; };

#define RL_ROUND(r) \
    a0 = fma(a0, a1, c); a2 = fma(a2, a3, c); a4 = fma(a4, a5, c); a6 = fma(a6, a7, c); \
    a1 = fma(a1, a0, c); a3 = fma(a3, a2, c); a5 = fma(a5, a4, c); a7 = fma(a7, a6, c);
#define RL_R4(r) RL_ROUND(r) RL_ROUND(r) RL_ROUND(r) RL_ROUND(r)
#define RL_R16(r) RL_R4(r) RL_R4(r) RL_R4(r) RL_R4(r)
#define RL_R64(r) RL_R16(r) RL_R16(r) RL_R16(r) RL_R16(r)

void main()
{
    uint32_t i = RL_GROUP_ID * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    float s = pc.p.seed + float(gl_LocalInvocationID.x) * 1e-7;
    /* Distinct components: equal ones would be computed once (SIMD-across-
     * lanes drivers keep each component in its own register). */
    vec4 e = vec4(0.0, 1e-4, 2e-4, 3e-4);
    vec4 a0 = s + e, a1 = s + 1e-3 + e, a2 = s + 2e-3 + e, a3 = s + 3e-3 + e;
    vec4 a4 = s + 4e-3 + e, a5 = s + 5e-3 + e, a6 = s + 6e-3 + e, a7 = s + 7e-3 + e;
    vec4 c = vec4(0.25 * pc.p.seed + 0.125); /* seed 0.5: c = 0.25 */
    RL_R64(0) RL_R64(1) RL_R64(2) RL_R64(3) /* RL_FMA_ROUNDS = 256 */
    y[i] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
