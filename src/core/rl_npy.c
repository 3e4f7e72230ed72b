/* .npy reader/writer: the header is a Python dict literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and a newline. We read exactly the three keys. */
#include "core/rl_fs.h"
#include "core/rl_npy.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"

static const char *skip_ws(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

/* A Python string literal '...' or "..." (no escapes: numpy writes none in
 * these keys) into buf; returns the position after it, NULL if malformed. */
static const char *parse_pystr(const char *p, char *buf, size_t cap)
{
    if (*p != '\'' && *p != '"')
        return NULL;
    char q = *p++;
    const char *end = strchr(p, q);
    if (!end || (size_t)(end - p) >= cap || memchr(p, '\\', (size_t)(end - p)))
        return NULL;
    memcpy(buf, p, (size_t)(end - p));
    buf[end - p] = '\0';
    return end + 1;
}

/* The header is the repr of a dict with exactly the keys 'descr' (a
 * string), 'fortran_order' (True / False) and 'shape' (a tuple of
 * non-negative integers), as numpy's own reader requires: any other key, a
 * key given twice or trailing text is refused. */
static rl_status parse_header(const char *path, const char *hdr, rl_npy *a, int *fortran,
                              rl_error *err)
{
    const char *p = skip_ws(hdr);
    int seen_descr = 0, seen_fortran = 0, seen_shape = 0;
    if (*p++ != '{')
        return rl_fail(err, RL_ERR_PARSE, "%s: .npy header is not a dict: %s", path, hdr);
    a->ndim = 0;
    a->count = 1;
    for (;;) {
        p = skip_ws(p);
        if (*p == '}')
            break;
        char key[32];
        const char *q = parse_pystr(p, key, sizeof key);
        if (!q)
            return rl_fail(err, RL_ERR_PARSE, "%s: .npy header key is malformed: %s", path, hdr);
        p = skip_ws(q);
        if (*p++ != ':')
            return rl_fail(err, RL_ERR_PARSE, "%s: .npy header: no ':' after '%s': %s", path, key,
                           hdr);
        p = skip_ws(p);
        if (strcmp(key, "descr") == 0 && !seen_descr++) {
            if (!(p = parse_pystr(p, a->descr, sizeof a->descr)))
                return rl_fail(err, RL_ERR_PARSE, "%s: .npy header 'descr' is malformed: %s",
                               path, hdr);
        } else if (strcmp(key, "fortran_order") == 0 && !seen_fortran++) {
            if (strncmp(p, "True", 4) == 0)
                *fortran = 1, p += 4;
            else if (strncmp(p, "False", 5) == 0)
                *fortran = 0, p += 5;
            else
                return rl_fail(err, RL_ERR_PARSE,
                               "%s: .npy 'fortran_order' is neither True nor False: %s", path, hdr);
        } else if (strcmp(key, "shape") == 0 && !seen_shape++) {
            if (*p++ != '(')
                return rl_fail(err, RL_ERR_PARSE, "%s: .npy header has no 'shape' tuple: %s",
                               path, hdr);
            for (;;) {
                p = skip_ws(p);
                if (*p == ')') {
                    p++;
                    break;
                }
                if (!isdigit((unsigned char)*p))
                    return rl_fail(err, RL_ERR_PARSE, "%s: .npy 'shape' is malformed: %s", path,
                                   hdr);
                if (a->ndim == RL_NPY_MAX_DIMS)
                    return rl_fail(err, RL_ERR_PARSE, "%s: .npy array has more than %d dimensions",
                                   path, RL_NPY_MAX_DIMS);
                errno = 0;
                char *e = NULL;
                unsigned long long v = strtoull(p, &e, 10);
                if (errno || (v && a->count > UINT64_MAX / 4 / v))
                    return rl_fail(err, RL_ERR_PARSE, "%s: .npy 'shape' is too large: %s", path,
                                   hdr);
                a->shape[a->ndim++] = v;
                a->count *= v;
                p = skip_ws(e);
                if (*p == ',')
                    p++;
                else if (*p != ')')
                    return rl_fail(err, RL_ERR_PARSE, "%s: .npy 'shape' is malformed: %s", path,
                                   hdr);
            }
        } else {
            return rl_fail(err, RL_ERR_PARSE,
                           "%s: .npy header key '%s' is %s (numpy writes exactly 'descr', "
                           "'fortran_order' and 'shape'): %s",
                           path, key,
                           strcmp(key, "descr") && strcmp(key, "fortran_order") &&
                                   strcmp(key, "shape")
                               ? "not allowed"
                               : "given twice",
                           hdr);
        }
        p = skip_ws(p);
        if (*p == ',')
            p++;
        else if (*p != '}')
            return rl_fail(err, RL_ERR_PARSE, "%s: .npy header dict is malformed: %s", path, hdr);
    }
    p = skip_ws(p + 1);
    if (*p)
        return rl_fail(err, RL_ERR_PARSE, "%s: .npy header has text after the dict: %s", path,
                       hdr);
    if (!seen_descr)
        return rl_fail(err, RL_ERR_PARSE, "%s: .npy header has no 'descr' string: %s", path, hdr);
    if (!seen_fortran)
        return rl_fail(err, RL_ERR_PARSE, "%s: .npy header has no 'fortran_order': %s", path, hdr);
    if (!seen_shape)
        return rl_fail(err, RL_ERR_PARSE, "%s: .npy header has no 'shape' tuple: %s", path, hdr);
    return RL_OK;
}

/* Opens path and validates its header; on success fp is positioned at the
 * data, *esize is 2 or 4 and out holds shape/descr/count (no data). */
static rl_status open_header(const char *path, rl_npy *out, FILE **fpp, size_t *esize,
                             int ints, rl_error *err)
{
    memset(out, 0, sizeof *out);
    *fpp = NULL;
    FILE *fp = rl_fs_open_input(path, err);
    if (!fp)
        return err ? err->status : RL_ERR_IO;
    rl_status st = RL_OK;
    char *hdr = NULL;
    unsigned char pre[10];
    if (fread(pre, 1, 8, fp) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        st = rl_fail(err, RL_ERR_PARSE, "%s: not a .npy file (missing the \\x93NUMPY magic)", path);
        goto done;
    }
    uint32_t major = pre[6], hlen;
    if (major == 1) {
        if (fread(pre + 8, 1, 2, fp) != 2)
            goto short_read;
        hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
    } else if (major == 2 || major == 3) {
        unsigned char b[4];
        if (fread(b, 1, 4, fp) != 4)
            goto short_read;
        hlen = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        if (hlen > (1u << 20)) {
            st = rl_fail(err, RL_ERR_PARSE, "%s: .npy header length %u is implausible", path, hlen);
            goto done;
        }
    } else {
        st = rl_fail(err, RL_ERR_PARSE, "%s: .npy format version %u.%u is not supported (1.0-3.0)",
                     path, major, pre[7]);
        goto done;
    }
    hdr = malloc(hlen + 1);
    if (!hdr) {
        st = rl_fail(err, RL_ERR_NOMEM, "%s: out of host memory", path);
        goto done;
    }
    if (fread(hdr, 1, hlen, fp) != hlen)
        goto short_read;
    hdr[hlen] = '\0';
    int fortran = 0;
    if ((st = parse_header(path, hdr, out, &fortran, err)))
        goto done;
    if (ints) { /* integer arrays: positions */
        if (strcmp(out->descr, "<i4") == 0 || strcmp(out->descr, "<u4") == 0)
            *esize = 4;
        else if (strcmp(out->descr, "<i8") == 0 || strcmp(out->descr, "<u8") == 0)
            *esize = 8;
        else {
            st = rl_fail(err, RL_ERR_PARSE, "%s: dtype '%s' is not supported for integers (need "
                         "'<i4', '<i8', '<u4' or '<u8', little-endian)", path, out->descr);
            goto done;
        }
    } else if (strcmp(out->descr, "<f4") == 0)
        *esize = 4;
    else if (strcmp(out->descr, "<f2") == 0)
        *esize = 2;
    else {
        st = rl_fail(err, RL_ERR_PARSE,
                     "%s: dtype '%s' is not supported (need '<f4' float32 or '<f2' float16, "
                     "little-endian)",
                     path, out->descr);
        goto done;
    }
    if (fortran) {
        st = rl_fail(err, RL_ERR_PARSE, "%s: array is in Fortran order; need C order "
                                        "(save with numpy.ascontiguousarray)", path);
        goto done;
    }
    uint64_t bytes = out->count * *esize;
    long here = ftell(fp);
    if (fseek(fp, 0, SEEK_END) != 0 || here < 0) {
        st = rl_fail(err, RL_ERR_IO, "%s: cannot seek: %s", path, strerror(errno));
        goto done;
    }
    long total = ftell(fp);
    if (total < 0 || (uint64_t)(total - here) != bytes) {
        st = rl_fail(err, RL_ERR_PARSE, "%s: shape needs %" PRIu64 " data bytes but the file has %ld",
                     path, bytes, total - here);
        goto done;
    }
    fseek(fp, here, SEEK_SET);
    out->data_offset = (uint64_t)here;
    goto done;
short_read:
    st = rl_fail(err, RL_ERR_PARSE, "%s: file ends early (truncated .npy)", path);
done:
    free(hdr);
    if (st)
        fclose(fp);
    else
        *fpp = fp;
    return st;
}

rl_status rl_npy_header(const char *path, rl_npy *out, rl_error *err)
{
    FILE *fp;
    size_t esize;
    rl_status st = open_header(path, out, &fp, &esize, 0, err);
    if (!st)
        fclose(fp);
    return st;
}

rl_status rl_npy_open(const char *path, rl_npy *out, FILE **fp, rl_error *err)
{
    size_t esize;
    return open_header(path, out, fp, &esize, 0, err);
}

rl_status rl_npy_read_f32(FILE *fp, const char *path, const rl_npy *h, uint64_t first,
                          uint64_t count, float *dst, rl_error *err)
{
    const uint64_t es = strcmp(h->descr, "<f2") == 0 ? 2 : 4;
    if (first > h->count || count > h->count - first)
        return rl_fail(err, RL_ERR_ARG, "%s: elements %" PRIu64 "..%" PRIu64 " are past its %" PRIu64,
                       path, first, first + count, h->count);
    if (h->data_offset + first * es > (uint64_t)LONG_MAX ||
        fseek(fp, (long)(h->data_offset + first * es), SEEK_SET) != 0)
        return rl_fail(err, RL_ERR_IO, "%s: cannot seek to element %" PRIu64, path, first);
    unsigned char b[4096];
    for (uint64_t done = 0; done < count;) {
        uint64_t n = count - done < sizeof b / es ? count - done : sizeof b / es;
        if (fread(b, 1, (size_t)(n * es), fp) != n * es)
            return rl_fail(err, RL_ERR_PARSE, "%s: file ends early (shorter than its shape)", path);
        for (uint64_t i = 0; i < n; i++) {
            if (es == 2) {
                dst[done + i] = rl_half_to_float((uint16_t)(b[2 * i] | b[2 * i + 1] << 8));
            } else {
                uint32_t u = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 |
                             (uint32_t)b[4 * i + 2] << 16 | (uint32_t)b[4 * i + 3] << 24;
                memcpy(&dst[done + i], &u, 4);
            }
        }
        done += n;
    }
    return RL_OK;
}

rl_status rl_npy_load(const char *path, rl_npy *out, rl_error *err)
{
    FILE *fp;
    size_t esize;
    rl_status st = open_header(path, out, &fp, &esize, 0, err);
    if (st)
        return st;
    uint64_t bytes = out->count * esize;
    void *raw = malloc(bytes ? bytes : 1);
    out->data = malloc(out->count ? out->count * sizeof(float) : sizeof(float));
    if (!raw || !out->data) {
        st = rl_fail(err, RL_ERR_NOMEM, "%s: out of host memory for %" PRIu64 " bytes", path, bytes);
    } else if (fread(raw, 1, bytes, fp) != bytes) {
        st = rl_fail(err, RL_ERR_PARSE, "%s: file ends early (truncated .npy)", path);
    } else {
        const unsigned char *b = raw;
        for (uint64_t i = 0; i < out->count; i++) {
            if (esize == 4) {
                uint32_t u = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 |
                             (uint32_t)b[4 * i + 2] << 16 | (uint32_t)b[4 * i + 3] << 24;
                memcpy(&out->data[i], &u, 4);
            } else {
                out->data[i] = rl_half_to_float((uint16_t)(b[2 * i] | b[2 * i + 1] << 8));
            }
        }
    }
    fclose(fp);
    free(raw);
    for (uint64_t i = 0; !st && i < out->count; i++)
        if (!isfinite(out->data[i])) {
            /* name the first bad element by its (row-major) index */
            uint64_t ix[RL_NPY_MAX_DIMS], r = i;
            for (uint32_t d = out->ndim; d-- > 0;) {
                ix[d] = r % out->shape[d];
                r /= out->shape[d];
            }
            char idx[160] = "";
            for (uint32_t d = 0, n = 0; d < out->ndim && n < sizeof idx; d++)
                n += (uint32_t)snprintf(idx + n, sizeof idx - n, "%s%llu", d ? ", " : "",
                                        (unsigned long long)ix[d]);
            st = rl_fail(err, RL_ERR_ARG,
                         "%s: element [%s] (flat index %llu) is %s; ropelab's inputs must be "
                         "finite", path, idx, (unsigned long long)i,
                         isnan(out->data[i]) ? "NaN" : "infinite");
        }
    if (st)
        rl_npy_free(out);
    return st;
}

rl_status rl_npy_load_u32(const char *path, uint32_t **out, uint64_t *count, rl_error *err)
{
    rl_npy a;
    FILE *fp;
    size_t esize;
    *out = NULL;
    *count = 0;
    rl_status st = open_header(path, &a, &fp, &esize, 1, err);
    if (st)
        return st;
    int is_signed = a.descr[1] == 'i';
    uint64_t bytes = a.count * esize;
    unsigned char *raw = malloc(bytes ? bytes : 1);
    uint32_t *v = malloc(a.count ? a.count * sizeof *v : sizeof *v);
    if (!raw || !v)
        st = rl_fail(err, RL_ERR_NOMEM, "%s: out of host memory for %" PRIu64 " bytes", path, bytes);
    else if (fread(raw, 1, bytes, fp) != bytes)
        st = rl_fail(err, RL_ERR_PARSE, "%s: file ends early (truncated .npy)", path);
    fclose(fp);
    for (uint64_t i = 0; !st && i < a.count; i++) {
        uint64_t u = 0;
        for (size_t b = 0; b < esize; b++)
            u |= (uint64_t)raw[i * esize + b] << (8 * b);
        int neg = is_signed && (u >> (8 * esize - 1)) & 1;
        if (neg || u > UINT32_MAX)
            st = rl_fail(err, RL_ERR_ARG, "%s: element %" PRIu64 " is %s; need integers in 0..%u",
                         path, i, neg ? "negative" : "above 2^32 - 1", UINT32_MAX);
        else
            v[i] = (uint32_t)u;
    }
    free(raw);
    if (st) {
        free(v);
        return st;
    }
    *out = v;
    *count = a.count;
    return RL_OK;
}

rl_status rl_npy_header_int(const char *path, rl_npy *out, rl_error *err)
{
    FILE *fp;
    size_t esize;
    rl_status st = open_header(path, out, &fp, &esize, 1, err);
    if (!st)
        fclose(fp);
    return st;
}

void rl_npy_free(rl_npy *a)
{
    free(a->data);
    memset(a, 0, sizeof *a);
}

rl_status rl_npy_save_raw(const char *path, const char *descr, int fortran_order,
                          const uint64_t *shape, uint32_t ndim, const void *data, size_t bytes,
                          rl_error *err)
{
    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': %s, 'shape': (", descr,
                     fortran_order ? "True" : "False");
    for (uint32_t i = 0; i < ndim; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%" PRIu64 "%s", shape[i],
                      ndim == 1 || i + 1 < ndim ? ", " : "");
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    /* Pad so that magic(6)+version(2)+len(2)+header is a multiple of 64. */
    size_t hlen = (size_t)n + 1;
    size_t pad = (64 - (10 + hlen) % 64) % 64;
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return rl_fail(err, RL_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    uint16_t total = (uint16_t)(hlen + pad);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(total & 0xff),
                             (unsigned char)(total >> 8)};
    int bad = fwrite(pre, 1, 10, fp) != 10 || fwrite(dict, 1, (size_t)n, fp) != (size_t)n;
    for (size_t i = 0; i < pad && !bad; i++)
        bad = fputc(' ', fp) == EOF;
    bad = bad || fputc('\n', fp) == EOF || (bytes && fwrite(data, 1, bytes, fp) != bytes);
    if (fclose(fp) != 0 || bad)
        return rl_fail(err, RL_ERR_IO, "%s: write failed", path);
    return RL_OK;
}
