/* bench --json, shared by both benches (cmd_bench.c `bench rope`,
 * cmd_bench_attn.c `bench attention`): the device object, one
 * measurement's times and the printed document (cli.h). In their own file
 * so that cmd_bench.c, which hands `bench attention` to cmd_bench_attn.c,
 * and cmd_bench_attn.c both call down to it (no circle inside cli/). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/bench.h"
#include "cli/cli.h"
#include "cli_version.h"

json_t *cli_bench_device_json(const rlvk_device_info *in)
{
    char api[32];
    snprintf(api, sizeof api, "%u.%u.%u", VK_API_VERSION_MAJOR(in->api_version),
             VK_API_VERSION_MINOR(in->api_version), VK_API_VERSION_PATCH(in->api_version));
    json_t *o = json_pack("{s:i,s:s,s:s,s:s,s:s,s:s}", "index", (int)in->index, "name", in->name,
                          "type", in->type, "api_version", api, "driver_name", in->driver_name,
                          "driver_info", in->driver_info);
    json_t *ident = cli_device_identity_json(in);
    json_object_update(o, ident);
    json_decref(ident);
    json_object_set_new(o, "timestamp_period_ns", json_real(in->timestamp_period_ns));
    json_object_set_new(o, "timestamp_valid_bits", json_integer(in->timestamp_valid_bits));
    return o;
}

json_t *cli_bench_times_json(const bench_times *t)
{
    json_t *all = json_array();
    for (uint32_t i = 0; i < t->n; i++)
        json_array_append_new(all, json_real(t->ms[i]));
    return json_pack("{s:i,s:f,s:f,s:f,s:o}", "runs", (int)t->n, "median", t->median, "min",
                     t->min, "max", t->max, "all", all);
}

int cli_bench_print(const char *bench, json_t *flags, json_t *results, int rc)
{
    json_t *root = json_pack("{s:s,s:s,s:s,s:o,s:b,s:o}", "version", RL_VERSION, "git_commit",
                             RL_GIT_COMMIT, "bench", bench, "flags", flags, "pass",
                             rc == CLI_EXIT_OK, "results", results);
    char *s = root ? json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6)) : NULL;
    if (s)
        puts(s);
    else
        cli_error("bench: could not format the JSON output");
    free(s);
    json_decref(root);
    return s ? rc : CLI_EXIT_USAGE;
}
