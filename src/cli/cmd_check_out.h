/* cmd_check_out.h — `ropelab check`'s machine-readable outputs (prefix
 * cli_check_): JUnit XML for CI dashboards and TAP 13 for test harnesses.
 * Both read finished reports (check/chk.h); neither runs anything. */
#ifndef CMD_CHECK_OUT_H
#define CMD_CHECK_OUT_H

#include <stddef.h>
#include <stdio.h>

#include "check/chk.h"

/* The kernel family of a row name: the text before the first '/' or '_'
 * ("rope/half/fp32" -> "rope", "attn_t5_f16" -> "attn"), into buf. */
void cli_check_family(const char *kernel, char *buf, size_t cap);

/* 1 if the row counts as a failure (not skipped, not listed, verdict false). */
int cli_check_row_failed(const chk_row *r);

/* Why a failed row failed, in words, with its numbers: which rule broke
 * (guard, elements over bound with the first index, reference NaN, NMSE over
 * its gate), the worst error and its bound, NMSE and gate. "" for a passing
 * row. */
void cli_check_failure_text(const chk_row *r, char *buf, size_t cap);

/* Writes reps[0..n) as TAP version 13 to out: the plan, then one test point
 * per row ("ok N - kernel shape", "# SKIP" for unsupported rows, "not ok"
 * with a YAML diagnostic block for failures) and one "not ok" per device
 * that reported an error or validation messages. */
void cli_check_tap(FILE *out, const chk_report *reps, size_t n);

/* Writes reps[0..n) as JUnit XML to path atomically (temporary file, then
 * rename): one <testsuite> per device, one <testcase> per row (classname
 * = kernel family), <failure> with the failure text, <skipped/> for
 * unsupported rows, an <error> testcase for a device error or validation
 * messages. Every string is XML-escaped. */
rl_status cli_check_junit(const char *path, const chk_report *reps, size_t n, rl_error *err);

#endif
