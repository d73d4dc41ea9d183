/* The host/kernel ABI without a GPU: every embedded kernel's bindings, read from its SPIR-V, sit at
 * the slots abi.h names for them (by GLSL name, so two slots of one type swapped are caught too),
 * and its push-constant block has the size the C struct has. */
#include "abi.h"
#include "pipeline/kernels.h"
#include "pipeline/spirv_reflect.h"
#include "test_util.h"

static int reflect(vka_kernel k, int f16, vka_binding_layout *layout)
{
    const vka_kernel_info *info = vka_kernel_get(k);
    const char *name = f16 ? info->spirv_f16_out : info->spirv;
    const uint32_t *code;
    size_t bytes;
    if (!name) return 0;
    /* A build without a cooperative-matrix compiler leaves those kernels out (shaders/CMakeLists.txt). */
    if (vka_kernel_is_coopmat(info) && !vka_embedded_spirv(name, &code, &bytes)) return -1;
    CHECK_MSG(vka_embedded_spirv(name, &code, &bytes), "kernel %s is not embedded", name);
    CHECK_MSG(vka_spirv_bindings(code, bytes / 4, NULL, layout) == 1, "kernel %s: bindings unreadable", name);
    return 1;
}

static void test_every_kernel_matches_its_slots(void)
{
    int checked = 0, left_out = 0;
    for (int k = 0; k < VKA_KERNEL_COUNT; k++) {
        for (int f16 = 0; f16 < 2; f16++) {
            vka_binding_layout layout;
            int found = reflect((vka_kernel)k, f16, &layout);
            left_out += found < 0 && f16 == 0;
            if (found <= 0) continue;
            char why[160] = "";
            CHECK_MSG(vka_kernel_check_layout(vka_kernel_get((vka_kernel)k), &layout, why, sizeof why), "%s", why);
            checked++;
        }
    }
    printf("  %d kernel builds agree with abi.h's slots (%d cooperative-matrix kernels not in this build)\n", checked,
           left_out);
    CHECK(checked >= VKA_KERNEL_COUNT - left_out);
}

/* A copy of a kernel's layout with two slots of the same type swapped must be refused. */
static void test_swapped_slots_are_caught(void)
{
    vka_binding_layout layout;
    reflect(VKA_KERNEL_FUSED, 0, &layout);
    const struct {
        uint32_t a, b;
    } swaps[] = {{VKA_FUSED_K, VKA_FUSED_V}, {VKA_FUSED_STATE_O, VKA_FUSED_STATE_LSE}};
    for (size_t i = 0; i < sizeof swaps / sizeof swaps[0]; i++) {
        vka_binding_layout swapped = layout;
        uint32_t a = swaps[i].a, b = swaps[i].b;
        CHECK(swapped.types[a] == swapped.types[b]); /* same type: a type check alone would pass */
        memcpy(swapped.names[a], layout.names[b], sizeof swapped.names[a]);
        memcpy(swapped.names[b], layout.names[a], sizeof swapped.names[b]);
        char why[160] = "";
        CHECK(!vka_kernel_check_layout(vka_kernel_get(VKA_KERNEL_FUSED), &swapped, why, sizeof why));
        printf("  slots %u and %u swapped: %s\n", a, b, why);
        CHECK(strstr(why, "binding") != NULL);
    }
    vka_binding_layout fewer = layout;
    fewer.count--;
    char why[160] = "";
    CHECK(!vka_kernel_check_layout(vka_kernel_get(VKA_KERNEL_FUSED), &fewer, why, sizeof why));
}

/* Whether a module reads a built-in variable (an OpDecorate BuiltIn on one of its variables). */
static int reads_builtin(const uint32_t *code, size_t words, uint32_t builtin)
{
    for (size_t i = 5; i < words;) {
        uint32_t count = code[i] >> 16, op = code[i] & 0xffffu;
        if (count == 0 || i + count > words) return -1;
        if (op == 71 /* OpDecorate */ && count >= 4 && code[i + 2] == 11 /* BuiltIn */ && code[i + 3] == builtin)
            return 1;
        i += count;
    }
    return 0;
}

/* gl_SubgroupSize is the size a subgroup runs at only where the pipeline fixes it: pipeline_cache.c
 * requires a size (and full subgroups) for the cooperative-matrix kernels alone. Elsewhere a driver
 * may report a larger size than it runs, the rest of the subgroup inactive (Intel's ANV: 32 while
 * running 16), so an index made from it skips invocations: attn_paged's lanes builds counted
 * their keys so, and left keys unscored there. No other kernel may read it. */
static void test_subgroup_size_only_where_fixed(void)
{
    int checked = 0;
    for (int k = 0; k < VKA_KERNEL_COUNT; k++) {
        const vka_kernel_info *info = vka_kernel_get((vka_kernel)k);
        if (vka_kernel_is_coopmat(info)) continue;
        for (int f16 = 0; f16 < 2; f16++) {
            const char *name = f16 ? info->spirv_f16_out : info->spirv;
            const uint32_t *code;
            size_t bytes;
            if (!name) continue;
            CHECK_MSG(vka_embedded_spirv(name, &code, &bytes), "kernel %s is not embedded", name);
            int reads = reads_builtin(code, bytes / 4, 36 /* SubgroupSize */);
            CHECK_MSG(reads == 0, "kernel %s %s gl_SubgroupSize, but its pipeline does not fix the subgroup size", name,
                      reads < 0 ? "is unreadable, cannot tell whether it reads" : "reads");
            checked++;
        }
    }
    /* the scan sees what a kernel reads: attn_paged_lanes counts its keys by subgroup */
    const uint32_t *code;
    size_t bytes;
    const char *lanes = vka_kernel_get(VKA_KERNEL_PAGED_LANES)->spirv;
    CHECK(vka_embedded_spirv(lanes, &code, &bytes));
    CHECK_MSG(reads_builtin(code, bytes / 4, 40 /* SubgroupId */) == 1 &&
                  reads_builtin(code, bytes / 4, 38 /* NumSubgroups */) == 1,
              "the scan missed %s's gl_SubgroupID and gl_NumSubgroups", lanes);
    printf("  %d kernel builds without a fixed subgroup size read no gl_SubgroupSize\n", checked);
}

int main(void)
{
    RUN_TEST(test_every_kernel_matches_its_slots);
    RUN_TEST(test_swapped_slots_are_caught);
    RUN_TEST(test_subgroup_size_only_where_fixed);
    return test_finish();
}
