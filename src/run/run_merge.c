/* run_merge.c — shard output directories combined: which runs of the plan
 * are present, missing or duplicated, each verified run directory copied
 * into OUT/runs, and results.csv and manifest.json over all of them.
 *
 * Inputs may come from different devices (the same plan run on an NVIDIA
 * and an AMD node): an input is identified by its shard index and its
 * device set (the manifest's device names), so the same shard on another
 * device set is a complementary run, not a duplicate; a duplicated run is
 * the same run id on the same device. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_fs.h"
#include "run/run_int.h"

#define MAX_SHARD_FLAGS 1024     /* shard indices tracked for "missing shards" */

typedef struct merge {
    run_merge_report *rep;
    FILE *fp;                    /* one line per duplicated or missing run */
    json_t *mans;                /* the inputs' manifests (owned) */
    const char *hash0;           /* the first input's batch hash */
    json_t *plan, *keys;         /* borrowed from the first manifest */
    json_t *runs, *jobs, *seen, *devices;
    json_t *in_recs;             /* [[input dir, record]]: manifest inputs, one per content */
    json_t *inputs;              /* "<shard index>|<device set>" -> dir, for "given twice" */
    json_t *names;               /* OUT/runs/ directory names taken -> 1 */
    json_t *copies;              /* [[source run dir, name in OUT/runs], ...] */
    size_t n_input;              /* inputs read so far */
    rl_error *err;               /* a refusal found while reading the inputs */
    rl_status st;
    uint8_t shards[MAX_SHARD_FLAGS];
} merge;

/* *same = 1 when run directory dn of shard folders a and b holds the same
 * tables (sizes and checksums, as each summary records them) and the same
 * metrics; -1 when a summary cannot be read. */
static int same_cpu_run(const char *a, const char *b, const char *dn, int *same)
{
    char pa[1400], pb[1400];
    snprintf(pa, sizeof pa, "%s/runs/%s/summary.json", a, dn);
    snprintf(pb, sizeof pb, "%s/runs/%s/summary.json", b, dn);
    json_t *sa = rl_fs_load_json(a, pa, RL_FS_MAX_SUMMARY, NULL);
    json_t *sb = rl_fs_load_json(b, pb, RL_FS_MAX_SUMMARY, NULL);
    int r = sa && sb ? 0 : -1;
    *same = !r && json_equal(json_object_get(sa, "files"), json_object_get(sb, "files")) &&
            json_equal(json_object_get(sa, "metrics"), json_object_get(sb, "metrics")) &&
            json_object_get(sa, "files");
    json_decref(sa);
    json_decref(sb);
    return r;
}

/* The jobs of one input that ran: each run once per device (by run id and
 * device), under a name in OUT/runs that no other input's run took. */
