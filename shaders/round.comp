#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
/* The dtype roundings of rl_round.glsl over a buffer of fp32 bit patterns
 * (tests: compared with the CPU's rope_emu_round). Output: fp32 bits of the
 * rounded value for bf16/tf32; the 16 half bits for fp16. */
#include "rl_push.h"
#include "rl_common.glsl"
#include "rl_round.glsl"

layout(constant_id = 1) const uint32_t DTYPE = RL_DTYPE_BF16;
layout(push_constant) uniform Push { rl_round_push p; } pc;
layout(std430, binding = 0) readonly buffer I { uint32_t in_bits[]; };
layout(std430, binding = 1) writeonly buffer O { uint32_t out_bits[]; };

void main()
{
    uint32_t i = RL_GROUP_ID * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (i >= pc.p.n)
        return;
    uint32_t u = in_bits[i];
    out_bits[i] = DTYPE == RL_DTYPE_FP16 ? rl_fp16_bits(u)
                : DTYPE == RL_DTYPE_TF32 ? rl_tf32_bits(u) : rl_bf16_bits(u);
}
