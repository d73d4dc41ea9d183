#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CLI_WORD_MAX 64 /* longer words get no suggestion */

/* Optimal string alignment distance: inserting, deleting or changing a character, or swapping two
 * adjacent ones, costs 1 ("bnech" is 1 from "bench"). SIZE_MAX for words past CLI_WORD_MAX. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > CLI_WORD_MAX || m > CLI_WORD_MAX) return SIZE_MAX;
    size_t rows[3][CLI_WORD_MAX + 1]; /* rows i-2, i-1 and i of the table, in turn */
    for (size_t j = 0; j <= m; j++) rows[0][j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t *two = rows[(i + 1) % 3], *prev = rows[(i + 2) % 3], *cur = rows[i % 3];
        cur[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t d = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < d) d = prev[j] + 1;
            if (cur[j - 1] + 1 < d) d = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && two[j - 2] + 1 < d) d = two[j - 2] + 1;
            cur[j] = d;
        }
    }
    return rows[n % 3][m];
}

const char *cli_nearest(const char *word, const char *const *names, size_t count)
{
    const char *best = NULL;
    size_t best_distance = SIZE_MAX;
    for (size_t i = 0; i < count; i++) {
        size_t letters = strlen(names[i] + strspn(names[i], "-")); /* "--out" is as short as "out" */
        size_t d = edit_distance(word, names[i]);
        if (d <= (letters <= 3 ? 1u : 2u) && d < best_distance) best = names[i], best_distance = d;
    }
    return best;
}

/* A row of the command's tables by flattened index, with the struct its group stores into. */
typedef struct row {
    const cli_option *o;
    void *fields;
    size_t group;
} row;

static size_t rows_of(const cli_command *c, row *out)
{
    size_t n = 0;
    for (size_t g = 0; g < CLI_MAX_GROUPS; g++)
        for (size_t i = 0; i < c->groups[g].count && n < CLI_MAX_OPTIONS; i++)
            out[n++] = (row){&c->groups[g].options[i], c->groups[g].fields, g};
    return n;
}

/* The row named `name`, or n. */
static size_t row_named(const row *rows, size_t n, const char *name)
{
    size_t i = 0;
    while (i < n && strcmp(name, rows[i].o->name) != 0) i++;
    return i;
}

static int unknown_option(const cli_command *c, const row *rows, size_t n, const char *opt)
{
    const char *names[CLI_MAX_OPTIONS + 1] = {"--help"};
    for (size_t i = 0; i < n; i++) names[i + 1] = rows[i].o->name;
    const char *near = cli_nearest(opt, names, n + 1);
    if (near)
        fprintf(stderr, "vkattn %s: unknown option \"%s\"; did you mean \"%s\"?\n", c->name, opt, near);
    else if (opt[0] != '-')
        fprintf(stderr, "vkattn %s: unexpected argument \"%s\": every input and output is given by an option "
                        "(vkattn %s --help lists them)\n", c->name, opt, c->name);
    else
        fprintf(stderr, "vkattn %s: unknown option \"%s\" (vkattn %s --help lists the options)\n", c->name, opt,
                c->name);
    return CLI_EXIT_USAGE;
}

/* The i-th of the '|'-separated `names` (its length in *len), or NULL past the last. */
static const char *name_at(const char *names, int i, size_t *len)
{
    for (; names && i > 0; i--) names = strchr(names, '|') ? strchr(names, '|') + 1 : NULL;
    if (names) *len = strcspn(names, "|");
    return names;
}

/* The index of `text` (`len` bytes) among the names, or -1. */
static int name_index(const char *names, const char *text, size_t len)
{
    size_t n;
    for (int i = 0; (names = name_at(names, i ? 1 : 0, &n)); i++)
        if (n == len && strncmp(names, text, len) == 0) return i;
    return -1;
}

/* "a, b or c": the names. */
static void list_names(const char *names, char *buf, size_t size)
{
    size_t n, next, at = 0;
    for (int i = 0; (names = name_at(names, i ? 1 : 0, &n)) && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%.*s", !i ? "" : name_at(names, 1, &next) ? ", " : " or ",
                               (int)n, names);
}

static int parse_u32(const char *text, uint32_t min, uint32_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || !end || *end || text[0] == '-' || text[0] == '\0' || v > UINT32_MAX || v < min) return 1;
    *out = (uint32_t)v;
    return 0;
}

