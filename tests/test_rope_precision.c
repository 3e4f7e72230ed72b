/* RoPE angle-precision modes on the device vs the double CPU reference,
 * under the validation layer: every scaling type x both layouts x partial
 * rotary x each precision, and the precise mode's argument reduction at
 * positions up to 2^24 and over the whole 32-bit range. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "verify/vf.h"
#include "core/rl_util.h"
#include "pe/rope.h"
#include "pe/rope_scaling.h"
/* one device for the suite (rl_test.h) */
#define RL_TEST_SHARED_GPU
#include "rl_test.h"

/* HF-style settings of every type (partial rotary 64 of 128 except
 * proportional, which keeps the whole head and zeroes frequencies). */
static void type_desc(int type, rope_desc *d)
{
    memset(d, 0, sizeof *d);
    d->rope_type = type;
    d->head_dim = 128;
    d->rotary_dim = type == ROPE_TYPE_PROPORTIONAL ? 0 : 64;
    d->factor = type == ROPE_TYPE_DEFAULT ? 0 : 4;
    d->original_max_position_embeddings = 4096;
    d->max_position_embeddings = 4096;
    d->seq_len = 1u << 20;
    if (type == ROPE_TYPE_LLAMA3) {
        d->theta = 500000;
        d->low_freq_factor = 1;
        d->high_freq_factor = 4;
        d->original_max_position_embeddings = 8192;
    }
    if (type == ROPE_TYPE_LONGROPE) {
        d->n_short_factor = d->n_long_factor = 32;
        for (uint32_t j = 0; j < 32; j++) {
            d->short_factor[j] = 1 + 0.1 * j;
            d->long_factor[j] = 1 + 2.0 * j;
        }
    }
    if (type == ROPE_TYPE_PROPORTIONAL)
        d->partial_rotary_factor = 0.25;
    if (type >= ROPE_TYPE_N_BUILTIN) { /* a type without a constant: its registry example */
        rope_desc e;
        rope_scaling_example(type, &e);
        e.head_dim = d->head_dim;
        e.rotary_dim = rope_scaling_at(type)->whole_head ? 0 : 64;
        e.seq_len = d->seq_len;
        *d = e;
    }
}

/* Runs f on the device at pos[] and returns the worst error / bound, where
 * the bound is rope_error_bounds' (4 ulp of the pair magnitude for table and
 * precise; the derived fp32 bound otherwise). Also returns max abs error. */
static double run(rl_gpu *g, rope_kernel *k, const rope_freqs *f, const uint32_t *pos,
                  uint32_t tokens, uint32_t heads, double *max_abs)
{
    size_t n = (size_t)tokens * heads * f->head_dim;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *ref = malloc(n * sizeof *ref), *bound = malloc(n * sizeof *bound),
           *scale = malloc(n * sizeof *scale);
    ck_assert(x && y && ref && bound && scale);
    rl_rng rng;
    rl_rng_seed(&rng, 11, "precision");
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rl_rng_normal(&rng);
    rl_error err = {0};
    int guard_ok = 0;
    ck_assert_msg(rope_gpu_apply(&g->dev, k, f, x, pos, tokens, heads, y, NULL, &guard_ok, &err) == RL_OK,
                  "%s", err.msg);
    ck_assert(guard_ok);
    rope_ref_apply(f, x, pos, tokens, heads, ref);
    rope_error_bounds(f, x, pos, tokens, heads, bound, scale);
    vf_stats s;
    vf_compare(y, ref, bound, scale, n, VF_GATE_ELEM, &s);
    ck_assert_uint_eq(s.n_nonfinite, 0);
    if (max_abs)
        *max_abs = s.max_abs;
    free(x);
    free(y);
    free(ref);
    free(bound);
    free(scale);
    return s.worst_ratio;
}

