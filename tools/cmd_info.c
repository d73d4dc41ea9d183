/* vkattn info: the Vulkan devices vkattn can see, their limits, the kernel tuning each gets, and
 * the default choice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_DEVICES 16

/* Where the list says cooperative matrices would be used, a context on the device says whether
 * they pass its self-test (vkattn_device_info.cooperative_matrix_checked): "; self-test passed",
 * or "; not used: self-test failed: ..." where they do not, or why no context could be made. */
static void print_self_test(const vkattn_device_info *d)
{
    char index[16];
    snprintf(index, sizeof index, "%u", d->index);
    vkattn_context_desc desc = {.device = index};
    vkattn_context *ctx = NULL;
    vkattn_error error = {0};
    vkattn_device_info checked;
    if (vkattn_context_create(&desc, &ctx, &error) != VKATTN_OK) {
        printf("; self-test not run: %s", error.message);
        return;
    }
    if (vkattn_context_device(ctx, &checked) == VKATTN_OK) {
        if (checked.cooperative_matrix_checked) printf("; self-test passed");
        else printf("; not used: %s", checked.cooperative_matrix_note);
    }
    vkattn_context_destroy(ctx);
}

/* VK_NV_cooperative_matrix2's features (vkattn_device_info.cooperative_matrix2), or "none". */
static void print_matrix2(uint32_t bits)
{
    static const struct {
        uint32_t bit;
        const char *name;
    } features[] = {{VKATTN_MATRIX2_WORKGROUP_SCOPE, "workgroup scope"},
                    {VKATTN_MATRIX2_FLEXIBLE_DIMENSIONS, "flexible dimensions"},
                    {VKATTN_MATRIX2_REDUCTIONS, "reductions"},
                    {VKATTN_MATRIX2_CONVERSIONS, "conversions"},
                    {VKATTN_MATRIX2_PER_ELEMENT, "per-element operations"},
                    {VKATTN_MATRIX2_TENSOR_ADDRESSING, "tensor addressing"},
                    {VKATTN_MATRIX2_BLOCK_LOADS, "block loads"}};
    if (!bits) {
        printf("none\n");
        return;
    }
    const char *sep = "";
    for (size_t i = 0; i < sizeof features / sizeof features[0]; i++)
        if (bits & features[i].bit) printf("%s%s", sep, features[i].name), sep = ", ";
    const uint32_t used = VKATTN_MATRIX2_REDUCTIONS | VKATTN_MATRIX2_CONVERSIONS | VKATTN_MATRIX2_PER_ELEMENT;
    printf(" (VK_NV_cooperative_matrix2; %s)\n",
           (bits & used) == used ? "attn_cm2 can run on them: VKATTN_COOPMAT2=1"
                                 : "attn_cm2 needs reductions, conversions and per-element operations");
}

