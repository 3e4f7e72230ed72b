/* bias_alibi_test.glsl — TEMPORARY ALiBi-shaped bias used only to exercise the
 * attention engine's bias hook (the encoding registry owns the real
 * bias_alibi.glsl). bias(h, i, j) = -slope[h] * |kpos - qpos|, slopes from
 * binding 8 ([heads] f32, filled by the caller). */
layout(std430, binding = 8) readonly buffer RlBiasAlibiTestSlopes { float rl_alibi_test_slope[]; };

float rl_bias(uint32_t h, uint32_t qtok, uint32_t ktok, int32_t qpos, int32_t kpos)
{
    return -rl_alibi_test_slope[h] * float(abs(kpos - qpos));
}
