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

#define CLI_MAX_OPTIONS 64 /* the most option names one command compares against */

/* A tiny option scanner: `--name value` and `--flag`. Unknown options are usage errors.
 *
 *   while ((opt = cli_next(&a))) {
 *       if (cli_is(&a, opt, "--out")) ...
 *       else return cli_unknown_option(&a, opt);   // suggests the nearest name cli_is saw
 *   }
 */
typedef struct cli_args {
    int argc;
    char **argv;
    int next;
    const char *command;                 /* for messages */
    const char *tried[CLI_MAX_OPTIONS];  /* the names cli_is compared the current option with */
    size_t tried_count;
} cli_args;

cli_args cli_args_make(const char *command, int argc, char **argv);
/* The next option name ("--out"), or NULL at the end. Positional arguments are errors. */
const char *cli_next(cli_args *a);
/* 1 if `opt` is `name`. Remembers `name`, so that the parser is the one list of the command's options. */
int cli_is(cli_args *a, const char *opt, const char *name);
/* Prints "vkattn <command>: unknown option "--weigths"; did you mean "--weights"?" (or says where the
 * options are listed when none is near) and returns 2. */
int cli_unknown_option(const cli_args *a, const char *opt);
/* The value of the option just returned; NULL (and a message) if it is missing. */
const char *cli_value(cli_args *a, const char *option);
/* The required options a command found missing, named together in one message. */
typedef struct cli_missing {
    const char *names[8];
    size_t count;
} cli_missing;
void cli_missing_add(cli_missing *m, const char *name);
/* When any is missing: prints "vkattn run: missing --weights, --query and --out" (then `note`, unless
 * NULL) and returns 2; else returns 0. */
int cli_missing_report(const char *command, const cli_missing *m, const char *note);

/* Parses a decimal uint32 >= min; 0 on success, else prints a message and returns 2. */
int cli_parse_u32(const char *option, const char *text, uint32_t min, uint32_t *out);

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
    CLI_FILE_TEXT,        /* printable text: np.savetxt, CSV, JSON */
    CLI_FILE_OTHER
} cli_file_kind;

/* After a reader refused `path`, given as `option` (`want`: CLI_FILE_NPY for vkattn_npy_read,
 * CLI_FILE_SAFETENSORS for vkattn_weight_file_load): when the file is of another kind, prints what
 * it is and what the option takes ("vkattn run: --weights q.npy is a .npy array, not a safetensors
 * file: --weights takes ..."); otherwise the reader's own message, as cli_fail does. Returns 1. */
int cli_fail_input(const char *command, const char *option, const char *path, cli_file_kind want,
                   vkattn_status status, const char *message);

/* The dtype a .npy file stores, as numpy names it with its descr: "int64 (<i8)". Returns 1 and sets
 * *loads_as to the vkattn_dtype vkattn_npy_read loads it as (-1 for a dtype it refuses), or returns 0
 * when the file has no readable .npy header. vkattn_npy_read converts float16/float64 to F32 and
 * int64 to I32, so only the file can say what it held. */
int cli_npy_stored_dtype(const char *path, char *buf, size_t size, int *loads_as);

/* Checks, before any work, that output `path` (given as `option`; NULL: none asked for) can be
 * written, leaving an existing file as it is and removing one the check had to create. 0, or prints
 * "vkattn run: --out /no/dir/o.npy: cannot write this file (No such file or directory)" and returns 1. */
int cli_check_output(const char *command, const char *option, const char *path);

/* Opens a context on the requested device (NULL = VKATTN_DEVICE or the default) and prints which
 * device it is, on stdout. Returns 0 or an exit code. */
int cli_open_context(const char *command, const char *device, vkattn_context **out);
/* "llvmpipe (LLVM 15.0.6, 256 bits) [cpu, Vulkan 1.3.230, llvmpipe Mesa 22.3.6]" */
void cli_describe_device(const vkattn_device_info *info, char *buf, size_t size);

/* Layer storage dtype names, as --dtype takes them (run, demo and bench): "f32" or "f16".
 * cli_storage_from_name returns 0 and sets *out, or 1 for any other name. */
#define CLI_STORAGE_NAMES "f32 or f16"
int cli_storage_from_name(const char *name, vkattn_dtype *out);

/* --trace: prints the plan `layer` (made in `ctx`) would run for `f` (vkattn_forward_explain), or
 * says the CPU reference runs when `layer` is NULL. 0, or 1 after printing why it could not. */
int cli_print_plan(const char *command, vkattn_context *ctx, vkattn_layer *layer,
                   const vkattn_host_forward_desc *f);
/* The same for option `option` of `command`: 0, or prints "vkattn run: --dtype takes f32 or f16,
 * not "f8"" and returns 2. */
int cli_parse_storage(const char *command, const char *option, const char *text, vkattn_dtype *out);
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

#endif
