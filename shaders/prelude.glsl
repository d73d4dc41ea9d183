/* prelude.glsl — what every kernel opens with, after its #version and extensions: the C/GLSL
 * contract (abi.h), the workgroup size and the specialization constants, declared once here with
 * the ids abi.h gives them. The host sets every one of them for every pipeline (a kernel reads the
 * ones it uses), so the defaults below only make a module valid on its own. */
#include "abi.h"

layout(local_size_x_id = VKA_SPEC_WG_SIZE) in;
layout(constant_id = VKA_SPEC_TILE_A) const uint TILE_A = 1;
layout(constant_id = VKA_SPEC_TILE_B) const uint TILE_B = 1;
layout(constant_id = VKA_SPEC_VEC) const uint VEC = 4;
layout(constant_id = VKA_SPEC_DV) const uint DV = 1;
layout(constant_id = VKA_SPEC_ATTN_MASK) const uint ATTN_MASK = 1;
layout(constant_id = VKA_SPEC_FLAGS) const uint FLAGS = 0;
layout(constant_id = VKA_SPEC_VARIANT) const uint VARIANT = 0;
layout(constant_id = VKA_SPEC_MAT_M) const uint MAT_M = 8;
layout(constant_id = VKA_SPEC_MAT_N) const uint MAT_N = 8;
layout(constant_id = VKA_SPEC_MAT_K) const uint MAT_K = 8;
layout(constant_id = VKA_SPEC_TILE_K) const uint TILE_K = 32;
layout(constant_id = VKA_SPEC_ROW_LANES) const uint ROW_LANES = 1;
layout(constant_id = VKA_SPEC_SUBGROUPS_N) const uint SUBGROUPS_N = 2;
layout(constant_id = VKA_SPEC_ROW_RUN) const uint ROW_RUN = 1;
layout(constant_id = VKA_SPEC_ROW_CLASSES) const uint ROW_CLASSES = 1;
layout(constant_id = VKA_SPEC_ROW_FRAGS) const uint ROW_FRAGS = 1;
layout(constant_id = VKA_SPEC_A_FROM_ACC) const uint A_FROM_ACC = 0;
