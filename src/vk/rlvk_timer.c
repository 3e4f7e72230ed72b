/* Command recording, split dispatch, submission and timestamps. */
#include "vk/rlvk.h"

#include "core/rl_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A single wait is bounded: a kernel that runs this long has hung (or a
 * desktop driver's watchdog would have killed it). */
#define RLVK_WAIT_NS (600ull * 1000000000ull)

rl_status rlvk_cmd_begin(rlvk_device *dev, uint32_t max_dispatches, rlvk_cmd *cmd, rl_error *err)
{
    memset(cmd, 0, sizeof *cmd);
    cmd->dev = dev;
    VkResult r;
    if (max_dispatches) {
        VkDescriptorPoolSize ps[2] = {
            {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
             .descriptorCount = max_dispatches * RLVK_MAX_BINDINGS},
            {.type = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
             .descriptorCount = max_dispatches * RLVK_MAX_TEXEL},
        };
        VkDescriptorPoolCreateInfo dpi = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
            .maxSets = max_dispatches,
            .poolSizeCount = 2,
            .pPoolSizes = ps,
        };
        r = dev->vk.vkCreateDescriptorPool(dev->device, &dpi, NULL, &cmd->pool);
        if (r != VK_SUCCESS) {
            cmd->pool = VK_NULL_HANDLE;
            return rlvk_fail(err, r, "creating a descriptor pool");
        }
        cmd->sets_cap = max_dispatches;
    }
    VkCommandBufferAllocateInfo cai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = dev->command_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    r = dev->vk.vkAllocateCommandBuffers(dev->device, &cai, &cmd->cb);
    if (r != VK_SUCCESS) {
        cmd->cb = VK_NULL_HANDLE;
        rlvk_cmd_destroy(cmd);
        return rlvk_fail(err, r, "allocating a command buffer");
    }
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    r = dev->vk.vkCreateFence(dev->device, &fci, NULL, &cmd->fence);
    if (r != VK_SUCCESS) {
        cmd->fence = VK_NULL_HANDLE;
        rlvk_cmd_destroy(cmd);
        return rlvk_fail(err, r, "creating a fence");
    }
    VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    r = dev->vk.vkBeginCommandBuffer(cmd->cb, &bi);
    if (r != VK_SUCCESS) {
        rlvk_cmd_destroy(cmd);
        return rlvk_fail(err, r, "beginning a command buffer");
    }
    if (dev->query_pool)
        dev->vk.vkCmdResetQueryPool(cmd->cb, dev->query_pool, 0, RLVK_MAX_TIMESTAMPS);
    return RL_OK;
}

/* Makes writes of `stage` visible to later compute dispatches and copies. */
static void barrier_after(rlvk_cmd *cmd, VkPipelineStageFlags stage, VkAccessFlags access)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = access,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT,
    };
    cmd->dev->vk.vkCmdPipelineBarrier(cmd->cb, stage,
                                      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                                          VK_PIPELINE_STAGE_TRANSFER_BIT,
                                      0, 1, &mb, 0, NULL, 0, NULL);
}

/* The view of buf as texels of format, made on first use in this command
 * (from its start, a window's offset, as many whole texels as it and
 * maxTexelBufferElements allow). */
static rl_status texel_view(rlvk_cmd *cmd, const rlvk_buffer *buf, VkFormat format,
                            VkBufferView *out, rl_error *err)
{
    rlvk_device *dev = cmd->dev;
    uint64_t tb = rlvk_texel_bytes(format), count = tb ? buf->size / tb : 0;
    if (count > dev->info.max_texel_elements)
        count = dev->info.max_texel_elements;
    /* one view per (buffer, format, window): a window and the whole buffer
     * (or two windows at one offset) are different views */
    for (uint32_t i = 0; i < cmd->n_views; i++)
        if (cmd->views[i].buffer == buf->buffer && cmd->views[i].format == format &&
            cmd->views[i].offset == buf->offset && cmd->views[i].bytes == count * tb) {
            *out = cmd->views[i].view;
            return RL_OK;
        }
    if (!count)
        return rl_fail(err, RL_ERR_ARG, "buffer %s (%llu B) holds no whole %llu-byte texel",
                       buf->name, (unsigned long long)buf->size, (unsigned long long)tb);
    if (cmd->n_views == cmd->cap_views) {
        uint32_t cap = cmd->cap_views ? 2 * cmd->cap_views : 8;
        rlvk_cmd_view *v = realloc(cmd->views, cap * sizeof *v);
        if (!v)
            return rl_fail(err, RL_ERR_NOMEM, "out of host memory for texel buffer views");
        cmd->views = v;
        cmd->cap_views = cap;
    }
    VkBufferViewCreateInfo vi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
        .buffer = buf->buffer,
        .format = format,
        .offset = buf->offset, /* a window's start (rlvk_buffer_window: aligned) */
        .range = count * tb,
    };
    VkResult r = dev->vk.vkCreateBufferView(dev->device, &vi, NULL, out);
    if (r != VK_SUCCESS)
        return rlvk_fail(err, r, "creating a texel buffer view of %s", buf->name);
    cmd->views[cmd->n_views++] = (rlvk_cmd_view){.view = *out, .buffer = buf->buffer,
                                                 .format = format, .offset = buf->offset,
                                                 .bytes = count * tb};
    return RL_OK;
}

