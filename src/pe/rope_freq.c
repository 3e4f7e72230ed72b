/* RoPE parameters -> frequencies. The one formula shared by the CPU
 * reference and the GPU host side.
 *
 * Every scaling type reproduces Hugging Face transformers'
 * modeling_rope_utils.py (_compute_*_parameters, transformers 5 layout with
 * rope_parameters); where HF differs from the paper, HF wins and docs/rope.md
 * says how. HF computes in float32; this file computes in double, so values
 * agree to float32 rounding (~1e-7 relative). */
#include <math.h>
#include <string.h>

#include "pe/rope_scaling.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

const char *rope_dynamic_mode_name(int mode)
{
    return mode == ROPE_DYN_RECOMPUTE ? "recompute"
           : mode == ROPE_DYN_CACHE_CONSISTENT ? "cache_consistent" : NULL;
}

int rope_dynamic_mode_parse(const char *name)
{
    for (int m = ROPE_DYN_RECOMPUTE; m <= ROPE_DYN_CACHE_CONSISTENT; m++)
        if (strcmp(name, rope_dynamic_mode_name(m)) == 0)
            return m;
    return -1;
}

const char *rope_semantics_name(int semantics)
{
    return semantics == ROPE_SEM_HF ? "hf" : semantics == ROPE_SEM_VLLM ? "vllm" : NULL;
}

int rope_semantics_parse(const char *name)
{
    for (int m = ROPE_SEM_HF; m <= ROPE_SEM_VLLM; m++)
        if (strcmp(name, rope_semantics_name(m)) == 0)
            return m;
    return -1;
}

/* semantics and its keys (alpha, mixed_b): vLLM's own readings exist for
 * dynamic and ntk only; each key is refused, by name, where it does not
 * apply. Sources and formulas: docs/rope.md "vLLM's readings". */
static rl_status rope_semantics_validate(const rope_desc *r, rl_error *err)
{
    const char *tn = rope_type_name(r->rope_type);
    int vllm = r->semantics == ROPE_SEM_VLLM;
    if (!rope_semantics_name(r->semantics))
        return rl_fail_key(err, RL_ERR_ARG, "semantics",
                           "semantics %d must be hf (%d) or vllm (%d)", r->semantics,
                           ROPE_SEM_HF, ROPE_SEM_VLLM);
    if (!isfinite(r->alpha) || r->alpha < 0)
        return rl_fail_key(err, RL_ERR_ARG, "alpha",
                           "alpha %g must be a finite number > 0", r->alpha);
    if (!isfinite(r->mixed_b) || r->mixed_b < 0)
        return rl_fail_key(err, RL_ERR_ARG, "mixed_b",
                           "mixed_b %g must be a finite number > 0", r->mixed_b);
    if (vllm && r->rope_type != ROPE_TYPE_DYNAMIC && r->rope_type != ROPE_TYPE_NTK)
        return rl_fail_key(err, RL_ERR_ARG, "semantics",
                           "semantics vllm applies to rope_type dynamic and ntk only "
                           "(ropelab has no vLLM reading of %s that differs from hf's)", tn);
    if (r->alpha > 0 && (r->rope_type != ROPE_TYPE_DYNAMIC || !vllm))
        return rl_fail_key(err, RL_ERR_ARG, "alpha",
                           "alpha applies to rope_type dynamic with semantics vllm "
                           "only (vLLM's DynamicNTKAlphaRotaryEmbedding, HunYuan; "
                           "not %s, semantics %s)", tn, rope_semantics_name(r->semantics));
    if (r->mixed_b > 0 && (r->rope_type != ROPE_TYPE_NTK || !vllm))
        return rl_fail_key(err, RL_ERR_ARG, "mixed_b",
                           "mixed_b applies to rope_type ntk with semantics vllm "
                           "only (vLLM's NTKScalingRotaryEmbedding; not %s, semantics %s)", tn,
                           rope_semantics_name(r->semantics));
    if (vllm && r->dynamic_mode == ROPE_DYN_CACHE_CONSISTENT)
        return rl_fail_key(err, RL_ERR_ARG, "dynamic_mode",
                           "dynamic_mode cache_consistent: semantics vllm computes "
                           "one static base for every token (vLLM #3488); use semantics hf");
    if (r->alpha > 0) {
        /* vLLM's get_rope: "alpha" in the dict selects the alpha class, which
         * reads neither factor nor YaRN's keys (HunYuan configs carry them). */
        if (r->factor != 0 && r->factor != 1)
            return rl_fail_key(err, RL_ERR_ARG, "factor",
                               "factor %g with alpha: vLLM ignores factor when alpha "
                               "is given; leave factor out (or 1)", r->factor);
        const struct { const char *k; double v; } unused[] = {
            {"beta_fast", r->beta_fast}, {"beta_slow", r->beta_slow}, {"mscale", r->mscale},
            {"mscale_all_dim", r->mscale_all_dim}, {"attention_factor", r->attention_factor},
        };
        for (size_t i = 0; i < sizeof unused / sizeof unused[0]; i++)
            if (unused[i].v != 0)
                return rl_fail_key(err, RL_ERR_ARG, unused[i].k,
                                   "%s does not apply to rope_type dynamic with alpha "
                                   "(vLLM's DynamicNTKAlphaRotaryEmbedding does not read it)",
                                   unused[i].k);
    }
    return RL_OK;
}

