/* Device information, selection, logical device creation. */
#include <assert.h>
#include "vk/rlvk.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"

static const char *type_name(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
    }
}

void rlvk_driver_version_str(uint32_t vendor_id, uint32_t v, char *buf, size_t cap)
{
    int n;
    if (vendor_id == 0x10de) /* NVIDIA: 10.8.8.6 */
        n = snprintf(buf, cap, "%u.%u.%u.%u", (v >> 22) & 0x3ffu, (v >> 14) & 0xffu,
                     (v >> 6) & 0xffu, v & 0x3fu);
#ifdef _WIN32
    else if (vendor_id == 0x8086) /* Intel on Windows: 18.14 */
        n = snprintf(buf, cap, "%u.%u", v >> 14, v & 0x3fffu);
#endif
    else
        n = snprintf(buf, cap, "%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
                     VK_API_VERSION_PATCH(v));
    if (cap && (n < 0 || (size_t)n >= cap))
        buf[0] = '\0';
}

const char *rlvk_driver_id_name(uint32_t id)
{
    /* VkDriverId 1..25 (vulkan_core.h), in order. */
    static const char *const names[] = {
        "UNKNOWN", "AMD_PROPRIETARY", "AMD_OPEN_SOURCE", "MESA_RADV", "NVIDIA_PROPRIETARY",
        "INTEL_PROPRIETARY_WINDOWS", "INTEL_OPEN_SOURCE_MESA", "IMAGINATION_PROPRIETARY",
        "QUALCOMM_PROPRIETARY", "ARM_PROPRIETARY", "GOOGLE_SWIFTSHADER", "GGP_PROPRIETARY",
        "BROADCOM_PROPRIETARY", "MESA_LLVMPIPE", "MOLTENVK", "COREAVI_PROPRIETARY",
        "JUICE_PROPRIETARY", "VERISILICON_PROPRIETARY", "MESA_TURNIP", "MESA_V3DV", "MESA_PANVK",
        "SAMSUNG_PROPRIETARY", "MESA_VENUS", "MESA_DOZEN", "MESA_NVK",
        "IMAGINATION_OPEN_SOURCE_MESA",
    };
    _Static_assert(VK_DRIVER_ID_MESA_LLVMPIPE == 13, "VkDriverId table order");
    return id < RL_ARRAY_LEN(names) ? names[id] : "UNKNOWN";
}

static int has_device_extension(VkPhysicalDevice pd, const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || !n)
        return 0;
    VkExtensionProperties *e = malloc(n * sizeof *e);
    int found = 0;
    if (e && vkEnumerateDeviceExtensionProperties(pd, NULL, &n, e) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++)
            found = strcmp(e[i].extensionName, name) == 0;
    free(e);
    return found;
}

static int compute_family(VkPhysicalDevice pd, uint32_t *family, int *timestamps,
                          uint32_t *ts_bits)
{
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, NULL);
    VkQueueFamilyProperties props[32];
    if (n > RL_ARRAY_LEN(props))
        n = RL_ARRAY_LEN(props);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, props);
    int best = -1;
    /* Prefer a family that supports compute and timestamps; among those a
     * compute-only one (async compute) is not needed, the first will do. */
    for (uint32_t i = 0; i < n; i++) {
        if (!(props[i].queueFlags & VK_QUEUE_COMPUTE_BIT))
            continue;
        if (best < 0 || (props[best].timestampValidBits == 0 && props[i].timestampValidBits > 0))
            best = (int)i;
    }
    if (best < 0)
        return 0;
    *family = (uint32_t)best;
    *ts_bits = props[best].timestampValidBits;
    *timestamps = props[best].timestampValidBits > 0;
    return 1;
}

