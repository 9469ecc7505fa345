/* Internals of core/backend shared between its files. */
#ifndef TS_BACKEND_INT_H
#define TS_BACKEND_INT_H

#include "core/backend/backend.h"

/*
 * A fixed pool of worker threads. ts__pool_run runs fn(arg, t) for every task
 * t in [0, ntasks) on the workers and the calling thread, and returns when all
 * are done. One batch at a time: a caller that finds the pool busy (another
 * thread, or a nested call) runs its tasks itself, so calls never deadlock.
 */
typedef struct ts_pool ts_pool_t;
typedef void (*ts_pool_fn)(void *arg, size_t task);

/* raw: allocate with the C library instead of ts_malloc (the process-wide
 * default backend, which must not show up in allocation accounting). */
ts_status_t ts__pool_new(int threads, bool raw, ts_pool_t **out);
void ts__pool_free(ts_pool_t *pool);
/* A CPU backend whose bookkeeping comes from the C library (the default
 * backend's kind; devemu.c wraps one). */
ts_status_t ts__backend_cpu_new_raw(int threads, ts_backend_t **out);
void ts__pool_run(ts_pool_t *pool, size_t ntasks, ts_pool_fn fn, void *arg);
int ts__pool_threads(const ts_pool_t *pool);

#endif
