/* run_sched.c — the scheduler: this shard's runs as jobs (one per device
 * for GPU kinds, one on the CPU worker otherwise), --resume, one thread per
 * worker with its own device, progress on stderr, and OUT/results.csv and
 * OUT/manifest.json once every worker is done. */
#include <pthread.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/rl_util.h"
#include "core/rl_fs.h"
#include "run/run_int.h"

#define MAX_THREADS 64

typedef struct sched {
    const run_batch *b;
    const run_options *opt;
    rlvk_instance inst;
    int have_inst;
    uint32_t *idx, n_dev;        /* selected physical devices */
    run_worker *workers;         /* [n_dev] GPUs, then the CPU worker if needed */
    size_t n_workers;
    run_job *jobs;
    size_t n_jobs;
    uint32_t *shard;             /* [b->n_items] each run's shard (run_shard_assign) */
    char out[1024];
    const json_t *snap;          /* opened input path -> its snapshot (run_inputs_snapshots) */
    char batch_hash[17];         /* the batch text's hash (manifest, summaries) */
    json_t *old_sums;            /* --resume: dir -> summary digest the earlier manifest recorded */
    rl_error *err;               /* plan_jobs' refusal */
    pthread_mutex_t lock;
    size_t done, total, started;
    double t0;
    int tty;
} sched;

