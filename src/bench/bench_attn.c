/* `ropelab bench attention`: the streaming attention kernel's GFLOP/s and
 * its ratio to the same device's FMA peak, measured by fma_peak.comp in the
 * same run. Verified against the CPU reference before timing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn.h"
#include "bench/bench.h"
#include "core/rl_sample.h"
#include "core/rl_util.h"
#include "fma_peak_r3.spv.h"
#include "fma_peak_r4.spv.h"
#include "fma_peak_r6.spv.h"
#include "fma_peak_r8.spv.h"

_Static_assert(sizeof(struct rl_fma_push) == 16, "rl_fma_push layout");

/* FMA peak: groups x local invocations x RL_FMA_ROUNDS rounds of 32 FMAs
 * (64 flops), timed with timestamps. Enough groups that every core (or
 * compute unit) is busy for tens of milliseconds: at most fma_groups_max
 * (4096 on a CPU device, 262144 on a GPU), and a width slower than
 * FMA_TARGET_MS at that size runs with fewer groups (fma_size), never
 * fewer than a quarter of that (a GPU's 65536 still fill every unit). */
#define FMA_TARGET_MS 50.0
typedef struct fma_kernel {
    rlvk_pipeline pipe;
    rlvk_buffer y;
    uint32_t groups, local;
} fma_kernel;

static void fma_destroy(rlvk_device *dev, fma_kernel *f)
{
    rlvk_buffer_destroy(dev, &f->y);
    rlvk_pipeline_destroy(dev, &f->pipe);
}

/* The yardstick's widths (fma_peak.comp, RL_FMA_CHAINS running vec4 per
 * invocation): the fastest on the device is its peak (fma_choose). */
static const struct {
    const uint32_t *spv;
    size_t bytes;
    uint32_t chains;
} fma_widths[BENCH_FMA_WIDTHS] = {
    {rl_spv_fma_peak_r3, sizeof rl_spv_fma_peak_r3, 3},
    {rl_spv_fma_peak_r4, sizeof rl_spv_fma_peak_r4, 4},
    {rl_spv_fma_peak_r6, sizeof rl_spv_fma_peak_r6, 6},
    {rl_spv_fma_peak_r8, sizeof rl_spv_fma_peak_r8, 8},
};

static uint32_t fma_groups_max(const rlvk_device *dev)
{
    return dev->info.vk_type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 4096 : 262144;
}

/* groups: 0 for fma_groups_max; the output buffer holds that many in
 * every case, so fma_size may lower f->groups without reallocating. */
static rl_status fma_create(rlvk_device *dev, uint32_t width, uint32_t groups, fma_kernel *f,
                            rl_error *err)
{
    memset(f, 0, sizeof *f);
    f->local = 64;
    uint32_t max = fma_groups_max(dev);
    f->groups = groups && groups < max ? groups : max;
    rlvk_pipeline_desc pd = {.name = "fma_peak", .spirv = fma_widths[width].spv,
                             .spirv_bytes = fma_widths[width].bytes, .n_bindings = 1,
                             .push_bytes = sizeof(struct rl_fma_push), .local_size_x = f->local};
    rl_status st = rlvk_pipeline_create(dev, &pd, &f->pipe, err);
    if (!st)
        st = rlvk_buffer_create(dev, (uint64_t)max * f->local * 16, "fma_peak out", &f->y, err);
    return st; /* the caller destroys f, also after a failure */
}

/* The group count for a width whose probe dispatch (probe_groups groups)
 * took probe_ms: FMA_TARGET_MS's worth, within [groups_max / 4,
 * groups_max]. The work per group is fixed and groups run independently, so
 * time is linear in the count once every core has groups to run; the floor
 * keeps it there. A width fast at the maximum keeps (nearly) the maximum, so
 * the peak (the fastest width) is timed as before, and a slow width is timed
 * for about FMA_TARGET_MS instead of up to seconds (a CPU driver's 8-vec4
 * width: ~300 ms a dispatch at 4096 groups). */
static uint32_t fma_size(uint32_t groups_max, uint32_t probe_groups, double probe_ms)
{
    uint32_t lo = groups_max / 4;
    if (!(probe_ms > 0))
        return groups_max;
    double g = (double)probe_groups * FMA_TARGET_MS / probe_ms;
    if (g >= groups_max)
        return groups_max;
    return g > lo ? (uint32_t)g : lo;
}

static double fma_flops(const fma_kernel *f)
{
    return (double)f->groups * f->local * RL_FMA_ROUNDS * 64.0;
}

