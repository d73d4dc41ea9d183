/* Every kernel vkattn dispatches, one row each. The rest is made from this list: the shader table
 * of shaders/CMakeLists.txt (which reads these rows), the enum and registry (kernels.h), the
 * push-constant checks (kernels.c), and the plan's table of loop models and descriptions
 * (src/plan/steps.c). Adding a kernel: its row here, its .comp in shaders/, its step builder in
 * src/plan/ with the row's two functions beside it.
 *
 *   VKA_KERNEL(id, spirv, source, defines, f16_out, push, slots, trips, describe)
 *   id        the enum value VKA_KERNEL_<id>
 *   spirv     the SPIR-V module's name; with f16_out 1 a second build, <spirv>_f16_out, defines
 *             OUT_F16 (it writes fp16 activations, or fp16 KV pools)
 *   source    its .comp in shaders/
 *   defines   one word its builds also define, or - for none. COOPMAT marks a cooperative-matrix
 *             kernel: compiled by the capable glslang (VKATTN_GLSLANG_COOPMAT) for Vulkan 1.3 and
 *             left out of builds without one; its pipelines require full subgroups of the device's
 *             subgroup size, and it runs only where the context enabled VK_KHR_cooperative_matrix;
 *             COOPMAT2 the same, on VK_NV_cooperative_matrix2's reductions, conversions and
 *             per-element operations too (where the context enabled them)
 *   push      its push-constant struct (abi.h)
 *   slots     the GLSL name at each binding slot, in abi.h's slot order (checked against the SPIR-V
 *             when the pipeline is made, so swapped slots are caught)
 *   trips     its loop model, uint64_t trips(const vka_step *), beside its step builder
 *   describe  its part of the plan as text, void describe(vka_text *, const vka_step *), ditto
 *
 * An includer defines VKA_KERNEL(...) to what it makes of a row, includes this file, and undefines
 * it. One row per line, no line continued: CMake reads the rows with a regular expression. */
