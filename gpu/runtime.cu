/*
 * The device side of the GPU backend: one CUDA device, one non-blocking
 * stream, a caching memory pool with an explicit cap, and the health flag.
 *
 * Pool: requests are rounded up (powers of two up to 1 MiB, then multiples of
 * 2 MiB) and freed blocks are kept per rounded size for reuse, so steady-state
 * evaluation does not call cudaMalloc. All work runs on the backend's single
 * stream, so a block freed and handed out again is only touched by work
 * queued after the earlier users (stream order), without a synchronization.
 * The cap (env TS_GPU_POOL_MB, default 90% of the device memory) bounds bytes
 * in use plus bytes cached; when a request does not fit, the cache is
 * released first. No managed memory anywhere.
 *
 * Errors: tsg_check translates every CUDA status once. A device error marks
 * the backend unhealthy (the context may be corrupt after a kernel fault), and
 * every later entry point returns TS_EDEVICE without touching the device.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <map>
#include <new>
#include <unordered_map>

#include "gpu/gpu_cuda.cuh"

struct tsg_dev {
    int device;
    cudaStream_t stream;
    int healthy; /* read/written with __atomic builtins */
    pthread_mutex_t mu;
    std::unordered_map<void *, size_t> *live; /* ptr -> rounded size */
    std::multimap<size_t, void *> *cache;     /* rounded size -> free block */
    size_t in_use, cached, cap;
};

static void mark_unhealthy(tsg_dev_t *dev)
{
    if (dev)
        __atomic_store_n(&dev->healthy, 0, __ATOMIC_SEQ_CST);
}

ts_status_t tsg_check(tsg_dev_t *dev, cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return TS_OK;
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError(); /* not sticky: clear it */
        ts_log(TS_LOG_WARN, "gpu", "%s: device out of memory", what);
        return TS_ENOMEM;
    }
    ts_log(TS_LOG_ERROR, "gpu", "%s: CUDA error %s (%s); GPU backend disabled", what,
           cudaGetErrorName(e), cudaGetErrorString(e));
    mark_unhealthy(dev);
    return TS_EDEVICE;
}

ts_status_t tsg_check_launch(tsg_dev_t *dev, const char *what)
{
    return tsg_check(dev, cudaGetLastError(), what);
}

cudaStream_t tsg_stream(const tsg_dev_t *dev)
{
    return dev->stream;
}

extern "C" bool ts__gpu_healthy(const tsg_dev_t *dev)
{
    return dev && __atomic_load_n(&dev->healthy, __ATOMIC_SEQ_CST) != 0;
}

extern "C" ts_status_t ts__gpu_enter(tsg_dev_t *dev)
{
    if (!ts__gpu_healthy(dev))
        return TS_EDEVICE;
    return tsg_check(dev, cudaSetDevice(dev->device), "cudaSetDevice");
}

static size_t round_size(size_t bytes)
{
    if (bytes <= 256)
        return 256;
    if (bytes <= (1u << 20)) {
        size_t r = 256;
        while (r < bytes)
            r <<= 1;
        return r;
    }
    const size_t two_mib = (size_t)2 << 20;
    return (bytes + two_mib - 1) / two_mib * two_mib;
}

/* Release every cached block (caller holds mu). */
static ts_status_t trim_locked(tsg_dev_t *dev)
{
    ts_status_t st = TS_OK;
    for (auto &kv : *dev->cache) {
        ts_status_t s2 = tsg_check(dev, cudaFree(kv.second), "cudaFree");
        if (s2 != TS_OK)
            st = s2;
    }
    dev->cache->clear();
    dev->cached = 0;
    return st;
}

