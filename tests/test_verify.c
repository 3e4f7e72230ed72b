/* The verification layer's verdict (verify/vf.h) on hand-made tensors:
 * non-finite rules, per-element bounds, the NMSE gate, deferred-bound
 * accumulators and merged verdicts. Expected values follow from the rules
 * stated in vf.h, not from the code. */
#include "rl_check.h"
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"
#include "rl_test.h"
#include "verify/vf.h"

enum { N = 1000 };

/* ref ~ N(0,1), bound 1e-3 |ref| + 1e-4, dev = ref + frac * bound * sign
 * pattern (alternating +/-, so errors are frac of each bound). */
static void make(double frac, float *dev, double *ref, double *bound)
{
    rl_rng rng;
    rl_rng_seed(&rng, 5, "test/verify");
    for (int i = 0; i < N; i++) {
        ref[i] = (double)(float)rl_rng_normal(&rng);
        bound[i] = 1e-3 * fabs(ref[i]) + 1e-4;
        /* dev is float: keep the error exactly representable relative to ref */
        dev[i] = (float)(ref[i] + ((i & 1) ? 1 : -1) * frac * bound[i]);
    }
}

START_TEST(correct_result_passes)
{
    float dev[N];
    double ref[N], bound[N];
    make(0.02, dev, ref, bound);
    vf_stats s;
    vf_compare(dev, ref, bound, NULL, N, 1e-3, &s);
    ck_assert_msg(s.pass, "nmse %g gate %g worst %g", s.nmse, s.nmse_gate, s.worst_ratio);
    ck_assert_uint_eq(s.n_over, 0);
    ck_assert_uint_eq(s.n_nonfinite, 0);
    ck_assert(s.first_bad == VF_NONE);
    ck_assert(s.worst_ratio < 0.1);
}
END_TEST

/* Errors 10x larger: every element still inside its bound (0.2 of it, up
 * to the float rounding of dev), but NMSE 100x larger crosses the gate. */
START_TEST(ten_times_larger_error_within_bounds_fails_nmse_gate)
{
    float dev[N];
    double ref[N], bound[N];
    make(0.2, dev, ref, bound);
    vf_stats s;
    vf_compare(dev, ref, bound, NULL, N, 1e-3, &s);
    ck_assert_uint_eq(s.n_over, 0);
    ck_assert_uint_eq(s.n_nonfinite, 0);
    ck_assert(s.worst_ratio < 1);
    ck_assert(!s.nmse_ok);
    ck_assert(!s.pass);
    ck_assert(s.nmse > s.nmse_gate);
}
END_TEST

START_TEST(nan_reference_fails_even_against_nan)
{
    float dev[N];
    double ref[N], bound[N];
    make(0.02, dev, ref, bound);
    ref[17] = NAN;
    dev[17] = NAN;
    vf_stats s;
    vf_compare(dev, ref, bound, NULL, N, VF_GATE_ELEM, &s);
    ck_assert(!s.pass);
    ck_assert_uint_eq(s.n_ref_nan, 1);
    ck_assert_uint_eq(s.n_nonfinite, 1);
    ck_assert_uint_eq(s.first_bad, 17);
    /* and through the accumulator */
    vf_acc a = {0};
    vf_acc_add(&a, 1.0, 1.0, 1);
    vf_acc_add(&a, NAN, NAN, 1);
    vf_stats t;
    vf_acc_judge(&a, 1e-6, 1e-3, &t);
    ck_assert(!t.pass);
    ck_assert_uint_eq(t.n_ref_nan, 1);
    ck_assert_uint_eq(t.first_bad, 1);
}
END_TEST

START_TEST(same_infinity_passes_other_values_fail)
{
    float dev[4] = {1, -INFINITY, 2, 3};
    double ref[4] = {1, -INFINITY, 2, 3}, bound[4] = {0, 0, 0, 0};
    vf_stats s;
    vf_compare(dev, ref, bound, NULL, 4, VF_GATE_ELEM, &s);
    ck_assert(s.pass); /* bit-exact and the same -inf: bound 0, gate 0, NMSE 0 */
    dev[1] = INFINITY;
    vf_compare(dev, ref, bound, NULL, 4, VF_GATE_ELEM, &s);
    ck_assert(!s.pass);
    ck_assert_uint_eq(s.first_bad, 1);
    dev[1] = -1e30f; /* finite where the reference is infinite */
    vf_compare(dev, ref, bound, NULL, 4, VF_GATE_ELEM, &s);
    ck_assert(!s.pass);
    dev[1] = -INFINITY;
    dev[2] = NAN; /* non-finite where the reference is finite */
    vf_compare(dev, ref, bound, NULL, 4, VF_GATE_ELEM, &s);
    ck_assert(!s.pass);
    ck_assert_uint_eq(s.n_nonfinite, 1);
    ck_assert_uint_eq(s.n_ref_nan, 0);
}
END_TEST

