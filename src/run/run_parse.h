/* run_parse.h — the batch loader's own layers (part of module run, prefix
 * run_); not part of its public API and used only by the loader's files:
 *
 *   run_diag.c       diagnostics: "file:line:col: key.path: message" lines,
 *                    suggestions of the nearest valid key
 *   run_value.c      one scalar under a parameter spec (type, range, choices)
 *   run_sweep.c      sweep axes: lists and `zip:` groups, applying one point
 *   run_schema.c     a section's mapping against a parameter table, or kept
 *                    free-form (encoding parameters)
 *   run_encodings.c  the batch's encoding list, `set:` entries flattened
 *   run_expand.c     experiment entries expanded into resolved, checked runs
 *   run_batch.c      the whole file: top-level keys, sections, experiments
 *
 * Each layer calls only the layers above it in this list. Every function
 * that finds a problem in the batch reports it with run_diag_add and goes on,
 * so that one pass reports all problems; out of memory sets ctx->oom. */
#ifndef RUN_PARSE_H
#define RUN_PARSE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "exp/exp.h"
#include "run/run.h"
#include "run/run_yaml.h"

/* ---- run_diag.c ------------------------------------------------------------ */

/* What every loader function reports into. */
typedef struct run_pctx {
    const char *file;            /* file named in messages (a set's file while in it) */
    const char *base_dir;        /* directory of the batch file (relative paths) */
    run_diag *diag;              /* collected problems */
    int oom;                     /* out of host memory somewhere */
    json_t *enc_valid;           /* encodings already created and found valid while
                                  * loading: a set of run_enc_check's keys (family,
                                  * settings, model shape), NULL until the first */
} run_pctx;

/* Position of a node for run_diag_add. */
#define RUN_AT(node) (node)->line, (node)->col

/* Adds "file:line:col: path: message" to c->diag (path may be NULL or "");
 * a line already present is not added twice (the same problem seen from
 * another sweep point). */
void run_diag_add(run_pctx *c, uint32_t line, uint32_t col, const char *path, const char *fmt,
                  ...) __attribute__((format(printf, 5, 6)));

/* Adds err's message at the value of the key err names (err->key) in map,
 * or in map's `zip:` group, as "<key_prefix>.<key>", when map writes that
 * key; else at node `at` as at_path. map may be NULL (no section written).
 * The key comes from err as data: the message is never searched for it. */
void run_diag_err(run_pctx *c, const run_node *map, const char *key_prefix, const run_node *at,
                  const char *at_path, const rl_error *err);

/* "; did you mean 'x'?" (nearest of valid[0..n) by edit distance, when close)
 * or "; valid keys: a, b, c" into buf; returns buf. */
const char *run_suggest(const char *key, const char *const *valid, size_t n, char *buf,
                        size_t cap);

/* Reports map's key i as unknown, with a suggestion from valid[0..nv). */
void run_unknown_key(run_pctx *c, const run_node *map, size_t i, const char *path,
                     const char *const *valid, size_t nv);

/* dst = "a.b" ("b" when a is empty). */
void run_path_join(char *dst, size_t cap, const char *a, const char *b);

/* ---- run_value.c ----------------------------------------------------------- */

/* Converts scalar node n under spec p (type, range, choices) into a new JSON
 * value; NULL after reporting the problem at path. */
json_t *run_typed_value(run_pctx *c, const run_node *n, const rl_param *p, const char *path);

/* A `!list [...]` node n (a list that is one value) under spec p (NULL:
 * a free-form key, any list): a new JSON array, or NULL after reporting (p
 * takes no list: only RL_P_JSON parameters do). Its items may be scalars,
 * lists or mappings; none of them is a sweep. */
json_t *run_list_value(run_pctx *c, const run_node *n, const rl_param *p, const char *path);

/* The parameter called key in ps[0..np), or NULL. */
const rl_param *run_find_param(const rl_param *ps, size_t np, const char *key);

/* The names of ps[0..np), at most cap of them, into valid; returns how many. */
size_t run_param_names(const rl_param *ps, size_t np, const char **valid, size_t cap);

/* Copies a string scalar into dst[cap]; 0 after reporting a non-scalar or a
 * too long one. */
int run_scalar_str(run_pctx *c, const run_node *n, const char *path, char *dst, size_t cap);

/* ---- run_sweep.c ----------------------------------------------------------- */

#define RUN_MAX_AXES 32          /* swept keys (lists or zip groups) per section */
#define RUN_MAX_AXIS_KEYS 8      /* keys of one zip group */

/* One sweep axis: a list (one key) or a zip group (keys paired
 * element-wise). */
typedef struct run_axis {
    size_t n_keys;
    char key[RUN_MAX_AXIS_KEYS][200]; /* "params.tokens", "encoding.rope_scaling.factor" */
    json_t *vals[RUN_MAX_AXIS_KEYS];  /* arrays of len values each (owned) */
    size_t len;
} run_axis;

typedef struct run_axes {
    run_axis a[RUN_MAX_AXES];
    size_t n;
} run_axes;

void run_axes_free(run_axes *x);

/* A list v given where a scalar is expected: a new axis named key, its
 * values typed under p (NULL: any scalar). Problems are reported at path. */
void run_sweep_list(run_pctx *c, run_axes *ax, const run_node *v, const rl_param *p,
                    const char *path, const char *key);

/* A `zip:` mapping {key: [list], ...}: one axis whose keys ("<qual>.<key>")
 * are paired element-wise (equal lengths). With a parameter table ps[0..np)
 * every key must be one of its parameters, typed by it, and not also given
 * in the enclosing mapping `outer`; with ps NULL (free-form sections) any
 * key is taken with scalar values. Every problem is reported at
 * "<path>.<key>"; a group with a problem adds no axis. */
