/* Framework emulation modes: the shader's dtype roundings against the CPU's
 * (a different method), the modes' device angles bit for bit, outputs
 * within their bounds, and the parameter validation naming the key. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check/chk.h"
#include "core/rl_util.h"
#include "pe/rope.h"
#include "pe/rope_sleef.h"
/* one device for the suite (rl_test.h) */
#define RL_TEST_SHARED_GPU
#include "rl_test.h"

static uint32_t f2u(float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    return u;
}

static float u2f(uint32_t u)
{
    float v;
    memcpy(&v, &u, 4);
    return v;
}

/* fp16 bits of a value the CPU rounded to fp16 (exactly representable). */
static uint32_t half_bits_of(float h)
{
    uint32_t u = f2u(h), sign = (u >> 16) & 0x8000u;
    float a = fabsf(h);
    if (isnan(h))
        return 0x7e00u;
    if (isinf(h))
        return sign | 0x7c00u;
    if (a < 0x1p-14f) /* subnormal half: a / 2^-24 is an integer */
        return sign | (uint32_t)(a * 0x1p24f);
    int e;
    float m = frexpf(a, &e); /* a = m 2^e, m in [0.5, 1) */
    return sign | ((uint32_t)(e - 1 + 15) << 10) | ((uint32_t)(m * 2048.0f) & 0x3ffu);
}

/* Every upper 16-bit pattern (all signs, exponents, top mantissa bits)
 * with low halves at and around every rounding boundary of bf16, fp16 and
 * TF32 (ties, ±1 around them, all ones, zero) plus random ones: 2^16 x 24
 * = 1.5M patterns, incl. zeros, subnormals, the overflow edges, inf, NaN. */
static uint32_t *pattern_sample(uint32_t *n_out)
{
    static const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff, 0x0fff,
                                    0x1000, 0x1001, 0x1fff, 0x2000, 0x2001, 0x3000, 0x5000,
                                    0x9000, 0xa000, 0xe000, 0xf000, 0x4000, 0xc000};
    const uint32_t nl = RL_ARRAY_LEN(lows) + 4;
    uint32_t n = 65536u * nl;
    uint32_t *p = malloc((size_t)n * 4);
    ck_assert_ptr_nonnull(p);
    rl_rng rng;
    rl_rng_seed(&rng, 7, "test/round");
    for (uint32_t hi = 0; hi < 65536u; hi++)
        for (uint32_t l = 0; l < nl; l++) {
            uint32_t low = l < RL_ARRAY_LEN(lows) ? lows[l]
                                                  : (uint32_t)(rl_rng_uniform(&rng) * 65536.0) & 0xffffu;
            p[hi * nl + l] = (hi << 16) | low;
        }
    *n_out = n;
    return p;
}

static const int round_dtypes[] = {RL_DTYPE_BF16, RL_DTYPE_FP16, RL_DTYPE_TF32};

START_TEST(shader_rounding_matches_cpu_bit_for_bit)
{
    int dt = round_dtypes[_i];
    uint32_t n;
    uint32_t *in = pattern_sample(&n), *out = malloc((size_t)n * 4);
    ck_assert_ptr_nonnull(out);
    rl_gpu g;
    rl_gpu_open(&g);
    rl_error err = {0};
    ck_assert_msg(rope_emu_gpu_round(&g.dev, dt, in, n, out, &err) == RL_OK, "%s", err.msg);
    size_t bad = 0;
    for (uint32_t i = 0; i < n; i++) {
        float c = rope_emu_round(dt, u2f(in[i]));
        uint32_t want = dt == RL_DTYPE_FP16 ? half_bits_of(c) : f2u(c);
        if (out[i] != want && bad++ < 5)
            fprintf(stderr, "%s: in 0x%08x device 0x%08x cpu 0x%08x\n", rope_dtype_name(dt), in[i],
                    out[i], want);
    }
    ck_assert_msg(bad == 0, "%zu of %u patterns differ", bad, n);
    free(in);
    free(out);
    rl_gpu_close(&g);
}
END_TEST

/* Arguments for the SLEEF tests: dense near 0, around the path switch at
 * 125, every binade up to 2^32 (ropelab's positions times inv_freq <= 1),
 * random bits of every exponent, and the special values. */
