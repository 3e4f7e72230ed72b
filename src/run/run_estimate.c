/* run_estimate.c — time estimates of runs from the device's measured
 * throughput: a kind's device FLOPs (exp_kind.estimate_flops) over the FMA
 * peak times the attention kernel's share of it, plus its memory estimate
 * over the copy bandwidth, corrected by what earlier real runs of the same
 * kind and encoding family measured against their estimates. The
 * yardsticks (bench_fma_peak, bench_copy_gbs), when and under what load
 * they were measured, and the learned ratios live in the cache directory
 * (rlvk_cache_dir) as throughput-<vendor>-<device>-<driver>-<uuid>.json;
 * the yardsticks are measured again when that file is stale
 * (run_calib_stale). Every write holds PATH.lock and renames a temporary
 * into place, so two processes never tear the file and none loses the
 * other's runs. */
#define _DEFAULT_SOURCE /* flock, getloadavg */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "core/rl_fs.h"
#include "core/rl_util.h"
#include "run/run_int.h"
#include "run/run_parse.h"

#define CALIB_MAX_BYTES (4u << 20)

static void calib_dir(const char *path, char *dir, size_t cap)
{
    snprintf(dir, cap, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
}

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

static double num_or(const json_t *v, double dflt)
{
    return json_is_number(v) && isfinite(json_number_value(v)) ? json_number_value(v) : dflt;
}

void run_machine_load(double *load1, long *cpus)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    *cpus = n > 0 ? n : 0;
    double l[1];
    *load1 = getloadavg(l, 1) == 1 && l[0] >= 0 && isfinite(l[0]) ? l[0] : -1;
}

/* The file's online CPU count: a whole number from 1 to 2^20, else 0
 * (unknown; a crafted value never reaches a cast it would overflow). */
static long file_cpus(const json_t *j)
{
    double v = num_or(json_object_get(j, "cpus"), 0);
    return v >= 1 && v <= (double)(1L << 20) && v == floor(v) ? (long)v : 0;
}

/* The file's yardsticks are this build's. */
static int same_yardsticks(const json_t *j)
{
    const char *ys = json_string_value(json_object_get(j, "fma_yardstick"));
    const char *cs = json_string_value(json_object_get(j, "copy_yardstick"));
    return ys && !strcmp(ys, BENCH_FMA_YARDSTICK) && cs && !strcmp(cs, BENCH_COPY_YARDSTICK);
}

int run_calib_stale(const json_t *j, double now, double load1, long cpus, int cpu_device,
                    char *why, size_t cap)
{
    if (!json_is_object(j)) {
        snprintf(why, cap, "the cached file is not a calibration (not a JSON object)");
        return 1;
    }
    /* A file written by another yardstick (before the four FMA widths, no
     * "fma_yardstick"; before the line-per-invocation copy, no
     * "copy_yardstick") holds a different peak or bandwidth. */
    if (!same_yardsticks(j)) {
        snprintf(why, cap, "the cached calibration was measured with another yardstick");
        return 1;
    }
    if (!positive(json_object_get(j, "fma_gflops")) || !positive(json_object_get(j, "copy_gbs"))) {
        snprintf(why, cap, "the cached file holds no valid FMA peak and copy bandwidth");
        return 1;
    }
    const char *sr = json_string_value(json_object_get(j, "stale_reason"));
    if (sr && sr[0]) {
        char shown[400];
        snprintf(why, cap, "a real run disagreed with its estimate: %s",
                 rl_clean(sr, shown, sizeof shown));
        return 1;
    }
    const json_t *at = json_object_get(j, "measured_at");
    if (!json_is_number(at) || !isfinite(json_number_value(at))) {
        snprintf(why, cap, "the cached calibration records no time stamp (written before "
                           "calibrations recorded when and under what load they were measured)");
        return 1;
    }
    double age = now - json_number_value(at);
    if (age > RUN_CALIB_MAX_AGE_S) {
        snprintf(why, cap, "the cached calibration was measured %.1f days ago (limit %.0f days)",
                 age / 86400, RUN_CALIB_MAX_AGE_S / 86400);
        return 1;
    }
    if (age < -300) {
        snprintf(why, cap, "the cached calibration's time stamp is %.0f s in the future", -age);
        return 1;
    }
    if (!cpu_device)
        return 0;
    long then_cpus = file_cpus(j);
    if (cpus > 0 && then_cpus > 0 && cpus != then_cpus) {
        snprintf(why, cap, "%ld CPUs are online now against %ld when it was measured", cpus,
                 then_cpus);
        return 1;
    }
    double then = num_or(json_object_get(j, "load_per_cpu"), -1);
    if (load1 < 0 || cpus <= 0)
        return 0; /* the load is unknown now: nothing to compare */
    if (then < 0) {
        snprintf(why, cap, "the cached calibration of this CPU device records no load");
        return 1;
    }
    double lpc = load1 / (double)cpus;
    if (fabs(lpc - then) > RUN_CALIB_LOAD_LIMIT) {
        snprintf(why, cap,
                 "the load per CPU is %.2f now against %.2f when it was measured (limit "
                 "+-%.1f)",
                 lpc, then, RUN_CALIB_LOAD_LIMIT);
        return 1;
    }
    return 0;
}