rl_status rlvk_device_info_query(const rlvk_instance *inst, uint32_t index,
                                 rlvk_device_info *info, rl_error *err)
{
    if (index >= inst->n_physical)
        return rl_fail(err, RL_ERR_NO_DEVICE, "device index %u does not exist (%u device%s found)",
                       index, inst->n_physical, inst->n_physical == 1 ? "" : "s");
    VkPhysicalDevice pd = inst->physical[index];
    memset(info, 0, sizeof *info);
    info->index = index;

    VkPhysicalDeviceSubgroupProperties sub = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceIDProperties idp = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceDriverProperties drv = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceMaintenance3Properties m3 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &sub};
    VkPhysicalDeviceProperties base;
    vkGetPhysicalDeviceProperties(pd, &base);
    /* Chain only what the device may be asked for: ID properties are core
     * in 1.1 (the instance asks for >= 1.1), driver properties in 1.2 or
     * with VK_KHR_driver_properties (same structure). */
    int want_id = base.apiVersion >= VK_API_VERSION_1_1;
    int want_drv = base.apiVersion >= VK_API_VERSION_1_2 ||
                   has_device_extension(pd, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
    if (want_id) {
        idp.pNext = p2.pNext;
        p2.pNext = &idp;
        m3.pNext = p2.pNext; /* core in 1.1 too */
        p2.pNext = &m3;
    }
    if (want_drv) {
        drv.pNext = p2.pNext;
        p2.pNext = &drv;
    }
    vkGetPhysicalDeviceProperties2(pd, &p2);
    const VkPhysicalDeviceProperties *p = &p2.properties;

    snprintf(info->name, sizeof info->name, "%s", p->deviceName);
    info->vk_type = p->deviceType;
    info->type = type_name(p->deviceType);
    info->vendor_id = p->vendorID;
    info->device_id = p->deviceID;
    info->driver_version = p->driverVersion;
    info->api_version = p->apiVersion;
    rlvk_driver_version_str(p->vendorID, p->driverVersion, info->driver_version_str,
                            sizeof info->driver_version_str);
    if (want_id) {
        info->has_uuid = 1;
        memcpy(info->device_uuid, idp.deviceUUID, sizeof info->device_uuid);
    }
    if (want_drv) {
        info->has_driver_props = 1;
        info->driver_id = (uint32_t)drv.driverID;
        info->conformance[0] = drv.conformanceVersion.major;
        info->conformance[1] = drv.conformanceVersion.minor;
        info->conformance[2] = drv.conformanceVersion.subminor;
        info->conformance[3] = drv.conformanceVersion.patch;
        snprintf(info->driver_name, sizeof info->driver_name, "%s", drv.driverName);
        snprintf(info->driver_info, sizeof info->driver_info, "%s", drv.driverInfo);
    } else {
        snprintf(info->driver_name, sizeof info->driver_name, "unknown");
    }
    info->subgroup_size = sub.subgroupSize;
    info->subgroup_ops = sub.supportedOperations;
    info->subgroup_stages = sub.supportedStages;
    info->max_shared_memory = p->limits.maxComputeSharedMemorySize;
    for (int i = 0; i < 3; i++) {
        info->max_workgroup_count[i] = p->limits.maxComputeWorkGroupCount[i];
        info->max_workgroup_size[i] = p->limits.maxComputeWorkGroupSize[i];
    }
    info->max_workgroup_invocations = p->limits.maxComputeWorkGroupInvocations;
    /* one allocation's limit (1.1; before it, 2^30, the spec's minimum) */
    info->max_allocation = want_id && m3.maxMemoryAllocationSize ? m3.maxMemoryAllocationSize
                                                                  : (1ull << 30);
    info->min_storage_offset = p->limits.minStorageBufferOffsetAlignment;
    info->min_texel_offset = p->limits.minTexelBufferOffsetAlignment;
    info->max_storage_buffer_range = p->limits.maxStorageBufferRange;
    info->max_push_constants = p->limits.maxPushConstantsSize;
    info->max_texel_elements = p->limits.maxTexelBufferElements;
    info->texel_vec4 = 1;
    static const VkFormat texel_formats[] = {VK_FORMAT_R32G32B32A32_SFLOAT,
                                             VK_FORMAT_R16G16B16A16_SFLOAT};
    for (size_t i = 0; i < sizeof texel_formats / sizeof *texel_formats; i++) {
        VkFormatProperties fp;
        vkGetPhysicalDeviceFormatProperties(pd, texel_formats[i], &fp);
        if (!(fp.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT))
            info->texel_vec4 = 0;
    }
    info->timestamp_period_ns = (double)p->limits.timestampPeriod;

    VkPhysicalDevice16BitStorageFeatures s16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES, .pNext = &s16};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = base.apiVersion >= VK_API_VERSION_1_2 ? (void *)&f16
                                                                                   : (void *)&s16};
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    info->fp64 = f2.features.shaderFloat64 != 0;
    info->int64 = f2.features.shaderInt64 != 0;
    info->fp16 = base.apiVersion >= VK_API_VERSION_1_2 && f16.shaderFloat16 != 0;
    info->storage16 = s16.storageBuffer16BitAccess != 0;

    uint32_t fam;
    if (!compute_family(pd, &fam, &info->timestamps, &info->timestamp_valid_bits))
        info->timestamps = 0;
    if (!p->limits.timestampComputeAndGraphics && info->timestamp_valid_bits == 0)
        info->timestamps = 0;

    rlvk_cm_query(inst->instance, pd, base.apiVersion, &info->cm);

    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    info->n_heaps = mp.memoryHeapCount < RLVK_MAX_HEAPS ? mp.memoryHeapCount : RLVK_MAX_HEAPS;
    for (uint32_t i = 0; i < info->n_heaps; i++) {
        info->heaps[i].size = mp.memoryHeaps[i].size;
        info->heaps[i].device_local = (mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0;
    }
    return RL_OK;
}

