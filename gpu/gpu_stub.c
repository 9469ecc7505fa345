/* The GPU backend of a build without nvcc: every GPU entry point says so, and
 * backend selection falls back to (or insists on) the CPU. */
#include "gpu/gpu.h"

#include <stdio.h>
#include <string.h>

#include "gpu/select_impl.h"

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

ts_status_t ts_gpu_backend_new(int device, ts_backend_t **out)
{
    (void)device;
    if (out)
        *out = NULL;
    ts_log(TS_LOG_INFO, "gpu", "GPU backend unavailable: no GPU support built");
    return TS_ENOGPU;
}

bool ts_gpu_backend_healthy(const ts_backend_t *be)
{
    (void)be;
    return false;
}

ts_status_t ts_backend_select(const char *name, ts_backend_t **out)
{
    return select_backend(name, out, NULL, 0);
}

ts_status_t ts_backend_select_why(const char *name, ts_backend_t **out, char *why, size_t why_size)
{
    return select_backend(name, out, why, why_size);
}

ts_status_t ts_backend_use_default(const char *name)
{
    return use_default(name);
}
