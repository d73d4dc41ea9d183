/*
 * vkattn.h — multi-head attention on Vulkan compute shaders.
 *
 * User guide
 * ==========
 *
 * vkattn computes PyTorch's nn.MultiheadAttention forward (batch_first=True, eval mode) on any Vulkan
 * 1.1 device, and the same thing on the CPU (the reference path every GPU result is checked against).
 *
 * Quick start (host pointers in, host pointers out):
 *
 *     vkattn_context *ctx;
 *     vkattn_context_desc cdesc = {0};                  // zero means default everywhere
 *     if (vkattn_context_create(&cdesc, &ctx, NULL) != VKATTN_OK) ...;
 *
 *     vkattn_layer_desc ldesc = {.embed_dim = 512, .num_heads = 8};
 *     vkattn_weights w = {.in_proj_weight = ..., .in_proj_bias = ...,
 *                         .out_proj_weight = ..., .out_proj_bias = ...};
 *     vkattn_layer *layer;
 *     vkattn_layer_create(ctx, &ldesc, &w, &layer);
 *
 *     vkattn_host_forward_desc f = {.batch = B, .query_len = L, .query = x, .output = y};
 *     if (vkattn_forward_host(layer, &f) != VKATTN_OK)
 *         fprintf(stderr, "%s\n", vkattn_context_last_error(ctx));
 *
 *     vkattn_layer_destroy(layer);
 *     vkattn_context_destroy(ctx);
 *
 * Beyond that: device tensors and vkattn_forward keep data on the device between layers;
 * vkattn_submission_* runs a stack of forwards with one submit and no wait; vkattn_weight_file_open
 * reads one layer of a (Hugging Face or PyTorch) safetensors checkpoint. An application that uses
 * Vulkan itself includes vkattn_vulkan.h too: vkattn on its device, in its command buffers, on its
 * buffers.
 *
 * Glossary (used the same way in code, shaders, tests and docs)
 * --------------------------------------------------------------
 *   B  batch                    E  embed_dim (query features, output features)
 *   H  heads                    D  head dim: head_dim, else E / H (then E % H != 0 is an error)
 *   L  query length             kdim, vdim  key / value feature sizes (default E)
 *   S  key/value length         S' = S + add_bias_kv + add_zero_attn (keys actually attended over)
 *
 * Shapes and layouts
 * ------------------
 * Every tensor is dense, row-major (C order), batch first:
 *   query (B,L,E)   key (B,S,kdim)   value (B,S,vdim)   output (B,L,E)
 *   key_padding_mask (B,S) bool, true = ignore that key
 *   valid_lens (B) or (B,L) int32: keys j >= valid_len are ignored (the D2L masked-softmax form)
 *   attn_mask (L,S) or (B*H,L,S), bool (true = may not attend) or float (added to the scores);
 *             the 3-d form is indexed b*H + h, as in PyTorch
 *   attention weights (B,H,L,S') per head, or (B,L,S') averaged over heads
 * Weights use PyTorch's state_dict layout; a linear layer computes y = x W^T + b.
 * Masks combine: a key is excluded if any mask excludes it. The keys appended by add_bias_kv and
 * add_zero_attn are never masked, as in PyTorch.
 *
 * A query row whose keys are all masked gets zero attention weights and a zero context vector
 * (so the output row is just out_proj.bias), never NaN. PyTorch >= 2.5 SDPA and FlashAttention do
 * the same; PyTorch 1.x nn.MultiheadAttention returns NaN there. D2L's masked_softmax replaces
 * masked scores by -1e6 and so gives uniform weights for such a row; vkattn does not.
 * Float masks may hold -inf (excluded) but not NaN or +inf: those are refused with
 * VKATTN_ERROR_NON_FINITE where the library can see the values (host masks, and device masks
 * written through vkattn_tensor_write). A device mask that a forward wrote is read back and
 * checked when a forward, a submission's add or a record next reads it, as it is then. Values
 * that a forward not yet run will write are not checked: a mask that a forward earlier in the
 * same submission writes is taken unread (what it holds at the add is not what will be read),
 * and a record reads the mask as it is, not as a forward recorded before it will leave it. NaN or
 * +inf written so make the rows that read them NaN.
 *
 * Error model
 * -----------
 * Every fallible call returns a vkattn_status. On failure, out-parameters are left untouched and a
 * readable message is kept: per context for calls that have one (vkattn_context_last_error), else in
 * an optional vkattn_error the caller passes. The library never aborts and never prints, except
 * Vulkan validation messages when validation is enabled and pipeline statistics on stderr when
 * VKATTN_PIPELINE_STATS=1 asks for them. VKATTN_ERROR_DEVICE_LOST sticks to its
 * context: every later call on it returns that status without touching the dead device.
 *
 * Threading and ownership
 * -----------------------
 * There is no global mutable state: independent contexts may be used from different threads at the
 * same time. A context, and every layer and tensor created from it, must be externally synchronized:
 * the application must not call into the same context, or any object created from it, from two
 * threads at once. That rule is checked, cheaply, by every call that returns a vkattn_status: one
 * that enters while another
 * thread is inside a call on the same context (or any object of it) returns VKATTN_ERROR_BUSY at
 * once, changes nothing and sets no message (the message slot belongs to the call inside).
 * Destroy functions, vkattn_layer_get_desc and vkattn_context_last_error cannot report it: never
 * call them while another thread uses the context.
 * Objects are owned by the caller; each *_create has a *_destroy that accepts NULL. Destroying a
 * context also destroys the layers, tensors and submissions still made from it (after waiting for
 * whatever vkattn submitted of theirs that is still running; forwards recorded into an
 * application's own command buffers, vkattn_vulkan.h, are the application's to wait for first);
 * their handles are invalid afterwards. Input pointers are
 * only read during the call; the library copies what it keeps (except weights given with
 * host_weights = VKATTN_HOST_WEIGHTS_BORROW, kept until the layer is destroyed).
 *
 * Environment variables
 * ---------------------
 *   VKATTN_DEVICE      device index or case-insensitive name substring, used when
 *                      vkattn_context_desc.device is NULL
 *   VKATTN_VALIDATION  "1" enables VK_LAYER_KHRONOS_validation (with synchronization validation)
 *                      when vkattn_context_desc.validation is VKATTN_VALIDATION_DEFAULT
 *   VKATTN_TUNING      "lavapipe", "gpu", "coopmat", "intel" or "mobile": the kernel shapes (tile
 *                      sizes), when vkattn_context_desc.tuning is NULL (default: the device's class);
 *                      a tuning string ("coopmat:cm_ksteps=4") sets fields of one, see there
 *   VKATTN_COOPMAT     "0" turns VK_KHR_cooperative_matrix off for every context (as
 *                      vkattn_context_desc.no_cooperative_matrix does for one)
 *   VKATTN_COOPMAT2    "1" turns VK_NV_cooperative_matrix2 on where the device has what attn_cm2
 *                      needs: the fused attention as attn_cm2 instead of attn_cm (experimental,
 *                      see vkattn_device_info.cooperative_matrix2)
 *   VKATTN_LOOP_BUDGET  loop trips per shader invocation to plan within, when
 *                      vkattn_context_desc.loop_budget is 0; lowers the device's own, never raises it
 *   VKATTN_PIPELINE_CACHE  a pipeline cache file to read and write, when
 *                      vkattn_context_desc has neither pipeline_cache_path nor pipeline_cache_data
 *                      ("" = none)
 *   VKATTN_PIPELINE_STATS  "1" prints each pipeline's compiler statistics (registers, spills,
 *                      instructions: whatever the driver reports) to stderr as it is created, on
 *                      devices with VK_KHR_pipeline_executable_properties (a note on others);
 *                      contexts on vkattn's own device only (an application's device keeps the
 *                      features its application enabled)
 * The switches VKATTN_VALIDATION, VKATTN_COOPMAT, VKATTN_COOPMAT2 and VKATTN_PIPELINE_STATS take
 * "0" or "1" (unset or "" = their default); any other value makes a context's creation
 * VKATTN_ERROR_INVALID_ARGUMENT, naming it.
 */
#ifndef VKATTN_H
#define VKATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Version                                                                                         */
/* ---------------------------------------------------------------------------------------------- */

#define VKATTN_VERSION_MAJOR 0
#define VKATTN_VERSION_MINOR 6
#define VKATTN_VERSION_PATCH 0
#define VKATTN_VERSION_NUMBER (VKATTN_VERSION_MAJOR * 10000 + VKATTN_VERSION_MINOR * 100 + VKATTN_VERSION_PATCH)

/* The version the library was built as (compare with VKATTN_VERSION_NUMBER). */
unsigned vkattn_version_number(void);
/* "MAJOR.MINOR.PATCH"; a static string. */
const char *vkattn_version_string(void);

/* ---------------------------------------------------------------------------------------------- */
/* Status codes                                                                                    */
/* ---------------------------------------------------------------------------------------------- */

/* X(name, value, short description). Values are stable. */
#define VKATTN_STATUS_LIST(X)                                                                      \
    X(VKATTN_OK, 0, "success")                                                                     \
    X(VKATTN_ERROR_INVALID_ARGUMENT, 1, "invalid argument")                                        \
    X(VKATTN_ERROR_SHAPE, 2, "tensor shape does not match")                                        \
    X(VKATTN_ERROR_DTYPE, 3, "tensor dtype does not match")                                        \
    X(VKATTN_ERROR_HEADS, 4, "embed_dim is not divisible by num_heads, or num_heads by num_kv_heads") \
    X(VKATTN_ERROR_NON_FINITE, 5, "a value is NaN, infinite or out of the storage dtype's range")                                        \
    X(VKATTN_ERROR_SIZE_OVERFLOW, 6, "size computation overflows")                                 \
    X(VKATTN_ERROR_DEVICE_LIMIT, 7, "exceeds a device limit")                                      \
    X(VKATTN_ERROR_OUT_OF_HOST_MEMORY, 8, "out of host memory")                                    \
    X(VKATTN_ERROR_OUT_OF_DEVICE_MEMORY, 9, "out of device memory")                                \
    X(VKATTN_ERROR_NO_DEVICE, 10, "no suitable Vulkan device")                                     \
    X(VKATTN_ERROR_UNSUPPORTED, 11, "not supported by this device or build")                       \
    X(VKATTN_ERROR_VULKAN, 12, "a Vulkan call failed")                                             \
    X(VKATTN_ERROR_DEVICE_LOST, 13, "the Vulkan device was lost")                                  \
    X(VKATTN_ERROR_IO, 14, "file could not be opened, read or written")                            \
    X(VKATTN_ERROR_FORMAT, 15, "malformed or unsupported file contents")                           \
    X(VKATTN_ERROR_NOT_FOUND, 16, "a required tensor is missing")                                 \
    X(VKATTN_ERROR_BUSY, 17, "the object is in use by another call or an unfinished submission")  \
    X(VKATTN_ERROR_CACHE_FULL, 18, "the KV cache has no free block left for the new tokens")

typedef enum vkattn_status {
#define VKATTN_STATUS_ENUM_(name, value, text) name = value,
    VKATTN_STATUS_LIST(VKATTN_STATUS_ENUM_)
#undef VKATTN_STATUS_ENUM_
} vkattn_status;

/* The short description of a status ("invalid argument"); "unknown status" for other values. */
const char *vkattn_status_string(vkattn_status status);
/* The enum name of a status ("VKATTN_ERROR_SHAPE"); "VKATTN_UNKNOWN" for other values. */
const char *vkattn_status_name(vkattn_status status);

/* Where calls without a context put their detailed message. Callers may pass NULL. */
typedef struct vkattn_error {
    vkattn_status status;
    char message[512];
} vkattn_error;

/* ---------------------------------------------------------------------------------------------- */
/* Devices and contexts                                                                            */
/* ---------------------------------------------------------------------------------------------- */

typedef enum vkattn_device_type {
    VKATTN_DEVICE_OTHER = 0,
    VKATTN_DEVICE_INTEGRATED_GPU = 1,
    VKATTN_DEVICE_DISCRETE_GPU = 2,
    VKATTN_DEVICE_VIRTUAL_GPU = 3,
    VKATTN_DEVICE_CPU = 4
} vkattn_device_type;

/* One shape of a cooperative-matrix multiply-add (VkCooperativeMatrixPropertiesKHR): an M x K
 * matrix A times a K x N matrix B, added to an M x N matrix C. */
typedef struct vkattn_matrix_shape {
    uint32_t m, n, k;
} vkattn_matrix_shape;
#define VKATTN_MAX_MATRIX_SHAPES 8

/* The features of VK_NV_cooperative_matrix2 (vkattn_device_info.cooperative_matrix2), one bit
 * each, named as the extension's VkPhysicalDeviceCooperativeMatrix2FeaturesNV members. */
enum {
    VKATTN_MATRIX2_WORKGROUP_SCOPE = 1u << 0,      /* cooperativeMatrixWorkgroupScope */
    VKATTN_MATRIX2_FLEXIBLE_DIMENSIONS = 1u << 1,  /* cooperativeMatrixFlexibleDimensions */
    VKATTN_MATRIX2_REDUCTIONS = 1u << 2,           /* cooperativeMatrixReductions */
    VKATTN_MATRIX2_CONVERSIONS = 1u << 3,          /* cooperativeMatrixConversions */
    VKATTN_MATRIX2_PER_ELEMENT = 1u << 4,          /* cooperativeMatrixPerElementOperations */
    VKATTN_MATRIX2_TENSOR_ADDRESSING = 1u << 5,    /* cooperativeMatrixTensorAddressing */
    VKATTN_MATRIX2_BLOCK_LOADS = 1u << 6           /* cooperativeMatrixBlockLoads */
};

