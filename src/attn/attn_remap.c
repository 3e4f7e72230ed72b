/* attn_remap.c — position remapping methods that need two logit
 * definitions (Self-Extend, ReRoPE, Leaky ReRoPE): the positions at which
 * the host rotates the remapped definition's Q and K, the encoding that
 * rotates them, and each method's relative distance from its formula
 * (docs/attention.md "Position remapping"). The engine only selects, per
 * (i, j), the exact definition inside the window and the remapped one
 * beyond it (attn_desc.remap_window, shaders/attn_remap.glsl).
 *
 * Sources, and the semantics followed:
 *  Self-Extend (Jin et al. 2024, "LLM Maybe LongLM", datamllab/LongLM
 *    self_extend_patch: group_size_1 = G, group_size_2 = W): for
 *    i - j < W the normal logit; beyond, q at floor(i/G) + W - floor(W/G)
 *    and k at floor(j/G), so the distance is floor(i/G) - floor(j/G) + W -
 *    floor(W/G). llama.cpp's grp-attn-n / grp-attn-w (KV-cache position
 *    division during generation) approximates the same map and is not
 *    followed.
 *  ReRoPE (Su 2023, bojone/rerope rerope_patch): |i - j| < w normal, else
 *    q rotated at w, k unrotated (position 0): distance w.
 *  Leaky ReRoPE (bojone/rerope leaky_rerope_patch): beyond w the distance
 *    is w + (i - j - w)/k: q at i + w(k - 1) and k at j, both rotated by the
 *    linear-scaled (factor k) twin of the encoding, i.e. angles (i + w(k -
 *    1))/k and j/k, as the patch's LlamaLinearScalingRotaryEmbedding with
 *    integer scaling_factor k.
 *  Dual Chunk Attention (An et al. 2024, "Training-Free Long-Context Scaling
 *    of Large Language Models", ICML; HKUNLP/ChunkLlama chunkllama_attn_replace;
 *    Qwen2.5-1M's vLLM DualChunkRotaryEmbedding, chunk_size S, local_size L):
 *    chunk length c = S - L; keys at j mod c; queries at i mod c for keys of
 *    the same chunk (intra), at min(i mod c + c, S) for the previous chunk
 *    (successive), at min(2c - 1, S) for chunks before it (inter; the
 *    successive map at index c - 1). vLLM's extra "critical" query caches
 *    (successive without the clamp, inter at i mod c + S) feed its sparse
 *    attention path and are not followed; its dense path uses these maps. */
#include <math.h>
#include <string.h>

#include "attn/attn.h"
#include "pe/rope.h"

static const char *const names[ATTN_REMAP_COUNT] = {"none", "self_extend", "rerope",
                                                    "leaky_rerope", "dca"};

const char *attn_remap_name(int method)
{
    return method >= 0 && method < ATTN_REMAP_COUNT ? names[method] : "?";
}

int attn_remap_from_name(const char *name)
{
    for (int m = 0; m < ATTN_REMAP_COUNT; m++)
        if (strcmp(name, names[m]) == 0)
            return m;
    return -1;
}

rl_status attn_remap_check(const attn_remap *r, rl_error *err)
{
    if (r->method < 0 || r->method >= ATTN_REMAP_COUNT)
        return rl_fail(err, RL_ERR_ARG, "attn_remap: unknown method %d (none, self_extend, rerope, "
                                        "leaky_rerope, dca)", r->method);
    if (r->method == ATTN_REMAP_NONE)
        return RL_OK;
    if (r->window < 1 || r->window > (1u << 31))
        return rl_fail(err, RL_ERR_ARG, "attn_remap_window %u: %s needs a window from 1 to 2^31",
                       r->window, names[r->method]);
    if (r->method == ATTN_REMAP_SELF_EXTEND && r->group < 1)
        return rl_fail(err, RL_ERR_ARG, "attn_remap_group %u: self_extend needs a group size >= 1",
                       r->group);
    if (r->method == ATTN_REMAP_LEAKY_REROPE && r->leak < 1)
        return rl_fail(err, RL_ERR_ARG, "attn_remap_leak %u: leaky_rerope needs k >= 1", r->leak);
    if (r->method == ATTN_REMAP_DCA && (r->chunk <= r->window || r->chunk > (1u << 31)))
        return rl_fail(err, RL_ERR_ARG,
                       "attn_remap_chunk %u: dca needs a chunk_size above its local window "
                       "attn_remap_window %u (chunk length S - L >= 1) and at most 2^31",
                       r->chunk, r->window);
    return RL_OK;
}

