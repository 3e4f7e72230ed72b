/* Data sources of batch runs: .safetensors and .npy files with a declared
 * layout and shape checks, and the synthetic generators. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rl_check.h"

#include "core/rl_safetensors.h"
#include "run/run_int.h"
#include "rl_test.h"

static void write_file(const char *path, const void *a, size_t na, const void *b, size_t nb)
{
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(a, 1, na, fp), na);
    if (nb)
        ck_assert_uint_eq(fwrite(b, 1, nb, fp), nb);
    fclose(fp);
}

/* q: F32 [3][2][4] with q[i] = i / 2; k: F16 [3][1][4] of 1.0, 2.0, ... */
static void make_safetensors(const char *path, int truncate)
{
    const char *hdr = "{\"q\":{\"dtype\":\"F32\",\"shape\":[3,2,4],\"data_offsets\":[0,96]},"
                      "\"k\":{\"dtype\":\"F16\",\"shape\":[3,1,4],\"data_offsets\":[96,120]},"
                      "\"__metadata__\":{\"format\":\"pt\"}}";
    size_t hl = strlen(hdr);
    unsigned char buf[512] = {0};
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)(hl >> (8 * i));
    memcpy(buf + 8, hdr, hl);
    unsigned char data[120];
    for (int i = 0; i < 24; i++) {
        float f = (float)i / 2;
        memcpy(data + 4 * i, &f, 4); /* little-endian host (x86/arm) */
    }
    static const uint16_t halves[12] = {0x3C00, 0x4000, 0x4200, 0x4400, 0x3C00, 0x4000,
                                        0x4200, 0x4400, 0x3C00, 0x4000, 0x4200, 0x4400};
    for (int i = 0; i < 12; i++) {
        data[96 + 2 * i] = (unsigned char)(halves[i] & 0xff);
        data[96 + 2 * i + 1] = (unsigned char)(halves[i] >> 8);
    }
    write_file(path, buf, 8 + hl, data, truncate ? 100 : 120);
}

START_TEST(safetensors_reads_f32_and_f16_with_shapes)
{
    char p[64];
    snprintf(p, sizeof p, "/tmp/rl_test_data_%ld.safetensors", (long)getpid());
    make_safetensors(p, 0);
    rl_safetensors st;
    rl_error err = {0};
    ck_assert_msg(rl_safetensors_open(p, &st, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(st.n, 2);
    const rl_st_tensor *q = rl_safetensors_find(&st, "q"), *k = rl_safetensors_find(&st, "k");
    ck_assert_ptr_nonnull(q);
    ck_assert_uint_eq(q->rank, 3);
    ck_assert_uint_eq(q->shape[1], 2);
    float v[4];
    ck_assert_int_eq(rl_safetensors_read_f32(&st, q, 5, 2, v, &err), RL_OK);
    ck_assert(v[0] == 2.5f && v[1] == 3.0f);
    ck_assert_int_eq(rl_safetensors_read_f32(&st, k, 0, 4, v, &err), RL_OK);
    ck_assert(v[0] == 1.0f && v[1] == 2.0f && v[2] == 3.0f && v[3] == 4.0f);
    ck_assert_int_ne(rl_safetensors_read_f32(&st, q, 23, 2, v, &err), RL_OK);
    rl_safetensors_close(&st);
    make_safetensors(p, 1);
    ck_assert_int_eq(rl_safetensors_open(p, &st, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "past the end of the file"));
    remove(p);
}
END_TEST

START_TEST(data_files_are_checked_against_the_model)
{
    char p[64];
    snprintf(p, sizeof p, "/tmp/rl_test_data_%ld.safetensors", (long)getpid());
    make_safetensors(p, 0);
    json_t *d = json_pack("{s:s,s:s,s:s,s:s,s:s}", "source", "safetensors", "path", p, "q", "q",
                          "k", "k", "layout", "thd");
    exp_model good = {.head_dim = 4, .heads = 2, .kv_heads = 1, .train_len = 8};
    exp_model bad = {.head_dim = 4, .heads = 4, .kv_heads = 1, .train_len = 8};
    rl_error err = {0};
    ck_assert_msg(run_data_probe(d, &good, ".", &err) == RL_OK, "%s", err.msg);
    ck_assert_int_ne(run_data_probe(d, &bad, ".", &err), RL_OK);
    ck_assert_ptr_nonnull(strstr(err.msg, "tensor q has shape [3, 2, 4]"));
    run_data rd = {.desc = d, .model = good, .base_dir = "."};
    float k[12];
    ck_assert_int_eq(run_data_fill(&rd, 'k', 3, k, &err), RL_OK);
    ck_assert(k[4] == 1.0f && k[7] == 4.0f);
    ck_assert_int_eq(run_data_fill(&rd, 'k', 4, k, &err), RL_ERR_LIMIT);
    json_decref(d);
    remove(p);
}
END_TEST

START_TEST(npy_heads_tokens_layout_is_reordered)
{
    /* [heads=2][tokens=3][head_dim=2] float32, element value = its index */
    char p[64];
    snprintf(p, sizeof p, "/tmp/rl_test_q_%ld.npy", (long)getpid());
    char hdr[128];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 2), }");
    while ((n + 10) % 64 != 63)
        hdr[n++] = ' ';
    hdr[n++] = '\n';
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)n, 0};
    unsigned char buf[256];
    memcpy(buf, pre, 10);
    memcpy(buf + 10, hdr, (size_t)n);
    float vals[12];
    for (int i = 0; i < 12; i++)
        vals[i] = (float)i;
    write_file(p, buf, 10 + (size_t)n, vals, sizeof vals);
    json_t *d = json_pack("{s:s,s:s,s:s}", "source", "npy", "q", p, "layout", "htd");
    exp_model m = {.head_dim = 2, .heads = 2, .kv_heads = 2, .train_len = 8};
    run_data rd = {.desc = d, .model = m, .base_dir = "."};
    float q[12];
    rl_error err = {0};
    ck_assert_msg(run_data_fill(&rd, 'q', 3, q, &err) == RL_OK, "%s", err.msg);
    /* out[t][h][i] = file[h][t][i] = (h*3 + t)*2 + i */
    for (int t = 0; t < 3; t++)
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < 2; i++)
                ck_assert(q[(t * 2 + h) * 2 + i] == (float)((h * 3 + t) * 2 + i));
    json_decref(d);
    remove(p);
}
END_TEST