typedef struct vkattn_device_info {
    uint32_t index;                   /* position in vkattn_list_devices order */
    int is_default;                   /* the device a context picks when nothing is asked for */
    vkattn_device_type type;
    char name[256];                   /* VkPhysicalDeviceProperties::deviceName */
    char driver_name[256];            /* VkPhysicalDeviceDriverProperties, "" if unknown */
    char driver_info[256];
    uint32_t api_version;             /* VK_MAKE_API_VERSION packed */
    uint32_t driver_version;          /* vendor-specific packing */
    uint32_t vendor_id, device_id;
    uint64_t max_storage_buffer_range;
    uint64_t max_memory_allocation_size;
    uint64_t device_local_heap_bytes; /* size of the largest DEVICE_LOCAL heap */
    uint32_t max_shared_memory_bytes;
    uint32_t max_workgroup_invocations;
    uint32_t max_workgroup_count[3];
    uint32_t subgroup_size;           /* the default subgroup size (VkPhysicalDeviceSubgroupProperties) */
    uint32_t subgroup_size_min, subgroup_size_max; /* the sizes a pipeline may require
                                         (VkPhysicalDeviceSubgroupSizeControlProperties); both
                                         subgroup_size where the device cannot choose */
    int subgroup_size_control;        /* a compute pipeline may require a subgroup size, and full
                                         subgroups (subgroupSizeControl, computeFullSubgroups and
                                         compute in requiredSubgroupSizeStages) */
    int storage_16bit;                /* storageBuffer16BitAccess */
    int shader_float16;
    int cooperative_matrix;           /* VK_KHR_cooperative_matrix with its cooperativeMatrix feature */
    /* The cooperative-matrix shapes vkattn's kernels can use: those the driver lists with fp16 A
     * and B, fp32 C and result, subgroup scope (an M x K times K x N multiply-add); at most
     * VKATTN_MAX_MATRIX_SHAPES, in the driver's order. 0 where cooperative_matrix is 0. */
    uint32_t cooperative_matrix_shape_count;
    vkattn_matrix_shape cooperative_matrix_shapes[VKATTN_MAX_MATRIX_SHAPES];
    /* 1 where vkattn's cooperative-matrix kernels may run: the device has a shape above, Vulkan
     * 1.3, shaderFloat16, vulkanMemoryModel and subgroup_size_control; this build has the kernels;
     * and neither VKATTN_COOPMAT=0 nor vkattn_context_desc.no_cooperative_matrix turned them off.
     * For a context: they are enabled on its device and passed the self-test below. Otherwise
     * cooperative_matrix_note says why ("self-test failed: ..." when the self-test turned them
     * off). */
    int cooperative_matrix_usable;
    char cooperative_matrix_note[128];
    /* For a context (vkattn_context_device): 1 when its cooperative-matrix self-test passed. A
     * context that enables cooperative matrices first runs one small GEMM on them (one
     * workgroup's tile, e.g. 32 x 128 x 32 with lavapipe's 8 x 8 x 8 matrices; one dispatch, one
     * kernel build through the pipeline cache, where forwards under the "coopmat" tuning then
     * find it) and compares it on the host with float64 within fp16's rounding; a wrong answer,
     * or a kernel the driver cannot build or run, turns them off for that context (usable 0, the
     * note says what went wrong) instead of failing. It runs at creation, not at first use, so
     * that the tuning and every plan of the context see the verdict. 0 in vkattn_list_devices,
     * which creates no device. The cooperative-matrix fused attention (attn_cm) has a self-test
     * of its own, one dispatch at the context's first plan (forward, warm-up or explain) that
     * takes each build of it (a head dim, tile and element types); where one fails, the context runs its attention on attn_fused from then on, the
     * projections stay on matrices, and cooperative_matrix_note says "attn_cm self-test failed:
     * ..." (read it with vkattn_context_device after that plan). attn_cm2 (VKATTN_COOPMAT2=1,
     * see cooperative_matrix2) is tested the same way; where it fails, the note says "attn_cm2
     * self-test failed: ..." and the context goes on with attn_cm, tested in turn. */
    int cooperative_matrix_checked;
    /* VK_NV_cooperative_matrix2's features where the device has that extension (VKATTN_MATRIX2_*
     * bits; 0 without it; the same in vkattn_list_devices and vkattn_context_device). With
     * VKATTN_COOPMAT2=1, a context with usable cooperative matrices whose device has REDUCTIONS,
     * CONVERSIONS and PER_ELEMENT enables those three and runs its cooperative-matrix attention
     * as attn_cm2, which keeps the softmax in the matrices (row max and sum by reductions, masks
     * and exponentials per element) instead of passing scores through shared memory; same
     * contract, same self-test. Opt-in: proven on Mesa 26 lavapipe (CI) and checked on an H100,
     * where it was no faster than attn_cm. */
    uint32_t cooperative_matrix2;
    float timestamp_period_ns;        /* 0 if the compute queue has no timestamps */
    char tuning[32];                  /* the kernel shapes vkattn picks for this device (a context's: its
                                         tuning string's class, with ", K fields set" where K of its
                                         fields differ from the class's own values) */
    uint32_t loop_budget;             /* loop trips one shader invocation may run before the driver
                                         cuts its loops short, which vkattn plans within (0 = no
                                         limit known; 65535 on lavapipe, docs/KNOWN_ISSUES.md) */
    uint32_t compute_units;           /* SMs / CUs / shader cores, where the driver says (VK_NV_shader_sm_builtins,
                                         VK_AMD_shader_core_properties, VK_ARM_shader_core_builtins); 0 = unknown.
                                         Split-KV decoding sizes its key parts by it. */
} vkattn_device_info;

/* Lists the Vulkan devices. Writes at most `capacity` entries to `infos` (may be NULL when
 * capacity is 0) and the total number of devices to *count. */
vkattn_status vkattn_list_devices(vkattn_device_info *infos, uint32_t capacity, uint32_t *count,
                                  vkattn_error *error);

typedef enum vkattn_validation {
    VKATTN_VALIDATION_DEFAULT = 0, /* on if the environment has VKATTN_VALIDATION=1 */
    VKATTN_VALIDATION_ON = 1,      /* Khronos validation + synchronization validation, if installed */
    VKATTN_VALIDATION_OFF = 2
} vkattn_validation;

typedef struct vkattn_context_desc {
    /* Device index ("1") or case-insensitive name substring ("llvmpipe").
     * NULL = the VKATTN_DEVICE environment variable, else the default device
     * (discrete GPU > integrated > virtual > CPU > other, first of each kind). */
    const char *device;
    vkattn_validation validation; /* default: VKATTN_VALIDATION_DEFAULT */
    /* Kernel shapes (tile sizes): NULL = the VKATTN_TUNING environment variable, else the
     * device's class, chosen from its properties (see `vkattn info` and docs/ARCHITECTURE.md):
     * "lavapipe" (CPU implementations), "coopmat" (usable cooperative matrices of 16 x 16 or
     * more in 32-lane subgroups: NVIDIA, AMD RDNA3), "intel" (narrower matrices or smaller
     * subgroups: Intel Arc, Xe2), "mobile" (integrated, <= 32 KiB of shared memory, subgroups
     * that cannot be 32 wide: Mali, Adreno), "gpu" (any other GPU). A name forces that class (for
     * tests and comparisons: speed differs, and so may rounding, see below) on any device that
     * can run it; one it cannot run is refused (VKATTN_ERROR_UNSUPPORTED, saying why): workgroups
     * larger than the device allows, or, for "coopmat" and "intel", a device without cooperative
     * matrices (vkattn_device_info.cooperative_matrix 0) or a build without the kernels. Where
     * they are only turned off (no_cooperative_matrix, VKATTN_COOPMAT=0, a failed self-test) a
     * forced "coopmat" or "intel" runs with the plain matmul and attn_fused. In those two classes
     * the projections of layers with fp16 operands (F16 storage, or precision VKATTN_PRECISION_F16)
     * run on matrix cores (matmul_cm, fp16 operands, fp32 accumulation), and in "coopmat" the fused
     * attention too (attn_cm, checked against the CPU path on an NVIDIA H200 and on Mesa 26
     * lavapipe); the other kernels as "gpu". The GPU classes project fp32 operands on a
     * shared-memory scalar GEMM (matmul_sm), and where compute shaders have subgroup arithmetic and
     * shuffles on 4 or more lanes, decoding steps' few rows on a matrix-vector kernel (matmul_vec;
     * matmul_vec_storage, 16-byte storage-buffer loads, where rows start on multiples of 8
     * elements) and their attention (but in "mobile") on attn_paged's GPU-shaped build; the scalar fused attention
     * (fp32 attention, and every attention without attn_cm) with K and V staged in shared memory
     * (attn_fused_shared, in "gpu" and "intel"); the rest with GPU-sized tiles.
     * "coopmat"'s tiles and defaults were measured on an H200 and H100s, each default against the
     * kernel as it was (cm_group_rows: no faster, no slower there), but for those of sessions 18
     * and 19 (cm_attn_reg_p, cm_direct and attn_cm's softmax changes), not yet timed on a GPU;
     * the others were chosen without a GPU to measure on.
     *
     * Tuning strings, for trying kernel shapes on a GPU without a rebuild: "NAME:FIELD=VALUE,..."
     * sets fields of class NAME (an empty NAME: of the device's class), e.g.
     * "coopmat:cm_frags_m=2,cm_ksteps=4" (no spaces, no comma at the end). The fields, in units of
     * the device's matrix shape M x N x K where they count matrices: cm_frags_m, cm_frags_n (1-8:
     * each of matmul_cm's 2 x cm_subgroups_n subgroups holds m x n accumulators),
     * cm_subgroups_n (1, 2, 4 or 8: matmul_cm's subgroups across its tile, 2 rows of them), cm_stages
     * (1 or 2: blocks staged in shared memory, 2: one barrier per block), cm_frags_narrow (0-8: the same
     * for matrices narrower than 16, 0 = as those), cm_ksteps (1-8: matrix steps per staged block),
     * cm_min_rows (1-65536: fewer rows take the matrix-vector kernels), cm_prefetch (1: the next
     * block fetched while this one multiplies, 0: as it is staged), cm_wide_loads (1: matmul_cm's
     * fp16 operands in 16-byte loads of 8 values where rows start on multiples of 8, the coopmat
     * and intel classes' default; 0: 4 values per load), cm_attn_wide_loads (the same for
     * attn_cm's Q, K and V; 0 in the coopmat class: faster on an H100),
     * cm_subgroup (0 or a power of
     * two to 128: the subgroup size wanted, 0 = the smallest), cm_attn_subgroups (1-8: attn_cm's
     * subgroups of M query rows per workgroup), cm_attn_key_frags (1-8: N-key matrices per block, at
     * most 64 keys), cm_attn_row_lanes (a power of two, 1-64: invocations per row's softmax),
     * cm_attn_prefetch (0-1024: heads of at most this many dims fetch the next K/V block while
     * this one computes, 0 = never), cm_attn_stages (1 or 2: K/V blocks staged at once, 2: one
     * barrier per block, the coopmat class's default where they fit), cm_attn_wide_d (0-1024: heads of at least this many dims, wide heads,
     * take cm_attn_key_frags matrices per block, smaller ones one; 0 = every head), cm_attn_reg_softmax
     * (0 or 1: 1 runs attn_cm's softmax on the score matrices' elements in registers where the
     * device's accumulator layout allows, read once per context; the coopmat class's default;
     * 0, and any other layout: through shared memory, cm_attn_row_lanes invocations a row),
     * cm_attn_reg_p (0 or 1: 1 makes P·V's P from the score matrices' elements in registers,
     * where the device's matrix layouts allow, read once per context; the coopmat class's default;
     * 0: P through shared memory), cm_attn_row_frags (1 or 2: attn_cm's M-row matrices of query rows per subgroup, each K and V
     * matrix loaded once for both, Q and O in twice the registers; 1 in every class, attn_cm2
     * always 1; the workgroup's rows double, so a tile that no longer fits gives up keys per
     * block first, as below),
     * sm_tile_m, sm_tile_n (4-128), sm_tile_k (4-64; multiples of 4: matmul_sm's tile),
     * cm_direct (0 or 1: 1 stores matmul_cm's accumulators whole into C where every tile is whole,
     * C's rows and blocks start on 16 bytes, the device aligns storage bindings to 16 bytes and,
     * for an fp16 C, lists the fp16 M x N matrix; the coopmat and intel classes' default; 0:
     * through shared memory, an address per element),
     * cm_group_rows, sm_group_rows (0-64: matmul_cm's and matmul_sm's tiles of C visited in groups
     * of this many rows of tiles, so that the workgroups running at once share A and W in the
     * cache; 0 or 1: row by row; 8 in the GPU classes),
     * paged_lanes_group (1, 2 or 4: lanes per key in decoding), paged_lanes_prefetch (0 or 1: the
     * next block of keys fetched during this one's work, every cache format, up to D = 128),
     * paged_lanes_storage (0 or 1: 1 reads the cache's K and V rows from storage buffers, an fp16
     * one 8 values per 16-byte load, a block format's as words, the gpu, coopmat and intel classes' default; 0
     * through texel fetches), paged_lanes_q_shared (0 or 1: 1 stages a row tile's queries in
     * shared memory once, those classes' default; 0 fetches them again for each block of keys), paged_lanes_per_unit,
     * paged_per_unit (1-4096: decoding's workgroups or invocations per compute unit),
     * paged_min_part (1-65536: keys per part at least), fused_shared (0 or 1: 1 runs the scalar
     * fused attention as attn_fused_shared, a workgroup's query tiles of one head staging each
     * block's K and V in shared memory, where the block fits and the loop budget holds its
     * staging, the gpu and intel classes' default; 0 has every invocation fetch them itself, as
     * lavapipe, mobile and coopmat do), merge_lanes (a power of two, 1-64:
     * invocations per texel merging key parts, at most the parts, a divisor of the workgroup and
     * within the loop budget; every class, 1 = one walks them all), vec_tile_n (1-8: the output
     * columns of a matmul_vec workgroup, decoding's projections), vec_wg (a power of two, 32-1024:
     * its invocations, at least 4 x its rows x vec_tile_n; a shape that does not fit takes
     * matmul.comp's skinny tiles), vec_storage (0 or 1: 1 reads the operands from storage
     * buffers 16 bytes at a time where rows start on multiples of 8 elements, 0 through texel
     * fetches). A field of a kernel the class does not run
     * (cm_* in "gpu", cm_attn_* in "intel", sm_* in "lavapipe") is refused, as is a value out of
     * range, an unknown field or one given twice (VKATTN_ERROR_INVALID_ARGUMENT). A kernel whose
     * shape does not fit the device (shared memory, workgroup size, whole matrices) gives way to a
     * smaller one of its kind (matmul_cm: two staged blocks to one, then half its subgroups across,
     * down to 2; attn_cm: fewer keys per block, then fewer query rows), else to the next kernel, as
     * with a class's own shapes (the cooperative-matrix self-test then uses the
     * class's tile). vkattn_device_info.tuning reads "NAME, K fields set" (K: the fields whose values
     * differ from the class's own; a string that sets only the class's values reads "NAME"); the plans
     * (vkattn_forward_explain, `vkattn run --trace`) show the tiles taken.
     *
     * Precision on the cooperative-matrix path: A and W of each projection are rounded to fp16 as
     * they are staged (to nearest; toward zero on drivers that convert that way, which Mesa 22
     * lavapipe does elsewhere: docs/KNOWN_ISSUES.md), like FlashAttention and cuBLAS's fp16 GEMMs; the
     * products are exact and summed in fp32 (a relative error of about 1e-3 per operand, NMSE
     * around 1e-7 at unit scale; values beyond fp16's range, |x| > 65504, become infinite). The
     * fused attention (attn_cm) likewise rounds Q, K, V and the softmax probabilities to fp16 and
     * keeps the scores, the running max and sum and the output in fp32, as FlashAttention-2 does
     * (against the fp32 path: max-abs about 1e-3 and NMSE about 5e-7 at unit scale, the fp16
     * storage tolerance; a key whose V row holds NaN or inf makes the rows that see it NaN, and a
     * masked one still contributes nothing). Only layers whose precision allows fp16 operands take
     * this path: by default those with F16 storage, whose operands are fp16 already; an F32 layer
     * keeps fp32 operands under every tuning unless its precision is VKATTN_PRECISION_F16 (see
     * vkattn_precision: the choice is per layer, where no_cooperative_matrix turns the matrices off
     * for a whole context). */
    const char *tuning;
    /* Loop trips per shader invocation the plan keeps every kernel within: 0 = the
     * VKATTN_LOOP_BUDGET environment variable, else the device's own (vkattn_device_info).
     * A value may lower the device's budget (tests do, to exercise the splits at small shapes),
     * never raise it. */
    uint32_t loop_budget;
    /* The pipeline cache file (see "Pipeline cache" above vkattn_context_pipeline_cache_info): read
     * here, written back by vkattn_context_destroy when kernels were compiled. NULL = the
     * VKATTN_PIPELINE_CACHE environment variable when pipeline_cache_data is NULL too, else no file.
     * A missing, unreadable, foreign or corrupt file is never an error, only a note. */
    const char *pipeline_cache_path;
    /* Pipeline cache data kept by the caller (from vkattn_context_pipeline_cache_data, in this or
     * an earlier process): checked and handed to the driver here, read only during this call.
     * NULL = none (pipeline_cache_size must then be 0). Data that does not fit this device is
     * ignored with a note. Not together with pipeline_cache_path. */
    const void *pipeline_cache_data;
    size_t pipeline_cache_size;
    /* 1: never use VK_KHR_cooperative_matrix on this context, even where the device has it (as
     * VKATTN_COOPMAT=0 does for every context). Default 0: used where usable (see
     * vkattn_device_info.cooperative_matrix_usable) and the tuning asks for it. */
    int no_cooperative_matrix;
} vkattn_context_desc;

