/* rl_check.h — Check (libcheck) for ropelab's suites, with passing
 * assertions that cost nothing. Every suite includes this instead of
 * <check.h> (directly or through rl_test.h).
 *
 * Check's ck_assert_msg — and through it every ck_assert_* macro — calls
 * _mark_point() when an assertion holds, which writes the file and line to
 * Check's message pipe: one stdio write per passing assertion, flushed, so
 * a system call every ~10 of them. Suites that assert inside their loops
 * (every pair of a mask, every element of a tensor) spent most of their time
 * there: test_attn_ref's mask test made 7 million passing assertions,
 * 709481 write(2) calls, 17.6 s of its 18 s in the release build and 40 s
 * under AddressSanitizer.
 *
 * Here an assertion that holds does nothing, and one that fails fails
 * exactly as Check's own does (_ck_assert_failed: the same message, file,
 * line and longjmp). What is given up: the "last passing assertion" Check
 * names when a test dies without failing one (a signal in fork mode, a
 * timeout); such a report names the test's START_TEST line instead. The
 * suites run with CK_FORK=no, where a crash ends the process before Check
 * reports anything, and the sanitizers print the stack. mark_point() still
 * marks a place by hand. */
#ifndef RL_CHECK_H
#define RL_CHECK_H

#include <check.h>

#undef ck_assert_msg
#define ck_assert_msg(expr, ...)                                                                   \
    ((expr) ? (void)0                                                                              \
            : _ck_assert_failed(__FILE__, __LINE__, "Assertion '" #expr "' failed", ##__VA_ARGS__))

#endif
