/* The cooperative-matrix attention path without a device: the tile
 * decomposition against a direct computation, support detection on fake
 * property lists, the options it refuses, its error bounds against models
 * of truncating tensor-op sums and of fp16 P with flushed denormals, and
 * the compiled NV SPIR-V word by word (SPV_NV_cooperative_matrix; its KHR
 * twin: test_spv_khr.c). Nothing here runs the kernel (check's attn_cm_f16
 * rows do, on a device that exposes it). */
#include "rl_check.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn_cm.h"
#include "core/rl_util.h"
#include "rl_test.h"

/* ---- tile decomposition ------------------------------------------------ */

START_TEST(tiles_cover_every_visible_pair_exactly_once)
{
    static const uint64_t ns[] = {1, 7, 9, 15, 16, 17, 63, 64, 65, 129, 200};
    static const uint32_t blocks[] = {1, 3, 8};
    /* NV's 16x16x16, lavapipe's KHR 8x8x8, and NVIDIA's 16x8x16 */
    static const attn_cm_shape shapes[] = {{16, 16, 16, ATTN_CM_SPV_NV},
                                           {8, 8, 8, ATTN_CM_SPV_KHR},
                                           {16, 8, 16, ATTN_CM_SPV_KHR}};
    for (size_t sh = 0; sh < RL_ARRAY_LEN(shapes); sh++)
    for (size_t a = 0; a < RL_ARRAY_LEN(ns); a++)
        for (size_t b = 0; b < RL_ARRAY_LEN(blocks); b++)
            for (int causal = 0; causal < 2; causal++) {
                uint64_t n = ns[a];
                const uint32_t M = shapes[sh].m, N = shapes[sh].n, K = shapes[sh].k;
                attn_cm_plan p;
                rl_error err = {0};
                ck_assert_int_eq(attn_cm_plan_make(n, 64, blocks[b], causal, &shapes[sh], &p, &err),
                                 RL_OK);
                /* Padded sizes, directly. */
                uint64_t chunk = blocks[b] * N;
                ck_assert_uint_eq(p.k_steps, 64 / K);
                ck_assert_uint_eq(p.chunk_keys, chunk);
                ck_assert_uint_eq(p.padded_rows, ((n + 63) / 64) * 64);
                ck_assert_uint_eq(p.padded_keys, ((n + chunk - 1) / chunk) * chunk);
                uint64_t count = attn_cm_tiles(&p, NULL, 0);
                attn_cm_tile *t = malloc(count * sizeof *t);
                unsigned char *cov = calloc(n * n, 1);
                ck_assert(t && cov);
                ck_assert_uint_eq(attn_cm_tiles(&p, t, count), count);
                uint64_t expect = 0; /* tiles by direct counting of dispatched (chunk, block) */
                for (uint64_t c = 0; c * chunk < n; c++)
                    for (uint64_t qb = 0; qb * 64 < n; qb++)
                        if (!causal || (qb + 1) * 64 > c * chunk)
                            expect += blocks[b] * (64u / M);
                ck_assert_uint_eq(count, expect);
                for (uint64_t x = 0; x < count; x++) {
                    uint32_t rows = t[x].q0 >= n ? 0 : (uint32_t)(n - t[x].q0 < M ? n - t[x].q0 : M);
                    uint32_t keys = t[x].k0 >= n ? 0 : (uint32_t)(n - t[x].k0 < N ? n - t[x].k0 : N);
                    ck_assert_uint_eq(t[x].rows, rows);
                    ck_assert_uint_eq(t[x].keys, keys);
                    ck_assert_uint_eq(t[x].q0 % M, 0);
                    ck_assert_uint_eq(t[x].k0 % N, 0);
                    ck_assert_uint_lt(t[x].q0, p.padded_rows);
                    ck_assert_uint_lt(t[x].k0, p.padded_keys);
                    for (uint32_t r = 0; r < rows; r++)
                        for (uint32_t k = 0; k < keys; k++)
                            cov[(t[x].q0 + r) * n + t[x].k0 + k]++;
                }
                uint64_t skipped_visible = 0;
                for (uint64_t i = 0; i < n; i++)
                    for (uint64_t j = 0; j < n; j++) {
                        int vis = !causal || j <= i;
                        if (vis)
                            ck_assert_msg(cov[i * n + j] == 1,
                                          "n %llu blocks %u causal %d: pair (%llu, %llu) covered %u times",
                                          (unsigned long long)n, blocks[b], causal,
                                          (unsigned long long)i, (unsigned long long)j, cov[i * n + j]);
                        else
                            ck_assert_uint_le(cov[i * n + j], 1);
                        skipped_visible += vis && !cov[i * n + j];
                    }
                ck_assert_uint_eq(skipped_visible, 0);
                /* Each row finishes in exactly one dispatched chunk: the one
                 * holding its last visible key. */
                for (uint64_t i = 0; i < n; i++) {
                    int lasts = 0;
                    for (uint64_t c = 0; c < p.n_chunks; c++) {
                        if (i / 64 < attn_cm_chunk_qblock0(&p, c))
                            continue; /* not dispatched for i's block */
                        if (attn_cm_row_last_chunk(&p, i, c)) {
                            lasts++;
                            uint64_t last_key = causal ? i : n - 1;
                            ck_assert_uint_eq(c, last_key / chunk);
                        }
                    }
                    ck_assert_int_eq(lasts, 1);
                }
                free(cov);
                free(t);
            }
}
END_TEST