static float *trig_args(size_t *n_out)
{
    size_t n = 0, cap = 1u << 20;
    float *a = malloc(cap * sizeof *a);
    ck_assert_ptr_nonnull(a);
    for (int i = 0; i < 4096; i++)
        a[n++] = (float)i * 0.01f;
    for (int i = -2048; i < 2048; i++)
        a[n++] = nextafterf(125.0f, 0) + (float)i * 0x1p-16f;
    rl_rng rng;
    rl_rng_seed(&rng, 3, "test/sleef");
    while (n < cap - 8) {
        double u = rl_rng_uniform(&rng);
        if (n % 2) /* log-uniform |x| in [2^-20, 2^32), both signs */
            a[n++] = (float)(ldexp(1.0, -20 + (int)(u * 52)) * (1 + rl_rng_uniform(&rng))) *
                     (rl_rng_uniform(&rng) < 0.5 ? -1.0f : 1.0f);
        else /* any bits (NaN, inf, subnormals, huge) */
            a[n++] = u2f((uint32_t)(u * 4294967296.0));
    }
    a[n++] = 0.0f;
    a[n++] = -0.0f;
    a[n++] = INFINITY;
    a[n++] = -INFINITY;
    a[n++] = NAN;
    a[n++] = 0x1.fffffep127f;
    *n_out = n;
    return a;
}

/* SLEEF's u10 functions are within 1 ulp (its documented bound): the
 * transcription against double cos/sin, a method independent of it
 * (bit-exactness with libsleef itself: test_rope_frameworks.py). */
START_TEST(sleef_within_one_ulp_of_double)
{
    size_t n;
    float *a = trig_args(&n);
    size_t checked = 0;
    for (size_t i = 0; i < n; i++) {
        float x = a[i];
        float c = rope_sleef_cosf(x), s = rope_sleef_sinf(x);
        if (!isfinite(x)) {
            ck_assert_msg(isnan(c) && isnan(s), "cos/sin(%a) must be NaN", (double)x);
            continue;
        }
        double cr = cos((double)x), sr = sin((double)x);
        ck_assert_msg(fabs(c - cr) <= rl_ulp32(cr), "cos(%a) = %a, double %a", (double)x, (double)c, cr);
        ck_assert_msg(fabs(s - sr) <= rl_ulp32(sr) || fabs(s - sr) <= 0x1p-149,
                      "sin(%a) = %a, double %a", (double)x, (double)s, sr);
        checked++;
    }
    ck_assert_uint_gt(checked, n / 2);
    ck_assert(signbit(rope_sleef_sinf(-0.0f)) && rope_sleef_sinf(-0.0f) == 0);
    ck_assert(rope_sleef_cosf(0.0f) == 1.0f);
    free(a);
}
END_TEST

START_TEST(cpu_rounding_known_values)
{
    /* values worked out by hand */
    ck_assert_uint_eq(f2u(rope_emu_round(RL_DTYPE_BF16, u2f(0x3f808000u))), 0x3f800000u); /* tie to even */
    ck_assert_uint_eq(f2u(rope_emu_round(RL_DTYPE_BF16, u2f(0x3f818000u))), 0x3f820000u); /* tie up */
    ck_assert_uint_eq(f2u(rope_emu_round(RL_DTYPE_BF16, u2f(0x7f7fffffu))), 0x7f800000u); /* overflow */
    ck_assert(isnan(rope_emu_round(RL_DTYPE_BF16, NAN)));
    ck_assert(rope_emu_round(RL_DTYPE_FP16, 65519.0f) == 65504.0f);
    ck_assert(isinf(rope_emu_round(RL_DTYPE_FP16, 65520.0f)));
    ck_assert(rope_emu_round(RL_DTYPE_FP16, 0x1p-25f) == 0.0f);             /* tie to 0 */
    ck_assert(rope_emu_round(RL_DTYPE_FP16, 0x1.8p-25f) == 0x1p-24f);       /* above the tie */
    ck_assert(rope_emu_round(RL_DTYPE_FP16, 1.0f + 0x1p-11f) == 1.0f);      /* tie to even */
    ck_assert(rope_emu_round(RL_DTYPE_TF32, 1.0f + 0x1.8p-11f) == 1.0f + 0x1p-10f);
}
END_TEST

/* The device's SLEEF (rl_sleef.glsl, its FMAs emulated from + and *)
 * against the C transcription, bit for bit: hf fp32, one pair with
 * inv_freq 1 and x = (1, 0), so y = (cos p, sin p) at every position p in
 * [0, 2^32) the test picks (both reduction paths, every table row that
 * positions reach). */
