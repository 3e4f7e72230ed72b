#include "run/run_yaml.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/rl_util.h"

typedef struct builder {
    yaml_parser_t parser;
    const char *name;
    rl_error *err;
} builder;

static rl_status parser_error(builder *b)
{
    const yaml_parser_t *p = &b->parser;
    yaml_mark_t m = p->problem_mark;
    if (p->error == YAML_MEMORY_ERROR)
        return rl_fail(b->err, RL_ERR_NOMEM, "%s: out of memory while parsing", b->name);
    return rl_fail(b->err, RL_ERR_PARSE, "%s:%lu:%lu: YAML syntax error: %s%s%s", b->name,
                   (unsigned long)m.line + 1, (unsigned long)m.column + 1,
                   p->problem ? p->problem : "malformed document", p->context ? " " : "",
                   p->context ? p->context : "");
}

static rl_status next_event(builder *b, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&b->parser, ev))
        return parser_error(b);
    return RL_OK;
}

static run_node *node_new(run_node_type t, const yaml_event_t *ev)
{
    run_node *n = calloc(1, sizeof *n);
    if (n) {
        n->type = t;
        n->line = (uint32_t)ev->start_mark.line + 1;
        n->col = (uint32_t)ev->start_mark.column + 1;
    }
    return n;
}

/* ---- key index of a mapping (duplicate detection and run_node_get) ---- */

static size_t key_slot(const run_node *n, const char *key)
{
    size_t mask = n->n_slots - 1, i = (size_t)rl_hash64(key, strlen(key), 0) & mask;
    while (n->slots[i] && strcmp(n->keys[n->slots[i] - 1], key) != 0)
        i = (i + 1) & mask;
    return i;
}

/* Indexes key n->n - 1 (just appended); grows the table to keep it at most
 * half full. -1 when out of memory. */
static int index_last_key(run_node *n)
{
    if (2 * n->n >= n->n_slots) {
        size_t ns = n->n_slots ? 2 * n->n_slots : 16;
        size_t *sl = calloc(ns, sizeof *sl);
        if (!sl)
            return -1;
        free(n->slots);
        n->slots = sl;
        n->n_slots = ns;
        for (size_t i = 0; i + 1 < n->n; i++)
            n->slots[key_slot(n, n->keys[i])] = i + 1;
    }
    n->slots[key_slot(n, n->keys[n->n - 1])] = n->n;
    return 0;
}

