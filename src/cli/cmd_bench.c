/* ropelab bench rope [--device D] ... */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "cli/cli.h"
#include "core/rl_util.h"
#include "pe/rope.h"
#include "rl_push.h"

typedef struct rope_bench_ctx {
    bench_rope_opts o;            /* every field resolved by the command line */
    const char *layout, *precision;
    json_t *results;              /* --json: one object per device */
} rope_bench_ctx;

/* One device's --json object. Every key is always present, in this order;
 * after a failure (error non-empty) the measurements are null and verify is
 * null unless verification ran (then it says why it failed). */
static json_t *rope_json(const rlvk_device *dev, const rope_bench_ctx *c, const bench_rope_result *r,
                         rl_status st, const rl_error *err)
{
    const bench_rope_opts *o = &r->opts; /* resolved (bench_rope sets it before failing) */
    uint64_t n = o->tokens * o->heads * o->head_dim;
    json_t *res = json_object();
    json_object_set_new(res, "device", cli_bench_device_json(&dev->info));
    json_object_set_new(res, "pass", json_boolean(st == RL_OK));
    json_object_set_new(res, "error", json_string(st == RL_OK ? "" : err->msg));
    json_object_set_new(res, "shape", json_pack(
        "{s:I,s:i,s:i,s:i,s:s,s:s,s:s,s:I}", "tokens", (json_int_t)o->tokens, "heads",
        (int)o->heads, "head_dim", (int)o->head_dim, "rotary_dim",
        (int)(o->rotary_dim ? o->rotary_dim : o->head_dim), "layout", c->layout, "precision",
        c->precision, "dtype", "fp32", "bytes_per_run", (json_int_t)(2 * n * sizeof(float))));
    json_object_set_new(res, "timing", json_pack("{s:s,s:i,s:i}", "clock",
                                                 "gpu timestamps; rope and copy interleaved (rounds of one launch each, order alternating)",
                                                 "warmup", (int)o->warmup, "reps", (int)o->reps));
    if (st == RL_OK) {
        json_object_set_new(res, "kernel", json_pack("{s:s,s:o,s:f,s:s}", "name", "rope", "ms",
                                                     cli_bench_times_json(&r->rope), "gb_per_s",
                                                     r->rope_gbs, "reads",
                                                     r->rope_texel ? "texel" : "storage"));
        json_object_set_new(res, "yardstick",
                            json_pack("{s:s,s:s,s:i,s:o,s:f,s:s}", "name", "copy", "what",
                                      "y[i] = x[i] over the same bytes, same device, same run; "
                                      "consecutive vec4s per invocation, workgroup 64",
                                      "vec4_per_invocation", (int)r->copy_vec4_per_inv,
                                      "ms", cli_bench_times_json(&r->copy), "gb_per_s",
                                      r->copy_gbs, "reads", r->copy_texel ? "texel" : "storage"));
        json_object_set_new(res, "ratio", json_pack("{s:s,s:f,s:s,s:o}", "definition",
                                                    "rope gb_per_s / copy gb_per_s (medians)",
                                                    "value", r->ratio, "rounds_definition",
                                                    "per interleaved round: copy ms / rope ms",
                                                    "rounds", cli_bench_times_json(&r->ratio_rounds)));
        json_object_set_new(res, "ratio_read_bytes",
                            json_pack("{s:s,s:I,s:f}", "definition",
                                      "(bytes the mode moves: Q read + written, plus its per-token "
                                      "(cos, sin) table in table mode) / rope ms, over copy "
                                      "gb_per_s", "bytes", (json_int_t)r->read_bytes, "value",
                                      r->ratio_read));
    } else {
        json_object_set_new(res, "kernel", json_null());
        json_object_set_new(res, "yardstick", json_null());
        json_object_set_new(res, "ratio", json_null());
    }
    const vf_stats *v = &r->verify;
    json_t *vj = v->n == 0 ? json_null() : vf_stats_json(v); /* the one tolerance record */
    if (v->n)
        json_object_set_new(vj, "against", json_string("double-precision CPU reference, "
                                                       "per-element bounds"));
    json_object_set_new(res, "verify", vj);
    return res;
}

static rl_status bench_rope_on(rlvk_device *dev, void *p, json_t *arr, rl_error *err)
{
    (void)arr;
    const rope_bench_ctx *c = p;
    bench_rope_result r;
    rl_status st = bench_rope(dev, &c->o, &r, err);
    if (c->results) {
        json_array_append_new(c->results, rope_json(dev, c, &r, st, err));
        return st;
    }
    if (st)
        return st;
    char b[32];
    printf("device %u: %s\n", dev->info.index, dev->info.name);
    printf("  rope %s %s, %llu tokens x %u heads x %u dims (rotary %u), %s moved per run\n",
           c->layout, c->precision, (unsigned long long)r.opts.tokens, r.opts.heads, r.opts.head_dim,
           r.opts.rotary_dim ? r.opts.rotary_dim : r.opts.head_dim,
           rl_fmt_bytes(r.bytes, b, sizeof b));
    printf("  verified first: max abs error %.3e, worst error/bound %.3f, NMSE %.3e (gate %.3e)\n",
           r.verify.max_abs, r.verify.worst_ratio, r.verify.nmse, r.verify.nmse_gate);
    printf("  rope kernel : %9.3f ms median (min %.3f) %8.2f GB/s (x read as %s)\n", r.rope.median,
           r.rope.min, r.rope_gbs, r.rope_texel ? "texels" : "a storage buffer");
    printf("  copy kernel : %9.3f ms median (min %.3f) %8.2f GB/s (x read as %s)\n", r.copy.median,
           r.copy.min, r.copy_gbs, r.copy_texel ? "texels" : "a storage buffer");
    printf("  ratio rope/copy bandwidth: %.3f (GPU timestamps, medians of %u interleaved runs after %u warm-up)\n",
           r.ratio, r.opts.reps, r.opts.warmup);
    printf("  per-round ratio: median %.3f, min %.3f, max %.3f\n", r.ratio_rounds.median,
           r.ratio_rounds.min, r.ratio_rounds.max);
    if (r.read_bytes != r.bytes)
        printf("  ratio against a copy of the bytes it reads (Q + its %.1f MiB table): %.3f\n",
               (double)(r.read_bytes - r.bytes) / 1048576.0, r.ratio_read);
    return RL_OK;
}

