/* run_plan.c — views of the plan: the exp_run of a run, the plan as text
 * (--dry-run) and as JSON (manifest.json), and which runs a shard owns: each
 * run's estimated cost, assigned longest-first to the least-loaded shard. */
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
        /* estimated_cost: what the shard assignment balanced (merge
         * recomputes the assignment from it); a JSON integer is signed */
        uint64_t c = run_item_cost(it);
        json_array_append_new(plan, json_pack("{s:s,s:s,s:O,s:O,s:I,s:I}", "id", it->id, "kind",
                                              it->kind->name, "swept", it->swept, "resolved",
                                              it->resolved, "estimated_bytes",
                                              (json_int_t)it->est_bytes, "estimated_cost",
                                              (json_int_t)(c > INT64_MAX ? INT64_MAX : c)));
    }
    return plan;
}

rl_status run_plan_print(const run_batch *b, uint32_t si, uint32_t sn, FILE *fp, rl_error *err)
{
    uint32_t *shard = malloc((b->n_items ? b->n_items : 1) * sizeof *shard);
    if (!shard)
        return rl_fail(err, RL_ERR_NOMEM, "plan: out of memory (%zu runs)", b->n_items);
    rl_status st = run_shard_assign(b, sn, shard, err);
    if (st) {
        free(shard);
        return st;
    }
    char mem[32];
    size_t n = 0;
    uint64_t maxb = 0;
    char c1[512], c2[2048], c3[512];
    fprintf(fp, "batch '%s' (%s): %zu run(s)", rl_clean(b->name, c1, sizeof c1),
            rl_clean(b->file, c2, sizeof c2), b->n_items);
    if (b->n_duplicates)
        fprintf(fp, ", %zu duplicate point(s) merged", b->n_duplicates);
    if (sn > 1)
        fprintf(fp, "; shard %u/%u", si, sn);
    fprintf(fp, "\n%-16s  %-10s %-12s %10s  %s\n", "run id", "kind", "encoding", "memory",
            "parameters (those at their kind's default left out)");
    /* a seed sweep (the batch's or an entry's): each line says its seed */
    int seeds_differ = 0;
    for (size_t i = 1; i < b->n_items && !seeds_differ; i++)
        seeds_differ = !json_equal(json_object_get(b->items[i].resolved, "seed"),
                                   json_object_get(b->items[0].resolved, "seed"));
    for (size_t i = 0; i < b->n_items; i++) {
        const run_item *it = &b->items[i];
        if (shard[i] != si)
            continue;
        n++;
        if (it->est_bytes > maxb)
            maxb = it->est_bytes;
        const json_t *res = it->resolved;
        const json_t *m = json_object_get(res, "model");
        fprintf(fp, "%s  %-10s %-12s %10s  head_dim=%lld heads=%lld", it->id, it->kind->name,
                rl_clean(json_string_value(json_object_get(json_object_get(res, "encoding"),
                                                           "name")),
                         c1, sizeof c1),
                rl_fmt_bytes(it->est_bytes, mem, sizeof mem),
                (long long)json_integer_value(json_object_get(m, "head_dim")),
                (long long)json_integer_value(json_object_get(m, "heads")));
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(res, "params"), k, v) {
            /* a parameter at its kind's default is left out (summary.json
             * holds the whole record) */
            long pi = rl_param_find(it->kind->params, it->kind->n_params, k);
            const char *def = pi >= 0 ? it->kind->params[pi].def : NULL;
            json_t *dv = def ? json_loads(def, JSON_DECODE_ANY, NULL) : NULL;
            int at_default = dv && json_equal(dv, v);
            json_decref(dv);
            if (at_default)
                continue;
            char buf[128];
            run_json_text(v, buf, sizeof buf);
            fprintf(fp, " %s=%s", rl_clean(k, c3, sizeof c3), rl_clean(buf, c1, sizeof c1));
        }
        json_object_foreach(it->swept, k, v) {
            if (!strncmp(k, "params.", 7))
                continue;
            char buf[128];
            run_json_text(v, buf, sizeof buf);
            fprintf(fp, " %s=%s", rl_clean(k, c3, sizeof c3), rl_clean(buf, c1, sizeof c1));
        }
        if (seeds_differ)
            fprintf(fp, " seed=%lld", (long long)json_integer_value(json_object_get(res, "seed")));
        fputc('\n', fp);
    }
    fprintf(fp, "%zu run(s) in this shard; largest memory estimate per run %s\n", n,
            rl_fmt_bytes(maxb, mem, sizeof mem));
    free(shard);
    return RL_OK;
}

