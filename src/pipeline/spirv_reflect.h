/* Just enough SPIR-V reflection to derive a kernel's descriptor set layout from the kernel itself,
 * so bindings are declared once (in GLSL). */
#ifndef VKA_SPIRV_REFLECT_H
#define VKA_SPIRV_REFLECT_H

#define VK_NO_PROTOTYPES
#include <volk.h>

#include "abi.h"

#define VKA_BINDING_NAME_MAX 24
#define VKA_BINDING_ALIASES 2

typedef struct vka_binding_layout {
    uint32_t count;                               /* bindings 0..count-1, all in set 0 */
    VkDescriptorType types[VKA_MAX_BINDINGS];
    /* The GLSL names at each binding (the variable's, or its block's when the variable has none),
     * up to two where two declarations view one buffer; "" where SPIR-V carries no name. */
    char names[VKA_MAX_BINDINGS][VKA_BINDING_ALIASES][VKA_BINDING_NAME_MAX];
    int reads_subgroup_size; /* the module reads gl_SubgroupSize (a variable decorated BuiltIn SubgroupSize) */
} vka_binding_layout;

struct vka_faults;

/* Reads the set-0 bindings of a compute module (and whether it reads gl_SubgroupSize). Returns 1,
 * or 0 if the module is malformed, uses a set other than 0, leaves a gap in the binding numbers or
 * has more than VKA_MAX_BINDINGS, or -1 if its scratch allocation fails (through the fault
 * injector `faults`, which may be NULL). */
int vka_spirv_bindings(const uint32_t *code, size_t words, struct vka_faults *faults, vka_binding_layout *out);

#endif