static void merge_jobs(merge *g, const json_t *m, const char *dir, int twice)
{
    json_t *jb;
    size_t k;
    json_array_foreach(json_object_get(m, "jobs"), k, jb) {
        const char *stt = json_string_value(json_object_get(jb, "status"));
        if (!stt || !strcmp(stt, "not run"))
            continue;
        const char *id = json_string_value(json_object_get(jb, "run_id"));
        const char *dn = json_string_value(json_object_get(jb, "dir"));
        const char *dev = json_string_value(json_object_get(jb, "device"));
        if (!id || !dn || strchr(dn, '/') || dn[0] == '.')
            continue;
        if (!strcmp(stt, "failed")) {
            /* a failed run is named, never counted as present */
            g->rep->failed++;
            fprintf(g->fp, "failed run %s on %s (in %s): %s\n", dn, dev ? dev : "?", dir,
                    json_string_value(json_object_get(jb, "reason"))
                        ? json_string_value(json_object_get(jb, "reason"))
                        : "no reason recorded");
            continue;
        }
        char key[1400];
        snprintf(key, sizeof key, "%s|%s", dn, dev ? dev : "");
        json_t *prev = json_object_get(g->seen, key);
        if (prev && dev && !strcmp(dev, "cpu") && !twice) {
            /* a CPU-only run is device-independent: every device partition
             * runs it, on "cpu". The same run from another partition (not
             * the same shard and devices given twice) is
             * kept once when its tables and metrics are the same bytes;
             * different ones are refused, naming both */
            int same = 0;
            if (same_cpu_run(json_string_value(prev), dir, dn, &same) == 0 && same) {
                g->rep->cpu_shared++;
                continue;
            }
            g->st = rl_fail(g->err, RL_ERR_MISMATCH, "CPU run %s differs between %s and %s "
                            "(its tables or metrics, or one cannot be read): the same run on "
                            "the CPU must give the same bytes", dn, json_string_value(prev),
                            dir);
            return;
        }
        if (prev) {
            g->rep->duplicated++;
            fprintf(g->fp, "duplicated run %s on %s: in %s and %s\n", dn, dev ? dev : "?",
                    json_string_value(prev), dir);
            continue;
        }
        char rp[1300], why[1600];
        snprintf(rp, sizeof rp, "%s/runs/%s", dir, dn);
        /* a manifest is a claim: the run directory must be there with every
         * table as its summary recorded it */
        char sp[1400];
        snprintf(sp, sizeof sp, "%s/summary.json", rp);
        json_t *sum = rl_fs_load_json(dir, sp, RL_FS_MAX_SUMMARY, NULL);
        int ok = sum != NULL;
        if (!ok)
            snprintf(why, sizeof why, "%s is missing or unreadable", sp);
        /* the directory holds the run the manifest says (id, plan hash, the
         * manifest's batch), and its summary is the one the manifest
         * recorded: else the merge is refused, naming it */
        const char *want = json_string_value(json_object_get(jb, "summary"));
        char now[48] = "";
        if (ok && !run_summary_identity(sum, id, g->hash0, why, sizeof why)) {
            g->st = rl_fail(g->err, RL_ERR_ARG, "%s does not hold run %s: %s", rp, id, why);
            json_decref(sum);
            return;
        }
        if (ok && want && (run_file_digest(dir, sp, now, sizeof now) || strcmp(want, now))) {
            g->st = rl_fail(g->err, RL_ERR_ARG, "%s changed after its run: %s/manifest.json "
                            "recorded it as %s (bytes:fnv1a64), it is now %s", sp, dir, want,
                            now[0] ? now : "unreadable");
            json_decref(sum);
            return;
        }
        if (ok)
            ok = run_files_verify(rp, sum, why, sizeof why);
        json_decref(sum);
        if (!ok) {
            g->rep->incomplete++;
            fprintf(g->fp, "incomplete run %s (listed in %s/manifest.json): %s\n", dn, dir, why);
            continue; /* counted as missing below unless another input has it */
        }
        /* the same directory name from another device: suffixed with the
         * input's position (-i2 = the second input) */
        char name[256];
        snprintf(name, sizeof name, "%s", dn);
        if (json_object_get(g->names, name))
            snprintf(name, sizeof name, "%.200s-i%zu", dn, g->n_input + 1);
        json_object_set_new(g->names, name, json_true());
        json_object_set_new(g->seen, key, json_string(dir));
        json_array_append_new(g->copies, json_pack("[s,s,s]", rp, name, dir));
        json_t *j2 = json_deep_copy(jb);
        json_object_set_new(j2, "dir", json_string(name));
        json_array_append_new(g->jobs, j2);
    }
}

/* The input files manifest m recorded, each content once; the same file
 * read with different contents by two shards is said (both are kept). */
static void merge_inputs(merge *g, const json_t *m, const char *dir)
{
    size_t i, j;
    json_t *r, *have;
    json_array_foreach(json_object_get(m, "inputs"), i, r) {
        const char *res = json_string_value(json_object_get(r, "resolved"));
        const char *sha = json_string_value(json_object_get(r, "sha256"));
        int dup = 0;
        json_array_foreach(g->in_recs, j, have) {
            const json_t *h = json_array_get(have, 1);
            const char *hres = json_string_value(json_object_get(h, "resolved"));
            const char *hsha = json_string_value(json_object_get(h, "sha256"));
            if (sha && hsha && !strcmp(sha, hsha) && res && hres && !strcmp(res, hres))
                dup = 1;
            else if (res && hres && !strcmp(res, hres) && sha && hsha && strcmp(sha, hsha))
                fprintf(g->fp, "input %s differs between %s (sha256 %.16s...) and %s (%.16s...)\n",
                        res, json_string_value(json_array_get(have, 0)), hsha, dir, sha);
        }
        if (!dup)
            json_array_append_new(g->in_recs, json_pack("[s,O]", dir, r));
    }
}

