/* A VkBuffer with its own VkDeviceMemory. vkattn makes few, large buffers (weights, workspace,
 * tensors), so one allocation per buffer is simple and well inside maxMemoryAllocationCount. */
#ifndef VKA_BUFFER_H
#define VKA_BUFFER_H

#include "device/device.h"

typedef enum vka_memory_use {
    VKA_MEMORY_DEVICE = 0, /* kernels read and write it; mapped only where memory is unified */
    VKA_MEMORY_STAGING = 1 /* host-visible, for copies to and from device memory */
} vka_memory_use;

/* Formats a buffer can be viewed in as a texel buffer (kernels read texel buffers where that is
 * the fast load path, e.g. on lavapipe; see docs/KNOWN_ISSUES.md). */
typedef enum vka_view_format {
    VKA_VIEW_R32F = 0,       /* one float per texel */
    VKA_VIEW_RGBA32F = 1,    /* four floats per texel */
    VKA_VIEW_R16F = 2,       /* one half per texel, read as float */
    VKA_VIEW_RGBA16F = 3,    /* four halves per texel */
    VKA_VIEW_R32UI = 4,      /* one uint per texel: a KV cache pool of a block format, read as words */
    VKA_VIEW_FORMAT_COUNT
} vka_view_format;

/* A texel view of bytes [offset, offset + range) of a buffer. */
typedef struct vka_view {
    vka_view_format format;
    VkDeviceSize offset, range;
    VkBufferView view;
} vka_view;

typedef struct vka_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory; /* VK_NULL_HANDLE when borrowed */
    VkDeviceSize base;     /* where this buffer's bytes start in `buffer` (0 unless borrowed) */
    VkDeviceSize size;     /* bytes requested, rounded up to 16 */
    int borrowed;          /* the application's VkBuffer (vka_buffer_borrow): never destroyed here */
    void *mapped;          /* non-NULL when host-visible and coherent */
    vka_view *views;       /* created on first use, kept until the buffer goes */
    uint32_t view_count, view_capacity;
} vka_buffer;

/* Creates a storage buffer (also usable as transfer source/destination and texel buffer) of
 * `size` bytes (> 0, rounded up to 16 so kernels may read whole words), zero-filled where the
 * host maps it; elsewhere its contents are undefined until written (vka_buffer_fill_zero).
 * On failure `out` stays zeroed and the device has the message. */
vkattn_status vka_buffer_create(vka_device *dev, VkDeviceSize size, vka_memory_use use, const char *what,
                                vka_buffer *out);
/* The view of bytes [offset, offset + range) of the buffer in `format` (range 0 = to the end, in
 * whole texels), created on first use and owned by the buffer. The offset must be a multiple of
 * minTexelBufferOffsetAlignment. VKATTN_ERROR_DEVICE_LIMIT if the range has more texels than
 * maxTexelBufferElements. */
vkattn_status vka_buffer_view(vka_device *dev, vka_buffer *buffer, vka_view_format format, VkDeviceSize offset,
                              VkDeviceSize range, VkBufferView *out);

/* Describes bytes [base, base + size) of the application's `buffer` as a vka_buffer; nothing is
 * created (views are, on use, and destroyed with it) and the VkBuffer stays the application's.
 * `size` is a multiple of 16. */
vka_buffer vka_buffer_borrow(VkBuffer buffer, VkDeviceSize base, VkDeviceSize size);

/* Destroys a buffer made by vka_buffer_create or vka_buffer_borrow (or a zeroed one; for a borrowed
 * one, only its views) and zeroes it. */
void vka_buffer_destroy(vka_device *dev, vka_buffer *buffer);

/* Makes sure `buffer` holds at least `size` bytes, re-creating it (contents lost) if not. */
vkattn_status vka_buffer_reserve(vka_device *dev, vka_buffer *buffer, VkDeviceSize size, vka_memory_use use,
                                 const char *what);

#endif
