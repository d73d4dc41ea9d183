/* attn_cm.comp, the cooperative-matrix fused attention, through the public API under the coopmat
 * tuning, every layer with precision VKATTN_PRECISION_F16 (each plan must name attn_cm):
 *
 * 1. A grid against the CPU reference: head dims 64, 80, 96, 128 and 256 (32 in rows that try a
 *    tile's shape: quicker to compile), odd L and S (several query tiles and key blocks, partial
 *    ones), one query, one key, f32 and f16 storage, every mask
 *    (key padding, valid lengths per batch and per query, bool and float attn_mask, shared and per
 *    head, causal top-left and end-aligned, rows with no visible key), grouped-query and multi-query
 *    heads, the variants (window, softcap, ALiBi, sinks), the extra keys (bias_kv, zero_attn), NaN
 *    in every key and value row no query may see (masked keys never contribute), and lowered loop
 *    budgets that split the keys into parts merged by attn_merge (and, with the states' budget
 *    lowered, parts visited in chunks that carry the softmax state). Q, K, V and the
 *    probabilities are rounded to fp16 on this path (and the projections' operands, matmul_cm), so
 *    the fp16 tolerances hold: output NMSE <= 2e-6 and max-abs <= 1e-2 x max(1, max|ref|), lse
 *    max-abs <= 1e-2 x max(1, max|ref|); non-finite values must agree (a row with no visible key is
 *    zero on both sides, lse -inf).
 * 2. attn_cm against attn_fused (the same context, the layer's precision VKATTN_PRECISION_F32) on
 *    the same fp16 inputs: identity projections without biases and inputs that are fp16 values, so
 *    both kernels see the same Q, K and V; B x L <= 8 rows keep the output projection on the fp32
 *    skinny matmul, so the outputs are the kernels' own (f32 storage). What differs is the rounding
 *    of the probabilities to fp16 (2^-11 relative, weights of values in [-1, 1]) and the order of
 *    the sums: max-abs <= 1e-3 and lse max-abs <= 1e-4 (measured: see the printout). One f16-storage
 *    row with more queries compares fp16 outputs, where an output ulp (4.9e-4 relative) is the bound.
 * 3. VKATTN_PRECISION_F32 and no_cooperative_matrix leave no _cm kernel in the plan.
 *
 * Every row runs on the KHR build (attn_cm, every device's default). Where the context enabled
 * VK_NV_cooperative_matrix2's reductions, conversions and per-element operations (VKATTN_COOPMAT2=1,
 * on a device that has them: Mesa 26 lavapipe does), the plans name attn_cm2, the experimental
 * build that keeps the softmax in the matrices; the "cm2" run takes the rows marked cm2 there: what
 * it does its own way (the softmax with every mask, NaN, the variants, its key blocks, key parts and
 * chunks, the head dims 64, 80 and 128, its self-test failing). The staging, loads and tile settings
 * it shares with the KHR build (one source) are tried on the KHR build; each LLVM build of the
 * experimental one costs lavapipe 15-135 s on a cold cache.
 * On a device without cooperative matrices the test reports itself skipped (exit 77) with the
 * reason. Mesa 26 lavapipe runs the matrices on the CPU at a few GFLOP/s and compiles each pipeline
 * with LLVM: the shapes are small, and the grid shares pipelines where it can. */
#include "api/context.h"
#include "format/half.h"
#include "plan/attention.h"
#include "gpu_test.h"

#define SKIP 77

typedef struct cm_case {
    const char *name;
    uint32_t B, L, S;  /* S = 0: self-attention */
    uint32_t H, H_kv, D; /* H_kv 0 = H */
    int f16;
    int causal, key_padding;
    int lens;          /* 1 per batch, 2 per query */
    int mask;          /* 1 bool, 2 float (random terms); 3 causal aligned at the end as a float mask,
                          but query 0 sees the first and the last key (terms -1), and with mask_window keys at or
                          past that many before a query's position hidden too; 4 bool: packed documents, causal within, cut
                          anew per head with mask_per_head */
    int mask_per_head;
    uint32_t mask_window;
    int fully_masked;  /* a query row and a batch item that see no key */
    uint32_t window;
    float softcap;
    int alibi, sinks, bias_kv, zero_attn;
    int nan_masked;    /* NaN in every key and value row no query may see (padding, past the lengths) */
    int nan_seen;      /* NaN in batch item 0's value row S / 2 (2: S / 4; cross-attention: S > 0), which
                          later rows see: those rows NaN on both sides */
    int far_half;      /* a float attn_mask of -200 on the first half of the keys: their parts' weights
                          underflow in the merge (exp(-200) is 0 in fp32) */
    uint32_t budget;   /* the context's loop budget: 0 = the device's */
    uint32_t state_kib; /* the fused states' budget (internal): small enough for chunks; 0 = the default */
    uint32_t binding_kib; /* the storage bindings' range (internal): Q, K and V bound in slices; 0 = the device's */
    int attn_cm_fault; /* attn_cm's self-test made to see a wrong element (1) or a failed call (2) */
    int attn_cm2_fault; /* the same for attn_cm2's alone: the context falls back to attn_cm */
    int reg_fault;     /* the same for attn_cm's softmax-in-registers build alone: it falls back to the
                          shared-memory softmax */
    int reg_p_fault;   /* the same for its build with P in registers too: it falls back to P through
                          shared memory, the softmax still in registers */
    int rising;        /* key row j scaled by 1 + 60 j / S: each row's max keeps rising, so O is
                          rescaled by large factors block after block */
    int cm2;           /* also in the "cm2" run on attn_cm2 (every row runs on the KHR build) */
    int wide_blocks;   /* the plan must take blocks of more than 32 keys: 1 in the KHR build, 2 in both */
    uint32_t row_frags; /* the KHR build's row matrices per subgroup the plan must take (attn_cm2: 1) */
    const char *tuning; /* a tuning string, whose tile the plan must take (NULL: "coopmat") */
} cm_case;

/* Rows share pipelines where they can (a pipeline is a specialization: head dim, fp16 output,
 * variants, attn_mask code, state flags), because lavapipe compiles each with LLVM. */
