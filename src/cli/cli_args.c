#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "core/rl_util.h"
#include "pe/rope_scaling.h"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char msg[4096], shown[4096 * 4];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* a message quotes names, keys and file contents: shown, never obeyed */
    fprintf(stderr, "ropelab: %s\n", rl_clean(msg, shown, sizeof shown));
}

/* Options that take no value. */
static int is_flag(cli_kind k)
{
    return k == CLI_FLAG || k == CLI_FLAG_OFF;
}

static void print_help(const char *usage, const char *about, const cli_opt *opts, size_t n)
{
    printf("usage: %s\n\n%s\n\noptions:\n", usage, about);
    for (size_t i = 0; i < n; i++) {
        char left[96];
        snprintf(left, sizeof left, "%s%s%s", opts[i].name, is_flag(opts[i].kind) ? "" : " ",
                 is_flag(opts[i].kind) ? "" : opts[i].meta);
        printf("  %-26s %s\n", left, opts[i].help);
    }
    printf("  %-26s %s\n", "--help", "show this help");
}

/* s as roff text: backslashes escaped, '-' as \- (so options copy and
 * search as typed), a leading '.' or '\'' made literal. */
static void roff_text(const char *s)
{
    int bol = 1;
    for (; *s; s++) {
        if (bol && (*s == '.' || *s == '\''))
            fputs("\\&", stdout);
        bol = *s == '\n';
        if (*s == '\\')
            fputs("\\e", stdout);
        else if (*s == '-')
            fputs("\\-", stdout);
        else
            putchar(*s);
    }
}

/* The same usage, text and options as print_help, as a man page section
 * body (main.c's `ropelab help --man` writes the page around it). */
static void print_man(const char *usage, const char *about, const cli_opt *opts, size_t n)
{
    fputs(".PP\n.B usage:\n", stdout);
    roff_text(usage);
    fputs("\n.PP\n", stdout);
    roff_text(about);
    fputs("\n", stdout);
    for (size_t i = 0; i < n; i++) {
        fputs(is_flag(opts[i].kind) ? ".TP\n.B " : ".TP\n.BI ", stdout);
        roff_text(opts[i].name);
        if (!is_flag(opts[i].kind)) {
            fputs(" \" ", stdout);
            roff_text(opts[i].meta);
            fputs("\"", stdout);
        }
        fputs("\n", stdout);
        roff_text(opts[i].help);
        fputs("\n", stdout);
    }
    fputs(".TP\n.B \\-\\-help\nshow this help\n", stdout);
}

/* Completion words of an option's value from its meta (cli.h): the literal
 * alternatives of "a|b|N" (lower case; upper-case ones are placeholders),
 * files for FILE/PATH, directories for DIR, the registry for ENCODING;
 * nothing for a bare placeholder (N, D). */
void cli_bash_value(const char *m)
{
    if (strchr(m, '|')) {
        fputs("COMPREPLY=($(compgen -W '", stdout);
        int first = 1;
        for (const char *a = m; *a;) {
            size_t len = strcspn(a, "|");
            int literal = 0;
            for (size_t k = 0; k < len; k++)
                if (a[k] >= 'a' && a[k] <= 'z')
                    literal = 1;
            if (literal)
                printf("%s%.*s", first ? "" : " ", (int)len, a);
            first = first && !literal;
            a += len + (a[len] == '|');
        }
        fputs("' -- \"$cur\"))", stdout);
    } else if (strcmp(m, "FILE") == 0 || strcmp(m, "PATH") == 0) {
        fputs("COMPREPLY=($(compgen -f -- \"$cur\"))", stdout);
    } else if (strcmp(m, "DIR") == 0) {
        fputs("COMPREPLY=($(compgen -d -- \"$cur\"))", stdout);
    } else if (strcmp(m, "ENCODING") == 0) {
        fputs("COMPREPLY=($(compgen -W \"$_ropelab_encodings\" -- \"$cur\"))", stdout);
    } else {
        fputs("COMPREPLY=()", stdout);
    }
}

/* A bash completion case body for this command: what follows each option
 * that takes a value, then the options themselves (main.c's `ropelab help
 * --bash-completion` writes the function around it). */
