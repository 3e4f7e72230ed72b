/* run.h — batch files, sweeps, plans, execution, outputs, shards and merge
 * (module run, prefix run_). See docs/runner.md for the batch schema.
 *
 * Loading (run_batch_load / run_batch_parse) parses the YAML with libyaml
 * (run_yaml.h), validates every section against its schema and collects ALL
 * problems in one pass as "file:line:col: key.path: message" lines (unknown
 * keys get the nearest valid key as a suggestion), expands sweeps (a list
 * where a scalar is expected; `zip:` groups pair lists element-wise) into a
 * plan of resolved runs, and gives each a stable id: the FNV-1a hash of its
 * resolved parameters as canonical JSON (sorted keys, compact). Every
 * resolved run is also checked by its experiment kind before any GPU work.
 *
 * Executing (run_batch_execute) runs this shard's part of the plan on the
 * chosen devices (one worker thread per device, each with its own
 * rlvk_device; CPU-only kinds run once, on a CPU worker), writes each run to
 * OUT/runs/<dir>/ atomically (built under OUT/runs/.tmp-<dir>, renamed when
 * complete), then OUT/results.csv and OUT/manifest.json. */
#ifndef RUN_H
#define RUN_H

#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "core/rl_status.h"
#include "exp/exp.h"

#define RUN_MAX_OUT_PATH 900     /* bytes of an output directory's path (room for what lies below) */
#define RUN_MAX_PLAN 100000
#define RUN_MAX_ENCODINGS 10000  /* entries of `encodings:` (sets flattened), refused before parsing */
#define RUN_MAX_EXPERIMENTS 10000 /* entries of `experiments:`, refused before parsing */
#define RUN_MAX_SEEDS 64         /* values of a `seed: [..]` list */

/* Collected validation errors, one complete line each. */
typedef struct run_diag {
    char **msg;
    size_t n, cap;
    size_t *slots;     /* hashed index of msg (index + 1, 0 empty) for de-duplication */
    size_t n_slots;    /* a power of two > 2n, or 0 */
} run_diag;

void run_diag_free(run_diag *d);

/* One resolved run of the plan. */
typedef struct run_item {
    char id[17];                 /* 16 hex digits */
    uint64_t hash;
    const exp_kind *kind;
    uint32_t entry;              /* index in experiments[] */
    json_t *resolved;            /* {kind, seed, model{}, encoding{name,type,..}, params{}, data{}?} */
    json_t *swept;               /* {"params.max_distance": value, ...} this run's swept values */
    json_t *enc_params;          /* the encoding's parameters without name and type */
    uint64_t est_bytes;          /* the kind's estimate for one run */
} run_item;

typedef struct run_batch {
    char file[1024];             /* path as given */
    char base_dir[1024];         /* directory of the batch file (relative paths) */
    char *text;                  /* the file's text (owned) */
    size_t text_len;
    uint64_t text_hash;
    char name[128];
    char output[1024];           /* "" when not given */
    char device[128];            /* "auto" when not given */
    uint64_t seed;               /* the seed of the point being expanded (seeds[0] after load) */
    uint64_t seeds[RUN_MAX_SEEDS]; /* `seed: [..]`: one sweep axis over every experiment */
    uint32_t n_seeds;            /* >= 1 */
    int data_seed_follows;       /* the data section's seed is the run's (not given) */
    run_item *items;             /* [n_items] the plan, in file order */
    size_t n_items;
    size_t n_duplicates;         /* points that resolved to an existing run */
    json_t *swept_keys;          /* ["params.max_distance", ...] in first-seen order */
    json_t *item_seen;           /* run id -> true: the plan's ids, for a hash lookup */
    json_t *input_seen;          /* opened path -> true: what inputs holds, for a hash lookup */
    json_t *inputs;              /* files the plan reads: [{role, path (as given), opened}]
                                    (NULL: none); hashed and copied when it runs */
} run_batch;

/* Reads and validates `path`. RL_OK: b holds the plan. RL_ERR_PARSE: every
 * problem is in diag (b freed). Other statuses: err says why (unreadable). */
rl_status run_batch_load(const char *path, run_batch *b, run_diag *diag, rl_error *err);
/* The same from text in memory; `name` is used in messages, base_dir for
 * relative paths (NULL: "."). */
rl_status run_batch_parse(const char *name, const char *text, size_t len, const char *base_dir,
                          run_batch *b, run_diag *diag, rl_error *err);
void run_batch_free(run_batch *b);

/* Edit distance (Levenshtein) between two strings, for suggestions. */
size_t run_edit_distance(const char *a, const char *b);

/* Estimated work of one run, the quantity shards balance: for the
 * attention kinds (GPU kinds with `max_len` or `length`), tokens^2 * heads *
 * head_dim of the longest pass (length 0: train_len); decay:
 * (max_distance / step + 1) * head_dim; every other kind: its memory
 * estimate (est_bytes, at least 1). A proxy, comparable within a kind;
 * saturates at UINT64_MAX. */
uint64_t run_item_cost(const run_item *it);

/* The shard of every run of the plan among count shards (count 0 or 1: all
 * 0): runs sorted by cost, longest first (ties: smaller run id first), each
 * onto the least-loaded shard so far (ties: lower index). A function of the
 * plan alone, so every task of an array computes the same partition.
 * shard[n_items] (caller's) receives them. RL_ERR_NOMEM only. */
struct hfm_model;
/* Loads the model preset NAME (configs/models/NAME.yaml, found as the
 * batch's `model: {preset: NAME}` is) through the one config.json reader
 * (pe/hf_model.h) into *m (caller hfm_frees it, also after a failure), for
 * `ropelab model --preset` and `ropelab freqs --preset`. */
