/* Shared helpers of the vkattn command-line tool. The tool uses the public API only. */
#ifndef VKATTN_CLI_H
#define VKATTN_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "compare.h"
#include "vkattn.h"

/* The process exit codes of every subcommand. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAILURE = 1,    /* an error, with a message: a bad file, a refused input, a Vulkan failure */
    CLI_EXIT_USAGE = 2,      /* a bad or missing option */
    CLI_EXIT_NON_FINITE = 3, /* run --check-finite: an output holds NaN or inf */
    CLI_EXIT_MISMATCH = 4    /* run --check, demo: ran, but the result disagrees with the CPU reference
                                path beyond the tolerance (wins over 3 when both apply) */
};

/* The exit statuses every command's --help states, as lines (run and demo add 3 and 4 after them). */
#define CLI_EXIT_HELP                                                                                  \
    "exit status: 0 ok; 1 error, with a message on stderr (a file that cannot be read or written, or\n"  \
    "holds the wrong kind, dtype or shape; no such device; a Vulkan failure); 2 bad or missing options.\n"

/* Each subcommand: returns the process exit code (CLI_EXIT_*). */
int cmd_info(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_peak(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_overhead(int argc, char **argv);
int cmd_heads(int argc, char **argv);
int cmd_heatmap(int argc, char **argv);

/* The name in `names` nearest to `word` that is close enough to be a typo of it (Damerau-Levenshtein
 * distance 1 for names of up to 3 letters, else up to 2; the first such name on a tie), or NULL. */
const char *cli_nearest(const char *word, const char *const *names, size_t count);

/* Options: each command declares them once, in tables of cli_option rows that drive both parsing
 * and --help. A row stores its value into a field of the struct its group names:
 *
 *   static const cli_option k_rows[] = {
 *       {"--out", "FILE", "where the output goes", CLI_TEXT, offsetof(my_options, out), .flags = CLI_REQUIRED},
 *   };
 *   my_options o = {.repeats = 5};                       // defaults, shown by --help
 *   cli_command c = {"mine", .groups = {{NULL, k_rows, CLI_COUNT(k_rows), &o}}};
 *   int rc = cli_parse(&c, argc, argv);                  // 0; -1: --help printed; 2: a message printed
 */
typedef enum cli_kind {
    CLI_FLAG,   /* no value; int = 1 */
    CLI_TEXT,   /* const char *: the value as given */
    CLI_U32,    /* uint32_t: a decimal integer >= min */
    CLI_NUMBER, /* double: a finite number in [min, max] (max 0: no upper bound), above min with CLI_ABOVE_MIN */
    CLI_CHOICE, /* int (an enum): one of the names in `value`, "auto|fused|unfused" */
    CLI_LIST    /* cli_list: comma-separated integers >= 1, or names of `value` when it holds a '|' */
} cli_kind;

enum {
    CLI_REQUIRED = 1, /* missing, it is named in "vkattn run: missing --weights, --query and --out" */
    CLI_ABOVE_MIN = 2,
    CLI_FLOAT = 4 /* CLI_NUMBER: the value ends up in a float; below FLT_MIN (but above 0) is refused */
};

#define CLI_COUNT(a) (sizeof(a) / sizeof((a)[0]))
/* A row's `given`: the int field set to 1 when the option appears (0: none). */
#define CLI_GIVEN(type, field) (offsetof(type, field) + 1)

typedef struct cli_option {
    const char *name;   /* "--out" */
    const char *value;  /* the value's name in --help ("FILE"; a choice's names); NULL for a flag */
    const char *help;   /* --help's text; "(default X)" is added from the field's value before parsing */
    cli_kind kind;
    size_t offset;      /* of the field in the group's struct */
    double min, max;    /* CLI_U32: min; CLI_NUMBER: the range */
    const int *values;  /* choices: the value of each name, in order; NULL: 0, 1, 2, ... */
    unsigned flags;     /* CLI_REQUIRED, CLI_ABOVE_MIN, CLI_FLOAT */
    const char *needs;  /* an option this one needs: missing, "--key (--value needs it)" */
    const char *or_else; /* CLI_REQUIRED unless this option is given: missing, "--heads (or --config)" */
    size_t given;       /* CLI_GIVEN(type, field), or 0 */
    const char *what;   /* choices: what the value is, in the message that refuses one */
    const char *excludes; /* an option this one cannot be given with: "--device and --cpu exclude each other" */
} cli_option;

#define CLI_LIST_MAX 16
typedef struct cli_list {
    uint32_t n, v[CLI_LIST_MAX];
} cli_list;

typedef struct cli_group {
    const char *title;         /* its heading in --help; NULL: none */
    const cli_option *options;
    size_t count;
    void *fields;              /* the struct the rows' offsets are into */
} cli_group;

#define CLI_MAX_GROUPS 4
#define CLI_MAX_OPTIONS 64

typedef struct cli_command {
    const char *name;          /* "run" */
    const char *synopsis;      /* after "usage: vkattn run "; NULL: the required options, then [options] */
    const char *notes;         /* --help's text after the options; NULL: none */
    cli_group groups[CLI_MAX_GROUPS];
    const char *unless;        /* an option that, given, takes the place of groups[0]: its options are then
                                  neither required nor checked for what they need */
    unsigned char given[CLI_MAX_OPTIONS]; /* set by cli_parse: which rows appeared, in table order */
} cli_command;

/* Scans `argv`: "--name value" and "--flag". Returns 0; or -1 after printing --help on stdout; or 2
 * after a message on stderr: an unknown option (with the nearest name: "did you mean "--len"?"), a
 * missing or bad value, or missing required options, all named at once (and the usage follows). */
int cli_parse(cli_command *c, int argc, char **argv);
/* The first option of group `group` that appeared, or NULL. */
const char *cli_group_given(const cli_command *c, size_t group);

/* Prints "vkattn <command>: " and the formatted message (ending in its own newline) to stderr, after
 * flushing stdout so that the two keep their order in one file. */
void cli_error(const char *command, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* 0 when `heads` divide `embed` (the library's own refusal asks for a head_dim, which the CLI has no
 * option for), else prints "vkattn demo: --embed 30 is not divisible by --heads 4: ..." (`width`
 * names the width) and returns 1. */
int cli_check_head_split(const char *command, const char *width, uint32_t embed, uint32_t heads);
/* Prints "vkattn <command>: <what>: STATUS_NAME: message" to stderr and returns 1. */
int cli_fail(const char *command, const char *what, vkattn_status status, const char *message);

/* What a file holds, judged from its first bytes, to explain a file that a reader refused. */
typedef enum cli_file_kind {
    CLI_FILE_UNREADABLE,  /* cannot be opened or read */
    CLI_FILE_DIRECTORY,
    CLI_FILE_EMPTY,
    CLI_FILE_NPY,         /* "\x93NUMPY" */
    CLI_FILE_SAFETENSORS, /* an 8-byte little-endian header length, then '{' */
    CLI_FILE_ZIP,         /* what np.savez and torch.save write */
    CLI_FILE_TEXT,        /* printable ASCII text (tabs and line ends too): np.savetxt, CSV, JSON */
    CLI_FILE_OTHER
} cli_file_kind;

/* After a reader refused `path`, given as `option` (`want`: CLI_FILE_NPY for vkattn_npy_read,
 * CLI_FILE_SAFETENSORS for vkattn_weight_file_load): when the file is of another kind, prints what
 * it is and what the option takes ("vkattn run: --weights q.npy is a .npy array, not a safetensors
 * file: --weights takes ..."); otherwise (and for unrecognised bytes where a safetensors file is
 * wanted, for a folder or .json given as safetensors, and for a pipe, which cannot be read twice)
 * the reader's own message, as cli_fail does. Returns 1. */
int cli_fail_input(const char *command, const char *option, const char *path, cli_file_kind want,
                   vkattn_status status, const char *message);

/* The dtype a .npy file stores, as numpy names it with its descr: "int64 (<i8)". Returns 1 and sets
 * *loads_as to the vkattn_dtype vkattn_npy_read loads it as (-1 for a dtype it refuses), or returns 0
 * when the file has no readable .npy header or is not a regular file (a pipe the reader used up).
 * vkattn_npy_read converts float16/float64 to F32 and int64 to I32, so only the file can say what
 * it held. */
int cli_npy_stored_dtype(const char *path, char *buf, size_t size, int *loads_as);

/* Checks, before any work, that output `path` (given as `option`; NULL: none asked for) can be
 * written, leaving an existing file as it is and removing one the check had to create. 0, or prints
 * "vkattn run: --out /no/dir/o.npy: cannot write this file (No such file or directory)" and returns 1. */
int cli_check_output(const char *command, const char *option, const char *path);

/* Checks, before any work, that no two of the `n` outputs `paths` (given as `options`; NULL: not
 * asked for) are one file (the same text, or two names of an existing file). 0, or prints "vkattn
 * run: --out and --attn-weights are both o.npy: ..." and returns 2. */
int cli_check_distinct_outputs(const char *command, const char *const *options, const char *const *paths, size_t n);

/* Opens a context on the requested device (NULL = VKATTN_DEVICE or the default) and prints which
 * device it is, on stdout. Returns 0 or an exit code. */
int cli_open_context(const char *command, const char *device, vkattn_context **out);
/* "discrete GPU", "CPU (software rasterizer)", ...; with `json`, "discrete_gpu", "cpu", ... */
const char *cli_device_type_name(vkattn_device_type type, int json);
/* "llvmpipe (LLVM 15.0.6, 256 bits) [cpu, Vulkan 1.3.230, llvmpipe Mesa 22.3.6]" */
void cli_describe_device(const vkattn_device_info *info, char *buf, size_t size);

/* --dtype of run and demo, the layer's storage: a CLI_CHOICE row into a vkattn_dtype field. */
#define CLI_STORAGE_OPTION(type, field)                                                                    \
    {"--dtype", "f32|f16", "the layer's storage: f16 keeps weights and activations in fp16 with fp32 "         \
     "accumulation (a device without 16-bit storage keeps f32, and says so)", CLI_CHOICE, offsetof(type, field), \
     .values = cli_storage_values, .what = "the layer's storage dtype"}
extern const int cli_storage_values[2];
/* --device of every command that opens a context. */
#define CLI_DEVICE_HELP "the device by index or name substring (default: VKATTN_DEVICE, else the default)"
#define CLI_DEVICE_OPTION(type, field) {"--device", "N|NAME", CLI_DEVICE_HELP, CLI_TEXT, offsetof(type, field)}
_Static_assert(sizeof(vkattn_dtype) == sizeof(int), "choices store enums as int");

/* --trace: prints the plan `layer` (made in `ctx`) would run for `f` (vkattn_forward_explain), or
 * says the CPU reference runs when `layer` is NULL. 0, or 1 after printing why it could not. */
int cli_print_plan(const char *command, vkattn_context *ctx, vkattn_layer *layer,
                   const vkattn_host_forward_desc *f);
/* The same for forward `f` on device tensors (vkattn_forward_explain_tensors). */
int cli_print_tensor_plan(const char *command, vkattn_context *ctx, vkattn_layer *layer, const vkattn_forward_desc *f);
/* The same for cached forward `f` on `cache` (vkattn_forward_cached_explain), under `heading`. */
int cli_print_cached_plan(const char *command, vkattn_context *ctx, vkattn_layer *layer, vkattn_kv_cache *cache,
                          const vkattn_cached_forward_desc *f, const char *heading);
/* The storage a layer really has (vkattn_layer_get_desc); prints a note when `asked` was F16 and
 * the device fell back to F32. */
vkattn_dtype cli_layer_storage(const char *command, const vkattn_layer *layer, vkattn_dtype asked);

/* "(2, 5, 64)": a shape (or any uint32 tuple). */
void cli_format_shape(char *buf, size_t size, uint32_t rank, const uint32_t *dims);
/* "(0, 3, 17)": flat index `flat` of a row-major tensor of `rank` dims, as a tuple. */
void cli_format_index(char *buf, size_t size, uint32_t rank, const uint32_t *dims, size_t flat);

/* Compares `n` values of a tensor of shape (rank, dims) (compare.h) and prints
 * "check <what> vs CPU path: max-abs A at (i, j), NMSE N (tolerance ...): OK" (or MISMATCH, with
 * the first differing non-finite value). Returns 1 when within the tolerance, else 0. */
int cli_check_report(const char *what, const float *got, const float *want, uint32_t rank, const uint32_t *dims,
                     const compare_tolerance *t);

/* --check-finite: the NaN, +inf and -inf values of a float array and the flat index of the first
 * one counted. With neg_inf_ok (float attention masks, where -inf means "masked"), -inf is not
 * counted. */
typedef struct cli_nonfinite {
    size_t nan, pos_inf, neg_inf, total, first;
} cli_nonfinite;
cli_nonfinite cli_count_nonfinite(const float *x, size_t n, int neg_inf_ok);
/* Counts a tensor of shape (rank, dims) (NULL x: nothing) and, when it holds any, prints
 * "check-finite: <what> (2, 5, 64): 128 NaN, 3 +inf, first at (0, 3, 17)". Returns the total. */
size_t cli_report_nonfinite(const char *what, const float *x, uint32_t rank, const uint32_t *dims, int neg_inf_ok);

/* Monotonic time in seconds. */
double cli_now(void);
/* Orders doubles ascending, for qsort. */
int cli_compare_doubles(const void *a, const void *b);
/* The median of `n` >= 1 samples (the mean of the middle two when n is even); sorts `v`. */
double cli_median(double *v, size_t n);
/* `n` values uniform in [-scale, scale), the same for the same seed (xorshift). */
void cli_fill_random(float *x, size_t n, unsigned long long seed, float scale);

#endif
