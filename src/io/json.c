/* A small, strict, bounded JSON reader: see json.h. */
#include "io/json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"

void vka_json_init(vka_json *j, const uint8_t *text, size_t size, const char *where, vkattn_error *error)
{
    j->begin = text;
    j->p = text;
    j->end = text + size;
    j->where = where;
    j->error = error;
}

vkattn_status vka_json_fail(vka_json *j, const char *fmt, ...)
{
    char message[400];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    return vka_error_set(j->error, VKATTN_ERROR_FORMAT, "%s: %s at byte %zu", j->where, message,
                         (size_t)(j->p - j->begin));
}

/* Length of the UTF-8 sequence at p (Unicode table 3-7), or 0 if it is not well formed. */
static size_t utf8_sequence(const uint8_t *p, const uint8_t *end)
{
    size_t avail = (size_t)(end - p);
    uint8_t c = p[0];
    if (c < 0x80) return 1;
    uint8_t lo = 0x80, hi = 0xBF;
    size_t n;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F; /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    if (avail < n || p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) return 0;
    return n;
}

vkattn_status vka_json_check_utf8(vka_json *j)
{
    for (const uint8_t *p = j->begin; p < j->end;) {
        size_t n = utf8_sequence(p, j->end);
        if (n == 0) {
            j->p = p;
            return vka_json_fail(j, "text is not valid UTF-8 (byte 0x%02x)", p[0]);
        }
        p += n;
    }
    return VKATTN_OK;
}