START_TEST(every_type_layout_and_mode_is_within_its_bound)
{
    int type = _i;
    rl_gpu g;
    rl_gpu_open(&g);
    rope_kernel k;
    rl_error err = {0};
    ck_assert_int_eq(rope_kernel_create(&g.dev, &k, &err), RL_OK);
    enum { T = 37 };
    uint32_t pos[T];
    rl_rng rng;
    rl_rng_seed(&rng, 5, "positions");
    for (int t = 0; t < T; t++)
        pos[t] = (uint32_t)(rl_rng_uniform(&rng) * (double)(1u << 20));
    pos[0] = 0;
    pos[T - 1] = 1u << 20;
    for (int layout = 0; layout < 2; layout++)
        for (int prec = RL_ROPE_PREC_FP32; prec <= RL_ROPE_PREC_PRECISE; prec++) {
            rope_desc d;
            type_desc(type, &d);
            d.layout = layout;
            d.precision = prec;
            rope_freqs f;
            ck_assert_msg(rope_freqs_compute(&d, &f, &err) == RL_OK, "%s", err.msg);
            double r = run(&g, &k, &f, pos, T, 3, NULL);
            ck_assert_msg(r <= 1.0, "%s layout %d %s: worst error/bound %.3f",
                          rope_type_name(type), layout, rope_precision_name(prec), r);
        }
    rope_kernel_destroy(&g.dev, &k);
    rl_gpu_close(&g);
}
END_TEST

/* The scalar (non-vec4) kernel path: head_dim 66 (not a multiple of 4),
 * rotary 22 (not a multiple of 8), for a few types, both layouts, all modes. */
START_TEST(scalar_path_modes_are_within_their_bounds)
{
    static const int types[] = {ROPE_TYPE_DEFAULT, ROPE_TYPE_LINEAR, ROPE_TYPE_YARN, ROPE_TYPE_LLAMA3};
    rl_gpu g;
    rl_gpu_open(&g);
    rope_kernel k;
    rl_error err = {0};
    ck_assert_int_eq(rope_kernel_create(&g.dev, &k, &err), RL_OK);
    enum { T = 19 };
    uint32_t pos[T];
    for (uint32_t t = 0; t < T; t++)
        pos[t] = (1u << 20) - 7919u * t;
    for (size_t i = 0; i < RL_ARRAY_LEN(types); i++)
        for (int layout = 0; layout < 2; layout++)
            for (int prec = RL_ROPE_PREC_FP32; prec <= RL_ROPE_PREC_PRECISE; prec++) {
                rope_desc d;
                type_desc(types[i], &d);
                d.head_dim = 66;
                d.rotary_dim = 22;
                d.layout = layout;
                d.precision = prec;
                rope_freqs f;
                ck_assert_msg(rope_freqs_compute(&d, &f, &err) == RL_OK, "%s", err.msg);
                double r = run(&g, &k, &f, pos, T, 2, NULL);
                ck_assert_msg(r <= 1.0, "%s layout %d %s: worst error/bound %.3f",
                              rope_type_name(types[i]), layout, rope_precision_name(prec), r);
            }
    rope_kernel_destroy(&g.dev, &k);
    rl_gpu_close(&g);
}
END_TEST

/* One pair with theta_0 = 1 (head_dim 2): the argument reduction sees every
 * residue class. Positions: 0..1023, the 1024 below 2^24, and random ones up
 * to 2^24 — precise and table stay within 4 ulp of the pair magnitude; fp32
 * at these positions is off by far more (its angle alone is off by up to
 * 2^24 * 2^-24 = 1 rad), which is why the modes exist. */
