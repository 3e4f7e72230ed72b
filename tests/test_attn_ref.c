/* The attention CPU reference against hand-computed statistics. */
#include "rl_check.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "core/rl_util.h"
#include "rl_test.h"

static attn_ref_problem problem(uint64_t n, uint32_t heads, uint32_t kv, uint32_t d, int causal,
                                const float *q, const float *k, const uint32_t *pos)
{
    attn_ref_problem p = {.tokens = n, .heads = heads, .kv_heads = kv, .head_dim = d,
                          .causal = causal, .scale = 1, .scale_b = 1, .bias_a = 1, .bias_b = 1,
                          .q = q, .k = k, .q_b = q, .k_b = k, .pos = pos};
    return p;
}

START_TEST(uniform_logits_give_log_n_entropy_and_first_argmax)
{
    /* q = 0: every logit is 0, so p = 1/N, lse = H = log N, argmax = 0. */
    enum { N = 10, D = 4 };
    float q[N * D] = {0}, k[N * D];
    uint32_t pos[N];
    for (int i = 0; i < N * D; i++)
        k[i] = (float)(i % 7) - 3;
    for (int i = 0; i < N; i++)
        pos[i] = (uint32_t)i;
    attn_ref_problem p = problem(N, 1, 1, D, 0, q, k, pos);
    double scratch[2 * N];
    attn_ref_row r;
    attn_ref_row_stats(&p, 0, 3, 5, 0, scratch, &r, NULL, NULL, NULL);
    ck_assert_double_eq_tol(r.lse, log(10.0), 1e-14);
    ck_assert_double_eq_tol(r.entropy, log(10.0), 1e-14);
    ck_assert_double_eq(r.max, 0);
    ck_assert_uint_eq(r.argmax, 0);
    ck_assert_double_eq_tol(r.argmax_p, 0.1, 1e-15);
    ck_assert_double_eq_tol(r.target_p, 0.1, 1e-15);
}
END_TEST

START_TEST(two_keys_match_closed_form)
{
    /* logits 0 and 2 (scale 1): lse = log(1 + e^2), p1 = e^2 / (1 + e^2). */
    float q[2 * 4] = {1, 0, 0, 0, 1, 0, 0, 0}, k[2 * 4] = {0, 5, 0, 0, 2, 0, 0, 0};
    uint32_t pos[2] = {0, 1};
    attn_ref_problem p = problem(2, 1, 1, 4, 0, q, k, pos);
    double scratch[4];
    attn_ref_row r;
    attn_ref_row_stats(&p, 0, 0, 0, 0, scratch, &r, NULL, NULL, NULL);
    double e2 = exp(2.0), p1 = e2 / (1 + e2), p0 = 1 / (1 + e2);
    ck_assert_double_eq_tol(r.lse, log(1 + e2), 1e-14);
    ck_assert_double_eq(r.max, 2);
    ck_assert_uint_eq(r.argmax, 1);
    ck_assert_double_eq_tol(r.argmax_p, p1, 1e-15);
    ck_assert_double_eq_tol(r.target_p, p0, 1e-15);
    ck_assert_double_eq_tol(r.entropy, -(p0 * log(p0) + p1 * log(p1)), 1e-14);
    /* Paired with scale_b = 0: p_b uniform, KL = sum p log(2 p). */
    p.paired = 1;
    p.scale_b = 0;
    attn_ref_row_stats(&p, 0, 0, 0, 0, scratch, &r, NULL, NULL, NULL);
    ck_assert_double_eq_tol(r.kl, p0 * log(2 * p0) + p1 * log(2 * p1), 1e-14);
    ck_assert_double_eq_tol(r.lse_b, log(2.0), 1e-15);
}
END_TEST

START_TEST(causal_first_row_sees_only_itself)
{
    float q[3 * 4], k[3 * 4];
    for (int i = 0; i < 12; i++)
        q[i] = k[i] = (float)i * 0.25f;
    uint32_t pos[3] = {0, 1, 2};
    attn_ref_problem p = problem(3, 1, 1, 4, 1, q, k, pos);
    double scratch[6];
    attn_ref_row r;
    attn_ref_row_stats(&p, 0, 0, 2, 0, scratch, &r, NULL, NULL, NULL);
    ck_assert_uint_eq(r.n_keys, 1);
    /* <q0, k0> = 0^2 + .25^2 + .5^2 + .75^2 = 0.875 */
    ck_assert_double_eq_tol(r.lse, 0.875, 1e-15);
    ck_assert_double_eq(r.entropy, 0);
    ck_assert_double_eq(r.argmax_p, 1);
    ck_assert_double_eq(r.target_p, 0); /* key 2 is in the future */
    ck_assert(isinf(attn_ref_logit(&p, 0, 0, 0, 1)));
}
END_TEST