static const cm_case grid[] = {
    {"D64", 2, 37, 45, 2, 0, 64, .cm2 = 1},
    {"D80_causal_self", 1, 33, 0, 2, 0, 80, .causal = 1, .cm2 = 1},
    {"D96_f16", 1, 19, 50, 1, 0, 96, .f16 = 1, .tuning = "coopmat:cm_attn_wide_loads=1"},
    {"D128_causal", 1, 40, 0, 2, 0, 128, .causal = 1, .cm2 = 1},
    {"D256", 1, 17, 33, 1, 0, 256},
    {"L1_S64", 2, 1, 64, 2, 0, 64, .cm2 = 1},
    {"rising_causal", 1, 40, 120, 2, 0, 64, .causal = 1, .rising = 1, .cm2 = 1},
    /* attn_cm's self-test made to fail: attn_fused runs the attention, matmul_cm the projections */
    {"self_test_wrong", 1, 9, 20, 2, 0, 64, .causal = 1, .attn_cm_fault = VKA_FAULT_COOPMAT_WRONG},
    {"self_test_fail", 1, 9, 20, 2, 0, 64, .causal = 1, .attn_cm_fault = VKA_FAULT_COOPMAT_FAIL},
    {"self_test_cm2_wrong", 1, 9, 20, 2, 0, 64, .causal = 1, .attn_cm2_fault = VKA_FAULT_COOPMAT_WRONG, .cm2 = 1},
    {"self_test_reg_wrong", 1, 9, 20, 2, 0, 64, .causal = 1, .reg_fault = VKA_FAULT_COOPMAT_WRONG},
    {"self_test_reg_fail", 1, 9, 20, 2, 0, 64, .causal = 1, .reg_fault = VKA_FAULT_COOPMAT_FAIL},
    {"self_test_reg_p_wrong", 1, 9, 20, 2, 0, 64, .causal = 1, .reg_p_fault = VKA_FAULT_COOPMAT_WRONG},
    {"self_test_reg_p_fail", 1, 9, 20, 2, 0, 64, .causal = 1, .reg_p_fault = VKA_FAULT_COOPMAT_FAIL},
    {"L45_S1", 1, 45, 1, 2, 0, 64},
    {"causal_L_lt_S", 2, 17, 45, 2, 0, 64, .causal = 1, .cm2 = 1},
    {"causal_L_gt_S", 1, 45, 17, 2, 0, 64, .causal = 1, .cm2 = 1},
    {"gqa_causal", 1, 37, 0, 4, 2, 64, .causal = 1, .cm2 = 1},
    /* a value row that later rows see holds NaN: those rows are NaN (attn_cm: through its bad-key
     * word), the others match */
    {"nan_seen_causal", 2, 40, 45, 2, 0, 64, .causal = 1, .nan_seen = 1, .cm2 = 1},
    {"mqa_f16_padding_nan", 2, 21, 29, 4, 1, 64, .f16 = 1, .key_padding = 1, .nan_masked = 1, .cm2 = 1},
    {"bool_per_head_lens", 2, 19, 41, 2, 0, 64, .mask = 1, .mask_per_head = 1, .lens = 2, .key_padding = 1,
     .fully_masked = 1, .cm2 = 1},
    {"float_mask_lens_nan", 2, 23, 35, 2, 0, 64, .mask = 2, .lens = 1, .fully_masked = 1, .nan_masked = 1, .cm2 = 1},
    /* every variant at once (one pipeline): causal aligned at the end (a layer with positions),
     * L < S, a window, softcap, ALiBi, sinks; then self-attention where batch item 0 sees no key
     * (its rows: the sink only) */
    {"variants_end_aligned", 2, 17, 45, 2, 0, 64, .causal = 1, .window = 20, .softcap = 5.0f, .alibi = 1,
     .sinks = 1, .cm2 = 1},
    {"variants_self_lens", 2, 37, 0, 2, 0, 64, .causal = 1, .window = 9, .softcap = 5.0f, .alibi = 1, .sinks = 1,
     .lens = 1, .fully_masked = 1, .cm2 = 1},
    /* 1250 blocks in one workgroup: a loop hidden in the driver's matrix code (per multiply-add,
     * 32 of them a block) would run past lavapipe's 65535 trips and end early */
    {"long_S20000", 1, 3, 20000, 1, 0, 64, .cm2 = 1},
    {"extra_keys_nan", 2, 17, 23, 2, 0, 64, .bias_kv = 1, .zero_attn = 1, .key_padding = 1, .nan_masked = 1, .cm2 = 1},
    /* lowered loop budgets: at most (budget - 2) blocks of 2 MAT_N keys per workgroup (16 on
     * lavapipe, 32 with 16 x 16 x 16 matrices), so key parts merged by attn_merge (whose loops take
     * 2 (parts + 1) trips of the budget) */
    {"budget_parts", 1, 21, 600, 2, 0, 64, .causal = 1, .budget = 12, .cm2 = 1},
    {"budget_parts_sinks", 1, 9, 300, 2, 1, 64, .sinks = 1, .key_padding = 1, .budget = 10},
    {"budget_extra_keys", 2, 5, 300, 2, 0, 64, .bias_kv = 1, .zero_attn = 1, .key_padding = 1, .budget = 10},
    /* 16 KiB of states hold 2 parts of 32 rows: each part in chunks of 160 keys, the state carried
     * (with 64-row tiles, a GPU's, one part in chunks: no merge) */
    /* a state budget of one part: one query tile's state (up to 128 rows, fewer where the layer has
     * fewer: 84 x 64 floats = 21 KiB) fits once, so the keys go in chunks carrying it (16 KiB,
     * enough for lavapipe's 64-row tile, refused the H100's 128 rows) */
    {"budget_chunks", 2, 21, 600, 2, 0, 64, .causal = 1, .key_padding = 1, .budget = 12, .state_kib = 24, .cm2 = 1},
    /* a tuning string's tile: 2 subgroups of query rows, blocks of one matrix of keys, one
     * invocation per row in the shared-memory softmax (where the subgroup has no more lanes than
     * rows; cm_attn_row_lanes applies to that build) */
    {"tuned_tile", 1, 37, 70, 4, 2, 64, .causal = 1, .key_padding = 1, .rising = 1,
     .tuning = "coopmat:cm_attn_subgroups=2,cm_attn_key_frags=1,cm_attn_row_lanes=1,cm_attn_reg_softmax=0"},
    /* one staged block, each fetched as it is staged (one staged block otherwise fetches the next
     * during this one's work up to D = 128; D = 256 never), with NaN in V rows that no query sees */
    {"no_prefetch", 2, 19, 90, 2, 0, 64, .causal = 1, .key_padding = 1, .nan_masked = 1,
     .tuning = "coopmat:cm_attn_prefetch=0,cm_attn_stages=1"},
    /* Q, K and V are storage buffers bound from a multiple of 4 elements: with 32 KiB bindings the
     * attention runs in row sets whose slices start at other offsets (and the projections too) */
    {"sliced_bindings", 2, 37, 45, 2, 0, 64, .causal = 1, .key_padding = 1, .binding_kib = 32},
    /* an f16 layer's Q, K and V read 8 values per 16-byte load (cm_attn_wide_loads=1; the coopmat
     * class reads 4 per load, faster on an H100): sliced from multiples of 8 elements; with the
     * extra keys and NaN in V rows no query sees (both halves of a load checked); Q staged in
     * passes of 8 dims, one load per row; D = 80 (rows of 10 loads). The 4-per-load build (the
     * class's default) runs in every other f16 row (mqa_f16_padding_nan: this shape) */
    {"sliced_bindings_f16", 2, 37, 45, 2, 0, 64, .f16 = 1, .causal = 1, .key_padding = 1, .binding_kib = 16,
     .tuning = "coopmat:cm_attn_wide_loads=1"},
    {"extra_keys_nan_f16", 2, 17, 23, 2, 0, 64, .f16 = 1, .bias_kv = 1, .zero_attn = 1, .key_padding = 1,
     .nan_masked = 1, .tuning = "coopmat:cm_attn_wide_loads=1"},
    {"q_passes_f16", 1, 70, 50, 2, 1, 64, .f16 = 1, .causal = 1, .key_padding = 1, .nan_masked = 1,
     .tuning = "coopmat:cm_attn_subgroups=8,cm_attn_key_frags=1,cm_attn_wide_loads=1"},
    /* self-attention's one Q/K/V buffer (K and V after Q's heads), GQA in key parts merged */
    {"causal_self_f16", 1, 33, 0, 2, 0, 64, .f16 = 1, .causal = 1, .tuning = "coopmat:cm_attn_wide_loads=1"},
    {"gqa_self_f16_parts", 1, 300, 0, 4, 2, 64, .f16 = 1, .causal = 1, .budget = 12,
     .tuning = "coopmat:cm_attn_wide_loads=1"},
    {"wide_loads_D80_f16", 2, 21, 29, 2, 0, 80, .f16 = 1, .key_padding = 1, .nan_masked = 1,
     .tuning = "coopmat:cm_attn_wide_loads=1"},
    /* more query rows than two blocks of keys (8 subgroups, blocks of one matrix): Q is staged
     * through the key blocks' space a few head dims at a time (8 passes of 8 dims on lavapipe) */
    {"q_passes", 1, 70, 50, 2, 1, 64, .causal = 1, .key_padding = 1, .nan_masked = 1,
     .tuning = "coopmat:cm_attn_subgroups=8,cm_attn_key_frags=1"},
    /* one staged K/V block (the class stages two where they fit), the next fetched during this
     * one's work: a value row later rows see holding NaN, many blocks with rising maxima at D = 128 */
    {"one_stage_nan_seen", 2, 40, 45, 2, 0, 64, .causal = 1, .nan_seen = 1, .tuning = "coopmat:cm_attn_stages=1"},
    {"one_stage_rising_D128", 1, 40, 300, 2, 0, 128, .causal = 1, .rising = 1,
     .tuning = "coopmat:cm_attn_stages=1"},
    /* two staged K/V blocks (the next staged into the other during this one's work, the bad-key
     * words in three): NaN in V rows no query sees, many blocks with rising maxima at D = 128,
     * key parts and chunks at a lowered budget (the KHR build too: its state in and out from
     * registers), D = 256 with fp16 storage (from D = 128 on, blocks of one matrix: with 16 x 16 x 16
     * two of the default's two-matrix blocks fit 48 KiB only at D = 128 with the softmax in registers) */
    {"two_stages", 2, 19, 90, 2, 0, 64, .causal = 1, .key_padding = 1, .nan_masked = 1,
     .tuning = "coopmat:cm_attn_stages=2"},
    {"two_stages_nan_seen", 2, 40, 45, 2, 0, 64, .causal = 1, .nan_seen = 1,
     .tuning = "coopmat:cm_attn_stages=2"},
    /* the NaN value row in a key part far below the top one (a float mask of -200 on the first
     * half of 600 keys, parts at a budget of 12): the merge gives that part no weight, yet the
     * rows must still turn NaN (the merge dropped it, tried once before the fix) */
    {"nan_seen_far_part", 1, 8, 600, 2, 0, 64, .nan_seen = 2, .far_half = 1, .budget = 12},
    {"two_stages_rising_D128", 1, 40, 300, 2, 0, 128, .causal = 1, .rising = 1,
     .tuning = "coopmat:cm_attn_stages=2,cm_attn_key_frags=1"},
    {"two_stages_budget", 2, 21, 600, 2, 0, 64, .causal = 1, .key_padding = 1, .budget = 12, .state_kib = 24,
     .tuning = "coopmat:cm_attn_stages=2"},
    {"two_stages_D256_f16", 1, 17, 33, 1, 0, 256, .f16 = 1,
     .tuning = "coopmat:cm_attn_stages=2,cm_attn_key_frags=1,cm_attn_wide_loads=1"},
    /* more than 32 keys a block (two words of non-finite-V bits per block; 8x8x8 matrices: 6 and 8
     * of them): 48 keys with one staged block (attn_cm2, whose scores take shared memory: 40), NaN
     * in the value row of key 35 (the second word in both builds), causal, so some rows see key 3
     * and not key 35 (a bit set in the wrong word or at the wrong key shows); 40 keys with two
     * (attn_cm2: 24) over 250 keys, the three blocks' words rotating, NaN in the padded keys'
     * rows (a bit a block's clear missed would poison a later block's key at the same place). A
     * 64-key block (8 matrices) compiles for a minute on lavapipe: the plan test checks its
     * shared memory on the H100 profile. */
    {"key_blocks_48_nan_seen", 2, 40, 70, 2, 0, 32, .causal = 1, .nan_seen = 1, .wide_blocks = 2,
     .tuning = "coopmat:cm_attn_key_frags=6,cm_attn_wide_d=0,cm_attn_stages=1", .cm2 = 1},
    {"key_blocks_40_two_stages", 2, 19, 250, 2, 0, 32, .key_padding = 1, .nan_masked = 1, .wide_blocks = 1,
     .tuning = "coopmat:cm_attn_key_frags=8,cm_attn_wide_d=0", .cm2 = 1},
    /* two row matrices a subgroup (each K and V matrix loaded once for both; attn_cm2 keeps one,
     * so these run in the KHR build only): the shared-memory softmax (its passes over twice the
     * rows, the rescale factors of both matrices through the scratch) with GQA and rising maxima,
     * keys in chunks carrying the state through the scratch;
     * the softmax in registers over 200 causal keys whose rows from 100 on see a NaN value row,
     * in chunks carrying the state in and out of both matrices' rows. (Rising maxima and a seen
     * NaN row do not mix: where a later key's score dwarfs the NaN key's, its fp16 probability
     * is 0 and the row stays finite where the CPU path's fp32 one is not 0.) These rows and the
     * wide blocks above run at D = 32: what they test lies in the rows and keys, and their unrolled
     * code, which grows with D, takes lavapipe more than linear time to compile (docs/TESTING.md:
     * 66-210 s each at D = 64, 23-54 s at 32). */
    {"row_frags_shared_softmax", 1, 45, 300, 4, 2, 32, .causal = 1, .rising = 1, .budget = 12, .state_kib = 40,
     .row_frags = 2, .tuning = "coopmat:cm_attn_row_frags=2,cm_attn_reg_softmax=0"},
    {"row_frags_chunks", 1, 200, 200, 2, 0, 32, .causal = 1, .nan_seen = 1, .budget = 12, .state_kib = 40,
     .row_frags = 2, .tuning = "coopmat:cm_attn_row_frags=2"},

    /* the KHR build's softmax through shared memory (cm_attn_reg_softmax=0; the default where the
     * device's accumulator layout is unknown): every variant, the masks with NaN in keys no query
     * sees and rows that see none, a value row later rows see holding NaN, fp16 storage with key
     * parts in chunks carrying the state */
    {"shared_softmax_variants", 2, 17, 45, 2, 0, 64, .causal = 1, .window = 20, .softcap = 5.0f, .alibi = 1,
     .sinks = 1, .tuning = "coopmat:cm_attn_reg_softmax=0"},
    {"shared_softmax_masks_nan", 2, 23, 35, 2, 0, 64, .mask = 2, .lens = 1, .fully_masked = 1, .nan_masked = 1,
     .rising = 1, .tuning = "coopmat:cm_attn_reg_softmax=0"},
    {"shared_softmax_nan_seen", 2, 40, 45, 2, 0, 64, .causal = 1, .nan_seen = 1,
     .tuning = "coopmat:cm_attn_reg_softmax=0"},
    {"shared_softmax_f16_chunks", 2, 21, 600, 2, 0, 64, .f16 = 1, .causal = 1, .key_padding = 1, .budget = 12,
     .state_kib = 24, .tuning = "coopmat:cm_attn_reg_softmax=0,cm_attn_wide_loads=1"},
    /* the softmax in registers with P through shared memory (cm_attn_reg_p=0; the build where the
     * device's A matrices hold other places than its accumulators, every other row here making P
     * in registers on lavapipe): every variant, a value row later rows see holding NaN with GQA in
     * key parts and chunks */
    {"shared_p_variants", 2, 17, 45, 2, 0, 64, .causal = 1, .window = 20, .softcap = 5.0f, .alibi = 1, .sinks = 1,
     .tuning = "coopmat:cm_attn_reg_p=0"},
    {"shared_p_nan_seen_chunks", 1, 40, 300, 4, 2, 64, .causal = 1, .nan_seen = 1, .budget = 12, .state_kib = 40,
     .tuning = "coopmat:cm_attn_reg_p=0"},

    /* (Rows go last: a row's seed follows its place in the table, so that a row put in between
     * gives the rows after it other inputs; `shared_softmax_masks_nan`, rising maxima under a
     * random mask, failed its fp16 bound, 7.3e-6 NMSE, on one such seed.) Masks that hide whole
     * key blocks from a workgroup's rows, which it then skips, and leave
     * others whole (all terms 0), which skip the per-element mask reads: the causal mask as a float
     * mask (where query 0 sees the first and the last key, in blocks no other row of the first
     * tile sees; a window of 30 keys, so that the first rows see whole the blocks later rows
     * cannot), the first tile's last real blocks closed before the extra keys; over 700 keys (the
     * map's words crossed: a closed run between the first and the last blocks); with the mask's
     * window of 70 and the layer's of 30, lengths, softcap, ALiBi and GQA in fp16 (blocks the mask
     * leaves whole that some rows' window does not: a whole path that skipped the window's test
     * failed); in chunks carrying the state at a budget of 40 (at
     * most 11 blocks a chunk on lavapipe) with one staged block and the softmax through shared
     * memory; packed documents per head, a value row holding NaN (its document's later rows NaN,
     * the rows of other documents beside it finite) */
    {"float_causal_mask", 1, 70, 90, 2, 0, 64, .mask = 3, .mask_window = 30, .bias_kv = 1, .zero_attn = 1, .cm2 = 1},
    {"float_causal_mask_long", 1, 20, 700, 2, 0, 64, .mask = 3, .mask_window = 30, .cm2 = 1},
    {"float_causal_mask_mixed", 2, 40, 90, 4, 2, 64, .f16 = 1, .mask = 3, .mask_window = 70, .window = 30, .lens = 1,
     .softcap = 5.0f, .alibi = 1},
    {"float_causal_mask_chunks", 1, 40, 200, 2, 0, 64, .mask = 3, .mask_window = 30, .budget = 40, .state_kib = 24,
     .tuning = "coopmat:cm_attn_reg_softmax=0,cm_attn_stages=1"},
    {"bool_documents_per_head", 2, 75, 75, 2, 0, 64, .mask = 4, .mask_per_head = 1, .nan_seen = 1, .cm2 = 1},
};