/* ---- shards ---------------------------------------------------------------- */

uint64_t run_item_cost(const run_item *it)
{
    /* attention kinds: one pass is tokens^2 * heads * head_dim multiply-adds
     * (the longest pass dominates; the entropy and retrieval kinds' doubling
     * lengths add at most 1/3 more); other kinds: their memory estimate */
    const json_t *res = it->resolved, *m = json_object_get(res, "model"),
                 *p = json_object_get(res, "params");
    uint64_t tokens = 0;
    if (it->kind->needs_gpu) {
        const json_t *ml = json_object_get(p, "max_len"), *len = json_object_get(p, "length");
        if (json_is_integer(ml))
            tokens = (uint64_t)json_integer_value(ml);
        else if (json_is_integer(len))
            tokens = json_integer_value(len) > 0
                         ? (uint64_t)json_integer_value(len)
                         : (uint64_t)json_integer_value(json_object_get(m, "train_len"));
    }
    if (tokens) {
        uint64_t hd = (uint64_t)json_integer_value(json_object_get(m, "heads")) *
                      (uint64_t)json_integer_value(json_object_get(m, "head_dim"));
        if (hd && tokens <= UINT64_MAX / tokens / hd) /* saturate rather than wrap */
            return tokens * tokens * hd;
        return UINT64_MAX;
    }
    if (!strcmp(it->kind->name, "decay")) {
        /* one bound per distance r = 0, step, ..., max_distance, each a sum
         * over the head_dim/2 pairs */
        json_int_t md = json_integer_value(json_object_get(p, "max_distance")),
                   st = json_integer_value(json_object_get(p, "step"));
        uint64_t hd = (uint64_t)json_integer_value(json_object_get(m, "head_dim"));
        if (md > 0 && st > 0 && hd)
            return ((uint64_t)md / (uint64_t)st + 1) * hd;
    }
    return it->est_bytes ? it->est_bytes : 1;
}

typedef struct shard_key {
    uint64_t cost;
    const char *id;
    size_t i;
} shard_key;

static int shard_key_cmp(const void *a, const void *b)
{
    const shard_key *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost > y->cost ? -1 : 1; /* longest first */
    return strcmp(x->id, y->id);
}

/* A binary min-heap of shards by (load, index). */
typedef struct shard_heap {
    uint64_t *load;
    uint32_t *h, n;
} shard_heap;

static int heap_less(const shard_heap *s, uint32_t a, uint32_t b)
{
    return s->load[a] != s->load[b] ? s->load[a] < s->load[b] : a < b;
}

static void heap_down(shard_heap *s, uint32_t k)
{
    for (;;) {
        uint32_t l = 2 * k + 1, r = l + 1, m = k;
        if (l < s->n && heap_less(s, s->h[l], s->h[m]))
            m = l;
        if (r < s->n && heap_less(s, s->h[r], s->h[m]))
            m = r;
        if (m == k)
            return;
        uint32_t t = s->h[k];
        s->h[k] = s->h[m];
        s->h[m] = t;
        k = m;
    }
}