START_TEST(causal_plan_skips_only_chunks_wholly_after_a_block)
{
    /* 300 tokens, 1 block of 16 keys per chunk: chunk c is dispatched for
     * query blocks qb >= c * 16 / 64; each skipped (chunk, block) pair holds
     * no visible pair, and some are skipped. */
    attn_cm_plan p;
    rl_error err = {0};
    ck_assert_int_eq(attn_cm_plan_make(300, 16, 1, 1, NULL, &p, &err), RL_OK);
    uint64_t skipped = 0;
    for (uint64_t c = 0; c < p.n_chunks; c++)
        for (uint64_t qb = 0; qb < p.n_qblocks; qb++) {
            if (qb >= attn_cm_chunk_qblock0(&p, c))
                continue;
            skipped++;
            for (uint64_t i = qb * 64; i < (qb + 1) * 64 && i < 300; i++)
                for (uint64_t j = c * 16; j < (c + 1) * 16 && j < 300; j++)
                    ck_assert_msg(j > i, "skipped pair (%llu, %llu) is visible",
                                  (unsigned long long)i, (unsigned long long)j);
        }
    ck_assert_uint_gt(skipped, 0);
    ck_assert_int_eq(attn_cm_plan_make(0, 16, 1, 1, NULL, &p, &err), RL_ERR_ARG);
    ck_assert_int_eq(attn_cm_plan_make(10, 24, 1, 1, NULL, &p, &err), RL_ERR_ARG);
    ck_assert_int_eq(attn_cm_plan_make(10, 16, 9, 1, NULL, &p, &err), RL_ERR_ARG);
    attn_cm_shape s8 = {8, 8, 8, ATTN_CM_SPV_KHR}, s24 = {24, 8, 8, ATTN_CM_SPV_KHR};
    ck_assert_int_eq(attn_cm_plan_make(10, 24, 1, 1, &s8, &p, &err), RL_OK); /* 24 = 3 x 8 */
    ck_assert_int_eq(attn_cm_plan_make(10, 24, 1, 1, &s24, &p, &err), RL_ERR_ARG);
}
END_TEST

/* ---- support detection -------------------------------------------------- */

static rlvk_cm_shape shape(uint32_t m, uint32_t n, uint32_t k, uint32_t a, uint32_t c, int khr)
{
    rlvk_cm_shape s = {m, n, k, a, a, c, c, RLVK_CM_SCOPE_SUBGROUP, 0, khr};
    return s;
}

