#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_control_flow_attributes : require
#ifdef RL_ATTN_FP16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
/* Streaming attention statistics (flash-attention style online softmax,
 * Dao et al. 2022) over [tokens][heads][head_dim] Q and K (and V).
 *
 * One invocation owns one query row (token i, head h); a workgroup owns
 * WG consecutive query tokens of one head, so group g -> head g % HEADS and
 * query block qblock_base + g / HEADS (divisions by specialization constants).
 * Keys stream through shared memory in tiles of TILE_K keys (vec4 loads,
 * every invocation reads the same shared address -> a broadcast); logits are
 * formed 4 keys at a time with vec4 FMA accumulators, then folded into the
 * running statistics once per tile (one rescale per tile).
 *
 *   logit_a(h, i, j) = scale_a <q_a[i,h], k_a[j,kvh]> + bias(h, i, j, pos_i, pos_j)
 *   logit_b likewise with q_b, k_b, scale_b (paired mode)
 *   kvh = h / KV_GROUP (grouped-query attention)
 *
 * Bias: bias_NAME.glsl chosen at compile time (one SPIR-V variant per bias). */
#include "rl_push.h"
#include "rl_common.glsl"
#include "attn_softmax.glsl"

#if defined(RL_BIAS_ALIBI)
#include "bias_alibi.glsl"
#elif defined(RL_BIAS_T5)
#include "bias_t5.glsl"
#elif defined(RL_BIAS_XL)
#include "bias_xl.glsl"
#else
#include "bias_none.glsl"
#define RL_ATTN_NO_BIAS 1
#endif

layout(constant_id = 1) const uint32_t HEAD_DIM = 128;
layout(constant_id = 2) const uint32_t HEADS = 1;
layout(constant_id = 3) const uint32_t KV_GROUP = 1;   /* heads / kv_heads */
layout(constant_id = 4) const uint32_t TILE_K = 32;    /* keys per shared tile, % 4 == 0 */
layout(constant_id = 5) const uint32_t FLAGS = 0;      /* RL_ATTN_F_* */
layout(constant_id = 6) const uint32_t N_BUCKETS = 1;  /* distance buckets (>= 1) */
layout(constant_id = 7) const uint32_t PAIRED_N = 0;   /* 1 in paired mode (sizes shared arrays) */
layout(constant_id = 8) const uint32_t HAS_V_N = 0;    /* 1 when O is computed */

const uint32_t D4 = HEAD_DIM / 4u;
const uint32_t KV_HEADS = HEADS / KV_GROUP;
const bool CAUSAL = (FLAGS & RL_ATTN_F_CAUSAL) != 0u;
const bool WANT_H = (FLAGS & RL_ATTN_F_ENTROPY) != 0u;
const bool WANT_ARGMAX = (FLAGS & RL_ATTN_F_ARGMAX) != 0u;
const bool WANT_TARGET = (FLAGS & RL_ATTN_F_TARGET) != 0u;
const bool WANT_BUCKETS = (FLAGS & RL_ATTN_F_BUCKETS) != 0u;
const bool WANT_O = (FLAGS & RL_ATTN_F_OUT) != 0u;
const bool PAIRED = (FLAGS & RL_ATTN_F_PAIRED) != 0u;
const bool DUMP = (FLAGS & RL_ATTN_F_DUMP) != 0u;
const bool BIAS_A = (FLAGS & RL_ATTN_F_NO_BIAS_A) == 0u;
const bool BIAS_B = (FLAGS & RL_ATTN_F_NO_BIAS_B) == 0u;

layout(push_constant) uniform Push { rl_attn_push p; } pc;