/* An exclusive flock on path.lock (created in path's directory without
 * following a link); -1 when it cannot be had. */
static int calib_lock(const char *path)
{
    char lp[1200], dir[1200];
    snprintf(lp, sizeof lp, "%s.lock", path);
    calib_dir(path, dir, sizeof dir);
    int fd = rl_fs_open(dir, lp, O_RDWR | O_CREAT, 0666, NULL);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    return fd;
}

static void calib_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* releases the flock */
}

/* The cache file's contents; NULL (and why, when why is given) when
 * absent or not JSON. */
static json_t *calib_load(const char *path, char *why, size_t cap)
{
    char dir[1200];
    calib_dir(path, dir, sizeof dir);
    if (rl_fs_kind(dir, path, NULL) <= 0) { /* nothing there, nor perhaps its directory */
        if (why)
            snprintf(why, cap, "no calibration cached yet");
        return NULL;
    }
    rl_error e = {0};
    json_t *j = rl_fs_load_json(dir, path, CALIB_MAX_BYTES, &e);
    if (!j && why)
        snprintf(why, cap, "the cached file is not a valid calibration (%.400s); replaced", e.msg);
    return j;
}

static void fmt_utc(double t, char *buf, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || !strftime(buf, cap, "%Y-%m-%d %H:%M:%S UTC", &tm))
        snprintf(buf, cap, "?");
}

static void calib_from_json(run_calib *c, const json_t *j)
{
    c->fma_gflops = json_number_value(json_object_get(j, "fma_gflops"));
    c->copy_gbs = json_number_value(json_object_get(j, "copy_gbs"));
    c->measured_at = num_or(json_object_get(j, "measured_at"), 0);
    c->load_per_cpu = num_or(json_object_get(j, "load_per_cpu"), -1);
    c->cpus = file_cpus(j);
    const json_t *l = json_object_get(j, "learned");
    c->learned = json_is_object(l) ? json_incref((json_t *)l) : NULL;
}

/* " at load L per CPU (N CPUs)" or "" where unknown. */
static void fmt_load(const run_calib *c, char *buf, size_t cap)
{
    if (c->load_per_cpu >= 0 && c->cpus > 0)
        snprintf(buf, cap, " at load %.2f per CPU (%ld CPUs)", c->load_per_cpu, c->cpus);
    else
        buf[0] = '\0';
}

