/* nope — no position information (Kazemnejad et al. 2023 study decoder-only
 * models without any encoding; causal masking alone leaks order). Identity
 * vector transform (pe_add.comp mode 0, checked bit-exact), no bias. */
#include "pe/pe.h"

const pe_family pe_family_nope = {
    .name = "nope",
    .title = "no position encoding",
    .paper = "Kazemnejad et al. 2023, The Impact of Positional Encoding on Length "
             "Generalization in Transformers, arXiv:2305.19466",
    .acts = 0,
    .bias_variant = "none",
    .params = NULL,
    .n_params = 0,
    .formula = "q' = q, k' = k, bias = 0",
    .ops = {0},
};
