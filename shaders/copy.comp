#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
/* Plain vec4 copy: the bandwidth yardstick `ropelab bench` compares kernels to. */
#include "rl_push.h"
#include "rl_common.glsl"

layout(push_constant) uniform Push { rl_copy_push p; } pc;

layout(std430, binding = 0) readonly buffer X { vec4 x[]; };
layout(std430, binding = 1) writeonly buffer Y { vec4 y[]; };

void main()
{
    uint32_t i = RL_GROUP_ID * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (i < pc.p.n_vec4)
        y[i] = x[i];
}