START_TEST(precise_reduction_is_exact_up_to_2_pow_24)
{
    rl_gpu g;
    rl_gpu_open(&g);
    rope_kernel k;
    rl_error err = {0};
    ck_assert_int_eq(rope_kernel_create(&g.dev, &k, &err), RL_OK);
    enum { T = 4096 };
    uint32_t *pos = malloc(T * sizeof *pos);
    rl_rng rng;
    rl_rng_seed(&rng, 9, "p24");
    for (uint32_t t = 0; t < T; t++)
        pos[t] = t < 1024 ? t : t < 2048 ? (1u << 24) - (t - 1024) : (uint32_t)(rl_rng_uniform(&rng) * 16777216.0);
    double worst[3], abs_err[3];
    for (int prec = RL_ROPE_PREC_FP32; prec <= RL_ROPE_PREC_PRECISE; prec++) {
        rope_desc d = {.head_dim = 8, .precision = prec};
        rope_freqs f;
        ck_assert_int_eq(rope_freqs_compute(&d, &f, &err), RL_OK);
        worst[prec] = run(&g, &k, &f, pos, T, 1, &abs_err[prec]);
    }
    ck_assert_msg(worst[RL_ROPE_PREC_TABLE] <= 1.0, "table: %.3f of 4 ulp", worst[RL_ROPE_PREC_TABLE]);
    ck_assert_msg(worst[RL_ROPE_PREC_PRECISE] <= 1.0, "precise: %.3f of 4 ulp", worst[RL_ROPE_PREC_PRECISE]);
    /* The fp32 angle at ~2^24 has an error of order 0.1..1 rad on some of
     * 2000 positions; precise is at rounding level (pair magnitudes < ~10,
     * 4 ulp < 4e-6). */
    ck_assert_msg(abs_err[RL_ROPE_PREC_FP32] > 1e-2, "fp32 max abs %.3g", abs_err[RL_ROPE_PREC_FP32]);
    ck_assert_msg(abs_err[RL_ROPE_PREC_PRECISE] < 1e-5, "precise max abs %.3g", abs_err[RL_ROPE_PREC_PRECISE]);
    free(pos);
    rope_kernel_destroy(&g.dev, &k);
    rl_gpu_close(&g);
}
END_TEST

/* The precise mode over the whole 32-bit position range (the kernel's
 * product of the position with the 64-bit turn fraction is built from 16-bit
 * halves: every carry matters there). The double reference cannot resolve
 * angles of up to 2^32 rad, so this test's reference takes the angle in long
 * double (64-bit mantissa: pos * theta_j to 2^-32 rad) and cosl/sinl. Shapes
 * cover the kernel's row blocks (rope_gpu.c row_groups): 1 head (8 tokens
 * per invocation, 61 tokens leave a partial block), 3 heads (3 heads x 2
 * tokens), 12 heads (all of a token's), 40 heads (two blocks of 20 per
 * token), the scalar path (head_dim 66, rotary 22, 2 heads); both layouts. The bound is precise mode's: 4 ulp of the pair magnitude. */
