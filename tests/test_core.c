/* core/: status messages, RNG determinism, ulp helpers, half -> float, atomic files,
 * a results folder's lock, temporaries and replaced directories. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "core/rl_csv.h"
#include "core/rl_fs.h"
#include "core/rl_npy.h"
#include "core/rl_param.h"
#include "core/rl_safetensors.h"
#include "core/rl_sha256.h"
#include "core/rl_util.h"
#include "rl_test.h"

/* Writes a version-1.0 .npy with header text hdr (padded as numpy pads it)
 * and n float32 values. */
static void write_npy(const char *path, const char *hdr, const float *v, size_t n)
{
    char h[256];
    size_t len = strlen(hdr);
    size_t total = (10 + len + 1 + 63) / 64 * 64; /* magic+len+header+\n, 64-aligned */
    memset(h, ' ', sizeof h);
    memcpy(h, hdr, len);
    h[total - 10 - 1] = '\n';
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                             (unsigned char)((total - 10) & 0xff), (unsigned char)((total - 10) >> 8)};
    fwrite(pre, 1, 10, f);
    fwrite(h, 1, total - 10, f);
    fwrite(v, sizeof *v, n, f);
    fclose(f);
}

/* Writes a .safetensors file (8-byte little-endian header length, header
 * JSON, data) to a per-process path (returned in path). */
static void write_safetensors(char *path, size_t cap, const char *hdr, const void *data,
                              size_t bytes)
{
    snprintf(path, cap, "/tmp/rl_core_%ld.safetensors", (long)getpid());
    uint64_t hl = strlen(hdr);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(hl >> (8 * i));
    fwrite(b, 1, 8, f);
    fwrite(hdr, 1, hl, f);
    if (bytes)
        fwrite(data, 1, bytes, f);
    fclose(f);
}

static rl_status load_npy_text(const char *hdr, const float *v, size_t n, rl_error *err)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/rl_core_%ld.npy", (long)getpid());
    write_npy(path, hdr, v, n);
    rl_npy a;
    rl_status st = rl_npy_load(path, &a, err);
    if (!st)
        rl_npy_free(&a);
    unlink(path);
    return st;
}

START_TEST(fail_records_status_and_message)
{
    rl_error err = {0};
    ck_assert_int_eq(rl_fail(&err, RL_ERR_ARG, "rotary_dim %d must be even", 5), RL_ERR_ARG);
    ck_assert_int_eq(err.status, RL_ERR_ARG);
    ck_assert_str_eq(err.msg, "rotary_dim 5 must be even");
    rl_error_prefix(&err, "config.yaml:3");
    ck_assert_str_eq(err.msg, "config.yaml:3: rotary_dim 5 must be even");
    ck_assert_str_eq(rl_status_str(RL_ERR_LIMIT), "exceeds a device limit");
    ck_assert_str_eq(rl_status_str((rl_status)999), "unknown status");
}
END_TEST