/* One item of a list: an integer >= 1, or a name of o->value. */
static int list_item(const cli_option *o, const char *text, size_t len, uint32_t *out)
{
    char buf[32];
    if (!strchr(o->value, '|')) {
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf - 1 ? len : sizeof buf - 1), text);
        return len >= sizeof buf - 1 || parse_u32(buf, 1, out);
    }
    int i = name_index(o->value, text, len);
    if (i >= 0) *out = (uint32_t)(o->values ? o->values[i] : i);
    return i < 0;
}

static int parse_list(const char *command, const cli_option *o, const char *text, cli_list *out)
{
    out->n = 0;
    for (const char *at = text; *at;) {
        size_t len = strcspn(at, ",");
        if (len && out->n == CLI_LIST_MAX) {
            fprintf(stderr, "vkattn %s: %s takes at most %d values\n", command, o->name, CLI_LIST_MAX);
            return 2;
        }
        if (len && list_item(o, at, len, &out->v[out->n++])) {
            fprintf(stderr, "vkattn %s: %s: bad value \"%.*s\"\n", command, o->name, (int)len, at);
            return 2;
        }
        at += len + (at[len] == ',');
    }
    if (out->n) return 0;
    fprintf(stderr, "vkattn %s: %s needs at least one value\n", command, o->name);
    return 2;
}

/* Stores `value` (NULL for a flag) into `field` as the row says; 0, or 2 after a message. */
static int store(const char *command, const cli_option *o, char *field, const char *value)
{
    char *end = NULL, names[160];
    double number;
    int i;
    switch (o->kind) {
    case CLI_FLAG: *(int *)field = 1; return 0;
    case CLI_TEXT: *(const char **)field = value; return 0;
    case CLI_LIST: return parse_list(command, o, value, (cli_list *)field);
    case CLI_U32:
        if (!parse_u32(value, (uint32_t)o->min, (uint32_t *)field)) return 0;
        fprintf(stderr, "vkattn %s: %s expects an integer >= %u, got \"%s\"\n", command, o->name, (unsigned)o->min,
                value);
        return 2;
    case CLI_NUMBER:
        number = strtod(value, &end);
        int parsed = end != value && !*end && isfinite(number);
        int above_max = parsed && o->max && number > o->max;
        /* a float field would hold a smaller value as 0 (the option off) or a subnormal */
        int below_float = parsed && o->flags & CLI_FLOAT && number > 0 && number < FLT_MIN;
        if (parsed && (o->flags & CLI_ABOVE_MIN ? number > o->min : number >= o->min) && !above_max && !below_float)
            return *(double *)field = number, 0;
        if (below_float)
            fprintf(stderr, "vkattn %s: %s expects a number of at least %g (the least normal float), got \"%s\"\n",
                    command, o->name, (double)FLT_MIN, value);
        else if (o->flags & CLI_ABOVE_MIN && o->min == 0 && !above_max)
            fprintf(stderr, "vkattn %s: %s expects a positive number, got \"%s\"\n", command, o->name, value);
        else if (o->max)
            fprintf(stderr, "vkattn %s: %s expects a number in %c%g, %g], got \"%s\"\n", command, o->name,
                    o->flags & CLI_ABOVE_MIN ? '(' : '[', o->min, o->max, value);
        else
            fprintf(stderr, "vkattn %s: %s expects a number %s %g, got \"%s\"\n", command, o->name,
                    o->flags & CLI_ABOVE_MIN ? ">" : ">=", o->min, value);
        return 2;
    case CLI_CHOICE:
        if ((i = name_index(o->value, value, strlen(value))) >= 0) return *(int *)field = o->values ? o->values[i] : i, 0;
        list_names(o->value, names, sizeof names);
        fprintf(stderr, "vkattn %s: %s takes %s%s%s%s, not \"%s\"\n", command, o->name, names, o->what ? " (" : "",
                o->what ? o->what : "", o->what ? ")" : "", value);
        return 2;
    }
    return 2;
}

#define DEFAULT_TEXT 48
static void usage(const cli_command *c, const row *rows, size_t n, char (*defaults)[DEFAULT_TEXT], FILE *out);
static void default_of(const cli_option *o, const char *field, char *buf, size_t size);

static int given(const cli_command *c, const row *rows, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].o->name, name) == 0) return c->given[i];
    return 0;
}

/* Every required option that is missing, and every option another needs, in one message; then the
 * usage. 0, or 2. */
