/* vk/: device selection, buffers, split dispatch, timestamps, limits —
 * on a real device under the validation layer. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
/* the copy shader under a name of its own: bench.c, linked in, defines
 * rl_spv_copy from the same generated header */
#define rl_spv_copy test_spv_copy
#include "copy.spv.h"
#undef rl_spv_copy
#include "fma_peak_r4.spv.h"
#include "rl_push.h"
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

/* Copies n_vec4 vec4s with the copy yardstick (vec4_per_inv per
 * invocation, 0: the device's choice, which must be `expected`) into a
 * buffer with a guard after them, and checks every element arrived and
 * nothing past the end was written; with timestamps, also that the
 * dispatch was timed and counted in the device's GPU time. */
/* storage: 1 copies with the storage-buffer reads even where the device's
 * yardstick reads texels (a CPU device). */
static void copy_and_check(rl_gpu *g, uint32_t vec4_per_inv, uint32_t expected, uint32_t n_vec4,
                           int storage)
{
    rl_error err = {0};
    uint64_t bytes = (uint64_t)n_vec4 * 16;
    rlvk_buffer x, y;
    bench_copy copy;
    ck_assert_int_eq(rlvk_buffer_create(&g->dev, bytes + 64, "x", &x, &err), RL_OK);
    ck_assert_int_eq(rlvk_buffer_create(&g->dev, bytes + 64, "y", &y, &err), RL_OK);
    uint32_t *h = malloc(bytes + 64), *o = malloc(bytes + 64), guard[16];
    for (uint64_t i = 0; i < bytes / 4 + 16; i++)
        h[i] = (uint32_t)(i * 2654435761u + 7u);
    memset(guard, 0xAB, sizeof guard);
    ck_assert_int_eq(rlvk_buffer_upload(&g->dev, &x, 0, h, bytes + 64, &err), RL_OK);
    ck_assert_int_eq(rlvk_buffer_upload(&g->dev, &y, bytes, guard, 64, &err), RL_OK);
    ck_assert_int_eq(bench_copy_create(&g->dev, vec4_per_inv, &copy, &err), RL_OK);
    ck_assert_uint_eq(copy.vec4_per_inv, expected);
    int had_texel = copy.has_texel;
    ck_assert_int_eq(had_texel, g->dev.info.vk_type == VK_PHYSICAL_DEVICE_TYPE_CPU);
    if (storage)
        copy.has_texel = 0;
    ck_assert_int_eq(bench_copy_texel(&g->dev, &copy, n_vec4), had_texel && !storage);
    double gpu_s0 = g->dev.gpu_s;
    rlvk_cmd cmd;
    ck_assert_int_eq(rlvk_cmd_begin(&g->dev, 1, &cmd, &err), RL_OK);
    rlvk_cmd_timestamp(&cmd, 0);
    ck_assert_int_eq(bench_copy_record(&cmd, &copy, &x, &y, n_vec4, &err), RL_OK);
    rlvk_cmd_timestamp(&cmd, 1);
    ck_assert_int_eq(rlvk_cmd_submit_wait(&cmd, &err), RL_OK);
    if (g->dev.info.timestamps) {
        double ns = -1;
        ck_assert_int_eq(rlvk_cmd_elapsed_ns(&cmd, 0, 1, &ns, &err), RL_OK);
        ck_assert_double_gt(ns, 0);
        /* the device's timestamped GPU time: this submission's span */
        ck_assert_double_eq_tol(g->dev.gpu_s - gpu_s0, ns * 1e-9, 1e-12);
    }
    rlvk_cmd_destroy(&cmd);
    ck_assert_int_eq(rlvk_buffer_download(&g->dev, &y, 0, o, bytes + 64, &err), RL_OK);
    for (uint64_t i = 0; i < bytes / 4; i++)
        if (o[i] != h[i])
            ck_abort_msg("n_vec4 %u: element %llu not copied", n_vec4, (unsigned long long)i);
    ck_assert_mem_eq(o + bytes / 4, guard, 64);
    free(h);
    free(o);
    copy.has_texel = had_texel;
    bench_copy_destroy(&g->dev, &copy);
    rlvk_buffer_destroy(&g->dev, &x);
    rlvk_buffer_destroy(&g->dev, &y);
}

