/* rl_test.h — shared helpers for ropelab's Check suites.
 *
 * GPU suites create their Vulkan instance and device inside each test (never
 * before Check forks) and run with CK_FORK=no (set by meson). The validation
 * layer is required and any message it reports fails the test. A machine with
 * no Vulkan device at all makes the suite exit 77, which meson reports as
 * SKIP, and says so on stderr. */
#ifndef RL_TEST_H
#define RL_TEST_H

#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "vk/rlvk.h"

#define RL_TEST_SKIP 77

/* Keeps lavapipe mapped until exit so LeakSanitizer can symbolize (and not
 * misreport) allocations made by the driver: see conventions.md #13. */
static inline void rl_test_pin_driver(void)
{
    (void)dlopen("libvulkan_lvp.so", RTLD_NOW | RTLD_NODELETE);
}

/* Exits 77 (skip) if no Vulkan loader or device exists at all. */
static inline void rl_test_require_vulkan(const char *suite)
{
    rlvk_instance inst;
    rl_error err = {0};
    rlvk_instance_desc d = {0};
    if (rlvk_instance_create(&d, &inst, &err) != RL_OK) {
        fprintf(stderr, "%s: SKIP: no Vulkan device: %s\n", suite, err.msg);
        exit(RL_TEST_SKIP);
    }
    rlvk_instance_destroy(&inst);
}

/* A GPU fixture: validation required, first device ("auto"). */
typedef struct rl_gpu {
    rlvk_instance inst;
    rlvk_device dev;
} rl_gpu;

static inline void rl_gpu_open(rl_gpu *g)
{
    rl_error err = {0};
    rlvk_instance_desc d = {.validation = 1, .require_validation = 1, .quiet_messages = 0};
    ck_assert_msg(rlvk_instance_create(&d, &g->inst, &err) == RL_OK, "instance: %s", err.msg);
    ck_assert(g->inst.validation);
    uint32_t idx[16], n = 0;
    ck_assert_msg(rlvk_select(&g->inst, "auto", idx, &n, &err) == RL_OK, "%s", err.msg);
    ck_assert_msg(rlvk_device_create(&g->inst, idx[0], &g->dev, &err) == RL_OK, "device: %s", err.msg);
}

/* Destroys the fixture and fails the test if validation reported anything. */
static inline void rl_gpu_close(rl_gpu *g)
{
    rlvk_device_destroy(&g->dev);
    rlvk_instance_destroy(&g->inst);
    unsigned n = rlvk_instance_messages(&g->inst);
    ck_assert_msg(n == 0, "validation layer reported %u message(s); first: %s", n,
                  g->inst.first_message);
}

/* Runs a suite; returns the process exit code. */
static inline int rl_test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
