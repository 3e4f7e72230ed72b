/* vf.h — the verification layer (prefix vf_): device output against the
 * double-precision CPU reference, for check/, exp/ and bench/ alike (and
 * the engines' own sampled-row checks, pe/ and attn/). Uses core and vk only.
 *
 * Comparison, like ggml's test-backend-ops, in three steps:
 *  1. non-finite first: a non-finite device value fails unless the
 *     reference is the same infinity (+inf = +inf, -inf = -inf: masked
 *     logits). NaN never equals NaN: a NaN reference is itself an error
 *     (the reference is broken or was fed NaN) and is reported separately
 *     (n_ref_nan), whatever the device wrote.
 *  2. per element: |dev - ref| against that element's own bound; the first
 *     failing index, the worst element's error and its bound are reported.
 *  3. over the tensor: NMSE = sum (dev - ref)^2 / sum ref^2 against a gate.
 * Verdict = no non-finite mismatch AND no element over its bound AND
 * NMSE <= gate (AND, where the output was guarded, its guard words intact).
 *
 * The NMSE gate. The bounds are worst cases: every rounding of an element's
 * computation at its extreme and of one sign. A correct kernel's errors are
 * rounding noise far inside them, so a kernel can regress by 10x and still
 * keep every element inside its bound. The gate catches that: it is a
 * stated fraction f of the NMSE the per-element bounds would allow,
 *     gate = f * NMSE_bound,   NMSE_bound = sum bound^2 / sum ref^2,
 * i.e. NMSE <= gate  <=>  sum err^2 <= f sum bound^2: the RMS error may use
 * at most sqrt(f) of the RMS bound. (When sum ref^2 = 0 both sides are left
 * unnormalised; the comparison is the same.) f is chosen per kernel from
 * what the bound is made of (VF_GATE_* below; docs/overview.md "How
 * verification works", docs/attention.md):
 *  - attention statistics (f = VF_GATE_ATTN_C / (D + 2) = 1 / (4 (D + 2)),
 *    D = head_dim; attn_gate_fraction): every statistic's bound carries the
 *    logit bound E_s = (D + 2) u A, D + 2 roundings at their extreme and of
 *    one sign. Independent roundings add like a random walk: the RMS error
 *    is about 1/sqrt(D + 2) of such a bound, NMSE/NMSE_bound about 1/(D + 2).
 *    Measured on lavapipe (ropelab check, the attention tests): the
 *    statistic nearest its gate is the max logit, at NMSE/NMSE_bound <=
 *    0.0052 (D = 4), 0.0037 (D = 8), 0.0022 (D = 16), 1.9e-4 (D = 64);
 *    over all of `ropelab check` (full) the row nearest its gate is at 0.21
 *    of it (attn_alibi, 4097 tokens bidirectional, D = 32), so the gate
 *    leaves at least 4.8x room in NMSE, and an
 *    error 10x larger (NMSE 100x) fails it wherever a correct run sits
 *    above 1/100 of the gate, the typical rows (median 4e-5 at D = 64)
 *    included, although worst elements at 0.01..0.26 of their bound stay
 *    inside it after the regression.
 *  - element-wise transforms and bias evaluations (VF_GATE_ELEM = 0.25,
 *    RMS at most half the bound): their bounds are mostly realised error
 *    (fp32 angle rounding M |phi| 2^-23, one table or trig evaluation,
 *    bit-exact 0); the check rows sit at up to 0.83 of the bound per
 *    element and up to 0.084 of the bounds' NMSE (pe/learned/wrap; rope
 *    <= 0.019, bias <= 0.046), so a 10x regression leaves the bounds, which
 *    catch it already. The rope framework emulation rows (chk_rope_emu.c)
 *    reach 0.99 of the bound per element (a pass-through value's rounding to
 *    bf16/fp16, whose bound u |x| is tight by construction) and 0.035 of the
 *    bounds' NMSE. The gate still fails a kernel whose errors crowd the
 *    bound everywhere (errors uniform in [-bound, bound] give 1/3).
 *  A bound of 0 (bit-exact) makes the gate 0: NMSE must be 0 as well.
 */
