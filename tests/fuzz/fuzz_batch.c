/* libFuzzer harness for the batch loader: YAML parsing, validation with
 * every diagnostic, sweep expansion, run ids. Built only with clang when
 * meson option `fuzz` is on; run by scripts/fuzz.sh with a corpus from
 * experiments/ and configs/. Any crash, leak or sanitizer report fails. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "run/run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    run_batch b;
    run_diag d;
    rl_error err = {0};
    /* a base dir that holds no data files: file sources fail cleanly */
    if (run_batch_parse("fuzz.yaml", (const char *)data, size, "/nonexistent", &b, &d, &err) ==
        RL_OK) {
        FILE *null = fopen("/dev/null", "w");
        if (null) {
            rl_error perr = {0};
            (void)run_plan_print(&b, 0, 1, null, &perr);
            fclose(null);
        }
        run_batch_free(&b);
    }
    run_diag_free(&d);
    return 0;
}