/* An NVIDIA-like device: both extensions, NV's usual list. */
static rlvk_device_info nvidia_like(void)
{
    rlvk_device_info in;
    memset(&in, 0, sizeof in);
    snprintf(in.name, sizeof in.name, "fake NV");
    in.fp16 = in.storage16 = 1;
    in.subgroup_size = 32;
    in.max_shared_memory = 49152;
    in.cm.has_nv = in.cm.has_khr = in.cm.feat_nv = in.cm.feat_khr = in.cm.nv_compute = 1;
    in.cm.vk_memory_model = 1;
    in.cm.shapes[in.cm.n_shapes++] = shape(16, 8, 16, RLVK_CM_F16, RLVK_CM_F16, 0);
    in.cm.shapes[in.cm.n_shapes++] = shape(16, 8, 8, RLVK_CM_F16, RLVK_CM_F32, 0);
    in.cm.shapes[in.cm.n_shapes++] = shape(16, 16, 16, RLVK_CM_F16, RLVK_CM_F32, 0);
    in.cm.shapes[in.cm.n_shapes++] = shape(16, 16, 16, RLVK_CM_F16, RLVK_CM_F32, 1);
    in.cm.n_listed = in.cm.n_shapes;
    return in;
}

static void expect_no(const rlvk_device_info *in, const char *needle)
{
    const char *why = "unset";
    ck_assert_int_eq(attn_cm_supported(in, &why), 0);
    ck_assert_ptr_nonnull(why);
    ck_assert_msg(strstr(why, needle), "why '%s' lacks '%s'", why, needle);
}

START_TEST(support_follows_the_listed_properties)
{
    rlvk_device_info in = nvidia_like();
    const char *why = "unset";
    ck_assert_int_eq(attn_cm_supported(&in, &why), 1);
    ck_assert_ptr_null(why);

    rlvk_device_info none;
    memset(&none, 0, sizeof none);
    none.fp16 = none.storage16 = 1;
    none.subgroup_size = 8;
    expect_no(&none, "device lacks VK_NV_cooperative_matrix / VK_KHR_cooperative_matrix");

    /* NVIDIA with both: KHR is preferred, 16x16x16 over its first 16x8x16 */
    attn_cm_shape cs;
    ck_assert_int_eq(attn_cm_shape_of(&in, &cs, NULL), 1);
    ck_assert_int_eq(cs.module, ATTN_CM_SPV_KHR);
    ck_assert_uint_eq(cs.m, 16);
    ck_assert_uint_eq(cs.n, 16);
    ck_assert_uint_eq(cs.k, 16);

    rlvk_device_info amd = in; /* RADV / ANV: KHR only, with the shape */
    amd.cm.has_nv = amd.cm.feat_nv = 0;
    amd.subgroup_size = 64;
    amd.cm.n_shapes = 0;
    amd.cm.shapes[amd.cm.n_shapes++] = shape(16, 16, 16, RLVK_CM_F16, RLVK_CM_F32, 1);
    ck_assert_int_eq(attn_cm_shape_of(&amd, &cs, NULL), 1);
    ck_assert_int_eq(cs.module, ATTN_CM_SPV_KHR);
    amd.cm.feat_khr = 0;
    expect_no(&amd, "VK_KHR_cooperative_matrix is listed but its cooperativeMatrix feature is off");

    rlvk_device_info lvp = amd; /* Mesa 26 lavapipe: KHR 8x8x8 only, subgroup size 8 */
    lvp.cm.feat_khr = 1;
    lvp.subgroup_size = 8;
    lvp.cm.n_shapes = 0;
    lvp.cm.shapes[lvp.cm.n_shapes++] = shape(8, 8, 8, RLVK_CM_F16, RLVK_CM_F32, 1);
    ck_assert_int_eq(attn_cm_shape_of(&lvp, &cs, NULL), 1);
    ck_assert_int_eq(cs.module, ATTN_CM_SPV_KHR);
    ck_assert_uint_eq(cs.m * 100 + cs.n * 10 + cs.k, 888);
    lvp.cm.shapes[0].m = 12; /* does not divide 64 */
    expect_no(&lvp, "no listed float16 x float16 + float32 -> float32 subgroup shape fits");
    in.cm.has_khr = in.cm.feat_khr = 0; /* NV alone from here */

    rlvk_device_info x = in;
    x.cm.feat_nv = 0;
    expect_no(&x, "feature is off");
    x = in;
    x.cm.nv_compute = 0;
    expect_no(&x, "compute stage");
    x = in;
    x.cm.vk_memory_model = 0;
    expect_no(&x, "vulkanMemoryModel");
    x = in;
    x.fp16 = 0;
    expect_no(&x, "shaderFloat16");
    x = in;
    x.subgroup_size = 128;
    expect_no(&x, "subgroup size");
    x = in;
    x.subgroup_size = 48;
    expect_no(&x, "subgroup size");
    x = in; /* 16x16x16 only with an fp16 accumulator, or only through KHR */
    x.cm.n_shapes = 0;
    x.cm.shapes[x.cm.n_shapes++] = shape(16, 16, 16, RLVK_CM_F16, RLVK_CM_F16, 0);
    x.cm.shapes[x.cm.n_shapes++] = shape(16, 16, 16, RLVK_CM_F16, RLVK_CM_F32, 1);
    x.cm.shapes[x.cm.n_shapes++] = shape(16, 8, 16, RLVK_CM_F16, RLVK_CM_F32, 0);
    ck_assert_int_eq(attn_cm_shape_of(&x, &cs, NULL), 1); /* NV's 16x8x16 then */
    ck_assert_uint_eq(cs.m * 100 + cs.n * 10 + cs.k, 16 * 100 + 8 * 10 + 16);
    x.cm.n_shapes = 2;
    expect_no(&x, "shape fits");
    x.cm.shapes[0].scope = 2; /* workgroup scope does not count either */
    x.cm.shapes[0].c = x.cm.shapes[0].result = RLVK_CM_F32;
    expect_no(&x, "shape fits");
    x.cm.shapes[0].scope = RLVK_CM_SCOPE_SUBGROUP;
    ck_assert_int_eq(attn_cm_supported(&x, NULL), 1);
}
END_TEST

