#include "loader.h"

#include <pthread.h>

#include "common/error.h"

/* The one piece of process-wide state, and it is volk's, not ours: volkInitialize() and
 * volkLoadDeviceTable() read and write volk's global loader pointers (vkGetInstanceProcAddr,
 * vkGetDeviceProcAddr). This lock serialises those accesses so that contexts may be created from
 * several threads at once. Nothing else in vkattn touches volk's globals. */
static pthread_mutex_t volk_globals_lock = PTHREAD_MUTEX_INITIALIZER;

vkattn_status vka_loader_init(vkattn_error *error)
{
    pthread_mutex_lock(&volk_globals_lock);
    VkResult result = vkGetInstanceProcAddr ? VK_SUCCESS : volkInitialize();
    pthread_mutex_unlock(&volk_globals_lock);
    if (result != VK_SUCCESS)
        return vka_error_set(error, VKATTN_ERROR_NO_DEVICE,
                             "no Vulkan loader found (libvulkan.so.1); install libvulkan1 and a driver "
                             "such as mesa-vulkan-drivers");
    return VKATTN_OK;
}

PFN_vkGetInstanceProcAddr vka_loader_entry(void)
{
    pthread_mutex_lock(&volk_globals_lock);
    PFN_vkGetInstanceProcAddr entry = vkGetInstanceProcAddr;
    pthread_mutex_unlock(&volk_globals_lock);
    return entry;
}

vkattn_status vka_load_instance_functions(PFN_vkGetInstanceProcAddr entry, VkInstance instance, vka_instance_fns *fns,
                                          vkattn_error *error)
{
#define VKA_LOAD_INSTANCE_FN_(name, required)                                                      \
    fns->name = (PFN_##name)entry(instance, #name);                                                \
    if ((required) && !fns->name)                                                                  \
        return vka_error_set(error, VKATTN_ERROR_VULKAN, "the Vulkan loader has no %s", #name);
    VKA_INSTANCE_FUNCTIONS(VKA_LOAD_INSTANCE_FN_)
#undef VKA_LOAD_INSTANCE_FN_
    return VKATTN_OK;
}

void vka_load_device_table(const vka_instance_fns *fns, VkDevice device, struct VolkDeviceTable *table)
{
    /* volkLoadDeviceTable resolves names through volk's global vkGetDeviceProcAddr: point it at
     * this context's (an application's device may come from another loader) for the call only. */
    pthread_mutex_lock(&volk_globals_lock);
    PFN_vkGetDeviceProcAddr saved = vkGetDeviceProcAddr;
    vkGetDeviceProcAddr = fns->vkGetDeviceProcAddr;
    volkLoadDeviceTable(table, device);
    vkGetDeviceProcAddr = saved;
    pthread_mutex_unlock(&volk_globals_lock);
}
