/* The host/kernel ABI without a GPU: every embedded kernel's bindings, read from its SPIR-V, sit at
 * the slots abi.h names for them (by GLSL name, so two slots of one type swapped are caught too),
 * and its push-constant block has the size the C struct has; and the modules as the pipelines patch
 * them (spirv_patch.h). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, for spirv-val's input */
#include "abi.h"
#include "pipeline/kernels.h"
#include "pipeline/spirv_patch.h"
#include "pipeline/spirv_reflect.h"
#include "test_tmp.h"
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
    /* the same decoration cut a word short: malformed, not read past the module's end */
    CHECK(vka_spirv_bindings(module, sizeof module / sizeof module[0] - 1, NULL, &layout) == 0);
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

/* Whether the SPIR-V literal string at `words` (a word's low byte first, whatever the host's byte
 * order) is `s`, its nul included. */
static int spirv_string_is(const uint32_t *words, size_t count, const char *s)
{
    for (size_t i = 0; i <= strlen(s); i++)
        if (i / 4 >= count || (char)(words[i / 4] >> (i % 4 * 8)) != s[i]) return 0;
    return 1;
}

/* The module vka_spirv_preserve_inf_nan made from `code`: its instructions in order, to its last
 * word; the capability among the capabilities, the extension (before SPIR-V 1.4 only) after them,
 * the execution modes (fp32 always, fp16 where the module has a 16-bit float type) after its one
 * entry point, each once; and without those, the original word for word. Returns the widths found. */
static unsigned check_patched(const char *name, const uint32_t *code, size_t words, const uint32_t *out, size_t n)
{
    enum { CAPABILITY = 17, EXTENSION = 10, ENTRY_POINT = 15, EXECUTION_MODE = 16 };
    uint32_t *rest = malloc(n * sizeof *rest);
    size_t kept = 0, at = 5, last_capability = 0, first_other = 0;
    int capabilities = 0, extensions = 0, float16 = 0, entry = 0, mode_after_entry = 1;
    unsigned modes = 0;
    memcpy(rest, out, 5 * sizeof *out);
    kept = 5;
    while (at < n) {
        const uint32_t count = out[at] >> 16, op = out[at] & 0xFFFFu;
        CHECK_MSG(count > 0 && count <= n - at, "%s: instruction at word %zu runs past the end", name, at);
        if (count == 0 || count > n - at) break;
        int added = 0;
        if (op == CAPABILITY) {
            CHECK_MSG(first_other == 0, "%s: a capability after other instructions", name);
            last_capability = at;
            if (out[at + 1] == 4466) capabilities++, added = 1;
        } else if (!first_other) first_other = at;
        if (op == EXTENSION && spirv_string_is(&out[at + 1], count - 1, "SPV_KHR_float_controls"))
            extensions++, added = 1;
        if (op == ENTRY_POINT) entry = (int)out[at + 2];
        float16 |= op == 22 && count >= 3 && out[at + 2] == 16; /* OpTypeFloat 16 */
        if (op == EXECUTION_MODE && count == 4 && out[at + 2] == 4461) {
            mode_after_entry &= entry != 0 && out[at + 1] == (uint32_t)entry;
            modes |= out[at + 3] == 32 ? VKA_SPIRV_FP32 : out[at + 3] == 16 ? VKA_SPIRV_FP16 : 0x80u;
            added = 1;
        }
        if (!added) memcpy(&rest[kept], &out[at], count * sizeof *out), kept += count;
        at += count;
    }
    CHECK_MSG(at == n && last_capability > 0, "%s: patched module unreadable", name);
    CHECK_MSG(capabilities == 1 && extensions == (code[1] < 0x00010400u) && mode_after_entry, "%s: capability %d, extension %d",
              name, capabilities, extensions);
    CHECK_MSG(modes == (VKA_SPIRV_FP32 | (float16 ? VKA_SPIRV_FP16 : 0)), "%s: modes 0x%x", name, modes);
    CHECK_MSG(kept == words && memcmp(rest, code, words * sizeof *code) == 0, "%s: more changed than the additions", name);
    free(rest);
    return modes;
}

/* spirv-val (VKATTN_TEST_SPIRV_VAL, set by tests/CMakeLists.txt) on a module: 1 if it passes or no
 * validator is given, else its output and 0. For the Vulkan the module needs: SPIR-V 1.6 is 1.3's,
 * the rest run where float controls are core (1.2). */
static int spirv_val(const char *name, const uint32_t *code, size_t words)
{
    const char *val = getenv("VKATTN_TEST_SPIRV_VAL");
    if (!val || !*val) return 1;
    char path[128], command[640];
    test_tmp_path(path, sizeof path, "module.spv");
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(code, 4, words, f) == words);
    if (f) fclose(f);
    snprintf(command, sizeof command, "'%s' --target-env vulkan1.%d '%s' 2>&1", val, code[1] >= 0x00010600u ? 3 : 2,
             path);
    int rc = system(command);
    remove(path);
    CHECK_MSG(rc == 0, "%s: spirv-val refused the patched module (%s)", name, command);
    return rc == 0;
}

