/* run_exec.c — scheduler over devices, atomic run directories, resume,
 * results.csv and manifest.json, plan printing and merge. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/rl_util.h"
#include "run/run_int.h"

#define RL_VERSION "0.1.0"

typedef struct job {
    const run_item *item;
    int worker;                  /* index into workers */
    char dir[64];                /* directory name under runs/ */
    char device[256];
    int status;                  /* 0 pending, 1 passed, 2 failed, 3 skipped (complete) */
    char reason[1024];
    double wall_s;
    double gpu_ms;               /* the kind's "gpu_ms" metric, or -1 */
} job;

typedef struct worker {
    int gpu;
    uint32_t index;              /* physical device index */
    rlvk_device dev;
    int dev_ok;
    attn_engine attn;            /* shared by the worker's runs (exp_ctx.attn) */
    int attn_ok;
    char name[256];
    char driver[600];
    uint32_t api_version;
    pthread_t thread;
} worker;

typedef struct sched {
    const run_batch *b;
    const run_options *opt;
    rlvk_instance *inst;
    worker *workers;
    size_t n_workers;
    job *jobs;
    size_t n_jobs;
    char out[1024];
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

static rl_status mkdir_p(const char *path, rl_error *err)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return rl_fail(err, RL_ERR_IO, "%s: cannot create: %s", buf, strerror(errno));
            *p = '/';
        }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return rl_fail(err, RL_ERR_IO, "%s: cannot create: %s", buf, strerror(errno));
    return RL_OK;
}

/* Removes a run directory (its files are one level deep). */
static void rm_run_dir(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    char p[1400];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        remove(p);
    }
    closedir(d);
    rmdir(path);
}

static json_t *load_json(const char *path)
{
    return json_load_file(path, 0, NULL);
}

/* ---- progress ------------------------------------------------------------- */

