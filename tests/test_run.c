/* Batch loading: sweeps, zip groups, stable ids, shards, error reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rl_check.h"

#include <math.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"

#include "core/rl_csv.h"
#include "core/rl_sha256.h"
#include "run/run.h"
#include "run/run_int.h"
#include "run/run_yaml.h"
#include "rl_test.h"

static const char *base =
    "model: {head_dim: 64, heads: 4, kv_heads: 2, train_len: 1024}\n";

/* Loads text (prefixed by base); returns the status, fills b and d. */
static rl_status load(const char *body, run_batch *b, run_diag *d)
{
    char text[4096];
    snprintf(text, sizeof text, "%s%s", base, body);
    rl_error err = {0};
    return run_batch_parse("t.yaml", text, strlen(text), ".", b, d, &err);
}

static int has_msg(const run_diag *d, const char *needle)
{
    for (size_t i = 0; i < d->n; i++)
        if (strstr(d->msg[i], needle))
            return 1;
    return 0;
}

START_TEST(lists_expand_to_cartesian_product)
{
    run_batch b;
    run_diag d;
    /* 3 distances x 2 steps x 2 encodings(1 + 1) = 12 */
    ck_assert_int_eq(load("encodings:\n  - {name: a, type: rope}\n"
                          "  - {name: b, type: rope, rope_theta: 500000}\n"
                          "experiments:\n  - kind: decay\n    params: {max_distance: [8, 16, 32], "
                          "step: [1, 2]}\n", &b, &d), RL_OK);
    ck_assert_uint_eq(b.n_items, 12);
    ck_assert_uint_eq(json_array_size(b.swept_keys), 2);
    run_batch_free(&b);
}
END_TEST

START_TEST(zip_pairs_lists_elementwise)
{
    run_batch b;
    run_diag d;
    /* zip of 3 pairs x a 2-list = 6, not 3 x 3 x 2 */
    ck_assert_int_eq(load("experiments:\n  - kind: decay\n    params:\n      step: [1, 2]\n"
                          "      zip: {max_distance: [10, 20, 30]}\n"
                          "  - kind: precision\n    params:\n      zip:\n        tokens: [4, 8, 16]\n"
                          "        max_pos_log2: [4, 8, 12]\n", &b, &d), RL_OK);
    ck_assert_uint_eq(b.n_items, 6 + 3);
    size_t seen = 0;
    for (size_t i = 0; i < b.n_items; i++) {
        const json_t *p = json_object_get(b.items[i].resolved, "params");
        if (strcmp(b.items[i].kind->name, "precision"))
            continue;
        json_int_t t = json_integer_value(json_object_get(p, "tokens"));
        json_int_t l = json_integer_value(json_object_get(p, "max_pos_log2"));
        ck_assert_msg((t == 4 && l == 4) || (t == 8 && l == 8) || (t == 16 && l == 12),
                      "unpaired tokens=%lld max_pos_log2=%lld", (long long)t, (long long)l);
        seen++;
    }
    ck_assert_uint_eq(seen, 3);
    run_batch_free(&b);
}
END_TEST

/* An encoding's zip group pairs its lists like a params zip does, and its
 * bad members are all reported, each at its own key (one zip parser). */
START_TEST(encoding_zip_pairs_and_reports_every_bad_member)
{
    run_batch b;
    run_diag d;
    ck_assert_int_eq(load("encodings:\n  - name: a\n    type: rope\n"
                          "    zip: {rope_theta: [10000, 500000], partial_rotary_factor: [1, 0.5]}\n"
                          "experiments: [{kind: decay}]\n", &b, &d), RL_OK);
    ck_assert_uint_eq(b.n_items, 2);
    for (size_t i = 0; i < b.n_items; i++) {
        const json_t *e = json_object_get(b.items[i].resolved, "encoding");
        double t = json_number_value(json_object_get(e, "rope_theta"));
        double f = json_number_value(json_object_get(e, "partial_rotary_factor"));
        ck_assert_msg((t == 10000 && f == 1) || (t == 500000 && f == 0.5), "unpaired %g %g", t, f);
    }
    run_batch_free(&b);
    ck_assert_int_eq(load("encodings:\n  - name: a\n    type: rope\n"
                          "    zip: {rope_theta: 5, partial_rotary_factor: [[1], 2], factor: []}\n"
                          "  - name: b\n    type: rope\n"
                          "    zip: {a1: [1], a2: [1], a3: [1], a4: [1], a5: [1], a6: [1], a7: [1],"
                          " a8: [1], a9: [1]}\n"
                          "experiments: [{kind: decay}]\n", &b, &d), RL_ERR_PARSE);
    ck_assert_uint_eq(d.n, 4);
    ck_assert(has_msg(&d, "t.yaml:5:23: encodings[0].zip.rope_theta: a zip member must be a list"));
    ck_assert(has_msg(&d, "encodings[0].zip.partial_rotary_factor[0]: a swept value must be a scalar"));
    ck_assert(has_msg(&d, "encodings[0].zip.factor: an empty list sweeps over nothing"));
    ck_assert(has_msg(&d, "encodings[1].zip.a9: at most 8 keys per zip group"));
    run_diag_free(&d);
}
END_TEST

START_TEST(run_ids_are_stable_and_depend_only_on_parameters)
{
    run_batch a, b, c;
    run_diag d;
    /* the same run written differently (key order, 1e4 vs 10000, a comment)
     * has the same id; another value has another */
    ck_assert_int_eq(load("encodings: [{name: r, type: rope, rope_theta: 10000}]\n"
                          "experiments: [{kind: decay, params: {step: 2, max_distance: 8}}]\n",
                          &a, &d), RL_OK);
    ck_assert_int_eq(load("# comment\nexperiments:\n  - params: {max_distance: 8, step: 2}\n"
                          "    kind: decay\nencodings: [{type: rope, rope_theta: 1e4, name: r}]\n",
                          &b, &d), RL_OK);
    ck_assert_int_eq(load("encodings: [{name: r, type: rope, rope_theta: 10000}]\n"
                          "experiments: [{kind: decay, params: {step: 2, max_distance: 9}}]\n",
                          &c, &d), RL_OK);
    ck_assert_str_eq(a.items[0].id, b.items[0].id);
    ck_assert_str_ne(a.items[0].id, c.items[0].id);
    ck_assert_uint_eq(strlen(a.items[0].id), 16);
    run_batch_free(&a);
    run_batch_free(&b);
    run_batch_free(&c);
}
END_TEST

/* The loads (sum of run_item_cost) of the n shards of b's assignment;
 * every run must be in exactly one shard. Returns the largest load. */
static uint64_t shard_loads(const run_batch *b, uint32_t n, uint64_t *load, size_t *runs,
                            uint64_t *total, uint64_t *largest)
{
    uint32_t *sh = calloc(b->n_items, sizeof *sh);
    rl_error err = {0};
    ck_assert_int_eq(run_shard_assign(b, n, sh, &err), RL_OK);
    uint64_t mx = 0;
    *total = *largest = 0;
    for (uint32_t s = 0; s < n; s++)
        load[s] = 0, runs[s] = 0;
    for (size_t i = 0; i < b->n_items; i++) {
        ck_assert_uint_lt(sh[i], n); /* exactly one shard: its index is one number < n */
        uint64_t c = run_item_cost(&b->items[i]);
        load[sh[i]] += c;
        runs[sh[i]]++;
        *total += c;
        if (c > *largest)
            *largest = c;
    }
    for (uint32_t s = 0; s < n; s++)
        if (load[s] > mx)
            mx = load[s];
    free(sh);
    return mx;
}

static const char *sweep25 =
    "experiments:\n  - kind: decay\n    params: {max_distance: [1000, 2000, 3000, 4000, 5000, "
    "6000, 7000, 8000, 9000, 10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000, 18000, "
    "19000, 20000, 21000, 22000, 23000, 24000, 25000]}\n";

/* A 25-run sweep splits within 1.5x of the mean load for N = 2, 3, 8 (the
 * old hash % N put 25/0 for N = 2); printed as the balance table. */
static const char *entropy25 =
    "experiments:\n  - kind: entropy\n    params: {min_len: 64, max_len: [256, 512, 768, 1024, "
    "1280, 1536, 1792, 2048, 2304, 2560, 2816, 3072, 3328, 3584, 3840, 4096, 4352, 4608, 4864, "
    "5120, 5376, 5632, 5888, 6144, 6400]}\n";

START_TEST(shards_balance_a_sweep_by_cost)
{
    run_batch b;
    run_diag d;
    ck_assert_int_eq(load(_i ? entropy25 : sweep25, &b, &d), RL_OK);
    fprintf(stderr, "%s sweep of 25:\n", _i ? "entropy max_len" : "decay max_distance");
    ck_assert_uint_eq(b.n_items, 25);
    static const uint32_t ns[] = {2, 3, 8};
    for (size_t t = 0; t < 3; t++) {
        uint32_t n = ns[t];
        uint64_t loadv[8], total, largest;
        size_t runs[8];
        uint64_t mx = shard_loads(&b, n, loadv, runs, &total, &largest);
        double mean = (double)total / n;
        size_t hash_runs[8] = {0};
        uint64_t hash_load[8] = {0}, hash_mx = 0;
        for (size_t i = 0; i < b.n_items; i++) {
            hash_runs[b.items[i].hash % n]++;
            hash_load[b.items[i].hash % n] += run_item_cost(&b.items[i]);
        }
        for (uint32_t s = 0; s < n; s++)
            hash_mx = hash_load[s] > hash_mx ? hash_load[s] : hash_mx;
        fprintf(stderr, "balance N=%u: max/mean cost %.3f (hash %% N: %.3f); runs per shard", n,
                (double)mx / mean, (double)hash_mx / mean);
        for (uint32_t s = 0; s < n; s++)
            fprintf(stderr, " %zu", runs[s]);
        fprintf(stderr, " (hash %% N:");
        for (uint32_t s = 0; s < n; s++)
            fprintf(stderr, " %zu", hash_runs[s]);
        fprintf(stderr, ")\n");
        ck_assert_double_le((double)mx, 1.5 * mean);
        for (uint32_t s = 0; s < n; s++)
            ck_assert_uint_gt(runs[s], 0);
    }
    run_batch_free(&b);
}
END_TEST

/* A mix whose largest run outweighs the mean: list scheduling's bound,
 * max load <= mean + (1 - 1/N) * largest run, and every run in one shard. */
START_TEST(shards_of_a_mix_meet_the_list_scheduling_bound)
{
    run_batch b;
    run_diag d;
    ck_assert_int_eq(load("experiments:\n  - kind: decay\n    params: {max_distance: [1000, 2000, "
                          "3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000, 11000, 12000, 13000]}\n"
                          "  - kind: entropy\n    params: {max_len: [128, 256, 512, 1024, 2048, "
                          "4096]}\n  - kind: retrieval\n    params: {max_len: [256, 512, 1024, 2048,"
                          " 4096, 8192]}\n", &b, &d), RL_OK);
    ck_assert_uint_eq(b.n_items, 25);
    for (uint32_t n = 2; n <= 8; n++) {
        uint64_t loadv[8], total, largest;
        size_t runs[8];
        uint64_t mx = shard_loads(&b, n, loadv, runs, &total, &largest);
        ck_assert_double_le((double)mx, (double)total / n + (1.0 - 1.0 / n) * (double)largest);
    }
    /* the attention cost: tokens^2 * heads * head_dim (heads 4, head_dim 64) */
    int seen = 0;
    for (size_t i = 0; i < b.n_items; i++)
        if (!strcmp(b.items[i].kind->name, "retrieval") &&
            json_integer_value(json_object_get(json_object_get(b.items[i].resolved, "params"),
                                               "max_len")) == 8192) {
            ck_assert_uint_eq(run_item_cost(&b.items[i]), 8192ull * 8192ull * 4ull * 64ull);
            seen = 1;
        }
    ck_assert(seen);
    run_batch_free(&b);
}
END_TEST

/* The assignment depends on the plan alone: the same runs written in
 * another order (and loaded twice) get the same shard each; the shards of
 * 0..N-1 partition the plan. */
