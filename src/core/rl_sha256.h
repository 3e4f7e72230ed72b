/* rl_sha256.h — SHA-256 (FIPS 180-4), for content hashes of input files
 * (manifest.json's `inputs`; prefix rl_sha256). Incremental: init, update
 * any number of times, final. Checked against the FIPS 180-2 / NIST CSRC
 * example vectors in tests/test_core.c. */
#ifndef RL_SHA256_H
#define RL_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "core/rl_status.h"

typedef struct rl_sha256_ctx {
    uint32_t h[8];
    uint64_t bytes;              /* message length so far */
    uint8_t block[64];           /* a partial block */
    size_t fill;                 /* bytes in block */
} rl_sha256_ctx;

void rl_sha256_init(rl_sha256_ctx *c);
void rl_sha256_update(rl_sha256_ctx *c, const void *data, size_t len);
/* The digest (32 bytes); c must be initialised again before reuse. */
void rl_sha256_final(rl_sha256_ctx *c, uint8_t digest[32]);

/* The digest of data[0..len) as 64 lowercase hex digits and a NUL. */
void rl_sha256_hex(const void *data, size_t len, char hex[65]);

/* Hashes the file at path: hex (64 digits + NUL) and its size in bytes.
 * RL_ERR_IO naming the path when it cannot be opened or read. */
rl_status rl_sha256_file(const char *path, char hex[65], uint64_t *size, rl_error *err);

#endif
