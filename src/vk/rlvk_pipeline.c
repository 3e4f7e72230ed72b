/* Compute pipelines from embedded SPIR-V, with specialization constants and
 * push constants; all storage buffers, bindings 0..n-1 of set 0. */
#include "vk/rlvk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"

static rl_status pipeline_create(rlvk_device *dev, const rlvk_pipeline_desc *desc,
                                 rlvk_pipeline *pipe, rl_error *err);

static void pipeline_release(rlvk_device *dev, rlvk_pipeline *pipe);

/* ---- the device's pipeline table ---------------------------------------- */

typedef struct ptable_key {
    const uint32_t *spirv;
    size_t spirv_bytes;
    uint64_t spirv_hash;
    uint32_t n_bindings, push_bytes, local_size_x, n_spec;
    uint32_t spec[15];
} ptable_key;

typedef struct ptable_entry {
    int used;
    ptable_key key;
    rlvk_pipeline pipe;
    uint32_t refs;
    uint64_t last_use;
} ptable_entry;

struct rlvk_ptable {
    ptable_entry e[RLVK_PTABLE_SIZE];
    uint64_t clock;
};

static void make_key(const rlvk_pipeline_desc *d, ptable_key *k)
{
    memset(k, 0, sizeof *k);
    k->spirv = d->spirv;
    k->spirv_bytes = d->spirv_bytes;
    k->spirv_hash = rl_hash64(d->spirv, d->spirv_bytes, 0xcbf29ce484222325ull);
    k->n_bindings = d->n_bindings;
    k->push_bytes = d->push_bytes;
    k->local_size_x = d->local_size_x ? d->local_size_x : 64;
    k->n_spec = d->n_spec;
    for (uint32_t i = 0; i < d->n_spec && i < 15; i++)
        k->spec[i] = d->spec[i];
}

rl_status rlvk_pipeline_create(rlvk_device *dev, const rlvk_pipeline_desc *desc,
                               rlvk_pipeline *pipe, rl_error *err)
{
    double t0 = rl_now();
    rl_status st;
    if (!dev->ptable)
        dev->ptable = calloc(1, sizeof *dev->ptable);
    struct rlvk_ptable *t = dev->ptable;
    ptable_key key;
    make_key(desc, &key);
    ptable_entry *hit = NULL, *slot = NULL;
    for (uint32_t i = 0; t && desc->n_spec <= 15 && i < RLVK_PTABLE_SIZE; i++) {
        ptable_entry *e = &t->e[i];
        if (e->used && memcmp(&e->key, &key, sizeof key) == 0) {
            hit = e;
            break;
        }
        if (!e->used) { /* a free entry beats any replacement */
            if (!slot || slot->used)
                slot = e;
        } else if (!e->refs && (!slot || (slot->used && e->last_use < slot->last_use))) {
            slot = e;
        }
    }
    if (hit) {
        *pipe = hit->pipe;
        snprintf(pipe->name, sizeof pipe->name, "%s", desc->name);
        hit->refs++;
        hit->last_use = ++t->clock;
        dev->n_pipelines_reused++;
        dev->pipeline_s += rl_now() - t0;
        return RL_OK;
    }
    if (slot && slot->used) { /* the least recently used pipeline nobody holds */
        pipeline_release(dev, &slot->pipe);
        slot->used = 0;
    }
    st = pipeline_create(dev, desc, slot ? &slot->pipe : pipe, err);
    if (!st && slot) {
        slot->pipe.shared = 1;
        slot->used = 1;
        slot->key = key;
        slot->refs = 1;
        slot->last_use = ++t->clock;
        *pipe = slot->pipe;
    }
    dev->pipeline_s += rl_now() - t0;
    dev->n_pipelines += st == RL_OK;
    return st;
}

void rlvk_ptable_destroy(rlvk_device *dev)
{
    if (!dev || !dev->ptable)
        return;
    for (uint32_t i = 0; i < RLVK_PTABLE_SIZE; i++)
        if (dev->ptable->e[i].used)
            pipeline_release(dev, &dev->ptable->e[i].pipe);
    free(dev->ptable);
    dev->ptable = NULL;
}

