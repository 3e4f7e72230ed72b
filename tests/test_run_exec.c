/* Executing batches: outputs, resume after a kill, failed runs, shards and
 * merge, --device all. Runs on the Vulkan device (lavapipe in CI). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "run/run.h"
#include "rl_test.h"

static const char *batch_text =
    "model: {head_dim: 16, heads: 2, kv_heads: 1, train_len: 64}\n"
    "data: {source: shared}\n"
    "experiments:\n"
    "  - kind: decay\n"
    "    params: {max_distance: [4, 8, 12], step: 4}\n"
    "  - kind: precision\n"
    "    params: {tokens: [3, 5], max_pos_log2: 6}\n";

static void load(const char *text, run_batch *b)
{
    run_diag d;
    rl_error err = {0};
    ck_assert_msg(run_batch_parse("e.yaml", text, strlen(text), ".", b, &d, &err) == RL_OK, "%s",
                  d.n ? d.msg[0] : err.msg);
}

static void tmpdir(char *buf, size_t cap)
{
    snprintf(buf, cap, "/tmp/rl_run_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(buf));
}

static void rmrf(const char *d)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    ck_assert_int_eq(system(cmd), 0);
}

static int exists(const char *fmt, const char *a, const char *b)
{
    char p[1200];
    struct stat st;
    snprintf(p, sizeof p, fmt, a, b);
    return stat(p, &st) == 0;
}

static size_t count_lines_with(const char *path, const char *needle, char *first, size_t cap)
{
    FILE *fp = fopen(path, "r");
    ck_assert_ptr_nonnull(fp);
    char line[4096];
    size_t n = 0;
    if (first && fgets(line, sizeof line, fp))
        snprintf(first, cap, "%.500s", line);
    while (fgets(line, sizeof line, fp))
        n += strstr(line, needle) != NULL;
    fclose(fp);
    return n;
}

START_TEST(batch_writes_runs_results_and_manifest)
{
    run_batch b;
    load(batch_text, &b);
    ck_assert_uint_eq(b.n_items, 5);
    char out[64], path[1200], header[512];
    tmpdir(out, sizeof out);
    run_options o = {.out = out, .device = "auto", .shard_count = 1, .quiet = 1, .validation = 1};
    run_outcome r;
    rl_error err = {0};
    ck_assert_msg(run_batch_execute(&b, &o, &r, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(r.jobs, 5);
    ck_assert_uint_eq(r.passed, 5);
    ck_assert_uint_eq(r.validation_messages, 0);
    for (size_t i = 0; i < b.n_items; i++)
        ck_assert(exists("%s/runs/%s/summary.json", out, b.items[i].id));
    snprintf(path, sizeof path, "%s/results.csv", out);
    /* decay: 3 runs x (4 metrics + r rows x 3 value columns) */
    size_t decay_bound_rows = count_lines_with(path, ",decay.bound,", header, sizeof header);
    ck_assert_str_eq(header, "run_id,device,kind,status,encoding,type,factor,head_dim,heads,"
                             "kv_heads,train_len,seed,params.max_distance,params.tokens,metric,"
                             "length,x,value,unit,title,x_name,x_unit,x_title,plot\n");
    ck_assert_uint_eq(decay_bound_rows, 2 + 3 + 4); /* r = 0,4 / 0,4,8 / 0,4,8,12 */
    ck_assert_uint_eq(count_lines_with(path, ",precision.max_abs_error,", NULL, 0), 3 + 5);
    snprintf(path, sizeof path, "%s/manifest.json", out);
    json_t *m = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(m);
    ck_assert_uint_eq(json_array_size(json_object_get(m, "plan")), 5);
    ck_assert_uint_eq(json_array_size(json_object_get(m, "jobs")), 5);
    /* 0 validation messages means something only with the layer on */
    ck_assert(json_is_true(json_object_get(m, "validation_layer")));
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "batch"), "text")),
                     batch_text);
    json_decref(m);
    rmrf(out);
    run_batch_free(&b);
}
END_TEST

