/* A small, strict, bounded JSON reader: see json_read.h. */
#include "json_read.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE SIZE_MAX

/* Values live in one growing array while parsing, so links are indices until the end, when they
 * become the pointers json_value exposes (the array no longer moves by then). */
typedef struct json_link {
    size_t child, next;
} json_link;

struct json_doc {
    char *text;         /* a private copy; strings are decoded in place */
    json_value *values; /* values[0] is the root */
    json_link *links;
    size_t count, capacity;
};

typedef struct parser {
    json_doc *doc;
    char *begin, *p, *end;
    char *err;
    size_t err_size;
} parser;

static int fail(parser *ps, const char *fmt, ...)
{
    if (!ps->err || !ps->err_size) return 1;
    size_t line = 1, column = 1;
    for (const char *c = ps->begin; c < ps->p && c < ps->end; c++) {
        if (*c == '\n') line++, column = 1;
        else column++;
    }
    int n = snprintf(ps->err, ps->err_size, "line %zu, column %zu: ", line, column);
    if (n < 0 || (size_t)n >= ps->err_size) return 1;
    va_list args;
    va_start(args, fmt);
    vsnprintf(ps->err + n, ps->err_size - (size_t)n, fmt, args);
    va_end(args);
    return 1;
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

static int new_value(parser *ps, json_type type, size_t *out)
{
    json_doc *d = ps->doc;
    if (d->count == JSON_READ_MAX_VALUES) return fail(ps, "more than %u values", JSON_READ_MAX_VALUES);
    if (d->count == d->capacity) {
        size_t cap = d->capacity ? d->capacity * 2 : 64;
        json_value *v = realloc(d->values, cap * sizeof *v);
        if (v) d->values = v;
        json_link *l = v ? realloc(d->links, cap * sizeof *l) : NULL;
        if (!l) return fail(ps, "out of memory");
        d->links = l;
        d->capacity = cap;
    }
    memset(&d->values[d->count], 0, sizeof d->values[0]);
    d->values[d->count].type = type;
    d->links[d->count] = (json_link){NONE, NONE};
    *out = d->count++;
    return 0;
}

static int hex4(const char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16u;
        if (d == 16) return 1;
        v = v * 16 + d;
    }
    *out = v;
    return 0;
}

/* Decodes the string at ps->p (a '"') in place: the decoded form is never longer than the quoted
 * one, so the writer never overtakes the reader. */
static int parse_string(parser *ps, const char **out)
{
    char *src = ps->p + 1, *dst = src, *start = src;
    for (;;) {
        if (src >= ps->end) return ps->p = src, fail(ps, "unterminated string");
        unsigned char c = (unsigned char)*src;
        if (c == '"') break;
        if (c < 0x20) return ps->p = src, fail(ps, "control character 0x%02x in a string", c);
        if (c != '\\') {
            *dst++ = (char)c, src++;
            continue;
        }
        if (src + 1 >= ps->end) return ps->p = src, fail(ps, "unterminated string");
        char e = src[1];
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char decoded[] = "\"\\/\b\f\n\r\t";
            *dst++ = decoded[simple - "\"\\/bfnrt"];
            src += 2;
            continue;
        }
        unsigned cp;
        if (e != 'u' || ps->end - src < 6 || hex4(src + 2, &cp))
            return ps->p = src, fail(ps, "bad escape sequence in a string");
        if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF))
            return ps->p = src, fail(ps, "unsupported escape \\u%04x in a string", cp);
        if (cp < 0x80) {
            *dst++ = (char)cp;
        } else if (cp < 0x800) {
            *dst++ = (char)(0xC0 | cp >> 6);
            *dst++ = (char)(0x80 | (cp & 0x3F));
        } else {
            *dst++ = (char)(0xE0 | cp >> 12);
            *dst++ = (char)(0x80 | ((cp >> 6) & 0x3F));
            *dst++ = (char)(0x80 | (cp & 0x3F));
        }
        src += 6;
    }
    *dst = '\0'; /* at or before the closing quote, already read */
    ps->p = src + 1;
    *out = start;
    return 0;
}

static int is_digit(const char *p, const char *end) { return p < end && *p >= '0' && *p <= '9'; }

static int parse_number(parser *ps, double *out)
{
    const char *s = ps->p, *p = s, *end = ps->end;
    if (p < end && *p == '-') p++;
    if (!is_digit(p, end)) return fail(ps, "invalid value");
    if (*p == '0') p++;
    else while (is_digit(p, end)) p++;
    if (p < end && *p == '.') {
        if (!is_digit(++p, end)) return ps->p = (char *)p, fail(ps, "digit expected after '.'");
        while (is_digit(p, end)) p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (!is_digit(p, end)) return ps->p = (char *)p, fail(ps, "digit expected in the exponent");
        while (is_digit(p, end)) p++;
    }
    char buf[64];
    size_t n = (size_t)(p - s);
    if (n >= sizeof buf) return fail(ps, "number longer than %zu characters", sizeof buf - 1);
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    double v = strtod(buf, NULL);
    if (errno == ERANGE && (v > 1 || v < -1)) return fail(ps, "number out of range");
    *out = v; /* underflow to 0 or a denormal is accepted */
    ps->p = (char *)p;
    return 0;
}

static int parse_value(parser *ps, int depth, size_t *out);