static void expect_refused(const rlvk_device_info *in, const attn_desc *d, const char *bias,
                           int sinks, const char *needle)
{
    rl_error err = {0};
    ck_assert_int_eq(attn_cm_check(in, d, bias, sinks, &err), RL_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(err.msg, needle), "message '%s' lacks '%s'", err.msg, needle);
}

START_TEST(check_refuses_what_the_kernel_does_not_compute_by_name)
{
    rlvk_device_info in = nvidia_like();
    attn_desc ok = {.tokens = 100, .heads = 4, .kv_heads = 2, .head_dim = 64, .fp16 = 1,
                    .coopmat = 1, .flags = ATTN_CM_FLAGS, .causal = 1};
    rl_error err = {0};
    ck_assert_int_eq(attn_cm_check(&in, &ok, NULL, 0, &err), RL_OK);
    ck_assert_int_eq(attn_cm_check(&in, &ok, "none", 0, &err), RL_OK);
    attn_desc d = ok;
    d.head_dim = 128; /* with O: 34816 bytes of shared memory, inside 48 KiB */
    ck_assert_int_eq(attn_cm_check(&in, &d, NULL, 0, &err), RL_OK);
    ck_assert_uint_eq(attn_cm_shared_bytes(128, 1, 16, 16),
                      64 * 128 * 2 + 2 * 16 * 128 * 2 + 64 * 16 * 10);
    ck_assert_uint_eq(attn_cm_shared_bytes(128, 1, 8, 16), /* pvs holds K = 16 columns */
                      64 * 128 * 2 + 2 * 8 * 128 * 2 + 64 * 8 * 6 + 64 * 16 * 4);
    rlvk_device_info small = in;
    small.max_shared_memory = 32768;
    expect_refused(&small, &d, NULL, 0, "maxComputeSharedMemorySize");
    d = ok;
    d.flags |= ATTN_BUCKETS;
    expect_refused(&in, &d, NULL, 0, "distance buckets");
    d = ok;
    d.flags |= ATTN_PAIRED;
    expect_refused(&in, &d, NULL, 0, "paired");
    d = ok;
    d.flags |= ATTN_DUMP;
    expect_refused(&in, &d, NULL, 0, "logit dump");
    expect_refused(&in, &ok, "alibi", 0, "logit bias");
    expect_refused(&in, &ok, NULL, 1, "learned sinks");
    d = ok;
    d.window = 16;
    expect_refused(&in, &d, NULL, 0, "masks");
    d = ok;
    d.temp = ATTN_TEMP_SSMAX;
    expect_refused(&in, &d, NULL, 0, "temperature");
    d = ok;
    d.remap_window = 8;
    expect_refused(&in, &d, NULL, 0, "remap_window");
    d = ok;
    d.fp16 = 0;
    expect_refused(&in, &d, NULL, 0, "fp16");
    d = ok;
    d.head_dim = 72;
    expect_refused(&in, &d, NULL, 0, "multiple of 16");
    d.head_dim = 144;
    expect_refused(&in, &d, NULL, 0, "at most 128");
    d = ok;
    d.block_keys = 8;
    expect_refused(&in, &d, NULL, 0, "block_keys 8");
    rlvk_device_info none;
    memset(&none, 0, sizeof none);
    expect_refused(&none, &ok, NULL, 0, "device lacks VK_NV_cooperative_matrix");
}
END_TEST