static void progress(sched *s, const job *j)
{
    if (s->opt->quiet)
        return;
    double el = rl_now() - s->t0;
    double eta = s->done ? el / (double)s->done * (double)(s->total - s->done) : 0;
    if (s->tty) {
        char bar[31];
        size_t fill = s->total ? s->done * 30 / s->total : 30;
        for (size_t i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = '\0';
        fprintf(stderr, "\r[%s] %zu/%zu  %s %-10s ETA %4.0fs ", bar, s->done, s->total,
                j->item->id, j->item->kind->name, eta);
        if (s->done == s->total)
            fputc('\n', stderr);
    } else {
        fprintf(stderr, "run %zu/%zu %s %s %s on %s: %s%s%s (%.2f s)\n", s->done, s->total,
                j->item->id, j->item->kind->name,
                json_string_value(json_object_get(json_object_get(j->item->resolved, "encoding"),
                                                  "name")),
                j->device, j->status == 1 ? "passed" : "FAILED", j->status == 1 ? "" : ": ",
                j->status == 1 ? "" : j->reason, j->wall_s);
    }
    fflush(stderr);
}

/* ---- one job ---------------------------------------------------------------- */

static rl_status write_summary(const char *path, json_t *sum, rl_error *err)
{
    rl_atomic_file af;
    rl_status st = rl_atomic_open(&af, path, err);
    if (st)
        return st;
    if (json_dumpf(sum, af.fp, JSON_INDENT(2) | JSON_SORT_KEYS) != 0) {
        rl_atomic_abort(&af);
        return rl_fail(err, RL_ERR_IO, "%s: write failed", path);
    }
    fputc('\n', af.fp);
    return rl_atomic_commit(&af, err);
}

static void run_job(sched *s, worker *w, job *j)
{
    double t0 = rl_now();
    char final[1200], tmp[1300], sum_path[1400];
    snprintf(final, sizeof final, "%s/runs/%s", s->out, j->dir);
    snprintf(tmp, sizeof tmp, "%s/runs/.tmp-%s", s->out, j->dir);
    rm_run_dir(tmp);
    rl_error err = {0};
    rl_status st = mkdir_p(tmp, &err);
    exp_sink sink = {0};
    int sink_ok = 0;
    if (!st && !(st = exp_sink_init(&sink, tmp, &err)))
        sink_ok = 1;
    if (!st && w->gpu && !w->dev_ok)
        st = rl_fail(&err, RL_ERR_NO_DEVICE, "device %u could not be opened: %s", w->index,
                     j->reason);
    if (!st) {
        exp_run r;
        run_item_to_exp(j->item, &r);
        run_data rd = {.desc = json_object_get(j->item->resolved, "data"), .model = r.model};
        snprintf(rd.base_dir, sizeof rd.base_dir, "%s", s->b->base_dir);
        if (j->item->kind->uses_data) {
            r.data = run_data_fill;
            r.data_user = &rd;
        }
        exp_ctx cx = {.dev = w->gpu ? &w->dev : NULL, .attn = w->attn_ok ? &w->attn : NULL};
        st = j->item->kind->run(&r, &cx, &sink, &err);
        if (!st)
            st = exp_sink_end_table(&sink, &err);
        else
            exp_sink_end_table(&sink, NULL);
    }
    j->wall_s = rl_now() - t0;
    j->status = st ? 2 : 1;
    snprintf(j->reason, sizeof j->reason, "%s", st ? err.msg : "");
    json_t *sum = json_pack("{s:s,s:s,s:s,s:s,s:s,s:O,s:O,s:f}", "run_id", j->item->id, "dir",
                            j->dir, "kind", j->item->kind->name, "device", j->device, "status",
                            st ? "failed" : "passed", "resolved", j->item->resolved, "swept",
                            j->item->swept, "wall_s", j->wall_s);
    if (st)
        json_object_set_new(sum, "reason", json_string(err.msg));
    j->gpu_ms = -1;
    if (sink_ok && json_is_number(json_object_get(sink.metrics, "gpu_ms")))
        j->gpu_ms = json_number_value(json_object_get(sink.metrics, "gpu_ms"));
    if (sink_ok) {
        json_object_set(sum, "metrics", sink.metrics);
        json_object_set(sum, "verification", sink.verification);
        json_object_set(sum, "tables", sink.tables);
        exp_sink_free(&sink);
    }
    rl_error werr = {0};
    snprintf(sum_path, sizeof sum_path, "%s/summary.json", tmp);
    rl_status ws = write_summary(sum_path, sum, &werr);
    json_decref(sum);
    if (!ws) {
        rm_run_dir(final);
        if (rename(tmp, final) != 0)
            ws = rl_fail(&werr, RL_ERR_IO, "%s: cannot rename into place: %s", final,
                         strerror(errno));
    }
    if (ws) {
        j->status = 2;
        snprintf(j->reason, sizeof j->reason, "%s", werr.msg);
    }
}

static void *worker_main(void *arg)
{
    void **a = arg;
    sched *s = a[0];
    worker *w = a[1];
    int wi = (int)(w - s->workers);
    for (size_t i = 0; i < s->n_jobs; i++) {
        job *j = &s->jobs[i];
        if (j->worker != wi || j->status != 0)
            continue;
        pthread_mutex_lock(&s->lock);
        int stop = s->opt->fail_after && s->started >= (size_t)s->opt->fail_after;
        if (!stop)
            s->started++;
        pthread_mutex_unlock(&s->lock);
        if (stop)
            break;
        run_job(s, w, j);
        pthread_mutex_lock(&s->lock);
        s->done++;
        progress(s, j);
        pthread_mutex_unlock(&s->lock);
    }
    return NULL;
}

/* ---- results.csv ------------------------------------------------------------ */

static void csv_field(FILE *fp, const char *s)
{
    if (strpbrk(s, ",\"\n\r")) {
        fputc('"', fp);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', fp);
            fputc(*s, fp);
        }
        fputc('"', fp);
    } else {
        fputs(s, fp);
    }
}