START_TEST(resume_redoes_only_runs_without_completion)
{
    run_batch b;
    load(batch_text, &b);
    char out[64];
    tmpdir(out, sizeof out);
    run_options o = {.out = out, .device = "auto", .shard_count = 1, .quiet = 1, .fail_after = 2};
    run_outcome r;
    rl_error err = {0};
    ck_assert_int_eq(run_batch_execute(&b, &o, &r, &err), RL_OK);
    ck_assert(r.interrupted);
    ck_assert_uint_eq(r.passed, 2);
    /* a run killed mid-write: its temporary directory exists, never renamed */
    size_t victim = 4;
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s/runs/.tmp-%s", out, b.items[victim].id);
    ck_assert_int_eq(mkdir(tmp, 0777), 0);
    o.fail_after = 0;
    o.resume = 1;
    ck_assert_int_eq(run_batch_execute(&b, &o, &r, &err), RL_OK);
    ck_assert_uint_eq(r.skipped, 2);
    ck_assert_uint_eq(r.passed, 3);
    ck_assert(!r.interrupted);
    ck_assert(exists("%s/runs/%s/summary.json", out, b.items[victim].id));
    ck_assert(!exists("%s/runs/.tmp-%s", out, b.items[victim].id));
    rmrf(out);
    run_batch_free(&b);
}
END_TEST

START_TEST(failed_run_is_recorded_and_batch_continues)
{
    run_batch b;
    /* 2^24 tokens x 64 heads x 128 dims of fp32 is 512 GiB: beyond any
     * device's storage-buffer range, refused before allocation */
    load("model: {head_dim: 128, heads: 64, train_len: 64}\nexperiments:\n"
         "  - kind: precision\n    params: {tokens: [16777216, 4], max_pos_log2: 4}\n", &b);
    char out[64], path[1200];
    tmpdir(out, sizeof out);
    run_options o = {.out = out, .device = "auto", .shard_count = 1, .quiet = 1};
    run_outcome r;
    rl_error err = {0};
    ck_assert_int_eq(run_batch_execute(&b, &o, &r, &err), RL_OK);
    ck_assert_uint_eq(r.failed, 1);
    ck_assert_uint_eq(r.passed, 1);
    size_t big = json_integer_value(json_object_get(json_object_get(b.items[0].resolved, "params"),
                                                    "tokens")) == 4 ? 1 : 0;
    snprintf(path, sizeof path, "%s/runs/%s/summary.json", out, b.items[big].id);
    json_t *s = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(json_string_value(json_object_get(s, "status")), "failed");
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(s, "reason")), "exceeds"));
    json_decref(s);
    rmrf(out);
    run_batch_free(&b);
}
END_TEST

START_TEST(merge_combines_shards_and_detects_a_missing_one)
{
    run_batch b;
    load(batch_text, &b);
    char s0[64], s1[64], m[64], path[1200];
    tmpdir(s0, sizeof s0);
    tmpdir(s1, sizeof s1);
    tmpdir(m, sizeof m);
    run_outcome r;
    rl_error err = {0};
    size_t total = 0;
    run_options o = {.out = s0, .device = "auto", .shard_index = 0, .shard_count = 2, .quiet = 1};
    ck_assert_int_eq(run_batch_execute(&b, &o, &r, &err), RL_OK);
    total += r.jobs;
    o.out = s1;
    o.shard_index = 1;
    ck_assert_int_eq(run_batch_execute(&b, &o, &r, &err), RL_OK);
    total += r.jobs;
    ck_assert_uint_eq(total, 5);
    const char *both[] = {s0, s1};
    run_merge_report rep;
    FILE *devnull = fopen("/dev/null", "w");
    ck_assert_int_eq(run_merge(both, 2, m, &rep, devnull, &err), RL_OK);
    ck_assert_uint_eq(rep.plan, 5);
    ck_assert_uint_eq(rep.present, 5);
    ck_assert_uint_eq(rep.missing, 0);
    ck_assert_uint_eq(rep.duplicated, 0);
    snprintf(path, sizeof path, "%s/results.csv", m);
    ck_assert_uint_eq(count_lines_with(path, ",precision.max_abs_error,", NULL, 0), 8);
    const char *one[] = {s0};
    ck_assert_int_eq(run_merge(one, 1, m, &rep, devnull, &err), RL_OK);
    ck_assert_uint_eq(rep.shards_seen, 1);
    ck_assert_str_eq(rep.missing_shards, "1");
    ck_assert_uint_gt(rep.missing, 0);
    const char *twice[] = {s0, s0};
    ck_assert_int_eq(run_merge(twice, 2, m, &rep, devnull, &err), RL_OK);
    ck_assert_uint_gt(rep.duplicated, 0);
    fclose(devnull);
    rmrf(s0);
    rmrf(s1);
    rmrf(m);
    run_batch_free(&b);
}
END_TEST

