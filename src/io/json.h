/* A small, strict, bounded JSON reader (RFC 8259) for the safetensors header.
 *
 * It pulls tokens from a buffer instead of building a tree: the caller walks the structure it
 * expects and skips what it does not need. Nothing is allocated; strings are decoded into memory
 * the caller provides. Every error is VKATTN_ERROR_FORMAT with the byte offset of the problem,
 * prefixed by the `where` text given to vka_json_init.
 */
#ifndef VKA_JSON_H
#define VKA_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vkattn.h"

/* Objects and arrays nested deeper than this are refused (the top-level value is depth 1). */
#define VKA_JSON_MAX_DEPTH 64

typedef struct vka_json {
    const uint8_t *begin; /* start of the text, for offsets in messages */
    const uint8_t *p;     /* next unread byte */
    const uint8_t *end;
    const char *where;    /* e.g. "safetensors header" */
    vkattn_error *error;
} vka_json;

void vka_json_init(vka_json *j, const uint8_t *text, size_t size, const char *where, vkattn_error *error);

/* Checks that the whole text is well-formed UTF-8 (no overlong forms, surrogates or code points
 * above U+10FFFF). String decoding relies on this having been called. */
vkattn_status vka_json_check_utf8(vka_json *j);

/* Reports a FORMAT error at the current offset: "<where>: <message> at byte N". */
vkattn_status vka_json_fail(vka_json *j, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Skips whitespace and requires `c` next; `context` says what was being read ("tensor entry"). */
vkattn_status vka_json_expect(vka_json *j, char c, const char *context);
/* Skips whitespace; true if the next byte is `c` (not consumed). */
bool vka_json_peek(vka_json *j, char c);

/* Walks an object whose '{' has been consumed. Call with index = 0, 1, 2, ... : sets *done at the
 * closing '}', otherwise decodes the next key into dst (see vka_json_string) and consumes the ':'. */
vkattn_status vka_json_member(vka_json *j, size_t index, bool *done, char *dst, size_t cap, size_t *len);
/* The same with the key nul-terminated in dst (at most cap - 1 bytes of it). */
vkattn_status vka_json_member_key(vka_json *j, size_t index, bool *done, char *dst, size_t cap);
/* Walks an array whose '[' has been consumed: sets *done at the closing ']', otherwise leaves the
 * reader at the next element. */
vkattn_status vka_json_element(vka_json *j, size_t index, bool *done);

/* Skips whitespace and decodes a string. dst may be NULL (check only); otherwise the decoded bytes
 * (which may include NUL from \u0000; not NUL-terminated) must fit `cap`. The decoded form is never
 * longer than the quoted text, so a buffer as large as the whole text always suffices. */
vkattn_status vka_json_string(vka_json *j, char *dst, size_t cap, size_t *len);
/* Skips whitespace and reads a non-negative integer without sign, fraction or exponent, at most
 * `max`. `what` names it in messages ("shape dimension"). */
vkattn_status vka_json_uint(vka_json *j, uint64_t max, const char *what, uint64_t *out);
/* Skips whitespace and reads a number (RFC 8259's grammar) as a double, independently of the
 * locale; one that overflows a double is an error. `what` names it in messages. */
vkattn_status vka_json_number(vka_json *j, const char *what, double *out);
/* Skips whitespace and reads true or false. */
vkattn_status vka_json_bool(vka_json *j, const char *what, bool *out);
/* Skips whitespace; consumes `null` and returns true if it is next. */
bool vka_json_null(vka_json *j);
/* Skips one value of any kind; `depth` is the depth of the value's container. */
vkattn_status vka_json_skip(vka_json *j, unsigned depth);
/* Requires nothing but whitespace after the current position. */
vkattn_status vka_json_finish(vka_json *j);

#endif
