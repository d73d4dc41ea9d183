/* The helpers every schedule builds its steps with (build.h): steps and copies, bindings and
 * slices, workspace, the loop budget. */
#include "plan/build.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "format/dtype.h"

static vkattn_status grow(vka_builder *b, void **array, uint32_t *capacity, uint32_t count, size_t size)
{
    if (count < *capacity) return VKATTN_OK;
    uint32_t n = *capacity ? *capacity * 2 : 32;
    void *bigger = vka_realloc(b->limits->faults, *array, n * size);
    if (!bigger) return vka_error_set(b->error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the plan");
    *array = bigger;
    *capacity = n;
    return VKATTN_OK;
}

uint64_t vka_elem_bytes(const vka_builder *b, vka_role role) { return vkattn_dtype_size(b->plan->role_dtype[role]); }

/* Adds a step: dispatches get their workgroups folded into the device's grid, and must keep to
 * the loop budget (the plan sized them to; this makes a planning mistake an error, never a
 * silently truncated loop). */
vkattn_status vka_push_step(vka_builder *b, const vka_step *step, uint64_t invocations, uint32_t wg)
{
    vka_plan *plan = b->plan;
    vkattn_status status = grow(b, (void **)&plan->steps, &plan->step_capacity, plan->step_count, sizeof *plan->steps);
    if (status != VKATTN_OK) return status;
    vka_step s = *step;
    if (s.kind == VKA_STEP_DISPATCH) {
        uint64_t groups = vka_ceil_div(invocations, wg);
        if (groups > UINT32_MAX || !vka_fold_groups(groups, b->limits->max_group_count, s.groups))
            return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                                 "stage %s needs %llu workgroups, more than this device's maxComputeWorkGroupCount allows",
                                 vkattn_stage_name(s.stage), (unsigned long long)groups);
        uint64_t trips = vka_step_loop_trips(&s);
        if (trips > b->budget)
            return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                                 "internal: stage %s would run %llu loop trips per invocation, over the loop budget %llu",
                                 vkattn_stage_name(s.stage), (unsigned long long)trips, (unsigned long long)b->budget);
    }
    plan->steps[plan->step_count++] = s;
    return VKATTN_OK;
}

vkattn_status vka_push_copy(vka_builder *b, const vka_copy *copy)
{
    vka_plan *plan = b->plan;
    vkattn_status status = grow(b, (void **)&plan->copies, &plan->copy_capacity, plan->copy_count, sizeof *plan->copies);
    if (status == VKATTN_OK) plan->copies[plan->copy_count++] = *copy;
    return status;
}

vkattn_status vka_push_write(vka_builder *b, vkattn_stage stage, vka_role role, const void *words, uint32_t count)
{
    vka_plan *plan = b->plan;
    while (plan->word_capacity < plan->word_count + count) {
        vkattn_status status = grow(b, (void **)&plan->words, &plan->word_capacity, plan->word_capacity, sizeof *plan->words);
        if (status != VKATTN_OK) return status;
    }
    memcpy(plan->words + plan->word_count, words, (size_t)count * sizeof *plan->words);
    vka_step s = {.kind = VKA_STEP_WRITE, .stage = stage, .binding_count = 1, .copy_first = plan->word_count,
                  .copy_count = count, .barrier_before = 1};
    s.bind[0] = (vka_bind){.role = role, .range = (uint64_t)count * 4};
    plan->word_count += count;
    return vka_push_step(b, &s, 0, 1);
}

static uint64_t texel_bytes(const vka_builder *b, vka_role role, uint8_t view)
{
    if (view != VKA_VIEW_BUFFER && vka_dtype_is_block(b->plan->role_dtype[role])) return 4; /* uint words */
    return view == VKA_VIEW_BUFFER ? 1 : vka_elem_bytes(b, role) * view;
}

int vka_fits_binding(const vka_builder *b, vka_role role, uint8_t view, uint64_t bytes)
{
    if (bytes > b->limits->max_storage_buffer_range) return 0;
    return view == VKA_VIEW_BUFFER || bytes / texel_bytes(b, role, view) <= b->limits->max_texel_elements;
}

/* The limit a binding of `bytes` through `view` passes: the range, else the texel count. */
static vkattn_status too_big(vka_builder *b, vka_role role, uint8_t view, uint64_t bytes)
{
    if (bytes > b->limits->max_storage_buffer_range)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "%s needs %llu bytes, more than this device's maxStorageBufferRange (%llu bytes) for one "
                             "binding",
                             vka_role_what(role), (unsigned long long)bytes,
                             (unsigned long long)b->limits->max_storage_buffer_range);
    return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                         "%s needs %llu texels, more than this device's maxTexelBufferElements (%llu) for one view",
                         vka_role_what(role), (unsigned long long)(bytes / texel_bytes(b, role, view)),
                         (unsigned long long)b->limits->max_texel_elements);
}

