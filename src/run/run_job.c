/* run_job.c — one job: one run of the plan on one worker, written to
 * OUT/runs/<dir>/ atomically (built in OUT/runs/.tmp-<dir>, put into
 * place with its summary.json when complete: an earlier run's directory is
 * exchanged, whole until then, rl_fs_replace). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/rl_util.h"
#include "core/rl_fs.h"
#include "pe/pe.h"
#include "run/run_int.h"

/* exp_sink's progress hook: forwards to the worker's display. */
typedef struct job_progress_ctx {
    run_worker *w;
    const run_job *j;
} job_progress_ctx;

static void job_progress(void *user, const char *phase, double done, double total)
{
    job_progress_ctx *c = user;
    if (c->w->progress)
        c->w->progress(c->w->progress_user, c->j, phase, done, total);
}

static json_t *timing_json(const run_timing *t)
{
    json_t *o = json_pack("{s:f,s:f,s:I,s:I,s:f,s:I,s:f,s:f,s:f}", "wall_s", t->wall_s,
                          "pipeline_create_s", t->pipeline_s, "pipelines_created",
                          (json_int_t)t->pipelines, "pipelines_reused", (json_int_t)t->reused,
                          "device_wait_s", t->device_s, "submissions", (json_int_t)t->submissions,
                          "verify_cpu_s", t->verify_s, "other_s", t->other_s, "gpu_s", t->gpu_s);
    /* the run's wall time over the GPU time its own timestamps measured */
    if (o && t->gpu_s > 0)
        json_object_set_new(o, "wall_over_gpu", json_real(t->wall_s / t->gpu_s));
    return o;
}

/* A copy of obj whose file keys (space-separated) name the snapshots of
 * the files they named (snap: opened path -> copy in OUT/inputs/, as
 * run_inputs_snapshots made it); base: the directory relative names are
 * opened under ("" : as given). NULL when obj names no snapshotted file. */
static json_t *to_snapshots(const json_t *obj, const char *keys, const char *base,
                            const json_t *snap)
{
    json_t *c = NULL;
    char ks[256], p[2200];
    snprintf(ks, sizeof ks, "%s", keys ? keys : "");
    char *save = NULL;
    for (char *k = strtok_r(ks, " ", &save); k && snap; k = strtok_r(NULL, " ", &save)) {
        const char *v = json_string_value(json_object_get(obj, k));
        if (!v || !*v)
            continue;
        if (v[0] == '/' || !base[0])
            snprintf(p, sizeof p, "%s", v);
        else
            snprintf(p, sizeof p, "%s/%s", base, v);
        const json_t *to = json_object_get(snap, p);
        if (!to)
            continue;
        if (!c && !(c = json_deep_copy(obj)))
            return NULL;
        json_object_set(c, k, (json_t *)to);
    }
    return c;
}

/* Runs the job's experiment into sink (tmp: the run directory being built).
 * Every file it reads is the batch's snapshot in OUT/inputs/ (read once,
 * hashed, recorded), not the original path, which may have changed since. */
static rl_status run_kind(const run_job *j, run_worker *w, const char *base_dir,
                          const json_t *snap, exp_sink *sink, rl_error *err)
{
    exp_run r;
    run_item_to_exp(j->item, &r);
    const json_t *data = json_object_get(j->item->resolved, "data");
    json_t *data_snap = to_snapshots(data, "q k v path", base_dir, snap);
    const char *type = json_string_value(json_object_get(
        json_object_get(j->item->resolved, "encoding"), "type"));
    const pe_family *fam = type ? pe_family_find(type) : NULL;
    json_t *enc_snap = fam ? to_snapshots(j->item->enc_params, fam->file_keys, "", snap) : NULL;
    if (enc_snap)
        r.encoding = enc_snap;
    run_data rd = {.desc = data_snap ? data_snap : data, .model = r.model};
    snprintf(rd.base_dir, sizeof rd.base_dir, "%s", base_dir);
    /* rotary_part last: the file data's rotated part is moved where the
     * kernels rotate it (the rotary_dim the encoding resolves to) */
    pe_encoding *part_enc = NULL;
    const char *part = json_string_value(json_object_get(r.encoding, "rotary_part"));
    if (type && !strcmp(type, "rope") && part && !strcmp(part, "last")) {
        pe_shape shape = {.head_dim = r.model.head_dim, .heads = r.model.heads,
                          .kv_heads = r.model.kv_heads, .max_positions = r.model.train_len};
        rl_status ps = pe_encoding_create(type, r.encoding, &shape, &part_enc, err);
        if (ps) {
            json_decref(data_snap);
            json_decref(enc_snap);
            return ps;
        }
        rd.rope_part = pe_rope_freqs(part_enc);
    }
    if (j->item->kind->uses_data) {
        r.data = run_data_fill;
        r.data_user = &rd;
    }
    r.encoding_used = sink->encoding_used;
    exp_ctx cx = {.dev = w->gpu ? &w->dev : NULL, .attn = w->attn_ok ? &w->attn : NULL};
    rl_status st = j->item->kind->run(&r, &cx, sink, err);
    if (!st)
        st = exp_sink_end_table(sink, err);
    else
        exp_sink_end_table(sink, NULL);
    pe_encoding_destroy(part_enc);
    json_decref(data_snap);
    json_decref(enc_snap);
    return st;
}

