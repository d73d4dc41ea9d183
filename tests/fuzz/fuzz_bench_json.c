/* libFuzzer target: the tools' JSON reader (tools/json_read.c) and the loader behind
 * `vkattn bench --compare` (tools/bench_compare.c).
 *
 * Input: OLD, optionally followed by a NUL byte and NEW (NEW = OLD when there is no NUL; a NUL can
 * never be part of valid JSON text, so the split loses nothing). Each part is parsed with
 * json_parse and the tree is checked (a broken invariant is __builtin_trap):
 *   - failure: NULL and a non-empty, NUL-terminated message;
 *   - success: the root exists; every container's count is its number of children; object members
 *     have keys and array elements do not; strings are NUL-terminated within the text's length;
 *     numbers are finite; containers nest at most JSON_READ_MAX_DEPTH deep; json_get finds the
 *     first member of a name, and json_get_string / json_get_number agree with it.
 * When both parts parse, they are written to two temporary files and compared with bench_compare,
 * which only sees files (its loader is static). bench_compare reports bad files on stderr; run the
 * target with -close_fd_mask=2 to keep the fuzzer's log readable (tools/run-fuzz.sh does).
 * Everything allocated is freed, so LeakSanitizer reports any leak.
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
#include "json_read.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) __builtin_trap();                                                             \
    } while (0)

/* json_get is checked against the first this many members of each object, which keeps one
 * input's work linear in its size. */
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

static void check_get(const json_value *object, const json_value *member)
{
    const json_value *first = object->child;
    while (strcmp(first->key, member->key) != 0) first = first->next;
    CHECK(json_get(object, member->key) == first);
    const char *s = json_get_string(object, member->key);
    CHECK(first->type == JSON_STRING ? s == first->string : s == NULL);
    int ok = -1;
    double v = json_get_number(object, member->key, &ok);
    CHECK(ok == (first->type == JSON_NUMBER));
    CHECK(ok ? v == first->number : v == 0);
}

/* Checks `v` and everything under it; returns the number of values in that subtree. */
static size_t check_value(const json_value *v, int depth, size_t text_size)
{
    CHECK((unsigned)v->type <= JSON_OBJECT);
    if (v->type == JSON_NUMBER) CHECK(isfinite(v->number));
    if (v->type == JSON_BOOL) CHECK(v->boolean == 0 || v->boolean == 1);
    if (v->type == JSON_STRING) CHECK(v->string && memchr(v->string, '\0', text_size + 1));
    if (v->type != JSON_ARRAY && v->type != JSON_OBJECT) {
        CHECK(v->count == 0 && v->child == NULL);
        return 1;
    }
    /* The limit is on containers: a scalar may sit one level below the deepest one. */
    CHECK(depth <= JSON_READ_MAX_DEPTH);
    size_t children = 0, values = 1;
    for (const json_value *c = v->child; c; c = c->next, children++) {
        CHECK(children < v->count);
        if (v->type == JSON_OBJECT) {
            CHECK(c->key && memchr(c->key, '\0', text_size + 1));
            if (children < GET_CHECKS) check_get(v, c);
        } else {
            CHECK(c->key == NULL);
        }
        values += check_value(c, depth + 1, text_size);
    }
    CHECK(children == v->count);
    /* json_get looks only into objects. */
    if (v->type == JSON_ARRAY) CHECK(json_get(v, "") == NULL && json_get_string(v, "") == NULL);
    return values;
}

static json_doc *parse_and_check(const uint8_t *data, size_t size)
{
    char err[256];
    memset(err, 'x', sizeof err);
    json_doc *doc = json_parse((const char *)data, size, err, sizeof err);
    if (!doc) {
        CHECK(memchr(err, '\0', sizeof err) && err[0] != '\0');
        return NULL;
    }
    const json_value *root = json_root(doc);
    CHECK(root && root->key == NULL && root->next == NULL);
    CHECK(json_get(NULL, "") == NULL);
    /* Every value takes at least one byte of text. */
    CHECK(check_value(root, 1, size) <= size);
    return doc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = size ? memchr(data, '\0', size) : NULL;
    size_t old_size = nul ? (size_t)(nul - data) : size;
    const uint8_t *new_data = nul ? nul + 1 : data;
    size_t new_size = nul ? size - old_size - 1 : size;

    json_doc *old_doc = parse_and_check(data, old_size);
    json_doc *new_doc = nul ? parse_and_check(new_data, new_size) : NULL;
    int both = old_doc && (!nul || new_doc);
    json_free(old_doc);
    json_free(new_doc);
    if (!both) return 0;

    CHECK(setup_scratch());
    CHECK(write_file(g_old, data, old_size) && write_file(g_new, new_data, new_size));
    int rc = bench_compare(g_null, g_old, g_new);
    CHECK(rc == 0 || rc == 1);
    return 0;
}