/* attn_cm against attn_fused: identity projections, B x L <= 8 (the f16 row excepted). */
static const cm_case pairs[] = {
    {"pair_D64", 1, 8, 77, 2, 0, 64},
    {"pair_rising", 1, 8, 120, 2, 0, 64, .rising = 1},
    {"pair_D128_causal_gqa", 1, 7, 40, 4, 2, 128, .causal = 1},
    {"pair_masks", 2, 3, 50, 2, 0, 64, .mask = 2, .key_padding = 1, .fully_masked = 1},
    /* attn_fused needs 52 trips per block of keys at D = 64: at a budget of 512 it splits S = 300
     * into parts, attn_cm not */
    {"pair_budget", 1, 5, 300, 2, 0, 64, .key_padding = 1, .budget = 512},
    {"pair_D64_f16_rows", 2, 37, 45, 2, 0, 64, .f16 = 1, .causal = 1},
    {"pair_float_causal", 1, 8, 77, 2, 0, 64, .mask = 3},
};

static float half_round(float x) { return vka_f16_to_f32(vka_f32_to_f16(x)); }

typedef struct cm_inputs {
    uint32_t E, Ek, S;
    float *q, *k, *v, *kpm_f;
    uint8_t *kpm, *mask_b;
    float *mask_f;
    int32_t *lens;
} cm_inputs;

