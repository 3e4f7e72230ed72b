/* The encoding registry on the device, under the validation layer: the
 * `ropelab check` pe cases, and hand-computed values through the GPU paths
 * (T5 buckets and ALiBi slopes through the GLSL rl_bias, learned-table
 * policies through pe_add.comp), and the bias-buffer contract. */
#include <math.h>
#include <string.h>

#include "check/chk.h"
#include "core/rl_util.h"
#include "pe/pe.h"
/* one device for the suite (rl_test.h) */
#define RL_TEST_SHARED_GPU
#include "rl_test.h"
#include "test_pe_util.h"

START_TEST(check_cases_pass_on_device)
{
    /* Every encoding's vector transform and bias; bounds derived in each
     * family file (pe_vec_bound / pe_bias_bound). */
    rl_gpu g;
    rl_gpu_open(&g);
    chk_report rep = {0};
    rl_error err = {0};
    chk_options opt = {0};
    ck_assert_msg(chk_pe_cases(&g.dev, &opt, &rep, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_ge(rep.n_rows, 15);
    int seen_bias = 0, seen_vec = 0;
    for (size_t i = 0; i < rep.n_rows; i++) {
        const chk_row *r = &rep.rows[i];
        seen_bias += strncmp(r->kernel, "bias/", 5) == 0;
        seen_vec += strncmp(r->kernel, "pe/", 3) == 0;
        ck_assert_msg(!r->skipped, "%s %s skipped", r->kernel, r->shape);
        ck_assert_msg(r->guard_ok, "%s %s wrote past its output", r->kernel, r->shape);
        ck_assert_msg(r->stats.pass, "%s %s: %zu over bound, first %zu, max abs %g", r->kernel,
                      r->shape, r->stats.n_over, r->stats.first_bad, r->stats.max_abs);
    }
    ck_assert_int_ge(seen_bias, 6);
    ck_assert_int_ge(seen_vec, 9);
    chk_report_free(&rep);
    rl_gpu_close(&g);
}
END_TEST

/* B[b][h] = 100 h + b (HF layout [num_buckets, heads]); the GLSL bias must
 * spell out the hand-computed bucket exactly (bidirectional 32/128: the
 * log buckets start at |r| = 12, 16, 23, 32, 46, 64, 91; r > 0 adds 16). */
START_TEST(t5_glsl_buckets_match_hand_table)
{
    static const int32_t r_b[][2] = {
        {0, 0},    {-7, 7},   {-8, 8},   {-11, 8},  {-12, 9},  {-15, 9},  {-16, 10}, {-22, 10},
        {-23, 11}, {-31, 11}, {-32, 12}, {-45, 12}, {-46, 13}, {-63, 13}, {-64, 14}, {-90, 14},
        {-91, 15}, {-128, 15}, {-1000000, 15}, {1, 17}, {8, 24}, {16, 26}, {91, 31}, {1000000, 31},
    };
    rl_gpu g;
    rl_gpu_open(&g);
    tdir d;
    tdir_open(&d);
    float tb[32 * 2];
    for (int b = 0; b < 32; b++)
        for (int h = 0; h < 2; h++)
            tb[b * 2 + h] = (float)(100 * h + b);
    uint64_t shp[2] = {32, 2};
    const char *path = tdir_npy(&d, "t5.npy", "<f4", 0, shp, 2, tb, sizeof tb);
    char js[256];
    snprintf(js, sizeof js, "{\"path\": \"%s\"}", path);
    pe_shape s = {.head_dim = 8, .heads = 2};
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_msg(make_enc("t5", js, &s, &e, &err) == RL_OK, "%s", err.msg);
    pe_bias_gpu b;
    ck_assert_msg(pe_bias_gpu_create(&g.dev, e, NULL, NULL, 1, 2, 2, 8, &b, &err) == RL_OK, "%s",
                  err.msg);
    ck_assert_str_eq(b.variant, "t5");
    ck_assert_uint_eq(b.n_buffers, 2);
    enum { N = (int)RL_ARRAY_LEN(r_b) * 2 };
    chk_bias_item items[N];
    float out[N];
    memset(items, 0, sizeof items);
    for (int i = 0; i < N; i++) {
        int32_t q = 1000000; /* r = kpos - qpos */
        items[i] = (chk_bias_item){.h = (uint32_t)(i % 2), .qpos = q, .kpos = q + r_b[i / 2][0]};
    }
    int guard_ok = 0;
    ck_assert_msg(chk_pe_bias_eval(&g.dev, &b, items, N, out, &guard_ok, &err) == RL_OK, "%s",
                  err.msg);
    ck_assert(guard_ok);
    for (int i = 0; i < N; i++)
        ck_assert_msg(out[i] == (float)(100 * (i % 2) + r_b[i / 2][1]), "r=%d h=%d: %g, want %d",
                      r_b[i / 2][0], i % 2, out[i], 100 * (i % 2) + r_b[i / 2][1]);
    pe_bias_gpu_destroy(&g.dev, &b);
    pe_encoding_destroy(e);
    tdir_close(&d);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(alibi_glsl_uses_the_paper_slopes_for_12_heads)
{
    /* 12 heads: 2^-1..2^-8, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5 (hand). At
     * i - j = 1 the bias is -fl32(slope); fp32 rounding: 2^-24 relative. */
    const double s12[12] = {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625,
                            0.70710678118654752, 0.35355339059327376, 0.17677669529663688,
                            0.088388347648318440};
    rl_gpu g;
    rl_gpu_open(&g);
    pe_shape s = {.head_dim = 8, .heads = 12};
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_int_eq(make_enc("alibi", "{}", &s, &e, &err), RL_OK);
    pe_bias_gpu b;
    ck_assert_int_eq(pe_bias_gpu_create(&g.dev, e, NULL, NULL, 1, 12, 12, 8, &b, &err), RL_OK);
    ck_assert_str_eq(b.variant, "alibi");
    chk_bias_item items[24];
    float out[24];
    memset(items, 0, sizeof items);
    for (int i = 0; i < 24; i++) /* i - j = 1, then i - j = -1000 (future key) */
        items[i] = (chk_bias_item){.h = (uint32_t)(i % 12), .qpos = i < 12 ? 51 : 0,
                                   .kpos = i < 12 ? 50 : 1000};
    int guard_ok = 0;
    ck_assert_int_eq(chk_pe_bias_eval(&g.dev, &b, items, 24, out, &guard_ok, &err), RL_OK);
    ck_assert(guard_ok);
    for (int h = 0; h < 12; h++) {
        ck_assert_double_eq_tol(out[h], -s12[h], s12[h] * 0x1p-23);
        ck_assert_double_eq_tol(out[12 + h], 1000 * s12[h], 1000 * s12[h] * 0x1p-23);
    }
    pe_bias_gpu_destroy(&g.dev, &b);
    pe_encoding_destroy(e);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(kerple_glsl_matches_hand_values)
{
    /* -r1 log(1 + r2 d), r1 = {2, 3}, r2 = {0.5, 0.25} (exact in fp32):
     * d = 6 / 4 give -2 ln 4 / -3 ln 2, d = 2^20 gives -2 ln(1 + 2^19) and
     * -3 ln(1 + 2^18) (hand values, Python math.log1p). fp32 with Vulkan's
     * log (2^-21 absolute on [0.5, 2], 3 ulp beyond) and three roundings:
     * within r1 (2^-21 + 3 ulp(log) + 2^-23) + ulp(|b|) < 2^-18 (1 + |b|). */
    const struct { uint32_t h; int32_t qpos, kpos; double want; } pts[] = {
        {0, 10, 4, -2.772588722239781},           {1, 100, 104, -2.0794415416798357},
        {0, 1 << 20, 0, -26.33959667597155},      {1, 0, 1 << 20, -37.42995919430702},
        {1, 5, 5, 0.0},
    };
    rl_gpu g;
    rl_gpu_open(&g);
    pe_shape s = {.head_dim = 8, .heads = 2};
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_int_eq(make_enc("kerple", "{\"r1\": [2, 3], \"r2\": [0.5, 0.25]}", &s, &e, &err),
                     RL_OK);
    pe_bias_gpu b;
    ck_assert_int_eq(pe_bias_gpu_create(&g.dev, e, NULL, NULL, 1, 2, 2, 8, &b, &err), RL_OK);
    ck_assert_str_eq(b.variant, "kerple");
    enum { N = RL_ARRAY_LEN(pts) };
    chk_bias_item items[N];
    float out[N];
    memset(items, 0, sizeof items);
    for (int i = 0; i < N; i++)
        items[i] = (chk_bias_item){.h = pts[i].h, .qpos = pts[i].qpos, .kpos = pts[i].kpos};
    int guard_ok = 0;
    ck_assert_int_eq(chk_pe_bias_eval(&g.dev, &b, items, N, out, &guard_ok, &err), RL_OK);
    ck_assert(guard_ok);
    for (int i = 0; i < N; i++)
        ck_assert_double_eq_tol(out[i], pts[i].want, 0x1p-18 * (1 + fabs(pts[i].want)));
    pe_bias_gpu_destroy(&g.dev, &b);
    pe_encoding_destroy(e);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(learned_table_policies_on_device)
{
    /* T[p][d] = 10 p + d, x = 0.5: y = 0.5 + T[row] is exact in fp32. */
    rl_gpu g;
    rl_gpu_open(&g);
    tdir d;
    tdir_open(&d);
    float t[3 * 4];
    for (int p = 0; p < 3; p++)
        for (int k = 0; k < 4; k++)
            t[p * 4 + k] = (float)(10 * p + k);
    uint64_t shp[2] = {3, 4};
    const char *path = tdir_npy(&d, "tab.npy", "<f4", 0, shp, 2, t, sizeof t);
    uint32_t pos[3] = {1, 7, 3};
    const int rows[2][3] = {{1, 2, 2}, {1, 1, 0}}; /* clamp, wrap (7 mod 3, 3 mod 3) */
    const char *pol[2] = {"clamp", "wrap"};
    float x[3 * 2 * 4], y[3 * 2 * 4];
    for (int i = 0; i < 24; i++)
        x[i] = 0.5f;
    for (int k = 0; k < 2; k++) {
        char js[300];
        snprintf(js, sizeof js, "{\"path\": \"%s\", \"beyond\": \"%s\"}", path, pol[k]);
        pe_shape s = {.head_dim = 4, .heads = 2};
        pe_encoding *e = NULL;
        rl_error err = {0};
        ck_assert_msg(make_enc("learned", js, &s, &e, &err) == RL_OK, "%s", err.msg);
        pe_vec_gpu vg;
        int guard_ok = 0;
        ck_assert_msg(pe_vec_gpu_create(&g.dev, e, 2, &vg, &err) == RL_OK, "%s", err.msg);
        ck_assert_msg(pe_vec_gpu_apply(&g.dev, &vg, x, pos, 3, y, &guard_ok, &err) == RL_OK, "%s",
                      err.msg);
        ck_assert(guard_ok);
        for (int tk = 0; tk < 3; tk++)
            for (int h = 0; h < 2; h++)
                for (int c = 0; c < 4; c++)
                    ck_assert_float_eq(y[(tk * 2 + h) * 4 + c], 0.5f + (float)(10 * rows[k][tk] + c));
        pe_vec_gpu_destroy(&vg);
        pe_encoding_destroy(e);
    }
    /* beyond=error: the device path refuses before running */
    char js[300];
    snprintf(js, sizeof js, "{\"path\": \"%s\"}", path);
    pe_shape s = {.head_dim = 4, .heads = 2};
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_int_eq(make_enc("learned", js, &s, &e, &err), RL_OK);
    pe_vec_gpu vg;
    ck_assert_int_eq(pe_vec_gpu_create(&g.dev, e, 2, &vg, &err), RL_OK);
    ck_assert_int_eq(pe_vec_gpu_apply(&g.dev, &vg, x, pos, 3, y, NULL, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "position 7 (token 1) is beyond the table's 3 rows"));
    pe_vec_gpu_destroy(&vg);
    pe_encoding_destroy(e);
    tdir_close(&d);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(rope_table_mode_records_without_transfers)
{
    /* The cos/sin table depends on the positions: pe_vec_gpu_prepare uploads
     * it from the host positions, and recording moves nothing (it used to
     * download the position buffer while recording). */
    rl_gpu g;
    rl_gpu_open(&g);
    pe_shape s = {.head_dim = 8, .heads = 1};
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_msg(make_enc("rope", "{\"precision\": \"table\"}", &s, &e, &err) == RL_OK, "%s",
                  err.msg);
    pe_vec_gpu vg;
    ck_assert_msg(pe_vec_gpu_create(&g.dev, e, 1, &vg, &err) == RL_OK, "%s", err.msg);
    enum { T = 5 };
    uint32_t pos[T] = {0, 3, 9, 100, 7};
    float x[T * 8];
    for (int i = 0; i < T * 8; i++)
        x[i] = 1.0f;
    rlvk_buffer bx, bp;
    rlvk_cmd cmd;
    ck_assert_int_eq(rlvk_buffer_create(&g.dev, sizeof x, "x", &bx, &err), RL_OK);
    ck_assert_int_eq(rlvk_buffer_create(&g.dev, sizeof pos, "pos", &bp, &err), RL_OK);
    ck_assert_int_eq(rlvk_buffer_upload(&g.dev, &bx, 0, x, sizeof x, &err), RL_OK);
    ck_assert_int_eq(rlvk_buffer_upload(&g.dev, &bp, 0, pos, sizeof pos, &err), RL_OK);
    ck_assert_int_eq(rlvk_cmd_begin(&g.dev, 2, &cmd, &err), RL_OK);
    /* Without its table the launch is refused, naming the missing step. */
    ck_assert_int_eq(pe_vec_gpu_record(&cmd, &vg, &bx, &bx, &bp, T, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "pe_vec_gpu_prepare"));
    ck_assert_msg(pe_vec_gpu_prepare(&vg, pos, T, &err) == RL_OK, "%s", err.msg);
    uint64_t up = g.dev.bytes_uploaded, down = g.dev.bytes_downloaded;
    ck_assert_msg(pe_vec_gpu_record(&cmd, &vg, &bx, &bx, &bp, T, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(g.dev.bytes_uploaded, up);
    ck_assert_uint_eq(g.dev.bytes_downloaded, down);
    ck_assert_int_eq(rlvk_cmd_submit_wait(&cmd, &err), RL_OK);
    float y[T * 8];
    double ref[T * 8];
    ck_assert_int_eq(rlvk_buffer_download(&g.dev, &bx, 0, y, sizeof y, &err), RL_OK);
    ck_assert_int_eq(pe_vec_ref(e, x, pos, T, 1, ref, &err), RL_OK);
    for (int i = 0; i < T * 8; i++)
        ck_assert_double_eq_tol(y[i], ref[i], 1e-6);
    rlvk_cmd_destroy(&cmd);
    rlvk_buffer_destroy(&g.dev, &bp);
    rlvk_buffer_destroy(&g.dev, &bx);
    pe_vec_gpu_destroy(&vg);
    pe_encoding_destroy(e);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(bias_buffers_follow_the_contract)
{
    rl_gpu g;
    rl_gpu_open(&g);
    const struct {
        const char *enc, *variant;
        uint32_t n;
    } want[] = {{"nope", "none", 0}, {"sinusoidal", "none", 0}, {"alibi", "alibi", 2},
                {"t5", "t5", 2},     {"xl", "xl", 4},           {"kerple", "kerple", 1}};
    float q[2 * 4 * 8], k[2 * 2 * 8];
    for (int i = 0; i < 64; i++)
        q[i] = 0.1f * (float)i;
    for (int i = 0; i < 32; i++)
        k[i] = -0.1f * (float)i;
    for (size_t i = 0; i < RL_ARRAY_LEN(want); i++) {
        pe_shape s = {.head_dim = 8, .heads = 4, .kv_heads = 2};
        pe_encoding *e = NULL;
        rl_error err = {0};
        ck_assert_int_eq(make_enc(want[i].enc, "{}", &s, &e, &err), RL_OK);
        ck_assert_int_eq(pe_has_bias(e), want[i].n > 0);
        pe_bias_gpu b;
        ck_assert_msg(pe_bias_gpu_create(&g.dev, e, q, k, 2, 4, 2, 8, &b, &err) == RL_OK, "%s",
                      err.msg);
        ck_assert_str_eq(b.variant, want[i].variant);
        ck_assert_uint_eq(b.n_buffers, want[i].n);
        for (uint32_t j = 0; j < b.n_buffers; j++)
            ck_assert(b.buffers[j].buffer != VK_NULL_HANDLE);
        pe_bias_gpu_destroy(&g.dev, &b);
        /* a different model shape than the encoding's is refused */
        ck_assert_int_eq(pe_bias_gpu_create(&g.dev, e, q, k, 2, 8, 2, 8, &b, &err), RL_ERR_ARG);
        ck_assert_ptr_nonnull(strstr(err.msg, "bias prepared for heads 8"));
        if (strcmp(want[i].enc, "xl") == 0) {
            ck_assert_int_eq(pe_bias_gpu_create(&g.dev, e, NULL, NULL, 2, 4, 2, 8, &b, &err),
                             RL_ERR_ARG);
            ck_assert_str_eq(err.msg, "xl: the bias needs q and k of at least one token "
                                      "(it precomputes per-token terms)");
        }
        pe_encoding_destroy(e);
    }
    rl_gpu_close(&g);
}
END_TEST

int main(void)
{
    rl_test_pin_driver();
    rl_test_require_vulkan("pe_gpu");
    Suite *s = suite_create("pe_gpu");
    /* the `ropelab check` pe cases */
    TCase *tc_check = tcase_create("check");
    tcase_set_timeout(tc_check, 300);
    tcase_add_test(tc_check, check_cases_pass_on_device);
    suite_add_tcase(s, tc_check);
    /* hand-computed values through the GLSL bias and pe_add.comp */
    TCase *tc_hand = tcase_create("hand");
    tcase_set_timeout(tc_hand, 300);
    tcase_add_test(tc_hand, t5_glsl_buckets_match_hand_table);
    tcase_add_test(tc_hand, alibi_glsl_uses_the_paper_slopes_for_12_heads);
    tcase_add_test(tc_hand, kerple_glsl_matches_hand_values);
    tcase_add_test(tc_hand, learned_table_policies_on_device);
    suite_add_tcase(s, tc_hand);
    /* what the encodings' device side uploads and binds: RoPE's table, the bias buffers */
    TCase *tc_buffers = tcase_create("buffers");
    tcase_set_timeout(tc_buffers, 300);
    tcase_add_test(tc_buffers, rope_table_mode_records_without_transfers);
    tcase_add_test(tc_buffers, bias_buffers_follow_the_contract);
    suite_add_tcase(s, tc_buffers);
    return rl_test_run(s);
}