rl_status attn_remap_positions(const attn_remap *r, const uint32_t *pos, uint64_t tokens,
                               uint32_t *qpos, uint32_t *kpos, rl_error *err)
{
    rl_status st = attn_remap_check(r, err);
    if (st)
        return st;
    uint64_t W = r->window, G = r->group ? r->group : 1, K = r->leak ? r->leak : 1;
    for (uint64_t t = 0; t < tokens; t++) {
        uint64_t p = pos[t], q = p, k = p;
        switch (r->method) {
        case ATTN_REMAP_SELF_EXTEND:
            q = p / G + W - W / G;
            k = p / G;
            break;
        case ATTN_REMAP_REROPE:
            q = W;
            k = 0;
            break;
        case ATTN_REMAP_LEAKY_REROPE:
            q = p + W * (K - 1);
            break;
        default:
            break;
        }
        if (q > UINT32_MAX)
            return rl_fail(err, RL_ERR_ARG,
                           "%s: token %llu at position %llu maps its query to position %llu, "
                           "beyond 2^32 - 1 (attn_remap_window %u, attn_remap_leak %u)",
                           names[r->method], (unsigned long long)t, (unsigned long long)p,
                           (unsigned long long)q, r->window, r->leak);
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
        return rl_fail(err, RL_ERR_ARG, "attn_remap %s: not dca", attn_remap_name(r->method));
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
        return rl_fail(err, RL_ERR_ARG,
                       "attn_remap %s: remaps the positions of a rotary encoding (type rope or a "
                       "RoPE scaling), not '%s'", attn_remap_name(r->method),
                       pe_encoding_family(e)->name);
    if (r->method != ATTN_REMAP_LEAKY_REROPE)
        return RL_OK;
    if (f->rope_type != ROPE_TYPE_DEFAULT)
        return rl_fail(err, RL_ERR_ARG,
                       "attn_remap leaky_rerope: rotates its far definition by the linear-scaled "
                       "(factor attn_remap_leak) twin of plain RoPE; the encoding has rope_type "
                       "'%s'", rope_type_name(f->rope_type));
    json_t *p = json_deep_copy(pe_encoding_params(e));
    if (!p)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    json_object_set_new(p, "rope_type", json_string("linear"));
    json_object_set_new(p, "factor", json_real((double)r->leak));
    rl_status st = pe_encoding_create(pe_encoding_family(e)->name, p, pe_encoding_shape(e), far,
                                      err);
    json_decref(p);
    if (st)
        rl_error_prefix(err, "attn_remap leaky_rerope: the linear (factor %u) twin", r->leak);
    return st;
}

double attn_remap_distance(const attn_remap *r, int64_t pos_i, int64_t pos_j)
{
    double d = (double)(pos_i - pos_j), W = r->window;
    if (r->method == ATTN_REMAP_DCA) {
        int64_t c = (int64_t)r->chunk - (int64_t)r->window, S = r->chunk;
        int64_t dc = pos_i / c - pos_j / c;
        if (dc == 0)
            return d;
        int64_t qp = dc == 1 || dc == -1 ? (pos_i % c + c < S ? pos_i % c + c : S)
                                         : (2 * c - 1 < S ? 2 * c - 1 : S);
        return (double)(qp - pos_j % c);
    }
    if (r->method == ATTN_REMAP_NONE || fabs(d) < W)
        return d;
    switch (r->method) {
    case ATTN_REMAP_SELF_EXTEND: {
        double G = r->group;
        return floor((double)pos_i / G) - floor((double)pos_j / G) + W - floor(W / G);
    }
    case ATTN_REMAP_REROPE:
        return W;
    case ATTN_REMAP_LEAKY_REROPE:
        return W + (d - W) / r->leak;
    default:
        return d;
    }
}
