/* The framework emulation modes' `ropelab check` cases (docs/rope.md
 * "Framework emulation"). Three rows per mode, dtype and shape:
 *   .../angle   the device's fp32 angles (the inputs to cos/sin) against the
 *               CPU emulation's: bound 0 (bit-exact) except ggml-vulkan,
 *               whose device pow is bounded by Vulkan's precision only;
 *   .../emu     the device output against the CPU emulation run with the
 *               device's angles: only cos/sin (2^-11) and the dtype
 *               roundings they can flip differ (rope_emu_bounds);
 *   .../double  the device output against the double reference: what the
 *               framework's arithmetic can be off by (rope_error_bounds). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/chk.h"
#include "core/rl_util.h"
#include "pe/rope.h"

typedef struct emu_mode {
    const char *label;
    int precision, dtype, inv_freq_dtype, tf32;
    int rope_type; /* 0 default; ggml modes also linear and yarn (factor 4, L 4096) */
    int trig;      /* hf, vllm: ROPE_TRIG_DEFAULT (SLEEF, bit-exact) or _DEVICE (builtins) */
} emu_mode;

static const emu_mode emu_modes[] = {
    {"hf", RL_ROPE_PREC_HF, RL_DTYPE_FP32, RL_DTYPE_FP32, 0, 0, 0},
    {"hf", RL_ROPE_PREC_HF, RL_DTYPE_BF16, RL_DTYPE_FP32, 0, 0, 0},
    {"hf", RL_ROPE_PREC_HF, RL_DTYPE_FP16, RL_DTYPE_FP32, 0, 0, 0},
    {"hf-devtrig", RL_ROPE_PREC_HF, RL_DTYPE_BF16, RL_DTYPE_FP32, 0, 0, ROPE_TRIG_DEVICE},
    {"hf-ifbf16", RL_ROPE_PREC_HF, RL_DTYPE_BF16, RL_DTYPE_BF16, 0, 0, 0},
    {"hf-tf32", RL_ROPE_PREC_HF, RL_DTYPE_FP32, RL_DTYPE_FP32, 1, 0, 0},
    {"vllm", RL_ROPE_PREC_VLLM, RL_DTYPE_FP32, RL_DTYPE_FP32, 0, 0, 0},
    {"vllm", RL_ROPE_PREC_VLLM, RL_DTYPE_BF16, RL_DTYPE_FP32, 0, 0, 0},
    {"ggml-cpu", RL_ROPE_PREC_GGML_CPU, RL_DTYPE_FP32, RL_DTYPE_FP32, 0, 0, 0},
    {"ggml-cpu", RL_ROPE_PREC_GGML_CPU, RL_DTYPE_FP16, RL_DTYPE_FP32, 0, 0, 0},
    {"ggml-vulkan", RL_ROPE_PREC_GGML_VULKAN, RL_DTYPE_FP32, RL_DTYPE_FP32, 0, 0, 0},
    {"ggml-vulkan", RL_ROPE_PREC_GGML_VULKAN, RL_DTYPE_FP16, RL_DTYPE_FP32, 0, 0, 0},
    {"cuda-fast", RL_ROPE_PREC_CUDA_FAST, RL_DTYPE_FP32, RL_DTYPE_FP32, 0, 0, 0},
    {"cuda-fast", RL_ROPE_PREC_CUDA_FAST, RL_DTYPE_FP16, RL_DTYPE_FP32, 0, 0, 0},
    /* ggml's rope_yarn: freq_scale 1/4 (linear), + corr_dims ramp, mscale (yarn) */
    {"ggml-cpu-linear", RL_ROPE_PREC_GGML_CPU, RL_DTYPE_FP32, RL_DTYPE_FP32, 0, ROPE_TYPE_LINEAR, 0},
    {"ggml-cpu-yarn", RL_ROPE_PREC_GGML_CPU, RL_DTYPE_FP32, RL_DTYPE_FP32, 0, ROPE_TYPE_YARN, 0},
    {"ggml-cpu-yarn", RL_ROPE_PREC_GGML_CPU, RL_DTYPE_FP16, RL_DTYPE_FP32, 0, ROPE_TYPE_YARN, 0},
    {"ggml-vulkan-linear", RL_ROPE_PREC_GGML_VULKAN, RL_DTYPE_FP32, RL_DTYPE_FP32, 0, ROPE_TYPE_LINEAR, 0},
    {"ggml-vulkan-yarn", RL_ROPE_PREC_GGML_VULKAN, RL_DTYPE_FP32, RL_DTYPE_FP32, 0, ROPE_TYPE_YARN, 0},
    {"ggml-vulkan-yarn", RL_ROPE_PREC_GGML_VULKAN, RL_DTYPE_FP16, RL_DTYPE_FP32, 0, ROPE_TYPE_YARN, 0},
};

