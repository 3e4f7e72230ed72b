/* run_files.c — files and directories of module run: whole-file reads,
 * directory trees, run directories, JSON written atomically. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
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
    struct stat sb;
    if (stat(buf, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return rl_fail(err, RL_ERR_IO, "%s: exists and is not a directory", buf);
    return RL_OK;
}

/* ---- the output directory's lock ----------------------------------------- */

rl_status run_lock_dir(const char *dir, int *fd_out, rl_error *err)
{
    *fd_out = -1;
    char path[1200];
    snprintf(path, sizeof path, "%s/.ropelab.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return rl_fail(err, RL_ERR_IO, "%s: cannot create the lock file: %s", path,
                       strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        close(fd);
        if (e == EWOULDBLOCK)
            return rl_fail(err, RL_ERR_IO,
                           "%s is in use by another ropelab process (pid %s, holding %s); wait "
                           "for it to finish or choose another output directory",
                           dir, pid[0] ? pid : "unknown", path);
        return rl_fail(err, RL_ERR_IO, "%s: cannot lock: %s", path, strerror(e));
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        /* the lock holds without the pid; only the message is poorer */
    }
    *fd_out = fd;
    return RL_OK;
}

void run_unlock_dir(int fd)
{
    if (fd >= 0)
        close(fd); /* releases the flock; the file stays (harmless, reused) */
}

void run_clean_stale(const char *dir)
{
    /* Only under the lock: leftovers of a process that was killed while
     * writing (atomic files' "<name>.tmp.<pid>", run directories being
     * built, "runs/.tmp-<id>"). */
    static const char *const outs[] = {"results.csv.tmp.", "manifest.json.tmp.",
                                       "report.md.tmp."};
    char p[1400];
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
            if (!strncmp(e->d_name, outs[i], strlen(outs[i]))) {
                snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
                remove(p);
            }
    if (d)
        closedir(d);
    snprintf(p, sizeof p, "%s/inputs", dir); /* input copies being written */
    d = opendir(p);
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) {
            char q[1700];
            snprintf(q, sizeof q, "%s/inputs/%s", dir, e->d_name);
            remove(q);
        }
    if (d)
        closedir(d);
    snprintf(p, sizeof p, "%s/runs", dir);
    d = opendir(p);
    while (d && (e = readdir(d)))
        if (!strncmp(e->d_name, ".tmp-", 5)) {
            char q[1700];
            snprintf(q, sizeof q, "%s/runs/%s", dir, e->d_name);
            run_rm_dir(q);
        }
    if (d)
        closedir(d);
}

/* ---- a run directory's file records --------------------------------------- */

/* FNV-1a 64 of a file's bytes and its size; -1 when it cannot be read. */
static int file_digest(const char *path, uint64_t *bytes, uint64_t *hash)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return -1;
    unsigned char buf[65536];
    size_t n;
    uint64_t h = rl_hash64("", 0, 0), total = 0; /* the FNV offset basis */
    while ((n = fread(buf, 1, sizeof buf, fp)) > 0) {
        h = rl_hash64(buf, n, h);
        total += n;
    }
    int bad = ferror(fp);
    fclose(fp);
    if (bad)
        return -1;
    *bytes = total;
    *hash = h;
    return 0;
}

json_t *run_files_record(const char *dir, const json_t *tables)
{
    json_t *files = json_object();
    const json_t *t;
    size_t i;
    json_array_foreach((json_t *)tables, i, t) {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (!name)
            continue;
        char path[1400], key[160], hx[17];
        snprintf(key, sizeof key, "%s.csv", name);
        snprintf(path, sizeof path, "%s/%s", dir, key);
        uint64_t bytes, hash;
        if (file_digest(path, &bytes, &hash))
            continue;
        snprintf(hx, sizeof hx, "%016llx", (unsigned long long)hash);
        json_object_set_new(files, key, json_pack("{s:I,s:s}", "bytes", (json_int_t)bytes,
                                                  "fnv1a64", hx));
    }
    return files;
}

int run_files_verify(const char *dir, const json_t *summary, char *why, size_t cap)
{
    const json_t *files = json_object_get(summary, "files");
    if (!json_is_object(files)) {
        snprintf(why, cap, "%s/summary.json records no file sizes and checksums", dir);
        return 0;
    }
    size_t ntab = json_array_size(json_object_get(summary, "tables"));
    if (json_object_size(files) != ntab) {
        snprintf(why, cap, "%s: summary.json lists %zu tables but records %zu files", dir, ntab,
                 json_object_size(files));
        return 0;
    }
    const char *key;
    const json_t *f;
    json_object_foreach((json_t *)files, key, f) {
        char path[1400], hx[17];
        snprintf(path, sizeof path, "%s/%s", dir, key);
        uint64_t bytes, hash;
        if (file_digest(path, &bytes, &hash)) {
            snprintf(why, cap, "%s is missing", path);
            return 0;
        }
        snprintf(hx, sizeof hx, "%016llx", (unsigned long long)hash);
        const char *want = json_string_value(json_object_get(f, "fnv1a64"));
        if ((json_int_t)bytes != json_integer_value(json_object_get(f, "bytes")) || !want ||
            strcmp(want, hx)) {
            snprintf(why, cap, "%s does not match summary.json (size or checksum)", path);
            return 0;
        }
    }
    return 1;
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

/* Copies one regular file (src to dst, created or truncated). */
static rl_status copy_file(const char *src, const char *dst, rl_error *err)
{
    FILE *in = fopen(src, "rb");
    if (!in)
        return rl_fail(err, RL_ERR_IO, "%s: cannot open: %s", src, strerror(errno));
    FILE *out = fopen(dst, "wb");
    if (!out) {
        fclose(in);
        return rl_fail(err, RL_ERR_IO, "%s: cannot create: %s", dst, strerror(errno));
    }
    char buf[65536];
    size_t n;
    int bad = 0;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        bad |= fwrite(buf, 1, n, out) != n;
    bad |= ferror(in);
    fclose(in);
    bad |= fclose(out) != 0;
    return bad ? rl_fail(err, RL_ERR_IO, "%s: copy to %s failed", src, dst) : RL_OK;
}

rl_status run_copy_run_dir(const char *src, const char *dst, rl_error *err)
{
    char tmp[1400], p[2048], q[2048];
    const char *slash = strrchr(dst, '/');
    if (slash)
        snprintf(tmp, sizeof tmp, "%.*s/.tmp-%s", (int)(slash - dst), dst, slash + 1);
    else
        snprintf(tmp, sizeof tmp, ".tmp-%s", dst);
    run_rm_dir(tmp);
    if (mkdir(tmp, 0777) != 0)
        return rl_fail(err, RL_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    DIR *d = opendir(src);
    if (!d) {
        run_rm_dir(tmp);
        return rl_fail(err, RL_ERR_IO, "%s: cannot open: %s", src, strerror(errno));
    }
    rl_status st = RL_OK;
    struct dirent *e;
    while (!st && (e = readdir(d))) {
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s", src, e->d_name);
        if (e->d_name[0] == '.' || stat(p, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue; /* a run directory holds plain files only */
        snprintf(q, sizeof q, "%s/%s", tmp, e->d_name);
        st = copy_file(p, q, err);
    }
    closedir(d);
    if (!st) {
        run_rm_dir(dst); /* an earlier merge's copy */
        if (rename(tmp, dst) != 0)
            st = rl_fail(err, RL_ERR_IO, "%s: cannot rename to %s: %s", tmp, dst,
                         strerror(errno));
    }
    if (st)
        run_rm_dir(tmp);
    return st;
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
