#include "kernels.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "abi.h"
#include "pipeline/spirv_reflect.h"

/* Every field is a 4-byte scalar, so the C and std430 layouts agree; these catch a wider type
 * slipping in. Push constants must also fit the 128 bytes every Vulkan device guarantees. */
_Static_assert(sizeof(vka_matmul_push) == 16 * 4, "vka_matmul_push has padding");
_Static_assert(sizeof(vka_scores_push) == 24 * 4, "vka_scores_push has padding");
_Static_assert(sizeof(vka_softmax_push) == 8 * 4, "vka_softmax_push has padding");
_Static_assert(sizeof(vka_pv_push) == 19 * 4, "vka_pv_push has padding");
_Static_assert(sizeof(vka_fused_push) == 30 * 4, "vka_fused_push has padding");
_Static_assert(sizeof(vka_merge_push) == 10 * 4, "vka_merge_push has padding");
_Static_assert(sizeof(vka_average_push) == 11 * 4, "vka_average_push has padding");
_Static_assert(sizeof(vka_peak_push) == 4 * 4, "vka_peak_push has padding");
_Static_assert(sizeof(vka_rope_push) == 10 * 4, "vka_rope_push has padding");
_Static_assert(sizeof(vka_paged_push) == 18 * 4, "vka_paged_push has padding");
_Static_assert(sizeof(vka_append_push) == 9 * 4, "vka_append_push has padding");
_Static_assert(sizeof(vka_fused_push) <= 128 && sizeof(vka_pv_push) <= 128 && sizeof(vka_scores_push) <= 128,
               "push constants over 128 bytes");
