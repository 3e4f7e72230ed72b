/* run_merge.c — shard output directories combined: which runs of the plan
 * are present, missing or duplicated, and results.csv and manifest.json
 * over all of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_int.h"

#define MAX_SHARD_FLAGS 1024     /* shard indices tracked for "missing shards" */

typedef struct merge {
    run_merge_report *rep;
    FILE *fp;                    /* one line per duplicated or missing run */
    json_t *mans;                /* the inputs' manifests (owned) */
    const char *hash0;           /* the first input's batch hash */
    json_t *plan, *keys;         /* borrowed from the first manifest */
    json_t *runs, *jobs, *seen, *devices;
    uint8_t shards[MAX_SHARD_FLAGS];
} merge;

/* The jobs of one input that ran: each run directory once (by dir name). */
static void merge_jobs(merge *g, const json_t *m, const char *dir)
{
    json_t *jb;
    size_t k;
    json_array_foreach(json_object_get(m, "jobs"), k, jb) {
        const char *stt = json_string_value(json_object_get(jb, "status"));
        if (!stt || !strcmp(stt, "not run"))
            continue;
        const char *id = json_string_value(json_object_get(jb, "run_id"));
        const char *dn = json_string_value(json_object_get(jb, "dir"));
        if (!id || !dn)
            continue;
        json_t *prev = json_object_get(g->seen, dn);
        if (prev) {
            g->rep->duplicated++;
            fprintf(g->fp, "duplicated run %s: in %s and %s\n", dn, json_string_value(prev), dir);
            continue;
        }
        json_object_set_new(g->seen, dn, json_string(dir));
        char rp[1300];
        snprintf(rp, sizeof rp, "%s/runs/%s", dir, dn);
        json_array_append_new(g->runs, json_string(rp));
        json_array_append(g->jobs, jb);
    }
}

/* Reads input dir's manifest: same batch and shard count as the first,
 * its devices and its jobs. */
static rl_status merge_input(merge *g, const char *dir, rl_error *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    json_error_t je;
    json_t *m = json_load_file(path, 0, &je);
    if (!json_is_object(m)) {
        json_decref(m);
        return rl_fail(err, RL_ERR_IO, "%s: cannot read: %s", path, je.text);
    }
    json_array_append_new(g->mans, m);
    const json_t *shard = json_object_get(m, "shard");
    const char *h = json_string_value(json_object_get(json_object_get(m, "batch"), "hash"));
    uint32_t cnt = (uint32_t)json_integer_value(json_object_get(shard, "count"));
    uint32_t si = (uint32_t)json_integer_value(json_object_get(shard, "index"));
    if (!h || cnt == 0 || si >= cnt)
        return rl_fail(err, RL_ERR_PARSE, "%s: not a ropelab manifest (no batch hash/shard)", path);
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
    if (si < sizeof g->shards) {
        if (g->shards[si])
            fprintf(g->fp, "shard %u/%u given twice (%s)\n", si, cnt, dir);
        g->shards[si] = 1;
    }
    json_t *dv;
    size_t k;
    json_array_foreach(json_object_get(m, "devices"), k, dv) json_array_append(g->devices, dv);
    merge_jobs(g, m, dir);
    return RL_OK;
}

/* Shards seen and missing; runs of the plan present and missing. */
static void merge_count(merge *g)
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
    size_t k;
    rep->plan = json_array_size(g->plan);
    json_array_foreach(g->plan, k, pe) {
        const char *id = json_string_value(json_object_get(pe, "id"));
        int found = 0;
        const char *dn;
        json_t *v;
        json_object_foreach(g->seen, dn, v) found |= !strncmp(dn, id, 16);
        if (found) {
            rep->present++;
        } else {
            rep->missing++;
            uint64_t h = strtoull(id, NULL, 16);
            fprintf(g->fp, "missing run %s (shard %llu/%u)\n", id,
                    (unsigned long long)(h % rep->shard_count), rep->shard_count);
        }
    }
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
    char path[1200];
    snprintf(path, sizeof path, "%s/manifest.json", out_dir);
    rl_status st = run_write_json(path, man, err);
    json_decref(man);
    return st;
}

rl_status run_merge(const char *const *dirs, size_t n_dirs, const char *out_dir,
                    run_merge_report *rep, FILE *fp, rl_error *err)
{
    memset(rep, 0, sizeof *rep);
    merge g = {.rep = rep, .fp = fp, .mans = json_array(), .runs = json_array(),
               .jobs = json_array(), .seen = json_object(), .devices = json_array()};
    rl_status st = RL_OK;
    for (size_t i = 0; i < n_dirs && !st; i++)
        st = merge_input(&g, dirs[i], err);
    if (!st) {
        merge_count(&g);
        if (!(st = run_mkdir_p(out_dir, err)) &&
            !(st = run_results_write(out_dir, g.keys, g.runs, err)))
            st = merge_manifest(&g, dirs, n_dirs, out_dir, err);
    }
    json_decref(g.mans);
    json_decref(g.runs);
    json_decref(g.jobs);
    json_decref(g.seen);
    json_decref(g.devices);
    return st;
}