/* OUT/inputs/ from the inputs' copies (each verified against its hash);
 * the records go into *recs. */
static rl_status merge_input_copies(merge *g, const char *out_dir, json_t *recs, rl_error *err)
{
    char dir[1300];
    snprintf(dir, sizeof dir, "%s/inputs", out_dir);
    rl_status st = json_array_size(g->in_recs) ? rl_fs_mkdirs(out_dir, dir, err) : RL_OK;
    size_t i;
    json_t *e;
    json_array_foreach(g->in_recs, i, e) {
        if (st)
            break;
        const json_t *r = json_array_get(e, 1);
        char src[1400];
        snprintf(src, sizeof src, "%s/%s", json_string_value(json_array_get(e, 0)),
                 json_is_string(json_object_get(r, "copy"))
                     ? json_string_value(json_object_get(r, "copy"))
                     : "");
        if (!(st = run_inputs_copy(out_dir, json_string_value(json_array_get(e, 0)), src, r,
                                   err)))
            json_array_append(recs, (json_t *)r);
    }
    return st;
}

/* Reads input dir's manifest: same batch and shard count as the first,
 * its devices and its jobs. */
static rl_status merge_input(merge *g, const char *dir, rl_error *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    /* a shard is someone else's folder: a link or special file anywhere
     * in it is refused by name before anything is read or copied */
    rl_status lst = rl_fs_no_links(dir, 3, err);
    if (lst)
        return lst;
    json_t *m = rl_fs_load_json(dir, path, RL_FS_MAX_MANIFEST, err);
    if (!json_is_object(m)) {
        if (m)
            rl_fail(err, RL_ERR_PARSE, "%s: not a JSON object", path);
        json_decref(m);
        return err ? err->status : RL_ERR_IO;
    }
    json_array_append_new(g->mans, m);
    const json_t *shard = json_object_get(m, "shard");
    const char *h = json_string_value(json_object_get(json_object_get(m, "batch"), "hash"));
    /* a received manifest's numbers are checked before they size anything
     * (fuzz_manifest: count -1 read as 2^32 - 1 allocated 32 GiB) */
    const json_t *jc = json_object_get(shard, "count"), *ji = json_object_get(shard, "index");
    json_int_t c64 = json_is_integer(jc) ? json_integer_value(jc) : 0,
               i64 = json_is_integer(ji) ? json_integer_value(ji) : -1;
    if (!h || c64 < 1 || c64 > (json_int_t)RUN_SHARD_MAX || i64 < 0 || i64 >= c64)
        return rl_fail(err, RL_ERR_PARSE, "%s: not a ropelab manifest (no batch hash, or shard "
                       "index/count not integers with 0 <= index < count <= %u)", path,
                       RUN_SHARD_MAX);
    uint32_t cnt = (uint32_t)c64, si = (uint32_t)i64;
    run_merge_report *rep = g->rep;
    if (!g->hash0) {
        g->hash0 = h;
        rep->shard_count = cnt;
        g->plan = json_object_get(m, "plan");
        g->keys = json_object_get(m, "swept_keys");
    } else if (strcmp(h, g->hash0) != 0 || cnt != rep->shard_count) {
        return rl_fail(err, RL_ERR_ARG, "%s: comes from a different batch or shard count "
                       "(batch %s, %u shards; first input: batch %s, %u shards)", dir, h, cnt,
                       g->hash0, rep->shard_count);
    }
    /* the input's device set: its devices' names, in order */
    char key[1024];
    size_t kn = (size_t)snprintf(key, sizeof key, "%u", si);
    json_t *dv;
    size_t k;
    json_array_foreach(json_object_get(m, "devices"), k, dv) {
        const char *nm = json_string_value(json_object_get(dv, "name"));
        if (kn < sizeof key)
            kn += (size_t)snprintf(key + kn, sizeof key - kn, "|%s", nm ? nm : "?");
        int have = 0;
        json_t *d2;
        size_t k2;
        json_array_foreach(g->devices, k2, d2) have |= json_equal(d2, dv);
        if (!have)
            json_array_append(g->devices, dv);
    }
    const json_t *prev = json_object_get(g->inputs, key);
    int twice = prev != NULL;
    if (prev)
        fprintf(g->fp, "shard %u/%u on the same device(s) given twice (%s and %s)\n", si, cnt,
                json_string_value(prev), dir);
    else
        json_object_set_new(g->inputs, key, json_string(dir));
    if (si < sizeof g->shards)
        g->shards[si] = 1;
    merge_jobs(g, m, dir, twice);
    if (g->st)
        return g->st;
    merge_inputs(g, m, dir);
    g->n_input++;
    return RL_OK;
}

