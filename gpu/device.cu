/* Device discovery; CUDA errors become TS_ENOGPU with the runtime's reason. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "gpu/gpu.h"

extern "C" bool ts_gpu_built(void)
{
    return true;
}

extern "C" ts_status_t ts_gpu_probe(ts_gpu_info_t *info, char *why, size_t why_size)
{
    if (info)
        memset(info, 0, sizeof *info);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        if (why && why_size)
            snprintf(why, why_size, "no usable GPU: %s",
                     e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device present");
        return TS_ENOGPU;
    }
    cudaDeviceProp prop;
    e = cudaGetDeviceProperties(&prop, 0);
    if (e != cudaSuccess) {
        if (why && why_size)
            snprintf(why, why_size, "cannot query GPU 0: %s", cudaGetErrorString(e));
        return TS_ENOGPU;
    }
    if (info) {
        info->device_count = n;
        snprintf(info->name, sizeof info->name, "%s", prop.name);
        info->total_mem_bytes = prop.totalGlobalMem;
        info->cc_major = prop.major;
        info->cc_minor = prop.minor;
    }
    return TS_OK;
}
