/* ropelab bench attention [--device D] [--tokens N] [--head-dim D] [--causal] [--fp16]
 *                         [--query-rows S [--query-sampling K]] [--scale FROM:TO] */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn_path.h"
#include "bench/bench.h"
#include "cli/cli.h"
#include "core/rl_sample.h"
#include "core/rl_util.h"
#include "rl_push.h"

/* --scale: lengths FROM, 4 FROM, 16 FROM, ... up to TO, each timed with the
 * same query rows, and ln(GPU time) fitted on ln N (rl_line_fit). */
#define SCALE_FACTOR 4u
#define SCALE_MAX_POINTS 16u

typedef struct attn_bench_ctx {
    bench_attn_opts o;            /* every field resolved by the command line */
    uint64_t scale_from, scale_to; /* --scale: 0 without */
    json_t *results;              /* --json: one object per device */
} attn_bench_ctx;

/* Null for a value that is not finite (jansson refuses inf and NaN). */
static json_t *real_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* One device's --json object; every key always present, in this order
 * (measurements null after a failure, verify null unless it ran). */
static json_t *attn_json(const rlvk_device *dev, const bench_attn_result *r, rl_status st,
                         const rl_error *err)
{
    const bench_attn_opts *o = &r->opts; /* resolved (set before any failure) */
    json_t *res = json_object();
    json_object_set_new(res, "device", cli_bench_device_json(&dev->info));
    json_object_set_new(res, "pass", json_boolean(st == RL_OK));
    json_object_set_new(res, "error", json_string(st == RL_OK ? "" : err->msg));
    json_object_set_new(res, "shape", json_pack(
        "{s:I,s:i,s:i,s:b,s:s,s:b,s:I,s:s}", "tokens", (json_int_t)o->tokens, "heads",
        (int)o->heads, "head_dim", (int)o->head_dim, "causal", o->causal, "dtype",
        o->fp16 ? "fp16" : "fp32", "output", o->with_output, "query_rows",
        (json_int_t)(o->query_rows ? r->query_rows : o->tokens), "query_sampling",
        o->query_rows ? rl_rows_scheme_name((rl_rows_scheme)o->sampling) : "full"));
    json_object_set_new(res, "timing", json_pack(
        "{s:s,s:i,s:b}", "clock",
        o->single ? "gpu timestamps, the verified run itself (--single)"
                  : "gpu timestamps summed over a pass's submissions; the verified run is the warm-up",
        "reps", (int)o->reps, "single", o->single));
    if (st == RL_OK) {
        json_object_set_new(res, "kernel", json_pack(
            "{s:s,s:o,s:f,s:s,s:f,s:f,s:f,s:f,s:f,s:i,s:i}", "name",
            o->with_output ? "attention statistics + O" : "attention statistics", "ms",
            cli_bench_times_json(&r->gpu), "wall_ms_last", r->wall_ms, "flop_count",
            "2*pairs*d*heads (x2 with O); pairs: N^2 for the full pass (N^2/2 causal), the "
            "query rows' visible keys when sampled or masked", "pairs", r->pairs, "gflop",
            r->flops * 1e-9, "gflop_per_s", r->gflops, "ns_per_key", r->ns_per_key,
            "ns_per_pair", r->ns_per_pair, "submissions", (int)r->submissions, "chunk_keys",
            (int)r->chunk_keys));
        json_object_set_new(json_object_get(res, "kernel"), "path",
                            json_pack("{s:s,s:i}", "name", attn_path_name((attn_path_kind)r->path),
                                      "lanes_per_row", (int)r->split));
        json_t *widths = json_array();
        for (uint32_t w = 0; w < BENCH_FMA_WIDTHS; w++)
            json_array_append_new(widths, json_pack("{s:i,s:f,s:i}", "vec4_chains",
                                                    (int)bench_fma_chains(w), "gflop_per_s",
                                                    r->fma_width_gflops[w], "groups",
                                                    (int)r->fma_width_groups[w]));
        json_object_set_new(res, "yardstick", json_pack(
            "{s:s,s:s,s:i,s:o,s:o,s:i,s:i,s:i,s:f,s:f}", "name", "fma_peak", "what",
            "fma_peak.comp: vec4 FMA chains, same device, same run; the fastest of its widths "
            "(running vec4 per invocation, each timed 3 times first) is the peak",
            "vec4_chains", (int)bench_fma_chains(r->fma_width), "widths", widths, "ms",
            cli_bench_times_json(&r->fma), "groups", (int)r->fma_groups, "local_size",
            (int)r->fma_local, "rounds", (int)RL_FMA_ROUNDS, "gflop", r->fma_flops * 1e-9,
            "gflop_per_s", r->fma_gflops));
        json_object_set_new(res, "ratio", json_pack("{s:s,s:f,s:f,s:f,s:b}", "definition",
                                                    "median over timed passes of the pass's gflop_per_s / "
                                                    "the fma_peak dispatch's right after it",
                                                    "value", r->ratio, "min", r->ratios.min, "max",
                                                    r->ratios.max, "above_peak", r->ratio > 1.0));
    } else {
        json_object_set_new(res, "kernel", json_null());
        json_object_set_new(res, "yardstick", json_null());
        json_object_set_new(res, "ratio", json_null());
    }
    const vf_stats *v = &r->verify;
    json_t *vj = v->n == 0 ? json_null() : vf_stats_json(v); /* the one tolerance record */
    if (v->n) {
        json_object_set_new(vj, "against", json_string("double-precision CPU reference on sampled "
                                                       "rows (attn_tol.c bounds)"));
        json_object_set_new(vj, "worst_statistic", json_string(r->verify_worst));
    }
    json_object_set_new(res, "verify", vj);
    if (o->window || o->chunk_size) /* masked: the saving, measured against the unmasked run */
        json_object_set_new(res, "mask", st != RL_OK ? json_null() : json_pack(
            "{s:i,s:i,s:i,s:f,s:f,s:f,s:f,s:f}", "window", (int)o->window, "n_sink",
            (int)o->n_sink, "chunk_size", (int)o->chunk_size, "excluded_fraction", r->excluded,
            "tiles_skipped_fraction", r->tiles_skipped, "unmasked_gpu_ms_median", r->full_gpu_ms,
            "time_ratio_to_unmasked", r->time_ratio, "saved_over_excluded", r->saved_over_f));
    return res;
}

