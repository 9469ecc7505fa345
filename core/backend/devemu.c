/*
 * The device-memory emulation backend ("devemu"): the CPU backend's
 * arithmetic behind the memory model of a GPU, so that the code paths a GPU
 * takes can be exercised, and their host dereferences of backend memory
 * caught, on a machine without one.
 *
 *  - host_memory is false, so every caller takes the staging paths it takes
 *    on a GPU (upload / download instead of touching the words);
 *  - a buffer's address is the host block's plus DEVEMU_TAG (bit 54): the
 *    pointer arithmetic callers do on backend memory (limb and polynomial
 *    offsets) still works, but any dereference on the host faults (x86-64:
 *    non-canonical; aarch64: outside the user half, which top-byte-ignore
 *    does not cover), as a device pointer's would;
 *  - fresh buffers hold a poison pattern, as a GPU pool's reused blocks hold
 *    whatever was there: code that relies on zeroed memory shows up;
 *  - the blocks stay reachable by their host addresses (a list in 64-byte
 *    headers), so leak checkers see what the tagged addresses hide;
 *  - the optional ops are those the GPU backend has (gpu/backend.c): the
 *    compact NTT, the spread inner product and expansion, set_i64, no sparse
 *    NTT, so callers take the same paths and fallbacks.
 * Every op untags its batches and runs the CPU backend's, so results are the
 * CPU's bit for bit. A testing aid (TS_TEST_BACKEND=devemu; the devemu
 * suite of the unit tests runs the GPU's suites on it), not a production
 * backend; its bookkeeping comes from the C library, like the GPU backend's
 * (it may be the process default).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend/backend_int.h"

#define DEVEMU_TAG    ((uintptr_t)1 << 54)
#define DEVEMU_POISON 0xA5

/*
 * Every live block starts with a header linking it into its backend's list:
 * the host addresses of the blocks stay reachable through untagged pointers
 * (a leak checker scanning memory does not take a tagged address for a
 * reference, and would report every block held only through one). The
 * header is 64 bytes, so the words keep the CPU backend's alignment.
 */
typedef struct block {
    struct block *prev, *next;
} block_t;
#define DEVEMU_HEADER 64

typedef struct {
    ts_backend_t *cpu; /* the arithmetic */
    pthread_mutex_t lock;
    block_t live; /* the list's sentinel */
} devemu_ctx_t;

static ts_backend_t *inner(const ts_backend_t *be)
{
    return ((const devemu_ctx_t *)be->ctx)->cpu;
}

static void *host_of(const void *p)
{
    return p ? (void *)((uintptr_t)p - DEVEMU_TAG) : NULL;
}

/* b with its data untagged (mod_idx is a host array either way) */
static ts_bk_batch_t untag(const ts_bk_batch_t *b)
{
    ts_bk_batch_t h = *b;
    h.data = host_of(b->data);
    return h;
}

/* ------------------------------------------------------------- memory */

static void de_free(ts_backend_t *be)
{
    if (!be)
        return;
    devemu_ctx_t *ctx = be->ctx;
    /* blocks still live are the callers' leaks: left to the leak checker */
    ctx->cpu->iface->free(ctx->cpu);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    free(be);
}

static ts_status_t de_alloc(ts_backend_t *be, size_t bytes, void **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    devemu_ctx_t *ctx = be->ctx;
    if (bytes > SIZE_MAX - DEVEMU_HEADER)
        return TS_ENOMEM;
    void *h = NULL;
    ts_status_t st = ts_backend_alloc(ctx->cpu, DEVEMU_HEADER + bytes, &h);
    if (st != TS_OK)
        return st;
    uint8_t *words = (uint8_t *)h + DEVEMU_HEADER;
    memset(words, DEVEMU_POISON, bytes);
    block_t *b = h;
    pthread_mutex_lock(&ctx->lock);
    b->prev = &ctx->live;
    b->next = ctx->live.next;
    ctx->live.next->prev = b;
    ctx->live.next = b;
    pthread_mutex_unlock(&ctx->lock);
    *out = (void *)((uintptr_t)words + DEVEMU_TAG);
    return TS_OK;
}

static void de_buf_free(ts_backend_t *be, void *p)
{
    if (!p)
        return;
    devemu_ctx_t *ctx = be->ctx;
    block_t *b = (block_t *)((uint8_t *)host_of(p) - DEVEMU_HEADER);
    pthread_mutex_lock(&ctx->lock);
    b->prev->next = b->next;
    b->next->prev = b->prev;
    pthread_mutex_unlock(&ctx->lock);
    ts_backend_buf_free(ctx->cpu, b);
}

static ts_status_t de_upload(ts_backend_t *be, void *dst, const void *src_host, size_t bytes)
{
    return ts_backend_upload(inner(be), host_of(dst), src_host, bytes);
}

static ts_status_t de_download(ts_backend_t *be, void *dst_host, const void *src, size_t bytes)
{
    return ts_backend_download(inner(be), dst_host, host_of(src), bytes);
}

