/* rlvk.h — ropelab's Vulkan core (prefix rlvk_).
 *
 * Instance (optional Khronos validation layer counted by a debug messenger),
 * device enumeration and selection, one compute queue per device, buffers,
 * compute pipelines from embedded SPIR-V, dispatch splitting, timestamps.
 * Vulkan is reached through volk: the loader is opened at run time, so a
 * machine without it gets RL_ERR_NO_VULKAN and a message, never a crash.
 * Each rlvk_device carries its own volk device table, so several devices can
 * live in one process (`--device all`). This module knows nothing of
 * encodings or experiments. */
#ifndef RLVK_H
#define RLVK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <volk.h>

#include "core/rl_status.h"

#define RLVK_MAX_HEAPS 16
#define RLVK_MAX_BINDINGS 12 /* 0..7 kernel, 8..11 logit-bias buffers (docs/attention.md "Bias hook") */
#define RLVK_MAX_TIMESTAMPS 64

/* ---- instance ---------------------------------------------------------- */

typedef struct rlvk_instance_desc {
    int validation;          /* 1: enable VK_LAYER_KHRONOS_validation */
    int require_validation;  /* 1: fail if the layer is not installed; also implied by
                                validation = 1 when RL_REQUIRE_VALIDATION=1 is in the
                                environment (test suites, CI) */
    int quiet_messages;      /* 1: count validation messages without printing */
    int persist_pipelines;   /* 1: devices load their VkPipelineCache from the cache
                                directory and save it back (rlvk_pcache_*); ignored when
                                RL_NO_PIPELINE_CACHE=1 is in the environment */
} rlvk_instance_desc;

typedef struct rlvk_instance {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    int validation;                  /* the layer is really active */
    int quiet;
    atomic_uint n_messages;          /* validation warnings + errors seen */
    char first_message[768];         /* text of the first one */
    uint32_t n_physical;
    VkPhysicalDevice *physical;      /* [n_physical], owned */
    uint32_t api_version;            /* instance version we asked for */
    int persist_pipelines;           /* desc.persist_pipelines, environment applied */
} rlvk_instance;

/* Opens the loader (volk), creates the instance and, when asked, the
 * validation layer and its messenger, and enumerates physical devices.
 * RL_ERR_NO_VULKAN when no loader or no driver is found. On failure inst is
 * left destroyed. */
rl_status rlvk_instance_create(const rlvk_instance_desc *desc, rlvk_instance *inst,
                               rl_error *err);
/* Destroys everything the instance owns; accepts a zeroed or partly built one. */
void rlvk_instance_destroy(rlvk_instance *inst);
/* Number of validation warnings/errors reported so far. */
unsigned rlvk_instance_messages(const rlvk_instance *inst);

/* ---- device information and selection ---------------------------------- */

typedef struct rlvk_heap_info {
    uint64_t size;
    int device_local;
} rlvk_heap_info;

/* Cooperative matrices (rlvk_coopmat.c): the device's extensions and the
 * (M, N, K, types, scope) combinations it lists. Component types and scopes
 * keep the Vulkan values (VkComponentTypeNV/KHR: 0 float16, 1 float32, 2
 * float64, 3..6 sint8..64, 7..10 uint8..64; VkScopeNV/KHR: 1 device, 2
 * workgroup, 3 subgroup, 5 queue family), equal in NV and KHR. */
#define RLVK_CM_MAX_SHAPES 32
enum { RLVK_CM_F16 = 0, RLVK_CM_F32 = 1 };
enum { RLVK_CM_SCOPE_SUBGROUP = 3 };
typedef struct rlvk_cm_shape {
    uint32_t m, n, k;
    uint32_t a, b, c, result;        /* component types */
    uint32_t scope;
    int saturating;                  /* KHR saturatingAccumulation (NV: 0) */
    int khr;                         /* 1: listed by the KHR query, 0: by the NV one */
} rlvk_cm_shape;
typedef struct rlvk_cm_info {
    int has_nv, has_khr;             /* VK_NV_cooperative_matrix / VK_KHR_cooperative_matrix listed */
    int feat_nv;                     /* NV's cooperativeMatrix feature */
    int feat_khr;                    /* KHR's cooperativeMatrix feature (queried only where
                                        the device lists VK_KHR_cooperative_matrix) */
    int nv_compute;                  /* NV's cooperativeMatrixSupportedStages has compute */
    int vk_memory_model;             /* vulkanMemoryModel (the NV SPIR-V needs it) */
    uint32_t n_shapes;               /* shapes[] filled (NV first, then KHR) */
    uint32_t n_listed;               /* combinations the device listed (may exceed n_shapes) */
    rlvk_cm_shape shapes[RLVK_CM_MAX_SHAPES];
} rlvk_cm_info;