typedef struct vkattn_context vkattn_context;

/* Creates an instance, picks a device, creates a compute queue. `desc` may be NULL (all defaults).
 * On failure *out is untouched and `error` (may be NULL) holds the reason. */
vkattn_status vkattn_context_create(const vkattn_context_desc *desc, vkattn_context **out,
                                    vkattn_error *error);
/* Destroys the context; NULL is a no-op. Layers, tensors and submissions still made from it are
 * destroyed first (their handles become invalid). A context made by
 * vkattn_context_create_external leaves the application's instance, device and queue alone. */
void vkattn_context_destroy(vkattn_context *ctx);
/* The detailed message of the most recent failed call on this context (or an object made from it);
 * "" if none. The string lives until the next failing call or destroy. */
const char *vkattn_context_last_error(const vkattn_context *ctx);
/* Describes the context's device. */
vkattn_status vkattn_context_device(const vkattn_context *ctx, vkattn_device_info *out);
/* Number of validation-layer warnings and errors seen by this context (0 when validation is off).
 * The messages themselves go to stderr. */
uint32_t vkattn_context_validation_messages(const vkattn_context *ctx);
/* 1 if the validation layer is active on this context. */
int vkattn_context_validation_enabled(const vkattn_context *ctx);

/* Pipeline cache
 * --------------
 * A context compiles each kernel it uses into a VkPipeline on first use, through one VkPipelineCache.
 * On GPU drivers that cache holds the compiled code, so a later process handed its data skips the
 * compilation. Two ways to keep it:
 *   - a file: vkattn_context_desc.pipeline_cache_path (or VKATTN_PIPELINE_CACHE) is read when the
 *     context is created and written back when it is destroyed, if pipelines were created and the
 *     data changed. Written to a temporary file in the same directory, then renamed over the file,
 *     so a crash or two processes saving at once never leave a torn file: the last one wins.
 *     One file holds one device's cache: give each device (and driver) its own path, or each
 *     process rewrites what the other wrote.
 *   - the data: vkattn_context_pipeline_cache_data gives it, vkattn_context_desc.pipeline_cache_data
 *     takes it back; the bytes are the same as the file's.
 * The data is vkattn's 32-byte header (magic, format version, size, checksum) followed by what
 * vkGetPipelineCacheData returned. Before anything reaches the driver, vkattn checks the size, the
 * checksum and the Vulkan header (headerSize, headerVersion, vendorID, deviceID and
 * pipelineCacheUUID equal to this device's, which changes with the driver version). Data that fails
 * a check is ignored, never an error: the context starts with an empty cache and says why in
 * vkattn_context_pipeline_cache_info. A file that is not vkattn's (it does not start with the magic,
 * or is larger than any cache: a mistyped path) is never written over; the context's save of it is
 * VKATTN_ERROR_IO. vkattn's own data that does not fit (another device or driver, a torn file) is
 * replaced when the context saves. Some drivers keep no compiled code in a VkPipelineCache
 * (lavapipe, which has its own on-disk cache instead): the file then holds little more than the
 * headers and saves nothing. */

/* What became of the pipeline cache data given at context creation. */
typedef enum vkattn_pipeline_cache_state {
    VKATTN_PIPELINE_CACHE_NONE = 0,     /* no file and no data given: the cache starts empty */
    VKATTN_PIPELINE_CACHE_NEW_FILE = 1, /* the file does not exist yet; it is written when the context saves */
    VKATTN_PIPELINE_CACHE_LOADED = 2,   /* the data passed every check and was handed to the driver */
    VKATTN_PIPELINE_CACHE_IGNORED = 3   /* the file could not be read, or the data failed a check
                                           (the note says which); the cache starts empty */
} vkattn_pipeline_cache_state;

typedef struct vkattn_pipeline_cache_info {
    vkattn_pipeline_cache_state state;
    size_t loaded_bytes;      /* bytes handed to the driver (LOADED), else 0 */
    uint32_t pipelines;       /* pipelines the context has created so far */
    int has_file;             /* 1 when the context reads and writes a file */
    char note[512];           /* one line for people, e.g. "loaded 1234 bytes from PATH",
                                 "ignored PATH: made by another device (...)", "none" */
} vkattn_pipeline_cache_info;

/* Describes the context's pipeline cache: what became of the data given at creation. */
vkattn_status vkattn_context_pipeline_cache_info(const vkattn_context *ctx, vkattn_pipeline_cache_info *out);
/* The pipeline cache data (see above), to store and pass back through
 * vkattn_context_desc.pipeline_cache_data. Two calls, like vkGetPipelineCacheData: with data NULL,
 * sets *size to the bytes needed; with data, *size must be at least that many (else
 * VKATTN_ERROR_INVALID_ARGUMENT, naming the size needed, and nothing is written) and is set to
 * the bytes written. The cache can grow between the calls when pipelines are created. */
vkattn_status vkattn_context_pipeline_cache_data(vkattn_context *ctx, void *data, size_t *size);
/* Writes the pipeline cache to the context's file now, if pipelines were created since it was
 * read or last saved and the data changed (else writes nothing). VKATTN_OK without a file.
 * VKATTN_ERROR_IO with the path and the reason when the file cannot be written; the old file is
 * then left as it was. vkattn_context_destroy saves the same way but cannot report a failure:
 * call this first where a failed save matters. */
vkattn_status vkattn_context_save_pipeline_cache(vkattn_context *ctx);

/* ---------------------------------------------------------------------------------------------- */
/* Tensors (device memory)                                                                         */
/* ---------------------------------------------------------------------------------------------- */

typedef enum vkattn_dtype {
    VKATTN_DTYPE_F32 = 0,
    VKATTN_DTYPE_F16 = 1,  /* IEEE binary16 */
    VKATTN_DTYPE_BOOL = 2, /* one byte per element, 0 = false, anything else = true */
    VKATTN_DTYPE_I32 = 3,
    /* Block formats, for a KV cache only (vkattn_kv_cache_desc.dtype; tensors, layer storage and
     * arrays refuse them): ggml/llama.cpp's blocks of 32 values, bit for bit, so that a cache's
     * rows are theirs. A block is an fp16 scale d (2 bytes, little-endian) then the quants, no
     * padding; 1/d below is computed in fp32 from d before its rounding to fp16 (0 when d is 0),
     * and loads multiply by the fp16 d. A block holding NaN or an infinity stores d = NaN. */
    VKATTN_DTYPE_Q8_0 = 4, /* 34 bytes per 32 values: d = max|x| / 127, then 32 int8
                              q = round(x * (1/d)) (halves away from zero); x ~ d * q */
    VKATTN_DTYPE_Q4_0 = 5  /* 18 bytes per 32 values: d = m / -8, m the first value of largest
                              magnitude (with its sign), then 32 4-bit q = min(15, floor(x * (1/d) + 8.5)),
                              value j < 16 in the low nibble of byte j and value j + 16 in its
                              high nibble; x ~ d * (q - 8) */
} vkattn_dtype;

#define VKATTN_MAX_RANK 4

/* Bytes per element of an element dtype; 0 for the block formats (Q8_0, Q4_0: they have no size
 * per element, see vkattn_dtype_row_size) and for values outside the enum. */
size_t vkattn_dtype_size(vkattn_dtype dtype);
/* Bytes that `count` consecutive values take: count * vkattn_dtype_size, or count / 32 blocks of a
 * block format (34 bytes for Q8_0, 18 for Q4_0). 0 when a block format's count is not a multiple
 * of 32, or for values outside the enum. (ggml_row_size's counterpart.) */
size_t vkattn_dtype_row_size(vkattn_dtype dtype, size_t count);
/* "f32", "f16", "bool", "i32", "q8_0", "q4_0". */
const char *vkattn_dtype_name(vkattn_dtype dtype);
/* Host conversions between fp32 values and the dtypes that hold them, as the library stores them:
 * `count` values to vkattn_dtype_row_size(dtype, count) bytes, or back. F32 is a copy; F16 is IEEE
 * binary16, rounded to nearest even (overflow gives infinity, NaN stays NaN; back: exact); Q8_0 and
 * Q4_0 are ggml's blocks, count a multiple of 32 (a block holding NaN or infinity stores d = NaN and
 * reads back as NaN). For an F16 tensor's contents (vkattn_tensor_write takes the tensor's own
 * dtype), or data in ggml's block formats. VKATTN_ERROR_INVALID_ARGUMENT for a NULL pointer with
 * count > 0, overlapping src and dst (except the same pointer for F32) or a count whose fp32 bytes
 * overflow size_t, VKATTN_ERROR_DTYPE for BOOL, I32 and values outside the enum,
 * VKATTN_ERROR_SHAPE for a block format's count that is not whole blocks; dst is untouched on
 * failure. (ggml's fp16 row conversions and quantize_row / dequantize_row do the same.) */
vkattn_status vkattn_dtype_from_f32(vkattn_dtype dtype, const float *src, size_t count, void *dst);
vkattn_status vkattn_dtype_to_f32(vkattn_dtype dtype, const void *src, size_t count, float *dst);

typedef struct vkattn_tensor vkattn_tensor;

/* Creates a dense device tensor of `rank` (1..VKATTN_MAX_RANK) dims, each >= 1, of an element
 * dtype (a block format is VKATTN_ERROR_DTYPE). Contents start zeroed. Fails with
 * VKATTN_ERROR_DEVICE_LIMIT if it would not fit one allocation. */
vkattn_status vkattn_tensor_create(vkattn_context *ctx, vkattn_dtype dtype, uint32_t rank,
                                   const uint32_t *dims, vkattn_tensor **out);
void vkattn_tensor_destroy(vkattn_tensor *tensor);
/* Copies `bytes` (must equal the tensor's size: VKATTN_ERROR_SHAPE otherwise) from host memory,
 * in the tensor's dtype. */
vkattn_status vkattn_tensor_write(vkattn_tensor *tensor, const void *src, size_t bytes);
/* Copies the whole tensor (`bytes` must equal its size: VKATTN_ERROR_SHAPE otherwise) to host
 * memory. */
vkattn_status vkattn_tensor_read(const vkattn_tensor *tensor, void *dst, size_t bytes);
/* Copies `bytes` between host memory and the tensor's bytes [offset, offset + bytes): whole
 * elements (offset and bytes multiples of the dtype's size), inside the tensor. The rest of the
 * tensor is left as it is. */
vkattn_status vkattn_tensor_write_region(vkattn_tensor *tensor, size_t offset, const void *src, size_t bytes);
vkattn_status vkattn_tensor_read_region(const vkattn_tensor *tensor, size_t offset, void *dst, size_t bytes);
vkattn_dtype vkattn_tensor_dtype(const vkattn_tensor *tensor);
uint32_t vkattn_tensor_rank(const vkattn_tensor *tensor);
/* Dim i (0 if i >= rank). */
uint32_t vkattn_tensor_dim(const vkattn_tensor *tensor, uint32_t i);
size_t vkattn_tensor_bytes(const vkattn_tensor *tensor);

/* ---------------------------------------------------------------------------------------------- */
/* Layers                                                                                          */
/* ---------------------------------------------------------------------------------------------- */

/* Which dims of a head a rotary position embedding rotates together (vkattn_layer_desc.rope_style).
 * The same model uses either, depending on how its checkpoint orders W_Q's and W_K's rows: a wrong
 * choice is silently wrong from the second token on (position 0 rotates nothing). */
typedef enum vkattn_rope_style {
    VKATTN_ROPE_NEOX = 0, /* halves, pairs (i, i + rope_dim/2): Hugging Face transformers' rotate_half (every
                             checkpoint on the Hub, Llama, Qwen, Mistral, Gemma, Phi, ...), GPT-NeoX,
                             vLLM's default, llama.cpp's NEOX models */
    VKATTN_ROPE_GPTJ = 1  /* interleaved pairs (2i, 2i + 1): Meta's original Llama checkpoints
                             (consolidated.*.pth, before Hugging Face's conversion permutes the rows),
                             llama2.c, GPT-J, llama.cpp's GGUF Llama files (their converter undoes the
                             permutation) */
} vkattn_rope_style;

