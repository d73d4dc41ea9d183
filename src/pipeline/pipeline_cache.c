/* The pipelines of a context, and the VkPipelineCache behind them: read from a file or the
 * caller's data at creation, written back to the file when pipelines were created.
 *
 * Pipeline cache data (the file's bytes, and what vkattn_context_pipeline_cache_data gives):
 *
 *   offset  bytes
 *        0      8  "VKATTNPC"                              magic
 *        8      4  1                                       format version
 *       12      4  32                                      bytes of this header
 *       16      8  n                                       bytes of Vulkan data that follow
 *       24      8  64-bit FNV-1a of those n bytes          (a torn or corrupt file shows here)
 *       32      n  what vkGetPipelineCacheData returned, starting with the Vulkan header
 *                  (VkPipelineCacheHeaderVersionOne): headerSize 4, headerVersion 4, vendorID 4,
 *                  deviceID 4, pipelineCacheUUID 16
 *
 * Every integer is little-endian (as Vulkan defines its own header). Nothing reaches the driver
 * before vka_pipeline_cache_check has passed it. */
#define _POSIX_C_SOURCE 200809L /* open, fstat, fsync, rename over a file, getpid */

#include "pipeline_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/text.h"
#include "pipeline/spirv_patch.h"

#define MAGIC "VKATTNPC"
#define FORMAT_VERSION 1u
#define VK_HEADER_BYTES 32u /* sizeof(VkPipelineCacheHeaderVersionOne) */

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const uint8_t *p) { return get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}

static void put_u64(uint8_t *p, uint64_t v)
{
    put_u32(p, (uint32_t)v);
    put_u32(p + 4, (uint32_t)(v >> 32));
}

uint64_t vka_pipeline_cache_checksum(const uint8_t *bytes, size_t size)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < size; i++) h = (h ^ bytes[i]) * 0x100000001b3ull;
    return h;
}

static void write_uuid(char *dst, const uint8_t uuid[VK_UUID_SIZE])
{
    for (unsigned i = 0; i < VK_UUID_SIZE; i++) snprintf(dst + 2 * i, 3, "%02x", uuid[i]);
}

/* The Vulkan header's checks: the spec leaves a cache from another device, driver or driver
 * version to each driver to detect, and not every driver has been careful. */
static int check_vulkan_header(const uint8_t *vk, uint64_t n, const VkPhysicalDeviceProperties *props, char *why,
                               size_t why_size)
{
    if (n < VK_HEADER_BYTES) {
        snprintf(why, why_size, "its Vulkan data (%llu bytes) is shorter than a Vulkan pipeline cache header",
                 (unsigned long long)n);
        return 0;
    }
    uint32_t header_size = get_u32(vk), version = get_u32(vk + 4), vendor = get_u32(vk + 8), device = get_u32(vk + 12);
    if (header_size < VK_HEADER_BYTES || header_size > n) {
        snprintf(why, why_size, "corrupt: Vulkan headerSize %u (at least 32 and at most the data's %llu bytes)",
                 header_size, (unsigned long long)n);
        return 0;
    }
    if (version != VK_PIPELINE_CACHE_HEADER_VERSION_ONE) {
        snprintf(why, why_size, "Vulkan headerVersion %u, not VK_PIPELINE_CACHE_HEADER_VERSION_ONE", version);
        return 0;
    }
    if (vendor != props->vendorID || device != props->deviceID) {
        snprintf(why, why_size,
                 "made by another device (vendor 0x%x, device 0x%x; this one is vendor 0x%x, device 0x%x)",
                 vendor, device, props->vendorID, props->deviceID);
        return 0;
    }
    if (memcmp(vk + 16, props->pipelineCacheUUID, VK_UUID_SIZE) != 0) {
        char theirs[2 * VK_UUID_SIZE + 1], ours[2 * VK_UUID_SIZE + 1];
        write_uuid(theirs, vk + 16);
        write_uuid(ours, props->pipelineCacheUUID);
        snprintf(why, why_size, "made by another driver or driver version (pipelineCacheUUID %s; this one is %s)",
                 theirs, ours);
        return 0;
    }
    return 1;
}

