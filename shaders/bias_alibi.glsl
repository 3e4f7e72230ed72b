/* bias_alibi.glsl — ALiBi (Press et al. 2022) logit bias for the attention
 * engine and bias_eval.comp (docs/attention.md "Bias hook").
 *   bias(h, i, j) = -slope_h * (pos_i - pos_j)      causal
 *                 = -slope_h * |pos_i - pos_j|      bidirectional
 * binding 8: params [4] u32 {bidirectional, heads, 0, 0}
 * binding 9: slopes [heads] f32 (host: the paper's geometric sequence). */
layout(std430, binding = 8) readonly buffer RlBiasAlibiParams { uint32_t rl_alibi_param[]; };
layout(std430, binding = 9) readonly buffer RlBiasAlibiSlopes { float rl_alibi_slope[]; };

float rl_bias(uint32_t h, uint32_t qtok, uint32_t ktok, int32_t qpos, int32_t kpos)
{
    int32_t d = qpos - kpos; /* i - j; exact in fp32 below 2^24 */
    if (rl_alibi_param[0] != 0u)
        d = abs(d);
    return -rl_alibi_slope[h] * float(d);
}
