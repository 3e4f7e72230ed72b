/* rl_safetensors.h — reader of .safetensors files (prefix rl_safetensors_).
 *
 * Format: 8-byte little-endian header length N, N bytes of JSON
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *  "__metadata__": {...}}, then the data; offsets are relative to the data
 * start. The header is parsed with jansson; every tensor's offsets are
 * checked against its shape and dtype and the file size. F32, F16 and BF16
 * tensors can be read as float32, I64 and I32 tensors as int64. The
 * `__metadata__` map must hold strings only (the format's string-to-string
 * map); rl_safetensors_meta looks a key up. */
#ifndef RL_SAFETENSORS_H
#define RL_SAFETENSORS_H

#include <stdint.h>

#include "core/rl_status.h"

#define RL_ST_MAX_RANK 8

typedef struct rl_st_tensor {
    char name[256];
    char dtype[16];              /* "F32", "F16", "BF16", ... */
    uint32_t rank;
    uint64_t shape[RL_ST_MAX_RANK];
    uint64_t begin, end;         /* byte offsets relative to the data start */
} rl_st_tensor;

typedef struct rl_st_meta {
    char *key, *value;           /* owned, NUL-terminated */
} rl_st_meta;

typedef struct rl_safetensors {
    char path[1024];
    uint64_t data_start;         /* 8 + header length */
    uint64_t file_size;
    size_t n;
    rl_st_tensor *tensors;       /* [n], owned */
    size_t n_meta;
    rl_st_meta *meta;            /* [n_meta] the __metadata__ entries, owned */
} rl_safetensors;

/* Opens and validates the header; the caller closes with rl_safetensors_close. */
rl_status rl_safetensors_open(const char *path, rl_safetensors *st, rl_error *err);
void rl_safetensors_close(rl_safetensors *st);
/* Tensor by name, or NULL. */
const rl_st_tensor *rl_safetensors_find(const rl_safetensors *st, const char *name);
/* The __metadata__ value of key, or NULL when absent. */
const char *rl_safetensors_meta(const rl_safetensors *st, const char *key);
/* Reads elements [first, first + count) of an F32, F16 or BF16 tensor as
 * float32 (out: [count]); non-finite values are RL_ERR_ARG. */
rl_status rl_safetensors_read_f32(const rl_safetensors *st, const rl_st_tensor *t,
                                  uint64_t first, uint64_t count, float *out, rl_error *err);
/* Reads elements [first, first + count) of an I64 or I32 tensor (out:
 * [count]). */
rl_status rl_safetensors_read_i64(const rl_safetensors *st, const rl_st_tensor *t,
                                  uint64_t first, uint64_t count, int64_t *out, rl_error *err);

#endif
