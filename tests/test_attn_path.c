/* The attention path table (attn_path.c) over made-up device property sets:
 * which path each gets, and that tile sizes and workgroup shapes respect
 * the limits. The sets are modelled on vulkaninfo reports (lavapipe on this
 * machine; NVIDIA, AMD, Intel from their typical limits) but the test only
 * relies on the properties written here. */
#include "rl_check.h"
#include <string.h>

#include "attn/attn.h"
#include "attn/attn_path.h"
#include "rl_test.h"

#define SG_ALL (VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_VOTE_BIT | \
                VK_SUBGROUP_FEATURE_ARITHMETIC_BIT | VK_SUBGROUP_FEATURE_BALLOT_BIT | \
                VK_SUBGROUP_FEATURE_SHUFFLE_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT)

static attn_path_props lavapipe(void)
{
    /* vulkaninfo here: llvmpipe, subgroupSize 8, ops basic..quad (no
     * clustered), maxComputeSharedMemorySize 32768, 1024 invocations. */
    attn_path_props p = {.type = VK_PHYSICAL_DEVICE_TYPE_CPU, .subgroup_size = 8,
                         .subgroup_ops = SG_ALL | VK_SUBGROUP_FEATURE_QUAD_BIT,
                         .subgroup_stages = VK_SHADER_STAGE_COMPUTE_BIT | VK_SHADER_STAGE_FRAGMENT_BIT,
                         .max_shared_memory = 32768, .max_invocations = 1024,
                         .max_workgroup_size_x = 1024, .storage16 = 1,
                         .max_texel_elements = 134217728, .texel_preferred = 1,
                         .cpu_threads = 2};
    return p;
}

static attn_path_props gpu(uint32_t subgroup, uint32_t shared, uint32_t inv, int coopmat)
{
    attn_path_props p = {.type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, .subgroup_size = subgroup,
                         .subgroup_ops = SG_ALL | VK_SUBGROUP_FEATURE_CLUSTERED_BIT,
                         .subgroup_stages = VK_SHADER_STAGE_COMPUTE_BIT,
                         .max_shared_memory = shared, .max_invocations = inv,
                         .max_workgroup_size_x = inv, .coopmat_ext = coopmat, .storage16 = 1,
                         .max_texel_elements = 134217728};
    return p;
}

static const attn_path_shape d128 = {.head_dim = 128, .key_operands = 1};
static const attn_path_shape d128_o = {.head_dim = 128, .key_operands = 2};

/* Limits every supported path must respect. */
static void assert_within(const attn_path_props *p, const attn_path_shape *s, const attn_path *a)
{
    ck_assert(a->supported);
    ck_assert_uint_le(a->wg_size, p->max_invocations);
    ck_assert_uint_le(a->wg_size, p->max_workgroup_size_x);
    ck_assert_uint_eq(a->wg_size % a->split, 0);
    uint32_t rows = attn_path_rows(a);
    ck_assert(rows == ATTN_WG ||
              ((rows == ATTN_WG_CPU || (s->query_rows && rows > ATTN_WG && rows < ATTN_WG_CPU &&
                                        ATTN_WG_CPU % rows == 0)) &&
               a->kind == ATTN_PATH_SCALAR && p->type == VK_PHYSICAL_DEVICE_TYPE_CPU));
    ck_assert(a->block_keys == 16 || a->block_keys == 8 || a->block_keys == 4);
    uint64_t bytes = (uint64_t)a->block_keys * s->head_dim * 4 * s->key_operands + 32 +
                     a->block_keys * 4;
    ck_assert_uint_le(bytes, p->max_shared_memory);
    if (a->kind == ATTN_PATH_SUBGROUP) {
        ck_assert_uint_le(a->split, p->subgroup_size);
        ck_assert_uint_eq(p->subgroup_size % a->split, 0);
        ck_assert_uint_eq((s->head_dim / 4) % a->split, 0);
        ck_assert_uint_eq(a->wg_size % p->subgroup_size, 0);
    }
}