START_TEST(shards_partition_the_plan_whatever_its_order)
{
    run_batch a, r;
    run_diag d;
    ck_assert_int_eq(load("experiments:\n  - kind: decay\n    params: {max_distance: [1, 2, 3, 4, 5, "
                          "6, 7, 8, 9, 10, 11, 12, 13], step: [1, 2, 3]}\n", &a, &d), RL_OK);
    ck_assert_int_eq(load("experiments:\n  - kind: decay\n    params: {step: [3, 2, 1], "
                          "max_distance: [13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1]}\n", &r, &d),
                     RL_OK);
    ck_assert_uint_eq(a.n_items, 39);
    ck_assert_uint_eq(r.n_items, 39);
    uint32_t sa[39], sr[39];
    rl_error err = {0};
    for (uint32_t n = 1; n <= 5; n++) {
        ck_assert_int_eq(run_shard_assign(&a, n, sa, &err), RL_OK);
        ck_assert_int_eq(run_shard_assign(&r, n, sr, &err), RL_OK);
        for (size_t i = 0; i < a.n_items; i++) {
            ck_assert_uint_lt(sa[i], n);
            int found = 0;
            for (size_t k = 0; k < r.n_items; k++)
                if (!strcmp(a.items[i].id, r.items[k].id)) {
                    ck_assert_uint_eq(sa[i], sr[k]);
                    found++;
                }
            ck_assert_int_eq(found, 1);
        }
    }
    run_batch_free(&a);
    run_batch_free(&r);
}
END_TEST

/* --shard and the Slurm variables: strict decimal, offsets by TASK_MIN,
 * refusals naming the variable. */
static const struct {
    const char *spec, *id, *min, *max, *count, *step;
    int ok;
    uint32_t index, n;
    const char *msg;
} shard_cases[] = {
    {"2/4", NULL, NULL, NULL, NULL, NULL, 1, 2, 4, NULL},
    {"4/4", NULL, NULL, NULL, NULL, NULL, 0, 0, 0, "0 <= I < N"},
    {"x", NULL, NULL, NULL, NULL, NULL, 0, 0, 0, "expected I/N"},
    {"0x1/4", NULL, NULL, NULL, NULL, NULL, 0, 0, 0, "in decimal"},
    {"+1/4", NULL, NULL, NULL, NULL, NULL, 0, 0, 0, "in decimal"},
    {"1/ 4", NULL, NULL, NULL, NULL, NULL, 0, 0, 0, "in decimal"},
    /* one number rule (rl_parse_u64): a leading zero is refused, never octal */
    {"010/12", NULL, NULL, NULL, NULL, NULL, 0, 0, 0, "expected I/N in decimal"},
    /* --shard wins over the environment */
    {"1/2", "5", "1", "8", "8", NULL, 1, 1, 2, NULL},
    {NULL, NULL, NULL, NULL, NULL, NULL, 1, 0, 1, NULL},
    /* --array=1-8: task 8 is shard 7/8, task 1 shard 0/8 */
    {NULL, "8", "1", "8", "8", "1", 1, 7, 8, NULL},
    {NULL, "1", "1", "8", "8", "1", 1, 0, 8, NULL},
    {NULL, "3", "1", "8", NULL, NULL, 1, 2, 8, NULL},  /* count from MAX - MIN + 1 */
    {NULL, "2", "0", NULL, "3", NULL, 1, 2, 3, NULL},
    {NULL, "4", NULL, NULL, NULL, NULL, 0, 0, 0, "SLURM_ARRAY_TASK_MIN"},
    {NULL, "4", "0", NULL, NULL, NULL, 0, 0, 0, "give --shard"},
    {NULL, "4", "0", "15", "8", "2", 0, 0, 0, "SLURM_ARRAY_TASK_STEP=2"},
    {NULL, "3", "1", "7", "3", NULL, 0, 0, 0, "not contiguous"},       /* --array=1,3,7 */
    {NULL, "0x2", "0", "3", "4", NULL, 0, 0, 0, "SLURM_ARRAY_TASK_ID='0x2'"},
    {NULL, "2", "-1", "3", "4", NULL, 0, 0, 0, "SLURM_ARRAY_TASK_MIN='-1'"},
    {NULL, "2", "0", "3", " 4", NULL, 0, 0, 0, "SLURM_ARRAY_TASK_COUNT=' 4'"},
    {NULL, "9", "1", "8", "8", NULL, 0, 0, 0, "outside"},
};

START_TEST(shard_spec_and_slurm_variables)
{
    const char *vars[] = {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX",
                          "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_STEP"};
    const char *vals[] = {shard_cases[_i].id, shard_cases[_i].min, shard_cases[_i].max,
                          shard_cases[_i].count, shard_cases[_i].step};
    for (size_t v = 0; v < 5; v++) {
        if (vals[v])
            setenv(vars[v], vals[v], 1);
        else
            unsetenv(vars[v]);
    }
    uint32_t si = 99, sn = 99;
    rl_error err = {0};
    rl_status st = run_shard_parse(shard_cases[_i].spec, &si, &sn, &err);
    if (shard_cases[_i].ok) {
        ck_assert_msg(st == RL_OK, "case %d: %s", _i, err.msg);
        ck_assert_uint_eq(si, shard_cases[_i].index);
        ck_assert_uint_eq(sn, shard_cases[_i].n);
    } else {
        ck_assert_int_eq(st, RL_ERR_ARG);
        ck_assert_msg(strstr(err.msg, shard_cases[_i].msg), "case %d: '%s' lacks '%s'", _i,
                      err.msg, shard_cases[_i].msg);
    }
    for (size_t v = 0; v < 5; v++)
        unsetenv(vars[v]);
}
END_TEST

/* Each bad input, the position and key path reported, and the message. */
static const struct {
    const char *body, *where, *msg;
} bad[] = {
    {"experiments: [{kind: decay, params: {max_distanse: 4}}]\n", "t.yaml:2:38: experiments[0].params.max_distanse",
     "did you mean 'max_distance'?"},
    {"experiments: [{kind: decai}]\n", "experiments[0].kind", "did you mean 'decay'?"},
    {"experiments: [{kind: qqqqqqqqqq}]\n", "experiments[0].kind",
     "known kinds: decay, precision, invariance, coverage, interpolation, entropy, retrieval, "
     "content_retrieval, "
     "distortion"},
    {"experiments:\n  - kind: precision\n    params: {tokens: -3}\n", "t.yaml:4:22: experiments[0].params.tokens",
     "-3 is below the minimum 1"},
    {"experiments:\n  - kind: precision\n    params: {tokens: abc}\n", "experiments[0].params.tokens",
     "must be an integer (got 'abc')"},
    {"data: {source: gausian}\nexperiments: [{kind: decay}]\n", "data.source", "did you mean 'gaussian'?"},
    {"experimnets: []\n", "experimnets", "did you mean 'experiments'?"},
    {"experiments: [{kind: decay, params: {zip: {max_distance: [1, 2], step: [1]}}}]\n",
     "params.zip.step", "equal lengths"},
    {"experiments: [{kind: decay, params: {max_distance: []}}]\n", "max_distance", "empty list"},
    {"experiments: [{kind: decay, encodings: [ropee]}]\n", "experiments[0].encodings",
     "no encoding named 'ropee'; did you mean 'rope'?"},
    {"encodings: [{name: y, type: yarn, factor: 0.5}]\nexperiments: [{kind: decay}]\n",
     "t.yaml:2:35: encodings[0].factor", "type yarn: factor 0.5 is below the minimum 1"},
    {"encodings: [{name: a, type: alibii}]\nexperiments: [{kind: decay}]\n",
     "t.yaml:2:29: encodings[0].type",
     "unknown encoding type 'alibii'; did you mean 'alibi'? (encoding families: nope, rope, "
     "sinusoidal, learned, t5, alibi, xl, kerple, xpos; RoPE scalings: default, linear, ntk, "
     "dynamic, "
     "yarn, llama3, longrope, proportional"},
    {"encodings: [{name: a, type: [linear, qqqqqqqq]}]\nexperiments: [{kind: decay}]\n",
     "encodings[0].type[1]", "unknown encoding type 'qqqqqqqq' (encoding families:"},
    {"encodings: [{name: a, type: alibi, factor: 4}]\nexperiments: [{kind: decay}]\n",
     "t.yaml:2:36: encodings[0].factor",
     "'factor' is not a parameter of type 'alibi'; its parameters: bidirectional, max_bias"},
    {"encodings: [{name: a, type: [linear, llama3], factor: 8, low_freq_factor: 1, "
     "high_freq_factor: 4}]\nexperiments: [{kind: decay}]\n",
     "t.yaml:2:58: encodings[0].low_freq_factor",
     "'low_freq_factor' has no effect with type linear (it is read by llama3)"},
    /* a registered scaling's own key (truncated's truncate_b) follows the same rule */
    {"encodings: [{name: a, type: [yarn, truncated], factor: 4, truncate_b: 0.01}]\n"
     "experiments: [{kind: decay}]\n",
     "encodings[0].truncate_b", "'truncate_b' has no effect with type yarn (it is read by truncated)"},
    {"encodings: [{name: a, type: [truncated, yarn], truncate_b: 0.01, beta_fast: 8}]\n"
     "experiments: [{kind: decay}]\n",
     "encodings[0].beta_fast",
     "'beta_fast' has no effect with type truncated (it is read by yarn, dynamic_yarn)"},
    {"data: {source: npy, q: /nonexistent/q.npy}\nexperiments: [{kind: precision}]\n", "data",
     "cannot open"},
    {"experiments: [{kind: decay}\n", "t.yaml:3:1", "YAML syntax error"},
};

START_TEST(each_error_is_reported_with_position_path_and_message)
{
    run_batch b;
    run_diag d;
    ck_assert_int_eq(load(bad[_i].body, &b, &d), RL_ERR_PARSE);
    ck_assert_msg(has_msg(&d, bad[_i].where) && has_msg(&d, bad[_i].msg),
                  "case %d: want '%s' ... '%s', got: %s", _i, bad[_i].where, bad[_i].msg,
                  d.n ? d.msg[0] : "(nothing)");
    run_diag_free(&d);
}
END_TEST

static rl_status load_full(const char *text, run_batch *b, run_diag *d);

/* The failing key comes as data (rl_error.key) from the validator that
 * refused it, never from the message's text: a message that starts with
 * the scaling's name, one that names other written keys before or beside
 * the failing one, an experiment kind's check (whose messages name
 * attn_window, attn_sinks, ... as well), a zip member, and a key the entry
 * does not write (at the type, or the entry). */
