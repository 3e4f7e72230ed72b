/* bias_xl.glsl — Transformer-XL relative position terms (Dai et al. 2019,
 * §3.3) for the attention engine and bias_eval.comp (docs/attention.md "Bias hook"):
 *   bias(h, i, j) = a_{i,h} . R_{pos_i - pos_j} + c_{j,h}
 * with, precomputed on the host per token (pe/xl.c, scale = 1/sqrt(head_dim)):
 *   a_{i,h} = scale * W_R,h^T (q_{i,h} + v_h)   [d_r]   (terms (b) and (d))
 *   c_{j,h} = scale * u_h . k_{j,kvh}                   (term (c))
 * and R_s = [sin(s w_0..w_{d_r/2-1}), cos(s w_0..)] (XL's concatenated
 * sinusoid), w_m = inv_freq[m], computed here in fp32.
 * binding 8: params u32 {d_r, heads, 0, 0}
 * binding 9: a [tokens][heads][d_r] f32
 * binding 10: c [tokens][heads] f32
 * binding 11: inv_freq [d_r/2] f32 */
layout(std430, binding = 8) readonly buffer RlBiasXlParams { uint32_t rl_xl_param[]; };
layout(std430, binding = 9) readonly buffer RlBiasXlA { float rl_xl_a[]; };
layout(std430, binding = 10) readonly buffer RlBiasXlC { float rl_xl_c[]; };
layout(std430, binding = 11) readonly buffer RlBiasXlFreq { float rl_xl_inv_freq[]; };

float rl_bias(uint32_t h, uint32_t qtok, uint32_t ktok, int32_t qpos, int32_t kpos)
{
    uint32_t dr = rl_xl_param[0], heads = rl_xl_param[1], hf = dr / 2u;
    float s = float(qpos - kpos);
    uint32_t base = (qtok * heads + h) * dr;
    float acc = 0.0;
    for (uint32_t m = 0u; m < hf; m++) {
        float a = s * rl_xl_inv_freq[m];
        acc += rl_xl_a[base + m] * sin(a) + rl_xl_a[base + hf + m] * cos(a);
    }
    return acc + rl_xl_c[ktok * heads + h];
}
