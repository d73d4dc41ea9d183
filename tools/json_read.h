/* A small, strict, bounded JSON reader for the files the bench tools write (bench_write_json).
 *
 * The library keeps its JSON reader private and the tools use only the public API, so the tools
 * carry this one. It parses a whole text into a read-only tree: RFC 8259 grammar (objects, arrays,
 * strings, numbers with fraction and exponent, true/false/null), with these limits, each an error
 * rather than a crash: nesting deeper than JSON_READ_MAX_DEPTH, texts larger than
 * JSON_READ_MAX_BYTES, more than JSON_READ_MAX_VALUES values, numbers that overflow a double,
 * \u0000 and UTF-16 surrogate escapes (bench files never hold them). Bytes >= 0x80 inside strings
 * are passed through unchecked. Duplicate object keys are kept; json_get finds the first.
 * Numbers are read with strtod, so the process must run in the "C" locale (as the writers assume).
 */
#ifndef VKATTN_JSON_READ_H
#define VKATTN_JSON_READ_H

#include <stddef.h>

#define JSON_READ_MAX_DEPTH 32           /* the top-level value is depth 1 */
#define JSON_READ_MAX_BYTES (64u << 20)
#define JSON_READ_MAX_VALUES (1u << 22)

typedef enum json_type {
    JSON_NULL = 0,
    JSON_BOOL,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT
} json_type;

typedef struct json_value json_value;
struct json_value {
    json_type type;
    int boolean;             /* JSON_BOOL */
    double number;           /* JSON_NUMBER, always finite */
    const char *string;      /* JSON_STRING: decoded, NUL-terminated */
    const char *key;         /* the member name when the parent is an object, else NULL */
    size_t count;            /* JSON_ARRAY / JSON_OBJECT: number of children */
    const json_value *child; /* first child, NULL if none */
    const json_value *next;  /* next sibling, NULL if last */
};

typedef struct json_doc json_doc;

/* Parses `size` bytes of `text` (not necessarily NUL-terminated; the text is copied). Returns NULL
 * on failure and writes "line L, column C: what is wrong" to err (err may be NULL). */
json_doc *json_parse(const char *text, size_t size, char *err, size_t err_size);
/* Reads and parses a whole file; on failure the message starts with the path. */
json_doc *json_read_file(const char *path, char *err, size_t err_size);
/* Frees the document and every value in it; NULL is a no-op. */
void json_free(json_doc *doc);

const json_value *json_root(const json_doc *doc);
/* The member `key` of an object; NULL if `object` is NULL, not an object, or has no such member. */
const json_value *json_get(const json_value *object, const char *key);
/* The string / number member `key`, or NULL / 0 (and *ok = 0 when ok is given) if missing or
 * of another type. */
const char *json_get_string(const json_value *object, const char *key);
double json_get_number(const json_value *object, const char *key, int *ok);

#endif
