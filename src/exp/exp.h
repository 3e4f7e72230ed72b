/* exp.h — experiment kinds and their registry (prefix exp_).
 *
 * An experiment kind turns one resolved run (model shape, one encoding, the
 * kind's parameters, a data source) into CSV tables and summary metrics,
 * written through an exp_sink, and records how its numbers were verified.
 * Adding a kind = one new file exp_<name>.c defining a `const exp_kind` and
 * one line in src/exp/meson.build (the one list of kinds). The runner (src/run/) validates every parameter
 * against the kind's rl_param table before any GPU work, calls the kind's
 * check() on every resolved run of the plan, then run() on a device.
 *
 * This module knows nothing of YAML or batch files: a run arrives as plain
 * structs and jansson objects. */
#ifndef EXP_H
#define EXP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/rl_csv.h"
#include "core/rl_status.h"
#include "attn/attn.h"
#include "verify/vf.h"
#include "pe/rope.h"
#include "vk/rlvk.h"

/* ---- parameters --------------------------------------------------------- */

/* A kind's parameters are the house schema (core/rl_param.h: one type and
 * one validator for encodings, kinds and runner sections). */
#include "core/rl_param.h"
#include "core/rl_sample.h"

/* ---- a resolved run ----------------------------------------------------- */

typedef struct exp_model {
    uint32_t head_dim;   /* per-head dimension, even */
    uint32_t heads;      /* query heads */
    uint32_t kv_heads;   /* key/value heads, divides heads */
    uint32_t train_len;  /* context length the model was trained for */
} exp_model;

/* Source of Q/K/V for kinds that use data: fills out with `tokens` rows of
 * tensor `which` ('q', 'k' or 'v'): out is [tokens][heads][head_dim] f32
 * (heads = model.heads for q, model.kv_heads for k and v). */
typedef rl_status (*exp_data_fn)(void *user, char which, uint64_t tokens, float *out,
                                 rl_error *err);

typedef struct exp_run {
    const char *id;              /* stable run id (16 hex digits) */
    exp_model model;
    const char *encoding_name;   /* the batch's name for the encoding */
    const char *encoding_type;   /* registry type ("rope", ...) */
    const json_t *encoding;      /* encoding parameters (HF-style keys), borrowed */
    const json_t *params;        /* the kind's parameters, every one present, borrowed */
    uint64_t seed;
    exp_data_fn data;            /* NULL unless the kind uses data */
    void *data_user;
    json_t *encoding_used;       /* NULL, or the sink's encoding_used: exp_encoding_create
                                  * records the first encoding's resolved parameters there */
} exp_run;

/* ---- output sink -------------------------------------------------------- */

#define EXP_MAX_COLS 16

/* Where a run's results go: CSV tables in `dir` (one file per table, first
 * column is the x axis), summary metrics and verification records collected
 * as JSON for summary.json. Owned by the runner; kinds only call the
 * functions below. */
typedef struct exp_sink {
    char dir[1024];
    FILE *fp;                    /* the open table, or NULL */
    char table[64];
    uint32_t n_cols;
    json_t *metrics;             /* {name: number} */
    json_t *verification;        /* [{what, max_error, bound, pass, detail}] */
    json_t *tables;              /* [{name, columns:[...], rows}] */
    json_t *encoding_used;       /* the run's encoding as its family resolved it (every value
                                  * it derived: a longrope factor, yarn's original length,
                                  * the attention factor), filled by exp_encoding_create */
    uint64_t rows;
    int failed_verification;
    /* Progress inside the run (set by the runner after exp_sink_init; NULL:
     * nobody listens): phase names what runs now, done of total is the work
     * finished so far in the kind's own unit (multiply-adds for attention),
     * so the listener's ETA follows measured throughput. */
    void (*progress)(void *user, const char *phase, double done, double total);
    void *progress_user;
    double verify_s;             /* host seconds in CPU verification (exp_attn_record*) */
} exp_sink;