START_TEST(element_over_bound_reports_first_index_and_worst_pair)
{
    float dev[N];
    double ref[N], bound[N];
    make(0.02, dev, ref, bound);
    dev[40] = (float)(ref[40] + 3 * bound[40]);
    dev[700] = (float)(ref[700] + 5 * bound[700]);
    vf_stats s;
    vf_compare(dev, ref, bound, NULL, N, VF_GATE_ELEM, &s);
    ck_assert(!s.pass);
    ck_assert_uint_eq(s.n_over, 2);
    ck_assert_uint_eq(s.first_bad, 40);
    ck_assert_double_eq_tol(s.worst_ratio, 5, 0.1);
    ck_assert_double_eq(s.bound_at_worst, bound[700]);
}
END_TEST

START_TEST(guard_and_merge_fold_into_the_verdict)
{
    float dev[N];
    double ref[N], bound[N];
    make(0.02, dev, ref, bound);
    vf_stats a, b, m = {0};
    vf_compare(dev, ref, bound, NULL, N, 1e-3, &a);
    ck_assert(a.pass);
    b = a;
    vf_set_guard(&b, 0);
    ck_assert(!b.pass);
    vf_merge(&m, &a);
    ck_assert(m.pass);
    vf_merge(&m, &b);
    ck_assert(!m.pass);
    ck_assert_uint_eq(m.n, 2 * N);
    /* the accumulator: bound tol * scale, gate over sum (tol scale)^2 */
    vf_acc acc = {0};
    for (int i = 0; i < N; i++)
        vf_acc_add(&acc, ref[i] + 0.01 * bound[i], ref[i], bound[i]);
    vf_stats j;
    vf_acc_judge(&acc, 1.0, 1e-3, &j);
    ck_assert(j.pass);
    ck_assert_double_eq_tol(j.worst_ratio, 0.01, 1e-9);
    acc = (vf_acc){0};
    for (int i = 0; i < N; i++)
        vf_acc_add(&acc, ref[i] + 0.1 * bound[i], ref[i], bound[i]);
    vf_acc_judge(&acc, 1.0, 1e-3, &j);
    ck_assert_uint_eq(j.n_over, 0);
    ck_assert(!j.pass); /* NMSE ratio 0.01 > 1e-3 */
}
END_TEST

/* The one tolerance record: a bit-exact element (bound 0) that is wrong
 * makes error/bound infinite; the record still serialises, writes that
 * ratio as null, names it in not_finite and says why it failed; a passing
 * verdict has no reason and no not_finite. */
START_TEST(tolerance_record_keeps_non_finite_failures)
{
    float dev[4] = {1.0f, 2.0f, 3.5f, 4.0f};
    double ref[4] = {1.0, 2.0, 3.0, 4.0}, bound[4] = {0, 0, 0, 0};
    vf_stats s;
    vf_compare(dev, ref, bound, NULL, 4, 0.5, &s);
    ck_assert(!s.pass);
    ck_assert(!isfinite(s.worst_ratio));
    json_t *o = vf_stats_json(&s);
    ck_assert_ptr_nonnull(o);
    char *text = json_dumps(o, JSON_COMPACT);
    ck_assert_ptr_nonnull(text); /* an infinite value would have made jansson refuse it */
    ck_assert(json_is_false(json_object_get(o, "pass")));
    ck_assert(json_is_null(json_object_get(o, "worst_error_over_bound")));
    ck_assert_int_eq(json_integer_value(json_object_get(o, "first_bad")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "over_bound")), 1);
    ck_assert_double_eq_tol(json_real_value(json_object_get(o, "max_abs_error")), 0.5, 1e-15);
    const json_t *nf = json_object_get(o, "not_finite");
    int named = 0;
    for (size_t i = 0; i < json_array_size(nf); i++)
        named |= strcmp(json_string_value(json_array_get(nf, i)), "worst_error_over_bound") == 0;
    ck_assert_msg(named, "not_finite does not name the ratio: %s", text);
    const char *why = json_string_value(json_object_get(o, "reason"));
    ck_assert_ptr_nonnull(why);
    ck_assert_msg(strstr(why, "1 element(s) over their bound") && strstr(why, "first at element 2"),
                  "reason: %s", why);
    free(text);
    json_decref(o);

    vf_compare(dev, ref, (double[]){1, 1, 1, 1}, NULL, 4, 1.0, &s);
    ck_assert(s.pass);
    o = vf_stats_json(&s);
    ck_assert(json_is_true(json_object_get(o, "pass")));
    ck_assert_ptr_null(json_object_get(o, "reason"));
    ck_assert_ptr_null(json_object_get(o, "not_finite"));
    ck_assert_int_eq(json_integer_value(json_object_get(o, "first_bad")), -1);
    json_decref(o);
}
END_TEST