START_TEST(bucket_masses_of_uniform_causal_row)
{
    /* Row 7 of 8, causal, uniform: distances 7..0, each mass 1/8:
     * bucket 0 {0}, 1 {1}, 2 {2,3}, 3 {4..7} -> 1/8, 1/8, 2/8, 4/8. */
    enum { N = 8, D = 4 };
    float q[N * D] = {0}, k[N * D] = {0};
    uint32_t pos[N];
    for (int i = 0; i < N; i++)
        pos[i] = 100 + (uint32_t)i;
    attn_ref_problem p = problem(N, 1, 1, D, 1, q, k, pos);
    double scratch[2 * N], b[4];
    attn_ref_row r;
    ck_assert_uint_eq(attn_n_buckets(7), 4);
    attn_ref_row_stats(&p, 0, 7, UINT64_MAX, 4, scratch, &r, b, NULL, NULL);
    ck_assert_double_eq_tol(b[0], 0.125, 1e-15);
    ck_assert_double_eq_tol(b[1], 0.125, 1e-15);
    ck_assert_double_eq_tol(b[2], 0.25, 1e-15);
    ck_assert_double_eq_tol(b[3], 0.5, 1e-15);
}
END_TEST

START_TEST(output_is_probability_weighted_values_and_gqa_shares_kv)
{
    /* 2 heads over 1 KV head; head 1's query selects key 1 with logit 2. */
    enum { N = 2, H = 2, D = 4 };
    float q[N * H * D] = {0}, k[N * D] = {0, 0, 0, 0, 2, 0, 0, 0}, v[N * D] = {1, 2, 3, 4, -1, 0, 1, 0};
    q[(1 * H + 1) * D + 0] = 1; /* token 1, head 1: q = e0 */
    uint32_t pos[N] = {0, 1};
    attn_ref_problem p = problem(N, H, 1, D, 0, q, k, pos);
    p.v = v;
    double scratch[2 * N], o[D], os[D];
    attn_ref_row r;
    attn_ref_row_stats(&p, 1, 1, UINT64_MAX, 0, scratch, &r, NULL, o, os);
    double e2 = exp(2.0), p0 = 1 / (1 + e2), p1 = e2 / (1 + e2);
    ck_assert_double_eq_tol(o[0], p0 * 1 + p1 * -1, 1e-15);
    ck_assert_double_eq_tol(o[3], p0 * 4, 1e-15);
    ck_assert_double_eq_tol(os[0], 1, 1e-15);
    /* head 0 of token 1 has q = 0: uniform. */
    attn_ref_row_stats(&p, 0, 1, UINT64_MAX, 0, scratch, &r, NULL, o, os);
    ck_assert_double_eq_tol(o[1], 1, 1e-15);
}
END_TEST

START_TEST(buckets_and_halves_follow_their_definitions)
{
    ck_assert_uint_eq(attn_bucket_of(0), 0);
    ck_assert_uint_eq(attn_bucket_of(1), 1);
    ck_assert_uint_eq(attn_bucket_of(3), 2);
    ck_assert_uint_eq(attn_bucket_of(4), 3);
    ck_assert_uint_eq(attn_bucket_of(8), 4);
    ck_assert_uint_eq(attn_n_buckets(0), 1);
    ck_assert_uint_eq(attn_n_buckets(4096), 14);
    ck_assert_uint_eq(attn_f32_to_f16(1.0f), 0x3c00);
    ck_assert_uint_eq(attn_f32_to_f16(65504.0f), 0x7bff);
    ck_assert_uint_eq(attn_f32_to_f16(0.1f), 0x2e66);       /* 0.0999755859375 */
    ck_assert_uint_eq(attn_f32_to_f16(-2.0f), 0xc000);
    ck_assert_uint_eq(attn_f32_to_f16(1e-8f), 0x0000);      /* below half's subnormals */
    ck_assert_uint_eq(attn_f32_to_f16(5.9604645e-8f), 0x0001); /* smallest subnormal */
    ck_assert_float_eq(rl_half_to_float(0x2e66), 0.0999755859375f);
    ck_assert_float_eq(rl_half_to_float(0x0001), 5.9604644775390625e-8f);
    ck_assert_float_eq(rl_half_to_float(0xfbff), -65504.0f);
}
END_TEST

/* Masks, hand values: Mistral's sliding window 3 (causal row 5 sees keys
 * 3, 4, 5), StreamingLLM sinks 2 + window 3 (row 9 sees 0, 1, 7, 8, 9),
 * Llama 4 chunks of 4 (row 6 sees 4, 5, 6), bidirectional window 2 (row 5
 * sees 4, 5, 6). */
