/* run_int.h — functions shared between the files of module run (prefix
 * run_); not part of its public API. The batch loader's own layers are in
 * run_parse.h; this header holds what the loader and the executor share,
 * lowest layer first (a file calls only files before it):
 *
 *   run_files.c    whole-file reads, directory trees, JSON written atomically
 *   run_config.c   the configuration directory: model presets, encoding sets
 *   run_capture.c  capture files of scripts/capture_qk.py (metadata checked)
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

#include "core/rl_safetensors.h"
#include "exp/exp.h"
#include "run/run.h"

/* The most shards a plan is split into (--shard I/N, a manifest's shard.count). */
#define RUN_SHARD_MAX 100000u

#define RUN_VERSION "0.1.0"      /* ropelab_version in manifest.json */

/* FNV-1a offset basis: run ids and the batch text hash (rl_hash64). */
#define RUN_FNV_OFFSET 0xcbf29ce484222325ull

/* ---- run_files.c: files and directories --------------------------------- */

/* Reads a whole file (at most max bytes) into a NUL-terminated buffer the
 * caller frees. RL_ERR_IO (cannot open, read error), RL_ERR_LIMIT (larger
 * than max), RL_ERR_NOMEM. */
rl_status run_read_file(const char *path, size_t max, char **text, size_t *len, rl_error *err);

/* Creates path and its missing parents (existing ones are fine): for the
 * output directory the user named (links in it followed: the user's
 * choice). Everything below it goes through rl_fs_mkdirs. */
rl_status run_mkdir_p(const char *path, rl_error *err);

/* Copies run directory src (below src_root, a shard) to dst (below
 * dst_root): regular files only (a link or anything else in src is refused
 * by name), built as .tmp-<name> beside dst, verified against the sizes and
 * checksums its summary.json records, then put in place of dst
 * (rl_fs_replace: an earlier dst stays whole until exchanged). */
rl_status run_copy_run_dir(const char *src_root, const char *src, const char *dst_root,
                           const char *dst, rl_error *err);


/* Under the output directory's lock (rl_fs_lock): removes what a killed
 * process left half written, whatever pid it names (results.csv.tmp.<pid>,
 * manifest.json.tmp.<pid>, report.md.tmp.<pid>, inputs/<name>.tmp.<pid>,
 * runs/.tmp-<id>/, plots/<name>.tmp.<pid>), through rl_fs_clean_tmp: a
 * link so named is unlinked, never followed; a link where ropelab keeps
 * its own directory is refused by name (RL_ERR_ARG). */
rl_status run_clean_stale(const char *dir, rl_error *err);

/* {"<table>.csv": {"bytes": N, "fnv1a64": "hex"}} for the tables of a run
 * directory (tables: summary.json's "tables" array). */
json_t *run_files_record(const char *dir, const json_t *tables);
/* 1 when every table of summary (its "files" record) is in dir with the
 * recorded size and checksum; else 0 and why names what does not match. */
int run_files_verify(const char *dir, const json_t *summary, char *why, size_t cap);

/* "<bytes>:<fnv1a64 hex>" of the file at path below dir (no link
 * followed): the checksum manifest.json records of each summary.json. -1
 * when it cannot be read. */
int run_file_digest(const char *dir, const char *path, char *bytes_hex, size_t cap);
/* 1 when summary sum is run id's: its run_id is id, its resolved
 * parameters hash (canonical JSON, FNV-1a: how the id is made) to id, its
 * plan_hash is id, and (batch_hash not NULL) its batch_hash is that one;
 * else 0 and why says what differs. */
int run_summary_identity(const json_t *sum, const char *id, const char *batch_hash, char *why,
                         size_t cap);

/* Writes v to path atomically (indented, sorted keys, final newline); path
 * reached from root without following a link (root NULL: a path the user
 * named). */
rl_status run_write_json(const char *root, const char *path, json_t *v, rl_error *err);

/* ---- run_inputs.c: the files a batch reads ---------------------------------- */

/* Notes that the plan reads file `path` (opened as that; `given` as the
 * batch wrote it; role "hf_config", "preset", "encoding_set", "data",
 * "encoding") into b->inputs, once per path. 0 when out of memory. */