static int check_missing(const cli_command *c, const row *rows, size_t n, char (*defaults)[DEFAULT_TEXT])
{
    const char *missing[CLI_MAX_OPTIONS];
    const cli_option *by[CLI_MAX_OPTIONS]; /* the option that needs it, or a required one with an alternative */
    size_t count = 0, first_group = 0;
    int instead = c->unless && given(c, rows, n, c->unless);
    for (size_t i = 0; i < n; i++) {
        const cli_option *o = rows[i].o;
        if (instead && rows[i].group == 0) continue;
        if (o->flags & CLI_REQUIRED && !c->given[i] && !(o->or_else && given(c, rows, n, o->or_else))) {
            first_group += rows[i].group == 0;
            missing[count] = o->name, by[count++] = o->or_else ? o : NULL;
        }
        if (o->needs && c->given[i] && !given(c, rows, n, o->needs)) missing[count] = o->needs, by[count++] = o;
    }
    if (!count) return 0;
    fprintf(stderr, "vkattn %s: missing ", c->name);
    for (size_t i = 0; i < count; i++) {
        fprintf(stderr, "%s%s", i == 0 ? "" : i + 1 < count ? ", " : " and ", missing[i]);
        if (by[i] && by[i]->or_else && by[i]->name == missing[i]) fprintf(stderr, " (or %s)", by[i]->or_else);
        else if (by[i]) fprintf(stderr, " (%s needs it)", by[i]->name);
    }
    if (c->unless && first_group)
        fprintf(stderr, " (or %s instead of the %s)", c->unless, c->groups[0].title);
    fputc('\n', stderr);
    usage(c, rows, n, defaults, stderr);
    return CLI_EXIT_USAGE;
}

/* Options given together that exclude each other: "--device and --cpu exclude each other". 0, or 2. */
static int check_excluded(const cli_command *c, const row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i].o->excludes && c->given[i] && given(c, rows, n, rows[i].o->excludes)) {
            fprintf(stderr, "vkattn %s: %s and %s exclude each other\n", c->name, rows[i].o->name,
                    rows[i].o->excludes);
            return CLI_EXIT_USAGE;
        }
    return 0;
}

int cli_parse(cli_command *c, int argc, char **argv)
{
    row rows[CLI_MAX_OPTIONS];
    size_t n = rows_of(c, rows);
    char defaults[CLI_MAX_OPTIONS][DEFAULT_TEXT]; /* the fields' values before any option is stored */
    for (size_t i = 0; i < n; i++) default_of(rows[i].o, (const char *)rows[i].fields + rows[i].o->offset, defaults[i],
                                              DEFAULT_TEXT);
    memset(c->given, 0, sizeof c->given);
    for (int a = 0; a < argc; a++) {
        if (strcmp(argv[a], "--help") == 0) {
            usage(c, rows, n, defaults, stdout);
            return -1;
        }
        size_t i = row_named(rows, n, argv[a]);
        if (i == n) return unknown_option(c, rows, n, argv[a]);
        const cli_option *o = rows[i].o;
        /* The value is taken once the name is known: an unknown option never swallows the next. */
        if (o->kind != CLI_FLAG && ++a == argc) {
            fprintf(stderr, "vkattn %s: %s needs a value\n", c->name, o->name);
            return CLI_EXIT_USAGE;
        }
        /* "--device --cpu": the value forgotten, not a device named "--cpu" */
        if (o->kind != CLI_FLAG && (strcmp(argv[a], "--help") == 0 || row_named(rows, n, argv[a]) < n)) {
            fprintf(stderr, "vkattn %s: %s needs a value before the next option, %s\n", c->name, o->name, argv[a]);
            return CLI_EXIT_USAGE;
        }
        if (store(c->name, o, (char *)rows[i].fields + o->offset, o->kind == CLI_FLAG ? NULL : argv[a]))
            return CLI_EXIT_USAGE;
        if (o->given) *(int *)((char *)rows[i].fields + o->given - 1) = 1;
        c->given[i] = 1;
    }
    int rc = check_excluded(c, rows, n);
    return rc ? rc : check_missing(c, rows, n, defaults);
}

const char *cli_group_given(const cli_command *c, size_t group)
{
    row rows[CLI_MAX_OPTIONS];
    size_t n = rows_of(c, rows);
    for (size_t i = 0; i < n; i++)
        if (rows[i].group == group && c->given[i]) return rows[i].o->name;
    return NULL;
}

/* " (default X)" from the field's value, for the kinds where a value is a default. */
static void default_of(const cli_option *o, const char *field, char *buf, size_t size)
{
    int i = 0;
    size_t n;
    buf[0] = '\0';
    if (o->kind == CLI_TEXT && *(const char *const *)field)
        snprintf(buf, size, " (default %s)", *(const char *const *)field);
    else if (o->kind == CLI_U32 && *(const uint32_t *)field)
        snprintf(buf, size, " (default %u)", *(const uint32_t *)field);
    else if (o->kind == CLI_NUMBER && *(const double *)field)
        snprintf(buf, size, " (default %g)", *(const double *)field);
    else if (o->kind == CLI_CHOICE)
        for (const char *at = o->value; (at = name_at(at, i ? 1 : 0, &n)); i++)
            if ((o->values ? o->values[i] : i) == *(const int *)field) snprintf(buf, size, " (default %.*s)", (int)n, at);
}

