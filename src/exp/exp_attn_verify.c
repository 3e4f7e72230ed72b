/* exp_attn_verify.c — per-statistic verification records of an attention
 * run (exp_attn_run) for the attention kinds (entropy, retrieval,
 * distortion).
 *
 * Each statistic the engine verified on its sampled rows is recorded with its
 * own worst error and its own tolerance from chk_attn_tolerances
 * (src/check/chk_attn.c). Those tolerances are worst-case fp32 sums derived
 * from the sampled rows' own numbers (u = 2^-24):
 *   logit  E_s = (D + 2) u A + 3 u B     (D-term dot product in one fp32 chain
 *               per key, then the scale; A = |scale| sum |q_d k_d|,
 *               B = max |bias|),
 *   exp    rho = (3 + 2R) 2^-23          (Vulkan's exp bound over the range R),
 *   sum    eps = 2 E_s + rho + N u + 3 (N/4 + 1) 2^-23 + 2^-21
 *               (N fp32 additions over the N keys of a row, one rescale per
 *               key block, log's absolute 2^-21),
 *   entropy (R + 2) eps + 2 E_s; probabilities (argmax, target) relative
 *   E_s + tol_lse + rho + 2^-22; bucket masses that + N u; KL (2R + 4) eps +
 *   4 E_s; argmax: the picked key's true logit within 2 E_s of the maximum.
 * A statistic beyond its tolerance marks the run's verification failed. */
#include <stdio.h>

#include "check/chk.h"
#include "exp/exp.h"

int exp_attn_record_stats(exp_sink *sink, const char *label, const exp_attn_result *r)
{
    char what[192], detail[160];
    const chk_stats *v[4] = {&r->vec_q, &r->vec_k, &r->vec_qb, &r->vec_kb};
    static const char *const names[4] = {"q", "k", "q (paired)", "k (paired)"};
    int pass = 1;
    for (int i = 0; i < 4; i++) {
        if (v[i]->n == 0)
            continue;
        snprintf(what, sizeof what, "%s: transformed %s, device vs double reference", label,
                 names[i]);
        /* Bounds are per element: record the element with the worst
         * error/bound (its error and its bound); the largest absolute error
         * anywhere goes in the detail. */
        snprintf(detail, sizeof detail,
                 "element with the worst error/bound vs its own bound (pe_vec_bound); "
                 "max abs error over the %zu elements of the sampled rows %.3g", v[i]->n, v[i]->max_abs);
        exp_sink_verify(sink, what, v[i]->err_at_worst,
                        v[i]->bound_at_worst, v[i]->pass, detail);
        pass = pass && v[i]->pass;
    }
    double tol[ATTN_V_COUNT];
    const attn_verify *av = &r->attn.verify;
    chk_attn_tolerances(&r->desc, av, tol);
    for (int k = 0; k < ATTN_V_COUNT; k++) {
        if (!av->checked[k])
            continue;
        int rel = k == ATTN_V_ARGMAX_P || k == ATTN_V_TARGET_P || k == ATTN_V_OUT ||
                  k == ATTN_V_DUMP;
        double e = rel ? av->max_rel[k] : av->max_abs[k];
        int ok = e <= tol[k] && av->n_nonfinite == 0;
        snprintf(what, sizeof what, "%s: %s of %u sampled rows vs double reference", label,
                 attn_stat_name(k), av->rows);
        snprintf(detail, sizeof detail,
                 "%s error; fp32 tolerance over %llu keys (chk_attn_tolerances)%s",
                 rel ? "relative" : "absolute", (unsigned long long)av->max_keys,
                 av->n_nonfinite ? "; non-finite values" : "");
        exp_sink_verify(sink, what, e, tol[k], ok, detail);
        pass = pass && ok;
    }
    return pass && r->pass;
}
