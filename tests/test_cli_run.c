/* vkattn run --check, --check-finite and --dtype, and vkattn demo's exit status, driven in-process
 * as test_heatmap.c drives its command: the tolerance decision on arrays that differ (the mismatch
 * path, exit 4), index formatting and NaN/inf counting, storage names; then the commands on small
 * files on lavapipe: an honest --check pass (exit 0) in f32 and f16, an honest fp16-storage overflow
 * the CPU reference does not have (--check: exit 4; --check-finite says fp16 storage overflowed),
 * a NaN in one query row (reported at its index, exit 3), weights fp16 rounds to inf (refused with
 * VKATTN_ERROR_NON_FINITE, exit 1) and an infinite bias, and --dtype f8 refused; --decode-from
 * (through a KV cache) against the plain causal run, and what it refuses; the attention variants'
 * options against the PyTorch variant fixtures.
 *
 * Usage: test_cli_run FIXTURES_DIR   (tests/fixtures/torch: self_attn.safetensors, 4 heads, E = 16,
 * and its (2, 5, 16) query); test_cli_run FIXTURES_DIR bench_decode runs only bench --preset decode,
 * bench_decode_kernels the scaling runs untimed (what their JSON says exactly) and
 * bench_decode_scaling only what their timings must show (test_bench_decode_scaling; no ctest: run
 * by hand on a quiet machine, docs/PERFORMANCE.md).
 * Every command's stdout and stderr are captured, echoed, searched, and must hold no validation
 * message.
 */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu_test.h" /* gpu_test_pin_drivers, for LeakSanitizer */
#include "test_checkpoint.h"
#include "test_tmp.h"

#include "cli.h"
#include "cli_json.h"

static const char *fixtures;
static char captured[1 << 16]; /* the last command's stdout and stderr */

/* Runs `fn` with stdout and stderr captured into `captured`, then echoes them (so the ctest log
 * shows every command's output). */
static int capture(int (*fn)(int, char **), int argc, char **argv)
{
    test_capture c;
    test_capture_begin(&c, 1);
    int rc = fn(argc, argv);
    test_capture_end(&c, captured, sizeof captured);
    fputs(captured, stdout);
    printf("  -> exit %d\n", rc);
    CHECK_MSG(strstr(captured, "vkattn: validation ") == NULL, "a validation message (above)");
    return rc;
}

static int run_cmd(int (*cmd)(int, char **), const char **args)
{
    int argc = 0;
    while (args[argc]) argc++;
    printf("$ vkattn %s", cmd == cmd_run ? "run" : cmd == cmd_bench ? "bench" : cmd == cmd_overhead ? "overhead" : "demo");
    for (int i = 0; i < argc; i++) printf(" %s", args[i]);
    printf("\n");
    return capture(cmd, argc, (char **)args);
}

/* vkattn run --weights W --heads 4 --query Q --out OUT, then the NULL-terminated `extra`. */
static int run_forward(const char *weights, const char *query, const char *out, const char **extra)
{
    const char *args[32] = {"--weights", weights, "--heads", "4", "--query", query, "--out", out};
    int n = 8;
    while (*extra && n < 31) args[n++] = *extra++;
    args[n] = NULL;
    return run_cmd(cmd_run, args);
}

#define RUN(weights, query, out, ...) run_forward(weights, query, out, (const char *[]){__VA_ARGS__, NULL})

static int said(const char *text)
{
    return strstr(captured, text) != NULL;
}

#define CHECK_SAID(text) CHECK_MSG(said(text), "the output lacks \"%s\"", text)

/* ---------------------------------------------------------------------------------------------- */
/* Without a device. */

static int verdict(const float *got, const float *want, size_t n, vkattn_dtype storage)
{
    compare_stats e = compare_arrays(got, want, n);
    return compare_within(&e, compare_tolerance_for(storage));
}

/* The decision --check and demo share, on arrays that agree and arrays that do not. */
static void test_tolerance(void)
{
    enum { N = 64 };
    float want[N], got[N];
    for (int i = 0; i < N; i++) want[i] = 0.5f + 0.01f * (float)i; /* max |ref| 1.13, sum ref^2 ~ 40 */
    memcpy(got, want, sizeof got);
    CHECK(verdict(got, want, N, VKATTN_DTYPE_F32) && verdict(got, want, N, VKATTN_DTYPE_F16));
    /* One value off by 1e-3: beyond fp32's 1e-4 x 1.13 (and NMSE 2.5e-8 > 1e-9), within fp16's. */
    got[17] += 1e-3f;
    CHECK(!verdict(got, want, N, VKATTN_DTYPE_F32));
    CHECK(verdict(got, want, N, VKATTN_DTYPE_F16));
    compare_stats e = compare_arrays(got, want, N);
    CHECK(e.max_abs_at == 17 && e.nonfinite == 0);
    CHECK_NEAR(e.ref_max, want[N - 1], 1e-6);
    /* Off by 0.03: beyond fp16's too. */
    got[17] = want[17] + 0.03f;
    CHECK(!verdict(got, want, N, VKATTN_DTYPE_F16));

    /* The max-abs bound scales with max |ref|: x1000, an error of 0.05 is within 1e-4 x 1130. */
    for (int i = 0; i < N; i++) want[i] *= 1000.0f, got[i] = want[i];
    got[3] += 0.05f;
    CHECK(verdict(got, want, N, VKATTN_DTYPE_F32));
    got[3] = want[3] + 0.2f;
    CHECK(!verdict(got, want, N, VKATTN_DTYPE_F32));

    /* Non-finite values: the same NaN or infinity on both sides agrees, anything else does not. */
    for (int i = 0; i < N; i++) want[i] = (float)i / N, got[i] = want[i];
    got[5] = want[5] = NAN;
    got[6] = want[6] = INFINITY;
    got[7] = want[7] = -INFINITY;
    CHECK(verdict(got, want, N, VKATTN_DTYPE_F32));
    const float others[][2] = {{NAN, 0.5f}, {0.5f, NAN}, {INFINITY, -INFINITY}, {NAN, INFINITY}, {INFINITY, 1e30f}};
    for (size_t k = 0; k < sizeof others / sizeof others[0]; k++) {
        got[40] = others[k][0], want[40] = others[k][1];
        e = compare_arrays(got, want, N);
        CHECK_MSG(e.nonfinite == 1 && e.nonfinite_at == 40, "case %zu", k);
        CHECK_MSG(!verdict(got, want, N, VKATTN_DTYPE_F32) && !verdict(got, want, N, VKATTN_DTYPE_F16), "case %zu", k);
    }
    got[40] = want[40] = 0.25f;

    /* The printed line: the tensor's own index and the verdict. */
    const uint32_t dims[3] = {2, 4, 8};
    const compare_tolerance *t = compare_tolerance_for(VKATTN_DTYPE_F32);
    got[8 * 4 + 2 * 8 + 5] += 0.5f; /* (1, 2, 5) */
    test_capture c;
    test_capture_begin(&c, 0);
    int ok = cli_check_report("output", got, want, 3, dims, t);
    test_capture_end(&c, captured, sizeof captured);
    fputs(captured, stdout);
    CHECK(!ok);
    CHECK_SAID("max-abs 0.5 at (1, 2, 5)");
    CHECK_SAID("tolerance for f32 storage: max-abs 0.0001");
    CHECK_SAID("NMSE 1e-09): MISMATCH");
}

static void test_formatting(void)
{
    char buf[64];
    const uint32_t dims[3] = {2, 5, 64};
    cli_format_index(buf, sizeof buf, 3, dims, (size_t)3 * 64 + 17);
    CHECK_MSG(strcmp(buf, "(0, 3, 17)") == 0, "%s", buf);
    cli_format_index(buf, sizeof buf, 3, dims, (size_t)2 * 5 * 64 - 1);
    CHECK_MSG(strcmp(buf, "(1, 4, 63)") == 0, "%s", buf);
    cli_format_shape(buf, sizeof buf, 3, dims);
    CHECK_MSG(strcmp(buf, "(2, 5, 64)") == 0, "%s", buf);
    cli_format_index(buf, sizeof buf, 1, dims + 2, 9);
    CHECK_MSG(strcmp(buf, "(9)") == 0, "%s", buf);

    float x[10] = {0, 1, -INFINITY, NAN, 4, INFINITY, NAN, 7, -INFINITY, 9};
    cli_nonfinite c = cli_count_nonfinite(x, 10, 0);
    CHECK(c.nan == 2 && c.pos_inf == 1 && c.neg_inf == 2 && c.total == 5 && c.first == 2);
    c = cli_count_nonfinite(x, 10, 1); /* a float mask: -inf means masked */
    CHECK(c.nan == 2 && c.pos_inf == 1 && c.neg_inf == 0 && c.total == 3 && c.first == 3);
    c = cli_count_nonfinite(x, 2, 0);
    CHECK(c.total == 0);
}

/* The fields one table fills (test_option_table). */
typedef struct parsed {
    const char *text;
    vkattn_dtype dtype;
    int dtype_given, flag;
    uint32_t count;
    double seconds;
    cli_list lens;
} parsed;

/* cli_parse on a table of every kind of row, output captured; returns its result. */
static int parse_table(parsed *p, const char **args)
{
    static const cli_option rows[] = {
        {"--text", "T", "a text", CLI_TEXT, offsetof(parsed, text), .flags = CLI_REQUIRED},
        {"--dtype", "f32|f16", "storage", CLI_CHOICE, offsetof(parsed, dtype), .values = cli_storage_values,
         .given = CLI_GIVEN(parsed, dtype_given), .what = "the layer's storage dtype"},
        {"--flag", NULL, "a flag", CLI_FLAG, offsetof(parsed, flag), .needs = "--count"},
        {"--count", "N", "a count", CLI_U32, offsetof(parsed, count), 1},
        {"--seconds", "SEC", "a time", CLI_NUMBER, offsetof(parsed, seconds), 0, 600, .flags = CLI_ABOVE_MIN,
         .excludes = "--flag"},
        {"--lens", "L,..", "a list", CLI_LIST, offsetof(parsed, lens)},
    };
    cli_command c = {"table", .groups = {{NULL, rows, CLI_COUNT(rows), p}}};
    int argc = 0;
    while (args[argc]) argc++;
    test_capture cap;
    test_capture_begin(&cap, 1);
    int rc = cli_parse(&c, argc, (char **)args);
    test_capture_end(&cap, captured, sizeof captured);
    fputs(captured, stdout);
    return rc;
}

#define PARSE(p, ...) parse_table(p, (const char *[]){__VA_ARGS__, NULL})

/* One table drives parsing and --help: each kind of value stored where its row says, every bad value
 * refused with exit status 2 and a message naming what the option takes, defaults shown by --help. */