/* The largest ALiBi slope magnitude a layer takes (models' slopes are at most 1): with positions
 * below 2^32 apart every bias stays below 2^48, which fp32 scores hold. */
#define VKATTN_ALIBI_MAX_SLOPE 65536.0f

/* Rotary frequencies other than theta^(-2i / rope_dim): the rope types of Hugging Face's rope
 * utilities (modeling_rope_utils.py, `rope_scaling` / `rope_parameters` in a config.json), each
 * computed on the host in double exactly as that code's formulas say and rounded to fp32 once,
 * giving a table inv_freq_i (i < rope_dim / 2) and an attention factor that scales cos and sin.
 * With d = rope_dim, base_i = theta^(2i/d):
 *   DEFAULT   inv_freq_i = 1 / base_i
 *   LINEAR    1 / (factor * base_i)
 *   DYNAMIC   NTK: theta' = theta * (factor * n / m - (factor - 1))^(d / (d - 2)),
 *             m = max_position_embeddings, n = max(the sequence length, m); 1 / theta'^(2i/d)
 *   YARN      a ramp between 1 / base_i and 1 / (factor * base_i) over the dims whose wavelengths
 *             lie between beta_fast and beta_slow rotations in original_max_position_embeddings
 *             (floor/ceil of the bounds unless no_truncate); attention factor
 *             0.1 ln(factor) + 1, or (0.1 mscale ln(factor) + 1) / (0.1 mscale_all_dim ln(factor) + 1)
 *             with both mscales, or attention_factor when given
 *   LONGROPE  1 / (f_i * base_i), f = long_factor when the sequence is longer than
 *             original_max_position_embeddings, else short_factor; attention factor
 *             sqrt(1 + ln(factor) / ln(original)) (1 when factor <= 1), or attention_factor
 *   LLAMA3    1 / base_i for wavelengths 2 pi base_i below original / high_freq_factor, divided by
 *             factor above original / low_freq_factor, smoothly between
 *   TABLE     inv_freq as given (rope_dim / 2 floats), attention_factor (0 = 1)
 * DYNAMIC and LONGROPE depend on the sequence length. A forward takes it as its largest position
 * + 1 (rope_offset + max(L, S)); a cached forward as the longest sequence of its batch after its
 * new tokens, so each new token is rotated with the table of the length reached at its step and
 * the keys already cached keep the rotation they were appended with — what Hugging Face's
 * generate does step by step (it keeps the largest length seen so far instead, which differs only
 * when a later forward is shorter than an earlier one and both exceed the original length). */
typedef enum vkattn_rope_type {
    VKATTN_ROPE_TYPE_DEFAULT = 0,
    VKATTN_ROPE_TYPE_LINEAR = 1,
    VKATTN_ROPE_TYPE_DYNAMIC = 2,
    VKATTN_ROPE_TYPE_YARN = 3,
    VKATTN_ROPE_TYPE_LONGROPE = 4,
    VKATTN_ROPE_TYPE_LLAMA3 = 5,
    VKATTN_ROPE_TYPE_TABLE = 6
} vkattn_rope_type;

typedef struct vkattn_rope_scaling {
    vkattn_rope_type type;          /* 0 = DEFAULT */
    float factor;                   /* LINEAR, DYNAMIC, LLAMA3: required (> 0); YARN, LONGROPE: 0 =
                                       max_position_embeddings / original_max_position_embeddings */
    uint32_t original_max_position_embeddings; /* YARN, LONGROPE, LLAMA3: required */
    uint32_t max_position_embeddings;          /* DYNAMIC: required; YARN, LONGROPE: for a factor of 0 */
    float low_freq_factor, high_freq_factor;   /* LLAMA3: required, low < high */
    float beta_fast, beta_slow;     /* YARN: 0 = 32 and 1 */
    float mscale, mscale_all_dim;   /* YARN: 0 = unset (both needed to be used) */
    int no_truncate;                /* YARN: 0 = the bounds rounded out (Hugging Face's truncate: true) */
    float attention_factor;         /* YARN, LONGROPE, TABLE: 0 = as above (1 for TABLE) */
    const float *short_factor;      /* LONGROPE: rope_dim / 2 floats each, copied */
    const float *long_factor;
    const float *inv_freq;          /* TABLE: rope_dim / 2 floats, copied */
} vkattn_rope_scaling;

/* Where an RMS norm of the projected q and k (before RoPE, before K enters a KV cache) is taken
 * (vkattn_layer_desc.qk_norm): x * rsqrt(mean(x^2) + eps) * w, w from vkattn_weights.q_norm_weight
 * and k_norm_weight. */
typedef enum vkattn_qk_norm {
    VKATTN_QK_NORM_NONE = 0,
    VKATTN_QK_NORM_HEAD = 1, /* each head's D dims (Qwen3, Gemma 3): weights of D floats */
    VKATTN_QK_NORM_ROW = 2   /* a token's whole projected q (H*D) and k (H_kv*D) (OLMo 2): weights of that width */
} vkattn_qk_norm;

/* What a layer keeps of its weights on the host (vkattn_layer_desc.host_weights). Only the CPU
 * path (VKATTN_PATH_CPU on the layer) and vkattn_layer_set_head_mask read them; without them both
 * are VKATTN_ERROR_UNSUPPORTED, and the standalone vkattn_reference_forward takes the weights
 * directly. */
typedef enum vkattn_host_weights {
    VKATTN_HOST_WEIGHTS_NONE = 0,   /* none: the weights live on the device only (a stack of layers costs
                                       no host memory beyond its creation) */
    VKATTN_HOST_WEIGHTS_COPY = 1,   /* the layer's own copy, made at creation */
    VKATTN_HOST_WEIGHTS_BORROW = 2  /* the caller's arrays, which must stay valid and unchanged until the
                                       layer is destroyed */
} vkattn_host_weights;

/* The arithmetic a layer's kernels may use (vkattn_layer_desc.precision). */
typedef enum vkattn_precision {
    VKATTN_PRECISION_DEFAULT = 0, /* follows the layer's storage: F32 storage keeps fp32 operands (as
                                     VKATTN_PRECISION_F32: nn.MultiheadAttention's fp32 results), F16
                                     storage may use fp16 operands (as VKATTN_PRECISION_F16) */
    VKATTN_PRECISION_F32 = 1,     /* fp32 operands everywhere: this layer never uses the cooperative-matrix
                                     kernels (as ggml's prec=f32), whatever the tuning; its forwards round
                                     as under the "gpu" tuning. For layers whose scores or values need
                                     more than fp16 (large logits before a softcap, say) */
    VKATTN_PRECISION_F16 = 2      /* fp16 operands where the tuning has cooperative-matrix kernels (the
                                     projections' A and W, and Q, K, V and the probabilities of the fused
                                     attention, rounded to fp16; fp32 sums), also for an F32-storage layer;
                                     elsewhere fp32 arithmetic, see vkattn_context_desc.tuning */
} vkattn_precision;

typedef struct vkattn_layer_desc {
    uint32_t embed_dim;  /* E, required */
    uint32_t num_heads;  /* H, required; E % H must be 0 unless head_dim is given */
    uint32_t kdim;       /* 0 = E */
    uint32_t vdim;       /* 0 = E */
    int no_bias;         /* 0 = in and out projections have biases (PyTorch bias=True) */
    int add_bias_kv;     /* 0 = off; on: learned bias_k/bias_v appended as one extra key/value */
    int add_zero_attn;   /* 0 = off; on: a zero key/value appended after the others */
    vkattn_dtype storage; /* 0 = F32. F16 stores weights and activations (Q, K, V, the attention
                             output) as fp16 and accumulates in fp32; falls back to F32 on devices
                             without storageBuffer16BitAccess (vkattn_layer_get_desc tells). */
    uint32_t num_kv_heads; /* H_kv, key/value heads; 0 = H. H % H_kv must be 0
                              (VKATTN_ERROR_HEADS). H_kv < H is grouped-query attention (H_kv = 1:
                              multi-query): query head h attends with K/V head h / (H / H_kv), as
                              PyTorch's repeat_interleave and Hugging Face's repeat_kv do; K and V
                              are projected for the H_kv heads only. See vkattn_weights for the
                              shapes. With H_kv < H, pruning heads (head_mask below,
                              vkattn_layer_set_head_mask) is VKATTN_ERROR_UNSUPPORTED. */
    const uint8_t *head_mask; /* NULL = every head computed; else H entries, 0 = head pruned: its
                                 Q/K/V projections, scores and context are not computed and its
                                 columns of W_O contribute nothing (as if its context were zero).
                                 At least one head must stay. Pruned layers cannot return per-head
                                 or averaged attention weights, per-head attn_masks or the lse. */
    float rope_theta;    /* 0 = no rotary position embedding (unless rope_scaling is a TABLE).
                            > 0: RoPE on the projected q and k of every head, before the
                            scores (LLaMA/Qwen/Mistral style). Pairs
                            (x1, x2) of a head's first rope_dim dims are rotated by the angle
                            pos * inv_freq_i: (x1 cos - x2 sin, x2 cos + x1 sin), with
                            inv_freq_i = rope_theta^(-2i / rope_dim), i < rope_dim / 2 (computed
                            in double, rounded to fp32; the angle is the fp32 product
                            float(pos) * inv_freq_i, as Hugging Face computes it). Positions: the
                            queries and the keys end at the same position, rope_offset +
                            max(L, S) - 1; query i is at rope_offset + max(L, S) - L + i, key j at
                            rope_offset + max(L, S) - S + j. With L = S (self-attention) that is
                            the token's index plus rope_offset; one new token with the S tokens
                            so far as key/value (decoding) is at position S - 1, and `causal`
                            follows these positions (see vkattn_forward_desc.causal).
                            Negative or non-finite: VKATTN_ERROR_INVALID_ARGUMENT. With
                            add_bias_kv or add_zero_attn (appended keys have no position):
                            VKATTN_ERROR_UNSUPPORTED. On the device the projected Q and K are
                            rotated in place, in parts of batch items and heads that each fit
                            one binding; one item's head (with qk_norm ROW: its row's heads)
                            larger than maxStorageBufferRange is VKATTN_ERROR_DEVICE_LIMIT. */
    uint32_t rope_dim;   /* rotary dims per head; 0 = D. Must be even and <= D
                            (VKATTN_ERROR_INVALID_ARGUMENT); dims >= rope_dim pass unchanged. */
    vkattn_rope_style rope_style; /* how dims pair up; 0 = VKATTN_ROPE_NEOX */
    /* Attention variants of current models. A score is computed as
     *   x = (q_i . k_j) * scale (1 / sqrt(D) unless set);  x = softcap * tanh(x / softcap) (softcap > 0);
     *   x += m_h * (pos_j - pos_i) (alibi);  then the masks (and window) exclude keys or add terms,
     * and the softmax may hold a sink logit (vkattn_weights.sinks). Positions pos_i, pos_j are those
     * of rope_theta's comment (queries and keys end at the same position; rope_offset cancels out),
     * whether or not RoPE is on; in a cached forward they are the tokens' places in their sequence.
     * So one decoding step gives the last row of a full forward. All of them work on every path
     * (fused, unfused, CPU, cached forwards) and with grouped-query attention and every mask. */
    uint32_t window;     /* sliding-window attention (Mistral, Gemma 2/3 local layers); 0 = off.
                            W > 0: a key more than W - 1 positions before the query is masked, so a
                            query at position p sees keys at positions p - W + 1 and later; with
                            causal (and in cached forwards) exactly p - W + 1 ... p. Without causal the
                            keys after p stay visible. Keys before every row's window are never
                            visited, so causal and cached attention cost grows with W, not with the
                            sequence. A KV cache keeps every block of a sequence (blocks wholly
                            outside every window are not released). With add_bias_kv or
                            add_zero_attn (appended keys have no position): VKATTN_ERROR_UNSUPPORTED. */
    float softcap;       /* logit soft-capping (Gemma 2); 0 = off. c > 0: each scaled score x becomes
                            c * tanh(x / c), before the ALiBi bias and the masks. Negative or
                            non-finite: VKATTN_ERROR_INVALID_ARGUMENT. */
    int alibi;           /* ALiBi (BLOOM, MPT); 0 = off. On: head h adds m_h * (pos_j - pos_i) to its
                            scores (after softcap; <= 0 for the keys a causal query sees). Not with
                            rope_theta > 0 (ALiBi replaces positional embeddings:
                            VKATTN_ERROR_INVALID_ARGUMENT); with add_bias_kv or add_zero_attn:
                            VKATTN_ERROR_UNSUPPORTED. */
    const float *alibi_slopes; /* H slopes m_h (finite, else VKATTN_ERROR_NON_FINITE, and at most
                                  VKATTN_ALIBI_MAX_SLOPE in magnitude, else VKATTN_ERROR_INVALID_ARGUMENT:
                                  larger ones would overflow fp32 scores), copied; NULL = the
                                  standard ones: m_h = 2^(-8(h+1)/H) when H is a power of two, else (as
                                  BLOOM and Hugging Face do) 2^(-8(h+1)/n) for heads h < n, n the largest
                                  power of two below H, then 2^(-4(2k+1)/n) for heads n + k. Computed in double,
                                  rounded to fp32. Only with alibi (else VKATTN_ERROR_INVALID_ARGUMENT).
                                  vkattn_layer_get_desc returns the slopes in use. */
    uint32_t head_dim;   /* D, the dims of each head; 0 = E / H (then E % H must be 0). A layer whose
                            H * D differs from E (Gemma 2/3, Qwen3 0.6B-4B, Mistral Nemo, gpt-oss) has
                            W_Q (H*D, E), W_K and W_V (H_kv*D, kdim / vdim) and W_O (E, H*D). */
    float scale;         /* the scores' scale; 0 = 1 / sqrt(D). Gemma 2/3: query_pre_attn_scalar^-1/2.
                            Negative or non-finite: VKATTN_ERROR_INVALID_ARGUMENT. */
    vkattn_rope_scaling rope_scaling; /* the rotary frequencies (see vkattn_rope_type); zeros = theta's.
                                         RoPE is on when rope_theta > 0, or with a TABLE. A field a
                                         type needs but lacks is VKATTN_ERROR_INVALID_ARGUMENT,
                                         named. */
    vkattn_qk_norm qk_norm; /* RMS norms of q and k after the projection; 0 = none. Needs
                               vkattn_weights.q_norm_weight and k_norm_weight; with pruned heads
                               only VKATTN_QK_NORM_HEAD (else VKATTN_ERROR_UNSUPPORTED). */
    float qk_norm_eps;      /* 0 = 1e-6 (the rms_norm_eps of Qwen3, Gemma 3, OLMo 2) */
    int qk_norm_plus_one;   /* 0 = scale by w (Qwen3, OLMo 2); 1 = by (1 + w) (Gemma 3) */
    vkattn_host_weights host_weights; /* 0 = none kept (see vkattn_host_weights) */
    vkattn_precision precision; /* 0 = VKATTN_PRECISION_DEFAULT (see vkattn_precision); a value that is no
                                   vkattn_precision: VKATTN_ERROR_INVALID_ARGUMENT */
} vkattn_layer_desc;

