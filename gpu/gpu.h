/*
 * gpu/ — the CUDA implementation of tessera's compute backend.
 *
 * A plain C header: core/ never sees CUDA types. When the build has nvcc,
 * the .cu files of gpu/ implement these functions; otherwise gpu/gpu_stub.c does, and every
 * call reports TS_ENOGPU ("no GPU support built"). Either way the binaries run
 * on machines without a GPU.
 */
#ifndef TS_GPU_H
#define TS_GPU_H

#include <stdbool.h>
#include <stddef.h>

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

#ifdef __cplusplus
}
#endif

#endif
