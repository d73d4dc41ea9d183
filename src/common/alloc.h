/* Host allocations made on behalf of a context go through these, so failure injection can reach
 * them (src/common/faults.h). `faults` may be NULL. Free with free(). */
#ifndef VKA_ALLOC_H
#define VKA_ALLOC_H

#include <stdlib.h>

#include "common/faults.h"

static inline void *vka_malloc(vka_faults *faults, size_t bytes)
{
    return vka_fault_host(faults) ? NULL : malloc(bytes ? bytes : 1);
}

static inline void *vka_calloc(vka_faults *faults, size_t count, size_t size)
{
    return vka_fault_host(faults) ? NULL : calloc(count ? count : 1, size ? size : 1);
}

static inline void *vka_realloc(vka_faults *faults, void *p, size_t bytes)
{
    return vka_fault_host(faults) ? NULL : realloc(p, bytes ? bytes : 1);
}

#endif
