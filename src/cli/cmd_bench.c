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
    bench_rope_opts o;
    const char *layout, *precision;
} rope_bench_ctx;

static rl_status bench_rope_on(rlvk_device *dev, void *p, json_t *arr, rl_error *err)
{
    const rope_bench_ctx *c = p;
    bench_rope_result r;
    rl_status st = bench_rope(dev, &c->o, &r, err);
    if (st)
        return st;
    if (arr) {
        json_array_append_new(arr, json_pack(
            "{s:s,s:s,s:I,s:i,s:i,s:i,s:s,s:s,s:I,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
            "device", dev->info.name, "kernel", "rope", "tokens", (json_int_t)r.opts.tokens,
            "heads", (int)r.opts.heads, "head_dim", (int)r.opts.head_dim, "rotary_dim",
            (int)(r.opts.rotary_dim ? r.opts.rotary_dim : r.opts.head_dim), "layout", c->layout,
            "precision", c->precision,
            "bytes", (json_int_t)r.bytes, "reps", (int)r.opts.reps, "rope_ms_median", r.rope_ms,
            "copy_ms_median", r.copy_ms, "rope_ms_min", r.rope_ms_min, "copy_ms_min",
            r.copy_ms_min, "rope_gb_per_s", r.rope_gbs, "copy_gb_per_s", r.copy_gbs,
            "ratio", r.ratio, "verify_max_abs_error", r.verify.max_abs,
            "verify_worst_error_over_bound", r.verify.worst_ratio, "verify_nmse", r.verify.nmse,
            "verify_nmse_gate", r.verify.nmse_gate));
    } else {
        char b[32];
        printf("device %u: %s\n", dev->info.index, dev->info.name);
        printf("  rope %s %s, %llu tokens x %u heads x %u dims (rotary %u), %s moved per run\n",
               c->layout, c->precision, (unsigned long long)r.opts.tokens, r.opts.heads, r.opts.head_dim,
               r.opts.rotary_dim ? r.opts.rotary_dim : r.opts.head_dim,
               rl_fmt_bytes(r.bytes, b, sizeof b));
        printf("  verified first: max abs error %.3e, worst error/bound %.3f, NMSE %.3e (gate %.3e)\n",
               r.verify.max_abs, r.verify.worst_ratio, r.verify.nmse, r.verify.nmse_gate);
        printf("  rope kernel : %9.3f ms median (min %.3f) %8.2f GB/s\n", r.rope_ms,
               r.rope_ms_min, r.rope_gbs);
        printf("  copy kernel : %9.3f ms median (min %.3f) %8.2f GB/s\n", r.copy_ms,
               r.copy_ms_min, r.copy_gbs);
        printf("  ratio rope/copy bandwidth: %.3f (GPU timestamps, median of %u runs after %u warm-up)\n",
               r.ratio, r.opts.reps, r.opts.warmup);
    }
    return RL_OK;
}

int cmd_bench(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "attention") == 0)
        return cmd_bench_attention(argc - 1, argv + 1);
    const char *device = "auto", *layout = "half", *precision = "fp32";
    int json = 0, validate = 0;
    uint64_t tokens = 65536;
    uint32_t heads = 1, head_dim = 128, rotary_dim = 0, reps = 25, warmup = 3;
    const cli_opt opts[] = {
        {"--device", CLI_STR, &device, "auto|all|N|NAME", "device: index, name substring, auto (default) or all"},
        {"--tokens", CLI_U64, &tokens, "N", "tokens (default 65536)"},
        {"--heads", CLI_U32, &heads, "H", "heads (default 1)"},
        {"--head-dim", CLI_U32, &head_dim, "D", "head dimension (default 128)"},
        {"--rotary-dim", CLI_U32, &rotary_dim, "R", "rotary dimensions (default head_dim)"},
        {"--layout", CLI_STR, &layout, "half|interleaved", "pair layout: half (default) or interleaved"},
        {"--precision", CLI_STR, &precision, "fp32|table|precise|hf|vllm|ggml-cpu|ggml-vulkan|cuda-fast", "angle precision: fp32 (default), table, precise, or an emulation: hf, vllm, ggml-cpu, ggml-vulkan, cuda-fast (dtype fp32)"},
        {"--reps", CLI_U32, &reps, "N", "timed runs, median reported (default 25, max 63)"},
        {"--warmup", CLI_U32, &warmup, "N", "untimed runs first (default 3)"},
        {"--json", CLI_FLAG, &json, NULL, "print results as JSON"},
        {"--validate", CLI_FLAG, &validate, NULL, "enable the Khronos validation layer"},
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
                       "from timestamp queries, median of --reps runs after --warmup runs.",
                       argc, argv, opts, RL_ARRAY_LEN(opts), pos, 1, &n_pos);
    if (rc >= 0)
        return rc;
    if (n_pos != 1 || strcmp(pos[0], "rope") != 0) {
        cli_error("bench: name the kernel to measure: `ropelab bench rope` (or `ropelab bench attention`)");
        return CLI_EXIT_USAGE;
    }
    int lay;
    if (strcmp(layout, "half") == 0)
        lay = RL_ROPE_LAYOUT_HALF;
    else if (strcmp(layout, "interleaved") == 0)
        lay = RL_ROPE_LAYOUT_INTERLEAVED;
    else {
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
    if (reps < 1 || reps > 63) {
        cli_error("--reps %u: must be between 1 and 63 (timestamp slots)", reps);
        return CLI_EXIT_USAGE;
    }
    cli_devices d;
    if ((rc = cli_open(device, validate, &d)) >= 0)
        return rc;
    rope_bench_ctx c = {.o = {.tokens = tokens, .heads = heads, .head_dim = head_dim,
                             .rotary_dim = rotary_dim, .layout = lay,
                             .precision = prec, .reps = reps, .warmup = warmup},
                         .layout = layout, .precision = precision};
    rc = cli_each_device(&d, bench_rope_on, &c, json ? json_array() : NULL);
    cli_close(&d);
    return rc;
}