START_TEST(shared_keys_copy_one_query_each_without_noise)
{
    json_t *d = json_pack("{s:s,s:i,s:f,s:f}", "source", "shared", "seed", 3, "scale", 1.0,
                          "noise", 0.0);
    exp_model m = {.head_dim = 4, .heads = 4, .kv_heads = 2, .train_len = 8};
    run_data rd = {.desc = d, .model = m, .base_dir = "."};
    enum { T = 9 };
    float q[T * 4 * 4], k[T * 2 * 4];
    rl_error err = {0};
    ck_assert_int_eq(run_data_fill(&rd, 'q', T, q, &err), RL_OK);
    ck_assert_int_eq(run_data_fill(&rd, 'k', T, k, &err), RL_OK);
    /* every key row (t, g) equals the query row (s, 2g) of exactly one s,
     * and the s are a permutation of 0..T-1 */
    int used[T] = {0};
    for (int t = 0; t < T; t++) {
        int match = -1;
        for (int s = 0; s < T; s++)
            if (!memcmp(&k[(t * 2 + 0) * 4], &q[(s * 4 + 0) * 4], 16) &&
                !memcmp(&k[(t * 2 + 1) * 4], &q[(s * 4 + 2) * 4], 16))
                match = s;
        ck_assert_int_ge(match, 0);
        ck_assert_int_eq(used[match], 0);
        used[match] = 1;
    }
    /* the first rows of q do not depend on how many rows are asked for */
    float q2[2 * 4 * 4];
    ck_assert_int_eq(run_data_fill(&rd, 'q', 2, q2, &err), RL_OK);
    ck_assert(!memcmp(q, q2, sizeof q2));
    json_decref(d);
}
END_TEST

/* A structured data section with every key given (what run_data_resolve
 * leaves after the schema's defaults). */
static json_t *structured(double lo, double hi, double P, double C, double T, const char *pairs,
                          int seed)
{
    json_t *d = json_pack("{s:s,s:i,s:f,s:f,s:f,s:f,s:f,s:s}", "source", "structured", "seed",
                          seed, "band_lo", lo, "band_hi", hi, "position_logit", P,
                          "content_logit", C, "temperature", T, "pairs", pairs);
    ck_assert_ptr_nonnull(d);
    return d;
}

/* head_dim 16 (8 pairs), band [0.5, 1): pairs j with (j + 1/2)/8 in it are
 * 4..7, so with the half layout elements 4..7 and 12..15 carry the mean A,
 * A^2 = P sqrt(16) / (2 * 4) = 2 for P = 4, and the others none. Over
 * n = 4096 tokens x 2 heads the sample mean of an element has standard
 * deviation sqrt(C / n) = 0.011 (C = 1): 0.06 is over 5 of them. The
 * sample variance's standard deviation is sqrt(2 / n) C = 0.016: 0.1. The
 * logit <q_t, k_t> / 4 has mean P = 4 and standard deviation
 * sqrt(C^2 + 2 C P / 4) = 1.73 per token: its mean over 4096 tokens within
 * 0.15 (5.6 sigma); the content part's logit has standard deviation C. */
