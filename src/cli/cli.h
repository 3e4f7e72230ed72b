/* cli.h — the front door (prefix cli_): flag parsing shared by every
 * subcommand, device opening, and the subcommands' entry points. Only this
 * module prints results to stdout. Exit codes: 0 success, 1 a check or
 * verification failed, 2 bad usage or environment (no Vulkan, bad device). */
#ifndef CLI_H
#define CLI_H

#include <stddef.h>
#include <stdint.h>

#include "vk/rlvk.h"

enum { CLI_EXIT_OK = 0, CLI_EXIT_FAIL = 1, CLI_EXIT_USAGE = 2 };

typedef enum cli_kind {
    CLI_FLAG,     /* sets *(int *)dst = 1 */
    CLI_FLAG_OFF, /* sets *(int *)dst = 0: the --no-X of a pair (CLI_OPTS_VALIDATE) */
    CLI_STR, CLI_U32, CLI_U64, CLI_F64, CLI_F64_SIGNED,
    CLI_STRS /* repeatable: every value kept, in order, into a cli_strs */
} cli_kind;

/* The values of a repeatable option (CLI_STRS), at most CLI_MAX_REPEAT. */
#define CLI_MAX_REPEAT 16
typedef struct cli_strs {
    const char *v[CLI_MAX_REPEAT];
    size_t n;
} cli_strs;

/* One flag. Numbers are parsed strictly: decimal digits only for U32/U64
 * (no sign, space, hex, octal or leading zero), a plain decimal number for
 * F64, the whole string, range-checked against the type (a command checks
 * its own limits after parsing). Errors name the flag. */
typedef struct cli_opt {
    const char *name;   /* "--device" */
    cli_kind kind;
    void *dst;          /* int*, const char**, uint32_t*, uint64_t*, double*, cli_strs* */
    /* The value's placeholder, which help, the man page and the bash
     * completion show: "N", "FILE", "DIR", "ENCODING" (a registry name), or
     * the alternatives "half|interleaved" (lower case: literal values,
     * completed; upper case: placeholders, e.g. "auto|all|N|NAME"). */
    const char *meta;
    const char *help;
} cli_opt;

/* The one --device option every command that opens a device declares
 * (rlvk_select reads the same forms for all of them). */
#define CLI_DEVICE_META "auto|all|N|NAME"
#define CLI_DEVICE_HELP "device: index, name substring, uuid:U (32 hex digits), auto or all"
#define CLI_OPT_DEVICE(dst) {"--device", CLI_STR, (dst), CLI_DEVICE_META, CLI_DEVICE_HELP " (default auto)"}

/* The one pair of validation options every command that opens a device
 * declares: --validate and --no-validate set the same int (the last one
 * given wins); the command initialises it to its default: on for check,
 * run and apply, whose numbers are verified; off for bench, whose timings
 * the layer would distort. */
#define CLI_OPTS_VALIDATE(dst, dflt)                                                           \
    {"--validate", CLI_FLAG, (dst), NULL,                                                      \
     "enable the Khronos validation layer" dflt},                                              \
    {"--no-validate", CLI_FLAG_OFF, (dst), NULL, "run without the Khronos validation layer"}
#define CLI_VALIDATE_ON " (default: on, when the layer is installed)"
#define CLI_VALIDATE_OFF " (default: off; timings with it are not the kernel's)"

/* Parses argv[1..] against opts; positional arguments go to pos (at most
 * max_pos). Returns -1 to continue, or an exit code (0 after --help, 2 after
 * an error, which has been printed naming the flag). `--help=man` and
 * `--help=bash` print the same usage, text and options as a man page
 * section and as a bash completion case body (main.c assembles them into
 * ropelab.1 and the completion script, `ropelab help --man|--bash-completion`). */
int cli_parse(const char *usage, const char *about, int argc, char **argv, const cli_opt *opts,
              size_t n_opts, const char **pos, int max_pos, int *n_pos);