static rl_status pipeline_create(rlvk_device *dev, const rlvk_pipeline_desc *desc,
                                 rlvk_pipeline *pipe, rl_error *err)
{
    memset(pipe, 0, sizeof *pipe);
    snprintf(pipe->name, sizeof pipe->name, "%s", desc->name);
    if (desc->n_bindings > RLVK_MAX_BINDINGS || desc->n_spec > 15)
        return rl_fail(err, RL_ERR_ARG, "pipeline %s: too many bindings or constants", desc->name);
    pipe->n_bindings = desc->n_bindings;
    pipe->push_bytes = desc->push_bytes;
    pipe->local_size_x = desc->local_size_x ? desc->local_size_x : 64;
    if (pipe->local_size_x > dev->info.max_workgroup_size[0] ||
        pipe->local_size_x > dev->info.max_workgroup_invocations)
        return rl_fail(err, RL_ERR_LIMIT,
                       "pipeline %s: workgroup size %u exceeds %s's maxComputeWorkGroupSize[0] (%u)",
                       desc->name, pipe->local_size_x, dev->info.name, dev->info.max_workgroup_size[0]);
    if (desc->push_bytes > dev->info.max_push_constants)
        return rl_fail(err, RL_ERR_LIMIT, "pipeline %s: %u push-constant bytes exceed maxPushConstantsSize (%u)",
                       desc->name, desc->push_bytes, dev->info.max_push_constants);

    VkShaderModuleCreateInfo smi = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = desc->spirv_bytes,
        .pCode = desc->spirv,
    };
    VkResult r = dev->vk.vkCreateShaderModule(dev->device, &smi, NULL, &pipe->module);
    if (r != VK_SUCCESS) {
        pipe->module = VK_NULL_HANDLE;
        return rlvk_fail(err, r, "creating shader module %s", desc->name);
    }

    VkDescriptorSetLayoutBinding binds[RLVK_MAX_BINDINGS];
    for (uint32_t i = 0; i < desc->n_bindings; i++)
        binds[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    VkDescriptorSetLayoutCreateInfo dli = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = desc->n_bindings,
        .pBindings = binds,
    };
    r = dev->vk.vkCreateDescriptorSetLayout(dev->device, &dli, NULL, &pipe->set_layout);
    if (r != VK_SUCCESS) {
        pipe->set_layout = VK_NULL_HANDLE;
        rlvk_pipeline_destroy(dev, pipe);
        return rlvk_fail(err, r, "creating descriptor layout for %s", desc->name);
    }
    VkPushConstantRange range = {
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = desc->push_bytes};
    VkPipelineLayoutCreateInfo pli = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &pipe->set_layout,
        .pushConstantRangeCount = desc->push_bytes ? 1u : 0u,
        .pPushConstantRanges = desc->push_bytes ? &range : NULL,
    };
    r = dev->vk.vkCreatePipelineLayout(dev->device, &pli, NULL, &pipe->layout);
    if (r != VK_SUCCESS) {
        pipe->layout = VK_NULL_HANDLE;
        rlvk_pipeline_destroy(dev, pipe);
        return rlvk_fail(err, r, "creating pipeline layout for %s", desc->name);
    }

    uint32_t values[16];
    VkSpecializationMapEntry entries[16];
    values[0] = pipe->local_size_x;
    for (uint32_t i = 0; i < desc->n_spec; i++)
        values[i + 1] = desc->spec[i];
    for (uint32_t i = 0; i <= desc->n_spec; i++)
        entries[i] = (VkSpecializationMapEntry){
            .constantID = i, .offset = i * 4u, .size = 4};
    VkSpecializationInfo spec = {
        .mapEntryCount = desc->n_spec + 1,
        .pMapEntries = entries,
        .dataSize = (desc->n_spec + 1) * 4u,
        .pData = values,
    };
    VkComputePipelineCreateInfo cpi = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_COMPUTE_BIT,
            .module = pipe->module,
            .pName = "main",
            .pSpecializationInfo = &spec,
        },
        .layout = pipe->layout,
    };
    r = dev->vk.vkCreateComputePipelines(dev->device, dev->pipeline_cache, 1, &cpi, NULL,
                                         &pipe->pipeline);
    if (r != VK_SUCCESS) {
        pipe->pipeline = VK_NULL_HANDLE;
        rlvk_pipeline_destroy(dev, pipe);
        return rlvk_fail(err, r, "creating compute pipeline %s on %s", desc->name, dev->info.name);
    }
    return RL_OK;
}

void rlvk_pipeline_destroy(rlvk_device *dev, rlvk_pipeline *pipe)
{
    if (!pipe || !dev || !dev->device)
        return;
    if (pipe->shared) {
        for (uint32_t i = 0; dev->ptable && i < RLVK_PTABLE_SIZE; i++) {
            ptable_entry *e = &dev->ptable->e[i];
            if (e->used && e->pipe.pipeline == pipe->pipeline && e->refs)
                e->refs--;
        }
        memset(pipe, 0, sizeof *pipe);
        return;
    }
    pipeline_release(dev, pipe);
}

static void pipeline_release(rlvk_device *dev, rlvk_pipeline *pipe)
{
    if (pipe->pipeline)
        dev->vk.vkDestroyPipeline(dev->device, pipe->pipeline, NULL);
    if (pipe->layout)
        dev->vk.vkDestroyPipelineLayout(dev->device, pipe->layout, NULL);
    if (pipe->set_layout)
        dev->vk.vkDestroyDescriptorSetLayout(dev->device, pipe->set_layout, NULL);
    if (pipe->module)
        dev->vk.vkDestroyShaderModule(dev->device, pipe->module, NULL);
    memset(pipe, 0, sizeof *pipe);
}
