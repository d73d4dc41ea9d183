/* Shared helpers of the vkattn command-line tool. The tool uses the public API only. */
#ifndef VKATTN_CLI_H
#define VKATTN_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vkattn.h"

/* Each subcommand: returns the process exit code (0 ok, 1 failure, 2 usage error). */
int cmd_info(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_peak(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_heads(int argc, char **argv);
int cmd_heatmap(int argc, char **argv);

/* A tiny option scanner: `--name value` and `--flag`. Unknown options are usage errors. */
typedef struct cli_args {
    int argc;
    char **argv;
    int next;
    const char *command; /* for messages */
} cli_args;

cli_args cli_args_make(const char *command, int argc, char **argv);
/* The next option name ("--out"), or NULL at the end. Positional arguments are errors. */
const char *cli_next(cli_args *a);
/* The value of the option just returned; NULL (and a message) if it is missing. */
const char *cli_value(cli_args *a, const char *option);
/* Parses a decimal uint32 >= min; 0 on success, else prints a message and returns 2. */
int cli_parse_u32(const char *option, const char *text, uint32_t min, uint32_t *out);

/* Prints "vkattn <command>: <what>: STATUS_NAME: message" to stderr and returns 1. */
int cli_fail(const char *command, const char *what, vkattn_status status, const char *message);

/* Opens a context on the requested device (NULL = VKATTN_DEVICE or the default) and prints which
 * device it is, on stdout. Returns 0 or an exit code. */
int cli_open_context(const char *command, const char *device, vkattn_context **out);
/* "llvmpipe (LLVM 15.0.6, 256 bits) [cpu, Vulkan 1.3.230, llvmpipe Mesa 22.3.6]" */
void cli_describe_device(const vkattn_device_info *info, char *buf, size_t size);

/* Error statistics of `got` against `want`: max |got - want| and NMSE = sum (got-want)^2 / sum want^2. */
typedef struct cli_error_stats {
    double max_abs;
    double nmse;
    size_t nonfinite; /* elements where exactly one of got/want is not finite */
} cli_error_stats;
cli_error_stats cli_compare(const float *got, const float *want, size_t n);

/* Monotonic time in seconds. */
double cli_now(void);
/* Orders doubles ascending, for qsort. */
int cli_compare_doubles(const void *a, const void *b);

/* JSON output: a quoted string with ", \ and control characters escaped; a number printed with
 * `fmt` (e.g. "%.9g"), or null when it is not finite (JSON has no NaN or infinity). */
void cli_json_string(FILE *f, const char *s);
void cli_json_number(FILE *f, const char *fmt, double v);

#endif