/* VkPhysicalDeviceCooperativeMatrixFeaturesKHR, written from the
 * specification (the headers here, 1.3.239, predate it): for
 * vkGetPhysicalDeviceFeatures2 and device creation. */
#define RLVK_STYPE_CM_FEATURES_KHR ((VkStructureType)1000506000)
#define RLVK_KHR_CM_EXTENSION_NAME "VK_KHR_cooperative_matrix"
typedef struct rlvk_khr_cm_features {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix;
    VkBool32 cooperativeMatrixRobustBufferAccess;
} rlvk_khr_cm_features;

/* Fills cm for physical device pd (extension list, features, property
 * lists: vkGetPhysicalDeviceCooperativeMatrixPropertiesNV through volk,
 * the KHR one through vkGetInstanceProcAddr with this file's own struct
 * definitions, since the headers here predate it). Zero where absent. */
void rlvk_cm_query(VkInstance instance, VkPhysicalDevice pd, uint32_t api_version,
                   rlvk_cm_info *cm);
/* "float16", "float32", ... for a component type; "type N" beyond the table. */
const char *rlvk_cm_type_name(uint32_t t, char *buf, size_t cap);
/* "subgroup", "workgroup", ... for a scope. */
const char *rlvk_cm_scope_name(uint32_t s);

typedef struct rlvk_device_info {
    uint32_t index;
    char name[256];
    const char *type;                /* "discrete", "integrated", "virtual", "cpu", "other" */
    VkPhysicalDeviceType vk_type;
    uint32_t vendor_id, device_id;
    char driver_name[256];
    char driver_info[256];
    uint32_t driver_version;         /* raw VkPhysicalDeviceProperties::driverVersion */
    char driver_version_str[32];     /* decoded as vulkaninfo does (rlvk_driver_version_str) */
    int has_driver_props;            /* driver_id, driver_name/info, conformance were reported
                                        (Vulkan 1.2 or VK_KHR_driver_properties) */
    uint32_t driver_id;              /* VkDriverId; 0 if unknown */
    uint8_t conformance[4];          /* conformanceVersion major.minor.subminor.patch */
    int has_uuid;                    /* device_uuid was reported (Vulkan 1.1 ID properties) */
    uint8_t device_uuid[16];         /* VkPhysicalDeviceIDProperties::deviceUUID */
    uint32_t api_version;
    uint32_t subgroup_size;
    uint32_t subgroup_ops;           /* VkSubgroupFeatureFlags (subgroupSupportedOperations) */
    uint32_t subgroup_stages;        /* VkShaderStageFlags (subgroupSupportedStages) */
    uint32_t max_shared_memory;      /* maxComputeSharedMemorySize, bytes */
    uint32_t max_workgroup_count[3];
    uint32_t max_workgroup_size[3];
    uint32_t max_workgroup_invocations;
    uint64_t max_storage_buffer_range;
    uint64_t max_allocation;         /* maxMemoryAllocationSize (2^30 before Vulkan 1.1) */
    uint64_t min_storage_offset;     /* minStorageBufferOffsetAlignment */
    uint64_t min_texel_offset;       /* minTexelBufferOffsetAlignment */
    uint32_t max_push_constants;
    uint32_t max_texel_elements;     /* maxTexelBufferElements */
    int texel_vec4;                  /* R32G32B32A32_SFLOAT and R16G16B16A16_SFLOAT both have
                                        UNIFORM_TEXEL_BUFFER in bufferFeatures (mandatory) */
    int fp16, fp64, int64, storage16;
    int timestamps;                  /* compute queue supports timestamps */
    uint32_t timestamp_valid_bits;
    double timestamp_period_ns;
    uint32_t n_heaps;
    rlvk_heap_info heaps[RLVK_MAX_HEAPS];
    rlvk_cm_info cm;                 /* cooperative matrices (rlvk_cm_query) */
} rlvk_device_info;

