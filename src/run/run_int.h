/* run_int.h — functions shared between the files of module run (prefix
 * run_); not part of its public API. */
#ifndef RUN_INT_H
#define RUN_INT_H

#include <jansson.h>
#include <stdint.h>

#include "exp/exp.h"
#include "run/run.h"

/* ---- run_files.c: files and directories --------------------------------- */

/* Reads a whole file (at most max bytes) into a NUL-terminated buffer the
 * caller frees. RL_ERR_IO (cannot open, read error), RL_ERR_LIMIT (larger
 * than max), RL_ERR_NOMEM. */
rl_status run_read_file(const char *path, size_t max, char **text, size_t *len, rl_error *err);

/* ---- run_config.c: the configuration directory ---------------------------- */
/* $ROPELAB_CONFIG_DIR when set, else the source tree's configs/ (compiled in
 * as RL_CONFIG_DIR). Names use letters, digits, '-', '_', '.'. */

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
 * hf_config} into numbers: preset values first, then the HF config.json,
 * then explicit keys. *rope (may stay NULL) receives the model's RoPE
 * settings as an encoding {type, rope_theta, ...}. Checks head_dim even and
 * kv_heads dividing heads. Presets live in $ROPELAB_CONFIG_DIR/models/ or
 * the source tree's configs/models/<name>.yaml. */
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


/* exp_run view of a plan item (borrowing its JSON). */
void run_item_to_exp(const run_item *it, exp_run *r);

#endif