int run_inputs_note(run_batch *b, const char *role, const char *given, const char *path);
/* The data files (npy q/k/v, safetensors path, under the batch's
 * directory) and encoding tables (the family's file_keys) of a run. */
int run_inputs_note_item(run_batch *b, const run_item *it);
/* Reads every noted input once, copying it to out/inputs/<sha256>.<ext>
 * (hashing what it copies; once per content; refused when the file is no
 * longer the one noted at load) and returns the
 * records [{role, path, resolved, bytes, sha256, copy}] in *recs. With
 * resume, an input whose hash differs from the one out/manifest.json
 * recorded is RL_ERR_ARG naming it. */
rl_status run_inputs_record(const run_batch *b, const char *out, int resume, json_t **recs,
                            rl_error *err);
/* out/<rec.copy> from file `opened` (below src_root when not NULL: a
 * shard's copy, no link followed), unless a file with that content is there
 * already (its bytes are hashed, not trusted by name); the bytes copied
 * must have rec's sha256 (RL_ERR_IO otherwise). A copy name that is not
 * inputs/<sha256>.<ext> is RL_ERR_PARSE (a manifest from elsewhere names no
 * other path). */
rl_status run_inputs_copy(const char *out, const char *src_root, const char *opened,
                          const json_t *rec, rl_error *err);
/* {opened path: absolute path of its snapshot in out/inputs/} for the
 * records run_inputs_record made: what every run reads instead of the
 * original. */
json_t *run_inputs_snapshots(const run_batch *b, const json_t *recs, const char *out);
/* The host's name (uname nodename; "" when unknown). */
void run_host_name(char *buf, size_t cap);

/* ---- run_config.c: the configuration directory ---------------------------- */
/* $ROPELAB_CONFIG_DIR when set, else found from the executable's own
 * directory: the install's datadir/ropelab/configs, or the source tree's
 * configs/ beside an uninstalled build; no absolute source path is compiled
 * in (run_config.c). Names use letters, digits, '-', '_', '.'. */

/* The file of model preset name: <config dir>/models/<name>.yaml. */
void run_preset_path(const char *name, char *path, size_t cap);

/* Loads the model preset models/<name>.yaml as a JSON object (*out, caller
 * decrefs). RL_ERR_ARG for a bad or unknown name. */
rl_status run_preset_load(const char *name, json_t **out, rl_error *err);

struct run_node;
/* Loads the encoding set encodings/<name>.yaml (a non-empty YAML list of
 * encoding entries) into *root (caller frees with run_node_free); path
 * receives the file's path for messages. */
rl_status run_encoding_set_load(const char *name, struct run_node **root, char *path,
                                size_t cap, rl_error *err);

/* ---- run_capture.c: capture files ------------------------------------------ */

/* The capture format scripts/capture_qk.py writes: __metadata__ key
 * ropelab_capture, and the layers one file may hold. */
#define RUN_CAPTURE_VERSION "1"
#define RUN_CAPTURE_MAX_LAYERS 1024

/* An open capture: __metadata__ ropelab_capture (format version), model_id,
 * layers ("0,5,31"), dtype (fp32 | fp16 | bf16), tokens, heads, kv_heads,
 * head_dim, config_json (the model's config.json text); tensors
 * layer.<L>.q [tokens][heads][head_dim], layer.<L>.k and layer.<L>.v
 * [tokens][kv_heads][head_dim] for every listed layer, in the stored dtype,
 * and positions (I64 or I32 [tokens], 0..tokens-1). */
typedef struct run_capture {
    char path[1200];
    rl_safetensors st;
    uint64_t tokens;
    uint32_t heads, kv_heads, head_dim;
    uint32_t n_layers;
    uint32_t layers[RUN_CAPTURE_MAX_LAYERS];  /* [n_layers], increasing */
    const char *model_id, *config_json;       /* borrowed from st */
} run_capture;

/* Opens path and checks everything above (a missing or malformed key, a
 * tensor whose shape or dtype disagrees with the metadata, positions other
 * than 0..N-1: RL_ERR_PARSE / RL_ERR_UNSUPPORTED naming the file and the
 * key). The caller closes with run_capture_close (also after a failure). */
