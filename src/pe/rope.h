/* rope.h — rotary position embedding (prefix rope_).
 *
 * Three parts, kept apart on purpose:
 *   frequencies (rope_freq.c): parameters -> inv_freq[] and attention factor,
 *       in double. The ONE function shared by the CPU reference and the GPU
 *       host side (conventions: the formula exists once).
 *   CPU reference (rope_ref.c): the rotation in double precision, plain loops
 *       written from the RoFormer formula; never touches Vulkan.
 *   GPU host side (rope_gpu.c): buffers, pipeline and dispatch of
 *       shaders/rope.comp.
 *
 * Tensors are [tokens][heads][head_dim], row-major, float32 on the device.
 * Positions are one unsigned integer per token (any order, any values). */
#ifndef ROPE_H
#define ROPE_H

#include <stddef.h>
#include <stdint.h>

#include "core/rl_param.h"
#include "core/rl_status.h"
#include "rl_push.h" /* RL_ROPE_LAYOUT_*, RL_ROPE_PREC_* */
#include "vk/rlvk.h"

#define ROPE_MAX_HEAD_DIM 1024
#define ROPE_MAX_PAIRS (ROPE_MAX_HEAD_DIM / 2)
#define ROPE_DEFAULT_THETA 10000.0
/* Slots of rope_desc.scaling_param: room for the registered scalings' own keys. */
#define ROPE_MAX_SCALING_PARAMS 16

/* Scaling types: Hugging Face transformers' `rope_type` values
 * (modeling_rope_utils.py), plus `ntk` (fixed NTK-aware base change).
 * Formulas, sources and HF-vs-paper differences: docs/rope.md. The types
 * are the entries of the scaling registry (pe/rope_scaling.h, one file per
 * type under src/pe/scaling/); these constants are the registry indices of
 * the built-in ones, which other modules compare against. A type added to
 * the registry needs no constant: its id is its index, and
 * ROPE_TYPE_COUNT is the registry's count (a run-time value: size no
 * static array by it). */
typedef enum rope_type {
    ROPE_TYPE_DEFAULT = 0, /* Su et al. 2021 */
    ROPE_TYPE_LINEAR,      /* position interpolation, Chen et al. 2023 */
    ROPE_TYPE_NTK,         /* fixed NTK-aware base change (bloc97) */
    ROPE_TYPE_DYNAMIC,     /* dynamic NTK (emozilla), needs seq_len */
    ROPE_TYPE_YARN,        /* Peng et al. 2023 (NTK-by-parts + attention factor) */
    ROPE_TYPE_LLAMA3,      /* Llama 3.1 wavelength bands */
    ROPE_TYPE_LONGROPE,    /* Ding et al. 2024 / Phi-3 short/long factors */
    ROPE_TYPE_PROPORTIONAL,/* HF "proportional" (Gemma 4): partial rotation, exponent over head_dim */
    ROPE_TYPE_DYNAMIC_YARN,/* YaRN with s = max(factor, N/L_orig) (jquesnelle/yarn "dynamic-yarn") */
    ROPE_TYPE_N_BUILTIN    /* the constants above; the registry may hold more */
} rope_type;

/* Number of registered scaling types (rope_scaling_count). */
size_t rope_scaling_count(void);
#define ROPE_TYPE_COUNT ((int)rope_scaling_count())

/* Name of a type ("yarn"); NULL when out of range. */
const char *rope_type_name(int type);
/* Parses a rope_type name (also accepts HF's legacy "type" values); returns
 * ROPE_TYPE_COUNT if unknown. */
int rope_type_parse(const char *name);
/* The registry's names: "default, linear, ntk, dynamic, yarn, llama3,
 * longrope, proportional, dynamic_yarn, ...". */
const char *rope_type_list(void);
/* The same joined by "|": the rope_type/type params' choices. */
const char *rope_type_choices(void);
/* 1 when key (a rope_param_table key) means something for scaling type `type`:
 * every key that is not a scaling's own (rope_theta, layout, precision,
 * seq_len, ...) applies to all types; a scaling's own keys (factor,
 * beta_fast, low_freq_factor, long_factor, ...) only to the types whose
 * formula reads them (HF modeling_rope_utils' keys per rope_type; the
 * registry entry's `keys`). The
 * rope family ignores the others, as HF does; the batch runner refuses
 * them, so that a sweep over types says which combination has no effect. */
int rope_type_uses_key(int type, const char *key);

