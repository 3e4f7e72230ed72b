/* cm_compare — a development aid, not a test: one causal fp16 problem run
 * through the device's cooperative-matrix path (where it has one), the
 * emulated kernel at 16x16x16 and 8x8x8 tiles (attn_desc.test_cm_emulate,
 * the same attn_cm.comp with its tensor ops as subgroup loops) and the
 * scalar kernel, each verified against the CPU reference; prints each
 * run's GPU time (median of 3) and worst error over its bound, under the
 * validation layer (a message fails the run). docs/attention.md
 * "Cooperative-matrix path" quotes it.
 * usage: cm_compare [TOKENS [HEAD_DIM [o]]]  (defaults 1024 64; o: with O) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "attn/attn_cm.h"
#include "attn/attn_path.h"
#include "core/rl_util.h"
#include "vk/rlvk.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 1024;
    uint32_t dim = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 64;
    int with_o = argc > 3 && !strcmp(argv[3], "o");
    if (n < 1 || n > 65536 || dim < 8 || dim > 128) {
        fprintf(stderr, "cm_compare: tokens 1..65536, head_dim 8..128\n");
        return 2;
    }
    rl_error err = {0};
    rlvk_instance inst;
    rlvk_instance_desc id = {.validation = 1};
    rlvk_device dev;
    uint32_t idx[16], nd = 0;
    if (rlvk_instance_create(&id, &inst, &err) || rlvk_select(&inst, "auto", idx, &nd, &err) ||
        rlvk_device_create(&inst, idx[0], &dev, &err)) {
        fprintf(stderr, "cm_compare: %s\n", err.msg);
        return 1;
    }
    attn_engine e;
    if (attn_engine_create(&dev, &e, &err)) {
        fprintf(stderr, "cm_compare: %s\n", err.msg);
        return 1;
    }
    size_t nq = (size_t)n * dim;
    uint16_t *q = malloc(nq * 2), *k = malloc(nq * 2), *v = malloc(nq * 2);
    uint32_t *target = malloc(n * sizeof *target);
    float *stats = malloc((size_t)n * RL_ATTN_NSTAT * sizeof *stats), *o = malloc(nq * 4);
    if (!q || !k || !v || !target || !stats || !o)
        return 1;
    rl_rng rng;
    rl_rng_seed(&rng, 7, "cm_compare");
    for (size_t i = 0; i < nq; i++) {
        q[i] = attn_f32_to_f16((float)rl_rng_normal(&rng));
        k[i] = attn_f32_to_f16((float)rl_rng_normal(&rng));
        v[i] = attn_f32_to_f16((float)rl_rng_normal(&rng));
    }
    for (uint32_t t = 0; t < n; t++)
        target[t] = (uint32_t)(rl_rng_u64(&rng) % n);
    printf("device: %s (%s)\nproblem: %u tokens, 1 head, head_dim %u, causal, fp16, statistics%s\n",
           dev.info.name, dev.info.driver_info, n, dim, with_o ? " + O" : "");
    attn_cm_shape cs;
    int have = attn_cm_shape_of(&dev.info, &cs, NULL);
    int rc = 0;
    enum { RUNS = 4, REPS = 3 };
    attn_desc ds[RUNS];
    char names[RUNS][96];
    int live[RUNS], ok[RUNS];
    double worst[RUNS], ms[RUNS][REPS];
    attn_inputs in = {.q = q, .k = k, .v = v, .target = target};
    attn_outputs out = {.stats = stats, .out = with_o ? o : NULL};
    attn_result res;
    for (int r = 0; r < RUNS; r++) { /* each verified once (this also warms it up) */
        attn_desc d = {.tokens = n, .heads = 1, .head_dim = dim, .fp16 = 1, .causal = 1,
                       .flags = ATTN_ENTROPY | ATTN_ARGMAX | ATTN_TARGET | (with_o ? ATTN_OUT : 0),
                       .scale = (float)(1.0 / sqrt(dim)), .verify_rows = 64};
        char sb[64];
        live[r] = ok[r] = 0;
        if (r == 0) {
            snprintf(names[r], sizeof names[r], "coopmat, %s",
                     have ? attn_cm_shape_str(&cs, sb, sizeof sb) : "none on this device");
            d.coopmat = 1;
        } else if (r < 3) {
            d.coopmat = d.test_cm_emulate = 1;
            d.test_cm_tile = r == 1 ? 16 : 8;
            snprintf(names[r], sizeof names[r], "coopmat emulated, %ux%ux%u", d.test_cm_tile,
                     d.test_cm_tile, d.test_cm_tile);
        } else {
            d.path = ATTN_PATH_SCALAR;
            snprintf(names[r], sizeof names[r], "scalar");
        }
        ds[r] = d;
        rl_status st = attn_run(&e, &ds[r], &in, &out, &res, &err);
        if (st == RL_ERR_UNSUPPORTED) { /* a refusal with its reason is not a failure */
            printf("  %-44s refused: %s\n", names[r], err.msg);
            continue;
        }
        if (st) {
            printf("  %-44s error: %s\n", names[r], err.msg);
            return 1;
        }
        live[r] = 1;
        ok[r] = res.verify.verdict.pass;
        worst[r] = res.verify.verdict.worst_ratio;
        rc |= !ok[r];
        ds[r].no_verify = 1;
    }
    for (int rep = 0; rep < REPS; rep++) /* timed, interleaved */
        for (int r = 0; r < RUNS; r++) {
            if (!live[r])
                continue;
            if (attn_run(&e, &ds[r], &in, &out, &res, &err)) {
                printf("  %-44s error: %s\n", names[r], err.msg);
                return 1;
            }
            ms[r][rep] = res.gpu_ms;
        }
    printf("  %-44s %12s %10s  %s\n", "run (GPU ms: median of 3, interleaved)", "GPU ms",
           "err/bnd", "result");
    for (int r = 0; r < RUNS; r++) {
        if (!live[r])
            continue;
        qsort(ms[r], REPS, sizeof ms[r][0], cmp_d);
        printf("  %-44s %12.3f %10.3f  %s\n", names[r], ms[r][REPS / 2], worst[r],
               ok[r] ? "pass" : "FAIL");
    }
    unsigned msgs = rlvk_instance_messages(&inst);
    printf("validation layer: %s, %u message(s)\n", inst.validation ? "on" : "off", msgs);
    free(q);
    free(k);
    free(v);
    free(target);
    free(stats);
    free(o);
    attn_engine_destroy(&e);
    rlvk_device_destroy(&dev);
    rlvk_instance_destroy(&inst);
    return rc || msgs ? 1 : 0;
}