rl_status run_capture_open(const char *path, run_capture *c, rl_error *err);
void run_capture_close(run_capture *c);
/* RL_OK when layer was captured; else RL_ERR_ARG listing the captured layers. */
rl_status run_capture_has_layer(const run_capture *c, uint32_t layer, rl_error *err);
/* Tensor which ('q', 'k', 'v') of a captured layer (checked by open). */
const rl_st_tensor *run_capture_tensor(const run_capture *c, uint32_t layer, char which);

/* ---- run_model.c: model shapes --------------------------------------------- */

/* Resolves a model section {head_dim, heads, kv_heads, train_len, preset,
 * hf_config, capture, layer_type} into numbers: preset values first, then
 * the HF config.json (both through pe/hf_model.h, the one reader) — or,
 * instead of both, a capture file's embedded config.json with the shape its
 * metadata records — then explicit keys. *rope (may stay NULL) receives the encoding of the model's
 * layer_type (default: its full-attention layers) as registry parameters
 * {type, rope_theta, ...}, or, when ropelab cannot plan that layer type, a
 * JSON string with the refusal (reported by encodings of type 'model').
 * *attn (when attn is not NULL; may stay NULL) receives that layer type's
 * attention attributes as the attention kinds' batch keys with where each
 * came from, {"attn_window": {"value": 4096, "from": "hf_config
 * sliding_window, layer type sliding_attention"}, ...} (run_model.c),
 * or NULL when the model has no layer types or the type is refused.
 * Checks head_dim even and kv_heads dividing heads. */
rl_status run_model_resolve(const json_t *model, const char *base_dir, exp_model *m,
                            json_t **rope, json_t **attn, rl_error *err);

/* The loading half of run_model_resolve: preset, hf_config and explicit
 * keys into *m without checking the shape (errors: unreadable files). */
rl_status run_model_load(const json_t *model, const char *base_dir, exp_model *m,
                         json_t **rope, rl_error *err);

/* Check i (0 <= i < RUN_MODEL_CHECKS) of a resolved model: 0 every size
 * given, 1 head_dim even, 2 kv_heads divides heads; a failure has the model
 * key at fault in err->key. */
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
 * heads / kv_heads / head_dim; for source capture, the file's metadata
 * (heads, kv_heads, head_dim) must equal the model's (the message names
 * the key, the batch's value and the file's) and its layer be captured. */
rl_status run_data_probe(const json_t *data, const exp_model *m, const char *base_dir,
                         rl_error *err);

/* A data source for one run (exp_data_fn's user). */
typedef struct run_data {
    const json_t *desc;          /* borrowed */
    exp_model model;
    char base_dir[1024];
    /* a RoPE encoding whose rotated part is last in the model's Q/K
     * (rotary_part last: DeepSeek MLA): file Q and K rows are reordered to
     * the kernels' order as they are read (rope_part_permute); NULL: none */
    const struct rope_freqs *rope_part;
} run_data;

/* Source capture: RL_ERR_LIMIT when a run reading `rows` rows of each
 * tensor needs more tokens than the capture holds; RL_OK for other sources. */
rl_status run_data_check_rows(const json_t *data, uint64_t rows, const char *base_dir,
                              rl_error *err);

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

/* ---- run_estimate.c: time estimates ---------------------------------------- */

/* The attention kernel's share of the FMA peak assumed by the estimates:
 * `ropelab bench attention --tokens 16384 --head-dim 128 [--causal]` on
 * lavapipe against the four-width FMA peak, statistics only, 256-row
 * workgroups and texel reads (docs/performance.md "Issue 17: texel reads";
 * docs/performance.md "Measured", device-check at 5ff93d3): 0.641 bidirectional, 0.608
 * causal (0.50 before the texel reads, 0.36 with 64-row workgroups, 0.72
 * against the old single-shape peak, about half the real one). */
#define RUN_ATTN_EFFICIENCY 0.6

/* When a cached calibration is measured again (docs/runner.md "Estimates"):
 * older than RUN_CALIB_MAX_AGE_S; on a CPU device, when the 1-minute load
 * per online CPU differs from the one it was measured at by more than
 * RUN_CALIB_LOAD_LIMIT, or the online CPUs changed; or when a real run's
 * device time disagreed with its estimate by more than RUN_CALIB_DISAGREE
 * times (either way) and fell outside the band printed for it — only for a
 * run whose uncorrected estimate reached RUN_CALIB_DISAGREE_MIN_S: below
 * it the yardsticks explain too little of a run (one submission or a JIT
 * compile can be all of it) for measuring them again to help. */