/* How a length-dependent scaling (dynamic, dynamic_yarn) treats the tokens
 * of one sequence (docs/rope.md "Dynamic scalings and the KV cache"):
 *   recompute         every token rotated with the length N in use (one
 *                     forward pass over the whole sequence: HF prefill,
 *                     perplexity evaluation);
 *   cache_consistent  the token at position p rotated with the length of
 *                     the step that computed it, L(p) = max(p + 1, P):
 *                     a prefill of P tokens, then one token per step, keys
 *                     kept as cached (HF generation with a KV cache, #25104). */
#define ROPE_DYN_RECOMPUTE 0
#define ROPE_DYN_CACHE_CONSISTENT 1

/* Whose reading of a config (docs/rope.md "vLLM's readings"):
 *   hf    Hugging Face transformers' modeling_rope_utils.py (default);
 *   vllm  vLLM's rotary_embedding/ where it differs: dynamic is static (the
 *         base of length max_position_embeddings * factor, vLLM #3488) or,
 *         with alpha, HunYuan's base * alpha^(d/(d-2)); ntk is
 *         NTKScalingRotaryEmbedding (base * factor, inv_freq / factor^(2/d);
 *         with mixed_b the mixed-b divisors). Applies to dynamic and ntk. */
#define ROPE_RESONANCE_ALL 0
#define ROPE_RESONANCE_BELOW_TRAIN 1

#define ROPE_SEM_HF 0
#define ROPE_SEM_VLLM 1

/* Where a head's rotated dimensions sit in the caller's Q/K (rope_desc
 * rotary_part), when rotary_dim < head_dim:
 *   ROPE_PART_FIRST  dimensions 0 .. rotary_dim-1 (HF's partial rotary:
 *                    cat(rotated, pass) in apply_rotary_pos_emb);
 *   ROPE_PART_LAST   dimensions head_dim-rotary_dim .. head_dim-1
 *                    (DeepSeek-V2/V3 MLA: q = cat(q_nope, q_pe)).
 * The kernels and references rotate the first rotary_dim dimensions; a
 * LAST input is brought to that order at the data boundary by
 * rope_part_permute (exact: a permutation of each row's elements, applied
 * to Q and K alike, leaves every q.k unchanged). */
#define ROPE_PART_FIRST 0
#define ROPE_PART_LAST 1

/* cos/sin of the hf and vllm emulation modes (rope_desc trig):
 *   ROPE_TRIG_SLEEF   PyTorch's CPU cos/sin, SLEEF's xcosf_u1/xsinf_u1 (FMA
 *                     build) on both sides (shaders/rl_sleef.glsl,
 *                     src/pe/rope_sleef.c): the default;
 *   ROPE_TRIG_DEVICE  the device's cos/sin builtins (the CPU emulation
 *                     then rounds double cos/sin; check bounds the gap). */
#define ROPE_TRIG_DEFAULT 0
#define ROPE_TRIG_SLEEF 1
#define ROPE_TRIG_DEVICE 2

/* A RoPE configuration. Field names follow HF's rope_scaling/rope_parameters
 * keys. Zero fields mean "default" or "not given" (see rope_desc_resolve);
 * keys a type requires (e.g. llama3's low_freq_factor) are errors when 0. */
