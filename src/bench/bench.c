#include "bench/bench.h"

#include <stdlib.h>
#include <string.h>

#include "copy.spv.h"
#include "core/rl_util.h"
#include "pe/rope.h"

_Static_assert(sizeof(struct rl_copy_push) == 8, "rl_copy_push layout");

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, uint32_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void bench_times_set(bench_times *t, const double *ms, uint32_t n)
{
    memset(t, 0, sizeof *t);
    if (n > BENCH_MAX_REPS)
        n = BENCH_MAX_REPS;
    t->n = n;
    if (n == 0)
        return;
    memcpy(t->ms, ms, n * sizeof *ms);
    double sorted[BENCH_MAX_REPS];
    memcpy(sorted, ms, n * sizeof *ms);
    t->median = bench_median(sorted, n);
    t->min = sorted[0];
    t->max = sorted[n - 1];
}

/* Records warmup + reps launches of `record` separated by timestamps and
 * returns per-launch GPU times in ms (times[reps]). */
typedef rl_status (*record_fn)(rlvk_cmd *cmd, void *ctx, rl_error *err);

static rl_status time_launches(rlvk_device *dev, record_fn record, void *ctx, uint32_t warmup,
                               uint32_t reps, double *times, rl_error *err)
{
    rlvk_cmd cmd;
    rl_status st = rlvk_cmd_begin(dev, warmup + reps, &cmd, err);
    if (st)
        return st;
    for (uint32_t i = 0; i < warmup && !st; i++)
        st = record(&cmd, ctx, err);
    rlvk_cmd_timestamp(&cmd, 0);
    for (uint32_t i = 0; i < reps && !st; i++) {
        st = record(&cmd, ctx, err);
        rlvk_cmd_timestamp(&cmd, i + 1);
    }
    if (!st)
        st = rlvk_cmd_submit_wait(&cmd, err);
    for (uint32_t i = 0; i < reps && !st; i++) {
        double ns;
        st = rlvk_cmd_elapsed_ns(&cmd, i, i + 1, &ns, err);
        times[i] = ns * 1e-6;
    }
    rlvk_cmd_destroy(&cmd);
    return st;
}

/* Times kernels a and b interleaved: after `warmup` untimed launches of
 * each, reps rounds of one a and one b launch, each between two timestamps
 * (the order alternates a b, b a, ... so neither always runs first). Load
 * on a shared machine then reaches both alike; ta[i], tb[i] are round i's
 * times in ms. Rounds go into command buffers of at most
 * (RLVK_MAX_TIMESTAMPS - 1) / 2 rounds each. */
static rl_status time_interleaved(rlvk_device *dev, record_fn rec_a, void *ctx_a, record_fn rec_b,
                                  void *ctx_b, uint32_t warmup, uint32_t reps, double *ta,
                                  double *tb, rl_error *err)
{
    const uint32_t per_cb = (RLVK_MAX_TIMESTAMPS - 1) / 2;
    rl_status st = RL_OK;
    for (uint32_t done = 0; done < reps && !st;) {
        uint32_t n = reps - done < per_cb ? reps - done : per_cb;
        uint32_t w = done == 0 ? warmup : 0;
        rlvk_cmd cmd;
        if ((st = rlvk_cmd_begin(dev, 2 * (w + n), &cmd, err)))
            return st;
        for (uint32_t i = 0; i < w && !st; i++)
            if (!(st = rec_a(&cmd, ctx_a, err)))
                st = rec_b(&cmd, ctx_b, err);
        rlvk_cmd_timestamp(&cmd, 0);
        for (uint32_t i = 0; i < n && !st; i++) {
            int b_first = (done + i) % 2;
            st = b_first ? rec_b(&cmd, ctx_b, err) : rec_a(&cmd, ctx_a, err);
            rlvk_cmd_timestamp(&cmd, 2 * i + 1);
            if (!st)
                st = b_first ? rec_a(&cmd, ctx_a, err) : rec_b(&cmd, ctx_b, err);
            rlvk_cmd_timestamp(&cmd, 2 * i + 2);
        }
        if (!st)
            st = rlvk_cmd_submit_wait(&cmd, err);
        for (uint32_t i = 0; i < n && !st; i++) {
            double first, second;
            if (!(st = rlvk_cmd_elapsed_ns(&cmd, 2 * i, 2 * i + 1, &first, err)))
                st = rlvk_cmd_elapsed_ns(&cmd, 2 * i + 1, 2 * i + 2, &second, err);
            int b_first = (done + i) % 2;
            ta[done + i] = (b_first ? second : first) * 1e-6;
            tb[done + i] = (b_first ? first : second) * 1e-6;
        }
        rlvk_cmd_destroy(&cmd);
        done += n;
    }
    return st;
}