/* One timed dispatch: *ms its GPU time. */
static rl_status fma_once(rlvk_device *dev, fma_kernel *f, double *ms, rl_error *err)
{
    rlvk_cmd cmd = {0};
    struct rl_fma_push push = {.group_base = 0, .seed = 0.5f};
    const rlvk_buffer *bufs[1] = {&f->y};
    rl_status st = rlvk_cmd_begin(dev, 1, &cmd, err);
    if (st)
        return st;
    rlvk_cmd_timestamp(&cmd, 0);
    if (!(st = rlvk_cmd_dispatch(&cmd, &f->pipe, bufs, &push, f->groups, err))) {
        rlvk_cmd_timestamp(&cmd, 1);
        st = rlvk_cmd_submit_wait(&cmd, err);
    }
    double ns = 0;
    if (!st)
        st = rlvk_cmd_elapsed_ns(&cmd, 0, 1, &ns, err);
    *ms = ns * 1e-6;
    rlvk_cmd_destroy(&cmd);
    return st;
}

/* The yardstick computes something: one group's outputs (every group's
 * equal: the start values depend on the local index only) against the same
 * ring recurrence in double. The recurrence contracts (the fixed point
 * x = x^2 + c = 0.146 for c = 0.125 has |d/da| = 2x = 0.29 per pass, and
 * the fall from 0.5 passes through row sums 1, 0.75, 0.53, ...), so each
 * value's error stays within 2u max|a| (sum of the contractions) <= 2u *
 * 0.51 * 4 = 4.1u, and y's (R values, R - 1 adds) within R (4.1u + u|y|/R)
 * < 1e-5 for R <= 8 (u = 2^-24); the bound, 2e-5, is that with 2x margin.
 * A kernel whose rounds were folded or dropped is off by about 0.35. */
static rl_status fma_verify(rlvk_device *dev, const fma_kernel *f, uint32_t width, rl_error *err)
{
    float got[64 * 4];
    uint32_t n = f->local < 64 ? f->local : 64, ring = fma_widths[width].chains;
    rl_status st = rlvk_buffer_download(dev, &f->y, 0, got, (uint64_t)n * 16, err);
    for (uint32_t i = 0; !st && i < n; i++)
        for (uint32_t comp = 0; !st && comp < 4; comp++) {
            double s = 0.5f + (float)i * 1e-7f, a[8], c = 0.125, y = 0, t;
            for (uint32_t k = 0; k < ring; k++)
                a[k] = (float)(s + (double)(float)(k * 1e-3) + (double)(float)(comp * 1e-4));
            /* the shader's passes: R FMAs walking the ring (the last reads
             * t, a_0 from before the pass), then the 8 - R leftover of a
             * round (3 + 3 + 2 and 6 + 2 keep 8 per round) */
            for (uint32_t r = 0; r < RL_FMA_ROUNDS; r++) {
                uint32_t left = 8;
                while (left) {
                    uint32_t m = left < ring ? left : ring;
                    t = a[0];
                    for (uint32_t k = 0; k < m; k++)
                        a[k] = a[k] * (k + 1 < ring ? a[k + 1] : t) + c;
                    left -= m;
                }
            }
            for (uint32_t k = 0; k < ring; k++)
                y += a[k];
            double e = fabs((double)got[4 * i + comp] - y);
            if (!(e <= 2e-5))
                st = rl_fail(err, RL_ERR_MISMATCH,
                             "fma_peak (%u vec4): invocation %u component %u is %.9g, the same "
                             "recurrence in double gives %.9g (|error| %.3g > bound 2e-5)",
                             ring, i, comp, (double)got[4 * i + comp], y, e);
        }
    return st;
}

/* Times every width: at a quarter of the maximum, one untimed warm-up
 * checked by fma_verify and one dispatch that sizes it (fma_size); then reps
 * dispatches at that size, their median into res->fma_width_gflops and the
 * size into res->fma_width_groups. Picks the fastest as the device's peak:
 * res->fma_width (its index) and res->fma_gflops (its median);
 * bench_attention times that width again, at its size, next to each pass. */