typedef struct rope_desc {
    uint32_t head_dim;     /* required, 2..ROPE_MAX_HEAD_DIM */
    uint32_t rotary_dim;   /* 0: from partial_rotary_factor, else head_dim; even, <= head_dim */
    double theta;          /* base (HF rope_theta); 0: 10000 */
    int layout;            /* RL_ROPE_LAYOUT_HALF (default) or _INTERLEAVED */
    int rotary_part;       /* ROPE_PART_FIRST (default) or _LAST: where the rotated dims sit */
    int precision;         /* RL_ROPE_PREC_FP32 (default), _TABLE, _PRECISE or an emulation mode */
    int dtype;             /* emulation modes: RL_DTYPE_FP32 (default), _FP16, _BF16 */
    int inv_freq_dtype;    /* hf: RL_DTYPE_FP32 (default) or _BF16 (a model cast with .to(bf16)) */
    int tf32;              /* hf: 1 = inv_freq and positions rounded to TF32 (matmul inputs) */
    int trig;              /* hf, vllm: ROPE_TRIG_DEFAULT (= sleef), _SLEEF or _DEVICE */

    int rope_type;         /* ROPE_TYPE_*; 0: default */
    double partial_rotary_factor;  /* 0: not given; rotary_dim = int(head_dim * it) */
    double factor;                 /* scaling factor, >= 1 (linear/ntk/dynamic/yarn/llama3/longrope/proportional) */
    uint32_t original_max_position_embeddings; /* pre-training length L_orig */
    uint32_t max_position_embeddings;          /* model's max length M (dynamic; yarn/longrope defaults) */
    uint32_t seq_len;      /* sequence length in use (dynamic, longrope); 0: not given */
    double beta_fast;      /* yarn; 0: 32 */
    double beta_slow;      /* yarn; 0: 1 */
    double mscale;         /* yarn; 0: not given */
    double mscale_all_dim; /* yarn; 0: not given */
    int truncate;          /* yarn correction range floor/ceil: 0 default (true), >0 true, <0 false */
    double attention_factor;       /* multiplies cos and sin; 0: derived per type */
    double low_freq_factor;        /* llama3, required */
    double high_freq_factor;       /* llama3, required */
    uint32_t n_short_factor, n_long_factor;   /* longrope list lengths (must be rotary_dim/2) */
    double short_factor[ROPE_MAX_PAIRS];      /* [n_short_factor] */
    double long_factor[ROPE_MAX_PAIRS];       /* [n_long_factor] */
    int dynamic_mode;      /* ROPE_DYN_*; 0: recompute (dynamic, dynamic_yarn only) */
    uint32_t prompt_len;   /* cache_consistent: prefill length P; 0: seq_len (pure prefill) */
    int semantics;         /* ROPE_SEM_*; 0: hf */
    double alpha;          /* semantics vllm, dynamic: HunYuan's NTK alpha; 0: not given */
    double mixed_b;        /* semantics vllm, ntk: vLLM's mixed-NTK exponent b; 0: not given */
    int resonance;         /* Resonance RoPE (Wang et al. 2024): 1 = after the type's scaling,
                            * theta_j -> 2pi/round(2pi/theta_j) for the pairs of resonance_scope */
    int resonance_scope;   /* ROPE_RESONANCE_ALL (0): every pair, as the authors' code
                            * (sheryc/resonance_rope); ROPE_RESONANCE_BELOW_TRAIN: only wavelengths
                            * below L_train = original_max_position_embeddings (else
                            * max_position_embeddings), the paper's section 4 reading */
    /* The registered scalings' own keys (pe/rope_scaling.h rope_scaling_key):
     * scaling_param[k] is the value of the key declaring slot k, as given
     * (0: not given); the type's resolve fills its defaults in. */
    double scaling_param[ROPE_MAX_SCALING_PARAMS];
    /* Multimodal RoPE (Qwen2-VL / Qwen3-VL; docs/encodings.md "mRoPE"):
     * three position streams (t, h, w) per token; pair j rotated by the
     * position of stream rope_mrope_stream(j). n_mrope_section 0: off. */
    uint32_t n_mrope_section;      /* 0 or 3 */
    uint32_t mrope_section[3];     /* rotary pairs per stream (t, h, w), summing to rotary_dim/2 */
    int mrope_interleaved;         /* 1: Qwen3-VL's interleaving by pair index */
    int mrope_positions;           /* ROPE_MROPE_POS_*: how a 1-D token index becomes (t, h, w) */
    uint32_t n_mrope_image_grid;   /* 0 or 3 */
    uint32_t mrope_image_grid[3];  /* vl: HF image_grid_thw (t, h, w patches before merging) */
    uint32_t mrope_text_before;    /* vl: text tokens before the image */
    uint32_t spatial_merge_size;   /* vl: HF spatial_merge_size; 0: 2 */
    char mrope_positions_path[512];/* npy: [tokens][3] integer file (read by the family, pe_rope.c) */
} rope_desc;

/* How the 1-D position p a caller gives (a token index) becomes the token's
 * 3-D position (t, h, w) (rope_mrope_positions):
 *   text  (p, p, p) — a text token; plain RoPE exactly;
 *   vl    HF Qwen2-VL get_rope_index for text_before text tokens, one image
 *         of grid (t, h/m, w/m) after merging (m = spatial_merge_size), then
 *         text continuing from the largest image position + 1;
 *   npy   row p of a [tokens][3] table read from mrope_positions_path. */
#define ROPE_MROPE_POS_TEXT 0
#define ROPE_MROPE_POS_VL 1
#define ROPE_MROPE_POS_NPY 2

