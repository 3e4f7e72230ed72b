/* RoPE on the device vs the CPU reference, under the validation layer. */
#include <math.h>
#include <string.h>

#include "check/chk.h"
#include "core/rl_util.h"
#include "pe/rope.h"
/* one device for the suite (rl_test.h) */
#define RL_TEST_SHARED_GPU
#include "rl_test.h"

START_TEST(check_cases_pass_on_device)
{
    /* The same table `ropelab check` runs: odd token counts, 1 and 8 heads,
     * head_dim 64/128, partial rotary, both layouts, positions up to 2^20.
     * The bound is derived in chk_run.c (fp32 angle rounding + the Vulkan
     * 2^-11 sin/cos bound + 4 ulp of the pair magnitude). */
    rl_gpu g;
    rl_gpu_open(&g);
    chk_report rep = {0};
    rl_error err = {0};
    chk_options opt = {0};
    ck_assert_msg(chk_rope_cases(&g.dev, &opt, &rep, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_ge(rep.n_rows, 16);
    size_t n_vllm = 0;
    for (size_t i = 0; i < rep.n_rows; i++) {
        const chk_row *r = &rep.rows[i];
        n_vllm += strstr(r->kernel, "/vllm") != NULL;
        ck_assert_msg(!r->skipped, "%s %s skipped", r->kernel, r->shape);
        ck_assert_msg(r->guard_ok, "%s %s wrote past its output", r->kernel, r->shape);
        ck_assert_msg(r->stats.pass, "%s %s: %zu over bound, first %zu, max abs %g", r->kernel,
                      r->shape, r->stats.n_over, r->stats.first_bad, r->stats.max_abs);
        ck_assert_uint_eq(r->stats.n_nonfinite, 0);
    }
    /* vLLM's readings: 4 settings x 2 layouts x 3 precisions */
    ck_assert_uint_eq(n_vllm, 24);
    chk_report_free(&rep);
    rl_gpu_close(&g);
}
END_TEST

/* Shapes that take the scalar (non-vec4) path and the vec4 path, with small
 * positions where fp32 is accurate: error must then be at rounding level. */
static const uint32_t odd_shapes[][4] = {
    /* tokens, heads, head_dim, rotary_dim */
    {3, 2, 6, 6},     /* head_dim % 4 != 0: scalar path */
    {5, 3, 64, 20},   /* rotary_dim % 8 != 0: scalar path, pass-through tail */
    {66, 1, 16, 8},   /* vec4 path, tail */
    {1, 1, 2, 2},     /* smallest head */
    /* vec4 path in chunks of consecutive quads / pass-through vec4s (on a
     * CPU device 4 or the largest divisor below, rope_gpu.c vec4_chunks)
     * and blocks of tokens / heads with a partial last block: */
    {37, 1, 48, 24},  /* 3 quads and 6 pass-through vec4s per row: chunks of 3 */
    {70, 3, 56, 32},  /* 4 quads, 6 pass-through vec4s (chunks of 3); 3 heads x 10 tokens */
    {33, 6, 128, 96}, /* 12 quads, 8 pass-through vec4s; 6 heads x 5 tokens */
};

START_TEST(small_positions_match_reference_closely)
{
    const uint32_t *s = odd_shapes[_i / 2];
    int layout = _i % 2;
    rl_gpu g;
    rl_gpu_open(&g);
    rl_error err = {0};
    rope_desc d = {.head_dim = s[2], .rotary_dim = s[3], .layout = layout};
    rope_freqs f;
    ck_assert_int_eq(rope_freqs_compute(&d, &f, &err), RL_OK);
    size_t n = (size_t)s[0] * s[1] * s[2];
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *ref = malloc(n * sizeof *ref);
    uint32_t *pos = malloc(s[0] * sizeof *pos);
    rl_rng rng;
    rl_rng_seed(&rng, 3, "small");
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rl_rng_normal(&rng);
    for (uint32_t t = 0; t < s[0]; t++)
        pos[t] = (t * 7u) % 3u; /* 0..2: angles <= 2 rad, inside [-pi, pi] */
    rope_kernel k;
    ck_assert_int_eq(rope_kernel_create(&g.dev, &k, &err), RL_OK);
    int guard_ok = 0;
    ck_assert_msg(rope_gpu_apply(&g.dev, &k, &f, x, pos, s[0], s[1], y, NULL, &guard_ok, &err) == RL_OK,
                  "%s", err.msg);
    ck_assert(guard_ok);
    rope_ref_apply(&f, x, pos, s[0], s[1], ref);
    for (size_t i = 0; i < n; i++) {
        /* |phi| <= 2: fp32 angle error <= 2 * 2^-23, sin/cos <= 2^-11 (spec);
         * pair magnitudes of N(0,1) draws stay below ~12. */
        ck_assert_msg(fabs(y[i] - ref[i]) <= 12 * (2 * 0x1p-23 + 0x1p-11),
                      "element %zu: %.9g vs %.9g", i, y[i], ref[i]);
        if ((i % s[2]) >= s[3])
            ck_assert_msg(memcmp(&y[i], &x[i], 4) == 0, "pass-through %zu changed", i);
    }
    rope_kernel_destroy(&g.dev, &k);
    free(x);
    free(y);
    free(ref);
    free(pos);
    rl_gpu_close(&g);
}
END_TEST

/* dynamic_mode cache_consistent on the device: tokens in any order (and
 * repeated positions), each rotated with its own length max(p+1, P). The
 * device output is within the kernel's bound of the per-token reference;
 * prompt tokens (p < P) match the static rotation at length P and decoded
 * ones the static rotation at p + 1 (rope_freqs_compute with that seq_len,
 * an independent route to the same formula); the one-length (recompute)
 * rotation is far outside the bound. Shapes: vec4 (D 16) and scalar (D 6). */
START_TEST(cache_consistent_gives_each_token_its_own_rotation_on_device)
{
    static const uint32_t shapes[2][2] = {{16, 16}, {6, 6}}; /* head_dim, rotary_dim */
    const uint32_t D = shapes[_i % 2][0];
    const int prec = _i / 2 ? RL_ROPE_PREC_PRECISE : RL_ROPE_PREC_FP32;
    enum { T = 10, H = 3, P = 100 };
    static const uint32_t pos[T] = {500, 3, 500, 99, 100, 4000, 101, 0, 2047, 98};
    rl_gpu g;
    rl_gpu_open(&g);
    rl_error err = {0};
    rope_desc d = {.head_dim = D, .rotary_dim = shapes[_i % 2][1], .precision = prec,
                   .rope_type = ROPE_TYPE_DYNAMIC_YARN, .original_max_position_embeddings = 64,
                   .seq_len = 4096, .dynamic_mode = ROPE_DYN_CACHE_CONSISTENT, .prompt_len = P};
    rope_freqs f, rec;
    ck_assert_int_eq(rope_freqs_compute(&d, &f, &err), RL_OK);
    rope_desc dr = d;
    dr.dynamic_mode = ROPE_DYN_RECOMPUTE;
    dr.prompt_len = 0;
    ck_assert_int_eq(rope_freqs_compute(&dr, &rec, &err), RL_OK);
    size_t n = (size_t)T * H * D;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *ref = malloc(n * sizeof *ref), *bound = malloc(n * sizeof *bound),
           *scale = malloc(n * sizeof *scale), *one = malloc(H * D * sizeof *one);
    rl_rng rng;
    rl_rng_seed(&rng, 11, "test/rope/cache");
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rl_rng_normal(&rng);
    rope_kernel k;
    ck_assert_int_eq(rope_kernel_create(&g.dev, &k, &err), RL_OK);
    int guard_ok = 0;
    ck_assert_msg(rope_gpu_apply(&g.dev, &k, &f, x, pos, T, H, y, NULL, &guard_ok, &err) == RL_OK,
                  "%s", err.msg);
    ck_assert(guard_ok);
    rope_ref_apply(&f, x, pos, T, H, ref);
    rope_error_bounds(&f, x, pos, T, H, bound, scale);
    vf_stats st;
    vf_compare(y, ref, bound, scale, n, VF_GATE_ELEM, &st);
    ck_assert_msg(st.pass, "device vs per-token reference: %zu over, worst %g", st.n_over,
                  st.worst_ratio);
    for (uint32_t t = 0; t < T; t++) {
        rope_desc ds = dr; /* the static rotation at this token's length */
        ds.seq_len = pos[t] + 1 > P ? pos[t] + 1 : P;
        rope_freqs fs;
        ck_assert_int_eq(rope_freqs_compute(&ds, &fs, &err), RL_OK);
        rope_ref_apply(&fs, x + (size_t)t * H * D, &pos[t], 1, H, one);
        for (uint32_t i = 0; i < H * D; i++) {
            size_t e = (size_t)t * H * D + i;
            ck_assert_msg(fabs(y[e] - one[i]) <= bound[e], "token %u (pos %u) elem %u: %.9g vs %.9g",
                          t, pos[t], i, y[e], one[i]);
        }
    }
    /* the recompute reference (every token at 4096) is not what the device did */
    rope_ref_apply(&rec, x, pos, T, H, ref);
    vf_compare(y, ref, bound, scale, n, VF_GATE_ELEM, &st);
    ck_assert(!st.pass);
    ck_assert(st.worst_ratio > 100);
    rope_kernel_destroy(&g.dev, &k);
    free(x), free(y), free(ref), free(bound), free(scale), free(one);
    rl_gpu_close(&g);
}
END_TEST

/* A NaN fed to the kernel comes out NaN on the device and in the double
 * reference: NaN never equals NaN, so check's verdict fails the row and
 * reports the reference NaN; the same tensor without it passes. */
START_TEST(check_fails_nan_against_nan_and_passes_the_clean_tensor)
{
    rl_gpu g;
    rl_gpu_open(&g);
    rl_error err = {0};
    rope_desc d = {.head_dim = 64};
    rope_freqs f;
    ck_assert_int_eq(rope_freqs_compute(&d, &f, &err), RL_OK);
    enum { T = 9, H = 2 };
    size_t n = (size_t)T * H * 64;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *ref = malloc(n * sizeof *ref), *bound = malloc(n * sizeof *bound),
           *scale = malloc(n * sizeof *scale);
    uint32_t pos[T];
    rl_rng rng;
    rl_rng_seed(&rng, 4, "test/rope/nan");
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rl_rng_normal(&rng);
    for (uint32_t t = 0; t < T; t++)
        pos[t] = 1000 * t;
    rope_kernel k;
    ck_assert_int_eq(rope_kernel_create(&g.dev, &k, &err), RL_OK);
    chk_report rep = {0};
    for (int inject = 0; inject < 2; inject++) {
        if (inject)
            x[5 * H * 64 + 7] = NAN;
        chk_row row = {0};
        ck_assert_msg(rope_gpu_apply(&g.dev, &k, &f, x, pos, T, H, y, NULL, &row.guard_ok, &err) ==
                          RL_OK, "%s", err.msg);
        rope_ref_apply(&f, x, pos, T, H, ref);
        rope_error_bounds(&f, x, pos, T, H, bound, scale);
        vf_compare(y, ref, bound, scale, n, VF_GATE_ELEM, &row.stats);
        ck_assert(chk_report_add(&rep, &row, &err) == RL_OK);
        ck_assert_int_eq(rep.rows[inject].stats.pass, !inject);
        ck_assert_int_eq(rep.failed, inject);
    }
    ck_assert_uint_ge(rep.rows[1].stats.n_ref_nan, 1);
    ck_assert_uint_eq(rep.rows[1].stats.first_bad / 64, 5 * H); /* the NaN's pair, first */
    chk_report_free(&rep);
    rope_kernel_destroy(&g.dev, &k);
    free(x);
    free(y);
    free(ref);
    free(bound);
    free(scale);
    rl_gpu_close(&g);
}
END_TEST

/* Texel reads of x (rope_gpu_texel_reads: the vec4 variant on a CPU
 * device) and storage-buffer reads (what GPUs run) load the same values,
 * so the outputs must have the same bits: both layouts, the three
 * precision modes, full and partial rotary dims (the pass-through vec4s),
 * 3 heads (token blocks of one head group), positions up to ~2^20. */
START_TEST(texel_reads_give_the_same_bits)
{
    static const int precs[3] = {RL_ROPE_PREC_FP32, RL_ROPE_PREC_TABLE, RL_ROPE_PREC_PRECISE};
    enum { T = 37, H = 3, D = 64 };
    int layout = _i % 2, prec = precs[(_i / 2) % 3];
    uint32_t rot = _i / 6 ? 32u : 64u;
    rl_gpu g;
    rl_gpu_open(&g);
    rl_error err = {0};
    rope_desc d = {.head_dim = D, .rotary_dim = rot, .layout = layout, .precision = prec};
    rope_freqs f;
    ck_assert_int_eq(rope_freqs_compute(&d, &f, &err), RL_OK);
    size_t n = (size_t)T * H * D;
    float *x = malloc(n * sizeof *x), *y[2] = {malloc(n * sizeof(float)), malloc(n * sizeof(float))};
    uint32_t pos[T];
    rl_rng rng;
    rl_rng_seed(&rng, 5, "test/rope/texel");
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rl_rng_normal(&rng);
    for (uint32_t t = 0; t < T; t++)
        pos[t] = t * 28411u % 1048576u;
    int texel[2];
    for (int r = 0; r < 2; r++) {
        rope_kernel k;
        ck_assert_int_eq(rope_kernel_create(&g.dev, &k, &err), RL_OK);
        k.test_storage_reads = r;
        texel[r] = rope_gpu_texel_reads(&k, &f, (uint64_t)T * H);
        int guard_ok = 0;
        ck_assert_msg(rope_gpu_apply(&g.dev, &k, &f, x, pos, T, H, y[r], NULL, &guard_ok, &err) ==
                          RL_OK, "%s", err.msg);
        ck_assert(guard_ok);
        rope_kernel_destroy(&g.dev, &k);
    }
    ck_assert_int_eq(texel[1], 0);
    if (g.dev.info.vk_type == VK_PHYSICAL_DEVICE_TYPE_CPU)
        ck_assert_msg(texel[0], "a CPU device reads x as texels");
    ck_assert_msg(memcmp(y[0], y[1], n * sizeof(float)) == 0, "layout %d precision %d rotary %u",
                  layout, prec, rot);
    free(x);
    free(y[0]);
    free(y[1]);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(bad_shapes_are_refused_with_messages)
{
    rl_gpu g;
    rl_gpu_open(&g);
    rl_error err = {0};
    rope_desc d = {.head_dim = 128};
    rope_freqs f;
    ck_assert_int_eq(rope_freqs_compute(&d, &f, &err), RL_OK);
    ck_assert_int_eq(rope_gpu_check_shape(&g.dev, &f, 0, 1, &err), RL_ERR_ARG);
    ck_assert_str_eq(err.msg, "tokens must be at least 1 (got 0)");
    ck_assert_int_eq(rope_gpu_check_shape(&g.dev, &f, 4, 0, &err), RL_ERR_ARG);
    /* A tensor over maxStorageBufferRange is refused before any allocation. */
    uint64_t tokens = g.dev.info.max_storage_buffer_range / (128 * 4) + 1;
    ck_assert_int_eq(rope_gpu_check_shape(&g.dev, &f, tokens, 1, &err), RL_ERR_LIMIT);
    ck_assert_ptr_nonnull(strstr(err.msg, "maxStorageBufferRange"));
    ck_assert_int_eq(rope_gpu_check_shape(&g.dev, &f, 1ull << 30, 64, &err), RL_ERR_LIMIT);
    ck_assert_ptr_nonnull(strstr(err.msg, "32-bit element index"));
    rl_gpu_close(&g);
}
END_TEST

/* semantics vllm on the device: a dynamic config (factor 4, M 4096) at a
 * length inside M, where HF leaves RoPE unscaled and vLLM uses its static
 * base 10000 * 13^(d/(d-2)): the device output is within the kernel's bound
 * of vLLM's reference and far outside it of HF's. */
START_TEST(vllm_static_dynamic_on_device_is_not_hfs)
{
    enum { T = 9, H = 2, D = 64 };
    static const uint32_t pos[T] = {0, 1, 17, 255, 1000, 2047, 3, 4095, 100};
    rl_gpu g;
    rl_gpu_open(&g);
    rl_error err = {0};
    rope_desc d = {.head_dim = D, .rope_type = ROPE_TYPE_DYNAMIC, .factor = 4,
                   .max_position_embeddings = 4096, .seq_len = 2048,
                   .semantics = ROPE_SEM_VLLM};
    rope_freqs fv, fh;
    ck_assert_int_eq(rope_freqs_compute(&d, &fv, &err), RL_OK);
    d.semantics = ROPE_SEM_HF;
    ck_assert_int_eq(rope_freqs_compute(&d, &fh, &err), RL_OK);
    size_t n = (size_t)T * H * D;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *ref = malloc(n * sizeof *ref), *bound = malloc(n * sizeof *bound),
           *scale = malloc(n * sizeof *scale);
    rl_rng rng;
    rl_rng_seed(&rng, 5, "test/rope/vllm");
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rl_rng_normal(&rng);
    rope_kernel k;
    ck_assert_int_eq(rope_kernel_create(&g.dev, &k, &err), RL_OK);
    int guard_ok = 0;
    ck_assert_msg(rope_gpu_apply(&g.dev, &k, &fv, x, pos, T, H, y, NULL, &guard_ok, &err) == RL_OK,
                  "%s", err.msg);
    ck_assert(guard_ok);
    rope_ref_apply(&fv, x, pos, T, H, ref);
    rope_error_bounds(&fv, x, pos, T, H, bound, scale);
    vf_stats st;
    vf_compare(y, ref, bound, scale, n, VF_GATE_ELEM, &st);
    ck_assert_msg(st.pass, "device vs vLLM reference: %zu over, worst %g", st.n_over,
                  st.worst_ratio);
    rope_ref_apply(&fh, x, pos, T, H, ref);
    vf_compare(y, ref, bound, scale, n, VF_GATE_ELEM, &st);
    ck_assert(!st.pass);
    ck_assert(st.worst_ratio > 100);
    rope_kernel_destroy(&g.dev, &k);
    free(x), free(y), free(ref), free(bound), free(scale);
    rl_gpu_close(&g);
}
END_TEST

int main(void)
{
    rl_test_pin_driver();
    rl_test_require_vulkan("rope_gpu");
    Suite *s = suite_create("rope_gpu");
    /* `ropelab check`: its cases pass, its verdict fails a NaN row */
    TCase *tc_check = tcase_create("check");
    tcase_set_timeout(tc_check, 300);
    tcase_add_test(tc_check, check_cases_pass_on_device);
    tcase_add_test(tc_check, check_fails_nan_against_nan_and_passes_the_clean_tensor);
    suite_add_tcase(s, tc_check);
    /* scaling semantics on the device: vLLM's static dynamic, cache_consistent */
    TCase *tc_scaling = tcase_create("scaling");
    tcase_set_timeout(tc_scaling, 300);
    tcase_add_test(tc_scaling, vllm_static_dynamic_on_device_is_not_hfs);
    tcase_add_loop_test(tc_scaling, cache_consistent_gives_each_token_its_own_rotation_on_device,
                        0, 4);
    suite_add_tcase(s, tc_scaling);
    /* the kernel's paths: odd shapes, refused shapes, texel against storage reads */
    TCase *tc_kernel = tcase_create("kernel");
    tcase_set_timeout(tc_kernel, 300);
    tcase_add_loop_test(tc_kernel, small_positions_match_reference_closely, 0,
                        2 * (int)(sizeof odd_shapes / sizeof odd_shapes[0]));
    tcase_add_test(tc_kernel, bad_shapes_are_refused_with_messages);
    tcase_add_loop_test(tc_kernel, texel_reads_give_the_same_bits, 0, 12);
    suite_add_tcase(s, tc_kernel);
    return rl_test_run(s);
}
