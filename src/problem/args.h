/* The arguments of a forward: one row each in one table (args.c) saying what a caller may pass,
 * in which dtypes and shapes (dims written in the glossary's symbols), and which plan role binds
 * it. Both entry points describe what they were given as a vka_args (device tensors, or host
 * arrays and the sizes beside them) and one function checks that against the table and the
 * layer, giving the vka_problem everything downstream trusts. A new argument is a new row. */
#ifndef VKA_ARGS_H
#define VKA_ARGS_H

#include "problem/config.h"
#include "problem/roles.h"

typedef enum vka_arg {
    VKA_ARG_QUERY,
    VKA_ARG_KEY,
    VKA_ARG_VALUE,
    VKA_ARG_KEY_PADDING_MASK,
    VKA_ARG_VALID_LENS,
    VKA_ARG_ATTN_MASK,
    VKA_ARG_OUTPUT,
    VKA_ARG_WEIGHTS,
    VKA_ARG_LSE,
    VKA_ARG_COUNT
} vka_arg;

/* The symbols a dim is written in (the glossary in vkattn.h). */
typedef enum vka_dim {
    VKA_DIM_B,
    VKA_DIM_L,
    VKA_DIM_S,
    VKA_DIM_S_EXT, /* S' = S + extra keys */
    VKA_DIM_E,
    VKA_DIM_H,
    VKA_DIM_BH,    /* B * H */
    VKA_DIM_KDIM,
    VKA_DIM_VDIM,
    VKA_DIM_COUNT
} vka_dim;

/* One shape an argument may have. */
typedef struct vka_arg_form {
    uint32_t rank;
    vka_dim dims[VKATTN_MAX_RANK];
    const char *names; /* "B, L, E", for messages */
    const char *label; /* the argument's name in messages when this form was asked for; NULL = the row's */
} vka_arg_form;

typedef struct vka_arg_row {
    const char *name;
    vka_role role;        /* the plan role that binds it */
    uint32_t dtypes;      /* accepted dtypes, bit 1 << vkattn_dtype */
    int output;           /* written by the forward */
    uint32_t forms;       /* 1 or 2 shapes; which one was given sets the problem's mode */
    vka_arg_form form[2];
} vka_arg_row;

const vka_arg_row *vka_arg_get(vka_arg arg);

/* One argument as a caller gave it: a device tensor, or host data whose dtype and shape the host
 * description's sizes and flags say. */
typedef struct vka_arg_value {
    int given;
    vkattn_dtype dtype;
    uint32_t rank;
    uint32_t dims[VKATTN_MAX_RANK];
    const vkattn_tensor *tensor; /* device entry point (opaque here) */
    uint64_t memory, begin, end; /* a device argument's bytes: its VkBuffer's handle and a range of it */
    const void *host;            /* host entry point (outputs: where results go) */
} vka_arg_value;

/* Everything a forward was given. */
typedef struct vka_args {
    vka_arg_value v[VKA_ARG_COUNT];
    int weights_averaged; /* the attn_weights asked for are the head average (its second form) */
    int causal;
    vkattn_path path;
    uint32_t rope_offset;
    vkattn_dtype kv_round; /* the CPU path rounds k and v as this KV cache dtype stores them */
    int key_is_query; /* key (and value) not given: self-attention on the query */
} vka_args;

/* VKATTN_ERROR_INVALID_ARGUMENT unless `path` is a vkattn_path. */
vkattn_status vka_check_path(vkattn_path path, vkattn_error *error);
/* Describes a host forward's arrays from its sizes and flags. */
vkattn_status vka_args_from_host(const vka_layer_config *cfg, const vkattn_host_forward_desc *d, vka_args *out,
                                 vkattn_error *error);

/* Checks every argument against its row and the layer (dtypes, shapes, what may be asked for
 * together, sizes, float-mask values the library can see) and fills `out`. */
vkattn_status vka_args_check(const vka_layer_config *cfg, const vka_args *args, vka_problem *out, vkattn_error *error);

/* The expected dims of one form of an argument for a problem. */
void vka_arg_dims(const vka_problem *p, const vka_arg_form *form, uint32_t *dims);

/* Finds the first NaN or +inf in a float mask: those make a softmax row NaN, so they are refused. */
vkattn_status vka_check_float_mask(const float *mask, size_t n, vkattn_error *error);

#endif
