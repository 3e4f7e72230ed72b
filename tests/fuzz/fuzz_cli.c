/* libFuzzer harness for the command-line front door: cli_parse over an
 * argv built from the input (NUL-separated words) against a table with
 * every option kind, then `--set key=value` words through pe_set_parse and
 * pe_encoding_create of a registry encoding (the path every `--set`,
 * `inspect` and batch encoding takes). No device is opened. */
#include <string.h>

#include "cli/cli.h"
#include "pe/pe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096)
        return 0;
    char buf[4097];
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    char *argv[33] = {"ropelab"};
    int argc = 1;
    for (char *p = buf; argc < 32 && p < buf + size - 1; p += strlen(p) + 1)
        argv[argc++] = p;
    const char *str = NULL;
    uint32_t u32 = 0;
    uint64_t u64 = 0;
    double f64 = 0;
    int flag = 0;
    const cli_opt opts[] = {
        {"--device", CLI_STR, &str, "D", "device"},
        {"--heads", CLI_U32, &u32, "H", "heads"},
        {"--tokens", CLI_U64, &u64, "N", "tokens"},
        {"--from", CLI_F64, &f64, "R0", "from"},
        {"--json", CLI_FLAG, &flag, NULL, "json"},
    };
    const char *pos[4];
    int npos = 0;
    (void)cli_parse("fuzz", "fuzz", argc, argv, opts, sizeof opts / sizeof opts[0], pos, 4, &npos);
    /* The first byte picks an encoding; words with '=' are --set pairs
     * (keys naming a file are skipped: the harness must not read
     * arbitrary paths such as /dev/stdin). */
    const pe_family *fam = pe_family_at(data[0] % pe_family_count());
    json_t *params = json_object();
    rl_error err = {0};
    for (int i = 1; i < argc && params; i++) {
        const char *eq = strchr(argv[i], '=');
        if (!eq || (eq - argv[i] >= 4 && !strncmp(eq - 4, "path", 4)))
            continue;
        (void)pe_set_parse(params, argv[i], &err);
    }
    /* small shapes: a learned table of 2^24 rows stays within the fuzzer's memory */
    pe_shape shape = {.head_dim = 8u << (data[0] & 1), .heads = 1u + (data[0] >> 4 & 3)};
    pe_encoding *e = NULL;
    if (params && pe_encoding_create(fam->name, params, &shape, &e, &err) == RL_OK)
        pe_encoding_destroy(e);
    json_decref(params);
    return 0;
}