/* ---- numerics ------------------------------------------------------------ */

/* x truncated toward zero to a multiple of 2^e. */
static double trunc_to(double x, int e)
{
    return ldexp(trunc(ldexp(x, -e)), e);
}

/* x truncated toward zero to 24 significant bits. */
static double trunc24(double x)
{
    if (x == 0)
        return 0;
    int e;
    frexp(x, &e);
    return trunc_to(x, e - 24);
}

/* A tensor-op chain with the alignment model of Fasi et al. (2021): groups
 * of k exact products and the accumulator aligned to the largest exponent,
 * each term truncated to 24 bits below it, summed exactly, the result
 * truncated to 24 bits. terms: [n] exact products in the order summed. */
static double tensor_sum(const double *terms, uint32_t n, uint32_t k)
{
    double c = 0;
    for (uint32_t g = 0; g < n; g += k) {
        uint32_t e_end = g + k < n ? g + k : n;
        int emax = INT32_MIN;
        int e;
        for (uint32_t i = g; i < e_end; i++)
            if (terms[i] != 0) {
                frexp(terms[i], &e);
                emax = e > emax ? e : emax;
            }
        if (c != 0) {
            frexp(c, &e);
            emax = e > emax ? e : emax;
        }
        if (emax == INT32_MIN)
            continue;
        double s = trunc_to(c, emax - 24);
        for (uint32_t i = g; i < e_end; i++)
            s += trunc_to(terms[i], emax - 24); /* exact: multiples of 2^(emax-24), few terms */
        c = trunc24(s);
    }
    return c;
}

static double half_round(rl_rng *rng, double sigma)
{
    return rl_half_to_float(attn_f32_to_f16((float)(sigma * rl_rng_normal(rng))));
}

