/* attn_remap.c — the position-remapping registry (attn_remap.h) and what
 * every method shares: the common checks, the position arrays, the encoding
 * that rotates the remapped definition. Each method's formulas, keys and
 * sources live in its src/attn/remap/NAME.c. The engine only selects, per
 * (i, j), the exact definition inside the window and the remapped one
 * beyond it (attn_desc.remap_window, shaders/attn_remap.glsl), or DCA's
 * three by chunk distance (attn_desc.remap_chunk). */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "attn/attn.h"
#include "pe/rope.h"

#define DECLARE(n) extern const attn_remap_method attn_remap_##n;
#define ENTRY(n) &attn_remap_##n,
#define INDEX(n) REG_##n,
ATTN_REMAP_LIST(DECLARE)
/* registry[0] is "none" (no entry) */
static const attn_remap_method *const registry[] = {NULL, ATTN_REMAP_LIST(ENTRY)};
enum { REG_none, ATTN_REMAP_LIST(INDEX) REG_COUNT };
_Static_assert((int)REG_self_extend == ATTN_REMAP_SELF_EXTEND && (int)REG_rerope ==
               ATTN_REMAP_REROPE && (int)REG_leaky_rerope == ATTN_REMAP_LEAKY_REROPE &&
               (int)REG_dca == ATTN_REMAP_DCA, "registry order = ATTN_REMAP_* constants");

int attn_remap_count(void) { return REG_COUNT; }

const attn_remap_method *attn_remap_method_at(int method)
{
    return method > 0 && method < REG_COUNT ? registry[method] : NULL;
}

const char *attn_remap_name(int method)
{
    if (method == ATTN_REMAP_NONE)
        return "none";
    const attn_remap_method *m = attn_remap_method_at(method);
    return m ? m->name : "?";
}

int attn_remap_from_name(const char *name)
{
    for (int m = 0; m < REG_COUNT; m++)
        if (strcmp(name, attn_remap_name(m)) == 0)
            return m;
    return -1;
}

static char names[256];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void build_names(void)
{
    size_t a = 0;
    for (int m = 0; m < REG_COUNT; m++) {
        const char *n = attn_remap_name(m);
        size_t l = strlen(n);
        if (a + l + 3 > sizeof names)
            break; /* tests/test_remap.c checks every name is listed */
        if (m)
            memcpy(names + a, ", ", 2), a += 2;
        memcpy(names + a, n, l), a += l;
    }
    names[a] = '\0';
}

const char *attn_remap_names(void)
{
    pthread_once(&names_once, build_names);
    return names;
}

int attn_remap_defs(const attn_remap *r)
{
    const attn_remap_method *m = attn_remap_method_at(r->method);
    return m ? m->defs : 0;
}

int attn_remap_edge_both(const attn_remap *r)
{
    const attn_remap_method *m = attn_remap_method_at(r->method);
    return m && m->defs == ATTN_REMAP_DEFS_WINDOW ? m->edge_both != 0 : 0;
}

double attn_remap_logit_factor(const attn_remap *r)
{
    const attn_remap_method *m = attn_remap_method_at(r->method);
    return m && m->logit_factor > 0 ? m->logit_factor : 1.0;
}

rl_status attn_remap_apply_mask(const attn_remap *r, attn_remap_mask *mk, rl_error *err)
{
    const attn_remap_method *m = attn_remap_method_at(r->method);
    return m && m->mask ? m->mask(r, mk, err) : RL_OK;
}

rl_status attn_remap_check(const attn_remap *r, rl_error *err)
{
    if (r->method < 0 || r->method >= REG_COUNT)
        return rl_fail_key(err, RL_ERR_ARG, "attn_remap",
                           "attn_remap: unknown method %d (%s)", r->method,
                           attn_remap_names());
    const attn_remap_method *m = attn_remap_method_at(r->method);
    if (!m)
        return RL_OK;
    if (r->window < 1 || r->window > (1u << 31))
        return rl_fail_key(err, RL_ERR_ARG, "attn_remap_window",
                           "attn_remap_window %u: %s needs a window from 1 to 2^31",
                           r->window, m->name);
    return m->check ? m->check(r, err) : RL_OK;
}

