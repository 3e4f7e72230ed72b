/* attn_mask.h — the ONE host description of an attention mask (prefix attn_mask_).
 *
 * API at a glance:
 *   attn_mask                 {causal, window, n_sink, chunk_size}: which keys a query row sees
 *   attn_mask_active(m)       1 when window or chunk_size restricts beyond causal/bidirectional
 *   attn_mask_ranges(m, i, n, out)   the visible keys of row i as <= ATTN_MASK_MAX_RANGES intervals
 *   attn_mask_row_keys(m, i, n)      how many keys row i sees
 *   attn_mask_tile_visible(m, q0, q1, k0, k1)  1 when some pair of the tile is visible
 *
 * Definition (docs/attention.md "Masks"), in token order: key j < n_keys is
 * visible to query i when (not causal or j <= i) and (j < n_sink or
 * local(i, j)), local(i, j) = (window == 0 or |i - j| < window) and
 * (chunk_size == 0 or floor(i / chunk_size) == floor(j / chunk_size)).
 * n_sink only counts with window or chunk_size (without them every key is
 * visible). Host users: attn_gpu.c's tile skipping, bench's pair counts,
 * exp's uniform reference masses. The CPU reference keeps its own per-pair
 * predicate (attn_ref_visible, written from the definition) so that it is
 * not this code checked against itself; tests/test_attn_ref.c checks these
 * functions against it. The shader (attn.comp) has its own GLSL copy. */
#ifndef ATTN_MASK_H
#define ATTN_MASK_H

#include <stdint.h>

typedef struct attn_mask {
    int causal;                           /* 1: keys j <= i only */
    uint32_t window, n_sink, chunk_size;  /* 0: none (attn_desc's fields) */
} attn_mask;

/* A half-open key interval [lo, hi). */
typedef struct attn_range {
    uint64_t lo, hi;
} attn_range;

/* Sinks + the local interval (merged when they touch). */
#define ATTN_MASK_MAX_RANGES 2

/* 1 when m restricts keys beyond causal/bidirectional (window or chunk_size). */
int attn_mask_active(const attn_mask *m);

/* The keys of [0, n_keys) row i (< n_keys) sees under m, as disjoint,
 * ascending, non-empty intervals written to out[0..count-1]; returns count
 * (1 or 2; the last one holds i itself). */
unsigned attn_mask_ranges(const attn_mask *m, uint64_t i, uint64_t n_keys,
                          attn_range out[ATTN_MASK_MAX_RANGES]);

/* Number of keys row i (< n_keys) sees: the ranges' total length. */
uint64_t attn_mask_row_keys(const attn_mask *m, uint64_t i, uint64_t n_keys);

/* 1 when some query of [q0, q1) sees some key of [k0, k1) (exact; both
 * within [0, n_keys)), from the rows' ranges: their ends never decrease with
 * i, so the first row whose local interval reaches k0 decides (binary
 * search). Empty tiles: 0. */
int attn_mask_tile_visible(const attn_mask *m, uint64_t n_keys, uint64_t q0, uint64_t q1,
                           uint64_t k0, uint64_t k1);

#endif
