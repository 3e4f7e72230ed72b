/* pe.h — the encoding registry (prefix pe_).
 *
 * Every position encoding is one registry entry (a pe_family, one source
 * file src/pe/<name>.c plus its shaders, and one line in pe.c's table):
 *   - its name, title and source paper;
 *   - what it acts on: the q/k vectors (RoPE family, additive absolute
 *     tables), the attention logits as a bias depending on (i, j) (T5,
 *     ALiBi, Transformer-XL position terms), or both;
 *   - a parameter table (key, type, default, help, range/choices); the
 *     parameters of one encoding are ONE jansson object, so YAML configs,
 *     `--set key=value` and HF config.json all map onto the same thing;
 *   - a CPU reference in double of its vector transform and of its bias;
 *   - its GPU part: a kernel recorded into an rlvk_cmd for the vector
 *     transform, and for biases the buffers read by shaders/bias_NAME.glsl,
 *     whose rl_bias() the attention engine includes (docs/attention.md "Bias hook"), so a
 *     bias is computed on the fly and never stored as an N x N matrix.
 *
 * Logit convention (docs/attention.md "Bias hook"): logit(h, i, j) = scale * <q'_i, k'_j>
 * + bias(h, i, j), r = pos_j - pos_i (key minus query, as HF T5), kv head
 * kvh = h / (heads / kv_heads).
 *
 * Random tables (learned, T5 biases, XL u/v/W_R) are drawn from rl_rng
 * seeded with (seed, "<encoding>/<tensor>") — see pe_rng_seed — in row-major
 * order of the tensor's documented shape, as sigma * N(0, 1): the same
 * config gives the same numbers on every machine. */
#ifndef PE_H
#define PE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/rl_param.h"
#include "core/rl_status.h"
#include "core/rl_util.h"
#include "vk/rlvk.h"

/* What an encoding acts on (bit set). */
enum { PE_ACTS_VECTORS = 1, PE_ACTS_LOGITS = 2 };

/* Parameters are the house schema (core/rl_param.h): one type and one
 * validator for encodings, experiment kinds and runner sections. */
typedef rl_param pe_param;

/* The model shape an encoding is created for. */
typedef struct pe_shape {
    uint32_t head_dim;       /* required, >= 1 */
    uint32_t heads;          /* 0: 1 */
    uint32_t kv_heads;       /* 0: heads; must divide heads */
    uint64_t seed;           /* of random tables; 0: 1 */
    uint64_t max_positions;  /* positions the caller will use are 0 .. max_positions - 1
                                (a count, e.g. the sequence length); 0: unknown */
} pe_shape;

typedef struct pe_encoding pe_encoding;  /* opaque resolved encoding */
typedef struct pe_family pe_family;

/* Which operand a vector transform is applied to. Every encoding but a few
 * transforms q and k alike; xpos scales q by zeta^((m-c)/scale_base) and k
 * by zeta^(-(n-c)/scale_base), so callers that transform keys say so
 * (pe_vec_ref_role, pe_vec_bound_role, pe_vec_gpu_create_role). */
typedef enum pe_role { PE_ROLE_Q = 0, PE_ROLE_K = 1 } pe_role;

/* GPU data of an encoding's logit bias: which shader variant, and buffers
 * bound at 8..8+n_buffers-1. Filled by pe_bias_gpu_create, freed by
 * pe_bias_gpu_destroy. (docs/attention.md "Bias hook") */
typedef struct pe_bias_gpu {
    const char *variant;          /* pe_bias_variant(): "none" or the family name */
    uint32_t n_buffers;           /* 0..4 */
    rlvk_buffer buffers[4];       /* bound at bindings 8.. */
} pe_bias_gpu;

/* Device side of an encoding's vector transform (pipelines + uploaded
 * tables/frequencies), from pe_vec_gpu_create. */
typedef struct pe_vec_gpu {
    rlvk_device *dev;
    const pe_encoding *e;
    uint32_t heads;
    pe_role role;                 /* the operand this state transforms (q or k) */
    void *impl;                   /* the family's state; owned */
} pe_vec_gpu;