START_TEST(dispatch_splits_beyond_max_group_count)
{
    /* More workgroups than maxComputeWorkGroupCount[0] in one 1-D launch:
     * without splitting the validation layer reports an error (and the tail
     * would be skipped). Every element must be copied exactly once. */
    rl_gpu g;
    rl_gpu_open(&g);
    uint64_t groups = (uint64_t)g.dev.info.max_workgroup_count[0] + 3;
    if (groups * 64 * 16 > g.dev.info.max_storage_buffer_range)
        groups = g.dev.info.max_storage_buffer_range / (64 * 16); /* still > 1 dispatch? */
    uint32_t n_vec4 = (uint32_t)(groups * 64 - 17); /* partial last group */
    copy_and_check(&g, 1, 1, n_vec4, 0); /* one vec4 per invocation: groups * 64 invocations */
    rl_gpu_close(&g);
}
END_TEST

/* The bandwidth yardstick copies BENCH_COPY_VEC4 consecutive vec4s per
 * invocation: every vec4 of a length that fills neither a last invocation
 * nor a last workgroup is copied once, and nothing past the end is written. */
START_TEST(yardstick_copy_covers_every_vec4_and_no_more)
{
    rl_gpu g;
    rl_gpu_open(&g);
    const uint32_t lens[3] = {1, BENCH_COPY_VEC4 * 64 * 3 + 7, BENCH_COPY_VEC4 * 64 + 4};
    for (int t = 0; t < 6; t++) /* texel reads (CPU devices), then storage reads */
        copy_and_check(&g, 0, BENCH_COPY_VEC4, lens[t % 3], t / 3);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(dispatch_reports_exhausted_descriptor_reservation)
{
    rl_gpu g;
    rl_gpu_open(&g);
    rl_error err = {0};
    bench_copy copy;
    rlvk_buffer x, y;
    ck_assert_int_eq(bench_copy_create(&g.dev, 0, &copy, &err), RL_OK);
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
    bench_copy_destroy(&g.dev, &copy);
    rl_gpu_close(&g);
}
END_TEST

/* ---- persisted pipeline cache ------------------------------------------ */

static char *tmp_dir(void)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "/tmp/rl_pcache_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(buf));
    return buf;
}

static size_t read_file(const char *path, uint8_t *buf, size_t cap)
{
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    size_t n = fread(buf, 1, cap, fp);
    fclose(fp);
    return n;
}

static void write_bytes(const char *path, const uint8_t *buf, size_t n)
{
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(buf, 1, n, fp), n);
    fclose(fp);
}

/* Driver data as the spec lays it out: headerSize 32, version ONE, vendor,
 * device, UUID, then payload bytes. */
static size_t spec_blob(uint8_t *b, const rlvk_pcache_key *k, uint32_t hsize, uint32_t hver,
                        size_t payload)
{
    uint32_t w[4] = {hsize, hver, k->vendor_id, k->device_id};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            b[4 * i + j] = (uint8_t)(w[i] >> (8 * j));
    memcpy(b + 16, k->uuid, 16);
    for (size_t i = 0; i < payload; i++)
        b[32 + i] = (uint8_t)(i * 7 + 1);
    return 32 + payload;
}

/* Writes blob with the wrapper for key wk, reads it back and checks it
 * against key ck: returns the verdict, why receives the reason. */
static int check_written(const char *path, const rlvk_pcache_key *wk, const rlvk_pcache_key *ck,
                         const uint8_t *blob, size_t n, char *why)
{
    rl_error err = {0};
    ck_assert_int_eq(rlvk_pcache_write(path, wk, blob, n, &err), RL_OK);
    static uint8_t f[4096];
    size_t fn = read_file(path, f, sizeof f);
    const void *d = NULL;
    size_t dn = 0;
    why[0] = '\0';
    int ok = rlvk_pcache_check(f, fn, ck, &d, &dn, why, 160);
    if (ok) {
        ck_assert_uint_eq(dn, n);
        ck_assert_mem_eq(d, blob, n);
    }
    return ok;
}