int cmd_bench(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "attention") == 0)
        return cmd_bench_attention(argc - 1, argv + 1);
    const char *device = "auto", *layout = rope_layout_name(RL_ROPE_LAYOUT_HALF), *precision = "fp32";
    int json = 0, validate = 0;
    uint64_t tokens = 65536;
    uint32_t heads = 1, head_dim = 128, rotary_dim = 0, reps = 25, warmup = 3;
    const cli_opt opts[] = {
        CLI_OPT_DEVICE(&device),
        {"--tokens", CLI_U64, &tokens, "N", "tokens (default 65536)"},
        {"--heads", CLI_U32, &heads, "H", "heads (default 1)"},
        {"--head-dim", CLI_U32, &head_dim, "D", "head dimension (default 128)"},
        {"--rotary-dim", CLI_U32, &rotary_dim, "R", "rotary dimensions (default head_dim)"},
        {"--layout", CLI_STR, &layout, "half|interleaved", "pair layout: half (default) or interleaved"},
        {"--precision", CLI_STR, &precision, "fp32|table|precise|hf|vllm|ggml-cpu|ggml-vulkan|cuda-fast", "angle precision: fp32 (default), table, precise, or an emulation: hf, vllm, ggml-cpu, ggml-vulkan, cuda-fast (dtype fp32)"},
        {"--reps", CLI_U32, &reps, "N", "timed runs, median reported (default 25, max 63)"},
        {"--warmup", CLI_U32, &warmup, "N", "untimed runs first (default 3)"},
        {"--json", CLI_FLAG, &json, NULL, "print results as JSON"},
        CLI_OPTS_VALIDATE(&validate, CLI_VALIDATE_OFF),
    };
    const char *pos[1];
    int n_pos = 0;
    int rc = cli_parse("ropelab bench rope|attention [options]",
                       "Two benches, each verified against the CPU reference before it is timed:\n"
                       "  rope       RoPE kernel bandwidth against a copy kernel (options below)\n"
                       "  attention  streaming attention GFLOP/s against the device's FMA peak\n"
                       "             (`ropelab bench attention --help` lists its options)\n\n"
                       "bench rope measures the RoPE kernel's bandwidth (Q read + written) and a plain copy\n"
                       "kernel's over the same bytes on the same device, and their ratio. The RoPE\n"
                       "output is verified against the CPU reference before timing; GPU times come\n"
                       "from timestamp queries, median of --reps runs after --warmup runs; the\n"
                       "rope and copy runs are interleaved (one of each per round, order alternating)\n"
                       "so load on a shared device reaches both alike.",
                       argc, argv, opts, RL_ARRAY_LEN(opts), pos, 1, &n_pos);
    if (rc >= 0)
        return rc;
    if (n_pos != 1 || strcmp(pos[0], "rope") != 0) {
        cli_error("bench: name the kernel to measure: `ropelab bench rope` (or `ropelab bench attention`)");
        return CLI_EXIT_USAGE;
    }
    int lay = rope_layout_parse(layout);
    if (lay < 0) {
        cli_error("--layout '%s': expected half or interleaved", layout);
        return CLI_EXIT_USAGE;
    }
    int prec = rope_precision_parse(precision);
    if (prec < 0) {
        cli_error("--precision '%s': expected fp32, table, precise, hf, vllm, ggml-cpu, ggml-vulkan or "
                  "cuda-fast", precision);
        return CLI_EXIT_USAGE;
    }
    if (tokens == 0 || heads == 0 || head_dim == 0) {
        cli_error("--tokens, --heads and --head-dim must be at least 1");
        return CLI_EXIT_USAGE;
    }
    if (reps < 1 || reps > BENCH_MAX_REPS) {
        cli_error("--reps %u: must be between 1 and 63 (timestamp slots)", reps);
        return CLI_EXIT_USAGE;
    }
    cli_devices d;
    if ((rc = cli_open(device, validate, &d)) >= 0)
        return rc;
    rope_bench_ctx c = {.o = {.tokens = tokens, .heads = heads, .head_dim = head_dim,
                             .rotary_dim = rotary_dim, .layout = lay,
                             .precision = prec, .reps = reps, .warmup = warmup},
                         .layout = layout, .precision = precision,
                         .results = json ? json_array() : NULL};
    rc = cli_each_device(&d, bench_rope_on, &c, NULL);
    cli_close(&d);
    if (json) {
        json_t *flags = json_pack("{s:s,s:I,s:i,s:i,s:i,s:s,s:s,s:i,s:i,s:b}", "device", device,
                                  "tokens", (json_int_t)tokens, "heads", (int)heads, "head_dim",
                                  (int)head_dim, "rotary_dim", (int)rotary_dim, "layout", layout,
                                  "precision", precision, "reps", (int)reps, "warmup",
                                  (int)warmup, "validate", validate);
        rc = cli_bench_print("rope", flags, c.results, rc);
    }
    return rc;
}
