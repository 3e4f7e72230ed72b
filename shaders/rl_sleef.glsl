/* rl_sleef.glsl — PyTorch's CPU cos/sin on the device: SLEEF 3.5.1's
 * xcosf_u1 / xsinf_u1 (sleefsimdsp.c, double-float helpers of df.h, FMA
 * build), each argument on its own path. Written from SLEEF's source
 * separately from the CPU side (src/pe/rope_sleef.c); the two agree bit for
 * bit because Vulkan's fp32 add/sub/mul are correctly rounded and every
 * value here is `precise` (no contraction, no re-association). SLEEF's FMAs
 * are sl_fma, a correctly rounded a*b + c from those operations alone
 * (GLSL's fma() may be a multiply and an add: lavapipe's is); signs are moved as bits, never
 * through a signed zero (NIR may turn select(c, 0.0, -1.0) into -b2f(!c),
 * a -0.0). check's emu rows hold the device to that (bound 0).
 * RL_SLEEF_TAB(i): entry i of rl_rempitab.h (the host uploads it: a constant
 * array indexed at run time cost lavapipe a copy per invocation). */

/* Error-free transformations (fp32, no underflow or overflow in ropelab's
 * ranges): a + b = s + e exactly (Knuth's TwoSum), a * b = p + e exactly
 * (Dekker's product with Veltkamp's split, 2^12 + 1). */
vec2 sl_two_sum(float a, float b)
{
    precise float s = a + b;
    precise float bb = s - a;
    precise float e = (a - (s - bb)) + (b - bb);
    return vec2(s, e);
}

vec2 sl_two_prod(float a, float b)
{
    precise float ca = 4097.0 * a, cb = 4097.0 * b;
    precise float ah = ca - (ca - a), bh = cb - (cb - b);
    precise float al = a - ah, bl = b - bh;
    precise float p = a * b;
    precise float e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl;
    return vec2(p, e);
}

/* x + y rounded to odd: the nearest sum, moved one ulp toward the exact
 * value when that is inexact and the last bit even */
float sl_add_odd(float x, float y)
{
    vec2 t = sl_two_sum(x, y);
    uint b = floatBitsToUint(t.x);
    if (t.y != 0.0 && (b & 1u) == 0u)
        b = ((floatBitsToUint(t.y) ^ b) & 0x80000000u) == 0u ? b + 1u : b - 1u;
    return uintBitsToFloat(b);
}

/* fma(a, b, c) correctly rounded: Boldo and Melquiond's emulation (IEEE
 * Trans. Computers 57(4), 2008, "Emulation of FMA and correctly rounded
 * sums: proved algorithms using rounding to odd"): a b = uh + ul exactly,
 * c + uh = th + tl exactly, RN(th + RO(tl + ul)). */
float sl_fma(float a, float b, float c)
{
    vec2 u = sl_two_prod(a, b);
    vec2 t = sl_two_sum(c, u.x);
    precise float v = sl_add_odd(t.y, u.y);
    precise float r = t.x + v;
    return r;
}

/* a double-float x + y */
vec2 sl_add_ff(float x, float y)
{
    precise float s = x + y;
    precise float e = (x - s) + y;
    return vec2(s, e);
}

vec2 sl_add2_ff(float x, float y)
{
    precise float s = x + y;
    precise float v = s - x;
    precise float e = (x - (s - v)) + (y - v);
    return vec2(s, e);
}

vec2 sl_add_df_f(vec2 x, float y)
{
    precise float s = x.x + y;
    precise float e = ((x.x - s) + y) + x.y;
    return vec2(s, e);
}

vec2 sl_add2_df_f(vec2 x, float y)
{
    precise float s = x.x + y;
    precise float v = s - x.x;
    precise float t = (x.x - (s - v)) + (y - v);
    precise float e = t + x.y;
    return vec2(s, e);
}

vec2 sl_add_f_df(float x, vec2 y)
{
    precise float s = x + y.x;
    precise float e = ((x - s) + y.x) + y.y;
    return vec2(s, e);
}

vec2 sl_add2_df_df(vec2 x, vec2 y)
{
    precise float s = x.x + y.x;
    precise float v = s - x.x;
    precise float t = (x.x - (s - v)) + (y.x - v);
    precise float e = t + (x.y + y.y);
    return vec2(s, e);
}

vec2 sl_normalize(vec2 t)
{
    precise float s = t.x + t.y;
    precise float e = (t.x - s) + t.y;
    return vec2(s, e);
}

vec2 sl_mul_ff(float x, float y)
{
    precise float s = x * y;
    precise float e = sl_fma(x, y, -s);
    return vec2(s, e);
}

vec2 sl_mul_df_f(vec2 x, float y)
{
    precise float s = x.x * y;
    precise float e = sl_fma(x.y, y, sl_fma(x.x, y, -s));
    return vec2(s, e);
}

vec2 sl_mul_df_df(vec2 x, vec2 y)
{
    precise float s = x.x * y.x;
    precise float e = sl_fma(x.x, y.y, sl_fma(x.y, y.x, sl_fma(x.x, y.x, -s)));
    return vec2(s, e);
}

float sl_mul_f_df_df(vec2 x, vec2 y)
{
    precise float p = x.x * y.y;
    precise float r = sl_fma(x.x, y.x, sl_fma(x.y, y.x, p));
    return r;
}

vec2 sl_squ(vec2 x)
{
    precise float s = x.x * x.x;
    precise float d = x.x + x.x;
    precise float e = sl_fma(d, x.y, sl_fma(x.x, x.x, -s));
    return vec2(s, e);
}

