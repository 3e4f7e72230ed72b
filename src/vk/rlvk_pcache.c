/* rlvk_pcache.c — the VkPipelineCache persisted between processes.
 *
 * One file per device key in the cache directory ($RL_CACHE_DIR, else
 * $XDG_CACHE_HOME/ropelab, else ~/.cache/ropelab):
 *
 *   offset  0  "RLPC"                      magic
 *           4  u32 1                       this wrapper's format version
 *           8  u32 driverVersion           of the device that wrote it
 *          12  u32 0                       reserved
 *          16  u64 n                       bytes of driver data that follow
 *          24  u64 FNV-1a 64 of the data   (truncation, bit rot)
 *          32  n bytes: vkGetPipelineCacheData's output, which starts with
 *              the spec's VkPipelineCacheHeaderVersionOne (headerSize,
 *              headerVersion, vendorID, deviceID, pipelineCacheUUID)
 *
 * all integers little-endian. A file is handed to the driver only when the
 * wrapper and the spec header both match this device; the file is written
 * to a temporary name and renamed, so concurrent processes each see a whole
 * file, and a writer first merges what another process saved meanwhile. */
#include "vk/rlvk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/rl_util.h"

#define WRAP_BYTES 32u
#define SPEC_HEADER_BYTES 32u /* VkPipelineCacheHeaderVersionOne */
#define MAX_CACHE_BYTES (256u << 20)

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

rl_status rlvk_cache_dir(char *buf, size_t cap, rl_error *err)
{
    const char *d = getenv("RL_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    int n;
    if (d && *d)
        n = snprintf(buf, cap, "%s", d);
    else if (x && x[0] == '/') /* XDG: a relative path is invalid and ignored */
        n = snprintf(buf, cap, "%s/ropelab", x);
    else if (h && *h)
        n = snprintf(buf, cap, "%s/.cache/ropelab", h);
    else
        return rl_fail(err, RL_ERR_ARG,
                       "no cache directory: set RL_CACHE_DIR, XDG_CACHE_HOME or HOME");
    if (n < 0 || (size_t)n >= cap)
        return rl_fail(err, RL_ERR_LIMIT, "cache directory path longer than %zu bytes", cap - 1);
    return RL_OK;
}

void rlvk_pcache_path(const char *dir, const rlvk_pcache_key *key, char *buf, size_t cap)
{
    char uuid[33];
    rlvk_uuid_hex(key->uuid, uuid);
    snprintf(buf, cap, "%s/pipelines-%04x-%04x-%08x-%s.bin", dir, key->vendor_id, key->device_id,
             key->driver_version, uuid);
}

int rlvk_pcache_check(const void *file, size_t file_size, const rlvk_pcache_key *key,
                      const void **data, size_t *size, char *why, size_t cap)
{
    const uint8_t *f = file;
    if (file_size < WRAP_BYTES + SPEC_HEADER_BYTES) {
        snprintf(why, cap, "%zu bytes, shorter than the %u-byte headers", file_size,
                 WRAP_BYTES + SPEC_HEADER_BYTES);
        return 0;
    }
    if (memcmp(f, "RLPC", 4) != 0 || get32(f + 4) != 1) {
        snprintf(why, cap, "not a ropelab pipeline cache (magic or format version)");
        return 0;
    }
    uint64_t n = get64(f + 16);
    if (n != file_size - WRAP_BYTES) {
        snprintf(why, cap, "records %llu data bytes but holds %zu (truncated?)",
                 (unsigned long long)n, file_size - WRAP_BYTES);
        return 0;
    }
    const uint8_t *d = f + WRAP_BYTES;
    if (rl_hash64(d, (size_t)n, 0xcbf29ce484222325ull) != get64(f + 24)) {
        snprintf(why, cap, "checksum mismatch (corrupt data)");
        return 0;
    }
    if (get32(f + 8) != key->driver_version) {
        snprintf(why, cap, "written by driver version 0x%08x, this is 0x%08x", get32(f + 8),
                 key->driver_version);
        return 0;
    }
    /* the spec's header (Vulkan 1.3 §10.7.4, VkPipelineCacheHeaderVersionOne) */
    uint32_t hsize = get32(d), hver = get32(d + 4), vendor = get32(d + 8), device = get32(d + 12);
    if (hsize < SPEC_HEADER_BYTES || hsize > n) {
        snprintf(why, cap, "header size %u outside [%u, %llu]", hsize, SPEC_HEADER_BYTES,
                 (unsigned long long)n);
        return 0;
    }
    if (hver != VK_PIPELINE_CACHE_HEADER_VERSION_ONE) {
        snprintf(why, cap, "header version %u, not VK_PIPELINE_CACHE_HEADER_VERSION_ONE", hver);
        return 0;
    }
    if (vendor != key->vendor_id || device != key->device_id) {
        snprintf(why, cap, "for vendor 0x%04x device 0x%04x, this is 0x%04x 0x%04x", vendor,
                 device, key->vendor_id, key->device_id);
        return 0;
    }
    if (memcmp(d + 16, key->uuid, VK_UUID_SIZE) != 0) {
        snprintf(why, cap, "pipelineCacheUUID differs from the device's");
        return 0;
    }
    *data = d;
    *size = (size_t)n;
    return 1;
}

/* mkdir -p of path's parent directory. */
static rl_status make_parent(const char *path, rl_error *err)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return RL_OK;
    *slash = '\0';
    for (char *p = dir + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(dir, 0755) != 0 && errno != EEXIST)
                return rl_fail(err, RL_ERR_IO, "%s: cannot create the cache directory: %s", dir,
                               strerror(errno));
            *p = c;
            if (!c)
                break;
        }
    }
    return RL_OK;
}

