/* run_files.c — files and directories of module run: whole-file reads,
 * directory trees, run directories, JSON written atomically. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

rl_status run_mkdir_p(const char *path, rl_error *err)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return rl_fail(err, RL_ERR_IO, "%s: cannot create: %s", buf, strerror(errno));
            *p = '/';
        }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return rl_fail(err, RL_ERR_IO, "%s: cannot create: %s", buf, strerror(errno));
    return RL_OK;
}

void run_rm_dir(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    char p[1400];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        remove(p);
    }
    closedir(d);
    rmdir(path);
}

rl_status run_write_json(const char *path, json_t *v, rl_error *err)
{
    rl_atomic_file af;
    rl_status st = rl_atomic_open(&af, path, err);
    if (st)
        return st;
    if (json_dumpf(v, af.fp, JSON_INDENT(2) | JSON_SORT_KEYS) != 0) {
        rl_atomic_abort(&af);
        return rl_fail(err, RL_ERR_IO, "%s: write failed", path);
    }
    fputc('\n', af.fp);
    return rl_atomic_commit(&af, err);
}
