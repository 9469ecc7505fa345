/*
 * gpu/ — the CUDA implementation of tessera's compute backend.
 *
 * A plain C header: core/ never sees CUDA types. When the build has nvcc,
 * the .cu files of gpu/ implement these functions; otherwise gpu/gpu_stub.c does, and every
 * call reports TS_ENOGPU ("no GPU support built"). Either way the binaries run
 * on machines without a GPU.
 *
 * The GPU backend implements every member of struct ts_backend_i
 * (core/backend/backend.h) and agrees with the CPU backend bit for bit: every
 * op has a unique reduced result, and the one floating-point step (the HPS
 * correction v of basis conversion) is evaluated with the same IEEE double
 * operations in the same order, without contraction into FMA.
 *
 * Memory: device memory from a caching pool with an explicit cap (no managed
 * memory); env TS_GPU_POOL_MB sets the cap (default: 90% of the device).
 * Work is queued on one non-blocking stream per backend; ops are
 * stream-ordered, `download` and `synchronize` wait. A CUDA error is
 * translated once into TS_EDEVICE, logged, and marks the backend unhealthy:
 * from then on every entry point returns TS_EDEVICE (the process keeps
 * running; callers fall back to the CPU backend or refuse work).
 * The backend object's own few bookkeeping blocks come from the C library
 * (not ts_malloc), like the default CPU backend's, so a lazily made default
 * backend does not show in ts_alloc_live().
 */
#ifndef TS_GPU_H
#define TS_GPU_H

#include <stdbool.h>
#include <stddef.h>

#include "core/backend/backend.h"
#include "core/base/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ts_gpu_info {
    int device_count;
    char name[256]; /* device 0 */
    size_t total_mem_bytes;
    int cc_major, cc_minor;
} ts_gpu_info_t;

/* True when this build contains CUDA code (nvcc was present at build time). */
bool ts_gpu_built(void);
/*
 * Probe the GPUs: TS_OK with info->device_count >= 1, or TS_ENOGPU with a
 * reason in `why` (no CUDA in this build, no driver, no device).
 */
ts_status_t ts_gpu_probe(ts_gpu_info_t *info, char *why, size_t why_size);

/*
 * [out] a GPU backend on CUDA device `device` (0-based), freed with
 * ts_backend_free. TS_ENOGPU when this build has no CUDA or the device is
 * missing (the reason is logged), TS_EDEVICE when the device fails during
 * setup, TS_EINVAL for a bad index, TS_ENOMEM.
 */
ts_status_t ts_gpu_backend_new(int device, ts_backend_t **out);

/* True when `be` is a GPU backend that has not seen a device error. */
bool ts_gpu_backend_healthy(const ts_backend_t *be);

/*
 * Pick a backend by name: "cpu" (a new CPU backend, threads from TS_THREADS or
 * one per core), "gpu" (GPU 0, or env TS_GPU_DEVICE; TS_ENOGPU when there is
 * none, with the reason logged), "auto" (the GPU when present and working,
 * else the CPU backend; the reason for the fallback is logged at info level).
 * NULL or "" means "auto". [out] *out, freed with ts_backend_free.
 * TS_EINVAL for an unknown name.
 */
ts_status_t ts_backend_select(const char *name, ts_backend_t **out);
/* The same, also writing the reason for a refusal or fallback into `why`
 * ("" when the requested backend was made). */
ts_status_t ts_backend_select_why(const char *name, ts_backend_t **out, char *why, size_t why_size);

/*
 * Make `name` ("cpu", "gpu", "auto"; NULL means "auto") the default backend of
 * the process: every ring created afterwards with backend NULL (CKKS and RLWE
 * contexts, ...) runs on it. The backend is made lazily, on the first
 * ts_backend_default() call (so a process may fork before touching CUDA); if
 * that fails the CPU backend is used and the reason is logged. Call before
 * any context exists: TS_EBUSY otherwise; TS_EINVAL for an unknown name.
 */
ts_status_t ts_backend_use_default(const char *name);

#ifdef __cplusplus
}
#endif

#endif
