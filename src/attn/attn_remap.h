/* attn_remap.h — the position-remapping registry (prefix attn_remap_).
 *
 * API at a glance:
 *   ATTN_REMAP_LIST(X)          the ONE list of methods, one line each (below)
 *   ATTN_REMAP_CHOICES          "none|self_extend|...": the attn_remap key's choices
 *   attn_remap_count()          methods, "none" (id 0) included
 *   attn_remap_method_at(id)    a method's entry (NULL for none / out of range)
 *   attn_remap_name / _from_name / _names   id <-> name, the names joined by ", "
 *   attn_remap_check            the common and the method's own rules on the settings
 *   attn_remap_positions        the remapped definition's query / key positions
 *   attn_remap_dca_positions    Dual Chunk Attention's three query maps
 *   attn_remap_encoding         the encoding that rotates the remapped definition
 *   attn_remap_distance         the relative distance a method gives, from its formula
 *   attn_remap_defs             which engine selection a method uses (attn_desc fields)
 *   attn_remap_edge_both        whether the window's edge key takes both definitions
 *   attn_remap_logit_factor     a multiplier on every logit (STRING's attention factor^2)
 *   attn_remap_apply_mask       the attention mask a method implies (lm_infinite)
 *
 * One file per method under src/attn/remap/ defines one `const
 * attn_remap_method attn_remap_NAME`; ATTN_REMAP_LIST names them, one line
 * each; a method's id is 1 + its index there (0 is "none"). The built-in
 * ones keep their ATTN_REMAP_* constants (checked in attn_remap.c).
 * Everything that names methods (the attn_remap key's choices, the
 * messages, `ropelab encodings`, the attention kinds, the engine
 * description) iterates this list. How to add one: CONTRIBUTING.md
 * "Adding an attention method". */
#ifndef ATTN_REMAP_H
#define ATTN_REMAP_H

#include <stdint.h>

#include "core/rl_status.h"
#include "pe/pe.h"

/* The registry, in id order (after "none"). */
#define ATTN_REMAP_LIST(X) \
    X(self_extend) \
    X(rerope) \
    X(leaky_rerope) \
    X(dca) \
    X(lm_infinite) \
    X(self_extend_floor) \
    X(string) \
    X(string_paper) \
    /* add a method: one X(name) line above this one */

#define ATTN_REMAP_CHOICE_(n) "|" #n
#define ATTN_REMAP_CHOICES ("none" ATTN_REMAP_LIST(ATTN_REMAP_CHOICE_))

/* The built-in methods' ids (a method added later needs none: its id is
 * attn_remap_from_name(its name)). */
enum { ATTN_REMAP_NONE, ATTN_REMAP_SELF_EXTEND, ATTN_REMAP_REROPE, ATTN_REMAP_LEAKY_REROPE,
       ATTN_REMAP_DCA };

typedef struct attn_remap {
    int method;        /* its id: ATTN_REMAP_* or attn_remap_from_name */
    uint32_t window;   /* W (Self-Extend's neighbour window, ReRoPE's w): exact where
                          |pos_i - pos_j| < W; 1..2^31 */
    uint32_t group;    /* Self-Extend's group size G >= 1 */
    uint32_t leak;     /* Leaky ReRoPE's k >= 1: slope 1/k beyond w */
    uint32_t chunk;    /* DCA's chunk_size S > window (its local_size L): chunk length
                          c = S - L */
    uint32_t local;    /* STRING's local window w (small_local_value): distances d >= S
                          = window read as d - S + w */
} attn_remap;

/* How the engine selects a method's definitions (attn_desc). */
enum {
    ATTN_REMAP_DEFS_WINDOW = 1, /* two: exact where |pos_i - pos_j| < window, remapped beyond
                                   (attn_desc.remap_window = window) */
    ATTN_REMAP_DEFS_CHUNK = 2,  /* three by chunk distance (attn_desc.remap_chunk = chunk -
                                   window): DCA */
};

/* The attention mask fields a method may set (attn_desc / exp_attn_mask). */
typedef struct attn_remap_mask {
    uint32_t window, n_sink, chunk_size;
} attn_remap_mask;

/* One method. */
typedef struct attn_remap_method {
    const char *name;        /* "rerope": the attn_remap value */
    const char *summary;     /* one line */
    const char *source;      /* paper + the code it follows */
    int defs;                /* ATTN_REMAP_DEFS_* */
    const char *const *keys; /* NULL-terminated: the attn_remap_* keys it reads */
    /* Its own rules on r after the common ones (window in 1..2^31); errors
     * name the key (RL_ERR_ARG). NULL: none. */
    rl_status (*check)(const attn_remap *r, rl_error *err);
    /* DEFS_WINDOW: the positions at which the remapped definition rotates
     * the query (*q) and the key (*k) of a token at position p. */
    void (*positions)(const attn_remap *r, uint64_t p, uint64_t *q, uint64_t *k);
    /* The relative distance it gives (pos_i, pos_j), from its formula in
     * double (the whole map, inside the window included). */
    double (*distance)(const attn_remap *r, int64_t pos_i, int64_t pos_j);
    /* 1: the remapped definition is rotated by the linear-scaled (factor
     * r->leak) twin of plain RoPE (leaky_rerope); 0: by the encoding. */
    int linear_twin;
    /* The attention mask it implies, applied to the kind's mask before that
     * is checked (errors name the key); NULL: it leaves the mask alone. */
    rl_status (*mask)(const attn_remap *r, attn_remap_mask *m, rl_error *err);
    /* DEFS_WINDOW: 1 when the key at |pos_i - pos_j| = window enters the
     * softmax with both definitions (attn_desc.remap_edge: STRING's
     * authors' code, whose two flash passes both hold the key at distance
     * S); 0: the remapped one only. */
    int edge_both;
    /* A multiplier on every logit of the method's attention (definition a;
     * paired mode's exact definition b keeps the encoding's scale): STRING's
     * attention_factor on cos and sin, squared. 0: 1. */
    double logit_factor;
} attn_remap_method;

