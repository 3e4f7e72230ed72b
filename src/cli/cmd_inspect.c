/* ropelab inspect ENCODING [--set key=value ...] [--heads H] [--head-dim D]
 *                 [--from R0 --to R1] [--seed S] [--json]
 * Shows what an encoding does without running attention: for bias
 * encodings the bias per head over relative positions r = j - i (key minus
 * query, HF T5's convention), T5's bucket per r and ALiBi's slopes; for
 * vector encodings the frequencies or the table rows it uses. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/rl_util.h"
#include "pe/pe.h"

#define INSPECT_MAX_CELLS 4000000

static void print_text(const pe_encoding *e, json_t *o)
{
    const pe_family *f = pe_encoding_family(e);
    char *ps = json_dumps(pe_encoding_params(e), JSON_COMPACT | JSON_REAL_PRECISION(10));
    printf("%s: %s\n  %s\n  params: %s\n", f->name, f->title, f->paper, ps ? ps : "{}");
    free(ps);
    json_t *sl = json_object_get(o, "slopes"), *rel = json_object_get(o, "relative_position");
    json_t *bk = json_object_get(o, "bucket"), *bias = json_object_get(o, "bias");
    json_t *fr = json_object_get(o, "frequencies"), *tb = json_object_get(o, "table");
    size_t i;
    json_t *v;
    if (sl) {
        printf("  slopes:");
        json_array_foreach(sl, i, v) printf(" %.9g", json_real_value(v));
        printf("\n");
    }
    if (rel) {
        size_t nh = json_array_size(bias);
        printf("  %8s", "r=j-i");
        if (bk)
            printf(" %6s", "bucket");
        for (size_t h = 0; h < nh; h++) {
            char lab[24];
            snprintf(lab, sizeof lab, "h%zu", h);
            printf(" %12s", lab);
        }
        printf("\n");
        json_array_foreach(rel, i, v) {
            printf("  %8" JSON_INTEGER_FORMAT, json_integer_value(v));
            if (bk)
                printf(" %6" JSON_INTEGER_FORMAT, json_integer_value(json_array_get(bk, i)));
            for (size_t h = 0; h < nh; h++)
                printf(" %12.6g", json_real_value(json_array_get(json_array_get(bias, h), i)));
            printf("\n");
        }
    }
    if (fr) {
        /* mRoPE: the stream (t, h, w) whose position rotates pair m */
        json_t *ms = json_object_get(o, "mrope_streams");
        printf("  frequencies (radians per position, pair index m%s):\n",
               ms ? "; mRoPE: the position t, h or w that rotates it" : "");
        json_array_foreach(fr, i, v) {
            printf("    m=%-4zu %.9g", i, json_real_value(v));
            if (ms)
                printf(" %c", "thw"[json_integer_value(json_array_get(ms, i)) % 3]);
            printf("\n");
        }
    }
    if (tb) {
        json_t *pos = json_object_get(o, "position");
        printf("  table rows (position: values):\n");
        json_array_foreach(tb, i, v) {
            printf("    %6" JSON_INTEGER_FORMAT ":", json_integer_value(json_array_get(pos, i)));
            size_t k;
            json_t *x;
            json_array_foreach(v, k, x) printf(" %.6g", json_real_value(x));
            printf("\n");
        }
    }
    if (f->inspect_note)
        printf("  note: %s\n", f->inspect_note);
}