const char *rope_precision_name(int precision)
{
    switch (precision) {
    case RL_ROPE_PREC_FP32: return "fp32";
    case RL_ROPE_PREC_TABLE: return "table";
    case RL_ROPE_PREC_PRECISE: return "precise";
    case RL_ROPE_PREC_HF: return "hf";
    case RL_ROPE_PREC_VLLM: return "vllm";
    case RL_ROPE_PREC_GGML_CPU: return "ggml-cpu";
    case RL_ROPE_PREC_GGML_VULKAN: return "ggml-vulkan";
    case RL_ROPE_PREC_CUDA_FAST: return "cuda-fast";
    }
    return NULL;
}

int rope_precision_parse(const char *name)
{
    for (int p = RL_ROPE_PREC_FP32; p < RL_ROPE_PREC_COUNT; p++)
        if (strcmp(name, rope_precision_name(p)) == 0)
            return p;
    return -1;
}

int rope_prec_is_emu(int precision)
{
    return precision >= RL_ROPE_PREC_HF && precision < RL_ROPE_PREC_COUNT;
}

const char *rope_dtype_name(int dtype)
{
    switch (dtype) {
    case RL_DTYPE_FP32: return "fp32";
    case RL_DTYPE_FP16: return "fp16";
    case RL_DTYPE_BF16: return "bf16";
    case RL_DTYPE_TF32: return "tf32";
    }
    return NULL;
}

int rope_dtype_parse(const char *name)
{
    for (int d = RL_DTYPE_FP32; d <= RL_DTYPE_BF16; d++)
        if (strcmp(name, rope_dtype_name(d)) == 0)
            return d;
    return -1;
}

const char *rope_trig_name(int trig)
{
    switch (trig) {
    case ROPE_TRIG_DEFAULT:
    case ROPE_TRIG_SLEEF: return "sleef";
    case ROPE_TRIG_DEVICE: return "device";
    }
    return NULL;
}

const char *rope_layout_name(int layout)
{
    return layout == RL_ROPE_LAYOUT_INTERLEAVED ? "interleaved" : "half";
}

int rope_layout_parse(const char *name)
{
    if (name && strcmp(name, rope_layout_name(RL_ROPE_LAYOUT_HALF)) == 0)
        return RL_ROPE_LAYOUT_HALF;
    if (name && strcmp(name, rope_layout_name(RL_ROPE_LAYOUT_INTERLEAVED)) == 0)
        return RL_ROPE_LAYOUT_INTERLEAVED;
    return -1;
}

int rope_trig_parse(const char *name)
{
    for (int t = ROPE_TRIG_SLEEF; t <= ROPE_TRIG_DEVICE; t++)
        if (strcmp(name, rope_trig_name(t)) == 0)
            return t;
    return -1;
}

/* The emulation keys: dtype, inv_freq_dtype and tf32 belong to the modes
 * that have them; ggml's modes take fp32/fp16 tensors and emulate the
 * unscaled rotation. Errors name the key. */
