#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#ifndef RL_CM_EMULATE
#extension GL_KHR_memory_scope_semantics : require
#extension GL_NV_cooperative_matrix : require
#endif
/* Streaming attention statistics with cooperative matrices
 * (GL_NV_cooperative_matrix source; the build also rewrites the NV SPIR-V
 * to SPV_KHR_cooperative_matrix, tools/spv_khr.h; fp16 inputs, fp32
 * accumulators). The
 * cooperative-matrix variant of attn.comp (docs/attention.md
 * "Cooperative-matrix path"): the same bindings, push constants, dispatch
 * grid and running state in the output slots between key chunks, so the
 * engine (attn_gpu.c) drives both alike; only the products differ.
 *
 * A workgroup owns WG = 64 consecutive query tokens of one head (64 / CM_M row
 * tiles of CM_M rows); one dispatch covers one chunk of N_BLOCKS key
 * blocks of KB = CM_N keys of one KV head. Per key block:
 *   1. the workgroup stages K (and V) of the block's CM_N keys in shared
 *      memory as fp16 ([key][head_dim]); Q of its 64 rows was staged once;
 *   2. each subgroup computes S = Q K^T for its row tiles: HEAD_DIM / CM_K
 *      coopMatMulAdd steps into an fp32 CM_M x CM_N accumulator, stored to
 *      shared memory ss[64][CM_N];
 *   3. each invocation takes its own row of ss: scale, mask (causal, the
 *      chunk's end), block max, online-softmax update of m, l, entropy,
 *      argmax and target exactly as attn.comp does per key, and (O) writes
 *      its row of P = 2^15 exp(s - m_new) as fp16 into ps[64][CM_N];
 *   4. O: for each CM_K-column slice of head_dim, each subgroup computes
 *      P V_slice (coopMatMulAdd, fp32 accumulator) into pvs[64][CM_K]; each
 *      invocation folds its row into its fp32 running o (o alpha + 2^-15 PV).
 * The 2^15 keeps P's fp16 rounding relative down to p = 2^-29 whatever the
 * device's fp16 denormal handling (attn_cm.c: the bound).
 * Statistics: lse, max, entropy, argmax (+ its p), target p, O. Not here
 * (refused by attn_cm_check, attn_cm.c): logit biases, paired KL, distance
 * buckets, logit dump, masks beyond causal, learned sinks, temperature.
 *
 * RL_CM_EMULATE (the test variant attn_cm_emu_f16, attn_desc.test_cm_emulate):
 * the three tensor operations (load, multiply-add, store) become plain
 * subgroup loops reading the same (array, element, stride, column-major)
 * arguments by the extension's layout rule, element (r, c) at
 * element + r * stride + c (row-major) or element + c * stride + r
 * (column-major); everything else is this file's code as it is. It runs on
 * any device (lavapipe), so the staging, the tile layouts, the online
 * softmax from stored tiles and the P V fold are tested there; the
 * cooperative-matrix instructions themselves are not. */
#include "rl_push.h"
#include "rl_common.glsl"
#include "attn_softmax.glsl"

/* Specialization constants: the ids of attn.comp (the engine passes the
 * same six; heads and the GQA group are push constants) and the tile shape
 * (attn_cm.c's tile plan picks it from the
 * device's list: 16x16x16 on NV, 8x8x8 on Mesa's lavapipe): CM_N is the
 * key block KB, CM_M must divide the 64-query workgroup, HEAD_DIM must be
 * a multiple of CM_K. */
layout(constant_id = 1) const uint32_t HEAD_DIM = 64;
layout(constant_id = 2) const uint32_t FLAGS = 0;
layout(constant_id = 3) const uint32_t N_BUCKETS = 1;  /* unused: buckets refused */
layout(constant_id = 4) const uint32_t N_BLOCKS = RL_ATTN_MAX_BLOCKS;
layout(constant_id = 5) const uint32_t KB = 16;        /* = CM_N */
layout(constant_id = 7) const uint32_t CM_M = 16;      /* rows (queries) of a tile */
layout(constant_id = 8) const uint32_t CM_K = 16;     /* head dimensions per step */
const uint32_t CM_N = KB;                               /* columns (keys) of a tile */