START_TEST(logit_bound_covers_truncating_sums_in_any_order_and_grouping)
{
    rl_rng rng;
    rl_rng_seed(&rng, 7, "test/attn_cm");
    static const uint32_t dims[] = {16, 64, 128};
    static const uint32_t groups[] = {1, 2, 4, 8, 16};
    const double u = 0x1p-24;
    double worst = 0;
    for (size_t a = 0; a < RL_ARRAY_LEN(dims); a++) {
        uint32_t D = dims[a];
        double terms[128];
        for (int trial = 0; trial < 200; trial++) {
            double exact = 0, A = 0;
            for (uint32_t d = 0; d < D; d++) {
                /* fp16 q, k; adversarial rows: one large term and many
                 * small ones that the alignment truncates away. */
                double q = half_round(&rng, 1), k = half_round(&rng, 1);
                if (trial % 4 == 3) { /* 1 and D - 1 terms just under 2^-23 */
                    q = d == 0 ? 1 : 0x1p-12;
                    k = d == 0 ? 1 : rl_half_to_float(attn_f32_to_f16(0.99f * 0x1p-11f));
                }
                terms[d] = q * k; /* exact in double (and in fp32) */
                exact += terms[d];
                A += fabs(terms[d]);
            }
            /* random order (Fisher-Yates) */
            for (uint32_t d = D - 1; d > 0; d--) {
                uint32_t j = (uint32_t)(rl_rng_u64(&rng) % (d + 1));
                double t = terms[d];
                terms[d] = terms[j];
                terms[j] = t;
            }
            /* the chain without the final scale rounding: (6D + 2)uA - 2uA */
            double bound = attn_cm_logit_err(D, A) - 2 * u * A;
            for (size_t g = 0; g < RL_ARRAY_LEN(groups); g++) {
                double err = fabs(tensor_sum(terms, D, groups[g]) - exact);
                ck_assert_msg(err <= bound, "D %u k %u trial %d: error %.3e over bound %.3e", D,
                              groups[g], trial, err, bound);
                if (A > 0 && err / (u * A * (D + 2)) > worst)
                    worst = err / (u * A * (D + 2));
            }
        }
    }
    /* The model does exceed the scalar kernel's (D + 2) u A somewhere: the
     * larger bound is needed, not decoration. */
    ck_assert_msg(worst > 1, "worst error %.3f (D + 2) u A", worst);
}
END_TEST

/* fp16 rounding toward zero with denormals flushed (the worst a device may do). */
static double f16_rtz_ftz(double x)
{
    if (fabs(x) < 0x1p-14)
        return 0;
    int e;
    frexp(x, &e);
    return trunc_to(x, e - 11);
}

/* O_d of one row from logits s and values v[j] (dimension d), exactly and
 * with P = 2^15 exp(s - max) rounded by f16_rtz_ftz; returns the
 * verification's denominator sum p|v| + floor sum |v| in *denom. */
static void out_model(const double *s, const double *v, int n, double *exact, double *model,
                      double *pv_abs, double *v_abs)
{
    double m = -INFINITY, l = 0;
    for (int j = 0; j < n; j++)
        m = s[j] > m ? s[j] : m;
    for (int j = 0; j < n; j++)
        l += exp(s[j] - m);
    *exact = *model = *pv_abs = *v_abs = 0;
    for (int j = 0; j < n; j++) {
        double p = exp(s[j] - m);
        *exact += p * v[j] / l;
        *model += f16_rtz_ftz(p * 32768.0) / 32768.0 * v[j] / l;
        *pv_abs += p * fabs(v[j]) / l;
        *v_abs += fabs(v[j]);
    }
}

START_TEST(out_bound_covers_fp16_p_with_flushed_denormals)
{
    rl_rng rng;
    rl_rng_seed(&rng, 11, "test/attn_cm/out");
    enum { N = 300 };
    double s[N], v[N];
    double t = attn_cm_out_extra(0) - 96 * 0x1p-24; /* the P rounding part: 2^-10 */
    ck_assert_double_eq(t, 0x1p-10);
    for (int trial = 0; trial < 200; trial++) {
        double spread = 5 + trial % 40; /* logits over [-spread, 0]: many p below 2^-29 */
        for (int j = 0; j < N; j++) {
            s[j] = -spread * rl_rng_uniform(&rng);
            v[j] = half_round(&rng, 1);
        }
        double ex, mo, pv, va;
        out_model(s, v, N, &ex, &mo, &pv, &va);
        ck_assert_msg(fabs(mo - ex) <= t * (pv + ATTN_CM_O_FLOOR * va),
                      "trial %d: error %.3e over %.3e", trial, fabs(mo - ex),
                      t * (pv + ATTN_CM_O_FLOOR * va));
    }
    /* The floor is needed: the maximal key has v = 0, the others p < 2^-29
     * (flushed): O is all error, far over 2^-10 sum p|v|, inside the floor. */
    for (int j = 0; j < N; j++) {
        s[j] = j == 0 ? 0 : -25;
        v[j] = j == 0 ? 0 : 1;
    }
    double ex, mo, pv, va;
    out_model(s, v, N, &ex, &mo, &pv, &va);
    ck_assert_double_eq(mo, 0);
    ck_assert(fabs(mo - ex) > t * pv);
    ck_assert(fabs(mo - ex) <= t * (pv + ATTN_CM_O_FLOOR * va));
}
END_TEST