static int type_rank(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
    }
}

static int contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}

/* "GPU-8a2f0c1e-..." or "8a2f0c1e..." (dashes ignored) as 16 bytes; 0 when
 * it is not 32 hex digits. */
static int parse_uuid(const char *s, uint8_t uuid[VK_UUID_SIZE])
{
    if (!strncmp(s, "GPU-", 4))
        s += 4;
    unsigned n = 0;
    for (; *s; s++) {
        if (*s == '-')
            continue;
        if (!isxdigit((unsigned char)*s) || n >= 2 * VK_UUID_SIZE)
            return 0;
        unsigned v = isdigit((unsigned char)*s) ? (unsigned)(*s - '0')
                                                : (unsigned)(tolower((unsigned char)*s) - 'a' + 10);
        uuid[n / 2] = (uint8_t)(n % 2 ? (uuid[n / 2] << 4) | v : v);
        n++;
    }
    return n == 2 * VK_UUID_SIZE;
}

rl_status rlvk_device_uuid(const rlvk_instance *inst, uint32_t index, uint8_t uuid[VK_UUID_SIZE])
{
    assert(index < inst->n_physical);
    VkPhysicalDeviceProperties base;
    vkGetPhysicalDeviceProperties(inst->physical[index], &base);
    if (base.apiVersion < VK_API_VERSION_1_1)
        return RL_ERR_UNSUPPORTED;
    VkPhysicalDeviceIDProperties id = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &id};
    vkGetPhysicalDeviceProperties2(inst->physical[index], &p2);
    memcpy(uuid, id.deviceUUID, VK_UUID_SIZE);
    return RL_OK;
}

rl_status rlvk_select(const rlvk_instance *inst, const char *spec, uint32_t *out,
                      uint32_t *count, rl_error *err)
{
    *count = 0;
    if (spec && !strncmp(spec, "uuid:", 5)) {
        uint8_t want[VK_UUID_SIZE], have[VK_UUID_SIZE];
        if (!parse_uuid(spec + 5, want))
            return rl_fail(err, RL_ERR_ARG,
                           "--device %s: expected uuid: and 32 hex digits (dashes and a GPU- "
                           "prefix allowed)", spec);
        for (uint32_t i = 0; i < inst->n_physical; i++)
            if (rlvk_device_uuid(inst, i, have) == RL_OK && !memcmp(want, have, VK_UUID_SIZE))
                out[(*count)++] = i;
        if (*count == 0)
            return rl_fail(err, RL_ERR_NO_DEVICE,
                           "--device %s: no Vulkan device has that deviceUUID (%u device%s)",
                           spec, inst->n_physical, inst->n_physical == 1 ? "" : "s");
        return RL_OK;
    }
    if (!spec || !*spec || strcmp(spec, "auto") == 0) {
        int best = -1, best_rank = 99;
        for (uint32_t i = 0; i < inst->n_physical; i++) {
            VkPhysicalDeviceProperties p;
            vkGetPhysicalDeviceProperties(inst->physical[i], &p);
            if (type_rank(p.deviceType) < best_rank) {
                best_rank = type_rank(p.deviceType);
                best = (int)i;
            }
        }
        if (best < 0)
            return rl_fail(err, RL_ERR_NO_DEVICE, "no Vulkan device found");
        out[(*count)++] = (uint32_t)best;
        return RL_OK;
    }
    if (strcmp(spec, "all") == 0) {
        for (uint32_t i = 0; i < inst->n_physical; i++)
            out[(*count)++] = i;
        return RL_OK;
    }
    int numeric = 1;
    for (const char *c = spec; *c; c++)
        if (!isdigit((unsigned char)*c))
            numeric = 0;
    if (numeric) {
        unsigned long idx = strtoul(spec, NULL, 10);
        if (strlen(spec) > 9 || idx >= inst->n_physical)
            return rl_fail(err, RL_ERR_NO_DEVICE,
                           "--device %s: no device with that index (%u device%s: 0..%u; see `ropelab devices`)",
                           spec, inst->n_physical, inst->n_physical == 1 ? "" : "s",
                           inst->n_physical - 1);
        out[(*count)++] = (uint32_t)idx;
        return RL_OK;
    }
    for (uint32_t i = 0; i < inst->n_physical; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(inst->physical[i], &p);
        if (contains_nocase(p.deviceName, spec))
            out[(*count)++] = i;
    }
    if (*count == 0) {
        char names[512] = "";
        size_t len = 0;
        for (uint32_t i = 0; i < inst->n_physical && len < sizeof names - 1; i++) {
            VkPhysicalDeviceProperties p;
            vkGetPhysicalDeviceProperties(inst->physical[i], &p);
            len += (size_t)snprintf(names + len, sizeof names - len, "%s%u: %s", i ? ", " : "", i,
                                    p.deviceName);
        }
        return rl_fail(err, RL_ERR_NO_DEVICE,
                       "--device '%s': no device name contains it (devices: %s)", spec, names);
    }
    return RL_OK;
}