typedef struct emu_case {
    uint32_t tokens, heads, head_dim, rotary_dim;
    int layout, random_positions;
    double theta;
} emu_case;

static const emu_case emu_cases[] = {
    {7, 2, 64, 64, RL_ROPE_LAYOUT_HALF, 1, 10000},
    {1, 1, 64, 64, RL_ROPE_LAYOUT_INTERLEAVED, 0, 10000},     /* one token at 2^k */
    {33, 4, 128, 64, RL_ROPE_LAYOUT_INTERLEAVED, 1, 500000},  /* partial rotary, Llama 3 base */
    {257, 1, 128, 128, RL_ROPE_LAYOUT_HALF, 0, 1000000},      /* consecutive up to 2^k */
    {5, 3, 6, 6, RL_ROPE_LAYOUT_HALF, 1, 10000},              /* tiny head: log2 ts outside [0.5, 2] */
};
static const size_t emu_quick_cases = 1;

static rl_status add_row(chk_report *report, const char *mode, const emu_mode *m, const char *what,
                         const char *shape, const char *tol, const float *dev, const double *ref,
                         const double *bound, const double *scale, size_t n, int guard_ok,
                         rl_error *err)
{
    chk_row row = {0};
    snprintf(row.kernel, sizeof row.kernel, "emu/%.18s/%s/%s", mode, rope_dtype_name(m->dtype), what);
    snprintf(row.shape, sizeof row.shape, "%s", shape);
    snprintf(row.tolerance, sizeof row.tolerance, "%s", tol);
    row.guard_ok = guard_ok;
    row.gpu_ms = -1;
    vf_compare(dev, ref, bound, scale, n, VF_GATE_ELEM, &row.stats);
    vf_set_guard(&row.stats, guard_ok);
    return chk_report_add(report, &row, err);
}