START_TEST(errors_are_located_by_their_key_not_their_message)
{
    run_batch b;
    run_diag d;
    /* message starts with "llama3 needs ..." in resolve; the setter refuses 0 first, by key */
    ck_assert_int_eq(load("encodings:\n"
                          "  - name: l\n"
                          "    type: llama3\n"
                          "    factor: 8\n"
                          "    high_freq_factor: 4\n"
                          "    low_freq_factor: 0\n"
                          "  - name: m\n"
                          "    type: llama3\n"
                          "    low_freq_factor: 4\n"
                          "    factor: 8\n"
                          "    high_freq_factor: 1\n"
                          "experiments: [{kind: decay}]\n", &b, &d), RL_ERR_PARSE);
    ck_assert_uint_eq(d.n, 2);
    ck_assert(has_msg(&d, "t.yaml:7:5: encodings[0].low_freq_factor: type llama3: "
                          "low_freq_factor 0 must be > 0"));
    /* low_freq_factor is written first and named in the message: the key is
     * high_freq_factor all the same */
    ck_assert(has_msg(&d, "t.yaml:12:5: encodings[1].high_freq_factor: type llama3: "
                          "high_freq_factor 1 must be at least low_freq_factor 4"));
    run_diag_free(&d);
    /* a message that starts with the scaling's name and names rotary_dim,
     * written first, as well: at partial_rotary_factor, the key refused */
    ck_assert_int_eq(load("encodings:\n"
                          "  - name: p\n"
                          "    type: proportional\n"
                          "    rotary_dim: 32\n"
                          "    partial_rotary_factor: 0.5\n"
                          "experiments: [{kind: decay}]\n", &b, &d), RL_ERR_PARSE);
    ck_assert(has_msg(&d, "t.yaml:6:5: encodings[0].partial_rotary_factor: type proportional: "
                          "proportional takes partial_rotary_factor or rotary_dim, not both"));
    run_diag_free(&d);
    /* a key the entry does not write: at its type */
    ck_assert_int_eq(load("encodings:\n  - {name: y, type: longrope, factor: 4}\n"
                          "experiments: [{kind: decay}]\n", &b, &d), RL_ERR_PARSE);
    ck_assert(has_msg(&d, "t.yaml:3:21: encodings[0].type: type longrope: longrope needs "
                          "short_factor"));
    run_diag_free(&d);
    /* the kinds' checks at the key they name, among params whose names the
     * message repeats; a zip member at its list; a key given nowhere in the
     * entry (from the model) at the entry */
    ck_assert_int_eq(load("encodings: [{name: r, type: rope}]\n"
                          "experiments:\n"
                          "  - kind: entropy\n"
                          "    params:\n"
                          "      attn_window: 8\n"
                          "      attn_sinks: 2\n"
                          "      min_len: 64\n"
                          "      max_len: 128\n"
                          "      sink_tokens: 4\n"
                          "  - kind: entropy\n"
                          "    params: {attn_remap: self_extend, attn_remap_group: 4, "
                          "attn_remap_window: 6}\n"
                          "  - kind: entropy\n"
                          "    params: {attn_remap: self_extend, attn_remap_group: 4, "
                          "zip: {attn_remap_window: [6, 8], min_len: [64, 64]}}\n",
                          &b, &d), RL_ERR_PARSE);
    ck_assert_uint_eq(d.n, 3);
    ck_assert(has_msg(&d, "t.yaml:10:20: experiments[0].params.sink_tokens: entropy: "
                          "sink_tokens 4 with attn_window 8 / attn_chunk 0 needs attn_sinks >= 4"));
    ck_assert(has_msg(&d, "t.yaml:12:79: experiments[1].params.attn_remap_window: entropy: "
                          "attn_remap_window 6 is not a multiple of attn_remap_group 4"));
    ck_assert(has_msg(&d, "t.yaml:14:85: experiments[2].params.attn_remap_window: entropy: "
                          "attn_remap_window 6 is not a multiple of attn_remap_group 4"));
    run_diag_free(&d);
    /* the data section's rules by key, the model swept (checked per point) or not */
    for (int swept = 0; swept < 2; swept++) {
        char text[512];
        snprintf(text, sizeof text,
                 "model: {head_dim: 64, heads: 4, train_len: %s}\n"
                 "encodings: [{name: r, type: rope}]\n"
                 "data:\n  source: structured\n  band_lo: 0.6\n  band_hi: 0.2\n"
                 "experiments: [{kind: entropy, params: {max_len: 128}}]\n",
                 swept ? "[1024, 2048]" : "1024");
        ck_assert_int_eq(load_full(text, &b, &d), RL_ERR_PARSE);
        ck_assert_msg(has_msg(&d, "t.yaml:5:12: data.band_lo: band_lo 0.6 must be below "
                                  "band_hi 0.2"), "%s", d.n ? d.msg[0] : "");
        run_diag_free(&d);
    }
    ck_assert_int_eq(load("data:\n  source: npy\n  q: /nonexistent/q.npy\n"
                          "experiments: [{kind: precision}]\n", &b, &d), RL_ERR_PARSE);
    ck_assert(has_msg(&d, "t.yaml:4:6: data.q: /nonexistent/q.npy: cannot open"));
    run_diag_free(&d);
    /* the model's own checks by key: kv_heads, whose message names heads */
    ck_assert_int_eq(load_full("model:\n  heads: 4\n  kv_heads: 3\n  head_dim: 64\n"
                               "  train_len: 1024\nexperiments: [{kind: decay}]\n", &b, &d),
                     RL_ERR_PARSE);
    ck_assert(has_msg(&d, "t.yaml:3:13: model.kv_heads: kv_heads 3 does not divide heads 4"));
    run_diag_free(&d);
}
END_TEST

/* `type` is swept like any other key: one run per type, each created as
 * its own family or scaling; the model's train_len is the length yarn
 * extends when the batch gives none. */
START_TEST(type_sweeps_over_families_and_scalings)
{
    run_batch b;
    run_diag d;
    ck_assert_int_eq(load("encodings:\n  - {name: s, type: [linear, ntk, yarn], factor: 4}\n"
                          "  - {name: f, type: [rope, alibi, t5]}\n"
                          "experiments:\n  - kind: decay\n    encodings: [s]\n"
                          "  - kind: entropy\n    encodings: [f]\n    params: {max_len: 128}\n",
                          &b, &d), RL_OK);
    ck_assert_uint_eq(b.n_items, 6);
    const char *want[] = {"linear", "ntk", "yarn", "rope", "alibi", "t5"};
    for (size_t i = 0; i < 6; i++) {
        const json_t *e = json_object_get(b.items[i].resolved, "encoding");
        ck_assert_str_eq(json_string_value(json_object_get(e, "type")), want[i]);
        ck_assert_str_eq(json_string_value(json_object_get(b.items[i].swept, "encoding.type")),
                         want[i]);
        const json_t *rt = json_object_get(b.items[i].enc_params, "rope_type");
        if (i < 3)
            ck_assert_str_eq(json_string_value(rt), want[i]);
        else
            ck_assert_ptr_null(rt);
    }
    ck_assert_int_eq(json_integer_value(json_object_get(b.items[2].enc_params,
                                                        "original_max_position_embeddings")),
                     1024);
    ck_assert_ptr_null(json_object_get(b.items[0].enc_params, "original_max_position_embeddings"));
    run_batch_free(&b);
    /* a key one type of the sweep does not take: that combination, at the key */
    ck_assert_int_eq(load("encodings:\n  - name: s\n    type: [linear, alibi]\n    factor: 4\n"
                          "experiments: [{kind: entropy}, {kind: retrieval}]\n", &b, &d),
                     RL_ERR_PARSE);
    ck_assert_uint_eq(d.n, 1);
    ck_assert_str_eq(d.msg[0], "t.yaml:5:5: encodings[0].factor: 'factor' is not a parameter of "
                               "type 'alibi'; its parameters: bidirectional, max_bias");
    run_diag_free(&d);
    /* a key for some types only: zipped with the type, null for the others */
    ck_assert_int_eq(load("encodings:\n  - name: z\n    factor: 4\n"
                          "    zip: {type: [linear, yarn], beta_fast: [null, 16]}\n"
                          "experiments: [{kind: decay}]\n", &b, &d), RL_OK);
    ck_assert_uint_eq(b.n_items, 2);
    ck_assert_int_eq(json_integer_value(json_object_get(b.items[1].enc_params, "beta_fast")), 16);
    ck_assert_str_eq(json_string_value(json_object_get(b.items[1].enc_params, "rope_type")),
                     "yarn");
    run_batch_free(&b);
    ck_assert_int_eq(load("encodings:\n  - name: z\n    factor: 4\n"
                          "    zip: {type: [linear, yarn], beta_fast: [8, 16]}\n"
                          "experiments: [{kind: decay}]\n", &b, &d), RL_ERR_PARSE);
    ck_assert_uint_eq(d.n, 1);
    /* the readers listed come from rope_type_uses_key's table (yarn first) */
    const char *want_lin = "t.yaml:5:33: encodings[0].beta_fast: 'beta_fast' has no effect "
                       "with type linear (it is read by yarn";
    ck_assert_msg(!strncmp(d.msg[0], want_lin, strlen(want_lin)), "got: %s", d.msg[0]);
    run_diag_free(&d);
}
END_TEST

/* One pass reports schema, model and encoding errors together, each
 * encoding error at its key's line and once, however many experiments and
 * sweep points meet it. */
START_TEST(encoding_errors_come_with_schema_errors_at_their_keys)
{
    run_batch b;
    run_diag d;
    ck_assert_int_eq(load("encodings:\n  - name: y\n    type: yarn\n    factor: 0.5\n"
                          "  - {name: a, type: alibii}\n"
                          "experiments:\n  - kind: decay\n    params: {stepp: 2}\n"
                          "  - kind: precision\n    params: {tokens: [4, 8]}\n"
                          "  - kind: coverage\n", &b, &d), RL_ERR_PARSE);
    ck_assert_msg(d.n == 3, "%zu errors: %s", d.n, d.n ? d.msg[0] : "");
    ck_assert(has_msg(&d, "t.yaml:5:5: encodings[0].factor: type yarn: factor 0.5 is below the minimum 1"));
    ck_assert(has_msg(&d, "t.yaml:6:21: encodings[1].type: unknown encoding type 'alibii'; did "
                          "you mean 'alibi'?"));
    ck_assert(has_msg(&d, "t.yaml:9:14: experiments[0].params.stepp: unknown key; did you mean "
                          "'step'?"));
    run_diag_free(&d);
    /* with the model itself wrong, the keys a family does not take still come */
    const char *text = "model: {head_dim: 63, heads: 1, train_len: 64}\n"
                       "encodings: [{name: a, type: alibi, factor: 2}]\n"
                       "experiments: [{kind: decay}]\n";
    rl_error err = {0};
    ck_assert_int_eq(run_batch_parse("t.yaml", text, strlen(text), ".", &b, &d, &err),
                     RL_ERR_PARSE);
    ck_assert(has_msg(&d, "head_dim 63 must be even"));
    ck_assert(has_msg(&d, "encodings[0].factor: 'factor' is not a parameter of type 'alibi'"));
    run_diag_free(&d);
}
END_TEST

/* An encoding is created once per distinct (settings, model shape) while
 * the batch loads (run_enc_check's set), never once for a shape and
 * trusted for another: under a swept head_dim, rotary_dim 12 is valid at
 * 16 and refused at 8, whichever point comes first, and the runs that
 * share a valid (settings, shape) all load. */
START_TEST(an_encoding_is_validated_per_model_shape_not_per_settings)
{
    run_batch b;
    run_diag d;
    static const char *const heads[] = {"[16, 8]", "[8, 16]"};
    for (int i = 0; i < 2; i++) {
        char t[512];
        snprintf(t, sizeof t,
                 "model: {head_dim: %s, heads: 1, train_len: 64}\n"
                 "encodings: [{name: r, type: rope, rotary_dim: 12}]\n"
                 "experiments: [{kind: decay}, {kind: coverage}]\n", heads[i]);
        ck_assert_int_eq(load_full(t, &b, &d), RL_ERR_PARSE);
        ck_assert_msg(has_msg(&d, "rotary_dim 12 exceeds head_dim 8"), "%zu: %s", d.n,
                      d.n ? d.msg[0] : "");
        ck_assert(!has_msg(&d, "head_dim 16"));
        run_diag_free(&d);
    }
    /* the same settings and shape under two kinds and three seeds: six runs */
    const char *ok = "model: {head_dim: 16, heads: 1, train_len: 64}\n"
                     "seed: [1, 2, 3]\n"
                     "encodings: [{name: r, type: rope, rotary_dim: 12}]\n"
                     "experiments: [{kind: decay}, {kind: coverage}]\n";
    ck_assert_int_eq(load_full(ok, &b, &d), RL_OK);
    ck_assert_uint_eq(b.n_items, 6);
    run_batch_free(&b);
    run_diag_free(&d);
}
END_TEST

/* A sampled query_rows too few for a mean and its interval at some pass's
 * length (rl_rows_min_rows: log_groups needs 2 rows in each position
 * group of two or more tokens) is refused at load, at the key, naming the
 * longest such length and the minimum; those passes wrote NaN rows into a
 * run that "passed". At the minimum, and with every row, the batch loads. */
