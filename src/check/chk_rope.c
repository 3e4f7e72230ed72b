/* RoPE's `ropelab check` cases: shapes chosen to hit edges (1 token, odd
 * and prime counts, 1 and 8 heads, head_dim 64/128, partial rotary) and
 * positions up to 2^20, compared with the double CPU reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/chk.h"
#include "core/rl_util.h"
#include "pe/rope_scaling.h"

typedef struct rope_case {
    uint32_t tokens, heads, head_dim, rotary_dim;
    int random_positions;   /* 0: consecutive, ending at the largest position */
} rope_case;

static const rope_case rope_cases[] = {
    {1, 1, 64, 64, 0},
    {7, 8, 64, 64, 1},
    {63, 1, 128, 128, 0},
    {65, 8, 128, 128, 1},
    {257, 1, 128, 128, 1},
    {33, 8, 128, 64, 1},    /* partial rotary: half of head_dim */
    {129, 1, 64, 32, 0},    /* partial rotary: a quarter */
    {1021, 8, 128, 128, 1}, /* prime token count, many rows */
};
static const size_t rope_quick_cases = 4;

void chk_rope_inputs(const chk_options *opt, const char *stream, float *x, size_t n,
                     uint32_t *pos, uint32_t tokens, int random_positions)
{
    rl_rng rng;
    rl_rng_seed(&rng, opt->seed ? opt->seed : 1, stream);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rl_rng_normal(&rng);
    uint32_t pmax = 1u << (opt->max_pos_log2 ? opt->max_pos_log2 : 20);
    for (uint32_t t = 0; t < tokens; t++) {
        if (random_positions)
            pos[t] = (uint32_t)(rl_rng_uniform(&rng) * (double)(pmax + 1u));
        else
            pos[t] = pmax - (tokens - 1 - t);
    }
    if (random_positions) { /* always include both ends */
        pos[0] = 0;
        pos[tokens - 1] = pmax;
    }
}

/* The case's desc (base at its shape, layout and precision) and freqs. */
static rl_status case_freqs(const rope_case *c, const rope_desc *base, int layout, int precision,
                            rope_desc *desc, rope_freqs *f, rl_error *err)
{
    *desc = *base;
    desc->head_dim = c->head_dim;
    desc->rotary_dim = c->rotary_dim;
    desc->layout = layout;
    desc->precision = precision;
    return rope_freqs_compute(desc, f, err);
}

static rl_status run_rope_case(rlvk_device *dev, rope_kernel *k, const rope_case *c,
                               const rope_desc *base, int layout, int precision,
                               const chk_options *opt, chk_report *report, rl_error *err)
{
    rope_desc desc;
    rope_freqs f;
    rl_status st = case_freqs(c, base, layout, precision, &desc, &f, err);
    if (st)
        return st;
    chk_row row = {0};
    const char *tn = rope_type_name(desc.rope_type);
    int cache = rope_freqs_per_position(&f);
    const char *sem = desc.semantics != ROPE_SEM_VLLM ? ""
                      : desc.alpha > 0                ? "/vllm-alpha"
                      : desc.mixed_b > 0              ? "/vllm-mixed_b"
                                                      : "/vllm";
    snprintf(row.kernel, sizeof row.kernel, "rope/%s/%s%s%s%s%s",
             layout == RL_ROPE_LAYOUT_HALF ? "half" : "inter", rope_precision_name(precision),
             desc.rope_type ? "/" : "", desc.rope_type ? tn : "", sem, cache ? "/cache" : "");
    char pl[32] = "";
    if (cache) /* each token with its own length max(p+1, P) */
        snprintf(pl, sizeof pl, " P=%u", f.prompt_len);
    snprintf(row.shape, sizeof row.shape, "T=%u H=%u D=%u rot=%u pos<=2^%u%s%s", c->tokens,
             c->heads, c->head_dim, f.rotary_dim, opt->max_pos_log2 ? opt->max_pos_log2 : 20,
             c->random_positions ? " random" : "", pl);
    snprintf(row.tolerance, sizeof row.tolerance, "%s",
             precision == RL_ROPE_PREC_FP32 ? "M*(|phi|*2^-23 + 2^-11) + 4ulp(M)" : "4ulp(M)");
    int run;
    if ((st = chk_case_begin(opt, report, &row, &run, err)) || !run)
        return st;
    size_t n = (size_t)c->tokens * c->heads * c->head_dim;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *ref = malloc(n * sizeof *ref), *bound = malloc(n * sizeof *bound),
           *scale = malloc(n * sizeof *scale);
    uint32_t *pos = malloc(c->tokens * sizeof *pos);
    if (!x || !y || !ref || !bound || !scale || !pos) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for a check case");
        goto done;
    }
    char stream[64];
    snprintf(stream, sizeof stream, "check/rope/%u/%u/%u", c->tokens, c->heads, c->head_dim);
    chk_rope_inputs(opt, stream, x, n, pos, c->tokens, c->random_positions);
    rope_ref_apply(&f, x, pos, c->tokens, c->heads, ref);
    rope_error_bounds(&f, x, pos, c->tokens, c->heads, bound, scale);

    double ns = -1;
    st = rope_gpu_apply(dev, k, &f, x, pos, c->tokens, c->heads, y, &ns, &row.guard_ok, err);
    if (st)
        goto done;
    row.gpu_ms = ns >= 0 ? ns * 1e-6 : -1;
    vf_compare(y, ref, bound, scale, n, VF_GATE_ELEM, &row.stats);
    vf_set_guard(&row.stats, row.guard_ok);
    st = chk_report_add(report, &row, err);
