/* libFuzzer harness for the .safetensors reader (src/core/rl_safetensors.c):
 * header JSON, shapes and offsets, __metadata__, and reading every tensor it
 * accepts (floats as float32, integers as int64). */
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
    for (size_t i = 0; i < st.n_meta; i++)
        if (rl_safetensors_meta(&st, st.meta[i].key) == NULL)
            abort(); /* every listed key is found */
    for (size_t i = 0; i < st.n; i++) {
        const rl_st_tensor *t = &st.tensors[i];
        int integer = t->dtype[0] == 'I';
        uint64_t es = integer ? (t->dtype[1] == '6' ? 8 : 4) : t->dtype[1] == '3' ? 4 : 2;
        uint64_t n = (t->end - t->begin) / es;
        if (n > 4096)
            n = 4096;
        if (integer) {
            int64_t *iv = malloc((n ? n : 1) * sizeof *iv);
            if (iv)
                (void)rl_safetensors_read_i64(&st, t, 0, n, iv, &err);
            free(iv);
            continue;
        }
        float *out = malloc((n ? n : 1) * sizeof *out);
        if (out)
            (void)rl_safetensors_read_f32(&st, t, 0, n, out, &err);
        free(out);
    }
    rl_safetensors_close(&st);
    return 0;
}