/* Prepares a sink writing into directory dir (which must exist). */
rl_status exp_sink_init(exp_sink *s, const char *dir, rl_error *err);
/* Closes the open table and frees the JSON. */
void exp_sink_free(exp_sink *s);
/* Starts table `name` (file dir/name.csv) with n_cols column names; the
 * first column is the x axis. Closes the previous table. */
rl_status exp_sink_table(exp_sink *s, const char *name, uint32_t n_cols,
                         const char *const *cols, rl_error *err);
/* The same for one table of a family measured at several context lengths
 * (retrieval's per-length distance curves): table `name` at length `length`,
 * file dir/<name>_n<length>.csv; results.csv shows it as metric
 * name.<column> with `length` in its length column. */
rl_status exp_sink_table_at(exp_sink *s, const char *name, uint64_t length, uint32_t n_cols,
                            const char *const *cols, rl_error *err);
/* Appends one row of n_cols numbers to the open table. */
rl_status exp_sink_row(exp_sink *s, const double *vals, rl_error *err);
/* Ends the open table (also done by the next exp_sink_table or by close). */
rl_status exp_sink_end_table(exp_sink *s, rl_error *err);
/* Reports progress to s->progress (if set): phase (e.g. "N=4096 causal"),
 * done of total work units. */
void exp_sink_progress(exp_sink *s, const char *phase, double done, double total);
/* Records a summary metric. */
void exp_sink_metric(exp_sink *s, const char *name, double value);
/* Records one verification: `what` was compared; max_error and bound are
 * the error and bound of the element with the largest error/bound (so the
 * pair read together says how close it came; the overall max abs error
 * belongs in the detail); pass = 0 marks the run's verification as failed.
 * Every entry of summary.json's "verification" is the one tolerance record
 * (verify/vf.h: vf_scalar_json here, vf_stats_json below; error_at_worst,
 * bound_at_worst, worst_error_over_bound, pass, ...) plus "what" and
 * "detail". */
void exp_sink_verify(exp_sink *s, const char *what, double max_error, double bound, int pass,
                     const char *detail);
/* Records the verification layer's tolerance record v (vf_stats: the
 * worst element's error and bound, NMSE and its gate, verdict) under what.
 * Returns v->pass. */
int exp_sink_verify_stats(exp_sink *s, const char *what, const vf_stats *v, const char *detail);

/* ---- what a kind's numbers mean ------------------------------------------ */

/* How a metric is drawn (exp_metric.plot): the flags of results.csv's
 * `plot` column, RL_PLOT_* with their words in core/rl_csv.h (one list for
 * the kinds, the writer and plot). */

/* One summary metric ("entropy_at_max_len") or table column
 * ("entropy_length.entropy_nats"; a table's first column is its x axis,
 * "entropy_length.length_tokens"), declared once, by the kind that emits it:
 * the runner copies title, unit and plot flags into results.csv, and plot/
 * reads them from there. */
typedef struct exp_metric {
    const char *name;
    const char *title;           /* human title, e.g. "attention entropy" */
    const char *unit;            /* e.g. "nats", "tokens", "rad"; "" dimensionless */
    unsigned plot;               /* EXP_PLOT_* */
} exp_metric;

/* ---- kinds -------------------------------------------------------------- */

typedef struct exp_ctx {
    rlvk_device *dev;            /* the worker's device; NULL for CPU-only kinds */
    /* The worker's attention engine on dev, kept across its runs so that a
     * pipeline one run built serves the next (vkCreateComputePipelines of
     * the unrolled kernel takes ~0.6 s on lavapipe even with Mesa's shader
     * cache warm); NULL: each run makes its own (exp_attn_engine). */
    struct attn_engine *attn;
} exp_ctx;