/* Host weights in PyTorch's state_dict layout (row-major float32). E_q = H·D and E_kv = H_kv·D are
 * the widths of the projected queries and of the projected keys and values; for nn.MultiheadAttention
 * both are E. When kdim == vdim == E, give in_proj_weight (E_q + 2·E_kv, E) or q/k/v_proj_weight;
 * otherwise q_proj_weight (E_q,E), k_proj_weight (E_kv,kdim), v_proj_weight (E_kv,vdim). Biases are
 * required unless no_bias; bias_k/bias_v only with add_bias_kv.
 *
 * Grouped-query layers (num_kv_heads = H_kv < H): W_K and W_V are narrowed to the H_kv heads, and
 * rows [k·D, (k+1)·D) of W_K and W_V belong to K/V head k; in_proj_weight is refused
 * (VKATTN_ERROR_INVALID_ARGUMENT): give q/k/v_proj_weight. */
typedef struct vkattn_weights {
    const float *in_proj_weight;  /* (E_q + 2·E_kv, E): rows [0,E_q) = W_Q, then W_K, then W_V */
    const float *q_proj_weight;   /* (E_q,E) */
    const float *k_proj_weight;   /* (E_kv,kdim) */
    const float *v_proj_weight;   /* (E_kv,vdim) */
    const float *in_proj_bias;    /* (E_q + 2·E_kv) = [q bias | k bias | v bias] */
    const float *out_proj_weight; /* (E,E_q) */
    const float *out_proj_bias;   /* (E) */
    const float *bias_k;          /* (E_kv), as PyTorch's (1,1,E) */
    const float *bias_v;          /* (E_kv) */
    const float *q_norm_weight;   /* with qk_norm: (D) per head, or (E_q) for a whole row; else NULL */
    const float *k_norm_weight;   /* with qk_norm: (D) per head, or (E_kv) for a whole row; else NULL */
    const float *sinks;           /* (H) or NULL = none: attention sinks (gpt-oss), a learned logit s_h per
                                     head that joins each softmax denominator without a value:
                                     p_j = exp(x_j - m) / (exp(s_h - m) + sum_k exp(x_k - m)), so a row's
                                     weights sum to less than 1, a row with every key masked gets zero
                                     weights and a zero context, and its log-sum-exp (lse) is
                                     log(exp(s_h) + sum_k exp(x_k)). Finite (else VKATTN_ERROR_NON_FINITE);
                                     kept in fp32 whatever the storage. */
    uint32_t q_rows, kv_rows;     /* the rows W_Q and W_K, W_V hold (H·D and H_kv·D) when the caller knows
                                     them (vkattn_weight_file sets them), checked against the layer's
                                     (VKATTN_ERROR_SHAPE, e.g. a grouped-query checkpoint described
                                     without num_kv_heads); 0 = not checked */
} vkattn_weights;

typedef struct vkattn_layer vkattn_layer;

/* Validates the configuration and copies the weights to the device; on the host it keeps what
 * desc->host_weights says (by default nothing: the caller's arrays may be freed once this returns).
 * Errors: VKATTN_ERROR_HEADS if head_dim is 0 and E % H != 0, or H % num_kv_heads != 0,
 * VKATTN_ERROR_UNSUPPORTED for a head_mask that prunes heads of a grouped-query layer or of one
 * with qk_norm ROW, and for RoPE, a window, ALiBi or qk_norm with appended keys (add_bias_kv,
 * add_zero_attn), VKATTN_ERROR_NON_FINITE for non-finite sinks or ALiBi slopes,
 * VKATTN_ERROR_INVALID_ARGUMENT for a missing
 * or superfluous weight pointer or zero sizes, VKATTN_ERROR_NON_FINITE with F16 storage for a
 * weight beyond fp16's range (|w| > 65504 would become inf; the message names the tensor, the
 * element and its value). */
vkattn_status vkattn_layer_create(vkattn_context *ctx, const vkattn_layer_desc *desc,
                                  const vkattn_weights *weights, vkattn_layer **out);
void vkattn_layer_destroy(vkattn_layer *layer);
/* The layer's resolved description (defaults filled in: kdim, vdim, num_kv_heads = H when 0 was
 * given, head_dim and scale in use; storage after any fp16 fall-back; alibi_slopes = the slopes in use when alibi is on). Its
 * head_mask points into the layer and lives until the next set_head_mask or destroy; its
 * alibi_slopes point into the layer too and live until destroy. */
void vkattn_layer_get_desc(const vkattn_layer *layer, vkattn_layer_desc *out);
/* Prunes heads (see vkattn_layer_desc.head_mask; NULL = all heads). Re-uploads the active heads'
 * weights, so the change costs one weight upload; later forwards do only the active heads' work.
 * A grouped-query layer (num_kv_heads < H) takes only masks that keep every head
 * (else VKATTN_ERROR_UNSUPPORTED). */
vkattn_status vkattn_layer_set_head_mask(vkattn_layer *layer, const uint8_t *active);

/* Which implementation runs a forward. */
typedef enum vkattn_path {
    VKATTN_PATH_AUTO = 0,    /* fused, or unfused when attention weights are requested */
    VKATTN_PATH_UNFUSED = 1, /* projections, scores, softmax, P·V, output projection as separate kernels */
    VKATTN_PATH_FUSED = 2,   /* flash-attention kernel (online softmax, no L×S buffer) */
    VKATTN_PATH_CPU = 3      /* the reference: plain C, double accumulation */
} vkattn_path;

/* "auto", "unfused", "fused", "cpu". */
const char *vkattn_path_name(vkattn_path path);

/* Forward on device tensors. Shapes come from the tensors:
 * query (B,L,E); key (B,S,kdim) and value (B,S,vdim), NULL = self-attention on query (when key is
 * NULL, value must be NULL too); output (B,L,E). These four may be F32 or F16 (an F16 output needs
 * 16-bit storage on the device). See the user guide for masks. */
typedef struct vkattn_forward_desc {
    const vkattn_tensor *query;            /* required */
    const vkattn_tensor *key;              /* NULL = query */
    const vkattn_tensor *value;            /* NULL = key */
    int causal;                            /* 0 = off; on: a query may not attend to later keys.
                                              Without positions, as PyTorch (top-left): query i
                                              may not attend to key j > i. In a layer with
                                              positions (rope_theta, window or alibi), where
                                              queries and keys end at the same position, by
                                              position (bottom-right, as Hugging Face's models
                                              and a KV cache): key j > i + S - L is masked, so L
                                              new tokens over all S tokens so far attend as in a
                                              full causal forward. Both agree when L = S. */
    const vkattn_tensor *key_padding_mask; /* NULL or BOOL (B,S) */
    const vkattn_tensor *valid_lens;       /* NULL or I32 (B) or (B,L) */
    const vkattn_tensor *attn_mask;        /* NULL or BOOL/F32 (L,S) or (B*H,L,S) */
    vkattn_tensor *output;                 /* required, F32 or F16 (B,L,E) */
    vkattn_tensor *attn_weights;           /* NULL or F32 (B,H,L,S'), or (B,L,S') if averaged;
                                              needs the unfused path */
    int average_weights;                   /* 0 = per head */
    vkattn_tensor *lse;                    /* NULL or F32 (B,H,L): each row's log-sum-exp of its
                                              scaled, masked scores (-inf when fully masked), the
                                              sink included when the layer has sinks;
                                              needs the fused path */
    vkattn_path path;                      /* default AUTO */
    uint32_t rope_offset;                  /* 0 = none; with rope_theta > 0, the position of the
                                              first key (of the first query when L > S): keys
                                              that start later in their sequence, e.g. a window.
                                              Only the difference of positions changes scores,
                                              so it matters for rounding only. Ignored without
                                              RoPE (see vkattn_layer_desc.rope_theta). */
} vkattn_forward_desc;

/* Runs one forward: one command buffer, one submit, waits for completion. */
vkattn_status vkattn_forward(vkattn_layer *layer, const vkattn_forward_desc *desc);

/* Several forwards on the context's queue in one submission, without waiting: add forwards (on
 * device tensors), submit, do other work, then wait (or poll). Forwards run in the order added,
 * each after the one before has finished (a barrier between them), so one's output may be the
 * next one's input. From add until the submission finishes (wait, or a poll that says so), its
 * layers and tensors belong to it: other calls on them (forward, tensor read/write, another
 * submission) return VKATTN_ERROR_BUSY; destroying one waits for the submission to finish, or
 * drops what was added if it was not yet submitted (the next add or submit then fails once,
 * saying so; add the forwards again). Submitted and recorded forwards set the layer's
 * vkattn_layer_last_stats (submits 0, not timed) once the submit succeeded. A
 * layer appears at most once per submission (its workspace holds one forward); make one layer
 * per position in a stack. Forwards in a submission are not timed. Forwards through a KV cache
 * go in with vkattn_submission_add_cached (in the KV cache section below): a decoder's whole step,
 * each layer's cached attention with the application's own work between, in one submit. */
typedef struct vkattn_submission vkattn_submission;

vkattn_status vkattn_submission_create(vkattn_context *ctx, vkattn_submission **out);
/* Waits for it if it was submitted, then destroys it; NULL is a no-op. */
void vkattn_submission_destroy(vkattn_submission *submission);
/* Checks the forward as vkattn_forward would and appends it (nothing runs yet). The CPU path
 * cannot be added (VKATTN_ERROR_UNSUPPORTED). A failed add leaves the submission as it was. */
vkattn_status vkattn_submission_add(vkattn_submission *submission, vkattn_layer *layer, const vkattn_forward_desc *desc);
/* Records what was added into one command buffer and submits it; returns without waiting.
 * Submitting an empty submission does nothing. On failure nothing was submitted and what was
 * added is kept (submit again, or destroy). */
vkattn_status vkattn_submission_submit(vkattn_submission *submission);
/* Waits until the submitted work has finished; then the submission is empty, ready for new adds,
 * and its layers and tensors are free. VKATTN_OK at once when nothing was submitted;
 * VKATTN_ERROR_INVALID_ARGUMENT when forwards were added but not submitted; on a lost device
 * VKATTN_ERROR_DEVICE_LOST, and the submission is empty. */
vkattn_status vkattn_submission_wait(vkattn_submission *submission);
/* VKATTN_OK if the submitted work has finished (and then as after a wait), VKATTN_ERROR_BUSY while
 * it still runs (without a message), another status if the device failed; otherwise as
 * vkattn_submission_wait. */
vkattn_status vkattn_submission_poll(vkattn_submission *submission);

/* Forward on host arrays (same shapes and rules as vkattn_forward_desc). */
typedef struct vkattn_host_forward_desc {
    uint32_t batch;                   /* B, required */
    uint32_t query_len;               /* L, required */
    uint32_t key_len;                 /* S; 0 = L (required when key is given) */
    const float *query;               /* (B,L,E), required */
    const float *key;                 /* (B,S,kdim), NULL = query */
    const float *value;               /* (B,S,vdim), NULL = key */
    int causal;
    const uint8_t *key_padding_mask;  /* NULL or (B,S) */
    const int32_t *valid_lens;        /* NULL or (B), or (B,L) when valid_lens_per_query */
    int valid_lens_per_query;
    const void *attn_mask;            /* NULL or (L,S), or (B*H,L,S) when attn_mask_per_head */
    vkattn_dtype attn_mask_dtype;     /* VKATTN_DTYPE_BOOL (uint8_t) or VKATTN_DTYPE_F32 (default) */
    int attn_mask_per_head;
    float *output;                    /* (B,L,E), required; an array of its own: the query's, or any
                                         input's, is refused (VKATTN_ERROR_INVALID_ARGUMENT) */
    float *attn_weights;              /* NULL or (B,H,L,S'), or (B,L,S') when average_weights */
    int average_weights;
    float *lse;                       /* NULL or (B,H,L): per-row log-sum-exp (fused and CPU paths) */
    vkattn_path path;
    uint32_t rope_offset;             /* as in vkattn_forward_desc */
    /* The CPU path only (vkattn_reference_forward, path = VKATTN_PATH_CPU): round k (after RoPE)
     * and v to float and as a KV cache of this dtype stores them, so that a cached forward can be
     * checked against what its cache holds: Q8_0 or Q4_0 (each head's row in blocks of 32, exactly
     * as the device quantizes; needs a head dim that is a multiple of 32), or F16 (to nearest even;
     * a device whose fp16 stores round otherwise, as lavapipe's toward zero, differs by up to an
     * ulp per stored value: about 1e-3 relative on a layer's outputs, NMSE ~1e-6).
     * 0 = F32 = no rounding. Device forwards and vkattn_forward_explain take only 0 (else
     * VKATTN_ERROR_INVALID_ARGUMENT). */
    vkattn_dtype kv_cache_dtype;
    /* The CPU path only, as kv_cache_dtype: (B, L) positions of the tokens of a self-attention
     * forward (key NULL, no add_bias_kv or add_zero_attn), each at most 2^31 - 1, in place of
     * their indices (and rope_offset): RoPE rotates token i of batch item b at
     * positions[b * L + i], and causal, the window and ALiBi compare positions (causal masks key j
     * of query i when pos_j > pos_i). This is how a cached forward's token tree is checked on the
     * CPU: the history and the tree as one sequence, the tree's tokens at the history's length
     * plus their depths, the tree's mask in a bool attn_mask. So a DYNAMIC or LONGROPE table is
     * still that of L tokens, as the cached forward's is of the cache's length after the tree (not
     * of the largest position + 1), and rope_offset must be 0 (VKATTN_ERROR_INVALID_ARGUMENT
     * otherwise). NULL = indices. Device forwards and vkattn_forward_explain take only NULL
     * (VKATTN_ERROR_INVALID_ARGUMENT). */
    const uint32_t *positions;
} vkattn_host_forward_desc;

/* Uploads, runs vkattn_forward (or the CPU path), downloads. Device buffers for the host arrays
 * are kept in the layer and reused while the shapes fit. */
vkattn_status vkattn_forward_host(vkattn_layer *layer, const vkattn_host_forward_desc *desc);