/* --scale on one device: every length, then the fit; a failure at one
 * length stops the sweep (its error is the device's). */
static rl_status bench_scale_on(rlvk_device *dev, const attn_bench_ctx *c, rl_error *err)
{
    double lnn[SCALE_MAX_POINTS], lnt[SCALE_MAX_POINTS], nn[SCALE_MAX_POINTS], tt[SCALE_MAX_POINTS];
    bench_attn_result r[SCALE_MAX_POINTS];
    uint32_t n = 0;
    rl_status st = RL_OK;
    json_t *points = json_array();
    for (uint64_t N = c->scale_from; !st && N <= c->scale_to && n < SCALE_MAX_POINTS;
         N *= SCALE_FACTOR) {
        bench_attn_opts o = c->o;
        o.tokens = N;
        st = bench_attention(dev, &o, &r[n], err);
        if (c->results) {
            json_t *pt = attn_json(dev, &r[n], st, err);
            json_object_del(pt, "device");
            json_array_append_new(points, pt);
        }
        if (!st) {
            lnn[n] = log((double)N);
            lnt[n] = log(r[n].gpu.median);
            nn[n] = (double)N;
            tt[n] = r[n].gpu.median;
            n++;
        }
    }
    rl_line f, af; /* ln t on ln N (the exponent); t on N (fixed cost + cost per key) */
    rl_line_fit(lnn, lnt, n, &f);
    rl_line_fit(nn, tt, n, &af);
    if (c->results) {
        json_t *res = json_object();
        json_object_set_new(res, "device", cli_bench_device_json(&dev->info));
        json_object_set_new(res, "pass", json_boolean(st == RL_OK));
        json_object_set_new(res, "error", json_string(st == RL_OK ? "" : err->msg));
        json_object_set_new(res, "points", points);
        json_object_set_new(res, "fit", st ? json_null() : json_pack(
            "{s:s,s:i,s:o,s:o,s:o,s:o,s:o}", "definition",
            "least squares of ln(median GPU ms) on ln(tokens) over the points; exponent 1: the "
            "time grows as N (fixed query rows), 2: as N^2", "points", (int)f.n, "exponent",
            real_or_null(f.b), "exponent_lo95", real_or_null(f.lo), "exponent_hi95",
            real_or_null(f.hi), "se", real_or_null(f.se_b), "r2", real_or_null(f.r2)));
        json_object_set_new(res, "affine", st ? json_null() : json_pack(
            "{s:s,s:o,s:o,s:o,s:o,s:o}", "definition",
            "least squares of median GPU ms on tokens: ms = fixed_ms + ns_per_key * 1e-6 * N",
            "fixed_ms", real_or_null(af.a), "ns_per_key", real_or_null(af.b * 1e6),
            "ns_per_key_lo95", real_or_null(af.lo * 1e6), "ns_per_key_hi95",
            real_or_null(af.hi * 1e6), "r2", real_or_null(af.r2)));
        json_array_append_new(c->results, res);
        return st;
    }
    json_decref(points);
    if (st)
        return st;
    const bench_attn_opts *o = &r[0].opts;
    printf("device %u: %s\n", dev->info.index, dev->info.name);
    printf("  attention %s over lengths %llu .. %llu (x%u), %s, %s, %u heads x %u dims, ",
           o->with_output ? "statistics + O" : "statistics only",
           (unsigned long long)c->scale_from, (unsigned long long)r[n - 1].opts.tokens,
           SCALE_FACTOR, o->causal ? "causal" : "bidirectional", o->fp16 ? "fp16" : "fp32",
           o->heads, o->head_dim);
    if (o->query_rows)
        printf("%u sampled query rows (%s)\n", o->query_rows,
               rl_rows_scheme_name((rl_rows_scheme)o->sampling));
    else
        printf("every query row (full passes)\n");
    printf("  %9s %6s %11s %9s %14s %9s %9s %10s\n", "tokens", "rows", "GPU ms", "ns/key",
           "ns/(row,key)", "GFLOP/s", "FMA peak", "ratio");
    for (uint32_t i = 0; i < n; i++)
        printf("  %9llu %6u %11.3f %9.2f %14.4f %9.2f %9.2f %10.3f\n",
               (unsigned long long)r[i].opts.tokens, r[i].query_rows, r[i].gpu.median,
               r[i].ns_per_key, r[i].ns_per_pair, r[i].gflops, r[i].fma_gflops, r[i].ratio);
    printf("  verified first at every length: worst error/bound");
    for (uint32_t i = 0; i < n; i++)
        printf(" %.3f", r[i].verify.worst_ratio);
    printf("\n");
    if (n >= 3) {
        printf("  cost exponent: GPU time ~ N^b, b = %.3f (95 %% interval %.3f .. %.3f, least "
               "squares of ln t on ln N over %u lengths, r2 %.4f)\n", f.b, f.lo, f.hi, f.n, f.r2);
        printf("  affine fit   : GPU ms = %.3f + %.2f ns x N (per key: 95 %% interval %.2f .. "
               "%.2f ns; r2 %.5f)\n", af.a, af.b * 1e6, af.lo * 1e6, af.hi * 1e6, af.r2);
    }
    else
        printf("  cost exponent: b = %.3f from %u lengths (no interval: at least 3 needed)\n",
               f.b, f.n);
    return RL_OK;
}

