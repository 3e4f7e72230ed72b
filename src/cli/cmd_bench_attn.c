/* ropelab bench attention [--device D] [--tokens N] [--head-dim D] [--causal] [--fp16] */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "cli/cli.h"
#include "core/rl_util.h"

static rl_status bench_attention_on(rlvk_device *dev, void *p, json_t *arr, rl_error *err)
{
    const bench_attn_opts *c = p;
    bench_attn_result r;
    rl_status st = bench_attention(dev, c, &r, err);
    if (st)
        return st;
    if (arr) {
        json_array_append_new(arr, json_pack(
            "{s:s,s:s,s:I,s:i,s:i,s:b,s:b,s:b,s:f,s:f,s:f,s:f,s:f,s:f,s:i,s:i,s:f,s:f,s:f}",
            "device", dev->info.name, "kernel", "attention", "tokens", (json_int_t)c->tokens,
            "heads", (int)c->heads, "head_dim", (int)c->head_dim, "causal", c->causal, "fp16", c->fp16,
            "output", c->with_output, "gpu_ms_median", r.gpu_ms, "wall_ms", r.wall_ms, "gflop",
            r.flops * 1e-9, "gflop_per_s", r.gflops, "fma_peak_gflop_per_s", r.fma_gflops,
            "ratio_to_fma_peak", r.ratio, "submissions", (int)r.submissions,
            "chunk_keys", (int)r.chunk_keys,
            "verify_worst_error_over_bound", r.verify.worst_ratio, "verify_nmse", r.verify.nmse,
            "verify_nmse_gate", r.verify.nmse_gate));
    } else {
        printf("device %u: %s\n", dev->info.index, dev->info.name);
        printf("  attention %s, %llu tokens x %u heads x %u dims, %s, %s, chunks of %u keys, %u submission(s)\n",
               c->with_output ? "statistics + O" : "statistics only", (unsigned long long)c->tokens,
               c->heads, c->head_dim, c->causal ? "causal" : "bidirectional", c->fp16 ? "fp16" : "fp32",
               r.chunk_keys, r.submissions);
        printf("  verified first: worst error/bound %.3f, NMSE %.3e (gate %.3e)\n",
               r.verify.worst_ratio, r.verify.nmse, r.verify.nmse_gate);
        printf("  GPU time     : %10.3f ms median of %u (wall %.3f ms, upload to download)\n",
               r.gpu_ms, r.opts.reps, r.wall_ms);
        printf("  attention    : %10.2f GFLOP/s (%.3f GFLOP counted)\n", r.gflops, r.flops * 1e-9);
        printf("  FMA peak     : %10.2f GFLOP/s (fma_peak kernel, same run)\n", r.fma_gflops);
        printf("  ratio to FMA peak: %.3f\n", r.ratio);
    }
    return RL_OK;
}

int cmd_bench_attention(int argc, char **argv)
{
    const char *device = "auto";
    int json = 0, validate = 0, causal = 0, fp16 = 0, with_o = 0, single = 0;
    uint64_t tokens = 16384;
    uint32_t heads = 1, head_dim = 128, reps = 3;
    const cli_opt opts[] = {
        {"--device", CLI_STR, &device, "auto|all|N|NAME", "device: index, name substring, auto (default) or all"},
        {"--tokens", CLI_U64, &tokens, "N", "tokens (default 16384)"},
        {"--heads", CLI_U32, &heads, "H", "heads (default 1)"},
        {"--head-dim", CLI_U32, &head_dim, "D", "head dimension, multiple of 4 (default 128)"},
        {"--causal", CLI_FLAG, &causal, NULL, "causal mask (half the work)"},
        {"--fp16", CLI_FLAG, &fp16, NULL, "Q/K/V stored as fp16 (fp32 accumulation)"},
        {"--output", CLI_FLAG, &with_o, NULL, "also compute O = softmax(QK^T)V (default: statistics only)"},
        {"--reps", CLI_U32, &reps, "N", "timed runs, median reported (default 3)"},
        {"--single", CLI_FLAG, &single, NULL, "time the verified run itself, no extra runs (long inputs)"},
        {"--json", CLI_FLAG, &json, NULL, "print results as JSON"},
        {"--validate", CLI_FLAG, &validate, NULL, "enable the Khronos validation layer"},
    };
    int n_pos = 0;
    int rc = cli_parse("ropelab bench attention [--device D] [--tokens N] [--head-dim D] [--causal] [--fp16]",
                       "Times the streaming attention kernel (statistics only unless --output) and\n"
                       "reports GPU time, GFLOP/s (2*N^2*d for QK^T, 4*N^2*d with O, half when\n"
                       "causal) and the ratio to the device's FMA peak measured by ropelab's own FMA\n"
                       "kernel in the same run. Verified against the CPU reference first.",
                       argc, argv, opts, RL_ARRAY_LEN(opts), NULL, 0, &n_pos);
    if (rc >= 0)
        return rc;
    if (tokens == 0 || heads == 0 || head_dim == 0 || reps == 0) {
        cli_error("--tokens, --heads, --head-dim and --reps must be at least 1");
        return CLI_EXIT_USAGE;
    }
    cli_devices d;
    if ((rc = cli_open(device, validate, &d)) >= 0)
        return rc;
    bench_attn_opts o = {.tokens = tokens, .heads = heads, .head_dim = head_dim,
                             .causal = causal, .fp16 = fp16, .with_output = with_o, .reps = reps,
                             .single = single};
    rc = cli_each_device(&d, bench_attention_on, &o, json ? json_array() : NULL);
    cli_close(&d);
    return rc;
}
