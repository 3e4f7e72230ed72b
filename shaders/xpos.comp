#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
/* xPos (Sun et al. 2022, arXiv:2212.10554; microsoft/torchscale
 * xpos_relative_position.py): interleaved rotary pairs (x_2j, x_2j+1)
 * rotated by pos * theta_j and scaled by s = 2^((pos - c) * k_j), k_j =
 * +-log2(zeta_j)/scale_base (the host negates it for keys):
 *   y_2j   = (x_2j cos a - x_2j+1 sin a) * s
 *   y_2j+1 = (x_2j+1 cos a + x_2j sin a) * s,   a = fl(fl(pos) * theta_j).
 * fp32 angle and builtin sin/cos/exp2 (bound: src/pe/xpos.c). One
 * invocation per pair; x and y may alias (each invocation reads its pair
 * before writing it). */
#include "rl_push.h"
#include "rl_common.glsl"

layout(constant_id = 1) const uint32_t HEAD_DIM = 64;
layout(constant_id = 2) const uint32_t N_HEADS = 1;

layout(push_constant) uniform Push { rl_xpos_push p; } pc;

layout(std430, binding = 0) readonly buffer X { float x[]; };     /* [tokens][heads][head_dim] */
layout(std430, binding = 1) writeonly buffer Y { float y[]; };    /* same */
layout(std430, binding = 2) readonly buffer P { uint32_t pos[]; };/* [tokens] */
layout(std430, binding = 3) readonly buffer A { vec2 aux[]; };    /* [head_dim/2] (theta_j, k_j) */

void main()
{
    uint32_t i = RL_GROUP_ID * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (i >= pc.p.n_pairs)
        return;
    const uint32_t np = HEAD_DIM / 2u;
    uint32_t j = i % np;
    uint32_t row = i / np; /* token * heads + head */
    uint32_t p = pos[row / N_HEADS];
    vec2 tk = aux[j];
    float a = float(p) * tk.x;
    float s = exp2(float(int32_t(p) - pc.p.center) * tk.y);
    uint32_t o = row * HEAD_DIM + 2u * j;
    float xa = x[o], xb = x[o + 1u];
    float c = cos(a), sn = sin(a);
    y[o] = (xa * c - xb * sn) * s;
    y[o + 1u] = (xb * c + xa * sn) * s;
}
