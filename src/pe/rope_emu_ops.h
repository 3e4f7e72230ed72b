/* rope_emu_ops.h — the float32 operations of a framework's frequency program
 * (transformers' _compute_*_parameters, vLLM's _compute_inv_freq), as PyTorch
 * performs them on a float32 tensor (the scaling files' emu_freqs use them;
 * not part of pe's public API). Measured on torch 1.13 CPU and checked by
 * tests/test_rope_frameworks.py against a transcription of each program:
 *   - a Python float meeting a float32 tensor (t + s, t * s, t / s, t > s)
 *     is rounded to float32 first, then one float32 operation;
 *   - `s / t` with s a Python number is `t.reciprocal() * s` (torch's
 *     Tensor.__rtruediv__): two roundings, not one division;
 *   - a 0-dim float32 tensor to a Python number's power goes through the
 *     kernel's scalar loop, std::pow(float, double): computed in double,
 *     rounded once (the vectorized loop would round the exponent first);
 *   - `base ** (torch.arange(0, dim, 2).float() / dim)`: the exponent
 *     fl(2j / dim), the power in float32. PyTorch's CPU kernel uses SLEEF's
 *     powf (1.0 ulp) on AVX2, CUDA its own powf; ropelab uses the C library's
 *     powf (correctly rounded on glibc): the one operation of the program
 *     that is the platform's, not the framework's (docs/rope.md,
 *     "Framework frequency programs", gives how often the two differ).
 * C11 float arithmetic with FLT_EVAL_METHOD 0 and no contraction (ISO mode)
 * rounds each operation to float32, as a tensor operation does. */
#ifndef ROPE_EMU_OPS_H
#define ROPE_EMU_OPS_H

#include <math.h>
#include <stdint.h>

/* base ** (arange(0, dim, 2).float() / dim), element j. */
static inline float rope_emu_pos_freq(double base, uint32_t j, uint32_t dim)
{
    return powf((float)base, (float)(2 * j) / (float)dim);
}

/* s / t for a Python number s and a float32 element t: t.reciprocal() * s. */
static inline float rope_emu_rdiv(double s, float t)
{
    return (1.0f / t) * (float)s;
}

/* The default program: 1.0 / (base ** (arange(0, dim, 2).float() / dim)). */
static inline void rope_emu_default_inv(double base, uint32_t dim, uint32_t np, float *inv)
{
    for (uint32_t j = 0; j < np; j++)
        inv[j] = rope_emu_rdiv(1.0, rope_emu_pos_freq(base, j, dim));
}

#endif