static void json_text(const json_t *v, char *buf, size_t cap)
{
    if (!v)
        buf[0] = '\0';
    else if (json_is_string(v))
        snprintf(buf, cap, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, cap, "%.17g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, cap, "%s", json_is_true(v) ? "true" : "false");
    else
        buf[0] = '\0';
}

static void row_prefix(FILE *fp, const json_t *sum, const json_t *keys)
{
    char buf[512];
    csv_field(fp, json_string_value(json_object_get(sum, "run_id")));
    fputc(',', fp);
    csv_field(fp, json_string_value(json_object_get(sum, "device")));
    fputc(',', fp);
    csv_field(fp, json_string_value(json_object_get(sum, "kind")));
    fputc(',', fp);
    const json_t *res = json_object_get(sum, "resolved");
    csv_field(fp, json_string_value(json_object_get(json_object_get(res, "encoding"), "name")));
    fputc(',', fp);
    csv_field(fp, json_string_value(json_object_get(sum, "status")));
    const json_t *sw = json_object_get(sum, "swept");
    for (size_t k = 0; k < json_array_size(keys); k++) {
        json_text(json_object_get(sw, json_string_value(json_array_get(keys, k))), buf,
                  sizeof buf);
        fputc(',', fp);
        csv_field(fp, buf);
    }
}

/* Appends the long-format rows of one run directory. */
static void results_rows(FILE *fp, const char *run_dir, const json_t *sum, const json_t *keys)
{
    const char *mk;
    json_t *mv;
    char buf[64];
    json_object_foreach(json_object_get(sum, "metrics"), mk, mv) {
        row_prefix(fp, sum, keys);
        json_text(mv, buf, sizeof buf);
        fprintf(fp, ",%s,,%s,,\n", mk, buf[0] ? buf : "nan");
    }
    const json_t *tables = json_object_get(sum, "tables");
    for (size_t t = 0; t < json_array_size(tables); t++) {
        const char *tn = json_string_value(json_object_get(json_array_get(tables, t), "name"));
        char path[1400];
        snprintf(path, sizeof path, "%s/%s.csv", run_dir, tn);
        FILE *in = fopen(path, "r");
        if (!in)
            continue;
        char line[4096], cols[EXP_MAX_COLS][64];
        size_t nc = 0;
        if (fgets(line, sizeof line, in)) {
            line[strcspn(line, "\r\n")] = '\0';
            for (char *tok = strtok(line, ","); tok && nc < EXP_MAX_COLS; tok = strtok(NULL, ","))
                snprintf(cols[nc++], sizeof cols[0], "%s", tok);
        }
        while (fgets(line, sizeof line, in)) {
            line[strcspn(line, "\r\n")] = '\0';
            char *vals[EXP_MAX_COLS];
            size_t nv = 0;
            for (char *tok = strtok(line, ","); tok && nv < EXP_MAX_COLS; tok = strtok(NULL, ","))
                vals[nv++] = tok;
            for (size_t c = 1; c < nv && c < nc; c++) {
                row_prefix(fp, sum, keys);
                /* x_label / y_label: the table's x column and this column,
                 * for plot axes. */
                fprintf(fp, ",%s.%s,%s,%s,", tn, cols[c], vals[0], vals[c]);
                csv_field(fp, cols[0]);
                fputc(',', fp);
                csv_field(fp, cols[c]);
                fputc('\n', fp);
            }
        }
        fclose(in);
    }
}

/* Writes out/results.csv over the run directories listed in dirs (paths). */
static rl_status write_results(const char *out, const json_t *keys, const json_t *dirs,
                               rl_error *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/results.csv", out);
    rl_atomic_file af;
    rl_status st = rl_atomic_open(&af, path, err);
    if (st)
        return st;
    fputs("run_id,device,kind,encoding,status", af.fp);
    for (size_t k = 0; k < json_array_size(keys); k++) {
        fputc(',', af.fp);
        csv_field(af.fp, json_string_value(json_array_get(keys, k)));
    }
    fputs(",metric,x,value,x_label,y_label\n", af.fp);
    for (size_t i = 0; i < json_array_size(dirs); i++) {
        const char *d = json_string_value(json_array_get(dirs, i));
        char sp[1300];
        snprintf(sp, sizeof sp, "%s/summary.json", d);
        json_t *sum = load_json(sp);
        if (sum)
            results_rows(af.fp, d, sum, keys);
        json_decref(sum);
    }
    return rl_atomic_commit(&af, err);
}

/* ---- plan ---------------------------------------------------------------------- */

static json_t *plan_json(const run_batch *b)
{
    json_t *plan = json_array();
    for (size_t i = 0; i < b->n_items; i++) {
        const run_item *it = &b->items[i];
        json_array_append_new(plan, json_pack("{s:s,s:s,s:O,s:O,s:I}", "id", it->id, "kind",
                                              it->kind->name, "swept", it->swept, "resolved",
                                              it->resolved, "estimated_bytes",
                                              (json_int_t)it->est_bytes));
    }
    return plan;
}

void run_plan_print(const run_batch *b, uint32_t si, uint32_t sn, FILE *fp)
{
    char mem[32];
    size_t n = 0;
    uint64_t maxb = 0;
    fprintf(fp, "batch '%s' (%s): %zu run(s)", b->name, b->file, b->n_items);
    if (b->n_duplicates)
        fprintf(fp, ", %zu duplicate point(s) merged", b->n_duplicates);
    if (sn > 1)
        fprintf(fp, "; shard %u/%u", si, sn);
    fprintf(fp, "\n%-16s  %-10s %-12s %10s  %s\n", "run id", "kind", "encoding", "memory",
            "parameters");
    for (size_t i = 0; i < b->n_items; i++) {
        const run_item *it = &b->items[i];
        if (!run_in_shard(it, si, sn))
            continue;
        n++;
        if (it->est_bytes > maxb)
            maxb = it->est_bytes;
        const json_t *res = it->resolved;
        const json_t *m = json_object_get(res, "model");
        fprintf(fp, "%s  %-10s %-12s %10s  head_dim=%lld heads=%lld", it->id, it->kind->name,
                json_string_value(json_object_get(json_object_get(res, "encoding"), "name")),
                rl_fmt_bytes(it->est_bytes, mem, sizeof mem),
                (long long)json_integer_value(json_object_get(m, "head_dim")),
                (long long)json_integer_value(json_object_get(m, "heads")));
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(res, "params"), k, v) {
            char buf[128];
            json_text(v, buf, sizeof buf);
            fprintf(fp, " %s=%s", k, buf);
        }
        json_object_foreach(it->swept, k, v) {
            if (!strncmp(k, "params.", 7))
                continue;
            char buf[128];
            json_text(v, buf, sizeof buf);
            fprintf(fp, " %s=%s", k, buf);
        }
        fputc('\n', fp);
    }
    fprintf(fp, "%zu run(s) in this shard; largest memory estimate per run %s\n", n,
            rl_fmt_bytes(maxb, mem, sizeof mem));
}