/* Per-family operations (every pointer may be NULL where it does not
 * apply; a NULL vector op is the identity, a NULL bias op is bias 0). */
typedef struct pe_ops {
    /* Validates the resolved params against the shape, loads/draws tables
     * into e's state (pe_encoding_set_state). */
    rl_status (*create)(pe_encoding *e, rl_error *err);
    void (*destroy)(pe_encoding *e);
    /* Positions acceptable to the vector transform (learned: beyond policy). */
    rl_status (*vec_check)(const pe_encoding *e, const uint32_t *pos, size_t tokens,
                           rl_error *err);
    /* CPU reference: x [tokens][heads][head_dim] f32, pos [tokens],
     * y [tokens][heads][head_dim] double. Positions already vec_check'ed.
     * Row-wise (vec_bound too): row t of y depends on row t of x and pos[t]
     * alone, so callers may compute it a block of tokens at a time
     * (exp_attn.c operand_fetch does for long keys). */
    void (*vec_ref)(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                    uint32_t heads, double *y);
    /* Per-element absolute error bound of the GPU kernel vs vec_ref, and the
     * scale of the relative error (same shapes as x). */
    void (*vec_bound)(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                      uint32_t heads, double *bound, double *scale);
    rl_status (*vec_gpu_create)(pe_vec_gpu *g, rl_error *err);
    /* Host-side data the next recorded launch needs that depends on the
     * positions (rope table mode: the cos/sin table), uploaded here so that
     * recording never transfers (see pe_vec_gpu_prepare). NULL: none. */
    rl_status (*vec_gpu_prepare)(pe_vec_gpu *g, const uint32_t *pos, uint64_t tokens,
                                 rl_error *err);
    rl_status (*vec_gpu_record)(rlvk_cmd *cmd, pe_vec_gpu *g, const rlvk_buffer *x,
                                const rlvk_buffer *y, const rlvk_buffer *pos, uint64_t tokens,
                                rl_error *err);
    void (*vec_gpu_destroy)(pe_vec_gpu *g);
    /* CPU reference of bias(h, i, j) (see pe_bias_ref). */
    double (*bias_ref)(const pe_encoding *e, uint32_t h, uint64_t qtok, uint64_t ktok,
                       int64_t qpos, int64_t kpos, const float *q_i, const float *k_j);
    /* Absolute bound of |rl_bias (fp32 GLSL) - bias_ref| at one point. */
    double (*bias_bound)(const pe_encoding *e, uint32_t h, uint64_t qtok, uint64_t ktok,
                         int64_t qpos, int64_t kpos, const float *q_i, const float *k_j);
    /* Fills out->buffers (variant and n_buffers are set by the caller). */
    rl_status (*bias_gpu_create)(rlvk_device *dev, const pe_encoding *e, const float *q,
                                 const float *k, uint64_t tokens, pe_bias_gpu *out,
                                 rl_error *err);
    /* Adds family-specific keys for `ropelab inspect` to obj ("slopes",
     * "bucket" per relative position r in [r0, r1], "frequencies", "table"). */
    rl_status (*inspect)(const pe_encoding *e, int64_t r0, int64_t r1, json_t *obj,
                         rl_error *err);
    /* Families whose key transform differs from the query's (xpos): the
     * reference and bound for keys (contracts of vec_ref / vec_bound; NULL:
     * keys as queries). Their device side reads pe_vec_gpu.role. */
    void (*vec_ref_k)(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                      uint32_t heads, double *y);
    void (*vec_bound_k)(const pe_encoding *e, const float *x, const uint32_t *pos,
                        size_t tokens, uint32_t heads, double *bound, double *scale);
    /* A vector encoding built on the RoPE rotation but not of family rope
     * (xpos): the parameters of the plain RoPE with the same rotation (new
     * reference; NULL: none), for kinds that compare with plain RoPE. */
    json_t *(*rope_twin)(const pe_encoding *e);
} pe_ops;

/* One `ropelab check` case of a family (its check rows are the family's
 * own; src/check iterates the registry). Vector cases compare the GPU
 * transform with vec_ref element-wise; bias cases evaluate the GLSL rl_bias
 * over a grid of (h, i, j) against bias_ref. */
