/* bias_none.glsl — the zero logit bias (encodings without a bias term).
 * Contract: docs/attention.md / bias contract — defines exactly rl_bias.
 * RL_BIAS_IS_NONE lets kernels drop the bias path altogether. */
#define RL_BIAS_IS_NONE 1
float rl_bias(uint32_t h, uint32_t qtok, uint32_t ktok, int32_t qpos, int32_t kpos)
{
    return 0.0;
}
