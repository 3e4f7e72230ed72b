/* pe/rope: frequencies and the double-precision CPU reference. */
#include <math.h>
#include <string.h>

#include "core/rl_util.h"
#include "pe/rope.h"
#include "rl_test.h"

static rope_freqs make(uint32_t d, uint32_t rot, int layout)
{
    rope_desc desc = {.head_dim = d, .rotary_dim = rot, .layout = layout};
    rope_freqs f;
    rl_error err = {0};
    ck_assert_msg(rope_freqs_compute(&desc, &f, &err) == RL_OK, "%s", err.msg);
    return f;
}

START_TEST(freqs_follow_roformer_definition)
{
    rope_freqs f = make(128, 0, RL_ROPE_LAYOUT_HALF);
    ck_assert_uint_eq(f.rotary_dim, 128);
    ck_assert_uint_eq(f.n_pairs, 64);
    ck_assert_double_eq(f.theta, 10000.0);
    ck_assert_double_eq(f.inv_freq[0], 1.0);
    /* theta_1 = 10000^(-2/128) = exp(-ln(10000)/64) */
    ck_assert_double_eq_tol(f.inv_freq[1], exp(-log(10000.0) / 64.0), 1e-15);
    /* theta_32 = 10000^(-64/128) = 1/100 */
    ck_assert_double_eq_tol(f.inv_freq[32], 0.01, 1e-17);
    /* Partial rotary: the exponent uses rotary_dim, not head_dim. */
    rope_freqs p = make(128, 64, RL_ROPE_LAYOUT_HALF);
    ck_assert_double_eq_tol(p.inv_freq[16], 0.01, 1e-17);
}
END_TEST

START_TEST(resolve_rejects_bad_rotary_dims)
{
    rope_desc d = {.head_dim = 64, .rotary_dim = 5};
    rope_desc out;
    rl_error err = {0};
    ck_assert_int_eq(rope_desc_resolve(&d, &out, &err), RL_ERR_ARG);
    ck_assert_str_eq(err.msg, "rotary_dim 5 must be even (it rotates pairs)");
    d.rotary_dim = 96;
    ck_assert_int_eq(rope_desc_resolve(&d, &out, &err), RL_ERR_ARG);
    ck_assert_str_eq(err.msg, "rotary_dim 96 exceeds head_dim 64");
    d.head_dim = 0;
    ck_assert_int_eq(rope_desc_resolve(&d, &out, &err), RL_ERR_ARG);
    ck_assert_str_eq(err.msg, "head_dim is required (got 0)");
    d = (rope_desc){.head_dim = 64, .theta = 0.5};
    ck_assert_int_eq(rope_desc_resolve(&d, &out, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "rope_theta"));
    /* rotary_dim 0 means the whole head. */
    d = (rope_desc){.head_dim = 64};
    ck_assert_int_eq(rope_desc_resolve(&d, &out, &err), RL_OK);
    ck_assert_uint_eq(out.rotary_dim, 64);
}
END_TEST

static void fill(double *x, size_t n, const char *stream)
{
    rl_rng r;
    rl_rng_seed(&r, 7, stream);
    for (size_t i = 0; i < n; i++)
        x[i] = rl_rng_normal(&r);
}

START_TEST(position_zero_is_identity)
{
    int layout = _i;
    rope_freqs f = make(64, 48, layout);
    double x[64], y[64];
    uint32_t pos = 0;
    fill(x, 64, "id");
    rope_ref_apply_d(&f, x, &pos, 1, 1, y);
    for (int i = 0; i < 64; i++)
        ck_assert_double_eq(y[i], x[i]);
}
END_TEST

START_TEST(rotation_preserves_pair_norms)
{
    int layout = _i;
    rope_freqs f = make(128, 96, layout);
    double x[128], y[128];
    uint32_t pos = 1048576;
    fill(x, 128, "norm");
    rope_ref_apply_d(&f, x, &pos, 1, 1, y);
    for (uint32_t i = 0; i < 96; i++) {
        int first;
        uint32_t pair, o = rope_partner(&f, i, &first, &pair);
        double n0 = hypot(x[i], x[o]), n1 = hypot(y[i], y[o]);
        ck_assert_double_eq_tol(n1, n0, 1e-14 * n0);
    }
    for (uint32_t i = 96; i < 128; i++)
        ck_assert_double_eq(y[i], x[i]); /* pass-through untouched */
}
END_TEST