/* Decodes a driverVersion as vulkaninfo does: NVIDIA (vendor 0x10de)
 * 10.8.8.6 bits, Intel (0x8086) on Windows 18.14 bits, everyone else
 * VK_API_VERSION major.minor.patch. Writes "" when cap is too small. */
void rlvk_driver_version_str(uint32_t vendor_id, uint32_t version, char *buf, size_t cap);
/* VkDriverId as its enum suffix ("MESA_LLVMPIPE"); "UNKNOWN" for 0 or a
 * value newer than this table. */
const char *rlvk_driver_id_name(uint32_t driver_id);
/* The 16 UUID bytes as 32 lowercase hex digits plus NUL (33 bytes). */
void rlvk_uuid_hex(const uint8_t uuid[16], char out[33]);

/* Fills info for physical device `index` of the instance. */
rl_status rlvk_device_info_query(const rlvk_instance *inst, uint32_t index,
                                 rlvk_device_info *info, rl_error *err);

/* The deviceUUID (VkPhysicalDeviceIDProperties) of physical device index
 * (< inst->n_physical) into uuid. RL_ERR_UNSUPPORTED: a Vulkan 1.0 device. */
rl_status rlvk_device_uuid(const rlvk_instance *inst, uint32_t index, uint8_t uuid[VK_UUID_SIZE]);

/* Resolves a device spec to physical device indices, in order:
 *   "auto"  — first discrete GPU, else integrated, virtual, CPU, other;
 *   "all"   — every device;
 *   "N"     — index N;
 *   "uuid:U" — the device whose deviceUUID is U (32 hex digits; dashes and a
 *             "GPU-" prefix, as in CUDA_VISIBLE_DEVICES, ignored);
 *   text    — every device whose name contains the text (case-insensitive).
 * out must hold inst->n_physical entries; *count receives how many. */
rl_status rlvk_select(const rlvk_instance *inst, const char *spec, uint32_t *out,
                      uint32_t *count, rl_error *err);

/* ---- persisted pipeline cache (rlvk_pcache.c) --------------------------- */

/* The key a VkPipelineCache blob is valid for: the header fields the Vulkan
 * spec defines (VkPipelineCacheHeaderVersionOne: vendorID, deviceID,
 * pipelineCacheUUID) plus the driver version, which names the file. */
typedef struct rlvk_pcache_key {
    uint32_t vendor_id, device_id, driver_version;
    uint8_t uuid[VK_UUID_SIZE];      /* VkPhysicalDeviceProperties::pipelineCacheUUID */
} rlvk_pcache_key;

/* What happened to a device's persisted cache (for manifest.json). */
typedef struct rlvk_pcache_info {
    int enabled;                     /* persistence was asked for and not disabled */
    char path[1024];                 /* the cache file ("" when disabled) */
    char status[160];                /* "loaded", "none yet", "rejected: <why>", ... */
    uint64_t loaded_bytes;           /* driver data handed to vkCreatePipelineCache */
    uint64_t saved_bytes;            /* driver data written back (0: not written) */
    double load_s, save_s;
} rlvk_pcache_info;

/* The cache directory: $RL_CACHE_DIR, else $XDG_CACHE_HOME/ropelab, else
 * $HOME/.cache/ropelab (XDG base directory rules: a relative XDG_CACHE_HOME
 * is ignored). RL_ERR_ARG when none of them is set. */
