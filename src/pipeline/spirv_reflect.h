/* Just enough SPIR-V reflection to derive a kernel's descriptor set layout from the kernel itself,
 * so bindings are declared once (in GLSL). */
#ifndef VKA_SPIRV_REFLECT_H
#define VKA_SPIRV_REFLECT_H

#define VK_NO_PROTOTYPES
#include <volk.h>

#include "pipeline/kernels.h"

typedef struct vka_binding_layout {
    uint32_t count;                               /* bindings 0..count-1, all in set 0 */
    VkDescriptorType types[VKA_MAX_BINDINGS];
} vka_binding_layout;

/* Reads the set-0 bindings of a compute module. Returns 0 if the module is malformed, uses a
 * set other than 0, leaves a gap in the binding numbers, or has more than VKA_MAX_BINDINGS. */
int vka_spirv_bindings(const uint32_t *code, size_t words, vka_binding_layout *out);

#endif