int vka_pipeline_cache_check(const uint8_t *data, size_t size, const VkPhysicalDeviceProperties *props, char *why,
                             size_t why_size)
{
    if (size == 0) {
        snprintf(why, why_size, "empty");
        return 0;
    }
    if (size > VKA_PIPELINE_CACHE_MAX_BYTES) {
        snprintf(why, why_size, "%zu bytes, more than the %zu MiB a pipeline cache may have", size,
                 VKA_PIPELINE_CACHE_MAX_BYTES >> 20);
        return 0;
    }
    if (size < 8 || memcmp(data, MAGIC, 8) != 0) {
        snprintf(why, why_size, "not vkattn pipeline cache data (it does not start with \"" MAGIC "\")");
        return 0;
    }
    if (size < VKA_PIPELINE_CACHE_HEADER_BYTES) {
        snprintf(why, why_size, "truncated: %zu bytes, shorter than vkattn's %d-byte header", size,
                 VKA_PIPELINE_CACHE_HEADER_BYTES);
        return 0;
    }
    uint32_t version = get_u32(data + 8), header_bytes = get_u32(data + 12);
    if (version != FORMAT_VERSION || header_bytes != VKA_PIPELINE_CACHE_HEADER_BYTES) {
        snprintf(why, why_size, "format version %u with a %u-byte header; this vkattn reads version %u", version,
                 header_bytes, FORMAT_VERSION);
        return 0;
    }
    uint64_t announced = get_u64(data + 16), present = size - VKA_PIPELINE_CACHE_HEADER_BYTES;
    if (announced != present) {
        snprintf(why, why_size, "%s: %llu bytes of Vulkan data where its header announces %llu",
                 present < announced ? "truncated" : "corrupt", (unsigned long long)present,
                 (unsigned long long)announced);
        return 0;
    }
    const uint8_t *vk = data + VKA_PIPELINE_CACHE_HEADER_BYTES;
    if (vka_pipeline_cache_checksum(vk, present) != get_u64(data + 24)) {
        snprintf(why, why_size, "corrupt: the checksum of its %llu bytes of Vulkan data does not match",
                 (unsigned long long)present);
        return 0;
    }
    return check_vulkan_header(vk, present, props, why, why_size);
}

/* Whether the directory `path` would be created in exists (the current one for a bare name). */
static int directory_exists(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return 1;
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char dir[4096];
    if (n >= sizeof dir) return 1; /* too long to check here: saving will say what is wrong */
    memcpy(dir, path, n);
    dir[n] = 0;
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Reads the cache file into *out (vka_malloc'ed) or says in cache->note why not. Only running out
 * of memory is a failure: a file that cannot be read is a note, since no cache was ever needed. */
static vkattn_status read_file(vka_device *dev, vka_pipeline_cache *cache, uint8_t **out, size_t *size)
{
    const char *path = cache->path;
    *out = NULL;
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever. fstat below
     * then turns away everything that is not a regular file before a byte is read. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        cache->state = VKATTN_PIPELINE_CACHE_IGNORED;
        if (e == ENOENT && !directory_exists(path)) {
            snprintf(cache->note, sizeof cache->note,
                     "%s cannot be written: its directory does not exist (create it before the context saves)", path);
        } else if (e == ENOENT) {
            cache->state = VKATTN_PIPELINE_CACHE_NEW_FILE;
            snprintf(cache->note, sizeof cache->note, "%s does not exist yet: it is written when the context saves",
                     path);
        } else {
            snprintf(cache->note, sizeof cache->note, "ignored %s: cannot open it: %s", path, strerror(e));
        }
        return VKATTN_OK;
    }
    const char *problem = NULL;
    char too_large[128];
    struct stat st;
    int e = 0;
    if (fstat(fd, &st) != 0) e = errno;
    else if (!S_ISREG(st.st_mode)) {
        problem = "not a regular file (it is neither read nor written)";
        cache->not_regular = 1;
    }
    else if (st.st_size == 0) problem = "empty";
    else if ((unsigned long long)st.st_size > VKA_PIPELINE_CACHE_MAX_BYTES) {
        snprintf(too_large, sizeof too_large,
                 "%llu bytes, more than the %zu MiB a pipeline cache may have (it is never written over)",
                 (unsigned long long)st.st_size, VKA_PIPELINE_CACHE_MAX_BYTES >> 20);
        problem = too_large;
        cache->foreign = 1; /* no cache of ours: someone's model file, say */
    }
    uint8_t *bytes = NULL;
    size_t got = 0;
    if (!e && !problem) {
        size_t want = (size_t)st.st_size;
        bytes = vka_malloc(&dev->faults, want);
        if (!bytes) {
            close(fd);
            return vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory reading the pipeline cache %s", path);
        }
        /* A file that shrank meanwhile reads short: the size check then tells it is truncated. */
        while (got < want) {
            ssize_t n = read(fd, bytes + got, want - got);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) e = errno;
            if (n <= 0) break;
            got += (size_t)n;
        }
    }
    close(fd);
    if (e || problem) {
        free(bytes);
        cache->state = VKATTN_PIPELINE_CACHE_IGNORED;
        snprintf(cache->note, sizeof cache->note, "ignored %s: %s%s", path, problem ? problem : "cannot read it: ",
                 problem ? "" : strerror(e));
        return VKATTN_OK;
    }
    *out = bytes;
    *size = got;
    return VKATTN_OK;
}