rl_status run_calib_get(rlvk_device *dev, run_calib *c, rl_error *err)
{
    memset(c, 0, sizeof *c);
    snprintf(c->device, sizeof c->device, "%s", dev->info.name);
    c->attn_efficiency = RUN_ATTN_EFFICIENCY;
    c->cpu_device = dev->info.type && !strcmp(dev->info.type, "cpu");
    c->load_per_cpu = -1;
    calib_path(dev, c->path, sizeof c->path);
    double load1, now = (double)time(NULL);
    long cpus;
    run_machine_load(&load1, &cpus);
    char why[600] = "no cache directory";
    json_t *j = c->path[0] ? calib_load(c->path, why, sizeof why) : NULL;
    if (j && !run_calib_stale(j, now, load1, cpus, c->cpu_device, why, sizeof why)) {
        calib_from_json(c, j);
        json_decref(j);
        char when[64], load[96];
        fmt_utc(c->measured_at, when, sizeof when);
        fmt_load(c, load, sizeof load);
        snprintf(c->source, sizeof c->source,
                 "cached in %s, measured %s%s; remove it to measure again", c->path, when, load);
        c->ok = 1;
        return RL_OK;
    }
    json_decref(j); /* absent, stale or not valid: measured again and replaced */
    snprintf(c->remeasured, sizeof c->remeasured, "%s", why);
    double t0 = rl_now();
    rl_status st = bench_fma_peak(dev, 3, &c->fma_gflops, err);
    if (!st)
        st = bench_copy_gbs(dev, 3, &c->copy_gbs, err);
    if (st)
        return st;
    c->measured_at = now;
    c->cpus = cpus;
    c->load_per_cpu = load1 >= 0 && cpus > 0 ? load1 / (double)cpus : -1;
    char load[96];
    fmt_load(c, load, sizeof load);
    snprintf(c->source, sizeof c->source, "measured now (%.2f s)%s: %s", rl_now() - t0, load, why);
    c->ok = 1;
    if (!c->path[0])
        return RL_OK;
    char dir[1200];
    calib_dir(c->path, dir, sizeof dir);
    rl_error werr = {0};
    if (run_mkdir_p(dir, &werr))
        return RL_OK; /* a cache: not being able to write is fine */
    int lock = calib_lock(c->path);
    /* what other runs taught meanwhile survives the new yardsticks, as long
     * as the file is this build's (the ratios are of its estimates) */
    json_t *old = calib_load(c->path, NULL, 0);
    json_t *learned = NULL;
    if (json_is_object(old) && same_yardsticks(old) &&
        json_is_object(json_object_get(old, "learned")))
        learned = json_incref(json_object_get(old, "learned"));
    json_decref(old);
    if (!learned)
        learned = json_object();
    char when[64];
    fmt_utc(now, when, sizeof when);
    json_t *o = json_pack("{s:f,s:s,s:f,s:s,s:s,s:I,s:s,s:b,s:s,s:O}", "fma_gflops",
                          c->fma_gflops, "fma_yardstick", BENCH_FMA_YARDSTICK, "copy_gbs",
                          c->copy_gbs, "copy_yardstick", BENCH_COPY_YARDSTICK, "device",
                          dev->info.name, "measured_at", (json_int_t)now, "measured_at_utc", when,
                          "cpu_device", c->cpu_device, "measured_because", why, "learned",
                          learned);
    if (o && load1 >= 0)
        json_object_set_new(o, "load1", json_real(load1));
    if (o && cpus > 0)
        json_object_set_new(o, "cpus", json_integer((json_int_t)cpus));
    if (o && c->load_per_cpu >= 0)
        json_object_set_new(o, "load_per_cpu", json_real(c->load_per_cpu));
    if (o)
        (void)run_write_json(dir, c->path, o, &werr);
    json_decref(o);
    calib_unlock(lock);
    c->learned = learned;
    return RL_OK;
}

void run_calib_free(run_calib *c)
{
    json_decref(c->learned);
    c->learned = NULL;
}

/* Seconds for the plan's columns: two decimals, four below 0.1 s. */
static const char *fmt_s(double v, char *buf, size_t cap)
{
    snprintf(buf, cap, v >= 0.1 || v == 0 ? "%.2f" : "%.4f", v);
    return buf;
}

void run_learned_get(const json_t *learned, const char *key, run_learned *l)
{
    *l = (run_learned){.n = 0, .correction = 1, .band = RUN_CALIB_UNLEARNED_BAND};
    const json_t *a = json_object_get(learned, key);
    size_t n = json_array_size(a);
    double lr[RUN_CALIB_HISTORY];
    size_t m = 0;
    /* the newest RUN_CALIB_HISTORY ratios (the file keeps no more, but a
     * hand-edited one may) */
    for (size_t i = n; i-- > 0 && m < RUN_CALIB_HISTORY;) {
        const json_t *r = json_object_get(json_array_get(a, i), "ratio");
        if (positive(r))
            lr[m++] = log(json_number_value(r));
    }
    if (!m)
        return;
    double mean = 0;
    for (size_t i = 0; i < m; i++)
        mean += lr[i];
    mean /= (double)m;
    l->n = m;
    l->correction = exp(mean);
    if (m < 2)
        return; /* one run tells the level, not the spread */
    double ss = 0;
    for (size_t i = 0; i < m; i++)
        ss += (lr[i] - mean) * (lr[i] - mean);
    double band = exp(2 * sqrt(ss / (double)(m - 1)));
    l->band = band > RUN_CALIB_BAND_MIN ? band : RUN_CALIB_BAND_MIN;
}

