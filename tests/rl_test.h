/* rl_test.h — shared helpers for ropelab's Check suites.
 *
 * GPU suites create their Vulkan instance and device inside each test (never
 * before Check forks), or with RL_TEST_SHARED_GPU once for the suite, lent
 * to each test (rl_gpu_open below), and run with CK_FORK=no (set by meson).
 * The validation layer is required and any message it reports fails the
 * test (with a shared device, a message at its destruction — an object a
 * test left behind — fails the suite). A machine with
 * no Vulkan device at all makes the suite exit 77, which meson reports as
 * SKIP, and says so on stderr. */
#ifndef RL_TEST_H
#define RL_TEST_H

#include "rl_check.h"
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

static inline void rl_gpu_create_(rl_gpu *g)
{
    rl_error err = {0};
    rlvk_instance_desc d = {.validation = 1, .require_validation = 1, .quiet_messages = 0};
    ck_assert_msg(rlvk_instance_create(&d, &g->inst, &err) == RL_OK, "instance: %s", err.msg);
    ck_assert(g->inst.validation);
    uint32_t idx[16], n = 0;
    ck_assert_msg(rlvk_select(&g->inst, "auto", idx, &n, &err) == RL_OK, "%s", err.msg);
    ck_assert_msg(rlvk_device_create(&g->inst, idx[0], &g->dev, &err) == RL_OK, "device: %s", err.msg);
}

#ifndef RL_TEST_SHARED_GPU
static inline void rl_gpu_open(rl_gpu *g) { rl_gpu_create_(g); }

/* Destroys the fixture and fails the test if validation reported anything. */
static inline void rl_gpu_close(rl_gpu *g)
{
    rlvk_device_destroy(&g->dev);
    rlvk_instance_destroy(&g->inst);
    unsigned n = rlvk_instance_messages(&g->inst);
    ck_assert_msg(n == 0, "validation layer reported %u message(s); first: %s", n,
                  g->inst.first_message);
}
#else
/* A suite that defines RL_TEST_SHARED_GPU before including this header
 * opens one instance and device for all its tests (one process: CK_FORK=no)
 * instead of one per test: a pipeline the previous test compiled is found
 * in the device's pipeline table instead of being built again from SPIR-V,
 * and the validation layer loads once. Each test gets the device by value
 * and hands it back at rl_gpu_close (its counters run on: tests compare
 * differences); a validation message during the test fails that test. The
 * device is destroyed at exit, where the layer reports any object a test
 * left behind: that fails the suite (exit 1, the message on stderr). */
static rl_gpu rl_gpu_shared_;
static int rl_gpu_shared_state_; /* 0 none, 1 open, 2 lent to a test */
static unsigned rl_gpu_shared_msgs_;

static void rl_gpu_shared_end_(void)
{
    if (!rl_gpu_shared_state_)
        return;
    rlvk_device_destroy(&rl_gpu_shared_.dev);
    rlvk_instance_destroy(&rl_gpu_shared_.inst);
    unsigned n = rlvk_instance_messages(&rl_gpu_shared_.inst);
    if (n > rl_gpu_shared_msgs_) {
        fprintf(stderr, "FAIL: validation layer reported %u message(s) when the suite's device "
                        "was destroyed (an object a test left behind?); first: %s\n",
                n - rl_gpu_shared_msgs_, rl_gpu_shared_.inst.first_message);
        fflush(stderr);
        _Exit(1);
    }
}

static inline void rl_gpu_open(rl_gpu *g)
{
    if (!rl_gpu_shared_state_) {
        rl_gpu_create_(&rl_gpu_shared_);
        rl_gpu_shared_state_ = 1;
        atexit(rl_gpu_shared_end_);
    }
    /* a test that failed while it held the device left it lent: take it
     * back as it was (its counters may lag; the device itself is fine) */
    rl_gpu_shared_state_ = 2;
    rl_gpu_shared_msgs_ = rlvk_instance_messages(&rl_gpu_shared_.inst);
    *g = rl_gpu_shared_;
}

static inline void rl_gpu_close(rl_gpu *g)
{
    rl_gpu_shared_.dev = g->dev; /* its inst pointer is &rl_gpu_shared_.inst */
    rl_gpu_shared_state_ = 1;
    unsigned n = rlvk_instance_messages(&rl_gpu_shared_.inst) - rl_gpu_shared_msgs_;
    rl_gpu_shared_msgs_ += n;
    ck_assert_msg(n == 0, "validation layer reported %u message(s); first: %s", n,
                  rl_gpu_shared_.inst.first_message);
}
#endif

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
