/* What vkattn adds to a kernel's SPIR-V before the driver sees it. Today one thing: the float
 * controls' SignedZeroInfNanPreserve execution mode. Without it Vulkan lets a driver assume that no
 * value is an infinity or NaN and ignore the sign of zero, while the kernels mask keys with -inf,
 * test for NaN with isnan and keep a Q4_0 block's -0 scale: a driver that took the licence would
 * compute some rows wrong (the tests pass on lavapipe without it, and passed on an H200). */
#ifndef VKA_SPIRV_PATCH_H
#define VKA_SPIRV_PATCH_H

#include <stddef.h>
#include <stdint.h>

struct vka_faults;

/* Float widths for vka_spirv_preserve_inf_nan. */
#define VKA_SPIRV_FP16 1u
#define VKA_SPIRV_FP32 2u

/* A copy of the compute module `code` (`words` long) that declares SignedZeroInfNanPreserve for
 * each width in `widths` (fp16 only where the module has a 16-bit float type: fp16 arithmetic, or
 * 16-bit storage and the conversions to it, where an overflow makes an infinity), with the
 * capability and, before SPIR-V 1.4, the SPV_KHR_float_controls extension. Returns 1 and sets *out
 * (free()) and *out_words, or *out = NULL where there is nothing to add (no width asked, or all
 * declared already); 0 for a module it cannot read (not SPIR-V, not one entry point, an instruction
 * running past the end); -1 when the allocation fails (through `faults`, which may be NULL). */
int vka_spirv_preserve_inf_nan(const uint32_t *code, size_t words, unsigned widths, struct vka_faults *faults,
                               uint32_t **out, size_t *out_words);

#endif