typedef struct pe_check_case {
    const char *label;      /* row name after "pe/" or "bias/", e.g. "alibi/causal" */
    const char *params;     /* the encoding's parameters as JSON object text */
    uint32_t tokens, heads, kv_heads, head_dim;  /* kv_heads 0: heads */
    uint32_t pos_cap_log2;  /* vector cases: 0 = positions up to 2^max_pos_log2,
                               else up to 2^this - 1 (a table's length) */
    int quick;              /* also run by `check --quick` */
} pe_check_case;
/* Vector cases of a family whose keys differ from its queries
 * (pe_vec_qk_differ) run twice: as queries ("pe/LABEL/q") and as keys
 * ("pe/LABEL/k"). */

/* A registry entry. */
struct pe_family {
    const char *name;         /* "t5" */
    const char *title;        /* "T5 relative position buckets" */
    const char *paper;        /* "Raffel et al. 2020, JMLR 21(140), arXiv:1910.10683" */
    int acts;                 /* PE_ACTS_* bits; 0 for nope */
    const pe_param *params;
    size_t n_params;
    /* Or, for a family whose keys are built at run time (rope: common keys
     * plus the scaling registry's), the function returning them (NULL:
     * params/n_params). Read a family's keys through pe_family_params. */
    const pe_param *(*params_table)(size_t *n);
    const char *formula;      /* one line for `ropelab encodings` */
    const char *inspect_note; /* printed under `ropelab inspect`'s table, or NULL */
    /* The bool parameter that selects the bias's causal or bidirectional
     * form ("bidirectional": ALiBi, T5), or NULL when the family's form does
     * not depend on the attention's direction. Experiment kinds set it from
     * each attention pass, so the encoding and the mask always agree. */
    const char *direction_key;
    /* Space-separated keys whose (string) values name files the family
     * reads ("path"; "u_path v_path w_r_path"), or NULL: the batch runner
     * records each such file's hash and a copy in manifest.json's inputs. */
    const char *file_keys;
    /* 1: the model family does not scale q.k by 1/sqrt(head_dim) (T5: Mesh
     * TensorFlow's initialisation folds it into the weights; HF
     * T5Attention applies no scale). Attention of such an encoding uses
     * logit scale 1. 0: the usual 1/sqrt(head_dim). */
    int unscaled_logits;
    pe_ops ops;
    const pe_check_case *vec_checks;   /* vector transform cases (PE_ACTS_VECTORS or identity) */
    size_t n_vec_checks;
    const pe_check_case *bias_checks;  /* logit-bias cases (PE_ACTS_LOGITS) */
    size_t n_bias_checks;
};

/* The frequencies of a RoPE-family encoding (family "rope"), NULL for any
 * other family: for experiment kinds about the rotation itself. */
struct rope_freqs;
const struct rope_freqs *pe_rope_freqs(const pe_encoding *e);
/* A new encoding: e (family "rope") with its scaling replaced by linear
 * position interpolation by factor (every other parameter kept); the far
 * definition of position remaps (attn/attn_remap.c). Destroy with
 * pe_encoding_destroy. */
rl_status pe_rope_linear_twin(const pe_encoding *e, double factor, pe_encoding **out,
                              rl_error *err);

/* The family rope_twin's plain-RoPE parameters of e (new reference), or
 * NULL when the family declares none. */
json_t *pe_rope_twin(const pe_encoding *e);

/* ---- registry ----------------------------------------------------------- */

size_t pe_family_count(void);
const pe_family *pe_family_at(size_t i);
/* NULL if no family has that name. */
const pe_family *pe_family_find(const char *name);
/* Comma-separated list of names, for messages. */
const char *pe_family_names(void);
/* The attention / bias_eval shader variant of fam's bias: its name for a
 * family that acts on logits (shaders/bias_NAME.glsl), else "none". */
const char *pe_bias_variant(const pe_family *fam);

/* ---- parameters ----------------------------------------------------------- */

/* fam's declared keys (params_table when set, else params); *n their count. */
const pe_param *pe_family_params(const pe_family *fam, size_t *n);

