/* Instance, validation messenger, VkResult names, UUIDs as hex. */
#include "vk/rlvk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Mesa 22.3.6-1+deb12u2's lavapipe allocates 128 bytes in a pthread_once
 * of its first vkEnumeratePhysicalDevices and never frees them (a
 * one-time driver singleton; the ICD is unloaded at vkDestroyInstance, so
 * LeakSanitizer sees a 2-frame stack in an unknown module that no
 * suppression can match). Which loader entry reaches it first depends on
 * the layers (vkCreateInstance with the validation layer, else the first
 * vkEnumeratePhysicalDevices). Under AddressSanitizer those loader calls
 * run with leak detection off for this thread (DRIVER_CALL); nothing of
 * ropelab's is allocated inside them. */
#if defined(__SANITIZE_ADDRESS__)
#define RLVK_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RLVK_LSAN 1
#endif
#endif
#ifdef RLVK_LSAN
#include <sanitizer/lsan_interface.h>
#define DRIVER_LEAKS_BEGIN() __lsan_disable()
#define DRIVER_LEAKS_END() __lsan_enable()
#else
#define DRIVER_LEAKS_BEGIN() ((void)0)
#define DRIVER_LEAKS_END() ((void)0)
#endif
/* r = CALL with leak detection off for this thread (see above). */
#define DRIVER_CALL(r, call)                                                                 \
    do {                                                                                     \
        DRIVER_LEAKS_BEGIN();                                                                \
        (r) = (call);                                                                        \
        DRIVER_LEAKS_END();                                                                  \
    } while (0)

const char *rlvk_result_str(VkResult r)
{
    switch (r) {
#define R(x) case x: return #x;
    R(VK_SUCCESS) R(VK_NOT_READY) R(VK_TIMEOUT) R(VK_EVENT_SET) R(VK_EVENT_RESET)
    R(VK_INCOMPLETE) R(VK_ERROR_OUT_OF_HOST_MEMORY) R(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    R(VK_ERROR_INITIALIZATION_FAILED) R(VK_ERROR_DEVICE_LOST) R(VK_ERROR_MEMORY_MAP_FAILED)
    R(VK_ERROR_LAYER_NOT_PRESENT) R(VK_ERROR_EXTENSION_NOT_PRESENT)
    R(VK_ERROR_FEATURE_NOT_PRESENT) R(VK_ERROR_INCOMPATIBLE_DRIVER)
    R(VK_ERROR_TOO_MANY_OBJECTS) R(VK_ERROR_FORMAT_NOT_SUPPORTED)
    R(VK_ERROR_FRAGMENTED_POOL) R(VK_ERROR_UNKNOWN) R(VK_ERROR_OUT_OF_POOL_MEMORY)
    R(VK_ERROR_INVALID_EXTERNAL_HANDLE) R(VK_ERROR_FRAGMENTATION)
    R(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS) R(VK_PIPELINE_COMPILE_REQUIRED)
#undef R
    default: return "unknown VkResult";
    }
}

/* Here rather than in rlvk_device.c: rlvk_pcache.c names its files by the
 * UUID, and rlvk_device.c calls rlvk_pcache.c (no circle inside vk/). */
void rlvk_uuid_hex(const uint8_t uuid[16], char out[33])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hex[uuid[i] >> 4];
        out[2 * i + 1] = hex[uuid[i] & 15];
    }
    out[32] = '\0';
}

static const char *result_sentence(VkResult r)
{
    switch (r) {
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "out of device memory";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "out of host memory";
    case VK_ERROR_DEVICE_LOST: return "device lost (driver reset or watchdog)";
    case VK_TIMEOUT: return "timed out";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "no compatible Vulkan driver";
    case VK_ERROR_LAYER_NOT_PRESENT: return "layer not installed";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "extension not supported";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "feature not supported";
    default: return NULL;
    }
}

