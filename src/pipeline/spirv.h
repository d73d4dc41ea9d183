/* SPIR-V's binary layout as vkattn's readers of its own modules see it (spirv_reflect.c reads a
 * kernel's bindings, spirv_patch.c adds the float controls): the header, the instruction words and
 * the opcodes they use (SPIR-V spec, section 3). */
#ifndef VKA_SPIRV_H
#define VKA_SPIRV_H

#include <stddef.h>
#include <stdint.h>

#define VKA_SPIRV_MAGIC 0x07230203u
#define VKA_SPIRV_HEADER_WORDS 5u /* magic, version, generator, id bound, schema */

enum {
    VKA_SPV_OP_NAME = 5,
    VKA_SPV_OP_EXTENSION = 10,
    VKA_SPV_OP_ENTRY_POINT = 15,
    VKA_SPV_OP_EXECUTION_MODE = 16,
    VKA_SPV_OP_CAPABILITY = 17,
    VKA_SPV_OP_TYPE_FLOAT = 22,
    VKA_SPV_OP_TYPE_IMAGE = 25,
    VKA_SPV_OP_TYPE_SAMPLED_IMAGE = 27,
    VKA_SPV_OP_TYPE_STRUCT = 30,
    VKA_SPV_OP_TYPE_POINTER = 32,
    VKA_SPV_OP_FUNCTION = 54,
    VKA_SPV_OP_VARIABLE = 59,
    VKA_SPV_OP_DECORATE = 71,
};

/* Whether `code` (`words` long) starts with a SPIR-V header. */
static inline int vka_spirv_is_module(const uint32_t *code, size_t words)
{
    return words >= VKA_SPIRV_HEADER_WORDS && code[0] == VKA_SPIRV_MAGIC;
}

/* The instruction at word `at` (< words): sets its opcode and word count and returns 1, or returns 0
 * where it is malformed (a count of 0, or one running past the module's end). */
static inline int vka_spirv_instruction(const uint32_t *code, size_t words, size_t at, uint32_t *op,
                                        uint32_t *count)
{
    *count = code[at] >> 16;
    *op = code[at] & 0xFFFFu;
    return *count != 0 && *count <= words - at;
}

#endif