int cmd_info(int argc, char **argv)
{
    cli_command c = {"info", NULL,
                     "Lists the Vulkan devices; the one marked * is used when neither --device nor VKATTN_DEVICE\n"
                     "names another. A VKATTN_DEVICE or VKATTN_TUNING that contexts refuse is said after the list,\n"
                     "with exit status 1, as every other command fails with it.\n" CLI_EXIT_HELP};
    int rc = cli_parse(&c, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    vkattn_device_info infos[MAX_DEVICES];
    uint32_t count = 0;
    vkattn_error error = {0};
    vkattn_status status = vkattn_list_devices(infos, MAX_DEVICES, &count, &error);
    if (status != VKATTN_OK) return cli_fail("info", "listing devices", status, error.message);
    const char *tuning_env = getenv("VKATTN_TUNING"), *device_env = getenv("VKATTN_DEVICE");
    int tuning_set = tuning_env && *tuning_env, device_set = device_env && *device_env;
    /* Only a context tells whether the environment names a device and a tuning it accepts. */
    vkattn_context *ctx = NULL;
    vkattn_device_info chosen = {0};
    int env_refused = (tuning_set || device_set) && vkattn_context_create(NULL, &ctx, NULL) != VKATTN_OK;
    if (ctx) vkattn_context_device(ctx, &chosen);
    vkattn_context_destroy(ctx);
    ctx = NULL;
    printf("vkattn %s, %u Vulkan device%s\n", vkattn_version_string(), count, count == 1 ? "" : "s");
    for (uint32_t i = 0; i < count && i < MAX_DEVICES; i++) {
        const vkattn_device_info *d = &infos[i];
        char text[900];
        cli_describe_device(d, text, sizeof text);
        printf("\n%c %u: %s\n", d->is_default ? '*' : ' ', d->index, text);
        printf("    vendor 0x%04x device 0x%04x, driver version 0x%08x\n", d->vendor_id, d->device_id, d->driver_version);
        printf("    maxStorageBufferRange     %llu bytes (%.0f MiB)\n", (unsigned long long)d->max_storage_buffer_range,
               d->max_storage_buffer_range / 1048576.0);
        printf("    maxMemoryAllocationSize   %llu bytes (%.0f MiB)\n", (unsigned long long)d->max_memory_allocation_size,
               d->max_memory_allocation_size / 1048576.0);
        printf("    device-local heap         %.0f MiB\n", d->device_local_heap_bytes / 1048576.0);
        printf("    shared memory             %u bytes, %u invocations per workgroup\n", d->max_shared_memory_bytes,
               d->max_workgroup_invocations);
        printf("    workgroup count           %u x %u x %u\n", d->max_workgroup_count[0], d->max_workgroup_count[1],
               d->max_workgroup_count[2]);
        printf("    subgroup size             %u", d->subgroup_size);
        if (d->subgroup_size_control)
            printf(" (a pipeline may require %u to %u, with full subgroups)", d->subgroup_size_min, d->subgroup_size_max);
        printf("\n");
        if (d->compute_units) printf("    compute units             %u\n", d->compute_units);
        else printf("    compute units             not reported by the driver\n");
        printf("    16-bit storage            %s, shaderFloat16 %s\n", d->storage_16bit ? "yes" : "no",
               d->shader_float16 ? "yes" : "no");
        printf("    cooperative matrix:       ");
        for (uint32_t k = 0; k < d->cooperative_matrix_shape_count; k++)
            printf("%s%ux%ux%u", k ? ", " : "", d->cooperative_matrix_shapes[k].m, d->cooperative_matrix_shapes[k].n,
                   d->cooperative_matrix_shapes[k].k);
        if (d->cooperative_matrix_shape_count) printf(" (M x N x K; fp16 x fp16 -> fp32, subgroup scope)");
        else printf("none%s", d->cooperative_matrix ? " with fp16 x fp16 -> fp32 at subgroup scope" : "");
        if (d->cooperative_matrix_shape_count && !d->cooperative_matrix_usable)
            printf("; not used: %s", d->cooperative_matrix_note);
        else if (d->cooperative_matrix_usable)
            print_self_test(d);
        printf("\n");
        printf("    cooperative matrix 2:     ");
        print_matrix2(d->cooperative_matrix2);
        if (d->timestamp_period_ns > 0) printf("    timestamps                %g ns per tick\n", d->timestamp_period_ns);
        else printf("    timestamps                not supported on the compute queue\n");
        if (d->loop_budget)
            printf("    loop budget               %u trips per invocation (the driver cuts longer loops short; vkattn "
                   "splits its work to stay within it)\n", d->loop_budget);
        else printf("    loop budget               none\n");
        printf("    tuning                    %s", d->tuning);
        if (tuning_set && !env_refused) printf(" (contexts use VKATTN_TUNING=%s instead)", tuning_env);
        printf("\n");
    }
    if (count > 0) printf("\n* default device (override with --device N|NAME or VKATTN_DEVICE)\n");
    if (device_set && !env_refused) printf("VKATTN_DEVICE=%s: contexts use device %u\n", device_env, chosen.index);
    if (!env_refused) return 0;
    /* Refused as every other command refuses it: the same message, and exit status 1. */
    rc = cli_open_context("info", NULL, &ctx);
    vkattn_context_destroy(ctx);
    return rc ? rc : CLI_EXIT_FAILURE;
}