static int grow(run_node *n, size_t *cap)
{
    if (n->n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 4;
    run_node **items = realloc(n->items, nc * sizeof *items);
    if (!items)
        return -1;
    n->items = items;
    if (n->type == RUN_NODE_MAP) {
        char **keys = realloc(n->keys, nc * sizeof *keys);
        if (!keys)
            return -1;
        n->keys = keys;
        uint32_t *kl = realloc(n->key_line, nc * sizeof *kl);
        if (!kl)
            return -1;
        n->key_line = kl;
        uint32_t *kc = realloc(n->key_col, nc * sizeof *kc);
        if (!kc)
            return -1;
        n->key_col = kc;
    }
    *cap = nc;
    return 0;
}

/* The tag of a node's event: 1 for `!list` on a sequence, 0 for none or a
 * standard tag, -1 after filling err (an unknown local tag, or `!list`
 * elsewhere). */
static int node_tag(builder *b, const yaml_event_t *ev)
{
    const yaml_char_t *tag = ev->type == YAML_SCALAR_EVENT           ? ev->data.scalar.tag
                             : ev->type == YAML_SEQUENCE_START_EVENT ? ev->data.sequence_start.tag
                             : ev->type == YAML_MAPPING_START_EVENT  ? ev->data.mapping_start.tag
                                                                     : NULL;
    if (!tag || tag[0] != '!')
        return 0; /* none, or a standard tag (tag:yaml.org,2002:...) */
    unsigned long line = (unsigned long)ev->start_mark.line + 1;
    unsigned long col = (unsigned long)ev->start_mark.column + 1;
    if (strcmp((const char *)tag, "!list") != 0) {
        rl_fail(b->err, RL_ERR_PARSE, "%s:%lu:%lu: unknown tag '%.40s' (the one tag of batch "
                "files is !list: a list that is a value, not a sweep)", b->name, line, col,
                (const char *)tag);
        return -1;
    }
    if (ev->type != YAML_SEQUENCE_START_EVENT) {
        rl_fail(b->err, RL_ERR_PARSE, "%s:%lu:%lu: !list marks a list ([...] or '- ' items), "
                "not %s", b->name, line, col,
                ev->type == YAML_SCALAR_EVENT ? "a scalar" : "a mapping");
        return -1;
    }
    return 1;
}

/* Builds the node that starts with *ev (consumed: deleted by this function). */
static rl_status build(builder *b, yaml_event_t *ev, int depth, run_node **out)
{
    rl_status st = RL_OK;
    *out = NULL;
    if (depth > RUN_YAML_MAX_DEPTH) {
        st = rl_fail(b->err, RL_ERR_PARSE, "%s:%lu:%lu: nesting deeper than %d levels", b->name,
                     (unsigned long)ev->start_mark.line + 1,
                     (unsigned long)ev->start_mark.column + 1, RUN_YAML_MAX_DEPTH);
        yaml_event_delete(ev);
        return st;
    }
    int tag = node_tag(b, ev);
    if (tag < 0) {
        yaml_event_delete(ev);
        return RL_ERR_PARSE;
    }
    switch (ev->type) {
    case YAML_ALIAS_EVENT:
        st = rl_fail(b->err, RL_ERR_PARSE,
                     "%s:%lu:%lu: YAML aliases (*name) are not supported in batch files", b->name,
                     (unsigned long)ev->start_mark.line + 1,
                     (unsigned long)ev->start_mark.column + 1);
        yaml_event_delete(ev);
        return st;
    case YAML_SCALAR_EVENT: {
        run_node *n = node_new(RUN_NODE_SCALAR, ev);
        if (!n || !(n->text = malloc(ev->data.scalar.length + 1))) {
            free(n);
            yaml_event_delete(ev);
            return rl_fail(b->err, RL_ERR_NOMEM, "%s: out of memory", b->name);
        }
        memcpy(n->text, ev->data.scalar.value, ev->data.scalar.length);
        n->text[ev->data.scalar.length] = '\0';
        if (strlen(n->text) != ev->data.scalar.length) {
            st = rl_fail(b->err, RL_ERR_PARSE, "%s:%u:%u: scalar contains a NUL character",
                         b->name, n->line, n->col);
            run_node_free(n);
            yaml_event_delete(ev);
            return st;
        }
        n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        yaml_event_delete(ev);
        *out = n;
        return RL_OK;
    }
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        int is_map = ev->type == YAML_MAPPING_START_EVENT;
        yaml_event_type_t end = is_map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
        run_node *n = node_new(is_map ? RUN_NODE_MAP : RUN_NODE_SEQ, ev);
        yaml_event_delete(ev);
        if (!n)
            return rl_fail(b->err, RL_ERR_NOMEM, "%s: out of memory", b->name);
        n->value_list = tag == 1;
        size_t cap = 0;
        for (;;) {
            yaml_event_t e;
            if ((st = next_event(b, &e)))
                break;
            if (e.type == end) {
                yaml_event_delete(&e);
                break;
            }
            if (grow(n, &cap)) {
                yaml_event_delete(&e);
                st = rl_fail(b->err, RL_ERR_NOMEM, "%s: out of memory", b->name);
                break;
            }
            if (is_map) {
                uint32_t kl = (uint32_t)e.start_mark.line + 1, kc = (uint32_t)e.start_mark.column + 1;
                run_node *key = NULL;
                if ((st = build(b, &e, depth + 1, &key)))
                    break;
                if (key->type != RUN_NODE_SCALAR) {
                    st = rl_fail(b->err, RL_ERR_PARSE, "%s:%u:%u: a mapping key must be a plain "
                                 "scalar, not %s", b->name, kl, kc, run_node_kind(key));
                    run_node_free(key);
                    break;
                }
                if (run_node_get(n, key->text, NULL)) {
                    st = rl_fail(b->err, RL_ERR_PARSE, "%s:%u:%u: duplicate key '%s'", b->name, kl,
                                 kc, key->text);
                    run_node_free(key);
                    break;
                }
                yaml_event_t v;
                if ((st = next_event(b, &v))) {
                    run_node_free(key);
                    break;
                }
                run_node *val = NULL;
                if ((st = build(b, &v, depth + 1, &val))) {
                    run_node_free(key);
                    break;
                }
                n->keys[n->n] = key->text;
                key->text = NULL;
                run_node_free(key);
                n->key_line[n->n] = kl;
                n->key_col[n->n] = kc;
                n->items[n->n++] = val;
                if (index_last_key(n)) {
                    st = rl_fail(b->err, RL_ERR_NOMEM, "%s: out of memory", b->name);
                    break;
                }
            } else {
                run_node *item = NULL;
                if ((st = build(b, &e, depth + 1, &item)))
                    break;
                n->items[n->n++] = item;
            }
        }
        if (st) {
            run_node_free(n);
            return st;
        }
        *out = n;
        return RL_OK;
    }
    default:
        st = rl_fail(b->err, RL_ERR_PARSE, "%s:%lu:%lu: unexpected YAML event", b->name,
                     (unsigned long)ev->start_mark.line + 1,
                     (unsigned long)ev->start_mark.column + 1);
        yaml_event_delete(ev);
        return st;
    }
}

