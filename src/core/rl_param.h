/* rl_param.h — the one parameter schema (prefix rl_param / RL_P_): every
 * declared parameter of an encoding, an experiment kind or a runner section
 * is an rl_param, and one validator (rl_param_check / rl_params_resolve)
 * types, range-checks and defaults them. Values are jansson values, so YAML
 * batches, `--set key=value` and config.json all arrive the same way. */
#ifndef RL_PARAM_H
#define RL_PARAM_H

#include <jansson.h>
#include <stddef.h>

#include "core/rl_status.h"

/* RL_P_JSON: any JSON value (lists, or keys whose default depends on other
 * keys, default "null"), validated by the owner, which must name the key. */
typedef enum rl_ptype { RL_P_INT, RL_P_NUM, RL_P_BOOL, RL_P_STR, RL_P_ENUM, RL_P_JSON } rl_ptype;

/* One declared parameter. Absent or JSON null means the default; any given
 * value is taken literally and validated (numbers against [min, max], enums
 * against `choices`, "a|b|c"). def NULL: required (absence is an error). */
typedef struct rl_param {
    const char *key;
    rl_ptype type;
    const char *def;       /* default as JSON text: "32", "true", "\"error\""; NULL: required;
                              "null" (any type): no constant default, absent stays null and
                              the owner derives the value (its help says how) */
    double min, max;       /* RL_P_INT / RL_P_NUM: inclusive range */
    const char *choices;   /* RL_P_ENUM: "error|clamp|wrap" */
    const char *help;
} rl_param;

/* "int", "number", "bool", "string", "enum", "json". */
const char *rl_ptype_name(rl_ptype t);

/* Validates one given value v of p (not NULL, not null) for owner (the
 * encoding, kind or section named in messages: "<owner>: <key> ..."; NULL:
 * the message is the bare rule, "must be an integer", for callers that name
 * the place themselves). *out
 * (new reference) is the typed value (integers as JSON integers). Errors
 * are RL_ERR_ARG, with p->key in err->key whether or not owner is given. */
rl_status rl_param_check(const char *owner, const rl_param *p, const json_t *v, json_t **out,
                         rl_error *err);

/* Resolves given (an object or NULL) against ps[0..n): unknown keys, wrong
 * types, out-of-range values and missing required ones are RL_ERR_ARG
 * naming "<owner>: <key>", with that key in err->key. *out (new
 * reference) holds every declared key with its value or default, in
 * declaration order. */
rl_status rl_params_resolve(const char *owner, const rl_param *ps, size_t n, const json_t *given,
                            json_t **out, rl_error *err);

/* 1 when v (not NULL) has p's type, the test rl_param_check makes first: an
 * integer (or an integral real) for RL_P_INT, a number for RL_P_NUM, a
 * boolean, a string (RL_P_STR, RL_P_ENUM), anything for RL_P_JSON. A value
 * of the right type may still be refused for its range or choice. */
int rl_param_type_ok(const rl_param *p, const json_t *v);

/* 1 when s is one of p's choices ("a|b|c"). */
int rl_param_choice_ok(const rl_param *p, const char *s);
/* The index of s among p's choices ("b" in "a|b|c": 1), -1 if none. */
int rl_param_choice_index(const rl_param *p, const char *s);
/* Choice i of p (not NUL-terminated: *len bytes), NULL past the last. */
const char *rl_param_choice_at(const rl_param *p, int i, size_t *len);

/* Index of key in ps[0..n), or -1. */
long rl_param_find(const rl_param *ps, size_t n, const char *key);

#endif