static void now_iso(char *buf, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static const char *enc_name(const run_job *j)
{
    const char *n =
        json_string_value(json_object_get(json_object_get(j->item->resolved, "encoding"), "name"));
    return n ? n : "-";
}

/* One line per finished job: on a terminal it replaces the live line of
 * live_progress; otherwise it is the only line of the job. Called under
 * s->lock. */
static void progress(sched *s, const run_job *j)
{
    if (s->opt->quiet)
        return;
    int ok = j->status == RUN_JOB_PASSED;
    const run_timing *t = &j->timing;
    char line[1600];
    run_progress_done_line(line, sizeof line, s->done, s->total, j->item->id,
                           j->item->kind->name, enc_name(j), j->device, ok, j->reason,
                           t->wall_s, t->device_s);
    char shown[4096];
    fprintf(stderr, "%s%s\n", s->tty ? "\r\033[K" : "", rl_clean(line, shown, sizeof shown));
    fflush(stderr);
}

/* The live line of a job in flight (terminal only, at most 4 per second):
 * worker w's progress hook. */
static void live_progress(void *user, const run_job *j, const char *phase, double done,
                          double total)
{
    sched *s = user;
    if (s->opt->quiet || !s->tty)
        return;
    double now = rl_now();
    pthread_mutex_lock(&s->lock);
    run_job *jm = (run_job *)j; /* the job's own display state */
    if (now - jm->last_progress >= 0.25) {
        jm->last_progress = now;
        char line[512];
        run_progress_line(line, sizeof line, s->done + 1, s->total, j->item->id,
                          j->item->kind->name, enc_name(j), phase, done, total,
                          now - j->t_start);
        char shown[2048];
        fprintf(stderr, "\r\033[K%s", rl_clean(line, shown, sizeof shown));
        fflush(stderr);
    }
    pthread_mutex_unlock(&s->lock);
}

/* A worker's thread: its pending jobs in plan order, until --fail-after. */
static void *worker_main(void *arg)
{
    void **a = arg;
    sched *s = a[0];
    run_worker *w = a[1];
    int wi = (int)(w - s->workers);
    for (size_t i = 0; i < s->n_jobs; i++) {
        run_job *j = &s->jobs[i];
        if (j->worker != wi || j->status != RUN_JOB_PENDING)
            continue;
        pthread_mutex_lock(&s->lock);
        /* the safe point: between runs (a run in flight finishes and is
         * written whole) */
        int stop = (s->opt->fail_after && s->started >= (size_t)s->opt->fail_after) ||
                   (s->opt->stop && *s->opt->stop);
        if (!stop)
            s->started++;
        pthread_mutex_unlock(&s->lock);
        if (stop)
            break;
        run_job_env env = {.out = s->out, .base_dir = s->b->base_dir, .snap = s->snap,
                           .batch_hash = s->batch_hash};
        run_job_exec(j, w, &env);
        pthread_mutex_lock(&s->lock);
        s->done++;
        progress(s, j);
        pthread_mutex_unlock(&s->lock);
    }
    return NULL;
}

/* The Vulkan instance and the selected devices, when some run needs a GPU. */
static rl_status open_instance(sched *s, rl_error *err)
{
    rlvk_instance_desc d = {.validation = s->opt->validation, .quiet_messages = 1,
                            .persist_pipelines = !s->opt->no_pipeline_cache};
    rl_status st = rlvk_instance_create(&d, &s->inst, err);
    if (st)
        return st;
    s->have_inst = 1;
    s->idx = calloc(s->inst.n_physical + 1, sizeof *s->idx);
    if (!s->idx)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    return rlvk_select(&s->inst, s->opt->device ? s->opt->device : s->b->device, s->idx,
                       &s->n_dev, err);
}

/* Workers (the selected GPUs, then a CPU worker when some run needs none)
 * and room for the jobs. */
static rl_status make_workers(sched *s, int need_cpu, rl_error *err)
{
    s->n_workers = s->n_dev + (size_t)need_cpu;
    s->workers = calloc(s->n_workers + 1, sizeof *s->workers);
    s->jobs = calloc(s->b->n_items * (s->n_dev + 1) + 1, sizeof *s->jobs);
    if (!s->workers || !s->jobs)
        return rl_fail(err, RL_ERR_NOMEM, "out of host memory");
    for (uint32_t k = 0; k < s->n_dev; k++) {
        run_worker *w = &s->workers[k];
        w->gpu = 1;
        w->index = s->idx[k];
        w->progress = live_progress;
        w->progress_user = s;
        rlvk_device_info info;
        if (rlvk_device_info_query(&s->inst, s->idx[k], &info, NULL) == RL_OK) {
            snprintf(w->name, sizeof w->name, "%s", info.name);
            snprintf(w->driver, sizeof w->driver, "%s %s", info.driver_name, info.driver_info);
            w->api_version = info.api_version;
            w->info = info;
            w->has_info = 1;
        }
    }
    if (need_cpu) {
        snprintf(s->workers[s->n_dev].name, sizeof s->workers[s->n_dev].name, "cpu");
        s->workers[s->n_dev].progress = live_progress;
        s->workers[s->n_dev].progress_user = s;
    }
    return RL_OK;
}

/* --resume: {dir: summary digest} from the jobs the existing manifest.json
 * records (none when it is the one written before a killed batch's first
 * run: then identity and tables are what is checked). */
static json_t *old_summaries(const char *out)
{
    char path[1300];
    snprintf(path, sizeof path, "%s/manifest.json", out);
    json_t *man = rl_fs_load_json(out, path, RL_FS_MAX_MANIFEST, NULL), *m = json_object();
    size_t i;
    json_t *jb;
    json_array_foreach(json_object_get(man, "jobs"), i, jb) {
        const char *d = json_string_value(json_object_get(jb, "dir"));
        json_t *sd = json_object_get(jb, "summary");
        if (d && json_is_string(sd))
            json_object_set(m, d, sd);
    }
    json_decref(man);
    return m;
}

/* Did an earlier run of job j pass (its summary.json says so), does its
 * directory provably hold run j (run id, plan hash: run_summary_identity),
 * is its summary.json the one the earlier manifest recorded (size and
 * checksum), and are its tables all there as recorded? A directory holding
 * another run, or an edited summary, is refused (RL_ERR_ARG naming it); a
 * run whose tables do not verify is run again, and the reason is said.
 * Returns 1 complete, 0 to run, -1 refused. */
static int already_passed(const sched *s, run_job *j, const char *dir, rl_error *err)
{
    char path[1400], why[1600];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    json_t *sum = rl_fs_load_json(s->out, path, RL_FS_MAX_SUMMARY, NULL);
    const char *st = json_string_value(json_object_get(sum, "status"));
    int passed = st && !strcmp(st, "passed");
    if (passed && !run_summary_identity(sum, j->item->id, NULL, why, sizeof why)) {
        rl_fail(err, RL_ERR_ARG, "--resume: %s does not hold run %s: %s; remove that directory "
                "to run it again", dir, j->item->id, why);
        json_decref(sum);
        return -1;
    }
    char now[48] = "";
    if (passed)
        run_file_digest(s->out, path, now, sizeof now);
    const char *was = json_string_value(json_object_get(s->old_sums, j->dir));
    if (passed && was && strcmp(was, now)) {
        rl_fail(err, RL_ERR_ARG, "--resume: %s changed after its run: manifest.json recorded it "
                "as %s (bytes:fnv1a64), it is now %s; remove %s to run it again", path, was,
                now[0] ? now : "unreadable", dir);
        json_decref(sum);
        return -1;
    }
    if (passed && !run_files_verify(dir, sum, why, sizeof why)) {
        passed = 0;
        if (!s->opt->quiet)
            fprintf(stderr, "ropelab: resume: running again: %s\n",
                    rl_clean(why, (char[2048]){0}, 2048));
    }
    if (passed)
        snprintf(j->summary_digest, sizeof j->summary_digest, "%s", now);
    json_decref(sum);
    return passed;
}

/* This shard's runs as jobs; with --resume, those that already passed are
 * marked complete (counted in out->skipped). RL_ERR_ARG when a run
 * directory does not hold its run (already_passed). */
static rl_status plan_jobs(sched *s, run_outcome *out, rl_error *err)
{
    const run_batch *b = s->b;
    const run_options *opt = s->opt;
    for (size_t i = 0; i < b->n_items; i++) {
        const run_item *it = &b->items[i];
        if (s->shard[i] != opt->shard_index)
            continue;
        uint32_t nd = it->kind->needs_gpu ? s->n_dev : 1;
        for (uint32_t k = 0; k < nd; k++) {
            run_job *j = &s->jobs[s->n_jobs++];
            j->item = it;
            j->worker = it->kind->needs_gpu ? (int)k : (int)s->n_dev;
            snprintf(j->device, sizeof j->device, "%s", s->workers[j->worker].name);
            if (it->kind->needs_gpu && s->n_dev > 1)
                snprintf(j->dir, sizeof j->dir, "%s-d%u", it->id, s->idx[k]);
            else
                snprintf(j->dir, sizeof j->dir, "%s", it->id);
            char path[1300];
            snprintf(path, sizeof path, "%s/runs/%s", s->out, j->dir);
            int done = opt->resume ? already_passed(s, j, path, err) : 0;
            if (done < 0)
                return err ? err->status : RL_ERR_ARG;
            if (done) {
                j->status = RUN_JOB_COMPLETE;
                out->skipped++;
            }
        }
    }
    out->jobs = s->n_jobs;
    s->total = s->n_jobs - out->skipped;
    return RL_OK;
}

/* Opens the device of every worker with pending jobs, runs one thread per
 * such worker (inline if no thread can be made) and waits for all. */
static void run_workers(sched *s)
{
    void *args[MAX_THREADS][2];
    for (size_t k = 0; k < s->n_workers && k < MAX_THREADS; k++) {
        run_worker *w = &s->workers[k];
        int pending = 0;
        for (size_t i = 0; i < s->n_jobs; i++)
            pending |= s->jobs[i].worker == (int)k && s->jobs[i].status == RUN_JOB_PENDING;
        if (!pending)
            continue;
        if (w->gpu) {
            rl_error derr = {0};
            w->dev_ok = rlvk_device_create(&s->inst, w->index, &w->dev, &derr) == RL_OK;
            w->attn_ok = w->dev_ok && attn_engine_create(&w->dev, &w->attn, &derr) == RL_OK;
            rl_error cerr = {0}; /* without yardsticks the summaries carry no estimate */
            if (w->dev_ok && run_calib_get(&w->dev, &w->calib, &cerr))
                w->calib.ok = 0;
            if (!w->dev_ok)
                for (size_t i = 0; i < s->n_jobs; i++)
                    if (s->jobs[i].worker == (int)k)
                        snprintf(s->jobs[i].reason, sizeof s->jobs[i].reason, "%s", derr.msg);
        }
        args[k][0] = s;
        args[k][1] = w;
        if (pthread_create(&w->thread, NULL, worker_main, args[k]) != 0) {
            worker_main(args[k]); /* run inline rather than not at all */
            w->thread = 0;
        }
    }
    for (size_t k = 0; k < s->n_workers && k < MAX_THREADS; k++) {
        run_worker *w = &s->workers[k];
        if (w->thread)
            pthread_join(w->thread, NULL);
        if (w->attn_ok)
            attn_engine_destroy(&w->attn);
        if (w->dev_ok)
            rlvk_device_destroy(&w->dev);
        run_calib_free(&w->calib);
    }
}

/* manifest.json's record of job j; a resumed job takes its times from the
 * earlier run's summary. */
static json_t *job_json(const sched *s, const run_job *j)
{
    const char *status = j->status == RUN_JOB_PASSED   ? "passed"
                         : j->status == RUN_JOB_FAILED ? "failed"
                         : j->status == RUN_JOB_COMPLETE ? "complete (resumed)"
                                                         : "not run";
    json_t *jj = json_pack("{s:s,s:s,s:s,s:s,s:f}", "run_id", j->item->id, "dir", j->dir,
                           "device", j->device, "status", status, "wall_s", j->wall_s);
    if (j->status == RUN_JOB_FAILED)
        json_object_set_new(jj, "reason", json_string(j->reason));
    if (j->summary_digest[0])
        json_object_set_new(jj, "summary", json_string(j->summary_digest));
    if (j->status != RUN_JOB_COMPLETE && j->gpu_ms >= 0)
        json_object_set_new(jj, "gpu_ms", json_real(j->gpu_ms));
    if (j->status == RUN_JOB_COMPLETE) {
        char path[1300];
        snprintf(path, sizeof path, "%s/runs/%s/summary.json", s->out, j->dir);
        json_t *sum = rl_fs_load_json(s->out, path, RL_FS_MAX_SUMMARY, NULL);
        json_object_set(jj, "wall_s", json_object_get(sum, "wall_s"));
        json_t *g = json_object_get(json_object_get(sum, "metrics"), "gpu_ms");
        if (json_is_number(g))
            json_object_set(jj, "gpu_ms", g);
        json_decref(sum);
    }
    return jj;
}

/* Counts the outcome; dirs receives the run directories that exist (for
 * results.csv), jobs_j every job's record. */
static void collect_jobs(const sched *s, run_outcome *out, json_t *dirs, json_t *jobs_j)
{
    for (size_t i = 0; i < s->n_jobs; i++) {
        const run_job *j = &s->jobs[i];
        if (j->status == RUN_JOB_PASSED)
            out->passed++;
        else if (j->status == RUN_JOB_FAILED)
            out->failed++;
        else if (j->status == RUN_JOB_PENDING)
            out->interrupted = 1, out->pending++;
        if (j->status != RUN_JOB_PENDING) {
            char path[1300];
            snprintf(path, sizeof path, "%s/runs/%s", s->out, j->dir);
            json_array_append_new(dirs, json_string(path));
        }
        json_array_append_new(jobs_j, job_json(s, j));
    }
}

static json_t *devices_json(const sched *s)
{
    json_t *a = json_array();
    for (size_t i = 0; i < s->n_workers; i++) {
        const run_worker *w = &s->workers[i];
        char api[32];
        snprintf(api, sizeof api, "%u.%u.%u", VK_API_VERSION_MAJOR(w->api_version),
                 VK_API_VERSION_MINOR(w->api_version), VK_API_VERSION_PATCH(w->api_version));
        json_t *d = w->gpu ? json_pack("{s:i,s:s,s:s,s:s}", "index", (int)w->index, "name",
                                       w->name, "driver", w->driver, "api_version", api)
                           : json_pack("{s:s}", "name", "cpu");
        if (w->gpu && w->has_info) { /* UUID, driver version decoded, driverID, ... */
            json_t *id = run_device_identity_json(&w->info);
            json_object_update(d, id);
            json_decref(id);
        }
        if (w->gpu && w->dev_ok) {
            /* what the persisted pipeline cache did (rlvk_pcache_info) */
            const rlvk_pcache_info *pc = &w->dev.pcache;
            json_object_set_new(d, "pipeline_cache",
                                json_pack("{s:s,s:s,s:I,s:I,s:f,s:f}", "file", pc->path,
                                          "status", pc->status, "loaded_bytes",
                                          (json_int_t)pc->loaded_bytes, "saved_bytes",
                                          (json_int_t)pc->saved_bytes, "load_s", pc->load_s,
                                          "save_s", pc->save_s));
        }
        json_array_append_new(a, d);
    }
    return a;
}

/* How the batch was run: argv, version, commit, host. */
static void add_invocation(json_t *man, const run_options *opt)
{
    json_t *argv = json_array();
    for (int i = 0; opt->argv && i < opt->argc; i++)
        json_array_append_new(argv, json_string(opt->argv[i]));
    char host[256];
    run_host_name(host, sizeof host);
    json_object_set_new(man, "argv", argv);
    json_object_set_new(man, "ropelab_version",
                        json_string(opt->version ? opt->version : RUN_VERSION));
    json_object_set_new(man, "ropelab_commit", json_string(opt->commit ? opt->commit : ""));
    json_object_set_new(man, "host", json_string(host));
}

/* OUT/manifest.json (takes jobs_j and inputs_j). Not final: the one
 * written before the first run starts, recording the inputs' hashes (so a
 * --resume after a SIGKILL knows which bytes the finished runs were made
 * from) and claiming no run ("complete": false, no jobs). */
static rl_status write_manifest(sched *s, run_outcome *out, json_t *jobs_j, json_t *inputs_j,
                                const char *started, int final, rl_error *err)
{
    const run_batch *b = s->b;
    const run_options *opt = s->opt;
    char finished[32], h[17], path[1300];
    now_iso(finished, sizeof finished);
    json_t *man = json_pack("{s:s,s:{s:s,s:s,s:s},s:{s:i,s:i},s:O,s:o,s:o,s:o,s:s,s:s,s:b}",
                            "ropelab_version", RUN_VERSION, "batch", "file", b->file, "text",
                            b->text, "hash", "", "shard", "index", (int)opt->shard_index,
                            "count", (int)(opt->shard_count ? opt->shard_count : 1),
                            "swept_keys", b->swept_keys, "plan", run_plan_json(b), "devices",
                            devices_json(s), "jobs", jobs_j, "started", started, "finished",
                            finished, "complete", final && !out->interrupted);
    if (!final)
        json_object_set_new(man, "state", json_string("running"));
    /* the process's peak resident memory so far (getrusage ru_maxrss, KiB
     * on Linux): what a batch of many shapes is bounded by (docs/runner.md) */
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        json_object_set_new(man, "host_peak_rss_bytes",
                            json_integer((json_int_t)ru.ru_maxrss * 1024));
    add_invocation(man, opt);
    json_object_set_new(man, "inputs", inputs_j ? inputs_j : json_array());
    snprintf(h, sizeof h, "%016llx", (unsigned long long)b->text_hash);
    json_object_set_new(json_object_get(man, "batch"), "hash", json_string(h));
    /* validation-layer messages (counted quietly) are part of the record */
    out->validation_messages = s->have_inst ? rlvk_instance_messages(&s->inst) : 0;
    json_object_set_new(man, "validation_layer", json_boolean(s->have_inst && s->inst.validation));
    json_object_set_new(man, "validation_messages",
                        json_integer((json_int_t)out->validation_messages));
    if (out->validation_messages && s->have_inst)
        json_object_set_new(man, "first_validation_message", json_string(s->inst.first_message));
    snprintf(path, sizeof path, "%s/manifest.json", s->out);
    rl_status st = run_write_json(s->out, path, man, err);
    json_decref(man);
    return st;
}

rl_status run_batch_execute(const run_batch *b, const run_options *opt, run_outcome *out,
                            rl_error *err)
{
    memset(out, 0, sizeof *out);
    if (strlen(opt->out) > RUN_MAX_OUT_PATH)
        return rl_fail(err, RL_ERR_LIMIT, "--out: the path is %zu bytes; ropelab takes at most %d "
                       "(RUN_MAX_OUT_PATH, leaving room for the files below it)",
                       strlen(opt->out), RUN_MAX_OUT_PATH);
    sched s = {.b = b, .opt = opt, .t0 = rl_now(), .tty = isatty(2)};
    snprintf(s.out, sizeof s.out, "%s", opt->out);
    char started[32], path[1300];
    now_iso(started, sizeof started);
    int need_gpu = 0, need_cpu = 0;
    json_t *dirs = json_array(), *jobs_j = json_array(), *inputs_j = NULL, *snap = NULL;
    pthread_mutex_init(&s.lock, NULL);
    rl_status st;
    int lock = -1;
    /* the partition is computed once, from the plan alone: every task of an
     * array computes the same one */
    s.shard = malloc((b->n_items ? b->n_items : 1) * sizeof *s.shard);
    if (!s.shard) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of memory (%zu runs)", b->n_items);
        goto done;
    }
    if ((st = run_shard_assign(b, opt->shard_count, s.shard, err)))
        goto done;
    for (size_t i = 0; i < b->n_items; i++)
        if (s.shard[i] == opt->shard_index) {
            need_gpu |= b->items[i].kind->needs_gpu;
            need_cpu |= !b->items[i].kind->needs_gpu;
        }
    snprintf(path, sizeof path, "%s/runs", s.out);
    /* one process per output directory; what a killed one left half
     * written is removed under the lock */
    if ((st = run_mkdir_p(s.out, err)) || (st = rl_fs_lock(s.out, &lock, err)))
        goto done;
    /* a received OUT may hold planted links: refused before any work (and
     * every operation below reaches its file without following one) */
    if ((st = rl_fs_no_links(s.out, 3, err)) || (st = run_clean_stale(s.out, err)))
        goto done;
    /* every input hashed and copied before any run (and, resuming, checked
     * against the hashes the complete runs were made from) */
    snprintf(s.batch_hash, sizeof s.batch_hash, "%016llx", (unsigned long long)b->text_hash);
    if (opt->resume)
        s.old_sums = old_summaries(s.out);
    if ((st = run_inputs_record(b, s.out, opt->resume, &inputs_j, err)))
        goto done;
    snap = run_inputs_snapshots(b, inputs_j, s.out);
    s.snap = snap;
    if ((st = write_manifest(&s, out, json_array(), json_deep_copy(inputs_j), started, 0, err)))
        goto done;
    if ((st = rl_fs_mkdirs(s.out, path, err)) || (need_gpu && (st = open_instance(&s, err))) ||
        (st = make_workers(&s, need_cpu, err)))
        goto done;
    if ((st = plan_jobs(&s, out, err)))
        goto done;
    run_workers(&s);
    collect_jobs(&s, out, dirs, jobs_j);
    if ((st = run_results_write(s.out, b->swept_keys, dirs, err)))
        goto done;
    st = write_manifest(&s, out, jobs_j, inputs_j, started, 1, err);
    jobs_j = inputs_j = NULL;
done:
    rl_fs_unlock(lock);
    json_decref(dirs);
    json_decref(jobs_j);
    json_decref(inputs_j);
    json_decref(snap);
    json_decref(s.old_sums);
    free(s.jobs);
    free(s.shard);
    free(s.workers);
    free(s.idx);
    if (s.have_inst)
        rlvk_instance_destroy(&s.inst);
    pthread_mutex_destroy(&s.lock);
    return st;
}
