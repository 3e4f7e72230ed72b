#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
/* Additive absolute position encodings on the q/k vectors:
 *   MODE 0 (identity):  y = x                                  (nope)
 *   MODE 1 (sinusoid):  y = x + alpha * PE(p, d), PE(p, 2i) = sin(p w_i),
 *                       PE(p, 2i+1) = cos(p w_i), w_i = inv_freq[i]
 *                       (Vaswani et al. 2017), fp32 angle, builtin sin/cos
 *   MODE 2 (table):     y = x + alpha * table[p'][d]           (learned)
 *                       p' = p below table_rows; beyond it POLICY 2 wraps
 *                       (p mod rows), otherwise clamps to rows-1 (the host
 *                       refuses such positions first under beyond=error).
 * One invocation per element of the [tokens][heads][head_dim] tensor; the
 * same PE row is added to every head. */
#include "rl_push.h"
#include "rl_common.glsl"

layout(constant_id = 1) const uint32_t MODE = 0;
layout(constant_id = 2) const uint32_t HEAD_DIM = 64;
layout(constant_id = 3) const uint32_t N_HEADS = 1;
layout(constant_id = 4) const uint32_t POLICY = 0; /* 0 error, 1 clamp, 2 wrap */

layout(push_constant) uniform Push { rl_pe_add_push p; } pc;

layout(std430, binding = 0) readonly buffer X { float x[]; };     /* [tokens][heads][head_dim] */
layout(std430, binding = 1) writeonly buffer Y { float y[]; };    /* same */
layout(std430, binding = 2) readonly buffer P { uint32_t pos[]; };/* [tokens] */
layout(std430, binding = 3) readonly buffer A { float aux[]; };   /* see above */

void main()
{
    uint32_t i = RL_GROUP_ID * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (i >= pc.p.n_elems)
        return;
    uint32_t d = i % HEAD_DIM;
    uint32_t tok = i / (HEAD_DIM * N_HEADS);
    float v = x[i];
    if (MODE == 1u) {
        float a = float(pos[tok]) * aux[d / 2u];
        float pe = (d & 1u) == 0u ? sin(a) : cos(a);
        v = v + pc.p.alpha * pe;
    } else if (MODE == 2u) {
        uint32_t p = pos[tok];
        uint32_t rows = pc.p.table_rows;
        if (p >= rows)
            p = POLICY == 2u ? p % rows : rows - 1u;
        v = v + pc.p.alpha * aux[p * HEAD_DIM + d];
    }
    y[i] = v;
}