/* Effective rotation: what the kernel and the reference both consume. */
typedef struct rope_freqs {
    uint32_t head_dim, rotary_dim, n_pairs;  /* n_pairs = rotary_dim / 2 */
    int layout;
    int rotary_part;                         /* ROPE_PART_*: the caller's order (rope_part_permute) */
    int precision;                           /* RL_ROPE_PREC_* */
    int dtype, inv_freq_dtype, tf32;         /* emulation modes (rope_desc) */
    int trig;                                /* hf, vllm: ROPE_TRIG_* (never _DEFAULT here) */
    int rope_type;                           /* ROPE_TYPE_* */
    uint32_t seq_len;                        /* length used (dynamic/longrope), 0 if none */
    double base;                             /* configured rope_theta */
    double theta;                            /* effective base (ntk/dynamic change it) */
    double factor;                           /* factor used (after HF's defaults), 1 if none */
    double attention_factor;                 /* multiplies cos and sin (logits scale by its square) */
    double inv_freq[ROPE_MAX_PAIRS];         /* [n_pairs], theta_j, pair order */
    double scale[ROPE_MAX_PAIRS];            /* [n_pairs] base^(-2j/rotary_dim) / inv_freq[j]; 0 where inv_freq is 0 */
    /* cache_consistent (rope_freqs_per_position): inv_freq, theta and
     * attention_factor above are those of length seq_len (what `freqs`
     * shows); each token's own come from rope_freqs_at. */
    int dynamic_mode;                        /* ROPE_DYN_* */
    uint32_t prompt_len;                     /* P in effect (min(prompt_len, seq_len)); 0 if none */
    rope_desc desc;                          /* the resolved settings (rope_freqs_at recomputes) */
    int mrope;                               /* ROPE_MROPE_*: 0 off, sections or interleaved */
    uint32_t mrope_section[3];               /* pairs per stream (t, h, w) when mrope */
} rope_freqs;

/* mRoPE kinds (rope_freqs.mrope; also the shader's MROPE constant). */
#define ROPE_MROPE_OFF 0
#define ROPE_MROPE_SECTIONS 1    /* Qwen2-VL: contiguous sections t | h | w */
#define ROPE_MROPE_INTERLEAVED 2 /* Qwen3-VL: h at j%3==1, w at j%3==2 within 3*section */

/* The stream (0 = t, 1 = h, 2 = w) whose position rotates pair j of an mRoPE
 * f; 0 for every pair of a plain one. From HF: sections (Qwen2-VL
 * apply_multimodal_rotary_pos_emb, cos.split(mrope_section * 2)): j <
 * s_t -> t, j < s_t + s_h -> h, else w; interleaved (Qwen3-VL
 * apply_interleaved_mrope): h when j % 3 == 1 and j < 3 s_h, w when j % 3
 * == 2 and j < 3 s_w, else t. */
uint32_t rope_mrope_stream(const rope_freqs *f, uint32_t j);
/* 1 when f's score depends on token indices only through their difference
 * (a shift of every index leaves it unchanged): not per position, and for
 * mRoPE only with the text layout (vl and npy map indices to 3-D positions
 * that do not shift with them). */
int rope_freqs_index_relative(const rope_freqs *f);
/* Number of tokens of the vl layout's image (t * (h/m) * (w/m)); 0 when the
 * layout is not vl. */
uint64_t rope_mrope_image_tokens(const rope_freqs *f);
/* The 3-D positions of tokens at 1-D indices idx[tokens] in f's
 * mrope_positions layout: pos3 [tokens][3] (t, h, w), caller-owned. table
 * [rows][3] is the npy layout's (NULL otherwise). Errors (RL_ERR_ARG) name
 * the index and the limit: an index past the table's rows, a position past
 * 2^32 - 1. A plain f (or layout text) gives (p, p, p). */
rl_status rope_mrope_positions(const rope_freqs *f, const uint32_t *table, uint64_t rows,
                               const uint32_t *idx, size_t tokens, uint32_t *pos3,
                               rl_error *err);

/* Validates d and fills defaults into *out (types' required keys, factor >= 1,
 * finite non-negative values, list lengths). Errors name the key and the
 * expected value: "rotary_dim 5 must be even", "yarn needs factor", and
 * carry the key they are about in err->key ("rotary_dim", "factor"). */
rl_status rope_desc_resolve(const rope_desc *d, rope_desc *out, rl_error *err);

/* THE parameter -> frequency function (shared by the CPU reference and the
 * GPU host side): inv_freq and attention factor of every scaling type, as
 * Hugging Face transformers computes them (semantics vllm: as vLLM does),
 * in double. */
rl_status rope_freqs_compute(const rope_desc *d, rope_freqs *f, rl_error *err);

