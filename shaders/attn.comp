#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#extension GL_EXT_control_flow_attributes : require
#ifdef RL_ATTN_SPLIT
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#ifdef RL_ATTN_FP16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
/* Streaming attention statistics (flash-attention style online softmax,
 * Dao et al. 2022) over [tokens][heads][head_dim] Q and K (and V).
 *
 * One invocation owns one query row (token i, head h); a workgroup owns WG
 * consecutive query tokens of one head. One dispatch covers one chunk of
 * N_BLOCKS * KB keys, [key_base, key_base + N_BLOCKS * KB), of one KV head
 * (push constants), for every query block that sees them. A row's running
 * statistics (m, l, entropy and KL accumulators, argmax, target logit,
 * bucket masses, O) stay in its output slots between chunks and are
 * finished in the row's last chunk.
 *
 * The kernel is straight-line code once specialized: every loop is
 * [[unroll]] with a trip count fixed by the specialization constants (keys
 * per block, blocks per dispatch, head_dim / 4, buckets), and the running
 * statistics are updated with selects, not branches. The block's keys are
 * staged in shared memory by the workgroup, then every invocation reads
 * them at constant addresses: the same address in all invocations, outside
 * any control flow, which SIMD-across-lanes CPU drivers (lavapipe) turn into
 * one scalar load and a broadcast (inside a loop or branch they fall back to
 * a per-lane gather), and GPUs serve as a shared-memory broadcast. Each
 * invocation also runs a bounded amount of work per dispatch whatever the
 * length (no driver loop limit, no multi-second dispatch).
 *
 *   logit_a(h, i, j) = scale_a <q_a[i,h], k_a[j,kvh]> + bias(h, i, j, pos_i, pos_j)
 *   logit_b likewise with q_b, k_b, scale_b (paired mode)
 *   remap mode: logit_a from q_a/k_a where |pos_i - pos_j| < remap_window,
 *   else from q_b/k_b (attn_remap.glsl); paired with it, logit_b is the
 *   unselected logit_a at scale_b; with REMAP_EDGE the key at |pos_i - pos_j|
 *   = remap_window has both: logit log(e^logit_a + e^logit_b)
 *   kvh = h / kv_group (grouped-query attention; heads, kv_group: push constants)
 * <q, k> is one fp32 chain per key over the head dimensions (multiply-add,
 * dimension order), then one multiply by the scale.
 *
 * Bias: bias_NAME.glsl chosen at compile time (one SPIR-V variant per bias).
 *
 * Subgroup split (built with RL_ATTN_SPLIT, the "subgroup" path of
 * attn_path.c): SPLIT consecutive lanes of one subgroup share a query row,
 * lane slice sl owning dimensions [sl DS, (sl + 1) DS) (vec4 units) of q and
 * O. Each lane forms its partial dot product over its slice (one chain, in
 * dimension order), and a subgroupShuffleXor butterfly adds the SPLIT
 * partials; fp32 addition is commutative, so every lane of the row gets the
 * same bits and runs the same softmax state. Lane slice 0 writes the row's
 * statistics, every lane its slice of O. The workgroup holds WG / SPLIT
 * query rows (ATTN_WG, as the scalar path). */
#include "rl_push.h"
#include "rl_common.glsl"
#include "attn_softmax.glsl"

/* The bias variant's rl_bias (generated from the encoding registry). */
#include "rl_bias_select.glsl"
#ifdef RL_BIAS_IS_NONE
#define RL_ATTN_NO_BIAS 1
#endif

/* Specialization constants (defaults are placeholders). */
/* The head count and the GQA group are push constants (pc.p.heads,
 * pc.p.kv_group), not specialization constants: they only index, and one
 * pipeline then serves every head count of a head_dim and flag set. */