extern "C" ts_status_t ts__gpu_dev_new(int device, tsg_dev_t **out, char *why, size_t why_size)
{
    *out = NULL;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        snprintf(why, why_size, "no usable GPU: %s",
                 e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device present");
        (void)cudaGetLastError();
        return TS_ENOGPU;
    }
    if (device < 0 || device >= count) {
        snprintf(why, why_size, "GPU %d requested, %d present", device, count);
        return TS_ENOGPU;
    }
    tsg_dev_t *dev = (tsg_dev_t *)calloc(1, sizeof *dev); /* C library: see gpu.h */
    if (!dev)
        return TS_ENOMEM;
    dev->device = device;
    dev->healthy = 1;
    pthread_mutex_init(&dev->mu, NULL);
    try {
        dev->live = new std::unordered_map<void *, size_t>();
        dev->cache = new std::multimap<size_t, void *>();
    } catch (const std::bad_alloc &) {
        ts__gpu_dev_free(dev);
        return TS_ENOMEM;
    }
    ts_status_t st = tsg_check(dev, cudaSetDevice(device), "cudaSetDevice");
    if (st == TS_OK)
        st = tsg_check(dev, cudaStreamCreateWithFlags(&dev->stream, cudaStreamNonBlocking),
                       "cudaStreamCreate");
    size_t free_b = 0, total_b = 0;
    if (st == TS_OK)
        st = tsg_check(dev, cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    if (st != TS_OK) {
        snprintf(why, why_size, "GPU %d failed during setup (see log)", device);
        ts__gpu_dev_free(dev);
        return st == TS_ENOMEM ? TS_ENOMEM : TS_EDEVICE;
    }
    dev->cap = total_b / 10 * 9;
    const char *env = getenv("TS_GPU_POOL_MB");
    if (env) {
        char *end;
        unsigned long long mb = strtoull(env, &end, 10);
        if (*end == '\0' && mb > 0)
            dev->cap = (size_t)mb << 20;
        else
            ts_log(TS_LOG_WARN, "gpu", "TS_GPU_POOL_MB=%s ignored (not a positive integer)", env);
    }
    ts_log(TS_LOG_INFO, "gpu", "GPU %d: pool cap %zu MiB of %zu MiB", device, dev->cap >> 20,
           total_b >> 20);
    *out = dev;
    return TS_OK;
}

extern "C" void ts__gpu_dev_free(tsg_dev_t *dev)
{
    if (!dev)
        return;
    if (ts__gpu_healthy(dev) && cudaSetDevice(dev->device) == cudaSuccess) {
        if (dev->stream)
            (void)cudaStreamSynchronize(dev->stream);
        if (dev->cache)
            (void)trim_locked(dev);
        if (dev->live) {
            for (auto &kv : *dev->live)
                (void)cudaFree(kv.first);
        }
        if (dev->stream)
            (void)cudaStreamDestroy(dev->stream);
    }
    delete dev->live;
    delete dev->cache;
    pthread_mutex_destroy(&dev->mu);
    free(dev);
}

extern "C" ts_status_t ts__gpu_alloc(tsg_dev_t *dev, size_t bytes, void **out)
{
    *out = NULL;
    ts_status_t st = ts__gpu_enter(dev);
    if (st != TS_OK)
        return st;
    const size_t sz = round_size(bytes ? bytes : 1);
    pthread_mutex_lock(&dev->mu);
    try {
        auto it = dev->cache->find(sz);
        if (it != dev->cache->end()) {
            void *p = it->second;
            dev->cache->erase(it);
            dev->cached -= sz;
            (*dev->live)[p] = sz;
            dev->in_use += sz;
            *out = p;
            pthread_mutex_unlock(&dev->mu);
            return TS_OK;
        }
        if (dev->in_use + dev->cached + sz > dev->cap)
            st = trim_locked(dev);
        if (st == TS_OK && dev->in_use + sz > dev->cap)
            st = TS_ENOMEM;
        void *p = NULL;
        if (st == TS_OK) {
            cudaError_t e = cudaMalloc(&p, sz);
            if (e == cudaErrorMemoryAllocation) {
                (void)cudaGetLastError();
                st = trim_locked(dev);
                if (st == TS_OK)
                    e = cudaMalloc(&p, sz);
            }
            if (st == TS_OK)
                st = tsg_check(dev, e, "cudaMalloc");
        }
        if (st == TS_OK) {
            (*dev->live)[p] = sz;
            dev->in_use += sz;
            *out = p;
        } else if (p) {
            (void)cudaFree(p);
        }
    } catch (const std::bad_alloc &) {
        st = TS_ENOMEM;
    }
    pthread_mutex_unlock(&dev->mu);
    return st;
}

extern "C" void ts__gpu_free(tsg_dev_t *dev, void *ptr)
{
    if (!dev || !ptr)
        return;
    pthread_mutex_lock(&dev->mu);
    auto it = dev->live->find(ptr);
    if (it == dev->live->end()) {
        pthread_mutex_unlock(&dev->mu);
        ts_log(TS_LOG_ERROR, "gpu", "buf_free of a pointer the pool did not hand out");
        return;
    }
    const size_t sz = it->second;
    dev->live->erase(it);
    dev->in_use -= sz;
    bool cached = false;
    if (ts__gpu_healthy(dev)) {
        try {
            dev->cache->emplace(sz, ptr);
            dev->cached += sz;
            cached = true;
        } catch (const std::bad_alloc &) {
            cached = false;
        }
    }
    if (!cached)
        (void)cudaFree(ptr);
    pthread_mutex_unlock(&dev->mu);
}

extern "C" void ts__gpu_pool_stats(tsg_dev_t *dev, size_t *in_use, size_t *cached, size_t *cap)
{
    pthread_mutex_lock(&dev->mu);
    if (in_use)
        *in_use = dev->in_use;
    if (cached)
        *cached = dev->cached;
    if (cap)
        *cap = dev->cap;
    pthread_mutex_unlock(&dev->mu);
}

/* Host -> device, stream-ordered. The source may be reused on return: for
 * pageable memory the runtime stages it before cudaMemcpyAsync returns. */
extern "C" ts_status_t ts__gpu_upload(tsg_dev_t *dev, void *dst, const void *src, size_t bytes)
{
    ts_status_t st = ts__gpu_enter(dev);
    if (st != TS_OK || bytes == 0)
        return st;
    return tsg_check(dev, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, dev->stream),
                     "upload");
}

