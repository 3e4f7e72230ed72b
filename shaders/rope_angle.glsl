/* rope_angle.glsl — the one place where a RoPE kernel turns a position and a
 * rotary pair into (cos, sin). The three precision modes (rl_push.h):
 *   fp32    angle = fp32(pos) * fp32(inv_freq), builtin sin/cos;
 *   table   (cos, sin) read from a host table computed in double;
 *   precise exact argument reduction in integer arithmetic + own
 *           polynomials, no builtins (below). */

/* fp32 mode: what most frameworks do; its error grows with |angle| (docs/rope.md). */
vec2 rope_cos_sin_fp32(uint32_t pos, float inv_freq)
{
    float a = float(pos) * inv_freq;
    return vec2(cos(a), sin(a));
}

/* precise mode.
 * turns = (lo, hi): frac(inv_freq / 2pi) as a 64-bit binary fraction, made on
 * the host in long double. The angle in turns is pos * turns mod 1, in
 * integer arithmetic, exact down to 2^-48 turn (pos < 2^32; the errors are
 * the fraction's rounding, pos * 2^-65 turns, 2^-38 rad at pos = 2^24, and
 * the bits below 2^-44 turn that r2 leaves out, < 2^-41 rad). It is reduced
 * to the nearest quarter turn q and a remainder r in [-1/8, 1/8) turn held
 * as a signed 32-bit fraction plus 12 more bits; r is turned into radians
 * with a Cody–Waite split of 2pi/2^32 = K1 + K2 (K1 has 6 significant bits, so
 * R1 * K1 is exact for R1 with <= 18): the only sizable rounding is the final
 * one, half an ulp of |x| <= pi/4 (2^-25). `precise` keeps the compiler from
 * re-associating the split. sin/cos of x in [-pi/4, pi/4] are Taylor
 * polynomials of degree 9 and 10 (truncation < 2^-29 and 2^-33 there),
 * evaluated by Horner; then the quadrant q rotates the result. */
const float RL_ROPE_K1 = 1.4551915228366852e-09;            /* 6.25 * 2^-32 */
const float RL_ROPE_K2 = 0.03318530717958623 * 2.3283064365386963e-10; /* (2pi - 6.25) * 2^-32 */
const float RL_ROPE_K12 = 6.283185307179586 * 5.684341886080802e-14;  /* 2pi * 2^-44 */

vec2 rope_cos_sin_precise(uint32_t pos, uvec2 turns)
{
    /* pos * turns.x in 16-bit halves (every partial sum < 2^32): the high
     * word and bits 16..31 of the low word. umulExtended would do it in one
     * call, but lavapipe's costs more than all the rest of this function. */
    uint32_t ph = pos >> 16, pl = pos & 0xffffu, lh = turns.x >> 16, ll = turns.x & 0xffffu;
    uint32_t m1 = ph * ll + ((pl * ll) >> 16);
    uint32_t m2 = pl * lh + (m1 & 0xffffu);
    uint32_t hi = ph * lh + (m1 >> 16) + (m2 >> 16) + pos * turns.y; /* mod 2^32: whole turns drop out */
    uint32_t q = (hi + 0x20000000u) >> 30;        /* nearest quarter turn */
    int32_t rem = int32_t(hi - (q << 30));        /* [-2^29, 2^29) in 2^-32 turns */
    precise float r1 = float(rem & ~0xfff);       /* exact: <= 18 significant bits */
    /* the low 12 bits of rem and 12 more below: 24 bits, exact in fp32 */
    precise float r2 = float((uint32_t(rem & 0xfff) << 12) | ((m2 & 0xffffu) >> 4));
    precise float x = r1 * RL_ROPE_K1 + (r1 * RL_ROPE_K2 + r2 * RL_ROPE_K12);
    float x2 = x * x;
    float s = x + (x * x2) * (-1.6666666666666666e-01 +
                   x2 * (8.3333333333333332e-03 +
                   x2 * (-1.9841269841269841e-04 + x2 * 2.7557319223985893e-06)));
    float c = 1.0 + x2 * (-0.5 +
                   x2 * (4.1666666666666664e-02 +
                   x2 * (-1.3888888888888889e-03 +
                   x2 * (2.4801587301587302e-05 + x2 * -2.7557319223985888e-07))));
    /* Quadrant q: (cos, sin) of x + q pi/2, without branches: odd q swaps
     * the pair, then the sign bits: cos negative for q = 1, 2, sin for 2, 3. */
    bool odd = (q & 1u) != 0u;
    uint32_t cb = floatBitsToUint(odd ? s : c) ^ (((q + 1u) & 2u) << 30);
    uint32_t sb = floatBitsToUint(odd ? c : s) ^ ((q & 2u) << 30);
    return vec2(uintBitsToFloat(cb), uintBitsToFloat(sb));
}
