/* What the forward entry points share with submissions (submission.c): the checks of a forward on
 * device tensors, and recording one into a command buffer someone else submits. */
#ifndef VKA_FORWARD_H
#define VKA_FORWARD_H

#include "problem/args.h"
#include "api/layer.h"

/* The device is alive, the layer and tensors are free (in no unfinished submission; tensors may be
 * in `owner`, the submission asking), and the arguments match the table and the layer. */
vkattn_status vka_forward_check(vkattn_layer *layer, const vkattn_forward_desc *d, const vka_user *owner,
                                vka_args *a, vka_problem *p);

/* The checks a device forward adds to the table's: its tensors are this context's and free (in no
 * unfinished submission but `owner`), an fp16 output needs 16-bit storage, and a float attn_mask
 * holds no NaN or +inf. */
vkattn_status vka_forward_check_tensors(vkattn_layer *layer, const vka_args *a, const vka_user *owner);
/* The part of those checks that needs neither the tensors' contents nor their use (the explain
 * calls' own): this context's tensors, 16-bit storage for an fp16 output. */
vkattn_status vka_forward_check_tensor_kinds(const vkattn_layer *layer, const vka_args *a);

/* Records a checked device forward into `cmd` (nothing, on failure); its stats go to *stats. */
vkattn_status vka_forward_record(vkattn_layer *layer, const vka_args *a, const vka_problem *p, VkCommandBuffer cmd,
                                 vkattn_forward_stats *stats);

/* The layer's device tensor for one argument of host forwards (layer->host_io), re-created only
 * when its dtype or shape (v's) changes. */
vkattn_status vka_layer_host_tensor(vkattn_layer *layer, vka_arg arg, const vka_arg_value *v, vkattn_tensor **out);

#endif