/* Describes, without running the forward, the plan vkattn_forward_host would run for `desc`: the
 * shapes it traces (q, k, v per head, the attention weights, ctx, out), how keys and rows are
 * split, the workspace, then each step: its stage, kernel and parameters, the buffers (and
 * windows of them) it reads and writes, its dispatch grid and loop trips. It is built by the same
 * planner, from the same arguments, as the forward. Writes at most `capacity` bytes of
 * nul-terminated text to `text` (NULL when capacity is 0) and the length the whole text needs
 * to *length (may be NULL); a text cut short still ends in a nul. The layer is not changed, and
 * no array is read or written: only the shapes and which arrays are given matter. Like a forward,
 * a plan that takes a build of attn_cm the context has not tested yet runs that kernel's
 * self-test (one small dispatch; see cooperative_matrix_checked). */
vkattn_status vkattn_forward_explain(vkattn_layer *layer, const vkattn_host_forward_desc *desc, char *text,
                                     size_t capacity, size_t *length);
/* The same for a forward on device tensors (vkattn_forward, _record): its plan follows the tensors'
 * dtypes (a host forward's arrays are F32; on an fp16 layer an F16 query can take wider loads) and
 * which arguments are given. Nothing is read from or written to the tensors, and
 * tensors in an unfinished submission may be explained. */
vkattn_status vkattn_forward_explain_tensors(vkattn_layer *layer, const vkattn_forward_desc *desc, char *text,
                                             size_t capacity, size_t *length);

/* The CPU reference without any Vulkan: plain loops, double accumulation, straight from the
 * formula. `desc->path` is ignored. */
vkattn_status vkattn_reference_forward(const vkattn_layer_desc *layer, const vkattn_weights *weights,
                                       const vkattn_host_forward_desc *desc, vkattn_error *error);

/* ---------------------------------------------------------------------------------------------- */
/* Decoding: the paged KV cache                                                                    */
/* ---------------------------------------------------------------------------------------------- */

/* A KV cache keeps one layer's keys (projected and rotated) and values of every token seen so far,
 * on the device, for many sequences at once. Its storage is a pool of fixed-size blocks (the paged
 * layout of vLLM and MLC): each sequence owns a list of blocks, its block table, takes a free block
 * when its last one is full and gives its blocks back when freed, so sequences of any lengths
 * grow independently in one pool. Sequences are named by ids 0 .. max_sequences - 1 and are empty
 * until a forward adds tokens to them.
 *
 * A cached forward (vkattn_forward_cached) takes, for each sequence of its batch, that sequence's
 * new tokens (one for a decoding step, many for a prompt; each sequence its own count, as in
 * continuous batching). It projects them, rotates q and k at their absolute positions (the
 * sequence's length before them, plus their index), appends k and v to the cache, and attends each
 * new token to every cached key of its sequence up to and including its own position (causal,
 * aligned at the end; with the layer's sliding window, the last `window` of them; softcap, ALiBi
 * and sinks as in a plain forward). So prefill and decode are the same call, a long prompt may be fed in chunks,
 * and a token's output is the same as in one causal vkattn_forward over the whole sequence (up to
 * rounding; the tests check it against the CPU reference, vkattn_reference_forward with causal = 1
 * over the sequence's tokens). One cache serves one layer: a model has a cache per layer. This is
 * enforced: the first layer that appends to an empty cache owns it until every sequence is freed
 * (even if that layer is destroyed meanwhile); a cached forward of another layer is
 * VKATTN_ERROR_INVALID_ARGUMENT and changes nothing. */
typedef struct vkattn_kv_cache vkattn_kv_cache;

typedef struct vkattn_kv_cache_desc {
    uint32_t num_kv_heads;  /* H_kv of the layer it serves, required */
    uint32_t head_dim;      /* D of that layer, required */
    uint32_t num_blocks;    /* blocks in the pool, required: num_blocks * block_size tokens in all */
    uint32_t block_size;    /* tokens per block; 0 = 16; at most 2^16 */
    uint32_t max_sequences; /* sequence ids 0 .. max_sequences - 1; 0 = 1; at most 2^24 (larger
                               values of either: VKATTN_ERROR_INVALID_ARGUMENT) */
    vkattn_dtype dtype;     /* what the pool stores: F32 (0, default); F16 (needs 16-bit storage,
                               else VKATTN_ERROR_UNSUPPORTED; values beyond fp16's range become inf,
                               or +-65504 on drivers whose fp16 stores round toward zero, such as
                               lavapipe: docs/KNOWN_ISSUES.md);
                               or a block format, Q8_0 or Q4_0 (see vkattn_dtype): each head's row of
                               a token is quantized on the device as it is appended, D / 32 ggml
                               blocks back to back, and dequantized as attention reads it. A block
                               format needs head_dim % 32 == 0 (else VKATTN_ERROR_INVALID_ARGUMENT).
                               Against an F32 cache it costs NMSE ~5e-5 (Q8_0) and ~1.3e-2 (Q4_0)
                               on the output of a D = 128 layer with N(0,1) inputs (README). As in
                               ggml, a block's scale is fp16: a block holding a magnitude above
                               65504 * 127 ~ 8.3e6 (Q8_0) or 65504 * 8 ~ 5.2e5 (Q4_0) gets an
                               infinite scale and reads back as NaN, and attention over it is NaN;
                               keep such activations in an F16 or F32 cache. */
} vkattn_kv_cache_desc;

/* Creates the pool (K and V, each one device buffer of num_blocks * block_size tokens of H_kv
 * rows: vkattn_dtype_row_size(dtype, D) bytes each, plus 4 spare bytes for a block format), which
 * must fit maxStorageBufferRange and maxTexelBufferElements texels, else VKATTN_ERROR_DEVICE_LIMIT
 * naming the most blocks that fit. Its contents start undefined; only slots a forward wrote are
 * ever read. */
vkattn_status vkattn_kv_cache_create(vkattn_context *ctx, const vkattn_kv_cache_desc *desc, vkattn_kv_cache **out);
/* NULL is a no-op. Destroying the context destroys its caches too. */
void vkattn_kv_cache_destroy(vkattn_kv_cache *cache);

typedef struct vkattn_kv_cache_info {
    vkattn_kv_cache_desc desc;  /* resolved: defaults filled in */
    uint32_t free_blocks;       /* blocks no sequence holds */
    uint32_t sequences;         /* sequences that hold tokens */
    uint64_t tokens;            /* tokens held, summed over sequences */
    uint64_t bytes;             /* device memory of the pool (K and V: the two buffers' sizes) */
    uint32_t bytes_per_token;   /* of K and V, all heads: 2 * H_kv * vkattn_dtype_row_size(dtype, D) */
} vkattn_kv_cache_info;

vkattn_status vkattn_kv_cache_get_info(const vkattn_kv_cache *cache, vkattn_kv_cache_info *out);
/* The tokens sequence `seq` holds (its next token's position). */
vkattn_status vkattn_kv_cache_seq_length(const vkattn_kv_cache *cache, uint32_t seq, uint32_t *length);
/* Empties a sequence: its blocks go back to the pool (those another sequence shares after a fork
 * stay with it). Freeing an empty sequence does nothing. */
vkattn_status vkattn_kv_cache_free_seq(vkattn_kv_cache *cache, uint32_t seq);
/* Makes the empty sequence `dst` a copy of `src` (beam search, a shared prompt): its full blocks are
 * shared, not copied (a full block is never written again), and a partly filled last block is
 * copied on the device into a block of dst's own. VKATTN_ERROR_INVALID_ARGUMENT if dst holds
 * tokens or equals src; VKATTN_ERROR_CACHE_FULL if no block is free for the copy. */
vkattn_status vkattn_kv_cache_fork(vkattn_kv_cache *cache, uint32_t src, uint32_t dst);
/* Rolls sequence `seq` back to its first `length` tokens (speculative decoding's rejected drafts, a
 * beam cut short): blocks past the new length go back to the pool (those another sequence shares
 * after a fork stay with it), and the next token is appended at position `length`. When the new
 * last block is partly filled and shared with another sequence, it is first copied on the device
 * into a block of seq's own, so appending never writes into another sequence's tokens; that copy
 * takes a free block or, in a full pool, one of seq's own past the new length, which the rollback
 * gives back anyway (VKATTN_ERROR_CACHE_FULL if there is neither, and nothing changes). length 0
 * frees the sequence; its current length changes nothing. VKATTN_ERROR_INVALID_ARGUMENT if
 * `length` is above the sequence's length or `seq` is not below max_sequences. On any failure the
 * cache is as it was, but one: where the device copy into a block of seq's own fails (a Vulkan
 * error, which may come after the copy ran), seq keeps only its whole blocks before the partly
 * filled one, and the message says how many tokens it holds. */
vkattn_status vkattn_kv_cache_truncate(vkattn_kv_cache *cache, uint32_t seq, uint32_t length);

/* ---- warm-up ------------------------------------------------------------------------------------
 * A layer's first forward of a new shape builds the pipelines its kernels need (lavapipe compiles
 * each with LLVM: hundreds of milliseconds, seconds with a cold shader cache). vkattn_layer_warm_up
 * builds, ahead of the first request, every pipeline the layer's forwards within the limits below
 * will use: afterwards such a forward builds none. "Such" means query and output both of io_dtype,
 * no token tree (new_token_mask) and the kv_splits the warm-up was given (0, the device's own
 * split, unless said): a tree forward, an F32 query with an F16 output, or another kv_splits of 2
 * or more (the split build of the attention and its merge, where the device's choice would not
 * split) may still build a pipeline or two of its own; warm up once per kv_splits the application
 * passes. With a persistent pipeline cache (GPU drivers), the next
 * process neither. Nothing runs on the device, except attn_cm's self-test where a plan takes a
 * build of attn_cm the context has not tested yet (see cooperative_matrix_checked). lavapipe
 * (llvmpipe) compiles a pipeline's machine code at its first dispatch, not when the pipeline is
 * made, so there the first forward of each shape still pays that compile (seconds, cold); Mesa's
 * on-disk shader cache (MESA_SHADER_CACHE_DIR) keeps it for the next process. */
typedef struct vkattn_warm_up_desc {
    const vkattn_kv_cache *cache; /* cached forwards through this cache; NULL: plain self-attention forwards */
    uint32_t max_batch;           /* sequences per cached forward (at most the cache's max_sequences), or the
                                     batch of a plain forward; 0 = 1 */
    uint32_t max_new_tokens;      /* cached: the most new tokens of one sequence in one forward (a prompt
                                     chunk); 0 = 1 (decoding only) */
    uint32_t max_length;          /* the longest sequence (cached), or query length (plain); 0 = the cache's
                                     capacity, or max_new_tokens */
    int causal;                   /* plain forwards: causal */
    vkattn_dtype io_dtype;        /* the query and output: F32 (host arrays) or F16 device tensors */
    uint32_t kv_splits;           /* cached: the forwards' vkattn_cached_forward_desc.kv_splits; 0 = the
                                     device's choice. Needs a cache */
} vkattn_warm_up_desc;

/* Builds the pipelines (see above); *pipelines_built (may be NULL) gets how many it created.
 * VKATTN_ERROR_INVALID_ARGUMENT for limits the cache cannot hold (max_batch above its
 * max_sequences, max_length above its capacity, num_blocks x block_size tokens) and for kv_splits
 * without a cache; VKATTN_ERROR_DEVICE_LIMIT, as a cached forward, for more kv_splits than one merge
 * combines; VKATTN_ERROR_SIZE_OVERFLOW, as a cached forward, where max_batch x max_new_tokens new
 * tokens are more than one forward takes; the errors of a
 * forward's checks for a layer the cache does not fit (VKATTN_ERROR_SHAPE for other K/V heads or
 * head dim). Costs a few milliseconds of planning besides the
 * pipelines themselves. */
vkattn_status vkattn_layer_warm_up(vkattn_layer *layer, const vkattn_warm_up_desc *desc, uint32_t *pipelines_built);

/* A cached forward's tokens: T = the sum of new_tokens, sequence after sequence. Its query and
 * output are host arrays (query, output) or device tensors (query_tensor, output_tensor), one pair
 * or the other: device tensors keep a decoder's hidden states on the device, and only they can be
 * recorded (vkattn_forward_cached_record) or submitted (vkattn_submission_add_cached).
 *
 * Masks among the new tokens (speculative decoding verifies a tree of drafted tokens in one
 * forward). Without new_token_mask, new token i of a sequence of length len sits at position
 * len + i and sees the cached keys and new tokens 0..i (causal). With it, sequence b's n_b new
 * tokens have an n_b x n_b matrix of bytes, row-major, the sequences' matrices back to back
 * (sum of n_b^2 bytes in all): entry [i][j] != 0 means new token i may attend to new token j.
 * It replaces the causal rule among the new tokens only: every new token still sees all of its
 * sequence's cached keys (within the layer's window), and j may come after i. A tree's mask has
 * [i][j] set for j = i and each ancestor j of i (topological order is not required); the mask is
 * taken as given, not checked to be a tree: a row without its own token sees the cached keys and
 * the new tokens it names, no more. With new_token_depths, new token t sits at position len + new_token_depths[t] (a tree token: the
 * root 0, its children 1, ...), which RoPE, the window and ALiBi use; without, at len + i. Either
 * way its K and V go to slot len + i of the sequence, so the cache afterwards holds all n_b
 * tokens in that order: keep an accepted path by rolling back (vkattn_kv_cache_truncate) to the
 * length before the forward plus the accepted prefix of that order, or to the length before it
 * and feed the accepted tokens again. A tree's outputs equal those of feeding each root-to-leaf
 * path as a sequence of its own (forked from the same history), token for token, up to rounding. */
typedef struct vkattn_cached_forward_desc {
    uint32_t batch;             /* sequences in this forward, required (>= 1) */
    const uint32_t *seq_ids;    /* (batch) distinct sequence ids; NULL = 0 .. batch - 1 */
    const uint32_t *new_tokens; /* (batch) tokens each sequence adds, each >= 1; NULL = 1 each (a decoding step) */
    const float *query;         /* host: (T, E), the new tokens, sequence after sequence */
    float *output;              /* host: (T, E), the layer's output for each new token; may be the
                                   query's array (it is read before anything is written) */
    uint32_t kv_splits;         /* split-KV: parts of each sequence's keys run side by side and merged
                                   by log-sum-exp. 0 = chosen from the device and the batch (more
                                   parts when the batch alone cannot fill the device); N >= 1 = N
                                   parts (1 = unsplit), or more when the loop budget needs them,
                                   or fewer when the keys a query sees are fewer (a sliding
                                   window, short sequences). */
    const vkattn_tensor *query_tensor; /* device, instead of query: F32 or F16, (T, E) or any shape whose
                                          last dim is E and whose other dims multiply to T, e.g. (T, 1, E):
                                          B sequences' decoding step as a plain forward's (B, 1, E) */
    vkattn_tensor *output_tensor;      /* device, instead of output: F32 or F16 (F16 needs 16-bit storage),
                                          the same kinds of shape; its own memory (not the query's) */
    const uint8_t *new_token_mask;     /* NULL = causal among the new tokens; else the masks above */
    const uint32_t *new_token_depths;  /* (T), only with new_token_mask; NULL = each token's index. Each
                                          below its sequence's new tokens (VKATTN_ERROR_INVALID_ARGUMENT) */
} vkattn_cached_forward_desc;

