/*
 * The allocator hook, fault injection and scratch arenas.
 *
 * Every block carries a 64-byte header in front of the pointer returned to the
 * caller holding the requested size, so ts_realloc() and ts_free_secret() know
 * how much to copy or wipe, and the user pointer stays 64-byte aligned.
 */
#include "core/base/base.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#define HDR 64u

typedef struct {
    size_t size;
    uint64_t magic;
} block_hdr_t;

#define BLOCK_MAGIC 0x7473616c6c6f6321ull /* "tsalloc!" */

static void *default_alloc(void *ctx, size_t size, size_t align)
{
    (void)ctx;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size) != 0)
        return NULL;
    return p;
}

static void default_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

static ts_allocator_t g_alloc = {default_alloc, default_free, NULL};
static _Atomic uint64_t g_fail_at; /* absolute allocation index that fails; 0 = off */
static _Atomic bool g_fail_sticky;
static _Atomic uint64_t g_attempts; /* allocation attempts so far */
static _Atomic uint64_t g_count;    /* successful allocations */
static _Atomic int64_t g_live;

void ts_malloc_tune(void)
{
#ifdef __GLIBC__
    (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
    (void)mallopt(M_TRIM_THRESHOLD, INT32_MAX);
    (void)mallopt(M_TOP_PAD, 256 << 20);
    /* One arena. A thread's own arena lives in 64 MiB heaps that glibc unmaps
     * as soon as one is empty, whatever the trim threshold, so tesserad's
     * decode (on a libuv worker thread) took its ciphertexts' pages back from
     * the kernel fault by fault: ~28 000 faults a second of the 128-bit step,
     * ~1 900 with the main arena only (docs/benchmarks.md, session 16). */
    (void)mallopt(M_ARENA_MAX, 1);
#endif
}

void ts_set_allocator(const ts_allocator_t *allocator)
{
    if (allocator && allocator->alloc && allocator->free)
        g_alloc = *allocator;
    else
        g_alloc = (ts_allocator_t){default_alloc, default_free, NULL};
}

void ts_alloc_fail_after(uint64_t n, bool sticky)
{
    atomic_store(&g_fail_sticky, sticky);
    atomic_store(&g_fail_at, n ? atomic_load(&g_attempts) + n : 0);
}

uint64_t ts_alloc_count(void)
{
    return atomic_load(&g_count);
}
int64_t ts_alloc_live(void)
{
    return atomic_load(&g_live);
}

bool ts_size_mul(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return false;
    *out = a * b;
    return true;
}

int ts_log2_exact(uint64_t v)
{
    if (v == 0 || (v & (v - 1)))
        return -1;
    int k = 0;
    while (v >>= 1)
        k++;
    return k;
}

bool ts_size_add(size_t a, size_t b, size_t *out)
{
    if (b > SIZE_MAX - a)
        return false;
    *out = a + b;
    return true;
}

static bool injected_failure(void)
{
    uint64_t attempt = atomic_fetch_add(&g_attempts, 1) + 1;
    uint64_t at = atomic_load(&g_fail_at);
    if (at == 0)
        return false;
    if (attempt == at)
        return true;
    return attempt > at && atomic_load(&g_fail_sticky);
}

static block_hdr_t *hdr_of(const void *ptr)
{
    return (block_hdr_t *)((uint8_t *)ptr - HDR);
}

void *ts_malloc(size_t size)
{
    size_t total;
    if (!ts_size_add(size, HDR, &total) || injected_failure())
        return NULL;
    uint8_t *base = g_alloc.alloc(g_alloc.ctx, total, 64);
    if (!base)
        return NULL;
    block_hdr_t *h = (block_hdr_t *)base;
    h->size = size;
    h->magic = BLOCK_MAGIC;
    atomic_fetch_add(&g_count, 1);
    atomic_fetch_add(&g_live, 1);
    return base + HDR;
}

void *ts_calloc(size_t count, size_t size)
{
    size_t total;
    if (!ts_size_mul(count, size, &total))
        return NULL;
    void *p = ts_malloc(total);
    if (p)
        memset(p, 0, total);
    return p;
}

size_t ts_alloc_size(const void *ptr)
{
    if (!ptr)
        return 0;
    const block_hdr_t *h = hdr_of(ptr);
    TS_ASSERT(h->magic == BLOCK_MAGIC);
    return h->size;
}

void *ts_realloc(void *ptr, size_t size)
{
    if (!ptr)
        return ts_malloc(size);
    void *n = ts_malloc(size);
    if (!n)
        return NULL;
    size_t old = ts_alloc_size(ptr);
    memcpy(n, ptr, old < size ? old : size);
    ts_free(ptr);
    return n;
}

void ts_free(void *ptr)
{
    if (!ptr)
        return;
    block_hdr_t *h = hdr_of(ptr);
    TS_ASSERT(h->magic == BLOCK_MAGIC);
    h->magic = 0;
    atomic_fetch_sub(&g_live, 1);
    g_alloc.free(g_alloc.ctx, h);
}

void ts_free_secret(void *ptr)
{
    if (!ptr)
        return;
    ts_memzero(ptr, ts_alloc_size(ptr));
    ts_free(ptr);
}

void ts_memzero(void *ptr, size_t size)
{
    if (!ptr || !size)
        return;
    /* A volatile function pointer keeps the compiler from eliding the wipe. */
    static void *(*volatile memset_v)(void *, int, size_t) = memset;
    memset_v(ptr, 0, size);
}

bool ts_memeq_ct(const void *a, const void *b, size_t size)
{
    const volatile uint8_t *x = a, *y = b;
    uint8_t acc = 0;
    for (size_t i = 0; i < size; i++)
        acc |= (uint8_t)(x[i] ^ y[i]);
    return acc == 0;
}

ts_status_t ts_arena_init(ts_arena_t *arena, size_t size)
{
    arena->base = ts_malloc(size);
    arena->size = arena->base ? size : 0;
    arena->used = 0;
    return arena->base ? TS_OK : TS_ENOMEM;
}

void ts_arena_clear(ts_arena_t *arena)
{
    if (!arena)
        return;
    ts_free_secret(arena->base); /* scratch may have held secret-dependent values */
    arena->base = NULL;
    arena->size = arena->used = 0;
}

void *ts_arena_alloc(ts_arena_t *arena, size_t size)
{
    size_t start = (arena->used + 63u) & ~(size_t)63u, end;
    if (start < arena->used || !ts_size_add(start, size, &end) || end > arena->size)
        return NULL;
    arena->used = end;
    return arena->base + start;
}