static char *copy_string(vka_faults *faults, const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = vka_malloc(faults, n);
    if (copy) memcpy(copy, s, n);
    return copy;
}

vkattn_status vka_pipeline_cache_init(vka_device *dev, vka_pipeline_cache *cache, const char *path, const void *data,
                                      size_t size)
{
    vkattn_status status = VKATTN_OK;
    uint8_t *file = NULL;
    memset(cache, 0, sizeof *cache);
    if (!path && !data && (path = getenv("VKATTN_PIPELINE_CACHE")) && !*path) path = NULL;
    snprintf(cache->note, sizeof cache->note, "none");
    if (path) {
        if (!(cache->path = copy_string(&dev->faults, path))) {
            status = vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the pipeline cache path");
            goto fail;
        }
        VKA_TRY(read_file(dev, cache, &file, &size));
        data = file;
    }
    VkPipelineCacheCreateInfo info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    if (data) {
        char why[400];
        const char *source = path ? path : "pipeline_cache_data";
        if (vka_pipeline_cache_check(data, size, &dev->caps.props, why, sizeof why)) {
            info.initialDataSize = size - VKA_PIPELINE_CACHE_HEADER_BYTES;
            info.pInitialData = (const uint8_t *)data + VKA_PIPELINE_CACHE_HEADER_BYTES;
            cache->state = VKATTN_PIPELINE_CACHE_LOADED;
            cache->loaded_bytes = size;
            snprintf(cache->note, sizeof cache->note, "loaded %zu bytes from %s", size, source);
            cache->file_known = path != NULL;
            cache->file_size = info.initialDataSize;
            cache->file_checksum = get_u64((const uint8_t *)data + 24);
        } else {
            cache->state = VKATTN_PIPELINE_CACHE_IGNORED;
            /* another program's file (a mistyped path) is left alone; vkattn's own data that does
             * not fit (another driver, a torn or old file) is replaced when the context saves */
            cache->foreign = path && size > 0 && memcmp(data, MAGIC, size < 8 ? size : 8) != 0;
            snprintf(cache->note, sizeof cache->note, "ignored %s: %s%s", source, why,
                     cache->foreign ? "; it is never written over" : "");
        }
    }
    VKA_VK(dev, dev->vk.vkCreatePipelineCache(dev->device, &info, NULL, &cache->vk_cache));
fail:
    free(file);
    return status;
}

