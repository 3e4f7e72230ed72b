/* `ropelab check`'s CI outputs (src/cli/cmd_check_out.c) on hand-made
 * reports — a passing, a failing and a skipped row, names full of XML
 * metacharacters, a device with validation messages — and the device
 * identity helpers (vulkaninfo's driver version decoding, driverID names,
 * UUID hex). Expected text follows from the JUnit/TAP formats and the
 * vendors' bit layouts, not from the code. No device needed. */
#include "rl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd_check_out.h"
#include "rl_test.h"
#include "vk/rlvk.h"

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* rows: pass, fail (3 over bound, first at 5), skipped; 1 validation message. */
static void make_report(chk_report *rep)
{
    memset(rep, 0, sizeof *rep);
    snprintf(rep->device, sizeof rep->device, "gpu <&> \"x\"");
    snprintf(rep->driver, sizeof rep->driver, "drv 'q'");
    rep->validation_messages = 1;
    rl_error err = {0};
    chk_row r = {0};
    r.guard_ok = 1;
    r.stats.pass = r.stats.nmse_ok = 1;
    r.stats.n = 10;
    r.stats.first_bad = VF_NONE;
    snprintf(r.kernel, sizeof r.kernel, "rope/half/fp32");
    snprintf(r.shape, sizeof r.shape, "T=1");
    ck_assert_int_eq(chk_report_add(rep, &r, &err), RL_OK);
    snprintf(r.kernel, sizeof r.kernel, "attn_<t5>&\"'");
    snprintf(r.shape, sizeof r.shape, "T=2 \x01 ctl");
    snprintf(r.tolerance, sizeof r.tolerance, "a < b & c");
    r.stats.pass = 0;
    r.stats.n_over = 3;
    r.stats.first_bad = 5;
    r.stats.bound_at_worst = 0.25;
    ck_assert_int_eq(chk_report_add(rep, &r, &err), RL_OK);
    snprintf(r.kernel, sizeof r.kernel, "pe/learned#1\n");
    r.skipped = 1;
    ck_assert_int_eq(chk_report_add(rep, &r, &err), RL_OK);
}

START_TEST(family_is_the_name_before_slash_or_underscore)
{
    char f[32];
    cli_check_family("rope/half/fp32", f, sizeof f);
    ck_assert_str_eq(f, "rope");
    cli_check_family("attn_t5_f16", f, sizeof f);
    ck_assert_str_eq(f, "attn");
    cli_check_family("plain", f, sizeof f);
    ck_assert_str_eq(f, "plain");
}
END_TEST

START_TEST(junit_counts_escapes_and_leaves_no_temporary)
{
    chk_report rep;
    make_report(&rep);
    char dir[] = "/tmp/rl_junit_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/out.xml", dir);
    rl_error err = {0};
    ck_assert_int_eq(cli_check_junit(path, &rep, 1, &err), RL_OK);
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    static char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    /* 3 rows + the device's validation error */
    ck_assert(strstr(buf, "<testsuites name=\"ropelab check\" tests=\"4\" failures=\"1\" "
                          "errors=\"1\" skipped=\"1\">"));
    ck_assert_uint_eq(count(buf, "<testcase "), 4);
    ck_assert_uint_eq(count(buf, "<skipped "), 1);
    ck_assert_uint_eq(count(buf, "<failure "), 1);
    ck_assert_uint_eq(count(buf, "<error "), 1);
    ck_assert(strstr(buf, "classname=\"attn\" name=\"attn_&lt;t5&gt;&amp;&quot;&apos; T=2 ? ctl\""));
    ck_assert(strstr(buf, "type=\"bound\""));
    ck_assert(strstr(buf, "first at index 5"));
    ck_assert(strstr(buf, "bound: a &lt; b &amp; c"));
    ck_assert(strstr(buf, "name=\"device 0: gpu &lt;&amp;&gt; &quot;x&quot;\""));
    ck_assert_ptr_null(strchr(buf, '\x01'));
    ck_assert_ptr_null(strstr(buf, "<t5>"));
    ck_assert_int_eq(remove(path), 0);
    ck_assert_int_eq(rmdir(dir), 0); /* empty: no temporary left behind */
    /* an unwritable path is an error, not a crash */
    ck_assert_int_ne(cli_check_junit("/nonexistent/dir/x.xml", &rep, 1, &err), RL_OK);
    chk_report_free(&rep);
}
END_TEST

