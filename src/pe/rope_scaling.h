/* rope_scaling.h — the RoPE scaling registry (prefix rope_scaling_).
 *
 * API at a glance:
 *   rope_scaling_count()      number of registered scaling types
 *   rope_scaling_at(type)     the entry of rope_type `type` (its registry index), NULL if none
 *   rope_scaling_find(name)   the index of a name or alias, -1 if none
 *   rope_scaling_example()    a type's example settings (check cases, tests)
 *
 * One file per scaling type under src/pe/scaling/ defines one
 * `const rope_scaling rope_scaling_NAME`; src/pe/rope_scaling.c lists them,
 * one line each. The list's order is the rope_type id: the built-in types
 * keep their ROPE_TYPE_* constants (rope.h) as indices; a type added later
 * needs no constant, its id is its index. Everything that names types
 * (rope_type_name/parse/list, the rope_type choices, rope_type_uses_key,
 * rope_desc_resolve, the frequency function, the settable keys, the check
 * cases) iterates this list. How to add one: CONTRIBUTING.md. */
#ifndef ROPE_SCALING_H
#define ROPE_SCALING_H

#include "pe/rope.h"

/* A scaling's own key, one ropelab lacks otherwise: a number stored in
 * rope_desc.scaling_param[slot] (0 = not given, like every RoPE number).
 * param is its declaration in the house schema (key, RL_P_NUM, def "null",
 * [min, max], help ending "(default ...)"); rope_desc_set_json refuses a
 * value that is not a finite number in (0, max] naming the key. Slots are
 * unique across the registry (tests/test_rope_scaling.c checks it). */
typedef struct rope_scaling_key {
    rl_param param;
    int slot;                 /* 0..ROPE_MAX_SCALING_PARAMS-1 */
} rope_scaling_key;

/* One scaling type. */
typedef struct rope_scaling {
    const char *name;                 /* "yarn": the rope_type value */
    const char *const *aliases;       /* NULL-terminated other spellings (HF legacy), or NULL */
    const char *summary;              /* one line */
    const char *source;               /* paper + the framework function it follows */
    const char *const *keys;          /* NULL-terminated: the rope keys its formula reads
                                         (rope_type_uses_key); own keys included */
    const char *const *required;      /* NULL-terminated: keys resolve refuses when absent
                                         (documentation; resolve enforces them) */
    const rope_scaling_key *own_keys; /* [n_own_keys] keys only this type declares */
    size_t n_own_keys;
    int whole_head;                   /* 1: rotates head_dim/2 pairs, exponent over head_dim,
                                         partial rotation by zero frequencies (proportional) */
    int length_dependent;             /* 1: its rotation depends on the length in use, so
                                         dynamic_mode cache_consistent applies (dynamic) */
    /* The type's rules on the settings (after the common ones of
     * rope_desc_resolve): required keys, defaults it fills into *r,
     * cross-key rules. Errors name the key (RL_ERR_ARG). NULL: none. */
    rl_status (*resolve)(rope_desc *r, rl_error *err);
    /* Its frequencies at length n (the sequence length in use; 0: not
     * given) for resolved r: inv_freq [np] (np = rotary_dim/2, head_dim/2
     * when whole_head), the effective base *theta and the attention factor
     * *af (set to 1 by the caller before the call). */
    void (*freqs)(const rope_desc *r, uint64_t n, uint32_t np, double *inv, double *theta,
                  double *af);
    /* Its frequencies as framework fw (RL_ROPE_PREC_HF: transformers'
     * _compute_*_parameters; RL_ROPE_PREC_VLLM: vLLM's _compute_inv_freq)
     * computes them at length n, in that program's float32 operations and
     * order (pe/rope_emu_ops.h), into inv [np]; returns 1, or 0 when fw has
     * no such program for this type (the emulation then rounds the double
     * inv_freq to float32 and docs/rope.md says so). The emulation modes'
     * factors (rope_emu_factors) come from here, on the host as in the
     * frameworks. NULL: none for any framework. */
    int (*emu_freqs)(const rope_desc *r, uint64_t n, int fw, uint32_t np, float *inv);
    /* The factor in effect at length n (rope_freqs.factor); NULL: factor, 1 if not given. */
    double (*factor_at)(const rope_desc *r, uint64_t n);
    /* Example settings on top of rope_scaling_example's common ones (the
     * check cases, the precision tests); NULL: the common ones suffice. */
    void (*example)(rope_desc *d);
} rope_scaling;

size_t rope_scaling_count(void);
const rope_scaling *rope_scaling_at(int type);
/* Index of the type called `name` (its name or an alias); -1 if none. */
int rope_scaling_find(const char *name);
/* d = zeroed, then an example configuration of `type`: factor 4 (none for
 * default), original_max_position_embeddings and max_position_embeddings
 * 4096, seq_len 16384, then the type's own example(). head_dim and
 * rotary_dim are left 0 for the caller. */
void rope_scaling_example(int type, rope_desc *d);

/* The names of the types whose formula reads key, comma-separated, into
 * buf ("yarn, dynamic_yarn"; "" when none). Returns buf. */
const char *rope_key_readers(const char *key, char *buf, size_t size);

/* RL_OK when key means something for rope_type type (rope_reads_key);
 * else RL_ERR_ARG "KEY does not apply to rope_type T (it is read by ...)".
 * What the user gives (--set, freqs' flags, a batch) is checked with it: a
 * key that no formula of the type reads is refused, never recorded and
 * ignored. A config.json's keys are not (transformers reads only its
 * type's, and so does the import). */
rl_status rope_key_applies(int type, int resonance, const char *key, rl_error *err);
/* rope_type_uses_key, plus what a key-level feature reads whatever the
 * type: with resonance, original_max_position_embeddings (resonance_scope
 * below_train's training length). */
int rope_reads_key(int type, int resonance, const char *key);
/* The rope_type a family's params JSON names (rope_type, else its legacy
 * alias type, else default); ROPE_TYPE_COUNT when the name is unknown. */
int rope_params_type(const struct json_t *params);

/* Shared by the scaling files: inv[j] = base^(-2j/dim), j < np. */
void rope_scaling_base_freqs(double base, double dim, uint32_t np, double *inv);

#endif