static rl_status rope_emu_validate(const rope_desc *r, rl_error *err)
{
    int emu = rope_prec_is_emu(r->precision);
    const char *pn = rope_precision_name(r->precision);
    if (r->dtype < RL_DTYPE_FP32 || r->dtype > RL_DTYPE_BF16)
        return rl_fail_key(err, RL_ERR_ARG, "dtype",
                           "dtype %d must be fp32, fp16 or bf16", r->dtype);
    if (r->dtype != RL_DTYPE_FP32 && !emu)
        return rl_fail_key(err, RL_ERR_ARG, "dtype",
                           "dtype %s needs an emulation precision (hf, vllm, "
                           "ggml-cpu, ggml-vulkan, cuda-fast); precision %s computes in fp32",
                           rope_dtype_name(r->dtype), pn);
    if (r->inv_freq_dtype != RL_DTYPE_FP32 && r->inv_freq_dtype != RL_DTYPE_BF16)
        return rl_fail_key(err, RL_ERR_ARG, "inv_freq_dtype",
                           "inv_freq_dtype must be fp32 or bf16");
    if (r->inv_freq_dtype != RL_DTYPE_FP32 && r->precision != RL_ROPE_PREC_HF)
        return rl_fail_key(err, RL_ERR_ARG, "inv_freq_dtype",
                           "inv_freq_dtype applies to precision hf only (not %s)", pn);
    if (r->tf32 && r->precision != RL_ROPE_PREC_HF)
        return rl_fail_key(err, RL_ERR_ARG, "tf32",
                           "tf32 applies to precision hf only (not %s)", pn);
    if (r->trig < ROPE_TRIG_DEFAULT || r->trig > ROPE_TRIG_DEVICE)
        return rl_fail_key(err, RL_ERR_ARG, "trig", "trig must be sleef or device");
    if (r->trig != ROPE_TRIG_DEFAULT && r->precision != RL_ROPE_PREC_HF &&
        r->precision != RL_ROPE_PREC_VLLM)
        return rl_fail_key(err, RL_ERR_ARG, "trig",
                           "trig applies to precision hf and vllm only (not %s)", pn);
    int ggml = r->precision == RL_ROPE_PREC_GGML_CPU || r->precision == RL_ROPE_PREC_GGML_VULKAN ||
               r->precision == RL_ROPE_PREC_CUDA_FAST;
    if (ggml && r->dtype == RL_DTYPE_BF16)
        return rl_fail_key(err, RL_ERR_ARG, "dtype",
                           "dtype bf16: precision %s emulates ggml's fp32 and fp16 "
                           "rope only", pn);
    /* ggml-cpu and ggml-vulkan: ggml's rope_yarn (freq_scale, ext_factor,
     * corr_dims) for linear and yarn; cuda-fast the default rotation only. */
    int yarn_ok = r->precision != RL_ROPE_PREC_CUDA_FAST &&
                  (r->rope_type == ROPE_TYPE_LINEAR || r->rope_type == ROPE_TYPE_YARN);
    if (ggml && r->rope_type != ROPE_TYPE_DEFAULT && !yarn_ok)
        return rl_fail_key(err, RL_ERR_ARG, "precision",
                           "precision %s emulates rope_type %s only (not %s)", pn,
                           r->precision == RL_ROPE_PREC_CUDA_FAST ? "default"
                                                                  : "default, linear and yarn",
                           rope_type_name(r->rope_type));
    if (ggml && r->rope_type == ROPE_TYPE_YARN && r->truncate < 0)
        return rl_fail_key(err, RL_ERR_ARG, "precision",
                           "precision %s: ggml_rope_yarn_corr_dims always floors and "
                           "ceils the correction range (truncate false is not ggml's)", pn);
    if (emu && r->dynamic_mode == ROPE_DYN_CACHE_CONSISTENT)
        return rl_fail_key(err, RL_ERR_ARG, "dynamic_mode",
                           "dynamic_mode cache_consistent: precision %s emulates one "
                           "inv_freq for every token; use fp32, table or precise", pn);
    return RL_OK;
}

/* A value that must be finite and >= 0 (0 = not given). */
static rl_status check_nonneg(const char *key, double v, rl_error *err)
{
    if (!isfinite(v) || v < 0)
        return rl_fail_key(err, RL_ERR_ARG, key, "%s %g must be a finite number >= 0", key, v);
    return RL_OK;
}

/* mRoPE's keys (rope.h): the sections cover the rotary pairs (HF splits
 * the whole cos/sin by them; vLLM asserts sum == rotary_dim / 2), the
 * position layout's own keys only with that layout. */
