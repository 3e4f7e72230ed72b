#include "core/rl_util.h"

#include "core/rl_fs.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

float rl_half_to_float(uint16_t h)
{
    uint32_t s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (e == 0)
        v = ldexpf((float)m, -24);                /* subnormal: m * 2^-24 */
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexpf((float)(m | 1024), (int)e - 25); /* 1.m * 2^(e-15) */
    return s ? -v : v;
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t rl_hash64(const void *data, size_t len, uint64_t h)
{
    const unsigned char *p = data;
    if (h == 0)
        h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

void rl_rng_seed(rl_rng *rng, uint64_t seed, const char *stream)
{
    uint64_t x = seed ^ rl_hash64(stream ? stream : "", stream ? strlen(stream) : 0, 0);
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rl_rng_u64(rl_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double rl_rng_uniform(rl_rng *rng)
{
    return (double)(rl_rng_u64(rng) >> 11) * 0x1.0p-53;
}

double rl_rng_normal(rl_rng *rng)
{
    double u1 = rl_rng_uniform(rng);
    double u2 = rl_rng_uniform(rng);
    if (u1 < 0x1.0p-60)
        u1 = 0x1.0p-60;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}

const char *rl_fmt_bytes(uint64_t bytes, char *buf, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < RL_ARRAY_LEN(units)) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, cap, "%.4g %s", v, units[u]);
    return buf;
}

double rl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int64_t ordered_bits(float f)
{
    int32_t i;
    memcpy(&i, &f, sizeof i);
    /* Map the sign-magnitude float order onto a monotone integer line. */
    return i < 0 ? (int64_t)INT32_MIN - (int64_t)i : (int64_t)i;
}

uint64_t rl_ulp_diff(float a, float b)
{
    int64_t ia = ordered_bits(a), ib = ordered_bits(b);
    return (uint64_t)(ia > ib ? ia - ib : ib - ia);
}

double rl_ulp32(double x)
{
    x = fabs(x);
    if (x < 0x1.0p-126)
        return 0x1.0p-149;
    int e;
    frexp(x, &e); /* x = m * 2^e, m in [0.5, 1) */
    return ldexp(1.0, e - 24);
}

/* The user-named file's directory, as a root for rl_fs_*: "dir" of
 * "dir/name", "." of "name" (then tmp and path get a "./" prefix). */
static rl_status atomic_setup(rl_atomic_file *af, const char *root, const char *path,
                              rl_error *err)
{
    memset(af, 0, sizeof *af);
    const char *slash = strrchr(path, '/');
    int bare = !root && !slash;
    if (strlen(path) + 2 >= sizeof af->path || (root && strlen(root) >= sizeof af->root))
        return rl_fail(err, RL_ERR_ARG, "%s: path too long (limit %zu bytes)", path,
                       sizeof af->path - 3);
    if (root)
        snprintf(af->root, sizeof af->root, "%s", root);
    else if (bare)
        snprintf(af->root, sizeof af->root, ".");
    else
        snprintf(af->root, sizeof af->root, "%.*s", slash == path ? 1 : (int)(slash - path),
                 path);
    snprintf(af->path, sizeof af->path, "%s%s", bare ? "./" : "", path);
    snprintf(af->tmp, sizeof af->tmp, "%s.tmp.%ld", af->path, (long)getpid());
    return RL_OK;
}

static rl_status atomic_create(rl_atomic_file *af, rl_error *err)
{
    rl_fs_remove(af->root, af->tmp, NULL); /* a stale one of a reused pid */
    af->fp = rl_fs_fopen(af->root, af->tmp, "x", err);
    return af->fp ? RL_OK : err ? err->status : RL_ERR_IO;
}

rl_status rl_atomic_open(rl_atomic_file *af, const char *path, rl_error *err)
{
    rl_status st = atomic_setup(af, NULL, path, err);
    return st ? st : atomic_create(af, err);
}

rl_status rl_atomic_open_below(rl_atomic_file *af, const char *root, const char *path,
                               rl_error *err)
{
    rl_status st = atomic_setup(af, root, path, err);
    return st ? st : atomic_create(af, err);
}

rl_status rl_atomic_commit(rl_atomic_file *af, rl_error *err)
{
    int bad = ferror(af->fp);
    if (fflush(af->fp) != 0)
        bad = 1;
    if (!bad && fsync(fileno(af->fp)) != 0)
        bad = 1;
    if (fclose(af->fp) != 0)
        bad = 1;
    af->fp = NULL;
    if (bad) {
        int e = errno;
        rl_fs_remove(af->root, af->tmp, NULL);
        return rl_fail(err, RL_ERR_IO, "%s: write failed: %s", af->path, strerror(e));
    }
    rl_status st = rl_fs_rename(af->root, af->tmp, af->path, err);
    if (st)
        rl_fs_remove(af->root, af->tmp, NULL);
    return st;
}

void rl_atomic_abort(rl_atomic_file *af)
{
    if (af->fp) {
        fclose(af->fp);
        af->fp = NULL;
        rl_fs_remove(af->root, af->tmp, NULL);
    }
}

void rl_wilson95(double hits, double n, double *lo, double *hi)
{
    if (!(n > 0)) {
        *lo = *hi = NAN;
        return;
    }
    const double z = 1.959963984540054, z2 = z * z;
    double p = hits / n, den = 1 + z2 / n;
    double mid = (p + z2 / (2 * n)) / den;
    double half = z * sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / den;
    *lo = fmax(0.0, mid - half);
    *hi = fmin(1.0, mid + half);
}

int rl_parse_u64(const char *v, unsigned long long *out)
{
    if (!v || !*v || (v[0] == '0' && v[1]))
        return -1;
    unsigned long long x = 0;
    for (const char *c = v; *c; c++) {
        if (*c < '0' || *c > '9')
            return -1;
        unsigned d = (unsigned)(*c - '0');
        if (x > (ULLONG_MAX - d) / 10)
            return -2;
        x = x * 10 + d;
    }
    *out = x;
    return 0;
}

int rl_parse_f64(const char *v, int allow_minus, double *out)
{
    if (!v)
        return -1;
    const char *c = v;
    if (*c == '-' && allow_minus)
        c++;
    const char *int_start = c;
    size_t digits = 0, int_digits = 0;
    for (; *c >= '0' && *c <= '9'; c++)
        digits++, int_digits++;
    if (int_digits > 1 && *int_start == '0')
        return -1; /* a leading zero: "07" */
    if (*c == '.')
        for (c++; *c >= '0' && *c <= '9'; c++)
            digits++;
    if (!digits)
        return -1;
    if (*c == 'e' || *c == 'E') {
        c++;
        if (*c == '-')
            c++;
        if (*c < '0' || *c > '9')
            return -1;
        while (*c >= '0' && *c <= '9')
            c++;
    }
    if (*c)
        return -1;
    errno = 0;
    char *end = NULL;
    double x = strtod(v, &end);
    if (errno || *end || !isfinite(x))
        return -1;
    *out = x;
    return 0;
}

const char *rl_clean(const char *in, char *buf, size_t cap)
{
    size_t n = 0;
    if (!cap)
        return buf;
    for (const unsigned char *c = (const unsigned char *)(in ? in : ""); *c && n + 1 < cap; c++) {
        if (*c < 0x20 || *c == 0x7f) {
            if (n + 5 > cap)
                break;
            n += (size_t)snprintf(buf + n, cap - n, "\\x%02x", *c);
        } else {
            buf[n++] = (char)*c;
        }
    }
    buf[n] = '\0';
    return buf;
}