layout(constant_id = 1) const uint32_t HEAD_DIM = 128;  /* multiple of 4, <= 512 */
layout(constant_id = 2) const uint32_t FLAGS = 0;       /* RL_ATTN_F_* */
layout(constant_id = 3) const uint32_t N_BUCKETS = 1;   /* distance buckets (>= 1) */
layout(constant_id = 4) const uint32_t N_BLOCKS = RL_ATTN_MAX_BLOCKS; /* key blocks per dispatch */
layout(constant_id = 5) const uint32_t KB = RL_ATTN_KB; /* keys per block: 4, 8 or 16 */
layout(constant_id = 6) const uint32_t SPLIT = 1;       /* lanes per query row (RL_ATTN_SPLIT: 2, 4, 8) */
/* 1: the per-lane reads below (q rows, the staged K/V elements, O carried
 * between dispatches) go through the uniform texel buffers at bindings 16..22
 * instead of the storage buffers (attn_path.c: the scalar path of a CPU
 * device). The values are the same bits either way. */
layout(constant_id = 7) const uint32_t TEXEL = 0;

const uint32_t D4 = HEAD_DIM / 4u;
const uint32_t DS = D4 / SPLIT;                          /* vec4s of q and O per lane */
const uint32_t QWG = gl_WorkGroupSize.x / SPLIT;         /* query rows per workgroup */
/* Elements each invocation copies when staging a block (a plain trip count,
 * so the driver can unroll the loop). */
const uint32_t STAGE_ROUNDS = (KB * D4 + gl_WorkGroupSize.x - 1u) / gl_WorkGroupSize.x;
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
const bool MASKED = (FLAGS & RL_ATTN_F_MASK) != 0u;
const bool SINKS = (FLAGS & RL_ATTN_F_SINKS) != 0u;
const bool TEMP = (FLAGS & RL_ATTN_F_TEMP) != 0u;
const bool REMAP = (FLAGS & RL_ATTN_F_REMAP) != 0u;
/* a third query set, Q_c . K_b (the host sets DCA with REMAP) */
const bool DCA = (FLAGS & RL_ATTN_F_DCA) != 0u;
/* with REMAP: the key at the window's edge takes both definitions (attn_remap.glsl) */
const bool EDGE = (FLAGS & RL_ATTN_F_REMAP_EDGE) != 0u;
/* Sampled query rows: slot r of the dispatch's query blocks is token
 * idx[off_rows + r]; Q and the outputs hold slots, keys stay tokens. */
const bool ROWS = (FLAGS & RL_ATTN_F_ROWS) != 0u;
/* A second Q/K pair (bindings 2, 3): paired mode's definition b, or the
 * remapped definition (attn_remap.glsl). */
const bool TWO = PAIRED || REMAP;
#ifdef RL_ATTN_NO_BIAS
const bool NEED_KPOS = WANT_BUCKETS || REMAP;
#else
const bool NEED_KPOS = true;
#endif

layout(push_constant) uniform Push { rl_attn_push p; } pc;

#ifdef RL_ATTN_FP16
#define VEC4_T f16vec4
#else
#define VEC4_T vec4
#endif
layout(std430, binding = 0) readonly buffer QA { VEC4_T qa[]; };  /* [tokens][heads][D4] */
layout(std430, binding = 1) readonly buffer KA { VEC4_T ka[]; };  /* [tokens][kv_heads][D4] */
layout(std430, binding = 2) readonly buffer QB { VEC4_T qb[]; };  /* paired: like qa */
layout(std430, binding = 3) readonly buffer KB_ { VEC4_T kb[]; }; /* paired: like ka */
layout(std430, binding = 4) readonly buffer VV { VEC4_T vv[]; };  /* [tokens][kv_heads][D4] */
layout(std430, binding = 5) readonly buffer IDX { uint32_t idx[]; }; /* [2][tokens]: pos, target */
layout(std430, binding = 6) buffer OUT { float outv[]; };         /* see rl_push.h */
/* The same buffer as vec4, for O's rows (off_out is a multiple of 4, so a
 * row's slice is whole vec4s): one access per vec4 instead of four, which
 * on SIMD-across-lanes CPU drivers is one per-lane loop instead of four. */
layout(std430, binding = 6) buffer OUT4 { vec4 outv4[]; };
/* The same memory as texels (views of bindings 0..4 and 6, rlvk_texel_binding):
 * vec4 of the storage dtype (fp16 converts exactly), O as fp32. On a
 * SIMD-across-lanes CPU driver a storage-buffer read at a per-lane address
 * is a loop over the lanes; a texel fetch is a branch-free gather. */