rl_status run_shard_assign_costs(size_t n, const uint64_t *cost, const char *const *id,
                                 uint32_t count, uint32_t *shard, rl_error *err)
{
    if (count <= 1) {
        for (size_t i = 0; i < n; i++)
            shard[i] = 0;
        return RL_OK;
    }
    if (count > RUN_SHARD_MAX)
        return rl_fail(err, RL_ERR_ARG, "shard assignment: %u shards exceed the limit %u", count,
                       RUN_SHARD_MAX);
    shard_key *keys = malloc((n ? n : 1) * sizeof *keys);
    shard_heap s = {.load = calloc(count, sizeof *s.load), .h = malloc(count * sizeof *s.h),
                    .n = count};
    if (!keys || !s.load || !s.h) {
        free(keys);
        free(s.load);
        free(s.h);
        return rl_fail(err, RL_ERR_NOMEM, "shard assignment: out of memory (%zu runs)", n);
    }
    for (size_t i = 0; i < n; i++)
        keys[i] = (shard_key){.cost = cost[i], .id = id[i], .i = i};
    qsort(keys, n, sizeof *keys, shard_key_cmp);
    for (uint32_t k = 0; k < count; k++)
        s.h[k] = k; /* all loads 0: already a heap */
    for (size_t i = 0; i < n; i++) {
        uint32_t k = s.h[0]; /* the least-loaded shard, lowest index on a tie */
        shard[keys[i].i] = k;
        s.load[k] = keys[i].cost > UINT64_MAX - s.load[k] ? UINT64_MAX : s.load[k] + keys[i].cost;
        heap_down(&s, 0);
    }
    free(keys);
    free(s.load);
    free(s.h);
    return RL_OK;
}

rl_status run_shard_assign(const run_batch *b, uint32_t count, uint32_t *shard, rl_error *err)
{
    size_t n = b->n_items;
    uint64_t *cost = malloc((n ? n : 1) * sizeof *cost);
    const char **id = malloc((n ? n : 1) * sizeof *id);
    rl_status st = RL_OK;
    if (!cost || !id) {
        st = rl_fail(err, RL_ERR_NOMEM, "shard assignment: out of memory (%zu runs)", n);
    } else {
        for (size_t i = 0; i < n; i++) {
            cost[i] = run_item_cost(&b->items[i]);
            id[i] = b->items[i].id;
        }
        st = run_shard_assign_costs(n, cost, id, count, shard, err);
    }
    free(cost);
    free(id);
    return st;
}

/* Strict decimal: digits only (no sign, space, 0x or leading-zero octal
 * reading; strtoul would take " -1" and "0x10"), at most max. */
/* rl_parse_u64's one rule (no sign, no leading zero), at most max. */
static int parse_dec(const char *s, unsigned long max, unsigned long *v)
{
    unsigned long long x;
    if (rl_parse_u64(s, &x) || x > max)
        return 0;
    *v = (unsigned long)x;
    return 1;
}

#define SHARD_MAX RUN_SHARD_MAX

static rl_status slurm_var(const char *name, unsigned long *v, rl_error *err)
{
    const char *s = getenv(name);
    if (!parse_dec(s, 4000000000UL, v))
        return rl_fail(err, RL_ERR_ARG, "%s='%s': expected a decimal number (digits only, no sign or leading zero)", name,
                       s);
    return RL_OK;
}

/* The shard of a Slurm array task: index = TASK_ID - TASK_MIN, count =
 * TASK_COUNT (or MAX - MIN + 1); the array must be a contiguous range
 * (--array=A-B, step 1), since a stepped or listed array's task ids cannot
 * be mapped onto 0..N-1 without knowing every id. */
