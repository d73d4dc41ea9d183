/* The cooperative-matrix self-tests: one matmul_cm dispatch a context runs where it has enabled
 * VK_KHR_cooperative_matrix, and one attn_cm dispatch per build of attn_cm its plans take, each
 * checked on the host, so that a driver that advertises matrices but computes them wrong (or
 * cannot build the kernel) costs the fast path, not the answers. */
#ifndef VKA_COOPMAT_CHECK_H
#define VKA_COOPMAT_CHECK_H

#include "memory/transfer.h"
#include "pipeline/pipeline_cache.h"
#include "plan/steps.h"

/* Runs matmul_cm once on a small deterministic problem: one workgroup's tile of C (M x N rows and
 * columns of the tile the plan uses, 32 x 32 with 8 x 8 x 8 matrices, 64 x 64 with 16 x 16 x 16)
 * over two blocks of the reduction, plus a bias, with the pipeline a forward of the cooperative-
 * matrix tuning uses (made through the pipeline cache but outside the context's registry:
 * vka_pipeline_make), and compares it with a float64 reference. The operands are multiples of 1/8
 * in [-1, 1]: exact in fp16, their products and sums exact in fp32, so a correct kernel is exact;
 * an element off by more than 2^-10 x max(1, |reference|) (fp16's rounding of the result) fails.
 * `tuning` gives the tile (a tuning with cm_* fields), `limits` (the context's plan limits) the
 * matrix shape, subgroup size and shared memory; the pipeline comes from `pipelines`, the one
 * submission goes through `transfer`.
 *
 * Returns VKATTN_OK with *passed 1, or *passed 0 and one line in `note` ("self-test failed: ...")
 * for a wrong element or a call that failed otherwise than below. Running out of host or device
 * memory and a lost device are returned as such (the context cannot be made either way). */
vkattn_status vka_coopmat_self_test(vka_device *dev, vka_transfer *transfer, vka_pipeline_cache *pipelines,
                                    const vka_plan_limits *limits, const vka_tuning *tuning, int *passed, char *note,
                                    size_t note_size);

/* Runs coopmat_layout.comp once (one subgroup of limits->subgroup_size, the matrix shape's M x N
 * fp32 accumulator and M x K fp16 A matrix) and reads from it how the accumulator's rows lie and
 * where an A matrix's elements are (device/matrix_rows.h): *out, or zeros and one line in `why`
 * where the layout is not of that form or the probe could not run (then attn_cm keeps its softmax
 * in shared memory; a_elements 0 and why: P goes through shared memory). Running out of memory and a lost
 * device are returned as such. */
vkattn_status vka_matrix_rows_probe(vka_device *dev, vka_transfer *transfer, vka_pipeline_cache *pipelines,
                                    const vka_plan_limits *limits, vka_matrix_rows *out, char *why, size_t why_size);

/* Runs attn_cm once, with the pipeline of `step` (a plan's attn_cm step) where its attn_mask and
 * variants are off and it loads no state (so a plain forward's own pipeline, made through the
 * context's registry), on a small causal problem (aligned at the end): four query heads on two
 * K/V heads (grouped), two query tiles of the step's shape (the second partial), three key blocks
 * or more (the last partial), every seventh key of the second half padded (a mask read from a
 * buffer: the first half's blocks are whole, the later ones take the mask tests), fp16-exact
 * operands whose keys grow along the sequence (so the running output is rescaled block after
 * block); and compares the output (the state and lse
 * where the step stores them instead) with float64. An element off by more than 2^-8 (the
 * probabilities and an fp16 output are rounded to fp16; |V| <= 1) fails. `dummy` fills the
 * unused bindings.
 *
 * Returns VKATTN_OK with *passed 1, or *passed 0 and one line in `note` ("attn_cm self-test
 * failed: ...") for a wrong element or a call that failed otherwise than below. Running out of
 * host or device memory and a lost device are returned as such. */
vkattn_status vka_attn_cm_self_test(vka_device *dev, vka_transfer *transfer, vka_pipeline_cache *pipelines,
                                    vka_buffer *dummy, const vka_step *step, int *passed, char *note, size_t note_size);

/* The build of attn_cm that vka_attn_cm_self_test runs for `step`, as a key: steps of one key run
 * the same self-test (a context tests each build its plans take once). */
uint64_t vka_attn_cm_variant(const vka_step *step);

#endif