static rl_status bench_attention_on(rlvk_device *dev, void *p, json_t *arr, rl_error *err)
{
    (void)arr;
    const attn_bench_ctx *c = p;
    if (c->scale_from)
        return bench_scale_on(dev, c, err);
    bench_attn_result r;
    rl_status st = bench_attention(dev, &c->o, &r, err);
    if (c->results) {
        json_array_append_new(c->results, attn_json(dev, &r, st, err));
        return st;
    }
    if (st)
        return st;
    const bench_attn_opts *o = &r.opts;
    printf("device %u: %s\n", dev->info.index, dev->info.name);
    printf("  attention %s, %llu tokens x %u heads x %u dims, %s, %s, chunks of %u keys, %u submission(s)\n",
           o->with_output ? "statistics + O" : "statistics only", (unsigned long long)o->tokens,
           o->heads, o->head_dim, o->causal ? "causal" : "bidirectional", o->fp16 ? "fp16" : "fp32",
           r.chunk_keys, r.submissions);
    printf("  kernel path  : %s (%u lane%s per query row)\n", attn_path_name((attn_path_kind)r.path),
           r.split, r.split == 1 ? "" : "s");
    if (o->query_rows)
        printf("  query rows   : %u of %llu sampled (%s), %.0f visible (row, key) pairs per head\n",
               r.query_rows, (unsigned long long)o->tokens,
               rl_rows_scheme_name((rl_rows_scheme)o->sampling), r.pairs);
    printf("  verified first: worst error/bound %.3f, NMSE %.3e (gate %.3e)\n",
           r.verify.worst_ratio, r.verify.nmse, r.verify.nmse_gate);
    printf("  GPU time     : %10.3f ms median of %u (wall %.3f ms, upload to download)\n",
           r.gpu.median, r.gpu.n, r.wall_ms);
    printf("  attention    : %10.2f GFLOP/s (%.3f GFLOP counted), %.3f ns per key, %.4f ns per "
           "(row, key)\n", r.gflops, r.flops * 1e-9, r.ns_per_key, r.ns_per_pair);
    printf("  FMA peak     : %10.2f GFLOP/s (fma_peak kernel, median; one dispatch after each pass)\n",
           r.fma_gflops);
    printf("  FMA widths   :");
    for (uint32_t w = 0; w < BENCH_FMA_WIDTHS; w++)
        printf(" %u vec4 %.2f%s", bench_fma_chains(w), r.fma_width_gflops[w],
               w == r.fma_width ? " (peak)" : "");
    printf(" GFLOP/s (median of 3 each, before the passes)\n");
    printf("  ratio to FMA peak: %.3f (median of %u passes, each against the peak measured right "
           "after it; min %.3f, max %.3f)\n", r.ratio, r.ratios.n, r.ratios.min, r.ratios.max);
    if (r.ratio > 1.0)
        printf("  note         : the kernel ran faster than the FMA yardstick, so no width of "
               "fma_peak.comp reached this device's peak: the ratio is not a fraction of peak\n");
    if (o->window || o->chunk_size) {
        printf("  mask         : window %u, sinks %u, chunk %u: excludes f = %.4f of the pairs, "
               "skips %.4f of the tiles\n", o->window, o->n_sink, o->chunk_size, r.excluded,
               r.tiles_skipped);
        printf("  unmasked     : %10.3f ms median of %u; masked/unmasked GPU time %.4f (median of pairs), "
               "saved %.4f = %.3f f (target >= 0.8 f)\n", r.full_gpu_ms, r.gpu.n,
               r.time_ratio, 1.0 - r.time_ratio, r.saved_over_f);
    }
    return RL_OK;
}

