/* A program with its own copy of volk (volk.c compiled into it, with settings of its own: see
 * tests/symbols/CMakeLists.txt) that uses vkattn too, linked once with libvkattn.a and once with
 * libvkattn.so. The two copies of volk must not meet. Up to 0.1.0 libvkattn.a defined volk's
 * symbols as globals, so the linker took the program's volk for both: vkattn silently read and
 * wrote the program's function pointers, and the program's volkLoadDeviceTable filled vkattn's
 * shorter VolkDeviceTable. A shared library exporting volk's functions crashes instead: the
 * program's volkInitialize takes the place of the library's and fills the program's pointers,
 * and vkattn calls its own, still NULL.
 *
 * The program initialises its volk through a counting vkGetInstanceProcAddr: every lookup made
 * through the program's copy is counted, so a library that shared it would show in the count. */
#define _GNU_SOURCE /* RTLD_NODELETE in gpu_test.h */
#include <dlfcn.h>
#include <volk.h>

#include "../consumer/tiny_forward.h"
#include "gpu_test.h"

static PFN_vkGetInstanceProcAddr loader_get_instance_proc_addr;
static unsigned lookups;

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL counting_get_instance_proc_addr(VkInstance instance,
                                                                               const char *name)
{
    lookups++;
    return loader_get_instance_proc_addr(instance, name);
}

int main(void)
{
    gpu_test_pin_drivers();
    void *loader = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!loader) {
        fprintf(stderr, "no Vulkan loader: %s\n", dlerror());
        return 1;
    }
    void *symbol = dlsym(loader, "vkGetInstanceProcAddr");
    memcpy(&loader_get_instance_proc_addr, &symbol, sizeof symbol);
    volkInitializeCustom(counting_get_instance_proc_addr);
    CHECK(lookups > 0);

    /* The program's volk: global entry points, an instance, its functions (volkLoadInstance also
     * loads the device-level ones that vkattn's copy, used only through tables, leaves alone). */
    uint32_t version = 0;
    CHECK(vkEnumerateInstanceVersion && vkEnumerateInstanceVersion(&version) == VK_SUCCESS);
    CHECK(volkGetInstanceVersion() == version && version >= VK_API_VERSION_1_1);
    printf("own volk (header %d): Vulkan %u.%u.%u\n", VOLK_HEADER_VERSION, VK_API_VERSION_MAJOR(version),
           VK_API_VERSION_MINOR(version), VK_API_VERSION_PATCH(version));
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkInstance instance = VK_NULL_HANDLE;
    if (vkCreateInstance(&info, NULL, &instance) != VK_SUCCESS) {
        fprintf(stderr, "vkCreateInstance failed\n");
        return 1;
    }
    volkLoadInstance(instance);
    PFN_vkGetDeviceProcAddr device_proc_addr = vkGetDeviceProcAddr;
    PFN_vkCmdDispatch cmd_dispatch = vkCmdDispatch;
    CHECK(device_proc_addr && cmd_dispatch);

    unsigned before = lookups;
    CHECK(tiny_forward_check("vkattn beside the program's volk") == 0);
    CHECK_MSG(lookups == before, "vkattn made %u lookups through the program's volk", lookups - before);
    CHECK(volkGetLoadedInstance() == instance);
    CHECK(vkGetDeviceProcAddr == device_proc_addr && vkCmdDispatch == cmd_dispatch);

    uint32_t devices = 0;
    CHECK(vkEnumeratePhysicalDevices(instance, &devices, NULL) == VK_SUCCESS && devices > 0);
    vkDestroyInstance(instance, NULL);
    dlclose(loader);
    return test_finish();
}