typedef struct exp_kind {
    const char *name;
    const char *about;
    const rl_param *params;
    size_t n_params;
    int uses_data;               /* run->data is set; the data section is part of the run */
    int needs_gpu;               /* runs once per device; else once, on the CPU */
    /* Semantic check of a resolved run, before any GPU work: encoding
     * supported, sizes coherent. err names the parameter, and an error
     * about one of the kind's params has its key in err->key (the runner
     * reports it at that key's line). */
    rl_status (*check)(const exp_run *run, rl_error *err);
    /* Host + device bytes one run needs (for --dry-run). */
    uint64_t (*estimate_bytes)(const exp_run *run);
    /* Device floating-point operations of one run, counted as
     * `bench attention` counts them (2 per multiply-add of QK^T), for
     * --dry-run's time estimate; NULL: no attention work worth counting. */
    double (*estimate_flops)(const exp_run *run);
    /* Runs it: tables and metrics into sink. RL_ERR_MISMATCH when a
     * verification failed (already recorded in the sink). */
    rl_status (*run)(const exp_run *run, exp_ctx *ctx, exp_sink *sink, rl_error *err);
    /* Every summary metric and table column run() emits, declared once
     * (tests/test_run_exec.c runs every kind and refuses an undeclared
     * one; results.csv would title it by its own name). */
    const exp_metric *metrics;
    size_t n_metrics;
    /* Kinds that use data: how many rows of each of q, k (and v) the run
     * reads from the source (its longest pass), so the plan can refuse a
     * source that holds fewer (a capture's token count); 0 when the
     * parameters do not resolve (check reports that). NULL: not known. */
    uint64_t (*data_rows)(const exp_run *run);
} exp_kind;

/* The registry, in a fixed order. */
const exp_kind *const *exp_kinds(size_t *n);
/* Kind by name, or NULL. */
const exp_kind *exp_find(const char *name);
/* Kind k's declaration of metric (summary name or "table.column"), or NULL. */
const exp_metric *exp_metric_find(const exp_kind *k, const char *metric);
/* "decay, precision, ...": every kind, for messages. */
const char *exp_kind_names(void);

/* One resolved parameter value: num for INT / NUM / BOOL (0 or 1), str
 * for STR / ENUM (a copy). */
typedef struct exp_value {
    double num;
    char str[64];
} exp_value;

/* The typed-parameter step every kind runs first, in check(), run() and
 * estimate_bytes() alike, so a run built by hand (tests) sees the same
 * defaults as one planned by the runner: out[i] is run->params' value of
 * ps[i] or, when absent (or null), ps[i]'s default, through the house
 * validator rl_params_resolve (unknown keys, wrong types, ranges and
 * choices are RL_ERR_ARG naming the kind and key — the same rules the
 * runner applies to the batch file).
 * Each kind wraps it in its own typed struct (see exp_decay.c). */
rl_status exp_params_get(const char *kind, const rl_param *ps, size_t n, const exp_run *run,
                         exp_value *out, rl_error *err);

/* A pass over `tokens` tokens that samples query_rows S of them (0 < S <
 * tokens) by scheme s must give a mean and its interval: S below
 * rl_rows_min_rows(s, tokens) is RL_ERR_ARG naming query_rows, the length
 * and the minimum (such a pass would write NaN rows). S = 0 or S >= tokens
 * (every row) pass. Kinds call it at load for each sampled length. */
rl_status exp_query_rows_check(const char *kind, uint64_t query_rows, rl_rows_scheme s,
                               uint64_t tokens, rl_error *err);

/* The run's encoding from the registry (src/pe/pe.h), created for the
 * run's model shape and seed; seq_len (0: none) is the length the run uses:
 * it bounds the positions and is given to RoPE scalings that depend on it
 * (dynamic, longrope) unless the encoding sets seq_len itself. A type that
 * names a RoPE scaling ("yarn", "llama3", ...) means family rope with that
 * rope_type. Errors name the encoding and have err->key "" (the encoding's
 * key is not one of the kind's params). Destroy with pe_encoding_destroy. */
struct pe_encoding;
rl_status exp_encoding_create(const exp_run *run, uint64_t seq_len, struct pe_encoding **e,
                              rl_error *err);