int cmd_bench_attention(int argc, char **argv)
{
    const char *device = "auto", *path = "auto", *sampling = "uniform", *scale = NULL;
    int json = 0, validate = 0, causal = 0, fp16 = 0, with_o = 0, single = 0;
    uint64_t tokens = 16384;
    uint32_t heads = 1, head_dim = 128, reps = 3, window = 0, n_sink = 0, chunk = 0, qrows = 0;
    const cli_opt opts[] = {
        CLI_OPT_DEVICE(&device),
        {"--tokens", CLI_U64, &tokens, "N", "tokens (default 16384)"},
        {"--heads", CLI_U32, &heads, "H", "heads (default 1)"},
        {"--head-dim", CLI_U32, &head_dim, "D", "head dimension, multiple of 4 (default 128)"},
        {"--causal", CLI_FLAG, &causal, NULL, "causal mask (half the work)"},
        {"--fp16", CLI_FLAG, &fp16, NULL, "Q/K/V stored as fp16 (fp32 accumulation)"},
        {"--output", CLI_FLAG, &with_o, NULL, "also compute O = softmax(QK^T)V (default: statistics only)"},
        {"--reps", CLI_U32, &reps, "N", "timed runs, median reported (default 3, max 63)"},
        {"--single", CLI_FLAG, &single, NULL, "time the verified run itself, no extra runs (long inputs)"},
        {"--window", CLI_U32, &window, "W", "sliding-window mask: keys |i - j| < W (also times the unmasked run)"},
        {"--sinks", CLI_U32, &n_sink, "S", "with --window or --chunk: keys j < S always visible (StreamingLLM)"},
        {"--chunk", CLI_U32, &chunk, "C", "chunked mask: keys in the query's chunk of C tokens (Llama 4)"},
        {"--query-rows", CLI_U32, &qrows, "S",
         "time S sampled query rows, each against every key it sees (default: every row)"},
        {"--query-sampling", CLI_STR, &sampling, RL_ROWS_CHOICES,
         "with --query-rows: which rows (default uniform)"},
        {"--scale", CLI_STR, &scale, "FROM:TO",
         "time lengths FROM, 4 FROM, ... up to TO (with --query-rows S; default S 256) and fit "
         "the cost exponent"},
        {"--attn-path", CLI_STR, &path, "auto|scalar|subgroup|coopmat",
         "kernel path (default auto: the device's choice, see `ropelab devices`)"},
        {"--json", CLI_FLAG, &json, NULL, "print results as JSON"},
        CLI_OPTS_VALIDATE(&validate, CLI_VALIDATE_OFF),
    };
    int n_pos = 0;
    int rc = cli_parse("ropelab bench attention [--device D] [--tokens N] [--head-dim D] [--causal] [--fp16]",
                       "Times the streaming attention kernel (statistics only unless --output) and\n"
                       "reports GPU time, GFLOP/s (2*N^2*d for QK^T, 4*N^2*d with O, half when\n"
                       "causal) and the ratio to the device's FMA peak measured by ropelab's own FMA\n"
                       "kernel in the same run. Verified against the CPU reference first.\n"
                       "With a mask (--window, --sinks, --chunk) it also reports the fraction f of\n"
                       "pairs the mask excludes, the tiles skipped, and the GPU time against the\n"
                       "same run unmasked.\n"
                       "With --query-rows S only S query rows are computed (the sampled path of\n"
                       "the attention kinds' query_rows), so the work is S x N x d; --scale FROM:TO\n"
                       "times lengths FROM, 4 FROM, ... <= TO with the same S and prints time per\n"
                       "key with the fitted exponent of time against N (1: linear).",
                       argc, argv, opts, RL_ARRAY_LEN(opts), NULL, 0, &n_pos);
    if (rc >= 0)
        return rc;
    if (tokens == 0 || heads == 0 || head_dim == 0 || reps == 0) {
        cli_error("--tokens, --heads, --head-dim and --reps must be at least 1");
        return CLI_EXIT_USAGE;
    }
    if (reps > BENCH_MAX_REPS) {
        cli_error("--reps %u: must be between 1 and %u", reps, (unsigned)BENCH_MAX_REPS);
        return CLI_EXIT_USAGE;
    }
    if (n_sink && !window && !chunk) {
        cli_error("--sinks %u needs --window or --chunk (without either every key is visible)",
                  n_sink);
        return CLI_EXIT_USAGE;
    }
    rl_rows_scheme scheme;
    if (rl_rows_scheme_parse(sampling, &scheme)) {
        cli_error("--query-sampling %s: must be one of %s", sampling, RL_ROWS_CHOICES);
        return CLI_EXIT_USAGE;
    }
    uint64_t s_from = 0, s_to = 0;
    if (scale) {
        char *end = NULL;
        s_from = strtoull(scale, &end, 10);
        if (end == scale || *end != ':' || (s_to = strtoull(end + 1, &end, 10), *end) ||
            s_from == 0 || s_to < (uint64_t)SCALE_FACTOR * s_from || scale[0] == '-') {
            cli_error("--scale %s: must be FROM:TO with 1 <= FROM and TO >= %u FROM (at least two "
                      "lengths)", scale, SCALE_FACTOR);
            return CLI_EXIT_USAGE;
        }
        if (!qrows)
            qrows = 256;
    }
    if (qrows && (window || chunk)) {
        cli_error("--query-rows %u: sampled rows are timed without a mask (--window, --chunk)",
                  qrows);
        return CLI_EXIT_USAGE;
    }
    attn_path_kind pk = attn_path_parse(path);
    if (pk == ATTN_PATH_COUNT) {
        cli_error("--attn-path %s: must be auto, scalar, subgroup or coopmat", path);
        return CLI_EXIT_USAGE;
    }
    cli_devices d;
    if ((rc = cli_open(device, validate, &d)) >= 0)
        return rc;
    attn_bench_ctx c = {.o = {.tokens = tokens, .heads = heads, .head_dim = head_dim,
                              .causal = causal, .fp16 = fp16, .with_output = with_o, .reps = reps,
                              .single = single, .window = window, .n_sink = n_sink,
                              .chunk_size = chunk, .path = (int)pk, .query_rows = qrows,
                              .sampling = (int)scheme},
                        .scale_from = s_from, .scale_to = s_to,
                        .results = json ? json_array() : NULL};
    rc = cli_each_device(&d, bench_attention_on, &c, NULL);
    cli_close(&d);
    if (json) {
        json_t *flags = json_pack("{s:s,s:I,s:i,s:i,s:b,s:b,s:b,s:i,s:b,s:b,s:i,s:i,s:i,s:i,s:s,"
                                  "s:s?}",
                                  "device", device, "tokens", (json_int_t)tokens, "heads",
                                  (int)heads, "head_dim", (int)head_dim, "causal", causal, "fp16",
                                  fp16, "output", with_o, "reps", (int)reps, "single", single,
                                  "validate", validate, "window", (int)window, "sinks",
                                  (int)n_sink, "chunk", (int)chunk, "query_rows", (int)qrows,
                                  "query_sampling", sampling, "scale", scale);
        rc = cli_bench_print("attention", flags, c.results, rc);
    }
    return rc;
}