#define HELP_WIDTH 100
#define HELP_INDENT 28

/* `text` word by word from column `column`, lines broken before HELP_WIDTH and indented. */
static void print_wrapped(FILE *out, const char *text, size_t column)
{
    while (*text) {
        size_t word = strcspn(text, " ");
        if (column > HELP_INDENT && column + 1 + word > HELP_WIDTH) {
            fprintf(out, "\n%*s", HELP_INDENT, "");
            column = HELP_INDENT;
        } else if (column > HELP_INDENT) {
            fputc(' ', out), column++;
        }
        fprintf(out, "%.*s", (int)word, text);
        column += word;
        text += word + strspn(text + word, " ");
    }
    fputc('\n', out);
}

static void usage(const cli_command *c, const row *rows, size_t n, char (*defaults)[DEFAULT_TEXT], FILE *out)
{
    fprintf(out, "usage: vkattn %s", c->name);
    if (c->synopsis) {
        fprintf(out, " %s\n", c->synopsis);
    } else {
        for (size_t i = 0; i < n; i++)
            if (rows[i].o->flags & CLI_REQUIRED) fprintf(out, " %s %s", rows[i].o->name, rows[i].o->value);
        fprintf(out, "%s\n", n ? " [options]" : "");
    }
    for (size_t i = 0; i < n; i++) {
        const cli_option *o = rows[i].o;
        if ((i == 0 || rows[i].group != rows[i - 1].group) && c->groups[rows[i].group].title)
            fprintf(out, "\n%s:\n", c->groups[rows[i].group].title);
        char left[96], help[1200];
        int w = snprintf(left, sizeof left, "  %s%s%s", o->name, o->value ? " " : "", o->value ? o->value : "");
        snprintf(help, sizeof help, "%s%s%s", o->help, defaults[i], o->flags & CLI_REQUIRED ? " (required)" : "");
        fputs(left, out);
        if (w + 1 >= HELP_INDENT) fprintf(out, "\n%*s", HELP_INDENT, "");
        else fprintf(out, "%*s", HELP_INDENT - w, "");
        print_wrapped(out, help, HELP_INDENT);
    }
    if (c->notes) fprintf(out, "\n%s", c->notes);
}

void cli_error(const char *command, const char *format, ...)
{
    fflush(stdout); /* the message follows what was printed before it, also when both go to one file */
    va_list args;
    va_start(args, format);
    fprintf(stderr, "vkattn %s: ", command);
    vfprintf(stderr, format, args);
    va_end(args);
}

int cli_check_head_split(const char *command, const char *width, uint32_t embed, uint32_t heads)
{
    if (heads && embed % heads == 0) return 0;
    cli_error(command, "%s %u is not divisible by --heads %u: each head takes an equal share of the width\n", width,
              embed, heads);
    return CLI_EXIT_FAILURE;
}

int cli_fail(const char *command, const char *what, vkattn_status status, const char *message)
{
    fflush(stdout); /* the message follows what was printed before it, also when both go to one file */
    fprintf(stderr, "vkattn %s: %s: %s: %s\n", command, what, vkattn_status_name(status),
            message && *message ? message : vkattn_status_string(status));
    return 1;
}

/* Whether `path` can be read again to explain a refusal: a regular file. A pipe (a FIFO, a shell's
 * <(...)) was used up by the reader, and opening a FIFO without a writer would wait forever. */