START_TEST(tolerances_use_the_tensor_op_terms_only_on_the_path)
{
    attn_desc d = {.tokens = 100, .heads = 1, .kv_heads = 1, .head_dim = 64, .fp16 = 1};
    attn_verify v;
    memset(&v, 0, sizeof v);
    v.max_abs_dot = 10;
    v.max_range = 8;
    v.max_keys = 100;
    double t0[ATTN_V_COUNT], t1[ATTN_V_COUNT];
    attn_tolerances(&d, &v, t0);
    d.coopmat = 1;
    attn_tolerances(&d, &v, t1);
    const double u = 0x1p-24;
    ck_assert_double_eq_tol(t0[ATTN_V_MAX], 66 * u * 10, 1e-18);
    ck_assert_double_eq_tol(t1[ATTN_V_MAX], (6 * 64 + 2) * u * 10, 1e-18);
    ck_assert_double_eq_tol(t1[ATTN_V_OUT] - t0[ATTN_V_OUT] -
                                (t1[ATTN_V_ARGMAX_P] - t0[ATTN_V_ARGMAX_P]),
                            0x1p-10 + (96 + 400) * u, 1e-15);
}
END_TEST

/* ---- the compiled module ------------------------------------------------- */

enum {
    OP_EXTENSION = 10, OP_TYPE_FLOAT = 22, OP_CONSTANT = 43, OP_CAPABILITY = 17,
    OP_SPEC_CONSTANT = 50,
    /* SPV_NV_cooperative_matrix */
    CAP_COOPMAT_NV = 5357, OP_TYPE_COOPMAT_NV = 5358, OP_COOPMAT_LOAD_NV = 5359,
    OP_COOPMAT_STORE_NV = 5360, OP_COOPMAT_MULADD_NV = 5361,
};