rl_status rlvk_cache_dir(char *buf, size_t cap, rl_error *err);
/* dir/pipelines-<vendor>-<device>-<driver version>-<uuid>.bin. */
void rlvk_pcache_path(const char *dir, const rlvk_pcache_key *key, char *buf, size_t cap);
/* Checks a file's bytes: ropelab's wrapper (magic, format version, driver
 * version, data size, FNV-1a checksum of the data), then the driver data's
 * header as the Vulkan spec lays it out (headerSize >= 32, headerVersion
 * ONE, vendorID, deviceID, pipelineCacheUUID equal to the device's). On
 * success *data / *size point into file at the driver data; else why says
 * what did not match and 0 is returned. */
int rlvk_pcache_check(const void *file, size_t file_size, const rlvk_pcache_key *key,
                      const void **data, size_t *size, char *why, size_t cap);
/* Writes driver data (size bytes) with its wrapper to path atomically:
 * path.tmp.<pid>.<n> then rename, so a reader sees the old or the new file,
 * whole; missing directories are created. */
rl_status rlvk_pcache_write(const char *path, const rlvk_pcache_key *key, const void *data,
                            size_t size, rl_error *err);
struct rlvk_device;
/* Used by rlvk_device_create / _destroy: creates dev->pipeline_cache (from
 * the file when persisting), and saves it back. */
rl_status rlvk_pcache_open(struct rlvk_device *dev, rl_error *err);
void rlvk_pcache_close(struct rlvk_device *dev);

/* ---- devices ------------------------------------------------------------ */

typedef struct rlvk_device {
    rlvk_instance *inst;
    VkPhysicalDevice physical;
    rlvk_device_info info;
    VkPhysicalDeviceMemoryProperties memory;
    VkDevice device;
    struct VolkDeviceTable vk;       /* this device's function table */
    uint32_t queue_family;
    VkQueue queue;
    VkCommandPool command_pool;
    VkPipelineCache pipeline_cache;
    VkQueryPool query_pool;          /* RLVK_MAX_TIMESTAMPS entries, or NULL */
    int feat_fp16, feat_fp64, feat_storage16, feat_int64;
    int feat_coopmat_nv;             /* VK_NV_cooperative_matrix enabled with cooperativeMatrix,
                                        vulkanMemoryModel (info.cm usable by attn_cm) */
    int feat_coopmat_khr;            /* VK_KHR_cooperative_matrix enabled likewise (preferred
                                        over NV where both are usable) */
    /* Bytes copied between host and device by rlvk_buffer_upload and
     * rlvk_buffer_download (mapped or staged alike) since the device was
     * created: what a data flow really moves, for tests and reports. */
    uint64_t bytes_uploaded, bytes_downloaded;
    /* Where the device's host time went since it was created (run/ reports
     * the difference over a run): rlvk_pipeline_create (shader module,
     * layouts, vkCreateComputePipelines) and rlvk_cmd_submit_wait (submit
     * to fence: the device's work, and on lavapipe the JIT compile of a
     * pipeline's first dispatch). */
    uint64_t n_pipelines, n_submits;
    uint64_t n_pipelines_reused;     /* rlvk_pipeline_create answered from the table */
    uint64_t n_pipelines_live;       /* VkPipelines existing now (the table's and callers') */
    uint64_t n_pipelines_live_peak;  /* the most that existed at once: what bounds the host
                                        memory of compiled code (~20 MiB each on lavapipe) */
    double pipeline_s, submit_s;
    /* GPU seconds between the first and the last timestamp each submission
     * wrote (rlvk_cmd_timestamp), summed: the device time the work itself
     * measured, for the run's wall/GPU ratio. */
    double gpu_s;
    uint32_t compile_threads;        /* rlvk_pipelines_create's threads; 0 = online CPUs */
    uint32_t compile_threads_used;   /* threads its last call ran (1 = the caller alone) */
    struct rlvk_ptable *ptable;      /* the device's pipeline table (rlvk_pipeline.c) */
    rlvk_pcache_key pcache_key;
    rlvk_pcache_info pcache;
    void *pcache_loaded;             /* driver data as loaded (to skip an unchanged save) */
    size_t pcache_loaded_size;
} rlvk_device;