/* An array or object whose opening bracket is at ps->p. */
static int parse_container(parser *ps, int depth, json_type type, size_t *out)
{
    const char close = type == JSON_ARRAY ? ']' : '}';
    size_t self, prev = NONE;
    if (depth > JSON_READ_MAX_DEPTH) return fail(ps, "nested deeper than %d levels", JSON_READ_MAX_DEPTH);
    if (new_value(ps, type, &self)) return 1;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return *out = self, 0;
    }
    for (;;) {
        const char *key = NULL;
        size_t child;
        skip_ws(ps);
        if (type == JSON_OBJECT) {
            if (ps->p >= ps->end || *ps->p != '"') return fail(ps, "member name (a string) expected");
            if (parse_string(ps, &key)) return 1;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') return fail(ps, "':' expected after a member name");
            ps->p++;
        }
        if (parse_value(ps, depth + 1, &child)) return 1;
        json_doc *d = ps->doc; /* parse_value may have moved the arrays */
        d->values[child].key = key;
        d->values[self].count++;
        if (prev == NONE) d->links[self].child = child;
        else d->links[prev].next = child;
        prev = child;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return *out = self, 0;
        }
        return fail(ps, "',' or '%c' expected", close);
    }
}

static int parse_value(parser *ps, int depth, size_t *out)
{
    skip_ws(ps);
    if (ps->p >= ps->end) return fail(ps, "unexpected end of the text");
    const char c = *ps->p;
    if (c == '[') return parse_container(ps, depth, JSON_ARRAY, out);
    if (c == '{') return parse_container(ps, depth, JSON_OBJECT, out);
    static const struct { const char *word; json_type type; int boolean; } words[] = {
        {"true", JSON_BOOL, 1}, {"false", JSON_BOOL, 0}, {"null", JSON_NULL, 0}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i].word);
        if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, words[i].word, n) == 0) {
            if (new_value(ps, words[i].type, out)) return 1;
            ps->doc->values[*out].boolean = words[i].boolean;
            ps->p += n;
            return 0;
        }
    }
    const char *string = NULL;
    double number = 0;
    if (c == '"' ? parse_string(ps, &string) : parse_number(ps, &number)) return 1;
    if (new_value(ps, string ? JSON_STRING : JSON_NUMBER, out)) return 1;
    ps->doc->values[*out].string = string;
    ps->doc->values[*out].number = number;
    return 0;
}

json_doc *json_parse(const char *text, size_t size, char *err, size_t err_size)
{
    parser ps = {0};
    ps.err = err, ps.err_size = err_size;
    if (err && err_size) err[0] = '\0';
    if (!text || size > JSON_READ_MAX_BYTES) {
        fail(&ps, "text missing or larger than %u bytes", JSON_READ_MAX_BYTES);
        return NULL;
    }
    json_doc *d = calloc(1, sizeof *d);
    char *copy = malloc(size + 1);
    if (!d || !copy) {
        free(d), free(copy);
        fail(&ps, "out of memory");
        return NULL;
    }
    memcpy(copy, text, size);
    copy[size] = '\0';
    d->text = copy;
    ps.doc = d, ps.begin = ps.p = copy, ps.end = copy + size;
    size_t root;
    if (parse_value(&ps, 1, &root)) goto fail;
    skip_ws(&ps);
    if (ps.p != ps.end) {
        fail(&ps, "unexpected text after the end of the value");
        goto fail;
    }
    for (size_t i = 0; i < d->count; i++) {
        d->values[i].child = d->links[i].child == NONE ? NULL : &d->values[d->links[i].child];
        d->values[i].next = d->links[i].next == NONE ? NULL : &d->values[d->links[i].next];
    }
    return d;
fail:
    json_free(d);
    return NULL;
}

json_doc *json_read_file(const char *path, char *err, size_t err_size)
{
    char detail[400];
    json_doc *doc = NULL;
    char *text = NULL;
    size_t size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(detail, sizeof detail, "cannot open: %s", strerror(errno));
        goto done;
    }
    int oom = 0;
    for (size_t cap = 0;;) { /* grow to the file's size; reading one byte past the limit means too large */
        if (size == cap) {
            if (cap > JSON_READ_MAX_BYTES) break;
            size_t next = cap ? cap * 2 : (size_t)1 << 16;
            if (next > (size_t)JSON_READ_MAX_BYTES + 1) next = (size_t)JSON_READ_MAX_BYTES + 1;
            char *grown = realloc(text, next);
            if (!grown) {
                oom = 1;
                break;
            }
            text = grown, cap = next;
        }
        size_t got = fread(text + size, 1, cap - size, f);
        size += got;
        if (got == 0) break;
    }
    if (oom) snprintf(detail, sizeof detail, "out of memory");
    else if (ferror(f)) snprintf(detail, sizeof detail, "read error");
    else if (size > JSON_READ_MAX_BYTES) snprintf(detail, sizeof detail, "larger than %u bytes", JSON_READ_MAX_BYTES);
    else if (size == 0) snprintf(detail, sizeof detail, "empty file");
    else doc = json_parse(text, size, detail, sizeof detail);
done:
    if (f) fclose(f);
    free(text);
    if (!doc && err && err_size) snprintf(err, err_size, "%s: %s", path, detail);
    return doc;
}

void json_free(json_doc *doc)
{
    if (!doc) return;
    free(doc->text), free(doc->values), free(doc->links);
    free(doc);
}

const json_value *json_root(const json_doc *doc) { return doc && doc->count ? &doc->values[0] : NULL; }

const json_value *json_get(const json_value *object, const char *key)
{
    if (!object || object->type != JSON_OBJECT) return NULL;
    for (const json_value *v = object->child; v; v = v->next)
        if (strcmp(v->key, key) == 0) return v;
    return NULL;
}

const char *json_get_string(const json_value *object, const char *key)
{
    const json_value *v = json_get(object, key);
    return v && v->type == JSON_STRING ? v->string : NULL;
}

double json_get_number(const json_value *object, const char *key, int *ok)
{
    const json_value *v = json_get(object, key);
    int good = v && v->type == JSON_NUMBER;
    if (ok) *ok = good;
    return good ? v->number : 0;
}
