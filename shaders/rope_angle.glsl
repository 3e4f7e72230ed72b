/* rope_angle.glsl — the one place where a RoPE kernel turns a position and a
 * rotary pair index into (cos, sin). Precision modes plug in here. */

/* fp32 mode: angle = fp32(pos) * fp32(inv_freq), builtin sin/cos. This is
 * what most frameworks do; its error grows with |angle| (see README). */
vec2 rope_cos_sin_fp32(uint32_t pos, float inv_freq)
{
    float a = float(pos) * inv_freq;
    return vec2(cos(a), sin(a));
}