static void inputs_make(const cm_case *c, cm_inputs *in, int fp16_values, unsigned long long seed)
{
    const uint32_t H_kv = c->H_kv ? c->H_kv : c->H, S = c->S ? c->S : c->L;
    memset(in, 0, sizeof *in);
    in->E = c->H * c->D, in->Ek = fp16_values ? H_kv * c->D : in->E, in->S = S;
    test_rng rng = test_rng_make(seed);
    size_t nq = (size_t)c->B * c->L * in->E, nk = (size_t)c->B * S * in->Ek;
    in->q = malloc(nq * sizeof(float));
    test_fill(&rng, in->q, nq, 1.0f);
    if (c->S) {
        in->k = malloc(nk * sizeof(float)), in->v = malloc(nk * sizeof(float));
        test_fill(&rng, in->k, nk, 1.0f), test_fill(&rng, in->v, nk, 1.0f);
    }
    for (uint32_t b = 0; c->rising && b < c->B; b++)
        for (uint32_t j = 0; j < S; j++)
            for (uint32_t e = 0; e < in->Ek; e++) in->k[((size_t)b * S + j) * in->Ek + e] *= 1.0f + 60.0f * (float)j / (float)S;
    if (fp16_values) {
        for (size_t i = 0; i < nq; i++) in->q[i] = half_round(in->q[i]);
        for (size_t i = 0; in->k && i < nk; i++) in->k[i] = half_round(in->k[i]), in->v[i] = half_round(in->v[i]);
    }
    if (c->key_padding) {
        in->kpm = malloc((size_t)c->B * S);
        for (size_t i = 0; i < (size_t)c->B * S; i++) in->kpm[i] = test_rng_float(&rng) > 0.5f; /* about 1 in 4 */
    }
    if (c->lens) {
        size_t n = c->lens == 2 ? (size_t)c->B * c->L : c->B;
        in->lens = malloc(n * sizeof(int32_t));
        for (size_t i = 0; i < n; i++) in->lens[i] = (int32_t)((test_rng_float(&rng) * 0.5f + 0.5f) * (float)(S + 1));
        if (c->fully_masked) in->lens[0] = 0;
    }
    for (uint32_t e = 0; c->nan_seen && e < in->Ek; e++) in->v[(size_t)(S / (2 * c->nan_seen)) * in->Ek + e] = NAN;
    for (uint32_t b = 0; c->nan_masked && b < c->B; b++)
        for (uint32_t j = 0; j < S; j++)
            if ((in->kpm && in->kpm[(size_t)b * S + j]) || (c->lens == 1 && (int32_t)j >= in->lens[b]))
                for (uint32_t e = 0; e < in->Ek; e++)
                    in->k[((size_t)b * S + j) * in->Ek + e] = in->v[((size_t)b * S + j) * in->Ek + e] = NAN;
    if (c->far_half) {
        in->mask_f = calloc((size_t)c->L * S, sizeof(float));
        for (uint32_t i = 0; i < c->L; i++)
            for (uint32_t j = 0; j < S / 2; j++) in->mask_f[(size_t)i * S + j] = -200.0f;
    }
    if (c->mask) {
        size_t n = (size_t)(c->mask_per_head ? c->B * c->H : 1) * c->L * S, planes = n / ((size_t)c->L * S);
        if (c->mask == 3) {
            in->mask_f = malloc(n * sizeof(float));
            for (size_t i = 0; i < n; i++) {
                int64_t row = (int64_t)(i / S % c->L), key = (int64_t)(i % S);
                int64_t qk = row + (int64_t)S - (int64_t)c->L;
                in->mask_f[i] = key > qk || (c->mask_window && key <= qk - c->mask_window) ? -INFINITY : 0.0f;
            }
            in->mask_f[S - 1] = -1.0f, in->mask_f[0] = -1.0f;
        } else if (c->mask == 4) {
            in->mask_b = malloc(n);
            uint32_t *doc = malloc(S * sizeof(uint32_t));
            for (size_t pl = 0; pl < planes; pl++) {
                for (uint32_t j = 0, id = 0, left = 0; j < S; j++, left--) {
                    if (!left) id++, left = 4 + (uint32_t)(test_rng_float(&rng) * 30.0f); /* 4..33 keys */
                    doc[j] = id;
                }
                for (uint32_t i = 0; i < c->L; i++)
                    for (uint32_t j = 0; j < S; j++) {
                        uint32_t qk = i + S - c->L;
                        in->mask_b[(pl * c->L + i) * S + j] = !(j <= qk && doc[j] == doc[qk]);
                    }
            }
            free(doc);
        } else if (c->mask == 1) {
            in->mask_b = malloc(n);
            for (size_t i = 0; i < n; i++) in->mask_b[i] = test_rng_float(&rng) > 0.4f; /* about 30% blocked */
            if (c->fully_masked) memset(in->mask_b + (size_t)(c->L > 2 ? 2 : c->L - 1) * S, 1, S); /* sees nothing */
        } else {
            in->mask_f = malloc(n * sizeof(float));
            for (size_t i = 0; i < n; i++) {
                float r = test_rng_float(&rng);
                in->mask_f[i] = r > 0.7f ? -INFINITY : 2.0f * r;
            }
            size_t row = c->L > 3 ? 3 : c->L - 1; /* sees nothing */
            for (uint32_t j = 0; c->fully_masked && j < S; j++) in->mask_f[row * S + j] = -INFINITY;
        }
    }
}

static void inputs_free(cm_inputs *in)
{
    free(in->q), free(in->k), free(in->v), free(in->kpm), free(in->mask_b), free(in->mask_f), free(in->lens);
}

static vkattn_host_forward_desc forward_of(const cm_case *c, const cm_inputs *in, float *out, float *lse)
{
    vkattn_host_forward_desc f = {.batch = c->B, .query_len = c->L, .key_len = c->S, .query = in->q,
                                  .key = in->k, .value = in->v, .causal = c->causal, .key_padding_mask = in->kpm,
                                  .valid_lens = in->lens, .valid_lens_per_query = c->lens == 2,
                                  .attn_mask_per_head = c->mask_per_head, .output = out, .lse = lse,
                                  .path = VKATTN_PATH_FUSED};
    if (in->mask_b) f.attn_mask = in->mask_b, f.attn_mask_dtype = VKATTN_DTYPE_BOOL;
    if (in->mask_f) f.attn_mask = in->mask_f, f.attn_mask_dtype = VKATTN_DTYPE_F32;
    return f;
}

static vkattn_layer_desc layer_of(const cm_case *c)
{
    return (vkattn_layer_desc){.embed_dim = c->H * c->D, .num_heads = c->H, .num_kv_heads = c->H_kv,
                               .storage = c->f16 ? VKATTN_DTYPE_F16 : VKATTN_DTYPE_F32, .window = c->window,
                               .softcap = c->softcap, .alibi = c->alibi, .add_bias_kv = c->bias_kv,
                               .add_zero_attn = c->zero_attn, .precision = VKATTN_PRECISION_F16};
}

/* The accumulator layout the last context made found (before any plan): a build with the softmax
 * in registers that failed its self-test would zero it and run the shared-memory build, right
 * but untested, so run_layer checks that it stays. */
static vka_matrix_rows probed_rows;

/* A coopmat-tuned context; `attn_cm_fault`, `attn_cm2_fault`, `reg_fault`, `reg_p_fault`: the
 * fault injector's attn_cm_check, attn_cm2_check, attn_cm_reg_check and attn_cm_reg_p_check (0 =
 * none). */
static vkattn_context *context_for(const char *tuning, uint32_t budget, int off, uint32_t state_kib, int attn_cm_fault,
                                   int attn_cm2_fault, int reg_fault, int reg_p_fault)
{
    vkattn_context *ctx = NULL;
    vkattn_error error = {0};
    vkattn_context_desc desc = {.validation = VKATTN_VALIDATION_ON, .tuning = tuning ? tuning : "coopmat",
                                .loop_budget = budget,
                                .no_cooperative_matrix = off};
    const vka_faults faults = {.attn_cm_check = attn_cm_fault, .attn_cm2_check = attn_cm2_fault,
                               .attn_cm_reg_check = reg_fault, .attn_cm_reg_p_check = reg_p_fault};
    CHECK_STATUS(vka_context_create_with_faults(&desc, &faults, &ctx, &error), VKATTN_OK);
    if (!ctx) fprintf(stderr, "%s\n", error.message);
    if (ctx) ctx->state_budget_bytes = (uint64_t)state_kib << 10;
    if (ctx) probed_rows = ctx->dev.matrix_rows;
    return ctx;
}