layout(binding = 16) uniform samplerBuffer qa_t;
layout(binding = 17) uniform samplerBuffer ka_t;
layout(binding = 18) uniform samplerBuffer qb_t;
layout(binding = 19) uniform samplerBuffer kb_t;
layout(binding = 20) uniform samplerBuffer vv_t;
layout(binding = 22) uniform samplerBuffer out_t;
layout(std430, binding = 7) readonly buffer SNK { float sinkv[]; }; /* SINKS: [heads] logits */
#ifdef RL_ATTN_NO_BIAS
/* DCA's inter-chunk queries, like qa: binding 11, a bias buffers' slot
 * (8..11) that the no-bias variant leaves free; DCA runs in it only (a
 * remap refuses a logit bias). */
layout(std430, binding = 11) readonly buffer QC { VEC4_T qc[]; };
#endif

/* The current block's keys (and K_b, V rows, positions), staged by the
 * workgroup. Element d of key k of the block sits at a constant address. */
shared vec4 ks_a[KB * D4];
shared vec4 ks_b[KB * D4 * (TWO ? 1u : 0u) + 1u];
shared vec4 vs[KB * D4 * (WANT_O ? 1u : 0u) + 1u];
shared int32_t kpos_s[KB];
#define KEY_AT(arr, key, d) arr[(key) * D4 + (d)]

/* Element i (vec4 units) of Q_a, K_a, Q_b, K_b, V and of O's slots: through
 * the texel views when TEXEL, else the storage buffers (a specialization
 * constant: the other branch compiles away). */
vec4 rd_qa(uint32_t i) { if (TEXEL != 0u) return texelFetch(qa_t, int(i)); return vec4(qa[i]); }
vec4 rd_ka(uint32_t i) { if (TEXEL != 0u) return texelFetch(ka_t, int(i)); return vec4(ka[i]); }
vec4 rd_qb(uint32_t i) { if (TEXEL != 0u) return texelFetch(qb_t, int(i)); return vec4(qb[i]); }
vec4 rd_kb(uint32_t i) { if (TEXEL != 0u) return texelFetch(kb_t, int(i)); return vec4(kb[i]); }
vec4 rd_vv(uint32_t i) { if (TEXEL != 0u) return texelFetch(vv_t, int(i)); return vec4(vv[i]); }
vec4 rd_o(uint32_t i) { if (TEXEL != 0u) return texelFetch(out_t, int(i)); return outv4[i]; }

const float NEG_INF = -1.0 / 0.0;

/* Per-invocation state (private globals; the helpers below are inlined and
 * every index is a constant after unrolling). */
vec4 q[DS];
vec4 q2[TWO ? DS : 1u];
vec4 q3[DCA ? DS : 1u];
vec4 o[WANT_O ? DS : 1u];
#ifdef RL_ATTN_SPLIT
uint32_t sl;        /* this lane's slice of the row's dimensions */
#else
const uint32_t sl = 0u;
#endif
float mass[N_BUCKETS];
float s[KB];
float s2[TWO ? KB : 1u];
float s3[DCA ? KB : 1u];
float sx[EDGE ? KB : 1u]; /* EDGE: the exact definition's raw dot, kept past the select */
float m, l, ent, mb, lb, kl, s_target, mt, mtb, m_new, mb_new;
uint32_t amax;
uint32_t n, qi, qrow, head, target;
uint32_t mlo, mhi;  /* MASKED: the row's local keys are mlo..mhi (sinks apart) */
float tau;          /* TEMP: the row's logit scale (definition a) */
int32_t qpos;
bool live;

#include "attn_remap.glsl"

/* Logits of the block's KB keys: s[k] = <q, k_k>, one chain per key over the
 * dimensions in order (vec4 d: x, y, z, w), scaled in rl_mask. */