START_TEST(pcache_file_is_checked_before_the_driver_sees_it)
{
    char path[256];
    snprintf(path, sizeof path, "%s/sub/dir/p.bin", tmp_dir()); /* parents are created */
    rlvk_pcache_key k = {.vendor_id = 0x10005, .device_id = 0x1234, .driver_version = 7};
    for (int i = 0; i < 16; i++)
        k.uuid[i] = (uint8_t)(0xa0 + i);
    uint8_t blob[256], f[4096];
    char why[160];
    size_t n = spec_blob(blob, &k, 32, VK_PIPELINE_CACHE_HEADER_VERSION_ONE, 100);
    ck_assert(check_written(path, &k, &k, blob, n, why));

    /* the wrapper: truncation, flipped data byte, magic */
    size_t fn = read_file(path, f, sizeof f);
    const void *d;
    size_t dn;
    ck_assert(!rlvk_pcache_check(f, fn - 1, &k, &d, &dn, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "truncated"));
    ck_assert(!rlvk_pcache_check(f, 40, &k, &d, &dn, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "shorter than"));
    f[32 + 50] ^= 1;
    ck_assert(!rlvk_pcache_check(f, fn, &k, &d, &dn, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "checksum"));
    f[32 + 50] ^= 1;
    f[0] = 'X';
    ck_assert(!rlvk_pcache_check(f, fn, &k, &d, &dn, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "not a ropelab pipeline cache"));

    /* the key: another driver version, vendor, device, UUID */
    rlvk_pcache_key o = k;
    o.driver_version = 8;
    ck_assert(!check_written(path, &k, &o, blob, n, why));
    ck_assert_ptr_nonnull(strstr(why, "driver version"));
    o = k;
    o.vendor_id = 0x10de;
    ck_assert(!check_written(path, &o, &o, blob, n, why));
    ck_assert_ptr_nonnull(strstr(why, "for vendor 0x10005 device 0x1234"));
    o = k;
    o.device_id = 1;
    ck_assert(!check_written(path, &o, &o, blob, n, why));
    ck_assert_ptr_nonnull(strstr(why, "device"));
    o = k;
    o.uuid[15] ^= 0xff;
    ck_assert(!check_written(path, &o, &o, blob, n, why));
    ck_assert_ptr_nonnull(strstr(why, "pipelineCacheUUID"));

    /* the spec header itself: headerSize, headerVersion */
    n = spec_blob(blob, &k, 16, VK_PIPELINE_CACHE_HEADER_VERSION_ONE, 100);
    ck_assert(!check_written(path, &k, &k, blob, n, why));
    ck_assert_ptr_nonnull(strstr(why, "header size 16"));
    n = spec_blob(blob, &k, 200, VK_PIPELINE_CACHE_HEADER_VERSION_ONE, 100);
    ck_assert(!check_written(path, &k, &k, blob, n, why));
    ck_assert_ptr_nonnull(strstr(why, "header size 200"));
    n = spec_blob(blob, &k, 32, 2, 100);
    ck_assert(!check_written(path, &k, &k, blob, n, why));
    ck_assert_ptr_nonnull(strstr(why, "header version 2"));
}
END_TEST

START_TEST(cache_dir_follows_rl_cache_dir_then_xdg_then_home)
{
    char buf[512], home[512], *h = getenv("HOME"), *x = getenv("XDG_CACHE_HOME");
    char xdg[512];
    snprintf(home, sizeof home, "%s", h ? h : "");
    snprintf(xdg, sizeof xdg, "%s", x ? x : "");
    rl_error err = {0};
    setenv("RL_CACHE_DIR", "/a/b", 1);
    setenv("XDG_CACHE_HOME", "/x", 1);
    setenv("HOME", "/h", 1);
    ck_assert_int_eq(rlvk_cache_dir(buf, sizeof buf, &err), RL_OK);
    ck_assert_str_eq(buf, "/a/b");
    unsetenv("RL_CACHE_DIR");
    ck_assert_int_eq(rlvk_cache_dir(buf, sizeof buf, &err), RL_OK);
    ck_assert_str_eq(buf, "/x/ropelab");
    setenv("XDG_CACHE_HOME", "relative", 1); /* invalid per XDG: ignored */
    ck_assert_int_eq(rlvk_cache_dir(buf, sizeof buf, &err), RL_OK);
    ck_assert_str_eq(buf, "/h/.cache/ropelab");
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    ck_assert_int_eq(rlvk_cache_dir(buf, sizeof buf, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "RL_CACHE_DIR"));
    if (h) /* later tests (CK_FORK=no) and the driver see the environment as it was */
        setenv("HOME", home, 1);
    if (x)
        setenv("XDG_CACHE_HOME", xdg, 1);
}
END_TEST

