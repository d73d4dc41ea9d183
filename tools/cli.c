#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

cli_args cli_args_make(const char *command, int argc, char **argv)
{
    cli_args a = {argc, argv, 0, command};
    return a;
}

const char *cli_next(cli_args *a)
{
    if (a->next >= a->argc) return NULL;
    return a->argv[a->next++];
}

const char *cli_value(cli_args *a, const char *option)
{
    if (a->next >= a->argc) {
        fprintf(stderr, "vkattn %s: %s needs a value\n", a->command, option);
        return NULL;
    }
    return a->argv[a->next++];
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
    fprintf(stderr, "vkattn %s: %s: %s: %s\n", command, what, vkattn_status_name(status),
            message && *message ? message : vkattn_status_string(status));
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

int cli_open_context(const char *command, const char *device, vkattn_context **out)
{
    vkattn_error error = {0};
    vkattn_context_desc desc = {.device = device};
    vkattn_status status = vkattn_context_create(&desc, out, &error);
    if (status != VKATTN_OK) return cli_fail(command, "opening a Vulkan device", status, error.message);
    vkattn_device_info info;
    vkattn_context_device(*out, &info);
    char text[900];
    cli_describe_device(&info, text, sizeof text);
    printf("device: %u: %s%s\n", info.index, text, vkattn_context_validation_enabled(*out) ? " (validation on)" : "");
    return 0;
}

cli_error_stats cli_compare(const float *got, const float *want, size_t n)
{
    cli_error_stats s = {0};
    double err2 = 0, ref2 = 0;
    for (size_t i = 0; i < n; i++) {
        int fg = isfinite(got[i]), fw = isfinite(want[i]);
        if (fg != fw) {
            s.nonfinite++;
            continue;
        }
        if (!fg) continue;
        double d = (double)got[i] - want[i];
        if (fabs(d) > s.max_abs) s.max_abs = fabs(d);
        err2 += d * d;
        ref2 += (double)want[i] * want[i];
    }
    s.nmse = ref2 > 0 ? err2 / ref2 : err2;
    return s;
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

void cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p == '\n') fputs("\\n", f);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

void cli_json_number(FILE *f, const char *fmt, double v)
{
    if (isfinite(v)) fprintf(f, fmt, v);
    else fputs("null", f);
}
