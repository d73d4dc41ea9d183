/* Text built piece by piece into a caller's buffer (vkattn_forward_explain's plan text): what does
 * not fit is counted, so the caller learns the length the whole text needs. */
#ifndef VKA_TEXT_H
#define VKA_TEXT_H

#include <stddef.h>

#include "common/error.h" /* VKA_PRINTF */

typedef struct vka_text {
    char *buf;      /* NULL when cap is 0 */
    size_t cap, len; /* len may pass cap: the length the whole text needs */
} vka_text;

/* Appends printf-style text (nul-terminated in the buffer as far as it fits). */
void vka_text_put(vka_text *t, const char *fmt, ...) VKA_PRINTF(2, 3);

#endif
