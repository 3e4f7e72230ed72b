/* Guarded outputs: sentinel words after the tensor, checked after the run
 * (the one implementation used by rope, pe vector transforms, bias
 * evaluation and attention). */
#include <string.h>

#include "verify/vf.h"

static rl_status guarded(rlvk_device *dev, uint64_t bytes, const char *name, int large,
                         rlvk_buffer *buf, rl_error *err)
{
    uint32_t g[VF_GUARD_WORDS];
    for (uint32_t i = 0; i < VF_GUARD_WORDS; i++)
        g[i] = VF_GUARD_BITS;
    rl_status st;
    if ((st = large ? rlvk_buffer_create_large(dev, bytes + VF_GUARD_BYTES, name, buf, err)
                    : rlvk_buffer_create(dev, bytes + VF_GUARD_BYTES, name, buf, err)) ||
        (st = rlvk_buffer_upload(dev, buf, bytes, g, VF_GUARD_BYTES, err)))
        return st;
    return RL_OK;
}

rl_status vf_guarded_create(rlvk_device *dev, uint64_t bytes, const char *name, rlvk_buffer *buf,
                            rl_error *err)
{
    return guarded(dev, bytes, name, 0, buf, err);
}

rl_status vf_guarded_create_large(rlvk_device *dev, uint64_t bytes, const char *name,
                                  rlvk_buffer *buf, rl_error *err)
{
    return guarded(dev, bytes, name, 1, buf, err);
}

rl_status vf_guard_check(rlvk_device *dev, const rlvk_buffer *buf, uint64_t bytes, int *guard_ok,
                         rl_error *err)
{
    uint32_t g[VF_GUARD_WORDS];
    rl_status st = rlvk_buffer_download(dev, buf, bytes, g, VF_GUARD_BYTES, err);
    if (st)
        return st;
    int ok = 1;
    for (uint32_t i = 0; i < VF_GUARD_WORDS; i++)
        ok = ok && g[i] == VF_GUARD_BITS;
    *guard_ok = ok;
    return RL_OK;
}

rl_status vf_guarded_download(rlvk_device *dev, const rlvk_buffer *buf, uint64_t bytes,
                              void *host, int *guard_ok, rl_error *err)
{
    rl_status st = rlvk_buffer_download(dev, buf, 0, host, bytes, err);
    if (st || !guard_ok)
        return st;
    return vf_guard_check(dev, buf, bytes, guard_ok, err);
}