/* Creates a logical device with one compute queue on physical device index,
 * enabling fp64/int64/16-bit storage where present. With the instance's
 * persist_pipelines its VkPipelineCache starts from the cache file
 * (rlvk_pcache_path in rlvk_cache_dir) when that file checks out (a file
 * that does not is ignored and replaced, never handed to the driver), and
 * rlvk_device_destroy merges what is on disk by then and writes it back
 * when the data changed. dev->pcache says what happened. */
rl_status rlvk_device_create(rlvk_instance *inst, uint32_t index, rlvk_device *dev,
                             rl_error *err);
void rlvk_device_destroy(rlvk_device *dev);

/* Refuses a single buffer binding of `bytes` bytes named `what` if it exceeds
 * maxStorageBufferRange or the largest device-local heap; the message names
 * the limit and its value. */
rl_status rlvk_check_buffer_size(const rlvk_device *dev, uint64_t bytes, const char *what,
                                 rl_error *err);
/* The same without the one-binding limit, for a buffer bound only through
 * windows (rlvk_buffer_window): maxMemoryAllocationSize and the largest
 * device-local heap. */
rl_status rlvk_check_alloc_size(const rlvk_device *dev, uint64_t bytes, const char *what,
                                rl_error *err);

/* Readable name of a VkResult ("VK_ERROR_OUT_OF_DEVICE_MEMORY"). */
const char *rlvk_result_str(VkResult r);
/* Turns a failed VkResult into an rl_error: "<what>: <result>". VK_TIMEOUT and
 * VK_INCOMPLETE count as failures. */
rl_status rlvk_fail(rl_error *err, VkResult r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- buffers ------------------------------------------------------------ */

typedef struct rlvk_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    uint64_t size;
    void *mapped;                    /* non-NULL when host-visible (unified memory) */
    char name[48];
    /* A window (rlvk_buffer_window): bytes [offset, offset + size) of another
     * buffer, bound as that range; owns nothing (memory is VK_NULL_HANDLE;
     * destroy is a no-op), used only for dispatch bindings. */
    uint64_t offset;
    int window;
} rlvk_buffer;

/* A window of b: bytes [offset, offset + bytes) (within b; offset a multiple
 * of the device's minStorageBufferOffsetAlignment and
 * minTexelBufferOffsetAlignment, bytes at most maxStorageBufferRange), bound
 * by rlvk_cmd_dispatch as that range, so one buffer larger than one binding
 * is read a window per dispatch. */
rl_status rlvk_buffer_window(const rlvk_device *dev, const rlvk_buffer *b, uint64_t offset,
                             uint64_t bytes, rlvk_buffer *out, rl_error *err);
/* rlvk_buffer_create without the one-binding limit (rlvk_check_alloc_size):
 * for buffers bound only through windows. */
rl_status rlvk_buffer_create_large(rlvk_device *dev, uint64_t size, const char *name,
                                   rlvk_buffer *buf, rl_error *err);

/* Creates a storage buffer of `size` bytes in device-local memory, preferring
 * memory that is also host-visible (CPU and unified-memory devices) so it can
 * be mapped; otherwise uploads/downloads go through a staging buffer. */
rl_status rlvk_buffer_create(rlvk_device *dev, uint64_t size, const char *name,
                             rlvk_buffer *buf, rl_error *err);
void rlvk_buffer_destroy(rlvk_device *dev, rlvk_buffer *buf);
rl_status rlvk_buffer_upload(rlvk_device *dev, rlvk_buffer *buf, uint64_t offset,
                             const void *src, uint64_t bytes, rl_error *err);
rl_status rlvk_buffer_download(rlvk_device *dev, const rlvk_buffer *buf, uint64_t offset,
                               void *dst, uint64_t bytes, rl_error *err);

/* ---- pipelines ---------------------------------------------------------- */

/* Every ropelab kernel's push-constant block starts with `uint group_base`
 * (see shaders/rl_push.h): the dispatch helper writes it when it splits a
 * large 1-D grid into several dispatches. Specialization constant 0 is
 * local_size_x; constants 1.. are the kernel's own. */
/* A uniform texel buffer binding: the shader's `binding` reads storage
 * buffer bufs[source] of the same dispatch as texels of `format`
 * (R32G32B32A32_SFLOAT or R16G16B16A16_SFLOAT) through a view of the
 * buffer from offset 0, at most maxTexelBufferElements texels long (the
 * caller keeps its reads within the view: rlvk_texel_fits). */
