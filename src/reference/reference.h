/* The CPU path: plain loops, double accumulation, straight from the formula. */
#ifndef VKA_REFERENCE_H
#define VKA_REFERENCE_H

#include "problem/args.h"

/* A forward's host arrays, by argument: inputs in their table dtypes (activations and float masks
 * as float, bool masks as bytes, valid lengths as int32), outputs as float; NULL where not given. */
typedef struct vka_host_arrays {
    const void *in[VKA_ARG_COUNT];
    float *out[VKA_ARG_COUNT];
    const uint32_t *positions; /* (B, L) token positions of a self-attention forward, or NULL (p->positions) */
} vka_host_arrays;

/* The arrays of a host forward's arguments (vka_args_from_host). */
void vka_host_arrays_of(const vka_args *args, vka_host_arrays *out);

/* Runs the forward of `p` (checked by vka_args_check) on host arrays; `w` must satisfy
 * vka_layer_config_resolve for p->cfg (its sinks are used when not NULL). `alibi_slopes`: H
 * resolved slopes (vka_alibi_slopes) when p->cfg.alibi, else unused. This function only allocates
 * and computes. Heads whose head_mask entry is 0 are skipped (their context stays zero); NULL =
 * every head. */
vkattn_status vka_reference_run(const vka_problem *p, const vkattn_weights *w, const float *alibi_slopes,
                                const vka_host_arrays *d, const uint8_t *head_mask, vkattn_error *error);

#endif