static rl_status mrope_validate(rope_desc *r, rl_error *err)
{
    uint32_t np = (rope_scaling_at(r->rope_type)->whole_head ? r->head_dim : r->rotary_dim) / 2;
    if (!r->n_mrope_section) {
        const char *k = r->mrope_interleaved ? "mrope_interleaved"
                        : r->mrope_positions ? "mrope_positions"
                        : r->n_mrope_image_grid ? "mrope_image_grid"
                        : r->mrope_text_before ? "mrope_text_before"
                        : r->spatial_merge_size ? "spatial_merge_size"
                        : r->mrope_positions_path[0] ? "mrope_positions_path" : NULL;
        if (k)
            return rl_fail_key(err, RL_ERR_ARG, k,
                               "%s applies to mRoPE only (give mrope_section)", k);
        return RL_OK;
    }
    const uint32_t *s = r->mrope_section;
    uint64_t sum = (uint64_t)s[0] + s[1] + s[2];
    if (sum != np)
        return rl_fail_key(err, RL_ERR_ARG, "mrope_section",
                           "mrope_section [%u, %u, %u] sums to %llu pairs; the "
                           "rotation has %u (rotary_dim/2): the sections must cover every pair",
                           s[0], s[1], s[2], (unsigned long long)sum, np);
    if (rope_prec_is_emu(r->precision))
        return rl_fail_key(err, RL_ERR_ARG, "mrope_section",
                           "mrope_section: precision %s (a framework emulation) "
                           "does not model mRoPE; use fp32, table or precise",
                           rope_precision_name(r->precision));
    if (r->dynamic_mode == ROPE_DYN_CACHE_CONSISTENT)
        return rl_fail_key(err, RL_ERR_ARG, "mrope_section",
                           "mrope_section: dynamic_mode cache_consistent (a length "
                           "per 1-D position) is not defined for 3-D positions; use recompute");
    int vl = r->mrope_positions == ROPE_MROPE_POS_VL, npy = r->mrope_positions == ROPE_MROPE_POS_NPY;
    if (!vl && (r->n_mrope_image_grid || r->mrope_text_before || r->spatial_merge_size)) {
        const char *k = r->n_mrope_image_grid ? "mrope_image_grid"
                        : r->mrope_text_before ? "mrope_text_before" : "spatial_merge_size";
        return rl_fail_key(err, RL_ERR_ARG, k, "%s applies to mrope_positions vl only", k);
    }
    if (!npy && r->mrope_positions_path[0])
        return rl_fail_key(err, RL_ERR_ARG, "mrope_positions_path",
                           "mrope_positions_path applies to mrope_positions npy only");
    if (npy && !r->mrope_positions_path[0])
        return rl_fail_key(err, RL_ERR_ARG, "mrope_positions",
                           "mrope_positions npy needs mrope_positions_path (a "
                           "[tokens][3] integer .npy)");
    if (vl) {
        uint32_t m = r->spatial_merge_size ? r->spatial_merge_size : 2;
        if (!r->n_mrope_image_grid)
            return rl_fail_key(err, RL_ERR_ARG, "mrope_positions",
                               "mrope_positions vl needs mrope_image_grid [t, h, w]");
        for (int i = 1; i < 3; i++)
            if (r->mrope_image_grid[i] % m)
                return rl_fail_key(err, RL_ERR_ARG, "mrope_image_grid",
                                   "mrope_image_grid[%d] %u must be a multiple of "
                                   "spatial_merge_size %u (HF merges m x m patches into one token)",
                                   i, r->mrope_image_grid[i], m);
        uint64_t n = (uint64_t)r->mrope_image_grid[0] * (r->mrope_image_grid[1] / m) *
                     (r->mrope_image_grid[2] / m);
        if (n + r->mrope_text_before > UINT32_MAX)
            return rl_fail_key(err, RL_ERR_ARG, "mrope_image_grid",
                               "mrope_image_grid: %llu image tokens after %u text "
                               "tokens exceed 2^32 - 1 positions", (unsigned long long)n,
                               r->mrope_text_before);
    }
    return RL_OK;
}