static rl_status fma_choose(rlvk_device *dev, uint32_t reps, bench_attn_result *res, rl_error *err)
{
    double t[BENCH_MAX_REPS], w;
    if (reps > BENCH_MAX_REPS)
        reps = BENCH_MAX_REPS;
    rl_status st = RL_OK;
    res->fma_gflops = 0;
    for (uint32_t v = 0; !st && v < BENCH_FMA_WIDTHS; v++) {
        fma_kernel f;
        st = fma_create(dev, v, fma_groups_max(dev) / 4, &f, err);
        if (!st)
            st = fma_once(dev, &f, &w, err);
        if (!st)
            st = fma_verify(dev, &f, v, err);
        /* sized by a second dispatch: the first pays for first touches */
        if (!st && !(st = fma_once(dev, &f, &w, err)))
            f.groups = fma_size(fma_groups_max(dev), f.groups, w);
        for (uint32_t r = 0; !st && r < reps; r++)
            st = fma_once(dev, &f, &t[r], err);
        if (!st) {
            bench_times bt;
            bench_times_set(&bt, t, reps);
            double g = fma_flops(&f) / (bt.median * 1e6);
            res->fma_width_gflops[v] = g;
            res->fma_width_groups[v] = f.groups;
            if (g > res->fma_gflops) {
                res->fma_gflops = g;
                res->fma_width = v;
            }
        }
        fma_destroy(dev, &f);
    }
    return st;
}

uint32_t bench_fma_chains(uint32_t width)
{
    return width < BENCH_FMA_WIDTHS ? fma_widths[width].chains : 0;
}

/* The FMA peak alone (run's --dry-run estimates): the same kernels and timing. */
rl_status bench_fma_peak(rlvk_device *dev, uint32_t reps, double *gflops, rl_error *err)
{
    bench_attn_result r;
    memset(&r, 0, sizeof r);
    rl_status st = fma_choose(dev, reps, &r, err);
    if (!st)
        *gflops = r.fma_gflops;
    return st;
}

/* Visible (query, key) pairs per head under the mask (attn_mask_row_keys,
 * the mask's one host description) and without it (causal still applies),
 * over the query rows: rows[0 .. n_rows) when sampled, else every token. */
