/* The CPU path: plain loops, double accumulation, straight from the formula. */
#ifndef VKA_REFERENCE_H
#define VKA_REFERENCE_H

#include "attention/config.h"

/* Runs the forward of `p` on host arrays. `w` must satisfy vka_layer_config_resolve for p->cfg and
 * `d` must satisfy vka_problem_from_host; this function only allocates and computes. Heads whose
 * head_mask entry is 0 are skipped (their context stays zero); NULL = every head. */
vkattn_status vka_reference_run(const vka_problem *p, const vkattn_weights *w, const vkattn_host_forward_desc *d,
                                const uint8_t *head_mask, vkattn_error *error);

#endif
