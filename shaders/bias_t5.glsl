/* bias_t5.glsl — T5 relative-position-bucket logit bias (Raffel et al.
 * 2020; HF T5Attention._relative_position_bucket) for the attention engine
 * and bias_eval.comp (docs/attention.md "Bias hook"). With r = pos_j - pos_i:
 *   bidirectional: nb = num_buckets/2, bucket = (r > 0 ? nb : 0), n = |r|
 *   causal:        nb = num_buckets,   bucket = 0,               n = max(-r, 0)
 *   n < max_exact (= nb/2): bucket += n
 *   else bucket += max_exact + #{t : n >= thr[t]}
 * thr[t] is the smallest n whose logarithmic bucket is max_exact + 1 + t,
 * found on the host from the reference formula: integer compares instead of
 * an fp32 log, whose error would move n = 16, 32, 64 (exact ties for the
 * default 32/128) into the wrong bucket.
 * binding 8: params u32 {bidirectional, num_buckets, max_exact, n_thr, thr[n_thr]}
 * binding 9: bias [heads][num_buckets] f32. */
layout(std430, binding = 8) readonly buffer RlBiasT5Params { uint32_t rl_t5_param[]; };
layout(std430, binding = 9) readonly buffer RlBiasT5Table { float rl_t5_bias[]; };

float rl_bias(uint32_t h, uint32_t qtok, uint32_t ktok, int32_t qpos, int32_t kpos)
{
    int32_t r = kpos - qpos;
    uint32_t bucket = 0u, n;
    if (rl_t5_param[0] != 0u) {
        if (r > 0)
            bucket = rl_t5_param[1] / 2u;
        n = uint32_t(abs(r));
    } else {
        n = r < 0 ? uint32_t(-r) : 0u;
    }
    uint32_t max_exact = rl_t5_param[2];
    if (n < max_exact) {
        bucket += n;
    } else {
        uint32_t b = max_exact, n_thr = rl_t5_param[3];
        for (uint32_t t = 0u; t < n_thr; t++)
            b += n >= rl_t5_param[4u + t] ? 1u : 0u;
        bucket += b;
    }
    return rl_t5_bias[h * rl_t5_param[1] + bucket];
}