rl_status rlvk_pcache_write(const char *path, const rlvk_pcache_key *key, const void *data,
                            size_t size, rl_error *err)
{
    static unsigned counter; /* distinct temporaries for devices of one process */
    rl_status st = make_parent(path, err);
    if (st)
        return st;
    uint8_t wrap[WRAP_BYTES] = {'R', 'L', 'P', 'C'};
    put32(wrap + 4, 1);
    put32(wrap + 8, key->driver_version);
    put64(wrap + 16, size);
    put64(wrap + 24, rl_hash64(data, size, 0xcbf29ce484222325ull));
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(),
             __atomic_fetch_add(&counter, 1u, __ATOMIC_RELAXED));
    FILE *fp = fopen(tmp, "wb");
    if (!fp)
        return rl_fail(err, RL_ERR_IO, "%s: cannot write: %s", tmp, strerror(errno));
    int ok = fwrite(wrap, 1, sizeof wrap, fp) == sizeof wrap &&
             (size == 0 || fwrite(data, 1, size, fp) == size);
    ok &= fflush(fp) == 0 && fsync(fileno(fp)) == 0;
    ok &= fclose(fp) == 0;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return rl_fail(err, RL_ERR_IO, "%s: cannot write the pipeline cache: %s", path,
                       strerror(e));
    }
    return RL_OK;
}

/* The file's bytes (caller frees), or NULL when absent/unreadable (why). */
static uint8_t *read_all(const char *path, size_t *size, char *why, size_t cap)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(why, cap, errno == ENOENT ? "none yet" : "unreadable: %s", strerror(errno));
        return NULL;
    }
    uint8_t *buf = NULL;
    long n = -1;
    if (fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) >= 0 && fseek(fp, 0, SEEK_SET) == 0 &&
        (size_t)n <= MAX_CACHE_BYTES && (buf = malloc((size_t)n + 1)) &&
        fread(buf, 1, (size_t)n, fp) == (size_t)n) {
        fclose(fp);
        *size = (size_t)n;
        return buf;
    }
    fclose(fp);
    free(buf);
    snprintf(why, cap, n > (long)MAX_CACHE_BYTES ? "rejected: larger than 256 MiB"
                                                 : "rejected: read error");
    return NULL;
}

/* The checked driver data of the cache file (a malloc'd copy) or NULL. */
static void *load_checked(const rlvk_device *dev, size_t *size, char *status, size_t cap)
{
    size_t fsize = 0;
    char why[160];
    uint8_t *f = read_all(dev->pcache.path, &fsize, status, cap);
    if (!f)
        return NULL;
    const void *d;
    size_t n;
    void *copy = NULL;
    if (!rlvk_pcache_check(f, fsize, &dev->pcache_key, &d, &n, why, sizeof why))
        snprintf(status, cap, "rejected: %.140s", why);
    else if ((copy = malloc(n ? n : 1)))
        memcpy(copy, d, n), *size = n;
    free(f);
    return copy;
}

