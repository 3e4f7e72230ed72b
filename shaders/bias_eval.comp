#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
/* Evaluates one bias variant's rl_bias over a list of (h, qtok, ktok, qpos,
 * kpos) points, so `ropelab check` verifies shaders/bias_NAME.glsl on its
 * own against pe_bias_ref, independently of attention. Compiled once per
 * registry bias (shaders/meson.build). */
#include "rl_push.h"
#include "rl_common.glsl"

layout(push_constant) uniform Push { rl_bias_eval_push p; } pc;

struct rl_bias_item {
    uint32_t h, qtok, ktok;
    int32_t qpos, kpos, pad0, pad1, pad2;
};
layout(std430, binding = 0) readonly buffer Items { rl_bias_item items[]; }; /* [n_items] */
layout(std430, binding = 1) writeonly buffer Out { float outv[]; };         /* [n_items] */

#include "rl_bias_select.glsl"
#ifdef RL_BIAS_IS_NONE
#error "bias_eval.comp needs -DRL_BIAS_<NAME>=1 of a registry bias"
#endif

void main()
{
    uint32_t i = RL_GROUP_ID * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (i >= pc.p.n_items)
        return;
    rl_bias_item it = items[i];
    outv[i] = rl_bias(it.h, it.qtok, it.ktok, it.qpos, it.kpos);
}
