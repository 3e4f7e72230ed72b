/* rl_push.h — push-constant layouts shared by C and GLSL (one source of truth).
 *
 * Included by the host (C11) and by the shaders (GLSL 450 with
 * GL_EXT_shader_explicit_arithmetic_types_int32), so both sides read the same
 * struct text. Only 32-bit scalars are used, so the C layout and GLSL's
 * std430 push-constant layout agree; the C side _Static_asserts the sizes.
 * Every block starts with group_base: the dispatch helper writes it when it
 * splits a large grid into several dispatches (see rlvk_cmd_dispatch). */
#ifndef RL_PUSH_H
#define RL_PUSH_H

#ifndef VULKAN
#include <stdint.h>
#endif

/* Pair layouts of a rotary embedding. */
#define RL_ROPE_LAYOUT_HALF 0        /* GPT-NeoX/Llama rotate_half: j with j + rot/2 */
#define RL_ROPE_LAYOUT_INTERLEAVED 1 /* GPT-J/RoFormer: 2j with 2j + 1 */

/* Angle-precision modes (how cos/sin of pos * inv_freq are obtained). */
#define RL_ROPE_PREC_FP32 0          /* fp32 angle, builtin sin/cos */
#define RL_ROPE_PREC_TABLE 1         /* host double cos/sin table, fp32 */
#define RL_ROPE_PREC_PRECISE 2       /* exact reduction + own polynomials */
/* Framework emulation modes (docs/rope.md "Framework emulation"): the angle
 * construction and dtype roundings of each framework, bit for bit; sin/cos
 * are the device's builtins. */
#define RL_ROPE_PREC_HF 3            /* transformers: fp32 inv_freq x pos, cos/sin cast to dtype, ops in dtype */
#define RL_ROPE_PREC_VLLM 4          /* vLLM: fp32 cos/sin cache cast to dtype, ops in dtype */
#define RL_ROPE_PREC_GGML_CPU 5      /* ggml-cpu: theta *= theta_scale per pair, fp32 */
#define RL_ROPE_PREC_GGML_VULKAN 6   /* ggml-vulkan: pos * pow(theta_scale, j), device pow */
#define RL_ROPE_PREC_CUDA_FAST 7     /* ggml-cuda -use_fast_math: pos * powf(theta_scale, j) */
#define RL_ROPE_PREC_COUNT 8

/* Storage dtypes an emulation mode rounds to (round-to-nearest-even). */
#define RL_DTYPE_FP32 0
#define RL_DTYPE_FP16 1
#define RL_DTYPE_BF16 2
#define RL_DTYPE_TF32 3              /* only as an input rounding (hf tf32) */

/* rope.comp specialization constant 7 (emulation flags). */
#define RL_ROPE_EMU_TF32 1u          /* hf: inv_freq and position rounded to TF32 */
#define RL_ROPE_EMU_DUMP 2u          /* write every token's angles to binding 6 */
#define RL_ROPE_EMU_SLEEF 8u          /* hf, vllm: cos/sin as SLEEF's xcosf_u1/xsinf_u1 (rl_sleef.glsl) */
#define RL_ROPE_EMU_YARN 4u          /* ggml modes: rope_yarn (binding 3: factors, freq_scale, ramp_mix) */

/* rope.comp: bindings 0 x [rows][head_dim] f32 (in), 1 y [rows][head_dim]
 * f32 (out, may alias x), 2 pos [tokens] u32, 3 inv_freq [rot/2] f32 (per
 * token: [tokens][rot/2] then [tokens] attention factors from af_offset).
 * Shape (layout, head_dim, rotary_dim, heads) is specialised; see rope.comp. */
struct rl_rope_push {
    uint32_t group_base;
    uint32_t n_rows;      /* tokens * heads */
    float attn_factor;    /* multiplies cos and sin (HF attention_scaling) */
    uint32_t af_offset;   /* per-token variant: float index of the attention factors in binding 3 */
};

/* round.comp: out[i] = bits of in[i] rounded to the dtype (specialised),
 * widened back to fp32 bits (fp16: the half's 16 bits in the low word). */
struct rl_round_push {
    uint32_t group_base;
    uint32_t n;
};

/* copy.comp: y[i] = x[i] over n_vec4 vec4s; the bandwidth yardstick. */
struct rl_copy_push {
    uint32_t group_base;
    uint32_t n_vec4;
};