typedef struct rlvk_texel_binding {
    uint32_t binding, source;
    VkFormat format;
} rlvk_texel_binding;
#define RLVK_MAX_TEXEL 8

/* Bytes per texel of a format rlvk_texel_binding takes (0 for others). */
uint32_t rlvk_texel_bytes(VkFormat format);
/* 1 when texels [0, count) fit one view under max_elements
 * (maxTexelBufferElements) and below 2^31, so a GLSL int indexes them. */
int rlvk_texel_count_fits(uint32_t max_elements, uint64_t count);
/* The same on this device, which must also have both vec4 texel formats. */
int rlvk_texel_fits(const rlvk_device_info *info, uint64_t count);
/* 1 when kernels should read per-lane data through texel views on this
 * device: a CPU driver with both vec4 formats. lavapipe turns a
 * storage-buffer read at a per-lane address into a loop over the lanes and
 * a texel fetch into a branch-free gather (docs/performance.md "Issue 17:
 * texel reads", docs/rope.md "Texel reads"); GPUs read storage buffers
 * (coalesced; texel reads not measured there). The one rule the attention
 * path, the RoPE kernel and the copy yardstick follow. */
int rlvk_texel_reads_preferred(const rlvk_device_info *info);

typedef struct rlvk_pipeline_desc {
    const char *name;
    const uint32_t *spirv;
    size_t spirv_bytes;
    uint32_t n_bindings;             /* storage buffers at bindings 0..n-1 */
    uint32_t push_bytes;
    uint32_t local_size_x;           /* 0 = 64 */
    uint32_t n_spec;                 /* specialization constants 1..n_spec */
    const uint32_t *spec;            /* 32-bit values (uint, int, float bits) */
    uint32_t n_texel;                /* uniform texel buffers (0..RLVK_MAX_TEXEL) */
    const rlvk_texel_binding *texel;
} rlvk_pipeline_desc;

typedef struct rlvk_pipeline {
    char name[48];
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    uint32_t n_bindings, push_bytes, local_size_x;
    uint32_t n_texel;
    rlvk_texel_binding texel[RLVK_MAX_TEXEL];
    int shared;                      /* held by the device's pipeline table */
} rlvk_pipeline;

/* Creates a compute pipeline, or hands out the one the device's pipeline
 * table already holds for the same SPIR-V (address, size and FNV-1a hash),
 * specialization constants, workgroup size, bindings and push-constant size:
 * runs of one batch on one worker then compile each variant once. The
 * table (RLVK_PTABLE_SIZE entries, least recently used unused entry
 * replaced and released; a full table of pipelines in use gives an unshared
 * one) lives until rlvk_device_destroy. Its size bounds what a batch keeps:
 * a lavapipe attention pipeline holds ~20 MiB of host memory, so the 64 of
 * the first table made a 50-shape batch grow to 1.3 GiB; 24 (with the
 * attention engine's 12 handles) keep it under the bound
 * tests/test_vk.c and docs/runner.md state. dev->n_pipelines counts pipelines created,
 * dev->n_pipelines_reused answers from the table. */
#define RLVK_PTABLE_SIZE 24
rl_status rlvk_pipeline_create(rlvk_device *dev, const rlvk_pipeline_desc *desc,
                               rlvk_pipeline *pipe, rl_error *err);
/* Creates the n pipelines descs[0..n-1] into pipes[0..n-1] as n calls of
 * rlvk_pipeline_create would (same table, same sharing, same counters),
 * but compiles the ones the table does not hold yet concurrently: one
 * thread per pipeline up to rlvk_compile_threads(dev), the calling thread
 * among them, each key once. On lavapipe vkCreateComputePipelines runs the
 * whole NIR compile on the calling thread, so a run's pipelines cost the
 * longest of them instead of their sum. A thread that cannot be started
 * leaves its share to the others. On failure nothing is held: every
 * pipeline this call made is released, pipes are zeroed, and err is the
 * message of the failing desc with the lowest index (it names the
 * pipeline). dev->pipeline_s counts the call's wall time. */