/* The failing key travels as data (err.key), never to be found in msg. */
START_TEST(fail_key_carries_the_key_as_data)
{
    rl_error err = {0};
    ck_assert_int_eq(rl_fail_key(&err, RL_ERR_ARG, "factor", "yarn needs factor (%s)", "a number"),
                     RL_ERR_ARG);
    ck_assert_int_eq(err.status, RL_ERR_ARG);
    ck_assert_str_eq(err.msg, "yarn needs factor (a number)");
    ck_assert_str_eq(err.key, "factor");
    rl_error_prefix(&err, "rope"); /* context keeps the key */
    ck_assert_str_eq(err.msg, "rope: yarn needs factor (a number)");
    ck_assert_str_eq(err.key, "factor");
    /* a later keyless failure in the same rl_error keeps no stale key */
    rl_fail(&err, RL_ERR_IO, "disk full");
    ck_assert_str_eq(err.key, "");
    /* set / clear on a recorded error; status and message stay */
    rl_error_set_key(&err, "attn_remap_leak");
    ck_assert_str_eq(err.key, "attn_remap_leak");
    ck_assert_str_eq(err.msg, "disk full");
    ck_assert_int_eq(err.status, RL_ERR_IO);
    rl_error_set_key(&err, NULL);
    ck_assert_str_eq(err.key, "");
    rl_error_set_key(&err, "x");
    rl_error_set_key(&err, "");
    ck_assert_str_eq(err.key, "");
    /* a key longer than the field: its first RL_ERROR_KEY_MAX - 1 bytes */
    char longkey[200];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    rl_fail_key(&err, RL_ERR_ARG, longkey, "too long");
    ck_assert_uint_eq(strlen(err.key), RL_ERROR_KEY_MAX - 1);
    ck_assert(strncmp(err.key, longkey, RL_ERROR_KEY_MAX - 1) == 0);
    char exact[RL_ERROR_KEY_MAX];
    memset(exact, 'e', sizeof exact - 1);
    exact[sizeof exact - 1] = '\0';
    rl_error_set_key(&err, exact); /* exactly 63 bytes: whole */
    ck_assert_str_eq(err.key, exact);
    /* NULL err: the status comes back, nothing is written */
    ck_assert_int_eq(rl_fail_key(NULL, RL_ERR_ARG, "factor", "f %d", 1), RL_ERR_ARG);
    rl_error_set_key(NULL, "factor");
    ck_assert_int_eq(rl_fail_key(&err, RL_ERR_ARG, NULL, "no key"), RL_ERR_ARG);
    ck_assert_str_eq(err.key, "");
    /* the one parameter validator names the key as data, owner or not */
    static const rl_param ps[] = {
        {.key = "num_buckets", .type = RL_P_INT, .def = "32", .min = 2, .max = 1024},
        {.key = "path", .type = RL_P_STR, .def = NULL},
    };
    json_t *out = NULL, *v = json_integer(1);
    ck_assert_int_eq(rl_param_check(NULL, &ps[0], v, &out, &err), RL_ERR_ARG);
    ck_assert_str_eq(err.key, "num_buckets");
    ck_assert_str_eq(err.msg, "1 is below the minimum 2");
    json_decref(v);
    json_t *given = json_pack("{s:s, s:i}", "path", "t.npy", "num_buckets", 1);
    ck_assert_int_eq(rl_params_resolve("t5", ps, 2, given, &out, &err), RL_ERR_ARG);
    ck_assert_str_eq(err.key, "num_buckets");
    ck_assert_str_eq(err.msg, "t5: num_buckets 1 is below the minimum 2");
    json_object_del(given, "path"); /* required and missing */
    json_object_set_new(given, "num_buckets", json_integer(8));
    ck_assert_int_eq(rl_params_resolve("t5", ps, 2, given, &out, &err), RL_ERR_ARG);
    ck_assert_str_eq(err.key, "path");
    json_object_set_new(given, "path", json_string("t.npy"));
    json_object_set_new(given, "num_bucket", json_integer(8)); /* unknown */
    ck_assert_int_eq(rl_params_resolve("t5", ps, 2, given, &out, &err), RL_ERR_ARG);
    ck_assert_str_eq(err.key, "num_bucket");
    json_decref(given);
    /* a type error is told by the value's type, not by the message's words */
    json_t *i2 = json_integer(2), *r2 = json_real(2.0), *r25 = json_real(2.5), *s2 = json_string("2");
    ck_assert(rl_param_type_ok(&ps[0], i2) && rl_param_type_ok(&ps[0], r2));
    ck_assert(!rl_param_type_ok(&ps[0], r25) && !rl_param_type_ok(&ps[0], s2));
    ck_assert(rl_param_type_ok(&ps[1], s2) && !rl_param_type_ok(&ps[1], i2));
    json_decref(i2);
    json_decref(r2);
    json_decref(r25);
    json_decref(s2);
}
END_TEST

START_TEST(rng_is_deterministic_and_stream_separated)
{
    rl_rng a, b, c;
    rl_rng_seed(&a, 42, "q");
    rl_rng_seed(&b, 42, "q");
    rl_rng_seed(&c, 42, "k");
    int same_c = 1;
    for (int i = 0; i < 100; i++) {
        uint64_t x = rl_rng_u64(&a), y = rl_rng_u64(&b), z = rl_rng_u64(&c);
        ck_assert(x == y);
        same_c &= x == z;
    }
    ck_assert(!same_c);
    /* Normal draws: mean ~0, variance ~1 over 20000 samples (5 sigma). */
    double s = 0, s2 = 0;
    const int n = 20000;
    for (int i = 0; i < n; i++) {
        double v = rl_rng_normal(&a);
        s += v;
        s2 += v * v;
    }
    ck_assert_double_lt(fabs(s / n), 5.0 / sqrt(n));
    ck_assert_double_lt(fabs(s2 / n - 1.0), 5.0 * sqrt(2.0 / n));
}
END_TEST

