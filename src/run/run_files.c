/* run_files.c — files and directories of module run: whole-file reads,
 * directory trees, run directories, JSON written atomically. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/rl_util.h"
#include "run/run_int.h"

rl_status run_read_file(const char *path, size_t max, char **text, size_t *len, rl_error *err)
{
    *text = NULL;
    *len = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return rl_fail(err, RL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, fp);
        n += got;
        if (n < cap)
            break;
        if (cap >= max) {
            free(buf);
            fclose(fp);
            return rl_fail(err, RL_ERR_LIMIT, "%s: larger than %zu bytes", path, max);
        }
        cap *= 2;
        char *nb = realloc(buf, cap + 1);
        if (!nb)
            free(buf);
        buf = nb;
    }
    int bad = ferror(fp);
    fclose(fp);
    if (!buf)
        return rl_fail(err, RL_ERR_NOMEM, "%s: out of host memory", path);
    if (bad) {
        free(buf);
        return rl_fail(err, RL_ERR_IO, "%s: read error", path);
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return RL_OK;
}
