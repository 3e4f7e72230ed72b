/* run_files.c — files and directories of module run: whole-file reads,
 * directory trees, run directories, JSON written atomically. */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/rl_fs.h"
#include "core/rl_util.h"
#include "run/run_int.h"

rl_status run_read_file(const char *path, size_t max, char **text, size_t *len, rl_error *err)
{
    *text = NULL;
    *len = 0;
    FILE *fp = rl_fs_open_input(path, err);
    if (!fp)
        return err ? err->status : RL_ERR_IO;
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

/* ---- what a killed process left ------------------------------------------- */

rl_status run_clean_stale(const char *dir, rl_error *err)
{
    /* Only under the lock (rl_fs_lock): every ropelab writer of these names
     * (run, merge, plot) holds it while it writes, so all of them are
     * leftovers of a killed process, whatever pid they name: atomic files'
     * "<name>.tmp.<pid>", run directories being built ("runs/.tmp-<id>"),
     * input copies, figures being rendered. Reached from dir without
     * following a link. */
    static const char *const outs[] = {"results.csv.tmp.", "manifest.json.tmp.",
                                       "report.md.tmp."};
    static const char *const runs[] = {".tmp-"};
    char sub[1300];
    struct {
        const char *name;
        const char *const *prefixes;
        size_t n;
    } where[] = {{"", outs, 3}, {"inputs", NULL, 0}, {"runs", runs, 1}, {"plots", NULL, 0}};
    for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
        snprintf(sub, sizeof sub, "%s%s%s", dir, where[i].name[0] ? "/" : "", where[i].name);
        rl_status st = rl_fs_clean_tmp(dir, sub, where[i].prefixes, where[i].n, NULL, err);
        if (st)
            return st;
    }
    return RL_OK;
}

/* ---- a run directory's file records --------------------------------------- */

/* FNV-1a 64 of a file's bytes and its size, the file reached from dir
 * without following a link; -1 when it cannot be read. */