/* Runs a forward through the cache on the device (see above) and waits for it. The layer must be
 * self-attention shaped (kdim = vdim = E: VKATTN_ERROR_INVALID_ARGUMENT) with the cache's
 * num_kv_heads and head dim (VKATTN_ERROR_SHAPE), without add_bias_kv, add_zero_attn or pruned
 * heads (VKATTN_ERROR_UNSUPPORTED); each message names what differs.
 * VKATTN_ERROR_CACHE_FULL when the pool has too few free blocks for the new tokens: nothing is
 * appended, and freeing sequences makes room. VKATTN_ERROR_DEVICE_LIMIT when the new tokens'
 * queries, keys and values or context rows do not fit one binding (a long prompt on a device of
 * small bindings: Llama 3.1 8B's shape past 8192 tokens in fp32 on lavapipe's 128 MiB): the
 * message says how many tokens a forward may take; feed the prompt in chunks of at most that
 * many, a cached forward each (the same result). On success the sequences hold their new tokens;
 * on any failure every sequence keeps its length and blocks, and no output is written.
 *
 * Cached forwards on the device: the same forward recorded into an application's command buffer
 * (vkattn_forward_cached_record, vkattn_vulkan.h) or added to a submission
 * (vkattn_submission_add_cached) runs after the call returns, so the call itself commits it to the
 * cache: it takes the blocks, writes the forward's sequence table into the cache (host-visible
 * memory, written in place: no copy through the queue) and advances the sequences' lengths, so
 * the next forward of the cache (the next token) may be recorded or added at once. The contract:
 *   - a call that fails changes nothing: lengths, blocks, the cache's owner are as before;
 *   - a submission's cached forwards that will never run are taken back: when a layer, tensor or
 *     cache of an unsubmitted submission is destroyed (its forwards are dropped) or the submission
 *     is destroyed before it was submitted, every sequence returns to its length and blocks before
 *     the adds. A failed vkattn_submission_submit keeps the forwards (and the new lengths): submit
 *     again, or destroy the submission to take them back;
 *   - a recorded forward is the application's to submit: if it never runs (not submitted, or the
 *     submission failed), roll each sequence back with vkattn_kv_cache_truncate to its length
 *     before the record (vkattn_kv_cache_seq_length tells it);
 *   - from the add until the submission finishes (wait, or a poll that says so) the cache belongs
 *     to the submission: any other forward of it (through any entry point, in this or another
 *     submission), fork, truncate and free_seq are VKATTN_ERROR_BUSY; get_info and seq_length
 *     answer (with the new lengths); destroying it waits for the submission, or drops it if not
 *     yet submitted. A cache has at most one forward per submission (BUSY: it serves one layer,
 *     whose workspace holds one forward, and its sequence table holds one forward's): give all of
 *     a step's tokens to one forward;
 *   - a recorded forward holds the cache's sequence table like the layer's workspace: until the
 *     application's submission has completed, record, run or add no other forward of the cache
 *     and do not fork, truncate, free or destroy it (not checked). */
vkattn_status vkattn_forward_cached(vkattn_layer *layer, vkattn_kv_cache *cache, const vkattn_cached_forward_desc *desc);

/* Describes, without running it, the plan vkattn_forward_cached would run for `desc` on `cache`
 * now, as vkattn_forward_explain does for a plain forward: the steps of the new tokens'
 * projections, RoPE and append to the cache, the paged attention (which kernel: attn_paged, or
 * the GPU tunings' attn_paged_lanes, with its key parts, their merge, whether the next block is
 * fetched meanwhile) and the output projection. `desc` is checked as the forward checks it (host
 * arrays or device tensors; none is read or written), but not against the pool's free blocks,
 * which the forward learns as it takes them (VKATTN_ERROR_CACHE_FULL); the cache is not changed
 * (no block taken, no length advanced) nor the layer. The layer, the cache and the tensors may be
 * in an unfinished submission (the plan of step N + 1 while step N runs: the sequences' lengths
 * already count step N's tokens). Writes at most `capacity` bytes of nul-terminated text to
 * `text` (NULL when capacity is 0) and the length the whole text needs to *length (may be NULL). */
vkattn_status vkattn_forward_cached_explain(vkattn_layer *layer, vkattn_kv_cache *cache,
                                            const vkattn_cached_forward_desc *desc, char *text, size_t capacity,
                                            size_t *length);

/* Checks a cached forward on device tensors as vkattn_forward_cached would, commits it to the
 * cache (see above: the sequences advance now) and appends it to the submission, after the
 * forwards added before it (a barrier between them: its query may be the last one's output).
 * Host arrays are VKATTN_ERROR_INVALID_ARGUMENT. A failed add leaves the submission and the cache
 * as they were. */
vkattn_status vkattn_submission_add_cached(vkattn_submission *submission, vkattn_layer *layer, vkattn_kv_cache *cache,
                                           const vkattn_cached_forward_desc *desc);

/* ---------------------------------------------------------------------------------------------- */
/* Profiling and cost model                                                                        */
/* ---------------------------------------------------------------------------------------------- */

/* The stages a forward's GPU time is reported in. */
typedef enum vkattn_stage {
    VKATTN_STAGE_QKV_PROJECTION = 0, /* the Q/K/V input projections (one fused matmul for self-attention) */
    VKATTN_STAGE_SCORES = 1,         /* Q·K^T·scale + masks (unfused) */
    VKATTN_STAGE_SOFTMAX = 2,        /* row softmax (unfused) */
    VKATTN_STAGE_AVERAGE_HEADS = 3,  /* head-averaged attention weights */
    VKATTN_STAGE_PV = 4,             /* P·V into the concatenated heads (unfused) */
    VKATTN_STAGE_OUT_PROJECTION = 5, /* ctx·W_O^T + b_O */
    VKATTN_STAGE_FUSED = 6,          /* the fused attention kernel */
    VKATTN_STAGE_COUNT = 7
} vkattn_stage;

/* "qkv_projection", "scores", "softmax", "average_heads", "pv", "out_projection", "fused". */
const char *vkattn_stage_name(vkattn_stage stage);

/* What the last forward of a layer did. */
typedef struct vkattn_forward_stats {
    vkattn_path path;            /* the path that ran (AUTO resolved) */
    uint32_t dispatches;         /* compute dispatches recorded */
    uint32_t submits;            /* queue submissions (1 for a device forward) */
    uint32_t chunks;             /* chunks of score rows (unfused path) */
    uint64_t workspace_bytes;    /* the layer's workspace this forward needed */
    /* Host side, always measured: recording, and submit + wait for the fence. */
    double record_ms, submit_wait_ms;
    /* GPU side, only with timing on and a device with timestamps (`timed` = 1). */
    int timed;
    double gpu_ms;                          /* first to last timestamp of the forward */
    double stage_ms[VKATTN_STAGE_COUNT];    /* per stage: the time between its steps' timestamps */
} vkattn_forward_stats;

/* Turns per-stage GPU timestamps on or off for later forwards (off by default: the default path
 * records no queries). VKATTN_ERROR_UNSUPPORTED if the device's queue has no timestamps. */
vkattn_status vkattn_layer_set_timing(vkattn_layer *layer, int enabled);
/* Statistics of the layer's last successful device forward (zeros before the first). */
vkattn_status vkattn_layer_last_stats(const vkattn_layer *layer, vkattn_forward_stats *out);

/* One step of a timed forward: a dispatch (or a fill, copy or write) as vkattn_forward_explain
 * numbers and names them. */
typedef struct vkattn_step_time {
    const char *kernel; /* the kernel ("matmul_cm", "attn_cm", "attn_merge", ...), or "fill", "copy",
                           "write"; static storage */
    vkattn_stage stage; /* the stage its time counts in (vkattn_forward_stats.stage_ms) */
    double ms;          /* from the timestamp before it to the one after */
} vkattn_step_time;
/* Each step's GPU time in the layer's last successful device forward, where it was timed
 * (vkattn_layer_set_timing; 0 steps otherwise), in the order the steps ran: at most `capacity`
 * entries to `times` (may be NULL when capacity is 0), the number of steps to *count. A stage's
 * time in vkattn_forward_stats is the sum of its steps'. */
vkattn_status vkattn_layer_last_step_times(const vkattn_layer *layer, vkattn_step_time *times, uint32_t capacity,
                                           uint32_t *count);

/* The work of one forward, per stage: FLOPs by the one formula benchmarks and tests share,
 *   projections 2·B·(L·E·E + S·kdim·E + S·vdim·E + L·E·E), attention 4·B·H·L·S·D
 * (scores and P·V take half each, softmax counts none), and the bytes a stage must at least
 * read and write (activations in the layer's storage dtype, weights read once). */
typedef struct vkattn_cost {
    double flops[VKATTN_STAGE_COUNT];
    double bytes[VKATTN_STAGE_COUNT];
    double total_flops, total_bytes;
} vkattn_cost;

/* Which attention weights a forward returns. */
typedef enum vkattn_weights_kind {
    VKATTN_WEIGHTS_NONE = 0,
    VKATTN_WEIGHTS_PER_HEAD = 1, /* (B,H,L,S') */
    VKATTN_WEIGHTS_AVERAGED = 2  /* (B,L,S') */
} vkattn_weights_kind;

/* Fills `out` for a layer description and shapes (B, L, S; S = 0 means L) on `path`
 * (UNFUSED: scores/softmax/P·V stages; FUSED: one fused stage; AUTO as a forward resolves it:
 * fused, unless attention weights are asked for; CPU counts as UNFUSED), with
 * `weights` returned. With layer->head_mask, only the active heads count: projections use their
 * H'·D rows. VKATTN_ERROR_INVALID_ARGUMENT for a description vkattn_layer_create would refuse. */
vkattn_status vkattn_forward_cost(const vkattn_layer_desc *layer, uint32_t batch, uint32_t query_len,
                                  uint32_t key_len, vkattn_path path, vkattn_weights_kind weights, vkattn_cost *out);

/* The device's own ceilings, measured with microkernels (see `vkattn peak`). */
typedef struct vkattn_peak {
    double fp32_gflops;      /* vec4 FMA chains, 2 FLOPs per FMA */
    double fp16_gflops;      /* the same in float16 arithmetic; 0 without shaderFloat16 */
    double bandwidth_gbs;    /* a large buffer-to-buffer copy, bytes read + written per second */
    double fp32_ms, fp16_ms, bandwidth_ms; /* the timed runs behind each figure */
} vkattn_peak;

/* Runs the microkernels for about `seconds` in total (0 = 1 s) and fills `out`. Needs timestamps.
 * The copy uses two 64 MiB buffers (or the binding range, if smaller); runs shorter than 0.25 s
 * use seconds x 256 MiB (at least 1 MiB), so their bandwidth may come from caches. */
vkattn_status vkattn_measure_peak(vkattn_context *ctx, double seconds, vkattn_peak *out);

/* ---------------------------------------------------------------------------------------------- */
/* Files: .npy arrays and safetensors weights                                                      */
/* ---------------------------------------------------------------------------------------------- */

/* A host array. `data` is owned by whoever filled the struct through vkattn_npy_read (free it with
 * vkattn_array_free) or by the caller. */
typedef struct vkattn_array {
    vkattn_dtype dtype;
    uint32_t rank;                  /* 0..VKATTN_MAX_RANK; rank 0 is a scalar */
    uint32_t dims[VKATTN_MAX_RANK];
    void *data;
    size_t bytes;                   /* product(dims) * vkattn_dtype_size(dtype) */
} vkattn_array;

/* Reads a C-order .npy file (format 1.0, 2.0 or 3.0). Stored dtypes: <f4 and |b1 load as is;
 * <f2 and <f8 load as F32 (f8 values that overflow f32 are an error); <i4, <i8 load as I32 (i8
 * values out of int32 range are an error); big-endian is converted. Fortran order, object arrays,
 * rank > 4 and truncated data are VKATTN_ERROR_FORMAT. The file is read whole into memory, up to
 * 4 GiB (a larger one is VKATTN_ERROR_IO; vkattn_npy_write has no such limit, so attention weights
 * of (1, 32, 6000, 6000), 4.6 GB, are written but not read back). */
vkattn_status vkattn_npy_read(const char *path, vkattn_array *out, vkattn_error *error);
/* Writes `array` as a .npy file (<f4, <f2, |b1 or <i4). */
vkattn_status vkattn_npy_write(const char *path, const vkattn_array *array, vkattn_error *error);
/* Frees array->data and zeroes the struct; NULL is a no-op. */
void vkattn_array_free(vkattn_array *array);