static bool rereadable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The kind of `path` from its first bytes; for text, its first line (shortened) goes into `line`. */
static cli_file_kind sniff(const char *path, char *line, size_t size)
{
    struct stat st;
    if (stat(path, &st) != 0) return CLI_FILE_UNREADABLE;
    if (S_ISDIR(st.st_mode)) return CLI_FILE_DIRECTORY;
    if (!rereadable(path)) return CLI_FILE_UNREADABLE; /* the reader's own message says what it found */
    FILE *f = fopen(path, "rb");
    if (!f) return CLI_FILE_UNREADABLE;
    unsigned char b[256];
    size_t n = fread(b, 1, sizeof b, f);
    int failed = ferror(f);
    fclose(f);
    if (failed) return CLI_FILE_UNREADABLE;
    if (n == 0) return CLI_FILE_EMPTY;
    if (n >= 6 && memcmp(b, "\x93NUMPY", 6) == 0) return CLI_FILE_NPY;
    if (n >= 9 && b[8] == '{') {
        uint64_t len = 0;
        for (int i = 7; i >= 0; i--) len = len << 8 | b[i];
        if (len <= (uint64_t)st.st_size - 8) return CLI_FILE_SAFETENSORS;
    }
    if (n >= 4 && memcmp(b, "PK\3\4", 4) == 0) return CLI_FILE_ZIP;
    for (size_t i = 0; i < n; i++) /* printable ASCII: a safetensors header length may be any bytes */
        if ((b[i] < 0x20 && b[i] != '\t' && b[i] != '\n' && b[i] != '\r') || b[i] >= 0x7F) return CLI_FILE_OTHER;
    size_t k = 0;
    for (size_t i = 0; i < n && k + 4 < size && b[i] != '\n' && b[i] != '\r'; i++) line[k++] = (char)b[i];
    if (k + 4 >= size) memcpy(line + k, "...", 3), k += 3;
    line[k] = '\0';
    return CLI_FILE_TEXT;
}

int cli_fail_input(const char *command, const char *option, const char *path, cli_file_kind want,
                   vkattn_status status, const char *message)
{
    char line[48] = "", is[160];
    cli_file_kind kind = sniff(path, line, sizeof line);
    /* Unrecognised bytes may be a broken safetensors file, whose reader says what is wrong with it;
     * a folder or a .json file is a checkpoint's to that reader (its index), which says the same. */
    size_t len = strlen(path);
    bool checkpoint = want == CLI_FILE_SAFETENSORS &&
                      (kind == CLI_FILE_OTHER || kind == CLI_FILE_DIRECTORY ||
                       (kind == CLI_FILE_TEXT && len >= 5 && strcmp(path + len - 5, ".json") == 0));
    if (kind == want || kind == CLI_FILE_UNREADABLE || checkpoint) {
        char what[160];
        snprintf(what, sizeof what, "reading %s", option);
        return cli_fail(command, what, status, message);
    }
    switch (kind) {
    case CLI_FILE_DIRECTORY: snprintf(is, sizeof is, "is a directory"); break;
    case CLI_FILE_EMPTY: snprintf(is, sizeof is, "is empty (0 bytes)"); break;
    case CLI_FILE_NPY: snprintf(is, sizeof is, "is a .npy array, not a safetensors file"); break;
    case CLI_FILE_SAFETENSORS: snprintf(is, sizeof is, "is a safetensors file, not a .npy array"); break;
    case CLI_FILE_ZIP: snprintf(is, sizeof is, "is a zip archive (np.savez and torch.save write these)"); break;
    case CLI_FILE_TEXT: snprintf(is, sizeof is, "is a text file (it starts \"%s\")", line); break;
    default: snprintf(is, sizeof is, "is neither a .npy array nor a safetensors file"); break;
    }
    const char *takes = want == CLI_FILE_NPY
                            ? "a .npy array (numpy.save)"
                            : "the layer's weights as safetensors (see README, \"Command-line tool\")";
    fflush(stdout);
    fprintf(stderr, "vkattn %s: %s %s %s: %s takes %s\n", command, option, path, is, option, takes);
    return CLI_EXIT_FAILURE;
}

int cli_check_output(const char *command, const char *option, const char *path)
{
    if (!path) return 0;
    struct stat st;
    int err = 0;
    if (stat(path, &st) == 0) {
        /* Asked, not opened: opening a FIFO (or a process substitution's pipe) to check it would block
         * or end the reader's input before the real write. */
        if (S_ISDIR(st.st_mode)) err = EISDIR;
        else if (access(path, W_OK) != 0) err = errno;
    } else if (errno != ENOENT) {
        err = errno;
    } else if (lstat(path, &st) != 0) { /* a dangling link is left alone: creating would follow it */
        FILE *f = fopen(path, "wx");    /* "x": never truncates a file that appeared meanwhile */
        if (f) fclose(f), remove(path);
        else err = errno;
    }
    if (!err) return 0;
    fflush(stdout);
    fprintf(stderr, "vkattn %s: %s %s: cannot write this file (%s)\n", command, option, path, strerror(err));
    return CLI_EXIT_FAILURE;
}

/* One file for both: as given, or (both existing) the same file under two names. */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (strcmp(a, b) == 0) return 1;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int cli_check_distinct_outputs(const char *command, const char *const *options, const char *const *paths, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (paths[i] && paths[j] && same_file(paths[i], paths[j])) {
                cli_error(command, "%s and %s are both %s: the second would overwrite the first; give each its own "
                                   "file\n", options[i], options[j], paths[j]);
                return CLI_EXIT_USAGE;
            }
    return 0;
}