rl_status rlvk_device_create(rlvk_instance *inst, uint32_t index, rlvk_device *dev,
                             rl_error *err)
{
    memset(dev, 0, sizeof *dev);
    rl_status st = rlvk_device_info_query(inst, index, &dev->info, err);
    if (st)
        return st;
    dev->inst = inst;
    dev->physical = inst->physical[index];
    vkGetPhysicalDeviceMemoryProperties(dev->physical, &dev->memory);
    int ts;
    uint32_t ts_bits;
    if (!compute_family(dev->physical, &dev->queue_family, &ts, &ts_bits))
        return rl_fail(err, RL_ERR_UNSUPPORTED, "%s has no compute queue", dev->info.name);

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = dev->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &prio,
    };
    VkPhysicalDevice16BitStorageFeatures s16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
        .storageBuffer16BitAccess = dev->info.storage16 ? VK_TRUE : VK_FALSE,
    };
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
        .pNext = &s16,
        .shaderFloat16 = dev->info.fp16 ? VK_TRUE : VK_FALSE,
    };
    VkPhysicalDeviceFeatures2 f2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
        .pNext = dev->info.api_version >= VK_API_VERSION_1_2 ? (void *)&f16 : (void *)&s16,
        .features = {.shaderFloat64 = dev->info.fp64 ? VK_TRUE : VK_FALSE,
                     .shaderInt64 = dev->info.int64 ? VK_TRUE : VK_FALSE},
    };
    /* Cooperative matrices (attn_cm.comp: NV SPIR-V and its KHR twin): one
     * extension (KHR when usable, else NV), its feature and the memory
     * model its SPIR-V declares, only on a device that offers all of them
     * with fp16 arithmetic and 16-bit storage. The KHR feature structure is
     * chained only where the device lists the extension and the feature
     * query said yes (rlvk_cm_query). */
    const rlvk_cm_info *cm = &dev->info.cm;
    int cm_base = cm->vk_memory_model && dev->info.fp16 && dev->info.storage16;
    int khr = cm_base && cm->has_khr && cm->feat_khr;
    int coopmat = !khr && cm_base && cm->has_nv && cm->feat_nv && cm->nv_compute;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cmf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
        .cooperativeMatrix = VK_TRUE};
    rlvk_khr_cm_features kmf = {.sType = RLVK_STYPE_CM_FEATURES_KHR, .cooperativeMatrix = VK_TRUE};
    VkPhysicalDeviceVulkanMemoryModelFeatures mmf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES,
        .pNext = khr ? (void *)&kmf : (void *)&cmf, .vulkanMemoryModel = VK_TRUE};
    const char *cm_ext[] = {khr ? RLVK_KHR_CM_EXTENSION_NAME
                                : VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME};
    if (coopmat || khr) {
        cmf.pNext = f2.pNext;
        kmf.pNext = f2.pNext;
        f2.pNext = &mmf;
    }
    VkDeviceCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &f2,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qci,
        .enabledExtensionCount = coopmat || khr ? 1u : 0u,
        .ppEnabledExtensionNames = coopmat || khr ? cm_ext : NULL,
    };
    VkResult r = vkCreateDevice(dev->physical, &dci, NULL, &dev->device);
    if (r != VK_SUCCESS) {
        dev->device = VK_NULL_HANDLE;
        return rlvk_fail(err, r, "creating a logical device on %s", dev->info.name);
    }
    volkLoadDeviceTable(&dev->vk, dev->device);
    dev->feat_fp64 = dev->info.fp64;
    dev->feat_int64 = dev->info.int64;
    dev->feat_fp16 = dev->info.fp16;
    dev->feat_storage16 = dev->info.storage16;
    dev->feat_coopmat_nv = coopmat;
    dev->feat_coopmat_khr = khr;
    dev->vk.vkGetDeviceQueue(dev->device, dev->queue_family, 0, &dev->queue);

    VkCommandPoolCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = dev->queue_family,
    };
    r = dev->vk.vkCreateCommandPool(dev->device, &pci, NULL, &dev->command_pool);
    if (r != VK_SUCCESS) {
        rlvk_device_destroy(dev);
        return rlvk_fail(err, r, "creating a command pool on %s", dev->info.name);
    }
    if ((st = rlvk_pcache_open(dev, err))) {
        rlvk_device_destroy(dev);
        return st;
    }
    if (dev->info.timestamps) {
        VkQueryPoolCreateInfo qpi = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_TIMESTAMP,
            .queryCount = RLVK_MAX_TIMESTAMPS,
        };
        r = dev->vk.vkCreateQueryPool(dev->device, &qpi, NULL, &dev->query_pool);
        if (r != VK_SUCCESS) {
            rlvk_device_destroy(dev);
            return rlvk_fail(err, r, "creating a timestamp query pool on %s", dev->info.name);
        }
    }
    return RL_OK;
}