/* The same for one attention pass: causal 1 / 0 sets a direction-dependent
 * bias's form (the family's direction_key, ALiBi's and T5's
 * `bidirectional`) from the pass, and refuses a batch value that disagrees
 * with it, naming the key; causal -1: no pass (exp_encoding_create). */
rl_status exp_encoding_for_pass(const exp_run *run, uint64_t seq_len, int causal,
                                struct pe_encoding **e, rl_error *err);

/* The rotation of a RoPE-family run encoding (error otherwise, naming the
 * kind's need). */
rl_status exp_rope_freqs(const exp_run *run, uint64_t seq_len, rope_freqs *f, rl_error *err);

/* ---- attention of a run's encoding (exp_attn.c) ------------------------- */

/* Raw inputs of one attention problem for exp_attn_run. */
/* The attention mask of the attention kinds (entropy, retrieval,
 * distortion): one definition of the batch keys (docs/runner.md), placed in
 * a kind's parameter list with EXP_ATTN_MASK_PARAMS(its three indices) and
 * read with exp_attn_mask_get. Semantics: attn_desc.window/n_sink/chunk_size. */
typedef struct exp_attn_mask {
    uint32_t window, n_sink, chunk_size;
    int learned_sink;        /* attn_learned_sink: every head's sink logit is sink_logit */
    double sink_logit;
    int temp;                /* attn_temperature: ATTN_TEMP_*, parameters as attn_desc */
    double temp_a, temp_b;
    attn_remap remap;        /* attn_remap*: position remapping (exp_attn_mask_get) */
} exp_attn_mask;
#define EXP_ATTN_MASK_PARAMS(W, S, C, LS, SL, T, TS, TF)                                       \
    [T] = {.key = "attn_temperature", .type = RL_P_ENUM, .def = "\"none\"",                    \
           .choices = "none|llama4|qwen_logn|ssmax",                                            \
           .help = "per-query logit scale: llama4 1 + s log(floor((pos + 1) / floor) + 1), "    \
                   "qwen_logn log_L(pos + 1) beyond L = train_len, ssmax s log n"},             \
    [TS] = {.key = "attn_temp_scale", .type = RL_P_NUM, .min = 0, .max = 1e3, .def = "0.1",    \
            .help = "s of attn_temperature llama4 (attn_scale) and ssmax"},                      \
    [TF] = {.key = "attn_temp_floor", .type = RL_P_NUM, .min = 1, .max = 1e9, .def = "8192",   \
            .help = "floor_scale of attn_temperature llama4"},                                   \
    [LS] = {.key = "attn_learned_sink", .type = RL_P_BOOL, .def = "false",                     \
            .help = "learned attention sink (gpt-oss): attn_sink_logit in every head's softmax " \
                    "denominator only"},                                                         \
    [SL] = {.key = "attn_sink_logit", .type = RL_P_NUM, .min = -1e4, .max = 1e4, .def = "0",   \
            .help = "the learned sink's logit (with attn_learned_sink)"},                        \
    [W] = {.key = "attn_window", .type = RL_P_INT, .min = 0, .max = 1048576, .def = "0",       \
           .help = "attention mask: sliding window, keys |i - j| < attn_window (0: none)"},     \
    [S] = {.key = "attn_sinks", .type = RL_P_INT, .min = 0, .max = 1048576, .def = "0",        \
           .help = "attention mask: the first attn_sinks keys always visible (StreamingLLM; "   \
                   "needs attn_window or attn_chunk)"},                                          \
    [C] = {.key = "attn_chunk", .type = RL_P_INT, .min = 0, .max = 1048576, .def = "0",        \
           .help = "attention mask: keys in the query's chunk of attn_chunk tokens (Llama 4 "   \
                   "attention_chunk_size; 0: none)"}
/* Position remapping of the attention kinds (docs/attention.md "Position
 * remapping"), beside the mask keys: EXP_ATTN_REMAP_PARAMS(its six
 * indices) in a kind's parameter list, read with exp_attn_mask_get into
 * exp_attn_mask.remap. The attn_remap choices are the remap registry's
 * (attn/attn_remap.h); each method's file lists the keys it reads. */
