/* vkattn — command-line front end: device information, a demo forward, and forwards on files. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} subcommand;

static const subcommand subcommands[] = {
    {"info", cmd_info, "list Vulkan devices, their limits, and which one is the default"},
    {"demo", cmd_demo, "run a forward on random data on the GPU and check it against the CPU path"},
    {"run", cmd_run, "run a forward on .npy inputs with safetensors weights"},
    {"peak", cmd_peak, "measure this device's fp32/fp16 FMA throughput and memory bandwidth"},
    {"bench", cmd_bench, "time forwards over a sweep of shapes, per stage, against the measured peak"},
    {"overhead", cmd_overhead, "host time per forward: blocking forwards against one submission of a layer stack"},
    {"heads", cmd_heads, "rank heads by importance (ablation); --prune K writes a head mask and measures it"},
    {"heatmap", cmd_heatmap, "draw per-head attention weights as a PNG heatmap grid"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vkattn <command> [options]    (vkattn <command> --help for its options)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(out, "  %-8s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\nenvironment: VKATTN_DEVICE (index or name substring), VKATTN_VALIDATION=1, VKATTN_COOPMAT=0,\n"
                 "  VKATTN_TUNING (lavapipe, gpu, coopmat, intel or mobile, or a tuning string: coopmat:cm_ksteps=4)\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("vkattn %s\n", vkattn_version_string());
        return 0;
    }
    enum { COUNT = sizeof subcommands / sizeof subcommands[0] };
    const char *names[COUNT + 2] = {"--help", "--version"};
    for (size_t i = 0; i < COUNT; i++) {
        if (strcmp(argv[1], subcommands[i].name) == 0) return subcommands[i].run(argc - 2, argv + 2);
        names[2 + i] = subcommands[i].name;
    }
    const char *near = cli_nearest(argv[1], names, COUNT + 2);
    if (near) {
        fprintf(stderr, "vkattn: unknown command \"%s\"; did you mean \"%s\"?\n", argv[1], near);
    } else {
        fprintf(stderr, "vkattn: unknown command \"%s\"\n", argv[1]);
        usage(stderr);
    }
    return 2;
}