/* Runs the forward on `layer`. `want_cm` 1: its plan must name attn_cm, and the context's
 * self-test of attn_cm (run at its first plan that takes it) must have passed; 0: no _cm kernel;
 * 2: matmul_cm but not attn_cm (its self-test made to fail). 0 on failure, else 2 where the keys were split into parts (merged), 1 where not. */
static int run_layer(vkattn_context *ctx, vkattn_layer *layer, const cm_case *c, const vkattn_host_forward_desc *f,
                     int want_cm)
{
    static char plan[1 << 18];
    plan[0] = '\0';
    vkattn_status status = vkattn_forward_explain(layer, f, plan, sizeof plan, NULL);
    if (status == VKATTN_OK) status = vkattn_forward_host(layer, f);
    CHECK_MSG(status == VKATTN_OK, "%s: %s", c->name, vkattn_context_last_error(ctx));
    if (status != VKATTN_OK) return 0;
    int cm = strstr(plan, "attn_cm") != NULL;
    /* attn_cm2 (the softmax in the matrices) where the context enabled VK_NV_cooperative_matrix2's
     * operations, else the KHR build */
    if (want_cm == 1)
        CHECK_MSG(ctx->dev.matrix2 ? strstr(plan, "attn_cm2") != NULL : strstr(plan, "attn_cm2") == NULL,
                  "%s: matrix2 %d, the plan:\n%s", c->name, ctx->dev.matrix2, plan);
    if (want_cm == 2)
        CHECK_MSG(!cm && strstr(plan, "matmul_cm"), "%s: the plan has attn_cm or lacks matmul_cm:\n%s", c->name, plan);
    else
        CHECK_MSG(want_cm ? cm : !strstr(plan, "_cm"), "%s: the plan %s:\n%s", c->name,
                  want_cm ? "lacks attn_cm" : "has a _cm kernel", plan);
    if (want_cm == 1) /* the context's first attn_cm plan ran the kernel's self-test, which passed */
        CHECK_MSG(ctx->attn_cm_verdict == 1, "%s: attn_cm self-test verdict %d", c->name, ctx->attn_cm_verdict);
    if (want_cm == 1 && !c->reg_fault) /* and the build with its softmax in registers passed its own */
        CHECK_MSG(ctx->dev.matrix_rows.lanes == probed_rows.lanes, "%s: rows in %u lanes after the plan, %u before (%s)",
                  c->name, ctx->dev.matrix_rows.lanes, probed_rows.lanes, ctx->dev.info.cooperative_matrix_note);
    if (want_cm == 1 && !c->reg_fault && !c->reg_p_fault) /* and the one with P in registers too */
        CHECK_MSG(ctx->dev.matrix_rows.a_elements == probed_rows.a_elements,
                  "%s: A from %u accumulator elements after the plan, %u before (%s)", c->name,
                  ctx->dev.matrix_rows.a_elements, probed_rows.a_elements, ctx->dev.info.cooperative_matrix_note);
    if (c->state_kib)
        CHECK_MSG(strstr(plan, "carried in") != NULL, "%s: no chunk carries the state:\n%s", c->name, plan);
    if (c->binding_kib) { /* the attention in several row sets */
        uint32_t sets = test_count_text(plan, " attn_cm");
        CHECK_MSG(sets > 1, "%s: %u attn_cm dispatches: Q, K and V were not sliced:\n%s", c->name, sets, plan);
    }
    const char *step = strstr(plan, " attn_cm"); /* the step line of attn_cm or attn_cm2 */
    if (want_cm == 1 && step) { /* the next K/V block fetched meanwhile up to D = 128, unless the tuning says not;
                                   two staged blocks where they fit unless the tuning says cm_attn_stages=1 */
        const char *eol = strchr(step, '\n'), *said = strstr(step, "fetched meanwhile");
        const char *two = strstr(step, "two staged blocks");
        const char *regs_said = strstr(step, "the softmax on the matrices' elements in registers");
        int two_said = two && (!eol || two < eol), two_asked = !(c->tuning && strstr(c->tuning, "cm_attn_stages=1"));
        /* Two staged blocks fit (the plan gives up keys per block before them) with lavapipe's 8 x 8 x 8
         * (32 KiB) at every head dim here (D = 256: 64 x 8), with 16 x 16 x 16 (48 KiB) up to D = 128
         * (128 x 32 with the softmax in registers, 128 x 16 through shared memory), at D = 256 only with
         * the softmax in registers (128 x 16: 41 KiB; 50 with the scores in shared memory) */
        const int reg_build = regs_said && (!eol || regs_said < eol);
        const int two_fit = vka_matrix_shape_for(&ctx->dev.info).m < 16 || c->D <= 128 || reg_build;
        CHECK_MSG(two_asked ? two_said == two_fit : !two_said, "%s: two staged blocks %s:\n%s", c->name,
                  two_said ? "said" : "not said", plan);
        /* with an attn_mask, the key blocks mapped first where the budget leaves room for the
         * map's loops (every key span here fits one map) */
        const char *map = strstr(step, "key blocks mapped first");
        const int map_want = c->mask && (!c->budget || vka_fused_cm_loop_trips(3, 1) <= c->budget);
        CHECK_MSG((map && (!eol || map < eol)) == map_want, "%s: the key blocks should%s be mapped:\n%s", c->name,
                  map_want ? "" : " not", plan);
        int prefetch = (c->D <= 128 && !(c->tuning && strstr(c->tuning, "cm_attn_prefetch=0"))) || two_said;
        CHECK_MSG((said && (!eol || said < eol)) == prefetch, "%s: attn_cm should%s fetch the next block meanwhile:\n%s",
                  c->name, prefetch ? "" : " not", plan);
        /* an f16 layer's Q, K and V (fp16 projections; every head dim here a multiple of 8) in
         * 16-byte loads of 8 values where the tuning says cm_attn_wide_loads=1 (else 4 per load,
         * the coopmat class's default); an f32 layer's never */
        /* the KHR build's softmax on the matrices' elements where the device's accumulator layout
         * is known (Mesa 26 lavapipe's is), unless the tuning says cm_attn_reg_softmax=0 */
        const char *regs = strstr(step, "the softmax on the matrices' elements in registers");
        const int reg_asked = !ctx->dev.matrix2 && ctx->dev.matrix_rows.lanes &&
                              !(c->tuning && strstr(c->tuning, "cm_attn_reg_softmax=0"));
        CHECK_MSG((regs && (!eol || regs < eol)) == reg_asked, "%s: attn_cm's softmax should%s be in registers:\n%s",
                  c->name, reg_asked ? "" : " not", plan);
        /* and P made into A matrices from the score matrices' elements where the device's A
         * matrices hold the accumulator's places (Mesa 26 lavapipe's do), unless the tuning says
         * cm_attn_reg_p=0 */
        const char *reg_p = strstr(step, "P made into A matrices in registers");
        const int reg_p_asked = reg_asked && ctx->dev.matrix_rows.a_elements &&
                                !(c->tuning && strstr(c->tuning, "cm_attn_reg_p=0"));
        CHECK_MSG((reg_p && (!eol || reg_p < eol)) == reg_p_asked, "%s: P should%s be made in registers:\n%s",
                  c->name, reg_p_asked ? "" : " not", plan);
        const char *wide = strstr(step, "16-byte loads of 8");
        const int wide_asked = c->f16 && c->tuning && strstr(c->tuning, "cm_attn_wide_loads=1");
        CHECK_MSG((wide && (!eol || wide < eol)) == wide_asked, "%s: attn_cm should%s read 16-byte loads of 8:\n%s",
                  c->name, wide_asked ? "" : " not", plan);
    }
    /* the row matrices a subgroup the plan must take: the row's, in the KHR build only */
    const uint32_t rf = c->row_frags && !ctx->dev.matrix2 ? c->row_frags : 1;
    const char *sgs = c->tuning ? strstr(c->tuning, "cm_attn_subgroups=") : NULL;
    const char *frags = c->tuning ? strstr(c->tuning, "cm_attn_key_frags=") : NULL;
    if (sgs && frags) { /* the tuning's subgroups of row matrices of MAT_M rows, its blocks of MAT_N-key matrices */
        const vkattn_matrix_shape ms = vka_matrix_shape_for(&ctx->dev.info);
        unsigned n_sgs = 0, n_frags = 0;
        CHECK(sscanf(sgs, "cm_attn_subgroups=%u", &n_sgs) == 1 && sscanf(frags, "cm_attn_key_frags=%u", &n_frags) == 1);
        char tile[64];
        snprintf(tile, sizeof tile, "(%u query rows x %u-key blocks", n_sgs * rf * ms.m, n_frags * ms.n);
        CHECK_MSG(strstr(plan, tile) != NULL, "%s: the tuning's tile \"%s\" is not the plan's:\n%s", c->name, tile, plan);
    }
    if (want_cm == 1 && step) { /* the plan line says so exactly where there are several */
        char said[64];
        snprintf(said, sizeof said, ", %u row matrices per subgroup", rf);
        const char *eol = strchr(step, '\n'), *at = strstr(step, rf > 1 ? said : " row matrices per subgroup");
        CHECK_MSG((at && (!eol || at < eol)) == (rf > 1), "%s: attn_cm should take %u row matrices per subgroup:\n%s",
                  c->name, rf, plan);
    }
    if (c->wide_blocks == 2 || (c->wide_blocks && !ctx->dev.matrix2)) {
        const char *at = strstr(plan, " query rows x ");
        unsigned keys = 0;
        CHECK_MSG(at && sscanf(at, " query rows x %u-key blocks", &keys) == 1 && keys > 32,
                  "%s: attn_cm's blocks should hold more than 32 keys:\n%s", c->name, plan);
    }
    return 1 + (strstr(plan, "merge") != NULL);
}