/* Resolves params (an object or NULL) against fam's table: unknown keys,
 * wrong types and out-of-range values are RL_ERR_ARG with a message naming
 * "<encoding>: <key>". *out (new reference, caller decrefs) holds every
 * declared key with its value or default. */
rl_status pe_params_resolve(const pe_family *fam, const json_t *params, json_t **out,
                            rl_error *err);

/* Applies one `key=value` to obj: value is parsed as JSON when it parses
 * (numbers, true/false, null, quoted strings, arrays), else taken as a
 * string. RL_ERR_ARG for a missing '=' or an empty key. */
rl_status pe_set_parse(json_t *obj, const char *kv, rl_error *err);


/* ---- encodings ------------------------------------------------------------ */

/* Resolves params and creates the encoding for shape. Errors name the
 * encoding and key ("t5: num_buckets 1 is below the minimum 2"); an error
 * about one parameter has that key of params in err->key ("num_buckets"),
 * one about the shape or several keys at once has err->key "". */
rl_status pe_encoding_create(const char *name, const json_t *params, const pe_shape *shape,
                             pe_encoding **out, rl_error *err);
void pe_encoding_destroy(pe_encoding *e);

const pe_family *pe_encoding_family(const pe_encoding *e);
/* Resolved parameters (owned by e). */
const json_t *pe_encoding_params(const pe_encoding *e);
/* Resolved shape (heads, kv_heads, seed defaults filled). */
const pe_shape *pe_encoding_shape(const pe_encoding *e);
int pe_has_vectors(const pe_encoding *e);
int pe_has_bias(const pe_encoding *e);

/* For family files: their private state and resolved-param accessors. */
void pe_encoding_set_state(pe_encoding *e, void *state);
void *pe_encoding_state(const pe_encoding *e);
int64_t pe_param_int(const pe_encoding *e, const char *key);
double pe_param_num(const pe_encoding *e, const char *key);
int pe_param_bool(const pe_encoding *e, const char *key);
const char *pe_param_str(const pe_encoding *e, const char *key);
/* Records a value the create step derived (e.g. table rows read from a
 * file) in the resolved params, so --dry-run and results print it. */
void pe_param_set_int(pe_encoding *e, const char *key, int64_t v);
/* Records a value worked out at create time in the resolved params (takes
 * the reference to v). */
void pe_param_set_json(pe_encoding *e, const char *key, json_t *v);

/* Seeds rng for tensor `tensor` of encoding e: stream "<name>/<tensor>". */
void pe_rng_seed(const pe_encoding *e, const char *tensor, rl_rng *rng);

/* Loads a float32/float16 .npy for parameter `key` of e and checks that its
 * shape is `want` (ndim dims; also accepted: the same element count with the
 * first two dims merged when merge_ok). Message names the key and file;
 * err->key is key. */
struct rl_npy;
rl_status pe_load_npy(const pe_encoding *e, const char *key, const char *path,
                      const uint64_t *want, uint32_t ndim, int merge_ok, struct rl_npy *out,
                      rl_error *err);

/* ---- vector transform ------------------------------------------------------ */

/* Refuses positions the encoding cannot take (learned beyond=error), naming
 * the position and the limit. RL_OK for every other encoding. */
rl_status pe_vec_check(const pe_encoding *e, const uint32_t *pos, size_t tokens, rl_error *err);
/* CPU reference of the vector transform (identity for encodings without
 * one). x: [tokens][heads][head_dim] f32, pos: [tokens], y: same shape as x,
 * double. Runs pe_vec_check first. */
rl_status pe_vec_ref(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                     uint32_t heads, double *y, rl_error *err);
/* pe_vec_ref for operand role (PE_ROLE_K: keys; pe_vec_ref is PE_ROLE_Q). */
rl_status pe_vec_ref_role(const pe_encoding *e, pe_role role, const float *x, const uint32_t *pos,
                          size_t tokens, uint32_t heads, double *y, rl_error *err);