/* Prints the bash statement that completes a value of this meta (see
 * cli_opt.meta): `COMPREPLY=(...)` from its literal alternatives, files,
 * directories or $_ropelab_encodings. */
void cli_bash_value(const char *meta);

/* Splits argv[0..argc) into the values of every `--set KEY=VALUE` /
 * `--set=KEY=VALUE` (sets, in order) and the other arguments (rest); both
 * arrays hold argc entries. Returns -1 to continue, or 2 after printing
 * that a trailing --set lacks its value. */
int cli_split_sets(int argc, char **argv, char **rest, int *nrest, const char **sets, int *nset);

/* For the rope encoding: every --set KEY must mean something for the
 * rope_type params name (rope_key_applies); prints "--set KEY: ..." and
 * returns 2 for the first that does not, else -1. Other encodings: -1. */
struct json_t;
int cli_sets_apply(const char *encoding, const struct json_t *params, const char *const *sets,
                   int nset);

/* Opened devices for a subcommand. */
typedef struct cli_devices {
    rlvk_instance inst;
    uint32_t n;
    uint32_t index[16];
} cli_devices;

/* Creates the instance (validation when asked) and resolves spec; prints
 * the error and returns 2 on failure, -1 on success. */
int cli_open(const char *spec, int validation, cli_devices *d);
void cli_close(cli_devices *d);

/* Per-device work of a subcommand: runs on an open device; appends its
 * result to arr (JSON mode, arr non-NULL) or prints it. */
struct json_t;
typedef rl_status (*cli_device_fn)(rlvk_device *dev, void *ctx, struct json_t *arr,
                                   rl_error *err);
/* Creates each selected device in turn, calls fn, destroys it; prints every
 * error. With arr, prints the array as JSON at the end and releases it.
 * Returns the exit code: 0, 1 if a verification failed (RL_ERR_MISMATCH),
 * else 2 for bad input or an unusable device. */
int cli_each_device(cli_devices *d, cli_device_fn fn, void *ctx, struct json_t *arr);

/* A device's identity as JSON (new object, caller owns): vendor_id_hex,
 * device_id_hex, driver_version_raw, driver_version_decoded (vulkaninfo's
 * decoding), driver_id (VkDriverId name) and driver_id_value,
 * conformance_version ("" if not reported), device_uuid (hex, "" if not
 * reported). Used by `devices --json` and `check --json`. */
struct json_t *cli_device_identity_json(const rlvk_device_info *in);

/* bench --json (cmd_bench_out.c, shared by both benches): the device object
 * (index, name, type, api_version, driver_name, driver_info, the identity
 * fields above, timestamp_period_ns, timestamp_valid_bits); one
 * measurement's times {"runs", "median", "min", "max", "all": [run order]}
 * in ms; and the document {"version", "git_commit", "bench", "flags",
 * "pass", "results"} printed on stdout, which takes flags and results and
 * returns rc (2 if it could not be formatted). New objects, caller owns. */
struct bench_times;
struct json_t *cli_bench_device_json(const rlvk_device_info *in);
struct json_t *cli_bench_times_json(const struct bench_times *t);
int cli_bench_print(const char *bench, struct json_t *flags, struct json_t *results, int rc);

/* Prints "ropelab: <msg>" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* SIGINT / SIGTERM (run, merge, plot): the first one sets cli_stop_signal,
 * which the command's work checks at its safe points (between runs,
 * between figures) to stop with everything written whole; SA_RESETHAND
 * makes a second one end the process at once. The command then exits
 * 128 + the signal (130, 143), as a shell reports it. */
#include <signal.h>
extern volatile sig_atomic_t cli_stop_signal;
void cli_catch_stop_signals(void);

int cmd_devices(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_freqs(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_encodings(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_bench_attention(int argc, char **argv); /* argv[0] = "attention" */

#endif