/* ---- execute ------------------------------------------------------------------- */

static json_t *devices_json(const sched *s)
{
    json_t *a = json_array();
    for (size_t i = 0; i < s->n_workers; i++) {
        const worker *w = &s->workers[i];
        char api[32];
        snprintf(api, sizeof api, "%u.%u.%u", VK_API_VERSION_MAJOR(w->api_version),
                 VK_API_VERSION_MINOR(w->api_version), VK_API_VERSION_PATCH(w->api_version));
        json_array_append_new(a, w->gpu ? json_pack("{s:i,s:s,s:s,s:s}", "index", (int)w->index,
                                                    "name", w->name, "driver", w->driver,
                                                    "api_version", api)
                                        : json_pack("{s:s}", "name", "cpu"));
    }
    return a;
}

rl_status run_batch_execute(const run_batch *b, const run_options *opt, run_outcome *out,
                            rl_error *err)
{
    memset(out, 0, sizeof *out);
    sched s = {.b = b, .opt = opt, .t0 = rl_now(), .tty = isatty(2)};
    snprintf(s.out, sizeof s.out, "%s", opt->out);
    char started[32], finished[32], path[1300];
    now_iso(started, sizeof started);
    rl_status st = RL_OK;
    rlvk_instance inst = {0};
    int have_inst = 0, need_gpu = 0, need_cpu = 0;
    uint32_t *idx = NULL, n_dev = 0;
    json_t *dirs = json_array(), *jobs_j = json_array();
    pthread_mutex_init(&s.lock, NULL);
    for (size_t i = 0; i < b->n_items; i++)
        if (run_in_shard(&b->items[i], opt->shard_index, opt->shard_count)) {
            need_gpu |= b->items[i].kind->needs_gpu;
            need_cpu |= !b->items[i].kind->needs_gpu;
        }
    if ((st = mkdir_p(s.out, err)))
        goto done;
    snprintf(path, sizeof path, "%s/runs", s.out);
    if ((st = mkdir_p(path, err)))
        goto done;
    if (need_gpu) {
        rlvk_instance_desc d = {.validation = opt->validation, .quiet_messages = 1};
        if ((st = rlvk_instance_create(&d, &inst, err)))
            goto done;
        have_inst = 1;
        idx = calloc(inst.n_physical + 1, sizeof *idx);
        if (!idx) {
            st = rl_fail(err, RL_ERR_NOMEM, "out of host memory");
            goto done;
        }
        if ((st = rlvk_select(&inst, opt->device ? opt->device : b->device, idx, &n_dev, err)))
            goto done;
    }
    s.n_workers = n_dev + (size_t)need_cpu;
    s.workers = calloc(s.n_workers + 1, sizeof *s.workers);
    s.jobs = calloc(b->n_items * (n_dev + 1) + 1, sizeof *s.jobs);
    if (!s.workers || !s.jobs) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory");
        goto done;
    }
    for (uint32_t k = 0; k < n_dev; k++) {
        worker *w = &s.workers[k];
        w->gpu = 1;
        w->index = idx[k];
        rlvk_device_info info;
        if (rlvk_device_info_query(&inst, idx[k], &info, NULL) == RL_OK) {
            snprintf(w->name, sizeof w->name, "%s", info.name);
            snprintf(w->driver, sizeof w->driver, "%s %s", info.driver_name, info.driver_info);
            w->api_version = info.api_version;
        }
    }
    if (need_cpu)
        snprintf(s.workers[n_dev].name, sizeof s.workers[n_dev].name, "cpu");
    for (size_t i = 0; i < b->n_items; i++) {
        const run_item *it = &b->items[i];
        if (!run_in_shard(it, opt->shard_index, opt->shard_count))
            continue;
        uint32_t nd = it->kind->needs_gpu ? n_dev : 1;
        for (uint32_t k = 0; k < nd; k++) {
            job *j = &s.jobs[s.n_jobs++];
            j->item = it;
            j->worker = it->kind->needs_gpu ? (int)k : (int)n_dev;
            snprintf(j->device, sizeof j->device, "%s", s.workers[j->worker].name);
            if (it->kind->needs_gpu && n_dev > 1)
                snprintf(j->dir, sizeof j->dir, "%s-d%u", it->id, idx[k]);
            else
                snprintf(j->dir, sizeof j->dir, "%s", it->id);
            snprintf(path, sizeof path, "%s/runs/%s/summary.json", s.out, j->dir);
            if (opt->resume) {
                json_t *sum = load_json(path);
                if (sum && !strcmp(json_string_value(json_object_get(sum, "status")) ?
                                   json_string_value(json_object_get(sum, "status")) : "",
                                   "passed")) {
                    j->status = 3;
                    out->skipped++;
                }
                json_decref(sum);
            }
        }
    }
    out->jobs = s.n_jobs;
    s.total = s.n_jobs - out->skipped;
    /* open devices (only those with pending jobs) and start one thread each */
    void *args[64][2];
    size_t n_threads = 0;
    for (size_t k = 0; k < s.n_workers && k < 64; k++) {
        worker *w = &s.workers[k];
        int pending = 0;
        for (size_t i = 0; i < s.n_jobs; i++)
            pending |= s.jobs[i].worker == (int)k && s.jobs[i].status == 0;
        if (!pending)
            continue;
        if (w->gpu) {
            rl_error derr = {0};
            w->dev_ok = rlvk_device_create(&inst, w->index, &w->dev, &derr) == RL_OK;
            w->attn_ok = w->dev_ok && attn_engine_create(&w->dev, &w->attn, &derr) == RL_OK;
            if (!w->dev_ok)
                for (size_t i = 0; i < s.n_jobs; i++)
                    if (s.jobs[i].worker == (int)k)
                        snprintf(s.jobs[i].reason, sizeof s.jobs[i].reason, "%s", derr.msg);
        }
        args[k][0] = &s;
        args[k][1] = w;
        if (pthread_create(&w->thread, NULL, worker_main, args[k]) != 0) {
            worker_main(args[k]); /* run inline rather than not at all */
            w->thread = 0;
        } else {
            n_threads++;
        }
    }
    for (size_t k = 0; k < s.n_workers && k < 64; k++) {
        worker *w = &s.workers[k];
        if (w->thread)
            pthread_join(w->thread, NULL);
        if (w->attn_ok)
            attn_engine_destroy(&w->attn);
        if (w->dev_ok)
            rlvk_device_destroy(&w->dev);
    }
    (void)n_threads;
    for (size_t i = 0; i < s.n_jobs; i++) {
        job *j = &s.jobs[i];
        snprintf(path, sizeof path, "%s/runs/%s", s.out, j->dir);
        if (j->status == 1)
            out->passed++;
        else if (j->status == 2)
            out->failed++;
        else if (j->status == 0)
            out->interrupted = 1;
        if (j->status != 0)
            json_array_append_new(dirs, json_string(path));
        const char *status = j->status == 1 ? "passed" : j->status == 2 ? "failed"
                           : j->status == 3 ? "complete (resumed)" : "not run";
        json_t *jj = json_pack("{s:s,s:s,s:s,s:s,s:f}", "run_id", j->item->id, "dir", j->dir,
                               "device", j->device, "status", status, "wall_s", j->wall_s);
        if (j->status == 2)
            json_object_set_new(jj, "reason", json_string(j->reason));
        if (j->status != 3 && j->gpu_ms >= 0)
            json_object_set_new(jj, "gpu_ms", json_real(j->gpu_ms));
        if (j->status == 3) { /* take status and times from the earlier run */
            snprintf(path, sizeof path, "%s/runs/%s/summary.json", s.out, j->dir);
            json_t *sum = load_json(path);
            json_object_set(jj, "wall_s", json_object_get(sum, "wall_s"));
            json_t *g = json_object_get(json_object_get(sum, "metrics"), "gpu_ms");
            if (json_is_number(g))
                json_object_set(jj, "gpu_ms", g);
            json_decref(sum);
        }
        json_array_append_new(jobs_j, jj);
    }
    if ((st = write_results(s.out, b->swept_keys, dirs, err)))
        goto done;
    now_iso(finished, sizeof finished);
    {
        json_t *man = json_pack("{s:s,s:{s:s,s:s,s:s},s:{s:i,s:i},s:O,s:o,s:o,s:o,s:s,s:s,s:b}",
                                "ropelab_version", RL_VERSION, "batch", "file", b->file, "text",
                                b->text, "hash", "", "shard", "index", (int)opt->shard_index,
                                "count", (int)(opt->shard_count ? opt->shard_count : 1),
                                "swept_keys", b->swept_keys, "plan", plan_json(b), "devices",
                                devices_json(&s), "jobs", jobs_j, "started", started,
                                "finished", finished, "complete", !out->interrupted);
        jobs_j = NULL;
        char h[17];
        snprintf(h, sizeof h, "%016llx", (unsigned long long)b->text_hash);
        json_object_set_new(json_object_get(man, "batch"), "hash", json_string(h));
        /* validation-layer messages (counted quietly) are part of the record */
        out->validation_messages = have_inst ? rlvk_instance_messages(&inst) : 0;
        json_object_set_new(man, "validation_layer", json_boolean(have_inst && inst.validation));
        json_object_set_new(man, "validation_messages",
                            json_integer((json_int_t)out->validation_messages));
        if (out->validation_messages && have_inst)
            json_object_set_new(man, "first_validation_message",
                                json_string(inst.first_message));
        snprintf(path, sizeof path, "%s/manifest.json", s.out);
        st = write_summary(path, man, err);
        json_decref(man);
    }