const uint32_t WG = 64u;
const uint32_t DT = HEAD_DIM / CM_K;       /* CM_K-wide slices of head_dim */
const uint32_t ROW_TILES = WG / CM_M;      /* 4 (16 rows), 8 (8 rows) */
const bool CAUSAL = (FLAGS & RL_ATTN_F_CAUSAL) != 0u;
const bool WANT_H = (FLAGS & RL_ATTN_F_ENTROPY) != 0u;
const bool WANT_ARGMAX = (FLAGS & RL_ATTN_F_ARGMAX) != 0u;
const bool WANT_TARGET = (FLAGS & RL_ATTN_F_TARGET) != 0u;
const bool WANT_O = (FLAGS & RL_ATTN_F_OUT) != 0u;
const float P_SCALE = 32768.0;             /* 2^15 */
const float P_UNSCALE = 1.0 / 32768.0;

layout(push_constant) uniform Push { rl_attn_push p; } pc;

layout(std430, binding = 0) readonly buffer QA { float16_t qa[]; }; /* [tokens][heads][HEAD_DIM] */
layout(std430, binding = 1) readonly buffer KA { float16_t ka[]; }; /* [tokens][kv_heads][HEAD_DIM] */
layout(std430, binding = 4) readonly buffer VV { float16_t vv[]; }; /* [tokens][kv_heads][HEAD_DIM] */
layout(std430, binding = 5) readonly buffer IDX { uint32_t idx[]; }; /* [2][tokens]: pos, target */
layout(std430, binding = 6) buffer OUT { float outv[]; };         /* see rl_push.h */

shared float16_t qs[WG * HEAD_DIM];                        /* [row][d] */
shared float16_t ks[CM_N * HEAD_DIM];                      /* [key][d] */
shared float16_t vs[WANT_O ? CM_N * HEAD_DIM : 1u];        /* [key][d] */
shared float ss[WG * CM_N];                                /* S tile rows: [row][key] */
shared float16_t ps[WANT_O ? WG * CM_N : 1u];              /* 2^15 P: [row][key] */
shared float pvs[WANT_O ? WG * CM_K : 1u];                 /* 2^15 P V slice: [row][col] */

const float NEG_INF = -1.0 / 0.0;

/* The operands of the three tensor products: (array, first element,
 * stride, column-major), shared by the real and the emulated code. */
#define QK_A qs, rt * CM_M * HEAD_DIM + dt * CM_K, HEAD_DIM, false /* Q rows, d slice */
#define QK_B ks, dt * CM_K, HEAD_DIM, true                        /* K^T: K [key][d] */
#define QK_S ss, rt * CM_M * CM_N, CM_N, false                    /* S rows */
#define PV_A ps, rt * CM_M * CM_N, CM_N, false                    /* P rows */
#define PV_B vs, dt * CM_K, HEAD_DIM, false                       /* V [key][d] slice */
#define PV_S pvs, rt * CM_M * CM_K, CM_K, false                   /* P V rows */
#ifdef RL_CM_EMULATE
#define CM_AT_(arr, el, st, cm, r, c) arr[(el) + ((cm) ? (c) * (st) + (r) : (r) * (st) + (c))]
#define CM_AT(args, r, c) CM_AT_(args, r, c)
#endif

float o[WANT_O ? HEAD_DIM : 1u];
float s[CM_N];
float m, l, ent, s_target, m_new;
uint32_t amax, n, qi, target;
bool live;

/* Stages keys key_base + t0 .. + CM_N - 1 of this KV head (K, and V with O) as
 * fp16, keys past the end repeating the last one (masked later). */
void cm_stage(uint32_t t0)
{
    uint32_t lid = gl_LocalInvocationID.x;
    uint32_t kv_heads = pc.p.heads / pc.p.kv_group; /* once, not per staged element */
    barrier();
    for (uint32_t e = lid; e < CM_N * HEAD_DIM; e += WG) {
        uint32_t j = min(pc.p.key_base + t0 + e / HEAD_DIM, n - 1u);
        uint32_t src = (j * kv_heads + pc.p.kv_head) * HEAD_DIM + e % HEAD_DIM;
        ks[e] = ka[src];
        if (WANT_O)
            vs[e] = vv[src];
    }
    barrier();
}