#define RLVK_MAX_COMPILE_THREADS 8
rl_status rlvk_pipelines_create(rlvk_device *dev, uint32_t n, const rlvk_pipeline_desc *descs,
                                rlvk_pipeline *pipes, rl_error *err);
/* Threads rlvk_pipelines_create uses: dev->compile_threads if set, else
 * $RL_COMPILE_THREADS if set (1: one after the other, as before), else the
 * calling thread plus one per idle core (online CPUs minus the 1-minute
 * load average, rounded); at most RLVK_MAX_COMPILE_THREADS. */
uint32_t rlvk_compile_threads(const rlvk_device *dev);
/* Releases pipe (a table entry stays with the device for the next user). */
void rlvk_pipeline_destroy(rlvk_device *dev, rlvk_pipeline *pipe);
/* Destroys the device's table (rlvk_device_destroy calls it). */
void rlvk_ptable_destroy(rlvk_device *dev);

/* ---- recording, dispatch, timing --------------------------------------- */

/* A texel buffer view a command made (rlvk_cmd_dispatch), and of what. */
typedef struct rlvk_cmd_view {
    VkBufferView view;
    VkBuffer buffer;
    VkFormat format;
    uint64_t offset;                 /* the window's start (0: the whole buffer) */
    uint64_t bytes;                  /* the view's range */
} rlvk_cmd_view;

typedef struct rlvk_cmd {
    rlvk_device *dev;
    VkCommandBuffer cb;
    VkDescriptorPool pool;
    VkFence fence;
    uint32_t n_timestamps;
    uint64_t written;                /* bit s: slot s written in this command buffer */
    uint32_t sets_used, sets_cap;
    /* texel buffer views made for this command's dispatches, one per
     * (buffer, format), destroyed with it */
    rlvk_cmd_view *views;
    uint32_t n_views, cap_views;
} rlvk_cmd;

/* Begins a one-time command buffer with room for `max_dispatches` descriptor
 * sets. */
rl_status rlvk_cmd_begin(rlvk_device *dev, uint32_t max_dispatches, rlvk_cmd *cmd,
                         rl_error *err);
/* Records a 1-D dispatch of n_groups workgroups of `pipe` over `bufs` (and
 * the texel views of pipe's texel bindings, made once per command), split
 * into several vkCmdDispatch calls of at most maxComputeWorkGroupCount[0]
 * groups, each told its first group through push word 0 (group_base). A
 * compute→compute barrier follows, so the next dispatch sees the results. */
rl_status rlvk_cmd_dispatch(rlvk_cmd *cmd, const rlvk_pipeline *pipe,
                            const rlvk_buffer *const *bufs, const void *push,
                            uint64_t n_groups, rl_error *err);
/* Records a fill of `bytes` bytes of `buf` from `offset` (both multiples of
 * 4; bytes 0 = to the end) with the 32-bit word `word`, then a barrier so
 * later dispatches and copies see it. */
void rlvk_cmd_fill(rlvk_cmd *cmd, const rlvk_buffer *buf, uint64_t offset, uint64_t bytes,
                   uint32_t word);
/* Writes timestamp slot `slot` (< RLVK_MAX_TIMESTAMPS) after all prior work. */
void rlvk_cmd_timestamp(rlvk_cmd *cmd, uint32_t slot);
/* Ends, submits, waits (bounded; a timeout is an error) and reads timestamps. */
rl_status rlvk_cmd_submit_wait(rlvk_cmd *cmd, rl_error *err);
/* GPU nanoseconds between two timestamp slots of the last submission,
 * masked to timestampValidBits and scaled by timestampPeriod in double. */
rl_status rlvk_cmd_elapsed_ns(const rlvk_cmd *cmd, uint32_t a, uint32_t b, double *ns,
                              rl_error *err);
void rlvk_cmd_destroy(rlvk_cmd *cmd);

/* Groups needed for `items` invocations of `local` threads each. */
static inline uint64_t rlvk_groups(uint64_t items, uint32_t local)
{
    return (items + local - 1) / local;
}

#endif