static double dot(const double *a, const double *b, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

START_TEST(score_depends_only_on_relative_position)
{
    int layout = _i;
    rope_freqs f = make(64, 64, layout);
    double q[64], k[64], rq[64], rk[64];
    fill(q, 64, "q");
    fill(k, 64, "k");
    /* (m, n) pairs with m - n = 5 at very different absolute positions. */
    const uint32_t ms[] = {5, 105, 10005, 1000005};
    double ref = 0;
    for (size_t t = 0; t < 4; t++) {
        uint32_t m = ms[t], n = m - 5;
        rope_ref_apply_d(&f, q, &m, 1, 1, rq);
        rope_ref_apply_d(&f, k, &n, 1, 1, rk);
        double s = dot(rq, rk, 64);
        if (t == 0)
            ref = s;
        /* Double rounding: angles up to 1e6 rad carry ~1e6 * 2^-53 absolute
         * error each, so scores agree to ~1e-9 of |q||k| (=~64). */
        ck_assert_double_eq_tol(s, ref, 1e-8);
    }
    /* And a different offset gives a different score. */
    uint32_t m = 7, n = 0;
    rope_ref_apply_d(&f, q, &m, 1, 1, rq);
    rope_ref_apply_d(&f, k, &n, 1, 1, rk);
    ck_assert(fabs(dot(rq, rk, 64) - ref) > 1e-6);
}
END_TEST

START_TEST(layouts_agree_after_permutation)
{
    /* interleaved dimension 2j <-> half dimension j, 2j+1 <-> j + r/2. */
    const uint32_t d = 64, r = 48;
    rope_freqs fh = make(d, r, RL_ROPE_LAYOUT_HALF), fi = make(d, r, RL_ROPE_LAYOUT_INTERLEAVED);
    double xh[64], xi[64], yh[64], yi[64];
    fill(xh, d, "perm");
    for (uint32_t j = 0; j < r / 2; j++) {
        xi[2 * j] = xh[j];
        xi[2 * j + 1] = xh[j + r / 2];
    }
    for (uint32_t i = r; i < d; i++)
        xi[i] = xh[i];
    uint32_t pos = 12345;
    rope_ref_apply_d(&fh, xh, &pos, 1, 1, yh);
    rope_ref_apply_d(&fi, xi, &pos, 1, 1, yi);
    for (uint32_t j = 0; j < r / 2; j++) {
        ck_assert_double_eq(yi[2 * j], yh[j]);
        ck_assert_double_eq(yi[2 * j + 1], yh[j + r / 2]);
    }
    for (uint32_t i = r; i < d; i++)
        ck_assert_double_eq(yi[i], yh[i]);
}
END_TEST

START_TEST(reference_rotates_by_hand_computed_angle)
{
    /* d = 4, half layout: pairs (0,2) with theta 1 and (1,3) with theta 1/100. */
    rope_freqs f = make(4, 4, RL_ROPE_LAYOUT_HALF);
    double x[4] = {1, 2, 0, 0}, y[4];
    uint32_t pos = 3;
    rope_ref_apply_d(&f, x, &pos, 1, 1, y);
    ck_assert_double_eq_tol(y[0], cos(3.0), 1e-15);
    ck_assert_double_eq_tol(y[2], sin(3.0), 1e-15);
    ck_assert_double_eq_tol(y[1], 2 * cos(0.03), 1e-15);
    ck_assert_double_eq_tol(y[3], 2 * sin(0.03), 1e-15);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rope_ref");
    /* the frequencies and the rotary dims they are resolved for */
    TCase *tc_freqs = tcase_create("freqs");
    tcase_add_test(tc_freqs, freqs_follow_roformer_definition);
    tcase_add_test(tc_freqs, resolve_rejects_bad_rotary_dims);
    suite_add_tcase(s, tc_freqs);
    /* properties of the rotation: identity at 0, norms, relative position, layouts */
    TCase *tc_invariants = tcase_create("invariants");
    tcase_add_loop_test(tc_invariants, position_zero_is_identity, 0, 2);
    tcase_add_loop_test(tc_invariants, rotation_preserves_pair_norms, 0, 2);
    tcase_add_loop_test(tc_invariants, score_depends_only_on_relative_position, 0, 2);
    tcase_add_test(tc_invariants, layouts_agree_after_permutation);
    suite_add_tcase(s, tc_invariants);
    /* the reference against a hand-computed angle */
    TCase *tc_hand = tcase_create("hand");
    tcase_add_test(tc_hand, reference_rotates_by_hand_computed_angle);
    suite_add_tcase(s, tc_hand);
    return rl_test_run(s);
}