/* Shards seen and missing; runs of the plan present and missing. */
static rl_status merge_count(merge *g, rl_error *err)
{
    run_merge_report *rep = g->rep;
    size_t n = 0;
    for (uint32_t i = 0; i < rep->shard_count && i < sizeof g->shards; i++) {
        if (g->shards[i]) {
            rep->shards_seen++;
        } else if (n + 12 < sizeof rep->missing_shards) {
            n += (size_t)snprintf(rep->missing_shards + n, sizeof rep->missing_shards - n, "%s%u",
                                  n ? ", " : "", i);
        }
    }
    json_t *pe;
    size_t k, np = json_array_size(g->plan);
    rep->plan = np;
    /* the shard of a missing run: the assignment every task computed, from
     * the plan's ids and costs as the manifest records them */
    uint64_t *cost = malloc((np ? np : 1) * sizeof *cost);
    const char **ids = malloc((np ? np : 1) * sizeof *ids);
    uint32_t *shard = malloc((np ? np : 1) * sizeof *shard);
    rl_status st = RL_OK;
    if (!cost || !ids || !shard) {
        st = rl_fail(err, RL_ERR_NOMEM, "merge: out of memory (%zu runs)", np);
        goto done;
    }
    json_array_foreach(g->plan, k, pe) {
        const char *id = json_string_value(json_object_get(pe, "id"));
        json_int_t c = json_integer_value(json_object_get(pe, "estimated_cost"));
        ids[k] = id ? id : "";
        cost[k] = c > 0 ? (uint64_t)c : 1;
    }
    if ((st = run_shard_assign_costs(np, cost, ids, rep->shard_count, shard, err)))
        goto done;
    json_array_foreach(g->plan, k, pe) {
        int found = 0;
        const char *key;
        json_t *v;
        json_object_foreach(g->seen, key, v) found |= !strncmp(key, ids[k], 16);
        if (found) {
            rep->present++;
        } else {
            rep->missing++;
            fprintf(g->fp, "missing run %s (shard %u/%u)\n", ids[k], shard[k], rep->shard_count);
        }
    }
done:
    free(cost);
    free(ids);
    free(shard);
    return st;
}

/* Copies every verified run into OUT/runs (under the output's lock, after
 * merge_placeholder): each built as runs/.tmp-<name>, verified, renamed
 * into place; g->runs receives the copies' paths for results.csv. */
static rl_status merge_copy(merge *g, const char *out_dir, rl_error *err)
{
    char path[1300];
    snprintf(path, sizeof path, "%s/runs", out_dir);
    rl_status st = rl_fs_mkdirs(out_dir, path, err);
    json_t *c;
    size_t k;
    json_array_foreach(g->copies, k, c) {
        if (st)
            break;
        snprintf(path, sizeof path, "%s/runs/%s", out_dir,
                 json_string_value(json_array_get(c, 1)));
        if (!(st = run_copy_run_dir(json_string_value(json_array_get(c, 2)),
                                    json_string_value(json_array_get(c, 0)), out_dir, path,
                                    err)))
            json_array_append_new(g->runs, json_string(path));
    }
    return st;
}

