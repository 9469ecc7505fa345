/* Internals of gpu/ for the CUDA files only: error translation and launch helpers. */
#ifndef TS_GPU_CUDA_CUH
#define TS_GPU_CUDA_CUH

#include <cuda_runtime.h>

#include "gpu/gpu_int.h"

/*
 * Translate a CUDA error once, at the boundary: cudaSuccess -> TS_OK; an
 * allocation failure -> TS_ENOMEM (the device stays usable); anything else ->
 * TS_EDEVICE, logged with `what`, and the device is marked unhealthy.
 */
ts_status_t tsg_check(tsg_dev_t *dev, cudaError_t e, const char *what);
/* The check after a kernel launch (cudaGetLastError). */
ts_status_t tsg_check_launch(tsg_dev_t *dev, const char *what);
cudaStream_t tsg_stream(const tsg_dev_t *dev);

/* Blocks for `total` threads of `threads` each, capped for grid-stride loops. */
static inline unsigned tsg_blocks(size_t total, unsigned threads)
{
    size_t b = (total + threads - 1) / threads;
    const size_t cap = 65535u * 16u;
    return (unsigned)(b == 0 ? 1 : b > cap ? cap : b);
}

#endif