START_TEST(sleef_device_matches_cpu_bit_for_bit)
{
    const uint32_t T = 1u << 16;
    rope_desc d = {.head_dim = 2, .precision = RL_ROPE_PREC_HF, .dtype = RL_DTYPE_FP32};
    rope_freqs f;
    rl_error err = {0};
    ck_assert_int_eq(rope_freqs_compute(&d, &f, &err), RL_OK);
    ck_assert(rope_emu_sleef(&f));
    float *x = malloc(2 * T * sizeof *x), *y = malloc(2 * T * sizeof *y),
          *ye = malloc(2 * T * sizeof *ye);
    uint32_t *pos = malloc(T * sizeof *pos);
    ck_assert(x && y && ye && pos);
    rl_rng rng;
    rl_rng_seed(&rng, 5, "test/sleef-gpu");
    for (uint32_t t = 0; t < T; t++) {
        x[2 * t] = 1;
        x[2 * t + 1] = 0;
        pos[t] = t < 4096 ? t : (uint32_t)ldexp(1.0 + rl_rng_uniform(&rng), (int)(rl_rng_uniform(&rng) * 32));
    }
    rl_gpu g;
    rl_gpu_open(&g);
    rope_kernel k;
    ck_assert_msg(rope_kernel_create(&g.dev, &k, &err) == RL_OK, "%s", err.msg);
    int guard_ok = 0;
    ck_assert_msg(rope_gpu_apply_dump(&g.dev, &k, &f, x, pos, T, 1, y, NULL, NULL, &guard_ok,
                                      &err) == RL_OK, "%s", err.msg);
    ck_assert(guard_ok);
    rope_emu_apply(&f, x, pos, T, 1, NULL, ye, NULL);
    size_t bad = 0;
    for (uint32_t i = 0; i < 2 * T; i++)
        if (f2u(y[i]) != f2u(ye[i]) && bad++ < 5)
            fprintf(stderr, "position %u %s: device %a cpu %a\n", pos[i / 2], i % 2 ? "sin" : "cos",
                    (double)y[i], (double)ye[i]);
    ck_assert_msg(bad == 0, "%zu of %u values differ", bad, 2 * T);
    /* and the CPU emulation is SLEEF's function, not double cos rounded */
    ck_assert(f2u(ye[2 * 126]) == f2u(rope_sleef_cosf(126.0f)));
    rope_kernel_destroy(&g.dev, &k);
    rl_gpu_close(&g);
    free(x);
    free(y);
    free(ye);
    free(pos);
}
END_TEST