START_TEST(structured_means_sit_in_the_band_and_logits_are_as_stated)
{
    enum { T = 4096, H = 2, KV = 1, D = 16 };
    json_t *d = structured(0.5, 1.0, 4.0, 1.0, 1.0, "half", 7);
    exp_model m = {.head_dim = D, .heads = H, .kv_heads = KV, .train_len = 64};
    run_data rd = {.desc = d, .model = m, .base_dir = "."};
    float *q = malloc(sizeof(float) * T * H * D), *k = malloc(sizeof(float) * T * KV * D);
    rl_error err = {0};
    ck_assert_int_eq(run_data_fill(&rd, 'q', T, q, &err), RL_OK);
    ck_assert_int_eq(run_data_fill(&rd, 'k', T, k, &err), RL_OK);
    double A = sqrt(2.0);
    for (int i = 0; i < D; i++) {
        int in_band = (i % (D / 2)) >= 4;
        double mean = 0, var = 0;
        for (int r = 0; r < T * H; r++)
            mean += q[r * D + i];
        mean /= T * H;
        for (int r = 0; r < T * H; r++)
            var += (q[r * D + i] - mean) * (q[r * D + i] - mean);
        var /= T * H - 1;
        ck_assert_msg(fabs(mean - (in_band ? A : 0.0)) < 0.06, "element %d mean %g", i, mean);
        ck_assert_msg(fabs(var - 1.0) < 0.1, "element %d variance %g", i, var);
        double km = 0;
        for (int t = 0; t < T; t++)
            km += k[t * D + i];
        ck_assert_msg(fabs(km / T - (in_band ? A : 0.0)) < 0.085, "k element %d mean %g", i,
                      km / T); /* 4096 rows: 0.0156 per sigma */
    }
    double lm = 0, cs = 0, cc = 0;
    for (int t = 0; t < T; t++) {
        double l = 0, c = 0;
        for (int i = 0; i < D; i++) {
            double mu = (i % (D / 2)) >= 4 ? A : 0.0;
            l += (double)q[(t * H) * D + i] * k[t * D + i];
            c += (q[(t * H) * D + i] - mu) * (k[t * D + i] - mu);
        }
        lm += l / 4, cs += c / 4 * (c / 4), cc += c / 4;
    }
    ck_assert_msg(fabs(lm / T - 4.0) < 0.15, "mean logit %g", lm / T);
    double csd = sqrt(cs / T - (cc / T) * (cc / T));
    ck_assert_msg(fabs(csd - 1.0) < 0.06, "content logit sd %g", csd); /* sd of sd: 0.011 */
    ck_assert_msg(fabs(cc / T) < 0.08, "content logit mean %g", cc / T);
    free(q), free(k);
    json_decref(d);
}
END_TEST

/* Interleaved pairs: pair j is elements 2j, 2j + 1. Band [0, 0.25) of 8
 * pairs: (j + 1/2)/8 < 1/4 holds for j = 0, 1, so elements 0..3, with
 * A^2 = 2 sqrt(16) / (2 * 2) = 2 for P = 2. Temperature 4 halves every
 * element exactly (the same draws; halving commutes with rounding). The
 * same seed gives the same rows, the first rows do not depend on the
 * count, another seed changes the content but not the mean. */
START_TEST(structured_is_seeded_interleaved_and_scaled_by_the_temperature)
{
    enum { T = 2048, D = 16 };
    exp_model m = {.head_dim = D, .heads = 1, .kv_heads = 1, .train_len = 64};
    json_t *d1 = structured(0.0, 0.25, 2.0, 0.25, 1.0, "interleaved", 3);
    json_t *d4 = structured(0.0, 0.25, 2.0, 0.25, 4.0, "interleaved", 3);
    json_t *d9 = structured(0.0, 0.25, 2.0, 0.25, 1.0, "interleaved", 9);
    run_data r1 = {.desc = d1, .model = m}, r4 = {.desc = d4, .model = m},
             r9 = {.desc = d9, .model = m};
    static float a[T * D], b[T * D], c[T * D], e[3 * D];
    rl_error err = {0};
    ck_assert_int_eq(run_data_fill(&r1, 'q', T, a, &err), RL_OK);
    ck_assert_int_eq(run_data_fill(&r4, 'q', T, b, &err), RL_OK);
    ck_assert_int_eq(run_data_fill(&r9, 'q', T, c, &err), RL_OK);
    ck_assert_int_eq(run_data_fill(&r1, 'q', 3, e, &err), RL_OK);
    ck_assert(!memcmp(a, e, sizeof e));
    int differ = 0;
    for (int i = 0; i < T * D; i++) {
        ck_assert_msg(b[i] == a[i] / 2, "element %d: %g vs %g / 2", i, b[i], a[i]);
        differ += a[i] != c[i];
    }
    ck_assert_int_eq(differ, T * D);
    /* sample means over 2048 rows, content sd 0.5: 0.011 per sigma */
    for (int i = 0; i < D; i++) {
        double ma = 0, mc = 0;
        for (int t = 0; t < T; t++)
            ma += a[t * D + i], mc += c[t * D + i];
        double want = i < 4 ? sqrt(2.0) : 0.0;
        ck_assert_msg(fabs(ma / T - want) < 0.06, "element %d mean %g", i, ma / T);
        ck_assert_msg(fabs(mc / T - want) < 0.06, "seed 9 element %d mean %g", i, mc / T);
    }
    json_decref(d1), json_decref(d4), json_decref(d9);
}
END_TEST

