/* vk/: device selection, buffers, split dispatch, timestamps, limits —
 * on a real device under the validation layer. */
#include <ctype.h>
#include <string.h>

#include "bench/bench.h"
#include "rl_test.h"

START_TEST(select_resolves_auto_all_index_and_name)
{
    rl_gpu g;
    rl_gpu_open(&g);
    uint32_t idx[16], n = 0;
    rl_error err = {0};
    ck_assert_int_eq(rlvk_select(&g.inst, "all", idx, &n, &err), RL_OK);
    ck_assert_uint_eq(n, g.inst.n_physical);
    ck_assert_int_eq(rlvk_select(&g.inst, "auto", idx, &n, &err), RL_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(rlvk_select(&g.inst, "0", idx, &n, &err), RL_OK);
    ck_assert_uint_eq(idx[0], 0);
    /* Case-insensitive substring of device 0's name. */
    char sub[8] = {0};
    for (int i = 0; i < 6 && g.dev.info.name[i]; i++)
        sub[i] = (char)toupper((unsigned char)g.dev.info.name[i]);
    ck_assert_int_eq(rlvk_select(&g.inst, sub, idx, &n, &err), RL_OK);
    ck_assert_uint_ge(n, 1);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(select_rejects_bad_index_and_name)
{
    rl_gpu g;
    rl_gpu_open(&g);
    uint32_t idx[16], n = 0;
    rl_error err = {0};
    ck_assert_int_eq(rlvk_select(&g.inst, "99", idx, &n, &err), RL_ERR_NO_DEVICE);
    ck_assert_ptr_nonnull(strstr(err.msg, "--device 99: no device with that index"));
    ck_assert_int_eq(rlvk_select(&g.inst, "no-such-gpu", idx, &n, &err), RL_ERR_NO_DEVICE);
    ck_assert_ptr_nonnull(strstr(err.msg, "no device name contains it"));
    ck_assert_ptr_nonnull(strstr(err.msg, g.dev.info.name));
    rlvk_device_info info;
    ck_assert_int_eq(rlvk_device_info_query(&g.inst, 99, &info, &err), RL_ERR_NO_DEVICE);
    rl_gpu_close(&g);
}
END_TEST

/* uuid:U selects by deviceUUID, written as CUDA_VISIBLE_DEVICES writes it
 * ("GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx") or bare; another UUID
 * matches nothing; a malformed one is a usage error. */
START_TEST(select_by_device_uuid)
{
    rl_gpu g;
    rl_gpu_open(&g);
    uint32_t idx[16], n = 0;
    rl_error err = {0};
    uint8_t u[VK_UUID_SIZE];
    ck_assert_int_eq(rlvk_device_uuid(&g.inst, 0, u), RL_OK);
    char dashed[64], bare[64];
    int k = snprintf(dashed, sizeof dashed, "uuid:GPU-");
    int b = snprintf(bare, sizeof bare, "uuid:");
    for (unsigned i = 0; i < VK_UUID_SIZE; i++) {
        k += snprintf(dashed + k, sizeof dashed - (size_t)k, "%02x%s", u[i],
                      i == 3 || i == 5 || i == 7 || i == 9 ? "-" : "");
        b += snprintf(bare + b, sizeof bare - (size_t)b, "%02X", u[i]);
    }
    ck_assert_int_eq(rlvk_select(&g.inst, dashed, idx, &n, &err), RL_OK);
    ck_assert_uint_ge(n, 1);
    ck_assert_uint_eq(idx[0], 0);
    ck_assert_int_eq(rlvk_select(&g.inst, bare, idx, &n, &err), RL_OK);
    ck_assert_uint_eq(idx[0], 0);
    bare[5] = bare[5] == '0' ? '1' : '0'; /* another device's UUID */
    int other = 0;
    for (uint32_t i = 0; i < g.inst.n_physical; i++) {
        uint8_t v[VK_UUID_SIZE];
        char hex[40];
        if (rlvk_device_uuid(&g.inst, i, v) != RL_OK)
            continue;
        for (unsigned j = 0; j < VK_UUID_SIZE; j++)
            snprintf(hex + 2 * j, 3, "%02X", v[j]);
        other |= !strcmp(hex, bare + 5);
    }
    if (!other) {
        ck_assert_int_eq(rlvk_select(&g.inst, bare, idx, &n, &err), RL_ERR_NO_DEVICE);
        ck_assert_ptr_nonnull(strstr(err.msg, "no Vulkan device has that deviceUUID"));
    }
    ck_assert_int_eq(rlvk_select(&g.inst, "uuid:GPU-12ab", idx, &n, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "32 hex digits"));
    rl_gpu_close(&g);
}
END_TEST

START_TEST(buffers_round_trip)
{
    rl_gpu g;
    rl_gpu_open(&g);
    rlvk_buffer b;
    rl_error err = {0};
    ck_assert_int_eq(rlvk_buffer_create(&g.dev, 4096, "roundtrip", &b, &err), RL_OK);
    uint32_t in[1024], out[1024];
    for (uint32_t i = 0; i < 1024; i++)
        in[i] = i * 2654435761u;
    ck_assert_int_eq(rlvk_buffer_upload(&g.dev, &b, 0, in, sizeof in, &err), RL_OK);
    ck_assert_int_eq(rlvk_buffer_download(&g.dev, &b, 0, out, sizeof out, &err), RL_OK);
    ck_assert_mem_eq(in, out, sizeof in);
    ck_assert_int_eq(rlvk_buffer_upload(&g.dev, &b, 4000, in, 200, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "overruns roundtrip"));
    rlvk_buffer_destroy(&g.dev, &b);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(transfer_counters_count_bytes_that_crossed)
{
    rl_gpu g;
    rl_gpu_open(&g);
    rlvk_buffer b;
    rl_error err = {0};
    ck_assert_int_eq(rlvk_buffer_create(&g.dev, 4096, "counted", &b, &err), RL_OK);
    uint64_t up0 = g.dev.bytes_uploaded, down0 = g.dev.bytes_downloaded;
    uint8_t buf[4096] = {0};
    ck_assert_int_eq(rlvk_buffer_upload(&g.dev, &b, 0, buf, 3000, &err), RL_OK);
    ck_assert_int_eq(rlvk_buffer_download(&g.dev, &b, 100, buf, 200, &err), RL_OK);
    ck_assert_int_eq(rlvk_buffer_download(&g.dev, &b, 0, buf, 5000, &err), RL_ERR_ARG);
    ck_assert_uint_eq(g.dev.bytes_uploaded - up0, 3000);
    ck_assert_uint_eq(g.dev.bytes_downloaded - down0, 200);
    rlvk_buffer_destroy(&g.dev, &b);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(size_check_names_the_limit)
{
    rl_gpu g;
    rl_gpu_open(&g);
    rl_error err = {0};
    uint64_t too_big = g.dev.info.max_storage_buffer_range + 4;
    ck_assert_int_eq(rlvk_check_buffer_size(&g.dev, too_big, "K", &err), RL_ERR_LIMIT);
    ck_assert_ptr_nonnull(strstr(err.msg, "maxStorageBufferRange"));
    ck_assert_ptr_nonnull(strstr(err.msg, "K needs"));
    rlvk_buffer b;
    ck_assert_int_eq(rlvk_buffer_create(&g.dev, too_big, "K", &b, &err), RL_ERR_LIMIT);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(dispatch_splits_beyond_max_group_count)
{
    /* More workgroups than maxComputeWorkGroupCount[0] in one 1-D launch:
     * without splitting the validation layer reports an error (and the tail
     * would be skipped). Every element must be copied exactly once. */
    rl_gpu g;
    rl_gpu_open(&g);
    rl_error err = {0};
    uint64_t groups = (uint64_t)g.dev.info.max_workgroup_count[0] + 3;
    if (groups * 64 * 16 > g.dev.info.max_storage_buffer_range)
        groups = g.dev.info.max_storage_buffer_range / (64 * 16); /* still > 1 dispatch? */
    uint32_t n_vec4 = (uint32_t)(groups * 64 - 17); /* partial last group */
    uint64_t bytes = (uint64_t)n_vec4 * 16;
    rlvk_buffer x, y;
    rlvk_pipeline copy;
    ck_assert_int_eq(rlvk_buffer_create(&g.dev, bytes, "x", &x, &err), RL_OK);
    ck_assert_int_eq(rlvk_buffer_create(&g.dev, bytes + 64, "y", &y, &err), RL_OK);
    uint32_t *h = malloc(bytes + 64);
    for (uint64_t i = 0; i < bytes / 4; i++)
        h[i] = (uint32_t)(i * 747796405u + 1u);
    ck_assert_int_eq(rlvk_buffer_upload(&g.dev, &x, 0, h, bytes, &err), RL_OK);
    uint32_t guard[16];
    memset(guard, 0xAB, sizeof guard);
    ck_assert_int_eq(rlvk_buffer_upload(&g.dev, &y, bytes, guard, 64, &err), RL_OK);
    ck_assert_int_eq(bench_copy_create(&g.dev, &copy, &err), RL_OK);
    rlvk_cmd cmd;
    ck_assert_int_eq(rlvk_cmd_begin(&g.dev, 1, &cmd, &err), RL_OK);
    rlvk_cmd_timestamp(&cmd, 0);
    ck_assert_int_eq(bench_copy_record(&cmd, &copy, &x, &y, n_vec4, &err), RL_OK);
    rlvk_cmd_timestamp(&cmd, 1);
    ck_assert_int_eq(rlvk_cmd_submit_wait(&cmd, &err), RL_OK);
    if (g.dev.info.timestamps) {
        double ns = -1;
        ck_assert_int_eq(rlvk_cmd_elapsed_ns(&cmd, 0, 1, &ns, &err), RL_OK);
        ck_assert_double_gt(ns, 0);
    }
    rlvk_cmd_destroy(&cmd);
    uint32_t *o = malloc(bytes + 64);
    ck_assert_int_eq(rlvk_buffer_download(&g.dev, &y, 0, o, bytes + 64, &err), RL_OK);
    for (uint64_t i = 0; i < bytes / 4; i++)
        if (o[i] != h[i])
            ck_abort_msg("element %llu not copied", (unsigned long long)i);
    ck_assert_mem_eq(o + bytes / 4, guard, 64);
    free(h);
    free(o);
    rlvk_pipeline_destroy(&g.dev, &copy);
    rlvk_buffer_destroy(&g.dev, &x);
    rlvk_buffer_destroy(&g.dev, &y);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(dispatch_reports_exhausted_descriptor_reservation)
{
    rl_gpu g;
    rl_gpu_open(&g);
    rl_error err = {0};
    rlvk_pipeline copy;
    rlvk_buffer x, y;
    ck_assert_int_eq(bench_copy_create(&g.dev, &copy, &err), RL_OK);
    ck_assert_int_eq(rlvk_buffer_create(&g.dev, 64, "x", &x, &err), RL_OK);
    ck_assert_int_eq(rlvk_buffer_create(&g.dev, 64, "y", &y, &err), RL_OK);
    rlvk_cmd cmd;
    ck_assert_int_eq(rlvk_cmd_begin(&g.dev, 1, &cmd, &err), RL_OK);
    ck_assert_int_eq(bench_copy_record(&cmd, &copy, &x, &y, 4, &err), RL_OK);
    ck_assert_int_eq(bench_copy_record(&cmd, &copy, &x, &y, 4, &err), RL_ERR_ARG);
    ck_assert_int_eq(rlvk_cmd_submit_wait(&cmd, &err), RL_OK);
    rlvk_cmd_destroy(&cmd);
    rlvk_buffer_destroy(&g.dev, &x);
    rlvk_buffer_destroy(&g.dev, &y);
    rlvk_pipeline_destroy(&g.dev, &copy);
    rl_gpu_close(&g);
}
END_TEST

int main(void)
{
    rl_test_pin_driver();
    rl_test_require_vulkan("vk");
    Suite *s = suite_create("vk");
    TCase *tc = tcase_create("vk");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, select_resolves_auto_all_index_and_name);
    tcase_add_test(tc, select_rejects_bad_index_and_name);
    tcase_add_test(tc, select_by_device_uuid);
    tcase_add_test(tc, buffers_round_trip);
    tcase_add_test(tc, transfer_counters_count_bytes_that_crossed);
    tcase_add_test(tc, size_check_names_the_limit);
    tcase_add_test(tc, dispatch_splits_beyond_max_group_count);
    tcase_add_test(tc, dispatch_reports_exhausted_descriptor_reservation);
    suite_add_tcase(s, tc);
    return rl_test_run(s);
}
