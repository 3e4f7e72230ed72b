/* run_plan.c — views of the plan: the exp_run of a run, the plan as text
 * (--dry-run) and as JSON (manifest.json), and which runs a shard owns. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"
#include "run/run_int.h"

void run_item_to_exp(const run_item *it, exp_run *r)
{
    const json_t *res = it->resolved, *m = json_object_get(res, "model"),
                 *e = json_object_get(res, "encoding");
    memset(r, 0, sizeof *r);
    r->id = it->id;
    r->model.head_dim = (uint32_t)json_integer_value(json_object_get(m, "head_dim"));
    r->model.heads = (uint32_t)json_integer_value(json_object_get(m, "heads"));
    r->model.kv_heads = (uint32_t)json_integer_value(json_object_get(m, "kv_heads"));
    r->model.train_len = (uint32_t)json_integer_value(json_object_get(m, "train_len"));
    r->encoding_name = json_string_value(json_object_get(e, "name"));
    r->encoding_type = json_string_value(json_object_get(e, "type"));
    r->params = json_object_get(res, "params");
    r->seed = (uint64_t)json_integer_value(json_object_get(res, "seed"));
    r->encoding = it->enc_params;
}

json_t *run_plan_json(const run_batch *b)
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
            run_json_text(v, buf, sizeof buf);
            fprintf(fp, " %s=%s", k, buf);
        }
        json_object_foreach(it->swept, k, v) {
            if (!strncmp(k, "params.", 7))
                continue;
            char buf[128];
            run_json_text(v, buf, sizeof buf);
            fprintf(fp, " %s=%s", k, buf);
        }
        fputc('\n', fp);
    }
    fprintf(fp, "%zu run(s) in this shard; largest memory estimate per run %s\n", n,
            rl_fmt_bytes(maxb, mem, sizeof mem));
}

/* ---- shards ---------------------------------------------------------------- */

int run_in_shard(const run_item *it, uint32_t index, uint32_t count)
{
    return count <= 1 || it->hash % count == index;
}

rl_status run_shard_parse(const char *spec, uint32_t *index, uint32_t *count, rl_error *err)
{
    char buf[64];
    const char *what = "--shard";
    if (!spec) {
        const char *id = getenv("SLURM_ARRAY_TASK_ID"), *n = getenv("SLURM_ARRAY_TASK_COUNT");
        if (!id || !n) {
            *index = 0;
            *count = 1;
            return RL_OK;
        }
        snprintf(buf, sizeof buf, "%s/%s", id, n);
        spec = buf;
        what = "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT";
    }
    char *end;
    errno = 0;
    unsigned long i = strtoul(spec, &end, 10);
    if (end == spec || *end != '/' || spec[0] == '-')
        return rl_fail(err, RL_ERR_ARG, "%s '%s': expected I/N, e.g. 0/4", what, spec);
    const char *ns = end + 1;
    unsigned long n = strtoul(ns, &end, 10);
    if (end == ns || *end || errno || ns[0] == '-' || n == 0 || n > 100000 || i >= n)
        return rl_fail(err, RL_ERR_ARG, "%s '%s': expected I/N with 0 <= I < N <= 100000", what,
                       spec);
    *index = (uint32_t)i;
    *count = (uint32_t)n;
    return RL_OK;
}