/* Device -> host; waits for everything queued before and for the copy. */
extern "C" ts_status_t ts__gpu_download(tsg_dev_t *dev, void *dst, const void *src, size_t bytes)
{
    ts_status_t st = ts__gpu_enter(dev);
    if (st != TS_OK || bytes == 0)
        return st;
    st = tsg_check(dev, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, dev->stream),
                   "download");
    if (st == TS_OK)
        st = tsg_check(dev, cudaStreamSynchronize(dev->stream), "download sync");
    return st;
}

/* Device -> device with memmove semantics (an overlapping copy goes through a
 * temporary block). */
extern "C" ts_status_t ts__gpu_copy(tsg_dev_t *dev, void *dst, const void *src, size_t bytes)
{
    ts_status_t st = ts__gpu_enter(dev);
    if (st != TS_OK || bytes == 0 || dst == src)
        return st;
    const char *d = (const char *)dst, *s = (const char *)src;
    if (d < s + bytes && s < d + bytes) {
        void *tmp;
        st = ts__gpu_alloc(dev, bytes, &tmp);
        if (st != TS_OK)
            return st;
        st = tsg_check(dev, cudaMemcpyAsync(tmp, src, bytes, cudaMemcpyDeviceToDevice, dev->stream),
                       "copy");
        if (st == TS_OK)
            st = tsg_check(dev,
                           cudaMemcpyAsync(dst, tmp, bytes, cudaMemcpyDeviceToDevice, dev->stream),
                           "copy");
        ts__gpu_free(dev, tmp);
        return st;
    }
    return tsg_check(dev, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, dev->stream),
                     "copy");
}

extern "C" ts_status_t ts__gpu_zero(tsg_dev_t *dev, void *dst, size_t bytes)
{
    ts_status_t st = ts__gpu_enter(dev);
    if (st != TS_OK || bytes == 0)
        return st;
    return tsg_check(dev, cudaMemsetAsync(dst, 0, bytes, dev->stream), "zero");
}

extern "C" ts_status_t ts__gpu_sync(tsg_dev_t *dev)
{
    ts_status_t st = ts__gpu_enter(dev);
    if (st != TS_OK)
        return st;
    return tsg_check(dev, cudaStreamSynchronize(dev->stream), "synchronize");
}
