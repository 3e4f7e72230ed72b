/* rl_util.h — small utilities shared by every module (prefix rl_).
 * Portable seeded RNG, float helpers, byte-size formatting, atomic file
 * writes. No Vulkan, no encodings. */
#ifndef RL_UTIL_H
#define RL_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/rl_status.h"

#define RL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Portable, seeded generator (SplitMix64 to seed, xoshiro256** to draw): the
 * same seed gives the same numbers on every machine and compiler. */
typedef struct rl_rng {
    uint64_t s[4];
} rl_rng;

/* Seeds the generator from a 64-bit seed and a stream name, so independent
 * tensors ("q", "k") drawn under one seed do not share a sequence. */
void rl_rng_seed(rl_rng *rng, uint64_t seed, const char *stream);
uint64_t rl_rng_u64(rl_rng *rng);
/* Uniform in [0, 1) with 53 random bits. */
double rl_rng_uniform(rl_rng *rng);
/* Standard normal N(0, 1) (Box–Muller on two uniforms). */
double rl_rng_normal(rl_rng *rng);

/* FNV-1a 64-bit hash of a byte string. */
uint64_t rl_hash64(const void *data, size_t len, uint64_t h);

/* Formats a byte count as "512 MiB" into buf; returns buf. */
const char *rl_fmt_bytes(uint64_t bytes, char *buf, size_t cap);

/* Monotonic wall clock in seconds. */
double rl_now(void);

/* Distance in fp32 units in the last place between two finite floats (0 when
 * equal; counts representable floats between them, across zero too). */
uint64_t rl_ulp_diff(float a, float b);

/* fp32 unit in the last place of |x| (spacing above |x|; 2^-149 near zero). */
double rl_ulp32(double x);

/* IEEE binary16 bits -> float, exact (subnormals, signed zero, inf, NaN).
 * The one half -> float conversion: .npy, .safetensors and fp16 device
 * outputs all go through it. */
float rl_half_to_float(uint16_t h);

/* 95 % Wilson score interval of a proportion: hits successes in n trials
 * (n > 0) -> [*lo, *hi] within [0, 1] (Wilson 1927; z = 1.959964). Unlike
 * the normal approximation it stays inside [0, 1] and is not empty at 0 or n
 * hits. n = 0: both NaN. */
void rl_wilson95(double hits, double n, double *lo, double *hi);

/* in as printable text for a terminal: each control character (0x00-0x1f
 * but none kept, and 0x7f) as "\xNN", so a name or a header holding an
 * escape sequence is shown, never obeyed. Truncated to cap; returns buf
 * (in NULL: ""). */
const char *rl_clean(const char *in, char *buf, size_t cap);

/* One rule for every number ropelab reads from a command line or the
 * environment (option values, --shard I/N, SLURM_* variables): decimal
 * digits only, no leading zero (except "0" itself, or before a '.'), no
 * space, '+', hex, octal, inf or nan; a '-' only when allow_minus (options
 * whose range takes negative values); an exponent e[-]digits for reals.
 * 0 ok, -1 malformed, -2 too large for 64 bits (integers). */
int rl_parse_u64(const char *v, unsigned long long *out);
int rl_parse_f64(const char *v, int allow_minus, double *out);

/* Atomic output file: writes go to "<path>.tmp.<pid>" (created new, never
 * through a link), rl_atomic_commit fsyncs and renames it onto path,
 * rl_atomic_abort removes it. A crash never leaves a half-written file under
 * the final name. rl_atomic_open_below reaches path from root as rl_fs.h
 * does (no link below root followed; a link at path is refused, not
 * replaced); rl_atomic_open is for a file the user named, whose directory
 * is the user's choice. */
typedef struct rl_atomic_file {
    FILE *fp;
    char root[1024]; /* "" when opened by rl_atomic_open */
    char path[1024];
    char tmp[1100];
} rl_atomic_file;

rl_status rl_atomic_open(rl_atomic_file *af, const char *path, rl_error *err);
rl_status rl_atomic_open_below(rl_atomic_file *af, const char *root, const char *path,
                               rl_error *err);
rl_status rl_atomic_commit(rl_atomic_file *af, rl_error *err);
void rl_atomic_abort(rl_atomic_file *af);

#endif
