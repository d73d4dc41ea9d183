/* The shared memory a compute module declares, read from its SPIR-V with its specialization
 * constants set: the plan's formulas for a kernel's shared memory (vka_fused_cm_shared_bytes and
 * the like) checked against what the shader itself declares, not against themselves. A small
 * evaluator of the constant expressions that array lengths are made of (OpSpecConstantOp's integer
 * and logical operations, as glslang emits them); test code, not the library's. */
#ifndef VKATTN_SPIRV_SHARED_H
#define VKATTN_SPIRV_SHARED_H

#include <stdint.h>
#include <stdlib.h>

#define SPIRV_SHARED_UNKNOWN UINT64_MAX

/* Evaluates one OpSpecConstantOp operation on known operand values; returns 0 for an operation
 * this evaluator does not take. */
static int spirv_shared_op(uint32_t op, const uint64_t *a, uint32_t n, uint64_t *out)
{
    const uint32_t x = (uint32_t)a[0], y = n > 1 ? (uint32_t)a[1] : 0;
    switch (op) {
    case 128: *out = (uint32_t)(x + y); return 1;                 /* IAdd */
    case 130: *out = (uint32_t)(x - y); return 1;                 /* ISub */
    case 132: *out = (uint32_t)(x * y); return 1;                 /* IMul */
    case 134: if (!y) return 0; *out = x / y; return 1;           /* UDiv */
    case 137: if (!y) return 0; *out = x % y; return 1;           /* UMod */
    case 194: *out = y < 32 ? x >> y : 0; return 1;               /* ShiftRightLogical */
    case 196: *out = y < 32 ? (uint32_t)(x << y) : 0; return 1;   /* ShiftLeftLogical */
    case 197: *out = x | y; return 1;                             /* BitwiseOr */
    case 198: *out = x ^ y; return 1;                             /* BitwiseXor */
    case 199: *out = x & y; return 1;                             /* BitwiseAnd */
    case 164: *out = (x != 0) == (y != 0); return 1;              /* LogicalEqual */
    case 165: *out = (x != 0) != (y != 0); return 1;              /* LogicalNotEqual */
    case 166: *out = x || y; return 1;                            /* LogicalOr */
    case 167: *out = x && y; return 1;                            /* LogicalAnd */
    case 168: *out = !x; return 1;                                /* LogicalNot */
    case 169: if (n < 3) return 0; *out = x ? a[1] : a[2]; return 1; /* Select */
    case 170: *out = x == y; return 1;                            /* IEqual */
    case 171: *out = x != y; return 1;                            /* INotEqual */
    case 172: *out = x > y; return 1;                             /* UGreaterThan */
    case 174: *out = x >= y; return 1;                            /* UGreaterThanEqual */
    case 176: *out = x < y; return 1;                             /* ULessThan */
    case 178: *out = x <= y; return 1;                            /* ULessThanEqual */
    default: return 0;
    }
}

/* The bytes of the module's Workgroup variables (no padding between them: what NVIDIA's driver
 * reported for attn_cm and matmul_cm), specialization constant i set to spec[i] (i < spec_count,
 * the others at their defaults). SPIRV_SHARED_UNKNOWN where a variable's size rests on something
 * the evaluator does not take, or the module is malformed. */