rl_status rlvk_pcache_open(rlvk_device *dev, rl_error *err)
{
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(dev->physical, &p);
    dev->pcache_key = (rlvk_pcache_key){.vendor_id = p.vendorID, .device_id = p.deviceID,
                                        .driver_version = p.driverVersion};
    memcpy(dev->pcache_key.uuid, p.pipelineCacheUUID, VK_UUID_SIZE);
    rlvk_pcache_info *pc = &dev->pcache;
    char dir[900];
    pc->enabled = dev->inst && dev->inst->persist_pipelines &&
                  rlvk_cache_dir(dir, sizeof dir, NULL) == RL_OK;
    snprintf(pc->status, sizeof pc->status, "disabled");
    void *data = NULL;
    size_t size = 0;
    if (pc->enabled) {
        double t0 = rl_now();
        rlvk_pcache_path(dir, &dev->pcache_key, pc->path, sizeof pc->path);
        data = load_checked(dev, &size, pc->status, sizeof pc->status);
        pc->load_s = rl_now() - t0;
    }
    VkPipelineCacheCreateInfo cci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                     .initialDataSize = size, .pInitialData = data};
    VkResult r = dev->vk.vkCreatePipelineCache(dev->device, &cci, NULL, &dev->pipeline_cache);
    if (r != VK_SUCCESS && data) {
        /* the driver refused data it wrote itself: start empty */
        snprintf(pc->status, sizeof pc->status, "rejected by the driver: %s", rlvk_result_str(r));
        free(data), data = NULL, size = 0;
        cci.initialDataSize = 0, cci.pInitialData = NULL;
        r = dev->vk.vkCreatePipelineCache(dev->device, &cci, NULL, &dev->pipeline_cache);
    }
    if (r != VK_SUCCESS) {
        dev->pipeline_cache = VK_NULL_HANDLE;
        free(data);
        return rlvk_fail(err, r, "creating a pipeline cache on %s", dev->info.name);
    }
    if (data) {
        snprintf(pc->status, sizeof pc->status, "loaded");
        pc->loaded_bytes = size;
    }
    dev->pcache_loaded = data;
    dev->pcache_loaded_size = size;
    return RL_OK;
}

/* The cache's data now (caller frees), or NULL. */
static void *cache_data(rlvk_device *dev, VkPipelineCache c, size_t *size)
{
    size_t n = 0;
    if (dev->vk.vkGetPipelineCacheData(dev->device, c, &n, NULL) != VK_SUCCESS)
        return NULL;
    void *d = malloc(n ? n : 1);
    if (d && dev->vk.vkGetPipelineCacheData(dev->device, c, &n, d) != VK_SUCCESS)
        free(d), d = NULL;
    *size = n;
    return d;
}

void rlvk_pcache_close(rlvk_device *dev)
{
    rlvk_pcache_info *pc = &dev->pcache;
    if (!pc->enabled || !dev->pipeline_cache) {
        free(dev->pcache_loaded), dev->pcache_loaded = NULL;
        return;
    }
    double t0 = rl_now();
    size_t n = 0;
    void *d = cache_data(dev, dev->pipeline_cache, &n);
    int changed = d && (n != dev->pcache_loaded_size ||
                        (n && memcmp(d, dev->pcache_loaded, n) != 0));
    if (changed) {
        /* another process may have saved since we loaded: merge its file in
         * so its pipelines are not lost (the driver deduplicates) */
        char status[160];
        size_t on = 0;
        void *other = load_checked(dev, &on, status, sizeof status);
        if (other && (on != dev->pcache_loaded_size || memcmp(other, dev->pcache_loaded, on))) {
            VkPipelineCacheCreateInfo cci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                             .initialDataSize = on, .pInitialData = other};
            VkPipelineCache oc;
            if (dev->vk.vkCreatePipelineCache(dev->device, &cci, NULL, &oc) == VK_SUCCESS) {
                if (dev->vk.vkMergePipelineCaches(dev->device, dev->pipeline_cache, 1, &oc) ==
                    VK_SUCCESS) {
                    free(d);
                    d = cache_data(dev, dev->pipeline_cache, &n);
                }
                dev->vk.vkDestroyPipelineCache(dev->device, oc, NULL);
            }
        }
        free(other);
        rl_error err = {0};
        if (d && rlvk_pcache_write(pc->path, &dev->pcache_key, d, n, &err) == RL_OK)
            pc->saved_bytes = n;
        else if (d)
            snprintf(pc->status, sizeof pc->status, "not saved: %.140s", err.msg);
    }
    pc->save_s = rl_now() - t0;
    free(d);
    free(dev->pcache_loaded), dev->pcache_loaded = NULL;
}