/* Weights of one attention layer read from a safetensors file: a file holding an
 * nn.MultiheadAttention state_dict, or one layer of a whole checkpoint (a Hugging Face
 * model.safetensors of many gigabytes). Only the 8-byte length, the JSON header (at most 100 MB)
 * and the layer's own tensors are read, with pread, straight into their float32 arrays; the rest
 * of the file is checked through the header (every tensor's offsets must tile the data, in bounds,
 * with sizes that match their shapes and dtypes) but never read. F32 tensors load as is; F16 and
 * BF16 are converted to F32.
 *
 * Names, after the layer's prefix (see vkattn_weight_file_open):
 *   nn.MultiheadAttention  in_proj_weight or q_proj_weight, k_proj_weight, v_proj_weight;
 *                          out_proj.weight; in_proj_bias with out_proj.bias; bias_k with bias_v
 *   Hugging Face           q_proj.weight, k_proj.weight, v_proj.weight, or one qkv_proj.weight
 *                          (Phi-3: rows of W_Q, then W_K, then W_V), o_proj.weight (Llama,
 *                          Mistral, Qwen, Gemma, ...) or out_proj.weight (BART, CLIP, Whisper); the
 *                          biases q_proj.bias, k_proj.bias, v_proj.bias, o_proj.bias (out_proj.bias);
 *                          q_norm.weight with k_norm.weight (Qwen3, Gemma 3: D values each, per
 *                          head; OLMo 2: E_q and kv_rows, a whole row); sinks (gpt-oss: H values)
 * One layer uses one naming (a mix is VKATTN_ERROR_FORMAT). A Hugging Face layer maps to
 * q/k/v_proj_weight, out_proj_weight, in_proj_bias = [q_proj.bias, k_proj.bias, v_proj.bias]
 * (E_q + 2 * kv_rows floats), out_proj_bias, q_norm_weight, k_norm_weight and sinks. A layer's
 * biases are all or nothing (no_bias): all four present, or none (no_bias = 1), or q/k/v biases
 * without the output's (Qwen2), which loads out_proj_bias as zeros
 * (vkattn_weight_file_info.out_bias_zero_filled); any other set is VKATTN_ERROR_NOT_FOUND naming
 * what is missing. Tensors under the prefix that would change the result but are not applied are
 * refused (VKATTN_ERROR_UNSUPPORTED): q_layernorm/k_layernorm (LayerNorms with a bias),
 * q_norm.bias, qkv_proj.bias. Other tensors under the prefix (e.g. rotary frequencies) are ignored
 * and counted in the info. Only names under the exact prefix are read: layer 15's tensors beside
 * layer 5's, or a layer's own layernorm weights ("model.layers.5.input_layernorm.weight"), are
 * never picked up. The file holds no rotary or norm settings: take them from the model's
 * config.json (vkattn_model_config_open), or set rope_theta, rope_scaling, qk_norm_eps and
 * qk_norm_plus_one by hand.
 *
 * Widths: the output projection is (E, E_q), E_q = H * D the query projection's rows, which may
 * differ from E (num_heads * head_dim != hidden_size: Gemma, Qwen3's small models, Mistral Nemo).
 * Grouped-query layers: separate key/value projections (Hugging Face's k_proj.weight and
 * v_proj.weight, nn.MultiheadAttention's k_proj_weight and v_proj_weight) may have fewer rows than
 * the query's: kv_rows = H_kv * D, which must divide E_q (else VKATTN_ERROR_FORMAT); they load as
 * k_proj_weight (kv_rows, kdim) and v_proj_weight (kv_rows, vdim), and nn.MultiheadAttention's
 * in_proj_bias then has E_q + 2 * kv_rows entries, bias_k and bias_v kv_rows (the layout
 * vkattn_weights takes). */
typedef struct vkattn_weight_file vkattn_weight_file;

/* Reads one attention layer from the safetensors file at `path`. `prefix` names the layer: its
 * tensors are "<prefix>q_proj.weight" and so on (e.g. "model.layers.0.self_attn."; a prefix given
 * without its final '.' also matches with it). NULL or "" takes the only layer in the file, whose
 * names may share any common prefix ending in '.' ("attn.", "encoder.layers.0.self_attn.").
 * Errors (the message starts with the path): VKATTN_ERROR_IO when the file cannot be opened or
 * read; VKATTN_ERROR_FORMAT for a malformed or hostile file, several layers without a prefix (the
 * message lists them), mixed namings, wrong shapes or dtypes; VKATTN_ERROR_NOT_FOUND when no
 * layer has the prefix (the message lists a few prefixes that do hold attention weights, e.g.
 * "'model.layers.0.self_attn.', 'model.layers.1.self_attn.', ... and 30 more") or a tensor the
 * layer needs is missing (the message names it); VKATTN_ERROR_INVALID_ARGUMENT for a NULL path or
 * out; VKATTN_ERROR_OUT_OF_HOST_MEMORY. On failure *out is untouched. Files that are not regular
 * files (pipes) are read whole, up to 4 GiB.
 *
 * A checkpoint in shards: `path` ending in ".json" is a Hugging Face index
 * (model.safetensors.index.json: {"weight_map": {"<tensor>": "<shard file>", ...}}; IO above
 * 100 MB, FORMAT when malformed). Every shard it names (a name relative to its folder: no absolute
 * name, no "..", else FORMAT; links are followed, as in Hugging Face's cache) has its header read
 * and checked as a lone file's. The
 * shards say what they hold, as transformers reads them: the index only names the files, so a
 * stale entry or a tensor it leaves out is no fault, but a tensor in two shards is FORMAT; a
 * shard that cannot be opened, is not a regular file or changed size before its tensors were
 * read is IO. The layer is then found among all the shards' tensors, its tensors read from the
 * shards holding them. Messages name the index, then the shard. The info's file_bytes, file_tensor_count and
 * bytes_read are the shards' summed. A folder as `path` opens its model.safetensors, else its
 * model.safetensors.index.json (IO when it has neither). */
vkattn_status vkattn_weight_file_open(const char *path, const char *prefix, vkattn_weight_file **out,
                                      vkattn_error *error);
/* vkattn_weight_file_open(path, NULL, out, error). */
vkattn_status vkattn_weight_file_load(const char *path, vkattn_weight_file **out, vkattn_error *error);
void vkattn_weight_file_destroy(vkattn_weight_file *file);
/* Pointers into the file object, valid until it is destroyed. */
const vkattn_weights *vkattn_weight_file_weights(const vkattn_weight_file *file);

/* vkattn_weight_file_describe's num_kv_heads when the file's key/value rows are not a whole
 * number of heads of D = (query rows) / num_heads (or num_heads is 0 or does not divide them):
 * vkattn_layer_create refuses it, since num_heads is never a multiple of it. */
#define VKATTN_KV_HEADS_UNKNOWN 0xFFFFFFFFu

/* Fills embed_dim, kdim, vdim, no_bias and add_bias_kv from the tensors present, and, with
 * desc->num_heads already set, the head dim, num_kv_heads and qk_norm: head_dim = (query rows) /
 * num_heads when the query rows H * D differ from E (else 0, = E / H); num_kv_heads 0
 * (= num_heads) when k_proj/v_proj have as many rows as q_proj, else kv_rows / D; qk_norm HEAD or
 * ROW from q_norm.weight's width (NONE without). num_kv_heads is VKATTN_KV_HEADS_UNKNOWN when the
 * file contradicts num_heads (kv_rows not a whole number of heads, num_heads 0 or not dividing
 * the query rows, a norm neither D nor E_q wide, sinks not num_heads long), so that the layer is
 * refused rather than read with the wrong widths: set num_heads first. Leaves num_heads,
 * add_zero_attn, storage, qk_norm_eps and qk_norm_plus_one as they are (the file cannot know them). */
void vkattn_weight_file_describe(const vkattn_weight_file *file, vkattn_layer_desc *desc);

/* Checks that `desc` (from a model's config.json, say) fits the file's tensors before
 * vkattn_layer_create reads them, which cannot know the widths of the arrays it is given: a
 * config of another model with the same query and key/value rows (Qwen3-1.7B's over Qwen3-0.6B's
 * checkpoint: 2048 wide, not 1024) would have it read past them. Compared: embed_dim with the
 * output projection's rows, kdim and vdim (0 = embed_dim) with the key/value projections'
 * columns, num_heads x D (head_dim, else embed_dim / num_heads) with the query rows, H_kv x D
 * with the key/value rows, no_bias and add_bias_kv with the file's biases, qk_norm with its norm
 * weights (HEAD: D values, ROW: the rows), and the sinks (one per head). VKATTN_ERROR_SHAPE
 * naming the first that differs, with both values; VKATTN_ERROR_INVALID_ARGUMENT for NULL or
 * num_heads 0. It compares widths, not how they split into heads: 8 heads of 8 over a file made
 * with 4 heads of 16 (the same rows) pass and compute another attention; the file cannot tell. */
vkattn_status vkattn_weight_file_check(const vkattn_weight_file *file, const vkattn_layer_desc *desc,
                                       vkattn_error *error);

typedef enum vkattn_weight_names {
    VKATTN_WEIGHT_NAMES_TORCH = 0, /* nn.MultiheadAttention's state_dict names */
    VKATTN_WEIGHT_NAMES_HF = 1     /* Hugging Face's q_proj.weight, ..., o_proj.weight or out_proj.weight */
} vkattn_weight_names;

/* The most attention tensors one layer reads (nn.MultiheadAttention: at most 8; Hugging Face: at
 * most 11, the four projections' weights and biases, q_norm, k_norm and sinks). */
#define VKATTN_WEIGHT_FILE_MAX_TENSORS 16

/* What a load found, for reports. Strings point into the file object (valid until it is
 * destroyed), printable ASCII: other bytes appear as \xNN, names longer than 180 bytes end in "...". */
typedef struct vkattn_weight_file_info {
    vkattn_weight_names naming;
    const char *prefix;             /* the layer's prefix, "" for none */
    uint32_t embed_dim;             /* E: rows of the output projection */
    uint32_t q_rows;                /* rows of the query projection, columns of the output one: H * D */
    uint32_t kv_rows;               /* rows of the key and value projections: H * D, or H_kv * D */
    uint32_t kdim, vdim;            /* columns of the key and value projections */
    int out_bias_zero_filled;       /* 1: q/k/v biases without an output bias (Qwen2): out_proj_bias is zeros */
    uint32_t tensor_count;          /* attention tensors read */
    const char *tensor_names[VKATTN_WEIGHT_FILE_MAX_TENSORS];  /* their full names in the file */
    const char *tensor_dtypes[VKATTN_WEIGHT_FILE_MAX_TENSORS]; /* as stored: "F32", "F16" or "BF16" */
    uint32_t ignored_under_prefix;  /* other tensors under a non-empty prefix, not read */
    uint64_t file_tensor_count;     /* tensors the header lists */
    uint64_t file_bytes;            /* the file's size */
    uint64_t bytes_read;            /* bytes read from it: 8 + the header + the layer's tensors */
} vkattn_weight_file_info;

/* Copies the file's info to *out. VKATTN_ERROR_INVALID_ARGUMENT if either is NULL. */
vkattn_status vkattn_weight_file_get_info(const vkattn_weight_file *file, vkattn_weight_file_info *out);

/* ---- a model's config.json ---------------------------------------------------------------------
 *
 * A Hugging Face config.json read for its attention: vkattn_model_config_layer fills the layer
 * description of layer N (and the matching fields of a KV-cache description) exactly as that
 * family's modeling code uses its config, so that an application need not translate fields by
 * hand. Families read (model_type): llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3 and
 * gemma3_text, gpt_oss, phi3, olmo2, smollm3 (README: "Model families"); another model_type is
 * VKATTN_ERROR_UNSUPPORTED, as is any field that would change attention in a way vkattn does not
 * compute, named in the message: kv_lora_rank, q_lora_rank and qk_rope_head_dim (multi-head latent
 * attention), attention_chunk_size (Llama 4), mrope_section, use_qk_norm,
 * use_bidirectional_attention (EmbeddingGemma), an unknown rope type or rope_scaling field, a layer
 * type other than full_attention and sliding_attention. A field the file leaves out takes its
 * family's configuration-class default in transformers (a multimodal Gemma 3's text_config names
 * few fields); a field given as null is unset (None there).
 *
 * What a layer gets: embed_dim (hidden_size), num_heads, num_kv_heads, head_dim (or
 * hidden_size / num_attention_heads), scale (Gemma 2 and 3: query_pre_attn_scalar^-1/2), RoPE
 * (rope_theta; rope_scaling or rope_parameters, whole or per layer type; partial_rotary_factor
 * as rope_dim = int(head_dim * factor); Gemma 3's sliding layers rope_local_base_freq with no
 * scaling; none for SmolLM3's no_rope_layers), window (sliding_window, on the layers that slide:
 * layer_types, else the family's rule), softcap (attn_logit_softcapping), qk_norm (Qwen3 and
 * Gemma 3 per head, Gemma's with (1 + w); OLMo 2 over the row) with qk_norm_eps = rms_norm_eps,
 * no_bias (attention_bias where the family's modeling code reads it; Mistral and Phi-3 have no
 * biases and Qwen2 q/k/v biases whatever it says). Every other field of the description is
 * zero: storage, head masks and the like are the application's. */
typedef struct vkattn_model_config vkattn_model_config;

typedef struct vkattn_model_info {
    const char *model_type;           /* the family, as config.json names it */
    uint32_t num_layers;              /* num_hidden_layers (0 = not given) */
    uint32_t max_position_embeddings; /* 0 = not given */
    int attention_sinks;              /* the family's layers have a sink logit per head (vkattn_weights.sinks,
                                         "sinks" in the checkpoint: gpt-oss); a checkpoint without it is
                                         incomplete */
} vkattn_model_info;

/* Reads the config.json at `path` (at most 16 MiB). Errors: VKATTN_ERROR_IO, VKATTN_ERROR_FORMAT
 * (malformed JSON, a field of the wrong kind or range), VKATTN_ERROR_UNSUPPORTED (see above),
 * VKATTN_ERROR_INVALID_ARGUMENT, VKATTN_ERROR_OUT_OF_HOST_MEMORY; the message starts with the path.
 * On failure *out is untouched. */
vkattn_status vkattn_model_config_open(const char *path, vkattn_model_config **out, vkattn_error *error);
void vkattn_model_config_destroy(vkattn_model_config *config);
vkattn_status vkattn_model_config_get_info(const vkattn_model_config *config, vkattn_model_info *out);
/* Layer `layer` (0-based): fills *desc whole; when `cache` is not NULL, its num_kv_heads and
 * head_dim (the rest of *cache is the caller's: blocks, sequences, dtype); when `prefix` is not
 * NULL, the layer's weight names' prefix in the family's checkpoints, e.g.
 * "model.layers.7.self_attn." (64 bytes always suffice). desc->rope_scaling's lists point into
 * the config and live until it is destroyed (vkattn_layer_create copies them). Errors:
 * VKATTN_ERROR_INVALID_ARGUMENT (no such layer, a NULL config or desc, a short prefix buffer),
 * VKATTN_ERROR_FORMAT (fields missing or contradictory for this layer: no hidden_size,
 * num_key_value_heads not dividing num_attention_heads, layer_types of the wrong length, a
 * longrope factor list of the wrong length, ...), VKATTN_ERROR_UNSUPPORTED; the message starts
 * with the path the config was opened from. On failure *desc, *cache and prefix are untouched. */
vkattn_status vkattn_model_config_layer(const vkattn_model_config *config, uint32_t layer, vkattn_layer_desc *desc,
                                        vkattn_kv_cache_desc *cache, char *prefix, size_t prefix_cap,
                                        vkattn_error *error);

#ifdef __cplusplus
}
#endif

#endif /* VKATTN_H */
