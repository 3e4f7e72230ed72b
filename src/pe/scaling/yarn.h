/* yarn.h — internal to src/pe/scaling/: YaRN's blend, shared by yarn.c and
 * dynamic_yarn.c (prefix rope_yarn_). */
#ifndef ROPE_SCALING_YARN_H
#define ROPE_SCALING_YARN_H

#include "pe/rope_scaling.h"

/* YaRN's blend at scale s (HF _compute_yarn_parameters; jquesnelle/yarn's
 * yarn()): the ramp from the correction range of beta_fast/beta_slow at
 * L_orig (independent of s), inv [np] (the unscaled theta_j of base on
 * entry) blended between theta_j and theta_j / s, and the attention factor
 * of s into *af. */
void rope_yarn_blend(const rope_desc *r, double base, double s, uint32_t np, double *inv,
                     double *af);
/* The rule both share: beta_fast (default 32) >= beta_slow (default 1). */
rl_status rope_yarn_check_betas(const rope_desc *r, rl_error *err);

#endif