/* clang-format off */
VKA_KERNEL(MATMUL,        matmul,           matmul.comp,        -,         1, vka_matmul_push,  "A B Bias C_", vka_matmul_trips, vka_matmul_describe)
VKA_KERNEL(MATMUL_SM,     matmul_sm,        matmul.comp,        SHARED_TILES, 1, vka_matmul_push,  "A B Bias C_", vka_matmul_sm_trips, vka_matmul_sm_describe)
VKA_KERNEL(MATMUL_VEC,    matmul_vec,       matmul.comp,        MATVEC,    1, vka_matmul_push,  "A B Bias C_", vka_matmul_vec_trips, vka_matmul_vec_describe)
VKA_KERNEL(MATMUL_VEC_STORAGE, matmul_vec_storage, matmul.comp, MATVEC_STORAGE, 1, vka_matmul_push, "A_ B_ Bias C_", vka_matmul_vec_trips, vka_matmul_vec_describe)
VKA_KERNEL(MATMUL_CM,     matmul_cm,        matmul_cm.comp,     COOPMAT,   1, vka_matmul_push,  "A_ B_ Bias C_", vka_matmul_cm_trips, vka_matmul_cm_describe)
VKA_KERNEL(SCORES,        attn_scores,      attn_scores.comp,   -,         0, vka_scores_push,  "Q K P_ Kpm_ ValidLens_ MaskBytes_ HeadTerms_", vka_scores_trips, vka_scores_describe)
VKA_KERNEL(SOFTMAX,       softmax,          softmax.comp,       -,         0, vka_softmax_push, "P_ Stats_ HeadTerms_", vka_softmax_trips, vka_softmax_describe)
VKA_KERNEL(PV,            attn_pv,          attn_pv.comp,       -,         1, vka_pv_push,      "P V Ctx_ Acc_", vka_pv_trips, vka_pv_describe)
VKA_KERNEL(FUSED,         attn_fused,       attn_fused.comp,    -,         1, vka_fused_push,   "Q K V Ctx_ Kpm_ ValidLens_ MaskBytes_ Lse_ StateO_ StateLse_ HeadTerms_", vka_fused_trips, vka_fused_describe)
VKA_KERNEL(FUSED_SHARED,  attn_fused_shared, attn_fused.comp,   SHARED_KV, 1, vka_fused_push,   "Q K V Ctx_ Kpm_ ValidLens_ MaskBytes_ Lse_ StateO_ StateLse_ HeadTerms_", vka_fused_trips, vka_fused_describe)
VKA_KERNEL(FUSED_CM,      attn_cm,          attn_cm.comp,       COOPMAT,   1, vka_fused_push,   "Q_ K_ V_ Ctx_ Kpm_ ValidLens_ MaskBytes_ Lse_ StateO_ StateLse_ HeadTerms_", vka_fused_cm_trips, vka_fused_cm_describe)
VKA_KERNEL(FUSED_CM2,     attn_cm2,         attn_cm.comp,       COOPMAT2,  1, vka_fused_push,   "Q_ K_ V_ Ctx_ Kpm_ ValidLens_ MaskBytes_ Lse_ StateO_ StateLse_ HeadTerms_", vka_fused_cm_trips, vka_fused_cm_describe)
VKA_KERNEL(COOPMAT_LAYOUT, coopmat_layout, coopmat_layout.comp, COOPMAT, 0, vka_layout_push, "Out_", vka_untimed_trips, vka_untimed_describe)
VKA_KERNEL(MERGE,         attn_merge,       attn_merge.comp,    -,         1, vka_merge_push,   "StateO_ StateLse_ Ctx_ Lse_ Meta_", vka_merge_trips, vka_merge_describe)
VKA_KERNEL(AVERAGE_HEADS, average_heads,    average_heads.comp, -,         0, vka_average_push, "P_ W_", vka_average_trips, vka_average_describe)
VKA_KERNEL(ROPE,          rope,             rope.comp,          -,         1, vka_rope_push,    "X_ Freq Meta_ NormW_", vka_rope_trips, vka_rope_describe)
VKA_KERNEL(PAGED,         attn_paged,       attn_paged.comp,    -,         1, vka_paged_push,   "Q K V Ctx_ Meta_ StateO_ StateLse_ HeadTerms_", vka_paged_trips, vka_paged_describe)
VKA_KERNEL(PAGED_QUANT,   attn_paged_quant, attn_paged.comp,    KV_QUANT,  1, vka_paged_push,   "Q K V Ctx_ Meta_ StateO_ StateLse_ HeadTerms_", vka_paged_trips, vka_paged_describe)
VKA_KERNEL(PAGED_LANES,   attn_paged_lanes, attn_paged.comp,    LANES,     1, vka_paged_push,   "Q K V Ctx_ Meta_ StateO_ StateLse_ HeadTerms_", vka_paged_lanes_trips, vka_paged_describe)
VKA_KERNEL(PAGED_LANES_STORAGE, attn_paged_lanes_storage, attn_paged.comp, KV_STORAGE_LANES, 1, vka_paged_push, "Q K_ V_ Ctx_ Meta_ StateO_ StateLse_ HeadTerms_", vka_paged_lanes_trips, vka_paged_describe)
VKA_KERNEL(PAGED_QUANT_LANES, attn_paged_quant_lanes, attn_paged.comp, KV_QUANT_LANES, 1, vka_paged_push, "Q K V Ctx_ Meta_ StateO_ StateLse_ HeadTerms_", vka_paged_lanes_trips, vka_paged_describe)
VKA_KERNEL(PAGED_QUANT_LANES_STORAGE, attn_paged_quant_lanes_storage, attn_paged.comp, KV_QUANT_STORAGE_LANES, 1, vka_paged_push, "Q K_ V_ Ctx_ Meta_ StateO_ StateLse_ HeadTerms_", vka_paged_lanes_trips, vka_paged_describe)
VKA_KERNEL(APPEND,        kv_append,        kv_append.comp,     -,         1, vka_append_push,  "Src Meta_ KPool_ VPool_", vka_append_trips, vka_append_describe)
VKA_KERNEL(APPEND_QUANT,  kv_append_quant,  kv_append.comp,     KV_QUANT,  0, vka_append_push,  "Src Meta_ KPool_ VPool_", vka_append_trips, vka_append_describe)
VKA_KERNEL(PEAK_FMA_F32,  peak_fma_f32,     peak_fma.comp,      -,         0, vka_peak_push,    "Out_", vka_untimed_trips, vka_untimed_describe)
VKA_KERNEL(PEAK_FMA_F16,  peak_fma_f16,     peak_fma.comp,      PEAK_FP16, 0, vka_peak_push,    "Out_", vka_untimed_trips, vka_untimed_describe)
VKA_KERNEL(PEAK_COPY,     peak_copy,        peak_copy.comp,     -,         0, vka_peak_push,    "Src_ Dst_", vka_untimed_trips, vka_untimed_describe)
/* clang-format on */