START_TEST(ulp_helpers_count_representable_floats)
{
    ck_assert_uint_eq(rl_ulp_diff(1.0f, 1.0f), 0);
    ck_assert_uint_eq(rl_ulp_diff(1.0f, nextafterf(1.0f, 2.0f)), 1);
    ck_assert_uint_eq(rl_ulp_diff(-0.0f, 0.0f), 0);
    ck_assert_uint_eq(rl_ulp_diff(nextafterf(0.0f, -1.0f), nextafterf(0.0f, 1.0f)), 2);
    ck_assert_double_eq(rl_ulp32(1.0), 0x1p-23);
    ck_assert_double_eq(rl_ulp32(1.5), 0x1p-23);
    ck_assert_double_eq(rl_ulp32(0.75), 0x1p-24);
    ck_assert_double_eq(rl_ulp32(0.0), 0x1p-149);
}
END_TEST

/* Values from the binary16 definition: (-1)^s 2^(e-15) 1.m, subnormals
 * 2^-14 0.m, e = 31 inf/NaN. */
/* Published Wilson 95 % intervals (Brown, Cai & DasGupta 2001; Newcombe
 * 1998 Table I: 0/10 -> 0-0.2775, 5/10 -> 0.2366-0.7634, 20/20 ->
 * 0.8389-1), and 100/200 -> 0.4314-0.5686 (Newcombe's method 3). */
START_TEST(wilson_interval_matches_published_values)
{
    static const double cases[][4] = {{0, 10, 0, 0.2775}, {5, 10, 0.2366, 0.7634},
                                      {20, 20, 0.8389, 1}, {100, 200, 0.4314, 0.5686}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double lo, hi;
        rl_wilson95(cases[i][0], cases[i][1], &lo, &hi);
        ck_assert_msg(fabs(lo - cases[i][2]) < 5e-5 && fabs(hi - cases[i][3]) < 5e-5,
                      "%g/%g: [%.5f, %.5f], published [%.4f, %.4f]", cases[i][0], cases[i][1],
                      lo, hi, cases[i][2], cases[i][3]);
    }
    double lo, hi;
    rl_wilson95(0, 0, &lo, &hi);
    ck_assert(isnan(lo) && isnan(hi));
}
END_TEST

START_TEST(half_to_float_is_exact_for_every_class)
{
    ck_assert_float_eq(rl_half_to_float(0x3c00), 1.0f);
    ck_assert_float_eq(rl_half_to_float(0xc000), -2.0f);
    ck_assert_float_eq(rl_half_to_float(0x3555), 0x1.554p-2f);
    ck_assert_float_eq(rl_half_to_float(0x7bff), 65504.0f);
    ck_assert_float_eq(rl_half_to_float(0x0400), 0x1p-14f);
    ck_assert_float_eq(rl_half_to_float(0x03ff), 0x3ffp-24f);
    ck_assert_float_eq(rl_half_to_float(0x8001), -0x1p-24f);
    ck_assert(rl_half_to_float(0x0000) == 0.0f && !signbit(rl_half_to_float(0x0000)));
    ck_assert(rl_half_to_float(0x8000) == 0.0f && signbit(rl_half_to_float(0x8000)));
    ck_assert(isinf(rl_half_to_float(0x7c00)) && rl_half_to_float(0x7c00) > 0);
    ck_assert(isinf(rl_half_to_float(0xfc00)) && rl_half_to_float(0xfc00) < 0);
    ck_assert(isnan(rl_half_to_float(0x7e00)));
    ck_assert(isnan(rl_half_to_float(0xfc01)));
}
END_TEST

START_TEST(atomic_file_appears_only_on_commit)
{
    char dir[] = "/tmp/rltestXXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/out.csv", dir);
    rl_atomic_file af;
    rl_error err = {0};
    ck_assert_int_eq(rl_atomic_open(&af, path, &err), RL_OK);
    fputs("a,b\n", af.fp);
    ck_assert_int_ne(access(path, F_OK), 0);
    ck_assert_int_eq(rl_atomic_commit(&af, &err), RL_OK);
    ck_assert_int_eq(access(path, F_OK), 0);
    ck_assert_int_eq(access(af.tmp, F_OK) == 0, 0);
    ck_assert_int_eq(rl_atomic_open(&af, path, &err), RL_OK);
    fputs("partial", af.fp);
    rl_atomic_abort(&af);
    FILE *f = fopen(path, "r");
    char buf[16] = {0};
    ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
    fclose(f);
    ck_assert_str_eq(buf, "a,b\n");
    remove(path);
    rmdir(dir);
    snprintf(path, sizeof path, "/nonexistent-dir-rl/x.csv");
    ck_assert_int_eq(rl_atomic_open(&af, path, &err), RL_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent-dir-rl/x.csv"));
}
END_TEST

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static int holds(const char *path, const char *text)
{
    char buf[64] = {0};
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return !strcmp(buf, text);
}

