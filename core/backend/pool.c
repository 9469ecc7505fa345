/*
 * The CPU backend's thread pool: workers sleep on a condition variable, a
 * batch publishes (fn, arg, ntasks) with a generation counter, tasks are
 * claimed with an atomic counter, and the caller works too.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core/backend/backend_int.h"

struct ts_pool {
    int threads; /* including the caller */
    bool raw;    /* allocated with calloc/free */
    pthread_t *workers;
    int nworkers;
    pthread_mutex_t run_lock; /* one batch at a time */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    uint64_t generation;
    bool stop;
    ts_pool_fn fn;
    void *arg;
    size_t ntasks;
    atomic_size_t next;
    int active; /* workers still in the current batch */
};

static void drain(ts_pool_t *p, ts_pool_fn fn, void *arg, size_t ntasks)
{
    for (;;) {
        size_t t = atomic_fetch_add(&p->next, 1);
        if (t >= ntasks)
            break;
        fn(arg, t);
    }
}

static void *worker_main(void *vp)
{
    ts_pool_t *p = vp;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop)
            break;
        seen = p->generation;
        ts_pool_fn fn = p->fn;
        void *arg = p->arg;
        size_t ntasks = p->ntasks;
        pthread_mutex_unlock(&p->mu);
        drain(p, fn, arg, ntasks);
        pthread_mutex_lock(&p->mu);
        if (--p->active == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void *pool_calloc(bool raw, size_t count, size_t size)
{
    return raw ? calloc(count, size) : ts_calloc(count, size);
}

static void pool_release(bool raw, void *ptr)
{
    if (raw)
        free(ptr);
    else
        ts_free(ptr);
}

ts_status_t ts__pool_new(int threads, bool raw, ts_pool_t **out)
{
    *out = NULL;
    if (threads < 1)
        return TS_EINVAL;
    ts_pool_t *p = pool_calloc(raw, 1, sizeof *p);
    if (!p)
        return TS_ENOMEM;
    p->threads = threads;
    p->raw = raw;
    pthread_mutex_init(&p->run_lock, NULL);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->next, 0);
    if (threads > 1) {
        p->workers = pool_calloc(raw, (size_t)threads - 1, sizeof(pthread_t));
        if (!p->workers) {
            ts__pool_free(p);
            return TS_ENOMEM;
        }
        for (int i = 0; i < threads - 1; i++) {
            if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0) {
                ts__pool_free(p);
                return TS_ENOMEM;
            }
            p->nworkers++;
        }
    }
    *out = p;
    return TS_OK;
}

void ts__pool_free(ts_pool_t *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nworkers; i++)
        pthread_join(p->workers[i], NULL);
    pool_release(p->raw, p->workers);
    pthread_mutex_destroy(&p->run_lock);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pool_release(p->raw, p);
}

int ts__pool_threads(const ts_pool_t *p)
{
    return p->threads;
}

void ts__pool_run(ts_pool_t *p, size_t ntasks, ts_pool_fn fn, void *arg)
{
    if (ntasks == 0)
        return;
    if (p->nworkers == 0 || ntasks == 1 || pthread_mutex_trylock(&p->run_lock) != 0) {
        for (size_t t = 0; t < ntasks; t++)
            fn(arg, t);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->ntasks = ntasks;
    atomic_store(&p->next, 0);
    p->active = p->nworkers;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    drain(p, fn, arg, ntasks);
    pthread_mutex_lock(&p->mu);
    while (p->active > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->run_lock);
}
