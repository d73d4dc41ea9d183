/* Host <-> device copies for memory the host cannot map: a staging buffer and one command lane
 * of the device, each copy submitted and waited for. Where device memory is mapped (CPU and
 * integrated devices) the copies are plain memcpy and the lane is never used. */
#ifndef VKA_TRANSFER_H
#define VKA_TRANSFER_H

#include "device/device.h"
#include "memory/buffer.h"

typedef struct vka_transfer {
    vka_device *dev;
    vka_commands lane;
    vka_buffer staging; /* grown on demand, at most VKA_STAGING_CHUNK */
} vka_transfer;

vkattn_status vka_transfer_create(vka_device *dev, vka_transfer *out);
void vka_transfer_destroy(vka_transfer *transfer);

/* Host <-> device copies of `bytes` at `offset`; direct through the mapping when there is one,
 * through the staging buffer otherwise. */
vkattn_status vka_buffer_write(vka_transfer *transfer, vka_buffer *buffer, VkDeviceSize offset, const void *src,
                               size_t bytes);
vkattn_status vka_buffer_read(vka_transfer *transfer, const vka_buffer *buffer, VkDeviceSize offset, void *dst,
                              size_t bytes);
/* Zero-fills the whole buffer (one small submit, or a memset where it is mapped). */
vkattn_status vka_buffer_fill_zero(vka_transfer *transfer, vka_buffer *buffer);

/* The lane's command buffer, reset and begun for recording (into *cmd); then ended, submitted and
 * waited for. `what` names the work in a timeout message. */
vkattn_status vka_transfer_begin(vka_transfer *transfer, VkCommandBuffer *cmd);
vkattn_status vka_transfer_submit_wait(vka_transfer *transfer, const char *what);

#endif