/* 1 when each token of f has its own rotation (dynamic_mode
 * cache_consistent on dynamic or dynamic_yarn), else 0. */
int rope_freqs_per_position(const rope_freqs *f);
/* The sequence length the token at position p was rotated with:
 * cache_consistent max(p + 1, P) (P = f->prompt_len); otherwise seq_len. */
uint64_t rope_position_len(const rope_freqs *f, uint32_t p);
/* The rotation of the token at position p, from the same formula as
 * rope_freqs_compute at length rope_position_len(f, p): inv_freq [n_pairs]
 * and the attention factor *af. For a rotation that is not per position it
 * copies f's. (The one parameter -> frequency function, per position.) */
void rope_freqs_at(const rope_freqs *f, uint32_t p, double *inv_freq, double *af);
/* Name of a dynamic mode ("recompute"); parse returns -1 if unknown. */
const char *rope_dynamic_mode_name(int mode);
int rope_dynamic_mode_parse(const char *name);
/* Name of a semantics ("hf", "vllm"); parse returns -1 if unknown. */
const char *rope_semantics_name(int semantics);
int rope_semantics_parse(const char *name);

/* ---- configuration from JSON (src/pe/rope_hf.c) ----------------------- */

struct json_t;
/* Sets one key of d from a JSON value. Keys: HF's rope_scaling names
 * (rope_type/type, factor, original_max_position_embeddings, beta_fast, ...)
 * plus rope_theta, head_dim, rotary_dim, partial_rotary_factor,
 * max_position_embeddings, seq_len, layout ("half"/"interleaved"), precision
 * ("fp32"/"table"/"precise"), and every registered scaling's own keys
 * (pe/rope_scaling.h rope_scaling_key: a number in (0, max] into its
 * scaling_param slot). A JSON null leaves the default; any other value,
 * 0 included, is validated (rope_theta > 1, partial_rotary_factor in (0, 1],
 * factor >= 1, mscale/mscale_all_dim >= 0, every other number > 0, integers
 * >= 1, rotary_dim >= 2). Errors name the key and the expected value, and
 * carry it in err->key; unknown keys are errors. */
rl_status rope_desc_set_json(rope_desc *d, const char *key, const struct json_t *value,
                             rl_error *err);
/* Applies every key of a JSON object (an HF rope_scaling/rope_parameters dict,
 * optionally with rope_theta, head_dim, ...) with rope_desc_set_json. */
rl_status rope_desc_from_json(rope_desc *d, const struct json_t *obj, rl_error *err);
/* Whole HF config.json files: src/pe/hf_model.h (hfm_load), the one reader. */

/* The settable keys rope_desc_set_json accepts besides head_dim (HF names,
 * "type" as the alias of rope_type): the one list of RoPE keys, in the house
 * schema (core/rl_param.h): the common keys, then each registered scaling's
 * own keys (rope_scaling_key), built once at first use. The registry's
 * family rope declares exactly it. Returns the table; *n its length. */
const rl_param *rope_param_table(size_t *n);

/* The keys of d that differ from their defaults, as the JSON object the
 * rope encoding's parameters take (head_dim left out: it comes from the
 * shape). New reference; NULL when out of memory. */
struct json_t *rope_desc_to_json(const rope_desc *d);

/* Name of a precision mode ("fp32"); parse returns -1 if unknown. */
const char *rope_precision_name(int precision);
int rope_precision_parse(const char *name);
/* 1 if precision is one of the framework emulation modes. */
int rope_prec_is_emu(int precision);
/* Name of a dtype ("bf16"), NULL if unknown; parse returns -1. */
const char *rope_dtype_name(int dtype);
int rope_dtype_parse(const char *name);
/* Name of a ROPE_TRIG_* ("sleef", "device"; _DEFAULT is sleef's), NULL if
 * unknown; parse returns -1 for any other name. */
const char *rope_trig_name(int trig);
int rope_trig_parse(const char *name);
/* The pair layout's one spelling ("half": rotate_half, NeoX; "interleaved":
 * rotate_every_two, GPT-J), for RL_ROPE_LAYOUT_*; parse gives the layout,
 * or -1 for any other word. */
const char *rope_layout_name(int layout);
int rope_layout_parse(const char *name);

/* Reorders rows of a ROPE_PART_LAST caller's Q/K ([rows][head_dim] float32,
 * in place) between the caller's order and the kernels' (rotated part
 * first): to_kernel 1 moves dimensions head_dim-rotary_dim.. to the front
 * (row = cat(x[o:], x[:o]), o = head_dim - rotary_dim), 0 moves them back.
 * A no-op for ROPE_PART_FIRST or rotary_dim == head_dim. The permutation
 * is exact (no arithmetic). */