static void run_grid_case(const cm_case *c, unsigned long long seed, double *worst)
{
    double t0 = test_now_s();
    vkattn_context *ctx = context_for(c->tuning, c->budget, 0, c->state_kib, c->attn_cm_fault, c->attn_cm2_fault,
                                      c->reg_fault, c->reg_p_fault);
    if (!ctx) return;
    ctx->binding_bytes = (uint64_t)c->binding_kib << 10;
    vkattn_layer_desc ld = layer_of(c);
    test_weights tw;
    test_weights_make(&tw, &ld, seed);
    if (c->sinks) test_weights_add_sinks(&tw, -1.0f, 3.0f, seed + 1);
    cm_inputs in;
    inputs_make(c, &in, 0, seed + 2);
    const size_t n_out = (size_t)c->B * c->L * in.E, n_lse = (size_t)c->B * c->H * c->L;
    float *gpu = malloc(n_out * sizeof(float)), *cpu = malloc(n_out * sizeof(float));
    float *gpu_lse = malloc(n_lse * sizeof(float)), *cpu_lse = malloc(n_lse * sizeof(float));
    vkattn_layer *layer = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &ld, &tw.w, &layer), VKATTN_OK);
    vkattn_host_forward_desc f = forward_of(c, &in, gpu, gpu_lse);
    const int had_matrix2 = ctx->dev.matrix2;
    int ran = layer ? run_layer(ctx, layer, c, &f, c->attn_cm_fault ? 2 : 1) : 0;
    vkattn_device_info info;
    vkattn_context_device(ctx, &info);
    if (c->attn_cm_fault) {
        /* the context keeps attn_fused for the attention (after attn_cm2, where it ran first, and
         * then attn_cm failed) and says why; the answers stay right */
        const char *expect = c->attn_cm_fault == VKA_FAULT_COOPMAT_WRONG ? " gave " : "(injected)";
        CHECK_MSG(ctx->attn_cm_verdict == -1 && info.cooperative_matrix_usable && !ctx->dev.matrix2 &&
                      strncmp(info.cooperative_matrix_note, "attn_cm self-test failed: ", 26) == 0 &&
                      strstr(info.cooperative_matrix_note, expect),
                  "%s: verdict %d, usable %d, note \"%s\"", c->name, ctx->attn_cm_verdict,
                  info.cooperative_matrix_usable, info.cooperative_matrix_note);
        printf("  %-24s note \"%s\"\n", c->name, info.cooperative_matrix_note);
    }
    if (c->attn_cm2_fault) {
        /* attn_cm2's failure leaves the context on attn_cm, which passes its own test; where
         * attn_cm2 never ran, nothing failed */
        CHECK_MSG(ctx->attn_cm_verdict == 1 && !ctx->dev.matrix2 &&
                      (had_matrix2 ? strncmp(info.cooperative_matrix_note, "attn_cm2 self-test failed: ", 27) == 0
                                   : info.cooperative_matrix_note[0] == '\0'),
                  "%s: attn_cm2 enabled %d, verdict %d, note \"%s\"", c->name, had_matrix2, ctx->attn_cm_verdict,
                  info.cooperative_matrix_note);
        printf("  %-24s attn_cm2 %s; note \"%s\"\n", c->name, had_matrix2 ? "failed, attn_cm ran" : "not enabled",
               info.cooperative_matrix_note);
    }
    if (c->reg_fault && !had_matrix2) {
        /* the build with its softmax in registers failed: attn_cm runs with it in shared memory
         * (its own self-test passed), and the note says which build failed */
        const char *expect = c->reg_fault == VKA_FAULT_COOPMAT_WRONG ? " gave " : "(injected)";
        CHECK_MSG(ctx->attn_cm_verdict == 1 && !ctx->dev.matrix_rows.lanes && !ctx->dev.matrix2 &&
                      strncmp(info.cooperative_matrix_note, "attn_cm (softmax in registers) self-test failed: ", 49) == 0 &&
                      strstr(info.cooperative_matrix_note, expect) && strstr(ctx->dev.matrix_rows_note, "self-test"),
                  "%s: verdict %d, rows in %u lanes, note \"%s\"", c->name, ctx->attn_cm_verdict,
                  ctx->dev.matrix_rows.lanes, info.cooperative_matrix_note);
        printf("  %-24s note \"%s\"\n", c->name, info.cooperative_matrix_note);
    }
    if (c->reg_p_fault && !had_matrix2 && probed_rows.a_elements) {
        /* the build with P in registers failed: attn_cm runs with P through shared memory, the
         * softmax still in registers (that build's self-test passed), and the note says which
         * build failed */
        const char *expect = c->reg_p_fault == VKA_FAULT_COOPMAT_WRONG ? " gave " : "(injected)";
        const char *said = "attn_cm (softmax and P in registers) self-test failed: ";
        CHECK_MSG(ctx->attn_cm_verdict == 1 && ctx->dev.matrix_rows.lanes == probed_rows.lanes &&
                      !ctx->dev.matrix_rows.a_elements && !ctx->dev.matrix2 &&
                      strncmp(info.cooperative_matrix_note, said, strlen(said)) == 0 &&
                      strstr(info.cooperative_matrix_note, expect) && strstr(ctx->dev.matrix_rows_note, "P in registers"),
                  "%s: verdict %d, rows in %u lanes, A from %u elements, note \"%s\"", c->name, ctx->attn_cm_verdict,
                  ctx->dev.matrix_rows.lanes, ctx->dev.matrix_rows.a_elements, info.cooperative_matrix_note);
        printf("  %-24s note \"%s\"\n", c->name, info.cooperative_matrix_note);
    } else if (c->reg_p_fault && !had_matrix2) {
        /* a device whose A matrices hold other places than its accumulators (the probe said so):
         * no build made P in registers, so nothing failed */
        CHECK_MSG(ctx->attn_cm_verdict == 1 && ctx->dev.matrix_rows.lanes == probed_rows.lanes &&
                      info.cooperative_matrix_note[0] == '\0',
                  "%s: verdict %d, rows in %u lanes, note \"%s\"", c->name, ctx->attn_cm_verdict,
                  ctx->dev.matrix_rows.lanes, info.cooperative_matrix_note);
        printf("  %-24s no build made P in registers here (%s)\n", c->name, ctx->dev.matrix_rows_note);
    }
    if (c->budget && !c->state_kib)
        CHECK_MSG(ran != 1, "%s: a loop budget of %u left the keys whole", c->name, c->budget);
    f.output = cpu, f.lse = cpu_lse, f.path = VKATTN_PATH_CPU;
    vkattn_error error = {0};
    CHECK_STATUS(vkattn_reference_forward(&ld, &tw.w, &f, &error), VKATTN_OK);
    if (ran) {
        const compare_tolerance *tol = compare_tolerance_of(COMPARE_F16);
        test_error e = test_compare(gpu, cpu, n_out), el = test_compare(gpu_lse, cpu_lse, n_lse);
        double lse_bound = tol->max_abs * (el.ref_max > 1 ? el.ref_max : 1);
        int ok = compare_within(&e, tol) && el.nonfinite == 0 && el.max_abs <= lse_bound;
        printf("  %-24s %s out max-abs %.2e nmse %.2e, lse max-abs %.2e  %s (%.1f s)\n", c->name,
               c->f16 ? "f16" : "f32", e.max_abs, e.nmse, el.max_abs, ok ? "ok" : "FAILED", test_now_s() - t0);
        CHECK_MSG(compare_within(&e, tol), "%s: output max-abs %.3g NMSE %.3g (%zu non-finite differ)", c->name,
                  e.max_abs, e.nmse, e.nonfinite);
        CHECK_MSG(el.nonfinite == 0 && el.max_abs <= lse_bound, "%s: lse max-abs %.3g, %zu non-finite differ",
                  c->name, el.max_abs, el.nonfinite);
        if (e.max_abs > worst[0]) worst[0] = e.max_abs;
        if (e.nmse > worst[1]) worst[1] = e.nmse;
        if (el.max_abs > worst[2]) worst[2] = el.max_abs;
    }
    vkattn_layer_destroy(layer);
    free(gpu), free(cpu), free(gpu_lse), free(cpu_lse);
    inputs_free(&in);
    test_weights_free(&tw);
    gpu_test_finish_context(ctx);
}

