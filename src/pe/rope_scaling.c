/* The RoPE scaling registry: the ONE list of scaling types, one line each.
 * The order is the rope_type id (rope.h's ROPE_TYPE_* for the built-in
 * ones, checked below); a new type is
 * appended and needs no constant. Every name, alias, key list and formula
 * lives in its src/pe/scaling/NAME.c. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <pthread.h>
#include <string.h>

#include "pe/rope_scaling.h"

/* The registry: one line per type, in rope_type order. */
#define ROPE_SCALING_LIST(X) \
    X(default) \
    X(linear) \
    X(ntk) \
    X(dynamic) \
    X(yarn) \
    X(llama3) \
    X(longrope) \
    X(proportional) \
    X(dynamic_yarn) \
    X(truncated) \
    /* add a type: one X(name) line above this one */

#define DECLARE(n) extern const rope_scaling rope_scaling_##n;
#define ENTRY(n) &rope_scaling_##n,
#define INDEX(n) REG_##n,
#define SAME(n, c) ((int)REG_##n == (int)(c))
ROPE_SCALING_LIST(DECLARE)
static const rope_scaling *const registry[] = {ROPE_SCALING_LIST(ENTRY)};
enum { ROPE_SCALING_LIST(INDEX) REG_COUNT };
/* the built-in types keep their rope.h constants as registry indices */
_Static_assert(SAME(default, ROPE_TYPE_DEFAULT) && SAME(linear, ROPE_TYPE_LINEAR) &&
               SAME(ntk, ROPE_TYPE_NTK) && SAME(dynamic, ROPE_TYPE_DYNAMIC) &&
               SAME(yarn, ROPE_TYPE_YARN) && SAME(llama3, ROPE_TYPE_LLAMA3) &&
               SAME(longrope, ROPE_TYPE_LONGROPE) && SAME(proportional, ROPE_TYPE_PROPORTIONAL) &&
               SAME(dynamic_yarn, ROPE_TYPE_DYNAMIC_YARN),
               "registry order = ROPE_TYPE_* constants");
#define N_REGISTRY ((size_t)REG_COUNT)
_Static_assert(N_REGISTRY >= ROPE_TYPE_N_BUILTIN, "every ROPE_TYPE_* constant has its entry");

size_t rope_scaling_count(void) { return N_REGISTRY; }

const rope_scaling *rope_scaling_at(int type)
{
    return type >= 0 && (size_t)type < N_REGISTRY ? registry[type] : NULL;
}

int rope_scaling_find(const char *name)
{
    for (size_t i = 0; i < N_REGISTRY; i++) {
        if (strcmp(name, registry[i]->name) == 0)
            return (int)i;
        for (const char *const *a = registry[i]->aliases; a && *a; a++)
            if (strcmp(name, *a) == 0)
                return (int)i;
    }
    return -1;
}

void rope_scaling_example(int type, rope_desc *d)
{
    memset(d, 0, sizeof *d);
    d->rope_type = type;
    d->factor = type == ROPE_TYPE_DEFAULT ? 0 : 4;
    d->original_max_position_embeddings = 4096;
    d->max_position_embeddings = 4096;
    d->seq_len = 16384;
    const rope_scaling *s = rope_scaling_at(type);
    if (s && s->example)
        s->example(d);
}

void rope_scaling_base_freqs(double base, double dim, uint32_t np, double *inv)
{
    for (uint32_t j = 0; j < np; j++)
        inv[j] = pow(base, -(double)(2 * j) / dim);
}

/* ---- rope.h's type functions, from the registry ------------------------ */

const char *rope_type_name(int type)
{
    const rope_scaling *s = rope_scaling_at(type);
    return s ? s->name : NULL;
}

int rope_type_parse(const char *name)
{
    int t = rope_scaling_find(name);
    return t < 0 ? ROPE_TYPE_COUNT : t;
}

/* The names joined by ", " (rope_type_list) and by "|" (the rope_type
 * param's choices), built once. */
static char type_list[512], type_choices[512];
static pthread_once_t lists_once = PTHREAD_ONCE_INIT;

static void build_lists(void)
{
    size_t a = 0, b = 0;
    for (size_t i = 0; i < N_REGISTRY; i++) {
        const char *n = registry[i]->name;
        size_t l = strlen(n);
        if (a + l + 3 > sizeof type_list || b + l + 2 > sizeof type_choices)
            break; /* tests/test_rope_scaling.c checks every name is listed */
        if (i) {
            memcpy(type_list + a, ", ", 2), a += 2;
            type_choices[b++] = '|';
        }
        memcpy(type_list + a, n, l), a += l;
        memcpy(type_choices + b, n, l), b += l;
    }
    type_list[a] = type_choices[b] = '\0';
}

const char *rope_type_list(void)
{
    pthread_once(&lists_once, build_lists);
    return type_list;
}

const char *rope_type_choices(void)
{
    pthread_once(&lists_once, build_lists);
    return type_choices;
}

static int listed(const char *const *keys, const char *key)
{
    for (const char *const *k = keys; k && *k; k++)
        if (strcmp(*k, key) == 0)
            return 1;
    return 0;
}

int rope_type_uses_key(int type, const char *key)
{
    /* a scaling's key is one some type's formula reads; every other key
     * (rope_theta, layout, precision, seq_len, ...) applies to all types */
    int scaling = 0;
    for (size_t i = 0; i < N_REGISTRY && !scaling; i++)
        scaling = listed(registry[i]->keys, key);
    if (!scaling)
        return 1;
    const rope_scaling *s = rope_scaling_at(type);
    return s && listed(s->keys, key);
}

const char *rope_key_readers(const char *key, char *buf, size_t size)
{
    size_t o = 0;
    if (size)
        buf[0] = '\0';
    for (int u = 0; u < (int)rope_scaling_count() && o < size; u++)
        if (rope_type_uses_key(u, key)) {
            int w = snprintf(buf + o, size - o, "%s%s", o ? ", " : "", rope_type_name(u));
            o += w > 0 ? (size_t)w : 0;
        }
    return buf;
}

int rope_reads_key(int type, int resonance, const char *key)
{
    return rope_type_uses_key(type, key) ||
           (resonance && strcmp(key, "original_max_position_embeddings") == 0);
}

rl_status rope_key_applies(int type, int resonance, const char *key, rl_error *err)
{
    if (rope_reads_key(type, resonance, key))
        return RL_OK;
    char users[256];
    return rl_fail_key(err, RL_ERR_ARG, key,
                       "%s does not apply to rope_type %s (it is read by %s)", key,
                       rope_type_name(type), rope_key_readers(key, users, sizeof users));
}

int rope_params_type(const json_t *params)
{
    const json_t *t = json_object_get(params, "rope_type");
    if (!json_is_string(t))
        t = json_object_get(params, "type");
    if (!json_is_string(t))
        return ROPE_TYPE_DEFAULT;
    int i = rope_scaling_find(json_string_value(t));
    return i < 0 ? (int)ROPE_TYPE_COUNT : i;
}