rl_status rope_desc_resolve(const rope_desc *d, rope_desc *out, rl_error *err)
{
    rope_desc r = *d;
    rl_status st;
    const rope_scaling *sc = rope_scaling_at(r.rope_type);
    if (!sc)
        return rl_fail_key(err, RL_ERR_ARG, "rope_type",
                           "rope_type %d is unknown (supported: %s)", r.rope_type,
                           rope_type_list());
    const char *tn = sc->name;
    if (r.head_dim == 0)
        return rl_fail_key(err, RL_ERR_ARG, "head_dim", "head_dim is required (got 0)");
    if (r.head_dim > ROPE_MAX_HEAD_DIM)
        return rl_fail_key(err, RL_ERR_ARG, "head_dim",
                           "head_dim %u exceeds the supported maximum %u", r.head_dim,
                           ROPE_MAX_HEAD_DIM);
    if ((st = check_nonneg("partial_rotary_factor", r.partial_rotary_factor, err)))
        return st;
    if (r.partial_rotary_factor > 1)
        return rl_fail_key(err, RL_ERR_ARG, "partial_rotary_factor",
                           "partial_rotary_factor %g must be in (0, 1]",
                           r.partial_rotary_factor);
    if (r.partial_rotary_factor > 0 && !sc->whole_head) {
        /* HF: dim = int(head_dim * partial_rotary_factor). */
        uint32_t rd = (uint32_t)((double)r.head_dim * r.partial_rotary_factor);
        if (r.rotary_dim != 0 && r.rotary_dim != rd)
            return rl_fail_key(err, RL_ERR_ARG, "rotary_dim",
                               "rotary_dim %u disagrees with partial_rotary_factor %g "
                               "(head_dim %u gives %u)",
                               r.rotary_dim, r.partial_rotary_factor, r.head_dim, rd);
        if (rd == 0)
            return rl_fail_key(err, RL_ERR_ARG, "partial_rotary_factor",
                               "partial_rotary_factor %g leaves no rotary dimension of head_dim %u",
                               r.partial_rotary_factor, r.head_dim);
        r.rotary_dim = rd;
    }
    if (r.rotary_dim == 0)
        r.rotary_dim = r.head_dim;
    if (r.rotary_dim % 2 != 0)
        return rl_fail_key(err, RL_ERR_ARG, "rotary_dim",
                           "rotary_dim %u must be even (it rotates pairs)", r.rotary_dim);
    if (r.rotary_dim > r.head_dim)
        return rl_fail_key(err, RL_ERR_ARG, "rotary_dim",
                           "rotary_dim %u exceeds head_dim %u", r.rotary_dim, r.head_dim);
    if (r.theta == 0)
        r.theta = ROPE_DEFAULT_THETA;
    if (!(r.theta > 1.0) || !isfinite(r.theta))
        return rl_fail_key(err, RL_ERR_ARG, "rope_theta",
                           "rope_theta %g must be a finite number > 1", r.theta);
    if (r.rotary_part != ROPE_PART_FIRST && r.rotary_part != ROPE_PART_LAST)
        return rl_fail_key(err, RL_ERR_ARG, "rotary_part", "rotary_part %d must be first (%d) or last (%d)",
                           r.rotary_part, ROPE_PART_FIRST, ROPE_PART_LAST);
    if (r.layout != RL_ROPE_LAYOUT_HALF && r.layout != RL_ROPE_LAYOUT_INTERLEAVED)
        return rl_fail_key(err, RL_ERR_ARG, "layout",
                           "layout %d must be half (%d) or interleaved (%d)", r.layout,
                           RL_ROPE_LAYOUT_HALF, RL_ROPE_LAYOUT_INTERLEAVED);
    if (!rope_precision_name(r.precision))
        return rl_fail_key(err, RL_ERR_ARG, "precision",
                           "precision %d must be fp32 (%d), table (%d), precise (%d) "
                           "or an emulation mode (%d..%d)", r.precision, RL_ROPE_PREC_FP32,
                           RL_ROPE_PREC_TABLE, RL_ROPE_PREC_PRECISE, RL_ROPE_PREC_HF,
                           RL_ROPE_PREC_COUNT - 1);
    if (!rope_dynamic_mode_name(r.dynamic_mode))
        return rl_fail_key(err, RL_ERR_ARG, "dynamic_mode",
                           "dynamic_mode %d must be recompute (%d) or cache_consistent "
                           "(%d)", r.dynamic_mode, ROPE_DYN_RECOMPUTE, ROPE_DYN_CACHE_CONSISTENT);
    if (r.dynamic_mode == ROPE_DYN_CACHE_CONSISTENT && !sc->length_dependent)
        return rl_fail_key(err, RL_ERR_ARG, "dynamic_mode",
                           "dynamic_mode cache_consistent applies to rope_type dynamic "
                           "and dynamic_yarn only (not %s)", tn);
    if (r.prompt_len && r.dynamic_mode != ROPE_DYN_CACHE_CONSISTENT)
        return rl_fail_key(err, RL_ERR_ARG, "prompt_len",
                           "prompt_len %u applies to dynamic_mode cache_consistent "
                           "only (every token of a recompute pass uses the length "
                           "in use)", r.prompt_len);
    if ((st = rope_emu_validate(&r, err)))
        return st;
    if ((st = rope_semantics_validate(&r, err)))
        return st;
    if ((st = mrope_validate(&r, err)))
        return st;

    const struct { const char *k; double v; } nn[] = {
        {"factor", r.factor}, {"beta_fast", r.beta_fast}, {"beta_slow", r.beta_slow},
        {"mscale", r.mscale}, {"mscale_all_dim", r.mscale_all_dim},
        {"attention_factor", r.attention_factor}, {"low_freq_factor", r.low_freq_factor},
        {"high_freq_factor", r.high_freq_factor},
    };
    for (size_t i = 0; i < sizeof nn / sizeof nn[0]; i++)
        if ((st = check_nonneg(nn[i].k, nn[i].v, err)))
            return st;
    if (r.factor != 0 && r.factor < 1)
        return rl_fail_key(err, RL_ERR_ARG, "factor", "factor %g must be >= 1", r.factor);

    /* the type's own rules (src/pe/scaling/NAME.c) */
    if (sc->resolve && (st = sc->resolve(&r, err)))
        return st;
    if (r.resonance_scope && !r.resonance)
        return rl_fail_key(err, RL_ERR_ARG, "resonance_scope",
                           "resonance_scope applies with resonance: true only");
    if (r.resonance) {
        if (r.resonance_scope == ROPE_RESONANCE_BELOW_TRAIN && !r.original_max_position_embeddings)
            r.original_max_position_embeddings = r.max_position_embeddings;
        if (r.resonance_scope == ROPE_RESONANCE_BELOW_TRAIN && !r.original_max_position_embeddings)
            return rl_fail_key(err, RL_ERR_ARG, "resonance_scope",
                               "resonance_scope below_train needs "
                               "original_max_position_embeddings (or "
                               "max_position_embeddings): the training length whose "
                               "shorter wavelengths are rounded");
        if (rope_prec_is_emu(r.precision))
            return rl_fail_key(err, RL_ERR_ARG, "resonance",
                               "resonance is not part of the framework emulation "
                               "mode %s (no framework implements it)",
                               rope_precision_name(r.precision));
    }
    *out = r;
    return RL_OK;
}

