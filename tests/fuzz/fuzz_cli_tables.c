/* libFuzzer harness over the real option tables of every command: the
 * first byte picks a command (bench attention included), the rest are its
 * words (NUL-separated), and two `--help=bash` words follow them. cli_parse
 * reads every fuzzed option and value with that command's own table (the
 * kinds, ranges and number rule of rl_parse_u64/rl_parse_f64, `--x=v` and
 * `--x v`, positionals), then the first `--help=bash` it reaches as an
 * option — the second one, when the last fuzzed option took the first as
 * its value — makes the command print its completion words and return
 * before any work: no device is opened, no file read or written. The
 * commands that read words before cli_parse (apply's --set pairs, bench's
 * subcommand) run that part too. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fz_cmd {
    const char *name;
    int (*fn)(int, char **);
} fz_cmd;

static const fz_cmd fz_cmds[] = {
    {"devices", cmd_devices}, {"check", cmd_check},     {"bench", cmd_bench},
    {"plot", cmd_plot},       {"freqs", cmd_freqs},     {"apply", cmd_apply},
    {"model", cmd_model},     {"inspect", cmd_inspect}, {"encodings", cmd_encodings},
    {"run", cmd_run},         {"merge", cmd_merge},     {"attention", cmd_bench_attention},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096)
        return 0;
    static int quiet;
    if (!quiet)
        quiet = freopen("/dev/null", "w", stdout) != NULL; /* the completion words */
    char buf[4097];
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    const fz_cmd *c = &fz_cmds[data[0] % (sizeof fz_cmds / sizeof fz_cmds[0])];
    char *argv[36] = {(char *)c->name};
    int argc = 1;
    for (char *p = buf; argc < 32 && p < buf + size - 1; p += strlen(p) + 1) {
        /* a word that would make the command do work before its table is
         * read cannot come from here: --help forms only as the guard */
        if (!strncmp(p, "--help", 6) || !strcmp(p, "-h"))
            continue;
        argv[argc++] = p;
    }
    char guard1[] = "--help=bash", guard2[] = "--help=bash";
    argv[argc++] = guard1;
    argv[argc++] = guard2;
    argv[argc] = NULL;
    (void)c->fn(argc, argv);
    return 0;
}