static void count_pairs(const bench_attn_opts *o, const uint32_t *rows, uint64_t n_rows,
                        double *visible, double *full)
{
    const attn_mask m = {.causal = o->causal, .window = o->window, .n_sink = o->n_sink,
                         .chunk_size = o->chunk_size};
    uint64_t n = o->tokens;
    *visible = *full = 0;
    for (uint64_t r = 0; r < n_rows; r++) {
        uint64_t i = rows ? rows[r] : r;
        *visible += (double)attn_mask_row_keys(&m, i, n);
        *full += (double)(o->causal ? i + 1 : n);
    }
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
                   .scale = (float)(1.0 / sqrt(o.head_dim)), .verify_rows = 8,
                   .window = o.window, .n_sink = o.n_sink, .chunk_size = o.chunk_size,
                   .path = o.path};
    int masked = o.window || o.chunk_size;
    rl_rows_plan plan = {0};
    rl_status st = RL_OK;
    if (o.query_rows) {
        if ((st = rl_rows_plan_make((rl_rows_scheme)o.sampling, o.tokens, o.query_rows, 1, &plan,
                                    err)))
            return st;
        d.query_rows = plan.n_rows;
    }
    res->query_rows = o.query_rows ? plan.n_rows : (uint32_t)o.tokens;
    if ((st = attn_check_shape(dev, &d, err))) {
        rl_rows_plan_free(&plan);
        return st;
    }
    /* Q, the statistics and O hold the query rows; K and V every token. */
    uint64_t nq_rows = attn_query_rows(&d);
    uint64_t n = o.tokens * o.heads * o.head_dim, nq = nq_rows * o.heads * o.head_dim;
    size_t esz = o.fp16 ? 2 : 4;
    void *q = malloc(nq * esz), *k = malloc(n * esz), *v = o.with_output ? malloc(n * esz) : NULL;
    float *stats = malloc(nq_rows * o.heads * RL_ATTN_NSTAT * sizeof *stats);
    float *out = o.with_output ? malloc(nq * sizeof *out) : NULL;
    double times[BENCH_MAX_REPS], ft[BENCH_MAX_REPS], *ut = NULL, *rt = NULL;
    attn_engine e = {0};
    fma_kernel fk = {0};
    if (!q || !k || !stats || (o.with_output && (!v || !out))) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for the benchmark");
        goto done;
    }
    rl_rng rng;
    rl_rng_seed(&rng, 1, "bench/attention");
    void *arrs[3] = {q, k, v};
    for (int a = 0; a < 3; a++)
        for (uint64_t i = 0; arrs[a] && i < (a ? n : nq); i++) {
            float x = (float)rl_rng_normal(&rng);
            if (o.fp16)
                ((uint16_t *)arrs[a])[i] = attn_f32_to_f16(x);
            else
                ((float *)arrs[a])[i] = x;
        }
    if ((st = attn_engine_create(dev, &e, err)))
        goto done;
    attn_inputs in = {.q = q, .k = k, .v = v, .rows = plan.rows};
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
    res->path = r.path;
    res->split = r.split;
    res->submissions = r.submissions;
    if (masked)
        res->tiles_skipped = 1.0 - (double)r.tiles_run / (double)r.tiles_full;
    res->wall_ms = r.wall_ms;
    times[0] = r.gpu_ms;
    d.no_verify = 1;
    /* Masked: the same run unmasked is timed too, each rep right after the
     * masked one (machine load drifts; pairs see the same load), after a
     * warm-up run that builds its pipeline. The ratio is the median of the
     * per-rep ratios: the saving is measured, not assumed. */
    attn_desc u = d;
    u.window = u.n_sink = u.chunk_size = 0;
    uint32_t nrep = o.single ? 1 : o.reps;
    /* The yardstick runs right after each timed pass (one fma_peak
     * dispatch, after one warm-up): the load on a shared machine drifts
     * within seconds, so each pass's ratio uses the peak measured next to
     * it, and the figure is the median of the per-pass ratios. */
    if ((st = fma_choose(dev, 3, res, err)) ||
        (st = fma_create(dev, res->fma_width, res->fma_width_groups[res->fma_width], &fk, err)) ||
        (st = fma_once(dev, &fk, &ft[0], err)))
        goto done;
    if (masked) {
        if (!(ut = malloc(nrep * sizeof *ut)) || !(rt = malloc(nrep * sizeof *rt))) {
            st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for the benchmark");
            goto done;
        }
        if ((st = attn_run(&e, &u, &in, &ou, &r, err)))
            goto done;
    }
    for (uint32_t i = 0; i < nrep; i++) {
        if (!o.single) {
            if ((st = attn_run(&e, &d, &in, &ou, &r, err)))
                goto done;
            times[i] = r.gpu_ms;
            res->submissions = r.submissions;
            res->wall_ms = r.wall_ms;
        }
        if ((st = fma_once(dev, &fk, &ft[i], err)))
            goto done;
        if (masked) {
            if ((st = attn_run(&e, &u, &in, &ou, &r, err)))
                goto done;
            ut[i] = r.gpu_ms;
            rt[i] = times[i] / ut[i];
        }
    }
    if (o.single)
        o.reps = res->opts.reps = 1;
    bench_times_set(&res->gpu, times, o.reps);
    /* QK^T is 2 d flops per visible (query, key) pair (one multiply-add
     * per dim); PV doubles it. The full causal pass counts N^2 / 2 pairs
     * (the convention of 2 N^2 d / 2; the exact count adds N / 2). */
    double vis, full;
    count_pairs(&o, plan.rows, nq_rows, &vis, &full);
    if (o.causal && !o.query_rows && !masked)
        vis = full = 0.5 * (double)o.tokens * (double)o.tokens;
    res->pairs = vis;
    double flops = 2.0 * vis * o.head_dim * o.heads * (o.with_output ? 2 : 1);
    if (masked) {
        res->excluded = 1.0 - vis / full;
        res->full_gpu_ms = bench_median(ut, nrep);
        res->time_ratio = bench_median(rt, nrep);
        res->saved_over_f = res->excluded > 0 ? (1.0 - res->time_ratio) / res->excluded : 0;
    }
    res->flops = flops;
    res->gflops = flops / (res->gpu.median * 1e6);
    res->ns_per_key = res->gpu.median * 1e6 / (double)o.tokens;
    res->ns_per_pair = res->gpu.median * 1e6 / (vis * o.heads);
    bench_times_set(&res->fma, ft, nrep);
    res->fma_groups = fk.groups;
    res->fma_local = fk.local;
    res->fma_flops = fma_flops(&fk);
    res->fma_gflops = res->fma_flops / (res->fma.median * 1e6);
    double pr[BENCH_MAX_REPS]; /* per pass: (flops / t) / (fma_flops / t_fma) */
    for (uint32_t i = 0; i < nrep; i++)
        pr[i] = flops * ft[i] / (res->fma_flops * times[i]);
    bench_times_set(&res->ratios, pr, nrep);
    res->ratio = res->ratios.median;
done:
    rl_rows_plan_free(&plan);
    fma_destroy(dev, &fk);
    attn_engine_destroy(&e);
    free(rt);
    free(ut);
    free(out);
    free(stats);
    free(v);
    free(k);
    free(q);
    return st;
}
