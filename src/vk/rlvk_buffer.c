/* Storage buffers: device-local, mapped when the memory is host-visible,
 * otherwise filled and read through a temporary staging buffer. */
#include "vk/rlvk.h"

#include <stdio.h>
#include <string.h>

#include "core/rl_util.h"

static int find_memory_type(const rlvk_device *dev, uint32_t bits, VkMemoryPropertyFlags want)
{
    for (uint32_t i = 0; i < dev->memory.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (dev->memory.memoryTypes[i].propertyFlags & want) == want)
            return (int)i;
    return -1;
}

/* Creates buffer + memory with the first type among `prefs` that fits. */
static rl_status create_raw(rlvk_device *dev, uint64_t size, VkBufferUsageFlags usage,
                            const VkMemoryPropertyFlags *prefs, int n_prefs, const char *name,
                            rlvk_buffer *buf, rl_error *err)
{
    memset(buf, 0, sizeof *buf);
    snprintf(buf->name, sizeof buf->name, "%s", name ? name : "buffer");
    buf->size = size;
    VkBufferCreateInfo bci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size ? size : 4,
        .usage = usage,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    char b[32];
    VkResult r = dev->vk.vkCreateBuffer(dev->device, &bci, NULL, &buf->buffer);
    if (r != VK_SUCCESS) {
        buf->buffer = VK_NULL_HANDLE;
        return rlvk_fail(err, r, "creating a %s buffer for %s on %s",
                         rl_fmt_bytes(size, b, sizeof b), buf->name, dev->info.name);
    }
    VkMemoryRequirements req;
    dev->vk.vkGetBufferMemoryRequirements(dev->device, buf->buffer, &req);
    int type = -1;
    for (int i = 0; i < n_prefs && type < 0; i++)
        type = find_memory_type(dev, req.memoryTypeBits, prefs[i]);
    if (type < 0) {
        rlvk_buffer_destroy(dev, buf);
        return rl_fail(err, RL_ERR_UNSUPPORTED, "%s: no suitable memory type for %s",
                       dev->info.name, name);
    }
    VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = (uint32_t)type,
    };
    r = dev->vk.vkAllocateMemory(dev->device, &ai, NULL, &buf->memory);
    if (r != VK_SUCCESS) {
        buf->memory = VK_NULL_HANDLE;
        rlvk_buffer_destroy(dev, buf);
        return rlvk_fail(err, r, "allocating %s for %s on %s", rl_fmt_bytes(req.size, b, sizeof b),
                         name, dev->info.name);
    }
    r = dev->vk.vkBindBufferMemory(dev->device, buf->buffer, buf->memory, 0);
    if (r != VK_SUCCESS) {
        rlvk_buffer_destroy(dev, buf);
        return rlvk_fail(err, r, "binding memory for %s", name);
    }
    if (dev->memory.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
        r = dev->vk.vkMapMemory(dev->device, buf->memory, 0, VK_WHOLE_SIZE, 0, &buf->mapped);
        if (r != VK_SUCCESS) {
            buf->mapped = NULL;
            rlvk_buffer_destroy(dev, buf);
            return rlvk_fail(err, r, "mapping %s", name);
        }
    }
    return RL_OK;
}

static rl_status create_storage(rlvk_device *dev, uint64_t size, const char *name,
                                rlvk_buffer *buf, rl_error *err);

rl_status rlvk_buffer_create(rlvk_device *dev, uint64_t size, const char *name,
                             rlvk_buffer *buf, rl_error *err)
{
    rl_status st = rlvk_check_buffer_size(dev, size, name, err);
    return st ? st : create_storage(dev, size, name, buf, err);
}

rl_status rlvk_buffer_create_large(rlvk_device *dev, uint64_t size, const char *name,
                                   rlvk_buffer *buf, rl_error *err)
{
    rl_status st = rlvk_check_alloc_size(dev, size, name, err);
    return st ? st : create_storage(dev, size, name, buf, err);
}

rl_status rlvk_buffer_window(const rlvk_device *dev, const rlvk_buffer *b, uint64_t offset,
                             uint64_t bytes, rlvk_buffer *out, rl_error *err)
{
    uint64_t a = dev->info.min_storage_offset > dev->info.min_texel_offset
                     ? dev->info.min_storage_offset
                     : dev->info.min_texel_offset;
    if (a == 0)
        a = 1;
    if (b->window || offset > b->size || bytes > b->size - offset || bytes == 0 ||
        offset % a || bytes > dev->info.max_storage_buffer_range)
        return rl_fail(err, RL_ERR_ARG,
                       "window [%llu, +%llu) of %s (%llu bytes): must lie inside it, start at a "
                       "multiple of %llu and span at most maxStorageBufferRange (%llu bytes)",
                       (unsigned long long)offset, (unsigned long long)bytes, b->name,
                       (unsigned long long)b->size, (unsigned long long)a,
                       (unsigned long long)dev->info.max_storage_buffer_range);
    *out = *b;
    out->memory = VK_NULL_HANDLE;
    out->mapped = NULL;
    out->offset = b->offset + offset;
    out->size = bytes;
    out->window = 1;
    return RL_OK;
}