rl_status attn_remap_positions(const attn_remap *r, const uint32_t *pos, uint64_t tokens,
                               uint32_t *qpos, uint32_t *kpos, rl_error *err)
{
    rl_status st = attn_remap_check(r, err);
    if (st)
        return st;
    const attn_remap_method *m = attn_remap_method_at(r->method);
    if (m && !m->positions)
        return rl_fail_key(err, RL_ERR_ARG, "attn_remap",
                           "attn_remap %s: no single position map (see "
                           "attn_remap_dca_positions)", m->name);
    for (uint64_t t = 0; t < tokens; t++) {
        uint64_t p = pos[t], q = p, k = p;
        if (m)
            m->positions(r, p, &q, &k);
        if (q > UINT32_MAX || k > UINT32_MAX)
            return rl_fail(err, RL_ERR_ARG,
                           "%s: token %llu at position %llu maps its query to position %llu and "
                           "its key to %llu, beyond 2^32 - 1 (attn_remap_window %u, "
                           "attn_remap_leak %u, attn_remap_local %u)",
                           attn_remap_name(r->method), (unsigned long long)t,
                           (unsigned long long)p, (unsigned long long)q, (unsigned long long)k,
                           r->window, r->leak, r->local);
        qpos[t] = (uint32_t)q;
        kpos[t] = (uint32_t)k;
    }
    return RL_OK;
}

rl_status attn_remap_dca_positions(const attn_remap *r, const uint32_t *pos, uint64_t tokens,
                                   uint32_t *q_intra, uint32_t *q_succ, uint32_t *q_inter,
                                   uint32_t *kpos, rl_error *err)
{
    rl_status st = attn_remap_check(r, err);
    if (st)
        return st;
    if (r->method != ATTN_REMAP_DCA)
        return rl_fail_key(err, RL_ERR_ARG, "attn_remap",
                           "attn_remap %s: not dca", attn_remap_name(r->method));
    uint64_t S = r->chunk, c = S - r->window;
    uint64_t inter = 2 * c - 1 < S ? 2 * c - 1 : S;
    for (uint64_t t = 0; t < tokens; t++) {
        uint64_t m = pos[t] % c;
        q_intra[t] = (uint32_t)m;
        q_succ[t] = (uint32_t)(m + c < S ? m + c : S);
        q_inter[t] = (uint32_t)inter;
        kpos[t] = (uint32_t)m;
    }
    return RL_OK;
}

rl_status attn_remap_encoding(const attn_remap *r, const pe_encoding *e, pe_encoding **far,
                              rl_error *err)
{
    *far = NULL;
    const rope_freqs *f = pe_rope_freqs(e);
    if (!f || pe_has_bias(e))
        return rl_fail_key(err, RL_ERR_ARG, "attn_remap",
                           "attn_remap %s: remaps the positions of a rotary encoding (type rope "
                           "or a RoPE scaling), not '%s'", attn_remap_name(r->method),
                           pe_encoding_family(e)->name);
    const attn_remap_method *m = attn_remap_method_at(r->method);
    if (!m || !m->linear_twin)
        return RL_OK;
    if (f->rope_type != ROPE_TYPE_DEFAULT)
        return rl_fail_key(err, RL_ERR_ARG, "attn_remap",
                           "attn_remap %s: rotates its far definition by the linear-scaled "
                           "(factor attn_remap_leak) twin of plain RoPE; the encoding has "
                           "rope_type '%s'", m->name, rope_type_name(f->rope_type));
    rl_status st = pe_rope_linear_twin(e, (double)r->leak, far, err);
    if (st) { /* the twin differs from e only by its factor, attn_remap_leak */
        rl_error_prefix(err, "attn_remap %s: the linear (factor %u) twin", m->name, r->leak);
        rl_error_set_key(err, "attn_remap_leak");
    }
    return st;
}

double attn_remap_distance(const attn_remap *r, int64_t pos_i, int64_t pos_j)
{
    const attn_remap_method *m = attn_remap_method_at(r->method);
    return m ? m->distance(r, pos_i, pos_j) : (double)(pos_i - pos_j);
}