/* summary.json of a finished job (st: how the run went). */
static json_t *summary_json(const run_job *j, rl_status st, const rl_error *err,
                            const exp_sink *sink)
{
    json_t *sum = json_pack("{s:s,s:s,s:s,s:s,s:s,s:O,s:O,s:f}", "run_id", j->item->id, "dir",
                            j->dir, "kind", j->item->kind->name, "device", j->device, "status",
                            st ? "failed" : "passed", "resolved", j->item->resolved, "swept",
                            j->item->swept, "wall_s", j->wall_s);
    if (st)
        json_object_set_new(sum, "reason", json_string(err->msg));
    /* the encoding's parameters as the kind received them, with what the
     * runner derived (run_enc_params: the rope_type of a scaling named as
     * the type, a scaling's original length taken from model.train_len),
     * so no value the run used is left unrecorded */
    if (j->item->enc_params)
        json_object_set(sum, "encoding_params", j->item->enc_params);
    /* and as the family resolved them (what the rotation really used) */
    if (sink && json_object_size(sink->encoding_used))
        json_object_set(sum, "encoding_resolved", sink->encoding_used);
    json_object_set_new(sum, "timing", timing_json(&j->timing));
    if (sink) {
        json_object_set(sum, "metrics", sink->metrics);
        json_object_set(sum, "verification", sink->verification);
        json_object_set(sum, "tables", sink->tables);
    }
    return sum;
}