/* Opens device "auto" with a persisted cache in RL_CACHE_DIR, builds the
 * copy kernel (so the cache has something), and closes it again; the
 * validation layer must stay silent. info receives dev.pcache after close. */
static void persisted_session(rlvk_pcache_info *open_info, rlvk_pcache_info *closed)
{
    rlvk_instance inst;
    rlvk_device dev;
    rl_error err = {0};
    rlvk_instance_desc d = {.validation = 1, .require_validation = 1, .persist_pipelines = 1};
    ck_assert_msg(rlvk_instance_create(&d, &inst, &err) == RL_OK, "%s", err.msg);
    uint32_t idx[16], n = 0;
    ck_assert_int_eq(rlvk_select(&inst, "auto", idx, &n, &err), RL_OK);
    ck_assert_msg(rlvk_device_create(&inst, idx[0], &dev, &err) == RL_OK, "%s", err.msg);
    *open_info = dev.pcache;
    bench_copy copy;
    ck_assert_msg(bench_copy_create(&dev, 0, &copy, &err) == RL_OK, "%s", err.msg);
    /* the storage-buffer copy, and on a CPU device its texel-read twin */
    ck_assert_uint_eq(dev.n_pipelines, 1u + (uint32_t)copy.has_texel);
    ck_assert_int_eq(copy.has_texel, dev.info.vk_type == VK_PHYSICAL_DEVICE_TYPE_CPU);
    ck_assert(dev.pipeline_s > 0);
    bench_copy_destroy(&dev, &copy);
    rlvk_device_destroy(&dev);
    *closed = dev.pcache;
    ck_assert_msg(rlvk_instance_messages(&inst) == 0, "validation: %s", inst.first_message);
    rlvk_instance_destroy(&inst);
}

START_TEST(pipeline_cache_persists_and_a_corrupt_file_is_replaced)
{
    const char *dir = tmp_dir();
    setenv("RL_CACHE_DIR", dir, 1);
    unsetenv("RL_NO_PIPELINE_CACHE");
    rlvk_pcache_info a, b;
    persisted_session(&a, &b);
    ck_assert_int_eq(a.enabled, 1);
    ck_assert_str_eq(a.status, "none yet");
    ck_assert_ptr_nonnull(strstr(a.path, dir));
    ck_assert_uint_ge(b.saved_bytes, 32); /* at least the spec header */
    uint8_t f[1 << 16];
    size_t fn = read_file(a.path, f, sizeof f);
    ck_assert_uint_eq(fn, 32 + b.saved_bytes);

    /* the second process starts from the file */
    persisted_session(&a, &b);
    ck_assert_str_eq(a.status, "loaded");
    ck_assert_uint_eq(a.loaded_bytes, fn - 32);

    /* a corrupt file is never handed to the driver, and is replaced */
    f[fn - 1] ^= 0x55;
    write_bytes(a.path, f, fn);
    persisted_session(&a, &b);
    ck_assert_msg(!strncmp(a.status, "rejected: checksum", 18), "%s", a.status);
    ck_assert_uint_eq(a.loaded_bytes, 0);
    ck_assert_uint_gt(b.saved_bytes, 0);
    persisted_session(&a, &b);
    ck_assert_str_eq(a.status, "loaded");

    /* RL_NO_PIPELINE_CACHE=1 turns it off */
    remove(a.path);
    setenv("RL_NO_PIPELINE_CACHE", "1", 1);
    persisted_session(&a, &b);
    unsetenv("RL_NO_PIPELINE_CACHE");
    ck_assert_int_eq(a.enabled, 0);
    ck_assert_str_eq(a.status, "disabled");
    ck_assert_uint_eq(b.saved_bytes, 0);
    FILE *fp = fopen(a.path[0] ? a.path : "/nonexistent/x", "rb");
    ck_assert_ptr_null(fp);
    rmdir(dir);
}
END_TEST

/* The device's pipeline table: an identical variant is handed out again
 * (same VkPipeline, nothing compiled), another workgroup size or other
 * specialization constants are new pipelines, and a released entry stays
 * for the next user until the device goes. */
/* A texel binding rlvk cannot make (its binding number among the storage
 * buffers', its source past them, a format it has no texel size for) is
 * refused by name before the driver sees it. */