typedef struct rope_ctx {
    rope_kernel *k;
    const rope_freqs *f;
    rope_gpu_io io;
} rope_ctx;

static rl_status record_rope(rlvk_cmd *cmd, void *p, rl_error *err)
{
    rope_ctx *c = p;
    return rope_gpu_record(cmd, c->k, c->f, &c->io, err);
}

rl_status bench_copy_create(rlvk_device *dev, uint32_t vec4_per_inv, bench_copy *c, rl_error *err)
{
    if (!vec4_per_inv)
        vec4_per_inv = dev->info.vk_type == VK_PHYSICAL_DEVICE_TYPE_CPU ? BENCH_COPY_VEC4 : 1u;
    c->vec4_per_inv = vec4_per_inv;
    static const rlvk_texel_binding x_texel = {16, 0, VK_FORMAT_R32G32B32A32_SFLOAT};
    uint32_t spec[2] = {c->vec4_per_inv, 0};
    rlvk_pipeline_desc cd = {
        .name = "copy",
        .spirv = rl_spv_copy,
        .spirv_bytes = sizeof rl_spv_copy,
        .n_bindings = 2,
        .push_bytes = sizeof(struct rl_copy_push),
        .local_size_x = 64,
        .n_spec = 2,
        .spec = spec,
        .n_texel = 1,
        .texel = &x_texel,
    };
    rl_status st = rlvk_pipeline_create(dev, &cd, &c->pipe, err);
    c->has_texel = 0;
    if (!st && rlvk_texel_reads_preferred(&dev->info)) {
        spec[1] = 1;
        cd.name = "copy_texel";
        if ((st = rlvk_pipeline_create(dev, &cd, &c->pipe_texel, err)))
            rlvk_pipeline_destroy(dev, &c->pipe);
        else
            c->has_texel = 1;
    }
    return st;
}

int bench_copy_texel(const rlvk_device *dev, const bench_copy *c, uint32_t n_vec4)
{
    return c->has_texel && rlvk_texel_fits(&dev->info, n_vec4);
}

void bench_copy_destroy(rlvk_device *dev, bench_copy *c)
{
    rlvk_pipeline_destroy(dev, &c->pipe);
    if (c->has_texel)
        rlvk_pipeline_destroy(dev, &c->pipe_texel);
    c->has_texel = 0;
}

rl_status bench_copy_record(rlvk_cmd *cmd, const bench_copy *c, const rlvk_buffer *x,
                            const rlvk_buffer *y, uint32_t n_vec4, rl_error *err)
{
    struct rl_copy_push push = {.group_base = 0, .n_vec4 = n_vec4};
    const rlvk_buffer *bufs[2] = {x, y};
    uint64_t inv = ((uint64_t)n_vec4 + c->vec4_per_inv - 1) / c->vec4_per_inv;
    const rlvk_pipeline *pipe = bench_copy_texel(cmd->dev, c, n_vec4) ? &c->pipe_texel : &c->pipe;
    return rlvk_cmd_dispatch(cmd, pipe, bufs, &push, rlvk_groups(inv, pipe->local_size_x), err);
}

rl_status bench_copy_gbs(rlvk_device *dev, uint32_t reps, double *gbs, rl_error *err)
{
    const uint32_t n_vec4 = 2u << 20; /* 32 MiB */
    bench_copy pipe = {0};
    rlvk_buffer x = {0}, y = {0};
    rlvk_cmd cmd = {0};
    double t[16];
    if (!dev->query_pool)
        return rl_fail(err, RL_ERR_UNSUPPORTED, "%s has no timestamp queries", dev->info.name);
    if (reps > 16)
        reps = 16;
    rl_status st = bench_copy_create(dev, 0, &pipe, err);
    if (!st)
        st = rlvk_buffer_create(dev, (uint64_t)n_vec4 * 16, "copy x", &x, err);
    if (!st)
        st = rlvk_buffer_create(dev, (uint64_t)n_vec4 * 16, "copy y", &y, err);
    for (uint32_t r = 0; !st && r <= reps; r++) { /* r = 0 is the warm-up */
        if ((st = rlvk_cmd_begin(dev, 1, &cmd, err)))
            break;
        rlvk_cmd_timestamp(&cmd, 0);
        if (!(st = bench_copy_record(&cmd, &pipe, &x, &y, n_vec4, err))) {
            rlvk_cmd_timestamp(&cmd, 1);
            st = rlvk_cmd_submit_wait(&cmd, err);
        }
        double ns = 0;
        if (!st)
            st = rlvk_cmd_elapsed_ns(&cmd, 0, 1, &ns, err);
        if (!st && r > 0)
            t[r - 1] = ns;
        rlvk_cmd_destroy(&cmd);
    }
    if (!st)
        *gbs = 2.0 * n_vec4 * 16 / bench_median(t, reps);
    rlvk_buffer_destroy(dev, &x);
    rlvk_buffer_destroy(dev, &y);
    bench_copy_destroy(dev, &pipe);
    return st;
}