/* pe_add.comp: y = x + alpha * PE(pos) for every head; bindings 0 x
 * [rows][head_dim] f32, 1 y (same, may alias x), 2 pos [tokens] u32, 3 aux:
 * inv_freq [head_dim/2] f32 (sinusoid) or table [table_rows][head_dim] f32.
 * Mode, head_dim, heads and the beyond-table policy are specialised. */
struct rl_pe_add_push {
    uint32_t group_base;
    uint32_t n_elems;     /* tokens * heads * head_dim */
    float alpha;
    uint32_t table_rows;  /* PE_ADD_TABLE: rows of the table */
};

/* xpos.comp: one invocation per rotary pair (x_2j, x_2j+1) of every token
 * and head; bindings 0 x [tokens][heads][head_dim] f32, 1 y (same, may alias
 * x), 2 pos [tokens] u32, 3 aux [head_dim/2] vec2 (theta_j, k_j) with k_j =
 * +-log2(zeta_j)/scale_base (sign: + for q, - for k). head_dim and heads are
 * specialised. */
struct rl_xpos_push {
    uint32_t group_base;
    uint32_t n_pairs;     /* tokens * heads * head_dim/2 */
    int32_t center;       /* c: the decay exponent is (pos - c) * k_j */
    uint32_t pad;
};

/* bias_eval.comp: out[n] = rl_bias(items[n]) for one bias variant; binding 0
 * items [n_items] {h, qtok, ktok, qpos, kpos, pad x3} (32 bytes), 1 out
 * [n_items] f32, 2..7 unused, 8.. the variant's buffers (docs/attention.md "Bias hook"). */
struct rl_bias_eval_push {
    uint32_t group_base;
    uint32_t n_items;
};

/* attn.comp (streaming attention, see src/attn/attn.h and docs/attention.md).
 * Bindings: 0 Q_a [tokens][heads][head_dim], 1 K_a [tokens][kv_heads][head_dim],
 * 2 Q_b, 3 K_b (paired mode), 4 V [tokens][kv_heads][head_dim] (f32 or f16),
 * 5 idx u32 [2][tokens] (positions, then target keys), 6 out f32 (stats at 0,
 * buckets at off_buckets, O at off_out, logit dump at off_dump; rows not yet
 * finished hold their running state there), 7 learned sinks f32 [heads]
 * (RL_ATTN_F_SINKS); 8..11 the bias
 * function's own buffers (bias_NAME.glsl), or 11 Q_c (RL_ATTN_F_DCA, no bias). One dispatch covers one chunk of
 * RL_ATTN_KB * n_blocks keys of one KV head (key_base, kv_head). Flags are a
 * specialization constant, so statistics not asked for cost nothing. */
#define RL_ATTN_KB 16u           /* keys per block (unrolled in the shader) */
#define RL_ATTN_MAX_BLOCKS 8u    /* blocks per dispatch the shader can unroll */
#define RL_ATTN_F_ENTROPY 1u     /* entropy of p (nats) */
#define RL_ATTN_F_ARGMAX 2u      /* argmax key and its probability */
#define RL_ATTN_F_TARGET 4u      /* probability of idx[tokens + i] */
#define RL_ATTN_F_BUCKETS 8u     /* mass per distance bucket */
#define RL_ATTN_F_OUT 16u        /* O = softmax(QK^T) V */
#define RL_ATTN_F_PAIRED 32u     /* second logit definition, KL(p_a || p_b) */
#define RL_ATTN_F_DUMP 64u       /* write every logit (small problems only) */
#define RL_ATTN_F_CAUSAL 128u    /* keys j <= i only (token order) */
#define RL_ATTN_F_NO_BIAS_A 256u /* logits a without the bias function */
#define RL_ATTN_F_NO_BIAS_B 512u /* logits b without the bias function */
#define RL_ATTN_F_SINKS 2048u    /* learned sinks: binding 7 f32 [heads], one logit per head in
                                    the softmax denominator only (gpt-oss) */
#define RL_ATTN_F_TEMP 4096u     /* per-query logit scale tau_i (f32 bits at idx[off_temp + i]),
                                    definition a only: Llama 4 / Qwen log-n / SSMax */