START_TEST(pipeline_refuses_a_texel_binding_it_cannot_make)
{
    rl_gpu g;
    rl_gpu_open(&g);
    rl_error err = {0};
    const rlvk_texel_binding bad[3] = {{0, 0, VK_FORMAT_R32G32B32A32_SFLOAT},
                                       {16, 1, VK_FORMAT_R32G32B32A32_SFLOAT},
                                       {16, 0, VK_FORMAT_R8G8B8A8_UNORM}};
    for (int i = 0; i < 3; i++) {
        rlvk_pipeline p;
        rlvk_pipeline_desc d = {.name = "fma_texel", .spirv = rl_spv_fma_peak_r4,
                                .spirv_bytes = sizeof rl_spv_fma_peak_r4, .n_bindings = 1,
                                .push_bytes = sizeof(struct rl_fma_push), .local_size_x = 64,
                                .n_texel = 1, .texel = &bad[i]};
        ck_assert_int_eq(rlvk_pipeline_create(&g.dev, &d, &p, &err), RL_ERR_ARG);
        ck_assert_msg(strstr(err.msg, "fma_texel: texel binding"), "%s", err.msg);
    }
    ck_assert_uint_eq(g.dev.n_pipelines, 0);
    ck_assert_uint_eq(rlvk_texel_bytes(VK_FORMAT_R16G16B16A16_SFLOAT), 8);
    ck_assert(!rlvk_texel_fits(&g.dev.info, (uint64_t)g.dev.info.max_texel_elements + 1));
    ck_assert(rlvk_texel_fits(&g.dev.info, 1) == g.dev.info.texel_vec4);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(pipeline_table_reuses_identical_variants)
{
    rl_gpu g;
    rl_gpu_open(&g);
    rl_error err = {0};
    static const uint32_t spec_a[1] = {1}, spec_b[1] = {2};
    rlvk_pipeline p1, p2, p3, p4, p5;
    rlvk_pipeline_desc d = {.name = "fma_a", .spirv = rl_spv_fma_peak_r4,
                            .spirv_bytes = sizeof rl_spv_fma_peak_r4, .n_bindings = 1,
                            .push_bytes = sizeof(struct rl_fma_push), .local_size_x = 64};
    ck_assert_int_eq(rlvk_pipeline_create(&g.dev, &d, &p1, &err), RL_OK);
    ck_assert_int_eq(rlvk_pipeline_create(&g.dev, &d, &p2, &err), RL_OK);
    ck_assert(p1.pipeline == p2.pipeline);
    ck_assert_uint_eq(g.dev.n_pipelines, 1);
    ck_assert_uint_eq(g.dev.n_pipelines_reused, 1);
    d.local_size_x = 32;
    ck_assert_int_eq(rlvk_pipeline_create(&g.dev, &d, &p3, &err), RL_OK);
    ck_assert(p3.pipeline != p1.pipeline);
    ck_assert_uint_eq(p3.local_size_x, 32);
    d.local_size_x = 64, d.n_spec = 1, d.spec = spec_a;
    ck_assert_int_eq(rlvk_pipeline_create(&g.dev, &d, &p4, &err), RL_OK);
    d.spec = spec_b;
    ck_assert_int_eq(rlvk_pipeline_create(&g.dev, &d, &p5, &err), RL_OK);
    ck_assert(p4.pipeline != p5.pipeline && p4.pipeline != p1.pipeline);
    ck_assert_uint_eq(g.dev.n_pipelines, 4);
    VkPipeline first = p1.pipeline;
    rlvk_pipeline_destroy(&g.dev, &p1);
    rlvk_pipeline_destroy(&g.dev, &p2);
    ck_assert(p1.pipeline == VK_NULL_HANDLE);
    d.n_spec = 0, d.spec = NULL;
    ck_assert_int_eq(rlvk_pipeline_create(&g.dev, &d, &p1, &err), RL_OK);
    ck_assert(p1.pipeline == first);
    ck_assert_uint_eq(g.dev.n_pipelines, 4);
    ck_assert_uint_eq(g.dev.n_pipelines_reused, 2);
    rlvk_pipeline_destroy(&g.dev, &p1);
    rlvk_pipeline_destroy(&g.dev, &p3);
    rlvk_pipeline_destroy(&g.dev, &p4);
    rlvk_pipeline_destroy(&g.dev, &p5);
    rl_gpu_close(&g);
}
END_TEST

/* The table bounds what a batch keeps: 3 x RLVK_PTABLE_SIZE distinct
 * variants, each released by its user after use (a run of a new shape),
 * never have more than RLVK_PTABLE_SIZE + 1 VkPipelines alive at once (the
 * new one is created before the least recently used one is released), and
 * the table ends full, not larger. On the main before, a 50-shape batch
 * grew to 1.3 GiB: 64 entries of ~20 MiB. */
START_TEST(pipeline_table_bounds_the_pipelines_alive)
{
    rl_gpu g;
    rl_gpu_open(&g);
    rl_error err = {0};
    /* the copy yardstick, the smallest shader: 72 variants of the unrolled
     * fma_peak took 19 s of the suite under the sanitizers, and the table's
     * bookkeeping does not depend on what the variants compute */
    static const rlvk_texel_binding x_texel = {16, 0, VK_FORMAT_R32G32B32A32_SFLOAT};
    rlvk_pipeline_desc d = {.name = "copy_bound", .spirv = test_spv_copy,
                            .spirv_bytes = sizeof test_spv_copy, .n_bindings = 2,
                            .push_bytes = sizeof(struct rl_copy_push), .n_texel = 1,
                            .texel = &x_texel};
    for (uint32_t i = 0; i < 3 * RLVK_PTABLE_SIZE; i++) {
        rlvk_pipeline p;
        d.local_size_x = 1 + i; /* a distinct variant each time */
        ck_assert_msg(rlvk_pipeline_create(&g.dev, &d, &p, &err) == RL_OK, "%s", err.msg);
        rlvk_pipeline_destroy(&g.dev, &p);
        ck_assert_uint_le(g.dev.n_pipelines_live, RLVK_PTABLE_SIZE);
    }
    ck_assert_uint_eq(g.dev.n_pipelines, 3 * RLVK_PTABLE_SIZE);
    ck_assert_uint_le(g.dev.n_pipelines_live_peak, RLVK_PTABLE_SIZE + 1);
    ck_assert_uint_eq(g.dev.n_pipelines_live, RLVK_PTABLE_SIZE);
    rl_gpu_close(&g);
}
END_TEST

/* The compile thread count: the device's setting, else RL_COMPILE_THREADS,
 * else the caller plus one per idle core — between 1 and the online CPUs;
 * never above RLVK_MAX_COMPILE_THREADS. */
START_TEST(compile_threads_follow_device_then_environment_then_idle_cores)
{
    rlvk_device dev;
    memset(&dev, 0, sizeof dev);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsetenv("RL_COMPILE_THREADS");
    uint32_t n = rlvk_compile_threads(&dev);
    ck_assert(n >= 1 && (long)n <= cpus && n <= RLVK_MAX_COMPILE_THREADS);
    setenv("RL_COMPILE_THREADS", "3", 1);
    ck_assert_uint_eq(rlvk_compile_threads(&dev), 3);
    setenv("RL_COMPILE_THREADS", "1000", 1);
    ck_assert_uint_eq(rlvk_compile_threads(&dev), RLVK_MAX_COMPILE_THREADS);
    /* not a whole number >= 1: a warning and the default (at most the online CPUs;
     * strtol alone read "9x" as 9) */
    setenv("RL_COMPILE_THREADS", "9x", 1);
    n = rlvk_compile_threads(&dev);
    ck_assert(n >= 1 && (long)n <= cpus);
    setenv("RL_COMPILE_THREADS", "0", 1);
    n = rlvk_compile_threads(&dev);
    ck_assert(n >= 1 && (long)n <= cpus);
    dev.compile_threads = 2;
    ck_assert_uint_eq(rlvk_compile_threads(&dev), 2);
    unsetenv("RL_COMPILE_THREADS");
}
END_TEST

/* rlvk_pipelines_create: the misses compiled together on several threads,
 * each key once; what the table held handed out as before; counters and
 * sharing as n calls of rlvk_pipeline_create. */
START_TEST(pipelines_created_together_share_as_one_by_one)
{
    rl_gpu g;
    rl_gpu_open(&g);
    g.dev.compile_threads = 3;
    rl_error err = {0};
    static const uint32_t spec[3][1] = {{1}, {2}, {3}};
    rlvk_pipeline_desc base = {.name = "fma", .spirv = rl_spv_fma_peak_r4,
                               .spirv_bytes = sizeof rl_spv_fma_peak_r4, .n_bindings = 1,
                               .push_bytes = sizeof(struct rl_fma_push), .local_size_x = 64};
    rlvk_pipeline held;
    ck_assert_int_eq(rlvk_pipeline_create(&g.dev, &base, &held, &err), RL_OK);
    ck_assert_uint_eq(g.dev.n_pipelines, 1);
    /* 0: held already; 1-3: new; 4: the same key as 2 */
    rlvk_pipeline_desc d[5];
    const char *names[5] = {"again", "s1", "s2", "s3", "s2 twin"};
    for (int i = 0; i < 5; i++) {
        d[i] = base;
        d[i].name = names[i];
        if (i >= 1) {
            d[i].n_spec = 1;
            d[i].spec = spec[i == 4 ? 1 : i - 1];
        }
    }
    rlvk_pipeline p[5];
    ck_assert_msg(rlvk_pipelines_create(&g.dev, 5, d, p, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(g.dev.compile_threads_used, 3);
    ck_assert_uint_eq(g.dev.n_pipelines, 4);
    ck_assert_uint_eq(g.dev.n_pipelines_reused, 2);
    ck_assert(p[0].pipeline == held.pipeline);
    ck_assert(p[4].pipeline == p[2].pipeline);
    ck_assert(p[1].pipeline != p[2].pipeline && p[2].pipeline != p[3].pipeline &&
              p[1].pipeline != held.pipeline);
    for (int i = 0; i < 5; i++)
        ck_assert_str_eq(p[i].name, names[i]);
    /* they now come from the table, one by one */
    rlvk_pipeline again;
    ck_assert_int_eq(rlvk_pipeline_create(&g.dev, &d[3], &again, &err), RL_OK);
    ck_assert(again.pipeline == p[3].pipeline);
    ck_assert_uint_eq(g.dev.n_pipelines, 4);
    /* each works: one FMA dispatch per pipeline */
    rlvk_buffer out;
    ck_assert_int_eq(rlvk_buffer_create(&g.dev, 64 * 16, "out", &out, &err), RL_OK);
    for (int i = 0; i < 5; i++) {
        rlvk_cmd cmd;
        struct rl_fma_push push = {.seed = 1.0f};
        const rlvk_buffer *bufs[1] = {&out};
        ck_assert_int_eq(rlvk_cmd_begin(&g.dev, 1, &cmd, &err), RL_OK);
        ck_assert_int_eq(rlvk_cmd_dispatch(&cmd, &p[i], bufs, &push, 1, &err), RL_OK);
        ck_assert_int_eq(rlvk_cmd_submit_wait(&cmd, &err), RL_OK);
        rlvk_cmd_destroy(&cmd);
    }
    rlvk_buffer_destroy(&g.dev, &out);
    rlvk_pipeline_destroy(&g.dev, &again);
    for (int i = 0; i < 5; i++)
        rlvk_pipeline_destroy(&g.dev, &p[i]);
    rlvk_pipeline_destroy(&g.dev, &held);
    rl_gpu_close(&g);
}
END_TEST

/* A failing pipeline among several compiled together: the call fails as a
 * whole with the message of the lowest-index failure (it names that
 * pipeline and the limit), holds nothing (the pipelines the other threads
 * made are released: the validation layer reports any object left at
 * device destruction), and a later call compiles them afresh. */
START_TEST(pipelines_created_together_fail_as_a_whole)
{
    rl_gpu g;
    rl_gpu_open(&g);
    g.dev.compile_threads = 4;
    rl_error err = {0};
    static const uint32_t spec[4][1] = {{1}, {2}, {3}, {4}};
    rlvk_pipeline_desc d[4];
    const char *names[4] = {"ok a", "too wide b", "ok c", "too wide d"};
    for (int i = 0; i < 4; i++) {
        d[i] = (rlvk_pipeline_desc){.name = names[i], .spirv = rl_spv_fma_peak_r4,
                                    .spirv_bytes = sizeof rl_spv_fma_peak_r4, .n_bindings = 1,
                                    .push_bytes = sizeof(struct rl_fma_push), .local_size_x = 64,
                                    .n_spec = 1, .spec = spec[i]};
        if (i == 1 || i == 3)
            d[i].local_size_x = g.dev.info.max_workgroup_size[0] + 1;
    }
    rlvk_pipeline p[4];
    memset(p, 0xAB, sizeof p);
    ck_assert_int_eq(rlvk_pipelines_create(&g.dev, 4, d, p, &err), RL_ERR_LIMIT);
    ck_assert_msg(strstr(err.msg, "pipeline too wide b: workgroup size") != NULL, "%s", err.msg);
    ck_assert_ptr_null(strstr(err.msg, "too wide d"));
    for (int i = 0; i < 4; i++)
        ck_assert(p[i].pipeline == VK_NULL_HANDLE);
    ck_assert_uint_eq(g.dev.n_pipelines, 0);
    ck_assert_uint_eq(g.dev.n_pipelines_reused, 0);
    /* nothing entered the table: the good ones are compiled again */
    rlvk_pipeline_desc good[2] = {d[0], d[2]};
    ck_assert_msg(rlvk_pipelines_create(&g.dev, 2, good, p, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(g.dev.n_pipelines, 2);
    ck_assert_uint_eq(g.dev.n_pipelines_reused, 0);
    rlvk_pipeline_destroy(&g.dev, &p[0]);
    rlvk_pipeline_destroy(&g.dev, &p[1]);
    rl_gpu_close(&g);
}
END_TEST

int main(void)
{
    rl_test_pin_driver();
    rl_test_require_vulkan("vk");
    Suite *s = suite_create("vk");
    /* device selection: auto, all, index, name, UUID */
    TCase *tc_select = tcase_create("select");
    tcase_set_timeout(tc_select, 120);
    tcase_add_test(tc_select, select_resolves_auto_all_index_and_name);
    tcase_add_test(tc_select, select_rejects_bad_index_and_name);
    tcase_add_test(tc_select, select_by_device_uuid);
    suite_add_tcase(s, tc_select);
    /* buffers: round trips, transfer counters, the size limit */
    TCase *tc_buffers = tcase_create("buffers");
    tcase_set_timeout(tc_buffers, 120);
    tcase_add_test(tc_buffers, buffers_round_trip);
    tcase_add_test(tc_buffers, transfer_counters_count_bytes_that_crossed);
    tcase_add_test(tc_buffers, size_check_names_the_limit);
    suite_add_tcase(s, tc_buffers);
    TCase *tc_dispatch = tcase_create("dispatch");
    tcase_set_timeout(tc_dispatch, 120);
    tcase_add_test(tc_dispatch, dispatch_splits_beyond_max_group_count);
    tcase_add_test(tc_dispatch, yardstick_copy_covers_every_vec4_and_no_more);
    tcase_add_test(tc_dispatch, dispatch_reports_exhausted_descriptor_reservation);
    suite_add_tcase(s, tc_dispatch);
    /* the device's pipeline table and compiling pipelines together */
    TCase *tc_pipelines = tcase_create("pipelines");
    tcase_set_timeout(tc_pipelines, 120);
    tcase_add_test(tc_pipelines, pipeline_table_reuses_identical_variants);
    tcase_add_test(tc_pipelines, pipeline_table_bounds_the_pipelines_alive);
    tcase_add_test(tc_pipelines, pipeline_refuses_a_texel_binding_it_cannot_make);
    tcase_add_test(tc_pipelines, compile_threads_follow_device_then_environment_then_idle_cores);
    tcase_add_test(tc_pipelines, pipelines_created_together_share_as_one_by_one);
    tcase_add_test(tc_pipelines, pipelines_created_together_fail_as_a_whole);
    suite_add_tcase(s, tc_pipelines);
    /* the persisted pipeline cache: its file, its directory, reuse across sessions */
    TCase *tc_pcache = tcase_create("pcache");
    tcase_set_timeout(tc_pcache, 120);
    tcase_add_test(tc_pcache, pcache_file_is_checked_before_the_driver_sees_it);
    tcase_add_test(tc_pcache, cache_dir_follows_rl_cache_dir_then_xdg_then_home);
    tcase_add_test(tc_pcache, pipeline_cache_persists_and_a_corrupt_file_is_replaced);
    suite_add_tcase(s, tc_pcache);
    return rl_test_run(s);
}
