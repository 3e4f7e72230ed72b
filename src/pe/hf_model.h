/* hf_model.h — the one config.json reader (prefix hfm_).
 *
 * Turns a Hugging Face config.json into ropelab's model description: the
 * attention shape, the position encoding of every layer type as registry
 * parameters (JSON, the keys rope_param_table / the registry declares), per-layer
 * differences, train length, logit scale, and the attributes ropelab does
 * not model yet but must not lose. Every command that reads a config.json
 * (`freqs --hf-config`, `model`, the runner's `model: {hf_config: ...}`)
 * goes through hfm_load and hfm_select.
 *
 * Rules (docs/rope.md, "Importing config.json"):
 *   - each family (model_type) is read as its own modeling code reads it;
 *     configs without model_type are read as Llama-style configs;
 *   - a key that changes positions or attention and that the family's
 *     reader does not represent is refused, naming the key and the file;
 *   - absent keys take the family's default (the model's own), and every
 *     explicit value, 0 included, is validated;
 *   - features captured but not modelled (mrope) make hfm_select refuse
 *     that layer type naming the key, never a substitution;
 *   - a layer type's attention attributes the engine has (sliding window,
 *     attention chunk, Llama 4's query temperature) are kept per type as
 *     typed fields (hfm_layer_type); the runner turns them into its batch
 *     keys (run/run_model.c), this module knows no batch vocabulary. */
#ifndef HF_MODEL_H
#define HF_MODEL_H

#include <jansson.h>
#include <stdint.h>

#include "core/rl_status.h"

#define HFM_MAX_TYPES 4
#define HFM_NAME 32

/* One kind of layer (HF layer_types names: full_attention,
 * sliding_attention, chunked_attention; T5: encoder, decoder). */
typedef struct hfm_layer_type {
    char name[HFM_NAME];
    uint32_t count;      /* layers of this type */
    uint32_t window;     /* sliding window (sliding_window), tokens; 0: none */
    uint32_t chunk;      /* attention chunk (Llama 4 attention_chunk_size), tokens; 0: none */
    int temp;            /* 1: Llama 4 query temperature (NoPE layers, attn_temperature_tuning):
                          * q scaled by 1 + temp_scale log(floor((pos + 1) / temp_floor) + 1) */
    double temp_scale, temp_floor;   /* attn_scale, floor_scale */
    json_t *encoding;    /* registry encoding {"type": "rope", "rope_theta": ...}, owned */
    char refuse[1400];    /* non-empty: why ropelab cannot plan this type (names the key) */
} hfm_layer_type;

typedef struct hfm_model {
    char path[512];
    char model_type[HFM_NAME];     /* "" when the config has none */
    uint32_t heads, kv_heads;
    uint32_t head_dim;             /* q/k head dimension (MLA: nope + rope parts) */
    uint32_t v_head_dim;           /* 0: head_dim */
    uint32_t hidden_size, n_layers;
    uint32_t max_position_embeddings;
    uint32_t train_len;            /* pre-training length (original_max_position_embeddings, else max) */
    double logit_scale;            /* q.k multiplier before softmax, RoPE attention factor excluded */
    double softcap;                /* attn_logit_softcapping; 0: none */
    uint32_t n_types;
    hfm_layer_type types[HFM_MAX_TYPES];
    json_t *layers;                /* [n_layers] layer type names, owned */
    json_t *attrs;                 /* captured attributes ropelab does not use, owned */
} hfm_model;

/* Reads path into *m (zeroed first; release with hfm_free, also after a
 * failure). Errors name the file and the key. */
rl_status hfm_load(const char *path, hfm_model *m, rl_error *err);
/* The same from a parsed config (borrowed); path names it in messages. */
rl_status hfm_from_json(const json_t *root, const char *path, hfm_model *m, rl_error *err);
void hfm_free(hfm_model *m);

/* The layer type to plan: `name` (NULL: the full-attention layers, the
 * default, and *defaulted is set to 1). Refuses unknown names (listing the
 * model's; err->key "layer_type", the name's key) and types ropelab cannot
 * model (the refusal names the key and the file; err->key ""). */
rl_status hfm_select(const hfm_model *m, const char *name, const hfm_layer_type **out,
                     int *defaulted, rl_error *err);

/* The rope_desc of a RoPE layer type t of m (head_dim from m, every key of
 * its encoding set); RL_ERR_ARG when t's encoding is not RoPE. */
struct rope_desc;
rl_status hfm_rope_desc(const hfm_model *m, const hfm_layer_type *t, struct rope_desc *d,
                        rl_error *err);

/* Description as JSON (new reference): the fields above, each layer type
 * with its encoding and refusal. */
json_t *hfm_to_json(const hfm_model *m);

#endif
