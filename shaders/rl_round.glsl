/* rl_round.glsl — dtype roundings on fp32 bit patterns, round to nearest
 * even, done in integer arithmetic so no device float behaviour (denormal
 * flushing, NaN canonicalisation) enters. The CPU counterpart (a different
 * method, in double with rint) is rope_emu_round in src/pe/rope_emu.c;
 * tests/test_rope_emu.c compares the two over a structured sample.
 *   bf16: keep the top 16 bits; NaN -> 0x7fc0 (as PyTorch's c10::BFloat16);
 *         overflow carries into the exponent and gives inf;
 *   tf32: keep 10 mantissa bits (sign, 8-bit exponent), NaN -> 0x7fc00000;
 *   fp16: IEEE binary16 with subnormals; >= 65520 -> inf, NaN -> 0x7e00. */

uint32_t rl_bf16_bits(uint32_t u) /* -> fp32 bits of the bf16 value */
{
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return 0x7fc00000u;
    u += 0x7fffu + ((u >> 16) & 1u);
    return u & 0xffff0000u;
}

uint32_t rl_tf32_bits(uint32_t u)
{
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return 0x7fc00000u;
    u += 0xfffu + ((u >> 13) & 1u);
    return u & 0xffffe000u;
}

uint32_t rl_fp16_bits(uint32_t u) /* -> the 16 half bits */
{
    uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return 0x7e00u;
    if (a >= 0x477ff000u)                   /* >= 65520: rounds to inf */
        return sign | 0x7c00u;
    if (a >= 0x38800000u) {                 /* normal half: >= 2^-14 */
        uint32_t r = a + 0xfffu + ((a >> 13) & 1u);
        return sign | ((r - 0x38000000u) >> 13);
    }
    uint32_t e = a >> 23;                   /* subnormal half or zero */
    if (e < 102u)                           /* < 2^-25: rounds to 0 */
        return sign;
    uint32_t m = (a & 0x7fffffu) | 0x800000u, sh = 126u - e; /* 14..24 */
    return sign | ((m + (1u << (sh - 1u)) - 1u + ((m >> sh) & 1u)) >> sh);
}

uint32_t rl_fp16_to_f32_bits(uint32_t h)
{
    uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu)
        return sign | 0x7f800000u | (m << 13);
    if (e != 0u)
        return sign | ((e + 112u) << 23) | (m << 13);
    /* subnormal: m * 2^-24, exact in fp32 (a power-of-two scaling) */
    return sign | floatBitsToUint(float(m) * 5.9604644775390625e-08);
}

/* v rounded to dtype dt (RL_DTYPE_*), as an fp32 value. */
float rl_round_dt(float v, uint32_t dt)
{
    uint32_t u = floatBitsToUint(v);
    if (dt == RL_DTYPE_BF16)
        return uintBitsToFloat(rl_bf16_bits(u));
    if (dt == RL_DTYPE_TF32)
        return uintBitsToFloat(rl_tf32_bits(u));
    if (dt == RL_DTYPE_FP16)
        return uintBitsToFloat(rl_fp16_to_f32_bits(rl_fp16_bits(u)));
    return v;
}
