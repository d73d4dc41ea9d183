#include "spirv_patch.h"

#include <string.h>

#include "common/alloc.h"
#include "pipeline/spirv.h"

/* The SPIR-V enumerants this needs (SPV_KHR_float_controls). */
enum {
    CAPABILITY_PRESERVE = 4466,   /* SignedZeroInfNanPreserve */
    MODE_PRESERVE = 4461,         /* SignedZeroInfNanPreserve, with the target width */
    VERSION_FLOAT_CONTROLS = 0x00010400u, /* SPIR-V 1.4 has float controls without the extension */
};

static const char float_controls[] = "SPV_KHR_float_controls";
#define STRING_WORDS ((sizeof float_controls + 3) / 4)
#define EXTENSION_WORDS (1 + STRING_WORDS) /* the opcode word, then the string */

/* The extension's name as SPIR-V words: nul-padded, the first character in a word's low byte,
 * whatever the host's byte order. */
static void name_words(uint32_t out[STRING_WORDS])
{
    memset(out, 0, STRING_WORDS * sizeof *out);
    for (size_t i = 0; i < sizeof float_controls; i++)
        out[i / 4] |= (uint32_t)(unsigned char)float_controls[i] << (i % 4 * 8);
}

int vka_spirv_preserve_inf_nan(const uint32_t *code, size_t words, unsigned widths, struct vka_faults *faults,
                               uint32_t **out, size_t *out_words)
{
    *out = NULL;
    *out_words = 0;
    if (!vka_spirv_is_module(code, words)) return 0;
    uint32_t name[STRING_WORDS];
    name_words(name);
    size_t caps_end = 0, entry_end = 0;
    uint32_t entry = 0, entries = 0;
    int float16 = 0, capability = 0, extension = 0;
    unsigned declared = 0;
    for (size_t i = VKA_SPIRV_HEADER_WORDS; i < words;) {
        uint32_t op, count;
        if (!vka_spirv_instruction(code, words, i, &op, &count)) return 0;
        if (op == VKA_SPV_OP_FUNCTION) break;
        if (op == VKA_SPV_OP_CAPABILITY && count == 2) {
            caps_end = i + count;
            capability |= code[i + 1] == CAPABILITY_PRESERVE;
        }
        float16 |= op == VKA_SPV_OP_TYPE_FLOAT && count >= 3 && code[i + 2] == 16;
        if (op == VKA_SPV_OP_EXTENSION && count == EXTENSION_WORDS)
            extension |= memcmp(&code[i + 1], name, sizeof name) == 0;
        if (op == VKA_SPV_OP_ENTRY_POINT && count >= 3) entry = code[i + 2], entry_end = i + count, entries++;
        if (op == VKA_SPV_OP_EXECUTION_MODE && count == 4 && code[i + 2] == MODE_PRESERVE)
            declared |= code[i + 3] == 32 ? VKA_SPIRV_FP32 : code[i + 3] == 16 ? VKA_SPIRV_FP16 : 0;
        i += count;
    }
    if (entries != 1 || !caps_end || caps_end > entry_end) return 0; /* a kernel is one entry point */
    if (!float16) widths &= ~VKA_SPIRV_FP16;
    widths &= ~declared;
    if (!widths) return 1;

    const int add_extension = code[1] < VERSION_FLOAT_CONTROLS && !extension;
    const size_t added = (capability ? 0 : 2) + (add_extension ? EXTENSION_WORDS : 0) +
                         4 * (size_t)(((widths & VKA_SPIRV_FP32) != 0) + ((widths & VKA_SPIRV_FP16) != 0));
    uint32_t *patched = vka_malloc(faults, (words + added) * sizeof *patched);
    if (!patched) return -1;
    memcpy(patched, code, caps_end * sizeof *code); /* the header and capabilities */
    size_t n = caps_end;
    if (!capability) patched[n++] = 2u << 16 | VKA_SPV_OP_CAPABILITY, patched[n++] = CAPABILITY_PRESERVE;
    if (add_extension) {
        patched[n++] = (uint32_t)EXTENSION_WORDS << 16 | VKA_SPV_OP_EXTENSION;
        memcpy(&patched[n], name, sizeof name);
        n += STRING_WORDS;
    }
    memcpy(&patched[n], &code[caps_end], (entry_end - caps_end) * sizeof *code); /* up to the entry point's end */
    n += entry_end - caps_end;
    for (unsigned width = 16; width <= 32; width += 16) {
        if (!(widths & (width == 32 ? VKA_SPIRV_FP32 : VKA_SPIRV_FP16))) continue;
        patched[n++] = 4u << 16 | VKA_SPV_OP_EXECUTION_MODE;
        patched[n++] = entry;
        patched[n++] = MODE_PRESERVE;
        patched[n++] = width;
    }
    memcpy(&patched[n], &code[entry_end], (words - entry_end) * sizeof *code);
    n += words - entry_end;
    *out = patched;
    *out_words = n;
    return 1;
}
