/* Token trees, as speculative decoding drafts them, for the tests of masks among a cached
 * forward's new tokens (vkattn_cached_forward_desc.new_token_mask): a tree of n tokens is each
 * token's parent among them (-1 for a root, whose parent is the history). Any order: a parent may
 * come after its child, which the masks allow. */
#ifndef VKATTN_TEST_TREE_H
#define VKATTN_TEST_TREE_H

#include <stdint.h>
#include <string.h>

/* Token i's depth: its ancestors among the tree's tokens. */
static inline uint32_t tree_depth(const int *parents, uint32_t i)
{
    uint32_t d = 0;
    for (int p = parents[i]; p >= 0; p = parents[p]) d++;
    return d;
}

/* Whether token j is token i or one of its ancestors. */
static inline int tree_sees(const int *parents, uint32_t i, uint32_t j)
{
    for (int p = (int)i; p >= 0; p = parents[p])
        if ((uint32_t)p == j) return 1;
    return 0;
}

/* The tree's mask as new_token_mask takes it: n x n bytes, [i][j] = 1 when i may attend to j. */
static inline void tree_mask(const int *parents, uint32_t n, uint8_t *mask)
{
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n; j++) mask[i * n + j] = (uint8_t)tree_sees(parents, i, j);
}

/* Root-to-token path of token i into path (depth + 1 entries); returns its length. */
static inline uint32_t tree_path(const int *parents, uint32_t i, uint32_t *path)
{
    uint32_t n = tree_depth(parents, i) + 1, k = n;
    for (int p = (int)i; p >= 0; p = parents[p]) path[--k] = (uint32_t)p;
    return n;
}

/* The history of P tokens and the tree as one self-attention forward of P + n tokens for the CPU
 * reference: a bool attn_mask ((P + n)^2 bytes, 1 = may not attend) that is causal over the
 * history and lets tree token i see the whole history and its own ancestors, and the positions
 * (0 .. P - 1, then P + depth). */
static inline void tree_reference(const int *parents, uint32_t P, uint32_t n, uint8_t *attn_mask, uint32_t *positions)
{
    const uint32_t S = P + n;
    for (uint32_t r = 0; r < S; r++) {
        positions[r] = r < P ? r : P + tree_depth(parents, r - P);
        for (uint32_t j = 0; j < S; j++) {
            int sees = r < P ? j <= r : j < P || tree_sees(parents, r - P, j - P);
            attn_mask[r * S + j] = (uint8_t)!sees;
        }
    }
}

#endif
