/* How a device's cooperative-matrix accumulator spreads its rows over a subgroup's invocations
 * (VK_KHR_cooperative_matrix leaves the mapping to the implementation), as far as attn_cm's
 * softmax in registers needs it: read once per context by shaders/coopmat_layout.comp, described
 * here, and given to attn_cm as specialization constants. */
#ifndef VKA_MATRIX_ROWS_H
#define VKA_MATRIX_ROWS_H

#include <stddef.h>
#include <stdint.h>

/* Invocation x's element e of an M x N fp32 accumulator lies in a row that depends only on
 * x / lanes and on e's class (e / run) % classes: each row is held by an aligned group of `lanes`
 * invocations, at the same element indices in each (distinct rows for distinct classes), and that
 * group holds all N of its elements. So a row's max or sum is a combination over the invocation's
 * elements of one class, then XOR shuffles over lanes / 2, lanes / 4, ... 1. All 0: unknown (the
 * layout is not of this form), attn_cm keeps its softmax in shared memory. Examples: NVIDIA's
 * Vulkan driver, 16 x 16 on 32 lanes, {4, 4, 2} (probed on an H100: rows g and g + 8 in lanes
 * 4g..4g+3, elements 0-3 and 4-7; PTX's documented mma.m16n8k16 form would be {4, 2, 2}); one row
 * per element index across the lanes (lavapipe's 8 x 8, measured) {N, 1, M x N / subgroup}. */
typedef struct vka_matrix_rows {
    uint32_t lanes, run, classes;
    /* P made into A matrices in registers (attn_cm's REG_P): where the device's M x K fp16 A
     * matrix (K = N) puts, in every invocation, its elements at places (row, column) the
     * accumulator's elements of the same invocation hold, in the same order in every one, A's
     * element e is the accumulator's element VKA_A_FROM_ACC(a_from_acc, e) (abi.h: 4 bits each,
     * up to 8 elements). a_elements: how many; 0 where the layouts are not so. PTX's
     * mma.m16n8k16 has it (FlashAttention-2 keeps P in registers so); lavapipe's 8 x 8: the
     * identity. */
    uint32_t a_from_acc, a_elements;
} vka_matrix_rows;

/* Reads coopmat_layout.comp's output: `subgroup` invocations, `stride` words each (the
 * accumulator's element count, then the index r x N + c of each element). Returns 1 and *out where
 * the layout has the form above (the fewest classes that describe it), else 0, *out zeros, and
 * why in `why`. Leaves a_from_acc and a_elements 0. */
int vka_matrix_rows_from_map(const uint32_t *words, uint32_t subgroup, uint32_t stride, uint32_t M, uint32_t N,
                             vka_matrix_rows *out, char *why, size_t why_size);

/* Reads the A matrix's part of the same output (each invocation's words from 1 + M x N on: its
 * element count, then each element's r x K + c) and sets out->a_from_acc and a_elements where
 * K = N and A's elements are the accumulator's places as above; else leaves them 0 and says why
 * in `why`. Returns whether it set them. */
int vka_matrix_a_from_map(const uint32_t *words, uint32_t subgroup, uint32_t stride, uint32_t M, uint32_t N,
                          uint32_t K, vka_matrix_rows *out, char *why, size_t why_size);

#endif