static void print_bash(const cli_opt *opts, size_t n)
{
    fputs("        case $prev in\n", stdout);
    for (size_t i = 0; i < n; i++) {
        if (is_flag(opts[i].kind))
            continue;
        printf("        %s) ", opts[i].name);
        cli_bash_value(opts[i].meta);
        fputs("; return ;;\n", stdout);
    }
    fputs("        esac\n        opts='", stdout);
    for (size_t i = 0; i < n; i++)
        printf("%s ", opts[i].name);
    fputs("--help'\n", stdout);
}

static int parse_value(const cli_opt *o, const char *v)
{
    double lo = o->kind == CLI_F64_SIGNED ? -INFINITY : 0;
    double hi = o->kind == CLI_U32 ? (double)UINT32_MAX
                : o->kind == CLI_U64 ? 18446744073709551615.0 : INFINITY;
    switch (o->kind) {
    case CLI_STR:
        *(const char **)o->dst = v;
        return 0;
    case CLI_STRS: {
        cli_strs *l = o->dst;
        if (l->n == CLI_MAX_REPEAT) {
            cli_error("%s: given more than %d times", o->name, CLI_MAX_REPEAT);
            return -1;
        }
        l->v[l->n++] = v;
        return 0;
    }
    case CLI_U32:
    case CLI_U64: {
        unsigned long long x;
        int bad = rl_parse_u64(v, &x);
        if (bad == -2) {
            cli_error("%s: %s is outside the allowed range [%.0f, %.0f]", o->name, v, lo, hi);
            return -1;
        }
        if (bad) {
            cli_error("%s: '%s' is not a decimal integer (digits only: no sign, space, hex or "
                      "leading zero)", o->name, v);
            return -1;
        }
        if ((double)x < lo || (double)x > hi || (o->kind == CLI_U32 && x > UINT32_MAX)) {
            cli_error("%s: %s is outside the allowed range [%.0f, %.0f]", o->name, v, lo, hi);
            return -1;
        }
        if (o->kind == CLI_U32)
            *(uint32_t *)o->dst = (uint32_t)x;
        else
            *(uint64_t *)o->dst = x;
        return 0;
    }
    case CLI_F64:
    case CLI_F64_SIGNED: {
        double x;
        if (rl_parse_f64(v, o->kind == CLI_F64_SIGNED, &x)) {
            cli_error("%s: '%s' is not a decimal number (digits, '.' and an exponent only: no "
                      "%ssign, space, hex or leading zero)", o->name, v,
                      o->kind == CLI_F64_SIGNED ? "'+' " : "");
            return -1;
        }
        if (x < lo || x > hi) {
            cli_error("%s: %s is outside the allowed range [%.17g, %.17g]", o->name, v, lo, hi);
            return -1;
        }
        *(double *)o->dst = x;
        return 0;
    }
    case CLI_FLAG:
    case CLI_FLAG_OFF:
        break;
    }
    cli_error("%s: '%s' is not a valid value", o->name, v);
    return -1;
}

int cli_parse(const char *usage, const char *about, int argc, char **argv, const cli_opt *opts,
              size_t n_opts, const char **pos, int max_pos, int *n_pos)
{
    int np = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            print_help(usage, about, opts, n_opts);
            return CLI_EXIT_OK;
        }
        if (strcmp(a, "--help=man") == 0) {
            print_man(usage, about, opts, n_opts);
            return CLI_EXIT_OK;
        }
        if (strcmp(a, "--help=bash") == 0) {
            print_bash(opts, n_opts);
            return CLI_EXIT_OK;
        }
        if (strncmp(a, "--", 2) != 0) {
            if (np >= max_pos) {
                cli_error("unexpected argument '%s' (usage: %s)", a, usage);
                return CLI_EXIT_USAGE;
            }
            pos[np++] = a;
            continue;
        }
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const cli_opt *o = NULL;
        for (size_t k = 0; k < n_opts; k++)
            if (strlen(opts[k].name) == len && strncmp(opts[k].name, a, len) == 0)
                o = &opts[k];
        if (!o) {
            cli_error("unknown option '%.*s' (see --help)", (int)len, a);
            return CLI_EXIT_USAGE;
        }
        if (is_flag(o->kind)) {
            if (eq) {
                cli_error("%s takes no value", o->name);
                return CLI_EXIT_USAGE;
            }
            *(int *)o->dst = o->kind == CLI_FLAG;
            continue;
        }
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!v) {
            cli_error("%s needs a value (%s)", o->name, o->meta);
            return CLI_EXIT_USAGE;
        }
        if (parse_value(o, v) != 0)
            return CLI_EXIT_USAGE;
    }
    if (n_pos)
        *n_pos = np;
    return -1;
}