#define RUN_CALIB_MAX_AGE_S (7 * 86400.0)
#define RUN_CALIB_LOAD_LIMIT 0.5
#define RUN_CALIB_DISAGREE 2.0
#define RUN_CALIB_DISAGREE_MIN_S 0.1
/* What the estimates learn from real runs: the last RUN_CALIB_HISTORY ratios
 * measured / estimated device time per learning key ("<kind>/<family>",
 * run_learn_key); their geometric mean corrects the estimate, and the band
 * is that times / divided by exp(2 x their standard deviation in log),
 * at least RUN_CALIB_BAND_MIN; one run gives RUN_CALIB_UNLEARNED_BAND, as
 * does none (then around the uncorrected estimate). */
#define RUN_CALIB_HISTORY 16
#define RUN_CALIB_BAND_MIN 1.25
#define RUN_CALIB_UNLEARNED_BAND 2.0

/* A device's yardsticks for estimates, and what it learned from runs. */
typedef struct run_calib {
    int ok;
    double fma_gflops, copy_gbs, attn_efficiency;
    double measured_at;          /* seconds since the epoch (time(NULL)) */
    double load_per_cpu;         /* 1-minute load / online CPUs when measured; < 0 unknown */
    long cpus;                   /* online CPUs when measured; 0 unknown */
    int cpu_device;              /* a CPU device: its throughput follows the machine's load */
    char device[256];
    char path[1100];             /* the cache file ("" none) */
    char source[1500];           /* "cached in PATH, ..." or "measured now (T s): WHY" */
    char remeasured[600];        /* why it was measured now ("" when cached) */
    json_t *learned;             /* the file's "learned" {key: [{ratio, ...}]} (owned; NULL none) */
} run_calib;

/* The learned correction of one key. */
typedef struct run_learned {
    size_t n;                    /* runs it is learned from (0: unlearned) */
    double correction;           /* geometric mean of measured / estimated (1 when unlearned) */
    double band;                 /* the band factor: estimate / band .. estimate x band */
} run_learned;

/* One run's estimate as --dry-run prints it and summary.json records it. */
typedef struct run_est {
    double raw_s;                /* FLOPs and bytes over the yardsticks (run_estimate_s) */
    double s;                    /* raw_s x the learned correction */
    double lo_s, hi_s;           /* the band: s / band .. s x band */
    run_learned l;
    char key[96];                /* the learning key */
} run_est;

/* The machine's 1-minute load (getloadavg: /proc/loadavg's first field) and
 * online CPUs: *load1 < 0 and *cpus 0 where unknown. */
void run_machine_load(double *load1, long *cpus);

/* Why the calibration file's contents j must be measured again at time now
 * with the machine at load1 over cpus (cpu_device: load matters): 1 and a
 * sentence in why, else 0. A j that is not a valid calibration of the
 * current yardsticks is 1 too. Pure: no clock, no file. */
int run_calib_stale(const json_t *j, double now, double load1, long cpus, int cpu_device,
                    char *why, size_t cap);

/* The yardsticks of dev: from its cache file when that holds a valid and
 * fresh calibration (run_calib_stale), else measured (bench_fma_peak,
 * bench_copy_gbs) and the file replaced atomically under its lock, keeping
 * what was learned (a file that is not valid JSON is not trusted at all).
 * run_calib_free releases it. */
rl_status run_calib_get(rlvk_device *dev, run_calib *c, rl_error *err);
void run_calib_free(run_calib *c);

/* The learned correction of key in a "learned" object (NULL: none). */
void run_learned_get(const json_t *learned, const char *key, run_learned *l);

/* The learning key of run it: "<kind>/<encoding family>" (buf of cap). */
void run_learn_key(const run_item *it, char *buf, size_t cap);

/* Estimated device seconds of run it: estimate_flops / (FMA peak x
 * attention efficiency) + est_bytes / copy bandwidth; NAN without c. */
double run_estimate_s(const run_item *it, const run_calib *c);
/* The same with the learned correction and band of its key. */
void run_estimate(const run_item *it, const run_calib *c, run_est *e);