static rl_status merge_manifest(merge *g, const char *const *dirs, size_t n_dirs,
                                const char *out_dir, rl_error *err)
{
    const run_merge_report *rep = g->rep;
    json_t *m0 = json_array_get(g->mans, 0);
    json_t *man = json_pack("{s:s,s:O,s:O,s:O,s:O,s:O,s:o,s:b,s:I,s:I}", "ropelab_version",
                            RUN_VERSION, "batch", json_object_get(m0, "batch"), "swept_keys",
                            g->keys, "plan", g->plan, "devices", g->devices, "jobs", g->jobs,
                            "merged_from", json_array(), "complete",
                            rep->missing == 0 && rep->duplicated == 0, "missing",
                            (json_int_t)rep->missing, "duplicated", (json_int_t)rep->duplicated);
    for (size_t i = 0; i < n_dirs; i++)
        json_array_append_new(json_object_get(man, "merged_from"), json_string(dirs[i]));
    json_t *recs = json_array();
    json_object_set_new(man, "inputs", recs);
    rl_status cst = merge_input_copies(g, out_dir, recs, err);
    if (cst) {
        json_decref(man);
        return cst;
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/manifest.json", out_dir);
    rl_status st = run_write_json(out_dir, path, man, err);
    json_decref(man);
    return st;
}

/* Before anything in OUT changes: a manifest that claims no run (no jobs,
 * "complete": false, "state": "merging") replaces an earlier merge's, and
 * that merge's results.csv is removed. A merge killed at any moment then
 * leaves either the earlier merge untouched, this claim of nothing (which
 * a rerun recognises as its own), or the final manifest, written last,
 * once every run it lists is copied and verified. */
static rl_status merge_placeholder(merge *g, const char *const *dirs, size_t n_dirs,
                                   const char *out_dir, rl_error *err)
{
    json_t *m0 = json_array_get(g->mans, 0);
    json_t *man = json_pack("{s:s,s:O,s:O,s:O,s:[],s:o,s:b,s:s}", "ropelab_version",
                            RUN_VERSION, "batch", json_object_get(m0, "batch"), "swept_keys",
                            g->keys, "plan", g->plan, "jobs", "merged_from", json_array(),
                            "complete", 0, "state", "merging");
    if (!man)
        return rl_fail(err, RL_ERR_PARSE, "%s: the first input's manifest has no batch, "
                       "swept_keys or plan", dirs[0]);
    for (size_t i = 0; i < n_dirs; i++)
        json_array_append_new(json_object_get(man, "merged_from"), json_string(dirs[i]));
    char path[1200];
    snprintf(path, sizeof path, "%s/manifest.json", out_dir);
    rl_status st = run_write_json(out_dir, path, man, err);
    json_decref(man);
    snprintf(path, sizeof path, "%s/results.csv", out_dir);
    return st ? st : rl_fs_remove(out_dir, path, err);
}

/* RL_OK when out_dir does not exist, is empty (but for the lock and
 * temporaries), or holds a merge (its
 * manifest has "merged_from") of the batch dirs[0] comes from; otherwise
 * RL_ERR_ARG naming what it holds. */
static rl_status out_is_ours(const char *const *dirs, size_t n_dirs, const char *out_dir,
                             rl_error *err)
{
    DIR *d = opendir(out_dir);
    if (!d)
        return RL_OK;
    struct dirent *e;
    int empty = 1;
    /* the lock and what a merge killed before its first manifest left (its
     * temporaries, removed under the lock) do not make it a study */
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            strcmp(e->d_name, ".ropelab.lock") &&
            strncmp(e->d_name, "manifest.json.tmp.", 18) &&
            strncmp(e->d_name, "results.csv.tmp.", 16))
            empty = 0;
    closedir(d);
    if (empty || !n_dirs)
        return RL_OK;
    rl_status lst = rl_fs_no_links(out_dir, 3, err);
    if (lst)
        return lst;
    char mp[1200], ip[1200];
    snprintf(mp, sizeof mp, "%s/manifest.json", out_dir);
    snprintf(ip, sizeof ip, "%s/manifest.json", dirs[0]);
    json_t *have = rl_fs_kind(out_dir, mp, NULL) == 'f'
                       ? rl_fs_load_json(out_dir, mp, RL_FS_MAX_MANIFEST, NULL)
                       : NULL;
    json_t *in = rl_fs_load_json(NULL, ip, RL_FS_MAX_MANIFEST, NULL);
    const char *hh = json_string_value(json_object_get(json_object_get(have, "batch"), "hash"));
    const char *ih = json_string_value(json_object_get(json_object_get(in, "batch"), "hash"));
    rl_status st = RL_OK;
    if (!have || !json_object_get(have, "merged_from"))
        st = rl_fail(err, RL_ERR_ARG, "merge --out %s is not empty and holds no earlier merge "
                     "(%s); a merge never replaces another study's results: choose a new "
                     "directory", out_dir, have ? "its manifest.json was written by `run`"
                                                : "no manifest.json");
    else if (!hh || !ih || strcmp(hh, ih))
        st = rl_fail(err, RL_ERR_ARG, "merge --out %s holds the merge of another batch (%s; "
                     "the inputs are batch %s): choose a new directory", out_dir,
                     hh ? hh : "?", ih ? ih : "?");
    json_decref(have);
    json_decref(in);
    return st;
}

