/* run_int.h — functions shared between the files of module run (prefix
 * run_); not part of its public API. The batch loader's own layers are in
 * run_parse.h; this header holds what the loader and the executor share,
 * lowest layer first (a file calls only files before it):
 *
 *   run_files.c    whole-file reads, directory trees, JSON written atomically
 *   run_config.c   the configuration directory: model presets, encoding sets
 *   run_model.c    model shapes from presets, HF config.json, explicit keys
 *   run_data.c     data sections: checked before the run, read during it
 *   run_results.c  results.csv
 *   run_plan.c     views of the plan: exp_run, --dry-run text, manifest JSON,
 *                  shards
 *   run_job.c      one job: a run directory built and renamed into place
 *   run_sched.c    the scheduler (run_batch_execute), manifest.json
 *   run_merge.c    shard outputs combined (run_merge) */
#ifndef RUN_INT_H
#define RUN_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "exp/exp.h"
#include "run/run.h"

#define RUN_VERSION "0.1.0"      /* ropelab_version in manifest.json */

/* FNV-1a offset basis: run ids and the batch text hash (rl_hash64). */
#define RUN_FNV_OFFSET 0xcbf29ce484222325ull

/* ---- run_files.c: files and directories --------------------------------- */

/* Reads a whole file (at most max bytes) into a NUL-terminated buffer the
 * caller frees. RL_ERR_IO (cannot open, read error), RL_ERR_LIMIT (larger
 * than max), RL_ERR_NOMEM. */
rl_status run_read_file(const char *path, size_t max, char **text, size_t *len, rl_error *err);

/* Creates path and its missing parents (existing ones are fine). */
rl_status run_mkdir_p(const char *path, rl_error *err);

/* Removes a run directory and its files (one level deep); missing is fine. */
void run_rm_dir(const char *path);
/* Copies run directory src (its plain files) to dst: built as .tmp-<name>
 * beside dst, then renamed over dst (an existing dst is replaced). */
rl_status run_copy_run_dir(const char *src, const char *dst, rl_error *err);

/* Takes the exclusive lock of output directory dir (flock on
 * dir/.ropelab.lock, which records the holder's pid): a second `run` or
 * `merge` on the same directory is refused at once with a message naming
 * the holder's pid (RL_ERR_IO). *fd receives the lock to release. */
rl_status run_lock_dir(const char *dir, int *fd, rl_error *err);
void run_unlock_dir(int fd);
/* Under the lock: removes what a killed process left half written (
 * results.csv.tmp.<pid>, manifest.json.tmp.<pid>, report.md.tmp.<pid>,
 * runs/.tmp-<id>/). */
void run_clean_stale(const char *dir);

/* {"<table>.csv": {"bytes": N, "fnv1a64": "hex"}} for the tables of a run
 * directory (tables: summary.json's "tables" array). */
json_t *run_files_record(const char *dir, const json_t *tables);
/* 1 when every table of summary (its "files" record) is in dir with the
 * recorded size and checksum; else 0 and why names what does not match. */
int run_files_verify(const char *dir, const json_t *summary, char *why, size_t cap);

/* Writes v to path atomically (indented, sorted keys, final newline). */
rl_status run_write_json(const char *path, json_t *v, rl_error *err);

/* ---- run_config.c: the configuration directory ---------------------------- */
/* $ROPELAB_CONFIG_DIR when set, else found from the executable's own
 * directory: the install's datadir/ropelab/configs, or the source tree's
 * configs/ beside an uninstalled build; no absolute source path is compiled
 * in (run_config.c). Names use letters, digits, '-', '_', '.'. */

/* Loads the model preset models/<name>.yaml as a JSON object (*out, caller
 * decrefs). RL_ERR_ARG for a bad or unknown name. */
rl_status run_preset_load(const char *name, json_t **out, rl_error *err);

struct run_node;
/* Loads the encoding set encodings/<name>.yaml (a non-empty YAML list of
 * encoding entries) into *root (caller frees with run_node_free); path
 * receives the file's path for messages. */
rl_status run_encoding_set_load(const char *name, struct run_node **root, char *path,
                                size_t cap, rl_error *err);

/* ---- run_model.c: model shapes --------------------------------------------- */

/* Resolves a model section {head_dim, heads, kv_heads, train_len, preset,
 * hf_config, layer_type} into numbers: preset values first, then the HF
 * config.json (both through pe/hf_model.h, the one reader), then explicit
 * keys. *rope (may stay NULL) receives the encoding of the model's
 * layer_type (default: its full-attention layers) as registry parameters
 * {type, rope_theta, ...}, or, when ropelab cannot plan that layer type, a
 * JSON string with the refusal (reported by encodings of type 'model').
 * Checks head_dim even and kv_heads dividing heads. */
