/* Physical devices: what they can do, and which one a context uses. */
#ifndef VKA_PHYSICAL_H
#define VKA_PHYSICAL_H

#include "device/device.h"

/* Fills `info` (and `caps` unless NULL) for one device. */
void vka_describe_device(const vka_instance_fns *fns, VkPhysicalDevice device, uint32_t index,
                         vkattn_device_info *info, vka_device_caps *caps);

/* The queue family vkattn uses (compute, preferably with timestamps); 0 if the device has none. */
int vka_find_compute_queue(const vka_instance_fns *fns, VkPhysicalDevice device, uint32_t *family,
                           uint32_t *timestamp_bits);

/* The properties of queue family `family`; 0 if the device has no such family. */
int vka_queue_family(const vka_instance_fns *fns, VkPhysicalDevice device, uint32_t family,
                     VkQueueFamilyProperties *out);

int vka_device_has_extension(const vka_instance_fns *fns, VkPhysicalDevice device, const char *name);

/* Index of the default device: discrete > integrated > virtual > CPU > other, first of each. */
uint32_t vka_default_device(const vkattn_device_info *infos, uint32_t count);

/* Resolves a request (NULL/"" = default, a decimal index, or a case-insensitive name substring).
 * `source` names where the request came from, for the message ("VKATTN_DEVICE"). */
vkattn_status vka_select_device(const vkattn_device_info *infos, uint32_t count, const char *request,
                                const char *source, uint32_t *out, vkattn_error *error);

#endif