rl_status run_preset_model(const char *name, struct hfm_model *m, rl_error *err);
/* The model of a capture file (scripts/capture_qk.py's .safetensors): its
 * embedded config.json through the one reader, checked against the shape
 * its metadata records. Free with hfm_free. */
rl_status run_capture_model(const char *path, struct hfm_model *m, rl_error *err);

/* The attention attributes of layer type t the engine applies, as the
 * attention kinds' batch keys (EXP_ATTN_MASK_PARAMS), each with the
 * config.json key it comes from: {"attn_window": {"value": 4096, "from":
 * "SRC sliding_window, layer type T"}, ...} ("from" just the key when src
 * is NULL); an empty object when t has none. New reference. */
struct hfm_layer_type;
json_t *run_model_attn_params(const struct hfm_layer_type *t, const char *src);

rl_status run_shard_assign(const run_batch *b, uint32_t count, uint32_t *shard, rl_error *err);
/* The same from n costs and run ids (merge reads them from a manifest's
 * plan); shard[n] receives the assignment. */
rl_status run_shard_assign_costs(size_t n, const uint64_t *cost, const char *const *id,
                                 uint32_t count, uint32_t *shard, rl_error *err);

/* Reads --shard "I/N" (decimal digits only, 0 <= I < N <= 100000). With
 * spec NULL, the Slurm array task's shard: unset SLURM_ARRAY_TASK_ID is 0/1;
 * else index = SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN and count =
 * SLURM_ARRAY_TASK_COUNT (or _MAX - _MIN + 1). Refused (RL_ERR_ARG, naming
 * the variable): a TASK_ID without MIN and MAX/COUNT, a value that is not
 * plain decimal, a SLURM_ARRAY_TASK_STEP other than 1, a COUNT that does not
 * match MIN..MAX (a listed array such as --array=1,3,7). */
rl_status run_shard_parse(const char *spec, uint32_t *index, uint32_t *count, rl_error *err);

typedef struct run_options {
    const char *out;             /* output directory (required) */
    const char *device;          /* device spec; NULL: the batch's */
    int resume;                  /* skip runs already complete (and passed) */
    uint32_t shard_index, shard_count;
    int quiet;                   /* no progress output */
    int validation;              /* enable the Vulkan validation layer */
    int no_pipeline_cache;       /* do not load/save the persisted VkPipelineCache */
    int fail_after;              /* testing: stop (as if killed) after this many runs; 0: never */
    volatile sig_atomic_t *stop; /* set (by the caller's SIGINT/SIGTERM handler) to stop at
                                    the next safe point, between runs; NULL: never */
    int argc;                    /* the command line, for manifest.json (argv may be NULL) */
    char *const *argv;
    const char *version;         /* ropelab's version and git commit, for manifest.json */
    const char *commit;          /*   (NULL: RUN_VERSION and "") */
} run_options;

typedef struct run_outcome {
    size_t jobs, passed, failed, skipped; /* skipped: already complete (--resume) */
    int interrupted;             /* stopped before the plan was done (stop or fail_after) */
    size_t pending;              /* runs of this shard not run because of that */
    unsigned validation_messages;/* Vulkan validation-layer messages during the batch */
} run_outcome;

/* The identity of a device as every record shows it (`ropelab devices
 * --json`, check --json, manifest.json's devices): vendor and device id
 * (hex), driver version raw and decoded, driverID (name and value),
 * conformance version, device UUID. New reference. */
json_t *run_device_identity_json(const rlvk_device_info *in);

/* Runs this shard's part of the plan. RL_OK when the batch ran (failed runs
 * are counted in out); an error when the batch could not run at all (no
 * Vulkan, bad device, unwritable output). */
rl_status run_batch_execute(const run_batch *b, const run_options *opt, run_outcome *out,
                            rl_error *err);

/* Prints shard shard_index of shard_count's part of the plan (run id, kind,
 * encoding, swept values, memory estimate) and its size to fp.
 * RL_ERR_NOMEM only. */
rl_status run_plan_print(const run_batch *b, uint32_t shard_index, uint32_t shard_count, FILE *fp,
                         rl_error *err);

/* --dry-run's time estimates: opens the batch's (or opt->device's) first
 * device, takes its yardsticks (run_calib_get: cached per device in the
 * cache directory, else measured) and prints each run of the shard with its
 * estimated device time and memory estimate, marked as estimates. Prints
 * "time estimates: unavailable (why)" when no device can be opened and
 * nothing when no run needs one. RL_ERR_NOMEM only. */
rl_status run_plan_estimate(const run_batch *b, const run_options *opt, FILE *fp, rl_error *err);

/* Merge report. */
typedef struct run_merge_report {
    size_t plan, present, missing, duplicated;
    size_t incomplete;           /* listed by a manifest, but the run directory does not verify */
    size_t failed;               /* listed as failed (named, not present) */
    size_t cpu_shared;           /* CPU runs given by several device partitions, the same
                                    bytes: kept once */
    uint32_t shard_count, shards_seen;
    char missing_shards[256];    /* "1, 3" */
} run_merge_report;

/* Combines shard output directories into out_dir: every run directory
 * that verifies copied into out_dir/runs (a name another device's run took
 * gets "-i<input number>"), results.csv and manifest.json over all of them.
 * An input is its shard index and device set: the same shard from another
 * device set is complementary; a duplicated run is the same run id on the
 * same device. Missing runs are reported with the shard the plan's
 * assignment (run_shard_assign_costs over its estimated_cost) gave them.
 * Fills rep; fp receives one line per missing or duplicated run. RL_OK when
 * the inputs could be read and the output written (completeness is in
 * rep). */
rl_status run_merge(const char *const *dirs, size_t n_dirs, const char *out_dir,
                    run_merge_report *rep, FILE *fp, rl_error *err);

#endif