static rl_status run_emu_case(rlvk_device *dev, rope_kernel *k, const emu_mode *m,
                              const emu_case *c, const chk_options *opt, chk_report *report,
                              rl_error *err)
{
    rope_desc d = {.head_dim = c->head_dim, .rotary_dim = c->rotary_dim, .layout = c->layout,
                   .theta = c->theta, .precision = m->precision, .dtype = m->dtype,
                   .inv_freq_dtype = m->inv_freq_dtype, .tf32 = m->tf32,
                   .rope_type = m->rope_type, .trig = m->trig};
    if (m->rope_type) {
        d.factor = 4;
        d.original_max_position_embeddings = 4096;
    }
    rope_freqs f;
    rl_status st = rope_freqs_compute(&d, &f, err);
    if (st)
        return st;
    uint32_t lg = opt->max_pos_log2 ? opt->max_pos_log2 : 20;
    char shape[96];
    snprintf(shape, sizeof shape, "T=%u H=%u D=%u rot=%u %s base=%g pos<=2^%u%s", c->tokens,
             c->heads, c->head_dim, f.rotary_dim,
             c->layout == RL_ROPE_LAYOUT_HALF ? "half" : "inter", c->theta, lg,
             c->random_positions ? " random" : "");
    /* One device run yields three rows (angle, emu, double): run it if any
     * is selected (chk_report_add drops the others); --list names them. */
    static const char *const whats[] = {"angle", "emu", "double"};
    int any = 0;
    for (size_t w = 0; w < 3 && !st; w++) {
        chk_row row = {0};
        snprintf(row.kernel, sizeof row.kernel, "emu/%.18s/%s/%s", m->label,
                 rope_dtype_name(m->dtype), whats[w]);
        snprintf(row.shape, sizeof row.shape, "%s", shape);
        int run;
        st = chk_case_begin(opt, report, &row, &run, err);
        any |= run;
    }
    if (st || !any)
        return st;
    size_t n = (size_t)c->tokens * c->heads * c->head_dim, na = (size_t)c->tokens * f.n_pairs;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *ye = malloc(n * sizeof *ye);
    float *ang = malloc((na ? na : 1) * sizeof *ang), *ang_cpu = malloc((na ? na : 1) * sizeof *ang_cpu);
    double *ref = malloc(n * sizeof *ref), *bound = malloc(n * sizeof *bound),
           *scale = malloc(n * sizeof *scale), *aref = malloc((na ? na : 1) * sizeof *aref),
           *abound = malloc((na ? na : 1) * sizeof *abound);
    uint32_t *pos = malloc(c->tokens * sizeof *pos);
    if (!x || !y || !ye || !ang || !ang_cpu || !ref || !bound || !scale || !aref || !abound || !pos) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for a check case");
        goto done;
    }
    char stream[64];
    snprintf(stream, sizeof stream, "check/rope-emu/%u/%u/%u", c->tokens, c->heads, c->head_dim);
    chk_rope_inputs(opt, stream, x, n, pos, c->tokens, c->random_positions);
    int guard_ok = 0;
    if ((st = rope_gpu_apply_dump(dev, k, &f, x, pos, c->tokens, c->heads, y, ang, NULL, &guard_ok,
                                  err)))
        goto done;
    /* 1. angles: the CPU emulation's own, bit for bit (ggml-vulkan: pow). */
    rope_emu_apply(&f, x, pos, c->tokens, c->heads, NULL, ye, ang_cpu);
    for (size_t i = 0; i < na; i++) {
        aref[i] = ang_cpu[i];
        abound[i] = rope_emu_angle_bound(&f, pos[i / f.n_pairs], (uint32_t)(i % f.n_pairs));
    }
    int vk = m->precision == RL_ROPE_PREC_GGML_VULKAN;
    if ((st = add_row(report, m->label, m, "angle", shape,
                      vk ? "Vulkan pow: |phi|(dz ln2 + (4+2|z|)2^-23)" : "0 (bit-exact)", ang, aref,
                      abound, NULL, na, guard_ok, err)))
        goto done;
    /* 2. output against the CPU emulation at the device's angles. */
    rope_emu_apply(&f, x, pos, c->tokens, c->heads, ang, ye, NULL);
    for (size_t i = 0; i < n; i++)
        ref[i] = ye[i];
    rope_emu_bounds(&f, x, c->tokens, c->heads, bound);
    if ((st = add_row(report, m->label, m, "emu", shape,
                      rope_emu_sleef(&f) ? "0 (bit-exact: SLEEF cos/sin on both sides)"
                                         : "sM(2^-11+2^-22+6u)+4ulp32(sM)", y, ref,
                      bound, NULL, n, guard_ok, err)))
        goto done;
    /* 3. output against the double reference. */
    rope_ref_apply(&f, x, pos, c->tokens, c->heads, ref);
    rope_error_bounds(&f, x, pos, c->tokens, c->heads, bound, scale);
    st = add_row(report, m->label, m, "double", shape, "sM(|phi|k_j+2^-11+2^-22+8u)+4ulp32(sM)", y,
                 ref, bound, scale, n, guard_ok, err);
done:
    free(x);
    free(y);
    free(ye);
    free(ang);
    free(ang_cpu);
    free(ref);
    free(bound);
    free(scale);
    free(aref);
    free(abound);
    free(pos);
    return st;
}

rl_status chk_rope_emu_cases(rlvk_device *dev, const chk_options *opt, chk_report *report,
                             rl_error *err)
{
    rope_kernel k;
    rl_status st = rope_kernel_create(dev, &k, err);
    if (st)
        return st;
    size_t n_cases = opt->quick ? emu_quick_cases : RL_ARRAY_LEN(emu_cases);
    for (size_t mi = 0; mi < RL_ARRAY_LEN(emu_modes) && !st; mi++)
        for (size_t ci = 0; ci < n_cases && !st; ci++)
            st = run_emu_case(dev, &k, &emu_modes[mi], &emu_cases[ci], opt, report, err);
    rope_kernel_destroy(dev, &k);
    return st;
}
