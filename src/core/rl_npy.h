/* rl_npy.h — minimal NumPy .npy reader and writer (prefix rl_npy_).
 *
 * Reads format versions 1.0, 2.0 and 3.0 whose header dict says
 * 'descr': '<f4' (float32) or '<f2' (float16, little-endian),
 * 'fortran_order': False and a shape of 0..RL_NPY_MAX_DIMS dimensions. The
 * header is parsed here (it is a tiny Python dict literal); anything else —
 * another dtype, big-endian data, Fortran order, a short file — is refused
 * with a message naming the file and what was found. Data is returned as
 * float32 in C order (float16 is widened exactly). */
#ifndef RL_NPY_H
#define RL_NPY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/rl_status.h"

#define RL_NPY_MAX_DIMS 8

typedef struct rl_npy {
    uint32_t ndim;
    uint64_t shape[RL_NPY_MAX_DIMS];
    uint64_t count;          /* product of shape (1 for a 0-d array) */
    char descr[16];          /* the file's dtype string, e.g. "<f2" */
    uint64_t data_offset;    /* byte offset of the data in the file */
    float *data;             /* [shape...] float32, C order; owned, rl_npy_free */
} rl_npy;

/* Loads path into *out (zeroed first). Errors: RL_ERR_IO (cannot open or
 * short read, "<path>: ..."), RL_ERR_PARSE (bad magic/header, unsupported
 * dtype or order, data size mismatch — the message names path and what
 * was found). On failure *out holds nothing to free. */
rl_status rl_npy_load(const char *path, rl_npy *out, rl_error *err);
void rl_npy_free(rl_npy *a);
/* The same checks as rl_npy_load (dtype, order, data size) without reading
 * the data: out->data stays NULL; out->data_offset locates it. */
rl_status rl_npy_header(const char *path, rl_npy *out, rl_error *err);

/* rl_npy_header that keeps the file open: *fp (close with fclose) is the
 * one stream the header was read from, so the data read later is that
 * file's, not whatever the path names by then. */
rl_status rl_npy_open(const char *path, rl_npy *out, FILE **fp, rl_error *err);
/* Reads elements [first, first + count) of the float .npy h (from
 * rl_npy_open on fp) into dst as float32 (float16 widened exactly).
 * Errors name path: past the shape, a short file, a seek that fails. */
rl_status rl_npy_read_f32(FILE *fp, const char *path, const rl_npy *h, uint64_t first,
                          uint64_t count, float *dst, rl_error *err);

/* Loads an integer .npy ('<i4', '<i8', '<u4', '<u8'; any shape, read
 * flat in C order) as uint32 values: *out [count], caller frees. A negative
 * or > 2^32 - 1 element is an error naming its index. */
rl_status rl_npy_load_u32(const char *path, uint32_t **out, uint64_t *count, rl_error *err);
/* The header of an integer .npy as rl_npy_load_u32 accepts it (shape,
 * descr, count; data NULL): for callers that check the shape. */
rl_status rl_npy_header_int(const char *path, rl_npy *out, rl_error *err);

/* Writes a version 1.0 .npy file with the given descr (e.g. "<f4", "<f2",
 * or any other string — tests use it to write files the reader must
 * refuse), fortran_order flag, shape and raw data bytes. */
rl_status rl_npy_save_raw(const char *path, const char *descr, int fortran_order,
                          const uint64_t *shape, uint32_t ndim, const void *data, size_t bytes,
                          rl_error *err);

#endif