/* 1 if e transforms keys differently from queries (the family has vec_ref_k). */
int pe_vec_qk_differ(const pe_encoding *e);
/* pe_vec_bound for operand role. */
void pe_vec_bound_role(const pe_encoding *e, pe_role role, const float *x, const uint32_t *pos,
                       size_t tokens, uint32_t heads, double *bound, double *scale);
/* Per-element bound of the GPU kernel (0: must be bit-exact) and the scale
 * of the relative error; same shapes as x. */
void pe_vec_bound(const pe_encoding *e, const float *x, const uint32_t *pos, size_t tokens,
                  uint32_t heads, double *bound, double *scale);

/* Pipelines and device data for heads heads, transforming queries
 * (pe_vec_gpu_create) or the operand role. Destroy accepts a zeroed g. */
rl_status pe_vec_gpu_create(rlvk_device *dev, const pe_encoding *e, uint32_t heads,
                            pe_vec_gpu *g, rl_error *err);
rl_status pe_vec_gpu_create_role(rlvk_device *dev, const pe_encoding *e, uint32_t heads,
                                 pe_role role, pe_vec_gpu *g, rl_error *err);
/* Uploads what the next pe_vec_gpu_record of these host positions needs
 * beyond the position buffer itself (rope table mode: cos/sin of each
 * position, in double), so that recording never does a blocking transfer.
 * Call it before each record with the same positions the position buffer
 * holds; a no-op for encodings that need nothing. pos: [tokens] u32. */
rl_status pe_vec_gpu_prepare(pe_vec_gpu *g, const uint32_t *pos, uint64_t tokens,
                             rl_error *err);
/* Records y = transform(x) (x, y [tokens][heads][head_dim] f32, may alias;
 * pos [tokens] u32) into cmd; only records (no transfer, no wait), after a
 * pe_vec_gpu_prepare of the same positions. Host-side position checks are
 * the caller's (pe_vec_check); out-of-table positions are clamped on the
 * device. */
rl_status pe_vec_gpu_record(rlvk_cmd *cmd, pe_vec_gpu *g, const rlvk_buffer *x,
                            const rlvk_buffer *y, const rlvk_buffer *pos, uint64_t tokens,
                            rl_error *err);
void pe_vec_gpu_destroy(pe_vec_gpu *g);
/* Convenience for checks and tests: checks positions, uploads, runs,
 * downloads y (host arrays as above). y gets guard words after the tensor;
 * *guard_ok = 0 if the kernel wrote into them. */
rl_status pe_vec_gpu_apply(rlvk_device *dev, pe_vec_gpu *g, const float *x, const uint32_t *pos,
                           uint64_t tokens, float *y, int *guard_ok, rl_error *err);

/* Shared by pe_add.comp users (nope, sinusoidal, learned): mode values. */
enum { PE_ADD_IDENTITY = 0, PE_ADD_SINUSOID = 1, PE_ADD_TABLE = 2 };
/* Family helper: pipelines of shaders/pe_add.comp for one mode; aux is the
 * inv_freq [head_dim/2] or table [rows][head_dim] buffer (may be NULL for
 * identity). Used through pe_add_* below by the family files. */
typedef struct pe_add_kernel {
    rlvk_pipeline pipe;
    rlvk_buffer aux;
    uint32_t mode, policy, table_rows;
    float alpha;
} pe_add_kernel;
rl_status pe_add_create(pe_vec_gpu *g, uint32_t mode, uint32_t policy, uint32_t table_rows,
                        float alpha, const float *aux, uint64_t aux_floats, rl_error *err);
rl_status pe_add_record(rlvk_cmd *cmd, pe_vec_gpu *g, const rlvk_buffer *x, const rlvk_buffer *y,
                        const rlvk_buffer *pos, uint64_t tokens, rl_error *err);
void pe_add_destroy(pe_vec_gpu *g);

/* ---- logit bias (docs/attention.md "Bias hook") ---------------------------------------- */

/* Prepares the bias buffers for tokens [0, tokens) of q/k (raw,
 * untransformed, [tokens][heads][head_dim] f32 host arrays; XL precomputes
 * per-token terms from them; others ignore them and accept NULL).
 * heads/kv_heads/head_dim must match the encoding's shape. */
