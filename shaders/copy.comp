#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
/* Plain vec4 copy: the bandwidth yardstick `ropelab bench` compares kernels
 * to. Each invocation copies PER consecutive vec4s (bench.h: the yardstick
 * uses BENCH_COPY_VEC4, one 64-byte line per invocation, the fastest mapping
 * measured on lavapipe; docs/rope.md). With TEXEL it reads x through the
 * texel view x_t, as the kernels it is compared with do on CPU devices. */
#include "rl_push.h"
#include "rl_common.glsl"

layout(constant_id = 1) const uint32_t PER = 1u;
layout(constant_id = 2) const uint32_t TEXEL = 0u;

layout(push_constant) uniform Push { rl_copy_push p; } pc;

layout(std430, binding = 0) readonly buffer X { vec4 x[]; };
layout(std430, binding = 1) writeonly buffer Y { vec4 y[]; };
layout(binding = 16) uniform samplerBuffer x_t; /* binding 0 as rgba32f texels */

vec4 rd_x(uint32_t i)
{
    if (TEXEL != 0u)
        return texelFetch(x_t, int(i));
    return x[i];
}

void main()
{
    uint32_t b = (RL_GROUP_ID * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * PER;
    for (uint32_t j = 0u; j < PER; j++)
        if (b + j < pc.p.n_vec4)
            y[b + j] = rd_x(b + j);
}