/* The numpy dtypes by descr (without its byte-order character), and what vkattn_npy_read loads
 * each as (-1: refused), as vkattn.h documents it. */
static const struct {
    const char *code, *name;
    int loads_as;
} k_npy_dtypes[] = {
    {"f4", "float32", VKATTN_DTYPE_F32}, {"f2", "float16", VKATTN_DTYPE_F32}, {"f8", "float64", VKATTN_DTYPE_F32},
    {"i4", "int32", VKATTN_DTYPE_I32},   {"i8", "int64", VKATTN_DTYPE_I32},   {"b1", "bool", VKATTN_DTYPE_BOOL},
    {"i1", "int8", -1},   {"i2", "int16", -1},  {"u1", "uint8", -1},      {"u2", "uint16", -1},
    {"u4", "uint32", -1}, {"u8", "uint64", -1}, {"c8", "complex64", -1}, {"c16", "complex128", -1},
};

int cli_npy_stored_dtype(const char *path, char *buf, size_t size, int *loads_as)
{
    FILE *f = rereadable(path) ? fopen(path, "rb") : NULL;
    if (!f) return 0;
    char head[1024]; /* numpy writes the descr first, within the first 128 bytes */
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (head[i] == '\0') head[i] = ' ';
    const char *at = n >= 10 && memcmp(head, "\x93NUMPY", 6) == 0 ? strstr(head + 8, "descr") : NULL;
    if (!at) return 0;
    at += strlen("descr");
    if (*at == '\'' || *at == '"') at++; /* the key's closing quote */
    at += strspn(at, " :");
    char quote = *at, descr[32];
    const char *end = quote == '\'' || quote == '"' ? strchr(at + 1, quote) : NULL;
    if (!end || end - at - 1 < 1 || (size_t)(end - at - 1) >= sizeof descr) return 0;
    memcpy(descr, at + 1, (size_t)(end - at - 1));
    descr[end - at - 1] = '\0';
    const char *code = strchr("<>|=", descr[0]) ? descr + 1 : descr;
    *loads_as = -1;
    for (size_t i = 0; i < sizeof k_npy_dtypes / sizeof k_npy_dtypes[0]; i++)
        if (strcmp(code, k_npy_dtypes[i].code) == 0) {
            snprintf(buf, size, "%s (%s)", k_npy_dtypes[i].name, descr);
            *loads_as = k_npy_dtypes[i].loads_as;
            return 1;
        }
    snprintf(buf, size, "%s", descr);
    return 1;
}

const char *cli_device_type_name(vkattn_device_type t, int json)
{
    static const char *const names[][2] = {
        [VKATTN_DEVICE_OTHER] = {"other", "other"},
        [VKATTN_DEVICE_INTEGRATED_GPU] = {"integrated GPU", "integrated_gpu"},
        [VKATTN_DEVICE_DISCRETE_GPU] = {"discrete GPU", "discrete_gpu"},
        [VKATTN_DEVICE_VIRTUAL_GPU] = {"virtual GPU", "virtual_gpu"},
        [VKATTN_DEVICE_CPU] = {"CPU (software rasterizer)", "cpu"},
    };
    return names[(unsigned)t < CLI_COUNT(names) ? t : VKATTN_DEVICE_OTHER][json != 0];
}

void cli_describe_device(const vkattn_device_info *info, char *buf, size_t size)
{
    snprintf(buf, size, "%s [%s, Vulkan %u.%u.%u, driver %s%s%s]", info->name, cli_device_type_name(info->type, 0),
             info->api_version >> 22, (info->api_version >> 12) & 0x3FFu, info->api_version & 0xFFFu,
             info->driver_name[0] ? info->driver_name : "unknown", info->driver_info[0] ? " " : "",
             info->driver_info);
}

/* --device (or VKATTN_DEVICE) named no device that is there: says which devices are, in the
 * option's own words. Returns 1. */