int cli_open(const char *spec, int validation, cli_devices *d)
{
    memset(d, 0, sizeof *d);
    if (spec && !*spec) {
        cli_error("--device: empty (give an index, a name substring, auto or all)");
        return CLI_EXIT_USAGE;
    }
    rl_error err = {0};
    rlvk_instance_desc desc = {.validation = validation};
    if (rlvk_instance_create(&desc, &d->inst, &err) != RL_OK) {
        cli_error("%s", err.msg);
        return CLI_EXIT_USAGE;
    }
    uint32_t *idx = calloc(d->inst.n_physical, sizeof *idx);
    if (!idx) {
        cli_error("out of host memory");
        cli_close(d);
        return CLI_EXIT_USAGE;
    }
    uint32_t n = 0;
    if (rlvk_select(&d->inst, spec, idx, &n, &err) != RL_OK) {
        cli_error("%s", err.msg);
        free(idx);
        cli_close(d);
        return CLI_EXIT_USAGE;
    }
    d->n = n < 16 ? n : 16;
    memcpy(d->index, idx, d->n * sizeof *idx);
    free(idx);
    return -1;
}

void cli_close(cli_devices *d)
{
    rlvk_instance_destroy(&d->inst);
}

int cli_each_device(cli_devices *d, cli_device_fn fn, void *ctx, json_t *arr)
{
    int failed = CLI_EXIT_OK;
    for (uint32_t k = 0; k < d->n; k++) {
        rlvk_device dev;
        rl_error err = {0};
        rl_status st = rlvk_device_create(&d->inst, d->index[k], &dev, &err);
        if (st == RL_OK) {
            st = fn(&dev, ctx, arr, &err);
            rlvk_device_destroy(&dev);
        }
        if (st != RL_OK) {
            cli_error("%s", err.msg);
            /* A verification failure is a failed measurement (1); anything
             * else is bad input or an unusable device (2). */
            failed = st == RL_ERR_MISMATCH ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
        }
    }
    if (arr) {
        char *s = json_dumps(arr, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
        if (s)
            puts(s);
        free(s);
        json_decref(arr);
    }
    return failed;
}

int cli_split_sets(int argc, char **argv, char **rest, int *nrest, const char **sets, int *nset)
{
    *nrest = *nset = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--set") == 0) {
            if (i + 1 >= argc) {
                cli_error("--set needs a value (key=value)");
                return CLI_EXIT_USAGE;
            }
            sets[(*nset)++] = argv[++i];
        } else if (strncmp(argv[i], "--set=", 6) == 0) {
            sets[(*nset)++] = argv[i] + 6;
        } else {
            rest[(*nrest)++] = argv[i];
        }
    }
    return -1;
}

volatile sig_atomic_t cli_stop_signal;

static void on_stop_signal(int sig)
{
    cli_stop_signal = sig;
}

void cli_catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int cli_sets_apply(const char *encoding, const json_t *params, const char *const *sets, int nset)
{
    if (strcmp(encoding, "rope") != 0)
        return -1;
    int type = rope_params_type(params);
    if (type >= (int)ROPE_TYPE_COUNT)
        return -1; /* the family names the unknown rope_type */
    for (int i = 0; i < nset; i++) {
        char key[128];
        const char *eq = strchr(sets[i], '=');
        size_t kl = eq ? (size_t)(eq - sets[i]) : strlen(sets[i]);
        if (kl >= sizeof key)
            continue; /* no such key: the family refuses it by name */
        memcpy(key, sets[i], kl);
        key[kl] = '\0';
        rl_error err = {0};
        if (rope_key_applies(type, json_is_true(json_object_get(params, "resonance")), key, &err) !=
            RL_OK) {
            cli_error("--set %s: %s", key, err.msg);
            return CLI_EXIT_USAGE;
        }
    }
    return -1;
}