#ifdef RL_ATTN_FP16
#define VEC4_T f16vec4
#else
#define VEC4_T vec4
#endif
layout(std430, binding = 0) readonly buffer QA { VEC4_T qa[]; };  /* [tokens][heads][D4] */
layout(std430, binding = 1) readonly buffer KA { VEC4_T ka[]; };  /* [tokens][kv_heads][D4] */
layout(std430, binding = 2) readonly buffer QB { VEC4_T qb[]; };  /* paired: like qa */
layout(std430, binding = 3) readonly buffer KB { VEC4_T kb[]; };  /* paired: like ka */
layout(std430, binding = 4) readonly buffer VV { VEC4_T vv[]; };  /* [tokens][kv_heads][D4] */
layout(std430, binding = 5) readonly buffer IDX { uint32_t idx[]; }; /* [2][tokens]: pos, target */
layout(std430, binding = 6) buffer OUT { float outv[]; };         /* see rl_push.h */

shared vec4 ks_a[TILE_K * D4];
shared vec4 ks_b[TILE_K * D4 * PAIRED_N + 1u];
shared vec4 vs[TILE_K * D4 * HAS_V_N + 1u];
shared uint32_t kpos_s[TILE_K];

const float NEG_INF = -1.0 / 0.0;

void main()
{
    const uint32_t WG = gl_WorkGroupSize.x;
    uint32_t lid = gl_LocalInvocationID.x;
    uint32_t g = RL_GROUP_ID;
    uint32_t head = g % HEADS;
    uint32_t qblock = pc.p.qblock_base + g / HEADS;
    uint32_t n = pc.p.n_tokens;
    uint32_t qi = qblock * WG + lid;
    bool live = qi < n;
    uint32_t qrow = live ? qi : n - 1u;          /* inactive lanes compute a copy, write nothing */
    uint32_t kvh = head / KV_GROUP;
    int32_t qpos = int32_t(idx[qrow]);
    uint32_t target = WANT_TARGET ? idx[n + qrow] : 0u;

    vec4 q[D4];
    vec4 q2[PAIRED ? D4 : 1u];
    [[unroll]] for (uint32_t d = 0u; d < D4; d++)
        q[d] = vec4(qa[(qrow * HEADS + head) * D4 + d]);
    if (PAIRED)
        for (uint32_t d = 0u; d < D4; d++)
            q2[d] = vec4(qb[(qrow * HEADS + head) * D4 + d]);

    float m = NEG_INF, l = 0.0, ent = 0.0;
    float mb = NEG_INF, lb = 0.0, kl = 0.0;
    uint32_t amax = 0u;
    float s_target = NEG_INF;
    float mass[N_BUCKETS];
    for (uint32_t b = 0u; b < N_BUCKETS; b++)
        mass[b] = 0.0;
    vec4 o[WANT_O ? D4 : 1u];
    for (uint32_t d = 0u; d < (WANT_O ? D4 : 1u); d++)
        o[d] = vec4(0.0);

    /* Causal: a block's last query bounds its keys. */
    uint32_t kend = CAUSAL ? min(n, qblock * WG + WG) : n;
    /* Every loop inside the tile loop is unrolled except the 4-key block loop
     * (and O's head_dim loop): lavapipe's gallivm stops a shader after 65535
     * loop iterations in total per invocation (LP_MAX_TGSI_LOOP_ITERATIONS,
     * shared by all loops), so iterations per tile must stay few; the host
     * refuses lengths beyond that on llvmpipe (attn_check_shape). */
    for (uint32_t t0 = 0u; t0 < kend; t0 += TILE_K) {
        barrier();
        [[unroll]] for (uint32_t e = lid; e < TILE_K * D4; e += WG) {
            uint32_t key = t0 + e / D4;
            uint32_t src = (min(key, n - 1u) * KV_HEADS + kvh) * D4 + e % D4;
            ks_a[e] = key < n ? vec4(ka[src]) : vec4(0.0);
            if (PAIRED)
                ks_b[e] = key < n ? vec4(kb[src]) : vec4(0.0);
            if (WANT_O)
                vs[e] = key < n ? vec4(vv[src]) : vec4(0.0);
        }
        [[unroll]] for (uint32_t c = lid; c < TILE_K; c += WG)
            kpos_s[c] = idx[min(t0 + c, n - 1u)];
        barrier();

        float s[TILE_K];
        float s2[PAIRED ? TILE_K : 1u];
        /* Logits 4 keys at a time; one scalar accumulator per key (a
         * register per key across SIMD lanes), the 4 components of each
         * q.k product chained through FMAs. */
        const vec4 one = vec4(1.0);
        [[unroll]] for (uint32_t c = 0u; c < TILE_K; c += 4u) {
            float a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
            [[unroll]] for (uint32_t d = 0u; d < D4; d++) {
                vec4 qv = q[d];
                vec4 k0 = ks_a[(c + 0u) * D4 + d], k1 = ks_a[(c + 1u) * D4 + d];
                vec4 k2 = ks_a[(c + 2u) * D4 + d], k3 = ks_a[(c + 3u) * D4 + d];
                a0 = fma(qv.x, k0.x, fma(qv.y, k0.y, fma(qv.z, k0.z, fma(qv.w, k0.w, a0))));
                a1 = fma(qv.x, k1.x, fma(qv.y, k1.y, fma(qv.z, k1.z, fma(qv.w, k1.w, a1))));
                a2 = fma(qv.x, k2.x, fma(qv.y, k2.y, fma(qv.z, k2.z, fma(qv.w, k2.w, a2))));
                a3 = fma(qv.x, k3.x, fma(qv.y, k3.y, fma(qv.z, k3.z, fma(qv.w, k3.w, a3))));
            }
            s[c + 0u] = a0 * pc.p.scale_a;
            s[c + 1u] = a1 * pc.p.scale_a;
            s[c + 2u] = a2 * pc.p.scale_a;
            s[c + 3u] = a3 * pc.p.scale_a;
            if (PAIRED) {
                vec4 b0 = vec4(0.0), b1 = vec4(0.0), b2 = vec4(0.0), b3 = vec4(0.0);
                [[unroll]] for (uint32_t d = 0u; d < D4; d++) {
                    vec4 qv = q2[d];
                    b0 = fma(qv, ks_b[(c + 0u) * D4 + d], b0);
                    b1 = fma(qv, ks_b[(c + 1u) * D4 + d], b1);
                    b2 = fma(qv, ks_b[(c + 2u) * D4 + d], b2);
                    b3 = fma(qv, ks_b[(c + 3u) * D4 + d], b3);
                }
                s2[c + 0u] = dot(b0, one) * pc.p.scale_b;
                s2[c + 1u] = dot(b1, one) * pc.p.scale_b;
                s2[c + 2u] = dot(b2, one) * pc.p.scale_b;
                s2[c + 3u] = dot(b3, one) * pc.p.scale_b;
            }
        }

        /* Mask, bias, tile max. */
        float mt = NEG_INF, mtb = NEG_INF;
        [[unroll]] for (uint32_t c = 0u; c < TILE_K; c++) {
            uint32_t j = t0 + c;
            bool valid = j < n && (!CAUSAL || j <= qi);
#ifndef RL_ATTN_NO_BIAS
            if (valid && (BIAS_A || (PAIRED && BIAS_B))) {
                float bias = rl_bias(head, qrow, j, qpos, int32_t(kpos_s[c]));
                if (BIAS_A)
                    s[c] += bias;
                if (PAIRED && BIAS_B)
                    s2[c] += bias;
            }
#endif
            s[c] = valid ? s[c] : NEG_INF;
            mt = max(mt, s[c]);
            if (PAIRED) {
                s2[c] = valid ? s2[c] : NEG_INF;
                mtb = max(mtb, s2[c]);
            }
            if (DUMP && live && j < n)
                outv[pc.p.off_dump + (head * n + qi) * n + j] = s[c];
        }

        if (mt > NEG_INF) {
            float m_new = max(m, mt);
            float alpha = rl_attn_alpha(m, m_new);
            float delta = m == NEG_INF ? 0.0 : m - m_new;
            float mb_new = PAIRED ? max(mb, mtb) : 0.0;
            float delta_b = (!PAIRED || mb == NEG_INF) ? 0.0 : mb - mb_new;
            if (WANT_H)
                ent = alpha * (ent + delta * l);
            if (PAIRED) {
                kl = alpha * (kl + (delta - delta_b) * l);
                lb *= rl_attn_alpha(mb, mb_new);
            }
            l *= alpha;
            if (WANT_BUCKETS)
                [[unroll]] for (uint32_t b = 0u; b < N_BUCKETS; b++)
                    mass[b] *= alpha;
            if (WANT_ARGMAX && mt > m) {
                [[unroll]] for (uint32_t c = 0u; c < TILE_K; c++) /* first maximal key wins */
                    amax = s[TILE_K - 1u - c] == mt ? t0 + TILE_K - 1u - c : amax;
            }
            [[unroll]] for (uint32_t c = 0u; c < TILE_K; c++) {
                float t = s[c] - m_new;
                float pj = exp(t);                     /* 0 for masked keys */
                l += pj;
                if (WANT_H && pj > 0.0)
                    ent += pj * t;
                if (PAIRED && pj > 0.0)
                    kl += pj * (t - (s2[c] - mb_new));
                if (PAIRED)
                    lb += exp(s2[c] - mb_new);
                if (WANT_TARGET && t0 + c == target)
                    s_target = s[c];
                if (WANT_BUCKETS) {
                    /* Constant indices only: a private array indexed per lane
                     * would become a scatter on SIMD-across-lanes devices. */
                    uint32_t bk = rl_attn_bucket(uint32_t(abs(int32_t(kpos_s[c]) - qpos)));
                    [[unroll]] for (uint32_t b = 0u; b < N_BUCKETS; b++)
                        mass[b] += bk == b ? pj : 0.0;
                }
                s[c] = pj;                             /* s becomes p for O below */
            }
            /* O: one accumulator per output vec4, keys innermost, so the
             * per-invocation array is touched once per tile. */
            if (WANT_O)
                for (uint32_t d = 0u; d < D4; d++) {
                    vec4 acc = o[d] * alpha;
                    [[unroll]] for (uint32_t c = 0u; c < TILE_K; c++)
                        acc = fma(vec4(s[c]), vs[c * D4 + d], acc);
                    o[d] = acc;
                }
            m = m_new;
            if (PAIRED)
                mb = mb_new;
        }
    }

    if (!live)
        return;
    uint32_t row = qi * HEADS + head;
    float logl = log(l);
    uint32_t so = row * RL_ATTN_NSTAT;
    outv[so + RL_ATTN_S_LSE] = m + logl;
    outv[so + RL_ATTN_S_MAX] = m;
    if (WANT_H)
        outv[so + RL_ATTN_S_ENTROPY] = logl - ent / l;
    if (WANT_ARGMAX) {
        outv[so + RL_ATTN_S_ARGMAX] = uintBitsToFloat(amax);
        outv[so + RL_ATTN_S_ARGMAX_P] = 1.0 / l;
    }
    if (WANT_TARGET)
        outv[so + RL_ATTN_S_TARGET_P] = exp(s_target - (m + logl));
    if (PAIRED) {
        outv[so + RL_ATTN_S_KL] = kl / l - logl + log(lb);
        outv[so + RL_ATTN_S_LSE_B] = mb + log(lb);
    }
    if (WANT_BUCKETS)
        for (uint32_t b = 0u; b < N_BUCKETS; b++)
            outv[pc.p.off_buckets + row * N_BUCKETS + b] = mass[b] / l;
    if (WANT_O)
        for (uint32_t d = 0u; d < D4; d++) {
            vec4 r = o[d] / l;
            uint32_t base = pc.p.off_out + row * HEAD_DIM + 4u * d;
            outv[base] = r.x; outv[base + 1u] = r.y; outv[base + 2u] = r.z; outv[base + 3u] = r.w;
        }
}
