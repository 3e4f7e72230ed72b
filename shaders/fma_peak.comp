#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
/* FMA peak yardstick: each invocation runs `iters` rounds of 8 independent
 * vec4 FMA chains (32 fp32 FMAs = 64 flops per round, enough independent
 * chains to hide FMA latency) and writes one value so nothing is dead code. */
#include "rl_push.h"
#include "rl_common.glsl"

layout(push_constant) uniform Push { rl_fma_push p; } pc;
layout(std430, binding = 0) writeonly buffer Y { vec4 y[]; };

void main()
{
    uint32_t i = RL_GROUP_ID * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    float s = pc.p.seed + float(gl_LocalInvocationID.x) * 1e-7;
    vec4 a0 = vec4(s), a1 = vec4(s + 1e-3), a2 = vec4(s + 2e-3), a3 = vec4(s + 3e-3);
    vec4 a4 = vec4(s + 4e-3), a5 = vec4(s + 5e-3), a6 = vec4(s + 6e-3), a7 = vec4(s + 7e-3);
    const vec4 m = vec4(0.999999), c = vec4(1e-7);
    for (uint32_t k = 0u; k < pc.p.iters; k++) {
        a0 = fma(a0, m, c); a1 = fma(a1, m, c); a2 = fma(a2, m, c); a3 = fma(a3, m, c);
        a4 = fma(a4, m, c); a5 = fma(a5, m, c); a6 = fma(a6, m, c); a7 = fma(a7, m, c);
    }
    y[i] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