static void test_option_table(void)
{
    parsed p = {.count = 3};
    CHECK(PARSE(&p, "--text", "t", "--dtype", "f16", "--count", "7", "--seconds", "2.5", "--lens", "4,1,2") == 0);
    CHECK(p.dtype == VKATTN_DTYPE_F16 && p.dtype_given && p.count == 7 && p.seconds == 2.5 && strcmp(p.text, "t") == 0);
    CHECK(p.lens.n == 3 && p.lens.v[0] == 4 && p.lens.v[1] == 1 && p.lens.v[2] == 2);
    CHECK(PARSE(&p, "--text", "t", "--dtype", "f32") == 0 && p.dtype == VKATTN_DTYPE_F32);
    const char *bad[] = {"f8", "F16", "fp16", "bf16", "i32", "bool", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_MSG(PARSE(&p, "--text", "t", "--dtype", bad[i]) == CLI_EXIT_USAGE, "%s", bad[i]);
        CHECK_SAID("vkattn table: --dtype takes f32 or f16 (the layer's storage dtype), not \"");
    }
    const char *refused[][2] = {{"--count", "0"},      {"--count", "-1"},     {"--count", "4294967296"},
                                {"--seconds", "0"},    {"--seconds", "601"},  {"--seconds", "inf"},
                                {"--seconds", "1s"},   {"--lens", "0"},       {"--lens", ","},
                                {"--lens", "1,x"},     {"--lens", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"}};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        CHECK_MSG(PARSE(&p, "--text", "t", refused[i][0], refused[i][1]) == CLI_EXIT_USAGE, "%s %s", refused[i][0],
                  refused[i][1]);
    CHECK(PARSE(&p, "--text", "t", "--seconds", "601") == CLI_EXIT_USAGE); /* the range, not "positive" */
    CHECK_SAID("vkattn table: --seconds expects a number in (0, 600], got \"601\"\n");
    CHECK(PARSE(&p, "--text", "t", "--count") == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn table: --count needs a value");
    /* a value forgotten: the next option is not taken for it (nor is --help) */
    CHECK(PARSE(&p, "--text", "--count", "2") == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn table: --text needs a value before the next option, --count\n");
    CHECK(PARSE(&p, "--text", "t", "--dtype", "--help") == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn table: --dtype needs a value before the next option, --help\n");
    CHECK(PARSE(&p, "--text", "-t") == 0 && strcmp(p.text, "-t") == 0); /* no option of the table: a value */
    /* options that exclude each other, in either order */
    CHECK(PARSE(&p, "--text", "t", "--count", "2", "--seconds", "1", "--flag") == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn table: --seconds and --flag exclude each other\n");
    CHECK(PARSE(&p, "--flag", "--count", "2", "--text", "t", "--seconds", "1") == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn table: --seconds and --flag exclude each other\n");
    CHECK(PARSE(&p, "--flag") == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn table: missing --text and --count (--flag needs it)\n");
    CHECK(PARSE(&p, "--flag", "--count", "2", "--text", "t") == 0 && p.flag && p.count == 2);
    CHECK(PARSE(&p, "--flag", "--text", "t") == CLI_EXIT_USAGE); /* a value from before is not this run's */
    CHECK_SAID("vkattn table: missing --count (--flag needs it)\n");
    parsed fresh = {.count = 3};
    CHECK(PARSE(&fresh, "--help") == -1);
    CHECK_SAID("usage: vkattn table --text T [options]\n");
    CHECK_SAID("a text (required)\n");
    CHECK_SAID("  --dtype f32|f16");
    CHECK_SAID("storage (default f32)\n");
    CHECK_SAID("a count (default 3)\n");
}

/* A typo gets the nearest name (Damerau-Levenshtein: "bnech" is one swap from "bench"), the
 * first on a tie, and nothing when no name is near: main.c's list of commands here. */
static void test_nearest(void)
{
    const char *commands[] = {"--help", "--version", "info", "demo", "run", "peak", "bench", "heads", "heatmap"};
    const size_t n = sizeof commands / sizeof commands[0];
    const char *cases[][2] = {
        {"bnech", "bench"}, {"rnu", "run"}, {"rum", "run"}, {"ifno", "info"}, {"heatmpa", "heatmap"},
        {"hedas", "heads"}, {"head", "heads"}, {"--verison", "--version"}, {"dmeo", "demo"}, {"pek", "peak"},
        {"xyz", NULL}, {"r", NULL}, {"runner", NULL}, {"", NULL}, {"benchmarking", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = cli_nearest(cases[i][0], commands, n);
        CHECK_MSG(cases[i][1] ? got && strcmp(got, cases[i][1]) == 0 : got == NULL, "\"%s\" -> %s, expected %s",
                  cases[i][0], got ? got : "none", cases[i][1] ? cases[i][1] : "none");
    }
    char long_word[200];
    memset(long_word, 'a', sizeof long_word - 1), long_word[sizeof long_word - 1] = '\0';
    CHECK(cli_nearest(long_word, commands, n) == NULL);
}

/* Each command's unknown options get the nearest of its own (its parser's cli_is names, the shared
 * forward options included), on one line without the usage text; none is made up. */
static void test_option_typos(void)
{
    CHECK(run_cmd(cmd_run, (const char *[]){"--heads", "4", "--weigths", "w.safetensors", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn run: unknown option \"--weigths\"; did you mean \"--weights\"?\n");
    CHECK(!said("usage:"));
    CHECK(run_cmd(cmd_run, (const char *[]){"--atn-mask", "m.npy", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("did you mean \"--attn-mask\"?");
    CHECK(run_cmd(cmd_run, (const char *[]){"--out", "o.npy", "--check-finte", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("did you mean \"--check-finite\"?");
    CHECK(run_cmd(cmd_run, (const char *[]){"--bogus", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn run: unknown option \"--bogus\" (vkattn run --help lists the options)");
    CHECK(!said("did you mean"));
    CHECK(run_cmd(cmd_run, (const char *[]){"q.npy", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("unexpected argument \"q.npy\"");
    CHECK(run_cmd(cmd_demo, (const char *[]){"--lenght", "7", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn demo: unknown option \"--lenght\"; did you mean \"--length\"?");
    CHECK(run_cmd(cmd_bench, (const char *[]){"--lne", "16", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn bench: unknown option \"--lne\"; did you mean \"--len\"?");
    /* --cpu runs no device: the options that steer the device path are refused beside it, not ignored. */
    const char *device_only[][2] = {{"--device", "0"}, {"--path", "fused"}, {"--precision", "f32"}};
    for (size_t i = 0; i < sizeof device_only / sizeof device_only[0]; i++) {
        CHECK(run_cmd(cmd_run, (const char *[]){"--heads", "4", "--cpu", device_only[i][0], device_only[i][1],
                                                NULL}) == CLI_EXIT_USAGE);
        char want[96];
        snprintf(want, sizeof want, "vkattn run: %s and --cpu exclude each other\n", device_only[i][0]);
        CHECK_SAID(want);
    }
    CHECK(run_cmd(cmd_run, (const char *[]){"--heads", "--query", "q.npy", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn run: --heads needs a value before the next option, --query\n");
    /* A flag's typo at the end is not taken for an option that needs a value. */
    CHECK(run_cmd(cmd_bench, (const char *[]){"--no-cpuu", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("did you mean \"--no-cpu\"?");
    CHECK(!said("needs a value"));
}

/* Every missing required option in one message, exit status 2, whatever else is missing too. */
static void test_missing_options(void)
{
    CHECK(run_cmd(cmd_run, (const char *[]){"--heads", "4", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn run: missing --weights, --query and --out\n");
    CHECK(run_cmd(cmd_run, (const char *[]){NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn run: missing --weights, --heads (or --config), --query and --out\n");
    CHECK(run_cmd(cmd_run, (const char *[]){"--weights", "w.safetensors", "--query", "q.npy", "--value", "v.npy",
                                            "--average-weights", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn run: missing --heads (or --config), --key (--value needs it), --out and --attn-weights "
               "(--average-weights needs it)\n");
    /* The usage text follows, once. */
    const char *first = strstr(captured, "usage: vkattn run");
    CHECK(first && !strstr(first + 1, "usage: vkattn run"));
}

/* ---------------------------------------------------------------------------------------------- */
/* The commands, on lavapipe. */

typedef struct fixture {
    char weights[512], query[512];
    vkattn_weight_file *file;
    vkattn_array q; /* (2, 5, 16) */
} fixture;

static int fixture_open(fixture *fx)
{
    snprintf(fx->weights, sizeof fx->weights, "%s/self_attn.safetensors", fixtures);
    snprintf(fx->query, sizeof fx->query, "%s/self_attn.query.npy", fixtures);
    vkattn_error e = {0};
    if (vkattn_weight_file_load(fx->weights, &fx->file, &e) != VKATTN_OK ||
        vkattn_npy_read(fx->query, &fx->q, &e) != VKATTN_OK) {
        CHECK_MSG(0, "cannot read the self_attn fixture: %s", e.message);
        return 0;
    }
    CHECK(fx->q.rank == 3 && fx->q.dims[0] == 2 && fx->q.dims[1] == 5 && fx->q.dims[2] == 16);
    return fx->q.rank == 3 && fx->q.dims[2] == 16;
}

static void fixture_close(fixture *fx)
{
    vkattn_weight_file_destroy(fx->file);
    vkattn_array_free(&fx->q);
}

/* Writes a copy of the fixture's query, scaled, with one value replaced (index < 0: none). */
static void write_query(const fixture *fx, const char *path, float scale, long index, float value, int unbatched)
{
    size_t n = fx->q.bytes / sizeof(float);
    float *x = malloc(fx->q.bytes);
    for (size_t i = 0; i < n; i++) x[i] = ((const float *)fx->q.data)[i] * scale;
    if (index >= 0) x[index] = value;
    vkattn_array a = fx->q;
    a.data = x;
    if (unbatched) { /* the first batch item, (L, E) */
        a.rank = 2, a.dims[0] = fx->q.dims[1], a.dims[1] = fx->q.dims[2];
        a.bytes = (size_t)a.dims[0] * a.dims[1] * sizeof(float);
    }
    CHECK_STATUS(vkattn_npy_write(path, &a, NULL), VKATTN_OK);
    free(x);
}

/* One F32 tensor of a safetensors file written by write_safetensors. */
typedef struct st_tensor {
    const char *name;
    const float *data;
    uint32_t rank, dims[2];
} st_tensor;

static void write_safetensors(const char *path, const st_tensor *t, int count)
{
    char header[2048];
    size_t len = (size_t)snprintf(header, sizeof header, "{"), offset = 0;
    for (int i = 0; i < count; i++) {
        size_t bytes = sizeof(float) * t[i].dims[0] * (t[i].rank == 2 ? t[i].dims[1] : 1);
        char shape[32];
        if (t[i].rank == 2) snprintf(shape, sizeof shape, "%u,%u", t[i].dims[0], t[i].dims[1]);
        else snprintf(shape, sizeof shape, "%u", t[i].dims[0]);
        len += (size_t)snprintf(header + len, sizeof header - len,
                                "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%s],\"data_offsets\":[%zu,%zu]}", i ? "," : "",
                                t[i].name, shape, offset, offset + bytes);
        offset += bytes;
    }
    header[len++] = '}';
    while (len % 8) header[len++] = ' ';
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    for (int i = 0; i < 8; i++) fputc((int)(((uint64_t)len >> (8 * i)) & 0xFF), f);
    fwrite(header, 1, len, f);
    for (int i = 0; i < count; i++) /* F32 is little-endian, as the host is */
        fwrite(t[i].data, sizeof(float), t[i].dims[0] * (t[i].rank == 2 ? t[i].dims[1] : 1), f);
    fclose(f);
}

/* A safetensors file (F32) of the fixture's weights, with in_proj_weight[row][col] and
 * out_proj.bias[bias_index] replaced when the index is >= 0. */
static void write_weights(const fixture *fx, const char *path, long row, long col, float value, long bias_index,
                          float bias_value)
{
    const vkattn_weights *w = vkattn_weight_file_weights(fx->file);
    enum { E = 16 };
    float in_w[3 * E * E], in_b[3 * E], out_w[E * E], out_b[E];
    memcpy(in_w, w->in_proj_weight, sizeof in_w), memcpy(in_b, w->in_proj_bias, sizeof in_b);
    memcpy(out_w, w->out_proj_weight, sizeof out_w), memcpy(out_b, w->out_proj_bias, sizeof out_b);
    if (row >= 0) in_w[row * E + col] = value;
    if (bias_index >= 0) out_b[bias_index] = bias_value;
    const st_tensor t[4] = {
        {"in_proj_weight", in_w, 2, {3 * E, E}}, {"in_proj_bias", in_b, 1, {3 * E}},
        {"out_proj.weight", out_w, 2, {E, E}}, {"out_proj.bias", out_b, 1, {E}}};
    write_safetensors(path, t, 4);
}

/* A .npy file of any descr, as numpy writes it (vkattn_npy_write writes only the dtypes vkattn uses):
 * `shape` as in the header ("2, 5" or "4,"), `bytes` of raw data. */
static void write_npy(const char *path, const char *descr, const char *shape, const void *data, size_t bytes)
{
    char header[256];
    int len = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr,
                       shape);
    while ((10 + len + 1) % 64) header[len++] = ' ';
    header[len++] = '\n';
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc(len & 0xFF, f), fputc(len >> 8, f);
    fwrite(header, 1, (size_t)len, f);
    fwrite(data, 1, bytes, f);
    fclose(f);
}

static void write_text(const char *path, const char *text, size_t bytes)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) fwrite(text, 1, bytes, f), fclose(f);
}

/* Whether the test device keeps fp16 storage (lavapipe does); without it, f16 falls back to f32. */
static int device_has_fp16_storage(void)
{
    vkattn_context *ctx = NULL;
    if (vkattn_context_create(NULL, &ctx, NULL) != VKATTN_OK) return 0;
    vkattn_device_info info;
    vkattn_context_device(ctx, &info);
    vkattn_context_destroy(ctx);
    return info.storage_16bit;
}

static void test_run_check(const fixture *fx, int fp16)
{
    char out[128], weights[128];
    test_tmp_path(out, sizeof out, "out.npy"), test_tmp_path(weights, sizeof weights, "weights.npy");
    CHECK(RUN(fx->weights, fx->query, out, "--check") == CLI_EXIT_OK);
    CHECK_SAID("tolerance for f32 storage");
    CHECK_SAID("check: OK");
    CHECK(!said("MISMATCH"));
    /* Attention weights too, on the unfused path, in fp16 storage. */
    CHECK(RUN(fx->weights, fx->query, out, "--attn-weights", weights, "--dtype", "f16", "--check",
              "--check-finite") == CLI_EXIT_OK);
    CHECK_SAID(fp16 ? "tolerance for f16 storage" : "the layer stores f32, not f16");
    CHECK_SAID("check attention weights vs CPU path");
    CHECK_SAID("check: OK");
    CHECK_SAID("check-finite: outputs are finite");
    vkattn_array a = {0};
    CHECK_STATUS(vkattn_npy_read(out, &a, NULL), VKATTN_OK);
    CHECK(a.rank == 3 && a.dims[0] == 2 && a.dims[1] == 5 && a.dims[2] == 16);
    vkattn_array_free(&a);
    CHECK(RUN(fx->weights, fx->query, out, "--cpu", "--check") == CLI_EXIT_OK);
    /* Storage names other than f32 and f16 are refused, naming the accepted ones. */
    CHECK(RUN(fx->weights, fx->query, out, "--dtype", "f8") == CLI_EXIT_USAGE);
    CHECK_SAID("--dtype takes f32 or f16");
    CHECK_SAID("not \"f8\"");
    CHECK(RUN(fx->weights, fx->query, out, "--dtype") == CLI_EXIT_USAGE);
    CHECK(run_cmd(cmd_run, (const char *[]){"--help", NULL}) == CLI_EXIT_OK);
    CHECK_SAID("4 --check: MISMATCH");
    remove(out), remove(weights);
}

/* --trace prints the plan that then runs: the fused path here, three steps (Q/K/V matmul, fused
 * attention, output matmul) with this fixture's shapes, and the forward's output is the same as
 * without --trace. With --cpu it says the CPU reference runs. */
static void test_run_trace(const fixture *fx)
{
    char out[128], plain[128];
    test_tmp_path(out, sizeof out, "trace.npy"), test_tmp_path(plain, sizeof plain, "plain.npy");
    CHECK(RUN(fx->weights, fx->query, plain, "--causal") == CLI_EXIT_OK);
    CHECK(!said("steps ("));
    CHECK(RUN(fx->weights, fx->query, out, "--causal", "--trace") == CLI_EXIT_OK);
    CHECK_SAID("plan: fused path, B=2 L=5 S=5 S'=5 E=16 H=4 D=4, f32 storage");
    CHECK_SAID("q: query (2, 5, 16) x W_Q^T -> (2, 4, 5, 4) per head");
    CHECK_SAID("steps (3):");
    CHECK_SAID("qkv_projection  matmul");
    CHECK_SAID("fused           attn_fused");
    CHECK_SAID("out_projection  matmul");
    CHECK_SAID("binds: Q=qkv K=qkv V=qkv Ctx=ctx");
    /* The plan comes before the forward's own line. */
    const char *plan = strstr(captured, "steps ("), *ran = strstr(captured, "path: fused,");
    CHECK(plan && ran && plan < ran);
    vkattn_array a = {0}, b = {0};
    CHECK_STATUS(vkattn_npy_read(out, &a, NULL), VKATTN_OK);
    CHECK_STATUS(vkattn_npy_read(plain, &b, NULL), VKATTN_OK);
    CHECK(a.bytes == b.bytes && a.bytes && memcmp(a.data, b.data, a.bytes) == 0);
    vkattn_array_free(&a), vkattn_array_free(&b);
    /* Attention weights need the unfused path: its plan has the scores and softmax steps. */
    CHECK(RUN(fx->weights, fx->query, out, "--trace", "--attn-weights", plain) == CLI_EXIT_OK);
    CHECK_SAID("plan: unfused path");
    CHECK_SAID("softmax(q k^T / sqrt(4) + mask) (2, 4, 5, 5)");
    CHECK(RUN(fx->weights, fx->query, out, "--trace", "--cpu") == CLI_EXIT_OK);
    CHECK_SAID("plan: the CPU reference path");
    /* bench --trace: each configuration's plan, then its timing row. */
    CHECK(run_cmd(cmd_bench, (const char *[]){"--preset", "quick", "--len", "16", "--mask", "causal", "--path",
                                              "fused", "--no-peak", "--no-cpu", "--min-time", "0", "--trace",
                                              NULL}) == CLI_EXIT_OK);
    CHECK_SAID("plan: fused path, B=1 L=16 S=16 S'=16 E=64 H=4 D=16, f32 storage");
    CHECK_SAID("steps (3):");
    plan = strstr(captured, "steps ("), ran = strstr(captured, " causal         fused");
    CHECK(plan && ran && plan < ran);
    /* and after the timing, each step's fastest time */
    const char *steps = strstr(captured, "  step times (ms, fastest of ");
    CHECK(steps && plan < steps && strstr(steps, " forwards): 1 matmul ") && strstr(steps, ", 2 attn_fused ") &&
          strstr(steps, ", 3 matmul "));
    /* the causal mask as a float attn_mask: the forward's plan binds it, and the CPU path runs too */
    CHECK(run_cmd(cmd_bench, (const char *[]){"--preset", "quick", "--len", "16", "--mask", "float-causal",
                                              "--path", "fused", "--no-peak", "--min-time", "0", "--trace",
                                              NULL}) == CLI_EXIT_OK);
    CHECK_SAID(" float-causal   fused");
    CHECK_SAID("attn_mask");
    remove(out), remove(plain);
}

/* A query 1e6 times larger: the projections exceed fp16's 65504, so with fp16 storage the device
 * computes inf/NaN where the CPU reference (double) stays finite -- a real disagreement. */
static void test_run_fp16_overflow(const fixture *fx)
{
    char query[128], out[128];
    test_tmp_path(query, sizeof query, "big_query.npy"), test_tmp_path(out, sizeof out, "out.npy");
    write_query(fx, query, 1e6f, -1, 0, 0);
    CHECK(RUN(fx->weights, query, out, "--dtype", "f16", "--check") == CLI_EXIT_MISMATCH);
    CHECK_SAID("tolerance for f16 storage");
    CHECK_SAID("non-finite values differ, first at (0, 0, 0)");
    CHECK_SAID("check: MISMATCH");
    CHECK(RUN(fx->weights, query, out, "--dtype", "f16", "--check-finite") == CLI_EXIT_NON_FINITE);
    CHECK_SAID("check-finite: inputs and weights are finite");
    CHECK_SAID("check-finite: output (2, 5, 16): ");
    CHECK_SAID("although every input and weight is finite");
    CHECK_SAID("only the fp16 storage overflowed");
    CHECK_SAID("--dtype f32");
    /* Both: the mismatch (4) wins over the non-finite outputs (3). */
    CHECK(RUN(fx->weights, query, out, "--dtype", "f16", "--check", "--check-finite") == CLI_EXIT_MISMATCH);
    /* In fp32 the same inputs are fine. */
    CHECK(RUN(fx->weights, query, out, "--check", "--check-finite") == CLI_EXIT_OK);
    CHECK_SAID("check: OK");
    remove(query), remove(out);
}

/* A NaN in one query row: reported at its index, before the forward; the outputs it reaches after. */
static void test_run_nan_query(const fixture *fx)
{
    char query[128], out[128];
    test_tmp_path(query, sizeof query, "nan_query.npy"), test_tmp_path(out, sizeof out, "out.npy");
    write_query(fx, query, 1, (1 * 5 + 2) * 16 + 3, NAN, 0); /* (1, 2, 3) */
    CHECK(RUN(fx->weights, query, out, "--check-finite") == CLI_EXIT_NON_FINITE);
    CHECK_SAID("check-finite: query (2, 5, 16): 1 NaN, first at (1, 2, 3)\n");
    /* Self-attention: row 2 of item 1 is also a key and a value of every query of item 1. */
    CHECK_SAID("check-finite: output (2, 5, 16): 80 NaN, first at (1, 0, 0)\n");
    CHECK(!said("although every input"));
    const char *q = strstr(captured, "query (2, 5, 16)"), *o = strstr(captured, "output (2, 5, 16)");
    CHECK(q && o && q < o); /* forward order */
    /* NaN where the CPU reference has NaN too: --check agrees, the exit status is 3. */
    CHECK(RUN(fx->weights, query, out, "--check", "--check-finite") == CLI_EXIT_NON_FINITE);
    CHECK_SAID("check: OK");
    /* An unbatched (L, E) query: indices in its own two dims; +inf and -inf counted apart. */
    write_query(fx, query, 1, 4 * 16 + 9, INFINITY, 1); /* (4, 9) */
    CHECK(RUN(fx->weights, query, out, "--check-finite", "--cpu") == CLI_EXIT_NON_FINITE);
    CHECK_SAID("check-finite: query (5, 16): 1 +inf, first at (4, 9)\n");
    CHECK_SAID("check-finite: output (5, 16): ");
    remove(query), remove(out);
}

/* Weights: one that fp16 rounds to inf (refused at layer creation with f16 storage), and an infinite
 * bias (named, and the outputs it reaches). */
static void test_run_bad_weights(const fixture *fx, int fp16)
{
    char weights[128], out[128];
    test_tmp_path(weights, sizeof weights, "big.safetensors"), test_tmp_path(out, sizeof out, "out.npy");
    write_weights(fx, weights, 5, 3, 70000.0f, -1, 0);
    int rc = RUN(weights, fx->query, out, "--dtype", "f16", "--check-finite");
    CHECK_SAID("check-finite: in_proj_weight (48, 16): 1 value overflows fp16 storage to inf (|x| >= 65520), first at "
               "(5, 3) = 70000\n");
    if (fp16) {
        CHECK(rc == CLI_EXIT_FAILURE);
        CHECK_SAID("VKATTN_ERROR_NON_FINITE");
        CHECK_SAID("--dtype f32 keeps the weights in fp32");
    }
    CHECK(RUN(weights, fx->query, out, "--check", "--check-finite") == CLI_EXIT_OK);
    CHECK(!said("overflows fp16"));

    write_weights(fx, weights, -1, -1, 0, 7, INFINITY);
    CHECK(RUN(weights, fx->query, out, "--check-finite", "--check") == CLI_EXIT_NON_FINITE);
    CHECK_SAID("check-finite: out_proj.bias (16): 1 +inf, first at (7)\n");
    CHECK_SAID("check-finite: output (2, 5, 16): 10 +inf, first at (0, 0, 7)\n");
    CHECK(!said("check-finite: inputs and weights are finite"));
    remove(weights), remove(out);
}

/* An input of a dtype it does not take names the option, the file, the dtype the file holds (not
 * the one the reader converted it to), the dtypes it takes and the numpy call that converts, exit
 * status 1; dtypes the reader converts (float64, int64 lengths) run. */
static void test_input_dtypes(const fixture *fx)
{
    char path[128], out[128];
    test_tmp_path(path, sizeof path, "input.npy"), test_tmp_path(out, sizeof out, "out.npy");
    const size_t n = fx->q.bytes / sizeof(float);
    double *q64 = malloc(n * sizeof *q64);
    int64_t *i64 = calloc(n, sizeof *i64);
    float f32[16] = {0};
    int32_t i32[4] = {1, 1, 1, 1};
    uint8_t u8[10] = {0};
    for (size_t i = 0; i < n; i++) q64[i] = ((const float *)fx->q.data)[i];
    write_npy(path, "<f8", "2, 5, 16", q64, n * sizeof *q64);
    CHECK(RUN(fx->weights, path, out, "--cpu") == CLI_EXIT_OK); /* converted, as vkattn.h says */
    write_npy(path, "<i8", "2, 5, 16", i64, n * sizeof *i64);
    CHECK(RUN(fx->weights, path, out, "--cpu") == CLI_EXIT_FAILURE);
    char text[512];
    snprintf(text, sizeof text, "vkattn run: --query %s holds int64 (<i8); the query must be float32 (<f4", path);
    CHECK_SAID(text);
    CHECK_SAID("(numpy: q.astype(np.float32))\n");

    const struct {
        const char *option, *descr, *shape;
        const void *data;
        size_t bytes;
        const char *said;
    } cases[] = {
        {"--key-padding-mask", "<f4", "2, 5", f32, 10 * sizeof(float),
         "holds float32 (<f4); the key padding mask must be bool (|b1)"},
        {"--key-padding-mask", "|u1", "2, 5", u8, 10, "holds uint8 (|u1); the key padding mask must be bool (|b1)"},
        {"--attn-mask", "<i8", "5, 5", i64, 25 * sizeof(int64_t),
         "holds int64 (<i8); the attention mask must be bool (|b1, true = blocked) or float32 (<f4"},
        {"--valid-lens", "<f4", "2,", f32, 2 * sizeof(float), "holds float32 (<f4); the valid lengths must be int32"},
        {"--head-mask", "<i4", "4,", i32, sizeof i32, "holds int32 (<i4); the head mask must be bool (|b1)"},
        {"--query", "<f4", "2, 5, 16, 1", q64, n * sizeof(float), "has shape (2, 5, 16, 1); the query must be (B, L, E)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_npy(path, cases[i].descr, cases[i].shape, cases[i].data, cases[i].bytes);
        int rc = i + 1 < sizeof cases / sizeof cases[0] ? RUN(fx->weights, fx->query, out, "--cpu", cases[i].option, path)
                                                        : RUN(fx->weights, path, out, "--cpu");
        CHECK_MSG(rc == CLI_EXIT_FAILURE, "case %zu: exit %d", i, rc);
        snprintf(text, sizeof text, "%s %s %s", cases[i].option, path, cases[i].said);
        CHECK_SAID(text);
    }
    const int64_t lens[2] = {5, 3};
    write_npy(path, "<i8", "2,", lens, sizeof lens);
    CHECK(RUN(fx->weights, fx->query, out, "--cpu", "--valid-lens", path) == CLI_EXIT_OK);
    free(q64), free(i64);
    remove(path), remove(out);
}

/* A file of the wrong kind is named for what it is, with what the option takes, exit status 1: a
 * .npy as --weights, safetensors as an array, an empty file, text, a zip archive, a directory. A
 * missing file and a broken .npy keep the reader's own message. */
static void test_input_kinds(const fixture *fx)
{
    char path[128], out[128], text[1200];
    test_tmp_path(path, sizeof path, "input.bin"), test_tmp_path(out, sizeof out, "out.npy");
    CHECK(RUN(fx->query, fx->query, out, "--cpu") == CLI_EXIT_FAILURE);
    snprintf(text, sizeof text,
             "vkattn run: --weights %s is a .npy array, not a safetensors file: --weights takes the layer's weights "
             "as safetensors (see README, \"Command-line tool\")\n", fx->query);
    CHECK_SAID(text);
    CHECK(RUN(fx->weights, fx->weights, out, "--cpu") == CLI_EXIT_FAILURE);
    snprintf(text, sizeof text, "--query %s is a safetensors file, not a .npy array: --query takes a .npy array",
             fx->weights);
    CHECK_SAID(text);

    write_text(path, "", 0);
    CHECK(RUN(fx->weights, fx->query, out, "--cpu", "--key", path) == CLI_EXIT_FAILURE);
    snprintf(text, sizeof text, "--key %s is empty (0 bytes): --key takes a .npy array", path);
    CHECK_SAID(text);
    write_text(path, "0.5,0.25\n1,2\n", 13);
    CHECK(RUN(path, fx->query, out, "--cpu") == CLI_EXIT_FAILURE);
    snprintf(text, sizeof text, "--weights %s is a text file (it starts \"0.5,0.25\"): --weights takes", path);
    CHECK_SAID(text);
    write_text(path, "PK\3\4\0\0\0\0", 8);
    CHECK(RUN(fx->weights, path, out, "--cpu") == CLI_EXIT_FAILURE);
    CHECK_SAID("is a zip archive (np.savez and torch.save write these): --query takes a .npy array");
    CHECK(RUN(fx->weights, test_tmp_dir, out, "--cpu") == CLI_EXIT_FAILURE);
    CHECK_SAID("is a directory: --query takes");

    /* A pipe is read once: a refused one gets the reader's words, or the dtype it loaded as,
     * without being opened again (a FIFO without a writer would wait forever). */
    char fifo[128];
    test_tmp_path(fifo, sizeof fifo, "query.fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    static const uint8_t zeros[256];
    static const struct {
        const char *descr, *said;
        size_t bytes;
    } piped[] = {
        {"|u1", "VKATTN_ERROR_FORMAT", 32},                 /* the reader refuses it */
        {"<i8", "holds what loads as i32; the query", 256}, /* read, as int32: the wrong dtype */
    };
    for (size_t c = 0; c < sizeof piped / sizeof piped[0]; c++) {
        write_npy(path, piped[c].descr, "1, 2, 16", zeros, piped[c].bytes);
        fflush(NULL); /* or the child's exit would print this process's buffered output again */
        pid_t pid = fork();
        if (pid == 0) {
            FILE *in = fopen(path, "rb"), *to = fopen(fifo, "wb");
            int ch;
            while (in && to && (ch = fgetc(in)) != EOF) fputc(ch, to);
            if (to) fclose(to);
            _exit(0);
        }
        CHECK(RUN(fx->weights, fifo, out, "--cpu") == CLI_EXIT_FAILURE);
        CHECK_SAID(piped[c].said);
        CHECK(!said("is empty"));
        int unblock = open(fifo, O_RDONLY | O_NONBLOCK); /* frees the writer if the run never opened it */
        int st;
        CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
        if (unblock >= 0) close(unblock);
    }
    remove(fifo);

    CHECK(RUN(fx->weights, "/no/such/query.npy", out, "--cpu") == CLI_EXIT_FAILURE);
    CHECK_SAID("VKATTN_ERROR_IO: /no/such/query.npy: cannot open: No such file or directory");
    write_npy(path, "<f4", "2, 5, 16", fx->q.data, 16); /* truncated */
    CHECK(RUN(fx->weights, path, out, "--cpu") == CLI_EXIT_FAILURE);
    CHECK_SAID("reading --query: VKATTN_ERROR_FORMAT:");
    CHECK_SAID("(truncated?)");
    remove(path), remove(out);
}

/* 1 if `path` exists; with `text`, also if it holds exactly that. */
static int file_holds(const char *path, const char *text)
{
    char buf[64] = "";
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return !text || strcmp(buf, text) == 0;
}

/* An output that cannot be written is refused before the inputs are read and before any device
 * is opened (no "shapes:" or "device:" line), naming the option, the path and the OS reason, exit
 * status 1. The check leaves no file behind, and a run that fails early keeps an existing output. */
static void test_outputs_checked_first(const fixture *fx)
{
    char out[128], text[600];
    test_tmp_path(out, sizeof out, "out.npy");
    CHECK(RUN(fx->weights, fx->query, "/no/such/dir/o.npy", "--causal") == CLI_EXIT_FAILURE);
    CHECK_SAID("vkattn run: --out /no/such/dir/o.npy: cannot write this file (No such file or directory)\n");
    CHECK(!said("shapes:") && !said("device:"));
    CHECK(RUN(fx->weights, fx->query, out, "--attn-weights", test_tmp_dir) == CLI_EXIT_FAILURE);
    snprintf(text, sizeof text, "--attn-weights %s: cannot write this file (Is a directory)", test_tmp_dir);
    CHECK_SAID(text);
    CHECK(!said("device:"));
    CHECK_MSG(!file_holds(out, NULL), "%s was left behind", out);
    remove(out);
    snprintf(text, sizeof text, "%s/o.npy", fx->query); /* a file as a directory */
    CHECK(RUN(fx->weights, fx->query, text, "--causal") == CLI_EXIT_FAILURE);
    CHECK_SAID("cannot write this file (Not a directory)");

    /* Writable outputs pass the check untouched, and an early failure leaves them so. */
    CHECK(RUN(fx->weights, "/no/such/query.npy", out, "--cpu") == CLI_EXIT_FAILURE);
    CHECK_MSG(!file_holds(out, NULL), "%s was left behind", out);
    write_text(out, "keep", 4);
    CHECK(RUN(fx->weights, "/no/such/query.npy", out, "--cpu") == CLI_EXIT_FAILURE);
    CHECK(file_holds(out, "keep"));
    remove(out);

    /* bench says it before the sweep, with the same message and status. */
    CHECK(run_cmd(cmd_bench, (const char *[]){"--preset", "quick", "--json", "/no/such/dir/b.json", NULL}) ==
          CLI_EXIT_FAILURE);
    CHECK_SAID("vkattn bench: --json /no/such/dir/b.json: cannot write this file (No such file or directory)\n");
    CHECK(!said("device:"));
}

/* Options that cannot go together are refused before any work, exit status 2: two outputs in one
 * file (run, bench), attention weights from the fused path. */
static void test_option_conflicts(const fixture *fx)
{
    char out[128], other[160], text[600];
    test_tmp_path(out, sizeof out, "out.npy");
    CHECK(RUN(fx->weights, fx->query, out, "--attn-weights", out) == CLI_EXIT_USAGE);
    snprintf(text, sizeof text, "vkattn run: --out and --attn-weights are both %s: the second would overwrite the "
                                "first; give each its own file\n", out);
    CHECK_SAID(text);
    CHECK(!said("shapes:") && !said("device:"));
    snprintf(other, sizeof other, "%s/../%s/out.npy", test_tmp_dir, strrchr(test_tmp_dir, '/') + 1);
    write_text(out, "keep", 4); /* an existing file under another name */
    CHECK(RUN(fx->weights, fx->query, out, "--attn-weights", other) == CLI_EXIT_USAGE);
    CHECK(file_holds(out, "keep"));
    remove(out);
    const char *bench_pairs[][4] = {{"--json", "--csv", "b.out", "b.out"}, {"--csv", "--plot", "b.png", "b.png"},
                                    {"--json", "--plot", "b.svg", "b.svg"}};
    for (size_t i = 0; i < sizeof bench_pairs / sizeof bench_pairs[0]; i++) {
        test_tmp_path(out, sizeof out, bench_pairs[i][2]);
        CHECK(run_cmd(cmd_bench, (const char *[]){"--preset", "quick", bench_pairs[i][0], out, bench_pairs[i][1], out,
                                                  NULL}) == CLI_EXIT_USAGE);
        snprintf(text, sizeof text, "vkattn bench: %s and %s are both %s", bench_pairs[i][0], bench_pairs[i][1], out);
        CHECK_SAID(text);
        CHECK(!said("device:"));
    }
    test_tmp_path(out, sizeof out, "out.npy"), test_tmp_path(other, sizeof other, "weights.npy");
    CHECK(RUN(fx->weights, fx->query, out, "--path", "fused", "--attn-weights", other) == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn run: --path fused returns no attention weights: --attn-weights needs the unfused path");
    CHECK(!said("device:"));
}

/* Files that are not what an option takes, exit status 1 with what they hold: a bench head mask of
 * the wrong dtype or shape, a directory where a JSON file goes, a safetensors file whose header
 * length is not printable (the reader's own message, not "a text file"). */
static void test_wrong_files(const fixture *fx)
{
    char path[128], out[128], text[600];
    test_tmp_path(path, sizeof path, "mask.npy"), test_tmp_path(out, sizeof out, "out.npy");
    const int32_t i32[4] = {1, 1, 1, 1};
    const uint8_t five[5] = {1, 1, 1, 1, 1};
    write_npy(path, "<i4", "4,", i32, sizeof i32);
    const char *bench[] = {"--len", "8", "--embed", "16", "--heads", "4", "--no-peak", "--no-cpu", "--head-mask", path,
                           NULL};
    CHECK(run_cmd(cmd_bench, bench) == CLI_EXIT_FAILURE);
    snprintf(text, sizeof text, "vkattn bench: --head-mask %s holds int32 (<i4) of shape (4); the head mask must be "
                                "bool (|b1) of shape (4)", path);
    CHECK_SAID(text);
    write_npy(path, "|b1", "5,", five, sizeof five);
    CHECK(run_cmd(cmd_bench, bench) == CLI_EXIT_FAILURE);
    snprintf(text, sizeof text, "--head-mask %s holds bool (|b1) of shape (5);", path);
    CHECK_SAID(text);

    CHECK(run_cmd(cmd_run, (const char *[]){"--weights", fx->weights, "--config", test_tmp_dir, "--query", fx->query,
                                            "--out", out, "--cpu", NULL}) == CLI_EXIT_FAILURE);
    snprintf(text, sizeof text, "%s: is a directory, not a file", test_tmp_dir);
    CHECK_SAID(text);
    CHECK(!said("limit"));
    CHECK(run_cmd(cmd_bench, (const char *[]){"--compare", test_tmp_dir, fx->weights, NULL}) == CLI_EXIT_FAILURE);
    CHECK_SAID(text);
    CHECK(!said("bytes)"));

    test_tmp_path(path, sizeof path, "ff.safetensors");
    write_text(path, "\xff\xff\xff\xff\xff\xff\xff\xff{\"a\":1}", 15);
    CHECK(RUN(path, fx->query, out, "--cpu") == CLI_EXIT_FAILURE);
    CHECK_SAID("reading --weights: VKATTN_ERROR_FORMAT:");
    CHECK_SAID("header length 18446744073709551615");
    CHECK(!said("is a text file"));
    remove(path), remove(out);
}

/* Runs `fn` with VKATTN_DEVICE or VKATTN_TUNING (`name`) set to `value` for the call, restored after. */
static int run_cmd_env(int (*fn)(int, char **), const char *name, const char *value, const char **args)
{
    const char *old = getenv(name);
    char saved[256] = "";
    if (old) snprintf(saved, sizeof saved, "%s", old);
    setenv(name, value, 1);
    int rc = run_cmd(fn, args);
    if (old) setenv(name, saved, 1);
    else unsetenv(name);
    return rc;
}

/* heads with one active head reports it as not measured (n/a, null), never as a zero change; heads
 * refuses one file for two outputs; info says which environment setting contexts refuse, exit 1;
 * the help lists every tuning class; a head count that does not divide the width is said in the
 * CLI's words. */
static void test_binary_commands(const fixture *fx)
{
    char mask[128], json[128], text[300];
    test_tmp_path(mask, sizeof mask, "one_head.npy"), test_tmp_path(json, sizeof json, "heads.json");
    const uint8_t keep[4] = {0, 1, 0, 0};
    write_npy(mask, "|b1", "4,", keep, sizeof keep);
    CHECK(run_cmd(cmd_heads, (const char *[]){"--weights", fx->weights, "--heads", "4", "--query", fx->query,
                                              "--head-mask", mask, "--json", json, "--cpu", NULL}) == CLI_EXIT_OK);
    CHECK_SAID("n/a  (the only active head: removing it leaves no attention");
    CHECK(!said("0.0000e+00"));
    char err[400] = "";
    cJSON *root = cli_json_read_file(json, err, sizeof err), *row = NULL;
    CHECK_MSG(root != NULL, "%s", err);
    const cJSON *heads = root ? cJSON_GetObjectItemCaseSensitive(root, "heads") : NULL;
    cJSON_ArrayForEach(row, heads) if (cli_json_number(row, "head", NULL) == 2) break;
    CHECK(row && cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(row, "rel_l2")) &&
          cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(row, "max_abs")) && cli_json_string(row, "note"));
    cJSON_Delete(root);
    remove(json);
    CHECK(run_cmd(cmd_heads, (const char *[]){"--weights", fx->weights, "--heads", "4", "--query", fx->query, "--json",
                                              json, "--prune", "1", "--write-mask", json, "--cpu", NULL}) ==
          CLI_EXIT_USAGE);
    snprintf(text, sizeof text, "vkattn heads: --json and --write-mask are both %s", json);
    CHECK_SAID(text);
    /* --write-mask and --repeats serve --prune: alone they were ignored, exit 0 (an outside review) */
    CHECK(run_cmd(cmd_heads, (const char *[]){"--weights", fx->weights, "--heads", "4", "--query", fx->query,
                                              "--write-mask", mask, "--repeats", "3", "--cpu", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("missing --prune (--write-mask needs it)");

    CHECK(run_cmd_env(cmd_info, "VKATTN_DEVICE", "99", (const char *[]){NULL}) == CLI_EXIT_FAILURE);
    CHECK_SAID("vkattn info: VKATTN_DEVICE=99: there ");
    CHECK(run_cmd_env(cmd_info, "VKATTN_TUNING", "bogus", (const char *[]){NULL}) == CLI_EXIT_FAILURE);
    CHECK_SAID("VKATTN_TUNING \"bogus\": no tuning is named \"bogus\"");
    CHECK(!said("contexts use VKATTN_TUNING=bogus"));

    CHECK(run_cmd(cmd_run, (const char *[]){"--weights", fx->weights, "--heads", "3", "--query", fx->query, "--out",
                                            json, "--cpu", NULL}) == CLI_EXIT_FAILURE);
    CHECK_SAID("vkattn run: the weights' embed_dim 16 is not divisible by --heads 3");
    CHECK(!said("give head_dim"));
    remove(mask), remove(json);
}

/* A device that is not there: the CLI names the option (or VKATTN_DEVICE) and lists the devices,
 * "1 device" or "N devices"; so does the library's own message, for embedders. */
static void test_device_choice(void)
{
    uint32_t count = 0;
    CHECK_STATUS(vkattn_list_devices(NULL, 0, &count, NULL), VKATTN_OK);
    char index[16], there[64], text[300];
    snprintf(index, sizeof index, "%u", count); /* one past the last */
    if (count == 1) snprintf(there, sizeof there, "there is only 1 device (0: ");
    else snprintf(there, sizeof there, "there are only %u devices (0: ", count);
    CHECK(run_cmd(cmd_demo, (const char *[]){"--device", index, NULL}) == CLI_EXIT_FAILURE);
    snprintf(text, sizeof text, "vkattn demo: --device %u: %s", count, there);
    CHECK_SAID(text);
    CHECK(run_cmd(cmd_demo, (const char *[]){"--device", "no-such-gpu", NULL}) == CLI_EXIT_FAILURE);
    CHECK_SAID("vkattn demo: --device no-such-gpu: no device's name contains \"no-such-gpu\"; there ");
    CHECK_SAID(count == 1 ? "there is 1 device (0: " : " devices (0: ");

    /* VKATTN_DEVICE (the GPU tests set it) when no --device is given. */
    CHECK(run_cmd_env(cmd_demo, "VKATTN_DEVICE", index, (const char *[]){NULL}) == CLI_EXIT_FAILURE);
    snprintf(text, sizeof text, "vkattn demo: VKATTN_DEVICE=%u: %s", count, there);
    CHECK_SAID(text);

    vkattn_context_desc d = {.device = index};
    vkattn_context *c = NULL;
    vkattn_error err = {0};
    CHECK_STATUS(vkattn_context_create(&d, &c, &err), VKATTN_ERROR_NO_DEVICE);
    snprintf(text, sizeof text, "asks for device %u but %s", count, there);
    CHECK_MSG(strstr(err.message, text) != NULL, "%s", err.message);
}

static void test_demo(int fp16)
{
    CHECK(run_cmd(cmd_demo, (const char *[]){"--length", "7", "--embed", "32", "--heads", "4", "--repeats", "1",
                                             NULL}) == CLI_EXIT_OK);
    CHECK_SAID(": OK (tolerance for f32 storage");
    CHECK(run_cmd(cmd_demo, (const char *[]){"--length", "7", "--embed", "32", "--heads", "4", "--repeats", "1",
                                             "--dtype", "f16", NULL}) == CLI_EXIT_OK);
    CHECK_SAID(fp16 ? ": OK (tolerance for f16 storage" : "the layer stores f32, not f16");
    CHECK(run_cmd(cmd_demo, (const char *[]){"--dtype", "bf16", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("--dtype takes f32 or f16");
    /* 2^32 - 1 repeats wrapped the timing array's size to 0 (an outside review) */
    CHECK(run_cmd(cmd_demo, (const char *[]){"--repeats", "4294967295", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("at most 100000 --repeats");
}

/* A Hugging Face checkpoint layer with grouped-query widths (H = 4, H_kv = 2, E = 16) and
 * Qwen2-style biases (q/k/v, no o_proj.bias), under the prefix model.layers.0.self_attn. */
static void write_hf_gqa(const char *path)
{
    enum { E = 16, KV = 8 };
    float q_w[E * E], k_w[KV * E], v_w[KV * E], o_w[E * E], q_b[E], k_b[KV], v_b[KV], other[4] = {1, 2, 3, 4};
    test_rng rng = test_rng_make(77);
    float *all[] = {q_w, k_w, v_w, o_w, q_b, k_b, v_b};
    size_t counts[] = {E * E, KV * E, KV * E, E * E, E, KV, KV};
    for (int i = 0; i < 7; i++) test_fill(&rng, all[i], counts[i], 0.5f);
    const st_tensor t[] = {
        {"model.embed_tokens.weight", other, 2, {2, 2}},
        {"model.layers.0.self_attn.q_proj.weight", q_w, 2, {E, E}},
        {"model.layers.0.self_attn.k_proj.weight", k_w, 2, {KV, E}},
        {"model.layers.0.self_attn.v_proj.weight", v_w, 2, {KV, E}},
        {"model.layers.0.self_attn.o_proj.weight", o_w, 2, {E, E}},
        {"model.layers.0.self_attn.q_proj.bias", q_b, 1, {E}},
        {"model.layers.0.self_attn.k_proj.bias", k_b, 1, {KV}},
        {"model.layers.0.self_attn.v_proj.bias", v_b, 1, {KV}},
    };
    write_safetensors(path, t, 8);
}

/* The layer of write_hf_gqa, read under its prefix: --check compares the GPU with the CPU path;
 * --kv-heads must agree with the file. */
static void test_run_hf_gqa(const fixture *fx)
{
    char weights[512], query[512], out[512];
    test_tmp_path(weights, sizeof weights, "hf_gqa.safetensors");
    test_tmp_path(query, sizeof query, "hf_gqa.query.npy");
    test_tmp_path(out, sizeof out, "hf_gqa.out.npy");
    write_hf_gqa(weights);
    write_query(fx, query, 1.0f, -1, 0, 0);
    const char *args[] = {"--weights", weights, "--prefix", "model.layers.0.self_attn.", "--heads", "4", "--kv-heads",
                          "2", "--query", query, "--out", out, "--check", "--causal", NULL};
    CHECK(run_cmd(cmd_run, args) == CLI_EXIT_OK);
    CHECK_SAID("k/v rows 8 (2 key/value heads)");
    CHECK_SAID("check: OK");
    args[7] = "4";
    CHECK(run_cmd(cmd_run, args) == CLI_EXIT_FAILURE);
    CHECK_SAID("--kv-heads 4, but the weights' k/v projections hold 2 key/value heads");
    args[3] = "model.layers.7.self_attn.";
    args[7] = "2";
    CHECK(run_cmd(cmd_run, args) == CLI_EXIT_FAILURE);
    CHECK_SAID("model.layers.0.self_attn.");

    /* The same layer with rotary positions (GPT-J pairs on half of each head), --check again. */
    const char *rope[] = {"--weights", weights, "--prefix", "model.layers.0.self_attn.", "--heads", "4", "--query",
                          query, "--out", out, "--check", "--causal", "--rope-theta", "10000", "--rope-dim", "2",
                          "--rope-style", "gptj", NULL};
    CHECK(run_cmd(cmd_run, rope) == CLI_EXIT_OK);
    CHECK_SAID("rope gptj theta 10000 on 2 dims");
    CHECK_SAID("check: OK");
    rope[15] = "3"; /* odd: refused by the layer */
    CHECK(run_cmd(cmd_run, rope) == CLI_EXIT_FAILURE);
    CHECK_SAID("rope_dim");
    rope[17] = "rotate";
    CHECK(run_cmd(cmd_run, rope) == CLI_EXIT_USAGE);
    CHECK_SAID("--rope-style takes neox or gptj");
    const char *no_theta[] = {"--weights", weights, "--prefix", "model.layers.0.self_attn.", "--heads", "4",
                              "--query", query, "--out", out, "--rope-dim", "2", NULL};
    CHECK(run_cmd(cmd_run, no_theta) == CLI_EXIT_USAGE);
    CHECK_SAID("need --rope-theta");
    remove(weights), remove(query), remove(out);
}

/* A checkpoint in two shards, given as its folder and as its index: the same output, to the bit, as
 * the one file; a folder without either file is the reader's message, not "is a directory". */
static void test_run_sharded(const fixture *fx)
{
    char dir[512], shard[600], index[600], query[512], out[512], whole[512];
    test_tmp_path(dir, sizeof dir, "sharded");
    test_tmp_path(query, sizeof query, "sharded.query.npy");
    test_tmp_path(out, sizeof out, "sharded.out.npy");
    test_tmp_path(whole, sizeof whole, "sharded.whole.npy");
    CHECK(mkdir(dir, 0700) == 0);
    write_query(fx, query, 1.0f, -1, 0, 0);
    CHECK(RUN(dir, query, out, "--cpu") == CLI_EXIT_FAILURE);
    CHECK_SAID("a folder without model.safetensors or model.safetensors.index.json");
    CHECK(!said("is a directory"));

    const vkattn_weights *w = vkattn_weight_file_weights(fx->file);
    enum { E = 16 };
    const st_tensor first[2] = {{"in_proj_weight", w->in_proj_weight, 2, {3 * E, E}},
                                {"in_proj_bias", w->in_proj_bias, 1, {3 * E}}};
    const st_tensor second[2] = {{"out_proj.weight", w->out_proj_weight, 2, {E, E}}, {"out_proj.bias", w->out_proj_bias, 1, {E}}};
    snprintf(shard, sizeof shard, "%s/model-00001-of-00002.safetensors", dir);
    write_safetensors(shard, first, 2);
    snprintf(shard, sizeof shard, "%s/model-00002-of-00002.safetensors", dir);
    write_safetensors(shard, second, 2);
    static const char text[] = "{\"metadata\": {\"total_size\": 4352}, \"weight_map\": {"
                               "\"in_proj_bias\": \"model-00001-of-00002.safetensors\", "
                               "\"in_proj_weight\": \"model-00001-of-00002.safetensors\", "
                               "\"out_proj.bias\": \"model-00002-of-00002.safetensors\", "
                               "\"out_proj.weight\": \"model-00002-of-00002.safetensors\"}}\n";
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir);
    write_text(index, text, sizeof text - 1);

    CHECK(RUN(fx->weights, query, whole, "--causal") == CLI_EXIT_OK);
    const char *paths[2] = {dir, index};
    for (int i = 0; i < 2; i++) {
        CHECK(RUN(paths[i], query, out, "--causal", "--check") == CLI_EXIT_OK);
        CHECK_SAID("check: OK");
        vkattn_array a = {0}, b = {0};
        CHECK_STATUS(vkattn_npy_read(whole, &a, NULL), VKATTN_OK);
        CHECK_STATUS(vkattn_npy_read(out, &b, NULL), VKATTN_OK);
        CHECK_MSG(a.bytes == b.bytes && a.bytes && memcmp(a.data, b.data, a.bytes) == 0,
                  "--weights %s: the output differs from the one file's", paths[i]);
        vkattn_array_free(&a), vkattn_array_free(&b);
    }
    /* The shards' fault, named through the index. */
    write_text(shard, "", 0);
    CHECK(RUN(index, query, out, "--cpu") == CLI_EXIT_FAILURE);
    CHECK_SAID("model.safetensors.index.json: model-00002-of-00002.safetensors: safetensors: file is 0 bytes");
    remove(shard), remove(index), remove(query), remove(out), remove(whole);
    snprintf(shard, sizeof shard, "%s/model-00001-of-00002.safetensors", dir);
    remove(shard);
    CHECK(rmdir(dir) == 0);
}

/* --check-finite scans each projection at its own shape: heads of D != E / H (Qwen3-0.6B's 16 x 128
 * over E = 1024, Gemma 3 1B's 4 x 256 over 1152) give a query projection of H * D rows and an
 * output one of H * D columns. Here E = 16, two heads of 16 (wide: 32 rows) or of 4 (narrow: 8),
 * a NaN in the query projection's last value. The scan took both as E x E before an outside
 * review: the wide NaN went unseen, the narrow scan read past the tensor (AddressSanitizer). */
static void test_run_finite_head_widths(const fixture *fx)
{
    char weights[512], query[512], out[512];
    test_tmp_path(weights, sizeof weights, "hf_widths.safetensors");
    test_tmp_path(query, sizeof query, "hf_widths.query.npy");
    test_tmp_path(out, sizeof out, "hf_widths.out.npy");
    write_query(fx, query, 1.0f, -1, 0, 0);
    enum { E = 16 };
    static const uint32_t inner[2] = {32, 8};
    for (int w = 0; w < 2; w++) {
        const uint32_t I = inner[w];
        float q_w[32 * E], k_w[32 * E], v_w[32 * E], o_w[E * 32];
        test_rng rng = test_rng_make(78);
        test_fill(&rng, q_w, I * E, 0.5f), test_fill(&rng, k_w, I * E, 0.5f);
        test_fill(&rng, v_w, I * E, 0.5f), test_fill(&rng, o_w, E * I, 0.5f);
        q_w[I * E - 1] = NAN;
        const st_tensor t[] = {
            {"q_proj.weight", q_w, 2, {I, E}}, {"k_proj.weight", k_w, 2, {I, E}},
            {"v_proj.weight", v_w, 2, {I, E}}, {"o_proj.weight", o_w, 2, {E, I}}};
        write_safetensors(weights, t, 4);
        const char *args[] = {"--weights", weights, "--heads", "2", "--query", query, "--out", out, "--check-finite",
                              NULL};
        CHECK(run_cmd(cmd_run, args) == CLI_EXIT_NON_FINITE);
        char want[96];
        snprintf(want, sizeof want, "check-finite: q_proj_weight (%u, 16): 1 NaN, first at (%u, 15)\n", I, I - 1);
        CHECK_MSG(said(want), "no \"%s\" in:\n%s", want, captured);
        CHECK(!said("check-finite: inputs and weights are finite"));
    }
    remove(weights), remove(query), remove(out);
}

/* vkattn run on write_hf_gqa's layer with NeoX rotary positions: --weights W --prefix ... --heads 4
 * --kv-heads 2 --rope-theta 10000 --query Q --out OUT, then the NULL-terminated `extra`. */
static int run_gqa_rope(const char *weights, const char *query, const char *out, const char **extra)
{
    const char *args[32] = {"--weights", weights, "--prefix", "model.layers.0.self_attn.", "--heads", "4",
                            "--kv-heads", "2", "--rope-theta", "10000", "--query", query, "--out", out};
    int n = 14;
    while (*extra && n < 31) args[n++] = *extra++;
    args[n] = NULL;
    return run_cmd(cmd_run, args);
}

#define RUN_GQA(weights, query, out, ...) run_gqa_rope(weights, query, out, (const char *[]){__VA_ARGS__, NULL})

/* max |a - b| over two .npy files of one shape; +inf when they cannot be read or differ in shape. */
static double npy_max_abs(const char *a_path, const char *b_path)
{
    vkattn_array a = {0}, b = {0};
    double m = INFINITY;
    if (vkattn_npy_read(a_path, &a, NULL) == VKATTN_OK && vkattn_npy_read(b_path, &b, NULL) == VKATTN_OK &&
        a.rank == b.rank && a.bytes == b.bytes && memcmp(a.dims, b.dims, a.rank * sizeof *a.dims) == 0) {
        m = 0;
        for (size_t i = 0; i < a.bytes / sizeof(float); i++) {
            double d = fabs((double)((const float *)a.data)[i] - ((const float *)b.data)[i]);
            m = d > m || isnan(d) ? d : m;
        }
    }
    vkattn_array_free(&a), vkattn_array_free(&b);
    return m;
}

/* --kv-cache-dtype q8_0 and q4_0: a layer of head dim 32 (E = 64, 2 heads, 1 K/V head, RoPE), B = 2
 * sequences of T = 20 tokens, the last 13 decoded: --check passes under the format's tolerance, and
 * the output differs from the plain run by what the format rounds (more for q4_0). */
static void test_run_decode_quant(void)
{
    enum { B = 2, T = 20, E = 64, KV = 32 };
    char weights[512], query[512], plain[512], out[512];
    test_tmp_path(weights, sizeof weights, "decode_q.safetensors");
    test_tmp_path(query, sizeof query, "decode_q.query.npy");
    test_tmp_path(plain, sizeof plain, "decode_q.plain.npy");
    test_tmp_path(out, sizeof out, "decode_q.out.npy");
    static float q_w[E * E], k_w[KV * E], v_w[KV * E], o_w[E * E], x[B * T * E];
    test_rng rng = test_rng_make(78);
    float *all[] = {q_w, k_w, v_w, o_w};
    size_t counts[] = {E * E, KV * E, KV * E, E * E};
    for (int i = 0; i < 4; i++) test_fill(&rng, all[i], counts[i], 0.2f);
    const st_tensor t[] = {
        {"q_proj.weight", q_w, 2, {E, E}},
        {"k_proj.weight", k_w, 2, {KV, E}},
        {"v_proj.weight", v_w, 2, {KV, E}},
        {"o_proj.weight", o_w, 2, {E, E}},
    };
    write_safetensors(weights, t, 4);
    test_fill(&rng, x, B * T * E, 1.7f);
    vkattn_array q = {.dtype = VKATTN_DTYPE_F32, .rank = 3, .dims = {B, T, E}, .data = x, .bytes = sizeof x};
    CHECK_STATUS(vkattn_npy_write(query, &q, NULL), VKATTN_OK);
    const char *base[] = {"--weights", weights, "--heads", "2", "--kv-heads", "1", "--rope-theta", "10000", "--query",
                          query, "--causal", "--out", plain, NULL, NULL, NULL, NULL, NULL, NULL};
    CHECK(run_cmd(cmd_run, base) == CLI_EXIT_OK);
    base[12] = out, base[13] = "--decode-from", base[14] = "7", base[15] = "--kv-cache-dtype", base[17] = "--check";
    const char *names[2] = {"q8_0", "q4_0"};
    double diff[2];
    for (int i = 0; i < 2; i++) {
        base[16] = names[i];
        CHECK(run_cmd(cmd_run, base) == CLI_EXIT_OK);
        char line[96];
        snprintf(line, sizeof line, "%s KV cache of 4 blocks of 16 tokens (%d bytes per token)", names[i],
                 i == 0 ? 2 * 34 : 2 * 18);
        CHECK_SAID(line);
        snprintf(line, sizeof line, "tolerance for a %s KV cache", names[i]);
        CHECK_SAID(line);
        CHECK_SAID("check: OK");
        diff[i] = npy_max_abs(out, plain);
        printf("  --kv-cache-dtype %s against the plain causal run: max-abs %.3g\n", names[i], diff[i]);
    }
    CHECK(diff[0] > 0 && diff[0] < diff[1] && diff[1] < 0.5);
    remove(weights), remove(query), remove(plain), remove(out);
}

/* --decode-from P on a GQA + RoPE layer, B = 2 sequences of T = 20 tokens (two cache blocks of 16
 * each): the prefill and the decode steps give the plain causal run's output (max-abs 1e-5), for
 * a prefill of 1, 7 and all 20 tokens, batched and unbatched; --check passes (also with an f16
 * cache, under the f16 tolerance). Every combination that cannot work is refused with exit 2 and a
 * message, those the options alone decide before any device opens. */
static void test_run_decode(int fp16)
{
    enum { B = 2, T = 20, E = 16 };
    char weights[512], query[512], single[512], plain[512], plain1[512], out[512], bias_kv[512];
    test_tmp_path(weights, sizeof weights, "decode.safetensors");
    test_tmp_path(query, sizeof query, "decode.query.npy");
    test_tmp_path(single, sizeof single, "decode.single.npy");
    test_tmp_path(plain, sizeof plain, "decode.plain.npy");
    test_tmp_path(plain1, sizeof plain1, "decode.plain1.npy");
    test_tmp_path(out, sizeof out, "decode.out.npy");
    snprintf(bias_kv, sizeof bias_kv, "%s/bias_kv.safetensors", fixtures);
    write_hf_gqa(weights);
    static float x[B * T * E];
    test_rng rng = test_rng_make(31);
    test_fill(&rng, x, B * T * E, 1.0f);
    vkattn_array q = {.dtype = VKATTN_DTYPE_F32, .rank = 3, .dims = {B, T, E}, .data = x, .bytes = sizeof x};
    CHECK_STATUS(vkattn_npy_write(query, &q, NULL), VKATTN_OK);
    q.rank = 2, q.dims[0] = T, q.dims[1] = E, q.bytes = sizeof x / B; /* the first sequence, (T, E) */
    CHECK_STATUS(vkattn_npy_write(single, &q, NULL), VKATTN_OK);

    CHECK(RUN_GQA(weights, query, plain, "--causal") == CLI_EXIT_OK);
    const char *froms[] = {"7", "1", "20"};
    for (size_t i = 0; i < sizeof froms / sizeof froms[0]; i++) {
        CHECK(RUN_GQA(weights, query, out, "--causal", "--decode-from", froms[i]) == CLI_EXIT_OK);
        double m = npy_max_abs(out, plain);
        printf("  --decode-from %s against the plain causal run: max-abs %.3g\n", froms[i], m);
        CHECK_MSG(m <= 1e-5, "--decode-from %s: max-abs %g against the plain causal run", froms[i], m);
    }
    CHECK_SAID("decode: 2 sequences, each 20 tokens prefilled in one forward");
    CHECK_SAID("and 0 decoded one at a time; f32 KV cache of 4 blocks of 16 tokens (64 bytes per token)");
    /* --trace: the prefill's plan, then the first step's (one token per sequence over 7 cached), once each */
    CHECK(RUN_GQA(weights, query, out, "--causal", "--decode-from", "7", "--trace") == CLI_EXIT_OK);
    CHECK_SAID("plan of the prefill (one cached forward):\nplan: fused path, B=1 L=14 S=14");
    CHECK_SAID("plan of the first decoding step (each step is planned anew as the context grows):\nplan: fused path, "
               "B=1 L=2 S=2");
    CHECK_SAID(" kv_append ");
    CHECK_SAID(" attn_paged");
    CHECK_MSG(test_count_text(captured, "plan of the") == 2, "%u plans printed", test_count_text(captured, "plan of the"));
    CHECK_MSG(npy_max_abs(out, plain) <= 1e-5, "--trace changed the decode: max-abs %g", npy_max_abs(out, plain));
    CHECK(RUN_GQA(weights, query, out, "--causal", "--decode-from", "7", "--check", "--check-finite") == CLI_EXIT_OK);
    CHECK_SAID("decode: 2 sequences, each 7 tokens prefilled in one forward");
    CHECK_SAID("and 13 decoded one at a time: ");
    CHECK_SAID(" ms per step (median; min ");
    CHECK_SAID("tolerance for f32 storage");
    CHECK_SAID("check: OK");
    CHECK_SAID("check-finite: outputs are finite");
    if (fp16) {
        CHECK(RUN_GQA(weights, query, out, "--causal", "--decode-from", "5", "--kv-cache-dtype", "f16", "--check") ==
              CLI_EXIT_OK);
        CHECK_SAID("f16 KV cache of 4 blocks");
        CHECK_SAID("tolerance for f16 storage");
        CHECK_SAID("check: OK");
        /* fp16 keys and values round: not the plain run's bits (so the comparison above reads values). */
        double m = npy_max_abs(out, plain);
        CHECK_MSG(m > 0 && m < 1e-2, "f16 cache: max-abs %g against the plain causal run", m);
    }
    CHECK(RUN_GQA(weights, single, plain1, "--causal") == CLI_EXIT_OK);
    CHECK(RUN_GQA(weights, single, out, "--causal", "--decode-from", "3", "--check") == CLI_EXIT_OK);
    CHECK_SAID("decode: 1 sequence, each 3 tokens prefilled");
    CHECK_SAID("check: OK");
    CHECK_MSG(npy_max_abs(out, plain1) <= 1e-5, "unbatched: max-abs %g", npy_max_abs(out, plain1));

    /* Refused by the options alone, before the inputs are read. */
    const struct {
        const char *extra[4];
        const char *said;
    } options[] = {
        {{"--decode-from", "4"}, "--decode-from needs --causal"},
        {{"--causal", "--decode-from", "0"}, "--decode-from 0: the prefill takes at least the first token"},
        {{"--causal", "--decode-from", "4", "--key"}, "takes no --key or --value"},
        {{"--causal", "--decode-from", "4", "--attn-mask"}, "takes no --key-padding-mask, --valid-lens or --attn-mask"},
        {{"--causal", "--decode-from", "4", "--valid-lens"}, "the only mask a decode applies is --causal"},
        {{"--causal", "--decode-from", "4", "--attn-weights"}, "--decode-from returns no --attn-weights"},
        {{"--causal", "--decode-from", "4", "--head-mask"}, "--decode-from computes every head: it takes no --head-mask"},
        {{"--causal", "--decode-from", "4", "--add-zero-attn"}, "takes no --add-zero-attn"},
        {{"--causal", "--decode-from", "4", "--cpu"}, "the CPU reference has no KV cache"},
        {{"--causal", "--kv-cache-dtype", "f16"}, "--kv-cache-dtype is what the KV cache of --decode-from stores"},
        {{"--causal", "--decode-from", "4", "--kv-cache-dtype"}, "--kv-cache-dtype needs a value"},
    };
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
        const char *extra[8] = {0};
        size_t n = 0;
        for (; n < 4 && options[i].extra[n]; n++) extra[n] = options[i].extra[n];
        /* An option that takes a file gets one that is never read. */
        if (n && strncmp(extra[n - 1], "--", 2) == 0 && strcmp(extra[n - 1], "--causal") &&
            strcmp(extra[n - 1], "--add-zero-attn") && strcmp(extra[n - 1], "--cpu") && strcmp(extra[n - 1], "--trace") &&
            strcmp(extra[n - 1], "--kv-cache-dtype"))
            extra[n++] = "/no/such/file.npy";
        int rc = run_gqa_rope(weights, query, out, extra);
        CHECK_MSG(rc == CLI_EXIT_USAGE, "case %zu: exit %d", i, rc);
        CHECK_MSG(said(options[i].said), "case %zu: the output lacks \"%s\"", i, options[i].said);
        CHECK_MSG(!said("device:") && !said("shapes:"), "case %zu: refused only after it started", i);
    }
    CHECK(RUN_GQA(weights, query, out, "--causal", "--decode-from", "4", "--path", "unfused") == CLI_EXIT_USAGE);
    CHECK_SAID("it takes no --path unfused");
    CHECK(RUN_GQA(weights, query, out, "--causal", "--decode-from", "4", "--kv-cache-dtype", "f8") == CLI_EXIT_USAGE);
    CHECK_SAID("--kv-cache-dtype takes f32, f16, q8_0 or q4_0 (what the KV cache stores), not \"f8\"");
    /* A block format needs head dims of whole blocks: this layer's are 4. */
    CHECK(RUN_GQA(weights, query, out, "--causal", "--decode-from", "4", "--kv-cache-dtype", "q4_0") == CLI_EXIT_USAGE);
    CHECK_SAID("--kv-cache-dtype q4_0 stores each head's row in blocks of 32 values: the layer's head dim is 4");
    CHECK(!said("device:"));
    /* Refused by what the inputs hold: P beyond T, a layer with bias_k/bias_v. */
    CHECK(RUN_GQA(weights, query, out, "--causal", "--decode-from", "21") == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn run: --decode-from 21 is beyond the query's 20 tokens (P is 1 to 20");
    CHECK(!said("device:"));
    CHECK(RUN(bias_kv, query, out, "--causal", "--decode-from", "2") == CLI_EXIT_USAGE);
    CHECK_SAID("the weights hold bias_k/bias_v (add_bias_kv), keys a KV cache does not hold");
    CHECK(run_cmd(cmd_run, (const char *[]){"--help", NULL}) == CLI_EXIT_OK);
    CHECK_SAID("  --decode-from P ");
    CHECK_SAID("(with --causal) run the forward as a decoder does");
    CHECK_SAID("  --kv-cache-dtype f32|f16|q8_0|q4_0\n");
    CHECK_SAID("(with --decode-from) what the KV cache stores");
    remove(weights), remove(query), remove(single), remove(plain), remove(plain1), remove(out);
}

/* --sliding-window, --softcap, --alibi and --sinks on the all_combined case of the PyTorch variant
 * fixtures (tests/fixtures/torch_variants, beside FIXTURES_DIR): the plain run and --decode-from 3
 * give PyTorch's output (max-abs 1e-5 x max(1, max|ref|)) and pass --check; bad values and
 * combinations are refused with exit 2 (options) or 1 (the sinks' file), before a device opens. */
static void test_run_variants(void)
{
    char weights[512], hidden[512], sinks[512], want[512], out[512], bad_sinks[512];
    const char *dir = "../torch_variants/all_combined";
    snprintf(weights, sizeof weights, "%s/%s.safetensors", fixtures, dir);
    snprintf(hidden, sizeof hidden, "%s/%s.hidden.npy", fixtures, dir);
    snprintf(sinks, sizeof sinks, "%s/%s.sinks.npy", fixtures, dir);
    snprintf(want, sizeof want, "%s/%s.output.npy", fixtures, dir);
    test_tmp_path(out, sizeof out, "variants.out.npy");
    test_tmp_path(bad_sinks, sizeof bad_sinks, "variants.sinks5.npy");
    const char *variants[] = {"--prefix", "model.layers.0.self_attn.", "--causal", "--sliding-window", "4",
                              "--softcap", "1.5", "--alibi", "--sinks", sinks};
    const char *extra[3][2] = {{"--check", NULL}, {"--decode-from", "3"}, {"--cpu", NULL}};
    for (int k = 0; k < 3; k++) {
        const char *args[16] = {0};
        int n = 0;
        for (size_t i = 0; i < sizeof variants / sizeof *variants; i++) args[n++] = variants[i];
        for (int i = 0; i < 2 && extra[k][i]; i++) args[n++] = extra[k][i];
        if (k == 1) args[n++] = "--check";
        CHECK(run_forward(weights, hidden, out, args) == CLI_EXIT_OK);
        CHECK_SAID("causal, window 4, softcap 1.5, alibi, sinks");
        if (k < 2) CHECK_SAID("check: OK");
        double m = npy_max_abs(out, want);
        printf("  %s against PyTorch: max-abs %.3g\n", extra[k][0], m);
        CHECK_MSG(m <= 1e-5 * 1.44, "%s: max-abs %g against PyTorch's output", extra[k][0], m);
    }
    /* Refused: bad values, ALiBi with RoPE, sinks of the wrong shape. */
    float five[5] = {0};
    vkattn_array a = {.dtype = VKATTN_DTYPE_F32, .rank = 1, .dims = {5}, .data = five, .bytes = sizeof five};
    CHECK_STATUS(vkattn_npy_write(bad_sinks, &a, NULL), VKATTN_OK);
    const struct { const char *opt, *value; int rc; const char *said; } refused[] = {
        {"--sliding-window", "0", CLI_EXIT_USAGE, "--sliding-window"},
        {"--softcap", "-1", CLI_EXIT_USAGE, "--softcap expects a positive number"},
        {"--softcap", "inf", CLI_EXIT_USAGE, "--softcap expects a positive number"},
        /* 0 as a float, which is "off" */
        {"--softcap", "1e-50", CLI_EXIT_USAGE, "--softcap expects a number of at least 1.17549e-38 (the least normal"},
        {"--rope-theta", "1e-50", CLI_EXIT_USAGE, "--rope-theta expects a number of at least 1.17549e-38"},
        {"--rope-theta", "1e39", CLI_EXIT_USAGE, "--rope-theta expects a number in (0, 3.40282e+38], got \"1e39\""},
        {"--rope-theta", "10000", CLI_EXIT_USAGE, "--alibi and --rope-theta"},
        {"--sinks", bad_sinks, CLI_EXIT_FAILURE, "has shape (5), expected (H) = (4)"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        CHECK(RUN(weights, hidden, out, "--prefix", "model.layers.0.self_attn.", "--alibi", refused[i].opt,
                  refused[i].value) == refused[i].rc);
        CHECK_MSG(said(refused[i].said), "case %zu: the output lacks \"%s\"", i, refused[i].said);
        CHECK_MSG(!said("device:"), "case %zu: refused only after a device opened", i);
    }
    CHECK(run_cmd(cmd_run, (const char *[]){"--help", NULL}) == CLI_EXIT_OK);
    const char *helped[] = {"  --sliding-window W ", "  --softcap C ", "  --alibi ", "  --sinks s.npy "};
    for (size_t i = 0; i < sizeof helped / sizeof helped[0]; i++) CHECK_SAID(helped[i]);
    remove(out), remove(bad_sinks);
}

/* A checkpoint of layer 0's `tensors` (under model.layers.0.self_attn., the model fixtures' values)
 * at `ck_path`, and a (tokens, E) query of the fixtures' input at `query`. */
typedef struct ck_leaf {
    const char *leaf;
    mf_kind kind;
    uint32_t rank, d0, d1;
} ck_leaf;

static void write_layer0(const ck_leaf *tensors, size_t n, const char *ck_path, uint32_t E, uint32_t tokens,
                         const char *query)
{
    checkpoint ck = {0};
    for (size_t i = 0; i < n; i++) {
        char name[128];
        snprintf(name, sizeof name, "model.layers.0.self_attn.%s", tensors[i].leaf);
        ck_add(&ck, name, tensors[i].kind, tensors[i].rank, tensors[i].d0, tensors[i].d1);
    }
    CHECK(ck_write(&ck, ck_path));
    ck_free(&ck);
    float *x = malloc((size_t)tokens * E * sizeof *x);
    mf_fill("input", MF_KIND_INPUT, E, x, (size_t)tokens * E);
    vkattn_array a = {.dtype = VKATTN_DTYPE_F32, .rank = 2, .dims = {tokens, E}, .data = x,
                      .bytes = (size_t)tokens * E * sizeof *x};
    CHECK_STATUS(vkattn_npy_write(query, &a, NULL), VKATTN_OK);
    free(x);
}

/* run --config: Qwen3-0.6B's real config.json and layer 0 of a BF16 checkpoint made from the
 * model fixtures' scheme (tests/fixtures/models/qwen3): every setting from the config, the weights
 * found under its prefix, the output against the float64 fixture; as a cached decode too. An
 * explicit option overrides the config and says so; a checkpoint that does not fit the config is
 * refused naming what differs. */
static void test_run_config(void)
{
    char config[512], other[512], want[512], ck_path[512], query[512], out[512];
    snprintf(config, sizeof config, "%s/../models/qwen3/config.json", fixtures);
    snprintf(other, sizeof other, "%s/../models/gemma3/config.json", fixtures);
    snprintf(want, sizeof want, "%s/../models/qwen3/start0.npy", fixtures);
    test_tmp_path(ck_path, sizeof ck_path, "qwen3.safetensors");
    test_tmp_path(query, sizeof query, "qwen3.query.npy");
    test_tmp_path(out, sizeof out, "qwen3.out.npy");
    static const ck_leaf tensors[] = {
        {"q_proj.weight", MF_KIND_WEIGHT, 2, 2048, 1024}, {"k_proj.weight", MF_KIND_WEIGHT, 2, 1024, 1024},
        {"v_proj.weight", MF_KIND_WEIGHT, 2, 1024, 1024}, {"o_proj.weight", MF_KIND_WEIGHT, 2, 1024, 2048},
        {"q_norm.weight", MF_KIND_NORM, 1, 128, 1},       {"k_norm.weight", MF_KIND_NORM, 1, 128, 1},
    };
    write_layer0(tensors, sizeof tensors / sizeof tensors[0], ck_path, 1024, 5, query);
    const char *common[] = {"--weights", ck_path, "--config", config, "--layer", "0", "--query", query, "--out", out,
                            "--causal"};
    const char *extra[3][2] = {{"--check", NULL}, {"--decode-from", "2"}, {"--cpu", NULL}};
    for (int k = 0; k < 3; k++) {
        const char *args[20] = {0};
        int n = 0;
        for (size_t i = 0; i < sizeof common / sizeof *common; i++) args[n++] = common[i];
        for (int i = 0; i < 2 && extra[k][i]; i++) args[n++] = extra[k][i];
        CHECK(run_cmd(cmd_run, args) == CLI_EXIT_OK);
        CHECK_SAID("heads 16 (head dim 128), causal, rope neox theta 1e+06 on 128 dims, q/k norms per head");
        double m = npy_max_abs(out, want);
        printf("  %s against the float64 fixture: max-abs %.3g\n", extra[k][0], m);
        CHECK_MSG(m <= 1e-5, "%s: max-abs %g against the fixture", extra[k][0], m);
    }
    /* an option overrides, with a note; a config the checkpoint does not fit is refused */
    CHECK(run_cmd(cmd_run, (const char *[]){"--weights", ck_path, "--config", config, "--query", query, "--out", out,
                                            "--causal", "--sliding-window", "3", "--cpu", NULL}) == CLI_EXIT_OK);
    CHECK_SAID("note: --sliding-window 3 overrides config.json's 0");
    CHECK_SAID("window 3");
    CHECK(run_cmd(cmd_run, (const char *[]){"--weights", ck_path, "--config", other, "--query", query, "--out", out,
                                            NULL}) == CLI_EXIT_FAILURE);
    CHECK_SAID("--weights and --config disagree on the hidden_size of layer model.layers.0.self_attn.");
    /* --heads overrides only the head count: the rest of the check still runs */
    CHECK(run_cmd(cmd_run, (const char *[]){"--weights", ck_path, "--config", other, "--heads", "16", "--query", query,
                                            "--out", out, "--cpu", NULL}) == CLI_EXIT_FAILURE);
    CHECK_SAID("--weights and --config disagree on the hidden_size of layer model.layers.0.self_attn.");
    CHECK(!said("device:"));
    /* another head count changes the head dim the weights give, not whether their norms fit */
    CHECK(run_cmd(cmd_run, (const char *[]){"--weights", ck_path, "--config", config, "--heads", "8", "--query", query,
                                            "--out", out, "--cpu", NULL}) == CLI_EXIT_FAILURE);
    CHECK_SAID("note: --heads 8 overrides config.json's 16\nvkattn run: --weights and --config disagree on the q/k "
               "norms");
    CHECK(run_cmd(cmd_run, (const char *[]){"--weights", ck_path, "--config", config, "--layer", "99", "--query", query,
                                            "--out", out, NULL}) != CLI_EXIT_OK);
    CHECK_SAID("layer 99 does not exist (28 layers)");
    CHECK(run_cmd(cmd_run, (const char *[]){"--weights", ck_path, "--layer", "1", "--query", query, "--out", out,
                                            NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("missing --config (--layer needs it) and --heads (or --config)");
    remove(ck_path), remove(query), remove(out);
}

/* overhead runs the same stack blocking and as one submission; it fails (exit 1) when the two
 * outputs differ in any bit, and refuses bad counts. */
static void test_overhead(void)
{
    CHECK(run_cmd(cmd_overhead, (const char *[]){"--layers", "3", "--rounds", "2", "--embed", "16", "--heads", "2",
                                                 NULL}) == CLI_EXIT_OK);
    CHECK_SAID("one submission of 3");
    CHECK_SAID("outputs identical: yes");
    CHECK(run_cmd(cmd_overhead, (const char *[]){"--layers", "0", NULL}) == CLI_EXIT_USAGE);
    CHECK(run_cmd(cmd_overhead, (const char *[]){"--embed", "30", "--heads", "4", "--rounds", "1", NULL}) ==
          CLI_EXIT_FAILURE);
    CHECK_SAID("vkattn overhead: --embed 30 is not divisible by --heads 4: each head takes an equal share of the "
               "width\n");
    CHECK(!said("give head_dim") && !said("device:")); /* the library's advice names no CLI option */
}

/* bench --preset decode on tiny contexts, f32 and q4_0 caches: the table, its --json file, and the
 * sweep's options refused (and the decode preset's, and q8_0, by the sweep). A separate ctest
 * (cli_bench_decode, label bench): its timing loops run hundreds of cached forwards. */
static void test_bench_decode(void)
{
    char json[128];
    test_tmp_path(json, sizeof json, "decode.json");
    CHECK(run_cmd(cmd_bench, (const char *[]){"--preset", "decode", "--len", "128,64", "--dtype", "f32,q4_0",
                                              "--min-time", "0", "--no-mqa", "--no-window", "--no-peak", "--json", json,
                                              NULL}) == CLI_EXIT_OK);
    CHECK_SAID("cache:  bytes per token (K and V, all heads): f32 1024, q4_0 144");
    CHECK_SAID("   ctx cache split steps ms/token   min ms tokens/s");
    CHECK_SAID("    64 f32   auto ");
    CHECK_SAID("   128 f32   1    ");
    CHECK_SAID("   128 q4_0  auto ");
    CHECK(!said("targets") && !said("(a) "));
    char err[256];
    cJSON *root = cli_json_read_file(json, err, sizeof err);
    CHECK_MSG(root != NULL, "%s", err);
    cJSON *points = cJSON_GetObjectItemCaseSensitive(root, "points");
    CHECK(cJSON_GetArraySize(points) == 8);
    int ok = 0;
    CHECK(cli_json_number(cJSON_GetArrayItem(points, 0), "ctx", &ok) == 64 && ok);
    CHECK(cli_json_number(cJSON_GetArrayItem(points, 4), "cache_bytes_per_token", &ok) == 144 && ok);
    CHECK(cli_json_number(cJSON_GetArrayItem(points, 4), "cache_bytes_per_step", &ok) == 2 * 64 * 2 * 36 && ok);
    CHECK(cli_json_number(cJSON_GetArrayItem(points, 0), "ms_per_token_median", &ok) > 0 && ok);
    CHECK(cli_json_number(cJSON_GetArrayItem(points, 0), "reproject_ms", &ok) > 0 && ok);
    CHECK(cli_json_number(cJSON_GetObjectItemCaseSensitive(root, "layer"), "window", &ok) == 0 && ok);
    CHECK(cJSON_GetObjectItemCaseSensitive(root, "targets") == NULL);
    cJSON_Delete(root);
    remove(json);

    /* --trace: each point's decoding step's plan (both split settings), before its timing row */
    CHECK(run_cmd(cmd_bench, (const char *[]){"--preset", "decode", "--len", "64", "--dtype", "q4_0", "--min-time", "0",
                                              "--no-mqa", "--no-window", "--no-peak", "--trace", NULL}) == CLI_EXIT_OK);
    CHECK_SAID("-- decoding step at context 64, q4_0 cache, kv_splits auto:\nplan: fused path, B=1 L=1 S=1");
    CHECK_SAID("-- decoding step at context 64, q4_0 cache, kv_splits 1:\nplan: ");
    CHECK_SAID(" attn_paged_quant");
    CHECK_MSG(test_count_text(captured, "-- decoding step at") == 2, "%u plans",
              test_count_text(captured, "-- decoding step at"));
    /* then each point's steps, each one's fastest time: the attention's parts and their merge apart */
    CHECK_SAID("  step times (ms, fastest of 3 forwards; context 64, q4_0 cache, kv_splits auto): 1 matmul ");
    CHECK_SAID("  step times (ms, fastest of 3 forwards; context 64, q4_0 cache, kv_splits 1): 1 matmul ");
    CHECK_SAID(", 4 attn_paged_quant ");
    CHECK_MSG(test_count_text(captured, "  step times (ms") == 2, "%u step-time lines",
              test_count_text(captured, "  step times (ms"));
    CHECK_SAID("    64 q4_0  auto ");

    CHECK(run_cmd(cmd_bench, (const char *[]){"--preset", "decode", "--path", "fused", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn bench: --preset decode takes no --path");
    CHECK(run_cmd(cmd_bench, (const char *[]){"--preset", "decode", "--embed", "64,128", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("vkattn bench: --preset decode takes no --embed with more than one value");
    CHECK(run_cmd(cmd_bench, (const char *[]){"--preset", "decode", "--len", "1", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("contexts (--len) must be at least 2");
    CHECK(run_cmd(cmd_bench, (const char *[]){"--preset", "quick", "--no-mqa", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("--no-mqa is an option of --preset decode");
    CHECK(run_cmd(cmd_bench, (const char *[]){"--preset", "quick", "--no-window", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("--no-window is an option of --preset decode");
    CHECK(run_cmd(cmd_bench, (const char *[]){"--preset", "quick", "--window", "64", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("--window is an option of --preset decode");
    CHECK(run_cmd(cmd_bench, (const char *[]){"--preset", "quick", "--dtype", "q8_0", NULL}) == CLI_EXIT_USAGE);
    CHECK_SAID("--dtype q8_0 is a KV cache format");
    CHECK(run_cmd(cmd_bench, (const char *[]){"--help", NULL}) == CLI_EXIT_OK);
    const char *options[] = {"--preset NAME", "--len L,..", "--kv-heads N", "--window W", "--no-mqa", "--no-window",
                             "--plot FILE.png|FILE.svg", "--compare OLD.json NEW.json", "  decode "};
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) CHECK_SAID(options[i]);
}

/* The decode benchmark's runs whose timings bench_decode_scaling judges (by hand). The ctest
 * cli_bench_decode_kernels runs them untimed (--min-time 0) and checks what their JSON says exactly
 * (bytes per token and per step). */
enum { RUN_CONTEXTS, RUN_WINDOW, RUN_FEATURES, RUN_STACK, SCALING_RUNS };
static const struct scaling_run {
    const char *lens, *extra[6];
} k_scaling_runs[SCALING_RUNS] = {
    [RUN_CONTEXTS] = {"1024,2048,3072,4096", {NULL}},
    [RUN_WINDOW] = {"256,4096", {"--window", "256", "--dtype", "f32", NULL}},
    [RUN_FEATURES] = {"512,2048,4096", {"--dtype", "f32", "--features", NULL}},
    [RUN_STACK] = {"64,512", {"--dtype", "f16", "--stack", "4", NULL}},
};
static const struct { const char *dtype; double bytes; } k_formats[] = {{"f32", 1024}, {"f16", 512}, {"q8_0", 272},
                                                                        {"q4_0", 144}};
static const double k_contexts[] = {1024, 2048, 3072, 4096};
enum { FORMATS = sizeof k_formats / sizeof k_formats[0] };

/* bench --preset decode --json with --min-time `min_time` on k_scaling_runs[run], parsed; NULL
 * after a failed check. */
static cJSON *decode_run(const char *min_time, int run)
{
    char json[128], err[256];
    const char *const *extra = k_scaling_runs[run].extra;
    test_tmp_path(json, sizeof json, "scaling.json");
    const char *args[24] = {"--preset", "decode", "--len", k_scaling_runs[run].lens, "--min-time", min_time,
                            "--no-peak", "--json", json};
    int n = 9;
    while (*extra && n < 23) args[n++] = *extra++;
    args[n] = NULL;
    CHECK(run_cmd(cmd_bench, args) == CLI_EXIT_OK);
    cJSON *root = cli_json_read_file(json, err, sizeof err);
    CHECK_MSG(root != NULL, "%s", err);
    remove(json);
    return root;
}

/* The point of `dtype` at `ctx` with kv_splits `splits`, or NULL. */
static const cJSON *decode_point(const cJSON *root, const char *dtype, double ctx, double splits)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(root, "points")) {
        const char *d = cli_json_string(p, "cache_dtype");
        if (d && strcmp(d, dtype) == 0 && cli_json_number(p, "ctx", NULL) == ctx &&
            cli_json_number(p, "kv_splits", NULL) == splits)
            return p;
    }
    return NULL;
}

/* Least squares of `y` against `x`: the slope, and R^2 (the share of y's variance the line explains). */
static double fit_r2(const double *x, const double *y, size_t n, double *slope)
{
    double mx = 0, my = 0, sxx = 0, sxy = 0, syy = 0, res = 0;
    for (size_t i = 0; i < n; i++) mx += x[i] / n, my += y[i] / n;
    for (size_t i = 0; i < n; i++)
        sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my), syy += (y[i] - my) * (y[i] - my);
    *slope = sxy / sxx;
    for (size_t i = 0; i < n; i++) res += pow(y[i] - my - *slope * (x[i] - mx), 2);
    return syy > 0 ? 1 - res / syy : 0;
}

/* The scaling runs untimed (ctest cli_bench_decode_kernels, beside other tests; see k_scaling_runs):
 * what their JSON must hold whatever the timings. Bytes per token of each cache format, exactly,
 * and the bytes a step reads: ctx of them, or the window's; a features point per context; a stack
 * point per context with its steps. */
static void test_bench_decode_kernels(void)
{
    cJSON *root = decode_run("0", RUN_CONTEXTS);
    for (size_t f = 0; root && f < FORMATS; f++)
        for (size_t c = 0; c < 4; c++) {
            const cJSON *p = decode_point(root, k_formats[f].dtype, k_contexts[c], 1);
            CHECK_MSG(p || strcmp(k_formats[f].dtype, "f16") == 0, "no %s point at ctx %g", k_formats[f].dtype,
                      k_contexts[c]);
            if (!p) continue; /* f16 on a device without 16-bit storage */
            CHECK(cli_json_number(p, "cache_bytes_per_token", NULL) == k_formats[f].bytes);
            CHECK(cli_json_number(p, "cache_bytes_per_step", NULL) == k_formats[f].bytes * k_contexts[c]);
        }
    cJSON_Delete(root);
    root = decode_run("0", RUN_WINDOW);
    const cJSON *near = decode_point(root, "f32", 256, 1), *far = decode_point(root, "f32", 4096, 1);
    CHECK(near && far && cli_json_number(cJSON_GetObjectItemCaseSensitive(root, "layer"), "window", NULL) == 256);
    CHECK(near && cli_json_number(near, "cache_bytes_per_step", NULL) == 256 * 1024.0);
    CHECK(far && cli_json_number(far, "cache_bytes_per_step", NULL) == 256 * 1024.0); /* the window's keys only */
    cJSON_Delete(root);
    const struct { int run; const char *list; int points; } lists[] = {{RUN_FEATURES, "features", 3},
                                                                      {RUN_STACK, "stack", 2}};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        root = decode_run("0", lists[i].run);
        const cJSON *list = root ? cJSON_GetObjectItemCaseSensitive(root, lists[i].list) : NULL, *p;
        int n = 0;
        cJSON_ArrayForEach(p, list) {
            CHECK_MSG(cli_json_number(p, "ctx", NULL) > 0, "a %s point without its context", lists[i].list);
            n++;
        }
        CHECK_MSG(n == lists[i].points, "%d %s points, %d expected", n, lists[i].list, lists[i].points);
        cJSON_Delete(root);
    }
}

/* What the decode targets of the KV-cache issue guarded, over bench --preset decode --json on small
 * contexts (test_cli_run FIXTURES bench_decode_scaling, by hand on a quiet machine; the layer E = 512,
 * H = 8, H_kv = 2, D = 64; what the JSON must say exactly is bench_decode_kernels'):
 *  - time per token grows linearly with the context: unsplit (kv_splits 1, where the attention visits
 *    every key in one part), least squares over 1024..4096 keys with R^2 >= 0.8 and a positive slope
 *    (the better of two runs where the first falls short);
 *  - a sliding window's step costs what it costs at a context of the window: the attention stage at
 *    4096 keys over W = 256 within 2x of it at 256 keys (measured 0.9-1.2x). Without a window the same
 *    growth is ~16x; as a control, 4x the keys without a window must cost >= 2x (measured 3.6-4x).
 * Each figure is a point's fastest step (of 50-150 over >= 0.2 s): load on a shared machine only adds
 * time, so the fastest step is the least disturbed. Under deliberate load (a GPU test running beside
 * it) the fastest steps' R^2 stayed >= 0.89 (quiet: 0.98-0.999) where the medians' fell to 0.16; the
 * better of the two fits is judged (one disturbed fastest step spoiled one: 0.856). 0.8 still fails
 * a time that stopped growing with the context (R^2 near 0, or a slope <= 0). (Split-KV's
 * time is not judged: its part count changes with the context, so its curve is piecewise.) */
static void test_bench_decode_scaling(void)
{
    const double min_r2 = 0.8;
    double best_r2[FORMATS] = {0}, best_slope[FORMATS] = {0};
    int present[FORMATS] = {0};
    cJSON *root = NULL;
    /* a second run where a fit fell short: a machine shared with other VMs disturbed one run's
     * f16 points alone (fastest 3.38 3.23 4.32 7.12 ms, R^2 0.775, medians 0.712; a CI run,
     * 2026-11-28, the test alone on the machine); each format's better run is judged, so a time
     * that stopped growing still fails both */
    for (int run = 0, all_fit = 0; run < 2 && !all_fit; run++) {
        if (run) printf("a fit below R^2 %.1f: the contexts measured once more\n", min_r2);
        cJSON_Delete(root);
        root = decode_run("0.2", RUN_CONTEXTS);
        all_fit = 1;
        for (size_t f = 0; root && f < FORMATS; f++) {
            double ms[4], med[4], slope = 0, med_slope = 0;
            present[f] = 1;
            for (size_t c = 0; c < 4; c++) {
                const cJSON *p = decode_point(root, k_formats[f].dtype, k_contexts[c], 1);
                present[f] &= p != NULL;
                CHECK_MSG(p || strcmp(k_formats[f].dtype, "f16") == 0, "no %s point at ctx %g", k_formats[f].dtype,
                          k_contexts[c]);
                if (!p) continue;
                ms[c] = cli_json_number(p, "ms_per_token_min", NULL);
                med[c] = cli_json_number(p, "ms_per_token_median", NULL);
            }
            if (!present[f]) continue; /* f16 on a device without 16-bit storage */
            /* the better fit of the fastest steps' and the medians': a time that stopped growing
             * with the context fits neither, where one disturbed point spoils one (a CI run,
             * 2026-11-26: q4_0's fastest steps 2.33 3.18 5.67 5.49 ms, R^2 0.856) */
            double r2 = fit_r2(k_contexts, ms, 4, &slope), med_r2 = fit_r2(k_contexts, med, 4, &med_slope);
            printf("%s cache, kv_splits 1: fastest ms/token %.3f %.3f %.3f %.3f: %.3f ms per 1k keys, R^2 %.3f; "
                   "medians R^2 %.3f\n", k_formats[f].dtype, ms[0], ms[1], ms[2], ms[3], slope * 1e3, r2, med_r2);
            if (med_r2 > r2) r2 = med_r2, slope = med_slope;
            if (r2 > best_r2[f]) best_r2[f] = r2, best_slope[f] = slope;
            all_fit &= best_r2[f] >= min_r2 && best_slope[f] > 0;
        }
    }
    for (size_t f = 0; root && f < FORMATS; f++)
        if (present[f])
            CHECK_MSG(best_r2[f] >= min_r2 && best_slope[f] > 0,
                      "%s: ms/token is not linear in the context (R^2 %.3f, slope %.3g)", k_formats[f].dtype,
                      best_r2[f], best_slope[f]);
    const cJSON *near = decode_point(root, "f32", 1024, 1), *far = decode_point(root, "f32", 4096, 1);
    double growth = near && far ? cli_json_number(far, "attention_ms_min", NULL) /
                                      cli_json_number(near, "attention_ms_min", NULL)
                                : 0;
    printf("f32, no window: attention at 4096 keys / at 1024: %.2fx\n", growth);
    CHECK_MSG(growth >= 2, "the control: 4x the keys without a window cost %.2fx the attention", growth);
    cJSON_Delete(root);

    root = decode_run("0.2", RUN_WINDOW);
    near = decode_point(root, "f32", 256, 1), far = decode_point(root, "f32", 4096, 1);
    CHECK(near && far);
    if (near && far) {
        double ratio = cli_json_number(far, "attention_ms_min", NULL) / cli_json_number(near, "attention_ms_min", NULL);
        printf("window 256: attention at 4096 keys / at 256: %.2fx\n", ratio);
        CHECK_MSG(ratio <= 2, "a window of 256 costs %.2fx more at 4096 keys than at 256", ratio);
    }
    cJSON_Delete(root);
}

/* bench --preset decode --features: a decode step with per-head q/k norms and llama3 RoPE scaling
 * costs at most 5% more than the same step without (issue 20's bound), the steps of the two layers
 * alternating at each context. A real cost moves the whole distribution, so each context's figure
 * is the lesser of two ratios, the fastest steps' and the medians'; noise moves one of them alone
 * (a CI run, 2026-11-26: fastest 1.056 1.067 0.981 where the medians gave 0.984 0.966 1.006). The
 * median over the contexts is checked. */
static void test_bench_decode_features(void)
{
    cJSON *root = decode_run("0.2", RUN_FEATURES);
    const cJSON *list = root ? cJSON_GetObjectItemCaseSensitive(root, "features") : NULL, *p;
    double ratios[3];
    int n = 0;
    cJSON_ArrayForEach(p, list) if (n < 3) {
        double fastest = cli_json_number(p, "ratio", NULL);
        double medians = cli_json_number(p, "featured_ms_median", NULL) / cli_json_number(p, "plain_ms_median", NULL);
        printf("features at %.0f keys: fastest steps' ratio %.3f, medians' %.3f\n", cli_json_number(p, "ctx", NULL),
               fastest, medians);
        ratios[n++] = fastest < medians ? fastest : medians;
    }
    CHECK_MSG(n == 3, "%d features points", n);
    if (n == 3) {
        double lo = ratios[0] < ratios[1] ? ratios[0] : ratios[1], hi = ratios[0] < ratios[1] ? ratios[1] : ratios[0];
        double median = ratios[2] < lo ? lo : ratios[2] > hi ? hi : ratios[2];
        printf("features: step with norms and llama3 RoPE / without: %.3f %.3f %.3f, median %.3f\n", ratios[0],
               ratios[1], ratios[2], median);
        CHECK_MSG(median <= 1.05, "q/k norms and scaled RoPE cost %.1f%% more per decode step", 100 * (median - 1));
    }
    cJSON_Delete(root);
}

/* bench --preset decode --stack: a decode step of a 4-layer stack as one submission per token
 * against a blocking cached forward per layer. Each layer's submit and wait is what the submission
 * saves, so its fastest step must not be slower than the blocking one's (10% for noise); the
 * issue's target, 1.3x for 8 layers, is a benchmark (docs/PERFORMANCE.md), not asserted here. */
static void test_bench_decode_stack(void)
{
    cJSON *root = decode_run("0.2", RUN_STACK);
    const cJSON *list = root ? cJSON_GetObjectItemCaseSensitive(root, "stack") : NULL, *p;
    int n = 0;
    cJSON_ArrayForEach(p, list) {
        double steps = cli_json_number(p, "steps", NULL), sub = cli_json_number(p, "submitted_ms_min", NULL);
        double blk = cli_json_number(p, "blocking_ms_min", NULL), ratio = cli_json_number(p, "ratio", NULL);
        printf("stack of 4 at %.0f keys: %.0f steps, fastest %.3f ms submitted, %.3f ms blocking, ratio %.3f\n",
               cli_json_number(p, "ctx", NULL), steps, sub, blk, ratio);
        CHECK(steps >= 3 && sub > 0 && blk > 0);
        CHECK_MSG(ratio >= 1 / 1.1, "one submission per token is %.1f%% slower than blocking forwards",
                  100 * (1 / ratio - 1));
        n++;
    }
    CHECK_MSG(n == 2, "%d stack points", n);
    cJSON_Delete(root);
}

/* A context near 2^32 tokens: its block count used to wrap to a tiny pool, reported as a full
 * cache (issue 18). Now the cache's own check names the device limit, before anything runs. */
static void test_bench_decode_limits(void)
{
    CHECK(run_cmd(cmd_bench, (const char *[]){"--preset", "decode", "--len", "4294967295", "--dtype", "f32",
                                              "--no-mqa", "--no-window", "--no-peak", NULL}) == CLI_EXIT_FAILURE);
    CHECK_SAID("VKATTN_ERROR_DEVICE_LIMIT");
    CHECK_MSG(!said("CACHE_FULL") && !said("is full"), "a full cache was reported");
}

/* run --config of gpt-oss-20b, whose head dim (64) is not E / H (2880 / 64 = 45): a decode through a
 * q8_0 cache, whose blocks of 32 values hold the config's head dim, runs and passes --check (the
 * CLI's own check once took E / H and refused it, found by an outside review). */
static void test_run_config_head_dim(void)
{
    char config[512], ck_path[512], query[512], out[512];
    snprintf(config, sizeof config, "%s/../models/gpt_oss/config.json", fixtures);
    test_tmp_path(ck_path, sizeof ck_path, "gpt_oss.safetensors");
    test_tmp_path(query, sizeof query, "gpt_oss.query.npy");
    test_tmp_path(out, sizeof out, "gpt_oss.out.npy");
    static const ck_leaf tensors[] = {
        {"q_proj.weight", MF_KIND_WEIGHT, 2, 4096, 2880}, {"k_proj.weight", MF_KIND_WEIGHT, 2, 512, 2880},
        {"v_proj.weight", MF_KIND_WEIGHT, 2, 512, 2880},  {"o_proj.weight", MF_KIND_WEIGHT, 2, 2880, 4096},
        {"q_proj.bias", MF_KIND_BIAS, 1, 4096, 1},        {"k_proj.bias", MF_KIND_BIAS, 1, 512, 1},
        {"v_proj.bias", MF_KIND_BIAS, 1, 512, 1},         {"o_proj.bias", MF_KIND_BIAS, 1, 2880, 1},
        {"sinks", MF_KIND_SINKS, 1, 64, 1},
    };
    write_layer0(tensors, sizeof tensors / sizeof tensors[0], ck_path, 2880, 4, query);
    CHECK(run_cmd(cmd_run, (const char *[]){"--weights", ck_path, "--config", config, "--query", query, "--out", out,
                                            "--causal", "--decode-from", "2", "--kv-cache-dtype", "q8_0", "--check",
                                            NULL}) == CLI_EXIT_OK);
    CHECK_SAID("heads 64 (head dim 64)");
    CHECK(!said("head dim is 45"));
    remove(ck_path), remove(query), remove(out);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_cli_run FIXTURES_DIR [bench_decode|bench_decode_kernels|bench_decode_scaling] "
                        "(tests/fixtures/torch)\n");
        return 2;
    }
    fixtures = argv[1];
    gpu_test_pin_drivers();
    if (test_tmp_make("cli_run")) return 1;
    if (argc > 2 && strcmp(argv[2], "bench_decode") == 0) {
        RUN_TEST(test_bench_decode);
        test_tmp_remove();
        return test_finish();
    }
    if (argc > 2 && strcmp(argv[2], "bench_decode_kernels") == 0) {
        RUN_TEST(test_bench_decode_kernels);
        test_tmp_remove();
        return test_finish();
    }
    if (argc > 2 && strcmp(argv[2], "bench_decode_scaling") == 0) {
        RUN_TEST(test_bench_decode_scaling);
        RUN_TEST(test_bench_decode_features);
        RUN_TEST(test_bench_decode_stack);
        test_tmp_remove();
        return test_finish();
    }
    RUN_TEST(test_tolerance);
    RUN_TEST(test_formatting);
    RUN_TEST(test_option_table);
    RUN_TEST(test_nearest);
    RUN_TEST(test_option_typos);
    RUN_TEST(test_missing_options);
    fixture fx = {0};
    if (fixture_open(&fx)) {
        int fp16 = device_has_fp16_storage();
        printf("device fp16 storage: %s\n",
               fp16 ? "yes" : "no (f16 falls back to f32; the overflow cases are skipped)");
        RUN_TEST_WITH(test_run_check, &fx, fp16);
        RUN_TEST_WITH(test_run_trace, &fx);
        if (fp16) RUN_TEST_WITH(test_run_fp16_overflow, &fx);
        RUN_TEST_WITH(test_run_nan_query, &fx);
        RUN_TEST_WITH(test_run_bad_weights, &fx, fp16);
        RUN_TEST_WITH(test_demo, fp16);
        RUN_TEST_WITH(test_input_dtypes, &fx);
        RUN_TEST_WITH(test_input_kinds, &fx);
        RUN_TEST_WITH(test_outputs_checked_first, &fx);
        RUN_TEST_WITH(test_option_conflicts, &fx);
        RUN_TEST_WITH(test_wrong_files, &fx);
        RUN_TEST_WITH(test_binary_commands, &fx);
        RUN_TEST(test_device_choice);
        RUN_TEST(test_overhead);
        RUN_TEST_WITH(test_run_hf_gqa, &fx);
        RUN_TEST_WITH(test_run_sharded, &fx);
        RUN_TEST_WITH(test_run_finite_head_widths, &fx);
        RUN_TEST_WITH(test_run_decode, fp16);
        RUN_TEST(test_run_decode_quant);
        RUN_TEST(test_run_variants);
        RUN_TEST(test_run_config);
        RUN_TEST(test_run_config_head_dim);
        RUN_TEST(test_bench_decode_limits);
    }
    fixture_close(&fx);
    test_tmp_remove();
    return test_finish();
}