START_TEST(too_few_sampled_query_rows_are_refused_at_load)
{
    run_batch b;
    run_diag d;
    ck_assert_int_eq(load("encodings: [{name: r, type: rope}]\n"
                          "experiments:\n"
                          "  - {kind: entropy, params: {min_len: 256, max_len: 1024, query_rows: 16}}\n"
                          "  - {kind: distortion, params: {length: 512, query_rows: 17}}\n"
                          "  - {kind: entropy, params: {min_len: 8, max_len: 64, query_rows: 1, "
                          "query_sampling: uniform}}\n", &b, &d), RL_ERR_PARSE);
    ck_assert_msg(d.n == 3, "%zu errors: %s", d.n, d.n ? d.msg[0] : "");
    ck_assert(has_msg(&d, "experiments[0].params.query_rows: entropy: query_rows 16 is too few for "
                          "query_sampling log_groups at 1024 tokens: a mean and its 95 % interval "
                          "need at least 20 rows"));
    ck_assert(has_msg(&d, "experiments[1].params.query_rows: distortion: query_rows 17 is too few "
                          "for query_sampling log_groups at 512 tokens"));
    ck_assert(has_msg(&d, "experiments[2].params.query_rows: entropy: query_rows 1 is too few for "
                          "query_sampling uniform at 64 tokens: a mean and its 95 % interval need "
                          "at least 2 rows"));
    run_diag_free(&d);
    ck_assert_int_eq(load("encodings: [{name: r, type: rope}]\n"
                          "experiments:\n"
                          "  - {kind: entropy, params: {min_len: 256, max_len: 1024, query_rows: 20}}\n"
                          "  - {kind: distortion, params: {length: 512, query_rows: 18}}\n"
                          "  - {kind: entropy, params: {min_len: 8, max_len: 64, query_rows: 64}}\n"
                          "  - {kind: entropy, params: {min_len: 8, max_len: 64, query_rows: 1, "
                          "query_sampling: last}}\n", &b, &d), RL_OK);
    ck_assert_uint_eq(b.n_items, 4);
    run_batch_free(&b);
    run_diag_free(&d);
}
END_TEST

/* Loads text as it is (no base prefix). */
static rl_status load_full(const char *text, run_batch *b, run_diag *d)
{
    rl_error err = {0};
    return run_batch_parse("t.yaml", text, strlen(text), ".", b, d, &err);
}

/* `seed: [..]` is one axis over every experiment: each run one seed, the
 * data section's seed following it unless the data section gives its own;
 * a scalar seed plans as before; duplicates and an empty list are refused. */
START_TEST(a_seed_list_sweeps_every_experiment)
{
    run_batch b;
    run_diag d;
    static const char head[] = "model: {head_dim: 8, heads: 1, train_len: 256}\n";
    char text[1024];
    snprintf(text, sizeof text, "%sseed: [3, 5, 9]\ndata: {source: gaussian}\n"
             "experiments: [{kind: decay}, {kind: entropy}]\n", head);
    ck_assert_int_eq(load_full(text, &b, &d), RL_OK);
    ck_assert_uint_eq(b.n_items, 6);
    int seen[10] = {0};
    for (size_t i = 0; i < b.n_items; i++) {
        json_t *r = b.items[i].resolved;
        json_int_t sd = json_integer_value(json_object_get(r, "seed"));
        ck_assert(sd == 3 || sd == 5 || sd == 9);
        seen[sd]++;
        if (!strcmp(b.items[i].kind->name, "entropy"))
            ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "data"), "seed")),
                             sd);
        for (size_t k = 0; k < i; k++)
            ck_assert_str_ne(b.items[i].id, b.items[k].id);
    }
    ck_assert(seen[3] == 2 && seen[5] == 2 && seen[9] == 2);
    run_batch_free(&b);
    /* the data section's own seed stays */
    snprintf(text, sizeof text, "%sseed: [3, 5]\ndata: {source: gaussian, seed: 7}\n"
             "experiments: [{kind: entropy}]\n", head);
    ck_assert_int_eq(load_full(text, &b, &d), RL_OK);
    ck_assert_uint_eq(b.n_items, 2);
    for (size_t i = 0; i < b.n_items; i++)
        ck_assert_int_eq(json_integer_value(json_object_get(
                             json_object_get(b.items[i].resolved, "data"), "seed")), 7);
    run_batch_free(&b);
    snprintf(text, sizeof text, "%sseed: [3, 3]\nexperiments: [{kind: decay}]\n", head);
    ck_assert_int_eq(load_full(text, &b, &d), RL_ERR_PARSE);
    ck_assert(has_msg(&d, "seed[1]: seed 3 is listed twice"));
    run_diag_free(&d);
    snprintf(text, sizeof text, "%sseed: []\nexperiments: [{kind: decay}]\n", head);
    ck_assert_int_eq(load_full(text, &b, &d), RL_ERR_PARSE);
    ck_assert(has_msg(&d, "seed: a seed list holds 1 to 64 seeds, got 0"));
    run_diag_free(&d);
}
END_TEST

/* An experiment's own `seed:` (value or list) replaces the batch's for its
 * runs alone: a seed sweep of one kind beside single-seed kinds in one
 * batch; its list is checked like the batch's, at its own key. */
START_TEST(an_experiment_sweeps_its_own_seeds)
{
    run_batch b;
    run_diag d;
    static const char head[] = "model: {head_dim: 8, heads: 1, train_len: 256}\n";
    char text[1024];
    snprintf(text, sizeof text, "%sseed: 4\ndata: {source: gaussian}\n"
             "experiments: [{kind: decay}, {kind: entropy, seed: [3, 5, 9]}, "
             "{kind: entropy, seed: 11, params: {max_len: 128}}]\n", head);
    ck_assert_int_eq(load_full(text, &b, &d), RL_OK);
    ck_assert_uint_eq(b.n_items, 5);
    int seen[12] = {0};
    for (size_t i = 0; i < b.n_items; i++) {
        json_t *r = b.items[i].resolved;
        json_int_t sd = json_integer_value(json_object_get(r, "seed"));
        ck_assert(sd >= 0 && sd < 12);
        seen[sd]++;
        if (!strcmp(b.items[i].kind->name, "decay"))
            ck_assert_int_eq(sd, 4); /* the batch's */
        else /* the data seed follows the run's */
            ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "data"),
                                                                "seed")), sd);
    }
    ck_assert(seen[4] == 1 && seen[3] == 1 && seen[5] == 1 && seen[9] == 1 && seen[11] == 1);
    run_batch_free(&b);
    snprintf(text, sizeof text, "%sexperiments: [{kind: decay}, {kind: entropy, seed: [2, 2]}, "
             "{kind: entropy, seed: [1, -1]}]\n", head);
    ck_assert_int_eq(load_full(text, &b, &d), RL_ERR_PARSE);
    ck_assert(has_msg(&d, "experiments[1].seed[1]: seed 2 is listed twice"));
    ck_assert(has_msg(&d, "experiments[2].seed[1]"));
    run_diag_free(&d);
}
END_TEST

/* `!list [...]` is one value; a plain list of them is a sweep of lists; a
 * plain list stays a sweep (and LongRoPE then says how to write a value). */
START_TEST(tagged_lists_are_values_and_plain_lists_sweep)
{
    run_batch b;
    run_diag d;
    static const char head[] = "model: {head_dim: 8, heads: 1, train_len: 256}\n"
                               "encodings:\n  - name: lr\n    type: longrope\n    factor: 4\n";
    char text[1024];
    snprintf(text, sizeof text, "%s%s", head,
             "    short_factor: !list [1.0, 1.0, 1.0, 1.0]\n"
             "    long_factor: [!list [1.0, 1.5, 2.0, 4.0], !list [1, 2, 3, 4]]\n"
             "experiments: [{kind: decay, params: {max_distance: 64, step: 8}}]\n");
    ck_assert_int_eq(load_full(text, &b, &d), RL_OK);
    ck_assert_uint_eq(b.n_items, 2);
    for (size_t i = 0; i < 2; i++) {
        const json_t *e = b.items[i].enc_params;
        ck_assert_uint_eq(json_array_size(json_object_get(e, "short_factor")), 4);
        const json_t *lf = json_object_get(e, "long_factor");
        ck_assert_uint_eq(json_array_size(lf), 4);
        ck_assert_double_eq(json_number_value(json_array_get(lf, 1)), i ? 2.0 : 1.5);
    }
    ck_assert_str_eq(json_string_value(json_object_get(b.items[0].swept, "encoding.long_factor")),
                     "[1,1.5,2,4]");
    ck_assert_ptr_null(json_object_get(b.items[0].swept, "encoding.short_factor"));
    run_batch_free(&b);
    /* a plain list sweeps: four runs whose short_factor is a number, one error */
    snprintf(text, sizeof text, "%s%s", head,
             "    short_factor: [1.0, 1.1, 1.2, 1.3]\n"
             "    long_factor: !list [1, 2, 3, 4]\n"
             "experiments: [{kind: decay}, {kind: coverage}]\n");
    ck_assert_int_eq(load_full(text, &b, &d), RL_ERR_PARSE);
    ck_assert_uint_eq(d.n, 1);
    ck_assert_str_eq(d.msg[0], "t.yaml:6:5: encodings[0].short_factor: type longrope: "
                               "short_factor must be a list of numbers (a plain list is a sweep; "
                               "a list that is one value is written !list [...])");
    run_diag_free(&d);
    /* !list where a parameter takes one value; unknown tags; !list on a scalar */
    ck_assert_int_eq(load("experiments: [{kind: decay, params: {step: !list [1, 2]}}]\n", &b, &d),
                     RL_ERR_PARSE);
    ck_assert(has_msg(&d, "t.yaml:2:44: experiments[0].params.step: takes an integer, not a list"));
    run_diag_free(&d);
    ck_assert_int_eq(load("experiments: [{kind: decay, params: {step: !seq [1, 2]}}]\n", &b, &d),
                     RL_ERR_PARSE);
    ck_assert(has_msg(&d, "t.yaml:2:44: unknown tag '!seq'"));
    run_diag_free(&d);
    ck_assert_int_eq(load("experiments: [{kind: decay, params: {step: !list 2}}]\n", &b, &d),
                     RL_ERR_PARSE);
    ck_assert(has_msg(&d, "!list marks a list"));
    run_diag_free(&d);
}
END_TEST

/* Reads a whole file into a malloc'd buffer (*len bytes). */
static char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    char *buf = malloc(1 << 20);
    ck_assert_ptr_nonnull(buf);
    *len = fread(buf, 1, 1 << 20, fp);
    fclose(fp);
    return buf;
}

/* manifest.json records how the batch ran and every file it read, with a
 * content-addressed copy; --resume refuses an input that changed since. */