void run_job_exec(run_job *j, run_worker *w, const run_job_env *env)
{
    const char *out = env->out, *base_dir = env->base_dir;
    const json_t *snap = env->snap;
    double t0 = rl_now();
    j->t_start = t0;
    j->last_progress = 0;
    char final[1200], tmp[1300], sum_path[1400];
    snprintf(final, sizeof final, "%s/runs/%s", out, j->dir);
    snprintf(tmp, sizeof tmp, "%s/runs/.tmp-%s", out, j->dir);
    rl_error err = {0};
    /* below OUT nothing is followed: a planted runs/.tmp-<id> or
     * runs/<id> link is refused by name, never emptied */
    rl_status st = rl_fs_remove(out, tmp, &err);
    if (!st)
        st = rl_fs_mkdirs(out, tmp, &err);
    exp_sink sink = {0};
    int sink_ok = 0;
    if (!st && !(st = exp_sink_init(&sink, tmp, &err)))
        sink_ok = 1;
    if (!st && w->gpu && !w->dev_ok)
        st = rl_fail(&err, RL_ERR_NO_DEVICE, "device %u could not be opened: %s", w->index,
                     j->reason);
    job_progress_ctx pc = {.w = w, .j = j};
    sink.progress = job_progress;
    sink.progress_user = &pc;
    rlvk_device before = {0};
    if (w->gpu && w->dev_ok)
        before = w->dev; /* the counters; nothing is owned through the copy */
    if (!st)
        st = run_kind(j, w, base_dir, snap, &sink, &err);
    j->wall_s = rl_now() - t0;
    run_timing *tm = &j->timing;
    *tm = (run_timing){.wall_s = j->wall_s, .verify_s = sink.verify_s};
    if (w->gpu && w->dev_ok) {
        tm->pipeline_s = w->dev.pipeline_s - before.pipeline_s;
        tm->device_s = w->dev.submit_s - before.submit_s;
        tm->gpu_s = w->dev.gpu_s - before.gpu_s;
        tm->pipelines = w->dev.n_pipelines - before.n_pipelines;
        tm->reused = w->dev.n_pipelines_reused - before.n_pipelines_reused;
        tm->submissions = w->dev.n_submits - before.n_submits;
    }
    tm->other_s = tm->wall_s - tm->pipeline_s - tm->device_s - tm->verify_s;
    j->status = st ? RUN_JOB_FAILED : RUN_JOB_PASSED;
    snprintf(j->reason, sizeof j->reason, "%s", st ? err.msg : "");
    j->gpu_ms = -1;
    if (sink_ok && json_is_number(json_object_get(sink.metrics, "gpu_ms")))
        j->gpu_ms = json_number_value(json_object_get(sink.metrics, "gpu_ms"));
    json_t *sum = summary_json(j, st, &err, sink_ok ? &sink : NULL);
    /* which run this directory holds, provably: resume and merge check them */
    json_object_set_new(sum, "plan_hash", json_string(j->item->id));
    json_object_set_new(sum, "batch_hash", json_string(env->batch_hash ? env->batch_hash : ""));
    if (w->gpu && w->calib.ok) {
        /* the --dry-run estimate beside what was measured, to judge it by;
         * a passed run teaches the calibration (run_calib_learn) */
        run_est e;
        run_estimate(j->item, &w->calib, &e);
        double m = j->timing.device_s;
        json_t *cal = json_pack("{s:s,s:f,s:f,s:f,s:I,s:s}", "file", w->calib.path,
                                "fma_gflops", w->calib.fma_gflops, "copy_gbs", w->calib.copy_gbs,
                                "load_per_cpu", w->calib.load_per_cpu, "measured_at",
                                (json_int_t)w->calib.measured_at, "measured_because",
                                w->calib.remeasured[0] ? w->calib.remeasured : "(cached)");
        json_t *est = json_pack(
            "{s:f,s:f,s:f,s:f,s:[f,f],s:f,s:s,s:I,s:f,s:f,s:f,s:b,s:b,s:I,s:f,s:f,s:o}",
            "device_s", e.s, "uncorrected_device_s", e.raw_s, "correction", e.l.correction,
            "band_factor", e.l.band, "band_s", e.lo_s, e.hi_s, "measured_device_s", m,
            "learned_key", e.key, "learned_runs", (json_int_t)e.l.n, "measured_over_estimate",
            e.s > 0 ? m / e.s : 0.0, "measured_over_uncorrected", e.raw_s > 0 ? m / e.raw_s : 0.0,
            "measured_minus_estimate_s", m - e.s, "within_band", m >= e.lo_s && m <= e.hi_s,
            "disagreed", run_est_disagrees(&e, m), "memory_bytes",
            (json_int_t)j->item->est_bytes, "fma_gflops", w->calib.fma_gflops, "copy_gbs",
            w->calib.copy_gbs, "calibration", cal);
        if (est)
            json_object_set_new(sum, "estimate", est);
        rl_error lerr = {0}; /* a lesson lost is no failure of the run */
        if (!st)
            (void)run_calib_learn(&w->calib, &e, j->item->id, m, &lerr);
    }
    if (sink_ok) {
        /* size and checksum of every table, so --resume and merge can tell a
         * complete run directory from one whose files were lost */
        json_object_set_new(sum, "files", run_files_record(tmp, sink.tables));
        exp_sink_free(&sink);
    }
    rl_error werr = {0};
    snprintf(sum_path, sizeof sum_path, "%s/summary.json", tmp);
    rl_status ws = run_write_json(out, sum_path, sum, &werr);
    json_decref(sum);
    j->summary_digest[0] = '\0';
    if (!ws)
        run_file_digest(out, sum_path, j->summary_digest, sizeof j->summary_digest);
    if (!ws) /* an earlier run's directory stays whole until exchanged */
        ws = rl_fs_replace(out, tmp, final, &werr);
    if (ws) {
        j->status = RUN_JOB_FAILED;
        snprintf(j->reason, sizeof j->reason, "%s", werr.msg);
    }
}