/* S = Q K^T for the subgroup's row tiles into ss (fp32 accumulation). */
void cm_qk()
{
    for (uint32_t rt = gl_SubgroupID; rt < ROW_TILES; rt += gl_NumSubgroups) {
#ifndef RL_CM_EMULATE
        fcoopmatNV<32, gl_ScopeSubgroup, CM_M, CM_N> acc =
            fcoopmatNV<32, gl_ScopeSubgroup, CM_M, CM_N>(0.0);
        for (uint32_t dt = 0u; dt < DT; dt++) {
            fcoopmatNV<16, gl_ScopeSubgroup, CM_M, CM_K> a;
            fcoopmatNV<16, gl_ScopeSubgroup, CM_K, CM_N> b;
            /* A = Q rows rt*CM_M.., columns dt*CM_K..; B[kk][key] = K[key][dt*CM_K + kk]:
             * K stored [key][d] read column-major is K^T. */
            coopMatLoadNV(a, QK_A);
            coopMatLoadNV(b, QK_B);
            acc = coopMatMulAddNV(a, b, acc);
        }
        coopMatStoreNV(acc, QK_S);
#else
        for (uint32_t e = gl_SubgroupInvocationID; e < CM_M * CM_N; e += gl_SubgroupSize) {
            uint32_t r = e / CM_N, c = e % CM_N;
            float acc = 0.0;
            for (uint32_t dt = 0u; dt < DT; dt++)
                for (uint32_t kk = 0u; kk < CM_K; kk++)
                    acc = fma(float(CM_AT(QK_A, r, kk)), float(CM_AT(QK_B, kk, c)), acc);
            CM_AT(QK_S, r, c) = acc;
        }
#endif
    }
}

/* O += P V for the subgroup's row tiles, one CM_K-column slice dt at a time,
 * folded into each row's o by its invocation. */
void cm_pv(float alpha)
{
    uint32_t lid = gl_LocalInvocationID.x;
    [[unroll]] for (uint32_t d = 0u; d < HEAD_DIM; d++)
        o[d] *= alpha;
    [[unroll]] for (uint32_t dt = 0u; dt < DT; dt++) {
        barrier(); /* ps written; pvs of the previous slice read */
        for (uint32_t rt = gl_SubgroupID; rt < ROW_TILES; rt += gl_NumSubgroups) {
#ifndef RL_CM_EMULATE
            fcoopmatNV<32, gl_ScopeSubgroup, CM_M, CM_K> acc =
                fcoopmatNV<32, gl_ScopeSubgroup, CM_M, CM_K>(0.0);
            fcoopmatNV<16, gl_ScopeSubgroup, CM_M, CM_N> a;
            fcoopmatNV<16, gl_ScopeSubgroup, CM_N, CM_K> b;
            coopMatLoadNV(a, PV_A);
            coopMatLoadNV(b, PV_B);
            acc = coopMatMulAddNV(a, b, acc);
            coopMatStoreNV(acc, PV_S);
#else
            for (uint32_t e = gl_SubgroupInvocationID; e < CM_M * CM_K; e += gl_SubgroupSize) {
                uint32_t r = e / CM_K, c = e % CM_K;
                float acc = 0.0;
                for (uint32_t kk = 0u; kk < CM_N; kk++)
                    acc = fma(float(CM_AT(PV_A, r, kk)), float(CM_AT(PV_B, kk, c)), acc);
                CM_AT(PV_S, r, c) = acc;
            }
#endif
        }
        barrier();
        [[unroll]] for (uint32_t c = 0u; c < CM_K; c++)
            o[dt * CM_K + c] += pvs[lid * CM_K + c] * P_UNSCALE;
    }
}

/* Key block b of the chunk: stage, S tiles, the row's online-softmax
 * update from its accumulator row, then P V. */