START_TEST(device_all_tags_rows_with_each_device)
{
    run_batch b;
    load(batch_text, &b);
    char out[64], path[1200];
    tmpdir(out, sizeof out);
    run_options o = {.out = out, .device = "all", .shard_count = 1, .quiet = 1, .validation = 1};
    run_outcome r;
    rl_error err = {0};
    ck_assert_int_eq(run_batch_execute(&b, &o, &r, &err), RL_OK);
    snprintf(path, sizeof path, "%s/manifest.json", out);
    json_t *m = json_load_file(path, 0, NULL);
    json_t *devs = json_object_get(m, "devices");
    size_t n_gpu = json_array_size(devs) - 1; /* plus the CPU worker for decay */
    ck_assert_uint_ge(n_gpu, 1);
    /* GPU kinds run on every device, CPU kinds once */
    ck_assert_uint_eq(r.jobs, 3 + 2 * n_gpu);
    ck_assert_uint_eq(r.passed, r.jobs);
    ck_assert_uint_eq(r.validation_messages, 0);
    const char *dev0 = json_string_value(json_object_get(json_array_get(devs, 0), "name"));
    snprintf(path, sizeof path, "%s/results.csv", out);
    ck_assert_uint_eq(count_lines_with(path, dev0, NULL, 0), count_lines_with(path, ",precision,", NULL, 0) / n_gpu);
    ck_assert_uint_gt(count_lines_with(path, ",cpu,decay,", NULL, 0), 0);
    json_decref(m);
    rmrf(out);
    run_batch_free(&b);
}
END_TEST

/* entropy_at_max_len of run i and the largest tolerance of its verified
 * entropy records (each sampled row's entropy is within it of the double
 * reference, so the run's mean is too). */
static double run_entropy(const char *out, const run_item *it, double *tol)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/runs/%s/summary.json", out, it->id);
    json_t *s = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(s);
    double h = json_number_value(json_object_get(json_object_get(s, "metrics"),
                                                 "entropy_at_max_len"));
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(s, "verification"), i, v) {
        const char *what = json_string_value(json_object_get(v, "what"));
        if (what && strstr(what, "entropy"))
            *tol = fmax(*tol, json_number_value(json_object_get(v, "bound_at_worst")));
    }
    json_decref(s);
    return h;
}

/* A value the runner derives is recorded: a yarn encoding without either
 * length takes model.train_len as original_max_position_embeddings
 * (run_enc_params), and summary.json's encoding_params says so, with the
 * rope_type a scaling named as the type stands for. */