void rlvk_device_destroy(rlvk_device *dev)
{
    if (!dev || !dev->device)
        return;
    dev->vk.vkDeviceWaitIdle(dev->device);
    if (dev->query_pool)
        dev->vk.vkDestroyQueryPool(dev->device, dev->query_pool, NULL);
    rlvk_ptable_destroy(dev);
    rlvk_pcache_close(dev);
    if (dev->pipeline_cache)
        dev->vk.vkDestroyPipelineCache(dev->device, dev->pipeline_cache, NULL);
    if (dev->command_pool)
        dev->vk.vkDestroyCommandPool(dev->device, dev->command_pool, NULL);
    dev->vk.vkDestroyDevice(dev->device, NULL);
    dev->device = VK_NULL_HANDLE;
}

rl_status rlvk_check_buffer_size(const rlvk_device *dev, uint64_t bytes, const char *what,
                                 rl_error *err)
{
    char b1[32], b2[32];
    if (bytes > dev->info.max_storage_buffer_range)
        return rl_fail(err, RL_ERR_LIMIT,
                       "%s needs %s in one storage buffer, over %s's maxStorageBufferRange (%s)",
                       what, rl_fmt_bytes(bytes, b1, sizeof b1), dev->info.name,
                       rl_fmt_bytes(dev->info.max_storage_buffer_range, b2, sizeof b2));
    return rlvk_check_alloc_size(dev, bytes, what, err);
}

rl_status rlvk_check_alloc_size(const rlvk_device *dev, uint64_t bytes, const char *what,
                                rl_error *err)
{
    char b1[32], b2[32];
    if (bytes > dev->info.max_allocation)
        return rl_fail(err, RL_ERR_LIMIT,
                       "%s needs %s in one allocation, over %s's maxMemoryAllocationSize (%s)",
                       what, rl_fmt_bytes(bytes, b1, sizeof b1), dev->info.name,
                       rl_fmt_bytes(dev->info.max_allocation, b2, sizeof b2));
    uint64_t largest = 0;
    for (uint32_t i = 0; i < dev->info.n_heaps; i++)
        if (dev->info.heaps[i].device_local && dev->info.heaps[i].size > largest)
            largest = dev->info.heaps[i].size;
    if (largest && bytes > largest)
        return rl_fail(err, RL_ERR_LIMIT, "%s needs %s, over %s's largest device-local heap (%s)",
                       what, rl_fmt_bytes(bytes, b1, sizeof b1), dev->info.name,
                       rl_fmt_bytes(largest, b2, sizeof b2));
    return RL_OK;
}