START_TEST(module_is_nv_cooperative_matrix_spirv_with_spec_constant_tiles)
{
    size_t bytes;
    const uint32_t *w = attn_cm_spirv(0, &bytes);
    size_t n = bytes / 4;
    ck_assert_uint_eq(w[0], 0x07230203u);
    uint32_t bound = w[3];
    /* id -> (opcode, first operand words) for types and constants */
    uint32_t *op = calloc(bound, sizeof *op), *a1 = calloc(bound, sizeof *a1),
             *a2 = calloc(bound, sizeof *a2);
    ck_assert(op && a1 && a2);
    int cap = 0, ext = 0, loads = 0, stores = 0, muladds = 0, types = 0;
    for (size_t i = 5; i < n;) {
        uint32_t len = w[i] >> 16, code = w[i] & 0xffffu;
        ck_assert_uint_gt(len, 0);
        ck_assert_uint_le(i + len, n);
        if (code == OP_CAPABILITY && w[i + 1] == CAP_COOPMAT_NV)
            cap++;
        if (code == OP_EXTENSION && !strcmp((const char *)&w[i + 1], "SPV_NV_cooperative_matrix"))
            ext++;
        if (code == OP_TYPE_FLOAT || code == OP_CONSTANT || code == OP_SPEC_CONSTANT) {
            uint32_t id = code == OP_TYPE_FLOAT ? w[i + 1] : w[i + 2];
            ck_assert_uint_lt(id, bound);
            op[id] = code;
            a1[id] = code == OP_TYPE_FLOAT ? w[i + 2] : w[i + 3];
        }
        if (code == OP_TYPE_COOPMAT_NV) {
            /* OpTypeCooperativeMatrixNV result, component type, scope, rows, columns */
            ck_assert_uint_eq(len, 6);
            uint32_t comp = w[i + 2], scope = w[i + 3], rows = w[i + 4], cols = w[i + 5];
            ck_assert_uint_eq(op[comp], OP_TYPE_FLOAT);
            ck_assert(a1[comp] == 16 || a1[comp] == 32);
            ck_assert_uint_eq(op[scope], OP_CONSTANT);
            ck_assert_uint_eq(a1[scope], 3); /* Subgroup */
            /* the tile shape: specialization constants defaulting to 16 */
            ck_assert_uint_eq(op[rows], OP_SPEC_CONSTANT);
            ck_assert_uint_eq(a1[rows], 16);
            ck_assert_uint_eq(op[cols], OP_SPEC_CONSTANT);
            ck_assert_uint_eq(a1[cols], 16);
            types++;
        }
        loads += code == OP_COOPMAT_LOAD_NV;
        stores += code == OP_COOPMAT_STORE_NV;
        muladds += code == OP_COOPMAT_MULADD_NV;
        i += len;
    }
    ck_assert_int_eq(cap, 1);
    ck_assert_int_eq(ext, 1);
    ck_assert_int_ge(types, 2);       /* fp16 A/B and fp32 accumulators */
    ck_assert_int_eq(muladds, 2);     /* QK^T and PV */
    ck_assert_int_eq(loads, 4);       /* Q, K^T, P, V */
    ck_assert_int_eq(stores, 2);      /* S and PV tiles */
    (void)a2;
    /* The test variant (tensor ops emulated) declares no cooperative matrix. */
    size_t eb;
    const uint32_t *ew = attn_cm_spirv(1, &eb);
    ck_assert_uint_eq(ew[0], 0x07230203u);
    int ecap = 0, etype = 0;
    for (size_t i = 5; i < eb / 4; i += ew[i] >> 16) {
        ck_assert_uint_gt(ew[i] >> 16, 0);
        ecap += (ew[i] & 0xffffu) == OP_CAPABILITY && ew[i + 1] == CAP_COOPMAT_NV;
        etype += (ew[i] & 0xffffu) == OP_TYPE_COOPMAT_NV;
    }
    ck_assert_int_eq(ecap + etype, 0);
    free(op);
    free(a1);
    free(a2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("attn_cm");
    /* the tile decomposition and the causal plan */
    TCase *tc_tiles = tcase_create("tiles");
    tcase_add_test(tc_tiles, tiles_cover_every_visible_pair_exactly_once);
    tcase_add_test(tc_tiles, causal_plan_skips_only_chunks_wholly_after_a_block);
    suite_add_tcase(s, tc_tiles);
    /* support detection, and what check refuses by name */
    TCase *tc_support = tcase_create("support");
    tcase_add_test(tc_support, support_follows_the_listed_properties);
    tcase_add_test(tc_support, check_refuses_what_the_kernel_does_not_compute_by_name);
    suite_add_tcase(s, tc_support);
    /* the error bounds and tolerances of the tensor-op path */
    TCase *tc_numerics = tcase_create("numerics");
    tcase_add_test(tc_numerics, logit_bound_covers_truncating_sums_in_any_order_and_grouping);
    tcase_add_test(tc_numerics, out_bound_covers_fp16_p_with_flushed_denormals);
    tcase_add_test(tc_numerics, tolerances_use_the_tensor_op_terms_only_on_the_path);
    suite_add_tcase(s, tc_numerics);
    /* the compiled SPIR-V module */
    TCase *tc_module = tcase_create("module");
    tcase_add_test(tc_module, module_is_nv_cooperative_matrix_spirv_with_spec_constant_tiles);
    suite_add_tcase(s, tc_module);
    return rl_test_run(s);
}