/* The structured keys belong to source structured: the schema's defaults
 * are dropped from other sources (their run ids stay as they were), a
 * value given to another source is refused, an empty or reversed band is
 * refused. */
START_TEST(structured_keys_apply_to_the_structured_source_only)
{
    static const char *gauss = "model: {head_dim: 16, heads: 1, train_len: 64}\n"
                               "data: {source: gaussian}\n"
                               "experiments: [{kind: entropy}]\n";
    static const char *structd = "model: {head_dim: 16, heads: 1, train_len: 64}\n"
                                 "data: {source: structured, band_lo: 0.5}\n"
                                 "experiments: [{kind: entropy}]\n";
    static const char *misused = "model: {head_dim: 16, heads: 1, train_len: 64}\n"
                                 "data: {source: shared, position_logit: 2.5}\n"
                                 "experiments: [{kind: entropy}]\n";
    run_batch b;
    run_diag dg;
    rl_error err = {0};
    ck_assert_int_eq(run_batch_parse("g.yaml", gauss, strlen(gauss), ".", &b, &dg, &err), RL_OK);
    const json_t *gd = json_object_get(b.items[0].resolved, "data");
    ck_assert_ptr_nonnull(json_object_get(gd, "scale"));
    ck_assert_ptr_null(json_object_get(gd, "band_lo"));
    ck_assert_ptr_null(json_object_get(gd, "pairs"));
    run_batch_free(&b);
    run_diag_free(&dg);
    ck_assert_int_eq(run_batch_parse("s.yaml", structd, strlen(structd), ".", &b, &dg, &err),
                     RL_OK);
    const json_t *sd = json_object_get(b.items[0].resolved, "data");
    ck_assert(json_number_value(json_object_get(sd, "band_lo")) == 0.5);
    ck_assert(json_number_value(json_object_get(sd, "position_logit")) == 8.0); /* default */
    ck_assert_str_eq(json_string_value(json_object_get(sd, "pairs")), "half");
    run_batch_free(&b);
    run_diag_free(&dg);
    ck_assert_int_ne(run_batch_parse("m.yaml", misused, strlen(misused), ".", &b, &dg, &err),
                     RL_OK);
    ck_assert_uint_eq(dg.n, 1);
    ck_assert_ptr_nonnull(strstr(dg.msg[0], "position_logit applies to source structured only"));
    run_diag_free(&dg);
    json_t *s = structured(0.5, 0.5, 4.0, 1.0, 1.0, "half", 1);
    ck_assert_int_eq(run_data_resolve(s, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "must be below band_hi"));
    json_decref(s);
    /* head_dim 4: pairs at 0.25 and 0.75; [0.8, 0.9) holds none */
    s = structured(0.8, 0.9, 4.0, 1.0, 1.0, "half", 1);
    exp_model m = {.head_dim = 4, .heads = 1, .kv_heads = 1, .train_len = 8};
    ck_assert_int_eq(run_data_resolve(s, &err), RL_OK);
    ck_assert_int_eq(run_data_probe(s, &m, ".", &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "holds no rotary pair"));
    json_decref(s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("run_data");
    /* .safetensors and .npy files: layouts, shapes, checks against the model */
    TCase *tc_files = tcase_create("files");
    tcase_add_test(tc_files, safetensors_reads_f32_and_f16_with_shapes);
    tcase_add_test(tc_files, data_files_are_checked_against_the_model);
    tcase_add_test(tc_files, npy_heads_tokens_layout_is_reordered);
    suite_add_tcase(s, tc_files);
    /* the synthetic source shared */
    TCase *tc_shared = tcase_create("shared");
    tcase_add_test(tc_shared, shared_keys_copy_one_query_each_without_noise);
    suite_add_tcase(s, tc_shared);
    /* the synthetic source structured and its keys */
    TCase *tc_structured = tcase_create("structured");
    tcase_add_test(tc_structured, structured_means_sit_in_the_band_and_logits_are_as_stated);
    tcase_add_test(tc_structured, structured_is_seeded_interleaved_and_scaled_by_the_temperature);
    tcase_add_test(tc_structured, structured_keys_apply_to_the_structured_source_only);
    suite_add_tcase(s, tc_structured);
    return rl_test_run(s);
}