static ts_status_t de_copy(ts_backend_t *be, void *dst, const void *src, size_t bytes)
{
    return ts_backend_copy(inner(be), host_of(dst), host_of(src), bytes);
}

static ts_status_t de_zero(ts_backend_t *be, void *dst, size_t bytes)
{
    return ts_backend_zero(inner(be), host_of(dst), bytes);
}

static ts_status_t de_sync(ts_backend_t *be)
{
    return ts_backend_sync(inner(be));
}

/* ---------------------------------------------------- rings, conversions */

static ts_status_t de_ring_new(ts_backend_t *be, uint32_t n, const uint64_t *moduli, uint32_t count,
                               ts_bk_ring_t **out)
{
    ts_backend_t *cpu = inner(be);
    return cpu->iface->ring_new(cpu, n, moduli, count, out);
}

static void de_ring_free(ts_backend_t *be, ts_bk_ring_t *ring)
{
    ts_backend_t *cpu = inner(be);
    cpu->iface->ring_free(cpu, ring);
}

static ts_status_t de_conv_new(ts_backend_t *be, ts_bk_ring_t *ring, const uint32_t *from_idx,
                               uint32_t na, const uint32_t *to_idx, uint32_t nb, ts_bk_conv_t **out)
{
    ts_backend_t *cpu = inner(be);
    return cpu->iface->conv_new(cpu, ring, from_idx, na, to_idx, nb, out);
}

static void de_conv_free(ts_backend_t *be, ts_bk_conv_t *conv)
{
    ts_backend_t *cpu = inner(be);
    cpu->iface->conv_free(cpu, conv);
}

/* ------------------------------------------------------------ the ops */

/* the CPU backend's member m on untagged batches */
#define CPU(be, m, ...) (inner(be)->iface->m(inner(be), __VA_ARGS__))

static ts_status_t de_ntt_fwd(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *a)
{
    ts_bk_batch_t ha = untag(a);
    return CPU(be, ntt_forward, r, &ha);
}

static ts_status_t de_ntt_inv(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *a)
{
    ts_bk_batch_t ha = untag(a);
    return CPU(be, ntt_inverse, r, &ha);
}

/* out = f(a, b) for the two-operand element-wise members */
#define DE_BINARY(fn, member)                                                                      \
    static ts_status_t fn(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *out,       \
                          const ts_bk_batch_t *a, const ts_bk_batch_t *b)                          \
    {                                                                                              \
        ts_bk_batch_t ho = untag(out), ha = untag(a), hb = untag(b);                               \
        return CPU(be, member, r, &ho, &ha, &hb);                                                  \
    }
DE_BINARY(de_add, add)
DE_BINARY(de_sub, sub)
DE_BINARY(de_mul, mul)
DE_BINARY(de_mul_add, mul_add)

static ts_status_t de_neg(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *out,
                          const ts_bk_batch_t *a)
{
    ts_bk_batch_t ho = untag(out), ha = untag(a);
    return CPU(be, neg, r, &ho, &ha);
}

static ts_status_t de_mul_shoup(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *out,
                                const ts_bk_batch_t *a, const ts_bk_batch_t *w,
                                const ts_bk_batch_t *wp)
{
    ts_bk_batch_t ho = untag(out), ha = untag(a), hw = untag(w), hp = untag(wp);
    return CPU(be, mul_shoup, r, &ho, &ha, &hw, &hp);
}

/* out = f(a, s) for the members with a host array of per-limb scalars */
#define DE_SCALAR(fn, member)                                                                      \
    static ts_status_t fn(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *out,       \
                          const ts_bk_batch_t *a, const uint64_t *s)                               \
    {                                                                                              \
        ts_bk_batch_t ho = untag(out), ha = untag(a);                                              \
        return CPU(be, member, r, &ho, &ha, s);                                                    \
    }
DE_SCALAR(de_mul_scalar, mul_scalar)
DE_SCALAR(de_add_scalar, add_scalar)
DE_SCALAR(de_mul_scalar_add, mul_scalar_add)

static ts_status_t de_sub_mul_scalar(ts_backend_t *be, const ts_bk_ring_t *r,
                                     const ts_bk_batch_t *out, const ts_bk_batch_t *a,
                                     const ts_bk_batch_t *b, const uint64_t *s)
{
    ts_bk_batch_t ho = untag(out), ha = untag(a), hb = untag(b);
    return CPU(be, sub_mul_scalar, r, &ho, &ha, &hb, s);
}

static ts_status_t de_auto_ntt(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *out,
                               const ts_bk_batch_t *a, uint64_t k)
{
    ts_bk_batch_t ho = untag(out), ha = untag(a);
    return CPU(be, automorphism_ntt, r, &ho, &ha, k);
}

static ts_status_t de_auto_coeff(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *out,
                                 const ts_bk_batch_t *a, uint64_t k)
{
    ts_bk_batch_t ho = untag(out), ha = untag(a);
    return CPU(be, automorphism_coeff, r, &ho, &ha, k);
}