rl_status rlvk_fail(rl_error *err, VkResult r, const char *fmt, ...)
{
    char what[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *s = result_sentence(r);
    rl_status st = r == VK_ERROR_INCOMPATIBLE_DRIVER ? RL_ERR_NO_VULKAN
                 : r == VK_ERROR_FEATURE_NOT_PRESENT || r == VK_ERROR_EXTENSION_NOT_PRESENT
                       ? RL_ERR_UNSUPPORTED
                       : RL_ERR_VK;
    if (s)
        return rl_fail(err, st, "%s: %s (%s)", what, s, rlvk_result_str(r));
    return rl_fail(err, st, "%s: %s", what, rlvk_result_str(r));
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                 void *user)
{
    (void)type;
    rlvk_instance *inst = user;
    if (!(sev & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                 VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)))
        return VK_FALSE;
    const char *msg = data && data->pMessage ? data->pMessage : "(no text)";
    if (atomic_fetch_add(&inst->n_messages, 1) == 0)
        snprintf(inst->first_message, sizeof inst->first_message, "%s", msg);
    if (!inst->quiet)
        fprintf(stderr, "ropelab: validation %s: %s\n",
                (sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ? "error" : "warning", msg);
    return VK_FALSE;
}

static int layer_available(const char *name)
{
    uint32_t n = 0;
    VkResult er;
    DRIVER_CALL(er, vkEnumerateInstanceLayerProperties(&n, NULL));
    if (er != VK_SUCCESS || n == 0)
        return 0;
    VkLayerProperties *props = calloc(n, sizeof *props);
    if (!props)
        return 0;
    int found = 0;
    DRIVER_CALL(er, vkEnumerateInstanceLayerProperties(&n, props));
    if (er == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++)
            if (strcmp(props[i].layerName, name) == 0)
                found = 1;
    free(props);
    return found;
}

static int extension_available(const char *name)
{
    uint32_t n = 0;
    VkResult er;
    DRIVER_CALL(er, vkEnumerateInstanceExtensionProperties(NULL, &n, NULL));
    if (er != VK_SUCCESS || n == 0)
        return 0;
    VkExtensionProperties *props = calloc(n, sizeof *props);
    if (!props)
        return 0;
    int found = 0;
    DRIVER_CALL(er, vkEnumerateInstanceExtensionProperties(NULL, &n, props));
    if (er == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++)
            if (strcmp(props[i].extensionName, name) == 0)
                found = 1;
    free(props);
    return found;
}

rl_status rlvk_instance_create(const rlvk_instance_desc *desc, rlvk_instance *inst,
                               rl_error *err)
{
    static const char *const layer = "VK_LAYER_KHRONOS_validation";
    rlvk_instance_desc d = desc ? *desc : (rlvk_instance_desc){0};
    memset(inst, 0, sizeof *inst);
    atomic_init(&inst->n_messages, 0);
    inst->quiet = d.quiet_messages;
    const char *no_pc = getenv("RL_NO_PIPELINE_CACHE");
    inst->persist_pipelines = d.persist_pipelines && !(no_pc && strcmp(no_pc, "1") == 0);

    if (volkInitialize() != VK_SUCCESS)
        return rl_fail(err, RL_ERR_NO_VULKAN,
                       "no Vulkan loader found (libvulkan.so.1); install the loader and a driver, "
                       "e.g. `apt-get install libvulkan1 mesa-vulkan-drivers`");
    uint32_t loader_version = volkGetInstanceVersion();
    if (loader_version < VK_API_VERSION_1_1)
        return rl_fail(err, RL_ERR_NO_VULKAN, "the Vulkan loader supports only API %u.%u; ropelab needs 1.1",
                       VK_API_VERSION_MAJOR(loader_version), VK_API_VERSION_MINOR(loader_version));
    inst->api_version = loader_version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3
                      : loader_version >= VK_API_VERSION_1_2 ? VK_API_VERSION_1_2
                                                             : VK_API_VERSION_1_1;

    /* RL_REQUIRE_VALIDATION=1 (set by the test suites and CI) turns every
     * request for the layer into a requirement, so no GPU test can pass
     * without it being on. */
    const char *req = getenv("RL_REQUIRE_VALIDATION");
    if (d.validation && req && strcmp(req, "1") == 0)
        d.require_validation = 1;
    int want_layer = d.validation || d.require_validation;
    int have_layer = want_layer && layer_available(layer);
    if (d.require_validation && !have_layer)
        return rl_fail(err, RL_ERR_UNSUPPORTED,
                       "%s is not installed or not loadable (apt-get install "
                       "vulkan-validationlayers)%s",
                       layer, req && strcmp(req, "1") == 0 ? "; RL_REQUIRE_VALIDATION=1 requires it" : "");
    int have_utils = have_layer && extension_available(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    int have_portability = extension_available(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);

    const char *exts[2];
    uint32_t n_ext = 0;
    if (have_utils)
        exts[n_ext++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    if (have_portability)
        exts[n_ext++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME;

    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "ropelab",
        .applicationVersion = VK_MAKE_API_VERSION(0, 0, 1, 0),
        .pEngineName = "ropelab",
        .apiVersion = inst->api_version,
    };
    VkDebugUtilsMessengerCreateInfoEXT mci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_message,
        .pUserData = inst,
    };
    VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = have_utils ? &mci : NULL, /* also covers create/destroy */
        .flags = have_portability ? VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR : 0,
        .pApplicationInfo = &app,
        .enabledLayerCount = have_layer ? 1u : 0u,
        .ppEnabledLayerNames = have_layer ? &layer : NULL,
        .enabledExtensionCount = n_ext,
        .ppEnabledExtensionNames = n_ext ? exts : NULL,
    };
    VkResult r;
    DRIVER_CALL(r, vkCreateInstance(&ci, NULL, &inst->instance));
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
        inst->instance = VK_NULL_HANDLE;
        return rl_fail(err, RL_ERR_NO_VULKAN,
                       "the Vulkan loader found no driver (VK_ERROR_INCOMPATIBLE_DRIVER); install "
                       "one, e.g. `apt-get install mesa-vulkan-drivers` for the lavapipe CPU device");
    }
    if (r == VK_ERROR_OUT_OF_HOST_MEMORY) {
        /* The loader answers a driver or layer manifest it cannot parse
         * with this code, long before memory could run out. */
        inst->instance = VK_NULL_HANDLE;
        const char *files = getenv("VK_DRIVER_FILES");
        if (!files)
            files = getenv("VK_ICD_FILENAMES");
        return rl_fail(err, RL_ERR_NO_VULKAN,
                       "the Vulkan loader could not create an instance "
                       "(VK_ERROR_OUT_OF_HOST_MEMORY, which the loader returns when a driver or "
                       "layer manifest cannot be loaded): check %s%s%s (VK_LOADER_DEBUG=error "
                       "shows which file)",
                       files ? "the driver manifest(s) " : "the manifests in "
                                                           "/usr/share/vulkan/icd.d and "
                                                           "explicit_layer.d",
                       files ? files : "", files ? " named by VK_DRIVER_FILES/VK_ICD_FILENAMES" : "");
    }
    if (r != VK_SUCCESS) {
        inst->instance = VK_NULL_HANDLE;
        return rlvk_fail(err, r, "creating the Vulkan instance");
    }
    volkLoadInstanceOnly(inst->instance);
    inst->validation = have_layer;

    if (have_utils) {
        r = vkCreateDebugUtilsMessengerEXT(inst->instance, &mci, NULL, &inst->messenger);
        if (r != VK_SUCCESS) {
            rlvk_instance_destroy(inst);
            return rlvk_fail(err, r, "creating the validation messenger");
        }
    }

    DRIVER_CALL(r, vkEnumeratePhysicalDevices(inst->instance, &inst->n_physical, NULL));
    if (r == VK_SUCCESS && inst->n_physical > 0) {
        inst->physical = calloc(inst->n_physical, sizeof *inst->physical);
        if (!inst->physical) {
            rlvk_instance_destroy(inst);
            return rl_fail(err, RL_ERR_NOMEM, "out of host memory listing devices");
        }
        r = vkEnumeratePhysicalDevices(inst->instance, &inst->n_physical, inst->physical);
    }
    if (r != VK_SUCCESS) {
        rlvk_instance_destroy(inst);
        return rlvk_fail(err, r, "enumerating Vulkan devices");
    }
    if (inst->n_physical == 0) {
        rlvk_instance_destroy(inst);
        return rl_fail(err, RL_ERR_NO_VULKAN,
                       "the Vulkan loader found no device; install a driver "
                       "(for a CPU device: apt-get install mesa-vulkan-drivers)");
    }
    return RL_OK;
}

void rlvk_instance_destroy(rlvk_instance *inst)
{
    if (!inst)
        return;
    if (inst->messenger)
        vkDestroyDebugUtilsMessengerEXT(inst->instance, inst->messenger, NULL);
    if (inst->instance)
        vkDestroyInstance(inst->instance, NULL);
    free(inst->physical);
    inst->physical = NULL;
    inst->n_physical = 0;
    inst->messenger = VK_NULL_HANDLE;
    inst->instance = VK_NULL_HANDLE;
}

unsigned rlvk_instance_messages(const rlvk_instance *inst)
{
    return atomic_load(&((rlvk_instance *)inst)->n_messages);
}
