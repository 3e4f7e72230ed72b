/* attn_softmax.glsl — online-softmax helpers of attn.comp.
 *
 * Running state over keys seen so far, relative to the running max m:
 *   l = sum_j exp(s_j - m),  a = sum_j exp(s_j - m) (s_j - m).
 * When the max grows to m' (delta = m - m' <= 0, alpha = exp(delta)):
 *   l' = alpha l,  a' = alpha (a + delta l)
 * so entropy H = log l - a / l at the end, without cancellation against m. */

/* Distance bucket: 0 -> 0, 1 -> 1, 2..3 -> 2, 4..7 -> 3, ... */
uint32_t rl_attn_bucket(uint32_t d)
{
    return d == 0u ? 0u : uint32_t(findMSB(d)) + 1u;
}

/* exp(m_old - m_new), with an empty history (m_old = -inf) giving 0. */
float rl_attn_alpha(float m_old, float m_new)
{
    return m_old == -1.0 / 0.0 ? 0.0 : exp(m_old - m_new);
}