void rl_qk()
{
    [[unroll]] for (uint32_t k = 0u; k < KB; k++) {
        s[k] = 0.0;
        if (TWO)
            s2[k] = 0.0;
        if (DCA)
            s3[k] = 0.0;
    }
    [[unroll]] for (uint32_t d = 0u; d < DS; d++) {
        vec4 qv = q[d];
        [[unroll]] for (uint32_t k = 0u; k < KB; k++) {
            vec4 kv = KEY_AT(ks_a, k, sl * DS + d);
            s[k] = fma(qv.w, kv.w, fma(qv.z, kv.z, fma(qv.y, kv.y, fma(qv.x, kv.x, s[k]))));
        }
        if (TWO) {
            vec4 qv2 = q2[d];
            [[unroll]] for (uint32_t k = 0u; k < KB; k++) {
                vec4 kv = KEY_AT(ks_b, k, sl * DS + d);
                s2[k] = fma(qv2.w, kv.w, fma(qv2.z, kv.z, fma(qv2.y, kv.y, fma(qv2.x, kv.x, s2[k]))));
            }
        }
        if (DCA) {
            vec4 qv3 = q3[d];
            [[unroll]] for (uint32_t k = 0u; k < KB; k++) {
                vec4 kv = KEY_AT(ks_b, k, sl * DS + d);
                s3[k] = fma(qv3.w, kv.w, fma(qv3.z, kv.z, fma(qv3.y, kv.y, fma(qv3.x, kv.x, s3[k]))));
            }
        }
    }
#ifdef RL_ATTN_SPLIT
    /* The row's SPLIT partial logits summed (butterfly over lanes sl ^ 2^b). */
    [[unroll]] for (uint32_t b = 0u; b < 3u; b++) {
        if ((1u << b) < SPLIT) {
            [[unroll]] for (uint32_t k = 0u; k < KB; k++) {
                s[k] += subgroupShuffleXor(s[k], 1u << b);
                if (TWO)
                    s2[k] += subgroupShuffleXor(s2[k], 1u << b);
                if (DCA)
                    s3[k] += subgroupShuffleXor(s3[k], 1u << b);
            }
        }
    }
#endif
}

/* Key k of the block starting at key t0 (relative to key_base): mask,
 * bias, block max, logit dump. */
void rl_mask(uint32_t t0, uint32_t k)
{
    uint32_t j = pc.p.key_base + t0 + k;
    bool valid = j < n && (!CAUSAL || j <= qi);
    if (MASKED)
        valid = valid && (j < pc.p.n_sink || (j >= mlo && j <= mhi));
    if (REMAP)
        rl_remap_select(k);
    s[k] *= pc.p.scale_a;
    if (TEMP)
        s[k] *= tau;
    if (EDGE)
        rl_remap_edge(k);
    if (PAIRED)
        s2[k] *= pc.p.scale_b;
#ifndef RL_ATTN_NO_BIAS
    if (BIAS_A || (PAIRED && BIAS_B)) {
        float bias = rl_bias(head, qrow, min(j, n - 1u), qpos, kpos_s[k]);
        if (BIAS_A)
            s[k] += bias;
        if (PAIRED && BIAS_B)
            s2[k] += bias;
    }
#endif
    s[k] = valid ? s[k] : NEG_INF;
    mt = max(mt, s[k]);
    if (PAIRED) {
        s2[k] = valid ? s2[k] : NEG_INF;
        mtb = max(mtb, s2[k]);
    }
    if (DUMP && live && j < n && sl == 0u)
        outv[pc.p.off_dump + (head * n + qi) * n + j] = s[k];
}

/* Key k: its term in l, entropy, KL, target, buckets; s[k] becomes p_k
 * (relative to m_new) for O. Masked keys give p = 0 and add nothing. */
void rl_accum(uint32_t t0, uint32_t k)
{
    float t = s[k] - m_new;
    float pj = exp(t);
    /* Masked: a row may meet wholly masked blocks before its first visible
     * key (m_new = -inf, t = NaN): masked keys give 0 explicitly. */
    if (MASKED)
        pj = s[k] == NEG_INF ? 0.0 : pj;
    bool pos = pj > 0.0;
    l += pj;
    if (WANT_H)
        ent += pos ? pj * t : 0.0;
    if (PAIRED) {
        kl += pos ? pj * (t - (s2[k] - mb_new)) : 0.0;
        float pb = exp(s2[k] - mb_new);
        lb += (MASKED && s2[k] == NEG_INF) ? 0.0 : pb;
    }
    if (WANT_TARGET)
        s_target = pc.p.key_base + t0 + k == target ? s[k] : s_target;
    if (WANT_BUCKETS) {
        uint32_t bk = rl_attn_bucket(uint32_t(abs(kpos_s[k] - qpos)));
        [[unroll]] for (uint32_t b = 0u; b < N_BUCKETS; b++)
            mass[b] += bk == b ? pj : 0.0;
    }
    s[k] = pj;
}

