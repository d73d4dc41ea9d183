/* The kernel registry, generated from kernel_list.h. */
#include "pipeline/kernels.h"

#include <stdio.h>
#include <string.h>

#include "pipeline/spirv_reflect.h"

/* Push constants hold only 4-byte scalars, so C's layout and GLSL's std430 agree member by member:
 * an alignment of 4 rules out a wider member slipping in. They must also fit the 128 bytes every
 * Vulkan device guarantees. */
#define VKA_KERNEL(id, spirv, source, defines, f16_out, push, slots, trips, describe)                             \
    _Static_assert(_Alignof(push) == 4 && sizeof(push) % 4 == 0, #push " holds a member wider than 4 bytes");      \
    _Static_assert(sizeof(push) <= 128, #push " is over the 128 bytes of push constants every device has");
#include "pipeline/kernel_list.h"
#undef VKA_KERNEL

#define VKA_F16_OUT_0(spirv) NULL
#define VKA_F16_OUT_1(spirv) #spirv "_f16_out"
static const vka_kernel_info kernels[VKA_KERNEL_COUNT] = {
#define VKA_KERNEL(id, spirv, source, defines, f16_out, push, slots, trips, describe)                             \
    [VKA_KERNEL_##id] = {#spirv, VKA_F16_OUT_##f16_out(spirv), sizeof(push), slots, #defines},
#include "pipeline/kernel_list.h"
#undef VKA_KERNEL
};

const vka_kernel_info *vka_kernel_get(vka_kernel kernel)
{
    return (unsigned)kernel < VKA_KERNEL_COUNT ? &kernels[kernel] : NULL;
}

int vka_kernel_is_coopmat(const vka_kernel_info *kernel)
{
    return strcmp(kernel->defines, "COOPMAT") == 0 || strcmp(kernel->defines, "COOPMAT2") == 0;
}

int vka_kernel_slot_name(const vka_kernel_info *kernel, uint32_t slot, char *out, size_t cap)
{
    const char *p = kernel->slots;
    for (uint32_t i = 0; i < slot && *p; i++) {
        p += strcspn(p, " ");
        p += strspn(p, " ");
    }
    size_t n = strcspn(p, " ");
    if (n == 0) return 0;
    snprintf(out, cap, "%.*s", (int)n, p);
    return 1;
}

int vka_kernel_check_layout(const vka_kernel_info *kernel, const vka_binding_layout *layout, char *why, size_t cap)
{
    char want[VKA_BINDING_NAME_MAX];
    uint32_t slots = 0;
    while (vka_kernel_slot_name(kernel, slots, want, sizeof want)) slots++;
    if (layout->reads_subgroup_size && !vka_kernel_is_coopmat(kernel)) {
        snprintf(why, cap, "kernel %s reads gl_SubgroupSize, but its pipeline fixes no subgroup size", kernel->spirv);
        return 0;
    }
    if (layout->count != slots) {
        snprintf(why, cap, "kernel %s declares %u bindings, its row in kernel_list.h names %u", kernel->spirv,
                 layout->count, slots);
        return 0;
    }
    for (uint32_t i = 0; i < layout->count; i++) {
        vka_kernel_slot_name(kernel, i, want, sizeof want);
        if (strcmp(layout->names[i][0], want) != 0 && strcmp(layout->names[i][1], want) != 0) {
            snprintf(why, cap, "kernel %s has \"%s\" at binding %u where the host binds \"%s\"", kernel->spirv,
                     layout->names[i][0], i, want);
            return 0;
        }
    }
    return 1;
}
