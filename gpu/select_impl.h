/*
 * Backend selection by name, shared by the CUDA build (gpu/select.c) and the
 * stub (gpu/gpu_stub.c): one definition of the cpu / gpu / auto policy. In the
 * stub ts_gpu_probe always reports TS_ENOGPU, so "gpu" is refused with the
 * stub's reason and "auto" falls back to the CPU.
 */
#ifndef TS_GPU_SELECT_IMPL_H
#define TS_GPU_SELECT_IMPL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

static int select_env_int(const char *name, int lo, int hi, int dflt)
{
    const char *env = getenv(name);
    if (!env || !*env)
        return dflt;
    char *end;
    long v = strtol(env, &end, 10);
    if (*end != '\0' || v < lo || v > hi) {
        ts_log(TS_LOG_WARN, "gpu", "%s=%s ignored (expected an integer in [%d, %d])", name, env, lo,
               hi);
        return dflt;
    }
    return (int)v;
}

static void select_set_why(char *why, size_t why_size, const char *msg)
{
    if (why && why_size)
        snprintf(why, why_size, "%s", msg);
}

static ts_status_t select_backend(const char *name, ts_backend_t **out, char *why, size_t why_size)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    select_set_why(why, why_size, "");
    enum { SEL_AUTO, SEL_CPU, SEL_GPU, SEL_DEVEMU } mode;
    if (!name || !*name || strcmp(name, "auto") == 0)
        mode = SEL_AUTO;
    else if (strcmp(name, "cpu") == 0)
        mode = SEL_CPU;
    else if (strcmp(name, "gpu") == 0)
        mode = SEL_GPU;
    else if (strcmp(name, "devemu") == 0)
        mode = SEL_DEVEMU; /* a testing aid: core/backend/backend.h */
    else {
        char msg[160];
        snprintf(msg, sizeof msg, "unknown backend \"%.64s\" (expected cpu, gpu or auto)", name);
        select_set_why(why, why_size, msg);
        ts_log(TS_LOG_ERROR, "gpu", "%s", msg);
        return TS_EINVAL;
    }
    const int threads = select_env_int("TS_THREADS", 1, 1024, 0);
    if (mode == SEL_CPU)
        return ts_backend_cpu_new(threads, out);
    if (mode == SEL_DEVEMU) {
        select_set_why(why, why_size, "the CPU behind device-style memory (a testing aid)");
        return ts_backend_devemu_new(threads, out);
    }
    const int device = select_env_int("TS_GPU_DEVICE", 0, 1023, 0);
    char reason[256] = "";
    ts_gpu_info_t info;
    ts_status_t st = ts_gpu_probe(&info, reason, sizeof reason);
    if (st == TS_OK && device >= info.device_count) {
        snprintf(reason, sizeof reason, "TS_GPU_DEVICE=%d but %d GPU(s) present", device,
                 info.device_count);
        st = TS_ENOGPU;
    }
    if (st == TS_OK) {
        st = ts_gpu_backend_new(device, out);
        if (st != TS_OK)
            snprintf(reason, sizeof reason, "GPU %d (%.200s) failed to start: %s", device,
                     info.name, ts_strerror(st));
    }
    if (st == TS_OK)
        return TS_OK;
    if (mode == SEL_GPU) {
        select_set_why(why, why_size, reason);
        ts_log(TS_LOG_ERROR, "gpu", "backend \"gpu\" refused: %s", reason);
        return st == TS_ENOMEM ? TS_ENOMEM : (st == TS_EDEVICE ? TS_EDEVICE : TS_ENOGPU);
    }
    char msg[320];
    snprintf(msg, sizeof msg, "backend auto: using the CPU (%s)", reason);
    select_set_why(why, why_size, msg);
    ts_log(TS_LOG_INFO, "gpu", "%s", msg);
    return ts_backend_cpu_new(threads, out);
}

static char default_name[16] = "auto";

static ts_backend_t *default_maker(void)
{
    ts_backend_t *be = NULL;
    char why[320];
    if (select_backend(default_name, &be, why, sizeof why) != TS_OK) {
        ts_log(TS_LOG_WARN, "gpu", "default backend \"%s\" unavailable (%s); using the CPU",
               default_name, why);
        return NULL;
    }
    return be;
}

static ts_status_t use_default(const char *name)
{
    if (!name || !*name)
        name = "auto";
    if (strcmp(name, "cpu") != 0 && strcmp(name, "gpu") != 0 && strcmp(name, "auto") != 0 &&
        strcmp(name, "devemu") != 0)
        return TS_EINVAL;
    if (strcmp(name, "cpu") == 0)
        return ts_backend_set_default_maker(NULL);
    snprintf(default_name, sizeof default_name, "%s", name);
    return ts_backend_set_default_maker(default_maker);
}

#endif