done:
    json_decref(dirs);
    json_decref(jobs_j);
    free(s.jobs);
    free(s.workers);
    free(idx);
    if (have_inst)
        rlvk_instance_destroy(&inst);
    pthread_mutex_destroy(&s.lock);
    return st;
}

/* ---- merge -------------------------------------------------------------------- */

rl_status run_merge(const char *const *dirs, size_t n_dirs, const char *out_dir,
                    run_merge_report *rep, FILE *fp, rl_error *err)
{
    memset(rep, 0, sizeof *rep);
    rl_status st = RL_OK;
    json_t *plan = NULL, *keys = NULL, *runs = json_array(), *jobs = json_array(),
           *seen = json_object(), *devices = json_array();
    const char *hash0 = NULL;
    json_t *mans = json_array();
    uint8_t shards[1024] = {0};
    for (size_t i = 0; i < n_dirs; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/manifest.json", dirs[i]);
        json_error_t je;
        json_t *m = json_load_file(path, 0, &je);
        if (!json_is_object(m)) {
            json_decref(m);
            st = rl_fail(err, RL_ERR_IO, "%s: cannot read: %s", path, je.text);
            goto done;
        }
        json_array_append_new(mans, m);
        const char *h = json_string_value(json_object_get(json_object_get(m, "batch"), "hash"));
        uint32_t cnt = (uint32_t)json_integer_value(json_object_get(json_object_get(m, "shard"), "count"));
        uint32_t si = (uint32_t)json_integer_value(json_object_get(json_object_get(m, "shard"), "index"));
        if (!h || cnt == 0 || si >= cnt) {
            st = rl_fail(err, RL_ERR_PARSE, "%s: not a ropelab manifest (no batch hash/shard)", path);
            goto done;
        }
        if (!hash0) {
            hash0 = h;
            rep->shard_count = cnt;
            plan = json_object_get(m, "plan");
            keys = json_object_get(m, "swept_keys");
        } else if (strcmp(h, hash0) != 0 || cnt != rep->shard_count) {
            st = rl_fail(err, RL_ERR_ARG, "%s: comes from a different batch or shard count "
                         "(batch %s, %u shards; first input: batch %s, %u shards)", dirs[i], h,
                         cnt, hash0, rep->shard_count);
            goto done;
        }
        if (si < sizeof shards) {
            if (shards[si])
                fprintf(fp, "shard %u/%u given twice (%s)\n", si, cnt, dirs[i]);
            shards[si] = 1;
        }
        json_t *dv;
        size_t k;
        json_array_foreach(json_object_get(m, "devices"), k, dv) json_array_append(devices, dv);
        json_t *jb;
        json_array_foreach(json_object_get(m, "jobs"), k, jb) {
            const char *stt = json_string_value(json_object_get(jb, "status"));
            if (!stt || !strcmp(stt, "not run"))
                continue;
            const char *id = json_string_value(json_object_get(jb, "run_id"));
            const char *dn = json_string_value(json_object_get(jb, "dir"));
            if (!id || !dn)
                continue;
            json_t *prev = json_object_get(seen, dn);
            if (prev) {
                rep->duplicated++;
                fprintf(fp, "duplicated run %s: in %s and %s\n", dn, json_string_value(prev),
                        dirs[i]);
                continue;
            }
            json_object_set_new(seen, dn, json_string(dirs[i]));
            char rp[1300];
            snprintf(rp, sizeof rp, "%s/runs/%s", dirs[i], dn);
            json_array_append_new(runs, json_string(rp));
            json_array_append(jobs, jb);
        }
    }
    size_t n = 0;
    for (uint32_t i = 0; i < rep->shard_count && i < sizeof shards; i++) {
        if (shards[i]) {
            rep->shards_seen++;
        } else if (n + 12 < sizeof rep->missing_shards) {
            n += (size_t)snprintf(rep->missing_shards + n, sizeof rep->missing_shards - n, "%s%u",
                                  n ? ", " : "", i);
        }
    }
    json_t *pe;
    size_t k;
    rep->plan = json_array_size(plan);
    json_array_foreach(plan, k, pe) {
        const char *id = json_string_value(json_object_get(pe, "id"));
        int found = 0;
        const char *dn;
        json_t *v;
        json_object_foreach(seen, dn, v) found |= !strncmp(dn, id, 16);
        if (found) {
            rep->present++;
        } else {
            rep->missing++;
            uint64_t h = strtoull(id, NULL, 16);
            fprintf(fp, "missing run %s (shard %llu/%u)\n", id,
                    (unsigned long long)(h % rep->shard_count), rep->shard_count);
        }
    }
    if ((st = mkdir_p(out_dir, err)) || (st = write_results(out_dir, keys, runs, err)))
        goto done;
    {
        json_t *m0 = json_array_get(mans, 0);
        json_t *man = json_pack("{s:s,s:O,s:O,s:O,s:O,s:O,s:o,s:b,s:I,s:I}", "ropelab_version",
                                RL_VERSION, "batch", json_object_get(m0, "batch"), "swept_keys",
                                keys, "plan", plan, "devices", devices, "jobs", jobs, "merged_from",
                                json_array(), "complete", rep->missing == 0 && rep->duplicated == 0,
                                "missing", (json_int_t)rep->missing, "duplicated",
                                (json_int_t)rep->duplicated);
        for (size_t i = 0; i < n_dirs; i++)
            json_array_append_new(json_object_get(man, "merged_from"), json_string(dirs[i]));
        char path[1200];
        snprintf(path, sizeof path, "%s/manifest.json", out_dir);
        st = write_summary(path, man, err);
        json_decref(man);
    }
done:
    json_decref(mans);
    json_decref(runs);
    json_decref(jobs);
    json_decref(seen);
    json_decref(devices);
    return st;
}
