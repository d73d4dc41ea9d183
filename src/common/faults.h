/* Test-only failure injection, per context (so there is still no process-wide state): make the
 * Nth host allocation, or the Nth fallible Vulkan call, made on behalf of one context fail, or
 * hide a device feature from it. The
 * tests walk N over every create and forward path (tests/test_faults.c). Production code never
 * arms it; an unarmed counter costs one comparison. */
#ifndef VKA_FAULTS_H
#define VKA_FAULTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct vka_faults {
    uint64_t host_fail_at; /* 1-based index of the host allocation to fail; 0 = none */
    uint64_t vk_fail_at;   /* 1-based index of the Vulkan call to fail; 0 = none */
    int vk_result;         /* the VkResult injected (VK_ERROR_OUT_OF_DEVICE_MEMORY when 0) */
    int hide_16bit_storage; /* create the device as if it lacked storageBuffer16BitAccess */
    int coopmat_check;     /* the cooperative-matrix self-test at context creation (api/coopmat_check.c):
                              VKA_FAULT_COOPMAT_WRONG finds a wrong element, VKA_FAULT_COOPMAT_FAIL a
                              failed call, as a broken driver would give them */
    int attn_cm_check;     /* the same for attn_cm's self-test at the first plan that takes it */
    int attn_cm2_check;    /* the same for attn_cm2's alone (it overrides attn_cm_check there) */
    int attn_cm_reg_check; /* the same for attn_cm's softmax-in-registers build alone (ditto) */
    int attn_cm_reg_p_check; /* the same for its build with P in registers too (it overrides both) */
    uint64_t host_calls;   /* counted so far */
    uint64_t vk_calls;
} vka_faults;

enum { VKA_FAULT_COOPMAT_WRONG = 1, VKA_FAULT_COOPMAT_FAIL = 2 };

/* Counts one host allocation; true if it must fail. `faults` may be NULL (never fails). */
static inline int vka_fault_host(vka_faults *faults)
{
    return faults && ++faults->host_calls == faults->host_fail_at;
}

/* Counts one Vulkan call; true if it must fail. */
static inline int vka_fault_vk(vka_faults *faults)
{
    return faults && ++faults->vk_calls == faults->vk_fail_at;
}

#endif
