/* `ropelab bench attention`: the streaming attention kernel's GFLOP/s and
 * its ratio to the same device's FMA peak, measured by fma_peak.comp in the
 * same run. Verified against the CPU reference before timing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "bench/bench.h"
#include "core/rl_util.h"
#include "fma_peak.spv.h"

_Static_assert(sizeof(struct rl_fma_push) == 16, "rl_fma_push layout");

/* FMA peak: groups x local invocations x RL_FMA_ROUNDS rounds of 32 FMAs
 * (64 flops), timed with timestamps: one untimed warm-up, then reps timed
 * dispatches (res->fma), median for the figure. Many groups so every core
 * (or compute unit) is busy for tens of milliseconds or more. */
static rl_status fma_peak(rlvk_device *dev, uint32_t reps, bench_attn_result *res, rl_error *err)
{
    rlvk_pipeline pipe = {0};
    rlvk_buffer y = {0};
    rlvk_cmd cmd = {0};
    const uint32_t local = 64;
    uint32_t groups = dev->info.vk_type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 4096 : 262144;
    double t[BENCH_MAX_REPS];
    if (reps > BENCH_MAX_REPS)
        reps = BENCH_MAX_REPS;
    rlvk_pipeline_desc pd = {.name = "fma_peak", .spirv = rl_spv_fma_peak,
                             .spirv_bytes = sizeof rl_spv_fma_peak, .n_bindings = 1,
                             .push_bytes = sizeof(struct rl_fma_push), .local_size_x = local};
    rl_status st = rlvk_pipeline_create(dev, &pd, &pipe, err);
    if (!st)
        st = rlvk_buffer_create(dev, (uint64_t)groups * local * 16, "fma_peak out", &y, err);
    for (uint32_t r = 0; !st && r <= reps; r++) { /* r = 0 is the warm-up */
        struct rl_fma_push push = {.group_base = 0, .seed = 0.5f};
        const rlvk_buffer *bufs[1] = {&y};
        if ((st = rlvk_cmd_begin(dev, 1, &cmd, err)))
            break;
        rlvk_cmd_timestamp(&cmd, 0);
        if (!(st = rlvk_cmd_dispatch(&cmd, &pipe, bufs, &push, groups, err))) {
            rlvk_cmd_timestamp(&cmd, 1);
            st = rlvk_cmd_submit_wait(&cmd, err);
        }
        double ns = 0;
        if (!st)
            st = rlvk_cmd_elapsed_ns(&cmd, 0, 1, &ns, err);
        if (!st && r > 0)
            t[r - 1] = ns * 1e-6;
        rlvk_cmd_destroy(&cmd);
    }
    if (!st) {
        bench_times_set(&res->fma, t, reps);
        res->fma_groups = groups;
        res->fma_local = local;
        res->fma_flops = (double)groups * local * RL_FMA_ROUNDS * 64.0;
        res->fma_gflops = res->fma_flops / (res->fma.median * 1e6);
    }
    rlvk_buffer_destroy(dev, &y);
    rlvk_pipeline_destroy(dev, &pipe);
    return st;
}

/* The FMA peak alone (run's --dry-run estimates): the same kernel and timing. */
rl_status bench_fma_peak(rlvk_device *dev, uint32_t reps, double *gflops, rl_error *err)
{
    bench_attn_result r;
    memset(&r, 0, sizeof r);
    rl_status st = fma_peak(dev, reps, &r, err);
    if (!st)
        *gflops = r.fma_gflops;
    return st;
}