#ifndef VF_H
#define VF_H

#include <stddef.h>
#include <stdint.h>

#include "core/rl_status.h"
#include "vk/rlvk.h"

/* Gate fractions f (see above): NMSE <= f * sum bound^2 / sum ref^2. */
#define VF_GATE_ATTN_C 0.25 /* attention: f = VF_GATE_ATTN_C / (head_dim + 2) */
#define VF_GATE_ELEM 0.25

#define VF_NONE ((size_t)-1)

/* The tolerance record of one comparison: what check rows, experiment
 * verification records and bench results all carry. Zero = nothing
 * compared (pass 0). */
typedef struct vf_stats {
    size_t n;                  /* elements compared */
    size_t n_nonfinite;        /* non-finite mismatches (incl. every NaN reference) */
    size_t n_ref_nan;          /* reference NaN (an error of the reference) */
    size_t n_over;             /* finite elements whose error exceeds their bound */
    size_t first_bad;          /* first failing index (non-finite or over); VF_NONE */
    double max_abs;            /* max |dev - ref| */
    double max_rel;            /* max |dev - ref| / scale */
    double worst_ratio;        /* max |dev - ref| / bound (<= 1 passes) */
    double err_at_worst;       /* the worst element's error ... */
    double bound_at_worst;     /* ... and its own bound */
    double nmse;               /* sum (dev-ref)^2 / sum ref^2 */
    double nmse_bound;         /* sum bound^2 / sum ref^2: what the bounds allow */
    double gate_fraction;      /* f */
    double nmse_gate;          /* f * nmse_bound */
    int nmse_ok;               /* nmse <= nmse_gate */
    int guard_bad;             /* 1: the kernel wrote into the guard words */
    int pass;                  /* the verdict */
} vf_stats;

/* dev[i] vs ref[i] with its own absolute bound[i]; scale[i] is the
 * denominator of the reported relative error (NULL: |ref[i]|, floored at
 * 1e-30). gate_fraction: f of the NMSE gate (VF_GATE_*). Fills s. */
void vf_compare(const float *dev, const double *ref, const double *bound, const double *scale,
                size_t n, double gate_fraction, vf_stats *s);

/* vf_compare over a tensor given in consecutive pieces (a reference too
 * large to hold at once, computed a block of rows at a time): begin, add
 * each piece in order (indices continue from the previous piece: first_bad
 * is the index in the whole), end. The result is vf_compare's over the
 * concatenation, bit for bit (the same sums in the same order; vf_compare
 * is one piece). */
typedef struct vf_stream {
    vf_stats s;                /* counts and maxima so far */
    double se, sr, sb;         /* sums of err^2, ref^2, bound^2 so far */
    double gate_fraction;
    size_t next;               /* index of the next piece's first element */
    int have_worst;
} vf_stream;
void vf_stream_begin(vf_stream *v, double gate_fraction);
void vf_stream_add(vf_stream *v, const float *dev, const double *ref, const double *bound,
                   const double *scale, size_t n);
void vf_stream_end(const vf_stream *v, vf_stats *s);

/* Folds a guard check into s: guard_ok = 0 marks it failed. */
void vf_set_guard(vf_stats *s, int guard_ok);

/* Combines the verdicts of several comparisons into one (into starts
 * zeroed or as an earlier result): counts add, the worst element is the one
 * with the largest error/bound, NMSE and gate are those of the comparison
 * closest to (or furthest over) its gate, pass = all pass. */
void vf_merge(vf_stats *into, const vf_stats *s);