static ts_status_t de_basis_extend(ts_backend_t *be, const ts_bk_ring_t *r,
                                   const ts_bk_conv_t *conv, const ts_bk_batch_t *out,
                                   const ts_bk_batch_t *in)
{
    ts_bk_batch_t ho = untag(out), hi = untag(in);
    return CPU(be, basis_extend, r, conv, &ho, &hi);
}

static ts_status_t de_basis_reduce(ts_backend_t *be, const ts_bk_ring_t *r,
                                   const ts_bk_conv_t *conv, const ts_bk_batch_t *out,
                                   const ts_bk_batch_t *x_a, const ts_bk_batch_t *x_b)
{
    ts_bk_batch_t ho = untag(out), ha = untag(x_a), hb = untag(x_b);
    return CPU(be, basis_reduce, r, conv, &ho, &ha, &hb);
}

static ts_status_t de_keyswitch_inner(ts_backend_t *be, const ts_bk_ring_t *r,
                                      const ts_bk_batch_t *out, const ts_bk_batch_t *digits,
                                      const ts_bk_batch_t *key, const uint32_t *key_limb)
{
    ts_bk_batch_t ho = untag(out), hd = untag(digits), hk = untag(key);
    return CPU(be, keyswitch_inner, r, &ho, &hd, &hk, key_limb);
}

static ts_status_t de_keyswitch_inner_spread(ts_backend_t *be, const ts_bk_ring_t *r,
                                             const ts_bk_batch_t *out, const ts_bk_batch_t *digits,
                                             const ts_bk_batch_t *key, const uint32_t *key_limb,
                                             uint32_t gap)
{
    ts_bk_batch_t ho = untag(out), hd = untag(digits), hk = untag(key);
    return CPU(be, keyswitch_inner_spread, r, &ho, &hd, &hk, key_limb, gap);
}

static ts_status_t de_ntt_fwd_compact(ts_backend_t *be, const ts_bk_ring_t *r,
                                      const ts_bk_batch_t *a, uint32_t gap)
{
    ts_bk_batch_t ha = untag(a);
    return CPU(be, ntt_forward_compact, r, &ha, gap);
}

static ts_status_t de_spread_expand(ts_backend_t *be, const ts_bk_ring_t *r,
                                    const ts_bk_batch_t *out, const ts_bk_batch_t *a, uint32_t gap)
{
    ts_bk_batch_t ho = untag(out), ha = untag(a);
    return CPU(be, spread_expand, r, &ho, &ha, gap);
}

static ts_status_t de_set_i64(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *out,
                              const int64_t *src)
{
    ts_bk_batch_t ho = untag(out);
    return CPU(be, set_i64, r, &ho, host_of(src));
}

static const struct ts_backend_i devemu_iface = {
    .name = "devemu",
    .free = de_free,
    .buf_alloc = de_alloc,
    .buf_free = de_buf_free,
    .upload = de_upload,
    .download = de_download,
    .copy = de_copy,
    .zero = de_zero,
    .synchronize = de_sync,
    .ring_new = de_ring_new,
    .ring_free = de_ring_free,
    .conv_new = de_conv_new,
    .conv_free = de_conv_free,
    .ntt_forward = de_ntt_fwd,
    .ntt_inverse = de_ntt_inv,
    .add = de_add,
    .sub = de_sub,
    .neg = de_neg,
    .mul = de_mul,
    .mul_add = de_mul_add,
    .mul_shoup = de_mul_shoup,
    .mul_scalar = de_mul_scalar,
    .add_scalar = de_add_scalar,
    .automorphism_ntt = de_auto_ntt,
    .automorphism_coeff = de_auto_coeff,
    .basis_extend = de_basis_extend,
    .basis_reduce = de_basis_reduce,
    .keyswitch_inner = de_keyswitch_inner,
    /* the GPU backend's optional set (gpu/backend.c) */
    .ntt_forward_sparse = NULL,
    .keyswitch_inner_spread = de_keyswitch_inner_spread,
    .ntt_forward_compact = de_ntt_fwd_compact,
    .spread_expand = de_spread_expand,
    .set_i64 = de_set_i64,
    .mul_scalar_add = de_mul_scalar_add,
    .sub_mul_scalar = de_sub_mul_scalar,
    .external_product = NULL,
};

ts_status_t ts_backend_devemu_new(int threads, ts_backend_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (threads < 0)
        return TS_EINVAL;
    ts_backend_t *be = calloc(1, sizeof *be);
    devemu_ctx_t *ctx = calloc(1, sizeof *ctx);
    ts_status_t st = be && ctx ? ts__backend_cpu_new_raw(threads, &ctx->cpu) : TS_ENOMEM;
    if (st != TS_OK) {
        free(be);
        free(ctx);
        return st;
    }
    pthread_mutex_init(&ctx->lock, NULL);
    ctx->live.prev = ctx->live.next = &ctx->live;
    be->iface = &devemu_iface;
    be->ctx = ctx;
    be->host_memory = false;
    be->threads = ctx->cpu->threads;
    *out = be;
    return TS_OK;
}

bool ts_backend_is_devemu(const ts_backend_t *be)
{
    return be && be->iface == &devemu_iface;
}