static void destroy_pipeline(vka_device *dev, vka_pipeline *p)
{
    if (!p) return;
    if (p->pipeline) dev->vk.vkDestroyPipeline(dev->device, p->pipeline, NULL);
    if (p->layout) dev->vk.vkDestroyPipelineLayout(dev->device, p->layout, NULL);
    if (p->set_layout) dev->vk.vkDestroyDescriptorSetLayout(dev->device, p->set_layout, NULL);
    free(p);
}

void vka_pipeline_cache_destroy(vka_device *dev, vka_pipeline_cache *cache)
{
    /* Best effort: nobody is left to tell of a failure (vkattn_context_save_pipeline_cache is). */
    if (cache->vk_cache && !dev->lost) vka_pipeline_cache_save(dev, cache);
    for (uint32_t i = 0; i < cache->count; i++) destroy_pipeline(dev, cache->items[i]);
    free(cache->items);
    if (cache->vk_cache) dev->vk.vkDestroyPipelineCache(dev->device, cache->vk_cache, NULL);
    free(cache->path);
    memset(cache, 0, sizeof *cache);
}

/* The driver's data behind vkattn's header: with `data` NULL sets *size to the bytes it has; else
 * writes at most *size bytes and sets *size to those written. */
static vkattn_status get_vulkan_data(vka_device *dev, vka_pipeline_cache *cache, uint8_t *data, size_t *size)
{
    vkattn_status status = VKATTN_OK;
    VKA_VK(dev, dev->vk.vkGetPipelineCacheData(dev->device, cache->vk_cache, size, data));
fail:
    return status;
}

/* vkattn's header for `n` bytes of Vulkan data at header + VKA_PIPELINE_CACHE_HEADER_BYTES. */
static void write_header(uint8_t *header, uint64_t n)
{
    memcpy(header, MAGIC, 8);
    put_u32(header + 8, FORMAT_VERSION);
    put_u32(header + 12, VKA_PIPELINE_CACHE_HEADER_BYTES);
    put_u64(header + 16, n);
    put_u64(header + 24, vka_pipeline_cache_checksum(header + VKA_PIPELINE_CACHE_HEADER_BYTES, n));
}

vkattn_status vka_pipeline_cache_data(vka_device *dev, vka_pipeline_cache *cache, void *data, size_t *size)
{
    vkattn_status status = VKATTN_OK;
    size_t vk_size = 0;
    VKA_TRY(get_vulkan_data(dev, cache, NULL, &vk_size));
    size_t need = VKA_PIPELINE_CACHE_HEADER_BYTES + vk_size;
    if (!data) {
        *size = need;
        return VKATTN_OK;
    }
    if (*size < need)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "vkattn_context_pipeline_cache_data: a %zu-byte buffer, the data needs %zu", *size, need);
    /* The driver writes at most vk_size bytes, all of them unless the cache changed meanwhile. */
    uint8_t *bytes = data;
    VKA_TRY(get_vulkan_data(dev, cache, bytes + VKA_PIPELINE_CACHE_HEADER_BYTES, &vk_size));
    write_header(bytes, vk_size);
    *size = VKA_PIPELINE_CACHE_HEADER_BYTES + vk_size;
fail:
    return status;
}

/* Writes `bytes` to a new file beside `path`, flushed to disk, then renames it over `path`: a
 * reader sees the old file or the new one, never a torn one, whatever crashes or races. */
