#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <errno.h>
#include <math.h>
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

cli_args cli_args_make(const char *command, int argc, char **argv)
{
    cli_args a = {.argc = argc, .argv = argv, .command = command};
    return a;
}

const char *cli_next(cli_args *a)
{
    a->tried_count = 0; /* a new option: the names it is compared with start over */
    if (a->next >= a->argc) return NULL;
    return a->argv[a->next++];
}

int cli_is(cli_args *a, const char *opt, const char *name)
{
    if (a->tried_count < CLI_MAX_OPTIONS) a->tried[a->tried_count++] = name;
    return strcmp(opt, name) == 0;
}

int cli_unknown_option(const cli_args *a, const char *opt)
{
    const char *near = cli_nearest(opt, a->tried, a->tried_count);
    if (near)
        fprintf(stderr, "vkattn %s: unknown option \"%s\"; did you mean \"%s\"?\n", a->command, opt, near);
    else if (opt[0] != '-')
        fprintf(stderr, "vkattn %s: unexpected argument \"%s\": every input and output is given by an option "
                        "(vkattn %s --help lists them)\n", a->command, opt, a->command);
    else
        fprintf(stderr, "vkattn %s: unknown option \"%s\" (vkattn %s --help lists the options)\n", a->command, opt,
                a->command);
    return CLI_EXIT_USAGE;
}

const char *cli_value(cli_args *a, const char *option)
{
    if (a->next >= a->argc) {
        fprintf(stderr, "vkattn %s: %s needs a value\n", a->command, option);
        return NULL;
    }
    return a->argv[a->next++];
}

void cli_missing_add(cli_missing *m, const char *name)
{
    if (m->count < sizeof m->names / sizeof m->names[0]) m->names[m->count++] = name;
}

int cli_missing_report(const char *command, const cli_missing *m, const char *note)
{
    if (!m->count) return 0;
    fprintf(stderr, "vkattn %s: missing ", command);
    for (size_t i = 0; i < m->count; i++)
        fprintf(stderr, "%s%s", i == 0 ? "" : i + 1 < m->count ? ", " : " and ", m->names[i]);
    fprintf(stderr, "%s%s\n", note ? " " : "", note ? note : "");
    return CLI_EXIT_USAGE;
}

int cli_parse_u32(const char *option, const char *text, uint32_t min, uint32_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || !end || *end || text[0] == '-' || text[0] == '\0' || v > UINT32_MAX || v < min) {
        fprintf(stderr, "vkattn: %s expects an integer >= %u, got \"%s\"\n", option, min, text);
        return 2;
    }
    *out = (uint32_t)v;
    return 0;
}

int cli_fail(const char *command, const char *what, vkattn_status status, const char *message)
{
    fflush(stdout); /* the message follows what was printed before it, also when both go to one file */
    fprintf(stderr, "vkattn %s: %s: %s: %s\n", command, what, vkattn_status_name(status),
            message && *message ? message : vkattn_status_string(status));
    return 1;
}

/* The kind of `path` from its first bytes; for text, its first line (shortened) goes into `line`. */
static cli_file_kind sniff(const char *path, char *line, size_t size)
{
    struct stat st;
    if (stat(path, &st) != 0) return CLI_FILE_UNREADABLE;
    if (S_ISDIR(st.st_mode)) return CLI_FILE_DIRECTORY;
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
    for (size_t i = 0; i < n; i++)
        if (b[i] < 0x20 && b[i] != '\t' && b[i] != '\n' && b[i] != '\r') return CLI_FILE_OTHER;
    size_t k = 0;
    for (size_t i = 0; i < n && k + 4 < size && b[i] != '\n' && b[i] != '\r'; i++) line[k++] = b[i] < 0x7F ? b[i] : '?';
    if (k + 4 >= size) memcpy(line + k, "...", 3), k += 3;
    line[k] = '\0';
    return CLI_FILE_TEXT;
}

int cli_fail_input(const char *command, const char *option, const char *path, cli_file_kind want,
                   vkattn_status status, const char *message)
{
    char line[48] = "", is[160];
    cli_file_kind kind = sniff(path, line, sizeof line);
    if (kind == want || kind == CLI_FILE_UNREADABLE) {
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
    FILE *f = fopen(path, "rb");
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

static const char *type_name(vkattn_device_type t)
{
    switch (t) {
    case VKATTN_DEVICE_DISCRETE_GPU: return "discrete GPU";
    case VKATTN_DEVICE_INTEGRATED_GPU: return "integrated GPU";
    case VKATTN_DEVICE_VIRTUAL_GPU: return "virtual GPU";
    case VKATTN_DEVICE_CPU: return "CPU (software rasterizer)";
    default: return "other";
    }
}

void cli_describe_device(const vkattn_device_info *info, char *buf, size_t size)
{
    snprintf(buf, size, "%s [%s, Vulkan %u.%u.%u, driver %s%s%s]", info->name, type_name(info->type),
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

int cli_storage_from_name(const char *name, vkattn_dtype *out)
{
    if (strcmp(name, "f32") == 0) return *out = VKATTN_DTYPE_F32, 0;
    if (strcmp(name, "f16") == 0) return *out = VKATTN_DTYPE_F16, 0;
    return 1;
}

int cli_print_plan(const char *command, vkattn_context *ctx, vkattn_layer *layer,
                   const vkattn_host_forward_desc *f)
{
    if (!layer) {
        printf("plan: the CPU reference path (plain loops, double accumulation)\n");
        return 0;
    }
    size_t need = 0;
    vkattn_status status = vkattn_forward_explain(layer, f, NULL, 0, &need);
    char *text = status == VKATTN_OK ? malloc(need + 1) : NULL;
    if (text) status = vkattn_forward_explain(layer, f, text, need + 1, NULL);
    if (status != VKATTN_OK || !text) {
        free(text);
        return cli_fail(command, "explaining the plan", status ? status : VKATTN_ERROR_OUT_OF_HOST_MEMORY,
                        vkattn_context_last_error(ctx));
    }
    fputs(text, stdout);
    free(text);
    return 0;
}

int cli_parse_storage(const char *command, const char *option, const char *text, vkattn_dtype *out)
{
    if (cli_storage_from_name(text, out) == 0) return 0;
    fprintf(stderr, "vkattn %s: %s takes %s (the layer's storage dtype), not \"%s\"\n", command, option,
            CLI_STORAGE_NAMES, text);
    return 2;
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
