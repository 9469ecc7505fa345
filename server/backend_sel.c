/*
 * Run-time backend selection shared by tesserad and the tessera commands that
 * compute (issue 9): "cpu", "gpu" or "auto" becomes the process's default
 * backend (gpu/gpu.h ts_backend_use_default), decided once up front so that
 * the caller can log which backend runs and why, and refuse to start when
 * "gpu" was asked for and no working GPU is there.
 */
#include <stdio.h>
#include <string.h>

#include "core/backend/backend.h"
#include "gpu/gpu.h"
#include "server/tesserad.h"

ts_status_t ts_srv_backend_apply(const char *name, char *used, size_t used_size, char *why,
                                 size_t why_size)
{
    if (used && used_size)
        used[0] = '\0';
    if (why && why_size)
        why[0] = '\0';
    if (!name || !*name)
        name = "auto";
    if (strcmp(name, "cpu") != 0 && strcmp(name, "gpu") != 0 && strcmp(name, "auto") != 0 &&
        strcmp(name, "devemu") != 0) {
        if (why && why_size)
            snprintf(why, why_size, "unknown backend \"%.64s\" (expected cpu, gpu or auto)", name);
        return TS_EINVAL;
    }
    const char *pick = "cpu";
    if (strcmp(name, "cpu") == 0) {
        if (why && why_size)
            snprintf(why, why_size, "backend cpu requested");
    } else {
        /* Probe now (the default itself is made lazily): a refusal of "gpu"
         * must stop the caller before it starts, not fall back silently. */
        ts_backend_t *be = NULL;
        char reason[320] = "";
        ts_status_t st = ts_backend_select_why(name, &be, reason, sizeof reason);
        if (st != TS_OK) {
            if (why && why_size)
                snprintf(why, why_size, "backend %s unavailable: %s", name,
                         reason[0] ? reason : ts_strerror(st));
            return st;
        }
        pick = ts_backend_is_devemu(be) ? "devemu" : ts_backend_is_gpu(be) ? "gpu" : "cpu";
        ts_backend_free(be);
        if (why && why_size)
            snprintf(why, why_size, "%s",
                     reason[0] ? reason
                               : (!strcmp(name, "auto") ? "backend auto: using the GPU"
                                                        : "backend gpu requested"));
    }
    if (used && used_size)
        snprintf(used, used_size, "%s", pick);
    ts_status_t st = ts_backend_use_default(pick);
    if (st == TS_EBUSY) /* a default already exists in this process (tests): keep it */
        ts_log(TS_LOG_WARN, "backend", "default backend already made; \"%s\" not applied", pick);
    else if (st != TS_OK)
        return st;
    return TS_OK;
}