done:
    free(x);
    free(y);
    free(ref);
    free(bound);
    free(scale);
    free(pos);
    return st;
}

/* mRoPE rows: 3-D positions [tokens][3] drawn per stream (t, h, w each its
 * own random positions up to 2^max_pos_log2, both ends included), so that
 * a pair reading the wrong stream shows; the same bound as plain RoPE at
 * the token's largest stream position (the fp32 bound only grows with the
 * angle; table and precise do not depend on it). */
static rl_status run_mrope_case(rlvk_device *dev, rope_kernel *k, const rope_case *c,
                                const rope_desc *base, int layout, int precision,
                                const chk_options *opt, chk_report *report, rl_error *err)
{
    rope_desc desc;
    rope_freqs f;
    rl_status st = case_freqs(c, base, layout, precision, &desc, &f, err);
    if (st)
        return st;
    chk_row row = {0};
    snprintf(row.kernel, sizeof row.kernel, "rope/%s/%s%s%s/%s",
             layout == RL_ROPE_LAYOUT_HALF ? "half" : "inter", rope_precision_name(precision),
             desc.rope_type ? "/" : "", desc.rope_type ? rope_type_name(desc.rope_type) : "",
             f.mrope == ROPE_MROPE_INTERLEAVED ? "imrope" : "mrope");
    snprintf(row.shape, sizeof row.shape, "T=%u H=%u D=%u rot=%u sec=%u,%u,%u pos3<=2^%u",
             c->tokens, c->heads, c->head_dim, f.rotary_dim, f.mrope_section[0],
             f.mrope_section[1], f.mrope_section[2], opt->max_pos_log2 ? opt->max_pos_log2 : 20);
    snprintf(row.tolerance, sizeof row.tolerance, "%s",
             precision == RL_ROPE_PREC_FP32 ? "M*(|phi_max|*2^-23 + 2^-11) + 4ulp(M)" : "4ulp(M)");
    int run;
    if ((st = chk_case_begin(opt, report, &row, &run, err)) || !run)
        return st;
    size_t n = (size_t)c->tokens * c->heads * c->head_dim;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *xs = malloc(n * sizeof *xs);
    double *ref = malloc(n * sizeof *ref), *bound = malloc(n * sizeof *bound),
           *scale = malloc(n * sizeof *scale);
    uint32_t *pos = malloc(c->tokens * sizeof *pos), *pos3 = malloc(3 * c->tokens * sizeof *pos3),
             *pmax = malloc(c->tokens * sizeof *pmax);
    if (!x || !y || !xs || !ref || !bound || !scale || !pos || !pos3 || !pmax) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for a check case");
        goto done;
    }
    for (int sdim = 0; sdim < 3; sdim++) {
        char stream[64];
        snprintf(stream, sizeof stream, "check/mrope/%u/%u/%u/%d", c->tokens, c->heads,
                 c->head_dim, sdim);
        chk_rope_inputs(opt, stream, sdim ? xs : x, n, pos, c->tokens, 1);
        /* each stream its own draw; h reversed and w rotated by half the
         * tokens, so the forced ends (0 and 2^20) fall on different tokens */
        for (uint32_t t = 0; t < c->tokens; t++)
            pos3[3 * t + sdim] = sdim == 0   ? pos[t]
                                 : sdim == 1 ? pos[c->tokens - 1 - t]
                                             : pos[(t + c->tokens / 2) % c->tokens];
    }
    for (uint32_t t = 0; t < c->tokens; t++) {
        uint32_t m = pos3[3 * t] > pos3[3 * t + 1] ? pos3[3 * t] : pos3[3 * t + 1];
        pmax[t] = m > pos3[3 * t + 2] ? m : pos3[3 * t + 2];
    }
    rope_ref_apply3(&f, x, pos3, c->tokens, c->heads, ref);
    rope_error_bounds(&f, x, pmax, c->tokens, c->heads, bound, scale);
    double ns = -1;
    st = rope_gpu_apply3(dev, k, &f, x, pos3, c->tokens, c->heads, y, &ns, &row.guard_ok, err);
    if (st)
        goto done;
    row.gpu_ms = ns >= 0 ? ns * 1e-6 : -1;
    vf_compare(y, ref, bound, scale, n, VF_GATE_ELEM, &row.stats);
    vf_set_guard(&row.stats, row.guard_ok);
    st = chk_report_add(report, &row, err);