static rl_status slurm_shard(uint32_t *index, uint32_t *count, rl_error *err)
{
    const char *id_s = getenv("SLURM_ARRAY_TASK_ID");
    if (!id_s) {
        *index = 0;
        *count = 1;
        return RL_OK;
    }
    const char *min_s = getenv("SLURM_ARRAY_TASK_MIN"), *max_s = getenv("SLURM_ARRAY_TASK_MAX"),
               *cnt_s = getenv("SLURM_ARRAY_TASK_COUNT"), *step_s = getenv("SLURM_ARRAY_TASK_STEP");
    if (!min_s || (!max_s && !cnt_s))
        return rl_fail(err, RL_ERR_ARG,
                       "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_MIN and "
                       "SLURM_ARRAY_TASK_MAX/SLURM_ARRAY_TASK_COUNT are not: cannot tell this "
                       "task's shard; give --shard I/N (running the whole plan in every task "
                       "would repeat it)");
    unsigned long id = 0, mn = 0, mx = 0, cnt = 0, step = 1;
    rl_status st;
    if ((st = slurm_var("SLURM_ARRAY_TASK_ID", &id, err)) ||
        (st = slurm_var("SLURM_ARRAY_TASK_MIN", &mn, err)) ||
        (max_s && (st = slurm_var("SLURM_ARRAY_TASK_MAX", &mx, err))) ||
        (cnt_s && (st = slurm_var("SLURM_ARRAY_TASK_COUNT", &cnt, err))) ||
        (step_s && (st = slurm_var("SLURM_ARRAY_TASK_STEP", &step, err))))
        return st;
    if (step != 1)
        return rl_fail(err, RL_ERR_ARG,
                       "SLURM_ARRAY_TASK_STEP=%lu: a stepped array (--array=A-B:%lu) is not "
                       "supported; submit a contiguous one (--array=0-%lu) or give --shard I/N",
                       step, step,
                       (cnt_s ? cnt : (mx >= mn && step ? (mx - mn) / step + 1 : 1)) - 1);
    if (max_s && mx < mn)
        return rl_fail(err, RL_ERR_ARG, "SLURM_ARRAY_TASK_MAX=%lu is below SLURM_ARRAY_TASK_MIN=%lu",
                       mx, mn);
    if (max_s && cnt_s && cnt != mx - mn + 1)
        return rl_fail(err, RL_ERR_ARG,
                       "SLURM_ARRAY_TASK_COUNT=%lu but SLURM_ARRAY_TASK_MIN..MAX = %lu..%lu holds "
                       "%lu ids: the array is not contiguous (e.g. --array=1,3,7); submit a "
                       "range or give --shard I/N", cnt, mn, mx, mx - mn + 1);
    if (!cnt_s)
        cnt = mx - mn + 1;
    if (id < mn || id - mn >= cnt)
        return rl_fail(err, RL_ERR_ARG,
                       "SLURM_ARRAY_TASK_ID=%lu is outside SLURM_ARRAY_TASK_MIN=%lu + "
                       "SLURM_ARRAY_TASK_COUNT=%lu", id, mn, cnt);
    if (cnt == 0 || cnt > SHARD_MAX)
        return rl_fail(err, RL_ERR_ARG, "SLURM_ARRAY_TASK_COUNT=%lu: expected 1..%u", cnt,
                       SHARD_MAX);
    *index = (uint32_t)(id - mn);
    *count = (uint32_t)cnt;
    return RL_OK;
}

rl_status run_shard_parse(const char *spec, uint32_t *index, uint32_t *count, rl_error *err)
{
    if (!spec)
        return slurm_shard(index, count, err);
    char buf[64];
    const char *slash = strchr(spec, '/');
    unsigned long i, n;
    if (!slash || (size_t)(slash - spec) >= sizeof buf)
        return rl_fail(err, RL_ERR_ARG, "--shard '%s': expected I/N, e.g. 0/4", spec);
    memcpy(buf, spec, (size_t)(slash - spec));
    buf[slash - spec] = 0;
    if (!parse_dec(buf, SHARD_MAX, &i) || !parse_dec(slash + 1, SHARD_MAX, &n) || n == 0 ||
        i >= n)
        return rl_fail(err, RL_ERR_ARG,
                       "--shard '%s': expected I/N in decimal with 0 <= I < N <= %u", spec,
                       SHARD_MAX);
    *index = (uint32_t)i;
    *count = (uint32_t)n;
    return RL_OK;
}
