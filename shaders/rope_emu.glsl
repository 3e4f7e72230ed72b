/* rope_emu.glsl — the framework emulation modes (RL_ROPE_PREC_HF ..
 * _CUDA_FAST): each framework's angle construction and dtype roundings, as
 * fp32 operations that `precise` keeps from being fused or re-associated, so
 * that they match the CPU emulation (src/pe/rope_emu.c) bit for bit. Only
 * cos/sin (ggml modes; hf and vllm with trig: device) and pow (ggml-vulkan)
 * are the device's builtins; hf and vllm take SLEEF's (rl_sleef.glsl).
 * fac is the mode's per-pair fp32 factor (rope_emu_factors): inv_freq (hf,
 * vllm), theta_scale (ggml-cpu, ggml-vulkan) or powf(theta_scale, j)
 * (cuda-fast). Needs PRECISION, DTYPE, EMU_FLAGS. */

float rope_emu_angle(uint32_t p, uint32_t j, float fac)
{
    precise float pf = float(p);
    if (PRECISION == RL_ROPE_PREC_HF || PRECISION == RL_ROPE_PREC_VLLM) {
        float fr = fac;
        if ((EMU_FLAGS & RL_ROPE_EMU_TF32) != 0u) {
            fr = rl_round_dt(fr, RL_DTYPE_TF32);
            pf = rl_round_dt(pf, RL_DTYPE_TF32);
        }
        precise float a = fr * pf;
        return a;
    }
    if (PRECISION == RL_ROPE_PREC_GGML_CPU) {
        precise float th = pf;
        for (uint32_t k = 0u; k < j; k++)
            th = th * fac;
        return th;
    }
    if (PRECISION == RL_ROPE_PREC_GGML_VULKAN) {
        precise float a = pf * pow(fac, float(j));
        return a;
    }
    precise float a = pf * fac; /* cuda-fast */
    return a;
}

/* ggml's rope_yarn angle (ggml-cpu ops.cpp, ggml-vulkan rope_funcs.glsl):
 * theta_interp = freq_scale * theta_extrap, then
 * theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix; ramp_mix (0 for
 * linear, whose result is then theta_interp exactly) from the host. */
float rope_emu_yarn(float te, float fs, float rm)
{
    precise float ti = fs * te;
    precise float t = ti * (1.0 - rm) + te * rm;
    return t;
}

/* (y_a, y_b) of the pair (xa, xb) rotated by ang in the mode's arithmetic. */
vec2 rope_emu_rotate(float xa, float xb, float ang, float af)
{
    /* hf, vllm: PyTorch's CPU cos/sin (SLEEF, rl_sleef.glsl) unless trig: device */
    const bool sl = (EMU_FLAGS & RL_ROPE_EMU_SLEEF) != 0u;
    precise float c32 = (sl ? rl_sleef_cosf(ang) : cos(ang)) * af;
    precise float s32 = (sl ? rl_sleef_sinf(ang) : sin(ang)) * af;
    precise float a = rl_round_dt(xa, DTYPE), b = rl_round_dt(xb, DTYPE);
    if (PRECISION == RL_ROPE_PREC_HF || PRECISION == RL_ROPE_PREC_VLLM) {
        /* PyTorch eager: cos/sin cast to the dtype, every op rounded to it. */
        precise float c = rl_round_dt(c32, DTYPE), s = rl_round_dt(s32, DTYPE);
        precise float ac = rl_round_dt(a * c, DTYPE), bs = rl_round_dt(b * s, DTYPE);
        precise float bc = rl_round_dt(b * c, DTYPE), as_ = rl_round_dt(a * s, DTYPE);
        precise float ya = ac - bs, yb = bc + as_;
        return vec2(rl_round_dt(ya, DTYPE), rl_round_dt(yb, DTYPE));
    }
    /* ggml: fp32 arithmetic on the widened inputs, one rounding at the store. */
    precise float ac = a * c32, bs = b * s32, as_ = a * s32, bc = b * c32;
    precise float ya = ac - bs, yb = as_ + bc;
    return vec2(rl_round_dt(ya, DTYPE), rl_round_dt(yb, DTYPE));
}
