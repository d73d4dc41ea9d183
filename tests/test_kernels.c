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

/* gl_SubgroupSize is read only where the pipeline fixes the subgroup size (the cooperative-matrix
 * kernels): every embedded kernel passes vka_kernel_check_layout above, which refuses the others'
 * reads (attn_paged's lanes builds counted their keys by it until session 29, and on Intel's ANV
 * would have left keys unscored). Here: the reflection sees the read, and the check refuses it. */
static void test_subgroup_size_only_where_fixed(void)
{
    /* a module of one decoration: variable 1 is BuiltIn SubgroupSize */
    const uint32_t module[] = {0x07230203u, 0x00010300u, 0, 2, 0, (4u << 16) | 71u, 1, 11, 36};
    vka_binding_layout layout;
    CHECK(vka_spirv_bindings(module, sizeof module / sizeof module[0], NULL, &layout) == 1);
    CHECK(layout.reads_subgroup_size == 1 && layout.count == 0);
    /* the same read in a kernel that fixes no size (attn_paged_lanes), and in one that does */
    reflect(VKA_KERNEL_PAGED_LANES, 0, &layout);
    CHECK(layout.reads_subgroup_size == 0);
    layout.reads_subgroup_size = 1;
    char why[160] = "";
    CHECK(!vka_kernel_check_layout(vka_kernel_get(VKA_KERNEL_PAGED_LANES), &layout, why, sizeof why));
    printf("  attn_paged_lanes reading gl_SubgroupSize: %s\n", why);
    CHECK(strstr(why, "gl_SubgroupSize") != NULL);
    if (reflect(VKA_KERNEL_FUSED_CM, 0, &layout) == 1) {
        layout.reads_subgroup_size = 1;
        CHECK(vka_kernel_check_layout(vka_kernel_get(VKA_KERNEL_FUSED_CM), &layout, why, sizeof why));
    }
}

int main(void)
{
    RUN_TEST(test_every_kernel_matches_its_slots);
    RUN_TEST(test_swapped_slots_are_caught);
    RUN_TEST(test_subgroup_size_only_where_fixed);
    return test_finish();
}
