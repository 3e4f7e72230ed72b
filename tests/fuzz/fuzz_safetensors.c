/* libFuzzer harness for the .safetensors reader (src/core/rl_safetensors.c):
 * header JSON, shapes and offsets, and reading every tensor it accepts. */
#include "core/rl_safetensors.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    rl_safetensors st;
    rl_error err = {0};
    if (rl_safetensors_open(fuzz_file(data, size, ".safetensors"), &st, &err) != RL_OK)
        return 0;
    for (size_t i = 0; i < st.n; i++) {
        const rl_st_tensor *t = &st.tensors[i];
        uint64_t es = t->dtype[1] == '1' ? 2 : 4, n = (t->end - t->begin) / es;
        if (n > 4096)
            n = 4096;
        float *out = malloc((n ? n : 1) * sizeof *out);
        if (out)
            (void)rl_safetensors_read_f32(&st, t, 0, n, out, &err);
        free(out);
    }
    rl_safetensors_close(&st);
    return 0;
}
