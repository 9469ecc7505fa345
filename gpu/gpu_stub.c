/* The GPU backend of a build without nvcc: every entry point says so. */
#include "gpu/gpu.h"

#include <stdio.h>
#include <string.h>

bool ts_gpu_built(void)
{
    return false;
}

ts_status_t ts_gpu_probe(ts_gpu_info_t *info, char *why, size_t why_size)
{
    if (info)
        memset(info, 0, sizeof *info);
    if (why && why_size)
        snprintf(why, why_size, "no GPU support built (nvcc was not found at build time)");
    return TS_ENOGPU;
}
