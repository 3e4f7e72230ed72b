/* rl_fs.c — no link below a root followed, no input that is not a regular
 * file (see rl_fs.h). */
#define _GNU_SOURCE /* flock, renameat2 */
#include "core/rl_fs.h"

#include <dirent.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* O_NONBLOCK only for the open: a FIFO opened for reading returns at once
 * (and is then refused by fstat); the regular file is read blocking. */
static int clear_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

static const char *kind_word(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
           : S_ISLNK(m)  ? "a symbolic link"
                         : "not a regular file";
}

static int too_large(FILE *fp, const char *path, size_t max, rl_error *err)
{
    struct stat sb;
    if (max && fstat(fileno(fp), &sb) == 0 && (uint64_t)sb.st_size > (uint64_t)max) {
        rl_fail(err, RL_ERR_LIMIT, "%s: %lld bytes, more than the %zu MiB ropelab reads from "
                "a file of this kind", path, (long long)sb.st_size, max >> 20);
        return 1;
    }
    return 0;
}

FILE *rl_fs_open_input_max(const char *path, size_t max, rl_error *err)
{
    FILE *fp = rl_fs_open_input(path, err);
    if (fp && too_large(fp, path, max, err)) {
        fclose(fp);
        return NULL;
    }
    return fp;
}

FILE *rl_fs_open_input(const char *path, rl_error *err)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        rl_fail(err, RL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        rl_fail(err, RL_ERR_ARG, "%s is %s, not a regular file; ropelab reads inputs from "
                "regular files only", path, kind_word(sb.st_mode));
        close(fd);
        return NULL;
    }
    FILE *fp = clear_nonblock(fd) == 0 ? fdopen(fd, "rb") : NULL;
    if (!fp) {
        rl_fail(err, RL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
    }
    return fp;
}

/* ---- below a root -------------------------------------------------------- */

/* 'f' regular, 'd' directory, 'l' link, 'o' anything else (rl_fs_kind's
 * letters) of the entry name of directory dfd, links not followed. */
static int kind_at(int dfd, const char *name)
{
    struct stat sb;
    if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
        return 'o';
    return S_ISREG(sb.st_mode) ? 'f' : S_ISDIR(sb.st_mode) ? 'd' : S_ISLNK(sb.st_mode) ? 'l' : 'o';
}


static rl_status refuse_link(rl_error *err, const char *path, size_t upto, const char *root)
{
    return rl_fail(err, RL_ERR_ARG,
                   "%.*s is a symbolic link: ropelab never follows a link inside a directory it "
                   "writes or copies from (%s); remove the link or choose another directory",
                   (int)upto, path, root);
}

/* Opens the directory that holds path's last component, reached from root
 * without following a link; *leaf points at that component in path.
 * create: missing directories on the way are made. -1 and err on failure. */