static vkattn_status replace_file(vka_device *dev, const char *path, const uint8_t *bytes, size_t size)
{
    size_t cap = strlen(path) + 48;
    char *tmp = vka_malloc(&dev->faults, cap);
    if (!tmp) return vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory saving the pipeline cache %s", path);
    int fd = -1;
    /* Unique among processes (pid) and among the contexts of one process (attempts). */
    for (unsigned attempt = 0; attempt < 64 && fd < 0; attempt++) {
        snprintf(tmp, cap, "%s.%ld-%u.tmp", path, (long)getpid(), attempt);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    const char *step = "cannot create a temporary file beside it";
    int e = fd < 0 ? errno : 0;
    for (size_t done = 0; !e && done < size;) {
        ssize_t n = write(fd, bytes + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) e = n < 0 ? errno : EIO, step = "cannot write the temporary file";
        else done += (size_t)n;
    }
    if (!e && fsync(fd) != 0) e = errno, step = "cannot flush the temporary file";
    if (fd >= 0 && close(fd) != 0 && !e) e = errno, step = "cannot close the temporary file";
    if (!e && rename(tmp, path) != 0) e = errno, step = "cannot rename the temporary file over it";
    if (e && fd >= 0) unlink(tmp);
    free(tmp);
    if (e) return vka_fail(dev, VKATTN_ERROR_IO, "pipeline cache %s: %s: %s", path, step, strerror(e));
    return VKATTN_OK;
}

vkattn_status vka_pipeline_cache_save(vka_device *dev, vka_pipeline_cache *cache)
{
    if (!cache->path || !cache->dirty) return VKATTN_OK;
    if (cache->not_regular)
        return vka_fail(dev, VKATTN_ERROR_IO, "pipeline cache %s: not a regular file: it is not written", cache->path);
    if (cache->foreign)
        return vka_fail(dev, VKATTN_ERROR_IO, "pipeline cache %s: not vkattn pipeline cache data: it is not written over",
                        cache->path);
    vkattn_status status = VKATTN_OK;
    uint8_t *bytes = NULL;
    size_t size = 0;
    VKA_TRY(vka_pipeline_cache_data(dev, cache, NULL, &size));
    if (!(bytes = vka_malloc(&dev->faults, size))) {
        status = vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory saving the pipeline cache %s",
                          cache->path);
        goto fail;
    }
    VKA_TRY(vka_pipeline_cache_data(dev, cache, bytes, &size));
    uint64_t n = size - VKA_PIPELINE_CACHE_HEADER_BYTES, checksum = get_u64(bytes + 24);
    /* Pipelines the driver already had (from the file) change nothing: the file stays as it is. */
    if (!cache->file_known || cache->file_size != n || cache->file_checksum != checksum)
        VKA_TRY(replace_file(dev, cache->path, bytes, size));
    cache->dirty = 0;
    cache->file_known = 1;
    cache->file_size = n;
    cache->file_checksum = checksum;
fail:
    free(bytes);
    return status;
}

/* VKATTN_PIPELINE_STATS=1: one line per executable of the pipeline, its kernel, its
 * specialization constants and every statistic the driver reports (a diagnostic: a query that
 * fails prints less, never fails the pipeline). */
static void print_statistics(vka_device *dev, const vka_pipeline *p, const char *name)
{
    VkPipelineExecutablePropertiesKHR executables[4];
    uint32_t count = 4;
    VkPipelineInfoKHR pipeline = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = p->pipeline};
    for (uint32_t i = 0; i < count; i++)
        executables[i] = (VkPipelineExecutablePropertiesKHR){.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR};
    VkResult r = dev->vk.vkGetPipelineExecutablePropertiesKHR(dev->device, &pipeline, &count, executables);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) count = 0;
    for (uint32_t e = 0; e < count; e++) {
        char line[1024];
        vka_text t = {line, sizeof line, 0};
        vka_text_put(&t, "vkattn: pipeline %s spec", name);
        for (uint32_t i = 0; i < VKA_MAX_SPEC; i++) vka_text_put(&t, "%c%u", i ? ',' : ' ', p->spec[i]);
        if (count > 1) vka_text_put(&t, " [%s]", executables[e].name);
        VkPipelineExecutableStatisticKHR stats[24];
        uint32_t n = 24;
        for (uint32_t i = 0; i < n; i++)
            stats[i] = (VkPipelineExecutableStatisticKHR){.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
        VkPipelineExecutableInfoKHR which = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, .pipeline = p->pipeline, .executableIndex = e};
        r = dev->vk.vkGetPipelineExecutableStatisticsKHR(dev->device, &which, &n, stats);
        if (r != VK_SUCCESS && r != VK_INCOMPLETE) n = 0;
        for (uint32_t i = 0; i < n; i++) {
            vka_text_put(&t, "; %s ", stats[i].name);
            switch (stats[i].format) {
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: vka_text_put(&t, "%s", stats[i].value.b32 ? "yes" : "no"); break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: vka_text_put(&t, "%lld", (long long)stats[i].value.i64); break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: vka_text_put(&t, "%llu", (unsigned long long)stats[i].value.u64); break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: vka_text_put(&t, "%g", stats[i].value.f64); break;
            default: vka_text_put(&t, "?");
            }
        }
        fprintf(stderr, "%s\n", line);
    }
}