rl_status run_model_resolve(const json_t *model, const char *base_dir, exp_model *m,
                            json_t **rope, rl_error *err);

/* The loading half of run_model_resolve: preset, hf_config and explicit
 * keys into *m without checking the shape (errors: unreadable files). */
rl_status run_model_load(const json_t *model, const char *base_dir, exp_model *m,
                         json_t **rope, rl_error *err);

/* Check i (0 <= i < RUN_MODEL_CHECKS) of a resolved model: 0 every size
 * given, 1 head_dim even, 2 kv_heads divides heads. */
#define RUN_MODEL_CHECKS 3
rl_status run_model_check(const exp_model *m, unsigned i, rl_error *err);

/* ---- run_data.c: data sections --------------------------------------------- */

/* The data section's parameters (house schema, core/rl_param.h): source,
 * seed (-1: the batch's), the synthetic amplitudes, the file keys and the
 * structured source's keys (band_lo, band_hi, position_logit,
 * content_logit, temperature, pairs), which apply to source structured
 * only. */
extern const rl_param run_data_params[];
extern const size_t run_data_n_params;

/* Resolves a data section in place after the schema filled its defaults:
 * for source structured the structured keys stay; for every other source
 * they are removed (so those runs' ids do not carry them), and one that was
 * given a value other than its default is RL_ERR_ARG ("band_lo applies to
 * source structured only"). For structured, band_lo < band_hi is checked. */
rl_status run_data_resolve(json_t *data, rl_error *err);

/* Checks a data section against the model before any GPU work: files
 * exist, tensors are present with rank 3 and the declared layout matches
 * heads / kv_heads / head_dim. */
rl_status run_data_probe(const json_t *data, const exp_model *m, const char *base_dir,
                         rl_error *err);

/* A data source for one run (exp_data_fn's user). */
typedef struct run_data {
    const json_t *desc;          /* borrowed */
    exp_model model;
    char base_dir[1024];
} run_data;

/* exp_data_fn over a run_data: fills [tokens][heads][head_dim] of q, k or v. */
rl_status run_data_fill(void *user, char which, uint64_t tokens, float *out, rl_error *err);

/* ---- run_results.c: results.csv -------------------------------------------- */

/* A JSON scalar as results.csv writes it (strings as is, reals with 17
 * digits); "" for anything else. */
void run_json_text(const json_t *v, char *buf, size_t cap);

/* Writes out/results.csv over the run directories listed in dirs (an array
 * of paths; each one's summary.json and table CSVs), with one column per
 * swept key in keys. */
rl_status run_results_write(const char *out, const json_t *keys, const json_t *dirs,
                            rl_error *err);

/* ---- run_plan.c: views of the plan ------------------------------------------ */

/* exp_run view of a plan item (borrowing its JSON). */
void run_item_to_exp(const run_item *it, exp_run *r);

/* The plan as manifest.json records it: [{id, kind, swept, resolved,
 * estimated_bytes}] (new reference). */
json_t *run_plan_json(const run_batch *b);

/* ---- run_job.c: one job ----------------------------------------------------- */

typedef enum run_job_status {
    RUN_JOB_PENDING,             /* not run (yet) */
    RUN_JOB_PASSED,
    RUN_JOB_FAILED,
    RUN_JOB_COMPLETE,            /* passed in an earlier invocation (--resume) */
} run_job_status;

/* A worker: one device (or the CPU) and the thread that runs its jobs. */
typedef struct run_worker {
    int gpu;
    uint32_t index;              /* physical device index */
    rlvk_device dev;
    int dev_ok;                  /* dev was created */
    attn_engine attn;            /* shared by the worker's runs (exp_ctx.attn): a pipeline one
                                    run built serves the next */
    int attn_ok;                 /* attn was created */
    char name[256];
    char driver[600];
    uint32_t api_version;
    pthread_t thread;            /* 0: none (ran inline) */
} run_worker;

/* One run of the plan on one worker. */
typedef struct run_job {
    const run_item *item;
    int worker;                  /* index into the scheduler's workers */
    char dir[64];                /* directory name under runs/ */
    char device[256];
    run_job_status status;
    char reason[1024];           /* why it failed; before running: why its device failed */
    double wall_s;
    double gpu_ms;               /* the kind's "gpu_ms" metric, or -1 */
} run_job;

/* Runs job j on worker w (whose device failed to open unless w->dev_ok)
 * into out/runs/<j->dir>/ with its summary.json; fills status, reason,
 * wall_s and gpu_ms. base_dir: the batch file's directory (data paths). */
void run_job_exec(run_job *j, run_worker *w, const char *out, const char *base_dir);

#endif