START_TEST(masks_follow_their_definitions)
{
    attn_ref_problem p = {.tokens = 12, .heads = 1, .kv_heads = 1, .head_dim = 4, .causal = 1,
                          .window = 3};
    const char *want_w = "000111000000";
    for (int j = 0; j < 12; j++)
        ck_assert_int_eq(attn_ref_visible(&p, 5, (uint64_t)j), want_w[j] - '0');
    p.n_sink = 2;
    const char *want_s = "110000011100";
    for (int j = 0; j < 12; j++)
        ck_assert_int_eq(attn_ref_visible(&p, 9, (uint64_t)j), want_s[j] - '0');
    p = (attn_ref_problem){.tokens = 12, .heads = 1, .kv_heads = 1, .head_dim = 4, .causal = 1,
                           .chunk_size = 4};
    const char *want_c = "000011100000";
    for (int j = 0; j < 12; j++)
        ck_assert_int_eq(attn_ref_visible(&p, 6, (uint64_t)j), want_c[j] - '0');
    p = (attn_ref_problem){.tokens = 12, .heads = 1, .kv_heads = 1, .head_dim = 4, .window = 2};
    const char *want_b = "000011100000";
    for (int j = 0; j < 12; j++)
        ck_assert_int_eq(attn_ref_visible(&p, 5, (uint64_t)j), want_b[j] - '0');
}
END_TEST

/* The host's tile skipping (attn_tile_visible, intervals) against every
 * (query, key) pair of the reference's attn_ref_visible, over windows, sinks,
 * chunks and tiles of many sizes and offsets: a tile is visible exactly when
 * one of its pairs is. */
START_TEST(tile_skipping_matches_the_pairs)
{
    const uint32_t ws[] = {0, 1, 2, 5, 16, 64}, ss[] = {0, 1, 3, 17}, cs[] = {0, 1, 3, 16, 50};
    uint64_t checked = 0, skipped = 0;
    for (int causal = 0; causal < 2; causal++)
        for (size_t a = 0; a < 6; a++)
            for (size_t b = 0; b < 4; b++)
                for (size_t c = 0; c < 5; c++) {
                    if (!ws[a] && !cs[c])
                        continue;
                    attn_desc d = {.tokens = 200, .causal = causal, .window = ws[a],
                                   .n_sink = ss[b], .chunk_size = cs[c]};
                    attn_ref_problem p = {.tokens = 200, .causal = causal, .window = ws[a],
                                          .n_sink = ss[b], .chunk_size = cs[c]};
                    for (uint64_t q0 = 0; q0 < 200; q0 += 13)
                        for (uint64_t k0 = 0; k0 < 200; k0 += 7) {
                            uint64_t q1 = q0 + 1 + (q0 * 7) % 40, k1 = k0 + 1 + (k0 * 5) % 30;
                            q1 = q1 < 200 ? q1 : 200;
                            k1 = k1 < 200 ? k1 : 200;
                            int any = 0;
                            for (uint64_t i = q0; i < q1 && !any; i++)
                                for (uint64_t j = k0; j < k1 && !any; j++)
                                    any = attn_ref_visible(&p, i, j);
                            ck_assert_msg(attn_tile_visible(&d, q0, q1, k0, k1) == any,
                                          "causal %d w %u s %u c %u tile q [%llu,%llu) k [%llu,%llu)",
                                          causal, ws[a], ss[b], cs[c], (unsigned long long)q0,
                                          (unsigned long long)q1, (unsigned long long)k0,
                                          (unsigned long long)k1);
                            checked++;
                            skipped += !any;
                        }
                }
    ck_assert(skipped > checked / 4); /* the masks do exclude tiles */
}
END_TEST

/* The mask's host description (attn_mask_ranges, attn_mask_row_keys)
 * against the reference's per-pair attn_ref_visible over windows, sinks,
 * chunks, causal and bidirectional, and lengths N (primes, 1, tile edges):
 * the intervals are ascending, disjoint, non-empty, the last holds i, and a
 * key is in them exactly when the predicate says it is visible. */