static vkattn_status create_pipeline(vka_device *dev, VkPipelineCache vk_cache, vka_kernel kernel, int f16_out,
                                     const uint32_t spec[VKA_MAX_SPEC], vka_pipeline *p)
{
    vkattn_status status = VKATTN_OK;
    VkShaderModule module = VK_NULL_HANDLE;
    uint32_t *patched = NULL;
    const vka_kernel_info *info = vka_kernel_get(kernel);
    const char *name = info ? (f16_out ? info->spirv_f16_out : info->spirv) : NULL;
    const uint32_t *code;
    size_t bytes;
    int coopmat = info && vka_kernel_is_coopmat(info);
    if (coopmat && !dev->info.cooperative_matrix_usable)
        return vka_fail(dev, VKATTN_ERROR_UNSUPPORTED, "kernel %s needs cooperative matrices, not enabled here: %s",
                        info->spirv, dev->info.cooperative_matrix_note);
    if (!name || !vka_embedded_spirv(name, &code, &bytes))
        return vka_fail(dev, VKATTN_ERROR_UNSUPPORTED, "kernel %d%s has no embedded SPIR-V (build mismatch)",
                        (int)kernel, f16_out ? " (fp16 output)" : "");
    int read = vka_spirv_bindings(code, bytes / 4, &dev->faults, &p->bindings);
    if (read < 0) return vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory reading kernel %s", name);
    if (read == 0) return vka_fail(dev, VKATTN_ERROR_VULKAN, "kernel %s: cannot read its bindings from SPIR-V", name);
    char why[160];
    if (!vka_kernel_check_layout(info, &p->bindings, why, sizeof why))
        return vka_fail(dev, VKATTN_ERROR_VULKAN, "internal: %s", why);
    p->kernel = kernel;
    p->f16_out = f16_out;
    memcpy(p->spec, spec, sizeof p->spec);
    p->push_size = info->push_size;

    VkDescriptorSetLayoutBinding bindings[VKA_MAX_BINDINGS];
    for (uint32_t i = 0; i < p->bindings.count; i++) {
        bindings[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = p->bindings.types[i],
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    }
    VkDescriptorSetLayoutCreateInfo set_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = p->bindings.count,
        .pBindings = bindings,
    };
    VKA_VK(dev, dev->vk.vkCreateDescriptorSetLayout(dev->device, &set_info, NULL, &p->set_layout));
    VkPushConstantRange push = {VK_SHADER_STAGE_COMPUTE_BIT, 0, info->push_size};
    VkPipelineLayoutCreateInfo layout_info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &p->set_layout,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &push,
    };
    VKA_VK(dev, dev->vk.vkCreatePipelineLayout(dev->device, &layout_info, NULL, &p->layout));

    /* Every module asks the driver to keep infinities, NaNs and signed zeros where it can
     * (spirv_patch.h says why). */
    unsigned widths = (dev->caps.preserve_inf_nan_f32 ? VKA_SPIRV_FP32 : 0) |
                      (dev->caps.preserve_inf_nan_f16 ? VKA_SPIRV_FP16 : 0);
    size_t patched_words;
    int patch = vka_spirv_preserve_inf_nan(code, bytes / 4, widths, &dev->faults, &patched, &patched_words);
    if (patch <= 0) {
        status = patch < 0 ? vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory preparing kernel %s", name)
                           : vka_fail(dev, VKATTN_ERROR_VULKAN, "internal: kernel %s: cannot read its SPIR-V", name);
        goto fail;
    }
    VkShaderModuleCreateInfo module_info = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = patched ? patched_words * 4 : bytes,
        .pCode = patched ? patched : code,
    };
    VKA_VK(dev, dev->vk.vkCreateShaderModule(dev->device, &module_info, NULL, &module));
    VkSpecializationMapEntry entries[VKA_MAX_SPEC];
    for (uint32_t i = 0; i < VKA_MAX_SPEC; i++) entries[i] = (VkSpecializationMapEntry){i, i * 4, 4};
    VkSpecializationInfo spec_info = {VKA_MAX_SPEC, entries, sizeof p->spec, p->spec};
    /* A cooperative matrix is spread over a subgroup's invocations: its kernels count subgroups
     * per workgroup at compile time, so the size is fixed (the tuning's, which the plan's
     * workgroups are made of) and every subgroup full. */
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo subgroup_size = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
        .requiredSubgroupSize = dev->matrix_subgroup ? dev->matrix_subgroup : dev->info.subgroup_size};
    VkComputePipelineCreateInfo pipeline_info = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage =
            {
                .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .pNext = coopmat ? &subgroup_size : NULL,
                .flags = coopmat ? VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT : 0,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = module,
                .pName = "main",
                .pSpecializationInfo = &spec_info,
            },
        .layout = p->layout,
        .flags = dev->pipeline_stats ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0,
    };
    VkResult r = dev->vk.vkCreateComputePipelines(dev->device, vk_cache, 1, &pipeline_info, NULL,
                                                  &p->pipeline);
    if (r != VK_SUCCESS) {
        status = vka_vk_fail(dev, r, "vkCreateComputePipelines", __FILE__, __LINE__);
        size_t used = strlen(dev->error.message);
        snprintf(dev->error.message + used, sizeof dev->error.message - used, " in pipeline %s", name);
    }
    else if (dev->pipeline_stats)
        print_statistics(dev, p, name);
