/* vkattn peak: the device's own ceilings (fp32/fp16 FMA throughput, memory bandwidth), so that
 * benchmark figures can be read as a fraction of what this device can do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void peak_usage(FILE *out)
{
    fprintf(out, "usage: vkattn peak [--device N|NAME] [--seconds T]\n"
                 "  measures fp32 (and fp16) FMA throughput and copy bandwidth with microkernels, ~T s (default 1)\n"
                 CLI_EXIT_HELP);
}

int cmd_peak(int argc, char **argv)
{
    const char *device = NULL;
    double seconds = 1.0;
    cli_args a = cli_args_make("peak", argc, argv);
    const char *opt, *v;
    while ((opt = cli_next(&a))) {
        if (cli_is(&a, opt, "--help")) {
            peak_usage(stdout);
            return 0;
        } else if (cli_is(&a, opt, "--device")) {
            if (!(device = cli_value(&a, opt))) return 2;
        } else if (cli_is(&a, opt, "--seconds")) {
            if (!(v = cli_value(&a, opt))) return 2;
            seconds = atof(v);
            if (!(seconds > 0 && seconds < 600)) {
                fprintf(stderr, "vkattn peak: --seconds expects a number in (0, 600), got \"%s\"\n", v);
                return 2;
            }
        } else {
            return cli_unknown_option(&a, opt);
        }
    }
    vkattn_context *ctx = NULL;
    int rc = cli_open_context("peak", device, &ctx);
    if (rc) return rc;
    vkattn_peak peak;
    vkattn_status status = vkattn_measure_peak(ctx, seconds, &peak);
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