/* A comparison fed in pieces (vf_stream) is the one-piece vf_compare's, bit
 * for bit: a tensor with a NaN reference in the first piece, an element
 * over its bound in the third and a bit-exact tail, cut at uneven sizes. */
START_TEST(streamed_pieces_equal_one_comparison)
{
    static float dev[N];
    static double ref[N], bound[N], scale[N];
    make(0.3, dev, ref, bound);
    for (int i = 0; i < N; i++)
        scale[i] = fabs(ref[i]) + 0.5;
    ref[17] = NAN;
    dev[600] = (float)(ref[600] + 3 * bound[600]);
    for (int i = 900; i < N; i++) {
        bound[i] = 0;
        dev[i] = (float)ref[i];
    }
    vf_stats whole, piece;
    vf_compare(dev, ref, bound, scale, N, VF_GATE_ELEM, &whole);
    static const size_t cuts[] = {1, 16, 17, 18, 333, 599, 600, 601, 999};
    vf_stream v;
    vf_stream_begin(&v, VF_GATE_ELEM);
    size_t at = 0;
    for (size_t c = 0; c <= sizeof cuts / sizeof cuts[0]; c++) {
        size_t end = c < sizeof cuts / sizeof cuts[0] ? cuts[c] : N;
        vf_stream_add(&v, dev + at, ref + at, bound + at, scale + at, end - at);
        at = end;
    }
    vf_stream_end(&v, &piece);
    ck_assert(!whole.pass && whole.first_bad == 17 && whole.n_over >= 1);
    ck_assert_uint_eq(piece.n, whole.n);
    ck_assert_uint_eq(piece.n_nonfinite, whole.n_nonfinite);
    ck_assert_uint_eq(piece.n_ref_nan, whole.n_ref_nan);
    ck_assert_uint_eq(piece.n_over, whole.n_over);
    ck_assert_uint_eq(piece.first_bad, whole.first_bad);
    /* exact equality: the same operations in the same order */
    ck_assert(piece.max_abs == whole.max_abs && piece.max_rel == whole.max_rel);
    ck_assert(piece.worst_ratio == whole.worst_ratio && piece.err_at_worst == whole.err_at_worst &&
              piece.bound_at_worst == whole.bound_at_worst);
    ck_assert(piece.nmse == whole.nmse && piece.nmse_bound == whole.nmse_bound &&
              piece.nmse_gate == whole.nmse_gate && piece.nmse_ok == whole.nmse_ok);
    ck_assert_int_eq(piece.pass, whole.pass);
    /* an empty stream is vf_compare of nothing */
    vf_stats e0, e1;
    vf_compare(dev, ref, bound, scale, 0, VF_GATE_ELEM, &e0);
    vf_stream_begin(&v, VF_GATE_ELEM);
    vf_stream_end(&v, &e1);
    ck_assert(e0.n == 0 && e1.n == 0 && e0.first_bad == VF_NONE && e1.first_bad == VF_NONE &&
              e0.pass == e1.pass);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("verify");
    TCase *tc = tcase_create("verdict");
    tcase_add_test(tc, correct_result_passes);
    tcase_add_test(tc, ten_times_larger_error_within_bounds_fails_nmse_gate);
    tcase_add_test(tc, nan_reference_fails_even_against_nan);
    tcase_add_test(tc, same_infinity_passes_other_values_fail);
    tcase_add_test(tc, element_over_bound_reports_first_index_and_worst_pair);
    tcase_add_test(tc, guard_and_merge_fold_into_the_verdict);
    tcase_add_test(tc, streamed_pieces_equal_one_comparison);
    TCase *rec = tcase_create("record");
    tcase_add_test(rec, tolerance_record_keeps_non_finite_failures);
    suite_add_tcase(s, rec);
    suite_add_tcase(s, tc);
    return rl_test_run(s);
}
