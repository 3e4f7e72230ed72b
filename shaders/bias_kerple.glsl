/* bias_kerple.glsl — KERPLE logarithmic kernel bias (Chi et al. 2022) for
 * the attention engine and bias_eval.comp (bias contract, docs/attention.md):
 *   bias(h, i, j) = -r1_h * log(1 + r2_h * |pos_i - pos_j|)
 * binding 8: [heads][2] f32 {r1, r2} (src/pe/kerple.c). */
layout(std430, binding = 8) readonly buffer RlBiasKerple { float rl_kerple_r[]; };

float rl_bias(uint32_t h, uint32_t qtok, uint32_t ktok, int32_t qpos, int32_t kpos)
{
    float d = float(abs(qpos - kpos)); /* exact below 2^24 */
    return -rl_kerple_r[2u * h] * log(1.0 + rl_kerple_r[2u * h + 1u] * d);
}
