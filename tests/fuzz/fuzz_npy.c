/* libFuzzer harness for the .npy reader (src/core/rl_npy.c): header dict
 * parsing, shapes, dtypes, truncation, non-finite refusal. */
#include "core/rl_npy.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    rl_npy a;
    rl_error err = {0};
    if (rl_npy_load(fuzz_file(data, size, ".npy"), &a, &err) == RL_OK)
        rl_npy_free(&a);
    return 0;
}
