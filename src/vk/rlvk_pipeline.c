/* Compute pipelines from embedded SPIR-V, with specialization constants and
 * push constants; storage buffers at bindings 0..n-1 of set 0, plus the
 * uniform texel buffers a desc names (views of those storage buffers). */
#define _DEFAULT_SOURCE /* getloadavg */
#include "vk/rlvk.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    uint32_t n_texel;
    rlvk_texel_binding texel[RLVK_MAX_TEXEL];
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
    k->n_texel = d->n_texel;
    for (uint32_t i = 0; i < d->n_texel && i < RLVK_MAX_TEXEL; i++)
        k->texel[i] = d->texel[i];
}

uint32_t rlvk_texel_bytes(VkFormat format)
{
    switch (format) {
    case VK_FORMAT_R32G32B32A32_SFLOAT:
        return 16;
    case VK_FORMAT_R16G16B16A16_SFLOAT:
        return 8;
    default:
        return 0;
    }
}

int rlvk_texel_count_fits(uint32_t max_elements, uint64_t count)
{
    return count <= max_elements && count <= INT32_MAX;
}

int rlvk_texel_fits(const rlvk_device_info *info, uint64_t count)
{
    return info->texel_vec4 && rlvk_texel_count_fits(info->max_texel_elements, count);
}

int rlvk_texel_reads_preferred(const rlvk_device_info *info)
{
    return info->vk_type == VK_PHYSICAL_DEVICE_TYPE_CPU && info->texel_vec4;
}

/* The table entry holding key, or NULL (descs with more than 15
 * constants are never shared). */
static ptable_entry *table_find(struct rlvk_ptable *t, const rlvk_pipeline_desc *desc,
                                const ptable_key *key)
{
    for (uint32_t i = 0; t && desc->n_spec <= 15 && i < RLVK_PTABLE_SIZE; i++)
        if (t->e[i].used && memcmp(&t->e[i].key, key, sizeof *key) == 0)
            return &t->e[i];
    return NULL;
}

/* One more VkPipeline exists (counted single-threaded: after
 * pipeline_create, or after the compile threads joined). */
static void live_add(rlvk_device *dev)
{
    if (++dev->n_pipelines_live > dev->n_pipelines_live_peak)
        dev->n_pipelines_live_peak = dev->n_pipelines_live;
}

/* Hands out a table entry's pipeline under desc's name. */
static void table_hand_out(rlvk_device *dev, ptable_entry *e, const rlvk_pipeline_desc *desc,
                           rlvk_pipeline *pipe)
{
    *pipe = e->pipe;
    snprintf(pipe->name, sizeof pipe->name, "%s", desc->name);
    e->refs++;
    e->last_use = ++dev->ptable->clock;
    dev->n_pipelines_reused++;
}

/* Puts a freshly created pipeline into the table (a free entry, else the
 * least recently used one nobody holds, whose pipeline is released) and
 * marks it shared; with no such entry pipe stays the caller's own. */
static void table_insert(rlvk_device *dev, const rlvk_pipeline_desc *desc, const ptable_key *key,
                         rlvk_pipeline *pipe)
{
    struct rlvk_ptable *t = dev->ptable;
    ptable_entry *slot = NULL;
    for (uint32_t i = 0; t && desc->n_spec <= 15 && i < RLVK_PTABLE_SIZE; i++) {
        ptable_entry *e = &t->e[i];
        if (!e->used) { /* a free entry beats any replacement */
            if (!slot || slot->used)
                slot = e;
        } else if (!e->refs && (!slot || (slot->used && e->last_use < slot->last_use))) {
            slot = e;
        }
    }
    if (!slot)
        return;
    if (slot->used) /* the least recently used pipeline nobody holds */
        pipeline_release(dev, &slot->pipe);
    pipe->shared = 1;
    slot->pipe = *pipe;
    slot->used = 1;
    slot->key = *key;
    slot->refs = 1;
    slot->last_use = ++t->clock;
}

rl_status rlvk_pipeline_create(rlvk_device *dev, const rlvk_pipeline_desc *desc,
                               rlvk_pipeline *pipe, rl_error *err)
{
    double t0 = rl_now();
    if (!dev->ptable)
        dev->ptable = calloc(1, sizeof *dev->ptable);
    ptable_key key;
    make_key(desc, &key);
    ptable_entry *hit = table_find(dev->ptable, desc, &key);
    if (hit) {
        table_hand_out(dev, hit, desc, pipe);
        dev->pipeline_s += rl_now() - t0;
        return RL_OK;
    }
    rl_status st = pipeline_create(dev, desc, pipe, err);
    if (!st) {
        live_add(dev);
        table_insert(dev, desc, &key, pipe);
    }
    dev->pipeline_s += rl_now() - t0;
    dev->n_pipelines += st == RL_OK;
    return st;
}

/* ---- several pipelines at once, compiled in parallel ------------------- */

typedef struct compile_job {
    rlvk_device *dev;
    const rlvk_pipeline_desc *desc;
    rlvk_pipeline pipe;
    rl_status st;
    rl_error err;
} compile_job;