fail:
    if (module) dev->vk.vkDestroyShaderModule(dev->device, module, NULL);
    free(patched);
    return status;
}

vkattn_status vka_pipeline_make(vka_device *dev, vka_pipeline_cache *cache, vka_kernel kernel, int f16_out,
                                const uint32_t spec[VKA_MAX_SPEC], vka_pipeline **out)
{
    vka_pipeline *p = vka_calloc(&dev->faults, 1, sizeof *p);
    if (!p) return vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a pipeline");
    vkattn_status status = create_pipeline(dev, cache->vk_cache, kernel, f16_out, spec, p);
    if (status != VKATTN_OK) {
        destroy_pipeline(dev, p);
        return status;
    }
    *out = p;
    return VKATTN_OK;
}

vkattn_status vka_pipeline_get(vka_device *dev, vka_pipeline_cache *cache, vka_kernel kernel, int f16_out,
                               const uint32_t spec[VKA_MAX_SPEC], const vka_pipeline **out)
{
    for (uint32_t i = 0; i < cache->count; i++) {
        const vka_pipeline *p = cache->items[i];
        if (p->kernel == kernel && p->f16_out == f16_out && memcmp(p->spec, spec, sizeof p->spec) == 0) {
            *out = p;
            return VKATTN_OK;
        }
    }
    if (cache->count == cache->capacity) {
        uint32_t capacity = cache->capacity ? cache->capacity * 2 : 16;
        vka_pipeline **items = vka_realloc(&dev->faults, cache->items, capacity * sizeof *items);
        if (!items) return vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the pipeline cache");
        cache->items = items;
        cache->capacity = capacity;
    }
    vka_pipeline *p = NULL;
    vkattn_status status = vka_pipeline_make(dev, cache, kernel, f16_out, spec, &p);
    if (status != VKATTN_OK) return status;
    cache->items[cache->count++] = p;
    cache->dirty = 1;
    *out = p;
    return VKATTN_OK;
}

void vka_pipeline_release(vka_device *dev, vka_pipeline *pipeline)
{
    if (pipeline) destroy_pipeline(dev, pipeline);
}