/* ---- the one tolerance record ----------------------------------------- *
 * Every JSON writer that reports a verdict (check rows, bench's and
 * apply's "verify", ...) serialises vf_stats through this one function, in
 * one vocabulary: pass, elements, over_bound, nonfinite, reference_nan,
 * first_bad (-1: none), max_abs_error, max_rel_error, error_at_worst,
 * bound_at_worst, worst_error_over_bound, nmse, nmse_bound, nmse_gate,
 * nmse_gate_fraction, nmse_ok, guard_ok, and, when pass is false, "reason"
 * (vf_stats_reason). A number that is not finite (an infinite error over a
 * bound, after a non-finite element) is written as null and its key listed
 * in "not_finite": JSON has no infinity, and a writer that passes one to
 * jansson loses the whole record. Returns a new object (NULL only when out
 * of memory). */
struct json_t;
struct json_t *vf_stats_json(const vf_stats *s);
/* The same record for a verdict on one scalar (an experiment's worst error
 * against its bound, computed elsewhere): pass, error_at_worst,
 * bound_at_worst, worst_error_over_bound (err / bound; null when the bound
 * is 0 and err is not), non-finite numbers as above. New object. */
struct json_t *vf_scalar_json(double err, double bound, int pass);
/* Why s did not pass, in words ("3 element(s) over their bound (worst
 * error/bound 2.5 at index 17); ..."), into buf; "" when it passed. */
const char *vf_stats_reason(const vf_stats *s, char *buf, size_t size);

/* ---- comparisons whose bound is known only at the end ------------------ *
 * (attention: the tolerance of a statistic depends on all sampled rows).
 * Each element's bound is tol * scale_i, with tol given to vf_acc_judge. */
typedef struct vf_acc {
    size_t n, n_nonfinite, n_ref_nan, first_bad;
    double max_abs;            /* max |dev - ref| */
    double max_rel;            /* max |dev - ref| / scale: the judged error */
    double sum_e2, sum_r2, sum_s2; /* sum err^2, sum ref^2, sum scale^2 */
} vf_acc;

/* Adds element (dev, ref) whose bound will be tol * scale (scale > 0). */
void vf_acc_add(vf_acc *a, double dev, double ref, double scale);
/* The verdict of the accumulated elements against bound tol * scale_i and
 * gate f * NMSE_bound. An empty accumulator passes trivially (n = 0). */
void vf_acc_judge(const vf_acc *a, double tol, double gate_fraction, vf_stats *s);

/* ---- guarded outputs ---------------------------------------------------- *
 * VF_GUARD_WORDS sentinel words (a NaN bit pattern no kernel computes) sit
 * after an output tensor in the same buffer; after the kernel ran they must
 * be untouched. One implementation for every output: rope, the encodings'
 * vector transforms, bias evaluation, attention. */
#define VF_GUARD_WORDS 64u
#define VF_GUARD_BITS 0x7fc0beefu
#define VF_GUARD_BYTES (VF_GUARD_WORDS * 4u)

/* Creates a buffer of bytes + VF_GUARD_BYTES (bytes a multiple of 4) and
 * writes the guard after the tensor. Destroy with rlvk_buffer_destroy. */
rl_status vf_guarded_create(rlvk_device *dev, uint64_t bytes, const char *name, rlvk_buffer *buf,
                            rl_error *err);
/* The same for a tensor bound through windows (rlvk_buffer_create_large):
 * K/V beyond one binding. */
rl_status vf_guarded_create_large(rlvk_device *dev, uint64_t bytes, const char *name,
                                  rlvk_buffer *buf, rl_error *err);
/* Reads the guard words after the first `bytes` bytes of buf: *guard_ok =
 * 1 when all are untouched. */
rl_status vf_guard_check(rlvk_device *dev, const rlvk_buffer *buf, uint64_t bytes, int *guard_ok,
                         rl_error *err);
/* Downloads the tensor (first `bytes` bytes) into host and checks its
 * guard (guard_ok may be NULL: not asked). */
rl_status vf_guarded_download(rlvk_device *dev, const rlvk_buffer *buf, uint64_t bytes,
                              void *host, int *guard_ok, rl_error *err);

#endif