static int walk(const char *root, const char *path, int create, const char **leaf,
                int *missing, rl_error *err)
{
    if (missing)
        *missing = 0;
    size_t rl = strlen(root);
    while (rl > 1 && root[rl - 1] == '/')
        rl--;
    if (rl == 1 && root[0] == '/')
        rl = 0; /* the root directory: path is "/..." */
    if (strncmp(path, root, rl) || path[rl] != '/') {
        rl_fail(err, RL_ERR_ARG, "%s is not inside %s", path, root);
        return -1;
    }
    int fd = open(rl ? root : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        rl_fail(err, RL_ERR_IO, "%s: cannot open its directory %.*s: %s", path, (int)rl,
                rl ? root : "/", strerror(errno));
        return -1;
    }
    const char *p = path + rl;
    for (;;) {
        while (*p == '/')
            p++;
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        const char *rest = p + n;
        while (*rest == '/')
            rest++;
        char comp[256];
        if (n == 0 || n >= sizeof comp || (n == 2 && !strncmp(p, "..", 2))) {
            rl_fail(err, RL_ERR_ARG, "%s: '%.*s' is not a plain name below %s", path, (int)n, p,
                    root);
            close(fd);
            return -1;
        }
        if (!*rest) { /* the last component */
            *leaf = p;
            return fd;
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        int nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (nfd < 0 && errno == ENOENT && create) {
            if (mkdirat(fd, comp, 0777) != 0 && errno != EEXIST) {
                rl_fail(err, RL_ERR_IO, "%.*s: cannot create: %s", (int)(p + n - path), path,
                        strerror(errno));
                close(fd);
                return -1;
            }
            nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (nfd < 0) {
            int e = errno;
            struct stat sb;
            if (fstatat(fd, comp, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode))
                refuse_link(err, path, (size_t)(p + n - path), root);
            else if (e == ENOENT) {
                rl_fail(err, RL_ERR_IO, "%.*s does not exist", (int)(p + n - path), path);
                if (missing)
                    *missing = 1;
            }
            else
                rl_fail(err, e == ENOTDIR ? RL_ERR_ARG : RL_ERR_IO, "%.*s: %s",
                        (int)(p + n - path), path,
                        e == ENOTDIR ? "is not a directory" : strerror(e));
            close(fd);
            return -1;
        }
        close(fd);
        fd = nfd;
        p = rest;
    }
}

/* The leaf as a NUL-terminated name (it may carry trailing slashes). */
static int leaf_name(const char *leaf, char *name, size_t cap)
{
    size_t n = strcspn(leaf, "/");
    if (n == 0 || n >= cap)
        return -1;
    memcpy(name, leaf, n);
    name[n] = '\0';
    return 0;
}

/* walk() for a path that may be missing: the parent's descriptor, or -1
 * with *missing set (a component does not exist) or err filled. */
static int walk_existing(const char *root, const char *path, const char **leaf, int *missing,
                         rl_error *err)
{
    rl_error tmp = {0};
    int dfd = walk(root, path, 0, leaf, missing, &tmp);
    if (dfd < 0 && !*missing && err)
        *err = tmp;
    return dfd;
}

int rl_fs_open(const char *root, const char *path, int flags, mode_t mode, rl_error *err)
{
    const char *leaf;
    char name[256];
    int dfd = walk(root, path, 0, &leaf, NULL, err);
    if (dfd < 0)
        return -1;
    if (leaf_name(leaf, name, sizeof name)) {
        close(dfd);
        rl_fail(err, RL_ERR_ARG, "%s: file name too long", path);
        return -1;
    }
    int fd = openat(dfd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, mode);
    if (fd < 0) {
        int e = errno;
        struct stat sb;
        if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode))
            refuse_link(err, path, strlen(path), root);
        else
            rl_fail(err, RL_ERR_IO, "%s: cannot %s: %s", path,
                    (flags & O_CREAT) ? "create" : "open", strerror(e));
        close(dfd);
        return -1;
    }
    close(dfd);
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        rl_fail(err, RL_ERR_ARG, "%s is %s where ropelab expects a regular file", path,
                kind_word(sb.st_mode));
        close(fd);
        return -1;
    }
    if (clear_nonblock(fd) != 0) {
        rl_fail(err, RL_ERR_IO, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

FILE *rl_fs_fopen(const char *root, const char *path, const char *mode, rl_error *err)
{
    int flags = mode[0] == 'r'   ? O_RDONLY
                : mode[0] == 'x' ? O_WRONLY | O_CREAT | O_EXCL
                                 : O_WRONLY | O_CREAT | O_TRUNC;
    int fd = rl_fs_open(root, path, flags, 0666, err);
    if (fd < 0)
        return NULL;
    FILE *fp = fdopen(fd, mode[0] == 'r' ? "rb" : "wb");
    if (!fp) {
        rl_fail(err, RL_ERR_IO, "%s: %s", path, strerror(errno));
        close(fd);
    }
    return fp;
}

rl_status rl_fs_mkdirs(const char *root, const char *path, rl_error *err)
{
    const char *leaf;
    char name[256];
    int dfd = walk(root, path, 1, &leaf, NULL, err);
    if (dfd < 0)
        return err ? err->status : RL_ERR_IO;
    rl_status st = RL_OK;
    if (leaf_name(leaf, name, sizeof name))
        st = rl_fail(err, RL_ERR_ARG, "%s: name too long", path);
    else if (mkdirat(dfd, name, 0777) != 0 && errno != EEXIST)
        st = rl_fail(err, RL_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    else {
        struct stat sb;
        if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
            st = rl_fail(err, RL_ERR_IO, "%s: %s", path, strerror(errno));
        else if (S_ISLNK(sb.st_mode))
            st = refuse_link(err, path, strlen(path), root);
        else if (!S_ISDIR(sb.st_mode))
            st = rl_fail(err, RL_ERR_ARG, "%s exists and is %s, not a directory", path,
                         kind_word(sb.st_mode));
    }
    close(dfd);
    return st;
}

int rl_fs_kind(const char *root, const char *path, rl_error *err)
{
    const char *leaf;
    char name[256];
    int missing;
    int dfd = walk_existing(root, path, &leaf, &missing, err);
    if (dfd < 0)
        return missing ? 0 : -1;
    struct stat sb;
    int k = 0;
    if (leaf_name(leaf, name, sizeof name) == 0 &&
        fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0)
        k = kind_at(dfd, name);
    close(dfd);
    return k;
}

/* Removes entry name of directory dfd (a file, or a tree). */
static rl_status remove_at(int dfd, const char *name, const char *shown, const char *root,
                           rl_error *err)
{
    struct stat sb;
    if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? RL_OK
                               : rl_fail(err, RL_ERR_IO, "%s: %s", shown, strerror(errno));
    if (S_ISLNK(sb.st_mode))
        return refuse_link(err, shown, strlen(shown), root);
    if (!S_ISDIR(sb.st_mode)) {
        if (unlinkat(dfd, name, 0) != 0 && errno != ENOENT)
            return rl_fail(err, RL_ERR_IO, "%s: cannot remove: %s", shown, strerror(errno));
        return RL_OK;
    }
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return rl_fail(err, RL_ERR_IO, "%s: cannot open: %s", shown, strerror(errno));
    }
    rl_status st = RL_OK;
    struct dirent *e;
    while (!st && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        size_t n = strlen(shown) + strlen(e->d_name) + 2;
        char *sub = malloc(n);
        if (!sub) {
            st = rl_fail(err, RL_ERR_NOMEM, "out of host memory");
            break;
        }
        snprintf(sub, n, "%s/%s", shown, e->d_name);
        st = remove_at(dirfd(d), e->d_name, sub, root, err);
        free(sub);
    }
    closedir(d);
    if (!st && unlinkat(dfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
        st = rl_fail(err, RL_ERR_IO, "%s: cannot remove: %s", shown, strerror(errno));
    return st;
}

rl_status rl_fs_remove(const char *root, const char *path, rl_error *err)
{
    const char *leaf;
    char name[256];
    int missing;
    int dfd = walk_existing(root, path, &leaf, &missing, err);
    if (dfd < 0)
        return missing ? RL_OK : err ? err->status : RL_ERR_IO;
    rl_status st = leaf_name(leaf, name, sizeof name)
                       ? rl_fail(err, RL_ERR_ARG, "%s: name too long", path)
                       : remove_at(dfd, name, path, root, err);
    close(dfd);
    return st;
}

rl_status rl_fs_rename(const char *root, const char *from, const char *to, rl_error *err)
{
    const char *lf, *lt;
    char nf[256], nt[256];
    int df = walk(root, from, 0, &lf, NULL, err);
    if (df < 0)
        return err ? err->status : RL_ERR_IO;
    int dt = walk(root, to, 0, &lt, NULL, err);
    if (dt < 0) {
        close(df);
        return err ? err->status : RL_ERR_IO;
    }
    rl_status st = RL_OK;
    struct stat sb;
    if (leaf_name(lf, nf, sizeof nf) || leaf_name(lt, nt, sizeof nt))
        st = rl_fail(err, RL_ERR_ARG, "%s: name too long", to);
    else if (fstatat(dt, nt, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode))
        st = refuse_link(err, to, strlen(to), root);
    else if (renameat(df, nf, dt, nt) != 0)
        st = rl_fail(err, RL_ERR_IO, "%s: cannot rename to %s: %s", from, to, strerror(errno));
    close(df);
    close(dt);
    return st;
}

rl_status rl_fs_replace(const char *root, const char *from, const char *to, rl_error *err)
{
    int k = rl_fs_kind(root, to, err);
    if (k < 0)
        return err ? err->status : RL_ERR_IO;
    if (k == 'l')
        return refuse_link(err, to, strlen(to), root);
    if (k == 0)
        return rl_fs_rename(root, from, to, err);
#ifdef RENAME_EXCHANGE
    const char *lf, *lt;
    char nf[256], nt[256];
    int df = walk(root, from, 0, &lf, NULL, err);
    if (df < 0)
        return err ? err->status : RL_ERR_IO;
    int dt = walk(root, to, 0, &lt, NULL, err);
    if (dt < 0) {
        close(df);
        return err ? err->status : RL_ERR_IO;
    }
    rl_status st = RL_OK;
    int swapped = 0;
    if (leaf_name(lf, nf, sizeof nf) || leaf_name(lt, nt, sizeof nt))
        st = rl_fail(err, RL_ERR_ARG, "%s: name too long", to);
    else if (renameat2(df, nf, dt, nt, RENAME_EXCHANGE) == 0)
        swapped = 1;
    else if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
        st = rl_fail(err, RL_ERR_IO, "%s: cannot exchange with %s: %s", from, to,
                     strerror(errno));
    close(df);
    close(dt);
    if (swapped) /* the new content is in place; old content left is a stale temporary */
        rl_fs_remove(root, from, NULL);
    if (st || swapped)
        return st;
#endif
    rl_status rs = rl_fs_remove(root, to, err);
    return rs ? rs : rl_fs_rename(root, from, to, err);
}

int rl_fs_each(const char *root, const char *path,
               int (*fn)(const char *name, int kind, void *user), void *user, rl_error *err)
{
    const char *leaf;
    char name[256];
    int dfd = walk(root, path, 0, &leaf, NULL, err);
    if (dfd < 0)
        return -1;
    int fd = leaf_name(leaf, name, sizeof name)
                 ? -1
                 : openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        struct stat sb;
        if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode))
            refuse_link(err, path, strlen(path), root);
        else
            rl_fail(err, RL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        close(dfd);
        return -1;
    }
    close(dfd);
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        rl_fail(err, RL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    int r = 0;
    struct dirent *e;
    while (!r && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        r = fn(e->d_name, kind_at(dirfd(d), e->d_name), user);
    }
    closedir(d);
    return r;
}

typedef struct scan_ctx {
    const char *root;
    char path[2048];
    int depth;
    rl_error *err;
    rl_status st;
} scan_ctx;

static int scan_one(const char *name, int kind, void *user)
{
    scan_ctx *c = user;
    size_t at = strlen(c->path);
    if (at + strlen(name) + 2 > sizeof c->path) {
        c->st = rl_fail(c->err, RL_ERR_LIMIT, "%s/%s: path too long", c->path, name);
        return 1;
    }
    snprintf(c->path + at, sizeof c->path - at, "/%s", name);
    if (kind == 'l')
        c->st = refuse_link(c->err, c->path, strlen(c->path), c->root);
    else if (kind == 'o')
        c->st = rl_fail(c->err, RL_ERR_ARG, "%s is not a regular file or directory; ropelab "
                        "refuses to work in a directory holding one", c->path);
    else if (kind == 'd' && c->depth > 1) {
        c->depth--;
        if (rl_fs_each(c->root, c->path, scan_one, c, c->err) < 0 && !c->st)
            c->st = c->err ? c->err->status : RL_ERR_IO;
        c->depth++;
    }
    c->path[at] = '\0';
    return c->st != RL_OK;
}

rl_status rl_fs_no_links(const char *root, int depth, rl_error *err)
{
    scan_ctx c = {.root = root, .depth = depth, .err = err};
    snprintf(c.path, sizeof c.path, "%s", root);
    DIR *d = opendir(root);
    if (!d)
        return RL_OK; /* not there yet: nothing planted */
    struct dirent *e;
    while (!c.st && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        scan_one(e->d_name, kind_at(dirfd(d), e->d_name), &c);
    }
    closedir(d);
    return c.st;
}

/* ---- a results folder's lock and its temporaries ------------------------ */

rl_status rl_fs_lock(const char *dir, int *fd_out, rl_error *err)
{
    *fd_out = -1;
    char path[1200];
    snprintf(path, sizeof path, "%s/.ropelab.lock", dir);
    /* O_NOFOLLOW, a regular file: a link planted as the lock never makes
     * ropelab truncate or write what it points at */
    int fd = rl_fs_open(dir, path, O_RDWR | O_CREAT, 0666, err);
    if (fd < 0) {
        rl_error_prefix(err, "the lock file");
        return err ? err->status : RL_ERR_IO;
    }
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

void rl_fs_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* releases the flock; the file stays (harmless, reused) */
}

static int is_tmp_name(const char *name, const char *const *prefixes, size_t n)
{
    if (!prefixes)
        return strstr(name, ".tmp.") != NULL;
    for (size_t i = 0; i < n; i++)
        if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
            return 1;
    return 0;
}

rl_status rl_fs_clean_tmp(const char *root, const char *dir, const char *const *prefixes,
                          size_t n_prefixes, size_t *removed, rl_error *err)
{
    if (removed)
        *removed = 0;
    int fd;
    if (!strcmp(dir, root)) {
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* the user's choice */
        if (fd < 0)
            return errno == ENOENT ? RL_OK
                                   : rl_fail(err, RL_ERR_IO, "%s: cannot open: %s", root,
                                             strerror(errno));
    } else {
        const char *leaf;
        char name[256];
        int missing;
        int dfd = walk_existing(root, dir, &leaf, &missing, err);
        if (dfd < 0)
            return missing ? RL_OK : err ? err->status : RL_ERR_IO;
        if (leaf_name(leaf, name, sizeof name)) {
            close(dfd);
            return rl_fail(err, RL_ERR_ARG, "%s: name too long", dir);
        }
        int k = kind_at(dfd, name);
        struct stat sb;
        int there = fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0;
        fd = there && k == 'd'
                 ? openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                 : -1;
        int e = errno;
        close(dfd);
        if (!there)
            return RL_OK;
        if (k == 'l')
            return refuse_link(err, dir, strlen(dir), root);
        if (k != 'd')
            return rl_fail(err, RL_ERR_ARG, "%s is not a directory where ropelab keeps its "
                           "own directory; remove it or choose another directory", dir);
        if (fd < 0)
            return rl_fail(err, RL_ERR_IO, "%s: cannot open: %s", dir, strerror(e));
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return rl_fail(err, RL_ERR_IO, "%s: cannot open: %s", dir, strerror(errno));
    }
    rl_status st = RL_OK;
    struct dirent *e;
    while (!st && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            !is_tmp_name(e->d_name, prefixes, n_prefixes))
            continue;
        char shown[1400];
        snprintf(shown, sizeof shown, "%s/%s", dir, e->d_name);
        if (kind_at(dirfd(d), e->d_name) == 'd') {
            st = remove_at(dirfd(d), e->d_name, shown, root, err);
        } else if (unlinkat(dirfd(d), e->d_name, 0) != 0 && errno != ENOENT) {
            /* a file, or a link removed as a link: nothing followed */
            st = rl_fail(err, RL_ERR_IO, "%s: cannot remove: %s", shown, strerror(errno));
        }
        if (!st && removed)
            (*removed)++;
    }
    closedir(d);
    return st;
}

json_t *rl_fs_load_json(const char *root, const char *path, size_t max, rl_error *err)
{
    FILE *fp = root ? rl_fs_fopen(root, path, "r", err) : rl_fs_open_input(path, err);
    if (!fp)
        return NULL;
    if (too_large(fp, path, max, err)) {
        fclose(fp);
        return NULL;
    }
    json_error_t je;
    json_t *v = json_loadf(fp, 0, &je);
    fclose(fp);
    if (!v)
        rl_fail(err, RL_ERR_PARSE, "%s:%d: %s", path, je.line, je.text);
    return v;
}