/* The frequencies of the resolved settings r at length n (the sequence
 * length in use; 0: not given): the type's formula (its registry entry's
 * freqs: inv_freq [np], effective base, attention factor), then Resonance
 * RoPE on top. np is rotary_dim/2 (head_dim/2 for a whole-head type). */
static void freqs_core(const rope_desc *r, uint64_t n, uint32_t np, double *inv, double *theta,
                       double *af)
{
    *af = 1.0;
    rope_scaling_at(r->rope_type)->freqs(r, n, np, inv, theta, af);
    /* Resonance RoPE (Wang et al. 2024, arXiv:2403.00071), on whatever the
     * type made of inv_freq: a pair gets the integer wavelength
     * round(lambda_j), lambda_j = 2pi/theta_j, theta_j' = 2pi/round(lambda_j),
     * so its rotation repeats exactly every round(lambda_j) positions. By
     * default every pair, as the authors' code computes it
     * (sheryc/resonance_rope, rotary_resonance.py
     * ResonanceRotaryEmbedding._register_buffers: r_wavelengths =
     * torch.round(2 pi / inv_freq), r_inv_freq = 2 pi / r_wavelengths, for
     * all dim/2 pairs; the YaRN variant rounds YaRN's blended inv_freq the
     * same way); resonance_scope below_train rounds only the wavelengths
     * below the training length L (pre-critical pairs: the paper's section
     * 4 reading). Zero (identity) frequencies are kept. round() is half away
     * from zero; torch.round is half to even: they differ only for a
     * wavelength of exactly k + 1/2, which pow never hits exactly. */
    if (r->resonance) {
        int all = r->resonance_scope == ROPE_RESONANCE_ALL;
        double L = r->original_max_position_embeddings;
        for (uint32_t j = 0; j < np; j++) {
            if (!(inv[j] > 0))
                continue;
            double wl = 2.0 * M_PI / inv[j], rwl = round(wl);
            if ((all || wl < L) && rwl >= 1)
                inv[j] = 2.0 * M_PI / rwl;
        }
    }
}