START_TEST(tap_plan_points_skip_and_yaml_block)
{
    chk_report rep;
    make_report(&rep);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(out);
    cli_check_tap(out, &rep, 1);
    fclose(out);
    ck_assert(strncmp(buf, "TAP version 13\n1..4\n", 20) == 0);
    ck_assert(strstr(buf, "\nok 1 - rope/half/fp32 T=1\n"));
    ck_assert(strstr(buf, "\nnot ok 2 - attn_<t5>"));
    ck_assert(strstr(buf, "\n  ---\n    message: \""));
    ck_assert(strstr(buf, "first at index 5"));
    ck_assert(strstr(buf, "    bound_at_worst: 0.25\n"));
    ck_assert(strstr(buf, "\nok 3 - pe/learned\\#1  T=2 \x01 ctl # SKIP unsupported on this device\n"));
    ck_assert(strstr(buf, "\nnot ok 4 - device 0 run\n"));
    ck_assert_uint_eq(count(buf, "\n  ...\n"), 2);
    free(buf);
    chk_report_free(&rep);
}
END_TEST

START_TEST(driver_version_decoded_as_vulkaninfo)
{
    char b[32];
    /* NVIDIA 535.104.5.0: 10.8.8.6 bits */
    rlvk_driver_version_str(0x10de, (535u << 22) | (104u << 14) | (5u << 6) | 0u, b, sizeof b);
    ck_assert_str_eq(b, "535.104.5.0");
    /* everyone else (Mesa, AMD, and Intel off Windows): VK_API_VERSION */
    rlvk_driver_version_str(0x1002, VK_MAKE_API_VERSION(0, 2, 0, 279), b, sizeof b);
    ck_assert_str_eq(b, "2.0.279");
    rlvk_driver_version_str(0x8086, VK_MAKE_API_VERSION(0, 23, 1, 2), b, sizeof b);
#ifdef _WIN32
    ck_assert_str_eq(b, "5888.4098"); /* 18.14 bits */
#else
    ck_assert_str_eq(b, "23.1.2");
#endif
    ck_assert_str_eq(rlvk_driver_id_name(13), "MESA_LLVMPIPE");
    ck_assert_str_eq(rlvk_driver_id_name(4), "NVIDIA_PROPRIETARY");
    ck_assert_str_eq(rlvk_driver_id_name(0), "UNKNOWN");
    ck_assert_str_eq(rlvk_driver_id_name(100000), "UNKNOWN");
    const uint8_t u[16] = {0x00, 0x01, 0xab, 0xff, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7e};
    char hex[33];
    rlvk_uuid_hex(u, hex);
    ck_assert_str_eq(hex, "0001abff10000000000000000000007e");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_out");
    /* check's CI outputs: JUnit, TAP, and the family that groups their rows */
    TCase *tc_ci = tcase_create("ci");
    tcase_add_test(tc_ci, family_is_the_name_before_slash_or_underscore);
    tcase_add_test(tc_ci, junit_counts_escapes_and_leaves_no_temporary);
    tcase_add_test(tc_ci, tap_plan_points_skip_and_yaml_block);
    suite_add_tcase(s, tc_ci);
    /* device identity helpers: driver version, driverID name, UUID hex */
    TCase *tc_device = tcase_create("device");
    tcase_add_test(tc_device, driver_version_decoded_as_vulkaninfo);
    suite_add_tcase(s, tc_device);
    return rl_test_run(s);
}
