/* attn_remap.glsl — position remapping's region rule (RL_ATTN_F_REMAP),
 * included by attn.comp after its per-invocation state.
 *
 * Self-Extend, ReRoPE and Leaky ReRoPE (docs/attention.md "Position
 * remapping") need two logit definitions per (i, j): the exact one (Q_a,
 * K_a rotated at the true positions) inside the neighbour window and the
 * remapped one (Q_b, K_b rotated at the method's positions, made by the
 * host) beyond it. The window is a test on the positions, exact integer
 * arithmetic (positions < 2^31, so the difference fits int32):
 *   near(i, j) = |pos_i - pos_j| < remap_window.
 * rl_remap_select(k) replaces the raw dot s[k] by the selected one; with
 * PAIRED, s2[k] becomes definition a's dot (KL of the remapped attention
 * against the same encoding at exact positions). */
bool rl_remap_near(int32_t qp, int32_t kp)
{
    return uint32_t(abs(qp - kp)) < pc.p.remap_window;
}

void rl_remap_select(uint32_t k)
{
    float sa = s[k];
    s[k] = rl_remap_near(qpos, kpos_s[k]) ? sa : s2[k];
    s2[k] = sa;
}
