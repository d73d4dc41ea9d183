/* Internal error reporting: every failure carries a status and a readable message. */
#ifndef VKA_ERROR_H
#define VKA_ERROR_H

#include "vkattn.h"

#if defined(__GNUC__)
#define VKA_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define VKA_PRINTF(fmt_index, first_arg)
#endif

/* Records `status` and a printf-style message in `error` (which may be NULL); returns `status`,
 * so that failure paths read `return vka_error_set(err, VKATTN_ERROR_SHAPE, "...", ...);`. */
vkattn_status vka_error_set(vkattn_error *error, vkattn_status status, const char *fmt, ...)
    VKA_PRINTF(3, 4);

/* Writes a shape for a message, "(2, 3, 4)" ("()" for rank 0), to `dst`. Returns dst. */
const char *vka_format_dims(char *dst, size_t cap, const uint32_t *dims, uint32_t rank);

/* Forwards a failing status to the caller's `fail:` label. Needs `vkattn_status status;` in scope. */
#define VKA_TRY(expr)                                                                              \
    do {                                                                                           \
        status = (expr);                                                                           \
        if (status != VKATTN_OK) goto fail;                                                        \
    } while (0)

#endif
