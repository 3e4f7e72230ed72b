/* Helpers shared by the pe test suites: a scratch directory for .npy
 * fixtures written at run time, and encoding creation from JSON text. */
#ifndef TEST_PE_UTIL_H
#define TEST_PE_UTIL_H

#include "rl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/rl_npy.h"
#include "pe/pe.h"

typedef struct tdir {
    char path[64];
    char files[16][128];
    int n;
} tdir;

static inline void tdir_open(tdir *d)
{
    snprintf(d->path, sizeof d->path, "/tmp/rl_pe_test_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(d->path));
    d->n = 0;
}

/* Writes a .npy named name in d; returns its path (owned by d). */
static inline const char *tdir_npy(tdir *d, const char *name, const char *descr, int fortran,
                                   const uint64_t *shape, uint32_t ndim, const void *data,
                                   size_t bytes)
{
    ck_assert_int_lt(d->n, 16);
    char full[128];
    snprintf(full, sizeof full, "%s/%s", d->path, name);
    char *p = d->files[d->n++];
    memcpy(p, full, sizeof full);
    rl_error err = {0};
    ck_assert_msg(rl_npy_save_raw(p, descr, fortran, shape, ndim, data, bytes, &err) == RL_OK,
                  "%s", err.msg);
    return p;
}

static inline void tdir_close(tdir *d)
{
    for (int i = 0; i < d->n; i++)
        unlink(d->files[i]);
    rmdir(d->path);
}

/* Creates encoding name with params (JSON text) for shape; returns the
 * status, message in *err. */
static inline rl_status make_enc(const char *name, const char *json, const pe_shape *shape,
                                 pe_encoding **e, rl_error *err)
{
    json_error_t je;
    json_t *p = json_loads(json, 0, &je);
    ck_assert_msg(p != NULL, "bad test JSON %s", json);
    rl_status st = pe_encoding_create(name, p, shape, e, err);
    json_decref(p);
    return st;
}

#endif
