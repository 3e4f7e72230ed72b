/* run_estimate.c — time estimates of runs from the device's measured
 * throughput: a kind's device FLOPs (exp_kind.estimate_flops) over the FMA
 * peak times the attention kernel's share of it, plus its memory estimate
 * over the copy bandwidth. The yardsticks (bench_fma_peak, bench_copy_gbs)
 * are measured once per device and cached in the cache directory
 * (rlvk_cache_dir) as throughput-<vendor>-<device>-<driver>-<uuid>.json. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "core/rl_util.h"
#include "run/run_int.h"

static void calib_path(const rlvk_device *dev, char *buf, size_t cap)
{
    char dir[900], uuid[33];
    buf[0] = '\0';
    if (rlvk_cache_dir(dir, sizeof dir, NULL))
        return;
    const rlvk_pcache_key *k = &dev->pcache_key;
    rlvk_uuid_hex(k->uuid, uuid);
    snprintf(buf, cap, "%s/throughput-%04x-%04x-%08x-%s.json", dir, k->vendor_id, k->device_id,
             k->driver_version, uuid);
}

static int positive(const json_t *v)
{
    return json_is_number(v) && json_number_value(v) > 0 && isfinite(json_number_value(v));
}

rl_status run_calib_get(rlvk_device *dev, run_calib *c, rl_error *err)
{
    memset(c, 0, sizeof *c);
    snprintf(c->device, sizeof c->device, "%s", dev->info.name);
    c->attn_efficiency = RUN_ATTN_EFFICIENCY;
    char path[1100];
    calib_path(dev, path, sizeof path);
    json_t *j = path[0] ? json_load_file(path, 0, NULL) : NULL;
    /* A file written by another yardstick (before the four FMA widths, no
     * "fma_yardstick"; before the line-per-invocation copy, no
     * "copy_yardstick") holds a different peak or bandwidth: measured again. */
    const char *ys = j ? json_string_value(json_object_get(j, "fma_yardstick")) : NULL;
    const char *cs = j ? json_string_value(json_object_get(j, "copy_yardstick")) : NULL;
    if (j && ys && strcmp(ys, BENCH_FMA_YARDSTICK) == 0 && cs && strcmp(cs, BENCH_COPY_YARDSTICK) == 0 &&
        positive(json_object_get(j, "fma_gflops")) && positive(json_object_get(j, "copy_gbs"))) {
        c->fma_gflops = json_number_value(json_object_get(j, "fma_gflops"));
        c->copy_gbs = json_number_value(json_object_get(j, "copy_gbs"));
        snprintf(c->source, sizeof c->source, "cached in %s; remove it to measure again", path);
        json_decref(j);
        c->ok = 1;
        return RL_OK;
    }
    json_decref(j); /* absent or not valid: measured again and replaced */
    double t0 = rl_now();
    rl_status st = bench_fma_peak(dev, 3, &c->fma_gflops, err);
    if (!st)
        st = bench_copy_gbs(dev, 3, &c->copy_gbs, err);
    if (st)
        return st;
    snprintf(c->source, sizeof c->source, "measured now (%.2f s)", rl_now() - t0);
    c->ok = 1;
    if (path[0]) {
        json_t *o = json_pack("{s:f,s:s,s:f,s:s,s:s}", "fma_gflops", c->fma_gflops, "fma_yardstick",
                              BENCH_FMA_YARDSTICK, "copy_gbs", c->copy_gbs, "copy_yardstick",
                              BENCH_COPY_YARDSTICK, "device", dev->info.name);
        char dir[1100];
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        rl_error werr = {0};
        if (!run_mkdir_p(dir, &werr))
            (void)run_write_json(NULL, path, o, &werr); /* a cache: not being able to write is fine */
        json_decref(o);
    }
    return RL_OK;
}

double run_estimate_s(const run_item *it, const run_calib *c)
{
    if (!c->ok)
        return NAN;
    exp_run r;
    run_item_to_exp(it, &r);
    double flops = it->kind->estimate_flops ? it->kind->estimate_flops(&r) : 0;
    return flops / (c->fma_gflops * 1e9 * c->attn_efficiency) +
           (double)it->est_bytes / (c->copy_gbs * 1e9);
}

rl_status run_plan_estimate(const run_batch *b, const run_options *opt, FILE *fp, rl_error *err)
{
    uint32_t *shard = malloc((b->n_items ? b->n_items : 1) * sizeof *shard);
    if (!shard)
        return rl_fail(err, RL_ERR_NOMEM, "plan: out of memory (%zu runs)", b->n_items);
    rl_status st = run_shard_assign(b, opt->shard_count, shard, err);
    int need_gpu = 0;
    for (size_t i = 0; !st && i < b->n_items; i++)
        need_gpu |= shard[i] == opt->shard_index && b->items[i].kind->needs_gpu;
    if (st || !need_gpu) {
        free(shard);
        return st;
    }
    rlvk_instance inst = {0};
    rlvk_device dev = {0};
    run_calib c = {0};
    uint32_t idx[64], n = 0;
    rl_error e2 = {0};
    rlvk_instance_desc d = {.quiet_messages = 1};
    rl_status cs = rlvk_instance_create(&d, &inst, &e2);
    if (!cs && inst.n_physical > 64)
        cs = rl_fail(&e2, RL_ERR_LIMIT, "more than 64 devices");
    if (!cs)
        cs = rlvk_select(&inst, opt->device ? opt->device : b->device, idx, &n, &e2);
    if (!cs)
        cs = rlvk_device_create(&inst, idx[0], &dev, &e2);
    if (!cs)
        cs = run_calib_get(&dev, &c, &e2);
    rlvk_device_destroy(&dev);
    rlvk_instance_destroy(&inst);
    if (cs) {
        fprintf(fp, "time estimates: unavailable (%s)\n", e2.msg);
        free(shard);
        return RL_OK;
    }
    fprintf(fp,
            "time estimates (estimates, not measurements) on %s: FMA peak %.1f GFLOP/s, copy "
            "%.1f GB/s (%s); attention assumed at %.2f of the FMA peak; device time only "
            "(pipeline creation and CPU verification come on top)\n",
            c.device, c.fma_gflops, c.copy_gbs, c.source, c.attn_efficiency);
    fprintf(fp, "%-16s  %-10s %-12s %12s %10s\n", "run id", "kind", "encoding", "est. time",
            "memory");
    double total = 0;
    for (size_t i = 0; i < b->n_items; i++) {
        const run_item *it = &b->items[i];
        if (shard[i] != opt->shard_index)
            continue;
        double s = it->kind->needs_gpu ? run_estimate_s(it, &c) : 0;
        total += s;
        char mem[32];
        char shown[512];
        fprintf(fp, "%s  %-10s %-12s %10.2f s %10s\n", it->id, it->kind->name,
                rl_clean(json_string_value(json_object_get(
                             json_object_get(it->resolved, "encoding"), "name")),
                         shown, sizeof shown),
                s, rl_fmt_bytes(it->est_bytes, mem, sizeof mem));
    }
    fprintf(fp, "estimated device time of this shard: %.1f s\n", total);
    free(shard);
    return RL_OK;
}
