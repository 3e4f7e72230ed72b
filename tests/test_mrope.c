/* mRoPE (Qwen2-VL sections, Qwen3-VL interleaved) and 3-D positions: the
 * stream rule against HF's own slicing re-enacted here, the vl layout
 * against a table worked out by hand from HF get_rope_index, the double
 * reference against hand-computed angles, (p, p, p) = plain RoPE exactly
 * (reference and device), the device against the reference through the
 * registry (vl and npy layouts), and the refusals. */
#include <math.h>
#include <string.h>

#include "pe/pe.h"
#include "pe/rope.h"
/* one device for the suite (rl_test.h) */
#define RL_TEST_SHARED_GPU
#include "rl_test.h"
#include "test_pe_util.h"

static rope_freqs mk(uint32_t hd, uint32_t s0, uint32_t s1, uint32_t s2, int inter)
{
    rope_desc d = {.head_dim = hd, .n_mrope_section = 3, .mrope_section = {s0, s1, s2},
                   .mrope_interleaved = inter};
    rope_freqs f;
    rl_error err = {0};
    ck_assert_msg(rope_freqs_compute(&d, &f, &err) == RL_OK, "%s", err.msg);
    return f;
}

START_TEST(sections_follow_hfs_split_of_the_doubled_table)
{
    /* HF Qwen2-VL apply_multimodal_rotary_pos_emb: mrope_section * 2 =
     * [16, 24, 24, 16, 24, 24] splits the 128 cos columns (cat(freqs,
     * freqs)); chunk i takes stream i % 3. Re-enacted over the columns:
     * column c and c + 64 (the two halves of pair c) must get the same
     * stream, and it must be rope_mrope_stream's. */
    rope_freqs f = mk(128, 16, 24, 24, 0);
    const uint32_t chunks[6] = {16, 24, 24, 16, 24, 24};
    uint32_t col_stream[128], c = 0;
    for (uint32_t i = 0; i < 6; i++)
        for (uint32_t k = 0; k < chunks[i]; k++)
            col_stream[c++] = i % 3;
    ck_assert_uint_eq(c, 128);
    for (uint32_t j = 0; j < 64; j++) {
        ck_assert_uint_eq(col_stream[j], col_stream[j + 64]);
        ck_assert_uint_eq(rope_mrope_stream(&f, j), col_stream[j]);
    }
}
END_TEST

START_TEST(interleaved_follows_hfs_slices)
{
    /* HF Qwen3-VL apply_interleaved_mrope: freqs_t = freqs[0]; for dim,
     * offset in ((1, 1), (2, 2)): freqs_t[..., offset:section[dim]*3:3] =
     * freqs[dim][...]. Re-enacted for [24, 20, 20], then a few values by
     * hand (t h w t h w ... up to pair 59, then t for 60..63). */
    rope_freqs f = mk(128, 24, 20, 20, 1);
    uint32_t want[64] = {0};
    const uint32_t sec[3] = {24, 20, 20};
    for (uint32_t dim = 1; dim <= 2; dim++)
        for (uint32_t idx = dim; idx < sec[dim] * 3; idx += 3)
            want[idx] = dim;
    for (uint32_t j = 0; j < 64; j++)
        ck_assert_uint_eq(rope_mrope_stream(&f, j), want[j]);
    ck_assert_uint_eq(rope_mrope_stream(&f, 0), 0);
    ck_assert_uint_eq(rope_mrope_stream(&f, 1), 1);
    ck_assert_uint_eq(rope_mrope_stream(&f, 2), 2);
    ck_assert_uint_eq(rope_mrope_stream(&f, 58), 1);
    ck_assert_uint_eq(rope_mrope_stream(&f, 59), 2);
    for (uint32_t j = 60; j < 64; j++)
        ck_assert_uint_eq(rope_mrope_stream(&f, j), 0);
}
END_TEST