static void skip_ws(vka_json *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

/* Names the byte at the reader for messages: "'x'", "byte 0x01" or "the end of the text". */
static const char *describe_next(const vka_json *j, char *buf, size_t cap)
{
    if (j->p >= j->end) return "the end of the text";
    if (*j->p >= 0x20 && *j->p < 0x7F)
        snprintf(buf, cap, "'%c'", *j->p);
    else
        snprintf(buf, cap, "byte 0x%02x", *j->p);
    return buf;
}

bool vka_json_peek(vka_json *j, char c)
{
    skip_ws(j);
    return j->p < j->end && *j->p == (uint8_t)c;
}

vkattn_status vka_json_expect(vka_json *j, char c, const char *context)
{
    if (vka_json_peek(j, c)) {
        j->p++;
        return VKATTN_OK;
    }
    char buf[16];
    return vka_json_fail(j, "expected '%c' in %s but found %s", c, context, describe_next(j, buf, sizeof buf));
}

vkattn_status vka_json_member(vka_json *j, size_t index, bool *done, char *dst, size_t cap, size_t *len)
{
    vkattn_status status;
    *done = false;
    if (vka_json_peek(j, '}')) {
        j->p++;
        *done = true;
        return VKATTN_OK;
    }
    /* After a ',' a key must follow, so a trailing comma fails below. */
    if (index > 0) VKA_TRY(vka_json_expect(j, ',', "an object (between members)"));
    if (!vka_json_peek(j, '"')) {
        char buf[16];
        return vka_json_fail(j, "expected a string key but found %s", describe_next(j, buf, sizeof buf));
    }
    VKA_TRY(vka_json_string(j, dst, cap, len));
    return vka_json_expect(j, ':', "an object (after a key)");
fail:
    return status;
}

vkattn_status vka_json_member_key(vka_json *j, size_t index, bool *done, char *dst, size_t cap)
{
    size_t len = 0;
    vkattn_status status = vka_json_member(j, index, done, dst, cap - 1, &len);
    if (status == VKATTN_OK && !*done) dst[len] = '\0';
    return status;
}

vkattn_status vka_json_element(vka_json *j, size_t index, bool *done)
{
    *done = false;
    if (vka_json_peek(j, ']')) {
        j->p++;
        *done = true;
        return VKATTN_OK;
    }
    if (index > 0) {
        vkattn_status status = vka_json_expect(j, ',', "an array (between elements)");
        if (status != VKATTN_OK) return status;
        if (vka_json_peek(j, ']')) return vka_json_fail(j, "trailing comma in an array");
    }
    return VKATTN_OK;
}

static int hex_digit(uint8_t c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Reads the 4 hex digits after "\u" (j->p at the 'u'). */
static vkattn_status read_u_escape(vka_json *j, uint32_t *out)
{
    if (j->end - j->p < 5) return vka_json_fail(j, "truncated \\u escape");
    uint32_t v = 0;
    for (int i = 1; i <= 4; i++) {
        int d = hex_digit(j->p[i]);
        if (d < 0) return vka_json_fail(j, "\\u escape needs 4 hex digits");
        v = v << 4 | (uint32_t)d;
    }
    j->p += 5;
    *out = v;
    return VKATTN_OK;
}

/* Appends decoded bytes; dst NULL only counts. */
static vkattn_status put_bytes(vka_json *j, char *dst, size_t cap, size_t *len, const uint8_t *bytes, size_t n)
{
    if (dst) {
        if (n > cap - *len) return vka_json_fail(j, "string does not fit its buffer");
        memcpy(dst + *len, bytes, n);
    }
    *len += n;
    return VKATTN_OK;
}

/* Decodes an escape (j->p just after the backslash) to UTF-8 in out; sets *n. */
static vkattn_status decode_escape(vka_json *j, uint8_t out[4], size_t *n)
{
    static const char from[] = "\"\\/bfnrt";
    static const char to[] = "\"\\/\b\f\n\r\t";
    if (j->p >= j->end) return vka_json_fail(j, "unterminated string");
    const char *hit = *j->p ? strchr(from, *j->p) : NULL;
    if (hit) {
        out[0] = (uint8_t)to[hit - from];
        *n = 1;
        j->p++;
        return VKATTN_OK;
    }
    if (*j->p != 'u') return vka_json_fail(j, "invalid escape '\\%c' in a string", *j->p >= 0x20 && *j->p < 0x7F ? *j->p : '?');
    uint32_t cp = 0;
    vkattn_status status = read_u_escape(j, &cp);
    if (status != VKATTN_OK) return status;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return vka_json_fail(j, "unpaired low surrogate \\u%04x", (unsigned)cp);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        uint32_t low = 0;
        if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
            return vka_json_fail(j, "high surrogate \\u%04x is not followed by a low one", (unsigned)cp);
        j->p++;
        if ((status = read_u_escape(j, &low)) != VKATTN_OK) return status;
        if (low < 0xDC00 || low > 0xDFFF)
            return vka_json_fail(j, "high surrogate \\u%04x is followed by \\u%04x", (unsigned)cp, (unsigned)low);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        *n = 1;
    } else if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | cp >> 6);
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        *n = 2;
    } else if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | cp >> 12);
        out[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        *n = 3;
    } else {
        out[0] = (uint8_t)(0xF0 | cp >> 18);
        out[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        out[3] = (uint8_t)(0x80 | (cp & 0x3F));
        *n = 4;
    }
    return VKATTN_OK;
}

vkattn_status vka_json_string(vka_json *j, char *dst, size_t cap, size_t *len)
{
    vkattn_status status;
    size_t n = 0;
    if (!vka_json_peek(j, '"')) {
        char buf[16];
        return vka_json_fail(j, "expected a string but found %s", describe_next(j, buf, sizeof buf));
    }
    const uint8_t *start = j->p++;
    for (;;) {
        if (j->p >= j->end) {
            j->p = start;
            return vka_json_fail(j, "unterminated string");
        }
        uint8_t c = *j->p;
        if (c == '"') break;
        if (c < 0x20) return vka_json_fail(j, "control character 0x%02x in a string", c);
        if (c == '\\') {
            uint8_t bytes[4];
            size_t count = 0;
            j->p++;
            VKA_TRY(decode_escape(j, bytes, &count));
            VKA_TRY(put_bytes(j, dst, cap, &n, bytes, count));
        } else {
            /* Runs of plain bytes are copied as they are: vka_json_check_utf8 vouched for them. */
            const uint8_t *run = j->p;
            while (j->p < j->end && *j->p != '"' && *j->p != '\\' && *j->p >= 0x20) j->p++;
            VKA_TRY(put_bytes(j, dst, cap, &n, run, (size_t)(j->p - run)));
        }
    }
    j->p++;
    if (len) *len = n;
    return VKATTN_OK;
fail:
    return status;
}

static bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

vkattn_status vka_json_uint(vka_json *j, uint64_t max, const char *what, uint64_t *out)
{
    skip_ws(j);
    if (j->p < j->end && *j->p == '-') return vka_json_fail(j, "%s is negative", what);
    if (j->p >= j->end || !is_digit(*j->p)) {
        char buf[16];
        return vka_json_fail(j, "%s must be a non-negative integer, found %s", what, describe_next(j, buf, sizeof buf));
    }
    if (*j->p == '0' && j->end - j->p > 1 && is_digit(j->p[1]))
        return vka_json_fail(j, "%s has a leading zero", what);
    uint64_t v = 0;
    for (; j->p < j->end && is_digit(*j->p); j->p++) {
        uint64_t d = (uint64_t)(*j->p - '0');
        if (v > (max - d) / 10) return vka_json_fail(j, "%s is larger than %llu", what, (unsigned long long)max);
        v = v * 10 + d;
    }
    if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
        return vka_json_fail(j, "%s must be an integer (no fraction or exponent)", what);
    *out = v;
    return VKATTN_OK;
}

static vkattn_status skip_number(vka_json *j)
{
    const uint8_t *p = j->p, *end = j->end;
    if (p < end && *p == '-') p++;
    if (p >= end || !is_digit(*p)) return vka_json_fail(j, "invalid number");
    if (*p == '0')
        p++;
    else
        while (p < end && is_digit(*p)) p++;
    if (p < end && *p == '.') {
        if (++p >= end || !is_digit(*p)) return vka_json_fail(j, "invalid number (no digit after '.')");
        while (p < end && is_digit(*p)) p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        if (++p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || !is_digit(*p)) return vka_json_fail(j, "invalid number (no digit in the exponent)");
        while (p < end && is_digit(*p)) p++;
    }
    j->p = p;
    return VKATTN_OK;
}

/* 10^e for 0 <= e <= 22: exact in double. */
static double exact_power_of_ten(int e)
{
    double v = 1.0;
    for (int i = 0; i < e; i++) v *= 10.0;
    return v;
}