void rope_part_permute(const rope_freqs *f, float *x, uint64_t rows, int to_kernel);

/* ---- CPU reference (double) ------------------------------------------- */

/* y = R(pos) x for every token and head, in double:
 *   half:        (x_j, x_{j+r/2}) rotated by pos*theta_j
 *   interleaved: (x_{2j}, x_{2j+1}) rotated by pos*theta_j
 * dimensions >= rotary_dim copied. x: [tokens][heads][head_dim] float32,
 * pos: [tokens], y: [tokens][heads][head_dim] double (caller-owned). */
void rope_ref_apply(const rope_freqs *f, const float *x, const uint32_t *pos, size_t tokens,
                    uint32_t heads, double *y);

/* mRoPE (f->mrope set, or plain: every stream alike): pair j of token t
 * rotated by pos3[t][rope_mrope_stream(f, j)] * theta_j; otherwise as
 * rope_ref_apply. pos3: [tokens][3] (t, h, w). Not for per-position
 * rotations (refused with mRoPE by rope_desc_resolve). */
void rope_ref_apply3(const rope_freqs *f, const float *x, const uint32_t *pos3, size_t tokens,
                     uint32_t heads, double *y);

/* The same in double input (used by property tests). */
void rope_ref_apply_d(const rope_freqs *f, const double *x, const uint32_t *pos, size_t tokens,
                      uint32_t heads, double *y);

/* Index of the partner dimension of dimension i < rotary_dim, and whether i
 * is the first ("a") member of its pair; pair index in *pair. */
uint32_t rope_partner(const rope_freqs *f, uint32_t i, int *is_first, uint32_t *pair);

/* Per-element bound |y_gpu - y_ref| of the kernel in f's precision mode, and
 * the scale of the relative error (the pair magnitude s*(|x_a|+|x_b|), s the
 * attention factor). fp32: s*M*(|phi|*2^-23 + 2^-11) + 4 ulp(s*M) (fp32
 * angle rounding + Vulkan's 2^-11 sin/cos bound); table and precise: 4 ulp
 * of s*M; pass-through dimensions 0 (bit-exact). Derivations in
 * rope_bound.c. x: [tokens][heads][head_dim] f32; bound, scale: same shape. */
void rope_error_bounds(const rope_freqs *f, const float *x, const uint32_t *pos, size_t tokens,
                       uint32_t heads, double *bound, double *scale);

/* ---- GPU host side ------------------------------------------------------ */

/* Pipelines specialised per shape (layout, head_dim, rotary_dim, heads),
 * precision mode and variant (vec4 when head_dim % 4 == 0 and rotary_dim % 8
 * == 0), created on first use and kept until rope_kernel_destroy. */
#define ROPE_KERNEL_MAX_PIPES 96
typedef struct rope_kernel_pipe {
    int layout, vec4, precision, dtype, per_token, mrope;
    uint32_t emu_flags;
    uint32_t mrope_section[3];   /* mrope != 0: the sections it is specialised for */
    uint32_t head_dim, rotary_dim, heads;
    int texel;                   /* x read through a texel view (rope_gpu.c use_texel) */
    rlvk_pipeline pipe;
} rope_kernel_pipe;

typedef struct rope_kernel {
    rlvk_device *dev;
    int test_storage_reads;      /* test hook: 1 reads x from the storage buffer where a CPU
                                    device would read it as texels */
    uint32_t n_pipes;
    rope_kernel_pipe pipes[ROPE_KERNEL_MAX_PIPES];
} rope_kernel;

rl_status rope_kernel_create(rlvk_device *dev, rope_kernel *k, rl_error *err);
void rope_kernel_destroy(rlvk_device *dev, rope_kernel *k);

/* Device-resident operands of one RoPE launch. */
typedef struct rope_gpu_io {
    const rlvk_buffer *x;    /* [tokens][heads][head_dim] f32 */
    const rlvk_buffer *y;    /* same shape, may equal x (in place) */
    const rlvk_buffer *pos;  /* [tokens] u32 */
    const rlvk_buffer *pos3; /* mRoPE f: [tokens][3] u32 (t, h, w) read instead of pos; NULL:
                              * pos, every stream alike (= plain RoPE) */
    const rlvk_buffer *freq; /* [n_pairs] f32, or per position [tokens][n_pairs] + [tokens]
                              * attention factors (rope_gpu_upload_freqs) */
    const rlvk_buffer *angles; /* table/precise modes, from rope_gpu_upload_angles; NULL in fp32 */
    const rlvk_buffer *angle_dump; /* emulation modes: [tokens][n_pairs] f32 angles out; NULL: none */
    uint64_t tokens;
    uint32_t heads;
} rope_gpu_io;