/* rempisubf: x minus its nearest quarter; q the quarter count's low bits */
float sl_rempisub(float x, out int q)
{
    precise float x4 = x * 4.0;
    precise float y = roundEven(x4);
    precise float rx4 = roundEven(x) * 4.0;
    precise float d = y - rx4;
    q = int(trunc(d));
    precise float r = x - y * 0.25;
    return r;
}

float sl_tab(int i)
{
    return RL_SLEEF_TAB(i);
}

/* rempif: (reduced argument as a double-float, quadrant) for |a| >= 125 */
vec2 sl_rempif(float a, out int qo)
{
    int ex = int((floatBitsToUint(a) >> 23) & 0xffu) - 0x7f - 25;
    int q = ex > 90 - 25 ? -64 : 0;
    a = uintBitsToFloat(floatBitsToUint(a) + (uint(q) << 23));
    ex = min(max(ex, 0), int(RL_REMPITAB_N / 4u) - 1) * 4; /* inf, NaN: the last row (NaN anyway) */
    int di;
    vec2 x = sl_mul_ff(a, sl_tab(ex));
    x.x = sl_rempisub(x.x, di);
    q = di;
    x = sl_normalize(x);
    vec2 y = sl_mul_ff(a, sl_tab(ex + 1));
    x = sl_add2_df_df(x, y);
    x.x = sl_rempisub(x.x, di);
    q += di;
    x = sl_normalize(x);
    y = sl_mul_df_f(vec2(sl_tab(ex + 2), sl_tab(ex + 3)), a);
    x = sl_add2_df_df(x, y);
    x = sl_normalize(x);
    x = sl_mul_df_df(x, vec2(3.1415927410125732422 * 2.0, -8.7422776573475857731e-08 * 2.0));
    if (abs(a) < 0.7)
        x = vec2(a, 0.0);
    qo = q;
    return x;
}

const float SL_PI_A2 = 3.1414794921875;
const float SL_PI_B2 = 0.00011315941810607910156;
const float SL_PI_C2 = 1.9841872589410058936e-09;
const float SL_1_PI = 0.318309886183790671537767526745028724;

/* x with the sign bit sg (0 or 0x80000000) xor-ed in (vmulsign) */
float sl_mulsign(float x, uint sg)
{
    return uintBitsToFloat(floatBitsToUint(x) ^ sg);
}

/* the polynomial on the reduced argument s (sin on [-pi/2, pi/2]) */
float sl_poly(vec2 s)
{
    vec2 t = s;
    s = sl_squ(s);
    precise float u = 2.6083159809786593541503e-06;
    u = sl_fma(u, s.x, -0.0001981069071916863322258);
    u = sl_fma(u, s.x, 0.00833307858556509017944336);
    precise float us = u * s.x;
    vec2 x = sl_add_f_df(1.0, sl_mul_df_df(sl_add_ff(-0.166666597127914428710938, us), s));
    return sl_mul_f_df_df(t, x);
}

float rl_sleef_sinf(float d)
{
    int q;
    vec2 s;
    if (abs(d) < 125.0) {
        precise float dp = d * SL_1_PI;
        precise float u = roundEven(dp);
        q = int(u);
        precise float v = sl_fma(u, -SL_PI_A2, d);
        precise float ub = u * -SL_PI_B2, uc = u * -SL_PI_C2;
        s = sl_add2_ff(v, ub);
        s = sl_add_df_f(s, uc);
    } else {
        int qi;
        vec2 r = sl_rempif(d, qi);
        q = qi & 3;
        q = (q + q + (r.x > 0.0 ? 2 : 1)) >> 2;
        uint sg = floatBitsToUint(r.x) & 0x80000000u;
        vec2 x = vec2(sl_mulsign(3.1415927410125732422 * -0.5, sg),
                      sl_mulsign(-8.7422776573475857731e-08 * -0.5, sg));
        x = sl_add2_df_df(r, x);
        if ((qi & 1) == 1)
            r = x;
        s = sl_normalize(r);
        if (isinf(d) || isnan(d))
            s.x = uintBitsToFloat(0xffffffffu);
    }
    float u = sl_poly(s);
    if ((q & 1) == 1)
        u = uintBitsToFloat(floatBitsToUint(u) ^ 0x80000000u);
    if (floatBitsToUint(d) == 0x80000000u)
        u = d;
    return u;
}

float rl_sleef_cosf(float d)
{
    int q;
    vec2 s;
    if (abs(d) < 125.0) {
        precise float t = sl_fma(d, SL_1_PI, -0.5);
        precise float dq = sl_fma(roundEven(t), 2.0, 1.0);
        q = int(dq);
        precise float a = dq * (-SL_PI_A2 * 0.5), b = dq * (-SL_PI_B2 * 0.5),
                      c = dq * (-SL_PI_C2 * 0.5);
        s = sl_add2_ff(d, a);
        s = sl_add2_df_f(s, b);
        s = sl_add2_df_f(s, c);
    } else {
        int qi;
        vec2 r = sl_rempif(d, qi);
        q = qi & 3;
        q = (q + q + (r.x > 0.0 ? 8 : 7)) >> 1;
        uint sg = r.x > 0.0 ? 0u : 0x80000000u; /* sleef: mulsign by y = 0 or -1 */
        vec2 x = vec2(sl_mulsign(3.1415927410125732422 * -0.5, sg),
                      sl_mulsign(-8.7422776573475857731e-08 * -0.5, sg));
        x = sl_add2_df_df(r, x);
        if ((qi & 1) == 0)
            r = x;
        s = sl_normalize(r);
        if (isinf(d) || isnan(d))
            s.x = uintBitsToFloat(0xffffffffu);
    }
    float u = sl_poly(s);
    if ((q & 2) == 0)
        u = uintBitsToFloat(floatBitsToUint(u) ^ 0x80000000u);
    return u;
}