rl_status pe_bias_gpu_create(rlvk_device *dev, const pe_encoding *e, const float *q,
                             const float *k, uint64_t tokens, uint32_t heads, uint32_t kv_heads,
                             uint32_t head_dim, pe_bias_gpu *out, rl_error *err);
void pe_bias_gpu_destroy(rlvk_device *dev, pe_bias_gpu *b);

/* CPU reference of bias(h, i, j) in double. q_i: raw query of token i, head
 * h ([head_dim] f32); k_j: raw key of token j, kv head h/(heads/kv_heads)
 * ([head_dim] f32); pure-position biases ignore them (may be NULL). */
double pe_bias_ref(const pe_encoding *e, uint32_t h, uint64_t qtok, uint64_t ktok, int64_t qpos,
                   int64_t kpos, const float *q_i, const float *k_j);
/* Adapter for the attention engine's CPU reference hook (docs/attention.md "Bias hook",
 * attn_bias.ref / ref_ctx): ctx is a pe_bias_ref_ctx; it finds q_i and k_j
 * in the raw [tokens][heads][head_dim] / [tokens][kv_heads][head_dim]
 * arrays and calls pe_bias_ref. */
typedef struct pe_bias_ref_ctx {
    const pe_encoding *e;
    const float *q;  /* [tokens][heads][head_dim] f32, raw */
    const float *k;  /* [tokens][kv_heads][head_dim] f32, raw */
} pe_bias_ref_ctx;
double pe_bias_ref_cb(void *ctx, uint32_t h, uint64_t qtok, uint64_t ktok, int64_t qpos,
                      int64_t kpos);

/* Absolute error bound of the GLSL rl_bias at that point (0: exact). */
double pe_bias_bound(const pe_encoding *e, uint32_t h, uint64_t qtok, uint64_t ktok,
                     int64_t qpos, int64_t kpos, const float *q_i, const float *k_j);
/* The same bound through the engine's hook (attn_bias.bound; ctx as
 * pe_bias_ref_cb): the attention tolerance adds it to the logit error. */
double pe_bias_bound_cb(void *ctx, uint32_t h, uint64_t qtok, uint64_t ktok, int64_t qpos,
                        int64_t kpos);

/* Family helper: a storage buffer holding `bytes` bytes copied from data. */
rl_status pe_buffer_from(rlvk_device *dev, const char *name, const void *data, uint64_t bytes,
                         rlvk_buffer *buf, rl_error *err);

/* ---- shared formulas -------------------------------------------------------- */

/* Sinusoid frequency of pair i of a d-dimensional sinusoidal code:
 * base^(-2i/d) (Vaswani et al. 2017; also Transformer-XL's R). The one
 * formula shared by the CPU references and the GPU host side. */
double pe_sinusoid_inv_freq(uint32_t i, uint32_t d, double base);

/* T5's relative position bucket of r = pos_j - pos_i, exactly HF
 * T5Attention._relative_position_bucket (and Mesh TensorFlow's):
 * bidirectional halves num_buckets and puts r > 0 in the upper half, n = |r|;
 * causal uses n = max(-r, 0); n < max_exact = nb/2 is its own bucket, else
 * max_exact + floor(log(n/max_exact) / log(max_distance/max_exact) *
 * (nb - max_exact)), clamped to nb - 1. Computed in double. The one formula
 * shared by the reference and the GPU host side (which turns it into
 * integer thresholds for bias_t5.glsl). */
int64_t pe_t5_bucket(int64_t r, int bidirectional, uint32_t num_buckets, uint32_t max_distance);

/* Error of one fp32 sin or cos of the angle fl(fl(p) * fl(w)) against the
 * exact sin/cos(p*w), |p*w| = phi: one rounding of w and one of the product
 * move the angle by <= phi * 2^-23 (p <= 2^24 is exact in fp32), and Vulkan
 * bounds the builtin sin/cos by 2^-11 absolute (spec, "Precision and
 * Operation of SPIR-V Instructions"); so phi * 2^-23 + 2^-11. */
double pe_fp32_trig_err(double phi);

#endif
