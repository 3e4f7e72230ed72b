/* PyTorch's CPU cos/sin: SLEEF 3.5.1's xcosf_u1 / xsinf_u1 (sleefsimdsp.c)
 * with its double-float helpers (df.h) as the FMA builds define them
 * (ENABLE_FMA_SP, FULL_FP_ROUNDING: vmla = fmaf, vrint = rintf), written
 * from those sources operation by operation. ISO C11 (meson c_std=c11): GCC
 * contracts nothing, x86-64 evaluates float in float. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "pe/rope_sleef.h"
#include "rl_rempitab.h"

typedef struct {
    float x, y; /* value x + y, |y| <= ulp(x) / 2 */
} df;

static const uint32_t tab_bits[RL_REMPITAB_N] = {RL_REMPITAB_BITS};

static float bits_f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void rope_sleef_table(float *out)
{
    memcpy(out, tab_bits, sizeof tab_bits);
}

static uint32_t f_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* x with y's sign bit xor-ed in (vmulsign) */
static float mulsign(float x, float y)
{
    return bits_f(f_bits(x) ^ (f_bits(y) & 0x80000000u));
}

static df mk(float x, float y)
{
    df r = {x, y};
    return r;
}

static df add_ff(float x, float y) /* dfadd_vf2_vf_vf */
{
    float s = x + y;
    return mk(s, (x - s) + y);
}

static df add2_ff(float x, float y) /* dfadd2_vf2_vf_vf */
{
    float s = x + y, v = s - x;
    return mk(s, (x - (s - v)) + (y - v));
}

static df add_df_f(df x, float y) /* dfadd_vf2_vf2_vf */
{
    float s = x.x + y;
    return mk(s, ((x.x - s) + y) + x.y);
}

static df add2_df_f(df x, float y) /* dfadd2_vf2_vf2_vf */
{
    float s = x.x + y, v = s - x.x;
    float t = (x.x - (s - v)) + (y - v);
    return mk(s, t + x.y);
}

static df add_f_df(float x, df y) /* dfadd_vf2_vf_vf2 */
{
    float s = x + y.x;
    return mk(s, ((x - s) + y.x) + y.y);
}

static df add2_df_df(df x, df y) /* dfadd2_vf2_vf2_vf2 */
{
    float s = x.x + y.x, v = s - x.x;
    float t = (x.x - (s - v)) + (y.x - v);
    return mk(s, t + (x.y + y.y));
}

static df normalize(df t) /* dfnormalize_vf2_vf2 */
{
    float s = t.x + t.y;
    return mk(s, (t.x - s) + t.y);
}

static df mul_ff(float x, float y) /* dfmul_vf2_vf_vf: s and its exact error */
{
    float s = x * y;
    return mk(s, fmaf(x, y, -s));
}

static df mul_df_f(df x, float y) /* dfmul_vf2_vf2_vf */
{
    float s = x.x * y;
    return mk(s, fmaf(x.y, y, fmaf(x.x, y, -s)));
}

static df mul_df_df(df x, df y) /* dfmul_vf2_vf2_vf2 */
{
    float s = x.x * y.x;
    return mk(s, fmaf(x.x, y.y, fmaf(x.y, y.x, fmaf(x.x, y.x, -s))));
}

static float mul_f_df_df(df x, df y) /* dfmul_vf_vf2_vf2 */
{
    return fmaf(x.x, y.x, fmaf(x.y, y.x, x.x * y.y));
}

static df squ(df x) /* dfsqu_vf2_vf2 */
{
    float s = x.x * x.x;
    return mk(s, fmaf(x.x + x.x, x.y, fmaf(x.x, x.x, -s)));
}

/* rempisubf (FULL_FP_ROUNDING): x minus its nearest quarter, and the
 * quarter count's low bits */
static float rempisub(float x, int32_t *q)
{
    float y = rintf(x * 4.0f);
    *q = (int32_t)truncf(y - rintf(x) * 4.0f);
    return x - y * 0.25f;
}