void cm_block(uint32_t b)
{
    uint32_t lid = gl_LocalInvocationID.x;
    uint32_t t0 = b * CM_N;
    cm_stage(t0);
    cm_qk();
    barrier();
    float mt = NEG_INF;
    [[unroll]] for (uint32_t k = 0u; k < CM_N; k++) {
        uint32_t j = pc.p.key_base + t0 + k;
        bool valid = j < n && (!CAUSAL || j <= qi);
        float sk = ss[lid * CM_N + k] * pc.p.scale_a;
        s[k] = valid ? sk : NEG_INF;
        mt = max(mt, s[k]);
    }
    m_new = max(m, mt);
    float alpha = mt == NEG_INF ? 1.0 : rl_attn_alpha(m, m_new);
    float delta = (m == NEG_INF || mt == NEG_INF) ? 0.0 : m - m_new;
    if (WANT_H)
        ent = alpha * (ent + delta * l);
    l *= alpha;
    if (WANT_ARGMAX) {
        uint32_t cand = 0u;
        [[unroll]] for (uint32_t k = 0u; k < CM_N; k++)
            cand = s[CM_N - 1u - k] == mt ? pc.p.key_base + t0 + CM_N - 1u - k : cand;
        amax = mt > m ? cand : amax;
    }
    [[unroll]] for (uint32_t k = 0u; k < CM_N; k++) {
        float t = s[k] - m_new;
        /* A row whose block is wholly masked so far has m_new = -inf:
         * masked keys give 0 explicitly (t would be NaN). */
        float pj = s[k] == NEG_INF ? 0.0 : exp(t);
        l += pj;
        if (WANT_H)
            ent += pj > 0.0 ? pj * t : 0.0;
        if (WANT_TARGET)
            s_target = pc.p.key_base + t0 + k == target ? s[k] : s_target;
        if (WANT_O)
            ps[lid * CM_N + k] = float16_t(pj * P_SCALE);
    }
    if (WANT_O)
        cm_pv(alpha);
    m = m_new;
}

void main()
{
    uint32_t lid = gl_LocalInvocationID.x;
    uint32_t g = RL_GROUP_ID;
    uint32_t head = pc.p.kv_head * pc.p.kv_group + g % pc.p.kv_group;
    uint32_t qblock = pc.p.qblock_base + g / pc.p.kv_group;
    n = pc.p.n_tokens;
    uint32_t j0 = pc.p.key_base;
    qi = qblock * WG + lid;
    live = qi < n;
    uint32_t qrow = live ? qi : n - 1u; /* inactive rows compute a copy, write nothing */
    target = WANT_TARGET ? idx[n + qrow] : 0u;
    uint32_t row = qrow * pc.p.heads + head;
    uint32_t so = row * RL_ATTN_NSTAT;

    /* Q of the workgroup's 64 rows (clamped at the end), fp16 as stored. */
    for (uint32_t e = lid; e < WG * HEAD_DIM; e += WG) {
        uint32_t r = min(qblock * WG + e / HEAD_DIM, n - 1u);
        qs[e] = qa[(r * pc.p.heads + head) * HEAD_DIM + e % HEAD_DIM];
    }

    bool first = j0 == 0u;
    m = first ? NEG_INF : outv[so + RL_ATTN_S_MAX];
    l = first ? 0.0 : outv[so + RL_ATTN_S_LSE];
    ent = (first || !WANT_H) ? 0.0 : outv[so + RL_ATTN_S_ENTROPY];
    amax = (first || !WANT_ARGMAX) ? 0u : floatBitsToUint(outv[so + RL_ATTN_S_ARGMAX]);
    s_target = (first || !WANT_TARGET) ? NEG_INF : outv[so + RL_ATTN_S_TARGET_P];
    if (WANT_O)
        [[unroll]] for (uint32_t d = 0u; d < HEAD_DIM; d++)
            o[d] = first ? 0.0 : outv[pc.p.off_out + row * HEAD_DIM + d];

    for (uint32_t b = 0u; b < N_BLOCKS; b++)
        cm_block(b);

    if (!live || (CAUSAL && qi < j0))
        return;
    bool last = CAUSAL ? qi < j0 + N_BLOCKS * CM_N : j0 + N_BLOCKS * CM_N >= n;
    float logl = log(l);
    float lse_f = m + logl, fin = 1.0 / l;
    outv[so + RL_ATTN_S_MAX] = m;
    outv[so + RL_ATTN_S_LSE] = last ? lse_f : l;
    if (WANT_H)
        outv[so + RL_ATTN_S_ENTROPY] = last ? logl - ent / l : ent;
    if (WANT_ARGMAX) {
        outv[so + RL_ATTN_S_ARGMAX] = uintBitsToFloat(amax);
        outv[so + RL_ATTN_S_ARGMAX_P] = last ? fin : 0.0;
    }
    if (WANT_TARGET)
        outv[so + RL_ATTN_S_TARGET_P] = last ? exp(s_target - lse_f) : s_target;
    if (WANT_O)
        [[unroll]] for (uint32_t d = 0u; d < HEAD_DIM; d++)
            outv[pc.p.off_out + row * HEAD_DIM + d] = last ? o[d] / l : o[d];
}
