/* ropelab bench attention [--device D] [--tokens N] [--head-dim D] [--causal] [--fp16] */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn_path.h"
#include "bench/bench.h"
#include "cli/cli.h"
#include "core/rl_util.h"
#include "rl_push.h"

typedef struct attn_bench_ctx {
    bench_attn_opts o;            /* every field resolved by the command line */
    json_t *results;              /* --json: one object per device */
} attn_bench_ctx;

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
        "{s:I,s:i,s:i,s:b,s:s,s:b}", "tokens", (json_int_t)o->tokens, "heads", (int)o->heads,
        "head_dim", (int)o->head_dim, "causal", o->causal, "dtype", o->fp16 ? "fp16" : "fp32",
        "output", o->with_output));
    json_object_set_new(res, "timing", json_pack(
        "{s:s,s:i,s:b}", "clock",
        o->single ? "gpu timestamps, the verified run itself (--single)"
                  : "gpu timestamps summed over a pass's submissions; the verified run is the warm-up",
        "reps", (int)o->reps, "single", o->single));
    if (st == RL_OK) {
        json_object_set_new(res, "kernel", json_pack(
            "{s:s,s:o,s:f,s:s,s:f,s:f,s:i,s:i}", "name",
            o->with_output ? "attention statistics + O" : "attention statistics", "ms",
            cli_bench_times_json(&r->gpu), "wall_ms_last", r->wall_ms, "flop_count",
            "2*N^2*d*heads (x2 with O, /2 causal)", "gflop", r->flops * 1e-9, "gflop_per_s",
            r->gflops, "submissions", (int)r->submissions, "chunk_keys", (int)r->chunk_keys));
        json_object_set_new(json_object_get(res, "kernel"), "path",
                            json_pack("{s:s,s:i}", "name", attn_path_name((attn_path_kind)r->path),
                                      "lanes_per_row", (int)r->split));
        json_t *widths = json_array();
        for (uint32_t w = 0; w < BENCH_FMA_WIDTHS; w++)
            json_array_append_new(widths, json_pack("{s:i,s:f}", "vec4_chains",
                                                    (int)bench_fma_chains(w), "gflop_per_s",
                                                    r->fma_width_gflops[w]));
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

static rl_status bench_attention_on(rlvk_device *dev, void *p, json_t *arr, rl_error *err)
{
    (void)arr;
    const attn_bench_ctx *c = p;
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
    printf("  verified first: worst error/bound %.3f, NMSE %.3e (gate %.3e)\n",
           r.verify.worst_ratio, r.verify.nmse, r.verify.nmse_gate);
    printf("  GPU time     : %10.3f ms median of %u (wall %.3f ms, upload to download)\n",
           r.gpu.median, r.gpu.n, r.wall_ms);
    printf("  attention    : %10.2f GFLOP/s (%.3f GFLOP counted)\n", r.gflops, r.flops * 1e-9);
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
    const char *device = "auto", *path = "auto";
    int json = 0, validate = 0, causal = 0, fp16 = 0, with_o = 0, single = 0;
    uint64_t tokens = 16384;
    uint32_t heads = 1, head_dim = 128, reps = 3, window = 0, n_sink = 0, chunk = 0;
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
        {"--attn-path", CLI_STR, &path, "auto|scalar|subgroup|coopmat",
         "kernel path (default auto: the device's choice, see `ropelab devices`)"},
        {"--json", CLI_FLAG, &json, NULL, "print results as JSON"},
        {"--validate", CLI_FLAG, &validate, NULL, "enable the Khronos validation layer"},
    };
    int n_pos = 0;
    int rc = cli_parse("ropelab bench attention [--device D] [--tokens N] [--head-dim D] [--causal] [--fp16]",
                       "Times the streaming attention kernel (statistics only unless --output) and\n"
                       "reports GPU time, GFLOP/s (2*N^2*d for QK^T, 4*N^2*d with O, half when\n"
                       "causal) and the ratio to the device's FMA peak measured by ropelab's own FMA\n"
                       "kernel in the same run. Verified against the CPU reference first.\n"
                       "With a mask (--window, --sinks, --chunk) it also reports the fraction f of\n"
                       "pairs the mask excludes, the tiles skipped, and the GPU time against the\n"
                       "same run unmasked.",
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
                              .chunk_size = chunk, .path = (int)pk},
                        .results = json ? json_array() : NULL};
    rc = cli_each_device(&d, bench_attention_on, &c, NULL);
    cli_close(&d);
    if (json) {
        json_t *flags = json_pack("{s:s,s:I,s:i,s:i,s:b,s:b,s:b,s:i,s:b,s:b,s:i,s:i,s:i}",
                                  "device", device, "tokens", (json_int_t)tokens, "heads",
                                  (int)heads, "head_dim", (int)head_dim, "causal", causal, "fp16",
                                  fp16, "output", with_o, "reps", (int)reps, "single", single,
                                  "validate", validate, "window", (int)window, "sinks",
                                  (int)n_sink, "chunk", (int)chunk);
        rc = cli_bench_print("attention", flags, c.results, rc);
    }
    return rc;
}
