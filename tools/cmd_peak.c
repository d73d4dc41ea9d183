/* vkattn peak: the device's own ceilings (fp32/fp16 FMA throughput, memory bandwidth), so that
 * benchmark figures can be read as a fraction of what this device can do. */
#include <stddef.h>
#include <stdio.h>

#include "cli.h"

typedef struct peak_options {
    const char *device;
    double seconds;
} peak_options;

static const cli_option k_peak_rows[] = {
    {"--seconds", "T", "measuring time, about", CLI_NUMBER, offsetof(peak_options, seconds), 0, 600,
     .flags = CLI_ABOVE_MIN},
    CLI_DEVICE_OPTION(peak_options, device),
};

int cmd_peak(int argc, char **argv)
{
    peak_options o = {NULL, 1.0};
    cli_command c = {"peak", NULL,
                     "Measures fp32 (and fp16) FMA throughput and copy bandwidth with microkernels.\n" CLI_EXIT_HELP,
                     {{NULL, k_peak_rows, CLI_COUNT(k_peak_rows), &o}}};
    int rc = cli_parse(&c, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    vkattn_context *ctx = NULL;
    if ((rc = cli_open_context("peak", o.device, &ctx))) return rc;
    vkattn_peak peak;
    vkattn_status status = vkattn_measure_peak(ctx, o.seconds, &peak);
    if (status != VKATTN_OK) {
        rc = cli_fail("peak", "measuring", status, vkattn_context_last_error(ctx));
    } else {
        printf("fp32 FMA     %10.1f GFLOP/s   (best run %.2f ms)\n", peak.fp32_gflops, peak.fp32_ms);
        if (peak.fp16_gflops > 0)
            printf("fp16 FMA     %10.1f GFLOP/s   (best run %.2f ms)\n", peak.fp16_gflops, peak.fp16_ms);
        else
            printf("fp16 FMA        not supported (no shaderFloat16)\n");
        printf("bandwidth    %10.1f GB/s      (copy, read + write, best run %.2f ms)\n", peak.bandwidth_gbs,
               peak.bandwidth_ms);
    }
    vkattn_context_destroy(ctx);
    return rc;
}