/* Texel reads: the scalar path of a CPU device, while every view fits
 * maxTexelBufferElements (and a GLSL int); never on a GPU, the subgroup
 * path, or a device without the two vec4 texel formats. */
START_TEST(texel_reads_on_cpu_scalar_within_the_view_limit)
{
    attn_path_props p = lavapipe();
    attn_path a;
    attn_path_shape s = d128_o;
    s.texels = 134217728; /* exactly the limit */
    attn_path_choose(&p, &s, &a);
    ck_assert_int_eq(a.kind, ATTN_PATH_SCALAR);
    ck_assert(a.texel);
    ck_assert_msg(strstr(a.why, "rows read as texels"), "%s", a.why);
    s.texels = 134217729; /* one past: storage-buffer reads, and the why says why */
    attn_path_choose(&p, &s, &a);
    ck_assert(a.supported && !a.texel);
    ck_assert_msg(strstr(a.why, "storage buffers (134217729 texels > 134217728)"), "%s", a.why);
    attn_path_props big = p; /* a limit past 2^31: a GLSL int indexes the view */
    big.max_texel_elements = 0xffffffffu;
    s.texels = 0x80000000u;
    attn_path_eval(&big, &s, ATTN_PATH_SCALAR, &a);
    ck_assert(!a.texel);
    s.texels = 0x7fffffffu;
    attn_path_eval(&big, &s, ATTN_PATH_SCALAR, &a);
    ck_assert(a.texel);
    attn_path_props none = p;
    none.texel_preferred = 0;
    attn_path_eval(&none, &d128_o, ATTN_PATH_SCALAR, &a);
    ck_assert(a.supported && !a.texel);
    attn_path_eval(&p, &d128_o, ATTN_PATH_SUBGROUP, &a);
    ck_assert(a.supported && !a.texel);
    attn_path_props g = gpu(32, 49152, 1024, 0);
    attn_path_eval(&g, &d128_o, ATTN_PATH_SCALAR, &a);
    ck_assert(a.supported && !a.texel);
    ck_assert(!strstr(a.why, "texel"));
    /* the preference itself (rlvk_texel_reads_preferred, through
     * attn_path_props_of): a CPU driver with both vec4 formats only */
    static const VkPhysicalDeviceType types[2] = {VK_PHYSICAL_DEVICE_TYPE_CPU,
                                                  VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU};
    for (int t = 0; t < 2; t++)
        for (int fmt = 0; fmt < 2; fmt++) {
            rlvk_device_info in = {.vk_type = types[t], .texel_vec4 = fmt,
                                   .max_texel_elements = 134217728};
            attn_path_props q;
            attn_path_props_of(&in, &q);
            ck_assert_int_eq(q.texel_preferred, t == 0 && fmt);
            ck_assert_uint_eq(q.max_texel_elements, 134217728);
        }
}
END_TEST

/* A sampled pass on a CPU device: rows per workgroup halve from
 * ATTN_WG_CPU (down to ATTN_WG) until every driver thread has a workgroup,
 * and a dispatch takes the shader's most blocks; a full pass keeps 256 rows
 * and 4 blocks, 1 up to ATTN_PATH_CPU_SHORT_KEYS keys; a GPU is not
 * affected. */