static int no_such_device(const char *command, const char *device, const char *message)
{
    enum { MAX_LISTED = 16 };
    const char *env = getenv("VKATTN_DEVICE"), *request = device ? device : env && *env ? env : NULL;
    vkattn_device_info infos[MAX_LISTED];
    uint32_t count = 0;
    if (!request || vkattn_list_devices(infos, MAX_LISTED, &count, NULL) != VKATTN_OK || count == 0)
        return cli_fail(command, "opening a Vulkan device", VKATTN_ERROR_NO_DEVICE, message);
    char list[MAX_LISTED * 80] = "";
    for (uint32_t i = 0, at = 0; i < count && i < MAX_LISTED && at < sizeof list; i++)
        at += (uint32_t)snprintf(list + at, sizeof list - at, "%s%u: %s", i ? ", " : "", infos[i].index, infos[i].name);
    const char *are = count == 1 ? "is" : "are", *s = count == 1 ? "" : "s";
    fflush(stdout);
    fprintf(stderr, "vkattn %s: %s%s: ", command, device ? "--device " : "VKATTN_DEVICE=", request);
    if (request[strspn(request, "0123456789")] == '\0') /* an index, as the library reads one */
        fprintf(stderr, "there %s only %u device%s (%s)\n", are, count, s, list);
    else
        fprintf(stderr, "no device's name contains \"%s\"; there %s %u device%s (%s)\n", request, are, count, s, list);
    return CLI_EXIT_FAILURE;
}

int cli_open_context(const char *command, const char *device, vkattn_context **out)
{
    vkattn_error error = {0};
    vkattn_context_desc desc = {.device = device};
    vkattn_status status = vkattn_context_create(&desc, out, &error);
    if (status == VKATTN_ERROR_NO_DEVICE) return no_such_device(command, device, error.message);
    if (status != VKATTN_OK) return cli_fail(command, "opening a Vulkan device", status, error.message);
    vkattn_device_info info;
    vkattn_context_device(*out, &info);
    char text[900];
    cli_describe_device(&info, text, sizeof text);
    printf("device: %u: %s%s\n", info.index, text, vkattn_context_validation_enabled(*out) ? " (validation on)" : "");
    return 0;
}

const int cli_storage_values[2] = {VKATTN_DTYPE_F32, VKATTN_DTYPE_F16};

/* A forward to explain: a plain one from host arrays (f) or on device tensors (tf), or a cached
 * one (cache, cf). */
typedef struct explained {
    vkattn_layer *layer;
    const vkattn_host_forward_desc *f;
    const vkattn_forward_desc *tf;
    vkattn_kv_cache *cache;
    const vkattn_cached_forward_desc *cf;
} explained;

static vkattn_status explain(const explained *e, char *text, size_t capacity, size_t *length)
{
    return e->cache ? vkattn_forward_cached_explain(e->layer, e->cache, e->cf, text, capacity, length)
           : e->tf  ? vkattn_forward_explain_tensors(e->layer, e->tf, text, capacity, length)
                    : vkattn_forward_explain(e->layer, e->f, text, capacity, length);
}

/* The plan's text, under `heading` (NULL: none). */
static int print_explained(const char *command, vkattn_context *ctx, const char *heading, const explained *e)
{
    size_t need = 0;
    vkattn_status status = explain(e, NULL, 0, &need);
    char *text = status == VKATTN_OK ? malloc(need + 1) : NULL;
    if (text) status = explain(e, text, need + 1, NULL);
    if (status != VKATTN_OK || !text) {
        free(text);
        return cli_fail(command, "explaining the plan", status ? status : VKATTN_ERROR_OUT_OF_HOST_MEMORY,
                        vkattn_context_last_error(ctx));
    }
    if (heading) printf("%s:\n", heading);
    fputs(text, stdout);
    free(text);
    return 0;
}

int cli_print_plan(const char *command, vkattn_context *ctx, vkattn_layer *layer,
                   const vkattn_host_forward_desc *f)
{
    if (!layer) {
        printf("plan: the CPU reference path (plain loops, double accumulation)\n");
        return 0;
    }
    return print_explained(command, ctx, NULL, &(explained){.layer = layer, .f = f});
}

int cli_print_tensor_plan(const char *command, vkattn_context *ctx, vkattn_layer *layer, const vkattn_forward_desc *f)
{
    return print_explained(command, ctx, NULL, &(explained){.layer = layer, .tf = f});
}

int cli_print_cached_plan(const char *command, vkattn_context *ctx, vkattn_layer *layer, vkattn_kv_cache *cache,
                          const vkattn_cached_forward_desc *f, const char *heading)
{
    return print_explained(command, ctx, heading, &(explained){.layer = layer, .cache = cache, .cf = f});
}

vkattn_dtype cli_layer_storage(const char *command, const vkattn_layer *layer, vkattn_dtype asked)
{
    vkattn_layer_desc d;
    vkattn_layer_get_desc(layer, &d);
    if (asked == VKATTN_DTYPE_F16 && d.storage != VKATTN_DTYPE_F16)
        printf("vkattn %s: note: this device has no 16-bit storage buffers (storageBuffer16BitAccess): the layer "
               "stores %s, not f16\n",
               command, vkattn_dtype_name(d.storage));
    return d.storage;
}