done:
    free(x), free(y), free(xs), free(ref), free(bound), free(scale), free(pos), free(pos3);
    free(pmax);
    return st;
}

/* One configuration of every scaling type (HF-style settings: the
 * registry's example, pe/rope_scaling.h), run at one shape with partial
 * rotary where the type allows it. */
static void scaled_desc(int type, rope_desc *d) { rope_scaling_example(type, d); }

rl_status chk_rope_cases(rlvk_device *dev, const chk_options *opt, chk_report *report,
                         rl_error *err)
{
    rope_kernel k;
    rl_status st = rope_kernel_create(dev, &k, err);
    if (st)
        return st;
    rope_desc plain = {0};
    size_t n_cases = opt->quick ? rope_quick_cases : RL_ARRAY_LEN(rope_cases);
    for (size_t i = 0; i < n_cases && !st; i++)
        for (int layout = 0; layout < 2 && !st; layout++)
            for (int prec = RL_ROPE_PREC_FP32; prec <= RL_ROPE_PREC_PRECISE && !st; prec++)
                st = run_rope_case(dev, &k, &rope_cases[i], &plain, layout, prec, opt, report, err);
    /* Every registered scaling type x both layouts x every precision;
     * partial rotary (64 of 128) except a whole-head type (proportional),
     * which rotates the whole head with zero frequencies past its proportion. */
    for (int type = ROPE_TYPE_LINEAR; type < ROPE_TYPE_COUNT && !st; type++) {
        rope_desc d;
        scaled_desc(type, &d);
        rope_case c = {opt->quick ? 5 : 33, opt->quick ? 2 : 4, 128,
                       rope_scaling_at(type)->whole_head ? 0 : 64, 1};
        for (int layout = 0; layout < 2 && !st; layout++)
            for (int prec = RL_ROPE_PREC_FP32; prec <= RL_ROPE_PREC_PRECISE && !st; prec++) {
                if (opt->quick && layout == 1 && type != ROPE_TYPE_YARN)
                    continue;
                st = run_rope_case(dev, &k, &c, &d, layout, prec, opt, report, err);
            }
    }
    /* dynamic_mode cache_consistent: every token its own scale, length
     * max(p+1, P) with P = 4096 (positions below share the prompt's), up to
     * the largest position (2^20 by default): per-token inv_freq and
     * attention factor on the device. vec4 (rot 64) and scalar (rot 36)
     * paths, an odd head count. */
    static const int dyn_types[] = {ROPE_TYPE_DYNAMIC, ROPE_TYPE_DYNAMIC_YARN};
    for (size_t t = 0; t < RL_ARRAY_LEN(dyn_types) && !st; t++)
        for (int shape = 0; shape < 2 && !st; shape++) {
            rope_desc d;
            scaled_desc(dyn_types[t], &d);
            d.factor = dyn_types[t] == ROPE_TYPE_DYNAMIC ? 4 : 0; /* dynamic_yarn: s >= 1 */
            d.dynamic_mode = ROPE_DYN_CACHE_CONSISTENT;
            d.prompt_len = 4096;
            d.seq_len = (1u << (opt->max_pos_log2 ? opt->max_pos_log2 : 20)) + 1u;
            rope_case c = shape == 0 ? (rope_case){opt->quick ? 5 : 33, opt->quick ? 2 : 4, 128, 64, 1}
                                     : (rope_case){opt->quick ? 3 : 7, 3, 72, 36, 0};
            for (int layout = 0; layout < 2 && !st; layout++)
                for (int prec = RL_ROPE_PREC_FP32; prec <= RL_ROPE_PREC_PRECISE && !st; prec++)
                    st = run_rope_case(dev, &k, &c, &d, layout, prec, opt, report, err);
        }
    /* vLLM's readings (semantics vllm): static dynamic at M * factor, HunYuan's
     * alpha, ntk and ntk with mixed_b; inv_freq changes on the same kernel,
     * positions to 2^20, both layouts, every precision. */
    static const struct { int type; double alpha, mixed_b; } vllm_rows[] = {
        {ROPE_TYPE_DYNAMIC, 0, 0}, {ROPE_TYPE_DYNAMIC, 1000, 0},
        {ROPE_TYPE_NTK, 0, 0}, {ROPE_TYPE_NTK, 0, 0.5},
    };
    for (size_t v = 0; v < RL_ARRAY_LEN(vllm_rows) && !st; v++) {
        rope_desc d;
        scaled_desc(vllm_rows[v].type, &d);
        d.semantics = ROPE_SEM_VLLM;
        d.alpha = vllm_rows[v].alpha;
        d.mixed_b = vllm_rows[v].mixed_b;
        if (d.alpha > 0)
            d.factor = 0; /* vLLM's alpha class reads no factor */
        rope_case c = {opt->quick ? 5 : 33, opt->quick ? 2 : 4, 128, 64, 1};
        for (int layout = 0; layout < 2 && !st; layout++)
            for (int prec = RL_ROPE_PREC_FP32; prec <= RL_ROPE_PREC_PRECISE && !st; prec++) {
                if (opt->quick && layout == 1)
                    continue;
                st = run_rope_case(dev, &k, &c, &d, layout, prec, opt, report, err);
            }
    }
    /* mRoPE: Qwen2-VL's sections [16, 24, 24] and Qwen3-VL's interleaved
     * [24, 20, 20] at head_dim 128 (vec4 path), a scalar-path shape (rot 36,
     * sections of 6), partial rotary, and one scaling on top (yarn), both
     * layouts, every precision. */
    static const struct { uint32_t sec[3]; int inter; uint32_t hd, rot, tok, heads; int yarn; }
        mrope_rows[] = {
            {{16, 24, 24}, 0, 128, 128, 65, 4, 0}, {{24, 20, 20}, 1, 128, 128, 65, 4, 0},
            {{6, 6, 6}, 0, 72, 36, 7, 3, 0},       {{6, 6, 6}, 1, 72, 36, 7, 3, 0},
            {{8, 12, 12}, 1, 128, 64, 33, 2, 0},   {{16, 24, 24}, 0, 128, 128, 33, 2, 1},
        };
    size_t n_mrope = opt->quick ? 2 : RL_ARRAY_LEN(mrope_rows);
    for (size_t m = 0; m < n_mrope && !st; m++) {
        rope_desc d;
        if (mrope_rows[m].yarn)
            scaled_desc(ROPE_TYPE_YARN, &d);
        else
            memset(&d, 0, sizeof d);
        d.n_mrope_section = 3;
        memcpy(d.mrope_section, mrope_rows[m].sec, sizeof d.mrope_section);
        d.mrope_interleaved = mrope_rows[m].inter;
        rope_case c = {opt->quick ? 5 : mrope_rows[m].tok, mrope_rows[m].heads, mrope_rows[m].hd,
                       mrope_rows[m].rot, 1};
        for (int layout = 0; layout < 2 && !st; layout++)
            for (int prec = RL_ROPE_PREC_FP32; prec <= RL_ROPE_PREC_PRECISE && !st; prec++) {
                if (opt->quick && layout == 1)
                    continue;
                st = run_mrope_case(dev, &k, &c, &d, layout, prec, opt, report, err);
            }
    }
    rope_kernel_destroy(dev, &k);
    return st;
}

