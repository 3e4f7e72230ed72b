/* Multimodal RoPE (mRoPE): which position stream rotates each pair, and how
 * a token index becomes a 3-D position (t, h, w). Semantics of Hugging Face
 * transformers (Qwen2-VL apply_multimodal_rotary_pos_emb and get_rope_index,
 * Qwen3-VL apply_interleaved_mrope) and vLLM's MRotaryEmbedding;
 * docs/encodings.md "mRoPE" writes down where they differ. Shared by the CPU
 * reference and the GPU host side like the frequencies (the shader has its
 * own rule, shaders/rope.comp rope_mrope_stream, checked against this). */
#include <string.h>

#include "pe/rope.h"

uint32_t rope_mrope_stream(const rope_freqs *f, uint32_t j)
{
    const uint32_t *s = f->mrope_section;
    if (f->mrope == ROPE_MROPE_SECTIONS)
        return j < s[0] ? 0u : j < s[0] + s[1] ? 1u : 2u;
    if (f->mrope == ROPE_MROPE_INTERLEAVED) {
        if (j % 3 == 1 && j < 3 * s[1])
            return 1u;
        if (j % 3 == 2 && j < 3 * s[2])
            return 2u;
    }
    return 0u;
}

int rope_freqs_index_relative(const rope_freqs *f)
{
    if (rope_freqs_per_position(f))
        return 0;
    return !f->mrope || f->desc.mrope_positions == ROPE_MROPE_POS_TEXT;
}

/* The merged grid: (t, h/m, w/m). */
static void llm_grid(const rope_freqs *f, uint64_t g[3])
{
    const rope_desc *d = &f->desc;
    uint32_t m = d->spatial_merge_size ? d->spatial_merge_size : 2;
    g[0] = d->mrope_image_grid[0];
    g[1] = d->mrope_image_grid[1] / m;
    g[2] = d->mrope_image_grid[2] / m;
}

uint64_t rope_mrope_image_tokens(const rope_freqs *f)
{
    if (f->desc.mrope_positions != ROPE_MROPE_POS_VL)
        return 0;
    uint64_t g[3];
    llm_grid(f, g);
    return g[0] * g[1] * g[2];
}

rl_status rope_mrope_positions(const rope_freqs *f, const uint32_t *table, uint64_t rows,
                               const uint32_t *idx, size_t tokens, uint32_t *pos3,
                               rl_error *err)
{
    int layout = f->mrope ? f->desc.mrope_positions : ROPE_MROPE_POS_TEXT;
    if (layout == ROPE_MROPE_POS_NPY) {
        for (size_t t = 0; t < tokens; t++) {
            if (!table || idx[t] >= rows)
                return rl_fail_key(err, RL_ERR_ARG, "mrope_positions_path",
                                   "mrope_positions_path %s: token %u is past its %llu rows (token "
                                   "index %zu of the launch)", f->desc.mrope_positions_path, idx[t],
                                   (unsigned long long)rows, t);
            memcpy(&pos3[3 * t], &table[3 * (uint64_t)idx[t]], 3 * sizeof *pos3);
        }
        return RL_OK;
    }
    if (layout != ROPE_MROPE_POS_VL) {
        for (size_t t = 0; t < tokens; t++)
            pos3[3 * t] = pos3[3 * t + 1] = pos3[3 * t + 2] = idx[t];
        return RL_OK;
    }
    /* HF Qwen2VLModel.get_rope_index, one image: the text before it gets
     * arange(N) on all three streams; the image's tokens (t-major, then h,
     * then w) get (t_idx, h_idx, w_idx) + N (text_len + st_idx); the text
     * after it continues at max(all so far) + 1 = N + max(t, h', w'). */
    uint64_t g[3], N = f->desc.mrope_text_before;
    llm_grid(f, g);
    uint64_t n_img = g[0] * g[1] * g[2];
    uint64_t gmax = g[0] > g[1] ? g[0] : g[1];
    gmax = gmax > g[2] ? gmax : g[2];
    for (size_t t = 0; t < tokens; t++) {
        uint64_t i = idx[t], p[3];
        if (i < N) {
            p[0] = p[1] = p[2] = i;
        } else if (i < N + n_img) {
            uint64_t k = i - N;
            p[0] = N + k / (g[1] * g[2]);
            p[1] = N + (k / g[2]) % g[1];
            p[2] = N + k % g[2];
        } else {
            p[0] = p[1] = p[2] = N + gmax + (i - N - n_img);
        }
        for (int s = 0; s < 3; s++) {
            if (p[s] > UINT32_MAX)
                return rl_fail_key(err, RL_ERR_ARG, "mrope_positions",
                                   "mrope_positions vl: token %llu's position %llu "
                                   "exceeds 2^32 - 1",
                                   (unsigned long long)i, (unsigned long long)p[s]);
            pos3[3 * t + s] = (uint32_t)p[s];
        }
    }
    return RL_OK;
}