void run_sweep_zip(run_pctx *c, run_axes *ax, const run_node *zip, const char *path,
                   const char *qual, const rl_param *ps, size_t np, const run_node *outer);

/* Sets one point of the axes lists[0..nl) (idx: one index per axis, in
 * order) into resolved (at each dotted key) and swept (flat key -> value). */
void run_sweep_apply(json_t *resolved, json_t *swept, const run_axes *const *lists, size_t nl,
                     const size_t *idx);

/* ---- run_schema.c ---------------------------------------------------------- */

/* Validates mapping map (NULL: section absent) against ps[0..np): scalars go
 * into tmpl, lists and `zip:` groups become axes named "<section>.<key>",
 * missing optional parameters take their defaults, missing required ones
 * are reported. */
void run_schema_parse(run_pctx *c, const run_node *map, const char *path, const char *section,
                      const rl_param *ps, size_t np, json_t *tmpl, run_axes *ax);

/* Free-form mapping (encoding parameters, checked later by the encoding):
 * scalars and nested mappings kept as JSON in obj, lists of scalars become
 * axes named "<qual>.<key>", a top-level (depth 0) `zip:` pairs lists. */
void run_free_parse(run_pctx *c, const run_node *map, const char *path, const char *qual,
                    json_t *obj, run_axes *ax, int depth);

/* ---- run_encodings.c ------------------------------------------------------- */

#define RUN_MAX_SETS 16          /* `set:` entries per batch */

/* One entry of the encoding list. */
typedef struct run_enc {
    char name[64];
    json_t *tmpl;                /* {name, type, ...params} (owned) */
    run_axes ax;                 /* its swept keys ("encoding.type" when the type is swept) */
    const run_node *node;        /* where plan-time errors point (the batch's entry) */
    const run_node *map;         /* the entry's own mapping (positions of its keys) */
    const run_node *type_node;   /* its `type` value (a scalar or the swept list) */
    const char *file;            /* file the entry is in (the batch or a set file) */
    char path[112];              /* "encodings[1]" in messages */
    int bad;                     /* a problem was reported: no run is expanded from it */
} run_enc;

typedef struct run_enc_list {
    run_enc *v;                  /* [n] valid entries ([cap] allocated) */
    size_t n, cap;
    json_t *names;               /* name -> true: the names taken, a hash lookup (linear load) */
    run_node *sets[RUN_MAX_SETS];/* loaded encoding-set files (owned) */
    char set_files[RUN_MAX_SETS][1100];
    size_t n_sets;
} run_enc_list;

/* Reads the batch's `encodings:` list (root: the batch mapping) into *l:
 * `{set: NAME}` entries stand for configs/encodings/NAME.yaml (problems there
 * name that file), no list means one entry {name: rope, type: rope}. Invalid
 * entries are reported and left out. */
void run_encodings_parse(run_pctx *c, const run_node *root, run_enc_list *l);
void run_enc_list_free(run_enc_list *l);

/* The registry family an encoding type names: the family itself, "rope"
 * for a RoPE scaling name (`type: yarn`), NULL when the type is unknown
 * (also for "model", which stands for the model's own encoding). */
const char *run_enc_family(const char *type);

/* The parameters the registry sees of a resolved encoding entry enc
 * ({name, type, ...}): without name and type, with rope_type set from a
 * scaling name, and for a RoPE scaling that extends a length and is given
 * none, original_max_position_embeddings (dynamic: max_position_embeddings)
 * = train_len (0: not known). New reference (NULL: out of memory). */
json_t *run_enc_params(const json_t *enc, uint32_t train_len);

/* Checks one sweep point of entry en (enc: its resolved {name, type, ...})
 * against the registry: every key must be a parameter of the type's family
 * (reported at that key, naming the type, with the nearest valid key); with
 * a model shape m (NULL: not known yet) the encoding is also created for it
 * and a refusal is reported at the key the message names (else at `type`).
 * Type "model" is checked only after it was replaced (its type is then the
 * model's). 0 when a problem was reported. */
int run_enc_check(run_pctx *c, const run_enc *en, const json_t *enc, const exp_model *m);

/* Every sweep point of entry en's own axes checked with run_enc_check
 * (the batch-wide pass that reports encoding problems even when other
 * sections have errors). */
void run_enc_check_all(run_pctx *c, const run_enc *en, const exp_model *m);

/* ---- run_expand.c ---------------------------------------------------------- */

/* The batch-wide sections every experiment entry is expanded over. */
typedef struct run_sections {
    const json_t *model_tmpl;    /* model keys without sweeps */
    const run_node *model_map;   /* the model section as written (its keys) */
    const run_axes *model_ax;
    const json_t *data_tmpl;     /* data keys without sweeps */
    const run_axes *data_ax;
    const run_node *data_node;   /* where data errors point */
    const run_node *data_map;    /* the data section as written (its keys), or NULL */
    const run_enc_list *encs;
} run_sections;

/* Expands experiment entry ei (node entry, kind, params template and axes)
 * over the encodings with use_enc[k] set and every sweep point of the
 * model, encoding, params and (kinds that use data) data axes. Each point
 * is resolved (model numbers, the model's own RoPE for type 'model', data
 * checked against the model), given its id, checked by the kind and
 * appended to b->items (capacity *cap) unless an equal run exists; points
 * with problems are reported instead. */
void run_expand_entry(run_pctx *c, run_batch *b, size_t *cap, const run_sections *s,
                      const run_node *entry, uint32_t ei, const exp_kind *kind,
                      const json_t *params, const run_axes *pax, const int *use_enc);

#endif
