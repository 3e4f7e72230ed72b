/* Cooperative-matrix support of a physical device: VK_NV_cooperative_matrix
 * through the headers and volk, VK_KHR_cooperative_matrix through
 * vkGetInstanceProcAddr and the structures below. The Vulkan headers here
 * (1.3.239) predate the KHR extension (header 1.3.255), so its structure
 * types and layouts are written from the specification
 * (VK_KHR_cooperative_matrix, revision 2). Its feature structure
 * (VkPhysicalDeviceCooperativeMatrixFeaturesKHR) is chained into
 * vkGetPhysicalDeviceFeatures2 only where the device lists the extension:
 * a validation layer older than the extension (bookworm's 1.3.239) would
 * report an sType it does not know, and bookworm's lavapipe lists no KHR,
 * so CI never chains it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk/rlvk.h"

#define RLVK_KHR_CM_EXT "VK_KHR_cooperative_matrix"
#define RLVK_STYPE_CM_PROPERTIES_KHR ((VkStructureType)1000506001)

typedef struct rlvk_khr_cm_properties {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    uint32_t AType, BType, CType, ResultType; /* VkComponentTypeKHR */
    VkBool32 saturatingAccumulation;
    uint32_t scope;                            /* VkScopeKHR */
} rlvk_khr_cm_properties;

typedef VkResult(VKAPI_PTR *rlvk_pfn_khr_cm_props)(VkPhysicalDevice, uint32_t *,
                                                   rlvk_khr_cm_properties *);

static void extensions(VkPhysicalDevice pd, int *nv, int *khr)
{
    uint32_t n = 0;
    *nv = *khr = 0;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || !n)
        return;
    VkExtensionProperties *e = malloc(n * sizeof *e);
    if (e && vkEnumerateDeviceExtensionProperties(pd, NULL, &n, e) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++) {
            *nv |= strcmp(e[i].extensionName, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) == 0;
            *khr |= strcmp(e[i].extensionName, RLVK_KHR_CM_EXT) == 0;
        }
    free(e);
}

static void add_shape(rlvk_cm_info *cm, const rlvk_cm_shape *s)
{
    cm->n_listed++;
    if (cm->n_shapes < RLVK_CM_MAX_SHAPES)
        cm->shapes[cm->n_shapes++] = *s;
}

void rlvk_cm_query(VkInstance instance, VkPhysicalDevice pd, uint32_t api_version,
                   rlvk_cm_info *cm)
{
    memset(cm, 0, sizeof *cm);
    extensions(pd, &cm->has_nv, &cm->has_khr);
    if (!cm->has_nv && !cm->has_khr)
        return;
    /* Features: NV's and KHR's cooperativeMatrix and the memory model the
     * SPIR-V declares (VulkanMemoryModel capability); NV's shader stages. */
    VkPhysicalDeviceCooperativeMatrixFeaturesNV fnv = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    VkPhysicalDeviceVulkanMemoryModelFeatures mm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    if (api_version >= VK_API_VERSION_1_2) {
        mm.pNext = f2.pNext;
        f2.pNext = &mm;
    }
    if (cm->has_nv) {
        fnv.pNext = f2.pNext;
        f2.pNext = &fnv;
    }
    rlvk_khr_cm_features fkhr = {.sType = RLVK_STYPE_CM_FEATURES_KHR};
    if (cm->has_khr) {
        fkhr.pNext = f2.pNext;
        f2.pNext = &fkhr;
    }
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    cm->feat_nv = fnv.cooperativeMatrix != 0;
    cm->feat_khr = fkhr.cooperativeMatrix != 0;
    cm->vk_memory_model = mm.vulkanMemoryModel != 0;
    if (cm->has_nv) {
        VkPhysicalDeviceCooperativeMatrixPropertiesNV pnv = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV};
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                          .pNext = &pnv};
        vkGetPhysicalDeviceProperties2(pd, &p2);
        cm->nv_compute = (pnv.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
    }

    if (cm->has_nv && vkGetPhysicalDeviceCooperativeMatrixPropertiesNV) {
        uint32_t n = 0;
        if (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n, NULL) == VK_SUCCESS && n) {
            VkCooperativeMatrixPropertiesNV *p = calloc(n, sizeof *p);
            for (uint32_t i = 0; p && i < n; i++)
                p[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
            if (p && vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n, p) == VK_SUCCESS)
                for (uint32_t i = 0; i < n; i++) {
                    rlvk_cm_shape s = {p[i].MSize, p[i].NSize, p[i].KSize, (uint32_t)p[i].AType,
                                       (uint32_t)p[i].BType, (uint32_t)p[i].CType,
                                       (uint32_t)p[i].DType, (uint32_t)p[i].scope, 0, 0};
                    add_shape(cm, &s);
                }
            free(p);
        }
    }
    rlvk_pfn_khr_cm_props khr_props =
        cm->has_khr ? (rlvk_pfn_khr_cm_props)vkGetInstanceProcAddr(
                          instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR")
                    : NULL;
    if (khr_props) {
        uint32_t n = 0;
        if (khr_props(pd, &n, NULL) == VK_SUCCESS && n) {
            rlvk_khr_cm_properties *p = calloc(n, sizeof *p);
            for (uint32_t i = 0; p && i < n; i++)
                p[i].sType = RLVK_STYPE_CM_PROPERTIES_KHR;
            if (p && khr_props(pd, &n, p) == VK_SUCCESS)
                for (uint32_t i = 0; i < n; i++) {
                    rlvk_cm_shape s = {p[i].MSize, p[i].NSize, p[i].KSize, p[i].AType, p[i].BType,
                                       p[i].CType, p[i].ResultType, p[i].scope,
                                       p[i].saturatingAccumulation != 0, 1};
                    add_shape(cm, &s);
                }
            free(p);
        }
    }
}

const char *rlvk_cm_type_name(uint32_t t, char *buf, size_t cap)
{
    static const char *const names[] = {"float16", "float32", "float64", "sint8", "sint16",
                                        "sint32", "sint64", "uint8", "uint16", "uint32", "uint64"};
    if (t < sizeof names / sizeof names[0])
        return names[t];
    snprintf(buf, cap, "type %u", t);
    return buf;
}

const char *rlvk_cm_scope_name(uint32_t s)
{
    switch (s) {
    case 1: return "device";
    case 2: return "workgroup";
    case 3: return "subgroup";
    case 5: return "queue family";
    default: return "unknown scope";
    }
}