rl_status bench_attention(rlvk_device *dev, const bench_attn_opts *opts, bench_attn_result *res,
                          rl_error *err)
{
    memset(res, 0, sizeof *res);
    bench_attn_opts o = *opts;
    if (!o.tokens) o.tokens = 16384;
    if (!o.head_dim) o.head_dim = 128;
    if (!o.heads) o.heads = 1;
    if (!o.reps) o.reps = 3;
    res->opts = o;
    if (o.reps > BENCH_MAX_REPS)
        return rl_fail(err, RL_ERR_ARG, "--reps %u exceeds the maximum %u", o.reps,
                       BENCH_MAX_REPS);
    if (!dev->query_pool)
        return rl_fail(err, RL_ERR_UNSUPPORTED,
                       "%s has no timestamp queries on its compute queue; cannot time kernels",
                       dev->info.name);
    attn_desc d = {.tokens = o.tokens, .heads = o.heads, .head_dim = o.head_dim,
                   .causal = o.causal, .fp16 = o.fp16, .flags = o.with_output ? ATTN_OUT : 0,
                   .scale = (float)(1.0 / sqrt(o.head_dim)), .verify_rows = 8};
    rl_status st = attn_check_shape(dev, &d, err);
    if (st)
        return st;
    uint64_t n = o.tokens * o.heads * o.head_dim;
    size_t esz = o.fp16 ? 2 : 4;
    void *q = malloc(n * esz), *k = malloc(n * esz), *v = o.with_output ? malloc(n * esz) : NULL;
    float *stats = malloc(o.tokens * o.heads * RL_ATTN_NSTAT * sizeof *stats);
    float *out = o.with_output ? malloc(n * sizeof *out) : NULL;
    double times[BENCH_MAX_REPS];
    attn_engine e = {0};
    if (!q || !k || !stats || (o.with_output && (!v || !out))) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for the benchmark");
        goto done;
    }
    rl_rng rng;
    rl_rng_seed(&rng, 1, "bench/attention");
    void *arrs[3] = {q, k, v};
    for (int a = 0; a < 3; a++)
        for (uint64_t i = 0; arrs[a] && i < n; i++) {
            float x = (float)rl_rng_normal(&rng);
            if (o.fp16)
                ((uint16_t *)arrs[a])[i] = attn_f32_to_f16(x);
            else
                ((float *)arrs[a])[i] = x;
        }
    if ((st = attn_engine_create(dev, &e, err)))
        goto done;
    attn_inputs in = {.q = q, .k = k, .v = v};
    attn_outputs ou = {.stats = stats, .out = out};
    attn_result r;
    /* Verify first (this run also builds the pipeline). */
    if ((st = attn_run(&e, &d, &in, &ou, &r, err)))
        goto done;
    res->verify = r.verify.verdict;
    snprintf(res->verify_worst, sizeof res->verify_worst, "%s", r.verify.worst);
    if (!res->verify.pass) {
        st = rl_fail(err, RL_ERR_MISMATCH,
                     "attention failed verification before timing (%s: error/bound %.3g, NMSE "
                     "%.3g, gate %.3g%s)", r.verify.worst, res->verify.worst_ratio,
                     res->verify.nmse, res->verify.nmse_gate,
                     r.guard_ok ? "" : "; kernel wrote past its output");
        goto done;
    }
    res->chunk_keys = r.chunk_keys;
    res->submissions = r.submissions;
    res->wall_ms = r.wall_ms;
    times[0] = r.gpu_ms;
    d.no_verify = 1;
    for (uint32_t i = 0; !o.single && i < o.reps; i++) {
        if ((st = attn_run(&e, &d, &in, &ou, &r, err)))
            goto done;
        times[i] = r.gpu_ms;
        res->submissions = r.submissions;
        res->wall_ms = r.wall_ms;
    }
    if (o.single)
        o.reps = res->opts.reps = 1;
    bench_times_set(&res->gpu, times, o.reps);
    /* QK^T is 2 N^2 d flops (one multiply-add per key, query and dim); PV
     * doubles it; causal halves both. */
    double flops = 2.0 * (double)o.tokens * (double)o.tokens * o.head_dim * o.heads;
    if (o.with_output)
        flops *= 2;
    if (o.causal)
        flops *= 0.5;
    res->flops = flops;
    res->gflops = flops / (res->gpu.median * 1e6);
    if ((st = fma_peak(dev, BENCH_FMA_REPS, res, err)))
        goto done;
    res->ratio = res->gflops / res->fma_gflops;
done:
    attn_engine_destroy(&e);
    free(out);
    free(stats);
    free(v);
    free(k);
    free(q);
    return st;
}
