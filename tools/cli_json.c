/* JSON files of the CLI through cJSON (see cli_json.h). */
#define _POSIX_C_SOURCE 200809L /* fstat, fileno */
#include "cli_json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* "line L, column C: " for byte `at` of `text`, then the message. */
static void fail_at(const char *text, size_t at, char *err, size_t err_size, const char *what)
{
    if (!err || !err_size) return;
    size_t line = 1, column = 1;
    for (size_t i = 0; i < at; i++) {
        if (text[i] == '\n') line++, column = 1;
        else column++;
    }
    snprintf(err, err_size, "line %zu, column %zu: %s", line, column, what);
}

/* The first number under `v` that is not finite (cJSON reads 1e999 as infinity), or NULL. */
static const cJSON *non_finite(const cJSON *v)
{
    if (cJSON_IsNumber(v) && !isfinite(v->valuedouble)) return v;
    for (const cJSON *c = v->child; c; c = c->next) {
        const cJSON *bad = non_finite(c);
        if (bad) return bad;
    }
    return NULL;
}

/* `text` has a NUL at text[size], so cJSON cannot read past the end whatever it does. */
static cJSON *parse_terminated(const char *text, size_t size, char *err, size_t err_size)
{
    const char *nul = memchr(text, '\0', size);
    if (nul) { /* cJSON would take it for whitespace or the end of a string */
        fail_at(text, (size_t)(nul - text), err, err_size, "a NUL byte, which JSON text never holds");
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, size, &end, 0);
    if (!root) {
        fail_at(text, end && end >= text ? (size_t)(end - text) : 0, err, err_size,
                size ? "not valid JSON" : "empty text");
        return NULL;
    }
    while (end < text + size && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) end++;
    if (end != text + size) {
        fail_at(text, (size_t)(end - text), err, err_size, "text after the end of the value");
        cJSON_Delete(root);
        return NULL;
    }
    if (non_finite(root)) {
        if (err && err_size) snprintf(err, err_size, "a number is too large for a double");
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

cJSON *cli_json_parse(const char *text, size_t size, char *err, size_t err_size)
{
    if (err && err_size) err[0] = '\0';
    if (!text || size > CLI_JSON_MAX_BYTES) {
        if (err && err_size) snprintf(err, err_size, "text missing or larger than %u bytes", CLI_JSON_MAX_BYTES);
        return NULL;
    }
    char *copy = malloc(size + 1);
    if (!copy) {
        if (err && err_size) snprintf(err, err_size, "out of memory");
        return NULL;
    }
    memcpy(copy, text, size);
    copy[size] = '\0';
    cJSON *root = parse_terminated(copy, size, err, err_size);
    free(copy);
    return root;
}

char *cli_read_file(const char *path, size_t max_bytes, size_t *out_size, char *err, size_t err_size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_size, "cannot open: %s", strerror(errno));
        return NULL;
    }
    struct stat st; /* fopen takes a directory, whose read then fails */
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(err, err_size, "is a directory, not a file");
        fclose(f);
        return NULL;
    }
    char *text = NULL;
    size_t size = 0, cap = 0;
    int read_errno = 0;
    for (;;) { /* grow to the file's size; reading one byte past the limit means too large */
        if (size == cap) {
            if (cap > max_bytes) break;
            size_t next = cap ? cap * 2 : (size_t)1 << 16;
            if (next > max_bytes + 1) next = max_bytes + 1;
            char *grown = realloc(text, next + 1);
            if (!grown) break;
            text = grown, cap = next;
        }
        errno = 0;
        size_t got = fread(text + size, 1, cap - size, f);
        read_errno = errno;
        size += got;
        if (got == 0) break;
    }
    int bad = 1;
    if (size == cap && cap <= max_bytes)
        snprintf(err, err_size, "out of memory reading %zu bytes", cap + 1);
    else if (ferror(f))
        snprintf(err, err_size, "read error after %zu bytes: %s", size, strerror(read_errno ? read_errno : EIO));
    else if (size > max_bytes)
        snprintf(err, err_size, "larger than the %zu-byte limit", max_bytes);
    else
        bad = 0;
    fclose(f);
    if (bad) {
        free(text);
        return NULL;
    }
    text[size] = '\0';
    *out_size = size;
    return text;
}

cJSON *cli_json_read_file(const char *path, char *err, size_t err_size)
{
    char detail[400] = "";
    size_t size = 0;
    cJSON *root = NULL;
    char *text = cli_read_file(path, CLI_JSON_MAX_BYTES, &size, detail, sizeof detail);
    if (text && size == 0) snprintf(detail, sizeof detail, "empty file");
    else if (text) root = parse_terminated(text, size, detail, sizeof detail);
    free(text);
    if (!root && err && err_size) snprintf(err, err_size, "%s: %s", path, detail);
    return root;
}

const char *cli_json_string(const cJSON *object, const char *name)
{
    const cJSON *v = cJSON_IsObject(object) ? cJSON_GetObjectItemCaseSensitive(object, name) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

double cli_json_number(const cJSON *object, const char *name, int *ok)
{
    const cJSON *v = cJSON_IsObject(object) ? cJSON_GetObjectItemCaseSensitive(object, name) : NULL;
    int good = cJSON_IsNumber(v);
    if (ok) *ok = good;
    return good ? v->valuedouble : 0;
}

cJSON *cli_json_add_number(cJSON *object, const char *name, double v)
{
    return isfinite(v) ? cJSON_AddNumberToObject(object, name, v) : cJSON_AddNullToObject(object, name);
}

int cli_json_add_numbers(cJSON *object, const cli_json_num *fields, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (!cli_json_add_number(object, fields[i].name, fields[i].value)) return 1;
    return 0;
}

int cli_json_add_strings(cJSON *object, const cli_json_str *fields, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (!cJSON_AddStringToObject(object, fields[i].name, fields[i].value)) return 1;
    return 0;
}

int cli_json_append(cJSON *array, cJSON *item)
{
    if (item && cJSON_AddItemToArray(array, item)) return 0;
    cJSON_Delete(item);
    return 1;
}

int cli_json_write_file(const cJSON *root, const char *path, char *err, size_t err_size)
{
    char *text = cJSON_Print(root);
    if (!text) {
        if (err && err_size) snprintf(err, err_size, "writing %s: out of memory", path);
        return 1;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        if (err && err_size) snprintf(err, err_size, "cannot create %s: %s", path, strerror(errno));
        cJSON_free(text);
        return 1;
    }
    errno = 0;
    int bad = fputs(text, f) == EOF || fputc('\n', f) == EOF;
    int saved = errno;
    if (fclose(f) != 0 && !bad) bad = 1, saved = errno; /* a full disk may show up only here */
    cJSON_free(text);
    if (bad && err && err_size) snprintf(err, err_size, "writing %s: %s", path, strerror(saved ? saved : EIO));
    return bad;
}