rl_status run_yaml_parse(const char *name, const char *text, size_t len, run_node **root,
                         rl_error *err)
{
    builder b = {.name = name, .err = err};
    *root = NULL;
    if (!yaml_parser_initialize(&b.parser))
        return rl_fail(err, RL_ERR_NOMEM, "%s: cannot initialise the YAML parser", name);
    yaml_parser_set_input_string(&b.parser, (const unsigned char *)text, len);
    rl_status st = RL_OK;
    yaml_event_t ev;
    int done = 0;
    /* stream start, then either stream end (empty) or document start */
    while (!done && !st) {
        if ((st = next_event(&b, &ev)))
            break;
        switch (ev.type) {
        case YAML_STREAM_START_EVENT:
        case YAML_DOCUMENT_START_EVENT:
            yaml_event_delete(&ev);
            break;
        case YAML_STREAM_END_EVENT:
            yaml_event_delete(&ev);
            done = 1;
            break;
        default:
            st = build(&b, &ev, 0, root);
            done = 1;
            break;
        }
    }
    if (!st && *root) {
        /* document end, then a second document is refused */
        if ((st = next_event(&b, &ev)) == RL_OK) {
            yaml_event_delete(&ev);
            if ((st = next_event(&b, &ev)) == RL_OK) {
                if (ev.type == YAML_DOCUMENT_START_EVENT)
                    st = rl_fail(err, RL_ERR_PARSE,
                                 "%s:%lu:%lu: a batch file holds one YAML document, found a second",
                                 name, (unsigned long)ev.start_mark.line + 1,
                                 (unsigned long)ev.start_mark.column + 1);
                yaml_event_delete(&ev);
            }
        }
    }
    if (st) {
        run_node_free(*root);
        *root = NULL;
    }
    yaml_parser_delete(&b.parser);
    return st;
}

void run_node_free(run_node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++) {
        run_node_free(n->items[i]);
        if (n->keys)
            free(n->keys[i]);
    }
    free(n->items);
    free(n->keys);
    free(n->key_line);
    free(n->key_col);
    free(n->slots);
    free(n->text);
    free(n);
}

const run_node *run_node_get(const run_node *map, const char *key, size_t *index)
{
    if (!map || map->type != RUN_NODE_MAP)
        return NULL;
    if (map->n_slots) {
        size_t k = map->slots[key_slot(map, key)];
        if (k && index)
            *index = k - 1;
        return k ? map->items[k - 1] : NULL;
    }
    for (size_t i = 0; i < map->n; i++)
        if (strcmp(map->keys[i], key) == 0) {
            if (index)
                *index = i;
            return map->items[i];
        }
    return NULL;
}

const char *run_node_kind(const run_node *n)
{
    if (!n)
        return "nothing";
    switch (n->type) {
    case RUN_NODE_SCALAR:
        return "a scalar";
    case RUN_NODE_SEQ:
        return "a list";
    case RUN_NODE_MAP:
        return "a mapping";
    }
    return "a node";
}

/* Plain YAML scalars become null, booleans, integers or reals; quoted ones
 * stay strings. Integral reals below 2^53 become integers so that 10000 and
 * 10000.0 give the same run id. */
json_t *run_scalar_json(const run_node *n)
{
    const char *t = n->text;
    if (!n->quoted) {
        if (!*t || !strcmp(t, "~") || !strcmp(t, "null"))
            return json_null();
        if (!strcmp(t, "true") || !strcmp(t, "True"))
            return json_true();
        if (!strcmp(t, "false") || !strcmp(t, "False"))
            return json_false();
        char *end;
        errno = 0;
        double v = strtod(t, &end);
        if (*end == '\0' && end != t && errno == 0 && isfinite(v) &&
            strspn(t, "0123456789+-.eE") == strlen(t)) {
            if (v == floor(v) && fabs(v) < 9007199254740992.0)
                return json_integer((json_int_t)v);
            return json_real(v);
        }
    }
    return json_string(t);
}

json_t *run_node_json(const run_node *n)
{
    if (n->type == RUN_NODE_SCALAR)
        return run_scalar_json(n);
    json_t *o = n->type == RUN_NODE_MAP ? json_object() : json_array();
    for (size_t i = 0; o && i < n->n; i++) {
        json_t *v = run_node_json(n->items[i]);
        if (n->type == RUN_NODE_MAP)
            json_object_set_new(o, n->keys[i], v);
        else
            json_array_append_new(o, v);
    }
    return o;
}