static rl_status create_storage(rlvk_device *dev, uint64_t size, const char *name,
                                rlvk_buffer *buf, rl_error *err)
{
    /* Unified memory (CPU devices, integrated GPUs, resizable BAR) first:
     * then uploads are a memcpy. Coherent is required so no flushes are
     * needed. */
    static const VkMemoryPropertyFlags prefs[] = {
        VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
            VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
        VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
        0,
    };
    /* A small discrete GPU's host-visible device-local window (256 MiB BAR)
     * should not be spent on large tensors: use it only for small buffers. */
    int first = 0;
    if (dev->info.vk_type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU && size > (64u << 20))
        first = 1;
    return create_raw(dev, size,
                      VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                          VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                          VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT,
                      prefs + first, (int)RL_ARRAY_LEN(prefs) - first, name, buf, err);
}

void rlvk_buffer_destroy(rlvk_device *dev, rlvk_buffer *buf)
{
    if (!buf)
        return;
    if (buf->window) { /* owns nothing */
        memset(buf, 0, sizeof *buf);
        return;
    }
    if (buf->mapped)
        dev->vk.vkUnmapMemory(dev->device, buf->memory);
    if (buf->buffer)
        dev->vk.vkDestroyBuffer(dev->device, buf->buffer, NULL);
    if (buf->memory)
        dev->vk.vkFreeMemory(dev->device, buf->memory, NULL);
    memset(buf, 0, sizeof *buf);
}

static rl_status staging_copy(rlvk_device *dev, const rlvk_buffer *device_buf, uint64_t offset,
                              void *host, uint64_t bytes, int upload, rl_error *err)
{
    static const VkMemoryPropertyFlags prefs[] = {
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
            VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
    };
    rlvk_buffer stage;
    rl_status st = create_raw(dev, bytes,
                              VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                              prefs, 2, "staging", &stage, err);
    if (st)
        return st;
    if (upload)
        memcpy(stage.mapped, host, bytes);
    rlvk_cmd cmd;
    st = rlvk_cmd_begin(dev, 0, &cmd, err);
    if (!st) {
        VkBufferCopy region = {
            .srcOffset = upload ? 0 : offset, .dstOffset = upload ? offset : 0, .size = bytes};
        /* Order the copy after earlier kernels' writes and make its result
         * visible to later kernels (later submissions on this queue too). */
        VkMemoryBarrier before = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
            .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
            .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        };
        VkMemoryBarrier after = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
            .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
            .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
        };
        dev->vk.vkCmdPipelineBarrier(cmd.cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                                                 VK_PIPELINE_STAGE_TRANSFER_BIT,
                                     VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0, NULL, 0, NULL);
        dev->vk.vkCmdCopyBuffer(cmd.cb, upload ? stage.buffer : device_buf->buffer,
                                upload ? device_buf->buffer : stage.buffer, 1, &region);
        dev->vk.vkCmdPipelineBarrier(cmd.cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                                     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &after, 0, NULL, 0,
                                     NULL);
        st = rlvk_cmd_submit_wait(&cmd, err);
    }
    rlvk_cmd_destroy(&cmd);
    if (!st && !upload)
        memcpy(host, stage.mapped, bytes);
    rlvk_buffer_destroy(dev, &stage);
    return st;
}

rl_status rlvk_buffer_upload(rlvk_device *dev, rlvk_buffer *buf, uint64_t offset,
                             const void *src, uint64_t bytes, rl_error *err)
{
    if (offset > buf->size || bytes > buf->size - offset)
        return rl_fail(err, RL_ERR_ARG, "upload of %llu bytes at %llu overruns %s (%llu bytes)",
                       (unsigned long long)bytes, (unsigned long long)offset, buf->name,
                       (unsigned long long)buf->size);
    if (bytes == 0)
        return RL_OK;
    dev->bytes_uploaded += bytes;
    if (buf->mapped) {
        memcpy((char *)buf->mapped + offset, src, bytes);
        return RL_OK;
    }
    return staging_copy(dev, buf, offset, (void *)src, bytes, 1, err);
}

rl_status rlvk_buffer_download(rlvk_device *dev, const rlvk_buffer *buf, uint64_t offset,
                               void *dst, uint64_t bytes, rl_error *err)
{
    if (offset > buf->size || bytes > buf->size - offset)
        return rl_fail(err, RL_ERR_ARG, "download of %llu bytes at %llu overruns %s (%llu bytes)",
                       (unsigned long long)bytes, (unsigned long long)offset, buf->name,
                       (unsigned long long)buf->size);
    if (bytes == 0)
        return RL_OK;
    dev->bytes_downloaded += bytes;
    if (buf->mapped) {
        memcpy(dst, (const char *)buf->mapped + offset, bytes);
        return RL_OK;
    }
    return staging_copy(dev, buf, offset, dst, bytes, 0, err);
}
