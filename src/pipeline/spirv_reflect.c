#include "spirv_reflect.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "pipeline/spirv.h"

/* The few SPIR-V decorations and storage classes this needs (SPIR-V spec, section 3). */
enum {
    DECORATION_BLOCK = 2,
    DECORATION_BUFFER_BLOCK = 3,
    DECORATION_BUILTIN = 11,
    BUILTIN_SUBGROUP_SIZE = 36,
    DECORATION_BINDING = 33,
    DECORATION_DESCRIPTOR_SET = 34,
    STORAGE_UNIFORM_CONSTANT = 0,
    STORAGE_UNIFORM = 2,
    STORAGE_STORAGE_BUFFER = 12,
    DIM_BUFFER = 5,
};

typedef struct spirv_id {
    uint32_t opcode;
    uint32_t type;          /* pointer pointee / sampled image's image / variable's pointer type */
    uint32_t storage_class; /* pointers and variables */
    uint32_t dim, sampled;  /* images */
    uint32_t binding, set;
    unsigned has_binding : 1, block : 1, buffer_block : 1;
    uint32_t name_at; /* word of its OpName string, 0 if none */
} spirv_id;

/* Copies a SPIR-V literal string (nul-terminated, in words) into `dst`, cut to fit. */
static void copy_name(const uint32_t *code, size_t words, uint32_t at, char *dst, size_t cap)
{
    size_t n = 0;
    for (size_t byte = 0; at && at + byte / 4 < words && n + 1 < cap; byte++) {
        char c = (char)((code[at + byte / 4] >> ((byte % 4) * 8)) & 0xFFu);
        if (!c) break;
        dst[n++] = c;
    }
    dst[n] = '\0';
}

static int descriptor_type(const spirv_id *ids, uint32_t bound, const spirv_id *var, VkDescriptorType *out)
{
    if (var->type >= bound) return 0;
    const spirv_id *ptr = &ids[var->type];
    if (ptr->opcode != VKA_SPV_OP_TYPE_POINTER || ptr->type >= bound) return 0;
    const spirv_id *pointee = &ids[ptr->type];
    if (var->storage_class == STORAGE_STORAGE_BUFFER) {
        *out = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        return 1;
    }
    if (var->storage_class == STORAGE_UNIFORM && pointee->opcode == VKA_SPV_OP_TYPE_STRUCT) {
        *out = pointee->buffer_block ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER : VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
        return 1;
    }
    if (var->storage_class == STORAGE_UNIFORM_CONSTANT) {
        const spirv_id *image = pointee;
        if (image->opcode == VKA_SPV_OP_TYPE_SAMPLED_IMAGE && image->type < bound) image = &ids[image->type];
        if (image->opcode == VKA_SPV_OP_TYPE_IMAGE && image->dim == DIM_BUFFER) {
            *out = image->sampled == 2 ? VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
            return 1;
        }
    }
    return 0;
}

int vka_spirv_bindings(const uint32_t *code, size_t words, struct vka_faults *faults, vka_binding_layout *out)
{
    if (!vka_spirv_is_module(code, words)) return 0;
    uint32_t bound = code[3];
    if (bound == 0 || bound > (1u << 22)) return 0;
    spirv_id *ids = vka_calloc(faults, bound, sizeof *ids);
    if (!ids) return -1;

    int ok = 1, reads_subgroup_size = 0;
    for (size_t at = VKA_SPIRV_HEADER_WORDS; at < words && ok;) {
        uint32_t op, count;
        if (!vka_spirv_instruction(code, words, at, &op, &count)) {
            ok = 0;
            break;
        }
        const uint32_t *w = code + at;
        if (op == VKA_SPV_OP_NAME && count >= 3 && w[1] < bound) {
            ids[w[1]].name_at = (uint32_t)(at + 2);
        } else if (op == VKA_SPV_OP_DECORATE && count >= 3 && w[1] < bound) {
            spirv_id *id = &ids[w[1]];
            if (w[2] == DECORATION_BINDING && count >= 4) id->binding = w[3], id->has_binding = 1;
            if (w[2] == DECORATION_DESCRIPTOR_SET && count >= 4) id->set = w[3];
            if (w[2] == DECORATION_BLOCK) id->block = 1;
            if (w[2] == DECORATION_BUFFER_BLOCK) id->buffer_block = 1;
            if (w[2] == DECORATION_BUILTIN && count >= 4 && w[3] == BUILTIN_SUBGROUP_SIZE) reads_subgroup_size = 1;
        } else if (op == VKA_SPV_OP_TYPE_POINTER && count >= 4 && w[1] < bound) {
            ids[w[1]].opcode = op, ids[w[1]].storage_class = w[2], ids[w[1]].type = w[3];
        } else if (op == VKA_SPV_OP_VARIABLE && count >= 4 && w[2] < bound) {
            ids[w[2]].opcode = op, ids[w[2]].type = w[1], ids[w[2]].storage_class = w[3];
        } else if (op == VKA_SPV_OP_TYPE_IMAGE && count >= 8 && w[1] < bound) {
            ids[w[1]].opcode = op, ids[w[1]].dim = w[3], ids[w[1]].sampled = w[7];
        } else if (op == VKA_SPV_OP_TYPE_SAMPLED_IMAGE && count >= 3 && w[1] < bound) {
            ids[w[1]].opcode = op, ids[w[1]].type = w[2];
        } else if (op == VKA_SPV_OP_TYPE_STRUCT && count >= 2 && w[1] < bound) {
            ids[w[1]].opcode = op;
        }
        at += count;
    }

    vka_binding_layout layout = {.reads_subgroup_size = reads_subgroup_size};
    uint32_t seen = 0;
    for (uint32_t i = 0; i < bound && ok; i++) {
        const spirv_id *var = &ids[i];
        if (var->opcode != VKA_SPV_OP_VARIABLE || !var->has_binding) continue;
        VkDescriptorType type;
        if (var->set != 0 || var->binding >= VKA_MAX_BINDINGS || !descriptor_type(ids, bound, var, &type)) {
            ok = 0;
            break;
        }
        /* The variable's name, or for an anonymous block variable its block's. */
        uint32_t name_at = var->name_at;
        char name[VKA_BINDING_NAME_MAX];
        copy_name(code, words, name_at, name, sizeof name);
        if (!name[0] && var->type < bound && ids[var->type].type < bound)
            copy_name(code, words, ids[ids[var->type].type].name_at, name, sizeof name);
        /* Several variables may alias one binding (two views of one buffer); they must agree. */
        if ((seen >> var->binding) & 1u) {
            ok = layout.types[var->binding] == type;
            memcpy(layout.names[var->binding][1], name, sizeof name);
            continue;
        }
        memcpy(layout.names[var->binding][0], name, sizeof name);
        seen |= 1u << var->binding;
        layout.types[var->binding] = type;
        if (var->binding + 1 > layout.count) layout.count = var->binding + 1;
    }
    free(ids);
    if (!ok || seen != (layout.count ? (1u << layout.count) - 1 : 0)) return 0;
    *out = layout;
    return 1;
}