START_TEST(manifest_records_inputs_and_resume_checks_their_hashes)
{
    char dir[128], cfg[200], bpath[200], out[200], src[600];
    snprintf(dir, sizeof dir, "/tmp/rl_manifest_%ld", (long)getpid());
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    snprintf(bpath, sizeof bpath, "%s/batch.yaml", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    mkdir(dir, 0755);
    snprintf(src, sizeof src, "%s/llama31.json", getenv("RL_TEST_DATA_DIR"));
    size_t n;
    char *orig = slurp(src, &n);
    FILE *fp = fopen(cfg, "wb");
    fwrite(orig, 1, n, fp);
    fclose(fp);
    fp = fopen(bpath, "w");
    fputs("model: {hf_config: config.json, head_dim: 16, heads: 2, kv_heads: 1, train_len: 64}\n"
          "encodings: [{name: native, type: model}, {set: rope-bases}]\n"
          "experiments: [{kind: decay, params: {max_distance: 8, step: 4}}]\n", fp);
    fclose(fp);
    run_batch b;
    run_diag d;
    rl_error err = {0};
    ck_assert_msg(run_batch_load(bpath, &b, &d, &err) == RL_OK, "%s", d.n ? d.msg[0] : err.msg);
    char *argv[] = {"ropelab", "run", bpath, "--resume"};
    run_options o = {.out = out, .quiet = 1, .argc = 4, .argv = argv, .version = "9.9",
                     .commit = "abc123"};
    run_outcome res;
    ck_assert_msg(run_batch_execute(&b, &o, &res, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(res.passed, b.n_items);
    char mpath[300];
    snprintf(mpath, sizeof mpath, "%s/manifest.json", out);
    json_t *man = json_load_file(mpath, 0, NULL);
    ck_assert_ptr_nonnull(man);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(man, "argv"), 2)), bpath);
    ck_assert_str_eq(json_string_value(json_object_get(man, "ropelab_version")), "9.9");
    ck_assert_str_eq(json_string_value(json_object_get(man, "ropelab_commit")), "abc123");
    char host[256];
    gethostname(host, sizeof host);
    ck_assert_str_eq(json_string_value(json_object_get(man, "host")), host);
    const json_t *in = json_object_get(man, "inputs");
    ck_assert_uint_eq(json_array_size(in), 2);
    const json_t *hf = NULL, *set = NULL;
    for (size_t i = 0; i < 2; i++) {
        const json_t *e = json_array_get(in, i);
        const char *role = json_string_value(json_object_get(e, "role"));
        if (!strcmp(role, "hf_config"))
            hf = e;
        else if (!strcmp(role, "encoding_set"))
            set = e;
    }
    ck_assert_ptr_nonnull(hf);
    ck_assert_ptr_nonnull(set);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(set, "path")),
                                 "encodings/rope-bases.yaml"));
    ck_assert_str_eq(json_string_value(json_object_get(hf, "path")), "config.json");
    ck_assert_str_eq(json_string_value(json_object_get(hf, "resolved")), cfg);
    ck_assert_int_eq(json_integer_value(json_object_get(hf, "bytes")), (json_int_t)n);
    /* the hash is SHA-256 of the bytes (rl_sha256, checked against the
     * standard vectors in test_core), the copy holds those bytes */
    char hex[65];
    rl_sha256_hex(orig, n, hex);
    ck_assert_str_eq(json_string_value(json_object_get(hf, "sha256")), hex);
    char cpath[400];
    snprintf(cpath, sizeof cpath, "%s/%s", out, json_string_value(json_object_get(hf, "copy")));
    ck_assert_ptr_nonnull(strstr(cpath, hex));
    ck_assert_ptr_nonnull(strstr(cpath, ".json"));
    size_t cn;
    char *copy = slurp(cpath, &cn);
    ck_assert(cn == n && memcmp(copy, orig, n) == 0);
    free(copy);
    json_decref(man);
    /* one byte changed: --resume refuses, naming the file */
    fp = fopen(cfg, "r+b");
    fseek(fp, 0, SEEK_END);
    fputc(' ', fp);
    fclose(fp);
    o.resume = 1;
    /* the batch as loaded noted the file it parsed: its snapshot refuses a
     * file replaced since the load */
    ck_assert_int_eq(run_batch_execute(&b, &o, &res, &err), RL_ERR_IO);
    ck_assert_msg(strstr(err.msg, "changed between the batch's load and its snapshot"), "%s",
                  err.msg);
    /* loaded again (what a new `ropelab run --resume` does) */
    run_batch_free(&b);
    ck_assert_msg(run_batch_load(bpath, &b, &d, &err) == RL_OK, "%s", d.n ? d.msg[0] : err.msg);
    ck_assert_int_eq(run_batch_execute(&b, &o, &res, &err), RL_ERR_ARG);
    ck_assert_msg(strstr(err.msg, "--resume: input config.json (hf_config) changed since") &&
                      strstr(err.msg, hex),
                  "%s", err.msg);
    /* restored: every run is complete */
    fp = fopen(cfg, "wb");
    fwrite(orig, 1, n, fp);
    fclose(fp);
    run_batch_free(&b);
    ck_assert_msg(run_batch_load(bpath, &b, &d, &err) == RL_OK, "%s", d.n ? d.msg[0] : err.msg);
    ck_assert_msg(run_batch_execute(&b, &o, &res, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(res.skipped, b.n_items);
    ck_assert_uint_eq(res.passed, 0);
    /* shards merged: the inputs once, their copies verified */
    char s0[256], s1[256], mg[256];
    snprintf(s0, sizeof s0, "%s/s0", dir);
    snprintf(s1, sizeof s1, "%s/s1", dir);
    snprintf(mg, sizeof mg, "%s/mg", dir);
    run_options so = {.quiet = 1, .shard_count = 2};
    so.out = s0;
    ck_assert_msg(run_batch_execute(&b, &so, &res, &err) == RL_OK, "%s", err.msg);
    so.out = s1;
    so.shard_index = 1;
    ck_assert_msg(run_batch_execute(&b, &so, &res, &err) == RL_OK, "%s", err.msg);
    const char *dirs[] = {s0, s1};
    run_merge_report rep;
    FILE *null = fopen("/dev/null", "w");
    ck_assert_msg(run_merge(dirs, 2, mg, &rep, null, &err) == RL_OK, "%s", err.msg);
    snprintf(mpath, sizeof mpath, "%s/manifest.json", mg);
    man = json_load_file(mpath, 0, NULL);
    ck_assert_uint_eq(json_array_size(json_object_get(man, "inputs")), 2);
    snprintf(cpath, sizeof cpath, "%s/inputs/%s.json", mg, hex);
    copy = slurp(cpath, &cn);
    ck_assert(cn == n && memcmp(copy, orig, n) == 0);
    free(copy);
    json_decref(man);
    /* a shard's copy that no longer has its hash is refused */
    snprintf(cpath, sizeof cpath, "%s/inputs/%s.json", s0, hex);
    fp = fopen(cpath, "r+b");
    fputc('#', fp);
    fclose(fp);
    snprintf(mg, sizeof mg, "%s/mg2", dir);
    ck_assert_int_eq(run_merge(dirs, 2, mg, &rep, null, &err), RL_ERR_IO);
    ck_assert_msg(strstr(err.msg, "does not match its record"), "%s", err.msg);
    fclose(null);
    run_batch_free(&b);
    free(orig);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(model_errors_come_together_with_other_errors)
{
    run_batch b;
    run_diag d;
    rl_error err = {0};
    const char *t = "model: {head_dim: 63, heads: 8, train_len: 10}\n"
                    "experiments: [{kind: decay, params: {stepp: 1}}, {kind: nope}]\n";
    ck_assert_int_eq(run_batch_parse("m.yaml", t, strlen(t), ".", &b, &d, &err), RL_ERR_PARSE);
    ck_assert_uint_eq(d.n, 3);
    ck_assert(has_msg(&d, "m.yaml:1:19: model.head_dim: head_dim 63 must be even"));
    ck_assert(has_msg(&d, "did you mean 'step'?"));
    ck_assert(has_msg(&d, "unknown experiment kind 'nope'"));
    run_diag_free(&d);
    t = "model: {head_dim: 63, heads: 8, kv_heads: 3, train_len: 10}\nexperiments: [{kind: decay}]\n";
    ck_assert_int_eq(run_batch_parse("m.yaml", t, strlen(t), ".", &b, &d, &err), RL_ERR_PARSE);
    ck_assert_uint_eq(d.n, 2);
    ck_assert(has_msg(&d, "m.yaml:1:19: model.head_dim: head_dim 63 must be even"));
    ck_assert(has_msg(&d, "m.yaml:1:43: model.kv_heads: kv_heads 3 does not divide heads 8"));
    run_diag_free(&d);
    /* A missing size does not hide the other shape errors. */
    t = "model: {head_dim: 63, heads: 8, kv_heads: 3}\nexperiments: [{kind: decay}]\n";
    ck_assert_int_eq(run_batch_parse("m.yaml", t, strlen(t), ".", &b, &d, &err), RL_ERR_PARSE);
    ck_assert_uint_eq(d.n, 3);
    ck_assert(has_msg(&d, "train_len is not given"));
    ck_assert(has_msg(&d, "model.head_dim: head_dim 63 must be even"));
    ck_assert(has_msg(&d, "model.kv_heads: kv_heads 3 does not divide heads 8"));
    run_diag_free(&d);
}
END_TEST

START_TEST(large_mappings_find_every_key_and_the_duplicate)
{
    /* 20000 keys: every key found at its own index (hashed index, not a
     * scan), and a repeated key reported with its position. */
    enum { N = 20000 };
    size_t cap = (size_t)N * 24 + 64, len = 0;
    char *text = malloc(cap);
    ck_assert_ptr_nonnull(text);
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(text + len, cap - len, "key%d: %d\n", i, i);
    run_node *root = NULL;
    rl_error err = {0};
    ck_assert_msg(run_yaml_parse("big.yaml", text, len, &root, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(root->n, N);
    for (int i = 0; i < N; i += 997) {
        char k[16];
        snprintf(k, sizeof k, "key%d", i);
        size_t at = 0;
        const run_node *v = run_node_get(root, k, &at);
        ck_assert_ptr_nonnull(v);
        ck_assert_uint_eq(at, (size_t)i);
        ck_assert_int_eq(atoi(v->text), i);
    }
    ck_assert_ptr_null(run_node_get(root, "key20000", NULL));
    run_node_free(root);
    len += (size_t)snprintf(text + len, cap - len, "key123: again\n");
    ck_assert_int_eq(run_yaml_parse("big.yaml", text, len, &root, &err), RL_ERR_PARSE);
    ck_assert_str_eq(err.msg, "big.yaml:20001:1: duplicate key 'key123'");
    free(text);
}
END_TEST

START_TEST(many_errors_are_each_reported_once)
{
    /* 20000 unknown keys: each its own diagnostic (hashed de-duplication,
     * not a scan per message), and a sweep that repeats one error (3
     * points, same bad key) still reports it once. */
    enum { N = 20000 };
    size_t cap = (size_t)N * 24 + 512, len = 0;
    char *text = malloc(cap);
    ck_assert_ptr_nonnull(text);
    len += (size_t)snprintf(text + len, cap - len, "%s", base);
    len += (size_t)snprintf(text + len, cap - len,
                            "experiments:\n  - kind: decay\n    params:\n"
                            "      step: [1, 2, 3]\n      max_distanse: 4\n");
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(text + len, cap - len, "      k%d: %d\n", i, i);
    run_batch b;
    run_diag d;
    rl_error err = {0};
    ck_assert_int_eq(run_batch_parse("t.yaml", text, len, ".", &b, &d, &err), RL_ERR_PARSE);
    ck_assert_uint_eq(d.n, N + 1);
    size_t bad = 0;
    for (size_t i = 0; i < d.n; i++)
        bad += strstr(d.msg[i], "max_distanse") != NULL;
    ck_assert_uint_eq(bad, 1);
    run_diag_free(&d);
    free(text);
}
END_TEST

START_TEST(edit_distance_counts_single_edits)
{
    ck_assert_uint_eq(run_edit_distance("kitten", "sitting"), 3);
    ck_assert_uint_eq(run_edit_distance("", "abc"), 3);
    ck_assert_uint_eq(run_edit_distance("same", "same"), 0);
}
END_TEST

START_TEST(preset_gives_model_shape)
{
    run_batch b;
    run_diag d;
    rl_error err = {0};
    const char *t = "model: {preset: llama-2-7b}\nexperiments: [{kind: decay, params: {max_distance: 4}}]\n";
    ck_assert_int_eq(run_batch_parse("p.yaml", t, strlen(t), ".", &b, &d, &err), RL_OK);
    const json_t *m = json_object_get(b.items[0].resolved, "model");
    /* Llama-2-7B: hidden 4096 / 32 heads = 128, 32 kv heads, 4096 positions */
    ck_assert_int_eq(json_integer_value(json_object_get(m, "head_dim")), 128);
    ck_assert_int_eq(json_integer_value(json_object_get(m, "kv_heads")), 32);
    ck_assert_int_eq(json_integer_value(json_object_get(m, "train_len")), 4096);
    run_batch_free(&b);
    t = "model: {preset: no-such-model}\nexperiments: [{kind: decay}]\n";
    ck_assert_int_eq(run_batch_parse("p.yaml", t, strlen(t), ".", &b, &d, &err), RL_ERR_PARSE);
    ck_assert(has_msg(&d, "no model preset 'no-such-model'"));
    run_diag_free(&d);
}
END_TEST

START_TEST(decay_bound_at_zero_is_mean_of_one_to_half_dim)
{
    /* At r = 0 every e^{i r theta_k} = 1, so |S_j| = j and the bound is
     * (1/(d/2)) sum_{j=1}^{d/2} j = (d/2 + 1) / 2: 16.5 for d = 64. The
     * constant-vector score is 1 there (normalised by head_dim). */
    run_batch b;
    run_diag d;
    ck_assert_int_eq(load("experiments: [{kind: decay, params: {max_distance: 0}}]\n", &b, &d),
                     RL_OK);
    exp_run r;
    run_item_to_exp(&b.items[0], &r);
    char dir[] = "/tmp/rl_decay_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    exp_sink sink;
    rl_error err = {0};
    ck_assert_int_eq(exp_sink_init(&sink, dir, &err), RL_OK);
    exp_ctx cx = {0};
    ck_assert_msg(b.items[0].kind->run(&r, &cx, &sink, &err) == RL_OK, "%s", err.msg);
    ck_assert_int_eq(exp_sink_end_table(&sink, &err), RL_OK);
    ck_assert_double_eq_tol(json_real_value(json_object_get(sink.metrics, "bound_r0")), 16.5, 1e-12);
    ck_assert_double_eq_tol(json_real_value(json_object_get(sink.metrics, "score_rmax")), 1.0, 1e-12);
    ck_assert(!sink.failed_verification);
    exp_sink_free(&sink);
    char path[64];
    snprintf(path, sizeof path, "%s/decay.csv", dir);
    ck_assert_int_eq(remove(path), 0);
    ck_assert_int_eq(rmdir(dir), 0);
    run_batch_free(&b);
}
END_TEST

START_TEST(results_csv_carries_a_tables_fields_as_they_are)
{
    /* a run's table read with the one CSV reader (core/rl_csv.h): an empty
     * cell stays in its column (a tokenizer that merges separators moved
     * "3" under column a), and a quoted x with a comma and a quote reaches
     * results.csv quoted, one field */
    char dir[] = "/tmp/rl_results_XXXXXX", path[96];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/summary.json", dir);
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs("{\"run_id\": \"r1\", \"kind\": \"decay\", \"metrics\": {},"
          " \"tables\": [{\"name\": \"t\", \"table\": \"t\", \"length\": 0}]}", fp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/t.csv", dir);
    fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs("x,a,b\n1,,3\n\"2,\"\"5\",7,8\n", fp);
    fclose(fp);
    json_t *keys = json_array(), *dirs = json_pack("[s]", dir);
    rl_error err = {0};
    ck_assert_msg(run_results_write(dir, keys, dirs, &err) == RL_OK, "%s", err.msg);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    rl_csv t;
    ck_assert_msg(rl_csv_read(path, &t, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(t.n, 5); /* header + (a, b) of two rows */
    int cm = rl_csv_col(&t.rows[0], "metric"), cx = rl_csv_col(&t.rows[0], "x"),
        cv = rl_csv_col(&t.rows[0], "value");
    ck_assert(cm >= 0 && cx >= 0 && cv >= 0);
    const char *want[4][3] = {{"t.a", "1", ""}, {"t.b", "1", "3"}, {"t.a", "2,\"5", "7"},
                              {"t.b", "2,\"5", "8"}};
    for (int i = 0; i < 4; i++) {
        const rl_csv_row *r = &t.rows[i + 1];
        ck_assert_str_eq(r->f[cm], want[i][0]);
        ck_assert_str_eq(r->f[cx], want[i][1]);
        ck_assert_str_eq(r->f[cv], want[i][2]);
        ck_assert_uint_eq(r->n, t.rows[0].n);
    }
    rl_csv_free(&t);
    json_decref(keys);
    json_decref(dirs);
    const char *files[] = {"results.csv", "t.csv", "summary.json"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        ck_assert_int_eq(remove(path), 0);
    }
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(hf_config_gives_shape_and_rope_settings)
{
    /* head_dim = hidden_size / num_attention_heads = 3072 / 24 = 128;
     * train_len from rope_scaling.original_max_position_embeddings */
    char dir[] = "/tmp/rl_hf_XXXXXX", path[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs("{\"hidden_size\": 3072, \"num_attention_heads\": 24, \"num_key_value_heads\": 8,"
          " \"max_position_embeddings\": 131072, \"rope_theta\": 500000.0,"
          " \"rope_scaling\": {\"rope_type\": \"default\", \"original_max_position_embeddings\": 8192}}",
          fp);
    fclose(fp);
    run_batch b;
    run_diag d;
    rl_error err = {0};
    const char *t = "model: {hf_config: config.json}\nencodings: [{name: m, type: model}]\n"
                    "experiments: [{kind: decay, params: {max_distance: 4}}]\n";
    ck_assert_msg(run_batch_parse("h.yaml", t, strlen(t), dir, &b, &d, &err) == RL_OK, "%s",
                  d.n ? d.msg[0] : err.msg);
    const json_t *m = json_object_get(b.items[0].resolved, "model");
    ck_assert_int_eq(json_integer_value(json_object_get(m, "head_dim")), 128);
    ck_assert_int_eq(json_integer_value(json_object_get(m, "heads")), 24);
    ck_assert_int_eq(json_integer_value(json_object_get(m, "kv_heads")), 8);
    ck_assert_int_eq(json_integer_value(json_object_get(m, "train_len")), 8192);
    const json_t *e = json_object_get(b.items[0].resolved, "encoding");
    ck_assert_str_eq(json_string_value(json_object_get(e, "type")), "rope");
    ck_assert_double_eq(json_number_value(json_object_get(e, "rope_theta")), 500000.0);
    run_batch_free(&b);
    ck_assert_int_eq(remove(path), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(hf_config_layer_type_picks_the_layers_encoding)
{
    /* Gemma 3 4B (tests/data/gemma3_4b.json): full layers rope_theta 1e6 with
     * linear factor 8, sliding layers rope_local_base_freq 10000. */
    const char *dir = getenv("RL_TEST_DATA_DIR");
    run_batch b;
    run_diag d;
    rl_error err = {0};
    const char *lt[] = {"", "layer_type: sliding_attention, "};
    const double theta[] = {1e6, 1e4};
    for (int i = 0; i < 2; i++) {
        char t[512];
        snprintf(t, sizeof t, "model: {%shf_config: gemma3_4b.json}\n"
                 "encodings: [{name: m, type: model}]\n"
                 "experiments: [{kind: decay, params: {max_distance: 4}}]\n", lt[i]);
        ck_assert_msg(run_batch_parse("g.yaml", t, strlen(t), dir ? dir : "tests/data", &b, &d,
                                      &err) == RL_OK, "%s", d.n ? d.msg[0] : err.msg);
        const json_t *e = json_object_get(b.items[0].resolved, "encoding");
        ck_assert_double_eq(json_number_value(json_object_get(e, "rope_theta")), theta[i]);
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(b.items[0].resolved,
                                                                            "model"), "head_dim")), 256);
        const char *got = json_string_value(json_object_get(json_object_get(b.items[0].resolved,
                                                                             "model"), "layer_type"));
        if (i == 1)
            ck_assert_str_eq(got, "sliding_attention");
        else
            ck_assert_ptr_null(got);
        run_batch_free(&b);
    }
    const char *t;
    t = "model: {hf_config: gemma3_4b.json, layer_type: chunked}\nencodings: [{name: m, type: model}]\n"
        "experiments: [{kind: decay, params: {max_distance: 4}}]\n";
    ck_assert_int_ne(run_batch_parse("c.yaml", t, strlen(t), dir ? dir : "tests/data", &b, &d, &err),
                     RL_OK);
    ck_assert_msg(has_msg(&d, "no layer type 'chunked' (the model has: sliding_attention, full_attention)"),
                  "%s", d.n ? d.msg[0] : err.msg);
    /* at layer_type's value (the reader's key as data), the model swept or not */
    ck_assert_msg(has_msg(&d, "c.yaml:1:48: model.layer_type: "), "%s", d.n ? d.msg[0] : "");
    run_diag_free(&d);
    t = "model:\n  hf_config: gemma3_4b.json\n  train_len: [1024, 2048]\n  layer_type: chunked\n"
        "encodings: [{name: m, type: model}]\nexperiments: [{kind: decay}]\n";
    ck_assert_int_ne(run_batch_parse("c.yaml", t, strlen(t), dir ? dir : "tests/data", &b, &d, &err),
                     RL_OK);
    ck_assert_msg(has_msg(&d, "c.yaml:4:15: model.layer_type: "), "%s", d.n ? d.msg[0] : "");
    run_diag_free(&d);
    /* a file that cannot be read: at the key naming it */
    t = "model:\n  head_dim: 64\n  hf_config: nothere.json\nexperiments: [{kind: decay}]\n";
    ck_assert_int_ne(run_batch_parse("c.yaml", t, strlen(t), dir ? dir : "tests/data", &b, &d, &err),
                     RL_OK);
    ck_assert_msg(has_msg(&d, "c.yaml:3:14: model.hf_config: hf_config: "), "%s",
                  d.n ? d.msg[0] : "");
    run_diag_free(&d);
}
END_TEST

/* The params and model.attention of the one run of batch text t (files
 * from tests/data); *b released by the caller. */
static void one_run(const char *t, run_batch *b, const json_t **params, const json_t **from)
{
    const char *dir = getenv("RL_TEST_DATA_DIR");
    run_diag d;
    rl_error err = {0};
    ck_assert_msg(run_batch_parse("a.yaml", t, strlen(t), dir ? dir : "tests/data", b, &d,
                                  &err) == RL_OK, "%s", d.n ? d.msg[0] : err.msg);
    ck_assert_uint_eq(b->n_items, 1);
    *params = json_object_get(b->items[0].resolved, "params");
    *from = json_object_get(json_object_get(b->items[0].resolved, "model"), "attention");
}

static const char *from_of(const json_t *from, const char *k)
{
    return json_string_value(json_object_get(from, k));
}

/* Issue 12/15: a model from a config.json gives the attention kinds its
 * layer type's own window / chunk / temperature; a key the batch gives
 * wins, and model.attention says where each came from. */
START_TEST(model_attention_attributes_reach_the_attention_kinds)
{
    run_batch b;
    const json_t *p, *from;
    /* Mistral 7B v0.1: sliding_window 4096 on every layer (the default type) */
    one_run("model: {hf_config: mistral_7b_v01.json}\n"
            "experiments: [{kind: entropy, params: {max_len: 128}}]\n", &b, &p, &from);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "attn_window")), 4096);
    ck_assert_str_eq(from_of(from, "attn_window"),
                     "model: hf_config sliding_window, layer type sliding_attention");
    ck_assert_str_eq(json_string_value(json_object_get(p, "attn_temperature")), "none");
    run_batch_free(&b);
    /* the batch's own value wins, and is recorded as the batch's */
    one_run("model: {hf_config: mistral_7b_v01.json}\n"
            "experiments: [{kind: retrieval, params: {attn_window: 0, max_len: 512}}]\n", &b, &p,
            &from);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "attn_window")), 0);
    ck_assert_str_eq(from_of(from, "attn_window"), "batch (the model's hf_config sliding_window, "
                     "layer type sliding_attention gives 4096)");
    run_batch_free(&b);
    /* inside a zip group too */
    one_run("model: {hf_config: mistral_7b_v01.json}\nexperiments: [{kind: entropy, params: "
            "{max_len: 128, zip: {attn_window: [16], min_len: [64]}}}]\n", &b, &p, &from);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "attn_window")), 16);
    ck_assert_ptr_nonnull(strstr(from_of(from, "attn_window"), "batch ("));
    run_batch_free(&b);
    /* Gemma 3: the sliding layers' window 1024; the global layers (the
     * default) have none, and nothing is recorded */
    one_run("model: {hf_config: gemma3_4b.json, layer_type: sliding_attention}\n"
            "experiments: [{kind: distortion, params: {length: 64}}]\n", &b, &p, &from);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "attn_window")), 1024);
    ck_assert_str_eq(from_of(from, "attn_window"),
                     "model: hf_config sliding_window, layer type sliding_attention");
    run_batch_free(&b);
    one_run("model: {hf_config: gemma3_4b.json}\n"
            "experiments: [{kind: entropy, params: {max_len: 128}}]\n", &b, &p, &from);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "attn_window")), 0);
    ck_assert_ptr_null(from);
    run_batch_free(&b);
    /* Llama 4 Scout: the NoPE full layers (the default) with HF's query
     * temperature, no chunk; the RoPE layers with attention_chunk_size */
    one_run("model: {hf_config: llama4_scout.json}\nencodings: [{name: m, type: model}]\n"
            "experiments: [{kind: entropy, params: {max_len: 128}}]\n", &b, &p, &from);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b.items[0].resolved,
                                                                       "encoding"), "type")),
                     "nope");
    ck_assert_str_eq(json_string_value(json_object_get(p, "attn_temperature")), "llama4");
    ck_assert_double_eq_tol(json_number_value(json_object_get(p, "attn_temp_scale")), 0.1, 1e-15);
    ck_assert_double_eq(json_number_value(json_object_get(p, "attn_temp_floor")), 8192);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "attn_chunk")), 0);
    ck_assert_str_eq(from_of(from, "attn_temp_floor"),
                     "model: hf_config floor_scale, layer type full_attention");
    ck_assert_str_eq(from_of(from, "attn_temperature"),
                     "model: hf_config attn_temperature_tuning, layer type full_attention");
    run_batch_free(&b);
    one_run("model: {hf_config: llama4_scout.json, layer_type: chunked_attention}\n"
            "experiments: [{kind: entropy, params: {max_len: 128}}]\n", &b, &p, &from);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "attn_chunk")), 8192);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "attn_window")), 0);
    ck_assert_str_eq(json_string_value(json_object_get(p, "attn_temperature")), "none");
    ck_assert_str_eq(from_of(from, "attn_chunk"),
                     "model: hf_config attention_chunk_size, layer type chunked_attention");
    run_batch_free(&b);
    /* a kind without attention keys is left alone */
    one_run("model: {hf_config: mistral_7b_v01.json}\n"
            "experiments: [{kind: decay, params: {max_distance: 4}}]\n", &b, &p, &from);
    ck_assert_ptr_null(json_object_get(p, "attn_window"));
    ck_assert_ptr_null(from);
    run_batch_free(&b);
}
END_TEST