START_TEST(cpu_sampled_rows_spread_over_the_threads)
{
    static const struct {
        uint32_t threads;
        uint64_t rows, keys;
        uint32_t want_rows, want_blocks;
    } cases[] = {
        {2, 0, 0, ATTN_WG_CPU, ATTN_PATH_CPU_MAX_BLOCKS}, /* the full pass, length not known */
        {2, 0, ATTN_PATH_CPU_SHORT_KEYS + 1, ATTN_WG_CPU, ATTN_PATH_CPU_MAX_BLOCKS}, /* long */
        {2, 0, ATTN_PATH_CPU_SHORT_KEYS, ATTN_WG_CPU, 1},  /* short: one block per dispatch */
        {2, 0, 1, ATTN_WG_CPU, 1},
        {2, 256, 65536, 128, RL_ATTN_MAX_BLOCKS},          /* 2 groups of 128 */
        {2, 256, 1000, 128, RL_ATTN_MAX_BLOCKS},           /* sampled: the most, any length */
        {2, 512, 0, 256, RL_ATTN_MAX_BLOCKS},              /* already 2 groups */
        {2, 100, 0, 64, RL_ATTN_MAX_BLOCKS},               /* 2 groups of 64 */
        {16, 256, 0, 64, RL_ATTN_MAX_BLOCKS},              /* 4 groups: ATTN_WG is the floor */
        {16, 4096, 0, 256, RL_ATTN_MAX_BLOCKS},            /* 16 groups of 256 */
        {1, 1, 0, ATTN_WG_CPU, RL_ATTN_MAX_BLOCKS},        /* one thread: one group is enough */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        attn_path_props p = lavapipe();
        p.cpu_threads = cases[i].threads;
        attn_path_shape s = d128;
        s.query_rows = cases[i].rows;
        s.keys = cases[i].keys;
        attn_path a;
        attn_path_eval(&p, &s, ATTN_PATH_SCALAR, &a);
        assert_within(&p, &s, &a);
        ck_assert_msg(attn_path_rows(&a) == cases[i].want_rows &&
                          a.max_chunk_blocks == cases[i].want_blocks,
                      "case %zu: %u rows, %u blocks (%s)", i, attn_path_rows(&a),
                      a.max_chunk_blocks, a.why);
    }
    attn_path_props g = gpu(32, 49152, 1024, 0);
    attn_path_shape s = d128;
    s.query_rows = 256;
    attn_path a;
    attn_path_eval(&g, &s, ATTN_PATH_SCALAR, &a);
    ck_assert_uint_eq(attn_path_rows(&a), ATTN_WG);
    ck_assert_uint_eq(a.max_chunk_blocks, 0);
    s.query_rows = 0; /* nor a short full pass */
    s.keys = 100;
    attn_path_eval(&g, &s, ATTN_PATH_SCALAR, &a);
    ck_assert_uint_eq(a.max_chunk_blocks, 0);
}
END_TEST

START_TEST(lavapipe_gets_scalar_and_supports_subgroup)
{
    attn_path_props p = lavapipe();
    attn_path a;
    attn_path_choose(&p, &d128_o, &a);
    ck_assert_int_eq(a.kind, ATTN_PATH_SCALAR);
    assert_within(&p, &d128_o, &a);
    ck_assert_uint_eq(a.block_keys, 16); /* 16 x 128 x 4 x 2 + 96 = 16480 <= 32768 */
    ck_assert(strstr(a.why, "CPU device"));
    /* CPU devices: at most 4 blocks per dispatch (compile time in the run's
     * own process, docs/runner.md "Timing"); a GPU keeps the unroll budget's */
    ck_assert_uint_eq(a.max_chunk_blocks, ATTN_PATH_CPU_MAX_BLOCKS);
    /* CPU devices: ATTN_WG_CPU rows share each staged block (attn.h) */
    ck_assert_uint_eq(attn_path_rows(&a), ATTN_WG_CPU);
    ck_assert_uint_eq(a.wg_size, ATTN_WG_CPU);
    ck_assert(strstr(a.why, "256 rows per workgroup"));
    {
        attn_path_props g = gpu(32, 49152, 1024, 0);
        attn_path ga;
        attn_path_eval(&g, &d128_o, ATTN_PATH_SCALAR, &ga);
        ck_assert(ga.supported);
        ck_assert_uint_eq(ga.max_chunk_blocks, 0);
        ck_assert_uint_eq(attn_path_rows(&ga), ATTN_WG); /* GPUs keep 64 rows */
        ck_assert_uint_eq(ga.wg_size, ATTN_WG);
        /* a CPU device that cannot take 256 invocations falls back to 64 */
        attn_path_props small = p;
        small.max_invocations = 128;
        attn_path_eval(&small, &d128_o, ATTN_PATH_SCALAR, &ga);
        ck_assert(ga.supported);
        ck_assert_uint_eq(attn_path_rows(&ga), ATTN_WG);
        assert_within(&small, &d128_o, &ga);
    }
    attn_path_eval(&p, &d128_o, ATTN_PATH_SUBGROUP, &a);
    assert_within(&p, &d128_o, &a);
    ck_assert_uint_eq(a.split, 4); /* 128 / 32 lanes' worth, <= subgroup 8 */
    attn_path_eval(&p, &d128, ATTN_PATH_COOPMAT, &a);
    ck_assert(!a.supported);
    ck_assert(strstr(a.why, "VK_NV_cooperative_matrix"));
}
END_TEST