START_TEST(emu_check_rows_pass_on_device)
{
    rl_gpu g;
    rl_gpu_open(&g);
    chk_report rep = {0};
    rl_error err = {0};
    chk_options opt = {.quick = _i == 0};
    ck_assert_msg(chk_rope_emu_cases(&g.dev, &opt, &rep, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_ge(rep.n_rows, 39);
    for (size_t i = 0; i < rep.n_rows; i++) {
        const chk_row *r = &rep.rows[i];
        ck_assert_msg(r->guard_ok, "%s %s wrote past its output", r->kernel, r->shape);
        ck_assert_msg(r->stats.pass, "%s %s: %zu over bound, first %zu, max abs %g, worst %g of bound",
                      r->kernel, r->shape, r->stats.n_over, r->stats.first_bad, r->stats.max_abs,
                      r->stats.worst_ratio);
        /* hf and vllm with SLEEF's cos/sin (not hf-devtrig): device = CPU emulation */
        if (strstr(r->kernel, "/emu") && (strncmp(r->kernel, "emu/hf/", 7) == 0 ||
                                          strncmp(r->kernel, "emu/vllm/", 9) == 0))
            ck_assert_msg(r->stats.max_abs == 0, "%s %s: SLEEF output off by %g", r->kernel,
                          r->shape, r->stats.max_abs);
        /* every angle row except ggml-vulkan's is bit-exact */
        if (strstr(r->kernel, "/angle") && !strstr(r->kernel, "ggml-vulkan"))
            ck_assert_msg(r->stats.max_abs == 0, "%s %s angle off by %g", r->kernel, r->shape,
                          r->stats.max_abs);
    }
    chk_report_free(&rep);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(hf_bf16_output_is_bf16_and_cos_rounded)
{
    /* One pair at position 1 with x = (1, 0): y_a = bf16(cos(inv_freq_0 * 1)) = bf16(cos 1). */
    rl_error err = {0};
    rope_desc d = {.head_dim = 2, .precision = RL_ROPE_PREC_HF, .dtype = RL_DTYPE_BF16};
    rope_freqs f;
    ck_assert_int_eq(rope_freqs_compute(&d, &f, &err), RL_OK);
    float x[2] = {1, 0}, y[2];
    uint32_t pos = 1;
    rope_emu_apply(&f, x, &pos, 1, 1, NULL, y, NULL);
    float c = (float)cos(1.0), s = (float)sin(1.0);
    ck_assert(y[0] == rope_emu_round(RL_DTYPE_BF16, c));
    ck_assert(y[1] == rope_emu_round(RL_DTYPE_BF16, s));
    ck_assert_uint_eq(f2u(y[0]) & 0xffffu, 0);
}
END_TEST

START_TEST(ggml_cpu_angle_is_repeated_product)
{
    rl_error err = {0};
    rope_desc d = {.head_dim = 8, .precision = RL_ROPE_PREC_GGML_CPU};
    rope_freqs f;
    ck_assert_int_eq(rope_freqs_compute(&d, &f, &err), RL_OK);
    float ts = powf(10000.0f, -2.0f / 8.0f);
    float th = 1000.0f;
    th *= ts;
    th *= ts;
    th *= ts;
    ck_assert(rope_emu_angle(&f, 1000, 3) == th);
}
END_TEST

/* ggml's rope_yarn (ggml-cpu ops.cpp rope_yarn / rope_yarn_ramp /
 * ggml_rope_yarn_corr_dims), by hand for yarn factor 4, d 128, base 10000,
 * n_ctx_orig 4096: corr dims floor(20.94) = 20 and ceil(45.03) = 46 (see
 * test_rope_scaling), freq_scale 1/4, ramp_mix 1 up to pair 20 (extrapolate),
 * 0 from 46 (interpolate), 1 - 13/26 = 0.5 at 33; mscale 1 + 0.1 logf(4);
 * the angle ti (1 - rm) + te rm with te ggml-cpu's repeated product. */
START_TEST(ggml_yarn_follows_rope_yarn_by_hand)
{
    rl_error err = {0};
    rope_desc d = {.head_dim = 128, .precision = RL_ROPE_PREC_GGML_CPU,
                   .rope_type = ROPE_TYPE_YARN, .factor = 4,
                   .original_max_position_embeddings = 4096};
    rope_freqs f;
    ck_assert_int_eq(rope_freqs_compute(&d, &f, &err), RL_OK);
    float fs = 0, rm[64], ms = 0;
    ck_assert_int_eq(rope_emu_yarn(&f, &fs, rm, &ms), 1);
    ck_assert(fs == 0.25f);
    ck_assert(ms == 1.0f * (1.0f + 0.1f * logf(4.0f)));
    for (int j = 0; j <= 20; j++)
        ck_assert_msg(rm[j] == 1.0f, "pair %d: %g", j, rm[j]);
    for (int j = 46; j < 64; j++)
        ck_assert_msg(rm[j] == 0.0f, "pair %d: %g", j, rm[j]);
    ck_assert(rm[33] == 0.5f);
    ck_assert(rm[21] == 1.0f - 1.0f / 26.0f);
    float ts = powf(10000.0f, -2.0f / 128.0f), te = 1000.0f;
    for (int k = 0; k < 33; k++)
        te *= ts;
    float ti = 0.25f * te;
    ck_assert(rope_emu_angle(&f, 1000, 33) == ti * (1.0f - 0.5f) + te * 0.5f);
    /* linear: ext_factor 0, theta = freq_scale * theta_extrap, mscale 1 */
    rope_desc l = {.head_dim = 128, .precision = RL_ROPE_PREC_GGML_VULKAN,
                   .rope_type = ROPE_TYPE_LINEAR, .factor = 4};
    ck_assert_int_eq(rope_freqs_compute(&l, &f, &err), RL_OK);
    ck_assert_int_eq(rope_emu_yarn(&f, &fs, rm, &ms), 1);
    ck_assert(fs == 0.25f && ms == 1.0f && rm[0] == 0.0f && rm[63] == 0.0f);
    ck_assert(rope_emu_angle(&f, 1000, 5) == 0.25f * (1000.0f * powf(ts, 5.0f)));
    /* other modes and types: not rope_yarn */
    rope_desc h = {.head_dim = 128, .precision = RL_ROPE_PREC_HF, .rope_type = ROPE_TYPE_LINEAR,
                   .factor = 4};
    ck_assert_int_eq(rope_freqs_compute(&h, &f, &err), RL_OK);
    ck_assert_int_eq(rope_emu_yarn(&f, NULL, NULL, &ms), 0);
    ck_assert(ms == 1.0f);
}
END_TEST

static const struct {
    const char *json, *needle;
} bad_params[] = {
    {"{\"head_dim\": 64, \"dtype\": \"bf16\"}", "dtype bf16 needs an emulation precision"},
    {"{\"head_dim\": 64, \"dtype\": \"int8\"}", "dtype must be"},
    {"{\"head_dim\": 64, \"precision\": \"ggml\"}", "precision must be"},
    {"{\"head_dim\": 64, \"precision\": \"vllm\", \"tf32\": true}", "tf32 applies to precision hf"},
    {"{\"head_dim\": 64, \"precision\": \"ggml-cpu\", \"inv_freq_dtype\": \"bf16\"}", "inv_freq_dtype applies"},
    {"{\"head_dim\": 64, \"precision\": \"ggml-cpu\", \"dtype\": \"bf16\"}", "dtype bf16: precision ggml-cpu"},
    {"{\"head_dim\": 64, \"precision\": \"cuda-fast\", \"rope_type\": \"linear\", \"factor\": 2}", "rope_type default only"},
    {"{\"head_dim\": 64, \"precision\": \"hf\", \"tf32\": 1}", "tf32 must be true or false"},
    {"{\"head_dim\": 64, \"trig\": \"device\"}", "trig applies to precision hf and vllm only (not fp32)"},
    {"{\"head_dim\": 64, \"precision\": \"ggml-cpu\", \"trig\": \"sleef\"}", "trig applies to precision hf and vllm only"},
    {"{\"head_dim\": 64, \"precision\": \"hf\", \"trig\": \"glibc\"}", "trig must be"},
    {"{\"head_dim\": 64, \"precision\": \"ggml-cpu\", \"rope_type\": \"llama3\", \"factor\": 8, "
     "\"low_freq_factor\": 1, \"high_freq_factor\": 4, \"original_max_position_embeddings\": 8192}",
     "precision ggml-cpu emulates rope_type default, linear and yarn only (not llama3)"},
    {"{\"head_dim\": 64, \"precision\": \"ggml-vulkan\", \"rope_type\": \"yarn\", \"factor\": 4, "
     "\"original_max_position_embeddings\": 4096, \"truncate\": false}",
     "ggml_rope_yarn_corr_dims always floors and ceils"},
    {"{\"head_dim\": 64, \"precision\": \"cuda-fast\", \"rope_type\": \"yarn\", \"factor\": 4, "
     "\"original_max_position_embeddings\": 4096}", "precision cuda-fast emulates rope_type default only"},
};

START_TEST(bad_emulation_params_name_the_key)
{
    rl_error err = {0};
    json_error_t je;
    json_t *obj = json_loads(bad_params[_i].json, 0, &je);
    ck_assert_ptr_nonnull(obj);
    rope_desc d = {0};
    rope_freqs f;
    rl_status st = rope_desc_from_json(&d, obj, &err);
    if (st == RL_OK)
        st = rope_freqs_compute(&d, &f, &err);
    json_decref(obj);
    ck_assert_int_ne(st, RL_OK);
    ck_assert_msg(strstr(err.msg, bad_params[_i].needle), "'%s' lacks '%s'", err.msg,
                  bad_params[_i].needle);
}
END_TEST

int main(void)
{
    rl_test_pin_driver();
    Suite *s = suite_create("rope_emu");
    TCase *cpu = tcase_create("cpu");
    tcase_add_test(cpu, cpu_rounding_known_values);
    tcase_add_test(cpu, sleef_within_one_ulp_of_double);
    tcase_add_test(cpu, hf_bf16_output_is_bf16_and_cos_rounded);
    tcase_add_test(cpu, ggml_cpu_angle_is_repeated_product);
    tcase_add_test(cpu, ggml_yarn_follows_rope_yarn_by_hand);
    tcase_add_loop_test(cpu, bad_emulation_params_name_the_key, 0, RL_ARRAY_LEN(bad_params));
    suite_add_tcase(s, cpu);
    rl_test_require_vulkan("rope_emu");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, shader_rounding_matches_cpu_bit_for_bit, 0, 3);
    tcase_add_loop_test(tc, emu_check_rows_pass_on_device, 0, 2);
    tcase_add_test(tc, sleef_device_matches_cpu_bit_for_bit);
    suite_add_tcase(s, tc);
    return rl_test_run(s);
}
