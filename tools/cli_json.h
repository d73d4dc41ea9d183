/* JSON files of the vkattn CLI (bench --json and --compare, heads --json) through cJSON.
 *
 * cJSON (Debian's libcjson-dev) parses and prints; these helpers add what the CLI needs around it:
 * a bounded, whole-file read that refuses what cJSON would let through (text after the value, NUL
 * bytes, numbers that overflow to infinity), messages with a line and column, numbers written as
 * null when they are not finite (JSON has no NaN or infinity), and writes that report a full disk.
 * cJSON accepts a few forms RFC 8259 forbids (leading zeros, "1.", raw control characters in
 * strings, malformed \u escapes); so do these helpers: the CLI reads files it wrote, and refusing
 * them would take a second parser. The library itself does not use cJSON: src/io keeps its own
 * bounded reader for safetensors headers (docs/ARCHITECTURE.md).
 */
#ifndef VKATTN_CLI_JSON_H
#define VKATTN_CLI_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>

#define CLI_JSON_MAX_BYTES (64u << 20) /* larger files are refused */

/* Parses `size` bytes of `text` (not necessarily NUL-terminated): one JSON value, nested at most
 * CJSON_NESTING_LIMIT deep, with only whitespace after it, no NUL byte, and every number finite.
 * Returns the tree (free it with cJSON_Delete), or NULL with what is wrong in err (may be NULL):
 * "line L, column C: not valid JSON" and the like, or "a number is too large for a double". */
cJSON *cli_json_parse(const char *text, size_t size, char *err, size_t err_size);
/* Reads and parses a whole file of at most CLI_JSON_MAX_BYTES; on failure the message starts with
 * the path. */
cJSON *cli_json_read_file(const char *path, char *err, size_t err_size);

/* A whole file of at most `max_bytes`, NUL-terminated (free it); NULL with "cannot open: reason",
 * "is a directory, not a file", "read error after N bytes: reason", "larger than the N-byte limit"
 * or "out of memory reading N bytes" in err. (Here, not in cli.c, because the
 * fuzzed JSON reader is built without the rest of the CLI.) */
char *cli_read_file(const char *path, size_t max_bytes, size_t *size, char *err, size_t err_size);

/* The member `name` of `object` as a string, or NULL when `object` is not an object, has no such
 * member, or it is not a string. Duplicate names: the first member counts. */
const char *cli_json_string(const cJSON *object, const char *name);
/* The number member `name`; 0 and *ok = 0 (ok may be NULL) when it is missing or not a number. */
double cli_json_number(const cJSON *object, const char *name, int *ok);

/* Adds `name`: v to `object`, or `name`: null when v is NaN or infinite. Returns the new member, or
 * NULL when out of memory. */
cJSON *cli_json_add_number(cJSON *object, const char *name, double v);

/* Members added in order, from tables of {name, value}: numbers (null when not finite, as
 * cli_json_add_number) and strings. Return 0, or 1 when out of memory (the object then lacks members
 * and must not be written). */
typedef struct cli_json_num {
    const char *name;
    double value;
} cli_json_num;
typedef struct cli_json_str {
    const char *name, *value;
} cli_json_str;
int cli_json_add_numbers(cJSON *object, const cli_json_num *fields, size_t count);
int cli_json_add_strings(cJSON *object, const cli_json_str *fields, size_t count);
/* Appends `item` (NULL: out of memory) to `array`; 0, or 1 with `item` freed. */
int cli_json_append(cJSON *array, cJSON *item);

/* Writes `root` to `path`, indented. Returns 0, or 1 with "cannot create PATH: reason" or "writing
 * PATH: reason" in err. */
int cli_json_write_file(const cJSON *root, const char *path, char *err, size_t err_size);

#endif