rl_status run_merge(const char *const *dirs, size_t n_dirs, const char *out_dir,
                    run_merge_report *rep, FILE *fp, rl_error *err)
{
    memset(rep, 0, sizeof *rep);
    if (strlen(out_dir) > RUN_MAX_OUT_PATH)
        return rl_fail(err, RL_ERR_LIMIT, "merge --out: the path is %zu bytes; ropelab takes at "
                       "most %d (RUN_MAX_OUT_PATH)", strlen(out_dir), RUN_MAX_OUT_PATH);
    for (size_t i = 0; i < n_dirs; i++)
        if (strlen(dirs[i]) > RUN_MAX_OUT_PATH)
            return rl_fail(err, RL_ERR_LIMIT, "merge input %zu: the path is %zu bytes; ropelab "
                           "takes at most %d (RUN_MAX_OUT_PATH)", i + 1, strlen(dirs[i]),
                           RUN_MAX_OUT_PATH);
    /* the output must not be one of the inputs (its manifest would be
     * overwritten by the merge of itself) */
    char ro[PATH_MAX], ri[PATH_MAX];
    if (realpath(out_dir, ro))
        for (size_t i = 0; i < n_dirs; i++)
            if (realpath(dirs[i], ri) && !strcmp(ro, ri))
                return rl_fail(err, RL_ERR_ARG,
                               "merge --out %s is also input %zu (%s); write the merge to a new "
                               "directory", out_dir, i + 1, dirs[i]);
    /* --out is new, empty, or an earlier merge of the same plan: a merge
     * never replaces another study's results */
    rl_status ost = out_is_ours(dirs, n_dirs, out_dir, err);
    if (ost)
        return ost;
    merge g = {.rep = rep, .fp = fp, .err = err, .mans = json_array(), .runs = json_array(),
               .jobs = json_array(), .seen = json_object(), .devices = json_array(),
               .inputs = json_object(), .names = json_object(), .copies = json_array(),
               .in_recs = json_array()};
    rl_status st = RL_OK;
    for (size_t i = 0; i < n_dirs && !st; i++)
        st = merge_input(&g, dirs[i], err);
    int lock = -1;
    if (!st && !(st = merge_count(&g, err)) && !(st = run_mkdir_p(out_dir, err)) &&
        !(st = rl_fs_lock(out_dir, &lock, err)) && !(st = rl_fs_no_links(out_dir, 3, err)) &&
        !(st = run_clean_stale(out_dir, err)) &&
        !(st = merge_placeholder(&g, dirs, n_dirs, out_dir, err))) {
        if (!(st = merge_copy(&g, out_dir, err)) &&
            !(st = run_results_write(out_dir, g.keys, g.runs, err)))
            st = merge_manifest(&g, dirs, n_dirs, out_dir, err);
    }
    rl_fs_unlock(lock);
    json_decref(g.mans);
    json_decref(g.runs);
    json_decref(g.jobs);
    json_decref(g.seen);
    json_decref(g.devices);
    json_decref(g.inputs);
    json_decref(g.names);
    json_decref(g.copies);
    json_decref(g.in_recs);
    return st;
}
