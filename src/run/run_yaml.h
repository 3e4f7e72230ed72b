/* run_yaml.h — YAML documents as a tree that remembers where every node came
 * from (part of module run, prefix run_).
 *
 * libyaml's event parser builds a tree of scalars, sequences and mappings;
 * every node and every mapping key keeps its 1-based line and column so that
 * later (semantic) errors can be reported as `file:line:col`. Aliases and
 * anchors are refused (batch files do not need them and they would let a tiny
 * file expand without bound); nesting is limited to RUN_YAML_MAX_DEPTH.
 * One local tag is known: `!list` on a sequence marks a list that is a value
 * (LongRoPE's long_factor) rather than a sweep axis (run_node.value_list);
 * any other local tag (`!foo`), and `!list` on a scalar or mapping, is a
 * parse error. Standard tags (`!!str`) are ignored, as before. */
#ifndef RUN_YAML_H
#define RUN_YAML_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/rl_status.h"

#define RUN_YAML_MAX_DEPTH 64

typedef enum run_node_type { RUN_NODE_SCALAR, RUN_NODE_SEQ, RUN_NODE_MAP } run_node_type;

typedef struct run_node {
    run_node_type type;
    uint32_t line, col;          /* 1-based position of the node's first character */
    char *text;                  /* scalar: its text (NUL-terminated, owned) */
    int quoted;                  /* scalar: written in quotes, hence always a string */
    int value_list;              /* seq: tagged `!list`, a list that is one value (not a sweep) */
    size_t n;                    /* seq/map: number of children */
    struct run_node **items;     /* seq: [n] items; map: [n] values (owned) */
    char **keys;                 /* map: [n] keys (owned) */
    uint32_t *key_line, *key_col;/* map: [n] position of each key */
    size_t *slots;               /* map from the parser: open-addressing index of keys
                                    (key index + 1, 0 empty), so lookups stay O(1) */
    size_t n_slots;              /* a power of two > 2n, or 0 (linear lookup) */
} run_node;

/* Parses the first document of text[0..len) into *root (NULL for an empty
 * document). `name` is the file name used in messages. A syntax error fills
 * err with "name:line:col: message" (RL_ERR_PARSE). The caller frees *root
 * with run_node_free. */
rl_status run_yaml_parse(const char *name, const char *text, size_t len, run_node **root,
                         rl_error *err);

/* Frees a tree (NULL is fine). */
void run_node_free(run_node *n);

/* Value of `key` in a mapping node, or NULL (also when map is not a mapping);
 * *index (may be NULL) receives the key's index. */
const run_node *run_node_get(const run_node *map, const char *key, size_t *index);

/* Readable kind of a node for messages: "a string", "a list", "a mapping". */
const char *run_node_kind(const run_node *n);

/* A plain YAML scalar as JSON: null, boolean, integer (also integral reals
 * below 2^53, so that 10000 and 10000.0 give the same run id), real or
 * string; quoted scalars are strings. New reference (NULL: out of memory). */
json_t *run_scalar_json(const run_node *n);

/* A whole subtree as JSON (scalars as run_scalar_json, mappings as objects,
 * sequences as arrays). New reference. */
json_t *run_node_json(const run_node *n);

#endif
