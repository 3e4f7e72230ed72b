/* spv_khr — the build's NV -> KHR cooperative-matrix SPIR-V rewriter
 * (tools/spv_khr.h). usage: spv_khr [--mutate-same-ab] IN.spv OUT.spv OUT.h NAME
 * (--mutate-same-ab: the tests' broken rewrite, A and B sharing a type)
 * Writes the KHR module as OUT.spv and as OUT.h (`const uint32_t NAME[]`,
 * the form glslangValidator --vn writes), each to a temporary name renamed
 * when complete. Exit 1 with the rewriter's message on a module it refuses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spv_khr.h"

static uint32_t *read_all(const char *path, size_t *n_words)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "spv_khr: cannot open %s\n", path);
        return NULL;
    }
    size_t cap = 4096, n = 0;
    uint32_t *w = malloc(cap * sizeof *w);
    size_t got;
    while (w && (got = fread(w + n, sizeof *w, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint32_t *p = realloc(w, 2 * cap * sizeof *w);
            if (!p) {
                free(w);
                w = NULL;
                break;
            }
            w = p;
            cap *= 2;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!w || bad) {
        fprintf(stderr, "spv_khr: cannot read %s\n", path);
        free(w);
        return NULL;
    }
    *n_words = n;
    return w;
}

static int write_done(FILE *f, const char *tmp, const char *path)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        fprintf(stderr, "spv_khr: cannot write %s\n", path);
        remove(tmp);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned flags = 0;
    if (argc == 6 && strcmp(argv[1], "--mutate-same-ab") == 0) {
        flags = SPVK_MUTATE_SAME_AB;
        argv++;
        argc--;
    }
    if (argc != 5) {
        fprintf(stderr, "usage: spv_khr [--mutate-same-ab] IN.spv OUT.spv OUT.h NAME\n");
        return 2;
    }
    size_t n = 0, n_out = 0;
    uint32_t *in = read_all(argv[1], &n), *out = NULL;
    if (!in)
        return 1;
    char err[512];
    if (spvk_rewrite(in, n, flags, &out, &n_out, err, sizeof err)) {
        fprintf(stderr, "spv_khr: %s: %s\n", argv[1], err);
        free(in);
        return 1;
    }
    free(in);
    char tmp[4096];
    int rc = 0;
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(out, sizeof *out, n_out, f) != n_out) {
        fprintf(stderr, "spv_khr: cannot write %s\n", tmp);
        rc = 1;
        if (f)
            fclose(f);
    } else {
        rc |= write_done(f, tmp, argv[2]);
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[3]);
    f = rc ? NULL : fopen(tmp, "w");
    if (!rc && !f) {
        fprintf(stderr, "spv_khr: cannot write %s\n", tmp);
        rc = 1;
    }
    if (f) {
        fprintf(f, "/* %s rewritten to SPV_KHR_cooperative_matrix by tools/spv_khr */\n"
                   "#pragma once\nconst uint32_t %s[] = {", argv[1], argv[4]);
        for (size_t i = 0; i < n_out; i++)
            fprintf(f, "%s0x%08x,", i % 8 ? "" : "\n\t", out[i]);
        fprintf(f, "\n};\n");
        rc |= write_done(f, tmp, argv[3]);
    }
    free(out);
    return rc;
}