/* O: o_d = o_d alpha + sum_k p_k v_{k,d} over the block's keys. */
void rl_pv(float alpha)
{
    [[unroll]] for (uint32_t d = 0u; d < DS; d++) {
        vec4 acc = o[d] * alpha;
        [[unroll]] for (uint32_t k = 0u; k < KB; k++)
            acc = fma(vec4(s[k]), KEY_AT(vs, k, sl * DS + d), acc);
        o[d] = acc;
    }
}

/* Copies keys key_base + t0 .. + KB - 1 (K_a, K_b, V rows of this KV head,
 * positions) into shared memory, the workgroup's invocations taking
 * elements in turn; keys past the end repeat the last one (masked later). */
void rl_stage(uint32_t t0)
{
    const uint32_t WG = gl_WorkGroupSize.x;
    uint32_t lid = gl_LocalInvocationID.x;
    uint32_t kv_heads = pc.p.heads / pc.p.kv_group; /* once, not per staged element */
    barrier();
    [[unroll]] for (uint32_t r = 0u; r < STAGE_ROUNDS; r++) {
        uint32_t e = r * WG + lid;
        if (e < KB * D4) {
            uint32_t j = min(pc.p.key_base + t0 + e / D4, n - 1u);
            /* K, K_b, V are bound as the window from key key_window on */
            uint32_t src = ((j - pc.p.key_window) * kv_heads + pc.p.kv_head) * D4 + e % D4;
            ks_a[e] = rd_ka(src);
            if (TWO)
                ks_b[e] = rd_kb(src);
            if (WANT_O)
                vs[e] = rd_vv(src);
        }
    }
    if (NEED_KPOS && lid < KB)
        kpos_s[lid] = int32_t(idx[min(pc.p.key_base + t0 + lid, n - 1u)]);
    barrier();
}

/* Key block b (keys key_base + KB b ...): staging, logits, then the
 * online-softmax update, without branches around the shared reads. */
void rl_block(uint32_t b)
{
    uint32_t t0 = b * KB;
    rl_stage(t0);
    rl_qk();
    if (WANT_O)
        barrier();
    mt = NEG_INF;
    mtb = NEG_INF;
    [[unroll]] for (uint32_t k = 0u; k < KB; k++)
        rl_mask(t0, k);
    /* A block wholly masked for this row (mt = -inf) leaves it unchanged:
     * m_new = m, alpha = 1, every p = 0. */
    m_new = max(m, mt);
    float alpha = rl_attn_alpha(m, m_new);
    alpha = mt == NEG_INF ? 1.0 : alpha;
    float delta = (m == NEG_INF || mt == NEG_INF) ? 0.0 : m - m_new;
    if (WANT_H)
        ent = alpha * (ent + delta * l);
    if (PAIRED) {
        mb_new = max(mb, mtb);
        float alpha_b = mtb == NEG_INF ? 1.0 : rl_attn_alpha(mb, mb_new);
        float delta_b = (mb == NEG_INF || mtb == NEG_INF) ? 0.0 : mb - mb_new;
        kl = alpha * (kl + (delta - delta_b) * l);
        lb *= alpha_b;
    }
    l *= alpha;
    if (WANT_BUCKETS) {
        [[unroll]] for (uint32_t bb = 0u; bb < N_BUCKETS; bb++)
            mass[bb] *= alpha;
    }
    if (WANT_ARGMAX) {
        /* First maximal key of the block, kept only if it beats the max so
         * far (the earlier key wins ties). */
        uint32_t cand = 0u;
        [[unroll]] for (uint32_t k = 0u; k < KB; k++)
            cand = s[KB - 1u - k] == mt ? pc.p.key_base + t0 + KB - 1u - k : cand;
        amax = mt > m ? cand : amax;
    }
    /* Masked keys: s = -inf, so t = -inf and p = 0 (m_new is finite for a
     * live row from its first key on). */
    [[unroll]] for (uint32_t k = 0u; k < KB; k++)
        rl_accum(t0, k);
    if (WANT_O) {
        barrier();
        rl_pv(alpha);
    }
    m = m_new;
    if (PAIRED)
        mb = mb_new;
}

