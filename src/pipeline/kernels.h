/* The kernel families vkattn dispatches, and what the host needs to know about each. */
#ifndef VKA_KERNELS_H
#define VKA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

typedef enum vka_kernel {
    VKA_KERNEL_MATMUL,
    VKA_KERNEL_SCORES,
    VKA_KERNEL_SOFTMAX,
    VKA_KERNEL_PV,
    VKA_KERNEL_FUSED,
    VKA_KERNEL_MERGE,
    VKA_KERNEL_AVERAGE_HEADS,
    VKA_KERNEL_PEAK_FMA_F32,
    VKA_KERNEL_PEAK_FMA_F16,
    VKA_KERNEL_PEAK_COPY,
    VKA_KERNEL_ROPE,
    VKA_KERNEL_PAGED,
    VKA_KERNEL_APPEND,
    VKA_KERNEL_PAGED_QUANT,  /* attn_paged over a cache of a block format (KV_QUANT build) */
    VKA_KERNEL_APPEND_QUANT, /* kv_append into a cache of a block format (KV_QUANT build) */
    VKA_KERNEL_COUNT
} vka_kernel;

/* Specialization constants per pipeline: ids 0..VKA_MAX_SPEC-1 (see shaders/abi.h); every pipeline
 * gets all of them, a kernel reads the ones it declares. */
#define VKA_MAX_SPEC 8
#define VKA_MAX_BINDINGS 11

typedef struct vka_kernel_info {
    const char *spirv;         /* name in the embedded SPIR-V table (shaders/CMakeLists.txt) */
    const char *spirv_f16_out; /* the build that writes fp16 activations (OUT_F16), or NULL */
    uint32_t push_size;        /* bytes of its push-constant struct */
    uint32_t binding_count;    /* its binding slots (abi.h), checked against the SPIR-V */
    /* The GLSL name declared at each slot: what the host binds there must be what the kernel reads
     * there, so a kernel whose slots were swapped (even two of one type) is caught. */
    const char *const *slot_names;
} vka_kernel_info;

const vka_kernel_info *vka_kernel_get(vka_kernel kernel);

struct vka_binding_layout;

/* Checks a kernel's reflected layout against its slots: their count and the name at each.
 * Returns 1 if they agree; else 0 with the first difference in `why`. */
int vka_kernel_check_layout(const vka_kernel_info *kernel, const struct vka_binding_layout *layout, char *why,
                            size_t cap);

/* The generated lookup into the embedded SPIR-V (build/shaders/shaders_embedded.c). */
int vka_embedded_spirv(const char *name, const uint32_t **code, size_t *bytes);

#endif