START_TEST(nvidia_like_gets_subgroup_split_four)
{
    attn_path_props p = gpu(32, 49152, 1024, 0);
    attn_path a;
    attn_path_choose(&p, &d128, &a);
    ck_assert_int_eq(a.kind, ATTN_PATH_SUBGROUP);
    assert_within(&p, &d128, &a);
    ck_assert_uint_eq(a.split, 4);
    ck_assert_uint_eq(a.wg_size, 256);
    ck_assert(strstr(a.why, "GPU device"));
}
END_TEST

START_TEST(amd_like_subgroup_64_keeps_whole_subgroups)
{
    /* Wave64: 64 x split is a whole number of subgroups for any split. */
    attn_path_props p = gpu(64, 65536, 1024, 0);
    attn_path a;
    attn_path_choose(&p, &d128_o, &a);
    ck_assert_int_eq(a.kind, ATTN_PATH_SUBGROUP);
    assert_within(&p, &d128_o, &a);
    /* head_dim 64: 2 lanes per row */
    attn_path_shape d64 = {.head_dim = 64, .key_operands = 1};
    attn_path_choose(&p, &d64, &a);
    ck_assert_uint_eq(a.split, 2);
    assert_within(&p, &d64, &a);
}
END_TEST

START_TEST(intel_like_16_and_32)
{
    attn_path a;
    for (uint32_t sg = 16; sg <= 32; sg *= 2) {
        attn_path_props p = gpu(sg, 65536, 512, 0);
        attn_path_choose(&p, &d128_o, &a);
        ck_assert_int_eq(a.kind, ATTN_PATH_SUBGROUP);
        assert_within(&p, &d128_o, &a);
        ck_assert_uint_eq(a.split, 4);
        /* 256 invocations: too many for a device limited to 128 */
        p.max_invocations = 128;
        attn_path_choose(&p, &d128_o, &a);
        ck_assert_int_eq(a.kind, ATTN_PATH_SUBGROUP);
        ck_assert_uint_eq(a.split, 2);
        assert_within(&p, &d128_o, &a);
    }
}
END_TEST

START_TEST(no_shuffle_falls_back_to_scalar)
{
    attn_path_props p = gpu(32, 49152, 1024, 0);
    p.subgroup_ops = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
    attn_path a;
    attn_path_choose(&p, &d128, &a);
    ck_assert_int_eq(a.kind, ATTN_PATH_SCALAR);
    assert_within(&p, &d128, &a);
    attn_path_eval(&p, &d128, ATTN_PATH_SUBGROUP, &a);
    ck_assert(!a.supported);
    ck_assert(strstr(a.why, "shuffle"));
    /* subgroup operations offered, but not to compute shaders */
    p = gpu(32, 49152, 1024, 0);
    p.subgroup_stages = VK_SHADER_STAGE_FRAGMENT_BIT;
    attn_path_choose(&p, &d128, &a);
    ck_assert_int_eq(a.kind, ATTN_PATH_SCALAR);
    /* subgroup of 1: no split fits */
    p = gpu(1, 49152, 1024, 0);
    attn_path_eval(&p, &d128, ATTN_PATH_SUBGROUP, &a);
    ck_assert(!a.supported);
    ck_assert(strstr(a.why, "no split"));
}
END_TEST