static int file_digest(const char *dir, const char *path, uint64_t *bytes, uint64_t *hash)
{
    FILE *fp = rl_fs_fopen(dir, path, "r", NULL);
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
        if (file_digest(dir, path, &bytes, &hash))
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
        if (strchr(key, '/') || key[0] == '.') {
            snprintf(why, cap, "%s/summary.json names a file '%s' outside its directory", dir,
                     key);
            return 0;
        }
        int k = rl_fs_kind(dir, path, NULL);
        if (k != 'f') {
            snprintf(why, cap, "%s is %s", path,
                     k == 'l' ? "a symbolic link (never followed)"
                     : k == 0 ? "missing"
                              : "not a regular file");
            return 0;
        }
        if (file_digest(dir, path, &bytes, &hash)) {
            snprintf(why, cap, "%s cannot be read", path);
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

int run_file_digest(const char *dir, const char *path, char *bytes_hex, size_t cap)
{
    uint64_t bytes, hash;
    if (file_digest(dir, path, &bytes, &hash))
        return -1;
    snprintf(bytes_hex, cap, "%llu:%016llx", (unsigned long long)bytes,
             (unsigned long long)hash);
    return 0;
}

int run_summary_identity(const json_t *sum, const char *id, const char *batch_hash, char *why,
                         size_t cap)
{
    const char *rid = json_string_value(json_object_get(sum, "run_id"));
    if (!rid || strcmp(rid, id)) {
        snprintf(why, cap, "it holds run %s, not run %s", rid ? rid : "(none)", id);
        return 0;
    }
    /* the id is the FNV-1a of the resolved run as canonical JSON: the
     * summary's own resolved parameters must hash to it */
    char *txt = json_dumps(json_object_get(sum, "resolved"), JSON_SORT_KEYS | JSON_COMPACT);
    char hx[17] = "";
    if (txt)
        snprintf(hx, sizeof hx, "%016llx",
                 (unsigned long long)rl_hash64(txt, strlen(txt), RUN_FNV_OFFSET));
    free(txt);
    if (strcmp(hx, id)) {
        snprintf(why, cap, "its resolved parameters hash to %s, not to its id %s (a run of "
                 "another plan, or edited)", hx[0] ? hx : "(none)", id);
        return 0;
    }
    const char *ph = json_string_value(json_object_get(sum, "plan_hash"));
    if (ph && strcmp(ph, id)) {
        snprintf(why, cap, "its plan_hash %s is not its id %s", ph, id);
        return 0;
    }
    const char *bh = json_string_value(json_object_get(sum, "batch_hash"));
    if (batch_hash && bh && strcmp(bh, batch_hash)) {
        snprintf(why, cap, "it comes from batch %s, not batch %s", bh, batch_hash);
        return 0;
    }
    return 1;
}

/* Copies one regular file: src below src_root (no link followed) to dst
 * below dst_root (created new). */
static rl_status copy_file(const char *src_root, const char *src, const char *dst_root,
                           const char *dst, rl_error *err)
{
    FILE *in = rl_fs_fopen(src_root, src, "r", err);
    if (!in)
        return err ? err->status : RL_ERR_IO;
    FILE *out = rl_fs_fopen(dst_root, dst, "x", err);
    if (!out) {
        fclose(in);
        return err ? err->status : RL_ERR_IO;
    }
    char buf[65536];
    size_t n;
    int bad = 0, e = 0;
    while (!bad && (n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n)
            bad = 1, e = errno;
    if (!bad && ferror(in))
        bad = 1, e = errno;
    fclose(in);
    if (fflush(out) != 0 && !bad)
        bad = 1, e = errno;
    if (fclose(out) != 0 && !bad)
        bad = 1, e = errno;
    /* the reason (ENOSPC: "No space left on device") named, not just "failed" */
    return bad ? rl_fail(err, RL_ERR_IO, "%s: copy to %s failed: %s", src, dst,
                         e ? strerror(e) : "read error")
               : RL_OK;
}

typedef struct copy_ctx {
    const char *src_root, *src, *dst_root, *tmp;
    rl_error *err;
    rl_status st;
} copy_ctx;

static int copy_one(const char *name, int kind, void *user)
{
    copy_ctx *c = user;
    char p[2048], q[2048];
    snprintf(p, sizeof p, "%s/%s", c->src, name);
    if (kind != 'f') {
        /* a run directory holds regular files only: anything else in a
         * received shard is refused by name, never followed or copied */
        c->st = rl_fail(c->err, RL_ERR_ARG, "%s is %s; a run directory holds regular files "
                        "only, so ropelab refuses to merge it", p,
                        kind == 'l' ? "a symbolic link" : kind == 'd' ? "a directory"
                                                                      : "not a regular file");
        return 1;
    }
    snprintf(q, sizeof q, "%s/%s", c->tmp, name);
    c->st = copy_file(c->src_root, p, c->dst_root, q, c->err);
    return c->st != RL_OK;
}

rl_status run_copy_run_dir(const char *src_root, const char *src, const char *dst_root,
                           const char *dst, rl_error *err)
{
    char tmp[1400];
    const char *slash = strrchr(dst, '/');
    if (!slash)
        return rl_fail(err, RL_ERR_ARG, "%s: not below %s", dst, dst_root);
    snprintf(tmp, sizeof tmp, "%.*s/.tmp-%s", (int)(slash - dst), dst, slash + 1);
    rl_status st = rl_fs_remove(dst_root, tmp, err);
    if (!st)
        st = rl_fs_mkdirs(dst_root, tmp, err);
    if (st)
        return st;
    copy_ctx c = {.src_root = src_root, .src = src, .dst_root = dst_root, .tmp = tmp, .err = err};
    if (rl_fs_each(src_root, src, copy_one, &c, err) < 0 && !c.st)
        c.st = err ? err->status : RL_ERR_IO;
    st = c.st;
    if (!st) {
        /* what was copied is what the shard's summary recorded */
        char sp[1500], why[1600];
        snprintf(sp, sizeof sp, "%s/summary.json", tmp);
        json_t *sum = rl_fs_load_json(dst_root, sp, RL_FS_MAX_SUMMARY, err);
        if (!sum)
            st = err ? err->status : RL_ERR_IO;
        else if (json_object_get(sum, "files") && !run_files_verify(tmp, sum, why, sizeof why))
            st = rl_fail(err, RL_ERR_IO, "copying %s: %s", src, why);
        json_decref(sum);
    }
    if (!st) /* an earlier merge's copy stays whole until exchanged */
        st = rl_fs_replace(dst_root, tmp, dst, err);
    if (st)
        rl_fs_remove(dst_root, tmp, NULL);
    return st;
}

rl_status run_write_json(const char *root, const char *path, json_t *v, rl_error *err)
{
    rl_atomic_file af;
    rl_status st = root ? rl_atomic_open_below(&af, root, path, err)
                        : rl_atomic_open(&af, path, err);
    if (st)
        return st;
    if (json_dumpf(v, af.fp, JSON_INDENT(2) | JSON_SORT_KEYS) != 0) {
        rl_atomic_abort(&af);
        return rl_fail(err, RL_ERR_IO, "%s: write failed", path);
    }
    fputc('\n', af.fp);
    return rl_atomic_commit(&af, err);
}