/* Cleaning a results folder's temporaries: names with ".tmp." (or a
 * prefix) removed, a link so named removed as a link (its target kept),
 * everything else kept; a second lock on the folder is refused while the
 * first is held and granted once it is released. */
START_TEST(clean_tmp_unlinks_links_and_never_follows)
{
    char dir[] = "/tmp/rltestXXXXXX", p[512], q[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    rl_error err = {0};
    snprintf(p, sizeof p, "%s/plots", dir);
    ck_assert_int_eq(mkdir(p, 0777), 0);
    snprintf(p, sizeof p, "%s/outside", dir);
    put(p, "keep");
    snprintf(q, sizeof q, "%s/plots/b.svg.tmp.2", dir);
    ck_assert_int_eq(symlink(p, q), 0);
    snprintf(p, sizeof p, "%s/plots/a.png.tmp.1", dir);
    put(p, "partial");
    snprintf(p, sizeof p, "%s/plots/a.png", dir);
    put(p, "whole");
    snprintf(p, sizeof p, "%s/report.md.tmp.3", dir);
    put(p, "partial");
    snprintf(p, sizeof p, "%s/report.md", dir);
    put(p, "whole");
    size_t n = 0;
    snprintf(p, sizeof p, "%s/plots", dir);
    ck_assert_int_eq(rl_fs_clean_tmp(dir, p, NULL, 0, &n, &err), RL_OK);
    ck_assert_uint_eq(n, 2);
    static const char *const rep[] = {"report.md.tmp."};
    ck_assert_int_eq(rl_fs_clean_tmp(dir, dir, rep, 1, &n, &err), RL_OK);
    ck_assert_uint_eq(n, 1);
    struct stat sb;
    ck_assert_int_ne(lstat(q, &sb), 0);
    snprintf(p, sizeof p, "%s/outside", dir);
    ck_assert(holds(p, "keep"));
    snprintf(p, sizeof p, "%s/plots/a.png", dir);
    ck_assert(holds(p, "whole"));
    snprintf(p, sizeof p, "%s/report.md", dir);
    ck_assert(holds(p, "whole"));
    /* a link where the directory to clean is: refused, nothing followed */
    snprintf(p, sizeof p, "%s/inputs", dir);
    ck_assert_int_eq(symlink("/tmp", p), 0);
    ck_assert_int_eq(rl_fs_clean_tmp(dir, p, NULL, 0, &n, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "symbolic link"));
    int a = -1, b = -1;
    ck_assert_int_eq(rl_fs_lock(dir, &a, &err), RL_OK);
    ck_assert_int_eq(rl_fs_lock(dir, &b, &err), RL_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.msg, "in use by another ropelab process"));
    rl_fs_unlock(a);
    ck_assert_int_eq(rl_fs_lock(dir, &b, &err), RL_OK);
    rl_fs_unlock(b);
    snprintf(p, sizeof p, "%s/inputs", dir);
    unlink(p);
    const char *left[] = {"outside", "plots/a.png", "report.md", ".ropelab.lock"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, left[i]);
        ck_assert_int_eq(unlink(p), 0);
    }
    snprintf(p, sizeof p, "%s/plots", dir);
    ck_assert_int_eq(rmdir(p), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* rl_fs_replace: the new directory in place of the old one, the old one
 * gone, a missing destination a plain rename, a link at the destination
 * refused. */
START_TEST(replace_puts_a_directory_in_place_of_another)
{
    char dir[] = "/tmp/rltestXXXXXX", p[600], from[256], to[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    rl_error err = {0};
    snprintf(from, sizeof from, "%s/.tmp-r", dir);
    snprintf(to, sizeof to, "%s/r", dir);
    for (int round = 0; round < 2; round++) {
        ck_assert_int_eq(mkdir(from, 0777), 0);
        snprintf(p, sizeof p, "%s/t.csv", from);
        put(p, round ? "new" : "old");
        ck_assert_int_eq(rl_fs_replace(dir, from, to, &err), RL_OK);
        snprintf(p, sizeof p, "%s/t.csv", to);
        ck_assert(holds(p, round ? "new" : "old"));
        ck_assert_int_ne(access(from, F_OK), 0);
    }
    ck_assert_int_eq(mkdir(from, 0777), 0);
    snprintf(p, sizeof p, "%s/l", dir);
    ck_assert_int_eq(symlink("/tmp", p), 0);
    ck_assert_int_eq(rl_fs_replace(dir, from, p, &err), RL_ERR_ARG);
    ck_assert_int_eq(unlink(p), 0);
    ck_assert_int_eq(rl_fs_remove(dir, from, &err), RL_OK);
    ck_assert_int_eq(rl_fs_remove(dir, to, &err), RL_OK);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* The one .npy range reader: elements [first, first + count) of float32 and
 * float16 files from the stream the header was read from, exactly; a range
 * past the shape is refused naming the file. */
START_TEST(npy_range_reads_from_the_one_stream)
{
    char path[] = "/tmp/rl_npy_rangeXXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    float v[10];
    uint16_t h[10];
    for (int i = 0; i < 10; i++) {
        v[i] = 0.5f * (float)i - 1.25f;
        h[i] = (uint16_t)(0x3c00 + i); /* 1 + i/1024 in binary16 */
    }
    rl_error err = {0};
    uint64_t shape[2] = {2, 5};
    for (int half = 0; half < 2; half++) {
        ck_assert_int_eq(rl_npy_save_raw(path, half ? "<f2" : "<f4", 0, shape, 2,
                                         half ? (const void *)h : (const void *)v,
                                         half ? sizeof h : sizeof v, &err), RL_OK);
        rl_npy hd;
        FILE *fp = NULL;
        ck_assert_int_eq(rl_npy_open(path, &hd, &fp, &err), RL_OK);
        float got[4] = {0};
        ck_assert_int_eq(rl_npy_read_f32(fp, path, &hd, 3, 4, got, &err), RL_OK);
        for (int i = 0; i < 4; i++)
            ck_assert_float_eq(got[i], half ? 1.0f + (float)(3 + i) / 1024.0f : v[3 + i]);
        ck_assert_int_eq(rl_npy_read_f32(fp, path, &hd, 8, 3, got, &err), RL_ERR_ARG);
        ck_assert_ptr_nonnull(strstr(err.msg, path));
        fclose(fp);
    }
    remove(path);
}
END_TEST

START_TEST(npy_header_is_exactly_numpys_dict)
{
    /* numpy's reader accepts exactly the keys descr, fortran_order, shape;
     * so does ropelab's (an extra or repeated key, or trailing text, is
     * refused naming the key). */
    const float v[6] = {1, 2, 3, 4, 5, 6};
    rl_error err = {0};
    ck_assert_int_eq(load_npy_text("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                   v, 6, &err), RL_OK);
    ck_assert_int_eq(load_npy_text("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), "
                                   "'extra': 1}", v, 6, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "header key 'extra' is not allowed"));
    ck_assert_int_eq(load_npy_text("{'descr': '<f4', 'descr': '<f2', 'fortran_order': False, "
                                   "'shape': (6,)}", v, 6, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "header key 'descr' is given twice"));
    ck_assert_int_eq(load_npy_text("{'descr': '<f4', 'shape': (6,)}", v, 6, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "no 'fortran_order'"));
    ck_assert_int_eq(load_npy_text("{'descr': '<f4', 'fortran_order': False, 'shape': (6,)} x",
                                   v, 6, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "text after the dict"));
}
END_TEST

START_TEST(non_finite_inputs_are_refused_at_load)
{
    /* A NaN or an infinity in a table or Q/K file is refused when read,
     * naming the file and the first bad element (not later as "a
     * verification exceeded its tolerance"). */
    float v[6] = {1, 2, 3, 4, 5, 6};
    v[4] = NAN;
    rl_error err = {0};
    ck_assert_int_eq(load_npy_text("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                   v, 6, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, ".npy: element [1, 1] (flat index 4) is NaN"));
    v[4] = 5;
    v[1] = -INFINITY;
    ck_assert_int_eq(load_npy_text("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }",
                                   v, 6, &err), RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "element [1] (flat index 1) is infinite"));
    /* safetensors: same rule, element index of the tensor */
    char path[64];
    write_safetensors(path, sizeof path, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2,3],"
                                         "\"data_offsets\":[0,24]}}", v, sizeof v);
    rl_safetensors st;
    ck_assert_msg(rl_safetensors_open(path, &st, &err) == RL_OK, "%s", err.msg);
    float out[6];
    ck_assert_int_eq(rl_safetensors_read_f32(&st, rl_safetensors_find(&st, "x"), 0, 6, out, &err),
                     RL_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err.msg, "tensor 'x': element 1 is infinite"));
    rl_safetensors_close(&st);
    unlink(path);
}
END_TEST

START_TEST(safetensors_shape_product_cannot_wrap)
{
    /* [2^40, 2^40, 2^40] multiplies to 2^120, which wraps a uint64 to 0 and
     * would match a span of 0 bytes: refused as too large. */
    char path[64];
    write_safetensors(path, sizeof path, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1099511627776,"
                                         "1099511627776,1099511627776],\"data_offsets\":[0,0]}}",
                      NULL, 0);
    rl_safetensors st;
    rl_error err = {0};
    ck_assert_int_eq(rl_safetensors_open(path, &st, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "tensor 'x': shape too large"));
    unlink(path);
}
END_TEST

START_TEST(safetensors_metadata_bf16_and_integers)
{
    /* BF16 0x3fc0 = 1.5, 0xc020 = -2.5 (the high halves of their float32s);
     * I32 -3 sign-extends; I64 2^40 + 1 keeps all bits; __metadata__
     * strings are found by key. */
    unsigned char data[] = {0xc0, 0x3f, 0x20, 0xc0,                 /* b: BF16 [2] */
                            0xfd, 0xff, 0xff, 0xff,                 /* i: I32 [1] */
                            0x01, 0, 0, 0, 0, 0x01, 0, 0};           /* l: I64 [1] */
    char path[64];
    write_safetensors(path, sizeof path,
                      "{\"__metadata__\":{\"model_id\":\"m/x\",\"tokens\":\"2\"},"
                      "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                      "\"i\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[4,8]},"
                      "\"l\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[8,16]}}",
                      data, sizeof data);
    rl_safetensors st;
    rl_error err = {0};
    ck_assert_msg(rl_safetensors_open(path, &st, &err) == RL_OK, "%s", err.msg);
    ck_assert_str_eq(rl_safetensors_meta(&st, "model_id"), "m/x");
    ck_assert_str_eq(rl_safetensors_meta(&st, "tokens"), "2");
    ck_assert_ptr_null(rl_safetensors_meta(&st, "heads"));
    float f[2];
    ck_assert_int_eq(rl_safetensors_read_f32(&st, rl_safetensors_find(&st, "b"), 0, 2, f, &err),
                     RL_OK);
    ck_assert(f[0] == 1.5f && f[1] == -2.5f);
    int64_t v;
    ck_assert_int_eq(rl_safetensors_read_i64(&st, rl_safetensors_find(&st, "i"), 0, 1, &v, &err),
                     RL_OK);
    ck_assert_int_eq(v, -3);
    ck_assert_int_eq(rl_safetensors_read_i64(&st, rl_safetensors_find(&st, "l"), 0, 1, &v, &err),
                     RL_OK);
    ck_assert_int_eq(v, ((int64_t)1 << 40) + 1);
    ck_assert_int_eq(rl_safetensors_read_i64(&st, rl_safetensors_find(&st, "l"), 1, 1, &v, &err),
                     RL_ERR_ARG);
    ck_assert_int_eq(rl_safetensors_read_i64(&st, rl_safetensors_find(&st, "b"), 0, 1, &v, &err),
                     RL_ERR_UNSUPPORTED);
    rl_safetensors_close(&st);
    /* the format's metadata maps strings to strings: a number is refused */
    write_safetensors(path, sizeof path, "{\"__metadata__\":{\"tokens\":2}}", NULL, 0);
    ck_assert_int_eq(rl_safetensors_open(path, &st, &err), RL_ERR_PARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "__metadata__ key 'tokens' is not a string"));
    unlink(path);
}
END_TEST

/* SHA-256 against the FIPS 180-2 appendix B / NIST CSRC example vectors,
 * and lengths around the padding boundaries (55, 56, 63, 64, 65, 119, 120
 * bytes of 'a': Python hashlib.sha256), one-shot and fed in odd pieces. */
static const struct {
    const char *msg;
    size_t repeat_a;             /* 0: msg; else that many 'a' */
    const char *hex;
} sha_vectors[] = {
    {"", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
    {"abc", 0, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
    {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 0,
     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmno"
     "pqrsmnopqrstnopqrstu", 0,
     "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    {NULL, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
    {NULL, 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
    {NULL, 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
    {NULL, 63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
    {NULL, 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
    {NULL, 65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
    {NULL, 119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
    {NULL, 120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
};

START_TEST(sha256_matches_the_standard_vectors)
{
    size_t n = sha_vectors[_i].repeat_a ? sha_vectors[_i].repeat_a : strlen(sha_vectors[_i].msg);
    char *m = malloc(n + 1);
    ck_assert_ptr_nonnull(m);
    if (sha_vectors[_i].repeat_a)
        memset(m, 'a', n);
    else
        memcpy(m, sha_vectors[_i].msg, n);
    char hex[65];
    rl_sha256_hex(m, n, hex);
    ck_assert_str_eq(hex, sha_vectors[_i].hex);
    /* the same in pieces of 1, 2, 3, ... bytes */
    rl_sha256_ctx c;
    rl_sha256_init(&c);
    for (size_t o = 0, k = 1; o < n; o += k, k = k % 97 + 1)
        rl_sha256_update(&c, m + o, o + k <= n ? k : n - o);
    uint8_t d[32];
    rl_sha256_final(&c, d);
    char hex2[65];
    for (int i = 0; i < 32; i++)
        snprintf(hex2 + 2 * i, 3, "%02x", d[i]);
    ck_assert_str_eq(hex2, sha_vectors[_i].hex);
    /* and read from a file */
    char path[] = "/tmp/rl_sha256_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, m, n), (ssize_t)n);
    close(fd);
    uint64_t size = 0;
    rl_error err = {0};
    ck_assert_int_eq(rl_sha256_file(path, hex, &size, &err), RL_OK);
    ck_assert_str_eq(hex, sha_vectors[_i].hex);
    ck_assert_uint_eq(size, n);
    unlink(path);
    ck_assert_int_eq(rl_sha256_file(path, hex, &size, &err), RL_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.msg, path));
    free(m);
}
END_TEST


/* One number rule for every number read from a command line or the
 * environment: decimal digits, no '+', hex, octal or leading zero; '-' only
 * where allowed. */
START_TEST(plot_words_round_trip_and_csv_fields_quote_what_they_must)
{
    /* every flag with a word is read back as itself, alone and all together;
     * RL_PLOT_LENGTH has none; unknown words are ignored */
    unsigned all = 0;
    for (unsigned bit = 0; bit < 16; bit++) {
        unsigned f = 1u << bit;
        char buf[256] = "";
        FILE *fp = fmemopen(buf, sizeof buf - 1, "w");
        ck_assert_ptr_nonnull(fp);
        rl_plot_words_write(fp, f);
        fclose(fp);
        if (f == RL_PLOT_LENGTH || f > RL_PLOT_CI) {
            ck_assert_str_eq(buf, "");
            continue;
        }
        ck_assert_msg(buf[0], "flag %#x has no word", f);
        ck_assert_uint_eq(rl_plot_words_parse(buf), f);
        all |= f;
    }
    char buf[256] = "";
    FILE *fp = fmemopen(buf, sizeof buf - 1, "w");
    rl_plot_words_write(fp, all);
    fclose(fp);
    ck_assert_uint_eq(rl_plot_words_parse(buf), all);
    ck_assert_uint_eq(rl_plot_words_parse("log-y  no-such-word log"), RL_PLOT_LOGY);
    /* the field writer quotes a comma, a quote and line breaks, nothing else */
    const char *in[] = {"plain", "a,b", "say \"x\"", "two\nlines", "cr\r"};
    const char *want[] = {"plain", "\"a,b\"", "\"say \"\"x\"\"\"", "\"two\nlines\"", "\"cr\r\""};
    for (int i = 0; i < 5; i++) {
        char out[64] = "";
        fp = fmemopen(out, sizeof out - 1, "w");
        rl_csv_field(fp, in[i]);
        fclose(fp);
        ck_assert_str_eq(out, want[i]);
    }
}
END_TEST

START_TEST(numbers_follow_one_rule)
{
    unsigned long long u;
    ck_assert_int_eq(rl_parse_u64("0", &u), 0);
    ck_assert_uint_eq(u, 0);
    ck_assert_int_eq(rl_parse_u64("18446744073709551615", &u), 0);
    ck_assert(u == 18446744073709551615ull);
    ck_assert_int_eq(rl_parse_u64("18446744073709551616", &u), -2);
    static const char *const bad_u[] = {"", "07", "+1", "-1", "0x10", " 1", "1 ", "1e3", "1.0"};
    for (size_t i = 0; i < sizeof bad_u / sizeof bad_u[0]; i++)
        ck_assert_msg(rl_parse_u64(bad_u[i], &u) == -1, "'%s' accepted", bad_u[i]);
    double x;
    ck_assert_int_eq(rl_parse_f64("0.5", 0, &x), 0);
    ck_assert(x == 0.5);
    ck_assert_int_eq(rl_parse_f64("2.5e-3", 0, &x), 0);
    ck_assert(x == 2.5e-3);
    ck_assert_int_eq(rl_parse_f64("-16", 1, &x), 0);
    ck_assert(x == -16);
    static const char *const bad_f[] = {"-16", "+4", "04", "0x1p3", "inf", "nan", ".", "1e",
                                        "1e+3", " 1", "1e999"};
    for (size_t i = 0; i < sizeof bad_f / sizeof bad_f[0]; i++)
        ck_assert_msg(rl_parse_f64(bad_f[i], 0, &x) == -1, "'%s' accepted", bad_f[i]);
    ck_assert_int_eq(rl_parse_f64("+4", 1, &x), -1); /* never '+' */
}
END_TEST

/* Control characters are shown as \xNN, never passed to a terminal. */
START_TEST(control_characters_are_shown_not_obeyed)
{
    char buf[64];
    ck_assert_str_eq(rl_clean("a\x1b[31mb\x7f\n", buf, sizeof buf), "a\\x1b[31mb\\x7f\\x0a");
    ck_assert_str_eq(rl_clean(NULL, buf, sizeof buf), "");
    char tiny[6];
    rl_clean("\x1b\x1b", tiny, sizeof tiny); /* truncated whole: never half an escape */
    ck_assert_str_eq(tiny, "\\x1b");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("core");
    /* rl_error: status, message, key */
    TCase *tc_errors = tcase_create("errors");
    tcase_add_test(tc_errors, fail_records_status_and_message);
    tcase_add_test(tc_errors, fail_key_carries_the_key_as_data);
    suite_add_tcase(s, tc_errors);
    /* RNG, ulp helpers, half -> float, Wilson intervals */
    TCase *tc_numeric = tcase_create("numeric");
    tcase_add_test(tc_numeric, rng_is_deterministic_and_stream_separated);
    tcase_add_test(tc_numeric, ulp_helpers_count_representable_floats);
    tcase_add_test(tc_numeric, half_to_float_is_exact_for_every_class);
    tcase_add_test(tc_numeric, wilson_interval_matches_published_values);
    suite_add_tcase(s, tc_numeric);
    /* atomic files, temporaries, replaced directories */
    TCase *tc_files = tcase_create("files");
    tcase_add_test(tc_files, atomic_file_appears_only_on_commit);
    tcase_add_test(tc_files, clean_tmp_unlinks_links_and_never_follows);
    tcase_add_test(tc_files, replace_puts_a_directory_in_place_of_another);
    suite_add_tcase(s, tc_files);
    /* .npy and .safetensors readers */
    TCase *tc_tensors = tcase_create("tensors");
    tcase_add_test(tc_tensors, npy_header_is_exactly_numpys_dict);
    tcase_add_test(tc_tensors, npy_range_reads_from_the_one_stream);
    tcase_add_test(tc_tensors, non_finite_inputs_are_refused_at_load);
    tcase_add_test(tc_tensors, safetensors_shape_product_cannot_wrap);
    tcase_add_test(tc_tensors, safetensors_metadata_bf16_and_integers);
    suite_add_tcase(s, tc_tensors);
    /* text in and out: numbers parsed, plot words, CSV fields, control characters */
    TCase *tc_text = tcase_create("text");
    tcase_add_test(tc_text, numbers_follow_one_rule);
    tcase_add_test(tc_text, plot_words_round_trip_and_csv_fields_quote_what_they_must);
    tcase_add_test(tc_text, control_characters_are_shown_not_obeyed);
    suite_add_tcase(s, tc_text);
    TCase *tc_sha256 = tcase_create("sha256");
    tcase_add_loop_test(tc_sha256, sha256_matches_the_standard_vectors, 0,
                        (int)(sizeof sha_vectors / sizeof sha_vectors[0]));
    suite_add_tcase(s, tc_sha256);
    return rl_test_run(s);
}