#define EXP_ATTN_REMAP_PARAMS(R, RW, RG, RK, RC, RL)                                            \
    [R] = {.key = "attn_remap", .type = RL_P_ENUM, .def = "\"none\"",                          \
           .choices = ATTN_REMAP_CHOICES, /* the registry, attn/attn_remap.h */                 \
           .help = "position remapping with two logit definitions: exact positions where "      \
                   "|i - j| < attn_remap_window, beyond Self-Extend's grouped positions, "        \
                   "ReRoPE's distance w or Leaky ReRoPE's w + (i - j - w)/k; dca: Dual Chunk "   \
                   "Attention's intra / successive / inter-chunk positions"},                    \
    [RW] = {.key = "attn_remap_window", .type = RL_P_INT, .min = 1, .max = 1048576,             \
            .def = "512", .help = "Self-Extend's neighbour window W, ReRoPE's window w, DCA's "  \
                                  "local_size L"},                                               \
    [RC] = {.key = "attn_remap_chunk", .type = RL_P_INT, .min = 0, .max = 1048576, .def = "0",  \
            .help = "DCA's chunk_size S > attn_remap_window (chunk length S - L); 0: 3/4 of "    \
                    "the model's train_len (ChunkLlama's default)"},                             \
    [RG] = {.key = "attn_remap_group", .type = RL_P_INT, .min = 1, .max = 65536, .def = "4",   \
            .help = "Self-Extend's group size G (positions floor(p/G) beyond the window)"},    \
    [RK] = {.key = "attn_remap_leak", .type = RL_P_INT, .min = 1, .max = 65536, .def = "16",   \
            .help = "Leaky ReRoPE's k: slope 1/k beyond the window (bojone's scaling_factor)"}, \
    [RL] = {.key = "attn_remap_local", .type = RL_P_INT, .min = 0, .max = 1048576,             \
            .def = "128", .help = "STRING's local window w <= attn_remap_window = S: distances " \
                                  ">= S read as d - S + w (small_local_value)"}
/* Where a kind's resolved values hold the mask keys: indices into its
 * exp_value array (those it gave EXP_ATTN_MASK_PARAMS). */
typedef struct exp_attn_mask_keys {
    int window, sinks, chunk;          /* attn_window, attn_sinks, attn_chunk */
    int learned_sink, sink_logit;      /* attn_learned_sink, attn_sink_logit */
    int temp, temp_scale, temp_floor;  /* attn_temperature, attn_temp_scale, attn_temp_floor */
    int remap, remap_window, remap_group, remap_leak, remap_chunk, remap_local; /* attn_remap* */
} exp_attn_mask_keys;
/* The indices of a kind whose parameter enum uses the house names P_WINDOW,
 * P_SINKS, P_CHUNK, P_LSINK, P_SLOGIT, P_TEMP, P_TSCALE, P_TFLOOR, P_REMAP,
 * P_RWINDOW, P_RGROUP, P_RLEAK, P_RCHUNK, P_RLOCAL. */
#define EXP_ATTN_MASK_KEYS                                                                     \
    (&(const exp_attn_mask_keys){.window = P_WINDOW, .sinks = P_SINKS, .chunk = P_CHUNK,      \
                                 .learned_sink = P_LSINK, .sink_logit = P_SLOGIT,              \
                                 .temp = P_TEMP, .temp_scale = P_TSCALE,                       \
                                 .temp_floor = P_TFLOOR, .remap = P_REMAP,                     \
                                 .remap_window = P_RWINDOW, .remap_group = P_RGROUP,           \
                                 .remap_leak = P_RLEAK, .remap_chunk = P_RCHUNK,           \
                                 .remap_local = P_RLOCAL})

/* The mask and the position remapping from a kind's resolved values v at
 * the indices keys names (qwen_logn's L: train_len; DCA's default chunk 3/4
 * of it). A remap method's implied mask (attn_remap_apply_mask:
 * lm_infinite) is applied before the mask is checked; attn_sinks without a
 * window or chunk is RL_ERR_ARG naming the kind and keys, and so is an
 * unknown or out-of-range remap. */
