/* Data sources of batch runs: .safetensors and .npy files with a declared
 * layout and shape checks, and the synthetic generators. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

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

int main(void)
{
    Suite *s = suite_create("run_data");
    TCase *tc = tcase_create("data");
    tcase_add_test(tc, safetensors_reads_f32_and_f16_with_shapes);
    tcase_add_test(tc, data_files_are_checked_against_the_model);
    tcase_add_test(tc, npy_heads_tokens_layout_is_reordered);
    tcase_add_test(tc, shared_keys_copy_one_query_each_without_noise);
    suite_add_tcase(s, tc);
    return rl_test_run(s);
}