/* rempif: a = (x + n pi/2) with the quadrant n in *q, as a double-float */
static df rempif(float a, int32_t *qo)
{
    int32_t ex = (int32_t)((f_bits(a) >> 23) & 0xffu) - 0x7f; /* vilogb2k */
    ex -= 25;
    int32_t q = ex > 90 - 25 ? -64 : 0;
    a = bits_f(f_bits(a) + ((uint32_t)q << 23)); /* vldexp3 */
    ex = ex < 0 ? 0 : ex;
    /* inf and NaN (ilogb 128) would read one row past the table (SLEEF's
     * gather does; the caller makes the result NaN whatever it reads) */
    ex = ex > (int32_t)RL_REMPITAB_N / 4 - 1 ? (int32_t)RL_REMPITAB_N / 4 - 1 : ex;
    ex *= 4;
    int32_t di;
    df x = mul_ff(a, bits_f(tab_bits[ex]));
    x.x = rempisub(x.x, &di);
    q = di;
    x = normalize(x);
    df y = mul_ff(a, bits_f(tab_bits[ex + 1]));
    x = add2_df_df(x, y);
    x.x = rempisub(x.x, &di);
    q += di;
    x = normalize(x);
    y = mul_df_f(mk(bits_f(tab_bits[ex + 2]), bits_f(tab_bits[ex + 3])), a);
    x = add2_df_df(x, y);
    x = normalize(x);
    x = mul_df_df(x, mk(3.1415927410125732422f * 2, -8.7422776573475857731e-08f * 2));
    if (fabsf(a) < 0.7f)
        x = mk(a, 0);
    *qo = q;
    return x;
}

#define PI_A2F 3.1414794921875f
#define PI_B2F 0.00011315941810607910156f
#define PI_C2F 1.9841872589410058936e-09f
#define TRIGRANGEMAX2F 125.0f
#define M_1_PIF ((float)0.318309886183790671537767526745028724)

/* the NaN bits sleef ORs into s.x for an infinite or NaN argument */
static float nan_if(float d, float v)
{
    return (isinf(d) || isnan(d)) ? bits_f(0xffffffffu) : v;
}

/* the shared tail: the polynomial on s = reduced argument, t = s */
static float poly(df s)
{
    df t = s;
    s = squ(s);
    float u = 2.6083159809786593541503e-06f;
    u = fmaf(u, s.x, -0.0001981069071916863322258f);
    u = fmaf(u, s.x, 0.00833307858556509017944336f);
    df x = add_f_df(1.0f, mul_df_df(add_ff(-0.166666597127914428710938f, u * s.x), s));
    return mul_f_df_df(t, x);
}

float rope_sleef_sinf(float d)
{
    int32_t q;
    df s;
    if (fabsf(d) < TRIGRANGEMAX2F) {
        float u = rintf(d * M_1_PIF);
        q = (int32_t)rintf(u);
        float v = fmaf(u, -PI_A2F, d);
        s = add2_ff(v, u * -PI_B2F);
        s = add_df_f(s, u * -PI_C2F);
    } else {
        int32_t qi;
        df r = rempif(d, &qi);
        q = qi & 3;
        q = q + q + (r.x > 0 ? 2 : 1);
        q >>= 2;
        df x = mk(mulsign(3.1415927410125732422f * -0.5f, r.x),
                  mulsign(-8.7422776573475857731e-08f * -0.5f, r.x));
        x = add2_df_df(r, x);
        if ((qi & 1) == 1)
            r = x;
        s = normalize(r);
        s.x = nan_if(d, s.x);
    }
    float u = poly(s);
    if ((q & 1) == 1)
        u = bits_f(f_bits(u) ^ 0x80000000u);
    if (d == 0 && signbit(d)) /* visnegzero */
        u = d;
    return u;
}

float rope_sleef_cosf(float d)
{
    int32_t q;
    df s;
    if (fabsf(d) < TRIGRANGEMAX2F) {
        float dq = fmaf(rintf(fmaf(d, M_1_PIF, -0.5f)), 2.0f, 1.0f);
        q = (int32_t)rintf(dq);
        s = add2_ff(d, dq * (-PI_A2F * 0.5f));
        s = add2_df_f(s, dq * (-PI_B2F * 0.5f));
        s = add2_df_f(s, dq * (-PI_C2F * 0.5f));
    } else {
        int32_t qi;
        df r = rempif(d, &qi);
        q = qi & 3;
        q = q + q + (r.x > 0 ? 8 : 7);
        q >>= 1;
        float y = r.x > 0 ? 0.0f : -1.0f;
        df x = mk(mulsign(3.1415927410125732422f * -0.5f, y),
                  mulsign(-8.7422776573475857731e-08f * -0.5f, y));
        x = add2_df_df(r, x);
        if ((qi & 1) == 0)
            r = x;
        s = normalize(r);
        s.x = nan_if(d, s.x);
    }
    float u = poly(s);
    if ((q & 2) == 0)
        u = bits_f(f_bits(u) ^ 0x80000000u);
    return u;
}