/* Refuses shapes beyond the device's limits (message names the limit). */
rl_status rope_gpu_check_shape(const rlvk_device *dev, const rope_freqs *f, uint64_t tokens,
                               uint32_t heads, rl_error *err);
/* Creates and fills the fp32 inv_freq buffer for f (padded to a vec4):
 * [n_pairs]; when f is per position (rope_freqs_per_position) each token's
 * own [tokens][n_pairs] inv_freq (from rope_freqs_at in double, rounded to
 * fp32) followed by the [tokens] attention factors (pos: [tokens]; unused
 * otherwise, may be NULL). */
rl_status rope_gpu_upload_freqs(rlvk_device *dev, const rope_freqs *f, const uint32_t *pos,
                                uint64_t tokens, rlvk_buffer *buf, rl_error *err);
/* Creates and fills the buffer f's precision mode reads besides inv_freq:
 *   table:   [tokens][n_pairs] vec2 f32 (cos, sin) * attention factor of
 *            pos[t] * inv_freq[j], computed in double (pos: [tokens]); for
 *            the vec4 kernel (head_dim % 4 == 0, rotary_dim % 8 == 0) in
 *            quads of pairs, [tokens][n_pairs/4] (4 cos, then 4 sin);
 *   precise: [n_pairs] uvec2, frac(inv_freq[j] / 2pi) as a 64-bit binary
 *            fraction (lo word first); pos unused; per position
 *            [tokens][n_pairs] uvec2 of each token's inv_freq;
 *   fp32:    a 16-byte placeholder. */
rl_status rope_gpu_upload_angles(rlvk_device *dev, const rope_freqs *f, const uint32_t *pos,
                                 uint64_t tokens, rlvk_buffer *buf, rl_error *err);
/* The same for mRoPE with 3-D positions pos3 [tokens][3]: the table's angle
 * of pair j is pos3[t][rope_mrope_stream(f, j)] * inv_freq[j]. */
rl_status rope_gpu_upload_angles3(rlvk_device *dev, const rope_freqs *f, const uint32_t *pos3,
                                  uint64_t tokens, rlvk_buffer *buf, rl_error *err);
/* 1 when a launch of f over `rows` rows (tokens x heads) reads x through
 * a texel view (the vec4 variant on a CPU device, the tensor within one
 * view); 0 when it reads the storage buffer. */
int rope_gpu_texel_reads(const rope_kernel *k, const rope_freqs *f, uint64_t rows);
/* Records one launch into cmd (one descriptor set). */
rl_status rope_gpu_record(rlvk_cmd *cmd, rope_kernel *k, const rope_freqs *f,
                          const rope_gpu_io *io, rl_error *err);

/* Convenience: upload x and pos, run, download y (all host arrays of the
 * shapes above). *gpu_ns receives the kernel's GPU time, or -1 without
 * timestamps. y gets `guard` extra floats after the tensor pre-filled with a
 * sentinel; *guard_ok is 0 if the kernel wrote into them. */
rl_status rope_gpu_apply(rlvk_device *dev, rope_kernel *k, const rope_freqs *f,
                         const float *x, const uint32_t *pos, uint64_t tokens, uint32_t heads,
                         float *y, double *gpu_ns, int *guard_ok, rl_error *err);

/* rope_gpu_apply with 3-D positions pos3 [tokens][3] (an mRoPE f). */
rl_status rope_gpu_apply3(rlvk_device *dev, rope_kernel *k, const rope_freqs *f,
                          const float *x, const uint32_t *pos3, uint64_t tokens, uint32_t heads,
                          float *y, double *gpu_ns, int *guard_ok, rl_error *err);

/* rope_gpu_apply plus, in the emulation modes, the angles the device handed
 * to cos/sin: angles [tokens][n_pairs] f32 (caller-owned; NULL: not asked). */
rl_status rope_gpu_apply_dump(rlvk_device *dev, rope_kernel *k, const rope_freqs *f,
                              const float *x, const uint32_t *pos, uint64_t tokens,
                              uint32_t heads, float *y, float *angles, double *gpu_ns,
                              int *guard_ok, rl_error *err);

