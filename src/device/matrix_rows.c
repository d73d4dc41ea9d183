/* The accumulator's row layout and the A matrix's places (matrix_rows.h). */
#include "device/matrix_rows.h"

#include <stdio.h>
#include <stdlib.h>

#include "abi.h"

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

int vka_matrix_a_from_map(const uint32_t *words, uint32_t subgroup, uint32_t stride, uint32_t M, uint32_t N,
                          uint32_t K, vka_matrix_rows *out, char *why, size_t why_size)
{
    out->a_from_acc = 0, out->a_elements = 0;
    const uint32_t E = subgroup ? words[0] : 0, a_at = 1 + M * N;
    const uint32_t EA = subgroup && a_at < stride ? words[a_at] : 0;
    if (!subgroup || K != N || E == 0 || EA != E || E > 8 || a_at + 1 + EA > stride) {
        snprintf(why, why_size, "an A matrix's %u elements (%ux%u) are not the accumulator's %u (%ux%u), up to 8", EA, M,
                 K, E, M, N);
        return 0;
    }
    /* invocation 0's order (each A element's source, each source once), then every invocation's
     * elements at the places it says (the values r x K + c and r x N + c are the same place, K = N) */
    uint32_t from = 0, taken = 0;
    for (uint32_t e = 0; e < E; e++) {
        uint32_t f = 0;
        while (f < E && words[1 + f] != words[a_at + 1 + e]) f++;
        if (f == E || (taken >> f & 1u)) {
            snprintf(why, why_size, "an A matrix's element %u is at a place the accumulator's elements are not", e);
            return 0;
        }
        from |= f << (4 * e), taken |= 1u << f;
    }
    for (uint32_t x = 0; x < subgroup; x++) {
        const uint32_t *w = words + (size_t)x * stride;
        for (uint32_t e = 0; e < E; e++)
            if (w[a_at] != E || w[1 + VKA_A_FROM_ACC(from, e)] != w[a_at + 1 + e]) {
                snprintf(why, why_size, "invocation %u holds an A matrix's elements in another order or place", x);
                return 0;
            }
    }
    out->a_from_acc = from, out->a_elements = E;
    return 1;
}
