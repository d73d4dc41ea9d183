/* Loading Vulkan through volk without process-wide function pointers of our own.
 *
 * volk keeps the loader's global entry points (vkCreateInstance, ...) in process-wide pointers; we
 * fill them once. Instance-level functions are loaded per context into vka_instance_fns (through
 * the loader's vkGetInstanceProcAddr, or the application's for a device it shares), and
 * device-level functions per context into a VolkDeviceTable. */
#ifndef VKA_LOADER_H
#define VKA_LOADER_H

#define VK_NO_PROTOTYPES
#include <volk.h>

#include "vkattn.h"
#include "device/coopmat_khr.h"

/* X(name, required): the instance-level functions vkattn uses. */
#define VKA_INSTANCE_FUNCTIONS(X)                                                                  \
    X(vkDestroyInstance, 1)                                                                        \
    X(vkEnumeratePhysicalDevices, 1)                                                               \
    X(vkGetPhysicalDeviceProperties, 1)                                                            \
    X(vkGetPhysicalDeviceProperties2, 1)                                                           \
    X(vkGetPhysicalDeviceFeatures2, 1)                                                             \
    X(vkGetPhysicalDeviceMemoryProperties, 1)                                                      \
    X(vkGetPhysicalDeviceQueueFamilyProperties, 1)                                                 \
    X(vkEnumerateDeviceExtensionProperties, 1)                                                     \
    X(vkCreateDevice, 1)                                                                           \
    X(vkGetDeviceProcAddr, 1)                                                                      \
    X(vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR, 0)                                        \
    X(vkCreateDebugUtilsMessengerEXT, 0)                                                           \
    X(vkDestroyDebugUtilsMessengerEXT, 0)

typedef struct vka_instance_fns {
#define VKA_INSTANCE_FN_MEMBER_(name, required) PFN_##name name;
    VKA_INSTANCE_FUNCTIONS(VKA_INSTANCE_FN_MEMBER_)
#undef VKA_INSTANCE_FN_MEMBER_
} vka_instance_fns;

/* Finds the Vulkan loader (once per process). VKATTN_ERROR_NO_DEVICE if there is none. */
vkattn_status vka_loader_init(vkattn_error *error);

/* The loader's vkGetInstanceProcAddr found by vka_loader_init. */
PFN_vkGetInstanceProcAddr vka_loader_entry(void);

/* Fills `fns` for `instance` through `entry` (the loader's vkGetInstanceProcAddr, or an
 * application's); VKATTN_ERROR_VULKAN naming the first required function missing. */
vkattn_status vka_load_instance_functions(PFN_vkGetInstanceProcAddr entry, VkInstance instance, vka_instance_fns *fns,
                                          vkattn_error *error);

/* Fills `table` with `device`'s functions. */
void vka_load_device_table(const vka_instance_fns *fns, VkDevice device, struct VolkDeviceTable *table);

#endif