void run_learn_key(const run_item *it, char *buf, size_t cap)
{
    const char *type =
        json_string_value(json_object_get(json_object_get(it->resolved, "encoding"), "type"));
    const char *fam = run_enc_family(type);
    snprintf(buf, cap, "%s/%s", it->kind->name, fam ? fam : type ? type : "none");
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

void run_estimate(const run_item *it, const run_calib *c, run_est *e)
{
    memset(e, 0, sizeof *e);
    run_learn_key(it, e->key, sizeof e->key);
    e->raw_s = run_estimate_s(it, c);
    run_learned_get(c->learned, e->key, &e->l);
    e->s = e->raw_s * e->l.correction;
    e->lo_s = e->s / e->l.band;
    e->hi_s = e->s * e->l.band;
}

int run_est_disagrees(const run_est *e, double measured_s)
{
    if (!(e->s > 0) || !(measured_s > 0) || !isfinite(e->s) || !isfinite(measured_s))
        return 0;
    if (!(e->raw_s >= RUN_CALIB_DISAGREE_MIN_S))
        return 0; /* the yardsticks' part is too small to blame */
    double r = measured_s / e->s;
    int beyond = r > RUN_CALIB_DISAGREE || r < 1 / RUN_CALIB_DISAGREE;
    return beyond && (measured_s < e->lo_s || measured_s > e->hi_s);
}

int run_calib_add_run(json_t *j, const run_est *e, const char *run_id, double measured_s,
                      double now, double load_per_cpu)
{
    if (!(e->raw_s > 0) || !isfinite(e->raw_s) || !(measured_s > 0) || !isfinite(measured_s))
        return 0;
    json_t *learned = json_object_get(j, "learned");
    if (!json_is_object(learned)) {
        learned = json_object();
        json_object_set_new(j, "learned", learned);
    }
    json_t *a = json_object_get(learned, e->key);
    if (!json_is_array(a)) {
        a = json_array();
        json_object_set_new(learned, e->key, a);
    }
    json_t *r = json_pack("{s:s,s:f,s:f,s:f,s:f,s:I}", "run", run_id, "ratio",
                          measured_s / e->raw_s, "estimate_s", e->raw_s, "corrected_s", e->s,
                          "measured_s", measured_s, "at", (json_int_t)now);
    if (r && load_per_cpu >= 0)
        json_object_set_new(r, "load_per_cpu", json_real(load_per_cpu));
    if (r)
        json_array_append_new(a, r);
    while (json_array_size(a) > RUN_CALIB_HISTORY)
        json_array_remove(a, 0);
    if (!run_est_disagrees(e, measured_s))
        return 0;
    char why[400];
    snprintf(why, sizeof why,
             "run %s (%s) measured %.3g s of device time against %.3g s estimated (%.2fx, "
             "beyond %.0fx and outside its band %.3g-%.3g s)",
             run_id, e->key, measured_s, e->s, measured_s / e->s, RUN_CALIB_DISAGREE, e->lo_s,
             e->hi_s);
    json_object_set_new(j, "stale_reason", json_string(why));
    return 1;
}

rl_status run_calib_learn(const run_calib *c, const run_est *e, const char *run_id,
                          double measured_s, rl_error *err)
{
    if (!c->ok || !c->path[0])
        return RL_OK;
    int lock = calib_lock(c->path);
    if (lock < 0)
        return rl_fail(err, RL_ERR_IO, "%s.lock: cannot lock", c->path);
    /* read under the lock: another process's runs since are kept */
    json_t *j = calib_load(c->path, NULL, 0);
    rl_status st = RL_OK;
    if (json_is_object(j)) {
        double load1;
        long cpus;
        run_machine_load(&load1, &cpus);
        run_calib_add_run(j, e, run_id, measured_s, (double)time(NULL),
                          load1 >= 0 && cpus > 0 ? load1 / (double)cpus : -1);
        char dir[1200];
        calib_dir(c->path, dir, sizeof dir);
        st = run_write_json(dir, c->path, j, err);
    } /* else gone or torn: the next run_calib_get replaces it */
    json_decref(j);
    calib_unlock(lock);
    return st;
}

/* The runs of the shard whose K (one float32 row of kv_heads x head_dim per
 * token, at the longest length) exceeds one storage binding on the device:
 * the engine binds K (and K_b, V) a window of whole chunks at a time
 * (attn_gpu.c; attn_result.key_windows), the transforms a window of tokens
 * at a time. Said per run, with at least how many windows. */
static void plan_windows(const run_batch *b, const uint32_t *shard, uint32_t si, uint64_t range,
                         const char *device, FILE *fp)
{
    if (!range)
        return;
    size_t shown = 0;
    for (size_t i = 0; i < b->n_items; i++) {
        const run_item *it = &b->items[i];
        if (shard[i] != si || !it->kind->needs_gpu)
            continue;
        const json_t *p = json_object_get(it->resolved, "params"),
                     *m = json_object_get(it->resolved, "model");
        json_int_t len = json_integer_value(json_object_get(p, "max_len"));
        if (len <= 0)
            len = json_integer_value(json_object_get(p, "length"));
        if (len <= 0)
            continue; /* not an attention kind */
        uint64_t kbytes = (uint64_t)len * (uint64_t)json_integer_value(json_object_get(m, "kv_heads")) *
                          (uint64_t)json_integer_value(json_object_get(m, "head_dim")) * 4u;
        if (kbytes <= range)
            continue;
        char kb[32], rb[32];
        if (shown++ == 0)
            fprintf(fp, "keys beyond one binding on %s (maxStorageBufferRange %s): K, K_b and V "
                        "are bound a window of whole chunks at a time, the transforms a window "
                        "of tokens (docs/attention.md, \"K beyond one binding\")\n",
                    device, rl_fmt_bytes(range, rb, sizeof rb));
        fprintf(fp, "%s  %-10s %llu tokens: K %s, at least %llu windows\n", it->id,
                it->kind->name, (unsigned long long)len, rl_fmt_bytes(kbytes, kb, sizeof kb),
                (unsigned long long)((kbytes + range - 1) / range));
    }
    if (!shown)
        fprintf(fp, "every run's K fits one storage binding on %s\n", device);
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
    uint64_t range = cs ? 0 : dev.info.max_storage_buffer_range;
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
            "(pipeline creation and CPU verification come on top); corrected per kind and "
            "family by what earlier runs measured (band: their spread)\n",
            c.device, c.fma_gflops, c.copy_gbs, c.source, c.attn_efficiency);
    fprintf(fp, "%-16s  %-10s %-12s %12s %10s  %s\n", "run id", "kind", "encoding", "est. time",
            "memory", "band (learned from)");
    double total = 0, lo = 0, hi = 0;
    size_t n_runs = 0, n_learned = 0;
    for (size_t i = 0; i < b->n_items; i++) {
        const run_item *it = &b->items[i];
        if (shard[i] != opt->shard_index)
            continue;
        run_est e = {.l = {.correction = 1, .band = 1}};
        char band[256] = "", a[32], z[32], t[32];
        if (it->kind->needs_gpu) {
            run_estimate(it, &c, &e);
            n_runs++;
            n_learned += e.l.n > 0;
            fmt_s(e.lo_s, a, sizeof a);
            fmt_s(e.hi_s, z, sizeof z);
            if (e.l.n)
                snprintf(band, sizeof band, "%s-%s s, x%.2f from %zu run%s of %s", a, z,
                         e.l.correction, e.l.n, e.l.n == 1 ? "" : "s", e.key);
            else
                snprintf(band, sizeof band, "%s-%s s, unlearned (default %.1fx-%.0fx)", a, z,
                         1 / RUN_CALIB_UNLEARNED_BAND, RUN_CALIB_UNLEARNED_BAND);
        }
        total += e.s;
        lo += e.lo_s;
        hi += e.hi_s;
        char mem[32];
        char shown[512];
        fprintf(fp, "%s  %-10s %-12s %10s s %10s  %s\n", it->id, it->kind->name,
                rl_clean(json_string_value(json_object_get(
                             json_object_get(it->resolved, "encoding"), "name")),
                         shown, sizeof shown),
                fmt_s(e.s, t, sizeof t), rl_fmt_bytes(it->est_bytes, mem, sizeof mem), band);
    }
    fprintf(fp, "estimated device time of this shard: %.1f s (%.1f-%.1f s; %zu of %zu device "
                "runs learned)\n",
            total, lo, hi, n_learned, n_runs);
    plan_windows(b, shard, opt->shard_index, range, c.device, fp);
    run_calib_free(&c);
    free(shard);
    return RL_OK;
}