vkattn_status vka_json_number(vka_json *j, const char *what, double *out)
{
    skip_ws(j);
    const uint8_t *start = j->p;
    if (j->p >= j->end || (*j->p != '-' && !is_digit(*j->p))) {
        char buf[16];
        return vka_json_fail(j, "%s must be a number, found %s", what, describe_next(j, buf, sizeof buf));
    }
    vkattn_status status = skip_number(j);
    if (status != VKATTN_OK) return status;
    /* The decimal digits as a mantissa of at most 19 significant digits and a power of ten; no
     * strtod, whose decimal point follows the application's locale. */
    const uint8_t *p = start;
    bool negative = *p == '-';
    p += negative;
    uint64_t mantissa = 0;
    int digits = 0;
    long exponent = 0;
    for (bool fraction = false; p < j->p && *p != 'e' && *p != 'E'; p++) {
        if (*p == '.') {
            fraction = true;
            continue;
        }
        int d = *p - '0';
        if (mantissa == 0 && d == 0) { /* a leading zero: only a fraction's moves the point */
            exponent -= fraction;
        } else if (digits < 19) {
            mantissa = mantissa * 10 + (uint64_t)d;
            digits++;
            exponent -= fraction;
        } else {
            exponent += !fraction; /* a dropped digit left of the point still scales */
        }
    }
    if (p < j->p) { /* the exponent, clamped far past double's range */
        p++;
        bool minus = *p == '-';
        p += *p == '+' || *p == '-';
        long e = 0;
        for (; p < j->p; p++) e = e < 100000 ? e * 10 + (*p - '0') : e;
        exponent += minus ? -e : e;
    }
    double v;
    if (mantissa == 0) v = 0.0;
    else if (mantissa < (1ull << 53) && exponent >= 0 && exponent <= 22)
        v = (double)mantissa * exact_power_of_ten((int)exponent); /* one rounding: correctly rounded */
    else if (mantissa < (1ull << 53) && exponent < 0 && exponent >= -22)
        v = (double)mantissa / exact_power_of_ten((int)-exponent);
    else if (exponent > 400) v = HUGE_VAL;
    else if (exponent < -400) v = 0.0;
    else v = (double)((long double)mantissa * powl(10.0L, (long double)exponent));
    if (!isfinite(v)) {
        j->p = start;
        return vka_json_fail(j, "%s is too large for a double", what);
    }
    *out = negative ? -v : v;
    return VKATTN_OK;
}

vkattn_status vka_json_bool(vka_json *j, const char *what, bool *out)
{
    skip_ws(j);
    for (int value = 0; value < 2; value++) {
        const char *word = value ? "true" : "false";
        size_t n = strlen(word);
        if ((size_t)(j->end - j->p) >= n && memcmp(j->p, word, n) == 0) {
            j->p += n;
            *out = value != 0;
            return VKATTN_OK;
        }
    }
    char buf[16];
    return vka_json_fail(j, "%s must be true or false, found %s", what, describe_next(j, buf, sizeof buf));
}

bool vka_json_null(vka_json *j)
{
    skip_ws(j);
    if (j->end - j->p >= 4 && memcmp(j->p, "null", 4) == 0) {
        j->p += 4;
        return true;
    }
    return false;
}

static vkattn_status skip_literal(vka_json *j)
{
    static const char *const words[] = {"true", "false", "null"};
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(words[i]);
        if ((size_t)(j->end - j->p) >= n && memcmp(j->p, words[i], n) == 0) {
            j->p += n;
            return VKATTN_OK;
        }
    }
    char buf[16];
    return vka_json_fail(j, "unexpected %s where a value should start", describe_next(j, buf, sizeof buf));
}

static vkattn_status skip_container(vka_json *j, unsigned depth)
{
    vkattn_status status;
    bool object = *j->p == '{', done = false;
    if (depth >= VKA_JSON_MAX_DEPTH) return vka_json_fail(j, "values nested deeper than %d levels", VKA_JSON_MAX_DEPTH);
    j->p++;
    for (size_t i = 0;; i++) {
        if (object)
            VKA_TRY(vka_json_member(j, i, &done, NULL, 0, NULL));
        else
            VKA_TRY(vka_json_element(j, i, &done));
        if (done) return VKATTN_OK;
        VKA_TRY(vka_json_skip(j, depth + 1));
    }
fail:
    return status;
}

vkattn_status vka_json_skip(vka_json *j, unsigned depth)
{
    skip_ws(j);
    if (j->p >= j->end) return vka_json_fail(j, "text ends where a value should start");
    switch (*j->p) {
    case '{':
    case '[': return skip_container(j, depth);
    case '"': return vka_json_string(j, NULL, 0, NULL);
    case '-':
    case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9': return skip_number(j);
    default: return skip_literal(j);
    }
}

vkattn_status vka_json_finish(vka_json *j)
{
    skip_ws(j);
    if (j->p < j->end) {
        char buf[16];
        return vka_json_fail(j, "unexpected %s after the end of the JSON value", describe_next(j, buf, sizeof buf));
    }
    return VKATTN_OK;
}
