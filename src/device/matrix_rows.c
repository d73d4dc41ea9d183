/* The accumulator's row layout (matrix_rows.h). */
#include "device/matrix_rows.h"

#include <stdio.h>
#include <stdlib.h>

/* Whether lanes / run / classes describe the map: every (invocation, element) in the row of its
 * group's first invocation's first element of the same class; distinct classes, distinct rows;
 * each group and class holding exactly N elements (with every index seen once: the whole row). */
static int describes(const uint32_t *words, uint32_t subgroup, uint32_t stride, uint32_t E, uint32_t N,
                     const vka_matrix_rows *r)
{
    for (uint32_t x = 0; x < subgroup; x++) {
        const uint32_t lead = x - x % r->lanes;
        for (uint32_t e = 0; e < E; e++) {
            const uint32_t k = e / r->run % r->classes;
            const uint32_t row = words[(size_t)x * stride + 1 + e] / N;
            if (row != words[(size_t)lead * stride + 1 + k * r->run] / N) return 0;
            for (uint32_t k2 = 0; k2 < k; k2++)
                if (row == words[(size_t)lead * stride + 1 + k2 * r->run] / N) return 0;
        }
    }
    return r->lanes * (E / r->classes) == N;
}

int vka_matrix_rows_from_map(const uint32_t *words, uint32_t subgroup, uint32_t stride, uint32_t M, uint32_t N,
                             vka_matrix_rows *out, char *why, size_t why_size)
{
    *out = (vka_matrix_rows){0};
    const uint32_t E = subgroup ? words[0] : 0;
    if (!subgroup || !M || !N || E == 0 || (uint64_t)E * subgroup != (uint64_t)M * N || E + 1 > stride) {
        snprintf(why, why_size, "%u invocations hold %u elements each of a %ux%u matrix", subgroup, E, M, N);
        return 0;
    }
    unsigned char *seen = calloc((size_t)M * N, 1);
    if (!seen) {
        snprintf(why, why_size, "out of host memory");
        return 0;
    }
    int whole = 1;
    for (uint32_t x = 0; x < subgroup && whole; x++) {
        whole = words[(size_t)x * stride] == E;
        for (uint32_t e = 0; e < E && whole; e++) {
            const uint32_t at = words[(size_t)x * stride + 1 + e];
            whole = at < M * N && !seen[at];
            if (whole) seen[at] = 1;
        }
    }
    free(seen);
    if (!whole) {
        snprintf(why, why_size, "the invocations do not hold each element of a %ux%u matrix once", M, N);
        return 0;
    }
    for (uint32_t lanes = 1; lanes <= subgroup; lanes *= 2)
        for (uint32_t classes = 1; classes <= E; classes++)
            for (uint32_t run = 1; run * classes <= E; run *= 2) {
                const vka_matrix_rows r = {lanes, run, classes};
                if (subgroup % lanes == 0 && E % (run * classes) == 0 && describes(words, subgroup, stride, E, N, &r)) {
                    *out = r;
                    return 1;
                }
            }
    snprintf(why, why_size, "a row's elements are not at the same indices of an aligned group of invocations");
    return 0;
}
