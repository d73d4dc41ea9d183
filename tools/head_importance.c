#include "head_importance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

vkattn_status head_runner_forward(head_runner *r, const uint8_t *keep, float *out, vkattn_error *error)
{
    vkattn_host_forward_desc f = r->forward;
    f.output = out;
    if (!r->layer) {
        vkattn_layer_desc d = r->desc;
        d.head_mask = keep;
        return vkattn_reference_forward(&d, r->weights, &f, error);
    }
    vkattn_status s = vkattn_layer_set_head_mask(r->layer, keep);
    if (s == VKATTN_OK) s = vkattn_forward_host(r->layer, &f);
    return s;
}

void head_compare(const float *a, const float *ref, size_t n, double *rel_l2, double *max_abs)
{
    double diff2 = 0, ref2 = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - ref[i];
        diff2 += d * d;
        ref2 += (double)ref[i] * ref[i];
        if (fabs(d) > m) m = fabs(d);
    }
    *rel_l2 = ref2 > 0 ? sqrt(diff2 / ref2) : sqrt(diff2);
    *max_abs = m;
}

vkattn_status head_importance_measure(head_runner *r, const uint8_t *start, head_score *scores, vkattn_error *error)
{
    const uint32_t H = r->desc.num_heads;
    float *full = malloc(r->out_elems * sizeof(float)), *ablated = malloc(r->out_elems * sizeof(float));
    uint8_t *keep = malloc(H);
    vkattn_status s = full && ablated && keep ? VKATTN_OK : VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    if (s == VKATTN_OK) s = head_runner_forward(r, start, full, error);
    for (uint32_t h = 0; h < H && s == VKATTN_OK; h++) {
        scores[h] = (head_score){.head = h, .active = !start || start[h]};
        uint32_t others = 0;
        for (uint32_t k = 0; k < H; k++) others += k != h && (!start || start[k]);
        scores[h].alone = scores[h].active && others == 0;
        if (!scores[h].active || scores[h].alone) continue; /* nothing to remove, or the last head */
        for (uint32_t k = 0; k < H; k++) keep[k] = k != h && (!start || start[k]);
        s = head_runner_forward(r, keep, ablated, error);
        if (s == VKATTN_OK) head_compare(ablated, full, r->out_elems, &scores[h].rel_l2, &scores[h].max_abs);
    }
    if (s == VKATTN_OK && r->layer) s = vkattn_layer_set_head_mask(r->layer, start); /* leave it as found */
    free(full), free(ablated), free(keep);
    return s;
}

static int by_importance(const void *pa, const void *pb)
{
    const head_score *a = pa, *b = pb;
    if (a->active != b->active) return b->active - a->active;
    if (a->rel_l2 != b->rel_l2) return a->rel_l2 < b->rel_l2 ? 1 : -1;
    return (int)a->head - (int)b->head;
}

void head_scores_rank(head_score *scores, uint32_t H) { qsort(scores, H, sizeof *scores, by_importance); }