/* Every module asks to keep infinities, NaNs and signed zeros (spirv_patch.h): each embedded build
 * patched as the pipelines are, checked instruction by instruction and by spirv-val; patching again
 * or for no width adds nothing; a module it cannot read is refused. */
static void test_preserve_inf_nan(void)
{
    int patched = 0, fp16 = 0, validated = 0;
    if (test_tmp_make("kernels")) CHECK(0);
    for (int k = 0; k < VKA_KERNEL_COUNT; k++) {
        for (int f16 = 0; f16 < 2; f16++) {
            const vka_kernel_info *info = vka_kernel_get((vka_kernel)k);
            const char *name = f16 ? info->spirv_f16_out : info->spirv;
            const uint32_t *code;
            size_t bytes, n = 0, again_n = 0;
            uint32_t *out = NULL, *again = NULL;
            if (!name || !vka_embedded_spirv(name, &code, &bytes)) continue;
            CHECK(vka_spirv_preserve_inf_nan(code, bytes / 4, VKA_SPIRV_FP32 | VKA_SPIRV_FP16, NULL, &out, &n) == 1);
            CHECK_MSG(out != NULL, "%s: nothing added", name);
            if (!out) continue;
            fp16 += (check_patched(name, code, bytes / 4, out, n) & VKA_SPIRV_FP16) != 0;
            validated += spirv_val(name, out, n);
            CHECK(vka_spirv_preserve_inf_nan(out, n, VKA_SPIRV_FP32 | VKA_SPIRV_FP16, NULL, &again, &again_n) == 1);
            CHECK_MSG(again == NULL, "%s: patched twice", name);
            free(out), free(again);
            CHECK(vka_spirv_preserve_inf_nan(code, bytes / 4, 0, NULL, &out, &n) == 1 && out == NULL);
            patched++;
        }
    }
    test_tmp_remove();
    const char *val = getenv("VKATTN_TEST_SPIRV_VAL");
    printf("  %d kernel builds declare SignedZeroInfNanPreserve (fp16 too in %d); %d pass %s\n", patched, fp16,
           validated, val && *val ? val : "(no spirv-val given: not validated)");
    CHECK(patched >= VKA_KERNEL_COUNT && fp16 > 0 && validated == patched);
    /* not SPIR-V; an instruction of no words; one running past the module's end (an entry point of
     * 5 words with 4 left); no entry point; two (a kernel is one) */
    const uint32_t bad_magic[] = {0x07230204u, 0x00010300u, 0, 2, 0, (2u << 16) | 17u, 1};
    const uint32_t zero_count[] = {0x07230203u, 0x00010300u, 0, 2, 0, (2u << 16) | 17u, 1, 0, 0};
    const uint32_t past_end[] = {0x07230203u, 0x00010300u, 0, 3, 0, (2u << 16) | 17u, 1, (5u << 16) | 15u, 5, 1,
                                 0x6E69616Du};
    const uint32_t no_entry[] = {0x07230203u, 0x00010300u, 0, 2, 0, (2u << 16) | 17u, 1};
    const uint32_t two_entries[] = {0x07230203u, 0x00010300u, 0, 3, 0, (2u << 16) | 17u, 1,
                                    (4u << 16) | 15u, 5, 1, 0x6E69616Du, (4u << 16) | 15u, 5, 2, 0x6E69616Du};
    uint32_t *out = NULL;
    size_t n;
    CHECK(vka_spirv_preserve_inf_nan(bad_magic, 7, VKA_SPIRV_FP32, NULL, &out, &n) == 0 && out == NULL);
    CHECK(vka_spirv_preserve_inf_nan(zero_count, 9, VKA_SPIRV_FP32, NULL, &out, &n) == 0 && out == NULL);
    CHECK(vka_spirv_preserve_inf_nan(past_end, 11, VKA_SPIRV_FP32, NULL, &out, &n) == 0 && out == NULL);
    CHECK(vka_spirv_preserve_inf_nan(no_entry, 7, VKA_SPIRV_FP32, NULL, &out, &n) == 0 && out == NULL);
    CHECK(vka_spirv_preserve_inf_nan(two_entries, 15, VKA_SPIRV_FP32, NULL, &out, &n) == 0 && out == NULL);
}

int main(void)
{
    RUN_TEST(test_every_kernel_matches_its_slots);
    RUN_TEST(test_swapped_slots_are_caught);
    RUN_TEST(test_subgroup_size_only_where_fixed);
    RUN_TEST(test_preserve_inf_nan);
    return test_finish();
}
