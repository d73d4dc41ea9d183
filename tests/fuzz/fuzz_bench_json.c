/* libFuzzer target: the CLI's reader of bench files (cli_json_parse: cJSON with the checks of
 * tools/cli_json.c around it) and the loader behind `vkattn bench --compare` (tools/bench_compare.c).
 *
 * Input: OLD, optionally followed by a NUL byte and NEW (NEW = OLD when there is no NUL; a NUL can
 * never be part of valid JSON text, so the split loses nothing). Each part is parsed with
 * cli_json_parse and the tree is checked (a broken invariant is __builtin_trap):
 *   - failure: NULL and a non-empty, NUL-terminated message;
 *   - success: the root exists; every value has a known type; numbers are finite; strings and
 *     member names are NUL-terminated within the text's length; object members have names and
 *     array elements do not; containers nest at most CJSON_NESTING_LIMIT deep and hold as many
 *     children as cJSON_GetArraySize says; cJSON_GetObjectItemCaseSensitive finds the first member
 *     of a name, and cli_json_string / cli_json_number agree with it.
 * When both parts parse, they are written to two temporary files and compared with bench_compare,
 * which only sees files (its loader is static). bench_compare reports bad files on stderr; run the
 * target with -close_fd_mask=2 to keep the fuzzer's log readable (tools/run-fuzz.sh does).
 * Everything allocated is freed, so LeakSanitizer reports any leak. (cJSON itself comes from the
 * system, not built with the sanitizers: its own bugs show up only as crashes or broken invariants.)
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cli_json.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) __builtin_trap();                                                             \
    } while (0)

/* The first member of each name is checked against this many members of each object, which keeps
 * one input's work linear in its size. */
#define GET_CHECKS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The per-process scratch files bench_compare reads; made once, removed at exit. */
static char g_dir[64], g_old[96], g_new[96];
static FILE *g_null;

static void remove_scratch(void)
{
    remove(g_old);
    remove(g_new);
    rmdir(g_dir);
    if (g_null) fclose(g_null);
}

static int setup_scratch(void)
{
    if (g_null) return 1;
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/vkattn-fuzz-XXXXXX", tmp && *tmp && strlen(tmp) < 32 ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) return 0;
    snprintf(g_old, sizeof g_old, "%s/old.json", g_dir);
    snprintf(g_new, sizeof g_new, "%s/new.json", g_dir);
    g_null = fopen("/dev/null", "w");
    if (!g_null) return 0;
    atexit(remove_scratch);
    return 1;
}

static int write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(data, 1, size, f) == size;
    return fclose(f) == 0 && ok;
}

static void check_get(const cJSON *object, const cJSON *member)
{
    const cJSON *first = object->child;
    while (strcmp(first->string, member->string) != 0) first = first->next;
    CHECK(cJSON_GetObjectItemCaseSensitive(object, member->string) == first);
    const char *s = cli_json_string(object, member->string);
    CHECK(cJSON_IsString(first) ? s == first->valuestring : s == NULL);
    int ok = -1;
    double v = cli_json_number(object, member->string, &ok);
    CHECK(ok == cJSON_IsNumber(first));
    CHECK(ok ? v == first->valuedouble : v == 0);
}

/* Checks `v` and everything under it; returns the number of values in that subtree. */
static size_t check_value(const cJSON *v, int depth, size_t text_size)
{
    const int type = v->type & 0xFF;
    CHECK(type == cJSON_False || type == cJSON_True || type == cJSON_NULL || type == cJSON_Number ||
          type == cJSON_String || type == cJSON_Array || type == cJSON_Object);
    if (type == cJSON_Number) CHECK(isfinite(v->valuedouble));
    if (type == cJSON_String) CHECK(v->valuestring && memchr(v->valuestring, '\0', text_size + 1));
    if (type != cJSON_Array && type != cJSON_Object) {
        CHECK(v->child == NULL);
        return 1;
    }
    CHECK(depth <= CJSON_NESTING_LIMIT);
    size_t children = 0, values = 1;
    for (const cJSON *c = v->child; c; c = c->next, children++) {
        if (type == cJSON_Object) {
            CHECK(c->string && memchr(c->string, '\0', text_size + 1));
            if (children < GET_CHECKS) check_get(v, c);
        } else {
            CHECK(c->string == NULL);
        }
        values += check_value(c, depth + 1, text_size);
    }
    CHECK(children == (size_t)cJSON_GetArraySize(v));
    /* Lookups by name answer only for objects. */
    if (type == cJSON_Array) CHECK(cli_json_string(v, "") == NULL);
    return values;
}

static cJSON *parse_and_check(const uint8_t *data, size_t size)
{
    char err[256];
    memset(err, 'x', sizeof err);
    cJSON *root = cli_json_parse((const char *)data, size, err, sizeof err);
    if (!root) {
        CHECK(memchr(err, '\0', sizeof err) && err[0] != '\0');
        return NULL;
    }
    CHECK(root->string == NULL && root->next == NULL);
    CHECK(cli_json_string(NULL, "") == NULL);
    /* Every value takes at least one byte of text. */
    CHECK(check_value(root, 1, size) <= size);
    return root;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = size ? memchr(data, '\0', size) : NULL;
    size_t old_size = nul ? (size_t)(nul - data) : size;
    const uint8_t *new_data = nul ? nul + 1 : data;
    size_t new_size = nul ? size - old_size - 1 : size;

    cJSON *old_doc = parse_and_check(data, old_size);
    cJSON *new_doc = nul ? parse_and_check(new_data, new_size) : NULL;
    int both = old_doc && (!nul || new_doc);
    cJSON_Delete(old_doc);
    cJSON_Delete(new_doc);
    if (!both) return 0;

    CHECK(setup_scratch());
    CHECK(write_file(g_old, data, old_size) && write_file(g_new, new_data, new_size));
    int rc = bench_compare(g_null, g_old, g_new);
    CHECK(rc == 0 || rc == 1);
    return 0;
}
