/* rope_sleef.h — PyTorch's CPU cos/sin in fp32, for the hf and vllm
 * emulation modes (trig: sleef, the default). */
#ifndef RL_ROPE_SLEEF_H
#define RL_ROPE_SLEEF_H

/* cosf and sinf as SLEEF 3.5.1's xcosf_u1 / xsinf_u1 compute them in an FMA
 * build (libsleef's Sleef_cosf8_u10avx2, Sleef_cosf16_u10avx512f and the
 * scalar Sleef_cosf1_u10purecfma, which PyTorch's Vectorized<float>::cos /
 * sin call on x86 CPUs with AVX2): the same fp32 operations, FMAs and
 * order, each argument on its own path (|x| < 125: Cody-Waite; else the
 * Payne-Hanek reduction rempif with shaders/rl_rempitab.h). Bit-exact with
 * libsleef's scalar FMA build for every float (tests/test_rope_sleef.c).
 * A vector lane differs only when another lane of its 8 (16) forces the
 * whole vector onto the large-argument path, and torch's scalar tails call
 * glibc (docs/rope.md "Framework emulation"). */
float rope_sleef_cosf(float x);
/* The reduction table (shaders/rl_rempitab.h), RL_REMPITAB_N floats, for the
 * device (rope_gpu.c uploads it after the factors). */
void rope_sleef_table(float *out);
float rope_sleef_sinf(float x);

#endif
