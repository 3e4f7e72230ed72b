/* exp_attn_verify.c — per-statistic verification records of an attention
 * run (exp_attn_run) for the attention kinds (entropy, retrieval,
 * distortion).
 *
 * Each statistic the engine verified on its sampled rows is recorded with its
 * own worst error, its own tolerance (attn_tolerances, derived in
 * src/attn/attn_tol.c: worst-case fp32 sums from the sampled rows' own
 * numbers) and its NMSE against the gate attn_gate_fraction of the verification
 * layer (verify/vf.h). A statistic beyond its tolerance or gate, a
 * non-finite mismatch or a written guard marks the run's verification
 * failed. */
#include <stdio.h>

#include "verify/vf.h"
#include "exp/exp.h"

int exp_attn_record_stats(exp_sink *sink, const char *label, const exp_attn_result *r)
{
    sink->verify_s += r->verify_s;
    char what[192], detail[160];
    const vf_stats *v[5] = {&r->vec_q, &r->vec_k, &r->vec_qb, &r->vec_kb, &r->vec_qc};
    static const char *const paired[5] = {"q", "k", "q (paired)", "k (paired)",
                                           "q (inter-chunk)"};
    static const char *const remapped[5] = {"q", "k", "q (remapped)", "k (remapped)",
                                             "q (remapped, inter-chunk)"};
    const char *const *names = r->remap ? remapped : paired;
    int pass = 1;
    for (int i = 0; i < 5; i++) { /* every transform record (DCA's inter-chunk q is the 5th) */
        if (v[i]->n == 0)
            continue;
        snprintf(what, sizeof what, "%s: transformed %s, device vs double reference", label,
                 names[i]);
        /* Bounds are per element: record the element with the worst
         * error/bound (its error and its bound); the largest absolute error
         * anywhere goes in the detail. */
        snprintf(detail, sizeof detail,
                 "element with the worst error/bound vs its own bound (pe_vec_bound); "
                 "max abs error over the %zu elements checked %.3g", v[i]->n, v[i]->max_abs);
        pass = exp_sink_verify_stats(sink, what, v[i], detail) && pass;
    }
    const attn_verify *av = &r->attn.verify;
    for (int k = 0; k < ATTN_V_COUNT; k++) {
        if (!av->checked[k])
            continue;
        int rel = attn_stat_relative(k);
        vf_stats sk;
        vf_acc_judge(&av->acc[k], av->tol[k], av->gate_fraction, &sk);
        snprintf(what, sizeof what, "%s: %s of %u sampled rows vs double reference", label,
                 attn_stat_name(k), av->rows);
        snprintf(detail, sizeof detail,
                 "%s error; fp32 tolerance over %llu keys (attn_tolerances), NMSE gate%s",
                 rel ? "relative" : "absolute", (unsigned long long)av->max_keys,
                 sk.n_nonfinite ? "; non-finite values" : "");
        pass = exp_sink_verify_stats(sink, what, &sk, detail) && pass;
    }
    if (!r->attn.guard_ok) {
        snprintf(what, sizeof what, "%s: attention output guard words", label);
        exp_sink_verify(sink, what, 1, 0, 0, "kernel wrote past its output");
        pass = 0;
    }
    return pass && r->pass;
}