START_TEST(tiny_shared_memory_shrinks_blocks_then_refuses)
{
    attn_path_props p = gpu(32, 8192, 1024, 0);
    attn_path a;
    /* 16 keys: 16 x 128 x 4 x 2 + 96 = 16480 > 8192; 8 keys: 8224 > 8192; 4 keys: 4144 */
    attn_path_choose(&p, &d128_o, &a);
    ck_assert_uint_eq(a.block_keys, 4);
    assert_within(&p, &d128_o, &a);
    p.max_shared_memory = 4096;
    attn_path_choose(&p, &d128_o, &a);
    ck_assert(!a.supported);
    ck_assert(strstr(a.why, "maxComputeSharedMemorySize 4096"));
}
END_TEST

START_TEST(coopmat_extension_without_kernel_is_skipped_with_reason)
{
    /* The cooperative-matrix kernel runs where attn_cm_supported says so,
     * and only when asked: the default stays the subgroup path. */
    attn_path_props p = gpu(32, 49152, 1024, 1);
    attn_path a;
    attn_path_eval(&p, &d128, ATTN_PATH_COOPMAT, &a);
    ck_assert(a.supported);
    ck_assert(strstr(a.why, "only when asked"));
    attn_path_choose(&p, &d128, &a);
    ck_assert_int_eq(a.kind, ATTN_PATH_SUBGROUP);
    p = gpu(32, 49152, 1024, 0);
    snprintf(p.coopmat_why, sizeof p.coopmat_why, "device lacks VK_NV_cooperative_matrix");
    attn_path_eval(&p, &d128, ATTN_PATH_COOPMAT, &a);
    ck_assert(!a.supported);
    ck_assert(strstr(a.why, "device lacks VK_NV_cooperative_matrix"));
}
END_TEST

START_TEST(fp16_needs_16bit_storage_and_names_parse)
{
    attn_path_props p = lavapipe();
    p.storage16 = 0;
    attn_path_shape s = {.head_dim = 64, .key_operands = 1, .fp16 = 1};
    attn_path a;
    attn_path_eval(&p, &s, ATTN_PATH_SCALAR, &a);
    ck_assert(!a.supported);
    for (int k = 0; k < ATTN_PATH_COUNT; k++)
        ck_assert_int_eq(attn_path_parse(attn_path_name((attn_path_kind)k)), k);
    ck_assert_int_eq(attn_path_parse("vector"), ATTN_PATH_COUNT);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("attn_path");
    /* the CPU device (lavapipe): scalar path, rows over threads, texel reads */
    TCase *tc_cpu = tcase_create("cpu");
    tcase_add_test(tc_cpu, lavapipe_gets_scalar_and_supports_subgroup);
    tcase_add_test(tc_cpu, cpu_sampled_rows_spread_over_the_threads);
    tcase_add_test(tc_cpu, texel_reads_on_cpu_scalar_within_the_view_limit);
    suite_add_tcase(s, tc_cpu);
    /* vendor-like GPUs: subgroup sizes and splits */
    TCase *tc_gpu = tcase_create("gpu");
    tcase_add_test(tc_gpu, nvidia_like_gets_subgroup_split_four);
    tcase_add_test(tc_gpu, amd_like_subgroup_64_keeps_whole_subgroups);
    tcase_add_test(tc_gpu, intel_like_16_and_32);
    suite_add_tcase(s, tc_gpu);
    /* a missing feature or a tight limit: fall back, shrink, or refuse with the reason */
    TCase *tc_fallback = tcase_create("fallback");
    tcase_add_test(tc_fallback, no_shuffle_falls_back_to_scalar);
    tcase_add_test(tc_fallback, tiny_shared_memory_shrinks_blocks_then_refuses);
    tcase_add_test(tc_fallback, coopmat_extension_without_kernel_is_skipped_with_reason);
    tcase_add_test(tc_fallback, fp16_needs_16bit_storage_and_names_parse);
    suite_add_tcase(s, tc_fallback);
    return rl_test_run(s);
}