rl_status exp_attn_mask_get(const char *kind, const exp_value *v, const exp_attn_mask_keys *keys,
                            uint32_t train_len, exp_attn_mask *m, rl_error *err);

typedef struct exp_attn_io {
    uint64_t tokens;
    const float *q;          /* [tokens][heads][head_dim] f32, raw (before the encoding) */
    const float *k;          /* [tokens][kv_heads][head_dim] f32, raw */
    const float *v;          /* [tokens][kv_heads][head_dim] f32 for ATTN_OUT, else NULL */
    const uint32_t *pos;     /* [tokens] positions */
    const uint32_t *target;  /* [tokens] target key per query for ATTN_TARGET, else NULL */
    int causal;
    exp_attn_mask mask;      /* window / sinks / chunks (0: none) */
    uint32_t flags;          /* ATTN_* statistics */
    uint32_t verify_rows;    /* sampled rows verified; 0: 32 */
    int no_attention_factor; /* 1: logit scale 1/sqrt(d) even if the RoPE scaling has a factor */
    const struct pe_encoding *paired;   /* definition b (vector-only encoding) or NULL */
    int paired_no_attention_factor;
    /* Encoding whose CPU reference transform the verification uses for
     * definition a; NULL: e itself. (Tests hand a deliberately different
     * one to show that verification catches a wrong device transform.) */
    const struct pe_encoding *ref_encoding;
    /* Sink mass reference (entropy's sink_tokens): ref_sink_keys > 0 fills
     * ref_sink_mass [rows][heads] (rows: the sampled query rows,
     * attn_verify_token order) with sum_{j < ref_sink_keys} p_j of definition
     * a, and ref_sink_learned [rows][heads] (may be NULL) with the learned
     * sink's denominator share exp(sigma - lse), both in double by the CPU
     * reference (attn_ref_row_stats, attn_ref_logit) from the operands the
     * device read. 0: nothing. */
    uint32_t ref_sink_keys;
    double *ref_sink_mass, *ref_sink_learned;
    /* Sampled query rows (attn_desc.query_rows): n_rows > 0 computes the
     * statistics of the query tokens rows[0..n_rows-1] (strictly ascending)
     * only, against every key they see; q stays [tokens] (gathered here),
     * out->stats and the sink reference's rows are slots. 0: every token. */
    const uint32_t *rows;
    uint32_t n_rows;
    /* test hooks: the transforms (tokens) and the attention (keys) bound in
     * windows of this size even when the tensors fit one binding (0: only
     * beyond maxStorageBufferRange) */
    uint32_t test_window;
} exp_attn_io;

typedef struct exp_attn_result {
    attn_desc desc;          /* what ran */
    attn_result attn;        /* engine result and sampled-row errors */
    double scale, scale_b;   /* logit scales used */
    vf_stats vec_q, vec_k, vec_qb, vec_kb; /* transformed vectors the verification downloaded
                                              (sampled q rows, all k rows) vs reference,
                                              guards included (n = 0: none) */
    vf_stats vec_qc;         /* attn_remap dca: the inter-chunk queries (n = 0: none) */
    vf_stats attn_stats;     /* the engine's verdict (attn.verify.verdict) */
    char worst[32];          /* name of that statistic */
    int remap;               /* vec_qb/vec_kb are the remapped definition's operands */
    int pass;                /* every verification within its bound */
    double verify_s;         /* host seconds of the verification (download, double
                                references, comparison) after the device work */
} exp_attn_result;