rl_status rlvk_cmd_dispatch(rlvk_cmd *cmd, const rlvk_pipeline *pipe,
                            const rlvk_buffer *const *bufs, const void *push,
                            uint64_t n_groups, rl_error *err)
{
    rlvk_device *dev = cmd->dev;
    if (cmd->sets_used >= cmd->sets_cap)
        return rl_fail(err, RL_ERR_ARG, "command for %s: more dispatches than reserved (%u)",
                       pipe->name, cmd->sets_cap);
    if (n_groups > UINT32_MAX)
        return rl_fail(err, RL_ERR_LIMIT, "%s: %llu workgroups exceed the 32-bit group index",
                       pipe->name, (unsigned long long)n_groups);
    VkDescriptorSetAllocateInfo sai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = cmd->pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &pipe->set_layout,
    };
    VkDescriptorSet set;
    VkBufferView views[RLVK_MAX_TEXEL];
    for (uint32_t t = 0; t < pipe->n_texel; t++) {
        rl_status st = texel_view(cmd, bufs[pipe->texel[t].source], pipe->texel[t].format,
                                  &views[t], err);
        if (st)
            return st;
    }
    VkResult r = dev->vk.vkAllocateDescriptorSets(dev->device, &sai, &set);
    if (r != VK_SUCCESS)
        return rlvk_fail(err, r, "allocating a descriptor set for %s", pipe->name);
    cmd->sets_used++;
    VkDescriptorBufferInfo infos[RLVK_MAX_BINDINGS];
    VkWriteDescriptorSet writes[RLVK_MAX_BINDINGS + RLVK_MAX_TEXEL];
    for (uint32_t i = 0; i < pipe->n_bindings; i++) {
        /* a window binds its range; a whole buffer must fit one binding */
        if (!bufs[i]->window && bufs[i]->size > dev->info.max_storage_buffer_range)
            return rl_fail(err, RL_ERR_LIMIT, "%s: binding %u (%s, %llu bytes) is over %s's "
                           "maxStorageBufferRange (%llu bytes); bind it through windows",
                           pipe->name, i, bufs[i]->name, (unsigned long long)bufs[i]->size,
                           dev->info.name,
                           (unsigned long long)dev->info.max_storage_buffer_range);
        infos[i] = (VkDescriptorBufferInfo){.buffer = bufs[i]->buffer, .offset = bufs[i]->offset,
                                            .range = bufs[i]->window ? bufs[i]->size
                                                                     : VK_WHOLE_SIZE};
        writes[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = set,
            .dstBinding = i,
            .descriptorCount = 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = &infos[i],
        };
    }
    for (uint32_t t = 0; t < pipe->n_texel; t++)
        writes[pipe->n_bindings + t] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = set,
            .dstBinding = pipe->texel[t].binding,
            .descriptorCount = 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
            .pTexelBufferView = &views[t],
        };
    dev->vk.vkUpdateDescriptorSets(dev->device, pipe->n_bindings + pipe->n_texel, writes, 0, NULL);
    dev->vk.vkCmdBindPipeline(cmd->cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe->pipeline);
    dev->vk.vkCmdBindDescriptorSets(cmd->cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe->layout, 0, 1,
                                    &set, 0, NULL);
    if (pipe->push_bytes)
        dev->vk.vkCmdPushConstants(cmd->cb, pipe->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                   pipe->push_bytes, push);
    uint64_t max_x = dev->info.max_workgroup_count[0];
    for (uint64_t base = 0; base < n_groups; base += max_x) {
        uint64_t count = n_groups - base < max_x ? n_groups - base : max_x;
        if (base > 0) {
            uint32_t b32 = (uint32_t)base; /* push word 0 = group_base */
            dev->vk.vkCmdPushConstants(cmd->cb, pipe->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &b32);
        }
        dev->vk.vkCmdDispatch(cmd->cb, (uint32_t)count, 1, 1);
    }
    if (n_groups > max_x && pipe->push_bytes) {
        /* Leave the caller's push block as given for a later reuse. */
        dev->vk.vkCmdPushConstants(cmd->cb, pipe->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, push);
    }
    barrier_after(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT);
    return RL_OK;
}