START_TEST(precise_reduction_is_exact_over_32_bit_positions)
{
    static const uint32_t shapes[][3] = {{1, 128, 128}, {3, 128, 128}, {12, 64, 64}, {40, 32, 32},
                                             {2, 66, 22}};
    enum { T = 61 };
    uint32_t pos[T] = {0xffffffffu, 0xfffffffeu, 0x80000000u, 0x7fffffffu, 0x01000001u, 0xffffu,
                       0x10000u, 0xffff0000u, 0x0000ffffu | 0xffff0000u, 1u};
    rl_rng rng;
    rl_rng_seed(&rng, 13, "p32");
    for (int t = 10; t < T; t++)
        pos[t] = (uint32_t)(rl_rng_uniform(&rng) * 4294967296.0);
    rl_gpu g;
    rl_gpu_open(&g);
    rope_kernel k;
    rl_error err = {0};
    ck_assert_int_eq(rope_kernel_create(&g.dev, &k, &err), RL_OK);
    for (size_t si = 0; si < RL_ARRAY_LEN(shapes); si++)
        for (int layout = 0; layout < 2; layout++) {
            uint32_t heads = shapes[si][0];
            rope_desc d = {.head_dim = shapes[si][1], .rotary_dim = shapes[si][2], .layout = layout,
                           .precision = RL_ROPE_PREC_PRECISE};
            rope_freqs f;
            ck_assert_int_eq(rope_freqs_compute(&d, &f, &err), RL_OK);
            size_t n = (size_t)T * heads * f.head_dim;
            float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
            ck_assert(x && y);
            for (size_t i = 0; i < n; i++)
                x[i] = (float)rl_rng_normal(&rng);
            int guard_ok = 0;
            ck_assert_msg(rope_gpu_apply(&g.dev, &k, &f, x, pos, T, heads, y, NULL, &guard_ok, &err) ==
                          RL_OK, "%s", err.msg);
            ck_assert(guard_ok);
            double worst = 0;
            size_t worst_i = 0;
            for (size_t i = 0; i < n; i++) {
                uint32_t dim = (uint32_t)(i % f.head_dim), t = (uint32_t)(i / f.head_dim / heads);
                size_t row = i - dim;
                if (dim >= f.rotary_dim) {
                    ck_assert_msg(memcmp(&y[i], &x[i], sizeof(float)) == 0, "pass-through %zu", i);
                    continue;
                }
                int first;
                uint32_t pair, o = rope_partner(&f, dim, &first, &pair);
                long double ang = (long double)pos[t] * (long double)f.inv_freq[pair];
                /* first of its pair: y_a = a c - b s; second: y_b = b c + a s */
                long double c = cosl(ang), sn = sinl(ang), self = x[i], other = x[row + o];
                long double ref = first ? self * c - other * sn : self * c + other * sn;
                double m = fabs(x[row + dim]) + fabs(x[row + o]);
                double r = (double)fabsl((long double)y[i] - ref) / (4 * rl_ulp32(m));
                if (r > worst) {
                    worst = r;
                    worst_i = i;
                }
            }
            ck_assert_msg(worst <= 1.0, "heads %u d %u rot %u layout %d: worst error %.3f of 4 ulp at "
                          "element %zu (position %u)", heads, f.head_dim, f.rotary_dim, layout, worst,
                          worst_i, pos[worst_i / f.head_dim / heads]);
            free(x);
            free(y);
        }
    rope_kernel_destroy(&g.dev, &k);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(modes_other_than_fp32_need_their_angle_buffer)
{
    rl_gpu g;
    rl_gpu_open(&g);
    rope_kernel k;
    rl_error err = {0};
    ck_assert_int_eq(rope_kernel_create(&g.dev, &k, &err), RL_OK);
    rope_desc d = {.head_dim = 8, .precision = RL_ROPE_PREC_TABLE};
    rope_freqs f;
    ck_assert_int_eq(rope_freqs_compute(&d, &f, &err), RL_OK);
    rlvk_cmd cmd;
    ck_assert_int_eq(rlvk_cmd_begin(&g.dev, 1, &cmd, &err), RL_OK);
    rlvk_buffer b = {0};
    ck_assert_int_eq(rlvk_buffer_create(&g.dev, 256, "t", &b, &err), RL_OK);
    rope_gpu_io io = {.x = &b, .y = &b, .pos = &b, .freq = &b, .tokens = 1, .heads = 1};
    ck_assert_int_eq(rope_gpu_record(&cmd, &k, &f, &io, &err), RL_ERR_ARG);
    ck_assert_str_eq(err.msg, "rope precision table needs its angle buffer (rope_gpu_upload_angles)");
    rlvk_cmd_destroy(&cmd);
    rlvk_buffer_destroy(&g.dev, &b);
    rope_kernel_destroy(&g.dev, &k);
    rl_gpu_close(&g);
}
END_TEST

int main(void)
{
    rl_test_pin_driver();
    rl_test_require_vulkan("rope_precision");
    Suite *s = suite_create("rope_precision");
    /* every type, layout and mode within its bound, vec4 and scalar paths */
    TCase *tc_bounds = tcase_create("bounds");
    tcase_set_timeout(tc_bounds, 300);
    tcase_add_loop_test(tc_bounds, every_type_layout_and_mode_is_within_its_bound, 0,
                        ROPE_TYPE_COUNT);
    tcase_add_test(tc_bounds, scalar_path_modes_are_within_their_bounds);
    suite_add_tcase(s, tc_bounds);
    /* the precise mode's argument reduction */
    TCase *tc_reduction = tcase_create("reduction");
    tcase_set_timeout(tc_reduction, 300);
    tcase_add_test(tc_reduction, precise_reduction_is_exact_up_to_2_pow_24);
    tcase_add_test(tc_reduction, precise_reduction_is_exact_over_32_bit_positions);
    suite_add_tcase(s, tc_reduction);
    /* a mode other than fp32 is refused without its angle buffer */
    TCase *tc_angles = tcase_create("angles");
    tcase_set_timeout(tc_angles, 300);
    tcase_add_test(tc_angles, modes_other_than_fp32_need_their_angle_buffer);
    suite_add_tcase(s, tc_angles);
    return rl_test_run(s);
}
