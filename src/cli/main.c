/* ropelab — position encodings and attention as Vulkan compute kernels,
 * every number checked against a double-precision CPU reference. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli_version.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *about;
} command;

static const command commands[] = {
    {"devices", cmd_devices, "list Vulkan devices and their limits"},
    {"check", cmd_check, "verify every kernel on a device against the CPU references"},
    {"bench", cmd_bench, "measure kernel bandwidth against a copy kernel on a device"},
    {"plot", cmd_plot, "render a results directory's figures (gnuplot) and report.md"},
    {"freqs", cmd_freqs, "print a RoPE setting's effective frequencies (HF config or flags)"},
    {"apply", cmd_apply, "apply an encoding to Q/K from .npy/.safetensors, verified, to .npy"},
    {"model", cmd_model, "show what ropelab computes for a model's config.json (shape, encodings)"},
    {"inspect", cmd_inspect, "show an encoding's biases, buckets, slopes or tables"},
    {"encodings", cmd_encodings, "list the encoding registry and each parameter"},
    {"run", cmd_run, "run a batch file of experiments (sweeps, devices, shards, resume)"},
    {"merge", cmd_merge, "combine the outputs of sharded runs into one results directory"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: ropelab <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].about);
    fprintf(out, "\n`ropelab <command> --help` (or `ropelab help <command>`) describes each\n"
                 "command's options; `ropelab --version` prints the version and git commit.\n"
                 "exit codes: 0 ok, 1 a check failed, 2 bad usage or no usable Vulkan device\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    /* `ropelab help CMD [SUB]` is `ropelab CMD [SUB] --help`. */
    if (strcmp(argv[1], "help") == 0 && argc >= 3 && argc <= 4) {
        char *hargv[4] = {argv[2], argc == 4 ? argv[3] : (char *)"--help",
                          argc == 4 ? (char *)"--help" : NULL, NULL};
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (strcmp(argv[2], commands[i].name) == 0)
                return commands[i].run(argc - 1, hargv);
        cli_error("help: unknown command '%s' (see ropelab --help)", argv[2]);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        if (argc > 2 && strcmp(argv[1], "help") == 0) {
            cli_error("help: name one command (ropelab help CMD [SUBCOMMAND])");
            return CLI_EXIT_USAGE;
        }
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("ropelab %s%s%s\n", RL_VERSION, RL_GIT_COMMIT[0] ? " " : "", RL_GIT_COMMIT);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    cli_error("unknown command '%s' (see ropelab --help)", argv[1]);
    return CLI_EXIT_USAGE;
}