rl_status rope_freqs_compute(const rope_desc *d, rope_freqs *f, rl_error *err)
{
    rope_desc r;
    rl_status st = rope_desc_resolve(d, &r, err);
    if (st)
        return st;
    memset(f, 0, sizeof *f);
    f->head_dim = r.head_dim;
    f->rotary_dim = r.rotary_dim;
    f->n_pairs = r.rotary_dim / 2;
    f->layout = r.layout;
    f->rotary_part = r.rotary_part;
    f->precision = r.precision;
    f->dtype = r.dtype;
    f->inv_freq_dtype = r.inv_freq_dtype;
    f->tf32 = r.tf32;
    f->trig = r.trig == ROPE_TRIG_DEVICE ? ROPE_TRIG_DEVICE : ROPE_TRIG_SLEEF;
    f->rope_type = r.rope_type;
    f->base = r.theta;
    f->seq_len = r.seq_len;
    const rope_scaling *sc = rope_scaling_at(r.rope_type);
    f->factor = sc->factor_at ? sc->factor_at(&r, r.seq_len) : r.factor ? r.factor : 1.0;
    if (sc->whole_head) {
        f->rotary_dim = r.head_dim;
        f->n_pairs = r.head_dim / 2;
    }
    f->dynamic_mode = r.dynamic_mode;
    if (r.dynamic_mode == ROPE_DYN_CACHE_CONSISTENT)
        f->prompt_len = r.prompt_len && (!r.seq_len || r.prompt_len < r.seq_len) ? r.prompt_len
                                                                                : r.seq_len;
    f->desc = r;
    if (r.n_mrope_section) {
        f->mrope = r.mrope_interleaved ? ROPE_MROPE_INTERLEAVED : ROPE_MROPE_SECTIONS;
        memcpy(f->mrope_section, r.mrope_section, sizeof f->mrope_section);
    }
    freqs_core(&r, r.seq_len, f->n_pairs, f->inv_freq, &f->theta, &f->attention_factor);
    for (uint32_t j = 0; j < f->n_pairs; j++) {
        double unscaled = sc->whole_head
                              ? pow(r.theta, -(double)(2 * j) / r.head_dim)
                              : pow(r.theta, -(double)(2 * j) / (double)r.rotary_dim);
        f->scale[j] = f->inv_freq[j] > 0 ? unscaled / f->inv_freq[j] : 0.0;
    }
    return RL_OK;
}

int rope_freqs_per_position(const rope_freqs *f)
{
    const rope_scaling *sc = rope_scaling_at(f->rope_type);
    return f->dynamic_mode == ROPE_DYN_CACHE_CONSISTENT && sc && sc->length_dependent;
}

uint64_t rope_position_len(const rope_freqs *f, uint32_t p)
{
    if (!rope_freqs_per_position(f))
        return f->seq_len;
    uint64_t l = (uint64_t)p + 1;
    return l > f->prompt_len ? l : f->prompt_len;
}

void rope_freqs_at(const rope_freqs *f, uint32_t p, double *inv_freq, double *af)
{
    if (!rope_freqs_per_position(f)) {
        memcpy(inv_freq, f->inv_freq, f->n_pairs * sizeof *inv_freq);
        *af = f->attention_factor;
        return;
    }
    double theta;
    freqs_core(&f->desc, rope_position_len(f, p), f->n_pairs, inv_freq, &theta, af);
}

void rope_part_permute(const rope_freqs *f, float *x, uint64_t rows, int to_kernel)
{
    uint32_t d = f->head_dim, r = f->rotary_dim;
    if (f->rotary_part != ROPE_PART_LAST || r >= d || !rows)
        return;
    /* to the kernels: row = cat(x[o:], x[:o]), o = d - r (the rotated part
     * first); back: row = cat(x[r:], x[:r]). Both rotate the row left. */
    uint32_t shift = to_kernel ? d - r : r;
    float tmp[ROPE_MAX_HEAD_DIM];
    for (uint64_t i = 0; i < rows; i++) {
        float *row = x + i * d;
        memcpy(tmp, row, shift * sizeof *row);
        memmove(row, row + shift, (size_t)(d - shift) * sizeof *row);
        memcpy(row + (d - shift), tmp, shift * sizeof *row);
    }
}
