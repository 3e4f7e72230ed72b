/* The mask's host side (attn_mask.h): visible key intervals of a query row
 * and the tile test built on them. */
#include "attn/attn.h"
#include "attn/attn_mask.h"

attn_mask attn_desc_mask(const attn_desc *d)
{
    return (attn_mask){.causal = d->causal, .window = d->window, .n_sink = d->n_sink,
                       .chunk_size = d->chunk_size};
}

int attn_mask_active(const attn_mask *m)
{
    return m->window || m->chunk_size;
}

unsigned attn_mask_ranges(const attn_mask *m, uint64_t i, uint64_t n_keys,
                          attn_range out[ATTN_MASK_MAX_RANGES])
{
    uint64_t end = m->causal ? i + 1 : n_keys; /* keys [0, end) before the mask */
    if (end > n_keys)
        end = n_keys;
    if (!attn_mask_active(m)) {
        out[0] = (attn_range){0, end};
        return 1;
    }
    /* the local interval [lo, hi): window then chunk */
    uint64_t lo = 0, hi = end;
    if (m->window) {
        uint64_t w = m->window;
        lo = i + 1 >= w ? i + 1 - w : 0;
        if (i + w < hi)
            hi = i + w;
    }
    if (m->chunk_size) {
        uint64_t c0 = i / m->chunk_size * m->chunk_size, c1 = c0 + m->chunk_size;
        lo = lo > c0 ? lo : c0;
        hi = hi < c1 ? hi : c1;
    }
    uint64_t sink_end = m->n_sink < end ? m->n_sink : end; /* sinks [0, sink_end) */
    if (sink_end >= lo) {                                   /* they touch: one interval */
        out[0] = (attn_range){0, hi > sink_end ? hi : sink_end};
        return 1;
    }
    unsigned n = 0;
    if (sink_end)
        out[n++] = (attn_range){0, sink_end};
    out[n++] = (attn_range){lo, hi};
    return n;
}

uint64_t attn_mask_row_keys(const attn_mask *m, uint64_t i, uint64_t n_keys)
{
    attn_range r[ATTN_MASK_MAX_RANGES];
    unsigned n = attn_mask_ranges(m, i, n_keys, r);
    uint64_t keys = 0;
    for (unsigned k = 0; k < n; k++)
        keys += r[k].hi - r[k].lo;
    return keys;
}

static int meets(const attn_range *r, unsigned n, uint64_t k0, uint64_t k1)
{
    for (unsigned k = 0; k < n; k++)
        if (r[k].lo < k1 && k0 < r[k].hi)
            return 1;
    return 0;
}

int attn_mask_tile_visible(const attn_mask *m, uint64_t n_keys, uint64_t q0, uint64_t q1,
                           uint64_t k0, uint64_t k1)
{
    if (q0 >= q1 || k0 >= k1)
        return 0;
    attn_range r[ATTN_MASK_MAX_RANGES];
    unsigned n = attn_mask_ranges(m, q1 - 1, n_keys, r);
    /* The sink interval [0, s(i)) only grows with i: the last row has the
     * largest; so has an unmasked row's single interval. */
    if (meets(r, n, k0, k1))
        return 1;
    if (!attn_mask_active(m))
        return 0;
    /* The last interval [lo(i), hi(i)) (the one holding i) has lo and hi
     * non-decreasing in i. The last row missed the tile: if its interval
     * starts at or past k1 some earlier row may still reach into it, and the
     * candidate with the smallest lo is the first row i with hi(i) > k0. */
    if (r[n - 1].hi <= k0)
        return 0; /* every earlier row ends no later */
    uint64_t a = q0, b = q1 - 1; /* hi(b) > k0: find the first such row in [a, b] */
    while (a < b) {
        uint64_t mid = a + (b - a) / 2;
        unsigned nm = attn_mask_ranges(m, mid, n_keys, r);
        if (r[nm - 1].hi > k0)
            b = mid;
        else
            a = mid + 1;
    }
    n = attn_mask_ranges(m, a, n_keys, r);
    return meets(r, n, k0, k1);
}