typedef struct compile_pool {
    compile_job *jobs;
    uint32_t n;
    atomic_uint next;                /* the next job nobody has taken */
} compile_pool;

/* A compiling thread (and the calling one): takes jobs until none is left.
 * pipeline_create touches only its own job and the device's Vulkan objects
 * (vkCreate* on one VkDevice from several threads is allowed; the
 * VkPipelineCache is internally synchronized), never the table. */
static void *compile_worker(void *arg)
{
    compile_pool *p = arg;
    for (uint32_t i; (i = atomic_fetch_add(&p->next, 1u)) < p->n;) {
        compile_job *j = &p->jobs[i];
        j->st = pipeline_create(j->dev, j->desc, &j->pipe, &j->err);
    }
    return NULL;
}

uint32_t rlvk_compile_threads(const rlvk_device *dev)
{
    long n = dev->compile_threads;
    const char *env = getenv("RL_COMPILE_THREADS");
    if (!n && env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end || v < 1) /* said, not silently replaced: the default follows */
            fprintf(stderr, "ropelab: RL_COMPILE_THREADS '%s' is not a whole number >= 1; "
                            "compiling on the default thread count (the caller + idle cores)\n",
                    env);
        else
            n = v;
    }
    if (!n) {
        /* The calling thread plus one per idle core: on a saturated
         * machine (lavapipe, 2 shared cores) two concurrent compiles took
         * longer than one after the other (docs/runner.md "Timing"), so
         * extra threads only pay where a core would idle. */
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        double load[1];
        n = cpus;
        if (getloadavg(load, 1) == 1 && load[0] >= 0) {
            long idle = (long)((double)cpus - load[0] + 0.5);
            n = 1 + (idle > 0 ? idle : 0);
            n = n > cpus ? cpus : n;
        }
    }
    return n < 1 ? 1u : n > RLVK_MAX_COMPILE_THREADS ? RLVK_MAX_COMPILE_THREADS : (uint32_t)n;
}