START_TEST(mask_ranges_match_the_pairs)
{
    const uint32_t ws[] = {0, 1, 2, 3, 7, 16, 40}, ss[] = {0, 1, 2, 5, 17},
                   cs[] = {0, 1, 2, 4, 7, 16, 50};
    const uint64_t ns[] = {1, 2, 5, 16, 17, 63, 97};
    uint64_t rows = 0, two = 0;
    for (int causal = 0; causal < 2; causal++)
        for (size_t a = 0; a < sizeof ws / sizeof ws[0]; a++)
            for (size_t b = 0; b < sizeof ss / sizeof ss[0]; b++)
                for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++)
                    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
                        uint64_t N = ns[t];
                        attn_mask m = {.causal = causal, .window = ws[a], .n_sink = ss[b],
                                       .chunk_size = cs[c]};
                        attn_ref_problem p = {.tokens = N, .causal = causal, .window = ws[a],
                                              .n_sink = ss[b], .chunk_size = cs[c]};
                        for (uint64_t i = 0; i < N; i++) {
                            attn_range r[ATTN_MASK_MAX_RANGES];
                            unsigned n = attn_mask_ranges(&m, i, N, r);
                            ck_assert_uint_ge(n, 1);
                            ck_assert_uint_le(n, ATTN_MASK_MAX_RANGES);
                            two += n == 2;
                            ck_assert(r[n - 1].lo <= i && i < r[n - 1].hi);
                            for (unsigned k = 0; k < n; k++) {
                                ck_assert(r[k].lo < r[k].hi && r[k].hi <= N);
                                if (k)
                                    ck_assert(r[k - 1].hi < r[k].lo);
                            }
                            uint64_t count = 0;
                            for (uint64_t j = 0; j < N; j++) {
                                int in = 0;
                                for (unsigned k = 0; k < n; k++)
                                    in |= r[k].lo <= j && j < r[k].hi;
                                int want = attn_ref_visible(&p, i, j);
                                count += (uint64_t)want;
                                ck_assert_msg(in == want,
                                              "causal %d w %u s %u c %u N %llu row %llu key %llu",
                                              causal, ws[a], ss[b], cs[c], (unsigned long long)N,
                                              (unsigned long long)i, (unsigned long long)j);
                            }
                            ck_assert_uint_eq(attn_mask_row_keys(&m, i, N), count);
                            rows++;
                        }
                    }
    ck_assert(two > rows / 20); /* sinks apart from the window do occur */
}
END_TEST

/* Hand values of the row key counts: causal 10 tokens, window 3: rows 0, 1
 * see 1, 2 keys, the other 8 see 3 (26); with sinks 2, row i >= 4 sees
 * sinks 0, 1 and keys i-2..i (5); bidirectional window 2 in chunks of 4. */
START_TEST(mask_row_keys_hand_values)
{
    attn_mask m = {.causal = 1, .window = 3};
    uint64_t tot = 0;
    for (uint64_t i = 0; i < 10; i++)
        tot += attn_mask_row_keys(&m, i, 10);
    ck_assert_uint_eq(tot, 1 + 2 + 8 * 3);
    m.n_sink = 2;
    ck_assert_uint_eq(attn_mask_row_keys(&m, 3, 10), 4); /* 0, 1, 2, 3 */
    ck_assert_uint_eq(attn_mask_row_keys(&m, 4, 10), 5); /* 0, 1 | 2, 3, 4 */
    ck_assert_uint_eq(attn_mask_row_keys(&m, 9, 10), 5); /* 0, 1 | 7, 8, 9 */
    m = (attn_mask){.window = 2, .chunk_size = 4};       /* bidirectional */
    ck_assert_uint_eq(attn_mask_row_keys(&m, 4, 10), 2); /* 4, 5 (3 is another chunk) */
    ck_assert_uint_eq(attn_mask_row_keys(&m, 9, 10), 2); /* 8, 9 */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("attn_ref");
    /* a row's statistics and output against closed forms */
    TCase *tc_stats = tcase_create("stats");
    tcase_add_test(tc_stats, uniform_logits_give_log_n_entropy_and_first_argmax);
    tcase_add_test(tc_stats, two_keys_match_closed_form);
    tcase_add_test(tc_stats, causal_first_row_sees_only_itself);
    tcase_add_test(tc_stats, bucket_masses_of_uniform_causal_row);
    tcase_add_test(tc_stats, output_is_probability_weighted_values_and_gqa_shares_kv);
    suite_add_tcase(s, tc_stats);
    /* distance buckets and the fp16 halves, by their definitions */
    TCase *tc_buckets = tcase_create("buckets");
    tcase_add_test(tc_buckets, buckets_and_halves_follow_their_definitions);
    suite_add_tcase(s, tc_buckets);
    /* masks: hand values, tile skipping and the host's ranges against every pair */
    TCase *tc_masks = tcase_create("masks");
    tcase_add_test(tc_masks, masks_follow_their_definitions);
    tcase_add_test(tc_masks, tile_skipping_matches_the_pairs);
    tcase_add_test(tc_masks, mask_ranges_match_the_pairs);
    tcase_add_test(tc_masks, mask_row_keys_hand_values);
    suite_add_tcase(s, tc_masks);
    return rl_test_run(s);
}
