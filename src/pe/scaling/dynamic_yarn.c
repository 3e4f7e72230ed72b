/* rope_type dynamic_yarn: YaRN at the scale of the length in use. */
#include "pe/scaling/yarn.h"

/* dynamic_yarn's scale at length n: max(factor, n / L_orig). */
static double scale_at(const rope_desc *r, uint64_t n)
{
    double floor_s = r->factor ? r->factor : 1.0;
    double s = (double)n / (double)r->original_max_position_embeddings;
    return s > floor_s ? s : floor_s;
}

static rl_status resolve(rope_desc *r, rl_error *err)
{
    /* s = max(factor, N / L_orig); factor (default 1) is the floor, the
     * fine-tuned scale of jquesnelle/yarn's `finetuned` (M / L_orig). */
    if (r->original_max_position_embeddings == 0)
        r->original_max_position_embeddings = r->max_position_embeddings;
    if (r->original_max_position_embeddings == 0)
        return rl_fail_key(err, RL_ERR_ARG, "original_max_position_embeddings",
                           "dynamic_yarn needs original_max_position_embeddings "
                           "(or max_position_embeddings)");
    return rope_yarn_check_betas(r, err);
}

static void freqs(const rope_desc *r, uint64_t n, uint32_t np, double *inv, double *theta,
                  double *af)
{
    *theta = r->theta;
    rope_scaling_base_freqs(r->theta, r->rotary_dim, np, inv);
    rope_yarn_blend(r, r->theta, scale_at(r, n), np, inv, af);
}

static const char *const aliases[] = {"dynamic-yarn", NULL}; /* jquesnelle/yarn's configs */
static const char *const keys[] = {"factor", "original_max_position_embeddings", "beta_fast",
                                   "beta_slow", "mscale", "mscale_all_dim", "truncate",
                                   "attention_factor", NULL};
static const char *const required[] = {"original_max_position_embeddings", NULL};

const rope_scaling rope_scaling_dynamic_yarn = {
    .name = "dynamic_yarn",
    .aliases = aliases,
    .summary = "YaRN with scale s = max(factor, N / L_orig) of the length N in use",
    .source = "Peng et al. 2023, YaRN, arXiv:2309.00071; jquesnelle/yarn "
              "LlamaDynamicYaRNScaledRotaryEmbedding (type \"dynamic-yarn\")",
    .keys = keys,
    .required = required,
    .length_dependent = 1,
    .resolve = resolve,
    .freqs = freqs,
    .factor_at = scale_at,
};
