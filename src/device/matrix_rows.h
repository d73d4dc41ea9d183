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
} vka_matrix_rows;

/* Reads coopmat_layout.comp's output: `subgroup` invocations, `stride` words each (its element
 * count, then the index r x N + c of each element). Returns 1 and *out where the layout has the
 * form above (the fewest classes that describe it), else 0, *out zeros, and why in `why`. */
int vka_matrix_rows_from_map(const uint32_t *words, uint32_t subgroup, uint32_t stride, uint32_t M, uint32_t N,
                             vka_matrix_rows *out, char *why, size_t why_size);

#endif