static uint64_t spirv_shared_bytes(const uint32_t *code, size_t words, const uint32_t *spec, uint32_t spec_count)
{
    if (words < 5 || code[0] != 0x07230203u) return SPIRV_SHARED_UNKNOWN;
    const uint32_t bound = code[3];
    uint64_t *value = malloc(sizeof(uint64_t) * bound * 2); /* constants' values; then types' sizes */
    uint32_t *spec_id = malloc(sizeof(uint32_t) * bound);
    uint32_t *pointee = calloc(bound, sizeof(uint32_t));    /* a Workgroup pointer type's pointee */
    uint32_t *composite = calloc(bound, sizeof(uint32_t));  /* a composite constant's first word */
    uint64_t total = 0;
    if (!value || !spec_id || !pointee || !composite) total = SPIRV_SHARED_UNKNOWN;
    for (uint32_t i = 0; total != SPIRV_SHARED_UNKNOWN && i < bound; i++)
        value[i] = value[bound + i] = SPIRV_SHARED_UNKNOWN, spec_id[i] = UINT32_MAX;
    uint64_t *size = value ? value + bound : NULL;
    /* two passes: the SpecId decorations, then the constants, types and variables in order */
    for (int pass = 0; pass < 2 && total != SPIRV_SHARED_UNKNOWN; pass++) {
        for (size_t at = 5; at < words;) {
            const uint32_t op = code[at] & 0xffff, n = code[at] >> 16;
            if (n == 0 || at + n > words) {
                total = SPIRV_SHARED_UNKNOWN;
                break;
            }
            const uint32_t *w = code + at;
#define ID_OK(x) ((x) < bound)
            if (pass == 0) {
                if (op == 71 && n >= 4 && w[2] == 1 && ID_OK(w[1])) spec_id[w[1]] = w[3]; /* OpDecorate SpecId */
            } else if ((op == 43 || op == 50) && n >= 4 && ID_OK(w[2])) { /* OpConstant, OpSpecConstant */
                value[w[2]] = w[3];
                if (op == 50 && spec_id[w[2]] < spec_count) value[w[2]] = spec[spec_id[w[2]]];
            } else if ((op == 41 || op == 42 || op == 48 || op == 49) && n >= 3 && ID_OK(w[2])) { /* booleans */
                value[w[2]] = op == 41 || op == 48;
                if ((op == 48 || op == 49) && spec_id[w[2]] < spec_count) value[w[2]] = spec[spec_id[w[2]]] != 0;
            } else if ((op == 44 || op == 51) && n >= 4 && ID_OK(w[2])) { /* composites */
                composite[w[2]] = (uint32_t)(at + 3);
            } else if (op == 52 && n >= 5 && ID_OK(w[2])) { /* OpSpecConstantOp */
                uint64_t a[3] = {0};
                const uint32_t operands = n - 4;
                int known = operands >= 1 && operands <= 3;
                if (w[3] == 81) { /* CompositeExtract: a composite's component, by a literal */
                    uint32_t c = w[4];
                    known = n == 6 && ID_OK(c) && composite[c] && ID_OK(code[composite[c] + w[5]]);
                    if (known) value[w[2]] = value[code[composite[c] + w[5]]];
                } else {
                    for (uint32_t k = 0; known && k < operands; k++)
                        known = ID_OK(w[4 + k]) && (a[k] = value[w[4 + k]]) != SPIRV_SHARED_UNKNOWN;
                    if (known) known = spirv_shared_op(w[3], a, operands, &value[w[2]]);
                }
            } else if ((op == 21 || op == 22) && n >= 3 && ID_OK(w[1])) { /* OpTypeInt, OpTypeFloat */
                size[w[1]] = w[2] / 8;
            } else if (op == 20 && ID_OK(w[1])) { /* OpTypeBool: not storable in memory; never shared here */
                size[w[1]] = SPIRV_SHARED_UNKNOWN;
            } else if (op == 23 && n >= 4 && ID_OK(w[1]) && ID_OK(w[2])) { /* OpTypeVector */
                size[w[1]] = size[w[2]] == SPIRV_SHARED_UNKNOWN ? SPIRV_SHARED_UNKNOWN : size[w[2]] * w[3];
            } else if (op == 28 && n >= 4 && ID_OK(w[1]) && ID_OK(w[2]) && ID_OK(w[3])) { /* OpTypeArray */
                size[w[1]] = size[w[2]] == SPIRV_SHARED_UNKNOWN || value[w[3]] == SPIRV_SHARED_UNKNOWN
                                 ? SPIRV_SHARED_UNKNOWN
                                 : size[w[2]] * value[w[3]];
            } else if (op == 32 && n >= 4 && ID_OK(w[1]) && w[2] == 4) { /* OpTypePointer Workgroup */
                pointee[w[1]] = w[3];
            } else if (op == 59 && n >= 4 && w[3] == 4 && ID_OK(w[1])) { /* OpVariable ... Workgroup */
                const uint32_t t = pointee[w[1]];
                if (!ID_OK(t) || !t || size[t] == SPIRV_SHARED_UNKNOWN) {
                    total = SPIRV_SHARED_UNKNOWN;
                    break;
                }
                total += size[t];
            }
#undef ID_OK
            at += n;
        }
    }
    free(value);
    free(spec_id);
    free(pointee);
    free(composite);
    return total;
}

#endif