/* Identity projections without biases: W_Q and W_O (E x E), W_K and W_V (E_kv x E_kv), so q, k and
 * v are the inputs and the output is the context. */
static float *identity_weights(const cm_case *c, vkattn_weights *w)
{
    const size_t E = c->H * c->D, Ek = (size_t)(c->H_kv ? c->H_kv : c->H) * c->D;
    float *block = calloc(2 * E * E + 2 * Ek * Ek, sizeof(float));
    float *wq = block, *wo = wq + E * E, *wk = wo + E * E, *wv = wk + Ek * Ek;
    for (size_t i = 0; i < E; i++) wq[i * E + i] = wo[i * E + i] = 1.0f;
    for (size_t i = 0; i < Ek; i++) wk[i * Ek + i] = wv[i * Ek + i] = 1.0f;
    *w = (vkattn_weights){.q_proj_weight = wq, .k_proj_weight = wk, .v_proj_weight = wv, .out_proj_weight = wo};
    return block;
}

static void run_pair(const cm_case *c, unsigned long long seed, double *worst)
{
    double t0 = test_now_s();
    vkattn_context *ctx = context_for(c->tuning, c->budget, 0, c->state_kib, 0, 0, 0, 0);
    if (!ctx) return;
    vkattn_layer_desc ld = layer_of(c);
    ld.no_bias = 1;
    ld.kdim = ld.vdim = (c->H_kv ? c->H_kv : c->H) * c->D;
    vkattn_weights w;
    float *block = identity_weights(c, &w), sinks[16];
    test_rng rng = test_rng_make(seed);
    for (uint32_t h = 0; h < c->H; h++) sinks[h] = 1.0f + 2.0f * test_rng_float(&rng);
    if (c->sinks) w.sinks = sinks;
    cm_inputs in;
    inputs_make(c, &in, 1, seed + 2);
    if (!in.k) { /* the pairs are cross-attention rows */
        inputs_free(&in), free(block), gpu_test_finish_context(ctx);
        CHECK_MSG(0, "%s: a pair needs S", c->name);
        return;
    }
    const size_t n_out = (size_t)c->B * c->L * in.E, n_lse = (size_t)c->B * c->H * c->L;
    float *out[2], *lse[2];
    int ran = 1;
    for (int k = 0; k < 2; k++) {
        out[k] = malloc(n_out * sizeof(float)), lse[k] = malloc(n_lse * sizeof(float));
        ld.precision = k ? VKATTN_PRECISION_F32 : VKATTN_PRECISION_F16;
        vkattn_layer *layer = NULL;
        CHECK_STATUS(vkattn_layer_create(ctx, &ld, &w, &layer), VKATTN_OK);
        vkattn_host_forward_desc f = forward_of(c, &in, out[k], lse[k]);
        ran = ran && layer && run_layer(ctx, layer, c, &f, !k);
        vkattn_layer_destroy(layer);
    }
    if (ran) {
        test_error e = test_compare(out[0], out[1], n_out), el = test_compare(lse[0], lse[1], n_lse);
        /* fp16 outputs: one output ulp of the largest value besides the kernels' difference */
        double bound = c->f16 ? 1e-3 * (e.ref_max > 1 ? e.ref_max : 1) : 1e-3, lse_bound = 1e-4;
        int ok = e.nonfinite == 0 && e.max_abs <= bound && el.nonfinite == 0 && el.max_abs <= lse_bound;
        printf("  %-24s %s attn_cm vs attn_fused: out max-abs %.2e nmse %.2e, lse max-abs %.2e  %s (%.1f s)\n",
               c->name, c->f16 ? "f16" : "f32", e.max_abs, e.nmse, el.max_abs, ok ? "ok" : "FAILED", test_now_s() - t0);
        CHECK_MSG(e.nonfinite == 0 && e.max_abs <= bound, "%s: attn_cm vs attn_fused max-abs %.3g > %.3g", c->name,
                  e.max_abs, bound);
        CHECK_MSG(el.nonfinite == 0 && el.max_abs <= lse_bound, "%s: lse max-abs %.3g > %.3g", c->name, el.max_abs,
                  lse_bound);
        if (c->fully_masked) { /* row min(3, L - 1) of every head: no visible key, lse -inf in both */
            size_t r = c->L > 3 ? 3 : c->L - 1;
            CHECK_MSG(lse[0][r] == -INFINITY && lse[1][r] == -INFINITY, "%s: a fully masked row's lse %g, %g", c->name,
                      lse[0][r], lse[1][r]);
        }
        if (!c->f16 && e.max_abs > worst[0]) worst[0] = e.max_abs;
        if (el.max_abs > worst[1]) worst[1] = el.max_abs;
    }
    for (int k = 0; k < 2; k++) free(out[k]), free(lse[k]);
    inputs_free(&in);
    free(block);
    gpu_test_finish_context(ctx);
}

/* One element of one value row that fp16 cannot hold (1e5 > 65504: an f16 layer's identity
 * projection stores it as inf), in key 5 of a causal cross-attention: in attn_cm the rows that
 * see key 5 (5 to 8) turn non-finite (a seen key whose V holds a non-finite value makes its rows
 * NaN) and rows 0 to 4 stay finite, whether the element is the first or the second texel of its
 * 16-byte load (d = 2, d = 5: cm_attn_wide_loads=1 stages a load as two texels and checks each; a
 * second texel left unchecked would stage 0 there and give those rows finite numbers), and with
 * the class's 8-byte loads (d = 2 and 5 in two loads). The CPU path keeps its projections in fp32,
 * so 1e5 stays finite there: no comparison with it. */
static void run_partial_overflow(void)
{
    for (uint32_t run = 0; run < 4; run++) {
        const uint32_t d = run % 2 ? 5 : 2, wide = run < 2;
        const cm_case c = {"partial_overflow", 1, 9, 20, 2, 0, 64, .f16 = 1, .causal = 1,
                           .tuning = wide ? "coopmat:cm_attn_wide_loads=1" : NULL};
        vkattn_context *ctx = context_for(c.tuning, 0, 0, 0, 0, 0, 0, 0);
        if (!ctx) return;
        vkattn_layer_desc ld = layer_of(&c);
        ld.no_bias = 1;
        ld.kdim = ld.vdim = c.H * c.D;
        vkattn_weights w;
        float *block = identity_weights(&c, &w);
        cm_inputs in;
        inputs_make(&c, &in, 1, 4000 + d);
        in.v[5 * in.Ek + d] = 1e5f;
        const size_t n = (size_t)c.L * in.E;
        float *out = malloc(n * sizeof(float));
        vkattn_layer *layer = NULL;
        CHECK_STATUS(vkattn_layer_create(ctx, &ld, &w, &layer), VKATTN_OK);
        vkattn_host_forward_desc f = forward_of(&c, &in, out, NULL);
        int ran = layer && run_layer(ctx, layer, &c, &f, 1), wrong = 0;
        for (uint32_t i = 0; ran && i < c.L; i++) {
            int finite = 1;
            for (size_t e = 0; e < in.E; e++) finite = finite && isfinite(out[i * in.E + e]);
            wrong += finite != (i < 5);
        }
        printf("  %-24s f16 d = %u (%s, texel %u of its load): %d rows of 9 wrong  %s\n", c.name, d,
               wide ? "16-byte loads" : "8-byte loads", wide ? d / 4 : 0, wrong, ran && !wrong ? "ok" : "FAILED");
        CHECK_MSG(ran && wrong == 0, "%s d = %u, cm_attn_wide_loads=%u: %d rows wrong (rows 5-8 must be non-finite, 0-4 finite)",
                  c.name, d, wide, wrong);
        vkattn_layer_destroy(layer);
        free(out);
        inputs_free(&in);
        free(block);
        gpu_test_finish_context(ctx);
    }
}

