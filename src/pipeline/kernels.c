#include "kernels.h"

#include <stddef.h>

#include "abi.h"

/* Every field is a 4-byte scalar, so the C and std430 layouts agree; these catch a wider type
 * slipping in. Push constants must also fit the 128 bytes every Vulkan device guarantees. */
_Static_assert(sizeof(vka_matmul_push) == 16 * 4, "vka_matmul_push has padding");
_Static_assert(sizeof(vka_scores_push) == 21 * 4, "vka_scores_push has padding");
_Static_assert(sizeof(vka_softmax_push) == 5 * 4, "vka_softmax_push has padding");
_Static_assert(sizeof(vka_pv_push) == 18 * 4, "vka_pv_push has padding");
_Static_assert(sizeof(vka_fused_push) == 27 * 4, "vka_fused_push has padding");
_Static_assert(sizeof(vka_merge_push) == 10 * 4, "vka_merge_push has padding");
_Static_assert(sizeof(vka_average_push) == 11 * 4, "vka_average_push has padding");
_Static_assert(sizeof(vka_peak_push) == 4 * 4, "vka_peak_push has padding");
_Static_assert(sizeof(vka_fused_push) <= 128 && sizeof(vka_pv_push) <= 128 && sizeof(vka_scores_push) <= 128,
               "push constants over 128 bytes");
_Static_assert(VKA_FUSED_BINDINGS <= VKA_MAX_BINDINGS, "a kernel has more bindings than VKA_MAX_BINDINGS");

static const vka_kernel_info kernels[VKA_KERNEL_COUNT] = {
    [VKA_KERNEL_MATMUL] = {"matmul", "matmul_f16_out", sizeof(vka_matmul_push), VKA_MATMUL_BINDINGS},
    [VKA_KERNEL_SCORES] = {"attn_scores", NULL, sizeof(vka_scores_push), VKA_SCORES_BINDINGS},
    [VKA_KERNEL_SOFTMAX] = {"softmax", NULL, sizeof(vka_softmax_push), VKA_SOFTMAX_BINDINGS},
    [VKA_KERNEL_PV] = {"attn_pv", "attn_pv_f16_out", sizeof(vka_pv_push), VKA_PV_BINDINGS},
    [VKA_KERNEL_FUSED] = {"attn_fused", "attn_fused_f16_out", sizeof(vka_fused_push), VKA_FUSED_BINDINGS},
    [VKA_KERNEL_MERGE] = {"attn_merge", "attn_merge_f16_out", sizeof(vka_merge_push), VKA_MERGE_BINDINGS},
    [VKA_KERNEL_AVERAGE_HEADS] = {"average_heads", NULL, sizeof(vka_average_push), VKA_AVERAGE_BINDINGS},
    [VKA_KERNEL_PEAK_FMA_F32] = {"peak_fma_f32", NULL, sizeof(vka_peak_push), 1},
    [VKA_KERNEL_PEAK_FMA_F16] = {"peak_fma_f16", NULL, sizeof(vka_peak_push), 1},
    [VKA_KERNEL_PEAK_COPY] = {"peak_copy", NULL, sizeof(vka_peak_push), 2},
};

const vka_kernel_info *vka_kernel_get(vka_kernel kernel)
{
    return (unsigned)kernel < VKA_KERNEL_COUNT ? &kernels[kernel] : NULL;
}