void main()
{
    uint32_t lid = gl_LocalInvocationID.x;
    uint32_t g = RL_GROUP_ID;
    head = pc.p.kv_head * pc.p.kv_group + g % pc.p.kv_group;
    uint32_t qblock = pc.p.qblock_base + g / pc.p.kv_group;
    n = pc.p.n_tokens;
    uint32_t j0 = pc.p.key_base;
#ifdef RL_ATTN_SPLIT
    uint32_t lane = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
    sl = lane % SPLIT;
#else
    uint32_t lane = lid;
#endif
    uint32_t slot = qblock * QWG + lane / SPLIT;
    uint32_t orow; /* the row's slot in Q and the outputs */
    if (ROWS) {
        /* inactive lanes compute a copy of the last slot, write nothing */
        live = slot < pc.p.n_rows;
        orow = live ? slot : pc.p.n_rows - 1u;
        qi = idx[pc.p.off_rows + orow];
        qrow = qi;
    } else {
        qi = slot;
        live = qi < n;
        qrow = live ? qi : n - 1u;      /* inactive lanes compute a copy, write nothing */
        orow = qrow;
    }
    qpos = int32_t(idx[qrow]);
    target = WANT_TARGET ? idx[n + qrow] : 0u;
    uint32_t row = orow * pc.p.heads + head;
    uint32_t so = row * RL_ATTN_NSTAT;
    /* Mask: local keys |qi - j| < window and in qi's chunk, as one key
     * interval [mlo, mhi] (window, chunk_size <= 2^31 and qi < 2^31: no
     * overflow). */
    tau = TEMP ? uintBitsToFloat(idx[pc.p.off_temp + qrow]) : 1.0;
    mlo = 0u;
    mhi = 0xffffffffu;
    if (MASKED) {
        uint32_t w = pc.p.window, c = pc.p.chunk_size;
        if (w != 0u) {
            mlo = qi >= w - 1u ? qi - (w - 1u) : 0u;
            mhi = qi + (w - 1u);
        }
        if (c != 0u) {
            uint32_t cs = qi - qi % c;
            mlo = max(mlo, cs);
            mhi = min(mhi, cs + (c - 1u));
        }
    }

    [[unroll]] for (uint32_t d = 0u; d < DS; d++) {
        q[d] = rd_qa(row * D4 + sl * DS + d);
        if (TWO)
            q2[d] = rd_qb(row * D4 + sl * DS + d);
#ifdef RL_ATTN_NO_BIAS
        if (DCA)
            q3[d] = vec4(qc[row * D4 + sl * DS + d]);
#endif
    }

    /* Running state: fresh in the first chunk, else the row's output slots
     * (see the write-back at the end). */
    bool first = j0 == 0u;
    /* Masked: the host skips chunks no query of a block sees, so a row's
     * first chunk may start anywhere; its slots read l = 0 until a visible
     * key came (a visible key adds e^0 = 1 to l). */
    if (MASKED)
        first = first || outv[so + RL_ATTN_S_LSE] == 0.0;
    m = first ? NEG_INF : outv[so + RL_ATTN_S_MAX];
    l = first ? 0.0 : outv[so + RL_ATTN_S_LSE];
    ent = (first || !WANT_H) ? 0.0 : outv[so + RL_ATTN_S_ENTROPY];
    mb = (first || !PAIRED) ? NEG_INF : outv[so + RL_ATTN_S_ARGMAX_P];
    lb = (first || !PAIRED) ? 0.0 : outv[so + RL_ATTN_S_LSE_B];
    kl = (first || !PAIRED) ? 0.0 : outv[so + RL_ATTN_S_KL];
    amax = (first || !WANT_ARGMAX) ? 0u : floatBitsToUint(outv[so + RL_ATTN_S_ARGMAX]);
    s_target = (first || !WANT_TARGET) ? NEG_INF : outv[so + RL_ATTN_S_TARGET_P];
    if (WANT_BUCKETS)
        [[unroll]] for (uint32_t b = 0u; b < N_BUCKETS; b++)
            mass[b] = first ? 0.0 : outv[pc.p.off_buckets + row * N_BUCKETS + b];
    if (WANT_O)
        [[unroll]] for (uint32_t d = 0u; d < DS; d++)
            o[d] = first ? vec4(0.0) : rd_o((pc.p.off_out + row * HEAD_DIM) / 4u + sl * DS + d);

    [[unroll]] for (uint32_t b = 0u; b < N_BLOCKS; b++)
        rl_block(b);

    /* Causal rows before this chunk are finished: leave them alone. */
    if (!live || (CAUSAL && qi < j0))
        return;
    /* Bidirectional masked: the last chunk the block is dispatched for comes
     * from the host (idx[2 n + qblock]: its key_base). */
    bool last = CAUSAL ? qi < j0 + N_BLOCKS * KB
                       : (MASKED ? j0 == idx[2u * n + qblock] : j0 + N_BLOCKS * KB >= n);
    float logl = log(l);
    /* Finished values: lse, entropy and the normaliser 1/l of p. With a
     * learned sink sg (gpt-oss: a per-head logit in the denominator only),
     * in the frame m2 = max(m, sg): L = l e^(m - m2) + e^(sg - m2),
     * lse = m2 + log L, p_j = e^(s_j - m) e^(m - m2) / L, and the keys'
     * entropy -sum p_j log p_j = (l al / L) log L - al (a + (m - m2) l) / L
     * (a = ent, al = e^(m - m2)). */
    float lse_f = m + logl, ent_f = logl - ent / l, fin = 1.0 / l;
    if (SINKS && last) {
        float sg = sinkv[head];
        float m2 = max(m, sg);
        float al = exp(m - m2);
        float L = l * al + exp(sg - m2);
        float logL = log(L);
        lse_f = m2 + logL;
        fin = al / L;
        ent_f = (l * al / L) * logL - al * (ent + (m - m2) * l) / L;
    }
    if (WANT_O) /* this lane's slice (all of O on the scalar path) */
        [[unroll]] for (uint32_t d = 0u; d < DS; d++) {
            vec4 r = last ? (SINKS ? o[d] * fin : o[d] / l) : o[d];
            outv4[(pc.p.off_out + row * HEAD_DIM) / 4u + sl * DS + d] = r;
        }
    if (sl != 0u) /* split: lane slice 0 writes the row's statistics */
        return;
#if RL_ATTN_NSTAT != 8
#error "the statistics write-back assumes 8 slots per row"
#endif
    /* The row's RL_ATTN_NSTAT = 8 slots as two vec4 (so is a multiple of
     * 8): one store per vec4, which on SIMD-across-lanes CPU drivers is one
     * per-lane loop instead of one per slot. Slots not asked for stay 0. */
    outv4[so / 4u] = vec4(last ? lse_f : l, m, WANT_H ? (last ? ent_f : ent) : 0.0,
                          WANT_ARGMAX ? uintBitsToFloat(amax) : 0.0);
    if (WANT_ARGMAX || WANT_TARGET || PAIRED)
        /* ARGMAX_P: the argmax's p when finished; mb in between */
        outv4[so / 4u + 1u] =
            vec4((WANT_ARGMAX || PAIRED) ? (last ? (WANT_ARGMAX ? fin : 0.0) : mb) : 0.0,
                 WANT_TARGET ? (last ? exp(s_target - lse_f) : s_target) : 0.0,
                 PAIRED ? (last ? kl / l - logl + log(lb) : kl) : 0.0,
                 PAIRED ? (last ? mb + log(lb) : lb) : 0.0);
    if (WANT_BUCKETS)
        [[unroll]] for (uint32_t b = 0u; b < N_BUCKETS; b++)
            outv[pc.p.off_buckets + row * N_BUCKETS + b] =
                last ? (SINKS ? mass[b] * fin : mass[b] / l) : mass[b];
}