START_TEST(derived_encoding_values_are_recorded_in_the_summary)
{
    static const char *text =
        "model: {head_dim: 64, heads: 1, kv_heads: 1, train_len: 384}\n"
        "encodings:\n"
        "  - {name: y, type: yarn, factor: 4}\n"
        "experiments:\n"
        "  - {kind: decay, params: {max_distance: 8, step: 4}}\n";
    run_batch b;
    load(text, &b);
    ck_assert_uint_eq(b.n_items, 1);
    char out[64];
    tmpdir(out, sizeof out);
    run_options o = {.out = out, .device = "auto", .shard_count = 1, .quiet = 1, .validation = 1};
    run_outcome r;
    rl_error err = {0};
    ck_assert_msg(run_batch_execute(&b, &o, &r, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(r.passed, 1);
    char path[1200];
    snprintf(path, sizeof path, "%s/runs/%s/summary.json", out, b.items[0].id);
    json_t *s = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(s);
    const json_t *ep = json_object_get(s, "encoding_params");
    ck_assert_int_eq(json_integer_value(json_object_get(ep, "original_max_position_embeddings")),
                     384);
    ck_assert_str_eq(json_string_value(json_object_get(ep, "rope_type")), "yarn");
    json_decref(s);
    rmrf(out);
    run_batch_free(&b);
}
END_TEST

/* Issue 12: with isotropic independent q, k (gaussian) every rotation gives
 * the logits one law, so RoPE and PI x4 have the same entropy up to
 * sampling; the structured source's shared mean in the slow pairs carries
 * position, and PI (angles / 4) changes it. At 4x train_len (512 keys):
 * the structured difference must exceed 0.05 nats + twice the verified
 * entropy tolerance (two means each within tol of their reference cannot
 * make 0.05 out of nothing; tol is 4.4e-3 here) and ten times the
 * gaussian difference (sampling only). Measured on lavapipe: structured
 * 4.110 / 4.443 (0.33 apart), gaussian 5.749 / 5.751 (0.0013). */
START_TEST(structured_data_separates_rope_from_pi_where_gaussian_cannot)
{
    static const char *text =
        "model: {head_dim: 64, heads: 1, kv_heads: 1, train_len: 128}\n"
        "encodings:\n"
        "  - {name: rope, type: rope}\n"
        "  - {name: pi, type: linear, factor: 4}\n"
        "data: {source: [gaussian, structured]}\n"
        "experiments:\n"
        "  - kind: entropy\n"
        "    params: {min_len: 512, max_len: 512}\n";
    run_batch b;
    load(text, &b);
    ck_assert_uint_eq(b.n_items, 4);
    char out[64];
    tmpdir(out, sizeof out);
    run_options o = {.out = out, .device = "auto", .shard_count = 1, .quiet = 1, .validation = 1};
    run_outcome r;
    rl_error err = {0};
    ck_assert_msg(run_batch_execute(&b, &o, &r, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(r.passed, 4);
    double h[2][2] = {{NAN, NAN}, {NAN, NAN}}, tol = 0; /* [structured][pi] */
    for (size_t i = 0; i < b.n_items; i++) {
        const json_t *res = b.items[i].resolved;
        const char *src = json_string_value(json_object_get(json_object_get(res, "data"),
                                                            "source"));
        const char *enc = json_string_value(json_object_get(json_object_get(res, "encoding"),
                                                            "name"));
        h[!strcmp(src, "structured")][!strcmp(enc, "pi")] = run_entropy(out, &b.items[i], &tol);
    }
    double dg = fabs(h[0][1] - h[0][0]), ds = fabs(h[1][1] - h[1][0]);
    ck_assert(tol > 0 && tol < 0.01);
    ck_assert_msg(ds > 0.05 + 2 * tol && ds > 10 * dg,
                  "entropy rope/pi: structured %.4f/%.4f (diff %.4f), gaussian %.4f/%.4f "
                  "(diff %.4f), tolerance %.2g", h[1][0], h[1][1], ds, h[0][0], h[0][1], dg, tol);
    fprintf(stderr, "entropy at 4x, rope/pi: structured %.4f/%.4f, gaussian %.4f/%.4f, tol %.2g\n",
            h[1][0], h[1][1], h[0][0], h[0][1], tol);
    rmrf(out);
    run_batch_free(&b);
}
END_TEST

/* Issue 12/15: a model from a config.json runs with its layer type's own
 * attention. Two configs made for this (tests/data/README.md): a Mistral
 * with sliding_window 32 and a Llama 4 whose NoPE full layers carry the
 * query temperature 1 + 0.5 log(floor((pos + 1) / 16) + 1). Each runs a
 * 256-token entropy pass as the model gives it and with the batch
 * overriding the key (attn_window: 0, attn_temperature: none). Gaussian q,
 * k: without the window every query sees up to 256 keys, with it 32, and
 * the temperature (up to 2.42 at the last query) sharpens the softmax, so
 * each pair must differ by more than 0.1 nats plus twice the verified
 * entropy tolerance (two means each within tol of their double reference
 * cannot make that difference out of nothing). Every run is verified.
 * Measured on lavapipe: window 3.5996 vs 5.0652 nats (tol 0.0012),
 * temperature 3.8268 vs 5.0557 (tol 0.0042). */
START_TEST(model_attention_attributes_change_the_run)
{
    static const char *const text[] = {
        "model: {hf_config: mistral_tiny_window.json}\n"
        "encodings: [{name: m, type: model}]\n"
        "data: {source: gaussian}\n"
        "experiments:\n"
        "  - {kind: entropy, params: {min_len: 256, max_len: 256}}\n"
        "  - {kind: entropy, params: {min_len: 256, max_len: 256, attn_window: 0}}\n",
        "model: {hf_config: llama4_tiny_temp.json}\n"
        "encodings: [{name: m, type: model}]\n"
        "data: {source: gaussian}\n"
        "experiments:\n"
        "  - {kind: entropy, params: {min_len: 256, max_len: 256}}\n"
        "  - {kind: entropy, params: {min_len: 256, max_len: 256, attn_temperature: none}}\n",
    };
    static const char *const key[] = {"attn_window", "attn_temperature"};
    const char *dir = getenv("RL_TEST_DATA_DIR");
    for (int c = 0; c < 2; c++) {
        run_batch b;
        run_diag d;
        rl_error err = {0};
        ck_assert_msg(run_batch_parse("m.yaml", text[c], strlen(text[c]), dir ? dir : "tests/data",
                                      &b, &d, &err) == RL_OK, "%s", d.n ? d.msg[0] : err.msg);
        ck_assert_uint_eq(b.n_items, 2);
        const json_t *p0 = json_object_get(b.items[0].resolved, "params");
        if (c == 0)
            ck_assert_int_eq(json_integer_value(json_object_get(p0, "attn_window")), 32);
        else
            ck_assert_str_eq(json_string_value(json_object_get(p0, "attn_temperature")), "llama4");
        const char *src = json_string_value(json_object_get(
            json_object_get(json_object_get(b.items[1].resolved, "model"), "attention"), key[c]));
        ck_assert_ptr_nonnull(src);
        ck_assert_ptr_nonnull(strstr(src, "batch ("));
        char out[64];
        tmpdir(out, sizeof out);
        run_options o = {.out = out, .device = "auto", .shard_count = 1, .quiet = 1,
                         .validation = 1};
        run_outcome r;
        ck_assert_msg(run_batch_execute(&b, &o, &r, &err) == RL_OK, "%s", err.msg);
        ck_assert_uint_eq(r.passed, 2);
        double tol = 0, hm = run_entropy(out, &b.items[0], &tol),
               ho = run_entropy(out, &b.items[1], &tol);
        ck_assert(tol > 0 && tol < 0.01);
        ck_assert_msg(fabs(hm - ho) > 0.1 + 2 * tol, "%s: model %.4f, batch override %.4f, "
                      "tolerance %.2g", key[c], hm, ho, tol);
        fprintf(stderr, "%s: entropy at 256 as the model gives it %.4f, batch override %.4f, "
                "tol %.2g\n", key[c], hm, ho, tol);
        rmrf(out);
        run_batch_free(&b);
    }
}
END_TEST

/* Every summary metric and table column each kind emits is declared in the
 * kind's metric table (title, unit, plot flags), so results.csv and the
 * figures never fall back to a bare identifier; a table measured at several
 * lengths carries its length. One tiny run of every registered kind. */
START_TEST(every_kind_declares_every_metric_it_emits)
{
    static const char *const text =
        "model: {head_dim: 16, heads: 2, kv_heads: 1, train_len: 64}\n"
        "data: {source: shared}\n"
        "encodings:\n"
        "  - {name: yarn, type: yarn, factor: 2, original_max_position_embeddings: 64}\n"
        "experiments:\n"
        "  - {kind: decay, params: {max_distance: 8, step: 4}}\n"
        "  - {kind: precision, params: {tokens: 3, max_pos_log2: 6}}\n"
        "  - {kind: coverage, params: {eval_len: 128}}\n"
        "  - {kind: interpolation}\n"
        "  - {kind: invariance, params: {pairs: 2, m: 8, max_shift_log2: 4}}\n"
        "  - {kind: entropy, params: {min_len: 16, max_len: 64}}\n"
        "  - {kind: retrieval, params: {min_len: 64, max_len: 128}}\n"
        "  - {kind: content_retrieval, params: {min_len: 64, max_len: 128}}\n"
        "  - {kind: distortion}\n"
        "  - {kind: base_bound, params: {max_distance: 64}}\n";
    run_batch b;
    load(text, &b);
    size_t n_kinds;
    exp_kinds(&n_kinds);
    char out[64], path[1200];
    tmpdir(out, sizeof out);
    run_options o = {.out = out, .device = "auto", .shard_count = 1, .quiet = 1, .validation = 1};
    run_outcome r;
    rl_error err = {0};
    ck_assert_msg(run_batch_execute(&b, &o, &r, &err) == RL_OK, "%s", err.msg);
    ck_assert_uint_eq(r.passed, b.n_items);
    ck_assert_uint_eq(b.n_items, n_kinds); /* the batch covers the whole registry */
    size_t n_checked = 0, n_at = 0;
    for (size_t i = 0; i < b.n_items; i++) {
        snprintf(path, sizeof path, "%s/runs/%s/summary.json", out, b.items[i].id);
        json_t *sum = json_load_file(path, 0, NULL);
        ck_assert_ptr_nonnull(sum);
        const char *kn = json_string_value(json_object_get(sum, "kind"));
        const exp_kind *k = exp_find(kn);
        ck_assert_ptr_nonnull(k);
        const char *m;
        json_t *v;
        json_object_foreach(json_object_get(sum, "metrics"), m, v) {
            ck_assert_msg(exp_metric_find(k, m) != NULL, "%s: metric %s not declared", kn, m);
            n_checked++;
        }
        size_t ti, ci;
        json_t *t, *col;
        json_array_foreach(json_object_get(sum, "tables"), ti, t) {
            const char *tn = json_string_value(json_object_get(t, "table"));
            if (tn)
                n_at++;
            else
                tn = json_string_value(json_object_get(t, "name"));
            json_array_foreach(json_object_get(t, "columns"), ci, col) {
                char name[200];
                snprintf(name, sizeof name, "%s.%s", tn, json_string_value(col));
                ck_assert_msg(exp_metric_find(k, name) != NULL, "%s: column %s not declared", kn,
                              name);
                n_checked++;
            }
        }
        json_decref(sum);
    }
    ck_assert_uint_gt(n_checked, 60);
    /* content_retrieval's distance and retrieval's offset tables at N = 64, 128 */
    ck_assert_uint_eq(n_at, 4);
    /* ... and results.csv gives those lengths a column, not a name */
    snprintf(path, sizeof path, "%s/results.csv", out);
    ck_assert_uint_eq(count_lines_with(path, "retrieval_n", NULL, 0), 0);
    ck_assert_uint_gt(count_lines_with(path, ",retrieval_distance.accuracy,128,", NULL, 0), 0);
    ck_assert_uint_gt(count_lines_with(path, ",retrieval_offset.accuracy,128,", NULL, 0), 0);
    rmrf(out);
    run_batch_free(&b);
}
END_TEST

int main(void)
{
    rl_test_pin_driver();
    rl_test_require_vulkan("run_exec");
    Suite *s = suite_create("run_exec");
    /* what a batch writes: runs, results, manifest, declared metrics, derived values */
    TCase *tc_outputs = tcase_create("outputs");
    tcase_set_timeout(tc_outputs, 120);
    tcase_add_test(tc_outputs, batch_writes_runs_results_and_manifest);
    tcase_add_test(tc_outputs, every_kind_declares_every_metric_it_emits);
    tcase_add_test(tc_outputs, derived_encoding_values_are_recorded_in_the_summary);
    suite_add_tcase(s, tc_outputs);
    /* resume after a kill; a failed run is recorded and the batch goes on */
    TCase *tc_recovery = tcase_create("recovery");
    tcase_set_timeout(tc_recovery, 120);
    tcase_add_test(tc_recovery, resume_redoes_only_runs_without_completion);
    tcase_add_test(tc_recovery, failed_run_is_recorded_and_batch_continues);
    suite_add_tcase(s, tc_recovery);
    /* shards and merge, --device all */
    TCase *tc_shards = tcase_create("shards");
    tcase_set_timeout(tc_shards, 120);
    tcase_add_test(tc_shards, merge_combines_shards_and_detects_a_missing_one);
    tcase_add_test(tc_shards, device_all_tags_rows_with_each_device);
    suite_add_tcase(s, tc_shards);
    /* settings that must change what a run measures: data source, model attention */
    TCase *tc_effects = tcase_create("effects");
    tcase_set_timeout(tc_effects, 120);
    tcase_add_test(tc_effects, structured_data_separates_rope_from_pi_where_gaussian_cannot);
    tcase_add_test(tc_effects, model_attention_attributes_change_the_run);
    suite_add_tcase(s, tc_effects);
    return rl_test_run(s);
}
