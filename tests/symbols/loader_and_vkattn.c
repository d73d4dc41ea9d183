/* A program that calls the Vulkan loader itself (vkEnumerateInstanceVersion, vkCreateInstance,
 * ... linked from -lvulkan) and uses vkattn, linked once with libvkattn.a and once with
 * libvkattn.so. Up to 0.1.0 libvkattn.a defined volk's vk* function pointers as global variables,
 * which took the place of the loader's functions of the same names: the program linked cleanly
 * and crashed on its first vkEnumerateInstanceVersion call, a jump into a pointer variable. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <vulkan/vulkan.h>

#include "../consumer/tiny_forward.h"
#include "gpu_test.h"

/* 1 if the function `fn` the program calls lies in the Vulkan loader. Checked before calling it,
 * so that a symbol taken over by something else fails the test instead of crashing it. */
static int in_loader(const char *name, void (*fn)(void))
{
    Dl_info info = {0};
    void *address;
    memcpy(&address, &fn, sizeof address); /* ISO C has no function-to-object pointer cast */
    int found = dladdr(address, &info) && info.dli_fname;
    int ok = found && strstr(info.dli_fname, "libvulkan.so") != NULL;
    printf("%-28s in %s\n", name, found ? info.dli_fname : "(no object)");
    CHECK_MSG(ok, "the program's %s is not the Vulkan loader's", name);
    return ok;
}

static VkInstance create_instance(void)
{
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkInstance instance = VK_NULL_HANDLE;
    VkResult result = vkCreateInstance(&info, NULL, &instance);
    CHECK_MSG(result == VK_SUCCESS, "vkCreateInstance returned %d", (int)result);
    return result == VK_SUCCESS ? instance : VK_NULL_HANDLE;
}

int main(void)
{
    gpu_test_pin_drivers();
    int all_in_loader = in_loader("vkEnumerateInstanceVersion", (void (*)(void))vkEnumerateInstanceVersion) &
                        in_loader("vkCreateInstance", (void (*)(void))vkCreateInstance) &
                        in_loader("vkEnumeratePhysicalDevices", (void (*)(void))vkEnumeratePhysicalDevices) &
                        in_loader("vkDestroyInstance", (void (*)(void))vkDestroyInstance);
    if (!all_in_loader) return test_finish();

    uint32_t version = 0;
    CHECK(vkEnumerateInstanceVersion(&version) == VK_SUCCESS);
    printf("loader: Vulkan %u.%u.%u\n", VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version),
           VK_API_VERSION_PATCH(version));
    VkInstance instance = create_instance();

    /* vkattn runs while the program's own instance lives; both keep working. */
    CHECK(tiny_forward_check("vkattn beside the loader") == 0);
    if (instance) {
        uint32_t devices = 0;
        CHECK(vkEnumeratePhysicalDevices(instance, &devices, NULL) == VK_SUCCESS && devices > 0);
        vkDestroyInstance(instance, NULL);
    }
    CHECK(vkEnumerateInstanceVersion(&version) == VK_SUCCESS);
    return test_finish();
}