/* 1 when a run that measured measured_s of device time disagreed with its
 * estimate e: beyond RUN_CALIB_DISAGREE times e->s either way, outside
 * e's band, and e->raw_s at least RUN_CALIB_DISAGREE_MIN_S. */
int run_est_disagrees(const run_est *e, double measured_s);

/* Adds one real run to a calibration file's contents j (in place): its
 * ratio measured / e->raw_s to j.learned[e->key] (the last
 * RUN_CALIB_HISTORY kept), and j.stale_reason when it disagreed
 * (run_est_disagrees). Returns 1 when it disagreed. Pure: now and
 * load_per_cpu (< 0: unknown) are recorded with it. Nothing is added when
 * either time is not positive and finite. */
int run_calib_add_run(json_t *j, const run_est *e, const char *run_id, double measured_s,
                      double now, double load_per_cpu);

/* run_calib_add_run on c's cache file, under its lock (an exclusive flock
 * on PATH.lock), written to a temporary name and renamed; a file that
 * changed yardsticks meanwhile still takes the run. Failing to write is
 * only a lost lesson: the status says why. */
rl_status run_calib_learn(const run_calib *c, const run_est *e, const char *run_id,
                          double measured_s, rl_error *err);

struct run_job;

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
    rlvk_device_info info;       /* identity for manifest.json (has_info) */
    int has_info;
    pthread_t thread;            /* 0: none (ran inline) */
    /* Progress inside a job (the scheduler's display; NULL: none): phase,
     * done of total work units of job j, as the kind reports them. */
    void (*progress)(void *user, const struct run_job *j, const char *phase, double done,
                     double total);
    void *progress_user;
    run_calib calib;             /* the device's yardsticks (calib.ok = 0: none) */
} run_worker;

/* Where a job's wall time went (summary.json "timing"): the worker's
 * device counters over the job (rlvk_device: pipeline creation, submit to
 * fence) and the kind's CPU verification (exp_sink.verify_s); other_s is
 * the rest (data, host transforms, tables, files). */
typedef struct run_timing {
    double wall_s, pipeline_s, device_s, verify_s, other_s;
    double gpu_s;                /* timestamped GPU time (rlvk_device.gpu_s) */
    uint64_t pipelines, reused, submissions; /* reused: answered by the pipeline table */
} run_timing;

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
    run_timing timing;
    double t_start;              /* rl_now() when it started */
    double last_progress;        /* rl_now() of the last progress line shown */
    char summary_digest[48];     /* "<bytes>:<fnv1a64>" of its summary.json ("" unknown) */
} run_job;

/* ---- run_progress.c: progress lines (stderr) ----------------------------- */

/* The live line of a job in flight: "run K/N ID KIND ENC: PHASE P% E s,
 * ETA R s", P = done/total and R = elapsed (total - done) / done, i.e. the
 * rest at the throughput measured so far in this job ("ETA ?" before any
 * work is done). */
void run_progress_line(char *buf, size_t cap, size_t k, size_t n, const char *id,
                       const char *kind, const char *enc, const char *phase, double done,
                       double total, double elapsed);
/* The line of a finished job: "run K/N ID KIND ENC on DEV: passed, verified
 * (W s wall, D s device)" or "...: FAILED: REASON (W s wall)". */
void run_progress_done_line(char *buf, size_t cap, size_t k, size_t n, const char *id,
                            const char *kind, const char *enc, const char *dev, int ok,
                            const char *reason, double wall_s, double device_s);

/* Runs job j on worker w (whose device failed to open unless w->dev_ok)
 * into out/runs/<j->dir>/ with its summary.json; fills status, reason,
 * wall_s and gpu_ms; its summary.json records the run id, plan hash and
 * batch hash, and j->summary_digest its size and checksum (manifest.json's
 * record of it). */
typedef struct run_job_env {
    const char *out;             /* OUT */
    const char *base_dir;        /* the batch file's directory (data paths) */
    const json_t *snap;          /* run_inputs_snapshots' map: the copies every file is read from */
    const char *batch_hash;      /* the batch text's hash, recorded in each summary */
} run_job_env;
void run_job_exec(run_job *j, run_worker *w, const run_job_env *env);

#endif
