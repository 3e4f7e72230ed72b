/* exp/exp_attn.c: attention of a registry encoding, verified end to end. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"
#include "exp/exp.h"
#include "pe/pe.h"
#include "rl_test.h"

static pe_encoding *make(const char *name, const char *params, const pe_shape *s)
{
    json_error_t je;
    json_t *p = params ? json_loads(params, 0, &je) : NULL;
    pe_encoding *e = NULL;
    rl_error err = {0};
    ck_assert_msg(pe_encoding_create(name, p, s, &e, &err) == RL_OK, "%s", err.msg);
    json_decref(p);
    return e;
}

static const struct {
    const char *name, *params;
} encodings[] = {
    {"rope", "{\"rope_type\": \"yarn\", \"factor\": 4, \"original_max_position_embeddings\": 32}"},
    {"alibi", NULL},
    {"t5", NULL},
    {"sinusoidal", NULL},
    {"xl", NULL},
    {"nope", NULL},
};

START_TEST(encoding_attention_is_verified_end_to_end)
{
    enum { T = 40, H = 2, KV = 1, D = 32 };
    rl_gpu g;
    rl_gpu_open(&g);
    pe_shape s = {.head_dim = D, .heads = H, .kv_heads = KV, .seed = 3, .max_positions = 1000 + T};
    pe_encoding *e = make(encodings[_i].name, encodings[_i].params, &s);
    float *q = malloc(T * H * D * sizeof *q), *k = malloc(T * KV * D * sizeof *k);
    uint32_t pos[T];
    rl_rng rng;
    rl_rng_seed(&rng, 5, "test/exp_attn");
    for (int i = 0; i < T * H * D; i++)
        q[i] = (float)rl_rng_normal(&rng);
    for (int i = 0; i < T * KV * D; i++)
        k[i] = (float)rl_rng_normal(&rng);
    for (int t = 0; t < T; t++)
        pos[t] = 1000 + (uint32_t)t;
    float stats[T * H * RL_ATTN_NSTAT];
    attn_engine eng;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &eng, &err) == RL_OK);
    exp_attn_io io = {.tokens = T, .q = q, .k = k, .pos = pos, .causal = 1,
                      .flags = ATTN_ENTROPY | ATTN_ARGMAX};
    attn_outputs out = {.stats = stats};
    exp_attn_result r;
    ck_assert_msg(exp_attn_run(&g.dev, &eng, e, &io, &out, &r, &err) == RL_OK, "%s", err.msg);
    ck_assert_msg(r.pass, "%s: worst %s error/bound %g, q %g k %g", encodings[_i].name, r.worst,
                  r.attn_stats.worst_ratio, r.vec_q.worst_ratio, r.vec_k.worst_ratio);
    ck_assert_uint_eq(r.attn.verify.rows, 32 * H);
    if (_i == 0) {
        /* YaRN factor 4: attention factor 0.1 ln 4 + 1 multiplies cos and sin,
         * so logits scale by its square. */
        double af = 0.1 * log(4.0) + 1.0;
        ck_assert_double_eq_tol(r.scale, af * af / sqrt(D), 1e-6);
        ck_assert_uint_eq(r.vec_q.n, T * H * D);
    }
    /* Entropy of a causal row lies in [0, ln(keys)]. */
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            float ent = stats[(t * H + h) * RL_ATTN_NSTAT + RL_ATTN_S_ENTROPY];
            ck_assert(ent >= -1e-5f && ent <= logf((float)(t + 1)) + 1e-4f);
        }
    attn_engine_destroy(&eng);
    pe_encoding_destroy(e);
    free(q);
    free(k);
    rl_gpu_close(&g);
}
END_TEST

START_TEST(paired_encoding_against_itself_has_zero_kl)
{
    enum { T = 33, H = 2, KV = 2, D = 16 };
    rl_gpu g;
    rl_gpu_open(&g);
    pe_shape s = {.head_dim = D, .heads = H, .kv_heads = KV};
    pe_encoding *a = make("rope", NULL, &s), *b = make("rope", NULL, &s);
    float q[T * H * D], k[T * KV * D];
    rl_rng rng;
    rl_rng_seed(&rng, 9, "test/exp_attn/kl");
    for (int i = 0; i < T * H * D; i++)
        q[i] = (float)rl_rng_normal(&rng);
    for (int i = 0; i < T * KV * D; i++)
        k[i] = (float)rl_rng_normal(&rng);
    float stats[T * H * RL_ATTN_NSTAT];
    attn_engine eng;
    rl_error err = {0};
    ck_assert(attn_engine_create(&g.dev, &eng, &err) == RL_OK);
    exp_attn_io io = {.tokens = T, .q = q, .k = k, .causal = 0, .paired = b};
    attn_outputs out = {.stats = stats};
    exp_attn_result r;
    ck_assert_msg(exp_attn_run(&g.dev, &eng, a, &io, &out, &r, &err) == RL_OK, "%s", err.msg);
    ck_assert(r.pass);
    /* Identical definitions: the kernel computes the same logits twice, so
     * KL(p || p) is 0 up to fp32 rounding of two identical sums. */
    for (int i = 0; i < T * H; i++)
        ck_assert_float_eq_tol(stats[i * RL_ATTN_NSTAT + RL_ATTN_S_KL], 0.0f, 1e-6f);
    attn_engine_destroy(&eng);
    pe_encoding_destroy(a);
    pe_encoding_destroy(b);
    rl_gpu_close(&g);
}
END_TEST

int main(void)
{
    rl_test_pin_driver();
    rl_test_require_vulkan("exp_attn");
    Suite *s = suite_create("exp_attn");
    TCase *tc = tcase_create("exp_attn");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, encoding_attention_is_verified_end_to_end, 0,
                        (int)(sizeof encodings / sizeof encodings[0]));
    tcase_add_test(tc, paired_encoding_against_itself_has_zero_kl);
    suite_add_tcase(s, tc);
    return rl_test_run(s);
}
