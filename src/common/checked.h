/* Overflow-checked size arithmetic. Every size derived from user shapes goes through these. */
#ifndef VKA_CHECKED_H
#define VKA_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* *out = a * b; false (and *out untouched) if the product does not fit size_t. */
static inline bool vka_mul_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

/* *out = a + b; false if the sum does not fit size_t. */
static inline bool vka_add_size(size_t a, size_t b, size_t *out)
{
    if (b > SIZE_MAX - a) return false;
    *out = a + b;
    return true;
}

/* *out = product of n factors; false on overflow. */
static inline bool vka_product_size(const size_t *factors, size_t n, size_t *out)
{
    size_t p = 1;
    for (size_t i = 0; i < n; i++)
        if (!vka_mul_size(p, factors[i], &p)) return false;
    *out = p;
    return true;
}

#endif
