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
 * against the same encoding at exact positions).
 *
 * Dual Chunk Attention (RL_ATTN_F_DCA, remap_window = the chunk length c):
 * three definitions by chunk distance d = |floor(pos_i/c) - floor(pos_j/c)|
 * (integer divisions of non-negative positions): intra-chunk s (d = 0),
 * successive-chunk s2 (d = 1), inter-chunk s3 (d >= 2).
 *
 * The window's edge (RL_ATTN_F_REMAP_EDGE, STRING as its authors' code runs
 * it): the key at |pos_i - pos_j| = remap_window enters the softmax with
 * both definitions, the selected (remapped) one and the exact one, i.e.
 * with weight e^x + e^y. rl_remap_edge(k) folds the two terms into the
 * key's one logit log(e^x + e^y) = hi + log(1 + e^(lo - hi)) (hi = max,
 * lo = min; the log's argument lies in [1, 2]), on the scaled logits, so
 * every statistic after it (lse, O, target, buckets, argmax, KL) sees the
 * key's summed weight; the entropy is the keys' (attn_tol.c: the extra
 * rounding). */
bool rl_remap_near(int32_t qp, int32_t kp)
{
    return uint32_t(abs(qp - kp)) < pc.p.remap_window;
}

uint32_t rl_remap_chunk_distance(int32_t qp, int32_t kp)
{
    uint32_t qc_ = uint32_t(qp) / pc.p.remap_window, kc_ = uint32_t(kp) / pc.p.remap_window;
    return qc_ > kc_ ? qc_ - kc_ : kc_ - qc_;
}

void rl_remap_select(uint32_t k)
{
    float sa = s[k];
    if (DCA) {
        uint32_t dc = rl_remap_chunk_distance(qpos, kpos_s[k]);
        s[k] = dc == 0u ? sa : (dc == 1u ? s2[k] : s3[k]);
    } else {
        s[k] = rl_remap_near(qpos, kpos_s[k]) ? sa : s2[k];
    }
    if (EDGE)
        sx[k] = sa;
    s2[k] = sa;
}

/* After the scale and the temperature of s[k] (rl_mask): the edge key's
 * exact term added to its remapped one. sx[k] gets the same fp32 scale and
 * temperature multiplies as s[k]. */
void rl_remap_edge(uint32_t k)
{
    float x = sx[k] * pc.p.scale_a;
    if (TEMP)
        x *= tau;
    float hi = max(s[k], x), lo = min(s[k], x);
    bool edge = uint32_t(abs(qpos - kpos_s[k])) == pc.p.remap_window;
    s[k] = edge ? hi + log(1.0 + exp(lo - hi)) : s[k];
}