/* GLSL lays the same struct out by std430: each member where its C twin is, i.e. 4 bytes apart. */
#define VKA_PUSH_AT(type, member, index) \
    _Static_assert(offsetof(type, member) == (index) * 4, #type "." #member " is not at word " #index)
VKA_PUSH_AT(vka_matmul_push, c_offset, 8);
VKA_PUSH_AT(vka_matmul_push, tiles_n, 15);
VKA_PUSH_AT(vka_scores_push, scale, 16);
VKA_PUSH_AT(vka_scores_push, tiles_i, 20);
VKA_PUSH_AT(vka_scores_push, kv_group, 21);
VKA_PUSH_AT(vka_scores_push, window, 23);
VKA_PUSH_AT(vka_pv_push, j_begin, 14);
VKA_PUSH_AT(vka_pv_push, tiles_i, 17);
VKA_PUSH_AT(vka_pv_push, kv_group, 18);
VKA_PUSH_AT(vka_fused_push, scale, 19);
VKA_PUSH_AT(vka_fused_push, has_lse, 26);
VKA_PUSH_AT(vka_fused_push, kv_group, 27);
VKA_PUSH_AT(vka_fused_push, window, 29);
VKA_PUSH_AT(vka_merge_push, has_lse, 9);
VKA_PUSH_AT(vka_softmax_push, group_count, 4);
VKA_PUSH_AT(vka_softmax_push, i_count, 7);
VKA_PUSH_AT(vka_average_push, inv_heads, 9);
VKA_PUSH_AT(vka_peak_push, addend, 3);
VKA_PUSH_AT(vka_rope_push, pos_offset, 7);
VKA_PUSH_AT(vka_rope_push, count, 9);
VKA_PUSH_AT(vka_paged_push, scale, 12);
VKA_PUSH_AT(vka_paged_push, tiles, 15);
VKA_PUSH_AT(vka_paged_push, window, 17);
VKA_PUSH_AT(vka_append_push, count, 8);
_Static_assert(VKA_FUSED_BINDINGS <= VKA_MAX_BINDINGS, "a kernel has more bindings than VKA_MAX_BINDINGS");

/* The GLSL name at each slot (the variable's, or its block's when the variable is anonymous). */
static const char *const matmul_slots[VKA_MATMUL_BINDINGS] = {
    [VKA_MATMUL_A] = "A", [VKA_MATMUL_B] = "B", [VKA_MATMUL_BIAS] = "Bias", [VKA_MATMUL_C] = "C_"};
static const char *const scores_slots[VKA_SCORES_BINDINGS] = {
    [VKA_SCORES_Q] = "Q", [VKA_SCORES_K] = "K", [VKA_SCORES_P] = "P_", [VKA_SCORES_KEY_PADDING] = "Kpm_",
    [VKA_SCORES_VALID_LENS] = "ValidLens_", [VKA_SCORES_ATTN_MASK] = "MaskBytes_",
    [VKA_SCORES_HEAD_TERMS] = "HeadTerms_"};
static const char *const softmax_slots[VKA_SOFTMAX_BINDINGS] = {
    [VKA_SOFTMAX_P] = "P_", [VKA_SOFTMAX_STATS_BUF] = "Stats_", [VKA_SOFTMAX_HEAD_TERMS] = "HeadTerms_"};
static const char *const pv_slots[VKA_PV_BINDINGS] = {
    [VKA_PV_P] = "P", [VKA_PV_V] = "V", [VKA_PV_CTX] = "Ctx_", [VKA_PV_ACC] = "Acc_"};
static const char *const fused_slots[VKA_FUSED_BINDINGS] = {
    [VKA_FUSED_Q] = "Q", [VKA_FUSED_K] = "K", [VKA_FUSED_V] = "V", [VKA_FUSED_CTX] = "Ctx_",
    [VKA_FUSED_KEY_PADDING] = "Kpm_", [VKA_FUSED_VALID_LENS] = "ValidLens_", [VKA_FUSED_ATTN_MASK] = "MaskBytes_",
    [VKA_FUSED_LSE_OUT] = "Lse_", [VKA_FUSED_STATE_O] = "StateO_", [VKA_FUSED_STATE_LSE] = "StateLse_",
    [VKA_FUSED_HEAD_TERMS] = "HeadTerms_"};
static const char *const merge_slots[VKA_MERGE_BINDINGS] = {
    [VKA_MERGE_STATE_O] = "StateO_", [VKA_MERGE_STATE_LSE] = "StateLse_", [VKA_MERGE_CTX] = "Ctx_",
    [VKA_MERGE_LSE_OUT] = "Lse_", [VKA_MERGE_META] = "Meta_"};
static const char *const average_slots[VKA_AVERAGE_BINDINGS] = {[VKA_AVERAGE_P] = "P_", [VKA_AVERAGE_W] = "W_"};
static const char *const peak_fma_slots[1] = {[VKA_PEAK_OUT] = "Out_"};
static const char *const rope_slots[VKA_ROPE_BINDINGS] = {[VKA_ROPE_X] = "X_", [VKA_ROPE_FREQ] = "Freq",
                                                          [VKA_ROPE_META] = "Meta_"};
static const char *const paged_slots[VKA_PAGED_BINDINGS] = {
    [VKA_PAGED_Q] = "Q", [VKA_PAGED_K] = "K", [VKA_PAGED_V] = "V", [VKA_PAGED_CTX] = "Ctx_",
    [VKA_PAGED_META] = "Meta_", [VKA_PAGED_STATE_O] = "StateO_", [VKA_PAGED_STATE_LSE] = "StateLse_",
    [VKA_PAGED_HEAD_TERMS] = "HeadTerms_"};
static const char *const append_slots[VKA_APPEND_BINDINGS] = {
    [VKA_APPEND_SRC] = "Src", [VKA_APPEND_META] = "Meta_", [VKA_APPEND_K] = "KPool_", [VKA_APPEND_V] = "VPool_"};
static const char *const peak_copy_slots[2] = {[VKA_PEAK_SRC] = "Src_", [VKA_PEAK_DST] = "Dst_"};

static const vka_kernel_info kernels[VKA_KERNEL_COUNT] = {
    [VKA_KERNEL_MATMUL] = {"matmul", "matmul_f16_out", sizeof(vka_matmul_push), VKA_MATMUL_BINDINGS, matmul_slots},
    [VKA_KERNEL_SCORES] = {"attn_scores", NULL, sizeof(vka_scores_push), VKA_SCORES_BINDINGS, scores_slots},
    [VKA_KERNEL_SOFTMAX] = {"softmax", NULL, sizeof(vka_softmax_push), VKA_SOFTMAX_BINDINGS, softmax_slots},
    [VKA_KERNEL_PV] = {"attn_pv", "attn_pv_f16_out", sizeof(vka_pv_push), VKA_PV_BINDINGS, pv_slots},
    [VKA_KERNEL_FUSED] = {"attn_fused", "attn_fused_f16_out", sizeof(vka_fused_push), VKA_FUSED_BINDINGS, fused_slots},
    [VKA_KERNEL_MERGE] = {"attn_merge", "attn_merge_f16_out", sizeof(vka_merge_push), VKA_MERGE_BINDINGS, merge_slots},
    [VKA_KERNEL_AVERAGE_HEADS] = {"average_heads", NULL, sizeof(vka_average_push), VKA_AVERAGE_BINDINGS,
                                  average_slots},
    [VKA_KERNEL_PEAK_FMA_F32] = {"peak_fma_f32", NULL, sizeof(vka_peak_push), 1, peak_fma_slots},
    [VKA_KERNEL_PEAK_FMA_F16] = {"peak_fma_f16", NULL, sizeof(vka_peak_push), 1, peak_fma_slots},
    [VKA_KERNEL_PEAK_COPY] = {"peak_copy", NULL, sizeof(vka_peak_push), 2, peak_copy_slots},
    [VKA_KERNEL_ROPE] = {"rope", "rope_f16", sizeof(vka_rope_push), VKA_ROPE_BINDINGS, rope_slots},
    [VKA_KERNEL_PAGED] = {"attn_paged", "attn_paged_f16_out", sizeof(vka_paged_push), VKA_PAGED_BINDINGS, paged_slots},
    /* "f16 out" here is the cache's dtype: the build that writes fp16 pools */
    [VKA_KERNEL_APPEND] = {"kv_append", "kv_append_f16", sizeof(vka_append_push), VKA_APPEND_BINDINGS, append_slots},
    [VKA_KERNEL_PAGED_QUANT] = {"attn_paged_quant", "attn_paged_quant_f16_out", sizeof(vka_paged_push),
                                VKA_PAGED_BINDINGS, paged_slots},
    [VKA_KERNEL_APPEND_QUANT] = {"kv_append_quant", NULL, sizeof(vka_append_push), VKA_APPEND_BINDINGS, append_slots},
};

const vka_kernel_info *vka_kernel_get(vka_kernel kernel)
{
    return (unsigned)kernel < VKA_KERNEL_COUNT ? &kernels[kernel] : NULL;
}

int vka_kernel_check_layout(const vka_kernel_info *kernel, const vka_binding_layout *layout, char *why, size_t cap)
{
    if (layout->count != kernel->binding_count) {
        snprintf(why, cap, "kernel %s declares %u bindings, abi.h names %u", kernel->spirv, layout->count,
                 kernel->binding_count);
        return 0;
    }
    for (uint32_t i = 0; i < layout->count; i++) {
        const char *want = kernel->slot_names[i];
        if (strcmp(layout->names[i][0], want) != 0 && strcmp(layout->names[i][1], want) != 0) {
            snprintf(why, cap, "kernel %s has \"%s\" at binding %u where the host binds \"%s\"", kernel->spirv,
                     layout->names[i][0], i, want);
            return 0;
        }
    }
    return 1;
}
