#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

vkattn_status vka_error_set(vkattn_error *error, vkattn_status status, const char *fmt, ...)
{
    if (error) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(error->message, sizeof error->message, fmt, args);
        va_end(args);
        error->status = status;
    }
    return status;
}

const char *vka_format_dims(char *dst, size_t cap, const uint32_t *dims, uint32_t rank)
{
    size_t used = (size_t)snprintf(dst, cap, "(");
    for (uint32_t i = 0; i < rank && used < cap; i++)
        used += (size_t)snprintf(dst + used, cap - used, i ? ", %u" : "%u", dims[i]);
    if (used < cap) snprintf(dst + used, cap - used, ")");
    return dst;
}
