/* libFuzzer harness for the Hugging Face config.json import of RoPE
 * settings (rope_desc_from_hf_config, src/pe/rope_hf.c), then the
 * frequencies of whatever it accepts. */
#include "fuzz_file.h"
#include "pe/rope.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    rope_desc d;
    rl_error err = {0};
    if (rope_desc_from_hf_config(&d, fuzz_file(data, size, ".json"), &err) != RL_OK)
        return 0;
    rope_freqs f;
    (void)rope_freqs_compute(&d, &f, &err);
    return 0;
}