void cli_format_shape(char *buf, size_t size, uint32_t rank, const uint32_t *v)
{
    size_t at = (size_t)snprintf(buf, size, "(");
    for (uint32_t i = 0; i < rank && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, i ? ", %u" : "%u", v[i]);
    if (at < size) snprintf(buf + at, size - at, ")");
}

void cli_format_index(char *buf, size_t size, uint32_t rank, const uint32_t *dims, size_t flat)
{
    uint32_t idx[VKATTN_MAX_RANK] = {0};
    if (rank > VKATTN_MAX_RANK) rank = VKATTN_MAX_RANK;
    for (uint32_t i = rank; i-- > 0;) {
        idx[i] = dims[i] ? (uint32_t)(flat % dims[i]) : 0;
        flat = dims[i] ? flat / dims[i] : 0;
    }
    cli_format_shape(buf, size, rank, idx);
}

static size_t elements(uint32_t rank, const uint32_t *dims)
{
    size_t n = 1;
    for (uint32_t i = 0; i < rank; i++) n *= dims[i];
    return n;
}

/* "NaN", "+inf", "-inf" or %g. */
static void format_value(char *buf, size_t size, float v)
{
    if (isnan(v)) snprintf(buf, size, "NaN");
    else if (isinf(v)) snprintf(buf, size, v > 0 ? "+inf" : "-inf");
    else snprintf(buf, size, "%g", (double)v);
}

int cli_check_report(const char *what, const float *got, const float *want, uint32_t rank, const uint32_t *dims,
                     const compare_tolerance *t)
{
    compare_stats e = compare_arrays(got, want, elements(rank, dims));
    int ok = compare_within(&e, t);
    char at[128], tol[200], bad[320] = "";
    cli_format_index(at, sizeof at, rank, dims, e.max_abs_at);
    compare_describe(tol, sizeof tol, t, e.ref_max);
    if (e.nonfinite) {
        char first[128], g[32], w[32];
        cli_format_index(first, sizeof first, rank, dims, e.nonfinite_at);
        format_value(g, sizeof g, got[e.nonfinite_at]), format_value(w, sizeof w, want[e.nonfinite_at]);
        snprintf(bad, sizeof bad, " over the %zu values finite on both sides; %zu non-finite values differ, first at "
                 "%s (%s here, %s on the CPU path)", e.compared, e.nonfinite, first, g, w);
    }
    printf("check %s vs CPU path: max-abs %.3g at %s, NMSE %.3g%s (%s): %s\n", what, e.max_abs, at, e.nmse, bad, tol,
           ok ? "OK" : "MISMATCH");
    return ok;
}

cli_nonfinite cli_count_nonfinite(const float *x, size_t n, int neg_inf_ok)
{
    cli_nonfinite c = {0};
    for (size_t i = 0; x && i < n; i++) {
        if (isfinite(x[i])) continue;
        if (isnan(x[i])) c.nan++;
        else if (x[i] > 0) c.pos_inf++;
        else if (neg_inf_ok) continue;
        else c.neg_inf++;
        if (c.total++ == 0) c.first = i;
    }
    return c;
}

size_t cli_report_nonfinite(const char *what, const float *x, uint32_t rank, const uint32_t *dims, int neg_inf_ok)
{
    if (!x) return 0;
    cli_nonfinite c = cli_count_nonfinite(x, elements(rank, dims), neg_inf_ok);
    if (!c.total) return 0;
    char shape[128], first[128], counts[160] = "";
    cli_format_shape(shape, sizeof shape, rank, dims);
    size_t at = 0;
    const struct { size_t n; const char *name; } parts[3] = {{c.nan, "NaN"}, {c.pos_inf, "+inf"}, {c.neg_inf, "-inf"}};
    for (int i = 0; i < 3; i++)
        if (parts[i].n && at < sizeof counts)
            at += (size_t)snprintf(counts + at, sizeof counts - at, "%s%zu %s", at ? ", " : "", parts[i].n,
                                   parts[i].name);
    cli_format_index(first, sizeof first, rank, dims, c.first);
    printf("check-finite: %s %s: %s, first at %s\n", what, shape, counts, first);
    return c.total;
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int cli_compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cli_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cli_compare_doubles);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void cli_fill_random(float *x, size_t n, unsigned long long seed, float scale)
{
    unsigned long long s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
        x[i] = (float)(((s * 0x2545F4914F6CDD1Dull) >> 40) / 16777216.0 * 2.0 - 1.0) * scale;
    }
}