/* ---- framework emulation (src/pe/rope_emu.c) ---------------------------- *
 * The CPU side of the emulation modes: the same fp32 arithmetic as
 * shaders/rope_emu.glsl, written in C (c_std=c11: no FP contraction). */

/* v rounded to nearest-even in dtype (RL_DTYPE_*), returned as the fp32
 * value; NaN gives the canonical quiet NaN. Computed in double with rint
 * (independent of the shader's integer method). */
float rope_emu_round(int dtype, float v);
/* The fp32 per-pair factor the kernel reads (binding 3) in f's emulation
 * mode: hf/vllm inv_freq as the framework computes it in fp32, ggml-cpu and
 * ggml-vulkan theta_scale = powf(base, -2/rotary_dim), cuda-fast
 * powf(theta_scale, j). out: [n_pairs]. */
void rope_emu_factors(const rope_freqs *f, float *out);
/* The inv_freq framework fw (RL_ROPE_PREC_HF or _VLLM) computes for f, in
 * its own float32 program (the scaling registry's emu_freqs) into out
 * [n_pairs]; returns 1, or 0 when fw has none for f's type (or f has
 * Resonance or mRoPE): out is then f's double inv_freq rounded to float32. */
int rope_emu_program(const rope_freqs *f, int fw, float *out);
/* ggml's rope_yarn in the ggml-cpu / ggml-vulkan modes for rope_type linear
 * and yarn (ggml/src/ggml-cpu/ops.cpp rope_yarn, ggml_rope_yarn_corr_dims):
 * returns 1 and, in ggml's fp32 arithmetic, freq_scale = 1/factor,
 * ramp_mix[n_pairs] = rope_yarn_ramp(corr_dims, 2j) * ext_factor (ext_factor
 * 1 for yarn, 0 for linear) and mscale = attn_factor * (1 + 0.1 logf(1 /
 * freq_scale)) (yarn; attn_factor = the type's attention factor over
 * get_mscale(factor), 1 unless set) or attn_factor (linear); 0 for every
 * other mode and type (ramp_mix untouched, *mscale = fp32 attention
 * factor). Any output pointer may be NULL. */
int rope_emu_yarn(const rope_freqs *f, float *freq_scale, float *ramp_mix, float *mscale);
/* 1 when f's mode takes cos/sin from SLEEF (hf, vllm with trig sleef, the
 * default): device and CPU emulation then agree bit for bit. */
int rope_emu_sleef(const rope_freqs *f);
/* The fp32 angle of pair j at position p in f's mode (ggml-vulkan: with the
 * host's powf, which the device's pow only approximates). */
float rope_emu_angle(const rope_freqs *f, uint32_t p, uint32_t j);
/* The mode's whole computation on the CPU: y [tokens][heads][head_dim]
 * (dtype values as f32), angles [tokens][n_pairs] out (NULL: not asked).
 * use_angles (NULL: own) supplies the angles instead (ggml-vulkan: the
 * device's, whose pow differs). x: [tokens][heads][head_dim] f32. */
void rope_emu_apply(const rope_freqs *f, const float *x, const uint32_t *pos, size_t tokens,
                    uint32_t heads, const float *use_angles, float *y, float *angles);
/* Bound of |device - CPU emulation| per element when both use the same
 * angles: 0 when both take SLEEF's cos/sin (rope_emu_sleef); else only the
 * device's cos/sin (Vulkan 2^-11) and the dtype roundings they can flip
 * differ (rope_emu.c derives it). bound: same shape as x. */
void rope_emu_bounds(const rope_freqs *f, const float *x, size_t tokens, uint32_t heads,
                     double *bound);
/* Bound of the device's ggml-vulkan angle against the host-powf angle
 * (Vulkan's pow precision); 0 for the bit-exact modes. */
double rope_emu_angle_bound(const rope_freqs *f, uint32_t p, uint32_t j);
/* Relative error bound of the mode's fp32 angle of pair j against the exact
 * p * inv_freq_j (used by rope_error_bounds in the emulation modes). */
double rope_emu_angle_rel(const rope_freqs *f, uint32_t j);
/* Rounds n fp32 bit patterns to dtype on the device (shaders/round.comp):
 * out[i] = fp32 bits of the bf16/tf32 value, or the 16 fp16 bits. */
rl_status rope_emu_gpu_round(rlvk_device *dev, int dtype, const uint32_t *in, uint32_t n,
                             uint32_t *out, rl_error *err);

#endif