/* Runs attention of encoding e (created for the run's shape) over io: the
 * encoding's vector transform on the device, recorded with the attention in
 * one command buffer on the same device buffers (raw Q/K go up once,
 * nothing crosses between transform and attention), its logit bias in the
 * kernel, effective logit scale
 * af^2/sqrt(d) (af: RoPE attention factor, 1 otherwise; the rotation puts af
 * on cos and sin, so the kernel scale r->scale is 1/sqrt(d), and
 * 1/(af^2 sqrt(d)) with no_attention_factor, effective 1/sqrt(d)), then
 * attn_run_resident with sampled-row verification judged by the
 * verification layer (vf_*): after the one command buffer, the transformed
 * K (and V for O) and the sampled query rows of the transformed Q come
 * back (guarded), are checked element-wise against pe_vec_ref within
 * pe_vec_bound, and the attention reference computes from exactly those
 * device operands, at the exact-operand tolerances (attn_tol.c). A verification beyond
 * tolerance is not an error here: r->pass says it (record it with
 * exp_attn_record and fail the run). */
struct attn_engine;
rl_status exp_attn_run(rlvk_device *dev, attn_engine *eng, const struct pe_encoding *e,
                       const exp_attn_io *io, const attn_outputs *out, exp_attn_result *r,
                       rl_error *err);
/* Creates at once (compiled in parallel, attn_engine_prepare) the attention
 * pipelines that exp_attn_run of encs[i] over ios[i], i < n, will use, so a
 * kind that knows its passes up front pays the longest compile instead of
 * their sum. Optional: the runs create what is missing; results are the
 * same. ios[i] needs only the fields that choose the pipeline (tokens,
 * pos, causal, mask, flags, paired). */
rl_status exp_attn_prepare(struct attn_engine *eng, uint32_t n,
                           const struct pe_encoding *const *encs, const exp_attn_io *ios,
                           rl_error *err);
/* The attention engine for a run: ctx->attn when the worker shares one,
 * else *own, created here (*made = 1: destroy it with attn_engine_destroy). */
rl_status exp_attn_engine(const exp_ctx *ctx, attn_engine *own, attn_engine **eng, int *made,
                          rl_error *err);
/* The device's limits for the run's longest attention problem (tokens,
 * flags: the ATTN_* statistics it asks for, ATTN_PAIRED included): called
 * by the kinds at the start of run(), before any host work, so a length
 * beyond maxStorageBufferRange (or the kernel's indices) is refused at once
 * naming the limit. query_rows: the sampled query rows of that problem (0:
 * every token), which bound the query side only. */
/* Tokens of a transformed operand verified at once (its double reference,
 * bounds and scales: 24 bytes per element live; exp_attn.c). */
#define EXP_ATTN_VERIFY_BLOCK 8192u
rl_status exp_attn_limits(const rlvk_device *dev, const exp_run *run, uint64_t tokens,
                          uint64_t query_rows, uint32_t flags, rl_error *err);
/* Checks, before any GPU work, what every attention kind needs: min_len <=
 * max_len, head_dim a multiple of 4, and an encoding the registry accepts
 * for max_len positions in each direction the kind runs (passes:
 * EXP_PASS_CAUSAL | EXP_PASS_BIDIR). Errors name the parameter. */
enum { EXP_PASS_CAUSAL = 1, EXP_PASS_BIDIR = 2 };
rl_status exp_attn_check(const exp_run *run, uint64_t min_len, uint64_t max_len, int passes,
                         rl_error *err);

/* Checks, before any GPU work, a run's position remapping (r->method
 * none: nothing): the encoding is rotary (attn_remap_encoding) and the
 * remapped positions of tokens 0..max_len-1 are ones it takes. */
rl_status exp_attn_remap_check(const exp_run *run, uint64_t max_len, const attn_remap *r,
                               rl_error *err);

/* Records r's verifications in the sink under label, the one recorder
 * (exp_attn_verify.c): every transform record (q, k, the paired or remapped
 * q and k, DCA's inter-chunk q), every verified statistic separately (its
 * worst error and its own fp32 tolerance, attn_tolerances, and NMSE gate)
 * and the output's guard words; adds r->verify_s to sink->verify_s; returns
 * 1 when all pass. */
int exp_attn_record_stats(exp_sink *sink, const char *label, const exp_attn_result *r);

#endif
