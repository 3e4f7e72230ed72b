/* rope_type truncated: Giraffe's truncated basis.
 *
 * Pal et al. 2023, "Giraffe: Adventures in Expanding Context Lengths in
 * LLMs", arXiv:2308.10882, section 3.3 "Truncated basis": with
 * theta_j = base^(-2j/d), frequencies at or above b are kept, those between
 * a and b replaced by a small fixed rho, and those below a set to 0 (the
 * identity rotation: those pairs carry no position). The authors' code,
 * abacusai/Long-Context python/models/interpolate.py, which this file
 * follows where it and the paper's text differ:
 *   truncate_frequency(f, t, low, z):
 *       ft = where(f < t, low, f); ft = where(f < t / z, 0, ft)
 *   ScaledLlamaRotaryEmbedding.__init__: freq_2pi = theta_j, divided by
 *       scale when scale > 1, then with truncate = T (a wavelength in
 *       tokens) cutoff = 2 pi / T and
 *       truncate_frequency(freq_2pi, cutoff, 2 pi / (16 T), 8),
 * i.e. b = 2 pi / T, a = b / 8, rho = b / 16 (those are the defaults of
 * truncate_a and truncate_rho here; truncate_b has none: the code applies
 * no truncation without T), compared against the frequency after the
 * linear scale (factor here, default 1). At theta_j == a the code keeps
 * rho (f < a is false), which is what this file does. The code's
 * scale_power and randomize options are not part of the basis and are not
 * modelled. */
#include <math.h>

#include "pe/rope_scaling.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

enum { SLOT_A = 0, SLOT_B = 1, SLOT_RHO = 2 }; /* rope_desc.scaling_param slots */

/* The limit of every truncated key: 2 pi, the angular frequency of a
 * one-token wavelength (every theta_j <= 1 is below it). */
#define FREQ_MAX (2.0 * M_PI)

static const rope_scaling_key own_keys[] = {
    {{"truncate_a", RL_P_NUM, "null", 0, FREQ_MAX, NULL,
      "truncated: frequencies below it are set to 0, > 0, < truncate_b (default truncate_b/8, "
      "the authors' code)"},
     SLOT_A},
    {{"truncate_b", RL_P_NUM, "null", 0, FREQ_MAX, NULL,
      "truncated: frequencies at or above it are kept, > 0; 2pi/T for a cutoff wavelength of T "
      "tokens (default none: required by truncated)"},
     SLOT_B},
    {{"truncate_rho", RL_P_NUM, "null", 0, FREQ_MAX, NULL,
      "truncated: the frequency of pairs in [truncate_a, truncate_b), > 0 (default "
      "truncate_b/16, the authors' code)"},
     SLOT_RHO},
};

static rl_status resolve(rope_desc *r, rl_error *err)
{
    for (size_t k = 0; k < sizeof own_keys / sizeof own_keys[0]; k++) {
        double v = r->scaling_param[own_keys[k].slot];
        if (!isfinite(v) || v < 0)
            return rl_fail_key(err, RL_ERR_ARG, own_keys[k].param.key,
                               "%s %g must be a finite number >= 0",
                               own_keys[k].param.key, v);
    }
    double *p = r->scaling_param;
    if (p[SLOT_B] == 0)
        return rl_fail_key(err, RL_ERR_ARG, "truncate_b",
                           "truncated needs truncate_b (a frequency > 0: 2pi/T for "
                           "a cutoff wavelength of T tokens)");
    if (p[SLOT_A] == 0)
        p[SLOT_A] = p[SLOT_B] / 8; /* the authors' code: t / z, z = 8 */
    if (p[SLOT_RHO] == 0)
        p[SLOT_RHO] = p[SLOT_B] / 16; /* the authors' code: 2 pi / (16 T) */
    if (!(p[SLOT_A] < p[SLOT_B]))
        return rl_fail_key(err, RL_ERR_ARG, "truncate_a",
                           "truncate_a %g must be < truncate_b %g", p[SLOT_A],
                           p[SLOT_B]);
    return RL_OK;
}

static void freqs(const rope_desc *r, uint64_t n, uint32_t np, double *inv, double *theta,
                  double *af)
{
    (void)n, (void)af;
    const double factor = r->factor ? r->factor : 1.0;
    const double a = r->scaling_param[SLOT_A], b = r->scaling_param[SLOT_B],
                 rho = r->scaling_param[SLOT_RHO];
    *theta = r->theta;
    rope_scaling_base_freqs(r->theta, r->rotary_dim, np, inv);
    for (uint32_t j = 0; j < np; j++) {
        double t = factor > 1 ? inv[j] / factor : inv[j]; /* the code: if scale > 1 */
        inv[j] = t < a ? 0.0 : t < b ? rho : t;
    }
}

/* Check and example settings: no linear scale; a cutoff wavelength of 512
 * tokens, b = 2 pi / 512 (rotary 64, base 10000: pairs 0..15 kept, 16..22
 * at rho = b/16, 23..31 zero). */
static void example(rope_desc *d)
{
    d->factor = 0;
    d->scaling_param[SLOT_B] = 2.0 * M_PI / 512.0;
}

static const char *const keys[] = {"factor", "truncate_a", "truncate_b", "truncate_rho", NULL};
static const char *const required[] = {"truncate_b", NULL};

const rope_scaling rope_scaling_truncated = {
    .name = "truncated",
    .summary = "Giraffe's truncated basis: theta_j/factor kept at or above b, rho in [a, b), 0 "
               "below a",
    .source = "Pal et al. 2023, Giraffe, arXiv:2308.10882, section 3.3; abacusai/Long-Context "
              "python/models/interpolate.py truncate_frequency / ScaledLlamaRotaryEmbedding",
    .keys = keys,
    .required = required,
    .own_keys = own_keys,
    .n_own_keys = sizeof own_keys / sizeof own_keys[0],
    .resolve = resolve,
    .freqs = freqs,
    .example = example,
};
