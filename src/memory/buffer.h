/* A VkBuffer with its own VkDeviceMemory. vkattn makes few, large buffers (weights, workspace,
 * tensors), so one allocation per buffer is simple and well inside maxMemoryAllocationCount. */
#ifndef VKA_BUFFER_H
#define VKA_BUFFER_H

#include "device/device.h"

/* Bytes past the requested size in each buffer vkattn creates, for views' ends (vka_view_range:
 * growing a range until two of its size's bytes are non-zero takes at most 256 bytes and a texel). */
#define VKA_VIEW_ROOM 512u

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
    VkDeviceSize room;     /* bytes past `size` in the VkBuffer that only views' ends reach (vka_buffer_view);
                            * 0 when borrowed */
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
 * maxTexelBufferElements. A view that reaches the end of `size` may cover a few texels of `room`
 * too (never anything else: see vka_view_range). */
vkattn_status vka_buffer_view(vka_device *dev, vka_buffer *buffer, vka_view_format format, VkDeviceSize offset,
                              VkDeviceSize range, VkBufferView *out);

/* The bytes vka_buffer_create adds after `size` (a multiple of 16) for views' ends (vka_view_range):
 * VKA_VIEW_ROOM, 16 more where the VkBuffer's size would be a power of two (Mesa 22's lavapipe
 * compiles a kernel again for each combination of its texel bindings' buffers' sizes being powers
 * of two or not), 0 where that would pass `max_allocation`. */
VkDeviceSize vka_buffer_room(VkDeviceSize size, VkDeviceSize max_allocation);

/* The bytes a view of [offset, offset + range) in texels of `texel` bytes covers in a buffer of
 * `size` bytes with `room` bytes after them: the range itself, or for a view that reaches the end of
 * `size` the range grown by whole texels into `room` until bits 0-7 and bits 8-15 of its byte count
 * are both non-zero, where that fits within `room` and `max_texels`. Mesa 22's lavapipe compiles
 * a kernel once per combination, over its texel bindings, of those bits being zero (llvmpipe keys
 * its shader variants by mip-level fields that share a union with a buffer view's size), so views
 * whose sizes vary with the shape would compile each kernel again and again. */
VkDeviceSize vka_view_range(VkDeviceSize size, VkDeviceSize room, VkDeviceSize offset, VkDeviceSize range,
                            VkDeviceSize texel, uint64_t max_texels);

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