START_TEST(encoding_sets_expand_and_report_their_own_file)
{
    char dir[] = "/tmp/rl_sets_XXXXXX", path[96];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/encodings", dir);
    ck_assert_int_eq(mkdir(path, 0777), 0);
    snprintf(path, sizeof path, "%s/encodings/two.yaml", dir);
    FILE *fp = fopen(path, "w");
    fputs("- {name: a, type: rope}\n- {name: b, type: rope, rope_theta: 500000}\n", fp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/encodings/bad.yaml", dir);
    fp = fopen(path, "w");
    fputs("# a comment\n- {name: x}\n", fp);
    fclose(fp);
    const char *prev = getenv("ROPELAB_CONFIG_DIR");
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", prev ? prev : "");
    setenv("ROPELAB_CONFIG_DIR", dir, 1);
    run_batch b;
    run_diag d;
    ck_assert_int_eq(load("encodings: [{set: two}, {name: c, type: rope}]\n"
                          "experiments: [{kind: decay, params: {max_distance: 4}}]\n", &b, &d),
                     RL_OK);
    ck_assert_uint_eq(b.n_items, 3);
    run_batch_free(&b);
    ck_assert_int_eq(load("encodings: [{set: bad}]\nexperiments: [{kind: decay}]\n", &b, &d),
                     RL_ERR_PARSE);
    ck_assert_msg(has_msg(&d, "encodings/bad.yaml:2:3: encodings[0](set bad)[0]: missing required "
                              "key 'type'"), "%s", d.n ? d.msg[0] : "");
    run_diag_free(&d);
    if (prev)
        setenv("ROPELAB_CONFIG_DIR", saved, 1);
    else
        unsetenv("ROPELAB_CONFIG_DIR");
    snprintf(path, sizeof path, "%s/encodings/bad.yaml", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/encodings/two.yaml", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/encodings", dir);
    rmdir(path);
    rmdir(dir);
}
END_TEST

/* The live line's ETA is the rest of the work at the throughput measured
 * so far: 25% done after 10 s leaves 30 s; before any work it is unknown. */
START_TEST(progress_eta_follows_measured_throughput)
{
    char buf[256];
    run_progress_line(buf, sizeof buf, 2, 5, "0123456789abcdef", "entropy", "yarn-4x",
                      "N=4096 causal", 25, 100, 10);
    ck_assert_str_eq(buf, "run 2/5 0123456789abcdef entropy yarn-4x: N=4096 causal  25% "
                          "10.0 s, ETA 30.0 s");
    run_progress_line(buf, sizeof buf, 1, 1, "x", "k", "e", "N=64", 0, 100, 0.5);
    ck_assert_ptr_nonnull(strstr(buf, "  0% 0.5 s, ETA ?"));
    run_progress_line(buf, sizeof buf, 1, 1, "x", "k", "e", "p", 1, 4, 100);
    ck_assert_ptr_nonnull(strstr(buf, " 25% 1 min 40 s, ETA 5 min 00 s"));
    run_progress_done_line(buf, sizeof buf, 3, 3, "x", "entropy", "rope", "dev", 1, "", 3.5,
                           1.25);
    ck_assert_str_eq(buf, "run 3/3 x entropy rope on dev: passed, verified (3.50 s wall, 1.25 s "
                          "device)");
    run_progress_done_line(buf, sizeof buf, 1, 3, "x", "entropy", "rope", "dev", 0, "why", 2, 0);
    ck_assert_str_eq(buf, "run 1/3 x entropy rope on dev: FAILED: why (2.00 s wall)");
}
END_TEST

/* ---- estimates that learn (run_estimate.c) -------------------------------- */

/* A calibration file's contents as this build writes them, measured at
 * time at, load per CPU lpc over 2 CPUs. */
static json_t *calib_json(double at, double lpc)
{
    return json_pack("{s:f,s:s,s:f,s:s,s:I,s:f,s:i,s:o}", "fma_gflops", 80.0, "fma_yardstick",
                     BENCH_FMA_YARDSTICK, "copy_gbs", 7.0, "copy_yardstick", BENCH_COPY_YARDSTICK,
                     "measured_at", (json_int_t)at, "load_per_cpu", lpc, "cpus", 2, "learned",
                     json_object());
}

static const double now_s = 1.8e9; /* a fixed clock: no test reads the real one */

START_TEST(calibration_older_than_the_limit_is_measured_again)
{
    char why[600] = "";
    json_t *j = calib_json(now_s - 86400, 0.5);
    ck_assert_int_eq(run_calib_stale(j, now_s, 1.0, 2, 0, why, sizeof why), 0);
    json_decref(j);
    j = calib_json(now_s - 8 * 86400, 0.5); /* eight days: past the seven-day limit */
    ck_assert_int_eq(run_calib_stale(j, now_s, 1.0, 2, 0, why, sizeof why), 1);
    ck_assert_msg(strstr(why, "measured 8.0 days ago (limit 7 days)"), "%s", why);
    json_decref(j);
    j = calib_json(now_s + 3600, 0.5); /* from the future: a clock that was wrong */
    ck_assert_int_eq(run_calib_stale(j, now_s, 1.0, 2, 0, why, sizeof why), 1);
    ck_assert_msg(strstr(why, "in the future"), "%s", why);
    json_decref(j);
}
END_TEST

/* On a CPU device the load per CPU at measurement must be the load now
 * within 0.5; a GPU's yardsticks do not follow the host's load. */
START_TEST(calibration_of_a_cpu_device_follows_the_load_per_cpu)
{
    char why[600] = "";
    json_t *j = calib_json(now_s - 60, 0.25);
    /* 0.25 then, 0.70 now (1.4 over 2 CPUs): within 0.5 */
    ck_assert_int_eq(run_calib_stale(j, now_s, 1.4, 2, 1, why, sizeof why), 0);
    /* 0.25 then, 1.00 now: measured again, both loads named */
    ck_assert_int_eq(run_calib_stale(j, now_s, 2.0, 2, 1, why, sizeof why), 1);
    ck_assert_msg(strstr(why, "load per CPU is 1.00 now against 0.25"), "%s", why);
    /* the same on a GPU: fresh */
    ck_assert_int_eq(run_calib_stale(j, now_s, 2.0, 2, 0, why, sizeof why), 0);
    /* another CPU count */
    ck_assert_int_eq(run_calib_stale(j, now_s, 0.5, 4, 1, why, sizeof why), 1);
    ck_assert_msg(strstr(why, "4 CPUs are online now against 2"), "%s", why);
    /* an unknown load now compares nothing */
    ck_assert_int_eq(run_calib_stale(j, now_s, -1, 2, 1, why, sizeof why), 0);
    /* a CPU count that is not one is unknown, not cast */
    json_object_set_new(j, "cpus", json_real(1e300));
    ck_assert_int_eq(run_calib_stale(j, now_s, 0.5, 4, 1, why, sizeof why), 0);
    json_decref(j);
}
END_TEST

/* Contents that are not this build's calibration are never trusted. */
START_TEST(calibration_that_is_not_one_is_measured_again)
{
    char why[600] = "";
    json_t *s = json_string("{ torn");
    ck_assert_int_eq(run_calib_stale(s, now_s, 1, 2, 1, why, sizeof why), 1);
    ck_assert_msg(strstr(why, "not a calibration"), "%s", why);
    json_decref(s);
    json_t *j = calib_json(now_s, 0.5);
    json_object_set_new(j, "fma_yardstick", json_string("fma_peak one width"));
    ck_assert_int_eq(run_calib_stale(j, now_s, 1, 2, 1, why, sizeof why), 1);
    ck_assert_msg(strstr(why, "another yardstick"), "%s", why);
    json_decref(j);
    j = calib_json(now_s, 0.5);
    json_object_set_new(j, "fma_gflops", json_real(-3));
    ck_assert_int_eq(run_calib_stale(j, now_s, 1, 2, 1, why, sizeof why), 1);
    ck_assert_msg(strstr(why, "no valid FMA peak"), "%s", why);
    json_decref(j);
    j = calib_json(now_s, 0.5);
    json_object_del(j, "measured_at"); /* a file from before the time stamps */
    ck_assert_int_eq(run_calib_stale(j, now_s, 1, 2, 0, why, sizeof why), 1);
    ck_assert_msg(strstr(why, "no time stamp"), "%s", why);
    json_decref(j);
}
END_TEST

/* The ratios' geometric mean corrects; the band is exp(2 sd) of their
 * logs, at least 1.25; one run or none gives 2. Values by hand. */
START_TEST(learned_ratios_give_the_correction_and_the_band)
{
    json_t *l = json_object();
    run_learned r;
    run_learned_get(l, "entropy/rope", &r);
    ck_assert_uint_eq(r.n, 0);
    ck_assert_double_eq_tol(r.correction, 1, 1e-12);
    ck_assert_double_eq_tol(r.band, 2, 1e-12);
    json_t *a = json_array();
    json_object_set_new(l, "entropy/rope", a);
    json_array_append_new(a, json_pack("{s:f}", "ratio", 3.0));
    run_learned_get(l, "entropy/rope", &r);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_double_eq_tol(r.correction, 3, 1e-12);
    ck_assert_double_eq_tol(r.band, 2, 1e-12);
    /* 1 and 4: geometric mean 2; logs 0 and ln 4, sd sqrt(2) ln 2, band
     * exp(2 sqrt(2) ln 2) = 2^(2 sqrt 2) */
    json_array_clear(a);
    json_array_append_new(a, json_pack("{s:f}", "ratio", 1.0));
    json_array_append_new(a, json_pack("{s:f}", "ratio", 4.0));
    run_learned_get(l, "entropy/rope", &r);
    ck_assert_uint_eq(r.n, 2);
    ck_assert_double_eq_tol(r.correction, 2, 1e-12);
    ck_assert_double_eq_tol(r.band, pow(2, 2 * sqrt(2)), 1e-9);
    /* three equal ratios: no spread, the narrowest band */
    json_array_clear(a);
    for (int i = 0; i < 3; i++)
        json_array_append_new(a, json_pack("{s:f}", "ratio", 0.5));
    run_learned_get(l, "entropy/rope", &r);
    ck_assert_double_eq_tol(r.correction, 0.5, 1e-12);
    ck_assert_double_eq_tol(r.band, RUN_CALIB_BAND_MIN, 1e-12);
    /* garbage entries are skipped, other keys untouched */
    json_array_append_new(a, json_pack("{s:s}", "ratio", "x"));
    json_array_append_new(a, json_pack("{s:f}", "ratio", -1.0));
    run_learned_get(l, "entropy/rope", &r);
    ck_assert_uint_eq(r.n, 3);
    run_learned_get(l, "retrieval/rope", &r);
    ck_assert_uint_eq(r.n, 0);
    json_decref(l);
}
END_TEST

/* Through the plan: a run's estimate is its uncorrected one times the
 * learned mean of its kind and family, the band moves with it, and a
 * wider spread widens it. */
START_TEST(learned_ratios_move_the_estimate_and_its_band)
{
    run_batch b;
    run_diag d;
    ck_assert_int_eq(load("encodings: [{name: r, type: yarn, factor: 4}]\n"
                          "experiments: [{kind: entropy, params: {min_len: 64, max_len: 1024}}]\n",
                          &b, &d),
                     RL_OK);
    ck_assert_uint_eq(b.n_items, 1);
    run_calib c = {.ok = 1, .fma_gflops = 80, .copy_gbs = 7, .attn_efficiency = 0.6};
    run_est e0, e1, e2;
    run_estimate(&b.items[0], &c, &e0);
    ck_assert_str_eq(e0.key, "entropy/rope"); /* yarn is a RoPE scaling: family rope */
    ck_assert(e0.raw_s > 0);
    ck_assert_double_eq_tol(e0.s, e0.raw_s, 1e-15);
    ck_assert_double_eq_tol(e0.lo_s, e0.raw_s / 2, 1e-15);
    ck_assert_double_eq_tol(e0.hi_s, e0.raw_s * 2, 1e-15);
    c.learned = json_pack("{s:[{s:f},{s:f},{s:f}]}", "entropy/rope", "ratio", 3.0, "ratio", 3.0,
                          "ratio", 3.0);
    run_estimate(&b.items[0], &c, &e1);
    ck_assert_double_eq_tol(e1.raw_s, e0.raw_s, 1e-15);
    ck_assert_double_eq_tol(e1.s, 3 * e0.raw_s, 1e-12);
    ck_assert_uint_eq(e1.l.n, 3);
    ck_assert(e1.lo_s > e0.hi_s); /* learned: narrower, and above the old band */
    ck_assert_double_eq_tol(e1.hi_s / e1.lo_s, RUN_CALIB_BAND_MIN * RUN_CALIB_BAND_MIN, 1e-9);
    run_calib_free(&c);
    c.learned = json_pack("{s:[{s:f},{s:f}]}", "entropy/rope", "ratio", 1.0, "ratio", 9.0);
    run_estimate(&b.items[0], &c, &e2);
    ck_assert_double_eq_tol(e2.s, 3 * e0.raw_s, 1e-12); /* same mean, */
    ck_assert(e2.hi_s / e2.lo_s > e1.hi_s / e1.lo_s);   /* wider spread */
    run_calib_free(&c);
    run_batch_free(&b);
}
END_TEST

/* A run adds its ratio (the last 16 kept); one that disagreed by more than
 * 2x outside its band marks the calibration stale, with why. */
START_TEST(a_run_that_disagreed_makes_the_calibration_stale)
{
    json_t *j = calib_json(now_s, 0.5);
    run_est e = {.raw_s = 1.0, .s = 1.0, .lo_s = 0.5, .hi_s = 2.0,
                 .l = {.n = 0, .correction = 1, .band = 2}};
    snprintf(e.key, sizeof e.key, "entropy/rope");
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(run_calib_add_run(j, &e, "0123456789abcdef", 1.5, now_s, 0.5), 0);
    json_t *a = json_object_get(json_object_get(j, "learned"), "entropy/rope");
    ck_assert_uint_eq(json_array_size(a), RUN_CALIB_HISTORY);
    ck_assert_double_eq_tol(json_number_value(json_object_get(json_array_get(a, 0), "ratio")), 1.5,
                            1e-12);
    char why[600] = "";
    ck_assert_int_eq(run_calib_stale(j, now_s, 1.0, 2, 1, why, sizeof why), 0);
    /* a run the yardsticks explain little of: fixed costs, no verdict,
     * however long it took (precision: bytes only; a JIT compile) */
    run_est t = e;
    t.raw_s = 0.001;
    t.s = 0.2; /* even when learning has raised it */
    t.lo_s = 0.1;
    t.hi_s = 0.4;
    ck_assert_int_eq(run_calib_add_run(j, &t, "tiny", 5.0, now_s, 0.5), 0);
    ck_assert_int_eq(run_calib_add_run(j, &t, "tiny", 0.0001, now_s, 0.5), 0);
    /* 2.5x beyond its estimate, outside its band */
    ck_assert_int_eq(run_est_disagrees(&e, 2.5), 1);
    ck_assert_int_eq(run_est_disagrees(&e, 0.4), 1);
    ck_assert_int_eq(run_est_disagrees(&e, 1.9), 0);
    run_est wide = e; /* a learned band wider than 2x covers it */
    wide.lo_s = 0.2;
    wide.hi_s = 5;
    ck_assert_int_eq(run_est_disagrees(&wide, 2.5), 0);
    ck_assert_int_eq(run_calib_add_run(j, &e, "fedcba9876543210", 2.5, now_s, 0.5), 1);
    ck_assert_int_eq(run_calib_stale(j, now_s, 1.0, 2, 1, why, sizeof why), 1);
    ck_assert_msg(strstr(why, "a real run disagreed with its estimate: run fedcba9876543210 "
                              "(entropy/rope) measured 2.5 s of device time against 1 s "
                              "estimated (2.50x"),
                  "%s", why);
    /* nothing is learned from a time that is not one */
    size_t n = json_array_size(a);
    ck_assert_int_eq(run_calib_add_run(j, &e, "x", NAN, now_s, 0.5), 0);
    ck_assert_int_eq(run_calib_add_run(j, &e, "x", 0, now_s, 0.5), 0);
    ck_assert_uint_eq(json_array_size(a), n);
    json_decref(j);
}
END_TEST

/* Two processes teaching one calibration file at once lose nothing and
 * never leave it torn: each read-modify-write holds the file's lock. */
START_TEST(two_processes_learning_at_once_lose_no_run)
{
    char dir[] = "/tmp/rl_calib_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    run_calib c = {.ok = 1};
    snprintf(c.path, sizeof c.path, "%s/throughput-test.json", dir);
    json_t *j = calib_json(now_s, 0.5);
    rl_error err = {0};
    ck_assert_int_eq(run_write_json(NULL, c.path, j, &err), RL_OK);
    json_decref(j);
    enum { PER = 12 };
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        ck_assert_int_ge(kids[k], 0);
        if (kids[k] == 0) {
            run_est e = {.raw_s = 1, .s = 1, .lo_s = 0.5, .hi_s = 2, .l = {.correction = 1, .band = 2}};
            snprintf(e.key, sizeof e.key, k ? "retrieval/rope" : "entropy/rope");
            int bad = 0;
            for (int i = 0; i < PER; i++)
                bad |= run_calib_learn(&c, &e, "0123456789abcdef", 1.0 + 0.01 * i, NULL) != RL_OK;
            _exit(bad);
        }
    }
    for (int k = 0; k < 2; k++) {
        int ws = 0;
        ck_assert_int_eq(waitpid(kids[k], &ws, 0), kids[k]);
        ck_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    }
    j = json_load_file(c.path, 0, NULL);
    ck_assert_ptr_nonnull(j);
    const json_t *l = json_object_get(j, "learned");
    ck_assert_uint_eq(json_array_size(json_object_get(l, "entropy/rope")), PER);
    ck_assert_uint_eq(json_array_size(json_object_get(l, "retrieval/rope")), PER);
    ck_assert_double_eq_tol(json_number_value(json_object_get(j, "fma_gflops")), 80, 1e-12);
    json_decref(j);
    /* a torn file is not written over by a run (the next calibration
     * replaces it) */
    FILE *fp = fopen(c.path, "w");
    fputs("{\"fma_gflops\": 8", fp);
    fclose(fp);
    run_est e = {.raw_s = 1, .s = 1, .lo_s = 0.5, .hi_s = 2, .l = {.correction = 1, .band = 2}};
    snprintf(e.key, sizeof e.key, "entropy/rope");
    ck_assert_int_eq(run_calib_learn(&c, &e, "x", 1, &err), RL_OK);
    ck_assert_ptr_null(json_load_file(c.path, 0, NULL));
    char p[1200];
    remove(c.path);
    snprintf(p, sizeof p, "%s.lock", c.path);
    remove(p);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("run");
    TCase *tc = tcase_create("batch");
    tcase_add_test(tc, lists_expand_to_cartesian_product);
    tcase_add_test(tc, zip_pairs_lists_elementwise);
    tcase_add_test(tc, errors_are_located_by_their_key_not_their_message);
    tcase_add_test(tc, a_seed_list_sweeps_every_experiment);
    tcase_add_test(tc, an_experiment_sweeps_its_own_seeds);
    tcase_add_test(tc, encoding_zip_pairs_and_reports_every_bad_member);
    tcase_add_test(tc, run_ids_are_stable_and_depend_only_on_parameters);
    tcase_add_loop_test(tc, shards_balance_a_sweep_by_cost, 0, 2);
    tcase_add_test(tc, shards_of_a_mix_meet_the_list_scheduling_bound);
    tcase_add_test(tc, shards_partition_the_plan_whatever_its_order);
    tcase_add_loop_test(tc, shard_spec_and_slurm_variables, 0,
                        (int)(sizeof shard_cases / sizeof shard_cases[0]));
    tcase_add_loop_test(tc, each_error_is_reported_with_position_path_and_message, 0,
                        (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(tc, model_errors_come_together_with_other_errors);
    tcase_add_test(tc, type_sweeps_over_families_and_scalings);
    tcase_add_test(tc, tagged_lists_are_values_and_plain_lists_sweep);
    tcase_add_test(tc, manifest_records_inputs_and_resume_checks_their_hashes);
    tcase_add_test(tc, encoding_errors_come_with_schema_errors_at_their_keys);
    tcase_add_test(tc, an_encoding_is_validated_per_model_shape_not_per_settings);
    tcase_add_test(tc, too_few_sampled_query_rows_are_refused_at_load);
    tcase_add_test(tc, edit_distance_counts_single_edits);
    tcase_add_test(tc, large_mappings_find_every_key_and_the_duplicate);
    tcase_add_test(tc, many_errors_are_each_reported_once);
    tcase_add_test(tc, preset_gives_model_shape);
    tcase_add_test(tc, decay_bound_at_zero_is_mean_of_one_to_half_dim);
    tcase_add_test(tc, results_csv_carries_a_tables_fields_as_they_are);
    tcase_add_test(tc, hf_config_gives_shape_and_rope_settings);
    tcase_add_test(tc, hf_config_layer_type_picks_the_layers_encoding);
    tcase_add_test(tc, model_attention_attributes_reach_the_attention_kinds);
    tcase_add_test(tc, encoding_sets_expand_and_report_their_own_file);
    tcase_add_test(tc, progress_eta_follows_measured_throughput);
    suite_add_tcase(s, tc);
    TCase *te = tcase_create("estimates");
    tcase_add_test(te, calibration_older_than_the_limit_is_measured_again);
    tcase_add_test(te, calibration_of_a_cpu_device_follows_the_load_per_cpu);
    tcase_add_test(te, calibration_that_is_not_one_is_measured_again);
    tcase_add_test(te, learned_ratios_give_the_correction_and_the_band);
    tcase_add_test(te, learned_ratios_move_the_estimate_and_its_band);
    tcase_add_test(te, a_run_that_disagreed_makes_the_calibration_stale);
    tcase_add_test(te, two_processes_learning_at_once_lose_no_run);
    tcase_set_timeout(te, 60);
    suite_add_tcase(s, te);
    return rl_test_run(s);
}