#define RL_ATTN_F_MASK 1024u     /* window / sinks / chunks (push constants; idx[2 tokens + qb]:
                                    bidirectional, key_base of the last chunk block qb sees) */
#define RL_ATTN_F_REMAP 8192u    /* position remapping: logit_a from Q_a/K_a where |pos_i - pos_j|
                                    < remap_window, else from Q_b/K_b (attn_remap.glsl); with
                                    PAIRED, definition b is logit_a without the selection */
#define RL_ATTN_F_DCA 16384u     /* with REMAP: Dual Chunk Attention's three definitions, by chunk
                                    index d = |floor(pos_i / c) - floor(pos_j / c)| (c =
                                    remap_window): Q_a.K_a (d = 0), Q_b.K_b (1), Q_c.K_b (>= 2);
                                    Q_c at binding 11 (no-bias variant only) */
#define RL_ATTN_F_ROWS 32768u    /* sampled query rows: query slot r < n_rows is token
                                    idx[off_rows + r] (ascending); Q/Q_b/Q_c and every output
                                    row are [n_rows] slots, keys and positions [tokens] */
#define RL_ATTN_F_REMAP_EDGE 65536u /* with REMAP (not DCA): the key at |pos_i - pos_j| ==
                                    remap_window enters the softmax with BOTH definitions (its
                                    weight e^logit_a + e^logit_b; STRING's prefill, whose two
                                    flash passes both hold the key at distance S) */

/* Per-query statistic slots of the stats block [tokens][heads][RL_ATTN_NSTAT]. */
#define RL_ATTN_S_LSE 0          /* log sum_j exp(logit_a) */
#define RL_ATTN_S_MAX 1          /* max_j logit_a */
#define RL_ATTN_S_ENTROPY 2      /* -sum_j p_j log p_j */
#define RL_ATTN_S_ARGMAX 3       /* index of the first maximal key, as uint bits */
#define RL_ATTN_S_ARGMAX_P 4     /* its probability */
#define RL_ATTN_S_TARGET_P 5     /* probability of the target key (0 if masked) */
#define RL_ATTN_S_KL 6           /* KL(p_a || p_b) (paired) */
#define RL_ATTN_S_LSE_B 7        /* log-sum-exp of logits b (paired) */
#define RL_ATTN_NSTAT 8

struct rl_attn_push {
    uint32_t group_base;
    uint32_t qblock_base; /* first query block of this dispatch */
    uint32_t n_tokens;
    float scale_a;        /* logit = scale * <q, k> + bias */
    float scale_b;
    uint32_t off_buckets; /* float offsets into the out buffer */
    uint32_t off_out;
    uint32_t off_dump;
    uint32_t key_base;    /* first key of this dispatch's chunk */
    uint32_t kv_head;     /* the KV head of this dispatch */
    uint32_t window;      /* RL_ATTN_F_MASK: local keys |i - j| < window (0: no limit) */
    uint32_t n_sink;      /* RL_ATTN_F_MASK: keys j < n_sink always visible */
    uint32_t chunk_size;  /* RL_ATTN_F_MASK: local keys in i's chunk of chunk_size (0: one) */
    uint32_t off_temp;    /* RL_ATTN_F_TEMP: index into idx of the per-token logit scales */
    uint32_t remap_window; /* RL_ATTN_F_REMAP: definition a where |pos_i - pos_j| < remap_window;
                              with RL_ATTN_F_DCA the chunk length c */
    uint32_t off_rows;    /* RL_ATTN_F_ROWS: index into idx of the n_rows query tokens */
    uint32_t n_rows;      /* RL_ATTN_F_ROWS: query slots (else unused) */
    uint32_t key_window;  /* first key of the bound K/K_b/V window (K beyond one binding:
                             attn_gpu.c binds a window of keys per dispatch; else 0) */
    uint32_t heads;       /* query heads (rows are [token][head]) */
    uint32_t kv_group;    /* query heads per KV head (heads / kv_heads) */
};

/* fma_peak.comp: RL_FMA_ROUNDS unrolled rounds of 8 vec4 FMAs per invocation
 * (64 flops per round), on 3, 4, 6 or 8 running vec4 values (RL_FMA_RING). */
#define RL_FMA_ROUNDS 256u
struct rl_fma_push {
    uint32_t group_base;
    uint32_t pad0;
    float seed;
    uint32_t pad1;
};

#endif
