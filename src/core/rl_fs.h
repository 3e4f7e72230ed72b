/* rl_fs.h — files ropelab reads and writes when the folders are not its own
 * (prefix rl_fs_).
 *
 * Results folders travel between people: a received output directory, a
 * shard or a colleague's run may hold symbolic links planted anywhere, and
 * a path named as an input may be a FIFO or a device. Two rules:
 *
 *  - Below a root (the output directory the user named, a shard being
 *    merged) every path is reached from a descriptor of the root, one
 *    component at a time, with O_NOFOLLOW: no link below the root is ever
 *    followed. A link, or anything not a directory or regular file, where
 *    ropelab expects its own file or directory is refused with RL_ERR_ARG
 *    (exit 2) and a message naming it. The root itself is the user's
 *    choice and is followed.
 *  - Every file opened for reading is checked to be a regular file after
 *    the open (fstat) and before any byte is read; the open itself never
 *    blocks (O_NONBLOCK, cleared afterwards), so a FIFO is refused at once.
 *
 * Paths given to the below-root functions must be the root itself followed
 * by "/" and a relative path without "..". */
#ifndef RL_FS_H
#define RL_FS_H

#include <stdio.h>
#include <sys/stat.h>

#include <jansson.h>

#include "core/rl_status.h"

/* Size limits per format (docs/runner.md, "Outputs"): a file larger is
 * refused before it is read (RL_ERR_LIMIT, naming the limit). */
#define RL_FS_MAX_CONFIG_JSON (16u << 20)         /* config.json, --positions */
#define RL_FS_MAX_SUMMARY (256u << 20)            /* runs/<id>/summary.json */
#define RL_FS_MAX_MANIFEST (1024u << 20)          /* manifest.json */
#define RL_FS_MAX_RESULTS ((size_t)2048u << 20)   /* results.csv, a run's tables */

/* Opens an input the user named (links followed: the user chose the path)
 * for reading; refuses anything but a regular file, and (max > 0) one
 * larger than max bytes. NULL and err on failure. */
FILE *rl_fs_open_input(const char *path, rl_error *err);
FILE *rl_fs_open_input_max(const char *path, size_t max, rl_error *err);

/* Opens path below root with open(2) flags (O_NOFOLLOW, O_CLOEXEC and a
 * non-blocking open are added; an existing file must be regular). Returns
 * the descriptor, or -1 and err. */
int rl_fs_open(const char *root, const char *path, int flags, mode_t mode, rl_error *err);

/* rl_fs_open as a stdio stream: mode "r" reads, "w" creates or truncates,
 * "x" creates a file that must not exist (for temporaries). */
FILE *rl_fs_fopen(const char *root, const char *path, const char *mode, rl_error *err);

/* mkdir -p of path below root (root must exist); every component must be a
 * real directory. */
rl_status rl_fs_mkdirs(const char *root, const char *path, rl_error *err);

/* Renames from to to, both below root; a link at to is refused, not
 * replaced. */
rl_status rl_fs_rename(const char *root, const char *from, const char *to, rl_error *err);

/* Puts from in place of to (both below root) with to whole at every
 * moment: when to exists, the two are exchanged atomically (Linux
 * renameat2 RENAME_EXCHANGE) and then from, now holding the old content,
 * is removed (what cannot be, or a kill in between, leaves it as a stale
 * temporary). Missing to: a plain rename. A link at to is refused. Where
 * the exchange is not supported, to is removed and from renamed (a kill
 * in between leaves to missing). */
rl_status rl_fs_replace(const char *root, const char *from, const char *to, rl_error *err);

/* Removes a file, or a directory and everything in it, below root; missing
 * is not an error. A link anywhere in the tree is refused (nothing it
 * points at is touched). */
rl_status rl_fs_remove(const char *root, const char *path, rl_error *err);

/* What is at path below root, links not followed: 'f' a regular file,
 * 'd' a directory, 'l' a symbolic link, 'o' anything else, 0 nothing (or a
 * component above it that is not a real directory: then err says why and
 * the return is -1). */
int rl_fs_kind(const char *root, const char *path, rl_error *err);

/* Calls fn for each entry of the directory path below root (not "." and
 * ".."), with its kind as rl_fs_kind gives it; stops at fn's first
 * non-zero return, which it returns. -1 and err when the directory cannot
 * be opened. */
int rl_fs_each(const char *root, const char *path,
               int (*fn)(const char *name, int kind, void *user), void *user, rl_error *err);

/* The lock of a results folder: an exclusive flock on dir/.ropelab.lock
 * (opened without following a link; it records the holder's pid). Every
 * command that writes into a results folder (run, merge, plot) holds it
 * while it writes, so a second one on the same folder is refused at once
 * (RL_ERR_IO, naming the holder's pid) and, holding it, a command knows
 * that every temporary in the folder was left by a process that died.
 * *fd receives the lock; rl_fs_unlock (or the process's death, kill -9
 * included) releases it. */
rl_status rl_fs_lock(const char *dir, int *fd, rl_error *err);
void rl_fs_unlock(int fd);

/* Removes the temporaries in directory dir below root (dir may be root
 * itself): entries whose names begin with one of the n prefixes, or
 * (prefixes NULL) contain ".tmp.". Only under rl_fs_lock: every writer of
 * such a name holds the lock, so none of them is live. A symbolic link so
 * named is removed as a link (unlink: what it points at is never touched);
 * a directory so named is removed with its tree (a link inside it is
 * refused, RL_ERR_ARG). A missing dir is fine; a link or non-directory at
 * dir is refused. *removed (may be NULL) counts what was removed. */
rl_status rl_fs_clean_tmp(const char *root, const char *dir, const char *const *prefixes,
                          size_t n_prefixes, size_t *removed, rl_error *err);

/* Parses a JSON file of at most max bytes: below root without following a
 * link (root NULL: an input the user named); a regular file either way.
 * NULL and err (RL_ERR_PARSE with file:line: reason). */
json_t *rl_fs_load_json(const char *root, const char *path, size_t max, rl_error *err);

/* Refuses (RL_ERR_ARG, naming it) a symbolic link or special file anywhere
 * in root's tree down to depth levels (1: root's own entries). What a
 * command about to write into a received directory checks first, so the
 * refusal comes before any work; the O_NOFOLLOW of every operation above is
 * what guarantees it. A missing root is fine. */
rl_status rl_fs_no_links(const char *root, int depth, rl_error *err);

#endif