rl_status rlvk_pipelines_create(rlvk_device *dev, uint32_t n, const rlvk_pipeline_desc *descs,
                                rlvk_pipeline *pipes, rl_error *err)
{
    double t0 = rl_now();
    if (!dev->ptable)
        dev->ptable = calloc(1, sizeof *dev->ptable);
    ptable_key *keys = calloc(n ? n : 1, sizeof *keys);
    int32_t *job_of = calloc(n ? n : 1, sizeof *job_of); /* -1: from the table */
    compile_job *jobs = calloc(n ? n : 1, sizeof *jobs);
    rl_status st = RL_OK;
    memset(pipes, 0, n * sizeof *pipes);
    if (!keys || !job_of || !jobs) {
        st = rl_fail(err, RL_ERR_NOMEM, "out of host memory for %u pipelines", n);
        goto done;
    }
    /* What to compile: every desc the table does not hold, once per key. */
    uint32_t n_jobs = 0;
    for (uint32_t i = 0; i < n; i++) {
        make_key(&descs[i], &keys[i]);
        job_of[i] = -1;
        if (table_find(dev->ptable, &descs[i], &keys[i]))
            continue;
        for (uint32_t j = 0; j < i && job_of[i] < 0; j++)
            if (job_of[j] >= 0 && descs[i].n_spec <= 15 &&
                memcmp(&keys[j], &keys[i], sizeof keys[i]) == 0)
                job_of[i] = job_of[j];
        if (job_of[i] < 0) {
            jobs[n_jobs] = (compile_job){.dev = dev, .desc = &descs[i]};
            job_of[i] = (int32_t)n_jobs++;
        }
    }
    compile_pool pool = {.jobs = jobs, .n = n_jobs};
    atomic_init(&pool.next, 0u);
    pthread_t tids[RLVK_MAX_COMPILE_THREADS];
    uint32_t want = rlvk_compile_threads(dev), started = 0;
    /* The calling thread compiles too; a thread that cannot be started
     * leaves its share to the others (slower, same pipelines). */
    for (uint32_t t = 1; t < want && t < n_jobs; t++)
        if (pthread_create(&tids[started], NULL, compile_worker, &pool) == 0)
            started++;
    compile_worker(&pool);
    for (uint32_t t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    dev->compile_threads_used = started + 1;
    for (uint32_t j = 0; j < n_jobs; j++)
        if (!jobs[j].st && jobs[j].pipe.pipeline)
            live_add(dev);
    /* A failure: the first failing desc (lowest index) is reported by its
     * name, and every pipeline this call created is released. */
    for (uint32_t j = 0; j < n_jobs && !st; j++)
        if (jobs[j].st) {
            st = jobs[j].st;
            if (err)
                *err = jobs[j].err;
        }
    if (st) {
        for (uint32_t j = 0; j < n_jobs; j++)
            if (!jobs[j].st)
                pipeline_release(dev, &jobs[j].pipe);
        goto done;
    }
    /* Handed out as rlvk_pipeline_create would have: first what the table
     * held (referenced before any insertion below can evict an entry nobody
     * holds), then the new pipelines into the table in desc order — the
     * first user of a key gets it, later ones share it. */
    for (uint32_t i = 0; i < n; i++)
        if (job_of[i] < 0)
            table_hand_out(dev, table_find(dev->ptable, &descs[i], &keys[i]), &descs[i], &pipes[i]);
    for (uint32_t i = 0; i < n; i++) {
        if (job_of[i] < 0)
            continue;
        compile_job *j = &jobs[job_of[i]];
        if (j->pipe.pipeline) { /* first user: the new pipeline itself */
            pipes[i] = j->pipe;
            memset(&j->pipe, 0, sizeof j->pipe);
            table_insert(dev, &descs[i], &keys[i], &pipes[i]);
            dev->n_pipelines++;
            continue;
        }
        ptable_entry *hit = table_find(dev->ptable, &descs[i], &keys[i]);
        if (hit) {
            table_hand_out(dev, hit, &descs[i], &pipes[i]);
            continue;
        }
        /* Its twin found no table entry (all in use): one of its own. */
        if ((st = pipeline_create(dev, &descs[i], &pipes[i], err)))
            break;
        live_add(dev);
        dev->n_pipelines++;
    }
    if (st) {
        for (uint32_t i = 0; i < n; i++)
            rlvk_pipeline_destroy(dev, &pipes[i]);
        for (uint32_t j = 0; j < n_jobs; j++) /* not handed out yet */
            pipeline_release(dev, &jobs[j].pipe);
    }
done:
    free(jobs);
    free(job_of);
    free(keys);
    dev->pipeline_s += rl_now() - t0;
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

/* RL_PIPELINE_LOG=FILE: one line "SECONDS NAME" appended per pipeline the
 * driver was asked to create: which variants a run asks for, and on drivers
 * that compile at creation what each cost (lavapipe compiles at the first
 * dispatch instead). One write per line
 * (O_APPEND), so processes and threads sharing FILE do not interleave. */
static void log_compile(const char *name, double s)
{
    const char *path = getenv("RL_PIPELINE_LOG");
    if (!path || !*path)
        return;
    char line[256];
    int n = snprintf(line, sizeof line, "%.4f %s\n", s, name ? name : "?");
    if (n <= 0)
        return;
    if ((size_t)n >= sizeof line)
        n = (int)sizeof line - 1;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return;
    ssize_t w = write(fd, line, (size_t)n);
    (void)w;
    close(fd);
}

static rl_status pipeline_create(rlvk_device *dev, const rlvk_pipeline_desc *desc,
                                 rlvk_pipeline *pipe, rl_error *err)
{
    memset(pipe, 0, sizeof *pipe);
    snprintf(pipe->name, sizeof pipe->name, "%s", desc->name);
    if (desc->n_bindings > RLVK_MAX_BINDINGS || desc->n_spec > 15 ||
        desc->n_texel > RLVK_MAX_TEXEL)
        return rl_fail(err, RL_ERR_ARG, "pipeline %s: too many bindings or constants", desc->name);
    for (uint32_t i = 0; i < desc->n_texel; i++)
        if (desc->texel[i].source >= desc->n_bindings || desc->texel[i].binding < desc->n_bindings ||
            !rlvk_texel_bytes(desc->texel[i].format))
            return rl_fail(err, RL_ERR_ARG,
                           "pipeline %s: texel binding %u (of buffer %u, format %d) is not one "
                           "rlvk makes", desc->name, desc->texel[i].binding, desc->texel[i].source,
                           (int)desc->texel[i].format);
    pipe->n_bindings = desc->n_bindings;
    pipe->n_texel = desc->n_texel;
    for (uint32_t i = 0; i < desc->n_texel; i++)
        pipe->texel[i] = desc->texel[i];
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

    VkDescriptorSetLayoutBinding binds[RLVK_MAX_BINDINGS + RLVK_MAX_TEXEL];
    for (uint32_t i = 0; i < desc->n_bindings; i++)
        binds[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    for (uint32_t i = 0; i < desc->n_texel; i++)
        binds[desc->n_bindings + i] = (VkDescriptorSetLayoutBinding){
            .binding = desc->texel[i].binding,
            .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    VkDescriptorSetLayoutCreateInfo dli = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = desc->n_bindings + desc->n_texel,
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
    double t0 = rl_now();
    r = dev->vk.vkCreateComputePipelines(dev->device, dev->pipeline_cache, 1, &cpi, NULL,
                                         &pipe->pipeline);
    log_compile(desc->name, rl_now() - t0);
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
    if (pipe->pipeline) {
        dev->vk.vkDestroyPipeline(dev->device, pipe->pipeline, NULL);
        dev->n_pipelines_live--;
    }
    if (pipe->layout)
        dev->vk.vkDestroyPipelineLayout(dev->device, pipe->layout, NULL);
    if (pipe->set_layout)
        dev->vk.vkDestroyDescriptorSetLayout(dev->device, pipe->set_layout, NULL);
    if (pipe->module)
        dev->vk.vkDestroyShaderModule(dev->device, pipe->module, NULL);
    memset(pipe, 0, sizeof *pipe);
}
