/* Device side of the dtype roundings used by the emulation modes, run alone
 * (shaders/round.comp) so tests can compare them with rope_emu_round. */
#include <string.h>

#include "pe/rope.h"
#include "round.spv.h"

_Static_assert(sizeof(struct rl_round_push) == 8, "rl_round_push layout");

rl_status rope_emu_gpu_round(rlvk_device *dev, int dtype, const uint32_t *in, uint32_t n,
                             uint32_t *out, rl_error *err)
{
    if (dtype != RL_DTYPE_BF16 && dtype != RL_DTYPE_FP16 && dtype != RL_DTYPE_TF32)
        return rl_fail(err, RL_ERR_ARG, "round: dtype %d is not bf16, fp16 or tf32", dtype);
    uint32_t spec[1] = {(uint32_t)dtype};
    rlvk_pipeline_desc pd = {
        .name = "round",
        .spirv = rl_spv_round,
        .spirv_bytes = sizeof rl_spv_round,
        .n_bindings = 2,
        .push_bytes = sizeof(struct rl_round_push),
        .local_size_x = 64,
        .n_spec = 1,
        .spec = spec,
    };
    rlvk_pipeline pipe = {0};
    rlvk_buffer bi = {0}, bo = {0};
    rlvk_cmd cmd = {0};
    uint64_t bytes = (uint64_t)(n ? n : 1) * 4;
    rl_status st;
    if ((st = rlvk_pipeline_create(dev, &pd, &pipe, err)) ||
        (st = rlvk_buffer_create(dev, bytes, "round in", &bi, err)) ||
        (st = rlvk_buffer_create(dev, bytes, "round out", &bo, err)) ||
        (st = rlvk_buffer_upload(dev, &bi, 0, in, (uint64_t)n * 4, err)) ||
        (st = rlvk_cmd_begin(dev, 1, &cmd, err)))
        goto done;
    struct rl_round_push p = {.group_base = 0, .n = n};
    const rlvk_buffer *bufs[2] = {&bi, &bo};
    if ((st = rlvk_cmd_dispatch(&cmd, &pipe, bufs, &p, rlvk_groups(n, 64), err)) ||
        (st = rlvk_cmd_submit_wait(&cmd, err)) ||
        (st = rlvk_buffer_download(dev, &bo, 0, out, (uint64_t)n * 4, err)))
        goto done;
done:
    rlvk_cmd_destroy(&cmd);
    rlvk_buffer_destroy(dev, &bo);
    rlvk_buffer_destroy(dev, &bi);
    rlvk_pipeline_destroy(dev, &pipe);
    return st;
}
