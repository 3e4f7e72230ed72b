/* libFuzzer harness for the Hugging Face config.json import (hfm_load,
 * src/pe/hf_model.c, the one reader): every layer type it accepts is
 * selected and described. */
#include "fuzz_file.h"
#include "pe/hf_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    hfm_model m;
    rl_error err = {0};
    if (hfm_load(fuzz_file(data, size, ".json"), &m, &err) == RL_OK) {
        for (uint32_t i = 0; i < m.n_types; i++) {
            const hfm_layer_type *t;
            (void)hfm_select(&m, m.types[i].name, &t, NULL, &err);
        }
        json_decref(hfm_to_json(&m));
    }
    hfm_free(&m);
    return 0;
}