typedef struct copy_ctx {
    const bench_copy *pipe;
    const rlvk_buffer *x, *y;
    uint32_t n_vec4;
} copy_ctx;

static rl_status record_copy(rlvk_cmd *cmd, void *p, rl_error *err)
{
    copy_ctx *c = p;
    return bench_copy_record(cmd, c->pipe, c->x, c->y, c->n_vec4, err);
}

rl_status bench_rope(rlvk_device *dev, const bench_rope_opts *opts, bench_rope_result *res,
                     rl_error *err)
{
    memset(res, 0, sizeof *res);
    bench_rope_opts o = *opts;
    if (!o.tokens) o.tokens = 65536;
    if (!o.heads) o.heads = 1;
    if (!o.head_dim) o.head_dim = 128;
    if (!o.reps) o.reps = 25;
    if (!o.warmup) o.warmup = 3;
    if (o.reps > BENCH_MAX_REPS)
        return rl_fail(err, RL_ERR_ARG, "--reps %u exceeds the maximum %u", o.reps,
                       BENCH_MAX_REPS);
    res->opts = o;
    if (!dev->query_pool)
        return rl_fail(err, RL_ERR_UNSUPPORTED,
                       "%s has no timestamp queries on its compute queue; cannot time kernels",
                       dev->info.name);

    rope_desc desc = {.head_dim = o.head_dim, .rotary_dim = o.rotary_dim, .layout = o.layout,
                      .precision = o.precision};
    rope_freqs f;
    rl_status st = rope_freqs_compute(&desc, &f, err);
    if (st)
        return st;
    if ((st = rope_gpu_check_shape(dev, &f, o.tokens, o.heads, err)))
        return st;
    uint64_t n = o.tokens * o.heads * o.head_dim;
    uint64_t n_vec4 = (n + 3) / 4;
    uint64_t bytes = n_vec4 * 16;
    res->bytes = 2 * n * sizeof(float);

    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    uint32_t *pos = malloc(o.tokens * sizeof *pos);
    double *ref = malloc(n * sizeof *ref), *bound = malloc(n * sizeof *bound),
           *scale = malloc(n * sizeof *scale);
    double *times = malloc(o.reps * sizeof *times);
    double copy_times[BENCH_MAX_REPS], round_ratio[BENCH_MAX_REPS];
    rlvk_buffer bx = {0}, by = {0}, bp = {0}, bf = {0}, ba = {0};
    rope_kernel k = {0};
    bench_copy copy = {0};
    int have_kernel = 0;
    if (!x || !y || !pos || !ref || !bound || !scale || !times) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for the benchmark");
        goto done;
    }
    rl_rng rng;
    rl_rng_seed(&rng, 1, "bench/rope");
    for (uint64_t i = 0; i < n; i++)
        x[i] = (float)rl_rng_normal(&rng);
    for (uint64_t t = 0; t < o.tokens; t++)
        pos[t] = (uint32_t)t;

    if ((st = rlvk_buffer_create(dev, bytes, "x", &bx, err)) ||
        (st = vf_guarded_create(dev, bytes, "y", &by, err)) ||
        (st = rlvk_buffer_create(dev, o.tokens * sizeof(uint32_t), "positions", &bp, err)) ||
        (st = rope_gpu_upload_freqs(dev, &f, pos, o.tokens, &bf, err)) ||
        (st = rope_gpu_upload_angles(dev, &f, pos, o.tokens, &ba, err)) ||
        (st = rlvk_buffer_upload(dev, &bx, 0, x, n * sizeof(float), err)) ||
        (st = rlvk_buffer_upload(dev, &bp, 0, pos, o.tokens * sizeof(uint32_t), err)) ||
        (st = rope_kernel_create(dev, &k, err)))
        goto done;
    have_kernel = 1;
    if ((st = bench_copy_create(dev, 0, &copy, err)))
        goto done;
    res->copy_vec4_per_inv = copy.vec4_per_inv;
    res->copy_texel = bench_copy_texel(dev, &copy, (uint32_t)(n / 4));
    res->rope_texel = rope_gpu_texel_reads(&k, &f, o.tokens * o.heads);

    /* Verify before timing. */
    rope_ctx rc = {.k = &k, .f = &f,
                   .io = {.x = &bx, .y = &by, .pos = &bp, .freq = &bf, .angles = &ba, .tokens = o.tokens, .heads = o.heads}};
    int guard_ok = 0;
    if ((st = time_launches(dev, record_rope, &rc, 0, 1, times, err)) ||
        (st = vf_guarded_download(dev, &by, n * sizeof(float), y, &guard_ok, err)))
        goto done;
    rope_ref_apply(&f, x, pos, o.tokens, o.heads, ref);
    rope_error_bounds(&f, x, pos, o.tokens, o.heads, bound, scale);
    vf_compare(y, ref, bound, scale, n, VF_GATE_ELEM, &res->verify);
    vf_set_guard(&res->verify, guard_ok);
    if (!res->verify.pass) {
        st = rl_fail(err, RL_ERR_MISMATCH,
                     "RoPE output failed verification before timing (%zu elements over bound, "
                     "first at %zu, max abs error %.3g, NMSE %.3g over gate %.3g%s)",
                     res->verify.n_over + res->verify.n_nonfinite, res->verify.first_bad,
                     res->verify.max_abs, res->verify.nmse, res->verify.nmse_gate,
                     guard_ok ? "" : "; kernel wrote past its output");
        goto done;
    }

    copy_ctx cc = {.pipe = &copy, .x = &bx, .y = &by, .n_vec4 = (uint32_t)n_vec4};
    if ((st = time_interleaved(dev, record_rope, &rc, record_copy, &cc, o.warmup, o.reps, times,
                               copy_times, err)))
        goto done;
    bench_times_set(&res->rope, times, o.reps);
    bench_times_set(&res->copy, copy_times, o.reps);
    for (uint32_t i = 0; i < o.reps; i++) /* round i's ratio: copy time / rope time */
        round_ratio[i] = times[i] > 0 ? copy_times[i] / times[i] : 0;
    bench_times_set(&res->ratio_rounds, round_ratio, o.reps);
    /* The copy must have copied: check a few words. */
    float probe[4];
    if ((st = rlvk_buffer_download(dev, &by, (n_vec4 - 1) * 16, probe, 16, err)))
        goto done;
    for (uint64_t i = (n_vec4 - 1) * 4, j = 0; i < n; i++, j++)
        if (memcmp(&probe[j], &x[i], sizeof(float)) != 0) {
            st = rl_fail(err, RL_ERR_MISMATCH, "the copy kernel did not copy (element %llu)",
                         (unsigned long long)i);
            goto done;
        }
    res->rope_gbs = (double)res->bytes / (res->rope.median * 1e-3) * 1e-9;
    res->copy_gbs = (double)res->bytes / (res->copy.median * 1e-3) * 1e-9;
    res->ratio = res->rope_gbs / res->copy_gbs;
    /* table mode reads a (cos, sin) fp32 pair per rotated pair per token */
    res->read_bytes = res->bytes + (o.precision == RL_ROPE_PREC_TABLE
                                        ? o.tokens * (uint64_t)(f.rotary_dim / 2) * 8
                                        : 0);
    res->ratio_read = res->ratio * (double)res->read_bytes / (double)res->bytes;
done:
    bench_copy_destroy(dev, &copy);
    if (have_kernel)
        rope_kernel_destroy(dev, &k);
    rlvk_buffer_destroy(dev, &ba);
    rlvk_buffer_destroy(dev, &bf);
    rlvk_buffer_destroy(dev, &bp);
    rlvk_buffer_destroy(dev, &by);
    rlvk_buffer_destroy(dev, &bx);
    free(x);
    free(y);
    free(pos);
    free(ref);
    free(bound);
    free(scale);
    free(times);
    return st;
}