/* VKATTN_PRECISION_F32 and no_cooperative_matrix: no _cm kernel in the plan, and the forward runs. */
static void run_off(int off)
{
    const cm_case c = {off ? "no_cooperative_matrix" : "precision_f32", 1, 9, 20, 2, 0, 64, .causal = 1};
    vkattn_context *ctx = context_for(NULL, 0, off, 0, 0, 0, 0, 0);
    if (!ctx) return;
    vkattn_layer_desc ld = layer_of(&c);
    ld.precision = off ? VKATTN_PRECISION_F16 : VKATTN_PRECISION_F32;
    test_weights tw;
    test_weights_make(&tw, &ld, 5);
    cm_inputs in;
    inputs_make(&c, &in, 0, 6);
    float *out = malloc((size_t)c.B * c.L * in.E * sizeof(float));
    vkattn_layer *layer = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &ld, &tw.w, &layer), VKATTN_OK);
    vkattn_host_forward_desc f = forward_of(&c, &in, out, NULL);
    if (layer && run_layer(ctx, layer, &c, &f, 0)) printf("  %-24s no _cm kernel in the plan  ok\n", c.name);
    vkattn_layer_destroy(layer);
    free(out);
    inputs_free(&in);
    test_weights_free(&tw);
    gpu_test_finish_context(ctx);
}

/* A context tests each build of attn_cm its plans take, once: layers of fp32 and fp16 storage (Q,
 * K and V read as fp32 or fp16 words: two builds) take two self-tests, and planning the first
 * layer again none. */
static void run_two_builds(void)
{
    vkattn_context *ctx = context_for(NULL, 0, 0, 0, 0, 0, 0, 0);
    if (!ctx) return;
    static char plan[1 << 16];
    uint32_t counts[3] = {0};
    for (int i = 0; i < 3; i++) {
        vkattn_layer_desc ld = {.embed_dim = 128, .num_heads = 2, .precision = VKATTN_PRECISION_F16,
                                .storage = i == 1 ? VKATTN_DTYPE_F16 : VKATTN_DTYPE_F32};
        test_weights tw;
        test_weights_make(&tw, &ld, 9);
        vkattn_layer *layer = NULL;
        float q[20 * 128] = {0}, out[20 * 128];
        vkattn_host_forward_desc f = {.batch = 1, .query_len = 20, .query = q, .output = out, .causal = 1};
        CHECK_STATUS(vkattn_layer_create(ctx, &ld, &tw.w, &layer), VKATTN_OK);
        if (layer) CHECK_STATUS(vkattn_forward_explain(layer, &f, plan, sizeof plan, NULL), VKATTN_OK);
        CHECK_MSG(strstr(plan, " attn_cm") != NULL, "layer %d: no attn_cm in the plan:\n%s", i, plan);
        counts[i] = ctx->attn_cm_checked_count;
        vkattn_layer_destroy(layer);
        test_weights_free(&tw);
    }
    printf("  two_builds               self-tests after each plan: %u, %u, %u  %s\n", counts[0], counts[1], counts[2],
           counts[0] == 1 && counts[1] == 2 && counts[2] == 2 && ctx->attn_cm_verdict == 1 ? "ok" : "FAILED");
    CHECK_MSG(counts[0] == 1 && counts[1] == 2 && counts[2] == 2 && ctx->attn_cm_verdict == 1,
              "self-tests after each plan %u, %u, %u (verdict %d)", counts[0], counts[1], counts[2], ctx->attn_cm_verdict);
    gpu_test_finish_context(ctx);
}

int main(int argc, char **argv)
{
    /* The KHR build, the whole grid, in three ctests that ctest -j runs side by side: "dims" its
     * head dims above 64 (the long LLVM builds), "khr_a" / "khr_b" every other row of the rest (the
     * pairs and the switches that turn the path off in the first, the two builds and the partial
     * overflow in the second), "khr" all three; "cm2": attn_cm2's rows (VKATTN_COOPMAT2=1), the
     * pairs, the two builds and the partial overflow; a case's name: that case; none: everything,
     * in the build the environment asks for. */
    const char *only = argc > 1 ? argv[1] : NULL;
    const int cm2_run = only && strcmp(only, "cm2") == 0, all_khr = only && strcmp(only, "khr") == 0;
    const int dims = only && (all_khr || strcmp(only, "dims") == 0);
    const int khr_a = only && (all_khr || strcmp(only, "khr_a") == 0);
    const int khr_b = only && (all_khr || strcmp(only, "khr_b") == 0), khr = dims || khr_a || khr_b;
    const char *matrix2_env = getenv("VKATTN_COOPMAT2");
    const int matrix2_asked = matrix2_env && strcmp(matrix2_env, "1") == 0;
    if (khr && matrix2_asked) {
        fprintf(stderr, "the %s run is the default build: run it without VKATTN_COOPMAT2=1\n", only);
        return 1;
    }
    if (cm2_run && !matrix2_asked) {
        fprintf(stderr, "the cm2 run is attn_cm2's: run it with VKATTN_COOPMAT2=1\n");
        return 1;
    }
    vkattn_context *ctx = gpu_test_context();
    vkattn_device_info info;
    vkattn_context_device(ctx, &info);
    /* asked for, attn_cm2 must be what runs wherever the device has its operations */
    const uint32_t matrix2_ops = VKATTN_MATRIX2_REDUCTIONS | VKATTN_MATRIX2_CONVERSIONS | VKATTN_MATRIX2_PER_ELEMENT;
    if (info.cooperative_matrix_usable && (info.cooperative_matrix2 & matrix2_ops) == matrix2_ops)
        CHECK_MSG(ctx->dev.matrix2 == matrix2_asked, "VKATTN_COOPMAT2=%s, matrix2 enabled %d",
                  matrix2_env ? matrix2_env : "(unset)", ctx->dev.matrix2);
    printf("the fused attention on matrices: %s\n", ctx->dev.matrix2 ? "attn_cm2" : "attn_cm");
    const int matrix2 = ctx->dev.matrix2;
    gpu_test_finish_context(ctx);
    if (info.cooperative_matrix_usable) {
        /* the coopmat tuning's context reads the accumulator layout: lavapipe's (a row across the
         * subgroup, one element each) is of the form the softmax in registers takes, so CI runs
         * that build there */
        vkattn_context *cm = context_for(NULL, 0, 0, 0, 0, 0, 0, 0);
        if (cm) {
            const vka_device *d = &cm->dev;
            printf("accumulator rows in %u lanes, element classes (e / %u) %% %u%s%s\n", d->matrix_rows.lanes,
                   d->matrix_rows.run, d->matrix_rows.classes, d->matrix_rows_note[0] ? ": " : "", d->matrix_rows_note);
            if (strstr(info.name, "llvmpipe"))
                CHECK_MSG(d->matrix_rows.lanes != 0, "no accumulator row layout found on %s", info.name);
            gpu_test_finish_context(cm);
        }
    }
    if (!info.cooperative_matrix_usable) {
        printf("skipped: no cooperative matrices for vkattn on this device (%s)\n",
               info.cooperative_matrix_note[0] ? info.cooperative_matrix_note : "none");
        return test_g.failures ? test_finish() : SKIP;
    }
    double t0 = test_now_s(), grid_worst[3] = {0}, pair_worst[2] = {0};
    for (size_t i = 0, small_rows = 0; i < sizeof grid / sizeof grid[0]; i++) {
        /* several row matrices a subgroup are the KHR build's (attn_cm2 takes one: the plan test
         * checks it), so where attn_cm2 runs those rows are left to the KHR runs */
        const int khr_only = grid[i].row_frags > 1 && matrix2;
        const int small = grid[i].D <= 64, in_half = small && (small_rows++ % 2 == 0 ? khr_a : khr_b);
        if ((!only || (dims && !small) || in_half || (cm2_run && grid[i].cm2) || strcmp(only, grid[i].name) == 0) &&
            !khr_only)
            run_grid_case(&grid[i], 1000 + 10 * i, grid_worst);
    }
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (!only || khr_a || cm2_run || strcmp(only, pairs[i].name) == 0) run_pair(&pairs[i], 2000 + 10 * i, pair_worst);
    if (!only || khr_a) run_off(0), run_off(1);
    if (!only || khr_b || cm2_run) run_two_builds();
    if (!only || khr_b || cm2_run) run_partial_overflow();
    printf("largest errors: against the CPU path out max-abs %.2e NMSE %.2e lse %.2e; attn_cm vs attn_fused "
           "(f32) out max-abs %.2e lse %.2e; %.1f s\n",
           grid_worst[0], grid_worst[1], grid_worst[2], pair_worst[0], pair_worst[1], test_now_s() - t0);
    return test_finish();
}