int cmd_inspect(int argc, char **argv)
{
    /* --set may repeat: collect those pairs first, pass the rest on. */
    char **rest = malloc((size_t)(argc + 1) * sizeof *rest);
    const char **sets = malloc((size_t)(argc + 1) * sizeof *sets);
    if (!rest || !sets) {
        free(rest);
        free(sets);
        cli_error("out of host memory");
        return CLI_EXIT_USAGE;
    }
    int nrest = 0, nset = 0;
    int rc = cli_split_sets(argc, argv, rest, &nrest, sets, &nset);
    int json = 0;
    uint32_t heads = 8, head_dim = 64;
    uint64_t seed = 1;
    double r0 = -16, r1 = 16;
    const char *set_seen = NULL; /* --set is collected above; listed for --help */
    const cli_opt opts[] = {
        {"--set", CLI_STR, &set_seen, "KEY=VALUE", "set a parameter (repeatable; value parsed as JSON "
                                              "when it parses, else a string)"},
        {"--heads", CLI_U32, &heads, "H", "attention heads (default 8)"},
        {"--head-dim", CLI_U32, &head_dim, "D", "dimensions per head (default 64)"},
        {"--from", CLI_F64_SIGNED, &r0, "R0", "first relative position r = j - i, or table row (default -16)"},
        {"--to", CLI_F64_SIGNED, &r1, "R1", "last relative position, or table row (default 16)"},
        {"--seed", CLI_U64, &seed, "S", "seed of random tables (default 1)"},
        {"--json", CLI_FLAG, &json, NULL, "print JSON"},
    };
    const char *pos[1] = {NULL};
    int npos = 0;
    /* The bias encodings named in the help come from the registry. */
    char biases[256] = "";
    for (size_t i = 0, n = 0; i < pe_family_count() && n < sizeof biases; i++)
        if (pe_family_at(i)->acts & PE_ACTS_LOGITS)
            n += (size_t)snprintf(biases + n, sizeof biases - n, "%s%s", n ? ", " : "",
                                  pe_family_at(i)->name);
    char about[1024];
    snprintf(about, sizeof about,
             "Shows what an encoding does without running attention: for bias encodings\n"
             "(%s) the bias per head for relative positions r = j - i (key minus\n"
             "query) from R0 to R1 and what the family derives (T5's bucket per r, ALiBi's\n"
             "slope per head, ...); for vector encodings the frequencies or table rows\n"
             "R0..R1 it uses. `ropelab encodings` lists the encodings and their parameters.",
             biases);
    if (rc < 0)
        rc = cli_parse("ropelab inspect ENCODING [--set key=value ...] [--heads H] [--from R0 --to R1] "
                       "[--json]",
                       about, nrest, rest, opts, RL_ARRAY_LEN(opts), pos, 1, &npos);
    free(rest);
    json_t *params = json_object();
    pe_encoding *e = NULL;
    json_t *o = NULL;
    rl_error err = {0};
    if (rc >= 0)
        goto out;
    rc = CLI_EXIT_USAGE;
    if (npos != 1) {
        cli_error("inspect: name the encoding (one of %s)", pe_family_names());
        goto out;
    }
    if (r0 != (double)(int64_t)r0 || r1 != (double)(int64_t)r1 || r0 > r1 || r0 < -2147483647.0 ||
        r1 > 2147483647.0) {
        cli_error("--from %g --to %g: need integers with R0 <= R1 within +-2^31", r0, r1);
        goto out;
    }
    if ((r1 - r0 + 1) * (heads ? heads : 1) > INSPECT_MAX_CELLS) {
        cli_error("--from %g --to %g with %u heads is more than %d values; narrow the range", r0, r1,
                  heads, INSPECT_MAX_CELLS);
        goto out;
    }
    for (int i = 0; i < nset; i++)
        if (pe_set_parse(params, sets[i], &err) != RL_OK) {
            cli_error("%s", err.msg);
            goto out;
        }
    if (cli_sets_apply(pos[0], params, sets, nset) >= 0)
        goto out; /* rc is CLI_EXIT_USAGE here */
    pe_shape shape = {.head_dim = head_dim, .heads = heads, .seed = seed};
    if (pe_encoding_create(pos[0], params, &shape, &e, &err) != RL_OK) {
        cli_error("%s", err.msg);
        goto out;
    }
    int64_t a = (int64_t)r0, b = (int64_t)r1;
    o = json_pack("{s:s,s:O}", "encoding", pos[0], "params", pe_encoding_params(e));
    const pe_family *f = pe_encoding_family(e);
    json_t *bias = NULL;
    if (pe_has_bias(e)) {
        json_t *rel = json_array();
        bias = json_array();
        int64_t q = a < 0 ? -a : 0; /* query position: keeps every key position >= 0 */
        for (int64_t r = a; r <= b; r++)
            json_array_append_new(rel, json_integer(r));
        for (uint32_t h = 0; h < pe_encoding_shape(e)->heads; h++) {
            json_t *row = json_array();
            for (int64_t r = a; r <= b; r++) {
                double v = pe_bias_ref(e, h, 0, 0, q, q + r, NULL, NULL);
                json_array_append_new(row, json_real(v == 0 ? 0.0 : v)); /* no -0 */
            }
            json_array_append_new(bias, row);
        }
        json_object_set_new(o, "relative_position", rel);
    }
    /* family keys (bucket, slopes, frequencies, table) before the bias */
    if (f->ops.inspect && f->ops.inspect(e, a, b, o, &err) != RL_OK) {
        json_decref(bias);
        cli_error("%s", err.msg);
        goto out;
    }
    if (bias)
        json_object_set_new(o, "bias", bias);
    if (json) {
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(9) | JSON_PRESERVE_ORDER);
        if (s)
            puts(s);
        free(s);
    } else {
        print_text(e, o);
    }
    rc = CLI_EXIT_OK;
out:
    json_decref(o);
    json_decref(params);
    pe_encoding_destroy(e);
    free(sets);
    return rc;
}