START_TEST(vl_positions_follow_get_rope_index)
{
    /* 3 text tokens, then an image with image_grid_thw [1, 4, 6] merged 2x2
     * into 1 x 2 x 3 tokens, then text. By hand from HF get_rope_index:
     * text arange(3) on every stream; image (t, h, w) + 3 in t, h, w order;
     * the text after starts at max + 1 = 3 + 2 + 1 = 6. */
    rope_desc d = {.head_dim = 8, .n_mrope_section = 3, .mrope_section = {2, 1, 1},
                   .mrope_positions = ROPE_MROPE_POS_VL, .n_mrope_image_grid = 3,
                   .mrope_image_grid = {1, 4, 6}, .mrope_text_before = 3};
    rope_freqs f;
    rl_error err = {0};
    ck_assert_msg(rope_freqs_compute(&d, &f, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(rope_mrope_image_tokens(&f), 6);
    uint32_t idx[11], p3[33];
    for (uint32_t i = 0; i < 11; i++)
        idx[i] = i;
    const uint32_t want[11][3] = {{0, 0, 0}, {1, 1, 1}, {2, 2, 2}, {3, 3, 3}, {3, 3, 4}, {3, 3, 5},
                                  {3, 4, 3}, {3, 4, 4}, {3, 4, 5}, {6, 6, 6}, {7, 7, 7}};
    ck_assert_int_eq(rope_mrope_positions(&f, NULL, 0, idx, 11, p3, &err), RL_OK);
    for (uint32_t i = 0; i < 11; i++)
        for (int s = 0; s < 3; s++)
            ck_assert_msg(p3[3 * i + s] == want[i][s], "token %u stream %d: %u, want %u", i, s,
                          p3[3 * i + s], want[i][s]);
    /* a video-like grid t = 2: t_index 0, 1 (Qwen2-VL), after = 3 + max(2, 2, 3) */
    d.mrope_image_grid[0] = 2;
    ck_assert_int_eq(rope_freqs_compute(&d, &f, &err), RL_OK);
    uint32_t i2[2] = {9, 15}, q[6];
    ck_assert_int_eq(rope_mrope_positions(&f, NULL, 0, i2, 2, q, &err), RL_OK);
    ck_assert_uint_eq(q[0], 4); /* k = 6: t 1, h 0, w 0 */
    ck_assert_uint_eq(q[1], 3);
    ck_assert_uint_eq(q[2], 3);
    ck_assert_uint_eq(q[3], 6); /* first text after the 12 image tokens: 3 + 3 */
    ck_assert_uint_eq(q[5], 6);
}
END_TEST

START_TEST(reference_rotates_each_pair_by_its_streams_angle)
{
    /* head_dim 12, sections [2, 2, 2] (pairs t t h h w w), half layout; x =
     * 1 on pair j's first element, 2 on its second; token at (5, 1000, 77). */
    rope_freqs f = mk(12, 2, 2, 2, 0);
    float x[12];
    for (int i = 0; i < 12; i++)
        x[i] = i < 6 ? 1.0f : 2.0f;
    uint32_t p3[3] = {5, 1000, 77};
    double y[12];
    rope_ref_apply3(&f, x, p3, 1, 1, y);
    const uint32_t pos_of_pair[6] = {5, 5, 1000, 1000, 77, 77};
    for (int j = 0; j < 6; j++) {
        double th = pow(10000.0, -2.0 * j / 12.0), a = pos_of_pair[j] * th;
        ck_assert_double_eq_tol(y[j], cos(a) - 2 * sin(a), 1e-12);
        ck_assert_double_eq_tol(y[j + 6], 2 * cos(a) + sin(a), 1e-12);
    }
}
END_TEST

/* Text positions (p, p, p) rotate exactly as plain RoPE: the reference
 * (bitwise) and, through the registry, an mRoPE encoding with 1-D
 * positions (layout text) against the plain one. */
START_TEST(text_positions_are_plain_rope_exactly_in_the_reference)
{
    rope_freqs m = mk(64, 8, 12, 12, _i);
    rope_desc pd = {.head_dim = 64};
    rope_freqs p;
    rl_error err = {0};
    ck_assert_int_eq(rope_freqs_compute(&pd, &p, &err), RL_OK);
    enum { T = 9, H = 2, D = 64 };
    float x[T * H * D];
    uint32_t pos[T], p3[3 * T];
    for (int i = 0; i < T * H * D; i++)
        x[i] = (float)sin(0.37 * i);
    for (int t = 0; t < T; t++)
        pos[t] = p3[3 * t] = p3[3 * t + 1] = p3[3 * t + 2] = (uint32_t)(t * 131071u + 3u);
    double y1[T * H * D], y3[T * H * D];
    rope_ref_apply(&p, x, pos, T, H, y1);
    rope_ref_apply3(&m, x, p3, T, H, y3);
    ck_assert_int_eq(memcmp(y1, y3, sizeof y1), 0);
    /* registry: 1-D positions through the family */
    pe_shape sh = {.head_dim = D, .heads = H};
    pe_encoding *em = NULL, *ep = NULL;
    ck_assert_msg(make_enc("rope", _i ? "{\"mrope_section\": [8, 12, 12], \"mrope_interleaved\": true}"
                                      : "{\"mrope_section\": [8, 12, 12]}",
                           &sh, &em, &err) == RL_OK, "%s", err.msg);
    ck_assert_int_eq(make_enc("rope", "{}", &sh, &ep, &err), RL_OK);
    ck_assert_int_eq(pe_vec_ref(em, x, pos, T, H, y3, &err), RL_OK);
    ck_assert_int_eq(pe_vec_ref(ep, x, pos, T, H, y1, &err), RL_OK);
    ck_assert_int_eq(memcmp(y1, y3, sizeof y1), 0);
    pe_encoding_destroy(em);
    pe_encoding_destroy(ep);
}
END_TEST

static void refused(const char *json, uint32_t hd, const char *needle)
{
    pe_shape sh = {.head_dim = hd};
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_int_eq(make_enc("rope", json, &sh, &e, &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, needle), "'%s' not in: %s", needle, err.msg);
}

START_TEST(bad_settings_are_refused_naming_the_key)
{
    refused("{\"mrope_section\": [16, 24, 20]}", 128,
            "mrope_section [16, 24, 20] sums to 60 pairs; the rotation has 64");
    refused("{\"mrope_section\": [16, 24]}", 128, "mrope_section must be a list of 3 integers");
    refused("{\"mrope_section\": [16, -1, 24]}", 128, "mrope_section[1]");
    refused("{\"mrope_interleaved\": true}", 128, "mrope_interleaved applies to mRoPE only");
    refused("{\"mrope_positions\": \"vl\", \"mrope_image_grid\": [1, 4, 4]}", 128,
            "mrope_positions applies to mRoPE only");
    refused("{\"mrope_section\": [16, 24, 24], \"mrope_positions\": \"vl\"}", 128,
            "mrope_positions vl needs mrope_image_grid");
    refused("{\"mrope_section\": [16, 24, 24], \"mrope_positions\": \"vl\", "
            "\"mrope_image_grid\": [1, 4, 5]}", 128,
            "mrope_image_grid[2] 5 must be a multiple of spatial_merge_size 2");
    refused("{\"mrope_section\": [16, 24, 24], \"mrope_image_grid\": [1, 4, 4]}", 128,
            "mrope_image_grid applies to mrope_positions vl only");
    refused("{\"mrope_section\": [16, 24, 24], \"mrope_positions\": \"npy\"}", 128,
            "mrope_positions npy needs mrope_positions_path");
    refused("{\"mrope_section\": [16, 24, 24], \"precision\": \"hf\"}", 128,
            "precision hf (a framework emulation) does not model mRoPE");
    refused("{\"mrope_section\": [16, 24, 24], \"rope_type\": \"dynamic\", \"factor\": 2, "
            "\"max_position_embeddings\": 4096, \"dynamic_mode\": \"cache_consistent\"}", 128,
            "dynamic_mode cache_consistent");
}
END_TEST

START_TEST(npy_positions_are_checked_and_looked_up)
{
    tdir d;
    tdir_open(&d);
    pe_shape sh = {.head_dim = 8, .heads = 1};
    pe_encoding *e = NULL;
    rl_error err = {0};
    char js[400];
    /* a wrong shape, a negative element */
    int32_t bad[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    uint64_t s42[2] = {4, 2};
    const char *p1 = tdir_npy(&d, "s42.npy", "<i4", 0, s42, 2, bad, sizeof bad);
    snprintf(js, sizeof js, "{\"mrope_section\": [2, 1, 1], \"mrope_positions\": \"npy\", "
             "\"mrope_positions_path\": \"%s\"}", p1);
    ck_assert_int_eq(make_enc("rope", js, &sh, &e, &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "shape (4, 2); expected (tokens, 3)"), "%s", err.msg);
    int32_t neg[6] = {0, 1, 2, 3, -4, 5};
    uint64_t s23[2] = {2, 3};
    const char *p2 = tdir_npy(&d, "neg.npy", "<i4", 0, s23, 2, neg, sizeof neg);
    snprintf(js, sizeof js, "{\"mrope_section\": [2, 1, 1], \"mrope_positions\": \"npy\", "
             "\"mrope_positions_path\": \"%s\"}", p2);
    ck_assert_int_eq(make_enc("rope", js, &sh, &e, &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "element 4 is negative"), "%s", err.msg);
    /* a good table: token i at row i; index 2 is past its rows */
    int64_t good[6] = {7, 1000, 3, 0, 1, 2};
    const char *p3 = tdir_npy(&d, "good.npy", "<i8", 0, s23, 2, good, sizeof good);
    snprintf(js, sizeof js, "{\"mrope_section\": [2, 1, 1], \"mrope_positions\": \"npy\", "
             "\"mrope_positions_path\": \"%s\"}", p3);
    ck_assert_msg(make_enc("rope", js, &sh, &e, &err) == RL_OK, "%s", err.msg);
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = 1.0f + (float)i;
    uint32_t idx[2] = {0, 1}, three[6] = {7, 1000, 3, 0, 1, 2};
    double y[16], want[16];
    ck_assert_int_eq(pe_vec_ref(e, x, idx, 2, 1, y, &err), RL_OK);
    rope_ref_apply3(pe_rope_freqs(e), x, three, 2, 1, want);
    ck_assert_int_eq(memcmp(y, want, sizeof y), 0);
    uint32_t past[1] = {2};
    ck_assert_int_eq(pe_vec_ref(e, x, past, 1, 1, y, &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "token 2 is past its 2 rows"), "%s", err.msg);
    pe_encoding_destroy(e);
    tdir_close(&d);
}
END_TEST

/* ---- device ------------------------------------------------------------- */

START_TEST(text_positions_on_device_are_plain_rope_bitwise)
{
    /* (p, p, p) through the mRoPE variant of rope.comp = the plain kernel,
     * bit for bit: fp32, table and precise; vec4 (D 64) and scalar (D 36)
     * paths; sections and interleaved. */
    rl_gpu g;
    rl_gpu_open(&g);
    rope_kernel k;
    rl_error err = {0};
    ck_assert_int_eq(rope_kernel_create(&g.dev, &k, &err), RL_OK);
    enum { T = 7, H = 3 };
    for (int shape = 0; shape < 2; shape++)
        for (int prec = RL_ROPE_PREC_FP32; prec <= RL_ROPE_PREC_PRECISE; prec++) {
            uint32_t D = shape ? 36 : 64;
            rope_desc md = {.head_dim = D, .precision = prec, .n_mrope_section = 3,
                            .mrope_section = {shape ? 6 : 8, shape ? 6 : 12, shape ? 6 : 12},
                            .mrope_interleaved = prec == RL_ROPE_PREC_TABLE};
            rope_desc pd = {.head_dim = D, .precision = prec};
            rope_freqs m, p;
            ck_assert_int_eq(rope_freqs_compute(&md, &m, &err), RL_OK);
            ck_assert_int_eq(rope_freqs_compute(&pd, &p, &err), RL_OK);
            float x[T * H * 64], y1[T * H * 64], y3[T * H * 64];
            uint32_t pos[T], p3[3 * T];
            for (uint32_t i = 0; i < T * H * D; i++)
                x[i] = (float)cos(0.11 * i);
            for (int t = 0; t < T; t++)
                pos[t] = p3[3 * t] = p3[3 * t + 1] = p3[3 * t + 2] = (uint32_t)t * 174763u;
            int g1 = 0, g3 = 0;
            ck_assert_msg(rope_gpu_apply(&g.dev, &k, &p, x, pos, T, H, y1, NULL, &g1, &err) == RL_OK,
                          "%s", err.msg);
            ck_assert_msg(rope_gpu_apply3(&g.dev, &k, &m, x, p3, T, H, y3, NULL, &g3, &err) == RL_OK,
                          "%s", err.msg);
            ck_assert(g1 && g3);
            ck_assert_msg(memcmp(y1, y3, (size_t)T * H * D * sizeof(float)) == 0,
                          "D %u precision %s differs", D, rope_precision_name(prec));
        }
    rope_kernel_destroy(&g.dev, &k);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(one_kernel_object_keeps_a_pipeline_per_section_list)
{
    /* Two sections of one shape through one rope_kernel: the second must
     * get its own specialisation (a pipeline cached by shape alone would
     * rotate it with the first's sections). */
    rl_gpu g;
    rl_gpu_open(&g);
    rope_kernel k;
    rl_error err = {0};
    ck_assert_int_eq(rope_kernel_create(&g.dev, &k, &err), RL_OK);
    enum { T = 9, H = 2, D = 64 };
    float x[T * H * D], y[T * H * D];
    double ref[T * H * D], bound[T * H * D], scale[T * H * D];
    uint32_t p3[3 * T], pmax[T];
    for (int i = 0; i < T * H * D; i++)
        x[i] = (float)sin(1.3 * i);
    for (uint32_t t = 0; t < T; t++) {
        p3[3 * t] = 3 * t, p3[3 * t + 1] = 1000 + 7 * t, p3[3 * t + 2] = 50000 - 11 * t;
        pmax[t] = p3[3 * t + 2];
    }
    const uint32_t secs[2][3] = {{8, 12, 12}, {16, 8, 8}};
    for (int c = 0; c < 2; c++) {
        rope_freqs f = mk(D, secs[c][0], secs[c][1], secs[c][2], 0);
        int guard = 0;
        ck_assert_msg(rope_gpu_apply3(&g.dev, &k, &f, x, p3, T, H, y, NULL, &guard, &err) == RL_OK,
                      "%s", err.msg);
        rope_ref_apply3(&f, x, p3, T, H, ref);
        rope_error_bounds(&f, x, pmax, T, H, bound, scale);
        for (int i = 0; i < T * H * D; i++)
            ck_assert_msg(fabs(y[i] - ref[i]) <= bound[i], "sections %d: element %d: %g vs %g", c,
                          i, y[i], ref[i]);
    }
    rope_kernel_destroy(&g.dev, &k);
    rl_gpu_close(&g);
}
END_TEST

/* The device through the registry (vl layout at positions around an image,
 * npy with independent streams to 2^20) within the family bound; and a
 * rotation reading one wrong stream is far outside it. */
START_TEST(device_matches_reference_through_the_registry)
{
    rl_gpu g;
    rl_gpu_open(&g);
    tdir d;
    tdir_open(&d);
    enum { T = 40, H = 2, D = 64 };
    uint32_t rows3[3 * T];
    for (uint32_t t = 0; t < T; t++) {
        rows3[3 * t] = t * 26215u;                     /* up to ~2^20 */
        rows3[3 * t + 1] = (T - 1 - t) * 26887u;       /* 2^20 at token 0 */
        rows3[3 * t + 2] = (t * 7919u) % (1u << 20);
    }
    uint64_t shp[2] = {T, 3};
    const char *path = tdir_npy(&d, "p3.npy", "<u4", 0, shp, 2, rows3, sizeof rows3);
    char js[2][400];
    snprintf(js[0], sizeof js[0], "{\"mrope_section\": [8, 12, 12], \"mrope_positions\": \"vl\", "
             "\"mrope_image_grid\": [1, 8, 12], \"mrope_text_before\": 5}");
    snprintf(js[1], sizeof js[1], "{\"mrope_section\": [8, 12, 12], \"mrope_interleaved\": true, "
             "\"mrope_positions\": \"npy\", \"mrope_positions_path\": \"%s\"}", path);
    float x[T * H * D], y[T * H * D];
    double ref[T * H * D], bound[T * H * D], scale[T * H * D];
    uint32_t idx[T];
    for (uint32_t i = 0; i < T; i++)
        idx[i] = (i * 17u) % T; /* any order */
    for (int i = 0; i < T * H * D; i++)
        x[i] = (float)sin(0.7 * i + 0.1);
    for (int c = 0; c < 2; c++) {
        pe_shape sh = {.head_dim = D, .heads = H};
        pe_encoding *e = NULL;
        rl_error err = {0};
        ck_assert_msg(make_enc("rope", js[c], &sh, &e, &err) == RL_OK, "%s", err.msg);
        ck_assert_int_eq(pe_vec_ref(e, x, idx, T, H, ref, &err), RL_OK);
        pe_vec_bound(e, x, idx, T, H, bound, scale);
        pe_vec_gpu vg;
        int guard_ok = 0;
        ck_assert_msg(pe_vec_gpu_create(&g.dev, e, H, &vg, &err) == RL_OK, "%s", err.msg);
        ck_assert_msg(pe_vec_gpu_apply(&g.dev, &vg, x, idx, T, y, &guard_ok, &err) == RL_OK, "%s",
                      err.msg);
        ck_assert(guard_ok);
        for (int i = 0; i < T * H * D; i++)
            ck_assert_msg(fabs(y[i] - ref[i]) <= bound[i], "%s: element %d: %g vs %g (bound %g)",
                          c ? "npy" : "vl", i, y[i], ref[i], bound[i]);
        /* the same vectors rotated with every pair at stream t only differ
         * far beyond the bound somewhere (the test can fail) */
        rope_freqs t_only = *pe_rope_freqs(e);
        t_only.mrope_section[0] = 32, t_only.mrope_section[1] = t_only.mrope_section[2] = 0;
        t_only.mrope = ROPE_MROPE_SECTIONS;
        uint32_t p3[3 * T];
        ck_assert_int_eq(rope_mrope_positions(pe_rope_freqs(e), c ? rows3 : NULL, c ? T : 0, idx, T,
                                              p3, &err), RL_OK);
        double wrong[T * H * D], worst = 0;
        rope_ref_apply3(&t_only, x, p3, T, H, wrong);
        for (int i = 0; i < T * H * D; i++)
            worst = fmax(worst, fabs(wrong[i] - ref[i]) / (bound[i] + 1e-30));
        ck_assert_double_gt(worst, 100);
        pe_vec_gpu_destroy(&vg);
        pe_encoding_destroy(e);
    }
    tdir_close(&d);
    rl_gpu_close(&g);
}
END_TEST

int main(void)
{
    rl_test_pin_driver();
    Suite *s = suite_create("mrope");
    TCase *tc = tcase_create("mrope_cpu");
    tcase_add_test(tc, sections_follow_hfs_split_of_the_doubled_table);
    tcase_add_test(tc, interleaved_follows_hfs_slices);
    tcase_add_test(tc, vl_positions_follow_get_rope_index);
    tcase_add_test(tc, reference_rotates_each_pair_by_its_streams_angle);
    tcase_add_loop_test(tc, text_positions_are_plain_rope_exactly_in_the_reference, 0, 2);
    tcase_add_test(tc, bad_settings_are_refused_naming_the_key);
    tcase_add_test(tc, npy_positions_are_checked_and_looked_up);
    suite_add_tcase(s, tc);
    rl_test_require_vulkan("mrope");
    TCase *tg = tcase_create("mrope_gpu");
    tcase_set_timeout(tg, 300);
    tcase_add_test(tg, text_positions_on_device_are_plain_rope_bitwise);
    tcase_add_test(tg, device_matches_reference_through_the_registry);
    tcase_add_test(tg, one_kernel_object_keeps_a_pipeline_per_section_list);
    suite_add_tcase(s, tg);
    return rl_test_run(s);
}
