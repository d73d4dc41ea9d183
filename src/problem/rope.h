/* The rotary frequencies of a layer (vkattn_rope_type): checked once from the description, then
 * computed in double and rounded to fp32 once, into the one table the CPU path and the device
 * kernel both use, for the sequence length a forward reaches. */
#ifndef VKA_ROPE_H
#define VKA_ROPE_H

#include <stdint.h>

#include "vkattn.h"

/* The most frequencies (rope_dim / 2) a table that changes with the sequence length may have: a
 * forward writes it through its command buffer. */
#define VKA_ROPE_TABLE_MAX 512

/* Checks desc->rope_scaling for a layer whose RoPE is on with `dim` rotated dims: the fields its
 * type needs are there and in range, the ones it does not use are zero. */
vkattn_status vka_rope_scaling_check(const vkattn_layer_desc *desc, uint32_t dim, vkattn_error *error);

/* The attention factor that scales cos and sin (1 for the types without one). */
float vka_rope_attention_factor(const vkattn_rope_scaling *s);

/* Whether the table for a sequence of `seq_len` tokens differs from the layer's own table (the one
 * for short sequences): DYNAMIC past max_position_embeddings, LONGROPE past
 * original_max_position_embeddings. */
int vka_rope_table_varies(const vkattn_rope_scaling *s, uint64_t seq_len);

/* inv_freq_i, i < dim / 2, of RoPE with base `theta` over `dim` dims, for a sequence of `seq_len`
 * tokens (0: the layer's own table). */
void vka_rope_table(const vkattn_rope_scaling *s, float theta, uint32_t dim, uint64_t seq_len, float *out);

#endif