/* The bytes a binding from `start` to `end` covers: whole texels, and whole 16-byte words for
 * buffers (kernels read bytes and halves as 32-bit words, and vec4 stores span 16 bytes); never
 * past the buffer, whose size vkattn rounds up to 16 bytes. */
static uint64_t binding_range(const vka_builder *b, vka_role role, uint64_t start, uint64_t end, uint64_t texel)
{
    uint64_t unit = texel > 1 ? texel : 16, allocated = (b->plan->role_bytes[role] + 15) / 16 * 16;
    uint64_t range = (end - start + unit - 1) / unit * unit;
    return start + range <= allocated ? range : (allocated - start) / texel * texel;
}

vkattn_status vka_bind_whole(vka_builder *b, vka_bind *out, vka_role role, uint8_t view)
{
    *out = (vka_bind){.role = role, .view = view};
    if (role == VKA_ROLE_NONE) return VKATTN_OK;
    uint64_t bytes = b->plan->role_bytes[role], texel = texel_bytes(b, role, view);
    if (!vka_fits_binding(b, role, view, bytes)) return too_big(b, role, view, bytes);
    out->range = binding_range(b, role, 0, bytes, texel);
    return VKATTN_OK;
}

static vkattn_status bind_elems(vka_builder *b, vka_bind *out, vka_role role, uint8_t view, uint64_t first,
                                uint64_t count, uint64_t min_align, uint64_t *shift)
{
    uint64_t esize = vka_elem_bytes(b, role), texel = texel_bytes(b, role, view);
    if (vka_fits_binding(b, role, view, b->plan->role_bytes[role])) {
        *shift = first;
        return vka_bind_whole(b, out, role, view);
    }
    uint64_t align = view == VKA_VIEW_BUFFER ? b->limits->storage_offset_alignment : b->limits->texel_offset_alignment;
    if (align < texel) align = texel; /* both powers of two: the slice starts on a whole texel */
    if (align < min_align) align = min_align;
    uint64_t start = first * esize / align * align, end = (first + count) * esize;
    uint64_t range = binding_range(b, role, start, end, texel);
    if (!vka_fits_binding(b, role, view, range)) return too_big(b, role, view, range);
    *out = (vka_bind){.role = role, .view = view, .offset = start, .range = range};
    *shift = (first * esize - start) / esize;
    return VKATTN_OK;
}

vkattn_status vka_bind_elems(vka_builder *b, vka_bind *out, vka_role role, uint8_t view, uint64_t first,
                             uint64_t count, uint64_t *shift)
{
    return bind_elems(b, out, role, view, first, count, 1, shift);
}

vkattn_status vka_bind_vectors(vka_builder *b, vka_bind *out, vka_role role, uint32_t width, uint64_t first,
                               uint64_t count, uint64_t *shift)
{
    return bind_elems(b, out, role, VKA_VIEW_BUFFER, first, count, width * vka_elem_bytes(b, role), shift);
}

uint32_t vka_slice_offset(uint64_t layout_offset, uint64_t first, uint64_t shift, uint32_t vec)
{
    int64_t elems = (int64_t)(layout_offset + shift) - (int64_t)first;
    return (uint32_t)(elems / (int64_t)vec); /* exact: every term is a multiple of vec */
}

vkattn_status vka_reserve_workspace(vka_builder *b, vka_role role, uint64_t elems)
{
    uint64_t bytes = elems * vka_elem_bytes(b, role);
    if (b->limits->max_buffer_bytes && bytes > b->limits->max_buffer_bytes)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "the %s workspace needs %llu bytes, more than this device can allocate (%llu)",
                             vka_role_name(role), (unsigned long long)bytes,
                             (unsigned long long)b->limits->max_buffer_bytes);
    if (bytes > b->plan->workspace_bytes[role]) b->plan->workspace_bytes[role] = bytes;
    if (bytes > b->plan->role_bytes[role]) b->plan->role_bytes[role] = bytes;
    return VKATTN_OK;
}

uint64_t vka_budget_left(const vka_builder *b, uint64_t fixed)
{
    return b->budget == UINT64_MAX ? UINT64_MAX : b->budget > fixed ? b->budget - fixed : 0;
}

/* Element types: caller tensors as given, weights and activations in the storage dtype, biases
 * and every softmax quantity in fp32. */
