/* attn_remap dca: Dual Chunk Attention.
 *
 * An et al. 2024, "Training-Free Long-Context Scaling of Large Language
 * Models", ICML; HKUNLP/ChunkLlama chunkllama_attn_replace; Qwen2.5-1M's
 * vLLM DualChunkRotaryEmbedding, chunk_size S, local_size L): chunk length
 * c = S - L; keys at j mod c; queries at i mod c for keys of the same chunk
 * (intra), at min(i mod c + c, S) for the previous chunk (successive), at
 * min(2c - 1, S) for chunks before it (inter; the successive map at index
 * c - 1). vLLM's extra "critical" query caches (successive without the
 * clamp, inter at i mod c + S) feed its sparse attention path and are not
 * followed; its dense path uses these maps. The positions are
 * attn_remap_dca_positions (attn_remap.c): three query maps, no single one. */
#include "attn/attn_remap.h"

static rl_status check(const attn_remap *r, rl_error *err)
{
    if (r->chunk <= r->window || r->chunk > (1u << 31))
        return rl_fail_key(err, RL_ERR_ARG, "attn_remap_chunk",
                       "attn_remap_chunk %u: dca needs a chunk_size above its local window "
                       "attn_remap_window %u (chunk length S - L >= 1) and at most 2^31",
                       r->chunk, r->window);
    return RL_OK;
}

static double distance(const attn_remap *r, int64_t pos_i, int64_t pos_j)
{
    int64_t c = (int64_t)r->chunk - (int64_t)r->window, S = r->chunk;
    int64_t dc = pos_i / c - pos_j / c;
    if (dc == 0)
        return (double)(pos_i - pos_j);
    int64_t qp = dc == 1 || dc == -1 ? (pos_i % c + c < S ? pos_i % c + c : S)
                                     : (2 * c - 1 < S ? 2 * c - 1 : S);
    return (double)(qp - pos_j % c);
}

static const char *const keys[] = {"attn_remap_window", "attn_remap_chunk", NULL};

const attn_remap_method attn_remap_dca = {
    .name = "dca",
    .summary = "Dual Chunk Attention: intra / successive / inter-chunk positions by chunk "
               "distance",
    .source = "An et al. 2024, Training-Free Long-Context Scaling of LLMs (ICML); "
              "HKUNLP/ChunkLlama chunkllama_attn_replace; vLLM DualChunkRotaryEmbedding",
    .defs = ATTN_REMAP_DEFS_CHUNK,
    .keys = keys,
    .check = check,
    .distance = distance,
};