void rlvk_cmd_fill(rlvk_cmd *cmd, const rlvk_buffer *buf, uint64_t offset, uint64_t bytes,
                   uint32_t word)
{
    cmd->dev->vk.vkCmdFillBuffer(cmd->cb, buf->buffer, offset, bytes ? bytes : VK_WHOLE_SIZE,
                                 word);
    barrier_after(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
}

void rlvk_cmd_timestamp(rlvk_cmd *cmd, uint32_t slot)
{
    if (!cmd->dev->query_pool || slot >= RLVK_MAX_TIMESTAMPS)
        return;
    cmd->dev->vk.vkCmdWriteTimestamp(cmd->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                                     cmd->dev->query_pool, slot);
    if (slot + 1 > cmd->n_timestamps)
        cmd->n_timestamps = slot + 1;
    cmd->written |= 1ull << slot;
}

/* dev->gpu_s += the span of the slots cmd wrote: the latest minus the
 * earliest timestamp (slots need not be written in the order of their
 * numbers). Needs two slots; a span past half the valid range (a wrap, or
 * garbage) is not counted. */
static void count_gpu_time(rlvk_cmd *cmd)
{
    rlvk_device *dev = cmd->dev;
    if (!dev->query_pool || (cmd->written & (cmd->written - 1)) == 0)
        return;
    uint32_t bits = dev->info.timestamp_valid_bits;
    uint64_t mask = bits >= 64 ? ~0ull : ((1ull << bits) - 1ull);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t s = 0; s < cmd->n_timestamps; s++) {
        uint64_t t;
        if (!(cmd->written >> s & 1) ||
            dev->vk.vkGetQueryPoolResults(dev->device, dev->query_pool, s, 1, sizeof t, &t,
                                          sizeof t,
                                          VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) !=
                VK_SUCCESS)
            continue;
        t &= mask;
        lo = t < lo ? t : lo;
        hi = t > hi ? t : hi;
    }
    if (hi > lo && hi - lo <= mask / 2)
        dev->gpu_s += (double)(hi - lo) * dev->info.timestamp_period_ns * 1e-9;
}

rl_status rlvk_cmd_submit_wait(rlvk_cmd *cmd, rl_error *err)
{
    rlvk_device *dev = cmd->dev;
    VkResult r = dev->vk.vkEndCommandBuffer(cmd->cb);
    if (r != VK_SUCCESS)
        return rlvk_fail(err, r, "ending a command buffer");
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &cmd->cb,
    };
    double t0 = rl_now();
    r = dev->vk.vkQueueSubmit(dev->queue, 1, &si, cmd->fence);
    if (r != VK_SUCCESS)
        return rlvk_fail(err, r, "submitting work to %s", dev->info.name);
    r = dev->vk.vkWaitForFences(dev->device, 1, &cmd->fence, VK_TRUE, RLVK_WAIT_NS);
    dev->submit_s += rl_now() - t0;
    dev->n_submits++;
    if (r != VK_SUCCESS) {
        /* Do not free resources the device may still use. */
        dev->vk.vkDeviceWaitIdle(dev->device);
        return rlvk_fail(err, r, "waiting for %s", dev->info.name);
    }
    count_gpu_time(cmd);
    return RL_OK;
}

rl_status rlvk_cmd_elapsed_ns(const rlvk_cmd *cmd, uint32_t a, uint32_t b, double *ns,
                              rl_error *err)
{
    rlvk_device *dev = cmd->dev;
    if (!dev->query_pool)
        return rl_fail(err, RL_ERR_UNSUPPORTED, "%s has no timestamp queries on its compute queue",
                       dev->info.name);
    if (a >= cmd->n_timestamps || b >= cmd->n_timestamps)
        return rl_fail(err, RL_ERR_ARG, "timestamp slot not written");
    uint64_t t[2];
    VkResult r = dev->vk.vkGetQueryPoolResults(dev->device, dev->query_pool, a, 1, sizeof t[0], &t[0],
                                               sizeof t[0], VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r == VK_SUCCESS)
        r = dev->vk.vkGetQueryPoolResults(dev->device, dev->query_pool, b, 1, sizeof t[1], &t[1],
                                          sizeof t[1], VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS)
        return rlvk_fail(err, r, "reading timestamps");
    uint32_t bits = dev->info.timestamp_valid_bits;
    uint64_t mask = bits >= 64 ? ~0ull : ((1ull << bits) - 1ull);
    uint64_t d = ((t[1] & mask) - (t[0] & mask)) & mask; /* wraps correctly */
    *ns = (double)d * dev->info.timestamp_period_ns;
    return RL_OK;
}

void rlvk_cmd_destroy(rlvk_cmd *cmd)
{
    rlvk_device *dev = cmd->dev;
    if (!dev)
        return;
    if (cmd->fence)
        dev->vk.vkDestroyFence(dev->device, cmd->fence, NULL);
    if (cmd->cb)
        dev->vk.vkFreeCommandBuffers(dev->device, dev->command_pool, 1, &cmd->cb);
    if (cmd->pool)
        dev->vk.vkDestroyDescriptorPool(dev->device, cmd->pool, NULL);
    for (uint32_t i = 0; i < cmd->n_views; i++)
        dev->vk.vkDestroyBufferView(dev->device, cmd->views[i].view, NULL);
    free(cmd->views);
    memset(cmd, 0, sizeof *cmd);
}