/* Self-Extend's grouped map, shared by its two entries (remap/self_extend.c,
 * remap/self_extend_floor.c): q at floor(p/G) + W - floor(W/G), k at
 * floor(p/G); the distance exact within W, beyond floor(i/G) - floor(j/G) +
 * W - floor(W/G). With G dividing W (what self_extend requires) the offset
 * is the authors' W - W/G exactly. */
void attn_remap_self_extend_positions(const attn_remap *r, uint64_t p, uint64_t *q, uint64_t *k);
double attn_remap_self_extend_distance(const attn_remap *r, int64_t pos_i, int64_t pos_j);

/* STRING's map, shared by its two entries (remap/string.c, the authors'
 * prefill; remap/string_paper.c, each key once): q at p + w, k at p + S
 * (w = attn_remap_local <= S = attn_remap_window, checked), the distance
 * exact below S, d - S + w beyond; its keys; its logit factor (0.1 ln 2 +
 * 1)^2 (the code's attention_factor on cos and on sin). */
rl_status attn_remap_string_check(const attn_remap *r, rl_error *err);
void attn_remap_string_positions(const attn_remap *r, uint64_t p, uint64_t *q, uint64_t *k);
double attn_remap_string_distance(const attn_remap *r, int64_t pos_i, int64_t pos_j);
extern const char *const attn_remap_string_keys[];
#define ATTN_REMAP_STRING_LOGIT_FACTOR ((0.1 * 0.69314718055994530942 + 1) * \
                                        (0.1 * 0.69314718055994530942 + 1))

/* Methods, "none" included (ids 0 .. count - 1). */
int attn_remap_count(void);
/* The entry of id `method`; NULL for none (0) or out of range. */
const attn_remap_method *attn_remap_method_at(int method);
/* A method's name: "none", "self_extend", ... ("?" out of range). */
const char *attn_remap_name(int method);
/* The id of a name, -1 when unknown. */
int attn_remap_from_name(const char *name);
/* Every name, "none" first, joined by ", " (static storage). */
const char *attn_remap_names(void);
/* ATTN_REMAP_DEFS_* of r's method; 0 for none. */
int attn_remap_defs(const attn_remap *r);
/* 1 when r's method counts the window's edge key under both definitions
 * (attn_remap_method.edge_both); 0 otherwise and for none. */
int attn_remap_edge_both(const attn_remap *r);
/* The method's logit multiplier (attn_remap_method.logit_factor; 1 for
 * none or 0). */
double attn_remap_logit_factor(const attn_remap *r);
/* The method's implied mask applied to *m (RL_OK and nothing done when it
 * has none). */
rl_status attn_remap_apply_mask(const attn_remap *r, attn_remap_mask *m, rl_error *err);
/* RL_ERR_ARG naming the key (attn_remap_window/group/leak/chunk) when r's
 * parameters are out of range. */
rl_status attn_remap_check(const attn_remap *r, rl_error *err);
/* Positions at which the remapped definition rotates the queries (qpos)
 * and keys (kpos) of tokens at pos ([tokens] each): the method's
 * positions() (self_extend floor(p/G) + W - floor(W/G) and floor(p/G);
 * rerope W and 0; leaky_rerope p + W(k - 1) and p, with the linear-scaled
 * encoding, attn_remap_encoding). RL_ERR_ARG when a query position passes
 * 2^32 - 1 or the method has no such map (dca). */
rl_status attn_remap_positions(const attn_remap *r, const uint32_t *pos, uint64_t tokens,
                               uint32_t *qpos, uint32_t *kpos, rl_error *err);
/* Dual Chunk Attention's positions (ChunkLlama / vLLM DualChunkRotaryEmbedding,
 * c = S - L): keys p mod c; queries intra p mod c, successive min(p mod c +
 * c, S), inter min(2c - 1, S). Arrays [tokens]. */
rl_status attn_remap_dca_positions(const attn_remap *r, const uint32_t *pos, uint64_t tokens,
                                   uint32_t *q_intra, uint32_t *q_succ, uint32_t *q_inter,
                                   uint32_t *kpos, rl_error *err);
/* The encoding that rotates the remapped definition: e itself (*far =
 * NULL) or leaky_rerope's linear (factor k) twin of plain RoPE e (*far,
 * caller destroys). RL_ERR_ARG for encodings that are not rotary. */
rl_status attn_remap_encoding(const attn_remap *r, const pe_encoding *e, pe_encoding **far,
                              rl_error *err);
/* The relative distance method r gives (pos_i, pos_j), from its formula in
 * double: pos_i - pos_j for none, else the method's distance() (inside the
 * window pos_i - pos_j; beyond, self_extend floor(i/G) - floor(j/G) + W -
 * floor(W/G), rerope W, leaky_rerope W + (d - W)/k; dca by chunk distance:
 * pos_i - pos_j (same chunk), min(i mod c + c, S) - j mod c (successive),
 * min(2c - 1, S) - j mod c (further)). */
double attn_remap_distance(const attn_remap *r, int64_t pos_i, int64_t pos_j);

#endif
